"""The sixteenth QA pass in chromium: chart titles on a 390 px phone shrink only where they do
not fit, and what one page switch adds to the browser's history (Streamlit's, measured and
said in README's "Back and Forward")."""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from tests._browser import count_runs, wait_for_idle, wait_for_plots, wait_for_run_end

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)


# Each chart's title: its text, the font size its letters are drawn at (the innermost element of
# its first line), its box and the chart's width [px].
_TITLES_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
  const t = p.querySelector('.gtitle'), c = p.getBoundingClientRect(), r = t.getBoundingClientRect();
  let leaf = t;
  while (leaf.firstElementChild) leaf = leaf.firstElementChild;
  return {text: t.textContent, px: parseFloat(getComputedStyle(leaf).fontSize),
          left: r.left - c.left, right: r.right - c.left, width: c.width};
})
"""


def _titles(page, path: str, app_url: str, wait: str) -> dict[str, dict]:
    page.goto(f"{app_url}/{path}")
    expect(page.locator(".js-plotly-plot .gtitle", has_text=wait).first).to_be_attached()
    wait_for_plots(page)  # plotly's second layout pass (automargin) settles
    return {c["text"]: c for c in page.evaluate(_TITLES_JS)}


@pytest.mark.browser
def test_a_phone_shrinks_only_the_chart_titles_that_do_not_fit(chromium_browser, app_url):
    """At 390 px every chart title was set as if it were a 56-character line (12.4 px on a 354
    px chart), "One step (ddp): compute and collectives" too, which is 281 px wide at the 16 px
    of a desktop chart. A title that fits keeps its font; one that does not is set at the size
    its own longest line fits, and still sits whole inside its chart."""
    seen: dict[int, dict[str, dict]] = {}
    for width, height in ((1440, 900), (390, 844)):
        context = chromium_browser.new_context(viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            seen[width] = {
                **_titles(page, "ddp", app_url, "Exposed communication vs"),
                **_titles(page, "collectives", app_url, "all-reduce"),
            }
        finally:
            context.close()
    desk, phone = seen[1440], seen[390]
    assert desk.keys() == phone.keys()
    for text, c in phone.items():
        d = desk[text]
        assert c["left"] >= 0 and c["right"] <= c["width"] + 0.5, c  # never cut
        assert c["px"] <= d["px"], (c, d)
        fits = d["right"] + 4 <= c["width"]  # its desktop width (4 px insets) within the phone's
        if fits:  # the estimate is the widest glyph's: a title far inside keeps its font
            if d["right"] - d["left"] <= 0.8 * (c["width"] - 8):
                assert c["px"] == d["px"], (c, d)
        else:
            assert c["px"] < d["px"], (c, d)
    short = next(t for t in phone if t.startswith("One step (ddp)"))
    assert phone[short]["px"] == desk[short]["px"] == 16, phone[short]
    long = next(t for t in phone if t.startswith("all-reduce time"))
    assert phone[long]["px"] < 13, phone[long]  # a 56-character line at 354-358 px


# --- Back and Forward: what one page switch adds to the history ---------------------------------
@pytest.mark.browser
def test_what_one_page_switch_adds_to_the_history(chromium_browser, app_url):
    """README, "Back and Forward": a switch through the sidebar adds one history entry, whatever
    the URLs of the pages left and opened hold, and one Back returns to the page left with the
    inputs it had. Streamlit's page pushed an entry for the new path and one for every URL change
    of the switch (leaving a page whose URL holds inputs Streamlit binds added two: its path
    without them, then the new page; coming back added one per input put back in the URL and one
    for the page); the app's script (costmodel.web.app.ONE_ENTRY_PER_SWITCH) makes the later
    pushes of a switch replace its first entry."""
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        count_runs(context)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        nav = page.get_by_test_id("stSidebarNav")
        page.goto(f"{app_url}/memory")
        expect(page.get_by_test_id("stMetricValue").first).to_be_visible()

        def switch(title: str, path: str) -> int:
            runs = wait_for_idle(page)
            before = page.evaluate("history.length")
            nav.get_by_text(title, exact=True).click()
            expect(page).to_have_url(re.compile(rf"/{path}(\?|$)"))
            wait_for_run_end(page, runs)  # every URL change of the run has reached the browser
            return page.evaluate("history.length") - before

        assert switch("Batch", "batch") == 1  # Memory's URL held no input
        assert switch("Memory", "memory") == 1
        params = page.get_by_role("textbox", name="Parameters P")  # a box Streamlit binds
        params.fill("13B")
        params.press("Enter")
        page.get_by_text("3 (FSDP)", exact=True).click()  # a box the app writes to the URL
        ranks = page.get_by_role("spinbutton", name="Data-parallel ranks N")
        ranks.fill("16")
        ranks.press("Enter")  # a whole-number box: the app writes it too
        memory_url = re.compile(r"/memory\?(?=.*params=13B)(?=.*dp_ranks=16)(?=.*zero_stage=3)")
        expect(page).to_have_url(memory_url)
        wait_for_idle(page)  # the inputs' runs have ended
        assert switch("Batch", "batch") == 1  # was 2: /memory without params=13B, then /batch
        assert switch("Memory", "memory") == 1  # was 4: the page, then each input put back
        expect(page).to_have_url(memory_url)
        assert switch("Training step", "ddp") == 1
        page.go_back()  # one Back: the page left, with its inputs
        expect(page).to_have_url(memory_url)
        expect(page.get_by_role("radio", name="3 (FSDP)")).to_be_checked()
        expect(ranks).to_have_value("16")
        page.go_back()  # one more: the page before it
        expect(page).to_have_url(re.compile(r"/batch$"))
    finally:
        context.close()


# --- B's price follows A's in the browser's box, and the URL opens the same view ----------------
@pytest.mark.browser
def test_b_s_price_box_follows_a_s_price_in_the_browser(chromium_browser, app_url):
    """B on a B200 starts on the lowest on-demand B200 price beside an A at the placeholder;
    A set to aws-p5-on-demand moves B to aws-p6-b200-on-demand (the CLI's B for that A). A new
    default alone left the box drawn at the old preset while the cost used the new one (AppTest
    reads the server's value and could not see it); the URL leaves B out, and opens the same."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    from costmodel import training

    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{app_url}/ddp?ddp_pin=true&ddp_b_cluster=dgx-b200")
        b_box = page.get_by_role("combobox", name="Price (B, b200)")
        expect(b_box).to_have_value(training.default_price("b200")[0].name)
        a_box = page.get_by_role("combobox", name="Price", exact=True)
        option = page.get_by_role("option", name="aws-p5-on-demand", exact=True)
        for attempt in range(3):  # a rerun that lands after the click closes the list
            a_box.click()
            a_box.fill("aws-p5-on-demand")
            try:
                option.click(timeout=TIMEOUT_MS // 3)
                break
            except PlaywrightTimeoutError:
                if attempt == 2:
                    raise
        expect(page).to_have_url(re.compile(r"ddp_price=aws-p5-on-demand"))
        expect(b_box).to_have_value("aws-p6-b200-on-demand")
        assert "ddp_price_b" not in page.url
        page.goto(page.url)
        expect(page.get_by_role("combobox", name="Price (B, b200)")).to_have_value(
            "aws-p6-b200-on-demand"
        )
    finally:
        context.close()
