r"""One data-parallel training step under any strategy: the engine's public road.

:func:`strategy_step` turns a model, a cluster and a :class:`~.layout.Layout` into the step's
tasks (one strategy module each: :mod:`.ddp`, :mod:`.zero`, :mod:`.fsdp`), schedules them with
:func:`.engine.run`, and sizes the memory from the same layout (:func:`.memory.strategy_memory`),
so "fits" and "step time" describe one configuration.

Accumulation over ``A`` micro-batches: the micro-batches that do not communicate (``ddp`` and
``zero1`` with ``no_sync``) take their compute; the others run the strategy's per-micro-batch
schedule (``zero2`` reduce-scatters each micro-batch, ``fsdp``/``hsdp`` gather and reduce each
one); the last one adds the step's remaining communication. Micro-batches do not overlap each
other.

The optimizer step runs on the compute stream after the step's last gradient collective (not
overlapped: it needs every reduced gradient of the rank's shard; ``zero1``/``zero2`` all-gather
the updated parameters after it). It is HBM-bandwidth bound
(:func:`costmodel.compute.optimizer_step_s`): the bytes the recipe's optimizer reads and writes
per parameter (:func:`costmodel.compute.optimizer_bytes_per_param`, 28 B for AdamW with fp32
master weights, states and gradients) over the rank's parameters (its shard under ZeRO/FSDP).
It is reported as ``optimizer_s``, apart from ``compute_s`` (forward, backward, recomputation)
and from the exposed communication.

The ranks of a sharded strategy (:data:`SYNC_LOSS_STRATEGIES`) then wait for the slowest one:
a synchronisation loss that grows with the log of the ranks (:func:`costmodel.compute.sync_loss_s`, ``k log2 N`` of the compute, ``k`` fitted on the
published scaling series and kept by grouped cross-validation; ``sync_loss`` overrides ``k``,
0 switches it off). It is added at the end of the step and reported as ``sync_s``, apart from
the exposed communication.

The verdict: ``"comms"`` when the exposed communication is significant (more than
:data:`EXPOSED_SIGNIFICANT` of the step) or the communication alone outlasts the compute;
otherwise ``"compute"``.

>>> s = strategy_step(7e9, cluster="dgx-h100", nodes=8, strategy="fsdp", model="lesson",
...                   compute_time_s=0.4)
>>> ratio = s.comm_by_kind_s["all_gather"] / s.comm_by_kind_s["reduce_scatter"]
>>> s.layout.name, s.ranks, round(ratio, 1)  # all-gathers twice (forward, backward): about 2
('fsdp', 64, 2.0)
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, ParamSpec

import numpy as np

from .._checks import FasterThanPeakError, said
from .._limits import choice_names
from ..hardware import DEFAULT_NODES, default_ranks
from ..predict import CalibrationWarning
from ..units import format_counted, whole_number
from . import ddp as _ddp
from . import fsdp as _fsdp
from . import zero as _zero
from .accumulate import Accumulated, accumulate
from .band import CollectiveReach, band_extrapolation, step_time_band
from .comm import CollectiveTimer
from .compute import (
    DEFAULT_MFU,
    FORWARD_FRACTION,
    ComputeTime,
    fitted_efficiency,
    step_compute,
)
from .engine import Plan, Schedule, Task, TaskList, _picker, columns, plan, run_many
from .events import StepInputs
from .layout import DEFAULT_COMM_CONTENTION, Layout, make_layout, wrap_units
from .memory import StrategyMemory, check_overheads, fit_notes, strategy_memory

EXPOSED_SIGNIFICANT = 0.05
"""Exposed communication above this fraction of the step makes the step comms-bound [-]: a
step that waits on the network for more than 5 % of its time is limited by it, whatever the
totals say."""

SYNC_LOSS_STRATEGIES = ("zero1", "zero2", "fsdp", "hsdp")
"""Strategies whose step adds the synchronisation loss: the sharded ones it was fitted on
(FSDP runs). Not ``ddp``: on PyTorch's DDP benchmark (1-16 V100, with DDP's fitted per-tensor
overhead and contention) it raises the median step error from 1.3 % to 2.5 %."""

MAX_TIMELINE_BARS = 200_000
"""Most intervals a step draws; beyond it only the last micro-batch is drawn."""

DEFAULT_FIRST_BUCKET_BYTES = 2**20  # torch dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB)


@dataclass(frozen=True)
class Interval:
    """One bar of a step's timeline [s]."""

    kind: str
    stream: str
    start_s: float
    end_s: float
    label: str = ""
    message_bytes: float = 0.0
    span_ranks: int = 0
    span: str = ""
    micro_batch: int = 0

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class CommCalls:
    """The collectives of one kind in a step (:attr:`StrategyStep.comm_calls`): ``calls`` per
    optimizer step, ``calls_per_micro`` of them in each micro-batch that runs them
    (``micro_batches`` of the step's: 1 where only the last one syncs), ``message_bytes`` their
    buffers summed over one such micro-batch [B], all over ``span`` (``""`` where they span
    more than one). A step's communication is the sum of these calls, each paying its own
    latency and algorithm choice: :func:`comm_calls_note` says it beside that sum."""

    kind: str
    calls: int
    calls_per_micro: int
    micro_batches: int
    message_bytes: float
    span: str


def _comm_calls(
    final: Sequence[Task], mid: Sequence[Task], accumulation: int
) -> tuple[CommCalls, ...]:
    """The :class:`CommCalls` of each collective kind of a step: the final micro-batch's task
    list ``final`` and the other micro-batches' ``mid`` (``accumulation - 1`` of them)."""
    cols = columns(final)
    mid_kinds = columns(mid).by_kind if mid else {}
    out = []
    mid_ranks = columns(mid).span_ranks if mid else []
    for kind, idx in cols.by_kind.items():
        idx = [i for i in idx if cols.span_ranks[i] >= 2]  # a span of one rank sends nothing
        if not idx:
            continue
        spans = {cols.span[i] for i in idx}
        n_mid = sum(1 for i in mid_kinds.get(kind, ()) if mid_ranks[i] >= 2)
        out.append(
            CommCalls(
                kind=kind,
                calls=len(idx) + (accumulation - 1) * n_mid,
                calls_per_micro=len(idx),
                micro_batches=accumulation if n_mid else 1,
                message_bytes=float(sum(float(cols.message_bytes[i]) for i in idx)),
                span=spans.pop() if len(spans) == 1 else "",
            )
        )
    return tuple(out)


def one_call_s(step: StrategyStep, cc: CommCalls, cluster: Any, model: str = "nccl") -> float:
    """The time [s] of one ``cc.kind`` carrying a micro-batch's buffers of that kind at once
    (``cc.message_bytes``) over the same span of ``cluster`` (``step``'s, with its ``model``),
    as ``costmodel collective`` prices that size: what the step's sum of separate calls is
    compared with. NaN where the calls span more than one group, or carry nothing."""
    if not cc.span or cc.message_bytes <= 0:
        return math.nan
    timer = CollectiveTimer(cluster, model=model, group_size=step.layout.shard_group)
    return float(timer.time(cc.kind, cc.span, [cc.message_bytes])[0])


def comm_calls_note(cc: CommCalls, whole_s: float, bucketed: bool = False) -> str:
    """What a step's communication sum of one kind is made of, in words: ``"sum of 289 bucket
    all-reduces of 48.4 MB on average; one 14 GB all-reduce: 74.1 ms"``. The sum
    (:attr:`StrategyStep.comm_by_kind_s`) adds ``cc.calls`` separate collectives, each paying
    its latency and its own algorithm choice, so it exceeds one collective of the same bytes
    (``whole_s``, :func:`one_call_s`; left out where NaN). ``""`` where each micro-batch runs
    one call (the sum is that call). ``bucketed``: the calls are gradient buckets (ddp, zero1,
    zero2)."""
    from ..units import format_bytes, format_duration

    if cc.calls_per_micro <= 1:
        return ""
    name = cc.kind.replace("_", "-")
    text = (
        f"sum of {cc.calls:,} {'bucket ' if bucketed else ''}{name}s of "
        f"{format_bytes(cc.message_bytes / cc.calls_per_micro)} on average"
    )
    if math.isfinite(whole_s):
        per = " per micro-batch" if cc.micro_batches > 1 else ""
        text += f"; one {format_bytes(cc.message_bytes)} {name}{per}: {format_duration(whole_s)}"
    return text


def comm_calls_by_kind(step: StrategyStep, cluster: Any, model: str = "nccl") -> dict[str, Any]:
    """Per collective kind of ``step`` (on ``cluster``, its collective ``model``): its calls
    (:class:`CommCalls`), one call of the same bytes (:func:`one_call_s`, None where unknown)
    and the words said beside the kind's sum (:func:`comm_calls_note`), JSON-ready: what
    ``costmodel step`` (text and ``--json``'s ``comm_calls_by_kind``) and the app's step page
    say, from this one function."""
    out: dict[str, Any] = {}
    bucketed = step.layout.strategy in ("ddp", "zero1", "zero2")
    for cc in step.comm_calls:
        whole = one_call_s(step, cc, cluster, model) if cc.calls_per_micro > 1 else math.nan
        out[cc.kind] = {
            "calls": cc.calls,
            "calls_per_micro_batch": cc.calls_per_micro,
            "micro_batches": cc.micro_batches,
            "message_bytes": cc.message_bytes,
            "one_call_s": whole if math.isfinite(whole) else None,
            "note": comm_calls_note(cc, whole, bucketed),
        }
    return out


@dataclass(frozen=True)
class StrategyStep:
    """:func:`strategy_step`'s answer. Times per optimizer step [s], memory per GPU [B]."""

    layout: Layout
    ranks: int
    accumulation: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    step_time_s: float
    # the expected-error band (compute, scaling beyond one node, collectives: .band)
    step_time_band_s: tuple[float, float]
    bound: str
    # scaling efficiency: one_gpu_step_s / step_time_s (scaling_efficiency), 1 on one GPU
    efficiency: float
    tokens_per_step: float
    tokens_per_s: float
    comm_by_kind_s: dict[str, float]
    wire_bytes_by_kind: dict[str, float]  # per GPU per step, ring volumes (N-1)/N factors
    events: int
    memory: StrategyMemory
    gpu_memory_bytes: float
    comm_contention: float
    timeline: tuple[Interval, ...] = field(default=(), repr=False)
    compute_source: str = "mfu"  # fitted, mfu, measured or default-mfu (.compute.SOURCES)
    compute_label: str = ""  # the compute source in words, shown next to the step
    precision: str = "bf16"  # the matmuls' compute precision (compute_precision)
    compute_band: tuple[float, float] = (1.0, 1.0)  # (low, high) multipliers of compute_s
    notes: tuple[str, ...] = ()  # what the answer leaves out (mixture-of-experts)
    optimizer_s: float = 0.0  # the optimizer step (HBM-bound; not in compute_s) [s]
    sync_s: float = 0.0  # waiting for the slowest rank (fitted, log of the ranks) [s]
    # the step with every collective at the fast and at the slow end of its own error band [s]
    # (NaN: no band asked, or a collective's band unknown); step_time_band_s folds it in
    collective_band_s: tuple[float, float] = (math.nan, math.nan)
    host_overhead_s: float = 0.0  # DDP's host time: hooks, bucket copies (fitted; not comm) [s]
    # the same setup's step on one GPU, the efficiency's reference (one_gpu_step_s) [s]
    one_gpu_step_s: float = math.nan
    # that the step's nodes or GPUs lie beyond the largest published run its band was checked
    # on (.band.band_extrapolation: the band keeps its numbers); "" within that range
    band_extrapolation: str = ""
    # the measured counts it exceeds, "64 nodes", "512 GPUs" or both, and "the collective
    # band's 20 nodes" (joined by "; "); "" within the range
    band_extrapolated_beyond: str = ""
    # the collectives of the schedule beyond the runs their own bands were fitted on
    # (.band.CollectiveReach; part of band_extrapolation's reasons); () within those runs
    band_collectives: tuple[CollectiveReach, ...] = field(default=(), repr=False)
    # the collectives of each kind: how many calls make comm_by_kind_s's sum (CommCalls)
    comm_calls: tuple[CommCalls, ...] = field(default=(), repr=False)

    @property
    def band_extrapolated(self) -> bool:
        """Whether :attr:`step_time_band_s` is extrapolated: the step's nodes or GPUs exceed
        the largest published run the band was checked on (:attr:`band_extrapolation` says
        which; :func:`~.band.band_extrapolation`). False where the band is unknown."""
        return bool(self.band_extrapolation)

    @property
    def compute_share(self) -> float:
        """The compute's share of the step, ``compute_s / step_time_s`` (:func:`compute_share`);
        not the scaling efficiency."""
        return compute_share(self.compute_s, self.step_time_s)

    @property
    def fits(self) -> bool:
        return self.memory.total_bytes <= self.gpu_memory_bytes

    @property
    def memory_bytes(self) -> float:
        return self.memory.total_bytes

    @property
    def strategy(self) -> str:
        """The plain strategy (``hsdp``: :attr:`~.layout.Layout.strategy`), what
        ``as_dict()["strategy"]``, every sweep row and ``--json`` call ``strategy``; the
        layout's name is :attr:`layout_name`."""
        return self.layout.strategy

    @property
    def layout_name(self) -> str:
        """The layout's name (``hsdp g=8``, ``fsdp (no reshard)``: :attr:`~.layout.Layout.name`),
        what ``as_dict()["layout"]``, every sweep row and ``--json`` call ``layout``."""
        return self.layout.name

    def as_dict(self) -> dict[str, Any]:
        """Scalar figures by name (no timeline), JSON-ready. The layout is named by
        :meth:`~.layout.Layout.identity`'s keys (``strategy`` the plain strategy, ``layout``
        its name, ``hsdp g=8``, ``group_size``, ``reshard_after_forward``,
        ``gradient_as_bucket_view``), as every sweep row
        and ``--json`` names it; ``layout_fields`` holds every field of the Layout
        (:meth:`~.layout.Layout.as_dict`: dtypes, the bucket applied, the contention)."""
        lo, hi = self.step_time_band_s
        return {
            **self.layout.identity(),
            "layout_fields": self.layout.as_dict(),
            "ranks": self.ranks,
            "accumulation": self.accumulation,
            "compute_s": self.compute_s,
            "comm_s": self.comm_s,
            "exposed_comm_s": self.exposed_comm_s,
            "step_time_s": self.step_time_s,
            "step_time_lo_s": lo,
            "step_time_hi_s": hi,
            "band_extrapolated": self.band_extrapolated,
            "band_extrapolation": self.band_extrapolation,
            "bound": self.bound,
            "efficiency": self.efficiency,
            "one_gpu_step_s": self.one_gpu_step_s,
            "compute_share": self.compute_share,
            # a count: written as one (scenario --json and the sweep's int column write it so)
            "tokens_per_step": whole_number(self.tokens_per_step),
            "tokens_per_s": self.tokens_per_s,
            "comm_by_kind_s": dict(self.comm_by_kind_s),
            "wire_bytes_by_kind": dict(self.wire_bytes_by_kind),
            "events": self.events,
            "memory_bytes": self.memory_bytes,
            "memory_parts_bytes": self.memory.parts(),
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "fits": self.fits,
            "comm_contention": self.comm_contention,
            "compute_source": self.compute_source,
            "compute_label": self.compute_label,
            "precision": self.precision,
            "compute_band": list(self.compute_band),
            "notes": list(self.notes),
            "optimizer_s": self.optimizer_s,
            "sync_s": self.sync_s,
            "host_overhead_s": self.host_overhead_s,
        }


