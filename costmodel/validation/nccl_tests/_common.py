"""What every part of the nccl-tests reader shares: the op names, the frame's columns, the error,
the limits on one parse, the frame builder and the byte decoder (costmodel.textfile's, with
this reader's error).

The frame (:data:`COLUMNS`, :func:`_frame`) is the one schema the text and the JSON readers fill.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING, Any, cast

from costmodel import textfile
from costmodel.tables import BUSBW_NUMERATOR

if TYPE_CHECKING:  # pandas is imported lazily, where a frame is built
    import pandas as pd


# nccl-tests binary stem -> our op name (collectives.OPS where the op exists there).
NCCL_TESTS_OPS: dict[str, str] = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "all_to_all",
    "alltoallv": "all_to_all_v",
    "sendrecv": "sendrecv",
    "gather": "gather",
    "scatter": "scatter",
    "hypercube": "hypercube",
}

#: Bytes per element of each nccl-tests type name (``-d``, the ``type`` column), the unit of
#: its ``count`` column: nccl-tests' ``wordSize`` of each ``ncclDataType_t``. Every dtype of
#: bundled run 23b (``-d all``, all_reduce) prints size / count at these figures.
NCCL_TESTS_TYPE_BYTES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "half": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
}

# nccl-tests busbw factor = a * (n - 1) / n (tables.BUSBW_NUMERATOR; a == 0: factor 1, which
# says nothing about n). Used only to infer the rank count.
_BUSBW_NUMERATOR = BUSBW_NUMERATOR

# the frame's columns in order, each with its type: "int?" nullable integer, "int", "bool",
# "text" (object, None where missing), "float" (NaN where missing)
_COLUMN_TYPES: dict[str, str] = {
    "run": "int",
    "op": "text",
    "size_bytes": "int",
    "count": "int",
    "dtype": "text",
    "redop": "text",
    "root": "int?",
    "placement": "text",
    "time_s": "float",
    "algbw_bytes_per_s": "float",
    "busbw_bytes_per_s": "float",
    "wrong": "int?",
    "max_error": "float",
    "flagged": "bool",
    "flag_reason": "text",
    "line": "int",
    "ranks": "int?",
    "ranks_source": "text",
    "nodes": "int?",
    "gpus_per_node": "int?",
    "gpus_per_process": "int?",
    "nccl_version": "text",
    "nccl_tests_version": "text",
    "algo_env": "text",
    "proto_env": "text",
    "nccl_algo": "text",
    "nccl_proto": "text",
    "timer": "text",
    "iter_min_s": "float",
    "iter_max_s": "float",
    "iter_p99_s": "float",
    "iter_cv_pct": "float",
    "run_label": "text",
    "device": "text",
}
COLUMNS: tuple[str, ...] = tuple(_COLUMN_TYPES)


class NcclTestsParseError(ValueError):
    """A log that cannot be read as nccl-tests output; ``line`` is 1-based (0: whole file)."""

    def __init__(self, line: int, message: str, source: str = "<text>") -> None:
        self.line = line
        self.source = source
        self.message = message
        where = f"{source}, line {line}" if line else source
        super().__init__(f"{where}: {message}")


# Limits that bound the work of one parse. nccl-tests lines are < 300 characters and
# NCCL debug lines a few thousand; the largest reference log is ~53 kB.
MAX_LINE_CHARS = 16_384
MAX_LOG_BYTES = 32 * 1024 * 1024
MAX_LISTED = 20  # at most this many duplicate/out-of-order findings are listed one by one


def _library_version(code: str) -> str:
    """NCCL_VERSION_CODE -> "x.y.z" (code = x*10000 + y*100 + z since NCCL 2.9; nccl.h.in)."""
    value = int(code)
    if value >= 10000:
        return f"{value // 10000}.{value // 100 % 100}.{value % 100}"
    return f"{value // 1000}.{value // 100 % 10}.{value % 100}"


def _of_type(kind: str) -> tuple[str, ...]:
    return tuple(name for name, k in _COLUMN_TYPES.items() if k == kind)


_INT64_NULLABLE = _of_type("int?")
_INT64 = _of_type("int")
_BOOL = _of_type("bool")
_TEXT = _of_type("text")
_FLOAT64 = _of_type("float")


def _missing(value: object) -> bool:
    """What pandas' ``notna`` counts as missing in a text column: None, NaN, NA, NaT."""
    import pandas as pd

    if value is None:
        return True
    return not isinstance(value, str) and bool(pd.isna(cast(Any, value)))


