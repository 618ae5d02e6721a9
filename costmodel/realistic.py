r"""The realistic NCCL model, vectorised over clusters: rows of (nodes, GPUs per node, size).

NCCL picks the (algorithm, protocol) pair with the smallest modelled time. Here every candidate
pair is timed **with the corrections already applied** (:mod:`costmodel.corrections`) and
**capped by the hardware** (:func:`busbw_bound_bytes_per_s`), and the choice is an argmin over
a candidate axis, as a tuner that knew the corrected costs would choose. Decisions:

- Each candidate's time has the form :math:`t_c(M) = \ell_c + M h_c(M)` with a per-byte cost
  :math:`h_c` that never rises with M by more than 1 % per doubling (the mid-size ramp is an
  additive term, :func:`ramp_time_factor`; NCCL's ``treeCorrectionFactor`` is replaced by an
  envelope, :func:`tree_correction_envelope`). Then :math:`t_c(2M) \le 2.02\,t_c(M)` and the
  minimum over candidates keeps both properties (:math:`t^*(2M) \le t_a(2M) \le 2.02\,t_a(M) =
  2.02\,t^*(M)` for the pair a chosen at M), so busbw never drops more than 2 % between
  neighbouring sizes of a x2 grid and time never falls with size.
- The bandwidth every candidate uses is capped by the physical bound of its algorithm, so the
  chosen one never exceeds the hardware (NIC aggregate across nodes, NVLink per direction
  inside a node, the NVLS bound).
- Adding nodes never makes an op faster: a job on k > 1 nodes of g GPUs takes at least the
  time of the same op (same per-rank size M) on one of its nodes, the fastest single-node
  candidate (with NCCL_ALGO / NCCL_PROTO pinned, that algorithm's own single-node time where
  one node runs it), :math:`t_k(M) \ge t_1(M)`. Each GPU of the larger job still receives at least
  the bytes it receives on one node (all-reduce, all-gather, reduce-scatter: a (n-1)/n share
  that grows with n; broadcast, reduce: M) through the same intra-node links, plus the
  network phase, so its inter-node phase cannot beat the intra-node bound. Without the cap the
  NIC-bound Ring on two nodes (NICs x 0.95 of line rate) beat NCCL's quantised single-node Ring
  (e.g. 380 vs 360 GB/s on 8 x H100 broadcast) and a GB200 rack pair beat one rack by up to
  20 %. The cap is the maximum of two non-decreasing times whose busbw never drops more than
  2 % per doubling, so both size invariants survive it.
- A transport that copies every byte through host memory (NCCL's TCP socket fallback) caps a
  multi-node op's busbw at its per-node rate (:func:`costmodel.corrections.fabric_node_rate_gbs`),
  after the choice: every candidate moves its bytes through the same host path.
- The host floor is applied after the choice (it is the same for every candidate).

Topology inputs are computed once per (GPUs per node, node class) group, the node classes
being 1, 2 and >= 3 nodes: NCCL's search and its bandwidth tables only distinguish those
(``nNodes <= 2`` in tuning.cc l.306, ``idx2``); everything that varies with the node count
(ranks, steps, log2 of the nodes, algbw conversion, latency, caps) is an array expression.
What does not depend on the sizes (the topology, the candidates, their latency, bandwidth and
caps at one node count) is kept per (op, cluster, node count) for the fitted parameters and
NCCL's table, read-only; the sizes' terms are evaluated for every candidate at once with the
same operations: a prediction on a cluster seen before costs well under half of one from
scratch, with the same numbers bit for bit (tests/test_realistic_plan.py).

>>> from costmodel.presets import cluster
>>> import numpy as np
>>> t, a, p, names = realistic_rows("all_reduce", np.array([2.0**20, 2.0**33]),
...     np.array([1, 8]), np.array([8, 8]), cluster("dgx-h100"))
>>> [names[0][i] for i in a], [names[1][i] for i in p]   # 8 GiB on 8 nodes: NIC-bound Ring
(['ring', 'ring'], ['ll', 'simple'])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from . import corrections as C
from . import nccl
from . import tables as T

if TYPE_CHECKING:
    from .hardware import Cluster
    from .nccl import TopologyInputs

_US = 1e-6
#: the most NCCL's tree size correction may lower the per-byte rate per doubling of the size
#: in the realistic model (so busbw never drops more than 2 % between neighbouring x2 sizes)
TREE_CORRECTION_MAX_DROP = 0.01

# algorithms with in-network reduction (IB SHARP): each node sends and receives M once
_SHARP_ALGOS = ("collnet_direct", "collnet_chain")


def tree_correction_envelope(protocol: str) -> np.ndarray:
    r"""NCCL's ``treeCorrectionFactor`` row with its falls limited to 1 % per size doubling.

    The table (tuning.cc l.623-627) goes down and up again with size (Simple: 0.9 to 0.5 at
    128 KiB, back to 0.8 at 8 MiB, 0.7 at 16 MiB, ...); a fall of the factor from one size bucket
    to the next raises the time per byte and makes busbw drop between neighbouring sizes. The
    envelope is the largest row :math:`e \le f` with :math:`e_{k+1} \ge e_k / 1.01` (a backward
    pass :math:`e_k = \min(f_k, 1.01\,e_{k+1})`), so it never exceeds NCCL's own factor.

    >>> tree_correction_envelope("simple")[9:14].round(3).tolist()
    [0.51, 0.505, 0.5, 0.5, 0.5]
    """
    f = np.asarray(T.NCCL_TREE_CORRECTION_FACTOR[protocol], dtype=float)
    e = f.copy()
    for k in range(len(e) - 2, -1, -1):
        e[k] = min(f[k], (1.0 + TREE_CORRECTION_MAX_DROP) * e[k + 1])
    return e


@functools.cache
def _envelope(protocol: str) -> np.ndarray:
    """:func:`tree_correction_envelope`, computed once per protocol (read-only)."""
    e = tree_correction_envelope(protocol)
    e.flags.writeable = False
    return e


def _tree_factor(protocol: str, m: np.ndarray, envelope: bool) -> np.ndarray:
    table = _envelope(protocol) if envelope else None
    if table is None:
        return nccl.tree_correction_factor(protocol, m)
    units = np.floor(m / 64.0)
    log_size = np.where(units >= 1, np.floor(np.log2(np.maximum(units, 1.0))), -1).astype(int)
    inside = (log_size >= 0) & (log_size < len(table))
    return np.where(inside, table[np.clip(log_size, 0, len(table) - 1)], 1.0)


def ramp_time_factor(
    m: np.ndarray, phi: float, knee: float, amplitude: float, exponent: float = 0.5
) -> np.ndarray:
    r"""Mid-size ramp as a relative extra on the bandwidth term: :math:`g\phi\min(1, (S_k/M)^\beta)`.

    The bandwidth term becomes :math:`(M/B)(1 + g\phi\min(1,(S_k/M)^\beta))`, i.e. an added
    :math:`g\phi\min(M, S_k^\beta M^{1-\beta})/B`: non-decreasing in M and at most doubling
    when M doubles for :math:`0 \le \beta \le 1`. :math:`\beta = 1/2` (default) fades slowly;
    :math:`\beta = 1` is a pipeline fill of fixed duration once chunks reach their full size.
    Unlike :func:`costmodel.corrections.mid_size_ramp` it has no step at 1 MiB (below it latency
    and the host floor dominate; the step made busbw drop by up to 12 % there).

    >>> ramp_time_factor(np.array([2.0**20, 2.0**30]), 0.1, 2.0**28, 1.0).round(3).tolist()
    [0.1, 0.05]
    >>> ramp_time_factor(np.array([2.0**30]), 0.1, 2.0**28, 1.0, exponent=1.0).round(3).tolist()
    [0.025]
    """
    return amplitude * phi * np.minimum(1.0, (knee / np.maximum(m, 1.0)) ** exponent)


def net_ramp_extra(m: np.ndarray, fabric: str, nodes: int, p: Mapping[str, object]) -> np.ndarray:
    r"""The network mid-size ramp's relative extra on the bandwidth term of a row of sizes.

    :func:`ramp_time_factor` with the amplitude :func:`costmodel.corrections.net_ramp_phi` of
    the fabric, the knee ``net_ramp_knee_bytes`` and the fade ``net_ramp_exponent``; 0 on one
    node or where the term is off.

    >>> net_ramp_extra(np.array([2.0**20]), "efa", 2, {"net_ramp_phi": 0.2,
    ...     "net_ramp_knee_bytes": 2.0**26, "fabric_net_ramp_scale": {"efa": 2.5}}).tolist()
    [0.5]
    """
    phi = C.net_ramp_phi(fabric, nodes, p)
    if phi <= 0:
        return np.zeros(np.shape(m))
    knee = float(cast("float", p.get("net_ramp_knee_bytes", 1.0)))
    beta = float(cast("float", p.get("net_ramp_exponent", 0.5)))
    return ramp_time_factor(m, phi, knee, 1.0, beta)


def busbw_bound_bytes_per_s(
    op: str,
    algorithm: str,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    nvlink_bytes_per_s: float,
    node_network_bytes_per_s: float,
) -> np.ndarray:
    r"""Physical upper bound on nccl-tests busbw for (op, algorithm) [B/s], arrays of nodes/GPUs.

    With N = k g ranks on k nodes of g GPUs, L the per-GPU NVLink (or PCIe) bandwidth per
    direction and B the node's NIC aggregate per direction (line rate):

    - one node: busbw <= L (every GPU sends or receives at least the busbw volume, e.g.
      2(N-1)/N M for an all-reduce); NVLS all-reduce (the switch reduces): each GPU moves
      M(1 + 1/g) per direction, algbw <= L g/(g+1), so busbw <= 2 L (g-1)/(g+1).
    - several nodes, Ring: every ring crosses each node boundary carrying the busbw volume:
      busbw <= B (and <= L).
    - several nodes, hierarchical (Tree, NVLSTree, PAT; RS/AG by NVLS): a node must send at
      least 2(k-1)/k M (all-reduce) or (k-1)/k M (RS/AG): busbw <= B ((N-1)/N) / ((k-1)/k).
    - with in-network reduction (CollNet, multi-node NVLS on IB SHARP): a node sends M once:
      busbw <= 2 B (N-1)/N for all-reduce.
    - broadcast/reduce: busbw = algbw <= B; all-to-all: a node sends g M (N-g)/N:
      busbw <= B (N-1) / (g (N-g)).

    Reference: the bandwidth-optimal lower bounds of Patarasuk & Yuan (2009), "Bandwidth optimal
    all-reduce algorithms for clusters of workstations", J. Parallel Distrib. Comput. 69(2).

    >>> # 2 x 8 H100 over 8 x 200G NICs: NVLSTree busbw at most 1.875 x 200 GB/s
    >>> float(busbw_bound_bytes_per_s("all_reduce", "nvls_tree", 2, 8, 450e9, 200e9)) / 1e9
    375.0
    """
    k = np.asarray(nodes, dtype=float)
    g = np.asarray(gpus_per_node, dtype=float)
    n = k * g
    L, B = float(nvlink_bytes_per_s), float(node_network_bytes_per_s)
    one = k <= 1
    if op == "all_reduce" and algorithm == "nvls":
        intra = np.where(one, 2.0 * L * (g - 1) / (g + 1), np.inf)
    elif algorithm == "ring":
        intra = np.full(np.broadcast(k, g).shape, L)
    else:
        intra = np.where(one, L, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        kk = np.maximum(k, 2.0)
        hier = B * ((n - 1) / n) * kk / (kk - 1)
        if op == "all_to_all":
            net = B * (n - 1) / (g * np.maximum(n - g, 1.0))
        elif op in ("broadcast", "reduce") or algorithm == "ring":
            net = np.full(n.shape, B)
        elif algorithm in _SHARP_ALGOS or algorithm == "nvls":
            net = 2.0 * B * (n - 1) / n if op == "all_reduce" else hier
        else:
            net = hier
    return np.minimum(intra, np.where(one, np.inf, net))


def table_nic_floor_s(
    op: str,
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    algorithms: ArrayLike,
    cluster: Cluster,
) -> np.ndarray:
    r"""The least time the node's NICs at line rate allow each row of NCCL's table [s].

    NCCL's own table (``nccl-table``) can price a multi-node op above the NICs' line rate
    (NVLSTree all-reduce on 2 x 8 B200 over 8 x 400G: algbw 409 GB/s where the node's NICs
    carry 400 GB/s per direction); every printed prediction holds the hardware's bound, so its
    time is capped at

    .. math:: t_\mathrm{NIC} = M\,f(N) / \mathrm{busbw_{max}}

    with :math:`f` the nccl-tests bus-bandwidth factor and :math:`\mathrm{busbw_{max}}`
    :func:`busbw_bound_bytes_per_s` of the row's algorithm with ``B`` the node's NIC line rate
    (``cluster.node_inter_bandwidth_bytes_per_s``, no efficiency) and no NVLink bound (the NIC
    bound alone: one node gives 0). ``cluster`` is the node (its slice of GPUs per node);
    ``nodes`` and ``algorithms`` broadcast with the sizes.

    >>> from costmodel.presets import cluster
    >>> c = cluster("dgx-b200", nodes=2)
    >>> float(table_nic_floor_s("all_reduce", 400e9, 2, "nvls_tree", c))  # 400 GB/s
    1.0
    """
    m, k, a = np.broadcast_arrays(
        np.asarray(message_bytes, dtype=float),
        np.asarray(nodes, dtype=float),
        np.asarray(algorithms, dtype=object),
    )
    out = np.zeros(m.shape)
    g = float(cluster.gpus_per_node)
    B = cluster.node_inter_bandwidth_bytes_per_s
    multi = k > 1
    if not multi.any() or B <= 0:
        return out
    n = k * g
    for name in {str(x) for x in a[multi].tolist()}:
        rows = multi & (a == name)
        bound = busbw_bound_bytes_per_s(op, name, k[rows], g, math.inf, B)
        out[rows] = m[rows] * T.BUSBW_FACTOR[op](n[rows]) / bound
    return out


def _nsteps(op: str, n: np.ndarray) -> np.ndarray:
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("reduce_scatter", "all_gather"):
        return n - 1
    return n


def _log2i(x: np.ndarray) -> np.ndarray:
    return np.floor(np.log2(np.maximum(x, 1))).astype(float)


def _latency_us(
    op: str,
    a: str,
    protocol: str,
    topo: nccl.TopologyInputs,
    k: np.ndarray,
    step_scale: float = 1.0,
    chain: bool = False,
) -> np.ndarray:
    """nccl.latency_us with the node count k an array (same branches, tuning.cc l.384-435);
    ``step_scale`` multiplies the intra-node hop latency (C.nvlink_step_latency_scale).
    ``chain``: a ring broadcast or reduce costs its chain of n - 1 hops,
    :func:`costmodel.nccl.ring_chain_latency_us` (the ``nccl`` model), not NCCL's ranking
    figure of base + one hop (``nccl-table``)."""
    p = nccl.PROTOCOLS.index(protocol)
    ppn = topo.gpus_per_node
    n = k * ppn
    multi = k > 1
    nsteps = _nsteps(op, n)
    lat = T.NCCL_BASE_LATENCY_US[a][p]
    intra = T.NCCL_HW_LATENCY_US[topo.intra_type][a][p] * step_scale
    net_algo = "tree" if ppn == 1 else a
    inter = T.NCCL_HW_LATENCY_US["net"][net_algo][p] + topo.latency_inter_us
    if protocol == "simple":
        inter += topo.latency_inter_us
    if a == "ring":
        if op in ("broadcast", "reduce") and not chain:
            return np.where(
                multi,
                lat + T.NCCL_HW_LATENCY_US["net"]["ring"][p],
                lat + T.NCCL_HW_LATENCY_US[topo.intra_type]["ring"][p],
            )
        overhead = T.NCCL_NET_OVERHEAD_US[topo.cpu_vendor]
        if protocol == "simple":
            overhead *= T.NCCL_NET_OVERHEAD_SIMPLE_MULTIPLIER
        intra_eff = np.where(multi, max(intra, overhead), intra)
        n_inter = np.where(multi, 2 * (k - 1) if op == "all_reduce" else k - 1, 0)
        if op in ("broadcast", "reduce"):  # the chain: n - 1 hops, k - 1 between nodes
            nsteps = n - 1
        return lat + (nsteps - n_inter) * intra_eff + n_inter * inter
    if a == "tree":
        return lat + 2 * ((ppn - 1) * intra + _log2i(k) * inter)
    if a == "collnet_direct":
        return (
            lat
            + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * T.NCCL_COLLNET_ARITY_US)
            + inter
            + 0 * k
        )
    if a == "collnet_chain":
        return lat + 2 * (ppn - 1) * intra + inter + 0 * k
    if a == "nvls":
        return intra + np.where(multi, inter, 0.0)
    if a == "nvls_tree":
        return lat + intra + 2 * _log2i(k) * inter
    return lat + _log2i(k) * (inter / T.NCCL_PAT_INTER_DIVISOR) + n * T.NCCL_PAT_RANK_US


def _algbw_gbs(op: str, a: str, bus: float, n: np.ndarray) -> np.ndarray:
    """nccl.algorithm_bandwidth_gbs with the rank count n an array."""
    if bus <= 0:
        return np.zeros(n.shape)
    if op in ("reduce_scatter", "all_gather") and a != "ring":
        return np.full(n.shape, bus)
    if a in ("ring", "nvls", "nvls_tree"):
        return bus * n / _nsteps(op, n)
    return np.full(n.shape, bus * T.NCCL_TREE_BUS_TO_ALG_RATIO)


def _group_times(
    op: str,
    m: np.ndarray,
    k: np.ndarray,
    c: Cluster,
    pairs_wanted: tuple[str, str],
    p: Mapping[str, object] | None,
    nvls: bool | None,
    collnet_enabled: bool,
    candidate_scale: Mapping[tuple[str, str], tuple[float, float]] | None = None,
    p_key: str | None = None,
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    r"""Candidate times (K, rows) for rows of one (GPUs per node, node class) group.

    ``candidate_scale`` (calibration hook, :func:`candidate_scale_of`): per (algorithm,
    protocol) a bandwidth efficiency :math:`\eta` and a latency scale :math:`\lambda`, so the
    candidate costs :math:`\lambda\,\ell_c + M h_c / \eta` (bandwidth still capped).

    Everything that does not depend on the sizes (the topology, the candidates, their latency,
    bandwidth and caps for the group's node count: :func:`_group_plan`) is computed once per
    (op, cluster, node count) and kept (``p_key`` names the parameters: ``"fitted"`` for the
    shared fitted ones; None, or node counts that differ between rows, are computed afresh);
    here only the size-dependent terms are evaluated, with the same expressions, so the
    numbers are those of a computation from scratch.
    """
    corrected = p is not None
    cacheable = (p_key is not None or not corrected) and not candidate_scale
    plan: _GroupPlan | None = None
    if cacheable and k.size and bool(np.all(k == k[0])):
        plan = _kept_plan(op, c, pairs_wanted, p_key, nvls, collnet_enabled, float(k[0]), p)
    if plan is None:
        plan = _group_plan(op, k, c, pairs_wanted, p, nvls, collnet_enabled, candidate_scale)
    pairs = plan.pairs
    times = np.empty((len(pairs), m.size))
    if corrected:
        net_extra = net_ramp_extra(m, c.fabric, c.nodes, cast("Mapping[str, object]", p))
        # ramp_time_factor(m, phi, knee, amp) = amp * phi * fade, the fade shared by candidates
        fade = np.minimum(1.0, (plan.knee / np.maximum(m, 1.0)) ** 0.5)
    if plan.stack is None:  # all-to-all: point-to-point time per candidate
        for i, cand in enumerate(plan.candidates):
            times[i] = (
                _p2p_time_s(m, cand.k, plan.topo, c, p, plan.duplex if corrected else 1.0)
                / cand.eta
            )
        return times, pairs
    # every candidate at once, (K, rows): element by element the operations of one candidate
    # at a time (a tree factor of 1.0 where it does not apply and a max with -inf where there
    # is no NIC floor leave a value unchanged, exactly)
    s = plan.stack
    bw_m = s.bw
    if s.tree_rows:
        tf = np.ones((len(pairs), m.size))
        by_protocol: dict[str, np.ndarray] = {}
        for i, pr in s.tree_rows:
            f = by_protocol.get(pr)
            if f is None:
                f = by_protocol[pr] = _tree_factor(pr, m, envelope=corrected)
            tf[i] = f
        bw_m = s.bw * tf
    lat: np.ndarray = s.lat
    if s.plateau_rows:
        lat = np.array(np.broadcast_to(s.lat, times.shape))
        for i, denom, lat_plateau in s.plateau_rows:
            per = m / denom
            lat[i] = np.where(
                per >= T.NCCL_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK, lat_plateau, s.lat[i]
            )
    factor: float | np.ndarray = 1.0
    if corrected:
        factor = (1.0 + s.amp_phi * fade + net_extra) / plan.duplex
        if s.nic is not None:  # NIC-bound ring (see C); -inf for the other candidates
            bw_m = np.maximum(bw_m, s.nic)
        assert s.cap is not None
        bw_m = np.minimum(bw_m, s.cap)
    with np.errstate(divide="ignore"):
        times[:] = (lat + factor * m / (1000.0 * bw_m)) * _US
    return times, pairs


class _Candidate(NamedTuple):
    """One (algorithm, protocol) candidate's size-independent terms (see _group_plan)."""

    algorithm: str
    protocol: str
    eta: float
    p2p: bool
    k: np.ndarray
    bw: np.ndarray  # algbw [GB/s] before NCCL's tree size correction and the caps
    lat: np.ndarray  # latency [us] (x lambda), before the all-reduce plateau
    tree: bool  # NCCL's tree size correction applies
    plateau: tuple[np.ndarray, np.ndarray] | None  # (channels x ranks, lat x plateau factor)
    amp: float  # ramp amplitude
    cap: np.ndarray | None  # hardware busbw bound as algbw [GB/s]
    nic: np.ndarray | None  # NIC-bound ring floor as algbw [GB/s]


class _Stack(NamedTuple):
    """The candidates' size-independent terms stacked (K, node counts), read-only."""

    bw: np.ndarray
    lat: np.ndarray
    tree_rows: list[tuple[int, str]]  # (candidate, protocol) with NCCL's tree correction
    plateau_rows: list[tuple[int, np.ndarray, np.ndarray]]  # (candidate, denominator, lat)
    amp_phi: np.ndarray  # (K, 1): ramp amplitude x phi
    cap: np.ndarray | None
    nic: np.ndarray | None  # -inf where the candidate has no NIC floor


class _GroupPlan(NamedTuple):
    topo: TopologyInputs
    pairs: list[tuple[str, str]]
    candidates: list[_Candidate]
    phi: float
    knee: float
    duplex: float
    stack: _Stack | None  # None for all-to-all (point-to-point times)


def _frozen(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    x.flags.writeable = False
    return x


def _group_plan(
    op: str,
    k: np.ndarray,
    c: Cluster,
    pairs_wanted: tuple[str, str],
    p: Mapping[str, object] | None,
    nvls: bool | None,
    collnet_enabled: bool,
    candidate_scale: Mapping[tuple[str, str], tuple[float, float]] | None,
) -> _GroupPlan:
    """The size-independent part of :func:`_group_times` for node counts ``k`` (any shape
    that broadcasts against the sizes): the same expressions, evaluated once."""
    from .predict import cluster_topology

    corrected = p is not None
    # the scalar entries read below are floats (C._check verified the parameters)
    pf = cast("Mapping[str, float] | None", p)
    algorithm, protocol = pairs_wanted
    g = c.gpus_per_node
    n = k * g
    if p is not None and pf is not None:
        scale = C.nvlink_domain_scale(
            float(c.gpu.compute_capability), g, c.intra_kind, pf, nodes=c.nodes
        )
        topo = cluster_topology(
            c,
            nvls=nvls,
            collnet_enabled=collnet_enabled,
            nvlink_scale=scale,
            latency_inter_us=C.fabric_latency_us(c.fabric, p) if c.nodes > 1 else 0.0,
        )
    else:
        topo = cluster_topology(c, nvls=nvls, collnet_enabled=collnet_enabled)
    pairs = nccl.candidates(op, topo, algorithm, protocol)
    chosen_protocol = protocol == "auto" or nccl.is_choice_set(protocol)  # NCCL picks it
    if p is not None and chosen_protocol and not C.net_ll128_enabled(c.fabric, c.nodes, p):
        pairs = [x for x in pairs if x[1] != "ll128"] or pairs  # LL128 not enabled across nodes
    phi = knee = tree_eff = ring_f = 0.0
    duplex = 1.0
    if p is not None and pf is not None:
        phi = C.fabric_ramp_phi(c.fabric, c.nodes, p)
        knee = float(pf.get("ramp_knee_bytes", 1.0))
        tree_eff = C.fabric_tree_efficiency(c.fabric, c.nodes, p)
        duplex = C.host_staged_duplex_factor(op, topo, pf)
        L = c.intra_bandwidth_bytes_per_s
        B = c.node_inter_bandwidth_bytes_per_s * C.achievable_fraction(c.fabric, c.nodes, p)
        ring_f = C.ring_nic_fraction(c.fabric, c.nodes, p)
        B_ring = c.node_inter_bandwidth_bytes_per_s * ring_f
    out: list[_Candidate] = []
    empty = np.empty(0)
    busbw_factor = T.BUSBW_FACTOR[op](n) if corrected else 1.0  # the caps' busbw -> algbw
    caps: dict[str, np.ndarray] = {}
    for a, pr in pairs:
        eta, lam = candidate_scale_of(candidate_scale, a, pr)
        if op == "all_to_all":
            out.append(_Candidate(a, pr, eta, True, k, empty, empty, False, None, 0.0, None, None))
            continue
        bw = _algbw_gbs(op, a, nccl.bus_bandwidth_gbs(op, a, pr, topo), n) * eta
        step = 1.0
        if p is not None and c.nodes == 1:  # across nodes the fitted fabric latency carries it
            step = C.nvlink_step_latency_scale(c.intra_kind, a, pr, p)
            step *= C.blackwell_nvlink_step_latency_scale(
                float(c.gpu.compute_capability), c.intra_kind, a, pr, p
            )
        lat = _latency_us(op, a, pr, topo, k, step, chain=corrected) * lam
        if corrected and op == "all_reduce" and a == "nvls" and c.nodes == 1:
            bw = np.full(n.shape, C.nvls_allreduce_algbw_gbs(topo))
        elif corrected and a == "tree":
            bw = bw * tree_eff
        tree = nccl.tree_correction_applies(op, a, topo)
        plateau = None
        if op == "all_reduce" and a == "ring" and pr == "simple" and c.nodes > 1:
            factor = (
                T.NCCL_PLATEAU_FACTOR_PRE_SM80
                if topo.compute_capability < 8.0
                else T.NCCL_PLATEAU_FACTOR
            )
            plateau = (_frozen(topo.comm_channels * n), _frozen(lat * factor))
        amp, cap, nic = 0.0, None, None
        if corrected:
            amp = C.ramp_amplitude_of(op, a, topo, pr)
            cap = caps.get(a)  # one per algorithm: the bound does not depend on the protocol
            if cap is None:
                bound = busbw_bound_bytes_per_s(op, a, k, g, L, B)
                cap = caps[a] = _frozen(bound / busbw_factor / 1e9)
            if ring_f > 0 and a == "ring" and pr == "simple":
                nic_bound = busbw_bound_bytes_per_s(op, a, k, g, L, B_ring)
                nic = _frozen(nic_bound / busbw_factor / 1e9)
        out.append(
            _Candidate(
                a, pr, eta, False, k, _frozen(bw), _frozen(lat), tree, plateau, amp, cap, nic
            )
        )
    stack = None
    if op != "all_to_all":
        shape = (len(out), *np.shape(n))
        amp_phi = np.array([[x.amp * phi] for x in out]).reshape(len(out), 1)
        nic = None
        if any(x.nic is not None for x in out):
            nic = np.full(shape, -np.inf)
            for i, x in enumerate(out):
                if x.nic is not None:
                    nic[i] = x.nic
        stack = _Stack(
            _frozen(np.array([np.broadcast_to(x.bw, np.shape(n)) for x in out]).reshape(shape)),
            _frozen(np.array([np.broadcast_to(x.lat, np.shape(n)) for x in out]).reshape(shape)),
            [(i, x.protocol) for i, x in enumerate(out) if x.tree],
            [(i, *x.plateau) for i, x in enumerate(out) if x.plateau is not None],
            _frozen(amp_phi),
            _frozen(np.array([x.cap for x in out]).reshape(shape)) if corrected else None,
            None if nic is None else _frozen(nic),
        )
    return _GroupPlan(topo, pairs, out, phi, knee, duplex, stack)


def _hashable(x: object) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


class _CheckedParams(dict):
    """:func:`realistic_rows`' copy of the parameters it was given, checked: the one-node floor
    of its multi-node rows is the same call on the same copy, not checked again."""


class _Ref:
    """Carries the parameters into the cached plan without being part of its key."""

    __slots__ = ("value",)

    def __init__(self, value: Mapping[str, object] | None) -> None:
        self.value = value

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ref)


_PLANS_BY_ID: dict[tuple[object, ...], tuple[Cluster, _GroupPlan]] = {}


def _kept_plan(
    op: str,
    c: Cluster,
    pairs_wanted: tuple[str, str],
    p_key: str | None,
    nvls: bool | None,
    collnet_enabled: bool,
    nodes: float,
    p: Mapping[str, object] | None,
) -> _GroupPlan | None:
    """:func:`_group_plan_cached` (None for a cluster that cannot be hashed), looked up first
    by the cluster object's identity: a cluster is frozen, and hashing one reads every field."""
    key = (op, id(c), pairs_wanted, p_key, nvls, collnet_enabled, nodes)
    hit = _PLANS_BY_ID.get(key)
    if hit is not None and hit[0] is c:
        return hit[1]
    if not _hashable(c):
        return None
    plan = _group_plan_cached(op, c, pairs_wanted, p_key, nvls, collnet_enabled, nodes, _Ref(p))
    if len(_PLANS_BY_ID) >= 1024:
        _PLANS_BY_ID.clear()
    _PLANS_BY_ID[key] = (c, plan)
    return plan


_LOADED: dict[tuple[int, int, int], tuple[Cluster, Cluster]] = {}


def _load_cluster(cluster: Cluster, nodes: int, gpus_per_node: int) -> Cluster:
    """``presets.cluster(cluster, nodes=..., gpus_per_node=...)`` kept per cluster object
    (frozen) and size: the ops of one cluster, and its one-node floor, ask for the same."""
    from .presets import cluster as load_cluster

    key = (id(cluster), nodes, gpus_per_node)
    hit = _LOADED.get(key)
    if hit is None or hit[0] is not cluster:
        hit = (cluster, load_cluster(cluster, nodes=nodes, gpus_per_node=gpus_per_node))
        if len(_LOADED) >= 256:
            _LOADED.clear()
        _LOADED[key] = hit
    return hit[1]


_FLOORS: ContextVar[dict[tuple[object, ...], np.ndarray] | None] = ContextVar(
    "one_node_floors", default=None
)


@contextmanager
def one_node_floors(kept: dict[tuple[object, ...], np.ndarray]) -> Iterator[None]:
    """Inside it, :func:`realistic_rows` keeps the one-node floors of multi-node rows in
    ``kept`` (per op, one-node cluster, GPUs, sizes and options, with the shared fitted
    parameters): the node counts of a table (:class:`costmodel.strategy.comm.PredictionCache`)
    ask for the same floor of the same sizes. A floor is the same call's answer, kept."""
    token = _FLOORS.set(kept)
    try:
        yield
    finally:
        _FLOORS.reset(token)


def _one_node_rows(
    op: str,
    m: np.ndarray,
    g: np.ndarray,
    cluster: Cluster,
    p: Mapping[str, object] | None,
    gpus_per_process: int,
    nvls: bool | None,
    algorithm: str = "auto",
    protocol: str = "auto",
) -> np.ndarray:
    """The same op on one node of each row's GPUs (the multi-node rows' floor).

    A pinned ``algorithm`` / ``protocol`` (NCCL_ALGO, NCCL_PROTO) is pinned on the one node
    too where one node runs it (Ring, Tree, NVLS all-reduce): the job's GPUs still run that
    algorithm's intra-node part over the same links, so two GB200 racks on a pinned Ring no
    longer beat one rack's Ring (they did by 2 % at 1-2 GiB, Tree by 11-26 % at 64 MiB,
    because the floor was the fastest single-node candidate, below the pinned one). One that
    needs several nodes (CollNet, NVLSTree, PAT) keeps the fastest single-node candidate."""
    kept = _FLOORS.get()
    key: tuple[object, ...] | None = None
    if kept is not None and p is _fitted_shared() and g.size and bool((g == g[0]).all()):
        one = _load_cluster(cluster, 1, int(g[0]))
        if _hashable(one):
            key = (op, one, int(g[0]), m.tobytes(), gpus_per_process, nvls, algorithm, protocol)
            hit = kept.get(key)
            if hit is not None:
                return hit
    t1 = None
    if (algorithm, protocol) != ("auto", "auto"):
        try:
            t1 = realistic_rows(
                op,
                m,
                1,
                g,
                cluster,
                algorithm,
                protocol,
                params=p,
                gpus_per_process=gpus_per_process,
                nvls=nvls,
            )[0]
        except ValueError:  # not on one node (CollNet, NVLSTree, PAT): the fastest one
            t1 = None
    if t1 is None:
        t1 = realistic_rows(
            op, m, 1, g, cluster, params=p, gpus_per_process=gpus_per_process, nvls=nvls
        )[0]
    if key is not None and kept is not None:
        t1.flags.writeable = False
        kept[key] = t1
    return t1


@functools.lru_cache(maxsize=1024)
def _group_plan_cached(
    op: str,
    c: Cluster,
    pairs_wanted: tuple[str, str],
    p_key: str | None,
    nvls: bool | None,
    collnet_enabled: bool,
    nodes: float,
    params: _Ref,
) -> _GroupPlan:
    """:func:`_group_plan` for one node count, kept per (op, cluster, candidates wanted,
    parameters' name, NVLS, CollNet, node count): ``params`` is not part of the key, its name
    ``p_key`` is (the shared fitted parameters, or None for NCCL's table)."""
    return _group_plan(
        op, np.array([nodes]), c, pairs_wanted, params.value, nvls, collnet_enabled, None
    )


@functools.lru_cache(maxsize=1)
def _fitted_shared() -> Mapping[str, object]:
    """The fitted parameters (:func:`costmodel.predict.fitted_params`), read and checked once;
    read-only (``realistic_rows`` copies parameters it is given)."""
    from .predict import fitted_params

    p = fitted_params()
    C._check(p)
    return MappingProxyType(p)


def candidate_scale_of(
    scale: Mapping[tuple[str, str], tuple[float, float]] | None, algorithm: str, protocol: str
) -> tuple[float, float]:
    """(bandwidth efficiency, latency scale) of one candidate: its own entry, else ``("*", "*")``.

    The calibration hook (:mod:`costmodel.validation.calibrate`): no mapping, or no entry and
    no default, is (1, 1), the uncalibrated candidate. All-to-all takes only the efficiency
    (its time is divided by it).

    >>> candidate_scale_of({("ring", "ll"): (0.8, 2.0), ("*", "*"): (0.9, 1.0)}, "tree", "ll")
    (0.9, 1.0)
    """
    if not scale:
        return 1.0, 1.0
    eta, lam = scale.get((algorithm, protocol), scale.get(("*", "*"), (1.0, 1.0)))
    return float(eta), float(lam)


def _p2p_time_s(
    m: np.ndarray,
    k: np.ndarray,
    topo: TopologyInputs,
    c: Cluster,
    p: Mapping[str, object] | None,
    duplex: float,
) -> np.ndarray:
    """nccl.p2p_time_s with arrays of node counts (and, corrected, the ramp and duplex)."""
    g = topo.gpus_per_node
    n = k * g
    simple = nccl.PROTOCOLS.index("simple")
    lat = T.NCCL_BASE_LATENCY_US["ring"][simple] + 0.0 * k
    intra_bw = topo.ring.n_channels * topo.ring.bw_intra_gbs
    t_intra = m * (g - 1) / n / (1000.0 * intra_bw) if g > 1 else 0.0 * m
    if g > 1:
        lat = lat + T.NCCL_HW_LATENCY_US[topo.intra_type]["ring"][simple]
    t_inter = 0.0 * m
    if c.nodes > 1:
        inter_bw = topo.extra.get("inter_share_gbs", topo.ring.n_channels * topo.ring.bw_inter_gbs)
        if p is not None:  # many flows per NIC, incast (C.a2a_net_efficiency)
            inter_bw = inter_bw * C.a2a_net_efficiency(c.nodes, p)
        t_inter = m * (n - g) / n / (1000.0 * inter_bw)
        lat = lat + T.NCCL_HW_LATENCY_US["net"]["ring"][simple]
        if p is not None:  # one proxy-posted message per remote peer (C.a2a_peer_latency_us)
            lat = lat + C.a2a_peer_latency_us(c.nodes, n - g, p)
    factor: float | np.ndarray = 1.0
    if p is not None:
        phi = C.fabric_ramp_phi(c.fabric, c.nodes, p)
        knee = float(cast("float", p.get("ramp_knee_bytes", 1.0)))  # a float (C._check)
        extra = ramp_time_factor(m, phi, knee, 1.0) + net_ramp_extra(m, c.fabric, c.nodes, p)
        factor = (1.0 + extra) / duplex
    t = (lat + factor * np.maximum(t_intra, t_inter)) * _US
    return np.where(n < 2, 0.0, t)


def realistic_rows(
    op: str,
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    cluster: Cluster,
    algorithm: str = "auto",
    protocol: str = "auto",
    *,
    params: Mapping[str, object] | None = None,
    corrected: bool = True,
    gpus_per_process: int = 1,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    candidate_scale: Mapping[tuple[str, str], tuple[float, float]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[list[str], list[str]]]:
    r"""Time of ``op`` for rows of (message size, nodes, GPUs per node) on a cluster preset.

    All three inputs broadcast to one shape (rows). Returns ``(time_s, algo_code, proto_code,
    (algorithm_names, protocol_names))``: the codes index the name lists. ``corrected=False``
    gives NCCL's table alone (``model="nccl-table"``: NCCL's topology, its own tree correction
    factor, no caps); otherwise the corrected candidate costs and caps of the module docstring.
    Rows with fewer than 2 ranks take 0 s and the algorithm ``"none"``.

    Parameters
    ----------
    message_bytes, nodes, gpus_per_node : array_like
        Per-rank buffer [B]; NVLink domains (>= 1); GPUs in each (1 to the preset's count).
    cluster : Cluster
        The base preset (its node count is ignored).
    candidate_scale : mapping, optional
        Calibrated (bandwidth efficiency, latency scale) per (algorithm, protocol), key
        ``("*", "*")`` for the others (:func:`candidate_scale_of`); applied inside every
        candidate before the choice and the caps. None: uncalibrated.
    """
    nccl.check_op(op)
    m, k, g = np.broadcast_arrays(
        np.asarray(message_bytes, dtype=float),
        np.asarray(nodes, dtype=np.int64),
        np.asarray(gpus_per_node, dtype=np.int64),
    )
    shape = m.shape
    m, k, g = m.ravel(), k.ravel(), g.ravel()
    if m.size and (np.any(~np.isfinite(m)) or np.any(m < 0)):
        raise ValueError("message_bytes: must be finite and >= 0 B at every point")
    if m.size and (k.min() < 1 or g.min() < 1):
        raise ValueError("nodes, gpus_per_node: must be integers >= 1")
    p: Mapping[str, object] | None = None
    p_key: str | None = None
    if corrected:
        shared = _fitted_shared()
        if params is None or params is shared:  # read and checked once (_fitted_shared)
            p, p_key = shared, "fitted"
        elif isinstance(params, _CheckedParams):  # this function's own copy (a one-node floor)
            p = params
        else:
            p = _CheckedParams(params)
            C._check(p)
    t = np.zeros(m.size)
    a_code = np.zeros(m.size, dtype=np.int32)
    p_code = np.zeros(m.size, dtype=np.int32)
    a_names: dict[str, int] = {}
    p_names: dict[str, int] = {}
    cls = np.minimum(k, 3)
    key = g * 4 + cls
    groups: list[tuple[int, np.ndarray]] = []
    if key.size and bool((key == key[0]).all()):  # one group: every row, in order
        groups = [(int(key[0]), np.arange(key.size))]
    elif key.size:
        uniq, inverse = np.unique(key, return_inverse=True)
        groups = [(kk, np.flatnonzero(inverse == j)) for j, kk in enumerate(uniq.tolist())]
    for kk, rows in groups:
        gg, cc = kk // 4, kk % 4
        if gg * cc < 2 and cc == 1:  # one GPU: nothing to communicate
            a_code[rows] = a_names.setdefault("none", len(a_names))
            p_code[rows] = p_names.setdefault(T.NO_PROTOCOL, len(p_names))
            continue
        c = _load_cluster(cluster, int(cc), int(gg))
        times, pairs = _group_times(
            op,
            m[rows],
            k[rows].astype(float),
            c,
            (algorithm, protocol),
            p,
            nvls,
            collnet_enabled,
            candidate_scale,
            p_key,
        )
        best = np.argmin(times, axis=0)
        t[rows] = times[best, np.arange(rows.size)]
        if not corrected and cc > 1:  # NCCL's table, never above the NICs' line rate
            chosen = np.array([pairs[b][0] for b in best.tolist()], dtype=object)
            nic_floor = table_nic_floor_s(op, m[rows], k[rows], chosen, c)
            t[rows] = np.maximum(t[rows], nic_floor)
        amap = np.array([a_names.setdefault(a, len(a_names)) for a, _ in pairs], dtype=np.int32)
        pmap = np.array([p_names.setdefault(x, len(p_names)) for _, x in pairs], dtype=np.int32)
        a_code[rows], p_code[rows] = amap[best], pmap[best]
    if corrected:
        multi = (k > 1) & (g > 1)
        if multi.any():  # never faster than the same op on one of its nodes (module docstring)
            t1 = _one_node_rows(
                op, m[multi], g[multi], cluster, p, gpus_per_process, nvls, algorithm, protocol
            )
            t[multi] = np.maximum(t[multi], t1)
        rate = C.fabric_node_rate_gbs(cluster.fabric, 2, cast("Mapping[str, object]", p))
        if np.isfinite(rate) and multi.any():  # host-copy transport (socket): busbw <= rate
            n_multi = (k * g)[multi]
            floor_rate = m[multi] * T.BUSBW_FACTOR[op](n_multi) / (rate * 1e9)
            t[multi] = np.maximum(t[multi], floor_rate)
        live = (k * g) >= 2
        pf = cast("Mapping[str, float]", p)  # floats: _check
        procs = np.maximum(np.ceil(g / gpus_per_process), 1).astype(np.int64)  # per node
        floor = C.host_floor_s(gpus_per_process, pf, processes_per_node=procs)
        t = np.where(live, np.maximum(t, floor), t)
    return (
        t.reshape(shape),
        a_code.reshape(shape),
        p_code.reshape(shape),
        (list(a_names), list(p_names)),
    )
