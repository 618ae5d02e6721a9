"""Checks shared by the formula modules: a result that is not finite is an error naming an input.

No silent numbers: a formula fed extreme but individually valid inputs (a bandwidth of
1e-300 B/s, a latency of 1e308 s) overflows to ``inf`` or produces ``NaN`` (``0 * inf``). Rather
than return that, :func:`finite_result` raises ValueError naming the input most likely to blame:
the numeric argument farthest from 1 in orders of magnitude (``|log10 |x||``, the largest element
of an array), which is the tiny bandwidth or the huge size in every case the reliability suite
generates. Only the outermost checked call checks, so the message names the argument the
caller passed, not an internal one. The check on a finite result is one ``math.isfinite`` (scalar) or one
``np.isfinite(...).all()`` (array), so the hot paths keep their speed.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])
_STATE = threading.local()  # depth > 0 inside a checked call: only the outermost call checks


def _all_finite(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, bool | int | str | None):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())
    if isinstance(value, np.floating):
        return bool(np.isfinite(value))
    if depth > 2:
        return True
    hook = getattr(type(value), "all_finite", None)
    if hook is not None:  # a result type that checks itself in one expression (hot paths)
        return bool(hook(value))
    if getattr(type(value), "NAN_MEANS_UNKNOWN", False):
        return True  # e.g. an error band: NaN there means "no measurement", not an overflow
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(
            _all_finite(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        )
    if isinstance(value, dict):
        return all(_all_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple) and len(value) < 100_000:
        return all(_all_finite(v, depth + 1) for v in value)
    return True


def _magnitude(value: Any) -> float:
    """Orders of magnitude away from 1 (0 and non-numbers score 0)."""
    if isinstance(value, bool | str) or value is None:
        return -1.0
    try:
        x = np.abs(np.asarray(value, dtype=float))
    except (TypeError, ValueError, OverflowError):
        return -1.0
    x = x[(x > 0) & np.isfinite(x)] if x.ndim else (x if 0 < x < math.inf else np.asarray([]))
    x = np.atleast_1d(x)
    return float(np.abs(np.log10(x)).max()) if x.size else 0.0


def _is_broadcast_error(exc: ValueError) -> bool:
    """numpy's own shape errors ("operands could not be broadcast together with shapes ...",
    "shape mismatch: objects cannot be broadcast ..."), which name no argument."""
    text = str(exc)
    return "broadcast" in text and "shape" in text and ":" not in text.split(" ", 1)[0]


def _shapes_message(bound: inspect.BoundArguments) -> str:
    """The one-line refusal of array arguments whose shapes do not broadcast, naming them."""
    arrays = {
        k: np.shape(v)
        for k, v in bound.arguments.items()
        if not isinstance(v, str | bytes) and np.ndim(v) > 0
    }
    names = ", ".join(arrays) or "input"
    shapes = ", ".join(f"{k} {s}" for k, s in arrays.items())
    return (
        f"{names}: shapes do not broadcast together ({shapes}); allowed: arrays numpy broadcasts "
        "(equal lengths, length 1, or a column against a row: np.asarray(sizes)[:, None])"
    )


def named_shapes(fn: F) -> F:
    """Decorator: numpy's shape error (arrays that do not broadcast) raised again naming the
    arguments and their shapes (:func:`finite_result` does the same), for a formula whose result
    may be non-finite by design or is a count."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            if not _is_broadcast_error(exc):
                raise
            raise ValueError(_shapes_message(sig.bind(*args, **kwargs))) from None

    return inner  # type: ignore[return-value]


def blame(bound: inspect.BoundArguments) -> tuple[str, Any]:
    """(name, value) of the numeric argument with the most extreme order of magnitude."""
    args = {k: v for k, v in bound.arguments.items() if k not in ("self", "cls")}
    best = max(args.items(), key=lambda kv: _magnitude(kv[1]), default=("input", None))
    return best


