"""The `costmodel` command line: every subcommand's text and JSON output, errors, files."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel import cli, collectives, ddp, memory
from costmodel.validation import runner

sweep_mod = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name
ENTRY = Path(sys.executable).parent / "costmodel"  # the installed console script


def run(*args: str):
    result = CliRunner().invoke(cli.app, list(args))
    return result


def run_json(*args: str):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def assert_usage_error(result, fragment: str = "") -> None:
    """Exit 2, nothing on stdout, exactly one line on stderr, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("costmodel: error: ")
    assert "Traceback" not in result.stderr
    assert fragment in lines[0], lines[0]


# --- collective -------------------------------------------------------------------------------
LESSON = ("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s")


def test_lesson_allreduce_json():
    # lesson practice problem 1: 2 (63/64) 14 GB / 50 GB/s = 0.55125 s ("about 0.551 s")
    rows = run_json(*LESSON)["results"]
    assert len(rows) == 1
    assert rows[0]["time_s"] == pytest.approx(2 * 63 / 64 * 14e9 / 50e9, rel=1e-12)
    assert rows[0]["busbw_GBps"] == pytest.approx(50.0, rel=1e-12)


def test_lesson_allreduce_human():
    result = run(*LESSON)
    assert result.exit_code == 0
    assert "551 ms" in result.stdout and "50 GB/s" in result.stdout and "14 GB" in result.stdout


def test_lesson_quiz_nvlink_vs_ndr():
    # lesson section 7 quiz: 500 MB over 8 ranks, 0.875 GB at 900 GB/s (as the lesson takes it)
    # and at 50 GB/s: 0.972 ms and 17.5 ms, ratio 18
    fast = run_json(
        "collective", "all_reduce", "-s", "500MB", "--ranks", "8", "--bandwidth", "900GB/s"
    )["results"][0]["time_s"]
    slow = run_json(
        "collective", "all_reduce", "-s", "500MB", "--ranks", "8", "--bandwidth", "400Gb/s"
    )["results"][0]["time_s"]
    assert fast == pytest.approx(0.875e9 / 900e9, rel=1e-12)
    assert slow == pytest.approx(17.5e-3, rel=1e-12)
    assert slow / fast == pytest.approx(18.0, rel=1e-12)


def test_collective_all_algorithms_and_sizes():
    rows = run_json(
        "collective",
        "all_reduce",
        "-s",
        "8B:1MB",
        "--ranks",
        "16",
        "--bandwidth",
        "25GB/s",
        "--latency",
        "5us",
        "-a",
        "all",
    )["results"]
    sizes = sweep_mod.parse_values("size", "8B:1MB")
    assert len(rows) == len(collectives.ALGORITHMS["all_reduce"]) * len(sizes)
    for r in rows:
        expected = collectives.collective_time(
            "all_reduce", r["size_bytes"], 16, 25e9, 5e-6, algorithm=r["algorithm"]
        )
        assert r["time_s"] == pytest.approx(expected, rel=1e-12)  # the same function


# --- memory, batch, step ----------------------------------------------------------------------
def test_memory_lesson_examples():
    # the lesson's one GPU, asked for (the default is one node, 8 ranks without a cluster)
    d = run_json("memory", "--params", "7B", "--gpu-memory", "80GB", "--ranks", "1")
    assert d["memory_bytes"] == pytest.approx(7e9 * 16, rel=1e-12)  # lesson: 112 GB
    assert d["fits"] is False
    assert d["max_params"] == pytest.approx(5e9, rel=1e-12)  # lesson: 80 GB / 16 B = 5B
    d = run_json(
        "memory", "--params", "30B", "--zero", "3", "--ranks", "16", "--gpu-memory", "80GB"
    )
    assert d["lesson_memory_bytes"] == pytest.approx(30e9, rel=1e-12)  # lesson: ~30 GB/GPU on 16
    # the layout the step prices adds FSDP's gathered units in flight, shown as their own row
    gathered = d["memory_parts_bytes"]["gathered_units_bytes"]
    assert 0 < gathered < 0.2 * 30e9
    assert d["memory_bytes"] == pytest.approx(30e9 + gathered, rel=1e-12)
    assert d["fits"] is True
    # the lesson's N = ceil(S / (M - R)) without the buffers; the buffers can only add ranks
    assert d["min_ranks"] >= memory.min_ranks(30e9, 80e9, zero_stage=3)
    text = run("memory", "--params", "7B", "--gpu-memory", "80GB", "--ranks", "1").stdout
    assert "112 GB" in text and "fits" in text and "no" in text


def test_batch_solves_the_unknown():
    d = run_json(
        "batch", "--local", "4", "--ranks", "64", "--global", "8192", "--sequence-length", "2048"
    )
    assert (d["accumulation"], d["solved"]) == (32, "accumulation")
    assert d["tokens_per_step"] == 8192 * 2048
    text = run("batch", "--local", "4", "--ranks", "64", "--accumulation", "2").stdout
    assert "global batch [samples]         512 (solved: local x N x A)" in text
    assert_usage_error(
        run("batch", "--local", "3", "--ranks", "64", "--global", "1024"), "nearest valid"
    )


