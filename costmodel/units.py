r"""SI units: constants, parsing of human strings, and formatting for people.

The one place in costmodel that converts units. Everything else works in bytes, seconds,
bytes per second and FLOP/s.

Conventions (DESIGN.md section 2): decimal SI prefixes for bytes and rates (GB = 1e9 B), as
nccl-tests and datasheets use; binary prefixes only when written (GiB = 2**30 B). A lower-case
``b`` is a bit (``400Gb/s`` = 50e9 B/s), an upper-case ``B`` a byte.

Sizes, rates, durations, counts and compute rates share one strict grammar (a number with an
optional exponent, then a unit); the whole string must match, or the input is refused.

>>> parse_bytes("25MB")
25000000
>>> parse_bytes("1.5GiB")
1610612736
>>> parse_rate("400Gb/s")
50000000000.0
>>> parse_rate("900GB/s")
900000000000.0
>>> parse_duration("5us"), parse_duration("2ms")
(5e-06, 0.002)
>>> format_bytes(14e9), format_rate(50e9), format_duration(0.000972)
('14 GB', '50 GB/s', '972 µs')
"""

from __future__ import annotations

import math
import os
import re
import sys
import warnings
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

# --- constants (SI, and IEC where named) ---------------------------------------------------
B = 1.0
KB, MB, GB, TB, PB = 1e3, 1e6, 1e9, 1e12, 1e15
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
BIT = 1.0 / 8.0
Gbps = 1e9 / 8.0  # one gigabit per second, in bytes per second
US = 1e-6  # microsecond
MS = 1e-3  # millisecond
NS = 1e-9  # nanosecond
TFLOPS = 1e12
PFLOPS = 1e15

MAX_TEXT_LENGTH = 64
"""Longest quantity string accepted (characters): longer text is refused before any regex runs."""

MAX_BYTES = 10**18
"""Largest byte count :func:`parse_bytes` accepts (1 EB): beyond any GPU cluster's memory."""

# --- the grammar -----------------------------------------------------------------------------
# One grammar for every quantity: optional sign, digits with an optional fraction, an optional
# exponent, optional spaces, then the unit; the WHOLE string must match (re.fullmatch), so
# '14-GB', '1.5.5GB' and '7e-3GBx' are refused, and '7e-3 GB' is 7e6 B. Every part of the
# pattern is followed by a character it cannot contain, so the regex cannot backtrack
# catastrophically; and text longer than MAX_TEXT_LENGTH is refused before it runs at all.
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PREFIX = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_PREFIX_RE = r"(?P<prefix>[KMGTPE]i|[kKMGTPE]?)"
_BYTES_RE = re.compile(rf"(?P<num>{_NUMBER})\s*{_PREFIX_RE}(?P<unit>B|bytes?|b|bits?)?")
_RATE_RE = re.compile(
    rf"(?P<num>{_NUMBER})\s*{_PREFIX_RE}(?P<unit>B|b|bit|bits|byte|bytes)\s*(?:/\s*s|ps|/sec)"
)
_DURATION_UNITS = {
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
}
_DURATION_RE = re.compile(rf"(?P<num>{_NUMBER})\s*(?P<unit>s|sec|ms|us|µs|μs|ns|min|h)?")
_COUNT_SUFFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_COUNT_RE = re.compile(rf"(?P<num>{_NUMBER})\s*(?P<suffix>[kKMBGT]?)")
_FLOPS_RE = re.compile(rf"(?P<num>{_NUMBER})\s*(?P<prefix>[kKMGTPE]?)\s*FLOP(?:S|/s)?", re.I)
_FLOPS_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15, "e": 10**18}


def _bad(what: str, text: object, examples: str) -> ValueError:
    return ValueError(
        f"{what}: cannot parse {text!r}; expected a number with a unit, e.g. {examples}"
    )


def case_spelling(
    pattern: re.Pattern[str],
    text: str,
    keep: str = "",
    refused: Callable[[re.Match[str]], bool] | None = None,
) -> str | None:
    """The spelling of ``text`` that ``pattern`` reads with the fewest letters of its unit in
    the other case (``'14GIB'`` -> ``'14GiB'``, ``'50GB/S'`` -> ``'50GB/s'``), or None: units
    are case-sensitive (``M`` mega, ``m`` milli; ``b`` a bit, ``B`` a byte), so a unit typed
    in the wrong case is refused and this spelling said beside it, never read in its place.
    The letters of ``keep`` are not changed (a rate's ``b``/``B``: bits or bytes is the user's
    to say); a match ``refused`` says is skipped (a size in bits).

    >>> case_spelling(_BYTES_RE, "14gib", refused=_in_bits), case_spelling(_BYTES_RE, "8x")
    ('14GiB', None)
    >>> case_spelling(_RATE_RE, "50GB/S", keep="bB"), case_spelling(_DURATION_RE, "400MS")
    ('50GB/s', '400ms')
    """
    m = re.match(_NUMBER, text)
    if m is None:
        return None
    number, unit = text[: m.end()], text[m.end() :]
    letters = [i for i, c in enumerate(unit) if c.swapcase() != c and c not in keep]
    if not letters or len(letters) > 8:  # at most 255 spellings to try
        return None
    best: tuple[int, str] | None = None
    for mask in range(1, 2 ** len(letters)):
        chars = list(unit)
        for j, i in enumerate(letters):
            if mask >> j & 1:
                chars[i] = chars[i].swapcase()
        spelled = number + "".join(chars)
        found = pattern.fullmatch(spelled)
        if found is None or (refused is not None and refused(found)):
            continue
        flips = bin(mask).count("1")
        if best is None or flips < best[0]:
            best = (flips, spelled)
    return None if best is None else best[1]


def _in_bits(m: re.Match[str]) -> bool:
    """A size's match whose unit is a bit (refused: sizes are bytes)."""
    return m["unit"] in ("b", "bit", "bits")


#: how each quantity's unit may be respelled in the other case (:func:`case_spelling`)
_CASE_RULES: dict[re.Pattern[str], dict[str, Any]] = {
    _BYTES_RE: {"refused": _in_bits},  # '14gb' is meant as bytes: sizes are
    _RATE_RE: {"keep": "bB"},  # '50gb/s' could be either: its b or B is kept
    _DURATION_RE: {},
}


def _match(
    pattern: re.Pattern[str], text: object, what: str, examples: str, thousands: str | None = None
) -> re.Match[str]:
    """Match the whole of ``text`` (stripped) against ``pattern``, or raise ValueError; a
    quantity read in ``thousands`` (``""`` a count, ``"B"`` a size) says how to write a number
    given with comma thousands (``'1,000'``: :func:`comma_thousands`), and a unit typed in the
    wrong case (``'14GIB'``) the spelling meant (:func:`case_spelling`), never read as it."""
    if not isinstance(text, str):
        raise TypeError(f"{what}: expected a number or a string, got {type(text).__name__}")
    s = text.strip()
    if len(s) > MAX_TEXT_LENGTH:
        raise ValueError(
            f"{what}: {s[:40]!r}... ({len(s)} characters) is too long (at most "
            f"{MAX_TEXT_LENGTH}); e.g. {examples}"
        )
    m = pattern.fullmatch(s)
    if m is None:
        if thousands is not None and (hint := comma_thousands(s, thousands)):
            raise ValueError(f"{what}: cannot parse {text!r}; a comma groups no digits: {hint}")
        rule = _CASE_RULES.get(pattern)
        if rule is not None and (spelled := case_spelling(pattern, s, **rule)):
            raise ValueError(
                f"{what}: cannot parse {text!r}; did you mean {spelled!r}? units are "
                f"case-sensitive, e.g. {examples}"
            )
        raise _bad(what, text, examples)
    return m


