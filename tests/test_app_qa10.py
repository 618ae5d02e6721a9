"""Headless app tests from the tenth QA pass (streamlit.testing AppTest). Each one failed on the
defect it names before its fix."""

from __future__ import annotations

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page


# --- a fraction in a whole-number box of a shared link is named, not cut ---------------------
@pytest.mark.parametrize(
    ("page_file", "key", "value", "default"),
    [
        ("page_ddp.py", "ddp_nodes", "2.5", 4),
        ("page_memory.py", "dp_ranks", "7.9", 8),
        ("page_batch.py", "warmup", "0.5", 500),
    ],
)
def test_a_fraction_in_a_whole_number_box_of_a_url_is_named(page_file, key, value, default):
    """``/ddp?ddp_nodes=2.5`` ran on 2 nodes without a word: Streamlit cut the fraction, where
    an out-of-range or infinite URL number gets a red message. The box now keeps its default
    and the message names the parameter, the value and the rule."""
    at = open_page(page_file, {key: value})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(
        f"URL parameter {key}: {value} is not a whole number" in e and "default is used" in e
        for e in errors
    ), errors
    assert at.number_input(key=key).value == default


def test_a_whole_number_in_a_url_is_taken_as_before():
    at = open_page("page_ddp.py", {"ddp_nodes": "2"})
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    assert metrics(at)["GPUs"] == "16 (2 x 8)"


# --- the Memory page names a custom GPU by its memory, never "(GPU)" --------------------------
def test_the_memory_page_names_a_custom_gpu_by_what_was_typed():
    """With GPU = custom the metric read "GPU memory (GPU)" and the does-not-fit warning
    "> 8 GB (GPU)": the custom card is now named by the memory typed."""
    at = open_page("page_memory.py", {"gpu": "custom", "gpu_memory": "8GB"})
    assert_clean(at)
    shown = metrics(at)
    assert shown.get("GPU memory (custom 8 GB)") == "8 GB", shown
    texts = [*shown, *(_text(w.value) for w in at.warning), *(s.value for s in at.subheader)]
    assert not any("(GPU)" in t for t in texts), texts
    warning = next(_text(w.value) for w in at.warning if "Does not fit" in w.value)
    assert "per GPU > a card of 8 GB." in warning, warning


def test_the_memory_page_still_names_a_preset_gpu():
    at = open_page("page_memory.py", {"gpu": "h100-sxm"})
    assert_clean(at)
    assert "GPU memory (h100-sxm)" in metrics(at)


# --- the bucket chart has no one-entry legend -----------------------------------------------
def _figure(at, key: str) -> dict:
    """The plotly figure (JSON) the page sent for the chart ``key``."""
    import json

    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith(key) or key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart {key}")


def test_the_bucket_chart_of_one_configuration_has_no_lone_legend_entry():
    """The Training step page's bucket_cap advisor drew one curve with a legend of one entry,
    "A", naming nothing: one curve is not in the legend now (its best cap is, by its star:
    tests/test_app_qa28.py); A and B keep theirs."""
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp"})
    assert_clean(at)
    fig = _figure(at, "chart_bucket_advice")
    # the curves: not the current cap's legend entry (a line with no points)
    curves = [t for t in fig["data"] if t["mode"] == "lines" and t["x"] != [None]]
    assert [t["name"] for t in curves] == ["A"]
    assert [t.get("showlegend", True) for t in curves] == [False]
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp", "ddp_pin": "true", "ddp_b_nodes": "8"})
    assert_clean(at)
    fig = _figure(at, "chart_bucket_advice")
    assert fig["layout"]["showlegend"] is True
    curves = [
        t
        for t in fig["data"]
        if t["mode"] == "lines" and t.get("showlegend", True) and t["x"] != [None]
    ]
    assert [t["name"] for t in curves] == ["A", "B"]


# --- "Each change tried": relative_change is |value/current - 1| on every row ----------------
def _relative_changes_hold(flips) -> list:
    """The rows whose relative_change is not Flip's documented |value/current - 1|."""
    import math

    return [
        (f.parameter, f.value, f.current, f.relative_change)
        for f in flips
        if f.flips
        and not math.isclose(f.relative_change, abs(f.value / f.current - 1), rel_tol=1e-9)
    ]


def test_every_flip_s_relative_change_is_the_documented_formula():
    """A compute-bound step's comm_slowdown row read relative_change 0.717 for an all-reduce
    3.535x slower (value 3.535, current 1), where Flip's formula |value/current - 1| gives
    2.535: it was 1 - 1/k, the inverse change. Every row now follows the formula."""
    import costmodel as cm

    r = cm.Scenario(params="7B", cluster="dgx-h100", nodes=4).evaluate(scaling=False)
    assert r.bound == "compute"
    slower = next(f for f in r.flips if f.parameter == "comm_slowdown")
    assert slower.value > 1 and slower.relative_change == pytest.approx(slower.value - 1)
    assert _relative_changes_hold(r.flips) == []
    # 30 ms per micro-batch of 1B (83% of peak) under the lesson's flat ring: comms-bound
    comms = cm.Scenario(
        params="1B", cluster="dgx-h100", nodes=4, compute_time_s=0.03, model="lesson"
    )
    r = comms.evaluate(scaling=False)
    assert r.bound == "comms" and _relative_changes_hold(r.flips) == []
    assert r.flip.relative_change == min(f.relative_change for f in r.flips if f.flips)


def test_the_page_s_table_of_changes_shows_the_formula():
    from tests.test_app import open_tables

    at = open_tables(open_page("page_ddp.py", {"ddp_strategy": "ddp"}))
    assert_clean(at)
    frame = next(d.value for d in at.dataframe if "relative_change" in d.value.columns)
    row = frame.loc[frame["parameter"] == "comm_slowdown"].iloc[0]
    assert row["relative_change"] == pytest.approx(abs(row["value"] / row["current"] - 1))


