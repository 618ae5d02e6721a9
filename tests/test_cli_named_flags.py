"""A refusal names what the user typed: the option on the command line, the field in the API.

`costmodel step --strategy hsdp --group-size 3` said "group_size: 3 does not divide ..." (the
library's field), and `cm.Scenario(cluster='nope')` said "name: unknown cluster preset" (the
preset loader's argument). Each refusal below is one a user can trigger; each must start with
the option they typed (``--group-size``; ``--set KEY`` in a sweep, ``--vs KEY`` for the
compared configuration), and no refusal may lead with a snake_case field.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli

A8 = ("--arch", "llama-3.1-8b")
LINK = ("--params", "7B", "--ranks", "8", "--bandwidth", "50GB/s")
STEP = ("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b")

# (command line, what the one line must start with after "costmodel: error: ")
REFUSALS: list[tuple[tuple[str, ...], str]] = [
    # step on a cluster: the library's refusals (strategy_step, presets, the GPU's power range)
    (("step", *A8, "--nodes", "2", "--strategy", "hsdp", "--group-size", "3"), "--group-size:"),
    (("step", *A8, "--strategy", "hsdp", "--group-size", "16"), "--group-size:"),
    (("step", *A8, "--strategy", "ddp", "--group-size", "2"), "--group-size:"),
    (("step", *A8, "--strategy", "ddp", "--no-reshard"), "--reshard:"),
    (("step", *A8, "--power-limit-w", "50"), "--power-limit-w:"),
    (("step", *A8, "--power-limit-w", "5000"), "--power-limit-w:"),
    (("step", *A8, "--cluster", "dgx-b200", "--power-limit-w", "500"), "--power-limit-w:"),
    (
        ("step", *A8, "--strategy", "all", "--cluster", "dgx-b200", "--power-limit-w", "500"),
        "--power-limit-w:",
    ),  # fmt: skip
    (("step", *A8, "--cluster", "nope"), "--cluster:"),
    (("step", *A8, "--cluster", "DGX-H100"), "--cluster:"),
    (("step", "--arch", "nope"), "--arch:"),
    (("step", "--params", "7B", *A8), "--params:"),
    (("step", *A8, "--recipe", "nope"), "--recipe:"),
    (("step", *A8, "--recompute", "nope"), "--recompute:"),
    (("step", *A8, "--param-dtype", "nope"), "--param-dtype:"),
    (("step", *A8, "--grad-dtype", "nope"), "--grad-dtype:"),
    (("step", *A8, "--model", "nope"), "--model:"),
    (("step", *A8, "--bucket", "0"), "--bucket:"),
    (("step", *A8, "--mfu", "0"), "--mfu:"),
    (("step", *A8, "--recipe", "fp8-mixed", "--cluster", "dgx-a100"), "--recipe:"),
    (("step", *A8, "--param-dtype", "fp8", "--cluster", "dgx-a100"), "--param-dtype:"),
    (("step", *A8, "--gpus-per-node", "16"), "--gpus-per-node:"),
    # the one-link step
    (("step", *LINK, "--compute-time", "1s", "--gradient-bytes", "0"), "--gradient-bytes:"),
    (("step", *LINK, "--tokens-per-gpu", "4k", "--peak-flops", "0"), "--peak-flops:"),
    # scenario and train (Scenario's fields; the price and the measured step after it)
    (
        ("scenario", *A8, "--nodes", "2", "--strategy", "hsdp", "--group-size", "3"),
        "--group-size:",
    ),  # fmt: skip
    (("scenario", *A8, "--cluster", "dgx-b200", "--power-limit-w", "500"), "--power-limit-w:"),
    (("scenario", *A8, "--cluster", "nope"), "--cluster:"),
    (("scenario", *A8, "--bucket", "abc"), "--bucket: must be a bucket size"),  # its range
    (("scenario", *A8, "--tokens", "1T", "--price", "nope"), "--price:"),
    (("scenario", *A8, "--vs", "strategy=hsdp,group_size=3"), "--vs group_size:"),
    (("scenario", *A8, "--vs", "cluster=nope"), "--vs cluster:"),
    (("scenario", *A8, "--vs", "micro_batch=0"), "--vs micro_batch:"),
    (("scenario", *A8, "--vs", "foo=1"), "--vs:"),
    (("train", "--steps", "10", *A8, "--strategy", "hsdp", "--group-size", "3"), "--group-size:"),
    (("train", "--steps", "10", *A8, "--price", "lambda-b200-on-demand"), "--price:"),
    (
        ("train", "--steps", "10", *A8, "--usd-per-gpu-hour", "2", "--price", "aws-p5-on-demand"),
        "--usd-per-gpu-hour, --price:",
    ),  # fmt: skip
    (("train", "--tokens", "2T", *A8, "--nodes", "8", "--step-time", "1ms"), "--step-time:"),
    # memory
    (("memory", "--arch", "nope"), "--arch:"),
    (("memory", "--params", "7B", "--recipe", "nope"), "--recipe:"),
    (("memory", "--params", "7B", "--cluster", "nope"), "--cluster:"),
    (("memory", "--params", "7B", "--recipe", "fp8-mixed", "--cluster", "dgx-a100"), "--recipe:"),
    (("memory", *A8, "--params", "7B"), "--params:"),
    # sweep: the axis as typed in --set
    ((*STEP, "--set", "power=900"), "--set power:"),
    (
        (
            "sweep",
            "--kind",
            "step",
            "--set",
            "preset=dgx-b200",
            "--set",
            "arch=llama-3.1-8b",
            "--set",
            "power_limit_w=500",
        ),
        "--set power_limit_w:",
    ),  # fmt: skip
    (
        (*STEP, "--set", "strategy=hsdp", "--set", "group_size=3", "--set", "nodes=2"),
        "--set group_size:",
    ),  # fmt: skip
    (
        ("sweep", "--kind", "step", "--set", "cluster=nope", "--set", "arch=llama-3.1-8b"),
        "--set cluster:",
    ),  # fmt: skip
    (("sweep", "--set", "preset=nope", "--set", "size=1MB"), "--set preset:"),
    ((*STEP, "--set", "mfu=2"), "--set mfu:"),
    ((*STEP, "--set", "contention=2"), "--set contention:"),
    ((*STEP, "--set", "bucket=0"), "--set bucket:"),
    ((*STEP, "--set", "recipe=nope"), "--set recipe:"),
    ((*STEP, "--set", "foo=1"), "--set foo:"),
    (
        ("sweep", "--kind", "memory", "--set", "arch=llama-3.1-8b", "--set", "zero_stage=5"),
        "--set zero_stage:",
    ),  # fmt: skip
    (
        ("sweep", "--kind", "memory", "--set", "arch=llama-3.1-8b", "--set", "seq=0"),
        "--set seq:",
    ),  # fmt: skip
    (("sweep", "--kind", "nope", "--set", "size=1MB"), "--kind:"),
]

# a refusal's label: "group_size:" or "usd_per_gpu_hour, price:" at the start or after "; "
_FIELD_LABEL = re.compile(r"(?:^|; )[a-z][a-z0-9]*_[a-z0-9_]*(?:, [a-z0-9_]+)*[:=]")


@pytest.mark.parametrize(("args", "starts"), REFUSALS, ids=[" ".join(a) for a, _ in REFUSALS])
def test_every_refusal_names_the_option_typed(args, starts):
    out = CliRunner().invoke(cli.app, list(args))
    assert out.exit_code == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("costmodel: error: "), out.stderr
    msg = lines[0].removeprefix("costmodel: error: ")
    assert msg.startswith(starts), msg
    assert not _FIELD_LABEL.search(msg), msg
    assert not re.match(r"^(name|preset|gpu|cluster|arch|recipe|mfu|model|price)[:=]", msg), msg


def test_the_vs_side_is_named_by_vs_not_by_a_s_option():
    """B's refusal is not A's: `--vs group_size=3` named --group-size, which A never had."""
    out = CliRunner().invoke(cli.app, ["scenario", *A8, "--vs", "strategy=hsdp,group_size=3"])
    assert "--group-size" not in out.stderr and "--vs group_size: 3 does not divide" in out.stderr


# --- the API: a preset name's refusal names the argument or field it was given in -------------
@pytest.mark.parametrize(
    ("call", "starts"),
    [
        (lambda: cm.Scenario(arch="llama-2-7b", cluster="nope"), "cluster: unknown cluster"),
        (lambda: cm.Scenario(arch="llama-2-7b", cluster="DGX-H100"), "cluster: unknown cluster"),
        (lambda: cm.Scenario(arch="llama-2-7b", cluster="no/such.toml"), "cluster: no/such.toml"),
        (lambda: cm.Scenario(params=7e9).with_changes("cluster=nope"), "cluster: unknown"),
        (lambda: cm.Scenario(arch="nope"), "arch: unknown architecture"),
        (lambda: cm.Scenario(params=7e9, recipe="nope"), "recipe"),
        (lambda: cm.strategy_step(7e9, cluster="nope"), "cluster: unknown cluster"),
        (lambda: cm.advise_strategy(7e9, cluster="nope"), "cluster: unknown cluster"),
        (lambda: cm.fit_suggestions(7e9, cluster="nope"), "cluster: unknown cluster"),
        (lambda: cm.predict_collective("all_reduce", 1e6, "nope"), "cluster: unknown cluster"),
        (lambda: cm.sweep(kind="step", preset="nope", arch="llama-2-7b"), "preset: unknown"),
        (lambda: cm.sweep(kind="memory", preset="nope", arch="llama-2-7b"), "preset: unknown"),
        (lambda: cm.sweep(preset="nope", size=1e6), "preset: unknown cluster"),
    ],
)
def test_an_unknown_preset_names_the_field_it_was_given_in(call, starts):
    with pytest.raises(ValueError) as err:
        call()
    text = str(err.value)
    if "validation error" in text:  # pydantic's frame: the message is its second line
        text = text.splitlines()[1].strip().removeprefix("Value error, ")
    assert text.startswith(starts), text
    assert "name:" not in text


def test_a_price_preset_names_price():
    r = cm.Scenario(arch="llama-2-7b").evaluate(scaling=False, flips=False)
    with pytest.raises(ValueError, match=r"^price: unknown price preset 'nope'"):
        r.training_cost(1e12, price="nope")


def test_the_preset_loader_itself_still_names_its_argument():
    with pytest.raises(ValueError, match=r"^name: unknown cluster preset 'nope'"):
        cm.cluster("nope")
