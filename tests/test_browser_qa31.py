"""Real-browser checks (chromium, 390 px, a phone's width) from the thirty-seventh QA pass:
the Memory chart's bar totals, where the step page says a refusal, and the gap under its
Strategy box.

AppTest (tests/test_app_qa37.py) reads what the server sends; what only a browser lays out
is checked here: the totals drawn on the chart with the card's line in its plot area, the
refusal on the first screen, and no empty column stacked under the Strategy box.
"""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from costmodel.units import format_bytes
from tests._browser import reused_tabs, settled, wait_for_idle

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

PHONE = {"width": 390, "height": 844}
#: Streamlit's gap between two stacked columns or elements [px] (1rem)
GAP_PX = 16


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


# the chart's totals (plotly's text points), its plot area and the card's dashed line
_CHART_JS = """
() => {
  const chart = document.querySelector('.st-key-chart_memory .js-plotly-plot')
    || document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  if (!chart) return null;
  const box = (e) => { const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, w: r.width, h: r.height}; };
  const plot = chart.querySelector('.nsewdrag');
  const line = [...chart.querySelectorAll('.shapelayer path')]
    .find((p) => (p.style.strokeDasharray || p.getAttribute('style') || '').includes('dash')
      || p.style.stroke === 'rgb(255, 0, 0)');
  return {
    texts: [...chart.querySelectorAll('.textpoint text')].map((t) => [t.textContent, box(t)]),
    plot: plot && box(plot), chart: box(chart), line: line && box(line),
  };
}
"""


def test_a_phones_memory_chart_writes_every_bars_total_and_keeps_the_cards_line(tabs, app_url):
    """Llama-3.1-70B on 64 ranks, the model state: ZeRO-3's 25.3 GB bar was a sliver under
    ZeRO-0's 1.27 TB on the linear axis, its size on no screen. Each bar's total is now drawn
    above it, inside the chart, and the 85.5 GB card line stays inside the plot area."""
    page = tabs.show(f"{app_url}/memory?arch=llama-3.1-70b&dp_ranks=64&activations=false", PHONE)
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart).to_be_visible()
    chart.scroll_into_view_if_needed()
    got = settled(page, _CHART_JS)
    assert got and got["plot"] and got["line"], got
    texts = [t for t, _ in got["texts"]]
    assert len(texts) == 4 and texts[-1] == format_bytes(25.3e9), texts  # ZeRO-0 .. ZeRO-3
    assert texts[0].endswith("TB") and texts[-1].endswith("GB"), texts
    c, plot, line = got["chart"], got["plot"], got["line"]
    for text, b in got["texts"]:  # drawn whole, inside the chart (not cut at its edge)
        assert b["w"] > 0 and b["h"] > 0, (text, b)
        assert c["x"] <= b["x"] and b["x"] + b["w"] <= c["x"] + c["w"], (text, b, c)
        assert c["y"] <= b["y"] and b["y"] + b["h"] <= c["y"] + c["h"], (text, b, c)
    # the card's line runs across the plot area, above its floor
    assert plot["y"] <= line["y"] <= plot["y"] + plot["h"] - 1, (line, plot)
    assert line["w"] >= plot["w"] * 0.9, (line, plot)
    # ZeRO-3's total is written above its bar, under the card's line (25 GB < 85.5 GB)
    assert got["texts"][-1][1]["y"] + got["texts"][-1][1]["h"] <= plot["y"] + plot["h"]


def test_a_phones_step_page_says_a_step_refusal_on_the_first_screen(tabs, app_url):
    """An HSDP group of 3 on 32 ranks is refused by the step, not by its box: the red line was
    drawn under every input, about 2,000 px down at 390 px. It is now on the first screen,
    where the answer would stand, above the first input."""
    page = tabs.show(f"{app_url}/ddp?ddp_strategy=hsdp&ddp_group=3", PHONE)
    said = page.get_by_test_id("stAlertContentError")
    expect(said).to_have_count(1)
    expect(said).to_contain_text("HSDP group [GPUs]: 3 does not divide the 32 ranks")
    wait_for_idle(page)
    box = said.bounding_box()
    model = page.get_by_test_id("stSelectbox").filter(has_text="Model").first.bounding_box()
    assert box and model
    assert box["y"] + box["height"] <= PHONE["height"], box  # on the first screen
    assert box["y"] + box["height"] <= model["y"], (box, model)  # above the inputs


# under the Strategy box: its row's columns and the first thing drawn after the row
_UNDER_STRATEGY_JS = """
() => {
  const box = [...document.querySelectorAll('[data-testid="stSelectbox"]')]
    .find((e) => e.innerText.startsWith('Strategy'));
  const col = box.closest('[data-testid="stColumn"]');
  const row = col.closest('[data-testid="stHorizontalBlock"]');
  const cols = [...row.children].map((c) => c.getBoundingClientRect().height);
  let next = row.closest('[data-testid="stLayoutWrapper"], .stElementContainer')
    || row.parentElement;
  while (next && !next.nextElementSibling) next = next.parentElement;
  next = next && next.nextElementSibling;
  while (next && next.getBoundingClientRect().height === 0) next = next.nextElementSibling;
  const empty = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stColumn"]')]
    .filter((c) => c.getBoundingClientRect().height === 0).length;
  return {
    bottom: col.getBoundingClientRect().bottom,
    after: (col.nextElementSibling || next).getBoundingClientRect().top,
    cols, empty,
  };
}
"""


@pytest.mark.parametrize(
    "query", ["", "?ddp_arch=llama-3.1-8b", "?ddp_strategy=hsdp", "?ddp_strategy=fsdp"]
)
def test_no_empty_gap_under_the_strategy_box_on_a_phone(tabs, app_url, query):
    """At 390 px the Strategy box of a bare count stood above 48 px of nothing: its row's three
    other columns, empty, stacked 16 px apart. Every column of the page's inputs now holds a
    box, so what follows the Strategy box starts one gap below it."""
    page = tabs.show(f"{app_url}/ddp{query}", PHONE)
    expect(page.get_by_test_id("stSelectbox").filter(has_text="Strategy")).to_have_count(1)
    got = settled(page, _UNDER_STRATEGY_JS)
    assert all(h > 0 for h in got["cols"]), got
    assert got["after"] - got["bottom"] <= GAP_PX + 1, got
    assert got["empty"] == 0, got
