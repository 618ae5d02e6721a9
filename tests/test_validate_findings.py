"""What the log reader says besides its rows, said the same on both surfaces: the parser's
findings (a duplicate row, a broken busbw identity, a missing footer, ...), the refusal of a
busbw-only table, and a launch line the rows contradict.

``validate compare`` prints each finding on stderr as ``costmodel: warning: <finding>``; the
Validate page lists the same lines in its open warning "Findings in the log:". Both take them from one
function (:func:`costmodel.validation.logread.log_findings`, through ``read_log``). The CLI runs
in-process (typer's CliRunner), the page headless (AppTest's uploader, the bytes a browser
sends)."""

from __future__ import annotations

import logging

import pytest

from costmodel.reference import reference_dir, reference_id, reference_path
from costmodel.validation.logread import MAX_FINDINGS, log_findings, read_log
from costmodel.validation.nccl_tests import parse_nccl_tests, why_not_timed
from costmodel.web.common import page_words, sentence  # a note as the page says it
from costmodel.web.page_validate import FINDINGS
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

WARNING = "costmodel: warning: "


def _cli_warnings(*args: str) -> list[str]:
    """The ``costmodel: warning:`` lines of ``validate compare ARGS`` (prefix removed)."""
    result = run("validate", "compare", *args, "--tolerance", "100")
    assert result.exit_code in (0, 1), result.output
    return [line[len(WARNING) :] for line in result.stderr.splitlines() if line.startswith(WARNING)]


def _page_findings(name: str, raw: bytes, cluster: str | None = None) -> list[str]:
    """The lines under the Validate page's "Findings in the log" for an uploaded log."""
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    if cluster is not None:
        at.selectbox(key="val_cluster").set_value(cluster).run()
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    (box,) = [w.value for w in at.warning if w.value.startswith(FINDINGS)] or [None]
    return [] if box is None else [_text(line) for line in box.split("  \n")[1:]]


def _timed_logs():
    return [
        p
        for p in sorted(reference_dir("nccl-tests").glob("*.txt"))
        if why_not_timed(p.read_text(errors="replace")) is None
    ]


# --- 1. the parser's findings, on both surfaces ------------------------------------------------
def test_every_bundled_finding_is_printed_by_validate_compare():
    """Each timed bundled log: the CLI's warning lines carry every finding of the reader, the
    one list the page shows. Before, the CLI printed none of them (04b's busbw identity, 16a's
    missing footer, 13e's mixed runs went to the page only)."""
    with_findings = 0
    for path in _timed_logs():
        read = read_log(path.read_bytes(), path.name, strict=False)
        warned = _cli_warnings("--reference", reference_id(path.name))
        for finding in read.findings:
            assert finding in warned, (path.name, finding, warned)
        with_findings += bool(read.findings)
    # 03, 04b, 16a, 16b have some; 13e's, 13f's and 15's mixed runs are said once, as what is
    # compared (LogRead.runs), not also as a finding
    assert with_findings >= 4


@pytest.mark.parametrize("prefix", ["04b", "16a"])  # a busbw identity; a missing footer
def test_a_bundled_logs_findings_are_the_same_lines_on_the_page_and_the_cli(prefix):
    path = reference_path(prefix)
    shown = _page_findings(path.name, path.read_bytes())
    assert shown, prefix
    warned = _cli_warnings(str(path))
    # the same lines, as the page says a note: a sentence, in its words (web.common.sentence)
    assert [sentence(w) for w in warned if sentence(w) in shown] == shown


def _with_duplicate_row() -> tuple[bytes, int]:
    """13a with its third result row printed twice: (bytes, the copy's line number)."""
    lines = reference_path("13a").read_text().splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line.split()[:1] and line.split()[0].isdigit()]
    at = rows[2]
    return "".join(lines[: at + 1] + [lines[at]] + lines[at + 1 :]).encode(), at + 2


def test_a_duplicate_row_is_one_warning_line_on_the_cli_and_one_line_on_the_page(tmp_path):
    raw, line = _with_duplicate_row()
    path = tmp_path / "mine_allreduce.txt"
    path.write_bytes(raw)
    read = read_log(raw, path.name, strict=False)
    (duplicate,) = [f for f in read.findings if "duplicate row" in f]
    assert duplicate.startswith(f"line {line}: duplicate row: size ")
    warned = _cli_warnings(str(path), "--cluster", "dgx-h100")
    assert duplicate in warned
    assert sentence(duplicate) in _page_findings(path.name, raw, cluster="dgx-h100")


def test_findings_beyond_the_limit_are_counted_in_one_line():
    import pandas as pd

    rows = pd.DataFrame()
    rows.attrs["warnings"] = [{"line": i + 1, "message": "x"} for i in range(MAX_FINDINGS + 3)]
    rows.attrs["cut_row"] = None
    lines = log_findings(rows)
    assert len(lines) == MAX_FINDINGS + 1
    assert lines[-1] == "and 3 more findings in the log"


def test_a_cut_row_is_a_notice_not_also_a_finding():
    text = reference_path("13a").read_text()
    cut = text[: text.rindex("# Out of bounds")].rstrip("\n")
    cut = cut[: len(cut) - 20]  # the last row, cut mid-way
    read = read_log(cut, "13a_cut_allreduce.txt")
    assert len(read.notices) == 1 and "ends in the middle" in read.notices[0]
    assert not [f for f in read.findings if "ends in the middle" in f]


