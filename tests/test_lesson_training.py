"""The lesson's memory, batch and DDP worked examples, through the public API.

Source: the seed lesson on data parallelism, summarised in docs/lesson.md (sections 3, 8, 9 and
practice problems 1-2). Where the lesson rounds ("about", "~"), the tolerance is the rounding of the figure it
prints: e.g. "0.55 s" is 0.545-0.555, "about 0.73" is 0.725-0.735, "~1.1 TB" is 1.05-1.15 TB.
"""

from __future__ import annotations

import pytest

import costmodel as cm

GB = 1e9


# --- section 9 and practice problem 2: memory ---------------------------------------------------
def test_sixteen_bytes_per_param() -> None:
    r = cm.RECIPES["mixed-adam"]
    assert (r.weight_bytes, r.gradient_bytes, r.master_bytes, r.optimizer_bytes) == (2, 2, 4, 8)
    assert r.bytes_per_param == 16


def test_7b_needs_112_gb_and_70b_about_1_1_tb() -> None:
    assert cm.training_memory(7e9).total_bytes == pytest.approx(112 * GB, rel=1e-12)
    assert cm.training_memory(7e9).total_bytes > 80 * GB  # "already over an 80 GB H100"
    assert 1.05e12 <= cm.training_memory(70e9).total_bytes <= 1.15e12  # "~1.1 TB"


def test_largest_model_in_80_gb_is_5b() -> None:
    assert cm.max_params(80 * GB) == pytest.approx(5e9, rel=1e-12)


def test_30b_needs_480_gb_under_plain_dp_at_any_rank_count() -> None:
    for ranks in (1, 8, 64, 1024):
        m = cm.training_memory(30e9, zero_stage=0, dp_ranks=ranks)
        assert m.total_bytes == pytest.approx(480 * GB, rel=1e-12)
    assert cm.training_memory(30e9).total_bytes / (80 * GB) == pytest.approx(6.0, rel=1e-12)
    with pytest.raises(
        ValueError, match=r"480 GB per rank, 6x the 80 GB available, and no rank count"
    ):
        cm.min_ranks(30e9, 80 * GB, zero_stage=0)


def test_zero3_over_16_gpus_is_30_gb_each() -> None:
    assert cm.training_memory(30e9, zero_stage=3, dp_ranks=16).total_bytes == pytest.approx(
        30 * GB, rel=1e-12
    )
    assert cm.min_ranks(30e9, 80 * GB, zero_stage=3) <= 16


# --- section 3 quiz: batch -------------------------------------------------------------------------
def test_global_batch_quiz() -> None:
    assert cm.global_batch(4, 256, 8) == 8192
    sol = cm.solve_batch(local_batch=4, ranks=64, global_batch=8192)
    assert sol.accumulation == 32  # "raise accumulation from 8 to 32"


def test_goyal_linear_rule_at_8192() -> None:
    # Goyal et al.: lr 0.1 for batch 256, scaled linearly to batch 8192
    assert cm.scale_learning_rate(0.1, 256, 8192) == pytest.approx(3.2, rel=1e-12)


def test_four_times_more_accumulation_is_four_times_slower() -> None:
    # "each step is ~4x slower in wall-clock": same micro-batch compute, 32 vs 8 micro-batches,
    # no_sync -> one all-reduce per step. Fast fabric so comm is small next to compute.
    kw = dict(compute_time_s=0.1, bandwidth_bytes_per_s=50 * GB)
    s8 = cm.ddp_step(1e9, 256, accumulation=8, **kw)
    s32 = cm.ddp_step(1e9, 64, accumulation=32, **kw)
    assert s32.compute_s / s8.compute_s == pytest.approx(4.0, rel=1e-12)
    assert 3.8 <= s32.step_time_s / s8.step_time_s <= 4.0


# --- practice problem 1: the 7B DDP step -------------------------------------------------------
LESSON = dict(compute_time_s=0.4, bandwidth_bytes_per_s=50 * GB)  # 400 ms, 50 GB/s per GPU


def test_7b_gradients_are_14_gb_and_comm_is_0_55_s() -> None:
    s = cm.ddp_step(7e9, 64, **LESSON)
    assert sum(s.bucket_bytes) == pytest.approx(14 * GB, rel=1e-12)  # bf16 gradients
    assert 0.545 <= s.comm_s <= 0.555  # "27.6/50 ~ 0.55 s"
    # per-GPU bytes 2 (N-1)/N M = 27.6 GB ("~27.6 GB"): comm x bandwidth, latency 0
    assert 27.55e9 <= s.comm_s * 50 * GB <= 27.65e9


def test_7b_step_is_comms_bound_with_efficiency_about_0_73() -> None:
    s = cm.ddp_step(7e9, 64, **LESSON)
    assert s.bound == "comms"
    assert 0.545 <= s.perfect_overlap_step_s <= 0.555  # "T_step ~ max(400, 550) = 550 ms"
    assert 0.715 <= s.perfect_overlap_efficiency <= 0.735  # "400/550 ~ 73%" (0.7256)
    assert s.exposed_comm_s >= 0.15  # ">= 150 ms of comm is exposed"
    assert s.step_time_s >= s.perfect_overlap_step_s
    assert s.efficiency <= s.perfect_overlap_efficiency


@pytest.mark.parametrize(
    "change",
    [
        dict(bandwidth_bytes_per_s=100 * GB),  # XDR, 100 GB/s per GPU
        dict(gradient_bytes_per_param=1),  # fp8 gradients halve M
        dict(algorithm="nvls"),  # in-network reduction: ~(N-1)/N M per GPU instead of 2(N-1)/N M
    ],
    ids=["xdr", "fp8-gradients", "in-network-reduction"],
)
def test_each_change_flips_the_verdict(change) -> None:
    s = cm.ddp_step(7e9, 64, **{**LESSON, **change})
    # "roughly halves the transfer to ~275 ms": 0.2756 for XDR and fp8, 0.2844 for NVLS's (N+1)/N
    assert 0.27 <= s.comm_s <= 0.29
    assert s.bound == "compute"


# --- section 8 quiz: which bucket is exposed, and smaller batches hurt -------------------------
def test_last_layer_bucket_goes_first_and_first_layer_bucket_last() -> None:
    layers = [1e6] * 40  # registration order: layer 0 is the input layer
    buckets = cm.bucket_assignment([c * 2 for c in layers])
    assert 39 in buckets[0]  # the last layer's gradient is ready first
    assert 0 in buckets[-1]  # the first layer's bucket is the exposed tail
    s = cm.ddp_step(
        4e7, 64, compute_time_s=0.1, bandwidth_bytes_per_s=50 * GB, layer_param_counts=layers
    )
    last = [iv for iv in s.timeline if iv.kind == "allreduce"][-1]
    backward = [iv for iv in s.timeline if iv.kind == "backward"][-1]
    assert last.start_s >= backward.end_s - 1e-12  # it starts only when backward is done


def test_smaller_per_gpu_batch_lowers_efficiency() -> None:
    effs = [
        cm.ddp_step(7e9, 64, compute_time_s=c, bandwidth_bytes_per_s=50 * GB).efficiency
        for c in (1.6, 0.8, 0.4, 0.2)
    ]
    assert all(b < a for a, b in zip(effs, effs[1:], strict=False))
