"""One set of input limits for every command and the sweep: the range and the message.

Each kind of value (node count, message size, sequence length, price, ...) has one
:class:`Limit`: the CLI checks every command's options against :data:`LIMITS` by parameter
name before the command runs (:func:`costmodel.cli._common.limited`), and the sweep checks its
axes against the same limits, so ``--nodes 1000001`` gets the same answer from ``collective``,
``predict``, ``scenario`` and ``sweep --set nodes=...``: ``"--nodes: must be RULE, got VALUE"``.
The bounds are the models' own (a Cluster holds at most 1,000,000 nodes, a collective buffer at
most 2**44 B) or plausibility bounds far outside any real job (a step of 1e6 s, 1,000 USD per
GPU-hour), so a typo is refused instead of answered.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import units


@dataclasses.dataclass(frozen=True)
class Limit:
    """The allowed range of one kind of option value, the same for every command.

    ``parse`` turns the option's raw value (an int, a float or the text with units) into the
    numbers to check; ``lo``/``hi`` bound them (``lo_open``: strictly above ``lo``); ``rule``
    says the range in the message, ``"--nodes: must be RULE, got VALUE"``; ``hi_open``:
    strictly below ``hi`` (a fraction in [0, 1)).
    """

    rule: str
    lo: float
    hi: float
    parse: Callable[[Any], list[float]]
    lo_open: bool = False
    whole: bool = False
    hi_open: bool = False
    #: 0 is allowed besides ``lo``..``hi`` (an empty message: 0 s)
    zero_ok: bool = False

    def check(self, option: str, value: Any) -> None:
        if value is None:
            return
        values = value if isinstance(value, list | tuple) else [value]
        for raw in values:
            try:
                numbers = self.parse(raw)
            except (ValueError, TypeError, ArithmeticError) as exc:
                text = str(exc)
                if f"must be {self.rule}, got " in text:  # a sweep axis already says it
                    raise ValueError(f"{option}: {text.split(': ', 1)[1]}") from None
                if ": cannot parse range " in text:  # a range's form, the sweep's one line
                    raise ValueError(f"{option}: {text.split(': ', 1)[1]}") from None
                raise refusal(option, self.rule, raw, exc) from None
            for x in numbers:
                if not self.holds(x):
                    raise ValueError(f"{option}: must be {self.rule}, got {raw!r}")

    def holds(self, x: float) -> bool:
        """Whether the number ``x`` is in this range (finite; whole where ``whole``): the test
        of :meth:`check`, for a formula that checks a number it has already read.

        >>> LIMITS["mfu"].holds(0.4), LIMITS["mfu"].holds(1e-300), LIMITS["mfu"].holds(math.nan)
        (True, False, False)
        """
        if self.zero_ok and x == 0:
            return True
        ok = math.isfinite(x) and (x > self.lo if self.lo_open else x >= self.lo)
        ok = ok and (x < self.hi if self.hi_open else x <= self.hi)
        return ok and (not self.whole or x == math.floor(x))


def is_bound(exc: BaseException) -> bool:
    """Whether a parser refused a value for one of its own bounds (``must be >= 0 bytes``, its
    cap ``above the largest size accepted``), which the caller's range says in its own words,
    rather than for a text it cannot read.

    >>> is_bound(ValueError("size: must be >= 0 bytes")), is_bound(ValueError("cannot parse"))
    (True, False)
    """
    text = str(exc)
    return "above the largest" in text or ": must be " in text or text.startswith("must be ")


def refusal(option: str, rule: str, raw: Any, exc: BaseException) -> ValueError:
    """``"OPTION: must be RULE, got RAW"`` for a value its parser refused (``exc``), with one
    range: a bound of the parser's own (``must be >= 0 bytes``, its cap) is the rule's to say,
    so it is dropped; only a value that does not parse keeps the parser's reason after a
    ``;`` (``'14Gb' is in bits``), which the rule does not say. The option is named once: the
    parser's own generic name (``count: ``, ``size: ``) and its ``cannot parse 'RAW'`` (the
    ``got`` says it) are dropped, and the reason is not put in brackets (it has its own:
    ``G (B)``).

    >>> str(refusal("--size", "a size in 1 B..16 TiB", "-1GB", ValueError("size: must be >= 0 bytes")))
    "--size: must be a size in 1 B..16 TiB, got '-1GB'"
    >>> str(refusal("--nodes", "a whole number in 1..8", "2x",
    ...             ValueError("count: cannot parse '2x'; expected a whole number: '8', '2k'")))
    "--nodes: must be a whole number in 1..8, got '2x'; expected a whole number: '8', '2k'"

    A boolean (a grid file's ``true``) is said once, in TOML's spelling, not Python's:

    >>> str(refusal("nodes", "a whole number in 1..8", True,
    ...             TypeError("count: expected a whole number, got a bool (True)")))
    'nodes: must be a whole number in 1..8, got true (a boolean); expected a whole number'
    """
    shown = f"{str(raw).lower()} (a boolean)" if isinstance(raw, bool) else repr(raw)
    head = f"{option}: must be {rule}, got {shown}"
    if is_bound(exc):
        return ValueError(head)
    text = _GENERIC_NAME.sub("", str(exc), count=1)
    text = text.removeprefix(f"cannot parse {raw!r}").removeprefix(";").strip()
    if isinstance(raw, bool):  # the head says the boolean already
        text = _A_BOOL.sub("", text)
    return ValueError(f"{head}; {text}" if text else head)


#: the generic name a parser's message starts with (``count: ``, ``size: ``), not the option's
_GENERIC_NAME = re.compile(r"^[a-z_]+: ")

#: a parser's own words for a boolean it refused (``, got a bool (True)``), which
#: :func:`refusal`'s head says in TOML's spelling
_A_BOOL = re.compile(r",? got a bool \((?:True|False)\)")


def _num(raw: Any) -> list[float]:
    if isinstance(raw, bool):
        raise TypeError("not a number")
    return [float(raw)]


def _whole(raw: Any) -> list[float]:
    """A whole count: text in the one count grammar (:func:`costmodel.units.read_count`:
    ``8``, ``1e3``, ``2k``; ``1_000`` is refused), kept a Python int where whole so a bound
    compares exactly; a fraction (``1.5``, ``1e-1``) is read and left to the range to refuse."""
    return [units.read_count(raw, name="count")] if isinstance(raw, str) else _num(raw)


def parse_count_option(name: str, raw: Any) -> Any:
    """The value of an integer option ``name`` (a parameter of a command) as typed: plain
    digits as before, any other spelling of the one count grammar (``1e3``, ``2k``) checked
    against the option's limit in the words typed (``--nodes: must be ..., got '1e7'``) and
    read exactly (:func:`costmodel.units.parse_int`). The CLI's one reader of integer options.

    >>> parse_count_option("nodes", "2k"), parse_count_option("nodes", "16")
    (2000, 16)
    """
    if not isinstance(raw, str):
        return raw  # a default
    s = raw.strip()
    if len(s) <= units.MAX_TEXT_LENGTH and _DIGITS.fullmatch(s):
        return int(s)  # digits: the limit is checked with the command's other options
    limit = LIMITS.get(name)
    if (refused := comma_count_refusal(option_name(name), name, raw)) is not None:
        raise refused
    if limit is not None:
        limit.check(option_name(name), raw)
    return units.parse_int(raw, name=option_name(name))


_DIGITS = re.compile(r"[+-]?[0-9]+")


def comma_count_refusal(option: str, name: str, raw: Any) -> ValueError | None:
    """The refusal of a one-number count option (``--nodes``, ``batch --ranks``) given with
    comma thousands (``'1,000'``): its range and how to write the number; None for other text.
    Said where the option takes one number, not the list a list option reads it as.

    >>> str(comma_count_refusal("--nodes", "nodes", "1,000"))
    "--nodes: must be a whole number in 1..1,000,000, got '1,000'; a comma groups no digits: write 1000 or 1k"
    """
    hint = units.comma_thousands(raw)
    if not hint:
        return None
    reason = f"cannot parse {raw!r}; a comma groups no digits: {hint}"
    limit = LIMITS.get(name)
    if limit is None:
        return ValueError(f"{option}: {reason}")
    return refusal(option, limit.rule, raw, ValueError(f"count: {reason}"))


def _sizes_of(raw: Any) -> list[float]:
    from .sweep import parse_values

    if isinstance(raw, str) and ("," in raw or ".." in raw or ":" in raw):
        return [float(x) for x in parse_values("size", raw)]
    return [float(units.parse_bytes(raw, name="size"))]


def _count(raw: Any) -> list[float]:
    return [float(units.parse_count(raw, name="count"))] if isinstance(raw, str) else _num(raw)


def _tokens(raw: Any) -> list[float]:
    """A token count in the grammar of every token count (``8k``, ``8Ki``, ``2T``), kept a
    Python int so a bound compares exactly (``10000000000000001`` is past 1e16, though
    ``float()`` rounds it onto it)."""
    return [units.parse_tokens(raw, name="tokens")] if isinstance(raw, str) else _num(raw)


def _bytes_of(raw: Any) -> list[float]:
    return [float(units.parse_bytes(raw, name="size"))]


def _ranks_of(raw: Any) -> list[float]:
    """A rank count, or a list or range of them as the sweep reads it (``8,16``, ``8..64x2``)."""
    from .sweep import parse_values

    if isinstance(raw, str) and ("," in raw or ".." in raw or ":" in raw):
        return [float(x) for x in parse_values("ranks", raw)]
    return _whole(raw)


def _duration(raw: Any) -> list[float]:
    return [units.parse_duration(raw, name="duration")] if isinstance(raw, str) else _num(raw)


def _rate(raw: Any) -> list[float]:
    return [units.parse_rate(raw, name="bandwidth")] if isinstance(raw, str) else _num(raw)


MAX_NODES = 1_000_000
"""Nodes in one job (the Cluster model's bound): every command, the sweep and the app."""
MAX_MESSAGE_BYTES = 2**44
"""Largest collective buffer (16 TiB), as :func:`costmodel.predict.predict_collective`."""

MESSAGE_BYTES = Limit("between 0 and 2**44 B (16 TiB)", 0, MAX_MESSAGE_BYTES, _bytes_of)
"""The ``message_bytes`` of the API's alpha-beta formulas (``cm.allreduce_time``,
``cm.bytes_per_rank``, the topology formulas, the named rows): the commands' range (:data:`LIMITS`'
``size``) with 0 B (an empty message: 0 s, nothing is sent) and any fraction of a byte (a
computed size: a node's shard ``M / g``, a crossover between two rows), refused past 2**44 B as
the cluster form refuses it (1e30 B answered 3.9e19 s over one link). A size on a cluster
(:func:`costmodel.predict.predict_collective`) holds :data:`CLUSTER_MESSAGE_BYTES`."""

CLUSTER_MESSAGE_BYTES = Limit(
    "0 or between 1 and 2**44 B (16 TiB)", 1, MAX_MESSAGE_BYTES, _bytes_of, zero_ok=True
)
"""The ``message_bytes`` of :func:`costmodel.predict.predict_collective` (so of
``cm.collective_time`` on a cluster, the sweep and every model on a cluster): the commands' range
(1 B..2**44 B) with 0 B (an empty message: 0 s). Below 1 B is refused, scalar or array, as the
commands refuse it (0.5 B answered 15 us): a collective sends whole bytes. Decision: a size of
1 B or more need not be whole here (the commands take whole bytes): a notebook's
``np.logspace`` grid draws a smooth curve. A size past 2**44 B, or NaN, is refused in
:data:`MESSAGE_BYTES`' words, the one-link formulas' (one message for an oversize buffer on every
road); the alpha-beta formulas keep :data:`MESSAGE_BYTES` (fractions of a byte: they are
evaluated at computed sizes)."""

MIN_MFU = 0.001
"""The lowest model FLOP utilisation any surface takes (``mfu``, ``--mfu``, a sweep's axis, the
app's box): 0.1% of the dense peak, a compute 1,000 times the ideal. Training runs report tens
of percent (PaLM 46%, Megatron-LM's GPT runs 40-50%) and a badly tuned one a few percent; below
0.1% the number is a typo, not a run (1e-300 priced a 7B step at 1.9e299 s, and any MFU above 0
was taken). A measured compute time (``compute_time_s``) is bounded the same way: one implying
an MFU above the dense peak is refused (:mod:`costmodel._checks`), and the step it prices is
at most :data:`LIMITS`' 1e6 s per micro-batch."""

RECOMPUTE_EXTRA = Limit(
    "a recomputation's extra work in [0, 1/3] of forward + backward (full: 1/3)",
    0.0,
    1.0 / 3.0 + 1e-12,
    _num,
)
"""The extra work ``r`` activation recomputation adds over forward + backward [-]
(``recompute_extra`` of :func:`costmodel.training.training_cost`): 0 without recomputation, at
most a second forward, which is a third of forward + backward (``2N`` of ``6N`` FLOPs per token,
Kaplan et al. 2020): :func:`costmodel.compute.recompute_extra`'s full recomputation, the most
any of its modes adds. Below 0 the GPUs would run less than the model's FLOPs (-0.9 let a step
imply an MFU of 2.65); above 1/3 no recomputation mode exists. The upper bound carries 1e-12
for the float rounding of a weighted mean of thirds (matmul and attention)."""

_WHOLE = "a whole number in {lo}..{hi}"
_NODES = Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, MAX_NODES, _whole, whole=True)
_GPUS = Limit(_WHOLE.format(lo=1, hi="1,024"), 1, 1024, _whole, whole=True)
NICS_PER_NODE = Limit(_WHOLE.format(lo=0, hi="1,024"), 0, 1024, _whole, whole=True)
"""``nics_per_node`` of the topology formulas (``cm.flat_ring_allreduce_time``,
:func:`costmodel.topology.per_gpu_inter_bandwidth`): the Node model's range (0..1,024 network
ports; 0 is a node without a network, one node), as their ``nodes`` and ``gpus_per_node`` hold
:data:`LIMITS`' (1e30 NICs answered 6.25e39 B/s a GPU)."""
_RANKS = Limit(_WHOLE.format(lo=1, hi="1,000,000,000"), 1, 1e9, _ranks_of, whole=True)
LINK_RANKS = _RANKS
"""``--ranks`` of a collective over a raw link (``collective``/``sweep`` with a bandwidth): the
range of every command's ``--ranks``. One rank is answered, 0 s with a note (it has no one to
exchange with, as ``cm.allreduce_time(M, 1, B)`` and a one-GPU cluster say), not refused: one rule
for the API, the link and the cluster forms."""
_BATCH = Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, 1e6, _whole, whole=True)
# a sequence length in the token grammar of every token count (4096, 8k, 8Ki)
_SEQ = Limit(_WHOLE.format(lo=1, hi="100,000,000 tokens"), 1, 1e8, _tokens, whole=True)
_SIZE = Limit("a size in 1 B..16 TiB (2**44 B), whole bytes", 1, MAX_MESSAGE_BYTES, _sizes_of)
# the memory of the card a step or a memory answer is checked against: more than nothing, and
# no more than the largest size any command takes (16 TiB, the largest collective buffer)
_GPU_MEMORY = Limit(
    "a GPU memory in 1 B..16 TiB (2**44 B), whole bytes, e.g. 80GB", 1, MAX_MESSAGE_BYTES, _bytes_of
)
_ITERS = Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, 1e6, _whole, whole=True)
_DURATION = Limit("a duration in (0, 1e6] s, e.g. 400ms, 2s", 0, 1e6, _duration, lo_open=True)
_PRICE = Limit("a price in (0, 1000] USD per GPU-hour", 0, 1000, _num, lo_open=True)

