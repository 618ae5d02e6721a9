"""Bus and algorithm bandwidth (nccl_model.md 1.4) and latency (1.5) of an
(algorithm, protocol) pair on given topology inputs."""

from __future__ import annotations

import math

from .. import tables as T
from .names import PROTOCOLS, _log2i
from .search import Graph, TopologyInputs


def _nsteps(op: str, n: int) -> int:
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("reduce_scatter", "all_gather"):
        return n - 1
    return n  # broadcast, reduce


def _candidates(op: str) -> tuple[str, ...]:
    """Algorithms NCCL's table holds for an op (tuning.cc l.294-304: ``tables.NCCL_OP_ALGORITHMS``;
    all-to-all, which has no table entry, is read as all-reduce's row here as before: the
    callers answer all-to-all as p2p before they ask)."""
    return T.NCCL_OP_ALGORITHMS.get(op, T.NCCL_OP_ALGORITHMS["all_reduce"])


def _graph_for(algo: str, topo: TopologyInputs) -> Graph | None:
    if algo in ("nvls", "nvls_tree"):
        return topo.nvls
    if algo in ("tree", "collnet_direct", "collnet_chain"):
        return topo.tree
    return topo.ring


def bus_bandwidth_gbs(op: str, algorithm: str, protocol: str, topo: TopologyInputs) -> float:
    r"""NCCL's bus bandwidth for (op, algorithm, protocol), GB/s; 0 where NCCL has none.

    ``busBw = nCh x bw`` with the protocol refinements of tuning.cc l.324-350 (nccl_model.md
    1.4): Ring LL min(llMax, 0.5 busBw); Ring LL128 min(0.92 busBw, nCh x cap); Tree x0.92
    capped, LL /3.8, LL128 x7/9 (one node) or x120/128; NVLS 2 x eff x bwIntra (nCh-1)/nCh
    against bwInter; PAT x0.75; CollNetDirect divided by the GPU:NIC fan-in.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> [round(bus_bandwidth_gbs("all_reduce", "ring", p, t), 1) for p in PROTOCOLS]
    [141.0, 331.2, 360.0]
    >>> round(bus_bandwidth_gbs("all_reduce", "nvls", "simple", t), 1)
    476.0
    """
    g = _graph_for(algorithm, topo)
    if g is None or g.n_channels < 1:
        return 0.0
    if algorithm not in _candidates(op):
        return 0.0
    if algorithm in ("nvls", "nvls_tree", "pat") and protocol != "simple":
        return 0.0
    if algorithm.startswith("collnet") and protocol != "simple":
        return 0.0
    nodes, ppn, cc = topo.nodes, topo.gpus_per_node, topo.cc
    idx2 = nodes - 1 if nodes <= 2 else 2
    idx1 = cc if nodes == 1 else (1 if topo.cpu_vendor == "amd" else 0)
    ll_max = T.NCCL_LL_MAX_BW_GBS[idx1][idx2]
    collnet = algorithm.startswith("collnet")
    bw = g.bw_intra_gbs if (nodes <= 2 or collnet) else g.bw_inter_gbs
    nch = g.n_channels
    if algorithm in ("nvls", "nvls_tree"):
        if nch < 2:
            return 0.0
        intra = g.bw_intra_gbs * T.NCCL_NVLS_EFFICIENCY[cc] * (nch - 1) / nch
        intra *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
        inter = g.bw_inter_gbs * (2.0 if (nodes <= 2 and algorithm == "nvls_tree") else 1.0)
        cap = T.NCCL_PER_CH_MAX_NVLS_TREE_BW_GBS[cc][idx2] if algorithm == "nvls_tree" else math.inf
        bw = min(intra, inter, cap)
    bus = nch * bw
    if algorithm == "ring" and protocol == "ll":
        bus = min(ll_max, T.NCCL_RING_LL_FACTOR * bus)
    if algorithm == "ring" and protocol == "ll128":
        bus = min(
            T.NCCL_RING_LL128_FACTOR * bus, nch * T.NCCL_PER_CH_MAX_RING_LL128_BW_GBS[cc][idx2]
        )
    if algorithm == "tree" and op == "all_reduce":
        bus = min(T.NCCL_TREE_FACTOR * bus, nch * T.NCCL_PER_CH_MAX_TREE_BW_GBS[cc][idx2])
    if algorithm == "tree" and protocol == "ll":
        bus = min(bus / T.NCCL_TREE_LL_DIVISOR, ll_max)
    if algorithm == "tree" and protocol == "ll128":
        f = T.NCCL_TREE_LL128_INTRA_FACTOR if nodes == 1 else T.NCCL_TREE_LL128_INTER_FACTOR
        bus = min(bus * f, nch * T.NCCL_PER_CH_MAX_TREE_LL128_BW_GBS[cc][idx2])
    if algorithm == "pat":
        bus *= T.NCCL_PAT_FACTOR
    if algorithm == "collnet_direct":
        if op in ("reduce_scatter", "all_gather"):
            bus = ppn * min(g.bw_intra_gbs, T.NCCL_COLLNET_RSAG_INTER_FACTOR * g.bw_inter_gbs)
        else:
            f = ppn / nch
            f -= (f - 1) / 2
            bus /= max(f, 1e-9) if f > 0 else 1.0
            if topo.compute_capability >= 9.0:
                bus *= T.NCCL_COLLNET_DIRECT_SM90_FACTOR
    return float(bus)


