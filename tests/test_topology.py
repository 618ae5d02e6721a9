"""Tests of costmodel.topology (DESIGN.md 3.2): hierarchical all-reduce (serial, pipelined,
in-network reduction) and the flat ring limited by min(intra, NICs x NIC bandwidth)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import collectives as c
from costmodel import topology as t
from tests._paths import NCCL_TESTS

REL = 1e-12  # the same closed forms in float64: only rounding separates them
DATA = f"{NCCL_TESTS}/"


def test_per_gpu_inter_bandwidth():
    assert t.per_gpu_inter_bandwidth(8, 50e9, 8) == 50e9
    assert t.per_gpu_inter_bandwidth(4, 25e9, 8) == 12.5e9
    np.testing.assert_allclose(
        t.per_gpu_inter_bandwidth(np.array([1, 2, 8]), 50e9, 8), [6.25e9, 12.5e9, 50e9]
    )


def test_phases_by_hand():
    m, n, g, bi, be, ai, ae = 2e9, 4, 8, 450e9, 50e9, 3e-6, 10e-6
    p = t.hierarchical_allreduce_phases(m, n, g, bi, be, ai, ae)
    assert set(p) == set(t.PHASES)
    rs = 7 * ai + 7 / 8 * m / bi
    ar = 2 * 3 * ae + 2 * 3 / 4 * (m / 8) / be
    assert p["intra_reduce_scatter_s"] == pytest.approx(rs, rel=REL)
    assert p["inter_allreduce_s"] == pytest.approx(ar, rel=REL)
    assert p["intra_all_gather_s"] == pytest.approx(rs, rel=REL)
    assert t.hierarchical_allreduce_time(m, n, g, bi, be, ai, ae) == pytest.approx(
        2 * rs + ar, rel=REL
    )
    assert t.hierarchical_allreduce_time(
        m, n, g, bi, be, ai, ae, mode="pipelined"
    ) == pytest.approx(max(2 * rs, ar), rel=REL)


def test_in_network_reduction_halves_inter_node_bytes():
    """DESIGN 3.2 / lesson section 6: IB SHARP / CollNet send once and receive once: M/g per
    direction, n/(2(n-1)) of the ring's 2(n-1)/n M/g (4/7 on 8 nodes, half as n grows)."""
    m, n, g = 8e9, 8, 8
    plain = t.hierarchical_allreduce_phases(m, n, g, 450e9, 50e9)
    sharp = t.hierarchical_allreduce_phases(m, n, g, 450e9, 50e9, in_network_reduction=True)
    ratio = n / (2 * (n - 1))
    assert sharp["inter_allreduce_s"] == pytest.approx(plain["inter_allreduce_s"] * ratio, rel=REL)
    assert sharp["inter_allreduce_s"] == pytest.approx(m / g / 50e9, rel=REL)
    assert sharp["intra_reduce_scatter_s"] == plain["intra_reduce_scatter_s"]
    assert sharp["intra_all_gather_s"] == plain["intra_all_gather_s"]
    # one latency step instead of the ring's 2(n-1)
    # (the time with alpha less the time without: a 0-byte message is not sent, 0 s)
    lat = t.hierarchical_allreduce_phases(m, n, g, 450e9, 50e9, 0.0, 7e-6, True)
    assert lat["inter_allreduce_s"] - sharp["inter_allreduce_s"] == pytest.approx(7e-6, rel=1e-9)
    # vectorized over the flag
    both = t.hierarchical_allreduce_time(m, n, g, 450e9, 50e9, in_network_reduction=[False, True])
    assert both[1] < both[0]


def test_degenerate_shapes_reduce_to_one_level():
    m, bi, be = 1e9, 450e9, 50e9
    # one node: intra reduce-scatter + all-gather = the intra ring all-reduce; no fabric needed
    for g in (1, 2, 8):
        assert t.hierarchical_allreduce_time(m, 1, g, bi, 0.0, 1e-6, 1e-5) == pytest.approx(
            c.allreduce_ring(m, g, bi, 1e-6), rel=REL
        )
        assert t.flat_ring_allreduce_time(m, 1, g, bi, 0, 0.0, 1e-6, 1e-5) == pytest.approx(
            c.allreduce_ring(m, g, bi, 1e-6), rel=REL
        )
    # one GPU per node: only the inter-node ring over the nodes
    assert t.hierarchical_allreduce_time(m, 16, 1, bi, be, 1e-6, 1e-5) == pytest.approx(
        c.allreduce_ring(m, 16, be, 1e-5), rel=REL
    )
    assert t.flat_ring_allreduce_time(m, 16, 1, bi, 1, be, 1e-6, 1e-5) == pytest.approx(
        c.allreduce_ring(m, 16, be, 1e-5), rel=REL
    )
    assert t.hierarchical_allreduce_time(m, 1, 1, bi, be) == 0.0


