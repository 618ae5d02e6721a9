"""Input checks of the collective formulas: ValueError naming the argument, the
value and the allowed range; the scalar fast path's checks; result shaping."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._checks import element_text

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
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        from ..units import text_hint

        raise ValueError(
            f"{name}: expected a number or an array of numbers, got {value!r}"
            + text_hint(name, value)
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


def _ranks(value: ArrayLike, name: str = "ranks") -> np.ndarray:
    n = _array(name, value)
    with np.errstate(invalid="ignore"):
        ok = (n >= 1.0) & (n - np.floor(n) == 0.0)  # NaN and inf (inf - inf = NaN) fail
    if not ok.all():
        bad = ~ok
        raise ValueError(f"{name}: must be a whole number >= 1, got {_first_bad(n, bad, value)}")
    return n


def _zero_for_one_rank(n: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0 where N == 1 (a single rank communicates nothing); the where-pass only when needed."""
    return np.where(n > 1.0, value, 0.0) if (n == 1.0).any() else value


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
    if not (math.isfinite(n) and n >= 1 and n == math.floor(n)):
        raise ValueError(f"{name}: must be a whole number >= 1, got {float(n)!r}")
    return float(n)
