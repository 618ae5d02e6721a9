"""Sweep grids: the axes, their value syntax (lists, ranges with units), the checks on a grid
(limits, consistency of preset/link axes) and the categorical combinations it expands to.

Nothing here evaluates a row; :mod:`costmodel.sweep.evaluate` does.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import textfile, units
from .._limits import CHOICES, LIMITS, LINK_RANKS, refusal

KINDS = ("collective", "memory", "step")
"""What a sweep evaluates: collective times (per preset or per raw link), memory per GPU, or
a training step (:func:`costmodel.strategy.strategy_step`, the function of ``costmodel step``)."""

MAX_STEP_ROWS = 100_000
"""Most rows a step sweep may evaluate: each row is one :func:`~costmodel.strategy.strategy_step`
(its schedule of buckets or wrap units). Rows are priced in batches on the advisor's road
(:func:`~costmodel.sweep.evaluate._step_rows`): 0.5 ms a row where rows share their setup (a
``strategy=all`` sweep's layouts: 8,760 rows in 4 s, ``benchmarks/bench_sweep.py
--step-all-large``), 2-15 ms where each row is a new setting (measured 2026-12-03 on one core;
40 ms one row at a time before), so 1e5 rows is at most about 25 minutes. Checked from the axis
lengths before any evaluation."""

MAX_ARCH_MEMORY_ROWS = 1_000_000
"""Most rows a memory sweep over named architectures may evaluate: each row is one
:func:`~costmodel.strategy.memory.stage_memory` (the activations of the architecture's layers,
about 1 ms), so 1e6 rows is about a quarter of an hour. Bare parameter counts are vectorised
and bounded by :data:`MAX_GRID_ROWS` only."""

MAX_AXIS_VALUES = 100_000
"""Most values one grid axis may hold (a range is counted before it is expanded)."""

MAX_GRID_ROWS = 1_000_000_000
"""Most rows a grid may evaluate to (streamed by :func:`sweep_to_file` in chunks; at a few
million rows per second this is minutes). Checked from the axis lengths before any allocation."""

MAX_COUNT = 10**9
"""Largest value of an integer axis (ranks, nodes, gpus_per_node, ...): beyond any cluster, and
far inside int64 so the evaluation's integer arrays cannot overflow."""


# --- axes ------------------------------------------------------------------------------------
def _parse_int(text: Any, *, name: str) -> int:
    return units.parse_int(text, name=name, maximum=MAX_COUNT)


def _parse_tokens(text: Any, *, name: str) -> int:
    """A token count (``sequence_length``, ``tokens_per_gpu``) in the grammar of every token
    count: ``8k``, ``8Ki`` (:func:`costmodel.units.parse_tokens`)."""
    value = units.parse_tokens(text, name=name)
    if value > MAX_COUNT:
        raise ValueError(f"{name}: {text!r} is above the largest value accepted, {MAX_COUNT}")
    return value


def _parse_global_tokens(text: Any, *, name: str) -> int:
    """A global batch in tokens per step (``global_tokens``: ``4Mi``, ``4194304``) in the
    grammar of every token count (:func:`costmodel.units.parse_tokens`); its range, 1..1e16
    whole tokens, is ``costmodel step --global-tokens``'s (``LIMITS["global_tokens"]``, checked
    with the other limited axes)."""
    return units.parse_tokens(text, name=name)


def _parse_token_budget(text: Any, *, name: str) -> float:
    """Tokens to train (``2T``, ``300B``; :func:`costmodel.units.parse_tokens`), within the one
    limit of ``costmodel train --tokens`` (``LIMITS["tokens"]``)."""
    LIMITS["tokens"].check(name, text)
    return float(units.parse_tokens(text, name=name) if isinstance(text, str) else text)


def _parse_price(text: Any, *, name: str) -> float:
    """A price of one GPU-hour [USD] within ``costmodel train --usd-per-gpu-hour``'s limit."""
    value = _parse_float(text, name=name)
    LIMITS["usd_per_gpu_hour"].check(name, value)
    return value


def _parse_float(text: Any, *, name: str) -> float:
    if isinstance(text, bool | np.bool_):  # TOML ``mfu = true`` is not the number 1
        raise ValueError(f"{name}: expected a number, got a bool ({text!r})")
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: cannot parse {text!r} as a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number >= 0, got {text!r}")
    return value


def _parse_power(text: Any, *, name: str) -> float:
    """A board power limit [W] as a number, its range left to the grid's check: each preset
    GPU's own [minimum, datasheet maximum] (:func:`costmodel.hardware.check_power_limit_w`, as
    ``costmodel step --power-limit-w`` says it), which refuses a NaN, an infinity or a negative
    power in those words (a NaN is no power in the range), not a bare ">= 0"."""
    if isinstance(text, bool | np.bool_):
        raise ValueError(f"{name}: expected a number, got a bool ({text!r})")
    try:
        return float(text)
    except (TypeError, ValueError):  # '500W': the field, its unit and range, as --power-limit-w
        from ..hardware import power_limit_text_refusal

        raise power_limit_text_refusal(name, text) from None


def _parse_str(text: Any, *, name: str) -> str:
    s = str(text).strip()
    if not s:
        raise ValueError(f"{name}: empty value")
    return s


def _parse_bool(text: Any, *, name: str) -> bool:
    return units.parse_bool(text, name=name)  # only true/false: 'no' or '1' is refused


@dataclass(frozen=True)
class Axis:
    """One grid axis: its canonical name, parser, kind of default step and output column."""

    name: str
    parse: Callable[..., Any]
    numeric: bool
    integer: bool = False
    column: str = ""
    aliases: tuple[str, ...] = ()


# axes that two or three sweep kinds share: one definition each (the same name, parser, column
# and aliases in every kind that takes it)
_PRESET = Axis("preset", _parse_str, False, column="preset", aliases=("cluster", "presets"))
_MODEL = Axis("model", _parse_str, False, column="model")
_NODES = Axis("nodes", _parse_int, True, integer=True, column="nodes")
# the collective and step sweeps take the same node slice
_GPUS_PER_NODE = Axis(
    "gpus_per_node", _parse_int, True, integer=True, column="gpus_per_node", aliases=("gpn",)
)
# the collective and step sweeps read a preset's rank count alike: N ranks on nodes of G GPUs
# are one node's slice of N GPUs (N <= G) or N / G whole nodes
# (costmodel.sweep.evaluate.ranks_slice, every command's --cluster NAME --ranks N)
_RANKS = Axis("ranks", _parse_int, True, integer=True, column="ranks", aliases=("gpus", "n"))
# the memory and step sweeps: the memory's overheads (costmodel memory/step --cuda-context,
# --fragmentation), added to memory_GB and so to fits, as strategy_memory adds them
_CUDA_CONTEXT = Axis(
    "cuda_context",
    units.parse_bytes,
    True,
    column="cuda_context_bytes",
    aliases=("cuda_context_bytes",),
)
_FRAGMENTATION = Axis("fragmentation", _parse_float, True, column="fragmentation")
# the memory and step sweeps: a named architecture (or a count) and what sizes its activations
_ARCH = Axis("arch", _parse_str, False, column="arch", aliases=("archs", "architecture"))
_RECIPE = Axis("recipe", _parse_str, False, column="recipe", aliases=("recipes",))
_RECOMPUTE = Axis("recompute", _parse_str, False, column="recompute")
_LOSS = Axis("loss", _parse_str, False, column="loss")
_FLASH = Axis("flash_attention", _parse_bool, False, column="flash_attention", aliases=("flash",))
_SEQUENCE_LENGTH = Axis(
    "sequence_length",
    _parse_tokens,
    True,
    integer=True,
    column="sequence_length",
    aliases=("seq", "sequence"),
)
_MICRO_BATCH = Axis(
    "micro_batch",
    _parse_int,
    True,
    integer=True,
    column="micro_batch",
    aliases=("mb", "micro_batch_size"),
)
_PARAMS = Axis(
    "params", units.parse_count, True, column="params", aliases=("model_size", "parameters")
)
# the memory and step sweeps: the data-parallel layout, as costmodel memory/step --strategy,
# --group-size and --reshard/--no-reshard take it
_STRATEGY = Axis("strategy", _parse_str, False, column="strategy", aliases=("strategies",))
#: the layout by its ZeRO stage (every command's --zero): a memory sweep's column; a step
#: sweep reads it as its stage's strategy (:func:`_step_stage_as_strategy`)
_ZERO_STAGE = Axis(
    "zero_stage", _parse_int, False, integer=True, column="zero_stage", aliases=("zero",)
)
_RESHARD = Axis(
    "reshard_after_forward",
    _parse_bool,
    False,
    column="reshard_after_forward",
    aliases=("reshard",),
)
# ddp's gradient_as_bucket_view (costmodel memory/step --gradient-as-bucket-view)
_BUCKET_VIEW = Axis(
    "gradient_as_bucket_view",
    _parse_bool,
    False,
    column="gradient_as_bucket_view",
    aliases=("bucket_view",),
)
# the layout's dtypes and bucket (costmodel step/memory --param-dtype, --grad-dtype, --bucket):
# one definition for the step and memory sweeps (a setting of each block in a memory sweep)
_PARAM_DTYPE = Axis("param_dtype", _parse_str, False, column="param_dtype")
_GRAD_DTYPE = Axis("grad_dtype", _parse_str, False, column="grad_dtype")
_BUCKET_CAP = Axis(
    "bucket_cap",
    units.parse_bytes,
    True,
    column="bucket_cap_bytes",
    aliases=("bucket", "bucket_cap_bytes"),
)
_GROUP_SIZE = Axis(
    "group_size",
    _parse_int,
    True,
    integer=True,
    column="group_size",
    aliases=("group",),
)

