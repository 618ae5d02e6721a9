"""The step page's first chart is drawn once: its margins are set to what plotly's automargin
grows them to on a desktop, so plotly does not draw the figure a second time after measuring it
(the Memory and Collectives pages' first charts too).

The step timeline (580 bars for the page's default 7B DDP step) and the bucket_cap chart below
it are revealed in the same task, once plotly's chunk is evaluated, and each was drawn twice in
chromium before the first appeared: plotly drew the traces, measured the axes and the legend at
the figure's foot, grew the margins and drew everything again (``_redrawFromAutoMarginCount``
1 on both). :func:`costmodel.plots.reserve_margins` sets those margins beforehand; the figures'
data are untouched (every bar and hover value is still sent: tests/test_app_qa11.py,
tests/test_qa_pass7.py).
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from costmodel import plots
from costmodel.scenario import Scenario
from tests.test_app import assert_clean, open_page


def _timeline():
    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False, flips=False)
    return plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)


def test_the_bottom_margin_holds_the_x_axis_and_the_legend_rows():
    fig = _timeline()
    names = plots._legend_entries(fig)
    assert len(names) >= 5  # forward, backward, all-reduce, ..., the exposed-time entry
    lines = max(len(n.split("<br>")) for n in names)
    assert lines >= 2
    plots.reserve_margins(fig)
    # one row at a desktop's width, as tall as its tallest entry, and the legend's padding
    want = (
        plots.X_AXIS_TITLED_PX
        + plots.LEGEND_ROW_PX
        + plots.LEGEND_LINE_PX * (lines - 1)
        + plots.LEGEND_PAD_PX
    )
    assert fig.layout.margin.b == pytest.approx(want, abs=1)
    # the timeline's rows have their own left margin (the labels' width): kept
    assert fig.layout.margin.l == plots._row_labels([["gradient", "reduction"]])["margin_l"]


def test_a_margin_already_larger_is_kept_and_a_second_call_changes_nothing():
    fig = go.Figure(layout={"xaxis": {"title": {"text": "t"}}, "margin": {"b": 300, "l": 20}})
    plots.reserve_margins(fig)
    assert (fig.layout.margin.b, fig.layout.margin.l) == (300, 20)
    fig = _timeline()
    once = plots.reserve_margins(fig).layout.margin.to_plotly_json()
    assert plots.reserve_margins(fig).layout.margin.to_plotly_json() == once


def test_what_plotly_sizes_itself_is_left_to_it():
    # an x axis without a title holds its tick labels only; one without tick labels nothing;
    # a category y axis, or one with its own ticks, has labels of another width
    fig = go.Figure(
        layout={"yaxis": {"title": {"text": "rows"}, "type": "category"}, "margin": {"b": 10}}
    )
    plots.reserve_margins(fig)
    assert fig.layout.margin.b == plots.X_AXIS_UNTITLED_PX and fig.layout.margin.l is None
    fig = go.Figure(layout={"xaxis": {"showticklabels": False}, "margin": {"b": 10}})
    assert plots.reserve_margins(fig).layout.margin.b == 10
    fig = go.Figure(layout={"yaxis": {"title": {"text": "s"}, "tickvals": [0, 1]}})
    assert plots.reserve_margins(fig).layout.margin.l is None
    # a legend that is not at the figure's foot takes no room under the x axis
    fig = go.Figure(
        data=[go.Scatter(x=[0], y=[0], name="a"), go.Scatter(x=[0], y=[0], name="b")],
        layout={"xaxis": {"title": {"text": "t"}}, "legend": {"orientation": "v"}},
    )
    assert plots.reserve_margins(fig).layout.margin.b == plots.X_AXIS_TITLED_PX


def test_a_legend_too_wide_for_one_row_takes_several():
    names = [f"configuration {k} of a long sweep" for k in range(12)]
    one = plots._legend_rows_px(names[:1], plots.DESKTOP_CHART_PX - 100)
    many = plots._legend_rows_px(names, plots.DESKTOP_CHART_PX - 100)
    assert one == plots.LEGEND_ROW_PX and many >= 3 * plots.LEGEND_ROW_PX
    # the phone's estimate is the same rule at a phone's width, plus the padding
    assert plots.phone_legend_px(names) == (
        plots._legend_rows_px(names, plots.PHONE_LEGEND_PX) + plots.LEGEND_PAD_PX
    )


def _figures(at) -> dict[str, dict]:
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_the_step_page_sends_its_first_view_charts_with_their_margins():
    at = open_page("page_ddp.py")
    assert_clean(at)
    figs = _figures(at)
    assert set(figs) == {"chart_timeline", "chart_bucket_advice"}
    timeline, advice = figs["chart_timeline"], figs["chart_bucket_advice"]
    # the bars are all there (the figure's data are the same as before)
    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False, flips=False)
    bars = sum(len(t["base"]) for t in timeline["data"] if t["type"] == "bar")
    assert bars == len(r.timeline) > 500
    legend = plots._legend_rows_px(
        [t["name"] for t in timeline["data"] if t.get("showlegend", True) and t.get("name")],
        plots.DESKTOP_CHART_PX - 100,
    )
    assert timeline["layout"]["margin"]["b"] >= plots.X_AXIS_TITLED_PX + legend
    # one curve: the x axis and a legend of the best cap and the current cap's line (the
    # curve is not in it); the y axis's title and its automatic labels
    best, current = [t["name"] for t in advice["data"] if t.get("showlegend", True)]
    assert best.startswith("best ") and current.startswith("current ")
    assert advice["layout"]["margin"]["b"] == (
        plots.X_AXIS_TITLED_PX
        + plots._legend_rows_px([best, current], plots.DESKTOP_CHART_PX - 100)
        + plots.LEGEND_PAD_PX
    )
    assert (
        advice["layout"]["margin"]["l"]
        == plots.Y_AXIS_TITLED_PX + plots.LEGEND_CHAR_PX * plots.Y_TICK_CHARS
    )


def test_other_charts_keep_plotly_s_own_margins():
    """The opt-in is the step page's first view only: the Scaling tab's chart, not on it, is
    sized by plotly as before."""
    at = open_page("page_ddp.py", {"ddp_chart_tab": "Scaling vs GPU count"})
    assert_clean(at)
    figs = _figures(at)
    margin = figs["chart_scaling"]["layout"]["margin"]
    assert margin.get("l") is None and margin["b"] < plots.X_AXIS_TITLED_PX


@pytest.mark.parametrize(
    ("page_file", "key"),
    [("page_memory.py", "chart_memory"), ("page_collectives.py", "chart_algorithms_time_s")],
)
def test_the_memory_and_collectives_first_charts_reserve_theirs_too(page_file, key):
    at = open_page(page_file)
    assert_clean(at)
    fig = _figures(at)[key]
    names = [t["name"] for t in fig["data"] if t.get("showlegend", True) and t.get("name")]
    x_titled = bool(((fig["layout"].get("xaxis") or {}).get("title") or {}).get("text"))
    axis = plots.X_AXIS_TITLED_PX if x_titled else plots.X_AXIS_UNTITLED_PX
    legend = plots._legend_rows_px(names, plots.DESKTOP_CHART_PX - 100) + plots.LEGEND_PAD_PX
    assert fig["layout"]["margin"]["b"] == pytest.approx(axis + legend, abs=1)
    assert fig["layout"]["margin"]["l"] == plots.Y_AXIS_TITLED_PX + 6 * plots.LEGEND_CHAR_PX


@pytest.mark.browser
@pytest.mark.parametrize(("path", "charts"), [("ddp", 2), ("memory", 1), ("", 1)])
def test_first_view_charts_are_drawn_once_at_a_desktop_width(
    chromium_browser, app_url, path, charts
):
    """In chromium at 1440 px, on the step page, the Memory page and Collectives' first view:
    each chart, when it first enters the page, was laid out without a margin grown after its
    traces were drawn (plotly counts such redraws in ``_redrawFromAutoMarginCount``: 1 on each
    before), and its legend and axis titles sit inside the figure."""
    seen = """
    window.__redraws = [];
    new MutationObserver(() => {
      for (const gd of document.querySelectorAll('.js-plotly-plot')) {
        if (!gd.__seen && gd._fullLayout) {
          gd.__seen = true;
          window.__redraws.push(gd._fullLayout._redrawFromAutoMarginCount || 0);
        }
      }
    }).observe(document, {subtree: true, childList: true});
    """
    # the module's chromium (tests/conftest.py; each case launched its own before), a new
    # context per case: the observer above is this case's alone
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 3000})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.add_init_script(seen)
        page.goto(f"{app_url}/{path}")
        page.wait_for_function(f"() => window.__redraws.length >= {charts}")
        assert page.evaluate("window.__redraws") == [0] * charts
        inside = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
              const box = gd.getBoundingClientRect();
              return [...gd.querySelectorAll('.legend, .xtitle, .ytitle')].every(e => {
                const r = e.getBoundingClientRect();
                return r.left >= box.left - 1 && r.right <= box.right + 1
                  && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
              });
            })"""
        )
        assert inside == [True] * charts
    finally:
        context.close()
