"""Headless tests from the forty-first QA pass: the Memory page's bar totals clear of the GPU
memory line, and node counts written with separators as GPU counts are. Each test failed on
the defect it names before its fix."""

from __future__ import annotations

import base64
import json

import numpy as np
import pandas as pd
import pytest

from costmodel import plots
from tests.test_app import assert_clean, metrics, open_page

#: Height of a bar's total above its foot [px]: one line of chart text at 12-14 px.
LABEL_PX = 18.0


def _values(y) -> np.ndarray:
    """A trace's ``y`` as Streamlit sends it: a list, or plotly's typed array (base64)."""
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return np.asarray(y, dtype=float)


def _crossings(spec: dict, plot_px: float) -> list[tuple[str, float, float]]:
    """The bar totals a limit line passes through on a plot area ``plot_px`` tall:
    ``(label, label's foot [px], line [px])``. A total is set ``top center`` on its point: it
    takes :data:`LABEL_PX` above it; a line 2 px wide must stay off that
    span. The axis's range is the figure's, else plotly's autorange (0 to the highest bar or
    line, plus 5 %)."""
    data, layout = spec["data"], spec["layout"]
    bars = [_values(t["y"]) for t in data if t.get("type") == "bar"]
    tops = np.sum(bars, axis=0)
    (labels,) = [t for t in data if t.get("mode") == "text"]
    label_y = _values(labels["y"])
    lines = [s["y0"] for s in layout.get("shapes", []) if s.get("yref") == "y"]
    lines += [  # the compare chart's markers: one line per bar
        y for t in data if t.get("marker", {}).get("symbol") == "line-ew" for y in t["y"]
    ]
    assert lines, "no limit line drawn"
    axis = layout["yaxis"].get("range") or [0.0, 1.05 * max(*tops, *lines)]
    per_px = (axis[1] - axis[0]) / plot_px
    out = []
    for text, y in zip(labels["text"], label_y, strict=True):
        for c in lines:
            foot, line = (y - axis[0]) / per_px, (c - axis[0]) / per_px
            if foot - 1.0 < line < foot + LABEL_PX:
                out.append((text, round(foot, 1), round(line, 1)))
    return out


def _memory_spec(query: dict) -> dict:
    at = open_page("page_memory.py", query)
    assert_clean(at)
    (chart,) = at.get("plotly_chart")
    return json.loads(chart.proto.spec)


@pytest.mark.parametrize(
    ("query", "over"),
    [
        # the QA's URL: ZeRO-3's 37.1 GB a sliver under the 85.5 GB line of a 1.28 TB axis
        ({"arch": "llama-3.1-70b", "zero_stage": "3", "dp_ranks": "64", "recompute": "full"}, 0),
        # bars over the line (ZeRO-0..2 on 8 ranks), one of them the selected
        ({"arch": "llama-3.1-70b", "zero_stage": "3", "dp_ranks": "8"}, 1),
    ],
)
def test_the_gpu_memory_line_passes_through_no_bar_total(query, over):
    """The red dashed "GPU memory 85.5 GB" line ran through the ZeRO-3 bar's total "37.1 GB"
    at 390 and 1440 px: the selected configuration's one number looked struck through. A
    total the line would cross is set just above the line now, at every plot height from the
    least a chart is given (:data:`costmodel.plots.MIN_PLOT_PX`) up."""
    spec = _memory_spec(query)
    tops = np.sum([_values(t["y"]) for t in spec["data"] if t.get("type") == "bar"], axis=0)
    capacity = spec["layout"]["shapes"][0]["y0"]
    assert (tops > capacity).sum() >= over + (query["dp_ranks"] == "8") * 2, tops
    for plot_px in (plots.MIN_PLOT_PX, 220.0, 317.0, 600.0):
        assert not _crossings(spec, plot_px), (plot_px, _crossings(spec, plot_px))
    # the line keeps its name, in the legend: on the plot it lay where a raised total goes
    assert not spec["layout"].get("annotations")
    names = [t.get("name") for t in spec["data"]]
    assert "GPU memory 85.5 GB" in names, names


def _frame(totals: dict) -> pd.DataFrame:
    rows = [
        (c, part, t * share) for c, t in totals.items() for part, share in (("w", 0.4), ("o", 0.6))
    ]
    return pd.DataFrame(rows, columns=["config", "part", "bytes"])


def test_totals_near_over_and_under_the_line_are_all_clear_of_it():
    """Bars from a sliver to three times the GPU's memory, a hair under and a hair over its
    line: every total clear of the line, on the single chart and on the A/B chart whose lines
    are red markers on each bar."""
    cap = 80e9
    totals = {f"c{i}": f * cap for i, f in enumerate((0.02, 0.3, 0.9, 0.99, 1.0, 1.01, 1.08, 3.0))}
    single = plots.memory_stack_figure(_frame(totals), capacity_bytes=cap)
    compare = plots.memory_compare_figure(_frame(totals), capacities=dict.fromkeys(totals, cap))
    specs = [json.loads(f.to_json()) for f in (single, compare)]
    for spec in specs:
        for plot_px in (plots.MIN_PLOT_PX, 300.0, 900.0):
            assert not _crossings(spec, plot_px), (plot_px, _crossings(spec, plot_px))
    # a total the line is far from stays on its bar
    (labels,) = [t for t in specs[0]["data"] if t.get("mode") == "text"]
    assert list(_values(labels["y"])[[0, 1, -1]]) == [totals["c0"], totals["c1"], totals["c7"]]


# --- node counts with separators -----------------------------------------------------------------
def test_a_million_nodes_are_written_with_separators():
    """With 1,000,000 nodes the Cluster page said "All-reduce of ... over 8,000,000 GPUs
    (1000000 x 8)" and the step page "Step on 8,000,000 GPUs (1000000 x 8)", its GPUs metric
    "8000000 (1000000 x 8)": the node count as every count is written now."""
    at = open_page("page_cluster.py", {"cl_nodes": "1000000"})
    assert_clean(at)
    (head,) = [s.value for s in at.subheader if s.value.startswith("All-reduce of")]
    assert "over 8,000,000 GPUs (1,000,000 x 8)" in head, head
    at = open_page("page_ddp.py", {"ddp_nodes": "1000000"})
    assert_clean(at)
    (head,) = [s.value for s in at.subheader if s.value.startswith("Step on")]
    assert head.startswith("Step on 8,000,000 GPUs (1,000,000 x 8)"), head
    assert metrics(at)["GPUs"] == "8,000,000 (1,000,000 x 8)"


def test_the_hierarchy_chart_writes_its_counts_with_separators():
    """The Cluster page's phases chart named its bars "8000000 (1000000x8)"."""
    frame = pd.DataFrame(
        {
            "gpus": [16, 8_000_000],
            "nodes": [2, 1_000_000],
            "gpus_per_node": [8, 8],
            "intra_reduce_scatter_s": [1e-3, 2e-3],
            "inter_allreduce_s": [1e-3, 5.0],
            "intra_all_gather_s": [1e-3, 2e-3],
            "flat_ring_s": [3e-3, 43.0],
        }
    )
    fig = plots.hierarchy_phases_figure(frame)
    assert list(fig.data[0].x) == ["16 (2x8)", "8,000,000 (1,000,000x8)"]
