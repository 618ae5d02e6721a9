"""Which (algorithm, protocol) pairs NCCL would consider (enqueue.cc
l.1989-2066, tuning.cc l.498-536)."""

from __future__ import annotations

from .. import tables as T
from .bandwidth import _candidates, bus_bandwidth_gbs
from .names import (
    P2P_ALGORITHM,
    PROTOCOLS,
    check_op,
    is_choice_set,
    normalize_algorithm,
    normalize_protocol,
    set_members,
)
from .search import TopologyInputs


def unavailable_reason(op: str, algorithm: str, protocol: str, topo: TopologyInputs) -> str | None:
    """Why this cluster cannot run (op, algorithm, protocol), or None if it can.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=8.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=12)
    >>> unavailable_reason("all_reduce", "nvls", "simple", t)
    'NVLS needs NVLink SHARP (an NVSwitch system with compute capability >= 9.0)'
    >>> h = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=False)
    >>> unavailable_reason("all_reduce", "nvls", "simple", h)
    'NVLS is switched off for this cluster (as NCCL_NVLS_ENABLE=0 does), though its NVSwitch has it'
    """
    if op == "all_to_all":
        return None if algorithm == P2P_ALGORITHM else "all_to_all runs only as p2p in NCCL"
    if algorithm == P2P_ALGORITHM:
        return "p2p is only used for all_to_all"
    if algorithm not in _candidates(op):
        return f"NCCL has no {algorithm} for {op} (allowed: {', '.join(_candidates(op))})"
    if _simple_only(algorithm) and protocol != "simple":
        return f"{algorithm} runs only with the simple protocol"
    if algorithm.startswith("collnet"):
        if not topo.collnet_support:
            return "CollNet needs IB SHARP (in-network reduction) across several nodes"
        if topo.gpus_per_node > T.NCCL_COLLNET_MAX_LOCAL_RANKS:
            return f"CollNet needs <= {T.NCCL_COLLNET_MAX_LOCAL_RANKS} GPUs per node"
        if algorithm == "collnet_direct" and not topo.nvswitch:
            return "CollNetDirect needs an NVSwitch system"
    if algorithm in ("nvls", "nvls_tree"):
        if not topo.nvls_support:
            if topo.nvswitch and topo.compute_capability >= 9.0 and topo.gpus_per_node >= 2:
                # the hardware has NVLink SHARP: NVLS was switched off (NCCL_NVLS_ENABLE=0)
                return "NVLS is switched off for this cluster (as NCCL_NVLS_ENABLE=0 does), though its NVSwitch has it"
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


def _simple_only(algorithm: str) -> bool:
    """Whether NCCL runs ``algorithm`` with the simple protocol only (NVLS, NVLS tree, PAT and
    CollNet: no LL or LL128 kernels)."""
    return algorithm in ("nvls", "nvls_tree", "pat") or algorithm.startswith("collnet")


def _default_enabled(op: str, algorithm: str, topo: TopologyInputs) -> bool:
    """Algorithms on by default: CollNet and multi-node NVLS only with NCCL_COLLNET_ENABLE."""
    if algorithm.startswith("collnet") or (algorithm == "nvls" and topo.nodes > 1):
        return topo.collnet_enabled
    return True


