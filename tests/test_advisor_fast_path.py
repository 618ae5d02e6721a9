"""The advisor's fast path gives the numbers of the straightforward one, bit for bit.

The step reads each task list as columns (a kept structure and one step's numbers), schedules
the band's fast and slow ends in the nominal schedule's pass, and the advisor's predictions
reuse clusters, plans and one-node floors kept between node counts and tables. Here each of
those is compared exactly with the plain road: a tuple of ``Task`` scheduled once per work
column, and one ``strategy_step`` per configuration with its own predictions.
"""

from __future__ import annotations

import pytest

from costmodel.strategy import comm
from costmodel.strategy.advisor import advise
from costmodel.strategy.comm import PredictionCache
from costmodel.strategy.engine import TaskList, columns, run
from costmodel.strategy.step import _band_works, strategy_step
from tests._compare import assert_same

STRATEGIES = [
    {"strategy": "ddp"},
    {"strategy": "zero1"},
    {"strategy": "zero2"},
    {"strategy": "fsdp"},
    {"strategy": "fsdp", "reshard_after_forward": False},
    {"strategy": "hsdp"},
]


def _exact(a: object, b: object, where: str) -> None:
    assert_same(a, b, where)


def _task_lists(strategy: dict[str, object]) -> list[tuple[TaskList, object]]:
    """The final and a non-final micro-batch's task lists of a step, as the step builds them."""
    from costmodel.strategy import step as S

    lists: list[tuple[TaskList, object]] = []
    real = S._band_works

    def keep(tasks, timer):  # the lists the step schedules, with their timer
        if isinstance(tasks, TaskList):
            lists.append((tasks, timer))
        return real(tasks, timer)

    S._band_works = keep
    try:
        strategy_step(
            arch="llama-3.1-8b", nodes=2, accumulation=2, no_sync=False, timeline=False, **strategy
        )
    finally:
        S._band_works = real
    return lists


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: str(sorted(s.values(), key=str)))
@pytest.mark.parametrize("contention", [0.0, 0.5])
def test_columns_and_band_pass_are_the_tuple_road(strategy, contention):
    lists = _task_lists(strategy)
    assert len(lists) == 2  # the final and the non-final micro-batch
    for tl, timer in lists:
        plain = tuple(tl)  # Task objects: the columns are derived from them
        assert columns(plain) == columns(tl)
        fast, slow = _band_works(tl, timer)  # type: ignore[misc]
        assert (fast, slow) == _band_works(plain, timer)  # type: ignore[arg-type]
        both = run(tl, contention, check=False, band_work_s=(fast, slow))
        alone = run(plain, contention)
        assert both.starts_s.tolist() == alone.starts_s.tolist()
        assert both.ends_s.tolist() == alone.ends_s.tolist()
        assert (both.step_s, both.compute_s, both.comm_s_by_kind) == (
            alone.step_s,
            alone.compute_s,
            alone.comm_s_by_kind,
        )
        ends = (run(plain, contention, fast).step_s, run(plain, contention, slow).step_s)
        assert both.band_step_s == ends


def test_advisor_table_is_the_per_configuration_steps_exactly():
    """Two tables through one advisor road (predictions shared by node counts, kept work
    found again by the second table) and each configuration alone: every field equal."""
    tables = []
    for _ in range(2):
        cache = PredictionCache()
        rows = {}
        for nodes in (1, 2, 3):
            s = [x for x in STRATEGIES if x["strategy"] != "hsdp" or nodes > 1]
            a = advise(arch="llama-3.1-8b", nodes=nodes, strategies=s, predictions=cache)
            rows[nodes] = {st.layout.name: st.as_dict() for st in a.steps}
        tables.append(rows)
    _exact(tables[0], tables[1], "second table")
    for nodes, by_name in tables[0].items():
        for kw in STRATEGIES:
            if kw["strategy"] == "hsdp" and nodes == 1:
                continue
            alone = strategy_step(arch="llama-3.1-8b", nodes=nodes, timeline=False, **kw)
            _exact(by_name[alone.layout.name], alone.as_dict(), f"{nodes} nodes {kw}")


def test_interned_clusters_are_equal_ones_only():
    a, b = PredictionCache(), PredictionCache()
    assert a.cluster("dgx-h100", 4) is b.cluster("dgx-h100", 4)  # kept work found again
    c = a.cluster("dgx-h100", 4)
    other = c.model_copy(update={"name": "edited"})
    assert comm._interned(other) is not c and comm._interned(other) == other
    assert a.cluster(other, 2).name == "edited" and a.cluster(other, 2).nodes == 2


