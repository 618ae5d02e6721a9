"""Real-browser check (chromium, 390 px, a phone's width) from the thirty-sixth QA pass: a
switch's link that is neither true nor false.

Streamlit's front end holds the URL a switch is bound to, so what AppTest shows of the server
(tests/test_app_qa36.py) is checked once where the front end takes part: the refusal is on
screen, the switch is off, and a click on it writes ``true`` and clears the refusal.
"""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import count_runs, wait_for_idle

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture
def page(chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 390, "height": 900})
    count_runs(context)
    p = context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    try:
        yield p
    finally:
        context.close()


def test_a_switch_link_of_1_is_named_and_a_click_turns_the_switch_on(page, app_url):
    """``/cluster?cl_sharp=1`` opened with SHARP off and no word; now the red line names the
    switch and its values, the box is unticked, and ticking it gives ``cl_sharp=true`` with
    the hierarchical time SHARP gives and no red line."""
    page.goto(f"{app_url}/cluster?cl_sharp=1")
    said = page.get_by_test_id("stAlertContentError")
    expect(said).to_have_count(1)
    expect(said).to_contain_text(
        "URL parameter cl_sharp: '1' is not a value of In-network reduction across nodes "
        "(SHARP); allowed: true, false; the default is used"
    )
    box = page.locator(".st-key-cl_sharp input")
    expect(box).not_to_be_checked()
    serial = page.get_by_test_id("stMetric").filter(has_text="Hierarchical, serial")
    off = serial.get_by_test_id("stMetricValue").inner_text()
    wait_for_idle(page)
    page.locator(".st-key-cl_sharp label").click()
    expect(page).to_have_url(re.compile(r"cl_sharp=true(&|$)"))
    expect(box).to_be_checked()
    expect(said).to_have_count(0)
    # the rerun shows the old metric beside the new one for a moment (stale elements): wait
    # for it to finish, then read the one metric left
    wait_for_idle(page)
    expect(serial).to_have_count(1)
    expect(serial.get_by_test_id("stMetricValue")).not_to_have_text(off)
    expect(page.get_by_test_id("stException")).to_have_count(0)
