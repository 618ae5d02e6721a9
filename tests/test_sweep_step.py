"""Step sweeps: ``costmodel sweep --kind step`` (and ``cm.sweep(kind="step")``) go through
``strategy_step`` with ``costmodel step``'s defaults, so a row is that command's answer."""

from __future__ import annotations

import importlib
import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel import cli

sweep = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

FIELDS = (
    "step_time_s",
    "compute_s",
    "comm_s",
    "exposed_comm_s",
    "step_time_lo_s",
    "step_time_hi_s",
    "efficiency",
    "tokens_per_s",
)


def _cli(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def _cli_step(*args: str) -> dict:
    r = _cli("step", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_a_sweep_row_is_costmodel_step_for_the_same_question(tmp_path, ext):
    out = tmp_path / f"steps{ext}"
    r = _cli(
        "sweep",
        "--kind",
        "step",
        "--set",
        "preset=dgx-h100",
        "--set",
        "arch=llama-3.1-8b",
        "--set",
        "strategy=ddp,hsdp",
        "--set",
        "nodes=1,2",
        "--set",
        "micro_batch=2",
        "--set",
        "accumulation=2",
        "-o",
        str(out),
        "--no-progress",
    )
    assert r.exit_code == 0, r.stderr
    df = pd.read_csv(out) if ext == ".csv" else pd.read_parquet(out)
    assert len(df) == 4 and set(df["strategy"]) == {"ddp", "hsdp"}
    assert set(df["layout"]) == {"ddp", "hsdp g=8"}
    for strategy in ("ddp", "hsdp"):
        for nodes in (1, 2):
            row = df[(df["strategy"] == strategy) & (df["nodes"] == nodes)].iloc[0]
            step = _cli_step(
                "--arch",
                "llama-3.1-8b",
                "--cluster",
                "dgx-h100",
                "--nodes",
                str(nodes),
                "--strategy",
                strategy,
                "--micro-batch",
                "2",
                "--accumulation",
                "2",
            )
            for name in FIELDS:
                assert row[name] == pytest.approx(step[name], rel=1e-9, abs=0), name
            assert row["memory_GB"] * 1e9 == pytest.approx(step["memory_bytes"], rel=1e-9)
            assert bool(row["fits"]) == step["fits"]
            assert row["bound"] == step["bound"] and row["ranks"] == step["ranks"]
            assert row["comm_contention"] == step["comm_contention"]  # the one default


def test_hsdp_group_and_resharding_rows_are_costmodel_step():
    df = sweep.sweep(
        kind="step",
        preset="dgx-h100",
        arch="llama-3.1-8b",
        strategy="hsdp",
        nodes=2,
        group_size="4,16",
        reshard_after_forward="false",
    )
    assert df["strategy"].tolist() == ["hsdp", "hsdp"]
    assert df["layout"].tolist() == ["hsdp g=4 (no reshard)", "hsdp g=16 (no reshard)"]
    assert df["reshard_after_forward"].tolist() == [False, False]
    for _, row in df.iterrows():
        step = _cli_step(
            "--arch",
            "llama-3.1-8b",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--strategy",
            "hsdp",
            "--group-size",
            str(row["group_size"]),
            "--no-reshard",
        )
        for key in ("strategy", "layout", "group_size", "reshard_after_forward"):
            assert step[key] == row[key], key
        assert row["step_time_s"] == pytest.approx(step["step_time_s"], rel=1e-9)
        assert row["memory_GB"] * 1e9 == pytest.approx(step["memory_bytes"], rel=1e-9)


def test_step_rows_follow_the_grid_and_the_api_is_the_cli():
    """Options the grid sets reach the step (mfu, contention, a bare count); the API sweep and
    the row function agree (one road)."""
    df = sweep.sweep(
        kind="step",
        preset="dgx-h100",
        params="1B",
        strategy="fsdp",
        nodes=2,
        mfu="0.3,0.6",
        comm_contention="0,1",
    )
    assert len(df) == 4 and df["params"].eq(1e9).all()
    by = df.set_index(["mfu", "comm_contention"])["compute_s"]
    assert by[(0.3, 0.0)] == pytest.approx(2 * by[(0.6, 0.0)], rel=1e-12)  # compute ~ 1/MFU
    step = df.set_index(["mfu", "comm_contention"])["step_time_s"]
    assert step[(0.6, 1.0)] > step[(0.6, 0.0)]  # contention stalls compute under collectives
    assert (df["compute_source"] == "mfu").all()


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["preset=dgx-h100", "arch=llama-3.1-8b", "strategy=zero9"], "strategy: unknown 'zero9'"),
        (["preset=dgx-h100", "arch=no-such-model"], "arch: unknown"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "micro_batch=0"], "micro_batch"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "mfu=1.5"], "mfu"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "recompute=some"], "recompute: unknown"),
        (["arch=llama-3.1-8b"], "preset"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "params=7B"], "arch=NAME"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "size=1GB"], "unknown step axis 'size'"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "group_size=4"], "group_size: only hsdp"),
        (
            ["preset=dgx-h100", "arch=llama-3.1-8b", "strategy=zero1,fsdp", "reshard=false"],
            "--set reshard: only fsdp and hsdp",
        ),
        (
            ["preset=dgx-h100", "arch=llama-3.1-8b", "strategy=hsdp", "group_size=3"],
            "group_size: 3 does not divide",
        ),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "reshard=maybe"], "--set reshard: expected"),
        (["preset=dgx-h100", "arch=llama-3.1-8b", "nodes=1..1000000"], "MAX_AXIS_VALUES"),
    ],
)
def test_bad_step_grid_is_one_line_naming_the_field(sets, field):
    args = ["sweep", "--kind", "step"]
    for s in sets:
        args += ["--set", s]
    r = _cli(*args)
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert field in lines[0], lines[0]


