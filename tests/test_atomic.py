"""Atomic output: results replace the final file only when complete (costmodel.atomic)."""

from __future__ import annotations

import pytest

from costmodel import atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "result.toml"
    out.write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_path(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.toml"]


def test_write_text_atomic_replaces_on_success(tmp_path):
    out = tmp_path / "r.html"
    atomic.write_text_atomic(out, "<html>µs</html>")
    assert out.read_text(encoding="utf-8") == "<html>µs</html>"


def test_missing_folder_is_one_named_error(tmp_path):
    with pytest.raises(ValueError, match="output: folder .* does not exist"):
        atomic.write_text_atomic(tmp_path / "nope" / "x.csv", "a")


def test_calibration_and_report_go_through_the_atomic_writer(tmp_path, monkeypatch):
    """write_calibration and write_report must not write the final name directly."""
    from costmodel.validation import calibrate, compare

    seen = []
    real = atomic.atomic_path

    def spy(path):
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(atomic, "atomic_path", spy)
    import numpy as np
    import pandas as pd

    m = np.array([1e6, 2e6, 4e6, 8e6])
    df = pd.DataFrame(
        {
            "op": "all_reduce",
            "size_bytes": m,
            "ranks": 2,
            "nodes": 1,
            "time_s": 2e-4 + m / 1e9,
            "placement": "out_of_place",
        }
    )
    cal = calibrate.calibrate(df, name="t")
    calibrate.write_calibration(cal, tmp_path / "t.toml")
    out = compare.compare(df, calibrate.calibrated_predictor(cal))
    compare.write_report(out, tmp_path / "r.html")
    assert seen == [str(tmp_path / "t.toml"), str(tmp_path / "r.html")]
