"""Headless (AppTest) checks from the thirty-third QA pass (a new user planning a run: a
14 GB all-reduce on 64 H100s, Llama-3.1-70B under ZeRO-3/FSDP/HSDP on 64 GPUs, days and
dollars on two GPUs side by side, the batch in tokens, an nccl-tests log in Validate).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

#: Llama-3.1-70B under FSDP with full recomputation on 8 DGX H100 nodes (it fits), B on H200s.
STEP_70B = {
    "ddp_arch": "llama-3.1-70b",
    "ddp_nodes": "8",
    "ddp_strategy": "fsdp",
    "ddp_recompute": "full",
    "ddp_price": "aws-p5-on-demand",
}


def _warnings(at) -> list[str]:
    return [_text(w.value) for w in at.warning]


def test_a_measured_step_beside_bs_predicted_one_is_said() -> None:
    """The measured step box is A's: B's days and dollars stay at B's predicted step, so A's
    measured 6 s beside B's predicted 5.77 s compared a measurement with a prediction without
    a word; the page now says so, naming A's predicted step."""
    at = open_page(
        "page_ddp.py",
        {**STEP_70B, "ddp_pin": "true", "ddp_b_cluster": "hgx-h200", "ddp_measured_step": "6s"},
    )
    assert_clean(at)
    m = metrics(at)
    assert m["MFU implied by the measured step (A)"]
    assert "MFU at the predicted step (B)" in m
    said = [w for w in _warnings(at) if "measured step" in w]
    assert len(said) == 1, _warnings(at)
    assert "A's time and cost are at your measured step (6 s)" in said[0], said
    assert "B's at its predicted step (5.77 s)" in said[0], said
    assert f"A's predicted step is {m['Step time']}" in said[0], said


def test_a_measured_step_without_b_has_no_such_warning() -> None:
    at = open_page("page_ddp.py", {**STEP_70B, "ddp_measured_step": "6s"})
    assert_clean(at)
    assert not [w for w in _warnings(at) if "measured step" in w], _warnings(at)


def test_a_typed_hidden_size_is_not_refused_by_the_greyed_heads_box() -> None:
    """A bare 70B count with its activations sized at a typed shape (80 layers, hidden 8192):
    under FlashAttention (the default) the Heads box is greyed, the scores it sizes are not
    kept, yet its default (69 heads, the count's own shape) refused the hidden size, "Hidden
    size: must be a multiple of the 69 Heads", naming a box that cannot be changed. The greyed
    box no longer refuses: the memory is the same as with 64 heads typed."""
    shape = {
        "params": "70B",
        "dp_ranks": "64",
        "zero_stage": "3",
        "shape_activations": "true",
        "layers": "80",
        "hidden": "8192",
    }
    at = open_page("page_memory.py", shape)
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    assert at.number_input(key="heads").disabled
    ungreyed = open_page("page_memory.py", {**shape, "heads": "64"})
    key = "Memory per GPU, ZeRO-3"
    assert metrics(at)[key] == metrics(ungreyed)[key] == "116 GB"
    # with the box in use (no FlashAttention), its default is still checked, and named
    at = open_page("page_memory.py", {**shape, "flash": "false"})
    said = [_text(e.value) for e in at.error]
    assert len(said) == 1 and "multiple of the 69 Heads" in said[0], said
