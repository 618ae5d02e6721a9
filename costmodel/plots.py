"""Plotly figures built from results, shared by the app, HTML reports and notebooks.

Every figure here takes results (DataFrames or result objects) and returns a
``plotly.graph_objects.Figure``; nothing here computes a model figure.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (used by the figure builders below)

from .units import format_duration

# --- app figures (costmodel/web): collectives, cluster, memory, DDP step, scaling ---------------
# Axes keep SI values (bytes, seconds, B/s) and let plotly print SI prefixes with the unit as a
# suffix ("256MB", "100µs", "400GB/s"), so hover text and ticks carry units. Each figure is built
# in one go from plain dicts (go.Figure(data=..., layout=...)): several times faster than
# add_trace/update_layout one by one, which keeps an app rerun within its 150 ms budget.

# minexponent 0: an SI prefix at every power (plotly's default, 3, writes 1e-3 and 1e3 without
# one: "100µs, 0.001s, 0.01s" and "1000B, 1MB" on one axis)
_SI_AXIS = {"exponentformat": "SI", "showexponent": "all", "minexponent": 0}
_LOG10_2 = 0.30102999566398120  # dtick of a log axis with a tick at every power of two


def _unit_axis(unit: str, *, log: bool = False, title: str = "") -> dict:
    axis = {**_SI_AXIS, "ticksuffix": unit, "title": {"text": title}}
    if log:
        axis["type"] = "log"
    return axis


# a long time axis in the unit a person reads it in, not SI multiples of a second ("10Ms")
_LONG_TIME_UNITS = ((86400.0, "days"), (3600.0, "h"), (60.0, "min"))


def _long_time_unit(end_s: float) -> tuple[float, str] | None:
    """The unit a time axis ending at ``end_s`` [s] is written in: ``(seconds per unit,
    name)`` of the largest of days, hours and minutes that ``end_s`` spans twice; None below
    two minutes (the axis keeps SI prefixes of a second).

    >>> _long_time_unit(2.5e7), _long_time_unit(1.2e5), _long_time_unit(90.0)
    ((86400.0, 'days'), (3600.0, 'h'), None)
    """
    end = float(end_s) if math.isfinite(end_s) else 0.0
    return next(((u, name) for u, name in _LONG_TIME_UNITS if end >= 2 * u), None)


def _axis_number(value: float) -> str:
    """A number in a long axis's unit, with no exponent: 3 significant digits, whole
    thousands separated (``1,234`` days, not ``1.23e+03``), and below a thousandth of the unit
    0, as the axis reads there (a start 1 ms into a step of hours is ``0 h``, not ``2.8e-07
    h``).

    >>> _axis_number(1234.5), _axis_number(10.72), _axis_number(2.8e-7)
    ('1,234', '10.7', '0')
    """
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 1e-3 else "0"


def _time_on_axis(value_s: float, unit: tuple[float, str], *, duration: bool = False) -> str:
    """``value_s`` [s] for hover text, in the unit of the long time axis it sits on
    (:func:`_long_time_unit`), so the hover reads as the ticks do: ``"12.3 h"``, not
    ``"44.3ks"``. A ``duration`` shorter than two minutes (a collective of milliseconds on an
    axis of hours) is written as :func:`costmodel.units.format_duration` writes it, SI seconds,
    as an axis that short would be: ``"2.5e-07 h"`` reads as nothing.

    >>> _time_on_axis(44280.0, (3600.0, "h")), _time_on_axis(0.0025, (3600.0, "h"), duration=True)
    ('12.3 h', '2.5 ms')
    """
    if duration and _long_time_unit(value_s) is None:
        return format_duration(value_s)
    seconds, name = unit
    return f"{_axis_number(value_s / seconds)} {name}"


def _time_axis(end_s: float, *, title: str) -> dict:
    """A linear time axis [s] from 0 to ``end_s``: SI prefixes of a second below two minutes
    (``ms``, ``s``, as :func:`costmodel.units.format_duration` writes), else ticks in minutes,
    hours or days (the largest unit that ``end_s`` spans twice) at a step of 1, 2 or 5 times a
    power of ten of that unit, at most 8 steps.

    >>> a = _time_axis(2.5e7, title="t")
    >>> a["ticktext"][:3], a["tickvals"][1]
    (['0 days', '50 days', '100 days'], 4320000.0)
    >>> _time_axis(90, title="t")["ticksuffix"]
    's'
    """
    unit = _long_time_unit(end_s)
    if unit is None:
        return _unit_axis("s", title=title)
    unit_s, name = unit
    span = float(end_s) / unit_s
    power = 10.0 ** math.floor(math.log10(span / 8))
    step = next(m * power for m in (1, 2, 5, 10) if span / (m * power) <= 8)
    n = math.ceil(span / step - 1e-9)
    values = [i * step for i in range(n + 1)]
    return {
        "title": {"text": title},
        "tickvals": [v * unit_s for v in values],
        "ticktext": [f"{v:g} {name}" for v in values],
    }


#: How :func:`_vline` draws its line, which its legend entry (:func:`_vline_entry`) repeats.
_VLINE = {"dash": "dot", "color": "grey"}


def _vline(x: float) -> dict:
    """A dotted grey vertical line at data value ``x``, across the plot (a shape takes the
    data value on a log axis too, plotly.js).

    It carries no label on the plot. Above the plot area one covered the title; at the line's
    foot the Cluster page's "one node" lay inside the cliff chart's shaded band, which reaches
    wherever the lines do (chromium, 390 px, 2026-12-04). A line that needs a name gets a legend
    entry (:func:`_vline_entry`).
    """
    pos = float(x)
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": pos,
        "x1": pos,
        "y0": 0,
        "y1": 1,
        "line": dict(_VLINE),
    }


def _vline_entry(name: str) -> dict:
    """A legend entry for :func:`_vline`'s line: ``name`` beside a dotted grey line symbol. It
    draws nothing in the plot (no points), so it neither labels over a curve or a band nor
    moves the axes' ranges."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "lines",
        "line": dict(_VLINE),
        "name": name,
        "hoverinfo": "skip",
    }


#: Height of plotly's toolbar (modebar) row at the top of a chart [px]: 4 px padding and 26 px
#: of buttons in plotly.js 3 (measured in chromium, 2026-12).
TOOLBAR_PX = 30

#: Characters per line of a chart's title. A title this long or shorter is one line at every
#: width; a longer one is broken into the fewest lines of at most this many, of even length
#: (:func:`title_lines`). At the app's 16 px bold title a character takes 7.2-7.9 px (chromium,
#: 2026-12), so a line of 56 is at most 442 px: whole on every desktop chart (980 px wide at a
#: 1440 px window, 482 px in the Cluster page's half columns). A narrower chart (a 390 px phone's
#: is 354-358 px) sets its titles smaller, by its own width, so that such a line still fits
#: (``costmodel.web.common``'s chart-title CSS: ``TITLE_CHARS * TITLE_CHAR_EM`` em per line). The
#: line was 40 characters at every width, for the phone: a 980 px chart broke a 99-character
#: title onto three lines of a third of its width.
TITLE_CHARS = 56

#: Width of a title's character over its font size (the widest measured, 7.9 px at 16 px bold,
#: rounded up): what one line of :data:`TITLE_CHARS` takes, in em.
TITLE_CHAR_EM = 0.5

#: Height of one line of a chart's title [px]: 21 px between a title's lines in the app, measured
#: in chromium (2026-12), rounded up.
TITLE_LINE_PX = 22


def clear_of_toolbar(figure: go.Figure) -> go.Figure:
    """Move a figure's title below the row plotly's toolbar takes, in place; returns it.

    Plotly centres the title in the top margin, where the toolbar appears on hover, or on a tap
    on a phone, and covers the title's right end (the whole title at 390 px). The title is set
    on the plot area's top edge (8 px above it) and the top margin holds its lines plus
    :data:`TOOLBAR_PX` above them, so the toolbar's row stays empty; a title longer than
    :data:`TITLE_CHARS` characters is broken onto lines (:func:`title_lines`).
    """
    title = figure.layout.title.text or ""
    lines = title_lines(title) if title else []
    top = TOOLBAR_PX + TITLE_LINE_PX * max(len(lines), 1) + 8
    figure.update_layout(
        title={
            "text": "<br>".join(lines),
            "y": 1,
            "yref": "paper",
            "yanchor": "bottom",
            # plotly anchors a title's first line, the others hang below it: lift them clear
            "pad": {"b": 8 + TITLE_LINE_PX * max(len(lines) - 1, 0)},
        },
        margin={"t": max(top, figure.layout.margin.t or 0)},
    )
    return figure


