r"""The collective models: one name each, what each is for, and the two alpha-beta ones on a cluster.

Every surface (``cm.predict_collective``, ``cm.allreduce_time(M, cluster)``, the CLI's
``--model``, ``cm.sweep``'s ``model`` column, the app's model radios, Scenario and the DDP step)
maps (model, cluster, op, sizes) to a time through one function,
:func:`costmodel.predict.predict_collective`, which dispatches on these names:

========== ====================================================================================
model      what it is for
========== ====================================================================================
lesson     The seed lesson's flat ring: every GPU on one ring at the per-GPU line rate (inside
           a node) or its share of the node's NICs, datasheet figures (one 400G NIC per GPU is
           50 GB/s). It reproduces the lesson's worked examples; it is no prediction of NCCL.
textbook   Topology-aware alpha-beta (DESIGN 3.2): intra- and inter-node levels, NIC-count
           aware (a ring crosses each node boundary once per channel, so across nodes it runs at
           ``min(B_intra, k B_NIC)``), links at their measured efficiency. ``algorithm="auto"``
           is the flat ring; ``"hierarchical"`` / ``"hierarchical_pipelined"`` the two-level
           all-reduce. The best an ideal implementation of the named algorithm could do.
nccl       (default) The realistic model: NCCL 2.30's own algorithm/protocol choice, timed with
           the terms NCCL's tuner leaves out (fitted corrections); on a calibrated cluster the
           calibrated answer (warns where the calibration lacks the op or level).
calibrated The realistic model with the candidates a calibration preset fitted on this cluster
           (``costmodel calibrate ... --cluster NAME``: efficiency and latency per NCCL
           algorithm/protocol); older presets with alpha-beta fits only use
           ``T = s(N) alpha + b(M, N) / B``. Refuses an op/level not calibrated.
========== ====================================================================================

``nccl-table`` (NCCL's tuning table alone, no corrections) is a *reference baseline* for the
fidelity report and ``validate compare``, not one of the four answer models; it stays accepted
everywhere a model name is.

Decision (names): ``"textbook"`` meant the lesson's flat ring in ``predict_collective`` and the
topology-aware model in ``cm.allreduce_time(M, cluster)`` before; it now means the latter
everywhere and the flat ring is ``"lesson"``. No other name changed, so :data:`DEPRECATED` is
empty; a name put there later is accepted with a :class:`DeprecationWarning` naming its successor.

>>> check_model("textbook"), MODELS
('textbook', ('lesson', 'textbook', 'nccl', 'calibrated'))
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from . import collectives, topology

if TYPE_CHECKING:
    from .hardware import Cluster

LESSON = "lesson"
TEXTBOOK = "textbook"
NCCL = "nccl"
CALIBRATED = "calibrated"
NCCL_TABLE = "nccl-table"

#: the four answer models, in the order surfaces list them
MODELS: tuple[str, ...] = (LESSON, TEXTBOOK, NCCL, CALIBRATED)
#: reference baselines (fidelity report, validate compare): accepted, but no answer model
REFERENCE_MODELS: tuple[str, ...] = (NCCL_TABLE,)
DEFAULT = NCCL
#: old name -> current name; accepted with a DeprecationWarning
DEPRECATED: dict[str, str] = {}

DESCRIPTIONS: dict[str, str] = {
    LESSON: "the lesson's flat ring at the per-GPU NIC bandwidth (reproduces its worked examples)",
    TEXTBOOK: "topology-aware alpha-beta: intra/inter levels, NIC count, measured link efficiency",
    NCCL: "realistic: NCCL's own choice timed with the fitted corrections (default)",
    CALIBRATED: "the realistic model calibrated on this cluster (a calibration preset)",
    NCCL_TABLE: "reference baseline: NCCL's tuning table alone, no corrections",
}

#: all-reduce algorithms of the textbook model that exist only on a cluster -> topology mode
CLUSTER_ALLREDUCE_ALGORITHMS: dict[str, str] = {
    "hierarchical": "serial",
    "hierarchical_pipelined": "pipelined",
}
# algorithms whose traffic crosses each node boundary once per channel (ring-like)
_RING_LIKE = ("ring", "chain")

# both alpha-beta models' algorithm per op when "auto": the ring-like one, by its canonical
# name (collectives.ALGORITHMS; all-to-all's only row is the pairwise exchange)
LESSON_DEFAULT_ALGORITHM: dict[str, str] = {
    "all_reduce": "ring",
    "reduce_scatter": "ring",
    "all_gather": "ring",
    "broadcast": "chain",
    "reduce": "chain",
    "all_to_all": "pairwise",
}


def check_model(model: object, *, reference: bool = True, default: str = DEFAULT) -> str:
    """The canonical name of ``model``; ValueError naming the allowed ones if unknown.

    ``reference=False`` refuses the reference baseline ``nccl-table`` (a surface that asks for
    an answer, not a comparison). ``default``: the caller's own default, which the message
    marks (``collective_time`` defaults to ``textbook``, not ``nccl``).

    >>> check_model("nccl-table")
    'nccl-table'
    >>> check_model("magic")
    Traceback (most recent call last):
    ...
    ValueError: model='magic' unknown; allowed: nccl (default), lesson, textbook, calibrated; reference baseline: nccl-table
    """
    if isinstance(model, str) and model in DEPRECATED:
        new = DEPRECATED[model]
        warnings.warn(
            f"model={model!r} is deprecated; use model={new!r}", DeprecationWarning, stacklevel=3
        )
        model = new
    ok = MODELS + (REFERENCE_MODELS if reference else ())
    if model not in ok:
        others = ", ".join(m for m in MODELS if m != default)
        tail = f"; reference baseline: {', '.join(REFERENCE_MODELS)}" if reference else ""
        raise ValueError(f"model={model!r} unknown; allowed: {default} (default), {others}{tail}")
    return str(model)


def available(cluster: Cluster, *, reference: bool = False) -> tuple[str, ...]:
    """The models that can answer for ``cluster``: ``calibrated`` only with a calibration.

    >>> from costmodel.presets import cluster
    >>> available(cluster("dgx-h100"))
    ('lesson', 'textbook', 'nccl')
    """
    out = tuple(m for m in MODELS if m != CALIBRATED or cluster.calibration is not None)
    return out + (REFERENCE_MODELS if reference else ())


#: input aliases the alpha-beta models accept besides their canonical names: ``"ring"`` for
#: every op (all-to-all's pairwise exchange, broadcast's and reduce's pipelined chain:
#: :func:`costmodel.collectives.canonical_algorithm`); answered and listed by the canonical name
INPUT_ALIASES: tuple[str, ...] = ("ring",)


def textbook_algorithms(model: str, op: str) -> tuple[str, ...]:
    """The algorithms of the alpha-beta ``model`` for ``op`` (besides ``"auto"``), each once by
    its canonical name: what ``algorithm="all"`` lists and what the models answer with.

    Decision (names): one name per algorithm. ``"ring"`` stays accepted as an input for every
    op (:data:`INPUT_ALIASES`), but where it names another row (all-to-all's pairwise
    exchange, broadcast's and reduce's chain) it is no row of its own: it listed the same
    formula twice, with the same time, and the textbook model answered ``ring`` where the
    lesson model answered ``pairwise``.

    >>> textbook_algorithms("lesson", "all_to_all"), textbook_algorithms("textbook", "broadcast")
    (('pairwise',), ('chain', 'binomial_tree'))
    """
    names = collectives.ALGORITHMS[op]
    if model == TEXTBOOK and op == "all_reduce":
        names += tuple(CLUSTER_ALLREDUCE_ALGORITHMS)
    return tuple(dict.fromkeys(names))


def _canonical(op: str, algorithm: str) -> str:
    """The name ``algorithm`` is answered by: ``"auto"`` -> the op's default
    (:data:`LESSON_DEFAULT_ALGORITHM`), an alias -> its row's name, others as given."""
    if algorithm == "auto":
        return LESSON_DEFAULT_ALGORITHM[op]
    if algorithm in INPUT_ALIASES:
        return collectives.canonical_algorithm(op, algorithm)
    return algorithm


