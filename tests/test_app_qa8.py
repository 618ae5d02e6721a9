"""Eighth QA pass on the pages: the step chart's hover in the axis's unit, the price box's
placeholder told from a typed price, what a bare parameter count's memory and step are made of,
and which card the Memory page's verdict is against. Each test failed before its fix (the
number-and-unit line breaks at 390 px are checked in chromium: test_browser_qa8.py).
"""

from __future__ import annotations

import re

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page


# --- the step chart's hover reads in the unit of its axis ------------------------------------
def _long_step(**kw):
    from costmodel.scenario import Scenario

    return Scenario(params=7e9, cluster="dgx-h100", nodes=4, strategy="fsdp", **kw).evaluate(
        scaling=False, flips=False
    )


@pytest.mark.parametrize(
    ("kw", "unit", "seconds"),
    [
        ({"mfu": 1e-3, "local_batch": 640}, "h", 3600.0),  # a 33-hour step (MFU at its 0.1% floor)
        ({"mfu": 1e-3, "local_batch": 40960}, "days", 86400.0),  # weeks
        ({"mfu": 0.02, "local_batch": 32}, "min", 60.0),  # minutes
    ],
)
def test_a_long_step_s_hover_reads_in_the_axis_unit(kw, unit, seconds):
    """The axis of an absurd step read "10 h, 20 h" while its hover said "from 44.3ks, 889s
    long" (plotly's SI seconds): the hover now writes the start, and every duration of two
    minutes or more, in the axis's unit; shorter durations (a collective of milliseconds on an
    axis of hours) keep SI seconds, as an axis that short would."""
    from costmodel import plots
    from costmodel.units import format_duration

    r = _long_step(**kw)
    fig = plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)
    assert fig.layout.xaxis.ticktext[1].endswith(f" {unit}")
    bars = [t for t in fig.data if t.type == "bar"]
    assert bars
    number = r"([\d,.]+)"
    for trace in bars:
        assert ":.3s}s" not in trace.hovertemplate, trace.hovertemplate  # no SI seconds
        assert "%{text}" in trace.hovertemplate and trace.textposition == "none"
        ivs = [iv for iv in r.timeline if iv["kind"].replace("_", "-") == trace.name]
        assert len(trace.text) == len(ivs)
        for text, iv in zip(trace.text, ivs, strict=True):
            start = re.fullmatch(rf"from {number} {unit}, (.+) long", str(text))
            assert start, text
            shown = float(start.group(1).replace(",", ""))
            assert shown * seconds == pytest.approx(iv["start_s"], rel=5e-3, abs=1e-3 * seconds)
            length = iv["end_s"] - iv["start_s"]
            if length >= 120:
                got = re.fullmatch(rf"{number} {unit}", start.group(2))
                assert got, text
                assert float(got.group(1).replace(",", "")) * seconds == pytest.approx(
                    length, rel=5e-3
                )
            else:
                assert start.group(2) == format_duration(length), text
    # the compare chart's bars too
    fig = plots.step_compare_figure({"A": (r.compute_s, r.exposed_comm_s)})
    compute = next(t for t in fig.data if t.name == "compute")
    assert compute.hovertemplate.startswith("%{y}: %{text}")
    value, shown_unit = compute.text[0].split(" ")
    assert shown_unit == unit
    assert float(value.replace(",", "")) * seconds == pytest.approx(r.compute_s, rel=5e-3)


def test_a_short_step_s_hover_keeps_si_seconds():
    from costmodel import plots

    r = _long_step()
    fig = plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)
    for trace in (t for t in fig.data if t.type == "bar"):
        assert "%{customdata[2]:.3s}s long" in trace.hovertemplate and trace.text is None
    fig = plots.step_compare_figure({"A": (r.compute_s, r.exposed_comm_s)})
    assert all(t.hovertemplate.startswith("%{y}: %{x:.3s}s") for t in fig.data)


# --- the price box: an untouched placeholder is told from a typed 2.00 -----------------------
def _cost_note(at) -> str:
    notes = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    assert len(notes) == 1, notes
    return notes[0]


