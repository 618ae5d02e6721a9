"""The strategy layer (costmodel.strategy): layouts, events, engine, memory, advisor, fit.

Small hand-checkable cases: the bytes each strategy puts on the wire against the ring factors,
the ranks each hsdp event spans, ZeRO's per-rank state formulas, the engine against hand
schedules, and the errors for bad layouts.
"""

from __future__ import annotations

import math

import pytest

from costmodel import ddp, memory
from costmodel.presets import cluster
from costmodel.scenario import Scenario
from costmodel.strategy import (
    DEFAULT_COMM_CONTENTION,
    Layout,
    Task,
    run,
    strategy_memory,
    strategy_step,
    wrap_units,
)
from costmodel.strategy.advisor import advise, candidate_layouts, fit_suggestions, nothing_fits_note
from costmodel.strategy.layout import make_layout
from costmodel.strategy.step import EXPOSED_SIGNIFICANT

P = 8 * 12 * 4096**2  # 8 default blocks of a bare count (1.61e9 parameters)
KW = dict(cluster="dgx-h100", nodes=2, model="lesson", compute_time_s=0.2, band=False)


def _step(strategy: str, **kw):
    return strategy_step(P, strategy=strategy, **{**KW, **kw})


# --- layouts and their errors ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"strategy": "zero4", "ranks": 8}, "strategy"),
        ({"strategy": "hsdp", "ranks": 16, "group_size": 3}, "group_size"),
        ({"strategy": "hsdp", "ranks": 48, "gpus_per_node": 8, "group_size": 12}, "group_size"),
        ({"strategy": "ddp", "ranks": 8, "reshard_after_forward": True}, "reshard_after_forward"),
        (
            {"strategy": "zero2", "ranks": 8, "reshard_after_forward": False},
            "reshard_after_forward",
        ),
        ({"strategy": "fsdp", "ranks": 8, "group_size": 4}, "group_size"),
        ({"strategy": "fsdp", "ranks": 8, "param_dtype": "int4"}, "param_dtype"),
    ],
)
def test_bad_layout_names_the_field(fields, field):
    with pytest.raises(ValueError, match=field):
        make_layout(**fields)


def test_unknown_strategy_lists_the_allowed_ones_everywhere():
    with pytest.raises(ValueError, match="allowed: ddp, zero1, zero2, fsdp, hsdp"):
        make_layout(strategy="megatron")
    with pytest.raises(ValueError, match="strategy"):
        Scenario(params=1e9, strategy="megatron")
    with pytest.raises(ValueError, match="group_size: 3 does not divide the 16 ranks"):
        Scenario(params=1e9, nodes=2, strategy="hsdp", group_size=3)
    with pytest.raises(ValueError, match="zero_stage"):
        Scenario(params=1e9, strategy="fsdp", zero_stage=1)


def test_layout_defaults():
    lay = Layout(strategy="hsdp", ranks=32, gpus_per_node=8)
    assert (lay.shard_group, lay.groups, lay.reshards, lay.zero_stage) == (8, 4, True, 3)
    assert (
        Layout(strategy="fsdp", ranks=32, reshard_after_forward=False).name == "fsdp (no reshard)"
    )
    assert Layout().comm_contention == DEFAULT_COMM_CONTENTION
    assert Scenario.model_fields["comm_contention"].default == DEFAULT_COMM_CONTENTION


def test_bucket_defaults_are_each_strategys_own():
    # ddp: PyTorch's bucket_cap_mb = 25 MiB whatever the dtype; zero1/zero2: DeepSpeed's
    # reduce_bucket_size = allgather_bucket_size = 5e8 elements, so bytes follow the dtype
    assert Layout().bucket_cap_bytes is None
    assert Layout(strategy="ddp").bucket_cap(4.0) == 25 * 2**20
    for st in ("zero1", "zero2"):
        lay = Layout(strategy=st, ranks=8)
        assert (lay.bucket_cap(2.0), lay.bucket_cap(4.0)) == (1e9, 2e9)
        assert Layout(strategy=st, bucket_cap_bytes=2**20).bucket_cap(4.0) == 2**20
    assert Scenario.model_fields["bucket_cap_bytes"].default is None
    assert Scenario(params=1e9, strategy="zero1").effective_bucket_cap_bytes == 1e9
    assert Scenario(params=1e9).effective_bucket_cap_bytes == 25 * 2**20


def _comm_counts(s) -> dict:
    out: dict = {}
    for i in s.timeline:
        if i.stream != "compute":
            out[i.kind] = out.get(i.kind, 0) + 1
    return out


