"""A QA pass that pasted the README's commands: one GPU under ddp, the fragmentation allowance's
base and the scalar all-reduce's name check.

1. `step --arch gpt2-1.5b --cluster dgx-h100 --gpus-per-node 1 --seq 1024 --strategy all` ranked
   ddp last (+37 %, "beyond ±2.3%") on DDP's host overhead alone, while its memory (no bucket
   copy) and the README say one rank under ddp is plain training, no DDP wrapper. One rank is
   plain training on every road now; the overhead's fit (PyTorch's DDP benchmark, a wrapped
   model from one GPU up) and its constant are unchanged.
2. `memory --fragmentation 0.1` counted 0.1 x (state + activations) in `fragmentation` and hid
   the buffers' share inside the buckets' and gathered units' rows; the docs say the allowance
   is of everything the allocator holds, buffers included.
3. `cm.allreduce_time(14e9, 64, 50e9)` searched the spelling tables (`tables.spelled_as`) five
   times a call for names that were canonical already.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import costmodel as cm
from costmodel import presets
from costmodel.strategy import strategy_step
from costmodel.strategy.layout import Layout
from costmodel.strategy.memory import strategy_memory
from tests._cli import run

ROOT = Path(__file__).resolve().parent.parent
ONE_GPU = dict(cluster="dgx-h100", nodes=1, gpus_per_node=1)


# --- 1. one GPU under ddp is plain training ------------------------------------------------------
@pytest.mark.parametrize("strategy", ["zero1", "zero2", "fsdp"])
def test_on_one_gpu_ddp_takes_the_step_of_every_other_strategy(strategy):
    kw = dict(arch="gpt2-1.5b", sequence_length=1024, band=False, timeline=False, **ONE_GPU)
    ddp = strategy_step(strategy="ddp", **kw)
    other = strategy_step(strategy=strategy, **kw)
    assert ddp.host_overhead_s == 0.0
    assert ddp.step_time_s == pytest.approx(other.step_time_s, rel=1e-9)
    assert ddp.efficiency == 1.0


def test_step_strategy_all_on_one_gpu_ties_every_strategy():
    out = run(
        "step", "--arch", "gpt2-1.5b", "--cluster", "dgx-h100", "--gpus-per-node", "1",
        "--seq", "1024", "--strategy", "all",
    )  # fmt: skip
    assert out.exit_code == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("1=")]
    assert len(rows) == 5 and any(" ddp " in r for r in rows), out.stdout
    assert "beyond" not in out.stdout and "+37%" not in out.stdout


def test_one_gpu_ddp_prints_no_host_overhead_on_the_cli_and_scenario():
    args = ("step", "--params", "7B", "--cluster", "dgx-h100", "--gpus-per-node", "1",
            "--strategy", "ddp")  # fmt: skip
    d = json.loads(run(*args, "--json").stdout)
    assert d["host_overhead_s"] == 0.0
    assert "DDP host overhead" not in run(*args).stdout
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=1, gpus_per_node=1)
    res = r.evaluate(scaling=False, flips=False)
    assert res.host_overhead_s == 0.0
    s = strategy_step(arch="llama-2-7b", band=False, **ONE_GPU)
    assert res.step_time_s == pytest.approx(s.step_time_s, rel=1e-9)


def test_two_gpus_keep_the_overhead_and_the_one_gpu_reference_is_plain_training():
    """From two ranks up the step pays DDP's hooks and bucket copies; its one-GPU reference is
    the step the engine prices on one GPU, plain training with no wrapper, for every strategy."""
    from costmodel.compute import ddp_step_overhead_s

    a = cm.load_arch("llama-3.1-8b")
    kw = dict(arch="llama-3.1-8b", compute_time_s=0.3, band=False, timeline=False)
    one = strategy_step(cluster=presets.cluster("dgx-h100", nodes=1, gpus_per_node=1), **kw)
    two = strategy_step(cluster=presets.cluster("dgx-h100", nodes=1, gpus_per_node=2), **kw)
    assert one.host_overhead_s == 0.0
    assert two.host_overhead_s == pytest.approx(ddp_step_overhead_s(len(a.tensor_sizes)))
    assert two.one_gpu_step_s == pytest.approx(one.step_time_s, rel=1e-12)
    fsdp = strategy_step(cluster="dgx-h100", nodes=1, gpus_per_node=2, strategy="fsdp", **kw)
    assert fsdp.one_gpu_step_s == pytest.approx(two.one_gpu_step_s, rel=1e-12)


def test_the_fitted_ddp_overhead_and_its_benchmark_rows_are_unchanged():
    """The fit prices PyTorch's DDP benchmark (a DDP-wrapped model, one GPU included) with the
    lesson's ddp_step, which keeps a given overhead at world size 1: refitting gives the shipped
    constant, and the one-GPU rows still carry it."""
    import importlib.util

    from costmodel.ddp import ddp_step

    doc = tomllib.loads((ROOT / "costmodel/data/fitted_ddp_overhead.toml").read_text())
    assert doc["form"] == "per-tensor" and doc["overhead_s"] == 3.485580799219452e-05
    spec = importlib.util.spec_from_file_location("fit", ROOT / "scripts/fit_ddp_overhead.py")
    assert spec is not None and spec.loader is not None
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    assert fit.evaluate()["per-tensor"]["k"] == pytest.approx(doc["overhead_s"], rel=1e-12)
    wrapped = ddp_step(7e9, 1, compute_time_s=0.4, bandwidth_bytes_per_s=50e9,
                       step_overhead_s=0.01)  # fmt: skip
    assert wrapped.step_time_s == pytest.approx(0.41) and wrapped.host_overhead_s == 0.01


# --- 2. the fragmentation allowance covers the buffers -------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "part"),
    [("zero1", "buckets_bytes"), ("ddp", "buckets_bytes"), ("fsdp", "gathered_units_bytes")],
)
def test_fragmentation_is_of_everything_the_allocator_holds(strategy, part):
    m = strategy_memory(Layout(strategy=strategy, ranks=8), arch="llama-2-7b",
                        cuda_context_bytes=2**30, fragmentation=0.1)  # fmt: skip
    plain = strategy_memory(Layout(strategy=strategy, ranks=8), arch="llama-2-7b")
    parts = m.parts()
    assert parts[part] == plain.parts()[part] > 0  # as allocated, no allowance inside
    held = sum(
        v for k, v in parts.items() if k not in ("cuda_context_bytes", "fragmentation_bytes")
    )
    assert parts["fragmentation_bytes"] == pytest.approx(0.1 * held, rel=1e-12)
    assert sum(parts.values()) == pytest.approx(m.total_bytes, rel=1e-12)
    assert m.total_bytes == pytest.approx(2**30 + 1.1 * plain.total_bytes, rel=1e-12)


def test_memory_json_counts_the_buckets_in_the_fragmentation():
    d = json.loads(
        run(
            "memory", "--arch", "llama-2-7b", "--zero", "1", "--ranks", "8", "--cluster",
            "dgx-h100", "--cuda-context", "1GiB", "--fragmentation", "0.1", "--json",
        ).stdout
    )  # fmt: skip
    p = d["memory_parts_bytes"]
    assert p["buckets_bytes"] == 2e9  # DeepSpeed's two ipg buffers, as allocated
    held = sum(p[k] for k in ("weights_bytes", "gradients_bytes", "master_bytes",
                              "optimizer_bytes", "activations_bytes", "buckets_bytes"))  # fmt: skip
    assert p["fragmentation_bytes"] == pytest.approx(0.1 * held, rel=1e-12)
    assert d["fragmentation_GB"] == pytest.approx(p["fragmentation_bytes"] / 1e9, rel=1e-12)
    assert d["buffers_GB"] == 2.0
    assert d["memory_bytes"] == pytest.approx(sum(p.values()), rel=1e-12)


@pytest.mark.parametrize("given", [{"params": "7B"}, {"arch": "llama-2-7b"}])
@pytest.mark.parametrize("stage", ["0", "1", "3"])
def test_the_memory_sweep_counts_the_buffers_fragmentation_as_memory_does(given, stage):
    df = cm.sweep(kind="memory", preset="dgx-h100", zero_stage=stage, ranks="8",
                  fragmentation="0.1", **given)  # fmt: skip
    row = df.iloc[0]
    flags = ["--params", "7B"] if "params" in given else ["--arch", "llama-2-7b"]
    cli = json.loads(
        run(
            "memory",
            *flags,
            "--zero-stage",
            stage,
            "--ranks",
            "8",
            "--cluster",
            "dgx-h100",
            "--fragmentation",
            "0.1",
            "--json",
        ).stdout  # fmt: skip
    )
    for col in ("fragmentation_GB", "buffers_GB", "memory_GB", "lesson_memory_GB"):
        assert row[col] == pytest.approx(cli[col], rel=1e-12), col
    assert row["buffers_GB"] > 0


# --- 3. the scalar all-reduce does not search the spelling tables -------------------------------
def test_canonical_names_skip_the_spelling_search(monkeypatch):
    from costmodel import tables

    calls = []
    real = tables.spelled_as

    def counted(name, names):
        calls.append(name)
        return real(name, names)

    monkeypatch.setattr(tables, "spelled_as", counted)
    assert cm.allreduce_time(14e9, 64, 50e9) == pytest.approx(0.551, abs=1e-3)
    assert cm.collective_time("all_gather", 1e9, 4, 100e9, algorithm="ring") == 0.0075
    assert calls == []
    # other spellings are still read, and refusals still said, on every call
    assert cm.collective_time("All-Gather", 1e9, 4, 100e9, algorithm="Ring") == 0.0075
    assert calls
    for _ in range(2):
        with pytest.raises(ValueError, match="algorithm: 'hierarchical' is not a textbook"):
            cm.collective_time("broadcast", 1e9, 4, 100e9, algorithm="hierarchical")
        with pytest.raises(ValueError, match="op: unknown collective"):
            cm.collective_time("allreduce2", 1e9, 4, 100e9)
