"""Physical invariants of the realistic model, over an exhaustive grid.

For every cluster preset, 1 to 64 nodes (where the preset has a network), 2 to its GPUs per
NVLink domain, every op and 8 B to 16 GiB on a x2 grid:

- busbw never exceeds the hardware bound of the chosen algorithm
  (:func:`costmodel.realistic.busbw_bound_bytes_per_s`: NIC aggregate across nodes, NVLink per
  direction inside, the NVLS bound);
- time never falls when the size grows, and busbw never drops more than 2 % between
  neighbouring sizes;
- at a fixed per-rank size, no op's time falls when nodes are added (every op, every size;
  multi-rack GB200 NVL72 included: a rack is one NVLink domain, a "node" here).

The grid is evaluated with one vectorised call per (preset, op); hypothesis adds random sizes
and node counts through the public ``predict_collective``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import presets
from costmodel import tables as T
from costmodel.nccl import OPS
from costmodel.predict import predict_collective
from costmodel.realistic import busbw_bound_bytes_per_s, realistic_rows

SIZES = 8.0 * 2.0 ** np.arange(32)  # 8 B .. 16 GiB
NODES = np.arange(1, 65)
PRESETS = presets.names("cluster")


def _grid(name: str):
    base = presets.cluster(name)
    nodes = NODES if base.nics_per_node > 0 else np.array([1])
    gpn = np.arange(2, base.gpus_per_node + 1)
    return base, nodes, gpn


def _bound(op, names, a_code, k, g, base):
    out = np.full(a_code.shape, np.inf)
    for i, a in enumerate(names):
        sel = a_code == i
        if a != "none" and sel.any():
            out[sel] = busbw_bound_bytes_per_s(
                op,
                a,
                k[sel],
                g[sel],
                base.intra_bandwidth_bytes_per_s,
                base.node_inter_bandwidth_bytes_per_s,
            )
    return out


@pytest.mark.parametrize("name", PRESETS)
def test_exhaustive_grid_has_no_violation(name):
    base, nodes, gpn = _grid(name)
    g3, k3, m3 = np.meshgrid(gpn, nodes, SIZES, indexing="ij")  # (gpn, nodes, sizes)
    bad = []
    for op in OPS:
        t, a, _, (a_names, _) = realistic_rows(op, m3, k3, g3, base)
        n = k3 * g3
        busbw = m3 / t * T.BUSBW_FACTOR[op](n)
        over = busbw > _bound(op, a_names, a, k3, g3, base) * (1 + 1e-9)
        if over.any():
            i = np.argwhere(over)[0]
            bad.append(f"{op}: {int(over.sum())} rows above the bound, first {tuple(i)}")
        dt = np.diff(t, axis=2)
        if (dt < -1e-15 * t[..., 1:]).any():
            bad.append(f"{op}: time falls with size at {int((dt < 0).sum())} rows")
        drop = busbw[..., 1:] < 0.98 * busbw[..., :-1]
        if drop.any():
            i = tuple(np.argwhere(drop)[0])
            bad.append(
                f"{op}: busbw drops > 2 % at {int(drop.sum())} rows, first gpn={gpn[i[0]]} "
                f"nodes={nodes[i[1]]} size={SIZES[i[2]]:.0f} "
                f"{a_names[a[i]]}->{a_names[a[i[0], i[1], i[2] + 1]]}"
            )
        if len(nodes) > 1:
            dn = np.diff(t, axis=1)
            if (dn < -1e-12 * t[:, 1:]).any():
                i = tuple(np.argwhere(dn < -1e-12 * t[:, 1:])[0])
                bad.append(
                    f"{op} time falls with nodes at {int((dn < 0).sum())} rows, first "
                    f"gpn={gpn[i[0]]} nodes={nodes[i[1]]}->{nodes[i[1]] + 1} size={SIZES[i[2]]:.0f}"
                )
    assert not bad, bad


def test_bound_catches_the_issue_case():
    """2 x 8 H100 over 8 x 200G NICs: NCCL's NVLS graph used to carry 40 GB/s per channel over
    25 GB/s NICs; the bound is 1.875 x 200 GB/s and the model now stays below it."""

    h = presets.cluster("dgx-h100")
    node = h.node.model_copy(
        update={"nic": h.node.nic.model_copy(update={"datasheet_bandwidth_bytes_per_s": 25e9})}
    )
    c = h.model_copy(update={"name": "h100-200g", "node": node, "nodes": 2})
    assert c.node_inter_bandwidth_bytes_per_s == pytest.approx(200e9)
    p = predict_collective("all_reduce", 2.0**33, c, nodes=2)
    bound = float(busbw_bound_bytes_per_s("all_reduce", p.algorithm, 2, 8, 450e9, 200e9))
    assert bound == pytest.approx(375e9)
    assert p.busbw_bytes_per_s <= bound


def test_bound_formulas_by_hand():
    """Hand-computed bounds (L = 450 GB/s NVLink per direction, B = 400 GB/s per node)."""
    L, B = 450e9, 400e9
    b = lambda op, a, k, g: float(busbw_bound_bytes_per_s(op, a, k, g, L, B))  # noqa: E731
    assert b("all_reduce", "ring", 1, 8) == L
    assert b("all_reduce", "nvls", 1, 4) == pytest.approx(2 * L * 3 / 5)  # 540 GB/s
    assert b("all_reduce", "ring", 4, 8) == B
    # hierarchical all-reduce on 4 nodes of 8: B (31/32) / (3/4)
    assert b("all_reduce", "tree", 4, 8) == pytest.approx(B * 31 / 32 * 4 / 3)
    # all-to-all on 2 nodes of 8: a node sends 8 M 8/16; busbw = 15/16 M / t
    assert b("all_to_all", "p2p", 2, 8) == pytest.approx(B * 15 / (8 * 8))
    assert b("broadcast", "ring", 3, 8) == B


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(PRESETS),
    op=st.sampled_from(OPS),
    size=st.floats(8.0, 2.0**34),
    nodes=st.integers(1, 64),
)
def test_random_points_keep_the_invariants(name, op, size, nodes):
    base = presets.cluster(name)
    if base.nics_per_node == 0:
        nodes = 1
    g = base.gpus_per_node
    p = predict_collective(op, np.array([size, 2 * size]), name, nodes=nodes)
    assert np.all(np.diff(p.time_s) >= 0)
    assert p.busbw_bytes_per_s[1] >= 0.98 * p.busbw_bytes_per_s[0]
    bound = busbw_bound_bytes_per_s(
        op,
        str(p.algorithm[0]),
        nodes,
        g,
        base.intra_bandwidth_bytes_per_s,
        base.node_inter_bandwidth_bytes_per_s,
    )
    assert p.busbw_bytes_per_s[0] <= bound * (1 + 1e-9)
    if base.nics_per_node > 0 and nodes < 64:
        q = predict_collective(op, size, name, nodes=nodes + 1)
        assert q.time_s >= p.time_s[0] * (1 - 1e-12)


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("dgx-h100", "broadcast"),
        ("dgx-h100", "reduce"),
        ("gb200-nvl72", "all_gather"),
        ("gb200-nvl72", "reduce_scatter"),
        ("gb200-nvl72", "broadcast"),
    ],
)
def test_adding_a_node_never_speeds_up_the_cases_that_did(name, op):
    """The cases that got up to 20 % faster from 1 to 2 nodes (racks) at >= 64 MiB before the
    single-node cap: the NIC-bound two-node Ring beat NCCL's quantised one-node Ring. Two nodes
    now take at least one node's time, and exactly it only where the cap binds."""
    m = 2.0 ** np.arange(26, 35)
    one = predict_collective(op, m, name, nodes=1).time_s
    two = predict_collective(op, m, name, nodes=2).time_s
    assert np.all(two >= one * (1 - 1e-12))
    assert np.any(np.isclose(two, one, rtol=1e-12))  # the cap binds here (it did not hold)
