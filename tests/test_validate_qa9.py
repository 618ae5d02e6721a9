"""Ninth QA pass of the validation harness, as a user on a cluster node runs it: a log whose run
nccl-tests stopped with a failure, the DDP steps a prediction could not price, the algorithm
names of pinned runs, and the gloo job end to end. Each test names the defect it guards against;
tests/test_validate_qa.py to _qa8.py hold the earlier passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from tests._cli import one_line_error, run


def _user_log(tmp_path: Path, name: str = "run_allreduce.log") -> tuple[Path, list[str]]:
    """Bundled 06a (2 x 8 H100, all-reduce) as a user's own log: its provenance block left
    out (so it is not recognised as a bundled run), nccl-tests' output kept verbatim."""
    lines = reference_path("06a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    body = lines[seps[1] + 1 :]
    path = tmp_path / name
    path.write_text("\n".join(body) + "\n")
    return path, body


def _row_lines(body: list[str]) -> list[int]:
    return [i for i, line in enumerate(body) if line.strip()[:1].isdigit()]


# --- 1. a run nccl-tests stopped with a failure ------------------------------------------------
_NCCL_FAILURE = (
    "bm-h100-01: Test NCCL failure common.cu:1279 'unhandled system error (run with "
    "NCCL_DEBUG=INFO for details) / '"
)
_TEST_FAILURE = " .. bm-h100-01 pid 29262: Test failure common.cu:1100"


def test_a_log_whose_run_failed_mid_sweep_says_so(tmp_path):
    """nccl-tests stops at its first error and prints `host: Test NCCL failure file:line '...'`
    (src/common.h NCCLCHECK): the reader read past that line as text and said only that the
    log "may be cut off", and compare printed "ok" as for a complete sweep. The failure is one
    warning naming its line and quoting it; the rows before it are still compared."""
    path, body = _user_log(tmp_path)
    rows = _row_lines(body)
    stop = rows[25]
    path.write_text("\n".join([*body[:stop], _NCCL_FAILURE, _TEST_FAILURE]) + "\n")
    result = run("validate", "compare", str(path))
    assert result.exit_code in (0, 1), result.output
    warned = [w for w in result.stderr.splitlines() if "Test NCCL failure" in w]
    assert len(warned) == 1, result.stderr  # the two failure lines are said once
    assert warned[0].startswith(
        f"costmodel: warning: line {stop + 1}: nccl-tests reports a failure"
    )
    assert "unhandled system error" in warned[0]
    assert "no size after this line was measured" in warned[0]
    assert "over 50 rows" in result.stdout  # the 25 sizes before it, both placements


def test_a_log_whose_run_failed_before_its_first_size_names_the_failure(tmp_path):
    """A run that failed at initialisation has no row: the one-line refusal said only "no
    nccl-tests result rows found", leaving the user to open the log for why."""
    path, body = _user_log(tmp_path)
    head = body[: _row_lines(body)[0]]
    failure = (
        "bm-h100-01: Test NCCL failure common.cu:1005 'remote process exited or there was a "
        "network error / NET/IB : Got completion from peer'"
    )
    path.write_text("\n".join([*head, failure, _TEST_FAILURE]) + "\n")
    for command in (("validate", "compare", str(path)), ("calibrate", str(path), "-o",
                                                         str(tmp_path / "c.toml"))):  # fmt: skip
        line = one_line_error(run(*command), "no nccl-tests result rows found",
                              "the run failed before its first size", "network error")  # fmt: skip
        assert f"line {len(head) + 1}:" in line
    assert not (tmp_path / "c.toml").exists()


def test_a_document_quoting_the_failure_format_is_no_failed_run(tmp_path):
    """A text that quotes nccl-tests' failure format (a README: "`host: Test NCCL failure
    common.cu:N '...'`") uploaded by mistake was refused as "the run failed before its first
    size", quoting the prose: nccl-tests prints a file and a line number there (``%s:%d``), and
    a match now needs both. The plain "no rows" refusal stays; a real failure line still counts."""
    doc = tmp_path / "notes.md"
    doc.write_text(
        "The reader names nccl-tests' own failure line (`host: Test NCCL failure "
        "common.cu:N '...'`: the test stops at its first error).\n"
    )
    line = one_line_error(run("validate", "compare", str(doc)), "no nccl-tests result rows found")
    assert "failed before its first size" not in line, line
    from costmodel.validation.nccl_tests._text import _TEST_FAILURE_RE

    assert _TEST_FAILURE_RE.search(_NCCL_FAILURE) and _TEST_FAILURE_RE.search(_TEST_FAILURE)


def test_no_bundled_log_is_said_to_have_failed():
    """A failure quoted in a provenance block ('#' lines before the output) or NCCL's own
    debug text is not nccl-tests' failure line: no bundled log with times is said to have
    failed."""
    from costmodel.validation.logread import log_findings
    from costmodel.validation.nccl_tests import read_nccl_tests

    folder = reference_path("06a").parent
    for path in sorted(folder.glob("*.txt")):
        if "busbw-only" in path.name or path.name[:2] in ("26", "27"):
            continue  # no nccl-tests rows (refused elsewhere, tests/test_validate_logs.py)
        rows = read_nccl_tests(path, strict=False, op="all_reduce")
        assert not [f for f in log_findings(rows) if "reports a failure" in f], path.name


# --- 2. DDP steps a prediction could not price -------------------------------------------------
_JOB = {"source": "torch", "backend": "gloo", "ranks": 2, "nodes": 1, "gpus_per_node": 2,
        "device": "cpu", "torch_version": "2.13.0+cpu", "host": "node1",
        "attempt": "20261203T120000.000000001-1", "complete": True, "run_key": "torch@0123abcd",
        "config": "0123abcd00000000"}  # fmt: skip


def _gloo_results(path: Path) -> Path:
    """A torch job's results file as `validate torch --ops all_gather --ddp` writes it: all-gather
    on 2 ranks on an alpha-beta line (50 us, 2 GB/s; every field the job writes) and its three
    DDP steps."""
    rows = []
    for k in range(12, 21):
        size = 2**k
        t = 50e-6 + 0.5 * size / 2e9
        rows.append({**_JOB, "kind": "collective", "op": "all_gather", "size_bytes": size,
                     "count": size // 4, "dtype": "float32", "placement": "out_of_place",
                     "time_s": t, "time_min_s": t, "time_max_s": t, "iters": 5, "rounds": 1,
                     "algbw_bytes_per_s": size / t, "busbw_bytes_per_s": 0.5 * size / t,
                     "flagged": False})  # fmt: skip
    for accumulation, no_sync, step, compute in ((1, False, 0.027, 0.009),
                                                 (4, False, 0.109, 0.033),
                                                 (4, True, 0.060, 0.033)):  # fmt: skip
        rows.append({**_JOB, "kind": "ddp_step", "op": "ddp_step", "params": 3939840,
                     "gradient_bytes": 15759360, "layers": 15, "width": 512,
                     "bucket_cap_mb": 25.0, "accumulation": accumulation, "no_sync": no_sync,
                     "time_s": step, "compute_time_s": compute, "iters": 5,
                     "compute_iters": 10 if accumulation > 1 else 5, "flagged": False})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ddp_steps_a_calibration_cannot_price_say_why(tmp_path):
    """A calibration fitted on a gloo job's all-gather rows has no all-reduce fit, so its DDP
    steps (bucketed all-reduces) cannot be predicted: the text table printed `NaN` as the
    predicted time with no reason anywhere but --json's `note`. It prints "-", as the error
    column does, and one warning line says which steps were not predicted and why."""
    results = _gloo_results(tmp_path / "t.jsonl")
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(results), "-o", str(cal)).exit_code == 0
    result = run("validate", "compare", str(results), "--calibration", str(cal))
    # CPU rows (gloo) are outside the model's regimes: not judged by the GPU goal (not assessed)
    assert result.exit_code == 1, result.output
    assert result.stdout.strip().splitlines()[-1].startswith("NOT ASSESSED")
    assert "NaN" not in result.stdout and "nan" not in result.stdout
    table = result.stdout.split("DDP steps")[1].splitlines()[2:5]
    assert [line.split()[4:] for line in table] == [["-", "-"]] * 3, table
    warned = [w for w in result.stderr.splitlines() if "DDP steps not predicted" in w]
    assert warned == [
        "costmodel: warning: 3 of 3 DDP steps not predicted: calibration 'cal' has no fit for "
        "an intra-node all_reduce (algorithm 'auto', protocol 'auto'); it has "
        "all_gather/intra/ring/auto (3 steps)"
    ], result.stderr
    # a step that is predicted shows its time and no such warning
    priced = run("validate", "compare", str(results), "--cluster", "dgx-h100")
    assert "not predicted" not in priced.stderr
    assert [line.split()[4] for line in priced.stdout.split("DDP steps")[1].splitlines()[2:5]]
    assert all(
        float(line.split()[4]) > 0 for line in priced.stdout.split("DDP steps")[1].splitlines()[2:5]
    )


