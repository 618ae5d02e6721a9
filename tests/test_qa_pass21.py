"""QA pass 21: one limit for a rank count in the formula layer, and the given activations'
size said back by ``costmodel memory --activations``."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel as cm
from tests._cli import run

RANKS_RULE = "ranks: must be a whole number in 1..1,000,000,000, got "


# --- the formula layer's ranks: the range global_batch, ddp_step and the CLI hold --------------
@pytest.mark.parametrize(
    "call",
    [
        lambda n: cm.allreduce_time(1e9, n, 50e9),  # the scalar fast path
        lambda n: cm.allreduce_time(1e9, np.array([8, n]), 50e9),  # the array path
        lambda n: cm.busbw_factor("all_reduce", n),
        lambda n: cm.global_batch(1, n),  # the range it already held, in the same words
    ],
)
def test_ranks_past_a_billion_are_refused_in_one_message(call):
    with pytest.raises(ValueError) as e:
        call(2e9)
    assert str(e.value).startswith(RANKS_RULE), str(e.value)


def test_a_billion_ranks_is_still_answered():
    """The bound itself is allowed (inclusive, as the CLI's --ranks): a ring over 1e9 ranks
    sends 2(N-1)/N M, just under 2 x 1 GB at 50 GB/s."""
    t = cm.allreduce_time(1e9, 1e9, 50e9)
    assert 0.0399 < t < 0.04
    assert cm.busbw_factor("all_reduce", 1e9) == pytest.approx(2.0, rel=1e-8)


def test_the_formula_layer_does_not_load_the_limits_at_import():
    """The formula modules import _limits inside a function (docs/design.md section 1): a
    fresh interpreter importing costmodel.collectives alone loads neither it nor pydantic."""
    import subprocess
    import sys

    code = (
        "import sys, costmodel.collectives as c; "
        "print('costmodel._limits' in sys.modules, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


# --- memory --activations: the size given, said back -------------------------------------------
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--params", "7B", "--activations", "12GB"], "activations: 12 GB given"),
        (["--arch", "llama-3.1-8b", "--activations", "12.5GB"], "activations: 12.5 GB given"),
    ],
)
def test_memory_says_the_activations_given(args, said):
    r = run("memory", *args)
    assert r.exit_code == 0, r.stdout
    assert said in r.stdout.splitlines()
    # and the total holds them: 12 GB more than without
    js = run("memory", *args, "--json")
    assert js.exit_code == 0
    import json

    data = json.loads(js.stdout)
    assert data["notes"][0] == said
    given = float(args[-1].removesuffix("GB")) * 1e9
    assert data["memory_parts_bytes"]["activations_bytes"] == pytest.approx(given)


def test_the_api_note_names_the_size_and_an_array_says_given():
    assert cm.training_memory(7e9, activations_bytes=3e9).activations_note == (
        "activations: 3 GB given"
    )
    many = cm.training_memory(7e9, activations_bytes=np.array([1e9, 2e9]))
    assert many.activations_note == "activations: given"  # each row's size is its own column


# --- memory --strategy all: every layout step --strategy all ranks, the sweep's rows -----------
def test_memory_sweep_strategy_all_is_the_advisors_list():
    """The memory sweep's ``strategy=all`` expands, per rank count, to
    ``candidate_layouts`` on the preset's node: fsdp without resharding and every hsdp group
    were missing (it gave ddp, zero1, zero2, fsdp and hsdp at one node)."""
    from costmodel.strategy import Layout
    from costmodel.strategy.advisor import candidate_layouts

    df = cm.sweep(kind="memory", params="7B", strategy="all", ranks="8,16", preset="dgx-h100")
    for ranks in (8, 16):
        want = [Layout(ranks=ranks, gpus_per_node=8, **k).name for k in candidate_layouts(ranks, 8)]
        assert df[df["ranks"] == ranks]["layout"].tolist() == want
    assert "fsdp (no reshard)" in want and "hsdp g=2" in want


def _json(*args: str) -> dict:
    import json

    r = run("memory", *args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize(
    "what", [("--params", "7B"), ("--arch", "llama-3.1-8b", "--recompute", "full")]
)
def test_memory_strategy_all_lists_each_layout_as_memory_strategy_name_sizes_it(what):
    """Each row of ``memory --strategy all`` is the memory of ``memory --strategy NAME`` for
    that layout (the group and resharding named), and the rows are the sweep's."""
    data = _json(*what, "--strategy", "all", "--nodes", "2", "--cluster", "dgx-h100")
    rows = data["layouts"]
    assert [r["layout"] for r in rows] == [
        "ddp", "zero1", "zero2", "fsdp", "fsdp (no reshard)", "hsdp g=2", "hsdp g=4", "hsdp g=8",
    ]  # fmt: skip
    for r in rows:
        extra = []
        if r["group_size"] is not None:
            extra += ["--group-size", str(r["group_size"])]
        if r["reshard_after_forward"] is False:
            extra += ["--no-reshard"]
        one = _json(*what, "--strategy", r["strategy"], "--ranks", "16", "--cluster", "dgx-h100",
                    *extra)  # fmt: skip
        assert one["layout"] == r["layout"]
        assert r["memory_GB"] * 1e9 == pytest.approx(one["memory_bytes"], rel=1e-12)
        assert r["fits"] is one["fits"]
    text = run("memory", *what, "--strategy", "all", "--ranks", "16", "--cluster", "dgx-h100")
    assert text.exit_code == 0
    assert any(line.startswith("fsdp (no reshard)") for line in text.stdout.splitlines())


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        ((), "--cluster"),  # no node to fit hsdp's groups in, no card
        (("--gpu-memory", "80GB"), "--cluster"),
        (("--cluster", "dgx-h100", "--group-size", "8"), "--group-size"),
        (("--cluster", "dgx-h100", "--no-reshard"), "--reshard"),
        (("--cluster", "dgx-h100", "--zero-stage", "3"), "--zero-stage"),
    ],
)
def test_memory_strategy_all_refuses_what_names_one_layout(extra, flag):
    from tests._cli import one_line_error

    r = run("memory", "--params", "7B", "--strategy", "all", "--ranks", "16", *extra)
    one_line_error(r, flag)


def test_memory_sweep_strategy_all_needs_a_preset():
    with pytest.raises(ValueError, match=r"^strategy: all .*preset"):
        cm.sweep(kind="memory", params="7B", strategy="all", ranks=16)
