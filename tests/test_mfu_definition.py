"""A given MFU is PaLM's MFU on every surface (Chowdhery et al. 2022, appendix B): model FLOPs
over time x peak, recomputation not counted. So a given MFU m prices one micro-batch at
``F_token T / (peak x m)`` whatever the recomputation, and equals the fitted compute whose label
reads "MFU m" for the same setup. Until then a given MFU was applied to the FLOPs run
(``(1 + r)`` times the model's): ``--mfu 0.36 --recompute full`` was a third slower than a
fitted "MFU 0.36"."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel import presets
from costmodel.compute import precision_peak_flops
from costmodel.strategy.compute import DEFAULT_MFU, recompute_extra, step_compute

from ._cli import run

ARCH = "llama-3.1-8b"
SEQ = 8192
STEP = dict(arch=ARCH, cluster="dgx-h100", nodes=2, strategy="fsdp", sequence_length=SEQ)


def _flops() -> float:
    return float(cm.load_arch(ARCH).training_flops_per_token(SEQ)) * SEQ  # one micro-batch


def _peak() -> float:
    return precision_peak_flops(presets.load("h100-sxm"), "bf16")


def _api(**kw):
    return cm.strategy_step(None, **{**STEP, "band": False, "timeline": False, **kw})


# --- the definition ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["selective-op", "selective-layer", "full"])
def test_given_mfu_prices_the_model_flops_whatever_the_recomputation(mode):
    """PaLM: ``t = F T / (peak x MFU)``; the recomputation's work is inside an MFU measured on
    a run that recomputes. The recomputation still has work (its share of the compute)."""
    none, rec = (_api(mfu=0.36, recompute=r) for r in ("none", mode))
    assert recompute_extra(mode, cm.load_arch(ARCH), SEQ) > 0  # the mode does add work
    assert rec.compute_s == pytest.approx(none.compute_s, rel=1e-12)
    assert rec.compute_s == pytest.approx(_flops() / (_peak() * 0.36), rel=1e-12)
    assert rec.compute_source == "mfu"


def test_given_mfu_equals_the_fitted_compute_labelled_with_that_mfu():
    """The fitted road under full recomputation reports PaLM's MFU in its label; a given MFU
    equal to it is the same compute (one label, one meaning)."""
    a, gpu = cm.load_arch(ARCH), presets.load("h100-sxm")
    kw = dict(flops_per_token=_flops() / SEQ, peak_flops=_peak(), recompute="full")
    fitted = step_compute(a, gpu, SEQ, 1, **kw)
    assert fitted.source == "fitted"
    m = _flops() / (fitted.micro_s * _peak())  # the fitted compute's own MFU
    assert f"MFU {m:.2f} on one node" in fitted.label  # the number the label shows
    given = step_compute(a, gpu, SEQ, 1, mfu=m, **kw)
    assert given.micro_s == pytest.approx(fitted.micro_s, rel=1e-12)


def test_default_mfu_describes_a_run_without_recomputation():
    """The default MFU (a GPU family with no fit) is no measurement of a recomputing run: it
    describes a run without recomputation, so recomputation adds its FLOPs at the same
    utilisation (MFU 0.4 / (1 + r)), and the label says so (README, "An MFU is PaLM's MFU
    everywhere")."""
    v100 = presets.load("v100-sxm2")
    a = cm.load_arch(ARCH)
    peak = precision_peak_flops(v100, "bf16")
    kw = dict(flops_per_token=_flops() / SEQ, peak_flops=peak)
    none = step_compute(a, v100, SEQ, 1, **kw)
    full = step_compute(a, v100, SEQ, 1, recompute="full", **kw)
    assert none.source == full.source == "default-mfu"
    assert none.micro_s == pytest.approx(_flops() / (peak * DEFAULT_MFU), rel=1e-12)
    r = recompute_extra("full", a, SEQ)
    assert full.micro_s == pytest.approx(none.micro_s * (1 + r), rel=1e-12)
    assert "of a run without recomputation" in full.label and "PaLM" not in full.label
    assert "recomputation" not in none.label


def test_the_label_says_the_definition_under_recomputation():
    full = _api(mfu=0.36, recompute="full")
    assert full.compute_label == (
        "given MFU 0.36 (PaLM's MFU, of model FLOPs: recompute full's 33% extra work is inside it)"
    )
    assert _api(mfu=0.36).compute_label == "given MFU 0.36"  # no recomputation: as ever


def test_the_reported_mfu_of_a_one_gpu_step_is_the_given_one():
    """The step's own MFU (model FLOPs over compute time x peak) reads back the given MFU under
    recomputation: the label's number and the compute's number are one."""
    s = _api(mfu=0.36, recompute="full")
    micro = s.compute_s / 1  # accumulation 1: one micro-batch
    assert _flops() / (micro * _peak()) == pytest.approx(0.36, rel=1e-12)


# --- every surface: the same number -----------------------------------------------------------
def test_same_compute_through_api_cli_scenario_and_sweep():
    want = _flops() / (_peak() * 0.36)
    for mode in ("none", "full"):
        api = _api(mfu=0.36, recompute=mode)
        assert api.compute_s == pytest.approx(want, rel=1e-12)
        sc = cm.Scenario(**STEP, mfu=0.36, recompute=mode).evaluate(scaling=False, flips=False)
        assert sc.compute_s == pytest.approx(want, rel=1e-12)
        assert sc.step_time_s == pytest.approx(api.step_time_s, rel=1e-12)
        out = run(
            "step", "--arch", ARCH, "--cluster", "dgx-h100", "--nodes", "2", "--strategy",
            "fsdp", "--seq", str(SEQ), "--mfu", "0.36", "--recompute", mode, "--json",
        )  # fmt: skip
        assert out.exit_code == 0, out.stderr
        d = json.loads(out.stdout)
        assert d["compute_s"] == pytest.approx(want, rel=1e-12)
        assert d["compute_label"] == api.compute_label
        common = ["--arch", ARCH, "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "fsdp"]
        common += ["--seq", str(SEQ), "--mfu", "0.36", "--recompute", mode, "--json"]
        for command in (("scenario",), ("train", "--tokens", "1T")):
            out = run(*command, *common)
            assert out.exit_code == 0, (command, out.stderr)
            d = json.loads(out.stdout)
            assert d["step_time_s"] == pytest.approx(api.step_time_s, rel=1e-12), command
    df = cm.sweep(
        kind="step", preset="dgx-h100", arch=ARCH, strategy="fsdp", nodes="2",
        sequence_length=str(SEQ), mfu="0.36", recompute="none,full",
    )  # fmt: skip
    by = dict(zip(df["recompute"], df["step_time_s"], strict=True))
    assert by["full"] == pytest.approx(by["none"], rel=1e-12)
    assert by["full"] == pytest.approx(_api(mfu=0.36, recompute="full").step_time_s, rel=1e-12)


def test_same_compute_on_the_step_page():
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from costmodel.units import format_duration

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update({"ddp_arch": ARCH, "ddp_own_mfu": "true"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="ddp_mfu").set_value(0.35).run()
    shown = {}
    for mode in ("none", "full"):
        at.selectbox(key="ddp_recompute").set_value(mode).run()
        assert not at.exception, [e.value for e in at.exception]
        shown[mode] = {m.label: m.value for m in at.metric}["Compute"]
    seq = int(at.number_input(key="ddp_seq").value)
    sc = cm.Scenario(arch=ARCH, cluster="dgx-h100", sequence_length=seq, mfu=0.35)
    want = sc.with_changes("recompute=full").evaluate(scaling=False, flips=False).compute_s
    assert shown["full"] == shown["none"] == format_duration(want)
    flops = float(cm.load_arch(ARCH).training_flops_per_token(seq)) * seq
    assert want == pytest.approx(flops / (_peak() * 0.35), rel=1e-12)