def _decimal(number: str, what: str, text: object) -> Decimal:
    try:
        return Decimal(number)
    except InvalidOperation:  # pragma: no cover - the grammar only lets numbers through
        raise _bad(what, text, "a number") from None


def _number(text: object, what: str) -> float | None:
    """A real number given as int or float (not bool), as a float; None for anything else."""
    if isinstance(text, bool):
        raise TypeError(f"{what}: expected a number or a string, got a bool ({text!r})")
    if isinstance(text, int):
        try:
            return float(text)
        except OverflowError:
            raise ValueError(f"{what}: {text!r} is too large") from None
    if isinstance(text, float):
        return text
    if getattr(text, "ndim", 0):  # an array: numpy's "only 0-dimensional arrays ..." named nothing
        raise TypeError(
            f"{what}: expected a number or a string, got an array of shape {text.shape}; "  # type: ignore[attr-defined]
            "one value per call"
        )
    if hasattr(text, "__float__") and not isinstance(text, str):  # numpy scalars
        from ._checks import refuse_unreal

        refuse_unreal(what, text)  # float() of np.timedelta64 failed unnamed; complex lost a part
        return float(text)
    return None


_PLAIN_RE = re.compile(_NUMBER)


def _is_plain_number(text: str) -> bool:
    s = text.strip()
    return len(s) <= MAX_TEXT_LENGTH and _PLAIN_RE.fullmatch(s) is not None


def parse_bytes(text: str | int | float, *, name: str = "size") -> int:
    """Parse a byte count such as ``"25MB"``, ``"1.5GiB"``, ``"8B"`` or a plain number [B].

    Grammar (the whole string must match): ``number [spaces] [prefix] [B|byte|bytes]``, where
    ``number`` may have a sign, a fraction and an exponent (``7e-3GB`` is 7e6 B), decimal
    prefixes ``k K M G T P E`` are powers of 1000 and binary prefixes ``Ki Mi Gi Ti Pi Ei``
    powers of 1024. A lower-case ``b`` (``8Gb``) is a bit and is refused: sizes are bytes.
    The value is computed exactly (decimal arithmetic) and must be whole bytes (``'1.5B'`` is
    refused, ``'1.5KB'`` is 1500). Negative, non-finite and values above :data:`MAX_BYTES` are
    refused.

    >>> parse_bytes("8B"), parse_bytes(1024), parse_bytes("4 KiB"), parse_bytes("7e-3 GB")
    (8, 1024, 4096, 7000000)
    """
    number = _number(text, name)
    if number is not None:
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"{name}: must be a finite number of bytes >= 0, got {text!r}")
        value = Decimal(text) if isinstance(text, int) else Decimal(number)
    else:
        m = _match(_BYTES_RE, text, name, "'25MB', '1.5GiB', '8B'", thousands="B")
        if m["unit"] in ("b", "bit", "bits"):  # '8Gb' is bits: refuse rather than guess
            raise ValueError(
                f"{name}: {text!r} is in bits (lower-case b); sizes are bytes, e.g. '1GB'"
            )
        value = _decimal(m["num"], name, text) * _PREFIX[m["prefix"]]
        if value < 0:
            raise ValueError(f"{name}: must be >= 0 bytes, got {text!r}")
    if value > MAX_BYTES:
        raise ValueError(f"{name}: {text!r} is above the largest size accepted, {MAX_BYTES:.0e} B")
    whole = value.to_integral_value()
    if value != whole:  # '1.5B' was rounded to 2: a byte count is whole, never guessed
        raise ValueError(
            f"{name}: {text!r} is {float(value):.6g} B, not a whole number of bytes; "
            "allowed: whole bytes, e.g. '2B', '1.5KB', '1GiB'"
        )
    return int(whole)


def _finite(value: Decimal, name: str, text: object, unit: str, *, positive: bool) -> float:
    """``value`` as a float in the quantity's range, else one ValueError naming ``name`` and
    the range. A number at or past 1e300 (a float overflows a step's products there) is
    refused with that bound: ``1e300``, a finite float, was said to be "must be a finite ...".

    >>> _finite(Decimal("1e300"), "bandwidth", 1e300, "rate in B/s", positive=True)
    Traceback (most recent call last):
    ...
    ValueError: bandwidth: must be a finite rate in B/s > 0 and below 1e+300, got 1e+300
    """
    sign = "> 0" if positive else ">= 0"
    if value.is_finite() and value >= Decimal("1e300"):
        raise ValueError(f"{name}: must be a finite {unit} {sign} and below 1e+300, got {text!r}")
    out = float(value) if abs(value) < Decimal("1e300") else math.inf
    if not math.isfinite(out) or (out <= 0 if positive else out < 0):
        raise ValueError(f"{name}: must be a finite {unit} {sign}, got {text!r}")
    return out


def parse_rate(text: str | int | float, *, name: str = "bandwidth") -> float:
    """Parse a data rate such as ``"400Gb/s"`` (bits) or ``"900GB/s"`` (bytes) into B/s.

    Grammar (the whole string must match): a plain number (B/s), or ``number [spaces] [prefix]
    unit /s``, unit ``B|byte|bytes`` or ``b|bit|bits`` (bits, divided by 8), ``/s`` also
    written ``ps`` or ``/sec``. Zero, negative and non-finite rates are refused.

    >>> parse_rate("100 Gbps"), parse_rate("50GB/s"), parse_rate(1e9), parse_rate("1e9")
    (12500000000.0, 50000000000.0, 1000000000.0, 1000000000.0)
    """
    number = _number(text, name)
    if number is not None:
        value = Decimal(number) if math.isfinite(number) else Decimal(-1)
    elif isinstance(text, str) and _is_plain_number(text):
        value = Decimal(text.strip())  # a plain number, written as text, is B/s as well
    else:
        m = _match(_RATE_RE, text, name, "'400Gb/s', '900GB/s', '100Gbps'")
        value = _decimal(m["num"], name, text) * _PREFIX[m["prefix"]]
        if m["unit"] in ("b", "bit", "bits"):
            value /= 8
    return _finite(value, name, text, "rate in B/s", positive=True)


def parse_duration(text: str | int | float, *, name: str = "duration") -> float:
    """Parse a duration such as ``"5us"``, ``"2ms"``, ``"0.4 s"`` into seconds.

    Grammar (the whole string must match): ``number [spaces] [s|sec|ms|us|µs|ns|min|h]``; a
    plain number is seconds. Negative or non-finite values are refused.

    >>> parse_duration("400ms"), parse_duration(0.5), parse_duration("2")
    (0.4, 0.5, 2.0)
    """
    number = _number(text, name)
    if number is not None:
        value = Decimal(number) if math.isfinite(number) else Decimal(-1)
    else:
        m = _match(_DURATION_RE, text, name, "'5us', '2ms', '0.4s'")
        value = _decimal(m["num"], name, text) * Decimal(repr(_DURATION_UNITS[m["unit"] or "s"]))
    return _finite(value, name, text, "duration in s", positive=False)


