r"""``zero1`` / ``zero2``: DeepSpeed ZeRO stages 1 and 2 (Rajbhandari et al. 2020,
arXiv:1910.02054, sections 5.1-5.2 and 7).

Order as DeepSpeed runs it: gradients are reduce-scattered in buckets during backward (the DDP
buckets, on the ``grads`` stream; each rank keeps the reduced shard it owns), each rank steps
the optimizer on its shard (timed by the step engine: HBM-bound,
``costmodel.compute.optimizer_step_s``), then the updated parameters are
all-gathered in one collective (``param_dtype``) before the next forward (:func:`gather_bytes`). Ring volume per step
``(N-1)/N M`` for each, ``2 (N-1)/N M`` together: DDP's. Stage 1 keeps whole gradients, so with
``no_sync`` it reduces only at the last micro-batch; stage 2 keeps only its gradient shard, so it
reduce-scatters every micro-batch, and all-gathers once per step. FSDP's SHARD_GRAD_OP (gather
before each unit's forward instead) is ``fsdp`` with ``reshard_after_forward=False``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._buckets import backward_segments, buckets, labels
from .engine import COMPUTE, Plan, Task, TaskList, plan
from .events import StepInputs

GRADS, PARAMS = "grads", "params"


def tasks(inp: StepInputs, synced: bool, final: bool, micro_batch: int = 0) -> Sequence[Task]:
    """One micro-batch: forward, backward, the gradient reduce-scatters (if ``synced``) and,
    on the ``final`` micro-batch, the optimizer step and the parameter all-gathers. The list's
    structure is kept per (bucket counts, final, overlap); each step gives it its numbers."""
    if not synced:
        return [
            Task("forward", COMPUTE, inp.forward_s, label="forward", micro_batch=micro_batch),
            Task(
                "backward", COMPUTE, inp.backward_total_s, label="backward", micro_batch=micro_batch
            ),
        ]
    ranks = inp.timer.ranks("job")
    g_bytes, g_params = buckets(inp, inp.grad_bytes)
    seg = backward_segments(inp, g_params)
    band = inp.band
    compute = [inp.forward_s, *seg.tolist()]
    times, ends = _times(inp, "reduce_scatter", g_bytes)
    work = [*compute, *times]
    fast, slow = ([*compute, *ends[0]], [*compute, *ends[1]]) if ends is not None else ([], [])
    known = ends is not None
    nbytes = [0.0] * (1 + len(seg)) + g_bytes.tolist()
    nr = len(g_bytes)
    n_p = 0
    if final:
        p_bytes = gather_bytes(inp)
        times, ends = _times(inp, "all_gather", p_bytes)
        work += [0.0, *times]
        if ends is not None:  # the optimizer (0 here, timed by the step) and the gathers
            fast += [0.0, *ends[0]]
            slow += [0.0, *ends[1]]
        known = known and ends is not None
        nbytes += [0.0, *p_bytes.tolist()]
        n_p = len(p_bytes)
    key = (len(seg), nr, n_p, bool(final), bool(inp.overlap))
    p = _PLANS.get(key)
    if p is None:
        p = _plan(len(seg), nr, n_p, final, inp.overlap)
        if len(_PLANS) >= 64:
            _PLANS.clear()
        _PLANS[key] = p
    spans = [0] * (1 + len(seg)) + [ranks] * nr
    if final:
        spans += [0, *[ranks] * n_p]
    band_work = (fast, slow) if band and known else None
    return TaskList(p, work, nbytes, spans, micro_batch, band_work, band)


def gather_bytes(inp: StepInputs) -> np.ndarray:
    r"""Bytes of each parameter all-gather after the optimizer step [B]: one, the whole flat
    weight buffer, ``M = P w`` (``P`` parameters, ``w`` bytes per gathered element,
    ``param_dtype``); its time is ``predict_collective``'s for ``M`` over the job.

    From DeepSpeed's source (deepspeedai/DeepSpeed, master of 2026-08-22):
    deepspeed/runtime/zero/stage_1_and_2.py ``DeepSpeedZeroOptimizer.step`` (line 2396) calls
    ``all_gather_dp_groups`` (deepspeed/runtime/utils.py, line 1016), which returns at line
    1018-1019 ``if dist.has_all_gather_into_tensor()`` into
    ``all_gather_into_tensor_dp_groups`` (line 1005): one
    ``dist.all_gather_into_tensor(group_flat, partitioned_params[partition_id], ...)`` per
    parameter group (line 1013), the output the group's whole flat bit16 buffer.
    ``has_all_gather_into_tensor`` (deepspeed/comm/torch.py line 159) is true whenever
    torch.distributed has ``all_gather_into_tensor`` or ``_all_gather_base`` (PyTorch 1.13 and
    later; line 143-148); only without them does the loop over ``allgather_bucket_size``
    shards (utils.py lines 1021-1051) run, and no configuration option selects it, so
    ``allgather_bucket_size`` does not cut the gather. The model has one parameter group
    (DeepSpeed gathers one per optimizer param group, typically one or two, e.g. with and
    without weight decay; its partitions' alignment padding is left out).

    >>> class _I:  # the two inputs read
    ...     params, param_bytes = 7e9, 2.0
    >>> gather_bytes(_I()).tolist()
    [14000000000.0]
    """
    return np.array([float(inp.params) * float(inp.param_bytes)])


def _times(
    inp: StepInputs, op: str, nbytes: np.ndarray
) -> tuple[list[float], tuple[list[float], list[float]] | None]:
    """The buckets' times of ``op`` over the job and, with ``inp.band``, their times at the
    ends of the band (None without, or when unknown)."""
    if not inp.band:
        return inp.timer.time(op, "job", nbytes).tolist(), None
    t, b = inp.timer.time_band(op, "job", nbytes)
    return t.tolist(), (b[0].tolist(), b[1].tolist()) if b is not None else None


_PLANS: dict[tuple[object, ...], Plan] = {}


def _plan(n_seg: int, n_rs: int, n_ag: int, final: bool, overlap: bool) -> Plan:
    """Forward, the backward segments, a reduce-scatter per gradient bucket (after its
    segment, or after the whole backward without overlap) and, when ``final``, the optimizer
    step and the parameter all-gather(s) after it (:func:`gather_bytes`: one)."""
    first, last_bwd = 1, n_seg
    kind = ["forward", *["backward"] * n_seg, *["reduce_scatter"] * n_rs]
    stream = [COMPUTE] * (1 + n_seg) + [GRADS] * n_rs
    after: list[tuple[int, ...]] = [()] * (1 + n_seg)
    after += [(first + k if overlap else last_bwd,) for k in range(n_rs)]
    label = ["forward", *labels("backward to bucket {}", n_seg), *labels("grad bucket {}", n_rs)]
    span = [""] * (1 + n_seg) + ["job"] * n_rs
    if final:
        opt = len(kind)
        kind += ["optimizer", *["all_gather"] * n_ag]
        stream += [COMPUTE, *[PARAMS] * n_ag]
        after += [(opt - 1,), *[(opt,)] * n_ag]
        label += ["optimizer step (shard)", *labels("param all-gather {}", n_ag)]
        span += ["", *["job"] * n_ag]
    return plan(kind, stream, after, label, span)
