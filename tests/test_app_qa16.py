"""Headless app tests from the sixteenth QA pass: configuration B's price on another GPU than
A's (one default rule for the step page's Price (B) box and `costmodel scenario --vs` without
--price-b), uploaded files kept across a page switch, and chart titles on a phone shrunk only
where they do not fit. Each test failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

from costmodel import training
from costmodel.units import format_usd
from tests._cli import run
from tests.test_app import _text, assert_clean, metrics, open_page

# --- B's price on another GPU: a preset for B's GPU, by the CLI's rule ----------------------------
H100_VS_B200 = {"ddp_pin": "true", "ddp_b_cluster": "dgx-b200"}
CLI_AB = (
    "scenario",
    "--params",
    "7B",
    "--nodes",
    "4",
    "--tokens",
    "1T",
    "--vs",
    "cluster=dgx-b200",
)


def _cli_costs(*price_args: str) -> dict:
    r = run(*CLI_AB, *price_args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["training_cost"]


def _caption(at, start: str) -> list[str]:
    return [_text(c.value) for c in at.caption if _text(c.value).startswith(start)]


@pytest.mark.parametrize(
    ("a_price", "b_price"),
    [("aws-p5-on-demand", "aws-p6-b200-on-demand"), ("coreweave-h100-spot", "coreweave-b200-spot")],
)
def test_b_on_another_gpu_starts_on_the_preset_the_cli_prices_it_at(a_price, b_price):
    """B on a B200 beside an H100 A started on "custom": B had no price of its own until one
    was typed (its dollars at the $2 placeholder), and `scenario --vs cluster=dgx-b200`
    without --price-b printed "n/a (no price)" for B while B200 presets were published. Both
    now start B on one rule's preset for B's GPU (A's provider and terms), named with its
    date, and the two give the same dollars."""
    query = {"ddp_params": "7B", "ddp_nodes": "4", "ddp_tokens": "1T", "ddp_price": a_price}
    at = open_page("page_ddp.py", {**query, **H100_VS_B200})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    assert box.value == b_price and "custom" in box.options  # custom is still offered
    chosen, why = training.default_price("b200", like=a_price)
    assert chosen.name == b_price and chosen.gpu == "b200"
    said = _caption(at, "Default for b200")
    assert said == [f"Default for b200: {b_price} ({chosen.date} prices), " + why.replace(
        ", as ", ", as A's ")], said  # fmt: skip
    cli = _cli_costs("--price", a_price)
    assert cli["B"]["price_date"] == chosen.date and cli["B_price_default"]["price"] == b_price
    m = metrics(at)
    assert m["Cost (A) [USD]"] == format_usd(cli["A"]["cost_usd"])
    assert m["Cost (B) [USD]"] == format_usd(cli["B"]["cost_usd"])


def test_the_cli_says_which_preset_b_was_priced_at_and_of_when():
    text = run(*CLI_AB, "--price", "aws-p5-on-demand")
    assert text.exit_code == 0, text.stderr
    out = text.stdout
    assert "n/a (no price)" not in out
    assert "price B: aws-p6-b200-on-demand" in out
    note = next(line for line in out.splitlines() if line.startswith("note: B runs on b200"))
    assert "priced at aws-p6-b200-on-demand (2026-10-10 prices)" in note and "--price-b" in note
    # A at a typed rate: no provider to follow; the lowest on-demand B200 price, as the app's
    # box starts on beside an A at custom
    cli = _cli_costs("--usd-per-gpu-hour", "3")
    chosen, _ = training.default_price("b200")
    assert cli["B_price_default"]["price"] == chosen.name
    at = open_page("page_ddp.py", {"ddp_params": "7B", "ddp_nodes": "4", **H100_VS_B200})
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == chosen.name
    # A unpriced in the CLI: no dollars asked, none for B either (nothing chosen)
    bare = _cli_costs()
    assert bare["B"]["cost_usd"] is None and "B_price_default" not in bare


def test_b_s_box_starts_on_custom_only_where_no_preset_is_published_for_its_gpu():
    """A V100 has no price preset: B's box offers custom alone, and nothing is chosen."""
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_cluster": "dgx1-v100"})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    gpu = box.label.removeprefix("Price (B, ").removesuffix(")")
    assert training.prices_for_gpu(gpu) == [] and training.default_price(gpu) is None
    assert box.value == "custom" and list(box.options) == ["custom"]
    assert _caption(at, "Default for") == []


def test_a_price_never_comes_from_another_gpu():
    for gpu in {training.load_price(n).gpu for n in training.price_names()}:
        for like in (None, *training.price_names()):
            chosen = training.default_price(gpu, like=like)
            assert chosen is not None and chosen[0].gpu == gpu, (gpu, like)


def test_b_s_default_follows_a_s_provider_until_b_is_picked():
    """B left at its default follows A's price (a link to the view, which leaves B at its
    default out, opens it so); a price picked for B stays."""
    at = open_page("page_ddp.py", H100_VS_B200)
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == training.default_price("b200")[0].name
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == "aws-p6-b200-on-demand"
    at.selectbox(key="ddp_price_b").set_value("gcp-a4-spot").run()
    at.selectbox(key="ddp_price").set_value("lambda-h100-on-demand").run()
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == "gcp-a4-spot"
