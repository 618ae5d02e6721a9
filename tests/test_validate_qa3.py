"""Third QA pass of the validation harness: a results file cut mid-row, what `validate torch`
says when it succeeds, attempt names that collide, mpirun for MPICH/Intel MPI, a bare
calibration of the bundled CollNet run, and the fidelity report's band table against the bands
predictions carry. Each test names the defect it guards against; tests/test_validate_qa.py and
tests/test_validate_qa2.py hold the earlier passes."""

from __future__ import annotations

import json
import os
import re
import tomllib
import warnings
from pathlib import Path

import pandas as pd
import pytest

from costmodel.reference import reference_path
from tests._cli import one_line_error, run
from tests._paths import ROOT, load_script
from tests.test_validate_qa2 import _gloo_rows as _qa2_gloo_rows

#: the attempt names both writers use now: <YYYYmmddTHHMMSS>.<nanoseconds>-<pid>
ATTEMPT = re.compile(r"^\d{8}T\d{6}\.\d{9}-\d+$")


def _gloo_rows() -> pd.DataFrame:
    """The gloo rows of tests/test_validate_qa2.py (synthetic, not a measurement), keyed as the
    torch job keys them now (a run key with its config hash)."""
    return _qa2_gloo_rows().assign(run_key="torch@00000000", config="0" * 16)


def _cut_file(folder: Path) -> Path:
    """13 complete rows, then the first 40 bytes of a 14th (a job killed while writing it)."""
    from costmodel.validation.runner import append_results

    path = folder / "results.jsonl"
    rows = _gloo_rows()
    append_results(path, rows)
    fragment = rows.iloc[:1].to_json(orient="records", lines=True)[:40]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(fragment)
    return path


# --- 1. a results file cut mid-line ---------------------------------------------------------------
def test_a_row_cut_off_is_skipped_and_said_with_the_file_and_line(tmp_path):
    """A results.jsonl whose last row a killed job cut off: load_results skipped the fragment
    without a word, so a sweep that lost its last row read as complete. Now a warning names the
    file and the line; the 13 complete rows are kept."""
    from costmodel.validation.runner import load_results

    path = _cut_file(tmp_path)
    with pytest.warns(UserWarning, match=rf"^{re.escape(str(path))}: line 14 is cut off") as got:
        df = load_results(path)
    assert len(df) == 13 and "13 complete rows" in str(got[0].message)
    assert df.attrs["cut_row"]["line"] == 14


def test_calibrate_and_compare_say_the_cut_row_on_stderr(tmp_path):
    """The CLI says the reader's line once, after the answer (as it says a log's cut row), in
    `--json`'s "warnings" too; the fit uses the 13 complete rows."""
    path = _cut_file(tmp_path)
    out = tmp_path / "gloo.toml"
    result = run("calibrate", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "cut off" in line]
    assert said == [
        f"costmodel: warning: {path}: line 14 is cut off (a job killed while writing it?): "
        "skipped, 13 complete rows before it kept"
    ]
    assert tomllib.loads(out.read_text())["fit"][0]["points"] == 13
    result = run("calibrate", str(path), "-o", str(out), "--json")
    assert any("line 14 is cut off" in w for w in json.loads(result.stdout)["warnings"])
    result = run("validate", "compare", str(path), "--calibration", str(out), "--json")
    assert any("line 14 is cut off" in w for w in json.loads(result.stdout)["warnings"])


def test_a_sweep_appending_to_a_cut_file_says_it_removed_the_fragment(tmp_path):
    """The writers cut a killed job's fragment off before appending (else the next row would be
    glued onto it), so load_results never saw it and nobody was told a row was lost. The
    nccl-tests runner now says it, on stderr (`"warnings"` in --json); the rows stay."""
    import stat

    from costmodel.validation.runner import load_results

    build = tmp_path / "build"
    build.mkdir()
    binary = build / "all_reduce_perf"
    binary.write_text(f'#!/bin/sh\ncat "{reference_path("13a")}"\n')
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "out"
    out.mkdir()
    _cut_file(out)
    args = ("validate", "nccl-tests", "run", "-o", str(out), "--build-dir", str(build))
    result = run(*args, "--gpus", "4", "--no-progress")
    assert result.exit_code == 0, result.stderr
    path = out / "results.jsonl"
    assert result.stderr.strip().splitlines() == [
        f"costmodel: warning: {path}: line 14 was cut off (a job killed while writing it?): "
        "removed before appending; the rows before it are kept"
    ]
    assert "1 ok" in result.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file reads whole now
        df = load_results(path)
    assert (df.source == "torch").sum() == 13 and (df.source == "nccl-tests").sum() > 0


