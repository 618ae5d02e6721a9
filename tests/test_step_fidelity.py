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
    band_coverage,
    held_out_compute_bands,
    held_out_scaling_bands,
    rebanded,
    scaling_band,
    scaling_parts,
    scaling_predictions,
    split_of,
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
        "df": df,
        "sc": sc,
        "ab": ab,
        "coverage": band_coverage(df, ab, sc),
    }


def test_scaling_from_the_smallest_count_of_each_series(results):
    s = results["scaling"]
    assert s["rows"] >= 80
    # goal: median <= 3 %, every row <= 10 %; achieved 1.9 % (2.0 % with the synchronisation
    # loss fitted without the row's group), max 20.8 % (the MPT-1B outlier row), p90 7.1 %
    # (see the README; 2.2 %, 20.3 %, 11.9 % when a series could take its base from another
    # campaign)
    assert s["median"] <= 0.022
    assert s["p90"] <= 0.08
    assert s["max"] <= 0.21
    assert s["median"] < results["naive"]["median"]  # the engine beats "same tokens/s per GPU"
    doc = tomllib.loads(
        (resources.files("costmodel.data") / "fitted_sync_loss.toml").read_text("utf-8")
    )
    assert doc["cv"]["fitted"]["median"] <= 0.022  # held out: the goal is met (1.97 %)
    assert doc["cv"]["fitted"]["p90"] <= 0.08  # 7.1 %
    assert doc["cv"]["fitted"]["max"] <= 0.21  # 20.3 %


def test_absolute_with_nothing_measured(results):
    a = results["absolute"]
    assert results["rows"] == 317
    # goals: median <= 10 %, p90 <= 20 %, band covers 75-85 %; achieved 3.8 %, 13.0 %, 81 %
    # (in-sample; 79 % held out, below) with torchtitan's H100s at their stated 500 W (3.8 %, 13.5 %, 81 % with the
    # synchronisation loss fitted on series that mixed campaigns; 3.7 %, 13.0 %, 82 % when
    # they were predicted at 700 W: the missing power cap hid the missing compiler term of
    # their compiled rows; 5.0 %, 23.4 %, 81 % before the compute fit's power and
    # fp8-from-bf16 terms)
    assert a["median"] <= 0.04
    assert a["p90"] <= 0.135
    assert 0.75 <= results["covers"] <= 0.85  # in-sample scaling band


def test_the_step_band_holds_with_its_fit_held_out(results):
    """The step band's coverage when each row's band was fitted without the row's group (the
    measured coverage: what a cluster not in the data sees), and without larger parts."""
    cov = results["coverage"]
    multi = np.array([x.multi_node for x in results["ab"]])
    src = split_of(results["df"], "source").to_numpy()
    held = cov["group"]
    # goal 75-85 %, overall and on one node; achieved with both the scaling and the (pooled)
    # compute band fitted without the row's group 79.2 % (one node 76.5 %, beyond one node
    # 84.6 %); in-sample 81.7 % (81.4 % while the one-node calibration reduced in each row's
    # own gradient dtype rather than in bf16 for every row)
    assert 0.78 <= held.mean() <= 0.85
    assert held[~multi].mean() >= 0.76 and held[multi].mean() >= 0.84
    assert 0.75 <= held[~multi].mean() <= 0.85
    # the harder splits: scaling band without the whole source 78.9 %, without the GPU family
    # 79.2 % (compute band without the group: the compute fit leaves out groups)
    assert cov["source"].mean() >= 0.78
    assert cov["family"].mean() >= 0.78
    assert all(0.75 <= cov[k].mean() <= 0.85 for k in ("in-sample", "group", "source", "family"))
    # the scaling band alone held out changes nothing (81.7 %, as in-sample)
    assert cov["group, scaling only"].mean() == pytest.approx(results["covers"], abs=0.01)
    # the compute band from the other groups' one-node step errors: pooled 77.9 % (one node
    # 73.2 %); per GPU family (the band before, rejected) 54.9 %, one node 39.9 % (55.2 % and
    # 40.4 % while the one-node calibration reduced in each row's own gradient dtype)
    assert cov["group, step, pooled"].mean() >= 0.77
    per_family = cov["group, step, per family"]
    assert per_family.mean() >= 0.54 and per_family[~multi].mean() >= 0.39
    assert per_family.mean() < held.mean() - 0.2
    # torchtitan's rows 82.4 % (its H100 group's held-out compute band is wide: the fits
    # without it and another group have no other hopper bf16 group); llm-foundry's 79.0 %
    assert held[src == "torchtitan"].mean() >= 0.82
    assert held[src == "llm-foundry"].mean() >= 0.78


