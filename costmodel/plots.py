"""Plotly figures built from results, shared by the app, HTML reports and notebooks.

Every figure here takes results (DataFrames or result objects) and returns a
``plotly.graph_objects.Figure``; nothing here computes a model figure.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (used by the figure builders below)

# --- app figures (costmodel/web): collectives, cluster, memory, DDP step, scaling ---------------
# Axes keep SI values (bytes, seconds, B/s) and let plotly print SI prefixes with the unit as a
# suffix ("256MB", "100µs", "400GB/s"), so hover text and ticks carry units. Each figure is built
# in one go from plain dicts (go.Figure(data=..., layout=...)): several times faster than
# add_trace/update_layout one by one, which keeps an app rerun within its 150 ms budget.

_SI_AXIS = {"exponentformat": "SI", "showexponent": "all"}
_LOG10_2 = 0.30102999566398120  # dtick of a log axis with a tick at every power of two


def _unit_axis(unit: str, *, log: bool = False, title: str = "") -> dict:
    axis = {**_SI_AXIS, "ticksuffix": unit, "title": {"text": title}}
    if log:
        axis["type"] = "log"
    return axis


def _vline(x: float, *, log: bool, text: str = "") -> tuple[dict, list[dict]]:
    """A dotted vertical line at data value ``x``.

    A shape on a log axis takes the data value; an annotation takes its log10 (plotly.js).
    """
    import math

    pos = float(x)
    shape = {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": pos,
        "x1": pos,
        "y0": 0,
        "y1": 1,
        "line": {"dash": "dot", "color": "grey"},
    }
    notes = (
        [
            {
                "x": math.log10(pos) if log else pos,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": text,
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
            }
        ]
        if text
        else []
    )
    return shape, notes


def _legend(y: float = -0.2) -> dict:
    return {"orientation": "h", "y": y}


def collective_sweep_figure(
    frame,
    *,
    y: str = "time_s",
    series: str = "algorithm",
    title: str = "",
    marks=None,
    selected_bytes: float | None = None,
    markers_only: tuple[str, ...] = (),
) -> go.Figure:
    """Time (log-log) or bus bandwidth (log-x) against message size, one line per ``series``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Long format with columns ``message_bytes`` [B], ``series`` and ``y``
        (``time_s`` [s] or ``busbw_bytes_per_s`` [B/s]).
    marks : pandas.DataFrame, optional
        Points to mark (crossovers): columns ``message_bytes``, ``y`` and ``label``.
    selected_bytes : float, optional
        Message size to mark with a vertical line [B].
    markers_only : tuple of str
        Series drawn as markers without a line (measurements, against predicted lines).
    """
    is_time = y == "time_s"
    unit = "s" if is_time else "B/s"
    data = [
        {
            "type": "scatter",
            "x": part["message_bytes"].to_numpy(),
            "y": part[y].to_numpy(),
            "mode": "markers" if name in markers_only else "lines+markers",
            "name": str(name),
            "marker": {"size": 8 if name in markers_only else 4},
            "hovertemplate": f"%{{x:.3s}}B: %{{y:.3s}}{unit}<extra>{name}</extra>",
        }
        for name, part in frame.groupby(series, sort=False)
    ]
    if marks is not None and len(marks):
        data.append(
            {
                "type": "scatter",
                "x": marks["message_bytes"].to_numpy(),
                "y": marks[y].to_numpy(),
                "mode": "markers+text",
                "name": "crossover",
                "text": marks["label"].tolist(),
                "textposition": "top center",
                "marker": {"symbol": "x", "size": 11, "color": "black"},
                "hovertemplate": f"crossover at %{{x:.3s}}B: %{{y:.3s}}{unit}<extra>%{{text}}</extra>",
            }
        )
    layout = {
        "title": {"text": title},
        "xaxis": _unit_axis("B", log=True, title="message size M (per rank)"),
        "yaxis": _unit_axis(unit, log=is_time, title="time" if is_time else "bus bandwidth"),
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
        "hovermode": "closest",
    }
    if selected_bytes is not None:
        shape, notes = _vline(selected_bytes, log=True)
        layout["shapes"], layout["annotations"] = [shape], notes
    return go.Figure(data=data, layout=layout)


def memory_stack_figure(
    frame, *, capacity_bytes: float | None = None, title: str = ""
) -> go.Figure:
    """Stacked bars of the memory one GPU holds, part by part, against the GPU's memory line.

    Parameters
    ----------
    frame : pandas.DataFrame
        Long format: ``config`` (one bar each), ``part`` and ``bytes`` [B].
    capacity_bytes : float, optional
        The GPU's memory [B], drawn as a horizontal line.
    """
    from .units import format_bytes

    data = [
        {
            "type": "bar",
            "x": rows["config"].tolist(),
            "y": rows["bytes"].to_numpy(),
            "name": str(part),
            "hovertemplate": "%{x}: %{y:.3s}B<extra>" + str(part) + "</extra>",
        }
        for part, rows in frame.groupby("part", sort=False)
    ]
    layout = {
        "barmode": "stack",
        "title": {"text": title},
        "yaxis": _unit_axis("B", title="memory per GPU"),
        "legend": _legend(-0.15),
        "margin": {"t": 50, "b": 10},
    }
    if capacity_bytes is not None:
        layout["shapes"] = [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "yref": "y",
                "y0": capacity_bytes,
                "y1": capacity_bytes,
                "line": {"color": "red", "dash": "dash"},
            }
        ]
        layout["annotations"] = [
            {
                "xref": "paper",
                "x": 0,
                "yref": "y",
                "y": capacity_bytes,
                "text": f"GPU memory {format_bytes(capacity_bytes)}",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
            }
        ]
    return go.Figure(data=data, layout=layout)


_TIMELINE_COLORS = {"forward": "#4C78A8", "backward": "#72B7B2", "allreduce": "#F58518"}


def ddp_timeline_figure(
    timeline, *, compute_s: float, step_time_s: float, title: str = ""
) -> go.Figure:
    """Gantt chart of one DDP step: compute on one row, bucket all-reduces on another.

    Parameters
    ----------
    timeline : list of dict
        Intervals with ``kind`` ("forward", "backward", "allreduce"), ``start_s``, ``end_s`` [s],
        ``label`` and ``message_bytes`` [B] (as :class:`costmodel.ddp.Interval` gives them).
    compute_s, step_time_s : float
        End of compute and of the step [s]; the span between them (the exposed communication
        tail) is shaded.
    """
    data = []
    for kind in dict.fromkeys(iv["kind"] for iv in timeline):  # one trace per kind
        ivs = [iv for iv in timeline if iv["kind"] == kind]
        row = "communication" if kind == "allreduce" else "compute"
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": kind,
                # numpy arrays, not lists: plotly validates a list element by element (~100 ms
                # for a 7B model's few hundred buckets), an array in one pass
                "base": np.array([iv["start_s"] for iv in ivs], dtype=float),
                "x": np.array([iv["end_s"] - iv["start_s"] for iv in ivs], dtype=float),
                "y": np.full(len(ivs), row),
                "marker": {
                    "color": _TIMELINE_COLORS.get(kind, "grey"),
                    "line": {"color": "white", "width": 0.5},
                },
                # numbers and text apart (an object array is deep-copied element by element)
                "customdata": np.array([iv.get("message_bytes") or 0.0 for iv in ivs], dtype=float),
                "hovertext": np.array([iv.get("label") or kind for iv in ivs]),
                "hovertemplate": "%{hovertext}: from %{base:.3s}s, %{x:.3s}s long, "
                "%{customdata:.3s}B" + f"<extra>{kind}</extra>",
            }
        )
    layout = {
        "barmode": "overlay",
        "title": {"text": title},
        "xaxis": _unit_axis("s", title="time within the step"),
        "yaxis": {"categoryorder": "array", "categoryarray": ["communication", "compute"]},
        "legend": _legend(-0.3),
        "margin": {"t": 50, "b": 10},
        "height": 300,
    }
    if step_time_s > compute_s:
        layout["shapes"] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": compute_s,
                "x1": step_time_s,
                "y0": 0,
                "y1": 1,
                "fillcolor": "red",
                "opacity": 0.15,
                "line": {"width": 0},
            }
        ]
        layout["annotations"] = [
            {
                "x": compute_s,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": "exposed communication",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
            }
        ]
    return go.Figure(data=data, layout=layout)


def scaling_figure(frame, *, title: str = "") -> go.Figure:
    """Scaling efficiency (and the bound) against GPU count, log-2 x axis.

    ``frame`` has ``ranks``, ``efficiency`` (0-1] and ``bound`` columns (a scaling table).
    """
    data = [
        {
            "type": "scatter",
            "x": frame["ranks"].to_numpy(),
            "y": 100.0 * frame["efficiency"].to_numpy(),
            "mode": "lines+markers+text",
            "text": frame["bound"].tolist(),
            "textposition": "top center",
            "name": "efficiency",
            "hovertemplate": "%{x} GPUs: %{y:.1f}%<extra>%{text}-bound</extra>",
        }
    ]
    layout = {
        "title": {"text": title},
        "xaxis": {"type": "log", "title": {"text": "GPUs"}, "dtick": _LOG10_2},
        "yaxis": {"title": {"text": "scaling efficiency"}, "ticksuffix": "%", "range": [0, 105]},
        "margin": {"t": 50, "b": 10},
    }
    return go.Figure(data=data, layout=layout)


_PHASE_LABELS = {
    "intra_reduce_scatter_s": "intra-node reduce-scatter",
    "inter_allreduce_s": "inter-node all-reduce",
    "intra_all_gather_s": "intra-node all-gather",
}


def hierarchy_phases_figure(
    frame, *, flat_column: str | None = "flat_ring_s", title: str = ""
) -> go.Figure:
    """Where a hierarchical all-reduce's time goes, per GPU count: stacked phases [s].

    ``frame`` has ``gpus``, ``nodes``, ``gpus_per_node`` and the phase columns
    ``intra_reduce_scatter_s``, ``inter_allreduce_s``, ``intra_all_gather_s``; ``flat_column``
    (a flat ring's time) is drawn as markers beside the bars for comparison.
    """
    labels = [
        f"{g} ({n}x{k})"
        for g, n, k in zip(frame["gpus"], frame["nodes"], frame["gpus_per_node"], strict=True)
    ]
    data = [
        {
            "type": "bar",
            "x": labels,
            "y": frame[col].to_numpy(),
            "name": name,
            "hovertemplate": "%{x} GPUs: %{y:.3s}s<extra>" + name + "</extra>",
        }
        for col, name in _PHASE_LABELS.items()
    ]
    if flat_column is not None:
        data.append(
            {
                "type": "scatter",
                "x": labels,
                "y": frame[flat_column].to_numpy(),
                "mode": "markers",
                "name": "flat ring (total)",
                "marker": {"symbol": "diamond", "size": 9, "color": "black"},
                "hovertemplate": "%{x} GPUs: %{y:.3s}s<extra>flat ring</extra>",
            }
        )
    layout = {
        "barmode": "stack",
        "title": {"text": title},
        "xaxis": {"title": {"text": "GPUs (nodes x GPUs per node)"}, "type": "category"},
        "yaxis": _unit_axis("s", title="all-reduce time"),
        "legend": _legend(-0.3),
        "margin": {"t": 50, "b": 10},
    }
    return go.Figure(data=data, layout=layout)


def bandwidth_vs_gpus_figure(
    frame, columns: dict, *, node_gpus: int | None = None, title: str = ""
) -> go.Figure:
    """Bus bandwidth against GPU count (log-2 x), one line per ``columns`` entry (label -> col).

    ``node_gpus`` marks where the job leaves one node (the NVLink/network cliff).
    """
    data = [
        {
            "type": "scatter",
            "x": frame["gpus"].to_numpy(),
            "y": frame[col].to_numpy(),
            "mode": "lines+markers",
            "name": label,
            "hovertemplate": "%{x} GPUs: %{y:.3s}B/s<extra>" + label + "</extra>",
        }
        for label, col in columns.items()
    ]
    layout = {
        "title": {"text": title},
        "xaxis": {"type": "log", "title": {"text": "GPUs"}, "dtick": _LOG10_2},
        "yaxis": _unit_axis("B/s", title="bus bandwidth (busbw)"),
        "legend": _legend(-0.25),
        "margin": {"t": 50, "b": 10},
    }
    if node_gpus is not None:
        shape, notes = _vline(node_gpus, log=True, text="one node")
        layout["shapes"], layout["annotations"] = [shape], notes
    return go.Figure(data=data, layout=layout)


# --- validation (measured vs predicted; costmodel.validation.compare) ----------------------------
def validation_busbw_figure(
    comparison, *, title: str = "Measured and predicted bus bandwidth"
) -> go.Figure:
    """busbw against size (log-log): measured markers and predicted lines per op/ranks/algorithm."""
    fig = go.Figure()
    df = comparison.copy()
    df["_algo"] = df["algorithm"].fillna("auto") if "algorithm" in df else "auto"
    for (op, ranks, algo), g in df.groupby(["op", "ranks", "_algo"], sort=True):
        g = g.sort_values("size_bytes")
        label = f"{op} N={ranks} {algo}"
        fig.add_trace(
            go.Scatter(
                x=g.size_bytes.to_numpy(),
                y=g.measured_busbw_bytes_per_s.to_numpy(),
                mode="markers",
                name=f"{label} measured",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=g.size_bytes.to_numpy(),
                y=g.predicted_busbw_bytes_per_s.to_numpy(),
                mode="lines",
                name=f"{label} predicted",
            )
        )
    fig.update_layout(
        title={"text": title},
        xaxis=_unit_axis("B", log=True, title="message size"),
        yaxis=_unit_axis("B/s", log=True, title="bus bandwidth (busbw)"),
        legend={"orientation": "h", "y": -0.3},
        margin={"t": 50, "b": 10},
    )
    return fig


def validation_error_figure(comparison, *, title: str = "Prediction error vs size") -> go.Figure:
    """Busbw error ``busbw_pred / busbw_meas - 1`` (validation.compare's ``rel_error``, uncapped)
    against size, one series per op; a horizontal line at 0."""
    fig = go.Figure()
    for op, g in comparison.groupby("op", sort=True):
        g = g.sort_values("size_bytes")
        fig.add_trace(
            go.Scatter(x=g.size_bytes.to_numpy(), y=g.rel_error.to_numpy(), mode="markers", name=op)
        )
    fig.add_hline(y=0.0, line_color="grey")
    fig.update_layout(
        title={"text": title},
        xaxis=_unit_axis("B", log=True, title="message size"),
        yaxis={"title": {"text": "busbw error, predicted / measured - 1"}, "tickformat": ".0%"},
        legend={"orientation": "h", "y": -0.3},
        margin={"t": 50, "b": 10},
    )
    return fig


def validation_ddp_figure(ddp, *, title: str = "DDP step: measured vs predicted") -> go.Figure:
    """Grouped bars per DDP configuration: measured step, measured compute, predicted step."""
    labels = [
        f"cap {c:g} MiB, acc {a}, no_sync={n}"
        for c, a, n in zip(ddp.bucket_cap_mb, ddp.accumulation, ddp.no_sync, strict=True)
    ]
    fig = go.Figure()
    for column, name in (
        ("time_s", "measured step"),
        ("compute_time_s", "measured compute"),
        ("predicted_step_s", "predicted step"),
    ):
        if column in ddp:
            fig.add_trace(go.Bar(x=labels, y=ddp[column].to_numpy(), name=name))
    fig.update_layout(
        title={"text": title},
        barmode="group",
        yaxis=_unit_axis("s", title="time"),
        legend={"orientation": "h", "y": -0.3},
        margin={"t": 50, "b": 10},
    )
    return fig


def validation_models_figure(
    comparison, *, title: str = "Measured bus bandwidth and models"
) -> go.Figure:
    """busbw against size (log-log): measured markers and one predicted line per model.

    ``comparison`` is a stacked comparison with a ``model`` column
    (:func:`costmodel.validation.compare.compare_cluster`).
    """
    fig = go.Figure()
    measured = comparison.drop_duplicates(
        ["op", "ranks", "size_bytes", "placement"]
        if "placement" in comparison
        else ["op", "ranks", "size_bytes"]
    )
    for (op, ranks), g in measured.groupby(["op", "ranks"], sort=True):
        g = g.sort_values("size_bytes")
        fig.add_trace(
            go.Scatter(
                x=g.size_bytes.to_numpy(),
                y=g.measured_busbw_bytes_per_s.to_numpy(),
                mode="markers",
                name=f"{op} N={ranks} measured",
            )
        )
    for (op, ranks, model), g in comparison.groupby(["op", "ranks", "model"], sort=True):
        g = g.sort_values("size_bytes").drop_duplicates("size_bytes")
        fig.add_trace(
            go.Scatter(
                x=g.size_bytes.to_numpy(),
                y=g.predicted_busbw_bytes_per_s.to_numpy(),
                mode="lines",
                name=f"{op} N={ranks} {model}",
            )
        )
    fig.update_layout(
        title={"text": title},
        xaxis=_unit_axis("B", log=True, title="message size"),
        yaxis=_unit_axis("B/s", log=True, title="bus bandwidth (busbw)"),
        legend={"orientation": "h", "y": -0.3},
        margin={"t": 50, "b": 10},
    )
    return fig
