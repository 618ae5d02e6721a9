"""The twentieth QA pass: a new user's planning questions walked through the pages (an all-reduce
of 14 GB on 64 H100s, Llama-3.1-70B under FSDP, H100 against B200, a batch in tokens, a
bundled nccl-tests log on Validate). The headless tests (AppTest) open each page as a browser
opening its URL."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from costmodel.web.app import PAGES
from tests.test_app import ROOT, WEB, assert_clean, open_page

#: Every file Streamlit runs as a script: the checkout's entry, the packaged one, each page.
SCRIPTS = (ROOT / "app.py", WEB / "app.py", *(WEB / file for file, *_ in PAGES))


# --- a page script's bare strings are drawn on the page -------------------------------------------
def _bare_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each string statement that is not the first statement of its module,
    class or function (a docstring): Streamlit's magic writes those to the page."""
    found = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            docstring_slot = field == "body" and isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            )
            for i, stmt in enumerate(body):
                if (
                    isinstance(stmt, ast.Expr)
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                    and not (docstring_slot and i == 0)
                ):
                    found.append((stmt.lineno, stmt.value.value[:60]))
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_script_holds_a_bare_string(script: Path):
    """Validate showed "The first line of the warning listing the parser's findings (one a
    line, as text)." above its title: an attribute docstring under a constant in the page
    file, which Streamlit's magic (on by default) draws as Markdown. A note in a script
    Streamlit runs is a comment; only the first statement of a module, class or function is
    a docstring, which magic leaves alone."""
    assert _bare_strings(ast.parse(script.read_text())) == []


def test_validate_opens_on_its_title_not_a_note_from_its_code():
    """The same seen as the user sees it: nothing above the title but the page's own words."""
    at = open_page("page_validate.py")
    assert_clean(at)
    shown = [m.value for m in at.markdown]
    assert not [s for s in shown if "parser's findings" in s], shown