def title_lines(title: str) -> list[str]:
    """A chart's title as lines: one line up to :data:`TITLE_CHARS` characters, else the fewest
    lines of at most that many, as even in length as the words allow (no last line of one word).

    >>> title_lines("One step, A and B")
    ['One step, A and B']
    >>> title_lines("all-reduce time, every algorithm on dgx-h100, N = 8, M = 268 MB dotted "
    ...             "(o: the model's choice, x: crossovers)")  # 99 characters: two lines
    ['all-reduce time, every algorithm on dgx-h100, N = 8,', "M = 268 MB dotted (o: the model's choice, x: crossovers)"]
    """
    if len(title) <= TITLE_CHARS:
        return [title]
    lines = _wrap(title, TITLE_CHARS)
    for width in range(-(-len(title) // len(lines)), TITLE_CHARS):  # the narrowest that holds
        even = _wrap(title, width)
        if len(even) <= len(lines):
            return even
    return lines


def keep_labels_inside(figure: go.Figure) -> go.Figure:
    """Let every axis of a figure grow its margin to hold its tick labels and title, in place;
    returns it.

    Streamlit's plotly theme sets small fixed margins, so a long category label was drawn past
    the figure's edge: at 390 px the step timeline's row "gradient reduction" began at the
    chart's left edge with its first letters cut (chromium, 2026-12-03). Plotly's ``automargin``
    widens the margin by what the labels need, at every width; a figure whose labels fit keeps
    its margins.

    >>> f = keep_labels_inside(go.Figure(layout={"yaxis": {"title": {"text": "row"}}}))
    >>> f.layout.xaxis.automargin, f.layout.yaxis.automargin
    (True, True)
    """
    figure.update_xaxes(automargin=True)
    figure.update_yaxes(automargin=True)
    return figure


#: A phone's chart width [px]: a 390 px viewport's chart is 354-358 px wide (chromium, 2026-12).
PHONE_CHART_PX = 354

#: What a horizontal legend may take of a phone chart's row [px]: plotly keeps the plot's side
#: margins clear of it; 100 px less than the chart, so an estimate errs towards more rows.
PHONE_LEGEND_PX = PHONE_CHART_PX - 100

#: Width of one character of a legend entry [px]: 5.2-5.5 px at plotly's 12 px font, measured in
#: chromium (2026-12); 6 leaves room for wide glyphs. Plus the symbol and the gaps around it
#: (:data:`LEGEND_SYMBOL_PX`, 40 px measured: an entry of 10 characters was 92 px wide).
LEGEND_CHAR_PX = 6.0
LEGEND_SYMBOL_PX = 40.0

#: Height of a legend row [px]: 19 px for a one-line entry and 15 px more per extra line (a
#: two-line entry's row was 34 px), measured in chromium (2026-12); plus the legend's padding.
LEGEND_ROW_PX = 19.0
LEGEND_LINE_PX = 15.0
LEGEND_PAD_PX = 10.0

#: The x axis below the plot area, its tick labels and its title [px] (about 50 measured).
X_AXIS_PX = 60.0

#: The least height of a chart's plot area [px] at any width: below it the bars or lines of a
#: chart cannot be told apart (the HSDP timeline's was 13 px at 390 px under its legend).
MIN_PLOT_PX = 160.0

#: Height plotly gives a figure that sets none [px].
PLOTLY_DEFAULT_HEIGHT_PX = 450


def _legend_entries(figure: go.Figure) -> list[str]:
    """The names a figure's legend shows: every named trace not hidden from it (one per
    legend group); none where the layout hides the legend or plotly would (a single trace in
    the legend: a memory chart's one part beside its totals' text, which has none)."""
    shown = figure.layout.showlegend
    listed = [trace for trace in figure.data if trace.showlegend is not False]
    if shown is False or (shown is None and len(listed) < 2):
        return []
    names: list[str] = []
    groups: set[str] = set()
    for trace in figure.data:
        if trace.showlegend is False or not trace.name:
            continue
        group = getattr(trace, "legendgroup", None)
        if group:
            if group in groups:
                continue
            groups.add(group)
        names.append(str(trace.name))
    return names


def phone_legend_px(names: list[str]) -> float:
    """Height [px] a horizontal legend of ``names`` takes on a phone's chart.

    Plotly lays a horizontal legend on one row when every entry fits; otherwise each entry takes
    the widest entry's width, so a row holds ``floor(width / widest)`` entries (plotly.js
    legend ``computeLegendDimensions``). An entry's width is its longest line (``<br>`` breaks
    lines) at :data:`LEGEND_CHAR_PX` plus :data:`LEGEND_SYMBOL_PX`; a row is as tall as its
    tallest entry.

    >>> phone_legend_px([]), phone_legend_px(["forward", "backward"])
    (0.0, 29.0)
    >>> phone_legend_px(["all-reduce N=8 auto predicted"] * 4)  # one a row: 4 x 19 + 10
    86.0
    """
    return _legend_rows_px(names, PHONE_LEGEND_PX) + LEGEND_PAD_PX if names else 0.0


def _legend_rows_px(names: list[str], row_px: float) -> float:
    """Height [px] of the rows a horizontal legend of ``names`` takes where a row holds
    ``row_px`` (:func:`phone_legend_px`'s rule, without the legend's padding).

    >>> _legend_rows_px(["forward", "backward"], 880.0)
    19.0
    >>> _legend_rows_px(["compute", "exposed<br>(shaded)<br>slowed"], 880.0)  # one row, 3 lines
    49.0
    """
    if not names:
        return 0.0
    lines = [re.split(r"<br\s*/?>", n, flags=re.I) for n in names]
    widths = [LEGEND_SYMBOL_PX + LEGEND_CHAR_PX * max(len(x) for x in ls) for ls in lines]
    heights = [LEGEND_ROW_PX + LEGEND_LINE_PX * (len(ls) - 1) for ls in lines]
    if sum(widths) <= row_px:
        per_row = len(names)
    else:
        per_row = max(1, int(row_px // max(widths)))
    rows = [heights[i : i + per_row] for i in range(0, len(heights), per_row)]
    return float(sum(max(r) for r in rows))


def keep_plot_height(figure: go.Figure) -> go.Figure:
    """Make a figure tall enough that its plot area keeps :data:`MIN_PLOT_PX` under its
    legend on a phone, in place; returns it.

    A figure has one height at every width, and a horizontal legend at its foot wraps into
    more rows the narrower the chart: at 390 px the HSDP timeline's eight entries took a row
    each and left its 300 px figure a 13 px plot area. The height grows to the top margin (the
    title, :func:`clear_of_toolbar`) + :data:`MIN_PLOT_PX` + :data:`X_AXIS_PX` + the legend's
    height on a phone (:func:`phone_legend_px`); a figure already that tall is left alone.
    """
    legend = phone_legend_px(_legend_entries(figure))
    if not legend:
        return figure
    top = figure.layout.margin.t or 0
    bottom = figure.layout.margin.b or 0
    needed = top + MIN_PLOT_PX + X_AXIS_PX + bottom + legend
    height = figure.layout.height or PLOTLY_DEFAULT_HEIGHT_PX
    if needed > height:
        figure.update_layout(height=math.ceil(needed))
    return figure


#: A desktop chart's width [px]: a 1440 px window's chart is 980 px wide (chromium, 2026-12-03);
#: a legend row holds 100 px less, as on a phone (:data:`PHONE_LEGEND_PX`).
DESKTOP_CHART_PX = 980

#: What plotly's automargin gave a titled x axis under the plot area (tick labels and title) in
#: the app at 1440 px: 55 px on the step page's timeline and bucket_cap charts (chromium,
#: 2026-12-03; Streamlit's theme fonts), with 3 px to spare.
X_AXIS_TITLED_PX = 58.0

#: The same for an x axis with tick labels and no title: 25 px (the Memory page's ZeRO stages,
#: chromium, 2026-12-03), with 2 px to spare.
X_AXIS_UNTITLED_PX = 27.0

#: Beside a titled y axis with automatic tick labels, what plotly's automargin gave besides the
#: labels themselves: 43 px (the bucket_cap chart: 73 px for 5-character labels "2.2ms" of 30 px;
#: the Memory page's: 75 px for "120GB" of 32 px; chromium, 2026-12-03), rounded up.
Y_AXIS_TITLED_PX = 44.0

#: Characters of the widest automatic tick label a y axis is given room for (SI labels are 2-6:
#: "0s", "15ms", "2.2ms", "1.25ms"); a wider one makes plotly grow the margin as before.
Y_TICK_CHARS = 6


def reserve_margins(figure: go.Figure) -> go.Figure:
    """Give a figure, in place, the bottom and left margins plotly's automargin grows them to
    on a desktop chart (:data:`DESKTOP_CHART_PX`), so that plotly draws it once; returns it.

    With ``automargin`` (:func:`keep_labels_inside`) and a legend at the figure's foot,
    plotly draws every trace, then measures the axes and the legend, finds that its margins
    must grow, and draws the whole figure again: the step page's timeline (580 bars) was drawn
    twice before it appeared, and the bucket_cap chart below it, drawn in the same task, twice
    too (chromium, 2026-12-03). Margins already as large as what is measured are kept and
    nothing is drawn again. Bottom: :data:`X_AXIS_TITLED_PX` under a titled x axis
    (:data:`X_AXIS_UNTITLED_PX` under one with tick labels only) plus the
    legend at the figure's foot (:func:`_legend`: its rows, one where the entries fit, and
    :data:`LEGEND_PAD_PX`; the timeline's measured 45 px, b = 99.8 px in all); left,
    where the figure sets none and the y axis has a title and automatic ticks:
    :data:`Y_AXIS_TITLED_PX` plus :data:`Y_TICK_CHARS` characters. A margin already larger is
    kept; where the estimate falls short (a phone's legend of several rows, a wider label) plotly
    grows the margin as it did. Call it after :func:`keep_plot_height`, which sizes the plot
    area from the margins set before.

    >>> f = reserve_margins(go.Figure(layout={"xaxis": {"title": {"text": "t"}},
    ...                                       "yaxis": {"title": {"text": "exposed"}}}))
    >>> f.layout.margin.b, f.layout.margin.l
    (58, 80)
    """
    layout = figure.layout
    margin: dict[str, int] = {}
    if layout.xaxis.showticklabels is not False:
        legend = layout.legend
        at_foot = legend.orientation == "h" and legend.yref == "container" and legend.y == 0
        entries = _legend_entries(figure) if at_foot else []
        legend_px = _legend_rows_px(entries, DESKTOP_CHART_PX - 100)
        axis = X_AXIS_TITLED_PX if layout.xaxis.title.text else X_AXIS_UNTITLED_PX
        bottom = axis + (legend_px + LEGEND_PAD_PX if entries else 0.0)
        margin["b"] = max(layout.margin.b or 0, math.ceil(bottom))
    y = layout.yaxis
    if y.title.text and layout.margin.l is None and y.tickvals is None and y.type != "category":
        margin["l"] = math.ceil(Y_AXIS_TITLED_PX + Y_TICK_CHARS * LEGEND_CHAR_PX)
    if margin:
        figure.update_layout(margin=margin)
    return figure


_UNIT = re.compile(r"^[kMGTPmµn]?(B|s|B/s|params|GPUs?)[,.;:)]*$")


def _wrap(text: str, width: int) -> list[str]:
    """Break ``text`` at spaces into lines of at most ``width`` characters.

    A value stays on one line with its unit and its name: "M = 268 MB" is never split. A word
    longer than a line (a log's file name) is broken after a ``-``, ``_``, ``.`` or ``/``, or at
    ``width`` where it has none.
    """
    words: list[str] = []
    glue = False
    for token in text.split(" "):
        if words and (glue or token == "=" or _UNIT.match(token)):
            words[-1] += " " + token
        else:
            words.append(token)
        glue = token == "="
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
            continue
        while len(word) > width and " " not in word:  # a file name: break after - _ . /
            cut = max(word.rfind(c, 0, width) for c in "-_./") + 1 or width
            lines.append(word[:cut])
            word = word[cut:]
        lines.append(word)
    return lines


def _legend() -> dict:
    """A horizontal legend at the figure's foot, below the x axis's title however many rows it
    wraps to (plotly makes room for it). Placed at a fraction of the plot's height below it
    instead, a legend of several rows on a phone rose over the axis title."""
    return {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"}


def _crossover_traces(marks, y: str, labels: list, unit: str) -> list[dict]:
    """Black x markers where the fastest algorithm changes (``message_bytes`` and ``y`` columns
    of ``marks``), one legend entry each, smallest size first: its label and its size
    ("tree → nvls_tree at 33.6 MB").

    The labels are in the legend, not beside their points: a crossover sits on the curves it
    separates, so a label there lies over them, and on a 390 px phone "tree → nvls_tree" of
    the Collectives page's chart covered the curves it named (chromium, 2026-12-03). The
    legend stands below the plot (:func:`_legend`) and the figure grows for its rows
    (:func:`keep_plot_height`).
    """
    from .units import format_bytes

    xs, ys = marks["message_bytes"].to_numpy(), marks[y].to_numpy()
    order = np.argsort(xs, kind="stable")  # the legend lists them along the size axis
    return [
        {
            "type": "scatter",
            "x": [x],
            "y": [value],
            "mode": "markers",
            "name": f"{text} at {format_bytes(float(x))}",
            "text": [str(text)],
            "marker": {"symbol": "x", "size": 11, "color": "black"},
            "hovertemplate": f"crossover at %{{x:.3s}}B: %{{y:.3s}}{unit}<extra>%{{text}}</extra>",
        }
        for x, value, text in ((xs[i], ys[i], labels[i]) for i in order)
    ]


def _size_layout(title: str, unit: str, is_time: bool, selected_bytes: float | None) -> dict:
    """Layout of a time or busbw against message size chart (log axes, the chosen size marked)."""
    layout: dict = {
        "title": {"text": title},
        "xaxis": _unit_axis("B", log=True, title="message size M (per rank)"),
        "yaxis": _unit_axis(unit, log=is_time, title="time" if is_time else "bus bandwidth"),
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
        "hovermode": "closest",
    }
    if selected_bytes is not None:
        layout["shapes"] = [_vline(selected_bytes)]
    return layout


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
        data += _crossover_traces(marks, y, marks["label"].tolist(), unit)
    return go.Figure(data=data, layout=_size_layout(title, unit, is_time, selected_bytes))


def algorithms_on_cluster_figure(
    frame,
    *,
    y: str = "time_s",
    crossovers=None,
    selected_bytes: float | None = None,
    pinned=None,
    pinned_label: str = "B",
    title: str = "",
) -> go.Figure:
    """Every algorithm of one model on one cluster against size, the model's choice marked.

    Parameters
    ----------
    frame : pandas.DataFrame
        :attr:`costmodel.predict.AlgorithmComparison.frame`: ``algorithm``, ``message_bytes``
        [B], ``y`` (``time_s`` [s] or ``busbw_bytes_per_s`` [B/s]) and ``chosen``.
    crossovers : pandas.DataFrame, optional
        :attr:`~costmodel.predict.AlgorithmComparison.crossovers`: marked with an x and
        ``below -> above``.
    selected_bytes : float, optional
        The size asked about, a dotted vertical line [B].
    pinned : pandas.DataFrame, optional
        A second configuration's frame: its chosen curve is overlaid (dashed, ``pinned_label``).
    """
    is_time = y == "time_s"
    unit = "s" if is_time else "B/s"
    data = [
        {
            "type": "scatter",
            "x": part["message_bytes"].to_numpy(),
            "y": part[y].to_numpy(),
            "mode": "lines",
            "name": str(name),
            "hovertemplate": f"%{{x:.3s}}B: %{{y:.3s}}{unit}<extra>{name}</extra>",
        }
        for name, part in frame.groupby("algorithm", sort=False)
    ]
    chosen = frame[frame["chosen"]].sort_values("message_bytes")
    data.append(
        {
            "type": "scatter",
            "x": chosen["message_bytes"].to_numpy(),
            "y": chosen[y].to_numpy(),
            "mode": "markers",
            "name": "model's choice",
            "text": chosen["algorithm"].tolist(),
            "marker": {"symbol": "circle-open", "size": 9, "color": "black"},
            "hovertemplate": f"%{{x:.3s}}B: %{{y:.3s}}{unit}<extra>choice: %{{text}}</extra>",
        }
    )
    if pinned is not None and len(pinned):
        pin = pinned[pinned["chosen"]].sort_values("message_bytes")
        data.append(
            {
                "type": "scatter",
                "x": pin["message_bytes"].to_numpy(),
                "y": pin[y].to_numpy(),
                "mode": "lines",
                "name": pinned_label,
                "text": pin["algorithm"].tolist(),
                "line": {"dash": "dash", "color": "black", "width": 2},
                "hovertemplate": f"%{{x:.3s}}B: %{{y:.3s}}{unit}<extra>{pinned_label}: "
                "%{text}</extra>",
            }
        )
    if crossovers is not None and len(crossovers) and y in crossovers.columns:
        labels = [
            f"{a} → {b}"
            for a, b in zip(crossovers["faster_below"], crossovers["faster_above"], strict=True)
        ]
        data += _crossover_traces(crossovers, y, labels, unit)
    return go.Figure(data=data, layout=_size_layout(title, unit, is_time, selected_bytes))


#: Height a bar's total takes above the point it is set on [px]: its box was 16 px tall in the
#: app ("37.1 GB", chromium at 1440 and 390 px, 2026-12-05); 20 leaves room for a larger font,
#: so that a label is moved whenever it might reach a line.
BAR_LABEL_PX = 20.0

#: Gap kept between a limit line and a bar's total set just above it [px]: the line's own
#: width (2 px) and a pixel of air.
BAR_LABEL_GAP_PX = 3.0


def total_label_y(totals_bytes, limits_bytes, top_bytes: float) -> np.ndarray:
    r"""Where each bar's total is written [B]: on its bar's top, or just above its limit line
    where that line would pass through the label set on the bar's top.

    Parameters
    ----------
    totals_bytes : array_like
        Each bar's total [B], where its label is set (``textposition="top center"``).
    limits_bytes : array_like
        Each bar's limit line [B] (its GPU's memory); NaN where the bar has none.
    top_bytes : float
        The y axis's upper end [B]; the axis starts at 0.

    Notes
    -----
    A label set at :math:`y` takes :math:`[y - g, y + h]` of the axis, with
    :math:`h = p_h / P \, T` and :math:`g = p_g / P \, T` for :math:`p_h` =
    :data:`BAR_LABEL_PX`, :math:`p_g` = :data:`BAR_LABEL_GAP_PX`, :math:`T` = ``top_bytes``
    and :math:`P` = :data:`MIN_PLOT_PX`, the least plot area a chart is given (a taller plot
    area's label takes less of the axis, so the test errs towards moving a label). A line at
    :math:`c` with :math:`y - g < c < y + h` would cross it: the label is set at
    :math:`c + g` instead, on the line, over its bar. Llama-3.1-70B under ZeRO-3 on 64 ranks
    with full recompute (37.1 GB beside ZeRO-0's 1.28 TB, a GPU of 85.5 GB): the line ran
    through "37.1 GB" at 390 and 1440 px (chromium, 2026-12-05).

    >>> total_label_y([10.0, 95.0, 200.0], [100.0, 100.0, float("nan")], 320.0)
    array([ 10., 106., 200.])
    """
    totals = np.asarray(totals_bytes, dtype=float)
    limits = np.asarray(limits_bytes, dtype=float)
    per_px = float(top_bytes) / MIN_PLOT_PX
    height, gap = BAR_LABEL_PX * per_px, BAR_LABEL_GAP_PX * per_px
    crossed = (totals - gap < limits) & (limits < totals + height)
    return np.where(crossed, limits + gap, totals)


def memory_axis_top(totals_bytes, limits_bytes) -> float:
    r"""Upper end of a memory chart's y axis [B]: room above the highest bar or limit line
    for a label set on it (:func:`total_label_y`).

    Notes
    -----
    :math:`T = m / (1 - (p_h + p_g) / P)` for the highest bar or line :math:`m`, so that a
    label set on it (:math:`p_h + p_g` px of the least plot area :math:`P`) stays inside.

    >>> round(memory_axis_top([100.0, 50.0], [80.0, 80.0]), 1)
    116.8
    """
    values = np.concatenate(
        [np.asarray(totals_bytes, dtype=float).ravel(), np.asarray(limits_bytes, float).ravel()]
    )
    peak = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
    return peak / (1.0 - (BAR_LABEL_PX + BAR_LABEL_GAP_PX) / MIN_PLOT_PX) if peak > 0 else 1.0


def _memory_bars(frame, limits: dict, *, title: str) -> go.Figure:
    """The stacked bars of :func:`memory_stack_figure` and :func:`memory_compare_figure`, each
    bar's total written above it clear of ``limits`` (config -> its line [B])."""
    from .units import format_bytes

    # each bar's name on lines of ROW_LABEL_CHARS, level: plotly tilted the Memory page's long
    # A and B names ("A: llama-3.1-8b, N = 8, ZeRO-0, h100-sxm") on a 390 px phone, and they
    # took most of the chart's height (a plot area of 87 px; chromium, 2026-12-03)
    configs = [str(c) for c in dict.fromkeys(frame["config"])]
    totals = frame.groupby("config", sort=False)["bytes"].sum().to_numpy(dtype=float)
    lines = np.array([float(limits.get(c, np.nan)) for c in configs])
    top = memory_axis_top(totals, lines)
    data = [
        {
            "type": "bar",
            "x": rows["config"].tolist(),
            "y": rows["bytes"].to_numpy(),
            "name": str(part),
            "hovertemplate": "%{x}: %{y:.3s}B<extra>" + str(part) + "</extra>",
        }
        for part, rows in frame.groupby("part", sort=False)
        if (rows["bytes"] != 0).any()
    ]
    data.append(  # each bar's total above it: a sliver beside a tall bar is read by its number
        {
            "type": "scatter",
            "x": configs,
            "y": total_label_y(totals, lines, top),
            "text": [format_bytes(float(t)) for t in totals],
            "mode": "text",
            "textposition": "top center",
            "cliponaxis": False,
            "showlegend": False,
            "hoverinfo": "skip",
        }
    )
    layout: dict[str, Any] = {
        "barmode": "stack",
        "title": {"text": title},
        "xaxis": {
            "tickmode": "array",
            "tickvals": configs,
            "ticktext": ["<br>".join(_wrap(c, ROW_LABEL_CHARS)) for c in configs],
            "tickangle": 0,
        },
        # the range set: the labels' places are computed from it (total_label_y)
        "yaxis": {**_unit_axis("B", title="memory per GPU"), "range": [0.0, top]},
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
    }
    return go.Figure(data=data, layout=layout)


#: How :func:`memory_stack_figure` draws the GPU's memory, which its legend entry repeats.
_LIMIT_LINE = {"color": "red", "dash": "dash"}


def memory_stack_figure(
    frame, *, capacity_bytes: float | None = None, title: str = ""
) -> go.Figure:
    """Stacked bars of the memory one GPU holds, part by part, against the GPU's memory line,
    each bar's total written above it.

    Parameters
    ----------
    frame : pandas.DataFrame
        Long format: ``config`` (one bar each), ``part`` and ``bytes`` [B].
    capacity_bytes : float, optional
        The GPU's memory [B], drawn as a horizontal line named in the legend.

    Notes
    -----
    On a linear axis a sharded bar beside an unsharded one is a sliver (Llama-3.1-70B on 64
    ranks: ZeRO-3's model state 25.3 GB beside ZeRO-0's 1.27 TB), so each bar's total, the sum of its
    parts [B], is written above it (:func:`costmodel.units.format_bytes`, as the page's metrics
    and table write it). The axis stays linear: a log axis would draw a stack's upper parts
    shorter than its lower ones. A part no bar holds (activations left out, no CUDA context)
    adds nothing to any stack and is left out of the chart and its legend; the page's table
    lists every part.

    A total the GPU's memory line would pass through is written just above the line instead
    (:func:`total_label_y`), and the line's name, "GPU memory 85.5 GB", is its legend entry:
    written on the plot above the line's left end it lay where the first bar's total is
    raised to.
    """
    from .units import format_bytes

    configs = [str(c) for c in dict.fromkeys(frame["config"])]
    limits = {} if capacity_bytes is None else dict.fromkeys(configs, float(capacity_bytes))
    figure = _memory_bars(frame, limits, title=title)
    if capacity_bytes is not None:
        figure.update_layout(
            shapes=[
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "yref": "y",
                    "y0": capacity_bytes,
                    "y1": capacity_bytes,
                    "line": dict(_LIMIT_LINE),
                }
            ]
        )
        figure.add_trace(  # the line's name: a legend entry that draws nothing in the plot
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "lines",
                "line": dict(_LIMIT_LINE),
                "name": f"GPU memory {format_bytes(capacity_bytes)}",
                "hoverinfo": "skip",
            }
        )
    return figure


_TIMELINE_COLORS = {
    "forward": "#4C78A8",
    "backward": "#72B7B2",
    "recompute": "#B279A2",
    "optimizer": "#9D755D",
    "sync": "#BAB0AC",
    "host": "#D8B5A5",
    "allreduce": "#F58518",
    "all_reduce": "#F58518",
    "reduce_scatter": "#E45756",
    "all_gather": "#54A24B",
}
_COMPUTE_KINDS = ("forward", "backward", "recompute", "optimizer", "sync", "host")
#: A timeline's communication rows, one per stream (:mod:`costmodel.strategy`): zero1/zero2's
#: parameter gathers and gradient reductions; fsdp/hsdp's shard group (its gathers and
#: reduce-scatters, one communicator, one at a time) and hsdp's all-reduces across groups.
_STREAM_ROWS = {
    "params": "all-gathers",
    "grads": "gradient reduction",
    "shard": "shard group",
    "replicate": "across groups",
}


def _timeline_row(iv: dict) -> str:
    if iv["kind"] in _COMPUTE_KINDS:
        return "compute"
    return _STREAM_ROWS.get(str(iv.get("stream") or ""), "communication")


#: Space between a row label and the figure's left edge [px]: plotly's automargin fits the
#: labels exactly, so the first letter of the longest one touched the edge of the chart.
LABEL_EDGE_PX = 8.0

#: Space between a row label's right end and the axis [px] (plotly's tick standoff, about 4 px
#: measured, with room to spare).
LABEL_GAP_PX = 6.0


#: Characters per line of a configuration's name on the side-by-side step chart ("A:
#: llama-2-7b on dgx-h100 x 4, ddp" on two lines): on one line it took half a phone's chart.
ROW_LABEL_CHARS = 18


def _row_labels(lines: list[list[str]]) -> dict:
    """A category axis's tick labels, each row's name as ``lines`` (one list of lines a row),
    and the room they need: ``{"ticktext": ..., "margin_l": px}``. The left margin holds the
    longest line at :data:`LEGEND_CHAR_PX` per character, plus :data:`LABEL_GAP_PX` to the axis
    and :data:`LABEL_EDGE_PX` to the figure's edge (plotly's automargin alone fits labels to the
    pixel, a first letter at the very edge).

    >>> _row_labels([["gradient", "reduction"], ["compute"]])   # 9 characters: 54 + 14
    {'ticktext': ['gradient<br>reduction', 'compute'], 'margin_l': 68}
    """
    longest = max((len(x) for ls in lines for x in ls), default=0)
    return {
        "ticktext": ["<br>".join(ls) for ls in lines],
        "margin_l": math.ceil(longest * LEGEND_CHAR_PX + LABEL_GAP_PX + LABEL_EDGE_PX),
    }


#: Bars of one kind a timeline draws one by one; above this many (a model of tens of thousands of
#: tensors makes as many DDP buckets, each a backward segment and an all-reduce), bars closer
#: than :data:`TIMELINE_JOIN_FRACTION` of the step are drawn as one. 90,000 SVG bars (9 MB of
#: figure for deepseek-v3) held the browser about 30 s, the page frozen.
TIMELINE_MAX_BARS = 5000

#: Intervals of one kind and row closer than this share of the step are drawn as one bar when
#: there are more than :data:`TIMELINE_MAX_BARS`: under a pixel apart on any screen's chart.
TIMELINE_JOIN_FRACTION = 1 / 4000

#: A timeline bar narrower than this share of the step is drawn without the white outline that
#: parts a bar from its neighbour. The outline (0.5 px a side) is as wide on every screen: a 7B
#: model's 289 DDP buckets made each backward segment and all-reduce about half a pixel on a
#: 390 px phone's chart (about 270 px of plot), so the row read as white stripes, not the
#: legend's teal and orange, and at 1440 px as pale stripes (chromium, 2026-12-05). At a
#: fiftieth of the step a bar is about 5 px on that phone, the outlines a fifth of it; narrower
#: neighbours of one kind are drawn as one block of their colour.
TIMELINE_OUTLINE_MIN_FRACTION = 1 / 50


def _drawn_bars(ivs: list[dict], step_time_s: float) -> list[dict]:
    """The bars a timeline draws for one kind: ``ivs`` as they are, or, above
    :data:`TIMELINE_MAX_BARS`, runs on one row with gaps under :data:`TIMELINE_JOIN_FRACTION`
    of the step joined into one bar (from the first start to the last end, the bytes summed, the
    hover naming the first and last interval and how many). The timeline's table keeps every
    interval; only the picture is coarser than a pixel.

    >>> ivs = [{"kind": "all_reduce", "start_s": k, "end_s": k + 1.0, "label": f"bucket {k}",
    ...         "message_bytes": 2.0} for k in range(6000)]
    >>> [(b["start_s"], b["end_s"], b["message_bytes"]) for b in _drawn_bars(ivs, 6000.0)]
    [(0, 6000.0, 12000.0)]
    >>> _drawn_bars(ivs, 6000.0)[0]["label"]
    'bucket 0 to bucket 5999 (6,000 intervals drawn as one bar)'
    """
    if len(ivs) <= TIMELINE_MAX_BARS:
        return ivs
    tol = TIMELINE_JOIN_FRACTION * float(step_time_s)
    out: list[dict] = []
    by_row: dict[str, list[dict]] = {}
    for iv in ivs:
        by_row.setdefault(_timeline_row(iv), []).append(iv)
    for row in by_row.values():
        row.sort(key=lambda v: float(v["start_s"]))
        run = [row[0]]
        end = float(row[0]["end_s"])
        nxt: dict | None
        for nxt in [*row[1:], None]:
            if nxt is not None and float(nxt["start_s"]) - end <= tol:
                run.append(nxt)
                end = max(end, float(nxt["end_s"]))
                continue
            first, last = run[0], run[-1]
            if len(run) == 1:
                out.append(first)
            else:
                out.append(
                    {
                        **first,
                        "end_s": end,
                        "message_bytes": sum(float(v.get("message_bytes") or 0.0) for v in run),
                        "label": f"{first.get('label') or first['kind']} to "
                        f"{last.get('label') or last['kind']} ({len(run):,} intervals drawn "
                        "as one bar)",
                    }
                )
            if nxt is not None:
                run, end = [nxt], float(nxt["end_s"])
    return out


def _outline_widths(ivs: list[dict], step_time_s: float) -> float | np.ndarray:
    """The white outline's width [px] of each bar in ``ivs``: 0.5, or 0 for a bar narrower than
    :data:`TIMELINE_OUTLINE_MIN_FRACTION` of the step (its outline would hide its colour); one
    number where every bar has the same (the step page's first chart stays as light as it was:
    an array a bar added 2-3 kB before it, tests/test_first_view.py).

    >>> _outline_widths([{"start_s": 0.0, "end_s": 0.5}, {"start_s": 0.5, "end_s": 0.51}], 1.0)
    array([0.5, 0. ])
    >>> _outline_widths([{"start_s": 0.0, "end_s": 0.01}, {"start_s": 0.5, "end_s": 0.51}], 1.0)
    0.0
    """
    lengths = np.array([float(iv["end_s"]) - float(iv["start_s"]) for iv in ivs], dtype=float)
    widths = np.where(lengths >= TIMELINE_OUTLINE_MIN_FRACTION * float(step_time_s), 0.5, 0.0)
    return float(widths[0]) if len(widths) and (widths == widths[0]).all() else widths


def compute_gaps(timeline, step_time_s: float) -> list[tuple[float, float]]:
    """The spans of the step where no compute runs (the compute row's gaps and its tail) [s].

    >>> compute_gaps([{"kind": "forward", "start_s": 0, "end_s": 1},
    ...               {"kind": "backward", "start_s": 1.5, "end_s": 2}], 3.0)
    [(1.0, 1.5), (2.0, 3.0)]
    """
    bars = sorted(
        (float(iv["start_s"]), float(iv["end_s"]))
        for iv in timeline
        if iv["kind"] in _COMPUTE_KINDS and iv["end_s"] > iv["start_s"]
    )
    gaps, t = [], 0.0
    for a, b in bars:
        if a > t + 1e-12 * max(1.0, step_time_s):
            gaps.append((t, a))
        t = max(t, b)
    if step_time_s > t + 1e-12 * max(1.0, step_time_s):
        gaps.append((t, float(step_time_s)))
    return gaps


def ddp_timeline_figure(
    timeline, *, compute_s: float, step_time_s: float, title: str = ""
) -> go.Figure:
    """Gantt chart of one training step: compute on one row, collectives on their streams.

    Parameters
    ----------
    timeline : list of dict
        Intervals with ``kind`` (``forward``, ``backward``, ``recompute``, ``all_gather``,
        ``reduce_scatter``, ``all_reduce``; ddp_step's ``allreduce``), ``start_s``, ``end_s``
        [s], ``label``, ``message_bytes`` [B] and optionally ``stream`` (``params``: the
        all-gathers; ``grads``: the gradient reductions; ``shard``: fsdp/hsdp's gathers and
        reduce-scatters; ``replicate``: hsdp's all-reduces across groups), as
        :mod:`costmodel.strategy` or
        :class:`costmodel.ddp.Interval` give them.
    compute_s, step_time_s : float
        Compute work and step [s]. The spans where no compute runs are shaded (the exposed
        communication the step waits on); with overlap contention the rest of the exposed time,
        less the optimizer step and FSDP's sync (compute-row work outside ``compute_s``), is
        compute slowed under communication.
    """
    data: list[dict[str, Any]] = []
    unit = _long_time_unit(step_time_s)  # the axis's unit (None: SI seconds)
    rows = list(dict.fromkeys(_timeline_row(iv) for iv in timeline))
    for kind in dict.fromkeys(iv["kind"] for iv in timeline):  # one trace per kind
        ivs = _drawn_bars([iv for iv in timeline if iv["kind"] == kind], step_time_s)
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": kind.replace("_", "-"),
                # numpy arrays, not lists: plotly validates a list element by element (~100 ms
                # for a 7B model's few hundred buckets), an array in one pass
                "base": np.array([iv["start_s"] for iv in ivs], dtype=float),
                "x": np.array([iv["end_s"] - iv["start_s"] for iv in ivs], dtype=float),
                "y": np.array([_timeline_row(iv) for iv in ivs]),
                "marker": {
                    "color": _TIMELINE_COLORS.get(kind, "grey"),
                    "line": {"color": "white", "width": _outline_widths(ivs, step_time_s)},
                },
                # numbers and text apart (an object array is deep-copied element by element);
                # plotly's %{x} on a bar with a base is where the bar ends, not its length:
                # the hover reads the start and the duration from customdata instead
                "customdata": np.array(
                    [
                        [iv.get("message_bytes") or 0.0, iv["start_s"], iv["end_s"] - iv["start_s"]]
                        for iv in ivs
                    ],
                    dtype=float,
                ),
                "hovertext": np.array([iv.get("label") or kind for iv in ivs]),
                "hovertemplate": "%{hovertext}: from %{customdata[1]:.3s}s, "
                "%{customdata[2]:.3s}s long, %{customdata[0]:.3s}B" + f"<extra>{kind}</extra>",
            }
        )
        if unit is not None:  # the axis reads in min, h or days: the hover in the same unit
            data[-1]["text"] = np.array(
                [
                    f"from {_time_on_axis(iv['start_s'], unit)}, "
                    f"{_time_on_axis(iv['end_s'] - iv['start_s'], unit, duration=True)} long"
                    for iv in ivs
                ]
            )
            data[-1]["textposition"] = "none"  # hover only, not written on the bars
            data[-1]["hovertemplate"] = (
                "%{hovertext}: %{text}, %{customdata[0]:.3s}B" + f"<extra>{kind}</extra>"
            )
    order = [r for r in (*_STREAM_ROWS.values(), "communication") if r in rows]
    rows_shown = [*order, "compute"]
    # a row's name a word a line: "gradient reduction" on one line took a quarter of a phone's
    # chart and began at its very edge, its first letter cut
    ticks = _row_labels([r.split() for r in rows_shown])
    layout = {
        "barmode": "overlay",
        "title": {"text": title},
        "xaxis": _time_axis(step_time_s, title="time within the step"),
        "yaxis": {
            "categoryorder": "array",
            "categoryarray": rows_shown,
            "tickmode": "array",
            "tickvals": rows_shown,
            "ticktext": ticks["ticktext"],
            "automargin": True,
        },
        "legend": _legend(),
        "margin": {"t": 50, "b": 10, "l": ticks["margin_l"]},
        "height": 300,
    }
    gaps = compute_gaps(timeline, step_time_s) if timeline else []
    idle = sum(b - a for a, b in gaps)
    exposed = max(0.0, step_time_s - compute_s)
    if gaps:
        layout["shapes"] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": a,
                "x1": b,
                "y0": 0,
                "y1": 1,
                "fillcolor": "red",
                "opacity": 0.15,
                "line": {"width": 0},
            }
            for a, b in gaps[:500]
        ]
    # the optimizer step, FSDP's end-of-step sync and DDP's host time sit on the compute row but
    # are not part of compute_s (forward + backward + recompute): neither idle nor slowed compute
    extra = sum(
        float(iv["end_s"]) - float(iv["start_s"])
        for iv in timeline
        if iv["kind"] in ("optimizer", "sync", "host")
    )
    if exposed > 0:
        slowed = exposed - idle - extra
        text = "exposed communication<br>(shaded: compute waits)"
        if slowed > 1e-6 * max(step_time_s, 1e-30):
            text += f";<br>compute slowed under communication: {format_duration(slowed)} more"
        # a legend entry, not a note at the first wait: that sits near the right end, and a
        # phone's chart cut the note to "exposed"; the legend wraps with the chart's width
        data.append(
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "markers",
                "marker": {"symbol": "square", "size": 12, "color": "rgba(255, 0, 0, 0.15)"},
                "name": text,
                "hoverinfo": "skip",
            }
        )
    return go.Figure(data=data, layout=layout)