TOLERANCE = Limit("a fraction in (0, 1000], e.g. 0.25 for 25 %", 0, 1000, _num, lo_open=True)
"""``validate compare --tolerance`` and :func:`costmodel.validation.compare.exceeds`' ``tolerance``."""

LIMITS: dict[str, Limit] = {
    "nodes": _NODES,
    "gpus_per_node": _GPUS,
    "gpus": _GPUS,
    "nproc": _GPUS,
    "ranks": _RANKS,
    "seq": _SEQ,
    "sequence_length": _SEQ,
    "micro_batch": _BATCH,
    "local_batch": _BATCH,
    "local": _BATCH,
    "accumulation": _BATCH,
    "global_": Limit(_WHOLE.format(lo=1, hi="1e12"), 1, 1e12, _whole, whole=True),
    "size": _SIZE,
    "sizes": _SIZE,
    "min_bytes": Limit(
        "a size in 0 B..16 TiB (2**44 B), whole bytes", 0, MAX_MESSAGE_BYTES, _sizes_of
    ),
    "max_bytes": _SIZE,
    "gpu_memory": _GPU_MEMORY,
    # `memory`'s overheads, the Memory page's "CUDA context, fragmentation" boxes: the context
    # a size as every other (0 allowed: none, the default), the allowance a fraction of what the
    # allocator holds (training_memory's range: 1 would be everything held again, unbounded)
    "cuda_context": Limit(
        "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB", 0, MAX_MESSAGE_BYTES, _bytes_of
    ),
    "fragmentation": Limit("a fraction in [0, 1)", 0, 1, _num, hi_open=True),
    # step/scenario/train --bucket (ddp's bucket_cap, zero1/zero2's bucket): Scenario's
    # bucket_cap_bytes bounds, said once for the cluster step, the one-link step, scenario and
    # train alike (they answered four different messages for --bucket 0)
    "bucket": Limit(
        "a bucket size in 1 B..10 TB (1e13 B), whole bytes, e.g. 50MiB", 1, 1e13, _bytes_of
    ),
    "params": Limit("a parameter count in 1..1e15, e.g. 7B", 1, 1e15, _count),
    "tokens": Limit("a token count in 1..1e16, e.g. 2T", 1, 1e16, _tokens),
    # the global batch of one step in tokens (batch/step/scenario/train --global-tokens): a
    # whole count bounded as the token budget is (a step's batch is never more than the run's
    # tokens); 1e30 was solved into a refusal naming solve_batch's global_batch limit
    "global_tokens": Limit(
        "a whole number of tokens in 1..1e16, e.g. 4Mi", 1, 1e16, _tokens, whole=True
    ),
    "tokens_per_gpu": Limit(
        "a token count in 1..1e9 per GPU and step, e.g. 8Ki", 1, 1e9, _tokens, whole=True
    ),
    "steps": Limit(_WHOLE.format(lo=1, hi="1e12"), 1, 1e12, _whole, whole=True),
    "compute_time": _DURATION,
    "step_time": _DURATION,
    "timeout": _DURATION,
    # alpha of the one-link formulas: a message's start-up cost, ns to tens of us on real links
    # (NVLink ~0.6 us, InfiniBand ~2.7 us per hop); above 1 s it is a typo, not a link
    "latency": Limit("a latency in 0..1 s per message, e.g. 5us", 0, 1, _duration),
    # a link's per-direction rate: 1 MB/s (10 Mb/s Ethernet) .. 1 PB/s (1000x NVLink 5's
    # 900 GB/s); a bare number is B/s, so "--bandwidth 50" (meant as 50 GB/s) is refused
    "bandwidth": Limit(
        "a per-direction rate in 1 MB/s..1 PB/s, e.g. 50GB/s, 400Gb/s", 1e6, 1e15, _rate
    ),
    # gamma of the one-link formulas, a reduction's cost per byte: 1/(its rate), so the slowest
    # link's 1 MB/s bounds it (a GPU reduces at hundreds of GB/s, ~1e-11 s/B); 1e300 overflowed
    # into a refusal naming gamma_s_per_byte
    "gamma": Limit("a reduction cost in 0..1e-6 s/B (1 MB/s or faster)", 0, 1e-6, _num),
    # the one-link step's peak dense FLOP/s per GPU: a bare number is FLOP/s, so "989" (meant as
    # 989T) is refused rather than priced at 870 billion seconds a step; 1 GFLOP/s .. 1 EFLOP/s
    # (B200's dense fp8 is 4.5 PFLOP/s)
    "peak_flops": Limit(
        "a peak in 1 GFLOP/s..1 EFLOP/s per GPU (1e9..1e18), e.g. 989T", 1e9, 1e18, _count
    ),
    # the one-link step's bytes per gradient element: fp8 1, bf16 2, fp32 4, fp64 8 (a fraction:
    # a sub-byte format); 1e300 answered a step of 2.76e299 s
    "gradient_bytes": Limit(
        "a size per gradient element in (0, 8] B (fp8 1, bf16 2, fp32 4)", 0, 8, _num, lo_open=True
    ),
    # memory --activations: a size as the CUDA context's (0: none)
    "activations": Limit(
        "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 10GB", 0, MAX_MESSAGE_BYTES, _bytes_of
    ),
    # a learning rate: > 0 (0 trains nothing; the scaled rate is a multiple of it), and a
    # plausibility bound far above any tuned rate (Adam ~1e-4..1e-2, SGD ~0.1..10)
    "base_lr": Limit("a learning rate in (0, 100]", 0, 100, _num, lo_open=True),
    # fractions: a NaN is refused as not finite, in this range's words (typer's own min/max
    # named one bound, "Input should be less than or equal to 1", for a NaN too)
    "mfu": Limit(f"a model FLOP utilisation in [{MIN_MFU:g}, 1]", MIN_MFU, 1, _num),
    "contention": Limit("an overlap contention in [0, 1]", 0, 1, _num),
    "usd_per_gpu_hour": _PRICE,
    "usd_per_gpu_hour_b": _PRICE,  # scenario --vs's B side: the same range as A's
    # options typer bounded itself, whose message named one bound ("Input should be greater
    # than or equal to 1", also for --zero -1 under a 0..3 rule) and whose help said a range
    # the command did not keep (--usd-per-gpu-hour-b "[x>=0.0]" where 0 is refused)
    "zero": Limit(
        "a ZeRO stage in 0..3 (0 ddp, 1 zero1, 2 zero2, 3 fsdp)", 0, 3, _whole, whole=True
    ),
    "group_size": Limit(
        _WHOLE.format(lo=1, hi="1,000,000,000") + " (a divisor of the ranks)",
        1,
        1e9,
        _whole,
        whole=True,
    ),
    "base_batch": Limit(_WHOLE.format(lo=1, hi="1e12") + " samples", 1, 1e12, _whole, whole=True),
    # the global batch a learning rate was tuned at, in tokens (batch --base-tokens, the Batch
    # page's box): a whole count, bounded as the token budget is (1e16, far above any batch)
    "base_tokens": Limit(
        "a whole number of tokens in 1..1e16, e.g. 1Mi", 1, 1e16, _tokens, whole=True
    ),
    # batch --critical-batch, in the unit of the base batch (tokens with --base-tokens, samples
    # with --base-batch): a whole count bounded as --base-tokens is; an empty one was ignored
    "critical_batch": Limit(
        "a whole number of tokens in 1..1e16 (of samples for a base batch in samples), e.g. 2Mi",
        1,
        1e16,
        _tokens,
        whole=True,
    ),
    "port": Limit(_WHOLE.format(lo=1, hi="65,535"), 1, 65535, _whole, whole=True),
    "iters": _ITERS,
    "warmup": Limit(_WHOLE.format(lo=0, hi="1,000,000"), 0, 1e6, _whole, whole=True),
    # a learning-rate warmup's steps (batch.warmup_learning_rate, the Batch page's box): 0 is
    # no warmup; bounded as a run's steps are (a warmup longer than any run warms nothing)
    # the Memory page's transformer shape of a bare count (memory.activation_bytes: layers,
    # hidden size, heads; an Architecture's are >= 1): a plausibility bound far above any
    # published shape (hundreds of layers, hidden sizes of tens of thousands)
    "layers": Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, 1e6, _whole, whole=True),
    "hidden": Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, 1e6, _whole, whole=True),
    "heads": Limit(_WHOLE.format(lo=1, hi="1,000,000"), 1, 1e6, _whole, whole=True),
    "warmup_steps": Limit(_WHOLE.format(lo=0, hi="1e12"), 0, 1e12, _whole, whole=True),
    "step_factor": Limit(_WHOLE.format(lo=2, hi="1,024"), 2, 1024, _whole, whole=True),
    "chunk_rows": Limit(_WHOLE.format(lo=1, hi="1e9"), 1, 1e9, _whole, whole=True),
    # validate compare's check of |busbw error| (busbw_pred / busbw_meas - 1, uncapped): a
    # fraction, 0.25 = 25 %. Above 0 (0 judges every row a miss) and at most 1000 (a prediction
    # 1001x the measured busbw): rows outside the model's regimes (gloo on CPUs) run tens to
    # hundreds of times off (360x against a GPU calibration), and a loose check of them is the
    # user's (tests/test_validate_qa11.py judges a gloo run at 1000); beyond it no check at all
    # (1e300 passed every row, NaN none). compare.exceeds, the API's check,
    # holds the same range.
    "tolerance": TOLERANCE,
}
"""Option (the command function's parameter name) -> its limits, for every command alike."""


