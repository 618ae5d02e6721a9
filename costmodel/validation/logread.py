"""One reader of an nccl-tests log for ``validate compare`` and the app's Validate page.

:func:`read_log` turns a log (bytes as uploaded, or text) and its file name into the rows
:func:`costmodel.validation.compare.compare` takes, with every fact the comparison needs settled
and said where it came from:

- **op**: the one the user set, else the log's header (``# Collective test starting: X_perf``),
  else a command line in the log naming ``X_perf``, else the file name (``..._allgather.txt``),
  else the ``redop``/``root`` columns (the parser's order, :func:`..nccl_tests.parse_nccl_tests`
  and :func:`..nccl_tests.read_nccl_tests`). A log that names none gets a ValueError asking for
  the op, never ``"unknown"`` silently. The file name is the weakest source: an op it alone
  gives that both the count column and the busbw/algbw ratio contradict, naming another op, is
  a ValueError naming that op and asking for the op (:func:`file_name_refusal`), not a
  comparison whose busbw is recomputed under the wrong op; the user's op is never overridden.
- **nodes** and **GPUs per node**: the log's host lines (``#  Rank  0 ... on node01``) when it
  has them; else what the user set; else the log's launch line (``mpirun -n 16 -ppn 8``,
  ``srun -N 2 --ntasks-per-node 8``, ...: :mod:`..nccl_tests._launch`) where it agrees with
  the rows' rank count (:func:`_fill_from_launch`); else, for a bundled run, the index's
  (:mod:`.reference_runs`); else the cluster preset's GPUs per node fills the nodes
  (``ceil(ranks / gpus_per_node)``). A user value that contradicts the host lines is an error,
  except where the rows' busbw/algbw ratio rules out the device list (:func:`_check_trimmed`:
  its hosts are then a lower bound, and the ratio judges the user's nodes).
  The index's nodes and GPUs per node are one layout: where the log states its rank count, a
  user value for either replaces both (the other is ranks / it). A GPUs per node the user sets
  is the node's: ``ranks / nodes`` of them are used, as :func:`.compare.compare` predicts (a
  slice of the node when fewer, said in :attr:`LogRead.assumed`). User values the rank count
  contradicts are an error (:func:`_check_layout`, :func:`_check_even`): more nodes than ranks,
  nodes that do not split the ranks evenly (the prediction puts ``ranks // nodes`` GPUs on
  every node: 128 ranks on 22 nodes were predicted on 110 GPUs), or more ranks per node than
  the GPUs per node set.
  A run whose rank count the log does not state gets ``nodes * gpus_per_node``.
- **cluster preset**: the user's, else, for a bundled run (:func:`.reference_runs.
  find_bundled_run`: its bytes or its file name's short id), the preset it is fitted with,
  else the preset the log's GPU and GPUs per node point to (:func:`..compare.detect_cluster`).
- **algorithm**: the log's NCCL_ALGO when it prints one; else, for a bundled run, the one its
  index says the run pinned (``per_run``; 20 and 22 set NCCL_ALGO=Ring on a launch line the
  parser does not read: :func:`_bundled_launch`), as ``scripts/fit_corrections.py`` compares
  the run; else the model's.
- **unreadable rows**: skipped on both surfaces and said in one line (:attr:`LogRead.notices`),
  a row the end of the file cut off among them; a log with no readable row is an error, a
  busbw-only table with one message (:func:`busbw_only_refusal`, also ``--reference``'s).
- **findings**: what the parser read but nccl-tests would not have printed (a duplicate row, a
  broken busbw identity, a missing footer, a launch line the run contradicts, ...), one line
  each (:func:`log_findings`, :attr:`LogRead.findings`): the CLI prints each after
  ``warning:``, the page lists them; neither changes the rows.
- **placement**: ``both`` (default: every row, out-of-place and in-place, as ``validate compare``
  has always compared), ``out-of-place`` or ``in-place`` (the spelling of ``calibrate``).

Every fact not read from the log is listed in :attr:`LogRead.assumed` (field, value, where from),
which the CLI prints to stderr and the page shows above the comparison. Decision: one function
for both surfaces, so a log gives the same rows, and so the same error, in the app and the CLI.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BUNDLED_PRESET",
    "DEFAULT_PLACEMENT",
    "PLACEMENTS",
    "BandCheck",
    "LogRead",
    "MAX_FINDINGS",
    "band_check",
    "busbw_only_refusal",
    "file_name_refusal",
    "log_findings",
    "runs_compared",
    "op_disagreement",
    "read_log",
    "read_results",
    "is_results_file",
    "RESULTS_SUFFIX",
]

#: Rows compared: every row, the out-of-place ones, or the in-place ones.
PLACEMENTS: tuple[str, ...] = ("both", "out-of-place", "in-place")  # as ``calibrate --placement``
#: Default of ``validate compare --placement`` and of the Validate page.
DEFAULT_PLACEMENT = "both"

#: Where a bundled run's cluster comes from when the user sets none (the CLI and the page say it).
BUNDLED_PRESET = "the bundled run's preset"

#: Findings listed one by one on either surface; beyond it one line counts the rest.
MAX_FINDINGS = 20

_HEADER_OP = re.compile(r"Collective test starting:\s*\w+_perf")
_COMMAND_OP = re.compile(r"(\w+)_perf\b")


@dataclass(frozen=True)
class LogRead:
    """A log read for comparison: ``rows`` (the parser's columns, ``nodes`` and ``ranks`` filled
    where they were settled), the facts, and what was assumed."""

    rows: pd.DataFrame
    name: str
    op: str
    op_source: str
    nodes: int | None
    gpus_per_node: int | None
    cluster: str | None
    placement: str
    #: (field, value, where from) for each fact the log did not state itself
    assumed: tuple[tuple[str, str, str], ...]
    #: (field, value, where from) for every fact (stated or assumed)
    facts: tuple[tuple[str, str, str], ...]
    #: one-line warnings both surfaces show as they are (the CLI on stderr after "warning: ",
    #: the page in a yellow box): a row the end of the file cut off, sources of the op that
    #: disagree (:func:`op_disagreement`)
    notices: tuple[str, ...] = ()
    #: what the parser read but nccl-tests would not have printed (:func:`log_findings`: a
    #: duplicate row, a broken busbw identity, a missing footer, a launch line the rows
    #: contradict, ...), one line each: the CLI prints each on stderr after "warning: ", the
    #: page lists them under "findings in the log"
    findings: tuple[str, ...] = ()
    #: what is compared when the log holds several kinds of run (:func:`runs_compared`), else
    #: None: the CLI prints it on stderr, the page as a caption
    runs: str | None = None

    def assumed_lines(self) -> list[str]:
        """One line per assumed fact: ``nodes = 2 (you set it)``."""
        return [f"{field} = {value} ({source})" for field, value, source in self.assumed]

    def read_lines(self) -> list[str]:
        """What was read from the file itself, one item each, in the words of the Validate
        page's "From the log:" caption (``validate compare`` prints them joined after
        ``from the log:``): the facts the file stated (the op and where it came from, ...),
        then what its rows say: ranks (where not assumed), dtype, reduction, sizes, placement,
        NCCL version, and the algorithm NCCL ran (NCCL_DEBUG lines) or was pinned to
        (NCCL_ALGO). Nothing assumed is here: :meth:`assumed_lines` holds that.

        >>> import pandas as pd
        >>> rows = pd.DataFrame({"size_bytes": [8, 2**30], "dtype": ["float"] * 2,
        ...     "redop": ["sum"] * 2, "placement": ["out_of_place", "in_place"],
        ...     "ranks": [16, 16], "nccl_version": ["2.21.5"] * 2})
        >>> LogRead(rows, "x.txt", "all_reduce", "the log's header", 2, 8, None,
        ...     "both", (), (("op", "all_reduce", "the log's header"),)).read_lines()
        ["op all_reduce (the log's header)", 'ranks 16', 'dtype float', 'redop sum', 'sizes 8 B - 1 GiB', 'out-of-place and in-place rows', 'NCCL 2.21.5']
        """
        from costmodel.units import format_bytes_binary as format_bytes

        stated = [
            f"{field} {value} ({where})"
            for field, value, where in self.facts
            if field != "cluster"
            and not where.startswith(("you set", "unknown"))
            and (field, value, where) not in self.assumed
        ]
        rows = self.rows

        def values(column: str) -> list[str]:
            if column not in rows:
                return []
            return sorted({str(v) for v in rows[column].dropna() if str(v) not in ("", "None")})

        guessed = {field for field, _, _ in self.assumed}  # said by assumed_lines instead
        if "ranks" not in guessed:
            ranks = values("ranks")
            if ranks:
                stated.append(f"ranks {', '.join(sorted(ranks, key=float))}")
        for column, label in (("dtype", "dtype"), ("redop", "redop")):
            found = [v for v in values(column) if v != "none"]
            if found:
                stated.append(f"{label} {', '.join(found)}")
        if "size_bytes" in rows and rows["size_bytes"].notna().any():
            lo, hi = float(rows["size_bytes"].min()), float(rows["size_bytes"].max())
            stated.append(
                f"size {format_bytes(lo)}"
                if lo == hi
                else f"sizes {format_bytes(lo)} - {format_bytes(hi)}"
            )
        placed = values("placement")
        if placed:
            words = [w.replace("_", "-") for w in sorted(placed, reverse=True)]
            stated.append(f"{' and '.join(words)} rows")
        versions = values("nccl_version")
        if versions:
            stated.append(f"NCCL {', '.join(versions)}")
        ran = values("nccl_algo")
        if ran:
            stated.append(f"algorithm {', '.join(ran)} (NCCL_DEBUG lines)")
        for column, name in (("algo_env", "NCCL_ALGO"), ("proto_env", "NCCL_PROTO")):
            pinned = values(column)
            where = env_sources(rows, name)
            # a value the user set (validate compare --algo) is said by assumed_lines, not
            # here: only what a line of the file set, or a bundled run's index, is read
            if not pinned or "algorithm" in guessed or (name in guessed and not where):
                continue
            stated.append(f"{name} {', '.join(pinned)}" + (f" ({where})" if where else ""))
        return stated


def env_sources(rows: pd.DataFrame, name: str) -> str:
    """Where the parser read ``name`` (``NCCL_ALGO``, ...) for the runs of ``rows`` that set
    it (``attrs["runs"][i]["env_from"]``): ``"the launch line"``, ``"the log's NCCL lines"``,
    ..., joined; "" when no run says."""
    found = [
        str((info.get("env_from") or {}).get(name) or "")
        for info in rows.attrs.get("runs") or []
        if name in (info.get("env") or {})
    ]
    return ", ".join(dict.fromkeys(w for w in found if w))


def _single(values: pd.Series) -> int | None:
    v = sorted({int(x) for x in values.dropna()})
    return v[0] if len(v) == 1 else None


def _describe(values: pd.Series) -> str:
    v = sorted({int(x) for x in values.dropna()})
    return ", ".join(map(str, v)) if v else "unknown"


#: The ops ``validate compare`` predicts; the redop/root check speaks only of these.
_COMPARED_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")


def _ops_of_columns(redop: Any, root: Any) -> tuple[str, ...] | None:
    """The compared ops whose nccl-tests table prints this ``redop`` and ``root`` (None: the
    table has no redop column, which says nothing).

    nccl-tests prints ``redop none`` for the ops that reduce nothing (all_gather, alltoall,
    broadcast) and the reduction (``sum``, ...) for the others; ``root`` is ``-1`` except for
    the rooted ops (broadcast, reduce; older tables have no root column).

    >>> _ops_of_columns("none", -1)
    ('all_gather', 'all_to_all')
    >>> _ops_of_columns("sum", 0)
    ('reduce',)
    """
    import pandas as pd

    if redop is None or pd.isna(redop):  # no redop column (None, or NaN from a JSON file)
        return None
    rooted = None if root is None or pd.isna(root) else int(root) >= 0
    if str(redop) == "none":
        ops = {True: ("broadcast",), False: ("all_gather", "all_to_all")}
        return ops[rooted] if rooted is not None else ("all_gather", "all_to_all", "broadcast")
    if rooted is None:
        return ("all_reduce", "reduce_scatter", "reduce")
    return ("reduce",) if rooted else ("all_reduce", "reduce_scatter")


#: The compared ops whose nccl-tests ``count`` is the whole message's (size = count x element
#: bytes) and those whose count is one rank's share (size = count x element bytes x ranks: the
#: gathered, scattered or exchanged buffer), as every bundled log of each op prints it.
_WHOLE_COUNT_OPS = ("all_reduce", "broadcast", "reduce")
_SHARE_COUNT_OPS = ("all_gather", "reduce_scatter", "all_to_all")


def _ops_of_count(rows: pd.DataFrame) -> tuple[tuple[str, ...], str] | None:
    """The compared ops whose nccl-tests table prints these rows' ``count`` column, and the
    column said in words; None where it says nothing (no count or type column, a type not
    known, every count 0, rows of one rank, or rows that disagree among themselves).

    nccl-tests prints the message's size in bytes and its ``count`` in elements of the row's
    type (:data:`..nccl_tests.NCCL_TESTS_TYPE_BYTES`): all_reduce, broadcast and reduce count
    the whole message (size = count x element bytes), all_gather, reduce_scatter and alltoall
    one rank's share of it (size = count x element bytes x ranks). The redop/root columns
    cannot tell all_reduce from reduce_scatter (both ``sum``, root -1); this can.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"size_bytes": [1048576], "count": [65536], "dtype": ["float"]})
    >>> _ops_of_count(rows)[0]
    ('all_gather', 'reduce_scatter', 'all_to_all')
    """
    import pandas as pd

    from .nccl_tests import NCCL_TESTS_TYPE_BYTES

    if not {"size_bytes", "count", "dtype"} <= set(rows.columns):
        return None
    ranks = pd.to_numeric(rows["ranks"], errors="coerce").astype(float) if "ranks" in rows else None
    if ranks is not None and len(ranks) and (ranks == 1).all():  # one rank's share: the whole
        return None
    element = rows["dtype"].map(lambda d: NCCL_TESTS_TYPE_BYTES.get(str(d)))
    size = pd.to_numeric(rows["size_bytes"], errors="coerce")
    count = pd.to_numeric(rows["count"], errors="coerce")
    known = element.notna() & (count > 0) & (size > 0)
    if not known.any():
        return None
    per_count = size[known] / (count[known] * element[known].astype(float))
    whole = bool((per_count == 1).all())
    if not whole and not (per_count >= 2).all():
        return None  # mixed, or not whole elements: not nccl-tests' own figures
    last = per_count.index[-1]  # the largest message read, as an example
    said = (
        f"{int(size[last]):,} B = {int(count[last]):,} x {int(element[last])} B "
        f"{rows['dtype'][last]}"
    )
    if whole:
        return _WHOLE_COUNT_OPS, f"{said}: the whole message's count"
    return _SHARE_COUNT_OPS, f"{said} x {per_count[last]:g}: a count per rank"


def _ops_of_ratio(rows: pd.DataFrame) -> tuple[tuple[str, ...], float] | None:
    """The compared ops whose busbw factor gives the busbw/algbw ratio nccl-tests printed on
    these rows, at any rank count, and the ratio's median; None where it says nothing (no
    busbw or algbw column, no row whose algbw is printed to 1 % or better, a ratio near 1, or
    rows that disagree among themselves).

    nccl-tests' busbw = algbw x factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n, at least 1
    on two ranks or more; all_gather, reduce_scatter and alltoall (n-1)/n, below 1; broadcast
    and reduce 1. A ratio above 1 is all_reduce's at every rank count, one below 1 is none of
    all_reduce's, broadcast's or reduce's; near 1 (two ranks, or many under a gather) it tells
    nothing. Only rows with algbw >= 1 GB/s are read (two printed decimals: the ratio to 1.5 %
    or better) and a ratio counts 2 % past 1.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"algbw_bytes_per_s": [250.1e9], "busbw_bytes_per_s": [468.94e9]})
    >>> _ops_of_ratio(rows)
    (('all_reduce',), 1.875)
    """
    if not {"algbw_bytes_per_s", "busbw_bytes_per_s"} <= set(rows.columns):
        return None
    import pandas as pd

    algbw = pd.to_numeric(rows["algbw_bytes_per_s"], errors="coerce")
    busbw = pd.to_numeric(rows["busbw_bytes_per_s"], errors="coerce")
    precise = (algbw >= 1e9) & (busbw > 0)
    if not precise.any():
        return None
    ratio = busbw[precise] / algbw[precise]
    median = round(float(ratio.median()), 3)
    if (ratio > 1.02).all():
        return ("all_reduce",), median
    if (ratio < 0.98).all():
        return _SHARE_COUNT_OPS, median
    return None


def file_name_refusal(rows: pd.DataFrame, name: str, from_name: str | None) -> str | None:
    """Why an op taken from the file name alone is refused, or None: the rows' count column
    (:func:`_ops_of_count`) and their busbw/algbw ratio (:func:`_ops_of_ratio`) both rule it
    out and agree on another (``..._reducescatter.log`` over an all-reduce table: a count of
    the whole message and a ratio of 1.875, which no rank count gives a reduce-scatter).

    Decision: the file name is the op's weakest source (a log renamed, copied or saved under
    another test's name), and busbw recomputed under a wrong op is a wrong verdict (44.6 %
    and FAIL for a log within 5 %), so two contradicting facts of the table stop the
    comparison with one line naming the op they fit, rather than take that op silently; the
    user's op (never overridden) settles it. One of the two alone stays a warning
    (:func:`op_disagreement`).
    """
    ops = list(dict.fromkeys(rows["op"].astype(str)))
    if from_name is None or ops != [from_name]:
        return None
    counted, ratio = _ops_of_count(rows), _ops_of_ratio(rows)
    if counted is None or ratio is None or from_name in counted[0] or from_name in ratio[0]:
        return None
    fits = [op for op in counted[0] if op in ratio[0]]
    if not fits:
        return None
    return (
        f"op: the file name {name} says {from_name}, but its count column ({counted[1]}) and "
        f"its busbw/algbw ratio ({ratio[1]:g}) fit {' or '.join(fits)}, not {from_name}: set "
        f"the op (`op`, e.g. {fits[0]})"
    )


def op_disagreement(rows: pd.DataFrame, op_from: str, from_name: str | None) -> list[str]:
    """One line per op the rows are compared as that another source in the log contradicts:
    the file name (``..._allgather.txt``), the redop/root columns (``redop none``: not a
    reduction) or the count column (:func:`_ops_of_count`: a count per rank is not
    all_reduce's), saying which source won. Empty when every source agrees.

    The op's source order stays as the module docstring says (the user, the header, a command
    line, the file name, the columns): this only says when a lower source disagrees, so a log
    mislabelled by its file name, or a header pasted over another op's table, is not compared
    silently as the wrong collective.
    """
    import pandas as pd

    lines = []
    ops = list(dict.fromkeys(rows["op"].astype(str)))
    won = "your setting" if op_from == "you set it" else op_from
    for op in ops:
        if op not in _COMPARED_OPS:
            continue
        of_op = rows[rows["op"].astype(str) == op]
        # each run on its own: logs of several ops concatenated into one file (an older
        # nccl-tests names no op in its header) take one op from the file name for every
        # run, and the first row's columns, or a count column mixed over the runs, said
        # nothing of the runs after it
        runs = list(dict.fromkeys(of_op["run"])) if "run" in of_op else [None]
        named = (
            [f"the file name says {from_name}"]
            if from_name is not None and len(ops) == 1 and from_name != op
            else []
        )
        per_run: list[tuple[int | None, list[str]]] = []
        for run in runs:
            own_rows = of_op if run is None else of_op[of_op["run"] == run]
            said = []
            if op_from != "the log's redop/root columns":
                own = own_rows.iloc[0]
                fits = _ops_of_columns(own.get("redop"), own.get("root"))
                if fits is not None and op not in fits:
                    root = own.get("root")
                    shown = "" if root is None or pd.isna(root) else f", root {int(root)}"
                    said.append(
                        f"its redop/root columns (redop {own.get('redop')}{shown}) fit "
                        f"{' or '.join(fits)}, not {op}"
                    )
            counted = _ops_of_count(own_rows)
            if counted is not None and op not in counted[0]:
                listed = ", ".join(counted[0][:-1]) + f" or {counted[0][-1]}"
                said.append(f"its count column ({counted[1]}) fits {listed}, not {op}")
            line = own_rows["line"].min() if "line" in own_rows else None
            per_run.append((None if line is None or pd.isna(line) else int(line), said))
        # runs that say the same are said once (twelve runs of one op under another op's
        # setting were twelve lines); every run alike reads as the whole log
        groups: dict[tuple[str, ...], list[int | None]] = {}
        for line, said in per_run:
            groups.setdefault(tuple(said), []).append(line)
        if len(groups) == 1:
            said = named + list(next(iter(groups)))
            if said:
                lines.append(
                    f"op: {op} from {won} wins, but {' and '.join(said)}: the rows are "
                    f"compared as {op}; check the log or set the op (`op`)"
                )
            continue
        for said_key, at in groups.items():
            if said_key:
                lines.append(
                    f"op: {op} from {won} wins, but {' and '.join(named)}"
                    + (" and " if named else "")
                    + f"in {_runs_from(at)} {' and '.join(said_key)}: its rows are compared "
                    f"as {op}; check the log or set the op (`op`)"
                )
                named = []
        if named:
            lines.append(
                f"op: {op} from {won} wins, but {named[0]}: the rows are compared as {op}; "
                "check the log or set the op (`op`)"
            )
    return lines


def _runs_from(lines: list[int | None]) -> str:
    """The runs of :func:`op_disagreement`'s line named by their first lines: "the run from
    line 20", "the runs from lines 20, 45 and 70", "the runs from lines 20, 45, 70 and 9
    more".

    >>> _runs_from([20]), _runs_from([20, 45, 70]), _runs_from([1, 2, 3, 4, 5])
    ('the run from line 20', 'the runs from lines 20, 45 and 70', 'the runs from lines 1, 2, 3 and 2 more')
    """
    known = [str(line) for line in lines if line is not None]
    if len(known) < len(lines):
        return "a run" if len(lines) == 1 else f"{len(lines)} runs"
    if len(known) == 1:
        return f"the run from line {known[0]}"
    shown = ", ".join(known[:3])
    rest = len(known) - 3
    if rest <= 0:
        shown = ", ".join(known[:-1]) + f" and {known[-1]}"
    else:
        shown += f" and {rest} more"
    return f"the runs from lines {shown}"


def busbw_only_refusal(name: str) -> str:
    """Why a busbw-only table (:func:`..nccl_tests.is_busbw_table`: busbw per message size, no
    times, as bundled 21a-21d) is not compared or fitted: the one message ``validate compare
    FILE``, ``validate compare --reference ID``, ``calibrate FILE`` and the Validate page
    give."""
    from .reference_runs import timed_runs

    return (
        f"{name} is a busbw-only table (busbw per message size, no times): comparing and "
        "calibrating need logs with times; read this one with "
        "costmodel.validation.nccl_tests.read_busbw_table. Bundled runs with times "
        f"(`cm.reference.reference_path(ID)`): {', '.join(timed_runs())}"
    )


def log_findings(rows: pd.DataFrame) -> list[str]:
    """The parser's findings of a log (``rows.attrs["warnings"]``,
    :func:`..nccl_tests.parse_nccl_tests`) as the lines both surfaces show: ``line 12: duplicate
    row: ...`` (a finding about the whole file has no line), the first :data:`MAX_FINDINGS`
    one by one and then one line counting the rest. A row the end of the file cut off is left
    out: :func:`read_log` says it among its notices.

    >>> import pandas as pd
    >>> rows = pd.DataFrame()
    >>> rows.attrs["warnings"] = [{"line": 7, "message": "duplicate row"}, {"line": 0, "message": "mixed runs"}]
    >>> log_findings(rows)
    ['line 7: duplicate row', 'mixed runs']
    """
    from .nccl_tests._build import MIXED_RUNS

    cut = rows.attrs.get("cut_row")
    lines = [
        f"line {w['line']}: {w['message']}" if w.get("line") else str(w["message"])
        for w in rows.attrs.get("warnings") or []
        if w != cut and not str(w.get("message", "")).startswith(MIXED_RUNS)
    ]
    if len(lines) > MAX_FINDINGS:
        rest = len(lines) - MAX_FINDINGS
        lines = lines[:MAX_FINDINGS] + [f"and {rest} more finding{'s' * (rest != 1)} in the log"]
    return lines


def runs_compared(rows: pd.DataFrame) -> str | None:
    """What a comparison of a log of several kinds of run compares, said once: ``"comparing 3
    runs of one file (line 1: all_reduce on 2 ranks, ...): each row is predicted at its own
    run's ranks and nodes; the summary pools them"``; None for one kind of run. The parser's
    finding says "mixed runs ...; compare them one by one" (advice to a reader of the rows);
    beside a comparison of them all it contradicted what was done, so both surfaces say this
    instead (:attr:`LogRead.runs`; :func:`log_findings` leaves the finding out)."""
    from .nccl_tests._build import mixed_runs

    listed = mixed_runs(list(rows.attrs.get("runs") or []))
    if listed is None:
        return None
    count, _, which = listed.partition(": ")
    return (
        f"comparing {count} of one file ({which}): each row is predicted at its own run's "
        "ranks and nodes; the summary pools them"
    )


def _op_source(text: str, op: str | None, from_name: str | None, ops: list[str]) -> str:
    if op is not None:
        return "you set it"
    if _HEADER_OP.search(text):
        return "the log's header"
    from .nccl_tests import NCCL_TESTS_OPS

    # a command line naming one of the ops read (one naming another, the job's next command
    # after the rows, gave no run its op)
    if any(NCCL_TESTS_OPS.get(m.group(1)) in ops for m in _COMMAND_OP.finditer(text)):
        return "a command line in the log"
    if from_name is not None and ops == [from_name]:
        return "the file name"
    return "the log's redop/root columns"


def decode_noting(raw: bytes | str, name: str) -> tuple[str, list[str]]:
    """``raw`` decoded as :func:`..nccl_tests.decode_log` decodes a log (text passes through),
    and what it warned about the encoding (a :class:`costmodel.textfile.GuessedEncodingWarning`:
    UTF-16 without a byte-order mark, bytes that are not UTF-8 replaced outside the result rows)
    as notices, without the file's name (the caller names it, if at all), instead of on stderr:
    :func:`read_log`'s notices, and the Validate page's readers say them. Any other warning
    goes on as it came."""
    if not isinstance(raw, bytes):
        return raw, []
    import warnings

    from costmodel.textfile import GuessedEncodingWarning

    from .nccl_tests import decode_log

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GuessedEncodingWarning)
        text = decode_log(raw, name)
    for w in caught:
        if issubclass(w.category, GuessedEncodingWarning):
            notes.append(str(w.message).removeprefix(f"{name}: "))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return text, notes


def bundled_elsewhere(bundled: Any, cluster: str) -> str | None:
    """The notice for a bundled run (``reference_runs.BundledRun``, or None) predicted on
    another cluster than its index's: ``--cluster`` given to :func:`read_log`, or the cluster a
    calibration predicts on (``validate compare --calibration``). None where there is nothing
    to say."""
    if bundled is None or not bundled.preset or cluster == bundled.preset:
        return None
    return (
        f"cluster: the bundled run {bundled.prefix} ran on {bundled.preset} (its index), not "
        f"{cluster}: the prediction is for a cluster the log did not measure"
    )


def read_log(
    raw: bytes | str,
    name: str,
    *,
    op: str | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    cluster: str | None = None,
    placement: str = DEFAULT_PLACEMENT,
    strict: bool = True,
    assume_nodes: bool = True,
    algo: str | None = None,
) -> LogRead:
    """Read an nccl-tests log for :func:`costmodel.validation.compare.compare`.

    ``raw``: the file's bytes (UTF-8, or UTF-16/32 by a byte-order mark, the mark dropped:
    :func:`..nccl_tests.decode_log`; UTF-16 without a mark is read and said in the notices)
    or text; ``name``: its file name (the op and the cluster may come from it). ``op``,
    ``nodes``, ``gpus_per_node``, ``cluster``: what the user set (None: from the log, see the
    module docstring). ``assume_nodes=False`` leaves the nodes the log does not state and the
    user did not set (or imply by ``gpus_per_node``) empty instead of filling them from the
    preset (calibration never assumes them). ``algo``: the NCCL_ALGO the run was launched with
    (an NCCL_ALGO value, ``Ring``), for a log that does not say (:func:`_user_algo`); one that
    contradicts the log's is an error. ``strict``: as :func:`..nccl_tests.parse_nccl_tests`.
    Both surfaces read leniently (``strict=False``): a row that cannot be read is skipped,
    listed in ``rows.attrs["problems"]`` and said in one of :attr:`LogRead.notices`, so a log
    gives the same rows on both (the CLI refused a log the page compared).

    Raises ValueError naming the field: an op the log does not name and the user did not set,
    a placement not in :data:`PLACEMENTS`, nodes or GPUs per node < 1 or contradicting the log's
    host lines, no rows of the placement asked for.

    >>> from costmodel.reference import reference_path
    >>> p = reference_path("24a")  # a B200 log whose header names no op; the file name does
    >>> r = read_log(p.read_bytes(), p.name, cluster="dgx-b200")
    >>> r.op, r.op_source, r.nodes
    ('all_reduce', 'the file name', 1)
    """
    from costmodel._checks import must_be

    from .nccl_tests import (
        NcclTestsParseError,
        _op_from_filename,
        is_busbw_table,
        parse_nccl_tests,
    )
    from .reference_runs import find_bundled_run

    if placement not in PLACEMENTS:
        raise must_be("placement", f"one of {', '.join(PLACEMENTS)}", placement)
    for field, value in (("nodes", nodes), ("gpus_per_node", gpus_per_node)):
        if value is not None and not (isinstance(value, int) and value >= 1):
            raise must_be(field, "a whole number >= 1", value)
    # UTF-16 read without its byte-order mark, bytes replaced outside the rows: said with the
    # notices
    text, guessed = decode_noting(raw, name)
    from_name = _op_from_filename(name)
    try:
        rows = parse_nccl_tests(text, source=name, op=op, strict=strict, _fallback_op=from_name)
    except NcclTestsParseError as exc:
        if is_busbw_table(text):  # no result rows, a busbw-only table: one message everywhere
            raise ValueError(busbw_only_refusal(name)) from exc
        raise
    ops = sorted(set(rows["op"].astype(str)))
    if "unknown" in ops:
        raise ValueError(
            f"op: {name} does not say which collective it measured (no '# Collective test "
            "starting: X_perf' header, no X_perf command line, no op in the file name): set "
            "the op (`op`, e.g. all_reduce)"
        )
    if op is not None:  # the user's op fills a gap: it never overrides what the log says
        said = parse_nccl_tests(text, source=name, strict=False)
        own = sorted(set(said["op"].astype(str)) - {"unknown"})
        if own and own != ops:
            raise ValueError(
                f"op: {', '.join(ops)} contradicts the log, which names {', '.join(own)} (its "
                "header, a command line or its redop/root columns); leave the op unset"
            )
    op_from = _op_source(text, op, from_name, ops)
    if op_from == "the file name":  # the weakest source: refused where the table contradicts it
        refused = file_name_refusal(rows, name, from_name)
        if refused:
            raise ValueError(refused)
    facts: list[tuple[str, str, str]] = [("op", ", ".join(ops), op_from)]
    notices = guessed
    cut = rows.attrs.get("cut_row")
    if cut:  # kept rows, the cut one skipped: said in one line on both surfaces
        notices.append(f"line {cut['line']}: {cut['message']}")
    skipped = rows.attrs.get("problems") or []
    if skipped:  # lenient: rows that could not be read, the first three named
        from costmodel.units import format_counted

        notices.append(
            f"{format_counted(len(skipped), 'line')} skipped (not read as result rows): "
            + "; ".join(f"line {p['line']}: {p['message']}" for p in skipped[:3])
        )
    notices += op_disagreement(rows, op_from, from_name)
    from .compare import reduction_note

    reductions = reduction_note(rows)  # int8, fp8, max, ...: not what the model is fitted on
    if reductions:
        notices.append(reductions)
    findings = log_findings(rows)
    rows = rows.copy()

    # a device list its rows' busbw/algbw ratio rules out (a 32-node log trimmed to its first
    # two hosts): its host lines are a lower bound, not the nodes. The nodes the parser took
    # from the ratio's ranks and the list's GPUs per node are assumed (said so), and a user's
    # nodes the ratio agrees with are taken over them (_check_trimmed)
    trimmed = _trimmed_rows(rows)
    ratio_nodes = None
    if trimmed.any():
        if nodes is not None:
            _check_trimmed(rows, trimmed, nodes, gpus_per_node)
        ratio_nodes = rows.loc[trimmed, "nodes"].copy()
        rows.loc[trimmed, "nodes"] = None
    # GPUs per node and nodes: host lines first, then the user's values, then the log's launch
    # line, then a bundled run's index, then the preset
    stated_from = "the log's host lines"
    launch = rows.attrs.get("launch")
    if launch and nodes is None and gpus_per_node is None:
        had_hosts = bool(rows["nodes"].notna().any())
        if _fill_from_launch(rows, launch):
            line = f"launch line ({launch['said']})"
            stated_from = f"the log's host lines and {line}" if had_hosts else f"the log's {line}"
    log_nodes = rows["nodes"] if "nodes" in rows else None
    log_gpn = rows["gpus_per_node"] if "gpus_per_node" in rows else None
    stated_nodes = log_nodes is not None and log_nodes.notna().all()
    if nodes is not None and log_nodes is not None and log_nodes.notna().any():
        found = sorted({int(v) for v in log_nodes.dropna()})
        if found != [nodes]:
            raise ValueError(
                f"nodes: {nodes} contradicts the log's host lines (nodes "
                f"{', '.join(map(str, found))})"
            )
    if gpus_per_node is not None and log_gpn is not None and log_gpn.notna().any():
        found = sorted({int(v) for v in log_gpn.dropna()})
        if found != [gpus_per_node]:
            raise ValueError(
                f"gpus_per_node: {gpus_per_node} contradicts the log's host lines "
                f"(GPUs per node {', '.join(map(str, found))})"
            )
    bundled = find_bundled_run(raw, name)  # None for a log that is not a bundled run
    from_index = f"the bundled run {bundled.prefix}'s index" if bundled else ""
    # the index's nodes and GPUs per node fill what the log does not state, as a user's would;
    # they are one layout, so a user value for either replaces both where the log's rank count
    # gives the other (nodes 32 on run 02's 128 ranks: 4 GPUs per node, what compare()
    # predicts with, not the index's 8 beside the user's 32 nodes)
    log_has_gpn = log_gpn is not None and log_gpn.notna().any()
    ranks_known = "ranks" in rows and bool(rows["ranks"].notna().all())
    index_nodes = (
        bundled.nodes
        if bundled and nodes is None and not stated_nodes and not (gpus_per_node and ranks_known)
        else None
    )
    index_gpn = (
        bundled.gpus_per_node
        if bundled
        and gpus_per_node is None
        and not log_has_gpn
        and not (nodes is not None and ranks_known)
        else None
    )
    if nodes is not None and ranks_known and not stated_nodes:
        _check_layout(rows["ranks"], nodes, gpus_per_node)
    if cluster is None and bundled is not None:
        cluster = bundled.preset
        cluster_from = BUNDLED_PRESET
    elif cluster is None:
        from .compare import detect_cluster

        cluster = detect_cluster(rows, name)
        cluster_from = "the log's GPU and GPUs per node" if cluster else ""
    else:
        cluster_from = "you set it"
        elsewhere = bundled_elsewhere(bundled, cluster)
        if elsewhere:
            # a bundled run compared with another cluster than the one it ran on: said, as a
            # log whose GPU contradicts the cluster is (the option still wins)
            notices.append(elsewhere)
    preset_gpn = None
    if cluster is not None:
        from costmodel import presets

        preset_gpn = presets.cluster(cluster).gpus_per_node
    assumed: list[tuple[str, str, str]] = []
    if bundled is not None and bundled.ranks is not None and nodes is None and not gpus_per_node:
        # the index's rank count where its curator found the log's own inconsistent with its
        # rows (04b: a 144-GPU header over rows that imply 128), as the fit reads the run
        rows["ranks"] = bundled.ranks
        assumed.append(("ranks", str(bundled.ranks), from_index))
    if not assumed and "ranks_source" in rows:
        # a rank count the log does not print (no device list, or an incomplete one): the
        # parser took it from the rows' busbw/algbw ratio; everything below builds on it
        source = rows["ranks_source"].astype(object).fillna("").astype(str)
        inferred = source.str.startswith("busbw/algbw")
        if inferred.any():
            why = (
                "the device list is incomplete"
                if source[inferred].str.contains("incomplete").any()
                else "the log lists no devices"
            )
            assumed.append(
                (
                    "ranks",
                    _describe(rows.loc[inferred, "ranks"]),
                    f"the rows' busbw/algbw ratio; {why}",
                )
            )
    ranks = rows["ranks"].astype("Float64") if "ranks" in rows else None
    if stated_nodes:
        nodes_from = stated_from
    else:
        given_gpn = gpus_per_node or index_gpn  # the user's, else the bundled run's
        gpn = given_gpn or preset_gpn
        missing = rows["nodes"].isna()  # a COLUMNS column: always there
        if nodes is not None:
            rows.loc[missing, "nodes"] = nodes
            nodes_from = "you set it"
        elif index_nodes is not None:
            rows.loc[missing, "nodes"] = index_nodes
            nodes_from = from_index
        elif ratio_nodes is not None and ratio_nodes.notna().all():
            rows.loc[ratio_nodes.index, "nodes"] = ratio_nodes
            per = _describe(rows.loc[ratio_nodes.index, "gpus_per_node"])
            nodes_from = f"ranks / the device list's {per} GPUs per node"
        elif (given_gpn or (assume_nodes and preset_gpn)) and ranks is not None:
            assert gpn is not None  # one of the two, just checked
            known = ranks[missing]  # pandas' NA where a row gives no rank count (no truth value)
            fill = [
                None if na else max(1, math.ceil(float(r) / gpn))
                for r, na in zip(known, known.isna(), strict=True)
            ]
            if gpus_per_node:  # the user's: nodes they fill unevenly are refused, not cut
                _check_even(known.dropna(), gpus_per_node)
            rows.loc[missing, "nodes"] = fill
            nodes_from = (
                f"ranks / {gpus_per_node} GPUs per node (you set it)"
                if gpus_per_node
                else f"ranks / {index_gpn} GPUs per node ({from_index})"
                if index_gpn
                else f"ranks / {cluster}'s {preset_gpn} GPUs per node"
            )
        else:
            nodes_from = "unknown: set the nodes or a cluster"
        if given_gpn is not None:
            rows.loc[rows["gpus_per_node"].isna(), "gpus_per_node"] = given_gpn
        if ranks is not None and ranks.isna().any():  # a run that states no rank count
            per_node = given_gpn or preset_gpn
            n = rows["nodes"]
            if per_node is not None:
                rows.loc[ranks.isna().to_numpy() & n.notna().to_numpy(), "ranks"] = (
                    n[ranks.isna().to_numpy() & n.notna().to_numpy()] * per_node
                )
                ranks_from = f"nodes x {per_node} GPUs per node" + (
                    " (you set it)"
                    if gpus_per_node
                    else f" ({from_index})"
                    if index_gpn
                    else f" ({cluster})"
                )
                assumed.append(("ranks", _describe(rows["ranks"]), ranks_from))
        assumed.insert(0, ("nodes", _describe(rows["nodes"]), nodes_from))
    gpn_value = rows["gpus_per_node"] if "gpus_per_node" in rows else None
    if gpn_value is not None and gpn_value.notna().all():
        gpn_from = (
            stated_from
            if stated_nodes or log_has_gpn
            else "you set it"
            if gpus_per_node
            else from_index
        )
        if gpn_from == from_index:
            assumed.append(("GPUs per node", _describe(gpn_value), gpn_from))
        both = rows["ranks"].notna() & rows["nodes"].notna()
        if gpn_from == "you set it" and both.any():
            # the GPUs per node set is the node's: compare() predicts ranks // nodes of them
            used = rows.loc[both, "ranks"].astype(int) // rows.loc[both, "nodes"].astype(int)
            if (used != gpus_per_node).any():
                assumed.append(
                    (
                        "GPUs used per node",
                        _describe(used),
                        f"ranks / nodes of each run, of the {gpus_per_node} per node you set",
                    )
                )
    else:
        # what compare() predicts with where the log states no GPUs per node: ranks // nodes of
        # each row (13e's 2, 4 and 6 GPUs on one node, not the preset's 8 it said)
        both = rows["ranks"].notna() & rows["nodes"].notna()
        if both.any():
            per_run = rows.loc[both, "ranks"].astype(int) // rows.loc[both, "nodes"].astype(int)
            gpn_shown, gpn_from = _describe(per_run.clip(lower=1)), "ranks / nodes of each run"
        else:
            gpn_shown = str(preset_gpn) if preset_gpn else "unknown"
            gpn_from = f"{cluster}'s preset" if preset_gpn else "unknown"
        if gpus_per_node is None:  # nodes the log states, GPUs per node it does not (uneven)
            assumed.append(("GPUs per node", gpn_shown, gpn_from))
    # NVLS off or CollNet on, where the log's NCCL lines or header say so (a bundled run's
    # index, below, wins): compare() predicts with them, as with the index's
    facts += _logged_launch(rows)
    if bundled is not None:  # how the run was launched, as the fit reads it
        assumed += _bundled_launch(rows, bundled, from_index)
    if algo is not None:
        assumed += _user_algo(rows, algo)
    if op_from in ("you set it", "the file name"):
        assumed.insert(0, ("op", ", ".join(ops), op_from))
    if cluster_from != "you set it":
        assumed.append(
            ("cluster", cluster or "unknown", cluster_from or "the log names no known GPU")
        )
    facts += [
        ("nodes", _describe(rows["nodes"]), nodes_from),
        (
            "GPUs per node",
            _describe(rows["gpus_per_node"])
            if gpn_value is not None and gpn_value.notna().all()
            else gpn_shown,
            gpn_from,
        ),
        ("cluster", cluster or "unknown", cluster_from or "the log names no known GPU"),
    ]
    if placement != "both":
        rows = rows[rows["placement"] == placement.replace("-", "_")]
        if rows.empty:
            raise ValueError(f"placement: {name} has no {placement} rows")
    return LogRead(
        rows=rows,
        name=name,
        op=ops[0] if len(ops) == 1 else ", ".join(ops),
        op_source=op_from,
        nodes=_single(rows["nodes"]),
        gpus_per_node=_single(rows["gpus_per_node"]) if "gpus_per_node" in rows else None,
        cluster=cluster,
        placement=placement,
        assumed=tuple(assumed),
        facts=tuple(facts),
        notices=tuple(notices),
        findings=tuple(findings),
        runs=runs_compared(rows),
    )


# --- the harness's results file (.jsonl) -------------------------------------------------------
#: The file suffix every surface reads as the harness's results (JSON lines), any other as a log.
RESULTS_SUFFIX = ".jsonl"


def is_results_file(name: str) -> bool:
    """True for a name every surface reads as the harness's results file (``.jsonl``: rows of
    ``validate nccl-tests run`` or ``validate torch``), False for an nccl-tests log.

    >>> is_results_file("torch.JSONL"), is_results_file("run.log")
    (True, False)
    """
    return name.lower().endswith(RESULTS_SUFFIX)


def read_results(
    path: Any,
    *,
    nodes: int | None = None,
    placement: str = DEFAULT_PLACEMENT,
    cluster: str | None = None,
    calibrated: bool = False,
) -> LogRead:
    """Read the harness's results file (``.jsonl``: ``validate torch``'s DDP and collective
    rows, gloo on CPUs or NCCL on GPUs, or ``validate nccl-tests run``'s) for
    :func:`costmodel.validation.compare.compare`: the one reader of ``validate compare`` and the
    Validate page (the page writes an upload's bytes under its name first).

    Each row names its op, ranks and nodes, so the op and the GPUs per node are the rows';
    ``nodes`` (what the user set) fills rows that do not say and must agree with those that do.
    ``placement``: as :func:`read_log` (the torch job's rows are out-of-place; DDP steps are
    kept). ``cluster``: the user's preset; None: the preset the rows' GPU and GPUs per node
    point to (:func:`..compare.detect_cluster`, said in :attr:`LogRead.assumed`), or, when
    none does, None in :attr:`LogRead.cluster`; rows of several devices or of CPUs (gloo) are
    then refused, naming what to do, unless ``calibrated`` (a calibration predicts them).
    :attr:`LogRead.notices`: a last row cut off, a UTF-16 file without its byte-order mark;
    :attr:`LogRead.runs`: the runs compared when the file holds several (``describe_runs``).

    Raises ValueError naming the file or the field: nothing readable, JSON lines of another
    tool, ``nodes`` contradicting the rows, no rows of the placement asked for.
    """
    import warnings
    from pathlib import Path

    from costmodel._checks import must_be

    from . import compare as cmp
    from .runner import describe_runs, load_results

    path = Path(path)
    if placement not in PLACEMENTS:
        raise must_be("placement", f"one of {', '.join(PLACEMENTS)}", placement)
    if nodes is not None and not (isinstance(nodes, int) and nodes >= 1):
        raise must_be("nodes", "a whole number >= 1", nodes)
    with warnings.catch_warnings():  # both said below, as notices
        warnings.simplefilter("ignore", UserWarning)
        rows = load_results(path)
    missing = [c for c in ("op", "time_s") if c not in rows]
    if missing:  # another tool's JSON lines: it read "measured rows lack columns [...]"
        raise ValueError(
            f"{path}: no row has {' or '.join(repr(c) for c in missing)}: not a results "
            "file of validate torch or validate nccl-tests run (JSON lines with op, "
            "size_bytes, ranks, time_s per row)"
        )
    _check_result_ops(rows, path)
    notices = [
        note
        for note in (
            (rows.attrs.get("cut_row") or {}).get("message"),
            rows.attrs.get("repeated_rows"),
            rows.attrs.get("encoding_note"),
        )
        if note
    ]
    if nodes is not None:
        if (
            "nodes" in rows
            and rows["nodes"].notna().any()
            and (rows["nodes"].dropna() != nodes).any()
        ):
            found = ", ".join(map(str, sorted({int(v) for v in rows["nodes"].dropna()})))
            raise ValueError(f"nodes: {nodes} contradicts the results file (nodes {found})")
        rows["nodes"] = nodes
    if placement != "both" and "placement" in rows:
        keep = rows["placement"] == placement.replace("-", "_")
        collective = (
            rows["kind"].fillna("collective") == "collective" if "kind" in rows else keep | True
        )
        if not (keep & collective).any():
            raise ValueError(f"placement: {path.name} has no {placement} rows")
        rows = rows[keep | ~collective]
    assumed: list[tuple[str, str, str]] = []
    if cluster is None:  # as a log's: the preset its GPU points to
        cluster = cmp.detect_cluster(rows, path.name)
        mixed = cmp.device_mix(rows)
        if cluster is not None:
            assumed.append(("cluster", cluster, "the rows' GPU and GPUs per node"))
        elif calibrated:
            pass
        elif mixed:  # no preset is all of them: say so, not "no GPU a preset has"
            raise ValueError(
                f"cluster: {mixed}, which no one preset describes; compare a results file of "
                "one device, or give `cluster` to compare every row with it"
            )
        elif cmp.ran_on_cpus(rows):
            ddp_only = "kind" in rows and (rows["kind"] == "ddp_step").all()
            raise ValueError(
                "cluster: the rows ran on CPUs (gloo) and no cluster preset describes them; "
                + (
                    # calibrate fits collectives: DDP steps alone give it nothing to fit
                    "calibrate on collectives the torch job timed on them (all_reduce; "
                    "`calibrate` without `cluster`) and compare these DDP steps with it "
                    "(`calibration`)"
                    if ddp_only
                    else "calibrate on them (`calibrate` without `cluster`) and compare with "
                    "it (`calibration`)"
                )
            )
    steps = rows["kind"] == "ddp_step" if "kind" in rows else rows["op"] != rows["op"]
    ops = [str(o) for o in dict.fromkeys(rows["op"][~steps].dropna())]
    if steps.any():  # the torch job's DDP steps (validate torch --ddp)
        ops.append(f"DDP steps ({int(steps.sum())})")
    node_counts = rows["nodes"] if "nodes" in rows else rows["op"].iloc[0:0]
    per_node = rows["gpus_per_node"] if "gpus_per_node" in rows else rows["op"].iloc[0:0]
    facts = [
        ("op", ", ".join(ops) or "none", "the rows"),
        ("ranks", _describe(rows["ranks"]) if "ranks" in rows else "unknown", "the rows"),
        ("nodes", _describe(node_counts), "you set it" if nodes is not None else "the rows"),
        ("GPUs per node", _describe(per_node), "the rows"),
        *assumed,
    ]
    runs = describe_runs(rows)
    return LogRead(
        rows=rows,
        name=path.name,
        op=", ".join(ops),
        op_source="the rows",
        nodes=_single(node_counts),
        gpus_per_node=_single(per_node),
        cluster=cluster,
        placement=placement,
        assumed=tuple(assumed),
        facts=tuple(facts),
        notices=tuple(notices),
        runs=f"comparing {len(runs)} runs: " + "; ".join(runs) if len(runs) > 1 else None,
    )


def _check_result_ops(rows: pd.DataFrame, path: Any) -> None:
    """Refuse, naming the file, the row and the allowed values, a results row whose op is no
    collective's name (``allreduce``, ``AllReduce``: a results file written by the user's own
    script): it was read, then said as a calibration without a fit for it, or as a row no
    preset predicts, far from the row that caused it. DDP steps are ``op = ddp_step``; rows of
    another kind (``validate compute``'s, appended to the same file) are not compared and not
    looked at."""
    import numbers

    from .nccl_tests import NCCL_TESTS_OPS

    known = tuple(dict.fromkeys(NCCL_TESTS_OPS.values()))
    kind = rows["kind"].fillna("collective") if "kind" in rows else None
    for i, op in enumerate(rows["op"]):
        if kind is not None and kind.iloc[i] not in ("collective", "ddp_step"):
            continue  # another writer's row (validate compute's), not compared: as before
        step = kind is not None and kind.iloc[i] == "ddp_step"
        allowed = ("ddp_step",) if step else known
        if op not in allowed:
            said = "no op" if not isinstance(op, str) else f"op {op!r}"
            size = rows["size_bytes"].iloc[i] if "size_bytes" in rows else None
            shown = (
                f" (size {float(size):,.0f} B)"
                if isinstance(size, numbers.Real) and size == size
                else ""
            )
            what = "a DDP step row" if step else f"a collective row{shown}"
            raise ValueError(f"{path}: {what} has {said}; allowed: {', '.join(allowed)}")


TRIMMED_SOURCE = "busbw/algbw (the device list is incomplete)"
"""The ``ranks_source`` of a run whose device list its rows' busbw/algbw ratio rules out
(:func:`..nccl_tests._header._run_facts`)."""


def _trimmed_rows(rows: pd.DataFrame) -> pd.Series:
    """The rows of runs whose device list the busbw/algbw ratio rules out (True each)."""
    if "ranks_source" not in rows:
        return rows["size_bytes"] != rows["size_bytes"]  # all False
    return rows["ranks_source"].astype(object).eq(TRIMMED_SOURCE)


def _check_trimmed(
    rows: pd.DataFrame, trimmed: pd.Series, nodes: int, gpus_per_node: int | None
) -> None:
    """Take, in place, the nodes the user set for the runs whose device list is incomplete
    (:func:`_trimmed_rows`) where their rows' busbw/algbw ratio agrees: nodes x GPUs per node
    (the user's, else the list's) among the rank counts the ratio fits (``ranks_span`` of the
    run); a run whose rank count the ratio left open gets that count. Raises ValueError naming
    the nodes and the counts the ratio fits where it does not agree."""
    spans = {int(i["run"]): i.get("ranks_span") for i in rows.attrs.get("runs") or []}
    for run in sorted({int(r) for r in rows.loc[trimmed, "run"]}):
        at = trimmed & (rows["run"] == run)
        listed = rows.loc[at, "gpus_per_node"].dropna()
        per_node = gpus_per_node or (int(listed.iloc[0]) if len(listed) else None)
        span = spans.get(run)
        if per_node is None or span is None:
            continue
        lo, hi = span
        if not lo <= nodes * per_node <= hi:
            fits = f"{lo} ranks" if lo == hi else f"{lo} to {hi} ranks"
            raise ValueError(
                f"nodes: {nodes} x {per_node} GPUs per node make {nodes * per_node} ranks, "
                f"which the rows' busbw/algbw ratio rules out (it fits {fits}; the device "
                "list is incomplete)"
            )
        rows.loc[at, "ranks"] = nodes * per_node
        rows.loc[at, "gpus_per_node"] = per_node


def _check_layout(ranks: pd.Series, nodes: int, gpus_per_node: int | None) -> None:
    """Refuse nodes (and GPUs per node) the user set that the log's rank counts contradict:
    more nodes than ranks, nodes that do not split every run's ranks evenly, or more ranks per
    node than the GPUs per node set. The prediction puts ``ranks // nodes`` GPUs on each node
    (:func:`.compare.cluster_predictor`), so an uneven split predicted fewer GPUs than ran (128
    ranks on 22 nodes: 110), and the GPUs per node set are the node's, of which ``ranks /
    nodes`` are used (4 of 8 on 32 nodes for 128 ranks: a slice, said in the assumed facts).

    >>> import pandas as pd
    >>> _check_layout(pd.Series([128]), 16, 8)  # 16 x 8 = 128: nothing to say
    >>> _check_layout(pd.Series([128]), 32, 8)  # 4 of each node's 8 GPUs used
    >>> _check_layout(pd.Series([128]), 22, 6)
    Traceback (most recent call last):
    ...
    ValueError: nodes: the log's 128 ranks do not split evenly over 22 nodes (the prediction puts the same GPUs on every node); allowed: 1, 2, 4, 8, 16, 32, 64, 128
    >>> _check_layout(pd.Series([128]), 8, 8)
    Traceback (most recent call last):
    ...
    ValueError: nodes: 8 x 8 GPUs per node hold 64 GPUs, fewer than the log's 128 ranks (16 per node); set one of the two
    """
    from costmodel.units import format_count

    found = sorted({int(r) for r in ranks})
    if nodes > found[0]:
        raise ValueError(
            f"nodes: {nodes} is more than the log's {found[0]} ranks; allowed: 1..{found[0]}"
        )
    if any(r % nodes for r in found):
        common = math.gcd(*found)
        ok = [d for d in range(1, min(common, 10**6) + 1) if common % d == 0]
        shown = ", ".join(map(str, ok[:12])) + (", ..." if len(ok) > 12 else "")
        raise ValueError(
            f"nodes: the log's {', '.join(map(str, found))} ranks do not split evenly over "
            f"{nodes} nodes (the prediction puts the same GPUs on every node); allowed: {shown}"
        )
    if gpus_per_node and found[-1] // nodes > gpus_per_node:
        raise ValueError(
            f"nodes: {nodes} x {gpus_per_node} GPUs per node hold "
            f"{format_count(nodes * gpus_per_node)} GPUs, fewer than the log's {found[-1]} "
            f"ranks ({found[-1] // nodes} per node); set one of the two"
        )


def _check_even(ranks: pd.Series, gpus_per_node: int) -> None:
    """Refuse a GPUs per node the user set (nodes not set) whose nodes, ``ceil(ranks /
    gpus_per_node)``, do not split a run's ranks evenly: the prediction puts ``ranks // nodes``
    GPUs on every node, so 128 ranks at 6 per node (22 nodes) were predicted on 110 GPUs.

    >>> import pandas as pd
    >>> _check_even(pd.Series([2, 4, 6]), 8)  # one node each: 2, 4 and 6 of its 8 used
    >>> _check_even(pd.Series([128]), 6)
    Traceback (most recent call last):
    ...
    ValueError: gpus_per_node: at 6 per node the log's 128 ranks fill 22 nodes unevenly (128 / 22 is not whole; the prediction puts the same GPUs on every node); set GPUs per node that fill the nodes evenly (e.g. 4 or 8) or set the nodes
    """
    for r in sorted({int(x) for x in ranks}):
        n = max(1, math.ceil(r / gpus_per_node))
        if r % n:
            near = [g for g in range(1, min(r, 4096) + 1) if r % math.ceil(r / g) == 0]
            below = [g for g in near if g < gpus_per_node][-1:]
            above = [g for g in near if g > gpus_per_node][:1]
            e_g = " or ".join(map(str, below + above))
            raise ValueError(
                f"gpus_per_node: at {gpus_per_node} per node the log's {r} ranks fill {n} "
                f"nodes unevenly ({r} / {n} is not whole; the prediction puts the same GPUs on "
                "every node); "
                f"set GPUs per node that fill the nodes evenly (e.g. {e_g}) or set the nodes"
            )


def _fill_from_launch(rows: pd.DataFrame, launch: dict[str, Any]) -> bool:
    """Fill, in place, the nodes and GPUs per node the host lines leave empty from the log's
    launch line (:func:`..nccl_tests._launch.parse_launch`: ``mpirun -n 16 -ppn 8``, ``srun -N 2
    --ntasks-per-node 8``, ``--map-by ppr:8:node``, ...); True when it filled a row.

    GPUs per node = processes per node x GPUs per process (the line's ``-g``, else the run's
    nGpus). A row is filled only where its rank count agrees with the line (nodes x GPUs per
    node), or where it has none: one launch line says nothing about the other runs of a file
    that sweeps the GPU count.
    """
    import pandas as pd

    missing = rows["nodes"].isna() & rows["gpus_per_node"].isna()
    if not missing.any():
        return False
    filled = False

    def whole(value: Any) -> int | None:
        return None if value is None or pd.isna(value) else int(value)

    for i in rows.index[missing]:
        per_process = whole(launch.get("gpus_per_process") or rows.at[i, "gpus_per_process"]) or 1
        ranks = whole(rows.at[i, "ranks"])
        n, per_node = launch.get("nodes"), launch.get("per_node")
        gpn = per_node * per_process if per_node else None
        if n is None and gpn and ranks and ranks % gpn == 0:
            n = ranks // gpn
        if gpn is None and n and ranks and ranks % n == 0 and launch.get("even", True):
            gpn = ranks // n
        if n is None or gpn is None or (ranks is not None and ranks != n * gpn):
            continue
        rows.at[i, "nodes"], rows.at[i, "gpus_per_node"] = n, gpn
        if ranks is None:
            rows.at[i, "ranks"] = n * gpn
        filled = True
    return filled


def _logged_launch(rows: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Fill, in place, ``nvls`` (False) and ``collnet`` (True) of each run whose own NCCL lines
    say it ran with ``NCCL_NVLS_ENABLE=0`` or ``NCCL_COLLNET_ENABLE=1`` (NCCL_DEBUG=INFO's
    ``NCCL_NVLS_ENABLE set by environment to 0.``, or a ``# COMMAND:``/``# ENV:`` header line
    setting it; the parser keeps each run's in ``attrs["runs"][i]["env"]``); returns them as
    facts the log states. A log of an H100 run with NVLS off was predicted with NVLS, as
    NCCL's default choice (a bundled run's index said it: :func:`_bundled_launch`)."""
    from .runner import LAUNCH_ENV, launch_columns

    out: list[tuple[str, str, str]] = []
    if "run" not in rows:
        return out
    off: list[int] = []
    on: list[int] = []
    for info in rows.attrs.get("runs") or []:
        env = info.get("env") or {}
        # the runner's reading of the same variables (its rows' nvls/collnet), on the values
        # as NCCL_DEBUG prints them ("set by environment to 0.")
        said = launch_columns({k: str(env.get(k, "")).rstrip(".").strip() for k in LAUNCH_ENV})
        if said.get("nvls") is False:
            off.append(int(info["run"]))
        if said.get("collnet") is True:
            on.append(int(info["run"]))
    if off:
        if "nvls" not in rows:
            rows["nvls"] = None
        rows["nvls"] = rows["nvls"].astype(object)
        rows.loc[rows["run"].isin(off), "nvls"] = False
        where = env_sources(rows, "NCCL_NVLS_ENABLE") or "the log's NCCL lines"
        out.append(("NVLS", "off (NCCL_NVLS_ENABLE=0)", where))
    if on:
        if "collnet" not in rows:
            rows["collnet"] = False
        rows.loc[rows["run"].isin(on), "collnet"] = True
        where = env_sources(rows, "NCCL_COLLNET_ENABLE") or "the log's NCCL lines"
        out.append(("CollNet", "on (NCCL_COLLNET_ENABLE=1)", where))
    return out


def _user_algo(rows: pd.DataFrame, algo: str) -> list[tuple[str, str, str]]:
    """Fill, in place, ``algo_env`` of every row with the NCCL_ALGO the user says the run was
    launched with (``validate compare --algo``, the Validate page's box); returns it as an
    assumed fact. Raises ValueError naming the field: a value NCCL does not take, or one that
    contradicts an NCCL_ALGO the log (or a bundled run's index) pins.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"op": ["all_reduce"], "algo_env": [None]})
    >>> _user_algo(rows, "Ring"), rows["algo_env"].tolist()
    ([('NCCL_ALGO', 'Ring', 'you set it')], ['Ring'])
    >>> _user_algo(pd.DataFrame({"op": ["all_reduce"], "algo_env": ["Tree"]}), "ring")
    Traceback (most recent call last):
    ...
    ValueError: algo: ring contradicts the log, which pins NCCL_ALGO Tree; leave it unset
    """
    from costmodel.nccl.names import canonical_choice, nccl_list_for

    for op in dict.fromkeys(rows["op"].astype(str)):
        try:
            nccl_list_for(op, algo, "NCCL_ALGO")
        except ValueError as exc:
            raise ValueError("algo" + str(exc).removeprefix("NCCL_ALGO")) from None
    said = sorted({str(v) for v in rows["algo_env"].dropna()}) if "algo_env" in rows else []
    mine = canonical_choice(algo).lower()
    other = [v for v in said if canonical_choice(v).lower() != mine]
    if other:
        raise ValueError(
            f"algo: {algo} contradicts the log, which pins NCCL_ALGO {', '.join(other)}; "
            "leave it unset"
        )
    if "algo_env" not in rows:
        rows["algo_env"] = None
    missing = rows["algo_env"].isna()
    if not missing.any():  # the log says it already: nothing assumed
        return []
    rows["algo_env"] = rows["algo_env"].astype(object)
    rows.loc[missing, "algo_env"] = algo
    return [("NCCL_ALGO", algo, "you set it")]


def _bundled_launch(rows: pd.DataFrame, bundled, from_index: str) -> list[tuple[str, str, str]]:
    """Fill, in place, the launch facts of a bundled run that its log does not print and its
    index records (:class:`.reference_runs.BundledRun`), as ``scripts/fit_corrections.py``
    predicts the run; returns them as assumed facts.

    - ``algo_env``: the NCCL_ALGO the index pins per run (20 and 22 ran Ring: a chart default
      and an ``mpirun -x`` line the parser does not read; 13f's Ring and NVLS runs);
    - ``gpus_per_process``: nccl-tests' ``-g`` (0 in the index: every GPU of the node);
    - ``nvls``: False where NVLink SHARP was off (04a-c), ``collnet``: True where CollNet ran (03).

    Without them a bundled log was predicted with NCCL's default choice (20: 107 % median
    error on the CLI and the page against the 9 % docs/fidelity.md gives the same run).
    """
    out: list[tuple[str, str, str]] = []
    pinned = {
        int(i): str(o["algorithm"])
        for i, o in bundled.per_run.items()
        if o.get("algorithm") not in (None, "auto")
    }
    if pinned:
        algo = rows["run"].map(pinned)
        fill = rows["algo_env"].isna() & algo.notna()
        if fill.any():
            rows.loc[fill, "algo_env"] = algo[fill]
            out.append(("algorithm", ", ".join(sorted(set(algo[fill]))), from_index))
    missing = rows["gpus_per_process"].isna()
    if missing.any():
        if bundled.gpus_per_process:
            rows.loc[missing, "gpus_per_process"] = bundled.gpus_per_process
        else:  # -g = every GPU of the node: ranks / nodes of each row
            ranks = rows.loc[missing, "ranks"].astype("Float64")
            nodes = rows.loc[missing, "nodes"].astype("Float64")
            rows.loc[missing, "gpus_per_process"] = (ranks // nodes).astype("Int64")
        if rows.loc[missing, "gpus_per_process"].notna().any():
            out.append(
                ("GPUs per process", _describe(rows.loc[missing, "gpus_per_process"]), from_index)
            )
    if bundled.nvls is not None:
        rows["nvls"] = bundled.nvls
        out.append(("NVLS", "on" if bundled.nvls else "off (NCCL_NVLS_ENABLE=0)", from_index))
    if bundled.collnet:
        rows["collnet"] = True
        out.append(("CollNet", "on", from_index))
    return out


@dataclass(frozen=True)
class BandCheck:
    """The expected error of a comparison's predictions beside the measured error.

    ``half_width_large`` / ``half_width_small``: the grouped-CV band (±, a fraction; NaN where
    no run measured the regime) from 1 MiB up and below; ``within``: rows whose |busbw error|
    is inside their own band, of ``rows`` rows with a band; ``regimes``: the regimes involved.
    """

    model: str
    half_width_large: float
    half_width_small: float
    within: int
    rows: int
    regimes: tuple[str, ...]
    #: why the band is unknown, where a prediction says so (a calibration answers)
    note: str = ""
    #: what the band measures, said beside it: the grouped cross-validation of the bundled
    #: runs, or a calibration's own held-out sizes (:func:`calibration_band`)
    basis: str = "grouped CV"

    def text(self) -> str:
        """``"±10% from 1 MiB, ±50% below"`` (or why there is no band)."""
        parts = [
            f"±{100 * hw:.0f}% {where}"
            for hw, where in (
                (self.half_width_large, "from 1 MiB"),
                (self.half_width_small, "below 1 MiB"),
            )
            if hw == hw
        ]
        return (
            ", ".join(parts)
            if parts
            else f"unknown ({self.note or 'no grouped-CV band for ' + self.model})"
        )


def _fit_names(op: str, algo: str) -> set[str]:
    """The alpha-beta fits' names (textbook, or NCCL's lower-case spelling where none) that
    answer a row NCCL ran under ``algo``: its own, or a set's members' (NCCL's choice).

    >>> sorted(_fit_names("all_reduce", "Ring,Tree")), sorted(_fit_names("broadcast", "Ring"))
    (['ring', 'tree'], ['chain'])
    """
    from costmodel import tables
    from costmodel.hardware import textbook_algorithm
    from costmodel.nccl.names import canonical_choice, is_choice_set, set_members

    try:
        text = canonical_choice(algo, "algorithm")
    except ValueError:
        return {algo.lower()}
    names = (
        set_members(text, tables.NCCL_OP_ALGORITHMS.get(op, ("ring",)))
        if is_choice_set(text)
        else [text]
    )
    out = set()
    for name in names:
        try:
            out.add(textbook_algorithm(op, name))
        except ValueError:
            out.add(name.lower())
    return out


def calibration_band(comparison: pd.DataFrame, calibration: Any) -> BandCheck:
    """The expected error of a comparison predicted with a calibration's alpha-beta fits
    (``validate compare --calibration``): each row's band is the largest |busbw error| its
    fit made on the sizes held out of it (``cv_max_abs_rel_error``; from 1 MiB
    ``cv_max_abs_rel_error_ge_1mib`` where the fit has one), the fits of the row's op and level
    (its pinned algorithm's where it has one). The grouped-CV band of the bundled runs does not
    apply: it measures the uncalibrated model on clusters it was not fitted on.

    A calibration of a cluster's realistic model (``calibrate --cluster``) predicts with that
    model, not with the fits, so its band is unknown and said so; rows at a level it did not
    measure (no fabric terms, or no candidates of the op, there) are the uncalibrated model's
    predictions and get its grouped-CV band (:func:`band_check` on the base cluster), said in
    the basis.
    """
    import numpy as np

    from costmodel.nccl.names import nccl_list_for
    from costmodel.uncertainty import ONE_MIB

    label = f"calibration {calibration.name}"
    ok = comparison[comparison["rel_error"].notna()]
    if ok.empty:
        return BandCheck(
            label, math.nan, math.nan, 0, 0, (), basis="the calibration's held-out sizes"
        )
    if calibration.base and (calibration.candidates or calibration.fabric):
        note = (
            "not measured: the TOML's held-out errors (cv_max_abs_rel_error) are its "
            f"alpha-beta lines', not those of the calibrated {calibration.base} model it "
            "predicts with"
        )
        # rows at a level the calibration did not measure (a one-node calibration beside a
        # two-node log) are the uncalibrated model's predictions (predict_collective warns):
        # they have its grouped-CV band, said so
        levels = np.where(ok["nodes"].astype(float).to_numpy() > 1, "inter", "intra")
        if calibration.fabric:
            fitted = {(op, f.level) for f in calibration.fabric for op in set(ok["op"])}
        else:
            fitted = {(c.op, c.level) for c in calibration.candidates}
        own = np.array([(o, lv) in fitted for o, lv in zip(ok["op"], levels, strict=True)])
        if own.all():
            return BandCheck(label, math.nan, math.nan, 0, 0, (), note, basis="calibrated model")
        fallback = band_check(ok[~own], calibration.base, "nccl")
        where = "every row" if not own.any() else f"{int((~own).sum())} of {len(ok)} rows"
        basis = f"grouped CV of the uncalibrated {calibration.base} model, which predicts {where}"
        if own.any():
            basis += "; none for the calibrated model's rows"
        return replace(fallback, model=label, basis=basis)
    size = ok["size_bytes"].to_numpy(dtype=float)
    half = np.full(len(ok), np.nan)

    # what NCCL applied to each row's op (a list per function: allreduce:tree pins all_reduce
    # only); a value NCCL would refuse pins nothing here (validate compare says it on its rows)
    def applied(op: Any, value: Any) -> str | None:
        try:
            return nccl_list_for(str(op), value, "NCCL_ALGO")
        except ValueError:
            return None

    recorded = ok["algo_env"].astype(object).tolist() if "algo_env" in ok else [None] * len(ok)
    pinned = [applied(op, v) for op, v in zip(ok["op"], recorded, strict=True)]
    ranks = ok["ranks"].astype(float).tolist() if "ranks" in ok else [math.nan] * len(ok)
    unfitted: set[int] = set()  # rank counts of rows whose op and level no fit was fitted at
    outside: set[str] = set()  # ops with rows outside the sizes their fits were fitted between
    unheld: set[str] = set()  # ops with rows from 1 MiB whose fits held out no size from 1 MiB
    for i, (op, nodes, n, algo, m) in enumerate(
        zip(ok["op"], ok["nodes"].astype(float), ranks, pinned, size, strict=True)
    ):
        level = "inter" if nodes > 1 else "intra"
        fits = [f for f in calibration.fits if f.op == op and f.level == level]
        # a fit's held-out error is its sizes' at the ranks it was fitted on: it says nothing
        # of its line carried to another rank count (13a's 4 ranks' fit on 13e's 2 and 6)
        at = [f for f in fits if not f.ranks or (n == n and int(n) in f.ranks)]
        if fits and not at and n == n:
            unfitted.add(int(n))
        fits = at
        if isinstance(algo, str):
            fits = [f for f in fits if f.algorithm in _fit_names(str(op), algo)] or fits
        # a fit's held-out error is of the sizes it was fitted between (a file written before
        # they were recorded: all sizes): a row outside them has no band, as a row at another
        # rank count has none; from 1 MiB only the held-out error from 1 MiB (a fit with no
        # held-out size from 1 MiB has none there, not its small sizes' error)
        within = [
            f
            for f in fits
            if math.isnan(f.min_bytes) or (f.min_bytes <= m <= f.max_bytes)  # NaN: not recorded
        ]
        if fits and not within:
            outside.add(str(op))
        elif (
            m >= ONE_MIB
            and within
            and all(
                f.cv_max_abs_rel_error_ge_1mib != f.cv_max_abs_rel_error_ge_1mib for f in within
            )
        ):
            unheld.add(str(op))
        widths = [
            (f.cv_max_abs_rel_error_ge_1mib if m >= ONE_MIB else f.cv_max_abs_rel_error)
            for f in within
        ]
        widths = [w for w in widths if w == w]
        if widths:
            half[i] = max(widths)
    has = ~np.isnan(half)
    inside = np.abs(ok["rel_error"].to_numpy(dtype=float)) <= half

    def widest(sel: np.ndarray) -> float:
        v = half[sel & has]
        return float(v.max()) if v.size else math.nan

    big = size >= ONE_MIB
    basis = "the calibration's held-out sizes"
    note = "the fits have no held-out sizes (cv_max_abs_rel_error)"
    if unfitted:
        where = f"{', '.join(map(str, sorted(unfitted)))} ranks, which no fit was fitted at"
        if has.any():
            basis += f"; none for rows at {where}"
        else:
            note = f"every row is at {where}"
    elif outside or unheld:
        where = " or ".join(
            w
            for w, on in (
                ("sizes outside those the fits were fitted between", outside),
                ("sizes from 1 MiB, of which the fits held out none", unheld),
            )
            if on
        )
        if has.any():
            basis += f"; none for rows at {where}"
        else:
            note = f"every row is at {where}"
    return BandCheck(
        label,
        widest(big),
        widest(~big),
        int(inside[has].sum()),
        int(has.sum()),
        (),
        "" if has.any() else note,
        basis=basis,
    )


def band_check(comparison: pd.DataFrame, cluster: str, model: str) -> BandCheck:
    """The expected-error band (:func:`costmodel.uncertainty.error_band`, per row's nodes and
    size on ``cluster``) of a :func:`..compare.compare` result, and how many rows fall in it.

    The band is the 80th percentile of |busbw error| on clusters the model was not fitted on,
    so about four rows in five of a run like the bundled ones should fall inside it.
    """
    import numpy as np

    from costmodel import presets, uncertainty

    base = presets.cluster(cluster)
    ok = comparison[comparison["rel_error"].notna()]
    if ok.empty:
        return BandCheck(model, math.nan, math.nan, 0, 0, ())
    nodes = ok["nodes"].to_numpy(dtype=float).astype(int)
    size = ok["size_bytes"].to_numpy(dtype=float)
    ops = ok["op"].astype(str).to_numpy() if "op" in ok else np.full(len(ok), "", dtype=object)
    pct = np.full(len(ok), np.nan)
    regime = np.empty(len(ok), dtype=object)
    notes: list[str] = []
    if base.calibration is not None and model in ("nccl", "calibrated"):
        # a calibrated cluster: the band predict_collective gives each row (none where the
        # calibration answers: the grouped-CV band does not measure its error; the
        # uncalibrated model's where it does not apply), not the uncalibrated model's band
        # everywhere, which claimed "±21 %: 173 of 174 rows within it" of a calibration
        # compared with its own rows
        import warnings

        from costmodel.predict import CalibrationWarning, predict_collective

        ranks = ok["ranks"].to_numpy(dtype=float).astype(int)
        shapes = zip(ops.tolist(), nodes.tolist(), ranks.tolist(), strict=True)
        for op, k, n in dict.fromkeys(shapes):
            sel = (ops == op) & (nodes == k) & (ranks == n)
            with warnings.catch_warnings():  # the comparison's own predictions warned already
                warnings.simplefilter("ignore", CalibrationWarning)
                b = predict_collective(
                    op, size[sel], base, nodes=k, gpus_per_node=max(1, n // k), model=model
                ).error_band
            assert b is not None  # predict_collective always sets one
            pct[sel] = np.broadcast_to(uncertainty.band_pct(b.half_width), sel.sum())
            regime[sel] = b.regime
            if not b.measured:
                notes.append(b.note)
    else:
        for op in dict.fromkeys(ops.tolist()):  # the band depends on the op (all-to-all)
            sel = ops == op
            pct[sel], regime[sel] = uncertainty.band_columns(
                model, base.fabric, base.intra_kind, nodes[sel], size[sel], op=op or None
            )
    half = pct / 100.0
    has = ~np.isnan(half)
    inside = np.abs(ok["rel_error"].to_numpy(dtype=float)) <= half

    def widest(sel: np.ndarray) -> float:
        v = half[sel & has]
        return float(v.max()) if v.size else math.nan

    big = size >= uncertainty.ONE_MIB
    # what the band measures, said beside it: a calibration that answers every row has no
    # grouped-CV band (its rows' band is unknown: "calibrated model", as --calibration FILE
    # says); rows it does not answer keep the uncalibrated model's grouped-CV band
    basis = "grouped CV"
    if notes:
        basis = (
            "grouped CV, where the calibration does not answer" if has.any() else "calibrated model"
        )
    return BandCheck(
        model,
        widest(big),
        widest(~big),
        int(inside[has].sum()),
        int(has.sum()),
        tuple(dict.fromkeys(regime.tolist())),
        "; ".join(dict.fromkeys(notes)),
        basis,
    )
