"""Seventh QA pass of the validation harness: a goal with no rows to judge it is not assessed
(never a pass), grid files decoded as logs and results are (one helper; UTF-16 without a BOM read
and said), results files written before the DDP rows shared one compute, and what a new user
of the harness met on a CPU machine. Each test names the defect it guards against;
tests/test_validate_qa.py to _qa6.py hold the earlier passes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from tests._cli import one_line_error, run


def _bundled(short: str) -> Path:
    from costmodel.reference import reference_path

    return reference_path(short)


def _cut_below_1mib(tmp_path: Path) -> Path:
    """Bundled run 06a cut off after its 512 KiB row, as a job killed mid-sweep leaves it."""
    lines = _bundled("06a").read_text().splitlines(keepends=True)
    last = next(i for i, line in enumerate(lines) if line.split()[:1] == ["524288"])
    path = tmp_path / "cut.txt"
    path.write_text("".join(lines[: last + 1]))
    return path


# --- 1. a goal met by no data ----------------------------------------------------------------------
def test_a_check_without_rows_is_not_assessed_and_never_a_pass():
    """fidelity_check passed a comparison with no rows from 1 MiB up (the check was skipped);
    no data is not assessed: None, not True, while a failed check still fails."""
    from costmodel.validation.compare import combine_outcomes, fidelity_check, fidelity_goals

    small = pd.DataFrame({"size_bytes": [2**10, 2**12, 2**14], "rel_error": [0.02, -0.05, 0.1]})
    passed, lines = fidelity_check(small)
    assert passed is None
    assert lines[0] == "median |busbw error| from 1 MiB: not assessed (no rows of 1 MiB or more)"
    assert lines[1] == "median |busbw error| all sizes: 5.0% (<= goal 20%, 3 rows)"
    goals = {g["check"]: g for g in fidelity_goals(small)}
    assert goals["from 1 MiB"]["assessed"] is False and goals["from 1 MiB"]["passed"] is None
    assert goals["all sizes"]["assessed"] is True and goals["all sizes"]["passed"] is True
    # a failure below 1 MiB is a failure, whatever else could not be judged
    assert fidelity_check(small.assign(rel_error=[0.5, 0.6, 0.7]))[0] is False
    both = pd.DataFrame({"size_bytes": [2**10, 2**21], "rel_error": [0.01, 0.02]})
    assert fidelity_check(both)[0] is True
    assert fidelity_check(both.iloc[0:0])[0] is None  # nothing at all: not assessed
    assert combine_outcomes([]) is None


def test_validate_compare_on_a_log_cut_below_1mib_is_not_assessed(tmp_path):
    """`validate compare` on a truncated log (no rows from 1 MiB up) printed "ok: docs/fidelity.md
    goal; median |busbw error| from 1 MiB: no rows; ..." and exited 0: a goal passed on no data.
    It is NOT ASSESSED now, exit 1 (as a folder's file that could not be read is), and --json
    says passed false, assessed false, verdict "not assessed"."""
    log = _cut_below_1mib(tmp_path)
    text = run("validate", "compare", str(log), "--cluster", "dell-xe9680-h100")
    assert text.exit_code == 1, (text.stdout, text.stderr)
    last = text.stdout.strip().splitlines()[-1]
    assert last.startswith("NOT ASSESSED: docs/fidelity.md goal for multi-node-infiniband; ")
    assert "from 1 MiB: not assessed (no rows of 1 MiB or more)" in last
    assert "all sizes: " in last and "(<= goal 20%" in last  # the check that has rows is shown
    assert "ends without nccl-tests' footer" in text.stderr  # and why the rows stop
    doc = json.loads(run("validate", "compare", str(log), "--cluster", "dell-xe9680-h100",
                         "--json").stdout)  # fmt: skip
    assert (doc["passed"], doc["assessed"], doc["verdict"]) == (False, False, "not assessed")
    goals = {g["check"]: g for g in doc["goal"]}
    assert goals["from 1 MiB"]["rows"] == 0 and goals["from 1 MiB"]["passed"] is None
    # the whole log still passes, exit 0 with "ok": the verdict follows the data, not the file
    full = run("validate", "compare", str(_bundled("06a")), "--cluster", "dell-xe9680-h100")
    assert full.exit_code == 0 and full.stdout.strip().splitlines()[-1].startswith("ok: ")


def test_a_tolerance_with_no_rows_from_check_from_is_not_assessed(tmp_path):
    """`--tolerance 0.5 --check-from 1MiB` on the same cut log printed "ok: 0 of 0 rows from
    1.05 MB beyond |busbw error| 50%" and exited 0. Not assessed now, exit 1, saying why."""
    log = _cut_below_1mib(tmp_path)
    args = ("validate", "compare", str(log), "--cluster", "dell-xe9680-h100", "--tolerance", "0.5")
    res = run(*args, "--check-from", "1MiB")
    assert res.exit_code == 1
    assert res.stdout.strip().splitlines()[-1] == (
        "NOT ASSESSED: no predicted row from 1 MiB up to check against |busbw error| 50% "
        "(--check-from)"
    )
    doc = json.loads(run(*args, "--check-from", "1MiB", "--json").stdout)
    assert (doc["checked_rows"], doc["passed"], doc["verdict"]) == (0, False, "not assessed")
    below = run(*args)  # the rows it has, judged: every row within 50 %? the verdict says
    doc = json.loads(run(*args, "--json").stdout)
    assert doc["assessed"] is True and doc["checked_rows"] > 0
    assert below.exit_code == (0 if doc["exceeding"] == 0 else 1)
    assert doc["verdict"] == ("ok" if doc["exceeding"] == 0 else "fail")


# --- 2. one decoder for grid files, logs and results -----------------------------------------------
GRID = """kind = "collective"
[grid]
preset = ["dgx-h100"]
nodes = "1..2x2"
size = "1MB..4MB x2"
"""


@pytest.mark.parametrize(
    ("encoded", "guessed"),
    [
        (GRID.encode("utf-16"), None),  # PowerShell 5's `>`: UTF-16 LE with its BOM
        (GRID.encode("utf-16-be"), "UTF-16 BE"),
        (GRID.encode("utf-16-le"), "UTF-16 LE"),  # iconv -t UTF-16LE: no BOM
        (b"\xef\xbb\xbf" + GRID.encode(), None),  # Notepad's UTF-8 with a BOM
        (GRID.replace("\n", "\r\n").encode("utf-16"), None),  # and Windows line ends
    ],
)
def test_a_grid_file_is_decoded_as_logs_and_results_are(tmp_path, encoded, guessed):
    """`costmodel sweep --grid` read grid files as UTF-8 only ("not UTF-8 text (byte 0xff at
    offset 0)") while logs and results were decoded by their BOM; a grid file saved by a
    PowerShell redirect was refused. The same helper now reads all three; UTF-16 without a BOM
    is read and said (a warning naming the file and the byte order)."""
    from costmodel.sweep import load_grid
    from costmodel.textfile import GuessedEncodingWarning

    plain, other = tmp_path / "plain.toml", tmp_path / "other.toml"
    plain.write_text(GRID)
    other.write_bytes(encoded)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_grid(other)
    said = [str(w.message) for w in caught if issubclass(w.category, GuessedEncodingWarning)]
    assert loaded == load_grid(plain)
    if guessed is None:
        assert said == []
    else:
        assert said == [
            f"{other}: read as {guessed} without a byte-order mark (a NUL at every other byte); "
            "save it as UTF-8 to read it without this guess"
        ]
    a = run("sweep", str(plain), "--json")
    with warnings.catch_warnings(record=True):  # said as asserted above
        b = run("sweep", str(other), "--json")
    assert a.exit_code == b.exit_code == 0, b.stderr
    assert json.loads(b.stdout) == json.loads(a.stdout)


def test_the_cli_says_a_guessed_encoding_once_on_one_line(tmp_path, capsys):
    """`costmodel sweep grid.toml` on a BOM-less UTF-16 grid: the rows, and one
    ``costmodel: warning:`` line naming the file and the byte order."""
    from costmodel.cli import main

    path = tmp_path / "grid.toml"
    path.write_bytes(GRID.encode("utf-16-le"))
    assert main(["sweep", str(path), "--json"]) == 0
    out = capsys.readouterr()
    assert len(json.loads(out.out)) == 6  # 2 node counts x 3 sizes (1, 2, 4 MB)
    assert out.err == (
        f"costmodel: warning: {path}: read as UTF-16 LE without a byte-order mark (a NUL at "
        "every other byte); save it as UTF-8 to read it without this guess\n"
    )


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b'kind = "caf\xe9"\n', "not UTF-8 text: byte 0xe9 at offset 11 cannot be decoded"),
        (b"\xff\xfek\x00=\x00\x00\xd8", "not UTF-16 text: byte 0x00 at offset 6"),
        (b"\x00" * 40, "not text: NUL bytes throughout its first 40 bytes"),
    ],
)
def test_an_undecodable_grid_file_is_refused_in_the_logs_words(tmp_path, data, fragment):
    """The grid file's refusal is the decoder's (the one logs and results get), naming the
    file, the byte and its offset, and what to do (save the grid file as UTF-8)."""
    path = tmp_path / "grid.toml"
    path.write_bytes(data)
    one_line_error(run("sweep", str(path)), f"GRID_FILE: {str(path)!r}", fragment,
                   "save the grid file as UTF-8")  # fmt: skip


