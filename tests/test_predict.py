"""predict_collective, its three models, and each correction term of corrections.py."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel as cm
from costmodel import corrections as C
from costmodel import nccl
from costmodel.predict import allreduce_time_fn, compare_models, fitted_params, predict_collective

SIZES = 2.0 ** np.arange(3, 35)


@pytest.mark.parametrize("model", ["nccl", "nccl-table", "textbook", "lesson"])
def test_shapes_and_consistency(model):
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=2, model=model)
    assert p.time_s.shape == SIZES.shape and p.ranks == 16 and p.nodes == 2
    np.testing.assert_allclose(p.algbw_bytes_per_s, SIZES / p.time_s)
    np.testing.assert_allclose(p.busbw_bytes_per_s, p.algbw_bytes_per_s * 2 * 15 / 16)
    s = predict_collective("all_reduce", 2.0**20, "dgx-h100", nodes=2, model=model)
    assert isinstance(s.time_s, float) and isinstance(s.algorithm, str)
    assert s.time_s == pytest.approx(p.time_s[17])
    assert list(p.to_frame().columns)[:5] == ["op", "model", "ranks", "nodes", "message_bytes"]


def test_lesson_multi_node_is_one_nic_per_gpu():
    # 8 x 8 H100 with 8 x 400G NDR measure ~320 GB/s; the lesson's flat ring says 50
    # (this model was called "textbook" here; it is "lesson" now)
    p = predict_collective("all_reduce", 2.0**33, "dgx-h100", nodes=8, model="lesson")
    assert p.busbw_bytes_per_s / 1e9 == pytest.approx(50, rel=0.01)
    # the topology-aware textbook: a ring crosses each node on all 8 NICs at 48 GB/s each
    t = predict_collective("all_reduce", 2.0**33, "dgx-h100", nodes=8, model="textbook")
    assert t.busbw_bytes_per_s / 1e9 == pytest.approx(8 * 48, rel=0.02)
    real = predict_collective("all_reduce", 2.0**33, "dgx-h100", nodes=8)
    assert real.busbw_bytes_per_s > 5 * p.busbw_bytes_per_s


def test_full_model_is_never_faster_than_host_floor():
    params = fitted_params()
    p = predict_collective("all_reduce", SIZES, "dgx-h100", gpus_per_process=8)
    assert p.time_s.min() >= C.host_floor_s(8, params) - 1e-12


def test_bad_input_messages():
    with pytest.raises(
        ValueError,
        match="model: 'magic' is not a model; allowed: nccl \\(default\\), lesson, textbook, calibrated",
    ):
        predict_collective("all_reduce", 1e6, "dgx-h100", model="magic")
    with pytest.raises(ValueError, match="allowed: all_reduce"):
        predict_collective("allgathr", 1e6, "dgx-h100")  # "allgather" is all_gather
    with pytest.raises(ValueError, match="NVLS needs NVLink SHARP"):
        predict_collective("all_reduce", 1e6, "dgx-a100", algorithm="nvls")
    with pytest.raises(ValueError, match="CollNet needs IB SHARP"):
        predict_collective("all_reduce", 1e6, "dgx-h100", nodes=2, algorithm="collnet_direct")
    with pytest.raises(ValueError, match="2\\*\\*44"):
        predict_collective("all_reduce", -5, "dgx-h100")
    with pytest.raises(ValueError, match="not a textbook"):
        predict_collective("all_reduce", 1e6, "dgx-h100", algorithm="nvls_tree", model="textbook")
    # with auto, unavailable algorithms are simply not candidates
    p = predict_collective("all_reduce", SIZES, "dgx-a100", nodes=2)
    assert not set(p.algorithm.tolist()) & {"nvls", "nvls_tree", "collnet_direct", "collnet_chain"}


def test_pinned_algorithm_and_protocol():
    p = predict_collective("all_reduce", SIZES, "dgx-h100", algorithm="ring", protocol="LL128")
    assert set(p.algorithm.tolist()) == {"ring"} and set(p.protocol.tolist()) == {"ll128"}


def test_allreduce_time_fn_and_one_rank():
    f = allreduce_time_fn("dgx-h100", nodes=2)
    t = f(SIZES)
    assert np.all(np.diff(t) >= 0) and t[0] > 0
    one = predict_collective("all_reduce", SIZES, "dgx-h100", gpus_per_node=1)
    assert np.all(one.time_s == 0) and np.all(one.busbw_bytes_per_s == 0)


def test_compare_models_side_by_side():
    df = compare_models("all_reduce", [2**10, 2**30], "dgx-h100", nodes=8)
    want = {"time_s[lesson]", "time_s[textbook]", "time_s[nccl-table]", "time_s[nccl]"}
    assert want <= set(df.columns) and "time_s[calibrated]" not in df.columns
    assert (df["lesson_over_nccl"] > 1).all()  # the lesson's flat ring is pessimistic at scale
    np.testing.assert_allclose(
        df["textbook_over_nccl"], df["time_s[textbook]"] / df["time_s[nccl]"], rtol=1e-12
    )


def test_lazy_export():
    assert cm.predict_collective is predict_collective


# ---- each correction term ------------------------------------------------------------------
def test_host_floor_linear_in_gpus_per_process():
    p = {"host_base_us": 2.0, "host_per_gpu_us": 5.0}
    assert C.host_floor_s(8, p) - C.host_floor_s(4, p) == pytest.approx(20e-6)
    with pytest.raises(ValueError, match="gpus_per_process"):
        C.host_floor_s(0, p)


def test_fitted_host_floor_reproduces_launch_floors():
    # measured 8 B times: 13a (-g 4) 22.7 us, 12a (-g 8) 40.1 us; 25 % tolerance: each run's
    # floor is predicted from constants fitted on all runs.
    p = fitted_params()
    for g, measured_us in ((4, 22.7), (8, 40.1)):
        assert C.host_floor_s(g, p) * 1e6 == pytest.approx(measured_us, rel=0.25)
    # one GPU per process: the single-node floors at <= 4 KiB span 7.8-8.9 us (15, 4 GPUs) to
    # 11-25 us (24a-d, 8 x B200), which the fit pools since 24a-d joined it (the floor
    # has no rank-count term yet); the fitted floor lies inside that span.
    assert 7.8 <= C.host_floor_s(1, p) * 1e6 <= 24.7


def test_nvls_physical_bandwidth_matches_13f():
    # data 13f, NCCL_ALGO=NVLS at 8 GiB: algbw 207 (2 GPUs), 251 (4), 266 (6) GB/s; 3 %
    # tolerance: no fitted constant is involved (NCCL's eff x link x n/(n+1)).
    for g, measured in ((2, 207.0), (4, 251.0), (6, 265.7)):
        t = nccl.topology_inputs(
            compute_capability=9.0,
            nodes=1,
            gpus_per_node=g,
            intra_kind="nvswitch",
            nvlinks_per_gpu=18,
            nvls=True,
        )
        assert C.nvls_allreduce_algbw_gbs(t) == pytest.approx(measured, rel=0.03)
        table = nccl.algorithm_bandwidth_gbs("all_reduce", "nvls", "simple", t)
        if g <= 4:
            assert table < 0.7 * measured  # NCCL's formula is far too low at 2-4 GPUs


def test_host_staged_duplex_only_for_two_way_ops():
    t = nccl.topology_inputs(
        compute_capability=7.5, nodes=1, gpus_per_node=2, intra_kind="pcie", p2p=False
    )
    # the term is fitted on one source (09) only, grouped CV cannot show that
    # it generalises, so the packaged fit neutralises it (factor 1); with its fitted value
    # (0.335 before the grouped-CV ablation) broadcast on the PCIe box reaches ~2.5x the
    # all-reduce busbw, as measured (09c vs 09a: 11.1 vs 4.0)
    from costmodel.fitted_corrections import FITTED

    assert "host_staged_duplex" in FITTED.dropped_terms
    assert C.host_staged_duplex_factor("all_reduce", t, fitted_params()) == 1.0
    p = {**fitted_params(), "host_staged_duplex": 0.335}
    assert C.host_staged_duplex_factor("all_reduce", t, p) == 0.335
    assert C.host_staged_duplex_factor("reduce", t, p) == 1.0
    bc = predict_collective("broadcast", 2.0**30, "pcie3-2x-rtx2080ti-nop2p", params=p)
    ar = predict_collective("all_reduce", 2.0**30, "pcie3-2x-rtx2080ti-nop2p", params=p)
    assert 2.0 < bc.busbw_bytes_per_s / ar.busbw_bytes_per_s < 3.5


def test_nvlink_domain_scale_only_for_large_blackwell_domains():
    p = {"nvl_domain_link_scale": 1.2}
    assert C.nvlink_domain_scale(10.0, 72, "nvswitch", p) == 1.2
    assert C.nvlink_domain_scale(10.0, 8, "nvswitch", p) == 1.0
    assert C.nvlink_domain_scale(9.0, 72, "nvswitch", p) == 1.0
    # GB200 NVL72 measures ~840 GB/s ring busbw at 4-8 GiB (04a); NCCL's constant caps at 720
    # with the scale fitted on 04 (1.2) the full model passes NCCL's cap; the packaged fit
    # neutralises it (one source: grouped CV cannot assess it)
    from costmodel.fitted_corrections import FITTED

    assert "nvl_domain_link_scale" in FITTED.dropped_terms
    table = predict_collective("all_reduce", 2.0**33, "gb200-nvl72", nvls=False, model="nccl-table")
    full = predict_collective(
        "all_reduce", 2.0**33, "gb200-nvl72", nvls=False, params={**fitted_params(), **p}
    )
    assert table.busbw_bytes_per_s < 720e9 < full.busbw_bytes_per_s


def test_fabric_latency_and_mid_size_ramp():
    assert C.fabric_latency_us("efa", fitted_params()) > C.fabric_latency_us(
        "infiniband", fitted_params()
    )
    r = C.mid_size_ramp([2**10, 2**20, 2**40], {"ramp_phi": 0.2, "ramp_knee_bytes": 2**30})
    assert r[0] == 1.0 and r[1] == pytest.approx(1.2) and r[2] == pytest.approx(1.00625)


def test_string_size_names_the_argument():
    # used to be numpy's "could not convert string to float: '1MB'" (no argument named)
    with pytest.raises(
        ValueError, match="message_bytes: '1MB' is not a number.*allowed: sizes in bytes"
    ):
        predict_collective("all_reduce", "1MB", "dgx-h100", nodes=2)