# --- 2. a busbw-only table: one refusal ---------------------------------------------------------
def test_a_busbw_only_table_is_refused_with_one_message_by_path_by_reference_and_on_the_page():
    path = reference_path("21a")
    by_path = one_line_error(run("validate", "compare", str(path)), path.name)
    by_reference = one_line_error(run("validate", "compare", "--reference", "21a"), path.name)
    # one message; each surface names its own input first (--reference, the page's Log file)
    assert by_reference == by_path.replace("costmodel: error: ", "costmodel: error: --reference: ")
    message = by_path.removeprefix("costmodel: error: ")
    assert "busbw-only table" in message and "read_busbw_table" in message
    assert "02, 03" in message  # the bundled runs that have times
    # the library's one message, in each surface's words: the CLI's option, the page's box
    from costmodel.cli._common import cli_words
    from costmodel.validation.logread import busbw_only_refusal

    message = busbw_only_refusal(path.name)
    assert by_path == f"costmodel: error: {cli_words(message, lambda f: None)}"
    assert "(`costmodel validate compare --reference ID`)" in by_path

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain")).run()
    assert_clean(at)
    assert [_text(e.value) for e in at.error] == [f"**Log file**: {page_words(message)}"]


def test_the_parser_alone_still_points_a_busbw_only_table_to_its_reader():
    """The library's own error (parse_nccl_tests) is unchanged: it names read_busbw_table."""
    from costmodel.validation.nccl_tests import NcclTestsParseError

    with pytest.raises(NcclTestsParseError, match="read_busbw_table"):
        parse_nccl_tests(reference_path("21b").read_text())


# --- 4. a launch line the rows contradict ---------------------------------------------------------
def test_reference_03s_launch_line_against_its_rows_is_said_and_the_rows_win():
    """03 keeps its manifest's ``mpirun -np 64`` above rows whose busbw/algbw ratio is
    2(n-1)/n with n = 96 (its header's consistency check): the rows' 96 is used, and said."""
    df = parse_nccl_tests(reference_path("03").read_text())
    assert set(df["ranks"]) == {96}
    (finding,) = [w["message"] for w in df.attrs["warnings"] if "launch line" in w["message"]]
    assert "the line says 64 ranks (mpirun: 64 processes" in finding
    assert "the run has 96 (its rows' busbw/algbw ratio); 96 ranks used" in finding
    read = read_log(reference_path("03").read_bytes(), reference_path("03").name)
    (line,) = [f for f in read.findings if "launch line" in f]
    assert line in _cli_warnings("--reference", "03")
    path = reference_path("03")
    assert sentence(line) in _page_findings(path.name, path.read_bytes())


def _relaunched_06a() -> bytes:
    """06a (2 x 8 H100, a complete device list on two hosts) with its command changed to
    8 processes, 4 per host: no longer the bundled bytes, so no index fills anything."""
    text = reference_path("06a").read_text()
    old = "mpirun --np 16 -H bm-h100-01:8,bm-h100-02:8"
    assert old in text
    return text.replace(old, "mpirun --np 8 -H bm-h100-01:4,bm-h100-02:4").encode()


def test_a_launch_line_against_the_device_list_is_said_on_both_surfaces(tmp_path):
    raw = _relaunched_06a()
    read = read_log(raw, "mine_allreduce.txt", cluster="dgx-h100")
    assert (read.nodes, read.gpus_per_node, set(read.rows["ranks"])) == (2, 8, {16})
    said = [f for f in read.findings if "launch line" in f]
    assert len(said) == 2, said
    (ranks,) = [f for f in said if "the line says 8 ranks" in f]
    assert "the run has 16 (its device list); 16 ranks used" in ranks
    (per_node,) = [f for f in said if "the line says 4 GPUs per node" in f]
    assert "the run has 8 (its host lines); 8 GPUs per node used" in per_node
    path = tmp_path / "mine_allreduce.txt"
    path.write_bytes(raw)
    warned = _cli_warnings(str(path), "--cluster", "dgx-h100")
    shown = _page_findings(path.name, raw, cluster="dgx-h100")
    for line in said:
        assert line in warned and sentence(line) in shown, line


def _13e_launched(np: int) -> str:
    """13e (runs of 2, 4 and 6 GPUs, one process each) with a collector's command line."""
    text = reference_path("13e").read_text()
    at = text.index("# POSTER:")
    return (
        text[:at] + f"# COMMAND: mpirun -np {np} ./all_reduce_perf -b 256M -e 8G -g 1\n" + text[at:]
    )


def test_a_sweep_whose_launch_line_is_one_of_its_runs_is_not_warned_about():
    df = parse_nccl_tests(_13e_launched(4))
    assert df.attrs["launch"]["ranks"] == 4
    assert not [w for w in df.attrs["warnings"] if "launch line" in w["message"]]
    df = parse_nccl_tests(_13e_launched(8))  # none of its runs: each is said
    said = [w["message"] for w in df.attrs["warnings"] if "launch line" in w["message"]]
    assert [m.split("the run has ")[1].split(" ")[0] for m in said] == ["2", "4", "6"]


def test_a_launch_line_that_agrees_says_nothing():
    df = parse_nccl_tests(reference_path("06a").read_text())
    assert df.attrs["launch"]["ranks"] == 16
    assert not [w for w in df.attrs["warnings"] if "launch line" in w["message"]]
