"""The modelled time (nccl_model.md 1.6) and NCCL's choice of the fastest pair."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import tables as T
from .availability import candidates
from .bandwidth import algorithm_bandwidth_gbs, latency_us
from .names import _US, PROTOCOLS, check_op
from .search import TopologyInputs


def _sizes(message_bytes: ArrayLike) -> np.ndarray:
    m = np.asarray(message_bytes, dtype=float)
    if np.any(~np.isfinite(m)) or np.any(m < 0):
        raise ValueError(f"message_bytes: must be finite and >= 0 B, got {message_bytes!r}")
    return m


def tree_correction_factor(protocol: str, message_bytes: ArrayLike) -> np.ndarray:
    """treeCorrectionFactor[p][log2(nBytes/64)] (tuning.cc l.623-627); 1 outside the table.

    >>> float(tree_correction_factor("simple", 64 * 2**11))
    0.5
    """
    m = np.asarray(message_bytes, dtype=float)
    table = np.asarray(T.NCCL_TREE_CORRECTION_FACTOR[protocol])
    units = np.floor(m / 64.0)
    log_size = np.where(units >= 1, np.floor(np.log2(np.maximum(units, 1.0))), -1).astype(int)
    inside = (log_size >= 0) & (log_size < 23)
    return np.where(inside, table[np.clip(log_size, 0, len(table) - 1)], 1.0)


def tree_correction_applies(op: str, algorithm: str, topo: TopologyInputs) -> bool:
    """Whether NCCL multiplies this pair's bandwidth by treeCorrectionFactor (tuning.cc l.630-655).

    Tree all-reduce always; NVLSTree all-reduce from cc 10.0 on x86 hosts.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> [tree_correction_applies("all_reduce", a, t) for a in ("tree", "ring")]
    [True, False]
    """
    if op != "all_reduce":
        return False
    if algorithm == "tree":
        return True
    return (
        algorithm == "nvls_tree"
        and topo.compute_capability >= 10.0
        and topo.cpu_vendor in ("intel", "amd")
    )


def table_time_s(
    op: str,
    algorithm: str,
    protocol: str,
    message_bytes: ArrayLike,
    topo: TopologyInputs,
    *,
    algbw_gbs: float | None = None,
    bw_time_factor: float = 1.0,
) -> float | np.ndarray:
    r"""NCCL's modelled time (ncclTopoGetAlgoTime, tuning.cc l.630-655) in seconds.

    ``t = lat + M / (1000 bw)`` us with the Tree AllReduce size correction and the Ring
    Simple multi-node "plateau" latency factor (x1.4 from cc 8.0, x1.9 before).
    ``algbw_gbs`` replaces NCCL's algorithm bandwidth and ``bw_time_factor`` multiplies the
    bandwidth term (both for the corrections of :mod:`costmodel.corrections`; defaults: NCCL).

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> round(table_time_s("all_reduce", "ring", "ll", 2**20, t) * 1e6, 1)   # us
    28.0
    """
    m = _sizes(message_bytes)
    if op == "all_to_all":
        return p2p_time_s(m, topo, bw_time_factor=bw_time_factor)
    bw = algorithm_bandwidth_gbs(op, algorithm, protocol, topo) if algbw_gbs is None else algbw_gbs
    if bw <= 0:
        return np.inf if m.ndim == 0 else np.full_like(m, np.inf)
    lat = latency_us(op, algorithm, protocol, topo)
    bw_eff = np.full_like(m, bw)
    if tree_correction_applies(op, algorithm, topo):
        bw_eff = bw_eff * tree_correction_factor(protocol, m)
    lat_eff = np.full_like(m, lat)
    if op == "all_reduce" and algorithm == "ring" and protocol == "simple" and topo.nodes > 1:
        plateau = (
            T.NCCL_PLATEAU_FACTOR_PRE_SM80
            if topo.compute_capability < 8.0
            else T.NCCL_PLATEAU_FACTOR
        )
        per = m / (topo.comm_channels * topo.ranks)
        lat_eff = np.where(per >= T.NCCL_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK, lat * plateau, lat)
    t = (lat_eff + bw_time_factor * m / (1000.0 * bw_eff)) * _US
    return float(t) if m.ndim == 0 else t


def p2p_time_s(
    message_bytes: ArrayLike, topo: TopologyInputs, *, bw_time_factor: float = 1.0
) -> float | np.ndarray:
    r"""All-to-all as NCCL runs it (grouped send/recv, no tuning-table entry) **[inferred]**.

    Each rank sends M (ppn - 1)/N inside its node and M (N - ppn)/N across the network, both at
    once: ``t = lat + max(M (ppn-1)/N / B_intra, M (N-ppn)/N / B_inter)`` with B_intra the ring
    graph's nCh x bwIntra and B_inter the node's NICs shared by its GPUs; lat = Ring Simple
    base + one hop of each class used (nccl_model.md section 6 item 5).

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=7.5, nodes=1, gpus_per_node=2,
    ...                     intra_kind="pcie", p2p=False)
    >>> round(float(p2p_time_s(2**30, t)) * 1e3, 2)   # ms: 0.5 GiB each way at 12 GB/s
    44.75
    """
    m = _sizes(message_bytes)
    n, ppn = topo.ranks, topo.gpus_per_node
    if n < 2:
        return 0.0 if m.ndim == 0 else np.zeros_like(m)
    simple = PROTOCOLS.index("simple")
    lat = T.NCCL_BASE_LATENCY_US["ring"][simple]
    intra_bw = topo.ring.n_channels * topo.ring.bw_intra_gbs
    t_intra = m * (ppn - 1) / n / (1000.0 * intra_bw) if ppn > 1 else 0.0 * m
    if ppn > 1:
        lat += T.NCCL_HW_LATENCY_US[topo.intra_type]["ring"][simple]
    t_inter = 0.0 * m
    if topo.nodes > 1:
        inter_bw = topo.extra.get("inter_share_gbs", topo.ring.n_channels * topo.ring.bw_inter_gbs)
        t_inter = m * (n - ppn) / n / (1000.0 * inter_bw)
        lat += T.NCCL_HW_LATENCY_US["net"]["ring"][simple]
    t = (lat + bw_time_factor * np.maximum(t_intra, t_inter)) * _US
    return float(t) if m.ndim == 0 else t


def nccl_table_time(
    op: str,
    message_bytes: ArrayLike,
    topo: TopologyInputs,
    algorithm: str = "auto",
    protocol: str = "auto",
) -> tuple[float, str, str] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""NCCL's choice and modelled time: argmin over the allowed (algorithm, protocol) pairs.

    Returns ``(time_s, algorithm, protocol)``: arrays for array input (names as numpy str
    arrays), float and str for scalar input.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> time_s, algo, proto = nccl_table_time("all_reduce", [2**20, 2**21], t)
    >>> algo.tolist(), proto.tolist()      # LL up to 1 MiB, NVLS from 2 MiB (nccl-tests #309)
    (['ring', 'nvls'], ['ll', 'simple'])
    """
    check_op(op)
    m = _sizes(message_bytes)
    scalar = m.ndim == 0
    m1 = np.atleast_1d(m)
    pairs = candidates(op, topo, algorithm, protocol)
    times = np.stack([table_time_s(op, a, p, m1, topo) for a, p in pairs])
    best = np.argmin(times, axis=0)
    t = times[best, np.arange(m1.size)]
    algos = np.array([pairs[i][0] for i in best])
    protos = np.array([pairs[i][1] for i in best])
    if scalar:
        return float(t[0]), str(algos[0]), str(protos[0])
    return t.reshape(m.shape), algos.reshape(m.shape), protos.reshape(m.shape)