#: Compute precisions of a step's matmuls (:func:`compute_precision`).
PRECISIONS: tuple[str, ...] = ("bf16", "fp8")


def compute_precision(precision: str | None, recipe: Any = "mixed-adam") -> str:
    """The compute precision of a step's matmuls: ``precision`` when given, else the recipe's.

    An fp8 recipe (``fp8-mixed``: fp8 working weights and gradients) is float8 training, whose
    linear layers multiply in fp8 (Micikevicius et al. 2022, arXiv:2209.05433; torchao's and
    Transformer Engine's float8 linears), so it implies ``fp8``; every other recipe ``bf16``.
    ``precision="bf16"`` with ``fp8-mixed`` is kept as given: fp8 storage of the weights and
    gradients with bf16 matmuls (the memory and wire bytes of fp8, the speed of bf16) is a
    what-if a user may ask, not an impossible run. The one rule of every surface: the API,
    Scenario, the CLI and the sweep pass ``None`` when the user gave no precision; the step
    page, which has no recipe box (mixed-adam), starts its precision box at the same ``bf16``.

    Under ``fp8`` the matmuls run at the GPU's fp8 dense peak, and a given MFU is a fraction of
    that peak (:func:`costmodel.strategy.compute.step_compute`; docs/design.md).

    >>> compute_precision(None), compute_precision(None, "fp8-mixed")
    ('bf16', 'fp8')
    >>> compute_precision("bf16", "fp8-mixed")
    'bf16'
    >>> compute_precision("fp4")
    Traceback (most recent call last):
    ...
    ValueError: precision: must be bf16 or fp8, got 'fp4'
    """
    if precision is None:
        from ..memory import get_recipe

        return "fp8" if get_recipe(recipe).name.startswith("fp8") else "bf16"
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"precision: must be {' or '.join(PRECISIONS)}, got {precision!r}")
    return precision


def check_precision_support(gpu: Any, precision: str | None, recipe: Any = "mixed-adam") -> str:
    """The step's compute precision (:func:`compute_precision`), refused in one line naming the
    GPU when it is ``fp8`` on a GPU without fp8 tensor cores (A100, V100): an fp8 recipe is
    refused first, as :func:`check_fp8_support` words it, so the field the user typed is named.

    >>> from costmodel import presets
    >>> check_precision_support(presets.load("h100-sxm"), "fp8")
    'fp8'
    >>> check_precision_support(presets.load("a100-sxm-80gb"), "fp8")
    Traceback (most recent call last):
    ...
    ValueError: precision: a100-sxm-80gb has no fp8 tensor cores; use bf16
    """
    check_fp8_support(gpu, recipe=recipe)
    p = compute_precision(precision, recipe)
    if p == "fp8" and gpu.fp8_dense_flops is None:
        raise ValueError(f"precision: {gpu.name} has no fp8 tensor cores; use bf16")
    return p


def check_fp8_support(gpu: Any, *, recipe: Any = None, param_dtype: str | None = None) -> None:
    """Refuse an fp8 recipe or fp8 all-gathers on a GPU without fp8 tensor cores.

    fp8 working weights and gradients (the ``fp8-mixed`` recipe, Micikevicius et al. 2022,
    arXiv:2209.05433) and fp8 all-gathers (torchao's float8 FSDP) come with float8 training,
    which needs fp8 tensor cores (Hopper, Ada, Blackwell; ``gpu.fp8_dense_flops``). The one
    check for every surface that knows the GPU (step, scenario, train, sweep, memory).
    """
    from ..memory import RECIPES, get_recipe

    if gpu.fp8_dense_flops is not None:
        return
    if param_dtype == "fp8":
        raise ValueError(
            f"param_dtype: fp8 all-gathers need fp8 tensor cores; {gpu.name} has none; "
            "allowed: bf16, fp16, fp32"
        )
    if recipe is not None:
        r = get_recipe(recipe)
        if r.name.startswith("fp8"):
            allowed = ", ".join(n for n in RECIPES if not n.startswith("fp8"))
            raise ValueError(
                f"recipe: {r.name} trains with fp8 weights and gradients, which need fp8 tensor "
                f"cores; {gpu.name} has none; allowed: {allowed}"
            )


def exposed_time_s(step_s: float, not_comm_s: float) -> float:
    """The exposed communication ``step - (compute + optimizer + sync + host)`` [s], with the
    rounding residue of that difference (a step with no communication, e.g. one rank) as 0."""
    x = step_s - not_comm_s
    return 0.0 if x <= EXPOSED_RESIDUE * max(abs(step_s), 1e-300) else x


EXPOSED_RESIDUE = 1e-12
"""Differences below this fraction of the step are rounding, not exposed communication [-]
(the timeline's gaps use the same tolerance: :func:`costmodel.plots.compute_gaps`)."""


def verdict(compute_s: float, comm_s: float, exposed_s: float, step_s: float) -> str:
    """``"comms"`` when exposed communication is significant or comm outlasts compute."""
    if comm_s > compute_s or (step_s > 0 and exposed_s > EXPOSED_SIGNIFICANT * step_s):
        return "comms"
    return "compute"


def one_gpu_step_s(compute_s: float, optimizer_s: float, host_overhead_s: float = 0.0) -> float:
    r"""The same setup's step on one GPU [s]: the reference of :func:`scaling_efficiency`.

    ``T_1 = compute + optimizer_1 + host``: the same per-GPU micro-batches and accumulation
    (weak scaling), their forward, backward and recomputation ``compute_s`` as the step on
    ``N`` GPUs computes them, the optimizer step over *all* the parameters
    (``optimizer_s``: on one GPU nothing is sharded) and a framework's host time per step
    (``host_overhead_s``, default 0). No collective and no waiting for other ranks: one GPU
    has no data-parallel communication.

    The step engine passes no host time: its reference is plain training on one GPU, no
    DDP wrapper, the step it prices for the same setup on one GPU (one rank under ``ddp``
    has no DDP host overhead, as it has no bucket copy), the same yardstick for every
    strategy. "The same code on one GPU" is the training loop, not its data-parallel
    wrapper: DDP's hooks and bucket copies (:func:`costmodel.compute.ddp_step_overhead_s`)
    exist only to go data-parallel, so on ``N > 1`` ranks they are a scaling loss, like the
    communication they feed. A caller pricing a DDP-wrapped model on one GPU (PyTorch's DDP
    benchmark, measured from one GPU up) passes that wrapper's time here.

    A throughput reference, not a claim that the setup fits one GPU: a model whose memory
    needs the sharding of ``N`` GPUs (7B under mixed-precision Adam is 112 GB of state) cannot
    run on one, yet its one-GPU step is still the yardstick of the lesson's definition.

    >>> one_gpu_step_s(0.4, 0.05)
    0.45
    """
    return float(compute_s) + float(optimizer_s) + float(host_overhead_s)


def scaling_efficiency(one_gpu_s: float, step_s: float) -> float:
    r"""Scaling efficiency: throughput on ``N`` GPUs over ``N`` times the throughput on one.

    .. math:: E = \frac{X_N}{N X_1} = \frac{N b / T_N}{N \cdot b / T_1} = \frac{T_1}{T_N}

    with ``b`` the tokens one GPU processes per step (the same per-GPU micro-batch and
    accumulation on one GPU and on ``N``: weak scaling), ``T_1`` the step of that setup on one
    GPU (:func:`one_gpu_step_s`) and ``T_N`` the step on ``N`` [s]. One GPU gives exactly 1;
    perfect data parallelism is 1. It can exceed 1 when a sharded strategy (ZeRO, FSDP) shares
    out per-GPU work that one GPU does whole (the optimizer step over its shard) and that
    saves more than its communication and synchronisation cost (superlinear scaling).

    Reference: the seed lesson on data parallelism, "Scaling efficiency and the comms-bound
    regime": scaling efficiency = (throughput on N GPUs) / (N x throughput on 1 GPU).

    Not the compute's share of the step (:func:`compute_share`): a step on one GPU spends
    part of its time in the optimizer step, so its compute share is below 1 while its
    scaling efficiency is 1.

    >>> scaling_efficiency(0.4, 0.55)  # the lesson's practice problem 1, perfect overlap
    0.7272727272727273
    >>> scaling_efficiency(0.45, 0.45)
    1.0
    """
    t1, tn = float(one_gpu_s), float(step_s)
    return t1 / tn if tn > 0 else 1.0


def compute_share(compute_s: float, step_s: float) -> float:
    r"""The compute's share of the step: ``compute / step`` [-] (0, 1].

    The fraction of the step the GPU spends in forward, backward and recomputation (not in the
    optimizer step, exposed communication, DDP's host time or waiting for other ranks). The
    realised MFU is the compute's MFU times this share. It is not the scaling efficiency
    (:func:`scaling_efficiency`): on one GPU it is below 1 by the optimizer step.

    >>> compute_share(0.4, 0.5)
    0.8
    """
    c, t = float(compute_s), float(step_s)
    return c / t if t > 0 else 1.0


ABOVE_ONE_GPU = (
    "above 100%: the optimizer step sharded over the ranks saves more than the sharding costs"
)
"""Why a scaling efficiency is above 100 % (:func:`scaling_efficiency`): the words of the step,
``scenario`` and a comparison, beside any such figure."""


def above_one_gpu(efficiency: float) -> bool:
    """Whether ``efficiency`` is above 100 % by more than rounding (:data:`ABOVE_ONE_GPU`)."""
    return float(efficiency) > 1.0 + 1e-9


def efficiency_text(efficiency: float, one_gpu_s: float) -> str:
    """The scaling efficiency in words, as the CLI and the step page show it: the percentage
    and its one-GPU reference step, and why a figure above 100 % is (:func:`scaling_efficiency`).

    >>> efficiency_text(0.9, 0.45)
    '90.0% (vs one GPU, same micro-batches: 450 ms per step)'
    """
    from ..units import format_duration

    text = f"{100 * float(efficiency):.1f}%"
    if math.isfinite(float(one_gpu_s)):
        text += f" (vs one GPU, same micro-batches: {format_duration(one_gpu_s)} per step)"
    if above_one_gpu(efficiency):
        text += f"; {ABOVE_ONE_GPU}"
    return text


def check_cluster_argument(cluster: Any) -> None:
    """Refuse a ``cluster`` that is neither a preset name nor a :class:`~costmodel.hardware.Cluster`
    in one line: ``cluster=2`` meant ``nodes=2`` (it was an AttributeError). The check of every
    function that takes a cluster to price steps on (:func:`strategy_step`, the advisor's
    ``advise``, ``advise_nodes`` and ``fit_suggestions``).

    >>> check_cluster_argument(2)
    Traceback (most recent call last):
    ...
    ValueError: cluster: a cluster preset name or a Cluster (cm.cluster('dgx-h100')), got 2; the node count is `nodes`
    """
    from ..hardware import Cluster

    if not isinstance(cluster, str | Cluster):
        raise ValueError(
            f"cluster: a cluster preset name or a Cluster (cm.cluster('dgx-h100')), got "
            f"{cluster!r}; the node count is `nodes`"
        )


def _micro_tasks(inp: StepInputs, synced: bool, final: bool, mb: int) -> Sequence[Task]:
    s = inp.layout.strategy
    if s == "ddp":
        return _ddp.tasks(inp, synced, mb)
    if s in ("zero1", "zero2"):
        return _zero.tasks(inp, synced, final, mb)
    return _fsdp.tasks(inp, mb)


def _wire_bytes(tasks: Sequence[Task]) -> dict[str, float]:
    """Bytes each GPU sends per collective kind: ring factors ``2(n-1)/n``, ``(n-1)/n``."""
    cols = columns(tasks)
    found: list[tuple[int, str, float]] = []
    for kind, idx in cols.by_kind.items():  # each kind summed in task order
        pick = _picker(idx)
        ranks = pick(cols.span_ranks)
        first = next((i for i, n in zip(idx, ranks, strict=True) if n >= 2), -1)
        if first < 0:
            continue
        # a span of one rank sends nothing: its factor 0 adds exactly 0.0 to the sum
        factor = _ring_factor_ar if kind == "all_reduce" else _ring_factor
        acc = functools.reduce(
            operator.add, map(operator.mul, map(factor, ranks), pick(cols.message_bytes)), 0.0
        )
        found.append((first, kind, acc))
    return {kind: acc for _, kind, acc in sorted(found)}


@functools.lru_cache(maxsize=1024)
def _ring_factor_ar(n: int) -> float:
    """An all-reduce's ring factor ``2 (n-1)/n`` (0 for a span of fewer than 2 ranks)."""
    return 2.0 * (n - 1) / n if n >= 2 else 0.0


@functools.lru_cache(maxsize=1024)
def _ring_factor(n: int) -> float:
    """A reduce-scatter's or all-gather's ring factor ``(n-1)/n`` (0 below 2 ranks)."""
    return (n - 1) / n if n >= 2 else 0.0


