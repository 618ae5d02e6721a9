r"""One PyTorch DDP training step: buckets, overlap of all-reduce with backward, step time
(DESIGN.md section 3.6).

This module holds PyTorch's bucket rule (:func:`bucket_assignment`, also what the strategy
road's ``ddp`` and ``zero`` buckets are made of), the bucket_cap advisor
(:func:`bucket_cap_sweep`) and :func:`ddp_step`, the lesson's DDP step on one link: numbers in,
numbers out, no cluster. :func:`ddp_step` is a compatibility surface, not a second model: it
checks its arguments, makes the buckets and their all-reduce times, and hands the rest to the
strategy road, which every other surface uses (:func:`costmodel.strategy.strategy_step`): DDP's
micro-batch tasks (:func:`costmodel.strategy.ddp.micro_batch_tasks`), the one timeline engine
(:func:`costmodel.strategy.engine.run`) and the one accumulation
(:func:`costmodel.strategy.accumulate.accumulate`). For a cluster, a strategy other than DDP,
or a :class:`~costmodel.strategy.Layout`, call :func:`costmodel.strategy.strategy_step`.

Model
-----
1. **Compute** per micro-batch: forward ``2 P T`` and backward ``4 P T`` FLOPs over
   ``peak x MFU`` (Kaplan et al. 2020, ``C = 6 N D``), or a measured ``compute_time_s`` split
   1/3 forward, 2/3 backward.
2. **Buckets** as PyTorch DDP forms them (:func:`bucket_assignment`): parameters in reverse
   registration order (the order backward produces their gradients), greedily packed, a bucket
   closed at the first parameter that brings it to its limit (never split), the first bucket
   limited to 1 MiB and the rest to ``bucket_cap_mb`` = 25 MiB.
3. **Timeline**: backward produces gradients at a rate proportional to parameter count (an
   assumption: real layers differ in FLOPs per parameter); a bucket's all-reduce starts when its
   last gradient is ready and the previous bucket's all-reduce is done (one communication
   stream, bucket order); its duration comes from ``allreduce_time_fn(bucket_bytes)``.
4. **Step**: the end of the last all-reduce or of backward, whichever is later. The exposed
   communication is step minus compute. Scaling efficiency = ``T_1 / T_N``
   (:func:`costmodel.strategy.step.scaling_efficiency`, the lesson's throughput on ``N`` GPUs
   over ``N`` times one GPU's): one GPU with the same micro-batches has no all-reduce, so
   ``T_1`` is the compute plus the tail and DDP's host time. ``compute_share`` is
   ``compute / step``, a different figure.
5. **Accumulation** over ``A`` micro-batches: with ``no_sync`` only the last one communicates;
   without it every micro-batch does (DDP waits for its all-reduces at the end of each backward).

``comm_contention`` ``c`` (default 0, the textbook model) lets overlapped communication slow
the backward compute: while an all-reduce runs, backward advances at rate ``1 - c``, since NCCL
kernels share the GPU's SMs and memory bandwidth with the compute kernels; ``c = 1`` stalls
compute during communication (no benefit from overlap). It is an empirical knob, to be fitted
against measurements: tests/test_ddp.py fits it on PyTorch's DDP benchmark, where no
contention (``c = 0``) would hide small buckets' extra latency entirely, but 1 MiB buckets were
measured slower than 25 MiB ones; on that V100 DGX-1 data the fit lands at ``c = 1``.

>>> step = ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
>>> round(step.comm_s, 3), step.bound, round(step.perfect_overlap_efficiency, 2)
(0.551, 'comms', 0.73)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from ._checks import _all_finite, finite_result, flag, refuse_unreal, said
from .units import format_duration, text_hint

# torch/nn/parallel/distributed.py: bucket_cap_mb=25 -> int(25 * 1024 * 1024) bytes
DEFAULT_BUCKET_CAP_BYTES = 25 * 2**20
# torch/distributed: dist._DEFAULT_FIRST_BUCKET_BYTES = int(1024 * 1024) ("Experiments showed 1MB
# is a reasonable value", comment in torch/nn/parallel/distributed.py)
DEFAULT_FIRST_BUCKET_BYTES = 2**20
# Forward 2PT, backward 4PT FLOPs (Kaplan et al. 2020, arXiv:2001.08361, section 2.1): the
# backward share of one micro-batch's compute.
BACKWARD_FRACTION = 2.0 / 3.0
FLOPS_PER_PARAM_TOKEN = 6.0
# Default tensor size when only a parameter count is given: a 4096 x 4096 matrix [params].
DEFAULT_TENSOR_PARAMS = 2**24
# comm_contention fitted to PyTorch's DDP benchmark (V100 DGX-1, ResNet/ResNeXt, 1-16 GPUs,
# costmodel/data/reference/ddp): the grid fit over [0, 1] in tests/test_ddp.py
# (test_ddp_benchmark_shape, which asserts this value) lands at 1.0. One GPU generation and
# one model family, so not the default (strategy.DEFAULT_COMM_CONTENTION, 0, on every surface);
# the Training step page's contention box names it in its help.
FITTED_COMM_CONTENTION = 1.0
# bucket_cap values the advisor sweeps [B]: 1 to 200 MiB in 1 MiB steps (PyTorch's knob is
# bucket_cap_mb; 25 MiB is its default).
ADVICE_CAPS_BYTES: tuple[int, ...] = tuple(m * 2**20 for m in range(1, 201))


def bound_text(step: DDPStep) -> str:
    """The one-link step's verdict in words, with its rule: the lesson's (section 8: comms-bound
    when the all-reduce sum outlasts the compute, ``DDPStep.bound``), and, where that rule says
    compute-bound while more than 5 % of the step still waits on the network, that share and the
    cluster step's verdict on it (:func:`costmodel.strategy.step.verdict`, exposed communication
    above :data:`~costmodel.strategy.step.EXPOSED_SIGNIFICANT` of the step), so the line never
    calls a step with 20 % exposed communication compute-bound without a word.

    >>> s = ddp_step(7e9, 64, compute_time_s=0.6, bandwidth_bytes_per_s=50e9)
    >>> bound_text(s)
    "compute-bound by the lesson's rule (all-reduce 551 ms < compute 600 ms), but 20% of the step is exposed communication: comms-bound by the cluster step's rule (over 5% exposed)"
    >>> bound_text(ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9))
    'comms-bound (all-reduce 551 ms > compute 400 ms)'
    """
    from .strategy.step import EXPOSED_SIGNIFICANT

    comm, compute = format_duration(step.comm_s), format_duration(step.compute_s)
    if step.bound == "comms":
        return f"comms-bound (all-reduce {comm} > compute {compute})"
    share = step.exposed_comm_s / step.step_time_s if step.step_time_s > 0 else 0.0
    if share <= EXPOSED_SIGNIFICANT:
        return f"compute-bound (all-reduce {comm} <= compute {compute})"
    return (
        f"compute-bound by the lesson's rule (all-reduce {comm} < compute {compute}), but "
        f"{share:.0%} of the step is exposed communication: comms-bound by the cluster step's "
        f"rule (over {EXPOSED_SIGNIFICANT:.0%} exposed)"
    )


NO_BAND = (
    "no error band: a step over one link (`ranks`, `bandwidth`) has no measured runs to take "
    "one from"
)
"""Why :func:`ddp_step`'s step time has no expected-error band (a cluster step's comes from
the measured runs of its hardware): said beside it, as a band unknown is."""

MAX_BUCKETS = 100_000
"""Most buckets :func:`ddp_step` schedules (bounded work): about 1.7e12 parameters at
the default 25 MiB cap, in about 2 s. Above it the step is refused with a message (raise
``bucket_cap_bytes``): the schedule is per bucket, so its cost grows with the count."""

MAX_TENSORS = 1_000_000
"""Most default-sized gradient tensors (``params / DEFAULT_TENSOR_PARAMS``) :func:`ddp_step`
allocates; above it the step is refused before allocating."""

MAX_ACCUMULATION = 10**9
"""Largest ``accumulation`` :func:`ddp_step` accepts; the totals are closed-form in it."""

MAX_TIMELINE_BARS = 200_000
"""Most timeline intervals :func:`ddp_step` builds (2 per micro-batch plus one per bucket and
synchronisation); above it ``timeline=True`` is refused: pass ``timeline=False``."""

Bound = Literal["compute", "comms"]


@dataclass(frozen=True)
class Interval:
    """One bar of the timeline [s]. ``kind``: "forward", "backward" or "allreduce"."""

    kind: str
    start_s: float
    end_s: float
    label: str = ""
    message_bytes: float = 0.0
    micro_batch: int = 0

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class DDPStep:
    """Result of :func:`ddp_step`. Times per optimizer step [s]."""

    compute_s: float  # forward + backward of all micro-batches
    comm_s: float  # sum of all bucket all-reduce times
    exposed_comm_s: float  # step_time_s - compute_s - optimizer and tail - host_overhead_s
    step_time_s: float
    bound: Bound  # "comms" when comm_s > compute_s (Li et al. 2020; the lesson's section 8)
    efficiency: float  # scaling efficiency one_gpu_step_s / step_time_s (1 on one GPU)
    perfect_overlap_step_s: float  # every all-reduce hidden under any compute: max(compute, comm)
    perfect_overlap_efficiency: float  # one_gpu_step_s / (perfect overlap + tail + host time)
    serial_step_s: float  # no overlap at all: compute + comm
    ranks: int
    accumulation: int
    syncs: int  # all-reduce rounds per step (1 with no_sync, else accumulation)
    bucket_bytes: tuple[float, ...]  # in reduction order
    bucket_comm_s: tuple[float, ...]
    timeline: tuple[Interval, ...]
    host_overhead_s: float = 0.0  # DDP's host time: hooks, bucket copies (not communication) [s]
    one_gpu_step_s: float = math.nan  # the same micro-batches on one GPU: compute + tail + host

    @property
    def compute_share(self) -> float:
        """``compute_s / step_time_s``: the compute's share of the step, not the scaling
        efficiency (:func:`costmodel.strategy.step.compute_share`)."""
        from .strategy.step import compute_share

        return compute_share(self.compute_s, self.step_time_s)

    @property
    def buckets(self) -> int:
        return len(self.bucket_bytes)

    def all_finite(self) -> bool:
        """Whether every number is finite: what :func:`costmodel._checks.finite_result` checks
        field by field, with the per-bucket lists checked as arrays (a model with tens of
        thousands of tensors has as many buckets; one ``np.isfinite`` each, not a Python loop
        over every entry)."""
        lists = (self.bucket_bytes, self.bucket_comm_s)
        return all(
            _all_finite(getattr(self, f.name), 1)
            for f in fields(self)
            if f.name not in ("bucket_bytes", "bucket_comm_s")
        ) and all(bool(np.isfinite(np.asarray(x, dtype=float)).all()) for x in lists)

    def as_dict(self) -> dict[str, object]:
        """Scalar figures by name (the timeline and per-bucket lists left out)."""
        d = asdict(self)
        for k in ("timeline", "bucket_bytes", "bucket_comm_s"):
            d.pop(k)
        d["buckets"] = self.buckets
        return d


# --- input checking ----------------------------------------------------------------------------
def _number(
    name: str, value: object, *, positive: bool, unit: str = "", check: bool = True
) -> float:
    """``value`` as a float, refusing what is no number by ``name``; with ``check``, also
    anything not finite or not > 0 (``positive``) / >= 0."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    refuse_unreal(name, value)  # float(np.timedelta64(5, "ns")) is 5.0: 5 s of compute
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        # "400ms" as text: the number it means, as the API's other arguments say
        hint = text_hint(name, value)
        raise ValueError(f"{name}: expected a number, got {said(value)}{hint}") from None
    if check and (not math.isfinite(x) or (x <= 0 if positive else x < 0)):
        need = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{name}: must be a finite number {need}{' ' * bool(unit)}{unit}, got {value!r}"
        )
    return x


