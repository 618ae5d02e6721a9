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
seconds and B/s. ``algbw = size / time``; ``busbw = algbw * factor(op, ranks)``.

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
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.tables import BUSBW_NUMERATOR
from costmodel.units import GB, US

if TYPE_CHECKING:  # pandas is imported lazily, where a frame is built
    import pandas as pd

__all__ = [
    "COLUMNS",
    "NCCL_TESTS_OPS",
    "MAX_LINE_CHARS",
    "MAX_LOG_BYTES",
    "NcclTestsParseError",
    "decode_log",
    "is_busbw_table",
    "parse_busbw_table",
    "parse_nccl_tests",
    "read_busbw_table",
    "read_nccl_tests",
]

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

# nccl-tests busbw factor = a * (n - 1) / n (tables.BUSBW_NUMERATOR; a == 0: factor 1, which
# says nothing about n). Used only to infer the rank count.
_BUSBW_NUMERATOR = BUSBW_NUMERATOR

COLUMNS: tuple[str, ...] = (
    "run",
    "op",
    "size_bytes",
    "count",
    "dtype",
    "redop",
    "root",
    "placement",
    "time_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "wrong",
    "max_error",
    "flagged",
    "flag_reason",
    "line",
    "ranks",
    "ranks_source",
    "nodes",
    "gpus_per_node",
    "gpus_per_process",
    "nccl_version",
    "nccl_tests_version",
    "algo_env",
    "proto_env",
    "nccl_algo",
    "nccl_proto",
    "timer",
    "iter_min_s",
    "iter_max_s",
    "iter_p99_s",
    "iter_cv_pct",
    "run_label",
    "device",
)


class NcclTestsParseError(ValueError):
    """A log that cannot be read as nccl-tests output; ``line`` is 1-based (0: whole file)."""

    def __init__(self, line: int, message: str, source: str = "<text>") -> None:
        self.line = line
        self.source = source
        self.message = message
        where = f"{source}, line {line}" if line else source
        super().__init__(f"{where}: {message}")


# ---------------------------------------------------------------------------- patterns
_PREFIX_RE = re.compile(
    r"^\s*(?:"
    r"\[\d+,\d+\]<std(?:out|err)>:"  # mpirun --tag-output
    r"|\d+:(?=\s|#|$)"  # srun -l, mpirun -l style "0: "
    r"|\[\d+\](?=\s)"  # "[0] "
    r")\s?"
)
_TIMESTAMP_RE = re.compile(r"^\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}[: ]?\s*")  # --timestamp-output
# Every pattern below is linear in the line length: a variable-length run is anchored (``^``) or
# preceded by a look-behind that rules out starting inside the same run, so a 1 MB line without
# spaces cannot make the engine retry from every offset (issue 14: a 200 kB line hung the app).
_DEBUG_RE = re.compile(
    r"(?<![\w.-])(?P<host>[A-Za-z][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[\d+\] NCCL (?:INFO|WARN|TRACE|ABORT|ERROR)"
)
_TUNING_RE = re.compile(r"(?<!\w)(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)")
_ENV_SET_RE = re.compile(r"(NCCL_\w+) set by environment to (\S+)")
_NCCL_VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_TESTS_VERSION_RE = re.compile(
    r"nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?"
)
_NTHREAD_RE = re.compile(r"nThread (\d+) nGpus (\d+)")
_RANK_RE = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$"
)
_OMITTED_RE = re.compile(r"(?<!\d)(\d+) further device lines omitted")
_MARKER_RE = re.compile(r"^###\s*(\w+=\S+(?:\s+\w+=\S+)*)\s*$")
_SEPARATOR_RE = re.compile(r"^#\s*=+\s*(.*?)\s*=+\s*$")
_STARTING_RE = re.compile(r"Collective test (?:starting|concluded):\s*(\w+?)_perf")
_PERF_RE = re.compile(r"\b(\w+?)_perf(?:_mpi)?\b")
_OOB_RE = re.compile(r"Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
_AVG_RE = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_META_RE = re.compile(r"^#\s(?=[A-Z])([A-Za-z0-9 /_'-]*?(?:\s*\([^)]*\))?):\s?(.*)$")
_NP_RE = re.compile(r"(?:-np|--np|-n)\s+(\d+)\b")
_INT_RE = re.compile(r"^-?\d+$")
_NUM_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_NTHREAD_STEP_RE = re.compile(r"step:\s*(\d+)\((factor|bytes)\)")

# Limits that bound the work of one parse (issue 14). nccl-tests lines are < 300 characters and
# NCCL debug lines a few thousand; the largest reference log is ~100 kB.
MAX_LINE_CHARS = 16_384
MAX_LOG_BYTES = 32 * 1024 * 1024
MAX_LISTED = 20  # at most this many duplicate/out-of-order findings are listed one by one

_TABLE_STARTS = ("nThread", "Using devices", "Collective test", "nccl-tests version", "size ")
_TIME_NAMES = {"time": "gpu", "cputime": "cpu"}
_BLOCK_NAMES = {
    "algbw": "algbw",
    "busbw": "busbw",
    "#wrong": "wrong",
    "error": "error",
    "i_min": "i_min",
    "i_max": "i_max",
    "i_p99": "i_p99",
    "i_cv%": "i_cv",
}


def _looks_like_row(tokens: list[str], need_ints: bool = True) -> bool:
    """True for >= 8 fields, mostly numbers: a result row (``need_ints``: starting size count)."""
    if len(tokens) < 8:
        return False
    if need_ints and not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])):
        return False
    numeric = sum(1 for t in tokens if _NUM_RE.match(t) or t == "N/A")
    return numeric >= 0.6 * len(tokens)