def test_a_typed_price_equal_to_the_placeholder_is_the_user_s():
    """The box started at 2.00 and a typed 2.00 was read as the untouched placeholder
    (``usd_source="default"``: "a placeholder default: neither a published price nor one given
    by the user"). The box now starts empty with the placeholder as grey text; the cost is shown
    at that rate and said to be a placeholder until a number is typed, and any number typed,
    2.00 too, is the user's. The dollars are the API's at that rate either way."""
    from costmodel.scenario import Scenario
    from costmodel.web.page_ddp import DEFAULT_USD_PER_GPU_HOUR

    at = open_page("page_ddp.py")
    assert_clean(at)
    box = at.number_input(key="ddp_usd")
    assert box.value is None and f"{DEFAULT_USD_PER_GPU_HOUR:.2f}" in box.proto.placeholder
    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False, flips=False)
    api = r.training_cost(1e12, usd_per_gpu_hour=DEFAULT_USD_PER_GPU_HOUR)
    placeholder = metrics(at)["Cost [USD]"]
    assert placeholder == f"{api.cost_usd:,.0f}"
    assert "a placeholder default" in _cost_note(at)
    assert "placeholder price" in next(m.help for m in at.metric if m.label == "Cost [USD]")
    at.number_input(key="ddp_usd").set_value(DEFAULT_USD_PER_GPU_HOUR).run()
    assert_clean(at)
    note = _cost_note(at)
    assert "$2.00 per GPU-hour, given by the user" in note, note  # cents: units.format_usd_rate
    assert "placeholder" not in note
    assert "placeholder" not in next(m.help for m in at.metric if m.label == "Cost [USD]")
    assert metrics(at)["Cost [USD]"] == placeholder  # the same number, now the user's
    # and the CLI's for the same inputs (the page opens at 4 nodes: README)
    import json

    from typer.testing import CliRunner

    from costmodel import cli

    args = ["train", "--params", "7B", "--nodes", "4", "--cluster", "dgx-h100", "--tokens", "1T"]
    res = CliRunner().invoke(cli.app, [*args, "--usd-per-gpu-hour", "2", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert f"{d['cost_usd']:,.0f}" == placeholder and d["price_note"] in note


def test_a_link_with_the_placeholder_s_price_is_the_user_s():
    at = open_page("page_ddp.py", {"ddp_usd": "2.0"})
    assert_clean(at)
    assert at.number_input(key="ddp_usd").value == 2.0
    assert "$2.00 per GPU-hour, given by the user" in _cost_note(at)


def test_b_s_price_box_starts_empty_too():
    """B on another GPU gets its own box, empty with the placeholder until typed (B's price
    box set to custom: it starts on a preset for B's GPU)."""
    at = open_page(
        "page_ddp.py", {"ddp_pin": "true", "ddp_b_cluster": "dgx-b200", "ddp_price_b": "custom"}
    )
    assert_clean(at)
    assert at.number_input(key="ddp_b_usd").value is None
    notes = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    assert len(notes) == 2 and all("a placeholder default" in n for n in notes), notes
    at.number_input(key="ddp_b_usd").set_value(2.0).run()
    assert_clean(at)
    notes = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    b = next(n for n in notes if n.startswith("(B)"))
    assert "$2.00 per GPU-hour, given by the user" in b, notes
    assert "a placeholder default" in next(n for n in notes if n.startswith("(A)"))


# --- a bare parameter count: what its memory holds and which transformer the step prices ------
def test_a_bare_count_s_note_says_what_its_memory_holds_and_what_the_step_prices():
    """The note beside a bare count's memory said it "has no shape" while the step priced the
    count as a dense transformer of that size (architecture_for_params: its buckets, units and
    FLOPs): it now says the memory holds the model state with no activations sized, and that
    the step prices that transformer, named with its layers and width on the step's own note."""
    from costmodel.architecture import architecture_for_params
    from costmodel.memory import training_memory
    from costmodel.scenario import Scenario

    note = training_memory(7e9).activations_note
    assert "no shape" not in note and note.startswith("activations: not included")
    assert "the model state, activations not sized" in note
    assert "a dense transformer of that size (architecture_for_params)" in note
    d = architecture_for_params(7e9)
    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4).evaluate(scaling=False, flips=False)
    said = [n for n in r.notes if n.startswith("activations:")]
    assert len(said) == 1 and "no shape" not in said[0], r.notes
    assert f"({d.layers} layers, hidden {d.hidden}: architecture_for_params)" in said[0]
    # the step page shows that note once, beside the step, as a sentence in the page's words
    # (the cost's copy of it is not repeated: common.notes)
    from costmodel.web.common import sentence

    at = open_page("page_ddp.py")
    assert_clean(at)
    shown = [_text(c.value) for c in at.caption if _text(c.value).startswith("Activations:")]
    assert shown == [sentence(said[0])], shown
    assert shown[0].endswith("name an architecture to size activations: the Model box")
    assert not any("no shape" in _text(c.value) for c in at.caption)


def test_a_count_outside_the_dense_shapes_says_equal_blocks():
    from costmodel import presets
    from costmodel.strategy import strategy_step

    r = strategy_step(2e13, cluster=presets.cluster("dgx-h100", nodes=64), strategy="fsdp")
    said = [n for n in r.notes if n.startswith("activations: not included")]
    assert len(said) == 1 and "equal blocks with 6N FLOPs per token" in said[0], r.notes
    assert "architecture_for_params" not in said[0]


def test_the_memory_page_s_custom_note_names_the_step_s_transformer_and_the_cli_number():
    """The Memory page's custom model is sized as ``memory --params`` and the step size a count
    (the model state alone, their number), its note says so and names the transformer the step
    prices, whose blocks are the page's ZeRO-3 gathered units."""
    import json

    from typer.testing import CliRunner

    from costmodel import cli
    from costmodel.architecture import architecture_for_params
    from costmodel.scenario import Scenario
    from costmodel.units import format_bytes

    d = architecture_for_params(7e9)
    at = open_page("page_memory.py", {"dp_ranks": "8"})
    at.radio(key="zero_stage").set_value(3).run()
    assert_clean(at)
    note = next(_text(c.value) for c in at.caption if _text(c.value).startswith("Custom model"))
    assert "no shape" not in note
    assert (
        f"{d.layers} layers x hidden {d.hidden} ({d.heads} heads; architecture_for_params)" in note
    )
    assert "as `costmodel memory --params` and the step page size a bare count" in note
    res = CliRunner().invoke(
        cli.app, ["memory", "--params", "7B", "--zero-stage", "3", "--ranks", "8", "--json"]
    )
    assert res.exit_code == 0, res.output
    cli_bytes = json.loads(res.output)["memory_bytes"]
    step = Scenario(params=7e9, cluster="dgx-h100", nodes=1, strategy="fsdp")
    step_bytes = step.evaluate(scaling=False, flips=False).memory_total_bytes
    assert cli_bytes == pytest.approx(step_bytes, rel=1e-12)
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(cli_bytes)
    at.text_input(key="params").set_value("50T").run()  # outside the dense shapes' range
    note = next(_text(c.value) for c in at.caption if _text(c.value).startswith("Custom model"))
    assert "equal blocks" in note and "architecture_for_params" not in note


# --- the Memory page's verdict names the card it is against ----------------------------------
@pytest.mark.parametrize(
    ("query", "card", "cli_card"),
    [
        ({}, "h100-sxm's 85.5 GB", ("--cluster", "dgx-h100")),  # the page's default card
        ({"gpu": "custom", "gpu_memory": "200GB"}, "a card of 200 GB", ("--gpu-memory", "200GB")),
    ],
)
def test_the_memory_page_s_verdict_names_its_card_and_is_the_cli_s_with_that_card(
    query, card, cli_card
):
    """``costmodel memory`` gives no verdict without a card (``fits`` null) while the page
    always has one (README, "Decisions and known limits"): its headline said "(does not fit)"
    with the card only in a metric's label. The headline and the 'Ranks needed' caption now
    name the card, and the total and verdict are the CLI's with that card."""
    import json

    from typer.testing import CliRunner

    from costmodel import cli
    from costmodel.units import format_bytes

    def memory(*card_args: str) -> dict:
        args = ["memory", "--arch", "llama-3.1-8b", "--ranks", "8", *card_args, "--json"]
        res = CliRunner().invoke(cli.app, args)
        assert res.exit_code == 0, res.output
        return json.loads(res.output)

    assert memory().get("fits") is None  # no card, no verdict
    d = memory(*cli_card)
    at = open_page("page_memory.py", {"arch": "llama-3.1-8b", "dp_ranks": "8", **query})
    assert_clean(at)
    verdict = "fits" if d["fits"] else "does not fit"
    head = next(h.value for h in at.subheader if h.value.startswith("Memory per GPU"))
    assert head == f"Memory per GPU, ZeRO-0: {format_bytes(d['memory_bytes'])} ({verdict} {card})"
    assert metrics(at)["Fits?"] == ("yes" if d["fits"] else "no")
    assert any(c.value.endswith(f"share fits {card}") for c in at.caption)
