"""Headless app tests from the twelfth QA pass (streamlit.testing AppTest), and two real-browser
checks of what only a browser shows (the URL a choice writes, a phone's axis labels). Each one
failed on the defect it names before its fix."""

from __future__ import annotations

import json
import re

import pytest

from costmodel import training
from tests._browser import wait_for_plots
from tests.test_app import _text, assert_clean, metrics, open_page, open_tables

# --- a choice is named in the URL by the option, not by its label ---------------------------
#: (page, URL key, the option's name, the label Streamlit's binding wrote, the widget value)
NAMED_CHOICES = [
    ("page_memory.py", "zero_stage", "3", "3 (FSDP)", 3),
    ("page_collectives.py", "view", "link", "Formulas on one link (alpha-beta)", "link"),
    ("page_collectives.py", "op", "all_gather", "all-gather", "all_gather"),
    ("page_validate.py", "val_source", "reference", "A reference run", "reference"),
    ("page_batch.py", "solve", "ranks", "Data-parallel ranks N", "ranks"),
]


def _choice(at, key):
    """The radio or select box of ``key``."""
    try:
        return at.radio(key=key)
    except KeyError:
        return at.selectbox(key=key)


@pytest.mark.parametrize(("page", "key", "name", "label", "value"), NAMED_CHOICES)
def test_a_choice_in_the_url_is_the_option_s_name_and_the_old_label_still_opens(
    page, key, name, label, value
):
    """Streamlit's binding wrote a choice's label into the URL (``zero_stage=3+(FSDP)``,
    ``val_source=A+reference+run``), which nobody can guess or type. A link now names the option
    (``zero_stage=3``, as the API and the CLI do); a link shared before, with the label, opens
    the same choice and is rewritten to the name."""
    for given in (name, label):
        at = open_page(page, {key: given})
        assert_clean(at)
        assert not at.error, [e.value for e in at.error]
        assert _choice(at, key).value == value
        assert at.query_params[key] == name  # the label is rewritten to the name


def test_the_url_follows_the_choice_and_drops_the_default():
    at = open_page("page_memory.py")
    assert "zero_stage" not in at.query_params  # the default is left out, as before
    at.radio(key="zero_stage").set_value(2).run()
    assert_clean(at)
    assert at.query_params["zero_stage"] == "2"
    at.radio(key="zero_stage").set_value(0).run()
    assert "zero_stage" not in at.query_params


def test_a_choice_the_box_does_not_offer_names_the_allowed_names():
    at = open_page("page_memory.py", {"zero_stage": "9"})
    assert_clean(at)
    said = " ".join(_text(e.value) for e in at.error)
    assert "zero_stage" in said and "allowed: 0, 1, 2, 3" in said, said
    assert at.radio(key="zero_stage").value == 0


