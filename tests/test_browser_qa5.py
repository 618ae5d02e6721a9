"""Real-browser checks from the fifth fresh-eyes QA pass: what only a drawn chart shows."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; a missing stack fails)

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions


def _tick_texts(page, axis: str) -> list[str]:
    """The drawn tick labels of every plotly chart's ``axis`` ("x" or "y") on the page."""
    ticks = page.locator(f'[data-testid="stPlotlyChart"] g.{axis}tick text')
    expect(ticks.first).to_have_text(re.compile(r"\S"))  # drawn (plotly paints late)
    return [t.strip() for t in ticks.all_text_contents()]


@pytest.mark.parametrize(
    ("path", "axis", "unit", "width"),
    [
        ("cluster", "y", "s", 1440),
        ("collectives", "y", "s", 1440),
        ("collectives", "x", "B", 390),  # a phone's fewer ticks land on 10^3
    ],
)
def test_chart_ticks_carry_an_si_prefix_at_every_power(tabs, app_url, path, axis, unit, width):
    """The Cluster page's time axis read "0s, 0.002s, 0.004s" and the Collectives page's
    "10µs, 100µs, 0.001s, 0.01s" and "1000B, 1MB, 1GB": plotly leaves 10^-3 to 10^3 without an
    SI prefix unless told (minexponent), so one axis mixed "µs" with decimals of a second."""
    page = tabs.open(f"{app_url}/{path}", {"width": width, "height": 2400})
    texts = [t for t in _tick_texts(page, axis) if t.endswith(unit)]
    assert texts, _tick_texts(page, axis)
    plain = [t for t in texts if re.fullmatch(rf"-?0\.\d+{re.escape(unit)}|\d{{4,}}{unit}", t)]
    assert not plain, texts
