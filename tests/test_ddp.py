"""DDP step model (costmodel.ddp): PyTorch's bucket rule, the timeline, accumulation, and a shape
check against PyTorch's own DDP benchmark (bundled as costmodel/data/reference/ddp/14_*.txt, V100 DGX-1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import collectives, ddp
from costmodel.ddp import (
    DEFAULT_BUCKET_CAP_BYTES,
    DEFAULT_FIRST_BUCKET_BYTES,
    bucket_assignment,
    bucket_sizes,
    ddp_step,
)
from costmodel.ddp_benchmark import GPUS, MODELS, predict_step_s
from costmodel.reference import ddp_benchmark_file, parse_ddp_benchmark, reference_dir

MiB = 2**20


# --- buckets -----------------------------------------------------------------------------------
def test_pytorch_defaults() -> None:
    assert DEFAULT_BUCKET_CAP_BYTES == 25 * MiB  # bucket_cap_mb=25
    assert DEFAULT_FIRST_BUCKET_BYTES == MiB  # dist._DEFAULT_FIRST_BUCKET_BYTES


def test_bucket_rule_by_hand() -> None:
    # ready order: 5 (4 MiB >= 1 MiB: closes the 1 MiB first bucket), then 4, 3, 2 (30 >= 25),
    # then 1, 0 left over. A bucket may pass its cap by its last parameter (never split).
    sizes = [0.5 * MiB, 0.25 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 4 * MiB]
    assert bucket_assignment(sizes) == [[5], [4, 3, 2], [1, 0]]
    assert (bucket_sizes(sizes) / MiB).tolist() == [4, 30, 0.75]
    # a parameter bigger than the cap is a bucket of its own
    assert bucket_assignment([100 * MiB, 100 * MiB], first_bucket_bytes=25 * MiB) == [[1], [0]]


def _check_partition(
    sizes: list[float], buckets: list[list[int]], cap: float, first: float, small_last: bool
) -> None:
    flat = [i for b in buckets for i in b]
    assert flat == list(range(len(sizes) - 1, -1, -1))  # every parameter once, in ready order
    # limits in packing order (reduction order, or its reverse with small_bucket_last)
    packed = [b[::-1] for b in reversed(buckets)] if small_last else buckets
    for k, b in enumerate(packed):
        limit = first if k == 0 else cap
        total = sum(sizes[i] for i in b)
        if k < len(packed) - 1:
            assert total >= limit  # closed because it reached its limit
        assert total - sizes[b[-1]] < limit  # ...at its last parameter, not earlier


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 64 * MiB), min_size=1, max_size=60),
    st.integers(1, 40 * MiB),
    st.integers(1, 4 * MiB),
    st.booleans(),
)
def test_bucket_invariants(sizes, cap, first, small_last) -> None:
    buckets = bucket_assignment(sizes, cap, first, small_last)
    _check_partition(sizes, buckets, cap, first, small_last)
    # so a bucket exceeds its limit only by less than its last (unsplittable) parameter
    assert bucket_sizes(sizes, cap, first, small_last).sum() == pytest.approx(sum(sizes))


@pytest.mark.torch
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4000), min_size=1, max_size=40),
    st.integers(1, 8000),
    st.integers(1, 2000),
)
def test_matches_pytorch_reducer(sizes, cap, first) -> None:
    """Same buckets as torch's own compute_bucket_assignment_by_size, fed in gradient-ready
    order with limits {first, cap}, as Reducer::rebuild_buckets does (float32: 4 B/element)."""
    import torch  # the validate extra, installed by `make test`
    import torch.distributed as dist

    tensors = [torch.empty(n) for n in sizes]
    order = list(range(len(sizes) - 1, -1, -1))
    expected, _ = dist._compute_bucket_assignment_by_size(
        [tensors[i] for i in order], [first, cap], [False] * len(sizes), order
    )
    assert bucket_assignment([4 * n for n in sizes], cap, first) == [list(b) for b in expected]


# --- the step ----------------------------------------------------------------------------------
BASE = dict(compute_time_s=0.3, bandwidth_bytes_per_s=25e9, latency_s=5e-6)


def _comm_intervals(step):
    return [iv for iv in step.timeline if iv.kind == "allreduce"]


def test_default_comm_model_is_the_textbook_ring() -> None:
    s = ddp_step(1e9, 16, **BASE)
    expected = collectives.allreduce_time(np.array(s.bucket_bytes), 16, 25e9, 5e-6)
    assert s.bucket_comm_s == pytest.approx(tuple(expected), rel=1e-12)
    assert s.comm_s == pytest.approx(expected.sum(), rel=1e-12)


def test_injected_allreduce_time_fn() -> None:
    seen = []

    def fn(b):
        seen.append(np.asarray(b))
        return 1e-3 + b / 1e10

    s = ddp_step(1e9, 16, compute_time_s=0.3, allreduce_time_fn=fn)
    assert len(seen) == 1 and seen[0].tolist() == list(s.bucket_bytes)
    assert s.comm_s == pytest.approx(s.buckets * 1e-3 + 2e9 / 1e10, rel=1e-12)
    with pytest.raises(ValueError, match="allreduce_time_fn: must return one finite time"):
        ddp_step(1e9, 16, compute_time_s=0.3, allreduce_time_fn=lambda b: -1.0 * b)


def test_timeline_is_consistent() -> None:
    counts = np.linspace(1e6, 5e7, 30)
    s = ddp_step(None, 8, layer_param_counts=counts, **BASE)
    fwd, bwd = [iv for iv in s.timeline if iv.kind != "allreduce"]
    assert fwd.start_s == 0 and fwd.end_s == pytest.approx(0.1) and bwd.start_s == fwd.end_s
    comms = _comm_intervals(s)
    assert [iv.message_bytes for iv in comms] == list(s.bucket_bytes)
    ready = (
        0.1
        + 0.2 * np.cumsum([counts[b].sum() for b in bucket_assignment(2 * counts)]) / counts.sum()
    )
    for k, iv in enumerate(comms):
        assert iv.start_s >= ready[k] - 1e-12  # not before its last gradient
        if k:
            assert iv.start_s >= comms[k - 1].end_s - 1e-12  # one stream, bucket order
    assert s.step_time_s == pytest.approx(max(bwd.end_s, comms[-1].end_s), rel=1e-12)


def test_compute_from_flops() -> None:
    # 6 P T / (peak * mfu): 1e9 params, 4096 tokens, 989 TFLOP/s at 40 % MFU
    s = ddp_step(1e9, 1, tokens_per_gpu=4096, peak_flops=989e12, mfu=0.4, bandwidth_bytes_per_s=1e9)
    assert s.compute_s == pytest.approx(6 * 1e9 * 4096 / (989e12 * 0.4), rel=1e-12)
    assert s.comm_s == 0.0  # one rank communicates nothing
    assert s.step_time_s == pytest.approx(s.compute_s, rel=1e-12)
    assert s.efficiency == pytest.approx(1.0, rel=1e-12)


def test_no_overlap_is_serial_and_accumulation() -> None:
    s = ddp_step(1e9, 16, overlap=False, **BASE)
    assert s.step_time_s == pytest.approx(s.serial_step_s, rel=1e-12)
    one = ddp_step(1e9, 16, **BASE)
    acc = ddp_step(1e9, 16, accumulation=4, **BASE)
    assert acc.syncs == 1 and acc.comm_s == pytest.approx(one.comm_s)
    assert acc.step_time_s == pytest.approx(3 * 0.3 + one.step_time_s, rel=1e-12)
    every = ddp_step(1e9, 16, accumulation=4, no_sync=False, **BASE)
    assert every.syncs == 4 and every.step_time_s == pytest.approx(4 * one.step_time_s, rel=1e-12)
    assert len(_comm_intervals(every)) == 4 * one.buckets


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            dict(params=1e9, ranks=0, **BASE),
            "ranks: must be a whole number in 1\\.\\.1,000,000,000",
        ),
        (dict(params=1e9, ranks=2.5, **BASE), "ranks: must be a whole number"),
        (dict(params=1e9, ranks=8, compute_time_s=0.1), "bandwidth_bytes_per_s: required"),
        (dict(params=1e9, ranks=8, bandwidth_bytes_per_s=1e9), "compute_time_s: missing"),
        (
            dict(params=1e9, ranks=8, compute_time_s=0.1, bandwidth_bytes_per_s=0),
            "bandwidth_bytes_per_s",
        ),
        (
            dict(
                params=1e9,
                ranks=8,
                tokens_per_gpu=1,
                peak_flops=1e12,
                mfu=1.5,
                bandwidth_bytes_per_s=1e9,
            ),
            r"mfu: must be a model FLOP utilisation in \[0\.001, 1\], got 1.5",
        ),
        (dict(params=1e9, ranks=8, accumulation=0, **BASE), "accumulation"),
        (dict(params=2e9, ranks=8, layer_param_counts=[1e9], **BASE), "differs from sum"),
        (dict(params=None, ranks=8, layer_param_counts=[1e9, -1], **BASE), "layer_param_counts"),
        (dict(params=1e9, ranks=8, algorithm="hypercube", **BASE), "algorithm: unknown"),
        (
            dict(params=1e9, ranks=8, comm_contention=1.5, **BASE),
            r"comm_contention: must be an overlap contention in \[0, 1\], got 1.5",
        ),
    ],
)
def test_bad_input(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        ddp_step(**kwargs)


@settings(max_examples=40, deadline=None)
@given(
    st.floats(1e7, 1e10),
    st.integers(1, 1024),
    st.floats(1e-3, 2.0),
    st.floats(1e9, 1e12),
    st.floats(0, 1e-4),
    st.floats(0, 1),
    st.integers(1, 4),
    st.booleans(),
)
def test_step_invariants(params, ranks, compute, bw, lat, slow, acc, no_sync) -> None:
    kw = dict(
        compute_time_s=compute,
        latency_s=lat,
        accumulation=acc,
        no_sync=no_sync,
        comm_contention=slow,
    )
    s = ddp_step(params, ranks, bandwidth_bytes_per_s=bw, **kw)
    tol = 1e-9 * s.serial_step_s
    assert s.exposed_comm_s >= -tol
    assert s.perfect_overlap_step_s - tol <= s.step_time_s
    assert s.step_time_s <= s.serial_step_s + tol  # overlap never hurts, even at c = 1
    assert 0 < s.efficiency <= 1 + 1e-12
    assert (s.bound == "comms") == (s.comm_s > s.compute_s)
    # a faster fabric never slows the step; a slowdown never speeds it up
    assert (
        ddp_step(params, ranks, bandwidth_bytes_per_s=2 * bw, **kw).step_time_s
        <= s.step_time_s + tol
    )
    kw_fast = {**kw, "comm_contention": 0.0}
    assert (
        ddp_step(params, ranks, bandwidth_bytes_per_s=bw, **kw_fast).step_time_s
        <= s.step_time_s + tol
    )


# --- shape check against PyTorch's DDP benchmark ----------------------------------------------
DATA = reference_dir("ddp")  # bundled in the package (costmodel.reference)


def _benchmark_file() -> Path:
    return ddp_benchmark_file()


# the benchmark's models, DGX-1 ring and the step of one row: costmodel.ddp_benchmark (one copy,
# shared with scripts/fit_ddp_overhead.py)
def test_layer_lists_match_torchvision_counts() -> None:
    for model, (counts, published) in MODELS.items():
        assert sum(counts) == published, model


def test_textbook_overlap_hides_small_buckets() -> None:
    """With perfect overlap (c = 0) 1 MiB buckets cost nothing below 16 GPUs: their extra
    latency hides under backward. The measurements say otherwise, hence comm_contention."""
    steps, _ = parse_ddp_benchmark(_benchmark_file().read_text())
    compute = steps["resnet50"]["no ddp"]
    for n in (2, 4, 8):
        p1, p25 = (predict_step_s("resnet50", n, compute, cap, 0.0) for cap in (MiB, 25 * MiB))
        assert p1 == pytest.approx(p25, rel=1e-9)


def test_ddp_benchmark_shape() -> None:
    """Compute = measured single-GPU step without DDP; comm = ring at the DGX-1 link rates with
    NCCL's latencies; comm_contention fitted (grid over [0, 1]) to the measured growth of the
    25 MiB step from 1 to 16 GPUs; the 1 MiB rows are held out."""
    steps, diffs = parse_ddp_benchmark(_benchmark_file().read_text())
    assert set(steps) == set(MODELS) and all(set(d) == set(GPUS) for d in diffs.values())

    def growth_residuals(c: float) -> np.ndarray:
        res = []
        for model, measured in steps.items():
            base = predict_step_s(model, 1, measured["no ddp"], 25 * MiB, c)
            res += [
                (predict_step_s(model, n, measured["no ddp"], 25 * MiB, c) - base)
                - (measured[n] - measured[1])
                for n in GPUS[1:]
            ]
        return np.array(res)

    grid = np.linspace(0.0, 1.0, 21)
    rms = [float(np.sqrt(np.mean(growth_residuals(c) ** 2))) for c in grid]
    c_fit = float(grid[int(np.argmin(rms))])
    print(
        f"fitted comm_contention {c_fit:.2f} (rms growth error {min(rms) * 1e3:.1f} ms; "
        f"{rms[0] * 1e3:.1f} ms with perfect overlap)"
    )
    assert c_fit >= 0.5  # the data need overlapped comm to slow compute (at 0: small buckets free)
    assert c_fit == ddp.FITTED_COMM_CONTENTION  # the V100 fit (not the default of any surface)

    errors, extra_model, extra_measured = [], [], []
    for model, measured in steps.items():
        compute = measured["no ddp"]
        pred25 = [predict_step_s(model, n, compute, 25 * MiB, c_fit) for n in GPUS]
        pred1 = [predict_step_s(model, n, compute, MiB, c_fit) for n in GPUS]
        meas = [measured[n] for n in GPUS]
        # the step grows with GPU count, as measured
        assert all(b >= a for a, b in zip(meas, meas[1:], strict=False)), model
        assert all(b >= a for a, b in zip(pred25, pred25[1:], strict=False)), model
        assert pred25[-1] > pred25[0]
        # 1 MiB buckets cost more than 25 MiB ones on more than one GPU, increasingly with N
        cost = [100 * (p1 / p25 - 1) for p1, p25 in zip(pred1, pred25, strict=True)]
        assert all(c > 0 for c in cost[1:]), (model, cost)
        assert all(b > a for a, b in zip(cost[1:], cost[2:], strict=False)), (model, cost)
        errors += [(p - m) / m for p, m in zip(pred25, meas, strict=True)]
        extra_model += cost
        extra_measured += [-diffs[model][n] for n in GPUS]  # ex/sec drop = extra time, roughly
        print(
            f"{model:18s} step ms measured {[round(1e3 * m, 1) for m in meas]}"
            f" predicted {[round(1e3 * p, 1) for p in pred25]};"
            f" 1 MiB extra % measured {[-diffs[model][n] for n in GPUS]}"
            f" predicted {[round(c, 2) for c in cost]}"
        )
    # measured: the 1 MiB penalty grows with GPU count on average over the four models
    by_n = np.array(extra_measured).reshape(len(MODELS), len(GPUS)).mean(axis=0)
    assert by_n[3] > by_n[1] > by_n[0]  # 8 GPUs > 2 GPUs > 1 GPU
    med = float(np.median(np.abs(errors)))
    worst = float(np.max(np.abs(errors)))
    pp = float(np.median(np.abs(np.array(extra_model) - np.array(extra_measured))))
    print(
        f"step time: median |rel error| {med:.3f}, worst {worst:.3f} (all under-predictions: "
        f"{all(e < 0 for e in errors)}); 1 MiB penalty: median |error| {pp:.2f} points"
    )
    # Regression bounds (at the time of writing: c = 1.0, 0.047, 0.081, 1.06 points). The model
    # leaves out DDP's fixed cost (1 GPU with DDP is 1-6 % slower than without) and takes the
    # NVLink line rate, above what NCCL reached on a DGX-1, so it under-predicts; these bounds
    # catch a model that drifts further.
    assert med <= 0.055
    assert worst <= 0.09
    assert all(e <= 0.01 for e in errors)  # never slower than measured
    assert pp <= 1.3


# --- the engine's two schedulers agree with the closed form ------------------------------------
# (The DDP step now runs on costmodel.strategy.engine; its one-pass list scheduler (c = 0) and its
# event loop (any c) replace ddp's own vectorized and stepwise schedulers, checked here the same
# way: against each other and against the max-plus closed form of one FIFO stream.)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overlap", [True, False])
def test_vectorized_schedule_equals_event_loop(seed, overlap):
    from costmodel.strategy import ddp as sddp
    from costmodel.strategy import engine

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 80))
    comm = rng.exponential(0.01, k) * (rng.random(k) > 0.1)  # some all-reduces take no time
    ready = np.sort(rng.random(k))
    ready[-1] = 1.0
    tasks = tuple(sddp.bucket_tasks(0.1, 0.3, ready, np.ones(k), comm, ranks=8, overlap=overlap))
    fast = engine._list_schedule(tasks)
    slow = engine._event_schedule(tasks, 0.0)
    np.testing.assert_allclose(fast[0], slow[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast[1], slow[1], rtol=0, atol=1e-12)
    # max-plus closed form: e_k = C_k + max_{j<=k}(r_j - C_{j-1}), r_j the ready times
    r = 0.1 + (ready * 0.3 if overlap else np.full(k, 0.3))
    total = np.cumsum(comm)
    closed = total + np.maximum.accumulate(r - (total - comm))
    np.testing.assert_allclose(fast[1][-k:], closed, rtol=0, atol=1e-12)


@pytest.mark.parametrize("small_last", [False, True])
def test_bucket_sums_equal_per_bucket_sums(small_last):
    rng = np.random.default_rng(1)
    sizes = rng.uniform(0.01, 30, 300) * 2**20
    expected = [sizes[b].sum() for b in bucket_assignment(sizes, 25 * 2**20, 2**20, small_last)]
    got = ddp.bucket_sizes(sizes, 25 * 2**20, 2**20, small_last)
    np.testing.assert_allclose(got, expected, rtol=1e-12)  # summation order only


def test_cached_default_tensors_equal_explicit_layers_and_stay_intact():
    p = 7e9
    pieces = math.ceil(p / ddp.DEFAULT_TENSOR_PARAMS)

    def vandal(b):  # an allreduce_time_fn that scribbles on its input must not poison the cache
        b[:] = 1.0
        return np.full(b.shape, 1e-3)

    kw = dict(compute_time_s=0.4, bandwidth_bytes_per_s=50e9, gradient_bytes_per_param=2)
    ddp.ddp_step(p, 64, allreduce_time_fn=vandal, **kw)
    cached = ddp.ddp_step(p, 64, **kw)
    explicit = ddp.ddp_step(None, 64, layer_param_counts=[p / pieces] * pieces, **kw)
    assert cached.bucket_bytes == pytest.approx(explicit.bucket_bytes, rel=1e-12)
    assert cached.step_time_s == pytest.approx(explicit.step_time_s, rel=1e-12)
    assert sum(cached.bucket_bytes) == pytest.approx(2 * p, rel=1e-12)


@pytest.mark.parametrize(("accumulation", "no_sync"), [(1, True), (3, True), (3, False)])
def test_without_timeline_every_figure_is_the_same(accumulation, no_sync):
    kw = dict(
        compute_time_s=0.4, bandwidth_bytes_per_s=50e9, accumulation=accumulation, no_sync=no_sync
    )
    full = ddp.ddp_step(7e9, 64, **kw)
    bare = ddp.ddp_step(7e9, 64, timeline=False, **kw)
    assert bare.timeline == () and len(full.timeline) > 0
    assert bare.as_dict() == full.as_dict()  # the same clock: bit for bit
    assert full.step_time_s == pytest.approx(max(i.end_s for i in full.timeline), rel=1e-12)


# --- bucket_cap advisor --------------------------------------------------------
def test_bucket_cap_sweep_best_is_the_argmin():
    sw = ddp.bucket_cap_sweep(
        params=1e9, ranks=64, compute_time_s=0.3, bandwidth_bytes_per_s=25e9, latency_s=20e-6
    )
    assert len(sw.caps_bytes) == 200
    assert sw.exposed_comm_s[sw.best_index] <= min(sw.exposed_comm_s) + sw.tie_s
    one = ddp.ddp_step(
        1e9,
        64,
        compute_time_s=0.3,
        bandwidth_bytes_per_s=25e9,
        latency_s=20e-6,
        bucket_cap_bytes=sw.best_cap_bytes,
    )
    assert one.exposed_comm_s == pytest.approx(sw.exposed_comm_s[sw.best_index])


def test_bucket_cap_sweep_huge_latency_picks_the_largest_cap():
    """1 s per all-reduce, any size: exposed time grows with the bucket count."""
    sw = ddp.bucket_cap_sweep(
        params=1e9, ranks=8, compute_time_s=0.1, allreduce_time_fn=lambda b: 1.0 + b / 1e11
    )
    # fewest buckets wins; 2**24-parameter tensors (32 MiB) are never split, so caps from 191
    # MiB up all make 10 buckets and tie: the tie goes to the smallest of them
    assert sw.buckets[sw.best_index] == min(sw.buckets) == sw.buckets[-1]
    assert sw.exposed_comm_s[sw.best_index] == pytest.approx(sw.exposed_comm_s[-1])
    assert sw.exposed_comm_s[0] > 5 * sw.exposed_comm_s[-1]  # 1 MiB: 60 buckets, 200 MiB: 10
    assert all(b > min(sw.buckets) for b in sw.buckets[: sw.best_index])


def test_bucket_cap_sweep_pure_bandwidth_picks_the_smallest_cap():
    """No latency, long compute, perfect overlap: every bucket but the last hides under
    backward, and the last one (sent after backward) is smallest with the smallest cap."""
    counts = [1e5] * 5000  # 200 kB tensors in bf16, so a 1 MiB bucket holds a few of them
    sw = ddp.bucket_cap_sweep(
        params=None,
        layer_param_counts=counts,
        ranks=8,
        compute_time_s=10.0,
        allreduce_time_fn=lambda b: np.asarray(b) / 1e9,
    )
    assert sw.best_cap_bytes == 2**20
    assert sw.exposed_comm_s[0] < sw.exposed_comm_s[-1]


def test_bucket_cap_sweep_refuses_bad_caps():
    with pytest.raises(ValueError, match="caps_bytes"):
        ddp.bucket_cap_sweep(
            [-1.0], params=1e9, ranks=8, compute_time_s=0.1, bandwidth_bytes_per_s=1e9
        )
    with pytest.raises(ValueError, match="bucket_cap_bytes"):
        ddp.bucket_cap_sweep(
            params=1e9, ranks=8, compute_time_s=0.1, bandwidth_bytes_per_s=1e9, bucket_cap_bytes=1e6
        )


def test_timeline_hover_shows_durations_not_end_times():
    """plotly's %{x} on a bar with a base is the bar's end; the hover must read the
    duration (and start) from customdata."""
    from costmodel import plots

    step = ddp.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    tl = [
        {
            "kind": i.kind,
            "start_s": i.start_s,
            "end_s": i.end_s,
            "label": i.label,
            "message_bytes": i.message_bytes,
        }
        for i in step.timeline
    ]
    fig = plots.ddp_timeline_figure(tl, compute_s=step.compute_s, step_time_s=step.step_time_s)
    comm = next(t for t in fig.data if t.name == "allreduce")
    assert "%{x" not in comm.hovertemplate and "%{customdata[2]" in comm.hovertemplate
    bars = [i for i in step.timeline if i.kind == "allreduce"]
    durations = [row[2] for row in comm.customdata]
    assert durations == pytest.approx([i.end_s - i.start_s for i in bars])
    assert durations != pytest.approx([i.end_s for i in bars])


def test_bucket_advice_never_advises_a_larger_bucket_for_the_same_time():
    """Ties within ADVICE_TIE_REL keep the cap in use (25 MiB) or the smaller cap."""
    from costmodel.scenario import Scenario

    s = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8)
    adv = s.bucket_advice()
    low = min(adv.exposed_comm_s)
    best = adv.best_index
    assert adv.exposed_comm_s[best] <= low + adv.tie_s
    tied = [i for i, e in enumerate(adv.exposed_comm_s) if e <= low + adv.tie_s]
    here = adv.caps_bytes.index(s.ddp_bucket_cap_bytes)  # 25 MiB: none given
    if here in tied:
        assert best == here  # the same time: keep today's cap
    else:
        assert adv.caps_bytes[best] == min(adv.caps_bytes[i] for i in tied)
    # a made-up flat curve: every cap ties, so the advice is the cap in use, else the smallest
    steps = [
        ddp.ddp_step(1e9, 8, compute_time_s=1.0, bandwidth_bytes_per_s=1e12, bucket_cap_bytes=c)
        for c in (2**20, 25 * 2**20, 161 * 2**20)
    ]
    caps = np.array([2**20, 25 * 2**20, 161 * 2**20], float)
    flat = ddp.BucketCapSweep.from_steps(caps, steps, prefer_cap_bytes=25 * 2**20)
    assert flat.best_cap_bytes == 25 * 2**20
    assert ddp.BucketCapSweep.from_steps(caps, steps).best_cap_bytes == 2**20


# --- one road: ddp_step is the strategy road's DDP step ------------------------------------------
@pytest.mark.parametrize(
    ("accumulation", "no_sync", "c"), [(3, True, 0.0), (3, False, 0.0), (2, False, 0.6)]
)
def test_ddp_step_with_accumulation_is_the_strategy_step(accumulation, no_sync, c):
    """The lesson's ddp_step and strategy_step("ddp") answer one question with one number, also
    over an accumulation with and without no_sync (the step assembled by one function)."""
    from costmodel import predict
    from costmodel.architecture import load_arch
    from costmodel.compute import ddp_step_overhead_s
    from costmodel.presets import cluster
    from costmodel.strategy import strategy_step

    s = strategy_step(
        arch="llama-2-7b",
        cluster="dgx-h100",
        nodes=2,
        strategy="ddp",
        accumulation=accumulation,
        no_sync=no_sync,
        comm_contention=c,
        compute_time_s=0.25,
        band=False,
    )
    a = load_arch("llama-2-7b")
    ref = ddp_step(
        a.params,
        16,
        compute_time_s=0.25,
        layer_param_counts=a.tensor_sizes,
        allreduce_time_fn=predict.allreduce_time_fn(cluster("dgx-h100", nodes=2), nodes=2),
        accumulation=accumulation,
        no_sync=no_sync,
        comm_contention=c,
        step_overhead_s=ddp_step_overhead_s(len(a.tensor_sizes)),
        tail_s=s.optimizer_s + s.sync_s,  # the engine's optimizer step (ddp: no sync loss)
    )
    assert s.optimizer_s > 0 and s.sync_s == 0
    assert ref.syncs == (1 if no_sync else accumulation)
    for name in ("step_time_s", "compute_s", "comm_s", "exposed_comm_s"):
        assert getattr(ref, name) == pytest.approx(getattr(s, name), rel=1e-12), name
    # the timelines draw the same micro-batches at the same times
    ends = [max(i.end_s for i in ref.timeline if i.micro_batch == m) for m in range(accumulation)]
    got = [max(i.end_s for i in s.timeline if i.micro_batch == m) for m in range(accumulation)]
    ends[-1] += s.optimizer_s  # strategy_step draws the optimizer step, the lesson's step not
    assert ends == pytest.approx(got, rel=1e-12)