def test_a_step_grid_file_and_the_row_limit(tmp_path):
    grid = tmp_path / "steps.toml"
    grid.write_text(
        'kind = "step"\n[grid]\npreset = "dgx-h100"\narch = "llama-3.1-8b"\n'
        'strategy = ["zero1", "zero2"]\nnodes = "1..2"\n'
    )
    g = sweep.load_grid(grid)
    assert g.kind == "step" and g.rows == 4
    with pytest.raises(ValueError, match="MAX_STEP_ROWS"):
        sweep.make_grid(
            {
                "preset": "dgx-h100",
                "arch": "llama-3.1-8b",
                "nodes": "1..100",
                "micro_batch": "1..2000",
            },
            kind="step",
        )


@pytest.mark.parametrize(
    ("strategy", "sets", "options"),
    [
        ("fsdp", ["param_dtype=fp8"], ["--param-dtype", "fp8"]),
        ("zero2", ["grad_dtype=fp32"], ["--grad-dtype", "fp32"]),
        ("ddp", ["no_sync=false"], ["--sync"]),
        ("zero1", ["bucket_cap=10MiB"], ["--bucket", "10MiB"]),
    ],
)
def test_communication_axes_rows_are_costmodel_step(tmp_path, strategy, sets, options):
    """param_dtype, grad_dtype, no_sync and bucket_cap reach the step as the CLI's options do;
    each row equals ``costmodel step --json`` with them, and differs from the default step."""
    args = ["sweep", "--kind", "step", "--no-progress", "-o", str(tmp_path / "s.csv")]
    base = ["preset=dgx-h100", "arch=llama-3.1-8b", f"strategy={strategy}", "nodes=2"]
    for s in [*base, "accumulation=2", *sets]:
        args += ["--set", s]
    r = _cli(*args)
    assert r.exit_code == 0, r.stderr
    df = pd.read_csv(tmp_path / "s.csv")
    assert len(df) == 1
    row = df.iloc[0]
    name, value = sets[0].split("=")
    column = "bucket_cap_bytes" if name == "bucket_cap" else name
    expected = {"no_sync": False, "bucket_cap": 10 * 2**20}.get(name, value)
    assert row[column] == expected  # the input is an output column
    common = ["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2"]
    common += ["--strategy", strategy, "--accumulation", "2"]
    step = _cli_step(*common, *options)
    default = _cli_step(*common)
    for f in FIELDS:
        assert row[f] == pytest.approx(step[f], rel=1e-9, abs=0), f
    assert row["memory_GB"] * 1e9 == pytest.approx(step["memory_bytes"], rel=1e-9)
    assert step["comm_s"] != pytest.approx(default["comm_s"], rel=1e-6)  # the axis mattered


