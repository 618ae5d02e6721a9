"""Chromium checks from the twentieth QA pass: the text tables of the Batch, Memory and Cluster
pages on a 390 px phone read without sideways scrolling, each row a card with every cell under
its column's name (common.table's ``cards``, as the step page's), no row taller than a stated
bound; at 1440 px they are the same tables as before, every column there. The Batch page's
global batch reads with thousands separators ("4,194,304", as its metric)."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import settled

pytestmark = pytest.mark.browser

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

#: The learning-rate table (page_batch), typed in tokens: the batch is 4,194,304 tokens
BATCH = "/batch?batch_unit=tokens"
LR_COLUMNS = ["rule", "global batch [tokens]", "learning rate [-]", "source"]
#: the split under it (one row: the four fields, what was solved, the tokens): a grid before
SPLIT_LAST = "Global batch [tokens per step]"
#: B pinned on the Memory page (B: ZeRO-3): the parts table and the B - A table
MEMORY = "/memory?mem_pin=true&mem_b_zero=3"
PARTS_COLUMNS = ["part", "ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"]
COMPARE_COLUMNS = ["part", "A", "B", "B - A"]
CLUSTER = "/cluster"
#: the Collectives page's one-link view: each algorithm at the size, and the crossovers
LINK = "/collectives?view=link"
LINK_NAMES = ["equation", "crossover size"]
#: the Validate page on a bundled run: its error by op, algorithm and size band
VALIDATE = "/validate?val_source=A+reference+run"
VALIDATE_NAMES = ["median abs rel error"]
#: the Cluster page's table: a GPU count per row, 20 columns (its first and last named here)
CLUSTER_FIRST, CLUSTER_LAST = "gpus", "model busbw"

# Every text table of the page: its header names, whether each header is shown, its rows'
# cells (text, the card label, box, lines of text), each row's height, its scroll and box
# widths, and the page's own width.
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
      rowHeights: [...t.querySelectorAll('tbody tr')].map(tr => tr.getBoundingClientRect().height),
      rows: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(c => {
        const r = document.createRange(); r.selectNodeContents(c);
        const rects = [...r.getClientRects()].filter(x => x.width > 0);
        return {text: c.textContent.trim(), label: label(c), box: box(c),
                lines: new Set(rects.map(x => Math.round(x.top))).size};
      })),
      scrollWidth: t.scrollWidth, clientWidth: t.clientWidth, box: box(t)}));
  return {tables, page: document.documentElement.scrollWidth,
          viewport: document.documentElement.clientWidth};
}
"""


def _measured(tabs, app_url: str, path: str, width: int, names: list[str]) -> dict:
    """The page at ``width`` px once the tables with a column of each of ``names`` are drawn
    and the cards' CSS (a container query, applied a moment after the tables paint) has
    settled. Every check here reads the page and changes nothing: a page the test before
    measured at the same URL and width is measured again as it stands (tests/_browser.Tabs.show),
    not loaded a second time."""
    page = tabs.show(f"{app_url}{path}", {"width": width, "height": 900})
    tables = page.locator('[data-testid="stMarkdownContainer"] table')
    for name in names:
        has = page.locator("th").get_by_text(name, exact=True)
        expect(tables.filter(has=has)).to_have_count(1)
    return settled(page, _TABLES_JS)


def _table(got: dict, name: str) -> dict:
    (table,) = [t for t in got["tables"] if name in t["headers"]]
    return table


def _cards(table: dict, width: int, max_row_px: float, max_lines: int) -> None:
    """Each row a card on the screen: the table no wider than its box, no header shown, every
    cell labelled with its column's name and inside the screen, on at most ``max_lines``
    lines, and no card taller than ``max_row_px``."""
    assert table["scrollWidth"] <= table["clientWidth"], (table["headers"], table)
    assert table["box"]["right"] <= width, table["box"]
    assert not any(table["headerShown"]), table["headers"]
    assert table["rows"], table["headers"]
    for row, height in zip(table["rows"], table["rowHeights"], strict=True):
        assert [c["label"] for c in row] == table["headers"], row
        assert height <= max_row_px, (height, row)
        for cell in row:
            assert 0 <= cell["box"]["left"] and cell["box"]["right"] <= width, cell
            assert cell["lines"] <= max_lines, cell


def _as_table(table: dict) -> None:
    """A table as before: every header shown, no card labels, a row's cells side by side."""
    assert all(table["headerShown"]), table["headers"]
    assert table["scrollWidth"] <= table["clientWidth"], (table["headers"], table)
    for row in table["rows"]:
        assert len(row) == len(table["headers"]), row
        assert all(c["label"] is None for c in row), row
        assert all(c["box"]["width"] > 0 for c in row), row
        assert len({round(c["box"]["top"]) for c in row}) == 1, row
        assert len({round(c["box"]["left"]) for c in row}) == len(row), row


def test_the_batch_learning_rate_table_fits_a_phone_as_cards(tabs, app_url):
    """At 390 px the learning-rate table needed 477 px of 358: it scrolled sideways, and its
    long "source" column (the paper, its arXiv number and section) took one word per line, each
    row about 300-370 px tall. As cards, the source spans the card on at most 6 lines and a
    rule's card is at most 320 px; the batch reads 4,194,304, not 4194304."""
    got = _measured(tabs, app_url, BATCH, 390, ["source"])
    assert got["page"] <= got["viewport"], got["page"]
    lr = _table(got, "source")
    assert lr["headers"] == LR_COLUMNS
    _cards(lr, 390, max_row_px=320, max_lines=6)
    batch = LR_COLUMNS.index("global batch [tokens]")
    assert {row[batch]["text"] for row in lr["rows"]} == {"4,194,304"}, lr["rows"]


