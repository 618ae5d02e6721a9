"""Planner inputs: a step sweep's time and cost to train, tokens-first batches in train and
scenario, and HSDP in ``costmodel memory``; each answer is checked against the surface that
already gave it (train, batch, step), so one question keeps one number."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import costmodel as cm
from costmodel import batch
from costmodel.training import load_price, prices_for_gpu

from ._cli import one_line_error, run

ARCH = "llama-3.1-8b"


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- sweep: days, GPU-hours and dollars per row ------------------------------------------------
@pytest.fixture(scope="module")
def priced() -> object:
    """H100, B200 and A100 rows of one step sweep, priced with an H100 and a B200 preset."""
    return cm.sweep(
        kind="step",
        preset="dgx-h100,dgx-b200,dgx-a100",
        arch=ARCH,
        strategy="zero1",
        nodes="2,4",
        tokens="1T",
        price="aws-p5-on-demand,lambda-b200-on-demand",
    )


def test_sweep_row_costs_what_train_costs(priced):
    row = priced[(priced.preset == "dgx-h100") & (priced.nodes == 4)].iloc[0]
    t = _json(
        "train", "--arch", ARCH, "--tokens", "1T", "--nodes", "4", "--strategy", "zero1",
        "--price", "aws-p5-on-demand",
    )  # fmt: skip
    assert row["steps"] == t["steps"]
    for col in ("wall_days", "gpu_hours", "usd_per_gpu_hour", "cost_usd"):
        assert row[col] == pytest.approx(t[col], rel=1e-12), col
    assert [row["wall_days_lo"], row["wall_days_hi"]] == pytest.approx(t["wall_days_band"])
    assert row["price"] == "aws-p5-on-demand" and row["price_date"] == t["price_date"]
    # the arithmetic the columns claim: GPU-hours = days x 24 x GPUs, dollars = GPU-hours x price
    assert row["gpu_hours"] == pytest.approx(row["wall_days"] * 24 * row["ranks"])
    assert row["cost_usd"] == pytest.approx(
        row["gpu_hours"] * load_price("aws-p5-on-demand").usd_per_gpu_hour
    )
    assert row["steps"] == math.ceil(1e12 / row["tokens_per_step"])


def test_each_row_takes_the_price_of_its_own_gpu(priced):
    b200 = priced[priced.preset == "dgx-b200"]
    assert set(b200.price) == {"lambda-b200-on-demand"}
    assert set(b200.price_date) == {load_price("lambda-b200-on-demand").date}
    assert (b200.cost_usd > 0).all()
    # no preset given for the A100: days and GPU-hours, no dollars, and why, never another rate
    a100 = priced[priced.preset == "dgx-a100"]
    assert (a100.wall_days > 0).all() and (a100.gpu_hours > 0).all()
    assert a100.cost_usd.isna().all() and a100.usd_per_gpu_hour.isna().all()
    assert set(a100.price) == {""} and set(a100.price_date) == {""}
    note = a100.cost_note.iloc[0]
    # the API's rows name the field (`usd_per_gpu_hour`), not the CLI's option
    assert "never priced at another GPU's rate" in note and "`usd_per_gpu_hour`" in note
    assert prices_for_gpu("a100-sxm-80gb")[0] in note  # the presets that would match


def test_sweep_without_a_price_asks_for_one_and_a_typed_price_prices_every_row():
    bare = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, tokens="1T")
    assert bare.cost_usd.isna().all() and (bare.gpu_hours > 0).all()
    assert "`usd_per_gpu_hour`" in bare.cost_note.iloc[0]
    typed = cm.sweep(kind="step", preset="dgx-h100,dgx-b200", arch=ARCH, tokens="1T", usd=3.0)
    assert np.allclose(typed.cost_usd, typed.gpu_hours * 3.0)
    assert set(typed.price) == {""} and set(typed.price_date) == {""}
    plain = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH)  # no budget: no cost columns
    assert not {"wall_days", "cost_usd", "cost_note"} & set(plain.columns)


def test_a_row_that_does_not_fit_says_its_cost_cannot_run():
    df = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="ddp", tokens="1T")
    assert not df.fits.iloc[0]
    assert "does not fit" in df.cost_note.iloc[0]


def test_cli_sweep_writes_the_cost_columns(tmp_path):
    out = tmp_path / "plan.csv"
    r = run(
        "sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}",
        "--set", "strategy=zero1", "--set", "nodes=2,4", "--tokens", "1T", "--price",
        "aws-p5-on-demand", "-o", str(out), "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    df = cm.sweep.read_table(out)
    api = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="zero1", nodes="2,4",
                   tokens="1T", price="aws-p5-on-demand")  # fmt: skip
    assert np.allclose(df.cost_usd, api.cost_usd) and list(df.price_date) == list(api.price_date)


def test_grid_file_takes_the_budget(tmp_path):
    f = tmp_path / "g.toml"
    f.write_text(
        'kind = "step"\n[grid]\npreset = "dgx-h100"\narch = "llama-3.1-8b"\n'
        'strategy = "zero1"\ntokens = "1T"\nprice = "aws-p5-on-demand"\n'
    )
    df = cm.sweep(str(f))
    assert len(df) == 1 and df.cost_usd.iloc[0] > 0


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--set", "size=8B", "--set", "ranks=8", "--set", "bandwidth=50GB/s", "--tokens", "1T"],
         ["--tokens", "--kind step"]),
        (["--kind", "step", "--set", "preset=dgx-a100", "--set", f"arch={ARCH}", "--tokens", "1T",
          "--price", "aws-p5-on-demand"], ["--price", "h100-sxm", "a100-sxm-80gb", "--usd-per-gpu-hour"]),
        (["--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}", "--tokens", "1T",
          "--price", "aws-p5-on-demand,aws-p5-capacity-block"], ["--price", "one per GPU"]),
        (["--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}", "--price",
          "aws-p5-on-demand"], ["--price", "--tokens"]),
        (["--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}", "--tokens", "1T",
          "--set", "tokens=2T"], ["--tokens", "given twice"]),
        (["--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}", "--tokens", "1T",
          "--price", "aws-p5-on-demand", "--usd-per-gpu-hour", "2"],
         ["--usd-per-gpu-hour", "--price", "not both"]),
        (["--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}",
          "--set", "tokens=1T,2T"], ["--set tokens", "one value"]),
    ],
)  # fmt: skip
def test_cli_sweep_refuses_a_budget_it_cannot_price(args, fragments):
    one_line_error(run("sweep", *args), *fragments)


# --- train and scenario: the batch tokens first ----------------------------------------------
def test_global_tokens_split_as_costmodel_batch_splits_them():
    # 4 x 2^20 tokens at 4096 on 64 nodes of 8 GPUs: batch's answer, accumulation 2
    b = _json("batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096")
    t = _json("train", "--arch", ARCH, "--tokens", "1T", "--nodes", "64", "--zero", "1",
              "--global-tokens", "4Mi", "--seq", "4096")  # fmt: skip
    assert (t["micro_batch"], t["accumulation"]) == (b["local_batch"], b["accumulation"]) == (1, 2)
    assert t["global_tokens"] == t["tokens_per_step"] == b["global_tokens"] == 4 * 2**20
    assert t["global_batch"] == b["global_batch"] == 1024
    same = _json("train", "--arch", ARCH, "--tokens", "1T", "--nodes", "64", "--zero", "1",
                 "--accumulation", "2", "--seq", "4096")  # fmt: skip
    assert t["wall_days"] == same["wall_days"] and t["steps"] == same["steps"]
    text = run("train", "--arch", ARCH, "--tokens", "1T", "--nodes", "64", "--zero", "1",
               "--global-tokens", "4Mi").stdout  # fmt: skip
    assert "4.19 M tokens per step = 1,024 sequences x 4,096 tokens" in text
    assert "accumulation 2 x 512 GPUs" in text


def test_global_tokens_solve_the_micro_batch_when_the_accumulation_is_given():
    s = _json("scenario", "--arch", ARCH, "--nodes", "16", "--zero", "1", "--global-tokens",
              "4Mi", "--accumulation", "4")  # fmt: skip
    sol = batch.solve_batch(
        ranks=128, accumulation=4, global_tokens=4 * 2**20, sequence_length=4096
    )
    assert s["scenario"]["local_batch"] == sol.local_batch == 2
    assert s["tokens_per_step"] == 4 * 2**20


def test_tokens_per_gpu_is_the_micro_batch_times_the_sequence():
    a = _json("scenario", "--arch", ARCH, "--nodes", "2", "--tokens-per-gpu", "8Ki")
    b = _json("scenario", "--arch", ARCH, "--nodes", "2", "--micro-batch", "2")
    assert a["scenario"]["local_batch"] == 2 and a["step_time_s"] == b["step_time_s"]
    both = _json("train", "--arch", ARCH, "--tokens", "1T", "--nodes", "2", "--tokens-per-gpu",
                 "8Ki", "--global-tokens", "256Ki", "--zero", "1")  # fmt: skip
    assert (both["micro_batch"], both["accumulation"]) == (2, 2)  # 64 sequences / (2 x 16)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--global-tokens", "4Mi", "--micro-batch", "2", "--accumulation", "2"],
         ["--global-tokens", "--micro-batch", "--accumulation", "at most two"]),
        (["--global-tokens", "4Mi", "--tokens-per-gpu", "8Ki", "--accumulation", "2"],
         ["--global-tokens", "--tokens-per-gpu", "--accumulation"]),
        (["--tokens-per-gpu", "8Ki", "--micro-batch", "2"], ["--micro-batch", "--tokens-per-gpu"]),
        (["--tokens-per-gpu", "8000"], ["--tokens-per-gpu", "--seq"]),
        (["--global-tokens", "4000000"], ["--global-tokens", "4,194,304 tokens"]),
        (["--nodes", "6", "--global-tokens", "4Mi"],
         ["--global-tokens", "48 GPUs", "accumulation=21"]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["train", "scenario"])
def test_conflicting_batch_options_are_refused_in_one_line(command, args, fragments):
    extra = ["--tokens", "1T"] if command == "train" else []
    one_line_error(run(command, "--arch", ARCH, *extra, *args), *fragments)


# --- memory: HSDP as the step lays it out ----------------------------------------------------
def test_memory_hsdp_is_the_steps_and_the_advisors_number():
    mem = _json("memory", "--arch", ARCH, "--strategy", "hsdp", "--group-size", "8", "--ranks",
                "32", "--cluster", "dgx-h100")  # fmt: skip
    step = _json("step", "--arch", ARCH, "--strategy", "hsdp", "--group-size", "8", "--nodes",
                 "4", "--cluster", "dgx-h100")  # fmt: skip
    assert mem["memory_bytes"] == step["memory_bytes"]
    assert (mem["strategy"], mem["layout"], mem["group_size"], mem["zero_stage"]) == (
        "hsdp", "hsdp g=8", 8, 3,
    )  # fmt: skip
    adv = _json("step", "--arch", ARCH, "--strategy", "all", "--nodes", "4", "--cluster",
                "dgx-h100")  # fmt: skip
    rows = [r for r in adv["strategies"] if r["layout"] == "hsdp g=8"]
    assert rows and rows[0]["memory_bytes"] == mem["memory_bytes"]
    # without --group-size the group is one node of the preset, as the step's default
    default = _json("memory", "--arch", ARCH, "--strategy", "hsdp", "--ranks", "32", "--cluster",
                    "dgx-h100")  # fmt: skip
    assert default["memory_bytes"] == mem["memory_bytes"]


def test_memory_hsdp_shards_the_state_over_its_group_not_the_ranks():
    # ZeRO-3 inside a group of g: mixed-precision Adam's 16 B per parameter over g GPUs
    # (Rajbhandari et al. 2020, figure 1), whatever the replicas
    for ranks in ("16", "64"):
        d = _json("memory", "--params", "7B", "--strategy", "hsdp", "--group-size", "8",
                  "--ranks", ranks, "--gpu-memory", "80GB")  # fmt: skip
        assert d["model_state_bytes"] == pytest.approx(16 * 7e9 / 8)
        assert d["min_ranks"] is None and "larger --group-size" in d["min_ranks_note"]
    fsdp = _json("memory", "--params", "7B", "--strategy", "fsdp", "--ranks", "64")
    assert fsdp["model_state_bytes"] == pytest.approx(16 * 7e9 / 64)
    assert fsdp["memory_bytes"] == _json("memory", "--params", "7B", "--zero", "3", "--ranks",
                                         "64")["memory_bytes"]  # fmt: skip


def test_memory_no_reshard_is_the_steps():
    mem = _json("memory", "--arch", ARCH, "--strategy", "fsdp", "--no-reshard", "--ranks", "16",
                "--cluster", "dgx-h100")  # fmt: skip
    step = _json("step", "--arch", ARCH, "--strategy", "fsdp", "--no-reshard", "--nodes", "2",
                 "--cluster", "dgx-h100")  # fmt: skip
    assert mem["memory_bytes"] == step["memory_bytes"]
    assert mem["layout"] == "fsdp (no reshard)"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--strategy", "hsdp", "--ranks", "64"], ["--group-size", "--cluster"]),
        (["--strategy", "hsdp", "--group-size", "3", "--ranks", "64"],
         ["--group-size", "does not divide", "1, 2, 4, 8, 16, 32, 64"]),
        (["--strategy", "zero1", "--group-size", "8", "--ranks", "64"], ["--group-size", "hsdp"]),
        (["--strategy", "zero2", "--no-reshard", "--ranks", "64"], ["--reshard", "fsdp"]),
        (["--zero", "1", "--strategy", "hsdp", "--group-size", "8", "--ranks", "64"],
         ["--zero 1", "--strategy hsdp"]),
        (["--strategy", "all"], ["--strategy", "step --strategy all"]),
        (["--strategy", "tp"], ["--strategy", "hsdp"]),
    ],
)  # fmt: skip
def test_memory_strategy_refusals_name_the_flags(args, fragments):
    one_line_error(run("memory", "--params", "7B", *args), *fragments)
