"""A notebook user's QA pass 36 of ``import costmodel as cm``: each test failed before its fix.

Found and fixed here:

- ``cm.fit_suggestions(arch, cluster=cm.cluster("dgx-h100", nodes=4))`` priced its step on the
  cluster's 4 nodes but counted its changes from ``nodes=1``: more GPUs started at "2 nodes"
  and a larger card was priced on 8 GPUs, not the job's 32 (``nodes=None`` raised a
  TypeError); it now gives the advice of ``cluster="dgx-h100", nodes=4``;
- the activation recipe's ``sequence_length`` and ``micro_batch``
  (``Architecture.activation_bytes``, ``training_memory(arch=...)``) named three ranges for one
  field: ``>= 1`` (for 0), ``[1, 1e12]`` (for 2.5 or 1e300, past the real limit) and
  ``1..100,000,000`` (for 1e9); every refusal now says the CLI's range;
- ``ddp_step``'s one link took what ``step --bandwidth/--latency`` refuse: a bare
  ``bandwidth_bytes_per_s=50`` (meant as 50 GB/s) priced a 551-million-second step, a 5 s
  latency was taken, and 1e-300 B/s printed numpy's overflow warnings before its error;
- ``cm.min_ranks(30e9, 1e-300)`` raised Python's ``OverflowError`` (saying the fewest ranks,
  past a float's range), which the README says no call lets escape;
- ``cm.advise_strategy`` and ``cm.advise_strategy_nodes`` with ``cluster=None`` (or a number)
  raised ``AttributeError: 'NoneType' object has no attribute 'nodes'``;
  ``cm.strategy_step(gpus_per_node=np.array([4, 8]))`` numpy's "truth value ... ambiguous";
- ``cm.parse_rate(1e300)`` (``parse_duration``, ``parse_count``) said "must be a finite rate",
  of a finite number: the bound it passed is said now;
- a measured step time of 0 said "must be a finite number > 0 s", one of 2e6 s "(0, 1e6] s";
- ``cm.predict_all_algorithms`` over an empty list of sizes raised pandas' IndexError;
- ``cm.Scenario(arch=cm.load_arch(...), cluster=cm.cluster(...))`` said "Input should be a
  valid string": a preset's object is taken as its name now.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import costmodel as cm
from costmodel._limits import LIMITS

# --- fit_suggestions on a Cluster object -------------------------------------------------------


def test_fit_suggestions_on_a_multi_node_cluster_object_counts_from_its_nodes() -> None:
    """The same question two ways (a preset name and nodes=4, or the 4-node Cluster) gives
    the same changes: more GPUs past 4 nodes, a larger card on the job's 32 GPUs."""
    c4 = cm.cluster("dgx-h100", nodes=4)
    by_object = cm.fit_suggestions("llama-3.1-70b", cluster=c4, max_nodes=64)
    by_name = cm.fit_suggestions("llama-3.1-70b", cluster="dgx-h100", nodes=4, max_nodes=64)
    assert by_object.base.layout.ranks == 32
    assert by_object.as_dict() == by_name.as_dict()
    for ch in by_object.changes:
        if ch.kind == "larger_card":
            assert ch.step.layout.ranks == 32, ch.change
        if ch.kind == "more_gpus":
            assert ch.updates["nodes"] > 4, ch.change


def test_fit_suggestions_with_nodes_none_is_the_clusters_own_count() -> None:
    """``nodes=None`` (as strategy_step takes it: the preset's own) raised a TypeError."""
    none = cm.fit_suggestions("llama-3.1-70b", nodes=None, max_nodes=16)
    one = cm.fit_suggestions("llama-3.1-70b", nodes=1, max_nodes=16)
    assert none.as_dict() == one.as_dict()


# --- the activation recipe's ranges -------------------------------------------------------------

_SEQ = "sequence_length: must be a whole number in 1..100,000,000 tokens, got "
_MB = "micro_batch: must be a whole number in 1..1,000,000, got "


