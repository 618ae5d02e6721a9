"""The sixty-fourth QA pass (the compute's inputs through the CLI, the API and the sweep):

- a power limit beside a measured compute time was refused by the CLI alone: the API's
  ``strategy_step`` and ``Scenario`` and the step sweep priced the same step whatever the limit,
  without a word; now one rule (``speed_beside_measured``) on every surface;
- under full recomputation the GPU also runs the recomputed forward, yet the physical bounds
  counted the model's FLOPs alone: ``--compute-time`` faster than the peak for the executed
  FLOPs, and ``--mfu`` whose hardware utilisation is above 1, were priced; now refused;
- ``scenario --help`` said ``--compute-time ... (overrides --mfu)`` where the two are refused
  together.
"""

from __future__ import annotations

import re

import pytest

import costmodel as cm
from costmodel.scenario import ScenarioError
from costmodel.strategy import strategy_step
from costmodel.strategy.compute import recompute_extra
from costmodel.strategy.step import strategy_steps
from tests._cli import one_line_error, run

STEP = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, strategy="fsdp")
POWER = "power_limit_w: not with compute_time_s"


# --- a power limit beside a measured compute time -------------------------------------------


def test_the_api_refuses_a_power_limit_beside_a_measured_compute_time():
    with pytest.raises(ValueError, match=POWER):
        strategy_step(**STEP, power_limit_w=500, compute_time_s=0.35)
    with pytest.raises(ValueError, match=POWER):
        strategy_steps([{**STEP, "nodes": n, "power_limit_w": 500, "compute_time_s": 0.35}
                        for n in (1, 2)])  # fmt: skip
    # each alone is answered, and the limit moves the predicted compute
    measured = strategy_step(**STEP, compute_time_s=0.35)
    assert measured.compute_s == pytest.approx(0.35)
    assert strategy_step(**STEP, power_limit_w=300).compute_s > strategy_step(**STEP).compute_s


def test_scenario_refuses_a_power_limit_beside_a_measured_compute_time():
    with pytest.raises(ScenarioError, match=POWER):
        cm.Scenario(arch="llama-3.1-8b", nodes=8, power_limit_w=300, compute_time_s=0.35)
    cm.Scenario(arch="llama-3.1-8b", nodes=8, power_limit_w=300)
    cm.Scenario(arch="llama-3.1-8b", nodes=8, compute_time_s=0.35)


def test_the_step_sweep_refuses_a_power_limit_beside_a_measured_compute_time():
    axes = dict(preset="dgx-h100", arch="llama-3.1-8b", nodes=8, strategy="fsdp")
    with pytest.raises(ValueError, match="power_limit_w: not with compute_time "):
        cm.sweep(kind="step", **axes, power_limit_w=[300, 700], compute_time=0.35)
    line = one_line_error(
        run(
            "sweep",
            "--kind",
            "step",
            "--set",
            "preset=dgx-h100",
            "--set",
            "arch=llama-3.1-8b",
            "--set",
            "nodes=8",
            "--set",
            "strategy=fsdp",
            "--set",
            "power_limit_w=300,700",
            "--set",
            "compute_time=350ms",
            "--no-progress",
        ),  # fmt: skip
        "power_limit_w: not with compute_time",
        "sweep them separately",
    )
    assert "compute_time_s" not in line  # the sweep's own axis names


def test_one_message_on_every_surface():
    """The CLI's, the API's and the sweep's refusals are one function's, in each one's words."""
    from costmodel.strategy.compute import speed_beside_measured

    cli = one_line_error(
        run(
            "step",
            "--arch",
            "llama-3.1-8b",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "8",
            "--strategy",
            "fsdp",
            "--power-limit-w",
            "500",
            "--compute-time",
            "350ms",
        ),  # fmt: skip
    )
    assert cli.endswith(speed_beside_measured("--power-limit-w", "--compute-time"))
    with pytest.raises(ValueError) as api:
        strategy_step(**STEP, power_limit_w=500, compute_time_s=0.35)
    assert str(api.value) == speed_beside_measured()


# --- full recomputation and the GPU's peak ----------------------------------------------------

