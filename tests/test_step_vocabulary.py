"""One step question, one vocabulary: ``costmodel step --cluster --json`` carries every column
of the step sweep's row for the same question, under the same name, in the same unit, with the
same value (``memory_GB``, ``gpu_memory_GB``, ``band_note``, ``micro_batch``, the inputs
``preset``, ``model``, ``nodes``, ...), beside its own bytes (``memory_bytes``,
``gpu_memory_bytes``). It wrote the bytes only, so a script reading the sweep's ``memory_GB``
could not read the command's answer."""

from __future__ import annotations

import importlib
import json
import math

import pytest

from costmodel.sweep.evaluate import join_notes
from tests._cli import run

sweep = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

# the same question two ways: (CLI options, sweep axes)
QUESTIONS = [
    (["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "fsdp"],
     {"arch": "llama-3.1-8b", "preset": "dgx-h100", "nodes": 2, "strategy": "fsdp"}),
    (["--params", "7B", "--cluster", "dgx-h100", "--strategy", "ddp", "--bucket", "50MiB",
      "--accumulation", "4", "--sync", "--compute-time", "400ms"],
     {"params": "7B", "preset": "dgx-h100", "strategy": "ddp", "bucket_cap": "50MiB",
      "accumulation": 4, "no_sync": False, "compute_time": "400ms"}),
    (["--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "hsdp",
      "--group-size", "8", "--no-reshard", "--recompute", "full", "--mfu", "0.4",
      "--contention", "0.3", "--grad-dtype", "fp32", "--loss", "fused", "--model", "lesson"],
     {"arch": "llama-3.1-70b", "preset": "dgx-h100", "nodes": 2, "strategy": "hsdp",
      "group_size": 8, "reshard_after_forward": False, "recompute": "full", "mfu": 0.4,
      "comm_contention": 0.3, "grad_dtype": "fp32", "loss": "fused", "model": "lesson"}),
    (["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "zero1",
      "--tokens-per-gpu", "16384", "--seq", "8192", "--gpus-per-node", "4",
      "--power-limit-w", "500", "--param-dtype", "fp32"],
     {"arch": "llama-3.1-8b", "preset": "dgx-h100", "strategy": "zero1",
      "tokens_per_gpu": 16384, "sequence_length": 8192, "gpus_per_node": 4,
      "power_limit_w": 500, "param_dtype": "fp32"}),
    (["--arch", "mixtral-8x7b", "--cluster", "dgx-h100", "--nodes", "4", "--strategy", "fsdp",
      "--micro-batch", "2"],  # a mixture of experts: notes
     {"arch": "mixtral-8x7b", "preset": "dgx-h100", "nodes": 4, "strategy": "fsdp",
      "micro_batch": 2}),
]  # fmt: skip


@pytest.mark.parametrize(("args", "axes"), QUESTIONS, ids=["arch", "count", "hsdp", "tok", "moe"])
def test_step_json_and_the_sweep_share_keys_and_numbers(args, axes):
    r = run("step", *args, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (row,) = sweep.sweep(kind="step", **axes).to_dict(orient="records")
    assert row.pop("error") == ""  # the sweep's own column: why a row was refused, "" if priced
    assert set(row) <= set(d), sorted(set(row) - set(d))  # every column, under its own name
    for key, value in row.items():
        if key == "notes":  # a list in the JSON (as memory --json's), one text in a table row
            # the row names the field (`arch`), the CLI's JSON the option (--arch)
            assert value.replace("`arch`", "--arch") == join_notes(d["notes"])
        elif isinstance(value, float):
            if math.isnan(value):  # a missing number; an integer's (group_size) is null in JSON
                assert d[key] is None or math.isnan(d[key]), key
            else:
                assert d[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert d[key] == value, key
    for col in ("memory_GB", "gpu_memory_GB", "band_note", "preset", "nodes", "micro_batch"):
        assert col in row  # the columns the JSON lacked are in the question
    # the bytes beside them are the same numbers
    assert d["memory_bytes"] == pytest.approx(d["memory_GB"] * 1e9, rel=1e-15)
    assert d["gpu_memory_bytes"] == pytest.approx(d["gpu_memory_GB"] * 1e9, rel=1e-15)


def test_the_moe_question_has_notes():
    """The notes comparison above is not vacuous: the mixture of experts has one."""
    d = json.loads(run("step", *QUESTIONS[-1][0], "--json").stdout)
    assert d["notes"] and isinstance(d["notes"], list)
