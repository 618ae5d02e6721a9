"""Headless app tests from the thirteenth QA pass (a new user in chromium at 1440 and 390 px,
every page, numbers checked against ``python -m costmodel ... --json``). Each test failed on
the defect it names before its fix; tests/test_browser_qa12.py holds the one a browser shows."""

from __future__ import annotations

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page

#: A bundled run whose log states its rank count (128) but neither its nodes nor its GPUs per
#: node: the run's index fills both (16 x 8).
RUN_02 = "02_coreweave-16x8xA100-IB_allreduce.txt"


def _facts(at) -> str:
    return next(_text(c.value) for c in at.caption if c.value.startswith("From the log"))


# --- Validate: a shared link's op, nodes or GPUs per node survive its first load ---------------
@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("val_nodes", 32, "nodes = 32 (you set it)"),
        ("val_gpus_per_node", 4, "ranks / 4 GPUs per node (you set it)"),
    ],
)
def test_a_validate_link_without_a_cluster_keeps_its_nodes(key, value, said):
    """A link that set Nodes (or GPUs per node) on a reference run, the cluster left at its
    default (so not in the URL), opened with the box empty and the parameter dropped from the
    URL: the page reset the boxes a new log settles unless the link named a cluster."""
    at = open_page(
        "page_validate.py", {"val_source": "reference", "val_reference": RUN_02, key: str(value)}
    )
    assert_clean(at)
    assert at.number_input(key=key).value == value
    assert at.query_params[key] == str(value)
    assert said in _facts(at)


def test_a_validate_link_with_an_op_keeps_it():
    at = open_page(
        "page_validate.py",
        {"val_source": "reference", "val_reference": RUN_02, "val_op": "all_gather"},
    )
    assert_clean(at)
    assert at.selectbox(key="val_op").value == "all_gather"
    assert at.query_params["val_op"] == "all_gather"
    # the log names all-reduce: the link's op is used, and refused naming the Op box
    assert any("Op: all_gather contradicts the log" in _text(e.value) for e in at.error)


# --- Memory: the A and B chart's bar names on a phone ---------------------------------------
def test_memory_compare_chart_breaks_long_bar_names_onto_level_lines():
    """The chart's long bar names were tilted by plotly at 390 px and took most of its height
    (tests/test_browser_qa12.py measures it in chromium)."""
    import pandas as pd

    from costmodel import plots

    names = ("A: llama-3.1-8b, N = 8, ZeRO-0, h100-sxm", "B: llama-3.1-8b, N = 8, ZeRO-3 as fsdp")
    frame = pd.DataFrame(
        {"config": [names[0], names[0], names[1]], "part": ["weights", "gradients", "weights"]}
    ).assign(bytes=[16e9, 16e9, 2e9])
    fig = plots.memory_compare_figure(frame, capacities={n: 85.5e9 for n in names})
    axis = fig.layout.xaxis
    assert axis.tickangle == 0
    assert list(axis.tickvals) == list(names)  # the bars keep their full names (the hover's)
    for text, name in zip(axis.ticktext, names, strict=True):
        lines = text.split("<br>")
        assert len(lines) > 1 and all(len(x) <= plots.ROW_LABEL_CHARS for x in lines)
        assert " ".join(lines) == name
    # the stages' chart keeps its short names on one line
    stages = plots.memory_stack_figure(frame.assign(config="ZeRO-3"))
    assert list(stages.layout.xaxis.ticktext) == ["ZeRO-3"]


