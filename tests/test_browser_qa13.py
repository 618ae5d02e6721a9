"""The fourteenth browser QA pass: a new user in chromium at 1440 and 390 px (the 14 GB
all-reduce on 64 H100s over NDR InfiniBand on the Cluster and Collectives pages, Llama-3.1-70B
under ZeRO-1/3 and FSDP, H100 against B200 in days and dollars, a tokens-first batch, an uploaded
nccl-tests log and an uploaded config.json). Each test failed on the defect it names before its
fix; the browser tests are marked ``browser``, the rest run headless."""

from __future__ import annotations

import playwright.sync_api as playwright_api  # the test extra; a missing stack fails
import pytest

from tests._browser import wait_for_plots

expect = playwright_api.expect
expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside other sessions

browser = pytest.mark.browser


# Each crossover label of the chart whose title starts with `title` (the crossovers' "a → b",
# legend entries now) and the plot area's edges [px].
_CHART_LABELS_JS = """
title => {
  const p = [...document.querySelectorAll('.js-plotly-plot')].find(
    q => ((q.querySelector('.gtitle') || {}).textContent || '').startsWith(title));
  const area = p.querySelector('.nsewdrag').getBoundingClientRect();
  const figure = p.getBoundingClientRect();
  return {
    left: area.left, right: area.right, top: area.top, bottom: area.bottom,
    figureLeft: figure.left, figureRight: figure.right,
    points: p.querySelectorAll('g.textpoint text').length,
    labels: [...p.querySelectorAll('g.legend text.legendtext')]
      .filter(t => t.textContent.includes('→'))
      .map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent, left: r.left, right: r.right, top: r.top,
                bottom: r.bottom};
      }),
  };
}
"""


@browser
@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("nccl_nodes=8&size_text=14GB", "all-reduce time, every algorithm"),
        ("view=link&ranks=64&size_text=14GB&bandwidth=50GB/s", "all-reduce time, N = 64"),
    ],
)
def test_a_phone_crossover_label_stays_inside_the_chart(tabs, app_url, query, title):
    """At 390 px the Collectives page's chart of every NCCL algorithm on 8 DGX H100 nodes cut
    its last crossover label at the plot area's right edge ("nvls_tre" of "nvls_tree → ring",
    4.29 GB on an axis ending at 17 GB): each label was centred on its point. Set beside its
    point, inward, a label still lay over the curves ("tree → nvls_tree"); the labels are legend
    entries now, below the plot area and inside the figure. The one-link chart takes the same
    road and is held to it."""
    page = tabs.open(f"{app_url}/?{query}", {"width": 390, "height": 844})
    expect(page.locator(".js-plotly-plot g.legend text.legendtext").first).to_be_attached()
    wait_for_plots(page)  # plotly's second layout pass (automargin) settles
    chart = page.evaluate(_CHART_LABELS_JS, title)
    assert chart["labels"], chart
    assert chart["points"] == 0, chart  # no text label on the plot area
    for label in chart["labels"]:
        assert label["top"] >= chart["bottom"] - 1, chart  # below the data
        assert chart["figureLeft"] - 1 <= label["left"], chart
        assert label["right"] <= chart["figureRight"] + 1, chart


# The "GPU memory ..." entry of the Memory page's chart: its legend text and its line's colour.
_CAPACITY_LABEL_JS = """
() => [...document.querySelectorAll('.js-plotly-plot g.legend g.traces')]
  .filter(t => t.textContent.startsWith('GPU memory'))
  .map(t => ({text: t.textContent,
              line: getComputedStyle(t.querySelector('path.js-line')).stroke,
              onPlot: [...document.querySelectorAll('.js-plotly-plot g.annotation')]
                .filter(a => a.textContent.startsWith('GPU memory')).length}))
"""


