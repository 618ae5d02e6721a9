"""Real-browser checks (chromium, 1400 px) from the thirty-fourth QA pass: the URL round trips
(a reload keeps the view; Back and Forward restore it) of the inputs the day's fixes touched.

- Training step: B on A's own cluster keeps A's node slice and power limit, B on another
  cluster does not; the labels follow the entry Back or Forward reaches.
- Collectives: a size typed with a binary prefix (``64KiB``) is said back as typed.
- Memory: a bare count sized at a typed shape, its Heads box greyed under FlashAttention,
  refuses nothing on any entry.

A whole-number box's change adds a history entry (the app writes it); a choice or a text box's
change rewrites the current one (README, "Back and Forward"): each test makes one of each.
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
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    count_runs(context)
    p = context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    try:
        yield p
    finally:
        context.close()


def _type(box, text: str) -> None:
    box.fill(text)
    box.press("Enter")


def _pick(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box ``label`` by typing it, as a user filters the list."""
    page.get_by_test_id("stSelectbox").filter(has_text=label).click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")


def _no_error(page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)


def test_step_b_on_as_cluster_keeps_the_slice_and_power_through_history(page, app_url):
    """A: dgx-h100 x 4 on 4 GPUs per node at 500 W; B: the same cluster under FSDP, which
    keeps A's slice and power (B's label says both). GPUs per node typed 2 (an entry), then B
    on hgx-h200 (rewrites it): B's label drops the slice and power. Back shows the first view
    again, Forward and a reload the second."""
    page.goto(
        f"{app_url}/ddp?ddp_gpus_per_node=4&ddp_power=500&ddp_pin=true"
        "&ddp_b_cluster=dgx-h100&ddp_b_strategy=fsdp"
    )
    b_first = "B: 7 B params on dgx-h100 x 4 (4 GPUs per node, 500 W), fsdp"
    b_second = "B: 7 B params on hgx-h200 x 4, fsdp"
    expect(page.get_by_text(b_first, exact=True).first).to_be_attached()
    _no_error(page)
    gpn = page.get_by_role("spinbutton", name="GPUs per node", exact=True)
    power = page.get_by_role("spinbutton", name=re.compile(r"^GPU power limit"))
    wait_for_idle(page)
    entries = page.evaluate("history.length")
    _type(gpn, "2")
    expect(page).to_have_url(re.compile(r"ddp_gpus_per_node=2(&|$)"))
    wait_for_idle(page)
    _pick(page, "Cluster (B)", "hgx-h200")
    expect(page).to_have_url(re.compile(r"ddp_b_cluster=hgx-h200(&|$)"))
    expect(page.get_by_text(b_second, exact=True).first).to_be_attached()
    expect(page.get_by_text(re.compile(r"^A: .*\(2 GPUs per node, 500 W\)")).first).to_be_attached()
    wait_for_idle(page)
    assert page.evaluate("history.length") == entries + 1

    page.go_back()
    expect(page).to_have_url(re.compile(r"ddp_b_cluster=dgx-h100(&|$)"))
    expect(gpn).to_have_value("4")
    expect(power).to_have_value(re.compile(r"^500"))
    expect(page.get_by_text(b_first, exact=True).first).to_be_attached()
    _no_error(page)

    page.go_forward()
    expect(gpn).to_have_value("2")
    expect(page.get_by_text(b_second, exact=True).first).to_be_attached()
    page.reload()
    expect(gpn).to_have_value("2")
    expect(power).to_have_value(re.compile(r"^500"))
    expect(page.get_by_text(b_second, exact=True).first).to_be_attached()
    _no_error(page)


def test_collectives_typed_binary_size_survives_history_and_reload(page, app_url):
    """Nodes typed 2 (an entry), then the size typed ``64KiB`` (rewrites it): the answer says
    64 KiB, not 65.5 kB; Back shows one node at the listed size, Forward and a reload 64 KiB."""
    page.goto(f"{app_url}/collectives")
    nodes = page.get_by_role("spinbutton", name="Nodes", exact=True)
    typed = page.get_by_role("textbox", name="or type a size")
    expect(nodes).to_have_value("1")
    wait_for_idle(page)
    _type(nodes, "2")
    expect(page).to_have_url(re.compile(r"nccl_nodes=2(&|$)"))
    wait_for_idle(page)
    _type(typed, "64KiB")
    expect(page).to_have_url(re.compile(r"size_text=64KiB(&|$)"))
    said = page.get_by_text(re.compile(r"64 KiB")).first
    expect(said).to_be_attached()
    expect(page.get_by_text(re.compile(r"65\.5 kB"))).to_have_count(0)

    page.go_back()
    expect(nodes).to_have_value("1")
    expect(typed).to_have_value("")
    expect(page.get_by_text(re.compile(r"64 KiB"))).to_have_count(0)
    page.go_forward()
    expect(nodes).to_have_value("2")
    expect(typed).to_have_value("64KiB")
    expect(page.get_by_text(re.compile(r"64 KiB")).first).to_be_attached()
    page.reload()
    expect(typed).to_have_value("64KiB")
    expect(page.get_by_text(re.compile(r"64 KiB")).first).to_be_attached()
    _no_error(page)


def test_memory_typed_shape_with_greyed_heads_survives_history(page, app_url):
    """A bare 70B count with activations: Layers 80 and Hidden size 8192 typed (an entry each)
    under FlashAttention, the Heads box greyed: no entry refuses the hidden size, Back undoes
    the hidden size, Forward and a reload show the same memory."""
    page.goto(f"{app_url}/memory?params=70B&shape_activations=true")
    layers = page.get_by_role("spinbutton", name="Layers", exact=True)
    hidden = page.get_by_role("spinbutton", name="Hidden size", exact=True)
    heads = page.get_by_role("spinbutton", name="Heads", exact=True)
    expect(heads).to_be_disabled()
    wait_for_idle(page)
    _type(layers, "80")
    expect(page).to_have_url(re.compile(r"layers=80(&|$)"))
    wait_for_idle(page)
    _type(hidden, "8192")
    expect(page).to_have_url(re.compile(r"hidden=8192(&|$)"))
    memory = (
        page.get_by_test_id("stMetric")
        .filter(has_text="Memory per GPU")
        .get_by_test_id("stMetricValue")
    )
    wait_for_idle(page)
    shown = memory.inner_text()
    _no_error(page)

    page.go_back()
    expect(hidden).to_have_value("")
    expect(layers).to_have_value("80")
    expect(heads).to_be_disabled()
    _no_error(page)
    page.go_forward()
    expect(hidden).to_have_value("8192")
    expect(memory).to_have_text(shown)
    page.reload()
    expect(hidden).to_have_value("8192")
    expect(layers).to_have_value("80")
    expect(heads).to_be_disabled()
    expect(memory).to_have_text(shown)
    _no_error(page)
