"""Named constants with their unit and source. No unnamed factor lives inside a branch elsewhere.

Sections: nccl-tests bus-bandwidth factors (used by the textbook and NCCL models alike), then
NCCL's tuning constants (NCCL 2.30.7, ``src/graph/tuning.cc``), then the terms NCCL leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, get_args

import numpy as np

# --- the collectives ----------------------------------------------------------------------------
# The one list of collective operations every model, the CLI, the sweep and the app accept
# (collectives.OPS, nccl.OPS, predict.OPS and hardware.CollectiveOp are this one).
Op = Literal["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"]
OPS: tuple[str, ...] = get_args(Op)
_OP_SET = frozenset(OPS)


def canonical_op(name: str) -> str:
    """The collective ``name`` as :data:`OPS` spells it, from the spellings people type.

    NCCL writes ``AllReduce``, nccl-tests ``all_reduce_perf``, papers "all-reduce": case, ``-``,
    ``_`` and spaces are ignored. Anything else raises ValueError naming the allowed ones.

    >>> canonical_op("all-reduce"), canonical_op("AllGather"), canonical_op("reduce_scatter")
    ('all_reduce', 'all_gather', 'reduce_scatter')
    """
    if type(name) is str and name in _OP_SET:  # already canonical: the scalar path's case
        return name
    op = spelled_as(name, OPS)
    if op is None:
        raise ValueError(f"op: unknown collective {name!r}; allowed: {', '.join(OPS)}")
    return op


def spelled_as(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` spells, ignoring case, ``-``, ``_`` and spaces; None
    if none does.

    >>> spelled_as("All-Gather", ("all_reduce", "all_gather")), spelled_as("x", ("all_reduce",))
    ('all_gather', None)
    """
    key = "".join(ch for ch in str(name).lower() if ch not in "-_ ")
    return next((n for n in names if n.replace("_", "") == key), None)


# --- nccl-tests bus bandwidth ---------------------------------------------------------------
# nccl-tests doc/PERFORMANCE.md l.136-143 and src/*.cu GetBw (v2.19.6): busbw = algbw * factor(N)
# with factor(N) = a * (N - 1) / N; a = 0 stands for the rooted ops, whose factor is 1.
# factor(N) [-]; N a float or a float array (the lambdas are numpy-broadcasting)
BUSBW_NUMERATOR: dict[str, float] = {
    "all_reduce": 2.0,
    "reduce_scatter": 1.0,
    "all_gather": 1.0,
    "all_to_all": 1.0,
    "broadcast": 0.0,
    "reduce": 0.0,
}


def _busbw_factor(a: float) -> Callable[[float | np.ndarray], float | np.ndarray]:
    """factor(N) = a (N-1)/N, or the constant 1 when ``a == 0`` (nccl-tests GetBw)."""
    if a == 0.0:
        return lambda n: 1.0
    return lambda n: a * (n - 1) / n


BUSBW_FACTOR: dict[str, Callable[[float | np.ndarray], float | np.ndarray]] = {
    op: _busbw_factor(a) for op, a in BUSBW_NUMERATOR.items()
}

# --- NCCL tuning model (NCCL 2.30.7, HEAD 5067397c) ---------------------------------------------
# Everything below is read from NVIDIA/nccl at version 2.30.7 (makefiles/version.mk); file and
# line numbers refer to that commit (see docs/nccl-model.md section 1). Units are
# NCCL's own: latencies in microseconds, bandwidths in GB/s (1e9 B/s); costmodel.nccl converts to SI.
NCCL_VERSION = "2.30.7"

