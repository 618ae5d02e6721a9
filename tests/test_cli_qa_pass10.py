"""Days and dollars on which GPUs, QA pass 10 (`costmodel train`, `scenario --vs`, the API's
`training_cost`): each test failed before its fix."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import costmodel as cm
from costmodel import training

from ._cli import run


@pytest.fixture(scope="module")
def fsdp_7b():
    """Llama-2-7B under FSDP on one DGX H100 node (it fits)."""
    return cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=1, strategy="fsdp").evaluate()


# --- the date a price's age is measured at -----------------------------------------------------
def test_a_datetime_today_is_read_as_its_date(fsdp_7b):
    """`today=datetime.now()` (a datetime is a date) raised a bare TypeError (date - datetime)
    from `training_cost`, `ScenarioResult.training_cost` and `price_age_warning`; it is read as
    its day, and the warning is the one of that date."""
    noon = dt.datetime(2028, 1, 1, 12, 30)
    day = dt.date(2028, 1, 1)
    warning = training.price_age_warning("aws-p5-on-demand", today=day)
    assert warning.startswith("price aws-p5-on-demand is from 2026-11-09, 418 days old")
    assert training.price_age_warning("aws-p5-on-demand", today=noon) == warning
    c = fsdp_7b.training_cost(2e12, price="aws-p5-on-demand", today=noon)
    assert c.price_warning == warning
    assert training.price_age_warning("aws-p5-on-demand", today=dt.datetime(2026, 12, 1)) == ""


@pytest.mark.parametrize("today", ["2028-01-01", 20280101])
def test_a_today_that_is_no_date_is_refused_naming_today(today):
    """`price_age_warning(today="2028-01-01")` raised a bare TypeError (str - date)."""
    with pytest.raises(ValueError, match=r"^today: expected a datetime\.date, got "):
        training.price_age_warning("aws-p5-on-demand", today=today)


# --- how a price is bought, beside its rate and in --json --------------------------------------
_7B = ("--arch", "llama-2-7b", "--nodes", "2", "--zero", "1", "--tokens", "2T")


@pytest.mark.parametrize(
    "price, terms",
    [("gcp-a3-high-spot", "spot"), ("gcp-a3-high-cud-3y", "committed-3y"),
     ("aws-p5-capacity-block", "capacity-block"), ("aws-p5-on-demand", "on-demand")],
)  # fmt: skip
def test_train_names_the_preset_and_its_terms_in_json_and_beside_the_rate(price, terms):
    """`train --json` gave the preset only inside the free-text `price_note` (a sweep's row has
    a `price` column), and the `price` row read "$6.2894 per GPU-hour, as of 2026-10-10" for a
    spot rate as for an on-demand one: the terms were said only on the last line."""
    r = run("train", *_7B, "--price", price, "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["price"], d["price_terms"]) == (price, terms)
    p = cm.load_price(price)
    assert d["usd_per_gpu_hour"] == p.usd_per_gpu_hour
    # the arithmetic the figures claim: GPU-hours = days x 24 x GPUs, dollars = those x rate
    assert d["gpu_hours"] == pytest.approx(d["wall_days"] * 24 * d["ranks"], rel=1e-12)
    assert d["cost_usd"] == pytest.approx(d["billed_gpu_hours"] * d["usd_per_gpu_hour"])
    text = run("train", *_7B, "--price", price).stdout
    row = next(x for x in text.splitlines() if x.startswith("price "))
    assert f"per GPU-hour ({terms}), as of {p.date}" in row, row


def test_a_typed_rate_has_no_preset_and_no_terms():
    d = json.loads(run("train", *_7B, "--usd-per-gpu-hour", "2", "--json").stdout)
    assert d["price"] is None and d["price_terms"] is None
    c = training.training_cost(
        steps=10, tokens_per_step=1e6, step_time_s=1.0, ranks=8, price="aws-p4d-reserved-1y"
    )
    assert (c.price, c.price_terms) == ("aws-p4d-reserved-1y", "committed-1y")


def test_scenario_vs_says_each_sides_terms_beside_its_rate():
    r = run("scenario", *_7B, "--price", "gcp-a3-high-spot", "--vs", "cluster=dgx-b200",
            "--price-b", "gcp-a4-cud-1y")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = next(x for x in r.stdout.splitlines() if x.startswith("price per GPU-hour"))
    assert "(spot)" in row and "(committed-1y)" in row, row
    d = json.loads(
        run(
            "scenario",
            *_7B,
            "--price",
            "gcp-a3-high-spot",
            "--vs",
            "cluster=dgx-b200",
            "--price-b",
            "gcp-a4-cud-1y",
            "--json",
        ).stdout  # fmt: skip
    )["training_cost"]
    assert (d["A"]["price"], d["A"]["price_terms"]) == ("gcp-a3-high-spot", "spot")
    assert (d["B"]["price"], d["B"]["price_terms"]) == ("gcp-a4-cud-1y", "committed-1y")


# --- the bands of GPU-hours and dollars in the comparison --------------------------------------
def test_scenario_vs_gives_the_gpu_hours_and_dollars_bands_train_gives():
    """`scenario --tokens --price --vs` printed the wall clock's band alone: its GPU-hours and
    dollars read as exact figures, where `train` gives all three bands for the same run."""
    a = ("--price", "aws-p5-on-demand")
    r = run("scenario", *_7B, *a, "--vs", "cluster=dgx-b200")
    assert r.exit_code == 0, r.stderr
    rows = {x.split("  ")[0]: x for x in r.stdout.splitlines()}
    t = run("train", *_7B, *a).stdout.splitlines()
    gpu_h = next(x for x in t if x.startswith("GPU-hours ")).split("(band ")[1].rstrip(")")
    usd = next(x for x in t if x.startswith("cost ")).split("(band ")[1].rstrip(")")
    assert rows["GPU-hours band"].split()[2:] == [gpu_h, "unknown"], rows["GPU-hours band"]
    assert rows["cost band"].split()[2:] == [usd, "unknown"], rows["cost band"]
    d = json.loads(run("train", *_7B, *a, "--json").stdout)
    lo, hi = d["cost_usd_band"]
    assert lo == pytest.approx(d["gpu_hours_band"][0] * d["usd_per_gpu_hour"])
    assert hi == pytest.approx(d["gpu_hours_band"][1] * d["usd_per_gpu_hour"])


def test_the_step_pages_cost_caption_gives_the_gpu_hours_band_train_gives():
    """The Training step page's cost caption gave the days' and the dollars' bands, not the
    GPU-hours' (their metric read as exact), where `train` prints all three."""
    from tests.test_app import assert_clean, metrics, open_page

    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "llama-2-7b", "ddp_nodes": "2", "ddp_strategy": "zero1",
         "ddp_tokens": "2T", "ddp_price": "aws-p5-on-demand"},
    )  # fmt: skip
    assert_clean(at)
    t = run("train", *_7B, "--price", "aws-p5-on-demand").stdout.splitlines()
    hours, _, band = (
        next(x for x in t if x.startswith("GPU-hours ")).split(None, 1)[1].partition(" (band ")
    )
    usd_band = next(x for x in t if x.startswith("cost ")).split("(band ")[1].rstrip(")")
    assert metrics(at)["GPU-hours"] == hours
    caption = next(c.value for c in at.caption if "Expected-error band" in c.value)
    assert f"{band.rstrip(')')} GPU-hours, {usd_band}" in caption, caption


