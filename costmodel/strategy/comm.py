r"""Collective times for the step engine: every event through the one collective road.

Each communication event spans some ranks: the whole job, one sharding group, or the ranks
holding the same shard in every group (HSDP's replicate dimension). :func:`span_cluster` builds
the cluster those ranks form from the job's cluster with the existing helpers
(``presets.cluster`` / ``Cluster.with_gpus_per_node``), and :class:`CollectiveTimer` prices every
event with :func:`costmodel.predict.predict_collective` on that cluster (any model: lesson,
textbook, nccl, calibrated), once per distinct (span, op, size); the timers of a table share a
:class:`PredictionCache`, where all the sizes of one op on one cluster are one call.

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

from collections.abc import Callable, Iterable
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


class PredictionCache:
    """Collective predictions shared by every timer of a table (the advisor over strategies
    and node counts): one entry per (model, span cluster, op), holding the time and band
    multipliers of every size predicted so far.

    The cost of :func:`costmodel.predict.predict_collective` is mostly per call (the cluster's
    topology and the algorithm search), not per size, so a cache predicts every size a table
    needs of one op on one cluster in one call: :meth:`CollectiveTimer.hint` registers sizes
    that later steps will ask for, and the first request of that op on that cluster predicts
    them together with its own. Two spans that form the same cluster (one node of an 8-GPU
    job and the 8-GPU group of a larger HSDP job) share their entries. The numbers are those
    of a call per size: ``predict_collective`` predicts each size on its own. ``calls``
    counts the predictions made (the advisor's benchmark bounds it).

    ``nodes`` (optional): the node counts of the table. A prediction of the ``nccl`` model for
    a preset's cluster then predicts the same sizes of that op on the same span at every
    other node count too, in one call (:func:`costmodel.predict.predict_collective_nodes`):
    the steps of a table ask each node count for the same sizes (bucket and unit sizes do not
    depend on the ranks), so a table's predictions are one call per (op, span).
    """

    def __init__(self, nodes: Iterable[int] | None = None) -> None:
        self.calls = 0
        self.nodes = tuple(dict.fromkeys(int(n) for n in nodes)) if nodes is not None else ()
        self._t: dict[tuple[Any, ...], dict[float, tuple[float, float, float]]] = {}
        self._hints: dict[tuple[Any, ...], dict[float, None]] = {}
        self._tables: dict[tuple[Any, ...], tuple[np.ndarray, ...]] = {}
        self._clusters: dict[tuple[Any, ...], Any] = {}
        self._floors: dict[tuple[Any, ...], np.ndarray] = {}  # realistic.one_node_floors
        self._band: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # CollectiveTimer.time_band
        self._asked: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # its answers, per sizes
        self._reach: dict[tuple[Any, ...], tuple[str, str]] = {}  # CollectiveTimer.band_reach

    def cluster(self, cluster: Any, nodes: int) -> Any:
        """``presets.cluster(cluster, nodes=nodes)``, loaded once per preset name and size.

        A preset read from its file is exchanged for an equal one read before (the first of
        its content, :func:`_interned`), and the sizes and spans derived from it are kept
        with it: the clusters of every table are then the same objects, and the work kept
        per cluster object (the collective model's size-independent plans) is found again."""
        from .. import presets

        if isinstance(cluster, str):  # the preset is read once; each size is derived from it
            base = self._clusters.get(("preset", cluster))
            if base is None:
                base = self._clusters[("preset", cluster)] = _interned(
                    presets.cluster(cluster, field="cluster")
                )
            cluster = base
        return _derived(cluster, int(nodes))

    def span_cluster(self, cluster: Any, span: str, group_size: int) -> tuple[Any, str]:
        """:func:`span_cluster` and the key of the cluster it forms (its JSON)."""
        key = (id(cluster), span, int(group_size))
        hit = _SPANS.get(key)
        if hit is None or hit[0] is not cluster:
            c = span_cluster(cluster, span, group_size)
            c = _interned(c) if _is_interned_family(cluster) else c
            hit = (cluster, c, c.model_dump_json())
            if len(_SPANS) >= 1024:
                _SPANS.clear()
            _SPANS[key] = hit
        return hit[1], hit[2]


_INTERNED: dict[Any, Any] = {}
_REACH: dict[tuple[Any, ...], tuple[str, str]] = {}  # CollectiveTimer.band_reach, every cache
_FAMILY: dict[int, Any] = {}  # id -> an interned cluster (kept alive here)
_DERIVED: dict[tuple[int, int], tuple[Any, Any]] = {}
_SPANS: dict[tuple[Any, ...], tuple[Any, Any, str]] = {}


def _interned(c: Any) -> Any:
    """The first cluster seen equal to ``c`` (clusters are frozen: equal ones are
    interchangeable), or ``c`` itself when it cannot be hashed."""
    try:
        hit = _FAMILY.get(id(c))
        if hit is c:
            return c
        if len(_INTERNED) >= 256:
            _INTERNED.clear()
            _FAMILY.clear()
            _DERIVED.clear()
        kept = _INTERNED.setdefault(c, c)
    except TypeError:
        return c
    _FAMILY[id(kept)] = kept
    return kept


def _is_interned_family(c: Any) -> bool:
    return _FAMILY.get(id(c)) is c


def _derived(cluster: Any, nodes: int) -> Any:
    """``presets.cluster(cluster, nodes=nodes)``, interned and kept per (cluster, nodes) for
    an interned cluster (others are derived afresh)."""
    from .. import presets

    if not _is_interned_family(cluster):
        return presets.cluster(cluster, nodes=nodes)
    key = (id(cluster), nodes)
    hit = _DERIVED.get(key)
    if hit is None or hit[0] is not cluster:
        hit = (cluster, _interned(presets.cluster(cluster, nodes=nodes)))
        _DERIVED[key] = hit
    return hit[1]


class CollectiveTimer:
    """Collective times [s] on the spans of one job, predicted once per distinct size.

    ``time(op, span, sizes)`` calls :func:`costmodel.predict.predict_collective` (``model``) on
    :func:`span_cluster`'s cluster for the sizes it has not seen (with any sizes hinted for that
    op and cluster: :meth:`hint`); ``band(op, span, sizes)`` gives the prediction's error band
    as time multipliers ``(fast, slow)`` (NaN when the regime has no measurement). One timer
    serves many steps of the same job (a sweep, the advisor); timers that share a
    :class:`PredictionCache` share their predictions. ``time_fn`` (optional,
    ``f(op, span_ranks, bytes) -> s``) replaces the collective model (a measured or textbook
    function; the bands are then unknown).
    """

    def __init__(
        self,
        cluster: Any,
        model: str = "nccl",
        group_size: int | None = None,
        time_fn: Callable[[str, int, np.ndarray], Any] | None = None,
        cache: PredictionCache | None = None,
    ) -> None:
        self.cluster = cluster
        self.model = model
        self.group_size = int(group_size or cluster.gpus_per_node)
        self.time_fn = time_fn
        self.cache = cache if cache is not None else PredictionCache()
        self._spans: dict[str, tuple[Any, str]] = {}

    def _span(self, span: str) -> tuple[Any, str]:
        hit = self._spans.get(span)
        if hit is None:
            hit = self.cache.span_cluster(self.cluster, span, self.group_size)
            self._spans[span] = hit
        return hit

    def span_cluster(self, span: str) -> Any:
        return self._span(span)[0]

    def ranks(self, span: str) -> int:
        return int(self.span_cluster(span).ranks)

    def _key(self, op: str, span: str) -> tuple[Any, ...]:
        return (self.model, self.time_fn, self._span(span)[1], op)

    def hint(self, op: str, span: str, sizes: Any) -> None:
        """Sizes [B] of ``op`` over ``span`` that later steps will ask for: predicted with the
        next request of that op on that cluster, in the same call."""
        key = self._key(op, span)
        known = self.cache._t.get(key, {})
        pending = self.cache._hints.setdefault(key, {})
        for x in np.asarray(sizes, dtype=float).reshape(-1).tolist():
            if x not in known:
                pending[x] = None

    def _fill(
        self, op: str, span: str, sizes: list[float]
    ) -> dict[float, tuple[float, float, float]]:
        key = self._key(op, span)
        known = self.cache._t.setdefault(key, {})
        new = [x for x in dict.fromkeys(sizes) if x not in known]
        if new:
            asked = set(new)
            new += [x for x in self.cache._hints.pop(key, {}) if x not in known and x not in asked]
            c = self.span_cluster(span)
            arr = np.array(new, dtype=float)
            if self.time_fn is not None:
                t = np.asarray(self.time_fn(op, int(c.ranks), arr), dtype=float).reshape(-1)
                lo = hi = np.full(t.shape, np.nan)
            elif c.ranks < 2:
                t = np.zeros(arr.shape)
                lo = hi = np.ones(arr.shape)
            else:
                from ..predict import predict_collective, predict_collective_nodes
                from ..realistic import one_node_floors

                self.cache.calls += 1
                others = self._other_nodes(op, span, new)
                with one_node_floors(self.cache._floors):  # shared by the table's node counts
                    if others:
                        ps = predict_collective_nodes(
                            op, arr, [c] + [x[1] for x in others], model=self.model
                        )
                        p = ps[0]
                        order = np.argsort(arr)
                        for (k2, _), p2 in zip(others, ps[1:], strict=True):
                            kept = self.cache._t.setdefault(k2, {})
                            entries = _entries(p2)
                            if kept:
                                self.cache._tables.pop(k2, None)
                                for x, row in zip(new, zip(*entries, strict=True), strict=True):
                                    kept.setdefault(x, row)
                                continue
                            # its first sizes: the entry and its table (sorted by size, what
                            # _rows makes of the entry) at once
                            kept.update(zip(new, zip(*entries, strict=True), strict=True))
                            self.cache._tables[k2] = (
                                arr[order],
                                *(np.array(e, dtype=float)[order] for e in entries),
                            )
                    else:
                        p = predict_collective(op, arr, c, nodes=c.nodes, model=self.model)
                t, lo, hi = (np.asarray(x) for x in _entries(p))
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

    def _other_nodes(self, op: str, span: str, sizes: list[float]) -> list[tuple[Any, Any]]:
        """(key, span cluster) of ``op`` over ``span`` at the cache's other node counts that
        lack some of ``sizes`` (``PredictionCache.nodes``; the ``nccl`` model on a preset's
        cluster only): predicted in the same call."""
        if not self.cache.nodes or self.model != "nccl" or not _is_interned_family(self.cluster):
            return []
        own = self._span(span)[1]
        seen = {own}
        out = []
        for n in self.cache.nodes:
            if n == int(self.cluster.nodes):
                continue
            try:
                c, js = self.cache.span_cluster(
                    self.cache.cluster(self.cluster, n), span, self.group_size
                )
            except ValueError:  # no such span at that node count
                continue
            if js in seen or c.ranks < 2 or c.calibration is not None:
                continue
            seen.add(js)
            key = (self.model, self.time_fn, js, op)
            known = self.cache._t.get(key, {})
            if any(x not in known for x in sizes):
                out.append((key, c))
        return out

    def _rows(self, op: str, span: str, sizes: Any) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        """The entry of ``op`` over ``span`` as sorted arrays (sizes, time, fast, slow) and the
        row of each size (predicting those not yet known): a step asks for hundreds of bucket
        sizes at a time, looked up in one ``searchsorted``."""
        a = np.asarray(sizes, dtype=float).reshape(-1)
        key = self._key(op, span)
        table = self.cache._tables.get(key)
        if table is not None and len(table[0]):
            idx = np.minimum(np.searchsorted(table[0], a), len(table[0]) - 1)
            if np.array_equal(table[0][idx], a):
                return table, idx
        known = self._fill(op, span, a.tolist())
        order = sorted(known)
        rows = np.array([known[x] for x in order], dtype=float).reshape(-1, 3)
        table = (np.array(order, dtype=float), rows[:, 0], rows[:, 1], rows[:, 2])
        self.cache._tables[key] = table
        return table, np.searchsorted(table[0], a)

    def time(self, op: str, span: str, sizes: Any) -> np.ndarray:
        """Seconds per size of ``op`` over ``span`` (the predicted time)."""
        table, idx = self._rows(op, span, sizes)
        return table[1][idx]

    def band(self, op: str, span: str, sizes: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(fast, slow)`` time multipliers per size from the prediction's error band."""
        table, idx = self._rows(op, span, sizes)
        return table[2][idx], table[3][idx]

    def band_reach(self, op: str, span: str, size_class: str) -> tuple[str, str]:
        """(regime, counts exceeded) of the error band of ``op`` over ``span`` for messages of
        ``size_class`` (``"ge1MiB"`` or ``"lt1MiB"``), as
        :func:`costmodel.predict.predict_collective` gives it to :meth:`band`: the counts of the
        largest bundled run that band was fitted on which the span exceeds ("20 nodes", "16
        nodes and 128 GPUs": :attr:`costmodel.uncertainty.ErrorBand.extrapolated_beyond`),
        ``""`` within that run, where the band is unknown (the step's band is then NaN) or the
        span is one rank. Kept per (model, op, span cluster, size class), for every cache (the
        fitted bands do not change)."""
        from ..uncertainty import ONE_MIB, error_band

        key = (*self._key(op, span), size_class)
        hit = self.cache._reach.get(key)
        if hit is None:
            hit = _REACH.get(key)
        if hit is None:
            c = self.span_cluster(span)
            if self.time_fn is not None or c.ranks < 2:
                hit = ("", "")
            else:
                size = float(ONE_MIB) if size_class == "ge1MiB" else 1.0
                b = error_band(
                    self.model, c.fabric, c.intra_kind, c.nodes, size, op=op, gpus=int(c.ranks)
                )
                hit = (b.regime, b.extrapolated_beyond if b.measured else "")
            if self.time_fn is None:
                if len(_REACH) >= 4096:
                    _REACH.clear()
                _REACH[key] = hit
            self.cache._reach[key] = hit
        return hit

    def time_band(
        self, op: str, span: str, sizes: Any, *, keep: bool = True
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """:meth:`time` and, in the same look-up, the times at the fast and at the slow end of
        the band (``time x multiplier`` for a time > 0, the time itself for 0; None when the
        band of a size that takes time is unknown): what the step's band schedules read.

        The answer is kept per (op, span cluster, sizes) while that entry's table stands (the
        steps of a table ask the same sizes again: zero1 and zero2, fsdp with and without
        resharding, an HSDP group at every node count); its arrays are read-only. ``keep=False``
        for sizes asked once (the same numbers, not kept)."""
        a = np.asarray(sizes, dtype=float).reshape(-1)
        key = self._key(op, span)
        if not keep:
            table, idx = self._rows(op, span, a)
            return table[1][idx], self._band_times(key, table, idx)
        asked = (key, a.tobytes())
        kept = self.cache._asked.get(asked)
        if kept is not None and kept[0] is self.cache._tables.get(key):
            return kept[1], kept[2]
        table, idx = self._rows(op, span, a)
        t = table[1][idx]
        t.flags.writeable = False
        band = self._band_times(key, table, idx)
        self.cache._asked[asked] = (table, t, band)
        return t, band

    def _band_times(
        self, key: tuple[Any, ...], table: tuple[np.ndarray, ...], idx: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The times at the band's ends of the rows ``idx`` of ``table`` (:meth:`time_band`)."""
        hit = self.cache._band.get(key)
        if hit is None or hit[0] is not table:
            t, m_fast, m_slow = table[1], table[2], table[3]
            busy = t > 0
            with np.errstate(invalid="ignore", over="ignore"):
                fast = np.where(busy, t * m_fast, t)
                slow = np.where(busy, t * m_slow, t)
            known = ~busy | (np.isfinite(m_fast) & np.isfinite(m_slow))
            hit = self.cache._band[key] = (table, fast, slow, known)
        if not hit[3][idx].all():
            return None
        fast, slow = hit[1][idx], hit[2][idx]
        fast.flags.writeable = slow.flags.writeable = False
        return fast, slow


def _entries(p: Any) -> tuple[list[float], list[float], list[float]]:
    """A prediction's times and band time multipliers ``(fast, slow)`` per size, as lists."""
    t = np.asarray(p.time_s, dtype=float).reshape(-1)
    b = p.error_band
    if b is None:
        lo = hi = np.full(t.shape, np.nan)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            # band lo/hi multiply the predicted busbw: time multipliers are 1/hi, 1/lo
            lo = np.broadcast_to(1.0 / np.asarray(b.hi, dtype=float), t.shape)
            hi = np.broadcast_to(1.0 / np.asarray(b.lo, dtype=float), t.shape)
    return t.tolist(), np.asarray(lo).tolist(), np.asarray(hi).tolist()
