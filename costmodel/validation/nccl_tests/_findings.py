"""The strictness/warnings layer: what a parse reports besides its rows.

A *problem* is a malformed row: with ``strict`` it raises :class:`NcclTestsParseError` naming the
line, otherwise it is skipped and listed in ``df.attrs["problems"]``. A *warning* is something
nccl-tests would not have printed (a duplicate row, sizes out of order, a missing footer): it is
listed in ``df.attrs["warnings"]`` and never changes the rows.
"""

from __future__ import annotations

from typing import Any

from ._common import MAX_LISTED, NcclTestsParseError
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
