"""Benchmark the sweep engine: 1e6 rows to a DataFrame, CSV and Parquet; memory when streaming.

The grid: every textbook all-reduce algorithm x every cluster preset that has a network x
nodes 1..64 x message sizes (log-spaced, 8 B to 16 GB), evaluated through
``predict.predict_collective`` (model="lesson": the flat formula, which runs every algorithm), the road the CLI and the app take.

Targets: CSV <= 3 s and Parquet <= 1 s for 1e6 rows on one core; memory bounded for
1e8 rows when streaming. Streaming is measured on a larger grid (``--stream-rows``, 1e7 by
default) in a child process, whose peak RSS is compared with the 1e6-row in-memory run.

    python benchmarks/bench_sweep.py            # about 30-60 s on a shared 2-core machine
    python benchmarks/bench_sweep.py --json     # figures as JSON
    python benchmarks/bench_sweep.py --every-model   # only every model side by side (~1 min)
    python benchmarks/bench_sweep.py --quick    # every part at its smallest sizes (a few s)

``--quick`` runs every part of the default run on small grids (:data:`QUICK`: 10,000 rows in
memory and streamed, the every-model grid on 1..64 nodes, one repeat), to see that the
benchmark runs, not how fast: its figures are too small to judge the goals, and the verdicts
say so (the suite runs it, tests/test_cli_qa_pass11.py). The other benchmarks have no quick
mode of their own: their sizes are options (``--rows``, ``--repeat``, ``--seconds``), and
``bench_sweep.py``'s every-model grid was the one part no option made smaller.

Every model (lesson, textbook, nccl, nccl-table) is also timed on one grid, side by side in this
one process: 5 presets x nodes 1..8,192 x 31 sizes (1,269,760 rows each) to a DataFrame; goal
>= 1e6 rows/s for every model. Then the realistic models against the textbook
(``--models-only``: only this part): presets x nodes x sizes x 3 algorithms of ``--rows`` rows
to Parquet for ``textbook``, ``nccl`` and ``nccl-table`` in turn, in this process; goal ``nccl``
>= 1e6 rows/CPU-s and within 2x of the textbook.

A step sweep's ``strategy=all`` (``--step-all``): every layout the advisor ranks (ddp, zero1,
zero2, fsdp with and without resharding, hsdp at each group size) of Llama-3.1-8B on 1..16 DGX
H100 nodes at micro-batches 1 and 2, with its time and cost to train (1e12 tokens at one price),
to a DataFrame; CPU seconds per sweep, medians of ``--pairs`` alternations, beside the advisor's
own table of the same steps (``advise_strategy_nodes`` per micro-batch: the same steps without
the table and the cost columns, the floor the sweep's pricing can reach), then the CPU time of
each stage of a sweep (pricing, cost columns, tables, their concatenation). ``--before DIR``
times the sweep of another checkout too (``DIR`` holds its ``costmodel`` package, e.g. ``git
archive`` of an earlier commit), in a second, persistent process, the three timed in turn, in
one run::

    python benchmarks/bench_sweep.py --step-all [--before DIR] [--pairs 15]

``--step-all-large [--before DIR]``: the same question at 4 micro-batches x 5 sequence lengths x
3 accumulations (8,760 rows) in a fresh process (and one of ``DIR``'s code): CPU time and peak
RSS, the memory a long step sweep holds (``costmodel.sweep.evaluate.STEP_BATCH_ROWS``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sw = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name
from costmodel import collectives, presets  # noqa: E402

NODES = [1, 2, 4, 8, 16, 32, 64]


def _networked_presets() -> list[str]:
    """Cluster presets that can span 64 nodes (the PCIe boxes without NICs cannot)."""
    out = []
    for name in presets.names("cluster"):
        try:
            presets.cluster(name, nodes=max(NODES))
        except ValueError:
            continue
        out.append(name)
    return out


def grid_for(rows: int) -> sw.Grid:
    """The benchmark grid, with as many log-spaced sizes as it takes to reach ``rows``."""
    names = _networked_presets()
    algorithms = list(collectives.ALGORITHMS["all_reduce"])
    per_size = len(names) * len(algorithms) * len(NODES)
    sizes = whole_byte_sizes(int(np.ceil(rows / per_size)))
    return sw.make_grid(
        preset=names, model="lesson", algorithm=algorithms, nodes=NODES, size=sizes.tolist()
    )


def whole_byte_sizes(n_sizes: int) -> np.ndarray:
    """``n_sizes`` distinct log-spaced sizes from 8 B to 16 GB, in whole bytes (a sweep's
    ``size`` axis refuses a fraction of a byte)."""
    sizes = np.unique(np.round(np.geomspace(8, 16e9, n_sizes)).astype(np.int64))
    extra = n_sizes - sizes.size  # rounding merged a few small sizes: pad at the top
    if extra > 0:
        sizes = np.concatenate([sizes, sizes[-1] + np.arange(1, extra + 1)])
    return sizes


NCCL_ALGORITHMS = ["auto", "ring", "tree"]


def model_grid(rows: int, model: str) -> sw.Grid:
    """preset x nodes x sizes x 3 algorithms for one model (NCCL names for the NCCL models)."""
    names = _networked_presets()
    algorithms = (
        list(collectives.ALGORITHMS["all_reduce"])[:3] if model == "textbook" else NCCL_ALGORITHMS
    )
    per_size = len(names) * len(algorithms) * len(NODES)
    sizes = whole_byte_sizes(int(np.ceil(rows / per_size)))
    return sw.make_grid(
        preset=names, model=model, algorithm=algorithms, nodes=NODES, size=sizes.tolist()
    )


def models_side_by_side(rows: int, folder: str) -> dict[str, dict[str, float]]:
    """Sweep -> Parquet, the same grid shape for each model, in this one process."""
    out = {}
    sw.sweep(model_grid(1000, "nccl"))  # warm-up
    for model in ("textbook", "nccl", "nccl-table"):
        grid = model_grid(rows, model)
        path = os.path.join(folder, f"{model}.parquet")
        summary, wall = _timed(lambda g=grid, p=path: sw.sweep_to_file(p, g))
        out[model] = {
            "rows": summary.rows,
            "wall_s": wall,
            "cpu_s": _CPU[0],
            "rows_per_cpu_s": summary.rows / _CPU[0],
        }
    return out


#: the every-model grid: 5 presets (NVSwitch H100/A100/B200 with InfiniBand, EFA, GH200
#: Slingshot) x nodes 1..8192 x 31 sizes (8 B .. 8 GiB x2) = 1,269,760 rows per model
EVERY_MODEL_PRESETS = ["dgx-h100", "dgx-a100", "aws-p5", "dgx-b200", "alps-gh200"]
EVERY_MODEL_NODES = 8192
EVERY_MODEL_SIZES = [2**k for k in range(3, 34)]
#: every model a preset without a calibration answers with (``calibrated`` needs a calibration)
EVERY_MODEL = ("lesson", "textbook", "nccl", "nccl-table")
#: the goal for every model on that grid (rows per second, in one run side by side)
EVERY_MODEL_GOAL_ROWS_PER_S = 1e6

#: ``--quick``: the sizes of every part (rows in memory and streamed, the every-model grid's
#: largest node count and its repeats), small enough for a few seconds, too small for a goal
QUICK = {"rows": 1e4, "stream_rows": 1e4, "every_model_nodes": 64, "repeats": 1}


def every_model_side_by_side(
    repeats: int = 3, nodes: int = EVERY_MODEL_NODES
) -> dict[str, dict[str, float]]:
    """Each model on the same 5-preset x ``nodes``-node (8,192) x 31-size grid -> DataFrame, in
    this process.

    The best of ``repeats`` (wall and CPU seconds of the same call), to keep the shared
    machine's noise out of a ratio the runs should share.
    """
    out: dict[str, dict[str, float]] = {}
    for model in EVERY_MODEL:  # warm-up: imports, preset files, fitted parameters
        sw.sweep(sw.make_grid(preset=EVERY_MODEL_PRESETS, model=model, nodes=[1, 2], size=[8]))
    for model in EVERY_MODEL:
        grid = sw.make_grid(
            preset=EVERY_MODEL_PRESETS,
            model=model,
            nodes=list(range(1, nodes + 1)),
            size=EVERY_MODEL_SIZES,
        )
        best_wall, best_cpu, rows = float("inf"), float("inf"), 0
        for _ in range(repeats):
            df, wall = _timed(lambda g=grid: sw.sweep(g))
            best_wall, best_cpu, rows = min(best_wall, wall), min(best_cpu, _CPU[0]), len(df)
            del df
        out[model] = {
            "rows": rows,
            "wall_s": best_wall,
            "cpu_s": best_cpu,
            "rows_per_s": rows / best_wall,
            "rows_per_cpu_s": rows / best_cpu,
        }
    return out


#: the ``--step-all`` grid: every layout of Llama-3.1-8B on 1..16 DGX H100 nodes, at two
#: micro-batches, with its time and cost to train
STEP_ALL = {
    "preset": "dgx-h100",
    "arch": "llama-3.1-8b",
    "strategy": "all",
    "nodes": list(range(1, 17)),
    "micro_batch": [1, 2],
    "tokens": 1e12,
    "price": "coreweave-h100-on-demand",
}


def _step_all_sweep() -> float:
    """CPU seconds of one ``strategy=all`` step sweep (:data:`STEP_ALL`) to a DataFrame."""
    grid = sw.make_grid(STEP_ALL, kind="step")
    t0 = time.process_time()
    sw.sweep(grid)
    return time.process_time() - t0


def _step_all_advisor() -> float:
    """CPU seconds of the advisor's table of the same steps (one ``advise_nodes`` per
    micro-batch; no table, no cost columns)."""
    from costmodel.strategy.advisor import advise_nodes

    t0 = time.process_time()
    for mb in STEP_ALL["micro_batch"]:
        advise_nodes(
            arch=STEP_ALL["arch"],
            cluster=STEP_ALL["preset"],
            nodes=STEP_ALL["nodes"],
            micro_batch=mb,
        )
    return time.process_time() - t0


#: the stages of a step sweep whose CPU time ``--step-all`` reports, by their function in
#: costmodel.sweep.evaluate
STEP_ALL_PARTS = {
    "pricing": "_step_rows",
    "cost columns": "_train_cost_columns",
    "tables": "_to_table",
    "concatenation": "_unify",
}


def step_all_parts(runs: int) -> dict[str, float]:
    """Median CPU seconds of each stage of one step sweep (:data:`STEP_ALL_PARTS`) and of the
    whole, over ``runs`` sweeps apart from the comparison, each stage timed by wrapping its
    function (the wrappers cost a few microseconds a call)."""
    import statistics

    from costmodel.sweep import evaluate as ev

    real = {k: getattr(ev, name) for k, name in STEP_ALL_PARTS.items()}
    acc = dict.fromkeys(STEP_ALL_PARTS, 0.0)

    def timed(part: str):
        fn = real[part]

        def inner(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                acc[part] += time.process_time() - t0

        return inner

    spent: dict[str, list[float]] = {k: [] for k in [*STEP_ALL_PARTS, "whole"]}
    for part, name in STEP_ALL_PARTS.items():
        setattr(ev, name, timed(part))
    try:
        for _ in range(runs):
            acc.update(dict.fromkeys(acc, 0.0))
            spent["whole"].append(_step_all_sweep())
            for part in STEP_ALL_PARTS:
                spent[part].append(acc[part])
    finally:
        for part, name in STEP_ALL_PARTS.items():
            setattr(ev, name, real[part])
    return {k: statistics.median(v) for k, v in spent.items()}


#: ``--step-all-large``: the same question at 4 micro-batches x 5 sequence lengths x 3
#: accumulations (8,760 rows), for the memory a long step sweep holds
STEP_ALL_LARGE = {
    **STEP_ALL,
    "micro_batch": [1, 2, 4, 8],
    "sequence_length": [1024, 2048, 4096, 8192, 16384],
    "accumulation": [1, 2, 4],
}


def _step_all_large_child() -> None:
    """One large step sweep in this fresh process: rows, CPU seconds, peak RSS (JSON)."""
    grid = sw.make_grid(STEP_ALL_LARGE, kind="step")
    df, _ = _timed(lambda: sw.sweep(grid))
    print(json.dumps({"rows": len(df), "cpu_s": _CPU[0], "peak_rss_MB": _peak_rss_mb()}))


def step_all_large(before: str | None) -> None:
    """:data:`STEP_ALL_LARGE` in a fresh process of this code (and of ``before``'s): CPU time
    and peak RSS, the memory the priced rows hold."""
    for label, path in (("now", None), ("before", before)):
        if label == "before" and path is None:
            continue
        env = dict(os.environ)
        if path is not None:
            env["PYTHONPATH"] = os.path.abspath(path)
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--step-all-large-child"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{label:6s} step sweep strategy=all, {r['rows']:,} rows: {r['cpu_s']:.2f} s CPU, "
            f"peak RSS {r['peak_rss_MB']:.0f} MB (a fresh process)"
        )


def _serve_step_all() -> None:
    """The other side of ``--before``: one step sweep per line read, its CPU seconds."""
    _step_all_sweep()  # imports, presets, the work kept across sweeps
    import costmodel

    print(os.path.dirname(os.path.dirname(costmodel.__file__)), flush=True)
    for _ in sys.stdin:
        print(repr(_step_all_sweep()), flush=True)


def step_all_side_by_side(pairs: int, before: str | None) -> dict[str, list[float]]:
    """This code's step sweep, the advisor's table of the same steps and (``before``) the
    sweep of another checkout, timed in turn ``pairs`` times (CPU seconds)."""
    import statistics

    child = None
    if before is not None:
        child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve-step-all"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.path.abspath(before)},
        )
        assert child.stdin is not None and child.stdout is not None
        print(f"before: {child.stdout.readline().strip()}")
    rows = sw.make_grid(STEP_ALL, kind="step").rows
    _step_all_sweep(), _step_all_advisor()  # warm-up
    times: dict[str, list[float]] = {"sweep": [], "advisor": []}
    if child is not None:
        times["before"] = []
    try:
        for _ in range(pairs):
            if child is not None:
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write("\n")
                child.stdin.flush()
                times["before"].append(float(child.stdout.readline()))
            times["sweep"].append(_step_all_sweep())
            times["advisor"].append(_step_all_advisor())
    finally:
        if child is not None:
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(
        f"step sweep strategy=all, {rows} rows (Llama-3.1-8B, 1..16 DGX H100 nodes, micro-batch "
        f"1 and 2, time and cost to train), CPU ms, medians of {pairs} (fastest):"
    )
    for k in times:
        print(f"  {k:8s} {med[k] * 1e3:7.0f} ({best[k] * 1e3:.0f})")
    if "before" in med:
        print(
            f"  before/now {med['before'] / med['sweep']:.2f}x medians, "
            f"{best['before'] / best['sweep']:.2f}x fastest; before/advisor "
            f"{med['before'] / med['advisor']:.2f}x"
        )
    print(
        f"  now/advisor {med['sweep'] / med['advisor']:.2f}x medians, "
        f"{best['sweep'] / best['advisor']:.2f}x fastest"
    )
    parts = step_all_parts(pairs)
    rest = parts["whole"] - sum(parts[k] for k in STEP_ALL_PARTS)
    print(
        f"  one sweep's stages, CPU ms, medians of {pairs} more sweeps: "
        + ", ".join(f"{k} {parts[k] * 1e3:.0f}" for k in STEP_ALL_PARTS)
        + f", the rest (grid, DataFrame) {rest * 1e3:.0f}; whole {parts['whole'] * 1e3:.0f}"
    )
    return times


def _timed(fn):
    """(result, wall seconds); the CPU seconds of the last call are kept in _CPU[0]."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    _CPU[0] = time.process_time() - c0
    return out, time.perf_counter() - t0


_CPU = [0.0]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def in_memory(rows: int, folder: str) -> dict[str, float]:
    grid = grid_for(rows)
    sw.sweep(grid_for(1000))  # warm-up: imports and preset files, paid once per process
    df, t_df = _timed(lambda: sw.sweep(grid))
    cpu_df = _CPU[0]
    csv = os.path.join(folder, "sweep.csv")
    pq = os.path.join(folder, "sweep.parquet")
    _, t_csv = _timed(lambda: sw.write_table(csv, df))
    cpu_csv = _CPU[0]
    _, t_pq = _timed(lambda: sw.write_table(pq, df))
    cpu_pq = _CPU[0]
    s_csv, t_scsv = _timed(lambda: sw.sweep_to_file(csv, grid))
    s_pq, t_spq = _timed(lambda: sw.sweep_to_file(pq, grid))
    n = len(df)
    return {
        "rows": n,
        "columns": df.shape[1],
        "dataframe_s": t_df,
        "dataframe_cpu_s": cpu_df,
        "csv_write_s": t_csv,
        "csv_write_cpu_s": cpu_csv,
        "parquet_write_s": t_pq,
        "parquet_write_cpu_s": cpu_pq,
        "csv_sweep_and_write_s": t_scsv,
        "parquet_sweep_and_write_s": t_spq,
        "dataframe_rows_per_s": n / t_df,
        "csv_rows_per_s": n / t_csv,
        "parquet_rows_per_s": n / t_pq,
        "csv_MB": os.path.getsize(csv) / 1e6,
        "parquet_MB": os.path.getsize(pq) / 1e6,
        "peak_rss_MB": _peak_rss_mb(),
    }


def _stream_child(rows: int, path: str, chunk_rows: int) -> None:
    grid = grid_for(rows)
    summary, seconds = _timed(lambda: sw.sweep_to_file(path, grid, chunk_rows=chunk_rows))
    print(
        json.dumps(
            {
                "rows": summary.rows,
                "seconds": seconds,
                "peak_rss_MB": _peak_rss_mb(),
                "file_MB": os.path.getsize(path) / 1e6,
                "chunk_rows": chunk_rows,
            }
        )
    )


def streamed(rows: int, folder: str, chunk_rows: int) -> dict[str, float]:
    """Stream a large sweep to Parquet in a fresh process; report its peak RSS."""
    path = os.path.join(folder, "stream.parquet")
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(rows), path, str(chunk_rows)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["rows_per_s"] = result["rows"] / result["seconds"]
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=float, default=1e6)
    p.add_argument("--stream-rows", type=float, default=1e7)
    p.add_argument("--chunk-rows", type=int, default=sw.DEFAULT_CHUNK_ROWS)
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--quick",
        action="store_true",
        help="every part at its smallest sizes, to see it run (a few seconds; no goal judged)",
    )
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--serve-step-all", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--step-all",
        action="store_true",
        help="only the strategy=all step sweep, beside the advisor (and --before's sweep)",
    )
    p.add_argument(
        "--step-all-large",
        action="store_true",
        help="only an 8,760-row strategy=all step sweep: CPU time and peak RSS (and --before's)",
    )
    p.add_argument("--step-all-large-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--before", default=None, help="a directory holding the code to compare")
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument(
        "--models-only", action="store_true", help="only the realistic vs textbook comparison"
    )
    p.add_argument(
        "--every-model",
        action="store_true",
        help="only every model on the 5-preset x 8,192-node x 31-size grid, side by side",
    )
    args = p.parse_args(argv)
    for flag, least in (("--rows", 1), ("--stream-rows", 1), ("--chunk-rows", 1), ("--pairs", 1)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            p.error(f"{flag} must be at least {least} (got {value:g})")
    if args.quick:
        args.rows, args.stream_rows = QUICK["rows"], QUICK["stream_rows"]
    if args.child:
        _stream_child(int(float(args.child[0])), args.child[1], int(args.child[2]))
        return 0
    if args.serve_step_all:
        _serve_step_all()
        return 0
    if args.step_all_large_child:
        _step_all_large_child()
        return 0
    if args.step_all_large:
        step_all_large(args.before)
        return 0
    if args.step_all:
        times = step_all_side_by_side(args.pairs, args.before)
        if args.json:
            print(json.dumps(times, indent=2))
        return 0
    nodes = int(QUICK["every_model_nodes"]) if args.quick else EVERY_MODEL_NODES
    every = every_model_side_by_side(int(QUICK["repeats"]) if args.quick else 3, nodes)
    for model, r in every.items():
        # per core: on a shared machine the wall clock counts the other users' processes
        verdict = "met" if r["rows_per_cpu_s"] >= EVERY_MODEL_GOAL_ROWS_PER_S else "NOT met"
        if args.quick:
            verdict = "not judged, --quick"
        print(
            f"{model:10s} 5 presets x 1..{nodes} nodes x 31 sizes -> DataFrame: "
            f"{r['rows']:,} rows, {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, "
            f"{r['rows_per_s']:,.0f} rows/s, {r['rows_per_cpu_s']:,.0f} rows/CPU-s "
            f"(goal >= {EVERY_MODEL_GOAL_ROWS_PER_S:.0e} rows/s per core: {verdict})"
        )
    if args.every_model:
        if args.json:
            print(json.dumps(every, indent=2))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        side = models_side_by_side(int(args.rows), folder)
    book = side["textbook"]["rows_per_cpu_s"]
    for model, r in side.items():
        print(
            f"{model:10s} preset x nodes x sizes x algorithm -> Parquet: {r['rows']:,} rows, "
            f"{r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, {r['rows_per_cpu_s']:,.0f} rows/CPU-s "
            f"({r['rows_per_cpu_s'] / book:.2f} x textbook)"
        )
    print(
        "goal: nccl >= 1e6 rows/CPU-s and >= 0.5 x textbook"
        + (" (not judged: --quick's grids are too small)" if args.quick else "")
    )
    if args.models_only:
        return 0
    with tempfile.TemporaryDirectory() as folder:
        mem = in_memory(int(args.rows), folder)
        small = streamed(int(args.rows), folder, args.chunk_rows)
        big = streamed(int(args.stream_rows), folder, args.chunk_rows)
    figures = {
        "in_memory": mem,
        "streamed_small": small,
        "streamed_large": big,
        "targets": {"csv_write_s": 3.0, "parquet_write_s": 1.0},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"grid: {mem['rows']:,} rows x {mem['columns']} columns "
        "(textbook all-reduce algorithms x networked presets x nodes x sizes)"
    )
    print("                         wall      CPU")
    print(
        f"  sweep -> DataFrame     {mem['dataframe_s']:6.2f} s {mem['dataframe_cpu_s']:6.2f} s"
        f"  {mem['dataframe_rows_per_s']:>10,.0f} rows/s"
    )
    print(
        f"  DataFrame -> CSV       {mem['csv_write_s']:6.2f} s {mem['csv_write_cpu_s']:6.2f} s"
        f"  {mem['csv_rows_per_s']:>10,.0f} rows/s  {mem['csv_MB']:.0f} MB  (target <= 3 s)"
    )
    print(
        f"  DataFrame -> Parquet   {mem['parquet_write_s']:6.2f} s {mem['parquet_write_cpu_s']:6.2f} s"
        f"  {mem['parquet_rows_per_s']:>10,.0f} rows/s  {mem['parquet_MB']:.0f} MB  (target <= 1 s)"
    )
    print(f"  sweep -> CSV, streamed {mem['csv_sweep_and_write_s']:6.2f} s")
    print(f"  sweep -> Parquet, str. {mem['parquet_sweep_and_write_s']:6.2f} s")
    print(f"  peak RSS, in memory    {mem['peak_rss_MB']:6.0f} MB")
    for label, r in (("streamed", small), ("streamed", big)):
        print(
            f"{label} to Parquet: {r['rows']:,} rows in {r['seconds']:.1f} s "
            f"({r['rows_per_s']:,.0f} rows/s), peak RSS {r['peak_rss_MB']:.0f} MB "
            f"(chunks of {r['chunk_rows']:,} rows)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
