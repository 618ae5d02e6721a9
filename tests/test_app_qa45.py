"""The Validate page on logs of bundled run 15 cut into one log per job (GH200, 4 per node):
a 32-node log whose device list keeps its first two hosts, and a one-node calibration compared
with a two-node log. Each test failed on the defect it names before its fix."""

from __future__ import annotations

import streamlit

from tests.test_app import metrics
from tests.test_app_qa23 import _upload
from tests.test_validate_qa28 import _alps_job
from tests.test_validate_qa29 import _one_node_calibration


def test_the_nodes_box_takes_the_nodes_of_a_trimmed_device_list(tmp_path, monkeypatch):
    """Nodes 32 on the page, as `validate compare --nodes 32`: the host lines of a trimmed
    device list (2 hosts) are a lower bound, not a count; it was refused in red."""
    streamlit.cache_data.clear()
    log = tmp_path / "job6_all_reduce.log"
    log.write_text(_alps_job(6))
    page = _upload(monkeypatch, log)
    assert not page.at.error
    page.at.number_input(key="val_nodes").set_value(32).run()
    assert not page.at.error, [e.value for e in page.at.error]
    m = metrics(page.at)
    assert float(m["Median |busbw error|"].split()[0]) < 100, m
    streamlit.cache_data.clear()


def test_a_cross_level_calibration_shows_the_uncalibrated_band(tmp_path, monkeypatch):
    streamlit.cache_data.clear()
    cal = _one_node_calibration(tmp_path)
    log = tmp_path / "job2_all_reduce.log"
    log.write_text(_alps_job(2))
    page = _upload(monkeypatch, log, cal)
    m = metrics(page.at)
    assert m["Rows within the expected error"] == "51 of 60", m
    assert m["Expected error"].startswith("±118% from 1 MiB"), m
    streamlit.cache_data.clear()
