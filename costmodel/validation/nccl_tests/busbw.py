"""Busbw-only markdown tables (``| 65K | 2.72 |``): rounded size labels and a busbw column."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from costmodel.units import GB

from ._common import MAX_LOG_BYTES, NCCL_TESTS_OPS, NcclTestsParseError, decode_log

if TYPE_CHECKING:
    import pandas as pd

# Some vendors publish only nccl-tests' in-place busbw column, as a markdown table with rounded
# size labels (the bundled 21a-21d Azure runs): "| 65K | 2.72 |". There is no time and no algbw,
# so these rows cannot go through parse_nccl_tests' frame; they are read here on their own.
# one whitespace run between the number and "|" whether or not a prefix sits there (two adjacent
# \s* around an optional prefix made a long run of spaces quadratic)
_BUSBW_ROW = re.compile(r"^\|\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])\s*)?\|\s*(\d+(?:\.\d+)?)\s*\|\s*$")
_BUSBW_HEADER_OP = re.compile(r"^#\s*op:\s*([a-z_]+)", re.MULTILINE)
_BUSBW_HEADER_RANKS = re.compile(r"^#\s*op:.*?\b(\d+) ranks\b", re.MULTILINE)
_LABEL_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
_LABEL_TOLERANCE = 0.10  # a label is a power of two rounded to 2-3 digits: 536M = 2**29 is 4.7% off


def is_busbw_table(text: str) -> bool:
    """True when ``text`` holds at least two busbw-only markdown rows (``| 65K | 2.72 |``)."""
    return sum(bool(_BUSBW_ROW.match(line)) for line in text.splitlines()) >= 2


def _size_from_label(number: str, prefix: str, source: str, lineno: int) -> int:
    r"""The power of two a rounded size label stands for: ``65K`` -> 65536, ``536M`` -> 2**29.

    .. math:: M = 2^{\operatorname{round}(\log_2(v \cdot 1024^k))}

    with ``v`` the printed number and ``k`` the prefix power (K=1 ... T=4). The label must lie
    within 10% of that power (the publishers' size sweeps are ``-f 2`` from a power of two);
    otherwise the row is refused rather than guessed.
    """
    value = float(number) * 1024 ** _LABEL_POWER[prefix]
    if value <= 0:
        raise NcclTestsParseError(lineno, f"size label {number}{prefix} is not positive", source)
    size = 2 ** round(math.log2(value))
    if abs(value / size - 1) > _LABEL_TOLERANCE:
        raise NcclTestsParseError(
            lineno,
            f"size label {number}{prefix} is not within 10% of a power of two",
            source,
        )
    return int(size)


def parse_busbw_table(text: str, source: str = "<text>", *, op: str | None = None) -> pd.DataFrame:
    """Parse a busbw-only markdown table (``| size label | busbw GB/s |``) into SI units.

    Returns one row per table row with columns ``op``, ``size_bytes`` [B] (the power of two the
    rounded label stands for, :func:`_size_from_label`), ``size_label`` (as printed),
    ``busbw_bytes_per_s`` [B/s] (printed GB/s x 1e9), ``placement`` (``"in_place"``: what such
    tables publish), ``ranks`` (from a ``# op: ... N ranks`` header line, else <NA>) and ``line``
    (1-based). ``op`` defaults to the header's ``# op: NAME``. No time or algbw is invented:
    compare these rows on busbw. Raises :class:`NcclTestsParseError` when no row is found.
    """
    import pandas as pd

    if op is None:
        found = _BUSBW_HEADER_OP.search(text)
        op = found.group(1) if found else "unknown"
    if op != "unknown" and op not in NCCL_TESTS_OPS.values():
        raise NcclTestsParseError(
            0,
            f"op: {op!r} is not an nccl-tests op; allowed: {', '.join(sorted(set(NCCL_TESTS_OPS.values())))}",
            source,
        )
    ranks_match = _BUSBW_HEADER_RANKS.search(text)
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _BUSBW_ROW.match(line)
        if not m:
            continue
        prefix = m.group(2) or ""
        rows.append(
            {
                "op": op,
                "size_bytes": _size_from_label(m.group(1), prefix, source, lineno),
                "size_label": f"{m.group(1)}{prefix}",
                "busbw_bytes_per_s": float(m.group(3)) * GB,
                "placement": "in_place",
                "ranks": int(ranks_match.group(1)) if ranks_match else None,
                "line": lineno,
            }
        )
    if not rows:
        raise NcclTestsParseError(
            0, "no busbw table rows found (expected lines like '| 65K | 2.72 |')", source
        )
    df = pd.DataFrame(rows)
    df["ranks"] = df["ranks"].astype("Int64")
    df.attrs["source"] = source
    return df


def read_busbw_table(path: str | Path, *, op: str | None = None) -> pd.DataFrame:
    """Read a busbw-only markdown table file; see :func:`parse_busbw_table`."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_LOG_BYTES:
            raise NcclTestsParseError(
                0,
                f"file is {path.stat().st_size:,} bytes; the limit is {MAX_LOG_BYTES:,}",
                str(path),
            )
        text = decode_log(path.read_bytes(), str(path))
    except OSError as exc:
        raise NcclTestsParseError(0, f"cannot read the file: {exc.strerror}", str(path)) from exc
    return parse_busbw_table(text, source=str(path), op=op)