def _count_model_evaluations(monkeypatch) -> list[str]:
    """From now on, the op of every realistic-model evaluation (``realistic_rows`` call)."""
    import costmodel.realistic as R

    calls: list[str] = []
    real = R.realistic_rows

    def counting(op, *a, **k):
        calls.append(op)
        return real(op, *a, **k)

    monkeypatch.setattr(R, "realistic_rows", counting)
    return calls


def test_a_table_evaluates_each_one_node_floor_once(monkeypatch):
    """The multi-node rows' floor (the same op on one node) is kept per table: over 1-4 nodes
    the job clusters of 2, 3 and 4 nodes share one floor per op (the same sizes)."""

    def table() -> PredictionCache:
        cache = PredictionCache()
        for nodes in (1, 2, 3, 4):
            s = [x for x in STRATEGIES if x["strategy"] != "hsdp" or nodes > 1]
            advise(arch="llama-3.1-8b", nodes=nodes, strategies=s, predictions=cache)
        return cache

    table()  # the work kept across tables (compute calibration, plans)
    calls = _count_model_evaluations(monkeypatch)
    cache = table()
    assert len(cache._floors) == 3  # all-reduce, reduce-scatter, all-gather
    assert len(calls) == cache.calls + 3 == 15 + 3


def _table(nodes, cache, band=True, **kw):
    """Every row of an advisor table (as_dict of each step), node count by node count."""
    out = {}
    for n in nodes:
        s = [x for x in STRATEGIES if x["strategy"] != "hsdp" or n > 1]
        a = advise(nodes=n, strategies=s, predictions=cache, band=band, **kw)
        out[n] = [st.as_dict() for st in a.steps]
    return out


BENCH_NODES = tuple(range(1, 17))


@pytest.mark.parametrize("band", [True, False])
def test_a_table_that_knows_its_node_counts_gives_the_same_rows(band):
    """The benchmark's table (1-16 nodes): the predictions of every node count in one call
    per op and span give every field of every row of one call per node count."""
    known = PredictionCache(nodes=BENCH_NODES)
    fast = _table(BENCH_NODES, known, band, arch="llama-3.1-8b")
    assert known.calls == 4  # all-reduce, reduce-scatter, all-gather over the job; across
    plain = PredictionCache()
    _exact(fast, _table(BENCH_NODES, plain, band, arch="llama-3.1-8b"), "bench table")
    assert plain.calls == 63


def test_other_tables_that_know_their_node_counts_give_the_same_rows():
    """Every default candidate (HSDP at each group size), node counts in any order, another
    model size and cluster: the same rows as without the node counts, and alone."""
    for nodes, kw in (
        ((8, 1, 2, 4, 6), {"params": 13e9}),
        ((1, 3, 2), {"arch": "llama-3.1-8b", "cluster": "dgx-a100", "micro_batch": 2}),
    ):
        rows = []
        for cache in (PredictionCache(nodes=nodes), PredictionCache()):
            by_nodes = {}
            for n in nodes:
                a = advise(nodes=n, predictions=cache, **kw)
                by_nodes[n] = [st.as_dict() for st in a.steps]
            rows.append(by_nodes)
        _exact(rows[0], rows[1], f"{nodes} {kw}")
        n = nodes[-1]
        for st in advise(nodes=n, predictions=PredictionCache(nodes=nodes), **kw).steps:
            lay = st.layout
            opts = {
                k: getattr(lay, k)
                for k in ("strategy", "group_size", "reshard_after_forward")
                if getattr(lay, k) is not None
            }
            alone = strategy_step(nodes=n, timeline=False, **opts, **kw)
            _exact(st.as_dict(), alone.as_dict(), f"{n} nodes {lay.name} alone")


