"""The runs bundled after the first correction fits (scripts/fit_corrections.NEWER_RUNS, once
held out, now in RUNS and in the grouped CV): every bundled run is accounted for, each spec
agrees with its own rows, and the full model predicts them from their presets with the
parameters fitted without their source (costmodel.fitted_corrections.CV). They stay medium
trust (not goal runs); their accuracy is in docs/fidelity.md and tests/test_fidelity.py."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from costmodel.collectives import busbw_factor
from costmodel.reference import reference_id, reference_path, reference_runs
from costmodel.validation.nccl_tests import is_busbw_table, read_nccl_tests

ROOT = Path(__file__).resolve().parents[1]
if "fit_corrections" in sys.modules:
    fit = sys.modules["fit_corrections"]
else:
    _spec = importlib.util.spec_from_file_location(
        "fit_corrections", ROOT / "scripts" / "fit_corrections.py"
    )
    fit = importlib.util.module_from_spec(_spec)
    sys.modules["fit_corrections"] = fit
    _spec.loader.exec_module(fit)

HELD = {s.prefix: s for s in fit.NEWER_RUNS}


def test_every_bundled_run_is_fitted_held_out_or_busbw_only():
    fitted = {s.prefix for s in fit.RUNS}
    assert set(HELD) <= fitted and not fit.HELD_OUT_RUNS
    busbw_only = {
        reference_id(n) for n in reference_runs() if is_busbw_table(reference_path(n).read_text())
    }
    assert busbw_only == {"21a", "21b", "21c", "21d"}
    assert fitted | busbw_only == {reference_id(n) for n in reference_runs()}
    assert all(s.trust != "H" for s in HELD.values())  # held out: never a goal run


@pytest.mark.parametrize("prefix", sorted(HELD))
def test_spec_matches_the_ranks_its_rows_imply(prefix):
    """busbw / algbw of every printed row is nccl-tests' factor for the spec's rank count."""
    spec = HELD[prefix]
    df = read_nccl_tests(reference_path(prefix))
    ok = df[(df.algbw_bytes_per_s > 1e9)]
    ratio = (ok.busbw_bytes_per_s / ok.algbw_bytes_per_s).to_numpy()
    ranks = spec.nodes * spec.gpus_per_node
    want = busbw_factor(df.op.iloc[0], ranks)
    assert np.allclose(ratio, want, rtol=0.01), (prefix, np.unique(ratio.round(3)), want)


@pytest.fixture(scope="module")
def held_runs():
    return fit.load_runs(fit.NEWER_RUNS)


def test_held_out_runs_predicted_from_their_presets(held_runs, capsys):
    from costmodel.fitted_corrections import CV

    assert {r.key for r in held_runs} == set(HELD)
    with capsys.disabled():
        print("\nheld-out run  op              nodes x gpus  median |busbw error| >= 1 MiB / all")
    for run in held_runs:
        t = fit.predict_run(run, "nccl", CV[run.key])
        assert np.isfinite(t).all() and (t > 0).all(), run.key
        s = fit.summary(run, t)
        assert not math.isnan(s["all"])
        with capsys.disabled():
            print(
                f"{run.key:12s}  {run.op:15s} {run.nodes:5d} x {run.gpus_per_node:<5d}"
                f"  {100 * s['ge1MiB']:5.1f}% / {100 * s['all']:5.1f}%"
            )
