r"""Batch evaluation: presets x grids of sizes, GPU counts and algorithms, to a DataFrame or a file.

A sweep is a grid: categorical axes (preset, model, op, algorithm, recipe, ...) crossed with
numeric axes (size, ranks, nodes, bandwidth, params, ...). Every combination is one row. The
numbers come from the same functions the CLI, the scenario and the app call
(:func:`costmodel.predict.predict_collective` for presets, :mod:`costmodel.collectives` for a raw
link, :func:`costmodel.memory.training_memory`), called once per block of rows with numpy arrays:
no per-row Python (a named architecture's memory rows are evaluated one by one; step rows are steps, priced together on the advisor's batched road). Large grids are produced in chunks so a file can be written with bounded
memory (:func:`sweep_to_file`); :func:`sweep` gathers the chunks into one DataFrame.

Grid values are written as lists (``[8, 64]``, ``"8,64"``) or ranges:

- ``"8..4096x2"``: geometric, start times 2 until the stop (both ends included when hit);
- ``"8B..16GB x2"``: the same with units, parsed by :mod:`costmodel.units`;
- ``"1..8"``, ``"0..64+8"``: arithmetic, step 1 by default for integer axes;
- ``"8B:8GB"``: nccl-tests' ``-b 8 -e 8G -f 2`` doubling range.

Output columns carry their unit in the name (``size_bytes``, ``time_s``, ``algbw_GBps``,
``busbw_GBps``, ``memory_GB``); GB is 1e9 B, as nccl-tests prints it. Preset rows also carry
``error_band_pct`` (the expected ±% of the row's regime from grouped cross-validation, NaN where
no bundled run measured the regime or fabric), ``time_lo_s`` and ``time_hi_s`` (the time at the
band's fast and slow ends: asymmetric), ``regime`` (:mod:`costmodel.uncertainty`) and
``band_note`` (why a NaN band is unknown, as ``costmodel collective`` explains its "± ?"; empty
where the band is known).

The package keeps its seams apart: :mod:`.grid` (axes, value syntax, checks, combinations),
:mod:`.evaluate` (rows as pyarrow tables) and :mod:`.output` (CSV/Parquet files, atomic); this
module holds the drivers :func:`sweep` and :func:`sweep_to_file` and re-exports every public name.
``costmodel.sweep`` is callable as :func:`sweep` (``cm.sweep(...)``).

>>> parse_values("ranks", "8..64x2")
[8, 16, 32, 64]
>>> parse_values("size", "1KB..8KB x2")
[1000, 2000, 4000, 8000]
>>> parse_values("size", "8B:64B")
[8, 16, 32, 64]
>>> parse_values("algorithm", "ring,tree")
['ring', 'tree']
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import types
from collections.abc import Mapping
from typing import Any

from .._limits import FIELD_MARK
from ..atomic import atomic_path, check_writable, write_text_atomic
from .evaluate import (
    DEFAULT_CHUNK_ROWS,
    _unify,
    checked_chunk_rows,
    evaluate_rows,
    iter_sweep,
)
from .grid import (
    AXES,
    KINDS,
    MAX_AXIS_VALUES,
    MAX_COUNT,
    MAX_GRID_ROWS,
    Axis,
    Grid,
    _as_grid,
    load_grid,
    make_grid,
    parse_set,
    parse_values,
)
from .output import (
    OUTPUT_FORMATS,
    RowErrors,
    SweepSummary,
    csv_ready,
    output_format,
    read_table,
    text_ready,
    to_frame,
    write_table,
)

__all__ = [
    "AXES",
    "DEFAULT_CHUNK_ROWS",
    "ENGINES",
    "KINDS",
    "MAX_AXIS_VALUES",
    "MAX_COUNT",
    "MAX_GRID_ROWS",
    "MAX_IN_MEMORY_ROWS",
    "OUTPUT_FORMATS",
    "Axis",
    "Grid",
    "RowErrors",
    "SweepSummary",
    "atomic_path",
    "check_writable",
    "evaluate_rows",
    "iter_sweep",
    "load_grid",
    "make_grid",
    "csv_ready",
    "output_format",
    "parse_set",
    "parse_values",
    "read_table",
    "sweep",
    "sweep_to_file",
    "text_ready",
    "to_frame",
    "write_table",
    "write_text_atomic",
]

MAX_IN_MEMORY_ROWS = 50_000_000
"""Above this many rows :func:`sweep` refuses and points to :func:`sweep_to_file` (streaming)."""

ENGINES = ("local", "dask")
"""Where a sweep runs: this process, or a Dask cluster (:mod:`costmodel.distributed`)."""


def sweep(
    grid: Grid | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    kind: str = "collective",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    engine: str = "local",
    scheduler: Any = None,
    output: str | os.PathLike[str] | None = None,
    **axes: Any,
) -> Any:
    """Evaluate every combination of a grid into one DataFrame (the engine the CLI uses).

    Parameters
    ----------
    grid : Grid, mapping, TOML path or None
        The grid; keyword ``axes`` are added to (or override) it.
    kind : {"collective", "memory", "step"}
        What to evaluate (a TOML grid file's own ``kind``, when it names one). Collective rows come from
        :func:`costmodel.predict.predict_collective` when a ``preset`` axis is given (``model``
        "nccl" by default), else from the textbook formulas over a raw ``bandwidth`` and
        ``ranks``. Memory rows come from :func:`costmodel.memory.training_memory` for bare
        ``params`` counts, or, with an ``arch`` axis (a named architecture), from
        :func:`costmodel.strategy.memory.stage_memory` as ``costmodel memory --arch`` calls it
        (:func:`~costmodel.sweep.evaluate.memory_row`); a ``zero_stage`` or a ``strategy`` (with
        ``group_size``, ``reshard_after_forward``, ddp's ``gradient_as_bucket_view``, and the
        step sweep's ``param_dtype``, ``grad_dtype`` and ``bucket_cap``) names
        the layout, as ``costmodel memory
        --strategy`` (:func:`costmodel.strategy.memory.memory_layout`); without a ``ranks``
        axis the rows shard over one node (:func:`costmodel.hardware.default_ranks`: the
        ``preset``'s GPUs per node or its ``gpus_per_node`` slice, else 8), as ``costmodel
        memory`` without ``--ranks``. ``"step"``: one
        :func:`costmodel.strategy.strategy_step` per row; with ``tokens`` (a token budget) and
        optionally ``price`` (presets, at most one per GPU) or ``usd_per_gpu_hour`` (one typed
        rate for every row: a ``UserWarning`` names the GPUs when the rows span several), each row
        also gets its time and cost to train from :func:`costmodel.training.training_cost`, as
        ``costmodel train`` (:data:`~costmodel.sweep.evaluate.TRAIN_COST_COLUMNS`).
    chunk_rows : int
        Rows evaluated per vectorized block.
    engine : {"local", "dask"}
        ``"dask"`` evaluates the grid in partitions on a Dask cluster
        (:func:`costmodel.distributed.sweep_dask`; needs the ``distributed`` extra).
    scheduler : str, dask Client or None
        With ``engine="dask"``: a scheduler address (``"tcp://host:8786"``), a Client, or None
        for a local cluster on this machine.
    output : folder or None
        With ``engine="dask"``: write a partitioned Parquet dataset there (one file per
        partition, a rerun skips finished ones) and return its
        :class:`~costmodel.distributed.DatasetSummary` instead of a DataFrame, since a grid past
        one machine does not fit in memory.
    **axes
        Axis values, e.g. ``size="8B..16GB x2"``, ``ranks="8..4096x2"``, ``algorithm="all"``.

    Returns
    -------
    pandas.DataFrame
        Inputs then outputs, one row per combination; names carry units (``size_bytes``,
        ``time_s``, ``algbw_GBps``, ``busbw_GBps``, ``memory_GB``). An integer column with an
        empty row (a refused row's ``nodes``, ``group_size`` off hsdp) is pandas' ``Int64``,
        ``<NA>`` there (:func:`~.output.to_frame`). With ``engine="dask"`` and ``output``, the
        dataset's summary.

    Examples
    --------
    The lesson's 7B gradient all-reduce over 64 GPUs at 50 GB/s (0.551 s):

    >>> df = sweep(size="14GB", ranks=[8, 64], bandwidth="50GB/s")
    >>> df[["ranks", "time_s"]].round(3).values.tolist()
    [[8.0, 0.49], [64.0, 0.551]]
    """
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown {engine!r}; allowed: {', '.join(ENGINES)}")
    chunk_rows = checked_chunk_rows(chunk_rows)  # the dask engine's partition size too
    g = _as_grid(grid, kind, axes)
    if engine == "dask":
        from .. import distributed

        if output is not None:
            return distributed.sweep_dask(output, g, scheduler=scheduler, partition_rows=chunk_rows)
        return distributed.sweep_dask_frame(g, scheduler=scheduler, partition_rows=chunk_rows)
    if scheduler is not None or output is not None:  # name only what was given
        given = ", ".join(
            n for n, v in (("scheduler", scheduler), ("output", output)) if v is not None
        )
        hint = (
            "; to write a file here: cm.sweep.sweep_to_file(path, ...)"
            if output is not None
            else ""
        )
        raise ValueError(f"{given}: only with engine='dask'{hint}")
    if g.rows > MAX_IN_MEMORY_ROWS:
        raise ValueError(
            f"grid: {g.rows} rows is too many to hold in memory (limit {MAX_IN_MEMORY_ROWS}); "
            "stream it to a file with cm.sweep.sweep_to_file(path, ...)"
        )
    tables = list(RowErrors().watch(iter_sweep(g, chunk_rows)))  # every row failed: refused
    return to_frame(_unify(tables))


STEP_PROGRESS_ROWS = 256
"""Most rows of a step grid evaluated in one chunk while progress is shown [rows]: about 5-10 s
of work at 25-40 step rows a second, so the count moves (the same rows as one chunk)."""

PROGRESS_LINE_S = 10.0
"""Least time between two of ``progress="lines"``'s lines [s]."""


class _ProgressLines:
    """``sweep_to_file(progress="lines")``'s counter: a line on stderr at most every
    :data:`PROGRESS_LINE_S` seconds, and one at the end."""

    def __init__(self, total: int, t0: float) -> None:
        self.total, self.t0, self.rows, self.last = total, t0, 0, t0

    def __call__(self, k: int) -> None:
        self.rows += k
        now = time.perf_counter()
        if now - self.last >= PROGRESS_LINE_S:
            self.last = now
            self._say(now)

    def _say(self, now: float) -> None:
        import sys

        share = 100.0 * self.rows / self.total if self.total else 100.0
        print(
            f"sweep: {self.rows:,} of {self.total:,} rows ({share:.1f} %), {now - self.t0:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    def done(self) -> None:
        self._say(time.perf_counter())


def sweep_to_file(
    path: str | os.PathLike[str],
    grid: Grid | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    kind: str = "collective",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool | str = False,
    **axes: Any,
) -> SweepSummary:
    """Stream a sweep to CSV or Parquet (by extension) in chunks, written atomically.

    Memory is bounded by ``chunk_rows``, not by the grid; with ``progress=True`` a rich progress
    bar on stderr counts rows, with ``progress="lines"`` plain lines on stderr do (``sweep: 512
    of 95,000 rows (0.5 %), 12 s``, at most one each :data:`PROGRESS_LINE_S` and the last), for
    a log file, Slurm or CI where no bar is drawn. With either, a step grid is evaluated in
    chunks of at most :data:`STEP_PROGRESS_ROWS` rows (the same rows: a step row takes
    milliseconds, and a grid of 95,000 in one chunk reported nothing until its end). A step row
    whose step is refused is written with its reason in ``error``; the summary counts those
    rows (``failed_rows``) and their reasons (``errors``).
    """
    fmt = output_format(path)
    check_writable(path)
    chunk_rows = checked_chunk_rows(chunk_rows)
    if isinstance(grid, str | os.PathLike) and os.path.exists(path) and os.path.exists(grid):
        # the grid file read, written over by the rows (a symbolic link to it too), as
        # ``costmodel sweep GRID -o GRID`` refuses it: atomically replaced, it had no way back
        if os.path.samefile(path, grid):
            raise ValueError(
                f"output: {os.fspath(path)!r} is the grid file this sweep reads "
                f"({os.fspath(grid)!r}); writing it would replace it; give another file name"
            )
    g = _as_grid(grid, kind, axes)
    total = g.rows
    tally = RowErrors()  # rows refused one by one (a step sweep's error column)
    t0 = time.perf_counter()
    if progress not in (False, True, "lines"):
        raise ValueError(f"progress: must be True, False or 'lines', got {progress!r}")
    if progress and g.kind == "step":  # counted as it goes, not in one chunk at the end
        chunk_rows = min(chunk_rows, STEP_PROGRESS_ROWS)
    if progress == "lines":
        counter = _ProgressLines(total, t0)
        rows = write_table(
            path, tally.watch(iter_sweep(g, chunk_rows)), progress=counter, total_rows=total
        )
        counter.done()
    elif progress:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        with Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("rows", total=total)
            rows = write_table(
                path,
                tally.watch(iter_sweep(g, chunk_rows)),
                progress=lambda k: bar.advance(task, k),
                total_rows=total,
            )
    else:
        rows = write_table(path, tally.watch(iter_sweep(g, chunk_rows)), total_rows=total)
    seconds = time.perf_counter() - t0
    # each reason in the words of the file's error column (plain_errors), so a script finds
    # its rows by it (df.error == reason), as the Dask engine's summary reads them back
    errors: dict[str, int] = {}
    for text, count in tally.errors.items():
        said = FIELD_MARK.sub(r"\1", text)
        errors[said] = errors.get(said, 0) + count
    return SweepSummary(
        str(path),
        rows,
        seconds,
        fmt,
        tally.failed_rows,
        errors,
        tally.unfit_rows,
        tally.over_memory_rows,
        tally.unpriced_rows,
        list(tally.unpriced_presets),
    )


class _CallableModule(types.ModuleType):
    """``cm.sweep`` is both this module and its :func:`sweep` function: importing the submodule
    (``import costmodel.sweep``) rebinds the package attribute to the module, so the module itself
    forwards calls to :func:`sweep` and ``cm.sweep(...)`` works in either order of imports."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
# inspect.signature(cm.sweep) and help() show the function's parameters, not (*args, **kwargs)
__signature__ = inspect.signature(sweep)
