"""Phone-width layout of the Collectives and Cluster pages in chromium.

On a 390 px phone a headline's four metrics stack, and the expected-error caption ("Expected
error ±49%: 66.2 ms to 129 ms ...") drawn after them and after every input sat a screen below
the time it qualifies (1,038 px below it on Collectives, 853 px on Cluster). The band's times
now sit under the time itself there (the metric's grey delta, common.headline_time); from 641 px
(columns side by side) that line is hidden, so at 1440 px the answer table stays on the first
screen as before (a line under a quarter-width Time had pushed it off). The Collectives page's
algorithm table (6 columns, 474 px of 358) reads as one card per algorithm on a phone, its CSS
in the table's own Markdown (common.page_cards_css), and as a table at 1440 px.
"""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest
from streamlit.testing.v1 import AppTest

import costmodel as cm
from costmodel.units import format_duration
from tests._browser import reused_tabs

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

COLLECTIVES = "/collectives?nccl_cluster=dgx-h100&nccl_nodes=8&size_text=14GB"
CLUSTER = "/cluster"
#: page -> (its URL, the Time metric's label, the prediction its headline shows)
#: (Cluster first: each size's page is left at Collectives for the tests after, which show it)
PAGES = {
    "cluster": (CLUSTER, "Time, model nccl", dict(size=2**30, nodes=4)),  # the page's defaults
    "collectives": (COLLECTIVES, "Time", dict(size=14e9, nodes=8)),
}
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
#: The most the band's line may sit below the time's value [px]: the metric's own spacing
#: (4 px measured), not the three stacked metrics and the inputs it sat under before.
MAX_GAP_PX = 12
#: What the hidden line may still add to the Time metric at 1440 px [px]: Streamlit keeps the
#: delta row's 4 px with both of its parts hidden (73 px against 69 measured).
MAX_EXTRA_PX = 4


def _band_words(size: float, nodes: int) -> tuple[str, str, str]:
    """The headline's time, the span its band allows and the band's words, from the API."""
    p = cm.predict_collective("all_reduce", size, "dgx-h100", nodes=nodes)
    row = p.to_frame().iloc[0]
    span = f"{format_duration(row['time_lo_s'])} to {format_duration(row['time_hi_s'])}"
    return format_duration(row["time_s"]), span, f"{p.error_band.pct()} expected error"


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    """One page per viewport for the module's checks (tests/_browser.Tabs): the checks read the
    page (one scrolls the phone's Time into view) and change nothing, so a test after one that
    showed the same URL at the same size reads that page, scrolled back to the top (``show``)."""
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


def _metric(page, label: str):
    return page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )


def _settled(page) -> None:
    """The run is over (no running indicator) and its last element is drawn."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)


@pytest.mark.browser
@pytest.mark.parametrize("name", list(PAGES))
def test_the_band_sits_under_the_time_on_a_phone(tabs, app_url, name):
    """At 390 px the band's times ("66.2 ms to 129 ms", "±49% expected error") are right under
    the time's value, above the next stacked metric, inside the screen's width, both on the
    screen once the time is; the caption with the band's details is still on the page."""
    path, label, kw = PAGES[name]
    time, span, words = _band_words(**kw)
    page = tabs.show(app_url + path, PHONE)
    metric = _metric(page, label)
    value = metric.get_by_test_id("stMetricValue")
    delta = metric.get_by_test_id("stMetricDelta")
    said = metric.get_by_test_id("stMetricDeltaDescription")
    expect(value).to_have_text(time)
    expect(delta).to_have_text(span)
    expect(said).to_have_text(words)
    expect(delta).to_be_visible()
    expect(said).to_be_visible()
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="Expected error ±")
    expect(caption).to_contain_text(f"{span} (multi-node-infiniband")
    _settled(page)
    value.scroll_into_view_if_needed()
    v, d, s = value.bounding_box(), delta.bounding_box(), said.bounding_box()
    nxt = page.get_by_test_id("stMetric").nth(1).bounding_box()
    assert v and d and s and nxt
    gap = d["y"] - (v["y"] + v["height"])
    assert 0 <= gap <= MAX_GAP_PX, (v, d)
    assert d["y"] + d["height"] <= nxt["y"], (d, nxt)  # before the next stacked metric
    assert s["y"] < d["y"] + d["height"] and s["x"] >= d["x"] + d["width"], (d, s)  # beside
    for box in (d, s):
        assert 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], box
    assert v["y"] >= 0 and d["y"] + d["height"] <= PHONE["height"], (v, d)  # one screen


