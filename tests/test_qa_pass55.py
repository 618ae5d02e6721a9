"""QA pass 55: no MFU above 1.

A bare parameter count's fitted compute is priced on the transformer the count stands for
(``architecture_for_params``), at 6N + attention of that shape, and floored at the GPU's dense
peak for those FLOPs; its label names the compute's MFU of 6N of the count, the FLOPs a given
MFU of a count is of. Where the shape's FLOPs are below the count's 6N (its embedding has no
matmul FLOPs), the compute at that floor read above 1: ``costmodel step --params 30M
--cluster dgx-h100 --nodes 1 --strategy fsdp --seq 256`` said "the compute alone at MFU 1.50
of 6N FLOPs, the --mfu of this compute", an MFU ``--mfu`` refuses. The floor is now the peak's
time for the larger of the two FLOPs (``step.peak_floor_s``), so both MFUs are at most 1 and
``--mfu 1`` is the fastest compute of a count on either road.

Checked here on a small grid (bare counts 1M-1T, every shipped architecture, every cluster,
sequences 1-131072) through the API, ``costmodel step --json`` and ``train --json``, and the
step page's label and MFU metric (AppTest).
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel.architecture import arch_names
from costmodel.cli import app
from costmodel.strategy import step as step_mod
from costmodel.strategy import strategy_step
from costmodel.strategy.step import measured_peak_flops, model_flops_per_token
from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

CLUSTERS = tuple(
    sorted(p.stem for p in (Path(cm.__file__).parents[1] / "presets/clusters").glob("*.toml"))
)
FAST = {"band": False, "timeline": False}
#: MFUs as the labels write them: two decimals, or two significant digits (1.5e-05)
_MFU = re.compile(r"MFU (\d+(?:\.\d+)?(?:e-?\d+)?)")


def _mfus(label: str) -> list[float]:
    return [float(x) for x in _MFU.findall(label)]


def _step(*args: Any, **kw: Any) -> cm.StrategyStep:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration and extrapolation warnings
        return strategy_step(*args, **{**FAST, **kw})


def _six_n_mfu(s: cm.StrategyStep, params: float, seq: int) -> float:
    """The compute's MFU of 6N of the count (micro-batch 1, bf16, an H100), as the label
    defines it."""
    peak = measured_peak_flops(cm.cluster("dgx-h100").gpu, "bf16")
    return 6 * params * seq / (s.compute_s * peak)


def test_the_clusters_are_the_shipped_ones() -> None:
    assert {"dgx-h100", "hgx-h200", "dgx-a100", "dgx-b200"} <= set(CLUSTERS)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_bare_counts_label_never_names_an_mfu_above_one(cluster: str) -> None:
    """Counts 1M-1T at 1-131072 tokens on one node of every cluster: every MFU of the compute
    label at most 1 (30M at 256 tokens on H100/H200 nodes read 1.50)."""
    for params in (1e6, 1e7, 3e7, 1e9, 1e12):
        for seq in (1, 256, 4096, 131072):
            s = _step(params, cluster=cluster, nodes=1, strategy="fsdp", sequence_length=seq)
            assert max(_mfus(s.compute_label)) <= 1.0, (params, seq, s.compute_label)


@pytest.mark.parametrize("cluster", ("dgx-h100", "hgx-h200", "dgx-a100", "dgx-b200"))
def test_every_architectures_label_is_at_most_one(cluster: str) -> None:
    for name in arch_names():
        for seq in (1, 4096, 131072):
            s = _step(arch=name, cluster=cluster, nodes=1, strategy="fsdp", sequence_length=seq)
            assert max(_mfus(s.compute_label)) <= 1.0, (name, seq, s.compute_label)


@pytest.mark.parametrize("params", (1e7, 3e7))
def test_the_compute_is_never_faster_than_the_peak_for_6n_and_mfu_1_gives_it_back(
    params: float,
) -> None:
    """At the floor the label reads MFU 1.00 of 6N, and ``mfu=1`` (the largest allowed) gives
    the same compute: the fitted road is no faster than the given-MFU road can price."""
    kw = dict(cluster="dgx-h100", nodes=1, strategy="fsdp", sequence_length=256)
    s = _step(params, **kw)
    assert _six_n_mfu(s, params, 256) == pytest.approx(1.0, rel=1e-9)
    assert "the compute alone at MFU 1.00 of 6N FLOPs" in s.compute_label
    assert _step(params, mfu=1.0, **kw).compute_s == pytest.approx(s.compute_s, rel=1e-9)
    peak = measured_peak_flops(cm.cluster("dgx-h100").gpu, "bf16")
    shape_flops = model_flops_per_token(params, None, 256)[0]
    assert s.compute_s > shape_flops * 256 / peak  # above the shape's own peak time
    assert step_mod._SIX_N_PEAK_NOTE in s.notes, s.notes  # the answer says why


@pytest.mark.parametrize("strategy", ("ddp", "fsdp"))
def test_more_tokens_never_make_the_step_shorter_across_the_6n_floor(strategy: str) -> None:
    """The floor is max(shape, 6N) FLOPs at the peak on both sides of the calibration's edge:
    the compute and the step grow with the sequence through it."""
    seqs = (16, 64, 128, 192, 256, 320, 384, 512, 768, 1024)
    steps = [_step(3e7, cluster="dgx-h100", nodes=1, strategy=strategy, sequence_length=q)
             for q in seqs]  # fmt: skip
    for s, q in zip(steps, seqs, strict=True):
        assert _six_n_mfu(s, 3e7, q) <= 1.0 + 1e-12, (q, s.compute_label)
    for a, b in zip(steps, steps[1:], strict=False):
        assert b.compute_s > a.compute_s and b.step_time_s > a.step_time_s, (
            [s.step_time_s for s in steps],
        )


def test_an_architectures_compute_is_unchanged_by_the_6n_floor() -> None:
    """An architecture's given MFU is of its own FLOPs: its floor is the one it had."""
    s = _step(arch="gpt2-124m", cluster="dgx-h100", nodes=1, strategy="fsdp", sequence_length=64)
    a = cm.load_arch("gpt2-124m")
    peak = measured_peak_flops(cm.cluster("dgx-h100").gpu, "bf16")
    assert s.compute_s >= a.training_flops_per_token(64) * 64 / peak
    assert step_mod._SIX_N_PEAK_NOTE not in s.notes