def test_step_lesson_problem():
    d = run_json(
        "step",
        "--params",
        "7B",
        "--compute-time",
        "400ms",
        "--ranks",
        "64",
        "--bandwidth",
        "50GB/s",
    )
    ref = ddp.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    assert d["bound"] == "comms"  # lesson: 550 ms of comm > 400 ms of compute
    assert d["comm_s"] == pytest.approx(0.55125, rel=0.01)  # sum of buckets ~ one 14 GB ring
    for key in ("compute_s", "comm_s", "exposed_comm_s", "step_time_s", "efficiency"):
        assert d[key] == pytest.approx(getattr(ref, key), rel=1e-12)
    assert d["timeline"] and {"kind", "start_s", "end_s"} <= set(d["timeline"][0])
    fp8 = run_json(
        "step",
        "--params",
        "7B",
        "--compute-time",
        "400ms",
        "--ranks",
        "64",
        "--bandwidth",
        "50GB/s",
        "--gradient-bytes",
        "1",
    )
    assert fp8["bound"] == "compute"  # lesson: fp8 gradients flip the verdict
    text = run(
        "step",
        "--params",
        "7B",
        "--compute-time",
        "400ms",
        "--ranks",
        "64",
        "--bandwidth",
        "50GB/s",
    ).stdout
    assert "comms-bound" in text and "400 ms" in text


# --- presets ----------------------------------------------------------------------------------
def test_presets_list_show_schema():
    rows = run_json("presets", "list")
    names = {r["name"] for r in rows}
    assert {"nvlink4", "h100-sxm"} <= names
    assert all(r["source"] for r in rows)
    text = run("presets", "list", "--kind", "link").stdout
    assert "nvlink4" in text and "h100-sxm" not in text and "450 GB/s per direction" in text
    d = run_json("presets", "show", "nvlink4")
    assert d["kind"] == "Link" and d["fields"]["datasheet_direction"] == "bidirectional"
    assert d["derived"]["per_direction_bandwidth_bytes_per_s"] == pytest.approx(450e9, rel=1e-12)
    text = run("presets", "show", "nvlink4").stdout  # the datasheet figure and the derived one
    assert "datasheet_bandwidth_bytes_per_s  900 GB/s" in text
    assert "per_direction_bandwidth_bytes_per_s  450 GB/s" in text
    schema = json.loads(run("presets", "schema", "link").stdout)
    assert "datasheet_bandwidth_bytes_per_s" in schema["properties"]
    assert_usage_error(run("presets", "show", "nvlink44"), "closest: nvlink4")


# --- sweep ------------------------------------------------------------------------------------
SETS = (
    "--set",
    "size=8B..1GB x4",
    "--set",
    "ranks=8..512x2",
    "--set",
    "bandwidth=50GB/s",
    "--set",
    "algorithm=ring,tree",
)


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_sweep_file_reloads_equal_to_python_sweep(tmp_path, ext):
    out = tmp_path / f"grid{ext}"
    summary = run_json("sweep", *SETS, "-o", str(out), "--chunk-rows", "50")
    expected = sweep_mod.sweep(
        size="8B..1GB x4", ranks="8..512x2", bandwidth="50GB/s", algorithm="ring,tree"
    )
    assert summary["rows"] == len(expected)
    back = pd.read_csv(out) if ext == ".csv" else pd.read_parquet(out)
    assert list(back.columns) == list(expected.columns)
    np.testing.assert_array_equal(back["time_s"], expected["time_s"])  # round-trip exact
    assert back["algorithm"].astype(str).tolist() == expected["algorithm"].astype(str).tolist()
    text = run("sweep", *SETS, "-o", str(out)).stdout
    assert f"wrote {len(expected)} rows" in text


def test_sweep_to_stdout_and_from_toml(tmp_path):
    result = run(
        "sweep",
        "--set",
        "size=1MB,2MB",
        "--set",
        "ranks=8",
        "--set",
        "bandwidth=50GB/s",
        "--chunk-rows",
        "1",
    )
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith('"model"')  # one header, then two rows
    grid = tmp_path / "g.toml"
    grid.write_text(
        'kind = "memory"\n[grid]\nparams = "1B..8B x2"\nzero_stage = [0, 3]\nranks = 8\n'
    )
    out = tmp_path / "m.csv"
    assert run("sweep", str(grid), "-o", str(out)).exit_code == 0
    df = pd.read_csv(out)
    assert len(df) == 8
    from costmodel.strategy.memory import stage_memory  # the layout the step prices

    want = [
        stage_memory(int(z), 8, p).total_bytes / 1e9
        for z, p in zip(df["zero_stage"], df["params"], strict=True)
    ]
    np.testing.assert_allclose(df["memory_GB"], want, rtol=1e-12)


