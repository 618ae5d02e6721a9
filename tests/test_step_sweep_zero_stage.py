"""The step sweep takes ``zero_stage`` as every command takes ``--zero`` and the memory sweep
takes it (it was refused as no axis of a step sweep): its stage's strategy (0 ddp, 1 zero1,
2 zero2, 3 fsdp), the same rows and numbers as naming the strategy, and as ``costmodel step
--zero``; a stage that contradicts a given strategy is refused in the memory sweep's words."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import costmodel as cm
from tests._cli import one_line_error, run

STEP = dict(kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=2)


@pytest.mark.parametrize(
    ("stages", "strategies"),
    [("0", ["ddp"]), ("1", ["zero1"]), ("2", ["zero2"]), ("3", ["fsdp"]), ("0,3", ["ddp", "fsdp"])],
)
def test_a_stage_is_its_strategy(stages, strategies):
    by_stage = cm.sweep(zero_stage=stages, **STEP)
    by_name = cm.sweep(strategy=",".join(strategies), **STEP)
    assert by_stage["strategy"].tolist() == strategies
    pd.testing.assert_frame_equal(by_stage, by_name)


def test_the_sweep_cli_and_step_give_one_number(tmp_path):
    out = tmp_path / "z.csv"
    done = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set",
               "arch=llama-3.1-8b", "--set", "zero=3", "--set", "nodes=2", "-o", str(out))  # fmt: skip
    assert done.exit_code == 0, done.stderr
    row = pd.read_csv(out).iloc[0]
    step = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2",
               "--zero", "3", "--json")  # fmt: skip
    assert step.exit_code == 0, step.stderr
    said = json.loads(step.stdout)
    assert row["strategy"] == said["strategy"] == "fsdp"
    assert row["step_time_s"] == pytest.approx(said["step_time_s"], rel=1e-12)


def test_a_stage_that_agrees_with_the_strategies_keeps_them():
    got = cm.sweep(zero_stage=3, strategy="fsdp,hsdp", **STEP)
    assert got["strategy"].tolist() == ["fsdp", "hsdp"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"zero_stage": 3, "strategy": "ddp"}, "zero_stage: 3 contradicts strategy ddp (ZeRO-0)"),
        ({"zero_stage": 5}, "zero_stage: must be a ZeRO stage in 0..3 (0 ddp"),
        ({"zero_stage": 3, "strategy": "all"}, "zero_stage: strategy=all already prices"),
    ],
)
def test_bad_stages_are_refused_in_one_line(extra, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")) as exc:
        cm.sweep(**STEP, **extra)
    assert "\n" not in str(exc.value)
    cli = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set",
              "arch=llama-3.1-8b", "--set", "nodes=2",
              *[a for k, v in extra.items() for a in ("--set", f"{k}={v}")])  # fmt: skip
    one_line_error(cli, said.split(" (")[0])


@pytest.mark.parametrize("value", ["0", "2e9"])
def test_scenario_group_size_has_the_one_range(value):
    """`scenario --vs group_size=0` said "[1, inf)" where `step --group-size 0` says
    1..1,000,000,000: Scenario now refuses it in the same limit's words, through --vs too."""
    want = "group_size: must be a whole number in 1..1,000,000,000 (a divisor of the ranks)"
    with pytest.raises(ValueError, match=r"1\.\.1,000,000,000 \(a divisor") as exc:
        cm.Scenario(params="7B", cluster="dgx-h100", nodes=2, strategy="hsdp", group_size=value)
    assert str(exc.value).startswith(want)
    cli = run("scenario", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "2",
              "--strategy", "hsdp", "--vs", f"group_size={value}")  # fmt: skip
    assert "inf)" not in one_line_error(cli, "--vs group_size: must be a whole number in 1..")