def test_a_file_of_one_cut_row_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"source": "torch", "op": "all_re')
    one_line_error(run("calibrate", str(path), "-o", str(tmp_path / "c.toml")), "line 1")


# --- 2. validate torch says what it did --------------------------------------------------------
@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_validate_torch_says_what_ran_and_where_the_rows_went(tmp_path):
    """`costmodel validate torch` printed nothing on success, where `validate nccl-tests run`
    prints its summary. Now one line: ranks, backend, the ops and sizes, rows appended, the
    file and the run key. Two real gloo jobs into one file: each counts its own rows, and their
    attempts are distinct, finer than a second (3), so load_results keeps the second only."""
    pytest.importorskip("torch")
    from costmodel.validation.runner import load_results

    out = tmp_path / "t.jsonl"
    args = ("validate", "torch", "--nproc", "2", "--backend", "gloo", "--ops", "all_reduce")
    args += ("--min-bytes", "4KiB", "--max-bytes", "8KiB", "--iters", "2", "-o", str(out))
    lines = []
    for _ in range(2):
        result = run(*args)
        assert result.exit_code == 0, result.stderr
        lines.append(result.stdout.strip())
    expected = re.compile(
        r"^torch job, 2 ranks on 1 node, gloo: all_reduce at 4096\.\.8192 B \(2 rows\); "
        rf"2 rows -> {re.escape(str(out))} \(run torch@[0-9a-f]{{8}}\)$"
    )
    assert all(expected.match(line) for line in lines), lines
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    attempts = [r["attempt"] for r in rows]
    assert len(rows) == 4 and len(set(attempts)) == 2
    assert all(ATTEMPT.match(a) for a in attempts), attempts
    assert list(load_results(out)["attempt"]) == [attempts[-1]] * 2