def test_utf16_without_a_bom_is_read_and_said_by_every_reader(tmp_path):
    """UTF-16 without its BOM was refused ("looks like UTF-16 text without a byte-order
    mark"). ASCII text in UTF-16 has a NUL at every other byte, which no UTF-8 log, results
    file or grid file has: it is read now, in the byte order the NULs show, and said once:
    by validate compare (a log, a folder of logs, a results file) and calibrate."""
    from costmodel.validation.logread import read_log
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import load_results

    text = _bundled("09a").read_text()
    plain, le, be = tmp_path / "ar.txt", tmp_path / "le" / "ar.txt", tmp_path / "be" / "ar.txt"
    for path, data in ((plain, text.encode()), (le, text.encode("utf-16-le")),
                       (be, text.encode("utf-16-be"))):  # fmt: skip
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    want = read_nccl_tests(plain)
    for path in (le, be):
        with pytest.warns(UserWarning, match="without a byte-order mark"):
            got = read_nccl_tests(path)
        assert got.time_s.tolist() == want.time_s.tolist()
    read = read_log(le.read_bytes(), "ar.txt", cluster="pcie3-2x-rtx2080ti-nop2p")
    assert read.notices[0].startswith("read as UTF-16 LE without a byte-order mark")
    cluster = ("--cluster", "pcie3-2x-rtx2080ti-nop2p")
    ref = json.loads(run("validate", "compare", str(plain), *cluster, "--json").stdout)
    for path in (le, le.parent):  # the file and its folder: one warning each, no more
        doc = json.loads(run("validate", "compare", str(path), *cluster, "--json").stdout)
        assert doc["summary"] == ref["summary"]
        said = [w for w in doc["warnings"] if "byte-order mark" in w]
        assert len(said) == 1 and said[0].count("ar.txt") <= 1, said

    rows = "".join(
        json.dumps({"op": "all_reduce", "size_bytes": 2**k, "time_s": 1e-5 * k, "ranks": 2}) + "\n"
        for k in (10, 20)
    )
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(rows)
    b.write_bytes(rows.encode("utf-16-le"))
    with pytest.warns(UserWarning, match="b.jsonl: read as UTF-16 LE"):
        got = load_results(b)
    assert got.equals(load_results(a))
    assert got.attrs["encoding_note"].startswith(f"{b}: read as UTF-16 LE")