def parse_gpu_memory(text: str | int | float, *, name: str = "gpu_memory") -> int:
    """A GPU memory [B] (``80GB``) within its one limit (``LIMITS["gpu_memory"]``: 1 B..16 TiB),
    for the inputs not checked by parameter name (the app's typed card); ValueError
    ``"NAME: must be RULE, got VALUE"`` otherwise."""
    LIMITS["gpu_memory"].check(name, text)
    return units.parse_bytes(text, name=name)


def option_name(param: str) -> str:
    """``micro_batch`` -> ``--micro-batch`` (``global_`` -> ``--global``)."""
    return "--" + param.rstrip("_").replace("_", "-")


# --- an input named inside a message ------------------------------------------------------------
#: How a library message names an input mid-sentence: the API's name of it (a field or keyword,
#: ``usd_per_gpu_hour``; a method, ``fit_suggestions``) in backquotes, never a CLI flag or an
#: app box's label. The notebook user reads the message as it is; the CLI says each marked name
#: as the command's option (``--usd-per-gpu-hour``), the app as its box, each through
#: :func:`name_fields`. A message's first word, the field it refuses (``"price: ..."``), stays
#: bare: the surfaces rename it already (``cli._common.name_options``, ``web.common.show_error``).
FIELD_MARK = re.compile(r"`([a-z][a-z0-9_]*)`")


