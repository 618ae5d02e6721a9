r"""``ddp``: PyTorch DistributedDataParallel, one bucketed all-reduce per bucket.

Gradients are packed into buckets in reverse registration order (``costmodel.ddp`` rules:
first bucket 1 MiB, then ``bucket_cap``); backward produces gradients at a rate proportional to
parameter count, and each bucket's all-reduce starts on the ``grads`` stream when its last
gradient is ready (Li et al. 2020, arXiv:2006.15704, sections 3.2.3-3.2.4). With ``no_sync`` only
the last micro-batch of an accumulation communicates. Ring volume per step ``2 (N-1)/N M``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._buckets import buckets, labels
from .engine import COMPUTE, Plan, Task, TaskList, plan
from .events import StepInputs

STREAM = "grads"


def bucket_tasks(
    forward_s: float,
    backward_s: float,
    ready_fraction: np.ndarray,
    bucket_bytes: np.ndarray,
    bucket_times_s: np.ndarray,
    *,
    ranks: int,
    overlap: bool = True,
    kind: str = "all_reduce",
    micro_batch: int = 0,
    band_times_s: tuple[np.ndarray, np.ndarray] | None = None,
    has_band: bool = False,
) -> TaskList:
    """Forward, the backward cut at each bucket's ready point, and one collective per bucket.

    ``ready_fraction[k]``: the share of backward done when bucket ``k``'s last gradient is
    ready (non-decreasing, the last 1). Bucket ``k``'s collective waits for its segment (or for
    the whole backward without ``overlap``) and for bucket ``k - 1`` (one stream). The list's
    structure is kept per (bucket count, overlap, kind); each call gives it its numbers.
    ``band_times_s`` with ``has_band``: the buckets' times at the fast and at the slow end of
    their error band (None: unknown), kept with the list (:class:`~.engine.TaskList`).
    """
    seg = np.diff(np.concatenate(([0.0], ready_fraction))) * backward_s
    k = len(seg)
    n = len(bucket_bytes)
    key = (k, n, bool(overlap), kind)
    p = _PLANS.get(key)
    if p is None:
        first, last = 1, k  # forward is task 0, the backward segments 1..k
        p = plan(
            ("forward",) + ("backward",) * k + (kind,) * n,
            (COMPUTE,) * (1 + k) + (STREAM,) * n,
            [()] * (1 + k) + [(first + j if overlap else last,) for j in range(n)],
            ("forward", *labels("backward to bucket {}", k), *labels("bucket {}", n)),
            [""] * (1 + k) + ["job"] * n,
        )
        if len(_PLANS) >= 64:
            _PLANS.clear()
        _PLANS[key] = p
    compute = [forward_s, *seg.tolist()]
    band = None
    if has_band and band_times_s is not None:
        band = ([*compute, *band_times_s[0].tolist()], [*compute, *band_times_s[1].tolist()])
    return TaskList(
        p,
        [*compute, *bucket_times_s.tolist()],
        [0.0] * (1 + k) + bucket_bytes.tolist(),
        [0] * (1 + k) + [ranks] * n,
        micro_batch,
        band,
        has_band,
    )


_PLANS: dict[tuple[object, ...], Plan] = {}


def ready_fraction(bucket_params: np.ndarray, params: float) -> np.ndarray:
    """Share of backward done when each bucket's last gradient is ready: gradients come at a
    rate proportional to parameter count, in bucket order (the last is exactly 1)."""
    ready = np.cumsum(bucket_params) / params
    ready[-1] = 1.0
    return ready


def micro_batch_tasks(
    forward_s: float,
    backward_s: float,
    ready: np.ndarray,
    bucket_bytes: np.ndarray,
    bucket_times_s: np.ndarray,
    *,
    ranks: int,
    synced: bool,
    overlap: bool = True,
    micro_batch: int = 0,
    band_times_s: tuple[np.ndarray, np.ndarray] | None = None,
    has_band: bool = False,
) -> Sequence[Task]:
    """One DDP micro-batch: forward and backward, and if ``synced`` one all-reduce per bucket
    (:func:`bucket_tasks`, with the buckets' band times if given); a micro-batch under
    ``no_sync`` is forward and backward only."""
    if not synced:
        return [
            Task("forward", COMPUTE, forward_s, label="forward", micro_batch=micro_batch),
            Task("backward", COMPUTE, backward_s, label="backward", micro_batch=micro_batch),
        ]
    return bucket_tasks(
        forward_s,
        backward_s,
        ready,
        bucket_bytes,
        bucket_times_s,
        ranks=ranks,
        overlap=overlap,
        micro_batch=micro_batch,
        band_times_s=band_times_s,
        has_band=has_band,
    )


def tasks(inp: StepInputs, synced: bool, micro_batch: int = 0) -> Sequence[Task]:
    """One micro-batch of the job (:func:`micro_batch_tasks`): the buckets of its tensors,
    all-reduced over the whole job when ``synced``."""
    if not synced:
        e = np.zeros(0)
        return micro_batch_tasks(
            inp.forward_s,
            inp.backward_total_s,
            e,
            e,
            e,
            ranks=0,
            synced=False,
            micro_batch=micro_batch,
        )
    b_bytes, b_params = buckets(inp, inp.grad_bytes)
    if inp.band:
        times, band = inp.timer.time_band("all_reduce", "job", b_bytes)
    else:
        times, band = inp.timer.time("all_reduce", "job", b_bytes), None
    return micro_batch_tasks(
        inp.forward_s,
        inp.backward_total_s,
        ready_fraction(b_params, inp.params),
        b_bytes,
        times,
        ranks=inp.timer.ranks("job"),
        synced=True,
        overlap=inp.overlap,
        micro_batch=micro_batch,
        band_times_s=band,
        has_band=inp.band,
    )