def test_one_decoder_for_every_reader():
    """One helper decodes every file a user gives: the nccl-tests reader's names are the
    shared module's (no second table of byte-order marks to drift)."""
    import costmodel.textfile as tf
    from costmodel.validation import nccl_tests
    from costmodel.validation.nccl_tests import _common

    assert nccl_tests.decode_lenient is tf.decode_lenient
    assert not hasattr(_common, "_BOMS") and not hasattr(_common, "_encoding")
    assert nccl_tests.decode_lenient("# nThread 1\n".encode("utf-16-le")) == "# nThread 1\n"
    # a UTF-8 log that only happens to hold NULs further on is not taken for UTF-16
    assert tf.decode(b"# nThread 1 nGpus 2 minBytes 8\n" * 10 + b"\x00\x00").encoding == "UTF-8"


# --- 3. results files written before the no_sync and plain rows shared one compute ---------------
def _old_ddp_rows() -> list[dict]:
    """A SYNTHETIC FORMAT FIXTURE, not a measurement: the keys `validate torch --ddp` wrote for a
    DDP step before the no_sync and plain rows of a setting shared one compute (no
    `compute_iters`; each row its own `compute_time_s`), with round made-up values chosen only
    to exercise the reader: one setting with accumulation 1, one pair with accumulation 2 whose
    two compute times differ as the old job's did (10 ms and 19 ms)."""
    job = {
        "source": "torch",
        "backend": "nccl",
        "ranks": 8,
        "nodes": 1,
        "gpus_per_node": 8,
        "device": "NVIDIA H100 80GB HBM3",
        "attempt": "20260101T000000-1",
        "complete": True,
        "run_key": "torch@synthetic",
        "config": "synthetic",
        "kind": "ddp_step",
        "op": "ddp_step",
        "params": 2101248,
        "gradient_bytes": 8404992,
        "layers": 8,
        "width": 512,
        "bucket_cap_mb": 25.0,
        "iters": 5,
        "flagged": False,
    }
    return [
        {**job, "accumulation": 1, "no_sync": False, "time_s": 0.020, "compute_time_s": 0.010},
        {**job, "accumulation": 2, "no_sync": False, "time_s": 0.040, "compute_time_s": 0.010},
        {**job, "accumulation": 2, "no_sync": True, "time_s": 0.030, "compute_time_s": 0.019},
    ]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_old_results_file_has_its_pair_of_compute_times_reconciled(tmp_path):
    """A results file written before the shared compute keeps two compute times for one
    (setting, no_sync pair): predicted as read, the no_sync step (10 ms compute) came out
    faster or slower than the plain one (19 ms) by noise. The pair is now predicted with one
    median (their mean, 14.5 ms), the recorded values kept, and said once."""
    from costmodel.validation.compare import cluster_predictor, predict_ddp
    from costmodel.validation.runner import load_results

    old = load_results(_write(tmp_path / "old.jsonl", _old_ddp_rows()))
    out = predict_ddp(old, cluster_predictor("dgx-h100"))
    pair = out[out["accumulation"] == 2].set_index("no_sync")
    assert pair["compute_time_s"].tolist() == [pytest.approx(0.0145)] * 2
    assert pair["compute_time_recorded_s"].tolist() == [0.010, 0.019]
    assert pair.loc[True, "predicted_compute_s"] == pair.loc[False, "predicted_compute_s"]
    # one compute: the no_sync step (one all-reduce in two micro-batches) is never predicted
    # slower than the plain one (two)
    assert pair.loc[True, "predicted_step_s"] <= pair.loc[False, "predicted_step_s"]
    single = out[out["accumulation"] == 1].iloc[0]
    assert single["compute_time_s"] == single["compute_time_recorded_s"] == 0.010  # no pair
    note = out.attrs["compute_note"]
    assert note.startswith("1 DDP setting (no_sync and plain rows) carries two compute times")
    assert "bucket 25 MiB, accumulation 2: 10 ms and 19 ms -> 14.5 ms" in note

    # a file the job writes now (one compute per setting) is predicted as read, no note
    now = [{**r, "compute_time_s": 0.012, "compute_iters": 10} for r in _old_ddp_rows()]
    fresh = predict_ddp(load_results(_write(tmp_path / "new.jsonl", now)), cluster_predictor("dgx-h100"))  # fmt: skip
    assert fresh.attrs["compute_note"] is None and "compute_time_recorded_s" not in fresh
    assert (fresh["compute_time_s"] == 0.012).all()