def lesson_time_s(
    op: str, message_bytes: np.ndarray, c: Cluster, algorithm: str = "auto"
) -> tuple[np.ndarray, str]:
    r"""The lesson's flat ring on a cluster: ``(time_s, algorithm)``.

    All ``N`` ranks on one flat alpha-beta formula of :mod:`costmodel.collectives` (DESIGN 3.1)
    at the datasheet per-GPU bandwidth: inside one node the intra link ``B_intra``; across nodes
    :math:`\min(B_{intra}, B_{NIC\,share})` with the per-GPU NIC share ``k B_NIC / g`` and the
    larger latency. For 8 x H100 with one 400G NIC each that is the lesson's 50 GB/s.

    >>> from costmodel.presets import cluster
    >>> t, a = lesson_time_s("all_reduce", np.array([8 * 2**30]), cluster("dgx-h100", nodes=2))
    >>> round(float(2 * 15 / 16 * 8 * 2**30 / t[0]) / 1e9), a     # busbw [GB/s]
    (50, 'ring')
    """
    return _lesson(op, message_bytes, c, c.nodes, algorithm)


def _lesson(
    op: str, message_bytes: ArrayLike, c: Cluster, nodes: ArrayLike, algorithm: str
) -> tuple[np.ndarray, str]:
    """:func:`lesson_time_s` with the node count as an argument (an int or an array that
    broadcasts with ``message_bytes``); ``c`` gives the node, its ``nodes`` is not used."""
    algo = _canonical(op, algorithm)
    shape = np.broadcast_shapes(np.shape(message_bytes), np.shape(nodes))
    if algo == "nvls":
        _check_lesson_nvls(c, nodes)
    if isinstance(nodes, int):
        multi: ArrayLike = nodes > 1
        ranks: ArrayLike = nodes * c.gpus_per_node
    else:
        n = np.asarray(nodes, dtype=np.int64)
        multi, ranks = n > 1, n * c.gpus_per_node
    bw_across = min(c.intra_bandwidth_bytes_per_s, c.inter_bandwidth_bytes_per_s)
    lat_across = max(c.intra_latency_s, c.inter_latency_s)
    if isinstance(multi, bool):  # one cluster: plain floats (the formulas' scalar fast path)
        bw: Any = bw_across if multi else c.intra_bandwidth_bytes_per_s
        lat: Any = lat_across if multi else c.intra_latency_s
    else:
        bw = np.where(multi, bw_across, c.intra_bandwidth_bytes_per_s)
        lat = np.where(multi, lat_across, c.intra_latency_s)
    t = collectives.collective_time(op, message_bytes, ranks, bw, lat, algorithm=algo)  # type: ignore[arg-type]
    return np.broadcast_to(np.asarray(t, dtype=float), shape), algo


