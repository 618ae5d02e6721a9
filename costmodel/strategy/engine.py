r"""The one timeline engine: compute units and communication events on their own streams.

A step is a list of :class:`Task` in program order. Each task runs on one stream (``compute``,
or a communication stream such as ``grads`` or ``params``); a stream runs its tasks one at a
time in list order (a CUDA stream is FIFO). A task also waits for the tasks named in ``after``
(a reduce-scatter for the backward that made its gradients; a forward for the all-gather of its
parameters). A communication task lasts its ``work_s`` (from the collective model); a compute
task needs ``work_s`` of compute at full speed and, while any collective is in flight, advances
at rate ``1 - c`` (``c`` the overlap contention: NCCL kernels share the SMs and memory bandwidth
with the compute kernels; 0 = no contention, 1 = compute stalls during communication).

:func:`run` schedules the list: at ``c = 0`` in one pass (each start is the later of its stream
predecessor's end and its dependencies' ends: list scheduling of a DAG), otherwise event by
event (the compute rate changes only when a collective starts or ends, so time advances from
event to event exactly). The step ends when the last task ends; the exposed communication is
the step minus the compute work, so the timeline and the numbers count the same thing.

>>> ts = [Task("forward", "compute", 1.0), Task("backward", "compute", 2.0),
...       Task("all_reduce", "grads", 1.5, after=(1,))]
>>> r = run(ts, 0.0)
>>> r.step_s, r.exposed_s
(4.5, 1.5)
>>> ts[2] = Task("all_reduce", "grads", 1.5, after=(0,))   # overlapped with backward
>>> run(ts, 0.0).step_s, run(ts, 1.0).step_s                # c = 1: backward stalls under it
(3.0, 4.5)
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, overload

import numpy as np

COMPUTE = "compute"
COMM_KINDS = ("all_reduce", "reduce_scatter", "all_gather")


class Task(NamedTuple):
    """One unit of work on one stream (immutable; a named tuple, cheap to make by the
    thousand: a bucketed step has a few per bucket).

    ``kind``: ``forward``, ``backward``, ``recompute``, ``optimizer`` (compute) or a collective
    (``all_reduce``, ``reduce_scatter``, ``all_gather``). ``work_s``: compute at full speed, or
    the collective's duration [s]. ``after``: indices of earlier tasks it waits for.
    ``message_bytes``, ``span_ranks`` and ``span`` describe a collective (its buffer, the ranks
    it spans and whether that is a ``node``, a ``group``, ``across groups`` or the ``job``).
    """

    kind: str
    stream: str
    work_s: float
    after: tuple[int, ...] = ()
    label: str = ""
    message_bytes: float = 0.0
    span_ranks: int = 0
    span: str = ""
    micro_batch: int = 0

    @property
    def is_comm(self) -> bool:
        return self.stream != COMPUTE


@dataclass(frozen=True)
class Schedule:
    """:func:`run`'s answer: each task's start and end [s], the step and its parts."""

    tasks: Sequence[Task]  # a tuple of Task, or a TaskList
    starts_s: np.ndarray
    ends_s: np.ndarray
    step_s: float
    compute_s: float  # compute work at full speed
    comm_s: float  # sum of the collectives' durations
    exposed_s: float  # step - compute
    comm_s_by_kind: dict[str, float] = field(default_factory=dict)
    band_step_s: tuple[float, float] | None = None  # the step at each band end (run's band_work_s)


def _check_order(tasks: Sequence[Task]) -> None:
    for i, t in enumerate(tasks):
        for d in t.after:
            if not 0 <= d < i:
                raise ValueError(f"tasks[{i}].after: {d} is not an earlier task (0..{i - 1})")
        if not (math.isfinite(t.work_s) and t.work_s >= 0):
            raise ValueError(f"tasks[{i}].work_s: must be a finite number >= 0, got {t.work_s!r}")


def run(
    tasks: Sequence[Task],
    contention: float,
    work_s: list[float] | None = None,
    *,
    check: bool = True,
    band_work_s: tuple[list[float], list[float]] | None = None,
) -> Schedule:
    """Schedule ``tasks`` (program order) with overlap contention ``c`` in [0, 1].

    ``work_s`` (optional, one per task) replaces the tasks' own ``work_s``: the same step with
    other durations (the error band's fast and slow ends) without rebuilding the tasks.
    ``check=False`` skips the order check (tasks the strategy modules built, in program order).
    ``band_work_s`` (optional): two more work columns (the band's fast and slow ends, finite
    and >= 0, one per task), scheduled in the same pass; their steps are ``band_step_s``.
    """
    c = float(contention)
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"comm_contention: must be in [0, 1], got {contention!r}")
    tasks = tasks if isinstance(tasks, TaskList) else tuple(tasks)
    cols = columns(tasks)
    if work_s is None:
        if check:
            _check_order(tasks)
        work = cols.work
    else:
        w_arr = np.asarray(work_s, dtype=float)
        if w_arr.shape != (len(tasks),) or not (np.isfinite(w_arr).all() and (w_arr >= 0).all()):
            raise ValueError("work_s: one finite time >= 0 per task")
        work = w_arr.tolist()
    band_step: tuple[float, float] | None = None
    if band_work_s is not None and len(tasks) == 0:
        band_step = (0.0, 0.0)
    if c == 0.0 or not cols.by_kind:
        if band_work_s is not None and len(tasks):
            starts, ends, band_step = _list_schedule_band(cols, work, *band_work_s)
        else:
            starts, ends = _list_schedule(tasks, work, cols=cols)
    else:
        starts, ends = _event_schedule(tasks, c, work)
        if band_work_s is not None and len(tasks):
            fast, slow = (float(_event_schedule(tasks, c, w)[1].max()) for w in band_work_s)
            band_step = (fast, slow)
    return _schedule(tasks, cols, work, starts, ends, band_step)


def _schedule(
    tasks: Sequence[Task],
    cols: Columns,
    work: list[float],
    starts: np.ndarray,
    ends: np.ndarray,
    band_step: tuple[float, float] | None,
) -> Schedule:
    """:func:`run`'s answer from the starts and ends of a schedule: the step and its sums."""
    compute = math.fsum(_picker(cols.compute)(work))
    by_kind: dict[str, float] = {}
    for kind, idx in cols.by_kind.items():  # each kind summed in task order, from 0.0
        by_kind[kind] = functools.reduce(operator.add, _picker(idx)(work), 0.0)
    step = float(ends.max()) if len(tasks) else 0.0
    return Schedule(
        tasks=tasks,
        starts_s=starts,
        ends_s=ends,
        step_s=step,
        compute_s=compute,
        comm_s=math.fsum(by_kind.values()),
        exposed_s=max(0.0, step - compute),
        comm_s_by_kind=by_kind,
        band_step_s=band_step,
    )


def run_many(
    lists: Sequence[TaskList],
    band_work_s: Sequence[tuple[list[float], list[float]] | None],
    work: np.ndarray | None = None,
) -> list[Schedule]:
    """:func:`run` at ``c = 0`` of task lists of one :class:`Plan` (one structure, each list its
    numbers; ``band_work_s`` each list's band works, all given or all None), in one pass.

    Each list's answer is :func:`run`'s (``check=False``), number for number: the list
    schedule's operations (the later of the stream predecessor's end and the dependencies'
    ends, plus the work) run on every list's work columns at once, a numpy row per task; the
    compute summed exactly (``math.fsum``), each collective kind in task order from 0.0 (a
    cumulative sum down the rows). ``work`` (optional): those columns already as one array
    (tasks x lists, then the lists' fast and slow band ends), the lists' own numbers."""
    if not lists:
        return []
    p = lists[0].plan
    if any(tl.plan is not p for tl in lists) or not len(p.kind):
        raise ValueError("run_many: task lists of one non-empty plan")
    band = band_work_s[0] is not None
    if any((b is not None) != band for b in band_work_s) or len(band_work_s) != len(lists):
        raise ValueError("run_many: one band work pair per list, all given or all None")
    m = len(lists)
    if work is None:
        columns_ = [tl.work for tl in lists]
        if band:
            columns_ += [b[0] for b in band_work_s if b is not None]
            columns_ += [b[1] for b in band_work_s if b is not None]
        by_task = np.ascontiguousarray(np.array(columns_, dtype=float).T)
    else:
        by_task = np.ascontiguousarray(work, dtype=float)
    shape = (len(p.kind), 3 * m if band else m)
    if by_task.shape != shape or not (np.isfinite(by_task).all() and (by_task >= 0).all()):
        raise ValueError("band_work_s: one finite time >= 0 per task")
    starts, ends, last = _list_schedule_many(p, by_task, m)
    # the step is the latest stream end (a stream's ends never decrease): ends.max() of each
    step_ends = last.max(axis=0).tolist()
    nominal = by_task[:, :m]
    compute = list(map(math.fsum, nominal[p.compute].T.tolist()))
    by_kind: dict[str, list[float]] = {}
    for kind, idx in p.by_kind.items():  # each kind summed in task order, from 0.0
        rows = np.concatenate((np.zeros((1, m)), nominal[idx]))
        by_kind[kind] = np.cumsum(rows, axis=0)[-1].tolist()
    out = []
    for j, tl in enumerate(lists):
        band_step = None
        if band:
            band_step = (step_ends[m + j], step_ends[2 * m + j])
        kinds = {kind: sums[j] for kind, sums in by_kind.items()}
        step = step_ends[j]
        out.append(
            Schedule(
                tasks=tl,
                starts_s=starts[j],
                ends_s=ends[j],
                step_s=step,
                compute_s=compute[j],
                comm_s=math.fsum(kinds.values()),
                exposed_s=max(0.0, step - compute[j]),
                comm_s_by_kind=kinds,
                band_step_s=band_step,
            )
        )
    return out


def _list_schedule_many(
    p: Plan, work: np.ndarray, kept: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_list_schedule` of every column of ``work`` (tasks x columns): the starts and
    ends of the first ``kept`` columns (columns x tasks) and each stream's last end (streams x
    columns).

    A run of tasks that each follow the one before on its stream and wait for nothing on
    another stream (:func:`_chains`: a backward cut into segments) starts each where the one
    before ends: its ends are one cumulative sum down the rows, the same additions in the
    same order."""
    n, m = work.shape
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    last = [np.zeros(m)] * p.n_streams
    maximum = np.maximum
    stream, after = p.stream, p.after
    for i, j in _chains(p):
        st = stream[i]
        s = last[st]
        for d in after[i]:
            s = maximum(s, ends[d])
        starts.append(s)
        e = s + work[i]
        ends.append(e)
        if j > i + 1:
            block = np.cumsum(np.concatenate((e[None], work[i + 1 : j])), axis=0)
            starts.extend(block[:-1])
            ends.extend(block[1:])
            e = block[-1]
        last[st] = e
    return np.array(starts)[:, :kept].T.copy(), np.array(ends)[:, :kept].T.copy(), np.array(last)


_CHAINS: dict[int, tuple[Plan, list[tuple[int, int]]]] = {}


def _chains(p: Plan) -> list[tuple[int, int]]:
    """The tasks of plan ``p`` as runs ``[i, j)``: task ``i`` scheduled as any, each later one
    on the same stream as the task before it and waiting only for tasks of that stream (so it
    starts exactly where the task before it ends: a stream's ends never decrease). Kept per
    plan."""
    hit = _CHAINS.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    stream, after = p.stream, p.after
    runs: list[tuple[int, int]] = []
    i = 0
    n = len(stream)
    while i < n:
        j = i + 1
        while (
            j < n and stream[j] == stream[j - 1] and all(stream[d] == stream[j] for d in after[j])
        ):
            j += 1
        runs.append((i, j))
        i = j
    if len(_CHAINS) >= 64:
        _CHAINS.clear()
    _CHAINS[id(p)] = (p, runs)
    return runs


class Columns(NamedTuple):
    """A task list as columns (:func:`columns`): what :func:`run` and the step's band and
    wire bytes read of each task, taken once per list instead of once per schedule."""

    work: list[float]
    stream: list[int]  # index of the task's stream, in order of first appearance
    n_streams: int
    after: list[tuple[int, ...]]
    compute: list[int]  # indices of the compute tasks
    by_kind: dict[str, list[int]]  # collective kind -> its tasks' indices (first appearance)
    message_bytes: list[float]
    span_ranks: list[int]
    span: list[str]


_COLUMNS: dict[int, tuple[Sequence[Task], Columns]] = {}
_COLUMNS_KEPT = 64


def columns(tasks: Sequence[Task]) -> Columns:
    """The columns of ``tasks`` (a :class:`TaskList` holds its own; a tuple's are kept for
    the last few lists: a step schedules the same list, and reads its band and wire bytes
    from it)."""
    if isinstance(tasks, TaskList):
        return tasks.columns
    hit = _COLUMNS.get(id(tasks))
    if hit is not None and hit[0] is tasks:
        return hit[1]
    if tasks:
        kinds, streams, work, after, _, message_bytes, span_ranks, span, _ = map(
            list, zip(*tasks, strict=True)
        )
    else:
        kinds = streams = work = after = message_bytes = span_ranks = span = []
    ids = {st: k for k, st in enumerate(dict.fromkeys(streams))}
    stream = list(map(ids.__getitem__, streams))
    compute = [i for i, st in enumerate(streams) if st == COMPUTE]
    comm = [i for i, st in enumerate(streams) if st != COMPUTE]
    by_kind = {
        kind: [i for i in comm if kinds[i] == kind]
        for kind in dict.fromkeys(kinds[i] for i in comm)
    }
    cols = Columns(
        work=work,
        stream=stream,
        n_streams=len(ids),
        after=after,
        compute=compute,
        by_kind=by_kind,
        message_bytes=message_bytes,
        span_ranks=span_ranks,
        span=span,
    )
    if len(_COLUMNS) >= _COLUMNS_KEPT:
        _COLUMNS.clear()
    _COLUMNS[id(tasks)] = (tasks, cols)
    return cols


class Plan(NamedTuple):
    """A task list's structure, everything but its numbers (:func:`plan`): what the strategy
    modules keep per structure (bucket count, units, resharding) and give each step's times."""

    kind: tuple[str, ...]
    stream_name: tuple[str, ...]
    after: list[tuple[int, ...]]
    label: tuple[str, ...]
    span: list[str]
    stream: list[int]  # index of the task's stream, in order of first appearance
    n_streams: int
    compute: list[int]
    by_kind: dict[str, list[int]]


def plan(
    kind: Sequence[str],
    stream_name: Sequence[str],
    after: Sequence[tuple[int, ...]],
    label: Sequence[str],
    span: Sequence[str],
) -> Plan:
    """The :class:`Plan` of tasks given column by column (stream indices, compute tasks and
    each collective kind's tasks, as :func:`columns` derives them from a task list)."""
    ids = {st: k for k, st in enumerate(dict.fromkeys(stream_name))}
    comm = [i for i, st in enumerate(stream_name) if st != COMPUTE]
    return Plan(
        kind=tuple(kind),
        stream_name=tuple(stream_name),
        after=list(after),
        label=tuple(label),
        span=list(span),
        stream=list(map(ids.__getitem__, stream_name)),
        n_streams=len(ids),
        compute=[i for i, st in enumerate(stream_name) if st == COMPUTE],
        by_kind={
            k: [i for i in comm if kind[i] == k] for k in dict.fromkeys(kind[i] for i in comm)
        },
    )


class TaskList(Sequence[Task]):
    """A task list held as columns: a kept :class:`Plan` and one step's numbers (each task's
    work, message bytes and span ranks; one micro-batch index). It reads as a sequence of
    :class:`Task` (made when first read: a timeline); :func:`columns` and :func:`run` read
    its columns directly, so a step that draws nothing makes no Task.

    ``band_work`` (optional, with ``has_band=True``): each task's work with every collective at
    the fast, and at the slow, end of its error band (None: a band unknown), as the strategy
    module read it with the times (:meth:`~.comm.CollectiveTimer.time_band`)."""

    __slots__ = (
        "_cols",
        "_tasks",
        "band_work",
        "has_band",
        "message_bytes",
        "micro_batch",
        "plan",
        "span_ranks",
        "work",
    )

    def __init__(
        self,
        plan: Plan,
        work: list[float],
        message_bytes: list[float],
        span_ranks: list[int],
        micro_batch: int = 0,
        band_work: tuple[list[float], list[float]] | None = None,
        has_band: bool = False,
    ) -> None:
        n = len(plan.kind)
        if not (len(work) == len(message_bytes) == len(span_ranks) == n):
            raise ValueError(f"TaskList: {n} tasks need {n} works, message sizes and spans")
        if has_band and band_work is not None and not (len(band_work[0]) == len(band_work[1]) == n):
            raise ValueError(f"TaskList: {n} tasks need {n} works at each end of the band")
        self.plan = plan
        self.work = work
        self.message_bytes = message_bytes
        self.span_ranks = span_ranks
        self.micro_batch = micro_batch
        self.band_work = band_work
        self.has_band = has_band
        self._tasks: tuple[Task, ...] | None = None
        self._cols: Columns | None = None

    @property
    def columns(self) -> Columns:
        if self._cols is None:
            p = self.plan
            self._cols = Columns(
                work=self.work,
                stream=p.stream,
                n_streams=p.n_streams,
                after=p.after,
                compute=p.compute,
                by_kind=p.by_kind,
                message_bytes=self.message_bytes,
                span_ranks=self.span_ranks,
                span=p.span,
            )
        return self._cols

    @property
    def tasks(self) -> tuple[Task, ...]:
        if self._tasks is None:
            p, mb = self.plan, self.micro_batch
            self._tasks = tuple(
                Task(k, st, w, af, lab, b, r, sp, mb)
                for k, st, w, af, lab, b, r, sp in zip(
                    p.kind,
                    p.stream_name,
                    self.work,
                    p.after,
                    p.label,
                    self.message_bytes,
                    self.span_ranks,
                    p.span,
                    strict=True,
                )
            )
        return self._tasks

    def with_work(self, i: int, work_s: float) -> TaskList:
        """The same list with task ``i``'s work replaced: a compute task's at both ends of the
        band too; a collective's band is then no longer known to the list (read afresh)."""
        w = list(self.work)
        w[i] = work_s
        has_band = self.has_band and self.plan.stream_name[i] == COMPUTE
        band = self.band_work if has_band else None
        if band is not None:
            fast, slow = list(band[0]), list(band[1])
            fast[i] = slow[i] = work_s
            band = (fast, slow)
        return TaskList(
            self.plan, w, self.message_bytes, self.span_ranks, self.micro_batch, band, has_band
        )

    def __len__(self) -> int:
        return len(self.plan.kind)

    @overload
    def __getitem__(self, i: int) -> Task: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Task]: ...

    def __getitem__(self, i: int | slice) -> Task | Sequence[Task]:
        return self.tasks[i]

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)


def _list_schedule(
    tasks: Sequence[Task], work: list[float] | None = None, *, cols: Columns | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``c = 0``: start = max(stream predecessor's end, dependencies' ends); one pass.

    A long list that opens with one stream's independent tasks followed by another stream's
    tasks each waiting for one of those (:func:`_runs`: a DDP micro-batch's backward segments
    and bucket all-reduces) has those two runs computed with numpy to the same floats
    (:func:`_chain_schedule`); the loop takes the rest."""
    if cols is None:
        cols = columns(tasks)
    if work is None:
        work = cols.work
    n = len(tasks)
    p, q, deps = _runs(cols.after, cols.stream) if n >= _PREFIX_MIN else (0, 0, None)
    if q > p and deps is not None:
        # the leading tasks, one stream with no dependency: a running sum from 0.0, which
        # np.cumsum adds in the loop's order; then the other stream's chain
        head = np.cumsum(np.concatenate(([0.0], work[:p])))
        chain = _chain_schedule(head[1:][deps], np.asarray(work[p:q], dtype=float), 0.0)
        if chain is not None:
            starts_a = np.concatenate((head[:-1], chain[0], np.zeros(n - q)))
            ends_a = np.concatenate((head[1:], chain[1], np.zeros(n - q)))
            if q == n:
                return starts_a, ends_a
            last = [0.0] * cols.n_streams
            last[cols.stream[0]], last[cols.stream[p]] = float(head[-1]), float(chain[1][-1])
            ends_l = ends_a.tolist()
            starts_l = starts_a.tolist()
            _loop(cols, work, q, starts_l, ends_l, last)
            return np.array(starts_l), np.array(ends_l)
    ends = [0.0] * n
    starts = [0.0] * n
    _loop(cols, work, 0, starts, ends, [0.0] * cols.n_streams)
    return np.array(starts), np.array(ends)


def _loop(
    cols: Columns,
    work: list[float],
    first: int,
    starts: list[float],
    ends: list[float],
    last: list[float],
) -> None:
    """:func:`_list_schedule`'s pass from task ``first`` on (``starts``, ``ends`` and each
    stream's ``last`` end filled in before it)."""
    n = len(ends)
    for i, st, after, w in zip(
        range(first, n), cols.stream[first:], cols.after[first:], work[first:], strict=True
    ):
        s = last[st]
        for d in after:
            e = ends[d]
            if e > s:
                s = e
        starts[i] = s
        ends[i] = last[st] = s + w


#: Task lists shorter than this are scheduled by the loop alone (the prefix's numpy calls
#: cost more than they save).
_PREFIX_MIN = 256

_RUNS: dict[int, tuple[list[tuple[int, ...]], list[int], tuple[int, int, np.ndarray | None]]] = {}


def _runs(after: list[tuple[int, ...]], stream: list[int]) -> tuple[int, int, np.ndarray | None]:
    """``(p, q, deps)``: tasks ``0..p-1`` are on the first task's stream with no dependency,
    and tasks ``p..q-1`` on one other stream, each with one dependency among the first ``p``,
    ``deps`` (a DDP or ZeRO micro-batch: forward and the backward segments, then one
    collective per bucket). Kept per ``after`` list (a :class:`Plan`'s is shared by every step
    of that structure)."""
    hit = _RUNS.get(id(after))
    if hit is not None and hit[0] is after and hit[1] is stream:
        return hit[2]
    first = stream[0] if stream else -1
    p = 0
    for a, st in zip(after, stream, strict=True):
        if a or st != first:
            break
        p += 1
    q = p
    if p < len(stream):
        other = stream[p]
        for a, st in zip(after[p:], stream[p:], strict=True):
            if st != other or st == first or len(a) != 1 or not 0 <= a[0] < p:
                break
            q += 1
    deps = np.fromiter((a[0] for a in after[p:q]), dtype=np.intp, count=q - p) if q > p else None
    if len(_RUNS) >= 64:
        _RUNS.clear()
    _RUNS[id(after)] = (after, stream, (p, q, deps))
    return p, q, deps


#: Blocks of a chain longer than this are summed one ``np.add.accumulate`` each; shorter ones
#: together, a numpy step per position.
_LONG_BLOCK = 64


def _chain_schedule(
    ready: np.ndarray, work: np.ndarray, free: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Starts and ends of tasks on one stream, task ``j`` waiting for ``ready[j]``:
    ``s_j = max(e_{j-1}, ready_j)``, ``e_j = s_j + work_j``, ``e_{-1} = free``; the loop of
    :func:`_list_schedule`, to the same floats, or None (then the loop runs).

    The stream runs in blocks: a block opens where a task waits for its dependency (``s_j =
    ready_j``) and then adds the works in order, ``e_j = e_{j-1} + w_j``. The blocks are
    guessed from the exact-arithmetic answer ``e_j = C_j + max(free, max_{i<=j} (ready_i -
    C_{i-1}))`` (``C`` the running sum of the works), each block's ends are then added in the
    loop's order (a sequential ``np.add.accumulate``, so the same roundings), and the guess is
    kept only if every task's start is then exactly ``max(e_{j-1}, ready_j)``: by induction the
    loop's numbers. A guess that fails (a near tie rounded the other way) returns None.
    """
    m = work.size
    if m == 0:
        return None
    total = np.cumsum(work)
    lead = ready - (total - work)  # ready_i - C_{i-1}
    best = np.maximum.accumulate(np.concatenate(([free], lead)))
    opens = lead > best[:-1]  # a task whose dependency sets a new maximum waits for it
    first = np.zeros(m, dtype=bool)
    first[0] = True
    begin = np.flatnonzero(opens | first)
    start_value = np.where(opens[begin], ready[begin], free)
    length = np.diff(np.append(begin, m))
    ends = np.empty(m)
    long = np.flatnonzero(length > _LONG_BLOCK)
    for k in long.tolist():
        b, e = int(begin[k]), int(begin[k] + length[k])
        ends[b:e] = np.add.accumulate(np.concatenate(([start_value[k]], work[b:e])))[1:]
    short = np.flatnonzero(length <= _LONG_BLOCK)
    if short.size:
        pos, prev, size = begin[short], start_value[short], length[short]
        for t in range(int(size.max())):
            live = size > t
            at = pos[live] + t
            prev = prev[live] + work[at]
            ends[at] = prev
            size, pos = size[live], pos[live]
    before = np.concatenate(([free], ends[:-1]))
    starts = np.maximum(before, ready)
    if not np.array_equal(ends, starts + work):  # a start the loop would not take
        return None
    return starts, ends


def _list_schedule_band(
    cols: Columns, work: list[float], fast: list[float], slow: list[float]
) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """:func:`_list_schedule` of ``work`` (starts and ends) and, in the same pass, the step of
    the ``fast`` and ``slow`` columns (the same operations on each column, so each is the
    number its own schedule gives). A stream's ends never decrease (a start is at least its
    predecessor's end, work >= 0), so the step is the latest of the streams' last ends."""
    n = len(work)
    ends, starts = [0.0] * n, [0.0] * n
    ends_f, ends_s = [0.0] * n, [0.0] * n
    k = cols.n_streams
    last, last_f, last_s = [0.0] * k, [0.0] * k, [0.0] * k
    one = _one_dependency(cols.after)
    for i, (st, d, w, wf, ws) in enumerate(zip(cols.stream, one, work, fast, slow, strict=True)):
        s, sf, ss = last[st], last_f[st], last_s[st]
        if d is None:  # several dependencies
            for dd in cols.after[i]:
                e = ends[dd]
                if e > s:
                    s = e
                e = ends_f[dd]
                if e > sf:
                    sf = e
                e = ends_s[dd]
                if e > ss:
                    ss = e
        elif d >= 0:  # the common case, the same three updates without the inner loop (speed)
            e = ends[d]
            if e > s:
                s = e
            e = ends_f[d]
            if e > sf:
                sf = e
            e = ends_s[d]
            if e > ss:
                ss = e
        starts[i] = s
        ends[i] = last[st] = s + w
        ends_f[i] = last_f[st] = sf + wf
        ends_s[i] = last_s[st] = ss + ws
    return np.array(starts), np.array(ends), (max(last_f), max(last_s))


_PICKERS: dict[int, tuple[list[int], Callable[[Sequence[float]], Sequence[float]]]] = {}


def _picker(idx: list[int]) -> Callable[[Sequence[float]], Sequence[float]]:
    """A function that picks the values at ``idx`` of a list, in order (a tuple), kept per
    index list (a :class:`Plan`'s lists are shared by every step of that structure)."""
    hit = _PICKERS.get(id(idx))
    if hit is not None and hit[0] is idx:
        return hit[1]
    if not idx:
        pick: Callable[[Sequence[float]], Sequence[float]] = lambda _: ()  # noqa: E731
    elif len(idx) == 1:
        i0 = idx[0]
        pick = lambda v: (v[i0],)  # noqa: E731
    else:
        pick = operator.itemgetter(*idx)
    if len(_PICKERS) >= 256:
        _PICKERS.clear()
    _PICKERS[id(idx)] = (idx, pick)
    return pick


_ONE_DEP: dict[int, tuple[list[tuple[int, ...]], list[int | None]]] = {}


def _one_dependency(after: list[tuple[int, ...]]) -> list[int | None]:
    """Each task's one dependency (-1 for none, None for several), kept per ``after`` list
    (a :class:`Plan`'s is shared by every step of that structure)."""
    hit = _ONE_DEP.get(id(after))
    if hit is not None and hit[0] is after:
        return hit[1]
    one = [(a[0] if a else -1) if len(a) < 2 else None for a in after]
    if len(_ONE_DEP) >= 64:
        _ONE_DEP.clear()
    _ONE_DEP[id(after)] = (after, one)
    return one


def _event_schedule(
    tasks: Sequence[Task], c: float, work: list[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Any ``c``: advance from event to event; compute runs at ``1 - c`` under a collective."""
    n = len(tasks)
    if work is None:
        work = [t.work_s for t in tasks]
    queues: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        queues.setdefault(t.stream, []).append(i)
    head = dict.fromkeys(queues, 0)
    running: dict[str, int] = {}
    remaining = list(work)
    starts = [math.nan] * n
    ends = [math.nan] * n
    done = [False] * n
    finished = 0
    t_now = 0.0
    busy_rate = 1.0 - c
    while finished < n:
        started = True
        while started:  # start what can start now, until nothing more can
            # (a task of no work ends as it starts, and may free a stream already passed over:
            # hsdp's all-reduce over one replica, which waited on the last reduce-scatter)
            started = False
            for s, q in queues.items():
                while s not in running and head[s] < len(q):
                    i = q[head[s]]
                    if not all(done[d] for d in tasks[i].after):
                        break
                    starts[i] = t_now
                    head[s] += 1
                    started = True
                    if work[i] == 0.0:
                        ends[i], done[i] = t_now, True
                        finished += 1
                        continue
                    running[s] = i
        if not running:
            if finished < n:
                raise ValueError("tasks: a dependency cycle or a task waiting on a later one")
            break
        comm_on = any(tasks[i].is_comm for i in running.values())
        rate = busy_rate if comm_on else 1.0
        t_next = math.inf
        for i in running.values():
            if tasks[i].is_comm:
                t_next = min(t_next, starts[i] + work[i])
            elif rate > 0:
                t_next = min(t_next, t_now + remaining[i] / rate)
        dt = t_next - t_now
        for s, i in list(running.items()):
            if tasks[i].is_comm:
                if starts[i] + work[i] <= t_next:
                    ends[i], done[i] = t_next, True
            else:
                remaining[i] -= dt * rate
                if remaining[i] <= 1e-12 * max(1.0, work[i]):
                    remaining[i] = 0.0
                    ends[i], done[i] = t_next, True
            if done[i]:
                finished += 1
                del running[s]
        t_now = t_next
    return np.array(starts), np.array(ends)
