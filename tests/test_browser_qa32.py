"""Real-browser checks (chromium) of the step and Memory pages' communication dtype switches.

AppTest (tests/test_app_qa38.py) checks the numbers the pages send; what only a browser does is
checked here: a click on the switch opens its boxes and writes the link, a choice in a box
moves the answer, and on a 390 px phone the Memory page's three boxes stack with nothing cut.
"""

from __future__ import annotations

import json

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest
from typer.testing import CliRunner

from costmodel.cli import app as cli_app
from costmodel.units import format_bytes
from tests._browser import reused_tabs, settled, wait_for_idle, wait_for_run_end

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


def _memory_bytes(*args: str) -> float:
    got = CliRunner().invoke(cli_app, ["memory", *args, "--json"])
    assert got.exit_code == 0, got.output
    return float(json.loads(got.stdout)["memory_bytes"])


# each labelled box of the dtype row: its label's text, and whether the label is cut (wider than
# its box) or runs past the viewport
_BOXES_JS = """
() => [...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
  .filter(l => /dtype|bucket_cap/.test(l.textContent))
  .map(l => { const r = l.getBoundingClientRect(), p = l.querySelector('p') || l;
              return {text: l.textContent, cut: p.scrollWidth > p.clientWidth + 1,
                      right: r.right, left: r.left, w: r.width}; })
"""


def test_a_click_on_the_memory_switch_opens_its_boxes_and_a_choice_moves_the_total(tabs, app_url):
    """On a phone: 7B at ZeRO-1 on 8 ranks, the switch clicked, gradients reduced in fp32 and
    a 100 MiB bucket typed: the total is `costmodel memory --grad-dtype fp32 --bucket 100MiB`'s,
    the link carries the three, and each box's label is whole inside the screen."""
    page = tabs.open(f"{app_url}/memory?params=7B&zero_stage=1", PHONE)
    metric = page.get_by_test_id("stMetricValue").first
    expect(metric).to_have_text(
        format_bytes(_memory_bytes("--params", "7B", "--zero", "1", "--ranks", "8"))
    )
    runs = wait_for_idle(page)
    page.get_by_text("Set the communication dtypes and bucket").click()
    wait_for_run_end(page, runs)
    grad = page.get_by_test_id("stSelectbox").filter(has_text="Gradient reduce dtype")
    expect(grad).to_be_visible()
    runs = wait_for_idle(page)
    grad.click()
    page.get_by_role("option", name="fp32", exact=True).click()
    wait_for_run_end(page, runs)
    runs = wait_for_idle(page)
    box = page.get_by_role("textbox", name="bucket_cap [B]")
    box.fill("100MiB")
    box.press("Enter")
    wait_for_run_end(page, runs)
    want = _memory_bytes(
        "--params", "7B", "--zero", "1", "--ranks", "8", "--grad-dtype", "fp32", "--bucket",
        "100MiB",
    )  # fmt: skip
    expect(metric).to_have_text(format_bytes(want))
    assert "mem_dtypes=true" in page.url and "mem_grad_dtype=fp32" in page.url, page.url
    assert "mem_bucket=100MiB" in page.url, page.url
    labels = settled(page, _BOXES_JS)
    assert {b["text"] for b in labels} >= {
        "Parameter all-gather dtype",
        "Gradient reduce dtype",
        "bucket_cap [B]",
    }, labels
    for b in labels:
        assert not b["cut"] and b["left"] >= 0 and b["right"] <= PHONE["width"], b


def test_a_link_to_the_step_page_with_dtypes_opens_them_and_switching_off_drops_them(tabs, app_url):
    """At 1440 px, a link with fsdp and fp32 gathers shows the switch on and the box at fp32;
    switched off, the boxes go and the communication is the default's again."""
    desk = {"width": 1440, "height": 900}
    url = f"{app_url}/ddp?ddp_strategy=fsdp&ddp_dtypes=true&ddp_param_dtype=fp32"
    page = tabs.open(url, desk)
    param = page.get_by_role("combobox", name="Parameter all-gather dtype")
    expect(param).to_have_value("fp32")
    comm = page.get_by_test_id("stMetric").filter(has_text="Communication (sum)")
    expect(comm).to_be_visible()
    wait_for_idle(page)
    with_fp32 = comm.get_by_test_id("stMetricValue").inner_text()
    runs = wait_for_idle(page)
    page.get_by_text("Set the communication dtypes", exact=True).click()
    wait_for_run_end(page, runs)
    expect(param).to_have_count(0)
    expect(comm.get_by_test_id("stMetricValue")).not_to_have_text(with_fp32)
    assert "ddp_param_dtype" not in page.url or "ddp_dtypes=false" in page.url, page.url
