r"""Batch evaluation: presets x grids of sizes, GPU counts and algorithms, to a DataFrame or a file.

A sweep is a grid: categorical axes (preset, model, op, algorithm, recipe, ...) crossed with
numeric axes (size, ranks, nodes, bandwidth, params, ...). Every combination is one row. The
numbers come from the same functions the CLI, the scenario and the app call
(:func:`costmodel.predict.predict_collective` for presets, :mod:`costmodel.collectives` for a raw
link, :func:`costmodel.memory.training_memory`), called once per block of rows with numpy arrays:
no per-row Python. Large grids are produced in chunks so a file can be written with bounded
memory (:func:`sweep_to_file`); :func:`sweep` gathers the chunks into one DataFrame.

Grid values are written as lists (``[8, 64]``, ``"8,64"``) or ranges:

- ``"8..4096x2"``: geometric, start times 2 until the stop (both ends included when hit);
- ``"8B..16GB x2"``: the same with units, parsed by :mod:`costmodel.units`;
- ``"1..8"``, ``"0..64+8"``: arithmetic, step 1 by default for integer axes;
- ``"8B:8GB"``: nccl-tests' ``-b 8 -e 8G -f 2`` doubling range.

Output columns carry their unit in the name (``size_bytes``, ``time_s``, ``algbw_GBps``,
``busbw_GBps``, ``memory_GB``); GB is 1e9 B, as nccl-tests prints it. Preset rows also carry
``error_band_pct`` (the expected ±% of the row's regime from grouped cross-validation, NaN where
no bundled run measured the regime or fabric) and ``regime`` (:mod:`costmodel.uncertainty`).

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

import math
import os
import re
import sys
import time
import tomllib
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import units

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

KINDS = ("collective", "memory")
"""What a sweep evaluates: collective times (per preset or per raw link) or memory per GPU."""

DEFAULT_CHUNK_ROWS = 1_000_000
"""Rows per streamed chunk: about 60-100 MB of columns, so a 1e8-row sweep stays bounded."""

MAX_IN_MEMORY_ROWS = 50_000_000
"""Above this many rows :func:`sweep` refuses and points to :func:`sweep_to_file` (streaming)."""

ENGINES = ("local", "dask")
"""Where a sweep runs: this process, or a Dask cluster (:mod:`costmodel.distributed`)."""

MAX_AXIS_VALUES = 100_000
"""Most values one grid axis may hold (a range is counted before it is expanded)."""

MAX_GRID_ROWS = 1_000_000_000
"""Most rows a grid may evaluate to (streamed by :func:`sweep_to_file` in chunks; at a few
million rows per second this is minutes). Checked from the axis lengths before any allocation."""

MAX_COUNT = 10**9
"""Largest value of an integer axis (ranks, nodes, gpus_per_node, ...): beyond any cluster, and
far inside int64 so the evaluation's integer arrays cannot overflow."""

OUTPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
"""File extension -> format written by :func:`sweep_to_file` and :func:`write_table`."""

_GB = 1e9  # output columns in GB and GB/s use SI gigabytes, as nccl-tests does


# --- axes ------------------------------------------------------------------------------------
def _parse_int(text: Any, *, name: str) -> int:
    return units.parse_int(text, name=name, maximum=MAX_COUNT)


