"""Two definitions every surface shares.

1. Scaling efficiency is the seed lesson's: throughput on N GPUs over N times the throughput on
   one GPU. With the same per-GPU micro-batches on one GPU (weak scaling) that is T_1 / T_N, so
   one GPU is exactly 1. The compute's share of the step (compute / step) is its own figure,
   ``compute_share``: on one GPU it is below 1 by the optimizer step.
2. An error band shown beside a predicted time contains that time.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import costmodel as cm
from costmodel import presets
from costmodel.scenario import Scenario
from costmodel.strategy import strategy_step
from costmodel.strategy.layout import make_layout
from costmodel.strategy.step import optimizer_time_s
from costmodel.sweep import sweep

from ._cli import run

STRATEGIES = ("ddp", "zero1", "zero2", "fsdp", "hsdp")


def _json(*args: str) -> dict:
    out = run(*args, "--json")
    assert out.exit_code == 0, out.stderr
    return json.loads(out.stdout)


# --- 1. scaling efficiency ----------------------------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_one_gpu_is_exactly_one_and_its_compute_share_is_not(strategy):
    """``step --arch llama-2-7b --cluster dgx-h100 --nodes 1 --gpus-per-node 1`` printed 85.6 %:
    compute / step, with the optimizer step and DDP's host time counted as a scaling loss."""
    c = presets.cluster("dgx-h100", nodes=1, gpus_per_node=1)
    s = strategy_step(arch="llama-2-7b", cluster=c, nodes=1, strategy=strategy, band=False)
    assert s.efficiency == 1.0
    assert s.one_gpu_step_s == s.step_time_s
    assert s.compute_share == s.compute_s / s.step_time_s < 0.95  # the optimizer step is in it


def test_one_gpu_is_one_on_the_cli_scenario_and_the_one_link_step():
    d = _json("step", "--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "1",
              "--gpus-per-node", "1")  # fmt: skip
    assert d["efficiency"] == 1.0 and d["compute_share"] < 0.95
    r = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=1, gpus_per_node=1).evaluate()
    assert r.efficiency == 1.0 and r.scaling[0].ranks == 1 and r.scaling[0].efficiency == 1.0
    # the lesson's one-link step, with an optimizer tail and DDP's host time on one rank
    one = cm.ddp_step(7e9, 1, compute_time_s=0.4, bandwidth_bytes_per_s=50e9, tail_s=0.05,
                      step_overhead_s=0.01)  # fmt: skip
    assert one.efficiency == 1.0 and one.compute_share == pytest.approx(0.4 / 0.46)


@pytest.mark.parametrize(
    "cluster", ["dgx-h100", "dgx-a100", "aws-p5", "gcp-a3-mega", "alcf-polaris", "dgx-b200"]
)
@pytest.mark.parametrize("strategy", ["ddp", "zero1", "fsdp", "hsdp"])
def test_efficiency_never_rises_with_the_node_count(cluster, strategy):
    """A fixed setup (model, strategy, micro-batches) on a preset cluster: more nodes add
    communication and waiting, never throughput per GPU, so T_1 / T_N does not rise."""
    effs = []
    for n in (1, 2, 4, 8, 16, 32):
        s = strategy_step(arch="llama-3.1-8b", cluster=cluster, nodes=n, strategy=strategy,
                          band=False, timeline=False)  # fmt: skip
        effs.append(s.efficiency)
    assert all(b <= a * (1 + 1e-12) for a, b in zip(effs, effs[1:], strict=False)), effs


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("accumulation", [1, 4])
def test_efficiency_is_the_one_gpu_step_over_this_step_computed_apart(strategy, accumulation):
    """With a measured compute (the same on every cluster, nothing calibrated) the one-GPU step
    is the step the engine itself gives on a one-GPU cluster, and the efficiency its ratio."""
    kw = dict(arch="llama-3.1-8b", strategy=strategy, compute_time_s=0.3, band=False,
              accumulation=accumulation, timeline=False)  # fmt: skip
    one = strategy_step(cluster=presets.cluster("dgx-h100", nodes=1, gpus_per_node=1), **kw)
    many = strategy_step(cluster="dgx-h100", nodes=4, **kw)
    assert many.compute_s == pytest.approx(one.compute_s, rel=1e-12)
    assert many.one_gpu_step_s == pytest.approx(one.step_time_s, rel=1e-12)
    assert many.efficiency == pytest.approx(one.step_time_s / many.step_time_s, rel=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_one_gpu_step_is_compute_and_unsharded_optimizer(strategy):
    """With the fitted compute (calibrated on one node of the cluster), the reference keeps the
    step's own compute: the same micro-batches, the optimizer step over every parameter; no
    DDP host time (one GPU is plain training, no DDP wrapper)."""
    s = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=4, strategy=strategy,
                      band=False, timeline=False)  # fmt: skip
    one_rank = make_layout(strategy="ddp", ranks=1, gpus_per_node=1)
    p = float(cm.load_arch("llama-3.1-8b").params)
    opt = optimizer_time_s(p, one_rank, "mixed-adam", presets.cluster("dgx-h100").gpu)
    t1 = s.compute_s + opt
    assert s.one_gpu_step_s == pytest.approx(t1, rel=1e-12)
    assert s.efficiency == pytest.approx(t1 / s.step_time_s, rel=1e-12)
    assert s.compute_share == pytest.approx(s.compute_s / s.step_time_s, rel=1e-12)
    if strategy == "ddp":  # nothing sharded: the step on N GPUs is never faster than on one
        assert s.efficiency <= 1.0


