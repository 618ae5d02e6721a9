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

#: NCCL_ALGO / NCCL_PROTO names NCCL 2.30 accepts (its ncclAlgoStr / ncclProtoStr tables,
#: src/init.cc), lower case: NCCL compares them case-insensitively (strcasecmp in parseList)
NCCL_ALGO_NAMES = frozenset(
    {"ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"}
)
NCCL_PROTO_NAMES = frozenset({"ll", "ll128", "simple"})

#: NCCL's function for each op, as the per-function lists of NCCL_ALGO / NCCL_PROTO name them
#: (its ncclFuncStr table, src/init.cc: Broadcast, Reduce, AllGather, ReduceScatter,
#: AllReduce; lower case, compared case-insensitively). all_to_all, sendrecv and the other
#: peer-to-peer ops are no function of that table: neither variable applies to them.
NCCL_FUNCTIONS = {
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "all_reduce": "allreduce",
}

_NCCL_LIST_FORM = (
    "a comma list, '^' to exclude; a list per function as 'allreduce:tree', ';' between; "
    f"functions: {', '.join(NCCL_FUNCTIONS.values())}"
)


def parse_nccl_list(
    value: str, var: str = "NCCL_ALGO", *, lead: str | None = None
) -> list[tuple[str | None, str]]:
    """An NCCL_ALGO / NCCL_PROTO value as NCCL 2.24+ reads it: its ``(function, list)``
    mappings in order (function None: the first list, for every function), every name checked.

    NCCL's grammar (``parseList`` in src/graph/tuning.cc, which ``ncclTopoTuneModel`` calls
    for both variables): mappings are ``;``-delimited; each is ``function:list`` or, for the
    first only, a bare ``list`` that applies to every function; a list is comma-delimited
    names, or ``^`` and names to exclude; function and names are case-insensitive (the
    functions of :data:`NCCL_FUNCTIONS`, the names of :data:`NCCL_ALGO_NAMES` /
    :data:`NCCL_PROTO_NAMES`). Empty pieces are skipped, as ``strtok_r`` skips them. NCCL
    refuses anything else (``ncclInvalidUsage``: "Unrecognized element token", "Unrecognized
    prefix token", "All entries except the first must have a prefix"), and so does this: a
    ValueError naming ``var`` (or ``lead``) and the allowed names, on one line.

    >>> parse_nccl_list("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring")
    [(None, 'ring,collnetdirect'), ('allreduce', 'tree,collnetdirect'), ('broadcast', 'ring')]
    >>> parse_nccl_list("LL,Simple;allreduce:^LL", "NCCL_PROTO")
    [(None, 'LL,Simple'), ('allreduce', '^LL')]
    >>> parse_nccl_list("allreduce:tree;ring")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: NCCL_ALGO: 'allreduce:tree;ring' is not an NCCL_ALGO value (only the first list may lack a function: 'ring'); allowed: ...
    """
    if var not in ("NCCL_ALGO", "NCCL_PROTO"):
        raise ValueError(f"var: {var!r} is not known; allowed: NCCL_ALGO, NCCL_PROTO")
    known = NCCL_ALGO_NAMES if var == "NCCL_ALGO" else NCCL_PROTO_NAMES
    text = str(value)

    def refuse(why: str) -> ValueError:
        return ValueError(
            f"{lead or f'{var}: {text!r}'} is not an {var} value ({why}); allowed: "
            f"{', '.join(sorted(known))} ({_NCCL_LIST_FORM})"
        )

    out: list[tuple[str | None, str]] = []
    for mapping in (m for m in text.split(";") if m):
        # strtok_r(":"): the function, then the list; a third piece is never read by NCCL
        pieces = [p for p in mapping.split(":") if p]
        function: str | None = pieces[0] if len(pieces) > 1 else None
        names = pieces[1] if len(pieces) > 1 else pieces[0]
        if function is None and out:
            raise refuse(f"only the first list may lack a function: {mapping!r}")
        if function is not None and function.lower() not in NCCL_FUNCTIONS.values():
            raise refuse(f"{function!r} is no NCCL function")
        listed = [n for n in names.removeprefix("^").split(",") if n]
        for name in listed:
            if name.lower() not in known:
                raise refuse(f"{name!r} is not a name NCCL knows")
        if not listed and not names.startswith("^"):
            raise refuse(f"{mapping!r} enables nothing, so every call would fail")
        out.append((None if function is None else function.lower(), names))
    if not out:
        raise refuse("it names nothing")
    return out


def nccl_list_for(op: str, value: object, var: str = "NCCL_ALGO") -> str | None:
    """The plain list an NCCL_ALGO / NCCL_PROTO ``value`` makes NCCL apply to ``op``, or None
    for NCCL's own choice.

    NCCL reads the mappings in order (:func:`parse_nccl_list`), each resetting the whole list
    of the functions it names (the first, bare list: every function), so ``op``'s list is the
    last mapping that names its function (:data:`NCCL_FUNCTIONS`), else the first bare list.
    None when neither applies, when the list excludes nothing (``^``), when ``value`` is
    empty or missing (None, NaN: nothing recorded), and for ops no function of NCCL's table
    (all_to_all, sendrecv: peer-to-peer, which neither variable applies to), whose value is
    still checked. A value without ``;`` or ``:`` comes back as it is. Units: none (names).
    Reference: NCCL src/graph/tuning.cc ``parseList`` and its comment's examples.

    >>> nccl_list_for("all_reduce", "allreduce:tree"), nccl_list_for("all_gather", "allreduce:tree")
    ('tree', None)
    >>> value = "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring"
    >>> [nccl_list_for(op, value) for op in ("all_reduce", "broadcast", "all_gather")]
    ['tree,collnetdirect', 'ring', 'ring,collnetdirect']
    >>> nccl_list_for("all_reduce", "^LL128;allreduce:LL128", "NCCL_PROTO")
    'LL128'
    >>> nccl_list_for("reduce", "Tree"), nccl_list_for("all_to_all", "Tree")
    ('Tree', None)
    """
    if not isinstance(value, str):
        try:
            missing = value is None or bool(value != value)  # None, NaN: nothing recorded
        except TypeError:  # pd.NA has no truth value: nothing recorded either
            missing = True
        if missing:
            return None
        value = str(value)
    text = value.strip()
    if not text:
        return None
    chosen: str | None = None
    function = NCCL_FUNCTIONS.get(op)
    for name, names in parse_nccl_list(text, var):
        if name is None or name == function:
            chosen = names
    if function is None or chosen is None or not chosen.removeprefix("^"):
        return None
    return chosen


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