def _strip_prefix(line: str) -> str:
    line = _TIMESTAMP_RE.sub("", line, count=1)
    match = _PREFIX_RE.match(line)
    return line[match.end() :] if match else line


@dataclass
class _Layout:
    """Column layout of a table: preamble names and the names of each placement block."""

    preamble: list[str]
    blocks: list[list[str]]
    timer: str = "gpu"

    def __post_init__(self) -> None:
        self.width = len(self.preamble) + sum(len(b) for b in self.blocks)


def _layout_from_header(tokens: list[str]) -> _Layout:
    preamble: list[str] = []
    blocks: list[list[str]] = []
    timer = "gpu"
    for token in tokens:
        if token in _TIME_NAMES:
            timer = _TIME_NAMES[token]
            blocks.append(["time"])
        elif blocks:
            blocks[-1].append(_BLOCK_NAMES.get(token, token))
        else:
            preamble.append(token)
    return _Layout(preamble, blocks, timer)


def _layout_from_count(tokens: list[str]) -> _Layout | None:
    """Guess the layout of a row seen without a column header (by its token count)."""
    n = len(tokens)
    for pre in (["size", "count", "type", "redop", "root"], ["size", "count", "type", "redop"]):
        rest = n - len(pre)
        if len(pre) == 5 and not _INT_RE.match(tokens[4]):
            continue
        if rest == 8:
            block = ["time", "algbw", "busbw", "wrong" if len(pre) == 5 else "error"]
            return _Layout(pre, [block, list(block)])
        if rest == 16:
            block = ["time", "algbw", "busbw", "wrong", "i_min", "i_max", "i_p99", "i_cv"]
            return _Layout(pre, [block, list(block)])
    return None


@dataclass
class _Run:
    index: int
    line: int
    op: str | None = None
    nthread: int | None = None
    ngpus: int | None = None
    rank_lines: list[tuple[int, str, str]] = field(default_factory=list)  # (rank, host, device)
    elided: bool = False
    omitted: int = 0
    nccl_version: str | None = None
    nccl_tests_version: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    markers: dict[str, str] = field(default_factory=dict)
    label: str | None = None
    tuning: dict[int, tuple[str, str]] = field(default_factory=dict)
    layout: _Layout | None = None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, tokens)
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    avg_busbw_bytes_per_s: float | None = None
    concluded: bool = False
    header_line: int | None = None  # line of the column header this run's rows follow
    step: tuple[int, str] | None = None  # nccl-tests -f/-i: (step, "factor" | "bytes")

    @property
    def started(self) -> bool:
        return bool(self.rows) or self.concluded


def _library_version(code: str) -> str:
    """NCCL_VERSION_CODE -> "x.y.z" (code = x*10000 + y*100 + z since NCCL 2.9; nccl.h.in)."""
    value = int(code)
    if value >= 10000:
        return f"{value // 10000}.{value // 100 % 100}.{value % 100}"
    return f"{value // 1000}.{value // 100 % 10}.{value % 100}"