def test_validate_torch_that_wrote_nothing_says_so(tmp_path, monkeypatch):
    """A job that exits 0 having written no row (every op refused by the backend) gets no
    summary (and fails: tests/test_validate_qa4.py). The rows of an earlier job in the file are not counted, and
    the fragment of a row cut off at its end, removed before the job appends, is said."""
    pytest.importorskip("torch")
    out = tmp_path / "t.jsonl"
    out.write_text(json.dumps({"op": "all_reduce", "kind": "collective"}) + '\n{"op": "all_r')
    from costmodel.validation import runner

    monkeypatch.setattr(runner, "run_logged", lambda cmd, log: 0)
    result = run("validate", "torch", "--backend", "gloo", "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""  # nothing measured: a failure now
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (
        f"costmodel: warning: {out}: line 2 was cut off (a job killed while writing it?): "
        "removed before appending; the rows before it are kept"
    )
    assert lines[1].startswith(f"costmodel: error: torch job: no rows written to {out}: ")
    assert len(lines) == 2  # the refusal itself: tests/test_validate_qa4.py
    assert out.read_text().count("\n") == 1  # the fragment went, the earlier row stayed


# --- 3. attempt names ------------------------------------------------------------------------------
def test_attempts_within_one_clock_tick_get_distinct_names_in_order(monkeypatch):
    """The torch job named its attempt by the second: two jobs of one configuration within a
    second shared it, and load_results kept both as one attempt (every row twice). Both writers
    now take attempt_stamp(): nanoseconds and the pid, and never the same name twice in a
    process even when the clock does not move between calls."""
    from costmodel.validation import runner

    frozen = runner.time.time_ns()
    monkeypatch.setattr(runner.time, "time_ns", lambda: frozen)
    stamps = [runner.attempt_stamp() for _ in range(3)]
    assert len(set(stamps)) == 3 and stamps == sorted(stamps)
    assert all(ATTEMPT.match(s) and s.endswith(f"-{os.getpid()}") for s in stamps)


def test_older_attempt_names_still_read_and_sort_before_newer_ones(tmp_path):
    """A file with the old names (``20261202T000000``, the runner's ``...-<pid>``) and a new
    one of the same run: every row reads, and the latest attempt wins as before."""
    from costmodel.validation.runner import append_results, load_results

    path = tmp_path / "results.jsonl"
    old = _gloo_rows()
    append_results(path, old)
    append_results(path, old.assign(attempt="20261202T000000-41"))
    append_results(path, old.assign(attempt="20261202T000000.000000001-7"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn of: three complete attempts
        df = load_results(path)
    assert len(df) == len(old) and set(df.attempt) == {"20261202T000000.000000001-7"}
    assert len(load_results(path, keep_incomplete=True)) == 3 * len(old)


# --- 4. mpirun for Open MPI and for MPICH / Intel MPI (Hydra) -----------------------------------
def test_mpirun_lines_for_open_mpi_and_for_hydra():
    """The runner's mpirun lines were Open MPI's only (`--map-by`, `-x VAR`): Hydra (MPICH,
    Intel MPI) stops at the first of them. `mpi="mpich"` writes `-ppn G` and `-genv VAR VALUE`.
    The launch-line reader reads both back to the same shape."""
    from costmodel.validation.nccl_tests._launch import parse_launch
    from costmodel.validation.runner import plan_sweep

    common = dict(algos=["Ring"], protos=["Simple"], gpus=8, nodes=2, launcher="mpirun")
    common |= dict(build_dir="/nt", min_bytes="1MiB", max_bytes="1MiB", iters=5, warmup_iters=1)
    test = ["/nt/all_reduce_perf", "-b", "1048576", "-e", "1048576", "-f", "2", "-w", "1"]
    test += ["-n", "5", "-g", "1"]
    # without mpi: the installed mpirun's (`mpirun --version`; tests/test_validate_qa4.py)
    (ompi,) = plan_sweep(["all_reduce"], mpi="openmpi", **common)
    (hydra,) = plan_sweep(["all_reduce"], mpi="mpich", **common)
    assert list(ompi.argv) == [
        "mpirun", "-np", "16", "--map-by", "ppr:8:node", "-x", "NCCL_ALGO", "-x", "NCCL_PROTO",
        *test,
    ]  # fmt: skip
    assert list(hydra.argv) == [
        "mpirun", "-np", "16", "-ppn", "8", "-genv", "NCCL_ALGO", "Ring",
        "-genv", "NCCL_PROTO", "Simple", *test,
    ]  # fmt: skip
    assert hydra.env == ompi.env == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
    assert hydra.config != ompi.config  # another command line: never skipped as done
    for spec in (ompi, hydra):
        launch = parse_launch(" ".join(spec.argv))
        assert (launch.ranks, launch.per_node, launch.nodes, launch.gpus_per_process) == (
            16,
            8,
            2,
            1,
        )
    with pytest.raises(ValueError, match="^mpi: 'intel' is not known; allowed: openmpi, mpich"):
        plan_sweep(["all_reduce"], mpi="intel", **common)  # type: ignore[arg-type]


def test_nccl_tests_run_mpi_option(tmp_path):
    base = ("validate", "nccl-tests", "run", "-o", str(tmp_path / "o"), "--dry-run")
    result = run(*base, "--launcher", "mpirun", "--nodes", "2", "--gpus", "4", "--mpi", "mpich")
    assert result.exit_code == 0, result.stderr
    assert " mpirun -np 8 -ppn 4 " in f" {result.stdout}" and "--map-by" not in result.stdout
    result = run(*base, "--launcher", "mpirun", "--nodes", "2", "--gpus", "4", "--algos", "Tree",
                 "--mpi", "openmpi")  # fmt: skip
    assert "mpirun -np 8 --map-by ppr:4:node -x NCCL_ALGO " in result.stdout
    one_line_error(run(*base, "--launcher", "mpirun", "--mpi", "intel"), "--mpi:", "openmpi, mpich")
    one_line_error(run(*base, "--mpi", "mpich"), "--mpi:", "--launcher mpirun")


def test_the_mpi_option_is_documented():
    readme = (ROOT / "README.md").read_text()
    assert "--mpi mpich" in readme and "-genv" in readme


# --- 5. calibrate on the bundled CollNet run -------------------------------------------------------
@pytest.mark.parametrize("cluster", [(), ("--cluster", "coreweave-hgx-h100")])
def test_calibrating_the_collnet_run_is_refused_saying_why_and_what_instead(tmp_path, cluster):
    """`costmodel calibrate` of the bundled source-03 log (8x8 H100, NDR, SHARP,
    NCCL_ALGO=COLLNETCHAIN) stopped at "nothing could be fitted: all_reduce/collnetchain: no
    textbook formula", which says neither why that matters nor what to do. The alpha-beta fit
    has no CollNet formula, and the run's five sizes from 512 MiB identify no fabric term either,
    so it is refused, on one line that says why and what to calibrate instead."""
    out = tmp_path / "c.toml"
    one_line_error(
        run("calibrate", str(reference_path("03")), "-o", str(out), *cluster),
        "NCCL_ALGO pinned to collnetchain",
        "no formula",
        "NCCL_ALGO=Ring or Tree, or unpinned",
        "validate compare",
    )
    assert not out.exists()


def test_a_mix_of_collnet_and_ring_rows_fits_the_ring_rows():
    """Only when no group can be fitted is a pinned CollNet a refusal: beside Ring rows it is
    skipped and listed, as before."""
    from costmodel.validation.calibrate import calibrate

    ring = _gloo_rows().assign(algo_env="Ring")
    collnet = ring.assign(algo_env="COLLNETCHAIN", run_key="torch@11111111")
    cal = calibrate(pd.concat([ring, collnet], ignore_index=True))
    assert [f.algorithm for f in cal.fits] == ["ring"]
    assert cal.residuals.attrs["skipped"] == ["all_reduce/collnetchain: no textbook formula"]


# --- 6. docs/fidelity.md's band table is the band predictions carry --------------------------------
_REGIME_INPUTS = {  # (fabric, intra-node link, nodes) of a prediction in each regime
    "single-node-nvlink": ("infiniband", "nvswitch", 1),
    "single-node-pcie": ("none", "pcie", 1),
    "multi-node-infiniband": ("infiniband", "nvswitch", 2),
    "multi-node-cloud": ("roce", "nvswitch", 2),
    "multi-node-slingshot": ("slingshot", "nvswitch", 2),
    "multi-node-other": ("socket", "nvswitch", 2),
}


def test_the_fidelity_reports_band_column_is_the_band_a_prediction_carries():
    """Error bands became the hull of the prediction and the measured 10th-90th percentile
    range (uncertainty.error_band), but docs/fidelity.md still showed the range as "the band":
    0.36-0.86 x busbw for the cloud fabrics below 1 MiB, a band that does not hold its own
    prediction, where a prediction carries 0.36-1.00. Each row of the report's coverage table
    against error_band for a prediction in that regime and size class."""
    import math

    from costmodel.fitted_corrections import FITTED
    from costmodel.uncertainty import ONE_MIB, error_band

    text = (ROOT / "docs" / "fidelity.md").read_text()
    header = "| regime | size | runs | sources | band lo / hi (x busbw) | measured range lo / hi |"
    assert header in text
    table = text.split(header, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    seen = set()
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        reg, size = cells[0], cells[1]
        band = error_band("nccl", *_REGIME_INPUTS[reg], 2 * ONE_MIB if size == ">= 1 MiB" else 1024)
        assert cells[4] == f"{band.lo:.2f} / {band.hi:.2f}", line
        assert cells[5] == f"{band.lo_measured:.2f} / {band.hi_measured:.2f}", line
        assert band.lo <= 1.0 <= band.hi
        # the coverage columns are the fitted file's (coverage of that band, the hull:
        # tests/test_validate_qa4.py recomputes them)
        cover = FITTED.coverage[reg]["ge1MiB" if size == ">= 1 MiB" else "lt1MiB"]
        for col, key in ((8, "measured"), (9, "measured_by_source"), (10, "measured_loro")):
            v = cover.get(key, math.nan)
            assert cells[col] == ("n/a" if math.isnan(v) else f"{100 * v:.0f}%"), (line, key)
        seen.add((reg, size))
    assert len(seen) == 2 * len(_REGIME_INPUTS)
    assert "0.36 / 1.00 | 0.36 / 0.86" in text  # the cloud cell below 1 MiB, one-sided
    assert "the hull of that range and the prediction itself" in text
    assert (ROOT / "costmodel" / "data" / "fidelity.md").read_text() == text


def test_the_report_is_what_the_script_writes_from_the_fitted_file():
    """docs/fidelity.md is `scripts/fit_corrections.py --docs-only`'s output (from the fitted
    file, no fitting): its band text had not been rerun after the bands changed. The shipped
    report against the script's text now."""
    fit = load_script("fit_corrections")
    assert fit.docs_text(fit.load_runs()) == (ROOT / "docs" / "fidelity.md").read_text()