def _cli(*args: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("params", ("10M", "30M"))
def test_the_cli_json_says_at_most_one(params: str) -> None:
    kw = ("--params", params, "--cluster", "dgx-h100", "--nodes", "1", "--strategy", "fsdp")
    d = _cli("step", *kw, "--seq", "256")
    assert max(_mfus(d["compute_label"])) <= 1.0, d["compute_label"]
    t = _cli("train", *kw, "--seq", "256", "--tokens", "1B")
    assert max(_mfus(t["compute_label"])) <= 1.0 and 0 < t["mfu"] <= 1.0, t


def test_the_step_page_says_at_most_one() -> None:
    """The step page (a bare 30M count, fsdp on one DGX H100 node, 256 tokens): its compute
    caption names MFUs of at most 1 and its MFU metric is at most 100 %."""
    at = open_page(
        "page_ddp.py",
        {"ddp_params": "30M", "ddp_nodes": "1", "ddp_strategy": "fsdp", "ddp_seq": "256"},
    )
    assert_clean(at)
    said = next(_text(c.value) for c in at.caption if "Compute in use" in c.value)
    assert "of 6N FLOPs" in said and max(_mfus(said)) <= 1.0, said
    m = metrics(at)["MFU at the predicted step"]
    assert 0 < float(m.removesuffix(" %")) <= 100, m


def test_the_step_sweep_prices_the_same_bounded_compute() -> None:
    """One road: a step sweep's rows are the API's steps, the 6N floor included."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = cm.sweep(
            kind="step", preset="dgx-h100", params=[1e7, 3e7], sequence_length=[256],
            strategy="fsdp", nodes=[1],
        )  # fmt: skip
    for params, compute_s in zip(df["params"], df["compute_s"], strict=True):
        s = _step(params, cluster="dgx-h100", nodes=1, strategy="fsdp", sequence_length=256)
        assert compute_s == pytest.approx(s.compute_s, rel=1e-12)
        assert _six_n_mfu(s, params, 256) <= 1.0 + 1e-12
