"""Headless app tests from the fourteenth QA pass: the step page's GPUs per node (a node slice
and its whole-node billing, the CLI's --gpus-per-node), the Validate page's layout from nodes
and GPUs per node against `validate compare`, chart titles that use the width they have, and
what a new user met on the Memory and step pages (numbers checked against the CLI's --json).
Each test failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, metrics, open_page

# --- Step page: GPUs per node, a slice of the node billed whole -------------------------------
#: Llama-3.1-8B under FSDP on 2 DGX H100 nodes, 4 of each node's 8 GPUs, at a published price.
SLICE = {
    "ddp_arch": "llama-3.1-8b",
    "ddp_nodes": "2",
    "ddp_gpus_per_node": "4",
    "ddp_strategy": "fsdp",
    "ddp_price": "aws-p5-on-demand",
}
SLICE_CLI = (
    "--arch", "llama-3.1-8b", "--nodes", "2", "--gpus-per-node", "4", "--strategy", "fsdp",
)  # fmt: skip


def _cli_json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def test_step_page_gpus_per_node_is_the_cli_s_slice_billed_whole():
    """The page had no GPUs-per-node box: a slice's step and its whole-node billing were
    reachable from the CLI, the API and the sweep only."""
    from costmodel.units import format_duration, format_gpu_hours, format_usd

    at = open_page("page_ddp.py", SLICE)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    m = metrics(at)
    assert m["GPUs"] == "8 (2 x 4)"
    step = _cli_json("step", *SLICE_CLI)
    assert step["gpus_per_node"] == 4
    assert m["Step time"] == format_duration(step["step_time_s"])
    cost = _cli_json("train", *SLICE_CLI, "--tokens", "1T", "--price", "aws-p5-on-demand")
    scen = _cli_json("scenario", *SLICE_CLI)
    assert scen["step_time_s"] == pytest.approx(step["step_time_s"], rel=1e-12)
    assert m["Step time"] == format_duration(cost["step_time_s"])
    assert m["GPU-hours"] == format_gpu_hours(cost["gpu_hours"])
    assert m["Cost [USD]"] == format_usd(cost["cost_usd"])
    # the dollars are of the whole nodes: twice the GPU-hours used at the preset's rate
    assert cost["billing_note"] == "billed for 8 GPUs per node (the whole instance), 4 used"
    assert cost["billed_gpu_hours"] == pytest.approx(2 * cost["gpu_hours"])
    assert _usd(m["Cost [USD]"]) == pytest.approx(
        cost["billed_gpu_hours"] * cost["usd_per_gpu_hour"], rel=1e-3
    )
    said = " ".join(_text(c.value) for c in at.caption)
    assert "billed for 8 GPUs per node (the whole instance), 4 used" in said
    assert f"{format_gpu_hours(cost['billed_gpu_hours'])} GPU-hours billed" in said
    gph = next(x for x in at.metric if x.label == "GPU-hours")
    assert f"paid for: {format_gpu_hours(cost['billed_gpu_hours'])}" in (gph.help or "")
    # the strategy advisor ranks the same slice: hsdp's default group is one (4-GPU) node
    ranked = next(_text(x.value) for x in at.markdown if "| rank | strategy |" in x.value)
    assert "| hsdp g=4 |" in ranked and "g=8" not in ranked, ranked


def test_step_page_gpus_per_node_defaults_to_the_preset_s_node_and_syncs_to_the_url():
    at = open_page("page_ddp.py", {"ddp_cluster": "alps-gh200", "ddp_nodes": "2"})
    assert_clean(at)
    box = at.number_input(key="ddp_gpus_per_node")
    assert box.value is None and box.placeholder.startswith("4 ")  # alps-gh200: 4 per node
    assert metrics(at)["GPUs"] == "8 (2 x 4)"
    assert "ddp_gpus_per_node" not in at.query_params
    at = box.set_value(2).run()
    assert_clean(at)
    assert metrics(at)["GPUs"] == "4 (2 x 2)"
    # a link restores it (Streamlit's binding writes the URL in a browser, not under AppTest)
    linked = open_page("page_ddp.py", {"ddp_cluster": "alps-gh200", "ddp_gpus_per_node": "2"})
    assert linked.number_input(key="ddp_gpus_per_node").value == 2
    assert metrics(linked)["GPUs"] == "8 (4 x 2)"  # the default 4 nodes
    # the whole node, given: the same step as the empty box, no billing note
    whole = open_page("page_ddp.py", {"ddp_gpus_per_node": "8"})
    empty = open_page("page_ddp.py")
    assert metrics(whole) == metrics(empty)
    assert not any("billed for" in c.value for c in whole.caption)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("16", "GPUs per node: dgx-h100 has 8 GPUs per node, got 16; allowed: 1..8"),
        ("0", "URL parameter ddp_gpus_per_node: 0 is outside the range of GPUs per node"),
        ("2.5", "URL parameter ddp_gpus_per_node: 2.5 is not a whole number"),
        # past the CLI's limit: its range, not Scenario's internal bound ("<= 4096")
        ("5000", "URL parameter ddp_gpus_per_node: 5000 is outside the range of GPUs per node"),
    ],
)
def test_step_page_gpus_per_node_out_of_range_is_named(value, said):
    """The CLI's range: 1..the preset's node (--gpus-per-node 16 on dgx-h100 exits 2)."""
    at = open_page("page_ddp.py", {"ddp_gpus_per_node": value})
    assert_clean(at)
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]
    cli = {
        "16": "--gpus-per-node: dgx-h100 has 8 GPUs per node, got 16; allowed: 1..8",
        "5000": "--gpus-per-node: must be a whole number in 1..1,024, got 5000",
    }
    if value in cli:
        one_line_error(
            run("train", "--gpus-per-node", value, "--tokens", "1T", "--params", "7B"), cli[value]
        )
    if value == "5000":
        assert any("a whole number in 1..1,024" in _text(e.value) for e in at.error)


def test_step_page_b_on_another_cluster_runs_on_its_whole_nodes():
    """A's slice is of A's node: B on a cluster with 4-GPU nodes is not refused for A's 8."""
    at = open_page(
        "page_ddp.py",
        {"ddp_gpus_per_node": "8", "ddp_pin": "true", "ddp_b_cluster": "alps-gh200"},
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert "A or B?" in [h.value for h in at.subheader]


# --- Validate: nodes and GPUs per node, the page and `validate compare` on one rule ------------
RUN_02 = "02_coreweave-16x8xA100-IB_allreduce.txt"  # 128 ranks; its index: 16 nodes x 8
RUN_13E = "13e_waynehacking8_1x2-4-6xH100_GPUcount-scaling_allreduce.txt"  # 2, 4, 6 ranks


def _validate_page(reference: str, nodes: int | None, gpn: int | None):
    query = {"val_source": "reference", "val_reference": reference}
    if nodes is not None:
        query["val_nodes"] = str(nodes)
    if gpn is not None:
        query["val_gpus_per_node"] = str(gpn)
    at = open_page("page_validate.py", query)
    assert_clean(at)
    return at


def _validate_cli(short: str, nodes: int | None, gpn: int | None):
    args = ["validate", "compare", "--reference", short, "--json"]
    if nodes is not None:
        args += ["--nodes", str(nodes)]
    if gpn is not None:
        args += ["--gpus-per-node", str(gpn)]
    return run(*args)


@pytest.mark.parametrize(
    ("reference", "short", "nodes", "gpn"),
    [
        (RUN_02, "02", 16, 8),  # the run's own layout
        (RUN_02, "02", 32, 8),  # 4 of each node's 8 GPUs used: was refused (the ceil rule)
        (RUN_02, "02", None, 4),  # the nodes filled from the GPUs per node
        (RUN_13E, "13e", 1, 8),  # one 8-GPU node, 2, 4 and 6 of its GPUs used
    ],
)
def test_validate_layout_is_the_cli_s(reference, short, nodes, gpn):
    """The page and `validate compare` read a log through one function (logread.read_log):
    the same median error and the same assumed facts for the same nodes and GPUs per node."""
    at = _validate_page(reference, nodes, gpn)
    r = _validate_cli(short, nodes, gpn)
    assert r.exit_code in (0, 1), r.stderr
    cli = json.loads(r.stdout)
    assert not at.error, [e.value for e in at.error]
    assert metrics(at)["Median |busbw error|"] == f"{100 * cli['median_abs_rel_error']:.1f} %"
    facts = next(_text(c.value) for c in at.caption if c.value.startswith("From the log"))
    for line in cli["assumed"]:
        assert line in facts, (line, facts)


def test_validate_gpus_per_node_set_is_the_node_s_and_the_gpus_used_are_said():
    """Nodes 32 and GPUs per node 8 on run 02's 128 ranks: refused ("contradicts the log's
    128 ranks") by the rule that filled the nodes from the GPUs per node, a given GPUs per node
    taken as GPUs used. It is the node's: 4 of its 8 are used, predicted as compare() predicts
    (128 // 32 per node) and said on both surfaces."""
    at = _validate_page(RUN_02, 32, 8)
    facts = next(_text(c.value) for c in at.caption if c.value.startswith("From the log"))
    said = "GPUs used per node = 4 (ranks / nodes of each run, of the 8 per node you set)"
    assert said in facts, facts
    r = _validate_cli("02", 32, 8)
    assert f"assumed: {said}" in r.stderr
    # the whole node's 8 used: nothing more to say
    whole = _validate_page(RUN_02, 16, 8)
    assert "GPUs used per node" not in " ".join(c.value for c in whole.caption)


@pytest.mark.parametrize(
    ("nodes", "gpn", "said", "flag"),
    [
        (  # 22 nodes: compare() predicted 128 // 22 = 5 per node, 110 GPUs, without a word
            22,
            6,
            "nodes: the log's 128 ranks do not split evenly over 22 nodes",
            "--nodes",
        ),
        (3, None, "nodes: the log's 128 ranks do not split evenly over 3 nodes", "--nodes"),
        (
            None,
            6,
            "gpus_per_node: at 6 per node the log's 128 ranks fill 22 nodes unevenly",
            "--gpus-per-node",
        ),
        (
            8,
            8,
            "nodes: 8 x 8 GPUs per node hold 64 GPUs, fewer than the log's 128 ranks",
            "--nodes",
        ),
    ],
)
def test_validate_layouts_the_ranks_contradict_are_refused_alike(nodes, gpn, said, flag):
    at = _validate_page(RUN_02, nodes, gpn)
    # the page names its box (Nodes, GPUs per node), the CLI its option, the library its field
    field, rest = said.split(":", 1)
    box = {"nodes": "Nodes", "gpus_per_node": "GPUs per node"}[field]
    shown = [_text(e.value) for e in at.error]
    assert any(f"{box}:{rest}" in e for e in shown), shown
    assert not any(f"{field}:" in e for e in shown), shown
    assert "Rows compared" not in metrics(at)
    one_line_error(_validate_cli("02", nodes, gpn), flag + ":" + said.split(":", 1)[1][:40])


def test_a_row_whose_ranks_its_nodes_do_not_split_is_not_predicted_on_fewer_gpus():
    """The nodes a run's ranks fill on the preset (9 ranks on 8-GPU nodes: 2) were predicted
    with ranks // nodes GPUs each, 8 GPUs for a 9-rank run, without a word; the row is now left
    unpredicted with the reason, as a row the model cannot price."""
    import pandas as pd

    from costmodel.validation.compare import cluster_predictor, compare

    rows = pd.DataFrame(
        {
            "op": ["all_reduce"] * 2,
            "size_bytes": [1e6, 1e6],
            "ranks": [9, 8],
            "time_s": [1e-4, 1e-4],
            "nodes": [None, None],
        }
    )
    out = compare(rows, cluster_predictor("dgx-h100"))
    assert out["predicted_time_s"].isna().tolist() == [True, False]
    assert out["note"][0].startswith("nodes: 9 ranks do not split evenly over 2 nodes")


# --- Chart titles: the width they have ---------------------------------------------------------
def test_a_title_that_fits_a_desktop_chart_is_one_line_and_a_longer_one_even_lines():
    """Titles were broken at 40 characters at every width: "Exposed communication vs
    bucket_cap (1-200 MiB)" (47) on two lines of a 980 px chart, the Collectives page's 99
    characters on three."""
    import plotly.graph_objects as go

    from costmodel import plots

    short = "Exposed communication vs bucket_cap (1-200 MiB)"
    fig = plots.clear_of_toolbar(go.Figure(layout={"title": {"text": short}}))
    assert fig.layout.title.text == short
    long = (
        "all-reduce time, every algorithm on dgx-h100, N = 8, M = 268 MB dotted "
        "(o: the model's choice, x: crossovers)"
    )
    lines = plots.title_lines(long)
    assert len(lines) == 2 and " ".join(lines) == long
    assert all(len(x) <= plots.TITLE_CHARS for x in lines)
    assert abs(len(lines[0]) - len(lines[1])) < 10  # even, not 56 + a dangling 43


def test_the_title_css_holds_a_line_of_the_plots_width():
    """The app's CSS sets a narrow chart's title at the size where its own longest line fits
    (tests/test_app_qa16.py: a title that fits keeps its font); its numbers are plots' (a line
    longer than the CSS allows would be cut on a phone): the widest title, a line of
    TITLE_CHARS, is TITLE_FIT_EM wide, whole at 16 px from TITLE_FIT_MIN_CHART_PX."""
    import plotly.graph_objects as go

    from costmodel import plots
    from costmodel.web import common

    assert common.TITLE_FIT_EM == plots.TITLE_CHARS * plots.TITLE_CHAR_EM
    assert common.TITLE_FIT_MIN_CHART_PX == common.TITLE_FIT_EM * 16 + 8  # 16 px: the title font
    assert f"/ var({common.TITLE_EM_VAR}))" in common.READABLE_CSS
    assert f"(max-width: {common.TITLE_FIT_MIN_CHART_PX}px)" in common.READABLE_CSS
    fig = go.Figure(layout={"title": {"text": "x" * plots.TITLE_CHARS}})
    common._fit_title(fig)
    assert f"{common.TITLE_EM_VAR}:{common.TITLE_FIT_EM:g}" in fig.layout.title.text


def test_a_chart_s_png_is_drawn_at_a_width_its_title_fits():
    """plotly draws a PNG download with the figure's own 16 px title, not the page's CSS: on a
    phone the 358 px download cut a 56-character title line ("all-reduce time, every algorithm
    on dgx-h100, N" and no more, chromium 2026-12-03). Every chart's download is as wide as a
    desktop chart now, whatever the screen."""
    from costmodel.web import common

    at = open_page("page_cluster.py")
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert configs
    for config in configs:
        width = config["toImageButtonOptions"]["width"]
        assert width == common.DOWNLOAD_WIDTH_PX >= common.TITLE_FIT_MIN_CHART_PX


# Each chart's title: its lines, its box and the chart's, and the plot area's top [px].
_TITLES_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
  const t = p.querySelector('.gtitle'), c = p.getBoundingClientRect();
  const r = t.getBoundingClientRect(), plot = p.querySelector('.nsewdrag').getBoundingClientRect();
  return {text: t.textContent, lines: t.querySelectorAll('tspan.line').length || 1,
          left: r.left - c.left, right: r.right - c.left, width: c.width,
          bottom: r.bottom, plotTop: plot.top};
})
"""


@pytest.mark.browser
@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_chart_titles_use_the_width_they_have_and_are_never_cut(
    chromium_browser, app_url, width, height
):
    """At 1440 px a 47-character title was two lines of a 980 px chart, a 99-character one
    three; at 390 px every title must still sit whole inside its chart, above its plot.
    (The module's chromium, tests/conftest.py: each case launched its own before.)"""
    import playwright.sync_api as playwright_api

    from tests._browser import wait_for_plots

    expect = playwright_api.expect
    context = chromium_browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        seen = {}
        for path, wait in (("ddp", "Exposed communication vs"), ("collectives", "all-reduce")):
            page.goto(f"{app_url}/{path}")
            expect(page.locator(".js-plotly-plot .gtitle", has_text=wait).first).to_be_attached(
                timeout=90_000
            )
            wait_for_plots(page)  # plotly's second layout pass (automargin) settles
            for chart in page.evaluate(_TITLES_JS):
                seen[chart["text"]] = chart
                assert chart["left"] >= 0 and chart["right"] <= chart["width"] + 0.5, chart
                assert chart["bottom"] <= chart["plotTop"] + 0.5, chart
        bucket = next(c for t, c in seen.items() if t.startswith("Exposed communication vs"))
        allreduce = next(c for t, c in seen.items() if t.startswith("all-reduce time"))
        assert bucket["lines"] == 1, bucket  # 47 characters: one line at both widths
        assert allreduce["lines"] == 2, allreduce
        if width == 1440:  # the title spends more of the chart's width than a phone's 40 did
            assert allreduce["right"] - allreduce["left"] > 360, allreduce
    finally:
        context.close()


# --- Memory page: what a new user met, against `costmodel memory` ------------------------------
FP8_ON_A100 = "fp8-mixed trains with fp8 weights and gradients, which need fp8 tensor cores; "


@pytest.mark.parametrize(
    ("query", "box"),
    [
        ({"gpu": "a100-sxm-80gb", "recipe": "fp8-mixed"}, "GPU"),
        ({"recipe": "fp8-mixed", "mem_pin": "true", "mem_b_gpu": "a100-sxm-80gb"}, "GPU (B)"),
    ],
)
def test_memory_page_refuses_an_fp8_recipe_on_a_gpu_without_fp8(query, box):
    """The fp8-mixed recipe on an A100 was sized (105 GB per GPU, "fits"/"does not fit") where
    `costmodel memory --cluster dgx-a100 --recipe fp8-mixed` and the memory sweep refuse it:
    the A100 has no fp8 tensor cores to train in fp8."""
    at = open_page("page_memory.py", query)
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    named = "Precision recipe (B)" if box == "GPU (B)" else "Precision recipe"  # B's own box
    assert any(f"**{box}**: {named}: {FP8_ON_A100}a100-sxm-80gb has none" in s for s in said), said
    if box == "GPU":
        assert not at.metric  # no memory for a recipe that cannot train there
    else:
        assert "A or B?" not in [h.value for h in at.subheader]
    one_line_error(
        run("memory", "--params", "7B", "--recipe", "fp8-mixed", "--cluster", "dgx-a100"),
        f"--recipe: {FP8_ON_A100}a100-sxm-80gb has none",
    )
    # an H100 has fp8 tensor cores, and a typed memory names no GPU (as --gpu-memory)
    for ok in ({"recipe": "fp8-mixed"}, {"recipe": "fp8-mixed", "gpu": "custom"}):
        page = open_page("page_memory.py", ok)
        assert_clean(page)
        assert not page.error, [e.value for e in page.error]


# --- A number typed without its unit: the CLI's warning under the box ---------------------------
@pytest.mark.parametrize(
    ("page", "query", "said", "cli"),
    [
        (
            "page_ddp.py",
            {"ddp_bucket": "25"},
            "bucket_cap 25 is 25 bytes (a number without a unit is bytes); for 25 MiB write 25MiB",
            ("step", "--params", "7B", "--cluster", "dgx-h100", "--bucket", "25"),
        ),
        (
            "page_ddp.py",
            {"ddp_compute": "400"},
            "Measured compute per micro-batch 400 is 400 s (a number without a unit is seconds)",
            ("step", "--params", "7B", "--cluster", "dgx-h100", "--compute-time", "400"),
        ),
        (
            "page_ddp.py",
            {"ddp_measured_step": "1200"},
            "Measured step time 1200 is 1200 s (a number without a unit is seconds)",
            ("train", "--params", "7B", "--tokens", "1T", "--step-time", "1200"),
        ),
        (
            "page_memory.py",
            {"gpu": "custom", "gpu_memory": "80"},
            "GPU memory 80 is 80 bytes (a number without a unit is bytes); for 80 GB write 80GB",
            ("memory", "--params", "7B", "--gpu-memory", "80"),
        ),
    ],
)
def test_a_bare_number_is_answered_with_the_cli_s_warning(page, query, said, cli):
    """`--bucket 25` warns that it is 25 bytes (every tensor its own bucket), `--compute-time
    400` that it is 400 s, `--gpu-memory 80` that it is an 80-byte card; the same number typed
    into the page's box was used without a word."""
    at = open_page(page, query)
    assert_clean(at)
    assert any(said in _text(w.value) for w in at.warning), [w.value for w in at.warning]
    r = run(*cli)
    assert r.exit_code == 0, r.stderr
    assert said.split(" is ", 1)[1] in r.stderr, r.stderr
    # with its unit: no warning
    unit = {"ddp_bucket": "MiB", "ddp_compute": "ms", "ddp_measured_step": "ms", "gpu_memory": "GB"}
    fixed = {k: v + unit.get(k, "") for k, v in query.items()}
    assert not any("without a unit" in w.value for w in open_page(page, fixed).warning)