def test_a_held_out_scaling_band_leaves_out_its_group(results):
    df, sc = results["df"], results["sc"]
    bands = held_out_scaling_bands(df, sc)
    groups = split_of(df)
    assert set(bands) == set(groups)
    g = "llm-foundry/a100-80gb"
    rest = [p for p in sc if groups[p[0]] != g]
    assert 0 < len(rest) < len(sc)
    assert bands[g] == pytest.approx(scaling_band(df, rest), rel=1e-12)
    assert bands[g] != pytest.approx(results["band"], rel=1e-6)
    # a group with no scaling row sees the band of every row
    assert bands["torchtitan/a100-80gb"] == pytest.approx(results["band"], rel=1e-12)
    # the same band for every row is the report's band (one road: the step band function)
    again = rebanded(df, results["ab"], results["band"])
    assert [b for x in again for b in (x.low, x.high)] == pytest.approx(
        [b for x in results["ab"] for b in (x.low, x.high)], rel=1e-12
    )
    with pytest.raises(ValueError, match="by: must be one of"):
        split_of(df, "cluster")


def test_a_held_out_compute_band_leaves_out_its_group(results):
    df, ab = results["df"], results["ab"]
    obs = df.tokens_per_s_per_gpu
    groups = split_of(df)

    def band_of(rows):
        r = [x.predicted_tokens_per_s_per_gpu / obs[x.index] for x in rows]
        lo, hi = np.quantile(r, [0.1, 0.9])
        return min(lo, 1.0), max(hi, 1.0)

    one = [x for x in ab if not x.multi_node]
    pooled = held_out_compute_bands(df, ab, how="step, pooled")
    fam = held_out_compute_bands(df, ab, how="step, per family")
    g = "llm-foundry/a100-40gb"
    assert pooled[g] == pytest.approx(band_of([x for x in one if groups[x.index] != g]))
    # per family: the other A100 groups' one-node rows alone
    other_a100 = [x for x in one if groups[x.index].endswith(("a100-80gb", "a100-40gb"))]
    assert fam[g] == pytest.approx(band_of([x for x in other_a100 if groups[x.index] != g]))
    assert fam[g] != pytest.approx(pooled[g], rel=1e-3)
    # too few other hopper rows at one node for llm-foundry's H100: the pooled band
    assert fam["llm-foundry/h100-80gb"] == pytest.approx(pooled["llm-foundry/h100-80gb"])
    with pytest.raises(ValueError, match="by: `how` 'step, per family' needs 'group'"):
        held_out_compute_bands(df, ab, by="source", how="step, per family")
    with pytest.raises(ValueError, match="how: must be one of"):
        held_out_compute_bands(df, ab, how="per key")


def test_the_shipped_compute_band_is_pooled_and_held_out_by_its_fit(results):
    """The compute band every row is shown is one band for all GPU families and precisions;
    held out, it is the band the compute fit without the group would ship (its grouped CV
    run again without the group), and a group the fit never saw gets the shipped band."""
    from costmodel import presets
    from costmodel.compute import compute_band, compute_fit

    df, ab = results["df"], results["ab"]
    shipped = compute_band()
    assert shipped[0] < 1.0 < shipped[1]
    # every row, A100 or H100, bf16 or fp8, shows the same compute band
    assert {x.compute_band for x in ab} == {shipped}
    h100 = presets.load("h100-sxm", "gpu")
    assert compute_fit(h100, "fp8").band == compute_fit(presets.load("a100-sxm-80gb", "gpu")).band
    held = held_out_compute_bands(df, ab)
    assert set(held) == set(split_of(df))
    g = "llm-foundry/a100-80gb"
    assert held[g] == compute_band(g) == compute_fit(h100, "bf16", held_out=g).band
    assert held[g] != pytest.approx(shipped, rel=1e-3)
    assert held["torchtitan/h200"] == shipped  # no row of it in the compute fit
    # one band in the fit's file; each group the fit leaves out has the band of its own CV
    doc = tomllib.loads(
        (resources.files("costmodel.data") / "fitted_compute.toml").read_text("utf-8")
    )
    assert all("band_low" not in t for t in doc["fit"].values())
    assert set(doc["cv_fit"]) == set(doc["cv_groups"])
    assert all(compute_band(grp) != shipped for grp in doc["cv_fit"])
    with pytest.raises(ValueError, match="by: `how` 'shipped' needs 'group'"):
        held_out_compute_bands(df, ab, by="source")


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
    cov = results["coverage"]
    goal = next(x for x in text.splitlines() if x.startswith("| absolute: step band covers"))
    assert f"| 75-85 % | {100 * cov['group'].mean():.1f} %" in goal
    assert f"in-sample {100 * cov['in-sample'].mean():.1f} %" in goal