def test_a_sharded_optimizer_step_can_scale_superlinearly_and_says_so():
    """FSDP shares the optimizer step among the ranks; one GPU does it whole. When that saves
    more than the sharding costs the efficiency is above 1, and the CLI says why."""
    s = strategy_step(arch="llama-2-7b", cluster="dgx-h100", nodes=1, strategy="fsdp",
                      band=False, timeline=False)  # fmt: skip
    assert s.efficiency > 1.0
    assert s.optimizer_s < s.one_gpu_step_s - s.compute_s  # the shard's step is the smaller
    out = run("step", "--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "1",
              "--strategy", "fsdp")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("scaling efficiency"))
    assert f"{100 * s.efficiency:.1f}%" in line and "above 100%" in line, line


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_one_number_on_the_api_the_cli_the_sweep_and_the_scenario(strategy):
    args = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=4, strategy=strategy)
    api = strategy_step(**args, band=False, timeline=False)
    cli = _json("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "4",
                "--strategy", strategy)  # fmt: skip
    df = sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", strategy=strategy,
                     nodes=4)  # fmt: skip
    sc = Scenario(**args).evaluate()
    sc_cli = _json("scenario", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "4",
                   "--strategy", strategy)  # fmt: skip
    row = next(r for r in sc.scaling if r.nodes == 4)
    for key in ("efficiency", "compute_share", "one_gpu_step_s"):
        want = getattr(api, key)
        assert cli[key] == pytest.approx(want, rel=1e-9), key
        assert float(df[key].iloc[0]) == pytest.approx(want, rel=1e-9), key
        assert getattr(sc, key) == pytest.approx(want, rel=1e-9), key
        assert sc_cli[key] == pytest.approx(want, rel=1e-9), key
    assert row.efficiency == pytest.approx(api.efficiency, rel=1e-9)
    assert api.efficiency != pytest.approx(api.compute_share, rel=1e-3)  # two figures


def test_the_lessons_practice_problem_keeps_its_numbers():
    """The lesson's one-link step has no optimizer tail: its one-GPU step is the compute, so
    its efficiency is its compute share (58.4 % as printed) and its perfect overlap 400/550."""
    s = cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    assert s.one_gpu_step_s == 0.4
    assert s.efficiency == pytest.approx(0.4 / s.step_time_s, rel=1e-12) == s.compute_share
    assert 0.715 <= s.perfect_overlap_efficiency <= 0.735


def test_the_step_page_shows_the_scaling_efficiency_and_the_compute_share():
    from .test_app import metrics, open_page  # noqa: PLC0415

    at = open_page("page_ddp.py", {"ddp_arch": "llama-3.1-8b", "ddp_nodes": "1"})
    r = Scenario(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1).evaluate()
    assert metrics(at)["Scaling efficiency"] == f"{100 * r.efficiency:.1f} %"
    said = " ".join(c.value for c in at.caption)
    assert f"Compute share of the step: {100 * r.compute_share:.1f} %" in said, said


# --- 2. an error band holds its own prediction ---------------------------------------------------
BAND_PRESETS = tuple(presets.names("cluster"))
BAND_SIZES = (4096.0, 2.0**20, 2.0**30)  # both size classes


def _models_of(name: str) -> tuple[str, ...]:
    from costmodel import models

    return tuple(models.available(presets.cluster(name), reference=True))


