"""ZeRO-1/2 against DeepSpeed's current code (deepspeedai/DeepSpeed, master of 2026-08-22).

- The parameter all-gather after the optimizer step is one collective of the whole flat
  weight buffer, not ``allgather_bucket_size`` buckets: deepspeed/runtime/zero/stage_1_and_2.py
  ``step`` (line 2396) calls deepspeed/runtime/utils.py ``all_gather_dp_groups`` (line 1016),
  which returns into ``all_gather_into_tensor_dp_groups`` (lines 1018-1019) whenever
  ``dist.has_all_gather_into_tensor()`` (torch has ``all_gather_into_tensor`` or
  ``_all_gather_base``, deepspeed/comm/torch.py lines 143-148): one
  ``dist.all_gather_into_tensor(group_flat, partitioned_params[partition_id], ...)`` per
  parameter group (utils.py line 1013). The bucketed loop (lines 1021-1051) is the fallback
  for a torch without either; no option selects it.
- The contiguous gradient ("ipg") buffer is allocated whole:
  ``DeepSpeedZeroOptimizer.setup_buckets`` (stage_1_and_2.py line 2493) runs
  ``torch.empty(int(self.reduce_bucket_size), ...)`` (line 2502) with ``contiguous_gradients``
  (default True, deepspeed/runtime/zero/config.py line 102), whatever the model's size; the
  memory model counted ``min(P g, cap)``.

Each test failed before the fix (14 bucketed all-gathers for a 7B model; a 1e6-parameter
model's buffer counted at 2e6 B).
"""

from __future__ import annotations

import warnings

import pytest

import costmodel as cm
from costmodel.strategy import Layout, strategy_memory
from costmodel.strategy.memory import stage_memory

P = 1e8  # a small bare count: one all-gather of 2e8 B in bf16


def _step(strategy: str, params: float = P, **kw: object) -> cm.StrategyStep:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings: not the point
        return cm.strategy_step(
            params, cluster="dgx-h100", nodes=2, strategy=strategy, band=False, **kw
        )


def _gathers(s: cm.StrategyStep) -> list:
    return [i for i in s.timeline if i.kind == "all_gather"]


@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_one_all_gather_of_the_flat_buffer_per_step(strategy: str) -> None:
    """One event of ``P w`` bytes, timed by ``predict_collective`` over the job's 16 ranks."""
    s = _step(strategy)
    (ag,) = _gathers(s)
    ring = 15 / 16
    assert s.wire_bytes_by_kind["all_gather"] == pytest.approx(ring * 2 * P, rel=1e-12)
    t = float(cm.predict_collective("all_gather", 2 * P, "dgx-h100", nodes=2).time_s)
    assert ag.end_s - ag.start_s == pytest.approx(t, rel=1e-9)
    assert s.comm_by_kind_s["all_gather"] == pytest.approx(t, rel=1e-9)


@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_the_bucket_does_not_cut_the_gather_nor_does_accumulation_repeat_it(
    strategy: str,
) -> None:
    """``allgather_bucket_size`` (the layout's bucket) cuts only the reduce-scatters; the
    gather runs once per step (after the optimizer), at any accumulation."""
    small = _step(strategy, params=7e9, bucket_cap_bytes=2**20)
    assert len(_gathers(small)) == 1
    assert sum(1 for i in small.timeline if i.kind == "reduce_scatter") > 100
    assert len(_gathers(_step(strategy, params=7e9))) == 1
    assert len(_gathers(_step(strategy, accumulation=4))) == 1


@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_more_bytes_are_never_faster(strategy: str) -> None:
    """More parameters, or a wider gather dtype, never shorten the gather nor the step."""
    gather, step = [], []
    for p in (1e6, 1e8, 1e9, 7e9, 3e10):
        s = _step(strategy, params=p, timeline=False)
        gather.append(s.comm_by_kind_s["all_gather"])
        step.append(s.step_time_s)
    assert gather == sorted(gather) and step == sorted(step)
    bf16 = _step(strategy, params=7e9, timeline=False)
    fp32 = _step(strategy, params=7e9, timeline=False, param_dtype="fp32")
    assert fp32.comm_by_kind_s["all_gather"] > bf16.comm_by_kind_s["all_gather"]
    assert fp32.step_time_s >= bf16.step_time_s


@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_the_ipg_buffer_is_the_whole_reduce_bucket(strategy: str) -> None:
    """setup_buckets' ``torch.empty(int(self.reduce_bucket_size), dtype=self.dtype, ...)``
    (stage_1_and_2.py line 2502): 5e8 elements of the weights' dtype, or the bucket given,
    for any model; two of them with the step's overlap (``overlap_comm``'s second buffer,
    lines 2508-2514; tests/test_qa_pass45.py), one without."""
    for p in (1.0, 1e6, 1e8, 7e9):
        m = strategy_memory(Layout(strategy=strategy, ranks=8), p)
        assert m.buffers_bytes == 2 * 5e8 * 2
        assert (
            strategy_memory(Layout(strategy=strategy, ranks=8), p, overlap=False).buffers_bytes
            == 5e8 * 2
        )
        assert m.gathered_bytes == 0.0  # the gather writes into the weights
    # fp32 gradients beside bf16 weights: the buffers are bf16 (self.dtype, the weights')
    fp32 = strategy_memory(Layout(strategy=strategy, ranks=8, grad_dtype="fp32"), 1e6)
    assert fp32.buffers_bytes == 2 * 5e8 * 2
    given = strategy_memory(Layout(strategy=strategy, ranks=8, bucket_cap_bytes=2**20), 1e3)
    assert given.buffers_bytes == 2 * 2**20
    # one rank holds them too: DeepSpeed allocates them whatever the world size
    assert strategy_memory(Layout(strategy=strategy, ranks=1), 1e6).buffers_bytes == 2 * 5e8 * 2


def test_memory_order_with_the_whole_buffer() -> None:
    """zero1 >= zero2 always; ddp >= zero1 once the model fills a bucket. Below that DeepSpeed's
    whole 2 GB of buffers (two of 1 GB with overlap_comm) outweigh what ZeRO-1 shards of a
    1e6-parameter model (12 MB), so zero1 holds more than ddp, as DeepSpeed does."""
    for p in (1e6, 7e9):
        mem = [stage_memory(z, 8, p).total_bytes for z in (0, 1, 2)]
        assert mem[1] >= mem[2]
        if p == 7e9:
            assert mem[0] >= mem[1]
        else:
            assert mem[1] > mem[0]
            assert mem[1] == pytest.approx(p * (2 + 2 + 12 / 8) + 2e9, rel=1e-12)
    # the step reports the same memory as the memory road
    s = _step("zero1", params=1e6, timeline=False)
    assert s.memory_bytes == pytest.approx(stage_memory(1, 16, 1e6).total_bytes, rel=1e-12)