def test_advise_nodes_is_advise_at_each_node_count():
    """The public several-node-counts advisor (`cm.advise_strategy_nodes`) answers what one
    `advise` per node count answers, every field, strategies as a list or a function of the
    node count; bad node counts name the field."""
    import costmodel as cm

    nodes = (1, 3, 2)
    kw = {"arch": "llama-3.1-8b", "cluster": "dgx-a100", "micro_batch": 2}
    by = cm.advise_strategy_nodes(nodes=nodes, **kw)
    assert list(by) == list(nodes)
    for n in nodes:
        alone = advise(nodes=n, **kw)
        _exact([s.as_dict() for s in by[n].steps], [s.as_dict() for s in alone.steps], f"{n}")
    chosen = cm.advise_strategy_nodes(
        nodes=(1, 2),
        strategies=lambda n: [x for x in STRATEGIES if x["strategy"] != "hsdp" or n > 1],
        **kw,
    )
    assert [s.layout.name for s in chosen[1].steps if s.layout.strategy == "hsdp"] == []
    assert any(s.layout.strategy == "hsdp" for s in chosen[2].steps)
    with pytest.raises(ValueError, match="nodes"):
        cm.advise_strategy_nodes(nodes=(), **kw)
    with pytest.raises(ValueError, match="nodes"):
        cm.advise_strategy_nodes(nodes=(0, 2), **kw)


def test_predictions_of_several_node_counts_are_those_of_one_call_each():
    import numpy as np

    from costmodel.predict import predict_collective, predict_collective_nodes
    from costmodel.presets import cluster

    sizes = np.array([0.0, 1.0, 4096.0, 3.0 * 2**20, 2.0**33])
    for name, gpn, model in (
        ("dgx-h100", None, "nccl"),
        ("dgx-h100", 1, "nccl"),
        ("dgx-a100", 4, "nccl"),
        ("dgx-h100", None, "lesson"),  # not the nccl model: one call each
    ):
        cs = [cluster(name, nodes=n, gpus_per_node=gpn) for n in (1, 2, 3, 7, 16)]
        cs = [c for c in cs if c.ranks >= 2]
        for op in ("all_reduce", "reduce_scatter", "all_gather", "broadcast"):
            both = predict_collective_nodes(op, sizes, cs, model=model)
            for c, p in zip(cs, both, strict=True):
                alone = predict_collective(op, sizes, c, nodes=c.nodes, model=model)
                for f in ("ranks", "nodes", "model", "algorithm", "protocol"):
                    assert np.array_equal(getattr(p, f), getattr(alone, f)), (name, op, f)
                for f in ("message_bytes", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s"):
                    assert getattr(p, f).tolist() == getattr(alone, f).tolist(), (name, op, f)
                assert repr(p.error_band) == repr(alone.error_band), (name, op)


def test_a_table_that_knows_its_node_counts_evaluates_the_model_seven_times(monkeypatch):
    """Over 1-4 nodes: one call per op over the job clusters (their one-node floors once
    each) and one for HSDP's all-reduce across nodes: 4 + 3 evaluations (15 + 3 without)."""
    _table((1, 2, 3, 4), PredictionCache(nodes=(1, 2, 3, 4)), arch="llama-3.1-8b")
    calls = _count_model_evaluations(monkeypatch)
    cache = PredictionCache(nodes=(1, 2, 3, 4))
    _table((1, 2, 3, 4), cache, arch="llama-3.1-8b")
    assert len(cache._floors) == 3
    assert len(calls) == cache.calls + 3 == 4 + 3


def _prepared(strategy: dict[str, object], nodes: tuple[int, ...], band: bool) -> list:
    """The prepared steps (final task list and its band works) of one strategy at each node
    count, as the advisor's batched road holds them before scheduling."""
    from costmodel.strategy.step import _prepare_step

    return [
        _prepare_step(arch="llama-3.1-8b", nodes=n, timeline=False, band=band, **strategy)
        for n in nodes
    ]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: str(sorted(s.values(), key=str)))
@pytest.mark.parametrize("band", [True, False])
def test_one_pass_over_several_lists_is_run_of_each(strategy, band):
    """engine.run_many (one numpy row per task, a column per list and band end) gives each
    list what run gives it: starts, ends, the step, the sums and the band's steps."""
    from costmodel.strategy.engine import run_many

    prepared = _prepared(strategy, (2, 3, 5, 16), band)
    lists = [p.final_tasks for p in prepared]
    assert len({id(tl.plan) for tl in lists}) == 1  # one structure at every node count
    bands = [p.final_band for p in prepared]
    assert all((b is not None) == band for b in bands)
    for tl, b, many in zip(lists, bands, run_many(lists, bands), strict=True):
        one = run(tl, 0.0, check=False, band_work_s=b)
        assert many.starts_s.tolist() == one.starts_s.tolist()
        assert many.ends_s.tolist() == one.ends_s.tolist()
        assert (many.step_s, many.compute_s, many.comm_s, many.exposed_s) == (
            one.step_s,
            one.compute_s,
            one.comm_s,
            one.exposed_s,
        )
        assert list(many.comm_s_by_kind.items()) == list(one.comm_s_by_kind.items())
        assert many.band_step_s == one.band_step_s
        assert (many.band_step_s is not None) == band