class _Parser:
    def __init__(self, source: str, op: str | None, strict: bool, fallback_op: str | None) -> None:
        self.source = source
        self.default_op = op
        self.fallback_op = fallback_op
        self.strict = strict
        self.runs: list[_Run] = []
        self.meta: dict[str, str] = {}
        self.problems: list[tuple[int, str]] = []
        self.warnings: list[tuple[int, str]] = []
        self.hosts: set[str] = set()
        self.last_op_hint: str | None = op
        self.pending: list[str] | None = None
        self.pending_line = 0
        self.pending_run: _Run | None = None
        self.run = self._new_run(1)

    # -- run bookkeeping
    def _new_run(self, line: int) -> _Run:
        run = _Run(index=len(self.runs), line=line)
        self.runs.append(run)
        return run

    def _boundary(self, line: int) -> _Run:
        self._flush()
        if self.run.started:
            self.run = self._new_run(line)
        return self.run

    def _warn(self, line: int, message: str) -> None:
        """A finding that does not stop the parse (listed in ``df.attrs["warnings"]``)."""
        self.warnings.append((line, message))

    def _problem(self, line: int, message: str) -> None:
        if self.strict:
            raise NcclTestsParseError(line, message, self.source)
        self.problems.append((line, message))

    # -- rows
    def _flush(self) -> None:
        if self.pending is None:
            return
        tokens, line, run = self.pending, self.pending_line, self.pending_run
        self.pending = None
        if run is None:
            return
        layout = run.layout or _layout_from_count(tokens)
        if layout is None or len(tokens) != layout.width:
            expected = f"{layout.width} fields" if layout else "a known nccl-tests row layout"
            self._problem(
                line,
                f"result row has {len(tokens)} fields, expected {expected} (a cut-off or joined row): "
                f"{' '.join(tokens)[:80]!r}",
            )
            return
        if not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])):
            self._problem(line, f"size and count must be integers: {' '.join(tokens[:2])!r}")
            return
        if run.layout is None:
            run.layout = layout
        run.rows.append((line, tokens))

    def _cut_debug(self, text: str, run: _Run, lineno: int) -> tuple[str, str]:
        """Split a line into (nccl-tests text, NCCL debug text)."""
        for host in self.hosts:
            pos = text.find(host + ":")
            while pos >= 0:
                if re.match(r":\d+:\d+ \[\d+\] NCCL ", text[pos + len(host) :]):
                    return text[:pos], text[pos:]
                pos = text.find(host + ":", pos + 1)
        match = _DEBUG_RE.search(text)
        if match:
            return text[: match.start()], text[match.start() :]
        if " NCCL INFO " in text or " NCCL WARN " in text:
            pos = text.find(" NCCL ")
            start = text.rfind(" ", 0, max(pos - 4, 0))
            return text[: max(start, 0)], text[max(start, 0) :]
        return text, ""

    def _debug(self, text: str, run: _Run) -> None:
        for match in _TUNING_RE.finditer(text):
            run.tuning[int(match.group(2))] = (match.group(3), match.group(4))
        for match in _ENV_SET_RE.finditer(text):
            run.env[match.group(1)] = match.group(2)
        match = _NCCL_VERSION_RE.search(text)
        if match and run.nccl_version is None:
            run.nccl_version = match.group(1)

    # -- lines
    def feed(self, raw: str, lineno: int, in_meta: bool) -> None:
        text = _strip_prefix(raw.rstrip("\r\n"))
        stripped = text.strip()
        if not stripped:
            return
        if in_meta:
            self._meta_line(stripped)
            perf = _PERF_RE.search(stripped)
            if perf and perf.group(1) in NCCL_TESTS_OPS and self.last_op_hint is None:
                self.last_op_hint = NCCL_TESTS_OPS[perf.group(1)]
            return
        if stripped.startswith("#"):
            self._comment(stripped, lineno)
            return
        body, debug = self._cut_debug(text, self.run, lineno)
        if debug:
            self._debug(debug, self.run)
        tokens = body.split()
        if not tokens:
            return
        if stripped in ("...", "…") or tokens == ["..."]:
            if self.run.rank_lines and not self.run.rows:
                self.run.elided = True
            return
        if (
            len(tokens) >= 3
            and _INT_RE.match(tokens[0])
            and _INT_RE.match(tokens[1])
            and (not _NUM_RE.match(tokens[2]) and tokens[2] != "N/A")
        ):
            self._flush()
            if self.run.concluded:
                self._boundary(lineno)
            self.pending = tokens
            self.pending_line = lineno
            self.pending_run = self.run
            self._maybe_complete()
            return
        if self.pending is not None and all(_NUM_RE.match(t) or t == "N/A" for t in tokens):
            self.pending.extend(tokens)
            self._maybe_complete()
            return
        if (
            self.pending is None
            and all(_NUM_RE.match(t) for t in tokens)
            and len(tokens) >= 8
            and _INT_RE.match(tokens[0])
            and _INT_RE.match(tokens[1])
        ):
            self._problem(lineno, f"result row without a data type field: {body.strip()[:80]!r}")
            return
        if self.pending is None and not debug and all(_NUM_RE.match(t) for t in tokens):
            self._problem(lineno, f"cut-off result row: {body.strip()[:80]!r}")
            return
        if not debug and _looks_like_row(tokens, need_ints=False):
            self._problem(
                lineno, f"line looks like a result row but cannot be read: {body.strip()[:80]!r}"
            )
            return
        self._debug(text, self.run)  # plain text: "NCCL version 2.26.2+cuda12.8", warnings

    def _maybe_complete(self) -> None:
        run = self.pending_run
        if (
            self.pending is not None
            and run is not None
            and run.layout is not None
            and len(self.pending) >= run.layout.width
        ):
            self._flush()

    def _meta_line(self, stripped: str) -> None:
        match = _META_RE.match(stripped)
        if match:
            self._meta_key = match.group(1).strip()
            self.meta[self._meta_key] = match.group(2).strip()
        elif (
            getattr(self, "_meta_key", None)
            and stripped.startswith("#")
            and not set(stripped) <= set("#-= ")
        ):
            self.meta[self._meta_key] += "\n" + stripped.lstrip("#").strip()

    def _comment(self, stripped: str, lineno: int) -> None:
        body = stripped.lstrip("#").strip()
        marker = _MARKER_RE.match(stripped)
        if marker:
            run = self._boundary(lineno)
            for key in run.markers:  # markers of a run that printed no rows are superseded
                run.env.pop("NCCL_" + key.removeprefix("NCCL_"), None)
            run.markers.clear()
            for item in marker.group(1).split():
                key, _, value = item.partition("=")
                run.markers[key.upper()] = value
            run.label = marker.group(1)
            for key in ("ALGO", "PROTO"):
                for name in (key, "NCCL_" + key):
                    if name in run.markers:
                        run.env["NCCL_" + key] = run.markers[name]
            return
        separator = _SEPARATOR_RE.match(stripped)
        if separator:
            run = self._boundary(lineno)
            run.label = separator.group(1) or run.label
            return
        tokens = body.split()
        if tokens[:2] == ["size", "count"] or (
            tokens and tokens[0] == "size" and "count" in tokens
        ):
            if self.run.rows:
                self._warn(
                    lineno,
                    f"column header repeated (first at line {self.run.header_line}) with no new "
                    "run preamble: a duplicated header or a second log pasted in; the rows after "
                    "it are read as a new run",
                )
            elif self.run.header_line is not None and self.pending is None:
                self._warn(lineno, f"column header repeated (first at line {self.run.header_line})")
            run = self._boundary(lineno) if self.run.rows else self.run
            self._flush()
            run.layout = _layout_from_header(tokens)
            run.header_line = lineno
            return
        if body.startswith("nccl-tests version"):
            run = self._boundary(lineno)
            match = _TESTS_VERSION_RE.search(body)
            if match:
                run.nccl_tests_version = match.group(1)
                if match.group(3):
                    run.nccl_version = _library_version(match.group(3))
            return
        starting = _STARTING_RE.search(body)
        if starting:
            name = NCCL_TESTS_OPS.get(starting.group(1), starting.group(1))
            if "starting" in body:
                run = self._boundary(lineno) if self.run.started or self.run.op else self.run
                run.op = name
            else:
                self.run.op = self.run.op or name
                self._flush()
                self.run.concluded = True
            return
        if body.startswith("nThread"):
            if self.run.nthread is not None or self.run.started:
                self._boundary(lineno)
            match = _NTHREAD_RE.search(body)
            if match:
                self.run.nthread, self.run.ngpus = int(match.group(1)), int(match.group(2))
            step = _NTHREAD_STEP_RE.search(body)
            if step:
                self.run.step = (int(step.group(1)), step.group(2))
            return
        rank = _RANK_RE.match(stripped)
        if rank:
            if self.run.rows:
                self._boundary(lineno)
            host = rank.group(2)
            self.hosts.add(host)
            self.run.rank_lines.append((int(rank.group(1)), host, rank.group(4).strip()))
            return
        omitted = _OMITTED_RE.search(body)
        if omitted:
            self.run.omitted += int(omitted.group(1))
            return
        if body in ("...", "…"):
            self.run.elided = self.run.elided or bool(self.run.rank_lines)
            return
        oob = _OOB_RE.search(body)
        if oob:
            self._flush()
            self.run.out_of_bounds = int(oob.group(1))
            self.run.out_of_bounds_ok = oob.group(2) == "OK"
            self.run.concluded = True
            return
        avg = _AVG_RE.search(body)
        if avg:
            self._flush()
            try:
                self.run.avg_busbw_bytes_per_s = float(avg.group(1)) * GB
            except ValueError:
                self._problem(lineno, f"'Avg bus bandwidth' value {avg.group(1)!r} is not a number")
            self.run.concluded = True
            return
        if _looks_like_row(tokens):
            self._warn(lineno, f"a result row is commented out and not read: {body[:80]!r}")
            return
        perf = _PERF_RE.search(body)
        if perf and perf.group(1) in NCCL_TESTS_OPS:
            self.last_op_hint = NCCL_TESTS_OPS[perf.group(1)]
            if self.run.op is None and not self.default_op:
                self.run.op_hint = self.last_op_hint  # type: ignore[attr-defined]
        self._debug(body, self.run)


