"""A GPU's board power limit (``power_limit_w``): validated on the GPU, one road from the API,
``Scenario`` and the CLI to the fitted compute, and the published torchtitan H100 rows predicted
at the 500 W their pages state."""

from __future__ import annotations

import json
import math
import tomllib
from importlib import resources

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, presets
from costmodel.compute import compute_fit, gpu_power_w, micro_batch_compute_s
from costmodel.hardware import GPU

# one node, a step that fits (FSDP, micro-batch 1 at 4096 tokens): the fitted compute road
Q = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp")
CLI_Q = ["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "1", "--strategy", "fsdp"]


def _alpha() -> float:
    text = (resources.files("costmodel.data") / "fitted_compute.toml").read_text("utf-8")
    return float(tomllib.loads(text)["alpha"])


H100_RANGE = r"power_limit_w: must be a power in \[200, 700\] W"


@pytest.mark.parametrize("bad", [0, 1, 199.9, -1.0, 700.5, 1e4, math.nan, math.inf, True, "500"])
def test_a_bad_power_limit_names_the_field_and_the_range(bad):
    h100 = presets.load("h100-sxm")
    with pytest.raises(ValueError, match=H100_RANGE):
        h100.with_power_limit_w(bad)
    with pytest.raises(ValueError, match=H100_RANGE):
        presets.cluster("dgx-h100", power_limit_w=bad)


@pytest.mark.parametrize(
    ("gpu", "low", "top"),
    [("a100-sxm-40gb", 100, 400), ("a100-sxm-80gb", 100, 400), ("h100-sxm", 200, 700),
     ("h200-sxm", 200, 700), ("gh200", 200, 700)],
)  # fmt: skip
def test_the_range_starts_at_each_gpu_s_minimum_power_limit(gpu, low, top):
    """A board refuses a limit below its driver's "Min Power Limit" (nvidia-smi -pl), so the
    model does too: 1 W gave an MFU of 0.01 with no word."""
    g = presets.load(gpu)
    assert g.with_power_limit_w(low).power_limit_w == low  # the minimum itself
    assert g.with_power_limit_w(top).power_limit_w == top
    for bad in (1, low - 0.5):
        with pytest.raises(
            ValueError, match=rf"power_limit_w: must be a power in \[{low}, {top}\] W"
        ):
            g.with_power_limit_w(bad)


def test_a_1_w_limit_is_refused_on_every_surface():
    msg = H100_RANGE + r".*got 1"
    with pytest.raises(ValueError, match=msg):
        cm.strategy_step(**Q, power_limit_w=1, timeline=False)
    with pytest.raises(ValidationError, match=msg):
        cm.Scenario(**Q, power_limit_w=1)
    with pytest.raises(ValueError, match=msg):
        presets.cluster("dgx-h100").with_power_limit_w(1)
    for cmd in (["step"], ["scenario"], ["train", "--steps", "10"]):
        out = CliRunner().invoke(cli.app, [*cmd, *CLI_Q, "--power-limit-w", "1"])
        assert out.exit_code == 2, (cmd, out.stdout, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "--power-limit-w: must be a power in [200, 700] W" in lines[0]


def test_the_range_is_each_gpu_s_datasheet_maximum():
    a100 = presets.load("a100-sxm-80gb")
    assert a100.with_power_limit_w(400).power_limit_w == 400.0  # the datasheet maximum itself
    with pytest.raises(ValueError, match=r"\[100, 400\] W"):
        a100.with_power_limit_w(401)
    # a preset (or a user's TOML) that sets the field is checked by the model itself
    data = {**presets.load("h100-sxm").model_dump(), "power_limit_w": 900.0}
    with pytest.raises(ValidationError, match=H100_RANGE):
        GPU.model_validate(data)
    # no power law for the family: refused as not modelled rather than silently unused
    with pytest.raises(ValueError, match="power_limit_w: power scaling is not modelled for b200"):
        presets.load("b200").with_power_limit_w(500)
    # None goes back to the datasheet power
    capped = presets.load("h100-sxm").with_power_limit_w(500)
    assert gpu_power_w(capped) == 500.0 and gpu_power_w(capped.with_power_limit_w(None)) == 700.0


def test_the_compute_fit_follows_the_power_law():
    h100 = presets.load("h100-sxm")
    law = (500.0 / 700.0) ** (-_alpha())
    assert law > 1.1  # a capped chip is slower: the test below can fail
    full, capped = compute_fit(h100), compute_fit(h100.with_power_limit_w(500))
    for k in ("u", "v", "w", "m"):
        assert getattr(capped, k) == pytest.approx(getattr(full, k) * law, rel=1e-12)
    t700 = micro_batch_compute_s("llama-3.1-8b", h100, 8192, 2)
    t500 = micro_batch_compute_s("llama-3.1-8b", h100.with_power_limit_w(500), 8192, 2)
    assert t500 / t700 == pytest.approx(law, rel=1e-12)


def test_one_power_limit_one_number_on_every_surface():
    default = cm.strategy_step(**Q, timeline=False)
    at_700 = cm.strategy_step(**Q, power_limit_w=700, timeline=False)
    assert at_700.step_time_s == default.step_time_s  # the default is the datasheet power
    api = cm.strategy_step(**Q, power_limit_w=500, timeline=False)
    assert api.compute_s > default.compute_s * 1.1
    assert "at a 500 W power limit" in api.compute_label
    sc = cm.Scenario(**Q, power_limit_w=500).evaluate(scaling=False, flips=False)
    assert sc.step_time_s == pytest.approx(api.step_time_s, rel=1e-9)
    sw = cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=1,
                  strategy="fsdp", power_limit_w=[500, 700])  # fmt: skip
    assert sw["power_limit_w"].tolist() == [500.0, 700.0]
    assert sw["step_time_s"].tolist() == pytest.approx(
        [api.step_time_s, default.step_time_s], rel=1e-9
    )
    runner = CliRunner()
    for cmd in (["step"], ["scenario"], ["train", "--steps", "10"]):
        out = runner.invoke(cli.app, [*cmd, *CLI_Q, "--power-limit-w", "500", "--json"])
        assert out.exit_code == 0, out.stderr + out.stdout
        assert json.loads(out.stdout)["step_time_s"] == pytest.approx(api.step_time_s, rel=1e-9)


@pytest.mark.parametrize(
    ("cmd", "value", "fragment"),
    [
        ("step", "900", r"--power-limit-w: must be a power in [200, 700] W"),
        ("scenario", "0", r"--power-limit-w: must be a power in [200, 700] W"),
        ("step", "abc", "--power-limit-w"),
    ],
)
def test_cli_bad_power_limit_exits_2_with_one_line(cmd, value, fragment):
    out = CliRunner().invoke(cli.app, [cmd, *CLI_Q, "--power-limit-w", value])
    assert out.exit_code == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("costmodel: error: ")
    assert fragment in lines[0] and "Traceback" not in out.stderr


def test_the_step_sweep_checks_each_preset_s_range_before_any_row():
    args = ["sweep", "--kind", "step", "--set", "preset=dgx-h100,dgx-a100"]
    out = CliRunner().invoke(cli.app, [*args, "--set", "arch=llama-3.1-8b", "--set", "power=500"])
    assert out.exit_code == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--set power: must be a power in [100, 400] W" in lines[0]


def test_cli_power_limit_needs_a_cluster():
    # no --compute-time: beside a measured compute a power limit is refused for that alone
    # (tests/test_qa_pass62.py)
    args = ["step", "--params", "7B", "--ranks", "8"]
    out = CliRunner().invoke(cli.app, [*args, "--bandwidth", "50GB/s", "--power-limit-w", "500"])
    assert out.exit_code == 2 and "--power-limit-w: needs --cluster" in out.stderr


def test_a_torchtitan_h100_row_is_predicted_at_500_w():
    """The fidelity report predicts torchtitan's Grand Teton H100s at the 500 W their pages
    state (steps_data.POWER_LIMIT_W), through strategy_step's power_limit_w as a user would."""
    from costmodel.step_fidelity import _Engine, _fitted_micro_s
    from costmodel.steps_data import POWER_LIMIT_W, pure_dp_rows

    assert POWER_LIMIT_W == {"h100-96gb": 500.0}
    df = pure_dp_rows()
    capped = df.power_limit_w.notna()  # each row carries the power its source states
    assert (df.gpu_type[capped] == "h100-96gb").all() and (df.power_limit_w[capped] == 500).all()
    assert capped.sum() == (df.gpu_type == "h100-96gb").sum() > 0
    r = df[(df.gpu_type == "h100-96gb") & (df.gpus == 8) & ~df["compile"]].iloc[0]
    assert r.precision == "bf16"
    at_700 = micro_batch_compute_s(
        r.model,
        presets.load("h100-sxm"),
        int(r.seq),
        int(r.micro_batch),
        recompute=str(r.activation_checkpointing),
    )
    assert _fitted_micro_s(r) / at_700 == pytest.approx((500 / 700) ** (-_alpha()), rel=1e-12)
    eng = _Engine(0.0)
    got = eng.user_step_s(r)
    kw, _ = eng._row_kwargs(r)
    assert kw["power_limit_w"] == 500.0 and kw["cluster"].gpu.power_limit_w == 500.0
    common = dict(
        arch=r.model,
        cluster="dgx-h100",
        nodes=1,
        strategy="fsdp",
        grad_dtype=kw["grad_dtype"],
        micro_batch=int(r.micro_batch),
        sequence_length=int(r.seq),
        accumulation=kw["accumulation"],
        recompute=str(r.activation_checkpointing),
        held_out="torchtitan/h100-96gb",
        timeline=False,
        band=False,
    )
    at_500 = cm.strategy_step(**common, power_limit_w=500)
    assert got == pytest.approx(at_500.step_time_s, rel=1e-12)
    assert got > cm.strategy_step(**common).step_time_s * 1.1


@pytest.mark.parametrize("value", ["900", "1"])
def test_the_step_page_shows_a_bad_power_limit_as_a_red_message(value):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update({"ddp_arch": "llama-3.1-8b", "ddp_nodes": "1", "ddp_power": value})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(e.value) for e in at.error).replace("\\", "")
    # the refusal names the page's box, not the API's field (the step page's label map)
    assert "GPU power limit [W]: must be a power in [200, 700] W" in shown, shown
    assert "power_limit_w" not in shown
    assert not at.metric  # no step shown for the refused input


