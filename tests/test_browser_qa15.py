"""The sixteenth browser QA pass: a new user in chromium at 1440 and 390 px on the Collectives,
Cluster, Batch and Memory pages (the 14 GB all-reduce on 64 H100s, typed sizes, 4M tokens at
sequence length 4096 on 512 GPUs with AdamW, Llama-3.1-70B under ZeRO-1/3 and FSDP, an uploaded
config.json, and bad input in every box). Each test failed on the defect it names before its
fix; the browser tests are marked ``browser``, the rest run headless (AppTest)."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails
import pytest

from tests._browser import wait_for_plots
from tests.test_app import _text, assert_clean, metrics, open_page

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

browser = pytest.mark.browser


# The boxes of the chart whose title starts with `title`: its title, its plot area, each of
# its annotations and each of its legend's entries [px].
_CHART_BOXES_JS = """
title => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const p = [...document.querySelectorAll('.js-plotly-plot')].find(
    q => ((q.querySelector('.gtitle') || {}).textContent || '').startsWith(title));
  return {
    title: box(p.querySelector('.gtitle')),
    area: box(p.querySelector('.nsewdrag')),
    notes: [...p.querySelectorAll('g.annotation')].map(a => ({text: a.textContent, ...box(a)})),
    legend: [...p.querySelectorAll('g.legend g.traces')].map(
      t => ({text: t.textContent, ...box(t)})),
  };
}
"""


def _apart(a: dict, b: dict) -> bool:
    """Whether two boxes do not overlap."""
    return (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or (b["bottom"] <= a["top"])
    )


@browser
@pytest.mark.parametrize("width", [1440, 390])
def test_the_one_node_label_clears_the_cliff_chart_s_title(chromium_browser, app_url, width):
    """The Cluster page's "one node" label of the dotted line at 8 GPUs sat above the plot
    area, where the title is set: it was drawn over "The cliff: busbw as the job grows past one
    node" at 1440 and at 390 px. At the line's foot it then lay in the shaded band; it is the
    line's legend entry now, under the plot area (tests/test_app_qa28.py), and the plot holds
    no label of it."""
    context = chromium_browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/cluster?cl_nodes=8&cl_size_text=14GB")
        entry = page.locator(".js-plotly-plot g.legend g.traces", has_text="one node (8 GPUs)")
        expect(entry).to_be_attached()
        wait_for_plots(page)  # plotly's second layout pass (automargin) settles
        chart = page.evaluate(_CHART_BOXES_JS, "The cliff")
        assert not [n for n in chart["notes"] if "one node" in n["text"]], chart
        (note,) = [n for n in chart["legend"] if n["text"] == "one node (8 GPUs)"]
        assert _apart(note, chart["title"]) and _apart(note, chart["area"]), chart
        assert chart["area"]["bottom"] <= note["top"], chart
    finally:
        context.close()


# --- headless (AppTest): what the page's own script shows --------------------------------------
def test_a_long_refusal_is_shown_whole():
    """4M tokens (4 x 2^20) at sequence length 4096 on 512 GPUs with 4 samples each is half an
    accumulation step. The Batch page's refusal, in its boxes' words, ran to about 620
    characters and was cut at 500: its last way out read "Data-parallel ranks N [GPUs] = 256
    (Accumulation steps A [-] = …", where `costmodel batch` says every way out. A red message
    is cut only past :data:`costmodel.web.common.ERROR_CHARS` now."""
    from typer.testing import CliRunner

    from costmodel import cli

    at = open_page("page_batch.py", {"batch_unit": "tokens", "batch_ranks": "512"})
    assert_clean(at)
    (message,) = [_text(e.value) for e in at.error]
    assert "…" not in message, message
    assert message.endswith("Data-parallel ranks N [GPUs] = 256 (Accumulation steps A [-] = 1)"), (
        message
    )
    res = CliRunner().invoke(
        cli.app,
        ["batch", "--global-tokens", "4Mi", "--seq", "4096", "--ranks", "512", "--local", "4"],
    )
    assert res.exit_code == 2  # the CLI's ways out, the same three
    for way in ("--accumulation=1 (", "--local-batch=2 (", "--ranks=256 ("):
        assert way in res.stderr, res.stderr


# (page, query, the red message): each box named, with the range the CLI keeps for its option
_OUT_OF_RANGE = [
    (
        "page_collectives.py",
        {"nccl_nodes": "0"},
        "Nodes: must be a whole number in 1..1,000,000, got 0",
    ),
    (
        "page_collectives.py",
        {"nccl_nodes": "2000000"},
        "Nodes: must be a whole number in 1..1,000,000, got 2000000",
    ),
    (
        "page_collectives.py",
        {"nccl_gpus": "0"},
        "GPUs per node: must be a whole number in 1..1,024, got 0",
    ),
    (  # the preset's own 1..8, by the box's name
        "page_collectives.py",
        {"nccl_gpus": "16"},
        "GPUs per node: dgx-h100 has 8 GPUs per node, got 16; allowed: 1..8",
    ),
    (
        "page_collectives.py",
        {"coll_compare": "true", "pin_nodes": "0"},
        "B: nodes: must be a whole number in 1..1,000,000, got 0",
    ),
    (
        "page_collectives.py",
        {"view": "link", "ranks": "-5"},
        "Ranks N [GPUs]: must be a whole number in 1..1,000,000,000, got -5",
    ),
    ("page_cluster.py", {"cl_nodes": "0"}, "Nodes: must be a whole number in 1..1,000,000, got 0"),
    (
        "page_cluster.py",
        {"cl_gpus": "0"},
        "GPUs per node (empty: the preset's): must be a whole number in 1..1,024, got 0",
    ),
    (
        "page_memory.py",
        {"arch": "llama-3.1-70b", "act_seq": "200000000"},
        "Sequence length [tokens]: must be a whole number in 1..100,000,000 tokens, got 200000000",
    ),
    (
        "page_memory.py",
        {"arch": "llama-3.1-70b", "micro": "0"},
        "Local batch per GPU [samples]: must be a whole number in 1..1,000,000, got 0",
    ),
    (
        "page_memory.py",
        {"context": "-1GB"},
        "CUDA context per GPU [B]: must be a size in 0 B..16 TiB (2**44 B), whole bytes, "
        "e.g. 1GiB, got '-1GB'",
    ),
    (
        "page_batch.py",
        {"base_lr": "1000"},
        "Base learning rate [-]: must be a learning rate in (0, 100], got 1000.0",
    ),
    (
        "page_batch.py",
        {"base_batch": "10000000000000"},
        "Batch it was tuned at [samples]: must be a whole number in 1..1e12 samples, "
        "got 10000000000000",
    ),
]


@pytest.mark.parametrize(("page", "query", "said"), _OUT_OF_RANGE)
def test_an_out_of_range_box_is_named_with_the_cli_s_range(page, query, said):
    """Out-of-range boxes on four pages named the library's argument and one bound ("nodes:
    must be a whole number >= 1, got 0" under Nodes on Collectives and Cluster, "Input should
    be less than or equal to 1000000" for 2,000,000 nodes, "CUDA context per GPU [B]: must be
    >= 0 bytes"), or were answered where the CLI refuses them: a 200,000,000-token sequence
    was sized at 5.63 PB per GPU (`memory --seq`: 1..100,000,000), a base learning rate of
    1000 was scaled (`batch --base-lr`: (0, 100]). Each box is checked against its CLI
    option's range now (common.check_boxes), and named."""
    at = open_page(page, query)
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(said in e for e in errors), errors
    assert not metrics(at).get("Memory per GPU, ZeRO-0", "").endswith("PB"), metrics(at)


def test_the_lesson_model_runs_in_network_reduction_only_where_a_switch_reduces():
    """The Collectives page's lesson model on 8 DGX H100 nodes (plain NDR InfiniBand, no IB
    SHARP) listed nvls, the lesson's in-network reduction, at 284 ms and named it "Fastest
    algorithm: nvls (halving_doubling is 94% slower ...)", as `collective --model lesson
    --algorithm all` did, where the nccl model says "multi-node NVLS needs CollNet (IB SHARP)"
    and the textbook model refuses it. The lesson's in-switch formula is one NVLink domain's:
    NVLink SHARP in one node; across nodes it is refused even with IB SHARP (it got faster per
    node added), pointing to the textbook and nccl models."""
    from costmodel.predict import predict_all_algorithms

    at = open_page(
        "page_collectives.py", {"nccl_nodes": "8", "size_text": "14GB", "coll_model": "lesson"}
    )
    assert_clean(at)
    captions = " ".join(_text(c.value) for c in at.caption)
    assert "Fastest algorithm: nvls" not in captions, captions
    assert "lesson model cannot run" in " ".join(_text(m.value) for m in at.markdown), (
        "the unavailable table says why"
    )
    for cluster, nodes, runs in (
        ("dgx-h100", 8, False),  # no IB SHARP
        ("dgx-h100", 1, True),  # NVLink SHARP in the node
        ("coreweave-hgx-h100", 2, False),  # IB SHARP across nodes: not the lesson's formula
        ("pcie3-2x-rtx2080ti-nop2p", 1, False),  # no NVSwitch
    ):
        r = predict_all_algorithms("all_reduce", [14e9], cluster, nodes, model="lesson")
        assert ("nvls" in r.available) is runs, (cluster, nodes, r.unavailable)


def test_the_textbook_all_to_all_across_nodes_is_not_priced_as_a_ring():
    """The Collectives page's textbook model (and `collective all_to_all --model textbook`) put
    14 GB of all-to-all on 8 DGX H100 nodes at 36.1 ms, 382 GB/s busbw: its default "ring"
    (all-to-all's alias of the pairwise exchange) took a ring's bandwidth across nodes, the
    node's 8 NICs shared by one ring crossing, where every rank's (N-1)/N M crosses the
    network through its own NIC share (the lesson said 276 ms, NCCL's model 337 ms). The
    pairwise formula now runs at the NIC share per GPU; a broadcast's chain keeps the ring's."""
    from costmodel import presets
    from costmodel.predict import predict_collective
    from costmodel.units import format_duration

    at = open_page(
        "page_collectives.py",
        {"op": "all_to_all", "nccl_nodes": "8", "size_text": "14GB", "coll_model": "textbook"},
    )
    assert_clean(at)
    p = predict_collective("all_to_all", 14e9, "dgx-h100", nodes=8, model="textbook")
    assert metrics(at)["Time"] == format_duration(float(p.time_s))  # the page is the API
    c = presets.cluster("dgx-h100", nodes=8)
    share = c.effective_inter_bandwidth_bytes_per_s  # 48 GB/s: one NDR NIC's effective rate
    assert float(p.busbw_bytes_per_s) == pytest.approx(share, rel=0.01)
    chain = predict_collective("broadcast", 14e9, "dgx-h100", nodes=8, model="textbook")
    assert float(chain.busbw_bytes_per_s) > 7 * share  # the chain crosses each boundary once
