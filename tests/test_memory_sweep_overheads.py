"""The memory sweep takes the memory's overheads as ``costmodel memory`` does (one road): a CUDA
context and a fragmentation allowance per block, in memory_GB and fits."""

from __future__ import annotations

import json

import pytest

import costmodel as cm

from ._cli import run


@pytest.mark.parametrize(
    "given, flags",
    [
        ({"params": "7B"}, ["--params", "7B"]),
        ({"arch": "llama-3.1-8b"}, ["--arch", "llama-3.1-8b"]),
    ],
)
def test_memory_sweep_rows_equal_costmodel_memory_with_the_overheads(given, flags):
    df = cm.sweep(
        kind="memory",
        preset="dgx-h100",
        zero_stage="3",
        ranks="8",
        cuda_context="2GiB,0",
        fragmentation="0.05",
        **given,
    )
    assert df["cuda_context_bytes"].tolist() == [2**31, 0]
    assert (df["fragmentation"] == 0.05).all()
    for row in df.to_dict("records"):
        r = run(
            "memory", *flags, "--zero-stage", "3", "--ranks", "8", "--cluster", "dgx-h100",
            "--cuda-context", str(int(row["cuda_context_bytes"])), "--fragmentation", "0.05",
            "--json",
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        cli = json.loads(r.stdout)
        assert row["memory_GB"] == pytest.approx(cli["memory_bytes"] / 1e9, rel=1e-12)
        assert row["fits"] == cli["fits"]
    # the context is counted once, the fragmentation on everything the allocator holds
    with_ctx, without = df["memory_GB"].tolist()
    assert with_ctx - without == pytest.approx(2**31 / 1e9, rel=1e-12)
    plain = cm.sweep(kind="memory", preset="dgx-h100", zero_stage="3", ranks="8", **given)
    assert without > plain["memory_GB"].iloc[0] * 1.04
    assert "cuda_context_bytes" in plain.columns and plain["fragmentation"].iloc[0] == 0


def test_a_big_context_flips_the_memory_sweep_verdict_as_it_flips_memory():
    df = cm.sweep(kind="memory", preset="dgx-h100", params="1B", ranks="8", cuda_context="0,80GB")
    assert df["fits"].tolist() == [True, False]


@pytest.mark.parametrize(
    "axis, value, said",
    [
        ("fragmentation", "1", "fragmentation"),
        ("fragmentation", "-0.1", "fragmentation"),
        ("cuda_context", "-1GB", "cuda_context"),
    ],
)
def test_memory_sweep_overheads_out_of_range_are_refused_naming_the_axis(axis, value, said):
    r = run("sweep", "--kind", "memory", "--set", "params=7B", "--set", f"{axis}={value}")
    assert r.exit_code == 2
    assert said in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
