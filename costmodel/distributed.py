r"""Sweeps past one machine: a grid cut into row ranges, evaluated on a Dask cluster.

A grid of 1e10 rows (every preset, every node count to 4096, every size and model) does not fit
one machine's time budget. :func:`sweep_dask` cuts the grid's flat row order (the order of
:func:`costmodel.sweep.iter_sweep`) into partitions of ``partition_rows`` rows, sends one task
per partition to a Dask cluster, and each task evaluates its rows with
:func:`costmodel.sweep.evaluate_rows` (the same vectorized block evaluation as a local sweep)
and writes them to one Parquet file. The result is a partitioned Parquet dataset::

    out/
      _manifest.json        the grid, the partition size and the row count (written first)
      part-000000.parquet   rows [0, partition_rows)
      part-000001.parquet   rows [partition_rows, 2 partition_rows)
      ...

Decisions (the issue is silent on them):

- **Atomic partitions.** Each file is written to a hidden temporary name beside it and renamed
  when complete (:func:`costmodel.atomic.atomic_path`), so a file under its final name is always
  whole. A worker killed mid-write leaves at most a hidden ``.part-*.tmp`` file, which readers
  skip (pyarrow and pandas ignore names starting with ``.`` or ``_``) and the next run removes.
- **Resumable.** A rerun into the same folder skips every partition whose file exists and
  evaluates only the missing ones.
- **One grid per folder.** The manifest records the grid (and the SHA-256 of each preset or
  config.json file its values name); a rerun with a different grid, partition size or an
  edited input file into the same folder is refused (ValueError) rather than mixing two sweeps. A
  non-empty folder without a manifest is refused too: user files are never overwritten.
- **A sweep that answers nothing writes nothing.** A step sweep whose every row is refused
  (each row's ``error`` says why) is refused as a local one is, with its first row's reason
  (ValueError; the CLI's one line and exit 2), and the folder is left as it was: the
  partitions this run wrote are removed, and the manifest and the folder too when this run
  created them; so is a run refused by an error before any partition was written (a preset
  file its workers cannot read). The partitions are written as they finish (so an interrupted run keeps them),
  so whether any row answered is known only at the end; partitions an earlier, interrupted
  run left are not this run's to remove.
- **Shared storage.** Workers write the files themselves, so the folder must be reachable under
  the same path from every worker (a shared file system on a Slurm cluster); the driver only
  gathers row counts.
- **Row order.** Partition ``i`` holds rows ``[i P, (i+1) P)``; reading the files in name order
  (:func:`read_dataset`) gives the single-process sweep row for row.

Dask is an optional dependency: ``pip install 'costmodel[distributed]'``.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .atomic import atomic_path, folder_refusal, write_text_atomic

# the module, not the function: ``costmodel.sweep`` is also bound to :func:`costmodel.sweep.sweep`
if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

    import costmodel.sweep as sw  # the type checker sees the module the same way
else:
    sw = importlib.import_module("costmodel.sweep")

MANIFEST = "_manifest.json"
"""Name of the manifest file in a dataset folder (ignored by Parquet readers: leading ``_``)."""

PART_NAME = "part-{:06d}.parquet"
"""File name of partition ``i``: zero-padded so name order is row order."""

DATASET_FORMAT = "costmodel-sweep-dataset/1"


@dataclass(frozen=True)
class DatasetSummary:
    """What :func:`sweep_dask` did: rows in the dataset, partitions written now and skipped."""

    path: str
    rows: int
    partitions: int
    written: int
    skipped: int
    seconds: float
    format: str = "parquet-dataset"
    failed_rows: int = 0
    """Rows whose answer was refused (a step sweep's ``error`` column), kept with the reason."""
    errors: dict[str, int] = field(default_factory=dict)
    """Each distinct ``error`` -> how many rows of the dataset it refused."""
    unfit_rows: int = 0
    """Step rows whose memory per GPU is more than their GPU has (``fits`` false), as
    :attr:`costmodel.sweep.SweepSummary.unfit_rows`."""
    over_memory_rows: int = 0
    """Collective rows whose per-rank buffer is more than their GPU's memory, as
    :attr:`costmodel.sweep.SweepSummary.over_memory_rows`."""
    unpriced_rows: int = 0
    """Step rows with a token budget and no dollars, as
    :attr:`costmodel.sweep.SweepSummary.unpriced_rows`."""
    unpriced_presets: list[str] = field(default_factory=list)
    """Their cluster presets, as :attr:`costmodel.sweep.SweepSummary.unpriced_presets`."""


def plan(grid: sw.Grid, partition_rows: int) -> list[tuple[int, int]]:
    """Row ranges ``[(start, stop), ...]`` of the partitions, in order.

    >>> g = sw.make_grid(size="8B:1KB", ranks="8,16", bandwidth="50GB/s")  # 14 rows
    >>> plan(g, 5)
    [(0, 5), (5, 10), (10, 14)]
    """
    if partition_rows < 1:
        raise ValueError(f"partition_rows: must be >= 1, got {partition_rows}")
    total = grid.rows
    if total == 0:
        raise ValueError("grid: the grid has no rows")
    return [(s, min(s + partition_rows, total)) for s in range(0, total, partition_rows)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _input_files(grid: sw.Grid) -> dict[str, str]:
    """Each file the grid's values read (a preset's TOML file, an architecture's config.json or
    its folder's) -> the SHA-256 of its bytes: the manifest's record of what the rows were
    computed from, beside the names the axes hold, so a rerun after the file was edited is
    refused instead of skipping partitions computed from the old file."""
    import hashlib

    out: dict[str, str] = {}
    for axis in ("preset", "arch"):
        for v in grid.axes.get(axis, []):
            if not isinstance(v, str):
                continue
            p = Path(v).expanduser()
            if p.is_dir() and (p / "config.json").is_file():
                p = p / "config.json"
            if p.is_file():
                out[str(p.resolve())] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def manifest(grid: sw.Grid, partition_rows: int) -> dict[str, Any]:
    """The manifest of a dataset: the grid (kind and axis values in SI units), its cutting and,
    where its values name files, each file's SHA-256 (``inputs``, :func:`_input_files`)."""
    parts = plan(grid, partition_rows)
    doc: dict[str, Any] = {
        "format": DATASET_FORMAT,
        "kind": grid.kind,
        "axes": {k: _jsonable(v) for k, v in grid.axes.items()},
        "rows": grid.rows,
        "partition_rows": partition_rows,
        "partitions": len(parts),
    }
    if files := _input_files(grid):  # absent for named presets: older manifests still match
        doc["inputs"] = files
    return json.loads(json.dumps(doc))  # the form it has once read back from disk


def _prepare_folder(folder: Path, doc: dict[str, Any]) -> tuple[bool, bool]:
    """Create the folder and its manifest, or check that an existing one holds the same sweep.

    Returns whether the folder and whether the manifest were created now (what
    :func:`_undo` removes when the sweep is refused)."""
    made_folder = made_manifest = False
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"output: {str(folder)!r} is a file; the dask engine writes a folder")
    if not folder.exists() and folder.suffix.lower() == ".csv":  # a new folder named x.csv
        # of Parquet files is not the CSV file the name promises (x.parquet/ is a dataset
        # name Spark and pandas use too, so that one is kept)
        raise ValueError(
            f"output: {folder.name!r} names a CSV file, but the dask engine writes a folder of "
            f"Parquet files; allowed: a folder name, e.g. {folder.stem!r} or "
            f"'{folder.stem}.parquet' (or the local engine for one CSV file)"
        )
    if not folder.exists():
        parent = folder.parent if str(folder.parent) else Path(".")
        if not parent.is_dir():
            raise ValueError(folder_refusal(parent))
        try:
            folder.mkdir()
            made_folder = True
        except OSError as exc:
            raise ValueError(
                f"output: cannot create folder {str(folder)!r} ({exc.strerror or exc})"
            ) from exc
    mpath = folder / MANIFEST
    if mpath.exists():
        try:
            old = json.loads(mpath.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"output: unreadable manifest {str(mpath)!r}: {exc}") from None
        if old != doc:
            diff = sorted(k for k in set(old) | set(doc) if old.get(k) != doc.get(k))
            was, now = old.get("inputs") or {}, doc.get("inputs") or {}
            edited = sorted(f for f in set(was) & set(now) if was[f] != now[f])
            why = f"; edited since: {', '.join(edited)}" if edited else ""
            raise ValueError(
                f"output: folder {str(folder)!r} holds a different sweep ({', '.join(diff)} "
                f"differ{why}); write it to a new folder or delete the old one"
            )
    else:
        visible = [p.name for p in folder.iterdir() if not p.name.startswith(".")]
        if visible:
            raise ValueError(
                f"output: folder {str(folder)!r} is not empty and has no {MANIFEST}; "
                "allowed: a new or empty folder, or one this engine wrote"
            )
        write_text_atomic(mpath, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        made_manifest = True
    for stale in folder.glob(".part-*.tmp"):  # left by a worker killed mid-write
        stale.unlink(missing_ok=True)
    return made_folder, made_manifest


def _undo(folder: Path, written: list[int], made_folder: bool, made_manifest: bool) -> None:
    """Leave the folder as it was before a refused sweep: remove the partitions this run
    wrote, and the manifest and the folder when this run created them."""
    for i in written:
        (folder / PART_NAME.format(i)).unlink(missing_ok=True)
    if made_manifest:
        (folder / MANIFEST).unlink(missing_ok=True)
    if made_folder:
        try:
            folder.rmdir()
        except OSError:  # something else appeared in it meanwhile: not ours to remove
            pass


def write_partition(folder: str, grid: sw.Grid, index: int, start: int, stop: int) -> int:
    """Evaluate rows ``[start, stop)`` and write them to partition ``index``, atomically.

    Runs on a worker. Returns the rows written, 0 when the file already exists (finished by an
    earlier run).
    """
    import pyarrow.parquet as pq

    from .sweep.output import plain_errors

    path = Path(folder) / PART_NAME.format(index)
    if path.exists():
        return 0
    table = plain_errors(sw.evaluate_rows(grid, start, stop))  # as every sweep file says them
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows


@contextmanager
def _client(scheduler: Any) -> Iterator[Any]:
    """A Dask client: the one given, one connected to an address, or a local cluster."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError(
            "engine: 'dask' needs the distributed extra: pip install 'costmodel[distributed]'"
        ) from None
    if scheduler is None:
        with (
            LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            yield client
    elif isinstance(scheduler, str):
        try:
            client = Client(scheduler, timeout="30s")
        except OSError as exc:
            raise ValueError(f"scheduler: cannot reach {scheduler!r} ({exc})") from None
        with client:
            yield client
    else:
        yield scheduler


def sweep_dask(
    output: str | os.PathLike[str],
    grid: sw.Grid | Any,
    *,
    scheduler: Any = None,
    partition_rows: int = sw.DEFAULT_CHUNK_ROWS,
    kind: str = "collective",
    progress: Callable[[int], None] | None = None,
    **axes: Any,
) -> DatasetSummary:
    """Evaluate a grid on a Dask cluster into a partitioned Parquet dataset in folder ``output``.

    Parameters
    ----------
    output : folder
        Created if missing; must be reachable under the same path from every worker.
    grid : Grid, mapping, TOML path
        As for :func:`costmodel.sweep.sweep`; keyword ``axes`` are added.
    scheduler : str, dask.distributed.Client or None
        A scheduler address (``"tcp://10.0.0.1:8786"``), a Client, or None for a
        ``LocalCluster`` (one single-threaded worker process per core).
    partition_rows : int
        Rows per partition file (default 1e6: 60-100 MB of columns per task in memory).
    progress : callable or None
        Called with the row count of each partition as it finishes (skipped ones included).

    Returns
    -------
    DatasetSummary
        Rows in the dataset and how many partitions were written now or skipped.
    """
    g = sw._as_grid(grid, kind, axes)
    parts = plan(g, partition_rows)
    folder = Path(output).resolve()
    made_folder, made_manifest = _prepare_folder(folder, manifest(g, partition_rows))
    t0 = time.perf_counter()
    todo = []
    for i, (start, stop) in enumerate(parts):
        if (folder / PART_NAME.format(i)).exists():
            if progress is not None:
                progress(stop - start)
        else:
            todo.append(i)
    written, mine = 0, []  # partitions finished now; those this run wrote (not a rival's)
    if todo:
        with _client(scheduler) as client:
            from dask.distributed import as_completed

            [g_remote] = client.scatter([g], broadcast=True, hash=False)
            futures = [
                client.submit(
                    write_partition,
                    str(folder),
                    g_remote,
                    i,
                    *parts[i],
                    key=f"costmodel-part-{i}-{os.getpid()}-{t0}",
                    pure=False,
                )
                for i in todo
            ]
            index = {fut.key: i for fut, i in zip(futures, todo, strict=True)}
            try:
                for fut in as_completed(futures):
                    rows = fut.result()
                    written += 1
                    if rows:  # 0: the file was there already, another run wrote it
                        mine.append(index[fut.key])
                    if progress is not None:
                        progress(rows)
            except BaseException:
                client.cancel(futures)  # stop the rest: finished files stay, whole
                if not any(folder.glob("part-*.parquet")):
                    # refused before any partition was written (a preset file a worker
                    # cannot read, Ctrl-C at once): the folder as it was, not a new folder
                    # holding a manifest and no rows
                    _undo(folder, [], made_folder, made_manifest)
                raise
    tally = (
        _row_errors(
            folder,
            len(parts),
            # with a token budget, what tells a row with no price for its GPU
            ["error", "fits", *(("cost_usd", "price", "preset") if "tokens" in g.axes else ())],
        )
        if g.kind == "step"
        else _row_errors(folder, len(parts), ["error"])
        if g.kind == "collective" and "preset" in g.axes  # its rows a cluster refuses
        else sw.RowErrors()
    )
    if tally.rows and tally.failed_rows == tally.rows:  # nothing answered: refused, as locally
        _undo(folder, mine, made_folder, made_manifest)
        raise ValueError(next(iter(tally.errors)))
    return DatasetSummary(
        str(folder),
        g.rows,
        len(parts),
        written,
        len(parts) - len(todo),
        time.perf_counter() - t0,
        failed_rows=tally.failed_rows,
        errors=tally.errors,
        unfit_rows=tally.unfit_rows,
        over_memory_rows=tally.over_memory_rows,
        unpriced_rows=tally.unpriced_rows,
        unpriced_presets=list(tally.unpriced_presets),
    )


def _row_errors(folder: Path, partitions: int, columns: list[str]) -> sw.RowErrors:
    """The refused rows of a finished dataset (a step sweep, a collective sweep on a preset),
    read back from each partition's ``error`` column (and ``fits``, a step's) in row order:
    the first reason is the first failed row's, the one a local sweep refuses with."""
    import pyarrow.parquet as pq

    tally = sw.RowErrors()
    for i in range(partitions):
        tally.add(pq.read_table(folder / PART_NAME.format(i), columns=columns))
    return tally


def sweep_dask_frame(
    grid: sw.Grid | Any,
    *,
    scheduler: Any = None,
    partition_rows: int = sw.DEFAULT_CHUNK_ROWS,
    kind: str = "collective",
    **axes: Any,
) -> pd.DataFrame:
    """Evaluate a grid on a Dask cluster and gather it into one DataFrame (in row order).

    For grids that fit in memory (at most :data:`costmodel.sweep.MAX_IN_MEMORY_ROWS` rows);
    larger ones go to a dataset folder with :func:`sweep_dask`.
    """
    g = sw._as_grid(grid, kind, axes)
    if g.rows > sw.MAX_IN_MEMORY_ROWS:
        raise ValueError(
            f"grid: {g.rows} rows is too many to hold in memory (limit {sw.MAX_IN_MEMORY_ROWS}); "
            "write a dataset folder with output=..."
        )
    parts = plan(g, partition_rows)
    with _client(scheduler) as client:
        [g_remote] = client.scatter([g], broadcast=True, hash=False)
        futures = [
            client.submit(sw.evaluate_rows, g_remote, start, stop, pure=False)
            for start, stop in parts
        ]
        tables: list[pa.Table] = client.gather(futures)
    tables = list(sw.RowErrors().watch(iter(tables)))  # every row failed: refused, as locally
    return sw.to_frame(sw._unify(tables))


def read_dataset(folder: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a finished dataset folder into one DataFrame, partitions in row order.

    Raises ValueError when the manifest is missing or a partition is not there yet (an
    unfinished sweep: rerun it to complete it).
    """
    import pyarrow.parquet as pq

    p = Path(folder)
    try:
        doc = json.loads((p / MANIFEST).read_text())
    except FileNotFoundError:
        raise ValueError(f"dataset: {str(p)!r} has no {MANIFEST}") from None
    missing = [i for i in range(doc["partitions"]) if not (p / PART_NAME.format(i)).exists()]
    if missing:
        raise ValueError(
            f"dataset: {len(missing)} of {doc['partitions']} partitions missing in {str(p)!r} "
            f"(first: {PART_NAME.format(missing[0])}); rerun the sweep to finish it"
        )
    tables = [pq.read_table(p / PART_NAME.format(i)) for i in range(doc["partitions"])]
    return sw.to_frame(sw._unify(tables))