AXES: dict[str, dict[str, Axis]] = {
    "collective": {
        a.name: a
        for a in (
            _PRESET,
            _MODEL,
            Axis("op", _parse_str, False, column="op", aliases=("ops", "collective")),
            Axis(
                "algorithm", _parse_str, False, column="algorithm", aliases=("algorithms", "algo")
            ),
            Axis("protocol", _parse_str, False, column="protocol_requested", aliases=("proto",)),
            # how the run is launched (collective --gpus-per-process, --nvls/--no-nvls,
            # --collnet): predict_collective's keywords, a setting of each block
            # (LAUNCH_AXES); the columns keep the names collective --json has always written
            Axis(
                "gpus_per_process",
                _parse_int,
                False,
                integer=True,
                column="gpus_per_process",
            ),
            Axis("nvls", _parse_bool, False, column="nvls"),
            Axis("collnet_enabled", _parse_bool, False, column="collnet", aliases=("collnet",)),
            _NODES,
            _GPUS_PER_NODE,
            _RANKS,
            Axis("bandwidth", units.parse_rate, True, column="bandwidth_GBps", aliases=("bw",)),
            Axis("latency", units.parse_duration, True, column="latency_s", aliases=("alpha",)),
            Axis("gamma", _parse_float, True, column="gamma_s_per_byte"),
            Axis(
                "size",
                units.parse_bytes,
                True,
                column="size_bytes",
                aliases=("sizes", "message", "message_bytes", "bytes"),
            ),
        )
    },
    "memory": {
        a.name: a
        for a in (
            _PRESET,
            _RECIPE,
            _ZERO_STAGE,
            # or the layout by name (costmodel memory --strategy, --group-size, --reshard)
            _STRATEGY,
            _GROUP_SIZE,
            _RESHARD,
            _BUCKET_VIEW,
            # a named architecture (costmodel memory --arch) and what sizes its activations,
            # spelled as the step sweep spells them
            _ARCH,
            _RECOMPUTE,
            _LOSS,
            _FLASH,
            Axis(
                "ranks",
                _parse_int,
                True,
                integer=True,
                column="ranks",
                aliases=("dp_ranks", "gpus", "n"),
            ),
            # or the ranks as nodes of the preset (costmodel memory --nodes): each row's ranks
            # are nodes x the preset's GPUs per node (its gpus_per_node slice)
            _NODES,
            _SEQUENCE_LENGTH,
            _MICRO_BATCH,
            # activation memory per GPU given in bytes (costmodel memory --activations)
            Axis(
                "activations",
                units.parse_bytes,
                True,
                column="activations_GB",
                aliases=("activations_bytes",),
            ),
            _PARAMS,
            # the card each row is checked against, in bytes (costmodel memory --gpu-memory)
            Axis(
                "gpu_memory",
                units.parse_bytes,
                True,
                column="gpu_memory_GB",
                aliases=("gpu_memory_bytes",),
            ),
            # settings of each block (a value per block, as recompute is), not per row
            _CUDA_CONTEXT,
            _FRAGMENTATION,
            # a slice of each preset's node (costmodel memory --gpus-per-node): hsdp's default
            # group and the layouts strategy=all lists; a setting of each block, not per row
            _GPUS_PER_NODE,
            # the layout's dtypes and bucket, as the step sweep names them (costmodel memory
            # --param-dtype, --grad-dtype, --bucket): settings of each block, not per row
            _PARAM_DTYPE,
            _GRAD_DTYPE,
            _BUCKET_CAP,
        )
    },
    "step": {
        a.name: a
        for a in (
            _PRESET,
            _MODEL,
            _ARCH,
            _STRATEGY,
            _ZERO_STAGE,  # read as its stage's strategy (_step_stage_as_strategy)
            _RECIPE,
            _RECOMPUTE,
            _LOSS,
            _FLASH,  # costmodel step --flash/--no-flash, as the memory sweep takes it
            _RESHARD,
            _BUCKET_VIEW,
            _PARAM_DTYPE,
            _GRAD_DTYPE,
            # the matmuls' compute precision (costmodel step --precision): bf16 or fp8
            Axis("precision", _parse_str, False, column="precision"),
            Axis("no_sync", _parse_bool, False, column="no_sync"),
            _NODES,
            _GPUS_PER_NODE,
            # or the GPUs as a rank count of the preset (costmodel step --cluster --ranks):
            # each row's nodes and GPUs per node from ranks_slice, not beside them
            _RANKS,
            _GROUP_SIZE,
            _PARAMS,
            _MICRO_BATCH,
            _SEQUENCE_LENGTH,
            Axis(
                "accumulation",
                _parse_int,
                True,
                integer=True,
                column="accumulation",
                aliases=("acc", "grad_accumulation"),
            ),
            # the global batch in tokens per step (costmodel step --global-tokens): / the
            # sequence_length gives the sequences per step, split over each row's GPUs as
            # micro_batch x accumulation, the one not given solved (micro-batch 1 when neither)
            Axis("global_tokens", _parse_global_tokens, True, integer=True, column="global_tokens"),
            Axis("mfu", _parse_float, True, column="mfu"),
            # measured compute per micro-batch (costmodel step --compute-time): replaces the MFU
            Axis(
                "compute_time",
                units.parse_duration,
                True,
                column="compute_time_s",
                aliases=("compute_time_s", "measured_compute"),
            ),
            # tokens per GPU and micro-batch (step --tokens-per-gpu): micro-batch x sequence
            Axis("tokens_per_gpu", _parse_tokens, True, column="tokens_per_gpu"),
            Axis(
                "comm_contention",
                _parse_float,
                True,
                column="comm_contention",
                aliases=("contention",),
            ),
            _BUCKET_CAP,
            Axis(
                "power_limit_w",
                _parse_power,
                True,
                column="power_limit_w",
                aliases=("power", "power_limit"),
            ),
            _CUDA_CONTEXT,
            _FRAGMENTATION,
            # time and cost to train (costmodel train --tokens, --price, --usd-per-gpu-hour):
            # settings of every row, not crossed (STEP_COST_AXES); a list of price presets
            # gives each row the one published for its GPU
            Axis("tokens", _parse_token_budget, False, column="tokens", aliases=("train_tokens",)),
            Axis("price", _parse_str, False, column="price", aliases=("prices",)),
            Axis(
                "usd_per_gpu_hour",
                _parse_price,
                False,
                column="usd_per_gpu_hour",
                aliases=("usd",),
            ),
        )
    },
}
"""Per sweep kind, the axes a grid may set, in evaluation order (the last varies fastest)."""

LAUNCH_AXES: dict[str, Any] = {"gpus_per_process": 1, "nvls": None, "collnet_enabled": False}
"""A collective sweep's launch on a preset, each with :func:`costmodel.predict.predict_collective`'s
default: GPUs one process drives (nccl-tests ``-g``), NVLink SHARP allowed (``NCCL_NVLS_ENABLE``;
None: the preset's) and IB SHARP (``NCCL_COLLNET_ENABLE=1``). Settings of each block, crossed like
``protocol``; a grid with any of them gives its rows the columns ``gpus_per_process``, ``nvls`` and
``collnet`` (the unset ones at these defaults), a grid with none the columns it always had."""

STEP_COST_AXES = ("tokens", "price", "usd_per_gpu_hour")
"""A step sweep's settings of time and cost to train (``costmodel train``'s ``--tokens``,
``--price`` and ``--usd-per-gpu-hour``): one value each for every row, not crossed. ``price``
may list several presets, at most one per GPU: each row takes the one published for its
cluster's GPU (a GPU is never priced at another GPU's rate)."""


_ON_A_PRESET = "a step sweep prices a cluster preset: "
STEP_LINK_OPTIONS: dict[str, str] = {
    "bandwidth": _ON_A_PRESET + "its links give the bandwidth",
    "latency": _ON_A_PRESET + "its links and the model give the latency",
    "gradient_bytes": _ON_A_PRESET + "grad_dtype gives the bytes per gradient",
    "peak_flops": _ON_A_PRESET + "its GPU and the precision give the peak",
}
"""``costmodel step``'s options of the one-link step (``--bandwidth`` and the rest of the
lesson's DDP step, :func:`costmodel.ddp.ddp_step`), which are no step sweep axes: a step sweep
row is the step on a cluster preset, whose links, GPU and ``grad_dtype`` give them, as ``step
--cluster`` refuses them. Each with what gives it, for the refusal of such an axis. (``ranks``
is an axis: a rank count of the preset, read as ``step --cluster --ranks N`` reads it, the
nodes and GPUs per node :func:`costmodel.sweep.evaluate.ranks_slice` gives.)"""


def _axis(kind: str, name: str) -> Axis:
    if kind not in AXES:
        raise ValueError(f"kind: unknown sweep kind {kind!r}; allowed: {', '.join(KINDS)}")
    key = name.strip().lower().replace("-", "_")
    for axis in AXES[kind].values():
        if key == axis.name or key in axis.aliases:
            return axis
    allowed = ", ".join(AXES[kind])
    raise ValueError(
        f"grid: unknown {kind} axis {name!r}{_axis_hint(kind, key)}; allowed: {allowed}"
    )


def _axis_hint(kind: str, key: str) -> str:
    """What an unknown axis ``key`` of a ``kind`` sweep likely is, for its refusal: an axis of
    the other kinds (``arch`` on a collective sweep, the kind left at its default) says which,
    else the closest axis names of ``kind`` (``stratgy``: ``strategy``); ``""`` for neither.

    >>> _axis_hint("collective", "arch")
    ' (an axis of the memory and step sweeps: `kind` memory or step)'
    >>> _axis_hint("step", "stratgy")
    ' (closest: strategy)'
    >>> _axis_hint("collective", "colour")
    ''
    >>> _axis_hint("step", "bandwidth")
    ' (a step sweep prices a cluster preset: its links give the bandwidth)'
    >>> _axis_hint("collective", "kind")[:30]
    " (the sweep's kind is no axis:"
    """
    import difflib

    if key == "kind":  # `kind = "step"` typed under the [grid] header: a key of the file
        return (
            " (the sweep's kind is no axis: in a grid file it goes above the [grid] table, "
            "kind = 'step'; or give `kind`)"
        )
    if kind == "step" and key in STEP_LINK_OPTIONS:
        return f" ({STEP_LINK_OPTIONS[key]})"
    others = [
        k
        for k in KINDS
        if k != kind and any(key == a.name or key in a.aliases for a in AXES[k].values())
    ]
    if others:
        sweeps = " and ".join(others)
        plural = "s" if len(others) > 1 else ""
        return f" (an axis of the {sweeps} sweep{plural}: `kind` {' or '.join(others)})"
    close = difflib.get_close_matches(key, list(AXES[kind]), n=3, cutoff=0.6)
    return f" (closest: {', '.join(close)})" if close else ""


_BYTE_AXES = ("size", "bucket_cap", "activations", "gpu_memory", "cuda_context")
"""Axes in whole bytes: a range over them is rounded to integers, as :func:`units.parse_bytes`."""

_STOP_RE = re.compile(
    r"^(?P<stop>.+?)\s*(?:(?P<op>[x*])\s*(?P<step>[0-9.eE]+)|(?P<plus>\+)\s*(?P<by>[0-9.eE]+[^\s+]*))?$"
)
"""A range's stop and its factor (``x2``) or step (``+8``; ``+8GB``, ``+1us``: a step of an axis
with units may carry one, read as the axis reads its values)."""


_NUMBER_RE = re.compile(r"^[0-9.]+(?:[eE][0-9]+)?$")


def _check_count(axis: Axis, text: str, count: float) -> None:
    """Refuse a range of more than MAX_AXIS_VALUES values before it is expanded."""
    if not count <= MAX_AXIS_VALUES:  # also catches NaN and inf
        raise ValueError(
            f"{axis.name}: range {text!r} has about {count:.3g} values; at most "
            f"{MAX_AXIS_VALUES} values per axis (MAX_AXIS_VALUES)"
        )


def _parse_one(axis: Axis, text: Any) -> Any:
    """One value of an axis; a value that does not parse is refused, for an axis with a
    command's limit (:data:`_LIMITED_AXES`), in that limit's words, as the command refuses it
    (``size=-5``: "must be a size in 1 B..16 TiB", not the parser's "must be >= 0 bytes")."""
    tokens = axis.parse in (_parse_tokens, _parse_global_tokens)
    parse = _parse_int if axis.integer and not tokens else axis.parse
    if axis.name in CHOICES:  # names in any case, as every surface reads them
        text = units.choice_name(text)
    try:
        return parse(text, name=axis.name)
    except (ValueError, TypeError) as exc:  # TypeError: a bool (TOML ``true``) for a number
        # a bool is refused in the words of the axis' range wherever it has one (mfu, ...)
        limited = axis.name in _LIMITED_AXES or isinstance(text, bool | np.bool_)
        limit = LIMITS.get(_LIMIT_NAMES.get(axis.name, axis.name)) if limited else None
        if limit is None:
            raise ValueError(str(exc)) from None
        raise refusal(axis.name, limit.rule, text, exc) from None


def _range_end(axis: Axis, text: str, which: str, part: str) -> Any:
    """The start or stop (``which``) of range ``text``, its text ``part``; refused quoting the
    whole range as typed (``1...64`` read as ``1`` .. ``.64``: "got '1...64' (its stop '.64' is
    not)", not "got '.64'"), the part named beside it."""
    try:
        return _parse_one(axis, part)
    except ValueError as exc:
        msg = str(exc)
        said = f"got {part!r}"
        if said in msg:
            raise ValueError(
                msg.replace(said, f"got {text!r} (its {which} {part!r} is not)", 1)
            ) from None
        raise ValueError(f"{msg} (the {which} of the range {text!r})") from None


RANGE_FORMS = "START..STOP, START..STOP xFACTOR, START..STOP +STEP or START:STOP (doubling)"
"""The forms of a range an axis takes, as a refusal of a range says them."""