# --- the Batch page: one header style, and what was solved for in words ---------------------
@pytest.mark.parametrize(
    ("solve", "header", "label"),
    [
        ("accumulation", "Solved for accumulation steps A: 32", "Accumulation steps A [-] = "),
        ("ranks", "Solved for data-parallel ranks N: 64 GPUs", "Data-parallel ranks N [GPUs] = "),
        ("global_batch", "Solved for global batch: 8,192 samples", "Global batch [samples] = "),
    ],
)
def test_the_batch_page_says_what_it_solved_for(solve, header, label):
    """The Batch page's answer was headed "Accumulation steps A [-] (solved): 32" (a box's
    label with its unit bracket, beside the sentence header "Learning-rate scaling") and its
    metrics carried a bare "(solved)": the header is now a sentence naming what was solved
    for, and the solved metric's label gives the equation it came from."""
    from costmodel.web.page_batch import FIELDS

    shown = {"accumulation": "Accumulation steps A", "ranks": "Data-parallel ranks N"}
    query = {"solve": shown.get(solve, "Global batch")}
    if solve != "accumulation":  # the three given: 4 x 64 x 32 = 8192
        query.update({"batch_accumulation": "32", "batch_ranks": "64", "batch_local_batch": "4"})
        query.update({"batch_global_batch": "8192"})
    at = open_page("page_batch.py", query)
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    headers = [s.value for s in at.subheader]
    assert headers[0] == header, headers
    assert not any("[" in h or "(solved)" in h for h in headers), headers
    m = metrics(at)
    assert not any("(solved)" in k for k in m), list(m)
    solved = [k for k in m if k.startswith(label)]
    assert len(solved) == 1, list(m)
    assert all(k.split(" = ")[0] in [f[0] for f in FIELDS.values()] for k in solved)


# --- a width the heads cannot share is refused everywhere ----------------------------------
def test_an_architecture_whose_heads_do_not_divide_its_hidden_size_is_refused():
    """Hidden size 3 with 32 heads was accepted (each head would get 3/32 of a dimension; the
    head dimension hidden // heads was 0): an Architecture (a preset, an uploaded config.json,
    ``--arch``) and the bare-shape activation formula now refuse it, naming the field and the
    rule. An explicit head_dim (Gemma's 256 at hidden 3072) keeps hidden free."""
    from costmodel import memory
    from costmodel.architecture import Architecture, load_arch

    base = load_arch("llama-2-7b").model_dump()
    with pytest.raises(ValueError, match=r"hidden: must be a multiple of the 32 `heads` .*got 3"):
        Architecture.model_validate({**base, "hidden": 3})
    with pytest.raises(ValueError, match=r"kv_heads: must divide the 32 `heads`, got 5"):
        Architecture.model_validate({**base, "kv_heads": 5})
    Architecture.model_validate({**base, "hidden": 3, "head_dim": 128})  # head_dim given
    with pytest.raises(ValueError, match=r"hidden: must be a multiple of the 32 `heads` .*got 3"):
        memory.activation_bytes(1, 3, 2048, 1, 32)
    with pytest.raises(ValueError, match=r"hidden: must be a multiple of the 32 `heads`"):
        memory.activation_bytes(1, [4096, 3], 2048, 1, 32)
    assert memory.activation_bytes(1, 4096, 2048, 1, 32) > 0


def test_the_memory_page_refuses_a_custom_shape_whose_heads_do_not_divide_it():
    at = open_page("page_memory.py", {"hidden": "3", "heads": "32", "shape_activations": "true"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    # the field said as the page's box (web.common.page_words)
    assert any("Hidden size: must be a multiple of the 32 Heads" in e for e in errors), errors


def test_an_uploaded_config_whose_heads_do_not_divide_its_hidden_size_is_refused(tmp_path):
    import json

    from tests._cli import run

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 3,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "num_hidden_layers": 2,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("memory", "--arch", str(path))
    assert result.exit_code == 2
    assert "hidden: must be a multiple of the 32 heads (each" in result.stderr, result.stderr


# --- a measured compute time and a measured step time: one rule ------------------------------
def test_a_measured_compute_or_step_faster_than_peak_is_refused_alike():
    """A measured compute time of 1 ms (7B, 4,096 tokens: 17,386% of an H100's peak) was
    priced with a grey caption while a measured step time of 1 ms got a red refusal. Both are
    now held to one rule (_checks.refuse_faster_than_peak): a measured time that implies an MFU
    over 1 is refused in red naming its box and the shortest possible time."""
    at = open_page("page_ddp.py", {"ddp_compute": "1ms"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(
        "Measured compute per micro-batch: a measured compute time of 0.001 s implies an MFU of"
        in e
        and "allowed: a compute time of at least 0.174 s per micro-batch" in e
        for e in errors
    ), errors
    assert "Compute" not in metrics(at)  # nothing is priced from it
    at = open_page("page_ddp.py", {"ddp_measured_step": "1ms"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(
        "Measured step time [s]: a measured step of 0.001 s implies an MFU of" in e
        and "allowed: a step of at least 0.203 s" in e
        for e in errors
    ), errors


def test_a_short_compute_within_the_peak_is_priced_and_makes_the_step_comms_bound():
    """What the model cannot refuse: 200 ms of compute for 7B (86% of the peak) under the
    lesson's flat ring is a legal measurement, and the step it prices is comms-bound."""
    at = open_page("page_ddp.py", {"ddp_compute": "200ms", "ddp_model": "lesson"})
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    m = metrics(at)
    assert m["Compute"] == "200 ms" and m["Verdict"] == "comms-bound", m
