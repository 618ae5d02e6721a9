r"""All-reduce across a two-level cluster: GPUs in nodes, nodes on a fabric (DESIGN.md section 3.2).

A cluster is ``nodes x gpus_per_node`` GPUs. Inside a node every GPU has an intra-node link
(NVLink/NVSwitch or PCIe) of ``intra_bandwidth_bytes_per_s`` per direction; a node has
``nics_per_node`` NICs of ``nic_bandwidth_bytes_per_s`` each, so a GPU's share of the fabric is
``nics_per_node x nic_bandwidth / gpus_per_node``.

Three compositions, built from the textbook rows of :mod:`costmodel.collectives`:

- **hierarchical**: ring reduce-scatter inside each node, ring all-reduce of ``M/g`` across nodes
  (each GPU with its rank-mates of the other nodes, over its own share of the NICs), ring
  all-gather inside each node; ``serial`` sums the phases, ``pipelined`` takes
  ``max(t_RS + t_AG, t_AR)`` (chunks stream through the phases, so the inter-node all-reduce
  overlaps the intra-node work, whose reduce-scatter and all-gather share the node's links);
- **in-network reduction** (IB SHARP / CollNet): the switches reduce, so in the inter-node phase
  each GPU sends its shard ``M/g`` up the aggregation tree once and receives the reduced shard
  once (full duplex: ``M/g`` per direction) instead of the ring's ``2(n-1)/n x M/g``, in one
  latency step: about half the ring's bytes on many nodes (``n / (2(n-1))``), the same bytes on
  two (a switch cannot reduce what a node has not sent it: busbw <= 2 B (N-1)/N,
  :func:`costmodel.realistic.busbw_bound_bytes_per_s`);
- **flat ring** over all ``N = nodes x g`` GPUs: every step of the ring crosses each node
  boundary once per channel, and NCCL runs one channel per NIC, so the ring's per-rank bandwidth
  is ``min(intra, nics_per_node x nic_bandwidth)``, not the per-GPU NIC share.

References
----------
NVIDIA/nccl-tests issue #309 (maintainer: "With 8 400 Gbps NICs your peak would be at 400 GB/s"
for a 2 x 8 H100 ring); R. Thakur, R. Rabenseifner, W. Gropp, IJHPCA 19(1), 2005;
R. L. Graham et al., "Scalable Hierarchical Aggregation Protocol (SHArP)", COMHPC 2016.

>>> round(flat_ring_allreduce_time(8e9, 2, 8, 450e9, 8, 50e9) * 1e3, 2)   # 2x8 H100, 8x NDR: 400 GB/s busbw
37.5
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._checks import finite_result, flag, named_shapes
from .collectives import FloatOrArray, collective_time
from .collectives._inputs import (
    _check_scalar_limited,
    _check_scalar_ranks,
    _limited,
    _out,
    _ranks,
    _ranks_limit,
    _scalars,
)
from .collectives.rows import _row, _row_time_scalar
from .units import choice_name

Mode = Literal["serial", "pipelined"]
MODES: tuple[str, ...] = ("serial", "pipelined")

_RING = {op: _row(op, "ring") for op in ("all_reduce", "reduce_scatter", "all_gather")}

PHASES: tuple[str, ...] = ("intra_reduce_scatter_s", "inter_allreduce_s", "intra_all_gather_s")


def _scalar_flat_ranks(nodes: float, gpus_per_node: float) -> None:
    """A flat ring's ``nodes x gpus_per_node`` ranks within the ranks' limit (1..1e9, the ranks of
    every command): each count holds its own range (1,000,000 nodes of 1,024 GPUs) but
    the ring over both may not; refused naming ``nodes``, the count the bound is said for."""
    if nodes * gpus_per_node > _ranks_limit().hi:
        raise ValueError(_flat_ranks_refusal(nodes, gpus_per_node, repr(float(nodes))))


def _flat_ranks(nodes: np.ndarray, gpus_per_node: np.ndarray) -> None:
    """:func:`_scalar_flat_ranks` element-wise, the first element past it named."""
    bad = nodes * gpus_per_node > _ranks_limit().hi
    if bad.any():
        n_b, g_b = np.broadcast_arrays(nodes, gpus_per_node)
        i = int(np.flatnonzero(bad.ravel())[0])
        n_i, g_i = float(n_b.ravel()[i]), float(g_b.ravel()[i])
        where = f" (element {i} of {bad.size})" if bad.ndim else ""
        raise ValueError(_flat_ranks_refusal(n_i, g_i, repr(n_i) + where))


def _flat_ranks_refusal(nodes: float, gpus_per_node: float, got: str) -> str:
    limit = _ranks_limit()
    most = int(limit.hi // gpus_per_node)
    return (
        f"nodes: must be at most {most:,} with `gpus_per_node` {gpus_per_node:g} (a flat ring "
        f"of at most {limit.hi:,.0f} ranks, nodes x GPUs per node), got {got}"
    )


def _scalar_needs_fabric(nodes: float, bandwidth: float, what: str) -> None:
    if nodes > 1.0 and not bandwidth > 0.0:
        raise ValueError(
            f"{what}: must be > 0 B/s when nodes > 1 (a collective across nodes needs "
            f"a fabric), got {float(bandwidth)!r}"
        )


def _needs_fabric(nodes: np.ndarray, bandwidth: np.ndarray, what: str) -> None:
    bad = (nodes > 1.0) & ~(bandwidth > 0.0)
    if bad.any():
        raise ValueError(
            f"{what}: must be > 0 B/s when nodes > 1 (a collective across nodes needs "
            f"a fabric), got {float(np.broadcast_to(bandwidth, bad.shape)[bad][0])!r}"
        )


@named_shapes
def per_gpu_inter_bandwidth(
    nics_per_node: ArrayLike, nic_bandwidth_bytes_per_s: ArrayLike, gpus_per_node: ArrayLike
) -> FloatOrArray:
    r"""Each GPU's share of its node's NICs [B/s]: ``nics x nic_bandwidth / gpus_per_node``.

    >>> per_gpu_inter_bandwidth(8, 50e9, 8) / 1e9    # HGX H100: one 400G NDR NIC per GPU
    50.0
    >>> per_gpu_inter_bandwidth(32, 12.5e9, 8) / 1e9   # AWS p5: 32 x 100G EFA for 8 GPUs
    50.0
    """
    scalars = _scalars(nics_per_node, nic_bandwidth_bytes_per_s, gpus_per_node)
    if scalars:
        nics_s, bw_s, g_s = scalars
        k = _check_scalar_ranks(nics_s, "nics_per_node")
        nic_bw = _check_scalar_limited("nic_bandwidth_bytes_per_s", bw_s, "bandwidth")
        return k * nic_bw / _check_scalar_ranks(g_s, "gpus_per_node")
    nics = _ranks(nics_per_node, "nics_per_node")
    bw = _limited("nic_bandwidth_bytes_per_s", nic_bandwidth_bytes_per_s, "bandwidth")
    g = _ranks(gpus_per_node, "gpus_per_node")
    return _out(nics * bw / g)


@finite_result("time")
def hierarchical_allreduce_phases(
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bandwidth_bytes_per_s: ArrayLike,
    inter_bandwidth_bytes_per_s: ArrayLike,
    intra_latency_s: ArrayLike = 0.0,
    inter_latency_s: ArrayLike = 0.0,
    in_network_reduction: bool | ArrayLike = False,
) -> dict[str, FloatOrArray]:
    r"""Times of the three phases of a hierarchical all-reduce [s].

    Parameters
    ----------
    message_bytes : array_like
        Per-GPU buffer ``M`` [B].
    nodes, gpus_per_node : array_like
        ``n`` nodes of ``g`` GPUs: whole numbers in 1..1,000,000 and 1..1,024, the ranges of
        every command and of ``cm.cluster`` (:data:`costmodel._limits.LIMITS`).
    intra_bandwidth_bytes_per_s : array_like
        Per-GPU, per-direction intra-node bandwidth [B/s].
    inter_bandwidth_bytes_per_s : array_like
        Per-GPU share of the node's NICs, per direction [B/s] (see
        :func:`per_gpu_inter_bandwidth`); may be 0 only where ``nodes == 1``.
    intra_latency_s, inter_latency_s : array_like
        Latency per step inside a node and across nodes [s].
    in_network_reduction : bool or array_like of bool
        The fabric's switches reduce (IB SHARP / CollNet).

    Sizes, bandwidths, latencies and counts are held to the ranges of every command
    (:mod:`costmodel._limits`: 0..2**44 B, 1 MB/s..1 PB/s, 0..1 s, 1..1,000,000 nodes of
    1..1,024 GPUs; ``nics_per_node`` 0..1,024), element-wise for arrays: a bandwidth typed in
    GB/s (``50``) is refused naming it, not priced; a flat ring's ``nodes x gpus_per_node``
    is at most 1e9 ranks, as every command's ``ranks``.

    Returns
    -------
    dict
        ``intra_reduce_scatter_s``: :math:`(g-1)\alpha_i + \frac{g-1}{g}M/B_i`;
        ``inter_allreduce_s``: ring :math:`2(n-1)\alpha_e + 2\frac{n-1}{n}\frac{M}{g}/B_e`, or with
        in-network reduction :math:`\alpha_e + \frac{M}{g}/B_e` (each node sends its shard
        once and receives the result once: Graham et al. 2016; ``n/(2(n-1))`` of the ring's
        bytes, about half on many nodes);
        ``intra_all_gather_s``: :math:`(g-1)\alpha_i + \frac{g-1}{g}M/B_i`.
        Each phase is 0 s for one rank in it and for ``M = 0`` (an empty message is not sent
        and pays no latency), element-wise for arrays.

    Examples
    --------
    >>> p = hierarchical_allreduce_phases(1e9, 2, 8, 450e9, 50e9)
    >>> {k: round(v * 1e3, 3) for k, v in p.items()}    # ms
    {'intra_reduce_scatter_s': 1.944, 'inter_allreduce_s': 2.5, 'intra_all_gather_s': 1.944}
    """
    if type(in_network_reduction) is bool:
        scalars = _scalars(
            message_bytes,
            nodes,
            gpus_per_node,
            intra_bandwidth_bytes_per_s,
            inter_bandwidth_bytes_per_s,
            intra_latency_s,
            inter_latency_s,
        )
        if scalars:
            m_s, n_s, g_s, bw_i_s, bw_e_s, a_i_s, a_e_s = scalars
            return _phases_scalar(m_s, n_s, g_s, bw_i_s, bw_e_s, a_i_s, a_e_s, in_network_reduction)
    m = _limited("message_bytes", message_bytes, "message")
    n = _ranks(nodes, "nodes")
    g = _ranks(gpus_per_node, "gpus_per_node")
    intra_bw = _limited("intra_bandwidth_bytes_per_s", intra_bandwidth_bytes_per_s, "bandwidth")
    inter_bw = _limited("inter_bandwidth_bytes_per_s", inter_bandwidth_bytes_per_s, "fabric")
    _needs_fabric(n, inter_bw, "inter_bandwidth_bytes_per_s")
    a_i = _limited("intra_latency_s", intra_latency_s, "latency")
    a_e = _limited("inter_latency_s", inter_latency_s, "latency")
    sharp = np.asarray(flag("in_network_reduction", in_network_reduction), dtype=bool)

    intra = collective_time("reduce_scatter", m, g, intra_bw, a_i, "ring")
    shard = m / g
    # only nodes == 1 has 0, and gives 0 s: any rate in the ring's range stands in for it
    inter_bw_safe = np.where(inter_bw > 0.0, inter_bw, 1e9)
    ring = np.asarray(collective_time("all_reduce", shard, n, inter_bw_safe, a_e, "ring"))
    # nothing to reduce on one node or for an empty message: 0 s, no latency (as the rows)
    in_switch = np.where((n > 1.0) & (shard > 0.0), a_e + shard / inter_bw_safe, 0.0)
    inter = np.where(sharp, in_switch, ring)
    gather = collective_time("all_gather", m, g, intra_bw, a_i, "ring")
    return {
        "intra_reduce_scatter_s": _out(np.asarray(intra) + 0.0 * inter),
        "inter_allreduce_s": _out(inter + 0.0 * np.asarray(intra)),
        "intra_all_gather_s": _out(np.asarray(gather) + 0.0 * inter),
    }


def _phases_scalar(
    message_bytes: float,
    nodes: float,
    gpus_per_node: float,
    intra_bandwidth: float,
    inter_bandwidth: float,
    intra_latency: float,
    inter_latency: float,
    sharp: bool,
) -> dict[str, FloatOrArray]:
    """:func:`hierarchical_allreduce_phases` for Python scalars (same expressions, floats)."""
    m = _check_scalar_limited("message_bytes", message_bytes, "message")
    n = _check_scalar_ranks(nodes, "nodes")
    g = _check_scalar_ranks(gpus_per_node, "gpus_per_node")
    intra_bw = _check_scalar_limited("intra_bandwidth_bytes_per_s", intra_bandwidth, "bandwidth")
    inter_bw = _check_scalar_limited("inter_bandwidth_bytes_per_s", inter_bandwidth, "fabric")
    _scalar_needs_fabric(n, inter_bw, "inter_bandwidth_bytes_per_s")
    a_i = _check_scalar_limited("intra_latency_s", intra_latency, "latency")
    a_e = _check_scalar_limited("inter_latency_s", inter_latency, "latency")
    shard = m / g
    if n <= 1.0 or shard == 0.0:  # the shard, as the ring's row sees it: 0 B is 0 s
        inter = 0.0
    elif sharp:
        inter = a_e + shard / inter_bw  # sent once, received once (Graham et al. 2016)
    else:  # inputs checked above: the rows' scalar evaluator, as collective_time's fast path
        inter = _row_time_scalar(_RING["all_reduce"], shard, n, inter_bw, a_e)
    return {
        "intra_reduce_scatter_s": _row_time_scalar(_RING["reduce_scatter"], m, g, intra_bw, a_i),
        "inter_allreduce_s": inter,
        "intra_all_gather_s": _row_time_scalar(_RING["all_gather"], m, g, intra_bw, a_i),
    }


@finite_result("time")
def hierarchical_allreduce_time(
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bandwidth_bytes_per_s: ArrayLike,
    inter_bandwidth_bytes_per_s: ArrayLike,
    intra_latency_s: ArrayLike = 0.0,
    inter_latency_s: ArrayLike = 0.0,
    mode: Mode = "serial",
    in_network_reduction: bool | ArrayLike = False,
) -> FloatOrArray:
    r"""Hierarchical all-reduce time [s]: the phases of :func:`hierarchical_allreduce_phases`.

    ``mode="serial"``: :math:`t = t_{RS} + t_{AR} + t_{AG}` (one phase after the other);
    ``mode="pipelined"``: :math:`t = \max(t_{RS} + t_{AG},\ t_{AR})`: chunks stream through the
    phases so the inter-node all-reduce overlaps the intra-node work, but the intra-node
    reduce-scatter and all-gather share the same NVLink/PCIe links, so they add (on one node the
    pipelined and serial estimates are equal). Arguments as in :func:`hierarchical_allreduce_phases`.
    A 0-byte message takes 0 s (no latency term), element-wise for arrays.
    Phases: Thakur, Rabenseifner & Gropp 2005; in-network reduction: Graham et al. 2016 (SHArP).

    >>> round(hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9) * 1e3, 3)
    6.389
    >>> round(hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, mode="pipelined") * 1e3, 3)
    3.889
    """
    mode = choice_name(mode)  # "PIPELINED" is pipelined, as every choice is read
    if mode not in MODES:
        raise ValueError(f"mode: unknown mode {mode!r}; allowed: {', '.join(MODES)}")
    p = hierarchical_allreduce_phases(
        message_bytes,
        nodes,
        gpus_per_node,
        intra_bandwidth_bytes_per_s,
        inter_bandwidth_bytes_per_s,
        intra_latency_s,
        inter_latency_s,
        in_network_reduction,
    )
    if type(p["inter_allreduce_s"]) is float and type(p["intra_reduce_scatter_s"]) is float:
        rs, ar, ag = (p[k] for k in PHASES)
        return rs + ar + ag if mode == "serial" else max(rs + ag, ar)
    parts = [np.asarray(p[k]) for k in PHASES]
    if mode == "serial":
        return _out(parts[0] + parts[1] + parts[2])
    return _out(np.maximum(parts[0] + parts[2], parts[1]))


@finite_result("bandwidth")
def flat_ring_bandwidth(
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bandwidth_bytes_per_s: ArrayLike,
    nics_per_node: ArrayLike,
    nic_bandwidth_bytes_per_s: ArrayLike,
) -> FloatOrArray:
    r"""Per-rank bandwidth of one flat ring over ``nodes x g`` GPUs [B/s].

    One node: the intra-node link. Several nodes: :math:`\min(B_{intra}, k B_{NIC})` with ``k``
    NICs per node, since each channel's ring crosses each node boundary once and the channels
    spread over all NICs; with one GPU per node the intra link is not used: :math:`k B_{NIC}`.

    >>> flat_ring_bandwidth(2, 8, 450e9, 8, 50e9) / 1e9   # 2x8 H100, 8x 400G NDR (nccl-tests #309)
    400.0
    """
    scalars = _scalars(
        nodes, gpus_per_node, intra_bandwidth_bytes_per_s, nics_per_node, nic_bandwidth_bytes_per_s
    )
    if scalars:
        n_s, g_s, intra_s, nics_s, nic_bw_s = scalars
        return _flat_ring_bandwidth_scalar(n_s, g_s, intra_s, nics_s, nic_bw_s)
    n = _ranks(nodes, "nodes")
    g = _ranks(gpus_per_node, "gpus_per_node")
    intra = _limited("intra_bandwidth_bytes_per_s", intra_bandwidth_bytes_per_s, "bandwidth")
    nics = _ranks(nics_per_node, "nics_per_node")
    nic_bw = _limited("nic_bandwidth_bytes_per_s", nic_bandwidth_bytes_per_s, "fabric")
    fabric = nics * nic_bw
    _needs_fabric(n, fabric, "nics_per_node x nic_bandwidth_bytes_per_s")
    across = np.where(g > 1.0, np.minimum(intra, fabric), fabric)
    return _out(np.where(n > 1.0, across, intra))


def _flat_ring_bandwidth_scalar(
    nodes: float, gpus_per_node: float, intra_bandwidth: float, nics: float, nic_bandwidth: float
) -> float:
    """:func:`flat_ring_bandwidth` for Python scalars (same expressions, floats)."""
    n = _check_scalar_ranks(nodes, "nodes")
    g = _check_scalar_ranks(gpus_per_node, "gpus_per_node")
    intra = _check_scalar_limited("intra_bandwidth_bytes_per_s", intra_bandwidth, "bandwidth")
    k = _check_scalar_ranks(nics, "nics_per_node")
    nic_bw = _check_scalar_limited("nic_bandwidth_bytes_per_s", nic_bandwidth, "fabric")
    fabric = k * nic_bw
    _scalar_needs_fabric(n, fabric, "nics_per_node x nic_bandwidth_bytes_per_s")
    if n <= 1.0:
        return intra
    return min(intra, fabric) if g > 1.0 else fabric


@finite_result("time")
def flat_ring_allreduce_time(
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bandwidth_bytes_per_s: ArrayLike,
    nics_per_node: ArrayLike,
    nic_bandwidth_bytes_per_s: ArrayLike,
    intra_latency_s: ArrayLike = 0.0,
    inter_latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Ring all-reduce over all ``N = nodes x g`` GPUs as one flat ring [s].

    :math:`t = 2(N-1)\alpha + 2\frac{N-1}{N} M / B_{ring}` with :math:`B_{ring}` from
    :func:`flat_ring_bandwidth`; each step waits for its slowest hop, so
    :math:`\alpha = \max(\alpha_{intra}, \alpha_{inter})` across nodes (:math:`\alpha_{inter}`
    with one GPU per node, :math:`\alpha_{intra}` within one node). Ring: Patarasuk & Yuan
    2009. A 0-byte message takes 0 s (no latency term), element-wise for arrays.

    >>> flat_ring_allreduce_time(500e6, 8, 1, 450e9, 1, 50e9)   # 8 nodes x 1 GPU over NDR: 17.5 ms
    0.0175
    """
    scalars = _scalars(message_bytes, nodes, gpus_per_node, intra_latency_s, inter_latency_s)
    if scalars:
        m_s, n_s, g_s, a_i_s, a_e_s = scalars
        m1 = _check_scalar_limited("message_bytes", m_s, "message")
        bw1 = flat_ring_bandwidth(
            nodes,
            gpus_per_node,
            intra_bandwidth_bytes_per_s,
            nics_per_node,
            nic_bandwidth_bytes_per_s,
        )
        if type(bw1) is float:
            n1 = _check_scalar_ranks(n_s, "nodes")
            g1 = _check_scalar_ranks(g_s, "gpus_per_node")
            _scalar_flat_ranks(n1, g1)
            a_i1 = _check_scalar_limited("intra_latency_s", a_i_s, "latency")
            a_e1 = _check_scalar_limited("inter_latency_s", a_e_s, "latency")
            alpha1 = (max(a_i1, a_e1) if g1 > 1.0 else a_e1) if n1 > 1.0 else a_i1
            return collective_time("all_reduce", m1, n1 * g1, bw1, alpha1, "ring")
    m = _limited("message_bytes", message_bytes, "message")
    bw = np.asarray(
        flat_ring_bandwidth(
            nodes,
            gpus_per_node,
            intra_bandwidth_bytes_per_s,
            nics_per_node,
            nic_bandwidth_bytes_per_s,
        )
    )
    n = _ranks(nodes, "nodes")
    g = _ranks(gpus_per_node, "gpus_per_node")
    _flat_ranks(n, g)
    a_i = _limited("intra_latency_s", intra_latency_s, "latency")
    a_e = _limited("inter_latency_s", inter_latency_s, "latency")
    alpha = np.where(n > 1.0, np.where(g > 1.0, np.maximum(a_i, a_e), a_e), a_i)
    return collective_time("all_reduce", m, n * g, bw, alpha, "ring")
