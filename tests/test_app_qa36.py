"""Headless (AppTest) checks from the thirty-sixth QA pass (a new user planning a run: the
all-reduce, the 70B step, H100 against B200, deep links with bad values).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

import pytest

from tests.test_app import _text, assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

# every switch (checkbox or toggle) bound to the URL, with the link that draws it
SWITCHES = [
    ("page_cluster.py", "cl_sharp", "In-network reduction across nodes (SHARP)", {}),
    ("page_collectives.py", "coll_compare", "Side by side: compare with a second", {}),
    ("page_collectives.py", "coll_all_models", "Every model on this cluster", {}),
    ("page_ddp.py", "ddp_own_mfu", "Set the MFU (else the fitted efficiency)", {}),
    ("page_ddp.py", "ddp_no_sync", "no_sync on all but the last micro-batch", {}),
    ("page_ddp.py", "ddp_reshard", "reshard_after_forward", {"ddp_strategy": "fsdp"}),
    ("page_ddp.py", "ddp_bucket_view", "gradient_as_bucket_view", {}),
    ("page_ddp.py", "ddp_flash", "FlashAttention", {"ddp_arch": "llama-3.1-8b"}),
    ("page_ddp.py", "ddp_pin", "Compare with a second configuration (B)", {}),
    ("page_memory.py", "shape_activations", "Add activations of a transformer shape", {}),
    ("page_memory.py", "activations", "Include activations", {"arch": "llama-3.1-8b"}),
    ("page_memory.py", "flash", "FlashAttention", {"arch": "llama-3.1-8b"}),
    ("page_memory.py", "mem_reshard", "reshard_after_forward", {"zero_stage": "3"}),
    ("page_memory.py", "mem_bucket_view", "gradient_as_bucket_view", {}),
    ("page_memory.py", "mem_pin", "Compare with a second configuration (B)", {}),
]


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


@pytest.mark.parametrize(("page", "key", "label", "query"), SWITCHES)
def test_a_switchs_link_that_is_not_true_or_false_is_named(page, key, label, query) -> None:
    """Streamlit reads a switch's link only as true or false and dropped any other value
    without a word: ``/cluster?cl_sharp=1`` showed the hierarchical times without SHARP,
    ``?ddp_pin=yes`` no B, and the page said nothing. Now the switch is named, with the
    values it takes, and the URL loses the value."""
    at = open_page(page, {**query, key: "1"})
    assert_clean(at)
    said = [e for e in _errors(at) if f"URL parameter {key}: '1' is not a value of " in e]
    assert said, _errors(at)
    assert label in said[0] and "allowed: true, false; the default is used" in said[0], said
    assert key not in at.query_params


@pytest.mark.parametrize("value", ["true", "TRUE", "false"])
def test_a_switchs_true_or_false_in_any_case_is_read_without_a_word(value) -> None:
    """What Streamlit reads is still read: SHARP on (in any case) moves the hierarchical
    times; false is the default."""
    plain = open_page("page_cluster.py")
    at = open_page("page_cluster.py", {"cl_sharp": value})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    serial = {m.label: m.value for m in at.metric}["Hierarchical, serial"]
    before = {m.label: m.value for m in plain.metric}["Hierarchical, serial"]
    assert (serial != before) is (value.lower() == "true"), (serial, before)


@pytest.mark.parametrize(
    ("page", "key", "value", "label"),
    [
        ("page_ddp.py", "ddp_nodes", "inf", "Nodes"),
        ("page_batch.py", "seq_len", "1e30", "Sequence length [tokens per sample]"),
        ("page_memory.py", "micro", "nan", "Local batch per GPU [samples]"),
    ],
)
def test_a_links_non_finite_number_claims_no_range_the_box_does_not_have(
    page, key, value, label
) -> None:
    """A box whose range the page checks later (Nodes: 1..1,000,000) was said to take
    "(-2**53, 2**53)" when a link gave it inf or nan: a range no box of the app has, negative
    nodes included. The box is named and the default used, with no invented range."""
    at = open_page(page, {key: value})
    assert_clean(at)
    said = [e for e in _errors(at) if e.startswith(f"URL parameter {key}: {value} is not a finite")]
    assert said and f"as {label} takes; the default is used" in said[0], _errors(at)
    assert "-2**53" not in said[0], said


def test_a_links_non_finite_number_still_names_the_boxs_own_range() -> None:
    at = open_page("page_ddp.py", {"ddp_gpus_per_node": "inf"})
    assert any("as GPUs per node takes: [1, 1024]" in e for e in _errors(at)), _errors(at)


def test_a_fragmentation_link_past_2_53_gives_the_step_at_the_default() -> None:
    """``/ddp?ddp_fragmentation=1e30`` was said to give the default, and the step was then
    sized at 1e30 (the boxes drawn after the first chart are read from the URL), refused in a
    second red line, and the page showed no step. Now the step is the default one."""
    plain = open_page("page_ddp.py")
    at = open_page("page_ddp.py", {"ddp_fragmentation": "1e30"})
    assert_clean(at)
    errors = _errors(at)
    assert len(errors) == 1 and errors[0].startswith("URL parameter ddp_fragmentation"), errors
    step = {m.label: m.value for m in at.metric}.get("Step time")
    assert step is not None and step == {m.label: m.value for m in plain.metric}["Step time"]
