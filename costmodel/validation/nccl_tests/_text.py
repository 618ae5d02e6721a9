"""The text-log reader: lines -> runs (preamble, column header, rows, footer, debug lines).

:func:`read_lines` feeds a log line by line to :class:`_Parser`; :func:`._build._build` turns the
runs into the frame.
"""

from __future__ import annotations

import re

from costmodel.units import GB

from ._common import MAX_LINE_CHARS, NCCL_TESTS_OPS, NcclTestsParseError, _library_version
from ._findings import _Findings
from ._launch import _LAUNCH_RE
from ._lexer import (
    _AGG_RE,
    _AVG_RE,
    _BLOCK_NAMES,
    _DEBUG_RE,
    _ENV_SET_RE,
    _GRAPH_RE,
    _INT_RE,
    _MARKER_RE,
    _META_RE,
    _NCCL_VERSION_RE,
    _NTHREAD_RE,
    _NTHREAD_STEP_RE,
    _NUM_RE,
    _OMITTED_RE,
    _OOB_RE,
    _PERF_RE,
    _RANK_RE,
    _SEPARATOR_RE,
    _STARTING_RE,
    _TABLE_STARTS,
    _TESTS_VERSION_RE,
    _TIME_NAMES,
    _TIMESTAMP_RE,
    _TUNING_RE,
    _Layout,
    _layout_from_count,
    _layout_from_header,
    _looks_like_row,
    _Run,
    _strip_prefix,
    _without_timestamp,
)

#: The units nccl-tests prints under its column header (src/common.cu writeResultHeader: size
#: in bytes, count in elements, time in microseconds, bandwidths in GB/s, -I's i_cv in
#: percent), the ones this reader converts from; a units line naming another (a tool printing ms or MB/s, an edited log) would
#: have every row misread by a factor of 1000, so it is refused naming its line.
_NCCL_TESTS_UNITS = frozenset({"(B)", "(elements)", "(us)", "(GB/s)", "(%)"})
_UNIT_RE = re.compile(r"\([^()\s]*\)")

#: NCCL's own warnings (``host:pid:tid [dev] NCCL WARN ...``, printed whatever NCCL_DEBUG is):
#: a failed network operation, a transport that fell back, an allocation that failed
_NCCL_WARN_RE = re.compile(r"\bNCCL WARN\b.*")

#: nccl-tests' own failure lines (src/common.h: NCCLCHECK prints ``host: Test NCCL failure
#: file:line 'error / last error'``, CUDACHECK ``host: Test CUDA failure file:line 'error'``,
#: TESTCHECK `` .. host pid N: Test failure file:line``): the test returns on its first one, so
#: no size after it was measured (an NCCL error mid-sweep: a network failure, a timeout).
#: The file and line number are part of the match (nccl-tests prints ``%s:%d`` there), so a
#: document quoting the format (a README's ``Test NCCL failure common.cu:N``) is no failure
_TEST_FAILURE_RE = re.compile(r"\bTest (?:NCCL |CUDA )?failure [^\s:]+:\d+\b.*")

#: The title line over nccl-tests' column blocks (``#  out-of-place  in-place``): each block's
#: placement, in order
_PLACEMENT_TITLES = {"out-of-place": "out_of_place", "in-place": "in_place"}
#: Column names a wrapped column header's second line is made of ("time algbw busbw #wrong").
_WRAPPED_NAMES = frozenset({*_TIME_NAMES, *(n.lstrip("#") for n in _BLOCK_NAMES)})

#: the columns nccl-tests prints before its first time column
_PREAMBLE_NAMES = frozenset({"size", "count", "type", "redop", "root"})


def _unknown_columns(layout: _Layout) -> list[str]:
    """The names of a column header this reader does not know (``_BLOCK_NAMES``, the
    preamble's), each once, in order."""
    known = set(_BLOCK_NAMES.values()) | {"time"}
    names = [n for n in layout.preamble if n not in _PREAMBLE_NAMES]
    names += [n for block in layout.blocks for n in block if n not in known]
    return list(dict.fromkeys(names))


#: Fields of the shortest result row nccl-tests prints (size count type redop, 2 x 4 block
#: fields): a row at the end of the file with fewer was cut off there.
_SHORTEST_ROW = 12