def parse_count(text: str | int | float, *, name: str = "count") -> float:
    """Parse a plain count with an optional suffix: ``"7B"`` parameters = 7e9, ``"25M"`` = 2.5e7.

    ``B`` here means billion (as in model sizes), not bytes. Grammar (the whole string must
    match): ``number [spaces] [k|K|M|B|G|T]``. Negative or non-finite values are refused.
    The decimal suffixes only, as every count but a token count reads them: a binary one
    (``8Ki``, ``4Mi``) is a token count's (sequence lengths, batches in tokens), read by
    :func:`parse_tokens` (``cm.parse_tokens``), which the refusal names.

    >>> parse_count("7B"), parse_count("1.5k"), parse_count(30e9)
    (7000000000.0, 1500.0, 30000000000.0)
    >>> parse_count("8Ki")
    Traceback (most recent call last):
    ...
    ValueError: count: cannot parse '8Ki'; expected a number with a unit, e.g. '7B', '25M', '1.5e9'; the binary suffixes Ki, Mi, Gi, Ti are read in token counts only, where '8Ki' is 8192
    """
    number = _number(text, name)
    if number is not None:
        value = Decimal(number) if math.isfinite(number) else Decimal(-1)
    else:
        try:
            m = _match(_COUNT_RE, text, name, "'7B', '25M', '1.5e9'", thousands="")
        except ValueError as exc:
            raise ValueError(f"{exc}{_binary_hint(text)}") from None
        value = _decimal(m["num"], name, text) * _COUNT_SUFFIX[m["suffix"]]
    return _finite(value, name, text, "number", positive=False)


def _binary_hint(text: object) -> str:
    """For a count written with a binary suffix (``'8Ki'``): where that suffix is read (a
    token count, :func:`parse_tokens`), with the value it has there; else ``""``. No function
    is named: the CLI's ``--params`` says it too."""
    s = text.strip() if isinstance(text, str) else ""
    m = _TOKENS_RE.fullmatch(s) if len(s) <= MAX_TEXT_LENGTH else None
    if m is None or not m["suffix"].endswith("i"):
        return ""
    hint = "; the binary suffixes Ki, Mi, Gi, Ti are read in token counts only"
    try:
        return f"{hint}, where {s!r} is {parse_tokens(s)}"
    except ValueError:  # '0.3Ki': no whole count there either
        return hint


COUNT_FORMS = "digits, an exponent or a suffix k, M, G (B), T: '8', '2k', '1e6'"
"""The forms a whole count takes (every count of every surface: CLI options, the sweep's axes,
``--vs`` items, grid files, Scenario fields given as text, the app's URL), said in the message
that refuses one. Underscores (``1_000``) are refused everywhere, as in every other quantity."""


_THOUSANDS_RE = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")
_SHORT_SUFFIXES = ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))


def comma_thousands(text: object, unit: str = "") -> str:
    """How to write ``text`` if it is a number with comma thousands (``'1,000'``,
    ``'1,500,000'``), else ``""``. No quantity of costmodel groups digits with commas: in a
    list a comma separates values, so the number is said back in digits and with a suffix
    (``unit`` after it: ``B`` for a size).

    >>> comma_thousands("1,000"), comma_thousands("1,500", "B"), comma_thousands("8,192")
    ('write 1000 or 1k', 'write 1500B or 1.5kB', 'write 8192 or 8.192k')
    >>> comma_thousands("64,128,257"), comma_thousands("1000")
    ('write 64128257', '')
    """
    if not isinstance(text, str) or not _THOUSANDS_RE.fullmatch(text.strip()):
        return ""
    digits = text.strip().replace(",", "")
    value = int(digits)
    for scale, suffix in _SHORT_SUFFIXES:
        short = f"{value / scale:g}"
        if value >= scale and Decimal(short) * scale == value:  # exact, else the digits alone
            return f"write {digits}{unit} or {short}{suffix}{unit}"
    return f"write {digits}{unit}"


_GROUPED_RE = re.compile(
    r"(?P<lead>\s*[+-]?)(?P<groups>[0-9]{1,3}(?:,[0-9]{3})+)(?![0-9])(?P<rest>[^,]*)", re.S
)


def ungroup_thousands(text: str) -> str:
    """``text`` with the commas of one number's thousands groups taken out, for a box that
    takes one number (every number box of the app): ``'65,536'`` is ``'65536'``, and
    ``'1,500,000 B'``, ``'-1,000'``, ``'8,192.5ms'`` keep their sign, fraction and unit. A comma
    groups digits only where the text is one number whose first group has 1 to 3 digits and
    every later one exactly 3 (``'65,536'``, ``'1,048,576'``), with no other comma in it; any
    other text comes back as it was, for the box's parser to read or refuse in its own words
    (``'1,2'``, ``'1,0000'``, ``'65, 536'``).

    The decision: a box that takes one number reads a comma followed by exactly three digits
    as a thousands separator, since it has no list to separate (the app's boxes). Where a value
    may be a list (the CLI's ``--size`` and ``--ranks``, the sweep's axes, ``--vs`` items) a
    comma separates values and such text is refused, naming both readings, unless it reads
    as a list (:func:`costmodel.sweep.grid.parse_values`); the CLI's and the API's one-number
    options refuse it too, saying how to write the number (:func:`comma_thousands`): a script
    says what it means.

    >>> ungroup_thousands("65,536"), ungroup_thousands(" 1,500,000 B"), ungroup_thousands("-1,000")
    ('65536', ' 1500000 B', '-1000')
    >>> ungroup_thousands("1,2"), ungroup_thousands("1,0000"), ungroup_thousands("65, 536")
    ('1,2', '1,0000', '65, 536')
    """
    m = _GROUPED_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None or len(text) > MAX_TEXT_LENGTH:
        return text
    return m["lead"] + m["groups"].replace(",", "") + m["rest"]


def read_count(text: str, *, name: str = "count") -> int | float:
    """Read a count written as text in the one count grammar: ``number [k|K|M|G|B|T]``, where
    ``number`` is digits with an optional sign, fraction and exponent and the whole text must
    match (``1_000`` and ``2 k`` with a unit are refused). The value as an int when it is
    whole, else as a float, so that the caller's range refuses ``1.5`` or ``-1`` in its own
    words (a field's or an option's range); ValueError naming ``name`` for text in no such form.

    >>> read_count("2k"), read_count("1e1"), read_count("1.5")
    (2000, 10, 1.5)
    """
    return _read_suffixed(
        text, name, _COUNT_RE, _COUNT_SUFFIX, f"expected a whole number: {COUNT_FORMS}"
    )