# --- the GPU a price is checked against, given as a GPU ------------------------------------------
def test_a_gpu_object_is_checked_by_its_name():
    """`training_cost(..., price="aws-p5-on-demand", gpu=cm.cluster("dgx-h100").gpu)` refused
    the H100's own price ("a price for h100-sxm, not for this cluster's GPU name='h100-sxm'
    description=..."): the GPU was compared with the preset's GPU name. `prices_for_gpu` takes
    the same GPU by its name."""
    run_ = dict(steps=10, tokens_per_step=1e6, step_time_s=1.0, ranks=8)
    h100 = cm.cluster("dgx-h100").gpu
    c = cm.training_cost(**run_, price="aws-p5-on-demand", gpu=h100)
    assert c.cost_usd == pytest.approx(8 * 10 / 3600 * 6.88)
    assert c.price == "aws-p5-on-demand"
    assert "aws-p5-on-demand" in cm.training.prices_for_gpu(h100)
    with pytest.raises(ValueError, match="^price: lambda-b200-on-demand is a price for b200, not"):
        cm.training_cost(**run_, price="lambda-b200-on-demand", gpu=h100)
    for bad, shown in ((cm.cluster("dgx-h100"), "the cluster 'dgx-h100'"), (3, "3")):
        with pytest.raises(ValueError) as e:
            cm.training_cost(**run_, price="aws-p5-on-demand", gpu=bad)
        assert str(e.value) == (
            "gpu: expected one GPU preset name (`cm.presets.names()`) or a `cm.GPU` (a "
            f"cluster's `.gpu`), got {shown}"
        )
