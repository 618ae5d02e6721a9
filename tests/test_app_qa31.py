"""Headless (AppTest) checks from the thirty-first QA pass.

Every number box of every page, given a value below its minimum, is refused in red naming the
box and its whole range in the words of the CLI's limit (costmodel._limits.LIMITS: "GPUs per
node: must be a whole number in 1..1,024, got 0"), never one bound alone (Warmup steps said
"must be a whole number >= 0"; a box with Streamlit's own bounds said nothing here and, in the
browser, "greater than or equal to 1" beside the box). The step page's timeline on a phone is a
summary per phase and the first intervals, not a card per interval.
"""

from __future__ import annotations

import re

import pytest

from costmodel._limits import LIMITS
from tests.test_app import REFERENCE, _text, assert_clean, open_page

#: Every page, with the URLs that show its number boxes drawn only on a choice (the one-link
#: view's ranks, configuration B, the activations' shape, the tokens' boxes, the step page's
#: own MFU, HSDP group and typed price).
PAGE_VIEWS: list[tuple[str, list[dict[str, str]]]] = [
    ("page_collectives.py", [{}, {"view": "link"}, {"coll_compare": "true"}]),
    ("page_cluster.py", [{}]),
    ("page_memory.py", [{}, {"shape_activations": "true"}]),
    ("page_batch.py", [{}, {"batch_unit": "tokens"}]),
    ("page_ddp.py", [{}, {"ddp_own_mfu": "true", "ddp_strategy": "hsdp", "ddp_price": "custom"}]),
    ("page_validate.py", [{"val_source": "A reference run", "val_reference": REFERENCE}]),
]

#: A range as a limit says it: "1..1,024", "0..1e12", "[0, 1)", "(0, 100]", "[200, 700] W".
RANGE = re.compile(r"\d\.\.[\d,]|[\[(][-\d.e]+, [-\d.e,]+[\])]")


def _boxes(page: str, query: dict[str, str]) -> list[tuple[str, str]]:
    """(key, label) of each number box the view draws enabled (a greyed box takes no typing)."""
    at = open_page(page, query)
    assert_clean(at)
    return [(b.key, b.label) for b in at.number_input if not b.disabled and b.key]


def _all_boxes() -> list[tuple[str, dict[str, str], str, str]]:
    seen: dict[tuple[str, str], tuple[str, dict[str, str], str, str]] = {}
    for page, views in PAGE_VIEWS:
        for query in views:
            for key, label in _boxes(page, query):
                seen.setdefault((page, key), (page, query, key, label))
    return list(seen.values())


def test_every_number_box_is_found():
    """The loop below reaches the boxes the QA named and the ones Streamlit bounded itself."""
    keys = {(page, key) for page, _, key, _ in _all_boxes()}
    for expected in [
        ("page_memory.py", "fragmentation"),
        ("page_ddp.py", "ddp_fragmentation"),
        ("page_batch.py", "warmup"),
        ("page_ddp.py", "ddp_contention"),
        ("page_ddp.py", "ddp_gpus_per_node"),
        ("page_ddp.py", "ddp_usd"),
        ("page_ddp.py", "ddp_group"),
        ("page_ddp.py", "ddp_mfu"),
        ("page_validate.py", "val_nodes"),
        ("page_validate.py", "val_gpus_per_node"),
        ("page_memory.py", "layers"),
    ]:
        assert expected in keys, sorted(keys)
    assert len(keys) >= 35, len(keys)


def _core(label: str) -> str:
    """A label without its trailing note, as a refusal names the box ("GPU power limit [W]"
    for "GPU power limit [W] (optional)")."""
    return re.sub(r" \((optional|empty: [^)]*)\)$", "", label)


@pytest.mark.parametrize(("page", "views"), PAGE_VIEWS, ids=[p for p, _ in PAGE_VIEWS])
def test_a_number_below_the_minimum_is_refused_with_the_box_and_its_range(page, views):
    """-1 typed into each box (below every box's minimum) gives one red message that names the
    box and says its range, never a bound alone (">= 0"), and no traceback."""
    checked = set()
    for query in views:
        for key, label in _boxes(page, query):
            if key in checked:
                continue
            checked.add(key)
            at = open_page(page, query)
            at.number_input(key=key).set_value(-1).run()
            assert_clean(at)
            said = [_text(e.value) for e in at.error]
            named = [
                s for s in said if (f"{label}: " in s or f"{_core(label)}: " in s) and "got -1" in s
            ]
            assert len(named) == 1, (key, label, said)
            assert RANGE.search(named[0]), (key, named[0])
            assert ">= 0" not in named[0] and "> 0," not in named[0], (key, named[0])
    assert checked


@pytest.mark.parametrize(
    ("page", "key", "limit"),
    [
        ("page_memory.py", "fragmentation", "fragmentation"),
        ("page_ddp.py", "ddp_fragmentation", "fragmentation"),
        ("page_batch.py", "warmup", "warmup_steps"),
        ("page_ddp.py", "ddp_contention", "contention"),
        ("page_ddp.py", "ddp_gpus_per_node", "gpus_per_node"),
    ],
)
def test_the_range_is_said_in_the_limits_words(page, key, limit):
    """The rule of the shared limit, word for word (the CLI's ``--fragmentation -1`` says it)."""
    at = open_page(page)
    at.number_input(key=key).set_value(-1).run()
    said = " ".join(_text(e.value) for e in at.error)
    assert f"must be {LIMITS[limit].rule}, got -1" in said, said


def test_a_box_that_streamlit_bounded_goes_back_to_its_default_when_refused():
    """GPUs per node on the step page (bounded by Streamlit before: the server dropped -1
    without a word): refused in red, the box back at its default (empty: the whole node), and
    the step still answered on the whole node."""
    at = open_page("page_ddp.py")
    before = [m.value for m in at.metric]
    at.number_input(key="ddp_gpus_per_node").set_value(0).run()
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    assert any(
        "GPUs per node: must be a whole number in 1..1,024, got 0; the default is used" in s
        for s in said
    ), said
    assert at.number_input(key="ddp_gpus_per_node").value is None
    assert [m.value for m in at.metric] == before
    at.run()  # said once: the next run is clean
    assert not [e for e in at.error if "GPUs per node" in e.value]
