"""Calibration that transfers: held-out error, shape, placement, levels, shrinkage.

The held-out figures are recomputed here for a subset of scripts/calibration_holdout.py's table
(docs/calibration.md): two half splits (06a, 2 x 8 H100 over NDR400; 13a, a 4-GPU H100 slice)
and siblings to another GPU count (13e 4 -> 6 GPUs), node count (Alps 64 -> 4, 4 -> 128 and
128 -> 32 nodes) and op (13a all-reduce -> 13b all-gather; 09a all-reduce -> 09b all-gather on
PCIe without P2P; 24b all-gather, 24a all-reduce and 24d all-to-all -> 24c reduce-scatter on
B200). Each bound sits 1-2 points above the achieved figure (regression bounds). Goals: <= 5 %
(half split); siblings within 10 % on >= 80 % of pairs and never more than 2 points worse than
uncalibrated (the second met on every pair, the first on 85/128: docs/calibration.md).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from costmodel.predict import CalibrationWarning, predict_collective
from costmodel.reference import reference_path
from costmodel.validation.calibrate import calibrate, load_calibration, write_calibration
from costmodel.validation.nccl_tests import read_nccl_tests
from tests._paths import load_script

ROOT = Path(__file__).resolve().parents[1]
ch = load_script("calibration_holdout")


@pytest.fixture(scope="module")
def runs():
    return ch.load_runs(
        ("06a", "09a", "09b", "09c", "13a", "13b", "13e", "15", "24a", "24b", "24c", "24d")
    )


# run -> bound on median |busbw err| >= 1 MiB of the held-out half (achieved: 06a 3.1 %,
# 1.7 % while the candidate-wide bandwidth efficiency was fitted; 13a 2.4 %)
HALF = {"06a": 0.04, "13a": 0.03}
# (fit on, predict) -> bound on median |busbw err| >= 1 MiB, 1-2 points above the achieved
# figure (docs/calibration.md; in brackets the figure before each term was shrunk by how well
# the run identifies it, calibrate.PRIOR_SD, and the uncalibrated one)
SIBLING = {
    ("13e/1", "13e/2"): 0.03,  # 2.1 % (2.1 %)
    ("15/6", "15/2"): 0.24,  # 22.6 % (15.7 %; uncalibrated 22.7 %: the shrinkage gave it up)
    ("13a", "13b"): 0.08,  # 6.1 % (6.3 %)
    ("09a", "09b"): 0.14,  # 12.6 % (11.7 %; uncalibrated 199 %: the duplex share carries over)
    ("24b", "24c"): 0.05,  # 3.8 % (2.4 %; uncalibrated 2.7 %)
    ("15/2", "15/7"): 0.13,  # 11.3 % (11.4 %; uncalibrated 11.2 %)
    ("24d", "24c"): 0.04,  # 2.7 % (2.7 %; uncalibrated 2.7 %)
    # more than 2 points worse than uncalibrated before the shrinkage
    ("15/7", "15/5"): 0.09,  # 7.2 % (15.0 %; uncalibrated 8.7 %): Alps 128 -> 32 nodes
    ("24a", "24c"): 0.04,  # 2.3 % (5.0 %; uncalibrated 2.7 %): B200 all-reduce -> RS
}


@pytest.mark.parametrize("key", sorted(HALF))
def test_half_split_held_out_error(runs, key):
    row = ch.half_split(runs[key])
    calibrated, nccl = row["calibrated"][0], row["nccl"][0]
    assert calibrated <= HALF[key]
    assert calibrated <= ch.HALF_GOAL  # the goal, met on these runs
    assert calibrated <= nccl + ch.SIBLING_WORSE  # never much worse than not calibrating


@pytest.mark.parametrize("pair", sorted(SIBLING))
def test_sibling_held_out_error(runs, pair):
    row = ch.sibling(runs[pair[0]], runs[pair[1]])
    # same level: applies; a run whose rows identified none of the terms says so (its
    # prediction is the uncalibrated model's: 24d all-to-all, Alps' 64 nodes)
    assert row["applies"]
    assert row["note"] == "" or "identified none of the model's terms" in row["note"], row["note"]
    assert row["calibrated"][0] <= SIBLING[pair]
    assert row["calibrated"][0] <= row["nccl"][0] + ch.SIBLING_WORSE


def test_sibling_pairs_are_found_from_the_presets(runs):
    pairs = ch.sibling_pairs(runs)
    assert ("13a", "13b") in pairs and ("15/6", "15/2") in pairs and ("09b", "09a") in pairs
    assert ("13a", "13a") not in pairs and ("13a", "24b") not in pairs  # same run; other cluster
    assert ("15/0", "15/1") in pairs  # across levels: listed, and said not to apply
    row = ch.sibling(runs["15/0"], runs["15/1"])
    assert not row["applies"] and "fitted on one node only" in row["note"]
    assert row["calibrated"][0] == pytest.approx(row["nccl"][0], rel=1e-9)
    # a term the rows did not measure is said, but the rest applies and the pair counts
    partial = ch.sibling(runs["09c"], runs["09a"])
    assert partial["applies"] and "did not measure the duplex share" in partial["note"]
    summary = ch.sibling_summary([row, ch.sibling(runs["13a"], runs["13b"])])
    assert summary["pairs"] == 1 and summary["not_applicable"] == 1 and summary["within"] == 1


def _log(run: str) -> pd.DataFrame:
    return read_nccl_tests(reference_path(run))


def test_nodes_never_guessed():
    df = _log("13e")  # no host lines: nodes unknown
    assert df["nodes"].isna().all()
    with pytest.raises(ValueError, match="nodes: .*never guessed"):
        calibrate(df, base="dgx-h100")
    with pytest.raises(ValueError, match="nodes 2 contradicts|contradicts"):
        calibrate(_log("06a"), nodes=1)  # 06a's host lines say 2 nodes
    cal = calibrate(df, nodes=1)  # given: one node (alpha-beta only here, to stay quick)
    (fit,) = cal.fits
    assert fit.level == "intra" and fit.ranks == (2, 4, 6)


def test_placement_is_explicit_and_recorded(tmp_path):
    df = _log("13a")
    with pytest.raises(ValueError, match="placement: 'sideways' unknown"):
        calibrate(df, placement="sideways")
    kw = {"base": "dgx-h100", "min_bytes": 2**20}
    out = calibrate(df, **kw)  # default: out-of-place, as nccl-tests users quote
    inp = calibrate(df, placement="in-place", **kw)
    both = calibrate(df, placement="both", min_bytes=2**20)
    assert (out.placement, inp.placement, both.placement) == ("out-of-place", "in-place", "both")
    assert out.fits[0].points == inp.fits[0].points == both.fits[0].points // 2
    assert out.fabric[0].terms != inp.fabric[0].terms  # different rows, different fit
    path = write_calibration(out, tmp_path / "h.toml")
    assert 'placement = "out-of-place"' in path.read_text()
    assert load_calibration(path).placement == "out-of-place"


def test_calibrated_cluster_never_falls_back_silently(runs):
    c = ch.calibrated_cluster(runs["13a"], runs["13a"].segments)  # one node only
    m = np.array([2.0**20, 2.0**30])
    base = c.model_copy(update={"calibration": None})
    uncal = predict_collective("all_reduce", m, base, nodes=2).time_s
    # across levels the fabric terms do not apply: both models say so and answer uncalibrated
    for model in ("calibrated", "nccl"):
        with pytest.warns(CalibrationWarning, match="fitted on one node only.*uncalibrated"):
            p = predict_collective("all_reduce", m, c, nodes=2, model=model)
        assert p.time_s == pytest.approx(uncal)
        assert p.error_band.measured  # the uncalibrated model's band, with its figures
    # inside the calibrated level: other GPU counts and sizes extrapolate by the model's
    # structure, no warning, and "nccl" on a calibrated cluster is the calibrated answer
    odd = m * 3  # sizes never measured (13a has powers of two)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        for g in (2, 4):
            a = predict_collective("all_reduce", odd, c, gpus_per_node=g, model="calibrated")
            b = predict_collective("all_reduce", odd, c, gpus_per_node=g, model="nccl")
            assert a.time_s == pytest.approx(b.time_s, rel=1e-12)
    uncal = predict_collective("all_reduce", odd, base, gpus_per_node=4).time_s
    assert not np.allclose(a.time_s, uncal)  # the fitted multipliers are used


def test_calibrated_candidates_respect_the_hardware_bound(runs):
    from costmodel.realistic import busbw_bound_bytes_per_s

    c = ch.calibrated_cluster(runs["06a"], runs["06a"].segments)
    m = 2.0 ** np.arange(20, 35)
    for nodes in (2, 4, 8):
        p = predict_collective("all_reduce", m, c, nodes=nodes, model="calibrated")
        for a, bw in zip(p.algorithm, p.busbw_bytes_per_s, strict=True):
            bound = busbw_bound_bytes_per_s(
                "all_reduce",
                str(a),
                nodes,
                8,
                c.intra_bandwidth_bytes_per_s,
                c.node_inter_bandwidth_bytes_per_s,
            )
            assert bw <= float(bound) * (1 + 1e-9)
        t = np.asarray(p.time_s)
        assert np.all(np.diff(t) >= 0)  # time never falls with size


def test_calibration_carries_only_the_terms_that_transfer(runs):
    """The candidate-wide bandwidth efficiency is not fitted (leave one cluster out dropped it
    at both levels: docs/calibration.md); the terms that are stay measured, and a term that is
    not a fabric term of the level is refused with the allowed ones named."""
    from costmodel.validation import calibrate as cal

    assert "bandwidth_efficiency" not in cal.FABRIC_TERMS["intra"] + cal.FABRIC_TERMS["inter"]
    assert set(cal.FABRIC_TERMS["intra"]) < set(cal.ALL_FABRIC_TERMS["intra"])
    one = ch.calibrated_cluster(runs["13a"], runs["13a"].segments).calibration.fabric[0]
    many = ch.calibrated_cluster(runs["06a"], runs["06a"].segments).calibration.fabric[0]
    assert one.level == "intra" and "bandwidth_efficiency" not in one.measured
    assert many.level == "inter" and "bandwidth_efficiency" not in many.measured
    assert one.bandwidth_efficiency == many.bandwidth_efficiency == 1.0  # the model's own
    assert set(one.measured) <= set(cal.FABRIC_TERMS["intra"]) and one.measured
    assert "nic_efficiency" in many.measured or "net_latency_us" in many.measured
    seg = cal.Segment(1, 4, 1, "auto", "auto", np.array([2.0**20, 2.0**24]), np.ones(2) * 1e-4)
    with pytest.raises(ValueError, match="terms: \\['nic_efficiency'\\] not fitted at level"):
        cal.fit_fabric([("all_reduce", seg)], runs["13a"].cluster, terms=("nic_efficiency",))


def test_term_selection_rule():
    """select_terms weighs every term set with one term left out; a pair costs 1 when it
    misses the goal (over 10 % or more than 2 points worse than uncalibrated) plus its excess."""
    from costmodel.validation.calibrate import ALL_FABRIC_TERMS

    sets = ch._candidate_sets("inter")
    assert sets[0] == ALL_FABRIC_TERMS["inter"] and len(sets) == 1 + len(sets[0])
    assert all(len(s) == len(sets[0]) - 1 for s in sets[1:])
    assert ch._pair_loss(0.05, 0.06) == 0.0
    assert ch._pair_loss(0.05, 0.02) == pytest.approx(1.03)  # within 10 %, 3 points worse
    assert ch._pair_loss(0.12, 0.30) == 1.0  # over 10 %, better than uncalibrated


def test_terms_are_shrunk_by_how_well_the_rows_identify_them(runs):
    """After the fit each term is pulled towards the model's value by the linearised posterior
    mean (calibrate.PRIOR_SD, chosen by leave one cluster out): a term many rows see keeps
    nearly all of its shift, a weak prior (inf) keeps all of it, a strong one almost none; the
    op and shape the rows measured keep the whole fit."""
    import math

    from costmodel.predict import fitted_params
    from costmodel.validation import calibrate as cal

    frame = ch._measured_frame(runs["09a"], runs["09a"].segments)  # PCIe, no P2P: all-reduce
    df = cal._group_columns(cal._shape_columns(frame, None, None, None))
    base = runs["09a"].cluster
    segments = cal._segments(df, base, [])["intra"]
    free = cal.fit_fabric(segments, base, prior_sd=math.inf)
    default = cal.fit_fabric(segments, base)
    tight = cal.fit_fabric(segments, base, prior_sd=1e-3)
    d = "duplex_efficiency"
    assert free.kept == dict.fromkeys(free.measured, 1.0) and not free.measured_shape
    assert default.kept[d] > 0.8
    assert all(0.0 <= v <= 1.0 for v in default.kept.values())
    assert "kept: " in default.entry("x")["source"]
    # the duplex share is what the run's large sizes measure: it keeps most of its shift
    own = cal._term_start(d, "none", fitted_params())  # the model's own share
    shift = [math.log(f.terms[d] / own) for f in (free, default, tight)]
    assert abs(shift[1]) > 0.8 * abs(shift[0]) > 0
    assert abs(shift[2]) < 0.05 * abs(shift[0])  # a tight prior: the model's own value
    # the unshrunk fit is kept for the op and shape the rows measured, and used there only
    assert default.measured_shape[d] == pytest.approx(free.terms[d], rel=1e-6)
    fab = ch.calibrated_cluster(runs["09a"], runs["09a"].segments).calibration.fabric[0]
    assert fab.duplex_efficiency == pytest.approx(default.terms[d], rel=1e-9)
    assert fab.at("all_reduce", 1, 2).duplex_efficiency == pytest.approx(free.terms[d], rel=1e-6)
    assert fab.at("all_gather", 1, 2).duplex_efficiency == fab.duplex_efficiency
    with pytest.raises(ValueError, match="prior_sd: 0.0 must be > 0"):
        cal.fit_fabric(segments, base, prior_sd=0.0)


def test_shrinkage_noise_is_the_runs_scatter_and_the_tried_variants_differ():
    """The shipped shrinkage takes the whole run's scatter about the fit as the noise of every
    term (calibrate._shrinkage); the estimates weighed against it by leave one cluster out and
    not kept (calibration_holdout.NOISE_VARIANTS, docs/calibration.md "Tried, not kept") give
    another precision on rows with one large misfit, and the noise floor holds for all."""
    import numpy as np

    from costmodel.validation import calibrate as cal

    jac = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    r = np.array([0.01, -0.01, 0.02, -0.02, 1.0])  # one row the model's shape misses
    info, prec = cal._shrinkage(jac, r, 0.1)
    assert np.allclose(info, jac.T @ jac)
    assert np.allclose(prec, float(r @ r) / 3 / 0.1**2 * np.eye(2))
    _, quiet = cal._shrinkage(jac, np.zeros(5), 0.1)
    assert np.allclose(quiet, cal.NOISE_FLOOR**2 / 0.1**2 * np.eye(2))
    for name, variant in ch.NOISE_VARIANTS.items():
        v_info, v_prec = variant(jac, r, 0.1)
        assert v_info.shape == v_prec.shape == (2, 2), name
        assert np.all(np.diag(v_prec) < np.diag(prec)), name  # the misfit weighs less
        assert np.all(np.diag(variant(jac, np.zeros(5), 0.1)[1]) >= np.diag(quiet) - 1e-12)


@pytest.mark.slow
def test_the_calibration_report_is_what_the_script_writes_now():
    """docs/calibration.md is regenerated whenever the model moves: the script's report, under
    the date the file carries, equals the file (it went stale once: 87/128 after a term that
    made it 85/128)."""
    import re

    runs = ch.load_runs()
    halves = [ch.half_split(r) for r in runs.values() if len(r.segments) >= ch.MIN_SIZES]
    cache: dict = {}
    siblings = [ch.sibling(runs[a], runs[b], cache) for a, b in ch.sibling_pairs(runs)]
    text = (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    date = re.match(r"# Calibration: held-out error \((\d{4}-\d\d-\d\d)\)", text)
    assert date, text[:80]
    assert ch.markdown(halves, siblings, date.group(1), ch.BEFORE) == text, (
        "docs/calibration.md is stale: run python scripts/calibration_holdout.py"
    )