def _check_lesson_nvls(c: Cluster, nodes: ArrayLike) -> None:
    """ValueError unless every node count of ``nodes`` has a switch that reduces: NVLink SHARP
    (``nvls``) inside one node, IB SHARP (``sharp``) across nodes.

    The lesson's in-network reduction ("NVLS/SHARP halves the volume", its (N+1)/N M per GPU)
    is the switch's work: a cluster without one cannot run it. Offered on any preset, it was
    the lesson model's "fastest algorithm" for 14 GB on 8 DGX H100 nodes over plain NDR
    InfiniBand (284 ms), where NCCL's model says "multi-node NVLS needs CollNet (IB SHARP)"
    and the textbook model refuses it too.
    """
    n = np.asarray(nodes, dtype=np.int64)
    ok = np.where(n > 1, c.sharp, c.nvls)
    if not np.all(ok):
        worst = int(n[~ok].max()) if n.ndim else int(n)
        where = (
            f"IB SHARP across nodes: cluster {c.name!r} has sharp={c.sharp} and nodes={worst}"
            if worst > 1
            else f"NVLink SHARP inside the node: cluster {c.name!r} has nvls={c.nvls}"
        )
        raise ValueError(
            f"algorithm: 'nvls' (in-network reduction) needs {where}; allowed: ring, tree, "
            "halving_doubling, ..."
        )


def _flat_numbers(c: Cluster, algorithm: str, nodes: ArrayLike) -> tuple[Any, Any]:
    """(bandwidth, latency) of the whole cluster seen as one flat group of ranks, per node count
    (``nodes`` an int or an array; ``c`` gives the node)."""
    intra = c.effective_intra_bandwidth_bytes_per_s
    nic = c.node.nic
    if nic is None:  # Cluster validation: no network, one node
        return intra, c.intra_latency_s
    n = nodes if isinstance(nodes, int) else np.asarray(nodes, dtype=np.int64)
    if algorithm in _RING_LIKE:
        bw = topology.flat_ring_bandwidth(
            n, c.gpus_per_node, intra, c.nics_per_node, nic.effective_bandwidth_bytes_per_s
        )
    else:
        share = c.effective_inter_bandwidth_bytes_per_s
        bw = np.where(n > 1, min(intra, share) if c.gpus_per_node > 1 else share, intra)
    across = max(c.intra_latency_s, c.inter_latency_s) if c.gpus_per_node > 1 else c.inter_latency_s
    latency = np.where(n > 1, across, c.intra_latency_s)
    if np.ndim(bw) == 0 and np.ndim(latency) == 0:
        return float(bw), float(latency)
    return bw, latency


