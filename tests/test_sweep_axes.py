"""The sweeps take the options their commands take: the step sweep's ``compute_time``
(``step --compute-time``) and ``tokens_per_gpu`` (``step --tokens-per-gpu``), and the memory
sweep's ``gpu_memory`` (``memory --gpu-memory``). Each row is the command's answer to the same
question (the same function), and the value changes the answer as the option does."""

from __future__ import annotations

import importlib
import json

import pytest

from tests._cli import one_line_error, run

sweep = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

FIELDS = ("compute_s", "comm_s", "exposed_comm_s", "step_time_s", "efficiency", "tokens_per_s")
BASE = {"preset": "dgx-h100", "arch": "llama-3.1-8b", "strategy": "fsdp", "nodes": 2}
CLI_BASE = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "fsdp")
CLI_BASE += ("--nodes", "2")


def _step(*options: str) -> dict:
    r = run("step", *CLI_BASE, *options, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _same(row: dict, cli: dict) -> None:
    for f in FIELDS:
        assert row[f] == pytest.approx(cli[f], rel=1e-12), f
    assert row["compute_source"] == cli["compute_source"]
    assert row["memory_GB"] * 1e9 == pytest.approx(cli["memory_bytes"], rel=1e-12)


def test_a_compute_time_row_is_step_with_compute_time():
    rows = sweep.sweep(kind="step", compute_time="300ms,600ms", **BASE).to_dict(orient="records")
    assert [r["compute_time_s"] for r in rows] == [0.3, 0.6]  # the input is a column
    for r, option in zip(rows, ("300ms", "600ms"), strict=True):
        cli = _step("--compute-time", option)
        _same(r, cli)
        assert r["compute_source"] == "measured"
        assert r["compute_s"] == pytest.approx(r["compute_time_s"], rel=1e-12)
    assert rows[1]["step_time_s"] > rows[0]["step_time_s"]  # the value changes the answer


def test_a_tokens_per_gpu_row_is_step_with_tokens_per_gpu():
    rows = sweep.sweep(
        kind="step", tokens_per_gpu="4096,8192", sequence_length=2048, **BASE
    ).to_dict(orient="records")
    assert [r["tokens_per_gpu"] for r in rows] == [4096, 8192]
    assert [r["micro_batch"] for r in rows] == [2, 4]  # tokens = micro-batch x sequence
    for r in rows:
        cli = _step("--tokens-per-gpu", str(int(r["tokens_per_gpu"])), "--seq", "2048")
        _same(r, cli)
    assert rows[1]["compute_s"] > rows[0]["compute_s"]
    with_mfu = sweep.sweep(kind="step", tokens_per_gpu=8192, mfu=0.3, **BASE)
    (r,) = with_mfu.to_dict(orient="records")
    _same(r, _step("--tokens-per-gpu", "8192", "--mfu", "0.3"))
    assert r["compute_source"] == "mfu"


def test_a_gpu_memory_row_is_memory_with_gpu_memory():
    axes = {"arch": "llama-3.1-8b", "zero_stage": 1, "ranks": 8}
    rows = sweep.sweep(kind="memory", gpu_memory="40GB,80GB", **axes).to_dict(orient="records")
    assert [r["gpu_memory_GB"] for r in rows] == [40.0, 80.0]
    assert [r["fits"] for r in rows] == [False, True]  # 74.6 GB: the card decides
    for r, card in zip(rows, ("40GB", "80GB"), strict=True):
        r_cli = run("memory", "--arch", "llama-3.1-8b", "--zero-stage", "1", "--ranks", "8",
                    "--gpu-memory", card, "--json")  # fmt: skip
        cli = json.loads(r_cli.stdout)
        assert cli["fits"] is r["fits"]
        assert cli["gpu_memory_GB"] == r["gpu_memory_GB"]
        assert cli["memory_GB"] == pytest.approx(r["memory_GB"], rel=1e-12)
    counts = sweep.sweep(kind="memory", params="7B", ranks=1, gpu_memory="80GB,120GB")
    assert counts["fits"].tolist() == [False, True]  # the lesson's 112 GB
    assert counts["gpu_memory_GB"].tolist() == [80.0, 120.0]


@pytest.mark.parametrize(
    ("kind", "sets", "words"),
    [
        ("step", ["compute_time=300ms", "mfu=0.4"], "mfu: not with compute_time"),
        ("step", ["compute_time=300ms", "tokens_per_gpu=4096"], "tokens_per_gpu: not with"),
        ("step", ["tokens_per_gpu=4096", "micro_batch=2"], "micro_batch: not with tokens_per_gpu"),
        ("step", ["tokens_per_gpu=5000"], "tokens_per_gpu: 5000 is not a whole number"),
        ("step", ["tokens_per_gpu=0"], "tokens_per_gpu: must be a token count"),
        ("step", ["compute_time=0s"], "compute_time: must be a duration"),
        ("memory", ["gpu_memory=80GB", "preset=dgx-h100"], "gpu_memory: the preset gives"),
        ("memory", ["gpu_memory=lots"], "gpu_memory: must be a GPU memory in 1 B..16 TiB"),
    ],
)
def test_a_bad_new_axis_is_refused_in_one_line(kind, sets, words):
    args = ["sweep", "--kind", kind, "--set", "arch=llama-3.1-8b"]
    if kind == "step":
        args += ["--set", "preset=dgx-h100"]
    for s in sets:
        args += ["--set", s]
    one_line_error(run(*args), words)


def test_step_refuses_a_micro_batch_beside_tokens_per_gpu():
    """``--tokens-per-gpu`` sets the micro-batch: a ``--micro-batch`` beside it was silently
    replaced; it is refused, as the sweep refuses both axes."""
    one_line_error(
        run("step", *CLI_BASE, "--tokens-per-gpu", "8192", "--micro-batch", "4"),
        "--micro-batch: not with --tokens-per-gpu",
    )