def _efficiency_axis_top(columns: list) -> float:
    """The top of a scaling-efficiency axis [%]: 105, or 5 above the largest point (a
    sharded strategy can scale superlinearly)."""
    tops = [float(np.nanmax(np.asarray(c, dtype=float))) for c in columns if len(c)]
    top = max((t for t in tops if math.isfinite(t)), default=1.0)
    return max(105.0, 100.0 * top + 5.0)


def _end_positions(n: int) -> list[str]:
    """Text positions of ``n`` labelled points along x: above each point, the first one's
    label to its right and the last one's to its left, so neither runs past the plot area,
    which clips it (a 390 px phone's scaling chart read "ompute" and "comput" at its ends;
    chromium, 2026-12-03). The end points' neighbours put theirs under their points: an end
    label moved inward ran into its neighbour's, centred on its own point, at 390 px
    ("computecompute"; chromium, 2026-12-03); centred labels of points further apart are clear
    of each other.

    >>> _end_positions(5)
    ['top right', 'bottom center', 'top center', 'bottom center', 'top left']
    >>> _end_positions(3)
    ['top right', 'bottom center', 'top left']
    >>> _end_positions(2)
    ['top right', 'top left']
    >>> _end_positions(1)
    ['top center']
    """
    if n < 2:
        return ["top center"] * n
    inner = ["top center"] * (n - 2)
    if inner:
        inner[0] = inner[-1] = "bottom center"
    return ["top right", *inner, "top left"]


