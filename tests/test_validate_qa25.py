"""The twenty-fifth QA pass of the validation harness: rows the socket-fallback detector cannot
judge, and a row larger than any buffer the model prices. Each test failed on the defect it
names before its fix.

Logs are built in tmp_path from bundled run 06a (all-reduce on 2 nodes x 8 H100, 8 B..16 GiB),
its provenance block left out so that it reads as a user's own log; bundled files are never
edited.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from costmodel.reference import reference_path
from costmodel.validation.fallback import socket_fallback
from costmodel.validation.logread import read_log
from tests._cli import run
from tests.test_app import _text, assert_clean, open_page

SOCKET = "TCP-socket fallback"
#: compare's note of a row over the largest buffer (16 TiB)
OVERSIZE = "over 16 TiB (2**44 B)"


def _log(tmp_path: Path, name: str, edit: Callable[[list[str]], list[list[str]]]) -> Path:
    """Bundled 06a's rows as a user's log, each result row's fields passed through ``edit``
    (which returns the rows to write in its place)."""
    lines = reference_path("06a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    out: list[str] = []
    for line in lines[seps[1] + 1 :]:
        f = line.split()
        if len(f) == 13 and f[0].isdigit():
            out += ["  ".join(g) for g in edit(f)]
        else:
            out.append(line)
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n")
    return path


def _timed(factor: float) -> Callable[[list[str]], list[list[str]]]:
    """Every time x ``factor`` (0: untimed), algbw and busbw / ``factor`` as nccl-tests prints
    them (0.00 where untimed)."""

    def edit(f: list[str]) -> list[list[str]]:
        for t, a, b in ((5, 6, 7), (9, 10, 11)):
            if factor == 0:
                f[t], f[a], f[b] = "0.00", "0.00", "0.00"
            else:
                f[t] = f"{float(f[t]) * factor:.2f}"
                f[a], f[b] = (f"{float(f[i]) / factor:.4f}" for i in (a, b))
        return [f]

    return edit


def _warnings(at) -> list[str]:
    return [_text(w.value) for w in at.warning]


def _upload(path: Path):
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain"))
    return at.run()


def test_rows_without_a_time_are_no_socket_fallback(tmp_path):
    """A log whose rows all have time 0 (busbw 0.00) was told it "looks like NCCL's
    TCP-socket fallback: peak busbw 0 B/s ...": those rows measured nothing, so the profile
    test has nothing to judge. The same log a hundred times slower (2 nodes of H100 at 4.7
    GB/s busbw of the 400 GB/s their NICs allow) is still said to look like it."""
    untimed = _log(tmp_path, "untimed_allreduce.log", _timed(0))
    rows = read_log(untimed.read_bytes(), untimed.name).rows
    assert (rows["time_s"] == 0).all() and (rows["nodes"] == 2).all()
    assert socket_fallback(rows, "dgx-h100", text=untimed.read_bytes()) is None
    at = _upload(untimed)
    assert_clean(at)
    assert not [w for w in _warnings(at) if SOCKET in w], _warnings(at)
    said = run("validate", "compare", str(untimed), "--cluster", "dgx-h100")
    assert SOCKET not in said.output, said.output

    slow = _log(tmp_path, "slow_allreduce.log", _timed(100))
    rows = read_log(slow.read_bytes(), slow.name).rows
    line = socket_fallback(rows, "dgx-h100", text=slow.read_bytes())
    assert line is not None and SOCKET in line, line
    # a log of untimed rows beside timed ones is judged by the timed ones
    both = rows.copy()
    both.loc[both["size_bytes"] >= 2**30, ["time_s", "busbw_bytes_per_s"]] = 0.0
    assert socket_fallback(both, "dgx-h100") is not None


def _with_huge_row(f: list[str]) -> list[list[str]]:
    """After the 16 GiB row, one of 32 TiB (twice its time), as a damaged or synthetic log has."""
    if int(f[0]) != 2**34:
        return [f]
    huge = list(f)
    huge[0], huge[1] = str(2**45), str(2**45 // 4)
    huge[5] = huge[9] = f"{2 * float(f[5]):.0f}"
    return [f, huge]


def test_a_row_over_16_tib_is_left_out_not_the_whole_comparison(tmp_path):
    """One row over 16 TiB made `validate compare` and the Validate page refuse the whole log
    ("no row could be predicted (message_bytes: must be between 0 and 2**44 B (16 TiB), ...
    element 64 of 66)"): the predictor refused the row's whole group. The row is left out with
    its reason in the warning of rows not predicted, as a row of time 0 is, and the rest
    compares as the log without it does, in the CLI and on the page alike."""
    huge = _log(tmp_path, "huge_allreduce.log", _with_huge_row)
    plain = _log(tmp_path, "plain_allreduce.log", lambda f: [f])
    with_huge = run("validate", "compare", str(huge), "--cluster", "dgx-h100", "--json")
    without = run("validate", "compare", str(plain), "--cluster", "dgx-h100", "--json")
    assert with_huge.exit_code == without.exit_code == 0, with_huge.output
    a, b = json.loads(with_huge.stdout), json.loads(without.stdout)
    assert a["summary"] == b["summary"]
    assert a["median_abs_rel_error"] == b["median_abs_rel_error"]
    (note,) = [w for w in a["warnings"] if OVERSIZE in w]
    assert note.startswith("2 of 66 rows not predicted"), note  # out-of-place and in-place

    at = _upload(huge)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert [w for w in _warnings(at) if OVERSIZE in w and "2 of 66 rows" in w], _warnings(at)