def _whole(name: str, value: object) -> int:
    x = _number(name, value, positive=False, check=False)
    # one rule for every bad count: 0 and NaN in the words 2.5 gets (not "> 0", which 0.5 meets)
    if not (math.isfinite(x) and x >= 1 and x == math.floor(x)):
        raise ValueError(f"{name}: must be a whole number >= 1, got {value!r}")
    return int(x)


def _ranks(value: object) -> int:
    """``ranks`` as an int within the shared ranks limit (``_limits.LIMITS["ranks"]``: whole,
    1..1,000,000,000), the range :func:`costmodel.batch.global_batch` and every command's
    ``--ranks`` hold, in their words: ``"ranks: must be a whole number in 1..1,000,000,000, got
    VALUE"`` (2e9 was answered here). Imported on first use, as :mod:`costmodel.memory` does (the
    limits module imports units, which builds a pydantic validator at import)."""
    from ._limits import LIMITS

    limit = LIMITS["ranks"]
    x = _number("ranks", value, positive=False, check=False)
    if not (math.isfinite(x) and limit.lo <= x <= limit.hi and x == math.floor(x)):
        raise ValueError(f"ranks: must be {limit.rule}, got {value!r}")
    return int(x)


def _sizes(name: str, values: ArrayLike) -> np.ndarray:
    refuse_unreal(name, values)  # a complex part dropped, a duration's count
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a list of numbers, got {values!r}") from None
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D list, got shape {x.shape}")
    bad = ~np.isfinite(x) | (x <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}: every entry must be a finite number > 0, got {float(x[i])!r} "
            f"(element {i} of {x.size})"
        )
    return x


