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