def test_one_pass_refuses_lists_of_other_plans_or_mixed_bands():
    from costmodel.strategy.engine import run_many

    fsdp = _prepared({"strategy": "fsdp"}, (2, 3), True)
    ddp = _prepared({"strategy": "ddp"}, (2,), True)
    with pytest.raises(ValueError, match="one non-empty plan"):
        run_many([fsdp[0].final_tasks, ddp[0].final_tasks], [fsdp[0].final_band] * 2)
    with pytest.raises(ValueError, match="all given or all None"):
        run_many([p.final_tasks for p in fsdp], [fsdp[0].final_band, None])
    assert run_many([], []) == []


@pytest.mark.parametrize("band", [True, False])
def test_the_benchmark_table_through_advise_nodes_is_advise_per_node_count(band):
    """The benchmark's road (advise_nodes over 1-16 nodes: every node count's steps of one
    strategy scheduled in one pass) gives every field of every row of one advise per node
    count, with the same 4 predictions."""
    from costmodel.strategy.advisor import advise_nodes

    def strategies(n):
        return [x for x in STRATEGIES if x["strategy"] != "hsdp" or n > 1]

    cache = PredictionCache(nodes=BENCH_NODES)
    table = advise_nodes(
        arch="llama-3.1-8b", nodes=BENCH_NODES, strategies=strategies, band=band, predictions=cache
    )
    assert cache.calls == 4
    rows = {n: [st.as_dict() for st in a.steps] for n, a in table.items()}
    plain = _table(BENCH_NODES, PredictionCache(nodes=BENCH_NODES), band, arch="llama-3.1-8b")
    _exact(rows, plain, "advise_nodes")


def _column_calls(strategy: dict[str, object], nodes: tuple[int, ...], **kw: object) -> list:
    """One strategy's calls at several node counts, as the advisor makes them (a layout and a
    timer per node count over one cache that knows the node counts)."""
    from costmodel.strategy.advisor import layout_calls

    cache = PredictionCache(nodes=nodes)
    return [layout_calls(nodes=n, strategies=[strategy], predictions=cache, **kw)[0] for n in nodes]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: str(sorted(s.values(), key=str)))
@pytest.mark.parametrize("band", [True, False])
def test_a_retimed_column_is_each_strategy_modules_list(strategy, band):
    """A column (one strategy at every node count) takes the first node count's task list
    with each cluster's collective times: each list, its band works, wire bytes and schedule
    are what the strategy module and run give that node count alone."""
    from costmodel.strategy.step import _prepare_column, _prepare_step, _wire_bytes

    nodes = (2, 3, 5, 16)
    calls = _column_calls(strategy, nodes, arch="llama-3.1-8b", band=band)
    column = _prepare_column(calls)
    alone = [
        _prepare_step(**kw) for kw in _column_calls(strategy, nodes, arch="llama-3.1-8b", band=band)
    ]
    for n, col, one in zip(nodes, column, alone, strict=True):
        a, b = col.final_tasks, one.final_tasks
        assert isinstance(a, TaskList) and isinstance(b, TaskList)
        assert a.plan is b.plan, n
        assert (a.work, a.message_bytes, a.span_ranks, a.micro_batch) == (
            b.work,
            b.message_bytes,
            b.span_ranks,
            b.micro_batch,
        ), n
        assert (a.band_work, a.has_band, col.final_band) == (
            b.band_work,
            b.has_band,
            one.final_band,
        )
        assert col.schedule is not None  # scheduled with its column
        ref = run(b, 0.0, check=False, band_work_s=one.final_band)
        s = col.schedule
        assert (s.starts_s.tolist(), s.ends_s.tolist()) == (
            ref.starts_s.tolist(),
            ref.ends_s.tolist(),
        )
        assert (s.step_s, s.compute_s, s.comm_s, s.exposed_s, s.band_step_s) == (
            ref.step_s,
            ref.compute_s,
            ref.comm_s,
            ref.exposed_s,
            ref.band_step_s,
        )
        assert list(s.comm_s_by_kind.items()) == list(ref.comm_s_by_kind.items())
        _exact(col.finish().as_dict(), one.finish().as_dict(), f"{n} nodes")
        assert col.finish().wire_bytes_by_kind == _wire_bytes(b)


