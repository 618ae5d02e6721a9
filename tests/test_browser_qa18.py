"""Chromium checks from the eighteenth QA pass: the step page's text tables (the strategy
advisor's ranking, the verdict flips, the scaling table, and with B pinned the B - A table) on
a 390 px phone read without sideways scrolling, each row a card with every cell under its
column's name, the band on one or two lines; at 1440 px they are the same tables as before,
every column there."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import settled

pytestmark = pytest.mark.browser

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

#: The strategy table's columns, in order (page_ddp._strategies)
STRATEGY_COLUMNS = [
    "rank",
    "strategy",
    "memory per GPU",
    "fits",
    "step",
    "band",
    "tokens/s",
    "bound",
    "vs fastest",
]
#: B pinned: B is A under FSDP (the page's A: DDP), and the B - A table's columns
PINNED = "?ddp_pin=true&ddp_b_strategy=fsdp"
COMPARE_COLUMNS = ["figure", "A", "B", "B - A", "B / A"]

# Every text table of the page and every data grid: its header names, its rows' cells (text,
# the name the cell is labelled with as a card, its box), its scroll and box widths, and the
# page's own width. A grid (st.dataframe) is measured by its box and by its own scroller.
_TABLES_JS = r"""
() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {left: r.left, right: r.right, top: r.top, width: r.width, height: r.height}; };
  const label = c => { const s = getComputedStyle(c, '::before').content;
                       return s === 'none' ? null : JSON.parse(s); };
  const tables = [...document.querySelectorAll('[data-testid="stMarkdownContainer"] table')]
    .map(t => ({
      headers: [...t.querySelectorAll('thead th')].map(h => h.textContent.trim()),
      headerShown: [...t.querySelectorAll('thead th')].map(h => box(h).width > 0),
      rows: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(c => {
        const r = document.createRange(); r.selectNodeContents(c);
        const rects = [...r.getClientRects()].filter(x => x.width > 0);
        const cs = getComputedStyle(c);
        return {text: c.textContent.trim(), label: label(c), box: box(c),
                lines: new Set(rects.map(x => Math.round(x.top))).size,
                textHeight: rects.length ? Math.max(...rects.map(x => x.bottom))
                                           - Math.min(...rects.map(x => x.top)) : 0,
                lineHeight: parseFloat(cs.lineHeight)};
      })),
      scrollWidth: t.scrollWidth, clientWidth: t.clientWidth, box: box(t)}));
  const grids = [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(g => {
    const s = g.querySelector('.dvn-scroller');
    return {box: box(g), scrollWidth: s ? s.scrollWidth : 0, clientWidth: s ? s.clientWidth : 0};
  });
  return {tables, grids, page: document.documentElement.scrollWidth,
          viewport: document.documentElement.clientWidth};
}
"""


def _measured(tabs, app_url: str, width: int, query: str = "") -> dict:
    """The step page at ``width`` px once its three text tables are drawn and the cards' CSS
    (a container query, applied a moment after the tables paint) has settled."""
    page = tabs.open(f"{app_url}/ddp{query}", {"width": width, "height": 900})
    expect(page.get_by_text("Every strategy, ranked")).to_be_attached()
    tables = page.locator('[data-testid="stMarkdownContainer"] table')

    def headed(name: str):  # the tables with a column of that name
        return tables.filter(has=page.locator("th").get_by_text(name, exact=True))

    expect(headed("vs fastest")).to_have_count(1)  # the strategies
    expect(headed("relative change")).to_have_count(1)  # the verdict flips
    expect(headed("scaling efficiency")).to_have_count(1)  # the scaling table
    if query:  # B pinned: the B - A table, written out as text too
        expect(headed("B / A")).to_have_count(1)
    return settled(page, _TABLES_JS)


def _strategy_table(got: dict) -> dict:
    (table,) = [t for t in got["tables"] if "vs fastest" in t["headers"]]
    return table


@pytest.mark.parametrize(("width", "query"), [(390, ""), (320, ""), (390, PINNED)])
def test_the_step_page_tables_fit_a_phone_as_cards(tabs, app_url, width, query):
    """At 390 px the strategy table needed 668 px, the flips table 531 px and the scaling table
    906 px of the 358 px page: each scrolled sideways in its box, and the band cell ("447 ms -
    590 ms") took three lines; with B pinned, the B - A grid scrolled too (447 px in 356).
    Each row is now a card: no table is wider than its box or the page, every cell is inside
    the screen under its own column's name, and the band ("447–590 ms") is on one or two
    lines. 320 px: the narrowest phone still in use."""
    got = _measured(tabs, app_url, width, query)
    assert got["page"] <= got["viewport"], got["page"]  # the page never scrolls sideways
    assert len(got["tables"]) >= (4 if query else 3), got["tables"]
    if query:
        assert [t["headers"] for t in got["tables"]].count(COMPARE_COLUMNS) == 1, got["tables"]
    for table in got["tables"]:
        assert table["scrollWidth"] <= table["clientWidth"], (table["headers"], table)
        assert table["box"]["right"] <= width, table["box"]
        assert not any(table["headerShown"]), table["headers"]  # the names are on the cards
        assert table["rows"], table["headers"]
        for row in table["rows"]:
            # every cell on the screen, labelled with its column's name
            assert [c["label"] for c in row] == table["headers"], row
            for cell in row:
                assert 0 <= cell["box"]["left"] and cell["box"]["right"] <= width, cell
    for grid in got["grids"]:  # none on this view; a grid shown later stays on the screen
        assert grid["box"]["right"] <= width, grid
    strategies = _strategy_table(got)
    assert strategies["headers"] == STRATEGY_COLUMNS
    band = STRATEGY_COLUMNS.index("band")
    for row in strategies["rows"]:
        cell = row[band]
        assert cell["lines"] <= 2, cell
        # measured as a height too: the value's lines against the cell's line height
        assert cell["textHeight"] <= 2 * cell["lineHeight"] + 1, cell
        assert cell["text"].replace("\xa0", " ").endswith("s") or cell["text"] == "?", cell


@pytest.mark.parametrize("query", ["", PINNED])
def test_the_step_page_tables_keep_every_column_at_1440_px(tabs, app_url, query):
    """At 1440 px the tables are tables, as before: every column's header is shown above its
    cells (no card labels), each row has a cell per column, the table fits its box, and the
    band reads as a range of times with its unit. With B pinned, the B - A table has its five
    columns and a row per figure."""
    got = _measured(tabs, app_url, 1440, query)
    assert got["page"] <= got["viewport"], got["page"]
    if query:
        (compare,) = [t for t in got["tables"] if t["headers"] == COMPARE_COLUMNS]
        assert "step time" in [row[0]["text"] for row in compare["rows"]], compare
    for table in got["tables"]:
        assert all(table["headerShown"]), table["headers"]
        assert table["scrollWidth"] <= table["clientWidth"], (table["headers"], table)
        for row in table["rows"]:
            assert len(row) == len(table["headers"]), row
            assert all(c["label"] is None for c in row), row
            assert all(c["box"]["width"] > 0 for c in row), row
            # one row of the table: every cell on the same line
            assert len({round(c["box"]["top"]) for c in row}) == 1, row
            assert len({round(c["box"]["left"]) for c in row}) == len(row), row
    strategies = _strategy_table(got)
    assert strategies["headers"] == STRATEGY_COLUMNS
    band = STRATEGY_COLUMNS.index("band")
    for row in strategies["rows"]:
        assert row[band]["lines"] == 1, row[band]
        text = row[band]["text"].replace("\xa0", " ")
        assert text == "?" or ("–" in text and text.endswith("s")), text