def test_the_verdict_counts_one_row_in_the_singular(tmp_path):
    """The goal line read "(<= goal 8%, 1 rows)" for a check over one row."""
    import pandas as pd

    from costmodel.validation.compare import fidelity_check

    one = pd.DataFrame({"size_bytes": [2.0**20, 4096.0], "rel_error": [0.05, -0.1]})
    _, lines = fidelity_check(one)
    assert lines == [
        "median |busbw error| from 1 MiB: 5.0% (<= goal 8%, 1 row)",
        "median |busbw error| all sizes: 7.5% (<= goal 20%, 2 rows)",
    ]


# --- 3. one name per fitted algorithm ----------------------------------------------------------
def test_calibrate_names_a_fit_as_the_loaded_calibration_does(tmp_path):
    """calibrate stored and printed an all-to-all fit as `ring` (the NCCL_ALGO default), while
    the loaded calibration and `validate compare`'s messages call the same fit `pairwise`
    (all-to-all's textbook name; broadcast's and reduce's ring is `chain`): one fit, two
    names. calibrate now writes and prints the name the loaded calibration uses."""
    import tomllib

    rows = [
        json.loads(line) for line in _gloo_results(tmp_path / "g.jsonl").read_text().splitlines()
    ]
    for op in ("all_to_all", "broadcast"):
        for r in rows:
            if r["kind"] == "collective" and r["op"] == "all_gather":
                rows.append({**r, "op": op})
                if len([x for x in rows if x["op"] == op]) == 9:
                    break
    results = tmp_path / "t.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cal = tmp_path / "cal.toml"
    result = run("calibrate", str(results), "-o", str(cal))
    assert result.exit_code == 0, result.output
    fits = {f["op"]: f["algorithm"] for f in tomllib.loads(cal.read_text())["fit"]}
    assert fits == {"all_gather": "ring", "all_to_all": "pairwise", "broadcast": "chain"}
    table = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[1:4]}
    assert table == fits
    # the loaded calibration answers under the same names (its message lists them)
    compared = run("validate", "compare", str(results), "--calibration", str(cal))
    assert "all_gather/intra/ring/auto, all_to_all/intra/pairwise/auto, broadcast/intra/chain" \
        "/auto" in compared.stderr  # fmt: skip