def test_validate_compare_says_the_reconciled_pair_once(tmp_path):
    """`validate compare` on such a file: one warning line (stderr, and in --json's warnings
    when the file also has collectives), the DDP table with the compute both rows were
    predicted with."""
    old = _old_ddp_rows()
    path = _write(tmp_path / "old.jsonl", old)
    res = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert res.exit_code == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if "two compute times" in line]
    assert len(said) == 1 and said[0].startswith("costmodel: warning: 1 DDP setting")
    assert "DDP steps, measured vs predicted" in res.stdout
    collective = {k: v for k, v in old[0].items() if k not in ("params", "gradient_bytes")}
    collective.update(kind="collective", op="all_reduce", size_bytes=2**26, time_s=0.5e-3,
                      placement="out_of_place")  # fmt: skip
    for k in ("layers", "width", "bucket_cap_mb", "accumulation", "no_sync", "compute_time_s"):
        collective.pop(k, None)
    both = _write(tmp_path / "both.jsonl", [collective, *old])
    doc = json.loads(
        run("validate", "compare", str(both), "--cluster", "dgx-h100", "--json").stdout
    )
    assert sum("two compute times" in w for w in doc["warnings"]) == 1
    steps = {(s["accumulation"], s["no_sync"]): s for s in doc["ddp_steps"]}
    assert steps[(2, True)]["compute_time_s"] == steps[(2, False)]["compute_time_s"]


