r"""``fsdp`` (ZeRO-3, FULL_SHARD / FSDP2) and ``hsdp`` (hybrid sharding), per wrapped unit.

Each unit (the embedding, every transformer block, the head: :func:`~.layout.wrap_units`) is
all-gathered on the ``params`` stream before its forward, again before its backward unless
``reshard_after_forward=False`` (FSDP's SHARD_GRAD_OP keeps it gathered), and its gradients are
reduce-scattered on the ``grads`` stream after its backward. Prefetch is one unit ahead, as
FSDP's defaults do (forward: the next unit's all-gather is issued while the current one computes,
at most two gathered units in flight; backward: ``BACKWARD_PRE`` issues the next unit's gather
before the current unit's backward). The last unit of the forward is not resharded (FSDP2's
default: its backward follows at once). Ring volume per step (param and gradient dtype alike):
``3 (N-1)/N M``, 1.5x DDP's (Rajbhandari et al. 2020, section 7.2.2); ``2 (N-1)/N M`` without
resharding.

``hsdp`` shards inside a group (default one node) and replicates across groups: gathers and
reduce-scatters span the group, and each reduce-scattered shard is all-reduced across the groups
on the same ``grads`` stream right after (PyTorch FSDP2's HSDP: reduce-scatter then all-reduce).
"""

from __future__ import annotations

from .engine import COMPUTE, Task
from .events import StepInputs

GRADS, PARAMS = "grads", "params"


def tasks(inp: StepInputs, micro_batch: int = 0) -> list[Task]:
    """One micro-batch of ``fsdp`` or ``hsdp`` (every micro-batch gathers and reduces)."""
    lay = inp.layout
    hybrid = lay.strategy == "hsdp"
    span = "group" if hybrid else "job"
    g = lay.shard_group
    units = inp.units
    n = len(units)
    ag_bytes = [u.params * inp.param_bytes for u in units]
    rs_bytes = [u.params * inp.grad_bytes for u in units]
    t_ag = inp.timer.time("all_gather", span, ag_bytes).tolist()
    t_rs = inp.timer.time("reduce_scatter", span, rs_bytes).tolist()
    ranks = inp.timer.ranks(span)
    if hybrid:
        ar_bytes = [b / g for b in rs_bytes]
        t_ar = inp.timer.time("all_reduce", "across", ar_bytes).tolist()
        ranks_ar = inp.timer.ranks("across")
    mb = micro_batch
    out: list[Task] = []
    fwd: dict[int, int] = {}
    ag_f: dict[int, int] = {}

    def gather_f(i: int) -> None:
        dep = (fwd[i - 2],) if i >= 2 else ()
        out.append(
            Task(
                "all_gather",
                PARAMS,
                t_ag[i],
                dep,
                f"gather {units[i].name}",
                ag_bytes[i],
                ranks,
                span,
                mb,
            )
        )
        ag_f[i] = len(out) - 1

    for i in range(min(2, n)):
        gather_f(i)
    for i, u in enumerate(units):
        out.append(
            Task(
                "forward",
                COMPUTE,
                inp.forward_s * u.compute_weight,
                (ag_f[i],),
                f"forward {u.name}",
                micro_batch=mb,
            )
        )
        fwd[i] = len(out) - 1
        if i + 2 < n:
            gather_f(i + 2)
    bwd: dict[int, int] = {}
    ag_b: dict[int, int] = {}
    reshard = lay.reshards

    def gather_b(j: int, dep: int) -> None:
        out.append(
            Task(
                "all_gather",
                PARAMS,
                t_ag[j],
                (dep,),
                f"gather {units[j].name} (backward)",
                ag_bytes[j],
                ranks,
                span,
                mb,
            )
        )
        ag_b[j] = len(out) - 1

    if reshard and n >= 2:
        gather_b(n - 2, fwd[n - 1])
    for j in range(n - 1, -1, -1):
        u = units[j]
        deps = (ag_b[j],) if j in ag_b else ()
        work = inp.backward_total_s * u.compute_weight
        out.append(Task("backward", COMPUTE, work, deps, f"backward {u.name}", micro_batch=mb))
        bwd[j] = len(out) - 1
        out.append(
            Task(
                "reduce_scatter",
                GRADS,
                t_rs[j],
                (bwd[j],),
                f"reduce {u.name}",
                rs_bytes[j],
                ranks,
                span,
                mb,
            )
        )
        if hybrid:
            out.append(
                Task(
                    "all_reduce",
                    GRADS,
                    t_ar[j],
                    (len(out) - 1,),
                    f"replicas {u.name}",
                    ar_bytes[j],
                    ranks_ar,
                    "across",
                    mb,
                )
            )
        if reshard and j - 2 >= 0:
            gather_b(j - 2, bwd[j])
    return out
