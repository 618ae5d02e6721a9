"""DDP's per-step overhead: the shipped fit is what scripts/fit_ddp_overhead.py gets from the
bundled PyTorch DDP benchmark, and its form was kept by leave-one-model-out cross-validation."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from costmodel.compute import ddp_step_overhead_s


def _script():
    from tests._paths import load_script

    return load_script("fit_ddp_overhead")


def test_shipped_fit_matches_a_refit_and_cv_kept_the_form():
    mod = _script()
    rep = mod.evaluate()
    doc = tomllib.loads(
        (resources.files("costmodel.data") / "fitted_ddp_overhead.toml").read_text()
    )
    assert doc["form"] == mod.chosen(rep)
    assert doc["overhead_s"] == pytest.approx(rep[doc["form"]]["k"], rel=1e-9)
    # grouped CV: the kept form beats no overhead on held-out models (4.7 % -> 1.4 %)
    assert rep[doc["form"]]["cv_median"] < rep["none"]["cv_median"]
    assert rep[doc["form"]]["cv_median"] <= 0.02


def test_overhead_grows_with_the_tensor_count():
    assert ddp_step_overhead_s(0) == 0.0
    assert 0 < ddp_step_overhead_s(100) < ddp_step_overhead_s(300) < 0.05
    with pytest.raises(ValueError, match="tensors"):
        ddp_step_overhead_s(-1)
