"""The twenty-first QA pass in chromium: on the Collectives page the expected-error band
("Expected error ±49%: 66.2 ms to 129 ms ...") reads next to the time it qualifies. On a 390 px
phone the headline's four metrics stack, and the caption, drawn after them and after every
input, sat a screen below the Time; it is now drawn in the Time metric's column, under it."""

from __future__ import annotations

import os

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

import costmodel as cm
from costmodel.units import format_duration
from tests._browser import launch_chromium

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

pytestmark = pytest.mark.browser

PATH = "/collectives?nccl_cluster=dgx-h100&nccl_nodes=8&size_text=14GB"
#: The most the band's top may sit below the Time metric's bottom [px]: a line gap, not the
#: three stacked metrics (about 90 px each) and the inputs it sat under before.
MAX_GAP_PX = 150
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def chromium_browser():
    yield from launch_chromium()


def _time_and_band(page):
    value = (
        page.get_by_test_id("stMetric")
        .filter(has=page.get_by_test_id("stMetricLabel").get_by_text("Time", exact=True))
        .get_by_test_id("stMetricValue")
    )
    band = page.get_by_test_id("stCaptionContainer").filter(has_text="Expected error ±")
    return value, band


@pytest.mark.parametrize("width", [390, 1440])
def test_the_band_sits_under_the_time_it_qualifies(chromium_browser, app_url, width):
    """At 390 px the band's top is under MAX_GAP_PX below the Time's bottom, and once the page
    is scrolled to the Time both are on the first screen; at 1440 px the band is under the Time
    too, inside the page (no sideways scroll), before the first chart."""
    row = cm.predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8).to_frame().iloc[0]
    span = f"{format_duration(row['time_lo_s'])} to {format_duration(row['time_hi_s'])}"
    viewport = PHONE if width == 390 else {"width": 1440, "height": 900}
    context = chromium_browser.new_context(viewport=viewport)
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app_url + PATH)
        value, band = _time_and_band(page)
        expect(value).to_have_text(format_duration(row["time_s"]))
        expect(band).to_have_count(1)
        expect(band).to_contain_text(f": {span} (multi-node-infiniband")
        expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)
        value.scroll_into_view_if_needed()
        v, b = value.bounding_box(), band.bounding_box()
        assert v is not None and b is not None
        gap = b["y"] - (v["y"] + v["height"])
        assert 0 <= gap < MAX_GAP_PX, (v, b)
        assert b["x"] >= 0 and b["x"] + b["width"] <= width, b  # inside the screen's width
        assert v["y"] >= 0 and b["y"] < viewport["height"], (v, b)  # both on this screen
        chart = page.locator(".js-plotly-plot").first
        expect(chart).to_be_visible()
        c = chart.bounding_box()
        assert c is not None and b["y"] + b["height"] <= c["y"], (b, c)  # before the chart
        expect(page.get_by_test_id("stException")).to_have_count(0)
        shots = os.environ.get("COSTMODEL_SHOTS")  # a folder for a person to look at
        if shots:
            page.screenshot(path=f"{shots}/collectives-band-{width}.png")
    finally:
        context.close()
