"""Headless app tests from the seventh QA pass (streamlit.testing AppTest): a shared link read
by a page. Each one failed on the defect it names before its fix."""

from __future__ import annotations

import pytest

from tests.test_app import _text, assert_clean, open_page


@pytest.mark.parametrize(
    ("page", "key", "value", "label", "allowed"),
    [
        ("page_ddp.py", "ddp_strategy", "zero4", "Strategy", "ddp, zero1, zero2, fsdp, hsdp"),
        ("page_memory.py", "recompute", "most", "Recompute", "none, selective, full"),
        ("page_ddp.py", "ddp_cluster", "dgx-h1000", "Cluster", "dgx-h100"),
    ],
)
def test_a_choice_a_link_names_that_is_not_offered_is_said(page, key, value, label, allowed):
    """``/ddp?ddp_strategy=zero4`` showed ddp without a word, while a number out of range in a
    link gets a red message: a choice not offered now gets one too, naming the box and its
    choices, and the page runs with the default."""
    at = open_page(page, {key: value})
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    hit = [s for s in said if repr(value) in s]
    assert len(hit) == 1, said
    assert f"not a choice of {label}; allowed: " in hit[0] and allowed in hit[0], hit
    assert "the default is used" in hit[0]


def test_a_choice_a_link_names_that_is_offered_says_nothing():
    at = open_page("page_ddp.py", {"ddp_strategy": "fsdp", "ddp_arch": "llama-3.1-8b"})
    assert_clean(at)
    assert at.selectbox(key="ddp_strategy").value == "fsdp"
    assert not [e for e in at.error if "URL parameter" in _text(e.value)]
