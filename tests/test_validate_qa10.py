"""The validation harness's results file (``.jsonl``: ``validate torch``'s collective and DDP
rows, gloo on CPUs or NCCL on GPUs; ``validate nccl-tests run``'s rows) has one reader,
:func:`costmodel.validation.logread.read_results`, for ``validate compare`` (and ``calibrate``)
and the Validate page: the same rows, cluster, assumptions and refusals on both.

Files are real measurements only: a bundled log's rows written as the runner writes them
(``runner.append_results``), and a gloo run of the harness on this machine's CPUs (2 ranks,
``costmodel validate torch``, marked as the other torch tests are). Each check compares the
library with the CLI on the same file, never with numbers written here.
tests/test_app_qa23.py holds the page's side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from costmodel.reference import reference_path
from costmodel.validation.calibrate import calibrated_predictor, load_calibration
from costmodel.validation.compare import cluster_predictor, compare, predict_ddp
from costmodel.validation.logread import read_results
from tests._cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[1]


# --- the files ---------------------------------------------------------------------------------
def bundled_results(folder: Path, *runs: str) -> Path:
    """Bundled logs' rows as ``validate nccl-tests run`` appends them to results.jsonl."""
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results

    path = folder / "results.jsonl"
    for run_id in runs:
        rows = read_nccl_tests(reference_path(run_id))
        append_results(path, rows, source="nccl-tests", run_key=f"{run_id}@x", complete=True)
    return path


def gloo_results(folder: Path) -> Path:
    """A real results file of the harness's gloo path: ``costmodel validate torch`` with 2
    ranks on this machine's CPUs (all_reduce and broadcast, 4 KiB - 1 MiB, and DDP steps),
    this checkout's code in the job (PYTHONPATH)."""
    out = folder / "torch.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SLURM_JOB_ID", None)
    argv = [sys.executable, "-m", "costmodel.cli", "validate", "torch", "--nproc", "2",
            "--backend", "gloo", "--ops", "all_reduce,broadcast", "--max-bytes", "1MiB",
            "--iters", "5", "--ddp", "-o", str(out), "--", "--ddp-params", "1M",
            "--ddp-steps", "2"]  # fmt: skip
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def calibration_of(results: Path, folder: Path) -> Path:
    """``costmodel calibrate RESULTS`` without --cluster (alpha-beta fits), as the CLI's
    refusal of CPU rows advises."""
    cal = folder / "cal.toml"
    made = run("calibrate", str(results), "-o", str(cal))
    assert made.exit_code == 0, made.output
    return cal


def _cli_json(*args: str) -> dict:
    said = run("validate", "compare", *args, "--json")
    assert said.exit_code in (0, 1), said.output  # 1: the fidelity goal failed
    return json.loads(said.stdout)


# --- GPU rows (a bundled run as the runner writes it) ------------------------------------------
def test_read_results_gives_validate_compare_its_rows_cluster_and_error(tmp_path):
    results = bundled_results(tmp_path, "06a")
    read = read_results(results)
    said = _cli_json(str(results))
    assert read.cluster is not None and said["cluster"] == read.cluster
    assert said["assumed"] == read.assumed_lines()
    assert read.assumed_lines() == [f"cluster = {read.cluster} (the rows' GPU and GPUs per node)"]
    table = compare(read.rows, cluster_predictor(read.cluster))
    assert said["rows"] == len(table)
    assert said["median_abs_rel_error"] == pytest.approx(table["rel_error"].abs().median())
    # the facts the page shows: the rows' op, ranks and GPUs per node
    facts = {field: (value, where) for field, value, where in read.facts}
    assert facts["op"] == (", ".join(dict.fromkeys(read.rows["op"])), "the rows")
    assert read.op == "all_reduce" and read.runs is None and read.notices == ()


def test_a_placement_reads_the_same_rows(tmp_path):
    results = bundled_results(tmp_path, "06a")
    both = read_results(results).rows
    out = read_results(results, placement="out-of-place").rows
    assert 0 < len(out) < len(both) and set(out["placement"]) == {"out_of_place"}
    said = _cli_json(str(results), "--placement", "out-of-place")
    assert said["rows"] == len(out)
    with pytest.raises(ValueError, match="^placement: .*out-of-place.*'sideways'"):
        read_results(results, placement="sideways")


