"""The secondary inputs behind "More inputs" (costmodel.web.common.MoreInputs), headless
(AppTest): closed, none of them is drawn and the page gives the same answer as open; a value
set while open is kept when the section is closed, reopened and after a page switch; a URL
that sets one opens the section.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from costmodel.web import page_collectives, page_memory

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "costmodel" / "web"

# page -> (section key, its keys, a secondary input: (kind, key, a value other than its default))
SECTIONS = {
    "page_memory.py": ("mem_more", page_memory.MORE_KEYS, ("number_input", "act_seq", 8192)),
    "page_collectives.py": (
        "coll_more",
        page_collectives.MORE_KEYS,
        ("radio", "coll_model", "textbook"),
    ),
}


def _open(page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(WEB / page), default_timeout=60)
    at.query_params.update(query or {})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _answer(at: AppTest) -> tuple:
    """What the page answers: its headline sentence and its metrics."""
    return tuple(h.value for h in at.subheader), tuple((m.label, m.value) for m in at.metric)


def _drawn(at: AppTest, keys) -> set[str]:
    kinds = ("number_input", "text_input", "selectbox", "radio", "checkbox", "toggle")
    return {w.key for kind in kinds for w in getattr(at, kind) if w.key in keys}


def _set(at: AppTest, section: str, is_open: bool) -> None:
    at.session_state[section] = is_open  # the user opens or closes the section
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("page", SECTIONS)
def test_closed_section_draws_nothing_and_answers_as_open(page):
    section, keys, _ = SECTIONS[page]
    at = _open(page)
    assert not _drawn(at, keys), "a closed section draws none of its inputs"
    closed = _answer(at)
    _set(at, section, True)
    assert _drawn(at, keys), "open, its inputs are drawn"
    assert _answer(at) == closed  # the same defaults open and closed


@pytest.mark.parametrize("page", SECTIONS)
def test_a_value_set_in_the_section_is_kept_closed_and_reopened(page):
    section, keys, (kind, key, value) = SECTIONS[page]
    at = _open(page)
    default = _answer(at)
    _set(at, section, True)
    getattr(at, kind)(key=key).set_value(value).run()
    changed = _answer(at)
    assert changed != default, "the secondary input changes the answer"
    _set(at, section, False)
    assert not _drawn(at, keys)
    assert _answer(at) == changed  # closed, the page still uses the value set
    notes = " ".join(c.value for c in at.caption)
    assert "Set under More inputs" in notes and str(value) in notes  # and says so
    at.run()  # a second closed run (Streamlit has dropped the widget by now)
    assert _answer(at) == changed
    _set(at, section, True)
    assert getattr(at, kind)(key=key).value == value
    assert _answer(at) == changed


def test_a_url_that_sets_a_secondary_input_opens_the_section():
    at = _open("page_memory.py", {"act_seq": "8192"})
    assert at.number_input(key="act_seq").value == 8192
    assert _answer(at) != _answer(_open("page_memory.py"))


def test_the_value_survives_a_page_switch():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("costmodel/web/page_memory.py").run()
    default = _answer(at)
    _set(at, "mem_more", True)
    at.number_input(key="act_seq").set_value(8192).run()
    changed = _answer(at)
    assert changed != default
    _set(at, "mem_more", False)
    at.switch_page("costmodel/web/page_collectives.py").run()
    assert not at.exception
    at.switch_page("costmodel/web/page_memory.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert _answer(at) == changed