@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_zero_buckets_are_deepspeeds_5e8_elements_unless_given(strategy):
    kw = dict(arch="llama-2-7b", cluster="dgx-h100", nodes=2, strategy=strategy, band=False)
    grad_bytes = 6_738_415_616 * 2  # llama-2-7b's parameters, bf16 gradients
    at_default = strategy_step(**kw)
    n = _comm_counts(at_default)
    # whole tensors per bucket of 1e9 B (5e8 bf16 elements), plus DDP's small first bucket
    assert math.ceil(grad_bytes / 1e9) <= n["reduce_scatter"] <= math.ceil(grad_bytes / 1e9) + 2
    # the parameters are gathered in one all_gather_into_tensor of the flat buffer (DeepSpeed's
    # all_gather_into_tensor_dp_groups), not in allgather_bucket_size buckets
    assert n["all_gather"] == 1
    explicit = strategy_step(**kw, bucket_cap_bytes=10**9)
    assert explicit.step_time_s == at_default.step_time_s
    assert _comm_counts(explicit) == n
    # an explicit bucket wins: 25 MiB makes DDP's many buckets
    small = _comm_counts(strategy_step(**kw, bucket_cap_bytes=25 * 2**20))
    assert small["reduce_scatter"] > 10 * n["reduce_scatter"]
    # the default is in elements: fp32 gradients keep the count, twice the bytes per bucket,
    # while an explicit 1e9 B bucket of fp32 gradients holds half the elements
    fp32 = _comm_counts(strategy_step(**kw, grad_dtype="fp32"))
    assert fp32["reduce_scatter"] == n["reduce_scatter"]
    fp32_given = _comm_counts(strategy_step(**kw, grad_dtype="fp32", bucket_cap_bytes=10**9))
    assert fp32_given["reduce_scatter"] > 1.5 * n["reduce_scatter"]