# ---------------------------------------------------------------------------- header facts
def _ranks_from_busbw(op: str, pairs: list[tuple[float, float]]) -> int | None:
    """Infer n from busbw/algbw = a (n-1)/n, intersecting the rounding intervals of all rows."""
    numerator = _BUSBW_NUMERATOR.get(op)
    if not numerator:
        return None
    lo_n, hi_n, used = 1.0, math.inf, 0
    for algbw, busbw in pairs:  # GB/s as printed
        if not algbw >= 1.0:
            continue
        half = 0.005  # values printed with 2 decimals (%.2f) at these magnitudes
        f_lo = (busbw - half) / (algbw + half) / numerator
        f_hi = (busbw + half) / (algbw - half) / numerator
        if f_hi >= 1.0:
            f_hi = 1.0 - 1e-12
        f_lo = max(f_lo, 0.0)
        lo_n, hi_n = max(lo_n, 1.0 / (1.0 - f_lo)), min(hi_n, 1.0 / (1.0 - f_hi))
        used += 1
    if not used or not math.isfinite(hi_n):
        return None
    candidates = range(math.ceil(lo_n - 1e-9), math.floor(hi_n + 1e-9) + 1)
    return candidates[0] if len(candidates) == 1 else None


def _run_facts(
    run: _Run, op: str, pairs: list[tuple[float, float]], meta_np: int | None
) -> dict[str, Any]:
    ranks: int | None = None
    source = "unknown"
    nodes: int | None = None
    gpus_per_node: int | None = None
    listed = sorted({r for r, _, _ in run.rank_lines})
    if listed:
        complete_list = listed == list(range(len(listed))) and not run.elided and not run.omitted
        if run.omitted:
            ranks, source = max(len(listed) + run.omitted, listed[-1] + 1), "devices+omitted"
        elif complete_list:
            ranks, source = len(listed), "devices"
        elif listed[-1] + 1 > len(listed):
            ranks, source = listed[-1] + 1, "devices (highest rank)"
        hosts: dict[str, int] = {}
        for _, host, _ in run.rank_lines:
            hosts[host] = hosts.get(host, 0) + 1
        if complete_list:
            nodes = len(hosts)
            counts = set(hosts.values())
            gpus_per_node = counts.pop() if len(counts) == 1 else None
        elif len(hosts) >= 2:
            first = next(iter(hosts.values()))
            if ranks and ranks % first == 0:
                gpus_per_node, nodes = first, ranks // first
    if ranks is None:
        for key in ("GPUS", "RANKS", "NP"):
            if key in run.markers and _INT_RE.match(run.markers[key]):
                ranks, source = int(run.markers[key]), f"marker {key}"
                break
    if ranks is None:
        inferred = _ranks_from_busbw(op, pairs)
        if inferred is not None:
            ranks, source = inferred, "busbw/algbw"
    if ranks is None and meta_np is not None:
        ranks, source = meta_np, "command -np"
    if ranks is None and run.nthread and run.ngpus and not run.rank_lines:
        ranks, source = run.nthread * run.ngpus, "nThread*nGpus"
    if (
        ranks is not None
        and nodes is None
        and listed
        and len({h for _, h, _ in run.rank_lines}) == 1
        and ranks == len(listed)
        and not run.elided
    ):
        nodes, gpus_per_node = 1, ranks
    devices = sorted({d for _, _, d in run.rank_lines if d})
    return {
        "ranks": ranks,
        "ranks_source": source,
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        # nccl-tests' -g: GPUs one thread drives (its launches are serialised on that thread)
        "gpus_per_process": run.ngpus,
        "device": "; ".join(devices) if devices else None,
    }


