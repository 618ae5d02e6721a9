"""The question "Which algorithm wins on my cluster at 14 GB?" in a real browser:
type 14GB on the Collectives page's cluster view and read the answer, at desktop (1440 px) and
phone (390 px) widths. Screenshots go to test-artifacts/collectives-14gb-<width>.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

from costmodel.predict import predict_all_algorithms, predict_collective  # noqa: E402
from costmodel.units import format_duration  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
TIMEOUT_MS = 60_000  # a fresh server and session on a loaded shared 2-core box

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; no skip)

expect = playwright_api.expect
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    """One page per viewport size for the module (tests/_browser.Tabs), each test loading its
    URL afresh: no check here reads the history or a first visit's storage. The 1440 x 900 page
    serves two tests (a new context each before), its screenshot's resize undone in between."""
    from tests._browser import reused_tabs

    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


def metric(page, label: str):
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return box.get_by_test_id("stMetricValue")


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_which_algorithm_wins_at_14gb(tabs, app_url, width, height):
    page = tabs.open(
        f"{app_url}/?view=A+model+on+a+cluster+preset&nccl_nodes=8",
        {"width": width, "height": height},
    )
    expect(metric(page, "Time")).to_have_text(re.compile(r"\d"))
    # let the first run finish (its last element is drawn) before typing: a rerun that is
    # still going when Enter is pressed can paint the old size last on a loaded machine
    # (the last element: the toggle that draws every model's curves, off on the first view)
    expect(page.get_by_text("Every model on this cluster (lesson")).to_be_visible()
    box = page.get_by_role("textbox", name="or type a size")
    box.fill("14GB")
    box.press("Enter")
    p = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    expect(metric(page, "Time")).to_have_text(format_duration(p.time_s))
    expect(metric(page, "Algorithm / protocol")).to_have_text(f"{p.algorithm} / {p.protocol}")
    assert "size_text=14GB" in page.url  # the typed size is in the URL
    # the answer: the verdict (costmodel.verdict: the winner only when it wins beyond the
    # expected error, else "within the expected error") in the caption of the per-algorithm
    # table (fastest first), as the API decides it; and the refused algorithms with reasons
    verdict = predict_all_algorithms("all_reduce", [14e9], "dgx-h100", nodes=8).verdicts[0]
    lead = "Fastest algorithm" if verdict.decided else "Algorithms"
    caption = page.get_by_text(f"{lead}: {verdict.text()}.")
    expect(caption).to_be_visible()
    expect(caption).to_contain_text("Every nccl algorithm dgx-h100 can run at M = 14 GB")
    expect(page.get_by_text("Algorithms this cluster (or this model) cannot run")).to_be_visible()
    chart = page.get_by_test_id("stPlotlyChart").first
    chart.hover()
    expect(chart.locator(".gtitle").first).to_contain_text(
        re.compile(r"every algorithm on\s*dgx-h100")  # a title's lines join with no space
    )
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.get_by_role("heading", name="Collectives").first.hover()  # back to the top
    said = caption.bounding_box()
    # the table of every algorithm, fastest first, written out as text (common.table)
    grid = page.locator("[data-testid='stMarkdown'] table").first.bounding_box()
    print(f"width {width}: the verdict at {said}, the algorithm table at {grid}")
    if width >= 1000:  # desktop: the answer (metrics, verdict, fastest row) on one screen:
        # the verdict, the table's header and its first row (fastest first) above the fold
        assert said is not None and said["y"] + said["height"] <= height
        assert grid is not None and grid["y"] + 2 * 35 < height  # 35 px a row
    page.set_viewport_size({"width": width, "height": 2000 if width >= 1000 else 3000})
    page.get_by_role("heading", name="Collectives").first.hover()
    page.screenshot(path=str(ARTIFACTS / f"collectives-14gb-{width}.png"))


def test_bad_size_text_in_the_browser(tabs, app_url):
    page = tabs.page({"width": 1440, "height": 900})
    page.goto(f"{app_url}/?view=A+model+on+a+cluster+preset&size_text=14+gigs")
    alert = page.get_by_test_id("stAlert").filter(has_text="Message size")
    expect(alert.first).to_contain_text("14GB, 1.5GiB")
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_side_by_side_in_the_browser(tabs, app_url):
    page = tabs.page({"width": 1440, "height": 2400})
    page.goto(
        f"{app_url}/?view=A+model+on+a+cluster+preset&nccl_nodes=8&size_text=14GB"
        "&coll_compare=true&pin_cluster=dgx-b200&pin_nodes=8"
    )
    a = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    b = predict_collective("all_reduce", 14e9, "dgx-b200", nodes=8)
    expect(metric(page, "Time B / A")).to_have_text(f"{b.time_s / a.time_s:.3g}x")
    # the first chart of the side-by-side tabs: A's algorithms and B's choice (only the
    # open tab of each set of tabs draws its chart: the page's first chart is A's)
    chart = page.get_by_test_id("stPlotlyChart").nth(1)
    chart.hover()
    expect(chart.locator(".gtitle").first).to_contain_text(
        re.compile(r"B's choice\s*\(dashed\)")  # a title's lines join with no space
    )
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.get_by_role("heading", name="Collectives").first.hover()
    page.screenshot(path=str(ARTIFACTS / "collectives-side-by-side-1440.png"))
