"""Headless app tests from the sixth QA pass (streamlit.testing AppTest), a new user planning a
training run on the Training step page: each one failed on the defect it names before its fix."""

from __future__ import annotations

import pytest

from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, open_page

SMALL = {"ddp_arch": "llama-3.1-8b", "ddp_nodes": "2", "ddp_strategy": "fsdp"}


@pytest.mark.parametrize("tokens", ["-5T", "0", "1e40"])
def test_tokens_to_train_are_refused_with_the_cli_s_range(tokens):
    """ "-5T" was refused as "must be a finite number ≥ 0" (0 is refused too, by the CLI's
    1..1e16), and 0 or 1e40 reached the cost as numbers: the page's range is the CLI's."""
    at = open_page("page_ddp.py", SMALL)
    at.text_input(key="ddp_tokens").set_value(tokens).run()  # typed (a URL's 1e40 is refused)
    assert_clean(at)
    cli = one_line_error(run("train", "--arch", "llama-3.1-8b", "--tokens", tokens))
    said = [_text(e.value) for e in at.error]
    assert any("Tokens to train" in s and "a token count in 1..1e16" in s for s in said), said
    assert "1..1e16" in cli
    assert not [m for m in at.metric if m.label.startswith("Wall clock")]


@pytest.mark.parametrize(("seq", "bound"), [("0", "1"), ("1000000000", "100,000,000")])
def test_a_sequence_length_out_of_range_says_the_range(seq, bound):
    """Sequence length 0 showed "Input should be greater than or equal to 1 (got 0)": one bound,
    where the CLI's one line says both; the page now says the CLI's range in its words."""
    at = open_page("page_ddp.py", {**SMALL, "ddp_seq": seq})
    assert_clean(at)
    said = " ".join(_text(e.value) for e in at.error)
    rule = "must be a whole number in 1..100,000,000 tokens"
    assert f"Sequence length [tokens]: {rule}" in said and "allowed: [" not in said, said
    assert rule in one_line_error(run("step", "--seq", seq))
    assert bound in said


def test_the_scaling_table_names_memory_and_fit_as_the_strategy_table_does():
    """The step page's "Step time and efficiency vs node count" table had the API's column
    names "memory_bytes" and "fits" with True/False beside "step" and "tokens/s", where the
    strategy table above it says "memory per GPU" and "yes"/"NO"."""
    at = open_page("page_ddp.py", {"ddp_arch": "llama-3.1-70b", "ddp_nodes": "8"})
    assert_clean(at)
    text = next(
        _text(m.value) for m in at.markdown if "| scaling efficiency |" in _text(m.value)
    )  # the scaling table, written out as text
    header = text.splitlines()[0]
    assert "memory per GPU" in header and "memory_bytes" not in header, header
    assert "False" not in text and "| NO" in text, text
