r"""Parse nccl-tests output (text logs and ``-J`` JSON) into one long DataFrame in SI units.

nccl-tests prints one table per run: a preamble (``# nThread ...``, ``# Using devices``, one
``#  Rank`` line per rank), a column header, one row per message size with an out-of-place and an
in-place block (``time algbw busbw #wrong``), and a footer (``# Out of bounds values``, ``# Avg bus
bandwidth``). The exact layout changed over the years and logs from clusters carry extra noise;
this parser reads all of it (docs/nccl-model.md section 2.3, nccl-tests ``src/util.cu``):

- old tables without the ``root`` column and with an ``error`` column (max delta, v2.9 era);
- ``-C 1`` (``cputime`` instead of ``time``), ``-I 1`` (``i_min i_max i_p99 i_cv%`` after each
  block), ``-c 0`` (``N/A`` in ``#wrong``);
- line prefixes from ``srun -l`` (``0: ``), ``mpirun --tag-output`` (``[1,0]<stdout>:``) and
  ``[0] ``;
- ``NCCL INFO``/``WARN`` lines interleaved between rows, or even inside a row (a row split over
  several physical lines, with the debug text glued to the last number);
- several runs in one file (a new preamble, a new column header, or a ``### KEY=VALUE`` marker
  starts a new run), elided lines (``...``) and the ``#`` comment block a collector put on top;
- nccl-tests' JSON output (``-J file.json``, JSON_FILE_VERSION 3).

Units: nccl-tests prints time in microseconds and bandwidths in GB/s (1e9 B/s); the frame holds
seconds and B/s. A units line naming others (``(ms)``, ``(MB/s)``) is refused with its line.
NCCL's own ``NCCL WARN`` lines are read past as debug text and said once, as one finding;
so is nccl-tests' own failure line (``host: Test NCCL failure file:line '...'``): the run
stopped there, and a log without rows names it in its refusal. ``algbw = size / time``; ``busbw = algbw * factor(op, ranks)``.

The package follows the reader's seams: :mod:`._common` (op names, columns, the error, limits,
the frame builder, byte decoding), :mod:`._lexer` (one line at a time), :mod:`._text` (lines ->
runs), :mod:`._findings` (strictness and warnings), :mod:`._header` (ranks, nodes, device of a
run), :mod:`._build` (runs -> frame), :mod:`._json` (``-J`` output) and :mod:`.busbw`
(busbw-only markdown tables). Every public name is importable from here.

>>> text = '''# Collective test starting: all_reduce_perf
... # nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20
... #  Rank  0 Group  0 Pid   1000 on  node01 device  0 [0x01] SYNTHETIC GPU
... #  Rank  1 Group  0 Pid   1000 on  node01 device  1 [0x02] SYNTHETIC GPU
... #       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
...      1048576        262144     float     sum      -1    100.0   10.49   10.49       0    100.0   10.49   10.49       0
... '''
>>> df = parse_nccl_tests(text)
>>> df[["op", "size_bytes", "placement", "time_s", "ranks", "nodes"]].to_string(index=False)
'       op  size_bytes    placement  time_s  ranks  nodes\nall_reduce     1048576 out_of_place  0.0001      2      1\nall_reduce     1048576     in_place  0.0001      2      1'
>>> float(df.busbw_bytes_per_s.iloc[0])
10490000000.0
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ._build import _build
from ._common import (
    _BUSBW_NUMERATOR,  # noqa: F401  (re-exported: one table, tables.BUSBW_NUMERATOR)
    COLUMNS,
    MAX_LINE_CHARS,
    MAX_LISTED,  # noqa: F401  (re-exported: documented limit)
    MAX_LOG_BYTES,
    NCCL_TESTS_OPS,
    NCCL_TESTS_TYPE_BYTES,
    NcclTestsParseError,
    decode_lenient,
    decode_log,
    decode_text,
)
from ._json import _parse_json
from ._lexer import _strip_prefix, looks_like_nccl_tests
from ._text import read_lines
from .busbw import is_busbw_table, parse_busbw_table, read_busbw_table

if TYPE_CHECKING:  # pandas is imported lazily, where a frame is built
    import pandas as pd

__all__ = [
    "COLUMNS",
    "NCCL_TESTS_OPS",
    "NCCL_TESTS_TYPE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_LOG_BYTES",
    "NcclTestsParseError",
    "decode_lenient",
    "decode_log",
    "decode_text",
    "is_busbw_table",
    "looks_like_nccl_tests",
    "why_not_timed",
    "parse_busbw_table",
    "parse_nccl_tests",
    "read_busbw_table",
    "read_nccl_tests",
]


# ---------------------------------------------------------------------------- public API
def parse_nccl_tests(
    text: str,
    source: str = "<text>",
    *,
    op: str | None = None,
    strict: bool = True,
    _fallback_op: str | None = None,
) -> pd.DataFrame:
    """Parse nccl-tests output (text or ``-J`` JSON) into a long DataFrame in SI units.

    Parameters
    ----------
    text : str
        The whole log (or JSON document). Never modified.
    source : str
        Name used in error messages and ``df.attrs["source"]``.
    op : str, optional
        Our op name (``"all_reduce"``, ...) for logs that never name their binary.
        By default the op comes from ``# Collective test starting: X_perf``, or from the nearest
        ``X_perf`` mentioned before the table (a command line in a comment), or from the
        ``redop``/``root`` columns (reduce, broadcast); otherwise it is ``"unknown"``.
    strict : bool
        True (default): the first malformed row raises :class:`NcclTestsParseError` naming its
        line. False: malformed rows are skipped and listed in ``df.attrs["problems"]``. Either
        way a row the end of the file cuts off (a truncated log) is skipped, every complete row
        before it kept, and said in ``df.attrs["cut_row"]`` (``{"line", "message"}``, else
        None) and among the warnings.

    Returns
    -------
    pandas.DataFrame
        One row per message size and placement (``out_of_place``, ``in_place``), columns
        :data:`COLUMNS`: ``time_s`` [s], ``algbw_bytes_per_s`` and ``busbw_bytes_per_s`` [B/s],
        ``size_bytes`` [B] as printed, ``wrong`` (<NA> where not checked), ``flagged`` (nccl-tests
        itself reported ``#wrong > 0`` or ``Out of bounds values: N FAILED``; the row is kept),
        ``line`` (1-based, where the row starts), and the run's header facts: ``ranks`` (with
        ``ranks_source``: the device list, a ``### GPUS=n`` marker, the busbw/algbw ratio, ...),
        ``nodes`` and ``gpus_per_node`` (distinct host names of a complete device list),
        ``nccl_version``, ``nccl_tests_version``, ``algo_env``/``proto_env`` (NCCL_ALGO/PROTO as
        the log shows them), ``nccl_algo``/``nccl_proto`` (NCCL_DEBUG=TUNING choice per size).
        ``df.attrs``: ``source``, ``meta`` (the collector's ``# KEY: value`` comment block),
        ``runs`` (per-run facts incl. footer values), ``problems`` (rows skipped, lenient mode),
        ``warnings`` (``{"line", "message"}``: what the parser read but nccl-tests would not have
        printed: a column header repeated without a new run preamble, a duplicate row (same size,
        type, redop, root), sizes out of order, a size gap larger than the header's ``step``, a
        run without its footer (cut off?), a commented-out result row, runs of different ops or
        rank counts in one file, a launch line the run contradicts (its ranks, nodes or GPUs
        per node; the run's own are used); duplicates and disorder are listed one by one up to
        :data:`MAX_LISTED`, then counted). Warnings never change the rows: the caller decides.

    Raises
    ------
    NcclTestsParseError
        Empty input, no result rows, or (strict) a malformed row inside the log, or a line that
        looks like a result row but cannot be read; the message names the line. Also: a log over
        :data:`MAX_LOG_BYTES` characters, a line over :data:`MAX_LINE_CHARS` (nccl-tests lines
        are < 300; this bounds the work of one parse), JSON that is invalid or not shaped like
        nccl-tests' ``-J`` output.

    Notes
    -----
    algbw = size / time and busbw = algbw * factor(op, n) as nccl-tests computes them (its
    doc/PERFORMANCE.md); values are converted, never recomputed: time [µs] * 1e-6 = s,
    bw [GB/s] * 1e9 = B/s.

    Examples
    --------
    Old nccl-tests (v2.9 era: no ``root``, an ``error`` column), rows tagged by ``srun -l``:

    >>> log = '''0: #       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
    ... 0:      1048576        262144     float     sum    232.5    4.51    8.95  1e-06    212.7    4.93    9.78  1e-06'''
    >>> df = parse_nccl_tests(log, op="all_reduce")
    >>> df.loc[0, ["time_s", "busbw_bytes_per_s", "max_error"]].tolist()
    [0.0002325, 8950000000.0, 1e-06]
    >>> bool(df.root.isna().all())
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    text = text.removeprefix("\ufeff")  # a UTF-8 BOM (Windows editors) is not part of the log
    if len(text) > MAX_LOG_BYTES:
        raise NcclTestsParseError(
            0, f"log is {len(text):,} characters; the limit is {MAX_LOG_BYTES:,}", source
        )
    if not text.strip():
        raise NcclTestsParseError(0, "empty log: no nccl-tests output at all", source)
    if op is not None and op not in NCCL_TESTS_OPS.values():
        raise ValueError(
            f"op: {op!r} is not an nccl-tests op; allowed: {', '.join(sorted(set(NCCL_TESTS_OPS.values())))}"
        )
    head = text.lstrip()
    # a -J file starts with "{" (or "["); so does a text log every line of which a launcher
    # tagged (mpirun --tag-output's "[1,0]<stdout>:", "[0] ") or ts stamped ("[2026-12-05
    # 02:00:13] "), which is read as text
    first = head.split("\n", 1)[0]
    if head.startswith(("{", "[")) and _strip_prefix(first) == first:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            open_at_end = _open_at_end(text)
            if open_at_end > 0:  # a prefix of a document: the file ends before it closes
                raise NcclTestsParseError(
                    exc.lineno,
                    f"invalid JSON: the file ends with {open_at_end} bracket"
                    f"{'s' * (open_at_end != 1)} or string still open ({exc.msg}): it is cut "
                    "off (a run killed while nccl-tests wrote its -J file?); rerun it, or "
                    "give the run's text log",
                    source,
                ) from exc
            raise NcclTestsParseError(exc.lineno, f"invalid JSON: {exc.msg}", source) from exc
        except RecursionError as exc:
            raise NcclTestsParseError(0, "invalid JSON: nested too deeply", source) from exc
        try:
            return _parse_json(data, source, op)
        except NcclTestsParseError:
            raise
        except (TypeError, AttributeError, KeyError, ValueError, OverflowError) as exc:
            # a field of the wrong shape (a list where nccl-tests writes an object, a string
            # where it writes a number, ...): not nccl-tests -J output
            raise NcclTestsParseError(
                0, f"JSON does not have nccl-tests -J's shape ({type(exc).__name__}: {exc})", source
            ) from exc
    parser = read_lines(text, source, op, strict, _fallback_op)
    if not any(run.rows for run in parser.runs):
        problems = "; ".join(f"line {line}: {msg}" for line, msg in parser.problems[:3])
        failed = (
            f"; the run failed before its first size: line {parser.test_failures[0][0]}: "
            f"{parser.test_failures[0][1][:160]!r}"
            if parser.test_failures
            else ""
        )
        raise NcclTestsParseError(
            0,
            "no nccl-tests result rows found (expected lines like '  1048576  262144  float  "
            "sum  -1  35.12  29.86  52.25  0 ...')"
            + failed
            + (f"; {problems}" if problems else "")
            + (
                "; this is a busbw-only markdown table: read it with read_busbw_table"
                if is_busbw_table(text)
                else ""
            ),
            source,
        )
    return _build(parser)


def _open_at_end(text: str) -> int:
    """The brackets (``{``, ``[``) a JSON text leaves open at its end, outside strings, plus one
    for a string left open: > 0 for a document cut off, 0 for one that closes (whatever else is
    wrong with it).

    >>> _open_at_end('{"results": [{"size": 8, "name": "a}'), _open_at_end('{"a": [1, 2]}')
    (4, 0)
    """
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return depth + in_string


def read_nccl_tests(
    path: str | Path, *, op: str | None = None, strict: bool = True
) -> pd.DataFrame:
    """Read an nccl-tests log or ``-J`` JSON file; see :func:`parse_nccl_tests`.

    The op defaults as in :func:`parse_nccl_tests`, then from the file name
    (``all_gather_perf.log``, ``..._allgather.txt``).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_LOG_BYTES:
            raise NcclTestsParseError(
                0, f"file is {size:,} bytes; the limit is {MAX_LOG_BYTES:,}", str(path)
            )
        text = decode_log(path.read_bytes(), str(path))
    except OSError as exc:
        raise NcclTestsParseError(0, f"cannot read the file: {exc.strerror}", str(path)) from exc
    return parse_nccl_tests(
        text, source=str(path), op=op, strict=strict, _fallback_op=_op_from_filename(path.name)
    )


def _op_from_filename(name: str) -> str | None:
    lowered = name.lower()
    for pattern, op in (
        (r"all_?reduce", "all_reduce"),
        (r"all_?gather", "all_gather"),
        (r"reduce_?scatter", "reduce_scatter"),
        (r"all_?to_?all", "all_to_all"),
        (r"broadcast", "broadcast"),
        (r"(?<![a-z_])reduce(?![a-z_])", "reduce"),
    ):
        if re.search(pattern, lowered):
            return op
    return None


def why_not_timed(text: str) -> str | None:
    """None when ``text`` is an nccl-tests log with timed result rows (what ``validate compare``
    and the Validate page compare); else why not, in words. One predicate for both surfaces.

    >>> why_not_timed("| size | busbw |")
    'not an nccl-tests log (no result rows)'
    """
    if is_busbw_table(text):
        return "a busbw-only table (no times to compare: read it with read_busbw_table)"
    try:
        parse_nccl_tests(text, strict=False)
    except NcclTestsParseError:
        return "not an nccl-tests log (no result rows)"
    return None
