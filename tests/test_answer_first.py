"""costmodel.web.common.answer_first: a new session at a URL seen before gets the answer sent
before the widgets (what the browser draws first), the same page either way, and the widgets'
own values win when they disagree with what was recorded."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from costmodel.web import common

_SCRIPT = """
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from costmodel.web.common import answer_first

ctx = get_script_run_ctx()
sent = st.session_state.setdefault("_sent", [])
send = ctx._enqueue


def record(msg):
    if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
        sent.append(msg.delta.new_element.WhichOneof("type"))
    send(msg)


ctx._enqueue = record


def inputs():
    return {"n": st.number_input("n", value=3, key="n")}


def answer(inp):
    st.metric("square", inp["n"] ** 2)


try:
    answer_first("test_answer_first", inputs, answer)
finally:
    ctx._enqueue = send
"""

_KEY = ("test_answer_first", ())


def _session() -> AppTest:
    at = AppTest.from_string(_SCRIPT, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_second_session_gets_the_answer_before_the_widgets():
    common._FIRST_INPUTS.pop(_KEY, None)
    first = _session()  # records what the widgets gave
    assert first.session_state["_sent"] == ["number_input", "metric"]
    assert common._FIRST_INPUTS[_KEY] == {"n": 3}
    second = _session()
    assert second.session_state["_sent"] == ["metric", "number_input"]
    for at in (first, second):  # the same page: the widget above, the same number
        assert [m.value for m in at.metric] == ["9"]
        assert at.number_input(key="n").value == 3
    second.number_input(key="n").set_value(4)
    second.run()  # a later run of the session: the widgets first, as usual
    assert second.session_state["_sent"][-2:] == ["number_input", "metric"]
    assert [m.value for m in second.metric] == ["16"]


def test_widgets_that_disagree_win():
    common._FIRST_INPUTS[_KEY] = {"n": 5}  # not what the widget gives
    at = _session()
    assert [m.value for m in at.metric] == ["9"], at.metric  # rerun with the widget's 3
    assert _KEY not in common._FIRST_INPUTS  # dropped; the next first session records again