def test_a_pinned_algorithm_and_the_same_one_chosen_are_one_row_of_the_summary(tmp_path):
    """Bundled 13d pins NCCL_ALGO per run (`### ALGO=Ring`) and also has runs NCCL chose for
    itself: the summary listed `Ring` and `ring`, `NVLS` and `nvls` as four algorithms (and 03's
    `COLLNETCHAIN` beside the model's `collnet_chain`). A pinned algorithm is written as the
    model writes the one it predicts; the per-row algo_env keeps what was pinned."""
    table = tmp_path / "13d.csv"
    result = run("validate", "compare", "--reference", "13d", "--json", "-o", str(table))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = sorted({s["algorithm"] for s in data["summary"]})
    assert names == ["nvls", "ring", "tree"]
    points = {s["algorithm"]: s["points"] for s in data["summary"]}
    assert points == {"nvls": 8, "ring": 10, "tree": 6}  # 13d: 3 pinned sizes x 2 + proto runs
    import pandas as pd

    rows = pd.read_csv(table)
    assert set(rows["algo_env"].dropna()) == {"Ring", "Tree", "NVLS"}  # what was pinned, kept
    collnet = json.loads(run("validate", "compare", "--reference", "03", "--json").stdout)
    assert {s["algorithm"] for s in collnet["summary"]} == {"collnet_chain"}