def name_fields(
    text: str, names: Callable[[str], str | None] | Mapping[str, str] | None = None
) -> str:
    """``text`` with each marked name (:data:`FIELD_MARK`) said as ``names`` says it: the
    CLI's option, the app's box; a name ``names`` does not know (or ``names`` None) by the
    name alone, without its marks.

    >>> name_fields("or give `usd_per_gpu_hour`", {"usd_per_gpu_hour": "--usd-per-gpu-hour"})
    'or give --usd-per-gpu-hour'
    >>> name_fields("the `mfu` of this compute, see `costmodel archs`")
    'the mfu of this compute, see `costmodel archs`'
    """
    if "`" not in text:
        return text
    look = names.get if isinstance(names, Mapping) else names

    def said(m: re.Match[str]) -> str:
        return (look(m.group(1)) if look is not None else None) or m.group(1)

    return FIELD_MARK.sub(said, text)


def check_limits(
    values: dict[str, Any], options: Callable[[str], str | None] | None = None
) -> None:
    """ValueError ``"--OPTION: must be RULE, got VALUE"`` for the first value out of its limit.
    ``options`` names a parameter's option as the command spells it first (``sequence_length``
    -> ``--seq``); without it, or where it knows none, :func:`option_name`."""
    for name, value in values.items():
        limit = LIMITS.get(name)
        if limit is not None:
            limit.check((options and options(name)) or option_name(name), value)


