"""A switch of page in the sidebar and back keeps every input, and the URL carries it again.

Streamlit drops the state of a widget a run does not draw, except a box bound to the URL
(``bind``), whose value it keeps and writes back into the URL on the return. The boxes the app
syncs to the URL itself (a choice named by its option: ZeRO stage, Operation, View, Solve for,
Optimizer and rule; the Validate page's boxes it resets for each log) are not bound, so Memory
(ZeRO stage 3) -> Batch -> Memory showed ZeRO stage 0 beside the recipe and ranks it kept
(costmodel.web.common.KEPT).

A click in the sidebar asks for the new page's path without the old page's query (checked in
chromium: ``/memory?dp_ranks=16&zero_stage=3`` -> ``/batch`` -> ``/memory?dp_ranks=16``, ZeRO
stage 0, before the fix); :func:`_switch` does the same headless. Back and Forward across the
switch still show what the history entry's URL holds (tests/test_browser_url_history.py for the
walk in chromium).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest, local_script_runner

from tests.test_app import APP, REFERENCE, TIMEOUT_S, assert_clean, open_page

#: What a user sets on each page, in order (each change is one run): (page, [(kind, key,
#: value)]). Every box the app syncs to the URL itself is set to a value other than its default
#: (:func:`test_the_scenarios_set_every_box_the_app_syncs_itself` checks that none is missed),
#: beside a few boxes Streamlit's binding keeps, for comparison.
SCENARIOS: dict[str, tuple[str, list[tuple[str, str, Any]]]] = {
    "collectives-link": (
        "page_collectives.py",
        [
            ("selectbox", "op", "all_gather"),
            ("radio", "view", "link"),
            ("number_input", "ranks", 16),
        ],
    ),
    "collectives-cluster": (
        "page_collectives.py",
        [
            ("selectbox", "op", "broadcast"),
            ("number_input", "nccl_nodes", 2),
            ("number_input", "nccl_gpus", 4),
            ("toggle", "coll_compare", True),
            ("number_input", "pin_nodes", 4),
            ("number_input", "pin_gpus", 4),
        ],
    ),
    "cluster": (
        "page_cluster.py",
        [
            ("number_input", "cl_nodes", 8),
            ("number_input", "cl_gpus", 4),
            ("radio", "cl_model", "textbook"),
        ],
    ),
    "memory": (
        "page_memory.py",
        [
            ("radio", "zero_stage", 3),
            ("number_input", "dp_ranks", 16),
            ("selectbox", "recipe", "fp32-adam"),
        ],
    ),
    "memory-arch": (
        "page_memory.py",
        [
            ("selectbox", "arch", "gpt2-124m"),
            ("number_input", "act_seq", 2048),
            ("number_input", "micro", 2),
        ],
    ),
    "batch-samples": (
        "page_batch.py",
        [
            ("number_input", "seq_len", 2048),
            ("radio", "solve", "ranks"),
            ("number_input", "batch_local_batch", 8),
            ("number_input", "batch_accumulation", 16),
            ("number_input", "batch_global_batch", 4096),
            ("radio", "rule", "sqrt"),
            ("number_input", "warmup", 100),
            ("number_input", "base_batch", 128),
            ("number_input", "critical_samples", 1024),
        ],
    ),
    "batch-tokens": (
        "page_batch.py",
        [
            ("radio", "batch_unit", "tokens"),
            ("radio", "rule_tokens", "linear"),
            ("number_input", "batch_global_tokens", 8 * 2**20),
            ("number_input", "base_tokens", 2**21),
            ("number_input", "critical_tokens", 2**24),
            ("radio", "solve", "local_batch"),
            ("number_input", "batch_ranks", 32),
        ],
    ),
    "ddp": (
        "page_ddp.py",
        [
            ("selectbox", "ddp_strategy", "fsdp"),
            ("number_input", "ddp_nodes", 2),
            ("number_input", "ddp_local_batch", 2),
            ("number_input", "ddp_seq", 2048),
            ("number_input", "ddp_accumulation", 2),
            ("number_input", "ddp_gpus_per_node", 4),
        ],
    ),
    "validate": (
        "page_validate.py",
        [
            ("radio", "val_source", "reference"),
            ("selectbox", "val_reference", REFERENCE),
            ("radio", "val_placement", "out-of-place"),
            ("selectbox", "val_cluster", "coreweave-hgx-h100"),
            ("selectbox", "val_op", "all_reduce"),
            ("number_input", "val_nodes", 16),
            ("number_input", "val_gpus_per_node", 8),
        ],
    ),
}

#: The input kinds AppTest reads (a file uploader cannot be bound to a URL: its file is kept in
#: the session instead, costmodel.web.common.kept_upload, tests/test_app_qa16.py).
KINDS = ("radio", "selectbox", "multiselect", "number_input", "checkbox", "toggle", "text_input")


def _open(page_file: str) -> AppTest:
    """app.py opened at ``/``, then ``page_file`` chosen in the sidebar."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S).run()
    return _switch(at, page_file)


