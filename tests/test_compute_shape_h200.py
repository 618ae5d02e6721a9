"""The project's own sweep of one H200's compute time (tests/data/gpu_sweep_h200_2026-12-04,
scripts/gpu_compute_sweep.sh: ten eager bf16 configurations across tokens per micro-batch,
sequence length at equal tokens and hidden size, and a device-to-device copy), held against the
fitted compute's shape terms (docs/gpu-checks.md, "the shape of the compute time"), and the
same GPU's run with full activation recomputation (tests/data/gpu_recompute_h200_2026-12-04,
scripts/gpu_recompute.sh) against the recompute term and the memory model. No GPU needed: the
rows are read, the predictions recomputed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.memory import training_memory
from costmodel.validation import compute_bench as cb

SWEEP = Path(__file__).parent / "data" / "gpu_sweep_h200_2026-12-04"
# the first run's 8192 x 1 row of llama-3.1-8b (same GPU type, driver and torch, that morning)
FIRST = Path(__file__).parent / "data" / "gpu_check_h200_2026-12-04" / "compute.jsonl"


def _rows(path: Path = SWEEP / "compute.jsonl") -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _model_parts(row: dict) -> float:
    """The memory model's weights + gradients + activations [B] for the row's micro-batch (bf16,
    its recomputation), what `costmodel memory --ranks 1` lists before any optimizer state."""
    m = training_memory(
        arch=cb.row_arch(row),
        sequence_length=row["seq"],
        micro_batch=row["micro_batch"],
        recompute=row.get("recompute", "none"),
    )
    return float(m.weights_bytes + m.gradients_bytes + m.activations_bytes)


def _row(seq: int, micro_batch: int, rows: list[dict] | None = None) -> dict:
    (row,) = [
        r
        for r in (rows if rows is not None else _rows())
        if r["arch"] == "llama-3.1-8b" and (r["seq"], r["micro_batch"]) == (seq, micro_batch)
    ]
    return row


#: Rows repriced since the run [s], each with why: fsdp's all-gathers and reduce-scatters run
#: one at a time (one NCCL communicator, 2026-12-06), so the one-node FSDP step the fitted
#: compute is calibrated on holds about 127 ms of collectives for llama-3.1-8b on one HGX H200
#: node, above the fitted step at 512 tokens a micro-batch (about 133 ms): no compute
#: reproduces it and the fixed point stops lower (106.4 -> 85.1 ms); at 1,024 tokens the
#: exposed part grew (156.7 -> 155.0 ms). docs/gpu-checks.md prints both; the recorded ratios
#: (0.897, 0.752) are the run's against its price of the day, 1.121 and 0.760 today.
REPRICED = {("llama-3.1-8b", 512, 1): 0.08512, ("llama-3.1-8b", 1024, 1): 0.15496}


def test_the_sweep_is_what_its_rows_say():
    """Ten rows on the GPU the run reported; each row's FLOPs, median and prediction are what
    costmodel computes today for its architecture (but the :data:`REPRICED` rows, held to
    their new price), so the bounds below compare like with like."""
    rows = _rows()
    assert len(rows) == 10
    assert "NVIDIA H200, 143771 MiB, 700.00 W" in (SWEEP / "nvidia-smi.csv").read_text()
    for r in rows:
        arch = cb.row_arch(r)
        assert r["device"] == "NVIDIA H200" and r["compile"] == "none" and r["dtype"] == "bf16"
        assert r["params"] == arch.params and r["tokens"] == r["seq"] * r["micro_batch"]
        assert r["model_flops"] == pytest.approx(
            arch.training_flops_per_token(r["seq"]) * r["tokens"]
        )
        times = sorted(r["times_s"])
        assert r["compute_s"] == pytest.approx((times[4] + times[5]) / 2)
        predicted = cb.predicted(arch, "hgx-h200", r["seq"], r["micro_batch"])
        now = REPRICED.get((r["arch"], r["seq"], r["micro_batch"]))
        if now is not None:
            assert predicted["predicted_compute_s"] == pytest.approx(now, abs=1e-5)
            continue
        assert r["predicted_compute_s"] == pytest.approx(predicted["predicted_compute_s"])


def test_the_fitted_compute_time_across_the_sweep():
    """Goal: the compute band (x0.91-x1.12) holds every row. Achieved 2026-12-04: 4 of 10
    (measured/compute 0.752-0.969; slowest at 1,024-2,048 tokens, where one GPU's throughput has
    already saturated and the fitted T0/T term, fitted on one-node FSDP steps, has not).
    Held: no row priced more than 26% slow, none faster than measured (a refit that moves
    the H200 price further away fails)."""
    ratios = {(r["arch"], r["seq"], r["micro_batch"]): r["ratio"] for r in _rows()}
    assert min(ratios.values()) >= 0.74, ratios
    assert max(ratios.values()) <= 1.0, ratios
    # at equal tokens, short sequences are priced closer than long ones (attention, below)
    assert ratios[("llama-3.1-8b", 512, 8)] > ratios[("llama-3.1-8b", 4096, 1)]


def test_attention_is_priced_above_what_one_h200_spends():
    """At the same tokens per micro-batch, a longer sequence adds attention work only. Measured
    2026-12-04: 512 x 8 -> 4096 x 1 added 21 ms against 58 ms priced, 1024 x 8 -> 8192 x 1
    (the first run's row) 102 ms against 233 ms: 0.36 and 0.44 of the price (the fit's
    attention weight rho, from published runs mostly on A100s). Goal 1.0; held: between 0.3
    and 1.0, so neither a heavier attention term nor one below the measurement passes."""
    pairs = [(_row(512, 8), _row(4096, 1)), (_row(1024, 8), _row(8192, 1, _rows(FIRST)))]
    for short, long in pairs:
        assert short["tokens"] == long["tokens"]
        measured = long["compute_s"] - short["compute_s"]
        priced = long["predicted_compute_s"] - short["predicted_compute_s"]
        assert measured > 0 and priced > 0
        assert 0.3 <= measured / priced <= 1.0, (long["seq"], measured / priced)


def test_wider_matmuls_run_at_a_higher_mfu():
    """The fitted ``1 + h0/h`` term says wider matmuls reach more of the peak; the sweep's MFU
    rises with the hidden size at 4,096 tokens: 0.527 (4,096), 0.586 (8,192), 0.615 (16,384)."""
    by_width = sorted(
        (cb.row_arch(r).hidden, r["mfu"])
        for r in _rows()
        if (r["seq"], r["micro_batch"]) == (4096, 1)
    )
    assert [h for h, _ in by_width] == [4096, 8192, 16384]
    mfus = [m for _, m in by_width]
    assert mfus == sorted(mfus) and mfus[-1] / mfus[0] > 1.1, by_width


def test_the_memory_model_against_the_sweep():
    """The memory model's weights + gradients + activations above the peak allocated on every
    row (2-37 %): never a false "fits". At 2,048 tokens and below the peak is barely above the
    bf16 weights and gradients (the activations are freed as the gradients fill), so the sum of
    the parts is furthest above it (1.369); held at [1.0, 1.40] on this measurement."""
    for r in _rows():
        weights = 2 * cb.row_arch(r).params  # bf16
        assert r["peak_memory_bytes"] > 2 * weights  # the run held weights and gradients
        assert 1.0 <= _model_parts(r) / r["peak_memory_bytes"] <= 1.40, (r["arch"], r["tokens"])


def test_the_optimizer_bandwidth_fraction_is_below_what_a_copy_reaches():
    """A 4 GiB device-to-device copy moved 4.28 TB/s (read + write), 0.892 of the H200's
    datasheet 4.8 TB/s (as presets/gpus cites it). The optimizer step's assumed fraction of the
    datasheet bandwidth must stay below what a plain copy reaches (a physical bound: an update
    reading and writing four tensors moves no faster than a copy)."""
    from costmodel import presets
    from costmodel.compute import HBM_ACHIEVABLE_FRACTION

    copy = json.loads((SWEEP / "hbm.json").read_text())
    assert copy["device"] == "NVIDIA H200" and copy["bytes_moved"] == 2 * 4 * 2**30
    times = sorted(copy["times_s"])
    median = (times[9] + times[10]) / 2
    assert copy["median_s"] == pytest.approx(median)
    datasheet = float(presets.load("h200-sxm").memory_bandwidth_bytes_per_s)
    fraction = copy["bytes_moved"] / median / datasheet
    assert fraction == pytest.approx(0.892, abs=0.002)
    assert HBM_ACHIEVABLE_FRACTION < fraction


# --- full activation recomputation (scripts/gpu_recompute.sh, the same day) --------------------
RECOMPUTE = Path(__file__).parent / "data" / "gpu_recompute_h200_2026-12-04"


def test_the_recompute_run_is_what_its_rows_say():
    rows = _rows(RECOMPUTE / "compute.jsonl")
    assert [r["recompute"] for r in rows].count("full") == 5 and len(rows) == 7
    assert "NVIDIA H200, 143771 MiB, 700.00 W" in (RECOMPUTE / "nvidia-smi.csv").read_text()
    for r in rows:
        arch = cb.row_arch(r)
        assert (
            r["device"] == "NVIDIA H200" and r["compile"] == "none" and r["params"] == arch.params
        )
        times = sorted(r["times_s"])
        assert r["compute_s"] == pytest.approx((times[4] + times[5]) / 2)
        p = cb.predicted(arch, "hgx-h200", r["seq"], r["micro_batch"], r["recompute"])
        assert r["predicted_compute_s"] == pytest.approx(p["predicted_compute_s"])


def _blocks_only_extra(row: dict) -> float:
    """The extra a full recomputation of ``row``'s micro-batch would be priced at if only the
    checkpointed blocks were rerun (the head not: ``recompute_extra(..., head_flops=)``), at the
    shipped fitted constants of the row's GPU [-]; the candidate the compute fit scored and did
    not keep (docs/step-fidelity.md)."""
    from costmodel import compute as c
    from costmodel import presets

    a, gpu = cb.row_arch(row), presets.load("h200-sxm")
    fit = c.compute_fit(gpu)
    lin, att = c.flops_split(a, row["seq"])
    p = c.precision_peak_flops(gpu, "bf16")
    tokens = row["seq"] * row["micro_batch"]

    def t(r: tuple[float, float]) -> float:
        return c.token_time_s(lin, att, a.hidden, p, p, fit.u, fit.v, fit.w, *r, tokens, fit.m)

    return t(c.recompute_extra("full", lin, att, head_flops=c.head_flops(a))) / t((0, 0)) - 1.0


def test_full_recomputation_costs_less_than_priced():
    """Goal: `step --recompute full` prices the extra forward within the compute band.
    Achieved 2026-12-04 on one H200: +25.6 % (8B) and +23.0 % (70B-wide layers) measured
    against +34.3 % and +35.4 % priced, 0.75 and 0.65 of the priced extra. The head, not in a
    checkpointed block, is priced as rerun: pricing only the blocks (+31.3 %, +29.2 % at the
    same constants; 0.82 and 0.79 of it) raised the compute fit's grouped-CV error when
    refitted and was not kept (docs/step-fidelity.md). Held: the measured extra 0.60-0.80 of
    the priced one (the price never below it; 0.55-1.0 before), 0.75-0.90 of the blocks-only."""
    rows = _rows(RECOMPUTE / "compute.jsonl")
    for arch in ("llama-3.1-8b", "llama-3.1-70b[8 layers]"):
        (plain,) = [r for r in rows if r["arch"] == arch and r["recompute"] == "none"]
        (full,) = [
            r
            for r in rows
            if r["arch"] == arch
            and r["recompute"] == "full"
            and r["tokens"] == plain["tokens"]
            and r["seq"] == plain["seq"]
        ]
        measured = full["compute_s"] / plain["compute_s"] - 1.0
        priced = full["predicted_compute_s"] / plain["predicted_compute_s"] - 1.0
        assert 0.2 < measured < priced, (arch, measured, priced)
        assert 0.60 <= measured / priced <= 0.80, (arch, measured / priced)
        blocks = _blocks_only_extra(full)
        assert measured < blocks < priced, (arch, measured, blocks, priced)
        assert 0.75 <= measured / blocks <= 0.90, (arch, measured / blocks)


def test_the_memory_model_with_recomputation_against_the_run():
    """With every layer checkpointed the model's weights + gradients + activations
    (``training_memory(recompute="full")``) stay above the peak allocated (1.10-1.33), and the
    micro-batch the job refused without recomputation (8B, 4096 x 4: 146 GB by the model) ran
    in 50.4 GB with it, under the model's 62 GB."""
    for r in _rows(RECOMPUTE / "compute.jsonl"):
        assert 1.0 <= _model_parts(r) / r["peak_memory_bytes"] <= 1.40, (r["arch"], r["recompute"])
    big = _row(4096, 4, _rows(RECOMPUTE / "compute.jsonl"))
    assert _model_parts({**big, "recompute": "none"}) > 140e9
    assert big["recompute"] == "full" and big["peak_memory_bytes"] < 55e9