def _expand_range(axis: Axis, text: str) -> list[Any]:
    sep = ".." if ".." in text else ":"
    head, _, tail = text.partition(sep)
    m = _STOP_RE.match(tail.strip())
    # one start and one stop: a second separator ('1B:16TiB:1.0001', '1..8..64') is no form
    # of a range, said as such, not as a stop that does not parse
    several = tail.count(":") + tail.count("..") > 0 or (sep == ".." and ":" in head)
    if not head.strip() or not m or several:
        raise ValueError(
            f"{axis.name}: cannot parse range {text!r}; a range is {RANGE_FORMS}, "
            "e.g. '8..4096x2', '8B:16GB'"
        )
    start = _range_end(axis, text, "start", head.strip())
    stop = _range_end(axis, text, "stop", m["stop"])
    for which, end, part in (("start", start, head.strip()), ("stop", stop, m["stop"])):
        # an axis whose range the grid's check says (power_limit_w) reads a NaN end as a number
        if isinstance(end, float) and not math.isfinite(end):
            raise ValueError(
                f"{axis.name}: a range's {which} must be a finite number, got {text!r} (its "
                f"{which} {part!r} is not)"
            )
    op = m["op"] or m["plus"] or ("+" if axis.integer and sep == ".." else "x")
    if op == "*":
        op = "x"
    try:
        if m["by"] and not _NUMBER_RE.match(m["by"]):  # a step with its unit: '+8GB', '+1us'
            step = float(_parse_one(axis, m["by"]))
        else:
            given = m["step"] or m["by"]
            step = float(given) if given else (1.0 if op == "+" else 2.0)
    except ValueError:
        raise ValueError(
            f"{axis.name}: cannot parse the step of {text!r}; a step is a number or, on an "
            "axis with units, a value with its unit: '0..64+8', '1GB..4GB +1GB'"
        ) from None
    if not math.isfinite(step):
        raise ValueError(f"{axis.name}: the step of {text!r} must be finite")
    if stop < start:
        raise ValueError(f"{axis.name}: empty range {text!r} (stop {stop} < start {start})")
    values: list[float] = []
    if op == "x":
        if step <= 1 or start <= 0:
            raise ValueError(
                f"{axis.name}: a geometric range needs start > 0 and factor > 1, got {text!r}"
            )
        count = math.floor(math.log(stop / start) / math.log(step) + 1e-9) + 1
        _check_count(axis, text, count)
        values = [start * step**k for k in range(int(count))]
    else:
        if step <= 0:
            raise ValueError(f"{axis.name}: a range step must be > 0, got {text!r}")
        count = (stop - start) / step + 1
        _check_count(axis, text, count)
        values = [start + step * k for k in range(int(math.floor(count - 1 + 1e-9)) + 1)]
    if not (axis.integer or axis.name in _BYTE_AXES):
        # the value as typed, not start + k x step's last-bit drift: the 6th of 0..10us +1us
        # is the 5us `--latency 5us` gives (4.9999999999999996e-06 s before), so a row
        # equals the single command's answer for the same value
        typed = [float(f"{v:.12g}") for v in values]
        _check_range_values(axis, text, typed, (start, stop))
        return typed
    out = [int(round(v)) for v in values]
    if axis.integer and any(abs(v - round(v)) > 1e-9 for v in values):
        raise ValueError(f"{axis.name}: range {text!r} gives non-integer values")
    out = list(dict.fromkeys(out))
    _check_range_values(axis, text, out, (start, stop))
    return out


def _check_range_values(
    axis: Axis, text: str, values: Sequence[float], ends: tuple[float, float]
) -> None:
    """A range's values within the axis's limit (:func:`_check_limits`' own, which would name
    the first value outside it, a number the user never typed: ``nodes=1..2e6x2`` said "got
    1048576"), refused quoting the range as typed and the value: "got '1..2e6x2' (its value
    1,048,576 is not)", as a range's start or stop is (:func:`_range_end`). A first value
    outside that is one of the range's typed ``ends`` is left to :func:`_check_limits`, which
    names it as typed (``ranks=0..64+16``: "got 0")."""
    if axis.name not in _LIMITED_AXES:
        return
    lim = LIMITS[_LIMIT_NAMES.get(axis.name, axis.name)]
    bad = next((v for v in values if not lim.holds(v)), None)
    if bad is not None and bad not in ends:
        shown = f"{bad:,}" if isinstance(bad, int) else f"{bad:g}"
        raise ValueError(
            f"{axis.name}: must be {lim.rule}, got {text!r} (its value {shown} is not)"
        )


def parse_values(name: str, spec: Any, kind: str = "collective") -> list[Any]:
    """Parse one axis' values from a list, a scalar, a comma list or a range string.

    Parameters
    ----------
    name : str
        Axis name or alias (see :data:`AXES`).
    spec : str, number or sequence
        ``"8..4096x2"``, ``"8B..16GB x2"``, ``"8B:8GB"``, ``"ring,tree"``, ``[8, 16]`` or ``8``.
    kind : str
        Sweep kind the axis belongs to.

    Returns
    -------
    list
        Values in SI units (bytes, B/s, s) or names.

    Raises
    ------
    ValueError
        Unknown axis, a value that does not parse, or an empty list or range.

    >>> parse_values("ranks", [2, "4"])
    [2, 4]
    >>> parse_values("bandwidth", "50GB/s,400Gb/s")
    [50000000000.0, 50000000000.0]
    """
    axis = _axis(kind, name)
    items: list[Any]
    if isinstance(spec, str):
        items = [p.strip() for p in spec.split(",")]
        if len(items) > 1 and not all(items):  # '1,,2' or '1,' is a typo, not sizes 1 and 2
            raise ValueError(f"{axis.name}: empty value in the list {spec!r}; e.g. '8,64'")
        items = [s for s in items if s]
        if hint := _comma_thousands_list(axis, spec):
            raise ValueError(
                f"{axis.name}: cannot parse {spec!r}; in a list a comma separates values, so "
                f"this reads as {' and '.join(items)}: {hint} for one number, or put a space "
                "after each comma for the list"
            )
    elif hasattr(spec, "__array__") and not isinstance(spec, np.generic):
        # numpy arrays, pandas Series and Index: a column of values, as a list would be
        arr = np.asarray(spec)
        if arr.ndim > 1:
            raise ValueError(
                f"{axis.name}: expected one list of values (1-D), got an array of shape "
                f"{arr.shape}; e.g. np.ravel(values)"
            )
        items = arr.reshape(-1).tolist()
    elif isinstance(spec, Sequence):
        items = list(spec)
    else:
        items = [spec]
    if len(items) > MAX_AXIS_VALUES:
        raise ValueError(
            f"{axis.name}: {len(items)} values; at most {MAX_AXIS_VALUES} values per axis "
            "(MAX_AXIS_VALUES)"
        )
    values: list[Any] = []
    for item in items:
        if len(values) > MAX_AXIS_VALUES:
            raise ValueError(
                f"{axis.name}: more than {MAX_AXIS_VALUES} values; at most {MAX_AXIS_VALUES} "
                "values per axis (MAX_AXIS_VALUES)"
            )
        if axis.numeric and isinstance(item, str) and (".." in item or ":" in item):
            values.extend(_expand_range(axis, item))
        else:
            values.append(_parse_one(axis, item))
    if not values:
        raise ValueError(f"{axis.name}: empty list of values")
    return values


def _comma_thousands_list(axis: Axis, spec: str) -> str:
    """How to write ``spec`` when a count's or size's list looks like one number written with
    comma thousands (``'1,000'``, ``'1,500'``, ``'2,048'``), else ``""``. In a list a comma
    separates values; the text is read as a number with thousands groups when it is digit
    groups alone (1-3 digits, then groups of exactly 3, no space) and a group starts with 0
    (no value of a list is written ``000`` or ``048``) or is more than 4 times the one before
    (``1,500``, ``65,536``): a sweep's neighbours step by 2 (doubling), 2.5 (1-2-5) or 4, not
    more (``64,128,256``, ``100,200`` and ``64,256`` stay lists). Such text is refused, the
    message naming both readings (the list and the number) and how to write each, never read
    as the list: ``--size 65,536`` ran 65 B and 536 B. A space after the comma (``'1, 500'``)
    is always a list. A box that takes one number reads the groups as thousands instead
    (:func:`costmodel.units.ungroup_thousands`, the app's boxes).

    >>> _comma_thousands_list(_axis("collective", "ranks"), "1,000")
    'write 1000 or 1k'
    >>> _comma_thousands_list(_axis("collective", "size"), "65,536")
    'write 65536B or 65.536kB'
    >>> _comma_thousands_list(_axis("collective", "ranks"), "64,128,256")
    ''
    """
    if not (axis.integer or axis.name in _BYTE_AXES):
        return ""
    text = spec.strip()
    hint = units.comma_thousands(text, "B" if axis.name in _BYTE_AXES else "")
    if not hint or text != spec.replace(" ", "").strip():
        return ""
    groups = text.split(",")
    looks_grouped = any(g.startswith("0") for g in groups[1:]) or any(
        int(b) > 4 * int(a) for a, b in zip(groups, groups[1:], strict=False)
    )
    return hint if looks_grouped else ""


def parse_set(text: str) -> tuple[str, str]:
    """Split one ``--set name=values`` option into (name, values text).

    >>> parse_set("ranks=8..4096x2")
    ('ranks', '8..4096x2')
    """
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise ValueError(f"set: expected name=v1,v2 or name=a..b x f, got {text!r}")
    return name.strip(), values.strip()


