"""Real-browser check from the eighth QA pass: at a phone's 390 px, a text table wraps its cells
between values, never between a number and its unit ("248" above "GB/s")."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; a missing stack fails)

from tests._browser import settled  # noqa: E402

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

# Every number followed by its unit or suffix ("14 GB", "248 GB/s", "239 k", "8.21 / s") in
# the page's text tables, each measured as a Range: a pair the browser broke across lines has
# client rectangles on more than one line. Returns how many pairs were measured and those split.
_SPLIT_JS = r"""
() => {
  const pair = /\d[\d.,]*[ \u00a0](?:\/[ \u00a0])?[^\s\d|]+/g;
  const split = [];
  let seen = 0;
  for (const td of document.querySelectorAll(
      '[data-testid="stMarkdownContainer"] table td')) {
    const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.data.matchAll(pair)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()]
          .filter(r => r.width > 0).map(r => Math.round(r.top)));
        seen += 1;
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return {seen, split};
}
"""


@pytest.mark.parametrize(
    ("path", "last_caption"),
    [
        ("memory", "Bytes per GPU, part by part"),  # 14 GB, 1.75 GB per ZeRO stage
        ("ddp", "Ranked by step time"),  # the strategies: 57.3 GB, 447 ms - 590 ms, 239 k
    ],
)
def test_a_number_stays_on_the_line_of_its_unit_at_390_px(tabs, app_url, path, last_caption):
    """At 390 px the Memory page's parts table and the step page's strategy table broke cells
    such as "14 GB" and "447 ms" between the number and the unit: each cell's number is now
    bound to its unit by a non-breaking space (common.keep_units), so a cell breaks only
    between values and words."""
    page = tabs.open(f"{app_url}/{path}", {"width": 390, "height": 844})
    expect(page.get_by_text(last_caption).first).to_be_visible()
    expect(page.locator('[data-testid="stMarkdownContainer"] table td').first).to_be_visible()
    got = settled(page, _SPLIT_JS)  # the tables after the caption settle
    assert got["seen"] >= 20, got  # the tables were there and were measured
    assert not got["split"], got