def test_flat_ring_bandwidth_is_min_of_intra_and_node_nics():
    # HGX H100: NVLink4 450 GB/s per direction; 8 x 400G NDR = 400 GB/s per node
    assert t.flat_ring_bandwidth(2, 8, 450e9, 8, 50e9) == 400e9
    assert t.flat_ring_bandwidth(2, 8, 450e9, 16, 50e9) == 450e9  # NVLink-bound
    assert t.flat_ring_bandwidth(2, 8, 450e9, 1, 50e9) == 50e9  # one NIC per node
    assert t.flat_ring_bandwidth(1, 8, 450e9, 0, 0.0) == 450e9  # one node: no fabric
    assert t.flat_ring_bandwidth(8, 1, 450e9, 1, 50e9) == 50e9  # one GPU per node
    # a topology-unaware ring through a slow hop is throttled to it (lesson section 6)
    assert t.flat_ring_bandwidth(2, 4, 32e9, 1, 12.5e9) == 12.5e9
    np.testing.assert_allclose(
        t.flat_ring_bandwidth(np.array([1, 2, 4]), 8, 450e9, 8, 50e9), [450e9, 400e9, 400e9]
    )


def test_flat_ring_time_by_hand():
    m, n, g = 4e9, 4, 8
    want = 2 * 31 * 1e-5 + 2 * 31 / 32 * m / 400e9
    assert t.flat_ring_allreduce_time(m, n, g, 450e9, 8, 50e9, 2e-6, 1e-5) == pytest.approx(
        want, rel=REL
    )


def _peak_busbw(name):
    rows = [ln.split() for ln in open(DATA + name)]
    rows = [r[1:] if r and r[0].endswith(":") else r for r in rows]  # srun -l prefixes "0: "
    rows = [r for r in rows if r and r[0].isdigit()]
    return max(float(r[7]) for r in rows if len(r) >= 12)  # out-of-place busbw, GB/s


@pytest.mark.parametrize(
    "name",
    [
        "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt",  # 8 x 400G NDR per node
        "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt",  # 32 x 100G EFA per node
    ],
)
def test_two_node_h100_busbw_is_node_nics_not_per_gpu_nic(name):
    """DESIGN 3.2 check. 2 x 8 H100, 400 GB/s of NICs per node. The flat-ring model gives 400 GB/s
    busbw (nccl-tests #309 maintainer: "With 8 400 Gbps NICs your peak would be at 400 GB/s");
    a ring limited by one GPU's NIC share would give 50 GB/s. Measured peaks (default algorithm,
    which on 2 nodes may be Tree/NVLSTree and beat the ring, per the maintainer): 469 and 487 GB/s.
    Tolerance 25%: the model is a Ring ceiling and these runs did not pin NCCL_ALGO=Ring; the
    per-GPU-NIC model is off by more than 8x, so the test separates the two models."""
    measured = _peak_busbw(name) * 1e9
    m, n, g = 16 * 2**30, 2, 8
    time_s = t.flat_ring_allreduce_time(m, n, g, 450e9, 8, 50e9)
    model = c.bus_bandwidth("all_reduce", m, n * g, time_s)
    assert model == pytest.approx(400e9, rel=1e-12)
    naive = c.bus_bandwidth("all_reduce", m, n * g, c.allreduce_ring(m, n * g, 50e9))
    assert abs(model - measured) / measured < 0.25
    assert measured / naive > 8


