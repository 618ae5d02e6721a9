"""Prices and the calendar: the "more than 365 days old" warning at its boundary (leap years
included), a price dated after today flagged, a price date that is no ISO date refused naming
`date`, and the same warning in the API, `costmodel train` (text and --json), a step sweep's
`cost_note` and the step page. Every test here fixes the day (`today=` or
`training.current_date` replaced), so none changes its answer when the calendar moves."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from typer.testing import CliRunner

from costmodel import cli, training
from costmodel.cli._common import cli_words
from costmodel.scenario import Scenario
from costmodel.training import Price, load_price, price_age_warning, training_cost
from costmodel.web.common import page_words

PRESET = "lambda-b200-on-demand"  # the B200 price the step page and train are tested with
TRAIN = ("train", "--arch", "llama-2-7b", "--tokens", "2T", "--cluster", "dgx-b200")


def _dated(name: str, date: str) -> Price:
    """The preset ``name`` with another source date (validated as a price file is)."""
    return Price.model_validate({**load_price(name).model_dump(), "date": date})


def _freeze(monkeypatch: pytest.MonkeyPatch, day: dt.date) -> None:
    monkeypatch.setattr(training, "current_date", lambda: day)


def _run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


# --- the boundary ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("date", "today", "stale"),
    [
        ("2026-11-09", "2027-11-09", False),  # 365 days, no February 29 between: a year
        ("2026-11-09", "2027-11-10", True),  # 366 days
        ("2027-03-01", "2028-02-29", False),  # 365 days across 2028-02-29
        ("2027-03-01", "2028-03-01", True),  # 366 days: the leap year's anniversary is flagged
        ("2028-02-29", "2029-02-28", False),  # 365 days from a February 29
        ("2028-02-29", "2029-03-01", True),  # 366 days
        ("2026-11-09", "2026-11-09", False),  # read today
    ],
)
def test_the_warning_fires_from_366_days_in_every_year(date, today, stale):
    p = _dated("aws-p5-on-demand", date)
    day = dt.date.fromisoformat(today)
    w = price_age_warning(p, today=day)
    assert bool(w) is stale, w
    age = (day - p.day).days
    assert age in (365, 366) or (age == 0 and not stale)
    if stale:
        assert w.startswith(f"price aws-p5-on-demand is from {date}, 366 days old: ")
    # the cost carries the same words, at the same boundary
    kw = dict(steps=1, tokens_per_step=1.0, step_time_s=1.0, ranks=8, price=p, today=day)
    assert training_cost(**kw).price_warning == w


def test_the_default_day_is_the_one_current_date_gives():
    """No `today`: the clock read through `training.current_date` (a test replaces it)."""
    assert training.current_date() == dt.date.today()
    p = load_price(PRESET)
    assert price_age_warning(p) == price_age_warning(p, today=training.current_date())


def test_shipped_presets_at_2026_12_05_none_is_a_year_old_and_the_first_turn_in_january():
    """On 2026-12-05 no shipped price is more than 365 days old; the oldest, AWS P4d/P4de
    1-year reserved (2026-01-21), are flagged from 2027-01-22, and every one by 2027-11-10."""
    names = training.price_names()
    day = dt.date(2026, 12, 5)
    assert [n for n in names if price_age_warning(n, today=day)] == []
    oldest = min(load_price(n).day for n in names)
    assert oldest == dt.date(2026, 1, 21)
    first = sorted(n for n in names if price_age_warning(n, today=dt.date(2027, 1, 22)))
    assert first == ["aws-p4d-reserved-1y", "aws-p4de-reserved-1y"]
    assert all(price_age_warning(n, today=dt.date(2027, 11, 10)) for n in names)


# --- a date after today, a date that is no date --------------------------------------------
def test_a_price_dated_after_today_is_flagged_not_taken_as_fresh():
    p = _dated("aws-p5-on-demand", "2027-01-04")
    w = price_age_warning(p, today=dt.date(2026, 12, 5))
    assert w == (
        "price aws-p5-on-demand is dated 2027-01-04, 30 days after today (2026-12-05): a price "
        "cannot be read on a day still to come, so its date or the system clock is wrong; check "
        "the price's date or give `usd_per_gpu_hour`"
    )
    c = training_cost(
        steps=1, tokens_per_step=1.0, step_time_s=1.0, ranks=8, price=p,
        today=dt.date(2026, 12, 5),
    )  # fmt: skip
    assert c.price_warning == w and c.price_date == "2027-01-04"


def test_a_shipped_price_read_by_a_clock_set_in_the_past_is_flagged(monkeypatch):
    """A machine whose clock is behind (2026-01-01) is told the price is from its future."""
    _freeze(monkeypatch, dt.date(2026, 1, 1))
    r = _run(*TRAIN, "--price", PRESET)
    assert r.exit_code == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("warning: ")]
    assert lines == [
        f"warning: price {PRESET} is dated 2026-09-20, 262 days after today (2026-01-01): a "
        "price cannot be read on a day still to come, so its date or the system clock is "
        "wrong; check the price's date or give --usd-per-gpu-hour"
    ]


@pytest.mark.parametrize("date", ["2026-13-01", "Nov 2026", "20261109", "2026-11-9", ""])
def test_a_price_date_that_is_no_iso_date_is_refused_naming_date(date):
    with pytest.raises(ValueError, match=r"date: expected an ISO date \(YYYY-MM-DD\), got "):
        _dated("aws-p5-on-demand", date)


# --- the same words everywhere ----------------------------------------------------------------
def test_train_text_and_json_warn_from_day_366_in_the_apis_words(monkeypatch):
    p = load_price(PRESET)
    _freeze(monkeypatch, p.day + dt.timedelta(days=365))
    r = _run(*TRAIN, "--price", PRESET)
    assert r.exit_code == 0, r.stderr
    assert not [x for x in r.stdout.splitlines() if x.startswith("warning: ")]
    cost = next(x for x in r.stdout.splitlines() if x.startswith("cost"))
    assert f"at {p.date} prices" in cost
    assert json.loads(_run(*TRAIN, "--price", PRESET, "--json").stdout)["price_warning"] == ""

    day = p.day + dt.timedelta(days=366)
    _freeze(monkeypatch, day)
    api = price_age_warning(p, today=day)
    assert "366 days old" in api and "`usd_per_gpu_hour`" in api
    r = _run(*TRAIN, "--price", PRESET)
    lines = [x for x in r.stdout.splitlines() if x.startswith("warning: ")]
    assert lines == [f"warning: {cli_words(api, {'usd_per_gpu_hour': '--usd-per-gpu-hour'}.get)}"]
    assert "--usd-per-gpu-hour" in lines[0]
    d = json.loads(_run(*TRAIN, "--price", PRESET, "--json").stdout)
    assert "warning: " + d["price_warning"] == lines[0] and d["price_date"] == p.date
    # the scenario's cost table says it too, under the same words
    r = _run(
        "scenario", "--arch", "llama-2-7b", "--cluster", "dgx-b200", "--tokens", "2T",
        "--price", PRESET,
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert [x for x in r.stdout.splitlines() if x.startswith("warning: price")] == lines


def test_scenario_result_cost_takes_the_day_as_the_function_does():
    r = Scenario(params=1e9, cluster="dgx-b200", nodes=1).evaluate(scaling=False, flips=False)
    p = load_price(PRESET)
    fresh = r.training_cost(1e9, price=PRESET, today=p.day + dt.timedelta(days=365))
    stale = r.training_cost(1e9, price=PRESET, today=p.day + dt.timedelta(days=366))
    assert fresh.price_warning == ""
    assert stale.price_warning == price_age_warning(p, today=p.day + dt.timedelta(days=366))


def test_sweep_rows_carry_the_price_date_and_the_warning_in_cost_note(monkeypatch):
    from costmodel.sweep import sweep

    p = load_price(PRESET)
    grid = dict(kind="step", preset="dgx-b200", arch="llama-2-7b", tokens="2T", price=PRESET)
    _freeze(monkeypatch, p.day + dt.timedelta(days=365))
    df = sweep(**grid)
    assert list(df["price_date"]) == [p.date] and list(df["price"]) == [PRESET]
    assert "days old" not in df["cost_note"].iloc[0]
    day = p.day + dt.timedelta(days=366)
    _freeze(monkeypatch, day)
    df = sweep(**grid)
    assert list(df["price_date"]) == [p.date]
    assert price_age_warning(p, today=day) in df["cost_note"].iloc[0]


def test_step_page_warns_from_day_366_in_the_apis_words(monkeypatch):
    from tests.test_app import assert_clean, open_page

    p = load_price(PRESET)

    def page(day: dt.date):
        _freeze(monkeypatch, day)
        at = open_page("page_ddp.py", {"ddp_cluster": "dgx-b200", "ddp_nodes": "1"})
        at.selectbox(key="ddp_price").set_value(PRESET).run()
        assert_clean(at)
        cost = next(m for m in at.metric if m.label == "Cost [USD]")
        assert f"prices as of {p.date}" in cost.help
        return [w.value for w in at.warning if "days old" in w.value or "after today" in w.value]

    assert page(p.day + dt.timedelta(days=365)) == []
    day = p.day + dt.timedelta(days=366)
    assert page(day) == [page_words(price_age_warning(p, today=day))]