def candidates(
    op: str, topo: TopologyInputs, algorithm: str = "auto", protocol: str = "auto"
) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs NCCL would consider; raises if a pinned one cannot run.

    ``algorithm`` and ``protocol`` are ``"auto"``, one name, or a set as NCCL_ALGO /
    NCCL_PROTO allow one (:func:`costmodel.nccl.names.choice_set`: ``"ring,tree"``,
    ``"^ring"``): auto's pairs restricted to the set, so the choice among them is auto's
    argmin over fewer candidates. Decision: a name a set lists is enabled as that name
    pinned alone is (CollNet, multi-node NVLS where the hardware has them, even without
    NCCL_COLLNET_ENABLE), so a set is the fastest of its members pinned one by one; a ``^``
    set is auto's candidates (on by default only) less the names excluded. Names NCCL has
    no kernel for on ``op`` (``pat`` for all-reduce) are dropped, as NCCL ignores them; a set
    that leaves nothing that can run is refused as a pinned name that cannot run is.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> candidates("all_reduce", t, algorithm="nvls")
    [('nvls', 'simple')]
    >>> candidates("all_reduce", t, algorithm="^ring,tree", protocol="ll,simple")
    [('nvls', 'simple')]
    """
    check_op(op)
    a_set, p_set = is_choice_set(algorithm), is_choice_set(protocol)
    protos = (
        PROTOCOLS
        if protocol == "auto"
        else tuple(set_members(protocol, PROTOCOLS, "protocol"))
        if p_set
        else (normalize_protocol(protocol),)
    )
    if op == "all_to_all":
        if a_set:
            a = (set_members(algorithm, [P2P_ALGORITHM]) or [algorithm])[0]
        else:
            a = P2P_ALGORITHM if algorithm == "auto" else normalize_algorithm(algorithm)
        if a != P2P_ALGORITHM:
            raise ValueError(f"algorithm: {algorithm!r} cannot run all_to_all; allowed: auto, p2p")
        if not protos:
            raise ValueError(
                f"protocol: {protocol!r} leaves no protocol for all_to_all; allowed: auto, "
                + ", ".join(PROTOCOLS)
            )
        # p2p has no protocol of its own to choose: simple where allowed, as auto
        return [(P2P_ALGORITHM, "simple" if "simple" in protos else protos[0])]
    if algorithm == "auto":
        algos: tuple[str, ...] = _candidates(op)
    elif a_set:
        algos = tuple(set_members(algorithm, _candidates(op)))
    else:
        algos = (normalize_algorithm(algorithm),)
    # auto and a "^" set choose among the algorithms on by default; a name listed is asked for
    by_default = algorithm == "auto" or (a_set and algorithm.strip().startswith("^"))
    out, reasons = [], []
    for a in algos:
        if by_default and not _default_enabled(op, a, topo):
            reasons.append((a, "*", "not on by default (NCCL_COLLNET_ENABLE=0)"))
            continue
        for p in protos:
            why = unavailable_reason(op, a, p, topo)
            if why is None:
                out.append((a, p))
            else:
                reasons.append((a, p, why))
    if protocol == "auto" or p_set:
        # with the protocol left to NCCL, "nvls runs only with the simple protocol" (said of ll
        # and ll128) is no reason: the algorithm's own is the one with its protocol
        own = [(a, p, why) for a, p, why in reasons if p in ("simple", "*") or not _simple_only(a)]
        reasons = own or reasons
    if not out:
        # in the table's order (tables.NCCL_OP_ALGORITHMS), as every list of algorithms
        allowed = [
            a
            for a in _candidates(op)
            if any(unavailable_reason(op, a, p, topo) is None for p in PROTOCOLS)
        ]
        why_not = "; ".join(f"{a}/{p}: {why}" for a, p, why in reasons[:3]) or (
            f"NCCL has none of them for {op}: it has {', '.join(_candidates(op))}"
        )
        if not protos:
            why_not = "it leaves no protocol"
        raise ValueError(
            f"algorithm: {algorithm!r} with `protocol` {protocol!r} cannot run {op} on this cluster "
            f"({why_not}); allowed algorithms here: auto, {', '.join(allowed)}"
        )
    return out


#: NCCL's reductions that reduce (an all-gather's buffer is copied, never reduced: NCCL lets it
#: run on NVLS whatever its type; broadcast and all-to-all reduce nothing either)
_REDUCING_OPS = ("all_reduce", "reduce_scatter", "reduce")
#: Per datatype (nccl-tests' names, and NCCL's own spellings), the reductions NVLS can run
#: (NCCL src/include/device.h, ``ncclNvlsSupported``): Sum or MinMax on the 32- and 64-bit
#: integers and the 16-bit floats, Sum alone on float and double, nothing on the 8-bit types
_NVLS_REDOPS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("int32", "uint32", "int64", "uint64", "half", "float16", "bfloat16", "bf16"),
        frozenset({"sum", "max", "min"}),
    ),
    **dict.fromkeys(("float", "float32", "double", "float64"), frozenset({"sum"})),
    **dict.fromkeys(
        ("int8", "char", "uint8", "f8e4m3", "f8e5m2", "float8e4m3", "float8e5m2"), frozenset()
    ),
}
#: nccl-tests' reduction names (its ``redop`` column: test_opNames)
_REDOPS = ("sum", "prod", "max", "min", "avg", "mulsum", "premulsum")


def nvls_reduction_supported(op: str, dtype: object, redop: object) -> bool | None:
    """Whether NCCL lets a reduction of ``dtype`` with ``redop`` run on NVLS or NVLS tree:
    False where it does not, so the row runs on ring or tree (NVLS off for that call alone);
    None where the rule says nothing (``op`` reduces nothing, or the type or reduction is not
    known or not given).

    NCCL 2.19 and later (src/include/device.h, ``ncclNvlsSupported(devRedOp, type)``, which
    src/enqueue.cc's ``ncclPrepareTasks`` applies to every op but all-gather before
    ``topoGetAlgoInfo`` skips NVLS and NVLS tree): int32, uint32, int64, uint64, half and
    bfloat16 with Sum or MinMax (``max``, ``min``); float and double with Sum only; no other
    type (int8, uint8, the fp8 types). ``avg`` is Sum followed by a division (integers) or a
    pre-multiplied Sum (floats), ``prod`` and ``mulsum`` are their own device ops: none is
    Sum or MinMax, so none runs on NVLS.

    >>> nvls_reduction_supported("all_reduce", "float", "sum")
    True
    >>> nvls_reduction_supported("all_reduce", "float", "max"), nvls_reduction_supported("all_reduce", "int8", "sum")
    (False, False)
    >>> nvls_reduction_supported("all_gather", "int8", "none") is None
    True
    """
    if op not in _REDUCING_OPS or not isinstance(dtype, str):
        return None
    allowed = _NVLS_REDOPS.get(dtype.lower())
    if allowed is None:
        return None
    if not allowed:  # no reduction of this type runs on NVLS
        return False
    if not isinstance(redop, str) or redop.lower() not in _REDOPS:
        return None
    return redop.lower() in allowed
