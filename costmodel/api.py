r"""The public front of the textbook model: plain numbers or a :class:`~costmodel.hardware.Cluster`.

``cm.allreduce_time`` and ``cm.collective_time`` dispatch on what they are given:

- **numbers** (``ranks`` an integer, ``bandwidth_bytes_per_s`` a per-direction bandwidth): the
  flat alpha-beta model of :mod:`costmodel.collectives` (DESIGN 3.1), unchanged;
- **a Cluster** (or a cluster preset name) as ``ranks``, or a Cluster as
  ``bandwidth_bytes_per_s`` with ``ranks`` a GPU count: the two-level model of
  :mod:`costmodel.topology` (DESIGN 3.2) with the cluster's numbers: per-GPU intra-node
  bandwidth, the node's NICs, per-hop latencies, each bandwidth times its link's measured
  efficiency factor (e.g. 0.96 for NDR: 48 of 50 GB/s, nccl-tests #290/#319).

With a Cluster, all-reduce algorithms are

- ``"ring"``: one flat ring over all GPUs, :func:`topology.flat_ring_allreduce_time`; across
  nodes its bandwidth is :math:`\min(B_{intra}, k B_{NIC})`, since each ring crosses each node
  boundary once per channel (NCCL's Ring);
- ``"hierarchical"`` / ``"hierarchical_pipelined"``: intra-node reduce-scatter, inter-node
  all-reduce of ``M/g`` per GPU over its NIC share, intra-node all-gather, summed or
  overlapped (:func:`topology.hierarchical_allreduce_time`), with in-network reduction when
  the cluster has IB SHARP;
- every other name of ``collectives.ALGORITHMS["all_reduce"]``: the flat formula over all
  ranks at the bottleneck per-GPU bandwidth (the intra link inside one node; across nodes
  ``min(intra, NIC share per GPU)``, or the ring bandwidth above for ring-like algorithms).

Other ops use the flat formula the same way. This is the textbook model: for NCCL's own
algorithm and protocol choice use :func:`costmodel.predict.predict_collective`.

>>> import costmodel as cm
>>> round(cm.allreduce_time(14e9, 64, 50e9), 3)   # the lesson's 7B gradients, 64 GPUs, 50 GB/s
0.551
>>> c = cm.cluster("dgx-h100", nodes=2)            # 2 x 8 H100, 8 x 400G NDR per node
>>> t = cm.allreduce_time(8 * 2**30, c)
>>> round(cm.bus_bandwidth("all_reduce", 8 * 2**30, c.ranks, t) / 1e9)   # NIC-limited: 8 x 48 GB/s, less latency
383
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from . import collectives, topology
from .hardware import Cluster

__all__ = ["allreduce_time", "collective_time", "CLUSTER_ALLREDUCE_ALGORITHMS", "resolve_cluster"]

#: all-reduce algorithms that exist only with a Cluster -> topology mode
CLUSTER_ALLREDUCE_ALGORITHMS: dict[str, str] = {
    "hierarchical": "serial",
    "hierarchical_pipelined": "pipelined",
}
# algorithms whose traffic crosses each node boundary once per channel (ring-like)
_RING_LIKE = ("ring", "chain")


def _is_cluster_like(x: object) -> bool:
    return isinstance(x, Cluster | str)


def resolve_cluster(ranks: object, bandwidth_bytes_per_s: object = None) -> Cluster | None:
    """The Cluster a call refers to, or None for plain numbers.

    ``ranks`` may be a Cluster or a cluster preset name; or ``bandwidth_bytes_per_s`` a Cluster
    (or name) and ``ranks`` a GPU count: a multiple of the node size gives that many nodes, a
    count below one node gives a slice of one node.

    >>> resolve_cluster("dgx-h100").ranks, resolve_cluster(32, "dgx-h100").nodes
    (8, 4)
    >>> resolve_cluster(4, "dgx-h100").gpus_per_node
    4
    >>> resolve_cluster(8, 50e9) is None
    True
    """
    from .presets import cluster as _load

    if _is_cluster_like(ranks):
        if bandwidth_bytes_per_s is not None:
            raise ValueError(
                f"bandwidth_bytes_per_s: {bandwidth_bytes_per_s!r} given with a cluster as ranks; "
                "allowed: None (the bandwidths come from the cluster)"
            )
        return ranks if isinstance(ranks, Cluster) else _load(ranks)
    if not _is_cluster_like(bandwidth_bytes_per_s):
        return None
    c = (
        bandwidth_bytes_per_s
        if isinstance(bandwidth_bytes_per_s, Cluster)
        else _load(bandwidth_bytes_per_s)
    )
    if not isinstance(ranks, numbers.Integral) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError(
            f"ranks: {ranks!r} with a cluster as bandwidth; allowed: one whole GPU count >= 1"
        )
    g = c.gpus_per_node
    if ranks % g == 0:
        return c.with_nodes(int(ranks) // g)
    if ranks < g:
        return c.with_nodes(1).with_gpus_per_node(int(ranks))
    raise ValueError(
        f"ranks: {ranks} GPUs do not fill whole nodes of {c.name!r} ({g} GPUs per node); "
        f"allowed: fewer than {g}, or a multiple of {g}"
    )


def _flat_numbers(c: Cluster, algorithm: str) -> tuple[float, float]:
    """(bandwidth, latency) of the whole cluster seen as one flat group of ranks."""
    intra = c.effective_intra_bandwidth_bytes_per_s
    if c.nodes == 1:
        return intra, c.intra_latency_s
    nic = c.node.nic
    assert nic is not None  # Cluster validation: nodes > 1 needs a network
    if algorithm in _RING_LIKE:
        bw = float(
            topology.flat_ring_bandwidth(
                c.nodes,
                c.gpus_per_node,
                intra,
                c.nics_per_node,
                nic.effective_bandwidth_bytes_per_s,
            )
        )
    else:
        share = c.effective_inter_bandwidth_bytes_per_s
        bw = min(intra, share) if c.gpus_per_node > 1 else share
    latency = (
        max(c.intra_latency_s, c.inter_latency_s) if c.gpus_per_node > 1 else c.inter_latency_s
    )
    return bw, latency


def _cluster_time(
    op: str, message_bytes: ArrayLike, c: Cluster, algorithm: str
) -> float | np.ndarray:
    if op == "all_reduce" and algorithm in CLUSTER_ALLREDUCE_ALGORITHMS:
        return topology.hierarchical_allreduce_time(
            message_bytes,
            c.nodes,
            c.gpus_per_node,
            c.effective_intra_bandwidth_bytes_per_s,
            c.effective_inter_bandwidth_bytes_per_s,
            c.intra_latency_s,
            c.inter_latency_s,
            mode=CLUSTER_ALLREDUCE_ALGORITHMS[algorithm],  # type: ignore[arg-type]
            in_network_reduction=c.sharp,
        )
    if algorithm in CLUSTER_ALLREDUCE_ALGORITHMS:
        raise ValueError(
            f"algorithm: {algorithm!r} is an all-reduce algorithm; allowed for {op!r}: "
            f"{', '.join(collectives.ALGORITHMS[op])}"
        )
    if algorithm == "nvls" and not (c.nvls and c.nodes == 1):
        raise ValueError(
            f"algorithm: 'nvls' needs in-switch reduction inside one node; cluster {c.name!r} has "
            f"nvls={c.nvls} and nodes={c.nodes}; allowed: ring, hierarchical, tree, ..."
        )
    if op == "all_reduce" and algorithm == "ring":
        nic = c.node.nic
        return topology.flat_ring_allreduce_time(
            message_bytes,
            c.nodes,
            c.gpus_per_node,
            c.effective_intra_bandwidth_bytes_per_s,
            c.nics_per_node,
            0.0 if nic is None else nic.effective_bandwidth_bytes_per_s,
            c.intra_latency_s,
            c.inter_latency_s,
        )
    bw, latency = _flat_numbers(c, algorithm)
    return collectives.collective_time(op, message_bytes, c.ranks, bw, latency, algorithm)


def collective_time(
    op: str,
    message_bytes: ArrayLike,
    ranks: ArrayLike | Cluster | str,
    bandwidth_bytes_per_s: ArrayLike | Cluster | str | None = None,
    latency_s: ArrayLike = 0.0,
    algorithm: str = "ring",
) -> float | np.ndarray:
    r"""Time of one collective [s], from plain numbers or from a Cluster.

    Parameters
    ----------
    op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"}
    message_bytes : array_like
        Per-rank buffer ``M`` as nccl-tests prints it [B].
    ranks : int, array_like, Cluster or str
        Number of ranks ``N``, or a Cluster / cluster preset name (then leave
        ``bandwidth_bytes_per_s`` and ``latency_s`` out).
    bandwidth_bytes_per_s : array_like, Cluster or str, optional
        Per-direction bandwidth ``B`` [B/s]; or a Cluster, with ``ranks`` a GPU count.
    latency_s : array_like
        Latency per step ``alpha`` [s] (plain numbers only; a Cluster brings its own).
    algorithm : str
        A name of ``collectives.ALGORITHMS[op]``; with a Cluster also ``"hierarchical"`` and
        ``"hierarchical_pipelined"`` for all-reduce.

    Returns
    -------
    float or ndarray
        Seconds; see :mod:`costmodel.collectives` (numbers) and the module notes (Cluster).

    Examples
    --------
    >>> collective_time("all_gather", 1e9, 4, 100e9)   # (N-1)/N M / B = 0.75 GB at 100 GB/s
    0.0075
    """
    c = resolve_cluster(ranks, bandwidth_bytes_per_s)
    if c is None:
        if bandwidth_bytes_per_s is None:
            raise ValueError(
                "bandwidth_bytes_per_s: required when ranks is a number; allowed: a per-direction "
                "bandwidth in B/s, or pass a Cluster (cm.cluster('dgx-h100', nodes=2)) as ranks"
            )
        return collectives.collective_time(
            op, message_bytes, ranks, bandwidth_bytes_per_s, latency_s, algorithm
        )
    if np.any(np.asarray(latency_s) != 0.0):
        raise ValueError(
            f"latency_s: {latency_s!r} given with a cluster; allowed: 0.0 (the cluster's links "
            "carry their per-hop latencies)"
        )
    if op not in collectives.OPS:
        raise ValueError(f"op: unknown collective {op!r}; allowed: {', '.join(collectives.OPS)}")
    return _cluster_time(op, message_bytes, c, algorithm)


def allreduce_time(
    message_bytes: ArrayLike,
    ranks: ArrayLike | Cluster | str,
    bandwidth_bytes_per_s: ArrayLike | Cluster | str | None = None,
    latency_s: ArrayLike = 0.0,
    algorithm: str = "ring",
) -> float | np.ndarray:
    r"""All-reduce time [s]: ``collective_time("all_reduce", ...)``.

    Ring with numbers: :math:`t = 2(N-1)\alpha + 2\frac{N-1}{N} M / B` (Patarasuk & Yuan 2009).
    With a Cluster of ``n`` nodes of ``g`` GPUs the ring runs at
    :math:`\min(B_{intra}, k B_{NIC})` across nodes (DESIGN 3.2).

    >>> allreduce_time(500e6, 8, 900e9)     # the lesson's NVLink4 example (900 GB/s as given)
    0.000972...
    >>> allreduce_time(500e6, 8, 450e9)     # per direction, as the datasheet means it
    0.001944...
    """
    return collective_time(
        "all_reduce", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, algorithm
    )