def _read_suffixed(
    text: str, name: str, pattern: re.Pattern[str], suffixes: dict[str, int], expected: str
) -> int | float:
    """The value of ``text``, a number and a suffix that ``pattern`` reads, times the
    suffix's multiplier (``suffixes``), computed in decimal: an int when whole, else a float;
    ValueError naming ``name`` and ``expected`` for text in no such form. The one body of
    :func:`read_count` and :func:`read_tokens`."""
    s = text.strip() if isinstance(text, str) else text
    m = pattern.fullmatch(s) if isinstance(s, str) and len(s) <= MAX_TEXT_LENGTH else None
    if m is None:
        if not isinstance(text, str):
            raise TypeError(f"{name}: expected a number or a string, got {type(text).__name__}")
        shown = text if len(text) <= MAX_TEXT_LENGTH else text[:40] + "..."
        if hint := comma_thousands(text):  # '1,000': no count groups digits with commas
            raise ValueError(f"{name}: cannot parse {shown!r}; a comma groups no digits: {hint}")
        raise ValueError(f"{name}: cannot parse {shown!r}; {expected}")
    try:
        value = _decimal(m["num"], name, text) * suffixes[m["suffix"]]
        if abs(value) <= Decimal("1e30") and value == value.to_integral_value():
            return int(value)
        return float(value)
    except ArithmeticError:  # an exponent past decimal's range ('1e999999999k'): far too large
        return -math.inf if m["num"].startswith("-") else math.inf


def parse_int(text: str | int | float, *, name: str = "count", maximum: int | None = None) -> int:
    """Parse a whole count exactly (``"8"``, ``"2k"``, ``"1e6"``, ``2**60``) as a Python int.

    Text is read by :func:`read_count` (the one count grammar), computed in decimal so values
    above 2**53 keep every digit. Fractions, negatives and values above ``maximum`` are refused.

    >>> parse_int("2k"), parse_int(2**60 + 1), parse_int("1e6")
    (2000, 1152921504606846977, 1000000)
    """
    if isinstance(text, bool):
        raise TypeError(f"{name}: expected a whole number, got a bool ({text!r})")
    if isinstance(text, int):
        value = Decimal(text)
    elif (number := _number(text, name)) is not None:
        if not math.isfinite(number):
            raise ValueError(f"{name}: must be a finite whole number, got {text!r}")
        value = Decimal(number)
    else:
        read = read_count(text, name=name)  # type: ignore[arg-type]
        if isinstance(read, float) and not math.isfinite(read):
            raise ValueError(f"{name}: {text!r} is too large")
        value = Decimal(read)
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: {text!r} is above the largest value accepted, {maximum}")
    if value < 0 or value != value.to_integral_value():
        raise ValueError(f"{name}: must be a whole number >= 0, got {text!r}")
    if maximum is None and value > Decimal("1e30"):
        raise ValueError(f"{name}: {text!r} is too large")
    return int(value)


