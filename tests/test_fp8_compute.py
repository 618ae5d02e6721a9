"""fp8 compute: one ``precision`` input on every surface, and one MFU convention on every road.

Under ``precision="fp8"`` a step's matmuls run at the GPU's fp8 dense peak: the fitted
efficiency is fp8's, a given MFU is a fraction of the fp8 peak (as llm-foundry and torchtitan
quote the MFU of their fp8 runs), a measured time is held to the fp8 peak, and the default MFU
(a bf16 figure) assumes no fp8 speed-up on a GPU family without a fitted fp8 efficiency. The
recipe ``fp8-mixed`` implies fp8 unless ``precision`` says otherwise. API, Scenario, the CLI's
``step``, ``scenario`` and ``train``, the step sweep and the step page give one number.
"""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel import presets
from tests._cli import one_line_error, run

ARCH = "llama-3.1-8b"
SEQ = 8192
# one node of H100s under FSDP: the fitted one-node step is what the engine is calibrated to
STEP = dict(arch=ARCH, cluster="dgx-h100", nodes=1, strategy="fsdp", sequence_length=SEQ)


def _step(**kw):
    return cm.strategy_step(None, **{**STEP, "band": False, "timeline": False, **kw})


def _flops(arch: str = ARCH, seq: int = SEQ) -> float:
    from costmodel.architecture import load_arch

    return float(load_arch(arch).training_flops_per_token(seq))


# --- the convention, from the published fp8 rows ----------------------------------------------
def test_published_fp8_mfu_is_of_the_fp8_peak():
    """llm-foundry's H100 ``amp_fp8`` rows: MFU x peak = model FLOPs x tokens/s. With their
    own FLOPs (6N + attention, the architecture's) the peak their MFU implies is the fp8
    dense peak (1979 TFLOP/s), not bf16's (989): within 2 % (their FLOPs leave out a few
    small terms ours count, and the reverse). The bf16 rows of the same table imply bf16's."""
    from costmodel.steps_data import step_rows

    h100 = presets.load("h100-sxm")
    rows = step_rows()
    rows = rows[
        (rows.source == "llm-foundry") & rows.gpu_type.str.startswith("h100") & rows.mfu.notna()
    ]
    seen = {"bf16": 0, "fp8": 0}
    for r in rows.itertuples():
        implied = r.tokens_per_s_per_gpu * _flops(r.model, int(r.seq)) / r.mfu
        peak = h100.fp8_dense_flops if r.precision == "fp8" else h100.bf16_dense_flops
        assert implied == pytest.approx(peak, rel=0.02), (r.model, r.seq, r.precision)
        seen[r.precision] += 1
    assert seen["fp8"] >= 5 and seen["bf16"] >= 5, seen


# --- the roads of the compute -----------------------------------------------------------------
def test_fp8_step_on_h100_is_faster_by_the_fitted_ratio_not_twice():
    """The fitted road: the one-node step of each precision is the fitted one-node step
    (:func:`costmodel.compute.micro_batch_compute_s` of that precision), so their ratio is the
    efficiency model's, which is well under the peaks' 2x (the fp8 runs it was fitted on reach
    lower fractions of their peak, and attention stays bf16)."""
    from costmodel.compute import micro_batch_compute_s

    h100 = presets.load("h100-sxm")
    bf16, fp8 = _step(), _step(precision="fp8")
    assert (bf16.precision, fp8.precision) == ("bf16", "fp8")
    assert fp8.compute_source == bf16.compute_source == "fitted"
    assert "hopper/fp8" in fp8.compute_label and "hopper/bf16" in bf16.compute_label
    fitted = [micro_batch_compute_s(ARCH, h100, SEQ, 1, precision=p) for p in ("bf16", "fp8")]
    modelled = fitted[0] / fitted[1]
    # the calibration's fixed point holds each step to 1e-4 of its fitted step
    assert bf16.step_time_s / fp8.step_time_s == pytest.approx(modelled, rel=3e-4)
    assert fp8.compute_s < bf16.compute_s
    assert 1.05 < modelled < 1.6  # faster, but nowhere near the 2x of the peaks


def test_fitted_fp8_speedup_agrees_with_llm_foundry_pairs():
    """llm-foundry's H100 mpt-3b at 512 and 8192 tokens, same micro-batch in bf16 and fp8: the
    published fp8/bf16 throughput ratios (36,527/27,965 = 1.31; 19,147/16,578 = 1.15) hold the
    modelled one within the fitted compute band of both times (in-sample rows: a check of the
    fp8 dimension's shape, not a held-out score; the fidelity report scores that)."""
    from costmodel.compute import compute_band, micro_batch_compute_s

    h100 = presets.load("h100-sxm")
    lo, hi = compute_band()
    for seq, micro, published in ((512, 40, 36527.125 / 27965.125), (8192, 3, 19146.75 / 16578.25)):
        t = [
            micro_batch_compute_s("mpt-3b", h100, seq, micro, precision=p) for p in ("bf16", "fp8")
        ]
        modelled = t[0] / t[1]
        assert published * lo / hi <= modelled <= published * hi / lo, (seq, modelled, published)


