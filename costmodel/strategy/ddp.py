r"""``ddp``: PyTorch DistributedDataParallel, one bucketed all-reduce per bucket.

Gradients are packed into buckets in reverse registration order (``costmodel.ddp`` rules:
first bucket 1 MiB, then ``bucket_cap``); backward produces gradients at a rate proportional to
parameter count, and each bucket's all-reduce starts on the ``grads`` stream when its last
gradient is ready (Li et al. 2020, arXiv:2006.15704, sections 3.2.3-3.2.4). With ``no_sync`` only
the last micro-batch of an accumulation communicates. Ring volume per step ``2 (N-1)/N M``.
"""

from __future__ import annotations

import numpy as np

from ._buckets import buckets, labels
from .engine import COMPUTE, Task
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
) -> list[Task]:
    """Forward, the backward cut at each bucket's ready point, and one collective per bucket.

    ``ready_fraction[k]``: the share of backward done when bucket ``k``'s last gradient is
    ready (non-decreasing, the last 1). Bucket ``k``'s collective waits for its segment (or for
    the whole backward without ``overlap``) and for bucket ``k - 1`` (one stream).
    """
    mb = micro_batch
    out = [Task("forward", COMPUTE, forward_s, label="forward", micro_batch=mb)]
    seg = np.diff(np.concatenate(([0.0], ready_fraction))) * backward_s
    first = len(out)
    back = labels("backward to bucket {}", len(seg))
    out += [
        Task("backward", COMPUTE, w, (), lab, 0.0, 0, "", mb)
        for w, lab in zip(seg.tolist(), back, strict=True)
    ]
    last = len(out) - 1
    names = labels("bucket {}", len(bucket_bytes))
    out += [
        Task(kind, STREAM, t, (first + k if overlap else last,), lab, b, ranks, "job", mb)
        for k, (b, t, lab) in enumerate(
            zip(bucket_bytes.tolist(), bucket_times_s.tolist(), names, strict=True)
        )
    ]
    return out


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
) -> list[Task]:
    """One DDP micro-batch: forward and backward, and if ``synced`` one all-reduce per bucket
    (:func:`bucket_tasks`); a micro-batch under ``no_sync`` is forward and backward only."""
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
    )


def tasks(inp: StepInputs, synced: bool, micro_batch: int = 0) -> list[Task]:
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
    return micro_batch_tasks(
        inp.forward_s,
        inp.backward_total_s,
        ready_fraction(b_params, inp.params),
        b_bytes,
        inp.timer.time("all_reduce", "job", b_bytes),
        ranks=inp.timer.ranks("job"),
        synced=True,
        overlap=inp.overlap,
        micro_batch=micro_batch,
    )
