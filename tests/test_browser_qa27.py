"""Chromium at 390 px and 1440 px, from the twenty-seventh QA pass: the step page's timeline,
interval by interval (581 rows of 9 columns on the page's default 7B DDP step on 4 DGX H100
nodes), reads as one card per interval on a phone instead of a grid that scrolled sideways in
its box (853 px of 322), so the page's document does not scroll sideways and every cell of the
timeline is on the screen; at 1440 px it stays the sortable grid (common.phone_cards_css). A
phone shows the first intervals only, after each phase's time (tests/test_browser_qa28.py)."""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from costmodel.web.page_ddp import TIMELINE_PHONE_ROWS
from tests._browser import settled
from tests.test_browser_qa20 import _TABLES_JS, _cards, _table

pytestmark = pytest.mark.browser

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

STEP = "/ddp"
OPEN = "The timeline, interval by interval"
TIMELINE = [
    "kind",
    "stream",
    "start time",
    "end time",
    "label",
    "message size",
    "span ranks",
    "span",
    "micro batch",
]
_GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"""
# the timeline chart's drawing (plotly's main svg) and the expander's box
_BOXES_JS = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; };
  return {chart: [...document.querySelectorAll('.st-key-chart_timeline .main-svg')].map(box),
          expander: [...document.querySelectorAll('.st-key-timeline_open')].map(box)}; }"""


def _opened(tabs, app_url: str, width: int):
    """The step page at ``width`` px with the timeline's expander opened and drawn."""
    page = tabs.open(f"{app_url}{STEP}", {"width": width, "height": 900})
    page.get_by_text(OPEN).click()
    has = page.locator("th").get_by_text("micro batch", exact=True)
    expect(page.locator('[data-testid="stMarkdownContainer"] table').filter(has=has)).to_have_count(
        1
    )
    return page


def test_the_timeline_reads_as_cards_on_a_phone(tabs, app_url):
    """At 390 px the document is no wider than the screen, the timeline chart and the expander
    lie inside it, each interval shown is a card with each cell under its column's name and on
    the screen (the first ones: a card per interval was a page hundreds of screens long), and
    the sortable grid takes no room."""
    page = _opened(tabs, app_url, 390)
    got = settled(page, _TABLES_JS)
    assert got["page"] <= got["viewport"] == 390, got["page"]
    timeline = _table(got, "micro batch")
    assert timeline["headers"] == TIMELINE
    assert len(timeline["rows"]) == TIMELINE_PHONE_ROWS  # the first ones; then a line says so
    said = re.compile(rf"The first {TIMELINE_PHONE_ROWS} of [\d,]+ rows")
    expect(page.get_by_text(said)).to_be_visible()
    _cards(timeline, 390, max_row_px=260, max_lines=2)
    assert page.evaluate(_GRIDS_JS) == [[0, 0]]
    boxes = page.evaluate(_BOXES_JS)
    assert boxes["chart"] and boxes["expander"], boxes
    for left, right, w in boxes["chart"] + boxes["expander"]:
        assert 0 <= left and right <= 390 and w > 300, boxes


def test_the_timeline_stays_a_grid_at_1440_px(tabs, app_url):
    """At 1440 px the timeline is the sortable grid, across the page; its text table is not
    drawn."""
    page = _opened(tabs, app_url, 1440)
    timeline = _table(settled(page, _TABLES_JS), "micro batch")
    assert timeline["box"]["width"] == 0 and timeline["box"]["height"] == 0, timeline["box"]
    page.wait_for_function(
        f"() => {_GRIDS_JS}().some(([w, h]) => w > 900 && h > 300)", timeout=90_000
    )


# --- thousands: `65,536` typed into a box is 65536 ------------------------------------------
_ANSWER_JS = """() => ({
  metrics: [...document.querySelectorAll('[data-testid="stMetric"]')]
    .map(m => m.innerText.replace(/\\s+/g, ' ').trim()),
  errors: [...document.querySelectorAll('[data-testid="stAlertContentError"]')]
    .map(e => e.innerText)})"""


def _typed(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.click()
    box.press("ControlOrMeta+a")
    box.press_sequentially(text)
    box.press("Enter")


def test_comma_thousands_typed_into_a_text_box_is_one_number(tabs, app_url):
    """The Collectives page's "or type a size" box given `65,536` answers as given `65536`
    (it was refused, "a comma groups no digits"), with no red message."""
    page = tabs.open(f"{app_url}/?size_text=65536", {"width": 1440, "height": 900})
    expect(page.get_by_label("or type a size", exact=True)).to_have_value("65536")
    want = settled(page, _ANSWER_JS)
    assert want["metrics"] and not want["errors"], want
    _typed(page, "or type a size", "65,536")
    page.wait_for_function("() => location.search.includes('size_text=65%2C536')")
    assert settled(page, _ANSWER_JS) == want


def test_comma_thousands_typed_into_a_number_box_is_one_number(tabs, app_url):
    """The browser's number field drops the comma as it is typed: the Batch page's global
    batch given `65,536` is 65536 (its metric "65,536"), not 65 nor a refusal."""
    page = tabs.open(f"{app_url}/batch", {"width": 1440, "height": 900})
    _typed(page, "Global batch [samples]", "65,536")
    page.wait_for_function("() => location.search.includes('batch_global_batch=65536')")
    got = settled(page, _ANSWER_JS)
    assert not got["errors"], got
    assert any(m.startswith("Global batch [samples] 65,536") for m in got["metrics"]), got
