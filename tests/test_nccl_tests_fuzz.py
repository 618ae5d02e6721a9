"""Mutation fuzz of the nccl-tests parser over every bundled reference log.

Each log is mutated the ways real logs get damaged (cut off, lines duplicated or swapped, the
column header duplicated, bytes flipped) with a fixed seed. The parser must either refuse the
result with a ValueError that says why, or return a frame; and a frame whose row count differs
from the intact log's must carry a warning or a problem naming a line (no silent wrong count).
"""

from __future__ import annotations

import random

import pytest

from costmodel.validation.nccl_tests import NcclTestsParseError, decode_log, parse_nccl_tests
from tests._paths import NCCL_TESTS

SEED = 20261201
MUTATIONS_PER_KIND = 4


def _logs() -> list[tuple[str, bytes, int]]:
    out = []
    for path in sorted(NCCL_TESTS.glob("*.txt")):
        data = path.read_bytes()
        try:
            rows = len(parse_nccl_tests(decode_log(data), strict=False))
        except NcclTestsParseError:  # busbw-only summaries hold no nccl-tests table
            continue
        out.append((path.name, data, rows))
    return out


LOGS = _logs()


def _is_row(line: bytes) -> bool:
    tokens = line.split()
    return len(tokens) >= 8 and tokens[0].isdigit() and tokens[1].isdigit()


def _mutants(data: bytes, rng: random.Random):
    lines = data.splitlines(keepends=True)
    # size-0 rows are left alone: nccl-tests itself prints one per step while size / ranks
    # rounds to 0, so a duplicated size-0 row is indistinguishable from a real one
    rows = [i for i, line in enumerate(lines) if _is_row(line) and line.split()[0] != b"0"]
    headers = [i for i, line in enumerate(lines) if b"size" in line and b"count" in line]
    for _ in range(MUTATIONS_PER_KIND):
        cut = rng.randrange(1, len(data))
        yield "truncate", data[:cut]
        if rows:
            i = rng.choice(rows)
            yield "duplicate row", b"".join(lines[: i + 1] + [lines[i]] + lines[i + 1 :])
            j = rng.choice(rows)
            if i != j and lines[i].split()[0] != lines[j].split()[0]:
                swapped = list(lines)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                yield "swap rows", b"".join(swapped)
        if headers:
            h = rng.choice(headers)
            at = rng.randrange(h + 1, len(lines) + 1)
            yield "duplicate header", b"".join(lines[:at] + [lines[h]] + lines[at:])
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(flipped))
            flipped[k] ^= 1 << rng.randrange(8)
        yield "byte flip", bytes(flipped)


def _ends_with_footer(data: bytes) -> bool:
    """The last result row is followed by a footer: every run left is complete."""
    lines = [line.strip() for line in data.splitlines() if line.strip()]
    last_row = max((i for i, line in enumerate(lines) if not line.startswith(b"#")), default=-1)
    return any(b"Avg bus bandwidth" in line for line in lines[last_row + 1 :])


def test_there_are_logs_to_fuzz():
    assert len(LOGS) >= 20


@pytest.mark.parametrize("name,data,rows", LOGS, ids=[name[:12] for name, _, _ in LOGS])
def test_mutated_log_is_refused_or_counted_honestly(name, data, rows):
    rng = random.Random(f"{SEED}:{name}")
    silent = []
    for index, (kind, mutant) in enumerate(_mutants(data, rng)):
        for strict in (False, True) if index % 2 else (False,):
            try:
                df = parse_nccl_tests(decode_log(mutant), source=name, strict=strict)
            except ValueError as exc:  # NcclTestsParseError is one
                assert str(exc).strip(), f"{kind}: empty error message"
                continue
            noted = df.attrs["warnings"] or df.attrs["problems"]
            if kind == "truncate" and _ends_with_footer(mutant):
                continue  # cut between two complete runs: a shorter log, valid as it stands
            if len(df) != rows and not noted:
                silent.append((kind, strict, len(df), rows))
    assert not silent, f"{name}: row count changed without a warning: {silent[:5]}"


def test_a_log_cut_at_every_point_of_its_first_rows_is_read_or_refused_never_a_crash():
    """A log cut inside a result row's first tokens (13d at character 1860: a row of fewer than
    five tokens under no column header) raised IndexError from the layout guess; every cut
    point of the first rows is now read (the cut row warned) or refused with a ValueError."""
    data = next(d for n, d, _ in _logs() if n.startswith("13d"))
    first_row = next(i for i, line in enumerate(data.splitlines(keepends=True)) if _is_row(line))
    start = sum(len(line) for line in data.splitlines(keepends=True)[:first_row])
    for cut in range(start, min(len(data), start + 1500)):
        for strict in (False, True):
            try:
                parse_nccl_tests(decode_log(data[:cut]), source="13d", strict=strict)
            except ValueError as exc:  # NcclTestsParseError is one
                assert str(exc).strip()