def _parse_float(text: Any, *, name: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: cannot parse {text!r} as a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number >= 0, got {text!r}")
    return value


def _parse_str(text: Any, *, name: str) -> str:
    s = str(text).strip()
    if not s:
        raise ValueError(f"{name}: empty value")
    return s


def _parse_bool(text: Any, *, name: str) -> bool:
    return units.parse_bool(text, name=name)  # only true/false: 'no' or '1' is refused


@dataclass(frozen=True)
class Axis:
    """One grid axis: its canonical name, parser, kind of default step and output column."""

    name: str
    parse: Callable[..., Any]
    numeric: bool
    integer: bool = False
    column: str = ""
    aliases: tuple[str, ...] = ()


AXES: dict[str, dict[str, Axis]] = {
    "collective": {
        a.name: a
        for a in (
            Axis("preset", _parse_str, False, column="preset", aliases=("cluster", "presets")),
            Axis("model", _parse_str, False, column="model"),
            Axis("op", _parse_str, False, column="op", aliases=("ops", "collective")),
            Axis(
                "algorithm", _parse_str, False, column="algorithm", aliases=("algorithms", "algo")
            ),
            Axis("protocol", _parse_str, False, column="protocol_requested", aliases=("proto",)),
            Axis("nodes", _parse_int, True, integer=True, column="nodes"),
            Axis(
                "gpus_per_node",
                _parse_int,
                True,
                integer=True,
                column="gpus_per_node",
                aliases=("gpn",),
            ),
            Axis("ranks", _parse_int, True, integer=True, column="ranks", aliases=("gpus", "n")),
            Axis("bandwidth", units.parse_rate, True, column="bandwidth_GBps", aliases=("bw",)),
            Axis("latency", units.parse_duration, True, column="latency_s", aliases=("alpha",)),
            Axis("gamma", _parse_float, True, column="gamma_s_per_byte"),
            Axis(
                "size",
                units.parse_bytes,
                True,
                column="size_bytes",
                aliases=("sizes", "message", "message_bytes", "bytes"),
            ),
        )
    },
    "memory": {
        a.name: a
        for a in (
            Axis("preset", _parse_str, False, column="preset", aliases=("cluster", "presets")),
            Axis("recipe", _parse_str, False, column="recipe", aliases=("recipes",)),
            Axis(
                "zero_stage",
                _parse_int,
                False,
                integer=True,
                column="zero_stage",
                aliases=("zero",),
            ),
            Axis(
                "ranks",
                _parse_int,
                True,
                integer=True,
                column="ranks",
                aliases=("dp_ranks", "gpus", "n"),
            ),
            Axis(
                "params",
                units.parse_count,
                True,
                column="params",
                aliases=("model_size", "parameters"),
            ),
        )
    },
}
"""Per sweep kind, the axes a grid may set, in evaluation order (the last varies fastest)."""


def _axis(kind: str, name: str) -> Axis:
    if kind not in AXES:
        raise ValueError(f"kind: unknown sweep kind {kind!r}; allowed: {', '.join(KINDS)}")
    key = name.strip().lower().replace("-", "_")
    for axis in AXES[kind].values():
        if key == axis.name or key in axis.aliases:
            return axis
    allowed = ", ".join(AXES[kind])
    raise ValueError(f"grid: unknown {kind} axis {name!r}; allowed: {allowed}")


_STOP_RE = re.compile(r"^(?P<stop>.+?)\s*(?:(?P<op>[x*+])\s*(?P<step>[0-9.eE]+))?$")


def _check_count(axis: Axis, text: str, count: float) -> None:
    """Refuse a range of more than MAX_AXIS_VALUES values before it is expanded."""
    if not count <= MAX_AXIS_VALUES:  # also catches NaN and inf
        raise ValueError(
            f"{axis.name}: range {text!r} has about {count:.3g} values; at most "
            f"{MAX_AXIS_VALUES} values per axis (MAX_AXIS_VALUES)"
        )


def _expand_range(axis: Axis, text: str) -> list[Any]:
    sep = ".." if ".." in text else ":"
    head, _, tail = text.partition(sep)
    m = _STOP_RE.match(tail.strip())
    if not head.strip() or not m:
        raise ValueError(f"{axis.name}: cannot parse range {text!r}; e.g. '8..4096x2', '8B:16GB'")
    start = axis.parse(head.strip(), name=axis.name)
    stop = axis.parse(m["stop"], name=axis.name)
    op = m["op"] or ("+" if axis.integer and sep == ".." else "x")
    if op == "*":
        op = "x"
    try:
        step = float(m["step"]) if m["step"] else (1.0 if op == "+" else 2.0)
    except ValueError:
        raise ValueError(f"{axis.name}: cannot parse the step of {text!r}") from None
    if not math.isfinite(step):
        raise ValueError(f"{axis.name}: the step of {text!r} must be finite")
    if stop < start:
        raise ValueError(f"{axis.name}: empty range {text!r} (stop {stop} < start {start})")
    values: list[float] = []
    if op == "x":
        if step <= 1 or start <= 0:
            raise ValueError(
                f"{axis.name}: a geometric range needs start > 0 and factor > 1, got {text!r}"
            )
        count = math.floor(math.log(stop / start) / math.log(step) + 1e-9) + 1
        _check_count(axis, text, count)
        values = [start * step**k for k in range(int(count))]
    else:
        if step <= 0:
            raise ValueError(f"{axis.name}: a range step must be > 0, got {text!r}")
        count = (stop - start) / step + 1
        _check_count(axis, text, count)
        values = [start + step * k for k in range(int(math.floor(count - 1 + 1e-9)) + 1)]
    if axis.integer or axis.name == "size":
        out = [int(round(v)) for v in values]
        if axis.integer and any(abs(v - round(v)) > 1e-9 for v in values):
            raise ValueError(f"{axis.name}: range {text!r} gives non-integer values")
        return list(dict.fromkeys(out))
    return values


def parse_values(name: str, spec: Any, kind: str = "collective") -> list[Any]:
    """Parse one axis' values from a list, a scalar, a comma list or a range string.

    Parameters
    ----------
    name : str
        Axis name or alias (see :data:`AXES`).
    spec : str, number or sequence
        ``"8..4096x2"``, ``"8B..16GB x2"``, ``"8B:8GB"``, ``"ring,tree"``, ``[8, 16]`` or ``8``.
    kind : str
        Sweep kind the axis belongs to.

    Returns
    -------
    list
        Values in SI units (bytes, B/s, s) or names.

    Raises
    ------
    ValueError
        Unknown axis, a value that does not parse, or an empty list or range.

    >>> parse_values("ranks", [2, "4"])
    [2, 4]
    >>> parse_values("bandwidth", "50GB/s,400Gb/s")
    [50000000000.0, 50000000000.0]
    """
    axis = _axis(kind, name)
    items: list[Any]
    if isinstance(spec, str):
        items = [s for s in (p.strip() for p in spec.split(",")) if s]
    elif isinstance(spec, Sequence | np.ndarray):
        items = list(spec)
    else:
        items = [spec]
    if len(items) > MAX_AXIS_VALUES:
        raise ValueError(
            f"{axis.name}: {len(items)} values; at most {MAX_AXIS_VALUES} values per axis "
            "(MAX_AXIS_VALUES)"
        )
    values: list[Any] = []
    for item in items:
        if len(values) > MAX_AXIS_VALUES:
            raise ValueError(
                f"{axis.name}: more than {MAX_AXIS_VALUES} values; at most {MAX_AXIS_VALUES} "
                "values per axis (MAX_AXIS_VALUES)"
            )
        if axis.numeric and isinstance(item, str) and (".." in item or ":" in item):
            values.extend(_expand_range(axis, item))
        elif axis.integer:
            values.append(_parse_int(item, name=axis.name))
        else:
            values.append(axis.parse(item, name=axis.name))
    if not values:
        raise ValueError(f"{axis.name}: empty list of values")
    return values


def parse_set(text: str) -> tuple[str, str]:
    """Split one ``--set name=values`` option into (name, values text).

    >>> parse_set("ranks=8..4096x2")
    ('ranks', '8..4096x2')
    """
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise ValueError(f"--set: expected name=v1,v2 or name=a..b x f, got {text!r}")
    return name.strip(), values.strip()


@dataclass(frozen=True)
class Grid:
    """A parsed sweep grid: kind and, per canonical axis name, its list of values (SI units)."""

    kind: str
    axes: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Number of rows the grid evaluates to (algorithm ``all`` expanded)."""
        return sum(n for _, n in _combos(self))


def make_grid(spec: Mapping[str, Any] | None = None, kind: str = "collective", **axes: Any) -> Grid:
    """Build a :class:`Grid` from a mapping and/or keyword axes (values as in :func:`parse_values`).

    >>> g = make_grid({"size": "8B:1KB"}, ranks="8,16", bandwidth="50GB/s")  # 8 B ... 512 B
    >>> g.rows, g.axes["ranks"]
    (14, [8, 16])
    """
    if kind not in KINDS:
        raise ValueError(f"kind: unknown sweep kind {kind!r}; allowed: {', '.join(KINDS)}")
    merged: dict[str, list[Any]] = {}
    for name, value in {**(spec or {}), **axes}.items():
        axis = _axis(kind, name)
        if axis.name in merged:
            raise ValueError(f"grid: axis {axis.name!r} given twice (as {name!r})")
        merged[axis.name] = parse_values(axis.name, value, kind)
    grid = Grid(kind, merged)
    _check(grid)
    _check_rows(grid)
    return grid


def _check_rows(grid: Grid) -> None:
    """Refuse a grid whose axes multiply to more than MAX_GRID_ROWS rows (before evaluating)."""
    bound = math.prod(len(v) for v in grid.axes.values())
    # 'algorithm = all' expands to at most a dozen algorithms per op
    if "all" in grid.axes.get("algorithm", []):
        bound *= 16
    if bound > MAX_GRID_ROWS:
        rows = grid.rows if bound <= 16 * MAX_GRID_ROWS else bound
        if rows > MAX_GRID_ROWS:
            raise ValueError(
                f"grid: {rows:,} rows; at most {MAX_GRID_ROWS:,} rows per sweep "
                "(MAX_GRID_ROWS): narrow an axis or split the sweep"
            )


def load_grid(path: str | os.PathLike[str]) -> Grid:
    """Read a TOML grid spec: optional ``kind = "collective"|"memory"`` and a ``[grid]`` table.

    Example file::

        kind = "collective"
        [grid]
        preset = ["dgx-h100", "dgx-a100"]
        nodes = "1..16x2"
        size = "8B..16GB x2"
        algorithm = "auto"
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ValueError(f"grid file {str(p)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"grid file {str(p)!r}: invalid TOML: {exc}") from None
    unknown = set(data) - {"kind", "grid"}
    if unknown:
        raise ValueError(
            f"grid file {str(p)!r}: unknown keys {sorted(unknown)}; allowed: kind, grid"
        )
    if not isinstance(data.get("grid"), dict) or not data["grid"]:
        raise ValueError(f"grid file {str(p)!r}: needs a non-empty [grid] table")
    return make_grid(data["grid"], kind=str(data.get("kind", "collective")))


# --- consistency and combinations -------------------------------------------------------------
def _check(grid: Grid) -> None:
    a = grid.axes
    if "model" in a:  # one name per model (costmodel.models); unknown names fail here, early
        from . import models

        a["model"] = [models.check_model(m) for m in a["model"]]
    if grid.kind == "collective":
        if "size" not in a:
            raise ValueError("grid: a collective sweep needs sizes, e.g. size=8B..16GB x2")
        if any(s <= 0 for s in a["size"]):
            raise ValueError("size: every size must be >= 1 B")
        if "preset" in a:
            extra = {"bandwidth", "latency", "gamma"} & set(a)
            if extra:
                raise ValueError(
                    f"grid: {sorted(extra)} come from the preset; give either preset or "
                    "bandwidth/latency, not both"
                )
            if "ranks" in a and ({"nodes", "gpus_per_node"} & set(a)):
                raise ValueError("grid: with a preset give ranks or nodes/gpus_per_node, not both")
        else:
            if "bandwidth" not in a:
                raise ValueError(
                    "grid: a collective sweep needs a preset (preset=dgx-h100) or a link "
                    "(bandwidth=50GB/s and ranks=...)"
                )
            if "ranks" not in a:
                raise ValueError("grid: a sweep over a raw link needs ranks, e.g. ranks=8..4096x2")
            if any(r < 2 for r in a["ranks"]):
                raise ValueError("ranks: a collective over a link needs >= 2 ranks")
            if {"nodes", "gpus_per_node", "protocol"} & set(a):
                raise ValueError("grid: nodes, gpus_per_node and protocol need a preset")
            if any(m not in _LINK_MODELS for m in a.get("model", ["textbook"])):
                raise ValueError(
                    "model: a raw link (bandwidth=...) has only model=textbook (or lesson: on "
                    "one link both are the same alpha-beta formula)"
                )
        for name in ("ranks", "nodes", "gpus_per_node"):
            if any(v < 1 for v in a.get(name, [1])):
                raise ValueError(f"{name}: every value must be >= 1")
    else:
        if "params" not in a:
            raise ValueError("grid: a memory sweep needs params, e.g. params=1B..64B x2")
        if any(v < 1 for v in a.get("ranks", [1])):
            raise ValueError("ranks: every value must be >= 1")
        if any(z not in (0, 1, 2, 3) for z in a.get("zero_stage", [0])):
            raise ValueError("zero_stage: allowed 0, 1, 2, 3")


#: the models a raw link (bandwidth=..., no cluster) can be swept with: one alpha-beta formula
_LINK_MODELS = ("textbook", "lesson")


def _algorithms(op: str, model: str, requested: list[str]) -> list[str]:
    if requested != ["all"]:
        if "all" in requested:
            raise ValueError("algorithm: 'all' cannot be mixed with named algorithms")
        return requested
    if model in _LINK_MODELS:
        from . import collectives

        if op not in collectives.ALGORITHMS:
            raise ValueError(f"op: unknown {op!r}; allowed: {', '.join(collectives.OPS)}")
        return list(collectives.ALGORITHMS[op])
    from . import nccl

    raise ValueError(
        f"algorithm: 'all' expands only for model=textbook or lesson (a cluster cannot run "
        f"every NCCL "
        f"algorithm); name them instead, from: auto, {', '.join(nccl.ALGORITHMS)}"
    )


def _presets(requested: list[Any], axes: dict[str, Any] | None = None) -> list[Any]:
    """``["all"]`` -> every cluster preset (shipped and user), else the names as given.

    With ``all``, a grid that spans more than one node (``nodes`` > 1, or ``ranks`` above a
    node's GPUs) leaves out the presets whose nodes have no network (``nics_per_node = 0``):
    "every preset" means every one that can build the grid. A preset named explicitly is
    never left out (it is refused with the reason instead).
    """
    if requested == ["all"]:
        from . import presets

        names = presets.names("cluster")
        a = axes or {}
        max_nodes = max((int(v) for v in a.get("nodes", [1])), default=1)
        max_ranks = max((int(v) for v in a.get("ranks", [1])), default=1)
        if max_nodes > 1 or max_ranks > 1:
            keep = []
            for name in names:
                c = presets.cluster(name)
                multi = max_nodes > 1 or max_ranks > c.gpus_per_node
                if not multi or c.node.nics_per_node > 0:
                    keep.append(name)
            names = keep
        return names
    if "all" in requested:
        raise ValueError("preset: 'all' cannot be mixed with named presets")
    return requested


def _ops(requested: list[str]) -> list[str]:
    if requested == ["all"]:
        from . import collectives

        return list(collectives.OPS)
    return requested


def _numeric_axes(grid: Grid) -> list[str]:
    if grid.kind == "memory":
        return ["ranks", "params"]
    names = ["nodes", "gpus_per_node", "ranks", "bandwidth", "latency", "gamma", "size"]
    return [n for n in names if n in grid.axes]


def _combos(grid: Grid) -> Iterator[tuple[dict[str, Any], int]]:
    """(categorical values, rows in that block) for every categorical combination, in order."""
    a = grid.axes
    numeric = _numeric_axes(grid)
    block = math.prod(len(a.get(n, [None])) for n in numeric)
    if grid.kind == "memory":
        for preset in _presets(a.get("preset", [None])):
            for recipe in a.get("recipe", ["mixed-adam"]):
                for zero in a.get("zero_stage", [0]):
                    yield {"preset": preset, "recipe": recipe, "zero_stage": zero}, block
        return
    default_model = "nccl" if "preset" in a else "textbook"
    for preset in _presets(a.get("preset", [None]), a):
        for model in a.get("model", [default_model]):
            for op in _ops(a.get("op", ["all_reduce"])):
                default_alg = "ring" if model in _LINK_MODELS else "auto"
                for alg in _algorithms(op, model, a.get("algorithm", [default_alg])):
                    for proto in a.get("protocol", ["auto"]):
                        cat = {
                            "preset": preset,
                            "model": model,
                            "op": op,
                            "algorithm": alg,
                            "protocol": proto,
                        }
                        yield cat, block


# --- evaluation ------------------------------------------------------------------------------
def _numeric_block(grid: Grid, start: int, stop: int) -> dict[str, np.ndarray]:
    """Values of the numeric axes for flat rows [start, stop) of one categorical block."""
    names = _numeric_axes(grid)
    shape = [len(grid.axes.get(n, [None])) for n in names]
    idx = np.unravel_index(np.arange(start, stop, dtype=np.int64), shape)
    out = {}
    for name, i in zip(names, idx, strict=True):
        values = grid.axes.get(name)
        if values is None:
            continue
        arr = np.asarray(values)
        out[name] = arr[i]
    return out


def _cluster_cache() -> Callable[[str, int, int | None], Any]:
    """Clusters by (preset, nodes, gpus_per_node); the preset file is read once per name."""
    from . import presets

    base: dict[str, Any] = {}
    cache: dict[tuple[str, int, int | None], Any] = {}

    def get(name: str, nodes: int, gpn: int | None) -> Any:
        key = (name, nodes, gpn)
        if key not in cache:
            if name not in base:
                base[name] = presets.cluster(name)
            cache[key] = presets.cluster(base[name], nodes=nodes, gpus_per_node=gpn)
        return cache[key]

    return get


@dataclass(frozen=True)
class _Cat:
    """A categorical column: integer codes into a list of names (no per-row Python strings)."""

    codes: np.ndarray
    categories: list[str]


def _categorical(parts: list[tuple[np.ndarray, Any]], n: int) -> _Cat:
    """Build one categorical column from (row mask, names for those rows) pieces."""
    codes = np.zeros(n, dtype=np.int32)
    index: dict[str, int] = {}
    for mask, names in parts:
        values = np.atleast_1d(np.asarray(names).astype(str))
        uniq, inverse = np.unique(values, return_inverse=True)
        remap = np.array([index.setdefault(str(u), len(index)) for u in uniq], dtype=np.int32)
        codes[mask] = np.broadcast_to(remap[inverse.reshape(-1)], (int(np.count_nonzero(mask)),))
    return _Cat(codes, list(index))


def _eval_collective_preset(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    from . import predict

    sizes = num["size"]
    n = len(sizes)
    base = get_cluster(cat["preset"], 1, None)
    if "ranks" in num:
        ranks = num["ranks"]
        gpn0 = base.gpus_per_node
        single = ranks <= gpn0
        bad = ~single & (ranks % gpn0 != 0)
        if bad.any():
            r = int(ranks[bad][0])
            raise ValueError(
                f"ranks: {r} GPUs cannot be built from {cat['preset']!r} nodes of {gpn0} GPUs; "
                f"use ranks <= {gpn0} or a multiple of {gpn0}, or set nodes instead"
            )
        nodes = np.where(single, 1, ranks // gpn0)
        gpn = np.where(single, ranks, gpn0)
    else:
        nodes = num.get("nodes", np.ones(n, dtype=np.int64))
        gpn = num.get("gpus_per_node", np.full(n, base.gpus_per_node, dtype=np.int64))
    if cat["model"] in ("nccl", "nccl-table") and base.calibration is None:
        return _eval_collective_vectorised(cat, sizes, nodes, gpn, base)
    time_s = np.empty(n)
    algbw = np.empty(n)
    busbw = np.empty(n)
    alg_parts: list[tuple[np.ndarray, Any]] = []
    proto_parts: list[tuple[np.ndarray, Any]] = []
    keys = nodes.astype(np.int64) * 1_000_003 + gpn.astype(np.int64)
    # rows of one (nodes, gpus_per_node) pair share a cluster: one vectorized call per pair
    uniq, inverse = np.unique(keys, return_inverse=True)
    for k in range(len(uniq)):
        mask = inverse == k
        i0 = int(np.argmax(mask))
        nn, gg = int(nodes[i0]), int(gpn[i0])
        cluster = get_cluster(cat["preset"], nn, gg)
        pred = predict.predict_collective(
            cat["op"],
            sizes[mask].astype(float),
            cluster,
            nodes=nn,
            gpus_per_node=gg,
            algorithm=cat["algorithm"],
            protocol=cat["protocol"],
            model=cat["model"],
        )
        time_s[mask] = pred.time_s
        algbw[mask] = pred.algbw_bytes_per_s
        busbw[mask] = pred.busbw_bytes_per_s
        alg_parts.append((mask, pred.algorithm))
        proto_parts.append((mask, pred.protocol))
    return {
        "preset": cat["preset"],
        "model": cat["model"],
        "op": cat["op"],
        "algorithm": cat["algorithm"],
        "protocol_requested": cat["protocol"],
        "nodes": nodes,
        "gpus_per_node": gpn,
        "ranks": nodes * gpn,
        "size_bytes": sizes,
        "time_s": time_s,
        "algbw_GBps": algbw / _GB,
        "busbw_GBps": busbw / _GB,
        "algorithm_used": _categorical(alg_parts, n),
        "protocol_used": _categorical(proto_parts, n),
        **_band_cols(cat["model"], base, nodes, sizes, calibrated=base.calibration is not None),
    }


def _band_cols(model: str, base: Any, nodes, sizes, calibrated: bool = False) -> dict[str, Any]:
    """``error_band_pct`` (±% from grouped CV, NaN where the regime has no measurement or a
    calibration answers) and ``regime`` columns (costmodel.uncertainty.band_columns)."""
    from .uncertainty import band_columns

    pct, reg = band_columns(model, base.fabric, base.intra_kind, nodes, sizes)
    if calibrated and model in ("nccl", "calibrated"):
        pct = np.full(pct.shape, np.nan)
    return {
        "error_band_pct": pct,
        "regime": _categorical([(np.ones(len(reg), bool), reg)], len(reg)),
    }


def _eval_collective_vectorised(
    cat: dict[str, Any], sizes: np.ndarray, nodes: np.ndarray, gpn: np.ndarray, base: Any
) -> dict[str, Any]:
    """NCCL models on one preset: every (nodes, GPUs per node, size) row in one array call.

    :func:`costmodel.realistic.realistic_rows` groups the rows by (GPUs per node, node class)
    once and evaluates all candidates for all rows (issue 12 item 1); the same numbers as
    ``predict_collective`` row by row (tests/test_sweep_vectorised.py).
    """
    from . import tables as T
    from .realistic import realistic_rows

    sizes = sizes.astype(float)
    t, a, p, (a_names, p_names) = realistic_rows(
        cat["op"],
        sizes,
        nodes,
        gpn,
        base,
        cat["algorithm"],
        cat["protocol"],
        corrected=cat["model"] == "nccl",
    )
    ranks = nodes * gpn
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(t > 0, sizes / np.where(t > 0, t, 1.0), 0.0)
    busbw = algbw * np.asarray(T.BUSBW_FACTOR[cat["op"]](ranks.astype(float)))
    return {
        "preset": cat["preset"],
        "model": cat["model"],
        "op": cat["op"],
        "algorithm": cat["algorithm"],
        "protocol_requested": cat["protocol"],
        "nodes": nodes,
        "gpus_per_node": gpn,
        "ranks": ranks,
        "size_bytes": sizes,
        "time_s": t,
        "algbw_GBps": algbw / _GB,
        "busbw_GBps": busbw / _GB,
        "algorithm_used": _Cat(a.astype(np.int32), a_names),
        "protocol_used": _Cat(p.astype(np.int32), p_names),
        **_band_cols(cat["model"], base, nodes, sizes),
    }


def _eval_collective_link(cat: dict[str, Any], num: dict[str, np.ndarray]) -> dict[str, Any]:
    from . import collectives

    sizes = num["size"].astype(float)
    ranks = num["ranks"]
    bw = num["bandwidth"]
    lat = num.get("latency", np.zeros(1))
    gamma = num.get("gamma", np.zeros(1))
    t = np.asarray(
        collectives.collective_time(
            cat["op"],
            sizes,
            ranks,
            bw,
            latency_s=lat,
            algorithm=cat["algorithm"],
            gamma_s_per_byte=gamma,
        ),
        dtype=float,
    )
    t = np.broadcast_to(t, sizes.shape)
    algbw = sizes / t
    busbw = algbw * np.asarray(collectives.busbw_factor(cat["op"], ranks), dtype=float)
    return {
        "model": cat.get("model") or "textbook",
        "op": cat["op"],
        "algorithm": cat["algorithm"],
        "ranks": ranks,
        "bandwidth_GBps": bw / _GB,
        "latency_s": np.broadcast_to(lat, sizes.shape),
        "gamma_s_per_byte": np.broadcast_to(gamma, sizes.shape),
        "size_bytes": num["size"],
        "time_s": t,
        "algbw_GBps": algbw / _GB,
        "busbw_GBps": busbw / _GB,
    }


def _eval_memory(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    from . import memory

    params = num["params"].astype(float)
    ranks = num.get("ranks", np.ones(len(params), dtype=np.int64))
    mb = memory.training_memory(
        params, recipe=cat["recipe"], zero_stage=cat["zero_stage"], dp_ranks=ranks
    )
    out: dict[str, Any] = {
        "recipe": cat["recipe"],
        "zero_stage": cat["zero_stage"],
        "ranks": ranks,
        "params": params,
    }
    for part, value in mb.parts().items():
        label = part[: -len("_bytes")] if part.endswith("_bytes") else part
        out[f"{label}_GB"] = np.broadcast_to(np.asarray(value, dtype=float), params.shape) / _GB
    total = np.broadcast_to(np.asarray(mb.total_bytes, dtype=float), params.shape)
    out["memory_GB"] = total / _GB
    if cat["preset"] is not None:
        gpu_bytes = float(get_cluster(cat["preset"], 1, None).gpu.memory_bytes)
        out = {"preset": cat["preset"], **out}
        out["gpu_memory_GB"] = np.full(params.shape, gpu_bytes / _GB)
        out["fits"] = total <= gpu_bytes
    return out


def _to_table(cols: dict[str, Any], n: int) -> pa.Table:
    import pyarrow as pa

    arrays = {}
    for name, value in cols.items():
        if value is None:
            continue
        if isinstance(value, _Cat):
            arrays[name] = pa.DictionaryArray.from_arrays(
                pa.array(value.codes), pa.array(value.categories, type=pa.string())
            )
        elif isinstance(value, str | int | float) or np.ndim(value) == 0:
            if isinstance(value, str):
                arrays[name] = pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])
                )
            else:
                arrays[name] = pa.array(np.full(n, value))
        elif np.asarray(value).dtype == object:
            arrays[name] = pa.array(value, type=pa.string()).dictionary_encode()
        else:
            arrays[name] = pa.array(np.ascontiguousarray(value))
    return pa.table(arrays)


def _unify(tables: list[pa.Table]) -> pa.Table:
    import pyarrow as pa

    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive").unify_dictionaries()


def iter_sweep(grid: Grid, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[pa.Table]:
    """Evaluate a grid in chunks of about ``chunk_rows`` rows (pyarrow Tables, same columns).

    Each categorical combination's numeric block is cut at ``chunk_rows``; small blocks are
    gathered until a chunk is full, so memory stays bounded by the chunk size.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows: must be >= 1, got {chunk_rows}")
    get_cluster = _cluster_cache() if "preset" in grid.axes else None
    pending: list[pa.Table] = []
    pending_rows = 0
    for cat, block in _combos(grid):
        for start in range(0, block, chunk_rows):
            stop = min(block, start + chunk_rows)
            num = _numeric_block(grid, start, stop)
            if grid.kind == "memory":
                cols = _eval_memory(cat, num, get_cluster)
            elif cat["preset"] is not None:
                cols = _eval_collective_preset(cat, num, get_cluster)
            else:
                cols = _eval_collective_link(cat, num)
            table = _to_table(cols, stop - start)
            pending.append(table)
            pending_rows += table.num_rows
            if pending_rows >= chunk_rows:
                yield _unify(pending)
                pending, pending_rows = [], 0
    if pending:
        yield _unify(pending)


def evaluate_rows(grid: Grid, start: int, stop: int) -> pa.Table:
    """Evaluate the flat rows ``[start, stop)`` of a grid, in :func:`iter_sweep`'s row order.

    Row ``i`` is the same row whatever the split, so a grid cut into row ranges (the Dask engine
    in :mod:`costmodel.distributed`) gives back, concatenated in order, the single-process sweep.
    A range may cross categorical blocks; each block's piece is evaluated with one vectorized call.
    """
    total = grid.rows
    if not 0 <= start <= stop <= total:
        raise ValueError(f"rows: need 0 <= start <= stop <= {total}, got [{start}, {stop})")
    get_cluster = _cluster_cache() if "preset" in grid.axes else None
    tables: list[pa.Table] = []
    offset = 0
    for cat, block in _combos(grid):
        lo, hi = max(start, offset) - offset, min(stop, offset + block) - offset
        offset += block
        if lo >= hi:
            if offset >= stop:
                break
            continue
        num = _numeric_block(grid, lo, hi)
        if grid.kind == "memory":
            cols = _eval_memory(cat, num, get_cluster)
        elif cat["preset"] is not None:
            cols = _eval_collective_preset(cat, num, get_cluster)
        else:
            cols = _eval_collective_link(cat, num)
        tables.append(_to_table(cols, hi - lo))
    if not tables:
        raise ValueError(f"rows: the range [{start}, {stop}) is empty")
    return _unify(tables)


def _as_grid(
    grid: Grid | Mapping[str, Any] | str | os.PathLike[str] | None,
    kind: str,
    axes: Mapping[str, Any],
) -> Grid:
    if isinstance(grid, Grid):
        if axes:
            return make_grid({**grid.axes, **axes}, kind=grid.kind)
        return grid
    if isinstance(grid, str | os.PathLike):
        loaded = load_grid(grid)
        return make_grid({**loaded.axes, **axes}, kind=loaded.kind) if axes else loaded
    return make_grid(grid, kind=kind, **axes)


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
    kind : {"collective", "memory"}
        What to evaluate. Collective rows come from
        :func:`costmodel.predict.predict_collective` when a ``preset`` axis is given (``model``
        "nccl" by default), else from the textbook formulas over a raw ``bandwidth`` and
        ``ranks``. Memory rows come from :func:`costmodel.memory.training_memory`.
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
        ``time_s``, ``algbw_GBps``, ``busbw_GBps``, ``memory_GB``). With ``engine="dask"`` and
        ``output``, the dataset's summary.

    Examples
    --------
    The lesson's 7B gradient all-reduce over 64 GPUs at 50 GB/s (0.551 s):

    >>> df = sweep(size="14GB", ranks=[8, 64], bandwidth="50GB/s")
    >>> df[["ranks", "time_s"]].round(3).values.tolist()
    [[8.0, 0.49], [64.0, 0.551]]
    """
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown {engine!r}; allowed: {', '.join(ENGINES)}")
    g = _as_grid(grid, kind, axes)
    if engine == "dask":
        from . import distributed

        if output is not None:
            return distributed.sweep_dask(output, g, scheduler=scheduler, partition_rows=chunk_rows)
        return distributed.sweep_dask_frame(g, scheduler=scheduler, partition_rows=chunk_rows)
    if scheduler is not None or output is not None:
        raise ValueError("scheduler, output: only with engine='dask' (use sweep_to_file locally)")
    if g.rows > MAX_IN_MEMORY_ROWS:
        raise ValueError(
            f"grid: {g.rows} rows is too many to hold in memory (limit {MAX_IN_MEMORY_ROWS}); "
            "stream it to a file with sweep_to_file() or `costmodel sweep -o out.parquet`"
        )
    tables = list(iter_sweep(g, chunk_rows))
    return _unify(tables).to_pandas()


# --- files -----------------------------------------------------------------------------------
def output_format(path: str | os.PathLike[str]) -> str:
    """The format for an output path from its extension: ``"csv"`` or ``"parquet"``.

    >>> output_format("out.parquet"), output_format("runs/out.csv")
    ('parquet', 'csv')
    """
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        allowed = ", ".join(OUTPUT_FORMATS)
        raise ValueError(
            f"output: unknown extension {suffix or '(none)'!r} in {str(path)!r}; allowed: {allowed}"
        )
    return OUTPUT_FORMATS[suffix]


# Atomic output (temporary file + rename) lives in costmodel.atomic, shared with validation/;
# re-exported here for the CLI and existing callers.
from .atomic import atomic_path, check_writable, write_text_atomic  # noqa: E402,F401


class _Writer:
    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        self._writer: Any = None
        self._schema: Any = None

    def write(self, table: pa.Table) -> None:
        import pyarrow as pa

        if self.fmt == "csv":
            import pyarrow.csv as pacsv

            # CSV has no dictionary type: write plain strings
            table = table.cast(
                pa.schema(
                    [
                        pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f
                        for f in table.schema
                    ]
                )
            )
            if self._writer is None:
                self._schema = table.schema
                self._writer = pacsv.CSVWriter(str(self.path), table.schema)
            self._writer.write_table(table.cast(self._schema))
        else:
            import pyarrow.parquet as pq

            if self._writer is None:
                self._schema = table.schema
                self._writer = pq.ParquetWriter(str(self.path), table.schema)
            self._writer.write_table(table.cast(self._schema))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def write_table(
    path: str | os.PathLike[str],
    chunks: Iterator[pa.Table] | pa.Table | pd.DataFrame,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write a table (or chunks of one) to CSV or Parquet, atomically. Returns rows written."""
    import pandas as pd
    import pyarrow as pa

    fmt = output_format(path)
    if isinstance(chunks, pd.DataFrame):
        chunks = iter([pa.Table.from_pandas(chunks, preserve_index=False)])
    elif isinstance(chunks, pa.Table):
        chunks = iter([chunks])
    rows = 0
    with atomic_path(path) as tmp:
        writer = _Writer(tmp, fmt)
        try:
            for table in chunks:
                writer.write(table)
                rows += table.num_rows
                if progress is not None:
                    progress(table.num_rows)
        finally:
            writer.close()
        if rows == 0:
            raise ValueError("output: nothing to write (the grid has no rows)")
    return rows


@dataclass(frozen=True)
class SweepSummary:
    """What :func:`sweep_to_file` wrote."""

    path: str
    rows: int
    seconds: float
    format: str


def sweep_to_file(
    path: str | os.PathLike[str],
    grid: Grid | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    kind: str = "collective",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = False,
    **axes: Any,
) -> SweepSummary:
    """Stream a sweep to CSV or Parquet (by extension) in chunks, written atomically.

    Memory is bounded by ``chunk_rows``, not by the grid; with ``progress=True`` a rich progress
    bar on stderr counts rows.
    """
    fmt = output_format(path)
    check_writable(path)
    g = _as_grid(grid, kind, axes)
    total = g.rows
    t0 = time.perf_counter()
    if progress:
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
                path, iter_sweep(g, chunk_rows), progress=lambda k: bar.advance(task, k)
            )
    else:
        rows = write_table(path, iter_sweep(g, chunk_rows))
    return SweepSummary(str(path), rows, time.perf_counter() - t0, fmt)


class _CallableModule(types.ModuleType):
    """``cm.sweep`` is both this module and its :func:`sweep` function: importing the submodule
    (``import costmodel.sweep``) rebinds the package attribute to the module, so the module itself
    forwards calls to :func:`sweep` and ``cm.sweep(...)`` works in either order of imports."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
