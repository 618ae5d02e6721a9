"""Calibrated presets: calibrate a real log, write the TOML, load it through presets.load /
cm.cluster (by path and from a presets folder), and predict through predict.predict_collective.

The reference log is nccl-tests 09a (2x RTX 2080 Ti, PCIe Gen3, no P2P, all-reduce), described by
the shipped preset ``pcie3-2x-rtx2080ti-nop2p`` (presets/README.md)."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import pytest

import costmodel as cm
from costmodel import presets
from costmodel.collectives import bytes_per_rank, latency_steps
from costmodel.hardware import CalibrationPreset, Cluster
from costmodel.predict import allreduce_time_fn, predict_collective
from costmodel.validation.calibrate import (
    calibrate,
    calibrated_predictor,
    load_calibration,
    write_calibration,
)
from costmodel.validation.nccl_tests import read_nccl_tests
from tests._paths import NCCL_TESTS as DATA  # noqa: E402

BASE = "pcie3-2x-rtx2080ti-nop2p"
HELD_OUT = np.array([3 * 2**20, 12 * 2**20, 48 * 2**20])  # sizes the log never measured


@pytest.fixture(scope="module")
def log():
    return read_nccl_tests(DATA / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt")


@pytest.fixture(scope="module")
def cal(log):
    return calibrate(log, name="rtx-cal", min_bytes=2**16, source="nccl-tests 09a", base=BASE)


def _fitted(fit, m, n):
    """T = s(N) alpha + b(M, N) / B with the fitted figures (DESIGN 3.1), computed here."""
    return (
        latency_steps("all_reduce", n, fit.algorithm) * fit.latency_s
        + bytes_per_rank("all_reduce", m, n, fit.algorithm) / fit.bandwidth_bytes_per_s
    )


def test_written_toml_loads_by_path_as_the_base_cluster(cal, tmp_path):
    path = write_calibration(cal, tmp_path / "rtx-cal.toml")
    text = path.read_text()
    assert 'kind = "calibration"' in text and f'base = "{BASE}"' in text
    assert 'latency_s = "' in text  # quantities with units, as every preset file
    c = presets.load(str(path))
    assert isinstance(c, Cluster) and c.name == "rtx-cal" and c.calibration is not None
    base = presets.load(BASE)
    assert c.node == base.node and c.calibration.base == BASE  # the base hardware, unchanged
    assert cm.cluster(path).calibration == c.calibration  # a PathLike works too
    (fit,) = c.calibration.fits
    (orig,) = cal.fits
    # the TOML carries the fit exactly (repr-exact unit strings)
    assert fit.latency_s == orig.latency_s
    assert fit.bandwidth_bytes_per_s == orig.bandwidth_bytes_per_s


def _realistic(cal, m, op="all_reduce", **kw):
    """The realistic model on the base preset under the calibrated fabric terms."""
    from costmodel.predict import fitted_params, realistic_time_s

    (fabric,) = cal.fabric  # one level measured (one node)
    c = presets.cluster(BASE)
    # the unshrunk fit on the op and shape measured, the shrunk terms elsewhere
    params, scale = fabric.at(op, c.nodes, c.gpus_per_node).inputs(fitted_params())
    return realistic_time_s(op, m, c, params=params, candidate_scale=scale, **kw)


def test_predicts_held_out_sizes_with_the_fit(cal, log, tmp_path):
    # behaviour change: with a base cluster, "calibrated" and "nccl" run the
    # realistic model with its calibrated candidates, no longer the alpha-beta line
    path = write_calibration(cal, tmp_path / "rtx-cal.toml")
    t_ref, a_ref, p_ref = _realistic(cal, HELD_OUT)
    # one level (one node), fitted on a duplex op of a host-staged (no P2P) node: the shortfall
    # is the duplex share, the link's one-way efficiency keeps the model's value (confounded)
    (fabric,) = cal.fabric
    assert fabric.level == "intra" and "duplex_efficiency" in fabric.measured
    assert "bandwidth_efficiency" not in fabric.measured and fabric.terms["duplex_efficiency"] < 1
    for model in ("calibrated", "nccl"):  # "nccl" picks the calibration up automatically
        p = predict_collective("all_reduce", HELD_OUT, str(path), model=model)
        assert p.time_s == pytest.approx(t_ref, rel=1e-12)
        assert p.algorithm.tolist() == a_ref.tolist() and p.protocol.tolist() == p_ref.tolist()
        assert p.busbw_bytes_per_s == pytest.approx(HELD_OUT / p.time_s)  # factor 1 at N=2
    # the multipliers change the answer (else the calibration would be a no-op)
    assert not np.allclose(t_ref, predict_collective("all_reduce", HELD_OUT, BASE).time_s)
    # and it describes the measurement from 1 MiB up: median within 5 %; the worst size (256 MiB,
    # where the model's mid-size ramp has faded and 09a has not levelled off) 7.4 % (bound 8 %;
    # the alpha-beta line was within 5 % there, the realistic structure trades it for the
    # small and mid sizes, docs/calibration.md)
    oop = log[(log.placement == "out_of_place") & (log.size_bytes >= 2**20)]
    p = predict_collective("all_reduce", oop.size_bytes.to_numpy(float), str(path))
    err = np.abs(p.time_s / oop.time_s.to_numpy() - 1)
    assert np.median(err) < 0.05 and err.max() < 0.08
    # the calibrated predictor of compare goes the same road
    t = calibrated_predictor(path)("all_reduce", HELD_OUT, 2)
    assert t == pytest.approx(t_ref, rel=1e-12)
    # the alpha-beta line is still fitted and written (machines without a cluster preset)
    (orig,) = cal.fits
    assert load_calibration(path).fits[0].latency_s == orig.latency_s


def test_uncovered_ops_and_reference_models(cal, tmp_path):
    from costmodel.predict import CalibrationWarning

    path = str(write_calibration(cal, tmp_path / "rtx-cal.toml"))
    m = np.array([2.0**20, 2.0**26])
    # fabric terms are the path's, not the op's: other ops of the level use them too, silently
    # (nothing to warn about), under "nccl" and "calibrated" alike
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        for op in ("all_gather", "broadcast"):
            want = _realistic(cal, m, op=op)[0]
            for model in ("nccl", "calibrated"):
                got = predict_collective(op, m, path, model=model).time_s
                assert got == pytest.approx(want, rel=1e-12)
        # broadcast moves data one way: the duplex share does not touch its bandwidth (at 64 MiB
        # only the fitted latency and host-floor terms differ: under 0.1 %)
        got = predict_collective("broadcast", m, path).time_s[1]
        assert got == pytest.approx(predict_collective("broadcast", m, BASE).time_s[1], rel=1e-3)
    # NCCL's table and the textbook stay uncalibrated references
    for model in ("nccl-table", "textbook"):
        got = predict_collective("all_reduce", m, path, model=model).time_s
        assert got == pytest.approx(predict_collective("all_reduce", m, BASE, model=model).time_s)
    # a pinned algorithm: the calibrated candidate (or the '*' default) of the same model
    tree = predict_collective("all_reduce", m, path, algorithm="tree")
    assert tree.time_s == pytest.approx(_realistic(cal, m, algorithm="tree")[0], rel=1e-12)
    assert set(tree.algorithm.tolist()) == {"tree"}
    with pytest.raises(ValueError, match="carries no calibration"):
        predict_collective("all_reduce", m, BASE, model="calibrated")


# One fixed stamp for files compared with each other: the default is the wall clock, and two writes
# a second apart used to differ in ``created`` (a flaky comparison).
CREATED = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)


def test_presets_folder_listing_and_ddp(cal, tmp_path):
    folder = tmp_path / "mine"
    write_calibration(cal, folder / "calibrations" / "rtx-cal.toml", created=CREATED)
    assert "rtx-cal" in presets.names("cluster", dirs=[folder])
    assert "rtx-cal" in presets.names("calibration", dirs=[folder])
    assert "rtx-cal" not in presets.names("cluster")  # user folders only when given
    row = next(r for r in presets.listing("cluster", dirs=[folder]) if r.name == "rtx-cal")
    assert row.kind == "calibration" and row.origin == "user" and "calibrated on" in row.headline
    c = presets.cluster("rtx-cal", dirs=[folder])
    f = allreduce_time_fn(c)  # DDP buckets use the calibrated all-reduce
    assert f(np.array([25 * 2**20]))[0] == pytest.approx(_realistic(cal, [25 * 2**20])[0][0])
    # a file directly in the folder works too (kind = "calibration" says what it is)
    flat = tmp_path / "flat"
    write_calibration(cal, flat / "rtx-cal.toml", created=CREATED)
    assert presets.cluster("rtx-cal", dirs=[flat]).calibration == c.calibration


def test_created_stamp_is_injectable_and_written_as_given(cal, tmp_path):
    a = write_calibration(cal, tmp_path / "a" / "rtx-cal.toml", created=CREATED)
    b = write_calibration(cal, tmp_path / "b" / "rtx-cal.toml", created=CREATED)
    assert a.read_bytes() == b.read_bytes()
    assert 'created = "2026-11-30T12:00:00+00:00"' in a.read_text()
    assert presets.load(str(a)).calibration.created == "2026-11-30T12:00:00+00:00"
    # another zone is written as the same instant in UTC
    later = CREATED.astimezone(dt.timezone(dt.timedelta(hours=2)))
    c = write_calibration(cal, tmp_path / "c" / "rtx-cal.toml", created=later)
    assert c.read_bytes() == a.read_bytes()
    # the default is the wall clock, in UTC
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    d = write_calibration(cal, tmp_path / "d" / "rtx-cal.toml")
    stamp = dt.datetime.fromisoformat(presets.load(str(d)).calibration.created)
    assert before <= stamp <= dt.datetime.now(dt.UTC)
    with pytest.raises(ValueError, match="created: needs a timezone"):
        write_calibration(cal, tmp_path / "e.toml", created=dt.datetime(2026, 1, 1))


def test_to_toml_round_trip_of_a_calibrated_cluster(cal, tmp_path):
    c = presets.load(str(write_calibration(cal, tmp_path / "rtx-cal.toml")))
    again = tmp_path / "copy.toml"
    again.write_text(presets.to_toml(c))
    back = presets.load(str(again))
    assert back.calibration == c.calibration and back.node == c.node
    bare = presets.to_toml(c.calibration)
    assert bare.startswith('preset = "calibration"') and "[[fit]]" in bare


def test_without_base_loads_as_calibration_not_cluster(log, tmp_path):
    cal = calibrate(log, name="cpu-only", min_bytes=2**16, source="nccl-tests 09a")
    path = str(write_calibration(cal, tmp_path / "cpu-only.toml"))
    loaded = presets.load(path)
    assert isinstance(loaded, CalibrationPreset) and loaded.base is None
    with pytest.raises(presets.PresetError, match="names no base cluster"):
        cm.cluster(path)
    assert load_calibration(path).fits[0].latency_s == cal.fits[0].latency_s


def test_bad_input(cal, tmp_path):
    with pytest.raises(presets.PresetError, match="closest: pcie3-2x-rtx2080ti-nop2p"):
        write_calibration(cal, tmp_path / "x.toml", base="pcie3-2x-rtx2080ti")
    with pytest.raises(ValueError, match="name"):
        write_calibration(cal.__class__("Bad Name", cal.fits, "s"), tmp_path / "y.toml")
    with pytest.raises(presets.PresetError, match="does not exist"):
        presets.load(str(tmp_path / "missing.toml"))
    # an older file with bare numbers: load_calibration reads it, the preset loader refuses it
    old = tmp_path / "old.toml"
    old.write_text(
        'kind = "calibration"\nname = "old"\nsource = "s"\n[[fit]]\nop = "all_reduce"\n'
        'algorithm = "ring"\nprotocol = "auto"\nlevel = "intra"\nlatency_s = 1e-05\n'
        "bandwidth_bytes_per_s = 4e9\nranks = [2]\npoints = 9\nrms_rel_error = 0.01\n"
        'max_abs_rel_error = 0.02\nsource = "s"\n'
    )
    assert load_calibration(old).fits[0].bandwidth_bytes_per_s == 4e9
    with pytest.raises(presets.PresetError, match="latency_s: a unit is required"):
        presets.load(str(old))
    # a folder file whose name differs from its file name is refused, naming both
    wrong = tmp_path / "w"
    write_calibration(cal, wrong / "other.toml")
    with pytest.raises(presets.PresetError, match="differs from the file name"):
        presets.names(dirs=[wrong])


def test_scenario_picks_the_calibration_up_by_name(cal, tmp_path, monkeypatch):
    from costmodel.scenario import Scenario

    write_calibration(cal, tmp_path / "rtx-cal.toml")
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    got = Scenario(params="100M", cluster="rtx-cal").evaluate(scaling=False, flips=False)
    base = Scenario(params="100M", cluster=BASE).evaluate(scaling=False, flips=False)
    (fit,) = cal.fits
    # 100M bf16 gradients (2 B each) over the fitted ring at N = 2 (b = M): 200 MB / B, plus
    # 2 alpha per bucket (~9 buckets x 23 us = 0.2 ms, 0.4%): within 2%
    assert got.comm_s == pytest.approx(2e8 / fit.bandwidth_bytes_per_s, rel=0.02)
    assert abs(got.comm_s / base.comm_s - 1) > 0.03  # not the uncalibrated NCCL model


def test_a_term_the_rows_did_not_measure_is_said(tmp_path):
    """Calibrated on broadcast (one way) on the host-staged PCIe box, the duplex share is not
    measured: an all-reduce (both ways at once) warns that it keeps the model's share; the other
    terms still apply. Broadcast itself and all-reduce from an all-reduce calibration do not."""
    from costmodel.predict import CalibrationWarning

    bc = read_nccl_tests(DATA / "09c_autodl-1x2x2080Ti-PCIe3-noP2P_broadcast.txt")
    cal = calibrate(bc, name="rtx-bc", min_bytes=2**16, source="nccl-tests 09c", base=BASE)
    (fabric,) = cal.fabric
    assert "duplex_efficiency" not in fabric.measured and fabric.ops == ("broadcast",)
    path = str(write_calibration(cal, tmp_path / "rtx-bc.toml"))
    m = np.array([2.0**20, 2.0**26])
    with pytest.warns(CalibrationWarning, match="did not measure the duplex share.*broadcast"):
        got = predict_collective("all_reduce", m, path, model="calibrated").time_s
    assert got == pytest.approx(_realistic(cal, m)[0], rel=1e-12)  # the other terms apply
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        predict_collective("broadcast", m, path, model="calibrated")
        predict_collective("all_reduce", m, BASE)  # no calibration: nothing to say
