"""The fitted compute's label names the MFU ``--mfu`` reproduces it with.

The fitted efficiency is a one-node *step* efficiency ("MFU 0.41 on one node"); the step engine
calibrates the compute so that its own one-node step, communication included, matches it, so the
compute alone runs at a higher MFU. A user who copies the first number into ``--mfu`` got a
compute 10 % slower than the fitted one; the label now names both, and the second is the one
that gives the same compute.
"""

from __future__ import annotations

import re

import pytest

import costmodel as cm
from costmodel.compute import precision_peak_flops
from costmodel.strategy import strategy_step

KW = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8, strategy="fsdp")


def _label_mfus(label: str) -> list[float]:
    return [float(x) for x in re.findall(r"MFU (\d\.\d\d)", label)]


@pytest.mark.parametrize("nodes", [1, 8])
def test_the_label_names_the_compute_mfu_and_it_reproduces_the_compute(nodes):
    kw = {**KW, "nodes": nodes}
    fitted = strategy_step(**kw)
    assert fitted.compute_source == "fitted"
    a = cm.load_arch("llama-3.1-8b")
    flops = float(a.training_flops_per_token(4096)) * 4096  # micro-batch 1, sequence 4096
    peak = precision_peak_flops(cm.presets.load("h100-sxm"), "bf16")
    m = flops / (fitted.compute_s * peak)  # the compute's own MFU (accumulation 1)
    step_mfu, compute_mfu = _label_mfus(fitted.compute_label)
    assert compute_mfu == pytest.approx(m, abs=0.005)  # the number printed is this compute's
    assert compute_mfu > step_mfu  # the one-node step's communication is taken out
    given = strategy_step(**kw, mfu=m)
    assert given.compute_source == "mfu"
    assert given.compute_s == pytest.approx(fitted.compute_s, rel=1e-9)
    # the first number is not the one that reproduces the compute: it is slower
    slower = strategy_step(**kw, mfu=step_mfu)
    assert slower.compute_s > fitted.compute_s * 1.02


def test_the_cli_prints_the_same_label():
    from typer.testing import CliRunner

    from costmodel.cli import app

    r = CliRunner().invoke(
        app,
        ["step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "8",
         "--strategy", "fsdp", "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.stdout)
    # the API's label names the field (`mfu`), the CLI's the option: the same label otherwise
    api = strategy_step(**KW).compute_label
    assert "the `mfu` of this compute" in api
    assert d["compute_label"] == api.replace("`mfu`", "--mfu")
    assert "the --mfu of this compute" in d["compute_label"]