CHOICES = frozenset(
    {
        "algorithm",
        "protocol",
        "op",
        "model",
        "strategy",
        "recipe",
        "recompute",
        "loss",
        "param_dtype",
        "grad_dtype",
        "precision",
        "launcher",
        "mpi",
        "kind",
        # the CLI's other fixed lists: batch --rule, validate/calibrate --placement,
        # sweep --engine, validate torch --backend
        "rule",
        "placement",
        "engine",
        "backend",
    }
)
"""The options, fields and sweep axes whose values are names from a fixed list: read in any
case and passed on in their canonical lower-case form (:func:`costmodel.units.choice_name`),
by the CLI (every command, :func:`costmodel.cli._common.limited`), Scenario, ``strategy_step``,
``predict_collective`` and the sweep's axes alike. Preset and architecture names are not here:
they are file names, refused with the lower-case name suggested."""


def choice_names(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with every entry named in :data:`CHOICES` in its canonical form.

    >>> choice_names({"precision": "FP8", "nodes": 2, "strategy": None})
    {'precision': 'fp8', 'nodes': 2, 'strategy': None}
    """
    return {k: units.choice_name(v) if k in CHOICES else v for k, v in values.items()}


RANGE_ERRORS = frozenset(
    {
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "finite_number",
        # a count given as 4.5 or "2.5": pydantic says "a valid integer" and no range
        "int_from_float",
        "int_parsing",
        # a count past any integer (1e300): "exceeded maximum size" and no range
        "int_parsing_size",
        # a list, an array, None or a non-numeric text: "a valid number" and no range
        "int_type",
        "float_type",
        "float_parsing",
    }
)
"""pydantic's error types whose message names one bound of a range, or none (a whole count
given a fraction): :func:`field_range` says both."""


def validation_parts(exc: Any, *, got: bool = False) -> list[str]:
    """One ``"field: message"`` per error of a pydantic ValidationError of our models, with
    the field's range where pydantic's message lacks it (``"nodes: Input should be greater
    than or equal to 1; allowed: [1, 1,000,000]"``) and ``Value error, `` dropped (a check of
    ours names its field itself: not twice). ``got``: add `` (got VALUE)`` for a refused
    scalar. The CLI's one line (with the options typed) and the API's own message
    (:class:`costmodel.scenario.ScenarioError`) are both these parts joined with ``"; "``."""
    parts = []
    title = str(getattr(exc, "title", ""))
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if err.get("type") == "literal_error" and "expected" in err.get("ctx", {}):
            # a choice, in the CLI's words for one ("must be bf16 or fp8, got 'fp4'"), not
            # pydantic's "Input should be 'bf16' or 'fp8'" with no word of what was typed
            expected = str(err["ctx"]["expected"]).replace("'", "")
            msg = f"must be {expected}, got {err.get('input')!r}"
        where = err.get("loc", ())
        # a field, or a nested model's (``node.gpu.memory_bytes``), not a list's element
        if err.get("type") in RANGE_ERRORS and where and all(isinstance(x, str) for x in where):
            allowed = field_range(title, loc)
            msg += f"; allowed: {allowed}" if allowed else ""
        value = plain_number(err.get("input"))
        if _is_several(value) and len(err.get("loc", ())) == 1:
            # a notebook's array for a field of one setup: say so, and where several go
            msg += (
                f" (got {_several(value)}; one {title or 'model'} is one setup: for several "
                "values, loop or `cm.sweep`)"
            )
        quoted = isinstance(value, str) and repr(value) in msg  # "cannot parse 'seven'"
        # a check of ours that says the number already ("must be a fraction in [0, 1), got 1")
        quoted = quoted or (type(value) in (int, float) and f"got {value!r}" in msg)
        quoted = quoted or (type(value) is bool and f"({value!r})" in msg)  # "got a bool (True)"
        if got and loc and isinstance(value, int | float | str) and not quoted:
            msg += f" (got {value!r})"
        parts.append(msg if not loc or msg.startswith(f"{loc}: ") else f"{loc}: {msg}")
    return parts


def plain_number(value: Any) -> Any:
    """A numpy scalar (or 0-d array) as the Python value it holds, so a refusal says
    ``got 1.5`` for ``np.float64(1.5)`` as for ``1.5`` (not ``np.float64(1.5)``, nor nothing
    for an ``np.int64``, which is no ``int``); anything else unchanged (numpy not imported).
    The one rule of every "got VALUE" (:func:`validation_parts`,
    :func:`costmodel._checks.said`).

    >>> import numpy as np
    >>> plain_number(np.float64(1.5)), plain_number(np.int64(0)), plain_number(np.array(2.0))
    (1.5, 0, 2.0)
    >>> plain_number("7B"), plain_number([1, 2])
    ('7B', [1, 2])
    """
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return value.item()
    return value


def _is_several(value: Any) -> bool:
    """A list, a tuple or an array of one dimension or more (a numpy array, not imported here)."""
    return isinstance(value, list | tuple) or bool(getattr(value, "ndim", 0))


def _several(value: Any) -> str:
    """A list or an array said by its size (``an array of shape (2,)``, ``a list of 3``)."""
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {len(value)}"
    return f"an array of shape {tuple(value.shape)}"


#: The package's pydantic models whose refusals :func:`validation_parts` words, by the title
#: pydantic gives their errors: where each is defined.
_MODELS = {
    "Scenario": "costmodel.scenario",
    "Layout": "costmodel.strategy.layout",
    "GPU": "costmodel.hardware",
    "Link": "costmodel.hardware",
    "Node": "costmodel.hardware",
    "Cluster": "costmodel.hardware",
    "CollectiveFit": "costmodel.hardware",
    "CandidateCalibration": "costmodel.hardware",
    "FabricShapeTerms": "costmodel.hardware",
    "FabricCalibration": "costmodel.hardware",
    "CalibrationPreset": "costmodel.hardware",
    "Architecture": "costmodel.architecture",
}

#: A hardware quantity's stored unit (its JSON schema's "stored in UNIT") -> how a bound of it
#: is said: ``(0 B, 10 TB]`` rather than ``(0, 10,000,000,000,000]``.
_QUANTITY_FORMATS: dict[str, Callable[[float], str]] = {
    "B": units.format_bytes,
    "B/s": units.format_rate,
    "s": units.format_duration,
    "FLOP/s": units.format_flops,
}


def _field_info(model: str, field: str) -> Any:
    """The pydantic ``FieldInfo`` of ``field`` (dotted for a nested model's:
    ``node.gpu.memory_bytes``) of the package's model titled ``model``; None if unknown."""
    if model not in _MODELS:
        return None
    import typing

    cls: Any = getattr(importlib.import_module(_MODELS[model]), model)
    info = None
    for part in field.split("."):
        fields = getattr(cls, "model_fields", None)
        if not isinstance(fields, dict):
            return None
        # a field is named in a refusal by the key the file spelled (a calibration's [[fit]]
        # tables are `fits`, read under their alias `fit`): look it up by its aliases too
        info = fields.get(part) or next((f for f in fields.values() if part in _aliases(f)), None)
        if info is None:
            return None
        # the next part's model: the field's class, or one of its union's (``Link | None``)
        ann = info.annotation
        cls = next((c for c in (ann, *typing.get_args(ann)) if hasattr(c, "model_fields")), None)
    return info


