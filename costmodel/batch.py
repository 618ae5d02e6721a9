r"""Batch arithmetic of data-parallel training (DESIGN.md section 3.5).

.. math:: B_{global} = B_{local} \times N \times A

with ``B_local`` the micro-batch per GPU, ``N`` the data-parallel ranks and ``A`` the gradient
accumulation steps. Given any three, :func:`solve_batch` finds the fourth, and refuses a split
that is not a whole number, offering the nearest valid ones. LLM runs plan in tokens: the global
batch can be given (and is returned) in tokens per step, :math:`T = B_{global}\, s` with ``s``
the sequence length (:func:`global_batch_from_tokens`, ``solve_batch(global_tokens=...)``).

Learning-rate scaling with the global batch (:data:`LR_RULE_INFO`): the square-root rule for
Adam/AdamW (Malladi et al. 2022; the LLM default here) and the linear rule of SGD on ResNet
(Goyal et al. 2017), both stopped at the critical batch size when one is given: past it a larger
batch no longer buys a proportionally larger step (McCandlish et al. 2018). A linear warmup
(Goyal et al. 2017, section 2.2) ramps to the scaled rate.

>>> global_batch(4, 256, 8)
8192
>>> solve_batch(local_batch=4, ranks=64, global_batch=8192).accumulation
32
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from . import units
from ._checks import element_text, finite_result, must_be, named_shapes, refuse_unreal, said
from .units import choice_name

FloatOrArray = float | np.ndarray
LRRule = Literal["linear", "sqrt"]
BatchUnit = Literal["samples", "tokens"]

_FIELDS: tuple[str, ...] = ("local_batch", "ranks", "accumulation", "global_batch")

#: Each factor of B_global = B_local x N x A in words, with its unit, as `costmodel batch`
#: prints it and the Batch page labels its metrics (the page: capitalised).
FIELD_LABELS: dict[str, str] = {
    "local_batch": "local batch per GPU [samples]",
    "ranks": "data-parallel ranks N [GPUs]",
    "accumulation": "accumulation steps A [-]",
    "global_batch": "global batch [samples]",
}
#: How the factor solved for is obtained from the other three (beside its value: which one was
#: solved, and how).
SOLVED_AS: dict[str, str] = {
    "local_batch": "global / (N x A)",
    "ranks": "global / (local x A)",
    "accumulation": "global / (local x N)",
    "global_batch": "local x N x A",
}

# rule -> lr multiplier as a function of k = new_batch / base_batch
LR_RULES: dict[LRRule, Callable[[FloatOrArray], FloatOrArray]] = {
    # Goyal et al. 2017, "Accurate, Large Minibatch SGD", arXiv:1706.02677, section 2.1:
    # "When the minibatch size is multiplied by k, multiply the learning rate by k."
    "linear": lambda k: k,
    # Krizhevsky 2014, "One weird trick...", arXiv:1404.5997, section 5 and Hoffer et al. 2017,
    # "Train longer, generalize better", arXiv:1705.08741, section 4: scale by sqrt(k) to keep
    # the gradient-noise covariance.
    "sqrt": np.sqrt,
}

#: rule -> (who it is for, the citation), for the CLI and the app
LR_RULE_INFO: dict[LRRule, tuple[str, str]] = {
    "sqrt": (
        "Adam/AdamW (LLMs): square-root scaling",
        "Malladi et al. 2022, 'On the SDEs and Scaling Rules for Adaptive Gradient Algorithms', "
        "NeurIPS 2022, arXiv:2205.10287, section 4, square root scaling rule (Adam: lr x sqrt(k), "
        "(1 - beta) x k, eps / sqrt(k)); for SGD also Krizhevsky 2014, Hoffer et al. 2017",
    ),
    "linear": (
        "SGD with momentum (ResNet/ImageNet): linear scaling",
        "Goyal et al. 2017, 'Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour', "
        "arXiv:1706.02677, section 2.1 (0.1 at 256 images, with warmup); not for Adam",
    ),
}

#: optimizer -> the rule of :data:`LR_RULES` for it: an optimizer typed where the rule is asked
#: (``rule="adamw"``, ``batch --rule adamw``) is answered with the rule it means
OPTIMIZER_RULES: dict[str, LRRule] = {"adam": "sqrt", "adamw": "sqrt", "sgd": "linear"}

#: batch unit -> the learning-rate rule taken when none is given, on every surface (the API's
#: ``scale_learning_rate``, ``costmodel batch --rule``, the Batch page's radio): a batch in tokens
#: is an LLM's, trained with AdamW (square root, Malladi et al. 2022); a batch in samples is the
#: lesson's ResNet/SGD case (linear, Goyal et al. 2017: 0.1 at 256 -> 3.2 at 8192)
LR_RULE_DEFAULT: dict[BatchUnit, LRRule] = {"samples": "linear", "tokens": "sqrt"}


def rule_hint(rule: object) -> str:
    """What an optimizer name given as a learning-rate rule means (:data:`OPTIMIZER_RULES`),
    for the refusal; ``""`` for any other value.

    >>> rule_hint("AdamW")
    "; 'AdamW' is an optimizer: its rule is sqrt (Adam/AdamW (LLMs): square-root scaling)"
    >>> rule_hint("cubic")
    ''
    """
    name = choice_name(rule) if isinstance(rule, str) else None
    if name not in OPTIMIZER_RULES:
        return ""
    meant = OPTIMIZER_RULES[name]
    return f"; {rule!r} is an optimizer: its rule is {meant} ({LR_RULE_INFO[meant][0]})"


CRITICAL_BATCH_CITATION = (
    "McCandlish et al. 2018, 'An Empirical Model of Large-Batch Training', arXiv:1812.06162, "
    "section 2: the optimal learning rate saturates as eps_max / (1 + B_noise / B), and above "
    "the critical batch size B_crit ~ B_noise a larger batch buys little, so no rule scales past it"
)


# argument -> the key of its limit in costmodel._limits.LIMITS: the range the CLI's option of
# the same quantity keeps (``costmodel batch --ranks``, ``--local-batch``, ``--global-batch``,
# ``--seq``), so the API and every command refuse the same values in the same words
_LIMIT_KEYS: dict[str, str] = {
    "local_batch": "local_batch",
    "ranks": "ranks",
    "accumulation": "accumulation",
    "global_batch": "global_",
    "global_batch_size": "global_",
    "sequence_length": "sequence_length",
    # the global batch in tokens: --global-tokens' 1..1e16 (the Batch page's box too)
    "global_tokens": "global_tokens",
}
_WHOLE_RULE = "a whole number >= 1"  # a count with no shared limit


@functools.cache
def _limit(name: str) -> tuple[str, float, float]:
    """(rule, lo, hi) of the argument ``name``: its shared limit (:data:`_LIMIT_KEYS`), else
    whole >= 1 without a bound. Imported on first use, as :mod:`costmodel.memory` does (the
    limits module imports units, which builds a pydantic validator at import)."""
    key = _LIMIT_KEYS.get(name)
    if key is None:
        return _WHOLE_RULE, 1.0, math.inf
    from ._limits import LIMITS

    lim = LIMITS[key]
    return lim.rule, lim.lo, lim.hi


def _whole(name: str, value: object) -> int:
    """One whole count within the limit of ``name`` (:func:`_limit`), as a Python int (ints, or
    floats with no fraction); else ValueError ``"NAME: must be RULE, got VALUE"``."""
    rule, lo, hi = _limit(name)
    if isinstance(value, bool | np.bool_):
        raise must_be(name, rule, value)
    if isinstance(value, int | np.integer):  # exact: no float rounding of a large count
        n = int(value)
        if lo <= n <= hi:
            return n
        raise must_be(name, rule, value)
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        refused = must_be(name, rule, value)
        if isinstance(value, str):  # '4Mi', the rule's own example: the number it means
            try:
                n = units.parse_tokens(value, name=name)
            except ValueError:
                raise refused from None
            raise ValueError(
                f"{refused}; the API takes numbers: {name}={n} "
                f"(costmodel.units.parse_tokens({value!r}))"
            ) from None
        raise refused from None
    if not (math.isfinite(x) and lo <= x <= hi and x == math.floor(x)):
        raise must_be(name, rule, value)
    return int(x)


def _whole_array(name: str, value: ArrayLike) -> np.ndarray:
    """:func:`_whole` for an array (int64 out); the first bad element is named by its index."""
    rule, lo, hi = _limit(name)
    if np.asarray(value).dtype == np.bool_:  # as one bool is refused (True is no count of 1)
        raise must_be(name, rule, value)
    refuse_unreal(name, value)  # a complex part dropped, a duration's count
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise must_be(name, rule, value) from None
    bad = ~np.isfinite(x) | (x < lo) | (x > hi) | (x != np.floor(x))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        first = float(x.ravel()[i])
        shown = repr(int(first)) if first.is_integer() else element_text(value, x, i)
        where = f" (element {i} of {x.size})" if x.ndim else ""
        raise ValueError(f"{name}: must be {rule}, got {shown}{where}")
    if (x >= 2.0**53).any():  # only a count without a limit gets here (every limit is below)
        raise ValueError(
            f"{name}: arrays of counts must be below 2**53 to stay exact; pass Python ints one at "
            f"a time for larger values, got {float(x.max())!r}"
        )
    return x.astype(np.int64)


def _positive(name: str, value: ArrayLike) -> np.ndarray:
    if (
        value is None  # numpy would read it as NaN and the message would say "got nan"
        or isinstance(value, bool | np.bool_)
        or getattr(value, "dtype", None) == np.bool_
    ):
        # True is not a learning rate of 1 (nor a batch of 1): refused as _whole refuses it
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    refuse_unreal(name, value)  # a complex part dropped, a duration's count
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number > 0, got {value!r}") from None
    bad = ~np.isfinite(x) | (x <= 0)
    if bad.any():
        raise ValueError(f"{name}: must be a finite number > 0, got {_first_bad(value, x, bad)}")
    return x


def _first_bad(value: object, x: np.ndarray, bad: np.ndarray) -> str:
    """The first bad element of ``x`` as the caller gave it, with its place in an array
    (``-1.0 (element 1 of 2)``), as the collective formulas say it."""
    i = int(np.flatnonzero(bad.ravel())[0])
    if not x.ndim:
        return repr(float(x))
    return f"{element_text(value, x, i)} (element {i} of {x.size})"


def _refuse_out_of_limit(name: str, key: str, value: object) -> None:
    """ValueError ``"NAME: must be RULE, got X (element i of n)"`` for the first number of the
    array ``value`` outside ``LIMITS[key]``, so an array is refused in the words the same value
    alone gets; nothing where ``value`` is not an array of numbers (the caller's own refusal
    stands) or every number holds."""
    from ._limits import LIMITS

    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return
    if x.ndim == 0:
        return
    limit = LIMITS[key]
    for i, v in enumerate(x.ravel().tolist()):
        if not limit.holds(v):
            shown = repr(int(v)) if float(v).is_integer() else element_text(value, x, i)
            raise ValueError(f"{name}: must be {limit.rule}, got {shown} (element {i} of {x.size})")


def _scalars(*values: object) -> tuple[float, ...] | None:
    """The values when every one is a plain Python int or float (the scalar fast path applies),
    else None. Returning them (not a bool) lets the type checker see they are numbers."""
    out: list[float] = []
    for v in values:
        if not (type(v) is float or type(v) is int):
            return None
        out.append(v)
    return tuple(out)


def _positive_scalar(name: str, value: float) -> float:
    """:func:`_positive` for one Python number (same rule, same message)."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}: must be a finite number > 0, got {float(value)!r}")
    return float(value)