@pytest.mark.parametrize("bad", [0, -1, 2.5, math.nan, 1e300, 10**9, None, "4k", True])
def test_an_activation_recipes_counts_are_refused_in_the_one_cli_range(bad: object) -> None:
    """0 said ">= 1", 2.5 and 1e300 "[1, 1e12]" and 1e9 "1..100,000,000": one field, three
    ranges, two of them not the one it holds. Every refusal now says --seq's (--micro-batch's)."""
    a = cm.load_arch("llama-3.1-8b")
    assert LIMITS["sequence_length"].rule in _SEQ and LIMITS["micro_batch"].rule in _MB
    with pytest.raises(ValueError) as err:
        a.activation_bytes(bad, 1)  # type: ignore[arg-type]
    assert str(err.value) == _SEQ + repr(bad)
    with pytest.raises(ValueError) as err:
        a.activation_bytes(4096, bad)  # type: ignore[arg-type]
    assert str(err.value) == _MB + repr(bad)
    with pytest.raises(ValueError) as err:
        cm.training_memory(arch="llama-3.1-8b", sequence_length=bad)  # type: ignore[arg-type]
    assert str(err.value) == _SEQ + repr(bad)


def test_an_activation_recipes_numbers_in_range_still_size_it() -> None:
    a = cm.load_arch("llama-3.1-8b")
    same = {a.activation_bytes(s, 2) for s in (4096, 4096.0, np.int64(4096), np.array(4096))}
    assert len(same) == 1
    assert a.activation_bytes(1, 1) > 0
    assert a.activation_bytes(100_000_000, 1_000_000) > 0


# --- ddp_step's one link in the CLI's ranges ----------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "field", "limit"),
    [
        ({"bandwidth_bytes_per_s": 50}, "bandwidth_bytes_per_s", "bandwidth"),
        ({"bandwidth_bytes_per_s": 1e-300}, "bandwidth_bytes_per_s", "bandwidth"),
        ({"bandwidth_bytes_per_s": 2e15}, "bandwidth_bytes_per_s", "bandwidth"),
        ({"bandwidth_bytes_per_s": 0}, "bandwidth_bytes_per_s", "bandwidth"),
        ({"latency_s": 5.0}, "latency_s", "latency"),
        ({"latency_s": -1e-6}, "latency_s", "latency"),
        ({"latency_s": math.nan}, "latency_s", "latency"),
    ],
)
def test_ddp_steps_link_is_refused_where_step_bandwidth_and_latency_refuse_it(
    kw: dict[str, float], field: str, limit: str
) -> None:
    """``costmodel step --bandwidth 50`` is refused (a bare 50 is 50 B/s); the API priced the
    same one-link step at 551 million seconds, and 1e-300 B/s printed RuntimeWarnings."""
    args = {"compute_time_s": 0.4, "bandwidth_bytes_per_s": 50e9, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings are no refusal
        with pytest.raises(ValueError) as err:
            cm.ddp_step(7e9, 64, **args)
    assert str(err.value) == f"{field}: must be {LIMITS[limit].rule}, got {kw[field]!r}"


def test_ddp_steps_link_in_range_answers_as_before() -> None:
    """The lesson's numbers, a 0-d array and the range's ends still answer."""
    s = cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    assert round(s.comm_s, 3) == 0.551
    z = cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=np.array(50e9))
    assert z.step_time_s == s.step_time_s
    for bw, lat in ((1e6, 1.0), (1e15, 0.0)):
        t = cm.ddp_step(7e9, 8, compute_time_s=0.4, bandwidth_bytes_per_s=bw, latency_s=lat)
        assert math.isfinite(t.step_time_s)


def test_a_step_given_its_own_collective_times_has_no_link_to_check() -> None:
    """With ``allreduce_time_fn`` the bandwidth is not read (Scenario's road): not refused."""
    s = cm.ddp_step(7e9, 64, compute_time_s=0.4, allreduce_time_fn=lambda b: np.asarray(b) / 50e9)
    assert s.comm_s > 0