class _Parser(_Findings):
    """Reads the lines of a text log into runs (:class:`._lexer._Run`), one line at a time."""

    def __init__(self, source: str, op: str | None, strict: bool, fallback_op: str | None) -> None:
        super().__init__(source, strict)
        self.default_op = op
        self.fallback_op = fallback_op
        self.runs: list[_Run] = []
        self.meta: dict[str, str] = {}
        self.hosts: set[str] = set()
        self.last_op_hint: str | None = op
        self.pending: list[str] | None = None
        self.pending_line = 0
        self.pending_run: _Run | None = None
        self.pending_end = 0  # the last physical line of the pending row
        #: the log's last non-blank line (set by :func:`read_lines` before the first line)
        self.last_line = 0
        #: (line, message) of a result row the end of the file cut off, if any (see _cut_at_end)
        self.cut_row: tuple[int, str] | None = None
        #: lines of the log proper that name a launcher (``+ srun ...``), the first few
        self.launch_lines: list[str] = []
        #: NCCL_ALGO/PROTO/NVLS_ENABLE/COLLNET_ENABLE a launch pins: name -> (value, where
        #: read), the first of each (:func:`_pinned_env`)
        self.line_env: dict[str, tuple[str, str]] = {}
        #: (line, text) of NCCL's WARN lines in the log proper: said once, as one finding
        self.nccl_warns: list[tuple[int, str]] = []
        #: (line, text) of nccl-tests' ``# error: ...`` line (NCCL's last error): said once
        self.nccl_errors: list[tuple[int, str]] = []
        #: (line, text) of '#' comments after a result row's fields: said once
        self.row_comments: list[tuple[int, str]] = []
        #: the placements of the last "#  out-of-place  in-place" title, for the next header
        self.placement_title: list[str] | None = None
        #: (line, text) of nccl-tests' failure lines (``Test NCCL failure``): said once
        self.test_failures: list[tuple[int, str]] = []
        #: the op of a command line read after a run's rows: the next run's (see _command_line)
        self.next_op_hint: str | None = None
        self.run = self._new_run(1)

    # -- run bookkeeping
    def _new_run(self, line: int) -> _Run:
        run = _Run(index=len(self.runs), line=line, op_hint=self.next_op_hint)
        if self.next_op_hint is not None:  # the command line before this run: its op
            self.last_op_hint, self.next_op_hint = self.next_op_hint, None
        self.runs.append(run)
        return run

    def _command_line(self, op: str) -> None:
        """A line naming an nccl-tests binary (``# ./build/all_gather_perf -b 8``, a shell's
        ``+ ./build/all_gather_perf`` trace or prompt line): the op of the run it starts. After
        a run's rows it starts the next run (logs of several binaries concatenated, each after
        its command line): each run took the op of the command line after it. One that no
        run follows (the job's next command, killed before its output) names no run's op."""
        if self.default_op:
            return
        if self.run.started:
            self.next_op_hint = op
            return
        self.last_op_hint = op
        if self.run.op is None:
            self.run.op_hint = op

    def _boundary(self, line: int) -> _Run:
        self._flush()
        if self.run.started:
            self.run = self._new_run(line)
        return self.run

    # -- rows
    def _flush(self) -> None:
        if self.pending is None:
            return
        tokens, line, run = self.pending, self.pending_line, self.pending_run
        self.pending = None
        if run is None:
            return
        tokens = _without_timestamp(tokens)
        layout = run.layout or _layout_from_count(tokens)
        if self.pending_end == self.last_line and len(tokens) < (
            layout.width if layout else _SHORTEST_ROW
        ):
            self._cut_at_end(line, tokens)
            return
        if layout is None or len(tokens) != layout.width:
            expected = f"{layout.width} fields" if layout else "a known nccl-tests row layout"
            why = "a cut-off or joined row"
            if run.layout is not None and run.header_wrap is not None:
                wrap_line, wrap_text = run.header_wrap
                why = (
                    f"the column header at line {run.header_line} looks wrapped: line "
                    f"{wrap_line} continues it with {wrap_text[:60]!r}; join the two lines "
                    "into one"
                )
            elif run.layout is not None and len(tokens) > run.layout.width:
                why = (
                    f"the column header at line {run.header_line} names fewer columns than "
                    "the row has: it looks wrapped or cut short"
                )
            self._problem(
                line,
                f"result row has {len(tokens)} fields, expected {expected} ({why}): "
                f"{' '.join(tokens)[:80]!r}",
            )
            return
        if not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])):
            self._problem(line, f"size and count must be integers: {' '.join(tokens[:2])!r}")
            return
        if tokens[0].startswith("-") or tokens[1].startswith("-"):
            # nccl-tests prints the size_t size and count with "%12li" (src/util.cu
            # writeBenchmarkLinePreamble): a negative one is a number that wrapped (a long of
            # 32 bits, as on Windows, past 2 GiB), not a size; read, it was a negative message
            self._problem(
                line,
                f"size and count must be >= 0, got {' '.join(tokens[:2])!r}: a size printed "
                "through a 32-bit integer wraps negative past 2 GiB (nccl-tests prints it with "
                "%li, 32 bits on Windows): rerun with sizes up to 1 GiB (-e 1G)",
            )
            return
        if run.layout is None:
            run.layout = layout
        run.rows.append((line, tokens))

    def _cut_at_end(self, line: int, tokens: list[str]) -> None:
        """A result row the end of the file cut off (a log copied or written out before the run
        finished): skipped in strict and lenient parses alike, and said once, naming its line.

        Decision: a truncated file keeps its complete rows everywhere (``validate compare``,
        the Validate page, ``calibrate``), instead of the whole file being refused by one
        surface and read by another; a malformed row *inside* the log is still a problem
        (strict: an error naming its line)."""
        message = (
            f"the log ends in the middle of a result row (the file is cut off): that row is "
            f"skipped, the complete rows before it are read: {' '.join(tokens)[:80]!r}"
        )
        self.cut_row = (line, message)
        self._warn(line, message)

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
        version = _NCCL_VERSION_RE.search(text)
        if version and run.nccl_version is None:
            run.nccl_version = version.group(1)

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
                if not self.default_op:  # the first binary the head names: the first run's
                    self.run.op_hint = self.last_op_hint
            return
        if stripped.startswith("#"):
            self._comment(stripped, lineno)
            return
        body, debug = self._cut_debug(text, self.run, lineno)
        if debug:
            self._debug(debug, self.run)
        tokens = body.split()
        if not tokens or self._header_wrapped(tokens, lineno):
            return
        comment = next((i for i, t in enumerate(tokens) if t.startswith("#")), None)
        if comment is not None and comment >= 3 and _INT_RE.match(tokens[0]):
            # "  1048576  262144  float ... 0   # after the NIC swap": a note someone added
            # after a row (nccl-tests prints none there); the row is read without it, said once.
            # Before a row's last field it is no note: a row cut off and the next file's header
            # joined to it (two logs concatenated), skipped as a cut-off row and said so only
            width = self.run.layout.width if self.run.layout is not None else 0
            if comment >= width:
                self.row_comments.append((lineno, " ".join(tokens[comment:])))
            tokens = tokens[:comment]
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
            self.pending_line = self.pending_end = lineno
            self.pending_run = self.run
            self._maybe_complete()
            return
        if self.pending is not None and all(_NUM_RE.match(t) or t == "N/A" for t in tokens):
            self.pending.extend(tokens)
            self.pending_end = lineno
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
            if lineno == self.last_line and _INT_RE.match(tokens[0]):
                self._cut_at_end(lineno, tokens)  # "  2147483648  53687" at the end of the file
            else:
                self._problem(lineno, f"cut-off result row: {body.strip()[:80]!r}")
            return
        if not debug and _looks_like_row(tokens, need_ints=False):
            self._problem(
                lineno, f"line looks like a result row but cannot be read: {body.strip()[:80]!r}"
            )
            return
        perf = None if debug else _PERF_RE.search(body)
        if perf and perf.group(1) in NCCL_TESTS_OPS:  # "+ ./build/all_gather_perf -b 8 ..."
            self._command_line(NCCL_TESTS_OPS[perf.group(1)])
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

    def _header_wrapped(self, tokens: list[str], lineno: int) -> bool:
        """True for a line of column names only under the column header ("#  time algbw busbw
        #wrong", with its '#' or without): the header's own line broken in two (a terminal or
        a web page wrapped it), kept for the rows' field-count refusal to say so."""
        run = self.run
        if (
            tokens
            and run.header_line is not None
            and run.layout is not None
            and not run.rows
            and self.pending is None
            and all(t.lstrip("#") in _WRAPPED_NAMES for t in tokens)
        ):
            run.header_wrap = (lineno, " ".join(tokens))
            return True
        return False

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
        if self._header_wrapped(tokens, lineno):
            return
        if tokens and set(tokens) <= _PLACEMENT_TITLES.keys():  # "#  out-of-place  in-place"
            # the title over the column blocks names their placement: a table with one block
            # titled "in-place" holds in-place rows, not the out-of-place ones a first block is;
            # taken by the column header that follows it
            self.placement_title = [_PLACEMENT_TITLES[t] for t in tokens]
            return
        if tokens[:1] == ["(B)"]:  # the units line under the column header
            other = [u for u in _UNIT_RE.findall(body) if u not in _NCCL_TESTS_UNITS]
            if other:
                raise NcclTestsParseError(
                    lineno,
                    f"the units line names {', '.join(dict.fromkeys(other))}: nccl-tests prints "
                    "time in (us) and bandwidths in (GB/s), the units this reader converts "
                    "from; a log of another tool or an edited one is not read",
                    self.source,
                )
            return
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
            layout: _Layout | None = _layout_from_header(tokens)
            if layout is not None and any(t in _BLOCK_NAMES for t in layout.preamble):
                self._warn(
                    lineno,
                    "column header has algbw/busbw columns before its first time column (a "
                    "damaged header): the row layout is taken from the rows' field count",
                )
                layout = None
            run.layout = layout
            run.header_line = lineno
            run.placements, self.placement_title = self.placement_title, None
            unknown = _unknown_columns(layout) if layout is not None else []
            if unknown:  # a newer nccl-tests' or another tool's: read past, said
                self._warn(
                    lineno,
                    f"column header names {', '.join(unknown)}, not a column this reader "
                    "knows (size count type redop root, then time algbw busbw #wrong per "
                    "placement, -I's i_min i_max i_p99 i_cv%): read past, each row's time, "
                    "algbw and busbw are taken by their names",
                )
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
            graph = _GRAPH_RE.search(body)
            if graph and int(graph.group(1)) > 0:
                # the launch floor the model adds (one host launch per op) was fitted on eager
                # runs only (every bundled log: graph: 0); a CUDA graph replays without it
                self._warn(
                    lineno,
                    f"the run timed CUDA graphs (graph: {graph.group(1)}, nccl-tests -G): the "
                    "model's per-op launch floor is fitted on eager launches (graph: 0), so "
                    "small sizes, where that floor counts, may be predicted slower than they ran",
                )
            agg = _AGG_RE.search(body)
            if agg and int(agg.group(1)) > 1:
                self._warn(
                    lineno,
                    f"the run aggregated {agg.group(1)} ops per launch (agg iters: "
                    f"{agg.group(1)}, nccl-tests -m): the model's per-op launch floor is fitted "
                    "on one op per launch (agg iters: 1), so small sizes, where that floor "
                    "counts, may be predicted slower than they ran",
                )
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
        if body.startswith("error:") and body[6:].strip():
            # "# error: ..." closes the log when NCCL kept an error string (src/util.cu
            # writeErrors: ncclGetLastError after the run), said once by read_lines
            self.nccl_errors.append((lineno, body[6:].strip()))
            return
        if _looks_like_row(tokens):
            self._warn(lineno, f"a result row is commented out and not read: {body[:80]!r}")
            return
        perf = _PERF_RE.search(body)
        if perf and perf.group(1) in NCCL_TESTS_OPS:
            self._command_line(NCCL_TESTS_OPS[perf.group(1)])
        self._debug(body, self.run)