@pytest.mark.browser
@pytest.mark.parametrize("name", list(PAGES))
def test_the_band_line_is_hidden_at_1440_px(tabs, app_url, name):
    """At 1440 px the line under the time is not drawn (the caption under the inputs is on the
    same screen): the Time metric is no taller than its neighbour (plus the 4 px Streamlit
    keeps), and the caption with the band is shown."""
    path, label, kw = PAGES[name]
    time, span, _ = _band_words(**kw)
    page = tabs.show(app_url + path, DESKTOP)
    metric = _metric(page, label)
    expect(metric.get_by_test_id("stMetricValue")).to_have_text(time)
    expect(metric.get_by_test_id("stMetricDelta")).to_have_text(span)  # sent, not shown
    expect(metric.get_by_test_id("stMetricDelta")).to_be_hidden()
    expect(metric.get_by_test_id("stMetricDeltaDescription")).to_be_hidden()
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="Expected error ±")
    expect(caption).to_be_visible()
    _settled(page)
    mine = metric.bounding_box()
    beside = page.get_by_test_id("stMetric").nth(1).bounding_box()
    assert mine and beside and abs(mine["y"] - beside["y"]) < 1, (mine, beside)
    assert mine["height"] <= beside["height"] + MAX_EXTRA_PX, (mine, beside)


@pytest.mark.browser
def test_the_answer_table_stays_on_the_first_screen_at_1440_px(tabs, app_url):
    """At 1440 x 900 the Collectives page's verdict, the algorithm table's header and its first
    row (fastest first) are above the fold, the table a table: every header shown."""
    page = tabs.show(app_url + COLLECTIVES, DESKTOP)
    time, _, _ = _band_words(14e9, 8)
    expect(_metric(page, "Time").get_by_test_id("stMetricValue")).to_have_text(time)
    verdict = page.get_by_text("Every nccl algorithm dgx-h100 can run at M = 14 GB")
    expect(verdict).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    _settled(page)
    table = page.locator("[data-testid='stMarkdown'] table").first
    said, box = verdict.bounding_box(), table.bounding_box()
    assert said and box
    assert said["y"] + said["height"] <= DESKTOP["height"], said
    assert box["y"] + 2 * 35 < DESKTOP["height"], box  # header and first row: 35 px a row
    shown = table.locator("thead th").evaluate_all(
        "hs => hs.map(h => h.getBoundingClientRect().width > 0)"
    )
    assert len(shown) == 6 and all(shown), shown


_TABLE_JS = r"""
t => ({
  scroll: t.scrollWidth, client: t.clientWidth, right: t.getBoundingClientRect().right,
  headers: [...t.querySelectorAll('thead th')].map(h => h.textContent.trim()),
  headerShown: [...t.querySelectorAll('thead th')].some(h => h.getBoundingClientRect().width > 0),
  labels: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(c => {
    const s = getComputedStyle(c, '::before').content;
    return s === 'none' ? null : JSON.parse(s); })),
  page: document.documentElement.scrollWidth,
})
"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 320])
def test_the_algorithm_table_fits_a_phone(tabs, app_url, width):
    """At 390 px (and 320 px) the algorithm table before the first chart needed 474 px of 358
    and scrolled sideways; each algorithm is a card now, every cell under its column's name,
    the table no wider than its box and the page no wider than the screen."""
    page = tabs.show(app_url + COLLECTIVES, {"width": width, "height": 844})
    table = page.locator("[data-testid='stMarkdown'] table").filter(
        has=page.locator("th").get_by_text("time / fastest", exact=True)
    )
    expect(table).to_have_count(1)
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    _settled(page)
    got = table.evaluate(_TABLE_JS)
    assert got["scroll"] <= got["client"], got
    assert got["right"] <= width and got["page"] <= width, got
    assert not got["headerShown"], got
    assert got["labels"] and all(row == got["headers"] for row in got["labels"]), got


def test_the_time_metric_carries_the_band_s_times():
    """Without a browser: the Collectives and Cluster pages' Time metric has the band's span
    as its grey delta and the band's words as its description (the line READABLE_CSS shows on
    a phone only), the API's numbers; the caption with the details is still drawn."""
    from costmodel.web.common import READABLE_CSS

    for module, query, label, kw in (
        (
            "page_collectives",
            {"nccl_nodes": "8", "size_text": "14GB"},
            "Time",
            PAGES["collectives"][2],
        ),
        ("page_cluster", {}, "Time, model nccl", PAGES["cluster"][2]),
    ):
        at = AppTest.from_string(
            f"from costmodel.web import {module} as page\npage.render()", default_timeout=120
        )
        at.query_params.update(query)
        at.run()
        assert not at.exception, at.exception
        time, span, words = _band_words(**kw)
        (m,) = [m for m in at.metric if m.label == label]
        assert (m.value, m.delta) == (time, span), module
        assert m.proto.delta_description == words, module
        assert any(c.value.startswith("Expected error ±") and span in c.value for c in at.caption)
    # the rule that hides it from 641 px: a delta with a description (aria-describedby)
    assert "@media (min-width: 641px){[data-testid=stMetricDelta][aria-describedby]" in READABLE_CSS