# src/include/plugin/nccl_tuner.h l.27-54: algorithm and protocol indices, in NCCL's order.
NCCL_ALGORITHMS: tuple[str, ...] = (
    "tree",
    "ring",
    "collnet_direct",
    "collnet_chain",
    "nvls",
    "nvls_tree",
    "pat",
)
NCCL_PROTOCOLS: tuple[str, ...] = ("ll", "ll128", "simple")
#: the ``protocol`` of a prediction (``protocol_used`` in the CLI's JSON and the sweep's rows)
#: that runs no NCCL protocol: the lesson's and the textbook's alpha-beta rows (a ring of
#: links at a bandwidth, no LL/LL128/Simple), and one GPU, where nothing is sent (its
#: ``algorithm`` is "none" too). A word, as ``algorithm``'s "none", not a placeholder.
NO_PROTOCOL = "none"
# tuning.cc l.294-304: the algorithms NCCL's tuning table holds per op (any other gets no
# bandwidth there), in that file's order. All-to-all has no table entry: NCCL runs it as
# point-to-point sends, which costmodel.nccl models as "p2p" (nccl.P2P_ALGORITHM).
NCCL_OP_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree"),
    "reduce_scatter": ("ring", "nvls", "collnet_direct", "pat"),
    "all_gather": ("ring", "nvls", "collnet_direct", "pat"),
    "broadcast": ("ring",),
    "reduce": ("ring",),
}
# compute-capability index (nccl_tuner.h): Volta=0, Ampere=1, Hopper=2, Blackwell=3.
NCCL_CC_INDEX_NAMES: tuple[str, ...] = ("volta", "ampere", "hopper", "blackwell")

# tuning.cc l.139-144: nvlsEfficiency[compcap]
NCCL_NVLS_EFFICIENCY: tuple[float, ...] = (0.0, 0.0, 0.85, 0.74)

# tuning.cc l.150-155: baseLatencies[algo][LL, LL128, Simple] (us)
NCCL_BASE_LATENCY_US: dict[str, tuple[float, float, float]] = {
    "tree": (6.8, 14.0, 8.4),
    "ring": (6.6, 14.0, 8.4),
    "collnet_direct": (0.0, 0.0, 0.0),
    "collnet_chain": (0.0, 0.0, 0.0),
    "nvls": (0.0, 0.0, 0.0),
    "nvls_tree": (0.0, 0.0, 0.0),
    "pat": (8.0, 8.0, 8.0),
}

# tuning.cc l.157-175: hwLatencies[NVLINK|PCI|NET][algo][LL, LL128, Simple] (us)
NCCL_HW_LATENCY_US: dict[str, dict[str, tuple[float, float, float]]] = {
    "nvlink": {
        "tree": (0.6, 1.25, 4.0),
        "ring": (0.6, 1.9, 3.4),
        "collnet_direct": (0.0, 0.0, 3.7),
        "collnet_chain": (0.0, 0.0, 2.8),
        "nvls": (0.0, 0.0, 25.0),
        "nvls_tree": (0.0, 0.0, 25.0),
        "pat": (0.0, 0.0, 4.0),
    },
    "pci": {
        "tree": (1.0, 1.9, 4.0),
        "ring": (1.0, 2.5, 5.7),
        "collnet_direct": (0.0, 0.0, 3.7),
        "collnet_chain": (0.0, 0.0, 2.8),
        "nvls": (0.0, 0.0, 0.0),
        "nvls_tree": (0.0, 0.0, 0.0),
        "pat": (0.0, 0.0, 4.0),
    },
    "net": {
        "tree": (5.0, 8.5, 14.0),
        "ring": (2.7, 4.0, 14.0),
        "collnet_direct": (0.0, 0.0, 31.0),
        "collnet_chain": (0.0, 0.0, 30.0),
        "nvls": (0.0, 0.0, 18.0),
        "nvls_tree": (0.0, 0.0, 20.9),
        "pat": (0.0, 0.0, 14.0),
    },
}

# tuning.cc l.178-211: per-channel caps [compcap][N1, N2, N4+] (GB/s). llMaxBws rows are indexed by
# compcap for one node and by CPU vendor for several (row 0 Intel, row 1 AMD; tuning.cc l.269-271).
NCCL_LL_MAX_BW_GBS: tuple[tuple[float, float, float], ...] = (
    (39.0, 39.0, 20.4),
    (87.7, 22.5, 19.0),
    (141.0, 45.0, 35.0),
    (282.0, 90.0, 70.0),
)
NCCL_PER_CH_MAX_RING_LL128_BW_GBS: tuple[tuple[float, float, float], ...] = (
    (20.0, 20.0, 20.0),
    (20.0, 20.0, 20.0),
    (36.7, 36.7, 36.7),
    (40.0, 40.0, 40.0),
)
NCCL_PER_CH_MAX_TREE_LL128_BW_GBS: tuple[tuple[float, float, float], ...] = (
    (20.0, 20.0, 20.0),
    (20.0, 20.0, 20.0),
    (36.7, 36.7, 29.0),
    (55.6, 31.67, 20.0),
)
NCCL_PER_CH_MAX_TREE_BW_GBS: tuple[tuple[float, float, float], ...] = (
    (26.5, 18.5, 10.0),
    (24.0, 23.6, 17.8),
    (38.7, 41.4, 36.0),
    (70.0, 42.8, 24.0),
)
NCCL_PER_CH_MAX_NVLS_TREE_BW_GBS: tuple[tuple[float, float, float], ...] = (
    (26.5, 18.5, 10.0),
    (24.0, 23.6, 17.8),
    (0.0, 57.7, 45.5),
    (0.0, 96.0, 80.0),
)

