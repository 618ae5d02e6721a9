"""Real-browser checks from the eighth QA pass: what only a drawn page shows."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; a missing stack fails)

from tests._browser import settled  # noqa: E402

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

# A checkbox label's text wider than its box: what Streamlit's one-line ellipsis leaves.
_CUT_LABELS_JS = """
() => [...document.querySelectorAll(
    '[data-testid="stCheckbox"] label [data-testid="stMarkdownContainer"]')]
  .filter(el => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
  .map(el => `${el.textContent.trim()} (${el.scrollWidth} > ${el.clientWidth} px)`)
"""


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("cluster", "In-network reduction across nodes (SHARP)"),
        ("ddp", "no_sync on all but the last micro-batch"),
    ],
)
def test_checkbox_labels_are_not_cut_off_at_1440(tabs, app_url, path, label):
    """At 1440 px the Cluster page's checkbox read "In-network reduction across …" and the
    Training step page's "Set the MFU (else the fitted e…" and "no_sync on all but the last
    micro-…": a checkbox in a quarter of the page cut its label to one line."""
    page = tabs.open(f"{app_url}/{path}", {"width": 1440, "height": 1200})
    expect(page.get_by_test_id("stCheckbox").get_by_text(label)).to_be_visible()
    # measured once the layout has settled: read the moment the label shows, the Cluster page's
    # column was once 187 px wide (254 px of label) in a fresh-clone run and full width after
    assert settled(page, _CUT_LABELS_JS) == []