def scaling_figure(frame, *, title: str = "") -> go.Figure:
    """Scaling efficiency (and the bound) against GPU count, log-2 x axis.

    ``frame`` has ``ranks``, ``efficiency`` and ``bound`` columns (a scaling table). The
    efficiency is the scaling efficiency against one GPU with the same micro-batches
    (:func:`costmodel.strategy.step.scaling_efficiency`): 1 at one GPU, above 1 where a sharded
    strategy's optimizer step saves more than the sharding costs, so the axis reaches the
    largest point.
    """
    data = [
        {
            "type": "scatter",
            "x": frame["ranks"].to_numpy(),
            "y": 100.0 * frame["efficiency"].to_numpy(),
            "mode": "lines+markers+text",
            "text": frame["bound"].tolist(),
            "textposition": _end_positions(len(frame)),
            "name": "efficiency",
            "hovertemplate": "%{x} GPUs: %{y:.1f}%<extra>%{text}-bound</extra>",
        }
    ]
    layout = {
        "title": {"text": title},
        "xaxis": {"type": "log", "title": {"text": "GPUs"}, "dtick": _LOG10_2},
        "yaxis": {
            "title": {"text": "scaling efficiency (vs one GPU)"},
            "ticksuffix": "%",
            "range": [0, _efficiency_axis_top([frame["efficiency"]])],
        },
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
        f"{int(g):,} ({int(n):,}x{int(k):,})"  # separators, as every GPU count is written
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
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
    }
    return go.Figure(data=data, layout=layout)


