"""Chromium at 390 px and 1440 px: the Collectives page's cluster-view crossovers table and its
"every model" table read without sideways scrolling on a phone, and keep their columns at 1440 px.

On 8 DGX H100 nodes at 14 GB the crossovers table (faster below, faster from, previous size,
faster above, time there) needed 407 px of a 390 px phone's 358 and scrolled sideways (the
textbook model's names, such as ``hierarchical_pipelined``, need more); the "every model" table
was a grid that scrolled 467 px in 356. Both are cards on a phone now, each value under its
column's name (common.page_cards_css), and tables at 1440 px, every header above its column.
One page load per width: both tables are on the same page.
"""

from __future__ import annotations

import pytest

from costmodel.predict import predict_all_algorithms
from costmodel.units import format_bytes
from costmodel.web.common import NBSP
from costmodel.web.data_collectives import size_grid
from tests.test_browser_qa20 import _as_table, _cards, _measured, _table

pytestmark = pytest.mark.browser

PAGE = "/collectives?nccl_nodes=8&size_text=14GB&coll_all_models=true"
CROSSOVERS = ["faster below", "faster from", "previous size", "faster above", "time there [µs]"]
MODELS = ["model", "algorithm", "protocol", "time [µs]", "algbw [GB/s]", "busbw [GB/s]"]
#: a header only each of the two tables has, by which the measure finds them
NAMES = ["faster from", "algbw [GB/s]"]


def _crossings() -> list[list[str]]:
    """The API's crossovers at the page's sizes, as the cells read: below, from, previous, above."""
    r = predict_all_algorithms("all_reduce", size_grid(14e9), "dgx-h100", nodes=8)
    x = r.crossovers
    assert len(x) == 2  # tree -> nvls_tree -> ring
    return [
        [below, format_bytes(m).replace(" ", NBSP), format_bytes(p).replace(" ", NBSP), above]
        for below, m, p, above in zip(
            x["faster_below"],
            x["message_bytes"],
            x["previous_bytes"],
            x["faster_above"],
            strict=True,
        )
    ]


def _content(got: dict) -> tuple[dict, dict]:
    """Both tables, their headers as the page writes them and the crossovers' cells the API's."""
    crossovers, models = _table(got, "faster from"), _table(got, "algbw [GB/s]")
    assert crossovers["headers"] == CROSSOVERS
    assert models["headers"] == MODELS
    assert [[c["text"] for c in row[:4]] for row in crossovers["rows"]] == _crossings()
    assert sorted(row[0]["text"] for row in models["rows"]) == [
        "lesson",
        "nccl",
        "nccl-table",
        "textbook",
    ]
    return crossovers, models


def test_the_crossovers_and_every_model_tables_fit_a_phone_as_cards(tabs, app_url):
    """At 390 px each crossover and each model is a card: no table wider than its box, every
    cell under its column's name and on the screen, the page no wider than the screen."""
    got = _measured(tabs, app_url, PAGE, 390, NAMES)
    assert got["page"] <= got["viewport"], got["page"]
    for table in _content(got):
        _cards(table, 390, max_row_px=200, max_lines=2)


def test_the_crossovers_and_every_model_tables_keep_their_columns_at_1440_px(tabs, app_url):
    """At 1440 px they are tables as before: every header shown, a row's cells side by side."""
    got = _measured(tabs, app_url, PAGE, 1440, NAMES)
    assert got["page"] <= got["viewport"], got["page"]
    for table in _content(got):
        _as_table(table)
