"""The step's expected-error band is the one checked against published runs (compute band,
scaling band beyond one node, the collectives' bands), on every surface."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel.cli import app
from costmodel.strategy.band import scaling_band, step_time_band
from costmodel.strategy.step import strategy_step


def test_a_fitted_multi_node_step_carries_its_compute_and_scaling_bands():
    s = strategy_step(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp")
    assert s.compute_source == "fitted"
    lo, hi = s.step_time_band_s
    c_lo, c_hi = s.compute_band
    s_lo, s_hi = scaling_band()
    assert s_lo < 1.0 < s_hi
    # at least as wide as compute x scaling, which is what held 75-85 % of published rows
    assert lo <= s.step_time_s * c_lo * s_lo * (1 + 1e-12)
    assert hi >= s.step_time_s * c_hi * s_hi * (1 - 1e-12)
    # and not the collectives' band alone, which is a fraction of a percent here
    assert (hi - lo) / s.step_time_s > 0.15


def test_one_node_has_no_scaling_band():
    s = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp")
    lo, hi = s.step_time_band_s
    c_lo, c_hi = s.compute_band
    assert lo == pytest.approx(min(s.step_time_s * c_lo, lo), rel=1e-12)
    assert hi / s.step_time_s == pytest.approx(max(c_hi, hi / s.step_time_s), rel=1e-12)
    assert hi / s.step_time_s < c_hi * scaling_band()[1]


def test_a_given_mfu_keeps_only_the_collectives_band_on_one_node():
    s = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp", mfu=0.4)
    lo, hi = s.step_time_band_s
    assert lo <= s.step_time_s <= hi
    assert (hi - lo) / s.step_time_s < 0.05


def test_an_unfitted_gpu_has_an_unknown_band_and_says_so():
    s = strategy_step(arch="llama-3.1-70b", cluster="dgx-b200", nodes=8, strategy="fsdp")
    assert s.compute_source == "default-mfu"
    assert all(math.isnan(x) for x in s.step_time_band_s)
    r = CliRunner().invoke(
        app,
        [
            "step",
            "--arch",
            "llama-3.1-70b",
            "--cluster",
            "dgx-b200",
            "--nodes",
            "8",
            "--strategy",
            "fsdp",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "band unknown" in r.output


def test_the_band_is_one_road_api_scenario_cli():
    kw = {"arch": "llama-2-7b", "cluster": "dgx-h100", "nodes": 4}
    s = strategy_step(**kw, strategy="fsdp")
    res = cm.Scenario(**kw, strategy="fsdp").evaluate()
    assert res.step_time_lo_s == pytest.approx(s.step_time_band_s[0], rel=1e-12)
    assert res.step_time_hi_s == pytest.approx(s.step_time_band_s[1], rel=1e-12)
    r = CliRunner().invoke(
        app,
        [
            "step",
            "--arch",
            "llama-2-7b",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "4",
            "--strategy",
            "fsdp",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.output)
    assert d["step_time_lo_s"] == pytest.approx(s.step_time_band_s[0], rel=1e-12)


def test_the_band_function():
    # a collective band wider than compute x scaling is kept as the outer envelope
    assert step_time_band(1.0, (0.5, 2.0), "fitted", (0.9, 1.1), False) == (0.5, 2.0)
    assert all(
        math.isnan(x) for x in step_time_band(1.0, (math.nan, 1.0), "fitted", (0.9, 1.1), True)
    )
    lo, hi = step_time_band(2.0, (2.0, 2.0), "fitted", (0.9, 1.1), True, (0.95, 1.05))
    assert (lo, hi) == pytest.approx((2.0 * 0.9 * 0.95, 2.0 * 1.1 * 1.05))


def test_days_gpu_hours_and_dollars_carry_the_step_band():
    res = cm.Scenario(
        arch="llama-2-7b", cluster="dgx-h100", nodes=8, strategy="zero1", recompute="full"
    ).evaluate()
    cost = res.training_cost(2e12, price="aws-p5-on-demand")
    lo_f, hi_f = res.step_time_lo_s / res.step_time_s, res.step_time_hi_s / res.step_time_s
    assert lo_f < 1.0 < hi_f
    assert cost.wall_days_band == pytest.approx((cost.wall_days * lo_f, cost.wall_days * hi_f))
    assert cost.gpu_hours_band == pytest.approx((cost.gpu_hours * lo_f, cost.gpu_hours * hi_f))
    assert cost.cost_usd_band == pytest.approx((cost.cost_usd * lo_f, cost.cost_usd * hi_f))
    # a measured step has no predicted band
    m = res.training_cost(2e12, price="aws-p5-on-demand", measured_step_time_s=0.7)
    assert m.wall_days_band is None and m.as_dict()["cost_usd_band"] is None
    r = CliRunner().invoke(
        app,
        [
            "train",
            "--arch",
            "llama-2-7b",
            "--tokens",
            "2T",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "8",
            "--zero",
            "1",
            "--recompute",
            "full",
            "--price",
            "aws-p5-on-demand",
        ],
    )
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("wall clock"))
    assert f"(band {cost.wall_days_band[0]:,.1f}-{cost.wall_days_band[1]:,.1f})" in line


def test_a_band_that_does_not_hold_the_step_is_refused():
    from costmodel.training import training_cost

    with pytest.raises(ValueError, match="step_time_band_s"):
        training_cost(
            steps=10, tokens_per_step=1e6, step_time_s=1.0, ranks=8, step_time_band_s=(1.1, 1.2)
        )


def test_side_by_side_rows_show_an_unknown_band_as_unknown_not_nan():
    from costmodel.scenario import compare

    a = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=2, strategy="fsdp").evaluate()
    b = cm.Scenario(arch="llama-2-7b", cluster="dgx-b200", nodes=2, strategy="fsdp").evaluate()
    rows = {r["field"]: r for r in compare(a, b)}
    assert rows["step_time_lo_s"]["difference"] is None and rows["step_time_lo_s"]["ratio"] is None
    assert rows["step_time_hi_s"]["a"] == pytest.approx(a.step_time_hi_s)
    # the same figure on both sides differs by nothing, not by float noise
    same = {r["field"]: r for r in compare(a, a)}
    assert all(r["difference"] in (0.0, None) for r in same.values())