# --- 4. a new user's pass on a CPU machine ----------------------------------------------------------
def test_calibrate_on_ddp_steps_only_says_what_it_needs(tmp_path):
    """`calibrate ddp.jsonl` on a job run with `--ops none --ddp` read "results lack columns
    ['size_bytes']; need ['op', 'ranks', 'size_bytes', 'time_s']": the user's file was right,
    the command fits something else. It says so now, and how to get collectives."""
    path = _write(tmp_path / "ddp.jsonl", _old_ddp_rows())
    out = tmp_path / "c.toml"
    line = one_line_error(run("calibrate", str(path), "-o", str(out)),
                          "RESULTS: the rows are DDP steps only (no collective rows)",
                          "validate torch --ops all_reduce --ddp")  # fmt: skip
    assert "lack columns" not in line and not out.exists()


def _gloo_collectives(tmp_path: Path) -> Path:
    """Collective rows in the torch job's format, on CPUs (gloo): a SYNTHETIC FORMAT FIXTURE
    (made-up times growing with size), enough for calibrate to fit an alpha-beta line."""
    job = {"source": "torch", "backend": "gloo", "ranks": 2, "nodes": 1, "gpus_per_node": 2,
           "device": "cpu", "attempt": "20260101T000000-2", "complete": True,
           "run_key": "torch@synthetic", "config": "synthetic", "kind": "collective",
           "op": "all_reduce", "dtype": "float32", "placement": "out_of_place", "iters": 5,
           "flagged": False}  # fmt: skip
    rows = [{**job, "size_bytes": 2**k, "time_s": 1e-4 + 2**k / 1e9} for k in range(12, 22)]
    return _write(tmp_path / "gloo.jsonl", rows)


def test_validate_compare_refuses_options_it_would_ignore(tmp_path):
    """`validate compare R --calibration C --model textbook` compared with the calibration and
    ignored --model without a word; `--calibration FOLDER` said the folder "does not exist"."""
    results = _gloo_collectives(tmp_path)
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(results), "-o", str(cal)).exit_code == 0
    one_line_error(
        run("validate", "compare", str(results), "--calibration", str(cal), "--model", "textbook"),
        "--model: 'textbook' with --calibration",
        "a calibration predicts with its own fits",
    )
    one_line_error(
        run("validate", "compare", str(results), "--calibration", str(tmp_path)),
        f"--calibration: {str(tmp_path)!r} is a folder",
    )
    ok = run("validate", "compare", str(results), "--calibration", str(cal))
    assert ok.exit_code in (0, 1) and "median |busbw error|" in ok.stdout


