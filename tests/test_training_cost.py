"""Time and cost to train (costmodel.training), Scenario with an architecture, and the CLI
surfaces (memory --arch, train, archs, step --arch)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, ddp
from costmodel.architecture import load_arch
from costmodel.scenario import Scenario
from costmodel.training import load_price, price_names, training_cost


def run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def run_json(*args: str):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    return json.loads(r.stdout)


# --- training_cost --------------------------------------------------------------------------
def test_tokens_to_days_gpu_hours_and_dollars():
    # 1e12 tokens at 1M tokens/step = 1e6 steps of 1 s on 100 GPUs: 1e6 s = 11.57 days,
    # 1e8 GPU-seconds = 27,778 GPU-hours, at $2 = $55,556
    c = training_cost(1e12, tokens_per_step=1e6, step_time_s=1.0, ranks=100, usd_per_gpu_hour=2)
    assert c.steps == 1_000_000
    assert c.wall_days == pytest.approx(1e6 / 86400)
    assert c.gpu_hours == pytest.approx(1e8 / 3600)
    assert c.cost_usd == pytest.approx(2 * 1e8 / 3600)
    assert c.mfu is None and c.step_time_source == "predicted"


def test_partial_step_rounds_up_and_steps_input():
    c = training_cost(1.5e6, tokens_per_step=1e6, step_time_s=2.0, ranks=1)
    assert c.steps == 2 and c.wall_s == 4.0 and c.cost_usd is None
    c = training_cost(steps=10, tokens_per_step=4e6, step_time_s=1.0, ranks=8)
    assert c.tokens == 4e7


def test_implied_mfu_from_a_measured_step():
    # PaLM appendix B: MFU = observed tokens/s x FLOPs per token / (N x peak)
    c = training_cost(
        steps=1,
        tokens_per_step=2**20,
        step_time_s=10.0,
        ranks=64,
        flops_per_token=46e9,
        peak_flops=989.5e12,
        measured=True,
    )
    assert c.mfu == pytest.approx(2**20 / 10.0 * 46e9 / (64 * 989.5e12))
    assert c.step_time_source == "measured"


def test_price_presets_are_cited_and_dated():
    assert {"aws-p5-on-demand", "aws-p4d-on-demand"} <= set(price_names())
    for name in price_names():
        p = load_price(name)
        assert p.source.startswith("http") or "http" in p.source
        assert len(p.date) == 10 and p.date[4] == "-"
        assert 0.5 < p.usd_per_gpu_hour < 50
    assert load_price("aws-p5-on-demand").usd_per_gpu_hour == pytest.approx(55.04 / 8)
    c = training_cost(
        steps=1, tokens_per_step=1, step_time_s=3600, ranks=8, price="aws-p5-on-demand"
    )
    assert c.cost_usd == pytest.approx(55.04) and "2026-11-09" in c.price_note
    assert c.price_date == "2026-11-09"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(tokens=None), "tokens, steps"),
        (dict(tokens=1e9, steps=3), "tokens, steps"),
        (dict(tokens=-1.0), "tokens"),
        (dict(tokens=1e9, step_time_s=float("nan")), "step_time_s"),
        (dict(tokens=1e9, ranks=0), "ranks"),
        (dict(tokens=1e9, steps=None, price="nope"), "price"),
        (dict(tokens=1e9, price="aws-p5-on-demand", usd_per_gpu_hour=1.0), "usd_per_gpu_hour"),
        (dict(tokens=None, steps=2.5), "steps"),
        (dict(tokens=1e308, tokens_per_step=1.0), "tokens: .* over 1e15 steps"),
        (dict(tokens=1e9, tokens_per_step=0.5), "tokens_per_step: must be a whole number"),
        (dict(tokens=None, steps=float("inf")), "steps"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    base = dict(tokens_per_step=1e6, step_time_s=1.0, ranks=8)
    kwargs = dict(kwargs)
    tokens = kwargs.pop("tokens", None)
    with pytest.raises(ValueError, match=field):
        training_cost(tokens, **{**base, **kwargs})


# --- Scenario with an architecture ------------------------------------------------------------
def test_scenario_arch_uses_real_tensors_activations_and_flops():
    s = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, mfu=0.4)  # a given MFU
    r = s.evaluate(scaling=False, flips=False)
    a = load_arch("llama-2-7b")
    assert s.params == a.params
    # the timeline's kinds are the collective ops (all_reduce, all_gather, reduce_scatter)
    assert len(r.timeline) and sum(1 for i in r.timeline if i["kind"] == "all_reduce") == 226
    act = a.activation_bytes(4096, 1)
    assert r.memory_parts_bytes["activations_bytes"] == pytest.approx(act)
    assert r.fits == (r.memory_total_bytes <= r.gpu_memory_bytes)
    # compute from the shape's FLOPs per token (6N + attention), not 6P
    peak = float(s._validated_cluster().peak_flops)
    assert r.compute_s == pytest.approx(4096 * a.training_flops_per_token(4096) / (peak * 0.4))
    bare = Scenario(params=a.params, cluster="dgx-h100", nodes=8).evaluate(scaling=False)
    assert bare.memory_parts_bytes["activations_bytes"] == 0.0
    assert any("not included" in n for n in bare.notes)


def test_scenario_arch_and_different_params_is_an_error():
    with pytest.raises(ValueError, match="params"):
        Scenario(arch="llama-2-7b", params="13B")
    with pytest.raises(ValueError, match="closest"):
        Scenario(arch="llama-2-7")


def test_scenario_training_cost_predicted_mfu_is_the_input_times_the_compute_share():
    r = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, mfu=0.4).evaluate(scaling=False)
    c = r.training_cost(2e12, price="aws-p5-on-demand")
    assert c.mfu == pytest.approx(0.4 * r.compute_share, rel=1e-9)  # not the scaling efficiency
    assert c.steps == -(-2_000_000_000_000 // r.tokens_per_step)
    m = r.training_cost(2e12, usd_per_gpu_hour=2.0, measured_step_time_s=2 * r.step_time_s)
    assert m.mfu == pytest.approx(c.mfu / 2) and m.wall_s == pytest.approx(2 * c.wall_s)


def test_api_surfaces_take_an_architecture():
    m = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64)
    assert m.activations_bytes > 0 and "llama-3.1-70b" in m.activations_note
    assert cm.training_memory(arch="llama-3.1-70b", zero_stage=3, dp_ranks=64) == m
    full = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64, recompute="full")
    assert full.total_bytes < m.total_bytes
    assert cm.training_memory(7e9).activations_bytes == 0.0
    s = cm.ddp_step("llama-2-7b", 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    equal = cm.ddp_step(
        load_arch("llama-2-7b").params, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9
    )
    assert (s.buckets, equal.buckets) == (226, 402)  # 226 real vs 402 equal pieces
    assert equal.comm_s > s.comm_s
    with pytest.raises(ValueError, match="layer_param_counts"):
        ddp.ddp_step(
            "llama-2-7b", 8, compute_time_s=1, bandwidth_bytes_per_s=1e9, layer_param_counts=[1.0]
        )


# --- CLI ------------------------------------------------------------------------------------
def test_cli_memory_issue_command_prints_activations_and_verdict():
    r = run(
        "memory", "--model", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64", "--seq", "4096",
        "--cluster", "dgx-h100",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "activations" in r.stdout and "FlashAttention" in r.stdout
    # the H100 at its device-true 81559 MiB = 85.5 GB (was 80 GB)
    assert "fits" in r.stdout and "85.5 GB" in r.stdout
    h100 = ("--gpu-memory", "85.5GB")
    d = run_json("memory", "--arch", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64", *h100)
    act = load_arch("llama-3.1-70b").activation_bytes(4096, 1)
    assert d["memory_parts_bytes"]["activations_bytes"] == pytest.approx(act)
    assert d["fits"] == (d["memory_bytes"] <= d["gpu_memory_bytes"])
    assert d["fits"] is False and d["fits_with_recompute"] == "full"
    d = run_json(
        "memory",
        "--arch",
        "llama-3.1-70b",
        "--zero-stage",
        "3",
        "--ranks",
        "64",
        "--recompute",
        "full",
        *h100,
    )
    assert d["fits"] is True


def test_cli_memory_bad_arch_is_one_line():
    r = run("memory", "--arch", "llama-9")
    assert r.exit_code == 2 and "arch" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_train():
    d = run_json(
        "train", "--arch", "llama-2-7b", "--tokens", "2T", "--nodes", "8", "--usd-per-gpu-hour", "2"
    )
    assert d["ranks"] == 64 and d["cost_usd"] == pytest.approx(d["gpu_hours"] * 2)
    assert d["wall_days"] == pytest.approx(d["steps"] * d["step_time_s"] / 86400)
    d2 = run_json(
        "train", "--arch", "llama-2-7b", "--tokens", "2T", "--nodes", "8", "--step-time", "1s"
    )
    assert d2["step_time_source"] == "measured" and d2["step_time_s"] == 1.0
    text = run(
        "train",
        "--arch",
        "llama-2-7b",
        "--tokens",
        "2T",
        "--nodes",
        "8",
        "--price",
        "aws-p5-on-demand",
    ).stdout
    assert "days" in text and "GPU-hours" in text and "$" in text and "2026-11-09" in text
    r = run("train", "--arch", "llama-2-7b", "--nodes", "8")
    assert r.exit_code == 2 and "--tokens" in r.stderr


def test_cli_archs_and_step_arch():
    text = run("archs").stdout
    assert "deepseek-v3" in text and "active" in text and "aws-p5-on-demand" in text
    d = run_json(
        "step",
        "--arch",
        "llama-2-7b",
        "--compute-time",
        "400ms",
        "--ranks",
        "64",
        "--bandwidth",
        "50GB/s",
    )
    assert d["buckets"] == 226


def test_a_price_note_says_whether_the_user_gave_the_price():
    """A typed price is the user's; an interface's untouched placeholder (the step page's $2
    box) is said to be one, not "given by the user"; a preset carries its date."""
    kw = dict(steps=10, tokens_per_step=1e6, step_time_s=1.0, ranks=8, usd_per_gpu_hour=2.0)
    user = training_cost(**kw)
    assert "$2.00 per GPU-hour, given by the user" in user.price_note and user.price_date is None
    placeholder = training_cost(**kw, usd_source="default")
    assert "placeholder default" in placeholder.price_note
    assert "per GPU-hour, given by the user" not in placeholder.price_note
    assert placeholder.cost_usd == user.cost_usd  # the wording changes, not the figures
    with pytest.raises(ValueError, match=r"^usd_source: must be 'user' or 'default'"):
        training_cost(**kw, usd_source="typed")
