"""The app in a real browser: Debian's chromium driven by Playwright against `streamlit run`.

What only a browser shows: the pages paint, a size picked from the list moves the metric and the
chart, a URL with query parameters restores a view, an uploaded log is compared. Screenshots of every
page go to test-artifacts/ (gitignored). One server for the whole session (tests/conftest.py's
``app_url``, shared by every browser module); chromium is launched
from /usr/bin/chromium (never `playwright install`; .ci/run and `make chromium` install it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
from costmodel.reference import reference_path  # noqa: E402
from tests._browser import LOG_INPUT  # noqa: E402

# A published log bundled in the package (costmodel/data/reference/nccl-tests)
REFERENCE_LOG = reference_path("13a_waynehacking8_1x4xH100-slice_auto_allreduce")
TIMEOUT_MS = 30_000  # a rerun takes well under a second; 30 s covers a loaded 2-core CI box
#: the Collectives page's one-link view (it opens on the cluster view, the nccl model)
LINK_VIEW = "Formulas+on+one+link+%28alpha-beta%29"
# page -> URL path (the default page, Collectives, lives at the root)
PAGES = {
    "collectives": "",
    "cluster": "cluster",
    "memory": "memory",
    "batch": "batch",
    "ddp": "ddp",
    "validate": "validate",
}

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; no skip: a missing browser stack fails)

expect = playwright_api.expect
PlaywrightTimeoutError = playwright_api.TimeoutError
expect.set_options(timeout=TIMEOUT_MS)  # expect() has its own 5 s default otherwise


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    """One 1400 x 1000 page for the module, reused from test to test (tests/_browser.Tabs: each
    test's ``goto`` loads a new document, so a new Streamlit session; no test here reads the
    history or a first visit's storage). A new context per test started a new renderer that
    compiled Streamlit's scripts again: 119 s for the file before, on the shared 2-core box."""
    from tests._browser import reused_tabs

    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


@pytest.fixture()
def browser_page(tabs):
    """The module's page, back at 1400 x 1000 if the test before resized it."""
    return tabs.page({"width": 1400, "height": 1000})


def metric(page, label: str):
    """The value element of the st.metric whose label is ``label``."""
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return box.get_by_test_id("stMetricValue")


def chart_title(page, index: int = 0, *, scroll: bool = False):
    """Title of the index-th plotly chart; plotly may briefly hold two while re-rendering.

    ``scroll``: bring the chart into view first (a chart below the fold is drawn when seen);
    hover() waits until the chart is attached, visible and stable, then scrolls to it.
    """
    chart = page.get_by_test_id("stPlotlyChart").nth(index)
    if scroll:
        chart.hover()
    return chart.locator(".gtitle").first


def test_size_list_moves_the_metric_and_the_chart(browser_page, app_url):
    page = browser_page
    page.goto(f"{app_url}/?view={LINK_VIEW}")  # Collectives, the one-link view
    time_value = metric(page, "Time")
    expect(time_value).to_have_text(re.compile(r"\d"))
    expect(chart_title(page)).to_contain_text("M = 268 MB")
    before = time_value.inner_text()
    sizes = page.get_by_role("combobox", name=re.compile("Message size"))
    option = page.get_by_role("option", name="537 MB", exact=True)
    for attempt in range(3):  # a rerun that lands after the click closes the list: open it again
        sizes.click()
        sizes.fill("537 MB")  # the list draws the options near its top only: filter it
        try:
            option.click(timeout=TIMEOUT_MS)  # 256 MiB -> 512 MiB
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    expect(chart_title(page)).to_contain_text("M = 537 MB")
    expect(time_value).not_to_have_text(before)
    assert "size=537" in page.url  # the input is mirrored into the URL


def test_url_query_restores_the_view(browser_page, app_url):
    from costmodel import collectives
    from costmodel.units import format_duration

    page = browser_page
    page.goto(f"{app_url}/?view={LINK_VIEW}&op=all-gather&ranks=16&bandwidth=50GB%2Fs&latency=2us")
    expected = min(
        collectives.collective_time("all_gather", 2**28, 16, 50e9, 2e-6, algorithm=a)
        for a in collectives.ALGORITHMS["all_gather"]
    )
    expect(metric(page, "Time")).to_have_text(format_duration(expected))
    expect(page.get_by_role("spinbutton", name="Ranks N [GPUs]")).to_have_value("16")
    expect(chart_title(page)).to_contain_text("all-gather")


def test_upload_a_reference_log_shows_the_comparison(browser_page, app_url):
    page = browser_page
    assert REFERENCE_LOG.exists(), f"reference log missing: {REFERENCE_LOG}"
    page.goto(f"{app_url}/validate")
    page.locator(LOG_INPUT).set_input_files(str(REFERENCE_LOG))
    rows = metric(page, "Rows compared")
    expect(rows).to_have_text(re.compile(r"^\d+ of \d+$"))
    expect(metric(page, "Peak measured busbw")).to_have_text("366 GB/s")  # the log's peak row
    expect(chart_title(page, scroll=True)).to_contain_text(REFERENCE_LOG.name)
    # the summary written out as text; every row in a sortable grid once its expander opens
    expect(page.locator("[data-testid='stMarkdown'] table").first).to_be_visible()
    page.get_by_test_id("stExpander").filter(has_text="comparison.csv").locator("summary").click()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()


def test_upload_a_log_without_an_op_header_gives_the_cli_error(browser_page, app_url):
    """The 2 x 8 H100 log whose header names no op (the file name does): uploaded in chromium,
    the page shows the median error `validate compare` prints, the band beside it, and that the
    op came from the file name."""
    import json

    from typer.testing import CliRunner

    from costmodel import cli

    log = reference_path("06a")
    result = CliRunner().invoke(
        cli.app, ["validate", "compare", str(log), "--json", "--tolerance", "100"]
    )
    want = json.loads(result.stdout)["median_abs_rel_error"]
    page = browser_page
    page.goto(f"{app_url}/validate")
    page.locator(LOG_INPUT).set_input_files(str(log))
    expect(metric(page, "Median |busbw error|")).to_have_text(f"{100 * want:.1f} %")
    expect(metric(page, "Expected error")).to_contain_text("from 1 MiB")
    expect(page.get_by_text("op = all_reduce (the file name)")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_bad_input_shows_a_message_and_the_page_keeps_working(browser_page, app_url):
    page = browser_page
    page.goto(f"{app_url}/?view={LINK_VIEW}&bandwidth=fast")
    errors = page.get_by_test_id("stAlert").filter(has_text="must be a per-direction rate")
    expect(errors.first).to_contain_text("Link bandwidth")
    box = page.get_by_role("textbox", name="Link bandwidth B, per direction [B/s]")
    box.fill("100GB/s")
    box.press("Enter")
    expect(metric(page, "Time")).to_have_text(re.compile(r"\d"))
    expect(errors).to_have_count(0)


def test_every_page_opens_at_its_own_url_path_and_the_root_opens_collectives(browser_page, app_url):
    """A link to a page's own path (shared, or copied from the sidebar) opens that page; the
    first page, Collectives, also at ``/collectives``, not only at the root (Streamlit served it
    at ``/`` alone and showed "Page not found" there). The sidebar lists each page once, and a
    shared ``/collectives`` link keeps its query string."""
    from costmodel.web.app import PAGES as APP_PAGES

    page = browser_page
    titles = [title for _file, title, _url, _icon in APP_PAGES]
    for path, title in [(url, title) for _file, title, url, _icon in APP_PAGES] + [
        ("", "Collectives")
    ]:
        page.goto(f"{app_url}/{path}")
        # the heading is drawn after Streamlit's "Page not found" (sent before the page runs)
        expect(page.get_by_role("heading", level=1)).to_have_text(title)
        expect(page.get_by_text("Page not found")).to_have_count(0)
        expect(page.get_by_test_id("stSidebarNavLink")).to_have_count(len(titles))
        # each link's text is its icon's ligature name, then the title
        expect(page.get_by_test_id("stSidebarNavLink")).to_have_text(
            [re.compile(f"{re.escape(t)}$") for t in titles]
        )
    page.goto(f"{app_url}/collectives?view={LINK_VIEW}")
    expect(page.get_by_role("radio", name="Formulas on one link (alpha-beta)")).to_be_checked()
    expect(page.get_by_text("Page not found")).to_have_count(0)


@pytest.mark.parametrize("name", PAGES)
def test_screenshot_of_every_page(browser_page, app_url, name):
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    query = (
        "?val_source=A+reference+run&val_reference=" + REFERENCE_LOG.name
        if name == "validate"
        else ""
    )
    page.set_viewport_size({"width": 1400, "height": 2400})  # the whole page in one shot
    page.goto(f"{app_url}/{PAGES[name]}{query}")
    expect(page.get_by_test_id("stMetricValue").first).to_be_visible()
    if name != "batch":  # every page but Batch draws charts
        expect(chart_title(page, scroll=True)).not_to_be_empty()
        page.evaluate("window.scrollTo(0, 0)")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / f"page-{name}.png"), full_page=True)