# tuning.cc l.327-350: protocol and algorithm factors on the bus bandwidth
NCCL_RING_LL_FACTOR = 0.5  # LL: 8 B of data per 16 B line (device.h l.75-88)
NCCL_RING_LL128_FACTOR = 0.92  # comment "120/128" in tuning.cc
NCCL_TREE_FACTOR = 0.92  # Tree AllReduce, all protocols
NCCL_TREE_LL_DIVISOR = 3.8  # Tree LL: busBw / 3.8
NCCL_TREE_LL128_INTRA_FACTOR = 7.0 / 9.0  # Tree LL128, one node
NCCL_TREE_LL128_INTER_FACTOR = 120.0 / 128.0  # Tree LL128, several nodes
NCCL_PAT_FACTOR = 0.75  # PAT: busBw *= 0.75
NCCL_COLLNET_DIRECT_SM90_FACTOR = 0.85  # CollNetDirect on cc >= 9.0 (l.340-350)
NCCL_COLLNET_RSAG_INTER_FACTOR = 0.9  # CollNetDirect RS/AG: ppn * min(bwIntra, 0.9 bwInter)
NCCL_TREE_BUS_TO_ALG_RATIO = 0.5  # l.377-382: Tree, CollNet*: algbw = busBw / 2
# tuning.cc l.384-435: latency terms
NCCL_COLLNET_ARITY_US = 0.4  # CollNetDirect "arity serialization" per local rank
NCCL_PAT_RANK_US = 2.8  # PAT: + nRanks * 2.8 us
NCCL_PAT_INTER_DIVISOR = 3.5  # PAT: + log2(nNodes) * interLat / 3.5
# tuning.cc l.228-233 getNetOverhead(): Intel x86 1.0 us, AMD x86 2.0 us, else 1.0 us;
# tripled for Simple on multi-node rings.
NCCL_NET_OVERHEAD_US: dict[str, float] = {"intel": 1.0, "amd": 2.0, "other": 1.0}
NCCL_NET_OVERHEAD_SIMPLE_MULTIPLIER = 3.0

# tuning.cc l.623-627: treeCorrectionFactor[LL|LL128|Simple][log2(nBytes/64)]
NCCL_TREE_CORRECTION_FACTOR: dict[str, tuple[float, ...]] = {
    "ll": (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
    ),
    "ll128": (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.8,
        0.9,
        0.9,
        0.9,
        0.9,
        1.0,
        1.0,
        1.0,
    ),
    "simple": (
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.7,
        0.8,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
        0.9,
    ),
}
# tuning.cc l.630-655: Ring Simple AllReduce "plateau effect" on several nodes when
# nBytes/(nChannels*nRanks) >= 64: latency x1.9 below cc 8.0, x1.4 from cc 8.0.
NCCL_PLATEAU_MIN_BYTES_PER_CHANNEL_RANK = 64
NCCL_PLATEAU_FACTOR_PRE_SM80 = 1.9
NCCL_PLATEAU_FACTOR = 1.4