def test_sweep_failure_leaves_no_file(tmp_path, monkeypatch):
    out = tmp_path / "big.csv"
    real = sweep_mod.iter_sweep

    def failing(grid, chunk_rows):
        it = real(grid, chunk_rows)
        yield next(it)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sweep_mod, "iter_sweep", failing)
    assert_usage_error(run("sweep", *SETS, "-o", str(out), "--chunk-rows", "10"), "No space left")
    assert list(tmp_path.iterdir()) == []


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("colective",), "Allowed: "),
        (("collective", "all_reduce", "--size", "1GB", "--bogus"), "--bogus"),
        (
            ("collective", "all_reduce", "--size", "14XB", "--ranks", "8", "--bandwidth", "5GB/s"),
            "got '14XB'; expected a number with a unit",
        ),
        (
            ("collective", "all_reduce", "--size", "1Gb", "--ranks", "8", "--bandwidth", "5GB/s"),
            "in bits",
        ),
        (
            ("collective", "all_raduce", "--size", "1GB", "--ranks", "8", "--bandwidth", "5GB/s"),
            "all_reduce",
        ),
        (
            (
                "collective",
                "all_reduce",
                "--size",
                "1GB",
                "--ranks",
                "8",
                "--bandwidth",
                "5GB/s",
                "-a",
                "spiral",
            ),
            "allowed: auto, ring, tree",
        ),
        (("collective", "all_reduce", "--size", "1GB"), "--ranks and --bandwidth"),
        (("memory", "--params", "7B", "--recipe", "magic"), "magic"),
        (("memory", "--params", "7B", "--zero", "4"), "--zero"),
        (("sweep",), "--set"),
        (
            ("sweep", "--set", "ranks=64..8", "--set", "size=1MB", "--set", "bandwidth=1GB/s"),
            "empty range",
        ),
        (("sweep", "--set", "size=1MB", "--set", "ranks=8"), "needs a preset"),
        (("sweep", "--set", "colour=red"), "allowed: preset"),
        (("sweep", *SETS, "-o", "/nonexistent-dir/x.csv"), "does not exist"),
        (("sweep", *SETS, "-o", "x.xlsx"), "allowed: .csv, .parquet"),
        (("presets", "schema", "gadget"), "allowed"),
        (("--presets-dir", "/nonexistent-dir", "presets", "list"), "not a folder"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, fragment):
    assert_usage_error(run(*args), fragment)


def test_unwritable_output_path():
    # /proc refuses new files even for root: the temporary file cannot be created
    assert_usage_error(run("sweep", *SETS, "-o", "/proc/costmodel-test.csv"))
    assert not Path("/proc/costmodel-test.csv").exists()


@pytest.mark.parametrize(
    "command",
    [
        ("collective",),
        ("memory",),
        ("batch",),
        ("step",),
        ("scenario",),
        ("predict",),
        ("sweep",),
        ("app",),
        ("presets", "list"),
        ("presets", "show"),
        ("presets", "schema"),
        ("validate", "nccl-tests", "run"),
        ("validate", "compare"),
        ("validate", "torch"),
        ("calibrate",),
    ],
)
def test_help_has_an_example(command):
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout


def test_no_arguments_prints_help():
    result = run()
    assert result.exit_code == 0
    assert "collective" in result.stdout and "sweep" in result.stdout


def test_app_starts_streamlit(tmp_path, monkeypatch):
    script = tmp_path / "app.py"
    script.write_text("")
    calls = []
    monkeypatch.setattr(cli.serve, "APP_SCRIPT", script)
    monkeypatch.setattr(cli.serve.launch, "serve", lambda cmd: calls.append(cmd) or 0)
    assert run("app", "--port", "8600").exit_code == 0
    (cmd,) = calls
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4] == str(script)
    assert "8600" in cmd and "--server.maxUploadSize" in cmd
    monkeypatch.setattr(cli.serve, "APP_SCRIPT", tmp_path / "missing.py")
    assert_usage_error(run("app"), "not found")


