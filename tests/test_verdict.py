"""A winner only when it wins (costmodel.verdict): one decision, on every surface."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.predict import predict_all_algorithms, predict_collective
from costmodel.strategy.band import scaling_band
from costmodel.verdict import (
    WITHIN,
    comm_half_width,
    compute_half_width,
    decide,
    decide_scenarios,
    decide_sizes,
    step_half_width,
)


def test_a_gap_inside_the_band_names_no_winner():
    v = decide({"ring": 74e-3, "nvls_tree": 76.6e-3}, 0.41)
    assert v.winner is None and v.label() == WITHIN
    assert v.gap == pytest.approx(76.6 / 74 - 1)
    assert v.text().startswith(WITHIN) and "±41%" in v.text()


def test_a_gap_beyond_the_band_names_the_faster():
    v = decide({"tree": 3.0, "ring": 1.0, "nvls": 2.0}, 0.41)
    assert v.winner == "ring" and v.runner_up == "nvls" and v.gap == pytest.approx(1.0)
    # the edge: a gap equal to the band is not a win
    assert decide({"a": 1.0, "b": 1.25}, 0.25).winner is None
    assert decide({"a": 1.0, "b": 1.2501}, 0.25).winner == "a"


def test_an_unknown_band_never_names_a_winner_but_says_why():
    for band in (None, math.nan):
        v = decide({"a": 1.0, "b": 5.0}, band)
        assert v.winner is None and not v.known
        assert "unknown" in v.label() and "unknown" in v.text()
    assert decide({"only": 1.0}, None).winner == "only"  # one candidate: nothing to decide


def test_bad_times_name_the_field():
    with pytest.raises(ValueError, match="no candidate"):
        decide({}, 0.1)
    with pytest.raises(ValueError, match=r"times_s\['b'\]"):
        decide({"a": 1.0, "b": -1.0}, 0.1)
    with pytest.raises(ValueError, match="rows"):
        decide_sizes(["a"], [[1.0], [2.0]], 0.1)


def test_per_size_verdicts_follow_each_sizes_band():
    v = decide_sizes(["a", "b"], np.array([[1.0, 1.0], [1.1, 1.1]]), [0.05, 0.2])
    assert [x.winner for x in v] == ["a", None]


def test_all_algorithms_carry_the_verdict_of_their_best_two():
    """14 GB on 8 DGX H100, ring 3% ahead of NVLS-tree under ±41%."""
    sizes = [2**20, 14e9]
    r = predict_all_algorithms("all_reduce", sizes, "dgx-h100", nodes=8)
    band = predict_collective("all_reduce", np.asarray(sizes), "dgx-h100", nodes=8).error_band
    assert len(r.verdicts) == len(sizes)
    for size, v, hw in zip(sizes, r.verdicts, band.half_width, strict=True):
        at = r.frame[r.frame.message_bytes == size].sort_values("time_s")
        assert v.best == at.algorithm.iloc[0] and v.runner_up == at.algorithm.iloc[1]
        assert v.gap == pytest.approx(at.time_s.iloc[1] / at.time_s.iloc[0] - 1)
        assert v.half_width == pytest.approx(hw)
    assert r.verdicts[1].winner is None  # 14 GB: within the expected error
    assert r.verdicts[0].winner == "tree"  # 1 MiB: tree wins by more than the band
    d = r.to_dict()["verdicts"]
    assert d[1]["verdict"] == WITHIN and d[0]["winner"] == "tree"


def test_cli_all_algorithms_says_within_the_expected_error():
    args = ["collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100"]
    result = CliRunner().invoke(cli.app, [*args, "--nodes", "8", "--algorithm", "all"])
    assert result.exit_code == 0, result.output
    assert "fastest at 14 GB: within the expected error: ring" in result.output
    out = CliRunner().invoke(cli.app, [*args, "--nodes", "8", "--algorithm", "all", "--json"])
    assert json.loads(out.stdout)["verdicts"][0]["winner"] is None


def test_scenario_vs_decides_under_the_step_band():
    from costmodel.scenario import Scenario

    a = Scenario(params=7e9, cluster="dgx-h100", nodes=8)
    ra = a.evaluate(scaling=False, flips=False)
    same = a.with_changes("nodes=16").evaluate(scaling=False, flips=False)
    slower = a.with_changes("cluster=dgx-a100").evaluate(scaling=False, flips=False)
    h = comm_half_width(ra)
    band = predict_collective(
        "all_reduce", a.effective_bucket_cap_bytes, "dgx-h100", nodes=8, model="nccl"
    ).error_band
    assert h == pytest.approx(float(band.half_width) * ra.exposed_comm_s / ra.step_time_s)
    lo, hi = ra.compute_band
    assert ra.compute_source == "fitted" and hi > 1 > lo  # the fitted efficiency's band
    c = compute_half_width(ra)
    assert c == pytest.approx(max(1 - lo, hi - 1) * ra.compute_s / ra.step_time_s)
    assert step_half_width(ra) == pytest.approx(h + c)
    assert decide_scenarios(ra, slower).winner == "A"
    v = decide_scenarios(ra, same)
    assert v.winner is None or v.gap > v.half_width
    result = CliRunner().invoke(
        cli.app,
        ["scenario", "--params", "7B", "--nodes", "8", "--vs", "cluster=dgx-a100", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["faster_step"]["winner"] == "A"


def _side_by_side(changes: str, **kw):
    from costmodel.scenario import Scenario

    a = Scenario(**kw)
    b = a.with_changes(changes)
    return a.evaluate(scaling=False, flips=False), b.evaluate(scaling=False, flips=False)


def test_scenario_vs_on_other_gpus_adds_both_compute_bands():
    """70B H100 vs A100: the expected error holds both sides' compute bands (they run on
    different GPUs, so their errors do not cancel), not the communication's 0.3 % alone."""
    ra, rb = _side_by_side("cluster=dgx-a100", arch="llama-3.1-70b", nodes=8, zero_stage=3)
    assert ra.gpu_name != rb.gpu_name
    v = decide_scenarios(ra, rb)
    band_a = max(1 - ra.compute_band[0], ra.compute_band[1] - 1)
    band_b = max(1 - rb.compute_band[0], rb.compute_band[1] - 1)
    assert v.half_width > band_a and v.half_width > band_b
    assert v.half_width == pytest.approx(step_half_width(ra) + step_half_width(rb))
    assert v.half_width > 10 * (comm_half_width(ra) + comm_half_width(rb))
    assert v.winner == "A" and "expected error ±" in v.text()  # a 2.2x gap still wins


