"""Chart labels that sat on what they label (chromium, 390 px, 2026-12-04): the step page's
"best 25 MiB" on the bucket_cap curve and its star, the Cluster page's "one node" inside the
cliff chart's shaded band. Both are legend entries now, beside the marker or line they name, as
the Collectives page's crossover labels are (costmodel.plots._crossover_traces). Each test
failed before the fix; they read the figures the pages send (AppTest) or the builders make."""

from __future__ import annotations

import json
import math
import re

import plotly.graph_objects as go

from costmodel import plots
from tests.test_app import assert_clean, metrics, open_page


def _figure(at, key: str) -> dict:
    """The plotly figure (JSON) the page sent for the chart ``key``."""
    for chart in at.get("plotly_chart"):
        if key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart {key}")


def _inside(value, ref: str | None) -> bool:
    """Whether a position on an axis (``ref`` "x"/"y" or "paper") lies in the plot area."""
    if ref in (None, "x", "y") or not str(ref).startswith("paper"):
        return True  # a data position: on the axis's range, in the plot
    return 0.0 <= float(value) <= 1.0


def _labels_in_plot(fig: dict) -> list[str]:
    """Every text drawn inside the plot area: the texts of traces drawn with text, and the
    annotations placed inside it."""
    drawn = [
        str(t)
        for trace in fig["data"]
        if "text" in str(trace.get("mode", ""))
        for t in (trace.get("text") or [])
    ]
    drawn += [
        str(a.get("text", ""))
        for a in fig["layout"].get("annotations", [])
        if _inside(a.get("x", 0), a.get("xref")) and _inside(a.get("y", 0), a.get("yref"))
    ]
    return drawn


def _legend(fig: dict) -> list[str]:
    """The legend's entries, by the rule the app sizes its legends with."""
    return plots._legend_entries(go.Figure(fig))


# --- the step page's bucket_cap advisor ---------------------------------------------------------
def _stars(fig: dict) -> dict:
    """The star markers: legend name -> the cap [MiB] it sits at."""
    return {
        t["name"]: t["x"][0]
        for t in fig["data"]
        if t.get("marker", {}).get("symbol") == "star" and len(t["x"]) == 1
    }


def test_the_best_cap_is_named_in_the_legend_not_on_its_curve():
    """One configuration: the best cap (25 MiB here, as the page's metric says) was written
    just above its star, on the flat curve and across the dashed "current" line at the same
    cap. It is the legend's entry of the star now, and nothing is written on the curve."""
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp"})
    assert_clean(at)
    best = metrics(at)["Best bucket_cap"]  # "25 MiB"
    fig = _figure(at, "chart_bucket_advice")
    assert not [t for t in _labels_in_plot(fig) if "best" in t], _labels_in_plot(fig)
    assert _stars(fig) == {f"best {best}": float(best.split()[0])}
    # the star and the current cap's line: no lone "A" for the one curve
    assert _legend(fig) == [f"best {best}", "current 25 MiB"]


def test_each_configuration_s_best_cap_is_its_own_legend_entry():
    """A and B: both stars sat at 25 MiB and their two labels lay over each other and over B's
    curve. Each is named in the legend, after its curve."""
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp", "ddp_pin": "true", "ddp_b_nodes": "8"})
    assert_clean(at)
    best_a = metrics(at)["Best bucket_cap"]
    (caption,) = [c.value for c in at.caption if c.value.startswith("B: best bucket_cap")]
    best_b = re.match(r"B: best bucket_cap (\S+ MiB)", caption).group(1)
    fig = _figure(at, "chart_bucket_advice")
    assert not [t for t in _labels_in_plot(fig) if "best" in t], _labels_in_plot(fig)
    names = [f"A: best {best_a}", f"B: best {best_b}"]
    assert set(_stars(fig)) == set(names)
    assert _legend(fig) == ["A", names[0], "B", names[1], "current 25 MiB"]


# --- the Cluster page's cliff chart -------------------------------------------------------------
def _dotted(fig: dict) -> list[dict]:
    return [s for s in fig["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dot"]


def test_the_one_node_line_is_named_in_the_legend_not_in_the_band():
    """8 DGX H100 nodes at 14 GB: "one node" stood at the dotted line's foot, inside the
    shaded expected-error band (drawn after it, under the lines). The line is named in the
    legend, with its GPU count, in the line's own dots and colour."""
    at = open_page("page_cluster.py", {"cl_nodes": "8", "cl_size_text": "14GB"})
    assert_clean(at)
    fig = _figure(at, "chart_cliff")
    assert any(t.get("fill") == "tonexty" for t in fig["data"])  # the band is drawn
    assert not [t for t in _labels_in_plot(fig) if "one node" in t], _labels_in_plot(fig)
    (line,) = _dotted(fig)
    name = f"one node ({line['x0']:g} GPUs)"
    assert name in _legend(fig), _legend(fig)
    (entry,) = [t for t in fig["data"] if t.get("name") == name]
    assert entry["line"] == line["line"]  # the legend's symbol is the line it names
    assert all(v is None for v in entry["x"])  # it draws nothing in the plot itself
    assert line["x0"] in fig["layout"]["xaxis"]["tickvals"]  # its count is on the axis


def test_a_72_gpu_node_is_named_with_its_count():
    """GB200 NVL72: the entry says 72 GPUs, where the line stands; without a node count there
    is neither line nor entry."""
    import pandas as pd

    gpus = [2, 4, 8, 16, 32, 64, 72, 144, 288]
    frame = pd.DataFrame({"gpus": gpus, "busbw": [math.log2(g) for g in gpus]})
    fig = plots.bandwidth_vs_gpus_figure(frame, {"flat ring": "busbw"}, node_gpus=72).to_dict()
    assert not [t for t in _labels_in_plot(fig) if "one node" in t]
    assert _legend(fig) == ["flat ring", "one node (72 GPUs)"]
    assert [s["x0"] for s in _dotted(fig)] == [72]
    bare = plots.bandwidth_vs_gpus_figure(frame, {"flat ring": "busbw"}).to_dict()
    assert not _dotted(bare) and [t["name"] for t in bare["data"]] == ["flat ring"]
