"""The Validate page's Nodes and GPUs-per-node boxes reach the URL after a log is chosen."""

from __future__ import annotations

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
    assert any("val_nodes" in _text(e) and "[1, 100000]" in _text(e) for e in at.error)
    assert at.number_input(key="val_nodes").value is None
    assert "val_nodes" not in at.query_params
    at = open_page("page_validate.py", {"val_gpus_per_node": "2.5"})
    assert any("2.5 is not a whole number" in _text(e) for e in at.error)
    assert at.number_input(key="val_gpus_per_node").value is None