# --- buckets -----------------------------------------------------------------------------------
def bucket_assignment(
    param_bytes: ArrayLike,
    bucket_cap_bytes: float = DEFAULT_BUCKET_CAP_BYTES,
    first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES,
    small_bucket_last: bool = False,
) -> list[list[int]]:
    r"""Group gradients into DDP buckets, as PyTorch does.

    Parameters are taken in reverse registration order (the order backward makes their
    gradients ready) and packed greedily: a parameter joins the open bucket, and the bucket is
    closed as soon as its size reaches its limit (``size >= limit``), so a parameter is never
    split and a bucket may pass its limit by less than its last parameter. The first bucket's
    limit is ``first_bucket_bytes``, every later one's ``bucket_cap_bytes``.

    Parameters
    ----------
    param_bytes : array_like
        Gradient bytes of each parameter tensor, in registration order (``model.parameters()``)
        [B], each > 0.
    bucket_cap_bytes : float
        ``bucket_cap_mb * 2**20`` [B]; PyTorch's default 25 MiB.
    first_bucket_bytes : float
        Limit of the first bucket [B]; PyTorch's ``dist._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB.
        Recent PyTorch uses it only with the default cap: pass ``first_bucket_bytes =
        bucket_cap_bytes`` to model an explicit ``bucket_cap_mb``.
    small_bucket_last : bool
        Pack from the first-registered parameter instead, so the small bucket is the last one
        reduced: PyTorch 1.4's constructor (the version of the data/ddp benchmark) and today's
        ``DDP_SET_LAST_BUCKET_CAP=1``.

    Returns
    -------
    list of list of int
        Buckets in reduction order (bucket 0 is all-reduced first); each a list of parameter
        indices (registration order numbering) in gradient-ready order.

    Notes
    -----
    PyTorch ``torch/csrc/distributed/c10d/reducer.cpp``: ``compute_bucket_assignment_by_size``
    (``if (bucket.size >= bucket_size_limit)`` closes a bucket and advances to the next limit)
    and ``Reducer::rebuild_buckets`` (after the first iteration, buckets are rebuilt in
    gradient-ready order with limits ``{first_bucket_bytes_cap_, bucket_bytes_cap_}``);
    ``torch/nn/parallel/distributed.py`` (``bucket_cap_mb=25``, ``_DEFAULT_FIRST_BUCKET_BYTES``).
    One dtype and device; sparse gradients (own bucket) are not modelled.

    Examples
    --------
    >>> MiB = 2**20
    >>> sizes = [0.5 * MiB, 0.25 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 4 * MiB]
    >>> bucket_assignment(sizes)            # 4 >= 1 MiB closes the first; 30 >= 25 the second
    [[5], [4, 3, 2], [1, 0]]
    >>> bucket_assignment(sizes, small_bucket_last=True)
    [[5, 4, 3], [2, 1, 0]]
    """
    sizes = _sizes("param_bytes", param_bytes)
    offsets = _bucket_offsets(sizes, bucket_cap_bytes, first_bucket_bytes, small_bucket_last)
    ready = list(range(sizes.size - 1, -1, -1))  # registration order reversed
    bounds = [*offsets.tolist(), sizes.size]
    return [ready[a:b] for a, b in itertools.pairwise(bounds)]


#: Partial sums of whole numbers below this are exact in float64 (2**53): the greedy packing
#: may then be read off one cumulative sum.
_EXACT_SUM_LIMIT = 2.0**53


