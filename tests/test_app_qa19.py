"""The nineteenth QA pass: the Memory page's "What makes it fit" list and the step page's text
tables on a 390 px phone. The headless tests (AppTest) open the page as a browser opening its
URL; the browser test is marked ``browser``."""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails
import pytest

from tests.test_app import _text, assert_clean, open_page

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

browser = pytest.mark.browser


# --- the Memory page's own list of changes that make it fit ----------------------------------
#: Each part of a change the Memory page names, as the query that applies it alone (the page's
#: boxes: ZeRO stage, recompute, ZeRO-3 as fsdp/hsdp, HSDP group, reshard_after_forward).
_PART_QUERY = (
    (re.compile(r"ZeRO-(\d)"), lambda m: {"zero_stage": m[1]}),
    (re.compile(r"recompute (\S+)"), lambda m: {"recompute": m[1]}),
    (re.compile(r"reshard after forward \(FULL_SHARD\)"), lambda m: {"mem_reshard": "true"}),
    (re.compile(r"hsdp g=(\d+)"), lambda m: {"mem_group": m[1]}),
    (re.compile(r"fsdp"), lambda m: {"mem_strategy": "fsdp"}),
)


def _part_query(part: str) -> dict[str, str]:
    for pattern, query in _PART_QUERY:
        if m := pattern.fullmatch(part):
            return query(m)
    raise AssertionError(f"a change the test cannot apply: {part!r}")


def _fit_changes(at) -> list[str] | None:
    """The changes the page's "Does not fit" warning names ("ZeRO-1 and recompute full"), their
    memory and rank count left off; None when the page says it fits."""
    said = [_text(w.value) for w in at.warning if "Does not fit" in _text(w.value)]
    if not said:
        return None
    m = re.search(r"What makes it fit: (.*?)\. More ranks", said[0])
    if m is None:
        return []
    return [
        re.sub(r"( at N = [\d,]+)?: [\d.]+ \w?B per GPU$", "", entry) for entry in m[1].split("; ")
    ]


# Llama-3.1-70B and Llama-2-7B on an H100 (the step's dgx-h100 card) that do not fit, at
# several rank counts, stages, layouts and recompute settings: where a single change fits
# (recompute full, ZeRO-1, recompute selective) ...
_SINGLE = [
    {"arch": "llama-3.1-70b", "dp_ranks": "64", "zero_stage": "3"},
    {"arch": "llama-2-7b", "dp_ranks": "8", "zero_stage": "0"},
    {"arch": "llama-2-7b", "dp_ranks": "8", "zero_stage": "1", "flash": "false"},
]
# ... and where only a combined one does.
_COMBINED = [
    {"arch": "llama-3.1-70b", "dp_ranks": "64", "zero_stage": "0"},
    {"arch": "llama-3.1-70b", "dp_ranks": "64", "zero_stage": "3", "mem_reshard": "false"},
    {"arch": "llama-3.1-70b", "dp_ranks": "64", "zero_stage": "3", "mem_strategy": "hsdp"},
    {"arch": "llama-2-7b", "dp_ranks": "8", "zero_stage": "0", "micro": "4"},
    {"arch": "llama-2-7b", "dp_ranks": "8", "zero_stage": "0", "flash": "false"},
]


@pytest.mark.parametrize(
    ("query", "combined"),
    [(q, False) for q in _SINGLE] + [(q, True) for q in _COMBINED],
    ids=lambda q: "-".join(q.values()) if isinstance(q, dict) else str(q),
)
def test_the_memory_page_lists_no_combined_change_whose_part_fits_alone(query, combined):
    """The advisor (``fit_suggestions``, the step page and ``costmodel memory``) leaves out a
    combined change whose part alone already fits ("gb200 and recompute full" next to
    "gb200"). The Memory page builds its own list; it names a combination only when no single
    change fits, so it shows no such entry. Kept so: every combination named here fits, and
    each of its parts applied alone through the page's own boxes does not."""
    at = open_page("page_memory.py", query)
    assert_clean(at)
    changes = _fit_changes(at)
    assert changes, changes
    named = [c for c in changes if " and " in c]
    assert bool(named) == combined, changes  # each case still says what it was picked for
    for entry in named:
        parts = entry.split(" and ")
        both: dict[str, str] = {}
        for part in parts:
            alone = open_page("page_memory.py", {**query, **_part_query(part)})
            assert_clean(alone)
            assert _fit_changes(alone) is not None, f"{part!r} alone fits, {entry!r} is listed"
            both |= _part_query(part)
        together = open_page("page_memory.py", {**query, **both})
        assert_clean(together)
        assert _fit_changes(together) is None, f"{entry!r} is said to fit and does not"
        # and no listed change is a part of another listed one
        assert not any(p in changes for p in parts), changes


# --- the step page's text tables on a 390 px phone (chromium) --------------------------------
# Each cell of the page's text tables whose words are broken: its computed overflow-wrap, its
# lines on screen and its words (a no-break space, as between a number and its unit, joins).
_BROKEN_CELLS_JS = """
() => [...document.querySelectorAll('[data-testid="stMarkdownContainer"] table')].flatMap(t =>
  [...t.querySelectorAll('th, td')].map(c => {
    const r = document.createRange(); r.selectNodeContents(c);
    const lines = new Set([...r.getClientRects()].filter(x => x.width > 0)
                                                 .map(x => Math.round(x.top))).size;
    const words = c.textContent.trim().split(/[ \\t\\n]+/).length;
    return {text: c.textContent, wrap: getComputedStyle(c).overflowWrap, lines, words,
            width: c.getBoundingClientRect().width};
  }).filter(c => c.wrap !== 'normal' || c.lines > c.words))
"""


@browser
def test_the_step_page_tables_break_cells_only_between_words_at_390_px(chromium_browser, app_url):
    """At 390 px the step page's strategy and scaling tables are wider than the screen (each
    scrolls in its own box) and their narrow columns ("band": 72 px for "447 ms - 590 ms")
    are at their narrowest. A cell inherited Streamlit's ``overflow-wrap: break-word``, which
    lets a word break anywhere once its column is narrower than the word: the "band" column was
    reported a character a line. Debian's chromium keeps the column at its longest word (72 px:
    "447 ms", "-", "590 ms"), so here the inherited ``break-word`` is what failed before. Every
    text table's cell now breaks only between words (``overflow-wrap: normal``,
    common.READABLE_CSS), and no cell shows more lines than words."""
    context = chromium_browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/ddp")
        expect(page.get_by_text("Every strategy, ranked")).to_be_attached()
        tables = page.locator('[data-testid="stMarkdownContainer"] table')
        expect(tables.filter(has_text="band")).to_have_count(1)  # the strategy table
        expect(tables.filter(has_text="scaling efficiency")).to_have_count(1)  # the scaling one
        for _ in range(20):  # the page's CSS can apply a moment after the tables paint
            broken = page.evaluate(_BROKEN_CELLS_JS)
            if not broken:
                break
            page.wait_for_timeout(500)
        assert not broken, broken
    finally:
        context.close()
