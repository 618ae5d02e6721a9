"""Every text input of every app page, given hostile text, shows it as text (AppTest).

The red messages quote what the user typed; they all pass through one escaping function
(costmodel.web.common.error / show_error), so a Markdown image or link typed into any box
(or put in a shared URL) is never rendered. Also the page defects of bad values: the DDP page's
configuration B refused without an exception, the Memory page's activations at 1e9.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

WEB = Path(__file__).resolve().parents[1] / "costmodel" / "web"
PAGES = sorted(p.name for p in WEB.glob("page_*.py"))
# query parameters that reveal the second configuration's inputs (B) on the pages that have one
REVEAL = {"page_ddp.py": {"ddp_pin": "true"}, "page_memory.py": {"mem_pin": "true"}}
PAYLOAD = "![x](https://attacker.invalid/p.png) [y](https://attacker.invalid) <b>z</b>"
# an unescaped Markdown image or link: "](" or "![" without a backslash before the bracket
_LIVE = re.compile(r"(?<!\\)!\[|(?<!\\)\]\(")


def _open(page: str) -> AppTest:
    at = AppTest.from_file(str(WEB / page), default_timeout=120)
    at.query_params.update(REVEAL.get(page, {}))
    return at.run()


def _shown(at: AppTest) -> list[str]:
    out = []
    for kind in ("error", "warning", "info", "success", "markdown", "caption"):
        out += [str(getattr(e, "value", getattr(e, "body", ""))) for e in getattr(at, kind)]
    return out


def test_no_page_calls_st_error_itself() -> None:
    """Every red message goes through web.common (which escapes): the one place to audit."""
    for page in PAGES:
        text = (WEB / page).read_text()
        assert "st.error(" not in text, page


@pytest.mark.parametrize("page", PAGES)
def test_every_text_input_shows_hostile_text_as_text(page: str) -> None:
    at = _open(page)
    assert not at.exception, [e.value for e in at.exception]
    keys = [w.key for w in at.text_input if w.key]
    if page in ("page_memory.py", "page_ddp.py", "page_collectives.py"):
        assert keys, f"{page}: no text input found"
    for key in keys:
        at.text_input(key=key).set_value(PAYLOAD).run()
        assert not at.exception, (page, key, [e.value for e in at.exception])
        live = [s for s in _shown(at) if "attacker" in s and _LIVE.search(s)]
        assert not live, (page, key, live)
        at = _open(page)


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "1000001"])
def test_ddp_page_b_nodes_out_of_range_is_a_red_message_only(value: str) -> None:
    at = _open("page_ddp.py")
    at.text_input(key="ddp_b_nodes").set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.error, "the refused B value says why"


CUSTOM = {"arch": "custom (parameter count)"}


@pytest.mark.parametrize(
    "query",
    [
        {"act_seq": "1000000000"},
        {"micro": "1000000000"},
        {**CUSTOM, "layers": "1000000000"},
        {**CUSTOM, "hidden": "1000000000"},
    ],
)
def test_memory_page_huge_activation_inputs_answer_or_refuse(query: dict[str, str]) -> None:
    """Activations of 1e9 layers, hidden size, tokens or sequences: an answer or a red
    message, never ZeroDivisionError (max_params divided by a per-parameter slope of 0)."""
    at = AppTest.from_file(str(WEB / "page_memory.py"), default_timeout=120)
    at.query_params.update(query)
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e for e in at.error if "ZeroDivision" in str(e.value)]


def test_a_rule_over_several_fields_is_shown_without_a_python_repr():
    """Two nodes of a preset without NICs: the model-level rule's message, not a repr of every
    field ("(got {'arch': None, 'flash_attention': True, ...})" before); a field's own value
    is still quoted."""
    at = AppTest.from_file(str(WEB / "page_ddp.py"), default_timeout=120)
    at.query_params.update({"ddp_cluster": "pcie-8x-l40s", "ddp_nodes": "2"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(e.value for e in at.error)
    assert "Nodes\\: 2 nodes but the node has no network" in said, said
    assert "{" not in said and "arch" not in said, said
    from pydantic import BaseModel, Field, ValidationError

    from costmodel.web.common import _got

    class One(BaseModel):
        n: int = Field(ge=1)

    with pytest.raises(ValidationError) as refused:
        One(n=0)
    assert _got(refused.value.errors()[0]) == " (got 0)"


def test_ddp_page_refused_parameter_count_is_said_under_the_first_row() -> None:
    """The step page read its parameter box after every other box, so a refused count's red
    line stood under them all: on a 390 px phone about 1,400 px below the box, the answer gone
    and the reason out of sight (chromium). It is now said under the first row of inputs, as
    the Memory page says its own, before the second row's first box."""
    at = AppTest.from_file(str(WEB / "page_ddp.py"), default_timeout=120)
    at.query_params["ddp_params"] = "-5"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    order = [
        ("error", str(n.value)) if n.type == "error" else ("box", n.label)
        for n in at.main
        if n.type in ("error", "number_input", "text_input", "selectbox")
    ]
    said = [i for i, (kind, text) in enumerate(order) if kind == "error"]
    assert len(said) == 1 and "Model parameters P" in order[said[0]][1], order
    boxes = [text for kind, text in order[: said[0]] if kind == "box"]
    assert boxes == ["Model", "Model parameters P", "Cluster", "Nodes"], order
    assert order[said[0] + 1] == ("box", "Local batch per GPU [samples]"), order


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"batch_ranks": "0"}, "Data-parallel ranks N [GPUs]: must be a whole number"),
        ({"batch_ranks": "16384"}, "is not a whole number"),  # 8192 / (4 x 16384) steps
    ],
)
def test_batch_page_refused_split_is_said_under_its_boxes(query: dict, said: str) -> None:
    """The Batch page solved the split after the learning-rate boxes, so a refused split's red
    line stood under the "Learning-rate scaling" header and its boxes, as if it were theirs,
    on a 390 px phone about 700 px below the box it names (chromium). It is now said under the
    split's boxes, before that header."""
    at = AppTest.from_file(str(WEB / "page_batch.py"), default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    order = [
        # the red line's text without its Markdown escapes
        (
            n.type,
            str(getattr(n, "value", "")).replace("\\", "") if n.type != "number_input" else n.label,
        )
        for n in at.main
        if n.type in ("error", "number_input", "subheader")
    ]
    errors = [i for i, (kind, _) in enumerate(order) if kind == "error"]
    assert len(errors) == 1 and said in order[errors[0]][1], order
    lr = order.index(("subheader", "Learning-rate scaling"))
    assert errors[0] < lr, order
    assert order[errors[0] - 1] == ("number_input", "Global batch [samples]"), order


def test_compare_table_says_no_negative_zero_points() -> None:
    """The step page's A/B table said "-0.0 pt" for scaling efficiencies of 99.7 % and 99.7 %
    (B under 0.05 pt lower; chromium, 390 px); a gap under 0.05 pt reads +0.0 pt."""
    from costmodel.web.page_ddp import _diff

    assert _diff({"difference": -0.0003, "unit": "%"}) == "+0.0 pt"
    assert _diff({"difference": -0.0006, "unit": "%"}) == "-0.1 pt"
    assert _diff({"difference": 0.012, "unit": "%"}) == "+1.2 pt"