def _bucket_offsets(
    sizes: np.ndarray,
    bucket_cap_bytes: float,
    first_bucket_bytes: float,
    small_bucket_last: bool,
) -> np.ndarray:
    """Where each bucket of :func:`bucket_assignment` starts in the gradient-ready order
    (registration order reversed): an int array, 0 first, strictly increasing.

    Every bucket, in reduction order, is a contiguous run of the gradient-ready order (with
    ``small_bucket_last`` too: its buckets and their contents are reversed), so the offsets
    describe the assignment. The greedy pass closes a bucket at the first parameter whose
    running sum reaches the limit. When every size is a whole number of bytes and the total is
    below 2**53, each running sum is an exact integer, and a bucket starting after the running
    total ``C[s-1]`` closes at the first ``j`` with ``C[j] >= C[s-1] + ceil(limit)``: one
    ``searchsorted`` over the cumulative sum gives every possible next start, and the chain of
    starts is followed by pointer doubling. Otherwise the pass runs parameter by parameter
    (the running sum rounds as PyTorch's does), with the same answer.
    """
    cap = _number("bucket_cap_bytes", bucket_cap_bytes, positive=True, unit="B")
    first = _number("first_bucket_bytes", first_bucket_bytes, positive=True, unit="B")
    small_bucket_last = flag("small_bucket_last", small_bucket_last)
    n = sizes.size
    seq = sizes if small_bucket_last else sizes[::-1]  # the packing order
    total = np.cumsum(seq)
    if float(total[-1]) < _EXACT_SUM_LIMIT and bool(np.all(seq == np.floor(seq))):
        before = total - seq  # C[s-1]: exact integers
        # the start after a bucket opened at s (n: it runs to the end), per limit
        first_end = int(np.searchsorted(total, np.ceil(first), side="left"))
        nxt = np.searchsorted(total, before + np.ceil(cap), side="left") + 1
        starts = _chain(np.minimum(nxt, n), first_end + 1, n)
        starts = np.concatenate(([0], starts)).astype(np.intp)
    else:
        begin: list[int] = [0]
        size = 0.0
        limit = first
        for i, x in enumerate(seq.tolist()):
            size += x
            if size >= limit:
                begin.append(i + 1)
                size, limit = 0.0, cap
        if begin[-1] == n:
            begin.pop()
        starts = np.asarray(begin, dtype=np.intp)
    if not small_bucket_last:
        return starts
    # packed from the first-registered parameter: in the gradient-ready order the last bucket
    # packed comes first
    ends = np.concatenate((starts[1:], [n]))
    return (n - ends[::-1]).astype(np.intp)


def _chain(nxt: np.ndarray, start: int, n: int) -> np.ndarray:
    """``start, nxt[start], nxt[nxt[start]], ...`` while below ``n`` (``nxt[i] > i``, values
    at most ``n``), by pointer doubling: O(n log n) numpy, no Python loop per element."""
    if start >= n:
        return np.zeros(0, dtype=np.intp)
    jump = np.append(nxt, n).astype(np.intp)  # n stays at n
    path = np.array([start], dtype=np.intp)
    while path[-1] < n:  # path holds the first 2**k chain members; jump is 2**k steps
        path = np.concatenate((path, jump[path]))
        jump = jump[jump]
    return path[path < n]


def bucket_sizes(
    param_bytes: ArrayLike,
    bucket_cap_bytes: float = DEFAULT_BUCKET_CAP_BYTES,
    first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES,
    small_bucket_last: bool = False,
) -> np.ndarray:
    """Bytes of each bucket in reduction order [B] (see :func:`bucket_assignment`).

    >>> (bucket_sizes([30e6] * 4) / 1e6).tolist()      # each 30 MB tensor is its own bucket
    [30.0, 30.0, 30.0, 30.0]
    """
    sizes = _sizes("param_bytes", param_bytes)
    return _bucket_totals(sizes, sizes, bucket_cap_bytes, first_bucket_bytes, small_bucket_last)[0]


def _bucket_totals(
    param_bytes: np.ndarray,
    param_counts: np.ndarray,
    bucket_cap_bytes: float,
    first_bucket_bytes: float,
    small_bucket_last: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, parameters) of each bucket in reduction order, summed in one vectorized pass.

    Each bucket is a contiguous run of the gradient-ready order, so the per-bucket sums are one
    ``np.add.reduceat`` over the parameters taken in that order.
    """
    sizes = _sizes("param_bytes", param_bytes)
    offsets = _bucket_offsets(sizes, bucket_cap_bytes, first_bucket_bytes, small_bucket_last)
    return (
        np.add.reduceat(sizes[::-1].copy(), offsets),
        np.add.reduceat(np.asarray(param_counts, dtype=float)[::-1].copy(), offsets),
    )


@functools.lru_cache(maxsize=32)
def _default_bucket_totals(
    params: float,
    gradient_bytes_per_param: float,
    bucket_cap_bytes: float,
    first_bucket_bytes: float,
    small_bucket_last: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_bucket_totals` of ``params`` in equal tensors of at most DEFAULT_TENSOR_PARAMS.

    A pure function of its scalar arguments, cached (read-only arrays): a flip search or a
    scaling table re-evaluates the step on the same buckets many times.
    """
    pieces = max(1, math.ceil(params / DEFAULT_TENSOR_PARAMS))
    counts = np.full(pieces, params / pieces)
    out = _bucket_totals(
        counts * gradient_bytes_per_param,
        counts,
        bucket_cap_bytes,
        first_bucket_bytes,
        small_bucket_last,
    )
    for a in out:
        a.flags.writeable = False
    return out


# --- the step ----------------------------------------------------------------------------------
def _link_number(name: str, value: object, limit: str, unit: str) -> float:
    """A number of the one-link step's link in its CLI option's range
    (``_limits.LIMITS[limit]``, in its words), else ValueError naming ``name``; text or an
    array is refused as no number (:func:`_number`, with the value the text means)."""
    from ._limits import LIMITS  # lazy: a layer above the formulas

    if not isinstance(value, bool) and isinstance(value, int | float | np.number | np.ndarray):
        if np.ndim(value) == 0:
            LIMITS[limit].check(name, value)
    return _number(name, value, positive=limit == "bandwidth", unit=unit)


