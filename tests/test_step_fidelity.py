"""Step-time fidelity against the published end-to-end runs: regression bounds on what is
achieved (goals in the README and docs/step-fidelity.md, with the measured gap)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from costmodel.step_fidelity import (
    absolute_predictions,
    scaling_band,
    scaling_predictions,
    summary,
)
from costmodel.steps_data import pure_dp_rows

DOC = Path(__file__).resolve().parent.parent / "docs" / "step-fidelity.md"


@pytest.fixture(scope="module")
def results():
    df = pure_dp_rows()
    obs = df.tokens_per_s_per_gpu
    sc = scaling_predictions(df)
    band = scaling_band(df, sc)
    ab = absolute_predictions(df, scaling_band=band)
    return {
        "scaling": summary([p / obs[i] - 1 for i, _, p in sc]),
        "naive": summary([obs[b] / obs[i] - 1 for i, b, _ in sc]),
        "absolute": summary([x.predicted_tokens_per_s_per_gpu / obs[x.index] - 1 for x in ab]),
        "covers": float(np.mean([x.low <= obs[x.index] <= x.high for x in ab])),
        "rows": len(ab),
    }


def test_scaling_from_the_smallest_count_of_each_series(results):
    s = results["scaling"]
    assert s["rows"] >= 80
    # goal: median <= 3 %, every row <= 10 %; achieved 4.0 % and 24.8 % (see the README)
    assert s["median"] <= 0.045
    assert s["p90"] <= 0.10
    assert s["max"] <= 0.26
    assert s["median"] < results["naive"]["median"]  # the engine beats "same tokens/s per GPU"


def test_absolute_with_nothing_measured(results):
    a = results["absolute"]
    assert results["rows"] == 317
    # goals: median <= 10 %, p90 <= 20 %, band covers 75-85 %; achieved 6.1 %, 21.6 %, 84 %
    assert a["median"] <= 0.10
    assert a["p90"] <= 0.23
    assert 0.75 <= results["covers"] <= 0.86


def test_the_report_is_current(results):
    text = DOC.read_text()
    for key in ("scaling", "absolute"):
        assert f"{100 * results[key]['median']:.1f} %" in text
    assert f"{100 * results['covers']:.1f} %" in text