def _switch(at: AppTest, page_file: str) -> AppTest:
    """A click on ``page_file`` in the sidebar: the browser asks for the new page's path
    without the old page's query (chromium); Streamlit's binding then writes back the values it
    kept, and the app the values of the boxes it syncs itself."""
    at.query_params.clear()
    return at.switch_page(f"costmodel/web/{page_file}").run()


def _set(at: AppTest, changes: list[tuple[str, str, Any]]) -> AppTest:
    for kind, key, value in changes:
        getattr(at, kind)(key=key).set_value(value).run()
        assert_clean(at)
    return at.run()  # the URL the last run wrote, as the browser shows it


def _inputs(at: AppTest) -> dict[str, Any]:
    """Every keyed input the page draws, by key: its value."""
    return {w.key: w.value for kind in KINDS for w in getattr(at, kind) if w.key}


def _unbound(at: AppTest) -> set[str]:
    """Keys of the inputs drawn without Streamlit's URL binding: those the app syncs itself."""
    return {
        w.key
        for kind in KINDS
        for w in getattr(at, kind)
        if w.key and not w.proto.HasField("query_param_key")
    }


def _elsewhere(page_file: str) -> str:
    """The page visited in between: another page with inputs of its own."""
    return "page_batch.py" if page_file == "page_memory.py" else "page_memory.py"


def test_memory_keeps_zero_stage_over_a_visit_to_batch():
    """The case reported: ZeRO stage came back at 0 while the recipe and ranks came back."""
    at = _set(_open("page_memory.py"), SCENARIOS["memory"][1])
    assert at.metric[0].label == "Memory per GPU, ZeRO-3"
    shown = at.metric[0].value
    _switch(at, "page_batch.py")
    assert_clean(at)
    assert "zero_stage" not in at.query_params  # the Batch page's URL is its own
    _switch(at, "page_memory.py")
    assert_clean(at)
    assert at.radio(key="zero_stage").value == 3
    assert at.number_input(key="dp_ranks").value == 16
    assert at.selectbox(key="recipe").value == "fp32-adam"
    assert (at.metric[0].label, at.metric[0].value) == ("Memory per GPU, ZeRO-3", shown)
    at.run()
    assert at.query_params == {"zero_stage": "3", "dp_ranks": "16", "recipe": "fp32-adam"}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_input_survives_a_page_round_trip(scenario):
    """Each input shows what it showed before the switch, the answer too, and the URL after
    the return is the URL before it."""
    page_file, changes = SCENARIOS[scenario]
    at = _set(_open(page_file), changes)
    before, answer = _inputs(at), [m.value for m in at.metric]
    written = dict(at.query_params)  # what the app wrote itself (the browser writes the rest)
    for _kind, key, value in changes:
        assert before[key] == value, key
    _switch(at, _elsewhere(page_file))
    assert_clean(at)
    _switch(at, page_file)
    assert_clean(at)
    assert _inputs(at) == before
    assert [m.value for m in at.metric] == answer
    at.run()
    assert _inputs(at) == before  # and a later rerun keeps them
    url = dict(at.query_params)
    assert written.items() <= url.items()
    assert {key for _kind, key, _value in changes} <= url.keys()
    # the URL after the return is the view: a new session opening it shows the same inputs
    fresh = open_page(page_file, url)
    assert_clean(fresh)
    assert _inputs(fresh) == before


