"""Step-time fidelity against the published end-to-end runs: regression bounds on what is
achieved (goals in the README and docs/step-fidelity.md, with the measured gap)."""

from __future__ import annotations

import tomllib
from importlib import resources
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
        "band": band,
    }


def test_scaling_from_the_smallest_count_of_each_series(results):
    s = results["scaling"]
    assert s["rows"] >= 80
    # goal: median <= 3 %, every row <= 10 %; achieved 2.2 % (2.7 % with the synchronisation
    # loss fitted without the row's group), max 20.3 %, p90 11.9 % (see the README)
    assert s["median"] <= 0.025
    assert s["p90"] <= 0.13
    assert s["max"] <= 0.21
    assert s["median"] < results["naive"]["median"]  # the engine beats "same tokens/s per GPU"
    doc = tomllib.loads(
        (resources.files("costmodel.data") / "fitted_sync_loss.toml").read_text("utf-8")
    )
    assert doc["cv"]["fitted"]["median"] <= 0.03  # held out: the goal is met
    assert doc["cv"]["fitted"]["max"] <= 0.21


def test_absolute_with_nothing_measured(results):
    a = results["absolute"]
    assert results["rows"] == 317
    # goals: median <= 10 %, p90 <= 20 %, band covers 75-85 %; achieved 3.8 %, 13.5 %, 81 %
    # with torchtitan's H100s at their stated 500 W (3.7 %, 13.0 %, 82 % when they were
    # predicted at 700 W: the missing power cap hid the missing compiler term of their
    # compiled rows; 5.0 %, 23.4 %, 81 % before the compute fit's power and fp8-from-bf16 terms)
    assert a["median"] <= 0.04
    assert a["p90"] <= 0.14
    assert 0.75 <= results["covers"] <= 0.85


def test_absolute_rows_are_strategy_steps_at_their_defaults():
    """The report's absolute path is strategy_step's default road (fitted efficiency, its
    one-node calibration, default contention and synchronisation loss), only held out."""
    from costmodel.step_fidelity import _Engine
    from costmodel.strategy.step import strategy_step

    df = pure_dp_rows()
    r = df[(df.model == "mpt-7b") & (df.gpus == 64) & (df.gpu_type == "a100-80gb")].iloc[0]
    got = _Engine(0.0).user_step_s(r)
    s = strategy_step(
        arch="mpt-7b",
        cluster="dgx-a100",
        nodes=8,
        strategy="fsdp",
        grad_dtype="bf16",  # llm-foundry's PURE mixed precision reduces in bf16
        micro_batch=int(r.micro_batch),
        sequence_length=int(r.seq),
        accumulation=int(r.global_batch // r.gpus // r.micro_batch),
        recompute=str(r.activation_checkpointing),
        held_out="llm-foundry/a100-80gb",
    )
    assert got == pytest.approx(s.step_time_s, rel=1e-12)
    assert s.compute_source == "fitted" and s.sync_s > 0 and s.optimizer_s > 0


def test_the_report_is_current(results):
    from costmodel.strategy.band import scaling_band as shipped

    # the step band every surface shows reads the scaling band this report fits
    assert shipped() == pytest.approx(results["band"], rel=1e-9)
    text = DOC.read_text()
    for key in ("scaling", "absolute"):
        assert f"{100 * results[key]['median']:.1f} %" in text
    assert f"{100 * results['covers']:.1f} %" in text
