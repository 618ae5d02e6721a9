"""Second QA pass of the validation harness, as an engineer on a cluster node uses it: the
documented gloo path run for real, the GPU paths through their dry runs and the bundled logs, odd
inputs built from bundled logs by transformation. Each test names the defect it guards against;
tests/test_validate_qa.py holds the first pass."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from costmodel.reference import reference_path
from tests._cli import one_line_error, run


def _copy(prefix: str, folder: Path, name: str | None = None) -> Path:
    """A bundled log copied byte for byte (under its own name unless ``name``)."""
    source = reference_path(prefix)
    target = folder / (name or source.name)
    shutil.copyfile(source, target)
    return target


def _gloo_rows() -> pd.DataFrame:
    """Rows shaped as the torch job writes them on CPUs (gloo, 2 ranks, one node). Synthetic
    test input, not a measurement: times from a fixed alpha-beta line (150 us + M / 1.5 GB/s,
    about what this machine's gloo all-reduce took in the QA run)."""
    size = 4096.0 * 2.0 ** np.arange(13)  # 4 KiB .. 16 MiB
    time_s = 150e-6 + size / 1.5e9
    return pd.DataFrame(
        {
            "source": "torch",
            "backend": "gloo",
            "device": "cpu",
            "kind": "collective",
            "op": "all_reduce",
            "size_bytes": size,
            "time_s": time_s,
            "ranks": 2,
            "nodes": 1,
            "gpus_per_node": 2,
            "placement": "out_of_place",
            "attempt": "20261202T000000",
            "complete": True,
            "run_key": "torch",
        }
    )


# --- calibrate --cluster checks the rows against the cluster it writes ---------------------------
def test_calibrate_refuses_cpu_rows_on_a_gpu_cluster(tmp_path):
    """The documented loop (torch job with gloo, then `calibrate ... --cluster dgx-h100`) wrote
    a dgx-h100 preset fitted to CPU rows: the fabric terms barely move (each shrunk to the
    model's value), so `validate compare --calibration` on the very rows it was fitted to read
    73 % median error and 20-70x from 16 MiB, where the same rows without --cluster fit to 12 %.
    Now refused, on one line, naming the way that works; compare's warning says the same."""
    from costmodel.validation.calibrate import calibrate
    from costmodel.validation.runner import append_results

    rows = _gloo_rows()
    results = tmp_path / "results.jsonl"
    append_results(results, rows)
    out = tmp_path / "my-cluster.toml"
    one_line_error(
        run("calibrate", str(results), "--cluster", "dgx-h100", "-o", str(out)),
        "--cluster:",
        "CPUs (gloo)",
        "without a base cluster (no --cluster: ",
        "compare with validate compare --calibration FILE",
    )
    assert not out.exists()
    with pytest.raises(ValueError, match="^cluster: the rows ran on CPUs"):
        calibrate(rows, name="x", base="dgx-h100")
    bare = run("calibrate", str(results), "-o", str(out))  # the way that works
    assert bare.exit_code == 0, bare.output
    said = run("validate", "compare", str(results), "--cluster", "dgx-h100")
    assert "without a base cluster (no --cluster: " in said.stderr


def test_calibrate_warns_when_the_rows_ran_on_another_gpu(tmp_path):
    """An A100 run (12a) calibrated into dgx-h100 was written silently: H100 terms fitted on
    A100 timings. `validate compare` warns of that mismatch; calibrate now warns with the same
    check (the page's calibration calls the same function)."""
    from costmodel.predict import CalibrationWarning
    from costmodel.validation.calibrate import calibrate
    from costmodel.validation.nccl_tests import read_nccl_tests

    rows = read_nccl_tests(reference_path("12a"))
    with pytest.warns(CalibrationWarning, match="dgx-h100 does not match the measured rows"):
        calibrate(rows, name="x", base="dgx-h100")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        calibrate(rows, name="x", base="dgx-a100")  # its own GPU: nothing to say


# --- calibrate reads a log as validate compare and the Validate page do --------------------------
def test_cli_calibrate_reads_a_log_as_the_validate_page_does(tmp_path):
    """`costmodel calibrate LOG` parsed the log itself, not through the reader compare and the
    Validate page use (logread.read_log): bundled run 20 (2 nodes, NCCL_ALGO=Ring, no host
    lines) was refused for want of --nodes although the page calibrates it, and with --nodes 2
    it was fitted as NCCL's default choice (NIC share 0.935) where the page fits the Ring it
    ran (0.997): one log, two presets."""
    from costmodel.web.data import calibrated_toml_text

    log = _copy("20", tmp_path)
    out = tmp_path / "a3.toml"
    result = run("calibrate", str(log), "--cluster", "gcp-a3-high", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "assumed: algorithm = ring (the bundled run 20's index)" in result.stderr
    assert "assumed: nodes = 2 (the bundled run 20's index)" in result.stderr
    page = tomllib.loads(
        calibrated_toml_text(
            log.read_bytes(), log.name, (None, None, None, "both"), "gcp-a3-high", "a3"
        )
    )
    cli = tomllib.loads(out.read_text())

    def terms(doc: dict) -> list[dict]:  # the fitted terms; "source" names the file read
        return [{k: v for k, v in f.items() if k != "source"} for f in doc["fabric"]]

    assert terms(cli) == terms(page) and cli["fabric"][0]["nic_efficiency"] > 0.99


def test_cli_calibrate_says_what_the_reader_warns_of(tmp_path):
    """A log cut mid-row and a log pasted twice were calibrated without a word (the twice-pasted
    rows weigh double); compare said both. Built from bundled 13a by transformation."""
    text = reference_path("13a").read_text()
    lines = text.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line[:12].strip().isdigit()]
    cut_at = rows[len(rows) // 2]
    cut = tmp_path / "cut_allreduce.txt"
    cut.write_text("".join(lines[:cut_at]) + lines[cut_at][: len(lines[cut_at]) // 2])
    twice = tmp_path / "twice_allreduce.txt"
    twice.write_text(text + text)
    said = run("calibrate", str(cut), "-o", str(tmp_path / "a.toml"))
    assert said.exit_code == 0, said.output
    assert "ends in the middle of a result row" in said.stderr
    said = run("calibrate", str(twice), "-o", str(tmp_path / "b.toml"), "--json")
    assert said.exit_code == 0, said.output
    assert "duplicate run" in said.stderr


def test_calibrate_takes_the_op_the_reader_asks_for(tmp_path):
    """A log that names no op (bundled 24a's bytes under another name: the op was in the file
    name) was refused with "set the op (CLI --op all_reduce ...)", an option calibrate did not
    have; compare has it."""
    log = _copy("24a", tmp_path, "b200.txt")
    out = tmp_path / "b.toml"
    one_line_error(run("calibrate", str(log), "-o", str(out)), "op:", "(--op, e.g. all_reduce)")
    said = run("calibrate", str(log), "-o", str(out), "--op", "all-reduce", "--cluster", "dgx-b200")
    assert said.exit_code == 0, said.output
    assert "assumed: op = all_reduce (you set it)" in said.stderr and out.exists()


# --- a results file names its cluster as a log does --------------------------------------------
def test_validate_compare_results_file_takes_the_cluster_its_rows_name(tmp_path):
    """`validate compare runs/h100/results.jsonl` without --cluster said "the log names no GPU
    a preset has" though every row names its H100 (the runner keeps the device lines); a log
    with the same rows got its preset from them. Now the same, said on stderr."""
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results

    results = tmp_path / "results.jsonl"
    append_results(
        results, read_nccl_tests(reference_path("13a")), source="nccl-tests", run_key="ar@x"
    )
    result = run("validate", "compare", str(results))
    assert result.exit_code in (0, 1), result.output
    assert "assumed: cluster = dgx-h100 (the rows' GPU and GPUs per node)" in result.stderr


def test_compare_with_a_calibration_checks_its_base_cluster(tmp_path):
    """`--cluster a100cal.toml` on an H100 log warned that the GPUs differ; `--calibration
    a100cal.toml`, the same preset's terms on the same cluster, said nothing."""
    a100 = _copy("12a", tmp_path, "a100_allreduce.txt")
    cal = tmp_path / "a100cal.toml"
    assert run("calibrate", str(a100), "--cluster", "dgx-a100", "-o", str(cal)).exit_code == 0
    h100 = _copy("13a", tmp_path, "h100_allreduce.txt")
    result = run("validate", "compare", str(h100), "--calibration", str(cal))
    assert "--calibration a100cal.toml (cluster dgx-a100) does not match the log" in result.stderr


# --- a calibrated preset: one band on every surface -------------------------------------------
def test_collective_band_of_a_calibrated_cluster_is_predicts(tmp_path):
    """A preset calibrated on one node, asked about two: predict_collective (and `predict`)
    answers with the uncalibrated model (and warns) under its band, ±49 %; `collective` and
    `sweep` said "± ?" for the same row (they blanked every band of a calibrated preset)."""
    from costmodel.predict import CalibrationWarning, predict_collective
    from costmodel.sweep import sweep

    log = _copy("13a", tmp_path)
    toml = tmp_path / "h100cal.toml"
    assert run("calibrate", str(log), "--cluster", "dgx-h100", "-o", str(toml)).exit_code == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        for nodes in (1, 2):
            want = predict_collective(
                "all_reduce", 2**30, str(toml), nodes=nodes, model="nccl"
            ).error_band
            got = sweep(op="all_reduce", size=[2**30], preset=str(toml), nodes=nodes)
            pct = float(got["error_band_pct"].iloc[0])
            if nodes == 1:  # the calibration answers: its error is not the reference runs'
                assert np.isnan(pct) and np.isnan(want.half_width)
            else:
                assert pct == pytest.approx(100 * want.half_width) and pct > 0
                fast, slow = want.time_bounds(float(got["time_s"].iloc[0]))
                assert float(got["time_lo_s"].iloc[0]) == pytest.approx(float(fast))
                assert float(got["time_hi_s"].iloc[0]) == pytest.approx(float(slow))
    one = run("collective", "all_reduce", "-s", "1GiB", "--cluster", str(toml))
    assert "'± ?': a calibration answers" in one.stdout  # the reason, not "no bundled run"


def test_compare_band_of_a_calibrated_cluster_is_predicts(tmp_path):
    """`validate compare LOG --cluster cal.toml` (and the Validate page, the same band_check)
    printed "expected error (grouped CV) ±21 %: 30 of 31 rows within it" for a calibration
    compared with the rows it was fitted on: the uncalibrated model's band, where predict and
    collective say the calibrated answer's error is unknown. Across nodes, where the
    calibration does not apply, the uncalibrated band stays."""
    from costmodel.validation.compare import cluster_predictor, compare
    from costmodel.validation.logread import band_check, read_log

    log = _copy("13a", tmp_path)
    toml = tmp_path / "h100cal.toml"
    assert run("calibrate", str(log), "--cluster", "dgx-h100", "-o", str(toml)).exit_code == 0
    rows = read_log(log.read_bytes(), log.name, cluster=str(toml)).rows
    band = band_check(compare(rows, cluster_predictor(str(toml))), str(toml), "nccl")
    assert band.rows == 0 and "calibrat" in band.text()
    said = run("validate", "compare", str(log), "--cluster", str(toml))
    assert "expected error (calibrated model) unknown (calibrated fit" in said.stdout
    two = _copy("06a", tmp_path)  # 2 nodes: the one-node calibration does not apply there
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = read_log(two.read_bytes(), two.name, cluster=str(toml)).rows
        band = band_check(compare(rows, cluster_predictor(str(toml))), str(toml), "nccl")
    plain = band_check(compare(rows, cluster_predictor("dgx-h100")), "dgx-h100", "nccl")
    assert band.rows == plain.rows > 0 and band.half_width_large == plain.half_width_large
    assert band.basis == plain.basis == "grouped CV"  # the uncalibrated band, said so


def test_nccl_tests_run_into_a_file_names_the_option(tmp_path):
    """`validate nccl-tests run -o results.jsonl` (the file, not its folder) said
    "[Errno 20] Not a directory: 'results.jsonl/logs'"."""
    build = tmp_path / "build"
    build.mkdir()
    _script(build, "all_reduce_perf", f'cat "{reference_path("13a")}"\n')
    target = tmp_path / "results.jsonl"
    target.write_text("")
    one_line_error(
        run("validate", "nccl-tests", "run", "-o", str(target), "--build-dir", str(build)),
        "--output:",
        "is a file",
    )
    assert target.read_text() == ""


# --- the torch job -------------------------------------------------------------------------------
def test_torch_bench_refuses_counts_it_cannot_run(tmp_path):
    """`-- --ddp-steps 0` passed the checks and every rank died in statistics.median with a
    traceback; `-- --bucket-cap-mb x` said "could not convert string to float: 'x'"."""
    from costmodel.validation.torch_bench import parse_args

    with pytest.raises(ValueError, match="^--ddp-steps: "):
        parse_args(["--ddp-steps", "0"])
    with pytest.raises(ValueError, match="^--bucket-cap-mb: 'x'"):
        parse_args(["--bucket-cap-mb", "1,x"])
    out = tmp_path / "t.jsonl"
    base = ("validate", "torch", "--backend", "gloo", "--ops", "none", "--ddp", "-o", str(out))
    one_line_error(run(*base, "--", "--ddp-steps", "0"), "--ddp-steps")
    one_line_error(run(*base, "--", "--bucket-cap-mb", "x"), "--bucket-cap-mb")
    assert not out.exists()


def test_torch_rows_on_gpus_name_their_gpu():
    """The torch job wrote device "cuda" on every GPU: compare could neither find the preset
    of a torch results file nor warn that --cluster has another GPU. Not run on a GPU here: the
    name comes from torch.cuda.get_device_name (a stand-in), and the rows then read as
    nccl-tests rows do."""
    from types import SimpleNamespace as NS

    from costmodel.validation.compare import detect_cluster, preset_mismatch
    from costmodel.validation.torch_bench import device_name

    torch = NS(cuda=NS(get_device_name=lambda d: "NVIDIA H100 80GB HBM3"))
    rows = _gloo_rows().assign(
        device=device_name(torch, NS(type="cuda")), backend="nccl", ranks=8, gpus_per_node=8
    )
    assert detect_cluster(rows) == "dgx-h100"
    assert "A100" in (preset_mismatch(rows, "dgx-a100") or "")


TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torch_jobs_of_two_configurations_keep_both(tmp_path):
    """Two torch jobs into one results file (2 ranks, then 3): every row was keyed "torch", so
    load_results took the second for a retry of the first and dropped the 2-rank rows without
    a word (compare read 9 rows of 18). Real gloo runs, tiny sizes."""
    from costmodel.validation.runner import describe_runs, load_results

    torchrun = str(TORCHRUN if TORCHRUN.exists() else shutil.which("torchrun"))
    out = tmp_path / "results.jsonl"
    for ranks in (2, 3):
        subprocess.run(
            [torchrun, "--standalone", "--nproc_per_node", str(ranks)]
            + ["-m", "costmodel.validation.torch_bench", "-o", str(out), "--backend", "gloo"]
            + ["--ops", "all_reduce", "--min-bytes", "4KiB", "--max-bytes", "8KiB"]
            + ["--iters", "2", "--warmup", "1"],
            check=True,
            capture_output=True,
            timeout=150,
        )
    df = load_results(out)
    assert sorted(set(df["ranks"])) == [2, 3] and len(df) == 4
    assert len(describe_runs(df)) == 2


# --- the nccl-tests runner -----------------------------------------------------------------------
def _script(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_runner_flags_a_run_of_other_ranks_than_it_launched(tmp_path):
    """`validate nccl-tests run --gpus 8` whose log ran 4 ranks (nccl-tests saw fewer GPUs; or,
    under srun/mpirun, a build without MPI=1: one 1-rank job per process) was "ok" and its rows
    were compared as the launch's shape. Now failed, the rows kept and marked."""
    from costmodel.validation.runner import load_results, plan_sweep, run_sweep

    build = tmp_path / "build"
    build.mkdir()
    _script(build, "all_reduce_perf", f'cat "{reference_path("13a")}"\n')  # 4 ranks
    out = tmp_path / "out"
    summary = run_sweep(plan_sweep(["all_reduce"], build_dir=build, gpus=8), out, progress=False)
    assert summary.ok == []
    assert "rows ran on 4 ranks, the launch asked for 8" in summary.failed["all_reduce"]
    assert not load_results(out / "results.jsonl").complete.any()
    ok = run_sweep(plan_sweep(["all_reduce"], build_dir=build, gpus=4), out, progress=False)
    assert ok.ok == ["all_reduce"]
    from costmodel.validation.runner import _ranks_problem  # under srun: the hint to rebuild

    spec = plan_sweep(["all_reduce"], launcher="srun", nodes=2, gpus=8)[0]
    why = _ranks_problem(spec, pd.DataFrame({"ranks": [1, 1]}))
    assert why is not None and "MPI=1" in why and "asked for 16" in why


def test_rows_of_unfinished_runs_are_said(tmp_path):
    """A run that timed out or whose rank died keeps its rows, marked complete = false, and
    load_results keeps them while no later attempt completed: `validate compare` and
    `calibrate` then used them without a word."""
    from costmodel.validation.runner import plan_sweep, run_sweep

    build = tmp_path / "build"
    build.mkdir()
    head = "".join(reference_path("13a").read_text().splitlines(keepends=True)[:40])
    (tmp_path / "head.txt").write_text(head)
    _script(build, "all_reduce_perf", f'cat "{tmp_path / "head.txt"}"\nexit 3\n')
    out = tmp_path / "out"
    summary = run_sweep(plan_sweep(["all_reduce"], build_dir=build, gpus=4), out, progress=False)
    assert "exit code 3" in summary.failed["all_reduce"]
    results = out / "results.jsonl"
    said = run("validate", "compare", str(results), "--cluster", "dgx-h100", "--json")
    assert "from runs that did not finish" in said.stderr
    assert any("did not finish" in w for w in json.loads(said.stdout)["warnings"])
    said = run("calibrate", str(results), "-o", str(tmp_path / "c.toml"))
    assert said.exit_code == 0 and "from runs that did not finish" in said.stderr
