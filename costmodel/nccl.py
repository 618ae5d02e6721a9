r"""NCCL's own tuning model (NCCL 2.30.7, ``src/graph/tuning.cc``), as pure vectorized functions.

NCCL picks, for every collective call, the (algorithm, protocol) pair whose modelled time

.. math:: t = \mathrm{lat}(a, p) + \frac{M}{\mathrm{algbw}(a, p)}

is smallest. ``lat`` is a base latency plus per-hop latencies by link class (NVLink, PCI,
network); ``algbw`` is the number of channels times the per-channel bandwidth the topology search
found, times protocol factors, capped per channel and converted from bus to algorithm bandwidth.
Every constant lives in :mod:`costmodel.tables` with its NCCL source line; the derivation of each
branch is in ``docs/nccl-model.md`` section 1 (the "nccl_model.md 1.3" to "1.6" citations below are
its section numbers).

The topology inputs NCCL's search would find (channels, per-channel intra/inter bandwidth per
algorithm) come from :func:`topology_inputs`, a small emulation of ``search.cc`` over plain
hardware numbers (NVLink count, NIC count and speed, PCIe generation), so no preset types them.

This module imports only numpy, the standard library and :mod:`costmodel.tables`. Bandwidths
inside are NCCL's GB/s (1e9 B/s) and latencies its microseconds; the public results are SI.

>>> topo = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
...                        intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
>>> topo.ring.n_channels, topo.ring.bw_intra_gbs, topo.nvls.n_channels, topo.nvls.bw_intra_gbs
(12, 30.0, 8, 40.0)
>>> t, algo, proto = nccl_table_time("all_reduce", 8 * 2**30, topo)
>>> str(algo), str(proto), round(8 * 2**30 / t * 2 * 7 / 8 / 1e9)   # busbw of NVLS, GB/s
('nvls', 'simple', 476)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import tables as T

OPS: tuple[str, ...] = T.OPS
ALGORITHMS: tuple[str, ...] = T.NCCL_ALGORITHMS
PROTOCOLS: tuple[str, ...] = T.NCCL_PROTOCOLS
INTRA_KINDS: tuple[str, ...] = ("nvswitch", "nvlink-mesh", "pcie")
CPU_VENDORS: tuple[str, ...] = ("intel", "amd", "other")

# all_to_all is point-to-point in NCCL (no tuning-table entry); it is modelled as "p2p".
P2P_ALGORITHM = "p2p"

_ALGO_ALIASES = {
    "tree": "tree",
    "ring": "ring",
    "collnetdirect": "collnet_direct",
    "collnetchain": "collnet_chain",
    "collnet": "collnet_direct",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "pat": "pat",
    "p2p": "p2p",
}
_PROTO_ALIASES = {"ll": "ll", "ll128": "ll128", "simple": "simple"}

_US = 1e-6
_GBS = 1e9


# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------
def check_op(op: str) -> str:
    """Return ``op`` if it is a known collective, else raise ValueError listing the allowed ones.

    >>> check_op("all_reduce")
    'all_reduce'
    """
    if op not in OPS:
        raise ValueError(f"op={op!r} is not a known collective; allowed: {', '.join(OPS)}")
    return op


def normalize_algorithm(name: str) -> str:
    """NCCL algorithm name in this module's spelling (accepts NCCL_ALGO spellings).

    >>> normalize_algorithm("NVLSTree"), normalize_algorithm("CollnetChain")
    ('nvls_tree', 'collnet_chain')
    """
    key = str(name).lower().replace("_", "").replace("-", "")
    if key not in _ALGO_ALIASES:
        raise ValueError(
            f"algorithm={name!r} is not an NCCL algorithm; allowed: auto, {', '.join(ALGORITHMS)}"
            " (and p2p for all_to_all)"
        )
    return _ALGO_ALIASES[key]


def normalize_protocol(name: str) -> str:
    """NCCL protocol name in this module's spelling.

    >>> normalize_protocol("LL128"), normalize_protocol("Simple")
    ('ll128', 'simple')
    """
    key = str(name).lower().replace("_", "").replace("-", "")
    if key not in _PROTO_ALIASES:
        raise ValueError(
            f"protocol={name!r} is not an NCCL protocol; allowed: auto, {', '.join(PROTOCOLS)}"
        )
    return _PROTO_ALIASES[key]


def cc_index(compute_capability: float) -> int:
    """NCCL's compute-capability index: Volta 0 (< 8.0), Ampere 1, Hopper 2, Blackwell 3 (>= 10).

    >>> cc_index(7.5), cc_index(8.9), cc_index(9.0), cc_index(10.0)
    (0, 1, 2, 3)
    """
    cc = float(compute_capability)
    if not cc > 0:
        raise ValueError(f"compute_capability={compute_capability!r} must be > 0 (e.g. 9.0)")
    return 3 if cc >= 10.0 else 2 if cc >= 9.0 else 1 if cc >= 8.0 else 0


def _log2i(x: int) -> int:
    """floor(log2(x)) for x >= 1 (NCCL utils.h log2i); 0 for x < 1."""
    return int(x).bit_length() - 1 if x >= 1 else 0


# --------------------------------------------------------------------------------------------
# topology inputs (nccl_model.md 1.3): an emulation of the topology search
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Graph:
    """One topology-search result: channels and per-channel bandwidths (NCCL GB/s)."""

    n_channels: int
    bw_intra_gbs: float
    bw_inter_gbs: float


@dataclass(frozen=True)
class TopologyInputs:
    """Everything NCCL's tuning model reads about the communicator (tuning.cc l.260-300)."""

    nodes: int
    gpus_per_node: int
    compute_capability: float
    intra_type: str  # "nvlink" | "pci"
    ring: Graph
    tree: Graph
    nvls: Graph | None = None
    nvswitch: bool = False
    nvls_support: bool = False
    collnet_support: bool = False
    collnet_enabled: bool = False
    ll128_enabled: bool = True
    host_staged: bool = False  # no GPU peer-to-peer: NCCL's SHM transport through host memory
    cpu_vendor: str = "intel"
    latency_inter_us: float = 0.0
    link_gbs: float = 0.0  # the per-GPU intra-node link capacity the search saw (NCCL GB/s)
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def cc(self) -> int:
        return cc_index(self.compute_capability)

    @property
    def comm_channels(self) -> int:
        """Channels the communicator runs: 2 x ring-graph channels (connect.cc l.460)."""
        return T.NCCL_COMM_CHANNELS_PER_RING_CHANNEL * self.ring.n_channels