def is_choice_set(value: object) -> bool:
    """Whether an ``algorithm`` / ``protocol`` value is a set (``"ring,tree"``, ``"^ring"``)
    rather than one name or ``"auto"``: a comma list, or a leading ``^``, as NCCL_ALGO /
    NCCL_PROTO write one (:func:`choice_set`); a list per function (``:``, ``;``) too, which
    :func:`choice_set` refuses with a pointer to :func:`nccl_list_for`.

    >>> is_choice_set("ring,tree"), is_choice_set("^ll"), is_choice_set("ring")
    (True, True, False)
    """
    return isinstance(value, str) and (
        any(c in value for c in ",:;") or value.strip().startswith("^")
    )


def choice_set(value: str, field: str = "algorithm") -> tuple[bool, tuple[str, ...]]:
    """A set of algorithms or protocols as NCCL_ALGO / NCCL_PROTO allow one:
    ``(exclude, names)``, the names in this module's spelling, each once.

    NCCL's plain-list grammar (``parseList`` in src/graph/tuning.cc): names separated by
    commas, case-insensitive, NCCL's spellings (``collnetdirect``, ``NVLSTree``) mapped to
    ours as :func:`normalize_algorithm` / :func:`normalize_protocol` do; a leading ``^``
    excludes the names that follow (``^ring``: every algorithm but ring). Empty pieces are
    skipped, as NCCL's ``strtok_r`` skips them. A list per function (``allreduce:tree``) is
    no set of one op: :func:`nccl_list_for` resolves it for an op first. Units: none (names).

    >>> choice_set("Ring, CollNetDirect"), choice_set("^LL128", "protocol")
    ((False, ('ring', 'collnet_direct')), (True, ('ll128',)))
    >>> choice_set("ring,foo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: algorithm: 'foo' in the set 'ring,foo' is not an NCCL algorithm; allowed in a set: ...
    """
    if field not in ("algorithm", "protocol"):
        raise ValueError(f"field: {field!r} is not known; allowed: algorithm, protocol")
    text = str(value).strip()
    allowed = (
        f"auto, {', '.join(ALGORITHMS)}, p2p"
        if field == "algorithm"
        else f"auto, {', '.join(PROTOCOLS)}"
    )
    form = "names separated by commas, '^' first to exclude them (as NCCL_ALGO / NCCL_PROTO)"
    if ";" in text or ":" in text:
        raise ValueError(
            f"{field}: {text!r} is a list per function, not a set for one op; allowed: {allowed} "
            f"or a set of them ({form})"
        )
    exclude = text.startswith("^")
    names = [n.strip() for n in text.removeprefix("^").split(",") if n.strip()]
    if not names and not exclude:
        raise ValueError(f"{field}: {text!r} names nothing; allowed: {allowed} or a set ({form})")
    normalize = normalize_algorithm if field == "algorithm" else normalize_protocol
    out: list[str] = []
    for name in names:
        try:
            out.append(normalize(name))
        except ValueError:
            kind = "NCCL algorithm" if field == "algorithm" else "NCCL protocol"
            members = allowed.removeprefix("auto, ")  # "auto" is a whole value, no member
            raise ValueError(
                f"{field}: {name!r} in the set {text!r} is not an {kind}; allowed in a set: "
                f"{members} ({form}); or auto alone"
            ) from None
    return exclude, tuple(dict.fromkeys(out))


def canonical_choice(value: str, field: str = "algorithm") -> str:
    """``value`` with a set (:func:`choice_set`) in one spelling: our names, in the order
    given, ``^`` first to exclude; ``"auto"`` for ``^`` alone (excludes nothing), the name
    for a set of one. One name or ``"auto"`` comes back as it is.

    >>> canonical_choice("Ring,CollNetDirect,ring"), canonical_choice("^"), canonical_choice("tree,")
    ('ring,collnet_direct', 'auto', 'tree')
    """
    if not is_choice_set(value):
        return value
    exclude, names = choice_set(value, field)
    if exclude:
        return "^" + ",".join(names) if names else "auto"
    return names[0] if len(names) == 1 else ",".join(names)


def set_members(
    value: str, universe: tuple[str, ...] | list[str], field: str = "algorithm"
) -> list[str]:
    """The names of ``universe`` a set (:func:`choice_set`) allows, in ``universe``'s order.

    >>> set_members("^ring", ("tree", "ring", "nvls")), set_members("nvls,ring", ("tree", "ring", "nvls"))
    (['tree', 'nvls'], ['ring', 'nvls'])
    """
    exclude, names = choice_set(value, field)
    return [a for a in universe if (a in names) != exclude]


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
