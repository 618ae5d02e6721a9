"""The nineteenth QA pass: the Memory page's "What makes it fit" list and the step page's text
tables on a 390 px phone. The headless tests (AppTest) open the page as a browser opening its
URL; the browser test is marked ``browser``."""

from __future__ import annotations

import re

import pytest

from tests.test_app import _text, assert_clean, open_page

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