def test_vectorized_and_scalar_out():
    m = np.logspace(3, 10, 5)
    out = t.hierarchical_allreduce_time(
        m[:, None], np.array([1, 2, 16]), 8, 450e9, 50e9, 2e-6, 1e-5
    )
    assert out.shape == (5, 3)
    p = t.hierarchical_allreduce_phases(m, 4, 8, 450e9, 50e9)
    assert all(v.shape == (5,) for v in p.values())
    assert isinstance(t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9), float)
    assert isinstance(t.flat_ring_allreduce_time(1e9, 2, 8, 450e9, 8, 50e9), float)
    for i, mi in enumerate(m):
        assert out[i, 1] == pytest.approx(
            t.hierarchical_allreduce_time(mi, 2, 8, 450e9, 50e9, 2e-6, 1e-5), rel=REL
        )


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: t.hierarchical_allreduce_time(1e9, 0, 8, 450e9, 50e9), "nodes"),
        (lambda: t.hierarchical_allreduce_time(1e9, 2, 1.5, 450e9, 50e9), "gpus_per_node"),
        (lambda: t.hierarchical_allreduce_time(-1.0, 2, 8, 450e9, 50e9), "message_bytes"),
        (
            lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 0.0, 50e9),
            "intra_bandwidth_bytes_per_s",
        ),
        (
            lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 0.0),
            "inter_bandwidth_bytes_per_s",
        ),
        (lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, math.nan), "inter_bandwidth"),
        (lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, -1e-6), "intra_latency_s"),
        (
            lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, 0, -1e-6),
            "inter_latency_s",
        ),
        (lambda: t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, mode="async"), "mode"),
        (lambda: t.flat_ring_allreduce_time(1e9, 2, 8, 450e9, 0, 50e9), "nics_per_node"),
        (lambda: t.flat_ring_allreduce_time(1e9, 2, 8, 450e9, 2.5, 50e9), "nics_per_node"),
        (lambda: t.flat_ring_allreduce_time(1e9, 2, 8, 450e9, 8, -1.0), "nic_bandwidth"),
        (lambda: t.per_gpu_inter_bandwidth(8, 0.0, 8), "nic_bandwidth_bytes_per_s"),
        (lambda: t.per_gpu_inter_bandwidth(8, 50e9, 0), "gpus_per_node"),
    ],
)
def test_bad_input(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


def test_bad_mode_lists_valid_modes():
    with pytest.raises(ValueError, match="serial, pipelined"):
        t.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, mode="overlap")


PROPS = settings(max_examples=60, deadline=None)


@PROPS
@given(
    m=st.floats(0.0, 1e12),
    n=st.integers(1, 512),
    g=st.integers(1, 16),
    bi=st.floats(1e9, 2e12),
    be=st.floats(1e9, 2e11),
    ai=st.floats(0.0, 1e-4),
    ae=st.floats(0.0, 1e-4),
)
def test_hierarchy_orderings(m, n, g, bi, be, ai, ae):
    args = (m, n, g, bi, be, ai, ae)
    p = t.hierarchical_allreduce_phases(*args)
    serial = t.hierarchical_allreduce_time(*args)
    piped = t.hierarchical_allreduce_time(*args, mode="pipelined")
    sharp = t.hierarchical_allreduce_time(*args, in_network_reduction=True)
    intra = p["intra_reduce_scatter_s"] + p["intra_all_gather_s"]
    assert max(intra, p["inter_allreduce_s"]) == pytest.approx(piped, rel=REL)
    if n == 1:  # nothing to overlap with: the intra phases share the same links
        assert piped == pytest.approx(serial, rel=REL)
    assert piped <= serial * (1 + 1e-12)
    if n > 1:
        assert sharp <= serial * (1 + 1e-12)  # 1 step and half the bytes vs 2(n-1) steps
    else:
        assert sharp == serial
    # more nodes never make the serial estimate faster
    assert t.hierarchical_allreduce_time(m, n + 1, g, bi, be, ai, ae) >= serial * (1 - 1e-12)


@PROPS
@given(
    m=st.floats(1.0, 1e12),
    n=st.integers(2, 256),
    g=st.integers(2, 16),
    bi=st.floats(1e9, 2e12),
    nics=st.integers(1, 32),
    nic=st.floats(1e9, 1e11),
)
def test_flat_ring_busbw_is_its_bottleneck(m, n, g, bi, nics, nic):
    time_s = t.flat_ring_allreduce_time(m, n, g, bi, nics, nic)
    busbw = c.bus_bandwidth("all_reduce", m, n * g, time_s)
    assert busbw == pytest.approx(min(bi, nics * nic), rel=1e-9)
