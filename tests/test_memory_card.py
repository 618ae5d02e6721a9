"""One default card: none. ``costmodel memory`` gives a verdict (``fits``, ``gpu_memory_GB``)
only against a card given (``--gpu-memory`` or ``--cluster``), as a memory sweep row has
``fits`` only with ``gpu_memory`` or ``preset`` and ``costmodel step`` only with ``--cluster``.
``memory --arch X`` checked against an H100 that nobody named, while the same question asked of
the sweep had no verdict."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from tests._cli import run

VERDICT = ("fits", "gpu_memory_GB", "gpu_memory_bytes", "max_params", "min_ranks", "gpu")

# (CLI options, sweep axes): the same question, with no card
QUESTIONS = [
    (["--arch", "llama-3.1-8b"], {"arch": "llama-3.1-8b"}),
    (["--arch", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64"],
     {"arch": "llama-3.1-70b", "zero_stage": 3, "ranks": 64}),
    (["--params", "7B"], {"params": "7B"}),
]  # fmt: skip


@pytest.mark.parametrize(("args", "axes"), QUESTIONS, ids=["arch", "arch-zero3", "count"])
def test_no_card_no_verdict_on_both(args, axes):
    r = run("memory", *args, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (row,) = cm.sweep(kind="memory", **axes).to_dict(orient="records")
    for key in VERDICT:
        assert key not in d, key
        assert key not in row, key
    assert d["memory_GB"] == pytest.approx(row["memory_GB"], rel=1e-12)
    text = run("memory", *args).stdout
    assert "give --gpu-memory (e.g. 80GB) or --cluster NAME for the verdict" in text
    assert "(default)" not in text


@pytest.mark.parametrize("card", [["--gpu-memory", "80GB"], ["--cluster", "dgx-h100"]])
def test_a_card_given_gives_the_verdict_on_both(card):
    axes = {"gpu_memory": "80GB"} if card[0] == "--gpu-memory" else {"preset": "dgx-h100"}
    d = json.loads(run("memory", "--arch", "llama-3.1-8b", *card, "--json").stdout)
    (row,) = cm.sweep(kind="memory", arch="llama-3.1-8b", **axes).to_dict(orient="records")
    assert d["fits"] == row["fits"]
    assert d["gpu_memory_GB"] == pytest.approx(row["gpu_memory_GB"], rel=1e-15)


def test_step_without_a_cluster_has_no_card_either():
    """The rest of the CLI: the one-link step prices no memory, so it has no verdict."""
    r = run("step", "--arch", "llama-3.1-8b", "--compute-time", "400ms", "--ranks", "8",
            "--bandwidth", "50GB/s", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert not set(VERDICT) & set(d)