# --- Validate: nodes or GPUs per node set by the user replace the index's layout ----------------
def test_validate_nodes_set_say_the_gpus_per_node_the_prediction_uses():
    """Nodes 32 on run 02 (128 ranks; its index: 16 nodes x 8 GPUs) was predicted with 128 / 32
    = 4 GPUs per node (compare() takes ranks // nodes) while the page and `validate compare`
    said "GPUs per node = 8 (the bundled run 02's index)"; on run 20 (16 ranks; index 2 x 8) a
    GPUs per node of 4 changed nothing at all: the index's 2 nodes stayed, and 16 // 2 = 8 was
    predicted. The index's pair is one layout: a user value for either replaces both."""
    at = open_page(
        "page_validate.py", {"val_source": "reference", "val_reference": RUN_02, "val_nodes": "32"}
    )
    assert_clean(at)
    facts = _facts(at)
    assert "GPUs per node = 4 (ranks / nodes of each run)" in facts, facts
    assert "index" not in facts.split("nodes = 32")[1].split(";")[1], facts
    default = open_page(
        "page_validate.py",
        {
            "val_source": "reference",
            "val_reference": "20_gcp-a3high-2x8xH100-TCPX-4x200G_allreduce.txt",
        },
    )
    four = open_page(
        "page_validate.py",
        {
            "val_source": "reference",
            "val_reference": "20_gcp-a3high-2x8xH100-TCPX-4x200G_allreduce.txt",
            "val_gpus_per_node": "4",
        },
    )
    assert_clean(four)
    assert "nodes = 4 (ranks / 4 GPUs per node (you set it))" in _facts(four), _facts(four)
    assert metrics(four)["Median |busbw error|"] != metrics(default)["Median |busbw error|"]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        (  # 32 x 8 is now 4 of each node's 8 used (tests/test_app_qa14.py); 8 x 8 too few
            {"val_nodes": "8", "val_gpus_per_node": "8"},
            "Nodes: 8 x 8 GPUs per node hold 64 GPUs, fewer than the log's 128 ranks",
        ),
        ({"val_nodes": "300"}, "Nodes: 300 is more than the log's 128 ranks; allowed: 1..128"),
    ],
)
def test_validate_nodes_the_log_s_ranks_contradict_are_refused(query, said):
    """32 x 8 and 300 nodes were compared without a word, as 32 x 4 and 300 x 1 GPUs. 32 x 8
    is now 4 of each node's 8 used, and said (tests/test_app_qa14.py); nodes whose GPUs per node
    cannot hold the ranks (8 x 8 for 128) and more nodes than ranks are refused."""
    at = open_page(
        "page_validate.py", {"val_source": "reference", "val_reference": RUN_02, **query}
    )
    assert_clean(at)
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]
    # the box the user typed in, not the library's field name
    assert not any("nodes:" in _text(e.value) for e in at.error), [e.value for e in at.error]
    assert "Rows compared" not in metrics(at)


def test_validate_compare_cli_says_the_same_layout():
    from tests._cli import one_line_error, run

    r = run("validate", "compare", "--reference", "02", "--nodes", "32")
    assert "assumed: GPUs per node = 4 (ranks / nodes of each run)" in r.stderr, r.stderr
    one_line_error(
        run("validate", "compare", "--reference", "02", "--nodes", "8", "--gpus-per-node", "8"),
        "--nodes: 8 x 8 GPUs per node hold 64 GPUs, fewer than the log's 128 ranks",
    )


# --- Batch: a refusal names the box typed in ------------------------------------------------
@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"warmup": "-5"}, "Warmup steps [-]: must be a whole number in 0..1e12, got -5"),
        (
            {"batch_local_batch": "0"},
            "Local batch per GPU [samples]: must be a whole number in 1..1,000,000, got 0",
        ),
        (
            {"seq_len": "0"},
            "Sequence length [tokens per sample]: must be a whole number in 1..100,000,000 tokens, got 0",
        ),
        (  # the CLI's --base-batch range, whole
            {"base_batch": "0"},
            "Batch it was tuned at [samples]: must be a whole number in 1..1e12 samples, got 0",
        ),
        ({"critical_samples": "-5"}, "Critical batch size [samples] (0: none): must be"),
        ({"base_lr": "0"}, "Base learning rate [-]: must be a learning rate in (0, 100], got 0.0"),
    ],
)
def test_batch_refusals_name_the_box(query, said):
    """The Batch page's refusals named the library's arguments (``local_batch: ...``,
    ``critical_batch: ...``) under a heading that named the unknown solved for, and a negative
    warmup was refused as ``step: must be finite numbers >= 0, got [0, -2, -3, -5]``, a list
    of steps the page drew from it."""
    at = open_page("page_batch.py", query)
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(said in e for e in errors), errors
    assert not any("[0, -2" in e or "local_batch:" in e for e in errors), errors