@browser
@pytest.mark.parametrize("width", [1440, 390])
def test_the_gpu_memory_label_reads_over_the_bars(tabs, app_url, width):
    """The Memory page's "GPU memory 85.5 GB" label sat on Llama-3.1-70B's ZeRO-0 and ZeRO-1
    bars, grey text on their blue with no background: unreadable at 1440 px and at 390. It was
    the dashed line's red on a white chip; it is the line's legend entry now (a label on the
    plot sat where a bar's total is moved to clear the line: tests/test_browser_qa34.py), in
    the legend, with the line's red, and no text of it on the plot."""
    page = tabs.open(
        f"{app_url}/memory?arch=llama-3.1-70b&zero_stage=1&dp_ranks=64",
        {"width": width, "height": 900},
    )
    entry = page.locator(".js-plotly-plot g.legend text.legendtext", has_text="GPU memory 85.5 GB")
    expect(entry).to_be_attached()
    (found,) = page.evaluate(_CAPACITY_LABEL_JS)
    assert found["line"] == "rgb(255, 0, 0)" and found["onPlot"] == 0, found


# --- headless (AppTest): what the page's own script shows --------------------------------------
@pytest.mark.parametrize(
    "cluster", ["pcie3-2x-rtx2080ti-nop2p", "pcie-8x-l40s", "pcie5-8x-rtxpro6000-p2p"]
)
def test_cluster_page_answers_one_node_of_a_preset_without_network(cluster):
    """The Cluster page on a one-box preset (no NICs) refused even Nodes = 1: "nodes=2 but the
    node has no network (nics_per_node=0); allowed: nodes=1" (its GPU-count sweep always reached
    two nodes, for the cliff), so 14 GB on two RTX 2080 Ti showed no number and not the note
    that the card cannot hold the buffer. One node is answered now, as `costmodel collective
    --cluster` answers it, note included; two nodes are still refused by name."""
    from costmodel.predict import buffer_memory_note, predict_collective
    from costmodel.units import format_duration
    from tests.test_app import assert_clean, metrics, open_page

    at = open_page(
        "page_cluster.py", {"cl_cluster": cluster, "cl_nodes": "1", "cl_size_text": "14GB"}
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    api = predict_collective("all_reduce", 14e9, cluster, nodes=1)
    assert metrics(at)["Time, model nccl"] == format_duration(float(api.time_s))
    note = buffer_memory_note(14e9, cluster)
    if cluster.startswith("pcie3-2x-rtx2080ti"):  # 11.6 GB cards: the CLI's note, here too
        assert note and any("GPU memory" in w.value for w in at.warning), at.warning
    assert bool(note) == bool(at.warning), (note, at.warning)
    two = open_page("page_cluster.py", {"cl_cluster": cluster, "cl_nodes": "2"})
    said = [e.value.replace("\\", "") for e in two.error]
    assert any("2 nodes but the node has no network (nics_per_node 0)" in e for e in said), said


@pytest.mark.parametrize("typed", ["1e30B", "-5GB"])
def test_a_typed_size_out_of_range_names_one_range(typed):
    """A typed size past the size parser's own bounds named two ranges on the Cluster and
    Collectives pages: "'1e30B' is above the largest size accepted, 1e+18 B. Allowed: ... from
    1 B to 16 TiB" and "-5GB: must be >= 0 bytes ... from 1 B to 16 TiB". It is "out of range"
    with the box's one range now, as 20TiB is, and as the CLI's --size says 1 B..16 TiB."""
    from tests.test_app import _text, assert_clean, open_page

    for page, key in (("page_cluster.py", "cl_size_text"), ("page_collectives.py", "size_text")):
        at = open_page(page, {key: typed})
        assert_clean(at)
        (message,) = [_text(e.value) for e in at.error]
        assert message.startswith(f"Message size: '{typed}' is out of range."), message
        assert "1e+18" not in message and ">= 0" not in message, message
        assert message.endswith("from 1 B to 16 TiB"), message


@browser
def test_a_phone_shows_the_learning_rate_of_each_rule(tabs, app_url):
    """At 390 px the Batch page's "Learning rate under each rule" (4M tokens at 4096 on 512
    GPUs, AdamW tuned at 3e-4 for 1M tokens) was a grid whose rule names took the screen's
    width: the learning rates (0.0012 linear, 0.0006 square-root) sat off to the right, out of
    sight. The two-row table is text now, its columns wrapped to the screen (the sortable grid
    and the CSV on demand, as the other pages' small tables)."""
    page = tabs.open(
        f"{app_url}/batch?batch_unit=tokens&batch_ranks=512&batch_local_batch=1",
        {"width": 390, "height": 844},
    )
    for rate in ("0.0012", "0.0006"):
        cell = page.locator("[data-testid=stMarkdown] td", has_text=rate)
        expect(cell).to_be_visible()
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, (rate, box)


@pytest.mark.parametrize(
    ("layout", "cli", "said"),
    [
        (
            {"mem_strategy": "hsdp", "mem_group": "8"},
            ["--strategy", "hsdp", "--group-size", "8"],
            ("hsdp g=32 and recompute full", "fsdp and recompute full"),
        ),
        (
            {"mem_reshard": "false"},
            ["--zero", "3", "--no-reshard"],
            ("reshard after forward (FULL_SHARD) and recompute full",),
        ),
    ],
)
def test_memory_page_names_the_zero3_layout_that_fits(layout, cli, said):
    """Llama-3.1-70B at ZeRO-3 on 64 H100s as hsdp g=8, or as fsdp without resharding, does
    not fit; the Memory page said "No recomputation mode or ZeRO stage, alone or together,
    makes it fit at these ranks", where `costmodel memory` names fsdp (or resharding) with
    recompute full at 37.1 GB. The page tries the ZeRO-3 layouts that shard more too now, and
    says each that fits with the CLI's words and memory."""
    import re

    from typer.testing import CliRunner

    from costmodel.cli import app
    from tests.test_app import _text, assert_clean, open_page

    at = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-70b", "zero_stage": "3", "dp_ranks": "64", **layout},
    )
    assert_clean(at)
    (warn,) = [_text(w.value) for w in at.warning if "Does not fit" in _text(w.value)]
    assert "No recomputation mode" not in warn, warn
    args = ["memory", "--arch", "llama-3.1-70b", "--ranks", "64", "--cluster", "dgx-h100", *cli]
    out = CliRunner().invoke(app, args).output
    for words in said:
        (gb,) = re.findall(rf"^  {re.escape(words)}: (\S+ GB) per GPU", out, flags=re.M)
        assert f"{words}: {gb} per GPU" in warn, (warn, out)