def test_given_mfu_under_fp8_is_a_fraction_of_the_fp8_peak():
    """The MFU road: t = F T / (peak x MFU) with the fp8 peak under fp8 (it took bf16's, so an
    fp8 step at a given MFU was as slow as a bf16 one). On H100 the peaks are 1979 and 989.5
    TFLOP/s: the same MFU is twice the throughput under fp8, and the label says of which peak."""
    h100 = presets.load("h100-sxm")
    tokens = SEQ  # micro-batch 1
    bf16, fp8 = _step(mfu=0.3), _step(mfu=0.3, precision="fp8")
    assert fp8.compute_s == pytest.approx(_flops() * tokens / (h100.fp8_dense_flops * 0.3))
    assert bf16.compute_s == pytest.approx(_flops() * tokens / (h100.bf16_dense_flops * 0.3))
    assert bf16.compute_s / fp8.compute_s == pytest.approx(1979 / 989.5, rel=1e-3)
    assert fp8.compute_label == "given MFU 0.30 of the fp8 peak"
    assert bf16.compute_label == "given MFU 0.30"


def test_default_mfu_under_fp8_assumes_no_speedup():
    """A GPU family with no fitted efficiency (Blackwell): the default MFU is a bf16 figure,
    so an fp8 step takes it of the bf16 peak (half of it of the fp8 peak) and says so."""
    kw = dict(cluster="dgx-b200", strategy="ddp")
    bf16, fp8 = _step(**kw), _step(**kw, precision="fp8")
    assert fp8.compute_source == bf16.compute_source == "default-mfu"
    assert fp8.compute_s == pytest.approx(bf16.compute_s, rel=1e-12)
    assert "of the bf16 peak, 0.20 of the fp8 peak" in fp8.compute_label
    assert "no fp8 speed-up assumed" in fp8.compute_label


def test_measured_compute_under_fp8_is_held_to_the_fp8_peak():
    """A measured time is used as it is; it is refused only when faster than the precision's
    dense peak: a time between the two peaks' bounds is possible under fp8, not under bf16."""
    h100 = presets.load("h100-sxm")
    work = _flops() * SEQ
    t = work / (0.75 * h100.fp8_dense_flops)  # 75 % of fp8's peak: faster than bf16's
    assert t < work / h100.bf16_dense_flops
    s = _step(compute_time_s=t, precision="fp8")
    assert s.compute_source == "measured" and s.compute_s == pytest.approx(t)
    with pytest.raises(ValueError, match="bf16"):
        _step(compute_time_s=t)
    with pytest.raises(ValueError, match="fp8"):
        _step(compute_time_s=work / (1.1 * h100.fp8_dense_flops), precision="fp8")


# --- fp8-mixed and precision --------------------------------------------------------------------
def test_fp8_mixed_recipe_implies_fp8_unless_told():
    """``fp8-mixed`` is float8 training: its matmuls run in fp8 when no precision is given (it
    changed the memory and not the compute). ``precision="bf16"`` with it is honoured: fp8
    storage with bf16 matmuls, a what-if, not an impossible run."""
    implied = _step(recipe="fp8-mixed")
    explicit = _step(recipe="fp8-mixed", precision="fp8")
    assert implied.precision == "fp8" and implied.step_time_s == explicit.step_time_s
    kept = _step(recipe="fp8-mixed", precision="bf16")
    assert kept.precision == "bf16" and "hopper/bf16" in kept.compute_label
    assert kept.compute_s > implied.compute_s
    sc = cm.Scenario(arch=ARCH, recipe="fp8-mixed")
    assert sc.precision is None and sc.compute_precision == "fp8"
    assert cm.Scenario(arch=ARCH).compute_precision == "bf16"


# --- one number through every surface -----------------------------------------------------------
def test_one_fp8_step_through_every_surface(tmp_path):
    """API, Scenario, ``step --json``, ``scenario --json``, ``train --json`` and the step
    sweep: the same fp8 step (and the same bf16 one), and each says its precision."""
    api = _step(precision="fp8")
    sc = cm.Scenario(
        arch=ARCH, strategy="fsdp", sequence_length=SEQ, precision="fp8", cluster="dgx-h100"
    )
    assert sc.strategy_step(timeline=False, band=False).step_time_s == api.step_time_s
    res = sc.evaluate(scaling=False, flips=False)
    assert res.step_time_s == pytest.approx(api.step_time_s, rel=1e-12)
    common = ("--arch", ARCH, "--strategy", "fsdp", "--seq", str(SEQ), "--precision", "fp8")
    step = run("step", *common, "--json")
    assert step.exit_code == 0, step.stderr
    d = json.loads(step.stdout)
    assert d["precision"] == "fp8" and d["step_time_s"] == pytest.approx(api.step_time_s)
    out = run("scenario", *common, "--json")
    assert out.exit_code == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["scenario"]["precision"] == "fp8"
    assert d["step_time_s"] == pytest.approx(api.step_time_s, rel=1e-12)
    out = run("train", *common, "--tokens", "1T", "--json")
    assert out.exit_code == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["step_time_s"] == pytest.approx(api.step_time_s, rel=1e-12)
    assert "hopper/fp8" in d["compute_label"]
    df = cm.sweep(
        kind="step", preset="dgx-h100", arch=ARCH, strategy="fsdp", nodes="1",
        sequence_length=str(SEQ), precision="bf16,fp8",
    )  # fmt: skip
    by = dict(zip(df["precision"], df["step_time_s"], strict=True))
    assert by["fp8"] == pytest.approx(api.step_time_s, rel=1e-12)
    assert by["bf16"] == pytest.approx(_step().step_time_s, rel=1e-12)
    # the text says it too
    text = run("step", *common)
    assert text.exit_code == 0 and "compute precision         fp8" in text.stdout