def _aliases(info: Any) -> set[str]:
    """The names a pydantic field is read under besides its own: ``alias`` and the
    ``validation_alias`` (one name or ``AliasChoices``' plain names)."""
    names = {info.alias} if isinstance(info.alias, str) else set()
    va = info.validation_alias
    if isinstance(va, str):
        names.add(va)
    names.update(c for c in getattr(va, "choices", ()) if isinstance(c, str))
    return names


def _constraints(info: Any) -> list[Any]:
    """A field's constraint objects (``Gt``, ``Le``, a quantity's JSON schema), its own and
    those inside an optional annotated type (``Flops | None``)."""
    import typing

    found = list(info.metadata)
    for arg in typing.get_args(info.annotation):
        for extra in getattr(arg, "__metadata__", ()):
            found += list(getattr(extra, "metadata", ())) or [extra]
    return found


def field_range(model: str, field: str) -> str:
    """The allowed range of a numeric field of one of the package's pydantic models, from its
    own constraints (``[1, 100000]``, ``(0, 1]``; a hardware quantity in its unit,
    ``(0 B, 10 TB]``); ``field`` may be a nested model's (``node.gpu.memory_bytes``); empty
    when unknown. pydantic names one bound ("less than or equal to 1", also for a NaN); the
    user needs both, so the CLI's one line, the app's red message and the models' own one-line
    errors add this to pydantic's text."""
    info = _field_info(model, field)
    if info is None:
        return ""
    lo = hi = None
    lo_open = hi_open = False
    fmt: Callable[[float], str] | None = None
    for m in _constraints(info):
        schema = getattr(m, "json_schema", None)
        if isinstance(schema, dict):  # a hardware quantity: "stored in B; ..."
            said = re.search(r"stored in (\S+?);", str(schema.get("description", "")))
            fmt = _QUANTITY_FORMATS.get(said.group(1)) if said else None
        for name, is_lo, is_open in (("ge", 1, 0), ("gt", 1, 1), ("le", 0, 0), ("lt", 0, 1)):
            v = getattr(m, name, None)
            if v is None:
                continue
            if is_lo:
                lo, lo_open = v, bool(is_open)
            else:
                hi, hi_open = v, bool(is_open)
    if lo is None and hi is None:
        return ""

    def num(v: Any, none: str) -> str:
        if v is None:
            return none
        if fmt is not None:
            return fmt(float(v))
        return f"{v:,}" if isinstance(v, int) else f"{v:g}"

    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    return f"{left}{num(lo, '-inf')}, {num(hi, 'inf')}{right}"