@pytest.mark.parametrize(
    ("cluster", "said"),
    [
        ("dgx-h100", "8 NICs per node (ib-ndr) on infiniband (400 GB/s per node, 50 GB/s per GPU)"),
        ("pcie3-2x-rtx2080ti-nop2p", "no network between nodes (one node only)"),
    ],
)
def test_cluster_page_names_the_nic(cluster, said):
    """The Cluster page's line on the hardware said "8 NICs per node on infiniband" for a DGX
    H100 (a user asking about NDR InfiniBand could not tell NDR from HDR there) and "0 NICs per
    node on none (0 B/s per node, 0 B/s per GPU)" for a box without a network. It names the
    NIC preset now, and says a box has no network."""
    from tests.test_app import assert_clean, open_page

    at = open_page("page_cluster.py", {"cl_cluster": cluster, "cl_nodes": "1"})
    assert_clean(at)
    (line,) = [c.value for c in at.caption if "GPUs per node over" in c.value]
    assert said in line, line
    assert "0 NICs" not in line and "on none" not in line, line


@pytest.mark.parametrize(
    ("cluster", "nodes", "ticks"),
    [
        ("gb200-nvl72", "4", [2, 4, 8, 16, 32, 72, 144, 288]),
        ("dgx-h100", "8", [2, 4, 8, 16, 32, 64]),
        ("dgx-h100", "5", [2, 4, 8, 16, 40]),
    ],
)
def test_cluster_cliff_chart_labels_the_gpu_counts_it_ran(cluster, nodes, ticks):
    """The Cluster page's cliff chart labelled its GPU axis at powers of two: on GB200 NVL72
    (72 GPUs a node) the "one node" line at 72 stood beside a "64" and the 144 and 288 GPU
    points above "128" and "256", counts the sweep never ran; 5 DGX nodes' own 40 GPUs had no
    label. The axis labels the counts the sweep ran now (one node and the page's own count
    first, none crowding another); 8 DGX H100 nodes keep their powers of two."""
    import json

    from tests.test_app import assert_clean, open_page

    at = open_page("page_cluster.py", {"cl_cluster": cluster, "cl_nodes": nodes})
    assert_clean(at)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (cliff,) = [s for s in specs if "The cliff" in s["layout"]["title"]["text"]]
    axis = cliff["layout"]["xaxis"]
    assert axis["tickvals"] == ticks, axis
    assert axis["ticktext"] == [str(t) for t in ticks], axis
