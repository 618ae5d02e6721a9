"""A winner only when it wins (costmodel.verdict): one decision, on every surface."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.predict import predict_all_algorithms, predict_collective
from costmodel.verdict import WITHIN, decide, decide_scenarios, decide_sizes, step_half_width


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
    h = step_half_width(ra)
    band = predict_collective(
        "all_reduce", a.effective_bucket_cap_bytes, "dgx-h100", nodes=8, model="nccl"
    ).error_band
    assert h == pytest.approx(float(band.half_width) * ra.exposed_comm_s / ra.step_time_s)
    assert decide_scenarios(ra, slower).winner == "A"
    v = decide_scenarios(ra, same)
    assert v.winner is None or v.gap > v.half_width
    result = CliRunner().invoke(
        cli.app,
        ["scenario", "--params", "7B", "--nodes", "8", "--vs", "cluster=dgx-a100", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["faster_step"]["winner"] == "A"