@dataclass(frozen=True)
class Grid:
    """A parsed sweep grid: kind and, per canonical axis name, its list of values (SI units)."""

    kind: str
    axes: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Number of rows the grid evaluates to (algorithm ``all`` expanded; a step sweep's
        ``strategy=all`` counted by :func:`_all_layout_rows`, no layout built)."""
        if self.kind == "step" and self.axes.get("strategy") == ["all"]:
            return _all_layout_rows(self.axes, _step_cats(self.axes), _numeric_axes(self))
        return sum(n for _, n in _combos(self))


def make_grid(spec: Mapping[str, Any] | None = None, kind: str = "collective", **axes: Any) -> Grid:
    """Build a :class:`Grid` from a mapping and/or keyword axes (values as in :func:`parse_values`).

    A value typed as text with a bare number where its axis's name says no unit
    (``compute_time="400"`` is 400 s, ``bucket_cap="25"`` 25 B) warns
    (:class:`costmodel.units.BareNumberWarning`, the CLI's ``--set`` words); Python numbers are
    SI, as everywhere in the API, and pass quietly.

    >>> g = make_grid({"size": "8B:1KB"}, ranks="8,16", bandwidth="50GB/s")  # 8 B ... 512 B
    >>> g.rows, g.axes["ranks"]
    (14, [8, 16])
    """
    if kind not in KINDS:
        raise ValueError(f"kind: unknown sweep kind {kind!r}; allowed: {', '.join(KINDS)}")
    merged: dict[str, list[Any]] = {}
    typed: dict[str, str] = {}  # axis -> the key that first gave it (an alias such as seq)
    for name, value in {**(spec or {}), **axes}.items():
        texts = value if isinstance(value, list | tuple) else [value]
        for text in (t for t in texts if isinstance(t, str)):
            units.warn_bare_numbers(name, text)
        axis = _axis(kind, name)
        if axis.name in merged:
            raise ValueError(
                f"grid: axis {axis.name!r} given twice (as {typed[axis.name]!r} and {name!r}); "
                "give it once"
            )
        typed[axis.name] = name
        merged[axis.name] = parse_values(axis.name, value, kind)
    if kind == "step" and "zero_stage" in merged:
        merged = _step_stage_as_strategy(merged)
    grid = Grid(kind, merged)
    _check(grid)
    _check_rows(grid)
    return grid


def _step_stage_as_strategy(a: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """A step sweep's ``zero_stage`` (``--set zero=3``, as every command's ``--zero``) read as
    its stage's strategy (0 ddp, 1 zero1, 2 zero2, 3 fsdp: ``costmodel step --zero``'s rule):
    the rows name the layout by ``strategy``. Given with ``strategy``, each stage must agree
    with each strategy (:func:`costmodel.strategy.layout.stage_agrees`: ``zero_stage=3`` with
    ``strategy=fsdp,hsdp``), as a memory sweep and ``costmodel memory --zero --strategy``
    refuse a contradiction; the strategy then names the layout."""
    from ..strategy.layout import STRATEGY_OF_STAGE, ZERO_STAGE, stage_agrees

    out = dict(a)
    stages = out.pop("zero_stage")
    LIMITS["zero"].check("zero_stage", stages)  # step --zero's range, in its words
    if "strategy" not in out:
        out["strategy"] = list(dict.fromkeys(STRATEGY_OF_STAGE[int(z)] for z in stages))
        return out
    if out["strategy"] == ["all"]:
        raise ValueError(
            "zero_stage: strategy=all already prices every layout (ddp 0, zero1 1, zero2 2, "
            "fsdp and hsdp 3); give strategy=all or zero_stage, not both"
        )
    for st in _strategies(out["strategy"]):
        for z in stages:
            if not stage_agrees(st, int(z)):
                raise ValueError(
                    f"zero_stage: {z} contradicts strategy {st} (ZeRO-{ZERO_STAGE[st]}); "
                    "give strategy or zero_stage, not both unless they agree (a strategy "
                    "names its stage: ddp 0, zero1 1, zero2 2, fsdp and hsdp 3)"
                )
    return out


def _check_rows(grid: Grid) -> None:
    """Refuse a grid whose axes multiply to more than MAX_GRID_ROWS rows (before evaluating)."""
    if grid.kind == "step" and math.prod(len(v) for v in grid.axes.values()) > 0:
        rows = grid.rows  # presets 'all' expanded
        if rows > MAX_STEP_ROWS:
            raise ValueError(
                f"grid: {rows:,} step rows; at most {MAX_STEP_ROWS:,} per step sweep "
                "(MAX_STEP_ROWS, up to about 15 ms a row): narrow an axis or split the sweep"
            )
    if grid.kind == "memory" and "arch" in grid.axes:
        rows = grid.rows
        if rows > MAX_ARCH_MEMORY_ROWS:
            raise ValueError(
                f"grid: {rows:,} memory rows of a named architecture; at most "
                f"{MAX_ARCH_MEMORY_ROWS:,} per sweep (MAX_ARCH_MEMORY_ROWS, about 1 ms a row): "
                "narrow an axis or split the sweep"
            )
    bound = math.prod(len(v) for v in grid.axes.values())
    # 'algorithm = all' expands to at most a dozen algorithms per op
    if "all" in grid.axes.get("algorithm", []):
        bound *= 16
    if bound > MAX_GRID_ROWS:
        rows = grid.rows if bound <= 16 * MAX_GRID_ROWS else bound
        if rows > MAX_GRID_ROWS:
            raise ValueError(
                f"grid: {rows:,} rows; at most {MAX_GRID_ROWS:,} rows per sweep "
                "(MAX_GRID_ROWS): narrow an axis or split the sweep"
            )


def load_grid(path: str | os.PathLike[str], kind: str | None = None) -> Grid:
    """Read a TOML grid spec: optional ``kind = "collective"|"memory"|"step"`` and a ``[grid]``
    table. A file that names no kind is of ``kind`` (the caller's: ``sweep --kind``, the API's
    ``kind=``; default ``"collective"``), so its axes are read as that kind's; a file's own
    ``kind`` is its kind.

    The bytes are decoded as logs and results files are (:func:`costmodel.textfile.decode`):
    UTF-8 with or without a byte-order mark, UTF-16/32 by its mark (a file redirected by
    Windows PowerShell 5), UTF-16 without a mark read with a
    :class:`~costmodel.textfile.GuessedEncodingWarning`; undecodable bytes are refused naming
    the offset.

    A relative path among the ``arch`` and ``preset`` values (a config.json, a preset TOML)
    is read from the grid file's folder, not the current one (:func:`_beside`).

    Example file::

        kind = "collective"
        [grid]
        preset = ["dgx-h100", "dgx-a100"]
        nodes = "1..16x2"
        size = "8B..16GB x2"
        algorithm = "auto"
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"grid file {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"grid file {str(p)!r} is a folder; give a TOML file") from None
    try:
        # the one decoder of every file a user gives (logs, results): UTF-8 with or without
        # a BOM, UTF-16/32 by its BOM (a PowerShell 5 redirect), BOM-less UTF-16 with a warning
        data = tomllib.loads(textfile.decode_text(raw, str(p), what="grid file"))
    except textfile.TextDecodeError as exc:
        raise ValueError(f"grid file {str(p)!r} is {exc.message}") from None  # "not text: ..."
    except tomllib.TOMLDecodeError as exc:
        hint = (  # a grid of another format (CSV, JSON): what a grid file is
            ""
            if p.suffix.lower() == ".toml"
            else '; a grid file is TOML: kind = "collective" and a [grid] table of axes'
        )
        raise ValueError(f"grid file {str(p)!r} is not valid TOML ({exc}){hint}") from None
    unknown = set(data) - {"kind", "grid"}
    if unknown:
        raise ValueError(
            f"grid file {str(p)!r} has unknown keys {sorted(unknown)}; allowed: kind, grid"
        )
    if not isinstance(data.get("grid"), dict) or not data["grid"]:
        raise ValueError(f"grid file {str(p)!r} needs a non-empty [grid] table")
    on = str(data.get("kind", kind or "collective"))
    return make_grid(_beside(p.parent, data["grid"], on), kind=on)


_PATH_AXES = ("arch", "preset")
"""Axes whose values may be files: an architecture's config.json (or its folder), a cluster
preset's TOML file."""


def _beside(folder: Path, table: dict[str, Any], kind: str) -> dict[str, Any]:
    """A grid file's ``[grid]`` table with each relative path among its :data:`_PATH_AXES`
    values read from the file's ``folder``, not the current one: a grid file and the
    config.json beside it (``arch = "my-model/config.json"``) work from any folder, as a
    relative include does in a Makefile or a TOML config. A value is a path when it looks like
    one (ends in ``.json`` or ``.toml``, or holds a ``/``), or, for ``arch``, names no preset
    and exists beside the file (a model's folder); absolute and ``~`` paths are kept.

    >>> _beside(Path("runs"), {"arch": ["llama-2-7b", "m/config.json"], "nodes": 2}, "step")
    {'arch': ['llama-2-7b', 'runs/m/config.json'], 'nodes': 2}
    """
    from ..architecture import arch_names

    def one(axis: str, v: Any) -> Any:
        if not isinstance(v, str) or not v.strip():
            return v
        t = v.strip()
        if os.path.isabs(t) or t.startswith("~"):
            return v
        looks = t.lower().endswith((".json", ".toml")) or "/" in t or os.sep in t
        if looks or (axis == "arch" and t not in arch_names() and (folder / t).exists()):
            return str(folder / t)
        return v

    out: dict[str, Any] = {}
    for key, value in table.items():
        try:
            axis = _axis(kind, key).name
        except ValueError:  # an unknown key or kind: make_grid refuses it, in its words
            axis = ""
        if axis not in _PATH_AXES:
            out[key] = value
        elif isinstance(value, str):  # a comma list, as parse_values reads it
            out[key] = ",".join(one(axis, x) for x in value.split(","))
        elif isinstance(value, list):
            out[key] = [one(axis, x) for x in value]
        else:
            out[key] = value
    return out


# --- consistency and combinations -------------------------------------------------------------
_LIMITED_AXES = (
    "gamma",
    "mfu",
    "comm_contention",
    "size",
    "nodes",
    "gpus_per_node",
    "ranks",
    "bandwidth",
    "latency",
    "params",
    "micro_batch",
    "sequence_length",
    "accumulation",
    "compute_time",
    "tokens_per_gpu",
    "global_tokens",
    "gpu_memory",
    "cuda_context",
    "fragmentation",
    "gpus_per_process",
    "usd_per_gpu_hour",
    "bucket_cap",
    "zero_stage",
    "group_size",
    "activations",
)
"""Numeric axes with a limit in :data:`costmodel._limits.LIMITS` under the same name: the range
``costmodel collective/memory/step`` allow for the option, so ``--set bandwidth=50`` (50 B/s, a
typo for 50 GB/s) is refused as ``collective --bandwidth 50`` is, not answered (a raw link's
``ranks`` has :data:`~costmodel._limits.LINK_RANKS`, checked in :func:`_check`)."""


_LIMIT_NAMES = {
    "comm_contention": "contention",
    "gpus_per_process": "gpus_per_node",
    "bucket_cap": "bucket",
    "zero_stage": "zero",
}
"""An axis whose limit in :data:`costmodel._limits.LIMITS` has another name (``step
--contention``; the GPUs one process drives, at most a node's: each row checks its own node,
:func:`costmodel.sweep.evaluate.check_gpus_per_process`; ``step --bucket``, ``--zero``)."""


def _check_limits(a: dict[str, list[Any]]) -> None:
    """Every limited axis's values within the one limit of every command (costmodel._limits)."""
    for name in _LIMITED_AXES:
        lim = LIMITS[_LIMIT_NAMES.get(name, name)]
        values = a.get(name, [])
        # a plain loop over numbers (1e5 values in ms); Limit.check words the first bad one
        bad = [
            v
            for v in values
            if not (
                math.isfinite(v)
                and (v > lim.lo if lim.lo_open else v >= lim.lo)
                and (v < lim.hi if lim.hi_open else v <= lim.hi)
                and (not lim.whole or v == math.floor(v))
            )
        ]
        if bad:
            lim.check(name, bad[0])  # raises "NAME: must be RULE, got VALUE"


def _check(grid: Grid) -> None:
    a = grid.axes
    if "model" in a:  # one name per model (costmodel.models); unknown names fail here, early
        from .. import models

        a["model"] = [models.check_model(m) for m in a["model"]]
    if grid.kind == "collective":
        if "size" not in a:
            raise ValueError("grid: a collective sweep needs sizes, e.g. size=8B..16GB x2")
        lim = LIMITS["size"]
        bad = [s for s in a["size"] if not lim.lo <= s <= lim.hi]  # a plain loop: 1e5 sizes in ms
        if bad:
            lim.check("size", bad[0])  # raises the one message of every command
        if "preset" in a:
            extra = {"bandwidth", "latency", "gamma"} & set(a)
            if extra:
                # named by the fields, as collective --cluster --latency says it (the list's
                # repr "grid: ['gamma', 'latency'] come from ..." named no --set)
                raise ValueError(
                    f"{', '.join(sorted(extra))}: an axis of the collective over one link "
                    "(ranks/bandwidth); with preset the preset's links and the model give it: "
                    "give either preset or bandwidth/latency/gamma, not both"
                )
            _check_ranks_or_nodes(a)
        else:
            if "bandwidth" not in a:
                raise ValueError(
                    "grid: a collective sweep needs a preset (preset=dgx-h100) or a link "
                    "(bandwidth=50GB/s and ranks=...)"
                )
            # a preset's axis named first (nodes=2 beside a bandwidth was refused as a raw
            # link without ranks, no word on the nodes given), by its --set or grid file key
            given = sorted({"nodes", "gpus_per_node", "protocol"} & set(a))
            if given:
                one = len(given) == 1
                raise ValueError(
                    f"{', '.join(given)}: {'an axis' if one else 'axes'} of a preset's "
                    f"cluster, so {'it needs' if one else 'they need'} a preset "
                    "(preset=dgx-h100); over a raw link give ranks and bandwidth (nodes, "
                    "gpus_per_node and protocol need a preset)"
                )
            if "ranks" not in a:
                raise ValueError("grid: a sweep over a raw link needs ranks, e.g. ranks=8..4096x2")
            LINK_RANKS.check("ranks", list(a["ranks"]))  # 1..1e9: one rank answers 0 s
            launch = [n for n in LAUNCH_AXES if n in a]
            if launch:
                raise ValueError(
                    f"{launch[0]}: how a run is launched on a cluster preset (nccl-tests -g, "
                    "NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE); set `preset` (a raw link has no "
                    "processes or switches)"
                )
            if any(m not in _LINK_MODELS for m in a.get("model", ["textbook"])):
                raise ValueError(
                    "model: a raw link (bandwidth=...) has only model=textbook (or lesson: on "
                    "one link both are the same alpha-beta formula)"
                )
        _check_algorithms(a)
        _check_nodes(a)  # first: nodes=0 in the words of every command's --nodes
        _check_at_least_one(a, ("ranks", "nodes", "gpus_per_node"))
        if "preset" in a and "ranks" in a:  # each a shape of each preset's node, as step's
            _check_preset_ranks(a)
    elif grid.kind == "step":
        _check_step(a)
    else:
        _check_memory(a)
    _check_limits(a)
    if grid.kind != "memory" and a.get("preset") == ["all"]:
        # the presets `all` leaves out, said once a grid (a memory grid sizes every preset's
        # memory at any rank count: none left out)
        _presets(a["preset"], a, warn=True)


