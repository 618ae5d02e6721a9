r"""``ddp``: PyTorch DistributedDataParallel, one bucketed all-reduce per bucket.

Gradients are packed into buckets in reverse registration order (``costmodel.ddp`` rules:
first bucket 1 MiB, then ``bucket_cap``); backward produces gradients at a rate proportional to
parameter count, and each bucket's all-reduce starts on the ``grads`` stream when its last
gradient is ready (Li et al. 2020, arXiv:2006.15704, sections 3.2.3-3.2.4). With ``no_sync`` only
the last micro-batch of an accumulation communicates. Ring volume per step ``2 (N-1)/N M``.
"""

from __future__ import annotations

from ._buckets import backward_segments, buckets
from .engine import COMPUTE, Task
from .events import StepInputs

STREAM = "grads"


def tasks(inp: StepInputs, synced: bool, micro_batch: int = 0) -> list[Task]:
    """One micro-batch: forward, backward in bucket segments, and (if ``synced``) the
    all-reduces of the buckets over the whole job."""
    b_bytes, b_params = buckets(inp, inp.grad_bytes)
    out = [Task("forward", COMPUTE, inp.forward_s, label="forward", micro_batch=micro_batch)]
    if not synced:
        out.append(
            Task(
                "backward", COMPUTE, inp.backward_total_s, label="backward", micro_batch=micro_batch
            )
        )
        return out
    seg = backward_segments(inp, b_params)
    times = inp.timer.time("all_reduce", "job", b_bytes)
    ranks = inp.timer.ranks("job")
    first_seg = len(out)
    for k, w in enumerate(seg.tolist()):
        out.append(
            Task("backward", COMPUTE, w, label=f"backward to bucket {k}", micro_batch=micro_batch)
        )
    last = len(out) - 1
    for k, (b, t) in enumerate(zip(b_bytes.tolist(), times.tolist(), strict=True)):
        dep = first_seg + k if inp.overlap else last
        out.append(
            Task("all_reduce", STREAM, t, (dep,), f"bucket {k}", b, ranks, "job", micro_batch)
        )
    return out
