"""One memory question, one answer: ``costmodel memory`` at ZeRO stage s on N ranks, the step
that prices the same layout (``strategy_step``), the Memory page and the memory sweep give one
total per GPU and one fits verdict (the layout: 0 ddp, 1 zero1, 2 zero2, 3 fsdp)."""

from __future__ import annotations

import importlib
import json

import pytest
from typer.testing import CliRunner

from costmodel import cli, presets
from costmodel.strategy import strategy_step
from costmodel.strategy.layout import STRATEGY_OF_STAGE
from costmodel.strategy.memory import stage_max_params, stage_memory, stage_min_ranks
from costmodel.sweep.evaluate import join_notes
from costmodel.units import format_bytes
from tests.test_app import assert_clean, metrics, open_page

sweep_mod = importlib.import_module("costmodel.sweep")


def _cli(*args: str) -> dict:
    r = CliRunner().invoke(cli.app, ["memory", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize(
    ("zero", "recompute"), [(3, "none"), (3, "full"), (0, "full"), (1, "full"), (2, "full")]
)
def test_memory_cli_and_the_step_give_one_total_and_one_verdict(zero, recompute):
    d = _cli(
        "--arch", "llama-3.1-70b", "--zero-stage", str(zero), "--ranks", "64",
        "--recompute", recompute, "--cluster", "dgx-h100",
    )  # fmt: skip
    step = strategy_step(
        arch="llama-3.1-70b",
        cluster="dgx-h100",
        nodes=8,
        strategy=STRATEGY_OF_STAGE[zero],
        recompute=recompute,
        timeline=False,
    )
    assert d["strategy"] == STRATEGY_OF_STAGE[zero]
    assert d["memory_bytes"] == pytest.approx(step.memory.total_bytes, rel=1e-12)
    assert d["gpu_memory_bytes"] == step.gpu_memory_bytes
    assert d["fits"] is step.fits
    # the buffers are rows of their own, beside the lesson's state + activations
    extra = (
        d["memory_parts_bytes"]["buckets_bytes"] + d["memory_parts_bytes"]["gathered_units_bytes"]
    )
    assert extra > 0
    assert d["memory_bytes"] == pytest.approx(d["lesson_memory_bytes"] + extra, rel=1e-12)


def test_70b_zero3_on_64_ranks_has_one_memory_answer():
    # 70B, ZeRO-3 on 64 ranks: `memory` said 129 GB while `step --strategy fsdp` said 136 GB
    # (one fp32 logits copy then; the plain-PyTorch loss's 12 B per logit now: 133 and 140)
    d = _cli("--arch", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64")
    assert round(d["lesson_memory_bytes"] / 1e9) == 133
    assert round(d["memory_bytes"] / 1e9) == 140
    assert d["memory_parts_bytes"]["gathered_units_bytes"] > 5e9


@pytest.mark.parametrize("zero", [3, 1])
def test_memory_page_gives_the_cli_total_and_verdict(zero):
    card = f"{presets.load('h100-sxm', 'gpu').memory_bytes}B"  # the page's default GPU
    d = _cli("--arch", "llama-3.1-70b", "--zero-stage", str(zero), "--ranks", "64",
             "--gpu-memory", card)  # fmt: skip
    at = open_page("page_memory.py", {"arch": "llama-3.1-70b", "dp_ranks": "64"})
    at.radio(key="zero_stage").set_value(zero).run()
    assert_clean(at)
    shown = metrics(at)
    assert shown[f"Memory per GPU, ZeRO-{zero}"] == format_bytes(d["memory_bytes"])
    assert shown["Fits?"] == ("yes" if d["fits"] else "no")
    assert any(format_bytes(d["lesson_memory_bytes"]) in c.value for c in at.caption)


def test_memory_sweep_rows_are_the_cli_totals():
    df = sweep_mod.sweep(
        kind="memory", params="7B,30B", zero_stage="0,1,2,3", ranks="1,16", preset="dgx-h100"
    )
    for r in df.itertuples():
        d = _cli(
            "--params", f"{r.params:g}", "--zero-stage", str(r.zero_stage),
            "--ranks", str(r.ranks), "--cluster", "dgx-h100",
        )  # fmt: skip
        assert r.memory_GB * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)
        assert r.lesson_memory_GB * 1e9 == pytest.approx(d["lesson_memory_bytes"], rel=1e-12)
        assert bool(r.fits) is d["fits"]


def test_largest_model_and_fewest_ranks_are_bounds_of_the_same_total():
    cap = 80e9
    for zero, ranks in [(0, 8), (1, 8), (2, 8), (3, 16)]:
        p = stage_max_params(cap, zero, ranks)
        assert stage_memory(zero, ranks, p).total_bytes <= cap
        assert stage_memory(zero, ranks, p * 1.001).total_bytes > cap
    for zero, p in [(1, 7e9), (2, 7e9), (3, 30e9)]:
        n = stage_min_ranks(p, cap, zero)
        assert n > 1
        assert stage_memory(zero, n, p).total_bytes <= cap
        assert stage_memory(zero, n - 1, p).total_bytes > cap
    for zero in (0, 1):  # the replicated part alone is over the card: no rank count helps
        with pytest.raises(ValueError, match=f"ZeRO-{zero}") as refused:
            stage_min_ranks(30e9, cap, zero)
        assert "even at 1,000,000,000 ranks (the ranks limit)" in str(refused.value)  # separated


def test_one_rank_keeps_the_lesson_numbers():
    # one rank under ddp is plain training: 7B under mixed-precision Adam needs 112 GB
    # (16 B/param), the lesson's one GPU (the default is one node of 8: one rank asked for);
    # fsdp on one rank holds FSDP2's copy of one unit beside it
    d = _cli("--params", "7B", "--gpu-memory", "80GB", "--ranks", "1")
    assert d["memory_bytes"] == d["lesson_memory_bytes"] == pytest.approx(112e9, rel=1e-12)
    assert d["max_params"] == pytest.approx(5e9, rel=1e-9)
    fsdp = stage_memory(3, 1, 7e9)  # FSDP2 copies one unit at a time on one rank
    assert float(fsdp.base.total_bytes) == pytest.approx(112e9, rel=1e-12)
    assert 0 < fsdp.gathered_bytes < stage_memory(3, 8, 7e9).gathered_bytes


def test_the_loss_is_one_input_with_one_answer_on_every_surface():
    # a fused (or compiled) loss keeps 4 B per logit, plain fp32 cross-entropy 12: the same
    # question (Llama 3.1 8B, fsdp on 8 H100s, 8192 tokens x 2, op-level checkpointing) gets
    # one memory from the CLI's memory and step, the Scenario, the step sweep and the page
    from costmodel.scenario import Scenario

    q = dict(arch="llama-3.1-8b", sequence_length=8192, micro_batch=2, recompute="selective-op")
    totals = {}
    for loss in ("fp32", "fused"):
        d = _cli(
            "--arch", "llama-3.1-8b", "--zero-stage", "3", "--ranks", "8", "--seq", "8192",
            "--micro-batch", "2", "--recompute", "selective-op", "--loss", loss,
        )  # fmt: skip
        step = strategy_step(cluster="dgx-h100", nodes=1, strategy="fsdp", loss=loss, **q)
        sc = Scenario(
            arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp",
            sequence_length=8192, local_batch=2, recompute="selective-op", loss=loss,
        ).evaluate(scaling=False, flips=False, timeline=False)  # fmt: skip
        row = sweep_mod.sweep(
            kind="step", preset="dgx-h100", arch="llama-3.1-8b", strategy="fsdp", nodes=1,
            sequence_length=8192, micro_batch=2, recompute="selective-op", loss=loss,
        ).iloc[0]  # fmt: skip
        assert d["memory_bytes"] == pytest.approx(step.memory.total_bytes, rel=1e-12)
        assert sc.memory_total_bytes == pytest.approx(d["memory_bytes"], rel=1e-12)
        assert row["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-9)
        assert row["loss"] == loss
        totals[loss] = d["memory_bytes"]
    # 8 B per logit of 2 x 8192 x 128256 apart (the recomputed layer is below both peaks)
    assert totals["fp32"] - totals["fused"] == pytest.approx(8 * 2 * 8192 * 128256, rel=1e-9)
    at = open_page("page_memory.py", {"arch": "llama-3.1-8b", "dp_ranks": "8"})
    at.radio(key="zero_stage").set_value(3).run()
    at.number_input(key="act_seq").set_value(8192).run()
    at.number_input(key="micro").set_value(2).run()
    at.selectbox(key="loss").set_value("fused").run()
    assert_clean(at)
    d = _cli(
        "--arch", "llama-3.1-8b", "--zero-stage", "3", "--ranks", "8", "--seq", "8192",
        "--micro-batch", "2", "--loss", "fused",
    )  # fmt: skip
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(d["memory_bytes"])
    bad = CliRunner().invoke(cli.app, ["memory", "--arch", "llama-3.1-8b", "--loss", "chunked"])
    assert bad.exit_code == 2 and "--loss: must be fp32, fp32-held, fused" in bad.output


# --- the memory sweep over named architectures ---------------------------------------------------
_ARCH_ROWS = dict(
    kind="memory",
    preset="dgx-h100",
    arch="llama-3.1-8b,llama-3.1-70b,deepseek-v3",
    zero_stage="0,3",
    ranks="1,64",
    recompute="none,full",
)


def test_memory_sweep_over_architectures_is_memory_arch_row_by_row():
    """``arch`` (spelled as the step sweep spells it) sweeps ``costmodel memory --arch``: each
    row is that command's answer (total, lesson's total, each part, parameters, fits on the
    preset's GPU, its notes) for the same architecture, stage, ranks, recompute and loss."""
    df = sweep_mod.sweep(**_ARCH_ROWS)
    assert len(df) == 3 * 2 * 2 * 2
    assert {"arch", "sequence_length", "micro_batch", "recompute", "loss"} <= set(df.columns)
    for r in df.to_dict(orient="records"):
        d = _cli(
            "--arch", str(r["arch"]), "--zero-stage", str(r["zero_stage"]),
            "--ranks", str(r["ranks"]), "--recompute", str(r["recompute"]),
            "--cluster", "dgx-h100",
        )  # fmt: skip
        assert r["params"] == d["params"]
        assert r["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)
        assert r["lesson_memory_GB"] * 1e9 == pytest.approx(d["lesson_memory_bytes"], rel=1e-12)
        parts = d["memory_parts_bytes"]
        for part in ("weights", "gradients", "master", "optimizer", "activations"):
            assert r[f"{part}_GB"] * 1e9 == pytest.approx(parts[f"{part}_bytes"], rel=1e-12)
        buffers = parts["buckets_bytes"] + parts["gathered_units_bytes"]
        assert r["buffers_GB"] * 1e9 == pytest.approx(buffers, rel=1e-12)
        assert r["gpu_memory_GB"] * 1e9 == d["gpu_memory_bytes"]
        assert bool(r["fits"]) is d["fits"]
        assert str(r["notes"]) == join_notes(d["notes"])
    moe = df[df["arch"] == "deepseek-v3"]["notes"].astype(str)
    assert moe.str.contains("expert").all()  # the MoE note of costmodel memory, on its rows


def test_memory_sweep_over_architectures_takes_the_activation_inputs():
    """sequence_length, micro_batch, loss and flash_attention are the CLI's --seq,
    --micro-batch, --loss and --flash/--no-flash; from
    the CLI (``sweep --kind memory --set arch=...``) and a TOML grid alike."""
    rows = sweep_mod.sweep(
        kind="memory", arch="llama-3.1-8b", zero_stage=3, ranks=8,
        sequence_length="4096,8192", micro_batch="1,2", loss="fp32,fused", flash="true,false",
    )  # fmt: skip
    assert len(rows) == 16
    for r in rows.to_dict(orient="records"):
        d = _cli(
            "--arch", "llama-3.1-8b", "--zero-stage", "3", "--ranks", "8",
            "--seq", str(r["sequence_length"]), "--micro-batch", str(r["micro_batch"]),
            "--loss", str(r["loss"]), "--flash" if r["flash_attention"] else "--no-flash",
        )  # fmt: skip
        assert r["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)
        assert "fits" not in r  # no preset: no GPU to check against (as a count's rows)
    res = CliRunner().invoke(
        cli.app,
        ["sweep", "--kind", "memory", "--set", "arch=llama-3.1-70b", "--set", "zero=3",
         "--set", "ranks=64", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    d = _cli("--arch", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64")
    assert row["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({"arch": "llama-3.1-8b", "params": "7B"}, "params (a count"),
        ({"ranks": "8"}, "arch=NAME"),
        ({"arch": "gpt-9"}, "arch: unknown"),
        ({"params": "7B", "sequence_length": "8192"}, "sequence_length: sizes activations"),
        ({"params": "7B", "loss": "fused"}, "loss: sizes activations"),
        ({"params": "7B", "flash": "false"}, "flash_attention: sizes activations"),
        ({"arch": "llama-3.1-8b", "flash": "no"}, "flash_attention"),
        ({"arch": "llama-3.1-8b", "recompute": "some"}, "recompute: unknown 'some'"),
        ({"arch": "llama-3.1-8b", "loss": "chunked"}, "loss: unknown 'chunked'"),
        ({"arch": "llama-3.1-8b", "micro_batch": "0"}, "micro_batch"),
        ({"params": "7B", "recipe": "fp8-mixed", "preset": "dgx-a100"}, "fp8 tensor cores"),
        ({"arch": "llama-3.1-8b", "activations": "1GB", "sequence_length": "8192"}, "give one"),
        ({"params": "7B", "activations": "-1GB"}, "activations"),
    ],
)
def test_memory_sweep_refuses_what_memory_refuses(axes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        sweep_mod.make_grid(axes, kind="memory")


def test_a_memory_sweep_of_counts_keeps_its_columns():
    """A bare count's rows are as before: no architecture columns."""
    df = sweep_mod.sweep(kind="memory", params="7B", ranks="1,8")
    archs = {"arch", "sequence_length", "micro_batch", "recompute", "loss", "flash_attention"}
    assert not archs & set(df.columns)
    assert df["ranks"].tolist() == [1, 8]


@pytest.mark.parametrize(
    "what", [("--params", "7B"), ("--arch", "llama-3.1-8b")], ids=["params", "arch"]
)
def test_memory_sweep_takes_given_activations_as_memory_does(what):
    """``activations`` is ``costmodel memory --activations``: activation memory per GPU given
    in bytes, for a bare count (which has none of its own) or in place of an architecture's."""
    key = what[0].removeprefix("--")
    df = sweep_mod.sweep(
        kind="memory", activations="0,10GB", zero_stage="0,1", ranks="1,8",
        preset="dgx-h100", **{key: what[1]},
    )  # fmt: skip
    assert len(df) == 8
    for r in df.to_dict(orient="records"):
        d = _cli(
            *what, "--activations", f"{r['activations_GB']:g}GB",
            "--zero-stage", str(r["zero_stage"]), "--ranks", str(r["ranks"]),
            "--cluster", "dgx-h100",
        )  # fmt: skip
        assert r["activations_GB"] * 1e9 == d["memory_parts_bytes"]["activations_bytes"]
        assert r["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)
        assert r["lesson_memory_GB"] * 1e9 == pytest.approx(d["lesson_memory_bytes"], rel=1e-12)
        assert bool(r["fits"]) is d["fits"]
        assert str(r["notes"]).startswith(d["notes"][0])
