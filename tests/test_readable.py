"""Readable answers without a browser: table formats by unit, the CSV stays raw
SI, chart titles clear of plotly's toolbar, the headline drawn above the inputs (AppTest).

What only a browser can show (no metric cut off, the toolbar's real box against the title's) is
in tests/test_browser_readable.py.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from costmodel import plots
from costmodel.web import common
from tests.test_app import open_tables

WEB = Path(common.__file__).parent


@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [
        ("time_s", 0.00005, "50 µs"),  # a raw float the issue found on screen
        ("predicted_time_s", 1.5, "1.5 s"),
        ("step [s]", 0.435, "435 ms"),
        ("busbw_bytes_per_s", 146754.5659e6, "147 GB/s"),
        ("algbw [B/s]", 2.5e9, "2.5 GB/s"),
        ("message_bytes", 2**30, "1.07 GB"),
        ("crossover size [B]", 7.2e7, "72 MB"),
        ("bytes_per_rank", 1.5e3, "1.5 kB"),
        ("rel_error", -0.071, "-7.1 %"),
        ("mean_rel_error", 0.062, "+6.2 %"),
        # a magnitude has no sign: "+60.7 %" read as an over-estimate on the Validate page
        ("median_abs_rel_error", 0.607, "60.7 %"),
        ("max_abs_rel_error", 0.991, "99.1 %"),
    ],
)
def test_a_column_is_shown_in_the_unit_its_name_carries(column, value, shown):
    assert common.column_formatter(column)(value) == shown


@pytest.mark.parametrize(
    "column",
    ["time [µs]", "algbw [GB/s]", "tokens_per_s", "efficiency [0-1]", "learning rate [-]"],
)
def test_a_column_already_scaled_or_without_a_unit_is_not_rescaled(column):
    # "[µs]" holds microseconds: reading it as seconds would show 3 µs as "3 s"
    assert common.column_formatter(column) is None


def test_the_table_shows_units_and_the_csv_keeps_raw_si():
    frame = pd.DataFrame(
        {
            "algorithm": ["ring", "tree"],
            "time_s": [0.00005, 1.25e-3],
            "busbw_bytes_per_s": [146754.5659, 4.5e11],
            "ranks": [8, 16],
            "ratio": [146754.5659, float("nan")],
        }
    )
    shown = common.styled(frame)
    html = shown.to_html()
    for text in ("50 µs", "1.25 ms", "147 kB/s", "450 GB/s", "146,800", "–"):
        assert text in html, text
    assert "0.00005" not in html and "146754.5659" not in html
    assert shown.data is frame  # the data itself is untouched: only the display is formatted
    back = pd.read_csv(io.StringIO(frame.to_csv(index=False)))  # what the download button sends
    assert back["time_s"].tolist() == [0.00005, 1.25e-3]
    assert back["busbw_bytes_per_s"].iloc[0] == 146754.5659


def test_text_table_header_drops_the_si_unit_its_cells_now_carry():
    """ "step [s]" above "548 ms" read as 548 seconds: the text table's header loses a bracketed
    SI unit the cells are rescaled from, and keeps a unit the cells are already in."""
    frame = pd.DataFrame(
        {"step [s]": [0.548], "ZeRO-0 [B]": [1.4e10], "time [µs]": [3.0], "ranks": [8]}
    )
    header, _, row = common.text_table(frame).splitlines()
    assert header == "| step | ZeRO\\-0 | time \\[µs\\] | ranks |", header
    # a number and its unit are held together (common.keep_units: a non-breaking space)
    assert "548\u00a0ms" in row and "14\u00a0GB" in row and "| 3 |" in row, row
    assert list(frame.columns) == ["step [s]", "ZeRO-0 [B]", "time [µs]", "ranks"]  # CSV's


def test_a_non_finite_number_reads_as_no_value_not_inf():
    """The Step page's verdict-flip table read "inf" (the relative change of a flip no finite
    change reaches): a non-finite number shows as common.NO_VALUE in the text table and grid."""
    frame = pd.DataFrame(
        {
            "parameter": ["accumulation", "gradient_bytes_per_param"],
            "relative_change": [7.0, math.inf],
            "time_s": [1e-3, -math.inf],
            "rel_error": [0.1, math.nan],
        }
    )
    text = common.text_table(frame)
    html = common.styled(frame).to_html()
    for shown in (text, html):
        assert not re.search(r"\b(inf|nan)\b", shown, re.IGNORECASE), shown
    assert text.splitlines()[-1].count(common.NO_VALUE) == 3
    assert "| 1\u00a0ms |" in text and "10\\.0\u00a0\\%" in text


def test_chart_title_sits_below_the_toolbar_row_and_wraps():
    title = "Scaling efficiency of a data-parallel step vs GPU count at M = 268 MB on dgx-h100"
    fig = plots.clear_of_toolbar(go.Figure(layout={"title": {"text": title}, "margin": {"t": 50}}))
    lines = fig.layout.title.text.split("<br>")
    # 83 characters: two lines of even length (tests/test_app_qa14.py: the width they have)
    assert len(lines) == 2 and all(len(line) <= plots.TITLE_CHARS for line in lines)
    assert any("M = 268 MB" in line for line in lines)  # a value stays with its name and unit
    assert " ".join(lines) == title
    # the title rests on the plot area; the margin above holds its lines and the toolbar's row
    assert (fig.layout.title.yref, fig.layout.title.yanchor) == ("paper", "bottom")
    assert fig.layout.margin.t >= plots.TOOLBAR_PX + 2 * 20


def test_a_chart_title_breaks_a_file_name_longer_than_a_line():
    """A log's file name is one word of up to 80 characters: kept whole, it ran 47-266 px past
    a 390 px phone's chart (the Validate page's title cut off mid-name)."""
    name = "13f_waynehacking8_1x2-4-6xH100_auto-vs-Ring-vs-NVLS_allreduce_rawlog-extract.txt"
    title = f"{name}: measured vs predicted (nccl) on dgx-h100"
    fig = plots.clear_of_toolbar(go.Figure(layout={"title": {"text": title}}))
    lines = fig.layout.title.text.split("<br>")
    assert all(len(line) <= plots.TITLE_CHARS for line in lines), lines
    assert "".join(lines).startswith(name)  # the name's pieces rejoin with nothing lost
    assert lines[0].endswith(("-", "_", "."))  # broken after - _ . (a 56-character line)


def test_headline_metrics_are_drawn_above_the_inputs():
    at = AppTest.from_file(str(WEB / "page_cluster.py"), default_timeout=60).run()
    assert not at.exception
    order = [node for node in at.main if node.type in ("metric", "selectbox")]  # page order
    assert order[0].type == "metric" and order[0].label == "Time, model nccl"
    first_input = next(i for i, node in enumerate(order) if node.type == "selectbox")
    assert [n.label for n in order[:first_input]] == [
        "Time, model nccl",
        "busbw, model nccl",
        "Algorithm / protocol",
        "Expected error",  # the accuracy of the answer sits with it
    ]


def test_every_page_table_reaches_the_browser_with_units():
    """What the grid draws: the Styler's display strings travel with the raw data (AppTest)."""
    from streamlit import dataframe_util

    at = AppTest.from_file(str(WEB / "page_cluster.py"), default_timeout=60).run()
    open_tables(at)
    proto = at.dataframe[0].proto.arrow_data
    shown = dataframe_util.convert_arrow_bytes_to_pandas_df(proto.styler.display_values)
    raw = at.dataframe[0].value
    row = raw.index[-1]
    assert shown.loc[row, "model_s"].endswith(("ms", "µs", " s"))
    assert shown.loc[row, "model_busbw_bytes_per_s"].endswith("B/s")
    assert shown.loc[row, "message_bytes"] == "1.07 GB"  # the page's default 2**30 B
    assert raw.loc[row, "message_bytes"] == 2**30  # the data (and the CSV) stay raw SI