def test_a_view_named_before_the_views_were_renamed_still_opens():
    at = open_page("page_collectives.py", {"view": "Textbook (alpha-beta, one link)"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="view").value == "link" and at.query_params["view"] == "link"


# --- a price is never shown without where it came from ----------------------------------------
def _placeholder_warnings(at) -> list[str]:
    return [_text(w.value) for w in at.warning if "placeholder" in w.value]


def _cost(at):
    (cost,) = [m for m in at.metric if m.label == "Cost [USD]"]
    return cost


def test_the_placeholder_price_is_flagged_beside_the_cost_with_the_gpu_s_presets():
    """The cost at the $2 placeholder was flagged only in the metric's help and a caption
    under it. A warning under the number now says it is no price, with the range of the price
    presets published for the cluster's GPU (the ones `costmodel train --price` accepts for
    it), their names and dates; the number itself carries "placeholder" in red."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    cost = _cost(at)
    from streamlit.proto.Metric_pb2 import Metric

    assert "placeholder" in cost.proto.delta
    assert Metric.MetricColor.Name(cost.proto.color) == "RED"
    (warn,) = _placeholder_warnings(at)
    prices = sorted(
        (training.load_price(n) for n in training.prices_for_gpu("h100-sxm")),
        key=lambda p: p.usd_per_gpu_hour,
    )
    for p in (prices[0], prices[-1]):
        assert p.name in warn and p.date in warn and f"${p.usd_per_gpu_hour:.2f}" in warn, warn
    assert f"{len(prices)} presets" in warn


def test_a_published_price_shows_its_name_and_date_under_the_cost():
    at = open_page("page_ddp.py", {"ddp_price": "aws-p5-on-demand"})
    assert_clean(at)
    date = training.load_price("aws-p5-on-demand").date
    assert _cost(at).proto.delta == f"{date} prices, aws-p5-on-demand"  # the date first
    assert _placeholder_warnings(at) == []
    at = open_page("page_ddp.py", {"ddp_usd": "3.5"})  # a typed price is the user's
    assert "your price" in _cost(at).proto.delta and _placeholder_warnings(at) == []


def test_a_gpu_without_a_published_price_asks_for_one():
    at = open_page("page_ddp.py", {"ddp_cluster": "dgx1-v100"})
    assert_clean(at)
    (warn,) = _placeholder_warnings(at)
    assert "No price is published for v100-sxm2: type yours" in warn, warn


# --- the MFU box never shows a value the step does not use ------------------------------------
def test_no_greyed_mfu_box_shows_0_40_while_the_fitted_efficiency_is_used():
    """The greyed MFU box read 0.40 while the step ran at the fitted efficiency (MFU 0.41 on
    an H100). Unset, the box is not drawn; its place says the compute in use, in the step's
    own words (the fitted MFU, the default MFU on a GPU without a fit, or a measured time)."""
    from costmodel.scenario import Scenario
    from costmodel.web.common import page_words

    at = open_page("page_ddp.py")
    assert_clean(at)
    assert not [n for n in at.number_input if n.label.startswith("MFU")]
    label = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False).compute_label
    assert "MFU 0." in label and "0.40" not in label  # the fitted value, not the box's 0.40
    # in the page's words: the MFU box, not the CLI's --mfu (common.page_words)
    assert f"Compute in use: {page_words(label)}." in [c.value for c in at.caption]
    at.checkbox(key="ddp_own_mfu").check().run()  # set: the box, enabled, and no such line
    assert_clean(at)
    (box,) = [n for n in at.number_input if n.label.startswith("MFU")]
    assert not box.disabled and box.value == pytest.approx(0.4)
    assert not [c for c in at.caption if c.value.startswith("Compute in use")]
    at = open_page("page_ddp.py", {"ddp_cluster": "dgx-b200"})  # no fit: the default, said
    assert any(c.value.startswith("Compute in use: default MFU 0.40") for c in at.caption)


# --- one format for the scaling efficiency ----------------------------------------------------
def test_the_scaling_table_shows_efficiency_as_the_metric_does():
    """The metric read "93.1 %" and the scaling table below it 0.931. The table's fractions
    are now shown as percentages; its CSV (the grid's data) keeps the fractions."""
    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_strategy": "fsdp"})
    assert_clean(at)
    shown = metrics(at)["Scaling efficiency"]
    text = next(
        _text(m.value) for m in at.markdown if "| scaling efficiency |" in _text(m.value)
    ).replace("\u00a0", " ")
    header, _, *rows = text.splitlines()
    names = [c.strip() for c in header.strip("|").split("|")]
    cells = {
        int(r.strip("|").split("|")[names.index("nodes")].strip().replace(",", "")): r for r in rows
    }
    row = [c.strip() for c in cells[4].strip("|").split("|")]  # the page's 4 nodes
    assert row[names.index("scaling efficiency")] == shown, (shown, row)
    assert row[names.index("compute share of the step")].endswith(" %")
    open_tables(at)
    grid = next(d.value for d in at.dataframe if "scaling efficiency [fraction]" in d.value)
    assert 0 < grid["scaling efficiency [fraction]"].max() <= 1.5  # fractions in the data


# --- the timeline's row labels stay inside a phone's chart -------------------------------------
def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_the_step_charts_keep_room_for_their_row_labels():
    """At 390 px the timeline's row "gradient reduction" began at the chart's left edge, its
    first letter cut (plotly fits labels to the pixel), and the side-by-side chart's "A:
    llama-2-7b on dgx-h100 x 4, ddp" took half the chart from its very edge. The timeline's
    rows are now a word a line, a configuration's name on lines of 18 characters, and the left
    margin holds the longest line with room to the edge; every chart's axes grow their margins
    to their labels (automargin)."""
    from costmodel import plots

    at = open_page(
        "page_ddp.py",
        {
            "ddp_arch": "llama-2-7b",
            "ddp_strategy": "hsdp",
            "ddp_pin": "true",
            "ddp_b_cluster": "dgx-a100",
        },
    )
    assert_clean(at)
    figures = _figures(at)
    # the title as shown: its lines joined, the span that gives it its width (--title-em) left out
    by_title = {
        re.sub(r"<[^>]*>", "", f["layout"]["title"]["text"].replace("<br>", " ")): f
        for f in figures
    }
    timeline = next(f for t, f in by_title.items() if t.startswith("One step (hsdp"))
    compare = by_title["One step, A and B"]
    # hsdp's rows: the shard group's collectives and the all-reduces across groups, a word a line
    assert "across<br>groups" in timeline["layout"]["yaxis"]["ticktext"]
    for f in (timeline, compare):
        y = f["layout"]["yaxis"]
        lines = [x for t in y["ticktext"] for x in t.split("<br>")]
        assert y["automargin"] is True and max(map(len, lines)) <= plots.ROW_LABEL_CHARS
        room = max(map(len, lines)) * plots.LEGEND_CHAR_PX + plots.LABEL_EDGE_PX
        assert f["layout"]["margin"]["l"] >= room, (f["layout"]["margin"], lines)
    assert len(compare["layout"]["yaxis"]["ticktext"][0].split("<br>")) > 1  # wrapped
    for f in figures:
        assert f["layout"]["xaxis"]["automargin"] is True
        assert f["layout"]["yaxis"]["automargin"] is True


# --- in a browser: the URL a choice writes, and a phone's timeline ------------------------------
def _expect():
    import playwright.sync_api as playwright_api

    expect = playwright_api.expect
    expect.set_options(timeout=90_000)  # a page paints in 4-15 s here, slower beside others
    return expect


@pytest.mark.browser
def test_in_a_browser_a_choice_writes_its_name_to_the_url(chromium_browser, app_url):
    """The name, not the label, is what the address bar shows and a shared link carries: the
    page's own widgets bound by Streamlit and the choice synced by the page share the URL."""
    expect = _expect()
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/memory?zero_stage=3+(FSDP)&dp_ranks=16")
        expect(page.get_by_text("Memory per GPU").first).to_be_visible()
        page.wait_for_url("**zero_stage=3&**")  # the old label, rewritten to the name
        assert "dp_ranks=16" in page.url and "FSDP" not in page.url
        page.get_by_text("2 (+ gradients)").click()
        page.wait_for_url("**zero_stage=2**")
        page.get_by_text("0 (DDP)").click()  # the default: left out
        page.wait_for_url(lambda url: "zero_stage" not in url)
        assert "dp_ranks=16" in page.url
    finally:
        context.close()


@pytest.mark.browser
def test_on_a_phone_the_step_charts_row_labels_stay_inside_them(chromium_browser, app_url):
    expect = _expect()
    context = chromium_browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/ddp?ddp_arch=llama-2-7b&ddp_pin=true&ddp_b_cluster=dgx-a100")
        expect(page.locator(".js-plotly-plot .ytick text").nth(2)).to_be_attached()
        wait_for_plots(page)  # plotly's second layout pass (automargin) settles
        left = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
              const x = p.getBoundingClientRect().left;
              return [p.querySelector('.gtitle').textContent,
                      ...[...p.querySelectorAll('.ytick text')].map(
                        t => t.getBoundingClientRect().left - x)]; })"""
        )
        step = [c for c in left if c[0].startswith("One step")]
        assert len(step) == 2, left  # the side-by-side chart and the timeline
        # was 0 and 1: "gradient reduction" and "A: llama-2-7b on ..." at the very edge
        assert all(len(c) > 1 and min(c[1:]) >= 4 for c in step), step
    finally:
        context.close()


# --- the walk: the Memory page's largest model for ZeRO-3 over a million ranks ----------------
def test_the_largest_model_over_a_million_ranks_answers_at_once():
    """``/memory?arch=deepseek-v3&zero_stage=3&dp_ranks=1000000`` took 103 s (AppTest's 60 s
    ran out): the largest-model search probed bare counts near 1e17 parameters and cut each
    into 12 x 4096^2-parameter blocks, hundreds of millions of them, to find the largest
    gathered pair. The pair of equal blocks is now counted, not built, to the same value."""
    import math

    from costmodel.strategy import layout

    at = open_page(
        "page_memory.py", {"arch": "deepseek-v3", "zero_stage": "3", "dp_ranks": "1000000"}
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    p = 3e16  # a count the search probes: 1.5e8 equal blocks
    n = math.ceil(p / layout.DEFAULT_BLOCK_PARAMS)
    assert layout.largest_pair_params(p) == 2 * (p / n)
    small = layout.wrap_units(5e13)  # still few enough to build: the same value both ways
    assert layout.largest_pair_params(5e13) == max(
        a.params + b.params for a, b in zip(small, small[1:], strict=False)
    )