# Topology search inputs (src/graph/topo.h l.19-24, topo.cc, search.cc; nccl_model.md 1.3).
# Per-link NVLink bandwidth NCCL assumes, by SM (GB/s): SM60 18, SM70 20, SM80 20, SM86 12,
# SM90 20.6, SM100 40.1 (topo.h l.19-24).
NCCL_NVLINK_BW_GBS: dict[int, float] = {60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1}
# topo.cc (kvDictPciGen): PCIe bandwidth = lanes x per-lane rate / 80 GB/s with the rate in
# units of 100 Mb/s: Gen3 (8 GT/s) 60 -> 16 lanes x 60 / 80 = 12 GB/s (= PCI_BW in topo.h).
NCCL_PCI_LANE_RATE_100MBPS: dict[int, float] = {3: 60.0, 4: 120.0, 5: 240.0, 6: 480.0}
NCCL_PCI_DIVISOR = 80.0
# topo.cc l.418: NIC bandwidth = port speed in Mb/s / 8000 GB/s (400 Gb/s NDR -> 50 GB/s).
NCCL_NIC_MBPS_PER_GBS = 8000.0
# search.cc l.1051-1065: speeds (GB/s per channel) the search tries, highest first.
NCCL_SPEEDS_INTRA: tuple[float, ...] = (
    40.0,
    30.0,
    20.0,
    18.0,
    15.0,
    12.0,
    10.0,
    9.0,
    7.0,
    6.0,
    5.0,
    4.0,
    3.0,
)
NCCL_SPEEDS_INTER: tuple[float, ...] = (
    48.0,
    30.0,
    28.0,
    24.0,
    20.0,
    18.0,
    15.0,
    12.0,
    10.0,
    9.0,
    7.0,
    6.0,
    5.0,
    4.0,
    3.0,
    2.4,
    1.2,
    0.24,
    0.12,
)
NCCL_SPEEDS_INTRA_SM90: tuple[float, ...] = (
    60.0,
    50.0,
    40.0,
    30.0,
    24.0,
    20.0,
    15.0,
    12.0,
    11.0,
    6.0,
    3.0,
)
NCCL_SPEEDS_INTER_SM90: tuple[float, ...] = (
    48.0,
    45.0,
    42.0,
    40.0,
    30.0,
    24.0,
    22.0,
    20.0,
    17.5,
    15.0,
    12.0,
    6.0,
    3.0,
    2.4,
    1.2,
    0.24,
    0.12,
)
NCCL_SPEEDS_INTRA_SM100: tuple[float, ...] = (
    90.0,
    80.0,
    70.0,
    60.0,
    50.0,
    45.0,
    40.0,
    30.0,
    24.0,
    20.0,
    19.0,
    18.0,
)
NCCL_SPEEDS_INTER_SM100: tuple[float, ...] = (
    96.0,
    86.0,
    80.0,
    48.0,
    45.1,
    42.0,
    40.0,
    30.0,
    24.0,
    22.0,
    20.0,
    17.5,
    15.0,
    12.0,
    6.0,
    3.0,
    2.4,
    1.2,
    0.24,
    0.12,
)
# search.cc: the search keeps lowering the speed while next/current > 0.49 (ncclTopoCompute).
NCCL_SEARCH_SPEED_RATIO = 0.49
# search.cc l.1036-1049 ncclTopoDupChannels: duplicate channels when bwIntra >= 25, except on
# cc > 8.0 with bwIntra < 50 and more than 4 channels.
NCCL_DUP_MIN_BW_GBS = 25.0
NCCL_DUP_SM90_MAX_BW_GBS = 50.0
NCCL_DUP_SM90_MAX_CHANNELS = 4
# init.cc l.1177: ring/tree graph maxChannels; search.cc l.1126-1138: single-node NVLS graph uses
# min(32, nGPUs) channels; connect.cc l.460: the communicator runs 2 x ring-graph channels.
NCCL_MAX_GRAPH_CHANNELS = 32
NCCL_MAX_NVLS_CHANNELS = 32
NCCL_COMM_CHANNELS_PER_RING_CHANNEL = 2
# enqueue.cc l.1989-2066: CollNet needs <= 8 local ranks; NVLS for non-AllReduce needs <= 32.
NCCL_COLLNET_MAX_LOCAL_RANKS = 8
NCCL_NVLS_MAX_LOCAL_RANKS_NON_AR = 32

# --- corrections to NCCL's table (costmodel/corrections.py) ---------------------------------
# Ring steps per loop (enqueue.cc calcCollChunking, NCCL 2.30): all-reduce 2(N-1)
# (ncclPatternRingTwice), reduce-scatter / all-gather N-1 (ncclPatternRing). A pipeline fill
# paid once per op is therefore twice the share of a lone reduce-scatter/all-gather's transfer.
RAMP_RING_SINGLE_PHASE_FACTOR = 2.0