def _band_works(
    tasks: Sequence[Task], timer: CollectiveTimer
) -> tuple[list[float], list[float]] | None:
    """Each task's work with every collective at the fast, and at the slow, end of its error
    band (None when a collective's band is unknown). A :class:`~.engine.TaskList` that read
    them with its times (``has_band``) holds them already: the same numbers."""
    if isinstance(tasks, TaskList) and tasks.has_band:
        return tasks.band_work
    cols = columns(tasks)
    work = np.array(cols.work, dtype=float)
    nbytes = np.array(cols.message_bytes, dtype=float)
    fast = work.copy()
    slow = work.copy()
    for kind, sp, ix_all in _span_groups(tasks):
        ix = ix_all[work[ix_all] > 0]  # collectives that take time
        if not ix.size:
            continue
        m_fast, m_slow = timer.band(kind, sp, nbytes[ix])
        if not (np.all(np.isfinite(m_fast)) and np.all(np.isfinite(m_slow))):
            return None
        fast[ix] *= m_fast
        slow[ix] *= m_slow
    return fast.tolist(), slow.tolist()


def _collective_reach(
    task_lists: Sequence[Sequence[Task]], timer: CollectiveTimer
) -> tuple[CollectiveReach, ...]:
    """The collectives of a step's schedules whose own error band is extrapolated: each (op,
    span, size class) of a collective that takes time (those whose band the step band folds
    in, :func:`_band_works`) on more nodes or GPUs than the largest bundled run its band was
    fitted on (:meth:`~.comm.CollectiveTimer.band_reach`), in order of first appearance."""
    from ..uncertainty import ONE_MIB

    out: dict[tuple[str, str, str], CollectiveReach] = {}
    for tasks in task_lists:
        if not tasks:
            continue
        cols = None
        for kind, sp, ix_all in _span_groups(tasks):
            far = [
                (sc, reach)
                for sc in ("ge1MiB", "lt1MiB")
                if (kind, sp, sc) not in out and (reach := timer.band_reach(kind, sp, sc))[1]
            ]
            if not far:  # within the runs for either size (most steps): no sizes to read
                continue
            if cols is None:
                cols = columns(tasks)
                work = np.asarray(cols.work, dtype=float)
                nbytes = np.asarray(cols.message_bytes, dtype=float)
            ix = ix_all[work[ix_all] > 0]
            big = nbytes[ix] >= ONE_MIB
            for sc, (reg, beyond) in far:
                if bool(big.any()) if sc == "ge1MiB" else bool((~big).any()):
                    c = timer.span_cluster(sp)
                    out[(kind, sp, sc)] = CollectiveReach(
                        kind, int(c.nodes), int(c.ranks), sc, reg, beyond
                    )
    return tuple(out.values())


_GROUPS: dict[int, tuple[Plan, list[tuple[str, str, np.ndarray]]]] = {}


def _span_groups(tasks: Sequence[Task]) -> list[tuple[str, str, np.ndarray]]:
    """The collectives of a task list grouped by (kind, span), each group's task indices in
    task order (kinds and spans in order of first appearance); kept per :class:`Plan`."""
    p = tasks.plan if isinstance(tasks, TaskList) else None
    if p is not None:
        hit = _GROUPS.get(id(p))
        if hit is not None and hit[0] is p:
            return hit[1]
    cols = columns(tasks)
    out = []
    for kind, idx in cols.by_kind.items():
        groups: dict[str, list[int]] = {}
        for i in idx:
            groups.setdefault(cols.span[i], []).append(i)
        out += [(kind, sp, np.array(sel, dtype=np.intp)) for sp, sel in groups.items()]
    if p is not None:
        if len(_GROUPS) >= 64:
            _GROUPS.clear()
        _GROUPS[id(p)] = (p, out)
    return out


MAX_UNITS = 100_000
"""Most wrap units a step schedules (a bare count is cut into blocks of
:data:`~.layout.DEFAULT_BLOCK_PARAMS`): about 2e13 parameters; above it the step is refused."""


def _check_work(p: float, layout: Layout, recipe_grad_bytes: float, shaped: bool) -> None:
    """Refuse a step whose schedule would be too large before building it (bounded work)."""
    from .. import ddp
    from .layout import DEFAULT_BLOCK_PARAMS

    if shaped:
        return
    if layout.strategy in ("ddp", "zero1", "zero2"):
        grad_b = layout.grad_bytes(recipe_grad_bytes)
        cap = layout.bucket_cap(grad_b)
        pieces = p / ddp.DEFAULT_TENSOR_PARAMS
        est = min(pieces, p * grad_b / cap + 1)
        if pieces > ddp.MAX_TENSORS or est > ddp.MAX_BUCKETS:
            raise ValueError(
                f"params: {p:.3g} parameters make about {est:.3g} gradient buckets of at most "
                f"{cap:.3g} B; at most {ddp.MAX_BUCKETS:,} buckets are scheduled: raise "
                "`bucket_cap_bytes` or name an architecture (`arch`), whose tensors are counted"
            )
    elif p / DEFAULT_BLOCK_PARAMS > MAX_UNITS:
        raise ValueError(
            f"params: {p:.3g} parameters make {p / DEFAULT_BLOCK_PARAMS:.3g} wrap units; at "
            f"most {MAX_UNITS:,} are scheduled (name an architecture, or fewer parameters)"
        )


def _prepare_step(
    params: float | str | None = None,
    *,
    arch: Any = None,
    cluster: Any = "dgx-h100",
    nodes: int = DEFAULT_NODES,
    gpus_per_node: int | None = None,
    layout: Layout | None = None,
    strategy: str = "ddp",
    group_size: int | None = None,
    reshard_after_forward: bool | None = None,
    gradient_as_bucket_view: bool | None = None,
    param_dtype: str = "bf16",
    grad_dtype: str | None = None,
    bucket_cap_bytes: int | None = None,
    comm_contention: float | None = None,
    recipe: str = "mixed-adam",
    micro_batch: int = 1,
    sequence_length: int = 4096,
    accumulation: int = 1,
    no_sync: bool = True,
    mfu: float | None = None,
    compute_time_s: float | None = None,
    recompute: str = "none",
    flash_attention: bool = True,
    loss: str = "fp32",
    model: str = "nccl",
    timeline: bool = True,
    band: bool = True,
    timer: CollectiveTimer | None = None,
    first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES,
    tensor_params: Any = None,
    overlap: bool = True,
    precision: str | None = None,
    held_out: str | None = None,
    sync_loss: float | None = None,
    power_limit_w: float | None = None,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
) -> _Prepared:
    """One optimizer step of a data-parallel strategy on a cluster [s] (module docstring).

    Over ``A`` micro-batches ``t = (A - 1)(T_mid + h_mid) + T_final + h + t_sync``
    (:func:`.accumulate.accumulate`): ``T_final`` the last micro-batch's schedule (its compute,
    the collectives beside it, then the optimizer step on the rank's shard), ``h`` DDP's host
    time, ``t_sync = k log2(N) x compute`` the sharded strategies' wait for the slowest rank;
    scaling efficiency ``one_gpu_step_s / t``.
    Strategies: PyTorch DDP (Li et al. 2020, arXiv:2006.15704), ZeRO (Rajbhandari et al. 2020,
    arXiv:1910.02054), FSDP (Zhao et al. 2023, arXiv:2304.11277); docs/design.md section 3.

    Parameters
    ----------
    params, arch
        A parameter count, or an architecture preset (its tensors, wrap units and FLOPs). A
        name or config.json path given as ``params`` is read as ``arch``
        (``strategy_step("llama-3.1-70b")``, as ``training_memory`` and ``ddp_step`` read it).
    cluster, nodes, gpus_per_node
        A cluster preset (or :class:`~costmodel.hardware.Cluster`) and its size.
    layout
        A :class:`~.layout.Layout`; otherwise built from ``strategy``, ``group_size``,
        ``reshard_after_forward``, ``gradient_as_bucket_view``, ``param_dtype``,
        ``grad_dtype``, ``bucket_cap_bytes`` and ``comm_contention`` (default
        :data:`~.layout.DEFAULT_COMM_CONTENTION`);
        ``bucket_cap_bytes`` None is the strategy's own bucket (:meth:`~.layout.Layout.bucket_cap`:
        ddp 25 MiB, zero1/zero2 DeepSpeed's 5e8 elements).
    recipe, micro_batch, sequence_length, accumulation, no_sync
        Precision recipe (memory, gradient dtype), per-GPU micro-batch [samples], tokens per
        sample, micro-batches per step, DDP's ``no_sync`` for the non-final ones.
    mfu, compute_time_s, recompute
        Compute per micro-batch (:func:`.compute.micro_batch_compute_s`) and recomputation.
    loss
        How the loss is computed, which sizes its logits in the memory (``fp32``: plain
        ``cross_entropy(logits.float())``, ``fused``, ``fp32-held``;
        :func:`costmodel.architecture.loss_logits_bytes`).
    model
        Collective model of every event (:func:`costmodel.predict.predict_collective`).
    timeline, band
        Build the intervals; compute the step's band from the collectives' error bands.
    timer
        A :class:`~.comm.CollectiveTimer` to reuse across steps of the same job.
    precision
        Compute precision of the matmuls: ``bf16``, or ``fp8`` where the GPU has fp8 tensor
        cores (refused in one line naming the GPU elsewhere). None (the default): the recipe's,
        ``fp8`` for ``fp8-mixed``, else ``bf16`` (:func:`compute_precision`). Under ``fp8``
        the matmuls run at the fp8 dense peak on every compute road: the fitted efficiency of
        fp8, and a given ``mfu`` is a fraction of the fp8 peak, as llm-foundry and torchtitan
        quote the MFU of their fp8 runs (:func:`.compute.step_compute`).
    held_out
        A data group (``"llm-foundry/h100-80gb"``): the fitted efficiency without it
        (:func:`costmodel.compute.compute_fit`; grouped-CV scoring of the fidelity report).
    sync_loss
        Synchronisation loss per doubling of the ranks [-] (default: the fitted one,
        :func:`costmodel.compute.sync_loss_per_doubling`; 0 switches it off).
    power_limit_w
        Board power limit of the cluster's GPUs [W], in [minimum, datasheet maximum] (H100 SXM
        200..700 W, :func:`costmodel.hardware.check_power_limit_w`; default: the
        preset's, i.e. its datasheet power: H100 SXM 700 W): the fitted compute efficiency
        follows the power per peak FLOP (:func:`costmodel.compute.gpu_power_w`); applied by
        :meth:`costmodel.hardware.Cluster.with_power_limit_w`, as ``Scenario`` and the CLI's
        ``--power-limit-w`` do. Not with ``compute_time_s``: it sets only the speed of the
        predicted compute, which a measured compute time replaces (refused, as every surface
        refuses it: :func:`.compute.speed_beside_measured`).
    cuda_context_bytes, fragmentation
        The memory's CUDA context per GPU [B] and allocator fragmentation allowance (a fraction
        in [0, 1) of everything the allocator holds), default 0 each: ``strategy_memory``'s
        (so ``costmodel memory --cuda-context/--fragmentation``'s), checked by
        :func:`.memory.check_overheads` before anything is priced. ``memory`` and ``fits`` are
        :func:`.memory.strategy_memory` of the step's layout with them.
    overlap
        Overlap the gradient collectives with backward (default True); False runs them after
        the whole backward (ddp's all-reduces, zero1/zero2's reduce-scatters, fsdp/hsdp's
        reduce-scatters and hsdp's all-reduces across groups; fsdp's gathers still prefetch
        through the backward). The memory follows it (:func:`.memory.strategy_memory`'s
        ``overlap``): zero1/zero2 overlap as DeepSpeed's ``overlap_comm`` does, which
        double-buffers its ipg buffer, so they hold two buffers with it and one without;
        fsdp/hsdp without it hold every unit's unsharded gradient until the backward ends.
    """
    from ..architecture import Architecture

    if isinstance(params, (str, Architecture)):  # a name or the model itself, as
        params, arch = _named_params(params, arch)  # training_memory("llama-2-7b") takes it
    if mfu is not None and compute_time_s is not None:  # ignored beside it: refused, as the
        from .compute import speed_beside_measured  # CLI and the step sweep refuse it

        raise ValueError(speed_beside_measured("mfu"))
    c, layout = _resolve(
        params,
        arch=arch,
        cluster=cluster,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        layout=layout,
        strategy=strategy,
        group_size=group_size,
        reshard_after_forward=reshard_after_forward,
        gradient_as_bucket_view=gradient_as_bucket_view,
        param_dtype=param_dtype,
        grad_dtype=grad_dtype,
        bucket_cap_bytes=bucket_cap_bytes,
        comm_contention=comm_contention,
        power_limit_w=power_limit_w,
        flags=(no_sync, flash_attention, timeline, band, overlap),
        compute_time_s=compute_time_s,
    )
    su = _setup(
        params,
        c,
        layout,
        arch=arch,
        recipe=recipe,
        micro_batch=micro_batch,
        sequence_length=sequence_length,
        accumulation=accumulation,
        no_sync=no_sync,
        mfu=mfu,
        compute_time_s=compute_time_s,
        recompute=recompute,
        flash_attention=flash_attention,
        loss=loss,
        model=model,
        timeline=timeline,
        band=band,
        first_bucket_bytes=first_bucket_bytes,
        tensor_params=tensor_params,
        overlap=overlap,
        precision=precision,
        held_out=held_out,
        sync_loss=sync_loss,
        cuda_context_bytes=cuda_context_bytes,
        fragmentation=fragmentation,
    )
    return _prepare_at(su, c, layout, timer)


_FLAGS = ("no_sync", "flash_attention", "timeline", "band", "overlap")


def _no_sync_note(strategy: str, accumulation: int, no_sync: bool) -> tuple[str, ...]:
    """:func:`.layout.no_sync_not_applied` as the step's notes (none or one)."""
    from .layout import no_sync_not_applied

    note = no_sync_not_applied(strategy, accumulation, no_sync)
    return (note,) if note else ()


