r"""Collective times for the step engine: every event through the one collective road.

Each communication event spans some ranks: the whole job, one sharding group, or the ranks
holding the same shard in every group (HSDP's replicate dimension). :func:`span_cluster` builds
the cluster those ranks form from the job's cluster with the existing helpers
(``presets.cluster`` / ``Cluster.with_gpus_per_node``), and :class:`CollectiveTimer` prices every
event with :func:`costmodel.predict.predict_collective` on that cluster (any model: lesson,
textbook, nccl, calibrated), once per distinct (span, op, size).

=================== ========================================== ==============================
span                ranks                                      cluster it runs on
=================== ========================================== ==============================
job                 every rank                                 the job's ``nodes x G``
group, ``g <= G``   ``g`` GPUs of one node                     1 node, a ``g``-GPU slice
group, ``g = kG``   ``k`` whole nodes                          ``k`` nodes
across, ``g <= G``  ``G/g`` GPUs of each node, every node      ``nodes`` x a ``G/g`` slice
across, ``g = kG``  one GPU of each ``k``-th node              ``nodes/k`` nodes x 1 GPU
=================== ========================================== ==============================

A slice keeps its share of the node's NICs (``with_gpus_per_node``), which is how the ``g``
concurrent replicate all-reduces of one node share its network.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

SPANS = ("job", "group", "across")


def span_cluster(cluster: Any, span: str, group_size: int) -> Any:
    """The cluster the ranks of one event form (table in the module docstring).

    >>> from costmodel.presets import cluster
    >>> c = cluster("dgx-h100", nodes=4)
    >>> [(s.nodes, s.gpus_per_node) for s in (span_cluster(c, "group", 8),
    ...  span_cluster(c, "across", 8), span_cluster(c, "group", 4), span_cluster(c, "across", 16))]
    [(1, 8), (4, 1), (1, 4), (2, 1)]
    """
    from .. import presets

    gpn, nodes = int(cluster.gpus_per_node), int(cluster.nodes)
    g = int(group_size)
    if span == "job":
        return cluster
    if span == "group":
        if g <= gpn:
            return presets.cluster(cluster, nodes=1, gpus_per_node=g)
        return presets.cluster(cluster, nodes=g // gpn)
    if span == "across":
        if g <= gpn:
            return presets.cluster(cluster, nodes=nodes, gpus_per_node=gpn // g)
        return presets.cluster(cluster, nodes=nodes // (g // gpn), gpus_per_node=1)
    raise ValueError(f"span: unknown {span!r}; allowed: {', '.join(SPANS)}")


class CollectiveTimer:
    """Collective times [s] on the spans of one job, predicted once per distinct size.

    ``time(op, span, sizes)`` calls :func:`costmodel.predict.predict_collective` (``model``) on
    :func:`span_cluster`'s cluster for the sizes it has not seen; ``band(op, span, sizes)``
    gives the prediction's error band as time multipliers ``(fast, slow)`` (NaN when the regime
    has no measurement). One timer serves many steps of the same job (a sweep, the advisor).
    ``time_fn`` (optional, ``f(op, span_ranks, bytes) -> s``) replaces the collective model
    (a measured or textbook function; the bands are then unknown).
    """

    def __init__(
        self,
        cluster: Any,
        model: str = "nccl",
        group_size: int | None = None,
        time_fn: Callable[[str, int, np.ndarray], Any] | None = None,
    ) -> None:
        self.cluster = cluster
        self.model = model
        self.group_size = int(group_size or cluster.gpus_per_node)
        self.time_fn = time_fn
        self._clusters: dict[str, Any] = {}
        self._t: dict[tuple[str, str], dict[float, tuple[float, float, float]]] = {}

    def span_cluster(self, span: str) -> Any:
        if span not in self._clusters:
            self._clusters[span] = span_cluster(self.cluster, span, self.group_size)
        return self._clusters[span]

    def ranks(self, span: str) -> int:
        return int(self.span_cluster(span).ranks)

    def _fill(
        self, op: str, span: str, sizes: list[float]
    ) -> dict[float, tuple[float, float, float]]:
        known = self._t.setdefault((op, span), {})
        new = [x for x in dict.fromkeys(sizes) if x not in known]
        if new:
            c = self.span_cluster(span)
            arr = np.array(new, dtype=float)
            if self.time_fn is not None:
                t = np.asarray(self.time_fn(op, int(c.ranks), arr), dtype=float).reshape(-1)
                lo = hi = np.full(t.shape, np.nan)
            elif c.ranks < 2:
                t = np.zeros(arr.shape)
                lo = hi = np.ones(arr.shape)
            else:
                from ..predict import predict_collective

                p = predict_collective(op, arr, c, nodes=c.nodes, model=self.model)
                t = np.asarray(p.time_s, dtype=float).reshape(-1)
                b = p.error_band
                if b is None:
                    lo = hi = np.full(t.shape, np.nan)
                else:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        # band lo/hi multiply the predicted busbw: time multipliers are 1/hi, 1/lo
                        lo = np.broadcast_to(1.0 / np.asarray(b.hi, dtype=float), t.shape)
                        hi = np.broadcast_to(1.0 / np.asarray(b.lo, dtype=float), t.shape)
            if t.shape != arr.shape or not np.all(np.isfinite(t)) or np.any(t < 0):
                raise ValueError(
                    f"time_fn: must return one finite time >= 0 per size for {op}; got {t!r}"
                )
            known.update(
                zip(
                    new,
                    zip(t.tolist(), np.asarray(lo).tolist(), np.asarray(hi).tolist(), strict=True),
                    strict=True,
                )
            )
        return known

    def time(self, op: str, span: str, sizes: Any) -> np.ndarray:
        """Seconds per size of ``op`` over ``span`` (the predicted time)."""
        flat = np.asarray(sizes, dtype=float).reshape(-1).tolist()
        known = self._fill(op, span, flat)
        return np.array([known[x][0] for x in flat], dtype=float)

    def band(self, op: str, span: str, sizes: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(fast, slow)`` time multipliers per size from the prediction's error band."""
        flat = np.asarray(sizes, dtype=float).reshape(-1).tolist()
        known = self._fill(op, span, flat)
        return (
            np.array([known[x][1] for x in flat], dtype=float),
            np.array([known[x][2] for x in flat], dtype=float),
        )
