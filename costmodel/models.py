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

Which algorithm exists for which op under each model is one table, :func:`algorithms` (with
:func:`algorithm_aliases`): every surface lists it, accepts a name in it and refuses any other
with :func:`check_algorithm`'s one message, naming the field and the op's allowed list.

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

import functools
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
    ValueError: model: 'magic' is not a model; allowed: nccl (default), lesson, textbook, calibrated; reference baseline: nccl-table
    """
    if isinstance(model, str) and model in DEPRECATED:
        new = DEPRECATED[model]
        warnings.warn(
            f"model: {model!r} is deprecated; use {new!r}", DeprecationWarning, stacklevel=3
        )
        model = new
    ok = MODELS + (REFERENCE_MODELS if reference else ())
    if model not in ok:
        others = ", ".join(m for m in MODELS if m != default)
        tail = f"; reference baseline: {', '.join(REFERENCE_MODELS)}" if reference else ""
        raise ValueError(
            f"model: {model!r} is not a model; allowed: {default} (default), {others}{tail}"
        )
    return str(model)


def available(cluster: Cluster, *, reference: bool = False) -> tuple[str, ...]:
    """The models that can answer for ``cluster``: ``calibrated`` only with a calibration.

    >>> from costmodel.presets import cluster
    >>> available(cluster("dgx-h100"))
    ('lesson', 'textbook', 'nccl')
    """
    out = tuple(m for m in MODELS if m != CALIBRATED or cluster.calibration is not None)
    return out + (REFERENCE_MODELS if reference else ())


# --- the algorithms of each model, per op: one table for every surface ----------------------
#: NCCL's spelling of an algorithm that is an alias of another (NCCL_ALGO=CollNet is CollNetDirect)
NCCL_ALIASES: dict[str, str] = {"collnet": "collnet_direct"}
#: the name an algorithm choice takes for "the model's own choice"
AUTO = "auto"


def _alpha_beta(model: str) -> bool:
    return model in (LESSON, TEXTBOOK)


def algorithms(model: str, op: str, *, link: bool = False) -> tuple[str, ...]:
    """The algorithms ``model`` defines for ``op``, each once by its canonical name (besides
    ``"auto"``, the model's own choice): the one table of which algorithm exists for which op.

    Every surface asks this table: ``predict_collective`` and ``cm.collective_time`` refuse a
    name outside it (:func:`check_algorithm`), ``algorithm="all"`` (``predict_all_algorithms``,
    ``costmodel collective --algorithm all``, a sweep's ``algorithm=all``) lists exactly it, and
    the Collectives page offers it.

    - ``lesson``, ``textbook``: the alpha-beta rows of :data:`costmodel.collectives.ALGORITHMS`;
      the textbook model on a cluster also has the two-level all-reduce (``hierarchical``,
      ``hierarchical_pipelined``: :data:`CLUSTER_ALLREDUCE_ALGORITHMS`), which needs a node
      boundary and so is not among the formulas over one link (``link=True``: the CLI's
      ``collective --ranks/--bandwidth``, ``cm.collective_time`` with numbers, a sweep over a
      raw link, the page's one-link view).
    - ``nccl``, ``nccl-table``, ``calibrated``: NCCL's tuning table for the op
      (:data:`costmodel.tables.NCCL_OP_ALGORITHMS`); all-to-all is NCCL's point-to-point
      exchange, ``p2p``. Whether a cluster can run one (NVLS needs NVLink SHARP, CollNet IB
      SHARP, ...) is the cluster's question, answered with its reason by the model; a
      calibration with alpha-beta fits only answers the algorithms it has fits for.

    >>> algorithms("textbook", "all_reduce")[-2:], algorithms("textbook", "all_reduce", link=True)[-1]
    (('hierarchical', 'hierarchical_pipelined'), 'naive_all_to_all')
    >>> algorithms("lesson", "broadcast"), algorithms("nccl", "reduce_scatter"), algorithms("nccl", "all_to_all")
    (('chain', 'binomial_tree'), ('ring', 'nvls', 'collnet_direct', 'pat'), ('p2p',))
    """
    from .tables import NCCL_OP_ALGORITHMS, canonical_op

    model = check_model(model)
    op = canonical_op(op)
    if _alpha_beta(model):
        names = collectives.ALGORITHMS[op]
        if model == TEXTBOOK and op == "all_reduce" and not link:
            names += tuple(CLUSTER_ALLREDUCE_ALGORITHMS)
        return names
    if link:
        raise ValueError(
            f"model: {model!r} needs a cluster; allowed over one link: {LESSON}, {TEXTBOOK}"
        )
    return ("p2p",) if op == "all_to_all" else NCCL_OP_ALGORITHMS[op]


def algorithm_aliases(model: str, op: str) -> dict[str, str]:
    """Other names ``model`` accepts for an algorithm of ``op`` -> the canonical name it is
    answered by (in ``Prediction.algorithm``, ``algorithm_used`` and every list).

    The alpha-beta models: :data:`costmodel.collectives.ALIASES` (``ring`` for broadcast's and
    reduce's ``chain`` and all-to-all's ``pairwise``; ``pairwise`` for the reduce-scatter
    ``ring``). NCCL's models: :data:`NCCL_ALIASES` (``collnet``, NCCL_ALGO's name for
    ``collnet_direct``) where the op has that algorithm. Besides aliases, every model reads a
    name ignoring case, ``-``, ``_`` and spaces (``NVLSTree``, ``binomial-tree``), as NCCL reads
    ``NCCL_ALGO``.

    >>> algorithm_aliases("lesson", "reduce_scatter"), algorithm_aliases("textbook", "all_to_all")
    ({'pairwise': 'ring'}, {'ring': 'pairwise'})
    >>> algorithm_aliases("nccl", "all_reduce"), algorithm_aliases("nccl", "broadcast")
    ({'collnet': 'collnet_direct'}, {})
    """
    if _alpha_beta(check_model(model)):
        from .tables import canonical_op

        return dict(collectives.ALIASES[canonical_op(op)])
    names = algorithms(model, op)
    return {a: c for a, c in NCCL_ALIASES.items() if c in names}


def alias_summary() -> str:
    """Every alias of the table, once each with the ops it applies to (``--algorithm``'s help).

    >>> alias_summary()  # doctest: +NORMALIZE_WHITESPACE
    'pairwise = ring (reduce_scatter), ring = chain (broadcast, reduce), ring = pairwise
    (all_to_all); nccl: collnet = collnet_direct (all_reduce, reduce_scatter, all_gather)'
    """
    from .tables import OPS

    parts = []
    for model in (LESSON, NCCL):
        pairs: dict[tuple[str, str], list[str]] = {}
        for op in OPS:
            for a, c in algorithm_aliases(model, op).items():
                pairs.setdefault((a, c), []).append(op)
        text = ", ".join(f"{a} = {c} ({', '.join(ops)})" for (a, c), ops in pairs.items())
        parts.append(text if model == LESSON else f"{model}: {text}")
    return "; ".join(parts)


def allowed_algorithms_text(model: str, op: str, *, link: bool = False) -> str:
    """The allowed list every refusal of an algorithm for ``op`` ends with: ``auto``, the
    table's names (:func:`algorithms`), then each alias with what it stands for.

    >>> allowed_algorithms_text("lesson", "broadcast")
    'auto, chain, binomial_tree; ring (alias of chain)'
    """
    names = ", ".join((AUTO, *algorithms(model, op, link=link)))
    aliases = "".join(f"; {a} (alias of {c})" for a, c in algorithm_aliases(model, op).items())
    return names + aliases


def _where_else(model: str, op: str, key: str, link: bool) -> str:
    """Where a name that is not an algorithm of ``(model, op)`` is one: the cluster-only
    all-reduce over one link, another op of the model, another model (`` (...)`` or ``""``)."""
    from .tables import OPS, spelled_as

    if link:  # the two-level all-reduce crosses node boundaries: a cluster's only
        ops = [o for o in OPS if spelled_as(key, algorithms(model, o))]
        if ops and not any(spelled_as(key, algorithms(model, o, link=True)) for o in ops):
            return f" (model {model} has it for {', '.join(ops)} on a cluster)"
    for m in (model, *(x for x in (TEXTBOOK, NCCL) if x != model)):
        ops = [
            o
            for o in OPS
            if (o != op or m != model)
            and spelled_as(key, algorithms(m, o, link=link and m == model))
        ]
        if ops:
            who = "the model" if m == model else f"model {m}"
            return f" ({who} has it for {', '.join(ops)})"
    return ""


def check_algorithm(model: str, op: str, algorithm: object, *, link: bool = False) -> str:
    """The canonical name of ``algorithm`` for ``op`` under ``model`` (``"auto"`` stays
    ``"auto"``), read ignoring case, ``-``, ``_`` and spaces, an alias resolved
    (:func:`algorithm_aliases`); else ValueError naming the field, the op and the allowed list
    (:func:`allowed_algorithms_text`), the one message of every surface (the CLI writes the
    field as ``--algorithm``).

    >>> check_algorithm("textbook", "reduce_scatter", "Pairwise"), check_algorithm("nccl", "all_reduce", "NVLSTree")
    ('ring', 'nvls_tree')
    >>> check_algorithm("textbook", "broadcast", "hierarchical")
    Traceback (most recent call last):
    ...
    ValueError: algorithm: 'hierarchical' is not a textbook broadcast algorithm (the model has it for all_reduce); allowed: auto, chain, binomial_tree; ring (alias of chain)
    """
    if type(model) is str and type(op) is str and type(algorithm) is str:
        # names only: the answer kept per (model, op, name, link), so the scalar path
        # (cm.allreduce_time: a few us a call) does not search the tables on every call; a
        # refusal raises and is never kept, so it is said on every call
        return _check_algorithm_kept(model, op, algorithm, link)
    return _check_algorithm(model, op, algorithm, link)


def _check_algorithm(model: str, op: str, algorithm: object, link: bool) -> str:
    """:func:`check_algorithm`'s reading of ``algorithm`` (its docstring)."""
    from .nccl.names import canonical_choice, is_choice_set
    from .tables import canonical_op, spelled_as

    op = canonical_op(op)
    names = algorithms(model, op, link=link)
    aliases = algorithm_aliases(model, op)
    if not isinstance(algorithm, str):  # a list or an array: one algorithm per call
        raise ValueError(
            f"algorithm: one name per call, got {algorithm!r}; allowed: "
            + allowed_algorithms_text(model, op, link=link)
        )
    algorithm = algorithm.strip().lower()  # echoed in lower case, as every name is
    if is_choice_set(algorithm):
        # a set as NCCL_ALGO allows one ("ring,tree", "^ring"), in one spelling; the NCCL
        # models choose among its members (costmodel.nccl.candidates), the alpha-beta ones
        # choose nothing (their auto is the ring)
        algorithm = canonical_choice(algorithm, "algorithm")
        if is_choice_set(algorithm):
            if model in (NCCL, NCCL_TABLE, CALIBRATED) and not link:
                return algorithm
            over = " over one link" if link else ""
            raise ValueError(
                f"algorithm: {algorithm!r} is a set to choose from, but the {model} model does "
                f"not choose among {op} algorithms{over} (a set: the nccl, nccl-table and "
                "calibrated models on a cluster); allowed: "
                + allowed_algorithms_text(model, op, link=link)
            )
    # a canonical name (or an alias) as typed needs no spelling search: the scalar path's
    # case (cm.allreduce_time's "ring" on every call)
    known = algorithm == AUTO or algorithm in names or algorithm in aliases
    name = algorithm if known else spelled_as(algorithm, (AUTO, *names, *aliases))
    if name is None:
        over = " over one link" if link else ""
        raise ValueError(
            f"algorithm: {algorithm!r} is not a {model} {op} algorithm{over}"
            f"{_where_else(model, op, algorithm, link)}; allowed: "
            + allowed_algorithms_text(model, op, link=link)
        )
    return aliases.get(name, name)


def check_algorithm_every_op(model: str, algorithm: object, *, link: bool = False) -> str:
    """``algorithm`` for every op at once (``costmodel collective all``, ``predict --op all``,
    a sweep's ``op=all``): accepted only where every op has it (``auto``; ``ring`` for the
    alpha-beta models, whose every op accepts it), else ValueError naming the ops that lack it
    and the names every op accepts. Returns the name as :func:`check_algorithm` reads it for
    the first op (each op then answers by its own canonical name).

    >>> check_algorithm_every_op("textbook", "RING")
    'ring'
    >>> check_algorithm_every_op("nccl", "ring")
    Traceback (most recent call last):
    ...
    ValueError: algorithm: 'ring' is not a nccl algorithm of every op (not of all_to_all); allowed with every op: auto
    """
    from .tables import OPS, spelled_as

    if isinstance(algorithm, str):
        algorithm = algorithm.strip().lower()  # echoed in lower case, as every name is
    lacking = []
    for op in OPS:
        try:
            check_algorithm(model, op, algorithm, link=link)
        except ValueError:
            if not isinstance(algorithm, str):
                raise
            lacking.append(op)
    if lacking:
        raise ValueError(
            f"algorithm: {algorithm!r} is not a {model} algorithm of every op "
            f"(not of {', '.join(lacking)}); allowed with every op: "
            + ", ".join(every_op_algorithms(model, link=link))
        )
    key = spelled_as(str(algorithm), (AUTO, *every_op_algorithms(model, link=link)))
    return key or str(algorithm)


@functools.lru_cache(maxsize=1024)
def _check_algorithm_kept(model: str, op: str, algorithm: str, link: bool) -> str:
    """:func:`_check_algorithm` kept for names (every argument a str: hashable, immutable)."""
    return _check_algorithm(model, op, algorithm, link)


def every_op_algorithms(model: str, *, link: bool = False) -> tuple[str, ...]:
    """The names every op accepts under ``model`` (``auto`` first), for ``op`` ``all``.

    >>> every_op_algorithms("lesson"), every_op_algorithms("nccl")
    (('auto', 'ring'), ('auto',))
    """
    from .tables import OPS

    accepted = [
        set(algorithms(model, op, link=link)) | set(algorithm_aliases(model, op)) for op in OPS
    ]
    common = set.intersection(*accepted)
    first = (*algorithms(model, OPS[0], link=link), *algorithm_aliases(model, OPS[0]))
    return (AUTO, *(a for a in first if a in common))


def textbook_algorithms(model: str, op: str) -> tuple[str, ...]:
    """The algorithms of the alpha-beta ``model`` for ``op`` on a cluster (besides ``"auto"``),
    each once by its canonical name: :func:`algorithms` of the lesson or textbook model, what
    ``algorithm="all"`` lists and what the models answer with.

    Decision (names): one name per algorithm. An alias (:func:`algorithm_aliases`: ``ring``
    for all-to-all's pairwise exchange and broadcast's and reduce's chain, ``pairwise`` for the
    reduce-scatter ring) stays accepted as an input, but is no row of its own: it listed the
    same formula twice, with the same time, and the textbook model answered ``ring`` where the
    lesson model answered ``pairwise``.

    >>> textbook_algorithms("lesson", "all_to_all"), textbook_algorithms("textbook", "broadcast")
    (('pairwise',), ('chain', 'binomial_tree'))
    """
    if not _alpha_beta(check_model(model)):
        raise ValueError(
            f"model: {model!r} has no alpha-beta rows; allowed here: {LESSON}, {TEXTBOOK}"
        )
    return algorithms(model, op)


def link_algorithm(model: str, op: str, algorithm: str) -> str:
    """The alpha-beta row ``algorithm`` runs over one link: :func:`check_algorithm` with
    ``link=True``, ``"auto"`` being the model's default (:data:`LESSON_DEFAULT_ALGORITHM`, the
    ring-like row, as on a cluster).

    >>> link_algorithm("textbook", "broadcast", "auto"), link_algorithm("lesson", "reduce_scatter", "pairwise")
    ('chain', 'ring')
    """
    from .tables import canonical_op

    op = canonical_op(op)
    name = check_algorithm(model, op, algorithm, link=True)
    return LESSON_DEFAULT_ALGORITHM[op] if name == AUTO else name


def _canonical(model: str, op: str, algorithm: str) -> str:
    """The row ``algorithm`` is answered by (:func:`check_algorithm`, refusing a name the
    model has not for ``op``): ``"auto"`` -> the op's default (:data:`LESSON_DEFAULT_ALGORITHM`),
    an alias -> its row's name, others as given."""
    name = check_algorithm(model, op, algorithm)
    return LESSON_DEFAULT_ALGORITHM[op] if name == AUTO else name


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
    algo = _canonical(LESSON, op, algorithm)
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
    r"""ValueError unless every node count of ``nodes`` is one node whose switch reduces
    (NVLink SHARP, ``nvls``). The lesson's in-switch formula, :math:`a + (N+1)/N\,M b`, is one
    NVSwitch domain's; the lesson gives none across nodes, so the lesson model refuses ``nvls``
    on more than one node (the textbook model's hierarchical all-reduce and the nccl model's
    NVLSTree and CollNet answer it).

    The lesson's in-network reduction ("NVLS/SHARP halves the volume", its (N+1)/N M per GPU)
    is the switch's work: a cluster without one cannot run it. Offered on any preset, it was
    the lesson model's "fastest algorithm" for 14 GB on 8 DGX H100 nodes over plain NDR
    InfiniBand (284 ms), where NCCL's model says "multi-node NVLS needs CollNet (IB SHARP)"
    and the textbook model refuses it too.
    """
    n = np.asarray(nodes, dtype=np.int64)
    if np.any(n > 1):
        # the lesson's formula is one NVSwitch domain's: across nodes it got faster per node
        # added (64 MiB on 2 -> 64 nodes of coreweave-hgx-h100, 1.43 -> 1.35 ms), and the lesson
        # gives no multi-node in-switch formula
        worst = int(n.max())
        raise ValueError(
            f"algorithm: the lesson model cannot run 'nvls' across nodes (`nodes` {worst}): its "
            "in-switch all-reduce, (N+1)/N M per GPU, is one NVLink domain's; use the textbook "
            "model (its hierarchical all-reduce, with IB SHARP where the cluster has it) or the "
            "nccl model (NVLSTree, CollNet); allowed here: " + _allowed_without_nvls(LESSON)
        )
    if not c.nvls:
        raise ValueError(
            f"algorithm: 'nvls' (in-network reduction) needs NVLink SHARP inside the node: "
            f"cluster {c.name!r} has NVLS off; allowed here: " + _allowed_without_nvls(LESSON)
        )


def _allowed_without_nvls(model: str) -> str:
    """The all-reduce list of a cluster that cannot run ``nvls`` (the table's, less nvls)."""
    return ", ".join(a for a in (AUTO, *algorithms(model, "all_reduce")) if a != "nvls")


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

    Any other name, the hierarchical ones for another op included, is refused with
    :func:`check_algorithm`'s message (the op's allowed list).

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
    algo = _canonical(TEXTBOOK, op, algorithm)
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
    elif algo == "nvls" and not (c.nvls and np.max(n) == 1):
        raise ValueError(
            f"algorithm: 'nvls' needs in-switch reduction inside one node; cluster {c.name!r} has "
            f"NVLS {'on' if c.nvls else 'off'} and `nodes` {int(np.max(n))}; allowed here: "
            + _allowed_without_nvls(TEXTBOOK)
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
        raise ValueError(
            f"model: {model!r} has no alpha-beta rows; allowed here: {LESSON}, {TEXTBOOK}"
        )
    algorithm = check_algorithm(model, op, algorithm)
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
