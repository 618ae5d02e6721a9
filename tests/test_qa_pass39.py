"""QA pass 39: the Python API as a notebook user reaches it (``import costmodel as cm``), on the
sharded data-parallel family (ddp, zero1, zero2, fsdp, hsdp), the communication dtypes, the
step's memory beside ``strategy_memory``'s, and the inputs a notebook passes (numpy scalars,
names, booleans). Each test here failed before the fix it pins (CHANGELOG, Unreleased).
"""

from __future__ import annotations

import pytest

import costmodel as cm

FAST = {"band": False, "timeline": False}


# -- the communication dtypes are what-ifs on the network: the calibrated compute keeps still --


def test_fp8_gathers_are_faster_than_bf16_on_one_node() -> None:
    """An fp8 all-gather moves half a bf16 one's bytes; on one node the compute was calibrated
    on the layout's own gather dtype, so the step came back as the bf16 one's (0.2 us slower),
    and an fp32 gather's as fast."""
    steps = {
        d: cm.strategy_step(8e9, strategy="fsdp", param_dtype=d, **FAST)
        for d in ("fp32", "bf16", "fp8")
    }
    assert steps["fp8"].compute_s == steps["bf16"].compute_s == steps["fp32"].compute_s
    assert steps["fp8"].step_time_s < steps["bf16"].step_time_s < steps["fp32"].step_time_s


# -- strategy_memory reads params as strategy_step does --


def _lay(strategy: str = "fsdp", ranks: int = 8) -> cm.Layout:
    return cm.Layout(strategy=strategy, ranks=ranks)


def test_strategy_memory_refuses_a_count_that_is_not_the_architectures() -> None:
    """``strategy_memory(lay, 7e9, arch="llama-3.1-8b")`` dropped the 7e9 and sized the 8.03B
    model; ``strategy_step`` and ``training_memory`` refuse the two counts."""
    with pytest.raises(ValueError, match=r"^params: 7,000,000,000 differs from llama-3.1-8b's"):
        cm.strategy_memory(_lay(), 7e9, arch="llama-3.1-8b")
    p = cm.load_arch("llama-3.1-8b").params  # its own count beside it is the same question
    same = cm.strategy_memory(_lay(), p, arch="llama-3.1-8b")
    assert same.total_bytes == cm.strategy_memory(_lay(), arch="llama-3.1-8b").total_bytes


def test_strategy_memory_reads_a_name_given_as_params() -> None:
    """``strategy_step("llama-3.1-8b")`` and ``training_memory("llama-2-7b")`` read a name as
    the architecture; ``strategy_memory(lay, "llama-3.1-8b")`` said "expected a number"."""
    by_name = cm.strategy_memory(_lay(), "llama-3.1-8b")
    assert by_name.total_bytes == cm.strategy_memory(_lay(), arch="llama-3.1-8b").total_bytes
    step = cm.strategy_step("llama-3.1-8b", strategy="fsdp", **FAST)
    assert step.memory_bytes == by_name.total_bytes
    with pytest.raises(ValueError, match=r"params=7e\+09 \(cm.parse_count\('7B'\)\)"):
        cm.strategy_memory(_lay(), "7B")


@pytest.mark.parametrize("flag", [True, False])
def test_a_boolean_is_no_parameter_count(flag: bool) -> None:
    """``strategy_step(True)`` priced a model of one parameter (``float(True)``); the memory
    of the same layout refuses it, so the step now says the same line."""
    with pytest.raises(ValueError, match=r"^params: expected a number, got (True|False)$"):
        cm.strategy_memory(_lay(), flag)
    with pytest.raises(ValueError, match=r"^params: expected a number, got (True|False)$"):
        cm.strategy_step(flag, strategy="fsdp", **FAST)


# -- a Layout given to the step is the layout priced, or refused --


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("param_dtype", "fp8"),
        ("strategy", "hsdp"),
        ("comm_contention", 0.5),
        ("grad_dtype", "fp32"),
    ],
)
def test_an_option_beside_a_layout_that_contradicts_it_is_refused(
    option: str, value: object
) -> None:
    """The layout won: ``param_dtype="fp8"`` beside ``layout=Layout(strategy="fsdp")`` priced
    bf16 gathers and said nothing."""
    lay = cm.Layout(strategy="fsdp", ranks=8)
    with pytest.raises(ValueError, match=rf"^{option}: .* contradicts the layout's"):
        cm.strategy_step(8e9, layout=lay, **{option: value}, **FAST)
    same = cm.strategy_step(8e9, layout=lay, strategy="fsdp", param_dtype="bf16", **FAST)
    assert same.step_time_s == cm.strategy_step(8e9, strategy="fsdp", **FAST).step_time_s


def test_a_layouts_ranks_are_not_replaced_by_the_clusters() -> None:
    """``layout=Layout(strategy="fsdp", ranks=64)`` on the default one node was priced on 8
    ranks (the layout's 64 silently replaced)."""
    lay = cm.Layout(strategy="fsdp", ranks=64)
    with pytest.raises(ValueError, match=r"^layout: ranks=64 is not the cluster's 8 GPUs"):
        cm.strategy_step(8e9, layout=lay, **FAST)
    on_8 = cm.strategy_step(8e9, layout=lay, nodes=8, **FAST)
    assert on_8.ranks == 64
    assert on_8.step_time_s == cm.strategy_step(8e9, strategy="fsdp", nodes=8, **FAST).step_time_s