# --- forward and backward apart (compute_bench's forward_fraction, the same day) ---------------
FORWARD = Path(__file__).parent / "data" / "gpu_forward_h200_2026-12-04"


def test_forward_is_a_third_of_the_step_as_the_timeline_splits_it():
    """The timeline splits a micro-batch's compute a third forward, two thirds backward
    (``FORWARD_FRACTION``); on one H200 forward + loss measured 0.330-0.340 of the iteration on
    every eager row without recomputation (seq 1,024-8,192, widths 4,096-16,384); with every
    layer checkpointed the forward is unchanged and backward carries the rerun."""
    from costmodel.strategy.compute import FORWARD_FRACTION

    rows = _rows(FORWARD / "compute.jsonl")
    assert len(rows) == 6
    plain = [r for r in rows if r["recompute"] == "none"]
    assert len(plain) == 5
    for r in rows:
        forwards = sorted(r["forward_times_s"])
        assert r["forward_s"] == pytest.approx((forwards[4] + forwards[5]) / 2)
        assert r["forward_fraction"] == pytest.approx(r["forward_s"] / r["compute_s"])
    for r in plain:
        assert abs(r["forward_fraction"] - FORWARD_FRACTION) < 0.03, (r["arch"], r["seq"])
    (full,) = [r for r in rows if r["recompute"] == "full"]
    (same,) = [r for r in plain if r["arch"] == full["arch"] and r["seq"] == full["seq"]]
    assert full["forward_s"] == pytest.approx(same["forward_s"], rel=0.05)
    rerun = full["compute_s"] - same["compute_s"]
    assert 0.5 * same["forward_s"] < rerun < same["forward_s"]  # measured 0.76 of it