# --- min_ranks past a float's range -------------------------------------------------------------


@pytest.mark.parametrize("memory", [1e-300, 5e-324])
def test_min_ranks_past_a_floats_range_is_one_value_error(memory: float) -> None:
    """The fewest ranks (4.8e+311) overflowed float() in the message: OverflowError. A memory
    below 1 B is now refused by the GPU-memory limit every entry point holds (1 B..16 TiB)."""
    with pytest.raises(ValueError, match=r"^memory_bytes: must be a GPU memory in 1 B\.\.16 TiB"):
        cm.min_ranks(30e9, memory)


def test_min_ranks_message_keeps_its_short_form_below_a_floats_range() -> None:
    with pytest.raises(ValueError, match=r"fit, 1\.6e\+16, are past"):
        cm.min_ranks(1e15, 1.0)


# --- a cluster argument that is no cluster ------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 2, 1.5, ["dgx-h100"]])
@pytest.mark.parametrize("fn", ["advise_strategy", "advise_strategy_nodes"])
def test_the_advisor_refuses_a_cluster_that_is_no_cluster_in_one_line(fn: str, bad: object) -> None:
    """``strategy_step`` said this already; the advisor read ``.nodes`` of it."""
    kw = {"nodes": (1, 2)} if fn == "advise_strategy_nodes" else {}
    with pytest.raises(ValueError) as err:
        getattr(cm, fn)("llama-3.1-8b", cluster=bad, **kw)
    assert str(err.value) == (
        "cluster: a cluster preset name or a Cluster (cm.cluster('dgx-h100')), got "
        f"{bad!r}; the node count is `nodes`"
    )


def test_strategy_step_refuses_an_array_of_gpus_per_node_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^gpus_per_node: one count per call"):
        cm.strategy_step(arch="llama-3.1-8b", gpus_per_node=np.array([4, 8]))
    a = cm.strategy_step(arch="llama-3.1-8b", gpus_per_node=np.array(4))
    b = cm.strategy_step(arch="llama-3.1-8b", gpus_per_node=4)
    assert a.layout.ranks == b.layout.ranks == 4 and a.step_time_s == b.step_time_s


# --- the parsers' upper bound ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "words"),
    [
        (cm.parse_rate, "bandwidth: must be a finite rate in B/s > 0 and below 1e+300"),
        (cm.parse_duration, "duration: must be a finite duration in s >= 0 and below 1e+300"),
        (cm.parse_count, "count: must be a finite number >= 0 and below 1e+300"),
    ],
)
@pytest.mark.parametrize("value", [1e300, "1e300", "2e400"])
def test_a_parsers_number_past_its_bound_is_said_to_be_past_it(parse, words, value) -> None:
    """1e300 is finite; it was refused as "must be a finite ...", which it is."""
    with pytest.raises(ValueError) as err:
        parse(value)
    assert str(err.value) == f"{words}, got {value!r}"
    assert parse(1e299) == 1e299


# --- a step time's range ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, 2e6])
def test_a_step_time_is_refused_in_one_range(bad: float) -> None:
    """A measured step time of 0 said "must be a finite number > 0 s" and one of 2e6 s "a
    duration in (0, 1e6] s": one field, two ranges. Both now say `train --step-time`'s."""
    rule = LIMITS["step_time"].rule
    r = cm.Scenario(params=7e9, nodes=2, strategy="fsdp").evaluate()
    with pytest.raises(ValueError) as err:
        r.training_cost(2e12, measured_step_time_s=bad)
    assert str(err.value) == f"measured_step_time_s: must be {rule}, got {bad!r}"
    with pytest.raises(ValueError) as err:
        cm.training_cost(2e12, tokens_per_step=4e6, step_time_s=bad, ranks=8)
    assert str(err.value) == f"step_time_s: must be {rule}, got {bad!r}"
    assert cm.training_cost(2e12, tokens_per_step=4e6, step_time_s=1e6, ranks=8).steps == 500_000


