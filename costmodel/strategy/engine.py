r"""The one timeline engine: compute units and communication events on their own streams.

A step is a list of :class:`Task` in program order. Each task runs on one stream (``compute``,
or a communication stream such as ``grads`` or ``params``); a stream runs its tasks one at a
time in list order (a CUDA stream is FIFO). A task also waits for the tasks named in ``after``
(a reduce-scatter for the backward that made its gradients; a forward for the all-gather of its
parameters). A communication task lasts its ``work_s`` (from the collective model); a compute
task needs ``work_s`` of compute at full speed and, while any collective is in flight, advances
at rate ``1 - c`` (``c`` the overlap contention: NCCL kernels share the SMs and memory bandwidth
with the compute kernels; 0 = perfect overlap, 1 = compute stalls during communication).

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

import math
from dataclasses import dataclass, field
from typing import NamedTuple

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

    tasks: tuple[Task, ...]
    starts_s: np.ndarray
    ends_s: np.ndarray
    step_s: float
    compute_s: float  # compute work at full speed
    comm_s: float  # sum of the collectives' durations
    exposed_s: float  # step - compute
    comm_s_by_kind: dict[str, float] = field(default_factory=dict)


def _check_order(tasks: list[Task] | tuple[Task, ...]) -> None:
    for i, t in enumerate(tasks):
        for d in t.after:
            if not 0 <= d < i:
                raise ValueError(f"tasks[{i}].after: {d} is not an earlier task (0..{i - 1})")
        if not (math.isfinite(t.work_s) and t.work_s >= 0):
            raise ValueError(f"tasks[{i}].work_s: must be a finite number >= 0, got {t.work_s!r}")


VECTOR_MIN = 16
"""Segments at least this long are scheduled with numpy (closed form below); shorter ones task
by task (numpy's per-call cost is more than a few tasks')."""


@dataclass(frozen=True)
class _Plan:
    """What :func:`run` reads of a task list, once per list (its streams, dependencies and
    segments), so that the same list with other durations (the error band's ends) is not
    read again."""

    n: int
    work: np.ndarray
    after: tuple[tuple[int, ...], ...]
    is_comm: tuple[bool, ...]
    any_comm: bool
    compute_idx: np.ndarray
    kind_idx: tuple[tuple[str, np.ndarray], ...]  # collective kind -> its tasks, in order
    # (first, end, stream, dependency matrix padded with -1 or None for a short segment)
    segments: tuple[tuple[int, int, str, np.ndarray | None], ...]


_PLANS: list[tuple[tuple[Task, ...], _Plan]] = []
_PLANS_KEPT = 4


def _plan(tasks: tuple[Task, ...]) -> _Plan:
    """The task list's :class:`_Plan`, from a small cache keyed by the list's identity.

    A segment is a run of consecutive tasks on one stream. A long one (at least
    :data:`VECTOR_MIN` tasks) none of which waits for a task of the same segment has its ends
    in closed form from the tasks before it (:func:`_plan_schedule`); the others are scheduled
    task by task.
    """
    for t_, p_ in _PLANS:
        if t_ is tasks:
            return p_
    n = len(tasks)
    cols = list(zip(*tasks, strict=True)) if n else [()] * 4  # kind, stream, work_s, after, ...
    kinds, streams, works, after = cols[0], cols[1], cols[2], cols[3]
    is_comm = tuple([s != COMPUTE for s in streams])
    by_kind: dict[str, list[int]] = {}
    for i, k in enumerate(kinds):
        if is_comm[i]:
            by_kind.setdefault(k, []).append(i)
    lens = [len(a) for a in after]
    latest = [max(a) if k else -1 for a, k in zip(after, lens, strict=True)]  # last waited for
    runs = [i for i in range(1, n) if streams[i] != streams[i - 1]]  # one stream each
    segments: list[tuple[int, int, str, np.ndarray | None]] = []
    for r0, r1 in zip([0, *runs], [*runs, n], strict=True) if n else ():
        if r1 - r0 < VECTOR_MIN:  # task by task: dependencies inside the run are fine
            segments.append((r0, r1, streams[r0], None))
            continue
        cuts = [r0]
        if max(latest[r0:r1]) >= r0:  # split where a task waits for one of its own segment
            for i in range(r0 + 1, r1):
                if latest[i] >= cuts[-1]:
                    cuts.append(i)
        for i0, i1 in zip(cuts, [*cuts[1:], r1], strict=True):
            deps: np.ndarray | None = None
            if i1 - i0 >= VECTOR_MIN:
                seg, seg_lens = after[i0:i1], lens[i0:i1]
                width = max(seg_lens)
                if min(seg_lens) == width:
                    deps = np.array(seg, dtype=np.intp).reshape(i1 - i0, width)
                else:
                    deps = np.full((i1 - i0, width), -1, dtype=np.intp)
                    for k, a in enumerate(seg):
                        deps[k, : len(a)] = a
            segments.append((i0, i1, streams[i0], deps))
    plan = _Plan(
        n=n,
        work=np.array(works, dtype=float),
        after=after,
        is_comm=is_comm,
        any_comm=any(is_comm),
        compute_idx=np.array([i for i in range(n) if not is_comm[i]], dtype=np.intp),
        kind_idx=tuple((k, np.array(v, dtype=np.intp)) for k, v in by_kind.items()),
        segments=tuple(segments),
    )
    _PLANS.insert(0, (tasks, plan))
    del _PLANS[_PLANS_KEPT:]
    return plan


def _seq_sum(x: np.ndarray) -> float:
    """Left-to-right sum (the order a loop adds in), as a float."""
    return float(np.cumsum(x)[-1]) if len(x) else 0.0


def run(
    tasks: list[Task] | tuple[Task, ...],
    contention: float,
    work_s: list[float] | None = None,
    *,
    check: bool = True,
) -> Schedule:
    """Schedule ``tasks`` (program order) with overlap contention ``c`` in [0, 1].

    ``work_s`` (optional, one per task) replaces the tasks' own ``work_s``: the same step with
    other durations (the error band's fast and slow ends) without rebuilding the tasks.
    ``check=False`` skips the order check (tasks the strategy modules built, in program order).
    """
    c = float(contention)
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"comm_contention: must be in [0, 1], got {contention!r}")
    tasks = tuple(tasks)
    if work_s is None:
        if check:
            _check_order(tasks)
        plan = _plan(tasks)
        work = plan.work
    else:
        plan = _plan(tasks)
        work = np.asarray(work_s, dtype=float)
        if work.shape != (len(tasks),) or not (np.all(np.isfinite(work)) and np.all(work >= 0)):
            raise ValueError("work_s: one finite time >= 0 per task")
    if c == 0.0 or not plan.any_comm:
        starts, ends = _plan_schedule(plan, work)
    else:
        starts, ends = _event_schedule(tasks, c, work.tolist())
    compute = math.fsum(work[plan.compute_idx].tolist())
    by_kind = {k: _seq_sum(work[idx]) for k, idx in plan.kind_idx}
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
    )


def _list_schedule(
    tasks: tuple[Task, ...], work: list[float] | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``c = 0`` list scheduling of ``tasks`` (their own work, or ``work``): starts and ends."""
    plan = _plan(tuple(tasks))
    return _plan_schedule(plan, plan.work if work is None else np.asarray(work, dtype=float))


def _plan_schedule(plan: _Plan, work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``c = 0``: start = max(stream predecessor's end, dependencies' ends); one pass.

    A long segment (:func:`_plan`) in closed form: with ``a_j`` the latest end of task ``j``'s
    dependencies, ``E`` its stream's end before the segment and ``T_j`` the segment's running
    work, ``e_j = max(e_{j-1}, a_j) + w_j`` unrolls to
    ``e_j = T_j + max(E, max_{k<=j}(a_k - T_{k-1}))`` (a running maximum); the same ends up to
    rounding (about 1e-16 of the step per task)."""
    n = plan.n
    w = work.tolist()
    ends = [0.0] * n
    starts = [0.0] * n
    last: dict[str, float] = {}
    after = plan.after
    for i0, i1, stream, deps in plan.segments:
        e = last.get(stream, 0.0)
        if deps is None:
            for i in range(i0, i1):
                s = e
                for d in after[i]:
                    x = ends[d]
                    if x > s:
                        s = x
                starts[i] = s
                e = ends[i] = s + w[i]
        else:
            seg_w = work[i0:i1]
            if deps.shape[1]:
                before = np.array([*ends[:i0], -math.inf])  # index -1: no dependency
                a = before[deps].max(axis=1)
            else:
                a = np.full(i1 - i0, -math.inf)
            total = np.cumsum(seg_w)
            prev_total = np.concatenate(([0.0], total[:-1]))
            seg_e = total + np.maximum(np.maximum.accumulate(a - prev_total), e)
            seg_s = np.maximum(np.concatenate(([e], seg_e[:-1])), a)
            ends[i0:i1] = seg_e.tolist()
            starts[i0:i1] = seg_s.tolist()
            e = ends[i1 - 1]
        last[stream] = e
    return np.array(starts), np.array(ends)


def _event_schedule(
    tasks: tuple[Task, ...], c: float, work: list[float] | None = None
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
        for s, q in queues.items():  # start what can start now
            while s not in running and head[s] < len(q):
                i = q[head[s]]
                if not all(done[d] for d in tasks[i].after):
                    break
                starts[i] = t_now
                head[s] += 1
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