def test_a_shared_link_cannot_inject_markdown(browser_page, app_url):
    """`/memory?params=![x](https://attacker.invalid/p.png)` made the browser fetch the
    image and a Markdown link rendered live. The value must show as text in the error."""
    page = browser_page
    fetched: list[str] = []

    def note(request) -> None:
        fetched.append(request.url)

    page.on("request", note)  # off again below: the page is the next test's too
    try:
        page.goto(
            f"{app_url}/memory?params=![x](https://attacker.invalid/p.png)"
            "%20[click](https://attacker.invalid/)"
        )
        alert = page.get_by_test_id("stAlert").filter(has_text="attacker.invalid").first
        expect(alert).to_contain_text("![x](https:")  # shown literally
        expect(alert).to_contain_text("attacker.invalid/p.png)")
        assert alert.locator("img").count() == 0
        assert alert.locator("a").count() == 0
    finally:
        page.remove_listener("request", note)
    from urllib.parse import urlparse

    assert not [url for url in fetched if urlparse(url).hostname == "attacker.invalid"]


@pytest.mark.parametrize("width", [1440, 390])
def test_cluster_a_or_cluster_b_on_one_screen(browser_page, app_url, width):
    """ "Cluster A or cluster B?" answered on the DDP step page. Pin B with the toggle
    and the Cluster (B) box; the answer, the B - A table and the overlaid charts show, the URL
    carries both configurations, and the link opened afresh restores them."""
    page = browser_page
    page.set_viewport_size({"width": width, "height": 2400})
    page.goto(f"{app_url}/ddp")
    # a cold server on a loaded shared box: the first paint took 61 s at load 20 on 2 cores
    expect(metric(page, "Step time")).to_have_text(re.compile(r"\d"), timeout=4 * TIMEOUT_MS)
    pin = page.get_by_test_id("stCheckbox").filter(has_text="Compare with a second configuration")
    pin.locator("label").click()
    box = page.get_by_test_id("stSelectbox").filter(has_text="Cluster (B)")
    expect(box).to_be_visible(timeout=4 * TIMEOUT_MS)
    option = page.get_by_role("option", name="dgx-a100", exact=True)
    for attempt in range(3):  # a rerun that lands after the click closes the list: open it again
        box.click()
        try:
            option.click(timeout=TIMEOUT_MS)
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    answer = page.get_by_test_id("stAlert").filter(has_text="tokens/s per GPU")
    expect(answer).to_contain_text("A's step is", timeout=4 * TIMEOUT_MS)
    expect(page.get_by_text("A or B?", exact=True)).to_be_visible()
    assert "ddp_pin=true" in page.url and "ddp_b_cluster=dgx-a100" in page.url
    text = answer.inner_text().splitlines()[-1]  # the sentence, after the icon's name
    expect(page.get_by_test_id("stException")).to_have_count(0)
    answer.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"ddp-a-or-b-{width}.png"), full_page=True)
    page.goto(page.url)  # the shared link
    linked = page.get_by_test_id("stAlert").filter(has_text="tokens/s per GPU")
    expect(linked).to_contain_text(text, timeout=4 * TIMEOUT_MS)