def test_an_explicit_bucket_wins_on_every_surface():
    import json

    from typer.testing import CliRunner

    from costmodel import cli

    q = dict(arch="llama-2-7b", cluster="dgx-h100", nodes=2, strategy="zero2")
    given = strategy_step(**q, bucket_cap_bytes=25 * 2**20, band=False)
    default = strategy_step(**q, band=False)
    assert given.events > 10 * default.events
    base = ["--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "zero2"]
    for cmd, want in (
        (["step", *base, "--bucket", "25MiB"], given),
        (["step", *base], default),
        (["scenario", *base, "--bucket", "25MiB"], given),
    ):
        r = CliRunner().invoke(cli.app, [*cmd, "--json"])
        assert r.exit_code == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["step_time_s"] == pytest.approx(want.step_time_s, rel=1e-9)
    sc = Scenario(**q, bucket_cap_bytes="25MiB").evaluate(scaling=False, flips=False)
    assert sc.step_time_s == pytest.approx(given.step_time_s, rel=1e-9)


def test_zero_is_not_priced_as_tens_of_thousands_of_small_buckets():
    # DeepSeek-V3 (671B) on 64 nodes: with DDP's 25 MiB buckets ZeRO-1/2 made ~90,000
    # latency-bound collectives and a 118.9 s step against DDP's 30.4 s; at DeepSpeed's
    # buckets the volume is DDP's in a few thousand events, so the step is no worse than DDP's
    kw = dict(arch="deepseek-v3", cluster="dgx-h100", nodes=64, timeline=False, band=False)
    d = strategy_step(**kw, strategy="ddp")
    z1 = strategy_step(**kw, strategy="zero1")
    assert z1.events < 5_000 < d.events
    assert z1.step_time_s <= d.step_time_s


def test_wrap_units_are_the_model():
    units = wrap_units(0, "llama-3.1-8b")
    assert [u.name for u in units[:2]] == ["embedding", "block 0"] and units[-1].name == "head"
    assert len(units) == 32 + 2
    assert sum(u.params for u in units) == pytest.approx(8.03e9, rel=1e-2)
    assert sum(u.compute_weight for u in units) == pytest.approx(1.0)
    assert units[0].compute_weight == 0.0  # a lookup, untied: no matmul


# --- bytes on the wire: ring factors ------------------------------------------------------------
def test_wire_bytes_follow_the_ring_factors():
    n = 16
    ring = (n - 1) / n
    d = _step("ddp").wire_bytes_by_kind
    assert d == {"all_reduce": pytest.approx(2 * ring * 2 * P, rel=1e-9)}
    z1 = _step("zero1").wire_bytes_by_kind
    # zero1: reduce-scatter + all-gather, the same total as ddp's all-reduce
    assert z1["reduce_scatter"] == pytest.approx(ring * 2 * P, rel=1e-9)
    assert z1["all_gather"] == pytest.approx(ring * 2 * P, rel=1e-9)
    assert sum(z1.values()) == pytest.approx(sum(d.values()), rel=1e-9)
    f = _step("fsdp").wire_bytes_by_kind
    last = wrap_units(P)[-1].params  # the last unit is not gathered again for backward
    assert f["all_gather"] == pytest.approx(ring * 2 * (2 * P - last), rel=1e-9)
    assert f["reduce_scatter"] == pytest.approx(ring * 2 * P, rel=1e-9)
    # about 1.5x DDP's volume (ZeRO paper section 7.2.2): 3 halves less the last unit's share
    # (a bare count's last unit is its transformer's head, architecture_for_params)
    assert sum(f.values()) / sum(d.values()) == pytest.approx((3 - last / P) / 2, rel=1e-9)
    assert 1.4 < sum(f.values()) / sum(d.values()) < 1.5
    keep = _step("fsdp", reshard_after_forward=False).wire_bytes_by_kind
    assert sum(keep.values()) == pytest.approx(sum(d.values()), rel=1e-9)
    # fp8 gathers halve the all-gather bytes, fp32 gradient reduction doubles the reduce-scatter
    f8 = _step("fsdp", param_dtype="fp8", grad_dtype="fp32").wire_bytes_by_kind
    assert f8["all_gather"] == pytest.approx(f["all_gather"] / 2, rel=1e-9)
    assert f8["reduce_scatter"] == pytest.approx(f["reduce_scatter"] * 2, rel=1e-9)


@pytest.mark.parametrize(
    ("nodes", "group", "group_ranks", "across_ranks"),
    [(4, 8, 8, 4), (4, 4, 4, 8), (4, 16, 16, 2), (2, 2, 2, 8)],
)
def test_hsdp_events_span_the_right_ranks(nodes, group, group_ranks, across_ranks):
    s = strategy_step(P, strategy="hsdp", group_size=group, **{**KW, "nodes": nodes})
    spans = {(i.kind, i.span, i.span_ranks) for i in s.timeline if i.stream != "compute"}
    assert spans == {
        ("all_gather", "group", group_ranks),
        ("reduce_scatter", "group", group_ranks),
        ("all_reduce", "across", across_ranks),
    }
    # each replica all-reduces its shard: 2 (r-1)/r x P x 2 B / g in all
    ar = s.wire_bytes_by_kind["all_reduce"]
    assert ar == pytest.approx(2 * (across_ranks - 1) / across_ranks * 2 * P / group, rel=1e-9)


def test_fsdp_events_per_unit():
    units = wrap_units(P)
    n = len(units)
    for reshard, gathers in ((True, 2 * n - 1), (False, n)):
        s = _step("fsdp", reshard_after_forward=reshard)
        kinds = [i.kind for i in s.timeline]
        assert kinds.count("all_gather") == gathers
        assert kinds.count("reduce_scatter") == n
        # a unit with no matmul (an untied embedding: a lookup) draws no compute bar
        m = sum(1 for u in units if u.compute_weight > 0)
        assert kinds.count("forward") == kinds.count("backward") == m
    # every unit's forward starts after its gather ends, its reduce-scatter after its backward
    s = _step("fsdp")
    ends = {i.label.removeprefix("gather "): i.end_s for i in s.timeline if i.kind == "all_gather"}
    for i in s.timeline:
        if i.kind == "forward":
            assert i.start_s >= ends[i.label.removeprefix("forward ")] - 1e-15


def test_zero_accumulation_reduces_per_micro_batch_only_for_stage_2():
    z1 = _step("zero1", accumulation=4, timeline=True)
    z2 = _step("zero2", accumulation=4, timeline=True)
    rs1 = sum(1 for i in z1.timeline if i.kind == "reduce_scatter")
    rs2 = sum(1 for i in z2.timeline if i.kind == "reduce_scatter")
    assert rs2 == 4 * rs1  # zero1 under no_sync reduces once; zero2 keeps only its shard
    assert sum(1 for i in z2.timeline if i.kind == "all_gather") == sum(
        1 for i in z1.timeline if i.kind == "all_gather"
    )


# --- the engine -------------------------------------------------------------------------------
def test_engine_against_hand_schedules():
    ts = [
        Task("all_gather", "params", 1.0),
        Task("forward", "compute", 2.0, (0,)),
        Task("reduce_scatter", "grads", 3.0, (1,)),
        Task("backward", "compute", 1.0, (1,)),
    ]
    r = run(ts, 0.0)  # gather 0-1, forward 1-3, then backward 3-4 beside the reduce 3-6
    assert r.starts_s.tolist() == [0.0, 1.0, 3.0, 3.0]
    assert (r.step_s, r.compute_s, r.exposed_s) == (6.0, 3.0, 3.0)
    r = run(ts, 0.5)  # backward at half speed under the reduce-scatter: 3-5
    assert r.ends_s.tolist() == [1.0, 3.0, 6.0, 5.0]
    r = run(ts, 1.0)  # stalled until the reduce-scatter ends: 6-7
    assert r.ends_s[-1] == 7.0
    with pytest.raises(ValueError, match="after"):
        run([Task("forward", "compute", 1.0, (1,)), Task("forward", "compute", 1.0)], 0.0)
    with pytest.raises(ValueError, match="comm_contention"):
        run(ts, 1.5)


@pytest.mark.parametrize("c", [0.0, 0.5, 1.0])
def test_ddp_strategy_equals_ddp_step_and_scenario(c):
    s = strategy_step(
        arch="llama-2-7b", cluster="dgx-h100", nodes=4, strategy="ddp", comm_contention=c
    )
    from costmodel import predict
    from costmodel.compute import ddp_step_overhead_s

    cl = cluster("dgx-h100", nodes=4)
    a = __import__("costmodel.architecture", fromlist=["load_arch"]).load_arch("llama-2-7b")
    ref = ddp.ddp_step(
        a.params,
        32,
        compute_time_s=s.compute_s,
        layer_param_counts=a.tensor_sizes,
        allreduce_time_fn=predict.allreduce_time_fn(cl, nodes=4),
        comm_contention=c,
        # DDP's fitted host time per step, the optimizer step and the synchronisation loss
        # after the last all-reduce (both roads add them)
        step_overhead_s=ddp_step_overhead_s(len(a.tensor_sizes)),
        tail_s=s.optimizer_s + s.sync_s,
    )
    assert s.step_time_s == pytest.approx(ref.step_time_s, rel=1e-12)
    assert s.comm_s == pytest.approx(ref.comm_s, rel=1e-12)
    r = Scenario(arch="llama-2-7b", nodes=4, comm_contention=c).evaluate(scaling=False, flips=False)
    assert r.step_time_s == pytest.approx(s.step_time_s, rel=1e-12)


def test_timeline_draws_what_the_numbers_count():
    from costmodel.plots import compute_gaps

    for strategy in ("ddp", "zero1", "fsdp", "hsdp"):
        s = _step(strategy)
        comm = sum(i.duration_s for i in s.timeline if i.stream != "compute")
        assert comm == pytest.approx(s.comm_s, rel=1e-9)
        gaps = compute_gaps([vars(i) for i in s.timeline], s.step_time_s)
        # at c = 0 the exposed communication is exactly the time compute waits
        assert sum(b - a for a, b in gaps) == pytest.approx(s.exposed_comm_s, abs=1e-12)
        significant = s.exposed_comm_s > EXPOSED_SIGNIFICANT * s.step_time_s
        assert (s.bound == "comms") == (significant or s.comm_s > s.compute_s)


# --- memory -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "per_param"),
    [
        ("ddp", lambda n: 16),
        ("zero1", lambda n: 4 + 12 / n),
        ("zero2", lambda n: 2 + 14 / n),
        ("fsdp", lambda n: 16 / n),
    ],
)
def test_state_memory_is_zero_papers_formula(strategy, per_param):
    n = 64
    m = strategy_memory(Layout(strategy=strategy, ranks=n), 7e9)
    assert float(m.base.model_state_bytes) == pytest.approx(per_param(n) * 7e9, rel=1e-12)


