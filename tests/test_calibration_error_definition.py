"""A calibration TOML says which error its fit statistics hold: they were the time error until
2026-12-03 and are the busbw error since, under the same names."""

from __future__ import annotations

import json
import tomllib

from tests._cli import run
from tests.test_validate_qa8 import _off_line_rows


def test_the_written_calibration_names_its_error(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(json.dumps(r) + "\n" for r in _off_line_rows().to_dict(orient="records"))
    )
    toml = tmp_path / "cal.toml"
    res = run("calibrate", str(results), "-o", str(toml))
    assert res.exit_code == 0, res.stderr
    doc = tomllib.loads(toml.read_text())
    assert (
        "fit errors (rms_rel_error, max_abs_rel_error, cv_*) are the busbw error" in (doc["method"])
    )
    assert "t_meas / t_pred - 1" in doc["method"]
    # and it still loads as a preset (the method is free text; no field the schema refuses)
    from costmodel.validation.calibrate import load_calibration

    assert load_calibration(toml).fits