def test_a_tolerance_on_ddp_steps_only_is_not_assessed(tmp_path):
    """`validate compare ddp.jsonl --tolerance 0.1` (a job run with --ops none --ddp) printed
    the DDP table and exited 0: the tolerance, a check of collectives' busbw error, was
    ignored. It is not assessed now (exit 1, said, --json verdict); without --tolerance the
    steps are shown, not judged, exit 0 as before."""
    path = _write(tmp_path / "ddp.jsonl", [{**r, "compute_iters": 10} for r in _old_ddp_rows()])
    shown = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert shown.exit_code == 0 and "NOT ASSESSED" not in shown.stdout
    res = run("validate", "compare", str(path), "--cluster", "dgx-h100", "--tolerance", "0.1")
    assert res.exit_code == 1
    assert "DDP steps, measured vs predicted" in res.stdout
    assert (
        res.stdout.strip()
        .splitlines()[-1]
        .startswith("NOT ASSESSED: --tolerance checks the collectives' |busbw error|")
    )
    doc = json.loads(run("validate", "compare", str(path), "--cluster", "dgx-h100",
                         "--tolerance", "0.1", "--json").stdout)  # fmt: skip
    assert (doc["passed"], doc["assessed"], doc["verdict"]) == (False, False, "not assessed")
    assert len(doc["ddp_steps"]) == 3


def test_a_results_file_in_a_folder_of_logs_is_named_as_one(tmp_path):
    """A folder holding a log and a torch job's results.jsonl-like file (any name .jsonl) read
    the .jsonl as an nccl-tests JSON log: "not compared: coll.jsonl: line 2: invalid JSON:
    Extra data". Every command reads .jsonl as results: the folder reader says so and where to
    give it; a folder of results files only is refused listing each."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "ar.txt").write_bytes(_bundled("06a").read_bytes())
    results = _gloo_collectives(tmp_path)
    (folder / "gloo.jsonl").write_bytes(results.read_bytes())
    res = run("validate", "compare", str(folder), "--cluster", "dell-xe9680-h100")
    assert res.exit_code == 1  # a file not compared fails the command, as before
    assert res.stdout.strip().splitlines()[-2].startswith("ok: docs/fidelity.md goal")
    assert res.stdout.strip().splitlines()[-1].startswith("FAIL: 1 file of")
    doc = json.loads(run("validate", "compare", str(folder), "--cluster", "dell-xe9680-h100",
                         "--json").stdout)  # fmt: skip
    assert (doc["passed"], doc["assessed"], doc["verdict"]) == (False, True, "fail")
    assert (
        "costmodel: warning: not compared: gloo.jsonl: a results file (.jsonl), not an "
        f"nccl-tests log; give it on its own: {str(folder / 'gloo.jsonl')!r}"
    ) in res.stderr
    assert "invalid JSON" not in res.stderr
    (folder / "ar.txt").unlink()
    one_line_error(run("validate", "compare", str(folder)),
                   "no file of", "gloo.jsonl: a results file (.jsonl)")  # fmt: skip


def test_a_check_from_above_every_row_names_itself_in_the_goal_line():
    """`--check-from 100GiB` on a log with rows from 1 MiB up said "from 1 MiB: not assessed
    (no rows of 1 MiB or more)", blaming the log; it names the bound that left no rows."""
    from costmodel.validation.compare import fidelity_check

    rows = pd.DataFrame({"size_bytes": pd.Series([], dtype=float), "rel_error": []})
    # the bound as the user gave it (1.05 MB / 107 GB / 524 kB before: tests/test_validate_qa8.py);
    # both checks would judge the same rows from it, so the stricter one is said
    _, lines = fidelity_check(rows, from_bytes=100 * 2**30, from_label="100 GiB")
    assert lines == ["median |busbw error| from 100 GiB: not assessed (no rows from 100 GiB up)"]
    _, lines = fidelity_check(rows, from_bytes=2**19, from_label="512 KiB")  # below 1 MiB
    assert lines[0].endswith("(no rows of 1 MiB or more)")
    assert lines[1] == "median |busbw error| from 512 KiB: not assessed (no rows from 512 KiB up)"