def nvlink_bw_gbs(compute_capability: float) -> float:
    """Per-link NVLink bandwidth NCCL assumes (topo.h l.19-24), GB/s.

    >>> nvlink_bw_gbs(9.0), nvlink_bw_gbs(8.6), nvlink_bw_gbs(10.0)
    (20.6, 12.0, 40.1)
    """
    sm = round(float(compute_capability) * 10)
    if sm >= 100:
        return T.NCCL_NVLINK_BW_GBS[100]
    if sm >= 90:
        return T.NCCL_NVLINK_BW_GBS[90]
    if sm in (86, 87, 89):
        return T.NCCL_NVLINK_BW_GBS[86]
    if sm >= 80:
        return T.NCCL_NVLINK_BW_GBS[80]
    if sm >= 70:
        return T.NCCL_NVLINK_BW_GBS[70]
    return T.NCCL_NVLINK_BW_GBS[60]


def pci_bw_gbs(generation: int, lanes: int = 16) -> float:
    r"""PCIe bandwidth NCCL assigns a link (topo.cc kvDictPciGen): lanes x rate / 80, GB/s.

    >>> pci_bw_gbs(3), pci_bw_gbs(4), pci_bw_gbs(5)
    (12.0, 24.0, 48.0)
    """
    if generation not in T.NCCL_PCI_LANE_RATE_100MBPS:
        raise ValueError(
            f"pcie_generation={generation!r} unknown; allowed: {sorted(T.NCCL_PCI_LANE_RATE_100MBPS)}"
        )
    return lanes * T.NCCL_PCI_LANE_RATE_100MBPS[generation] / T.NCCL_PCI_DIVISOR


