"""Chromium: the Validate page's two new roads in a served app, where an expander opened by a
click reruns the page and an upload in it reruns it again (AppTest sets the state directly).

- A reference run's calibration box at the page's end: opened, a calibration uploaded into it,
  the comparison above predicts with it (its caption and the calibration's expected-error
  basis); removed, the preset's comparison comes back.
- The log uploader takes the harness's results file (.jsonl): the comparison and the line
  saying which boxes such a file does not use.

The files are real measurements (a bundled run's rows and their calibration, made by the CLI
in tmp_path); tests/test_app_qa23.py compares the page's numbers with the CLI's.
"""

from __future__ import annotations

import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest

from costmodel.reference import reference_path
from costmodel.web.page_validate import RESULTS_BOXES
from tests._browser import LOG_INPUT, count_runs, wait_for_idle, wait_for_run_end
from tests.test_validate_qa10 import bundled_results, calibration_of

pytestmark = pytest.mark.browser

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)
#: the calibration box (its key ``val_calibration``: Streamlit's class ``st-key-<key>``)
CALIBRATION_INPUT = ".st-key-val_calibration input[type=file]"
REFERENCE = reference_path("06a")


@pytest.fixture(scope="module")
def page(chromium_browser):
    """One page for the module's checks, each loading its URL afresh (a new Streamlit session;
    a page per test cost a new renderer each: tests/_browser.Tabs)."""
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1100})
    count_runs(context)  # for wait_for_idle and wait_for_run_end
    p = context.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    yield p
    context.close()


def _metric(page, label: str):
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return box.get_by_test_id("stMetricValue")


def test_a_reference_run_takes_a_calibration_from_the_box_at_its_end(page, app_url, tmp_path):
    cal = calibration_of(REFERENCE, tmp_path)
    query = "val_source=A+reference+run&val_reference=" + REFERENCE.name
    page.goto(f"{app_url}/validate?{query}")
    expect(_metric(page, "Rows compared")).to_have_text(re.compile(r"^\d+ of \d+$"))
    expect(page.locator(CALIBRATION_INPUT)).to_have_count(0)  # the first view: no uploader
    box = page.get_by_test_id("stExpander").filter(has_text="calibration TOML instead")
    box.locator("summary").click()
    # each metric is read once the run an action starts has ended (while it runs, the last
    # run's elements stay beside the new ones: two "Rows compared" at once)
    runs = wait_for_idle(page)
    page.locator(CALIBRATION_INPUT).set_input_files(str(cal))
    wait_for_run_end(page, runs)
    expect(page.get_by_text("Predicted with calibration cal.toml")).to_be_visible()
    expect(page.get_by_text("its box at the page's end")).to_be_visible()
    expect(_metric(page, "Rows within the expected error")).to_have_text(re.compile(r"^\d+ of"))
    # removed (the file's x in the box): the preset predicts again
    runs = wait_for_idle(page)
    page.locator(".st-key-val_calibration [data-testid='stFileChipDeleteBtn'] button").click()
    wait_for_run_end(page, runs)
    expect(page.get_by_text("Predicted with calibration cal.toml")).to_have_count(0)
    expect(_metric(page, "Rows compared")).to_have_text(re.compile(r"^\d+ of \d+$"))


def test_the_log_uploader_takes_a_results_file(page, app_url, tmp_path):
    results = bundled_results(tmp_path, "06a")
    page.goto(f"{app_url}/validate")
    page.locator(LOG_INPUT).set_input_files(str(results))
    expect(_metric(page, "Rows compared")).to_have_text(re.compile(r"^\d+ of \d+$"))
    expect(page.get_by_text(RESULTS_BOXES[:60])).to_be_visible()
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
