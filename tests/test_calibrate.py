"""Tests for costmodel.validation.calibrate: recovery of known alpha/beta from exact model times,
the weighting, cross-validation, TOML round trip and bad input. Real measured logs are used where
the test needs real data (nccl-tests 09a, a 2-rank PCIe all-reduce)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from costmodel.validation.calibrate import (
    calibrate,
    calibrated_predictor,
    fit_alpha_beta,
    load_calibration,
    write_calibration,
)
from costmodel.validation.nccl_tests import read_nccl_tests
from tests._paths import NCCL_TESTS as DATA  # noqa: E402


def _rows(op, ranks, alpha, bandwidth, sizes, steps, volume):
    t = steps * alpha + volume(sizes) / bandwidth
    return pd.DataFrame({"op": op, "size_bytes": sizes, "ranks": ranks, "time_s": t})


def test_recovers_known_alpha_beta_across_rank_counts():
    sizes = 2.0 ** np.arange(10, 27)
    rows = pd.concat(
        [
            # ring all-reduce: s = 2(N-1), b = 2(N-1)/N M (DESIGN 3.1)
            _rows(
                "all_reduce", n, 5e-6, 20e9, sizes, 2 * (n - 1), lambda m, n=n: 2 * (n - 1) / n * m
            )
            for n in (2, 4, 8)
        ]
    )
    cal = calibrate(rows, nodes=1)  # synthetic rows: one node, said explicitly (never guessed)
    (fit,) = cal.fits
    assert fit.latency_s == pytest.approx(5e-6, rel=1e-9)  # exact data: exact fit
    assert fit.bandwidth_bytes_per_s == pytest.approx(20e9, rel=1e-9)
    assert fit.ranks == (2, 4, 8) and fit.rms_rel_error < 1e-9
    assert cal.residuals.cv_rel_error.abs().max() < 1e-9


def test_weights_are_relative():
    # the largest point 10% slow: weights 1/T keep the small sizes right, where an unweighted fit
    # (which minimises absolute seconds) would trade them away for the large point
    m = np.array([1e3, 1e4, 1e5, 1e6, 1e7, 1e8])
    t = 1e-5 + m / 1e9
    t[-1] *= 1.1
    fit = fit_alpha_beta("broadcast", m, 2, t, "chain")
    rel = np.abs(fit.predict(m, 2) - t) / t
    x = np.column_stack([np.ones_like(m), m])
    ols = np.linalg.lstsq(x, t, rcond=None)[0]
    rel_ols = np.abs(x @ ols - t) / t
    assert rel[:3].max() < 0.05 < rel_ols[:3].max()


def test_real_log_fit_and_cross_validation():
    df = read_nccl_tests(DATA / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt")
    cal = calibrate(df, min_bytes=2**16)
    (fit,) = cal.fits
    # 09a levels off at 4.00 GB/s busbw = B for N = 2 (b = M): the fit must find about that
    assert fit.bandwidth_bytes_per_s == pytest.approx(4.0e9, rel=0.05)
    assert 0 < fit.latency_s < 50e-6
    assert fit.cv_max_abs_rel_error_ge_1mib < 0.05  # held-out sizes >= 1 MiB


def test_toml_round_trip_and_predictor(tmp_path):
    sizes = 2.0 ** np.arange(12, 24)
    rows = _rows("all_gather", 4, 3e-5, 5e9, sizes, 3, lambda m: 0.75 * m).assign(nodes=2)
    cal = calibrate(rows, name="toy", source="synthetic rows of a unit test")
    path = write_calibration(cal, tmp_path / "toy.toml")
    text = path.read_text()
    assert 'kind = "calibration"' in text and "fitted to 12 measured points" in text
    back = load_calibration(path)
    assert back.fits[0].latency_s == pytest.approx(3e-5) and back.fits[0].level == "inter"
    predict = calibrated_predictor(path)
    assert predict("all_gather", [1e6], 4, nodes=2)[0] == pytest.approx(3 * 3e-5 + 0.75e6 / 5e9)
    with pytest.raises(
        ValueError, match="no fit for an inter-node all_reduce .*; it has all_gather/inter"
    ):
        predict("all_reduce", [1e6], 4, nodes=2)


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="at least 2 distinct sizes"):
        fit_alpha_beta("all_reduce", [1e6, 1e6], 2, [1e-3, 1e-3])
    with pytest.raises(ValueError, match="> 0"):
        fit_alpha_beta("all_reduce", [1e6, 2e6], 2, [1e-3, 0.0])
    with pytest.raises(ValueError, match="does not grow with size"):
        fit_alpha_beta("all_reduce", [1e6, 2e6, 4e6], 2, [4e-3, 2e-3, 1e-3])
    with pytest.raises(ValueError, match="lack columns"):
        calibrate(pd.DataFrame({"op": ["all_reduce"]}))
    bad = tmp_path / "x.toml"
    bad.write_text('kind = "cluster"\n')
    with pytest.raises(ValueError, match="not a calibration preset"):
        load_calibration(bad)


def test_fabric_terms_round_trip_and_apply_to_other_ops(tmp_path):
    """Fabric terms fitted on a real multi-node all-reduce (06a: 2 x 8 H100 over 8 x NDR400)
    are written with units, read back equal, and used for another op and node count."""
    import warnings

    from costmodel import presets
    from costmodel.predict import CalibrationWarning, predict_collective

    df = read_nccl_tests(DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    cal = calibrate(df, name="h100-ndr", source="06a", base="dell-xe9680-h100")
    (fabric,) = cal.fabric
    assert fabric.level == "inter" and fabric.fabric == "infiniband" and fabric.nodes == (2,)
    assert set(fabric.measured) <= set(fabric.terms) and "net_latency_us" in fabric.measured
    path = write_calibration(cal, tmp_path / "h100-ndr.toml")
    text = path.read_text()
    assert "[[fabric]]" in text and 'net_latency_s = "' in text  # a duration with its unit
    back = load_calibration(path)
    assert back.fabric[0].terms == pytest.approx(fabric.terms, rel=1e-12)
    # the unshrunk fit (the shrinkage moved some term) round-trips too and serves the shape
    # measured: all-reduce on 2 x 8; other ops and node counts get the shrunk terms
    assert fabric.measured_shape and "measured_shape" in text
    assert back.fabric[0].measured_shape == pytest.approx(fabric.measured_shape, rel=1e-12)
    c = presets.load(str(path))
    terms = c.calibration.fabric_terms("inter")
    assert terms.at("all_reduce", 2, 8) != terms == terms.at("all_gather", 2, 8)
    m = np.array([2.0**20, 2.0**30])
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)  # same level: applies, no warning
        for op, nodes in (("all_gather", 2), ("all_reduce", 4), ("reduce_scatter", 8)):
            got = predict_collective(op, m, c, nodes=nodes, model="calibrated").time_s
            base = predict_collective(op, m, "dell-xe9680-h100", nodes=nodes).time_s
            assert np.all(np.isfinite(got)) and not np.allclose(got, base)  # the terms are used
    with pytest.warns(CalibrationWarning, match="fitted across nodes only"):
        one = predict_collective("all_reduce", m, c, nodes=1, model="calibrated").time_s
    assert one == pytest.approx(predict_collective("all_reduce", m, "dell-xe9680-h100").time_s)