def _series(model: str, gpu: str):
    df = pure_dp_rows()
    return df[(df.model == model) & (df.gpu_type == gpu) & (df.seq == 2048)]


def test_a_scaling_series_is_one_campaign():
    """llm-foundry's 2024-04 A100 80GB table (amp_bf16) has 8-GPU rows under the same title as
    the 2023-07 table (bf16 PURE) that ran 8-64 GPUs: the base of the 2023-07 rows is the
    2023-07 8-GPU row (MPT-30B: 788 tokens/s per GPU, not the 2024-04 row's 916)."""
    df = _series("mpt-30b", "a100-80gb")
    pairs = [(i, b) for i, b, _ in scaling_predictions(df)]
    assert len(pairs) == 3
    for i, b in pairs:
        assert df.loc[i, "version"] == df.loc[b, "version"]
        assert df.loc[i, "mp_mode"] == df.loc[b, "mp_mode"] == "bf16 / PURE"
        assert round(float(df.loc[b, "tokens_per_s_per_gpu"])) == 788
    full = pure_dp_rows()
    for i, b, _ in scaling_predictions(full[full.gpu_type == "a100-80gb"]):
        assert (
            full.loc[i, ["version", "mp_mode"]].tolist()
            == full.loc[b, ["version", "mp_mode"]].tolist()
        )


def test_a_term_scales_the_carried_compute():
    """``term`` multiplies the per-token compute carried from the base: 1 changes nothing, 1.1
    slows every row by at most 10 % and, the step being mostly compute, by more than 8 %."""
    df = _series("mpt-7b", "a100-40gb")
    plain = scaling_predictions(df)
    assert scaling_predictions(df, term=lambda r, b: 1.0) == plain
    slow = scaling_predictions(df, term=lambda r, b: 1.1)
    for (i, _, p), (j, _, q) in zip(plain, slow, strict=True):
        assert i == j and p / 1.1 <= q < p / 1.08


def test_the_slow_base_of_mpt_13b_on_a100_40gb_is_not_its_communication():
    """The diagnosis in docs/step-fidelity.md: the 8-GPU base's collectives are all under
    compute (on NVLink), and the published per-token time falls more from 8 to 16-128 GPUs
    than the compute fit's micro-batch ratio says."""
    df = _series("mpt-13b", "a100-40gb")
    pairs = [(i, b) for i, b, _ in scaling_predictions(df)]
    parts = scaling_parts(df, pairs)
    assert len(parts) == 4
    for d in parts:
        assert d["base_exposed"] < 0.01 and d["row_exposed"] < 0.01
        assert d["base_comm"] > 0.05  # the collectives exist, hidden under compute
        assert d["published_ratio"] < d["fit_ratio"] - 0.05


def test_no_tried_scaling_term_is_kept(results):
    """scripts/scaling_terms.py scored its candidates by grouped CV; none beat the path in
    median, p90 and max, so none is shipped, and its baseline is the shipped path."""
    doc = tomllib.loads(
        (resources.files("costmodel.data") / "scaling_terms.toml").read_text("utf-8")
    )
    forms = {k: v for k, v in doc.items() if isinstance(v, dict) and "kept" in v}
    assert {"microbatch-t0", "state-share", "memory-above-80"} <= set(forms)
    for v in forms.values():
        beats = all(v[m] < doc["none"][m] for m in ("median", "p90", "max"))
        assert v["kept"] is beats is False
    sync = tomllib.loads(
        (resources.files("costmodel.data") / "fitted_sync_loss.toml").read_text("utf-8")
    )
    assert doc["rows"] == sync["rows"] == results["scaling"]["rows"]
    for m in ("median", "p90", "max"):
        assert doc["none"][m] == pytest.approx(results["scaling"][m], rel=1e-9)