def textbook_time_s(
    op: str,
    message_bytes: ArrayLike,
    c: Cluster,
    algorithm: str = "auto",
    *,
    in_network_reduction: bool | None = None,
) -> tuple[np.ndarray, str]:
    r"""Topology-aware alpha-beta on a cluster (DESIGN 3.2): ``(time_s, algorithm)``.

    Bandwidths are the links' effective figures (datasheet x measured efficiency, e.g. 0.96 for
    NDR: 48 of 50 GB/s, nccl-tests #290/#319). ``algorithm``:

    - ``"auto"`` or ``"ring"``: one flat ring over all GPUs (all-to-all: its pairwise
      exchange; broadcast, reduce: the pipelined chain; answered by those canonical names),
      :func:`topology.flat_ring_allreduce_time` for all-reduce; across nodes its bandwidth is
      :math:`\min(B_{intra}, k B_{NIC})` (each ring crosses each node boundary once per channel,
      NCCL runs one channel per NIC);
    - ``"hierarchical"`` / ``"hierarchical_pipelined"`` (all-reduce): intra-node reduce-scatter,
      inter-node all-reduce of ``M/g`` per GPU over its NIC share, intra-node all-gather, summed
      or overlapped (:func:`topology.hierarchical_allreduce_time`), with in-network reduction
      when the cluster has IB SHARP (``in_network_reduction`` overrides, e.g. the Cluster page's
      what-if toggle);
    - any other name of ``collectives.ALGORITHMS[op]``: the flat formula over all ranks at the
      bottleneck per-GPU bandwidth (intra link in one node; across nodes ``min(intra, NIC share
      per GPU)``, or the ring bandwidth above for ring-like algorithms: ring and chain, by the
      row the name stands for, so all-to-all's pairwise exchange is not one).

    >>> from costmodel.presets import cluster
    >>> t, a = textbook_time_s("all_reduce", 8 * 2**30, cluster("dgx-h100", nodes=2))
    >>> round(float(2 * 15 / 16 * 8 * 2**30 / t) / 1e9), a    # 8 x 48 GB/s NICs, less latency
    (383, 'ring')
    """
    return _textbook(op, message_bytes, c, c.nodes, algorithm, in_network_reduction)


def _textbook(
    op: str,
    message_bytes: ArrayLike,
    c: Cluster,
    nodes: ArrayLike,
    algorithm: str,
    in_network_reduction: bool | None = None,
) -> tuple[np.ndarray, str]:
    """:func:`textbook_time_s` with the node count as an argument (an int or an array that
    broadcasts with ``message_bytes``); ``c`` gives the node, its ``nodes`` is not used."""
    algo = _canonical(op, algorithm)
    shape = np.broadcast_shapes(np.shape(message_bytes), np.shape(nodes))
    n = nodes if isinstance(nodes, int) else np.asarray(nodes, dtype=np.int64)
    if op == "all_reduce" and algo in CLUSTER_ALLREDUCE_ALGORITHMS:
        t = topology.hierarchical_allreduce_time(
            message_bytes,
            n,
            c.gpus_per_node,
            c.effective_intra_bandwidth_bytes_per_s,
            c.effective_inter_bandwidth_bytes_per_s,
            c.intra_latency_s,
            c.inter_latency_s,
            mode=CLUSTER_ALLREDUCE_ALGORITHMS[algo],  # type: ignore[arg-type]
            in_network_reduction=c.sharp if in_network_reduction is None else in_network_reduction,
        )
    elif algo in CLUSTER_ALLREDUCE_ALGORITHMS:
        raise ValueError(
            f"algorithm: {algo!r} is an all-reduce algorithm; allowed for {op!r}: "
            f"{', '.join(collectives.ALGORITHMS[op])}"
        )
    elif algo == "nvls" and not (c.nvls and np.max(n) == 1):
        raise ValueError(
            f"algorithm: 'nvls' needs in-switch reduction inside one node; cluster {c.name!r} has "
            f"nvls={c.nvls} and nodes={int(np.max(n))}; allowed: ring, hierarchical, tree, ..."
        )
    elif op == "all_reduce" and algo == "ring":
        nic = c.node.nic
        t = topology.flat_ring_allreduce_time(
            message_bytes,
            n,
            c.gpus_per_node,
            c.effective_intra_bandwidth_bytes_per_s,
            c.nics_per_node,
            0.0 if nic is None else nic.effective_bandwidth_bytes_per_s,
            c.intra_latency_s,
            c.inter_latency_s,
        )
    else:
        # by the row the name stands for: all-to-all's pairwise exchange (its "ring" input) sends
        # bytes that all cross the network, not a ring's neighbour hops
        bw, latency = _flat_numbers(c, collectives.canonical_algorithm(op, algo), n)
        ranks = n * c.gpus_per_node
        t = collectives.collective_time(op, message_bytes, ranks, bw, latency, algo)  # type: ignore[arg-type]
    return np.broadcast_to(np.asarray(t, dtype=float), shape), algo