def test_the_scenarios_set_every_box_the_app_syncs_itself():
    """Each input a page draws without Streamlit's binding (in the views the scenarios open) is
    set by a scenario, so the round trip above covers it; today those are the boxes named in
    costmodel.web.common.QP."""
    unbound: set[str] = set()
    for page_file, changes in SCENARIOS.values():
        at = _open(page_file)
        unbound |= _unbound(at)
        for kind, key, value in changes:
            getattr(at, kind)(key=key).set_value(value).run()
            unbound |= _unbound(at)
    changed = {key for _page, changes in SCENARIOS.values() for _kind, key, _value in changes}
    assert unbound <= changed, sorted(unbound - changed)
    assert {"zero_stage", "op", "view", "solve", "rule", "rule_tokens", "val_op"} <= unbound


@pytest.fixture()
def history_navigation(monkeypatch):
    """Every later AppTest run is a Back/Forward run (Streamlit's ``is_history_navigation``
    mark on the rerun the browser sends after ``popstate``)."""
    rerun_data = functools.partial(local_script_runner.RerunData, is_history_navigation=True)
    monkeypatch.setattr(local_script_runner, "RerunData", rerun_data)


def test_back_over_a_page_switch_shows_what_the_entry_holds(request):
    """Memory (ZeRO-3, 16 ranks) -> Batch, then Back to an entry of the Memory page: the kept
    values do not win over the entry's URL; the page's own entry without inputs (the first a
    sidebar switch adds) shows the defaults, the entry with them shows them."""
    at = _set(_open("page_memory.py"), SCENARIOS["memory"][1][:2])
    _switch(at, "page_batch.py")
    request.getfixturevalue("history_navigation")
    at.query_params.update({"zero_stage": "3", "dp_ranks": "16"})
    at.switch_page("costmodel/web/page_memory.py").run()
    assert_clean(at)
    assert at.radio(key="zero_stage").value == 3
    assert at.number_input(key="dp_ranks").value == 16
    at.query_params.clear()  # Back once more: /memory
    at.run()
    assert_clean(at)
    assert at.radio(key="zero_stage").value == 0
    assert at.number_input(key="dp_ranks").value == 8
    assert at.metric[0].label == "Memory per GPU, ZeRO-0"
    assert at.query_params == {}  # nothing written back into the entry


def test_validate_a_new_log_still_resets_the_boxes_it_settles():
    """The Validate page's Op, Nodes and GPUs per node come back after a page switch, and a
    different log afterwards still empties them ("from the log"), as before."""
    at = _set(_open("page_validate.py"), SCENARIOS["validate"][1])
    _switch(at, "page_memory.py")
    _switch(at, "page_validate.py")
    assert at.selectbox(key="val_op").value == "all_reduce"
    assert at.number_input(key="val_nodes").value == 16
    other = next(o for o in at.selectbox(key="val_reference").options if o != REFERENCE)
    at.selectbox(key="val_reference").set_value(other).run()
    assert_clean(at)
    assert at.selectbox(key="val_op").value == "from the log"
    assert at.number_input(key="val_nodes").value is None
    assert at.number_input(key="val_gpus_per_node").value is None
    assert not {"val_op", "val_nodes", "val_gpus_per_node"} & set(at.query_params)