def _check_algorithms(a: dict[str, list[Any]]) -> None:
    """Each (model, op, algorithm) of a collective grid is one the model defines
    (:func:`costmodel.models.algorithms`), checked before any row is evaluated: with
    ``op=all`` a named algorithm must be one of every op
    (:func:`costmodel.models.check_algorithm_every_op`, as ``collective all`` and ``predict
    --op all``), else each op's own list names what is allowed."""
    from .. import models

    link = "preset" not in a
    default_model = "textbook" if link else "nccl"
    for model in a.get("model", [default_model]):
        default_alg = "ring" if model in _LINK_MODELS else "auto"
        requested = _names(a.get("algorithm", [default_alg]))
        if a.get("op") == ["all"] and "all" not in requested:
            for r in requested:
                models.check_algorithm_every_op(model, r, link=link)
        for op in _ops(a.get("op", ["all_reduce"])):
            _algorithms(op, model, requested, link=link)


def _check_at_least_one(a: dict[str, list[Any]], names: Sequence[str]) -> None:
    """Every value of each of ``names`` (counts: ranks, nodes, micro-batches, ...) >= 1,
    refused in its limit's words, with the allowed range, as its command's option is
    (``ranks: must be a whole number in 1..1,000,000,000, got 0``)."""
    for name in names:
        bad = [v for v in a.get(name, []) if v < 1]
        if bad:
            limit = LIMITS.get(name)
            if limit is not None:
                limit.check(name, bad[0])
            raise ValueError(f"{name}: every value must be >= 1")


def _check_nodes(a: dict[str, list[Any]]) -> None:
    """``nodes`` within the one node limit of every command (costmodel._limits)."""
    top = LIMITS["nodes"]
    bad = [v for v in a.get("nodes", []) if not top.lo <= v <= top.hi]
    if bad:
        top.check("nodes", bad[0])


def _check_ranks_or_nodes(a: dict[str, list[Any]]) -> None:
    """A preset's GPUs given once: as ``ranks`` (a rank count, read by
    :func:`costmodel.sweep.evaluate.ranks_slice`) or as ``nodes``/``gpus_per_node``, not both
    (the collective and step sweeps, in one set of words)."""
    if "ranks" in a and ({"nodes", "gpus_per_node"} & set(a)):
        raise ValueError("grid: with a preset give ranks or nodes/gpus_per_node, not both")


def _check_preset_ranks(a: dict[str, list[Any]]) -> None:
    """Each ``ranks`` value a shape of each preset's node, as ``step --cluster NAME --ranks N``
    reads it (:func:`costmodel.sweep.evaluate.ranks_slice`: ``N <= G`` one node's slice, a
    multiple of ``G`` whole nodes; any other count refused in its words), before any row: the
    collective and step sweeps alike.

    Presets named by the user: any count one of them cannot build refuses the grid (they
    asked for that preset at that count). ``preset=all``: every preset, so a count one of
    them cannot build (128 ranks of a 72-GPU gb200-nvl72 node) is that pair's refused rows,
    the reason in ``error`` (:func:`costmodel.sweep.evaluate.ranks_rows`), and the others are
    answered; only a grid where no preset builds any count is refused, with the first
    preset's reason."""
    from .. import presets
    from .evaluate import ranks_rows, ranks_slice

    first: ValueError | None = None
    for name in _presets(a["preset"], a):
        per_node = int(presets.cluster(name, field="preset").gpus_per_node)
        try:
            ranks_slice(a["ranks"], per_node, name)  # raises "ranks: 12 GPUs cannot be ..."
        except ValueError as exc:
            if a["preset"] != ["all"]:
                raise
            if (ranks_rows(a["ranks"], per_node, name)[0] > 0).any():
                return  # one pair answers: the others are rows with their reason
            first = first or exc
            continue
        if a["preset"] == ["all"]:
            return
    if first is not None:
        raise first


def _check_arch_or_params(a: dict[str, list[Any]], needs: str) -> None:
    """``arch`` (each a known architecture) or ``params``, exactly one of them; ``needs`` is
    the refusal's words for the two (the memory and step sweeps word them each their own way)."""
    if ("arch" in a) == ("params" in a):
        raise ValueError(needs)
    if "arch" in a:
        from ..architecture import load_arch

        for name in a["arch"]:
            load_arch(name)  # raises "arch: unknown ...; allowed: ..."


def _preset_gpus(a: dict[str, list[Any]]) -> Iterator[Any]:
    """The GPU of each preset of the grid (``all`` expanded), for the checks each preset's
    card makes (fp8 support, its power range) as the commands make them with ``--cluster``."""
    from .. import presets

    for name in _presets(a["preset"], a):
        yield presets.cluster(name, field="preset").gpu


_ACTIVATION_INPUTS = ("sequence_length", "micro_batch", "recompute", "loss", "flash_attention")
"""Memory axes that size an architecture's activations (``costmodel memory --arch``'s)."""


def _check_memory(a: dict[str, list[Any]]) -> None:
    """A memory sweep's axes: a parameter count or a named architecture (``costmodel memory
    --params`` or ``--arch``), and what sizes an architecture's activations only with one."""
    _check_arch_or_params(
        a,
        "grid: a memory sweep needs params (a count, e.g. params=1B..64B x2) or arch=NAME "
        "(an architecture, e.g. arch=llama-3.1-70b), not both",
    )
    from ..strategy.memory import check_activation_inputs

    check_activation_inputs(  # costmodel memory's one rule
        [n for n in _ACTIVATION_INPUTS if n in a],
        arch="arch" in a,
        activations="activations" in a,
        arch_hint="arch=NAME",
    )
    _check_nodes(a)  # nodes=0 in the words of every command's --nodes
    _check_at_least_one(a, ("ranks", "gpus_per_node"))
    if "nodes" in a:  # costmodel memory --nodes: nodes of --cluster, not beside --ranks
        if "ranks" in a:
            raise ValueError(
                "ranks, nodes: give one of them (nodes counts nodes of the preset, each of its "
                "GPUs per node, or of its gpus_per_node slice)"
            )
        if "preset" not in a:
            raise ValueError(
                "nodes: needs the GPUs per node: set preset=NAME (the ranks are nodes x its "
                "GPUs per node), or give ranks"
            )
    if "gpus_per_node" in a:  # a slice of each preset's node, as costmodel memory --gpus-per-node
        if "preset" not in a:
            raise ValueError(
                "gpus_per_node: a slice of each preset's node (hsdp's default group, the "
                "layouts strategy=all lists); set preset=NAME too"
            )
        from .. import presets

        for name in _presets(a["preset"], a):
            for v in a["gpus_per_node"]:
                # raises "gpus_per_node: ..."
                presets.cluster(name, gpus_per_node=int(v), field="preset")
    LIMITS["zero"].check("zero_stage", a.get("zero_stage", []))  # memory --zero's words
    _check_step_layout(a)  # the dtypes and bucket, as the step sweep checks them
    _check_memory_layout(a)
    _check_at_least_one(a, ("sequence_length", "micro_batch"))
    _check_recipes_and_modes(a)
    if "gpu_memory" in a and "preset" in a:  # as costmodel memory refuses both
        raise ValueError(
            "gpu_memory: the preset gives its GPU's memory; give gpu_memory or preset, not both"
        )
    if "preset" in a:  # each preset's GPU runs each recipe, as costmodel memory --cluster checks
        from ..strategy.step import check_fp8_support

        for gpu in _preset_gpus(a):
            for recipe in a.get("recipe", ["mixed-adam"]):
                check_fp8_support(gpu, recipe=recipe)
            for dtype in a.get("param_dtype", []):  # fp8 all-gathers, as memory --cluster
                check_fp8_support(gpu, param_dtype=dtype)


def _check_strategy_options(a: dict[str, list[Any]], *, all_layouts: bool = False) -> list[str]:
    """``strategy`` names (``all``: every one), and ``group_size``/``reshard_after_forward``
    only where every strategy has them, as ``costmodel step``/``memory`` refuse them; the
    strategies chosen (ddp when none). ``all_layouts`` (a step sweep): ``strategy=all`` stays
    ``["all"]``, every layout ``step --strategy all`` ranks (:func:`_all_layout_combos`)."""
    if all_layouts and a.get("strategy") == ["all"]:
        if "gradient_as_bucket_view" in a:
            raise ValueError(
                "gradient_as_bucket_view: strategy=all ranks ddp at PyTorch's default (no "
                "bucket view); to sweep it, name the strategy (strategy=ddp)"
            )
        for name in ("group_size", "reshard_after_forward"):
            if name in a:
                raise ValueError(
                    f"{name}: strategy=all already sweeps every layout the advisor ranks "
                    f"(each hsdp group, fsdp with and without resharding); to set {name} "
                    "yourself, name the strategies (strategy=fsdp,hsdp)"
                )
        return ["all"]
    if "strategy" in a:
        a["strategy"] = _strategies(a["strategy"])
    chosen = a.get("strategy", ["ddp"])
    if "group_size" in a and any(x != "hsdp" for x in chosen):
        raise ValueError(
            "group_size: only hsdp has a sharding group; set strategy=hsdp (sweep the other "
            "strategies separately)"
        )
    if "reshard_after_forward" in a and any(x not in ("fsdp", "hsdp") for x in chosen):
        raise ValueError(
            "reshard_after_forward: only fsdp and hsdp reshard parameters; set strategy=fsdp "
            "or hsdp (sweep the other strategies separately)"
        )
    if "gradient_as_bucket_view" in a and any(x != "ddp" for x in chosen):
        raise ValueError(
            "gradient_as_bucket_view: only ddp has gradient buckets to view; set strategy=ddp "
            "(sweep the other strategies separately)"
        )
    return chosen


