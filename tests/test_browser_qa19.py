"""The twentieth QA pass in chromium: the answer to "how long does an all-reduce of 14 GB take on
64 H100s over NDR InfiniBand?" read on a 390 px phone, with the times its band allows, as the
CLI prints them (tests/test_app_qa20.py checks the same headless)."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

import costmodel as cm
from costmodel.units import format_duration
from tests._browser import reused_tabs

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

pytestmark = pytest.mark.browser

# The page's main box scrolling sideways (a caption or heading wider than the phone).
_MAIN_WIDER_THAN_SCREEN_JS = """
() => {
  const main = document.querySelector('[data-testid="stMain"]');
  return main.scrollWidth > main.clientWidth + 1;
}
"""


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    """One 390 px page for the module's checks, each loaded afresh (tests/_browser.Tabs)."""
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


@pytest.mark.parametrize(
    ("path", "time_label"),
    [
        ("/collectives?nccl_cluster=dgx-h100&nccl_nodes=8&size_text=14GB", "Time"),
        ("/cluster?cl_cluster=dgx-h100&cl_nodes=8&cl_size_text=14GB", "Time, model nccl"),
    ],
    ids=["collectives", "cluster"],
)
def test_the_band_of_the_answer_reads_on_a_phone(tabs, app_url, path, time_label):
    """On a 390 px screen the time, and under it the times its asymmetric band allows (66.2 ms
    to 129 ms beside 74.1 ms), wrap inside the page: the caption that carries them does not
    push the page sideways and is not cut off."""
    row = cm.predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8).to_frame().iloc[0]
    span = f"{format_duration(row['time_lo_s'])} to {format_duration(row['time_hi_s'])}"
    page = tabs.open(app_url + path, {"width": 390, "height": 844})
    value = (
        page.get_by_test_id("stMetric")
        .filter(has=page.get_by_test_id("stMetricLabel").get_by_text(time_label, exact=True))
        .get_by_test_id("stMetricValue")
    )
    expect(value).to_have_text(format_duration(row["time_s"]))
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="Expected error ±")
    expect(caption).to_contain_text(f": {span} (multi-node-infiniband")
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)
    caption.scroll_into_view_if_needed()
    box = caption.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert not page.evaluate(_MAIN_WIDER_THAN_SCREEN_JS)
    expect(page.get_by_test_id("stException")).to_have_count(0)
