"""Line-level recognition of nccl-tests text output: prefixes, patterns, column layouts, a run.

Everything here looks at one line (or one row's tokens) at a time; :mod:`._text` strings the
lines together into runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------- patterns
_PREFIX_RE = re.compile(
    r"^\s*(?:"
    r"\[\d+,\d+\]<std(?:out|err)>:"  # mpirun --tag-output
    r"|\d+:(?=\s|#|$)"  # srun -l, mpirun -l style "0: "
    r"|\[\d+\](?=\s)"  # "[0] "
    r"|\[pod/[^\]\s]+\](?=\s)"  # kubectl logs --prefix: "[pod/NAME/CONTAINER] "
    r")\s?"
)
_TIMESTAMP_RE = re.compile(
    r"^(?:\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}[: ]?\s*"  # mpirun --timestamp-output
    # kubectl logs --timestamps, docker logs -t: RFC 3339, "2024-05-01T10:00:00.123456789Z "
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) "
    # moreutils' ts (output piped through it): its default "Dec 05 02:00:13 ", and the
    # "2026-12-05 02:00:13 " or "[2026-12-05 02:00:13] " a format string gives it
    r"|[A-Z][a-z]{2} +\d\d? \d\d:\d\d:\d\d(?:\.\d+)? "
    r"|\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\]? )"
)
# Every pattern below is linear in the line length: a variable-length run is anchored (``^``) or
# preceded by a look-behind that rules out starting inside the same run, so a 1 MB line without
# spaces cannot make the engine retry from every offset (a 200 kB line hung the app).
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
_INT_RE = re.compile(r"^-?\d+$")
_NUM_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_NTHREAD_STEP_RE = re.compile(r"step:\s*(\d+)\((factor|bytes)\)")
# nccl-tests -G N: each timed iteration's ops captured in a CUDA graph and replayed N times
_GRAPH_RE = re.compile(r"\bgraph:\s*(\d+)")
# nccl-tests -m N: N ops aggregated into one group per iteration (one launch for N ops)
_AGG_RE = re.compile(r"\bagg iters:\s*(\d+)")

#: nccl-tests -S 1 (``--report_timestamps``, v2.17.6+): the column header ends in ``timestamp``
#: and every row in the time it was printed, strftime's ``"%Y-%m-%d %H:%M:%S"`` (src/util.cu
#: TIME_STRING_FORMAT, writeTimestamp): two fields after the last block, no measurement
_TIMESTAMP_COLUMN = "timestamp"
_ROW_DATE_RE = re.compile(r"^\d{4}-\d\d-\d\d$")
_ROW_CLOCK_RE = re.compile(r"^\d\d:\d\d:\d\d$")

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


#: Tags one line can carry, one over the other: a log collector's over a launcher's
#: (``kubectl logs --prefix`` of an MPI Operator launcher running ``mpirun --tag-output``:
#: ``[pod/launcher/mpi] [1,0]<stdout>:``), or ``srun --label`` of a job step started by another
_MAX_TAGS = 3


def _strip_prefix(line: str) -> str:
    """``line`` without what a launcher or log collector put before nccl-tests' text: a
    timestamp, then a tag (``0: ``, ``[1,0]<stdout>:``, ``[pod/NAME/CONTAINER] ``); kubectl's
    ``--prefix --timestamps`` puts the tag first, so a timestamp after the tag goes too. Tags
    stacked by two tools (:data:`_MAX_TAGS` at most) all go: a collector's over a launcher's.

    >>> _strip_prefix("[pod/launcher/mpi] 2024-05-01T10:00:00.5Z #  Rank  0 Group  0")
    '#  Rank  0 Group  0'
    >>> _strip_prefix("2024-05-01T10:00:00+02:00        8     2   float")
    '       8     2   float'
    >>> _strip_prefix("[pod/launcher/mpi] [1,0]<stdout>:       8     2   float")
    '      8     2   float'
    >>> _strip_prefix("Dec 05 02:00:13 #  Rank  0 Group  0")
    '#  Rank  0 Group  0'
    """
    line = _TIMESTAMP_RE.sub("", line, count=1)
    for _ in range(_MAX_TAGS):
        match = _PREFIX_RE.match(line)
        if not match:
            break
        line = _TIMESTAMP_RE.sub("", line[match.end() :], count=1)
    return line


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
        if token == _TIMESTAMP_COLUMN and blocks:  # -S 1: the rows' print time, read past
            continue
        if token in _TIME_NAMES:
            timer = _TIME_NAMES[token]
            blocks.append(["time"])
        elif blocks:
            blocks[-1].append(_BLOCK_NAMES.get(token, token))
        else:
            preamble.append(token)
    return _Layout(preamble, blocks, timer)


def _without_timestamp(tokens: list[str]) -> list[str]:
    """A row's fields without the ``YYYY-MM-DD HH:MM:SS`` nccl-tests -S 1 prints after its last
    block (src/util.cu writeTimestamp: ``%21s`` of strftime's ``"%Y-%m-%d %H:%M:%S"``); a row
    without one is returned as it is.

    >>> _without_timestamp(["8", "2", "float", "0", "2026-12-05", "02:00:13"])
    ['8', '2', 'float', '0']
    """
    if len(tokens) > 2 and _ROW_DATE_RE.match(tokens[-2]) and _ROW_CLOCK_RE.match(tokens[-1]):
        return tokens[:-2]
    return tokens


def _layout_from_count(tokens: list[str]) -> _Layout | None:
    """Guess the layout of a row seen without a column header (by its token count)."""
    n = len(tokens)
    for pre in (["size", "count", "type", "redop", "root"], ["size", "count", "type", "redop"]):
        rest = n - len(pre)
        if len(pre) == 5 and (n < 5 or not _INT_RE.match(tokens[4])):  # a row cut short
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
    #: the op a command line before the run names (``./build/all_gather_perf``), below ``op``
    op_hint: str | None = None
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
    #: the placements the title over the column blocks names, in order (None: no title line)
    placements: list[str] | None = None
    #: (line, text) of a comment line under the column header made of column names only
    #: ("#  time algbw busbw #wrong"): the header wrapped in two, said by the row refusal
    header_wrap: tuple[int, str] | None = None

    @property
    def started(self) -> bool:
        return bool(self.rows) or self.concluded


def looks_like_nccl_tests(line: str) -> bool:
    """True for a line of the head nccl-tests prints before its rows (``# nThread 1 nGpus 8``,
    ``# Collective test starting: all_reduce_perf``, ``# nccl-tests version``, ``# Using
    devices``, the table's ``#  out-of-place  in-place`` and ``#  size  count`` lines), after
    a launcher's prefix (``0: ``, ``[1,0]<stdout>:``, a timestamp): how a file that holds such a
    log is told from other text, e.g. one named ``.jsonl`` and read as results."""
    body = _strip_prefix(line).strip()
    if not body.startswith("#"):
        return False
    body = body.lstrip("#").strip()
    return body.startswith((*_TABLE_STARTS, "out-of-place"))