def _check_memory_layout(a: dict[str, list[Any]]) -> None:
    """A memory sweep's layout: ``zero_stage`` or ``strategy`` (both only where every stage
    agrees with every strategy, :func:`costmodel.strategy.layout.stage_agrees`, the rule of
    ``costmodel memory --zero --strategy``: ``zero_stage=3`` with ``strategy=fsdp,hsdp``; the
    strategy then names the layout), and each (strategy, group, preset's node, ranks) a layout
    ``costmodel memory --strategy`` sizes (:func:`costmodel.strategy.memory.memory_layout`:
    hsdp without a preset needs ``group_size``; a group that does not divide a rank count is
    refused, listing the divisors), before any row."""
    if a.get("strategy") == ["all"]:  # every layout the advisor ranks (_all_memory_combos)
        if "zero_stage" in a:
            raise ValueError(
                "zero_stage: strategy=all already sizes every layout (ddp 0, zero1 1, zero2 2, "
                "fsdp and hsdp 3); give strategy=all or zero_stage, not both"
            )
        if "preset" not in a:
            raise ValueError(
                "strategy: all is every layout the advisor ranks on a cluster (ddp, zero1, "
                "zero2, fsdp with and without resharding, hsdp at each group that divides the "
                "ranks and divides a node or is whole nodes); set preset=NAME for the node, or "
                "name the strategies "
                "(strategy=ddp,fsdp)"
            )
        _check_strategy_options(a, all_layouts=True)
        return
    if "strategy" in a and "zero_stage" in a:
        from ..strategy.layout import ZERO_STAGE, stage_agrees

        for st in _strategies(a["strategy"]):
            for z in a["zero_stage"]:
                if not stage_agrees(st, z):
                    raise ValueError(
                        f"zero_stage: {z} contradicts strategy {st} (ZeRO-{ZERO_STAGE[st]}); "
                        "give strategy or zero_stage, not both unless they agree (a strategy "
                        "names its stage: ddp 0, zero1 1, zero2 2, fsdp and hsdp 3)"
                    )
    if "strategy" not in a and "gradient_as_bucket_view" in a:
        if any(int(z) != 0 for z in a.get("zero_stage", [0])):
            raise ValueError(
                "gradient_as_bucket_view: only ddp (zero_stage 0) has gradient buckets to "
                "view; set zero_stage=0 or strategy=ddp (sweep the other stages separately)"
            )
    if "strategy" not in a and {"group_size", "reshard_after_forward"} & set(a):
        name = "group_size" if "group_size" in a else "reshard_after_forward"
        raise ValueError(
            f"{name}: set strategy (hsdp{'' if name == 'group_size' else ' or fsdp'}) too; "
            f"{name} is an option of that strategy"
        )
    chosen = _check_strategy_options(a)
    if "strategy" not in a:
        return
    from ..hardware import DEFAULT_GPUS_PER_NODE, default_ranks
    from ..strategy.memory import memory_layout

    nodes: list[int | None] = [None]
    if "gpus_per_node" in a:  # the slice of each node (checked against each preset above)
        nodes = [int(v) for v in a["gpus_per_node"]]
    elif "preset" in a:
        from .. import presets

        nodes = [
            int(presets.cluster(p, field="preset").gpus_per_node) for p in _presets(a["preset"], a)
        ]
    elif "ranks" not in a:  # no hardware, no ranks: one default node, as `costmodel memory`
        nodes = [DEFAULT_GPUS_PER_NODE]
        if "hsdp" in chosen and None in a.get("group_size", [None]):
            _warn_assumed_node()
    for st in chosen:
        if st != "hsdp":  # checked above: the other layouts hold at every rank count
            continue
        for gpn in dict.fromkeys(nodes):
            for group in a.get("group_size", [None]):
                for reshard in a.get("reshard_after_forward", [None]):
                    # no ranks axis: its nodes, else one node (its slice), as the rows
                    for ranks in _memory_rank_counts(a, gpn, default_ranks(gpn)):
                        memory_layout(
                            st,
                            int(ranks),
                            group_size=None if group is None else int(group),
                            reshard_after_forward=reshard,
                            gpus_per_node=gpn,
                            names=("group_size", "preset"),
                        )


def _memory_rank_counts(a: dict[str, list[Any]], gpus_per_node: Any, default: int) -> list[Any]:
    """A memory sweep's rank counts on nodes of ``gpus_per_node`` GPUs: its ``ranks``, else
    its ``nodes`` x ``gpus_per_node`` (``costmodel memory --nodes --cluster``), else
    ``[default]`` (one node)."""
    if "ranks" in a:
        return list(a["ranks"])
    if "nodes" in a:
        return [int(n) * int(gpus_per_node) for n in a["nodes"]]
    return [default]


def _check_recipes_and_modes(a: dict[str, list[Any]]) -> None:
    """``recipe``, ``recompute`` and ``loss`` names, as the memory and step commands check them."""
    if "recipe" in a:
        from ..memory import get_recipe

        for name in a["recipe"]:
            get_recipe(name)
    if "recompute" in a:
        from ..architecture import RECOMPUTE_MODES

        bad = [r for r in a["recompute"] if r not in RECOMPUTE_MODES]
        if bad:
            raise ValueError(
                f"recompute: unknown {bad[0]!r}; allowed: {', '.join(RECOMPUTE_MODES)}"
            )
    if "loss" in a:
        from ..architecture import LOSS_MODES

        bad = [r for r in a["loss"] if r not in LOSS_MODES]
        if bad:
            raise ValueError(f"loss: unknown {bad[0]!r}; allowed: {', '.join(LOSS_MODES)}")


def _check_step(a: dict[str, list[Any]]) -> None:
    """A step sweep's axes, each name and range checked before any row is evaluated."""
    if "preset" not in a:
        raise ValueError("grid: a step sweep needs a cluster preset, e.g. preset=dgx-h100")
    _check_arch_or_params(
        a, "grid: a step sweep needs arch=NAME (an architecture) or params=7B (a count), not both"
    )
    _check_strategy_options(a, all_layouts=True)
    _check_recipes_and_modes(a)
    _check_nodes(a)  # first: nodes=0 in the words of every command's --nodes
    _check_ranks_or_nodes(a)
    _check_at_least_one(
        a,
        (
            "nodes",
            "gpus_per_node",
            "ranks",
            "micro_batch",
            "sequence_length",
            "accumulation",
            "group_size",
        ),
    )
    if "ranks" in a:  # each a shape of each preset's node, as step --cluster --ranks
        _check_preset_ranks(a)
    # the range of step's --mfu and --contention, in their words
    LIMITS["mfu"].check("mfu", list(a.get("mfu", [])))
    _check_step_compute(a)
    LIMITS["contention"].check("comm_contention", list(a.get("comm_contention", [])))
    if any(v <= 0 for v in a.get("params", [1.0])):
        raise ValueError("params: every value must be > 0")
    if "gpus_per_node" in a:  # a slice of each preset's node, as costmodel step --gpus-per-node
        from .. import presets

        for name in _presets(a["preset"], a):
            for v in a["gpus_per_node"]:
                # raises "gpus_per_node: ..."
                presets.cluster(name, gpus_per_node=int(v), field="preset")
    if "power_limit_w" in a:  # each preset's GPU's range, as costmodel step --power-limit-w
        from ..hardware import check_power_limit_w

        for gpu in _preset_gpus(a):
            for v in a["power_limit_w"]:
                check_power_limit_w(gpu, v)
    _check_step_precision(a)
    _check_step_layout(a)
    _check_step_cost(a)


def _check_step_cost(a: dict[str, list[Any]]) -> None:
    """The time-and-cost settings (:data:`STEP_COST_AXES`), as ``costmodel train`` takes its
    ``--tokens``, ``--price`` and ``--usd-per-gpu-hour``: one token budget, one typed price or
    price presets (each published for a GPU of the grid's presets, at most one per GPU), and
    a price only with tokens to pay for."""
    for name in ("tokens", "usd_per_gpu_hour"):
        if len(a.get(name, [])) > 1:
            raise ValueError(
                f"{name}: one value for every row (it is not a swept axis), got "
                f"{len(a[name])}; run one sweep per value"
            )
    if "price" in a and "usd_per_gpu_hour" in a:
        raise ValueError("usd_per_gpu_hour, price: give one of them, not both")
    if "tokens" not in a:
        given = [n for n in ("price", "usd_per_gpu_hour") if n in a]
        if given:
            raise ValueError(
                f"{given[0]}: prices the tokens to train; give them too (`tokens`, e.g. 2T)"
            )
        return
    if "usd_per_gpu_hour" in a:
        _warn_one_price_many_gpus(a)
    if "price" not in a:
        return
    from ..training import load_price, published_prices

    gpus = sorted({gpu.name for gpu in _preset_gpus(a)})
    seen: dict[str, str] = {}
    for name in a["price"]:
        p = load_price(name)  # raises "price: unknown price preset ...; allowed: ..."
        if p.gpu not in gpus:
            match = "; ".join(
                f"for {g}: {', '.join(published_prices(g)) or 'none published'}" for g in gpus
            )
            raise ValueError(
                f"price: {p.name} is a price for {p.gpu}, not for a GPU of this sweep "
                f"({', '.join(gpus)}); price presets {match}; or give `usd_per_gpu_hour`"
            )
        if p.gpu in seen and seen[p.gpu] != p.name:
            raise ValueError(
                f"price: {seen[p.gpu]} and {p.name} are both prices for {p.gpu}; give one "
                "per GPU (run one sweep per price)"
            )
        seen[p.gpu] = p.name


def _warn_assumed_node() -> None:
    """Warn that a memory sweep's hsdp rows shard over one node of the default size: no
    ``preset``, ``gpus_per_node`` or ``ranks`` axis gives one, so the rows take what ``costmodel
    memory`` takes without ``--ranks`` or ``--cluster`` (:func:`costmodel.hardware.default_ranks`,
    said there as "assumed: 8 ranks, one node ..."), and hsdp's default group is that node."""
    import warnings

    from ..hardware import DEFAULT_GPUS_PER_NODE, default_ranks

    warnings.warn(
        f"assumed: {default_ranks()} ranks, one node of {DEFAULT_GPUS_PER_NODE} GPUs, hsdp's "
        "group (the default; give `ranks` and `group_size`, or `preset` for one node of it, "
        "for another)",
        UserWarning,
        stacklevel=5,
    )


def _warn_one_price_many_gpus(a: dict[str, list[Any]]) -> None:
    """Warn (once per grid) when one typed ``usd_per_gpu_hour`` prices rows on more than one
    GPU type. Warned, not refused: a typed rate is the user's own (a contract, a blended
    internal rate) and may well hold for every GPU, where a price preset is one provider's
    published rate for one GPU and is never lent to another; the warning names the GPUs so a
    rate meant for one of them is not read as the others' cost by accident. (``scenario --vs``
    refuses A's typed price for B on another GPU: there B has an option of its own.)"""
    import warnings

    gpus = sorted({str(gpu.name) for gpu in _preset_gpus(a)})
    if len(gpus) > 1:
        warnings.warn(
            f"usd_per_gpu_hour: one typed price, {a['usd_per_gpu_hour'][0]:g} USD per "
            f"GPU-hour, prices every row of this sweep, on {len(gpus)} GPU types "
            f"({', '.join(gpus)}): each is billed at that one rate; for each GPU's own "
            "published rate give price presets (one per GPU), or run one sweep per GPU",
            UserWarning,
            stacklevel=4,
        )


def _check_step_precision(a: dict[str, list[Any]]) -> None:
    """``precision`` names (bf16, fp8), and fp8 on each preset's GPU, as ``costmodel step
    --precision`` refuses them (:func:`costmodel.strategy.step.check_precision_support`)."""
    from ..strategy.step import check_precision_support, compute_precision

    given = a.get("precision", [])
    for v in given:
        compute_precision(v)  # raises "precision: must be bf16 or fp8, got ..."
    if "fp8" in given:
        for gpu in _preset_gpus(a):
            check_precision_support(gpu, "fp8", "mixed-adam")


def _check_step_compute(a: dict[str, list[Any]]) -> None:
    """The compute axes, as ``costmodel step --cluster`` takes its options: a measured
    ``compute_time`` replaces the MFU, the power limit (which sets only the predicted
    compute's speed) and the tokens, and ``tokens_per_gpu`` sets the
    micro-batch (a whole number of each ``sequence_length``'s sequences), so a second one
    beside it would be ignored: refused, naming the field."""
    if "compute_time" in a:
        if "power_limit_w" in a:  # the one rule of every surface, in the sweep's words
            from ..strategy.compute import speed_beside_measured

            raise ValueError(
                speed_beside_measured("power_limit_w", "compute_time", "sweep them separately")
            )
        for other in ("mfu", "tokens_per_gpu"):
            if other in a:
                raise ValueError(
                    f"{other}: not with compute_time (a measured compute time replaces the "
                    "priced compute); sweep them separately"
                )
        # a time measured on one GPU priced every other GPU of the grid at that GPU's speed
        # (and its own price): the rule of scenario --vs and Scenario.with_changes
        # (costmodel.scenario.measured_on_another_gpu), for a grid of presets
        gpus = sorted({str(g.name) for g in _preset_gpus(a)}) if "preset" in a else []
        if len(gpus) > 1:
            raise ValueError(
                f"compute_time: a measured compute time is of one GPU, and the presets run on "
                f"{', '.join(gpus)}: every other GPU would be priced at that GPU's speed and its "
                "own price; sweep each GPU with its own compute_time, or leave compute_time out "
                "for each GPU's predicted compute"
            )
    if "tokens_per_gpu" in a:
        if "micro_batch" in a:
            raise ValueError(
                "micro_batch: not with tokens_per_gpu (the tokens are micro_batch x "
                "sequence_length); give one of them"
            )
        from ..strategy.compute import micro_batch_of_tokens

        for tokens in a["tokens_per_gpu"]:
            LIMITS["tokens_per_gpu"].check("tokens_per_gpu", tokens)  # as step --tokens-per-gpu
            for seq in a.get("sequence_length", [4096]):  # costmodel step's --seq default
                micro_batch_of_tokens(tokens, seq)  # raises "tokens_per_gpu: ..."
    if "global_tokens" in a:
        _check_step_global_tokens(a)