class Findings(list):
    """A log's findings in its frame's ``attrs`` (its runs, skipped rows and warnings): a
    plain list to every reader, shared by the frames pandas derives from it rather than
    deep-copied into each. pandas deep-copies ``attrs`` into every slice and column it returns
    (``NDFrame.__finalize__``), and the findings grow with the log's runs, so checking a log
    run by run took time in the square of its runs: a 4.8 MB log of about 820 runs did not
    finish in 300 s, and 40 runs spent 20 s of 25 in those copies (2026-12-06). Findings are
    written once, when the log is read, and only read after."""

    def __deepcopy__(self, memo: dict[int, object]) -> Findings:
        return self


def _frame(records, source, meta, runs_info, problems, warnings=()) -> pd.DataFrame:
    """The frame of :data:`COLUMNS` from columns (``{name: values}``, the text reader) or rows
    (dicts, the JSON reader; a missing key is a missing value), each column built once in its
    type, then the frame in one step (setting the columns one by one took most of a parse)."""
    import numpy as np
    import pandas as pd

    if not isinstance(records, dict):
        records = {name: [r.get(name) for r in records] for name in COLUMNS}
    data: dict[str, object] = {}
    for name in _INT64_NULLABLE:  # None and NaN are missing
        data[name] = pd.array(records[name], dtype="Int64")
    for name in _INT64:
        data[name] = np.asarray(records[name], dtype="int64")
    for name in _BOOL:
        data[name] = np.asarray(records[name], dtype=bool)
    for name in _TEXT:
        # object, not inferred as pandas' string type; None for what pandas counts as missing
        values = [
            v if v is None or type(v) is str or not _missing(v) else None for v in records[name]
        ]
        data[name] = pd.Series(values, dtype=object)
    for name in _FLOAT64:  # None is NaN
        data[name] = np.asarray(records[name], dtype="float64")
    df = pd.DataFrame({name: data[name] for name in COLUMNS}, columns=list(COLUMNS))
    df.attrs["source"] = source
    df.attrs["meta"] = meta
    df.attrs["runs"] = Findings(runs_info)
    df.attrs["problems"] = Findings({"line": line, "message": msg} for line, msg in problems)
    df.attrs["warnings"] = Findings(
        {"line": line, "message": msg} for line, msg in sorted(warnings)
    )
    return df


def decode_text(data: bytes, source: str = "<bytes>", *, what: str = "log") -> str:
    """Decode a text file's bytes with the one helper every reader uses
    (:func:`costmodel.textfile.decode_text`): UTF-8 (with or without a byte-order mark), UTF-16
    or UTF-32 by its mark (the mark dropped), so a log redirected by Windows PowerShell 5
    (UTF-16 LE with a mark) reads as the same log saved as UTF-8; UTF-16 without a mark (a NUL
    at every other byte) is read with a warning saying so.

    Raises :class:`NcclTestsParseError` (a ValueError) naming the byte offset when the bytes
    do not decode in that encoding (a Latin-1 or cp1252 file must be converted first), or when
    its first bytes are NULs throughout (not text). ``what`` names the file in the advice.
    """
    try:
        return textfile.decode_text(data, source, what=what)
    except textfile.TextDecodeError as exc:
        raise NcclTestsParseError(0, exc.message, source) from exc