# --- 4. the expected error beside the measured one, on every surface -----------------------------
def test_a_calibration_comparison_shows_its_own_expected_error(tmp_path):
    """`validate compare --calibration` (the only way to compare a gloo job) printed the median
    error with no expected error beside it: the grouped-CV band was dropped, rightly (it
    measures the uncalibrated model), and nothing took its place. The band is now the
    calibration's own held-out error (each fit's cv_max_abs_rel_error, said as such), in the
    text, in --json and in the report."""
    import tomllib

    results = _gloo_results(tmp_path / "t.jsonl")
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(results), "-o", str(cal)).exit_code == 0
    (fit,) = tomllib.loads(cal.read_text())["fit"]
    report = tmp_path / "r.html"
    text = run("validate", "compare", str(results), "--calibration", str(cal),
               "--report", str(report))  # fmt: skip
    head = next(line for line in text.stdout.splitlines() if line.startswith("median |"))
    width = fit["cv_max_abs_rel_error"]
    if fit.get("cv_max_abs_rel_error_ge_1mib") is not None:  # the 1 MiB row's own band
        assert "from 1 MiB" in head
        assert head.endswith("of 9 rows within it")
    else:  # no size from 1 MiB held out: that row has no band (was the small sizes' error)
        assert "; none for rows at sizes from 1 MiB, of which the fits held out none" in head
        assert head.endswith("of 8 rows within it")
    assert "expected error (the calibration's held-out sizes" in head
    assert f"±{100 * width:.0f}% below 1 MiB" in head
    data = json.loads(
        run("validate", "compare", str(results), "--calibration", str(cal), "--json").stdout
    )
    band = data["expected_error"]
    assert band["basis"].startswith("the calibration's held-out sizes")
    assert band["half_width_below_1MiB"] == pytest.approx(width)
    assert band["rows_with_band"] == int(head.split(" of ")[-1].split()[0])
    page = report.read_text()
    assert "expected error (the calibration&#x27;s held-out sizes" in page
    assert "predicted on: calibration cal.toml</p>" in page
    assert "docs/fidelity.md goal" in page  # the verdict, as printed


def test_the_report_says_what_was_assumed_and_the_band(tmp_path):
    """The HTML report of `validate compare --report` showed the median error and the table but
    not what the comparison assumed (a bundled run's nodes, GPUs per node, cluster) nor the
    expected error and the verdict the terminal printed: a report passed on could not be read
    for what it took as given."""
    report = tmp_path / "r.html"
    result = run("validate", "compare", "--reference", "16a", "--report", str(report))
    assert result.exit_code == 1  # 16a's median from 1 MiB is over the goal
    page = report.read_text()
    for line in result.stderr.splitlines():
        if line.startswith("assumed: "):
            assert line.replace("'", "&#x27;") in page
    assert "assumed: cluster = aws-p4de" in page
    assert "predicted on: aws-p4de (model nccl)" in page
    run("validate", "compare", "--reference", "16a", "--cluster", "aws-p5", "--report", str(report))
    assert "predicted on: aws-p5 (model nccl)" in report.read_text()  # given, not assumed
    assert "assumed: GPUs per node = 8" in page
    band = next(line for line in result.stdout.splitlines() if line.startswith("median |"))
    assert band.split("; ", 1)[1] in page  # "expected error (grouped CV) ..."
    assert result.stdout.splitlines()[-1].replace(">", "&gt;").replace("<", "&lt;") in page