@pytest.mark.parametrize(
    "kw",
    [
        {"arch": "llama-3.1-8b", "accumulation": 3, "no_sync": False},  # mid lists too
        {"arch": "llama-3.1-8b", "comm_contention": 0.5},  # the event schedule, one by one
        {"params": 13e9, "micro_batch": 2, "recompute": "full", "grad_dtype": "bf16"},
    ],
    ids=["accumulation", "contention", "bare-count"],
)
def test_a_column_of_other_settings_is_one_step_per_node_count(kw):
    """Columns that are not scheduled at once (several micro-batches, contention) or of a bare
    parameter count: every field of every step is strategy_step's at that node count."""
    from costmodel.strategy.step import strategy_steps

    nodes = (1, 2, 4)
    for strategy in STRATEGIES:
        if strategy["strategy"] == "hsdp":
            continue  # one node: no replicas (its column: the tests above)
        steps = strategy_steps(_column_calls(strategy, nodes, **kw))
        for n, st in zip(nodes, steps, strict=True):
            alone = strategy_step(nodes=n, timeline=False, **strategy, **kw)
            _exact(st.as_dict(), alone.as_dict(), f"{n} nodes {strategy} {kw}")


def test_a_column_on_other_hardware_takes_its_own_setup():
    """Calls alike but for their cluster's GPU (H100, A100) share no setup: each step is its
    own strategy_step; a keyword the step does not take is refused as by the step."""
    from costmodel.strategy.layout import make_layout
    from costmodel.strategy.step import strategy_steps

    calls = [
        {
            "arch": "llama-3.1-8b",
            "cluster": PredictionCache().cluster(name, 2),
            "nodes": 2,
            "layout": make_layout(strategy="fsdp", ranks=16, gpus_per_node=8),
            "timeline": False,
        }
        for name in ("dgx-h100", "dgx-a100", "dgx-h100")
    ]
    steps = strategy_steps(calls)
    assert steps[0].as_dict() != steps[1].as_dict()
    for st, kw in zip(steps, calls, strict=True):
        _exact(st.as_dict(), strategy_step(**kw).as_dict(), kw["cluster"].name)
    with pytest.raises(TypeError, match="unknown_option"):
        strategy_steps([{**calls[0], "unknown_option": 1}])


def test_a_prediction_checks_its_numbers_in_one_pass():
    """Prediction.all_finite (the finite-result check of the predictions, one pass) answers
    what the field-by-field check answers: any non-finite number fails, a band's NaN
    ("no measurement") does not, names are text."""
    import dataclasses

    import numpy as np

    from costmodel._checks import _all_finite
    from costmodel.predict import predict_collective
    from costmodel.presets import cluster

    p = predict_collective("all_reduce", [1.0, 2.0**20], cluster("dgx-h100", nodes=2))

    def field_by_field(x: object) -> bool:
        return all(_all_finite(getattr(x, f.name), 1) for f in dataclasses.fields(x))

    nan_band = dataclasses.replace(p.error_band, lo=np.array([np.nan, np.nan]))
    cases = [p, dataclasses.replace(p, error_band=nan_band)]
    for name in ("message_bytes", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s"):
        for bad in (np.inf, np.nan):
            v = np.array(getattr(p, name), dtype=float)
            v[-1] = bad
            cases.append(dataclasses.replace(p, **{name: v}))
    cases.append(dataclasses.replace(p, ranks=float("inf")))
    answers = [c.all_finite() for c in cases]
    assert answers == [field_by_field(c) for c in cases]
    assert answers[:2] == [True, True] and not any(answers[2:])


def test_a_full_plan_cache_leaves_one_plan_per_structure():
    """fsdp keeps each setting's plan twice (per task order, and per units and sizes): when the
    plan cache fills and is dropped, the kept settings drop theirs too, so the node counts of
    one column still share one plan (asked in this order: 2 nodes, the cache filled, 3)."""
    from costmodel.strategy import fsdp

    kw = {"strategy": "fsdp"}
    _prepared(kw, (2,), False)
    for i in range(64):  # other structures until the cache is dropped
        fsdp._plan((f"unit {i}",), False, True, "job")
    after = _prepared(kw, (3, 2), False)
    assert after[0].final_tasks.plan is after[1].final_tasks.plan