def test_memory_buffers_per_strategy():
    p = 7e9
    ddp_m = strategy_memory(Layout(strategy="ddp", ranks=8), p)
    assert ddp_m.buffers_bytes == 2 * p  # DDP's bucket copy of the bf16 gradients
    z = strategy_memory(Layout(strategy="zero1", ranks=8), p)
    # two reduce buckets (the step overlaps: DeepSpeed's overlap_comm double buffer), each
    # DeepSpeed's default 5e8 elements of the bf16 weights; the all-gather writes into the
    # weights in place (no bucket of its own)
    assert z.buffers_bytes == 2 * 5e8 * 2
    z = strategy_memory(Layout(strategy="zero1", ranks=8, bucket_cap_bytes=25 * 2**20), p)
    assert z.buffers_bytes == 2 * 25 * 2**20  # an explicit bucket wins
    # a bare count: the units of its transformer (architecture_for_params), so the largest
    # neighbouring pair is the last block and the head
    sizes = [u.params for u in wrap_units(p)]
    pair = max(a + b for a, b in zip(sizes, sizes[1:], strict=False))
    assert pair > 2 * p / len(sizes)  # the head outweighs a block
    f = strategy_memory(Layout(strategy="fsdp", ranks=8), p)
    assert f.gathered_bytes == pytest.approx((2 + 2) * pair)  # the pair, params + grads
    keep = strategy_memory(Layout(strategy="fsdp", ranks=8, reshard_after_forward=False), p)
    assert keep.gathered_bytes == pytest.approx(2 * p + 2 * pair)
    u = [x.params for x in wrap_units(0, "llama-3.1-70b")]
    m70 = strategy_memory(Layout(strategy="fsdp", ranks=64), arch="llama-3.1-70b")
    # the last block with the head (the output projection and the final norm) is the peak,
    # not the embedding with the head (never gathered at the same time)
    assert m70.gathered_bytes == pytest.approx(4 * (u[-2] + u[-1]), rel=1e-12)
    assert u[-1] > u[0] and m70.gathered_bytes < 4 * (u[0] + u[-1])
    h = strategy_memory(Layout(strategy="hsdp", ranks=64, group_size=8), p)
    assert float(h.base.model_state_bytes) == pytest.approx(16 * p / 8)
    base = memory.training_memory(p, zero_stage=3, dp_ranks=8)
    assert f.total_bytes == pytest.approx(float(base.total_bytes) + f.gathered_bytes)