def test_a_step_s_narrow_bars_keep_their_colour():
    """The step page's first chart (a 7B model's DDP step on 4 x 8 H100s, the page's default):
    its 289 backward segments and all-reduces each drew a white outline of 0.5 px a side, and
    at about half a pixel a bar on a 390 px phone the rows read as white stripes, not the
    legend's teal and orange (chromium, 2026-12-05). A bar narrower than a fiftieth of the
    step now has no outline; the wide ones (forward, optimizer) keep it."""
    from costmodel.scenario import Scenario

    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False, flips=False)
    fig = plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    for name in ("backward", "all-reduce"):
        trace = bars[name]
        assert len(trace.x) > 100  # one bar a bucket
        widths = np.broadcast_to(trace.marker.line.width, len(trace.x))  # one, or one a bar
        narrow = [w for w, x in zip(widths, trace.x, strict=True) if x < r.step_time_s / 50]
        assert narrow and set(narrow) == {0.0}, name
    forward = bars["forward"]
    assert forward.x[0] > r.step_time_s / 50
    assert set(np.broadcast_to(forward.marker.line.width, len(forward.x))) == {0.5}


def test_the_cliff_chart_s_busbw_axis_starts_at_zero():
    """The Cluster page's cliff chart on 1,024 DGX H100 nodes at 10 GB: the autoranged axis
    began at about 180 GB/s, so the serial hierarchy's 207 GB/s (450 GB/s in one node) lay on
    the plot's floor as if the busbw fell to nothing. The axis starts at 0 B/s."""
    frame = pd.DataFrame({"gpus": [8, 16, 8192], "busbw": [450e9, 290e9, 207e9]})
    fig = plots.bandwidth_vs_gpus_figure(frame, {"hierarchical (serial)": "busbw"}, node_gpus=8)
    assert fig.layout.yaxis.rangemode == "tozero"
    assert fig.layout.yaxis.ticksuffix == "B/s"  # the unit stays on the axis