# --- an empty list of sizes for every algorithm ---------------------------------------------------


@pytest.mark.parametrize("sizes", [[], np.array([])])
def test_every_algorithm_over_no_sizes_is_an_empty_comparison(sizes) -> None:
    """``predict_collective`` answers an empty list with an empty prediction; the comparison
    of every algorithm raised pandas' "IndexError: single positional indexer is out-of-bounds"
    (it read each algorithm's name from its first row)."""
    r = cm.predict_all_algorithms("all_reduce", sizes, "dgx-h100", nodes=2)
    assert len(r.frame) == 0 and len(r.crossovers) == 0 and r.verdicts == ()
    assert dict(r.unavailable)["nvls"] == "multi-node NVLS needs CollNet (IB SHARP)"
    assert r.to_dict()["results"] == []
    full = cm.predict_all_algorithms("all_reduce", [2**20, 2**34], "dgx-h100", nodes=8)
    assert full.available == ("tree", "ring", "nvls_tree")


# --- a Scenario given the objects the step functions take ----------------------------------------


def test_a_scenario_takes_a_preset_architecture_and_cluster_as_their_names() -> None:
    """``cm.Scenario(arch=cm.load_arch(...))`` and ``cluster=cm.cluster(...)`` said "Input
    should be a valid string" (and ``load_arch``'s own refusal lists ``cm.Architecture`` among
    what ``arch`` takes): a preset's object is its name, with its nodes, slice and power cap."""
    by_object = cm.Scenario(
        arch=cm.load_arch("llama-3.1-8b"),
        cluster=cm.cluster("dgx-h100", nodes=2, gpus_per_node=4, power_limit_w=500),
    )
    by_name = cm.Scenario(
        arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, gpus_per_node=4, power_limit_w=500
    )
    assert by_object == by_name
    assert by_object.evaluate().step_time_s == by_name.evaluate().step_time_s
    path = "tests/data/hf_configs/mistral-7b/config.json"
    mine = cm.Scenario(arch=cm.load_arch(path))
    assert mine.params == cm.Scenario(arch=path).params == 7_241_732_096


def test_a_scenario_refuses_an_object_it_cannot_name_in_one_line() -> None:
    a = cm.load_arch("llama-3.1-8b").model_copy(update={"layers": 2})
    with pytest.raises(cm.ScenarioError, match=r"^arch: an architecture name .* its path$"):
        cm.Scenario(arch=a)
    with pytest.raises(cm.ScenarioError) as err:
        cm.Scenario(params=7e9, cluster=cm.cluster("dgx-h100", nodes=2), nodes=4)
    assert str(err.value) == "nodes: 4 contradicts the Cluster given (nodes 2); give one of them"
    with pytest.raises(cm.ScenarioError) as err:
        cm.Scenario(params=7e9, cluster=None)
    assert str(err.value) == (
        "cluster: a cluster preset name (`cm.presets.names('cluster')`), got None"
    )


def test_with_changes_takes_a_cluster_object_as_the_whole_cluster() -> None:
    """B's Cluster sets B's nodes, slice and cap: with A's nodes kept beside it, it was refused
    as a contradiction (or A's slice and cap were lent to B's cluster)."""
    a = cm.Scenario(arch="llama-3.1-8b", nodes=2, gpus_per_node=4, power_limit_w=500)
    b = a.with_changes(cluster=cm.cluster("dgx-a100", nodes=4))
    assert b == a.with_changes(cluster="dgx-a100", nodes=4, gpus_per_node=None, power_limit_w=None)
    with pytest.raises(ValueError, match=r"^nodes: 2 contradicts the Cluster given \(nodes 4\)"):
        a.with_changes(cluster=cm.cluster("dgx-a100", nodes=4), nodes=2)
