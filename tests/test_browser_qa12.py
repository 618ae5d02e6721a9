"""Real-browser check from the thirteenth QA pass (chromium at 390 px): what only a browser
shows, the room a chart's category labels take. Each test failed on the defect it names before
its fix."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; a missing stack fails)

from tests._browser import wait_for_plots  # noqa: E402

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

#: The least plot-area height [px] a phone's chart must keep, as tests/test_browser_qa10.py.
MIN_PLOT_AREA_PX = 120

# The memory chart's plot area height [px] (plotly's drag layer spans it) and the angle of its
# category labels (plotly writes a rotate() into each label's transform when it tilts them).
_MEMORY_CHART_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(p => ({
  title: (p.querySelector('.gtitle') || {}).textContent || '',
  plot: Math.round(p.querySelector('.nsewdrag').getBoundingClientRect().height),
  tilted: [...p.querySelectorAll('g.xtick text')].some(
    t => (t.getAttribute('transform') || '').includes('rotate')),
  lines: Math.max(...[...p.querySelectorAll('g.xtick text')].map(
    t => t.querySelectorAll('tspan.line').length || 1)),
}))
"""


def test_a_phone_memory_compare_chart_keeps_its_plot_area(tabs, app_url):
    """At 390 px the Memory page's "Memory per GPU, A and B" chart tilted its two long bar names
    ("A: llama-3.1-8b, N = 8, ZeRO-0, h100-sxm") and they took most of its height: a plot area
    of about 80 px, the bars a sliver. The names are broken onto lines now, level."""
    page = tabs.open(
        f"{app_url}/memory?arch=llama-3.1-8b&mem_pin=true&mem_b_zero=3",
        {"width": 390, "height": 844},
    )
    expect(page.get_by_text("Memory per GPU, A and B")).to_be_attached()
    wait_for_plots(page)  # plotly's second layout pass (automargin) settles
    charts = page.evaluate(_MEMORY_CHART_JS)
    compare = next(c for c in charts if "A and B" in c["title"])
    assert not compare["tilted"], charts
    assert compare["lines"] >= 2, charts  # the long names were broken onto lines
    assert compare["plot"] >= MIN_PLOT_AREA_PX, charts


# Each text label of the scaling chart and the plot area's left and right edges [px].
_SCALING_LABELS_JS = """
() => {
  const p = [...document.querySelectorAll('.js-plotly-plot')].find(
    q => ((q.querySelector('.gtitle') || {}).textContent || '').startsWith('Scaling efficiency'));
  const area = p.querySelector('.nsewdrag').getBoundingClientRect();
  return {
    left: area.left, right: area.right,
    labels: [...p.querySelectorAll('g.textpoint text')].map(t => {
      const r = t.getBoundingClientRect();
      return {text: t.textContent, left: r.left, right: r.right};
    }),
  };
}
"""


def test_a_phone_scaling_chart_keeps_its_end_labels_whole(tabs, app_url):
    """At 390 px the step page's "Scaling efficiency vs GPU count" cut its first and last
    labels at the plot area's edges ("ompute", "comput"): each was centred on its point. The
    end labels now sit inside, beside their points."""
    page = tabs.open(
        f"{app_url}/ddp?ddp_chart_tab=Scaling+vs+GPU+count", {"width": 390, "height": 844}
    )
    expect(page.locator(".js-plotly-plot g.textpoint text").first).to_be_attached()
    wait_for_plots(page)  # plotly's second layout pass (automargin) settles
    chart = page.evaluate(_SCALING_LABELS_JS)
    assert len(chart["labels"]) >= 5, chart
    for label in chart["labels"]:
        assert chart["left"] - 1 <= label["left"], chart
        assert label["right"] <= chart["right"] + 1, chart