# --- the advisor and what makes it fit --------------------------------------------------------
def test_advisor_tries_every_strategy_and_ranks_the_fits_by_step():
    names = [Layout(ranks=32, **k).name for k in candidate_layouts(32, 8)]
    assert names[:5] == ["ddp", "zero1", "zero2", "fsdp", "fsdp (no reshard)"]
    assert names[5:] == ["hsdp g=2", "hsdp g=4", "hsdp g=8", "hsdp g=16"]
    a = advise(arch="llama-3.1-8b", cluster="dgx-h100", nodes=4, model="lesson")
    assert len(a.steps) == len(names)
    fits = [s for s in a.steps if s.fits]
    assert fits and a.best is fits[0]
    assert [s.step_time_s for s in fits] == sorted(s.step_time_s for s in fits)
    assert all(s.fits for s in a.steps[: len(fits)])
    ddp_row = next(r for r in a.rows() if r["strategy"] == "ddp")
    assert ddp_row["fits"] is False  # 8B x 16 B + activations on an 80 GB card
    for r in a.rows():  # the lesson's band is off-centre (it is biased): ordered, not centred
        assert r["step_time_lo_s"] <= r["step_time_hi_s"]


def test_fit_suggestions_say_what_fits_with_its_cost():
    fa = fit_suggestions(arch="llama-2-7b", cluster="dgx-h100", nodes=1, model="lesson", band=False)
    assert not fa.fits
    ok = [c for c in fa.changes if c.fits]
    kinds = {c.kind for c in ok}
    assert {"strategy", "larger_card"} <= kinds
    # fsdp alone fits: "2 nodes (16 GPUs) with fsdp" adds GPUs to it, a dominated change
    assert "fsdp" in {c.change for c in ok} and "more_gpus" not in kinds
    assert all(c.step.memory_bytes <= c.step.gpu_memory_bytes for c in ok)
    same_hw = [c for c in ok if c.kind != "larger_card"]
    assert ok[: len(same_hw)] == same_hw  # the same hardware first, cheapest first
    cost = [c.gpu_seconds_per_token for c in same_hw]
    assert cost == sorted(cost)
    text = fa.summary()
    assert text.startswith("DOES NOT FIT") and ok[0].change in text
    d = fa.as_dict()["changes"][0]
    assert {"memory_bytes", "step_time_s", "step_time_change", "memory_change_bytes"} <= set(d)


def test_fit_suggestions_for_hsdp_try_larger_groups_and_fsdp():
    """hsdp g=16 of Llama 3.1 70B on 64 H100s was told only "a larger card": hsdp is last in
    the sharding order, so no larger group (nor fsdp, which fits with full recomputation on the
    same GPUs) was tried."""
    fa = fit_suggestions(
        arch="llama-3.1-70b",
        cluster="dgx-h100",
        nodes=8,
        strategy="hsdp",
        group_size=16,
        model="lesson",
        band=False,
    )
    same_hw = [c for c in fa.changes if c.fits and c.kind != "larger_card"]
    assert {c.step.layout.name for c in same_hw} >= {"fsdp", "hsdp g=32"}
    assert all(c.step.memory_bytes <= c.step.gpu_memory_bytes for c in same_hw)
    assert fa.summary().splitlines()[1].lstrip().startswith(same_hw[0].change)


def test_largest_model_never_reads_zero_params():
    # 70B's activations at 32k tokens without recomputation fill the card before any weight
    r = Scenario(arch="llama-3.1-70b", nodes=8, strategy="fsdp", sequence_length=32768).evaluate(
        scaling=False, flips=False
    )
    assert r.max_params == 0.0
    note = next(n for n in r.notes if n.startswith("even one parameter does not fit"))
    assert "activations" in note and "32,768 tokens" in note
    assert nothing_fits_note(80e9, 95e9, 93e9).startswith("even one parameter does not fit")