#: The task a launcher's tag names (``srun --label``'s ``0: ``, mpirun ``--tag-output``'s
#: ``[1,0]<stdout>:``, Hydra's ``[0] ``), and a result row after it: nccl-tests started under
#: MPI prints its table from rank 0 only, so rows under two tags are tasks that each ran a test
_TASK_TAG_RE = re.compile(r"^\s*(?:\[\d+,(\d+)\]<std(?:out|err)>:|(\d+):(?=\s)|\[(\d+)\](?=\s))")
_TAGGED_ROW_RE = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]\w*\s+\S+\s+-?\d+\s+[\d.]+\s")
#: A log collector's tag over the launcher's (``kubectl logs --prefix``: ``[pod/NAME/C] ``)
_COLLECTOR_TAG_RE = re.compile(r"^\s*\[pod/[^\]\s]+\]\s?")


def _under_collector(raw: str) -> str:
    """``raw`` without a timestamp and a log collector's tag before the launcher's task tag
    (``[pod/launcher/mpi] [1,0]<stdout>:``): the task is the launcher's, the tag under it."""
    line = _TIMESTAMP_RE.sub("", raw, count=1)
    collector = _COLLECTOR_TAG_RE.match(line)
    if collector:
        line = _TIMESTAMP_RE.sub("", line[collector.end() :], count=1)
    return line


