"""Benchmark: parse a 10,000-row nccl-tests log.

The log is built in memory by repeating the result rows of a real published log
(bundled run 06a_..., 32 rows) under its own header, until 10,000 rows; nothing is
written to disk. Prints the best of a few repetitions.

Then a log of many runs: a real 2 x 8 H100 log (bundled run 16b_..., one run of 30-odd rows)
repeated ``--runs`` times and a quarter as many, read the way `validate compare` and the
Validate page read it (``logread.read_log``: the parse and the op checks run by run); the
ratio of the two times says whether reading is linear in the runs (about 4x) or not (it was
quadratic: pandas deep-copied the growing findings into every slice, 2026-12-06).

    python benchmarks/bench_parse.py [--rows 10000] [--repeat 5] [--runs 160]
"""

from __future__ import annotations

import argparse
import re
import time

from costmodel.reference import reference_path
from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import parse_nccl_tests

LOG = "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce"
RUNS_LOG = "16b_aws-2x-p5-8xH100-EFA3200G_allreduce"
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
    parser.add_argument("--runs", type=int, default=160)
    args = parser.parse_args()
    for flag, least in (("--rows", 1), ("--repeat", 1), ("--runs", 4)):
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
    one = reference_path(RUNS_LOG).read_text()
    best = {}
    for runs in (args.runs // 4, args.runs):
        text = one * runs
        took = []
        for _ in range(max(1, args.repeat // 2)):
            start = time.perf_counter()
            read_log(text, "runs.txt", nodes=2, cluster="aws-p5")
            took.append(time.perf_counter() - start)
        best[runs] = min(took)
        print(f"read_log: {runs} runs ({len(text) / 1e6:.2f} MB): best {best[runs]:.2f} s")
    small, large = args.runs // 4, args.runs
    print(f"read_log: {large} runs / {small} runs = {best[large] / best[small]:.1f}x (linear: 4x)")


if __name__ == "__main__":
    main()