# --- a GPU without a fitted power law: refused as not modelled, not as a missed range ---------
NOT_MODELLED = r"power scaling is not modelled for b200 \(blackwell\): the compute fit's power law"


@pytest.mark.parametrize("gpu", ["b200", "gb200", "rtx-pro-6000-blackwell", "l40s", "v100-sxm2"])
@pytest.mark.parametrize("watts", [200, 500, 700, 1000])
def test_a_gpu_without_a_power_law_says_power_scaling_is_not_modelled(gpu, watts):
    """Blackwell (and the other unfitted families) refuse every limit, inside any range the
    card takes, saying why: the message is not a range the value missed."""
    g = presets.load(gpu)
    with pytest.raises(ValueError) as err:
        g.with_power_limit_w(watts)
    text = str(err.value)
    assert text.startswith(f"power_limit_w: power scaling is not modelled for {gpu} ("), text
    assert "must be a power in" not in text and "leave it unset" in text


def test_b200_s_refusal_is_the_same_on_every_surface():
    kw = dict(arch="llama-3.1-8b", cluster="dgx-b200", nodes=1, strategy="fsdp")
    with pytest.raises(ValueError, match="^power_limit_w: " + NOT_MODELLED):
        presets.cluster("dgx-b200", power_limit_w=500)
    with pytest.raises(ValueError, match="^power_limit_w: " + NOT_MODELLED):
        cm.strategy_step(**kw, power_limit_w=500, timeline=False)
    with pytest.raises(ValidationError, match=NOT_MODELLED):
        cm.Scenario(**kw, power_limit_w=500)
    with pytest.raises(ValueError, match="^power_limit_w: " + NOT_MODELLED):
        cm.sweep(kind="step", preset="dgx-b200", arch="llama-3.1-8b", power_limit_w=500)
    assert cm.strategy_step(**kw, timeline=False).step_time_s > 0  # unset: answered
    b200 = ["--arch", "llama-3.1-8b", "--cluster", "dgx-b200", "--power-limit-w", "500"]
    sweep = ["sweep", "--kind", "step", "--set", "preset=dgx-b200", "--set", "arch=llama-3.1-8b",
             "--set", "power=500"]  # fmt: skip
    for args, option in (
        (["step", *b200], "--power-limit-w"),
        (["step", *b200, "--strategy", "all"], "--power-limit-w"),
        (["scenario", *b200], "--power-limit-w"),
        (["train", "--steps", "10", *b200], "--power-limit-w"),
        (sweep, "--set power"),
    ):
        out = CliRunner().invoke(cli.app, args)
        assert out.exit_code == 2, (args, out.stdout, out.stderr)
        (line,) = out.stderr.strip().splitlines()
        assert line.startswith(f"costmodel: error: {option}: power scaling is not modelled for "
                               "b200 (blackwell)"), line  # fmt: skip


def test_the_step_page_says_power_scaling_is_not_modelled_for_b200():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update(
        {
            "ddp_arch": "llama-3.1-8b",
            "ddp_nodes": "1",
            "ddp_cluster": "dgx-b200",
            "ddp_power": "500",
        }
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(e.value) for e in at.error).replace("\\", "")
    assert "GPU power limit [W]: power scaling is not modelled for b200" in shown, shown
    assert not at.metric
