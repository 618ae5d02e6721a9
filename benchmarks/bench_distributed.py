"""Benchmark: the same sweep to Parquet in one process vs on a Dask LocalCluster of 2 workers.

Side by side in one run, on the same grid (a raw-link textbook grid: ``size`` x ``ranks`` x
``bandwidth``, the cheapest rows, so the engine's overhead shows rather than the model's):

- **1 process**: :func:`costmodel.sweep.sweep_to_file` to one Parquet file;
- **dask, 2 workers**: :func:`costmodel.distributed.sweep_dask` on a ``LocalCluster`` of 2
  single-threaded worker processes, one Parquet file per partition. The cluster's start is timed
  apart, with the workers' imports and first calls (paid once per session, not per sweep); the
  single process makes the same first calls before it is timed.

Both cut the grid the same way: 1e6-row chunks/partitions, or ``rows / (8 workers)`` for a small
grid so that every worker has work.

Times are wall-clock (the point is parallelism), so they move with other load on the machine:
read the ratio, and the load average printed with it. CPU seconds (this process; the workers'
processes summed, plus the driver) show the engine's overhead apart from the load. A realistic (``model="nccl"``) grid is
``--realistic``: a preset x nodes x sizes grid, far slower per row.

Usage: ``python benchmarks/bench_distributed.py [--rows 1e8] [--realistic]``
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from costmodel import distributed as dist

sw = importlib.import_module("costmodel.sweep")

SIZES = "8B..16GB x2"  # 32 sizes, nccl-tests' doubling range
BANDWIDTHS = ",".join(f"{10 * k}GB/s" for k in range(1, 11))  # 10 link bandwidths


def _grid(rows: float, realistic: bool) -> sw.Grid:
    if realistic:  # 31 sizes x 2 algorithms x 2 presets per node count
        nodes = max(1, round(rows / (31 * 2 * 2)))
        return sw.make_grid(
            preset="dgx-h100,dgx-a100",
            nodes=f"1..{nodes}",
            size="8B..8GB x2",
            algorithm="auto,ring",
        )
    ranks = max(2, round(rows / 320))
    return sw.make_grid(size=SIZES, bandwidth=BANDWIDTHS, ranks=f"2..{ranks + 1}")


def _warm(folder) -> None:
    """Imports and first calls (pyarrow.parquet, the model modules), paid once per process."""
    import importlib
    import uuid
    from pathlib import Path

    m = importlib.import_module("costmodel.sweep")  # not the global: this runs on the workers
    g = m.make_grid(preset="dgx-h100", size="8B,1GB", algorithm="auto,ring")
    m.sweep_to_file(Path(folder) / f"{uuid.uuid4().hex}.parquet", g)
    m.sweep(size="8B", ranks=8, bandwidth="50GB/s")


def main(
    rows: float = 1e8, realistic: bool = False, workers: int = 2, part: int = 0
) -> dict[str, float]:
    from dask.distributed import Client, LocalCluster

    grid = _grid(rows, realistic)
    # enough partitions to keep every worker busy: 1e6 rows, or fewer for a small grid
    part = part or min(sw.DEFAULT_CHUNK_ROWS, -(-grid.rows // (8 * workers)))
    tmp = Path(tempfile.mkdtemp(prefix="bench_distributed_"))
    try:
        print(
            f"{grid.rows:.3g} rows ({'nccl, presets' if realistic else 'textbook, raw link'}); "
            f"{part:.3g}-row chunks/partitions; {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f} at start"
        )
        (tmp / "warm-local").mkdir()
        (tmp / "warm-worker").mkdir()
        _warm(tmp / "warm-local")
        t0, c0 = time.perf_counter(), time.process_time()
        s1 = sw.sweep_to_file(tmp / "one.parquet", grid, chunk_rows=part)
        t_one, c_one = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            client.run(_warm, str(tmp / "warm-worker"))  # imports, first calls
            t_start = time.perf_counter() - t0
            w0 = sum(client.run(time.process_time).values())
            t0, c0 = time.perf_counter(), time.process_time()
            s2 = dist.sweep_dask(tmp / "ds", grid, scheduler=client, partition_rows=part)
            t_dask, c_drv = time.perf_counter() - t0, time.process_time() - c0
            c_work = sum(client.run(time.process_time).values()) - w0
        assert s1.rows == s2.rows == grid.rows
        one_mb = (tmp / "one.parquet").stat().st_size / 1e6
        ds_mb = sum(p.stat().st_size for p in (tmp / "ds").glob("*.parquet")) / 1e6
        print(f"{'engine':<22}{'wall s':>9}{'rows/s':>11}{'CPU s':>8}{'MB written':>12}")
        print(
            f"{'1 process':<22}{t_one:>9.1f}{grid.rows / t_one:>11.3g}{c_one:>8.1f}{one_mb:>12.0f}"
        )
        print(
            f"{f'dask, {workers} workers':<22}{t_dask:>9.1f}{grid.rows / t_dask:>11.3g}"
            f"{c_work + c_drv:>8.1f}{ds_mb:>12.0f}   (+{t_start:.1f} s cluster start; CPU: "
            f"workers {c_work:.1f} s + driver {c_drv:.1f} s)"
        )
        print(
            f"speed-up dask/1 process: {t_one / t_dask:.2f}x "
            f"({t_one / (t_dask + t_start):.2f}x with the cluster start); "
            f"load average {os.getloadavg()[0]:.1f} at end"
        )
        return {"rows": grid.rows, "one_s": t_one, "dask_s": t_dask, "start_s": t_start}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--realistic", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partition-rows", type=int, default=0, help="0: automatic")
    args = parser.parse_args()
    for flag, least in (("--rows", 1), ("--workers", 1), ("--partition-rows", 0)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    main(args.rows, args.realistic, args.workers, args.partition_rows)