# --- Memory: every recomputation mode of a named model, and refusals naming the box ----------
@pytest.mark.parametrize("mode", ["selective-op", "selective-layer"])
def test_memory_page_offers_every_recompute_mode_of_the_cli_for_a_named_model(mode):
    """The Memory page offered none, selective and full only, where `costmodel memory --arch
    --recompute` and the step page's Recompute also take torchtitan's selective-op and
    selective-layer: `memory --arch llama-3.1-70b --zero 3 --ranks 64 --recompute selective-op`
    (70 GB per GPU) had no page to show it."""
    import json

    from typer.testing import CliRunner

    from costmodel import cli
    from costmodel.units import format_bytes

    at = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-70b", "zero_stage": "3", "dp_ranks": "64", "recompute": mode},
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="recompute").value == mode
    r = CliRunner().invoke(
        cli.app,
        ["memory", "--arch", "llama-3.1-70b", "--zero", "3", "--ranks", "64"]
        + ["--recompute", mode, "--cluster", "dgx-h100", "--json"],
    )
    cli_bytes = json.loads(r.stdout)["memory_bytes"]
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(cli_bytes)
    # a typed shape keeps the three modes its formula sizes with FlashAttention
    shape = open_page("page_memory.py")
    assert shape.selectbox(key="recompute").options == ["none", "selective", "full"]


# --- Collectives: a link's ranks within the CLI's range ---------------------------------------
def test_collectives_link_ranks_beyond_the_cli_range_are_refused():
    """The one-link view priced 2,000,000,000 ranks ("over 2000000000 ranks: 1.5 ms"), where
    `costmodel collective --ranks` and the sweep's ranks axis refuse more than 1e9 (and the
    CLI's help said "2 or more" while it takes 1, answering 0 s, as the page does)."""
    from tests._cli import one_line_error, run

    at = open_page("page_collectives.py", {"view": "link", "ranks": "2000000000"})
    assert_clean(at)
    assert any(
        "Ranks N [GPUs]: must be a whole number in 1..1,000,000,000" in _text(e.value)
        for e in at.error
    ), [e.value for e in at.error]
    assert "Time" not in metrics(at)
    one_line_error(
        run(
            "collective",
            "all_reduce",
            "-s",
            "268MB",
            "--ranks",
            "2000000000",
            "--bandwidth",
            "450GB/s",
        ),
        "--ranks: must be a whole number in 1..1,000,000,000",
    )
    assert "1..1,000,000,000" in run("collective", "--help").stdout
    big = open_page("page_collectives.py", {"view": "link", "ranks": "1000000"})
    assert "over 1,000,000 ranks" in big.subheader[0].value, big.subheader[0].value


# --- Cluster: the pipelined estimate's help says the rule its number follows -------------------
def test_cluster_pipelined_help_says_the_rule_of_its_number():
    """With SHARP the three phases read 2.09, 2.1 and 2.09 ms and "Hierarchical, pipelined"
    4.18 ms, under a help that said "the slowest phase governs" (2.1 ms): the number is
    max(reduce-scatter + all-gather, inter-node all-reduce), as topology.py computes it."""
    from costmodel.units import parse_duration

    at = open_page("page_cluster.py", {"cl_sharp": "true"})
    assert_clean(at)
    m = metrics(at)
    rs, ar, ag = (
        parse_duration(m[k].replace(" ", ""))
        for k in ("Intra-node reduce-scatter", "Inter-node all-reduce", "Intra-node all-gather")
    )
    pipelined = parse_duration(m["Hierarchical, pipelined"].replace(" ", ""))
    assert pipelined > max(rs, ar, ag) * 1.4  # not the slowest phase (4.18 vs 2.8 ms)
    assert pipelined == pytest.approx(max(rs + ag, ar), rel=0.01)
    box = next(x for x in at.metric if x.label == "Hierarchical, pipelined")
    assert "slowest phase governs" not in box.help
    assert "max(intra-node reduce-scatter + all-gather, inter-node all-reduce)" in box.help


# --- Collectives: a buffer no GPU of the preset holds is said, as on the Cluster page ---------
def test_collectives_says_a_buffer_larger_than_the_gpu():
    """200 GB per rank on dgx-h100 (85.5 GB H100s) was priced at 715 ms with no word, where the
    Cluster page, `collective --cluster` and `predict` note that no GPU can hold it."""
    from costmodel.predict import buffer_memory_note

    note = buffer_memory_note(200e9, "dgx-h100")
    assert note
    at = open_page("page_collectives.py", {"size_text": "200GB"})
    assert_clean(at)
    assert any(note in w.value for w in at.warning), [w.value for w in at.warning]
    # B on a GPU that holds it says nothing; on one that does not, B's note is there
    at = open_page(
        "page_collectives.py",
        {"size_text": "50GB", "coll_compare": "true", "pin_cluster": "dgx1-v100"},
    )
    assert_clean(at)
    warnings = [w.value for w in at.warning]
    assert not any(w.startswith("Note: size") for w in warnings), warnings
    assert any(w.startswith("Note (B): size 50 GB per rank") for w in warnings), warnings
    assert not open_page("page_collectives.py").warning  # the first view: no note


