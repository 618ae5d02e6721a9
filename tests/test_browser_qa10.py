"""Real-browser check from the tenth QA pass: at a phone's 390 px, a chart's legend leaves its
plot area a readable height."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; a missing stack fails)

from tests._browser import wait_for_plots  # noqa: E402

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

#: The least plot-area height [px] a phone's chart must keep: what plots.MIN_PLOT_PX aims at
#: (160 px), less the slack of estimating a legend's rows from its text.
MIN_PLOT_AREA_PX = 120

# Each drawn chart's plot area (plotly's drag layer spans it) and legend heights [px].
_PLOT_AREAS_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
  const area = p.querySelector('.nsewdrag');
  const legend = p.querySelector('g.legend');
  return {
    plot: area ? Math.round(area.getBoundingClientRect().height) : null,
    legend: legend ? Math.round(legend.getBoundingClientRect().height) : null,
    entries: p.querySelectorAll('g.legend g.traces').length,
  };
})
"""


@pytest.mark.parametrize(
    "path",
    [
        # eight legend entries, one a row at 390 px: the 300 px timeline kept a 13 px plot
        "ddp?ddp_strategy=hsdp",
        # a measured and a predicted entry per rank count, 1 to 512 nodes
        "validate?val_source=A+reference+run"
        "&val_reference=15_cscs-alps-GH200-4perNode-Slingshot11_allreduce_1-to-512nodes.txt",
    ],
)
def test_a_phone_chart_keeps_its_plot_area_under_its_legend(tabs, app_url, path):
    """At 390 px the HSDP timeline on the Training step page and the Validate page's busbw
    chart of a bundled run collapsed: a fixed figure height, and the legend's rows (one entry
    a row on a phone) took it all. The figure now grows with its legend's rows on a phone
    (plots.keep_plot_height, applied in common.chart to every chart)."""
    page = tabs.open(f"{app_url}/{path}", {"width": 390, "height": 844})
    expect(page.locator(".js-plotly-plot .nsewdrag").first).to_be_attached()
    expect(page.locator(".js-plotly-plot g.legend g.traces").first).to_be_attached()
    wait_for_plots(page)  # plotly's second layout pass (automargin) settles
    charts = page.evaluate(_PLOT_AREAS_JS)
    assert charts and charts[0]["entries"] >= 6, charts  # the legend that wrapped
    assert all(c["plot"] is not None and c["plot"] >= MIN_PLOT_AREA_PX for c in charts), charts