#: the recomputation named in a refusal: `recompute` full in the library's words (a field in
#: backquotes), --recompute full in the CLI's
RECOMPUTE = r"(`|--)recompute`? full"
R70 = dict(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp")


def _hw_peak_s(**kw) -> float:
    """The least compute of one micro-batch: the executed FLOPs (the model's x (1 + r)) at the
    dense bf16 peak (the napkin: 1.84e15 x 4/3 / 989.5e12 = 2.48 s for 70B at 4096 tokens)."""
    a = cm.load_arch(kw["arch"])
    flops = a.training_flops_per_token(4096) * 4096
    return flops * (1 + recompute_extra("full", a, 4096)) / 989.5e12


def test_the_napkin():
    assert _hw_peak_s(**R70) == pytest.approx(2.48, rel=0.01)


def test_a_measured_compute_faster_than_the_peak_of_the_executed_flops_is_refused():
    with pytest.raises(ValueError, match=r"compute_time_s: a measured compute time of 1\.9 s"):
        strategy_step(**R70, recompute="full", compute_time_s=1.9)
    # within the model FLOPs' peak (1.86 s) but not the executed FLOPs' (2.48 s): refused too
    with pytest.raises(ValueError, match=RECOMPUTE) as e:
        strategy_step(**R70, recompute="full", compute_time_s=2.2)
    assert "2.48 s" in str(e.value)
    # without recomputation 2.2 s is a legal measurement, and at the bound it is answered
    assert strategy_step(**R70, compute_time_s=2.2).compute_s == pytest.approx(2.2)
    at = strategy_step(**R70, recompute="full", compute_time_s=2.49)
    assert at.compute_s == pytest.approx(2.49)


def test_a_given_mfu_whose_hardware_utilisation_is_above_one_is_refused():
    r = recompute_extra("full", cm.load_arch("llama-3.1-70b"), 4096)
    bound = 1 / (1 + r)
    for mfu in (1.0, 0.95, bound * 1.01):
        with pytest.raises(ValueError, match=r"^mfu: .*" + RECOMPUTE) as e:
            strategy_step(**R70, recompute="full", mfu=mfu)
        assert f"{bound:.3g}" in str(e.value)
    # at the bound the compute is the executed FLOPs' peak time; below it, answered as before
    edge = strategy_step(**R70, recompute="full", mfu=bound)
    assert edge.compute_s == pytest.approx(_hw_peak_s(**R70), rel=1e-6)
    assert strategy_step(**R70, recompute="full", mfu=0.5).compute_s == pytest.approx(
        strategy_step(**R70, mfu=0.5).compute_s
    )  # PaLM's MFU: the same compute under any recompute
    assert strategy_step(**R70, mfu=1.0).compute_s > 0  # no recomputation: MFU 1 is legal


@pytest.mark.parametrize(
    "extra, match",
    [
        (("--compute-time", "1.9s"), "--compute-time"),
        (("--mfu", "0.95"), "--mfu"),
    ],
)
def test_the_cli_refuses_them_in_its_words(extra, match):
    for command in (("step", "--cluster", "dgx-h100"), ("scenario",), ("train", "--tokens", "1T")):
        line = one_line_error(
            run(
                *command,
                "--arch",
                "llama-3.1-70b",
                "--nodes",
                "8",
                "--strategy",
                "fsdp",
                "--recompute",
                "full",
                *extra,
            ),  # fmt: skip
            match,
            "recompute full",
        )
        assert "Traceback" not in line


def test_the_sweep_refuses_them_per_row():
    axes = dict(preset="dgx-h100", arch="llama-3.1-70b", nodes=8, strategy="fsdp")
    df = cm.sweep(kind="step", **axes, recompute=["none", "full"], mfu=[0.95])
    by = dict(zip(df["recompute"], df["error"].fillna(""), strict=True))
    assert by["none"] == ""
    assert re.search(r"mfu: .*" + RECOMPUTE, by["full"]), by["full"]
    df = cm.sweep(kind="step", **axes, recompute=["none", "full"], compute_time=2.2)
    by = dict(zip(df["recompute"], df["error"].fillna(""), strict=True))
    assert by["none"] == "" and re.search(RECOMPUTE, by["full"]), by


def test_scenario_refuses_them():
    kw = dict(arch="llama-3.1-70b", nodes=8, strategy="fsdp", recompute="full")
    for extra in ({"mfu": 0.95}, {"compute_time_s": 1.9}):
        with pytest.raises(ValueError, match=RECOMPUTE):
            cm.Scenario(**kw, **extra).evaluate(scaling=False, flips=False)


# --- help texts -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["scenario", "train", "step"])
def test_the_help_does_not_say_the_compute_time_overrides_the_mfu(command):
    out = run(command, "--help")
    assert out.exit_code == 0
    text = " ".join(out.stdout.split())
    assert "overrides --mfu" not in text
