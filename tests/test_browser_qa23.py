"""Real-browser check from the twenty-fourth QA pass (chromium at 390 px and 1440 px): the step
page's "Scaling efficiency vs GPU count" labels each point with its bound. At 390 px the first
label, moved to the right of its point to stay inside the plot, ran into the second, centred
on its own point ("computecompute"), and the last into the one before it; the end points'
neighbours' labels now sit under their points (plots._end_positions). Failed before the fix."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import wait_for_plots
from tests.test_browser_qa12 import _SCALING_LABELS_JS

pytestmark = pytest.mark.browser

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

# Each point label's box [px] on the page: text, left, right, top, bottom.
_LABEL_BOXES_JS = """
() => {
  const p = [...document.querySelectorAll('.js-plotly-plot')].find(
    q => ((q.querySelector('.gtitle') || {}).textContent || '').startsWith('Scaling efficiency'));
  return [...p.querySelectorAll('g.textpoint text')].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  });
}
"""


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"] - 0.5
        and b["left"] < a["right"] - 0.5
        and a["top"] < b["bottom"] - 0.5
        and b["top"] < a["bottom"] - 0.5
    )


@pytest.mark.parametrize("width", [390, 1440])
def test_the_scaling_charts_point_labels_do_not_overlap(chromium_browser, app_url, width):
    """Every point's label of the step page's scaling chart (the default view: 5 node counts)
    is clear of every other one, and inside the plot area (as before)."""
    context = chromium_browser.new_context(viewport={"width": width, "height": 844})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/ddp?ddp_chart_tab=Scaling+vs+GPU+count")
        expect(page.locator(".js-plotly-plot g.textpoint text").first).to_be_attached()
        wait_for_plots(page)  # plotly's second layout pass (automargin) settles
        labels = page.evaluate(_LABEL_BOXES_JS)
        assert len(labels) >= 5, labels
        clashes = [
            (a["text"], i, b["text"], j)
            for i, a in enumerate(labels)
            for j, b in enumerate(labels)
            if i < j and _overlap(a, b)
        ]
        assert clashes == [], (clashes, labels)
        chart = page.evaluate(_SCALING_LABELS_JS)
        for label in chart["labels"]:
            assert chart["left"] - 1 <= label["left"], chart
            assert label["right"] <= chart["right"] + 1, chart
    finally:
        context.close()
