"""The Validate page's Nodes and GPUs-per-node boxes reach the URL after a log is chosen, and
the library's memory functions refuse data-parallel ranks beyond the shared limit."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel import cli, memory
from costmodel._limits import LIMITS
from costmodel.strategy.memory import stage_memory
from tests.test_app import REFERENCE, REFERENCE_LOGS, assert_clean, open_page


def _text(element) -> str:
    """An st.error's text without the markdown escapes the app adds."""
    return element.value.replace("\\", "")


def _uploaded():
    at = open_page("page_validate.py")
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at.file_uploader(key="val_upload").set_value((REFERENCE, text, "text/plain")).run()
    assert_clean(at)
    return at


def test_nodes_and_gpus_per_node_typed_after_the_first_log_reach_the_url():
    """The page resets both boxes for each new log through st.session_state; Streamlit's
    binding then kept the reset (empty) value, so a number typed after the session's first
    log never reached the URL until another log was chosen."""
    at = _uploaded()
    assert "val_nodes" not in at.query_params
    at.number_input(key="val_nodes").set_value(4).run()
    at.number_input(key="val_gpus_per_node").set_value(4).run()
    assert_clean(at)
    assert at.query_params["val_nodes"] == "4"
    assert at.query_params["val_gpus_per_node"] == "4"
    at.number_input(key="val_nodes").set_value(None).run()  # emptied: "from the log"
    assert "val_nodes" not in at.query_params
    assert at.query_params["val_gpus_per_node"] == "4"


def test_a_link_with_nodes_opens_them_and_a_bad_one_is_named():
    at = open_page("page_validate.py", {"val_nodes": "3", "val_gpus_per_node": "2"})
    assert_clean(at)
    assert at.number_input(key="val_nodes").value == 3
    assert at.number_input(key="val_gpus_per_node").value == 2
    assert at.query_params["val_nodes"] == "3"
    at = open_page("page_validate.py", {"val_nodes": "0"})
    assert any(
        "val_nodes" in _text(e) and "a whole number in 1..1,000,000" in _text(e) for e in at.error
    )
    assert at.number_input(key="val_nodes").value is None
    assert "val_nodes" not in at.query_params
    at = open_page("page_validate.py", {"val_gpus_per_node": "2.5"})
    assert any("2.5 is not a whole number" in _text(e) for e in at.error)
    assert at.number_input(key="val_gpus_per_node").value is None


# --- the library's rank counts within the shared limit ----------------------------------------
RANKS_RULE = "dp_ranks: must be a whole number in 1..1,000,000,000, got "


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda n: memory.training_memory(7e9, zero_stage=3, dp_ranks=n), ""),
        (lambda n: memory.max_params(80e9, zero_stage=3, dp_ranks=n), ""),
        (lambda n: memory.state_bytes_per_param("mixed-adam", zero_stage=1, dp_ranks=n), ""),
        # an array of several names the element, as the collective formulas do
        (
            lambda n: memory.max_params(80e9, zero_stage=3, dp_ranks=np.array([8.0, n])),
            " (element 1 of 2)",
        ),
    ],
)
@pytest.mark.parametrize("ranks", [1e300, 2**53, 1_000_000_001, 2.5])
def test_memory_refuses_ranks_beyond_the_shared_limit_as_the_cli_does(call, where, ranks):
    with pytest.raises(ValueError) as err:
        call(ranks)
    assert str(err.value) == RANKS_RULE + repr(float(ranks)) + where
    assert LIMITS["ranks"].rule in str(err.value)  # the CLI's --ranks range, one table


def test_memory_answers_at_the_limit_and_the_cli_refuses_past_it_in_the_same_words():
    assert memory.max_params(80e9, zero_stage=3, dp_ranks=10**9) == pytest.approx(80e9 / 16 * 1e9)
    got = CliRunner().invoke(cli.app, ["memory", "--params", "7B", "--ranks", "1000000001"])
    assert got.exit_code == 2
    assert "must be a whole number in 1..1,000,000,000, got" in got.output
    with pytest.raises(ValueError, match=r"dp_ranks: must be a whole number in 1\.\.1,000"):
        stage_memory(3, 2_000_000_000, 7e9)


def test_min_ranks_refuses_an_answer_no_call_could_take_and_keeps_exact_fits():
    assert memory.min_ranks(30e9, 80e9, zero_stage=3) == 6  # 480 GB / 80 GB, exactly
    assert memory.min_ranks(7e9, 80e9, zero_stage=1) == 2
    n = memory.min_ranks(1e12, 80e9, zero_stage=3)
    assert memory.training_memory(1e12, zero_stage=3, dp_ranks=n).total_bytes <= 80e9
    assert memory.training_memory(1e12, zero_stage=3, dp_ranks=n - 1).total_bytes > 80e9
    with pytest.raises(
        ValueError,
        match=r"memory_bytes: the fewest ranks that fit, 16,000,000,000, are past the ranks limit",
    ):
        memory.min_ranks(1e15, 1e6, zero_stage=3)


def test_a_new_log_empties_nodes_and_drops_them_from_the_url():
    at = open_page("page_validate.py", {"val_source": "reference"})
    at.number_input(key="val_nodes").set_value(2).run()
    assert at.query_params["val_nodes"] == "2"
    names = list(at.selectbox(key="val_reference").options)
    at.selectbox(key="val_reference").set_value(names[-1]).run()  # a new log resets the box
    assert_clean(at)
    assert at.number_input(key="val_nodes").value is None
    assert "val_nodes" not in at.query_params
    at.number_input(key="val_nodes").set_value(3).run()  # and typed again, it is linked again
    assert at.query_params["val_nodes"] == "3"
