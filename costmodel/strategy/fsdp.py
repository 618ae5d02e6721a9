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

import numpy as np

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
    gives them its own times, sizes and spans (one gather of each column by a kept index;
    with ``inp.band`` also the works at the ends of the collectives' error bands)."""
    lay = inp.layout
    hybrid = lay.strategy == "hsdp"
    span = "group" if hybrid else "job"
    g = lay.shard_group
    units = inp.units
    n = len(units)
    timer, band = inp.timer, inp.band
    ag_bytes = [u.params * inp.param_bytes for u in units]
    rs_bytes = [u.params * inp.grad_bytes for u in units]
    ops = [("all_gather", span, ag_bytes), ("reduce_scatter", span, rs_bytes)]
    ranks = timer.ranks(span)
    ar_bytes: list[float] = [0.0] * n
    ranks_ar = 0
    if hybrid:
        ar_bytes = [b / g for b in rs_bytes]
        ops.append(("all_reduce", "across", ar_bytes))
        ranks_ar = timer.ranks("across")
    times: list[np.ndarray] = []
    ends: list[tuple[np.ndarray, np.ndarray]] | None = [] if band else None
    for op, sp, nb in ops:
        if ends is None:
            times.append(timer.time(op, sp, nb))
            continue
        t, b = timer.time_band(op, sp, nb)
        times.append(t)
        if b is None:
            ends = None
        else:
            ends.append(b)
    weights = np.array([u.compute_weight for u in units], dtype=float)
    fwd = inp.forward_s * weights
    bwd = inp.backward_total_s * weights
    zeros = np.zeros(n)
    p, flat, src = _plan(tuple(u.name for u in units), hybrid, lay.reshards, span)

    def column(comm: list[np.ndarray]) -> list[float]:
        # sources in the order _FWD, _BWD, _AG, _RS, _AR, each one value per unit
        return np.concatenate((fwd, bwd, *comm, *[zeros] * (3 - len(comm))))[flat].tolist()

    nbytes = np.concatenate((zeros, zeros, ag_bytes, rs_bytes, ar_bytes))[flat].tolist()
    rk = np.array((0, 0, ranks, ranks, ranks_ar))[src].tolist()
    band_work = None
    if ends is not None:
        band_work = (column([e[0] for e in ends]), column([e[1] for e in ends]))
    return TaskList(p, column(times), nbytes, rk, micro_batch, band_work, band)


_PLANS: dict[tuple[object, ...], tuple[Plan, np.ndarray, np.ndarray]] = {}


def _plan(
    names: tuple[str, ...], hybrid: bool, reshard: bool, span: str
) -> tuple[Plan, np.ndarray, np.ndarray]:
    """:func:`_order` as a :class:`~.engine.Plan`, each task's place in the five columns of
    per-unit values (``source x units + unit``) and its source, kept."""
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
            np.array([r[4] * len(names) + r[5] for r in rows], dtype=np.intp),
            np.array([r[4] for r in rows], dtype=np.intp),
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