_PLAIN = frozenset({int, float, str, bool, type(None)})


def _plain(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether every argument is a plain Python number, text, bool or None (no array)."""
    return _PLAIN.issuperset(map(type, args)) and _PLAIN.issuperset(map(type, kwargs.values()))


def finite_result(what: str) -> Callable[[F], F]:
    """Decorator: raise ValueError naming the input when ``fn``'s result is not finite.

    ``what`` names the result in the message (``"time"``, ``"memory"``). With an array (or any
    non-plain) argument the call runs under ``np.errstate`` that quiets overflow, invalid and
    divide warnings: the result is checked here instead, so an overflow is one clear ValueError,
    not numpy's ``RuntimeWarning: overflow encountered in multiply`` printed before it.
    """

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            if getattr(_STATE, "depth", 0):  # called by another checked formula: it checks
                return fn(*args, **kwargs)
            _STATE.depth = 1
            try:
                if _plain(args, kwargs):  # numbers: the scalar paths, no numpy to quiet
                    out = fn(*args, **kwargs)
                else:  # an overflow is refused below naming the input, without numpy's warning
                    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                        out = fn(*args, **kwargs)
            except ValueError as exc:
                if not _is_broadcast_error(exc):
                    raise
                raise ValueError(_shapes_message(sig.bind(*args, **kwargs))) from None
            finally:
                _STATE.depth = 0
            if _all_finite(out):
                return out
            bound = sig.bind(*args, **kwargs)
            name, value = blame(bound)
            raise ValueError(
                f"{name}: the {what} is not finite (overflow) with {name}={value!r}; allowed: "
                "values that keep the result a finite number (check the units: B, s, B/s)"
            )

        return inner  # type: ignore[return-value]

    return wrap


def said(value: object) -> str:
    """``value`` as a one-line message shows it: its ``repr``, or, where that spans lines (a
    numpy array of two dimensions or more), the array by its shape; a numpy scalar as the
    Python number it holds (``1.5``, as a float typed, not ``np.float64(1.5)``).

    >>> said(2), said(np.array([1.0, 2.0])), said(np.zeros((2, 1)))
    ('2', 'array([1., 2.])', 'an array of shape (2, 1)')
    >>> said(np.float64(1.5)), said(np.int64(0)), said(np.array(2.0)), said(np.float64("nan"))
    ('1.5', '0', '2.0', 'nan')
    """
    from ._limits import plain_number  # here: the formula layer loads no limits at import

    text = repr(plain_number(value))
    if "\n" in text and hasattr(value, "shape"):
        return f"an array of shape {tuple(value.shape)}"
    return " ".join(text.split())


def refuse_unreal(name: str, value: object) -> None:
    """Refuse, naming ``name``, a value numpy would read as a wrong real number.

    A numpy bool, or a list or array of bools (``float(np.bool_(True))`` is 1.0: one byte, an
    MFU of 1), is refused as every API input refuses a Python bool (which this leaves to the
    caller's own words).

    ``np.asarray(x, dtype=float)`` reads a duration (``np.timedelta64(5, "us")``, a pandas
    ``timedelta64`` column) as the count of its own unit, 5, so a latency in seconds came out
    1e6 times too large; a date as days since 1970; a complex number by dropping its imaginary
    part (only a ``ComplexWarning``); ``float()`` of a numpy scalar does the same. The formulas'
    array paths, the ``cm.parse_*`` readers and the scalar checks of the step, the cost, the
    formatters and ``Scenario`` call this before they convert; None, a str or a plain Python
    int or float costs one type check.

    >>> refuse_unreal("latency_s", np.timedelta64(5, "us"))
    Traceback (most recent call last):
    ...
    ValueError: latency_s: expected a number or an array of numbers, got a duration (timedelta64[us]), which numpy reads as a count of its own unit (5 us as 5); allowed: numbers of seconds (td / np.timedelta64(1, 's'))
    >>> refuse_unreal("latency_s", [5e-6, 1e-5])   # numbers pass
    """
    if value is None or (
        isinstance(value, bool | int | float | str) and not hasattr(value, "dtype")
    ):
        return  # a Python bool is each caller's to refuse, in its own words
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype):  # a list, a Python scalar: what numpy makes of it
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):  # ragged, or no number: the caller's conversion says so
            return
    if dtype.kind == "b":  # True is no count of 1 nor 1 B: as one bool is refused everywhere
        raise ValueError(
            f"{name}: expected a number or an array of numbers, got a bool ({said(value)})"
        )
    if dtype.kind == "m":
        in_seconds = name.endswith("_s") or name == "duration"  # parse_duration's own name
        seconds = " of seconds (td / np.timedelta64(1, 's'))" if in_seconds else ""
        raise ValueError(
            f"{name}: expected a number or an array of numbers, got a duration ({dtype}), which "
            f"numpy reads as a count of its own unit (5 us as 5); allowed: numbers{seconds}"
        )
    if dtype.kind == "M":
        raise ValueError(
            f"{name}: expected a number or an array of numbers, got a date ({dtype}); allowed: "
            "numbers"
        )
    if dtype.kind == "c":
        raise ValueError(
            f"{name}: expected a real number or an array of them, got a complex {dtype} "
            "(numpy would drop the imaginary part); allowed: real numbers (x.real)"
        )


def whole_count(name: str, value: Any) -> int:
    """One count >= 1 as a Python int: an int, a numpy integer (an element of an array, a
    0-d array) or a float with no fraction (``2.0``); else ValueError naming ``name``.

    A cluster's node count or GPU slice is one number per call: an array is refused with where
    several are evaluated (``cm.sweep``), not with numpy's ambiguity error.

    >>> import numpy as np
    >>> whole_count("nodes", np.int64(2)), whole_count("nodes", 2.0)
    (2, 2)
    """
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}: must be a whole number >= 1, got {value!r}")
    if np.ndim(value) != 0:
        raise ValueError(
            f"{name}: one count per call, a whole number >= 1, got {said(value)}; for several, "
            f"loop, or cm.sweep(preset=..., {name}=[...])"
        )
    if isinstance(value, np.ndarray | np.generic):
        value = value.item()
    if isinstance(value, int):
        if value >= 1:
            return value
    elif isinstance(value, float) and math.isfinite(value) and value == int(value) and value >= 1:
        return int(value)
    raise ValueError(f"{name}: must be a whole number >= 1, got {value!r}")


def flag(name: str, value: object, *, allow_none: bool = False) -> Any:
    """A real boolean (Python or numpy bool, or an array of them), else ValueError naming it.

    Truthy values such as ``'False'``, ``'no'`` or ``1`` are refused: a string must never switch
    a feature on silently. Text ``true``/``false`` is accepted only by the CLI and URL layers
    (:func:`costmodel.units.parse_bool`).
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype == np.bool_:
        return value
    if isinstance(value, list | tuple) and value and all(isinstance(v, bool) for v in value):
        return np.asarray(value, dtype=bool)
    allowed = "True, False" + (" or None" if allow_none else "")
    raise ValueError(f"{name}: expected a bool ({allowed}), got {value!r}")


def heads_divide_hidden(hidden: Any, heads: Any) -> None:
    """Refuse a hidden size its attention heads cannot share, naming ``hidden`` and the rule.

    Multi-head attention splits the model's width into ``heads`` heads of ``hidden / heads``
    dimensions each (Vaswani et al. 2017, "Attention Is All You Need", section 3.2.2), so a
    transformer whose head dimension is not given separately has ``hidden`` a multiple of
    ``heads``: hidden 3 with 32 heads is no transformer (its head dimension, 3 // 32, is 0).
    Arrays broadcast; the first bad pair is named.

    >>> heads_divide_hidden(4096, 32)
    >>> heads_divide_hidden(3, 32)
    Traceback (most recent call last):
    ...
    ValueError: hidden: must be a multiple of the 32 `heads` (each head takes hidden / heads dimensions), got 3
    """
    if type(hidden) is int and type(heads) is int:  # the scalar path: one modulo
        if heads > 0 and hidden % heads:
            raise ValueError(
                f"hidden: must be a multiple of the {heads} `heads` (each head takes hidden / heads "
                f"dimensions), got {hidden}"
            )
        return
    h, a = np.broadcast_arrays(np.asarray(hidden, dtype=float), np.asarray(heads, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = (a > 0) & (np.mod(h, a) != 0)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ValueError(
            f"hidden: must be a multiple of the {a.flat[i]:g} `heads` (each head takes hidden / heads "
            f"dimensions), got {h.flat[i]:g}"
        )


class FasterThanPeakError(ValueError):
    """A measured time shorter than its work takes at the GPUs' dense peak (see
    :func:`refuse_faster_than_peak`)."""


def refuse_faster_than_peak(
    field: str,
    what: str,
    time_s: float,
    flops: float,
    peak_flops: float,
    allowed: str,
    utilisation: str = "an MFU",
    *,
    measured: bool = True,
) -> float:
    r"""The one rule for a measured time: refused when it is faster than the GPUs can run.

    .. math:: \mathrm{MFU} = \frac{F}{t\, F_{peak}} > 1 \;\Rightarrow\; \text{refused}

    ``flops`` ``F`` [FLOP] is the model's work in ``time_s`` ``t`` [s] and ``peak_flops``
    ``F_peak`` [FLOP/s] the dense peak of the GPUs doing it. The work counted is a lower bound
    of what the GPUs run (6N per token, Kaplan et al. 2020, plus attention, PaLM appendix B;
    recomputation and the optimizer only add), so an MFU over 1 cannot be measured: a wrong
    unit ("1ms" for "1s"), sequence length or micro-batch. It is what the model can defend
    whatever the network: a measured compute time (per micro-batch) and a measured step time
    (of the whole run) are held to it alike. A tiny compute time within the peak is a legal
    measurement (the step it prices is comms-bound), and so is a measured step shorter than the
    predicted communication (the prediction's error band is wide; a measurement is what
    corrects it). Returns the MFU; raises :class:`FasterThanPeakError` naming ``field``, the
    MFU and the shortest possible time ``F / F_peak``, put in the ``{}`` of ``allowed``.
    ``utilisation`` names the ratio: ``F`` the FLOPs the GPUs execute, recomputation's
    included, it is the hardware FLOP utilisation (PaLM appendix B), not the MFU.
    ``measured=False``: a time the caller hands in without calling it measured (a predicted
    step given to :func:`costmodel.training.training_cost`) is held to the same rule, said
    without the word "measured".

    >>> refuse_faster_than_peak("step_time_s", "step", 2.0, 1e15, 1e15, "a step of at least {}")
    0.5
    >>> refuse_faster_than_peak("step_time_s", "step", 0.5, 1e15, 1e15, "a step of at least {}")
    Traceback (most recent call last):
    ...
    costmodel._checks.FasterThanPeakError: step_time_s: a measured step of 0.5 s implies an MFU of 2 (200% of the 1,000 TFLOP/s dense peak); allowed: a step of at least 1 s
    """
    mfu = flops / (time_s * peak_flops)
    if mfu > 1.0:
        # a percentage in digits while it reads as one (1e-300 s wrote 300 of them)
        pct = f"{100 * mfu:,.0f}%" if mfu < 1e4 else f"{100 * mfu:.3g}%"
        raise FasterThanPeakError(
            f"{field}: a{' measured' if measured else ''} {what} of {time_s:.3g} s implies {utilisation} of {mfu:.3g} "
            f"({pct} of the {peak_flops / 1e12:,.4g} TFLOP/s dense peak); allowed: "
            + allowed.format(f"{flops / peak_flops:.3g} s")
        )
    return mfu


def element_text(value: object, x: np.ndarray, i: int) -> str:
    """What the caller gave as element ``i`` (flat) of ``x`` (``value`` read as floats), for a
    message: ``"None"`` where a list held None (numpy reads it as NaN, and "got nan" names a value
    the user never typed, as a bare None already says "got None"), else the number's repr. Only
    a refusal calls it: the object read costs nothing on the answered path.

    >>> element_text([1e6, None], np.asarray([1e6, np.nan]), 1), element_text([1.0, -2.0], np.asarray([1.0, -2.0]), 1)
    ('None', '-2.0')
    """
    shown = float(x.ravel()[i])
    if math.isnan(shown) and not (isinstance(value, np.ndarray) and value.dtype != object):
        try:
            held = np.asarray(value, dtype=object)
        except (TypeError, ValueError):
            held = None
        if held is not None and held.shape == x.shape and held.ravel()[i] is None:
            return "None"
    return repr(shown)


def must_be(name: str, rule: str, value: object) -> ValueError:
    """The one style of a bad-input message: ``"name: must be RULE, got VALUE"``.

    ``rule`` states the allowed range (``"a whole number >= 1"``, ``"in (0, 1]"``); the caller
    raises the returned error (``raise must_be("ranks", "a whole number >= 1", ranks)``), so the
    traceback points at the check.

    >>> str(must_be("ranks", "a whole number >= 1", 0))
    'ranks: must be a whole number >= 1, got 0'
    """
    return ValueError(f"{name}: must be {rule}, got {said(value)}")


def unknown_name(
    field: str,
    what: str,
    name: object,
    pool: list[str],
    *,
    case_note: str = "names are lower-case",
    cutoff: float = 0.4,
    see: str = "",
) -> str:
    """The one refusal of an unknown preset name (a cluster, an architecture, a price):
    ``"field: unknown WHAT 'name'; did you mean 'x'? (CASE_NOTE)"`` when only the case differs
    (names are one spelling each: say so rather than guess), else the closest names or, with
    none close, every name of ``pool`` in its order; ``see`` (`` (see `costmodel presets
    list`)``) ends the second form. The caller raises its own error type with it.

    The closest names are first every name that continues what was typed with a ``-`` word
    (``aws-p5`` -> ``aws-p5-capacity-block``, ``aws-p5-on-demand``: a name cut short), then
    :func:`difflib.get_close_matches` at ``cutoff``, at least three in all. By similarity
    alone ``aws-p5`` was closest to ``aws-p5en-spot``, another GPU's (H200) spot price.

    >>> unknown_name("arch", "architecture", "Llama-3.1-8B", ["llama-3.1-8b"])
    "arch: unknown architecture 'Llama-3.1-8B'; did you mean 'llama-3.1-8b'? (names are lower-case)"
    >>> unknown_name("price", "price preset", "zzz", ["a", "b"], see=" (see `costmodel archs`)")
    "price: unknown price preset 'zzz'; allowed: a, b (see `costmodel archs`)"
    >>> unknown_name("price", "price preset", "aws-p5", ["aws-p5-on-demand", "aws-p5en-spot"])
    "price: unknown price preset 'aws-p5'; closest: aws-p5-on-demand, aws-p5en-spot"
    """
    import difflib

    typed = str(name)
    same = [n for n in pool if n.lower() == typed.lower()]
    if same:
        return f"{field}: unknown {what} {name!r}; did you mean {same[0]!r}? ({case_note})"
    continued = [n for n in pool if n.startswith(f"{typed}-")]
    similar = difflib.get_close_matches(typed, pool, n=3, cutoff=cutoff)
    close = (continued + [n for n in similar if n not in continued])[: max(3, len(continued))]
    hint = f"closest: {', '.join(close)}" if close else f"allowed: {', '.join(pool)}"
    return f"{field}: unknown {what} {name!r}; {hint}{see}"
