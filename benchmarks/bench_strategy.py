"""Benchmark: the strategy advisor over 6 strategies x 16 node counts (goal: <= 100 ms).

One answer of the advisor is every strategy (ddp, zero1, zero2, fsdp, fsdp without resharding,
hsdp with one node per group) of one job at one node count, each priced by the step engine with
its collectives through ``predict_collective`` and its memory from the same layout. The
benchmark asks it for 16 node counts (1..16 DGX H100 nodes, 8..128 GPUs), one model, and times
the whole table, CPU (process) seconds, median of ``--repeat`` (the machine is shared):

- ``advisor``: one :class:`~costmodel.strategy.comm.PredictionCache` for the table that knows
  its node counts, so every prediction is made afresh once per table (each op over each span
  one call for every node count, ``predict_collective_nodes``), and the node counts of one
  strategy prepared as one column (``advise_nodes``: one setup, the first node count's task
  list retimed for all of them as one array and scheduled at once, ``engine.run_many``);
- ``per configuration``: the same table as one ``strategy_step`` per strategy and node count,
  each with its own timer (the road without the advisor's sharing), the same numbers;
- each with and without the step's error band (two more schedules per strategy).

The two roads are timed side by side in one run (alternating), their ratio and the ratio to
the goal printed; the goal and the measured figure go in the README. The count of
``predict_collective`` calls per table is deterministic and bounded in
tests/test_advisor_table.py (a plain cache) and tests/test_advisor_fast_path.py (one that knows
its node counts).

``--before DIR`` times the advisor of another checkout of the code (``DIR`` holds its
``costmodel`` package, e.g. ``git archive`` of an earlier commit) side by side: a second,
persistent process imports it and the two processes time their tables in turn (CPU seconds
of each process, ``--pairs`` alternations), medians and fastest printed with their ratio.
Usage: ``python benchmarks/bench_strategy.py [--arch llama-3.1-8b] [--repeat 5]
[--before DIR --pairs 30]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from costmodel import presets
from costmodel.strategy.advisor import advise
from costmodel.strategy.comm import PredictionCache
from costmodel.strategy.step import strategy_step

GOAL_S = 0.100
CLUSTER = "dgx-h100"
STRATEGIES: list[dict[str, Any]] = [
    {"strategy": "ddp"},
    {"strategy": "zero1"},
    {"strategy": "zero2"},
    {"strategy": "fsdp"},
    {"strategy": "fsdp", "reshard_after_forward": False},
    {"strategy": "hsdp"},
]
NODES = range(1, 17)


def _strategies(nodes: int) -> list[dict[str, Any]]:
    return [s for s in STRATEGIES if s["strategy"] != "hsdp" or nodes > 1]


def _cache() -> PredictionCache:
    """A cache that knows the table's node counts (one prediction per op and span); code
    before that option (``--before``) gets its plain cache."""
    try:
        return PredictionCache(nodes=NODES)  # type: ignore[call-arg,unused-ignore]
    except TypeError:
        return PredictionCache()


def advisor_table(arch: str, band: bool) -> tuple[int, int]:
    """The table through the advisor: (steps, predict_collective calls)."""
    try:  # the public API: one advise per node count sharing one PredictionCache(nodes=...)
        from costmodel.strategy.advisor import advise_nodes
    except ImportError:  # code before advise_nodes (``--before``)
        advise_nodes = None
    cache = _cache()  # fresh predictions for each table, shared by its node counts
    if advise_nodes is not None:
        table = advise_nodes(
            arch=arch,
            cluster=CLUSTER,
            nodes=NODES,
            strategies=_strategies,
            band=band,
            predictions=cache,
        )
        return sum(len(a.steps) for a in table.values()), cache.calls
    n = 0
    for nodes in NODES:
        a = advise(
            arch=arch,
            cluster=CLUSTER,
            nodes=nodes,
            strategies=_strategies(nodes),
            band=band,
            predictions=cache,
        )
        n += len(a.steps)
    return n, cache.calls


def per_configuration_table(arch: str, band: bool) -> tuple[int, int]:
    """The same table as one strategy_step per configuration (its own timer each)."""
    n = 0
    for nodes in NODES:
        c = presets.cluster(CLUSTER, nodes=nodes)
        for s in _strategies(nodes):
            strategy_step(arch=arch, cluster=c, nodes=nodes, timeline=False, band=band, **s)
            n += 1
    return n, -1


def _timed_table(arch: str, band: bool) -> float:
    """CPU seconds of one advisor table."""
    t0 = time.process_time()
    advisor_table(arch, band)
    return time.process_time() - t0


def _serve(arch: str) -> None:
    """The other side of ``--before``: time one table per line read ("1" band, "0" none)."""
    advisor_table(arch, True)  # imports, presets, the work kept across tables
    import costmodel

    print(os.path.dirname(os.path.dirname(costmodel.__file__)), flush=True)
    for line in sys.stdin:
        print(f"{_timed_table(arch, line.strip() == '1')!r}", flush=True)


def side_by_side(arch: str, before: str, pairs: int) -> None:
    """This code's advisor table and ``before``'s, alternating in two persistent processes."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(before)}
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", "--arch", arch],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    print(f"before: {child.stdout.readline().strip()}")
    advisor_table(arch, True)
    try:
        for band in (True, False):
            new: list[float] = []
            old: list[float] = []
            for _ in range(pairs):
                child.stdin.write("1\n" if band else "0\n")
                child.stdin.flush()
                old.append(float(child.stdout.readline()))
                new.append(_timed_table(arch, band))
            label = "with band" if band else "no band"
            mo, mn = statistics.median(old), statistics.median(new)
            print(
                f"{arch}, {label}, {pairs} pairs, CPU ms: before median {mo * 1e3:.0f} fastest "
                f"{min(old) * 1e3:.0f}; now median {mn * 1e3:.0f} fastest {min(new) * 1e3:.0f} "
                f"(now/before {mn / mo:.2f} medians, {min(new) / min(old):.2f} fastest; goal "
                f"{GOAL_S * 1e3:.0f} ms)"
            )
    finally:
        child.stdin.close()
        child.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="llama-3.1-8b")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before", default=None, help="a directory holding the code to compare")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    for flag, least in (("--repeat", 1), ("--pairs", 1)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            ap.error(f"{flag} must be at least {least} (got {value:g})")
    if args.serve:
        _serve(args.arch)
        return
    if args.before:
        side_by_side(args.arch, args.before, args.pairs)
        return
    advisor_table(args.arch, True)  # imports, presets, architecture tensors
    per_configuration_table(args.arch, True)
    roads = (("advisor", advisor_table), ("per configuration", per_configuration_table))
    for band in (True, False):
        times: dict[str, list[float]] = {name: [] for name, _ in roads}
        steps = calls = 0
        for _ in range(args.repeat):
            for name, fn in roads:  # alternating: both see the same neighbours
                t0 = time.process_time()
                steps, k = fn(args.arch, band)
                times[name].append(time.process_time() - t0)
                calls = k if k >= 0 else calls
        med = {name: statistics.median(ts) for name, ts in times.items()}
        label = "with band" if band else "no band"
        print(
            f"{args.arch}, {len(STRATEGIES)} strategies x {len(NODES)} node counts "
            f"({steps} steps), {label}: advisor {med['advisor'] * 1e3:.0f} ms CPU "
            f"({calls} predict_collective calls), per configuration "
            f"{med['per configuration'] * 1e3:.0f} ms (advisor/per configuration "
            f"{med['advisor'] / med['per configuration']:.2f}); goal {GOAL_S * 1e3:.0f} ms: "
            f"advisor at {med['advisor'] / GOAL_S:.1f}x the goal (medians of {args.repeat})"
        )


if __name__ == "__main__":
    main()