def test_the_batch_split_fits_a_phone_as_a_card(tabs, app_url):
    """The split under the learning rate was a one-row grid of 7 columns that scrolled
    sideways at 390 px (987 px in 356). It is a text table now, one card at most 220 px
    tall, its counts with separators as the metrics above it."""
    got = _measured(tabs, app_url, BATCH, 390, [SPLIT_LAST])
    split = _table(got, SPLIT_LAST)
    assert len(split["headers"]) == 7, split["headers"]
    _cards(split, 390, max_row_px=220, max_lines=2)
    (row,) = split["rows"]
    assert row[split["headers"].index(SPLIT_LAST)]["text"] == "4,194,304", row


def test_the_memory_tables_fit_a_phone_as_cards(tabs, app_url):
    """At 390 px the parts table (a column per ZeRO stage) needed 418 px of 358, and with B
    pinned the B - A grid scrolled sideways (379 px in 356). Both are text tables drawn as
    cards now: a part per card, each value on one line, no card taller than 130 px."""
    got = _measured(tabs, app_url, MEMORY, 390, ["ZeRO-3", "B - A"])
    assert got["page"] <= got["viewport"], got["page"]
    parts = _table(got, "ZeRO-3")
    compare = _table(got, "B - A")
    assert parts["headers"] == PARTS_COLUMNS and compare["headers"] == COMPARE_COLUMNS
    for table in (parts, compare):
        _cards(table, 390, max_row_px=130, max_lines=2)
        for row in table["rows"]:  # a value (a size in bytes) on one line
            assert all(c["lines"] <= 1 for c in row[1:]), row
    assert "total per GPU" in [row[0]["text"] for row in compare["rows"]], compare


def test_the_cluster_table_fits_a_phone_as_cards(tabs, app_url):
    """At 390 px the Cluster page's table (20 columns, a GPU count per row) needed 1,775 px of
    358: one column at a time in a sideways scroll. A GPU count is one card now, its 20 values
    on the screen at once, each on one line, a card at most 520 px tall."""
    got = _measured(tabs, app_url, CLUSTER, 390, [CLUSTER_LAST])
    assert got["page"] <= got["viewport"], got["page"]
    cluster = _table(got, CLUSTER_LAST)
    assert len(cluster["headers"]) == 20 and cluster["headers"][0] == CLUSTER_FIRST
    _cards(cluster, 390, max_row_px=520, max_lines=2)
    for row in cluster["rows"]:
        assert all(c["lines"] == 1 for c in row), row


@pytest.mark.parametrize(
    ("path", "names", "width"),
    [(LINK, LINK_NAMES, 390), (LINK, LINK_NAMES, 320), (VALIDATE, VALIDATE_NAMES, 390)],
)
def test_the_collectives_and_validate_tables_fit_a_phone_as_cards(
    tabs, app_url, path, names, width
):
    """At 390 px the one-link view's algorithm table needed 517 px of 358 (its equation on
    lines of two symbols), its crossovers 533 px, and the Validate page's error by size band
    640 px: each scrolled sideways. Each row is a card now, no card taller than 200 px, a
    cell on at most 3 lines (the equation). 320 px: the narrowest phone still in use."""
    got = _measured(tabs, app_url, path, width, names)
    assert got["page"] <= got["viewport"], got["page"]
    for name in names:
        _cards(_table(got, name), width, max_row_px=200, max_lines=3)


@pytest.mark.parametrize(
    ("path", "names"),
    [
        (BATCH, ["source", SPLIT_LAST]),
        (MEMORY, ["ZeRO-3", "B - A"]),
        (LINK, LINK_NAMES),
        (VALIDATE, VALIDATE_NAMES),
    ],
)
def test_the_tables_keep_every_column_at_1440_px(tabs, app_url, path, names):
    """At 1440 px the same tables are tables: every column's header above its cells, a row's
    cells on one line side by side, nothing wider than its box."""
    got = _measured(tabs, app_url, path, 1440, names)
    assert got["page"] <= got["viewport"], got["page"]
    for name in names:
        _as_table(_table(got, name))
    if path == BATCH:
        assert _table(got, "source")["headers"] == LR_COLUMNS
    elif path == MEMORY:
        assert _table(got, "ZeRO-3")["headers"] == PARTS_COLUMNS
        assert _table(got, "B - A")["headers"] == COMPARE_COLUMNS


def test_the_cluster_table_shows_every_column_at_1440_px(tabs, app_url):
    """The Cluster page's 20 columns needed 1,775 px of its 980 px column at 1440 px too: as a
    table it scrolled sideways there as well. Cards wherever it does not fit: at 1440 px every
    row is a card with all 20 values under their names, nothing wider than its box, each card
    three or more values across (a card is no taller than on the phone)."""
    got = _measured(tabs, app_url, CLUSTER, 1440, [CLUSTER_LAST])
    assert got["page"] <= got["viewport"], got["page"]
    cluster = _table(got, CLUSTER_LAST)
    assert len(cluster["headers"]) == 20
    _cards(cluster, 1440, max_row_px=520, max_lines=1)
    for row in cluster["rows"]:
        assert len({round(c["box"]["left"]) for c in row}) >= 3, row