decode_lenient = textfile.decode_lenient


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip file (RFC 1952)."""


class ReplacedBytesWarning(textfile.GuessedEncodingWarning):
    """A log read with bytes that are not UTF-8 replaced (U+FFFD) in lines that are not result
    rows (a comment, a banner, NCCL's debug output): said with the log's notices, as a guessed
    encoding is (a subclass of :class:`costmodel.textfile.GuessedEncodingWarning`)."""


def decode_log(data: bytes, source: str = "<bytes>") -> str:
    """Decode a log's bytes (:func:`decode_text`: UTF-8, or UTF-16/32 by its byte-order mark,
    the mark dropped; UTF-16 without a mark read with a warning).

    A UTF-8 log with bytes that do not decode is read when no such byte is in a result row: a
    Latin-1 hostname or an accented word in a comment, a banner or NCCL's debug lines is
    replaced (U+FFFD) and said once (:class:`ReplacedBytesWarning`, one of the log's notices);
    a result row with one is refused, naming its line and byte offset (its numbers cannot be
    trusted as text).

    Raises :class:`NcclTestsParseError` naming the byte offset when the bytes do not decode
    (nccl-tests writes ASCII; a log re-saved as Latin-1 must be converted first), when the
    data exceed :data:`MAX_LOG_BYTES`, and for a gzip-compressed file (it starts with
    :data:`GZIP_MAGIC`). Decision: a ``.gz`` log is refused with the way to read it (gunzip it
    first), not decompressed here: decompressing would have to bound what a small file expands
    to (:data:`MAX_LOG_BYTES`) on every surface that takes a log (the CLI, the Validate page's
    upload, a folder's files), and nccl-tests writes plain text.
    """
    if len(data) > MAX_LOG_BYTES:
        raise NcclTestsParseError(
            0, f"file is {len(data):,} bytes; the limit is {MAX_LOG_BYTES:,}", source
        )
    if data.startswith(GZIP_MAGIC):
        raise NcclTestsParseError(
            0,
            "gzip-compressed (it starts with gzip's bytes 1f 8b), not a text log: decompress "
            "it first (gunzip FILE.gz, or zcat FILE.gz > FILE.log) and give the .log",
            source,
        )
    try:
        return decode_text(data, source)
    except NcclTestsParseError:
        if textfile.encoding_name(data) != "UTF-8" or data[: textfile.SNIFF_BYTES].count(0):
            raise  # UTF-16/32 that does not decode, or NULs: not a log with a stray byte
        text, replaced = _decode_outside_rows(data, source)
    import warnings

    lines = ", ".join(str(n) for n in replaced[:5]) + (", ..." if len(replaced) > 5 else "")
    warnings.warn(
        f"{source}: bytes that are not UTF-8 in {len(replaced)} line"
        f"{'s' if len(replaced) > 1 else ''} outside the result rows (line {lines}: a "
        "comment, a banner or a debug line), read with those bytes replaced",
        ReplacedBytesWarning,
        stacklevel=2,
    )
    return text


def _decode_outside_rows(data: bytes, source: str) -> tuple[str, list[int]]:
    """UTF-8 ``data`` decoded line by line, bytes that do not decode replaced in lines that are
    not result rows (their line numbers returned); a result row with such a byte is refused
    naming its line and offset."""
    from ._lexer import _looks_like_row, _strip_prefix

    out, replaced = [], []
    offset = 3 if data.startswith(codecs.BOM_UTF8) else 0
    for lineno, raw in enumerate(data[offset:].split(b"\n"), start=1):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line = raw.decode("utf-8", "replace")
            body = _strip_prefix(line).strip()
            # the replaced byte read as a digit: a row damaged in a number still looks like one
            tokens = body.replace("\ufffd", "0").split()
            if not body.startswith("#") and _looks_like_row(tokens):
                raise NcclTestsParseError(
                    lineno,
                    f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset "
                    f"{offset + exc.start} is in a result row, which cannot be read with it "
                    "(save the log as UTF-8 or ASCII)",
                    source,
                ) from exc
            out.append(line)
            replaced.append(lineno)
        offset += len(raw) + 1
    return "\n".join(out), replaced
