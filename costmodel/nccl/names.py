"""Names NCCL's model accepts (ops, algorithms, protocols, aliases) and their checks."""

from __future__ import annotations

from .. import tables as T

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


def check_op(op: str) -> str:
    """Return ``op`` if it is a known collective, else raise ValueError listing the allowed ones.

    >>> check_op("all_reduce")
    'all_reduce'
    """
    if op not in OPS:
        raise ValueError(f"op: {op!r} is not a known collective; allowed: {', '.join(OPS)}")
    return op


def normalize_algorithm(name: str) -> str:
    """NCCL algorithm name in this module's spelling (accepts NCCL_ALGO spellings).

    >>> normalize_algorithm("NVLSTree"), normalize_algorithm("CollnetChain")
    ('nvls_tree', 'collnet_chain')
    """
    key = str(name).lower().replace("_", "").replace("-", "")
    if key not in _ALGO_ALIASES:
        raise ValueError(
            f"algorithm: {name!r} is not an NCCL algorithm; allowed: auto, {', '.join(ALGORITHMS)}"
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
            f"protocol: {name!r} is not an NCCL protocol; allowed: auto, {', '.join(PROTOCOLS)}"
        )
    return _PROTO_ALIASES[key]


def cc_index(compute_capability: float) -> int:
    """NCCL's compute-capability index: Volta 0 (< 8.0), Ampere 1, Hopper 2, Blackwell 3 (>= 10).

    >>> cc_index(7.5), cc_index(8.9), cc_index(9.0), cc_index(10.0)
    (0, 1, 2, 3)
    """
    cc = float(compute_capability)
    if not cc > 0:
        raise ValueError(f"compute_capability: must be > 0 (e.g. 9.0), got {compute_capability!r}")
    return 3 if cc >= 10.0 else 2 if cc >= 9.0 else 1 if cc >= 8.0 else 0


def _log2i(x: int) -> int:
    """floor(log2(x)) for x >= 1 (NCCL utils.h log2i); 0 for x < 1."""
    return int(x).bit_length() - 1 if x >= 1 else 0
