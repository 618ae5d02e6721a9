"""The strictness/warnings layer: what a parse reports besides its rows.

A *problem* is a malformed row: with ``strict`` it raises :class:`NcclTestsParseError` naming the
line, otherwise it is skipped and listed in ``df.attrs["problems"]``. A *warning* is something
nccl-tests would not have printed (a duplicate row, sizes out of order, a missing footer): it is
listed in ``df.attrs["warnings"]`` and never changes the rows.
"""

from __future__ import annotations

import math
from typing import Any

from ._common import MAX_LISTED, NcclTestsParseError
from ._launch import Launch
from ._lexer import _INT_RE, _Layout, _Run


class _Findings:
    """Problems and warnings of one parse, with the strictness that decides what a problem does."""

    def __init__(self, source: str, strict: bool) -> None:
        self.source = source
        self.strict = strict
        self.problems: list[tuple[int, str]] = []
        self.warnings: list[tuple[int, str]] = []

    def _warn(self, line: int, message: str) -> None:
        """A finding that does not stop the parse (listed in ``df.attrs["warnings"]``)."""
        self.warnings.append((line, message))

    def _problem(self, line: int, message: str) -> None:
        if self.strict:
            raise NcclTestsParseError(line, message, self.source)
        self.problems.append((line, message))


def _check_sizes(parser: _Findings, run: _Run, layout: _Layout) -> None:
    """Warn where a run's sizes are not what nccl-tests prints: strictly increasing per
    (type, redop, root), by the run's ``step`` (``-f`` factor or ``-i`` bytes) when the header
    gives it. Finds duplicated rows, swapped lines, a second run pasted in without its preamble
    and missing rows; each finding names its line (the first :data:`MAX_LISTED` one by one)."""
    pre = {name: i for i, name in enumerate(layout.preamble)}
    key_at = [pre[n] for n in ("type", "redop", "root") if n in pre]
    last: dict[tuple[str, ...], tuple[int, int]] = {}  # key -> (size, line)
    seen: dict[tuple[Any, ...], int] = {}
    duplicates = disorder = 0
    cycles = _cycles(run.rows, key_at)
    for lineno, tokens in run.rows:
        if not _INT_RE.match(tokens[0]):
            continue
        size = int(tokens[0])
        if size == 0:  # nccl-tests prints size 0 once per step while size / ranks rounds to 0
            continue
        key = tuple(tokens[i] for i in key_at)
        if key in cycles:  # nccl-tests -N: the sweep printed again, said once below
            seen.setdefault((key, size), lineno)
            continue
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
        seen.setdefault((key, size), lineno)
        last[key] = (size, lineno)
    if run.step is not None:
        # gaps between the sizes each key holds, in size order: swapped lines are said above,
        # and leave no size missing (read in file order, every swap also read as a gap)
        step, kind = run.step
        ladders: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        for (key, size), lineno in seen.items():
            ladders.setdefault(key, []).append((size, lineno))
        for ladder in ladders.values():
            ladder.sort()
            for (prev, prev_line), (size, lineno) in zip(ladder, ladder[1:], strict=False):
                gap = size / prev if kind == "factor" else (size - prev) / max(step, 1)
                expected = step if kind == "factor" else 1
                if step > 1 and gap > 1.5 * expected:
                    parser._warn(
                        lineno,
                        f"size {size} follows {prev} (line {prev_line}), the header's step is "
                        f"{step} ({kind}): rows are missing",
                    )
    if cycles:
        count, restart = max(cycles.values())
        parser._warn(
            restart,
            f"the sizes start again here: the run printed its sweep {count} times "
            "(nccl-tests -N); every cycle's rows are read and compared, so each "
            f"size counts {count} times",
        )
    for count, what in ((duplicates, "duplicate rows"), (disorder, "out-of-order rows")):
        if count > MAX_LISTED:
            parser._warn(run.line, f"{count} {what} in the run starting at line {run.line}")