# --- memory the device holds beyond the model (the same day) ------------------------------------
MEMORY = Path(__file__).parent / "data" / "gpu_memory_h200_2026-12-04"


def test_what_the_device_holds_beyond_the_model_fits_the_tight_fit_rule():
    """The CUDA context (device used less the allocator's reserve, 0.80 GB) and the allocator's
    reserve above its peak allocated (1.6-18.4 %) took 1.1-4.6 % of the H200's memory on every
    row: inside ``TIGHT_FIT_HEADROOM`` (5 %), the spare share below which a "fits" says what
    its total leaves out. And the model's parts at their defaults (no context, no
    fragmentation) stay within that share of what the device held."""
    from costmodel import presets
    from costmodel.strategy.memory import TIGHT_FIT_HEADROOM

    card = float(presets.load("h200-sxm").memory_bytes)
    rows = _rows(MEMORY / "compute.jsonl")
    assert len(rows) == 4
    for r in rows:
        context = r["device_used_bytes"] - r["reserved_bytes"]
        assert 0.5e9 < context < 1.0e9, context  # PyTorch's notes: some 0.5-1 GB
        assert r["peak_reserved_bytes"] >= r["peak_memory_bytes"]
        beyond = r["device_used_bytes"] - r["peak_memory_bytes"]
        assert 0 < beyond / card < TIGHT_FIT_HEADROOM, (r["arch"], beyond / card)
        assert _model_parts(r) > r["device_used_bytes"] - TIGHT_FIT_HEADROOM * card
