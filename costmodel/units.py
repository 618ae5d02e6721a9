r"""SI units: constants, parsing of human strings, and formatting for people.

The one place in costmodel that converts units. Everything else works in bytes, seconds,
bytes per second and FLOP/s.

Conventions (DESIGN.md section 2): decimal SI prefixes for bytes and rates (GB = 1e9 B), as
nccl-tests and datasheets use; binary prefixes only when written (GiB = 2**30 B). A lower-case
``b`` is a bit (``400Gb/s`` = 50e9 B/s), an upper-case ``B`` a byte.

Byte strings are parsed by pydantic's :class:`pydantic.ByteSize`, which accepts both decimal and
binary prefixes; rates and durations by small regular grammars here.

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
import re

from pydantic import ByteSize, TypeAdapter, ValidationError

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

_BYTESIZE = TypeAdapter(ByteSize)

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}
_RATE_RE = re.compile(
    rf"^\s*(?P<num>{_NUMBER})\s*(?P<prefix>Ki|Mi|Gi|Ti|[kKMGTP]?)(?P<unit>B|b|bit|bits|byte|bytes)"
    r"\s*(?:/\s*s|ps|/sec)\s*$"
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
_DURATION_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>s|sec|ms|us|µs|μs|ns|min|h)\s*$")
_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
_COUNT_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<suffix>[kKMBGT]?)\s*$")


def _bad(what: str, text: object, examples: str) -> ValueError:
    return ValueError(
        f"{what}: cannot parse {text!r}; expected a number with a unit, e.g. {examples}"
    )


def parse_bytes(text: str | int | float, *, name: str = "size") -> int:
    """Parse a byte count such as ``"25MB"``, ``"1.5GiB"``, ``"8B"`` or a plain number [B].

    Decimal prefixes are powers of 1000 and binary prefixes (``KiB``, ``MiB``, ...) powers of
    1024, through :class:`pydantic.ByteSize`. Negative or non-finite values are refused.

    >>> parse_bytes("8B"), parse_bytes(1024), parse_bytes("4 KiB")
    (8, 1024, 4096)
    """
    if isinstance(text, bool):
        raise _bad(name, text, "'25MB', '1.5GiB', '8B'")
    if isinstance(text, int | float):
        if not math.isfinite(text) or text < 0:
            raise ValueError(f"{name}: must be a finite number of bytes >= 0, got {text!r}")
        return int(round(text))
    s = str(text).strip()
    if re.fullmatch(rf"{_NUMBER}\s*[kKMGTP]?b", s):  # '8Gb' is bits: refuse rather than guess
        raise ValueError(f"{name}: {text!r} is in bits (lower-case b); sizes are bytes, e.g. '1GB'")
    try:
        value = int(_BYTESIZE.validate_python(s))
    except ValidationError:
        raise _bad(name, text, "'25MB', '1.5GiB', '8B'") from None
    if value < 0:
        raise ValueError(f"{name}: must be >= 0 bytes, got {text!r}")
    return value


def parse_rate(text: str | int | float, *, name: str = "bandwidth") -> float:
    """Parse a data rate such as ``"400Gb/s"`` (bits) or ``"900GB/s"`` (bytes) into B/s.

    A plain number is taken as bytes per second. Zero and negative rates are refused.

    >>> parse_rate("100 Gbps"), parse_rate("50GB/s"), parse_rate(1e9), parse_rate("1e9")
    (12500000000.0, 50000000000.0, 1000000000.0, 1000000000.0)
    """
    if isinstance(text, str) and re.fullmatch(rf"\s*{_NUMBER}\s*", text):
        text = float(text)  # a plain number, written as text, is B/s as well
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _RATE_RE.match(str(text))
        if not m:
            raise _bad(name, text, "'400Gb/s', '900GB/s', '100Gbps'")
        value = float(m["num"]) * _PREFIX[m["prefix"]]
        if m["unit"] in ("b", "bit", "bits"):
            value /= 8.0
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be a finite rate > 0 B/s, got {text!r}")
    return value


def parse_duration(text: str | int | float, *, name: str = "duration") -> float:
    """Parse a duration such as ``"5us"``, ``"2ms"``, ``"0.4 s"`` into seconds.

    A plain number is taken as seconds. Negative or non-finite values are refused.

    >>> parse_duration("400ms"), parse_duration(0.5), parse_duration("2")
    (0.4, 0.5, 2.0)
    """
    if isinstance(text, str) and re.fullmatch(rf"\s*{_NUMBER}\s*", text):
        text = float(text)  # a plain number, written as text, is seconds as well
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DURATION_RE.match(str(text))
        if not m:
            raise _bad(name, text, "'5us', '2ms', '0.4s'")
        value = float(m["num"]) * _DURATION_UNITS[m["unit"]]
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite duration >= 0 s, got {text!r}")
    return value


def parse_count(text: str | int | float, *, name: str = "count") -> float:
    """Parse a plain count with an optional suffix: ``"7B"`` parameters = 7e9, ``"25M"`` = 2.5e7.

    ``B`` here means billion (as in model sizes), not bytes.

    >>> parse_count("7B"), parse_count("1.5k"), parse_count(30e9)
    (7000000000.0, 1500.0, 30000000000.0)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _COUNT_RE.match(str(text))
        if not m:
            raise _bad(name, text, "'7B', '25M', '1.5e9'")
        value = float(m["num"]) * _COUNT_SUFFIX[m["suffix"]]
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number >= 0, got {text!r}")
    return value


