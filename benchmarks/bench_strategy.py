"""Benchmark: the strategy advisor over 6 strategies x 16 node counts (goal: <= 100 ms).

One answer of the advisor is every strategy (ddp, zero1, zero2, fsdp, fsdp without resharding,
hsdp with one node per group) of one job at one node count, each priced by the step engine with
its collectives through ``predict_collective`` and its memory from the same layout. The
benchmark asks it for 16 node counts (1..16 DGX H100 nodes, 8..128 GPUs), one model, and times
the whole table, CPU (process) seconds, best of ``--repeat``:

- ``cold``: every collective prediction made afresh (a new job each time);
- ``no band``: the same without the step's error band (two more schedules per strategy).

The ratio to the goal is printed side by side; the goal and the measured figure go in the
README. Usage: ``python benchmarks/bench_strategy.py [--arch llama-3.1-8b] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time

from costmodel.strategy.advisor import advise
from costmodel.strategy.comm import PredictionCache

GOAL_S = 0.100
STRATEGIES = [
    {"strategy": "ddp"},
    {"strategy": "zero1"},
    {"strategy": "zero2"},
    {"strategy": "fsdp"},
    {"strategy": "fsdp", "reshard_after_forward": False},
    {"strategy": "hsdp"},
]
NODES = range(1, 17)


def _table(arch: str, band: bool) -> int:
    n = 0
    cache = PredictionCache()  # fresh predictions for each table, shared by its node counts
    for nodes in NODES:
        strategies = [s for s in STRATEGIES if s["strategy"] != "hsdp" or nodes > 1]
        a = advise(
            arch=arch,
            cluster="dgx-h100",
            nodes=nodes,
            strategies=strategies,
            band=band,
            predictions=cache,
        )
        n += len(a.steps)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="llama-3.1-8b")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    _table(args.arch, True)  # imports, presets, architecture tensors
    for label, band in (("cold, with band", True), ("cold, no band", False)):
        best = float("inf")
        steps = 0
        for _ in range(args.repeat):
            t0 = time.process_time()
            steps = _table(args.arch, band)
            best = min(best, time.process_time() - t0)
        print(
            f"{args.arch}, {len(STRATEGIES)} strategies x {len(NODES)} node counts ({steps} steps), "
            f"{label}: {best * 1e3:.0f} ms CPU ({best / steps * 1e3:.1f} ms per step); "
            f"goal {GOAL_S * 1e3:.0f} ms: {best / GOAL_S:.1f}x the goal"
        )


if __name__ == "__main__":
    main()