def test_ddp_steps_on_cpus_without_a_calibration_get_advice_that_works(tmp_path):
    """`validate compare ddp.jsonl` (gloo DDP steps only, no --cluster) advised "calibrate on
    them (costmodel calibrate without --cluster)", which refuses DDP steps. The advice now is
    to calibrate on collectives timed on the same CPUs; followed, the steps compare."""
    steps = [{**r, "backend": "gloo", "device": "cpu", "ranks": 2, "gpus_per_node": 2,
              "compute_iters": 10} for r in _old_ddp_rows()]  # fmt: skip
    ddp = _write(tmp_path / "ddp.jsonl", steps)
    line = one_line_error(run("validate", "compare", str(ddp)),
                          "--cluster: the rows ran on CPUs (gloo)",
                          "calibrate on collectives the torch job timed on them")  # fmt: skip
    assert "calibrate on them (" not in line
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(_gloo_collectives(tmp_path)), "-o", str(cal)).exit_code == 0
    res = run("validate", "compare", str(ddp), "--calibration", str(cal))
    assert res.exit_code == 0 and "DDP steps, measured vs predicted" in res.stdout


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a": 1}\n', "no row has 'op' or 'time_s': not a results file"),
        ("[1, 2]\n", "line 1 is JSON but not an object (list)"),
        (
            '{"op": "all_reduce", "size_bytes": 1024, "ranks": 2, "time_s": 1e-5}\n'
            '{"op": "all_reduce", "size_bytes": 2048, "ranks": 2, "time_s": "fast"}\n',
            "line 2: time_s 'fast' is not a number",
        ),
        (
            '{"op": "all_reduce", "size_bytes": "1MiB", "ranks": 2, "time_s": 1e-5}\n',
            "line 1: size_bytes '1MiB' is not a number",
        ),
    ],
)
def test_a_jsonl_that_is_not_results_is_refused_naming_line_and_field(tmp_path, text, fragment):
    """Other tools' JSON lines and hand-edited rows leaked pandas: "measured rows lack columns
    ['op', 'ranks', 'size_bytes', 'time_s']; need [the same list]" (no file named),
    "operation 'rtruediv' not supported for dtype 'str' with dtype 'int64'" (validate compare)
    and "Invalid comparison between dtype=str and int" (calibrate). One line now, naming the
    file, and the line and field where there is one."""
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    one_line_error(run("validate", "compare", str(path), "--cluster", "dgx-h100"),
                   str(path), fragment)  # fmt: skip
    one_line_error(run("calibrate", str(path), "-o", str(tmp_path / "c.toml")), str(path), fragment)


def test_a_grid_file_of_another_format_says_what_a_grid_file_is(tmp_path):
    """`costmodel sweep grid.csv` (a CSV of axes) said only "invalid TOML: Expected '=' after
    a key ..."; a file not named .toml is told what a grid file is. A .toml keeps the parser's
    message alone."""
    csv = tmp_path / "grid.csv"
    csv.write_text("preset,nodes\ndgx-h100,1\n")
    one_line_error(run("sweep", str(csv)), "is not valid TOML",
                   'a grid file is TOML: kind = "collective" and a [grid] table')  # fmt: skip
    toml = tmp_path / "grid.toml"
    toml.write_text("preset,nodes\n")
    assert "a grid file is TOML" not in one_line_error(run("sweep", str(toml)), "is not valid TOML")


def test_a_calibration_copied_through_a_powershell_redirect_loads(tmp_path):
    """A calibration TOML is a file users copy too; in UTF-16 (a PowerShell 5 redirect) it
    failed with Python's "'utf-8' codec can't decode byte 0xff in position 0" naming no file.
    It is decoded by the one helper now; undecodable bytes name the file, byte and offset."""
    from costmodel.validation.calibrate import load_calibration

    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(_gloo_collectives(tmp_path)), "-o", str(cal)).exit_code == 0
    copy = tmp_path / "copy.toml"
    copy.write_bytes(cal.read_text().encode("utf-16"))
    assert load_calibration(copy).table().equals(load_calibration(cal).table())
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'kind = "caf\xe9"\n')
    one_line_error(
        run("validate", "compare", str(_gloo_collectives(tmp_path)), "--calibration", str(bad)),
        f"--calibration: {bad}: cannot read calibration TOML: not UTF-8 text: byte 0xe9 at "
        "offset 11",
    )