def _named_params(text: Any, arch: Any) -> tuple[float | None, Any]:
    """``(params, arch)`` for a ``params`` given as text: an architecture name or config.json
    path is the architecture (``strategy_step("llama-3.1-70b")``, as ``training_memory`` and
    ``ddp_step`` read their first argument); with ``arch=`` as well, its parameter count, so
    two different models are refused as for a number (``"not both"``). A count written as
    text (``"7B"``) is refused naming ``params`` and the number it means
    (:func:`costmodel.architecture.arch_of_params_text`)."""
    from ..architecture import arch_of_params_text

    named = arch_of_params_text(text)
    return (None, text) if arch is None else (float(named.params), arch)


def named_params(params: float | str | None, kwargs: dict[str, Any]) -> float | None:
    """``params`` for a call that passes ``kwargs`` on to :func:`strategy_step` (the advisors):
    a name given as ``params`` moves to ``kwargs["arch"]`` (:func:`_named_params`), so what
    they decide by ``arch`` (recomputation, unit sizes) sees it."""
    from ..architecture import Architecture

    if not isinstance(params, (str, Architecture)):
        return params
    params, kwargs["arch"] = _named_params(params, kwargs.get("arch"))
    return params


def _resolve(
    params: float | None,
    *,
    arch: Any,
    cluster: Any,
    nodes: int,
    gpus_per_node: int | None,
    layout: Layout | None,
    strategy: str,
    group_size: int | None,
    reshard_after_forward: bool | None,
    gradient_as_bucket_view: bool | None,
    param_dtype: str,
    grad_dtype: str | None,
    bucket_cap_bytes: int | None,
    comm_contention: float | None,
    power_limit_w: float | None,
    flags: tuple[Any, ...] | None,
    compute_time_s: Any = None,
) -> tuple[Any, Layout]:
    """A step's cluster and layout (its node count's), after checking the flags and the model
    (:func:`_prepare_step`'s order of errors; ``flags=None``: checked already, with the same
    arguments, for another node count of a column)."""
    from .. import presets
    from .._checks import flag

    reshard_after_forward = flag("reshard_after_forward", reshard_after_forward, allow_none=True)
    gradient_as_bucket_view = flag(
        "gradient_as_bucket_view", gradient_as_bucket_view, allow_none=True
    )
    if flags is not None:
        from ..architecture import load_arch

        for name, v in zip(_FLAGS, flags, strict=True):
            flag(name, v)
        a = load_arch(arch) if arch is not None else None
        if a is None and params is None:
            raise ValueError("params: give a parameter count or `arch` (an architecture name)")
        if isinstance(params, bool | np.bool_):  # float(True) was 1 parameter
            raise ValueError(f"params: expected a number, got {params!r}")
        try:
            p = float(params) if params is not None else float(a.params)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            from ..units import text_hint

            raise ValueError(
                f"params: must be a finite count > 0, got {said(params)}"
                + text_hint("params", params)
            ) from None
        if a is not None and p != float(a.params):  # as training_memory, ddp_step, Scenario
            from ..architecture import params_differ

            raise ValueError(params_differ(params, a))
        if not (math.isfinite(p) and p > 0):
            raise ValueError(f"params: must be a finite count > 0, got {said(params)}")
        from .._limits import LIMITS

        LIMITS["params"].check("params", p)  # Scenario's and every command's 1..1e15
    check_cluster_argument(cluster)
    if layout is not None and not isinstance(layout, Layout):
        raise ValueError(f"layout: a Layout (cm.Layout(strategy=..., ...)) or None, got {layout!r}")
    c = (
        cluster
        if not isinstance(cluster, str)
        else presets.cluster(cluster, nodes=nodes, field="cluster")
    )
    if not isinstance(cluster, str) and c.nodes != nodes and nodes != 1:
        c = presets.cluster(c, nodes=nodes)
    if gpus_per_node is not None:
        from .._checks import whole_count

        # read first: an array's `!=` was numpy's "truth value ... is ambiguous"
        gpus_per_node = whole_count("gpus_per_node", gpus_per_node)
        if gpus_per_node != c.gpus_per_node:
            c = c.with_gpus_per_node(gpus_per_node)
    if power_limit_w is not None:
        if compute_time_s is not None:  # it would be silently ignored: every surface's rule
            from .compute import speed_beside_measured

            raise ValueError(speed_beside_measured())
        c = c.with_power_limit_w(power_limit_w)  # the same cluster when already capped so
    ranks = int(c.ranks)
    if layout is None:
        kw: dict[str, Any] = {
            "strategy": strategy,
            "ranks": ranks,
            "gpus_per_node": int(c.gpus_per_node),
            "group_size": group_size,
            "reshard_after_forward": reshard_after_forward,
            "gradient_as_bucket_view": gradient_as_bucket_view,
            "param_dtype": param_dtype,
            "grad_dtype": grad_dtype,
        }
        if bucket_cap_bytes is not None:  # None: the strategy's default bucket
            kw["bucket_cap_bytes"] = bucket_cap_bytes
        if comm_contention is not None:
            kw["comm_contention"] = comm_contention
        layout = make_layout(**kw)
    else:
        # a count the Layout was given is the count priced, never silently the cluster's; one
        # left to its default (one node) is the cluster's, as before
        given = layout.model_fields_set
        gpn = int(c.gpus_per_node)
        if "gpus_per_node" in given and layout.gpus_per_node != gpn:
            raise ValueError(
                f"layout: its {layout.gpus_per_node} GPUs per node (`gpus_per_node`) are not "
                f"the cluster's {gpn}; give `gpus_per_node` {layout.gpus_per_node} (a slice of "
                f"each node), or a Layout of {gpn} GPUs per node"
            )
        own_ranks = "ranks" in given and not (
            "gpus_per_node" in given and layout.ranks == default_ranks(layout.gpus_per_node)
        )  # Layout(gpus_per_node=4) is given one node of 4 ranks, not a count
        if own_ranks and layout.ranks != ranks:
            raise ValueError(
                f"layout: its {layout.ranks} ranks (`ranks`) are not the cluster's {ranks} GPUs "
                f"({format_counted(int(c.nodes), 'node')} x {gpn}); give `nodes` for "
                f"{layout.ranks} GPUs, or a Layout of {ranks} ranks"
            )
        if layout.ranks != ranks or layout.gpus_per_node != gpn:
            layout = layout.model_copy(update={"ranks": ranks, "gpus_per_node": gpn})
            layout = make_layout(**layout.model_dump())
    return c, layout


class _Setup(NamedTuple):
    """What a step reads that does not depend on its node count (:func:`_setup`): the model,
    the compute of one micro-batch, the options. Every node count of one cluster and layout
    (a table's column of one strategy) shares one (:func:`strategy_steps`)."""

    a: Any  # the architecture, or None for a bare count
    p: float  # parameters
    shape: Any  # the transformer the compute is fitted on (a, or a bare count's)
    recipe: str
    gradient_bytes: float  # the recipe's bytes per gradient element
    recipe_obj: Any  # costmodel.memory.Recipe
    precision: str  # the matmuls' compute precision (compute_precision: given, or the recipe's)
    tokens: float  # per micro-batch per GPU
    micro_batch: int
    sequence_length: int
    accumulation: int
    no_sync: bool
    flash_attention: bool
    recompute: str
    loss: str
    model: str
    timeline: bool
    band: bool
    first_bucket_bytes: float
    tensor_params: tuple[float, ...] | None
    overlap: bool
    sync_loss: float | None
    cuda_context_bytes: float  # the memory's CUDA context per GPU [B]
    fragmentation: float  # the memory's fragmentation allowance [-]
    ct: ComputeTime
    forward_s: float
    backward_s: float
    recompute_s: float
    notes: tuple[str, ...]


def _setup(
    params: float | None,
    c: Any,
    layout: Layout,
    *,
    arch: Any,
    recipe: str,
    micro_batch: int,
    sequence_length: int,
    accumulation: int,
    no_sync: bool,
    mfu: float | None,
    compute_time_s: float | None,
    recompute: str,
    flash_attention: bool,
    loss: str,
    model: str,
    timeline: bool,
    band: bool,
    first_bucket_bytes: float,
    tensor_params: Any,
    overlap: bool,
    precision: str | None,
    held_out: str | None,
    sync_loss: float | None,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
) -> _Setup:
    """The node-count-free part of a step on cluster ``c`` under ``layout``: checked inputs,
    the compute of one micro-batch (calibrated on one node of ``c``) and the tensor list. It
    reads of ``c`` only its GPU and one node, and of ``layout`` only its dtypes."""
    from .._checks import flag, whole_count
    from ..architecture import LOSS_MODES, load_arch
    from ..ddp import _number as _ddp_number
    from ..ddp import _sizes as _ddp_sizes
    from ..memory import get_recipe

    no_sync, flash_attention = flag("no_sync", no_sync), flag("flash_attention", flash_attention)
    timeline, band, overlap = (
        flag("timeline", timeline),
        flag("band", band),
        flag("overlap", overlap),
    )
    a = load_arch(arch) if arch is not None else None
    p = float(a.params) if a is not None else float(params)  # type: ignore[arg-type]
    # a numpy integer (an element of an array, a DataFrame cell) is a count too
    micro_batch = whole_count("micro_batch", micro_batch)
    sequence_length = whole_count("sequence_length", sequence_length)
    accumulation = whole_count("accumulation", accumulation)
    if sync_loss is not None and (
        isinstance(sync_loss, bool)
        or not isinstance(sync_loss, (int, float))
        or not (math.isfinite(sync_loss) and 0 <= sync_loss < 1)
    ):
        raise ValueError(f"sync_loss: must be a fraction in [0, 1) per doubling, got {sync_loss!r}")
    # the memory's overheads, checked before anything is priced (strategy_memory's check)
    cuda_context_bytes, fragmentation = check_overheads(cuda_context_bytes, fragmentation)
    # named here, as bucket_assignment names them (they raised float()'s and iteration's
    # TypeErrors from inside the schedule)
    first_bucket_bytes = _ddp_number(
        "first_bucket_bytes", first_bucket_bytes, positive=True, unit="B"
    )
    if tensor_params is not None:
        tensor_params = tuple(_ddp_sizes("tensor_params", tensor_params).tolist())
    if precision is not None:  # a bad name first, as before the other checks
        compute_precision(precision)
    if loss not in LOSS_MODES:
        raise ValueError(f"loss: unknown {loss!r}; allowed: {', '.join(LOSS_MODES)}")
    check_fp8_support(c.gpu, param_dtype=layout.param_dtype)
    precision = check_precision_support(c.gpu, precision, recipe)
    r = get_recipe(recipe)
    tokens = float(micro_batch) * sequence_length
    shape = a if a is not None else _shape_of(p)
    # the FLOPs of the road step_compute takes (a bare count's default MFU is of 6N, as `mfu`)
    fpt = model_flops_per_token(
        p,
        a,
        sequence_length,
        mfu=mfu,
        compute_time_s=compute_time_s,
        gpu=c.gpu,
        precision=precision,
        held_out=held_out,
    )[0]
    ct = _step_compute(
        shape,
        c.gpu,
        sequence_length,
        micro_batch,
        flops_per_token=fpt,
        peak_flops=measured_peak_flops(c.gpu, precision),  # an MFU is of this precision's peak
        mfu=mfu,
        compute_time_s=compute_time_s,
        recompute=recompute,
        precision=precision,
        held_out=held_out,
    )
    micro_s = ct.micro_s
    uncalibrated: tuple[str, ...] = ()
    if ct.one_node_step:
        # a mixture of experts: calibrated on its dense stand-in of the same active size (the
        # fitted efficiency is of dense models, whose one-node step gathers their own weights)
        cal = shape.dense_stand_in if a is not None else shape
        micro_s = _calibrated_micro_s(
            ct,
            float(cal.params) if a is not None else p,
            cal,
            c,
            recipe,
            micro_batch,
            sequence_length,
            model,
            sync_loss,
            precision,
        )
        peak = measured_peak_flops(c.gpu, precision)
        # in the FLOPs a given `mfu` is of (6N for a bare count, whose fitted compute is
        # priced at 6N + attention of its shape): else the MFU named did not give this
        # compute back (7B: "MFU 0.44" gave 395 ms for 464 ms)
        given = model_flops_per_token(p, a, sequence_length, mfu=DEFAULT_MFU)[0]
        # the GPU runs the recomputation too: micro_s holds it (ct.recompute_fraction of the
        # work), so its peak bound is of the FLOPs times 1 / (1 - that share); of the model's
        # FLOPs alone, a tiny model checkpointed was priced as fast as without (21.5 ns both)
        hardware = 1.0 / (1.0 - ct.recompute_fraction)
        if micro_s * peak < fpt * tokens * hardware:  # past the datasheet peak: no fixed point
            # the compute at the edge where the fixed point meets the peak (its least time)
            uncalibrated = (_UNCALIBRATED_NOTE,)
        floor = peak_floor_s(fpt, given, tokens, peak) * hardware
        if micro_s < floor:
            if given > fpt:  # a bare count's 6N above its shape's FLOPs: "MFU 1.50 of 6N"
                uncalibrated = (*uncalibrated, _SIX_N_PEAK_NOTE)
            micro_s = floor
        ct = _calibrated_label(ct, given * tokens / (micro_s * peak), a is None)
    _refuse_faster_than_peak(ct, compute_time_s, fpt * tokens, c.gpu, precision, recompute)
    extra = ct.recompute_fraction
    if tensor_params is None and a is not None:
        tensor_params = _arch_tensors(a)
    elif tensor_params is None and shape is not None:  # a bare count: its transformer's tensors
        scale = p / float(shape.params)
        tensor_params = tuple(float(x) * scale for x in shape.tensor_sizes)
    return _Setup(
        a=a,
        p=p,
        shape=shape,
        recipe=recipe,
        gradient_bytes=r.gradient_bytes,
        recipe_obj=r,
        precision=precision,
        tokens=tokens,
        micro_batch=micro_batch,
        sequence_length=sequence_length,
        accumulation=int(accumulation),
        no_sync=no_sync,
        flash_attention=flash_attention,
        recompute=recompute,
        loss=loss,
        model=model,
        timeline=timeline,
        band=band,
        first_bucket_bytes=first_bucket_bytes,
        tensor_params=tuple(tensor_params) if tensor_params is not None else None,
        overlap=overlap,
        sync_loss=sync_loss,
        cuda_context_bytes=cuda_context_bytes,
        fragmentation=fragmentation,
        ct=ct,
        forward_s=micro_s * (1.0 - extra) * FORWARD_FRACTION,
        backward_s=micro_s * (1.0 - extra) * (1.0 - FORWARD_FRACTION),
        recompute_s=micro_s * extra,
        notes=left_out_notes(a, p, sequence_length) + uncalibrated,
    )


