r"""The public front of the textbook model: plain numbers or a :class:`~costmodel.hardware.Cluster`.

``cm.allreduce_time`` and ``cm.collective_time`` dispatch on what they are given:

- **numbers** (``ranks`` an integer, ``bandwidth_bytes_per_s`` a per-direction bandwidth): the
  flat alpha-beta model of :mod:`costmodel.collectives` (DESIGN 3.1), unchanged;
- **a Cluster** (or a cluster preset name) as ``ranks``, or a Cluster as
  ``bandwidth_bytes_per_s`` with ``ranks`` a GPU count: ``predict_collective(..., model=model)``
  (:mod:`costmodel.predict`), the one function every surface maps (model, cluster) to a time
  through. The default ``model="textbook"`` is the topology-aware alpha-beta model of
  :func:`costmodel.models.textbook_time_s` (DESIGN 3.2): the flat ring across nodes at
  :math:`\min(B_{intra}, k B_{NIC})`, ``"hierarchical"`` / ``"hierarchical_pipelined"``
  all-reduce, links at their measured efficiency (e.g. 0.96 for NDR: 48 of 50 GB/s,
  nccl-tests #290/#319). ``model="lesson"`` is the lesson's flat ring at the per-GPU NIC share,
  ``"nccl"`` the realistic model (:mod:`costmodel.models` lists all four).

>>> import costmodel as cm
>>> round(cm.allreduce_time(14e9, 64, 50e9), 3)   # the lesson's 7B gradients, 64 GPUs, 50 GB/s
0.551
>>> c = cm.cluster("dgx-h100", nodes=2)            # 2 x 8 H100, 8 x 400G NDR per node
>>> t = cm.allreduce_time(8 * 2**30, c)
>>> round(cm.bus_bandwidth("all_reduce", 8 * 2**30, c.ranks, t) / 1e9)   # NIC-limited: 8 x 48 GB/s, less latency
383
>>> t = cm.allreduce_time(8 * 2**30, c, model="lesson")   # one 400G NIC per GPU
>>> round(cm.bus_bandwidth("all_reduce", 8 * 2**30, c.ranks, t) / 1e9)
50
"""

from __future__ import annotations

import numbers
import sys
from typing import TYPE_CHECKING, TypeGuard, cast

import numpy as np
from numpy.typing import ArrayLike

from . import collectives, models, units
from ._checks import finite_result

if TYPE_CHECKING:
    from .hardware import Cluster

__all__ = ["allreduce_time", "collective_time", "CLUSTER_ALLREDUCE_ALGORITHMS", "resolve_cluster"]

#: all-reduce algorithms that exist only with a Cluster -> topology mode
CLUSTER_ALLREDUCE_ALGORITHMS = models.CLUSTER_ALLREDUCE_ALGORITHMS


def _is_cluster(x: object) -> bool:
    """``isinstance(x, Cluster)`` without importing :mod:`costmodel.hardware` (pydantic models,
    ~100 ms): while that module is not loaded, no Cluster can exist, so plain-number calls never
    pay for it (the import budget: <= 1.2x ``import numpy, pydantic``)."""
    hardware = sys.modules.get(f"{__package__}.hardware")
    return hardware is not None and isinstance(x, hardware.Cluster)


def _is_cluster_like(x: object) -> TypeGuard[Cluster | str]:
    return isinstance(x, str) or _is_cluster(x)