def _holds(lo, t, hi) -> list:
    """Rows (lo, t, hi) where a shown band (lo finite) misses its time."""
    lo, t, hi = (np.atleast_1d(np.asarray(x, dtype=float)) for x in (lo, t, hi))
    shown = np.isfinite(lo) | np.isfinite(hi)
    bad = shown & ~((lo <= t * (1 + 1e-12)) & (t <= hi * (1 + 1e-12)))
    return list(zip(lo[bad], t[bad], hi[bad], strict=True))


def test_the_lesson_models_band_on_8_dgx_h100_nodes_holds_its_42_ms():
    """``predict --cluster dgx-h100 --nodes 8 --sizes 1GiB --model lesson`` printed 42.6 ms
    with the band "5.14 ms-14.2 ms": the lesson's own grouped-CV range (its flat ring at one NIC
    per GPU is 3-8x too slow across nodes), all of it below the prediction. The band is now the
    hull of the prediction and that range, and says which way the model misses."""
    from costmodel.fitted_corrections import FITTED

    p = cm.predict_collective("all_reduce", 2**30, "dgx-h100", nodes=8, model="lesson")
    lo, hi = p.error_band.time_bounds(p.time_s)
    row = FITTED.bands["lesson"]["multi-node-infiniband"]["ge1MiB"]
    assert row["lo"] > 1  # the measured range lies wholly below the predicted time
    assert lo == pytest.approx(p.time_s / row["hi"], rel=1e-12)  # the runs' fast end, kept
    assert hi == p.time_s  # ... up to the prediction
    assert "lesson predicts too slow" in p.error_band.one_sided
    out = run("predict", "--cluster", "dgx-h100", "--nodes", "8", "--sizes", "1GiB",
              "--model", "lesson")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    assert (
        "5.14 ms-42.6 ms" in out.stdout
        and "band: multi-node-infiniband from 1 MiB, lesson predicts too slow" in (out.stdout)
    )


@pytest.mark.parametrize("name", BAND_PRESETS)
def test_a_band_holds_its_prediction_on_the_api_and_the_app_path(name):
    from costmodel.web.common import prediction_band

    for model in _models_of(name):
        for nodes in (1, 4):
            try:
                p = cm.predict_collective("all_reduce", np.array(BAND_SIZES), name, nodes=nodes,
                                          model=model)  # fmt: skip
            except ValueError:  # a box with no network: one node only
                continue
            f = p.to_frame()
            assert not _holds(f["time_lo_s"], f["time_s"], f["time_hi_s"]), (model, nodes)
            # the Collectives page's band (common.prediction_band), at the page's time
            lo, hi = prediction_band(
                "all_reduce", BAND_SIZES, name, nodes, None, model
            ).time_bounds(p.time_s)
            assert not _holds(lo, p.time_s, hi), (model, nodes)


@pytest.mark.parametrize("name", ["dgx-h100", "aws-p5", "alcf-polaris", "pcie-8x-l40s"])
def test_a_band_holds_its_prediction_in_cli_json_and_in_sweeps(name):
    models = _models_of(name)
    for model in models:
        d = _json("predict", "--cluster", name, "--nodes", "1", "--sizes", "4KiB,1MiB,1GiB",
                  "--model", model)  # fmt: skip
        rows = d["results"]
        lo = [math.nan if r["time_lo_s"] is None else r["time_lo_s"] for r in rows]
        hi = [math.nan if r["time_hi_s"] is None else r["time_hi_s"] for r in rows]
        assert not _holds(lo, [r["time_s"] for r in rows], hi), (model, rows)
    try:
        df = sweep(preset=name, model=",".join(models), size="4KB,1MB,1GB", nodes="1,2,8")
    except ValueError:  # a box with no network: one node only
        df = sweep(preset=name, model=",".join(models), size="4KB,1MB,1GB", nodes="1")
    assert not _holds(df["time_lo_s"], df["time_s"], df["time_hi_s"]), df


@pytest.mark.parametrize("model", ["lesson", "textbook", "nccl"])
def test_a_step_band_holds_its_step(model):
    """The step's band is made of each collective at its band's ends: bands that hold their
    predictions make a step band that holds the step."""
    for nodes in (1, 8):
        s = strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=nodes, model=model,
                          strategy="fsdp", timeline=False)  # fmt: skip
        lo, hi = s.step_time_band_s
        assert lo <= s.step_time_s <= hi, (nodes, s.step_time_band_s, s.step_time_s)
