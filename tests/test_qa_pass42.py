"""ZeRO-1/2 memory against DeepSpeed's code: the parameter all-gather holds no bucket of its
own. DeepSpeed (deepspeed/runtime/zero/stage_1_and_2.py ``step``, deepspeed/runtime/utils.py
``all_gather_dp_groups``) copies each rank's updated partition into its slice of the flat
weight buffer and gathers into that same buffer, so the gathered weights are the replicated
weights the state counts already; only the gradients pass through a bucket (the ipg buffers
of ``reduce_bucket_size`` elements, allocated whole: ``setup_buckets``, tests/test_qa_pass43.py;
two with the step's overlap, in the weights' dtype: tests/test_qa_pass45.py).
With the extra parameter bucket, zero1 held more than ddp beside an optimizer of little state
and fp32 gathers.

- memory per GPU never rises from zero1 to zero2, nor from ddp to zero1 for a model of at
  least one bucket (below it DeepSpeed's whole ipg buffer can outweigh what ZeRO-1 shards),
  for every recipe, gather and gradient dtype, rank count, parameter count and bucket cap;
- zero1/zero2's buffers are whole gradient buckets (two with overlap), whatever the gather
  dtype.

Each test failed before the fix.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodel as cm
from costmodel.memory import RECIPES
from costmodel.strategy import Layout, strategy_memory
from costmodel.strategy.memory import stage_memory


def test_zero1_holds_no_parameter_bucket_with_sgd_momentum_and_fp32_gathers() -> None:
    """The finding: 1e8 parameters on 576 GB200 GPUs (8 NVL72 racks), sgd-momentum, fp32
    gathers: zero1 held a gradient bucket and a parameter bucket. It holds DeepSpeed's whole
    ipg buffers (two of 5e8 fp32 elements with overlap_comm, 4 GB: more than the 0.4 GB of
    momentum it shards, so above ddp here, as DeepSpeed is) and nothing for the gather."""
    kw = dict(cluster="gb200-nvl72", nodes=8, recipe="sgd-momentum", param_dtype="fp32", band=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings: not the point
        mem = {
            s: cm.strategy_step(1e8, strategy=s, timeline=False, **kw).memory_bytes
            for s in ("ddp", "zero1", "zero2")
        }
    assert mem["ddp"] == pytest.approx(1.6e9, rel=1e-12)  # 12 B state + 4 B bucket copy
    # 4 B weights + 4 B gradients + 4 B / 576 momentum + the ipg buffers, 2 x 5e8 x 4 B
    assert mem["zero1"] == pytest.approx(1e8 * (4 + 4 + 4 / 576) + 2 * 5e8 * 4, rel=1e-12)
    assert mem["zero1"] > mem["zero2"]


@pytest.mark.parametrize("param_dtype", ["bf16", "fp16", "fp8", "fp32"])
@pytest.mark.parametrize("strategy", ["zero1", "zero2"])
def test_zero_buffers_are_one_gradient_bucket_whatever_the_gather_dtype(
    strategy: str, param_dtype: str
) -> None:
    """The all-gather writes into the weights: the gather dtype changes no buffer."""
    for p, bucket in ((7e9, 2 * 5e8 * 2), (1e8, 2 * 5e8 * 2)):  # whole buckets, even above P g
        m = strategy_memory(Layout(strategy=strategy, ranks=8, param_dtype=param_dtype), p)
        assert m.buffers_bytes == bucket
        assert m.gathered_bytes == 0.0
    fp32 = strategy_memory(Layout(strategy=strategy, ranks=8, grad_dtype="fp32"), 7e9)
    assert fp32.buffers_bytes == 2 * 5e8 * 2  # reduce_bucket_size elements of the bf16 weights
    cap = strategy_memory(
        Layout(strategy=strategy, ranks=8, param_dtype=param_dtype, bucket_cap_bytes=2**20), 7e9
    )
    assert cap.buffers_bytes == 2 * 2**20  # an explicit bucket: two of it (overlap)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    recipe=st.sampled_from(sorted(RECIPES)),
    param_dtype=st.sampled_from(("bf16", "fp16", "fp8", "fp32")),
    grad_dtype=st.sampled_from((None, "fp32", "bf16", "fp16")),
    ranks=st.sampled_from((1, 2, 3, 8, 72, 576, 4096, 10**6)),
    params=st.sampled_from((1.0, 1e6, 1e8, 5e8, 7e9, 4.05e11)),
    bucket=st.sampled_from((None, 2**20, 1e10)),
)
def test_memory_never_rises_from_ddp_to_zero1_to_zero2(
    recipe: str,
    param_dtype: str,
    grad_dtype: str | None,
    ranks: int,
    params: float,
    bucket: float | None,
) -> None:
    """zero1 >= zero2 per GPU, all else equal, and ddp >= zero1 for a model of at least one
    bucket: the sharded state only shrinks with the stage, and ZeRO's gradient buffers are
    then at most DDP's bucket copy of every gradient. Below one bucket only the state is
    ordered (DeepSpeed's ipg buffer is allocated whole, tests/test_qa_pass43.py)."""
    kw = dict(ranks=ranks, param_dtype=param_dtype, grad_dtype=grad_dtype)
    ms = [
        strategy_memory(
            Layout(strategy=s, bucket_cap_bytes=None if s == "ddp" else bucket, **kw),
            params,
            recipe=recipe,
        )
        for s in ("ddp", "zero1", "zero2")
    ]
    mem = [m.total_bytes for m in ms]
    assert mem[2] <= mem[1] * (1 + 1e-12)
    state = [t - m.buffers_bytes - m.gathered_bytes for t, m in zip(mem, ms, strict=True)]
    assert state[1] <= state[0] * (1 + 1e-12)
    if ranks > 1 and ms[0].buffers_bytes >= ms[1].buffers_bytes:  # at least one bucket
        assert mem[1] <= mem[0] * (1 + 1e-12)


def test_the_stage_surfaces_say_the_same_order() -> None:
    """``stage_memory`` (``costmodel memory``, the Memory page, the memory sweep) sizes the
    same layouts: the finding's case the same there too."""
    mem = [stage_memory(z, 576, 1e8, recipe="sgd-momentum").total_bytes for z in (0, 1, 2)]
    assert mem[1] > mem[2]
    assert mem[1] == pytest.approx(1e8 * (4 + 4 + 4 / 576) + 2 * 5e8 * 4, rel=1e-12)