def test_nodes_that_contradict_the_rows_are_refused_naming_the_field(tmp_path):
    results = bundled_results(tmp_path, "06a")
    found = sorted({int(n) for n in read_results(results).rows["nodes"].dropna()})
    wrong = found[-1] + 2
    stated = ", ".join(map(str, found))  # as a sentence says them: no Python list
    with pytest.raises(ValueError) as refused:
        read_results(results, nodes=wrong)
    text = str(refused.value)
    assert text == f"nodes: {wrong} contradicts the results file (nodes {stated})"
    one_line_error(run("validate", "compare", str(results), "--nodes", str(wrong)), f"--{text}")


def test_rows_of_two_gpus_are_refused_without_a_cluster(tmp_path):
    """06a (H100) and 02 (A100) appended to one file: no one preset describes them."""
    results = bundled_results(tmp_path, "06a", "02")
    with pytest.raises(ValueError) as refused:
        read_results(results)
    text = str(refused.value)
    assert text.startswith("cluster: the rows ran on several devices") and "`cluster`" in text
    line = one_line_error(run("validate", "compare", str(results)), "--cluster: ")
    assert line.endswith("give --cluster to compare every row with it"), line
    # with a calibration predicting them, nothing to refuse: the cluster is the CLI's none
    assert read_results(results, calibrated=True).cluster is None


def test_another_tools_json_lines_are_refused_naming_the_file(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="other.jsonl: no row has 'op' or 'time_s'"):
        read_results(other)
    one_line_error(run("validate", "compare", str(other)), "no row has 'op' or 'time_s'")


# --- the harness's gloo path (CPU rows, DDP steps) ---------------------------------------------
@pytest.fixture(scope="module")
def gloo(gloo_run) -> tuple[Path, Path]:
    """(results file, its calibration) of one real gloo run (:func:`gloo_results`), the
    session's (tests/conftest.py: tests/test_app_qa23.py reads the same run)."""
    return gloo_run


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_gloo_rows_are_refused_without_a_calibration_and_said_what_to_do(gloo):
    results, _ = gloo
    with pytest.raises(ValueError) as refused:
        read_results(results)
    text = str(refused.value)
    assert text.startswith("cluster: the rows ran on CPUs (gloo)"), text
    assert text.endswith("compare with it (`calibration`)"), text  # the API's name, marked
    line = one_line_error(run("validate", "compare", str(results)), "--cluster: the rows ran")
    assert line.endswith("compare with it (--calibration)"), line  # the CLI's flag


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_gloo_rows_with_a_calibration_read_the_same_in_the_library_and_the_cli(gloo):
    results, cal = gloo
    read = read_results(results, calibrated=True)
    rows = read.rows
    assert set(rows["kind"]) == {"collective", "ddp_step"} and set(rows["device"]) == {"cpu"}
    said = _cli_json(str(results), "--calibration", str(cal))
    predictor = calibrated_predictor(load_calibration(cal))
    table = compare(rows, predictor)
    assert said["rows"] == len(table) == (rows["kind"] == "collective").sum()
    assert said["median_abs_rel_error"] == pytest.approx(table["rel_error"].abs().median())
    ddp = predict_ddp(rows, predictor)
    steps = pd.DataFrame(said["ddp_steps"])
    assert len(steps) == len(ddp) > 0
    # a step the fit cannot predict is null in JSON and NaN in the library (a loaded box can
    # leave the all-reduce unfitted): both surfaces must agree on which, so NaN equals NaN here
    said_s = pd.to_numeric(steps["predicted_step_s"]).tolist()
    assert said_s == pytest.approx(ddp["predicted_step_s"].tolist(), nan_ok=True)
    # the facts: the ops and the DDP steps the rows hold, nothing assumed
    assert read.op == "all_reduce, broadcast, DDP steps (" + str(len(ddp)) + ")"
    assert read.assumed == () and read.cluster is None
    # the torch job's rows are out-of-place: in-place is refused on both surfaces
    with pytest.raises(ValueError, match="^placement: torch.jsonl has no in-place rows$"):
        read_results(results, placement="in-place", calibrated=True)
    one_line_error(
        run("validate", "compare", str(results), "--calibration", str(cal), "--placement",
            "in-place"),
        "--placement: torch.jsonl has no in-place rows",
    )  # fmt: skip
