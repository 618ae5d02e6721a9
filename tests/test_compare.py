"""Tests for costmodel.validation.compare with stand-in predictor callables (the cluster
predictor is exercised once costmodel.predict exists) and a real published log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from costmodel.validation.compare import compare, exceeds, size_band, summarize, write_report
from costmodel.validation.nccl_tests import read_nccl_tests

DATA = Path("/work/shared/data/nccl-tests")


def test_exact_predictor_has_zero_error_on_real_log():
    df = read_nccl_tests(DATA / "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt")
    truth = dict(zip(zip(df.size_bytes, df.placement, strict=True), df.time_s, strict=True))

    def oracle(op, m, n, nodes, **kw):  # returns the out-of-place measurement itself
        return np.array([truth[(int(x), "out_of_place")] for x in m])

    out = compare(df, oracle)
    oop = out[out.placement == "out_of_place"]
    assert (oop.rel_error.abs() < 1e-12).all()
    # busbw from our factor agrees with what nccl-tests printed (2 decimals)
    big = out[out.size_bytes >= 2**20]
    assert np.allclose(big.measured_busbw_bytes_per_s, big.busbw_bytes_per_s, rtol=2e-3)


def test_errors_sign_bands_and_tolerance():
    rows = pd.DataFrame({"op": "all_reduce", "size_bytes": [1e3, 1e5, 2e6, 3e8], "ranks": 2,
                         "time_s": [1e-3, 1e-3, 1e-3, 1e-3]})
    out = compare(rows, lambda op, m, n, nodes, **kw: np.full(len(m), 1.3e-3), model="toy")
    assert out.rel_error.round(6).tolist() == [0.3] * 4
    assert out.busbw_rel_error.tolist() == pytest.approx([1 / 1.3 - 1] * 4)
    assert out.size_band.tolist() == ["< 64 KiB", "64 KiB - 1 MiB", "1 - 16 MiB", ">= 256 MiB"]
    assert len(exceeds(out, 0.25)) == 4 and exceeds(out, 0.35).empty
    table = summarize(out)
    assert table.points.sum() == 4 and table.max_abs_rel_error.max() == pytest.approx(0.3)
    with pytest.raises(ValueError, match="tolerance"):
        exceeds(out, 0)


def test_unpredictable_groups_get_a_note_not_a_traceback():
    rows = pd.DataFrame({"op": ["all_reduce", "sendrecv"], "size_bytes": [1e6, 1e6],
                         "ranks": [2, 2], "time_s": [1e-3, 1e-3]})

    def picky(op, m, n, nodes, **kw):
        if op != "all_reduce":
            raise ValueError(f"op={op!r} is not supported")
        return m / 1e9

    out = compare(rows, picky)
    assert out.rel_error.isna().tolist() == [False, True]
    assert "not supported" in out.note.iloc[1]


def test_passes_measured_algorithm_and_writes_report(tmp_path):
    seen = []
    rows = pd.DataFrame({"op": "all_reduce", "size_bytes": [1e6, 2e6], "ranks": 4,
                         "time_s": [1e-3, 2e-3], "algo_env": "Ring", "proto_env": None})

    def spy(op, m, n, nodes, **kw):
        seen.append(kw)
        return m / 1e9

    out = compare(rows, spy)
    assert seen == [{"algorithm": "Ring"}]
    path = write_report(out, tmp_path / "r" / "report.html")
    html = path.read_text()
    assert "plotly" in html and "1 - 16 MiB" in html


def test_size_band_edges():
    assert size_band([2**16 - 1, 2**16]).tolist() == ["< 64 KiB", "64 KiB - 1 MiB"]