# --- 5. the torchrun line --dry-run prints, run by hand ----------------------------------------
@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_dry_run_line_run_by_hand_records_no_log_nobody_wrote(tmp_path):
    """`validate torch --dry-run` printed the line with `--attempt <stamp> --job-log
    logs/torch.<stamp>.log`: run by hand (or pasted into an srun script, what it is printed
    for) every row named a log file nobody wrote (validate torch writes it, the job only records
    it) and every run of the line shared one attempt name. The line leaves both out: run as
    printed (2 gloo ranks, 4-8 KiB), its rows carry a fresh attempt and no log, and compare
    reads them, never modifying the results file."""
    import hashlib
    import os
    import shlex
    import subprocess

    out = tmp_path / "r.jsonl"
    printed = run("validate", "torch", "--nproc", "2", "--backend", "gloo", "--ops",
                  "all_gather", "--max-bytes", "8KiB", "--iters", "2", "--dry-run", "-o",
                  str(out))  # fmt: skip
    assert printed.exit_code == 0, printed.output
    argv = shlex.split(printed.stdout)
    assert "--attempt" not in argv and "--job-log" not in argv
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("SLURM_JOB_ID", None)  # outside sbatch: the job names no launcher file
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=170)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["op"], r["size_bytes"], r["ranks"]) for r in rows] == [
        ("all_gather", 4096, 2),
        ("all_gather", 8192, 2),
    ]
    assert all(r.get("log") is None for r in rows), rows[0].get("log")
    assert len({r["attempt"] for r in rows}) == 1 and rows[0]["attempt"]
    assert not (tmp_path / "logs").exists()
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    table = tmp_path / "cmp.csv"
    compared = run("validate", "compare", str(out), "--cluster", "dgx-h100", "-o", str(table))
    assert compared.exit_code == 1  # gloo on CPUs is far from an H100 cluster's prediction
    assert "the rows ran on CPUs (gloo)" in compared.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp.csv", "r.jsonl"]  # no temp left


