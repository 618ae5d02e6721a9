"""costmodel.validation.compute_bench: the model it times is the model costmodel prices (tensor
names, shapes and order), a tiny CPU run writes a complete row beside the fitted prediction, bad
arguments are one line and exit 2, and the project's own H200 run (tests/data/
gpu_check_h200_2026-12-04, scripts/gpu_check.sh on one H200, 2026-12-04) is held as a regression
bound on the fitted compute time (docs/gpu-checks.md)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from costmodel.architecture import load_arch
from costmodel.validation import compute_bench as cb

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# scripts/gpu_check.sh run twice, 10 minutes apart on two machines (the second adds the AdamW
# steps), then `costmodel validate compute` eager and under torch.compile (run3) and once more
# with the AdamW step of the whole 8B model (run4, after the memory check was added)
H200_RUNS = sorted((Path(__file__).parent / "data").glob("gpu_check_h200_2026-12-04*"))


@pytest.mark.parametrize(
    "name", ["llama-3.1-8b", "llama-2-7b", "mistral-7b", "qwen2.5-7b", "llama-3.1-70b"]
)
def test_the_timed_model_is_the_priced_tensor_list(name):
    """Built on the meta device (no memory): every parameter's name and shape, in order, is
    Architecture.tensors(), so the FLOPs and parameters costmodel prices are the ones timed."""
    arch = load_arch(name)
    model = cb.build_model(arch, torch, "meta")
    built = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    assert built == arch.tensors()
    assert sum(p.numel() for p in model.parameters()) == arch.params


def _tiny_config(tmp_path: Path, tied: bool) -> Path:
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 256,
        "tie_word_embeddings": tied,
        "max_position_embeddings": 128,
    }
    path = tmp_path / f"tiny-{tied}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return path


def _tiny_row(config: Path, seq: str, steps: str, warmup: str, cluster: str, *more: str):
    """(row, argv) of one fp32 CPU run of the tiny model, its row appended to a file beside the
    config."""
    out = config.parent / "rows.jsonl"
    argv = ["--arch", str(config), "--seq", seq, "--steps", steps, "--warmup", warmup]
    argv += ["--dtype", "fp32", "--cluster", cluster, *more, "-o", str(out)]
    assert cb.main(argv) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    return row, argv


@pytest.mark.parametrize("tied", [False, True])
def test_a_tiny_cpu_run_writes_its_row_beside_the_prediction(tmp_path, capsys, tied):
    config = _tiny_config(tmp_path, tied)
    arch = load_arch(str(config))
    assert [(n, tuple(p.shape)) for n, p in cb.build_model(arch, torch).named_parameters()] == (
        arch.tensors()
    )
    out = tmp_path / "compute.jsonl"
    argv = ["--arch", str(config), "--seq", "32", "--micro-batch", "2", "--steps", "2"]
    argv += ["--warmup", "1", "--dtype", "fp32", "--cluster", "dgx-h100", "-o", str(out)]
    assert cb.main(argv) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["device"] == "cpu" and row["tokens"] == 64 and len(row["times_s"]) == 2
    # the forward and loss of each timed iteration, inside it
    assert len(row["forward_times_s"]) == 2
    assert all(0 < f < t for f, t in zip(row["forward_times_s"], row["times_s"], strict=True))
    assert row["forward_fraction"] == pytest.approx(row["forward_s"] / row["compute_s"])
    assert 0 < row["forward_fraction"] < 1
    # no allocator and no device memory to read on a CPU: said as null, never a made-up 0
    assert (
        row["peak_memory_bytes"] is row["peak_reserved_bytes"] is row["device_used_bytes"] is None
    )
    assert row["compute_s"] == pytest.approx(
        sorted(row["times_s"])[0] / 2 + sorted(row["times_s"])[1] / 2
    )
    from costmodel.compute import compute_band

    from ._cli import run

    # one road: the compute `costmodel step` shows for one GPU of the same cluster
    shown = run(
        "step", "--arch", str(config), "--cluster", "dgx-h100", "--gpus-per-node", "1",
        "--strategy", "ddp", "--seq", "32", "--micro-batch", "2", "--json",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.stderr
    want = json.loads(shown.stdout)["compute_s"]
    assert row["predicted_compute_s"] == pytest.approx(want, rel=1e-9)
    assert row["cluster"] == "dgx-h100" and row["gpu_preset"] == "h100-sxm"
    low, high = compute_band()
    assert row["band_low_s"] == pytest.approx(want * low)
    assert row["band_high_s"] == pytest.approx(want * high)
    assert row["ratio"] == pytest.approx(row["compute_s"] / want)
    assert row["model_flops"] == pytest.approx(arch.training_flops_per_token(32) * 64)
    assert row["in_band"] is (want * low <= row["compute_s"] <= want * high)
    said = capsys.readouterr().out
    assert "forward + backward" in said and "on one h100-sxm of dgx-h100" in said
    assert "of it); MFU" in said and "; forward + loss " in said
    assert ("inside" if row["in_band"] else "outside") in said
    # a second run appends; the first row stays
    assert cb.main(argv) == 0
    assert len(out.read_text().splitlines()) == 2


def test_a_checkpointed_model_reruns_each_layer_and_computes_the_same_gradients(tmp_path):
    """--recompute full checkpoints every layer: each layer's forward runs twice per step (once
    more in backward), and the loss and every gradient are those of the model without it."""
    arch = load_arch(str(_tiny_config(tmp_path, False)))
    ids = torch.randint(0, arch.vocab, (2, 17), generator=torch.Generator().manual_seed(0))
    results = {}
    for mode in cb.RECOMPUTE:
        torch.manual_seed(0)
        model = cb.build_model(arch, torch, recompute=mode)
        calls = []
        for layer in model.model.layers:
            layer.register_forward_pre_hook(lambda *_, seen=calls: seen.append(1))
        logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        results[mode] = (loss.item(), [p.grad.clone() for p in model.parameters()], len(calls))
    (loss0, grads0, calls0), (loss1, grads1, calls1) = results["none"], results["full"]
    assert (calls0, calls1) == (arch.layers, 2 * arch.layers)
    assert loss1 == pytest.approx(loss0, rel=1e-6)
    for g0, g1 in zip(grads0, grads1, strict=True):
        assert torch.allclose(g0, g1, rtol=1e-5, atol=1e-7)


def test_a_recompute_full_row_is_priced_as_step_recompute_full(tmp_path, capsys):
    """One road: the prediction of a checkpointed run is the compute `costmodel step
    --recompute full` shows for one GPU, above the same step without it; the row, the printed
    line and the dry run say "recompute full"."""
    from ._cli import run

    config = _tiny_config(tmp_path, False)
    row, argv = _tiny_row(config, "32", "1", "0", "dgx-h100", "--recompute", "full")
    assert row["recompute"] == "full"
    assert "fp32, recompute full: forward + backward" in capsys.readouterr().out
    step = ["step", "--arch", str(config), "--cluster", "dgx-h100", "--gpus-per-node", "1"]
    step += ["--strategy", "ddp", "--seq", "32", "--json"]
    full = json.loads(run(*step, "--recompute", "full").stdout)["compute_s"]
    plain = json.loads(run(*step).stdout)["compute_s"]
    assert row["predicted_compute_s"] == pytest.approx(full, rel=1e-9)
    assert full > plain
    assert cb.main([*argv[:-2], "--dry-run"]) == 0
    assert "fp32, recompute full: 0 warm-up and 1 timed" in capsys.readouterr().out
    from costmodel.memory import training_memory

    args = cb.build_parser().parse_args([*argv[:-2], "--dry-run"])
    arch = load_arch(str(config))
    m = training_memory(arch=arch, sequence_length=32, micro_batch=1, recompute="full")
    assert cb.memory_need_bytes(arch, args) == pytest.approx(
        2 * (m.weights_bytes + m.gradients_bytes) + m.activations_bytes
    )


def test_no_prediction_without_a_gpu_preset_and_a_compiled_run(tmp_path, capsys):
    """--cluster auto on a CPU has nothing to predict for; --compile traces each layer (the
    eager backend here: inductor needs a compiler and minutes on 2 cores) and the row and the
    line say so."""
    config = _tiny_config(tmp_path, False)
    out = tmp_path / "c.jsonl"
    argv = ["--arch", str(config), "--seq", "16", "--steps", "1", "--warmup", "1", "-o", str(out)]
    assert cb.main([*argv, "--dtype", "fp32", "--compile", "eager"]) == 0
    said = capsys.readouterr().out
    assert "no cluster preset to predict for (--cluster NAME)" in said
    assert "fp32, torch.compile (eager): forward + backward" in said
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["compile"] == "eager" and row["predicted_compute_s"] is None


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--arch", "mixtral-8x7b"],
            "--arch: mixtral-8x7b is a mixtral MoE model; this job builds llama, qwen2 (dense)",
        ),
        (["--arch", "gpt2-124m"], "--arch: gpt2-124m is a gpt2 model"),
        (
            ["--arch", "llama-2-7b", "--layers", "40"],
            "--layers: must be in [1, 32] for llama-2-7b, got 40",
        ),
        (["--arch", "llama-2-7b", "--layers", "0"], "--layers: must be in [1, 32]"),
        (["--arch", "llama-2-7b", "--seq", "0"], "--seq: must be >= 1, got 0"),
        (["--arch", "llama-2-7b", "--steps", "0"], "--steps: must be >= 1, got 0"),
        (
            ["--arch", "llama-2-7b", "-o", "rows.csv"],
            "--output: the row is a JSON line; give a .jsonl file",
        ),
        (
            ["--arch", "llama-2-7b", "--cluster", "h100-sxm"],
            "--cluster: unknown cluster preset 'h100-sxm'",
        ),
        (["--arch", "llama2-7b"], "arch: unknown architecture 'llama2-7b'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, said):
    assert cb.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("compute_bench: ") and said in err and err.count("\n") == 1


def _h200_rows(compiled: bool | None = False) -> list[dict]:
    """The stored rows: eager ones (the fit's rows ran without torch.compile), compiled ones
    (``compiled=True``) or all (None)."""
    rows = [
        json.loads(x) for run in H200_RUNS for x in (run / "compute.jsonl").read_text().splitlines()
    ]
    if compiled is None:
        return rows
    return [r for r in rows if (r.get("compile", "none") != "none") is compiled]


def test_the_h200_run_is_what_its_rows_say():
    """The stored rows describe the architectures costmodel has today (parameters, FLOPs) and
    the GPU the run reported, so the bound below compares like with like."""
    rows = _h200_rows(None)
    assert len(H200_RUNS) == 4 and len(rows) == 19 and len(_h200_rows(True)) == 3
    for run in H200_RUNS[:2]:
        assert "NVIDIA H200, 143771 MiB, 700.00 W" in (run / "nvidia-smi.csv").read_text()
    for r in rows:
        arch = cb.row_arch(r)
        assert r["device"] == "NVIDIA H200" and cb.gpu_preset_for(r["device"]) == "h200-sxm"
        assert cb.cluster_for("h200-sxm") == "hgx-h200"
        assert r["params"] == arch.params
        tokens = r["seq"] * r["micro_batch"]
        assert r["model_flops"] == pytest.approx(arch.training_flops_per_token(r["seq"]) * tokens)
        assert r["compute_s"] == pytest.approx(
            sorted(r["times_s"])[4] / 2 + sorted(r["times_s"])[5] / 2
        )


def test_the_fitted_compute_time_against_the_h200_run():
    """Goal: the compute band (x0.91-x1.12 of the compute `costmodel step` shows for one GPU of
    hgx-h200) holds the measured time. Achieved on 2026-12-04: it holds none of the 16 eager rows
    (two runs of 7 configurations, which agree within 1%, and two through the CLI); one H200
    alone ran eager PyTorch 9-17% faster (measured/predicted 0.828-0.907; 0.765-0.852 against the whole fitted one-node
    step, which a 1-GPU slice was priced at before its calibration took the whole node's
    communication out). The fit has no H200 row (its Hopper rows are H100s at the same 700 W
    and peak, so it prices H200 = H100; docs/gpu-checks.md). Held as a regression bound: a
    refit that moves the H200 prediction further from the measurement fails here."""
    from costmodel.compute import compute_band

    high = compute_band()[1]
    ratios = []
    for r in _h200_rows():
        arch = cb.row_arch(r)
        p = cb.predicted(arch, "hgx-h200", r["seq"], r["micro_batch"])
        ratios.append(r["compute_s"] / p["predicted_compute_s"])
    ratios.sort()
    assert all(math.isfinite(x) for x in ratios)
    assert ratios[0] >= 0.81, ratios  # achieved 0.828: the prediction at most 23% slow
    assert statistics.median(ratios) >= 0.85, ratios  # achieved median 0.862
    assert ratios[-1] <= high, ratios  # never faster than the band's upper edge allows


def test_the_optimizer_step_against_the_h200_run():
    """Goal: ``optimizer_step_s`` (28 B per parameter at 750/900 of the datasheet HBM bandwidth,
    a V100 streaming measurement) prices PyTorch's fused fp32 AdamW within 10%. Achieved on
    2026-12-04 (4 rows, 5.5-8.0 B parameters on one H200): measured/predicted 1.169-1.177, the
    step 17% slower than priced (an effective 0.71 of 4.8 TB/s). Not refitted from one GPU type
    (docs/gpu-checks.md); held as a regression bound: the prediction stays optimistic by at most
    25% and never pessimistic."""
    from costmodel.compute import optimizer_step_s

    timed = [r for r in _h200_rows() if "optimizer_s" in r]
    assert len(timed) == 4
    for r in timed:
        want = optimizer_step_s(r["params"], 28.0, 4.8e12)  # h200-sxm: 4.8 TB/s (datasheet)
        assert r["predicted_optimizer_s"] == pytest.approx(want)
        assert 1.0 <= r["optimizer_s"] / want <= 1.25, (r["arch"], r["optimizer_s"] / want)


def test_the_optimizer_step_is_timed_beside_its_hbm_bound(tmp_path, capsys):
    row, _ = _tiny_row(
        _tiny_config(tmp_path, False), "16", "2", "1", "hgx-h200", "--optimizer", "adamw"
    )
    from costmodel import presets
    from costmodel.compute import optimizer_step_s

    bandwidth = float(presets.load("h200-sxm").memory_bandwidth_bytes_per_s)
    assert row["optimizer_bytes_per_param"] == 28.0
    want = optimizer_step_s(row["params"], 28.0, bandwidth)
    assert row["predicted_optimizer_s"] == pytest.approx(want)
    assert row["optimizer_ratio"] == pytest.approx(row["optimizer_s"] / want)
    assert len(row["optimizer_times_s"]) == 2 and row["optimizer_s"] > 0
    said = capsys.readouterr().out
    assert f"AdamW step (fp32, {row['params']:,} parameters)" in said
    assert "28 B per parameter" in said


def test_validate_compute_is_the_same_job_from_the_cli(tmp_path):
    """`costmodel validate compute` runs compute_bench.run in-process: the same row (appended
    to -o, or printed with --json), the same refusals said as every CLI refusal."""
    from ._cli import one_line_error, run

    config = _tiny_config(tmp_path, False)
    out = tmp_path / "rows.jsonl"
    args = ["validate", "compute", "--arch", str(config), "--seq", "16", "--steps", "1"]
    args += ["--warmup", "0", "--dtype", "fp32", "--cluster", "hgx-h200"]
    shown = run(*args, "-o", str(out), "--json")
    assert shown.exit_code == 0, shown.stderr
    printed = json.loads(shown.stdout)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert printed["predicted_compute_s"] == pytest.approx(row["predicted_compute_s"])
    assert row["cluster"] == "hgx-h200" and row["tokens"] == 16 and row["kind"] == "compute"
    text = run(*args)
    assert text.exit_code == 0 and "on one h200-sxm of hgx-h200" in text.stdout
    assert len(out.read_text().splitlines()) == 1  # no -o: nothing appended
    one_line_error(run(*args, "-o", str(tmp_path / "r.csv")), "--output:", "must end in .jsonl")
    one_line_error(run(*args[:-2], "--cluster", "h200-sxm"), "--cluster: unknown cluster preset")
    one_line_error(
        run(*args[:-4], "--dtype", "fp16"), "--dtype: unknown 'fp16'; allowed: bf16, fp32"
    )
    one_line_error(run("validate", "compute", "--arch", "mixtral-8x7b"), "--arch: mixtral-8x7b is")
    one_line_error(
        run(*args, "--optimizer", "sgd"), "--optimizer: unknown 'sgd'; allowed: none, adamw"
    )
    one_line_error(
        run(*args, "--compile", "max"), "--compile: unknown 'max'; allowed: none, inductor, eager"
    )
    one_line_error(
        run(*args, "--recompute", "selective"),
        "--recompute: unknown 'selective'; allowed: none, full",
    )


def test_the_memory_model_against_the_h200_run():
    """The peak allocated while a micro-batch ran forward and backward (bf16 weights and
    gradients, no optimizer state) against the memory model's weights + gradients + activations
    for the same micro-batch: on 2026-12-04 the model was above the peak on all 16 eager rows, by
    2-32% (docs/gpu-checks.md). Held: never below the measurement (a false "fits"), and at most
    35% above it."""
    from costmodel.memory import training_memory

    for r in _h200_rows():
        arch = cb.row_arch(r)
        m = training_memory(arch=arch, sequence_length=r["seq"], micro_batch=r["micro_batch"])
        parts = m.weights_bytes + m.gradients_bytes + m.activations_bytes
        assert m.weights_bytes == m.gradients_bytes == 2 * arch.params  # bf16, as measured
        assert 1.0 <= parts / r["peak_memory_bytes"] <= 1.35, (
            r["arch"],
            parts / r["peak_memory_bytes"],
        )


def test_a_compiled_step_against_the_h200_prediction():
    """The fit's rows ran without torch.compile, and the model has no compiler term: one H200
    under torch.compile (inductor, each layer) ran 19-29% faster than `costmodel step`'s
    compute on 2026-12-04 (measured/predicted 0.709-0.814; eager in the same run 0.840). Held
    as a bound on how far a compiled run may beat the price (docs/gpu-checks.md)."""
    rows = _h200_rows(True)
    assert {r["compile"] for r in rows} == {"inductor"}
    for r in rows:
        arch = cb.row_arch(r)
        p = cb.predicted(arch, "hgx-h200", r["seq"], r["micro_batch"])
        assert 0.65 <= r["compute_s"] / p["predicted_compute_s"] < 0.85, r["arch"]


def test_a_model_the_device_cannot_hold_is_refused_before_it_is_built(monkeypatch):
    """The memory model sizes the job before anything is allocated: a 8B model at 4,096 tokens
    (60.5 GB of weights, gradients and activations in bf16) on a device with 24 GB free is one
    line naming the need, the free memory and what to change (it was killed for memory, a
    22 GB process, when a --help example ran it on a 24 GB machine)."""
    from ._cli import one_line_error, run

    monkeypatch.setattr(cb, "free_bytes", lambda torch: (24e9, "this machine (CPU)"))
    monkeypatch.setattr(cb, "measure", lambda *a: pytest.fail("built a model that cannot fit"))
    line = one_line_error(
        run("validate", "compute", "--arch", "llama-3.1-8b", "--seq", "4096"),
        "--arch: llama-3.1-8b at 4096 x 1 tokens needs about 60.5 GB",
        "this machine (CPU) has 24 GB free (a tenth kept spare)",
        "give --layers N",
    )
    assert "AdamW" not in line
    arch = cb.arch_for("llama-3.1-8b")
    bf16 = cb.build_parser().parse_args(["--arch", "llama-3.1-8b", "--optimizer", "adamw"])
    assert cb.memory_need_bytes(arch, bf16) == 16.0 * arch.params  # the AdamW phase is larger
    assert cb.memory_need_bytes(arch, bf16, cuda=False) == 24.0 * arch.params


def test_a_dry_run_checks_and_prices_without_building(tmp_path, monkeypatch):
    from ._cli import run

    monkeypatch.setattr(cb, "measure", lambda *a: pytest.fail("a dry run built the model"))
    monkeypatch.chdir(tmp_path)
    r = run(
        "validate",
        "compute",
        "--arch",
        "llama-3.1-8b",
        "--cluster",
        "hgx-h200",
        "-o",
        "c.jsonl",
        "--dry-run",
    )
    assert r.exit_code == 0, r.stderr
    want = cb.predicted(cb.arch_for("llama-3.1-8b"), "hgx-h200", 4096, 1)["predicted_compute_s"]
    from costmodel.units import format_duration

    assert r.stdout.startswith("would time llama-3.1-8b (8,030,261,248 parameters), seq 4096")
    assert "needing about 60.5 GB of device memory" in r.stdout
    assert f"predicted {format_duration(want)} on one h200-sxm of hgx-h200" in r.stdout
    assert not (tmp_path / "c.jsonl").exists()  # nothing written
    assert cb.main(["--arch", "llama-3.1-8b", "--dry-run"]) == 0
