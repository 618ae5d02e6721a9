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

from .engine import COMPUTE, Plan, TaskList, plan
from .events import StepInputs

GRADS, PARAMS = "grads", "params"


# where a task's numbers come from: its unit's forward or backward, or its unit's collective
_FWD, _BWD, _AG, _RS, _AR = range(5)
Row = tuple[str, str, tuple[int, ...], str, int, int]  # kind, stream, after, label, source, unit
_ORDERS: dict[tuple[object, ...], list[Row]] = {}


def tasks(inp: StepInputs, micro_batch: int = 0) -> TaskList:
    """One micro-batch of ``fsdp`` or ``hsdp`` (every micro-batch gathers and reduces).

    The order of the tasks and their dependencies (:func:`_order`) depend only on the units'
    names, the strategy and resharding; they are built once per such setting, and each step
    gives them its own times, sizes and spans."""
    lay = inp.layout
    hybrid = lay.strategy == "hsdp"
    span = "group" if hybrid else "job"
    g = lay.shard_group
    units = inp.units
    ag_bytes = [u.params * inp.param_bytes for u in units]
    rs_bytes = [u.params * inp.grad_bytes for u in units]
    t_ag = inp.timer.time("all_gather", span, ag_bytes).tolist()
    t_rs = inp.timer.time("reduce_scatter", span, rs_bytes).tolist()
    ranks = inp.timer.ranks(span)
    ar_bytes: list[float] = []
    t_ar: list[float] = []
    ranks_ar = 0
    if hybrid:
        ar_bytes = [b / g for b in rs_bytes]
        t_ar = inp.timer.time("all_reduce", "across", ar_bytes).tolist()
        ranks_ar = inp.timer.ranks("across")
    forward_s, backward_s = inp.forward_s, inp.backward_total_s
    fwd = [forward_s * u.compute_weight for u in units]
    bwd = [backward_s * u.compute_weight for u in units]
    zeros = [0.0] * len(units)
    work = (fwd, bwd, t_ag, t_rs, t_ar)
    nbytes = (zeros, zeros, ag_bytes, rs_bytes, ar_bytes)
    rk = (0, 0, ranks, ranks, ranks_ar)
    p, where = _plan(tuple(u.name for u in units), hybrid, lay.reshards, span)
    return TaskList(
        p,
        [work[src][j] for src, j in where],
        [nbytes[src][j] for src, j in where],
        [rk[src] for src, _ in where],
        micro_batch,
    )


_PLANS: dict[tuple[object, ...], tuple[Plan, list[tuple[int, int]]]] = {}


def _plan(
    names: tuple[str, ...], hybrid: bool, reshard: bool, span: str
) -> tuple[Plan, list[tuple[int, int]]]:
    """:func:`_order` as a :class:`~.engine.Plan` and each task's (source, unit), kept."""
    key = (names, hybrid, reshard, span)
    hit = _PLANS.get(key)
    if hit is None:
        rows = _order(names, hybrid, reshard)
        sp = ("", "", span, span, "across")
        hit = (
            plan(
                [r[0] for r in rows],
                [r[1] for r in rows],
                [r[2] for r in rows],
                [r[3] for r in rows],
                [sp[r[4]] for r in rows],
            ),
            [(r[4], r[5]) for r in rows],
        )
        if len(_PLANS) >= 64:
            _PLANS.clear()
        _PLANS[key] = hit
    return hit


def _order(names: tuple[str, ...], hybrid: bool, reshard: bool) -> list[Row]:
    """The tasks of one micro-batch as rows (module docstring), kept per setting."""
    key = (names, hybrid, reshard)
    hit = _ORDERS.get(key)
    if hit is not None:
        return hit
    n = len(names)
    out: list[Row] = []
    fwd: dict[int, int] = {}
    ag_f: dict[int, int] = {}

    def gather_f(i: int) -> None:
        dep = (fwd[i - 2],) if i >= 2 else ()
        out.append(("all_gather", PARAMS, dep, f"gather {names[i]}", _AG, i))
        ag_f[i] = len(out) - 1

    for i in range(min(2, n)):
        gather_f(i)
    for i in range(n):
        out.append(("forward", COMPUTE, (ag_f[i],), f"forward {names[i]}", _FWD, i))
        fwd[i] = len(out) - 1
        if i + 2 < n:
            gather_f(i + 2)
    bwd: dict[int, int] = {}
    ag_b: dict[int, int] = {}

    def gather_b(j: int, dep: int) -> None:
        out.append(("all_gather", PARAMS, (dep,), f"gather {names[j]} (backward)", _AG, j))
        ag_b[j] = len(out) - 1

    if reshard and n >= 2:
        gather_b(n - 2, fwd[n - 1])
    for j in range(n - 1, -1, -1):
        deps = (ag_b[j],) if j in ag_b else ()
        out.append(("backward", COMPUTE, deps, f"backward {names[j]}", _BWD, j))
        bwd[j] = len(out) - 1
        out.append(("reduce_scatter", GRADS, (bwd[j],), f"reduce {names[j]}", _RS, j))
        if hybrid:
            out.append(("all_reduce", GRADS, (len(out) - 1,), f"replicas {names[j]}", _AR, j))
        if reshard and j - 2 >= 0:
            gather_b(j - 2, bwd[j])
    if len(_ORDERS) >= 64:
        _ORDERS.clear()
    _ORDERS[key] = out
    return out
