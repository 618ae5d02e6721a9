"""The per-step NVSwitch hop latency terms: for every GPU (C.nvlink_step_latency_scale), tried
and not kept (``--try nvlink_step``: it slows the cited 8 x H100 128 B all-reduce past its
measurement), and on Blackwell only (C.blackwell_nvlink_step_latency_scale), kept. NCCL charges
a Ring ``nsteps x hwLatency[NVLINK]``; the terms scale that hop for LL and LL128 on one
NVSwitch node, and their fit is identified by more than the one source (24, 8 x B200) that
shows it most."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel import corrections as C
from costmodel import tables as T
from costmodel.fitted_corrections import ALL
from costmodel.predict import predict_collective
from tests._paths import load_script

fit = load_script("fit_corrections")

# the host floor off, so the device time shows at every size; the shipped Blackwell hop scale
# at 1, so each test moves one scale
NO_FLOOR = {
    **dict(ALL),
    "host_base_us": 0.0,
    "host_per_gpu_us": 0.0,
    "blackwell_nvlink_step_latency_scale": 1.0,
}


def _t(op: str, size: float, cluster: str, scale: float, gpus: int = 8) -> float:
    p = {**NO_FLOOR, "nvlink_step_latency_scale": scale}
    return float(
        predict_collective(op, size, cluster, nodes=1, gpus_per_node=gpus, params=p).time_s
    )


@pytest.mark.parametrize(
    ("op", "steps"), [("all_gather", 7), ("reduce_scatter", 7), ("all_reduce", 14)]
)
def test_scale_adds_its_share_of_every_ring_step(op, steps):
    """8 x B200 at 1 KiB runs Ring/LL: the time grows by (s - 1) x steps x NCCL's LL hop
    latency, twice as much for all-reduce (2(n-1) steps) as for all-gather (n-1)."""
    hop_us = T.NCCL_HW_LATENCY_US["nvlink"]["ring"][0]
    d = _t(op, 1024, "dgx-b200", 2.0) - _t(op, 1024, "dgx-b200", 1.0)
    assert d == pytest.approx(steps * hop_us * 1e-6, rel=1e-6)


def test_scale_leaves_other_paths_alone():
    """No NVSwitch (PCIe, a direct NVLink mesh), the point-to-point all-to-all and Simple at
    large sizes keep NCCL's hop latency."""
    assert _t("all_reduce", 1024, "pcie5-8x-rtxpro6000-p2p", 2.0) == _t(
        "all_reduce", 1024, "pcie5-8x-rtxpro6000-p2p", 1.0
    )
    assert _t("all_reduce", 1024, "alps-gh200", 2.0, gpus=4) == _t(
        "all_reduce", 1024, "alps-gh200", 1.0, gpus=4
    )
    assert _t("all_to_all", 1024, "dgx-b200", 2.0) == _t("all_to_all", 1024, "dgx-b200", 1.0)
    assert (
        C.nvlink_step_latency_scale(
            "nvswitch", "ring", "simple", {"nvlink_step_latency_scale": 2.0}
        )
        == 1.0
    )
    with pytest.raises(ValueError, match="nvlink_step_latency_scale"):
        C.nvlink_step_latency_scale("nvswitch", "ring", "ll", {"nvlink_step_latency_scale": 0.0})


def test_fit_without_the_b200_source_still_finds_the_slower_hop():
    """The fold that leaves 24 (8 x B200) out fits the scale on 12a, 13 and 21 (A100, H100,
    GB200) rows where the host floor does not bind, and still finds a hop well above NCCL's:
    the term is not a one-source fit (grouped CV can credit it)."""
    runs = fit.load_runs()
    without_24 = fit.fit_runs([r for r in runs if fit.group_of(r.key) != "24"])
    s = fit._fit_nvlink_step(without_24, fit._base(dict(ALL)))["nvlink_step_latency_scale"]
    assert 1.5 <= s <= float(np.max(fit.NVLINK_STEP_GRID))


def _tb(op: str, size: float, cluster: str, scale: float, gpus: int = 8) -> float:
    p = {**NO_FLOOR, "blackwell_nvlink_step_latency_scale": scale}
    return float(
        predict_collective(op, size, cluster, nodes=1, gpus_per_node=gpus, params=p).time_s
    )


def test_blackwell_scale_slows_b200_and_leaves_h100_alone():
    """The Blackwell-only form (``--try nvlink_step_blackwell``) adds 7 x (s - 1) LL hops to an
    8 x B200 1 KiB all-gather, and leaves 8 x H100 (the cited 128 B all-reduce) and A100 as
    NCCL's table gives them."""
    hop_us = T.NCCL_HW_LATENCY_US["nvlink"]["ring"][0]
    d = _tb("all_gather", 1024, "dgx-b200", 2.0) - _tb("all_gather", 1024, "dgx-b200", 1.0)
    assert d == pytest.approx(7 * hop_us * 1e-6, rel=1e-6)
    for cluster in ("dgx-h100", "dgx-a100"):
        assert _tb("all_reduce", 128, cluster, 2.6) == _tb("all_reduce", 128, cluster, 1.0)
    with pytest.raises(ValueError, match="blackwell_nvlink_step_latency_scale"):
        C.blackwell_nvlink_step_latency_scale(
            10.0, "nvswitch", "ring", "ll", {"blackwell_nvlink_step_latency_scale": -1.0}
        )


def test_blackwell_fit_without_the_b200_source_finds_it_on_gb200():
    """Left out 24 (8 x B200), the Blackwell fit still finds a slower hop on the other
    Blackwell one-node source (21d, 4 x GB200): the term is not identified by 24 alone."""
    runs = fit.load_runs()
    without_24 = fit.fit_runs([r for r in runs if fit.group_of(r.key) != "24"])
    blackwell = {
        r.key
        for r in without_24
        if fit.regime_of(r) == "single-node-nvlink" and fit._is_blackwell(r)
    }
    assert blackwell == {"04a", "21d"}
    s = fit._fit_nvlink_step_blackwell(without_24, fit._base(dict(ALL)))
    assert 1.5 <= s["blackwell_nvlink_step_latency_scale"] <= float(np.max(fit.NVLINK_STEP_GRID))