def test_scenario_vs_a_gpu_without_fitted_compute_names_no_winner():
    """H100 vs B200: the B200's compute is the default MFU (no fitted efficiency for its
    family), so the expected error is unknown, and the answer says why instead of a winner."""
    ra, rb = _side_by_side("cluster=dgx-b200", arch="llama-2-7b", nodes=8, zero_stage=1)
    assert (ra.compute_source, rb.compute_source) == ("fitted", "default-mfu")
    assert math.isnan(compute_half_width(rb))
    v = decide_scenarios(ra, rb)
    assert v.winner is None and not v.known and v.best == "B"
    assert "B's compute is the default MFU" in v.text()
    from costmodel.scenario import compare_summary

    assert compare_summary(ra, rb).startswith(v.text())
    assert "same step time" not in compare_summary(ra, rb)


def test_scenario_vs_same_gpu_shares_the_compute_error():
    """8 vs 64 H100s: one compute error on both sides, counted through the compute shares'
    difference; a clearly different step (same global batch) still names its winner."""
    ra, rb = _side_by_side("nodes=8,local_batch=1", arch="llama-2-7b", nodes=1, local_batch=8)
    v = decide_scenarios(ra, rb)
    fa, fb = ra.compute_s / ra.step_time_s, rb.compute_s / rb.step_time_s
    lo, hi = ra.compute_band
    s_lo, s_hi = scaling_band()  # 1 vs 8 nodes: the ratio is the scaling path's, its band added
    expect = max(comm_half_width(ra), comm_half_width(rb)) + max(1 - lo, hi - 1) * abs(fa - fb)
    assert v.half_width == pytest.approx(expect + max(1 - s_lo, s_hi - 1))
    assert v.winner == "B" and v.gap > 1