def test_communication_axes_default_to_costmodel_step_and_cross():
    """Without the axes a row is the default step (bf16 gathers, the recipe's gradients,
    no_sync, the strategy's bucket); crossed, they give one row per combination."""
    df = sweep.sweep(kind="step", preset="dgx-h100", params="1B", strategy="ddp", nodes=2)
    assert df["param_dtype"].tolist() == ["bf16"] and df["no_sync"].tolist() == [True]
    assert "grad_dtype" not in df and "bucket_cap_bytes" not in df  # unset: not an input
    crossed = sweep.sweep(
        kind="step",
        preset="dgx-h100",
        params="1B",
        strategy="ddp",
        nodes=2,
        grad_dtype="fp32,bf16",
        no_sync="true,false",
        accumulation=4,
        bucket_cap="1MiB..4MiB x2",
    )
    assert len(crossed) == 12
    assert sorted(set(crossed["bucket_cap_bytes"])) == [2**20, 2**21, 2**22]
    by = crossed.set_index(["grad_dtype", "no_sync", "bucket_cap_bytes"])["comm_s"]
    # fp32 gradients move twice bf16's bytes; syncing every micro-batch reduces 4 times
    assert by[("fp32", True, 2**22)] > by[("bf16", True, 2**22)]
    assert by[("bf16", False, 2**22)] == pytest.approx(4 * by[("bf16", True, 2**22)], rel=1e-9)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ("param_dtype=int4", "param_dtype: unknown 'int4'; allowed: bf16, fp16, fp8, fp32"),
        ("grad_dtype=fp8", "grad_dtype: unknown 'fp8'; allowed: fp32, bf16, fp16"),
        ("no_sync=maybe", "no_sync"),
        ("bucket_cap=0", "bucket_cap: must be a bucket size in 1 B..10 TB"),
        (
            "bucket_cap=lots",
            "bucket_cap: must be a bucket size in 1 B..10 TB (1e13 B), whole bytes, e.g. 50MiB, got 'lots'; expected a number",
        ),
    ],
)
def test_bad_communication_axis_is_one_line_naming_the_field(bad, field):
    args = ["sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b"]
    r = _cli(*args, "--set", bad)
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert field in lines[0], lines[0]


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_an_unknown_band_says_why_in_the_file_as_costmodel_step_does(tmp_path, ext):
    """A GPU with no fitted efficiency (the default MFU) has NaN band ends: the row says why in
    ``band_note``, in ``costmodel step``'s words; a fitted GPU's row has a band and no note."""
    from costmodel.strategy.band import UNKNOWN_COMPUTE

    out = tmp_path / f"band{ext}"
    r = _cli(
        "sweep",
        "--kind",
        "step",
        "--set",
        "preset=dgx-b200,dgx-h100",
        "--set",
        "arch=llama-3.1-8b",
        "--set",
        "strategy=fsdp",
        "-o",
        str(out),
        "--no-progress",
    )
    assert r.exit_code == 0, r.stderr
    df = pd.read_csv(out, keep_default_na=False) if ext == ".csv" else pd.read_parquet(out)
    b200 = df[df["preset"] == "dgx-b200"].iloc[0]
    h100 = df[df["preset"] == "dgx-h100"].iloc[0]
    assert b200["compute_source"] == "default-mfu"
    assert math.isnan(float(b200["step_time_lo_s"])) and math.isnan(float(b200["step_time_hi_s"]))
    assert b200["band_note"] == UNKNOWN_COMPUTE
    assert h100["band_note"] == "" and float(h100["step_time_lo_s"]) > 0
    step = _cli("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-b200", "--strategy", "fsdp")
    assert step.exit_code == 0 and f"({UNKNOWN_COMPUTE})" in step.stdout


def test_a_gpus_per_node_row_is_costmodel_step_with_gpus_per_node():
    """The step sweep's ``gpus_per_node`` axis is ``step --gpus-per-node``: a slice of each node."""
    df = sweep.sweep(
        kind="step",
        preset="dgx-h100",
        arch="llama-3.1-8b",
        strategy="fsdp",
        nodes=2,
        gpus_per_node="4,8",
    )
    assert df["gpus_per_node"].tolist() == [4, 8] and df["ranks"].tolist() == [8, 16]
    for _, row in df.iterrows():
        step = _cli_step(
            "--arch",
            "llama-3.1-8b",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--strategy",
            "fsdp",
            "--gpus-per-node",
            str(row["gpus_per_node"]),
        )
        assert row["ranks"] == step["ranks"]
        for name in FIELDS:
            assert row[name] == pytest.approx(step[name], rel=1e-9, abs=0), name


@pytest.mark.parametrize(
    ("value", "words"),
    [("0", "gpus_per_node: must be a whole number in 1..1,024, got 0"), ("16", "allowed: 1..8")],
)
def test_a_gpus_per_node_beyond_the_node_is_refused_in_one_line(tmp_path, value, words):
    r = _cli(
        "sweep",
        "--kind",
        "step",
        "--set",
        "preset=dgx-h100",
        "--set",
        "arch=llama-3.1-8b",
        "--set",
        f"gpus_per_node={value}",
        "-o",
        str(tmp_path / "never.csv"),
        "--no-progress",
    )
    assert r.exit_code == 2 and words in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "never.csv").exists()