# --- 6. a table of in-place columns only ----------------------------------------------------------
def test_a_table_titled_in_place_only_holds_in_place_rows(tmp_path):
    """A log whose table has one block of columns titled `in-place` (the out-of-place block cut
    out, or a tool printing only those) was read as out-of-place rows, silently: compare's
    `--placement in-place` then found none and `--placement out-of-place` compared in-place
    times. The title over the blocks names their placement."""
    from costmodel.validation.nccl_tests import read_nccl_tests

    path, body = _user_log(tmp_path)
    rows = set(_row_lines(body))
    edited = []
    for i, line in enumerate(body):
        if i in rows:
            fields = line.split()
            edited.append("  ".join(fields[:5] + fields[9:]))  # the in-place block
        elif "out-of-place" in line:
            edited.append("#" + " " * 62 + "in-place")
        elif line.lstrip("# ").startswith("size"):
            edited.append(
                "#       size         count      type   redop    root     time   algbw   busbw #wrong"
            )
        elif line.lstrip("# ").startswith("(B)"):
            edited.append(
                "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            )
        else:
            edited.append(line)
    path.write_text("\n".join(edited) + "\n")
    df = read_nccl_tests(path)
    assert set(df["placement"]) == {"in_place"}
    full = read_nccl_tests(_user_log(tmp_path, "full_allreduce.log")[0])
    in_place = full[full["placement"] == "in_place"].reset_index(drop=True)
    assert df["time_s"].tolist() == in_place["time_s"].tolist()
    line = one_line_error(run("validate", "compare", str(path), "--placement", "out-of-place"),
                          "--placement")  # fmt: skip
    assert "no out-of-place rows" in line
    assert run("validate", "compare", str(path), "--placement", "in-place").exit_code == 0


# --- 7. '#' comments in odd places ----------------------------------------------------------------
def test_a_comment_after_a_row_is_left_out_and_said_once(tmp_path):
    """A note typed after a row (`... 0   # after the NIC swap`) made the row unreadable:
    skipped as "result row has 16 fields, expected 13 (a cut-off or joined row)", and the next
    row then warned of missing sizes. The row is read without its comment, said once however
    many rows carry one; comments on lines of their own, indented or not, are still read past
    silently, as nccl-tests' own '#' lines are."""
    from costmodel.validation.logread import log_findings
    from costmodel.validation.nccl_tests import read_nccl_tests

    path, body = _user_log(tmp_path)
    clean = read_nccl_tests(path)
    rows = _row_lines(body)
    edited = list(body)
    edited[rows[3]] += "   # after the NIC swap"
    edited[rows[12]] += "  #rerun"
    edited.insert(rows[20], "   # an indented note")
    edited.insert(rows[10], "# a note between rows")
    path.write_text("\n".join(edited) + "\n")
    df = read_nccl_tests(path)
    assert df["time_s"].tolist() == clean["time_s"].tolist()  # every row read, as before
    found = log_findings(df)
    assert found == [
        f"line {rows[3] + 1}: a '#' comment after a result row's fields ('# after the NIC "
        "swap'; 2 rows have one): nccl-tests prints none there; the row is read without it"
    ]
    result = run("validate", "compare", str(path))
    assert "over 64 rows" in result.stdout and "rows are missing" not in result.stderr


# --- 8. columns a newer nccl-tests (or another tool) adds ------------------------------------------
def test_columns_the_reader_does_not_know_are_named_not_passed_over_silently(tmp_path):
    """A header with columns this reader has no name for (`graph`, `cpu` beside each block, as
    a newer nccl-tests or a patched one may print) was read with no word: the rows were right
    (time, algbw and busbw are found by name), but nothing said two columns were skipped. One
    finding names them; the rows read as the same log without them."""
    from costmodel.validation.logread import log_findings
    from costmodel.validation.nccl_tests import read_nccl_tests

    path, body = _user_log(tmp_path)
    clean = read_nccl_tests(path)
    rows = set(_row_lines(body))
    edited = []
    for i, line in enumerate(body):
        if i in rows:
            f = line.split()
            edited.append("  ".join([*f[:9], "12.3", "1.1", *f[9:13], "12.3", "1.1"]))
        elif line.lstrip("# ").startswith("size"):
            edited.append(line + "  graph  cpu")
            edited[-1] = edited[-1].replace("#wrong     time", "#wrong  graph  cpu     time")
        elif line.lstrip("# ").startswith("(B)"):
            edited.append(line.replace("(GB/s)            (us)", "(GB/s)    (us)  (us)  (us)")
                          + "  (us)  (us)")  # fmt: skip
        else:
            edited.append(line)
    path.write_text("\n".join(edited) + "\n")
    df = read_nccl_tests(path)
    assert df["time_s"].tolist() == clean["time_s"].tolist()
    assert df["busbw_bytes_per_s"].tolist() == clean["busbw_bytes_per_s"].tolist()
    header = next(i for i, line in enumerate(edited) if line.lstrip("# ").startswith("size"))
    (found,) = [f for f in log_findings(df) if "column header" in f]
    assert found.startswith(f"line {header + 1}: column header names graph, cpu, not a column")
    # nccl-tests' own variants name nothing: -I's per-iteration columns, old tables' error
    for name in ("13f", "06a", "15"):
        assert not [f for f in log_findings(read_nccl_tests(reference_path(name), strict=False))
                    if "column header names" in f]  # fmt: skip


# --- 9. rows the run's own data check failed -------------------------------------------------------
def test_rows_whose_data_check_failed_are_said_by_compare_and_refused_by_calibrate(tmp_path):
    """nccl-tests checks each result (`#wrong`, `# Out of bounds values : 1 FAILED`); the
    parser flags such rows. validate compare judged them with no word (exit and verdict as for
    a clean run), and calibrate, which leaves them out, refused the file as "--min-bytes: no
    usable collective rows from 1 B to the largest", blaming an option never given."""
    log = Path(__file__).parent / "data" / "nccl_tests_synthetic_cputime_iter.txt"
    result = run("validate", "compare", str(log), "--cluster", "dgx-h100")
    warned = [w for w in result.stderr.splitlines() if "data check" in w]
    assert warned == [
        "costmodel: warning: 6 of 6 rows flagged by the run's own data check (out of bounds "
        "values: 1 FAILED, line 18; ...): a collective that returned wrong data; compared as "
        "measured (calibrate leaves them out)"
    ]
    data = json.loads(run("validate", "compare", str(log), "--cluster", "dgx-h100",
                          "--json").stdout)  # fmt: skip
    assert any("data check" in w for w in data["warnings"])
    line = one_line_error(run("calibrate", str(log), "-o", str(tmp_path / "c.toml")),
                          "every collective row is flagged", "1 FAILED")  # fmt: skip
    assert "--min-bytes" not in line
    # a clean log says nothing of it
    assert "data check" not in run("validate", "compare", "--reference", "13a").stderr


def test_a_failed_sweep_run_quotes_nccl_tests_failure(tmp_path):
    """`validate nccl-tests run` said of a run that exited non-zero only "exit code 3 (a rank
    died or the binary failed); see <log>", where the log's own failure line names the cause.
    The line is quoted; a run that died without one keeps the old wording."""
    import stat

    path, body = _user_log(tmp_path)
    stop = _row_lines(body)[25]
    path.write_text("\n".join([*body[:stop], _NCCL_FAILURE, _TEST_FAILURE]) + "\n")
    build = tmp_path / "build"
    build.mkdir()
    for name, script in (("all_reduce_perf", f"cat {path}\nexit 3\n"),
                         ("all_gather_perf", "echo killed\nexit 137\n")):  # fmt: skip
        binary = build / name
        binary.write_text("#!/bin/sh\n" + script)
        binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "runs"
    result = run("validate", "nccl-tests", "run", "--build-dir", str(build), "--gpus", "16",
                 "--ops", "all_reduce,all_gather", "--no-progress", "-o", str(out))  # fmt: skip
    assert result.exit_code == 1, result.output
    said = result.stdout + result.stderr
    assert "all_reduce: exit code 3 (nccl-tests: \"bm-h100-01: Test NCCL failure common.cu:1279 " \
        "'unhandled system error" in said  # fmt: skip
    assert "all_gather: exit code 137 (a rank died or the binary failed)" in said
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert "Test NCCL failure" in next(r["reason"] for r in runs if r["key"] == "all_reduce")


# --- 10. the per-row table says what it was predicted on ------------------------------------------
def test_the_per_row_table_and_json_name_the_cluster_predicted_on(tmp_path):
    """`validate compare -o cmp.csv` wrote each row's nodes and GPUs per node and the model's
    name, but not the cluster preset the predictions were made on (assumed from a bundled
    run's index, or from the log's GPU): a CSV read later could not say what it compares
    against. Each row names it, as --json does; a calibration is named with its base."""
    table = tmp_path / "cmp.csv"
    result = run("validate", "compare", "--reference", "16a", "-o", str(table), "--json")
    assert json.loads(result.stdout)["cluster"] == "aws-p4de"
    import pandas as pd

    rows = pd.read_csv(table)
    assert set(rows["cluster"]) == {"aws-p4de"}
    assert set(rows["nodes"]) == {2} and set(rows["gpus_per_node"]) == {8}
    results = _gloo_results(tmp_path / "t.jsonl")
    cal = tmp_path / "cal.toml"
    assert run("calibrate", str(results), "-o", str(cal)).exit_code == 0
    run("validate", "compare", str(results), "--calibration", str(cal), "-o", str(table))
    assert set(pd.read_csv(table)["cluster"]) == {"calibration cal.toml"}


# --- 11. a rank count the log does not print ------------------------------------------------------
def test_a_rank_count_read_from_the_busbw_ratio_is_said(tmp_path):
    """A log without its device list (`#  Rank  0 ... on host device 0` lines cut, as in many
    pasted logs) has its rank count taken from the rows' busbw/algbw ratio; compare then said
    "nodes = 2 (ranks / dgx-h100's 8 GPUs per node)" without saying where the 16 ranks came
    from. The ratio is said, on stderr and in --json, as every other fact the log lacked."""
    path, body = _user_log(tmp_path)
    path.write_text("\n".join(line for line in body if "Rank " not in line) + "\n")
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100", "--json")
    assert result.exit_code == 0, result.output
    assumed = json.loads(result.stdout)["assumed"]
    assert "ranks = 16 (the rows' busbw/algbw ratio; the log lists no devices)" in assumed
    assert "nodes = 2 (ranks / dgx-h100's 8 GPUs per node)" in assumed
    # a log that lists its devices states its ranks: nothing is said of them
    whole, _ = _user_log(tmp_path, "whole_allreduce.log")
    listed = json.loads(run("validate", "compare", str(whole), "--json").stdout)["assumed"]
    assert not [a for a in listed if a.startswith("ranks")]


def test_the_per_row_table_says_the_gpus_per_node_predicted_with(tmp_path):
    """Bundled 13e (runs of 2, 4 and 6 GPUs on one node, no host lines) is predicted with
    ranks / nodes GPUs per node, as stderr says ("GPUs per node = 2, 4, 6 (ranks / nodes of
    each run)"), but its per-row table left gpus_per_node blank. It holds what was used."""
    import pandas as pd

    table = tmp_path / "13e.csv"
    assert run("validate", "compare", "--reference", "13e", "-o", str(table)).exit_code == 0
    rows = pd.read_csv(table)
    used = set(zip(rows["ranks"], rows["nodes"], rows["gpus_per_node"], strict=True))
    assert used == {(2, 1, 2), (4, 1, 4), (6, 1, 6)}
