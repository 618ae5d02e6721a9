r"""``zero1`` / ``zero2``: DeepSpeed ZeRO stages 1 and 2 (Rajbhandari et al. 2020,
arXiv:1910.02054, sections 5.1-5.2 and 7).

Order as DeepSpeed runs it: gradients are reduce-scattered in buckets during backward (the DDP
buckets, on the ``grads`` stream; each rank keeps the reduced shard it owns), each rank steps
the optimizer on its shard (timed by the step engine: HBM-bound,
``costmodel.compute.optimizer_step_s``), then the updated parameters are
all-gathered in buckets (``param_dtype``) before the next forward. Ring volume per step
``(N-1)/N M`` for each, ``2 (N-1)/N M`` together: DDP's. Stage 1 keeps whole gradients, so with
``no_sync`` it reduces only at the last micro-batch; stage 2 keeps only its gradient shard, so it
reduce-scatters every micro-batch, and all-gathers once per step. FSDP's SHARD_GRAD_OP (gather
before each unit's forward instead) is ``fsdp`` with ``reshard_after_forward=False``.
"""

from __future__ import annotations

from ._buckets import backward_segments, buckets, labels
from .engine import COMPUTE, Task
from .events import StepInputs

GRADS, PARAMS = "grads", "params"


def tasks(inp: StepInputs, synced: bool, final: bool, micro_batch: int = 0) -> list[Task]:
    """One micro-batch: forward, backward, the gradient reduce-scatters (if ``synced``) and,
    on the ``final`` micro-batch, the optimizer step and the parameter all-gathers."""
    out = [Task("forward", COMPUTE, inp.forward_s, label="forward", micro_batch=micro_batch)]
    if not synced:
        out.append(
            Task(
                "backward", COMPUTE, inp.backward_total_s, label="backward", micro_batch=micro_batch
            )
        )
        return out
    ranks = inp.timer.ranks("job")
    g_bytes, g_params = buckets(inp, inp.grad_bytes)
    seg = backward_segments(inp, g_params)
    first = len(out)
    mb = micro_batch
    back = labels("backward to bucket {}", len(seg))
    out += [
        Task("backward", COMPUTE, w, (), lab, 0.0, 0, "", mb)
        for w, lab in zip(seg.tolist(), back, strict=True)
    ]
    last_bwd = len(out) - 1
    times = inp.timer.time("reduce_scatter", "job", g_bytes)
    names = labels("grad bucket {}", len(g_bytes))
    overlap = inp.overlap
    out += [
        Task(
            "reduce_scatter",
            GRADS,
            t,
            (first + k if overlap else last_bwd,),
            lab,
            b,
            ranks,
            "job",
            mb,
        )
        for k, (b, t, lab) in enumerate(zip(g_bytes.tolist(), times.tolist(), names, strict=True))
    ]
    if not final:
        return out
    out.append(
        Task(
            "optimizer",
            COMPUTE,
            0.0,
            (len(out) - 1,),
            "optimizer step (shard)",
            micro_batch=micro_batch,
        )
    )
    opt = len(out) - 1
    p_bytes, _ = buckets(inp, inp.param_bytes)
    times = inp.timer.time("all_gather", "job", p_bytes)
    names = labels("param bucket {}", len(p_bytes))
    out += [
        Task("all_gather", PARAMS, t, (opt,), lab, b, ranks, "job", mb)
        for b, t, lab in zip(p_bytes.tolist(), times.tolist(), names, strict=True)
    ]
    return out