def _op_from_rows(rows: list[list[str]], layout: _Layout) -> str | None:
    """Last resort: redop/root tell reduce and broadcast apart from the rest."""
    if "root" not in layout.preamble or not rows:
        return None
    redop, root = rows[0][3], rows[0][4]
    if root != "-1":
        return "broadcast" if redop == "none" else "reduce"
    return None


def _number(token: str) -> float:
    return math.nan if token == "N/A" else float(token)


_FLOAT_COLUMNS = (
    "time_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "max_error",
    "iter_min_s",
    "iter_max_s",
    "iter_p99_s",
    "iter_cv_pct",
)
# block column -> (frame column, scale to SI)
_BLOCK_COLUMNS = {
    "time": ("time_s", US),
    "algbw": ("algbw_bytes_per_s", GB),
    "busbw": ("busbw_bytes_per_s", GB),
    "error": ("max_error", 1.0),
    "i_min": ("iter_min_s", US),
    "i_max": ("iter_max_s", US),
    "i_p99": ("iter_p99_s", US),
    "i_cv": ("iter_cv_pct", 1.0),
}


def _check_sizes(parser: _Parser, run: _Run, layout: _Layout) -> None:
    """Warn where a run's sizes are not what nccl-tests prints: strictly increasing per
    (type, redop, root), by the run's ``step`` (``-f`` factor or ``-i`` bytes) when the header
    gives it. Finds duplicated rows, swapped lines, a second run pasted in without its preamble
    and missing rows; each finding names its line (the first :data:`MAX_LISTED` one by one)."""
    pre = {name: i for i, name in enumerate(layout.preamble)}
    key_at = [pre[n] for n in ("type", "redop", "root") if n in pre]
    last: dict[tuple[str, ...], tuple[int, int]] = {}  # key -> (size, line)
    seen: dict[tuple[Any, ...], int] = {}
    duplicates = disorder = 0
    for lineno, tokens in run.rows:
        if not _INT_RE.match(tokens[0]):
            continue
        size = int(tokens[0])
        if size == 0:  # nccl-tests prints size 0 once per step while size / ranks rounds to 0
            continue
        key = tuple(tokens[i] for i in key_at)
        if (key, size) in seen:
            duplicates += 1
            if duplicates <= MAX_LISTED:
                parser._warn(
                    lineno, f"duplicate row: size {size} already at line {seen[key, size]}"
                )
        elif key in last and size < last[key][0]:
            disorder += 1
            if disorder <= MAX_LISTED:
                parser._warn(
                    lineno,
                    f"sizes out of order: {size} after {last[key][0]} (line {last[key][1]}); "
                    "nccl-tests prints increasing sizes (swapped lines or a second run pasted in)",
                )
        elif key in last and run.step is not None and size > 0:
            step, kind = run.step
            prev = last[key][0]
            gap = size / prev if kind == "factor" and prev > 0 else (size - prev) / max(step, 1)
            expected = step if kind == "factor" else 1
            if step > 1 and gap > 1.5 * expected:
                parser._warn(
                    lineno,
                    f"size {size} follows {prev} (line {last[key][1]}), the header's step is "
                    f"{step} ({kind}): rows are missing",
                )
        seen.setdefault((key, size), lineno)
        last[key] = (size, lineno)
    for count, what in ((duplicates, "duplicate rows"), (disorder, "out-of-order rows")):
        if count > MAX_LISTED:
            parser._warn(run.line, f"{count} {what} in the run starting at line {run.line}")


