"""Back and Forward: every input shows what the history entry's URL holds.

The boxes whose URL the app writes itself (a choice named by its option, not its label:
``zero_stage=3``; the Validate page's boxes it resets for each log) kept the value the page
showed when Back or Forward changed the URL under them, and wrote it back into the entry
(``/memory?zero_stage=3`` again after Back). Streamlit's own binding (``recipe``) followed.
What the history holds is Streamlit's (costmodel.web.common.QP): a change through its binding
rewrites the current entry, a URL written by the page adds one (a whole-number box's too: the
app writes its URL as digits, costmodel.web.common.bound_number).

The real ``popstate`` is checked in chromium (one short walk on the Memory page); the
history-navigation rerun that Streamlit's frontend sends on ``popstate`` is also replayed
headless (AppTest), for a number box the app syncs itself, which needs a log to show, and for
an entry with a number the app refuses, which showed a traceback.
"""

from __future__ import annotations

import functools
import re

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails, no skip
import pytest
from streamlit.testing.v1 import local_script_runner

from tests._browser import REWRITE_QUIET_MS, count_runs, wait_for_idle, wait_for_run_end
from tests.test_app import REFERENCE, REFERENCE_LOGS, assert_clean, open_page

expect = playwright_api.expect
TIMEOUT_MS = 90_000  # a page paints in 4-15 s here, slower beside other sessions
expect.set_options(timeout=TIMEOUT_MS)  # expect() has its own 5 s default otherwise
ZERO_0, ZERO_3 = "0 (DDP)", "3 (FSDP)"


# --- in chromium -------------------------------------------------------------------------------
def _metric(page, label: re.Pattern[str]):
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label)
    )
    return box.get_by_test_id("stMetricValue")


@pytest.mark.browser
def test_back_and_forward_restore_a_named_choice_and_a_number(chromium_browser, app_url):
    """ZeRO stage (a choice the app writes to the URL itself) and Data-parallel ranks N (a
    whole-number box, which the app writes too: each is an entry) follow Back and Forward, and so does the answer; a reload then opens
    the entry's URL, and no entry is written over with the value the page showed before."""
    from costmodel.strategy.memory import stage_memory
    from costmodel.units import format_bytes

    # the page's bare 7B count, sized as the step prices each layout (the model state alone)
    first, zero3, zero3_16 = (
        format_bytes(stage_memory(stage, n, 7e9).total_bytes)
        for stage, n in ((0, 8), (3, 8), (3, 16))
    )
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        count_runs(page)
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{app_url}/memory")
        ranks = page.get_by_role("spinbutton", name="Data-parallel ranks N")
        memory = _metric(page, re.compile(r"^Memory per GPU, ZeRO-"))
        expect(ranks).to_have_value("8")
        expect(memory).to_have_text(first)  # ZeRO-0 on 8 ranks (the page's default view)
        entries = page.evaluate("history.length")

        page.get_by_text(ZERO_3, exact=True).click()  # the page writes ?zero_stage=3: a new entry
        expect(page).to_have_url(re.compile(r"/memory\?zero_stage=3$"))
        expect(memory).to_have_text(zero3)
        assert page.evaluate("history.length") == entries + 1
        ranks.fill("16")
        ranks.press("Enter")  # a whole-number box the app writes to the URL: a new entry too
        expect(page).to_have_url(re.compile(r"/memory\?(?=.*dp_ranks=16)(?=.*zero_stage=3)"))
        expect(memory).to_have_text(zero3_16)
        assert page.evaluate("history.length") == entries + 2

        page.go_back()  # before the ranks were typed: ZeRO-3 on 8 ranks
        expect(page.get_by_role("radio", name=ZERO_3)).to_be_checked()
        expect(ranks).to_have_value("8")
        expect(memory).to_have_text(zero3)
        expect(page).to_have_url(re.compile(r"/memory\?zero_stage=3$"))
        runs = wait_for_idle(page)
        page.go_back()  # the page as first opened: both inputs at their defaults
        expect(page.get_by_role("radio", name=ZERO_0)).to_be_checked()
        expect(ranks).to_have_value("8")
        expect(memory).to_have_text(first)
        # a rerun that wrote zero_stage=3 back would land by now
        wait_for_run_end(page, runs, quiet_ms=REWRITE_QUIET_MS)
        expect(page).to_have_url(re.compile(r"/memory$"))

        page.go_forward()
        expect(page.get_by_role("radio", name=ZERO_3)).to_be_checked()
        expect(ranks).to_have_value("8")
        page.go_forward()
        expect(ranks).to_have_value("16")
        expect(memory).to_have_text(zero3_16)
        expect(page).to_have_url(re.compile(r"/memory\?(?=.*dp_ranks=16)(?=.*zero_stage=3)"))

        page.go_back()
        expect(ranks).to_have_value("8")
        page.go_back()
        expect(page.get_by_role("radio", name=ZERO_0)).to_be_checked()
        page.reload()  # the entry's URL, not the last value shown, opens the view
        expect(ranks).to_have_value("8")
        expect(memory).to_have_text(first)
        expect(page.get_by_role("radio", name=ZERO_0)).to_be_checked()
    finally:
        context.close()