def test_scenario_with_changes_switches_strategy():
    a = Scenario(params=7e9, nodes=2, zero_stage=1)
    assert a.strategy_name == "zero1"
    b = a.with_changes("strategy=hsdp,group_size=4")
    assert (b.strategy_name, b.zero_stage, b.group_size) == ("hsdp", 3, 4)
    c = b.with_changes({"strategy": "ddp"})
    assert (c.strategy_name, c.group_size, c.zero_stage) == ("ddp", None, 0)
    assert math.isfinite(c.evaluate(scaling=False, flips=False).step_time_s)


def test_a_huge_bare_count_is_refused_before_scheduling():
    with pytest.raises(ValueError, match="buckets"):
        strategy_step(1e14, strategy="zero1", cluster="dgx-h100", nodes=2, band=False)
    with pytest.raises(ValueError, match="wrap units"):
        strategy_step(1e14, strategy="fsdp", cluster="dgx-h100", nodes=2, band=False)


def test_cli_strategy_all_and_bad_options():
    import json

    from typer.testing import CliRunner

    from costmodel import cli

    run_ = CliRunner().invoke
    base = ["step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2"]
    r = run_(cli.app, [*base, "--strategy", "all", "--model", "lesson", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    names = [row["layout"] for row in out["strategies"]]
    assert {"ddp", "zero1", "zero2", "fsdp", "fsdp (no reshard)", "hsdp g=8"} <= set(names)
    assert out["best"] == names[0]
    for args, field in (
        (["--strategy", "hsdp", "--group-size", "3"], "--group-size: 3 does not divide"),
        (["--strategy", "ddp", "--reshard"], "--reshard: only fsdp and hsdp"),
        (["--strategy", "zero9"], "--strategy"),
        (["--zero", "1", "--strategy", "fsdp"], "--zero"),
    ):
        cmd = [*base, *args] if args[0] != "--zero" else ["scenario", *base[1:], *args]
        r = run_(cli.app, cmd)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert field in r.stderr and "Traceback" not in r.stderr


# --- one compute road: the fitted efficiency by default ------------------------------------
def test_default_compute_is_the_fitted_one_node_step_counted_once():
    from costmodel import compute, presets

    h100 = presets.load("h100-sxm")
    one = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp")
    assert one.compute_source == "fitted" and "hopper/bf16" in one.compute_label
    fitted = compute.micro_batch_compute_s("llama-3.1-8b", h100, 4096, 1)
    # the engine's one-node FSDP step is the fitted one-node step (its intra-node
    # communication counted once): the compute under it is a little less
    assert one.step_time_s == pytest.approx(fitted, rel=1e-3)
    assert one.compute_s < fitted
    # the calibrated compute carries to every node count and strategy unchanged
    many = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, strategy="ddp")
    assert many.compute_s == pytest.approx(one.compute_s, rel=1e-12)
    # a contention what-if does not move the compute
    stalled = strategy_step(
        arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, strategy="ddp", comm_contention=1.0
    )
    assert stalled.compute_s == pytest.approx(many.compute_s, rel=1e-12)


def test_given_mfu_and_measured_time_override_the_fit_and_say_so():
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="fsdp")
    given = strategy_step(**kw, mfu=0.5)
    assert given.compute_source == "mfu" and given.compute_label == "given MFU 0.50"
    from costmodel.architecture import load_arch

    a = load_arch("llama-3.1-8b")
    peak = float(cluster("dgx-h100").peak_flops)
    assert given.compute_s == pytest.approx(4096 * a.training_flops_per_token(4096) / (peak * 0.5))
    measured = strategy_step(**kw, compute_time_s=0.3)
    assert measured.compute_source == "measured" and measured.compute_s == pytest.approx(0.3)
    assert measured.as_dict()["compute_source"] == "measured"


def test_gpu_without_a_fit_falls_back_to_the_default_mfu_and_says_why():
    s = strategy_step(arch="gpt2-124m", cluster="dgx1-v100", nodes=1, strategy="ddp")
    assert s.compute_source == "default-mfu"
    assert "no fitted efficiency for volta" in s.compute_label


@pytest.mark.parametrize(("mode", "more"), [("selective-op", True), ("selective-layer", True)])
def test_new_recompute_modes_cost_compute(mode, more):
    # on the fitted road, which prices the recomputed FLOPs; a given MFU is PaLM's (of the
    # model's FLOPs, recomputation inside it), the same compute under any mode
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp")
    base = strategy_step(**kw)
    r = strategy_step(**kw, recompute=mode)
    full = strategy_step(**kw, recompute="full")
    assert base.compute_s < r.compute_s < full.compute_s
    given = [strategy_step(**kw, mfu=0.4, recompute=m).compute_s for m in ("none", mode, "full")]
    assert given[0] == pytest.approx(given[1], rel=1e-12) == given[2]


