r"""``fsdp`` (ZeRO-3, FULL_SHARD / FSDP2) and ``hsdp`` (hybrid sharding), per wrapped unit.

Each unit (the embedding, every transformer block, the head: :func:`~.layout.wrap_units`) is
all-gathered before its forward, again before its backward unless
``reshard_after_forward=False`` (FSDP's SHARD_GRAD_OP keeps it gathered), and its gradients are
reduce-scattered after its backward. Prefetch is one unit ahead, as FSDP's defaults do
(forward: the next unit's all-gather is issued while the current one computes, at most two
gathered units in flight; backward: ``BACKWARD_PRE`` issues the next unit's gather before the
current unit's backward). The last unit of the forward is not resharded (FSDP2's default: its
backward follows at once). Ring volume per step (param and gradient dtype alike):
``3 (N-1)/N M``, 1.5x DDP's (Rajbhandari et al. 2020, section 7.2.2); ``2 (N-1)/N M`` without
resharding.

The all-gathers and the reduce-scatters run on one ``shard`` stream, one at a time in the
order the program issues them (in the backward: unit ``j``'s reduce-scatter, then the gather
prefetched for unit ``j - 2``, then unit ``j - 1``'s reduce-scatter). PyTorch FSDP (FSDP1 and
FSDP2) issues them on two CUDA streams but through one process group, one NCCL communicator,
which runs one collective at a time: they are serialized on the wire, never beside each other
at full speed each (pytorch/pytorch pull request 186335, "[FSDP2] Add
set_separate_reduce_scatter_group (opt-in AG/RS overlap)": "By default FSDP2 runs all-gather
and reduce-scatter on separate CUDA streams but through the same process group -- one NCCL
communicator, which processes one collective at a time and so serializes them on the wire").
So the step is never shorter than the communication of the shard group.

``hsdp`` shards inside a group (default one node) and replicates across groups: gathers and
reduce-scatters span the group, and each reduce-scattered shard is then all-reduced across the
groups (PyTorch FSDP2's HSDP: reduce-scatter then all-reduce) on its own ``replicate`` stream:
the replicate process group is another communicator, so its all-reduces may run beside the
shard group's collectives. When the groups span nodes the two share the nodes' NICs; that
sharing is not modelled (each collective runs at its own full speed).

Without ``overlap`` (:class:`~.events.StepInputs`) the reduce-scatters (and hsdp's all-reduces)
wait for the whole backward, as DDP's all-reduces do then; the backward's gathers still run
ahead of it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .engine import COMPUTE, Plan, TaskList, plan
from .events import StepInputs
from .layout import WrapUnit

#: The shard group's communicator (all-gathers and reduce-scatters, one at a time in issue
#: order) and hsdp's replicate group's (the all-reduces across groups).
SHARD, REPLICATE = "shard", "replicate"


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
    k = _kept(
        inp.units,
        inp.param_bytes,
        inp.grad_bytes,
        lay.shard_group,
        hybrid,
        lay.reshards,
        bool(inp.overlap),
    )
    timer, band = inp.timer, inp.band
    ops = [("all_gather", span, k.ag_bytes), ("reduce_scatter", span, k.rs_bytes)]
    ranks = timer.ranks(span)
    ranks_ar = 0
    if hybrid:
        ops.append(("all_reduce", "across", k.ar_bytes))
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
    # one row per column (the works, and at the band's ends), the per-unit values of the
    # sources _FWD, _BWD, _AG, _RS, _AR side by side; each task picks its own (k.flat)
    n = len(k.weights)
    rows = [times] if ends is None else [times, [e[0] for e in ends], [e[1] for e in ends]]
    values = np.zeros((len(rows), 5 * n))
    values[:, :n] = inp.forward_s * k.weights
    values[:, n : 2 * n] = inp.backward_total_s * k.weights
    for r, comm in enumerate(rows):
        for j, x in enumerate(comm):
            values[r, (2 + j) * n : (3 + j) * n] = x
    cols = values[:, k.flat].tolist()
    rk = np.array((0, 0, ranks, ranks, ranks_ar))[k.src].tolist()
    band_work = (cols[1], cols[2]) if ends is not None else None
    return TaskList(k.plan, cols[0], k.nbytes, rk, micro_batch, band_work, band)


class _Kept(NamedTuple):
    """What a step of ``fsdp``/``hsdp`` reads that depends only on the units, the dtypes, the
    group and resharding (not on the cluster): kept per such setting."""

    units: tuple[WrapUnit, ...]
    plan: Plan
    flat: np.ndarray  # each task's place among the five sources' per-unit values
    src: np.ndarray  # each task's source
    ag_bytes: np.ndarray  # per unit [B]
    rs_bytes: np.ndarray
    ar_bytes: np.ndarray  # hsdp: the reduce-scattered shard all-reduced across groups
    weights: np.ndarray  # each unit's share of the compute
    nbytes: list[float]  # each task's message [B]


_KEPT: dict[tuple[object, ...], _Kept] = {}


def _kept(
    units: tuple[WrapUnit, ...],
    param_bytes: float,
    grad_bytes: float,
    g: int,
    hybrid: bool,
    reshard: bool,
    overlap: bool = True,
) -> _Kept:
    key = (id(units), param_bytes, grad_bytes, g, hybrid, reshard, overlap)
    hit = _KEPT.get(key)
    if hit is not None and hit.units is units:
        return hit
    n = len(units)
    params = np.array([u.params for u in units], dtype=float)
    ag = params * param_bytes
    rs = params * grad_bytes
    ar = rs / g if hybrid else np.zeros(n)
    p, flat, src = _plan(
        tuple(u.name for u in units), hybrid, reshard, "group" if hybrid else "job", overlap
    )
    zeros = np.zeros(n)
    nbytes = np.concatenate((zeros, zeros, ag, rs, ar))[flat].tolist()
    weights = np.array([u.compute_weight for u in units], dtype=float)
    hit = _Kept(units, p, flat, src, ag, rs, ar, weights, nbytes)
    for a in (ag, rs, ar, weights):
        a.flags.writeable = False
    if len(_KEPT) >= 64:
        _KEPT.clear()
    _KEPT[key] = hit
    return hit


_PLANS: dict[tuple[object, ...], tuple[Plan, np.ndarray, np.ndarray]] = {}


def _plan(
    names: tuple[str, ...], hybrid: bool, reshard: bool, span: str, overlap: bool = True
) -> tuple[Plan, np.ndarray, np.ndarray]:
    """:func:`_order` as a :class:`~.engine.Plan`, each task's place in the five columns of
    per-unit values (``source x units + unit``) and its source, kept."""
    key = (names, hybrid, reshard, span, overlap)
    hit = _PLANS.get(key)
    if hit is None:
        rows = _order(names, hybrid, reshard, overlap)
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
            # _KEPT holds plans of this cache: dropped with them, so that every later step of
            # one structure gets the one plan (the advisor schedules a column's steps together
            # only when their lists share a plan object)
            _PLANS.clear()
            _KEPT.clear()
        _PLANS[key] = hit
    return hit


def _order(names: tuple[str, ...], hybrid: bool, reshard: bool, overlap: bool = True) -> list[Row]:
    """The tasks of one micro-batch as rows (module docstring), kept per setting.

    Program order is issue order: the ``shard`` stream runs its gathers and reduce-scatters
    one at a time in this order (one communicator). With ``overlap``, unit ``j``'s
    reduce-scatter follows its backward and comes before the gather prefetched (at unit
    ``j - 1``'s pre-backward) for unit ``j - 2``; without, every reduce-scatter waits for the
    last backward and follows the backward's gathers.
    """
    key = (names, hybrid, reshard, overlap)
    hit = _ORDERS.get(key)
    if hit is not None:
        return hit
    n = len(names)
    out: list[Row] = []
    fwd: dict[int, int] = {}
    ag_f: dict[int, int] = {}

    def gather_f(i: int) -> None:
        dep = (fwd[i - 2],) if i >= 2 else ()
        out.append(("all_gather", SHARD, dep, f"gather {names[i]}", _AG, i))
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
        out.append(("all_gather", SHARD, (dep,), f"gather {names[j]} (backward)", _AG, j))
        ag_b[j] = len(out) - 1

    def reduce(j: int, dep: int) -> None:
        out.append(("reduce_scatter", SHARD, (dep,), f"reduce {names[j]}", _RS, j))
        if hybrid:
            out.append(("all_reduce", REPLICATE, (len(out) - 1,), f"replicas {names[j]}", _AR, j))

    if reshard and n >= 2:
        gather_b(n - 2, fwd[n - 1])
    for j in range(n - 1, -1, -1):
        deps = (ag_b[j],) if j in ag_b else ()
        out.append(("backward", COMPUTE, deps, f"backward {names[j]}", _BWD, j))
        bwd[j] = len(out) - 1
        if overlap:
            reduce(j, bwd[j])
        if reshard and j - 2 >= 0:
            gather_b(j - 2, bwd[j])
    if not overlap and n:
        for j in range(n - 1, -1, -1):  # after the whole backward
            reduce(j, bwd[0])
    if len(_ORDERS) >= 64:
        _ORDERS.clear()
    _ORDERS[key] = out
    return out