_FLOPS_RE = re.compile(
    rf"^\s*(?P<num>{_NUMBER})\s*(?P<prefix>[kKMGTPE]?)\s*FLOP(?:S|/s)?\s*$", re.I
)
_FLOPS_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}


def parse_flops(text: str | int | float, *, name: str = "flops") -> float:
    """Parse a compute rate such as ``"989TFLOP/s"``, ``"1.98 PFLOPS"`` into FLOP/s.

    A plain number is taken as FLOP/s. Zero, negative and non-finite rates are refused.

    >>> parse_flops("989TFLOP/s"), parse_flops("2 PFLOPS"), parse_flops(1e12)
    (989000000000000.0, 2000000000000000.0, 1000000000000.0)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _FLOPS_RE.match(str(text))
        if not m:
            raise _bad(name, text, "'989TFLOP/s', '2PFLOPS'")
        value = float(m["num"]) * _FLOPS_PREFIX[m["prefix"].lower()]
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be a finite rate > 0 FLOP/s, got {text!r}")
    return value


def _si(value: float, unit: str, prefixes: tuple[tuple[float, str], ...], digits: int) -> str:
    if value is None or not math.isfinite(value):
        return f"{value} {unit}"
    mag = abs(value)
    for scale, prefix in prefixes:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    scale, prefix = prefixes[-1]
    return f"{value / scale:.{digits}g} {prefix}{unit}"


_BYTE_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def format_bytes(value: float, digits: int = 3) -> str:
    """Format a byte count with a decimal SI prefix: ``format_bytes(1.75e9) == '1.75 GB'``."""
    return _si(float(value), "B", _BYTE_PREFIXES, digits)


def format_rate(value: float, digits: int = 3) -> str:
    """Format bytes per second with a decimal SI prefix: ``'50 GB/s'``."""
    return _si(float(value), "B/s", _BYTE_PREFIXES, digits)


def format_duration(value: float, digits: int = 3) -> str:
    """Format seconds as s, ms, µs or ns: ``format_duration(0.0175) == '17.5 ms'``."""
    if value == 0:
        return "0 s"
    return _si(float(value), "s", _TIME_PREFIXES, digits)


def format_flops(value: float, digits: int = 3) -> str:
    """Format FLOP/s with a decimal SI prefix: ``'989 TFLOP/s'``."""
    return _si(float(value), "FLOP/s", _BYTE_PREFIXES, digits)


def format_count(value: float, digits: int = 3) -> str:
    """Format a count (parameters, tokens) with k/M/B/T suffixes: ``'7 B'`` for 7e9."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {suffix}"
    return f"{value:.{digits}g}"