def _cycles(
    rows: list[tuple[int, list[str]]], key_at: list[int]
) -> dict[tuple[str, ...], tuple[int, int]]:
    """The (type, redop, root) keys whose sizes are one increasing sweep printed again and
    again, each with (cycles, the line the second cycle starts): nccl-tests ``-N K``
    (``--run_cycles``) repeats its size loop K times under one column header and one footer
    (src/common.cu: the ``do { for (size ...) } while (--repeat)`` loop of a test). The last
    cycle may be cut short (a log cut off, ``-N 0`` stopped). A repeat of anything else (a
    size missing in one cycle, a line pasted twice) is no cycle, nor is a cycle whose rows are
    the first cycle's copied field for field (a block pasted again, not measured again): they
    are left to the duplicate and order findings.

    >>> sizes = [8, 16, 32, 8, 16, 32, 8]
    >>> rows = [(n, [str(s), "2", "float", str(n)]) for n, s in enumerate(sizes, 1)]
    >>> _cycles(rows, [2])
    {('float',): (3, 4)}
    >>> _cycles([(n, [str(s), "2", "float", "5.0"]) for n, s in enumerate(sizes, 1)], [2])
    {}
    """
    ladders: dict[tuple[str, ...], list[tuple[int, int, list[str]]]] = {}
    for lineno, tokens in rows:
        if _INT_RE.match(tokens[0]) and int(tokens[0]) != 0:
            key = tuple(tokens[i] for i in key_at)
            ladders.setdefault(key, []).append((int(tokens[0]), lineno, tokens))
    found = {}
    for key, ladder in ladders.items():
        sizes = [size for size, _, _ in ladder]
        length = next((i for i, size in enumerate(sizes) if i and size == sizes[0]), 0)
        first = [tokens for _, _, tokens in ladder[:length]]
        if (
            length
            and all(a < b for a, b in zip(sizes[:length], sizes[1:length], strict=False))
            and all(size == sizes[i % length] for i, size in enumerate(sizes))
            and not any(
                [tokens for _, _, tokens in ladder[start : start + length]]
                == first[: len(ladder[start : start + length])]
                for start in range(length, len(ladder), length)
            )
        ):
            found[key] = (-(-len(sizes) // length), ladder[length][1])
    return found


def _decimals(token: str) -> int:
    """Digits after the decimal point of a printed number (``'10.49'`` -> 2)."""
    mantissa = token.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


#: (line, placement, size [B], time [us], algbw [GB/s], busbw [GB/s]) tokens as printed
IdentityRow = tuple[int, str, int, str, str, str]


def _check_identities(
    parser: _Findings, op: str, ranks: int | None, ranks_source: str, rows: list[IdentityRow]
) -> None:
    r"""List the rows that break nccl-tests' own identities (warnings: the rows are kept).

    nccl-tests computes ``algbw = size / time`` and ``busbw = algbw x factor(op, ranks)``
    (``src/*.cu``, ``GetBw``) and prints each rounded to its printed decimals, so a row is
    listed only when the printed numbers differ by more than that rounding allows:

    .. math:: |a - M / t| \le \tfrac12 10^{-d_a} + \frac{M}{t}\,\frac{\tfrac12 10^{-d_t}}{t},
              \qquad |b - f a| \le \tfrac12 10^{-d_b} + f\,\tfrac12 10^{-d_a}

    with ``d`` the printed decimals (``t`` in us, ``a``, ``b`` in GB/s). The busbw identity
    needs the op's factor and the ranks from the header (not inferred from busbw itself).
    """
    from costmodel.tables import BUSBW_FACTOR

    factor = None
    if op in BUSBW_FACTOR and ranks and ranks_source != "busbw/algbw":
        factor = float(BUSBW_FACTOR[op](float(ranks)))
    algbw_broken: list[tuple[int, str]] = []
    busbw_broken: list[tuple[int, str]] = []
    checked = 0
    for line, placement, size, t_tok, a_tok, b_tok in rows:
        try:
            t, a, b = float(t_tok), float(a_tok), float(b_tok)
        except ValueError:  # N/A and the like: nothing to check
            continue
        if not (t > 0 and math.isfinite(t) and math.isfinite(a) and math.isfinite(b)):
            continue
        checked += 1
        expected = size / (t * 1e3)  # B / us -> GB/s
        slack = 0.5 * 10.0 ** -_decimals(a_tok) + expected * 0.5 * 10.0 ** -_decimals(t_tok) / t
        if abs(a - expected) > slack * 1.001 + 1e-9:
            algbw_broken.append(
                (
                    line,
                    f"algbw = size / time does not hold: {size} B in {t_tok} us is "
                    f"{expected:.4g} GB/s, the log prints {a_tok} GB/s ({placement})",
                )
            )
        elif factor is not None:
            bslack = 0.5 * 10.0 ** -_decimals(b_tok) + factor * 0.5 * 10.0 ** -_decimals(a_tok)
            if abs(b - factor * a) > bslack * 1.001 + 1e-9:
                busbw_broken.append(
                    (
                        line,
                        f"busbw = algbw x {factor:.4g} ({op} on {ranks} ranks) does not hold: "
                        f"{a_tok} GB/s x {factor:.4g} = {factor * a:.4g} GB/s, the log prints "
                        f"{b_tok} GB/s ({placement})",
                    )
                )
    if busbw_broken and len(busbw_broken) > checked / 2:  # the rank count, not the rows
        parser._warn(
            busbw_broken[0][0],
            f"busbw = algbw x factor({op}, {ranks} ranks from {ranks_source}) does not hold on "
            f"{len(busbw_broken)} of {checked} rows: the header's rank count does not match "
            "the busbw/algbw ratio nccl-tests printed (an incomplete device list?)",
        )
        busbw_broken = []
    listed = sorted(algbw_broken + busbw_broken)
    for line, message in listed[:MAX_LISTED]:
        parser._warn(line, message)
    if len(listed) > MAX_LISTED:
        parser._warn(listed[0][0], f"{len(listed)} rows break nccl-tests' algbw/busbw identities")


def _check_hosts(parser: _Findings, run: _Run, facts: dict[str, Any]) -> None:
    """Warn where a run's complete device list puts a different number of ranks on its hosts
    (``mpirun -np 12`` over hosts of 8 slots: 8 and 4; ``srun -n 13 -N 2``: 7 and 6). The
    reader then knows the nodes but no GPUs per node (:func:`._header._run_facts`), and the
    model prices the same GPUs on every node: the run is predicted as if its ranks were spread
    evenly (ranks / nodes per node), a layout it did not run."""
    if facts["nodes"] is None or facts["nodes"] < 2 or facts["gpus_per_node"] is not None:
        return
    hosts: dict[str, int] = {}
    for _, host, _ in run.rank_lines:
        hosts[host] = hosts.get(host, 0) + 1
    if len(hosts) != facts["nodes"] or len(set(hosts.values())) < 2:
        return
    shown = [f"{host}: {count}" for host, count in hosts.items()]
    if len(shown) > 6:
        shown = [*shown[:6], f"... ({len(shown)} hosts)"]
    parser._warn(
        run.line,
        f"the device list puts a different number of ranks on each host ({', '.join(shown)}): "
        "the model prices the same GPUs on every node, so this run is predicted as if its "
        f"{facts['ranks']} ranks were spread evenly over the {facts['nodes']} nodes, a layout "
        "it did not run",
    )


def _check_repeated_runs(parser: _Findings, runs: list[_Run]) -> None:
    """Warn where a run repeats an earlier run row for row (a log pasted twice or three times
    would otherwise be read, and plotted, as several sweeps)."""
    first: dict[tuple[Any, ...], int] = {}
    for run in runs:
        if not run.rows:
            continue
        signature = (run.op, tuple(tuple(tokens) for _, tokens in run.rows))
        if signature in first:
            parser._warn(
                run.line,
                f"duplicate run: the run at line {run.line} repeats the run at line "
                f"{first[signature]} row for row (the log pasted twice?); its rows are kept, "
                "compare one copy",
            )
        else:
            first[signature] = run.line


#: Where a run's rank count came from (``ranks_source``), in words for a finding.
_RANKS_FROM = {
    "devices": "its device list",
    "devices (highest rank)": "its device list's highest rank",
    "devices+omitted": "its device list (with the ranks it omits)",
    "busbw/algbw": "its rows' busbw/algbw ratio",
    "busbw/algbw (the device list is incomplete)": "its rows' busbw/algbw ratio",
    "nThread*nGpus": "its nThread x nGpus header",
}


def _check_launch(
    parser: _Findings, runs: list[tuple[_Run, dict[str, Any]]], launch: Launch | None
) -> None:
    """Warn where the launch line (:class:`._launch.Launch`) contradicts what nccl-tests printed
    for a run: the rank count (processes x GPUs per process x threads) against the device
    list, a marker or the busbw/algbw ratio, the nodes and GPUs per node against the host
    lines. The run's own figures are used (nccl-tests prints them from the job that ran; a
    command line kept beside a log may be another job's, 03's ``-np 64`` beside 96-rank rows);
    the finding names both values and says which one is used.

    A file of several runs with one launch line (a sweep of the GPU count) is not warned about
    when one of its runs agrees with the line: the line is that run's.
    """
    if launch is None:
        return
    found: list[tuple[int, str]] = []
    agrees = False
    for run, facts in runs:
        per_process = launch.gpus_per_process or run.ngpus or 1
        expected: dict[str, int | None] = {
            "ranks": None
            if launch.ranks is None
            else launch.ranks * per_process * (run.nthread or 1),
            "nodes": launch.nodes,
            "GPUs per node": None if launch.per_node is None else launch.per_node * per_process,
        }
        printed = {
            "ranks": None if facts["ranks_source"] == "launch line" else facts["ranks"],
            "nodes": facts["nodes"],
            "GPUs per node": facts["gpus_per_node"],
        }
        source = facts["ranks_source"]
        origin = {
            "ranks": _RANKS_FROM.get(
                source, f"its {source}" if source.startswith("marker") else source
            ),
            "nodes": "its host lines",
            "GPUs per node": "its host lines",
        }
        clashes = [
            (what, said, got, origin[what])
            for what in ("ranks", "nodes", "GPUs per node")
            if (said := expected[what]) is not None
            and (got := printed[what]) is not None
            and int(said) != int(got)
        ]
        compared = any(expected[w] is not None and printed[w] is not None for w in expected)
        if compared and not clashes:
            agrees = True
        first = run.rows[0][0] if run.rows else run.line
        for what, said, got, where in clashes:
            found.append(
                (
                    first,
                    f"the launch line and the run disagree: the line says {said} {what} "
                    f"({launch.describe()}), the run has {got} ({where}); "
                    f"{got} {what} used: nccl-tests prints them from the job that ran, and a "
                    "command kept with a log may be another job's",
                )
            )
    if agrees and len(runs) > 1:
        return
    for line, message in found:
        parser._warn(line, message)