#: The least distance between two labelled ticks of a log GPU axis [octaves]: 64 and 72 GPUs
#: (0.17 apart) ran into each other.
_GPU_TICK_OCTAVES = 0.5


def _gpu_ticks(gpus, node_gpus: int | None) -> list[float]:
    """The GPU counts of ``gpus`` to label on a log axis, each :data:`_GPU_TICK_OCTAVES` from
    the others: one node (``node_gpus``) and the largest count first, then the other counts of
    whole nodes, then those inside one node. Ticks at powers of two put GB200 NVL72's one node
    (72 GPUs) beside a "64" and its 144 and 288 GPUs beside "128" and "256", counts the sweep
    never ran.

    >>> _gpu_ticks([2, 4, 8, 16, 32, 64, 72, 144, 288], 72)
    [2.0, 4.0, 8.0, 16.0, 32.0, 72.0, 144.0, 288.0]
    >>> _gpu_ticks([2, 4, 8, 16, 32, 40], 8)
    [2.0, 4.0, 8.0, 16.0, 40.0]
    """
    values = sorted({float(g) for g in gpus if g > 0})
    node = [float(node_gpus)] if node_gpus and float(node_gpus) in values else []
    whole = [g for g in values if node and g % node[0] == 0]
    kept: list[float] = []
    for g in [*node, *values[-1:], *whole, *values]:
        if g not in kept and all(abs(math.log2(g / k)) >= _GPU_TICK_OCTAVES for k in kept):
            kept.append(g)
    return sorted(kept)