def _prepare_at(
    su: _Setup,
    c: Any,
    layout: Layout,
    timer: CollectiveTimer | None,
    final: TaskList | None = None,
    final_wire: dict[str, float] | None = None,
) -> _Prepared:
    """A step of setup ``su`` on cluster ``c`` (its node count) under ``layout``, prepared up
    to its schedule. ``final`` (optional): its final micro-batch's task list, made already
    (:func:`_retimed`), instead of by the strategy module, and its wire bytes ``final_wire``
    (:func:`_wire_bytes_many`)."""
    a, p, r = su.a, su.p, su.recipe_obj
    ranks = int(c.ranks)
    if timer is None or timer.cluster is not c:
        timer = CollectiveTimer(c, model=su.model, group_size=layout.shard_group)
    if final is None:  # a list made already: checked with its column's first step
        _check_work(p, layout, r.gradient_bytes, a is not None or su.tensor_params is not None)
    s = layout.strategy
    per_micro_comm = s in ("zero2", "fsdp", "hsdp") or not su.no_sync
    acc = su.accumulation
    c_ = layout.comm_contention
    opt_s = _optimizer_s(p, layout, r, c.gpu)
    inp = None
    if final is None or acc > 1:
        inp = StepInputs(
            layout=layout,
            units=wrap_units(p, a),
            tensor_params=su.tensor_params,
            forward_s=su.forward_s,
            backward_s=su.backward_s,
            recompute_s=su.recompute_s,
            grad_bytes=layout.grad_bytes(r.gradient_bytes),
            param_bytes=layout.param_bytes,
            timer=timer,
            first_bucket_bytes=su.first_bucket_bytes,
            overlap=su.overlap,
            band=su.band,
        )
    final_tasks: Sequence[Task] = final if final is not None else ()
    if inp is not None and final is None:
        final_tasks = _with_optimizer(_micro_tasks(inp, True, True, acc - 1), opt_s, acc - 1)
    mid_tasks: Sequence[Task] = ()
    if inp is not None and acc > 1:
        mid = _micro_tasks(inp, per_micro_comm, False, 0)
        mid_tasks = mid if isinstance(mid, TaskList) else tuple(mid)
    # DDP's host-side time per synced micro-batch (hooks and bucket copies, per tensor):
    # fitted on PyTorch's DDP benchmark (costmodel.compute.ddp_step_overhead_s); none on one
    # rank, which is plain training, no DDP wrapper (as its memory: no bucket copy)
    overhead = _ddp_overhead_s(s, su.tensor_params, ranks)
    mid_overhead = overhead if per_micro_comm else 0.0
    band_f: tuple[list[float], list[float]] | None = None
    band_m: tuple[list[float], list[float]] | None = None
    if su.band:  # each collective at the fast and at the slow end of its band, same schedules
        band_f = _band_works(final_tasks, timer)
        band_m = _band_works(mid_tasks, timer) if mid_tasks else None
        if band_m is None and mid_tasks:
            band_f = None
    sync_loss, timeline = su.sync_loss, su.timeline

    def finish(steps: Accumulated) -> StrategyStep:
        """The step from its schedules (the inputs prepared above)."""
        # forward, backward and recomputation; the optimizer step is its own figure (optimizer_s)
        compute_s = steps.compute_s - opt_s
        sync_s = _sync_loss_s(compute_s, ranks, sync_loss) if s in SYNC_LOSS_STRATEGIES else 0.0
        step_s = steps.step_s + sync_s
        by_kind = steps.comm_by_kind_s
        wire = _wire_bytes(final_tasks) if final_wire is None else dict(final_wire)
        if mid_tasks:
            for k, nb in _wire_bytes(mid_tasks).items():
                wire[k] = wire.get(k, 0.0) + (acc - 1) * nb
        comm_s = steps.comm_s
        # DDP's host time (hooks, bucket copies) is neither compute nor communication: its own
        # figure, so the exposed communication is never more than the communication
        host_s = steps.host_s
        exposed = exposed_time_s(step_s, compute_s + opt_s + sync_s + host_s)
        lo: float = math.nan
        hi: float = math.nan
        if steps.band_step_s is not None:
            lo, hi = (x + sync_s for x in steps.band_step_s)
        bars: list[Interval] = []
        if timeline:
            for t0, sched, i in steps.placements(MAX_TIMELINE_BARS):
                h = steps.overhead_s if i == acc - 1 else steps.mid_overhead_s
                if h > 0:  # DDP's host time after the micro-batch's schedule, on compute's row
                    bars.append(
                        Interval(
                            "host",
                            "compute",
                            t0 + sched.step_s,
                            t0 + sched.step_s + h,
                            "DDP host overhead (hooks, bucket copies)",
                            micro_batch=i,
                        )
                    )
                for t, a0, e0 in zip(
                    sched.tasks, sched.starts_s.tolist(), sched.ends_s.tolist(), strict=True
                ):
                    if e0 > a0:
                        bars.append(
                            Interval(
                                t.kind,
                                t.stream,
                                t0 + a0,
                                t0 + e0,
                                t.label,
                                t.message_bytes,
                                t.span_ranks,
                                t.span,
                                i,
                            )
                        )
            if sync_s > 0:  # the ranks wait for the slowest one at the end of the step
                bars.append(
                    Interval(
                        "sync",
                        "compute",
                        step_s - sync_s,
                        step_s,
                        "waiting for the slowest rank",
                        micro_batch=acc - 1,
                    )
                )
        mem = strategy_memory(
            layout,
            None if a is not None else p,
            arch=a,
            recipe=su.recipe,
            sequence_length=su.sequence_length,
            micro_batch=su.micro_batch,
            flash_attention=su.flash_attention,
            recompute=su.recompute,
            loss=su.loss,
            cuda_context_bytes=su.cuda_context_bytes,
            fragmentation=su.fragmentation,
            overlap=su.overlap,  # zero1/zero2: DeepSpeed's second ipg buffer with overlap_comm
        )
        tokens_step = su.tokens * ranks * acc
        ct = su.ct
        # the same micro-batches on one GPU: the optimizer over every parameter, no DDP
        # wrapper (plain training: no host overhead), no collective, no waiting for other
        # ranks (one_gpu_step_s); a step of one rank is that step itself (taken as it is, so
        # that its efficiency is 1 without a rounding residue)
        t1 = (
            step_s
            if ranks == 1
            else one_gpu_step_s(compute_s, _optimizer_s(p, layout, r, c.gpu, shards=1))
        )
        band_s = step_time_band(step_s, (lo, hi), ct.source, ct.band, ranks > int(c.gpus_per_node))
        reach = (
            _collective_reach((final_tasks, mid_tasks), timer)
            if all(math.isfinite(x) for x in band_s)
            else ()
        )
        far, beyond = band_extrapolation(int(c.nodes), ranks, band_s, reach)
        return StrategyStep(
            layout=layout,
            ranks=ranks,
            accumulation=acc,
            compute_s=compute_s,
            comm_s=comm_s,
            exposed_comm_s=exposed,
            step_time_s=step_s,
            step_time_band_s=band_s,
            bound=verdict(compute_s, comm_s, exposed, step_s),
            efficiency=scaling_efficiency(t1, step_s),
            tokens_per_step=tokens_step,
            tokens_per_s=tokens_step / step_s,
            comm_by_kind_s=by_kind,
            wire_bytes_by_kind=wire,
            events=_comm_count(final_tasks) + (acc - 1) * _comm_count(mid_tasks),
            memory=mem,
            gpu_memory_bytes=float(c.gpu.memory_bytes),
            comm_contention=c_,
            timeline=tuple(bars),
            compute_source=ct.source,
            compute_label=ct.label,
            precision=su.precision,
            compute_band=ct.band,
            # a fit with little to spare says what its total leaves out (memory.fit_notes)
            notes=fit_notes(
                su.notes
                + _unsized_activations(a, mem, su.shape)
                + ((layout.bucket_note,) if layout.bucket_note else ())
                + ((layout.param_dtype_note,) if layout.param_dtype_note else ())
                + _no_sync_note(s, acc, su.no_sync),
                mem.total_bytes,
                float(c.gpu.memory_bytes),
                su.cuda_context_bytes,
                su.fragmentation,
            ),
            optimizer_s=opt_s,
            sync_s=sync_s,
            collective_band_s=(lo, hi),
            host_overhead_s=host_s,
            one_gpu_step_s=t1,
            band_extrapolation=far,
            band_extrapolated_beyond=beyond,
            band_collectives=reach if far else (),
            comm_calls=_comm_calls(final_tasks, mid_tasks, acc),
        )

    return _Prepared(
        final_tasks, mid_tasks, acc, c_, overhead, mid_overhead, band_f, band_m, finish
    )


class _Prepared(NamedTuple):
    """A step prepared up to its schedule (:func:`_prepare_step`): what :func:`accumulate`
    schedules, and the function that makes the step from the schedules."""

    final_tasks: Sequence[Task]
    mid_tasks: Sequence[Task]
    accumulation: int
    contention: float
    overhead_s: float
    mid_overhead_s: float
    final_band: tuple[list[float], list[float]] | None
    mid_band: tuple[list[float], list[float]] | None
    make: Callable[[Accumulated], StrategyStep]
    schedule: Schedule | None = None  # the final list's, made with its column's (run_many)

    def finish(self, final: Schedule | None = None) -> StrategyStep:
        """The step: its micro-batches scheduled (``final``: the final one's schedule, made
        already by :func:`~.engine.run_many`) and accumulated."""
        return self.make(
            accumulate(
                self.final_tasks,
                self.mid_tasks,
                self.accumulation,
                self.contention,
                overhead_s=self.overhead_s,
                mid_overhead_s=self.mid_overhead_s,
                final_band_work_s=self.final_band,
                mid_band_work_s=self.mid_band,
                final_schedule=final if final is not None else self.schedule,
            )
        )

    def plan_key(self) -> tuple[Plan, bool] | None:
        """(plan, band) of a step whose schedule is its final list's at ``c = 0`` (one
        micro-batch) and not made yet: steps with the same key are scheduled together; None
        otherwise."""
        t = self.final_tasks
        if self.accumulation != 1 or self.contention != 0.0 or not isinstance(t, TaskList):
            return None
        if self.schedule is not None:
            return None
        return (t.plan, self.final_band is not None) if len(t) else None


_P = ParamSpec("_P")

#: The step's keywords, and what a caller may have meant by another name: Scenario and the
#: CLI's ``--local-batch`` call the micro-batch ``local_batch``, ``--seq`` is sequence_length.
_STEP_KEYWORDS = frozenset(inspect.signature(_prepare_step).parameters) - {"params"}


def step_default(keyword: str) -> Any:
    """The default of one of :func:`strategy_step`'s keywords (``"sequence_length"`` -> 4096):
    what a surface takes for an input it was not given, read from the step itself.

    >>> step_default("sequence_length"), step_default("recipe")
    (4096, 'mixed-adam')
    """
    return inspect.signature(_prepare_step).parameters[keyword].default


_OTHER_NAMES = {
    "local_batch": ("micro_batch", "Scenario's local_batch is the step's micro_batch"),
    "seq": ("sequence_length", "the CLI's --seq"),
    "zero_stage": ("strategy", "ZeRO stage 0 ddp, 1 zero1, 2 zero2, 3 fsdp"),
}


def check_step_keywords(kwargs: dict[str, Any], where: str = "strategy_step") -> None:
    """TypeError naming ``where`` and the keyword it takes for one it does not (Python's own
    said ``_prepare_step() got an unexpected keyword argument 'local_batch'``: a private name,
    and no word on ``micro_batch``, the step's name for Scenario's ``local_batch``).

    >>> check_step_keywords({"local_batch": 1})
    Traceback (most recent call last):
    ...
    TypeError: strategy_step: unknown argument 'local_batch'; did you mean 'micro_batch'? (Scenario's local_batch is the step's micro_batch)
    """
    import difflib

    for k in kwargs:
        if k in _STEP_KEYWORDS:
            continue
        hint = (
            _OTHER_NAMES[k][0]
            if k in _OTHER_NAMES
            else next(iter(difflib.get_close_matches(k, sorted(_STEP_KEYWORDS), 1)), None)
        )
        raise TypeError(
            f"{where}: unknown argument {k!r}"
            + (
                f"; did you mean {hint!r}?"
                if hint
                else f"; allowed: {', '.join(sorted(_STEP_KEYWORDS))}"
            )
            + (f" ({_OTHER_NAMES[k][1]})" if k in _OTHER_NAMES else "")
        )


#: The step's keywords a :class:`~.layout.Layout` holds (its fields of the same names).
LAYOUT_OPTIONS = (
    "strategy",
    "group_size",
    "reshard_after_forward",
    "gradient_as_bucket_view",
    "param_dtype",
    "grad_dtype",
    "bucket_cap_bytes",
    "comm_contention",
)


def check_layout_options(kwargs: dict[str, Any]) -> None:
    """ValueError naming the option when ``kwargs`` give a ``layout`` and, beside it, one of
    :data:`LAYOUT_OPTIONS` that is not the layout's: the layout wins, so
    ``strategy_step(p, layout=Layout(strategy="fsdp"), param_dtype="fp8")`` priced bf16
    gathers without a word. The same value (``Scenario`` passes both), or None, is no conflict.

    >>> from .layout import Layout
    >>> check_layout_options({"layout": Layout(strategy="fsdp"), "strategy": "fsdp"})
    >>> check_layout_options({"layout": Layout(strategy="fsdp"), "param_dtype": "fp8"})
    Traceback (most recent call last):
    ...
    ValueError: param_dtype: 'fp8' contradicts the layout's 'bf16'; give it in the Layout (cm.Layout(..., param_dtype='fp8')) or leave it out
    """
    layout = kwargs.get("layout")
    if not isinstance(layout, Layout):  # None, or refused by the step naming `layout`
        return
    # what the layout runs, where a field's None means a default: hsdp's group one node,
    # fsdp/hsdp resharding
    runs = {
        "group_size": layout.shard_group if layout.strategy == "hsdp" else None,
        "reshard_after_forward": layout.reshards if layout.strategy in ("fsdp", "hsdp") else None,
        "gradient_as_bucket_view": layout.bucket_view if layout.strategy == "ddp" else None,
    }
    for k in LAYOUT_OPTIONS:
        v = kwargs.get(k)
        if v is None or v == getattr(layout, k) or (k in runs and v == runs[k]):
            continue
        raise ValueError(
            f"{k}: {v!r} contradicts the layout's {getattr(layout, k)!r}; give it in the "
            f"Layout (cm.Layout(..., {k}={v!r})) or leave it out"
        )


