"""Headless checks of the Collectives page (AppTest): the custom link's boxes refuse bad input
as every other box does, and its phone-width tables carry their card CSS.

The Link bandwidth and Latency boxes said "Link bandwidth: cannot parse 'fast'" without the range
they take, under a name that was not the box's, and took what `costmodel collective` refuses
(``1e30B/s``, a latency of 1e9 s). They now name the box and the CLI's range, in the CLI's words
(``--bandwidth: must be a per-direction rate in 1 MB/s..1 PB/s, ...``), and a latency typed
without its unit gets the CLI's warning. The cluster view's crossovers and the "every model"
table read as cards on a phone (their CSS in the table's own Markdown, common.page_cards_css);
the layout itself is measured in chromium (tests/test_browser_qa25.py).
"""

from __future__ import annotations

import pandas as pd
import pytest

from costmodel.units import bare_number_message
from costmodel.web.page_collectives import BANDWIDTH_BOX, LATENCY_BOX
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, metrics, open_page, open_tables

LINK = {"view": "link", "link": "custom"}
#: the cluster view on 8 DGX H100 nodes at 14 GB: two crossovers (tree -> nvls_tree -> ring)
CLUSTER = {"nccl_nodes": "8", "size_text": "14GB", "coll_all_models": "true"}
#: the CLI's command over one link, with a bandwidth and a latency to vary
CLI = ("collective", "all_reduce", "--size", "1GB", "--ranks", "8")


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


def _cli_refusal(option: str, value: str) -> str:
    """The CLI's refusal of ``--option value`` without its prefix and option name."""
    other = ("--latency", "5us") if option == "--bandwidth" else ("--bandwidth", "450GB/s")
    line = one_line_error(run(*CLI, option, value, *other), option)
    return line.removeprefix(f"costmodel: error: {option}: ")


@pytest.mark.parametrize(
    ("key", "box", "option", "value"),
    [
        ("bandwidth", BANDWIDTH_BOX, "--bandwidth", "fast"),  # said "cannot parse" alone
        ("bandwidth", BANDWIDTH_BOX, "--bandwidth", "0GB/s"),
        ("bandwidth", BANDWIDTH_BOX, "--bandwidth", "1e30B/s"),  # was answered
        ("bandwidth", BANDWIDTH_BOX, "--bandwidth", "450"),  # 450 B/s: below 1 MB/s
        ("latency", LATENCY_BOX, "--latency", "abc"),
        ("latency", LATENCY_BOX, "--latency", "-1us"),
        ("latency", LATENCY_BOX, "--latency", "1e9s"),  # was answered
    ],
)
def test_a_link_box_names_itself_and_the_clis_range(key, box, option, value):
    """One red message: the box's label, then the CLI's own words for the value (its range,
    and for text that does not parse the grammar's example); no answer is drawn from it."""
    at = open_page("page_collectives.py", {**LINK, key: value})
    assert_clean(at)
    want = f"{box}: {_cli_refusal(option, value)}"
    assert _errors(at) == [want], (_errors(at), want)
    assert "must be a " in want and ".." in want  # the range is in it
    assert not metrics(at)  # no answer from a refused box
    assert at.text_input(key=key).value == value  # the box keeps what was typed


def test_the_link_boxes_answer_at_the_ends_of_their_range():
    """1 PB/s and a latency of 0 are in the CLI's ranges: answered, nothing in red."""
    at = open_page("page_collectives.py", {**LINK, "bandwidth": " 1PB/s ", "latency": "0"})
    assert_clean(at)
    assert not at.error, _errors(at)
    assert metrics(at)["Time"]


def test_a_bare_latency_gets_the_clis_warning():
    """``0.5`` is 0.5 s, answered, with the warning `collective --latency 0.5` prints."""
    at = open_page("page_collectives.py", {**LINK, "latency": "0.5"})
    assert_clean(at)
    assert not at.error, _errors(at)
    said = bare_number_message("Latency", "0.5", "latency", "us")
    assert said is not None
    assert [_text(w.value) for w in at.warning] == [said]
    cli = run(*CLI, "--bandwidth", "450GB/s", "--latency", "0.5")
    assert cli.exit_code == 0 and "--latency 0.5 is 0.5 s" in cli.stderr, cli.stderr
    assert said.removeprefix("Latency") in cli.stderr


def _card_css(at, key: str) -> str:
    (css,) = [m.value for m in at.markdown if f"<style data-cards={key}>" in m.value]
    return css


def test_the_crossovers_and_every_model_tables_carry_their_cards():
    """The cluster view's crossovers (5 columns) and the every-model table (6) are text tables
    with the cards' CSS naming each column; their grids and CSVs (opened) hold the same rows."""
    at = open_page("page_collectives.py", CLUSTER)
    assert_clean(at)
    crossings = _card_css(at, "algorithm_crossovers")
    for name in ("faster below", "faster from", "previous size", "faster above", "time there"):
        assert f'content:"{name}' in crossings, name
    assert "@media (max-width:" in crossings
    models = _card_css(at, "models_at_size")
    for name in ("model", "algorithm", "protocol", "time [", "algbw [", "busbw ["):
        assert f'content:"{name}' in models, name
    open_tables(at)
    assert_clean(at)
    frames = {tuple(d.value.columns): d.value for d in at.dataframe}
    per_model = next(f for c, f in frames.items() if c[0] == "model" and "algbw [GB/s]" in c)
    assert sorted(per_model["model"]) == ["lesson", "nccl", "nccl-table", "textbook"]
    crossovers = next(f for c, f in frames.items() if "faster from [B]" in c)
    assert isinstance(crossovers, pd.DataFrame) and len(crossovers) == 2
    assert list(crossovers["faster below"]) == ["tree", "nvls_tree"]
    assert list(crossovers["faster above"]) == ["nvls_tree", "ring"]
