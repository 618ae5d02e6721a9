"""Topology inputs (nccl_model.md 1.3): an emulation of NCCL's topology search
(``search.cc``) over plain hardware numbers: channels and per-channel bandwidths."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import tables as T
from .names import _GBS, CPU_VENDORS, INTRA_KINDS, cc_index


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
            f"pcie_generation: unknown PCIe generation {generation!r}; allowed: "
            + ", ".join(map(str, sorted(T.NCCL_PCI_LANE_RATE_100MBPS)))
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
        raise ValueError(f"nodes: must be an integer >= 1, got {nodes!r}")
    if int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node: must be an integer >= 1, got {gpus_per_node!r}")
    if intra_kind not in INTRA_KINDS:
        raise ValueError(
            f"intra_kind: unknown intra-node link {intra_kind!r}; allowed: {', '.join(INTRA_KINDS)}"
        )
    if cpu_vendor not in CPU_VENDORS:
        raise ValueError(
            f"cpu_vendor: unknown CPU vendor {cpu_vendor!r}; allowed: {', '.join(CPU_VENDORS)}"
        )
    nodes, g = int(nodes), int(gpus_per_node)
    multi = nodes > 1
    if multi and (nics_per_node < 1 or nic_bandwidth_bytes_per_s <= 0):
        raise ValueError(
            f"nodes: {nodes} nodes need a network: `nics_per_node` >= 1 and "
            f"`nic_bandwidth_bytes_per_s` > 0 (got {nics_per_node!r}, {nic_bandwidth_bytes_per_s!r})"
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
            # the NET path carries bwInter)
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
