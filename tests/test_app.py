"""Headless tests of the Streamlit app (streamlit.testing.v1.AppTest), page by page.

Every page: it runs without an exception, changing an input changes the numbers shown
(``st.metric``), bad input gives a red message naming the field while the rest of the page still
renders, a URL query restores the view, and every table has a CSV download.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest  # noqa: E402

from costmodel.strategy import DEFAULT_COMM_CONTENTION

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
WEB = ROOT / "costmodel" / "web"
PAGES = sorted(p.name for p in WEB.glob("page_*.py"))
TIMEOUT_S = (
    60  # generous: the first run imports streamlit, plotly and pandas on a shared 2-core box
)


def open_page(page_file: str, query: dict | None = None) -> AppTest:
    """Open ``page_file`` (in costmodel/web) as a fresh session whose URL carries ``query``.

    A page file runs on its own as a Streamlit script (as ``st.navigation`` runs it), so this
    is a browser opening ``/<page>?<query>``.
    """
    at = AppTest.from_file(str(WEB / page_file), default_timeout=TIMEOUT_S)
    if query:
        at.query_params.update(query)
    return at.run()


def open_tables(at: AppTest) -> AppTest:
    """Open every table a page keeps in an expander until asked (common.table's ``on_demand``:
    key ``table_<key>``), as a user clicks each, and rerun: the grids and CSV buttons are then
    in the page."""
    keys = [k for e in at.expander if (k := e.proto.id.rsplit("-", 1)[-1]).startswith("table_")]
    for key in keys:
        at.session_state[key] = True
    return at.run() if keys else at


def open_through_navigation(page_file: str) -> AppTest:
    """Run app.py, then switch to ``page_file`` as a click in the sidebar would."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S).run()
    return at.switch_page(f"costmodel/web/{page_file}").run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _text(markdown: str) -> str:
    """What a Markdown body escaped by web.common.plain shows: the backslashes removed."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


# --- the whole app ---------------------------------------------------------------------------
def test_navigation_lists_every_page_file():
    text = (WEB / "app.py").read_text()  # the packaged entry; the top-level app.py delegates
    for page_file in PAGES:
        assert page_file in text, f"{page_file} is not in the app's navigation"


@pytest.mark.parametrize("page_file", PAGES)
def test_page_runs_shows_numbers_and_csv_for_every_table(page_file):
    at = open_through_navigation(page_file)
    assert_clean(at)
    if page_file == "page_validate.py":  # nothing to compare until a log is chosen
        assert not at.metric
        at.radio(key="val_source").set_value("reference").run()
        assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert len(at.metric) >= 1
    # every st.dataframe comes with a CSV download button (the first view's wait in expanders)
    open_tables(at)
    assert_clean(at)
    downloads = at.get("download_button")
    assert len(downloads) >= len(at.dataframe) >= 1


def test_widget_keys_are_unique_across_pages():
    # Widget keys are the URL query names and the session-state slots: one key on two pages
    # would carry a value from one page into the other.
    seen: dict[str, str] = {}
    for page_file in PAGES:
        tree = ast.parse((WEB / page_file).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "key":
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    key = node.value.value
                    if key.startswith(("chart_", "download_")):
                        continue
                    assert seen.setdefault(key, page_file) == page_file, (
                        f"{key!r} in {seen[key]} and {page_file}"
                    )


def test_first_page_is_collectives():
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S).run()
    assert_clean(at)
    assert at.title[0].value == "Collectives"


# --- Collectives -----------------------------------------------------------------------------
#: the one-link view (the lesson's formulas); the page opens on the cluster view (nccl)
LINK_VIEW = {"view": "Formulas on one link (alpha-beta)"}


def test_collectives_opens_on_the_realistic_model_with_the_lesson_one_click_away():
    at = open_page("page_collectives.py")
    assert_clean(at)
    assert at.radio(key="view").value == "cluster"
    assert at.radio(key="coll_model").value == "nccl"
    at.radio(key="view").set_value("link").run()
    assert_clean(at)
    assert "Fastest by the formulas" in metrics(at)


def test_collectives_ranks_change_the_time():
    at = open_page("page_collectives.py", LINK_VIEW)
    before = metrics(at)["Time"]
    at.number_input(key="ranks").set_value(512).run()
    assert_clean(at)
    assert metrics(at)["Time"] != before


def test_collectives_message_size_moves_time_and_bytes():
    at = open_page("page_collectives.py", LINK_VIEW)
    before = metrics(at)
    at.selectbox(key="size").set_value(2**20).run()
    after = metrics(at)
    assert after["Time"] != before["Time"]
    assert after["Bytes sent per rank"] != before["Bytes sent per rank"]


def test_collectives_query_restores_the_view():
    query = {
        **LINK_VIEW,
        "op": "all-gather",
        "ranks": "16",
        "bandwidth": "50GB/s",
        "latency": "2us",
    }
    at = open_page("page_collectives.py", query)
    assert_clean(at)
    assert at.selectbox(key="op").value == "all_gather"
    assert at.number_input(key="ranks").value == 16
    assert at.text_input(key="bandwidth").value == "50GB/s"
    # the same view set by hand gives the same numbers
    by_hand = open_page("page_collectives.py", LINK_VIEW)
    by_hand.selectbox(key="op").set_value("all_gather")
    by_hand.number_input(key="ranks").set_value(16)
    by_hand.text_input(key="bandwidth").set_value("50GB/s")
    by_hand.text_input(key="latency").set_value("2us").run()
    assert metrics(by_hand) == metrics(at)


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("bandwidth", "0GB/s", "Link bandwidth"),
        ("bandwidth", "fast", "Link bandwidth"),
        ("latency", "-3us", "Latency"),
    ],
)
def test_collectives_bad_text_input_names_the_field(key, value, field):
    at = open_page("page_collectives.py", LINK_VIEW)
    at.text_input(key=key).set_value(value).run()
    assert_clean(at)
    assert any(field in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="op").value == "all_reduce"  # the inputs still render


def test_collectives_zero_ranks_is_refused_with_the_rule():
    at = open_page("page_collectives.py", LINK_VIEW)
    at.number_input(key="ranks").set_value(0).run()
    assert_clean(at)
    said = "Ranks N [GPUs]: must be a whole number in 1..1,000,000,000, got 0"  # the CLI's range
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]


def test_collectives_crossover_table_matches_the_library():
    from costmodel import collectives

    at = open_tables(open_page("page_collectives.py", LINK_VIEW))
    frames = [d.value for d in at.dataframe if "crossover size [B]" in d.value.columns]
    assert frames, "no crossover table"
    row = frames[0].set_index("pair").loc["ring / tree"]
    expected = collectives.crossover_bytes("ring", "tree", 8, 450e9, 5e-6)
    assert row["crossover size [B]"] == pytest.approx(expected, rel=1e-12)  # same function


# --- Memory ----------------------------------------------------------------------------------
# a bare count's memory is the model state alone, as `costmodel memory --params` and the step
# size it; activations added with 'Add activations' (4096 tokens, micro-batch 1, FlashAttention,
# no recompute) are those of the count's shape (architecture_for_params: 41 layers, hidden
# 3712 for 7B): 41 x 4096 x 34 x 3712 B
_ACT_7B = 41 * 4096 * 34 * 3712


def test_memory_zero_stage_changes_memory_per_gpu():
    from costmodel.strategy.memory import stage_memory
    from costmodel.units import format_bytes

    at = open_page("page_memory.py")
    before = metrics(at)
    # 7B x 16 B/param (ZeRO paper): the lesson's figure, shown beside the total of the layout
    # the step prices (DDP on 8 ranks: + its bf16 bucket copy, 2 B/param)
    assert before["Memory per GPU, ZeRO-0"] == format_bytes(112e9 + 14e9)
    assert any(format_bytes(112e9) in c.value for c in at.caption)
    at.radio(key="zero_stage").set_value(3).run()
    assert_clean(at)
    gathered = stage_memory(3, 8, 7e9).gathered_bytes  # FSDP's gathered units in flight
    assert 0 < gathered < 14e9
    shown = metrics(at)["Memory per GPU, ZeRO-3"]
    assert shown == format_bytes(14e9 + gathered)  # 112 GB / 8 + gathered
    at.checkbox(key="shape_activations").check().run()  # plus the count's shape's activations
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(14e9 + gathered + _ACT_7B)


def test_memory_named_model_gives_activations_and_a_verdict():
    from costmodel.strategy.memory import stage_memory
    from costmodel.units import format_bytes

    at = open_page("page_memory.py")
    at.selectbox(key="arch").set_value("llama-3.1-70b")
    at.number_input(key="dp_ranks").set_value(64)
    at.radio(key="zero_stage").set_value(3).run()
    assert_clean(at)
    m = stage_memory(3, 64, arch="llama-3.1-70b")  # the layout the step prices: fsdp
    shown = metrics(at)
    assert shown["Memory per GPU, ZeRO-3"] == format_bytes(m.total_bytes)
    assert shown["Fits?"] == ("yes" if m.total_bytes <= 80e9 else "no")
    assert any("FlashAttention" in c.value for c in at.caption)
    at.selectbox(key="recompute").set_value("full").run()
    full = stage_memory(3, 64, arch="llama-3.1-70b", recompute="full")
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(full.total_bytes)
    assert metrics(at)["Fits?"] == "yes"


def test_memory_bad_parameter_count_names_the_field_and_keeps_the_page():
    at = open_page("page_memory.py")
    at.text_input(key="params").set_value("-7B").run()
    assert_clean(at)
    assert any("Parameters P" in _text(e.value) for e in at.error)
    assert at.radio(key="zero_stage").value == 0


def test_memory_page_one_rank_holds_no_buffers_and_says_so():
    # one rank under ddp is plain training: the lesson's 112 GB for a 7B model, no buckets
    from costmodel.units import format_bytes

    at = open_page("page_memory.py")  # a bare count: the model state alone by default
    at.number_input(key="dp_ranks").set_value(1).run()
    assert_clean(at)
    assert metrics(at)["Memory per GPU, ZeRO-0"] == format_bytes(112e9)
    assert any("bucket" in c.value for c in at.caption)


# --- Batch -----------------------------------------------------------------------------------
def test_batch_solves_the_unknown_and_scales_the_lr():
    at = open_page("page_batch.py")
    m = metrics(at)
    assert m["Accumulation steps A [-] = global / (local x N)"] == "32"  # 8192 / (4 x 64)
    at.number_input(key="batch_global_batch").set_value(16384).run()
    m2 = metrics(at)
    assert m2["Accumulation steps A [-] = global / (local x N)"] == "64"
    lr = [v for k, v in m2.items() if k.startswith("Learning rate")]
    assert lr == ["6.4"]  # Goyal et al.: 0.1 x 16384 / 256


def test_batch_that_does_not_divide_offers_the_nearest_valid():
    at = open_page("page_batch.py")
    at.number_input(key="batch_local_batch").set_value(3).run()
    assert_clean(at)
    assert any(
        "Accumulation steps A" in _text(e.value) and "nearest valid" in _text(e.value)
        for e in at.error
    )
    assert at.radio(key="solve").value == "accumulation"


def test_batch_zero_ranks_is_refused():
    at = open_page("page_batch.py")
    at.number_input(key="batch_ranks").set_value(0).run()
    assert_clean(at)
    assert any("ranks" in _text(e.value) for e in at.error)


# --- Cluster ---------------------------------------------------------------------------------
def test_cluster_metrics_are_the_topology_functions_on_the_preset():
    from costmodel import presets, topology
    from costmodel.units import format_duration

    at = open_page("page_cluster.py")
    assert_clean(at)
    c = presets.cluster("dgx-h100", nodes=4)
    # the page's hierarchical columns are the textbook model's, on the links'
    # effective figures (datasheet x measured efficiency), as cm.allreduce_time(M, cluster)
    expected = topology.hierarchical_allreduce_time(
        2**30,
        4,
        c.gpus_per_node,
        c.effective_intra_bandwidth_bytes_per_s,
        c.effective_inter_bandwidth_bytes_per_s,
        c.intra_latency_s,
        c.inter_latency_s,
    )
    assert metrics(at)["Hierarchical, serial"] == format_duration(expected)


def test_cluster_more_nodes_changes_the_inter_node_phase():
    at = open_page("page_cluster.py")
    before = metrics(at)
    at.number_input(key="cl_nodes").set_value(64).run()
    assert_clean(at)
    after = metrics(at)
    assert after["Inter-node all-reduce"] != before["Inter-node all-reduce"]
    # the intra-node phases do not depend on the node count
    assert after["Intra-node reduce-scatter"] == before["Intra-node reduce-scatter"]


def test_cluster_zero_nodes_names_the_field():
    at = open_page("page_cluster.py")
    at.number_input(key="cl_nodes").set_value(0).run()
    assert_clean(at)
    said = "Nodes: must be a whole number in 1..1,000,000, got 0"  # the box, the CLI's range
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="cl_cluster").value == "dgx-h100"


# --- DDP step --------------------------------------------------------------------------------
def test_ddp_step_is_the_scenario_result():
    from costmodel.scenario import Scenario
    from costmodel.units import format_duration

    at = open_page("page_ddp.py")
    assert_clean(at)
    r = Scenario(
        params=7e9,
        cluster="dgx-h100",
        nodes=4,
        local_batch=1,
        sequence_length=4096,
        bucket_cap_bytes=25 * 2**20,
        accumulation=1,
        no_sync=True,
        model="nccl",
        comm_contention=DEFAULT_COMM_CONTENTION,  # one default on every surface (was c = 1 here)
    ).evaluate()  # no MFU: the fitted efficiency is the default of the page and of Scenario
    m = metrics(at)
    assert m["Step time"] == format_duration(r.step_time_s)
    assert m["Verdict"] == f"{r.bound}-bound"
    # the page says where the compute came from, and a given MFU changes it
    assert any("fitted efficiency hopper/bf16" in c.value for c in at.caption)
    at.checkbox(key="ddp_own_mfu").check().run()
    assert_clean(at)
    assert any("given MFU 0.40" in c.value for c in at.caption)
    given = Scenario(params=7e9, cluster="dgx-h100", nodes=4, mfu=0.4).evaluate(
        scaling=False, flips=False
    )
    assert metrics(at)["Step time"] == format_duration(given.step_time_s)


def test_ddp_more_nodes_changes_step_and_shows_a_verdict_flip():
    at = open_page("page_ddp.py")
    before = metrics(at)
    at.number_input(key="ddp_nodes").set_value(128).run()
    assert_clean(at)
    after = metrics(at)
    assert after["Communication (sum)"] != before["Communication (sum)"]
    # the default (7B under DDP on 80 GB cards) does not fit: its flip is a warning saying so
    assert (
        any("Smallest change that flips" in s.value for s in [*at.success, *at.warning]) or at.info
    )


def test_step_page_bucket_is_the_strategys_default_unless_given():
    from costmodel.strategy import strategy_step
    from costmodel.units import format_duration

    q = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="zero2")
    at = open_page(
        "page_ddp.py", {"ddp_arch": "llama-3.1-8b", "ddp_strategy": "zero2", "ddp_nodes": "2"}
    )
    assert_clean(at)
    assert at.text_input(key="ddp_bucket").value == ""  # empty: zero2's own 5e8 elements
    default = strategy_step(**q, band=False)
    assert metrics(at)["Step time"] == format_duration(default.step_time_s)
    at.text_input(key="ddp_bucket").set_value("25MiB").run()
    assert_clean(at)
    given = strategy_step(**q, bucket_cap_bytes=25 * 2**20, band=False)
    assert format_duration(given.step_time_s) != format_duration(default.step_time_s)
    assert metrics(at)["Step time"] == format_duration(given.step_time_s)


@pytest.mark.parametrize(
    ("kind", "key", "value", "field"),
    [
        ("text_input", "ddp_params", "-7B", "Model parameters"),
        ("text_input", "ddp_bucket", "lots", "bucket_cap"),
        ("number_input", "ddp_accumulation", 0, "Accumulation steps"),
        ("text_input", "ddp_compute", "-1s", "Measured compute per micro-batch"),
    ],
)
def test_ddp_bad_input_names_the_field(kind, key, value, field):
    at = open_page("page_ddp.py")
    getattr(at, kind)(key=key).set_value(value).run()
    assert_clean(at)
    assert any(field in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="ddp_cluster").value == "dgx-h100"


# --- Validate --------------------------------------------------------------------------------
from costmodel.reference import reference_dir  # noqa: E402

REFERENCE_LOGS = reference_dir("nccl-tests")  # bundled in the package
REFERENCE = "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt"


def test_validate_uploaded_log_is_compared_with_a_calibrated_preset():
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at = open_page("page_validate.py")
    assert_clean(at)
    at.file_uploader(key="val_upload").set_value((REFERENCE, text, "text/plain")).run()
    assert_clean(at)
    m = metrics(at)
    assert m["Peak measured busbw"] == "366 GB/s"  # the log's 8 GiB out-of-place row: 366.37
    compared, total = (int(x) for x in m["Rows compared"].split(" of "))
    assert 0 < compared <= total
    labels = [b.label for b in at.get("download_button")]
    assert any("calibrated preset" in label for label in labels)
    assert not any("comparison.csv" in label for label in labels)  # waits in its expander
    labels = [b.label for b in open_tables(at).get("download_button")]
    assert any("comparison.csv" in label for label in labels)


def test_validate_reference_run_from_the_url():
    at = open_page(
        "page_validate.py", {"val_source": "A reference run", "val_reference": REFERENCE}
    )
    assert_clean(at)
    assert "Rows compared" in metrics(at)
    before = metrics(at)["Median |busbw error|"]
    at.radio(key="val_model").set_value("textbook").run()
    assert_clean(at)
    assert metrics(at)["Median |busbw error|"] != before


def test_validate_lists_the_bundled_runs_without_any_environment(monkeypatch):
    """A pip install or the image has no folder of logs: the bundled runs are the list."""
    monkeypatch.delenv("COSTMODEL_REFERENCE_LOGS", raising=False)
    at = open_page("page_validate.py", {"val_source": "A reference run"})
    assert_clean(at)
    options = at.selectbox(key="val_reference").options
    bundled = sorted(p.name for p in REFERENCE_LOGS.glob("*.txt"))
    busbw_only = [n for n in bundled if n.endswith("_busbw-only.txt")]  # no times to compare
    assert len(busbw_only) == 4
    not_logs = [n for n in bundled if n.startswith(("26_", "27_"))]  # no result rows at all
    assert sorted(options) == sorted(set(bundled) - set(busbw_only) - set(not_logs))
    assert REFERENCE in options


def test_validate_a_file_that_is_not_a_log_names_the_field():
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(
        ("notes.txt", b"hello\nthis is not nccl-tests output\n", "text/plain")
    ).run()
    assert_clean(at)
    assert any("Log file" in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="val_cluster").value == "dgx-h100"


def test_validate_an_oversized_upload_is_refused_with_the_limit():
    from costmodel.web.common import MAX_UPLOAD_BYTES

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(
        ("huge.txt", b"#" * (MAX_UPLOAD_BYTES + 1), "text/plain")
    ).run()
    assert_clean(at)
    assert any("Log file" in _text(e.value) and "limit" in _text(e.value) for e in at.error)


def test_collectives_nccl_view_is_predict_collective():
    from costmodel.predict import predict_collective
    from costmodel.units import format_duration

    at = open_page(
        "page_collectives.py", {"view": "A model on a cluster preset", "nccl_nodes": "8"}
    )
    assert_clean(at)
    p = predict_collective("all_reduce", 2**28, "dgx-h100", nodes=8)
    m = metrics(at)
    assert m["Time"] == format_duration(float(p.time_s))
    assert m["NCCL's choice"] == f"{p.algorithm} / {p.protocol}"
    at.number_input(key="nccl_nodes").set_value(0).run()
    assert_clean(at)
    said = "Nodes: must be a whole number in 1..1,000,000, got 0"  # the box, the CLI's range
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]


def test_collectives_old_view_url_still_opens_the_cluster_view():
    # the views were renamed; a link shared before keeps opening the view it showed
    at = open_page("page_collectives.py", {"view": "NCCL-faithful (a cluster preset)"})
    assert_clean(at)
    assert at.radio(key="view").value == "cluster"
    assert "NCCL's choice" in {m.label for m in at.metric}


# --- review: bad input that used to raise inside a page ---------------------------------------
@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("dp_ranks", 0, "Data-parallel ranks N [GPUs]: must be"),
        ("dp_ranks", -3, "Data-parallel ranks N [GPUs]: must be"),
        ("fragmentation", -1.0, "Fragmentation allowance [fraction of held memory]: must be"),
    ],
)
def test_memory_refused_number_shows_the_rule_not_a_traceback(key, value, field):
    # the part table below the chart used the chart's frame even when that section had failed;
    # the refusal names the box (its label), not the library's argument (dp_ranks)
    at = open_page("page_memory.py")
    at.number_input(key=key).set_value(value).run()
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(field in e for e in errors), errors
    assert not any(f"{key}:" in e for e in errors), errors
    assert at.radio(key="zero_stage").value == 0  # the inputs still render


@pytest.mark.parametrize("value", ["0", "1e30"])
def test_memory_parameter_count_out_of_range_names_the_field(value):
    at = open_page("page_memory.py")
    at.text_input(key="params").set_value(value).run()
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    rule = f"Parameters P: must be a parameter count in 1..1e15, e.g. 7B, got '{value}'"
    assert any(e.startswith(rule) for e in said), said


def test_memory_zero3_on_one_rank_works():
    from costmodel.strategy.memory import stage_memory
    from costmodel.units import format_bytes

    at = open_page("page_memory.py")
    at.number_input(key="dp_ranks").set_value(1)
    at.radio(key="zero_stage").set_value(3).run()
    assert_clean(at)
    assert not at.error
    # all shards, and FSDP2's copy of one unit at a time
    one = stage_memory(3, 1, 7e9)
    assert float(one.base.total_bytes) == 112e9
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(one.total_bytes)


@pytest.mark.parametrize("nodes", ["3", "1000000"])
def test_cluster_node_count_off_the_power_of_two_sweep(nodes):
    # the page looked its own point up in a sweep of 1, 2, 4, ... nodes only
    at = open_page("page_cluster.py", {"cl_nodes": nodes})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert f"({int(nodes):,} x 8)" in at.subheader[0].value  # separators, as the GPUs


def test_cluster_one_gpu_per_node_and_a_single_gpu():
    at = open_page("page_cluster.py", {"cl_gpus": "1"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]  # was: "time_s: must be > 0" (1 x 1 row)
    assert metrics(at)["Intra-node reduce-scatter"] == "0 s"
    at.number_input(key="cl_nodes").set_value(1).run()
    assert_clean(at)
    assert not at.error
    assert any("One GPU" in i.value for i in at.info)


@pytest.mark.parametrize(
    ("page_file", "query"),
    [
        ("page_collectives.py", {"ranks": "abc", "size": "garbage", "op": "nope"}),
        ("page_cluster.py", {"cl_nodes": "abc", "cl_cluster": "nope"}),
        ("page_memory.py", {"dp_ranks": "abc", "zero_stage": "9"}),
        ("page_batch.py", {"batch_ranks": "abc", "solve": "garbage"}),
        ("page_ddp.py", {"ddp_nodes": "abc", "ddp_mfu": "7"}),
        ("page_validate.py", {"val_source": "x", "val_reference": "no-such.txt"}),
    ],
)
def test_garbage_query_values_do_not_break_the_page(page_file, query):
    at = open_page(page_file, query)
    assert_clean(at)
    assert at.title[0].value


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("results.csv", b"size,time\n8,1.0\n16,2.0\n"),  # refused by extension: an exception
        ("page.html", b"<html><body><h1>404 Not Found</h1></body></html>"),
        ("core.bin", bytes(range(256)) * 8),
        ("empty.txt", b""),
    ],
)
def test_validate_upload_that_is_not_a_log_is_a_red_message(name, content):
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, content, "text/plain")).run()
    assert_clean(at)
    assert any("Log file" in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="val_cluster").value == "dgx-h100"


def test_validate_truncated_log_names_the_skipped_line():
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(
        (REFERENCE, text[: len(text) // 2], "text/plain")
    ).run()
    assert_clean(at)
    assert "Rows compared" in metrics(at)  # the whole rows before the cut are compared
    # shown as text: Markdown punctuation escaped, so compare the unescaped text; the reader's
    # one line, as `validate compare` prints it (tests/test_validate_logs.py), as a sentence
    assert any(
        re.match(r"Line \d+: the log ends in the middle of a result row", _text(w.value))
        for w in at.warning
    ), [w.value for w in at.warning]


# --- safe to share a link, honest Validate page ----------------------------------------
INJECTION = "![x](https://attacker.invalid/p.png) [click](https://attacker.invalid/)"


def _shown_markdown(at: AppTest) -> list[str]:
    return [
        e.value
        for kind in ("error", "warning", "info", "caption", "markdown")
        for e in at.get(kind)
    ]


def _assert_inert(bodies: list[str]) -> None:
    """No unescaped Markdown image or link in what the page renders as Markdown."""
    for body in bodies:
        assert "![" not in body and "](" not in body and "https://" not in body, body
        # a bare URL, escaped or not, must not run straight into its host (GFM would link it)
        assert not re.search(r"https\\?:\\?/\\?/\w", body), body


@pytest.mark.parametrize(
    ("page_file", "key"),
    [
        ("page_memory.py", "params"),
        ("page_collectives.py", "size"),
        ("page_ddp.py", "ddp_params"),
    ],
)
def test_url_values_are_shown_as_text_never_markdown(page_file, key):
    at = open_page(page_file)
    keys = {w.key for w in at.text_input}
    if key not in keys:  # the page names its inputs otherwise: use its first text input
        key = sorted(keys)[0]
    at = open_page(page_file, {key: INJECTION})
    assert_clean(at)
    assert at.error, f"{page_file}: {key}={INJECTION!r} was accepted"
    _assert_inert(_shown_markdown(at))
    assert any("attacker" in _text(e.value) for e in at.error)  # still shown, as text


def test_validate_upload_name_and_lines_are_text():
    log = (
        REFERENCE_LOGS / REFERENCE
    ).read_bytes() + b"\n  ![x](https://attacker.invalid/p.png) 1 2 3 4 5 6 7 8\n"
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((INJECTION + ".txt", log, "text/plain")).run()
    assert_clean(at)
    _assert_inert(_shown_markdown(at))


def test_validate_bom_and_utf16_logs_parse_and_other_encodings_get_a_clear_error():
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(
        (REFERENCE, b"\xef\xbb\xbf" + text, "text/plain")
    ).run()
    assert_clean(at)
    assert metrics(at)["Peak measured busbw"] == "366 GB/s"
    at.file_uploader(key="val_upload").set_value(
        (REFERENCE, text.decode().encode("utf-16"), "text/plain")  # with its BOM: decoded
    ).run()
    assert_clean(at)
    assert metrics(at)["Peak measured busbw"] == "366 GB/s"
    at.file_uploader(key="val_upload").set_value(
        (REFERENCE, text + b"caf\xe9\n", "text/plain")  # a Latin-1 byte after the rows: said
    ).run()
    assert_clean(at)
    assert metrics(at)["Peak measured busbw"] == "366 GB/s"
    assert any("not UTF-8" in _text(w.value) for w in at.warning), [w.value for w in at.warning]
    row = next(line for line in text.splitlines() if line.strip().startswith(b"1048576 "))
    at.file_uploader(key="val_upload").set_value(
        (REFERENCE, text.replace(row, row.replace(b"float", b"fl\xe9at", 1), 1), "text/plain")
    ).run()  # the byte inside a result row: refused
    assert_clean(at)
    assert any("Log file" in _text(e.value) and "UTF" in _text(e.value) for e in at.error), [
        e.value for e in at.error
    ]


def test_validate_one_megabyte_line_is_refused_not_hung():
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(("line.txt", b"a" * 2**20, "text/plain")).run()
    assert_clean(at)
    assert any("limit" in _text(e.value) for e in at.error), [e.value for e in at.error]


def test_validate_reference_run_defaults_to_its_own_preset():
    at = open_page(
        "page_validate.py",
        {
            "val_source": "A reference run",
            "val_reference": "02_coreweave-16x8xA100-IB_allreduce.txt",
        },
    )
    assert_clean(at)
    assert at.selectbox(key="val_cluster").value == "coreweave-hgx-a100"
    at.selectbox(key="val_cluster").set_value("dgx-h100").run()
    assert any("does not match" in _text(w.value) for w in at.warning), [
        w.value for w in at.warning
    ]


def test_server_upload_limit_matches_the_code():
    import tomllib

    from costmodel.web.common import MAX_UPLOAD_BYTES

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 10**6 == MAX_UPLOAD_BYTES


# --- named models, time and cost to train on the DDP step page -----------------------
def test_ddp_named_model_uses_its_tensors_and_shows_time_and_cost():
    from costmodel.scenario import Scenario

    at = open_page("page_ddp.py")
    at.selectbox(key="ddp_arch").set_value("llama-2-7b").run()
    assert_clean(at)
    r = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=4).evaluate(scaling=False)
    m = metrics(at)
    from costmodel.units import format_bytes, format_duration, format_elapsed, format_gpu_hours

    assert m["Step time"] == format_duration(r.step_time_s)
    assert m["Memory per GPU"] == format_bytes(r.memory_total_bytes)  # activations included
    c = r.training_cost(1e12, usd_per_gpu_hour=2.0)
    assert m["Wall clock"] == format_elapsed(c.wall_days * 86400.0)
    assert m["GPU-hours"] == format_gpu_hours(c.gpu_hours)
    assert m["Cost [USD]"] == f"{c.cost_usd:,.0f}"
    at.text_input(key="ddp_measured_step").set_value("2s").run()
    assert_clean(at)
    c = r.training_cost(1e12, usd_per_gpu_hour=2.0, measured_step_time_s=2.0)
    assert metrics(at)["MFU implied by the measured step"] == f"{100 * c.mfu:.1f} %"
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    assert any("2026-11-09" in _text(cap.value) for cap in at.caption)


def test_ddp_bad_tokens_or_step_time_names_the_field():
    at = open_page("page_ddp.py")
    at.text_input(key="ddp_tokens").set_value("lots").run()
    assert_clean(at)
    assert any("Tokens to train" in _text(e.value) for e in at.error)
    at.text_input(key="ddp_tokens").set_value("1T")
    at.text_input(key="ddp_measured_step").set_value("-3s").run()
    assert_clean(at)
    assert any("Measured step time" in _text(e.value) for e in at.error)
    assert any("Measured step time" in e.value for e in at.error)


# --- side by side, bucket_cap advisor, fitted contention ----------
def _table(at: AppTest, column: str):
    open_tables(at)
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_ddp_cluster_a_or_b_from_a_shared_link():
    """ "Cluster A or cluster B?" on one screen: the answer, B - A per figure, overlaid charts."""
    from costmodel.scenario import Scenario, compare_summary
    from costmodel.units import format_duration

    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_cluster": "dgx-a100"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.toggle(key="ddp_pin").value is True
    assert at.selectbox(key="ddp_b_cluster").value == "dgx-a100"
    kw = dict(params=7e9, nodes=4)  # the page's default contention is the one default
    a = Scenario(**kw).evaluate(scaling=False, flips=False)
    b = Scenario(**kw, cluster="dgx-a100").evaluate(scaling=False, flips=False)
    assert any(compare_summary(a, b) == s.value for s in at.success)
    rows = _table(at, "B - A").set_index("figure")
    assert rows.loc["step time", "A"] == format_duration(a.step_time_s)
    assert rows.loc["step time", "B"] == format_duration(b.step_time_s)
    assert rows.loc["step time", "B / A"] == f"{b.step_time_s / a.step_time_s:.3g}x"
    keys = {c.proto.id for c in at.get("plotly_chart")}
    assert any("chart_compare_step" in k for k in keys)
    assert any("chart_compare_scaling" in k for k in keys)


def test_ddp_pin_widgets_write_the_url_and_nodes_change_b():
    at = open_tables(open_page("page_ddp.py"))
    assert not any("B - A" in d.value.columns for d in at.dataframe)  # nothing pinned yet
    at.toggle(key="ddp_pin").set_value(True).run()
    assert_clean(at)
    assert any("same as A" in i.value for i in at.info)  # B equal to A is said, not drawn
    at.text_input(key="ddp_b_nodes").set_value("16").run()
    assert_clean(at)
    rows = _table(at, "B - A").set_index("figure")
    assert (rows.loc["GPUs", "A"], rows.loc["GPUs", "B"]) == ("32", "128")
    # the same view from the link (AppTest does not show bound widgets writing the URL; the
    # browser test checks that)
    linked = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_nodes": "16"})
    assert _table(linked, "B - A").equals(_table(at, "B - A"))
    at.text_input(key="ddp_b_nodes").set_value("many").run()
    assert_clean(at)
    assert any("Nodes (B)" in _text(e.value) for e in at.error)  # escaped: web.common.error
    assert "Step time" in metrics(at)  # A still shown


def test_ddp_bucket_advisor_is_the_api_argmin():
    from costmodel.scenario import Scenario

    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b"})
    assert_clean(at)
    adv = Scenario(arch="llama-2-7b", nodes=4).bucket_advice()  # the one default contention
    m = metrics(at)
    assert m["Best bucket_cap"] == f"{adv.best_cap_bytes / 2**20:g} MiB"
    assert adv.exposed_comm_s[adv.best_index] <= min(adv.exposed_comm_s) + adv.tie_s
    assert any("chart_bucket_advice" in c.proto.id for c in at.get("plotly_chart"))


def test_step_page_shows_the_one_default_contention_beside_its_numbers():
    # one default overlap contention on every surface (the page used c = 1, Scenario/CLI c = 0)
    from costmodel.scenario import Scenario

    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b"})
    assert at.number_input(key="ddp_contention").value == DEFAULT_COMM_CONTENTION
    assert Scenario.model_fields["comm_contention"].default == DEFAULT_COMM_CONTENTION
    kw = dict(arch="llama-2-7b", nodes=4)
    stalled = Scenario(**kw, comm_contention=1.0).evaluate(scaling=False, flips=False)
    ideal = Scenario(**kw).evaluate(scaling=False, flips=False)
    assert stalled.efficiency < ideal.efficiency
    assert metrics(at)["Scaling efficiency"] == f"{100 * ideal.efficiency:.1f} %"
    shown = next(c.value for c in at.caption if "efficiency at overlap contention" in c.value)
    assert f"c = {DEFAULT_COMM_CONTENTION:g}" in shown
    # at c = 0 the no-contention figure is the same number: said once, not twice
    assert ("With no contention" in shown) == (DEFAULT_COMM_CONTENTION > 0), shown
    # "perfect overlap" names the lesson's max(compute, comm) alone (Scenario's
    # perfect_overlap_efficiency, `step`'s "with perfect overlap"), not this timeline at c = 0
    assert "perfect overlap" not in shown
    at.number_input(key="ddp_contention").set_value(1.0).run()
    assert metrics(at)["Scaling efficiency"] == f"{100 * stalled.efficiency:.1f} %"
    shown = next(c.value for c in at.caption if "efficiency at overlap contention" in c.value)
    assert f"With no contention (c = 0), in the same order: {100 * ideal.efficiency:.1f} %" in shown
    assert "perfect overlap" not in shown
    assert metrics(at)["Verdict"] == "comms-bound"  # 1.0 exposes the all-reduces


def test_step_page_strategy_choice_shows_gathers_and_the_ranking():
    from costmodel.scenario import Scenario
    from costmodel.units import format_duration

    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_strategy": "fsdp"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    r = Scenario(arch="llama-2-7b", nodes=4, strategy="fsdp").evaluate(scaling=False)
    assert metrics(at)["Step time"] == format_duration(r.step_time_s)
    assert {"all_gather", "reduce_scatter"} <= {i["kind"] for i in r.timeline}
    fig = next(c for c in at.get("plotly_chart") if "chart_timeline" in c.proto.id)
    assert "all-gather" in fig.proto.spec and "reduce-scatter" in fig.proto.spec
    ranking = _table(at, "strategy")
    assert {"ddp", "zero1", "zero2", "fsdp", "hsdp g=8"} <= set(ranking["strategy"])
    # a setup that does not fit says so first, with the changes that make it fit
    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_strategy": "ddp"})
    assert any("Does not fit" in w.value for w in at.warning)
    assert any("Changes that make it fit" in md.value for md in at.markdown)


def test_memory_pinned_b_from_a_shared_link():
    from costmodel.strategy.memory import stage_memory
    from costmodel.units import format_bytes

    at = open_page(
        "page_memory.py",
        {
            "arch": "llama-3.1-70b",
            "dp_ranks": "64",
            "mem_pin": "true",
            "mem_b_zero": "3",
            "mem_b_gpu": "h200-sxm",
        },
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="mem_b_zero").value == 3
    rows = _table(at, "B - A").set_index("part")
    kw = dict(arch="llama-3.1-70b", sequence_length=4096, micro_batch=1)
    a = stage_memory(0, 64, **kw)  # the layouts the step prices: ddp and fsdp
    b = stage_memory(3, 64, **kw)
    assert rows.loc["total per GPU", "A"] == format_bytes(a.total_bytes)
    assert rows.loc["total per GPU", "B"] == format_bytes(b.total_bytes)
    assert rows.loc["GPU memory", "B"] != rows.loc["GPU memory", "A"]
    # A (70B under DDP) does not fit: the comparison's line is a warning, never green
    said = [w.value for w in at.warning if w.value.startswith("A needs")]
    assert len(said) == 1 and "(does NOT fit)" in said[0], said
    assert not any(s.value.startswith("A needs") for s in at.success)
    assert any("chart_memory_compare" in c.proto.id for c in at.get("plotly_chart"))


def test_memory_page_compare_is_green_only_when_both_fit():
    """Both sides fit (8B under ZeRO-3 on 64 GPUs, B on an H200): the line is a success; the
    same B against A under plain DDP (128 GB of states on an 80 GB card) is a warning."""
    both = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-8b", "dp_ranks": "64", "zero_stage": "3", "mem_pin": "true",
         "mem_b_gpu": "h200-sxm"},
    )  # fmt: skip
    assert_clean(both)
    ok = [s.value for s in both.success if s.value.startswith("A needs")]
    assert len(ok) == 1 and "does NOT fit" not in ok[0], ok
    assert not any(w.value.startswith("A needs") for w in both.warning)
    one = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-8b", "dp_ranks": "64", "zero_stage": "0", "mem_pin": "true",
         "mem_b_zero": "3", "mem_b_gpu": "h200-sxm"},
    )  # fmt: skip
    assert_clean(one)
    said = [w.value for w in one.warning if w.value.startswith("A needs")]
    assert len(said) == 1 and "(does NOT fit); B needs" in said[0], said


def test_memory_pin_bad_ranks_names_the_field():
    at = open_page("page_memory.py", {"mem_pin": "true", "mem_b_ranks": "0"})
    assert_clean(at)
    assert any("Data-parallel ranks (B) [GPUs]" in _text(e.value) for e in at.error)
    assert "Fits?" in metrics(at)


def test_accuracy_on_screen_cluster_and_collectives_and_validate():
    """The expected error of the regime next to the numbers, the note on what
    the model leaves out, the band shaded on the charts, the fidelity table on Validate."""
    from costmodel.predict import predict_collective

    at = open_page("page_cluster.py")
    assert_clean(at)
    band = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=4).error_band
    assert metrics(at)["Expected error"] == band.pct()
    captions = " ".join(c.value for c in at.caption)
    assert band.pct() in captions and "Leaves out" in captions
    at = open_page("page_collectives.py", {"view": "A model on a cluster preset"})
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "Expected error" in captions and "Leaves out" in captions
    at = open_page("page_validate.py")
    assert_clean(at)
    assert "| run |" not in " ".join(m.value for m in at.markdown)  # sent once opened
    at.session_state["fidelity_open"] = True  # the user opens the expander
    at.run()
    texts = " ".join(m.value for m in at.markdown)
    assert "grouped CV" in texts and "| run |" in texts


def test_memory_largest_model_never_reads_zero_params():
    # 70B's activations at 32k tokens fill an 80 GB card before any weight: say so, not "0 params"
    at = open_page("page_memory.py", {"arch": "llama-3.1-70b", "act_seq": "32768"})
    assert_clean(at)
    largest = next(v for k, v in metrics(at).items() if k.startswith("Largest model that fits"))
    assert largest == "none"
    assert any("Even one parameter does not fit" in w.value for w in at.warning)


def test_no_page_sleeps_before_its_first_chart():
    """The first chart is never held back by a pause in the request path (a sleep holds a
    server thread per new session and delays every first chart): no ``time.sleep`` and no
    ``FIRST_CHART_PAUSE_S`` in the app's code. Paint times are measured side by side with a
    bare page in benchmarks/bench_app.py, not here."""
    for path in sorted(WEB.glob("*.py")):  # the pages and their helpers
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "sleep":
                raise AssertionError(f"{path.name}:{node.lineno}: sleep in the request path")
            if isinstance(node, ast.Name) and node.id == "FIRST_CHART_PAUSE_S":
                raise AssertionError(f"{path.name}:{node.lineno}: FIRST_CHART_PAUSE_S")