def _default_allreduce_fn(
    ranks: int, bandwidth_bytes_per_s: float | None, latency_s: float, algorithm: str
) -> Callable[[np.ndarray], np.ndarray]:
    if bandwidth_bytes_per_s is None:
        raise ValueError("bandwidth_bytes_per_s: required unless allreduce_time_fn is given")
    # the one-link step's link in `step --bandwidth/--latency`'s ranges (1 MB/s..1 PB/s, 0..1 s):
    # a bare 50 (meant as 50 GB/s) priced a 551-million-second step, 1e-300 B/s overflowed
    # with numpy's warnings, a 5 s latency was taken
    bw = _link_number("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "bandwidth", "B/s")
    alpha = _link_number("latency_s", latency_s, "latency", "s")
    from . import collectives  # the textbook model (lazy: collectives is a sibling formula module)

    # the name is checked by allreduce_time itself (ValueError listing the valid ones)
    name = cast("collectives.Algorithm", algorithm)
    return lambda b: np.asarray(collectives.allreduce_time(b, ranks, bw, alpha, name))


def _step_buckets(
    params: object,
    layer_param_counts: Sequence[float] | None,
    gbytes: float,
    cap: float,
    first: float,
    small_bucket_last: bool,
) -> tuple[float, np.ndarray, np.ndarray]:
    """(parameters, bytes and parameters of each bucket in reduction order) of :func:`ddp_step`:
    the given tensor list, or ``params`` in equal tensors (cached), refused above
    :data:`MAX_BUCKETS` / :data:`MAX_TENSORS` before allocating."""
    if layer_param_counts is not None:
        counts = _sizes("layer_param_counts", layer_param_counts)
        p = float(counts.sum())
        if params is not None and not math.isclose(float(params), p, rel_tol=1e-6):  # type: ignore[arg-type]
            raise ValueError(f"params: {params!r} differs from sum(layer_param_counts) = {p!r}")
        b_bytes, b_params = _bucket_totals(
            counts * gbytes, counts, cap, first, bool(small_bucket_last)
        )
        return p, b_bytes, b_params
    p = _number("params", params, positive=True)
    pieces = p / DEFAULT_TENSOR_PARAMS
    est = min(pieces, p * gbytes / cap + 1)  # floats: may be inf, compared only
    if pieces > MAX_TENSORS or est > MAX_BUCKETS:
        raise ValueError(
            f"params: {p:.3g} parameters make about {min(pieces, est):.3g} gradient buckets "
            f"of at most {cap:.3g} B; at most {MAX_BUCKETS:,} buckets ({MAX_TENSORS:,} "
            "tensors) are scheduled: raise `bucket_cap_bytes` or pass `layer_param_counts`"
        )
    b_bytes, b_params = (
        a.copy() for a in _default_bucket_totals(p, gbytes, cap, first, bool(small_bucket_last))
    )
    return p, b_bytes, b_params


def _micro_batch_s(
    p: float,
    compute_time_s: float | None,
    tokens_per_gpu: float | None,
    peak_flops: float | None,
    mfu: float | None,
) -> float:
    """Compute of one micro-batch [s]: the measured time, or ``6 P T / (peak x MFU)``."""
    if compute_time_s is not None:
        if any(v is not None for v in (tokens_per_gpu, peak_flops, mfu)):
            raise ValueError(
                "compute_time_s: give either compute_time_s or "
                "(tokens_per_gpu, peak_flops, mfu), not both"
            )
        return _number("compute_time_s", compute_time_s, positive=True, unit="s")
    if any(v is None for v in (tokens_per_gpu, peak_flops, mfu)):
        raise ValueError(
            "compute_time_s: missing; give it, or all of tokens_per_gpu, peak_flops and mfu"
        )
    tok = _number("tokens_per_gpu", tokens_per_gpu, positive=True, unit="tokens")
    peak = _number("peak_flops", peak_flops, positive=True, unit="FLOP/s")
    from ._limits import LIMITS  # lazy: a layer above the formulas

    LIMITS["peak_flops"].check("peak_flops", peak_flops)  # 989 meant 989T: the CLI's 1e9..1e18
    # the one range of every surface (the CLI's --mfu, Scenario, the sweep), in its words
    try:  # what is no number (text, an array, a bool) is refused as out of that range
        u = math.nan if isinstance(mfu, bool) else float(mfu)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        u = math.nan
    if not LIMITS["mfu"].holds(u):
        raise ValueError(f"mfu: must be {LIMITS['mfu'].rule}, got {mfu!r}")
    return FLOPS_PER_PARAM_TOKEN * p * tok / (peak * u)


def _bucket_times(fn: Callable[[np.ndarray], ArrayLike], b_bytes: np.ndarray) -> np.ndarray:
    """Each bucket's all-reduce time [s] from ``fn``, checked (one finite time >= 0 each)."""
    b_comm = np.asarray(fn(b_bytes), dtype=float).reshape(-1)
    if b_comm.shape != b_bytes.shape or not np.all(np.isfinite(b_comm)) or np.any(b_comm < 0):
        raise ValueError(
            f"allreduce_time_fn: must return one finite time >= 0 per bucket; got "
            f"{b_comm!r} for {b_bytes.size} buckets"
        )
    return b_comm


@finite_result("step time")
def ddp_step(
    params: float | str | None,
    ranks: int,
    compute_time_s: float | None = None,
    bandwidth_bytes_per_s: float | None = None,
    latency_s: float = 0.0,
    gradient_bytes_per_param: float = 2.0,
    bucket_cap_bytes: float = DEFAULT_BUCKET_CAP_BYTES,
    first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES,
    accumulation: int = 1,
    no_sync: bool = True,
    overlap: bool = True,
    allreduce_time_fn: Callable[[np.ndarray], ArrayLike] | None = None,
    layer_param_counts: Sequence[float] | None = None,
    step_overhead_s: float = 0.0,
    *,
    tokens_per_gpu: float | None = None,
    peak_flops: float | None = None,
    mfu: float | None = None,
    algorithm: str = "ring",
    small_bucket_last: bool = False,
    comm_contention: float = 0.0,
    timeline: bool = True,
    arch: object = None,
    tail_s: float = 0.0,
) -> DDPStep:
    r"""Time of one DDP optimizer step, with its timeline of compute and bucket all-reduces.

    The lesson's one-link surface of the strategy road (module docstring): the arguments are
    checked here, the buckets and their all-reduce times made here, and the step is scheduled
    and accumulated by :mod:`costmodel.strategy` (``ddp.micro_batch_tasks``,
    ``engine.run``, ``accumulate.accumulate``), the same functions
    :func:`costmodel.strategy.strategy_step` calls for ``strategy="ddp"``; given the same
    compute, buckets, all-reduce times and host overhead both give the same step
    (``tests/test_strategy.py``).

    Parameters
    ----------
    params : float or str
        Parameters ``P`` [-] (the sum of ``layer_param_counts`` when those are given), or an
        architecture name (``"llama-2-7b"``, as ``arch``); None with ``arch``.
    arch : str or Architecture, optional
        A named architecture (``costmodel.architecture``): its parameter count and its real
        tensor list in registration order (``layer_param_counts``), so the buckets are
        PyTorch's. Compute stays ``6 P T`` here (``Scenario`` uses the architecture's FLOPs),
        with ``P`` the parameters a token passes through: a mixture of experts' active ones
        (:attr:`~costmodel.architecture.Architecture.active_params`, as the cluster step
        prices it), while the gradients all-reduced are every parameter's.
    ranks : int
        Data-parallel ranks ``N`` [-], whole, 1..1,000,000,000 (every command's ``--ranks``).
    step_overhead_s : float
        DDP's host-side time per synced micro-batch after its all-reduces [s] (default 0, the
        lesson's step; the engine and Scenario pass :func:`costmodel.compute.ddp_step_overhead_s`
        from two ranks up: one rank is plain training, no DDP wrapper). Kept on one rank when
        given (a DDP-wrapped model at world size 1, as PyTorch's DDP benchmark measures); the
        one-GPU reference of ``N > 1`` ranks is plain training, without it.
    tail_s : float
        Serial time after the step's last all-reduce that is neither compute nor communication
        [s] (default 0, the lesson's step; Scenario passes the engine's optimizer step and
        synchronisation loss, :func:`costmodel.strategy.step.step_tail_s`): in the step time,
        not in the exposed communication. One GPU runs it too: the scaling efficiency's
        one-GPU step is compute + tail + host time (DDP adds no synchronisation loss, so a DDP
        tail is its optimizer step).
    compute_time_s : float, optional
        Measured forward + backward time of one micro-batch on one GPU [s]. Otherwise
        ``6 P T / (peak x MFU)`` from ``tokens_per_gpu`` (``T``, per micro-batch), ``peak_flops``
        [FLOP/s] and ``mfu`` (0-1].
    bandwidth_bytes_per_s, latency_s, algorithm
        Per-direction bandwidth [B/s], latency per step [s] and algorithm of the default
        all-reduce model, ``collectives.allreduce_time`` (ignored when ``allreduce_time_fn`` is
        given).
    gradient_bytes_per_param : float
        Bytes of each gradient on the wire [B] (2 = bf16, 1 = fp8, 4 = fp32).
    bucket_cap_bytes, first_bucket_bytes, small_bucket_last
        Bucketing, see :func:`bucket_assignment`.
    accumulation : int
        Micro-batches per optimizer step ``A``.
    no_sync : bool
        Skip the all-reduce on the first ``A - 1`` micro-batches (``DDP.no_sync()``).
    overlap : bool
        Start each bucket's all-reduce as soon as it is ready (DDP); ``False`` starts them all
        after backward.
    comm_contention : float
        ``c`` in [0, 1]: backward runs at rate ``1 - c`` while an all-reduce is in flight
        (module docstring); 0 = no contention (compute at full speed beside it), 1 = compute stalls
        during communication.
    timeline : bool
        Build the timeline; ``False`` leaves it empty (every time and total is the same): for
        searches that re-evaluate the step many times and read only the totals.
    allreduce_time_fn : callable, optional
        ``f(bucket_bytes: ndarray) -> seconds``, e.g. ``predict.allreduce_time_fn(cluster)``.
    layer_param_counts : sequence of float, optional
        Parameters of each tensor in registration order. Default: ``P`` in equal tensors of at
        most ``DEFAULT_TENSOR_PARAMS`` (a 4096 x 4096 matrix).

    Returns
    -------
    DDPStep

    Notes
    -----
    Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
    VLDB 13(12), arXiv:2006.15704, sections 3.2.3-3.2.4 (bucketing, overlap, no_sync); bucket
    rules from ``torch/csrc/distributed/c10d/reducer.cpp`` (:func:`bucket_assignment`).

    Examples
    --------
    The lesson's practice problem 1 (7B model, bf16 gradients, 64 GPUs at 50 GB/s, 400 ms):

    >>> s = ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    >>> round(s.perfect_overlap_step_s, 2), s.exposed_comm_s >= 0.15
    (0.55, True)
    >>> ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9,
    ...          gradient_bytes_per_param=1).bound                      # fp8 gradients
    'compute'

    Llama-2-7B's real tensors make 226 buckets (equal 2**24-parameter pieces would make 402):

    >>> ddp_step("llama-2-7b", 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9).buckets
    226
    """
    flops_params: float | None = None  # the parameters a token's FLOPs count, when not P
    if isinstance(params, str):
        from .architecture import arch_of_params_text

        arch = arch_of_params_text(params) if arch is None else arch
        params = None
    if arch is not None:
        from .architecture import resolve_params  # lazy: reads the presets folder

        if layer_param_counts is not None:
            raise ValueError("layer_param_counts: give arch or layer_param_counts, not both")
        params, a = resolve_params(params, arch)  # type: ignore[arg-type]
        layer_param_counts = a.tensor_sizes  # type: ignore[union-attr]
        if a.moe:  # type: ignore[union-attr]
            # a token passes through its k experts, not all of them: 6 P_active T FLOPs
            flops_params = float(a.active_params)  # type: ignore[union-attr]
    elif params is None and layer_param_counts is None:
        raise ValueError("params: give a parameter count, `arch` or `layer_param_counts`")
    n = _ranks(ranks)
    a_steps = _whole("accumulation", accumulation)
    if a_steps > MAX_ACCUMULATION:
        raise ValueError(
            f"accumulation: {accumulation!r} is above the largest accepted, {MAX_ACCUMULATION}"
        )
    no_sync, overlap = flag("no_sync", no_sync), flag("overlap", overlap)
    small_bucket_last, timeline = (
        flag("small_bucket_last", small_bucket_last),
        flag("timeline", timeline),
    )
    from ._limits import LIMITS  # lazy: a layer above the formulas

    try:  # the one range of every surface (step --contention, the sweep), in its words
        contention = math.nan if isinstance(comm_contention, bool) else float(comm_contention)
    except (TypeError, ValueError):
        contention = math.nan
    if not 0.0 <= contention <= 1.0:  # NaN too
        rule = LIMITS["contention"].rule
        raise ValueError(f"comm_contention: must be {rule}, got {comm_contention!r}")
    gbytes = _number("gradient_bytes_per_param", gradient_bytes_per_param, positive=True, unit="B")

    # fp8 1 .. fp64 8 B: the CLI's --gradient-bytes range (1e300 answered a 2.4e299 s step)
    LIMITS["gradient_bytes"].check("gradient_bytes_per_param", gradient_bytes_per_param)
    cap = _number("bucket_cap_bytes", bucket_cap_bytes, positive=True, unit="B")
    first = _number("first_bucket_bytes", first_bucket_bytes, positive=True, unit="B")
    p, b_bytes, b_params = _step_buckets(
        params, layer_param_counts, gbytes, cap, first, small_bucket_last
    )
    micro_s = _micro_batch_s(
        p if flops_params is None else flops_params, compute_time_s, tokens_per_gpu, peak_flops, mfu
    )
    fn = allreduce_time_fn or _default_allreduce_fn(n, bandwidth_bytes_per_s, latency_s, algorithm)
    b_comm = _bucket_times(fn, b_bytes)

    # DDP's host-side time per synced micro-batch (autograd hooks, bucket copies), after its
    # all-reduces: costmodel.compute.ddp_step_overhead_s (0 unless given)
    overhead = _number("step_overhead_s", step_overhead_s, positive=False, unit="s")
    syncs = 1 if no_sync else a_steps
    n_bars = 2 * a_steps + syncs * b_bytes.size
    if timeline and n_bars > MAX_TIMELINE_BARS:
        raise ValueError(
            f"accumulation: {a_steps} micro-batches x {b_bytes.size} buckets make {n_bars:,} "
            f"timeline bars, above the {MAX_TIMELINE_BARS:,} accepted; pass timeline=False"
        )

    # The step itself is the strategy road's: DDP's micro-batch tasks (costmodel.strategy.ddp),
    # scheduled by the one engine and joined over the accumulation (costmodel.strategy.accumulate)
    from .strategy import ddp as sddp
    from .strategy.accumulate import accumulate
    from .strategy.engine import Task
    from .strategy.step import exposed_time_s, one_gpu_step_s, scaling_efficiency

    fwd_s = micro_s * (1.0 - BACKWARD_FRACTION)
    bwd_s = micro_s * BACKWARD_FRACTION
    ready = sddp.ready_fraction(b_params, p)

    def micro(synced: bool, m: int) -> Sequence[Task]:
        return sddp.micro_batch_tasks(
            fwd_s,
            bwd_s,
            ready,
            b_bytes,
            b_comm,
            ranks=n,
            synced=synced,
            overlap=overlap,
            micro_batch=m,
        )

    steps = accumulate(
        micro(True, a_steps - 1),
        micro(not no_sync, 0) if a_steps > 1 else (),
        a_steps,
        contention,
        overhead_s=overhead,
        mid_overhead_s=0.0 if no_sync else overhead,
    )
    bars = _timeline_bars(steps.placements(), steps) if timeline else ()
    opt = _number("tail_s", tail_s, positive=False, unit="s")
    compute, comm, step_time = steps.compute_s, steps.comm_s, steps.step_s + opt
    per_sync_comm = float(b_comm.sum())
    perfect = (a_steps - syncs) * micro_s + syncs * max(micro_s, per_sync_comm)
    # one rank: the step is its own one-GPU reference (no rounding residue in its efficiency);
    # more: plain training on one GPU, no DDP wrapper and so no host time (one_gpu_step_s),
    # the engine's reference
    t1 = step_time if n == 1 else one_gpu_step_s(compute, opt)
    return DDPStep(
        compute_s=compute,
        comm_s=comm,
        # DDP's host time (hooks, bucket copies) is its own figure, not exposed communication
        exposed_comm_s=exposed_time_s(step_time, opt + compute + steps.host_s),
        step_time_s=step_time,
        bound="comms" if comm > compute else "compute",
        efficiency=scaling_efficiency(t1, step_time),
        perfect_overlap_step_s=perfect,
        perfect_overlap_efficiency=scaling_efficiency(t1, perfect + opt + steps.host_s),
        serial_step_s=compute + comm,
        ranks=n,
        accumulation=a_steps,
        syncs=syncs,
        bucket_bytes=tuple(b_bytes.tolist()),
        bucket_comm_s=tuple(b_comm.tolist()),
        timeline=bars,
        host_overhead_s=steps.host_s,
        one_gpu_step_s=t1,
    )


def _timeline_bars(
    placements: Sequence[tuple[float, Any, int]], steps: Any = None
) -> tuple[Interval, ...]:
    """The lesson's bars from the engine's schedules: per micro-batch a forward bar, one
    backward bar (its bucket segments joined), an ``allreduce`` bar per bucket and a ``host``
    bar for DDP's host time after it (``steps``: the accumulated step, when it has one)."""
    bars: list[Interval] = []
    last = len(placements) - 1
    for j, (t0, sched, m) in enumerate(placements):
        if steps is not None:
            h = steps.overhead_s if j == last else steps.mid_overhead_s
            if h > 0:
                end = t0 + sched.step_s
                bars.append(Interval("host", end, end + h, f"DDP host overhead {m}", micro_batch=m))
        starts, ends = sched.starts_s.tolist(), sched.ends_s.tolist()
        comp = [i for i, t in enumerate(sched.tasks) if not t.is_comm]
        bars.append(
            Interval("forward", t0 + starts[0], t0 + ends[0], f"forward {m}", micro_batch=m)
        )
        bars.append(
            Interval(
                "backward",
                t0 + starts[comp[1]],
                t0 + ends[comp[-1]],
                f"backward {m}",
                micro_batch=m,
            )
        )
        bars.extend(
            Interval("allreduce", t0 + starts[i], t0 + ends[i], t.label, t.message_bytes, m)
            for i, t in enumerate(sched.tasks)
            if t.is_comm
        )
    return tuple(bars)


ADVICE_TIE_REL = 0.005
"""Exposed times within 0.5 % of the least one (or within 0.05 % of the step) are a tie for the
bucket_cap advisor: a difference that size is below what the model resolves, so the advice keeps
the cap in use (or the smaller cap) instead of a larger bucket for the same time."""


@dataclass(frozen=True)
class BucketCapSweep:
    """Result of :func:`bucket_cap_sweep`: one entry per cap, in the order given [B, s]."""

    caps_bytes: tuple[float, ...]
    exposed_comm_s: tuple[float, ...]  # step - compute at each cap
    comm_s: tuple[float, ...]  # sum of the all-reduce times at each cap
    step_time_s: tuple[float, ...]
    buckets: tuple[int, ...]
    best_index: (
        int  # least exposed_comm_s; ties (ADVICE_TIE_REL) keep the cap in use or the smallest
    )
    tie_s: float = 0.0  # exposed times within tie_s of the least one are a tie [s]

    @property
    def best_cap_bytes(self) -> float:
        """The cap that minimises the exposed communication [B]."""
        return self.caps_bytes[self.best_index]

    def tie_text(self) -> str:
        """How the best cap is chosen among near-equal ones, in the words every surface shows
        (the CLI's advice line, the step page's advisor): ``"ties within 254 µs keep the
        current or smaller cap"``.

        >>> BucketCapSweep((1.0,), (0.0,), (0.0,), (1.0,), (1,), 0, tie_s=254e-6).tie_text()
        'ties within 254 µs keep the current or smaller cap'
        """
        return f"ties within {format_duration(self.tie_s)} keep the current or smaller cap"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "best_cap_bytes": self.best_cap_bytes}

    @classmethod
    def from_steps(
        cls,
        caps_bytes: np.ndarray,
        steps: Sequence[DDPStep],
        prefer_cap_bytes: float | None = None,
    ) -> BucketCapSweep:
        """The sweep of one :class:`DDPStep` per cap; the best is the least exposed time, where
        caps within :data:`ADVICE_TIE_REL` of the least exposed time (or of the step) are a
        tie: a tie keeps ``prefer_cap_bytes`` (the cap in use) when it is among them, else the
        smallest tied cap. A larger bucket is never advised for the same time."""
        exposed = np.array([s.exposed_comm_s for s in steps], dtype=float)
        comm = np.array([s.comm_s for s in steps], dtype=float)
        caps = np.asarray(caps_bytes, float)
        step = np.array([s.step_time_s for s in steps], dtype=float)
        low = float(exposed.min())
        tol = max(ADVICE_TIE_REL * low, ADVICE_TIE_REL * 0.1 * float(step.min()), 1e-9)
        tied = np.flatnonzero(exposed <= low + tol)
        best = int(tied[np.argmin(caps[tied])])
        if prefer_cap_bytes is not None:
            same = tied[np.isclose(caps[tied], float(prefer_cap_bytes), rtol=0, atol=0.5)]
            if same.size:
                best = int(same[0])
        return cls(
            caps_bytes=tuple(float(c) for c in caps_bytes),
            exposed_comm_s=tuple(exposed.tolist()),
            comm_s=tuple(comm.tolist()),
            step_time_s=tuple(step.tolist()),
            buckets=tuple(s.buckets for s in steps),
            best_index=best,
            tie_s=tol,
        )