def _speed_arrays(compute_capability: float, multi_node: bool) -> tuple[float, ...]:
    """search.cc: speed array by cc, intra (one node: no NET in the system) or inter."""
    cc = float(compute_capability)
    if cc >= 10.0:
        return T.NCCL_SPEEDS_INTER_SM100 if multi_node else T.NCCL_SPEEDS_INTRA_SM100
    if cc >= 9.0:
        return T.NCCL_SPEEDS_INTER_SM90 if multi_node else T.NCCL_SPEEDS_INTRA_SM90
    return T.NCCL_SPEEDS_INTER if multi_node else T.NCCL_SPEEDS_INTRA


def _search(
    speeds: tuple[float, ...],
    channels_at: Callable[[float], int],
    max_path_gbs: float,
    total_gbs: float,
    max_channels: int,
) -> tuple[int, float]:
    """ncclTopoCompute pass 1: the speed (highest first) giving the most nChannels x speed.

    Starts at the first speed a single path can carry, keeps lowering it while the next speed is
    more than 0.49 x the best found, stops early once nChannels x speed reaches the total
    bandwidth; ties keep the faster channels (ncclTopoCompareGraphs).
    """
    best_n, best_s = 0, 0.0
    for s in speeds:
        if s > max_path_gbs + 1e-9 and s != speeds[-1]:
            continue
        if best_n and s / best_s <= T.NCCL_SEARCH_SPEED_RATIO:
            break
        n = min(max_channels, channels_at(s))
        if n >= 1 and n * s > best_n * best_s + 1e-9:
            best_n, best_s = n, s
        if best_n and best_n * best_s >= total_gbs - 1e-9:
            break
    if best_n == 0:  # NCCL falls back to one slow channel (search.cc "simple order")
        best_n, best_s = 1, speeds[-1]
    return best_n, best_s


def _dup_channels(n: int, bw_intra: float, bw_inter: float, cc: float) -> tuple[int, float, float]:
    """ncclTopoDupChannels (search.cc l.1036-1049)."""
    if bw_intra < T.NCCL_DUP_MIN_BW_GBS:
        return n, bw_intra, bw_inter
    if cc > 8.0 and bw_intra < T.NCCL_DUP_SM90_MAX_BW_GBS and n > T.NCCL_DUP_SM90_MAX_CHANNELS:
        return n, bw_intra, bw_inter
    dup = min(2 * n, T.NCCL_MAX_GRAPH_CHANNELS)
    factor = math.ceil(dup / n)
    return dup, bw_intra / factor, bw_inter / factor


def _tree_bw_intra(
    speeds: tuple[float, ...], n_channels: int, bw_inter: float, link_gbs: float, gpus_per_node: int
) -> float:
    r"""Tree graph's per-channel intra-node bandwidth after search pass 2, GB/s.

    ncclTopoCompute pass 2 (search.cc, "increase bwIntra for trees (2 nodes or collnet)"):
    for a tree pattern only ``bwIntra`` is raised, one speed at a time, while the previous value
    is below ``2 x bwInter`` and the node's GPU links still carry ``nChannels`` chains at the
    faster speed; ``bwInter`` (the NIC side) stays. The tuning model reads this ``bwIntra`` on
    two nodes (tuning.cc l.306), which is why Tree can exceed the network speed there
    (nccl#946, sjeaugey: "on 2 nodes ... the Tree performance can go up to ~2x the network
    speed").

    >>> _tree_bw_intra((48.0, 45.0, 42.0, 40.0, 30.0, 24.0), 4, 24.0, 370.8, 4)
    48.0
    >>> _tree_bw_intra((48.0, 45.0, 42.0, 40.0, 30.0, 24.0), 8, 45.0, 370.8, 8)   # 8 x 48 > 370.8
    45.0
    """
    bw = bw_inter
    if gpus_per_node < 2:
        return bw
    for faster in sorted(x for x in speeds if x > bw_inter):
        if bw >= 2 * bw_inter or n_channels * faster > link_gbs + 1e-9:
            break
        bw = faster
    return bw


