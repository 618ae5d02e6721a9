"""Real-browser check (chromium, 1440 and 390 px) from the forty-first QA pass: the Memory
chart's bar totals clear of the card's red dashed line. AppTest reads the figure the server
sends (tests/test_app_qa41.py computes the labels' places from it); where plotly draws the
text and the line is read here."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import reused_tabs, settled

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

VIEWPORTS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


# the chart's totals (plotly's text points) and the card's red dashed line, as drawn [px]
_CHART_JS = """
() => {
  const chart = document.querySelector('.st-key-chart_memory .js-plotly-plot');
  if (!chart) return null;
  const box = (e) => { const r = e.getBoundingClientRect();
    return {y: r.y, h: r.height, w: r.width}; };
  const line = [...chart.querySelectorAll('.shapelayer path')]
    .find((p) => (p.style.stroke || '').replace(/ /g, '') === 'rgb(255,0,0)');
  return {
    texts: [...chart.querySelectorAll('.textpoint text')].map((t) => [t.textContent, box(t)]),
    line: line && box(line),
  };
}
"""


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize(
    "query",
    [
        "arch=llama-3.1-70b&zero_stage=3&dp_ranks=64&recompute=full",  # the QA's URL
        "arch=llama-3.1-70b&zero_stage=3&dp_ranks=8",  # bars over the line
    ],
)
def test_the_cards_line_passes_through_no_bar_total(tabs, app_url, viewport, query):
    """The red dashed "GPU memory 85.5 GB" line ran through ZeRO-3's "37.1 GB" at 1440 and
    390 px. No total's box is crossed by the line now."""
    page = tabs.show(f"{app_url}/memory?{query}", VIEWPORTS[viewport])
    chart = page.locator(".st-key-chart_memory .js-plotly-plot")
    expect(chart).to_be_visible()
    chart.scroll_into_view_if_needed()
    got = settled(page, _CHART_JS)
    assert got and got["line"] and len(got["texts"]) == 4, got
    line = got["line"]
    top, bottom = line["y"] - 1.0, line["y"] + line["h"] + 1.0  # its 2 px stroke
    for text, b in got["texts"]:
        assert b["h"] > 0, (text, b)
        assert bottom <= b["y"] or b["y"] + b["h"] <= top, (text, b, line)
