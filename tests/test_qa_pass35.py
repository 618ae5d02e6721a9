"""API papercuts of QA pass 35 (a new user planning training runs): each test failed before its
fix. The CLI's own tests of the same pass: tests/test_cli_qa_pass8.py."""

from __future__ import annotations

import math

import pytest

import costmodel as cm

from ._cli import one_line_error, run

PRICE_RULE = "usd_per_gpu_hour: must be a price in (0, 1000] USD per GPU-hour, got"
STEP = {"kind": "step", "preset": "dgx-h100", "arch": "llama-3.1-8b", "tokens": 1e12}


# --- a sweep's typed price: one range, in one set of words -------------------------------------
@pytest.mark.parametrize("usd", [-1, math.nan, math.inf, 0, 5000])
def test_a_sweeps_typed_price_out_of_range_is_refused_in_the_price_limits_words(usd):
    """`cm.sweep(kind="step", ..., usd_per_gpu_hour=-1)` (and a NaN or an infinity) said "must
    be a finite number >= 0", a range the price's own limit contradicts (0 is refused, as
    `train --usd-per-gpu-hour 0` is); `cm.sweep` now says the limit, as `train` and
    `Scenario.training_cost` do."""
    with pytest.raises(ValueError) as err:
        cm.sweep(**STEP, usd_per_gpu_hour=usd)
    assert str(err.value).startswith(PRICE_RULE), err.value
    with pytest.raises(ValueError, match=r"^usd_per_gpu_hour: must be a price in \(0, 1000\]"):
        cm.Scenario(arch="llama-3.1-8b").evaluate().training_cost(1e12, usd_per_gpu_hour=usd)


def test_a_grid_files_negative_price_is_refused_in_the_price_limits_words(tmp_path):
    grid = tmp_path / "plan.toml"
    grid.write_text(
        'kind = "step"\n[grid]\npreset = ["dgx-h100"]\narch = ["llama-3.1-8b"]\n'
        'tokens = ["1T"]\nusd_per_gpu_hour = [-1]\n'
    )
    out = tmp_path / "plan.csv"
    one_line_error(run("sweep", str(grid), "-o", str(out)), PRICE_RULE)
    assert not out.exists()


def test_a_sweeps_typed_price_in_range_still_prices_every_row():
    df = cm.sweep(**STEP, usd_per_gpu_hour="2.5")
    assert list(df["usd_per_gpu_hour"]) == [2.5]
    assert df["cost_usd"].iloc[0] == pytest.approx(2.5 * df["billed_gpu_hours"].iloc[0])