_TOKENS_RE = re.compile(rf"(?P<num>{_NUMBER})\s*(?P<suffix>[KMGT]i|[kKMBGT]?)")
_TOKEN_SUFFIX = {**_COUNT_SUFFIX, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
TOKEN_FORMS = "'4096', '8k' (8,000), '8Ki' (8 x 2^10 = 8,192), '4Mi', '2T'"
"""The forms a token count takes, said in the message that refuses one."""


def read_tokens(text: str, *, name: str = "tokens") -> int | float:
    """Read a token count written as text in the grammar of :func:`parse_tokens` (a decimal
    suffix ``k K M B G T`` or a binary one ``Ki Mi Gi Ti``) without its range: the value as
    an int when it is whole, else as a float, so that the caller's range refuses ``0.3Ki`` or
    ``-1Ki`` in its own words, as :func:`read_count` does for a count; ValueError naming
    ``name`` and the forms for text in no such form (``8KI``, ``1_0``).

    >>> read_tokens("8Ki"), read_tokens("4Mi"), read_tokens("8k"), read_tokens("0.3Ki")
    (8192, 4194304, 8000, 307.2)
    """
    return _read_suffixed(
        text,
        name,
        _TOKENS_RE,
        _TOKEN_SUFFIX,
        f"expected a whole token count, e.g. {TOKEN_FORMS}",
    )


def parse_tokens(text: str | int | float, *, name: str = "tokens") -> int:
    """Parse a whole token count (a sequence length, tokens per GPU or per step, tokens to
    train): a plain number, a decimal suffix ``k K M B G T`` (``8k`` = 8,000, ``2T`` = 2e12)
    or a binary one ``Ki Mi Gi Ti`` (``8Ki`` = 8,192, ``4Mi`` = 4 x 2^20, as sequence lengths and
    batch sizes in tokens are often powers of two). Computed in decimal; fractions, negatives
    and text in no such form are refused, the message listing the forms.

    >>> parse_tokens("8Ki"), parse_tokens("8k"), parse_tokens(4096), parse_tokens("4Mi")
    (8192, 8000, 4096, 4194304)
    """
    if isinstance(text, bool):
        raise TypeError(f"{name}: expected a whole token count, got a bool ({text!r})")
    if isinstance(text, int):
        value = Decimal(text)
    elif (number := _number(text, name)) is not None:
        value = Decimal(number) if math.isfinite(number) else Decimal(-1)
    else:  # text in the token grammar (read_tokens: the forms named for any other text)
        read = read_tokens(text, name=name)  # type: ignore[arg-type]
        value = Decimal(read) if math.isfinite(read) else Decimal(-1)
    if value < 0 or value != value.to_integral_value() or value > Decimal("1e30"):
        raise ValueError(f"{name}: must be a whole token count >= 0, got {text!r}")
    return int(value)


def text_hint(name: str, value: object) -> str:
    """For an API argument given as text: ``"; the API takes numbers in SI units: NAME=X
    (cm.parse_...('TEXT'))"`` when a parser of the unit in ``name`` reads it, else ``""``.

    The unit is the argument name's suffix: ``_bytes_per_s`` a rate, ``_bytes`` a size, ``_s``
    a duration, anything else a count.

    >>> text_hint("message_bytes", "14GB")
    "; the API takes numbers in SI units: message_bytes=1.4e+10 (cm.parse_bytes('14GB'))"
    >>> text_hint("message_bytes", "lots")
    ''
    """
    if not isinstance(value, str):
        return ""
    if name.endswith("_bytes_per_s"):
        parse: Callable[..., float] = parse_rate
    elif name.endswith("_bytes"):
        parse = parse_bytes
    elif name.endswith("_s"):
        parse = parse_duration
    else:
        parse = parse_count
    try:
        number = parse(value)
    except ValueError:
        return ""
    return (
        f"; the API takes numbers in SI units: {name}={number:g} (cm.{parse.__name__}({value!r}))"
    )


def parse_bool(text: object, *, name: str = "flag") -> bool:
    """A real bool, or (for the CLI and URLs) the text ``true``/``false`` in any case.

    Anything else, ``'False'`` and ``'no'`` included in the API, is refused: a truthy string
    must never switch a feature on silently.

    >>> parse_bool(True), parse_bool("false"), parse_bool("TRUE")
    (True, False, True)
    """
    import numpy as np

    if isinstance(text, bool | np.bool_):
        return bool(text)
    if isinstance(text, str) and len(text) <= MAX_TEXT_LENGTH:
        s = text.strip().lower()
        if s == "true":
            return True
        if s == "false":
            return False
    raise ValueError(f"{name}: expected true or false, got {text!r}")


def parse_flops(text: str | int | float, *, name: str = "flops") -> float:
    """Parse a compute rate such as ``"989TFLOP/s"``, ``"1.98 PFLOPS"`` into FLOP/s.

    Grammar (the whole string must match): ``number [spaces] [prefix] [spaces] FLOP[S|/s]``,
    case-insensitive; a plain number is FLOP/s. Zero, negative and non-finite rates are refused.

    >>> parse_flops("989TFLOP/s"), parse_flops("2 PFLOPS"), parse_flops(1e12)
    (989000000000000.0, 2000000000000000.0, 1000000000000.0)
    """
    number = _number(text, name)
    if number is not None:
        value = Decimal(number) if math.isfinite(number) else Decimal(-1)
    else:
        m = _match(_FLOPS_RE, text, name, "'989TFLOP/s', '2PFLOPS'")
        value = _decimal(m["num"], name, text) * _FLOPS_PREFIX[m["prefix"].lower()]
    return _finite(value, name, text, "rate in FLOP/s", positive=True)


PLAIN_DIGITS_BELOW = 1e15
"""Past this a number is written in exponent notation (``1.74e+296``), below it in plain digits
with thousands separators: a float holds 15 to 17 significant digits, so a number written out
past them shows rounding noise (a step of 1.74e296 s was printed as 297 digits, ending
"...010,622,845,192,...")."""


def _scaled(value: float, prefixes: tuple[tuple[float, str], ...], digits: int) -> str:
    """``value`` in the largest of ``prefixes`` (scale, prefix) it reaches once rounded to
    ``digits`` significant digits, as "number prefix": 0.9996 s is "1 " (not "1e+03 m"), and
    a number past the largest prefix is written out with thousands separators ("399,000 " s,
    not "3.99e+05 "), up to :data:`PLAIN_DIGITS_BELOW`; past it in exponent notation.

    >>> _scaled(0.9996, _TIME_PREFIXES, 3), _scaled(3.99e5, _TIME_PREFIXES, 3)
    ('1 ', '399,000 ')
    >>> _scaled(1.74e296, _TIME_PREFIXES, 3)
    '1.74e+296 '
    """
    mag = abs(float(f"{value:.{digits}g}"))
    scale, prefix = next(((s, p) for s, p in prefixes if mag >= s), prefixes[-1])
    shown = float(f"{value / scale:.{digits}g}")
    plain = 1000 <= abs(shown) < PLAIN_DIGITS_BELOW
    text = f"{shown:,.0f}" if plain else f"{value / scale:.{digits}g}"
    return f"{text} {prefix}"


def _si(value: float, unit: str, prefixes: tuple[tuple[float, str], ...], digits: int) -> str:
    if value is None or not math.isfinite(value):
        return f"{value} {unit}"
    return f"{_scaled(value, prefixes, digits)}{unit}"


_BYTE_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_BINARY_BYTE_PREFIXES = (
    (2.0**60, "Ei"),
    (2.0**50, "Pi"),
    (2.0**40, "Ti"),
    (2.0**30, "Gi"),
    (2.0**20, "Mi"),
    (2.0**10, "Ki"),
    (1.0, ""),
)
#: a binary prefix as :func:`parse_bytes` reads it (``Ki Mi Gi Ti Pi Ei``, before the unit)
_BINARY_PREFIX_RE = re.compile(r"\d\s*[KMGTPE]i")
_TIME_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
_COUNT_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def _shown(value: object) -> float:
    """One number to format; anything else a ValueError naming ``value`` (``float(None)`` raised
    Python's TypeError naming nothing); a numpy duration or complex number too (its float is
    its unit's count, or its real part)."""
    from ._checks import refuse_unreal

    refuse_unreal("value", value)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        got = repr(value)
        if "\n" in got and hasattr(value, "shape"):  # an array of 2-D or more: by its shape
            got = f"an array of shape {tuple(value.shape)}"
        raise ValueError(f"value: expected one number to format, got {got}") from None


def whole_number(x: float) -> int | float:
    """``x`` as an int where it is a whole number (a count carried as a float), else as is.

    The one rule for a count computed in floats and echoed to people or JSON
    (``tokens_per_step`` of :meth:`costmodel.strategy.step.StrategyStep.as_dict` and of
    :meth:`costmodel.training.TrainingCost.as_dict`): ``8192.0`` is written ``8192``; a
    fraction, a NaN or an infinity stays the float it is (``int(nan)`` would raise).

    >>> whole_number(8192.0), whole_number(-3.0), whole_number(2.5)
    (8192, -3, 2.5)
    >>> whole_number(float("nan")), whole_number(float("inf")), whole_number(float("-inf"))
    (nan, inf, -inf)
    """
    return int(x) if math.isfinite(x) and float(x).is_integer() else x


def whole_bytes(values: Any) -> Any:
    """Sizes [B] as whole bytes where every one is whole: a Python int for a scalar, an int64
    array for an array; otherwise (``1.5`` B given to the API) unchanged. The one type of a
    size the user gave on every surface that echoes it (``size_bytes`` of the sweep, of
    ``collective``/``predict --json``, :meth:`costmodel.predict.Prediction.to_frame`'s
    ``message_bytes``): sizes are parsed as whole bytes (:func:`parse_bytes`) and computed
    in floats, which printed ``8.0`` on one surface and ``8`` on another.

    >>> import numpy as np
    >>> whole_bytes(8.0), whole_bytes(np.array([8.0, 1e9])).dtype.name, whole_bytes(1.5)
    (8, 'int64', 1.5)
    """
    import numpy as np

    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return int(arr) if arr.ndim == 0 else arr.astype(np.int64)
    if arr.dtype.kind != "f" or not arr.size:
        return values
    if not (np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)) and np.all(arr < 2**63)):
        return values
    return int(arr) if arr.ndim == 0 else arr.astype(np.int64)


def choice_name(value: Any) -> Any:
    """An enumerated choice as the models name it: text stripped and in lower case, each item
    of a list or tuple alike; anything else (None, a number) unchanged.

    One rule for every surface (CLI options, Scenario fields, ``strategy_step``,
    ``predict_collective``, sweep axes and grid files): a name from a fixed list (precision,
    recompute, recipe, strategy, algorithm, ...) is read in any case, as NCCL reads
    ``NCCL_ALGO=Ring``, and is echoed in its canonical lower-case form.

    >>> choice_name("FP8"), choice_name(" Ring "), choice_name(["FSDP", None]), choice_name(3)
    ('fp8', 'ring', ['fsdp', None], 3)
    """
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, list | tuple):
        return type(value)(choice_name(v) for v in value)
    return value


def format_bytes(value: float, digits: int = 3) -> str:
    """Format a byte count with a decimal SI prefix, to ``digits`` significant digits.

    >>> format_bytes(1.75e9)
    '1.75 GB'
    >>> format_bytes(2 * 63 / 64 * 14e9)  # the lesson's 7B all-reduce: bytes sent per GPU
    '27.6 GB'
    """
    return _si(_shown(value), "B", _BYTE_PREFIXES, digits)


def format_bytes_pair(value: float, other: float, digits: int = 3) -> tuple[str, str]:
    """``value`` and ``other`` as :func:`format_bytes` writes them, with more digits where the
    two would read the same though they differ: a memory just under the card read "151 GB of
    151 GB (fits)", one just over "151 GB per GPU > 151 GB".

    >>> format_bytes_pair(150.516e9, 150.755e9), format_bytes_pair(68.3e9, 85.5e9)
    (('150.5 GB', '150.8 GB'), ('68.3 GB', '85.5 GB'))
    """
    a, b = format_bytes(value, digits), format_bytes(other, digits)
    for more in range(digits + 1, digits + 6):
        if a != b or value == other:
            break
        a, b = format_bytes(value, more), format_bytes(other, more)
    return a, b


