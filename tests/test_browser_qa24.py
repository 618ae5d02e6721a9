"""Real-browser check (chromium at 390 px and 1440 px): a whole-number box reads what is typed
in it as the number it is, or names it.

Streamlit's frontend reads an int box's text with ``parseInt``: ``1e1`` typed into Nodes ran on
1 node, ``6.4e1`` ranks on 6 and ``2.5`` on 2, and the server never saw the text. The app now
draws a whole-number box as a float box shown without decimals (``parseFloat``: ``1e1`` is 10),
refuses a fraction with a red message naming the box and its range (the box back at its
default), and writes the box's URL parameter itself as a whole number (Streamlit's binding wrote
a float box's value back as ``16.0`` after a page switch). Failed before the change: the box
read ``1e1`` as 1 and ``2.5`` as 2, without a word.
"""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import REWRITE_QUIET_MS, reused_tabs, wait_for_idle, wait_for_run_end

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

#: (page path, box label, URL key, default shown): whole-number boxes on four pages
BOXES = [
    ("cluster", "Nodes", "cl_nodes", "4"),
    ("ddp", "Nodes", "ddp_nodes", "4"),
    ("batch", "Data-parallel ranks N [GPUs]", "batch_ranks", "64"),
    ("memory", "Data-parallel ranks N [GPUs]", "dp_ranks", "8"),
]


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    """One page per width for the module's checks, each loaded afresh (tests/_browser.Tabs)."""
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


def _type(box, text: str) -> None:
    box.fill(text)
    box.press("Enter")


@pytest.mark.parametrize("width", [390, 1440])
@pytest.mark.parametrize(("path", "label", "key", "default"), BOXES, ids=[b[2] for b in BOXES])
def test_a_typed_count_is_read_whole_or_named(tabs, app_url, width, path, label, key, default):
    """``1e1`` is 10 (box and URL), ``2.5`` a red message naming the box and its range with
    the box back at its default and no parameter in the URL, ``12`` is 12."""
    page = tabs.open(f"{app_url}/{path}", {"width": width, "height": 900})
    box = page.get_by_role("spinbutton", name=label, exact=True)
    expect(box).to_have_value(default)

    _type(box, "1e1")
    expect(page).to_have_url(re.compile(rf"[?&]{key}=10(&|$)"))
    expect(box).to_have_value("10")

    _type(box, "2.5")
    alert = page.get_by_test_id("stAlert").filter(has_text="2.5 is not a whole number")
    expect(alert).to_contain_text(f"as {label} takes")
    expect(box).to_have_value(default)
    expect(page).not_to_have_url(re.compile(rf"[?&]{key}="))

    _type(box, "12")
    expect(page).to_have_url(re.compile(rf"[?&]{key}=12(&|$)"))
    expect(box).to_have_value("12")
    named = page.get_by_test_id("stAlert").filter(has_text=f"as {label} takes")
    expect(named).to_have_count(0)


def test_a_typed_count_survives_a_page_switch_and_a_reload_as_digits(tabs, app_url):
    """Memory's ranks typed as ``1e1``: after a visit to Batch through the sidebar the URL
    reads ``dp_ranks=10`` (Streamlit's binding of a float box wrote ``10.0`` back), and a
    reload of that URL shows 10."""
    page = tabs.open(f"{app_url}/memory", {"width": 1440, "height": 900})
    nav = page.get_by_test_id("stSidebarNav")
    box = page.get_by_role("spinbutton", name="Data-parallel ranks N [GPUs]", exact=True)
    expect(box).to_have_value("8")
    _type(box, "1e1")
    expect(page).to_have_url(re.compile(r"/memory\?dp_ranks=10$"))

    nav.get_by_text("Batch", exact=True).click()
    expect(page).to_have_url(re.compile(r"/batch$"))
    runs = wait_for_idle(page)
    nav.get_by_text("Memory", exact=True).click()
    expect(page).to_have_url(re.compile(r"/memory\?dp_ranks=10$"))
    expect(box).to_have_value("10")
    # a rerun that rewrote the URL would land by now
    wait_for_run_end(page, runs, quiet_ms=REWRITE_QUIET_MS)
    expect(page).to_have_url(re.compile(r"/memory\?dp_ranks=10$"))

    page.reload()
    expect(box).to_have_value("10")
    expect(page).to_have_url(re.compile(r"/memory\?dp_ranks=10$"))