def topology_inputs(
    *,
    compute_capability: float,
    nodes: int,
    gpus_per_node: int,
    intra_kind: str,
    nvlinks_per_gpu: int = 0,
    nvlink_bw_per_link_gbs: float | None = None,
    p2p: bool = True,
    nvls: bool = False,
    sharp: bool = False,
    collnet_enabled: bool = False,
    nics_per_node: int = 0,
    nic_bandwidth_bytes_per_s: float = 0.0,
    pcie_generation: int | None = None,
    cpu_vendor: str = "intel",
) -> TopologyInputs:
    r"""Channels and per-channel bandwidths NCCL's topology search would find for this hardware.

    An emulation of ``search.cc`` (nccl_model.md 1.3): per-GPU link capacity = NVLink count x
    NCCL's per-link bandwidth (topo.h) or the PCIe link; NIC = its line rate / 8 (topo.cc
    l.418) behind a PCIe link; channels found by trying NCCL's quantized speeds, doubled by
    ncclTopoDupChannels, then (pass 2) the ring speed raised while the channels still fit. The
    NVLS graph uses one channel per head GPU, each head's link carrying (nCh + 1) x bw.

    Parameters
    ----------
    compute_capability : float
        e.g. 8.0 (A100), 9.0 (H100), 10.0 (B200/GB200).
    nodes, gpus_per_node : int
        NCCL nodes (NVLink domains; a GB200 NVL72 rack is one) and GPUs in each.
    intra_kind : {"nvswitch", "nvlink-mesh", "pcie"}
    nvlinks_per_gpu : int
        NVLinks per GPU (18 on H100/B200 SXM, 12 on A100).
    nvlink_bw_per_link_gbs : float, optional
        Overrides NCCL's per-link constant (GB/s), e.g. for a correction of it.
    p2p : bool
        GPU peer-to-peer over PCIe available; without it NCCL stages through host memory.
    nvls, sharp, collnet_enabled : bool
        NVLink SHARP support, IB SHARP (CollNet) support, and NCCL_COLLNET_ENABLE (off by default).
    nics_per_node : int
    nic_bandwidth_bytes_per_s : float
        Per NIC, per direction [B/s] (400 Gb/s NDR = 50e9).
    pcie_generation : int, optional
        GPU/NIC PCIe generation; default 5 from cc 9.0, 4 on cc 8.x, else 3.
    cpu_vendor : {"intel", "amd", "other"}

    Examples
    --------
    8 x H100 SXM: ring 6 ch x 60 GB/s duplicated to 12 ch x 30; NVLS 8 ch, bwIntra 40,
    bwInter 60 (nccl_model.md 1.3).

    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> t.ring, t.nvls, t.comm_channels
    (Graph(n_channels=12, bw_intra_gbs=30.0, bw_inter_gbs=30.0), Graph(n_channels=8, bw_intra_gbs=40.0, bw_inter_gbs=60.0), 24)

    2 nodes of 8 x H100, 8 x 400G NICs: ring 8 ch x 45 GB/s, NVLS-tree heads 8 ch x 40 / 48.

    >>> t = topology_inputs(compute_capability=9.0, nodes=2, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True,
    ...                     nics_per_node=8, nic_bandwidth_bytes_per_s=50e9)
    >>> t.ring, t.nvls
    (Graph(n_channels=8, bw_intra_gbs=45.0, bw_inter_gbs=45.0), Graph(n_channels=8, bw_intra_gbs=40.0, bw_inter_gbs=48.0))

    A PCIe Gen3 box without peer-to-peer: one 12 GB/s channel through host memory.

    >>> t = topology_inputs(compute_capability=7.5, nodes=1, gpus_per_node=2,
    ...                     intra_kind="pcie", p2p=False)
    >>> t.ring, t.intra_type, t.host_staged
    (Graph(n_channels=1, bw_intra_gbs=12.0, bw_inter_gbs=12.0), 'pci', True)
    """
    cc = float(compute_capability)
    cc_index(cc)
    if int(nodes) != nodes or nodes < 1:
        raise ValueError(f"nodes={nodes!r} must be an integer >= 1")
    if int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node={gpus_per_node!r} must be an integer >= 1")
    if intra_kind not in INTRA_KINDS:
        raise ValueError(f"intra_kind={intra_kind!r} unknown; allowed: {', '.join(INTRA_KINDS)}")
    if cpu_vendor not in CPU_VENDORS:
        raise ValueError(f"cpu_vendor={cpu_vendor!r} unknown; allowed: {', '.join(CPU_VENDORS)}")
    nodes, g = int(nodes), int(gpus_per_node)
    multi = nodes > 1
    if multi and (nics_per_node < 1 or nic_bandwidth_bytes_per_s <= 0):
        raise ValueError(
            f"nodes={nodes} needs nics_per_node >= 1 and nic_bandwidth_bytes_per_s > 0 "
            f"(got {nics_per_node!r}, {nic_bandwidth_bytes_per_s!r})"
        )
    if pcie_generation is None:
        pcie_generation = 5 if cc >= 9.0 else 4 if cc >= 8.0 else 3
    pci = pci_bw_gbs(int(pcie_generation))
    nvlink = intra_kind in ("nvswitch", "nvlink-mesh") and nvlinks_per_gpu > 0
    if nvlink:
        per_link = nvlink_bw_gbs(cc) if nvlink_bw_per_link_gbs is None else nvlink_bw_per_link_gbs
        link = nvlinks_per_gpu * per_link
    else:
        link = pci
    speeds = _speed_arrays(cc, multi)
    nic = nic_bandwidth_bytes_per_s / _GBS
    nic_path = min(nic, pci) if multi else 0.0
    nics = int(nics_per_node)

    # --- ring / tree graph: every channel crosses every GPU's link once per direction ---------
    if multi:

        def channels_at(s: float) -> int:
            intra = math.floor(link / s + 1e-9) if g > 1 else 10**6
            return min(intra, nics * math.floor(nic_path / s + 1e-9))

        max_path = min(link, nic_path) if g > 1 else nic_path
        total = min(link, nics * nic_path) if g > 1 else nics * nic_path
    else:

        def channels_at(s: float) -> int:
            return math.floor(link / s + 1e-9)

        max_path = total = link
    n, s = _search(speeds, channels_at, max_path, total, T.NCCL_MAX_GRAPH_CHANNELS)
    n, bw_intra, bw_inter = _dup_channels(n, s, s, cc)
    tree_inter = bw_inter  # the tree search's pass 2 starts from the same pass-1 result
    # pass 2: raise the ring speed while the (duplicated) channels still fit
    for faster in sorted(x for x in speeds if x > bw_intra):
        if faster <= max_path + 1e-9 and channels_at(faster) >= n:
            bw_intra = bw_inter = faster
        else:
            break
    ring = Graph(n, float(bw_intra), float(bw_inter))
    tree = ring
    if multi:
        tree = Graph(n, float(_tree_bw_intra(speeds, n, tree_inter, link, g)), float(tree_inter))

    # --- NVLS graph ---------------------------------------------------------------------------
    nvls_graph = None
    nvls_ok = bool(nvls) and intra_kind == "nvswitch" and cc >= 9.0 and g >= 2
    if nvls_ok:
        if multi:
            n_nvls = min(g, nics, T.NCCL_MAX_NVLS_CHANNELS)
        else:
            n_nvls = min(g, T.NCCL_MAX_NVLS_CHANNELS)
        fits = [x for x in speeds if (n_nvls + 1) * x <= link + 1e-9]
        if fits:
            s_nvls = fits[0]
            inter = s_nvls
            # the inter-node side of an NVLS channel runs through its head GPU's NICs (nics /
            # channels of them, behind one PCIe link): never above that path (search.cc checks
            # the NET path carries bwInter; issue 11)
            head_path = min(pci, nic * max(1, nics // max(n_nvls, 1))) if multi else 0.0
            if multi and inter > head_path + 1e-9:
                slower = [x for x in speeds if x <= head_path + 1e-9]
                inter = slower[0] if slower else speeds[-1]
            for faster in sorted(x for x in speeds if x > inter):  # pass 2 raises bwInter
                if inter >= 2 * s_nvls or (multi and faster > head_path + 1e-9):
                    break
                inter = faster
            nvls_graph = Graph(n_nvls, float(s_nvls), float(inter))
    ll128 = nvlink and cc >= 7.0
    return TopologyInputs(
        nodes=nodes,
        gpus_per_node=g,
        compute_capability=cc,
        intra_type="nvlink" if nvlink else "pci",
        ring=ring,
        tree=tree,
        nvls=nvls_graph,
        nvswitch=intra_kind == "nvswitch",
        nvls_support=nvls_graph is not None,
        collnet_support=bool(sharp) and multi,
        collnet_enabled=bool(collnet_enabled),
        ll128_enabled=ll128,
        host_staged=(intra_kind == "pcie" and not p2p and g > 1),
        cpu_vendor=cpu_vendor,
        link_gbs=float(link),
        extra={"inter_share_gbs": nics * nic_path / g} if multi else {},
    )


# --------------------------------------------------------------------------------------------
# bandwidth (nccl_model.md 1.4) and latency (1.5)
# --------------------------------------------------------------------------------------------
def _nsteps(op: str, n: int) -> int:
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("reduce_scatter", "all_gather"):
        return n - 1
    return n  # broadcast, reduce


def _candidates(op: str) -> tuple[str, ...]:
    """Algorithms NCCL's table holds for an op (tuning.cc l.294-304)."""
    if op in ("broadcast", "reduce"):
        return ("ring",)
    if op in ("reduce_scatter", "all_gather"):
        return ("ring", "nvls", "collnet_direct", "pat")
    return ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree")


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


# --------------------------------------------------------------------------------------------
# availability (enqueue.cc l.1989-2066, tuning.cc l.498-536)
# --------------------------------------------------------------------------------------------
def unavailable_reason(op: str, algorithm: str, protocol: str, topo: TopologyInputs) -> str | None:
    """Why this cluster cannot run (op, algorithm, protocol), or None if it can.

    >>> t = topology_inputs(compute_capability=8.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=12)
    >>> unavailable_reason("all_reduce", "nvls", "simple", t)
    'NVLS needs NVLink SHARP (an NVSwitch system with compute capability >= 9.0)'
    """
    if op == "all_to_all":
        return None if algorithm == P2P_ALGORITHM else "all_to_all runs only as p2p in NCCL"
    if algorithm == P2P_ALGORITHM:
        return "p2p is only used for all_to_all"
    if algorithm not in _candidates(op):
        return f"NCCL has no {algorithm} for {op} (allowed: {', '.join(_candidates(op))})"
    if algorithm in ("nvls", "nvls_tree", "pat") and protocol != "simple":
        return f"{algorithm} runs only with the simple protocol"
    if algorithm.startswith("collnet"):
        if protocol != "simple":
            return f"{algorithm} runs only with the simple protocol"
        if not topo.collnet_support:
            return "CollNet needs IB SHARP (in-network reduction) across several nodes"
        if topo.gpus_per_node > T.NCCL_COLLNET_MAX_LOCAL_RANKS:
            return f"CollNet needs <= {T.NCCL_COLLNET_MAX_LOCAL_RANKS} GPUs per node"
        if algorithm == "collnet_direct" and not topo.nvswitch:
            return "CollNetDirect needs an NVSwitch system"
    if algorithm in ("nvls", "nvls_tree"):
        if not topo.nvls_support:
            return "NVLS needs NVLink SHARP (an NVSwitch system with compute capability >= 9.0)"
        if algorithm == "nvls_tree" and topo.nodes == 1:
            return "NVLSTree needs several nodes"
        if algorithm == "nvls" and topo.nodes > 1 and not topo.collnet_support:
            return "multi-node NVLS needs CollNet (IB SHARP)"
        if op != "all_reduce" and topo.nodes > 1:
            return f"multi-node NVLS {op} needs the CollNet plugin"
        if op != "all_reduce" and topo.gpus_per_node > T.NCCL_NVLS_MAX_LOCAL_RANKS_NON_AR:
            return f"NVLS {op} needs <= {T.NCCL_NVLS_MAX_LOCAL_RANKS_NON_AR} GPUs per node"
    if algorithm == "pat" and (topo.nodes == 1 or topo.gpus_per_node != 1):
        return "PAT runs only with one GPU per node on several nodes"
    if protocol == "ll128" and not topo.ll128_enabled:
        return "LL128 is enabled only on NVLink systems (cc >= 7.0)"
    if bus_bandwidth_gbs(op, algorithm, protocol, topo) <= 0:
        return f"NCCL's model gives {algorithm}/{protocol} no bandwidth here"
    return None


def _default_enabled(op: str, algorithm: str, topo: TopologyInputs) -> bool:
    """Algorithms on by default: CollNet and multi-node NVLS only with NCCL_COLLNET_ENABLE."""
    if algorithm.startswith("collnet") or (algorithm == "nvls" and topo.nodes > 1):
        return topo.collnet_enabled
    return True


def candidates(
    op: str, topo: TopologyInputs, algorithm: str = "auto", protocol: str = "auto"
) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs NCCL would consider; raises if a pinned one cannot run.

    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> candidates("all_reduce", t, algorithm="nvls")
    [('nvls', 'simple')]
    """
    check_op(op)
    if op == "all_to_all":
        a = P2P_ALGORITHM if algorithm == "auto" else normalize_algorithm(algorithm)
        if a != P2P_ALGORITHM:
            raise ValueError(f"algorithm={algorithm!r} cannot run all_to_all; allowed: auto, p2p")
        p = "simple" if protocol == "auto" else normalize_protocol(protocol)
        return [(P2P_ALGORITHM, p)]
    algos = _candidates(op) if algorithm == "auto" else (normalize_algorithm(algorithm),)
    protos = PROTOCOLS if protocol == "auto" else (normalize_protocol(protocol),)
    out, reasons = [], []
    for a in algos:
        if algorithm == "auto" and not _default_enabled(op, a, topo):
            continue
        for p in protos:
            why = unavailable_reason(op, a, p, topo)
            if why is None:
                out.append((a, p))
            else:
                reasons.append(f"{a}/{p}: {why}")
    if not out:
        allowed = sorted(
            {
                a
                for a in _candidates(op)
                for p in PROTOCOLS
                if unavailable_reason(op, a, p, topo) is None
            }
        )
        raise ValueError(
            f"algorithm={algorithm!r}, protocol={protocol!r} cannot run {op} on this cluster "
            f"({'; '.join(reasons[:3])}); allowed algorithms here: auto, {', '.join(allowed)}"
        )
    return out


# --------------------------------------------------------------------------------------------
# time (nccl_model.md 1.6) and selection
# --------------------------------------------------------------------------------------------
def _sizes(message_bytes) -> np.ndarray:
    m = np.asarray(message_bytes, dtype=float)
    if np.any(~np.isfinite(m)) or np.any(m < 0):
        raise ValueError(f"message_bytes={message_bytes!r} must be finite and >= 0")
    return m


def tree_correction_factor(protocol: str, message_bytes) -> np.ndarray:
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
    message_bytes,
    topo: TopologyInputs,
    *,
    algbw_gbs: float | None = None,
    bw_time_factor=1.0,
):
    r"""NCCL's modelled time (ncclTopoGetAlgoTime, tuning.cc l.630-655) in seconds.

    ``t = lat + M / (1000 bw)`` us with the Tree AllReduce size correction and the Ring
    Simple multi-node "plateau" latency factor (x1.4 from cc 8.0, x1.9 before).
    ``algbw_gbs`` replaces NCCL's algorithm bandwidth and ``bw_time_factor`` multiplies the
    bandwidth term (both for the corrections of :mod:`costmodel.corrections`; defaults: NCCL).

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


def p2p_time_s(message_bytes, topo: TopologyInputs, *, bw_time_factor=1.0) -> np.ndarray:
    r"""All-to-all as NCCL runs it (grouped send/recv, no tuning-table entry) **[inferred]**.

    Each rank sends M (ppn - 1)/N inside its node and M (N - ppn)/N across the network, both at
    once: ``t = lat + max(M (ppn-1)/N / B_intra, M (N-ppn)/N / B_inter)`` with B_intra the ring
    graph's nCh x bwIntra and B_inter the node's NICs shared by its GPUs; lat = Ring Simple
    base + one hop of each class used (nccl_model.md section 6 item 5).

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
    op: str, message_bytes, topo: TopologyInputs, algorithm: str = "auto", protocol: str = "auto"
):
    r"""NCCL's choice and modelled time: argmin over the allowed (algorithm, protocol) pairs.

    Returns ``(time_s, algorithm, protocol)``: arrays for array input (names as numpy str
    arrays), float and str for scalar input.

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
