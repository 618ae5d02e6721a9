"""QA pass 40: physical invariants of the data-parallel step (ddp, zero1, zero2, fsdp, hsdp),
as derandomized property tests beside tests/test_qa_pass37.py's.

- more bytes on the wire never make a step faster: an fp32 gradient reduction is never faster
  than a bf16 one, nor an fp32 or bf16 parameter gather than an fp8 one (the compute is
  calibrated on one node in fixed dtypes, ``step.CALIBRATION_DTYPES``; calibrated in the
  layout's own, fsdp's fp32 reduction came out faster than bf16's);

Each test here that pins a fix failed before it (CHANGELOG, Unreleased).
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodel as cm
from costmodel.strategy import strategy_step

FAST = {"band": False, "timeline": False}
STRATEGIES = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
MODELS = ("llama-3.1-8b", "llama-2-7b", 1e9, 3e10)
#: a step's time may differ by float rounding between two schedules of equal work
ROUND = 1e-9


def _step(model: object, **kw: object) -> cm.StrategyStep:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration and extrapolation warnings: not the point
        if isinstance(model, str):
            return strategy_step(arch=model, **FAST, **kw)  # type: ignore[arg-type]
        return strategy_step(model, **FAST, **kw)  # type: ignore[arg-type]


# --- more bytes communicated: never a faster step -----------------------------------------------
def test_an_fp32_gradient_reduction_is_not_faster_than_bf16_on_fsdp() -> None:
    """The finding: fsdp on one and four DGX H100 nodes with llama-3.1-8b reduced its gradients
    in fp32 0.05 ms and 0.003 ms faster than in bf16, because the one-node calibration
    reduced in the layout's dtype and took the extra reduction out of the compute."""
    for nodes in (1, 4):
        fp32 = _step("llama-3.1-8b", strategy="fsdp", nodes=nodes, grad_dtype="fp32")
        bf16 = _step("llama-3.1-8b", strategy="fsdp", nodes=nodes, grad_dtype="bf16")
        assert fp32.compute_s == bf16.compute_s  # one compute whatever the dtype
        assert fp32.step_time_s > bf16.step_time_s


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_more_bytes_on_the_wire_never_make_the_step_faster(data: st.DataObject) -> None:
    strategy = data.draw(st.sampled_from(STRATEGIES), "strategy")
    model = data.draw(st.sampled_from(MODELS), "model")
    kw = dict(
        cluster=data.draw(st.sampled_from(("dgx-h100", "dgx-a100")), "cluster"),
        nodes=data.draw(st.sampled_from((1, 2, 4)), "nodes"),
        strategy=strategy,
        accumulation=data.draw(st.sampled_from((1, 2)), "accumulation"),
        comm_contention=data.draw(st.sampled_from((None, 0.0, 0.5)), "contention"),
    )
    grads = [_step(model, grad_dtype=d, **kw) for d in ("bf16", "fp16", "fp32")]
    assert grads[0].step_time_s == pytest.approx(grads[1].step_time_s, rel=ROUND)  # 2 B each
    assert grads[2].step_time_s >= grads[0].step_time_s * (1 - ROUND)
    assert len({s.compute_s for s in grads}) == 1
    if strategy == "ddp":  # it gathers no parameters
        return
    dtypes = ("fp8", "bf16", "fp32") if kw["cluster"] == "dgx-h100" else ("bf16", "fp32")
    params = [_step(model, param_dtype=d, **kw) for d in dtypes]
    for less, more in zip(params, params[1:], strict=False):
        assert more.step_time_s >= less.step_time_s * (1 - ROUND)
    assert len({s.compute_s for s in params}) == 1
