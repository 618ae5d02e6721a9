"""Benchmark: parse a 10,000-row nccl-tests log.

The log is built in memory by repeating the result rows of a real published log
(bundled run 06a_..., 32 rows) under its own header, until 10,000 rows; nothing is
written to disk. Prints the best of a few repetitions.

    python benchmarks/bench_parse.py [--rows 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import re
import time

from costmodel.reference import reference_path
from costmodel.validation.nccl_tests import parse_nccl_tests

LOG = "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce"
_ROW = re.compile(r"^\s*\d+\s+\d+\s+float\s")


def build_log(rows: int) -> str:
    """Header of the real log followed by its rows repeated until ``rows`` result rows."""
    lines = reference_path(LOG).read_text().splitlines()
    data = [line for line in lines if _ROW.match(line)]
    first = next(i for i, line in enumerate(lines) if _ROW.match(line))
    body = (data * (rows // len(data) + 1))[:rows]
    return "\n".join(lines[:first] + body + ["# Out of bounds values : 0 OK"]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for flag, least in (("--rows", 1), ("--repeat", 1)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    text = build_log(args.rows)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        df = parse_nccl_tests(text)
        times.append(time.perf_counter() - start)
    if len(df) != 2 * args.rows:
        raise SystemExit(f"parsed {len(df)} frame rows, expected {2 * args.rows}")
    print(
        f"parse_nccl_tests: {args.rows} result rows ({len(text) / 1e6:.2f} MB, "
        f"{len(df)} frame rows): best {min(times) * 1e3:.0f} ms, "
        f"median {sorted(times)[len(times) // 2] * 1e3:.0f} ms over {args.repeat} runs"
    )


if __name__ == "__main__":
    main()
