r"""One optimizer step of ``A`` micro-batches from the schedules of its micro-batches.

Every strategy's step is assembled here, and only here (:func:`costmodel.strategy.strategy_step`
and the lesson's :func:`costmodel.ddp.ddp_step` both call :func:`accumulate`). The ``A - 1``
non-final micro-batches all run one task list (``mid``: forward and backward, plus whatever the
strategy communicates on every micro-batch), the final one its own (``final``: the step's
remaining communication); micro-batches do not overlap each other. Each list is scheduled once
by :func:`.engine.run`, so the work is the same for ``A = 2`` and ``A = 10**9``:

.. math::

    T_{step} = (A - 1)\,(T_{mid} + h_{mid}) + T_{final} + h

with ``h`` the host time after the final micro-batch's communication (DDP's hooks and bucket
copies, :func:`costmodel.compute.ddp_step_overhead_s`) and ``h_mid`` that of a non-final
micro-batch (``h`` when it communicates, else 0). The compute and the communication per kind add
up the same way.

>>> from costmodel.strategy.engine import Task
>>> mid = [Task("forward", "compute", 1.0), Task("backward", "compute", 2.0)]
>>> final = [*mid, Task("all_reduce", "grads", 1.5, after=(1,))]
>>> a = accumulate(final, mid, 4, 0.0)
>>> a.step_s, a.compute_s, a.comm_by_kind_s
(13.5, 12.0, {'all_reduce': 1.5})
>>> [(t0, m) for t0, _, m in a.placements()]
[(0.0, 0), (3.0, 1), (6.0, 2), (9.0, 3)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .engine import Schedule, Task, run


@dataclass(frozen=True)
class Accumulated:
    """:func:`accumulate`'s answer: the step's totals and the two schedules [s]."""

    final: Schedule
    mid: Schedule | None  # None when A = 1
    accumulation: int
    mid_step_s: float  # one non-final micro-batch with its host time (0 when A = 1)
    step_s: float
    compute_s: float
    comm_by_kind_s: dict[str, float] = field(default_factory=dict)
    band_step_s: tuple[float, float] | None = None  # the step at the band's ends (band works)
    overhead_s: float = 0.0  # host time after the final micro-batch (h)
    mid_overhead_s: float = 0.0  # host time after each non-final micro-batch (h_mid)

    @property
    def host_s(self) -> float:
        """The step's host time, neither compute nor communication: ``(A - 1) h_mid + h`` [s]."""
        return (self.accumulation - 1) * self.mid_overhead_s + self.overhead_s

    @property
    def comm_s(self) -> float:
        """The step's communication, all kinds [s]."""
        return math.fsum(self.comm_by_kind_s.values())

    def placements(self, max_tasks: int | None = None) -> list[tuple[float, Schedule, int]]:
        """``(start [s], schedule, micro-batch index)`` of each micro-batch, in time order.

        With ``max_tasks``, when all micro-batches together hold more tasks than that, only the
        final micro-batch is placed (a timeline of bounded size)."""
        a, mid = self.accumulation, self.mid
        head: list[tuple[float, Schedule, int]] = []
        if mid is not None:
            n = len(self.final.tasks) + (a - 1) * len(mid.tasks)
            if max_tasks is None or n <= max_tasks:
                head = [(i * self.mid_step_s, mid, i) for i in range(a - 1)]
        return [*head, ((a - 1) * self.mid_step_s, self.final, a - 1)]


def accumulate(
    final_tasks: Sequence[Task],
    mid_tasks: Sequence[Task],
    accumulation: int,
    contention: float,
    *,
    overhead_s: float = 0.0,
    mid_overhead_s: float = 0.0,
    final_work_s: list[float] | None = None,
    mid_work_s: list[float] | None = None,
    final_band_work_s: tuple[list[float], list[float]] | None = None,
    mid_band_work_s: tuple[list[float], list[float]] | None = None,
    final_schedule: Schedule | None = None,
) -> Accumulated:
    """Schedule the final and the non-final micro-batch and join ``accumulation`` of them.

    Parameters
    ----------
    final_tasks, mid_tasks
        Task lists of the final and of a non-final micro-batch, in program order (built by the
        strategy modules; ``mid_tasks`` is ignored when ``accumulation`` is 1).
    accumulation
        Micro-batches per optimizer step ``A`` (>= 1).
    contention
        Overlap contention ``c`` of :func:`.engine.run`.
    overhead_s, mid_overhead_s
        Host time after the final, and after each non-final, micro-batch [s].
    final_work_s, mid_work_s
        Each task's work instead of its own (:func:`.engine.run`'s ``work_s``): the same step
        with every collective at an end of its error band.
    final_band_work_s, mid_band_work_s
        Each task's work at the fast and at the slow end of the band, scheduled in the same
        pass as the step (:func:`.engine.run`'s ``band_work_s``): ``band_step_s`` is the
        step at each end, the number :func:`accumulate` gives with those works.
        ``mid_band_work_s`` is needed when ``accumulation`` > 1.
    final_schedule
        The final micro-batch already scheduled (what :func:`.engine.run` gives for
        ``final_tasks`` with these works: :func:`.engine.run_many` of several steps' lists).
    """
    a = int(accumulation)
    if a < 1:
        raise ValueError(f"accumulation: must be a whole number >= 1, got {accumulation!r}")
    final = final_schedule
    if final is None:
        final = run(
            final_tasks, contention, final_work_s, check=False, band_work_s=final_band_work_s
        )
    mid: Schedule | None = None
    mid_step = 0.0
    band: tuple[float, float] | None = None
    if a > 1:
        mid = run(mid_tasks, contention, mid_work_s, check=False, band_work_s=mid_band_work_s)
        mid_step = mid.step_s + mid_overhead_s
    if final.band_step_s is not None and (a == 1 or (mid is not None and mid.band_step_s)):
        ends = []
        for e in (0, 1):  # as step_s below, with each band end's schedules
            mid_b = (
                mid.band_step_s[e] + mid_overhead_s if mid is not None and mid.band_step_s else 0.0
            )
            ends.append((a - 1) * mid_b + final.band_step_s[e] + overhead_s)
        band = (ends[0], ends[1])
    by_kind = dict(final.comm_s_by_kind)
    if mid is not None:
        for k, dt in mid.comm_s_by_kind.items():
            by_kind[k] = by_kind.get(k, 0.0) + (a - 1) * dt
    return Accumulated(
        final=final,
        mid=mid,
        accumulation=a,
        mid_step_s=mid_step,
        step_s=(a - 1) * mid_step + final.step_s + overhead_s,
        compute_s=(a - 1) * (mid.compute_s if mid else 0.0) + final.compute_s,
        comm_by_kind_s=by_kind,
        band_step_s=band,
        overhead_s=float(overhead_s),
        mid_overhead_s=float(mid_overhead_s) if a > 1 else 0.0,
    )
