"""Headless (AppTest) checks from the thirty-fifth QA pass (a new user planning a run: edge
values in every box and link, A against B, presets, uploads).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


@pytest.mark.parametrize(
    ("page", "key", "text", "label"),
    [
        ("page_ddp.py", "ddp_power", "500W", "GPU power limit [W] (optional)"),
        ("page_ddp.py", "ddp_usd", "$3", "USD per GPU-hour (h100-sxm)"),
        ("page_ddp.py", "ddp_contention", "abc", "Overlap contention c [0-1]"),
        ("page_batch.py", "base_lr", "3e-4x", "Base learning rate [-]"),
        ("page_memory.py", "fragmentation", "5%", "Fragmentation allowance"),
    ],
)
def test_a_link_with_text_in_a_fraction_box_is_named(page, key, text, label) -> None:
    """A whole-number box's link that holds no number was named in red ("is not a whole
    number ..., the default is used"); a box of fractions dropped it without a word
    (``?ddp_power=500W`` ran at the datasheet's 700 W, ``?ddp_usd=$3`` at the $2
    placeholder). Now it is named, with the box, and the URL loses it."""
    at = open_page(page, {key: text})
    assert_clean(at)
    said = [e for e in _errors(at) if f"URL parameter {key}: {text!r} is not a number" in e]
    assert said and label in said[0] and "the default is used" in said[0], _errors(at)
    assert key not in at.query_params


def test_a_link_with_text_in_a_bounded_fraction_box_names_its_range() -> None:
    at = open_page("page_ddp.py", {"ddp_contention": "high"})
    assert any("an overlap contention in [0, 1]" in e for e in _errors(at)), _errors(at)


def test_a_fraction_boxs_number_in_a_link_is_still_read() -> None:
    at = open_page("page_ddp.py", {"ddp_usd": "3.5"})
    assert_clean(at)
    assert not [e for e in _errors(at) if "URL parameter" in e], _errors(at)
    assert metrics(at)["Cost [USD]"] != metrics(open_page("page_ddp.py"))["Cost [USD]"]


def test_tokens_to_train_reads_the_token_grammar_of_train() -> None:
    """``train --tokens 2Ti`` (2 x 2^40 tokens, the token grammar of every token option) was
    refused by the step page's "Tokens to train" box as "cannot parse '2Ti'", in the bare
    count's words and without the box's range. Now it gives the wall clock of 2,199,023,255,552
    tokens, as the CLI does: 1.0995x that of 2T."""
    binary = open_page("page_ddp.py", {"ddp_tokens": "2Ti"})
    assert_clean(binary)
    assert not _errors(binary), _errors(binary)
    decimal = open_page("page_ddp.py", {"ddp_tokens": "2T"})
    gpu_hours = [float(metrics(a)["GPU-hours"].replace(",", "")) for a in (binary, decimal)]
    assert gpu_hours[0] / gpu_hours[1] == pytest.approx(2**41 / 2e12, rel=1e-3), gpu_hours