def test_op_names_are_read_alike_by_every_validate_command(tmp_path):
    """`validate compare --op AllReduce` (and all-reduce) read as all_reduce, but `validate
    torch --ops ALL_REDUCE` and `validate nccl-tests run --ops all-reduce` were refused as
    unknown, and `--ops all_reduce,all_reduce` timed the op twice. Every command takes any
    spelling now and each op once."""
    out = str(tmp_path / "t.jsonl")
    res = run("validate", "torch", "--dry-run", "--backend", "gloo", "--ops",
              "ALL_REDUCE,all-reduce,AllGather", "-o", out)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    argv = res.stdout.split()
    assert argv[argv.index("--ops") + 1] == "all_reduce,all_gather"
    res = run("validate", "torch", "--dry-run", "--backend", "gloo", "--ops", "None", "--ddp",
              "-o", out)  # fmt: skip
    argv = res.stdout.split()
    assert res.exit_code == 0 and argv[argv.index("--ops") + 1] == "none"
    one_line_error(run("validate", "torch", "--dry-run", "--ops", "allreduce2", "-o", out),
                   "--ops: 'allreduce2' not known")  # fmt: skip
    build = tmp_path / "build"
    build.mkdir()
    for stem in ("all_reduce", "all_gather"):
        binary = build / f"{stem}_perf"
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
    res = run("validate", "nccl-tests", "run", "--build-dir", str(build), "--ops",
              "ALL_REDUCE,all-reduce,AllGather", "--dry-run", "-o", str(tmp_path / "nc"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert [Path(line.split()[0]).name for line in lines] == ["all_reduce_perf", "all_gather_perf"]


def test_a_toml_given_as_results_is_named_as_such(tmp_path):
    """`validate compare cal.toml` (the calibration given where the measurements go) said "no
    nccl-tests result rows found (expected lines like ...)"; it says what the file is and
    where it belongs, for compare and calibrate, and in a folder of logs."""
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(_gloo_collectives(tmp_path)), "-o", str(cal)).exit_code == 0
    for args in (("validate", "compare", str(cal), "--cluster", "dgx-h100"),
                 ("calibrate", str(cal), "-o", str(tmp_path / "again.toml"))):  # fmt: skip
        one_line_error(run(*args), f"RESULTS: {str(cal)!r} is a TOML file (a calibration or a "
                       "preset), not measurements", "a calibration as --calibration")  # fmt: skip
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "ar.txt").write_bytes(_bundled("09a").read_bytes())
    (folder / "cal.toml").write_bytes(cal.read_bytes())
    res = run("validate", "compare", str(folder), "--cluster", "pcie3-2x-rtx2080ti-nop2p")
    assert "not compared: cal.toml: a TOML file (a calibration or a preset)" in res.stderr


def test_the_utf16_guess_reads_only_what_it_can_tell():
    """The guess reads ASCII-range text in UTF-16 of either byte order (a µ in `(us)` lines is
    still U+00B5, high byte NUL), and refuses what the NULs cannot tell: UTF-32 without its
    mark, a file of NULs, and UTF-16 of an odd length."""
    from costmodel.textfile import TextDecodeError, decode

    text = "#  size  count  type  time (µs)  algbw (GB/s)\n" * 4
    for codec, name in (("utf-16-le", "UTF-16 LE"), ("utf-16-be", "UTF-16 BE")):
        got = decode(text.encode(codec))
        assert (got.text, got.encoding) == (text, name) and "without a byte-order mark" in got.note
    assert decode(text.encode()).note is None  # UTF-8: no guess
    for data, fragment in (
        (text.encode("utf-32-le"), "not text: NUL bytes throughout"),
        (b"\x00" * 300, "not text: NUL bytes throughout its first 256 bytes"),
        (text.encode("utf-16-le") + b"#", "not UTF-16 LE text without a byte-order mark"),
    ):
        with pytest.raises(TextDecodeError, match=fragment):
            decode(data, "x.log", what="log")