def test_moe_answer_says_what_data_parallelism_leaves_out():
    from costmodel.architecture import moe_data_parallel_note

    note = moe_data_parallel_note("mixtral-8x7b")
    assert note
    kw = dict(arch="mixtral-8x7b", cluster="dgx-h100", nodes=2, strategy="fsdp")
    assert strategy_step(**kw, band=False).notes == (note,)
    assert strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", band=False).notes == ()
    r = Scenario(**kw).evaluate(scaling=False, flips=False)
    assert note in r.notes


def test_ddp_step_adds_the_fitted_per_tensor_host_overhead():
    from costmodel.architecture import load_arch
    from costmodel.compute import ddp_step_overhead_s

    kw = dict(arch="llama-2-7b", cluster="dgx-h100", nodes=1, gpus_per_node=1, band=False)
    n = len(load_arch("llama-2-7b").tensor_sizes)
    one = strategy_step(**kw, strategy="ddp", compute_time_s=0.3)
    # one GPU: plain training, no DDP wrapper: no collective and no DDP hooks or bucket
    # copies, the step is compute and the optimizer step, as fsdp's
    assert one.comm_s == 0.0 and one.host_overhead_s == 0.0
    opt = one.optimizer_s
    assert one.step_time_s == pytest.approx(0.3 + opt, rel=1e-12)
    assert strategy_step(**kw, strategy="fsdp", compute_time_s=0.3).step_time_s == pytest.approx(
        0.3 + opt, rel=1e-12
    )
    # two GPUs: DDP's hooks and bucket copies per tensor; fsdp has no such term; accumulation
    # under no_sync pays it once per step
    kw["gpus_per_node"] = 2
    two = strategy_step(**kw, strategy="ddp", compute_time_s=0.3)
    assert two.host_overhead_s == pytest.approx(ddp_step_overhead_s(n), rel=1e-12)
    assert ddp_step_overhead_s(n) > 0
    assert strategy_step(**kw, strategy="fsdp", compute_time_s=0.3).host_overhead_s == 0.0
    acc = strategy_step(**kw, strategy="ddp", compute_time_s=0.3, accumulation=3)
    assert acc.host_overhead_s == pytest.approx(ddp_step_overhead_s(n), rel=1e-12)


def test_the_optimizer_step_is_hbm_bound_on_the_local_shard_after_the_gradients():
    from costmodel import compute, presets

    h100 = presets.load("h100-sxm")
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, compute_time_s=0.5)
    ddp = strategy_step(**kw, strategy="ddp")
    fsdp = strategy_step(**kw, strategy="fsdp")
    hsdp = strategy_step(**kw, strategy="hsdp")
    from costmodel.architecture import load_arch

    p = float(load_arch("llama-3.1-8b").params)
    per = compute.optimizer_bytes_per_param(2.0, 4.0, 8.0, 4.0)  # mixed-adam: 28 B
    assert per == 28.0
    bw = float(h100.memory_bandwidth_bytes_per_s) * compute.HBM_ACHIEVABLE_FRACTION
    # ddp updates every parameter, fsdp its 1/64 shard, hsdp its 1/8 (one node's group)
    assert ddp.optimizer_s == pytest.approx(p * per / bw, rel=1e-9)
    assert fsdp.optimizer_s == pytest.approx(p / 64 * per / bw, rel=1e-9)
    assert hsdp.optimizer_s == pytest.approx(p / 8 * per / bw, rel=1e-9)
    for s in (ddp, fsdp, hsdp):
        opt = [b for b in s.timeline if b.kind == "optimizer"]
        # the gradient collectives: ddp's on ``grads``, fsdp/hsdp's reduce-scatters on the
        # shard group's stream and hsdp's all-reduces across groups on ``replicate``
        grads = [b for b in s.timeline if b.kind in ("all_reduce", "reduce_scatter")]
        assert len(opt) == 1 and opt[0].duration_s == pytest.approx(s.optimizer_s)
        # not overlapped: it starts after the last gradient collective and ends the timeline
        assert opt[0].start_s >= max(b.end_s for b in grads) - 1e-12
        assert opt[0].end_s == pytest.approx(
            # then DDP's host time (hooks, bucket copies) and the ranks' wait
            max(b.end_s for b in s.timeline if b.kind not in ("sync", "host"))
        )
    # zero1/zero2: the parameter all-gathers wait for the optimizer step
    z = strategy_step(**kw, strategy="zero2")
    (opt,) = [b for b in z.timeline if b.kind == "optimizer"]
    assert opt.duration_s == pytest.approx(p / 64 * per / bw, rel=1e-9)
    assert min(b.start_s for b in z.timeline if b.kind == "all_gather") >= opt.end_s - 1e-12