# --- the installed entry point ----------------------------------------------------------------
def test_installed_entry_point():
    out = subprocess.run(
        [str(ENTRY), *LESSON, "--json"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)["results"][0]["time_s"]
    assert t == pytest.approx(0.55125, rel=1e-12)
    bad = subprocess.run(
        [str(ENTRY), "collective", "all_reduce", "--size", "lots"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_main_returns_the_exit_code(capsys):
    assert cli.main([*LESSON, "--json"]) == 0
    assert cli.main(["collective", "all_reduce", "--size", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("costmodel: error:")


# --- predict, collective over a preset, scenario ----------------------------------------------
def test_predict_matches_predict_collective():
    from costmodel import predict

    d = run_json(
        "predict",
        "--op",
        "all_reduce",
        "--cluster",
        "dgx-h100",
        "--nodes",
        "2",
        "--sizes",
        "8B:16GB",
    )
    sizes = sweep_mod.parse_values("size", "8B:16GB")
    assert [r["size_bytes"] for r in d["results"]] == sizes
    p = predict.predict_collective("all_reduce", np.asarray(sizes, float), "dgx-h100", nodes=2)
    np.testing.assert_allclose([r["time_s"] for r in d["results"]], p.time_s, rtol=1e-12)
    assert [r["algorithm_used"] for r in d["results"]] == [str(a) for a in p.algorithm]
    np.testing.assert_allclose(
        [r["busbw_GBps"] for r in d["results"]], p.busbw_bytes_per_s / 1e9, rtol=1e-12
    )
    # the asymmetric band: the time at its fast and slow ends, as ErrorBand.time_bounds
    lo, hi = p.error_band.time_bounds(p.time_s)
    np.testing.assert_allclose([r["time_lo_s"] for r in d["results"]], lo, rtol=1e-12)
    np.testing.assert_allclose([r["time_hi_s"] for r in d["results"]], hi, rtol=1e-12)
    assert all(r["time_lo_s"] < r["time_s"] < r["time_hi_s"] for r in d["results"])
    text = run("predict", "--cluster", "dgx-h100", "--nodes", "2", "--sizes", "1GB").stdout
    assert "all_reduce on dgx-h100 x 2 nodes" in text and "GB/s" in text


def test_predict_compare_models():
    d = run_json(
        "predict", "--cluster", "dgx-h100", "--nodes", "8", "--sizes", "1MB,1GB", "--compare-models"
    )
    row = d["results"][1]
    assert {"time_s[textbook]", "time_s[nccl]", "textbook_over_nccl"} <= set(row)
    assert row["textbook_over_nccl"] == pytest.approx(
        row["time_s[textbook]"] / row["time_s[nccl]"], rel=1e-12
    )
    text = run(
        "predict", "--cluster", "dgx-h100", "--nodes", "8", "--sizes", "1GB", "--compare-models"
    ).stdout
    assert "time[textbook]" in text and "busbw[nccl]" in text
    assert_usage_error(
        run(
            "predict",
            "--cluster",
            "dgx-h100",
            "--sizes",
            "1GB",
            "--compare-models",
            "--algorithm",
            "ring",
        ),
        "auto",
    )


def test_collective_over_a_preset_equals_predict():
    from costmodel import predict

    rows = run_json(
        "collective", "all_reduce", "-s", "1GB", "--cluster", "dgx-h100", "--nodes", "2"
    )["results"]
    p = predict.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=2)
    assert rows[0]["time_s"] == pytest.approx(p.time_s, rel=1e-12)
    assert rows[0]["algorithm_used"] == p.algorithm
    assert_usage_error(
        run(
            "collective",
            "all_reduce",
            "-s",
            "1GB",
            "--cluster",
            "dgx-h100",
            "--bandwidth",
            "50GB/s",
        ),
        "either --cluster",
    )
    assert_usage_error(
        run("predict", "--cluster", "dgx-a100", "--sizes", "1GB", "--algorithm", "nvls"),
        "allowed algorithms here",
    )


def test_scenario_command():
    args = (
        "scenario",
        "--params",
        "7B",
        "--cluster",
        "dgx-h100",
        "--nodes",
        "8",
        "--compute-time",
        "400ms",
        "--model",
        "lesson",
    )
    d = run_json(*args)
    from costmodel.scenario import Scenario

    ref = Scenario(
        params="7B", cluster="dgx-h100", nodes=8, compute_time_s=0.4, model="lesson"
    ).evaluate()
    assert d["bound"] == ref.bound == "comms"
    assert d["step_time_s"] == pytest.approx(ref.step_time_s, rel=1e-12)
    assert d["flip"]["description"] == ref.flip.description
    text = run(*args).stdout
    assert "comms-bound" in text and "smallest flip" in text
    assert_usage_error(run("scenario", "--params", "7B", "--cluster", "dgx-h10"), "dgx-h100")
    assert_usage_error(run("scenario", "--params", "7B", "--model", "oracle"), "model")


# --- validate and calibrate -------------------------------------------------------------------
from tests._paths import NCCL_TESTS as DATA  # noqa: E402

A100_LOG = DATA / "12a_blog-thanos_1x8xA100-SXM4-80GB_allreduce_g8.txt"


@pytest.fixture
def fake_nccl_tests(tmp_path):
    """A build folder whose all_reduce_perf prints a real published nccl-tests log."""
    build = tmp_path / "build"
    build.mkdir()
    binary = build / "all_reduce_perf"
    binary.write_text(f"#!/bin/sh\ncat '{A100_LOG}'\n")
    binary.chmod(0o755)
    return build


def test_nccl_tests_dry_run():
    d = run_json(
        "validate",
        "nccl-tests",
        "run",
        "-o",
        "unused",
        "--ops",
        "all_reduce,all_gather",
        "--algos",
        "Ring,Tree",
        "--gpus",
        "8",
        "--dry-run",
    )
    assert [r["key"] for r in d] == [
        "all_reduce-algo_Ring",
        "all_reduce-algo_Tree",
        "all_gather-algo_Ring",
    ]  # NCCL has no Tree all-gather: that run is left out (tests/test_qa_pass8.py)
    assert d[0]["env"] == {"NCCL_ALGO": "Ring"} and "-g" in d[0]["argv"]
    text = run("validate", "nccl-tests", "run", "-o", "x", "--gpus", "8", "--dry-run").stdout
    assert "all_reduce_perf -b 8 -e 8589934592 -f 2" in text


def test_validate_loop_run_compare_calibrate(tmp_path, fake_nccl_tests):
    out = tmp_path / "runs"
    d = run_json(
        "validate",
        "nccl-tests",
        "run",
        "-o",
        str(out),
        "--gpus",
        "8",
        "--build-dir",
        str(fake_nccl_tests),
    )
    assert d["ok"] == ["all_reduce"] and d["rows"] > 0
    again = run_json(
        "validate",
        "nccl-tests",
        "run",
        "-o",
        str(out),
        "--gpus",
        "8",
        "--build-dir",
        str(fake_nccl_tests),
    )
    assert again["skipped"] == ["all_reduce"] and again["rows"] == 0  # a rerun skips it
    results = out / "results.jsonl"

    report, table = tmp_path / "r.html", tmp_path / "cmp.csv"
    loose = run(
        "validate",
        "compare",
        str(results),
        "--cluster",
        "dgx-a100",
        "--tolerance",
        "100",
        "--report",
        str(report),
        "-o",
        str(table),
        "--json",
    )
    assert loose.exit_code == 0, loose.stderr
    summary = json.loads(loose.stdout)
    assert summary["predicted"] == summary["rows"] == d["rows"] and summary["exceeding"] == 0
    assert "<html>" in report.read_text()[:200] and len(pd.read_csv(table)) == d["rows"]
    strict = run(
        "validate", "compare", str(results), "--cluster", "dgx-a100", "--tolerance", "0.0001"
    )
    assert strict.exit_code == 1  # the harness fails loudly
    assert "FAIL" in strict.stdout

    cal = tmp_path / "cal.toml"
    c = run_json(
        "calibrate", str(results), "-o", str(cal), "--min-bytes", "64KiB", "--cluster", "dgx-a100"
    )
    assert cal.read_text().startswith('kind = "calibration"')
    (fit,) = c["fits"]
    assert fit["op"] == "all_reduce" and fit["bandwidth_bytes_per_s"] > 0
    assert fit["preset_bandwidth_bytes_per_s"] > 0
    back = run_json(
        "validate", "compare", str(results), "--calibration", str(cal), "--tolerance", "100"
    )
    assert back["predicted"] == d["rows"]
    # --cluster made it a preset of that cluster carrying the fits: it loads by path as a Cluster
    import costmodel as cm

    loaded = cm.cluster(str(cal))
    assert loaded.gpus_per_node == cm.cluster("dgx-a100").gpus_per_node
    assert loaded.calibration is not None
    pred = run_json("predict", "--op", "all_reduce", "--cluster", str(cal), "--sizes", "64MiB")
    (row,) = pred["results"]
    # a calibrated cluster answers with the realistic model under its calibrated fabric terms
    # (not the alpha-beta line), the same as the API's
    assert c["placement"] == "out-of-place" and c["fabric"]
    # each fitted term says how much of its shift it keeps on other ops and node counts
    assert all(isinstance(f["kept"], str) for f in c["fabric"])
    expected = cm.predict_collective("all_reduce", 64 * 2**20, loaded, model="calibrated")
    assert row["time_s"] == pytest.approx(float(expected.time_s), rel=1e-6)
    n, m = row["ranks"], 64 * 2**20
    line = 2 * (n - 1) * fit["latency_s"] + 2 * (n - 1) / n * m / fit["bandwidth_bytes_per_s"]
    assert row["time_s"] != pytest.approx(line, rel=1e-6)


def test_compare_and_calibrate_read_raw_logs(tmp_path):
    d = run_json(
        "validate", "compare", str(A100_LOG), "--cluster", "dgx-a100", "--tolerance", "100"
    )
    assert d["rows"] > 0
    # no --cluster, a bundled run: the preset it is fitted with, said on stderr as assumed
    assert run_json("validate", "compare", str(A100_LOG), "--tolerance", "100")["assumed"] == [
        "cluster = dgx-a100 (the bundled run's preset)"
    ]
    # the user's own log (not a bundled file, not named like one): the preset it points to
    own = tmp_path / "a100.txt"
    own.write_text(A100_LOG.read_text() + "# my rerun\n")
    assert run_json("validate", "compare", str(own), "--tolerance", "100")["assumed"] == [
        "cluster = dgx-a100 (the log's GPU and GPUs per node)"
    ]
    no_gpu = tmp_path / "p5.txt"  # 16b's rows, which name no GPU, as the user's own log
    no_gpu.write_text((DATA / "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt").read_text() + "#\n")
    assert_usage_error(run("validate", "compare", str(no_gpu)), "--cluster NAME")
    assert_usage_error(
        run("validate", "compare", str(tmp_path / "none.jsonl"), "--cluster", "dgx-a100"),
        "does not exist",
    )
    assert_usage_error(run("calibrate", str(A100_LOG), "-o", str(tmp_path / "c.txt")), ".toml")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert_usage_error(run("calibrate", str(empty), "-o", str(tmp_path / "c.toml")), "no rows")
    assert not (tmp_path / "c.toml").exists()
    # a log without host lines: the node count is asked for, never guessed
    no_hosts = DATA / "13e_waynehacking8_1x2-4-6xH100_GPUcount-scaling_allreduce.txt"
    out = tmp_path / "e.toml"
    assert_usage_error(run("calibrate", str(no_hosts), "-o", str(out)), "--nodes")
    assert_usage_error(
        run("calibrate", str(no_hosts), "-o", str(out), "--nodes", "1", "--placement", "x"),
        "--placement",
    )
    assert not out.exists()
    ok = run_json(
        "calibrate", str(no_hosts), "-o", str(out), "--nodes", "1", "--placement", "in-place"
    )
    assert ok["placement"] == "in-place" and 'placement = "in-place"' in out.read_text()


def test_validate_torch_builds_the_torchrun_command(monkeypatch, tmp_path):
    calls = []
    out = tmp_path / "t.jsonl"
    row = {"kind": "collective", "op": "all_reduce", "size_bytes": 4096, "ranks": 2, "nodes": 1}

    def job(cmd, log):  # a job that measured one row (one that measured nothing fails)
        calls.append(cmd)
        out.write_text(json.dumps(row) + "\n")
        return 0

    monkeypatch.setattr(runner, "run_logged", job)
    result = run(
        "validate",
        "torch",
        "--nproc",
        "2",
        "--backend",
        "gloo",
        "--max-bytes",
        "1MiB",
        "-o",
        str(out),
        "--ddp",
        "--",
        "--ddp-params",
        "1M",
    )
    assert result.exit_code == 0, result.stderr
    (cmd,) = calls
    assert cmd[1:3] == ["-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2"
    assert "costmodel.validation.torch_bench" in cmd and cmd[-2:] == ["--ddp-params", "1M"]
    assert_usage_error(run("validate", "torch", "--backend", "mpi"), "allowed: auto")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--ops", "all_reduce,allreduce2"], "--ops: 'allreduce2' not known"),
        (["--ops", ""], "--ops: empty"),
        (["--ops", "none"], "--ops: empty"),
        (["--min-bytes", ""], "--min-bytes"),
        (["--min-bytes", "0B"], "--min-bytes: must be > 0"),
        (["--min-bytes", "2MiB", "--max-bytes", "1MiB"], "larger than --max-bytes"),
        (["-o", "/nonexistent-folder/t.jsonl"], "does not exist"),
        (["-o", "/"], "folder"),
    ],
)
def test_validate_torch_checks_arguments_before_torchrun(monkeypatch, args, fragment):
    """bad arguments died inside torchrun with torch's elastic error page."""
    calls = []
    monkeypatch.setattr(runner, "run_logged", lambda cmd, log: calls.append(cmd) or 0)
    assert_usage_error(run("validate", "torch", *args), fragment)
    assert calls == []  # torchrun never started


def test_validate_torch_ddp_only_is_allowed(monkeypatch, tmp_path):
    calls = []
    out = tmp_path / "d.jsonl"

    def job(cmd, log):  # a job that timed one DDP step (one that measured nothing fails)
        calls.append(cmd)
        out.write_text(json.dumps({"kind": "ddp_step", "ranks": 2, "nodes": 1}) + "\n")
        return 0

    monkeypatch.setattr(runner, "run_logged", job)
    result = run("validate", "torch", "--ops", "none", "--ddp", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert len(calls) == 1


# --- review: bad input and README lines (each fails without its fix) ---------------------------
def test_sweep_unwritable_folder_is_one_output_line():
    # /proc accepts os.access(W_OK) as root but refuses new files: mkstemp's OSError used to
    # surface as a bare "[Errno 2] ... .tmp" without naming the output
    assert_usage_error(
        run(
            "sweep",
            "--set",
            "preset=dgx-h100",
            "--set",
            "size=8B",
            "-o",
            "/proc/costmodel-review.csv",
        ),
        "--output: ",  # the option typed (-o/--output), not the library's field
    )


def test_sweep_json_to_stdout_is_json():
    # --json without -o used to print CSV
    result = run("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB,2MB", "--json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["size_bytes"] for r in rows] == [1_000_000, 2_000_000]
    assert all(r["time_s"] > 0 for r in rows)


def test_readme_sweep_of_all_presets_over_nodes(tmp_path):
    # README: `costmodel sweep --set preset=all --set nodes=1..64x2 --set 'size=8B..16GB x2'`
    # used to stop at the first preset without a network (pcie-8x-l40s at nodes=2)
    from costmodel import presets

    out = tmp_path / "grid.csv"
    result = run(
        "sweep",
        "--set",
        "preset=all",
        "--set",
        "nodes=1..64x2",
        "--set",
        "size=8B..16GB x2",
        "-o",
        str(out),
        "--no-progress",
    )
    assert result.exit_code == 0, result.stderr
    df = pd.read_csv(out)
    networked = {n for n in presets.names("cluster") if presets.cluster(n).node.nics_per_node}
    assert set(df["preset"]) == networked
    assert df["nodes"].max() == 64
    # a networkless preset named explicitly is still refused with the reason
    assert_usage_error(
        run("sweep", "--set", "preset=pcie-8x-l40s", "--set", "nodes=2", "--set", "size=8B"),
        "no network",
    )


def test_validate_compare_passes_the_showcase_run_with_defaults():
    """with default settings `validate compare` failed 06a (exit 1). The default is
    now the docs/fidelity.md goal (median |busbw error| <= 8% from 1 MiB, <= 20% overall)."""
    log = DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"
    result = run("validate", "compare", str(log), "--cluster", "dell-xe9680-h100")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "ok: docs/fidelity.md goal" in result.stdout
    assert "warning" not in result.stderr
    textbook = run(
        "validate", "compare", str(log), "--cluster", "dell-xe9680-h100", "--model", "textbook"
    )
    assert textbook.exit_code == 1 and "FAIL" in textbook.stdout


def test_validate_compare_warns_when_the_preset_does_not_match_the_log():
    log = DATA / "02_coreweave-16x8xA100-IB_allreduce.txt"
    result = run("validate", "compare", str(log), "--cluster", "dgx-h100", "--tolerance", "100")
    assert result.exit_code == 0, result.stderr
    assert "does not match the log" in result.stderr and "coreweave-hgx-a100" in result.stderr


# --- scenario side by side and the bucket_cap advisor ----------------------
def test_scenario_vs_prints_both_and_the_difference():
    from costmodel.scenario import Scenario

    r = run("scenario", "--params", "7B", "--nodes", "4", "--vs", "cluster=dgx-a100")
    assert r.exit_code == 0, r.stderr
    a = Scenario(params="7B", nodes=4).evaluate(scaling=False, flips=False)
    b = Scenario(params="7B", nodes=4, cluster="dgx-a100").evaluate(scaling=False, flips=False)
    out = r.stdout
    assert out.startswith("A: ") and "\nB: " in out and "(A with cluster=dgx-a100)" in out
    step = next(line for line in out.splitlines() if line.startswith("step time"))
    from costmodel.units import format_duration

    assert format_duration(a.step_time_s) in step and format_duration(b.step_time_s) in step
    assert f"{b.step_time_s / a.step_time_s:.3g}x" in step
    assert "answer: A's step is" in out


def test_scenario_vs_json_has_a_b_and_the_comparison():
    d = run_json("scenario", "--params", "7B", "--nodes", "2", "--vs", "nodes=8,zero_stage=3")
    assert d["a"]["nodes"] == 2 and d["b"]["nodes"] == 8
    assert d["b"]["scenario"]["zero_stage"] == 3 and d["changes"] == "nodes=8,zero_stage=3"
    rows = {r["field"]: r for r in d["comparison"]}
    assert rows["ranks"]["difference"] == d["b"]["ranks"] - d["a"]["ranks"] == 48
    assert rows["memory_total_bytes"]["b"] < rows["memory_total_bytes"]["a"]  # ZeRO-3 shards


@pytest.mark.parametrize(
    ("vs", "fragment"),
    [("nodes=x", "nodes"), ("no_sync=maybe", "true or false"), ("gpus=4", "gpus")],
)
def test_scenario_bad_vs_is_one_line(vs, fragment):
    assert_usage_error(run("scenario", "--params", "7B", "--vs", vs), fragment)


def test_scenario_bucket_advice_is_the_argmin():
    d = run_json("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--bucket-advice")
    adv = d["bucket_advice"]["A"]
    best = adv["best_index"]
    assert adv["exposed_comm_s"][best] <= min(adv["exposed_comm_s"]) + adv["tie_s"]
    assert adv["best_cap_bytes"] == adv["caps_bytes"][best]
    assert d["step_time_s"] > 0  # the single scenario's fields stay at the top level
    r = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--bucket-advice")
    assert r.exit_code == 0, r.stderr
    assert f"bucket_cap advice: {adv['best_cap_bytes'] / 2**20:g} MiB" in r.stdout


def test_scenario_contention_option_slows_the_step():
    base = run_json("scenario", "--arch", "llama-2-7b", "--nodes", "4")
    slow = run_json("scenario", "--arch", "llama-2-7b", "--nodes", "4", "--contention", "1")
    assert slow["efficiency"] < base["efficiency"]
    assert slow["scenario"]["comm_contention"] == 1.0


# --- the package layout -------------------------------------------------------
def test_help_lists_commands_in_their_order():
    """The cli/ package registers every command in one table; --help keeps the order it had."""
    out = run("--help").stdout
    listed = [
        line.split()[0]
        for line in out.split("Commands:")[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert listed == [
        "collective", "memory", "batch", "step", "scenario", "train", "archs", "fabrics", "predict",
        "sweep", "calibrate", "app", "presets", "validate",
    ]  # fmt: skip


def test_python_dash_m_runs_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "costmodel.cli", "collective", "all_reduce", "--size", "14GB",
         "--ranks", "64", "--bandwidth", "50GB/s", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # the lesson's 7B all-reduce: 2 (63/64) 14 GB / 50 GB/s
    assert json.loads(out.stdout)["results"][0]["time_s"] == pytest.approx(0.55125, rel=1e-12)
    bad = subprocess.run(
        [sys.executable, "-m", "costmodel.cli", "collective", "nope", "--size", "1GB"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.startswith("costmodel: error: ")


def test_fabrics_lists_what_the_model_uses_per_fabric():
    from costmodel.fabrics import PRIORS
    from costmodel.fitted_corrections import ALL, FITTED

    rows = {r["fabric"]: r for r in run_json("fabrics")}
    assert set(rows) == set(PRIORS)
    ib, tcpxo = rows["infiniband"], rows["tcpxo"]
    assert ib["overhead_from"] == "fitted"
    assert ib["per_message_overhead_us"] == ALL["fabric_latency_us"]["infiniband"]
    assert ib["measured"] and not tcpxo["measured"]
    assert tcpxo["per_message_overhead_us"] is None  # no cited figure: none invented
    assert tcpxo["net_ramp_phi"] > ib["net_ramp_phi"]  # proxy-driven: the shared multiplier
    assert set(FITTED.measured_fabrics) == {f for f, r in rows.items() if r["measured"]}
    assert all(r["sources"] for r in rows.values())
    text = run("fabrics").stdout
    assert "tcpxo" in text and "error band unknown" in text


def test_step_and_scenario_say_which_compute_source_they_used():
    common = ["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2"]
    out = run("step", *common, "--strategy", "fsdp").stdout
    assert "compute source" in out and "fitted efficiency hopper/bf16" in out
    out = run("step", *common, "--strategy", "fsdp", "--mfu", "0.5").stdout
    assert "given MFU 0.50" in out
    data = run_json("step", *common, "--strategy", "zero2", "--compute-time", "300ms")
    assert data["compute_source"] == "measured"
    sc = run("scenario", *common, "--strategy", "fsdp", "--recompute", "selective-op").stdout
    assert "compute per micro-batch: fitted efficiency" in sc
    tr = run_json("train", *common, "--strategy", "fsdp", "--steps", "10", "--mfu", "0.45")
    assert tr["compute_source"] == "mfu" and tr["compute_label"] == "given MFU 0.45"
    assert_usage_error(
        CliRunner().invoke(cli.app, ["scenario", *common, "--recompute", "some"]), "--recompute"
    )


def test_step_prints_the_moe_note():
    from costmodel.architecture import moe_data_parallel_note

    args = ["--arch", "mixtral-8x7b", "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "fsdp"]
    out = run("step", *args).stdout
    assert f"note: {moe_data_parallel_note('mixtral-8x7b')}" in out


def _close(a: float, b: float) -> bool:
    return bool(np.isclose(float(a), float(b), rtol=1e-12))


def test_every_collective_answer_of_the_cli_names_one_quantity_alike():
    """`predict --json`, `collective --json` and a sweep row answer the same question with the
    same keys and numbers, the asymmetric band's ends (time_lo_s, time_hi_s) included."""
    args = ("--cluster", "dgx-h100", "--nodes", "8")
    pred = run_json("predict", *args, "--sizes", "14GB")["results"][0]
    coll = run_json("collective", "all_reduce", "--size", "14GB", *args)["results"][0]
    import costmodel as cm

    row = cm.sweep(preset="dgx-h100", nodes=8, size=14e9).iloc[0]
    keys = ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm_used",
            "protocol_used", "error_band_pct", "time_lo_s", "time_hi_s", "regime")  # fmt: skip
    for k in keys:
        same = (lambda a, b: a == b) if k.endswith("_used") or k == "regime" else _close
        assert same(pred[k], coll[k]) and same(coll[k], row[k]), (k, pred[k], coll[k], row[k])
    assert pred["time_lo_s"] < pred["time_s"] < pred["time_hi_s"]
    both = run_json("predict", *args, "--sizes", "14GB", "--compare-models")["results"][0]
    assert both["busbw_GBps[nccl]"] == pytest.approx(pred["busbw_GBps"])
    assert not any("bytes_per_s" in k or k.startswith("message") for k in both)