def format_bytes_binary(value: float, digits: int = 3) -> str:
    """Format a byte count with a binary prefix (KiB = 2**10 B, MiB, GiB, ...), for a size the
    user wrote in one: ``format_bytes_binary(2**20) == '1 MiB'`` (``format_bytes`` would say
    ``'1.05 MB'``).

    >>> format_bytes_binary(2**20), format_bytes_binary(1.5 * 2**30), format_bytes_binary(512)
    ('1 MiB', '1.5 GiB', '512 B')
    >>> format_bytes_binary(2**30), format_bytes_binary(2**40), format_bytes_binary(1023 * 2**10)
    ('1 GiB', '1 TiB', '1,023 KiB')
    """
    value = _shown(value)
    if not math.isfinite(value):
        return f"{value} B"
    # the prefix by the exact value (the decimal formatter's rounding first would put 2**30,
    # 1.07e9 rounded, below 2**30 and print "1,020 MiB"); 1000-1023 of a prefix in full
    scale, prefix = next(
        ((s, p) for s, p in _BINARY_BYTE_PREFIXES if abs(value) >= s), _BINARY_BYTE_PREFIXES[-1]
    )
    shown = value / scale
    text = f"{shown:,.0f}" if abs(shown) >= 1000 else f"{shown:.{digits}g}"
    return f"{text} {prefix}B"


def format_bytes_as_given(value: float, text: object, digits: int = 3) -> str:
    """A size parsed from ``text`` (:func:`parse_bytes`) echoed in the prefixes the user wrote:
    binary (:func:`format_bytes_binary`) when ``text`` has a binary prefix (``1MiB``), else
    decimal (:func:`format_bytes`). An option's bound is then said as it was given, never
    ``--check-from 1MiB`` as ``1.05 MB``.

    >>> format_bytes_as_given(2**20, "1MiB"), format_bytes_as_given(10**6, "1MB")
    ('1 MiB', '1 MB')
    >>> format_bytes_as_given(65536, 65536), format_bytes_as_given(65536, "64 KiB")
    ('65.5 kB', '64 KiB')
    """
    return (format_bytes_binary if typed_binary(text) else format_bytes)(value, digits)


def typed_binary(*texts: object) -> bool:
    """Whether every size in ``texts`` (as typed: one size, a list ``a,b``, a range ``a:b`` or
    ``a..b``) names a binary prefix: a table of those sizes is then said in them (``--size
    14GiB`` is ``14 GiB``, not ``15 GB``); one decimal or bare size among them keeps decimal.

    >>> typed_binary("14GiB"), typed_binary("8KiB:1GiB", "2MiB"), typed_binary("1GiB", "1GB")
    (True, True, False)
    >>> typed_binary("1GiB,1GB"), typed_binary("8:1GiB"), typed_binary(), typed_binary(65536)
    (False, False, False, False)
    """
    if not texts or not all(isinstance(t, str) for t in texts):
        return False
    pieces = [p for t in texts for p in _SIZE_SEPARATORS_RE.split(str(t)) if p.strip()]
    return bool(pieces) and all(_BINARY_PREFIX_RE.search(p) is not None for p in pieces)


#: what separates the sizes of a list or a range as typed (``a,b``, ``a:b``, ``a..b``)
_SIZE_SEPARATORS_RE = re.compile(r"[,:;]|\.\.")


def format_rate(value: float, digits: int = 3) -> str:
    """Format bytes per second with a decimal SI prefix, to ``digits`` significant digits.

    >>> format_rate(400e9 / 8)  # one 400 Gb/s NDR port
    '50 GB/s'
    """
    return _si(_shown(value), "B/s", _BYTE_PREFIXES, digits)


def format_duration(value: float, digits: int = 3) -> str:
    """Format seconds as s, ms, µs or ns, to ``digits`` significant digits.

    >>> format_duration(0.0175)
    '17.5 ms'
    >>> format_duration(2 * 63 / 64 * 14e9 / 50e9)  # the lesson's 7B all-reduce at 50 GB/s
    '551 ms'
    """
    value = _shown(value)
    if value == 0:
        return "0 s"
    return _si(value, "s", _TIME_PREFIXES, digits)


def format_flops(value: float, digits: int = 3) -> str:
    """Format FLOP/s with a decimal SI prefix: ``'989 TFLOP/s'``."""
    return _si(_shown(value), "FLOP/s", _BYTE_PREFIXES, digits)


def format_days(value: float) -> str:
    """A wall-clock time in days: one decimal from 10 days up (``48.4``), three significant
    digits below, in plain decimals, so a run of minutes is not "0.0" days.

    >>> format_days(48.43), format_days(1.2345), format_days(0.001944), format_days(0)
    ('48.4', '1.23', '0.00194', '0')
    >>> format_days(5e-7), format_days(12345.6), format_days(2.01e288)
    ('0.0000005', '12,345.6', '2.01e+288')
    """
    v = _shown(value)
    if (edge := _edge_text(v)) is not None:
        return edge
    if abs(v) >= 10:
        return f"{v:,.1f}"
    return _three_digits(v)


def _three_digits(v: float) -> str:
    """A finite non-zero number below 10 to three significant digits in plain decimals (no
    ``e-05``): ``0.00194``, ``1.23``."""
    decimals = max(1, 2 - math.floor(math.log10(abs(v))))
    return f"{float(f'{v:.3g}'):.{decimals}f}".rstrip("0").rstrip(".")


def format_usd(value: float) -> str:
    """A dollar total [USD] (a run's cost, its band), the one rule of every surface (the CLI's
    ``train``/``scenario``, the app's Cost metric and captions): whole dollars with thousands
    separators from 100 up, dollars and cents below (``48.43``, ``3.90``, not ``48.4`` and
    ``3.9``), three significant digits below one cent, so a short run is not "$0.00"; past
    :data:`PLAIN_DIGITS_BELOW` in exponent notation. Prices per hour:
    :func:`format_usd_rate`.

    >>> format_usd(39957592.4), format_usd(48.43), format_usd(3.9), format_usd(0.00778)
    ('39,957,592', '48.43', '3.90', '0.00778')
    """
    v = _shown(value)
    if (edge := _edge_text(v)) is not None:
        return edge
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 0.01:
        return f"{v:.2f}"
    return _three_digits(v)


