"""Chromium at 390 px and 1440 px: the Collectives page's side by side (a row per size, 11
columns) reads as cards on a phone instead of a grid that scrolled sideways in its box (a column
or two at a time), and stays a sortable grid at 1440 px (common.phone_cards_css). One page load
per width."""

from __future__ import annotations

import pytest

from tests.test_browser_qa20 import _cards, _measured, _table

pytestmark = pytest.mark.browser

PAGE = "/collectives?view=cluster&nccl_nodes=2&coll_compare=true&pin_cluster=dgx-b200&pin_nodes=8"
RATIO = "time B / A"  # a header the side by side alone has

_GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"""


def _side_by_side(tabs, app_url: str, width: int) -> tuple[dict, list]:
    """The side by side's text table measured at ``width`` and the page's grids' boxes."""
    got = _measured(tabs, app_url, PAGE, width, [RATIO])
    assert got["page"] <= got["viewport"], got["page"]
    table = _table(got, RATIO)
    assert table["headers"][0] == "message size" and len(table["rows"]) == 32
    return table, tabs.page({"width": width, "height": 900}).evaluate(_GRIDS_JS)


def test_the_side_by_side_reads_as_cards_on_a_phone(tabs, app_url):
    """At 390 px every size is a card, each cell under its column's name and on the screen;
    the grid (the page's only one here) takes no room."""
    table, grids = _side_by_side(tabs, app_url, 390)
    _cards(table, 390, max_row_px=260, max_lines=2)
    assert grids == [[0, 0]], grids


def test_the_side_by_side_stays_a_grid_at_1440_px(tabs, app_url):
    """At 1440 px the sortable grid is shown across the page and the text table is not."""
    table, _ = _side_by_side(tabs, app_url, 1440)
    assert table["box"]["width"] == 0 and table["box"]["height"] == 0, table["box"]
    page = tabs.page({"width": 1440, "height": 900})
    # the grid lays itself out after its data arrive (52 px wide a moment before, under load)
    page.wait_for_function(
        f"() => {_GRIDS_JS}().some(([w, h]) => w > 900 && h > 300)", timeout=90_000
    )
    assert len(page.evaluate(_GRIDS_JS)) == 1