def check_algorithm(model: str, op: str, algorithm: str) -> None:
    """ValueError unless ``algorithm`` is ``"auto"``, one the alpha-beta ``model`` runs or an
    input alias of one (:data:`INPUT_ALIASES`)."""
    ok = textbook_algorithms(model, op)
    if model == TEXTBOOK:  # textbook_time_s says which op they belong to
        ok += tuple(CLUSTER_ALLREDUCE_ALGORITHMS)
    aliases = tuple(a for a in INPUT_ALIASES if a not in ok)
    if algorithm != "auto" and algorithm not in ok + aliases:
        alias = "".join(
            f"; {a} (alias of {collectives.canonical_algorithm(op, a)})" for a in aliases
        )
        raise ValueError(
            f"algorithm={algorithm!r} is not a {model} {op} algorithm; "
            f"allowed: auto, {', '.join(dict.fromkeys(ok))}{alias}"
        )


def alpha_beta_rows(
    model: str,
    op: str,
    message_bytes: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    cluster: Cluster,
    algorithm: str = "auto",
) -> tuple[np.ndarray, str]:
    r"""The lesson or textbook model for rows of (size, nodes, GPUs per node): ``(time_s, algo)``.

    The rows are grouped by GPUs per node (one node preset each, :func:`presets.cluster`
    validates the largest node count of the group); each group is one array call of the same
    formulas :func:`lesson_time_s` / :func:`textbook_time_s` evaluate for one cluster, so a
    sweep gives :func:`costmodel.predict.predict_collective`'s numbers without a cluster per
    row (``cluster``'s node count is ignored).

    >>> from costmodel.presets import cluster
    >>> t, a = alpha_beta_rows("lesson", "all_reduce", 8 * 2**30, [1, 8], 8, cluster("dgx-h100"))
    >>> [round(float(2 * (8 * k - 1) / (8 * k) * 8 * 2**30 / x) / 1e9) for k, x in zip([1, 8], t)]
    [450, 50]
    """
    from .presets import cluster as load_cluster

    check_model(model)
    if model not in (LESSON, TEXTBOOK):
        raise ValueError(f"model={model!r}: allowed here: {LESSON}, {TEXTBOOK}")
    check_algorithm(model, op, algorithm)
    m, k, g = np.broadcast_arrays(
        np.asarray(message_bytes, dtype=float),
        np.asarray(nodes, dtype=np.int64),
        np.asarray(gpus_per_node, dtype=np.int64),
    )
    shape = m.shape
    m, k, g = m.ravel(), k.ravel(), g.ravel()
    t = np.zeros(m.size)
    algo = algorithm
    timer = _lesson if model == LESSON else _textbook
    uniq, inverse = np.unique(g, return_inverse=True)
    for j, gg in enumerate(uniq.tolist()):
        rows = np.flatnonzero(inverse == j) if len(uniq) > 1 else slice(None)
        kk = k[rows]
        c = load_cluster(cluster, nodes=int(kk.max()), gpus_per_node=int(gg))
        t[rows], algo = timer(op, m[rows], c, kk, algorithm)
    return t.reshape(shape), algo
