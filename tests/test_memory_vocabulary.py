"""One memory question, one vocabulary: ``costmodel memory --json`` names each quantity as the
memory sweep's columns do (``ranks``, ``memory_GB``, ``lesson_memory_GB``, ``buffers_GB``,
``<part>_GB``, ``gpu_memory_GB``, ``fits``, ``notes``), in the same units, beside the bytes
``step --json`` writes (``memory_bytes``, ``memory_parts_bytes``, ``gpu_memory_bytes``). It
wrote ``dp_ranks``, ``total_bytes``, ``lesson_total_bytes`` and ``parts_bytes``, so a script
that read one could not read the other."""

from __future__ import annotations

import json
import math

import pytest

import costmodel as cm
from costmodel.sweep.evaluate import join_notes
from tests._cli import run

# the same question three ways: (CLI options, sweep axes)
QUESTIONS = [
    (
        ["--params", "70B", "--zero-stage", "3", "--ranks", "16", "--cluster", "dgx-h100"],
        {"params": "70B", "zero_stage": 3, "ranks": 16, "preset": "dgx-h100"},
    ),
    (
        ["--arch", "llama-3.1-8b", "--zero-stage", "1", "--ranks", "8", "--seq", "8192",
         "--cluster", "dgx-h100"],
        {"arch": "llama-3.1-8b", "zero_stage": 1, "ranks": 8, "sequence_length": 8192,
         "preset": "dgx-h100"},
    ),
    (
        ["--params", "7B", "--zero-stage", "0", "--ranks", "8", "--gpu-memory", "80GB"],
        {"params": "7B", "zero_stage": 0, "ranks": 8, "gpu_memory": "80GB"},
    ),
    (
        ["--arch", "deepseek-v3", "--zero-stage", "3", "--ranks", "64", "--recompute", "full",
         "--gpu-memory", "141GB"],
        {"arch": "deepseek-v3", "zero_stage": 3, "ranks": 64, "recompute": "full",
         "gpu_memory": "141GB"},
    ),
]  # fmt: skip


def _cli(args: list[str]) -> dict:
    r = run("memory", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize(("args", "axes"), QUESTIONS, ids=["count", "arch", "card", "moe"])
def test_memory_json_and_the_sweep_share_keys_and_numbers(args, axes):
    d = _cli(args)
    (row,) = cm.sweep(kind="memory", **axes).to_dict(orient="records")
    assert set(row) <= set(d), sorted(set(row) - set(d))  # every column, under its own name
    for key, value in row.items():
        if key == "notes":  # a list in the JSON (as step --json's), one text in a table row
            # the row names the field (`arch`), the CLI's JSON the option (--arch)
            assert value.replace("`arch`", "--arch") == join_notes(d["notes"])
        elif isinstance(value, float) and math.isnan(value):  # a null integer (group_size)
            assert d[key] is None, key
        elif isinstance(value, float):
            assert d[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert d[key] == value, key
    assert "fits" in row and "gpu_memory_GB" in row  # the card is part of the question
    # the bytes beside them are the same numbers
    assert d["memory_bytes"] == pytest.approx(d["memory_GB"] * 1e9, rel=1e-15)
    assert d["lesson_memory_bytes"] == pytest.approx(d["lesson_memory_GB"] * 1e9, rel=1e-15)
    assert d["gpu_memory_bytes"] == pytest.approx(d["gpu_memory_GB"] * 1e9, rel=1e-15)
    for part, b in d["memory_parts_bytes"].items():
        if part not in ("buckets_bytes", "gathered_units_bytes"):
            assert d[part.removesuffix("_bytes") + "_GB"] * 1e9 == pytest.approx(b, rel=1e-15)
    # the old names are gone: one name per quantity
    for old in ("dp_ranks", "total_bytes", "lesson_total_bytes", "parts_bytes", "activations"):
        assert old not in d


def test_memory_json_names_as_step_json_names():
    """The bytes keys are ``step --json``'s, for the same layout (ZeRO-3 = fsdp)."""
    d = _cli(
        ["--arch", "llama-3.1-8b", "--zero-stage", "3", "--ranks", "8", "--cluster", "dgx-h100"]
    )
    r = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "fsdp",
            "--json")  # fmt: skip
    step = json.loads(r.stdout)
    for key in ("ranks", "memory_bytes", "gpu_memory_bytes", "fits", "strategy"):
        assert d[key] == step[key], key
    assert d["memory_parts_bytes"] == pytest.approx(step["memory_parts_bytes"], rel=1e-12)