def _build(parser: _Parser) -> pd.DataFrame:
    meta_np = None
    command = next((v for k, v in parser.meta.items() if k.upper().startswith("COMMAND")), None)
    if command:
        match = _NP_RE.search(command)
        meta_np = int(match.group(1)) if match else None
    meta_env: dict[str, str] = {}  # NCCL_ALGO/PROTO set on a command line or env in the header
    for key, value in parser.meta.items():
        if key.upper().startswith(("COMMAND", "ENV")):
            for match in re.finditer(r"\b(NCCL_(?:ALGO|PROTO))=([\w,^;:]+)", value):
                meta_env[match.group(1)] = match.group(2)
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    runs_info: list[dict[str, Any]] = []
    run_number = 0
    for run in parser.runs:
        layout = run.layout
        if not run.rows or layout is None:  # rows are only accepted with a layout
            continue
        _check_sizes(parser, run, layout)
        if not run.concluded:
            parser._warn(
                run.rows[-1][0],
                f"the run starting at line {run.line} ends without nccl-tests' footer "
                "('# Out of bounds values', '# Avg bus bandwidth'): the log may be cut off",
            )
        op = (
            parser.default_op
            or run.op
            or getattr(run, "op_hint", None)
            or parser.last_op_hint
            or parser.fallback_op
            or _op_from_rows([t for _, t in run.rows], layout)
            or "unknown"
        )
        for key, value in meta_env.items():
            run.env.setdefault(key, value)
        failed = run.out_of_bounds_ok is False
        failed_reason = f"out of bounds values: {run.out_of_bounds} FAILED"
        pre = {name: i for i, name in enumerate(layout.preamble)}
        base = len(layout.preamble)
        blocks = []
        offset = base
        for placement, block in zip(("out_of_place", "in_place"), layout.blocks, strict=False):
            blocks.append((placement, offset, block))
            offset += len(block)
        i_type, i_redop, i_root = pre.get("type"), pre.get("redop"), pre.get("root")
        start = len(columns["run"])
        bw_pairs: list[tuple[float, float]] = []
        for lineno, tokens in run.rows:
            try:
                size, count = int(tokens[0]), int(tokens[1])
                root = int(tokens[i_root]) if i_root is not None else None
                values = [_number(t) for t in tokens[base:]]
            except ValueError as exc:
                parser._problem(lineno, f"result row field is not a number ({exc})")
                continue
            tuning = run.tuning.get(size, (None, None))
            for placement, first, block in blocks:
                fields = dict.fromkeys(_FLOAT_COLUMNS, math.nan)
                wrong = None
                for j, name in enumerate(block):
                    value = values[first - base + j]
                    if name == "wrong":
                        wrong = None if math.isnan(value) else int(value)
                    elif name in _BLOCK_COLUMNS:
                        column, scale = _BLOCK_COLUMNS[name]
                        fields[column] = value * scale
                for column, value in fields.items():
                    columns[column].append(value)
                bw_pairs.append(
                    (fields["algbw_bytes_per_s"] / GB, fields["busbw_bytes_per_s"] / GB)
                )
                reasons = [f"#wrong={wrong}"] if wrong else []
                if failed:
                    reasons.append(failed_reason)
                columns["size_bytes"].append(size)
                columns["count"].append(count)
                columns["dtype"].append(tokens[i_type] if i_type is not None else None)
                columns["redop"].append(tokens[i_redop] if i_redop is not None else None)
                columns["root"].append(root)
                columns["placement"].append(placement)
                columns["wrong"].append(wrong)
                columns["flagged"].append(bool(reasons))
                columns["flag_reason"].append("; ".join(reasons) or None)
                columns["line"].append(lineno)
                columns["nccl_algo"].append(tuning[0])
                columns["nccl_proto"].append(tuning[1])
        added = len(columns["size_bytes"]) - start
        if not added:
            continue
        facts = _run_facts(run, op, bw_pairs, meta_np)
        constant = {
            "run": run_number,
            "op": op,
            "nccl_version": run.nccl_version,
            "nccl_tests_version": run.nccl_tests_version,
            "algo_env": run.env.get("NCCL_ALGO"),
            "proto_env": run.env.get("NCCL_PROTO"),
            "timer": layout.timer,
            "run_label": run.label,
            **facts,
        }
        for name, value in constant.items():
            columns[name].extend([value] * added)
        runs_info.append(
            {
                "run": run_number,
                "line": run.line,
                "op": op,
                **facts,
                "label": run.label,
                "nthread": run.nthread,
                "ngpus": run.ngpus,
                "markers": dict(run.markers),
                "env": dict(run.env),
                "nccl_version": run.nccl_version,
                "nccl_tests_version": run.nccl_tests_version,
                "hosts": sorted({h for _, h, _ in run.rank_lines}),
                "ranks_busbw": _ranks_from_busbw(op, bw_pairs),
                "out_of_bounds": run.out_of_bounds,
                "out_of_bounds_ok": run.out_of_bounds_ok,
                "avg_busbw_bytes_per_s": run.avg_busbw_bytes_per_s,
            }
        )
        run_number += 1
    if not columns["run"]:
        raise NcclTestsParseError(0, "no result row could be read", parser.source)
    kinds = {(info["op"], info["ranks"], info["nodes"]) for info in runs_info}
    if len(kinds) > 1:
        listed = ", ".join(
            f"line {info['line']}: {info['op']} on {info['ranks']} ranks" for info in runs_info
        )
        parser._warn(0, f"mixed runs in one file ({listed[:300]}); compare them one by one")
    return _frame(columns, parser.source, parser.meta, runs_info, parser.problems, parser.warnings)