def _one_step(prepare: Callable[_P, _Prepared]) -> Callable[_P, StrategyStep]:
    """The public step of a preparation: prepared, scheduled and accumulated at once."""

    def strategy_step(*args: _P.args, **kwargs: _P.kwargs) -> StrategyStep:
        # params is the step's own first argument (the advisor's callers pass it apart)
        if len(args) > 1:  # Python's own said "_prepare_step() takes from 0 to 1 positional"
            raise TypeError(
                f"strategy_step: takes one positional argument (`params`, or an architecture "
                f"name), got {len(args)}; give the others by keyword (cluster=..., nodes=...)"
            )
        named = choice_names(kwargs)  # precision="FP8" is fp8, as Scenario and the CLI read it
        check_step_keywords({k: v for k, v in named.items() if k != "params"})
        check_layout_options(named)
        timer = named.get("timer")
        if timer is not None and not isinstance(timer, CollectiveTimer):  # read `.cluster` of it
            raise ValueError(
                f"timer: a CollectiveTimer (costmodel.strategy.comm) to reuse, or None, got "
                f"{timer!r}"
            )
        return prepare(*args, **named).finish()

    strategy_step.__doc__ = prepare.__doc__
    strategy_step.__signature__ = inspect.signature(prepare).replace(  # type: ignore[attr-defined]
        return_annotation=StrategyStep
    )
    strategy_step.__module__ = prepare.__module__
    strategy_step.__qualname__ = "strategy_step"
    return strategy_step


strategy_step = _one_step(_prepare_step)


def strategy_steps(calls: Sequence[dict[str, Any]]) -> list[StrategyStep]:
    """One :func:`strategy_step` per keyword set of ``calls``, the same numbers.

    Calls that differ only in their node count (``nodes``, ``cluster``, ``layout``'s ranks,
    ``timer``: a table's column of one strategy) share their setup (:func:`_setup`: checks,
    compute, tensors) and the first one's task list, which the others take with their own
    collective times (:func:`_retimed`); the steps of one task structure are then scheduled
    together (:func:`~.engine.run_many`, one numpy row per task for all of them and their
    band ends)."""
    prepared: list[_Prepared | None] = [None] * len(calls)
    columns_: dict[tuple[Any, ...], list[int]] = {}
    for i, kw in enumerate(calls):
        key = _column_key(kw)
        if key is None:
            prepared[i] = _prepare_step(**kw)
        else:
            columns_.setdefault(key, []).append(i)
    for idx in columns_.values():
        for i, prep in zip(idx, _prepare_column([calls[i] for i in idx]), strict=True):
            prepared[i] = prep
    done = [p for p in prepared if p is not None]
    groups: dict[tuple[int, bool], list[int]] = {}
    for i, prep in enumerate(done):
        key = prep.plan_key()
        if key is not None:
            groups.setdefault((id(key[0]), key[1]), []).append(i)
    finals: dict[int, Schedule] = {}
    for idx in groups.values():
        lists = [t for i in idx if isinstance(t := done[i].final_tasks, TaskList)]
        if len(idx) < 2 or len(lists) != len(idx):
            continue
        scheds = run_many(lists, [done[i].final_band for i in idx])
        finals.update(zip(idx, scheds, strict=True))
    return [prep.finish(finals.get(i)) for i, prep in enumerate(done)]


_PER_NODE_COUNT = ("nodes", "cluster", "layout", "timer")
_PLAIN = (str, int, float, bool, type(None))


def _column_key(kw: dict[str, Any]) -> tuple[Any, ...] | None:
    """What calls of one column share: every keyword but the node count's, by value (plain
    values) or identity (objects, alive in ``calls``), and the layout but its ranks; None for a
    call without a layout object (its own road)."""
    lay = kw.get("layout")
    if not isinstance(lay, Layout):
        return None
    rest = tuple(  # in the keywords' order: the advisor's calls name them alike
        (k, type(v), v if isinstance(v, _PLAIN) else id(v))
        for k, v in kw.items()
        if k not in _PER_NODE_COUNT
    )
    fields = tuple((k, v) for k, v in lay.__dict__.items() if k != "ranks")
    # an hsdp group's size follows the ranks when not given: its messages too (rs / g)
    return (rest, fields, lay.shard_group if lay.strategy == "hsdp" else 0)


_SETUP_ARGS = tuple(
    k
    for k in inspect.signature(_prepare_step).parameters
    if k not in ("cluster", "nodes", "gpus_per_node", "layout", "timer", "power_limit_w")
    and k not in ("strategy", "group_size", "reshard_after_forward", "param_dtype")
    and k != "gradient_as_bucket_view"
    and k not in ("grad_dtype", "bucket_cap_bytes", "comm_contention", "params")
)


def _prepare_column(calls: list[dict[str, Any]]) -> list[_Prepared]:
    """:func:`_prepare_step` of calls that differ only in their node count (:func:`_column_key`):
    one :func:`_setup` for those on the same GPU and one node of the same cluster; the first
    one's final task list, made by its strategy module, retimed for all of them at once
    (:func:`_retimed`) and, at ``c = 0`` with one micro-batch, scheduled at once
    (:func:`~.engine.run_many` of the retimed lists' array)."""
    args = _arguments(calls[0])
    flags: tuple[Any, ...] | None = tuple(args[k] for k in _FLAGS)
    members: list[tuple[Any, Layout, Any]] = []
    for kw in calls:
        a = {**args, **{k: kw[k] for k in _PER_NODE_COUNT if k in kw}}
        if members:  # the flags and the model are the first call's: checked there
            flags = None
        c, layout = _resolve(
            a["params"],
            arch=a["arch"],
            cluster=a["cluster"],
            nodes=a["nodes"],
            gpus_per_node=a["gpus_per_node"],
            layout=a["layout"],
            strategy=a["strategy"],
            group_size=a["group_size"],
            reshard_after_forward=a["reshard_after_forward"],
            gradient_as_bucket_view=a["gradient_as_bucket_view"],
            param_dtype=a["param_dtype"],
            grad_dtype=a["grad_dtype"],
            bucket_cap_bytes=a["bucket_cap_bytes"],
            comm_contention=a["comm_contention"],
            power_limit_w=a["power_limit_w"],
            flags=flags,
            compute_time_s=a["compute_time_s"],
        )
        members.append((c, layout, a["timer"]))
    setup_args = {k: args[k] for k in _SETUP_ARGS}
    c0, lay0, timer0 = members[0]
    su = _setup(args["params"], c0, lay0, **setup_args)
    out: list[_Prepared | None] = [None] * len(members)
    out[0] = first = _prepare_at(su, c0, lay0, timer0)
    t = first.final_tasks
    template = t if isinstance(t, TaskList) and "optimizer" in t.plan.kind else None
    same: list[int] = []
    for j, (c, layout, timer) in enumerate(members[1:], 1):
        if template is not None and _same_setup(c0, c):
            same.append(j)
        else:
            own = _setup(args["params"], c, layout, **setup_args)
            out[j] = _prepare_at(own, c, layout, timer)
    if not same or template is None:
        return [p for p in out if p is not None]
    same.insert(0, 0)
    timers = []
    for j in same:
        c, layout, timer = members[j]
        if timer is None or timer.cluster is not c:
            timer = CollectiveTimer(c, model=su.model, group_size=layout.shard_group)
        timers.append(timer)
    opt = [_optimizer_s(su.p, members[j][1], su.recipe_obj, members[j][0].gpu) for j in same]
    finals, wires, work = _retimed(template, timers, opt, su.band)
    preps = [
        _prepare_at(su, members[j][0], members[j][1], timer, final, wire)
        for j, timer, final, wire in zip(same, timers, finals, wires, strict=True)
    ]
    bands = [p.final_band for p in preps]
    if preps[0].plan_key() is not None and len({b is None for b in bands}) == 1:
        width = 3 * len(preps) if bands[0] is not None else len(preps)
        scheds = run_many(finals, bands, work[:, :width])
        preps = [p._replace(schedule=s) for p, s in zip(preps, scheds, strict=True)]
    for j, prep in zip(same, preps, strict=True):
        out[j] = prep
    return [p for p in out if p is not None]


_DEFAULTS = {k: v.default for k, v in inspect.signature(_prepare_step).parameters.items()}


def _arguments(kw: dict[str, Any]) -> dict[str, Any]:
    """Every argument of :func:`_prepare_step` for the keywords ``kw`` (its defaults for the
    rest); a keyword it does not take is refused by the call itself."""
    if not kw.keys() <= _DEFAULTS.keys():
        _prepare_step(**kw)  # raises TypeError naming it
    return {**_DEFAULTS, **kw}


def _same_setup(c0: Any, c: Any) -> bool:
    """Whether a step on cluster ``c`` has the setup of one on ``c0`` (:func:`_setup` reads the
    GPU and one node of the cluster)."""
    return (c.gpu is c0.gpu or c.gpu == c0.gpu) and _one_node(c)[1] == _one_node(c0)[1]