def _int_out(x: np.ndarray) -> int | np.ndarray:
    return int(x) if np.ndim(x) == 0 else x


def _float_out(x: np.ndarray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


@named_shapes
def global_batch(
    local_batch: ArrayLike, ranks: ArrayLike, accumulation: ArrayLike = 1
) -> int | np.ndarray:
    r"""Global batch :math:`B_{global} = B_{local} N A` [samples] (Goyal et al. 2017, section 2).

    Parameters
    ----------
    local_batch : array_like
        Micro-batch per GPU ``B_local`` [samples], whole >= 1.
    ranks : array_like
        Data-parallel ranks ``N`` [-], whole >= 1.
    accumulation : array_like
        Gradient-accumulation steps ``A`` [-], whole >= 1.

    Examples
    --------
    >>> global_batch(4, 256, 8)            # the lesson's quiz
    8192
    >>> global_batch(4, [8, 64], 32).tolist()
    [1024, 8192]
    """
    if all(np.ndim(v) == 0 for v in (local_batch, ranks, accumulation)):
        # exact: Python ints have no overflow, and counts above 2**53 keep every digit
        return (
            _whole("local_batch", local_batch)
            * _whole("ranks", ranks)
            * _whole("accumulation", accumulation)
        )
    b = _whole_array("local_batch", local_batch)
    n = _whole_array("ranks", ranks)
    a = _whole_array("accumulation", accumulation)
    return _int_out(_whole_product(b, n, a))


def _whole_product(*factors: np.ndarray) -> np.ndarray:
    """The product of whole-number int64 arrays (broadcast), exact: int64 where it stays below
    2**62, else Python ints in an object array (int64 would wrap silently, to 0 or negative)."""
    with np.errstate(over="ignore"):
        bound = np.ones(())
        for f in factors:
            bound = bound * f.astype(float)
        if float(np.max(bound, initial=0.0)) < 2.0**62:
            out = factors[0]
            for f in factors[1:]:
                out = out * f
            return np.asarray(out)
    out = factors[0].astype(object)
    for f in factors[1:]:
        out = out * f.astype(object)
    return np.asarray(out)


@named_shapes
def tokens_per_step(global_batch_size: ArrayLike, sequence_length: ArrayLike) -> int | np.ndarray:
    r"""Tokens per optimizer step :math:`B_{global} \times s` [tokens].

    >>> tokens_per_step(8192, 2048)
    16777216
    """
    if _scalars(global_batch_size, sequence_length):  # Python numbers: no array machinery
        return _whole("global_batch_size", global_batch_size) * _whole(
            "sequence_length", sequence_length
        )
    g = _whole_array("global_batch_size", global_batch_size)
    s = _whole_array("sequence_length", sequence_length)
    return _int_out(_whole_product(g, s))


@named_shapes
def global_batch_from_tokens(
    global_tokens: ArrayLike, sequence_length: ArrayLike
) -> int | np.ndarray:
    r"""Global batch in samples from a global batch in tokens: :math:`B_{global} = T / s` [samples].

    ``global_tokens`` [tokens] and ``sequence_length`` [tokens per sample] are whole numbers
    >= 1; arrays broadcast (an int array out), Python numbers give an int. Refuses a token count
    that is not a whole number of sequences, with the nearest valid ones (and, for an array,
    the element). A batch stated in tokens, as LLM pre-training states it: Llama 3's "4M
    tokens" at sequence length 4,096 (arXiv:2407.21783, section 3.4.1).

    >>> global_batch_from_tokens(4 * 2**20, 4096)          # "4M tokens at seq 4096"
    1024
    >>> try:
    ...     global_batch_from_tokens(4_000_000, 4096)
    ... except ValueError as err:
    ...     print(err)
    global_tokens: 4000000 / 4096 = 976.6 sequences is not a whole number; nearest valid: 4,001,792 tokens (977 x 4096) or 3,997,696 tokens (976 x 4096); or 4 x 2^20 = 4,194,304 tokens (1024 x 4096), the binary reading of 4M
    >>> global_batch_from_tokens([2**20, 4 * 2**20], 4096).tolist()
    [256, 1024]
    """
    if np.ndim(global_tokens) or np.ndim(sequence_length):
        t_a, s_a = np.broadcast_arrays(
            _whole_array("global_tokens", global_tokens),
            _whole_array("sequence_length", sequence_length),
        )
        rest = t_a % s_a
        if rest.any():
            i = int(np.flatnonzero(rest.ravel())[0])
            try:
                _batch_of_tokens(int(t_a.ravel()[i]), int(s_a.ravel()[i]))
            except ValueError as err:
                raise ValueError(f"{err} (element {i} of {t_a.size})") from None
        return _int_out(t_a // s_a)
    return _batch_of_tokens(
        _whole("global_tokens", global_tokens), _whole("sequence_length", sequence_length)
    )


def _batch_of_tokens(t: int, s: int) -> int:
    """:func:`global_batch_from_tokens` of one whole count ``t`` [tokens] and length ``s``."""
    if t % s:
        q = t // s  # the nearest whole counts of sequences, nearest first (exact: ints)
        near = sorted({max(1, q), q + 1}, key=lambda n: abs(n * s - t))
        options = " or ".join(f"{n * s:,} tokens ({n} x {s})" for n in near)
        hint = ""
        for unit, binary, suffix in ((10**9, 2**30, "G"), (10**6, 2**20, "M"), (10**3, 2**10, "k")):
            if t % unit == 0 and (t // unit * binary) % s == 0:
                b = t // unit * binary
                hint = (
                    f"; or {t // unit} x 2^{binary.bit_length() - 1} = {b:,} tokens "
                    f"({b // s} x {s}), the binary reading of {t // unit}{suffix}"
                )
                break
        raise ValueError(
            f"global_tokens: {t} / {s} = {_not_whole(t, s)} sequences is not a whole number; "
            f"nearest valid: {options}{hint}"
        )
    return t // s


def _not_whole(num: int, den: int) -> str:
    """The quotient ``num / den`` of two whole numbers that do not divide, with four significant
    digits or as many more as it takes not to read as a whole number: 8191 / 256 is "31.996",
    not "32", and 999,999,999,998 / 999,999 is "1000000.999999", not "1e+06". Computed in
    decimal from the integers, so a quotient past 2**53 keeps its fraction too.

    >>> _not_whole(8192, 192), _not_whole(8191, 256), _not_whole(10**9, 3 * 10**9)
    ('42.67', '31.996', '0.3333')
    >>> _not_whole(999_999_999_998, 999_999), _not_whole(10**21 + 1, 10)
    ('1000000.999999', '100000000000000000000.1')
    """
    with decimal.localcontext() as ctx:
        ctx.prec = len(str(num)) + len(str(den)) + 20
        exact = decimal.Decimal(num) / decimal.Decimal(den)
        for digits in range(4, ctx.prec):
            text = f"{exact:.{digits}g}"
            if decimal.Decimal(text) != decimal.Decimal(text).to_integral_value():
                return text
    return f"{num}/{den}"


#: The words a split's refusal uses for each quantity: the library's argument names. A surface
#: passes its own (the CLI its options, the app its boxes' labels) to :func:`split_refusal`.
SPLIT_NAMES: dict[str, str] = {f: f for f in (*_FIELDS, "global_tokens", "sequence_length")}


class BatchSplitError(ValueError):
    """A global batch that leaves the unknown of local batch x ranks x accumulation no whole
    number: the numbers, so that every surface words the refusal and its ways out the same
    way, in its own names (:func:`split_refusal`; ``str()`` uses the library's names).

    ``unknown`` is the factor solved for, ``known`` the other two (in the order local_batch,
    ranks, accumulation), ``total`` the global batch in samples, or in tokens when
    ``sequence_length`` is given.
    """

    def __init__(
        self, unknown: str, known: dict[str, int], total: int, sequence_length: int | None = None
    ) -> None:
        self.unknown = unknown
        self.known = dict(known)
        self.total = total
        self.sequence_length = sequence_length
        super().__init__(split_refusal(self))

    def __reduce__(self) -> tuple[object, ...]:  # picklable (Dask, multiprocessing)
        return (type(self), (self.unknown, self.known, self.total, self.sequence_length))


def _largest_divisor_below(m: int, below: int) -> int | None:
    """The largest divisor of ``m`` that is < ``below`` (None when ``below`` <= 1): trial
    division up to sqrt(m), at most 10^6 steps within the global batch limit (1e12)."""
    best = None
    for i in range(1, math.isqrt(m) + 1):
        if m % i == 0:
            for d in (i, m // i):
                if d < below and (best is None or d > best):
                    best = d
    return best


#: decimal token units, largest first, with their binary counterparts and suffixes
_DECIMAL_UNITS: tuple[tuple[int, int, str], ...] = (
    (10**9, 2**30, "G"),
    (10**6, 2**20, "M"),
    (10**3, 2**10, "k"),
)


def split_refusal(err: BatchSplitError, names: dict[str, str] | None = None) -> str:
    r"""The one refusal of a split that is not whole, in the words ``names`` gives each
    quantity (defaults: :data:`SPLIT_NAMES`, the library's argument names; the CLI passes its
    options, the app its boxes' labels).

    It gives the exact quotient and every cheap way out, each one a split that is accepted as
    written: the nearest whole values of the unknown (with the global batch each gives); the
    binary reading of a decimal token count that splits; and, for each of the two known
    factors, the largest smaller value that makes the unknown whole (a smaller local batch, or
    fewer ranks, at the same global batch). A value past its limit is not offered.

    With :math:`B` the global batch in samples (tokens / sequence length) and the known
    factors :math:`f_1, f_2`, the unknown is :math:`u = B / (f_1 f_2)`; the way out through
    :math:`f_1` is the largest divisor :math:`d < f_1` of :math:`B / f_2` (then
    :math:`u = B / (d f_2)`).

    >>> try:
    ...     solve_batch(local_batch=4, ranks=512, global_tokens=4 * 2**20, sequence_length=4096)
    ... except BatchSplitError as err:
    ...     print(split_refusal(err, {"local_batch": "--local-batch", "ranks": "--ranks"}))
    global_tokens: 4194304 / (4096 x 4 x 512) = 0.5 (sequence_length x --local-batch x --ranks) is not a whole number for accumulation; nearest valid: accumulation=1 (global_tokens=8,388,608, global_batch=2048); or at the same global batch: --local-batch=2 (accumulation=1) or --ranks=256 (accumulation=1)
    """
    n = SPLIT_NAMES | dict(names or {})

    def eq(field: str, value: int, commas: bool = False) -> str:
        label, shown = n[field], (f"{value:,}" if commas else str(value))
        return f"{label} = {shown}" if " " in label else f"{label}={shown}"

    u, known, total, s = err.unknown, err.known, err.total, err.sequence_length
    rule, lo, hi = _limit(u)
    product = math.prod(known.values())
    factors = " x ".join(str(v) for v in known.values())
    quantum = product if s is None else s * product
    near = [v for v in (total // quantum, total // quantum + 1) if lo <= v <= hi]  # exact: ints
    if s is None:
        head = (
            f"{n[u]}: {total} / ({factors}) = {_not_whole(total, product)} is not a whole number; "
        )
        options = [f"{eq(u, v)} ({eq('global_batch', v * product)})" for v in near]
        past = f"the nearest whole values are past the {n[u]} limit ({rule})"
    else:
        head = (
            f"{n['global_tokens']}: {total} / ({s} x {factors}) = {_not_whole(total, quantum)} "
            f"({n['sequence_length']} x {' x '.join(n[k] for k in known)}) is not a whole "
            f"number for {n[u]}; "
        )
        options = [
            f"{eq(u, v)} ({eq('global_tokens', v * quantum, commas=True)}, "
            f"{eq('global_batch', v * product)})"
            for v in near
        ]
        past = f"the nearest are past the {n[u]} limit ({rule})"
    text = head + (f"nearest valid: {' or '.join(options)}" if options else past)
    if s is not None:
        # the binary reading of the token count as it is written shortest (4,000,000 is 4M:
        # 4Mi; never "4000k", a spelling no one typed), and of a sequence length typed as 4k
        # (4,000 tokens: 4Ki = 4,096; 4Mi tokens at "4k" on 512 GPUs was 2.048 accumulations),
        # each where it splits the batch, else both together where they do
        tok = next(
            ((unit, binary, sfx) for unit, binary, sfx in _DECIMAL_UNITS if total % unit == 0),
            None,
        )
        s_bin = s // 1000 * 1024 if s % 1000 == 0 else None
        if s_bin is not None and s_bin > _limit("sequence_length")[2]:
            s_bin = None
        said = False
        if tok is not None:
            unit, binary, suffix = tok
            b = total // unit * binary
            if b % quantum == 0 and lo <= b // quantum <= hi:
                text += (
                    f"; or {total // unit} x 2^{binary.bit_length() - 1} = {b:,} tokens "
                    f"({eq(u, b // quantum)}), the binary reading of {total // unit}{suffix}"
                )
                said = True
        if s_bin is not None:
            q_bin = s_bin * product
            if total % q_bin == 0 and lo <= total // q_bin <= hi:
                text += (
                    f"; or {eq('sequence_length', s_bin)} ({eq(u, total // q_bin)}), the "
                    f"binary reading of {s // 1000}k ({s // 1000}Ki)"
                )
                said = True
        if not said and tok is not None and s_bin is not None:
            unit, binary, suffix = tok
            b, q_bin = total // unit * binary, s_bin * product
            if b % q_bin == 0 and lo <= b // q_bin <= hi:
                text += (
                    f"; or {eq('global_tokens', b, commas=True)} with "
                    f"{eq('sequence_length', s_bin)} ({eq(u, b // q_bin)}), the binary readings "
                    f"of {total // unit}{suffix} and {s // 1000}k ({total // unit}{suffix}i, "
                    f"{s // 1000}Ki)"
                )
    # the same global batch with a smaller known factor: a smaller local batch, fewer ranks
    samples = total if s is None else (total // s if total % s == 0 else None)
    if samples is not None and samples > _limit("global_batch")[2]:
        samples = None  # refused as a global batch anyway; and the search stays short
    ways = []
    for k, v in known.items():
        rest = product // v
        if samples is None or samples % rest:
            continue
        d = _largest_divisor_below(samples // rest, v)
        k_lo = _limit(k)[1]
        if d is not None and d >= k_lo and lo <= samples // (rest * d) <= hi:
            ways.append(f"{eq(k, d)} ({eq(u, samples // (rest * d))})")
    if ways:
        text += "; or at the same global batch: " + " or ".join(ways)
    return text


@dataclass(frozen=True)
class BatchSolution:
    """A consistent batch split: ``global_batch = local_batch * ranks * accumulation``, and
    with a sequence length, the global batch in tokens (``global_tokens``)."""

    local_batch: int
    ranks: int
    accumulation: int
    global_batch: int
    solved: str  # which of the four was the unknown
    sequence_length: int | None = field(default=None, repr=False)  # tokens per sample

    def tokens_per_step(self, sequence_length: int) -> int:
        """Tokens per optimizer step at this sequence length [tokens]."""
        return int(tokens_per_step(self.global_batch, sequence_length))

    @property
    def global_tokens(self) -> int | None:
        """The global batch in tokens per step (None without a sequence length) [tokens]."""
        if self.sequence_length is None:
            return None
        return self.tokens_per_step(self.sequence_length)

    def as_dict(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {f: getattr(self, f) for f in (*_FIELDS, "solved")}
        if self.sequence_length is not None:
            out["sequence_length"] = self.sequence_length
            out["global_tokens"] = int(self.tokens_per_step(self.sequence_length))
        return out


def solve_batch(
    local_batch: int | None = None,
    ranks: int | None = None,
    accumulation: int | None = None,
    global_batch: int | None = None,
    *,
    global_tokens: int | None = None,
    sequence_length: int | None = None,
) -> BatchSolution:
    r"""Solve :math:`B_{global} = B_{local} N A` for its one unknown (pass it as ``None``) [-]
    (Goyal et al. 2017, section 2).

    Parameters
    ----------
    local_batch, ranks, accumulation, global_batch : int or None
        Exactly one must be ``None``; the others whole numbers >= 1.
    global_tokens : int, optional
        The global batch in tokens per step (instead of ``global_batch``; needs
        ``sequence_length``): ``global_batch = global_tokens / sequence_length``.
    sequence_length : int, optional
        Tokens per sample: the solution then also gives ``global_tokens``.

    Returns
    -------
    BatchSolution

    Raises
    ------
    ValueError
        Not exactly one unknown, or a count out of its range.
    BatchSplitError
        The unknown is not a whole number >= 1 (a ValueError): the message
        (:func:`split_refusal`) gives the exact quotient, the nearest whole values with the
        global batch each gives, and the smaller local batch or fewer ranks that split the
        same global batch.

    Examples
    --------
    >>> solve_batch(local_batch=4, ranks=64, global_batch=8192)
    BatchSolution(local_batch=4, ranks=64, accumulation=32, global_batch=8192, solved='accumulation')
    >>> try:
    ...     solve_batch(local_batch=3, ranks=64, global_batch=8192)
    ... except ValueError as err:
    ...     print(err)
    accumulation: 8192 / (3 x 64) = 42.67 is not a whole number; nearest valid: accumulation=42 (global_batch=8064) or accumulation=43 (global_batch=8256); or at the same global batch: local_batch=2 (accumulation=64)

    Tokens first: 4M tokens per step at sequence length 4096 on 512 GPUs, micro-batch 1:

    >>> sol = solve_batch(local_batch=1, ranks=512, global_tokens=4 * 2**20, sequence_length=4096)
    >>> sol.accumulation, sol.global_batch, sol.global_tokens
    (2, 1024, 4194304)
    """
    given = {
        "local_batch": local_batch,
        "ranks": ranks,
        "accumulation": accumulation,
        "global_batch": global_batch,
        "global_tokens": global_tokens,
        "sequence_length": sequence_length,
    }
    for name, v in given.items():
        if v is not None and not isinstance(v, str) and np.ndim(v) != 0:
            raise ValueError(
                f"{name}: one whole number >= 1 per call (solve_batch solves one "
                f"configuration), got {said(v)}; for several, call it once per value (global_batch "
                "and global_batch_from_tokens take arrays)"
            )
    if global_tokens is not None:
        if global_batch is not None:
            raise ValueError(
                "global_tokens: give the global batch in samples or in tokens, not both"
            )
        if sequence_length is None:
            raise ValueError("sequence_length: needed with global_tokens (tokens per sample)")
        t, s = _whole("global_tokens", global_tokens), _whole("sequence_length", sequence_length)
        _tokens_split(
            t, s, {"local_batch": local_batch, "ranks": ranks, "accumulation": accumulation}
        )
        global_batch = _batch_of_tokens(t, s)
        rule, _, hi = _limit("global_batch")
        if global_batch > hi:  # the global batch in samples, as solve_batch takes it
            raise ValueError(
                f"global_tokens: {t} / {s} = {global_batch:,} sequences per step, past the "
                f"`global_batch` limit ({rule})"
            )
    seq = _whole("sequence_length", sequence_length) if sequence_length is not None else None
    sol = _solve(local_batch, ranks, accumulation, global_batch)
    return sol if seq is None else BatchSolution(**{**sol.as_dict(), "sequence_length": seq})  # type: ignore[arg-type]


def _tokens_split(t: int, s: int, factors: dict[str, int | None]) -> None:
    r"""Refuse a global batch of ``t`` tokens that is no whole multiple of ``s`` x the known
    factors (two of local_batch, ranks, accumulation; the third unknown): the nearest valid
    answers are then token counts that split all the way, :math:`T = s\,B_{local} N A`, not
    merely whole sequences that the next division refuses again. Anything else (not exactly
    one unknown) is left to :func:`_solve`'s own message.

    >>> try:
    ...     _tokens_split(102_400, 8192, {"local_batch": 1, "ranks": 64, "accumulation": None})
    ... except ValueError as err:
    ...     print(err)
    global_tokens: 102400 / (8192 x 1 x 64) = 0.1953 (sequence_length x local_batch x ranks) is not a whole number for accumulation; nearest valid: accumulation=1 (global_tokens=524,288, global_batch=64)
    """
    unknown = [k for k, v in factors.items() if v is None]
    if len(unknown) != 1:
        return
    known = {k: _whole(k, v) for k, v in factors.items() if v is not None}
    if t % (s * math.prod(known.values())):
        raise BatchSplitError(unknown[0], known, t, s)


def _solve(
    local_batch: int | None,
    ranks: int | None,
    accumulation: int | None,
    global_batch: int | None,
) -> BatchSolution:
    given = {
        "local_batch": local_batch,
        "ranks": ranks,
        "accumulation": accumulation,
        "global_batch": global_batch,
    }
    unknown = [k for k, v in given.items() if v is None]
    if len(unknown) != 1:
        raise ValueError(
            f"solve_batch: exactly one of {', '.join(_FIELDS)} must be None (the unknown); "
            f"got {len(unknown)} unknown ({', '.join(unknown) or 'none'})"
        )
    name = unknown[0]
    known = {k: _whole(k, v) for k, v in given.items() if v is not None}
    rule, lo, hi = _limit(name)
    if name == "global_batch":
        value = known["local_batch"] * known["ranks"] * known["accumulation"]
        if value > hi:  # an answer no call could take back as its global_batch
            raise ValueError(
                f"global_batch: {known['local_batch']} x {known['ranks']} x "
                f"{known['accumulation']} = {value:,} is past the `global_batch` limit ({rule}); "
                "a smaller `local_batch`, `ranks` or `accumulation` gives a smaller one"
            )
        return BatchSolution(**known, global_batch=value, solved=name)
    factors = {k: v for k, v in known.items() if k != "global_batch"}
    product = math.prod(factors.values())
    total = known["global_batch"]
    whole, rest = divmod(total, product)  # exact: Python ints, whatever their size
    formula = " x ".join(str(v) for v in factors.values())
    if rest:
        raise BatchSplitError(name, factors, total)
    if whole > hi:  # an answer no call could take back as its input
        raise ValueError(
            f"{name}: {total} / ({formula}) = {whole:,} is past the `{name}` limit ({rule}); a "
            f"smaller `global_batch`, or a larger {' or '.join(f'`{f}`' for f in factors)}, "
            "gives a smaller one"
        )
    return BatchSolution(**{**known, name: whole}, solved=name)


@finite_result("learning rate")
def scale_learning_rate(
    base_lr: ArrayLike,
    base_batch: ArrayLike,
    new_batch: ArrayLike,
    rule: LRRule | None = None,
    critical_batch: ArrayLike | None = None,
    unit: BatchUnit = "samples",
) -> FloatOrArray:
    r"""Learning rate for a new global batch, scaled from a tuned one.

    .. math:: \eta' = \eta\, k \ (\text{linear}),\qquad \eta' = \eta \sqrt{k}\ (\text{sqrt}),
              \qquad k = \min(B', \max(B_{crit}, B)) / B

    Parameters
    ----------
    base_lr : array_like
        Learning rate tuned at ``base_batch`` [-], > 0.
    base_batch, new_batch : array_like
        Global batch sizes, > 0, in one unit (samples, or tokens per step for LLMs).
    rule : {"linear", "sqrt"}, optional
        Default: the unit's rule (:data:`LR_RULE_DEFAULT`: ``linear`` for samples, ``sqrt`` for
        tokens), as ``costmodel batch`` and the Batch page take it. ``sqrt`` for Adam/AdamW: Malladi et al. 2022 (arXiv:2205.10287; for SGD also
        Krizhevsky 2014, arXiv:1404.5997, and Hoffer et al. 2017, arXiv:1705.08741).
        ``linear`` for SGD on ResNet: Goyal et al. 2017 (arXiv:1706.02677), with warmup
        (:func:`warmup_learning_rate`); see :data:`LR_RULE_INFO`.
    critical_batch : array_like, optional
        Critical batch size ``B_crit`` in the unit of the batches: the rate is not scaled past
        it (McCandlish et al. 2018, arXiv:1812.06162, :data:`CRITICAL_BATCH_CITATION`).
    unit : {"samples", "tokens"}
        The unit of the batches; it only picks the default rule.

    Examples
    --------
    >>> scale_learning_rate(0.1, 256, 8192)                 # Goyal et al.: 0.1 x 8192/256
    3.2
    >>> scale_learning_rate(0.1, 256, 1024, rule="sqrt")
    0.2
    >>> scale_learning_rate(3e-4, 2**20, 16 * 2**20, rule="sqrt", critical_batch=4 * 2**20)
    0.0006
    >>> scale_learning_rate(3e-4, 2**20, 4 * 2**20, unit="tokens")  # tokens: AdamW's sqrt
    0.0006
    """
    if unit not in LR_RULE_DEFAULT:
        raise ValueError(
            f"unit: must be {' or '.join(LR_RULE_DEFAULT)}, got {unit!r} (the batches' unit)"
        )
    if rule is None:
        rule = LR_RULE_DEFAULT[unit]
    rule = choice_name(rule)  # "LINEAR" is linear, as `batch --rule` reads it
    if not isinstance(rule, str) or rule not in LR_RULES:  # an array: not "unhashable type"
        raise ValueError(
            f"rule: unknown learning-rate rule {rule!r}; allowed: {', '.join(LR_RULES)}"
            + rule_hint(rule)
        )
    scalars = _scalars(base_lr, base_batch, new_batch)
    if critical_batch is not None:
        from ._limits import LIMITS

        try:
            crit = _positive("critical_batch", critical_batch)
        except ValueError:  # a number out of range: --critical-batch's words, not "> 0"
            if isinstance(critical_batch, int | float) and not isinstance(critical_batch, bool):
                LIMITS["critical_batch"].check("critical_batch", critical_batch)
            _refuse_out_of_limit("critical_batch", "critical_batch", critical_batch)
            raise
        # --critical-batch's range (whole, 1..1e16), each value of an array alike
        LIMITS["critical_batch"].check("critical_batch", np.ravel(crit).tolist())
        base_a = _positive("base_batch", base_batch)
        capped = np.minimum(_positive("new_batch", new_batch), np.maximum(crit, base_a))
        new_batch = _float_out(capped)
        if scalars:  # an array of critical batches gives an array: the array path
            scalars = (scalars[0], scalars[1], float(capped)) if np.ndim(capped) == 0 else None
    if scalars:  # Python numbers: the same expression on floats
        lr_s, base_s, new_s = scalars
        lr1 = _positive_scalar("base_lr", lr_s)
        k1 = _positive_scalar("new_batch", new_s) / _positive_scalar("base_batch", base_s)
        if rule in ("linear", "sqrt"):
            return lr1 * (k1 if rule == "linear" else math.sqrt(k1))
        return float(lr1 * LR_RULES[rule](k1))
    lr = _positive("base_lr", base_lr)
    k = _positive("new_batch", new_batch) / _positive("base_batch", base_batch)
    return _float_out(lr * LR_RULES[rule](k))


@finite_result("learning rate")
def warmup_learning_rate(
    step: ArrayLike, peak_lr: ArrayLike, warmup_steps: int, start_lr: ArrayLike = 0.0
) -> FloatOrArray:
    r"""Learning rate at ``step`` under a linear warmup to ``peak_lr`` (Goyal et al. 2017, 2.2).

    .. math:: \eta(t) = \eta_0 + (\eta_{peak} - \eta_0)\min(t / T_w, 1)

    Goyal et al. start from the single-GPU rate (``start_lr`` = base) and reach ``k`` times it
    after 5 epochs. ``warmup_steps = 0`` means no warmup.

    Examples
    --------
    >>> warmup_learning_rate([0, 250, 500, 1000], 3.2, 500, start_lr=0.1).round(3).tolist()
    [0.1, 1.65, 3.2, 3.2]
    """
    # the warmup first: steps are often drawn from it (0, T_w / 2, T_w), so a negative one
    # was refused as "step: ... got [0, -2, -5]", a list nobody typed
    from ._limits import LIMITS  # the range every surface says (0..1e12)

    LIMITS["warmup_steps"].check("warmup_steps", warmup_steps)
    t = np.asarray(step, dtype=float)
    if (bad := ~np.isfinite(t) | (t < 0)).any():
        raise ValueError(f"step: must be finite numbers >= 0, got {_first_bad(step, t, bad)}")
    peak = _positive("peak_lr", peak_lr)
    start = np.asarray(start_lr, dtype=float)
    if (bad := ~np.isfinite(start) | (start < 0)).any():
        raise ValueError(
            f"start_lr: must be a finite number >= 0, got {_first_bad(start_lr, start, bad)}"
        )
    frac = np.ones_like(t) if warmup_steps == 0 else np.minimum(t / warmup_steps, 1.0)
    return _float_out(start + (peak - start) * frac)