def advice_caps(caps_bytes: Sequence[float] | None) -> np.ndarray:
    """The caps a bucket_cap sweep tries [B], checked (default :data:`ADVICE_CAPS_BYTES`)."""
    caps = np.asarray(ADVICE_CAPS_BYTES if caps_bytes is None else caps_bytes, dtype=float)
    if caps.ndim != 1 or caps.size == 0 or not np.all(np.isfinite(caps)) or np.any(caps <= 0):
        raise ValueError("caps_bytes: must be a non-empty list of finite caps > 0 [B]")
    if caps.size > 10_000:
        raise ValueError(f"caps_bytes: at most 10000 caps, got {caps.size}")
    return caps


def bucket_cap_sweep(
    caps_bytes: Sequence[float] | None = None, **step_kwargs: object
) -> BucketCapSweep:
    r"""Exposed communication of one DDP step against ``bucket_cap``; marks the best cap.

    Each cap re-runs :func:`ddp_step` with ``bucket_cap_bytes=cap`` and every other argument
    from ``step_kwargs`` (``timeline=False``: totals only). The exposed communication
    ``step - compute`` trades two effects (Li et al. 2020, section 3.2.3, fig. 2(a)): small
    buckets start all-reducing early and leave only a small last bucket after backward, but
    pay the per-collective latency ``alpha`` once per bucket; large buckets pay it rarely but
    leave more of the gradient to be sent after backward. The answer is
    ``argmin_cap exposed(cap)`` over the grid (ties: the smaller total all-reduce time, then
    the smaller cap), not a closed form: the NCCL model's time is piecewise in size.

    Speed: the bucket assignment is read off one cumulative sum of the tensor list per cap
    (whole-byte sizes; :func:`_bucket_offsets`), the schedule at ``comm_contention = 0`` the
    engine's numpy road for a micro-batch's backward and bucket chain
    (:func:`costmodel.strategy.engine._list_schedule`, the loop's floats), else the event
    loop; a memoized ``allreduce_time_fn`` makes the collective model see each distinct bucket
    size once.

    Parameters
    ----------
    caps_bytes : sequence of float, optional
        Caps to try [B] (default :data:`ADVICE_CAPS_BYTES`, 1 to 200 MiB).
    **step_kwargs
        Arguments of :func:`ddp_step` (not ``bucket_cap_bytes``).

    Examples
    --------
    A huge per-collective latency (1 s) against a fast link: the fewest buckets win.

    >>> sw = bucket_cap_sweep([2**20, 25 * 2**20, 200 * 2**20], params=1e9, ranks=8,
    ...                       compute_time_s=0.1, allreduce_time_fn=lambda b: 1.0 + b / 1e11)
    >>> sw.best_cap_bytes == 200 * 2**20
    True
    """
    if "bucket_cap_bytes" in step_kwargs:
        raise ValueError("bucket_cap_bytes: swept here; give caps_bytes instead")
    caps = advice_caps(caps_bytes)
    steps = [
        ddp_step(bucket_cap_bytes=cap, timeline=False, **step_kwargs)  # type: ignore[arg-type]
        for cap in caps.tolist()
    ]
    return BucketCapSweep.from_steps(caps, steps)
