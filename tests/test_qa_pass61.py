"""The sixty-first QA pass: a memory sweep's ddp row says that its ``param_dtype`` is not
applied, as the step sweep's row, ``costmodel memory`` and the step say it; it said nothing."""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel.strategy.layout import Layout
from costmodel.sweep.evaluate import NOTES_SEPARATOR


def _notes(frame, strategy: str) -> list[str]:
    (text,) = frame.loc[frame["strategy"] == strategy, "notes"]
    return text.split(NOTES_SEPARATOR)


@pytest.mark.parametrize(
    "model", [{"params": [7e9]}, {"arch": ["llama-3.1-8b"]}], ids=["count", "arch"]
)
def test_a_memory_sweeps_ddp_row_says_its_gather_dtype_is_not_applied(model):
    want = Layout(strategy="ddp", param_dtype="fp8").param_dtype_note.rstrip(".")
    mem = cm.sweep(kind="memory", strategy=["ddp", "zero1"], ranks=[8], param_dtype=["fp8"],
                   preset=["dgx-h100"], **model)  # fmt: skip
    assert want in _notes(mem, "ddp")
    assert want not in _notes(mem, "zero1")  # zero1 gathers in it: nothing to say
    # the step sweep's row says it in the same words
    step = cm.sweep(kind="step", strategy=["ddp"], nodes=[1], param_dtype=["fp8"],
                    preset=["dgx-h100"], **model)  # fmt: skip
    assert want in _notes(step, "ddp")
    # bf16 (the default) at ddp: no note
    plain = cm.sweep(kind="memory", strategy=["ddp"], ranks=[8], param_dtype=["bf16"],
                     preset=["dgx-h100"], **model)  # fmt: skip
    assert not any(n.startswith("param_dtype") for n in _notes(plain, "ddp"))


# --- what makes it fit: a larger card with a sharding change and recompute full together ------
def test_a_larger_card_is_tried_with_a_sharding_change_and_recompute_together():
    """Llama-3.1-70B under ddp on 2 DGX H100 nodes: no larger card fits alone, with recompute
    full or with one sharding change (fsdp is 193 GB per GPU, fsdp and recompute full 90 GB:
    over the H100's 85.5 GB and under the H200's 141 GB), so the only change offered was 4
    nodes with fsdp and recompute full. The same 16 GPUs as H200s with fsdp and recompute full
    fit, and are offered, priced as the step of that configuration, after the same-hardware
    change."""
    s = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=2)
    adv = s.fit_suggestions()
    by = {c.change: c for c in adv.changes}
    card = "a larger card: hgx-h200 (h200-sxm)"
    triple = by[f"{card} and fsdp and recompute full"]
    assert triple.fits
    assert not by[f"{card} and fsdp"].fits and not by[f"{card} and recompute full"].fits
    assert not any(c.fits for c in adv.changes if c.kind == "larger_card" and c is not triple
                   and c.change.count(" and ") < 2)  # fmt: skip
    alone = s.model_copy(
        update={"cluster": "hgx-h200", "strategy": "fsdp", "zero_stage": 3, "recompute": "full"}
    ).evaluate(scaling=False, flips=False)
    assert triple.step.step_time_s == pytest.approx(alone.step_time_s, rel=1e-9)
    assert triple.step.memory_bytes == pytest.approx(alone.memory_total_bytes, rel=1e-9)
    fitting = [c for c in adv.changes if c.fits]
    assert fitting[0].kind == "more_gpus" and triple in fitting[1:]


def test_no_triple_is_tried_where_a_larger_card_fits_with_less():
    """Llama-3.1-70B on 4 DGX H100 nodes: GB200s with fsdp fit, so no larger card is offered
    with a sharding change and recompute full together (nor evaluated)."""
    adv = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=4).fit_suggestions()
    assert any(c.fits for c in adv.changes if c.kind == "larger_card")
    assert not any(c.kind == "larger_card" and c.change.count(" and ") >= 2 for c in adv.changes)
