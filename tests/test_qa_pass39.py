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
    # the defaults a layout runs (hsdp's one-node group, resharding) are no contradiction
    hsdp = cm.Layout(strategy="hsdp", ranks=16)
    kept = cm.strategy_step(8e9, nodes=2, layout=hsdp, group_size=8, reshard_after_forward=True)
    assert kept.layout_name == "hsdp g=8"


def test_a_layouts_ranks_are_not_replaced_by_the_clusters() -> None:
    """``layout=Layout(strategy="fsdp", ranks=64)`` on the default one node was priced on 8
    ranks (the layout's 64 silently replaced)."""
    lay = cm.Layout(strategy="fsdp", ranks=64)
    with pytest.raises(
        ValueError, match=r"^layout: its 64 ranks \(`ranks`\) are not the cluster's 8 GPUs"
    ):
        cm.strategy_step(8e9, layout=lay, **FAST)
    on_8 = cm.strategy_step(8e9, layout=lay, nodes=8, **FAST)
    assert on_8.ranks == 64
    assert on_8.step_time_s == cm.strategy_step(8e9, strategy="fsdp", nodes=8, **FAST).step_time_s
    # a Layout left at its one-node default is the cluster's count, as before
    assert cm.strategy_step(8e9, layout=cm.Layout(strategy="fsdp"), nodes=2, **FAST).ranks == 16
    four = cm.Layout(strategy="hsdp", gpus_per_node=4)  # one node of 4, not a count of 4
    assert cm.strategy_step(8e9, layout=four, nodes=2, gpus_per_node=4, **FAST).ranks == 8
    # a node size the Layout was given is not replaced by the cluster's either
    with pytest.raises(
        ValueError,
        match=r"^layout: its 4 GPUs per node \(`gpus_per_node`\) are not the cluster's 8",
    ):
        cm.strategy_step(8e9, layout=cm.Layout(strategy="hsdp", ranks=8, gpus_per_node=4), **FAST)


# -- a Cluster object's node count, read alike by the step and the advisor --


def test_the_advisor_ranks_a_cluster_objects_own_nodes_as_the_step_prices_them() -> None:
    """``strategy_step(cluster=cm.cluster("dgx-h100", nodes=4))`` prices 32 GPUs; the advisor
    given the same object ranked 8 (its ``nodes`` default replaced the cluster's 4)."""
    c = cm.cluster("dgx-h100", nodes=4)
    step = cm.strategy_step(8e9, strategy="fsdp", cluster=c, **FAST)
    advice = cm.advise_strategy(8e9, cluster=c, strategies=[{"strategy": "fsdp"}], band=False)
    assert step.ranks == advice.best.ranks == 32
    assert advice.best.step_time_s == step.step_time_s
    two = cm.advise_strategy(8e9, cluster=c, nodes=2, strategies=[{"strategy": "fsdp"}])
    assert two.best.ranks == 16  # a count given is the count priced


def test_an_hsdp_group_of_one_gpu_holds_one_unit_not_the_prefetched_pair() -> None:
    """``hsdp g=1`` gathers and reduce-scatters nothing (its step's all-gathers take 0 s); its
    memory held the prefetched pair of gathered units (1.41 GB for an 8B count), then nothing.
    FSDP2 on a shard group of one still copies each unit into its unsharded buffer (one at a
    time: no all-gather runs ahead) and its gradients into the reduce buffer, as fsdp on one
    rank."""
    from costmodel.strategy.layout import largest_pair_params, largest_unit_params

    step = cm.strategy_step(8e9, strategy="hsdp", group_size=1, nodes=2, **FAST)
    assert step.comm_by_kind_s["all_gather"] == step.comm_by_kind_s["reduce_scatter"] == 0.0
    held = largest_unit_params(8e9) * 2 + largest_pair_params(8e9) * 2  # bf16 both
    assert step.memory.parts()["gathered_units_bytes"] == pytest.approx(held, rel=1e-12)
    # the state is ddp's (nothing sharded), less ddp's bucket copy of the gradients
    ddp = cm.strategy_memory(cm.Layout(strategy="ddp", ranks=16), 8e9)
    state = ddp.total_bytes - ddp.parts()["buckets_bytes"]
    assert step.memory_bytes == pytest.approx(state + held, rel=1e-12)
    mem = cm.strategy_memory(cm.Layout(strategy="hsdp", ranks=16, group_size=1), 8e9)
    one = cm.strategy_memory(cm.Layout(strategy="fsdp", ranks=1), 8e9)
    assert mem.total_bytes == step.memory_bytes == one.total_bytes


# -- one range per input on every surface --


def test_a_measured_compute_time_has_scenarios_range_in_the_step() -> None:
    """``Scenario`` and ``--compute-time`` refuse a compute time above 1e6 s; the step priced
    ``compute_time_s=1e9`` (a step of 31 years)."""
    with pytest.raises(ValueError, match=r"^compute_time_s: must be a duration in \(0, 1e6\] s"):
        cm.Scenario(params=8e9, compute_time_s=1e9)
    with pytest.raises(
        ValueError, match=r"^compute_time_s: must be a duration in \(0, 1e6\] s, got 1000000000.0$"
    ):
        cm.strategy_step(8e9, compute_time_s=1e9, **FAST)
    assert cm.strategy_step(8e9, compute_time_s=1e6, **FAST).compute_s == 1e6


