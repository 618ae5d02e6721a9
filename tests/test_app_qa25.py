"""Whole-number boxes take a typed count as the number it is (headless, AppTest).

Streamlit's frontend reads an int box's text with ``parseInt``: ``1e1`` typed into Nodes ran on
1 node and ``2.5`` on 2, and the server never saw the text. costmodel.web.common.bound_number
now draws a box whose value, step and bounds are whole numbers as a float box shown without
decimals (the frontend reads it with ``parseFloat``), names a fraction in a red message (the
box back at its default, as for a fraction in its URL), gives the page an int, and writes the
URL itself as digits (Streamlit's binding wrote a float box's value back as ``16.0``). What the
browser does with the typed text is checked in chromium (tests/test_browser_qa24.py).
"""

from __future__ import annotations

import pytest
from streamlit.proto.NumberInput_pb2 import NumberInput as NumberInputProto

from tests.test_app import assert_clean, open_page
from tests.test_app_page_state import _open, _switch

#: whole-number boxes of each page's first view: (page, key, label, default)
WHOLE = [
    ("page_cluster.py", "cl_nodes", "Nodes", 4),
    ("page_ddp.py", "ddp_nodes", "Nodes", 4),
    ("page_ddp.py", "ddp_accumulation", "Accumulation steps [-]", 1),
    ("page_batch.py", "batch_ranks", "Data-parallel ranks N [GPUs]", 64),
    ("page_batch.py", "warmup", "Warmup steps [-]", 500),
    ("page_memory.py", "dp_ranks", "Data-parallel ranks N [GPUs]", 8),
    ("page_collectives.py", "nccl_nodes", "Nodes", 1),
]


def _errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]  # without the markdown escapes


@pytest.mark.parametrize(("page", "key", "label", "default"), WHOLE, ids=[w[1] for w in WHOLE])
def test_a_whole_number_box_is_a_float_box_the_app_binds_itself(page, key, label, default):
    """parseFloat in the browser (an int box's parseInt cut ``1e1`` to 1), no decimals shown,
    and no Streamlit binding (it wrote ``16.0``)."""
    at = open_page(page)
    assert_clean(at)
    box = at.number_input(key=key)
    assert box.label.startswith(label)
    assert box.proto.data_type == NumberInputProto.FLOAT
    assert box.proto.format == "%.0f"
    assert not box.proto.HasField("query_param_key")
    assert box.value == default


@pytest.mark.parametrize(("page", "key", "label", "default"), WHOLE, ids=[w[1] for w in WHOLE])
def test_a_typed_whole_number_reaches_the_url_as_digits(page, key, label, default):
    at = open_page(page)
    at.number_input(key=key).set_value(10.0).run()  # what the browser sends for `1e1`
    assert_clean(at)
    assert at.number_input(key=key).value == 10
    assert at.query_params[key] == "10"
    assert not [e for e in _errors(at) if f"as {label} takes" in e], _errors(at)
    at.number_input(key=key).set_value(float(default)).run()  # back at the default: left out
    assert key not in at.query_params


@pytest.mark.parametrize(("page", "key", "label", "default"), WHOLE, ids=[w[1] for w in WHOLE])
def test_a_typed_fraction_is_named_and_the_default_used(page, key, label, default):
    """``2.5``: a red message naming the box and its range, the box at its default (as
    ``?key=2.5`` gives), the URL without the key; the page never runs on 2."""
    at = open_page(page)
    at.number_input(key=key).set_value(12.0).run()
    at.number_input(key=key).set_value(2.5).run()
    assert_clean(at)
    assert any(
        f"{label}: 2.5 is not a whole number, as {label} takes: (-2**53, 2**53); the default "
        "is used" in e
        for e in _errors(at)
    ), _errors(at)
    assert at.number_input(key=key).value == default
    assert key not in at.query_params
    at.run()  # the message is for the run that read the fraction
    assert not [e for e in _errors(at) if "2.5 is not a whole number" in e]


def test_a_fraction_in_a_bounded_box_names_its_range():
    """The Validate page's GPUs per node (a box the page also sets): its range 1..1,024, in
    the words of ``--gpus-per-node`` (the box keeps the shared limit, ``limit="gpus_per_node"``)."""
    at = open_page("page_validate.py", {"val_source": "reference"})
    at.number_input(key="val_gpus_per_node").set_value(2.5).run()
    assert_clean(at)
    assert any(
        "GPUs per node: must be a whole number in 1..1,024, got 2.5; the default is used" in e
        for e in _errors(at)
    ), _errors(at)
    assert at.number_input(key="val_gpus_per_node").value is None  # its default: from the log


def test_the_page_runs_on_the_same_count_typed_or_linked():
    """Nodes typed as 10 (a float in the box) gives the answer ``?cl_nodes=10`` gives."""
    typed = open_page("page_cluster.py")
    typed.number_input(key="cl_nodes").set_value(10.0).run()
    linked = open_page("page_cluster.py", {"cl_nodes": "1e1"})
    assert_clean(typed)
    assert_clean(linked)
    assert [(m.label, m.value) for m in typed.metric] == [(m.label, m.value) for m in linked.metric]
    shown = [m.value for m in open_page("page_cluster.py").metric]
    assert [m.value for m in typed.metric] != shown  # 10 nodes, not the default 4


def test_a_typed_count_comes_back_as_digits_after_a_page_switch():
    """The URL after Memory -> Batch -> Memory reads ``dp_ranks=16``, not ``16.0``."""
    at = _open("page_memory.py")
    at.number_input(key="dp_ranks").set_value(16.0).run()
    _switch(at, "page_batch.py")
    _switch(at, "page_memory.py")
    at.run()
    assert_clean(at)
    assert at.number_input(key="dp_ranks").value == 16
    assert at.query_params["dp_ranks"] == "16"