def test_training_cost_mfu_is_of_the_fp8_peak():
    """``train``'s MFU at the predicted step is over the peak of the step's precision, the
    one its given MFU and its measured times are held to."""
    h100 = presets.load("h100-sxm")
    sc = cm.Scenario(arch=ARCH, strategy="fsdp", sequence_length=SEQ, precision="fp8", mfu=0.3)
    res = sc.evaluate(scaling=False, flips=False)
    cost = res.training_cost(1e12)
    want = (
        sc.flops_per_token()
        * res.tokens_per_step
        / (res.step_time_s * res.ranks * h100.fp8_dense_flops)
    )
    assert cost.mfu == pytest.approx(want, rel=1e-9)
    assert cost.mfu < 0.3  # the step adds communication and the optimizer to the compute


# --- refusals -----------------------------------------------------------------------------------
A100_FP8 = "a100-sxm-80gb has no fp8 tensor cores"


def test_fp8_on_a100_is_refused_in_one_line_everywhere(tmp_path):
    with pytest.raises(ValueError, match=f"precision: {A100_FP8}"):
        _step(cluster="dgx-a100", precision="fp8")
    with pytest.raises(ValueError, match=f"precision: {A100_FP8}"):
        cm.Scenario(arch=ARCH, cluster="dgx-a100", precision="fp8")
    base = ("--arch", ARCH, "--cluster", "dgx-a100", "--precision", "fp8")
    for args in (("step", *base), ("scenario", *base), ("train", *base, "--tokens", "1T")):
        one_line_error(run(*args), f"--precision: {A100_FP8}")
    sweep = ("sweep", "--kind", "step", "--set", "preset=dgx-a100", "--set", f"arch={ARCH}",
             "--set", "nodes=1", "--set", "precision=fp8", "-o", str(tmp_path / "s.csv"))  # fmt: skip
    one_line_error(run(*sweep), A100_FP8)
    assert not (tmp_path / "s.csv").exists()
    # bf16 on the same A100 answers
    assert (
        run("step", "--arch", ARCH, "--cluster", "dgx-a100", "--precision", "bf16").exit_code == 0
    )


@pytest.mark.parametrize("command", ["step", "scenario", "train"])
def test_an_unknown_precision_is_refused_naming_the_flag(command):
    extra = ("--tokens", "1T") if command == "train" else ()
    line = one_line_error(run(command, "--arch", ARCH, "--precision", "fp4", *extra), "--precision")
    assert "bf16" in line and "fp8" in line
    with pytest.raises(ValueError, match="precision: must be bf16 or fp8, got 'fp4'"):
        _step(precision="fp4")


def test_one_link_step_refuses_precision():
    """The lesson's one-link step has no GPU: --precision is an option of the cluster step."""
    one_line_error(
        run(
            "step",
            "--params",
            "7B",
            "--compute-time",
            "400ms",
            "--ranks",
            "64",
            "--bandwidth",
            "50GB/s",
            "--precision",
            "fp8",
        ),  # fmt: skip
        "--precision: an option of the step on a cluster preset",
    )


# --- the step page --------------------------------------------------------------------------------
def test_step_page_precision_box_changes_the_compute():
    """The page's select box is Scenario's ``precision``: fp8 on the default H100 cluster
    speeds the compute up; on an A100 it is a red error naming the box and the GPU."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.run()
    assert not at.error and not at.exception
    box = next(s for s in at.selectbox if s.label == "Compute precision")
    assert box.value == "bf16" and list(box.options) == ["bf16", "fp8"]
    compute = {m.label: m.value for m in at.metric}["Compute"]
    box.set_value("fp8").run()
    assert not at.error and not at.exception
    fp8 = {m.label: m.value for m in at.metric}["Compute"]
    assert fp8 != compute
    next(s for s in at.selectbox if s.label == "Cluster").set_value("dgx-a100").run()
    assert any("Compute precision" in e.value and "a100" in e.value for e in at.error)