def resolve_cluster(ranks: object, bandwidth_bytes_per_s: object = None) -> Cluster | None:
    """The Cluster a call refers to, or None for plain numbers.

    ``ranks`` may be a Cluster or a cluster preset name; or ``bandwidth_bytes_per_s`` a Cluster
    (or name) and ``ranks`` a GPU count: a multiple of the node size gives that many nodes, a
    count below one node gives a slice of one node.

    >>> resolve_cluster("dgx-h100").ranks, resolve_cluster(32, "dgx-h100").nodes
    (8, 4)
    >>> resolve_cluster(4, "dgx-h100").gpus_per_node
    4
    >>> resolve_cluster(8, 50e9) is None
    True
    """
    if _is_cluster_like(ranks):
        # the name first: ranks="64" is a number as text, not "a cluster given with a bandwidth"
        cr = _named_cluster("ranks", ranks) if isinstance(ranks, str) else ranks
        if bandwidth_bytes_per_s is not None:
            raise ValueError(
                f"bandwidth_bytes_per_s: {bandwidth_bytes_per_s!r} given with a cluster as ranks; "
                "allowed: None (the bandwidths come from the cluster)"
            )
        return cr  # not a str: a Cluster
    if not _is_cluster_like(bandwidth_bytes_per_s):
        return None
    c = (
        _named_cluster("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
        if isinstance(bandwidth_bytes_per_s, str)
        else bandwidth_bytes_per_s  # not a str: a Cluster
    )
    from ._checks import said, whole_count

    try:  # a whole float (16.0) or a numpy count (np.array(16)) is the count it holds
        ranks = whole_count("ranks", ranks)
    except ValueError:
        raise ValueError(
            f"ranks: {said(ranks)} with a cluster as bandwidth; allowed: one whole GPU count >= 1"
        ) from None
    g = c.gpus_per_node
    if ranks % g == 0:
        return c.with_nodes(int(ranks) // g)
    if ranks < g:
        return c.with_nodes(1).with_gpus_per_node(int(ranks))
    raise ValueError(
        f"ranks: {ranks} GPUs do not fill whole nodes of {c.name!r} ({g} GPUs per node); "
        f"allowed: fewer than {g}, or a multiple of {g}"
    )


def _named_cluster(name: str, text: str) -> Cluster:
    """The cluster preset ``text`` given as argument ``name``; a number written as text
    (``"50GB/s"``, ``"64"``) is refused naming the argument and the number it means.

    >>> _named_cluster("bandwidth_bytes_per_s", "50GB/s")
    Traceback (most recent call last):
    ...
    ValueError: bandwidth_bytes_per_s: '50GB/s' is text, not a number or a cluster preset; the API takes numbers in SI units: bandwidth_bytes_per_s=5e+10 (cm.parse_rate('50GB/s'))
    """
    from . import units
    from .presets import PresetError
    from .presets import cluster as _load

    try:
        return _load(text, field=name)
    except PresetError:
        hint = units.text_hint(name, text)  # bandwidth_bytes_per_s: a rate; ranks: a count
        if not hint:
            raise
        raise ValueError(
            f"{name}: {text!r} is text, not a number or a cluster preset{hint}"
        ) from None


@finite_result("time")
def collective_time(
    op: str,
    message_bytes: ArrayLike,
    ranks: ArrayLike | Cluster | str,
    bandwidth_bytes_per_s: ArrayLike | Cluster | str | None = None,
    latency_s: ArrayLike = 0.0,
    algorithm: str | None = None,
    gamma_s_per_byte: ArrayLike = 0.0,
    *,
    model: str = "textbook",
) -> float | np.ndarray:
    r"""Time of one collective [s], from plain numbers or from a Cluster.

    Parameters
    ----------
    op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"}
    message_bytes : array_like
        Per-rank buffer ``M`` as nccl-tests prints it [B].
    ranks : int, array_like, Cluster or str
        Number of ranks ``N``, or a Cluster / cluster preset name (then leave
        ``bandwidth_bytes_per_s`` and ``latency_s`` out).
    bandwidth_bytes_per_s : array_like, Cluster or str, optional
        Per-direction bandwidth ``B`` [B/s]; or a Cluster, with ``ranks`` a GPU count.
    latency_s : array_like
        Latency per step ``alpha`` [s] (plain numbers only; a Cluster brings its own).
    algorithm : str, optional
        ``"auto"`` or an algorithm the model defines for ``op``
        (:func:`costmodel.models.algorithms`, aliases such as ``"ring"`` for broadcast's
        chain included; any other name is refused with the op's allowed list). With numbers
        the rows of ``collectives.ALGORITHMS[op]`` (default ``"ring"``, the ring-like row;
        ``"auto"`` is the same row); with a Cluster also ``"hierarchical"`` and
        ``"hierarchical_pipelined"`` for all-reduce under the textbook model, or NCCL's names
        under ``model="nccl"`` (default ``"auto"`` there: the model's own choice, the flat ring
        for the textbook).
    gamma_s_per_byte : array_like
        Reduction cost ``gamma`` [s/B], in 0..1e-6 (plain numbers only; a Cluster's models have
        their own reduction terms): the ``r(N) M gamma`` term of
        :func:`costmodel.collectives.collective_time`, as ``collective --gamma`` and the sweep's
        ``gamma`` axis give it. Default 0.
    model : {"textbook", "lesson", "nccl", "calibrated", "nccl-table"}
        With a Cluster: which model answers (:mod:`costmodel.models`); the call is
        ``predict_collective(op, M, cluster, algorithm=..., model=...).time_s``, the one road
        every surface takes. Default ``"textbook"`` (topology-aware alpha-beta: this is the
        formula layer), where ``predict_collective``, the CLI and the app default to ``"nccl"``:
        pass ``model="nccl"`` for their number. With plain numbers only ``"textbook"`` /
        ``"lesson"`` (the same formula on one link). One rank takes 0 s.

    Returns
    -------
    float or ndarray
        Seconds; see :mod:`costmodel.collectives` (numbers) and :mod:`costmodel.models`.

    Examples
    --------
    >>> collective_time("all_gather", 1e9, 4, 100e9)   # (N-1)/N M / B = 0.75 GB at 100 GB/s
    0.0075
    """
    op = _op(op)  # first: a call that left the op out reads its size as the op
    # names in any case, with plain numbers as with a cluster (predict_collective reads them so)
    algorithm = units.choice_name(algorithm)
    model = models.check_model(units.choice_name(model), default=models.TEXTBOOK)
    c = resolve_cluster(ranks, bandwidth_bytes_per_s)
    if c is None:
        if bandwidth_bytes_per_s is None:
            raise ValueError(
                "bandwidth_bytes_per_s: required when ranks is a number; allowed: a per-direction "
                "bandwidth in B/s, or pass a Cluster (cm.cluster('dgx-h100', nodes=2)) as ranks"
            )
        if model not in (models.TEXTBOOK, models.LESSON):
            raise ValueError(
                f"model: {model!r} needs a cluster; allowed with plain numbers: textbook, lesson "
                "(the alpha-beta formula on one link)"
            )
        # the one table of algorithms per op (models.algorithms; over one link: no
        # hierarchical), "auto" the model's default row as on a cluster, an alias its row
        row = models.link_algorithm(model, op, "ring" if algorithm is None else algorithm)
        return collectives.collective_time(
            op,  # type: ignore[arg-type]
            message_bytes,
            ranks,  # type: ignore[arg-type]
            bandwidth_bytes_per_s,  # type: ignore[arg-type]
            latency_s,
            cast(collectives.Algorithm, row),
            gamma_s_per_byte,
        )
    if np.any(np.asarray(latency_s) != 0.0):
        raise ValueError(
            f"latency_s: {latency_s!r} given with a cluster; allowed: 0.0 (the cluster's links "
            "carry their per-hop latencies)"
        )
    if np.any(np.asarray(gamma_s_per_byte) != 0.0):
        raise ValueError(
            f"gamma_s_per_byte: {gamma_s_per_byte!r} given with a cluster; allowed: 0.0 (the "
            "reduction cost per byte is a term of the formulas over one link)"
        )
    from .predict import predict_collective

    p = predict_collective(
        op,
        message_bytes,
        c,
        nodes=c.nodes,
        gpus_per_node=c.gpus_per_node,
        algorithm="auto" if algorithm is None else algorithm,
        model=model,
    )
    return p.time_s


def _op(op: object) -> str:
    """The collective ``op`` as :data:`costmodel.tables.OPS` spells it (``"all-reduce"``,
    ``"AllReduce"``: as the CLI reads them), else ValueError naming ``op`` and the allowed names;
    a number (the op left out, so the message size took its place) is said so.

    >>> _op("All-Reduce")
    'all_reduce'
    >>> _op(14e9)
    Traceback (most recent call last):
    ...
    ValueError: op: must be the collective's name, the first argument (all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all), got 14000000000.0 (the op left out? collective_time('all_reduce', message_bytes, ranks, bandwidth_bytes_per_s), or allreduce_time(message_bytes, ranks, bandwidth_bytes_per_s))
    """
    from .tables import OPS, canonical_op

    if isinstance(op, str):
        return canonical_op(op)
    from ._checks import said

    raise ValueError(
        f"op: must be the collective's name, the first argument ({', '.join(OPS)}), got "
        f"{said(op)}"
        + (
            " (the op left out? collective_time('all_reduce', message_bytes, ranks, "
            "bandwidth_bytes_per_s), or allreduce_time(message_bytes, ranks, "
            "bandwidth_bytes_per_s))"
            if isinstance(op, numbers.Number) and not isinstance(op, bool)
            else ""
        )
    )


def allreduce_time(
    message_bytes: ArrayLike,
    ranks: ArrayLike | Cluster | str,
    bandwidth_bytes_per_s: ArrayLike | Cluster | str | None = None,
    latency_s: ArrayLike = 0.0,
    algorithm: str | None = None,
    gamma_s_per_byte: ArrayLike = 0.0,
    *,
    model: str = "textbook",
) -> float | np.ndarray:
    r"""All-reduce time [s] of the **textbook** model by default: ``collective_time("all_reduce",
    ...)``.

    Ring with numbers: :math:`t = 2(N-1)\alpha + 2\frac{N-1}{N} M / B + \frac{N-1}{N} M\gamma`
    (Patarasuk & Yuan 2009; :math:`\gamma` = ``gamma_s_per_byte``, 0 by default).
    With a Cluster of ``n`` nodes of ``g`` GPUs the textbook ring runs at
    :math:`\min(B_{intra}, k B_{NIC})` across nodes (DESIGN 3.2); ``model=`` picks another model.

    The default is ``model="textbook"``, the formula layer the lesson teaches, not the realistic
    ``"nccl"`` that ``costmodel collective --cluster``, :func:`costmodel.predict_collective` and
    the app default to: ``allreduce_time(M, cluster, model="nccl")`` is their number (the CLI
    prints the model in each row's ``model`` column). Over one link (plain numbers) the CLI's
    ``collective --ranks N --bandwidth B`` is this textbook formula, the same number.

    One rank (``ranks=1``, or a one-GPU cluster) exchanges nothing: 0 s, here, in the formulas and
    in the CLI (which answers it with a note), never refused; ``ranks < 1`` is a ValueError.

    >>> allreduce_time(500e6, 8, 900e9)     # the lesson's NVLink4 example (900 GB/s as given)
    0.000972...
    >>> allreduce_time(500e6, 8, 450e9)     # per direction, as the datasheet means it
    0.001944...
    >>> allreduce_time(500e6, 1, 450e9)     # one rank: nothing to exchange
    0.0
    """
    return collective_time(
        "all_reduce",
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        algorithm,
        gamma_s_per_byte,
        model=model,
    )