def _check_step_global_tokens(a: dict[str, list[Any]]) -> None:
    """``global_tokens``, as ``costmodel step --global-tokens`` takes it: within its limit,
    a whole number of each ``sequence_length``'s sequences
    (:func:`costmodel.batch.global_batch_from_tokens`, which names the nearest valid counts),
    and beside at most one of the micro-batch (``micro_batch`` or ``tokens_per_gpu``) and
    ``accumulation``: the other is solved per row from that row's GPUs
    (:func:`costmodel.batch.solve_batch`; a row whose GPUs do not split it keeps the reason in
    its ``error``)."""
    from ..batch import global_batch_from_tokens

    LIMITS["global_tokens"].check("global_tokens", list(a["global_tokens"]))
    micro = next((n for n in ("micro_batch", "tokens_per_gpu") if n in a), None)
    if micro is not None and "accumulation" in a:
        raise ValueError(
            f"global_tokens, {micro}, accumulation: give at most two of them; the third is "
            "solved from global batch = micro-batch x accumulation x GPUs"
        )
    for tokens in a["global_tokens"]:
        for seq in a.get("sequence_length", [4096]):  # costmodel step's --seq default
            global_batch_from_tokens(int(tokens), int(seq))  # raises "global_tokens: ..."


def _check_step_layout(a: dict[str, list[Any]]) -> None:
    """The communication axes, checked as :class:`~costmodel.strategy.layout.Layout` checks
    ``costmodel step``'s options (the same allowed values and bounds), before any row.

    A dtype or bucket on a strategy that does not use it is accepted, as ``Layout`` accepts it
    (ddp all-gathers no parameters; fsdp/hsdp have no buckets): the row is that strategy's step.
    """
    from ..strategy.layout import GRAD_DTYPES, PARAM_DTYPES

    for name, allowed in (("param_dtype", PARAM_DTYPES), ("grad_dtype", GRAD_DTYPES)):
        bad = [v for v in a.get(name, []) if v not in allowed]
        if bad:
            raise ValueError(f"{name}: unknown {bad[0]!r}; allowed: {', '.join(allowed)}")
    # step --bucket's range and words (Layout's bucket_cap_bytes bounds are the same range:
    # tests/test_limits_one_road.py), before any layout is built from them
    LIMITS["bucket"].check("bucket_cap", a.get("bucket_cap", []))


def _strategies(requested: list[str]) -> list[str]:
    """``["all"]`` -> every strategy (a memory sweep's: each at its default layout; a step
    sweep keeps ``all``, every layout ``step --strategy all`` ranks: :func:`_all_layout_combos`);
    else the names, checked (lower case)."""
    from ..strategy.layout import STRATEGIES, unknown_strategy

    if requested == ["all"]:
        return list(STRATEGIES)
    if "all" in requested:
        raise ValueError("strategy: 'all' cannot be mixed with named strategies")
    out = [s.lower() for s in requested]
    for s in out:
        if s not in STRATEGIES:
            raise ValueError(unknown_strategy(s, allow_all=True))
    return out


#: the models a raw link (bandwidth=..., no cluster) can be swept with: one alpha-beta formula
_LINK_MODELS = ("textbook", "lesson")


def _names(requested: list[str]) -> list[str]:
    """Algorithm or protocol names as the rows carry them: lower case, each once. NCCL reads
    ``NCCL_ALGO=Ring`` / ``NCCL_PROTO=Simple`` in any case, and so does the cluster road; the
    row then shows ``ring``, not the typed ``Ring`` beside ``algorithm_used`` ``ring``, and
    ``ring,Ring`` is one row, not two."""
    return list(dict.fromkeys(str(units.choice_name(r)) for r in requested))


def _protocols(requested: list[str]) -> list[str]:
    """The protocol values of a block (:func:`_names`), each one NCCL's or ``auto``: a name
    that is no protocol is refused on every model, as ``predict_collective`` refuses it (the
    alpha-beta models, which have none, swept ``protocol=foo`` as ``auto``)."""
    from ..nccl import canonical_choice, is_choice_set, normalize_protocol

    names = _names(requested)
    for name in names:
        if is_choice_set(name):  # a set as NCCL_PROTO allows one (^ll), checked name by name
            canonical_choice(name, "protocol")
        elif name != "auto":
            normalize_protocol(name)
    return names


def _algorithms(op: str, model: str, requested: list[str], *, link: bool = False) -> list[str]:
    """The algorithm values of one (model, op) block: ``all`` -> every algorithm the model
    defines for the op (:func:`costmodel.models.algorithms`, the list ``collective --algorithm
    all`` gives); named ones checked against that table (an algorithm the op does not define
    is refused with the op's allowed list, as ``predict_collective`` refuses it). A preset
    sweep keeps each name as requested (its ``algorithm_used`` column names what ran); over a
    raw link, with no such column, each is the row it runs (``auto`` and aliases resolved:
    ``ring`` is broadcast's ``chain``), each once."""
    from .. import models

    requested = _names(requested)
    if requested != ["all"]:
        if "all" in requested:
            raise ValueError("algorithm: 'all' cannot be mixed with named algorithms")
        if link:
            return list(dict.fromkeys(models.link_algorithm(model, op, r) for r in requested))
        for r in requested:
            models.check_algorithm(model, op, r)
        return requested
    if model == models.CALIBRATED:
        raise ValueError(
            "algorithm: 'all' expands for model=lesson, textbook, nccl or nccl-table (a "
            "calibration's algorithms are its fits'); for calibrated name them, or "
            "list them with `predict_all_algorithms`"
        )
    return list(models.algorithms(model, op, link=link))


def _presets(
    requested: list[Any], axes: dict[str, Any] | None = None, *, warn: bool = False
) -> list[Any]:
    """``["all"]`` -> every cluster preset (shipped and user), else the names as given.

    With ``all``, a grid that spans more than one node (``nodes`` > 1, or ``ranks`` above a
    node's GPUs) leaves out the presets whose nodes have no network (``nics_per_node = 0``):
    "every preset" means every one that can build the grid; with ``warn`` (:func:`_check`, once a
    grid) a warning names those left out (their one-node rows go with
    them: it said nothing). A preset named explicitly is never
    left out (it is refused with the reason instead).
    """
    if requested == ["all"]:
        from .. import presets

        names = presets.names("cluster")
        a = axes or {}
        max_nodes = max((int(v) for v in a.get("nodes", [1])), default=1)
        max_ranks = max((int(v) for v in a.get("ranks", [1])), default=1)
        if max_nodes > 1 or max_ranks > 1:
            keep: list[Any] = []
            dropped: list[Any] = []
            for name in names:
                c = presets.cluster(name, field="preset")
                multi = max_nodes > 1 or max_ranks > c.gpus_per_node
                (keep if not multi or c.node.nics_per_node > 0 else dropped).append(name)
            if dropped and warn:  # said, not silent: their one-node rows go with them
                import warnings

                warnings.warn(
                    f"preset: all leaves out {', '.join(dropped)} (no network between nodes: "
                    "they cannot build the grid's node counts above one; sweep them alone at "
                    "one node)",
                    UserWarning,
                    stacklevel=2,
                )
            names = keep
        return names
    if "all" in requested:
        raise ValueError("preset: 'all' cannot be mixed with named presets")
    return requested


def _ops(requested: list[str]) -> list[str]:
    from .. import collectives
    from ..tables import canonical_op

    if requested == ["all"]:
        return list(collectives.OPS)
    return [canonical_op(op) for op in requested]  # "all-reduce" as `costmodel collective`


def _numeric_axes(grid: Grid) -> list[str]:
    if grid.kind == "memory":  # a grid has params or arch's sequence_length/micro_batch
        names = ["nodes", "ranks", "sequence_length", "micro_batch", "activations", "params"]
        return [*names, "gpu_memory"]
    if grid.kind == "step":
        names = [
            "nodes",
            "gpus_per_node",
            "ranks",
            "group_size",
            "params",
            "micro_batch",
            "sequence_length",
            "accumulation",
            "global_tokens",
            "mfu",
            "compute_time",
            "tokens_per_gpu",
            "comm_contention",
            "bucket_cap",
            "power_limit_w",
            "cuda_context",
            "fragmentation",
        ]
        return [n for n in names if n in grid.axes]
    names = ["nodes", "gpus_per_node", "ranks", "bandwidth", "latency", "gamma", "size"]
    return [n for n in names if n in grid.axes]


def _combos(grid: Grid) -> Iterator[tuple[dict[str, Any], int]]:
    """(categorical values, rows in that block) for every categorical combination, in order."""
    a = grid.axes
    numeric = _numeric_axes(grid)
    block = math.prod(len(a.get(n, [None])) for n in numeric)
    if grid.kind == "memory":
        from ..strategy.layout import STRATEGY_OF_STAGE

        strategies = a.get("strategy") or [
            STRATEGY_OF_STAGE[int(z)] for z in a.get("zero_stage", [0])
        ]
        mem = {
            "preset": _presets(a.get("preset", [None])),
            "arch": a.get("arch", [None]),  # None: a bare parameter count (params)
            "recipe": a.get("recipe", ["mixed-adam"]),
            # the layout: a strategy by name, else a stage's (0 ddp, 1 zero1, 2 zero2, 3 fsdp)
            "strategy": strategies,
            "group_size": a.get("group_size", [None]),  # None: one node of the preset
            "reshard_after_forward": a.get("reshard_after_forward", [None]),
            "gradient_as_bucket_view": a.get("gradient_as_bucket_view", [None]),
            "recompute": a.get("recompute", ["none"]),  # costmodel memory's defaults
            "loss": a.get("loss", ["fp32"]),
            "flash_attention": a.get("flash_attention", [True]),
            # the memory's overheads (costmodel memory --cuda-context, --fragmentation)
            "cuda_context": a.get("cuda_context", [0.0]),
            "fragmentation": a.get("fragmentation", [0.0]),
            # the node slice (costmodel memory --gpus-per-node); None: the preset's whole node
            "gpus_per_node": [int(v) for v in a["gpus_per_node"]]
            if "gpus_per_node" in a
            else [None],
            # the layout's dtypes and bucket (costmodel memory --param-dtype, --grad-dtype,
            # --bucket); None: not given, the step's defaults (and no column)
            "param_dtype": a.get("param_dtype", [None]),
            "grad_dtype": a.get("grad_dtype", [None]),
            "bucket_cap": [int(v) for v in a["bucket_cap"]] if "bucket_cap" in a else [None],
        }
        if strategies == ["all"]:
            yield from _all_memory_combos(a, mem, numeric)
            return
        for values in itertools.product(*mem.values()):
            yield dict(zip(mem, values, strict=True)), block
        return
    if grid.kind == "step":
        cats = _step_cats(a)
        if cats["strategy"] == ["all"]:
            yield from _all_layout_combos(a, cats, numeric)
            return
        for values in itertools.product(*cats.values()):
            yield dict(zip(cats, values, strict=True)), block
        return
    default_model = "nccl" if "preset" in a else "textbook"
    link = "preset" not in a
    for preset in _presets(a.get("preset", [None]), a):
        for model in a.get("model", [default_model]):
            for op in _ops(a.get("op", ["all_reduce"])):
                default_alg = "ring" if model in _LINK_MODELS else "auto"
                for alg in _algorithms(op, model, a.get("algorithm", [default_alg]), link=link):
                    for proto in _protocols(a.get("protocol", ["auto"])):
                        for launch in _launches(a):
                            cat = {
                                "preset": preset,
                                "model": model,
                                "op": op,
                                "algorithm": alg,
                                "protocol": proto,
                                "launch": launch,
                            }
                            yield cat, block