def bandwidth_vs_gpus_figure(
    frame, columns: dict, *, node_gpus: int | None = None, title: str = ""
) -> go.Figure:
    """Bus bandwidth against GPU count (log-2 x), one line per ``columns`` entry (label -> col).

    ``node_gpus`` marks where the job leaves one node (the NVLink/network cliff): a dotted
    line, named in the legend ("one node (8 GPUs)").

    The y axis starts at 0 B/s: the chart says how deep the cliff is. Autoranged, it started
    just under the lowest point or band, so 8,192 DGX H100 GPUs' serial hierarchical busbw,
    207 GB/s against 450 GB/s inside a node, lay on the floor of the plot as if it fell to
    nothing (chromium, 390 and 1440 px, 2026-12-05).
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
    ticks = _gpu_ticks(frame["gpus"].to_numpy(), node_gpus)
    layout = {
        "title": {"text": title},
        "xaxis": {
            "type": "log",
            "title": {"text": "GPUs"},
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": [f"{t:g}" for t in ticks],
        },
        "yaxis": {**_unit_axis("B/s", title="bus bandwidth (busbw)"), "rangemode": "tozero"},
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
    }
    if node_gpus is not None:  # named in the legend: a label on the plot lay in the band
        layout["shapes"] = [_vline(node_gpus)]
        data.append(_vline_entry(f"one node ({node_gpus:g} GPUs)"))
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
        legend=_legend(),
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
        legend=_legend(),
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
        legend=_legend(),
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
        legend=_legend(),
        margin={"t": 50, "b": 10},
    )
    return fig


# --- side by side (a pinned second configuration) and the bucket_cap advisor -------------------
_PAIR_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#B279A2")


def scaling_compare_figure(frames: dict, *, title: str = "") -> go.Figure:
    """Scaling efficiency against GPU count for several configurations, overlaid.

    ``frames`` maps a label ("A: ...", "B: ...") to a scaling table (``ranks``, ``efficiency``,
    ``bound``), as :func:`scaling_figure` takes one.
    """
    data = [
        {
            "type": "scatter",
            "x": f["ranks"].to_numpy(),
            "y": 100.0 * f["efficiency"].to_numpy(),
            "mode": "lines+markers",
            "name": str(label),
            "line": {"color": _PAIR_COLORS[i % len(_PAIR_COLORS)]},
            "customdata": f["bound"].tolist(),
            "hovertemplate": "%{x} GPUs: %{y:.1f}% (%{customdata}-bound)<extra>"
            + str(label)
            + "</extra>",
        }
        for i, (label, f) in enumerate(frames.items())
    ]
    layout = {
        "title": {"text": title},
        "xaxis": {"type": "log", "title": {"text": "GPUs"}, "dtick": _LOG10_2},
        "yaxis": {
            "title": {"text": "scaling efficiency (vs one GPU)"},
            "ticksuffix": "%",
            "range": [0, _efficiency_axis_top([f["efficiency"] for f in frames.values()])],
        },
        "legend": _legend(),
        "margin": {"t": 50, "b": 10},
    }
    return go.Figure(data=data, layout=layout)


def step_compare_figure(steps: dict, *, title: str = "") -> go.Figure:
    """One step per configuration as a horizontal bar: compute, exposed communication, then the
    rest of the step (optimizer step, waiting for the slowest rank, DDP host overhead) [s].

    ``steps`` maps a label to ``(compute_s, exposed_comm_s)`` or ``(compute_s, exposed_comm_s,
    rest_s)``; the bar's length is the step when the rest is given (a step of a strategy
    engine spends part of its time in neither compute nor exposed communication).
    """
    labels = list(steps)
    end_s = max((sum(float(v) for v in steps[k]) for k in labels), default=0.0)
    unit = _long_time_unit(end_s)  # the axis's unit (None: SI seconds), the hover's too
    parts = (
        ("compute", 0, "#72B7B2"),
        ("exposed communication", 1, "#E45756"),
        ("optimizer, slowest rank, host", 2, "#9D755D"),
    )
    data: list[dict[str, Any]] = [
        {
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": labels,
            "x": [float(steps[k][i]) if i < len(steps[k]) else 0.0 for k in labels],
            "marker": {"color": color},
            "hovertemplate": "%{y}: %{x:.3s}s<extra>" + name + "</extra>",
        }
        for name, i, color in parts
        if i < 2 or any(i < len(steps[k]) and float(steps[k][i]) > 0 for k in labels)
    ]
    if unit is not None:  # the axis reads in min, h or days: the hover in the same unit
        for trace in data:
            trace["text"] = [_time_on_axis(x, unit, duration=True) for x in trace["x"]]
            trace["textposition"] = "none"  # hover only, not written on the bars
            trace["hovertemplate"] = f"%{{y}}: %{{text}}<extra>{trace['name']}</extra>"
    # each configuration's name on lines of ROW_LABEL_CHARS: on one line it took half a
    # phone's chart and began at its very edge
    ticks = _row_labels([_wrap(k, ROW_LABEL_CHARS) for k in labels])
    layout = {
        "barmode": "stack",
        "title": {"text": title},
        "xaxis": _time_axis(end_s, title="step time"),
        "yaxis": {
            "autorange": "reversed",
            "tickmode": "array",
            "tickvals": labels,
            "ticktext": ticks["ticktext"],
            "automargin": True,
        },
        "legend": _legend(),
        "margin": {"t": 50, "b": 10, "l": ticks["margin_l"]},
        "height": 260,
    }
    return go.Figure(data=data, layout=layout)


def bucket_advice_figure(
    curves: dict, *, current_cap_bytes: float | None = None, title: str = ""
) -> go.Figure:
    """Exposed communication against DDP's bucket_cap, the best cap of each curve marked.

    ``curves`` maps a label to a :class:`costmodel.ddp.BucketCapSweep` (``caps_bytes`` [B],
    ``exposed_comm_s`` [s], ``best_index``); ``current_cap_bytes`` is a dotted line, named in
    the legend ("current 25 MiB", :func:`_vline_entry`): written at the plot's top beside the
    line it lay on a curve that runs high at small caps (B's, chromium, 390 px, 2026-12-04).
    The legend names the curves where there are several (configurations A and B); one curve
    has none (a lone "A" said nothing). Each best cap is a star on its curve, named in the
    legend ("best 25 MiB", "A: best 25 MiB"): written above its star it lay on the curve,
    which is flat or turning there, and across the dashed line where the best cap is the
    current one, and A's and B's labels at one cap lay over each other (chromium, 390 px,
    2026-12-04).
    """
    data: list[dict[str, Any]] = []
    for i, (label, sw) in enumerate(curves.items()):
        color = _PAIR_COLORS[i % len(_PAIR_COLORS)]
        caps = [c / 2**20 for c in sw.caps_bytes]
        data.append(
            {
                "type": "scatter",
                "x": caps,
                "y": list(sw.exposed_comm_s),
                "mode": "lines",
                "name": str(label),
                "showlegend": len(curves) > 1,
                "line": {"color": color},
                "customdata": list(sw.buckets),
                "hovertemplate": "bucket_cap %{x} MiB: exposed %{y:.3s}s, "
                "%{customdata} buckets<extra>" + str(label) + "</extra>",
            }
        )
        b = sw.best_index
        best = f"best {caps[b]:g} MiB"
        data.append(
            {
                "type": "scatter",
                "x": [caps[b]],
                "y": [sw.exposed_comm_s[b]],
                "mode": "markers",
                "marker": {"color": color, "size": 11, "symbol": "star"},
                "name": f"{label}: {best}" if len(curves) > 1 else best,
                "hovertemplate": "best bucket_cap %{x} MiB: exposed %{y:.3s}s<extra></extra>",
            }
        )
    layout = {
        "title": {"text": title},
        "xaxis": {"title": {"text": "bucket_cap [MiB]"}},
        "yaxis": _unit_axis("s", title="exposed communication"),
        "legend": _legend(),
        "showlegend": True,  # the best caps; the curves where there are several
        "margin": {"t": 50, "b": 10},
    }
    if current_cap_bytes is not None:  # named in the legend, as the best caps are
        x = current_cap_bytes / 2**20
        layout["shapes"] = [_vline(x)]
        data.append(_vline_entry(f"current {x:g} MiB"))
    return go.Figure(data=data, layout=layout)


def memory_compare_figure(frame, *, capacities: dict, title: str = "") -> go.Figure:
    """Stacked memory per GPU of several configurations, each against its own GPU's memory.

    ``frame`` is long format (``config``, ``part``, ``bytes`` [B]) as for
    :func:`memory_stack_figure`; ``capacities`` maps each config to its GPU's memory [B],
    drawn as a red marker on that bar.
    """
    fig = _memory_bars(frame, dict(capacities), title=title)  # totals clear of the markers
    configs = list(capacities)
    fig.add_trace(
        {
            "type": "scatter",
            "x": configs,
            "y": [float(capacities[c]) for c in configs],
            "mode": "markers",
            "marker": {"symbol": "line-ew", "size": 60, "line": {"width": 3, "color": "red"}},
            "name": "GPU memory",
            "hovertemplate": "%{x}: GPU memory %{y:.3s}B<extra></extra>",
        }
    )
    return fig


# --- expected error (costmodel.uncertainty) --------------------------------------------------------
def band_trace(figure: go.Figure, x, y, lo, hi, *, name: str = "expected error") -> go.Figure:
    """Shade the expected-error band around a predicted line (in place; returns ``figure``).

    ``y`` is the predicted value per ``x`` (a time or a busbw), ``lo`` and ``hi`` the band's
    multipliers on the predicted *busbw* (:class:`costmodel.uncertainty.ErrorBand`); for a time
    the band is ``y / hi`` to ``y / lo`` (a slower measurement is a lower busbw). Points without
    a measured band (NaN) are left unshaded. The band is drawn first, under every line.
    """
    import numpy as np

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    lo = np.broadcast_to(np.asarray(lo, dtype=float), y.shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=float), y.shape)
    ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(y)
    if not ok.any():
        return figure
    is_time = (figure.layout.yaxis.type or "") == "log"
    upper = np.where(ok, y / lo if is_time else y * hi, np.nan)
    lower = np.where(ok, y / hi if is_time else y * lo, np.nan)
    edge = {"width": 0}
    band = [
        go.Scatter(x=x, y=upper, mode="lines", line=edge, hoverinfo="skip", showlegend=False),
        go.Scatter(
            x=x,
            y=lower,
            mode="lines",
            line=edge,
            fill="tonexty",
            fillcolor="rgba(99, 110, 250, 0.18)",
            name=name,
            hoverinfo="skip",
        ),
    ]
    figure.add_traces(band)
    figure.data = (*figure.data[-2:], *figure.data[:-2])  # under every line
    return figure


# --- shared figures -----------------------------------------------------------------------------
# Every ``*_figure`` builder above is a pure function of its arguments, and building a figure
# (plotly validates every property) costs 15-30 ms, a large part of an app rerun. The builders
# are therefore memoised in one bounded LRU shared by every caller (every app session): a
# builder called again with equal arguments (DataFrames, arrays, dicts and scalars compared by
# value, :func:`value_digest`) returns a new Figure made from the stored one without validating it again (about 2 ms),
# so callers may still change what they get (add a band, wrap the title). Arguments that cannot
# be pickled are built as before. A new builder named ``*_figure``
# must stay pure (take results, return a new figure) to be listed here.
FIGURE_CACHE_ENTRIES = 128
#: Largest figure kept [B of pickled arguments]: a figure of a million-row sweep in a notebook is
#: built each time rather than held (the cache's memory stays within entries x this).
FIGURE_CACHE_MAX_INPUT_BYTES = 2_000_000

_figures: dict[tuple, dict] = {}
_figures_lock = __import__("threading").Lock()


def value_digest(*values: Any, limit_bytes: int | None = None) -> bytes | None:
    """A digest of ``values`` (DataFrames, arrays, dicts, lists, result objects, scalars): equal
    for equal values, so it keys a cache on what a figure or a table is made from.

    The values are pickled (every row of a DataFrame or array, every field of an object) and
    the bytes hashed (BLAKE2b, 128 bits). TypeError (or pickle's error) for a value that cannot
    be pickled; the caller then builds without a cache. None when the pickled values are larger
    than ``limit_bytes``.
    """
    import hashlib
    import pickle

    blob = pickle.dumps(values, protocol=5)
    if limit_bytes is not None and len(blob) > limit_bytes:
        return None
    return hashlib.blake2b(blob, digest_size=16).digest()


def _shared_figure(builder: Any) -> Any:
    import functools

    @functools.wraps(builder)
    def shared(*args: Any, **kwargs: Any) -> go.Figure:
        try:
            digest = value_digest(args, kwargs, limit_bytes=FIGURE_CACHE_MAX_INPUT_BYTES)
        except Exception:  # noqa: BLE001  (an argument that cannot be pickled: no cache)
            digest = None
        if digest is None:  # or too large to keep
            return builder(*args, **kwargs)
        key = (builder.__name__, digest)
        with _figures_lock:
            spec = _figures.pop(key, None)
            if spec is not None:
                _figures[key] = spec  # most recently used last
        if spec is None:
            fig = builder(*args, **kwargs)
            # a deep copy of the properties as set, not fig.to_dict(): plotly >= 6 encodes a
            # numpy array there as a base64 {dtype, bdata, shape} dict, so the copy's x,
            # customdata ... would read as that dict, not as the builder's numbers (the
            # browser decodes either; what a caller reads from the figure must not change)
            spec = {
                "data": [trace.to_plotly_json() for trace in fig.data],
                "layout": fig.layout.to_plotly_json(),
            }
            with _figures_lock:
                _figures[key] = spec
                while len(_figures) > FIGURE_CACHE_ENTRIES:
                    _figures.pop(next(iter(_figures)))
        return go.Figure(spec, _validate=False)  # built (and validated) once, above

    shared.uncached = builder  # type: ignore[attr-defined]
    return shared


for _name in [n for n, f in list(globals().items()) if n.endswith("_figure") and callable(f)]:
    globals()[_name] = _shared_figure(globals()[_name])
del _name