# --- headless: the rerun Streamlit sends on popstate ------------------------------------------
@pytest.fixture()
def history_navigation(monkeypatch):
    """Make every AppTest run a Back/Forward run: the rerun request carries Streamlit's
    ``is_history_navigation`` mark, as the browser's rerun after ``popstate`` does."""
    rerun_data = functools.partial(local_script_runner.RerunData, is_history_navigation=True)
    monkeypatch.setattr(local_script_runner, "RerunData", rerun_data)


def _back_to(at, query: dict[str, str]):
    """The URL of an earlier entry under the page, as Back puts it there."""
    at.query_params.clear()
    at.query_params.update(query)
    return at


def test_a_plain_rerun_keeps_what_the_box_shows():
    """Outside Back/Forward the box wins over a URL that lags behind it (the rerun a fast
    second click sends before the first URL write arrives): no choice is undone."""
    at = open_page("page_memory.py")
    at.radio(key="zero_stage").set_value(3).run()
    _back_to(at, {}).run()
    assert_clean(at)
    assert at.radio(key="zero_stage").value == 3
    assert at.query_params == {"zero_stage": "3"}


def test_back_and_forward_runs_restore_the_named_choice(request):
    at = open_page("page_memory.py")
    at.radio(key="zero_stage").set_value(3).run()
    at.number_input(key="dp_ranks").set_value(16).run()
    assert at.metric[0].label == "Memory per GPU, ZeRO-3"
    request.getfixturevalue("history_navigation")
    _back_to(at, {}).run()  # Back: the entry leaves both out
    assert_clean(at)
    assert at.radio(key="zero_stage").value == 0
    assert at.number_input(key="dp_ranks").value == 8  # the app writes it too: the same rule
    assert at.metric[0].label == "Memory per GPU, ZeRO-0"
    assert at.query_params == {}  # nothing written back into the entry
    _back_to(at, {"zero_stage": "2", "dp_ranks": "16"}).run()  # Forward
    assert at.radio(key="zero_stage").value == 2
    assert at.number_input(key="dp_ranks").value == 16
    _back_to(at, {"zero_stage": "3 (FSDP)"}).run()  # an entry written with the label
    assert at.radio(key="zero_stage").value == 3
    _back_to(at, {"zero_stage": "7"}).run()  # an entry naming no choice: named, the default
    assert at.radio(key="zero_stage").value == 0
    shown = [e.value.replace("\\", "") for e in at.error]  # without the markdown escapes
    assert any("URL parameter zero_stage: '7' is not a choice" in e for e in shown), shown


def test_back_restores_the_validate_pages_own_number_boxes(request):
    """Nodes and GPUs per node (reset by the page for each log, so synced by the app)."""
    at = open_page("page_validate.py")
    log = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at.file_uploader(key="val_upload").set_value((REFERENCE, log, "text/plain")).run()
    at.number_input(key="val_nodes").set_value(4).run()
    at.number_input(key="val_gpus_per_node").set_value(2).run()
    assert at.query_params["val_nodes"] == "4"
    request.getfixturevalue("history_navigation")
    _back_to(at, {"val_gpus_per_node": "2"}).run()  # before Nodes was typed
    assert_clean(at)
    assert at.number_input(key="val_nodes").value is None  # empty: from the log
    assert at.number_input(key="val_gpus_per_node").value == 2
    assert at.query_params == {"val_gpus_per_node": "2"}
    _back_to(at, {"val_nodes": "4", "val_gpus_per_node": "2"}).run()  # Forward
    assert at.number_input(key="val_nodes").value == 4


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1e400", "URL parameter dp_ranks: 1e400 is not a finite number below 2**53"),
        ("2.5", "URL parameter dp_ranks: 2.5 is not a whole number"),
    ],
)
def test_back_to_a_link_with_a_refused_number_names_it(request, value, message):
    """Back to the entry of a link whose number the app refuses (the entry the app's corrected
    URL was added after), in a session that has drawn the box: ``del st.query_params`` refuses
    a key Streamlit's binding holds, and the page showed that traceback instead of the box."""
    at = open_page("page_memory.py", {"dp_ranks": value})
    assert any(message in e.value.replace("\\", "") for e in at.error)
    at.number_input(key="dp_ranks").set_value(16).run()
    request.getfixturevalue("history_navigation")
    _back_to(at, {"dp_ranks": value}).run()
    assert_clean(at)
    assert any(message in e.value.replace("\\", "") for e in at.error)
    assert at.number_input(key="dp_ranks").value == 8
    assert "dp_ranks" not in at.query_params