def _frame(records, source, meta, runs_info, problems, warnings=()) -> pd.DataFrame:
    import pandas as pd

    if isinstance(records, dict):
        df = pd.DataFrame(records, columns=list(COLUMNS))
    else:
        df = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    for name in ("root", "wrong", "ranks", "nodes", "gpus_per_node", "gpus_per_process"):
        df[name] = df[name].astype("Int64")
    for name in ("size_bytes", "count", "run", "line"):
        df[name] = df[name].astype("int64")
    df["flagged"] = df["flagged"].astype(bool)
    for name in (
        "op",
        "dtype",
        "redop",
        "placement",
        "flag_reason",
        "ranks_source",
        "nccl_version",
        "nccl_tests_version",
        "algo_env",
        "proto_env",
        "nccl_algo",
        "nccl_proto",
        "timer",
        "run_label",
        "device",
    ):
        column = df[name].astype(object)
        df[name] = column.where(column.notna(), None)
    for name in (
        "time_s",
        "algbw_bytes_per_s",
        "busbw_bytes_per_s",
        "max_error",
        "iter_min_s",
        "iter_max_s",
        "iter_p99_s",
        "iter_cv_pct",
    ):
        df[name] = df[name].astype("float64")
    df.attrs["source"] = source
    df.attrs["meta"] = meta
    df.attrs["runs"] = runs_info
    df.attrs["problems"] = [{"line": line, "message": msg} for line, msg in problems]
    df.attrs["warnings"] = [{"line": line, "message": msg} for line, msg in sorted(warnings)]
    return df