def test_a_timer_that_is_no_collective_timer_is_refused_in_one_line() -> None:
    """``timer="x"`` raised ``AttributeError: 'str' object has no attribute 'cluster'`` from
    inside the step."""
    with pytest.raises(ValueError, match=r"^timer: a CollectiveTimer .* or None, got 'x'$"):
        cm.strategy_step(8e9, timer="x", **FAST)


def test_the_advisor_lists_the_layouts_of_a_node_slice() -> None:
    """``advise_strategy(nodes=2, gpus_per_node=4)`` made its layouts on the whole nodes' 16
    ranks and let the step re-rank them: an "hsdp g=8" of 8 ranks (fsdp again) was listed, and
    ``costmodel step --strategy all --gpus-per-node 4`` lists the slice's groups only."""
    a = cm.advise_strategy(8e9, nodes=2, gpus_per_node=4, band=False)
    names = [s.layout_name for s in a.steps]
    assert sorted(names) == sorted(
        ["ddp", "zero1", "zero2", "fsdp", "fsdp (no reshard)", "hsdp g=2", "hsdp g=4"]
    )
    assert {s.ranks for s in a.steps} == {8}
    g4 = next(s for s in a.steps if s.layout_name == "hsdp g=4")
    step = cm.strategy_step(8e9, nodes=2, gpus_per_node=4, strategy="hsdp", band=False)
    assert g4.step_time_s == step.step_time_s


def test_a_gather_dtype_ddp_does_not_use_is_said() -> None:
    """``strategy_step(strategy="ddp", param_dtype="fp8")`` priced the bf16 step and said
    nothing (ddp all-gathers no parameters), as the bucket cap's note says it for fsdp."""
    fp8 = cm.strategy_step(8e9, strategy="ddp", param_dtype="fp8", **FAST)
    bf16 = cm.strategy_step(8e9, strategy="ddp", **FAST)
    assert fp8.step_time_s == bf16.step_time_s
    said = [n for n in fp8.notes if n.startswith("param_dtype: fp8 not applied to ddp")]
    assert len(said) == 1
    assert not any(n.startswith("param_dtype") for n in bf16.notes)
    zero1 = cm.strategy_step(8e9, strategy="zero1", param_dtype="fp8", **FAST)
    assert not any(n.startswith("param_dtype") for n in zero1.notes)


# -- the advisor refuses what it chooses itself --


def test_a_layout_given_to_the_advisor_is_refused_not_ranked_seven_times() -> None:
    """``advise_strategy(p, layout=Layout(strategy="fsdp"))`` replaced every candidate's layout
    with the one given: seven fsdp rows ranked against each other."""
    with pytest.raises(ValueError, match=r"^layout: advise_strategy ranks every layout"):
        cm.advise_strategy(8e9, layout=cm.Layout(strategy="fsdp"), band=False)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("strategy", "fsdp"), ("group_size", 4), ("reshard_after_forward", False)],
)
def test_a_layout_keyword_given_to_the_advisor_is_refused(keyword: str, value: object) -> None:
    """``advise_strategy(p, strategy="fsdp")`` (or an hsdp group, or no resharding) ranked every
    layout and dropped the keyword without a word; ``costmodel step --strategy all`` refuses
    ``--group-size`` so."""
    with pytest.raises(ValueError, match=rf"^{keyword}: advise_strategy ranks every layout"):
        cm.advise_strategy(8e9, band=False, **{keyword: value})
    with pytest.raises(ValueError, match=rf"^{keyword}: advise_strategy_nodes ranks"):
        cm.advise_strategy_nodes(8e9, nodes=(1, 2), band=False, **{keyword: value})


@pytest.mark.parametrize(
    ("strategies", "said"),
    [
        ([{"strategy": "fsdp", "ranks": 64}], r"^strategies: 'ranks' in .* is the cluster's"),
        ([{"strategy": "fsdp", "gpus_per_node": 4}], r"^strategies: 'gpus_per_node' in"),
        ([], r"^strategies: an empty list"),
    ],
)
def test_the_advisors_strategies_are_checked_in_one_line(strategies: list, said: str) -> None:
    """A ``ranks`` in an entry raised ``make_layout() got multiple values for keyword argument
    'ranks'``; an empty list ranked every layout, as None does."""
    with pytest.raises(ValueError, match=said):
        cm.advise_strategy(8e9, strategies=strategies, band=False)


def test_a_timer_given_to_the_advisor_is_refused_in_one_line() -> None:
    """``advise_strategy(timer="x")`` raised ``AttributeError`` from inside the steps (a real
    timer replaced the one of each hsdp group size)."""
    with pytest.raises(ValueError, match=r"^timer: advise_strategy makes one per group size"):
        cm.advise_strategy(8e9, timer="x", band=False)


def test_fit_suggestions_refuses_a_layout_it_would_change() -> None:
    """``fit_suggestions(70e9, layout=Layout(strategy="ddp"))`` offered only larger cards: each
    sharding change's strategy lost to the layout given (now refused by the step, and dropped
    with the change), so zero1..fsdp, which fit, were never offered."""
    with pytest.raises(ValueError, match=r"^layout: fit_suggestions changes the layout"):
        cm.fit_suggestions(70e9, layout=cm.Layout(strategy="ddp"))
    kinds = {c.change for c in cm.fit_suggestions(70e9, strategy="ddp").changes}
    assert "fsdp" in kinds