def _edge_text(v: float) -> str | None:
    """The one text of a money or hours figure at its edges (0, inf, NaN: ``:g``; from
    :data:`PLAIN_DIGITS_BELOW` up: three significant digits in exponent notation), else None:
    the rule :func:`format_days`, :func:`format_usd`, :func:`format_usd_rate` and
    :func:`format_gpu_hours` share."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    if abs(v) >= PLAIN_DIGITS_BELOW:
        return f"{v:.3g}"
    return None


RATE_DECIMALS = 4
"""Most decimals a price per hour is shown with: published per-GPU prices are an instance's
price over its GPUs (AWS p6-b200: $113.9328/h over 8 is $14.2416), shown as published so GPU-hours
times the price shown is the cost shown (three figures, "$14.2", missed a B200 run's cost by
$11,000)."""


def format_usd_rate(value: float) -> str:
    """A price per hour [USD/h] (per GPU-hour, per instance-hour), the one rule of every
    surface (``train``'s price lines, ``archs``' price list, the app's price captions): in
    cents, always two decimals (``6.88``, ``3.90``, ``98.32``, ``2.00``: never ``3.9``
    beside ``98.32``), more where the published price has them, up to :data:`RATE_DECIMALS`
    (``14.2416``); thousands separators; below one cent three significant digits, so a price
    is never "0.00".

    >>> format_usd_rate(3.9), format_usd_rate(98.32), format_usd_rate(14.2416), format_usd_rate(2)
    ('3.90', '98.32', '14.2416', '2.00')
    >>> format_usd_rate(4.858047899375), format_usd_rate(1234.5), format_usd_rate(0.001234)
    ('4.858', '1,234.50', '0.00123')
    """
    v = _shown(value)
    if (edge := _edge_text(v)) is not None:
        return edge
    if abs(v) < 0.01:
        return _three_digits(v)
    text = f"{v:,.{RATE_DECIMALS}f}"
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac[:2]}{frac[2:].rstrip('0')}"


def format_gpu_hours(value: float) -> str:
    """GPU-hours [GPU h]: whole hours with thousands separators from 100 up (``36,864``),
    three significant digits below, in plain decimals, so a short run is not "0" GPU-hours.

    >>> format_gpu_hours(36864.4), format_gpu_hours(123.4), format_gpu_hours(48.43)
    ('36,864', '123', '48.4')
    >>> format_gpu_hours(0.00123456), format_gpu_hours(0), format_gpu_hours(3.3e20)
    ('0.00123', '0', '3.3e+20')
    """
    v = _shown(value)
    if (edge := _edge_text(v)) is not None:
        return edge
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return _three_digits(v)


#: Wall-clock units by the smallest time each reads best from [s]: (from, seconds per unit, name)
_ELAPSED_UNITS = ((2 * 86400.0, 86400.0, "days"), (3600.0, 3600.0, "h"), (60.0, 60.0, "min"),
                  (1.0, 1.0, "s"), (0.0, 1e-3, "ms"))  # fmt: skip


def elapsed_unit(value_s: float) -> tuple[float, str]:
    """The unit a wall-clock time [s] reads best in: (seconds per unit, name); ms below a
    second, s below a minute, min below an hour, h below two days, days from two days up.

    >>> elapsed_unit(0.5), elapsed_unit(750), elapsed_unit(4.2e6)
    ((0.001, 'ms'), (60.0, 'min'), (86400.0, 'days'))
    """
    v = abs(_shown(value_s))
    return next(((per, name) for lo, per, name in _ELAPSED_UNITS if v >= lo), (1.0, "s"))


def format_elapsed_in(value_s: float, unit: tuple[float, str]) -> str:
    """The number of a wall-clock time [s] in ``unit`` (:func:`elapsed_unit`), without the
    unit's name: three significant digits, days as :func:`format_days` writes them.

    >>> format_elapsed_in(750, (60.0, "min")), format_elapsed_in(4.2e6, (86400.0, "days"))
    ('12.5', '48.6')
    """
    x = _shown(value_s) / unit[0]
    if unit[1] == "days" or not math.isfinite(x):
        return format_days(x)
    return f"{float(f'{x:.3g}'):g}"


def format_elapsed(value_s: float) -> str:
    """A wall-clock time [s] in the unit its size reads best in (:func:`elapsed_unit`), so a
    run of seconds is not "0.00000597 days".

    >>> format_elapsed(0.516), format_elapsed(42), format_elapsed(750), format_elapsed(7200)
    ('516 ms', '42 s', '12.5 min', '2 h')
    >>> format_elapsed(4.2e6), format_elapsed(0)
    ('48.6 days', '0 s')
    """
    if _shown(value_s) == 0:
        return "0 s"
    unit = elapsed_unit(value_s)
    return f"{format_elapsed_in(value_s, unit)} {unit[1]}"


def format_change(fraction: float) -> str:
    """A relative change as a signed whole percent, with no "-0%" or "+0%" for a change that
    rounds to nothing.

    >>> format_change(-0.081), format_change(-0.001), format_change(0.004), format_change(0.2)
    ('-8%', '0%', '0%', '+20%')
    """
    text = f"{float(fraction):+.0%}"
    return "0%" if text in ("-0%", "+0%") else text


def format_mfu(fraction: float, sep: str = "") -> str:
    """An MFU (a fraction of the peak) as a percentage: one decimal from 1% (``41.4%``), two
    significant digits below it, where one decimal said "MFU 0.0%" of a step on a million
    nodes (``0.0031%``; ``3.1e-07%`` below 0.0001%). ``sep`` goes between the number and
    ``%`` (the app's metrics write ``41.4 %``). The CLI's ``train`` and the app's MFU metric
    both write it so.

    >>> format_mfu(0.414), format_mfu(0.0123), format_mfu(0.005), format_mfu(3.12e-5)
    ('41.4%', '1.2%', '0.50%', '0.0031%')
    >>> format_mfu(3.1e-9), format_mfu(0.414, sep=" ")
    ('3.1e-07%', '41.4 %')
    """
    pct = 100 * float(fraction)
    if not math.isfinite(pct) or pct >= 1 or pct <= 0:
        return f"{pct:.1f}{sep}%"
    if pct < 1e-4:
        return f"{pct:.2g}{sep}%"
    decimals = 1 - math.floor(math.log10(pct))  # two significant digits, no exponent
    return f"{pct:.{decimals}f}{sep}%"


def format_count(value: float, digits: int = 3) -> str:
    """Format a count (parameters, tokens) with k/M/B/T suffixes: ``'7 B'`` for 7e9."""
    return _scaled(value, _COUNT_SUFFIXES, digits).rstrip()


#: Below this many, a whole count of tokens is written exactly [tokens].
EXACT_TOKENS_BELOW = 1e6


def format_token_count(tokens: float) -> str:
    """A count of tokens (a micro-batch, a step): exact with thousands separators below
    :data:`EXACT_TOKENS_BELOW` (``'4,096'``: "4.1 k" lost the power of two a sequence length
    is, and a reader typing it back got 4,100), :func:`format_count` from there or for a
    fraction (``'4.19 M'``).

    >>> format_token_count(4096), format_token_count(131072), format_token_count(4 * 2**20)
    ('4,096', '131,072', '4.19 M')
    """
    t = float(tokens)
    if abs(t) < EXACT_TOKENS_BELOW and t == int(t):
        return f"{int(t):,}"
    return format_count(t)


def format_tokens_by_micro_batch(sequence_length: float, micro_batch: float) -> str:
    """The activation recipe's tokens as every note writes them: ``"4,096 tokens x micro-batch
    2"`` (thousands separators, "1 token" in the singular; one phrase for the memory note, the
    "nothing fits" note and the app's captions).

    >>> format_tokens_by_micro_batch(4096, 2), format_tokens_by_micro_batch(1, 1)
    ('4,096 tokens x micro-batch 2', '1 token x micro-batch 1')
    >>> format_tokens_by_micro_batch(100_000_000, 1)
    '100,000,000 tokens x micro-batch 1'
    """
    return f"{format_counted(int(sequence_length), 'token')} x micro-batch {int(micro_batch):,}"


def format_counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number, for every text the CLI and the app write:
    ``"1 node"``, ``"2 nodes"``, ``"1,024 GPUs"`` (never ``"node(s)"``). ``plural`` is the
    plural form when it is not ``noun + "s"``.

    >>> format_counted(1, "node"), format_counted(2, "node"), format_counted(1024, "GPU")
    ('1 node', '2 nodes', '1,024 GPUs')
    >>> format_counted(3, "entry", "entries")
    '3 entries'
    """
    return f"{count:,} {noun_for(count, noun, plural)}"


def noun_for(count: int, noun: str, plural: str | None = None) -> str:
    """The noun alone in the number ``count`` takes (:func:`format_counted`'s word): one is
    singular, every other count (0 too) plural.

    >>> noun_for(1, "node"), noun_for(0, "node"), noun_for(2, "finding")
    ('node', 'nodes', 'findings')
    """
    return noun if count == 1 else (plural if plural is not None else noun + "s")


# --- a number typed without its unit -------------------------------------------------------------
_BARE_NUMBER = re.compile(r"\s*\+?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")

BARE_SECONDS_FROM = 10.0
"""A duration typed without a unit is seconds; from this many seconds (of compute per
micro-batch, or of a step) a bare number is more often milliseconds meant (``--compute-time
400``), so it is answered with a warning."""

BARE_LATENCY_FROM = 1e-3
"""A latency per message typed without a unit is seconds; from 1 ms on (a thousand times an
NVLink or InfiniBand hop's few microseconds) a bare number is more often microseconds meant
(``--latency 5``), so it is answered with a warning."""

BARE_BYTES_BELOW = 2**20
"""A size typed without a unit is bytes; under 1 MiB a bare number is seldom what was meant for a
bucket (PyTorch's ``bucket_cap_mb`` is in MiB) or a card (quoted in GB)."""


class BareNumberWarning(UserWarning):
    """A number typed without its unit, answered as the unit grammar reads it (bytes, seconds),
    though another unit was likely meant (``compute_time=400`` is 400 s, not 400 ms)."""


BARE_NUMBER_KEYS: dict[str, tuple[str, str]] = {
    # a short name whose unit the name does not say (compute_time_s=400 and
    # bucket_cap_bytes=50 say theirs) -> (what a bare number is: "bytes" or "seconds" or
    # "latency", the unit most likely meant)
    "bucket": ("bytes", "MiB"),
    "bucket_cap": ("bytes", "MiB"),
    "gpu_memory": ("bytes", "GB"),
    "cuda_context": ("bytes", "GiB"),
    "compute_time": ("seconds", "ms"),
    "measured_compute": ("seconds", "ms"),
    "latency": ("latency", "us"),
    "alpha": ("latency", "us"),
}
"""A key of ``Scenario.with_changes("KEY=VALUE")``, the CLI's ``--vs KEY=VALUE`` or ``--set
KEY=VALUES`` -> what a bare number of it is and the unit likely meant."""


def bare_number_message(typed: str, text: Any, kind: str, meant: str) -> str | None:
    """The warning for ``text`` typed as a bare number where a unit was likely meant, or None.

    ``typed`` is what came before the value as the user typed it (``--bucket``, ``--vs
    bucket=``, ``bucket=``); ``kind`` is ``"bytes"`` (warned under :data:`BARE_BYTES_BELOW`),
    ``"seconds"`` (warned from :data:`BARE_SECONDS_FROM`) or ``"latency"`` (seconds, warned
    from :data:`BARE_LATENCY_FROM`); ``meant`` the unit most likely meant. The one source of
    this text for the API (:class:`BareNumberWarning`) and the CLI (``costmodel: warning:``).

    >>> bare_number_message("--compute-time", "400", "seconds", "ms")
    '--compute-time 400 is 400 s (a number without a unit is seconds); for 400 ms write 400ms'
    >>> bare_number_message("bucket=", "50", "bytes", "MiB")
    'bucket=50 is 50 bytes (a number without a unit is bytes); for 50 MiB write 50MiB'
    >>> bare_number_message("--latency", "5us", "latency", "us") is None
    True
    >>> bare_number_message("--latency", "0.005", "latency", "us")
    '--latency 0.005 is 0.005 s (a number without a unit is seconds); for 5 µs (0.005 ms) write 5us'
    """
    if _BARE_NUMBER.fullmatch(str(text)) is None:
        return None
    x = float(text)
    if kind == "bytes":
        if not 0 < x < BARE_BYTES_BELOW:  # 0 is none in every unit (cuda_context=0)
            return None
        unit = "bytes"
    elif kind in ("seconds", "latency"):
        if x < (BARE_SECONDS_FROM if kind == "seconds" else BARE_LATENCY_FROM):
            return None
        unit = "s"
    else:
        raise ValueError(f"kind: unknown {kind!r}; allowed: bytes, seconds, latency")
    value = str(text).strip()
    sep = "" if not typed or typed.endswith("=") else " "
    shown = "µs" if meant == "us" else meant
    head = f"{typed}{sep}{value} is {value} {unit} (a number without a unit is "
    if kind == "latency" and meant == "us":
        # a latency of 1 ms or more is one typed in ms (0.005 for 5 us): the microseconds it
        # then means, not the same digits in us ("for 0.005 us write 0.005us" was 5 ns)
        us = f"{x * 1e3:.6g}"
        return f"{head}seconds); for {us} µs ({value} ms) write {us}us"
    kind = "seconds" if kind == "latency" else kind
    return f"{head}{kind}); for {value} {shown} write {value}{meant}"


def bare_key_messages(typed: str, key: str, values: Any) -> list[str]:
    """The bare-number warnings of ``KEY=VALUES`` (``bucket=50``, ``bucket_cap=25,50``,
    ``compute_time=100..400 x2``): each value of a list, and each end of a range, as
    :func:`bare_number_message` words it, for a key of :data:`BARE_NUMBER_KEYS` (others: none).
    ``typed`` is the option before it (``--vs``, ``--set``), or ``""`` in the API.

    >>> [m[:31] for m in bare_key_messages("--set", "compute_time", "100..400 x2")]
    ['--set compute_time=100 is 100 s', '--set compute_time=400 is 400 s']
    >>> bare_key_messages("", "nodes", "16")
    []
    """
    norm = key.strip().lower().replace("-", "_")
    if norm not in BARE_NUMBER_KEYS:
        return []
    kind, meant = BARE_NUMBER_KEYS[norm]
    prefix = f"{typed} {key.strip()}=" if typed else f"{key.strip()}="
    out = []
    for item in str(values).split(","):
        ends = re.split(r"\.\.|:", item) if (".." in item or ":" in item) else [item]
        for i, end in enumerate(ends):
            if i:  # a range's stop carries its step: '400 x2'
                end = re.sub(r"\s*[x*+]\s*[0-9.eE]+\s*$", "", end)
            message = bare_number_message(prefix, end.strip(), kind, meant)
            if message is not None:
                out.append(message)
    return out


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_bare_numbers(key: str, values: Any) -> None:
    """Warn :class:`BareNumberWarning` with each of :func:`bare_key_messages` ``("", key,
    values)`` (the API's form of the CLI's warnings: ``Scenario.with_changes``, a sweep grid's
    text values), attributed to the first caller outside costmodel (the user's line, not ours)."""
    messages = bare_key_messages("", key, values)
    if not messages:
        return
    level, frame = 1, sys._getframe(0)
    while frame.f_code.co_filename.startswith(_PACKAGE_DIR) and frame.f_back is not None:
        frame, level = frame.f_back, level + 1
    for message in messages:
        warnings.warn(message, BareNumberWarning, stacklevel=level)
