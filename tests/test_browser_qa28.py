"""Chromium at 390 px: nothing inside an opened expander scrolls sideways, and the step page's
timeline is a readable, bounded list on a phone.

Every "Sortable table and ..." expander held a grid (st.dataframe) that scrolled sideways in its
own box on a phone (the step page's strategies: 766 px of grid in 322) and stood 9 px wider than
the expander's content; on a phone the rows are now written above (or drawn as cards in the
grid's place) and the grid waits for a wider screen (common._grid). The timeline of a 70B model
under FSDP was a card per interval, about 144,000 px of page: it is now each phase's time
(data.timeline_phases, as cards) and the first intervals (page_ddp.TIMELINE_PHONE_ROWS), the
rest in the grid on a wider screen and in timeline.csv. One page load per page, at one width.
"""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from costmodel import Scenario
from costmodel.units import format_duration
from costmodel.web.common import NBSP
from costmodel.web.data import timeline_phases
from costmodel.web.page_ddp import TIMELINE_PHONE_ROWS
from tests._browser import settled

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000
expect.set_options(timeout=TIMEOUT_MS)
PHONE = {"width": 390, "height": 844}
STEP_70B = {"arch": "llama-3-70b", "strategy": "fsdp", "nodes": 4}  # the page opens on 4 nodes
STEP_PAGE = "/ddp?ddp_arch=llama-3-70b&ddp_strategy=fsdp"

# Every element inside an opened expander whose content is wider than its box (it scrolls
# sideways), as [expander's title, element's test id or class, scrollWidth, clientWidth].
_SIDEWAYS_JS = """
() => {
  const out = [];
  for (const d of document.querySelectorAll('[data-testid=stExpander] details[open]')) {
    const title = d.querySelector('summary').innerText.split('\\n').pop();
    for (const el of d.querySelectorAll('*')) {
      if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
        out.push([title, el.getAttribute('data-testid') || String(el.className).slice(0, 40),
                  el.scrollWidth, el.clientWidth]);
      }
    }
  }
  return out;
}
"""


def _step_page(tabs, app_url):
    """The phone's page on the 70B FSDP step: as the test before left it, or loaded afresh."""
    page = tabs.page(PHONE)
    if STEP_PAGE not in page.url:
        page.goto(app_url + STEP_PAGE)
    expect(page.get_by_test_id("stMetricValue").first).to_be_visible()
    return page


def test_the_step_timeline_on_a_phone_is_each_phase_and_the_first_intervals(tabs, app_url):
    """The 70B FSDP step: the timeline's expander is under 5,000 px at 390 px (it was about
    144,000), each phase is there with its busy time as the page formats it, and the phone says
    how many of the intervals it shows."""
    timeline = Scenario(**STEP_70B).evaluate().timeline
    phases = timeline_phases(timeline)
    assert len(timeline) > 10 * TIMELINE_PHONE_ROWS  # hundreds of intervals
    page = _step_page(tabs, app_url)
    page.get_by_text("The timeline, interval by interval").click()
    expect(
        page.get_by_text(f"The first {TIMELINE_PHONE_ROWS} of {len(timeline)} rows")
    ).to_be_visible()
    cards = page.locator(".st-key-cards_timeline_phases tbody tr")
    expect(cards).to_have_count(len(phases))
    height = settled(
        page,
        "() => Math.round(document.querySelector('[data-testid=stExpander] "
        "details[open]:has(.st-key-cards_timeline_phases)').getBoundingClientRect().height)",
    )
    assert 500 < height < 5000, height
    for text, (_, row) in zip(cards.all_inner_texts(), phases.iterrows(), strict=True):
        assert text.split("\n")[0] == row["phase"], (text, row["phase"])
        assert format_duration(row["busy_s"]).replace(" ", NBSP) in text, (text, row["busy_s"])
    assert {"forward", "backward", "all_gather", "reduce_scatter"} <= set(phases["phase"])


def test_nothing_in_an_opened_expander_scrolls_sideways_on_a_phone(tabs, app_url):
    """The step page's every expander opened (its grids' "Sortable table and ..." ones, the
    overheads' boxes, the timeline): no element in one is wider than its box, no grid is drawn,
    and the line in a grid's place says where its rows are."""
    page = _step_page(tabs, app_url)
    closed = page.locator("[data-testid=stExpander] details:not([open]) > summary")
    for _ in range(12):  # one at a time: an on-demand expander reruns the page
        if not closed.count():
            break
        closed.first.click()
    expect(page.locator("[data-testid=stExpander] details:not([open])")).to_have_count(0)
    assert page.locator("[data-testid=stExpander]").count() >= 4
    expect(page.get_by_text("These rows are written out above").first).to_be_visible()
    assert settled(page, _SIDEWAYS_JS) == []
    assert page.evaluate(
        "[...document.querySelectorAll('[data-testid=stDataFrame]')].every(g => !g.offsetParent)"
    )