def _check_one_task(lines: list[str], source: str) -> None:
    """Refuse a log whose result rows come from several launcher tasks (``srun -n 2`` or
    ``mpirun`` of an nccl-tests built without MPI: each task runs its own test on its own
    GPUs, so their interleaved rows are no run of all the ranks), naming the first row of the
    second task; read as one run they were duplicates of each other."""
    first: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        line = _under_collector(raw)
        tag = _TASK_TAG_RE.match(line)
        if tag is None or not _TAGGED_ROW_RE.match(line[tag.end() :].lstrip(" ")):
            continue
        task = next(g for g in tag.groups() if g is not None)
        first.setdefault(task, lineno)
        if len(first) > 1:
            tasks = ", ".join(sorted(first, key=int))
            raise NcclTestsParseError(
                lineno,
                f"result rows from {len(first)} launcher tasks (tags {tasks}): each task ran its "
                "own nccl-tests (a build without MPI started once per task, e.g. srun -n 2), "
                "not one test over all ranks; rerun nccl-tests built with MPI=1, or compare one "
                f"task's lines (those tagged {next(iter(first))})",
                source,
            )


def read_lines(
    text: str, source: str, op: str | None, strict: bool, fallback_op: str | None
) -> _Parser:
    """Feed every line of ``text`` to a :class:`_Parser` (the collector's ``#`` block first)."""
    parser = _Parser(source, op, strict, fallback_op)
    lines = text.splitlines()
    _check_one_task(lines, source)
    parser.last_line = next(
        (i for i in range(len(lines), 0, -1) if _strip_prefix(lines[i - 1]).strip()), 0
    )
    in_meta = True
    continued: list[str] = []  # the lines so far of a command continued with a backslash
    for lineno, raw in enumerate(lines, start=1):
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
        # a command continued over lines with a trailing backslash (as launch commands are
        # pasted) is read as the one line the shell runs, once its last line is read
        command = _strip_prefix(raw).rstrip()
        if command.endswith("\\") and len(continued) < _MAX_CONTINUED:
            continued.append(command[:-1].strip())
            command = ""
        elif continued:
            command = " ".join((*continued, command.strip()))
            continued.clear()
        if not in_meta and command and len(parser.launch_lines) < 4 and _LAUNCH_RE.search(command):
            parser.launch_lines.append(command)
        if "NCCL_" in command:
            _pinned_env(parser.line_env, command.strip(), in_meta)
        if not in_meta and (warn := _NCCL_WARN_RE.search(raw)):
            parser.nccl_warns.append((lineno, warn.group(0).strip()))
        if not in_meta and _TEST_FAILURE_RE.search(_strip_prefix(raw)):
            parser.test_failures.append((lineno, _strip_prefix(raw).strip()))
        parser.feed(raw, lineno, in_meta)
    parser._flush()
    if parser.nccl_warns:  # read past as debug text, as before; said once, with the first
        line, first = parser.nccl_warns[0]
        count = len(parser.nccl_warns)
        parser._warn(
            line,
            f"NCCL printed {count} WARN line{'s' * (count != 1)} during the run (the first: "
            f"{first[:120]!r}): a warning of NCCL's own (a failed network operation, a "
            "transport that fell back, a retry) can slow or spoil the rows measured beside it; "
            "check them",
        )
    if parser.nccl_errors:  # NCCL's last error, printed by nccl-tests after the run
        line, first = parser.nccl_errors[0]
        parser._warn(
            line,
            f"nccl-tests printed NCCL's last error after the run ({first[:160]!r}): NCCL "
            "recorded an error during the run (a failed network operation, a retry); the rows are "
            "read, check them",
        )
    if parser.row_comments:  # notes added after rows: read without them, said once
        line, first = parser.row_comments[0]
        count = len(parser.row_comments)
        parser._warn(
            line,
            f"a '#' comment after a result row's fields ({first[:60]!r}"
            + (f"; {count} rows have one" if count > 1 else "")
            + "): nccl-tests prints none there; the row is read without it",
        )
    if parser.test_failures:  # the run stopped there: said once, naming the first
        line, first = parser.test_failures[0]
        parser._warn(
            line,
            f"nccl-tests reports a failure ({first[:160]!r}): the test stops at its first "
            "error, so no size after this line was measured; the rows before it are read "
            "(rerun for the sizes after it)",
        )
    return parser


