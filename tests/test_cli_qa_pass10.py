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
