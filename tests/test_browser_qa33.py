"""Real-browser check (chromium, 1440 px) that a refused Nodes entry on the Training step page
leaves "Tokens to train" and the price in the URL, so a reload opens the same view.

AppTest (tests/test_app_qa40.py) checks the query the page keeps; what only a browser does is
checked here: the address bar after the refused entry, and a reload of it.
"""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import wait_for_idle, wait_for_run_end

pytestmark = pytest.mark.browser

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

DESK = {"width": 1440, "height": 900}
QUERY = (
    "ddp_nodes=8&ddp_arch=llama-3.1-70b&ddp_strategy=fsdp&ddp_recompute=full&ddp_pin=true"
    "&ddp_b_cluster=dgx-b200&ddp_tokens=15T&ddp_price=aws-p5-on-demand"
)


def _nodes(page, n: int) -> None:
    runs = wait_for_idle(page)
    box = page.get_by_role("spinbutton", name="Nodes", exact=True)
    box.fill(str(n))
    box.press("Enter")
    wait_for_run_end(page, runs)


def test_a_reload_after_a_refused_node_count_keeps_tokens_and_price(tabs, app_url):
    page = tabs.open(f"{app_url}/ddp?{QUERY}", DESK)
    cost = page.get_by_test_id("stMetric").filter(has_text="Cost (A) [USD]")
    expect(cost).to_be_visible()
    linked = cost.get_by_test_id("stMetricValue").inner_text()
    _nodes(page, 0)
    red = page.get_by_test_id("stAlertContentError").filter(has_text="got 0")
    expect(red).to_contain_text("Nodes")
    expect(page).to_have_url(re.compile(r"ddp_nodes=0(&|$)"))
    assert "ddp_tokens=15T" in page.url and "ddp_price=aws-p5-on-demand" in page.url, page.url
    page.reload()
    expect(red).to_be_visible()
    assert "ddp_tokens=15T" in page.url and "ddp_price=aws-p5-on-demand" in page.url, page.url
    _nodes(page, 8)
    expect(page.get_by_role("textbox", name="Tokens to train")).to_have_value("15T")
    price = page.get_by_role("combobox", name="Price", exact=True)
    expect(price).to_have_value("aws-p5-on-demand")
    expect(cost.get_by_test_id("stMetricValue")).to_have_text(linked)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