def algorithm_bandwidth_gbs(op: str, algorithm: str, protocol: str, topo: TopologyInputs) -> float:
    r"""NCCL's algorithm bandwidth (bytes of the op per second, GB/s); 0 where unavailable.

    ``algbw = busBw x nRanks/nsteps`` for Ring, NVLS, NVLSTree; ``busBw / 2`` for Tree and
    CollNet; no conversion for non-ring reduce-scatter/all-gather (tuning.cc l.377-382).

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> round(algorithm_bandwidth_gbs("all_reduce", "ring", "simple", t), 1)
    205.7
    >>> round(algorithm_bandwidth_gbs("all_gather", "nvls", "simple", t), 1)
    208.2
    """
    bus = bus_bandwidth_gbs(op, algorithm, protocol, topo)
    if bus <= 0:
        return 0.0
    if op in ("reduce_scatter", "all_gather") and algorithm != "ring":
        return bus
    if algorithm in ("ring", "nvls", "nvls_tree"):
        return bus * topo.ranks / _nsteps(op, topo.ranks)
    return bus * T.NCCL_TREE_BUS_TO_ALG_RATIO


def latency_us(op: str, algorithm: str, protocol: str, topo: TopologyInputs) -> float:
    r"""NCCL's latency for (op, algorithm, protocol), microseconds (tuning.cc l.384-435).

    Ring: base + (nsteps - nInterSteps) x intraLat + nInterSteps x interLat; Tree: base +
    2((ppn - 1) intraLat + log2(nNodes) interLat); NVLS: intraLat (+ interLat on several
    nodes); NVLSTree: intraLat + 2 log2(nNodes) interLat; broadcast/reduce: base + one hop.
    The last is NCCL's figure for ranking algorithms (broadcast and reduce run Ring only), not
    the time of a chain of nRanks - 1 hops: the ``nccl-table`` baseline keeps it, the ``nccl``
    model charges :func:`ring_chain_latency_us`.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> [round(latency_us("all_reduce", a, "simple", t), 1) for a in ("ring", "tree", "nvls")]
    [56.0, 64.4, 25.0]
    """
    a, p = algorithm, PROTOCOLS.index(protocol)
    nodes, n, ppn = topo.nodes, topo.ranks, topo.gpus_per_node
    nsteps = _nsteps(op, n)
    lat = T.NCCL_BASE_LATENCY_US[a][p]
    intra = T.NCCL_HW_LATENCY_US[topo.intra_type][a][p]
    net_algo = "tree" if ppn == 1 else a
    inter = T.NCCL_HW_LATENCY_US["net"][net_algo][p] + topo.latency_inter_us
    if protocol == "simple":
        inter += topo.latency_inter_us
    if a == "ring":
        if op in ("broadcast", "reduce"):
            hw = topo.intra_type if nodes == 1 else "net"
            return lat + T.NCCL_HW_LATENCY_US[hw]["ring"][p]
        overhead = 0.0
        if nodes > 1:
            overhead = T.NCCL_NET_OVERHEAD_US[topo.cpu_vendor]
            if protocol == "simple":
                overhead *= T.NCCL_NET_OVERHEAD_SIMPLE_MULTIPLIER
        intra = max(intra, overhead)
        n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if op == "all_reduce" else nodes - 1)
        return lat + (nsteps - n_inter) * intra + n_inter * inter
    if a == "tree":
        return lat + 2 * ((ppn - 1) * intra + _log2i(nodes) * inter)
    if a == "collnet_direct":
        return lat + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * T.NCCL_COLLNET_ARITY_US) + inter
    if a == "collnet_chain":
        return lat + 2 * (ppn - 1) * intra + inter
    if a == "nvls":
        return intra + (inter if nodes > 1 else 0.0)
    if a == "nvls_tree":
        return lat + intra + 2 * _log2i(nodes) * inter
    # pat
    return lat + _log2i(nodes) * (inter / T.NCCL_PAT_INTER_DIVISOR) + n * T.NCCL_PAT_RANK_US


def ring_chain_latency_us(protocol: str, topo: TopologyInputs) -> float:
    r"""Latency of a ring broadcast or reduce as a pipelined chain, microseconds.

    NCCL runs broadcast and reduce as a chain along its ring (``src/device/broadcast.h``,
    ``reduce.h``: each rank receives a chunk from its predecessor and forwards it), so the
    first byte reaches the last rank after :math:`n - 1` hops, :math:`k - 1` of them between
    nodes (the ring enters and leaves each node once) and :math:`n - k` over NVLink or PCI:

    .. math:: \ell = \ell_\mathrm{base} + (n - k)\,\ell_\mathrm{intra}
              + (k - 1)\,\ell_\mathrm{inter}

    the same hops, at the same per-hop constants (tuning.cc l.384-410), as NCCL's ring
    all-gather, whose latency it is (:func:`latency_us`). NCCL's table charges base + one hop
    for broadcast and reduce, a figure for ranking algorithms that does not grow with the
    ranks. k nodes of ppn GPUs: n = k ppn. The ``nccl`` model evaluates the same chain with
    the node count an array (``costmodel.realistic._latency_us``, ``chain=True``).

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=2,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> ring_chain_latency_us("ll", t), latency_us("broadcast", "ring", "ll", t)  # one hop
    (7.2, 7.2)
    >>> t = topology_inputs(compute_capability=9.0, nodes=4, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True,
    ...                     nics_per_node=8, nic_bandwidth_bytes_per_s=50e9)
    >>> round(ring_chain_latency_us("ll", t), 1)  # 6.6 + 28 x 1.0 + 3 x 2.7
    42.7
    """
    return latency_us("all_gather", "ring", protocol, topo)