# ---------------------------------------------------------------------------- JSON (-J)
def _parse_json(data: dict[str, Any], source: str, op: str | None) -> pd.DataFrame:
    if not isinstance(data, dict) or "results" not in data:
        raise NcclTestsParseError(0, "JSON has no 'results' list: not nccl-tests -J output", source)
    devices = data.get("devices") or []
    config = data.get("config") or {}
    hosts: dict[str, int] = {}
    for device in devices:
        host = str(device.get("hostname", ""))
        hosts[host] = hosts.get(host, 0) + 1
    ranks = len(devices) or None
    nodes = len(hosts) if devices else None
    counts = set(hosts.values())
    gpus_per_node = counts.pop() if len(counts) == 1 else None
    env = {}
    for item in data.get("env") or []:
        if isinstance(item, str) and "=" in item:
            key, _, value = item.partition("=")
            env[key] = value
        elif isinstance(item, dict):
            env.update({str(k): str(v) for k, v in item.items()})
    args = " ".join(str(a) for a in data.get("args") or [])
    if op is None:
        match = _PERF_RE.search(args)
        op = NCCL_TESTS_OPS.get(match.group(1), match.group(1)) if match else None
    oob = data.get("out_of_bounds") or {}
    failed = oob.get("okay") is False
    nccl_version = data.get("nccl_version")
    if isinstance(nccl_version, int) or (isinstance(nccl_version, str) and nccl_version.isdigit()):
        nccl_version = _library_version(str(nccl_version))
    records = []
    for index, result in enumerate(data["results"]):
        if not isinstance(result, dict) or "size" not in result:
            raise NcclTestsParseError(0, f"results[{index}] has no 'size'", source)
        row_op = op or NCCL_TESTS_OPS.get(str(result.get("experiment_name", "")), "unknown")
        for placement in ("out_of_place", "in_place"):
            block = result.get(placement)
            if not block:
                continue
            time_us = block.get("time", block.get("cpu_time"))
            if time_us is None:
                raise NcclTestsParseError(0, f"results[{index}].{placement} has no time", source)
            wrong = block.get("nwrong")
            wrong = (
                None
                if wrong in (None, "N/A") or (isinstance(wrong, float) and wrong < 0)
                else int(wrong)
            )
            reasons = []
            if wrong:
                reasons.append(f"#wrong={wrong}")
            if failed:
                reasons.append(f"out of bounds values: {oob.get('count')} FAILED")
            per_iter = result.get(f"{placement}_per_iter") or {}
            records.append(
                {
                    "run": 0,
                    "op": row_op,
                    "size_bytes": int(result["size"]),
                    "count": int(result.get("count", 0)),
                    "dtype": result.get("type"),
                    "redop": result.get("redop"),
                    "root": result.get("root"),
                    "placement": placement,
                    "time_s": float(time_us) * US,
                    "algbw_bytes_per_s": float(block.get("alg_bw", math.nan)) * GB,
                    "busbw_bytes_per_s": float(block.get("bus_bw", math.nan)) * GB,
                    "wrong": wrong,
                    "max_error": math.nan,
                    "flagged": bool(reasons),
                    "flag_reason": "; ".join(reasons) or None,
                    "line": 0,
                    "ranks": ranks,
                    "ranks_source": "devices" if ranks else "unknown",
                    "nodes": nodes,
                    "gpus_per_node": gpus_per_node,
                    "gpus_per_process": config.get("ngpus"),
                    "nccl_version": nccl_version,
                    "nccl_tests_version": data.get("version"),
                    "algo_env": env.get("NCCL_ALGO"),
                    "proto_env": env.get("NCCL_PROTO"),
                    "nccl_algo": None,
                    "nccl_proto": None,
                    "timer": "cpu" if "cpu_time" in block and "time" not in block else "gpu",
                    "iter_min_s": float(per_iter.get("min_us", math.nan)) * US,
                    "iter_max_s": float(per_iter.get("max_us", math.nan)) * US,
                    "iter_p99_s": float(per_iter.get("p99_us", math.nan)) * US,
                    "iter_cv_pct": float(per_iter.get("cv_pct", math.nan)),
                    "run_label": result.get("experiment_name"),
                    "device": "; ".join(
                        sorted({str(d.get("device_info")) for d in devices if d.get("device_info")})
                    )
                    or None,
                }
            )
    if not records:
        raise NcclTestsParseError(0, "JSON 'results' holds no rows", source)
    info = [
        {
            "run": 0,
            "line": 0,
            "op": op,
            "ranks": ranks,
            "nodes": nodes,
            "gpus_per_node": gpus_per_node,
            "env": env,
            "config": config,
            "args": args,
            "hosts": sorted(hosts),
            "out_of_bounds": oob.get("count"),
            "out_of_bounds_ok": oob.get("okay"),
            "nccl_version": nccl_version,
            "nccl_tests_version": data.get("version"),
            "avg_busbw_bytes_per_s": float(
                (data.get("average_bus_bandwidth") or {}).get("bandwidth", math.nan)
            )
            * GB,
        }
    ]
    return _frame(records, source, {}, info, [])


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
        line. False: malformed rows are skipped and listed in ``df.attrs["problems"]``, so a
        truncated log still yields every complete row.

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
        rank counts in one file; duplicates and disorder are listed one by one up to
        :data:`MAX_LISTED`, then counted). Warnings never change the rows: the caller decides.

    Raises
    ------
    NcclTestsParseError
        Empty input, no result rows, or (strict) a malformed or cut-off row, or a line that looks
        like a result row but cannot be read; the message names the line. Also: a log over
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
            f"op={op!r} is not an nccl-tests op; use one of {sorted(set(NCCL_TESTS_OPS.values()))}"
        )
    head = text.lstrip()
    if head.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
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
    parser = _Parser(source, op, strict, _fallback_op)
    in_meta = True
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if len(raw) > MAX_LINE_CHARS:
            raise NcclTestsParseError(
                lineno,
                f"line is {len(raw):,} characters long; the limit is {MAX_LINE_CHARS:,} "
                "(nccl-tests lines are < 300): not an nccl-tests log",
                source,
            )
        if in_meta:
            stripped = _strip_prefix(raw).strip()
            if stripped and not stripped.startswith("#"):
                in_meta = False
            elif (
                _MARKER_RE.match(stripped)
                or _SEPARATOR_RE.match(stripped)
                or _RANK_RE.match(stripped)
                or stripped.lstrip("#").strip().startswith(_TABLE_STARTS)
            ):
                in_meta = False
        parser.feed(raw, lineno, in_meta)
    parser._flush()
    if not any(run.rows for run in parser.runs):
        problems = "; ".join(f"line {line}: {msg}" for line, msg in parser.problems[:3])
        raise NcclTestsParseError(
            0,
            "no nccl-tests result rows found (expected lines like '  1048576  262144  float  "
            "sum  -1  35.12  29.86  52.25  0 ...')"
            + (f"; {problems}" if problems else "")
            + (
                "; this is a busbw-only markdown table: read it with read_busbw_table"
                if is_busbw_table(text)
                else ""
            ),
            source,
        )
    return _build(parser)


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


def decode_log(data: bytes, source: str = "<bytes>") -> str:
    """Decode a log's bytes as UTF-8 (a leading BOM is dropped).

    Raises :class:`NcclTestsParseError` naming the byte offset when the bytes are not UTF-8
    (nccl-tests writes ASCII; a log re-saved as UTF-16 or Latin-1 must be converted first), or
    when the data exceed :data:`MAX_LOG_BYTES`.
    """
    if len(data) > MAX_LOG_BYTES:
        raise NcclTestsParseError(
            0, f"file is {len(data):,} bytes; the limit is {MAX_LOG_BYTES:,}", source
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NcclTestsParseError(
            0,
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be "
            "decoded (save the log as UTF-8 or ASCII)",
            source,
        ) from exc


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


# --- busbw-only markdown tables ----------------------------------------------------------------
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
            f"op={op!r} is not an nccl-tests op; use one of {sorted(set(NCCL_TESTS_OPS.values()))}",
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