def _retimed(
    template: TaskList, timers: list[CollectiveTimer], opt_s: list[float], band: bool
) -> tuple[list[TaskList], list[dict[str, float]], np.ndarray]:
    """The final micro-batch's list ``template`` of another node count (the same setup and
    layout but the ranks: the same structure, compute and messages) on each timer's cluster:
    each collective's work is its kind's time over its span for its message, as every strategy
    module gives it (:meth:`~.comm.CollectiveTimer.time_band`, one look-up per kind, span and
    cluster), its ranks the span's, and the optimizer step's work that cluster's ``opt_s``.
    The lists are made as the columns of one array (tasks x lists, then the lists at the
    band's fast and slow ends), returned with them and their wire bytes
    (:func:`_wire_bytes_many`)."""
    p = template.plan
    m = len(timers)
    width = 3 * m if band else m
    work = np.repeat(np.array(template.work, dtype=float)[:, None], width, axis=1)
    nbytes = np.array(template.message_bytes, dtype=float)
    ranks = np.repeat(np.array(template.span_ranks, dtype=np.int64)[:, None], m, axis=1)
    known = [band] * m
    for kind, span, ix in _span_groups(template):
        sizes = nbytes[ix]
        for j, timer in enumerate(timers):
            ranks[ix, j] = timer.ranks(span)
            if not band:
                work[ix, j] = timer.time(kind, span, sizes)
                continue
            t, ends = timer.time_band(kind, span, sizes, keep=False)
            work[ix, j] = t
            if ends is None:
                known[j] = False
            else:
                work[ix, m + j], work[ix, 2 * m + j] = ends
    i = p.kind.index("optimizer")  # compute: the same work at both ends of the band
    work[i] = np.tile(np.array(opt_s, dtype=float), width // m)
    cols = work.T.tolist()
    spans = ranks.T.tolist()
    lists = [
        TaskList(
            p,
            cols[j],
            template.message_bytes,
            spans[j],
            template.micro_batch,
            (cols[m + j], cols[2 * m + j]) if known[j] else None,
            band,
        )
        for j in range(m)
    ]
    return lists, _wire_bytes_many(p, nbytes, ranks), work


def _wire_bytes_many(p: Plan, nbytes: np.ndarray, ranks: np.ndarray) -> list[dict[str, float]]:
    """:func:`_wire_bytes` of the lists of plan ``p`` with messages ``nbytes`` (one per task)
    and the span ranks in each column of ``ranks`` (tasks x lists), the same operations on
    every column at once: each ring factor (``2.0 * (n - 1) / n``, ``(n - 1) / n``) times the
    message, summed in task order from 0.0."""
    m = ranks.shape[1]
    found: list[list[tuple[int, str, float]]] = [[] for _ in range(m)]
    for kind, idx in p.by_kind.items():
        r = ranks[idx]
        busy: np.ndarray = r >= 2
        rf = r.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = 2.0 * (rf - 1) / rf if kind == "all_reduce" else (rf - 1) / rf
        f = np.where(busy, f, 0.0)
        terms = np.concatenate((np.zeros((1, m)), f * nbytes[idx][:, None]))
        sums = np.cumsum(terms, axis=0)[-1].tolist()
        any_busy: list[bool] = np.asarray(busy.any(axis=0), dtype=bool).tolist()
        first = busy.argmax(axis=0).tolist()
        for j in range(m):
            if any_busy[j]:
                found[j].append((idx[first[j]], kind, sums[j]))
    return [{kind: acc for _, kind, acc in sorted(f)} for f in found]


def optimizer_time_s(params: float, layout: Layout, recipe: Any, gpu: Any) -> float:
    """The optimizer step of one rank's parameters [s] (module docstring).

    ``recipe`` a :class:`~costmodel.memory.Recipe` or its name, ``gpu`` a GPU with its
    ``memory_bandwidth_bytes_per_s``.
    """
    from ..memory import get_recipe

    r = get_recipe(recipe) if isinstance(recipe, str) else recipe
    return _optimizer_s(float(params), layout, r, gpu)


def step_tail_s(params: float, layout: Layout, recipe: Any, gpu: Any, compute_s: float) -> float:
    """What the engine adds after a step's last gradient collective [s]: the optimizer step
    (:func:`optimizer_time_s`) and the synchronisation loss of ``compute_s`` over the layout's
    ranks (:func:`costmodel.compute.sync_loss_s`). For any road that times a step of this
    layout outside the engine (``Scenario``'s DDP what-ifs), so that it gives the same number.
    """
    from ..compute import sync_loss_s

    sync = 0.0
    if layout.strategy in SYNC_LOSS_STRATEGIES:
        sync = float(sync_loss_s(compute_s, layout.ranks))
    return optimizer_time_s(params, layout, recipe, gpu) + sync


def _optimizer_s(
    p: float, layout: Layout, recipe: Any, gpu: Any, shards: int | None = None
) -> float:
    """The optimizer step of a rank of ``layout`` [s]; ``shards=1``: of one GPU, unsharded."""
    if shards is None:  # ddp: every rank, all of it
        shards = layout.shard_group if layout.zero_stage >= 1 else 1
    return _optimizer_step_s(
        p / shards,
        recipe.weight_bytes,
        recipe.master_bytes,
        recipe.optimizer_bytes,
        # the optimizer reads the gradient in the master weights' dtype when there is one
        # (AMP's fp32 parameters, FSDP's fp32 shard, DeepSpeed's fp32 gradient partition)
        recipe.master_bytes or recipe.gradient_bytes,
        float(gpu.memory_bandwidth_bytes_per_s),
    )


@functools.lru_cache(maxsize=1024)
def _optimizer_step_s(
    local_params: float, weight_b: Any, master_b: Any, state_b: Any, grad_b: Any, bw: float
) -> float:
    """:func:`costmodel.compute.optimizer_step_s` of the recipe's bytes per parameter, kept
    per setting (every node count of an advisor table asks for the same few)."""
    from ..compute import optimizer_bytes_per_param, optimizer_step_s

    b = optimizer_bytes_per_param(weight_b, master_b, state_b, grad_b)
    return float(optimizer_step_s(local_params, b, bw))


@functools.lru_cache(maxsize=1024)
def _sync_loss_s(compute_s: float, ranks: int, per_doubling: float | None) -> float:
    """:func:`costmodel.compute.sync_loss_s` of one step, kept per (compute, ranks, k)."""
    from ..compute import sync_loss_s

    return float(sync_loss_s(compute_s, ranks, per_doubling))


def _with_optimizer(tasks: Sequence[Task], opt_s: float, mb: int) -> Sequence[Task]:
    """The final micro-batch's tasks with the optimizer step timed: a strategy's own
    ``optimizer`` task (zero1/zero2: the parameter all-gathers wait for it) gets the time;
    otherwise one is appended after the last gradient collective."""
    from .engine import COMPUTE

    if isinstance(tasks, TaskList) and tasks.micro_batch == mb:
        p = tasks.plan
        if "optimizer" in p.kind:
            return tasks.with_work(p.kind.index("optimizer"), opt_s)
        hit = _OPT_PLANS.get(id(p))
        if hit is None or hit[0] is not p:
            comm = [
                i
                for i, st in enumerate(p.stream_name)
                if st != COMPUTE and p.kind[i] != "all_gather"
            ]
            p2 = plan(
                (*p.kind, "optimizer"),
                (*p.stream_name, COMPUTE),
                [*p.after, (comm[-1],) if comm else ()],
                (*p.label, "optimizer step"),
                [*p.span, ""],
            )
            if len(_OPT_PLANS) >= 64:
                _OPT_PLANS.clear()
            hit = _OPT_PLANS[id(p)] = (p, p2)
        band = tasks.band_work
        if band is not None:  # the optimizer is compute: the same work at both ends
            band = ([*band[0], opt_s], [*band[1], opt_s])
        return TaskList(
            hit[1],
            [*tasks.work, opt_s],
            [*tasks.message_bytes, 0.0],
            [*tasks.span_ranks, 0],
            mb,
            band,
            tasks.has_band,
        )
    out = list(tasks)
    for i, t in enumerate(out):
        if t.kind == "optimizer":
            out[i] = t._replace(work_s=opt_s)
            return tuple(out)
    comm = [i for i, t in enumerate(out) if t.is_comm and t.kind != "all_gather"]
    dep = (comm[-1],) if comm else ()
    out.append(Task("optimizer", COMPUTE, opt_s, dep, "optimizer step", micro_batch=mb))
    return tuple(out)


_OPT_PLANS: dict[int, tuple[Plan, Plan]] = {}


def _comm_count(tasks: Sequence[Task]) -> int:
    """How many collectives a task list holds (every task not on the compute stream)."""
    return len(tasks) - len(columns(tasks).compute)


_TENSORS: dict[int, tuple[Any, tuple[float, ...]]] = {}


def _arch_tensors(a: Any) -> tuple[float, ...]:
    """An architecture's tensor sizes as floats, kept per architecture object (every
    configuration of an advisor table asks for the same thousands)."""
    hit = _TENSORS.get(id(a))
    if hit is None or hit[0] is not a:
        if len(_TENSORS) >= 64:
            _TENSORS.clear()
        hit = (a, tuple(float(x) for x in a.tensor_sizes))
        _TENSORS[id(a)] = hit
    return hit[1]


def _ddp_overhead_s(strategy: str, tensor_params: Any, ranks: int = 2) -> float:
    """DDP's per-step host overhead of a tensor list [s] (0 for other strategies, without
    a tensor list, or on one rank).

    One rank under ``ddp`` is plain training, no DDP wrapper: no hooks, no bucket copy (its
    memory holds none either, :func:`.memory.strategy_memory`), so on one GPU every strategy
    takes the same step. PyTorch's DDP benchmark, on which the overhead is fitted
    (``scripts/fit_ddp_overhead.py``), measures a DDP-wrapped model from one GPU up; that
    fit and ``validate compare``'s DDP steps price a wrapped model
    (:func:`costmodel.ddp.ddp_step`'s ``step_overhead_s``, given by their callers), not
    this step.

    The same with ``gradient_as_bucket_view`` (:attr:`~.layout.Layout.bucket_view`): the step
    prices no bucket copy of its own. PyTorch's docs say the view also "avoids the overhead of
    copying between gradients and ``allreduce`` communication buckets"; that copy's time is
    inside this fitted per-tensor time (:func:`costmodel.compute.ddp_step_overhead_s`, fitted
    on PyTorch's DDP benchmark at torch's default, ``gradient_as_bucket_view=False``), and no
    data here splits it off, so the view changes the memory (:func:`.memory.strategy_memory`)
    and not the step time: a step with the view may run a little faster than priced."""
    if strategy != "ddp" or tensor_params is None or ranks <= 1:
        return 0.0
    from ..compute import ddp_step_overhead_s

    return ddp_step_overhead_s(len(tensor_params))


def _unsized_activations(a: Any, mem: Any, shape: Any = None) -> tuple[str, ...]:
    """The memory's note that it has no activations, for a bare parameter count: its compute
    is priced on a shape (``shape``, :func:`_shape_of`) but its memory holds the model state
    alone, so a "fits" beside it must say what it leaves out, and which transformer the step
    priced (empty for an architecture; without the shape outside its range, where the step
    has equal blocks: :func:`~.layout.wrap_units`)."""
    from ..memory import bare_count_note

    note = str(getattr(mem.base, "activations_note", ""))
    if a is not None or not note.startswith("activations: not included"):
        return ()
    if shape is None:  # outside the dense shapes' range: wrap_units' equal blocks, 6N
        return (bare_count_note("equal blocks with 6N FLOPs per token (no dense shape this size)"),)
    return (
        bare_count_note(
            f"a dense transformer of that size ({shape.layers} layers, hidden {shape.hidden}: "
            "architecture_for_params)"
        ),
    )


def model_flops_per_token(
    params: float,
    arch: Any,
    sequence_length: int,
    *,
    mfu: float | None = None,
    compute_time_s: float | None = None,
    gpu: Any = None,
    precision: str = "bf16",
    held_out: str | None = None,
) -> tuple[float, str]:
    r"""Model FLOPs per token [FLOP] a step is priced with and its MFU is defined with, and
    that definition in words: the one definition of the API, the CLI and the step page.

    .. math:: F = 6N + 12 L H Q s \quad\text{(an architecture; PaLM, Chowdhery et al. 2022,
       appendix B)}, \qquad F = 6N \quad\text{(Kaplan et al. 2020)}

    An architecture: its own (6N + attention). A bare parameter count on the fitted efficiency
    road: the transformer the count stands for
    (:func:`~costmodel.architecture.architecture_for_params`), as its compute is priced. A bare
    count with a given MFU or a measured compute time, on the default MFU's road, or outside
    the shapes' range: 6N (the MFU given is of 6N FLOPs, Kaplan's ``C = 6 N D``).

    **The default MFU is the MFU a user types** (decision): on a GPU with no fitted efficiency
    at ``precision`` (:func:`.compute.fitted_efficiency` of ``gpu``: Blackwell, Ada, Volta,
    Turing) a bare count's compute is :data:`~.compute.DEFAULT_MFU` of 6N, the FLOPs
    ``--mfu 0.40`` is of, so the label "default MFU 0.40" is the ``--mfu`` of that compute
    and typing it gives the same number through the same function
    (:func:`.compute.micro_batch_compute_s`). It was 0.40 of the shape's 6N + attention, which
    ``--mfu 0.40`` was not (7B at 4096 tokens on a DGX B200: 223 ms against 191 ms). The shape
    is the fitted road's alone: its fit reads the hidden size and the attention, and the
    default reads nothing. ``gpu`` None: the fitted road's FLOPs (no GPU to ask).

    >>> f, words = model_flops_per_token(7e9, None, 4096, mfu=0.4)
    >>> f == 6 * 7e9, words
    (True, '6N of a bare parameter count with a given MFU or measured time')
    >>> from costmodel import presets
    >>> f, words = model_flops_per_token(7e9, None, 4096, gpu=presets.load("b200"))
    >>> f == 6 * 7e9, words
    (True, '6N of a bare parameter count at the default MFU (no fitted efficiency)')
    """
    from ..ddp import FLOPS_PER_PARAM_TOKEN

    if arch is not None:
        return (
            float(arch.training_flops_per_token(sequence_length)),
            "6N + attention of the architecture, PaLM appendix B",
        )
    p = float(params)
    if mfu is not None or compute_time_s is not None:
        return (
            FLOPS_PER_PARAM_TOKEN * p,
            "6N of a bare parameter count with a given MFU or measured time",
        )
    shape = _shape_of(p)
    if shape is None:
        return FLOPS_PER_PARAM_TOKEN * p, "6N of a bare parameter count with no transformer shape"
    if gpu is not None and fitted_efficiency(gpu, precision, held_out) is None:
        return (
            FLOPS_PER_PARAM_TOKEN * p,
            "6N of a bare parameter count at the default MFU (no fitted efficiency)",
        )
    return (
        float(shape.training_flops_per_token(sequence_length)),
        "6N + attention of the transformer the parameter count stands for, PaLM appendix B",
    )


def _shape_of(p: float) -> Any:
    """The transformer a bare parameter count stands for
    (:func:`~costmodel.architecture.architecture_for_params`; None outside its range)."""
    from ..architecture import architecture_for_params

    try:
        return architecture_for_params(p)
    except ValueError:
        return None


def measured_peak_flops(gpu: Any, precision: str = "bf16") -> float:
    """The dense peak [FLOP/s] a measured time is held to (a compute time per micro-batch, a
    step time; :func:`costmodel._checks.refuse_faster_than_peak`): the peak of the step's
    compute precision, fp8's for an fp8 step, else bf16's (fp16's on a GPU without bf16),
    :func:`costmodel.compute.precision_peak_flops`. One rule for every measured time, so a time
    an fp8 step accepts is not refused as a step of the same run.

    >>> from costmodel import presets
    >>> g = presets.load("h100-sxm")
    >>> measured_peak_flops(g) / 1e12, measured_peak_flops(g, "fp8") / 1e12
    (989.5, 1979.0)
    """
    from ..compute import precision_peak_flops

    return float(precision_peak_flops(gpu, precision))


def _refuse_faster_than_peak(
    ct: Any, compute_time_s: Any, flops: float, gpu: Any, precision: str, recompute: str = "none"
) -> None:
    r"""Refuse a measured compute time faster than the GPU's dense peak at ``precision`` for the
    FLOPs the GPU executes in one micro-batch: the model's (``flops``) times ``1 + r`` under
    recomputation (``r`` its extra work, :attr:`~.compute.ComputeTime.recompute_fraction`
    ``= r / (1 + r)``: full recomputation reruns the forward, a third more),

    .. math:: t \ge rac{F\,(1 + r)}{	ext{peak}}

    the rule a measured step time is held to too (:func:`costmodel._checks.refuse_faster_than_peak`,
    which says why), and the bound of a given MFU under recomputation
    (:func:`.compute.check_mfu_recompute`). A short compute time within the peak is legal: the
    step it prices is comms-bound."""
    if compute_time_s is None or ct.source != "measured" or not ct.micro_s > 0:
        return
    from .._checks import refuse_faster_than_peak

    peak = measured_peak_flops(gpu, precision)
    extra = ct.recompute_fraction / (1.0 - ct.recompute_fraction)  # r of r / (1 + r)
    if extra > 0:  # the ratio is then the hardware FLOP utilisation, the recomputation's counted
        utilisation = f"a hardware FLOP utilisation (`recompute` {recompute}'s {extra:.0%} extra work counted)"
        work = f"this model's {flops:.3g} FLOP and `recompute` {recompute}'s {extra:.0%} more"
    else:
        utilisation, work = "an MFU", f"this model's {flops:.3g} FLOP"
    refuse_faster_than_peak(
        "compute_time_s",
        "compute time",
        ct.micro_s,
        flops * (1.0 + extra),
        peak,
        f"a compute time of at least {{}} per micro-batch for {work} on "
        f"the {gpu.name} at {precision}; check its unit, the sequence length and the micro-batch",
        utilisation,
    )


def left_out_notes(a: Any, params: float, sequence_length: int | None = None) -> tuple[str, ...]:
    """What a data-parallel step leaves out or runs past: the model's size (tensor and
    pipeline parallelism, :func:`costmodel.training.scale_notes`), then the architecture's own
    (:func:`costmodel.architecture.architecture_notes`: a mixture of experts' expert
    parallelism, a ``sequence_length`` past the model's trained context); ``a`` the
    architecture (None for a bare count). The cluster step's and the one-link step's notes."""
    from ..architecture import architecture_notes
    from ..training import scale_notes

    return (*scale_notes(params), *architecture_notes(a, sequence_length))


_COMPUTE: dict[tuple[Any, ...], tuple[Any, ComputeTime]] = {}


def _step_compute(
    shape: Any, gpu: Any, sequence_length: int, micro_batch: int, **kw: Any
) -> ComputeTime:
    """:func:`.compute.step_compute`, kept per setting (the shape's identity, the GPU, the
    scalar arguments): every strategy and node count of an advisor table asks for the same
    one. The answer is a frozen dataclass, shared as it is."""
    try:
        key = (id(shape), gpu, sequence_length, micro_batch, *sorted(kw.items()))
        hit = _COMPUTE.get(key)
    except TypeError:  # an argument that is not hashable: computed afresh
        return step_compute(shape, gpu, sequence_length, micro_batch, **kw)
    if hit is not None and hit[0] is shape:
        return hit[1]
    ct = step_compute(shape, gpu, sequence_length, micro_batch, **kw)
    if len(_COMPUTE) >= 256:
        _COMPUTE.clear()
    _COMPUTE[key] = (shape, ct)
    return ct


def peak_floor_s(
    flops_per_token: float, given_flops_per_token: float, tokens: float, peak: float
) -> float:
    r"""The least compute of a micro-batch [s] the fitted (calibrated) road prices: the GPU's
    dense peak for the larger of the FLOPs the compute is priced with and the FLOPs a given
    MFU is of (:func:`model_flops_per_token`),

    .. math:: t_{min} = \frac{\max(F, F_{mfu})\, T}{\text{peak}}

    ``F`` [FLOP/token] the priced FLOPs (6N + attention of the architecture, or of the
    transformer a bare count stands for; PaLM, Chowdhery et al. 2022, arXiv:2204.02311,
    appendix B), ``F_mfu`` [FLOP/token] those of a given MFU (the same for an architecture;
    6N of a bare count, Kaplan et al. 2020), ``T`` [tokens] of the micro-batch, peak [FLOP/s]
    the dense peak of the compute precision. So the compute's MFU is at most 1 in both
    definitions, the label's "the compute alone at MFU x" (of 6N for a bare count) and the
    step's own (:meth:`costmodel.scenario.Scenario.flops_per_token`): a bare count of 30M
    parameters whose transformer holds 16M in its embedding (no matmul FLOPs) was priced at
    its transformer's peak, "MFU 1.50 of 6N FLOPs", an MFU no ``--mfu`` can give. Bounded so,
    ``--mfu 1`` is the fastest compute of a count on either road (one road per model). The
    step multiplies it by ``1 / (1 - r)``, ``r`` recomputation's share of the micro-batch's
    work (:attr:`~.compute.ComputeTime.recompute_fraction`): the GPU executes the recomputed
    forward too, so a checkpointed micro-batch is bounded by its hardware FLOPs.

    >>> peak_floor_s(4.0, 6.0, 10.0, 60.0), peak_floor_s(6.0, 6.0, 10.0, 60.0)
    (1.0, 1.0)
    """
    return max(float(flops_per_token), float(given_flops_per_token)) * float(tokens) / peak


def _calibrated_label(ct: ComputeTime, mfu: float, bare_count: bool = False) -> ComputeTime:
    """``ct`` with its label naming the MFU of the compute the step uses after the one-node
    calibration (:func:`_calibrated_micro_s`), ``mfu = F T / (t_calibrated P)`` [-], beside the
    fitted one-node *step* MFU it already reads: the label's first MFU counts the one-node
    step's own communication, so ``--mfu`` (an MFU of the compute alone, PaLM's definition)
    reproduces this compute at the second number, not the first. ``F`` is the FLOPs per token
    a given ``mfu`` is of (:func:`model_flops_per_token`): for a bare count (``bare_count``)
    6N, where the fitted efficiency's MFU counts 6N + attention of its shape, so the label
    says which. ``mfu`` is at most 1: the compute is floored at :func:`peak_floor_s`."""
    from dataclasses import replace

    of = " of 6N FLOPs (a bare count's given MFU is of 6N)" if bare_count else ""
    return replace(
        ct,
        label=f"{ct.label}; the compute alone at MFU {mfu:.2f}{of}, the `mfu` of this compute "
        "(the one-node step's communication taken out)",
    )


#: The communication dtypes of the one-node step the fitted compute is calibrated on
#: (:func:`_calibrated_micro_s`), whatever the step asks: the step's defaults, bf16 gathers
#: and bf16 gradient reductions (mixed-adam's gradients). bf16 gathers are what every fitted
#: one-node run did; the reductions of those runs split between bf16 (llm-foundry's PURE, 106
#: one-node rows) and fp32 (its DEFAULT and torchtitan, 107), so no one dtype is theirs and the
#: step's default is taken. Fixed, so that a dtype moves the step by its bytes alone: an fp32
#: reduction is never faster than a bf16 one.
CALIBRATION_DTYPES: dict[str, str] = {"param_dtype": "bf16", "grad_dtype": "bf16"}

_CALIBRATED: dict[tuple[Any, ...], float] = {}
_ONE_NODE: dict[int, tuple[Any, Any, str]] = {}


def _one_node(c: Any) -> tuple[Any, str]:
    """One whole node of cluster ``c`` and its JSON (the calibration's key), kept per cluster
    object (clusters are frozen): every configuration of an advisor table asks for them. A
    slice of a node (``gpus_per_node`` below the node's) is calibrated on the whole node, as
    the fitted one-node steps ran: a 1-GPU step's compute is the fitted step's compute with the
    8-GPU node's communication taken out, not the whole fitted step (it was: 516 ms for one
    H200 against 476 ms on eight; one H200 measured 407 ms, docs/gpu-checks.md). So is a
    preset's cluster whose network was changed in code (its name and GPU the preset's, its
    NVLink or NICs not): a what-if on the network, which leaves the compute as it is, so a
    slower network only slows the step (calibrated on its own node, half the NVLink bandwidth
    took more communication out of the compute, and llama-3.1-8b's ddp and fsdp steps on one
    DGX H100 node came out 2.1 ms and 0.05 ms faster). A cluster of its own name is
    calibrated on its own node: it is the hardware the fitted step is taken to run on."""
    hit = _ONE_NODE.get(id(c))
    if hit is None or hit[0] is not c:
        from .. import presets

        one = presets.cluster(c, nodes=1) if int(c.nodes) != 1 else c
        try:  # a slice, or a network changed in code: the named preset's whole node
            named = presets.cluster(c.name, nodes=1, power_limit_w=c.gpu.power_limit_w)
        except ValueError:  # a cluster of its own name: its own node, as before
            named = one
        node_gpus = c.node.whole_node_gpus or c.node.gpus_per_node
        if named.node.gpus_per_node == node_gpus and named.gpu == c.gpu:
            one = named
        if len(_ONE_NODE) >= 64:
            _ONE_NODE.clear()
        hit = (c, one, one.model_dump_json())
        _ONE_NODE[id(c)] = hit
    return hit[1], hit[2]


#: Said when :func:`_calibrated_micro_s` finds no compute that reproduces the fitted one-node
#: step: the engine's one-node communication alone is longer than that step (a model far outside
#: the fitted runs: a bare count of 30M parameters or less at short sequences on an H100 node;
#: DeepSeek-V3's 671 B parameters gathered on one node, before a mixture of experts was
#: calibrated on its dense stand-in), and the fixed point shrank the compute below the time the
#: GPU's dense peak allows (55 ms a micro-batch, "MFU 22"). The compute is then that time (for
#: a bare count, of the larger of its shape's FLOPs and its 6N: :func:`peak_floor_s`), the
#: compute at the edge where the fixed point meets it: the fitted compute used as it is was
#: longer than the calibrated one just past the edge, and the step got faster with more work
#: (10M parameters on one DGX H100 node: 0.458 ms at 256 tokens, 0.275 ms at 320).
_UNCALIBRATED_NOTE = (
    "compute per micro-batch: at the GPU's dense peak, the least the one-node calibration can "
    "take it to (the engine's one-node communication alone is longer than the fitted one-node "
    "step, so no compute time reproduces it; this model is outside the runs the efficiency "
    "was fitted on)"
)

#: Said when :func:`_calibrated_micro_s` gives a compute the GPU's dense peak allows for the
#: FLOPs it is priced with (6N + attention of a bare count's transformer) but not for the
#: count's 6N, the FLOPs a given MFU of a count is of (:func:`peak_floor_s`): a bare count whose
#: transformer holds much of it in the embedding (30M parameters at 256 tokens on an H100 node
#: read "MFU 1.50 of 6N FLOPs"). The compute is then the peak's time for 6N.
_SIX_N_PEAK_NOTE = (
    "compute per micro-batch: at the GPU's dense peak for the count's 6N FLOPs, the shortest "
    "compute a given MFU prices (MFU 1); the one-node calibration took it below that (the "
    "transformer the count stands for has fewer FLOPs than 6N, its embedding none: this model "
    "is outside the runs the efficiency was fitted on)"
)


def _calibrated_micro_s(
    ct: ComputeTime,
    p: float,
    a: Any,
    c: Any,
    recipe: str,
    micro_batch: int,
    sequence_length: int,
    model: str,
    sync_loss: float | None = None,
    precision: str = "bf16",
) -> float:
    """Compute of one micro-batch that makes the engine's one-node FSDP step of that
    micro-batch equal the fitted one-node step ``ct.micro_s`` (module docstring of
    :mod:`.compute`): the intra-node communication inside the fitted efficiency is counted
    once. The one-node step is taken at the default contention
    (:data:`~.layout.DEFAULT_COMM_CONTENTION`, the overlap the published steps were fitted
    with): another ``c`` is a what-if on the network side and leaves the compute as it is.
    So are the communication dtypes (:data:`CALIBRATION_DTYPES`): the one-node step gathers
    and reduces in bf16, whatever the layout asks. The fitted efficiency is one compute for
    every dtype a user may ask; calibrated on the layout's own, an fp8 gather took back on one
    node the time it saved, an fp32 gather was as fast as bf16's, and an fp32 gradient
    reduction came out faster than a bf16 one (llama-3.1-8b fsdp: 0.05 ms on one node, 0.003 ms
    on four; the compute shrank by the extra reduction it had been calibrated with). A
    measured one-node step (the fidelity report's scaling road,
    ``step_fidelity._Engine.calibrate``) is calibrated in that run's own dtypes: it is that
    run's compute. Fixed point (the step increases with the compute), cached per one-node
    setting.

    ``a`` is the shape the one-node step is taken on: for a mixture of experts its dense
    stand-in (:attr:`~costmodel.architecture.Architecture.dense_stand_in`, each MoE layer
    holding only the ``k`` experts a token passes through; ``p`` its count), not the MoE
    itself. The fitted efficiency (llm-foundry's MPT, torchtitan's Llama: dense models) prices
    a step whose one-node communication gathers and reduces the weights the compute uses; the
    MoE's own one-node step gathers all its experts (mixtral-8x7b: 46.7B) while ``ct.micro_s``
    prices the FLOPs of its active ones (12.9B), so calibrated on it the compute shrank as the
    experts grew and, where the all-expert communication alone exceeded the fitted step, gave
    up (:data:`_UNCALIBRATED_NOTE`): the uncalibrated compute was longer than the calibrated
    one just past that edge, and mixtral-8x7b on one DGX H100 node under fsdp was priced at
    0.591 s at 1536 tokens, 0.554 s at 2048. The MoE's step is then priced with this compute
    and its own (all-expert) communication. No MoE end-to-end run checks it (README,
    "Decisions and known limits"; tests/test_qa_pass54.py).

    Where no compute reproduces the fitted step even so (the one-node communication alone is
    longer), the iteration lowers the compute by the ratio of the fitted step to the engine's
    at each of its four steps: where that takes it below the time of the GPU's dense peak, the
    step takes that time (:data:`_UNCALIBRATED_NOTE`), which the calibrated compute meets at
    the edge; where four steps leave it above the peak's time, the compute is the fourth
    step's, with no note. That is the case of a small micro-batch of a model whose one-node
    gathers and reduce-scatters, serialized on one communicator, take about as long as the
    fitted step (llama-3.1-8b at 512 tokens on one DGX H100 node: the engine's step at zero
    compute is above the fitted 133 ms, and four steps leave the compute at 79 ms): the fitted
    step is communication-bound there and cannot pin the compute (README, the compute row of
    "Training steps against published end-to-end runs", records what it moved)."""
    one, one_json = _one_node(c)
    key = (
        one_json,
        a.name if a is not None else p,
        p,
        ct.micro_s,
        ct.recompute_fraction,
        recipe,
        micro_batch,
        sequence_length,
        model,
        sync_loss,
        precision,
    )
    hit = _CALIBRATED.get(key)
    if hit is not None:
        return hit
    micro = target = ct.micro_s
    from .._limits import LIMITS

    # a compute past a measured compute time's range (1e6 s: a sequence of 1e8) is not
    # calibrated: its step is refused by the step-time limit, in the words of what was typed,
    # not as a compute_time_s nobody gave
    if int(one.ranks) > 1 and LIMITS["compute_time"].holds(micro):
        for _ in range(4):
            try:
                # an internal one-node step: a calibration's warning about its level (one fitted
                # across nodes only) is about this step, not the one asked for, and said with
                # "this one-node prediction" under a multi-node step it misled; a one-node step
                # asked for says it itself
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", CalibrationWarning)
                    s = strategy_step(
                        None if a is not None else p,  # a shape: its own count, as before
                        arch=a,
                        cluster=one,
                        nodes=1,
                        strategy="fsdp",
                        # not the layout's dtypes: one compute for every dtype
                        param_dtype=CALIBRATION_DTYPES["param_dtype"],
                        grad_dtype=CALIBRATION_DTYPES["grad_dtype"],
                        comm_contention=DEFAULT_COMM_CONTENTION,
                        recipe=recipe,
                        micro_batch=micro_batch,
                        sequence_length=sequence_length,
                        compute_time_s=micro,
                        model=model,
                        timeline=False,
                        band=False,
                        sync_loss=sync_loss,
                        precision=precision,  # held to the same peak as the step it calibrates
                    )
            except FasterThanPeakError:  # past the datasheet peak: no fixed point (below)
                break
            if abs(s.step_time_s / target - 1) < 1e-4:
                break
            micro *= target / s.step_time_s
    if len(_CALIBRATED) > 4096:
        _CALIBRATED.clear()
    _CALIBRATED[key] = micro
    return micro