def _step_cats(a: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """A step grid's categorical axes, each unset one at ``costmodel step``'s default."""
    return {
        "preset": _presets(a["preset"], a),
        "model": a.get("model", ["nccl"]),
        "arch": a.get("arch", [None]),
        "strategy": a.get("strategy", ["ddp"]),
        "recipe": a.get("recipe", ["mixed-adam"]),
        "recompute": a.get("recompute", ["none"]),
        "loss": a.get("loss", ["fp32"]),
        # None: not set (FlashAttention, as costmodel step; no column for it)
        "flash_attention": a.get("flash_attention", [None]),
        "reshard_after_forward": a.get("reshard_after_forward", [None]),
        "gradient_as_bucket_view": a.get("gradient_as_bucket_view", [None]),
        "param_dtype": a.get("param_dtype", ["bf16"]),  # costmodel step's defaults
        "grad_dtype": a.get("grad_dtype", [None]),  # None: the recipe's
        "precision": a.get("precision", [None]),  # None: the recipe's (fp8 for fp8-mixed)
        "no_sync": a.get("no_sync", [True]),
        # time and cost to train: one setting for every row (one value each: no crossing)
        "tokens": a.get("tokens", [None]),
        "price": [tuple(a["price"])] if "price" in a else [None],
        "usd_per_gpu_hour": a.get("usd_per_gpu_hour", [None]),
    }


def _launches(a: dict[str, list[Any]]) -> list[dict[str, Any] | None]:
    """The launches of a collective grid's blocks (:data:`LAUNCH_AXES` crossed, each unset one
    at its default), or ``[None]`` for a grid that sets none (no launch columns)."""
    if not any(n in a for n in LAUNCH_AXES):
        return [None]
    values = [a.get(n, [d]) for n, d in LAUNCH_AXES.items()]
    return [dict(zip(LAUNCH_AXES, v, strict=True)) for v in itertools.product(*values)]


#: the numeric axes a ``strategy=all`` block pins (the layouts depend on the ranks): a step
#: sweep's nodes and node slice (or its ranks), a memory sweep's ranks
_PINNED_AXES = ("nodes", "gpus_per_node", "ranks")


def _all_memory_combos(
    a: dict[str, list[Any]], mem: dict[str, list[Any]], numeric: list[str]
) -> Iterator[tuple[dict[str, Any], int]]:
    """A memory sweep's ``strategy=all``: for each categorical combination and rank count,
    one block per layout ``costmodel step --strategy all`` ranks on that many ranks of the
    preset's node (:func:`costmodel.strategy.advisor.candidate_layouts`: ddp, zero1, zero2,
    fsdp with and without resharding, hsdp at each group that divides the ranks and fits the
    node, or the slice of it ``gpus_per_node`` gives), in the advisor's order; ``cat`` holds
    the layout's keywords and ``pinned`` the block's ``ranks``. The list ``costmodel memory
    --strategy all`` prints (with ``--gpus-per-node``: that slice)."""
    from .. import presets
    from ..hardware import default_ranks
    from ..strategy.advisor import candidate_layouts

    block = math.prod(len(a.get(n, [None])) for n in numeric if n not in _PINNED_AXES)
    gpn: dict[str, int] = {}
    for values in itertools.product(*mem.values()):
        cat = dict(zip(mem, values, strict=True))
        name = cat["preset"]
        if name not in gpn:
            gpn[name] = int(presets.cluster(name, field="preset").gpus_per_node)
        per_node = gpn[name] if cat["gpus_per_node"] is None else int(cat["gpus_per_node"])
        # no ranks axis: its nodes, else one node of the preset (its slice), as costmodel
        # memory --cluster
        counts = _memory_rank_counts(a, per_node, default_ranks(per_node))
        nodes = a.get("nodes", [None] * len(counts))
        for ranks, n in zip(counts, nodes, strict=True):
            pinned = {"ranks": ranks} if n is None else {"nodes": n, "ranks": ranks}
            for kw in candidate_layouts(int(ranks), per_node):
                yield (
                    {
                        **cat,
                        "strategy": kw["strategy"],
                        "group_size": kw.get("group_size"),
                        "reshard_after_forward": kw.get("reshard_after_forward"),
                        "pinned": pinned,
                    },
                    block,
                )


def _all_layout_combos(
    a: dict[str, list[Any]], cats: dict[str, list[Any]], numeric: list[str]
) -> Iterator[tuple[dict[str, Any], int]]:
    """A step sweep's ``strategy=all``: for each categorical combination, node count and
    node slice (or rank count: :func:`_step_shapes`), one block per layout the advisor ranks
    on that cluster (:func:`costmodel.strategy.advisor.candidate_layouts` of its ranks and GPUs
    per node, the list ``costmodel step --strategy all`` ranks), in the advisor's order. A
    block's ``cat`` holds the layout's keywords (``strategy``, ``reshard_after_forward``) and
    ``pinned``: the values of the numeric axes it fixes (``nodes``, ``gpus_per_node`` or
    ``ranks``, and hsdp's ``group_size``); the block is the other numeric axes. Each row names its layout as a
    named sweep's does (the step's :meth:`~costmodel.strategy.layout.Layout.identity`)."""
    from ..strategy.advisor import candidate_layouts

    block = math.prod(len(a.get(n, [None])) for n in numeric if n not in _PINNED_AXES)
    shapes: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    for values in itertools.product(*cats.values()):
        cat = dict(zip(cats, values, strict=True))
        if cat["preset"] not in shapes:
            shapes[cat["preset"]] = list(_step_all_clusters(a, cat["preset"]))
        for ranks, per_node, fixed in shapes[cat["preset"]]:
            if ranks == 0:  # a count this preset's node cannot build (preset=all): one block
                # of refused rows, strategy "all" as asked (no cluster lists its layouts)
                yield {**cat, "reshard_after_forward": None, "pinned": dict(fixed)}, block
                continue
            for kw in candidate_layouts(ranks, per_node):
                pinned = dict(fixed)
                if "group_size" in kw:
                    pinned["group_size"] = kw["group_size"]
                yield (
                    {
                        **cat,
                        "strategy": kw["strategy"],
                        "reshard_after_forward": kw.get("reshard_after_forward"),
                        "pinned": pinned,
                    },
                    block,
                )


def _all_layout_rows(
    a: dict[str, list[Any]], cats: dict[str, list[Any]], numeric: list[str]
) -> int:
    """The rows :func:`_all_layout_combos` yields, counted without building a layout: per
    preset, each cluster's :func:`costmodel.strategy.advisor.candidate_count` (one block for a
    count the node cannot build), times the other categorical axes and the block. What
    :data:`MAX_STEP_ROWS` is checked on before any layout or row."""
    from ..strategy.advisor import candidate_count

    block = math.prod(len(a.get(n, [None])) for n in numeric if n not in _PINNED_AXES)
    others = math.prod(len(v) for k, v in cats.items() if k != "preset")
    blocks = sum(
        1 if ranks == 0 else candidate_count(ranks, per_node)
        for preset in cats["preset"]
        for ranks, per_node, _ in _step_all_clusters(a, preset)
    )
    return blocks * others * block


def _step_all_clusters(
    a: dict[str, list[Any]], preset: str
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """A step sweep's clusters on ``preset`` (:func:`_step_shapes`), as (ranks, GPUs per node,
    the values a ``strategy=all`` block pins); ranks 0 for a count the node cannot build. The
    preset is read once per node slice (``presets.cluster``), then given each node count
    (``presets.cluster`` of that Cluster: a count it cannot take is refused, as before)."""
    from .. import presets

    sliced: dict[int | None, Any] = {}
    for nodes, gpn, fixed in _step_shapes(a, preset):
        if nodes == 0:
            yield 0, 0, fixed
            continue
        if gpn not in sliced:
            sliced[gpn] = presets.cluster(preset, gpus_per_node=gpn, field="preset")
        c = presets.cluster(sliced[gpn], nodes=nodes)  # a node count it cannot take: refused
        yield int(c.ranks), int(c.gpus_per_node), fixed


def _step_shapes(
    a: dict[str, list[Any]], preset: str
) -> Iterator[tuple[int, int | None, dict[str, Any]]]:
    """A step sweep's clusters on ``preset``, in the grid's order: (nodes, GPUs per node, the
    values a ``strategy=all`` block pins), the GPUs per node None for the preset's whole node.
    A ``ranks`` axis: each count's nodes and GPUs per node from
    :func:`costmodel.sweep.evaluate.ranks_slice` on the preset's node (whole nodes as ``step
    --cluster --ranks N`` reads them, :func:`costmodel.cli._common.preset_ranks`), the block
    pinning the rank count; else every ``nodes`` (1) by every ``gpus_per_node`` (the whole
    node), the block pinning those. A count the node cannot build (``preset=all``,
    :func:`costmodel.sweep.evaluate.ranks_rows`) is 0 nodes: no cluster, no layouts."""
    if "ranks" in a:
        from .. import presets
        from .evaluate import ranks_rows

        per_node = int(presets.cluster(preset, field="preset").gpus_per_node)
        counts = a["ranks"]
        nodes, gpn, _why = ranks_rows(counts, per_node, preset)
        for r, k, g in zip(counts, nodes.tolist(), gpn.tolist(), strict=True):
            yield int(k), (None if g == per_node else int(g)), {"ranks": r}
        return
    for nodes in a.get("nodes", [1]):
        for g in a.get("gpus_per_node", [None]):
            pinned: dict[str, Any] = {"nodes": nodes}
            if g is not None:
                pinned["gpus_per_node"] = g
            yield int(nodes), (None if g is None else int(g)), pinned


def _as_grid(
    grid: Grid | Mapping[str, Any] | str | os.PathLike[str] | None,
    kind: str,
    axes: Mapping[str, Any],
) -> Grid:
    if isinstance(grid, Grid):
        if axes:
            return make_grid(overridden(grid.axes, grid.kind, axes), kind=grid.kind)
        return grid
    if isinstance(grid, str | os.PathLike):
        if isinstance(grid, str) and grid in KINDS and not Path(grid).exists():
            # sweep("step", ranks=...) read "step" as a grid file that is not there: the kind
            # is its own keyword, as the CLI's `sweep step` spells it positionally
            raise ValueError(
                f"grid: {grid!r} is a kind of sweep, not a grid file; give it as `kind` "
                "(the first argument is a grid: a TOML file, a mapping or a Grid)"
            )
        loaded = load_grid(grid, kind)  # a file that names no kind is of ``kind``
        return (
            make_grid(overridden(loaded.axes, loaded.kind, axes), kind=loaded.kind)
            if axes
            else loaded
        )
    if grid is not None and axes:
        return make_grid(overridden(dict(grid), kind, axes), kind=kind)
    return make_grid(grid, kind=kind, **axes)


def overridden(base: Mapping[str, Any], kind: str, axes: Mapping[str, Any]) -> dict[str, Any]:
    """``base``'s axes with each one ``axes`` names replaced, however either spells it (a name
    or an alias: ``sizes`` replaces a grid file's ``size``), then ``axes``; an unknown name is
    kept, for :func:`make_grid` to refuse. ``costmodel sweep GRID --set`` and ``cm.sweep(GRID,
    **axes)`` both merge so (``--set sizes=2MB`` over a file's ``size`` was refused as an axis
    "given twice").

    >>> overridden({"size": [8], "ranks": [8]}, "collective", {"sizes": "1MB"})
    {'ranks': [8], 'sizes': '1MB'}
    """

    def name(key: str) -> str:
        try:
            return _axis(kind, key).name
        except ValueError:
            return key

    named = {name(k) for k in axes}
    return {**{k: v for k, v in base.items() if name(k) not in named}, **axes}