# --- Step page: the bucket_cap advisor beside a B on another strategy ------------------------
def test_bucket_advisor_with_b_on_another_strategy_is_not_an_error():
    """A on ddp, B on fsdp: the advisor asked for B's curve too and showed a red
    "bucket_advice: ... fsdp gathers and reduces per wrapped unit ...; allowed: strategy ddp",
    an error for a comparison set up rightly. B's strategy has no buckets: said in a line, A's
    advice kept; a B on ddp still gets its curve."""
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_strategy": "fsdp"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert "Best bucket_cap" in metrics(at)
    assert any(c.value.startswith("B (fsdp) has no bucket_cap to advise") for c in at.caption)
    both = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_nodes": "8"})
    assert_clean(both)
    assert not both.error, [e.value for e in both.error]
    assert any(c.value.startswith("B: best bucket_cap") for c in both.caption)


# --- Step page: the bucket_cap advisor's labels stay inside its plot ----------------------------
def test_bucket_advice_labels_near_the_right_end_go_to_the_left():
    """With B on alps-gh200 the advisor's best cap for B is 193 MiB, near the axis's 200 MiB end:
    its label "best 193 MiB", centred on the star, ran past a 390 px phone's plot area and was
    cut (chromium). The best caps are named in the legend now (tests/test_app_qa28.py), and so
    is the line at the current cap (tests/test_app_qa29.py)."""
    from costmodel import plots
    from costmodel.ddp import ADVICE_CAPS_BYTES

    class Sweep:
        caps_bytes = ADVICE_CAPS_BYTES
        exposed_comm_s = [1e-3] * len(ADVICE_CAPS_BYTES)
        buckets = [1] * len(ADVICE_CAPS_BYTES)

        def __init__(self, best_mib):
            self.best_index = [round(c / 2**20) for c in ADVICE_CAPS_BYTES].index(best_mib)

    fig = plots.bucket_advice_figure(
        {"A": Sweep(25), "B": Sweep(193)}, current_cap_bytes=190 * 2**20
    )
    stars = [t.name for t in fig.data if t.marker.symbol == "star"]
    assert stars == ["A: best 25 MiB", "B: best 193 MiB"]  # in the legend, not on the plot
    assert not [t for t in fig.data if "text" in t.mode]
    assert not fig.layout.annotations  # "current 190 MiB" is in the legend too
    assert "current 190 MiB" in [t.name for t in fig.data]


# --- Memory: the captions say what the number is made of ----------------------------------------
def test_memory_captions_say_what_the_total_holds():
    """With activations left out, the page said "the lesson's state + activations, 112 GB" (the
    state alone); for a named model its activation caption gave the GPT layer's formula,
    "s b h (34 + 5 a s / h)", which is not how a gated, GQA model with its logits is sized
    (llama-3.1-8b: 28.4 GB, the formula's layers 18.3 GB)."""
    bare = open_page("page_memory.py")  # a bare count: the model state alone by default
    assert_clean(bare)
    sized = next(c.value for c in bare.caption if c.value.startswith("Sized as the step"))
    assert "per parameter before sharding), 112 GB" in sized, sized  # no activations
    named = open_page("page_memory.py", {"arch": "llama-3.1-8b"})
    assert_clean(named)
    recipe = next(c.value for c in named.caption if c.value.startswith("Activation recipe"))
    assert "34 + 5 a s / h" not in recipe and "model's own widths" in recipe, recipe
    sized = next(c.value for c in named.caption if c.value.startswith("Sized as the step"))
    assert "before sharding) + activations" in sized, sized
    shape = open_page(
        "page_memory.py", {"shape_activations": "true"}
    )  # a shape: sized by that very formula
    recipe = next(c.value for c in shape.caption if c.value.startswith("Activation recipe"))
    assert "s b h (34 + 5 a s / h)" in recipe, recipe
