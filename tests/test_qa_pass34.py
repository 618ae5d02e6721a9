"""The compute fit's per-GPU-family candidates (scripts/fit_compute.py: the attention weight
``rho``, or the micro-batch saturation ``T0``, one per family instead of shared): the fit
recovers each family's value, and the grouped CV scored both and kept the shared form."""

from __future__ import annotations

import itertools
import tomllib
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from tests._paths import load_script

fc = load_script("fit_compute")
BASE = "hidden+attention+microbatch+power+fp8-from-bf16"


def _doc() -> dict:
    return tomllib.loads(
        (resources.files("costmodel.data") / "fitted_compute.toml").read_text("utf-8")
    )


def _synthetic(rho: dict[str, float], t0: dict[str, float]) -> pd.DataFrame:
    """Rows made exactly by the model: bf16, power term alpha 0.5, scale 1.2, h0 1000."""
    rows = []
    pj = {"ampere": 400 / 312, "hopper": 700 / 989.5}
    for fam, h, tok, a in itertools.product(
        ("ampere", "hopper"), (1024.0, 4096.0), (2048.0, 8192.0), (0.05, 0.3, 1.0)
    ):
        lin, att = 1e9, a * 1e9
        g = lin * (1 + 1000 / h + t0[fam] / tok) + rho[fam] * att
        rows.append(
            {
                "key": f"{fam}-bf16",
                "family": fam,
                "precision": "bf16",
                "group": f"src/{fam}",
                "lin": lin,
                "att": att,
                "k": 1.0,
                "pj": pj[fam],
                "h": h,
                "tok": tok,
                "obs": 1.2 * g * pj[fam] ** -0.5,
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture
def small_grids(monkeypatch):
    monkeypatch.setattr(fc, "H0_GRID", np.array([0.0, 1000.0]))
    monkeypatch.setattr(fc, "T0_GRID", np.array([0.0, 1000.0, 4000.0]))
    monkeypatch.setattr(fc, "RHO_GRID", np.array([0.5, 1.0, 2.0]))
    monkeypatch.setattr(fc, "ALPHA_GRID", np.array([0.0, 0.5]))


@pytest.mark.parametrize(
    ("name", "param", "rho", "t0"),
    [
        (
            "rho-per-family",
            "rho",
            {"ampere": 1.0, "hopper": 2.0},
            {"ampere": 1000.0, "hopper": 1000.0},
        ),
        (
            "t0-per-family",
            "t0",
            {"ampere": 1.0, "hopper": 1.0},
            {"ampere": 1000.0, "hopper": 4000.0},
        ),
    ],
)
def test_a_per_family_form_recovers_each_familys_value(small_grids, name, param, rho, t0):
    t = _synthetic(rho, t0)
    form = fc.FORMS[f"{BASE}+{name}"]
    p = fc.fit(t, form)
    assert p[param] == pytest.approx(rho if param == "rho" else t0)
    other = "t0" if param == "rho" else "rho"
    assert p[other] == pytest.approx(1000.0 if other == "t0" else 1.0)
    assert p["h0"] == 1000.0 and p["alpha"] == 0.5
    assert p["scale"]["bf16"] == pytest.approx(1.2)
    assert fc.predict(t, form, p) == pytest.approx(np.ones(len(t)))
    # one shared value cannot make these rows: the shared form misses some of them
    shared = fc.predict(t, fc.FORMS[BASE], fc.fit(t, fc.FORMS[BASE]))
    assert np.abs(shared - 1).max() > 0.01
    # the fitted values are written as an inline table that TOML reads back
    back = tomllib.loads("\n".join(fc._params(p)))
    assert back[param] == pytest.approx(p[param])


def test_a_family_the_fit_has_not_seen_gets_the_mean_value():
    t = _synthetic({"ampere": 1.0, "hopper": 1.0}, {"ampere": 0.0, "hopper": 0.0})
    per_row = fc._per_row(t, {"ampere": 1.0, "blackwell": 3.0})
    assert set(per_row[(t.family == "hopper").to_numpy()]) == {2.0}
    assert set(per_row[(t.family == "ampere").to_numpy()]) == {1.0}
    assert fc._per_row(t, 1.5) == 1.5


def test_both_parameters_per_family_at_once_is_refused():
    with pytest.raises(ValueError, match="one shape parameter per GPU family at a time"):
        fc._family_param(dict(rho_family=True, t0_family=True))


def test_the_per_family_candidates_were_scored_and_the_shared_form_kept():
    doc = _doc()
    cv = doc["cv"]
    for name in ("rho-per-family", "t0-per-family"):
        cand = cv[f"{BASE}+{name}"]
        # scored on the same groups: a larger held-out median and p90 than the shared form
        assert cand["median"] > cv[doc["form"]]["median"] + 1e-4
        assert cand["p90"] > cv[doc["form"]]["p90"]
    assert doc["form"] == BASE
    assert isinstance(doc["rho"], float) and isinstance(doc["t0"], float)