def test_sharded_steps_add_the_fitted_synchronisation_loss_kept_by_grouped_cv():
    import tomllib
    from importlib import resources

    from costmodel.compute import sync_loss_per_doubling

    doc = tomllib.loads((resources.files("costmodel.data") / "fitted_sync_loss.toml").read_text())
    # kept because it lowered the grouped-CV median of the scaling rows
    assert doc["kept"] and doc["cv"]["fitted"]["median"] < doc["cv"]["none"]["median"]
    k = sync_loss_per_doubling()
    assert k == doc["per_doubling"] and 0 < k < 0.1
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, compute_time_s=0.5, band=False)
    f = strategy_step(**kw, strategy="fsdp")
    assert f.sync_s == pytest.approx(k * 6 * f.compute_s, rel=1e-12)  # log2(64) = 6
    off = strategy_step(**kw, strategy="fsdp", sync_loss=0.0)
    assert off.sync_s == 0.0
    assert f.step_time_s == pytest.approx(off.step_time_s + f.sync_s, rel=1e-12)
    assert f.exposed_comm_s == pytest.approx(off.exposed_comm_s, rel=1e-9)  # not communication
    # not on ddp (its own fitted overhead; the DDP benchmark did not want it), nor on one rank
    assert strategy_step(**kw, strategy="ddp").sync_s == 0.0
    one = strategy_step(
        arch="llama-3.1-8b",
        cluster="dgx-h100",
        gpus_per_node=1,
        compute_time_s=0.5,
        strategy="fsdp",
    )
    assert one.sync_s == 0.0
    for bad in (-0.1, 1.0, float("nan"), True, "0.02"):
        with pytest.raises(ValueError, match="sync_loss"):
            strategy_step(**kw, strategy="fsdp", sync_loss=bad)


def test_kept_work_gives_the_numbers_of_a_fresh_process() -> None:
    """The step keeps work between calls (task columns, fsdp's task order, the base memory,
    the one-node cluster): steps asked in one order, then with everything kept dropped and
    asked in the reverse order, give the same numbers and timelines bit for bit."""
    from costmodel.strategy import ddp, engine, fsdp, step, zero
    from costmodel.strategy import memory as smem

    configs = [
        {"strategy": "fsdp", "nodes": 2, "accumulation": 2},
        {"strategy": "fsdp", "nodes": 2, "reshard_after_forward": False},
        {"strategy": "hsdp", "nodes": 2, "comm_contention": 0.5},
        {"strategy": "zero2", "nodes": 3, "accumulation": 2},
        {"strategy": "ddp", "nodes": 2, "micro_batch": 2},
    ]

    def answers(order: list[dict[str, object]]) -> list[tuple[object, ...]]:
        out = []
        for kw in order:
            s = strategy_step(arch="llama-2-7b", cluster="dgx-h100", **kw)  # type: ignore[arg-type]
            out.append(
                (
                    s.step_time_s,
                    s.step_time_band_s,
                    s.comm_by_kind_s,
                    s.wire_bytes_by_kind,
                    s.events,
                    s.memory.total_bytes,
                    s.timeline,
                )
            )
        return out

    first = answers(configs)
    for kept in (
        engine._COLUMNS,
        fsdp._ORDERS,
        fsdp._KEPT,  # holds fsdp._PLANS's plans: kept alone, a later step would mix old and new
        fsdp._PLANS,
        ddp._PLANS,
        zero._PLANS,
        step._OPT_PLANS,
        step._GROUPS,
        step._COMPUTE,
        smem._BASE,
        smem._PAIRS,
        step._ONE_NODE,
        step._TENSORS,
    ):
        kept.clear()
    assert answers(configs[::-1])[::-1] == first


@pytest.mark.parametrize(
    ("strategy", "contention"), [("ddp", 0.0), ("fsdp", 0.0), ("ddp", 0.5), ("fsdp", 0.5)]
)
def test_timeline_slowed_compute_is_the_stretch_only(strategy, contention):
    """The step chart's "compute slowed under communication" is the stretch of forward and
    backward under contention: zero without contention, never the optimizer step or FSDP's sync
    (the chart called a 7B DDP step's 70 ms optimizer step "compute slowed" at c = 0)."""
    from costmodel.plots import ddp_timeline_figure

    r = Scenario(
        params=7e9, cluster="dgx-h100", nodes=4, strategy=strategy, comm_contention=contention
    ).evaluate(scaling=False)
    fig = ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)
    text = next(t.name for t in fig.data if t.name and t.name.startswith("exposed")).replace(
        "<br>", " "
    )
    stretch = (
        sum(
            iv["end_s"] - iv["start_s"]
            for iv in r.timeline
            if iv["kind"] in ("forward", "backward")
        )
        - r.compute_s
    )
    assert (contention > 0) == ("slowed" in text), text
    if contention > 0:
        from costmodel.units import format_duration

        assert stretch > 1e-3 and f"slowed under communication: {format_duration(stretch)}" in text