_ASSIGN_RE = re.compile(
    r"""(?<![\w$])(NCCL_(?:ALGO|PROTO|NVLS_ENABLE|COLLNET_ENABLE))=(['"]?)([\w,^;:]+)\2"""
)
#: MPICH's and Intel MPI's ``-genv NAME VALUE`` / ``-env NAME VALUE`` (a space, not ``=``)
_GENV_RE = re.compile(
    r"(?:^|\s)--?g?env\s+(NCCL_(?:ALGO|PROTO|NVLS_ENABLE|COLLNET_ENABLE))\s+(['\"]?)([\w,^;:]+)\2"
)
#: the most lines of one backslash-continued command read as one (a launch line and its options)
_MAX_CONTINUED = 32
_RUNNER_ENV_RE = re.compile(r"^#\s*costmodel runner env:\s")
_EXPORT_RE = re.compile(r"^(?:[+$>]+\s*)?export\s")
_BINARY_RE_OF_LINE = re.compile(r"\w+_perf(?:_mpi)?(?:\s|$)")


def _pinned_env(found: dict[str, tuple[str, str]], line: str, in_meta: bool) -> None:
    """Read, into ``found`` (name -> (value, where)), the NCCL_ALGO, NCCL_PROTO,
    NCCL_NVLS_ENABLE and NCCL_COLLNET_ENABLE a line of the log sets for the run: the harness's
    own ``# costmodel runner env: NCCL_ALGO=Ring`` (:mod:`costmodel.validation.runner`), and,
    in the log proper (not its header comments, whose notes may name a setting not used), a
    launch line (``mpirun -x NCCL_ALGO=Ring``, ``srun --export=ALL,NCCL_ALGO=Ring``), an
    ``export NCCL_ALGO=Ring`` line or an assignment before the binary (``NCCL_ALGO=Ring
    ./all_reduce_perf``). The first line to set a name wins; a run's own NCCL INFO lines win
    over all of them (:func:`._build._build`).

    >>> f = {}
    >>> _pinned_env(f, "+ mpirun -np 16 -x NCCL_ALGO=Ring ./all_reduce_perf -g 1", False)
    >>> _pinned_env(f, "export NCCL_PROTO='Simple'", False)
    >>> f
    {'NCCL_ALGO': ('Ring', 'the launch line'), 'NCCL_PROTO': ('Simple', 'an export line')}
    >>> _pinned_env(f3 := {}, "mpiexec -n 16 -genv NCCL_ALGO Tree ./all_reduce_perf", False)
    >>> f3
    {'NCCL_ALGO': ('Tree', 'the launch line')}
    >>> _pinned_env(f2 := {}, "# note: NCCL_ALGO=Tree ran slower (all_reduce_perf)", True)
    >>> f2
    {}
    """
    if _RUNNER_ENV_RE.match(line):
        where = "the runner's env line"
    elif in_meta or line.startswith("#") or " NCCL INFO " in line:
        return
    elif _LAUNCH_RE.search(line):
        where = "the launch line"
    elif _EXPORT_RE.match(line):
        where = "an export line"
    elif _BINARY_RE_OF_LINE.search(line):
        where = "the command line"
    else:
        return
    for match in (*_ASSIGN_RE.finditer(line), *_GENV_RE.finditer(line)):
        found.setdefault(match.group(1), (match.group(3), where))
