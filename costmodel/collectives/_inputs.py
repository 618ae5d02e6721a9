"""Input checks of the collective formulas: ValueError naming the argument, the
value and the allowed range; the scalar fast path's checks; result shaping."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._checks import element_text, refuse_unreal

if TYPE_CHECKING:
    from .._limits import Limit

FloatOrArray = float | np.ndarray


def _first_bad(x: np.ndarray, bad: np.ndarray, value: object) -> str:
    """The first bad element of ``x`` as the message shows it: the caller's ``value`` there
    (``None (element 1 of 2)`` where a list held None, not the NaN numpy read it as)."""
    if x.ndim == 0:
        return repr(float(x))
    i = int(np.flatnonzero(bad.ravel())[0])
    return f"{element_text(value, x, i)} (element {i} of {x.size})"


def _array(name: str, value: ArrayLike) -> np.ndarray:
    # None is no number (numpy would read it as NaN and the message would say "got nan")
    if (
        value is None
        or isinstance(value, bool | np.bool_)
        or getattr(value, "dtype", None) == np.bool_
    ):
        raise ValueError(f"{name}: expected a number or an array of numbers, got {value!r}")
    try:
        x = np.asarray(value)  # a list is read once: its dtype is checked, then it is converted
    except (TypeError, ValueError):
        x = None
    if x is not None:
        if x.dtype == np.bool_:  # a list of bools, as an array of them: True is not 1
            raise ValueError(f"{name}: expected a number or an array of numbers, got {value!r}")
        refuse_unreal(name, x)  # a duration read as its unit's count, a complex part dropped
        try:
            # an object array (a list holding None) as numpy reads the list: None is NaN, which
            # the range check names as the None it was (_checks.element_text)
            return np.asarray(value, dtype=float) if x.dtype == object else x.astype(float)
        except (TypeError, ValueError):
            pass
    from ..units import text_hint

    raise ValueError(
        f"{name}: expected a number or an array of numbers, got {value!r}" + text_hint(name, value)
    ) from None


def _unit(unit: str) -> str:
    """`` B`` for ``B``; nothing for a count (no stray space before the comma)."""
    return f" {unit}" if unit else ""


def _nonnegative(name: str, value: ArrayLike, unit: str) -> np.ndarray:
    x = _array(name, value)
    ok = (x >= 0.0) & (x < np.inf)  # NaN fails both comparisons
    if not ok.all():
        bad = ~ok
        raise ValueError(
            f"{name}: must be a finite number >= 0{_unit(unit)}, got {_first_bad(x, bad, value)}"
        )
    return x


def _positive(name: str, value: ArrayLike, unit: str) -> np.ndarray:
    x = _array(name, value)
    ok = (x > 0.0) & (x < np.inf)
    if not ok.all():
        bad = ~ok
        raise ValueError(
            f"{name}: must be a finite number > 0{_unit(unit)}, got {_first_bad(x, bad, value)}"
        )
    return x


@functools.cache
def _ranks_limit() -> Limit:
    """The range of a rank count (``_limits.LIMITS["ranks"]``: whole, 1..1e9), the one
    ``global_batch``, ``ddp_step``, ``training_memory``'s ``dp_ranks`` and every command's
    ``--ranks`` hold; imported on first use, as :mod:`costmodel.memory` does (the limits
    module imports units, which builds a pydantic validator at import)."""
    from .._limits import LIMITS

    return LIMITS["ranks"]


@functools.cache
def _gamma_limit() -> Limit:
    """The range of a reduction cost (``_limits.LIMITS["gamma"]``: 0..1e-6 s/B, the slowest
    link's 1 MB/s), the one ``collective --gamma`` and the sweep's ``gamma`` hold."""
    from .._limits import LIMITS

    return LIMITS["gamma"]


def _gamma(value: ArrayLike, name: str = "gamma_s_per_byte") -> np.ndarray:
    """``value`` as an array of reduction costs within :func:`_gamma_limit`, else ValueError
    ``"gamma_s_per_byte: must be a reduction cost in 0..1e-6 s/B (...), got VALUE"``."""
    g = _array(name, value)
    limit = _gamma_limit()
    ok = (g >= limit.lo) & (g <= limit.hi)  # NaN fails both
    if not ok.all():
        raise ValueError(f"{name}: must be {limit.rule}, got {_first_bad(g, ~ok, value)}")
    return g


def _check_scalar_gamma(g: float, name: str = "gamma_s_per_byte") -> float:
    """:func:`_gamma` for a Python scalar (the fast path)."""
    limit = _gamma_limit()
    if not (limit.lo <= g <= limit.hi):  # NaN fails
        raise ValueError(f"{name}: must be {limit.rule}, got {float(g)!r}")
    return float(g)


#: (lowest, highest, the rule in words) per kind of :func:`_bounds`, filled on first use: the
#: scalar fast path reads it with one dict lookup (a cached function call cost more than the check)
_BOUNDS: dict[str, tuple[float, float, str]] = {}


def _bounds(kind: str) -> tuple[float, float, str]:
    """(lowest, highest, the rule in words) of the shared limit ``kind``: ``"message"``
    (:data:`costmodel._limits.MESSAGE_BYTES`, 0..2**44 B), ``"bandwidth"`` (1 MB/s..1 PB/s),
    ``"fabric"`` (a bandwidth, or 0: a fabric's on one node) or ``"latency"`` (0..1 s), the
    ranges the CLI, ``cm.sweep``, ``ddp_step`` and the cluster form hold. Imported on first use
    (:func:`_ranks_limit`)."""
    found = _BOUNDS.get(kind)
    if found is None:
        from .._limits import LIMITS, MESSAGE_BYTES

        limit = MESSAGE_BYTES if kind == "message" else LIMITS[kind.replace("fabric", "bandwidth")]
        rule = f"{limit.rule}, or 0 with one node" if kind == "fabric" else limit.rule
        found = _BOUNDS[kind] = (limit.lo, limit.hi, rule)
    return found


def _limited(name: str, value: ArrayLike, kind: str) -> np.ndarray:
    """``value`` as an array within the shared limit ``kind`` (:func:`_bounds`), checked
    element-wise in one pass, else ValueError ``"NAME: must be RULE, got VALUE"`` naming the
    first element out of it (``bandwidth_bytes_per_s: must be a per-direction rate in 1
    MB/s..1 PB/s, ..., got 50.0``): a bandwidth typed in GB/s, a latency in us, a size past
    2**44 B, as every command refuses them."""
    x = _array(name, value)
    lo, hi, rule = _bounds(kind)
    ok = (x >= lo) & (x <= hi)  # NaN fails both
    if kind == "fabric":
        ok |= x == 0.0
    if not ok.all():
        raise ValueError(f"{name}: must be {rule}, got {_first_bad(x, ~ok, value)}")
    return x


def _check_scalar_limited(name: str, x: float, kind: str) -> float:
    """:func:`_limited` for a Python scalar (the fast path)."""
    lo, hi, rule = _BOUNDS.get(kind) or _bounds(kind)
    if lo <= x <= hi or (x == 0.0 and kind == "fabric"):  # NaN fails
        return float(x)
    raise ValueError(f"{name}: must be {rule}, got {float(x)!r}")


def _ranks(value: ArrayLike, name: str = "ranks") -> np.ndarray:
    """``value`` as an array of rank counts within :func:`_ranks_limit`, else ValueError
    ``"ranks: must be a whole number in 1..1,000,000,000, got VALUE"``."""
    n = _array(name, value)
    # a rank count holds the shared limit; a node or node-size count (``nodes``,
    # ``gpus_per_node``, which predict's cluster bounds) the whole-number rule
    lo, hi, rule = _count_rule(name)
    with np.errstate(invalid="ignore"):
        # NaN and inf (inf - inf = NaN) fail
        ok = (n >= lo) & (n <= hi) & (n - np.floor(n) == 0.0)
    if not ok.all():
        bad = ~ok
        raise ValueError(f"{name}: must be {rule}, got {_first_bad(n, bad, value)}")
    return n


#: (lowest, highest, the rule in words) per count name of :func:`_count_rule`, filled on first
#: use (the scalar fast path reads it with one dict lookup)
_COUNTS: dict[str, tuple[float, float, str]] = {}

#: The counts held to a shared limit: ``ranks`` (1..1e9), the topology formulas' ``nodes``
#: (1..1,000,000) and ``gpus_per_node`` (1..1,024), the ranges of every command and of
#: ``cm.cluster``, and their ``nics_per_node`` (0..1,024, the Node model's)
_SHARED_COUNTS = ("ranks", "nodes", "gpus_per_node", "nics_per_node")


def _count_rule(name: str) -> tuple[float, float, str]:
    """(lowest, highest, the rule in words) of the count ``name``: one of
    :data:`_SHARED_COUNTS` its shared limit (:mod:`costmodel._limits`), any other count whole
    and >= 1."""
    found = _COUNTS.get(name)
    if found is None:
        if name in _SHARED_COUNTS:
            from .._limits import LIMITS, NICS_PER_NODE

            limit = NICS_PER_NODE if name == "nics_per_node" else LIMITS[name]
            found = (limit.lo, limit.hi, limit.rule)
        else:
            found = (1.0, math.inf, "a whole number >= 1")
        _COUNTS[name] = found
    return found


def _zero_for_one_rank(n: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0 where N == 1 (a single rank communicates nothing); the where-pass only when needed."""
    return np.where(n > 1.0, value, 0.0) if (n == 1.0).any() else value


def _zero_for_nothing_sent(n: np.ndarray, m: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0 where N == 1 or M == 0: one rank, or an empty message, communicates nothing and pays
    no latency (NCCL discards an empty collective; ``predict_collective`` says 0 s for 0 B).
    Element-wise; the where-pass only when needed."""
    if (n == 1.0).any() or (m == 0.0).any():
        return np.where((n > 1.0) & (m > 0.0), value, 0.0)
    return value


def _out(x: np.ndarray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


def _scalars(*values: object) -> tuple[float, ...] | None:
    """The values when every one is a plain Python int or float (the fast scalar path applies),
    else None. Returning them (not a bool) lets the type checker see they are numbers."""
    out: list[float] = []
    for v in values:
        if not (type(v) is float or type(v) is int):
            return None
        out.append(v)
    return tuple(out)


def _check_scalar(name: str, x: float, unit: str, *, positive: bool = False) -> float:
    ok = math.isfinite(x) and (x > 0.0 if positive else x >= 0.0)
    if not ok:
        rule = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{name}: must be a finite number {rule}{' ' * bool(unit)}{unit}, got {float(x)!r}"
        )
    return float(x)


def _check_scalar_ranks(n: float, name: str = "ranks") -> float:
    lo, hi, rule = _count_rule(name)
    if not (math.isfinite(n) and lo <= n <= hi and n == math.floor(n)):
        raise ValueError(f"{name}: must be {rule}, got {float(n)!r}")
    return float(n)
