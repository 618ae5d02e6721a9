"""Sweep evaluation: a grid's rows, block by block, as pyarrow tables (no per-row Python).

Preset rows come from :func:`costmodel.predict.predict_collective` (or the vectorised realistic
model), raw-link rows from :mod:`costmodel.collectives`, memory rows from
:func:`costmodel.memory.training_memory` (a named architecture's from
:func:`costmodel.strategy.memory.stage_memory`, one call per row with ``costmodel memory
--arch``'s defaults: :func:`memory_row`), step rows from the advisor's batched road
(:func:`costmodel.strategy.advisor.layout_calls` and :func:`costmodel.strategy.step.strategy_steps`,
up to :data:`STEP_BATCH_ROWS` rows at once, with ``costmodel step``'s defaults: :func:`_step_rows`), the numbers
of one :func:`costmodel.strategy.strategy_step` per row (:func:`step_row`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._limits import MAX_NODES
from .grid import _PINNED_AXES, AXES, Grid, _combos, _numeric_axes
from .output import BOOLEAN_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from ..strategy.comm import PredictionCache
    from ..strategy.step import StrategyStep

DEFAULT_CHUNK_ROWS = 1_000_000
"""Rows per streamed chunk: about 60-100 MB of columns, so a 1e8-row sweep stays bounded."""

_GB = 1e9  # output columns in GB and GB/s use SI gigabytes, as nccl-tests does


NOTES_SEPARATOR = " | "
"""Between two notes of one row in a table's ``notes`` column (the JSON keeps the list):
``row.split(" | ")`` gives the notes back. A space alone ran one into the next ("... loss fp32 a
model of 71B parameters: ..."), and ``"; "`` is inside notes (the 70B class's "Megatron-LM,
arXiv:2104.04473; Llama 3, ..."); no note the tool writes holds ``" | "``, and one that would
(a name the user gave) has it written ``" / "`` (:func:`join_notes`)."""


def join_notes(notes: Iterable[str]) -> str:
    """A row's notes as one text: each without its closing period, joined by
    :data:`NOTES_SEPARATOR` (one inside a note written ``" / "``, so that splitting on it gives
    the notes back); ``""`` for none.

    >>> join_notes(["activations: 4096 tokens", "a model of 71B parameters."])
    'activations: 4096 tokens | a model of 71B parameters'
    """
    return NOTES_SEPARATOR.join(
        t.strip().rstrip(".").replace(NOTES_SEPARATOR, " / ") for t in notes if t.strip()
    )


# --- evaluation ------------------------------------------------------------------------------
def _numeric_block(
    grid: Grid, start: int, stop: int, cat: dict[str, Any] | None = None
) -> dict[str, np.ndarray]:
    """Values of the numeric axes for flat rows [start, stop) of one categorical block; the
    axes ``cat`` pins (a step sweep's ``strategy=all``: nodes, node slice, hsdp's group) are
    one value for every row of the block."""
    pinned = (cat or {}).get("pinned") or {}
    out = {k: np.full(stop - start, v) for k, v in pinned.items() if k in _PINNED_AXES}
    names = [n for n in _numeric_axes(grid) if n not in _PINNED_AXES or n not in pinned]
    if pinned.get("group_size") is not None:
        out["group_size"] = np.full(stop - start, int(pinned["group_size"]))
    if not names:  # a step grid of categorical axes only: one row per block
        return out
    shape = [len(grid.axes.get(n, [None])) for n in names]
    idx = np.unravel_index(np.arange(start, stop, dtype=np.int64), shape)
    for name, i in zip(names, idx, strict=True):
        values = grid.axes.get(name)
        if values is None:
            continue
        arr = np.asarray(values)
        out[name] = arr[i]
    return out


def _cluster_cache() -> Callable[[str, int, int | None], Any]:
    """Clusters by (preset, nodes, gpus_per_node); the preset file is read once per name."""
    from .. import presets

    base: dict[str, Any] = {}
    cache: dict[tuple[str, int, int | None], Any] = {}

    def get(name: str, nodes: int, gpn: int | None) -> Any:
        key = (name, nodes, gpn)
        if key not in cache:
            if name not in base:
                base[name] = presets.cluster(name, field="preset")
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
    import pandas as pd

    for mask, names in parts:
        values = np.atleast_1d(np.asarray(names)).ravel()
        # hash-based (O(n)): np.unique sorted 1e6 strings, a third of a sweep's time
        inverse, uniq = pd.factorize(values, use_na_sentinel=False)
        remap = np.array([index.setdefault(str(u), len(index)) for u in uniq], dtype=np.int32)
        codes[mask] = np.broadcast_to(remap[inverse], (int(np.count_nonzero(mask)),))
    return _Cat(codes, list(index))


def ranks_slice(ranks: Any, gpus_per_node: int, preset: Any) -> tuple[np.ndarray, np.ndarray]:
    """The nodes and GPUs per node [-] that ``ranks`` GPUs of a preset whose node holds
    ``gpus_per_node`` GPUs take: ``N <= G`` ranks are one node's slice of ``N`` GPUs, a multiple
    of ``G`` is ``N / G`` whole nodes; any other count has no such shape and is refused.

    ``nodes = 1, gpus = N`` where ``N <= G``; ``nodes = N / G, gpus = G`` where ``G | N``;
    more than :data:`costmodel._limits.MAX_NODES` nodes is refused naming ``ranks``, as
    ``nodes`` past it is. The one reading of a preset's rank count: the sweep's ``ranks`` axis and every command's
    ``--cluster NAME --ranks N`` (:func:`costmodel.cli._common.preset_ranks`: ``collective``,
    whose prediction is :func:`costmodel.predict_collective` on those nodes and GPUs per node,
    ``step``, ``scenario``, ``train`` and ``batch``).

    >>> [a.tolist() for a in ranks_slice([4, 16], 8, "dgx-h100")]
    [[1, 2], [4, 8]]
    """
    r = np.atleast_1d(np.asarray(ranks, dtype=np.int64))
    single = r <= gpus_per_node
    bad = ~single & (r % gpus_per_node != 0)
    if bad.any():
        n = int(r[bad][0])
        name = preset if isinstance(preset, str) else getattr(preset, "name", preset)
        raise ValueError(
            f"ranks: {n} GPUs cannot be built from {name!r} nodes of {gpus_per_node} GPUs; "
            f"use `ranks` <= {gpus_per_node} or a multiple of {gpus_per_node}, or set `nodes` "
            "instead"
        )
    nodes = np.where(single, 1, r // gpus_per_node)
    if (nodes > MAX_NODES).any():  # as a `nodes` past a job's is refused, in the ranks' words
        n = int(r[nodes > MAX_NODES][0])
        name = preset if isinstance(preset, str) else getattr(preset, "name", preset)
        raise ValueError(
            f"ranks: {n:,} GPUs are {n // gpus_per_node:,} nodes of {name!r}, more than the "
            f"{MAX_NODES:,} of a job; allowed: `ranks` up to {gpus_per_node * MAX_NODES:,} "
            "there"
        )
    return nodes, np.where(single, r, gpus_per_node)


def ranks_rows(
    ranks: Any, gpus_per_node: int, preset: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ranks_slice` row by row, for ``preset=all``: each count's nodes and GPUs per
    node [-], and ``""``, or, for a count the preset's node cannot build, 0 nodes of 0 GPUs
    (no shape: never a cluster) and the refusal :func:`ranks_slice` gives for it alone, in its
    words (``ranks: 128 GPUs cannot be built from 'gb200-nvl72' nodes of 72 GPUs; ...``).

    The decision: a preset the user named refuses an impossible count up front, the whole
    grid (:func:`costmodel.sweep.grid._check_preset_ranks`); presets ``preset=all`` expanded
    are every preset, and one whose node cannot build a count (a 72-GPU NVL72 node and 128
    ranks) answers that pair as refused rows with this reason in ``error``, the other pairs
    being answered (a grid with no buildable pair at all is refused up front, as before).

    >>> nodes, gpn, why = ranks_rows([64, 128, 144], 72, "gb200-nvl72")
    >>> nodes.tolist(), gpn.tolist(), [w[:36] for w in why]
    ([1, 0, 2], [64, 0, 72], ['', 'ranks: 128 GPUs cannot be built from', ''])
    """
    r = np.atleast_1d(np.asarray(ranks, dtype=np.int64))
    why = np.full(len(r), "", dtype=object)
    try:  # the common grid: every count has a shape
        nodes, gpn = ranks_slice(r, gpus_per_node, preset)
        return nodes, gpn, why
    except ValueError:
        pass
    counts, inverse = np.unique(r, return_inverse=True)
    said = np.full(len(counts), "", dtype=object)
    for i, value in enumerate(counts.tolist()):  # each count alone: its refusal, word for word
        try:
            ranks_slice([value], gpus_per_node, preset)
        except ValueError as exc:
            said[i] = " ".join(str(exc).split())
    why = said[inverse.ravel()]
    built = why == ""
    nodes = np.zeros(len(r), dtype=np.int64)
    gpn = np.zeros(len(r), dtype=np.int64)
    if built.any():
        nodes[built], gpn[built] = ranks_slice(r[built], gpus_per_node, preset)
    return nodes, gpn, why


def _step_shape(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, np.ndarray]:
    """A step piece's numeric values with its ``ranks`` (a rank count of the preset, ``step
    --cluster NAME --ranks N``) read as the ``nodes`` and ``gpus_per_node`` of each row by
    :func:`ranks_slice` on the preset's node, first, as the rows write them (``step --json``'s
    ``nodes``, ``gpus_per_node`` and ``ranks``); a piece without ``ranks``, or read already,
    as it is. A count the preset's node cannot build (``preset=all``, :func:`ranks_rows`) is 0
    nodes of 0 GPUs: :func:`_step_rows` refuses that row in :func:`ranks_slice`'s words, and
    its ``nodes`` and ``gpus_per_node`` are null (:func:`_eval_step`)."""
    if "ranks" not in num or "nodes" in num:
        return num
    per_node = int(get_cluster(cat["preset"], 1, None).gpus_per_node)
    nodes, gpn, _why = ranks_rows(num["ranks"], per_node, cat["preset"])
    return {"nodes": nodes, "gpus_per_node": gpn, **num}


def _eval_collective_preset(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    """Collective rows on a preset, with their ``error`` column (:data:`COLLECTIVE_ERROR_DOC`)."""
    sizes = num["size"]
    n = len(sizes)
    base = get_cluster(cat["preset"], 1, None)
    if "ranks" in num:
        nodes, gpn, why = ranks_rows(num["ranks"], base.gpus_per_node, cat["preset"])
        if why.any():  # preset=all: counts this preset's node cannot build (ranks_rows)
            return _collective_unbuilt(cat, sizes, num["ranks"], nodes, gpn, why, get_cluster)
    else:
        nodes = num.get("nodes", np.ones(n, dtype=np.int64))
        gpn = num.get("gpus_per_node", np.full(n, base.gpus_per_node, dtype=np.int64))
    return _collective_block(cat, sizes, nodes, gpn, base, get_cluster)


def _collective_block(
    cat: dict[str, Any],
    sizes: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    base: Any,
    get_cluster: Any,
) -> dict[str, Any]:
    """Preset collective rows of one block with their ``error`` column: in one call, else
    (a cluster of the block refuses a row: NVLS across nodes, ...) pair by pair."""
    try:
        out = _collective_rows(cat, sizes, nodes, gpn, base, get_cluster)
    except ValueError:
        return _collective_pairs_alone(cat, sizes, nodes, gpn, base, get_cluster)
    out["error"] = ""
    return out


def _collective_unbuilt(
    cat: dict[str, Any],
    sizes: np.ndarray,
    ranks: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    why: np.ndarray,
    get_cluster: Any,
) -> dict[str, Any]:
    """Collective rows of a block some of whose rank counts the preset's node cannot build
    (``why``, :func:`ranks_rows`; ``preset=all``): the buildable rows answered as any block's
    (:func:`_collective_block`), each unbuildable count's rows refused
    (:func:`_refused_collective_rows`) with its rank count, null ``nodes`` and
    ``gpus_per_node`` (it has no shape) and the reason in ``error``; in the block's order."""
    import pandas as pd
    import pyarrow as pa

    base = get_cluster(cat["preset"], 1, None)
    tables, order = [], []
    ok = np.flatnonzero(why == "")
    if len(ok):
        cols = _collective_block(cat, sizes[ok], nodes[ok], gpn[ok], base, get_cluster)
        tables.append(_to_table(cols, len(ok)))
        order.append(ok)
    bad = np.flatnonzero(why != "")
    zero = np.zeros(len(bad), dtype=np.int64)
    cols = _refused_collective_rows(cat, sizes[bad], zero, zero, base, "")
    codes, reasons = pd.factorize(why[bad])  # each count's own reason, hash-based
    none = pa.nulls(len(bad), type=pa.int64())
    cols.update(
        nodes=none,
        gpus_per_node=none,
        ranks=ranks[bad].astype(np.int64),
        error=_Cat(codes.astype(np.int32), [str(x) for x in reasons]),
    )
    tables.append(_to_table(cols, len(bad)))
    order.append(bad)
    return _in_order(tables, order)


def _in_order(tables: list[pa.Table], order: list[np.ndarray]) -> dict[str, Any]:
    """The columns of ``tables``, the parts of one block whose rows are ``order``'s
    indices, put back in the block's row order."""
    import pyarrow as pa

    table = pa.concat_tables(tables, promote_options="permissive").unify_dictionaries()
    table = table.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
    return {name: table.column(name).combine_chunks() for name in table.column_names}


def _collective_pairs_alone(
    cat: dict[str, Any],
    sizes: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    base: Any,
    get_cluster: Any,
) -> dict[str, Any]:
    """Preset collective rows of a block one of whose clusters refuses them: each (nodes, GPUs
    per node) pair evaluated alone, as a step sweep prices a refused row alone; a refused
    pair's rows keep their inputs, NaN times and bandwidths, and the refusal in ``error``
    (:data:`COLLECTIVE_ERROR_DOC`), so the rows that can run are answered."""

    keys = nodes.astype(np.int64) * 1_000_003 + gpn.astype(np.int64)
    tables, order = [], []
    for k in np.unique(keys):
        idx = np.flatnonzero(keys == k)
        part = (sizes[idx], nodes[idx], gpn[idx])
        try:
            cols = _collective_rows(cat, *part, base, get_cluster)
            cols["error"] = ""
        except ValueError as exc:
            cols = _refused_collective_rows(cat, *part, base, str(exc))
        tables.append(_to_table(cols, len(idx)))
        order.append(idx)
    return _in_order(tables, order)


def _collective_inputs(
    cat: dict[str, Any], sizes: np.ndarray, nodes: np.ndarray, gpn: np.ndarray
) -> dict[str, Any]:
    """The input columns every preset collective row starts with, answered or refused: the
    preset, model, op, algorithm and protocol asked for, nodes, GPUs per node, ranks, the
    launch where the grid gives one (:func:`_launch_columns`), size."""
    return {
        "preset": cat["preset"],
        "model": cat["model"],
        "op": cat["op"],
        "algorithm": cat["algorithm"],
        "protocol_requested": cat["protocol"],
        "nodes": nodes,
        "gpus_per_node": gpn,
        "ranks": nodes * gpn,
        **_launch_columns(cat, len(sizes)),
        "size_bytes": sizes,
    }


def _launch_columns(cat: dict[str, Any], n: int) -> dict[str, Any]:
    """The launch columns of ``n`` rows of a block whose grid gives a launch
    (:data:`~costmodel.sweep.grid.LAUNCH_AXES`): ``gpus_per_process``, ``nvls`` (null where
    unset: the preset's) and ``collnet``, the keys ``collective --json`` writes for a launch;
    none for a grid without one."""
    launch = cat.get("launch")
    if launch is None:
        return {}
    import pyarrow as pa

    nvls = launch["nvls"]
    return {
        "gpus_per_process": np.full(n, int(launch["gpus_per_process"]), dtype=np.int64),
        "nvls": pa.nulls(n, type=pa.bool_()) if nvls is None else np.full(n, bool(nvls)),
        "collnet": np.full(n, bool(launch["collnet_enabled"])),
    }


def _launch_keywords(cat: dict[str, Any]) -> dict[str, Any]:
    """``predict_collective``'s launch keywords of a block (``{}`` for none: its defaults)."""
    launch = cat.get("launch")
    return {} if launch is None else dict(launch)


def check_gpus_per_process(gpus_per_process: int, gpus_per_node: Any, preset: str) -> None:
    """Refuse ``gpus_per_process`` above the GPUs of a node, or not dividing them
    (``gpus_per_node``, a count or the rows' array; :func:`costmodel.predict.check_gpus_per_process`
    for each count): one process drives GPUs of its own node (nccl-tests ``-g``). The rule of a
    collective sweep's rows (each refused row keeps the reason in ``error``) and of
    ``costmodel collective --cluster --gpus-per-process``."""
    from ..predict import check_gpus_per_process as check

    for g in np.unique(np.asarray(gpus_per_node, dtype=int)) if np.size(gpus_per_node) else ():
        check(gpus_per_process, int(g), preset)


def _refused_collective_rows(
    cat: dict[str, Any],
    sizes: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    base: Any,
    reason: str,
) -> dict[str, Any]:
    """The columns of preset collective rows their cluster refuses: the inputs as given, NaN
    times, bandwidths and band, empty texts, the memory note as answered rows have it, and
    ``reason`` in ``error``."""
    n = len(sizes)
    nan = np.full(n, np.nan)
    empty = _Cat(np.zeros(n, dtype=np.int32), [""])
    return {
        **_collective_inputs(cat, sizes, nodes, gpn),
        "time_s": nan,
        "algbw_GBps": nan,
        "busbw_GBps": nan,
        "algorithm_used": empty,
        "protocol_used": empty,
        "error_band_pct": nan,
        "time_lo_s": nan,
        "time_hi_s": nan,
        "regime": empty,
        "band_note": empty,
        "band_extrapolated": np.zeros(n, dtype=bool),
        "memory_note": _memory_note_col(sizes, base),
        "error": " ".join(reason.split()),
    }


COLLECTIVE_ERROR_DOC = """A collective sweep on a preset ends with ``error``: ``""`` for a row that
was answered, else why its cluster cannot run it (a pinned ``algorithm=nvls`` on a node count
without SHARP, or on GPUs without NVLink SHARP; a ``gpus_per_process`` above the GPUs of the
row's node, :func:`check_gpus_per_process`; with ``preset=all``, a ``ranks`` count the
preset's node cannot build, :func:`ranks_rows`, whose ``nodes`` and ``gpus_per_node`` are
null): the row keeps its inputs, its times and
bandwidths are NaN, and the other rows are answered all the same, as a step sweep's refused
rows (a sweep whose every row is refused is refused with the first reason)."""


def _collective_rows(
    cat: dict[str, Any],
    sizes: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    base: Any,
    get_cluster: Any,
) -> dict[str, Any]:
    """Preset collective rows (``sizes`` [B] on ``nodes`` x ``gpn`` GPUs) through the model's
    road: vectorized NCCL, vectorized alpha-beta, or ``predict_collective`` per cluster."""
    from .. import predict
    from ..uncertainty import band_pct

    n = len(sizes)
    launch = _launch_keywords(cat)
    if launch:  # a row whose node has fewer GPUs than one process drives is refused
        check_gpus_per_process(launch["gpus_per_process"], gpn, cat["preset"])
    if cat["model"] in ("nccl", "nccl-table") and base.calibration is None:
        return _eval_collective_vectorised(cat, sizes, nodes, gpn, base)
    if cat["model"] in ("lesson", "textbook"):
        return _eval_alpha_beta(cat, sizes, nodes, gpn, base)
    time_s = np.empty(n)
    algbw = np.empty(n)
    busbw = np.empty(n)
    alg_parts: list[tuple[np.ndarray, Any]] = []
    proto_parts: list[tuple[np.ndarray, Any]] = []
    keys = nodes.astype(np.int64) * 1_000_003 + gpn.astype(np.int64)
    # the band as predict_collective gives it: a calibrated cluster's band is unknown where its
    # calibration answers, and the uncalibrated model's where it does not apply (another
    # level: the prediction is then the uncalibrated model's, and says so)
    pct, lo, hi = np.empty(n), np.empty(n), np.empty(n)
    reg_parts: list[tuple[np.ndarray, Any]] = []
    note_parts: list[tuple[np.ndarray, Any]] = []
    reg_rows = np.empty(n, dtype=object)
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
            **launch,
        )
        time_s[mask] = pred.time_s
        algbw[mask] = pred.algbw_bytes_per_s
        busbw[mask] = pred.busbw_bytes_per_s
        alg_parts.append((mask, pred.algorithm))
        proto_parts.append((mask, pred.protocol))
        band = pred.error_band
        assert band is not None  # predict_collective always sets one
        shape = (int(np.count_nonzero(mask)),)
        pct[mask] = np.broadcast_to(band_pct(band.half_width), shape)
        fast, slow = band.time_bounds(pred.time_s)
        lo[mask] = np.broadcast_to(fast, shape)
        hi[mask] = np.broadcast_to(slow, shape)
        reg_parts.append((mask, band.regime))
        note_parts.append((mask, "" if band.measured else _band_note(band)))
        reg_rows[mask] = band.regime
    return {
        **_collective_inputs(cat, sizes, nodes, gpn),
        "time_s": time_s,
        "algbw_GBps": algbw / _GB,
        "busbw_GBps": busbw / _GB,
        "algorithm_used": _categorical(alg_parts, n),
        "protocol_used": _categorical(proto_parts, n),
        "error_band_pct": pct,
        "time_lo_s": lo,
        "time_hi_s": hi,
        "regime": _categorical(reg_parts, n),
        "band_note": _categorical(note_parts, n),
        "band_extrapolated": _extrapolated(cat["model"], reg_rows, sizes, nodes, nodes * gpn, pct),
        "memory_note": _memory_note_col(sizes, base),
    }


def _extrapolated(
    model: str, regimes: Any, sizes: Any, nodes: Any, ranks: Any, pct: Any
) -> np.ndarray:
    """``band_extrapolated``: the row's band is known and its node count or its GPU count
    (``ranks``) is beyond the largest run that band rests on
    (:func:`costmodel.uncertainty.band_extrapolated`), the sweep's form of the note
    ``costmodel collective`` and the API's ``ErrorBand.extrapolated`` give: the band's numbers
    are kept, never measured at that scale."""
    from ..uncertainty import band_extrapolated

    far = band_extrapolated(model, regimes, np.asarray(sizes, dtype=float), nodes, ranks)
    return far & ~np.isnan(np.asarray(pct, dtype=float))


def _memory_note_col(sizes: np.ndarray, cluster: Any) -> _Cat:
    """``memory_note`` of preset collective rows: :func:`costmodel.predict.buffer_memory_note`
    of each row's size (as ``collective --cluster`` and ``predict`` print it), ``""`` where the
    GPU holds the buffer. The GPU is the preset's whatever the node count, so one note per
    distinct size above its memory."""
    from ..predict import buffer_memory_note

    sizes = np.asarray(sizes, dtype=float)
    codes = np.zeros(len(sizes), dtype=np.int32)
    names = [""]
    over = sizes > float(cluster.gpu.memory_bytes)
    if over.any():
        uniq, inverse = np.unique(sizes[over], return_inverse=True)
        names += [buffer_memory_note([s], cluster) for s in uniq]
        codes[over] = 1 + inverse.astype(np.int32).ravel()
    return _Cat(codes, names)


def _band_note(band: Any) -> str:
    """``band_note`` of a row whose band is unknown: a calibrated fit's in the words the sweep
    has always used (:data:`_CALIBRATED_BAND_NOTE`), else the band's own."""
    return _CALIBRATED_BAND_NOTE if band.note.startswith("calibrated fit") else band.note


def _band_cols(
    model: str,
    base: Any,
    nodes: np.ndarray,
    ranks: np.ndarray,
    sizes: np.ndarray,
    time_s: np.ndarray,
    op: str | None = None,
) -> dict[str, Any]:
    """``error_band_pct`` (±% from grouped CV to 0.01, the precision of the fitted file:
    :func:`costmodel.uncertainty.band_pct`; NaN where the regime has no measurement; a
    calibrated cluster's rows take predict_collective's band instead), ``time_lo_s`` and ``time_hi_s`` (the time at the band's fast and
    slow ends, ``time / hi`` and ``time / lo``: the asymmetric band the ± summarises, as
    :meth:`costmodel.uncertainty.ErrorBand.time_bounds`), ``regime``
    (costmodel.uncertainty.band_arrays) and ``band_note`` (why the band is NaN, in
    :func:`costmodel.uncertainty.error_band`'s words, as ``costmodel collective`` says "± ?";
    empty where the band is known) columns."""
    import pandas as pd

    from ..uncertainty import band_arrays, error_band

    # the band depends on the size and on one node vs several only: evaluate it once per
    # distinct (size, node class) pair (a grid has few) and spread it to the rows
    size_code, size_values = pd.factorize(np.asarray(sizes, dtype=float))
    pair = size_code.astype(np.int64) * 2 + (np.minimum(np.asarray(nodes), 2) - 1)
    pair_code, pairs = pd.factorize(pair)
    pairs = np.asarray(pairs, dtype=np.int64)
    pct_u, lo_u, hi_u, reg_u = band_arrays(
        model,
        base.fabric,
        base.intra_kind,
        pairs % 2 + 1,
        np.asarray(size_values)[pairs // 2],
        op=op,
    )
    # one error_band per distinct pair whose band is unknown: its note says why
    notes_u = [
        ""
        if p == p
        else error_band(model, base.fabric, base.intra_kind, int(k), float(sz), op=op).note
        for p, k, sz in zip(pct_u, pairs % 2 + 1, np.asarray(size_values)[pairs // 2], strict=True)
    ]
    pct = pct_u[pair_code]
    reg_code, reg_names = pd.factorize(reg_u)
    note_code, note_names = pd.factorize(np.asarray(notes_u, dtype=object))
    t = np.asarray(time_s, dtype=float)
    return {
        "error_band_pct": pct,
        "time_lo_s": t / hi_u[pair_code],
        "time_hi_s": t / lo_u[pair_code],
        "regime": _Cat(reg_code.astype(np.int32)[pair_code], [str(r) for r in reg_names]),
        "band_note": _Cat(note_code.astype(np.int32)[pair_code], [str(r) for r in note_names]),
        "band_extrapolated": _extrapolated(
            model, np.asarray(reg_u, dtype=object)[pair_code], sizes, nodes, ranks, pct
        ),
    }


_CALIBRATED_BAND_NOTE = (
    "a calibration answers: its terms are fitted on this cluster's own runs, and the grouped-CV "
    "band (of the uncalibrated model) does not measure its error; compare with the runs "
    "(costmodel.validation.compare)"
)
"""``band_note`` of a calibrated cluster's row, whose ``error_band_pct`` is NaN."""


def _eval_collective_vectorised(
    cat: dict[str, Any], sizes: np.ndarray, nodes: np.ndarray, gpn: np.ndarray, base: Any
) -> dict[str, Any]:
    """NCCL models on one preset: every (nodes, GPUs per node, size) row in one array call.

    :func:`costmodel.realistic.realistic_rows` groups the rows by (GPUs per node, node class)
    once and evaluates all candidates for all rows; the same numbers as
    ``predict_collective`` row by row (tests/test_sweep_vectorised.py).
    """
    from ..models import check_algorithm
    from ..realistic import realistic_rows

    given, sizes = sizes, sizes.astype(float)
    t, a, p, (a_names, p_names) = realistic_rows(
        cat["op"],
        sizes,
        nodes,
        gpn,
        base,
        # the canonical name (an alias, NCCL_ALGO's CollNet, resolved), as predict_collective
        # runs it: a refusal names what the cluster cannot run in the same words
        check_algorithm(cat["model"], cat["op"], cat["algorithm"]),
        cat["protocol"],
        corrected=cat["model"] == "nccl",
        **_launch_keywords(cat),  # the run's launch, as predict_collective passes it
    )
    out = _collective_columns(
        cat, sizes, nodes, gpn, base, t, _Cat(a.astype(np.int32), a_names),
        _Cat(p.astype(np.int32), p_names),
    )  # fmt: skip
    out["size_bytes"] = given  # the grid's own values, whole bytes as given
    return out


def _collective_columns(
    cat: dict[str, Any],
    sizes: np.ndarray,
    nodes: np.ndarray,
    gpn: np.ndarray,
    base: Any,
    t: np.ndarray,
    algorithm_used: Any,
    protocol_used: Any,
) -> dict[str, Any]:
    """The output columns of collective rows timed ``t`` [s]: bandwidths from the sizes [B] and
    each op's bus-bandwidth factor (nccl-tests' definitions), and the error band."""
    from .. import tables as T

    ranks = nodes * gpn
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(t > 0, sizes / np.where(t > 0, t, 1.0), 0.0)
    busbw = algbw * np.asarray(T.BUSBW_FACTOR[cat["op"]](ranks.astype(float)))
    return {
        **_collective_inputs(cat, sizes, nodes, gpn),
        "time_s": t,
        "algbw_GBps": algbw / _GB,
        "busbw_GBps": busbw / _GB,
        "algorithm_used": algorithm_used,
        "protocol_used": protocol_used,
        **_band_cols(cat["model"], base, nodes, ranks, sizes, t, op=cat["op"]),
        "memory_note": _memory_note_col(sizes, base),
    }


def _eval_alpha_beta(
    cat: dict[str, Any], sizes: np.ndarray, nodes: np.ndarray, gpn: np.ndarray, base: Any
) -> dict[str, Any]:
    """Lesson and textbook models on one preset: every row in one array call per GPUs-per-node
    value (:func:`costmodel.models.alpha_beta_rows`), the numbers ``predict_collective`` gives
    row by row (tests/test_sweep_vectorised.py)."""
    from ..models import alpha_beta_rows
    from ..tables import NO_PROTOCOL

    sizes_f = sizes.astype(float)
    t, algo = alpha_beta_rows(cat["model"], cat["op"], sizes_f, nodes, gpn, base, cat["algorithm"])
    n = len(sizes)
    out = _collective_columns(
        cat, sizes_f, nodes, gpn, base, t, _Cat(np.zeros(n, dtype=np.int32), [algo]),
        _Cat(np.zeros(n, dtype=np.int32), [NO_PROTOCOL]),  # no NCCL protocol runs
    )  # fmt: skip
    out["size_bytes"] = sizes  # the grid's own values, as given
    return out


def _eval_collective_link(cat: dict[str, Any], num: dict[str, np.ndarray]) -> dict[str, Any]:
    from .. import collectives

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
    # nccl-tests' algbw = M / t, 0 where t = 0 (one rank exchanges nothing), as predict's rows
    algbw = np.where(t > 0, sizes / np.where(t > 0, t, 1.0), 0.0)
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


def memory_layout_of(
    cat: dict[str, Any], ranks: int, get_cluster: Any = None, *, node_assumed: bool = False
) -> dict[str, Any]:
    """:func:`costmodel.strategy.memory.stage_memory`'s layout keywords of a memory sweep row
    on ``ranks`` ranks: ``cat``'s ``strategy``, ``group_size``, ``reshard_after_forward``,
    ``gradient_as_bucket_view``, ``param_dtype``, ``grad_dtype`` and ``bucket_cap`` [B],
    with the preset's node (or ``cat``'s ``gpus_per_node``, a slice of it) as hsdp's default
    group (:func:`costmodel.strategy.memory.memory_layout`, the rule of ``costmodel memory
    --strategy`` and ``--gpus-per-node``). ``node_assumed``: the ranks are the default ones
    (no ``ranks`` axis), so with no preset or slice the node is the default one
    (:data:`costmodel.hardware.DEFAULT_GPUS_PER_NODE`), as ``costmodel memory`` without
    ``--ranks`` or ``--cluster`` takes it: the same bytes, hsdp's group that node."""
    from ..hardware import DEFAULT_GPUS_PER_NODE
    from ..strategy.memory import memory_layout

    gpn = cat.get("gpus_per_node")
    if gpn is None and cat.get("preset") is not None and get_cluster is not None:
        gpn = int(get_cluster(cat["preset"], 1, None).gpus_per_node)
    elif gpn is None and cat.get("preset") is None and node_assumed:
        gpn = DEFAULT_GPUS_PER_NODE
    group = cat.get("group_size")
    return memory_layout(
        cat["strategy"],
        int(ranks),
        group_size=None if group is None else int(group),
        reshard_after_forward=cat.get("reshard_after_forward"),
        gpus_per_node=gpn,
        gradient_as_bucket_view=cat.get("gradient_as_bucket_view"),
        # the step's dtypes and bucket (costmodel memory --param-dtype, --grad-dtype, --bucket)
        param_dtype=cat.get("param_dtype"),
        grad_dtype=cat.get("grad_dtype"),
        bucket_cap_bytes=None if cat.get("bucket_cap") is None else int(cat["bucket_cap"]),
        names=("group_size", "preset"),
    )


def _memory_ranks(
    cat: dict[str, Any], num: dict[str, np.ndarray], n: int, get_cluster: Any
) -> np.ndarray:
    """The ranks of ``n`` memory rows: the ``ranks`` axis; else ``nodes`` x the preset's GPUs
    per node or ``cat``'s slice of it (``costmodel memory --nodes --cluster``); else one node
    (:func:`costmodel.hardware.default_ranks`, the default of every surface), that node, or
    8 (no preset: ``costmodel memory`` without ``--cluster``)."""
    from ..hardware import default_ranks

    if "ranks" in num:
        return num["ranks"]
    gpn = cat.get("gpus_per_node")
    if gpn is None and cat.get("preset") is not None and get_cluster is not None:
        gpn = int(get_cluster(cat["preset"], 1, None).gpus_per_node)
    if "nodes" in num:  # the grid's check: a preset gives the node
        assert gpn is not None
        return num["nodes"].astype(np.int64) * int(gpn)
    return np.full(n, default_ranks(gpn), dtype=np.int64)


def _nodes_column(num: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``nodes`` of a memory sweep whose grid gives them (``costmodel memory --nodes``),
    written before ``ranks`` as a step sweep writes them; none where the grid has no such
    axis."""
    return {"nodes": num["nodes"].astype(np.int64)} if "nodes" in num else {}


def _layout_columns(
    cat: dict[str, Any], ranks: np.ndarray, get_cluster: Any, node_assumed: bool = False
) -> tuple[dict[str, Any], np.ndarray, dict[str, Any]]:
    """(the layout columns, each row's sharding group, one row's layout keywords) of a memory
    block: ``zero_stage``, then the layout's five keys (:data:`~costmodel.strategy.layout.
    LAYOUT_KEYS`, :meth:`~costmodel.strategy.layout.Layout.identity`, as a step sweep row and
    ``costmodel memory --json`` write them): ``strategy`` (``hsdp``), ``layout`` (the step's
    name, ``hsdp g=8``), ``group_size`` (hsdp's group; null for another strategy) and
    ``reshard_after_forward`` (whether fsdp/hsdp free the gathered parameters after forward;
    null for another strategy) and ``gradient_as_bucket_view`` (whether ddp's gradients are
    views into its buckets; null for another strategy), in every row of every grid, so every chunk has the same
    columns in the same order and types. The group of a row is the
    :class:`~costmodel.strategy.layout.Layout`'s (one per distinct rank count); the buffers
    do not depend on the rank count, so one row's keywords size them for every row."""
    import pyarrow as pa

    from ..strategy.layout import ZERO_STAGE, make_layout

    values, inverse = np.unique(ranks, return_inverse=True)
    kws = [memory_layout_of(cat, int(r), get_cluster, node_assumed=node_assumed) for r in values]
    lays = [
        make_layout(ranks=int(r), **{k: v for k, v in kw.items() if v is not None})
        for r, kw in zip(values, kws, strict=True)
    ]
    inverse = inverse.ravel()
    n = len(inverse)
    # the ranks each row's state is sharded over (training_memory's dp_ranks): hsdp's group
    group = np.array([lay.shard_group for lay in lays], dtype=np.int64)[inverse]
    names, codes = [lay.name for lay in lays], inverse.astype(np.int32)
    first = lays[0].identity()  # strategy and resharding are the block's, not the row's
    reshard = first["reshard_after_forward"]
    view = first["gradient_as_bucket_view"]
    cols: dict[str, Any] = {
        "zero_stage": ZERO_STAGE[cat["strategy"]],
        "strategy": first["strategy"],
        "layout": _Cat(*_recode(codes, names)),
        "group_size": group if first["group_size"] is not None else pa.nulls(n, pa.int64()),
        "reshard_after_forward": (
            pa.nulls(n, pa.bool_()) if reshard is None else pa.array(np.full(n, bool(reshard)))
        ),
        "gradient_as_bucket_view": (
            pa.nulls(n, pa.bool_()) if view is None else pa.array(np.full(n, bool(view)))
        ),
    }
    # the step's dtypes and bucket where the grid gives them (the step sweep's columns; the
    # bucket null for a strategy that has none, as there), none where not
    for key in ("param_dtype", "grad_dtype"):
        if cat.get(key) is not None:
            cols[key] = cat[key]
    if cat.get("bucket_cap") is not None:
        from ..strategy.layout import bucket_not_applied

        cols["bucket_cap_bytes"] = (
            pa.nulls(n, type=pa.int64())
            if bucket_not_applied(cat["strategy"], 1) is not None
            else np.full(n, int(cat["bucket_cap"]), dtype=np.int64)
        )
    return cols, group, kws[0]


def _recode(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes into ``names`` re-coded into its distinct names (two rank counts, one name)."""
    uniq = list(dict.fromkeys(names))
    remap = np.array([uniq.index(n) for n in names], dtype=np.int32)
    return remap[codes], uniq


def _eval_memory(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    from .. import memory
    from ..strategy.memory import stage_buffers_bytes

    if cat.get("arch") is not None:
        return _eval_memory_arch(cat, num, get_cluster)
    params = num["params"].astype(float)
    ranks = _memory_ranks(cat, num, len(params), get_cluster)
    given = num.get("activations")  # costmodel memory --activations [B]; None: 0
    assumed = "ranks" not in num and "nodes" not in num
    lay_cols, group, lkw = _layout_columns(cat, ranks, get_cluster, assumed)
    zero = int(lay_cols["zero_stage"])
    ctx, frag = _overheads(cat)
    mb = memory.training_memory(  # the state sharded as the layout shards it (hsdp: its group)
        params,
        recipe=cat["recipe"],
        zero_stage=zero,
        dp_ranks=group,
        activations_bytes=None if given is None else given.astype(float),
        cuda_context_bytes=ctx,
        fragmentation=frag,
    )
    out: dict[str, Any] = {
        "recipe": cat["recipe"],
        **lay_cols,
        **_slice_column(cat, len(params)),
        **_nodes_column(num),
        "ranks": ranks,
        "params": params,
        **_overhead_columns(cat, len(params)),
    }
    for part, value in mb.parts().items():
        if part == "ddp_buckets_bytes":
            continue  # counted with the other buffers below
        label = part[: -len("_bytes")] if part.endswith("_bytes") else part
        out[f"{label}_GB"] = np.broadcast_to(np.asarray(value, dtype=float), params.shape) / _GB
    # what the layout the step prices for this stage holds while it communicates (DDP's bucket
    # copy, ZeRO-1/2's buckets, FSDP's gathered units): `costmodel memory`'s total, row by row
    buffers = stage_buffers_bytes(zero, ranks, params, recipe=cat["recipe"], **lkw)
    out["buffers_GB"] = buffers / _GB
    # the allocator holds the buffers too: their fragmentation is in fragmentation_GB, as
    # StrategyMemory.fragmentation_bytes counts it (costmodel memory's figure)
    out["fragmentation_GB"] = out["fragmentation_GB"] + frag * buffers / _GB
    lesson = np.broadcast_to(np.asarray(mb.total_bytes, dtype=float), params.shape)
    out["lesson_memory_GB"] = lesson / _GB
    total = lesson + buffers * (1.0 + frag)
    out["memory_GB"] = total / _GB
    out = _memory_fits(out, cat, num, total, get_cluster)
    notes = _memory_notes(params, mb.activations_note, given)
    if (dtype_note := _param_dtype_note(cat)) is not None:  # as `memory` and the step say it
        notes = _Cat(notes.codes, [join_notes([n, dtype_note]) for n in notes.categories])
    out["notes"] = _fit_notes(notes, out, total, cat)
    return out


def _param_dtype_note(cat: dict[str, Any]) -> str | None:
    """Why a memory row's ``param_dtype`` changes nothing (ddp gathers no parameters:
    :attr:`costmodel.strategy.layout.Layout.param_dtype_note`, the step sweep's and ``costmodel
    memory``'s note), or None."""
    from ..strategy.layout import STRATEGY_OF_STAGE, Layout

    if cat.get("param_dtype") is None:
        return None
    strategy = cat.get("strategy") or STRATEGY_OF_STAGE[int(cat["zero_stage"])]
    note = Layout(strategy=strategy, param_dtype=cat["param_dtype"]).param_dtype_note
    return None if note is None else str(note)


def _fit_notes(notes: _Cat, out: dict[str, Any], total: np.ndarray, cat: dict[str, Any]) -> _Cat:
    """A memory sweep's ``notes`` beside its ``fits`` column: each row's with what a fit with
    little to spare leaves out after them (:func:`costmodel.strategy.memory.fit_notes`, as
    ``costmodel memory`` and the step say it); ``notes`` unchanged without a card."""
    from ..strategy.memory import TIGHT_FIT_HEADROOM, fit_notes

    if "gpu_memory_GB" not in out:
        return notes
    cap = np.asarray(out["gpu_memory_GB"], dtype=float) * _GB
    total = np.asarray(total, dtype=float)
    # the rows that may be tight (fit_notes decides), so a large sweep asks for a few only
    near = np.flatnonzero((total <= cap) & (cap - total < TIGHT_FIT_HEADROOM * cap))
    if not len(near):
        return notes
    ctx, frag = _overheads(cat)
    texts = [notes.categories[c] for c in notes.codes]
    for i in near:
        said = texts[i].split(NOTES_SEPARATOR) if texts[i] else []
        texts[i] = join_notes(fit_notes(said, float(total[i]), float(cap[i]), ctx, frag))
    codes, names = _factorize(texts)
    return _Cat(codes, names)


def _overheads(cat: dict[str, Any]) -> tuple[float, float]:
    """The memory's overheads of a memory sweep block, ``training_memory``'s and
    ``strategy_memory``'s ``cuda_context_bytes`` [B] and ``fragmentation`` [-] (0 each where the
    grid has no such axis, as ``costmodel memory`` without the options)."""
    return float(cat.get("cuda_context", 0.0)), float(cat.get("fragmentation", 0.0))


def _overhead_columns(cat: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    """The input columns of :func:`_overheads`, as the step sweep writes them
    (``cuda_context_bytes`` [B], ``fragmentation`` [-])."""
    ctx, frag = _overheads(cat)
    return {"cuda_context_bytes": np.full(n, ctx), "fragmentation": np.full(n, frag)}


def _slice_column(cat: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    """``gpus_per_node`` of a memory sweep whose grid slices each preset's node (``costmodel
    memory --gpus-per-node``), written before ``ranks`` as a step sweep writes its slice; no
    column where the grid has no such axis (the preset's whole node)."""
    gpn = cat.get("gpus_per_node")
    return {} if gpn is None else {"gpus_per_node": np.full(n, int(gpn), dtype=np.int64)}


def _memory_fits(
    out: dict[str, Any],
    cat: dict[str, Any],
    num: dict[str, np.ndarray],
    total: np.ndarray,
    get_cluster: Any,
) -> dict[str, Any]:
    """``out`` with the card each row is checked against, as ``costmodel memory`` checks it:
    ``preset`` (first) and its GPU's memory (``--cluster``), or the ``gpu_memory`` axis
    (``--gpu-memory``), as ``gpu_memory_GB`` [GB], and ``fits`` (``total`` [B] within it);
    ``out`` unchanged without either: no default card, as ``costmodel memory`` without
    ``--gpu-memory`` or ``--cluster`` has no verdict."""
    n = len(total)
    if cat["preset"] is not None:
        gpu_bytes = np.full(n, float(get_cluster(cat["preset"], 1, None).gpu.memory_bytes))
        out = {"preset": cat["preset"], **out}
    elif "gpu_memory" in num:
        gpu_bytes = num["gpu_memory"].astype(float)
    else:
        return out
    out["gpu_memory_GB"] = gpu_bytes / _GB
    out["fits"] = total <= gpu_bytes
    return out


def _eval_memory_arch(
    cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    """Memory rows of a named architecture: one :func:`memory_row` per row (its activations
    are a sum over its layers, not a closed form in the count), ``costmodel memory --arch``'s
    answer to the same question."""
    n = len(next(iter(num.values()))) if num else 1
    ones = np.ones(n, dtype=np.int64)
    ranks = _memory_ranks(cat, num, n, get_cluster)
    seq = num.get("sequence_length", np.full(n, 4096, dtype=np.int64))
    micro = num.get("micro_batch", ones)
    given = num.get("activations")
    acts = [None] * n if given is None else [float(x) for x in given]
    assumed = "ranks" not in num and "nodes" not in num
    lay_cols, _, _ = _layout_columns(cat, ranks, get_cluster, assumed)
    layouts = {
        int(r): memory_layout_of(cat, int(r), get_cluster, node_assumed=assumed)
        for r in np.unique(ranks)
    }
    rows = [
        memory_row(
            cat,
            int(r),
            sequence_length=int(s),
            micro_batch=int(m),
            activations_bytes=x,
            layout=layouts[int(r)],
        )
        for r, s, m, x in zip(ranks, seq, micro, acts, strict=True)
    ]
    out: dict[str, Any] = {
        "arch": cat["arch"],
        "recipe": cat["recipe"],
        **lay_cols,
        "recompute": cat["recompute"],
        "loss": cat["loss"],
        "flash_attention": np.full(n, bool(cat["flash_attention"])),
        **_slice_column(cat, n),
        **_nodes_column(num),
        "ranks": ranks,
        "sequence_length": seq,
        "micro_batch": micro,
        **_overhead_columns(cat, n),
    }
    for k in rows[0]:
        if k != "notes":
            out[k] = np.array([r[k] for r in rows], dtype=float)
    total = out["memory_GB"] * _GB
    out = _memory_fits(out, cat, num, total, get_cluster)
    notes = [r["notes"] for r in rows]
    codes, names = _factorize(notes)
    out["notes"] = _fit_notes(_Cat(codes, names), out, total, cat)
    return out


def _factorize(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    import pandas as pd

    codes, names = pd.factorize(np.asarray(texts, dtype=object))
    return codes.astype(np.int32), [str(x) for x in names]


def memory_row(
    cat: dict[str, Any],
    ranks: int,
    *,
    sequence_length: int = 4096,
    micro_batch: int = 1,
    activations_bytes: float | None = None,
    layout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One memory sweep row of a named architecture: ``costmodel memory --arch``'s
    :func:`~costmodel.strategy.memory.stage_memory` with its defaults (FlashAttention, no
    recomputation, the fp32 loss, 4096 tokens, micro-batch 1) for ``cat``'s ``arch``,
    ``recipe``, ``strategy`` (or ``zero_stage``: its stage's strategy), ``recompute``, ``loss``
    and ``flash_attention`` (absent: True), on ``ranks`` data-parallel ranks; ``layout``:
    stage_memory's layout keywords (:func:`memory_layout_of`; None: the strategy's defaults);
    ``activations_bytes`` [B], as ``--activations``, replaces the architecture's activations
    (None: the architecture's).

    Returns the count ``params`` [-], the lesson's parts and ``buffers_GB`` (buckets and
    gathered units), ``lesson_memory_GB`` and ``memory_GB`` (the stage's total) [GB, 1e9 B],
    and ``notes``: the activations' line, then what the answer leaves out (tensor and pipeline
    parallelism from the 70B class, a mixture-of-experts model's expert parallelism), as
    ``costmodel memory`` writes them.
    """
    from ..architecture import resolve_params
    from ..strategy.layout import STRATEGY_OF_STAGE, ZERO_STAGE
    from ..strategy.memory import stage_memory

    arch = cat["arch"]
    strategy = cat.get("strategy") or STRATEGY_OF_STAGE[int(cat["zero_stage"])]
    lkw = dict(layout) if layout is not None else {"strategy": strategy}
    ctx, frag = _overheads(cat)
    sm = stage_memory(
        ZERO_STAGE[strategy],
        int(ranks),
        None,
        **lkw,
        recipe=cat["recipe"],
        activations_bytes=activations_bytes,
        arch=arch,
        sequence_length=int(sequence_length),
        micro_batch=int(micro_batch),
        flash_attention=bool(cat.get("flash_attention", True)),
        recompute=cat["recompute"],
        loss=cat["loss"],
        cuda_context_bytes=ctx,
        fragmentation=frag,
    )
    p = float(resolve_params(None, arch)[0])
    row: dict[str, Any] = {"params": p, **sm.gb_columns()}
    dtype_note = _param_dtype_note({**cat, "strategy": strategy})
    # strategy_memory's, as `costmodel memory` says them, and a gather dtype ddp does not use
    row["notes"] = join_notes([*sm.notes, *([dtype_note] if dtype_note else [])])
    return row


def _memory_notes(
    params: np.ndarray, activations_note: str, given: np.ndarray | None = None
) -> _Cat:
    """``costmodel memory``'s notes for each row: why activations are 0 (a bare parameter
    count sizes the model state alone: :func:`costmodel.memory.bare_count_note`) and, from the 70B class, that production runs add tensor and pipeline
    parallelism (:func:`costmodel.training.scale_notes`); one text per distinct count."""
    import pandas as pd

    from ..strategy.memory import memory_notes

    if given is None:
        values, inverse = np.unique(params, return_inverse=True)
        texts = [join_notes(memory_notes(activations_note, float(p))) for p in values]
    else:  # each row's activations given: its size in its line, as costmodel memory says it
        from ..memory import given_activations_note

        pairs = np.stack(np.broadcast_arrays(params, given), axis=-1).reshape(-1, 2)
        values, inverse = np.unique(pairs, axis=0, return_inverse=True)
        texts = [
            join_notes(memory_notes(given_activations_note(float(a)), float(p))) for p, a in values
        ]
    codes, names = pd.factorize(np.asarray(texts, dtype=object))
    return _Cat(codes.astype(np.int32)[inverse.ravel()], [str(n) for n in names])


@dataclass
class _StepRow:
    """One step sweep row on its way: its numeric values (:func:`step_keywords`' names), its
    cluster, :func:`~costmodel.strategy.strategy_step`'s keywords for it (but the cluster and
    node count), then its step's :data:`STEP_COLUMNS` (:func:`step_columns`) and compute
    precision, or why it was refused (the step itself is not kept: a sweep holds many)."""

    values: dict[str, Any]
    nodes: int
    gpus_per_node: int | None
    ranks: int | None = None
    """The rank count asked (a ``ranks`` axis), kept for a row refused before its cluster."""
    cluster: Any = None
    keywords: dict[str, Any] | None = None
    columns: dict[str, Any] | None = None
    precision: str = ""
    error: str = ""

    def keep(self, step: StrategyStep) -> None:
        """The row's outputs from its step (its keywords are not needed any more)."""
        assert self.keywords is not None
        kw, self.keywords = self.keywords, None
        self.columns = step_columns(step, kw["micro_batch"], kw["sequence_length"])
        self.precision = step.precision


STEP_BATCH_ROWS = 512
"""Most step sweep rows priced together [-] (:func:`_eval_pieces`): a prepared step holds its
task lists until its batch is scheduled, so a sweep of up to :data:`~.grid.MAX_STEP_ROWS` rows is
priced in batches of consecutive rows (a ``strategy=all`` batch holds every layout of its node
counts; one prediction cache serves every batch of a chunk). Measured on the 8,760-row
``strategy=all`` sweep of ``benchmarks/bench_sweep.py --step-all-large`` (Llama-3.1-8B, 1..16
nodes, 4 micro-batches, 5 sequence lengths, 3 accumulations), with this constant changed: peak
RSS 441 MB priced in one batch (about 33 kB a row), 172 MB in batches of 512, 160 MB of 256,
149 MB one row at a time (the code before the batches); the CPU time the same within the
machine's noise from 256 rows up, and the benchmark's 292-row grid is one batch (at 256 it
took 199 ms instead of 168)."""


#: a step's layout keywords among :func:`step_keywords`' (the rest is the job's)
_LAYOUT_KEYWORDS = ("strategy", "group_size", "reshard_after_forward", "gradient_as_bucket_view")


def _step_rows(
    pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]],
    get_cluster: Any,
    cache: PredictionCache | None = None,
) -> list[list[_StepRow]]:
    """Every row of the step blocks ``pieces`` (``(cat, num, rows)``), priced together on the
    advisor's road: rows that differ only in their layout (a ``strategy=all`` sweep's layouts
    of one node count) are one :func:`costmodel.strategy.advisor.layout_calls` (a layout each,
    timers over one :class:`~costmodel.strategy.comm.PredictionCache` that knows the node
    counts of the pieces, ``cache``, the unit sizes hinted), and every call of the pieces is one
    :func:`costmodel.strategy.step.strategy_steps` (the node counts of one layout share their
    setup and one schedule pass). The same numbers as one :func:`step_row` per row
    (tests/test_sweep_batched.py: every output column, time and cost to train included).

    A row refused on the way (its cluster, its keywords) keeps its error; a layout or a call
    the batched road refuses (:func:`_batched_steps` finds it) is priced alone
    (:func:`_price_alone`, the road of :func:`step_row`), so that a refused row says what
    ``costmodel step`` says, and the other rows are priced in the batch all the same."""
    from ..strategy.advisor import layout_calls
    from ..strategy.comm import PredictionCache

    out: list[list[_StepRow]] = []
    groups: dict[tuple[Any, ...], list[tuple[_StepRow, dict[str, Any]]]] = {}
    for cat, num, n in pieces:
        num = _step_shape(cat, num, get_cluster)
        nodes = num.get("nodes", np.ones(n, dtype=np.int64))
        gpn = num.get("gpus_per_node")  # None: every GPU of the node, as costmodel step
        # a rank count's whole nodes are the preset's own, as step --cluster --ranks reads them
        whole = int(get_cluster(cat["preset"], 1, None).gpus_per_node) if "ranks" in num else 0
        block: list[_StepRow] = []
        for i in range(n):
            values = {k: v[i].item() for k, v in num.items() if k not in _PINNED_AXES}
            g = None if gpn is None or int(gpn[i]) == whole else int(gpn[i])
            asked = int(num["ranks"][i]) if "ranks" in num else None
            row = _StepRow(values, int(nodes[i]), g, asked)
            block.append(row)
            try:  # an impossible row (a slice beyond the node, ...) is that row's answer
                if row.nodes == 0:  # a count the preset's node cannot build (ranks_rows)
                    ranks_slice([asked], whole, cat["preset"])  # raises: why, in its words
                row.cluster = get_cluster(cat["preset"], row.nodes, row.gpus_per_node)
                row.keywords = step_keywords(cat, ranks=int(row.cluster.ranks), **values)
            except ValueError as exc:
                row.error = " ".join(str(exc).split())
                continue
            job = {k: v for k, v in row.keywords.items() if k not in _LAYOUT_KEYWORDS}
            key = (cat["preset"], row.nodes, row.gpus_per_node, *job.items())
            layout = {k: row.keywords[k] for k in _LAYOUT_KEYWORDS}
            groups.setdefault(key, []).append((row, layout))
        out.append(block)
    if cache is None:
        cache = PredictionCache(nodes=_node_counts(pieces))
    calls: list[dict[str, Any]] = []
    owners: list[_StepRow] = []
    for key, members in groups.items():
        first = members[0][0]
        assert first.keywords is not None
        job = {k: v for k, v in first.keywords.items() if k not in _LAYOUT_KEYWORDS}
        params = job.pop("params")
        # a whole node's preset by name: the cache's own cluster, whose predictions it shares
        # between node counts; a node slice as the sweep built it
        cluster = key[0] if first.gpus_per_node is None else first.cluster
        kw = {"cluster": cluster, "nodes": first.nodes, "predictions": cache, **job}
        try:
            calls += layout_calls(params, strategies=[lay for _, lay in members], **kw)
            owners += [row for row, _ in members]
            continue
        except ValueError:  # a layout refused (an hsdp group that does not divide the ranks)
            pass
        for row, lay in members:  # the others still in the batch; the refused one alone
            try:
                calls += layout_calls(params, strategies=[lay], **kw)
                owners.append(row)
            except ValueError:
                _price_alone(row)  # says why, in costmodel step's words
    for row, step in zip(owners, _batched_steps(calls), strict=True):
        if step is None:
            _price_alone(row)
        else:
            row.keep(step)
    return out


def _batched_steps(calls: list[dict[str, Any]]) -> list[Any]:
    """:func:`costmodel.strategy.step.strategy_steps` of ``calls``; where it refuses one (a
    compute time faster than the GPU's peak), the calls in halves, down to the refused ones
    (None), so that the others are still priced in batches."""
    from ..strategy.step import strategy_steps

    try:
        return strategy_steps(calls)
    except ValueError:
        if len(calls) <= 1:
            return [None] * len(calls)
    half = len(calls) // 2
    return _batched_steps(calls[:half]) + _batched_steps(calls[half:])


def _price_alone(row: _StepRow) -> None:
    """``row``'s step through one :func:`~costmodel.strategy.strategy_step`
    (:func:`step_row`'s road), or why it is refused, in the step's words."""
    from ..strategy import strategy_step

    assert row.keywords is not None
    try:
        step = strategy_step(cluster=row.cluster, nodes=row.nodes, timeline=False, **row.keywords)
    except ValueError as exc:
        row.error = " ".join(str(exc).split())
        return
    row.keep(step)


def _eval_step(
    cat: dict[str, Any],
    num: dict[str, np.ndarray],
    get_cluster: Any,
    priced: list[_StepRow] | None = None,
) -> dict[str, Any]:
    """A step block's columns: each row :func:`costmodel.strategy.strategy_step`'s answer with
    ``costmodel step``'s defaults.

    A step is a schedule of buckets or wrap units, not a closed form, so its rows are steps
    (:data:`~.grid.MAX_STEP_ROWS` bounds them), priced on the advisor's batched road
    (:func:`_step_rows`; ``priced``: this block's rows priced already with other blocks). Every
    option the grid does not set takes the value ``costmodel step --cluster`` gives it
    (:func:`step_keywords`), so a row is that command's answer to the same question
    (:func:`step_row`, the same numbers one row at a time).
    """
    from ..strategy.layout import LAYOUT_KEYS, bucket_not_applied

    n = len(next(iter(num.values()))) if num else 1
    num = _step_shape(cat, num, get_cluster)  # ranks: the nodes and GPUs per node it takes
    if priced is None:
        priced = _step_rows([(cat, num, n)], get_cluster)[0]
    nodes = num.get("nodes", np.ones(n, dtype=np.int64))
    rows = [
        _failed_step_row(cat, r.cluster, r.values, r.ranks) if r.columns is None else r.columns
        for r in priced
    ]
    errors = [r.error for r in priced]
    out: dict[str, Any] = {
        "preset": cat["preset"],
        "model": cat["model"],
        "arch": cat["arch"],
        # the layout's four keys, named and strategy=all alike, as the memory sweep and every
        # --json write them (Layout.identity)
        **_layout_id_columns(rows),
        "recipe": cat["recipe"],
        "recompute": cat["recompute"],
        "loss": cat["loss"],
        # a grid that sets it: its column, as the memory sweep's (one that does not: none)
        **(
            {"flash_attention": np.full(n, bool(cat["flash_attention"]))}
            if cat.get("flash_attention") is not None
            else {}
        ),
        "param_dtype": cat["param_dtype"],
        "grad_dtype": cat["grad_dtype"],  # None (the recipe's): no column
        # the compute precision each row was priced at (the grid's, else its recipe's, as
        # `step --json` writes it); a refused row: the grid's, else "" (unknown)
        "precision": np.array(
            [r.precision or cat.get("precision") or "" for r in priced], dtype=object
        ),
        "no_sync": cat["no_sync"],
        "nodes": _null_unbuilt(nodes, nodes),
    }
    for k in num:
        if k not in ("nodes", "group_size"):  # group_size: the layout's, above
            # bucket_cap_bytes, compute_time_s, ...; a count with no shape: null GPUs per node
            v = _null_unbuilt(num[k], nodes) if k == "gpus_per_node" else num[k]
            out[AXES["step"][k].column] = v
    if "bucket_cap" in num and bucket_not_applied(cat["strategy"], 1) is not None:
        # fsdp, hsdp: no gradient bucket, so no bucket size in the row (null, as `step --json`
        # gives it; `notes` says why); int64 with nulls, so CSV and Parquet chunks agree
        import pyarrow as pa

        out[AXES["step"]["bucket_cap"].column] = pa.nulls(n, type=pa.int64())
    for k in STEP_COLUMNS:
        if k in LAYOUT_KEYS:
            continue
        v = [r.get(k) for r in rows]
        if any(errors):
            out[k] = _with_failed_rows(k, v)
        else:
            out[k] = np.array(v, dtype=object if isinstance(v[0], str) else None)
    if cat.get("tokens") is not None:
        out.update(_train_cost_columns(cat, priced))
    out["error"] = np.array(errors, dtype=object)
    return out


def _null_unbuilt(values: np.ndarray, nodes: np.ndarray) -> Any:
    """``values`` (``nodes`` or ``gpus_per_node``), null where the row's rank count has no
    shape on its preset's node (0 nodes, :func:`_step_shape`), int64 either way, so that every
    chunk agrees."""
    import pyarrow as pa

    unbuilt = np.asarray(nodes) == 0
    if not unbuilt.any():
        return values
    return pa.array(np.asarray(values, dtype=np.int64), mask=unbuilt, type=pa.int64())


def _layout_id_columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The columns that name each step row's layout (:data:`~costmodel.strategy.layout.
    LAYOUT_KEYS`, :meth:`~costmodel.strategy.layout.Layout.identity`), in a named sweep and
    in ``strategy=all`` alike: ``strategy`` (the plain strategy, ``hsdp``), ``layout`` (its
    name, ``hsdp g=8``), ``group_size`` (hsdp's sharding group, null for another
    strategy), ``reshard_after_forward`` (whether fsdp/hsdp free the gathered parameters
    after forward; null for a strategy without the option) and ``gradient_as_bucket_view``
    (whether ddp's gradients are views into its buckets; null off ddp); the same columns, in
    the same order and types, in every block, so every chunk agrees."""
    import pyarrow as pa

    return {
        "strategy": np.array([r["strategy"] for r in rows], dtype=object),
        "layout": np.array([r["layout"] or "" for r in rows], dtype=object),
        "group_size": pa.array([r["group_size"] for r in rows], type=pa.int64()),
        "reshard_after_forward": pa.array(
            [r["reshard_after_forward"] for r in rows], type=pa.bool_()
        ),
        "gradient_as_bucket_view": pa.array(
            [r["gradient_as_bucket_view"] for r in rows], type=pa.bool_()
        ),
    }


TRAIN_COST_COLUMNS = (
    "tokens",
    "steps",
    "wall_days",
    "wall_days_lo",
    "wall_days_hi",
    "gpu_hours",
    "gpu_hours_lo",
    "gpu_hours_hi",
    "billed_gpu_hours",
    "mfu",
    "usd_per_gpu_hour",
    "cost_usd",
    "cost_usd_lo",
    "cost_usd_hi",
    "price",
    "price_date",
    "cost_note",
)
"""A step sweep row's time and cost to train, with a token budget (the ``tokens`` setting;
``costmodel train``'s names and units): ``tokens`` to train, optimizer ``steps``
(``ceil(tokens / tokens_per_step)``), wall-clock ``wall_days`` with ``wall_days_lo`` and
``wall_days_hi`` at the ends of the step's band (NaN without one), ``gpu_hours`` with
``gpu_hours_lo``/``gpu_hours_hi`` at the same ends, the ``billed_gpu_hours`` paid for (the
GPU-hours of every GPU of each node held: a node slice is billed whole,
:func:`costmodel.training.billed_gpus_per_node`; ``cost_note`` then says "billed for N GPUs
per node (the whole instance), M used"), the ``mfu`` the step implies (model FLOPs
per token x tokens per step / (step time x GPUs x the peak of the step's precision), as
``train`` reports it), and with a price ``usd_per_gpu_hour``, ``cost_usd`` with
``cost_usd_lo``/``cost_usd_hi`` at the band's ends, the ``price`` preset's name and its
``price_date`` (empty for a price typed as ``usd_per_gpu_hour``); ``cost_usd`` is
``billed_gpu_hours`` x ``usd_per_gpu_hour``. The bands are
:class:`costmodel.training.TrainingCost`'s ``wall_days_band``, ``gpu_hours_band`` and
``cost_usd_band``, ``train --json``'s. ``cost_usd`` is NaN, and ``cost_note``
says why, where no price matches the row's GPU (a GPU is never priced at another GPU's rate);
``cost_note`` also says when the price is old or the configuration does not fit in memory."""


def _mfu_inputs(
    cat: dict[str, Any],
    cluster: Any,
    kw: dict[str, Any],
    sequence_length: int,
    precision: str,
    known: dict[tuple[Any, ...], tuple[float, float]] | None = None,
) -> tuple[float, float]:
    """(model FLOPs per token [FLOP], the GPU's dense peak at the step's precision [FLOP/s]) of
    a step row of ``sequence_length`` tokens: what :meth:`costmodel.scenario.ScenarioResult.training_cost` hands
    :func:`costmodel.training.training_cost` for ``train``'s MFU
    (:func:`~costmodel.strategy.step.model_flops_per_token` and
    :func:`~costmodel.strategy.step.measured_peak_flops` at ``precision``, the precision the
    step ran at: its ``StrategyStep.precision``, which
    :func:`~costmodel.strategy.step.check_precision_support` gave it). ``known``: the answers
    of a block's rows by their arguments, so that rows that share them ask once."""
    from ..architecture import load_arch
    from ..strategy.step import measured_peak_flops, model_flops_per_token

    compute_time = kw.get("compute_time")
    mfu = None if compute_time is not None else kw.get("mfu")  # the step's own rule
    params = None if cat["arch"] is not None else float(kw["params"])
    key = (cat["arch"], params, int(sequence_length), mfu, compute_time, cluster.gpu, precision)
    hit = None if known is None else known.get(key)
    if hit is not None:
        return hit
    arch = load_arch(cat["arch"]) if cat["arch"] is not None else None
    fpt = model_flops_per_token(
        float(arch.params) if arch is not None else float(params),  # type: ignore[arg-type]
        arch,
        int(sequence_length),
        mfu=mfu,
        compute_time_s=compute_time,
        gpu=cluster.gpu,  # the step's road: fitted, or the default MFU's 6N of a bare count
        precision=precision,
    )[0]
    out = (float(fpt), measured_peak_flops(cluster.gpu, precision))
    if known is not None:
        known[key] = out
    return out


def _train_cost_columns(cat: dict[str, Any], priced: list[_StepRow]) -> dict[str, Any]:
    """:data:`TRAIN_COST_COLUMNS` of step rows: each priced row's step time (with its band),
    tokens per step and GPUs, read from its step's columns, through
    :func:`costmodel.training.training_cost`, the function and arguments of ``costmodel
    train`` (:meth:`costmodel.scenario.ScenarioResult.training_cost`), with the price preset
    of ``cat["price"]`` published for the row's GPU, or ``cat["usd_per_gpu_hour"]``; the MFU's
    FLOPs and peak from :func:`_mfu_inputs`, once per distinct setting. A refused row has none;
    a cost the function refuses is that row's ``cost_note``.

    One ``training_cost`` per row, not a batch: it is ``train``'s scalar road (whole steps,
    the bands, the price's age and notes), and an array copy of it would be a second road to
    the same numbers; it is under a tenth of a priced sweep's time (benchmarks/bench_sweep.py
    ``--step-all``)."""
    import pyarrow as pa

    from ..training import load_price, published_prices, training_cost

    tokens = float(cat["tokens"])
    usd = cat.get("usd_per_gpu_hour")
    by_gpu = {load_price(p).gpu: p for p in (cat.get("price") or ())}
    cols: dict[str, list[Any]] = {k: [] for k in TRAIN_COST_COLUMNS}
    known: dict[tuple[Any, ...], tuple[float, float]] = {}
    for row in priced:
        r = row.columns
        gpu = None if row.cluster is None else str(row.cluster.gpu.name)
        price = by_gpu.get(gpu) if gpu is not None else None
        cost = None
        note = ""
        if r is not None:
            fpt, peak = _mfu_inputs(
                cat, row.cluster, row.values, r["sequence_length"], row.precision, known
            )
            try:
                cost = training_cost(
                    tokens,
                    tokens_per_step=float(r["tokens_per_step"]),
                    step_time_s=float(r["step_time_s"]),
                    ranks=int(r["ranks"]),
                    usd_per_gpu_hour=usd,
                    price=price,
                    gpu=gpu,
                    step_time_band_s=(float(r["step_time_lo_s"]), float(r["step_time_hi_s"])),
                    flops_per_token=fpt,
                    peak_flops=peak,
                    node=row.cluster.node,  # a node slice is billed whole
                )
            except ValueError as exc:
                note = " ".join(str(exc).split())
        if cost is not None:
            notes = []
            if cost.cost_usd is None:
                notes.append(_no_price_note(gpu, cat.get("price"), published_prices(str(gpu))))
            if cost.billing_note and cost.cost_usd is not None:
                notes.append(cost.billing_note)
            if cost.price_warning:
                notes.append(cost.price_warning)
            notes.extend(cost.notes)  # whole steps past the tokens asked, as train says it
            if r is not None and not r["fits"]:
                notes.append(
                    "does not fit in GPU memory: the time and cost of a configuration that "
                    "cannot run"
                )
            note = join_notes(notes)  # split on NOTES_SEPARATOR, the notes come back
        cols["tokens"].append(tokens)
        cols["steps"].append(None if cost is None else cost.steps)
        cols["wall_days"].append(np.nan if cost is None else cost.wall_days)
        cols["gpu_hours"].append(np.nan if cost is None else cost.gpu_hours)
        cols["billed_gpu_hours"].append(np.nan if cost is None else cost.billed_gpu_hours)
        for name in ("wall_days", "gpu_hours", "cost_usd"):  # TrainingCost's bands: train's
            band = getattr(cost, f"{name}_band") if cost is not None else None
            cols[f"{name}_lo"].append(np.nan if band is None else band[0])
            cols[f"{name}_hi"].append(np.nan if band is None else band[1])
        mfu = cost.mfu if cost is not None else None
        cols["mfu"].append(np.nan if mfu is None else mfu)
        paid = cost is not None and cost.cost_usd is not None
        cols["usd_per_gpu_hour"].append(cost.usd_per_gpu_hour if paid else np.nan)  # type: ignore[union-attr]
        cols["cost_usd"].append(cost.cost_usd if paid else np.nan)  # type: ignore[union-attr]
        cols["price"].append(price if paid and price is not None else "")
        cols["price_date"].append((cost.price_date or "") if paid else "")  # type: ignore[union-attr]
        cols["cost_note"].append(note)
    out: dict[str, Any] = {}
    for k, v in cols.items():
        if k == "steps":
            out[k] = pa.array(v, type=pa.int64())
        elif k in ("price", "price_date", "cost_note"):
            out[k] = np.array(v, dtype=object)
        else:
            out[k] = np.array(v, dtype=float)
    return out


def _no_price_note(gpu: str | None, given: tuple[str, ...] | None, match: list[str]) -> str:
    """Why a row has no dollars: no price was given, or none of the given presets is
    published for the row's GPU; what to give instead (a preset for that GPU, or a typed
    price)."""
    # where no preset is published for the GPU, the typed price is the only way (a `price`
    # offered there could only be refused)
    presets = (
        f"price presets for {gpu}: {', '.join(match)}"
        if match
        else f"no price preset is published for {gpu}: give `usd_per_gpu_hour`"
    )
    if given:
        return (
            f"no price for {gpu}: {', '.join(given)} {'is' if len(given) == 1 else 'are'} "
            f"for other GPUs, and a GPU is never priced at another GPU's rate; {presets}"
            + ("; or give `usd_per_gpu_hour`" if match else "")
        )
    if not match:
        return f"no price given: {presets}"
    return f"no price given: {presets} (`price`); or give `usd_per_gpu_hour`"


def _failed_step_row(
    cat: dict[str, Any], cluster: Any, kw: dict[str, Any], ranks: int | None = None
) -> dict[str, Any]:
    """What a step row whose step was refused still knows: the strategy asked for, the ranks
    of its cluster (without one, ``ranks``: the count asked, else null), and its micro-batch, sequence length and accumulation (the grid's, else
    :func:`step_keywords`' defaults; the micro-batch unknown where ``tokens_per_gpu`` sets it,
    the one of micro-batch and accumulation solved from ``global_tokens`` unknown too)."""
    import inspect

    from ..strategy.layout import make_layout

    defaults = inspect.signature(step_keywords).parameters
    group, reshard = kw.get("group_size"), cat.get("reshard_after_forward")
    view = cat.get("gradient_as_bucket_view")
    row: dict[str, Any] = {  # the layout as asked, where its cluster and fields make one
        "strategy": cat["strategy"],
        "layout": None,
        "group_size": None if group is None else int(group),
        "reshard_after_forward": reshard,
        "gradient_as_bucket_view": view,
    }
    if cluster is not None:
        try:
            fields = {
                "group_size": row["group_size"],
                "reshard_after_forward": reshard,
                "gradient_as_bucket_view": view,
            }
            row.update(
                make_layout(
                    strategy=cat["strategy"],
                    ranks=int(cluster.ranks),
                    gpus_per_node=int(cluster.gpus_per_node),
                    **{k: v for k, v in fields.items() if v is not None},
                ).identity()
            )
        except ValueError:
            pass  # the layout itself was refused (the row's error says why): as asked
        row["ranks"] = int(cluster.ranks)
    elif ranks is not None:  # a count its preset's node cannot build (ranks_rows)
        row["ranks"] = int(ranks)
    row["sequence_length"] = kw.get("sequence_length", defaults["sequence_length"].default)
    for k in ("micro_batch", "accumulation"):
        row[k] = kw.get(k, 1)  # step_keywords' None: 1, as costmodel step's
    if kw.get("tokens_per_gpu") is not None and "micro_batch" not in kw:
        row["micro_batch"] = None
    if kw.get("global_tokens") is not None:  # the one solved from it is unknown
        row["micro_batch" if "accumulation" in kw else "accumulation"] = None
    return row


_STEP_INT_COLUMNS = ("ranks", "micro_batch", "sequence_length", "accumulation", "tokens_per_step")
_STEP_TEXT_COLUMNS = ("strategy", "bound", "compute_source", "band_note", "notes")


def _with_failed_rows(column: str, values: list[Any]) -> Any:
    """A step column some of whose rows failed (None): NaN in a float column, null in an
    integer or boolean one (pyarrow, so that the column keeps its type in every chunk, as
    Parquet needs), ``""`` in a text one."""
    import pyarrow as pa

    if column in _STEP_TEXT_COLUMNS:
        return np.array(["" if v is None else v for v in values], dtype=object)
    if column in _STEP_INT_COLUMNS:
        return pa.array(values, type=pa.int64())
    if column in BOOLEAN_COLUMNS:  # fits, band_extrapolated
        return pa.array(values, type=pa.bool_())
    return np.array([np.nan if v is None else v for v in values], dtype=float)


STEP_COLUMNS = (
    "strategy",
    "layout",
    "group_size",
    "reshard_after_forward",
    "gradient_as_bucket_view",
    "ranks",
    "micro_batch",
    "sequence_length",
    "accumulation",
    "comm_contention",
    "compute_s",
    "comm_s",
    "exposed_comm_s",
    "step_time_s",
    "step_time_lo_s",
    "step_time_hi_s",
    "bound",
    "efficiency",
    "one_gpu_step_s",
    "compute_share",
    "tokens_per_step",
    "tokens_per_s",
    "memory_GB",
    "gpu_memory_GB",
    "fits",
    "compute_source",
    "band_note",
    "band_extrapolated",
    "notes",
)
"""The output columns of a step row after its inputs (units in the names; GB = 1e9 B).
``efficiency`` is the scaling efficiency, ``one_gpu_step_s / step_time_s``
(:func:`costmodel.strategy.step.scaling_efficiency`: 1 on one GPU); ``compute_share`` is
``compute_s / step_time_s``, the compute's share of the step.
``strategy``, ``layout``, ``group_size``, ``reshard_after_forward`` and
``gradient_as_bucket_view`` name the layout the step ran
(:meth:`costmodel.strategy.layout.Layout.identity`: the plain strategy, ``hsdp``; its name,
``hsdp g=8``; hsdp's group, else null; whether fsdp/hsdp reshard, else null; whether ddp's
gradients are views into its buckets, else null), in every
step sweep and ``--json``; ``fits`` says whether the memory per GPU fits
the card (a step that does not fit is in the table, marked so); ``band_note`` why
``step_time_lo_s``/``step_time_hi_s`` are NaN (:func:`costmodel.strategy.band.band_note`, the
words of ``costmodel step``), empty where the band is known; ``band_extrapolated`` whether the
row's nodes or GPUs lie beyond the largest published run the band was checked on
(:func:`costmodel.strategy.band.band_extrapolation`, ``costmodel step``'s note; the band keeps
its numbers; false where the band is unknown); ``notes`` what the answer leaves
out (a mixture-of-experts model's expert parallelism), empty otherwise.

A step sweep adds ``error``: ``""`` for a row that was priced, else why its step was refused
(a compute time faster than the GPU's peak, ...); such a row keeps its inputs, its outputs are
NaN (null in an integer or boolean column), and the other rows are priced all the same."""


def step_keywords(
    cat: dict[str, Any],
    *,
    params: float | None = None,
    group_size: int | None = None,
    micro_batch: int | None = None,
    sequence_length: int = 4096,
    accumulation: int | None = None,
    global_tokens: int | None = None,
    mfu: float | None = None,
    compute_time: float | None = None,
    tokens_per_gpu: float | None = None,
    comm_contention: float | None = None,
    bucket_cap: int | None = None,
    power_limit_w: float | None = None,
    cuda_context: float = 0.0,
    fragmentation: float = 0.0,
    ranks: int | None = None,
) -> dict[str, Any]:
    """One step sweep row's :func:`~costmodel.strategy.strategy_step` keywords, all but the
    cluster and the node count, with ``costmodel step``'s defaults (nccl model, mixed-adam,
    micro-batch 1, sequence 4096, no_sync, parameters gathered in bf16, gradients reduced in
    the recipe's dtype, the strategy's buckets, the fitted compute, the one default contention).
    ``cat`` holds the categorical axes (``param_dtype``, ``grad_dtype``, ``precision`` (the
    recipe's: fp8 for fp8-mixed, else bf16) and ``no_sync`` default as above when absent); the
    keywords are the row's numeric axes by name: ``bucket_cap`` [B] None is the strategy's own
    bucket; ``power_limit_w`` [W] None is the GPU's datasheet power; ``compute_time`` [s], as
    ``--compute-time``, is a measured compute per micro-batch (it replaces ``mfu``);
    ``tokens_per_gpu`` [tokens], as ``--tokens-per-gpu``, sets the micro-batch to
    ``tokens_per_gpu / sequence_length``
    (:func:`~costmodel.strategy.compute.micro_batch_of_tokens`, the CLI's road);
    ``cuda_context`` [B] and ``fragmentation`` [-], as ``--cuda-context`` and
    ``--fragmentation``, are the memory's overheads (0 each: none). ``micro_batch`` and
    ``accumulation`` None are 1 each, as ``step``'s; ``global_tokens`` [tokens per step], as
    ``--global-tokens``, splits :math:`T / s = B_{local} N A` over the row's ``ranks`` GPUs
    (:func:`_split_global_tokens`, as ``step --global-tokens`` splits it)."""
    from ..strategy.compute import micro_batch_of_tokens

    if tokens_per_gpu is not None:
        micro_batch = micro_batch_of_tokens(tokens_per_gpu, sequence_length)
    if global_tokens is not None:
        if ranks is None:
            raise ValueError("global_tokens: needs the row's ranks to split the batch over")
        micro_batch, accumulation = _split_global_tokens(
            int(global_tokens), int(sequence_length), int(ranks), micro_batch, accumulation
        )
    micro_batch = 1 if micro_batch is None else micro_batch
    accumulation = 1 if accumulation is None else accumulation
    return {
        "params": params,
        "arch": cat["arch"],
        "strategy": cat["strategy"],
        "group_size": None if group_size is None else int(group_size),
        "reshard_after_forward": cat.get("reshard_after_forward"),
        "gradient_as_bucket_view": cat.get("gradient_as_bucket_view"),
        "param_dtype": cat.get("param_dtype", "bf16"),
        "grad_dtype": cat.get("grad_dtype"),
        "precision": cat.get("precision"),  # None: the recipe's, as costmodel step
        "bucket_cap_bytes": None if bucket_cap is None else int(bucket_cap),
        "no_sync": bool(cat.get("no_sync", True)),
        "recipe": cat["recipe"],
        "recompute": cat["recompute"],
        "loss": cat.get("loss", "fp32"),
        "flash_attention": cat.get("flash_attention") is not False,  # None: on, as step's
        "micro_batch": int(micro_batch),
        "sequence_length": int(sequence_length),
        "accumulation": int(accumulation),
        "mfu": None if compute_time is not None else mfu,  # a measured time replaces the MFU
        "compute_time_s": compute_time,
        "comm_contention": comm_contention,
        "model": cat["model"],
        "power_limit_w": power_limit_w,
        "cuda_context_bytes": float(cuda_context),
        "fragmentation": float(fragmentation),
    }


#: the words a step sweep row's split refusal gives each quantity (its axes' names):
#: :func:`costmodel.batch.split_refusal`'s library names but the micro-batch's
_SPLIT_AXES = {"local_batch": "micro_batch"}


def _split_global_tokens(
    global_tokens: int, sequence_length: int, ranks: int, micro: int | None, acc: int | None
) -> tuple[int, int]:
    r"""(micro-batch, accumulation) of ``global_tokens`` [tokens per step] of
    ``sequence_length``-token sequences on ``ranks`` GPUs: :math:`T / s = B_{local} N A`
    [samples] solved for the one of ``micro``/``acc`` that is None (the micro-batch 1 when
    both are), by :func:`costmodel.batch.solve_batch`, the function ``costmodel step
    --global-tokens`` and ``costmodel batch`` solve it with (Goyal et al. 2017, section 2). A
    split that is not whole is refused in the axes' names, with the nearest valid values."""
    from .. import batch as bt

    if micro is None and acc is None:
        micro = 1  # costmodel step's micro-batch when neither is given
    try:
        sol = bt.solve_batch(
            local_batch=micro, ranks=ranks, accumulation=acc, global_tokens=global_tokens,
            sequence_length=sequence_length,
        )  # fmt: skip
    except bt.BatchSplitError as exc:
        raise ValueError(bt.split_refusal(exc, _SPLIT_AXES)) from None
    return int(sol.local_batch), int(sol.accumulation)


def step_row(cat: dict[str, Any], cluster: Any, nodes: int, **values: Any) -> dict[str, Any]:
    """One step sweep row, alone: one :func:`~costmodel.strategy.strategy_step` of
    :func:`step_keywords` (``values``: the row's numeric axes by name) on ``nodes`` nodes of
    ``cluster``, as a dict of :data:`STEP_COLUMNS`. A sweep prices its rows together
    (:func:`_step_rows`, the advisor's batched road), with the same numbers."""
    from ..strategy import strategy_step

    if values.get("global_tokens") is not None:  # split over the row's GPUs
        from .. import presets

        values["ranks"] = int(presets.cluster(cluster, nodes=nodes, field="preset").ranks)
    kw = step_keywords(cat, **values)
    s = strategy_step(cluster=cluster, nodes=nodes, timeline=False, **kw)
    return step_columns(s, kw["micro_batch"], kw["sequence_length"])


def step_columns(s: Any, micro_batch: int, sequence_length: int) -> dict[str, Any]:
    """The :data:`STEP_COLUMNS` of a :class:`~costmodel.strategy.StrategyStep` priced at
    ``micro_batch`` [samples] x ``sequence_length`` [tokens]: a step sweep row's outputs, and
    what ``costmodel step --cluster --json`` writes beside its own keys (one vocabulary).
    ``memory_GB``/``gpu_memory_GB`` are ``memory_bytes``/``gpu_memory_bytes`` / 1e9;
    ``band_note`` says why ``step_time_lo_s``/``step_time_hi_s`` are NaN (costmodel step's
    words, :func:`costmodel.strategy.band.band_note`), ``""`` where the band is known;
    ``notes`` is the step's notes, :func:`join_notes` (the JSON keeps the list)."""
    from ..strategy.band import band_note

    d = s.as_dict()  # strategy, layout, group_size, reshard_after_forward, ...: identity
    d["micro_batch"], d["sequence_length"] = int(micro_batch), int(sequence_length)
    d["memory_GB"], d["gpu_memory_GB"] = d["memory_bytes"] / _GB, d["gpu_memory_bytes"] / _GB
    d["notes"] = join_notes(d["notes"])  # what the answer leaves out (mixture-of-experts)
    d["band_note"] = band_note(s.step_time_band_s, s.compute_source)
    return {k: d[k] for k in STEP_COLUMNS}


def _as_read_back(cat: _Cat) -> tuple[np.ndarray, list[str]]:
    """``cat``'s codes and names with only the names its rows use, in the order the rows first
    use them: the categories a CSV of the table reads back with (a CSV holds no dictionary:
    ``read_table`` encodes its text as it comes), so the DataFrame, the Parquet file and the
    CSV agree (a column's candidates, NCCL's algorithms not chosen, were the Parquet's alone).

    >>> _as_read_back(_Cat(np.array([2, 0, 2], dtype=np.int32), ["ring", "nvls", "tree"]))
    (array([0, 1, 0], dtype=int32), ['tree', 'ring'])
    """
    codes = np.asarray(cat.codes)
    if codes.size == 0:
        return codes.astype(np.int32), []
    used, first = np.unique(codes, return_index=True)
    order = used[np.argsort(first, kind="stable")]  # used codes by first row
    remap = np.zeros(max(int(codes.max()) + 1, len(cat.categories)), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return remap[codes], [cat.categories[int(c)] for c in order]


def _to_table(cols: dict[str, Any], n: int) -> pa.Table:
    import pyarrow as pa

    arrays = {}
    for name, value in cols.items():
        if value is None:
            continue
        if isinstance(value, pa.Array):
            arrays[name] = value
        elif isinstance(value, _Cat):
            codes, names = _as_read_back(value)
            arrays[name] = pa.DictionaryArray.from_arrays(
                pa.array(codes), pa.array(names, type=pa.string())
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
    """Chunks as one table; a text column one chunk lacks is ``""`` in its rows, not null
    (:func:`~.output.text_ready`: the DataFrame, CSV and Parquet say one thing)."""
    import pyarrow as pa

    from .output import text_ready

    if len(tables) == 1:
        return text_ready(tables[0])
    return text_ready(pa.concat_tables(tables, promote_options="permissive").unify_dictionaries())


def _eval_block(
    kind: str, cat: dict[str, Any], num: dict[str, np.ndarray], get_cluster: Any
) -> dict[str, Any]:
    """The columns of one piece of a categorical block (``cat``'s values, ``num``'s rows) of a
    grid of ``kind``: the one dispatch of :func:`iter_sweep` and :func:`evaluate_rows`."""
    if kind == "memory":
        return _eval_memory(cat, num, get_cluster)
    if kind == "step":
        return _eval_step(cat, num, get_cluster)
    if cat["preset"] is not None:
        return _eval_collective_preset(cat, num, get_cluster)
    return _eval_collective_link(cat, num)


def _eval_pieces(
    kind: str,
    pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]],
    get_cluster: Any,
) -> list[pa.Table]:
    """The tables of pieces ``(cat, num, rows)`` of a grid of ``kind``, in order: each piece
    through :func:`_eval_block`; a step grid's pieces priced together first
    (:func:`_step_rows`: every layout and node count of a chunk in one batch)."""
    if kind == "memory" and sum("pinned" in cat for cat, _, _ in pieces) > 1:
        return [_memory_layout_groups(pieces, get_cluster)]
    if kind != "step":
        return [_to_table(_eval_block(kind, cat, num, get_cluster), n) for cat, num, n in pieces]
    from ..strategy.comm import PredictionCache

    # a ranks axis read as its nodes and GPUs per node first (the cache's node counts)
    pieces = [(cat, _step_shape(cat, num, get_cluster), n) for cat, num, n in pieces]
    cache = PredictionCache(nodes=_node_counts(pieces))  # every batch's predictions
    tables: list[pa.Table] = []
    for batch in _row_batches(pieces, STEP_BATCH_ROWS):
        priced = _step_rows(batch, get_cluster, cache)
        tables += [
            _to_table(_eval_step(cat, num, get_cluster, rows), n)
            for (cat, num, n), rows in zip(batch, priced, strict=True)
        ]
    return tables


def _memory_layout_groups(
    pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]], get_cluster: Any
) -> pa.Table:
    """A memory sweep's ``strategy=all`` pieces (one per rank count and layout, a row or a
    few each: :func:`~.grid._all_memory_combos`) sized one layout at a time: the pieces of one
    layout (every categorical value but the pinned rank count alike) joined into one block
    for :func:`_eval_memory`, whose rows are each their own ranks, then put back in the
    pieces' order. The same rows as sizing each piece alone, without one call per row."""
    import pyarrow as pa

    groups: dict[str, list[int]] = {}
    for i, (cat, num, _n) in enumerate(pieces):
        key = repr(sorted((k, v) for k, v in cat.items() if k != "pinned")) + repr(sorted(num))
        groups.setdefault(key, []).append(i)
    starts = np.cumsum([0] + [n for _, _, n in pieces])
    tables: list[pa.Table] = []
    where = np.empty(int(starts[-1]), dtype=np.int64)  # row of the grouped table per row
    done = 0
    for members in groups.values():
        cat = pieces[members[0]][0]
        nums = [pieces[i][1] for i in members]
        num = {k: np.concatenate([x[k] for x in nums]) for k in nums[0]}
        rows = sum(pieces[i][2] for i in members)
        tables.append(_to_table(_eval_memory(cat, num, get_cluster), rows))
        for i in members:
            where[starts[i] : starts[i + 1]] = np.arange(done, done + pieces[i][2])
            done += pieces[i][2]
    return _unify(tables).take(pa.array(where))


def _node_counts(pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]]) -> list[int]:
    """The node counts of step pieces' rows (1 where the grid has no ``nodes``)."""
    out: set[int] = set()
    for _, num, _n in pieces:
        out.update(np.unique(num["nodes"]).tolist() if "nodes" in num else [1])
    out.discard(0)  # a rank count with no shape on its preset's node (_step_shape): no cluster
    return sorted(out)


def _row_batches(
    pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]], most: int
) -> Iterator[list[tuple[dict[str, Any], dict[str, np.ndarray], int]]]:
    """``pieces`` in order, in batches of at most ``most`` rows (a longer piece cut)."""
    batch: list[tuple[dict[str, Any], dict[str, np.ndarray], int]] = []
    rows = 0
    for cat, num, n in pieces:
        for a in range(0, n, most):
            b = min(n, a + most)
            if batch and rows + b - a > most:
                yield batch
                batch, rows = [], 0
            batch.append((cat, {k: v[a:b] for k, v in num.items()}, b - a))
            rows += b - a
    if batch:
        yield batch


def checked_chunk_rows(chunk_rows: Any) -> int:
    """``chunk_rows`` as an int when it is a whole number in ``--chunk-rows``' range
    (``LIMITS["chunk_rows"]``, 1..1e9), else ValueError in that limit's words, as the CLI
    says it: ``cm.sweep(chunk_rows=1.5)`` raised a TypeError from ``range()`` and
    ``chunk_rows=True`` ran one-row chunks.

    >>> checked_chunk_rows(2.0)
    2
    """
    from .._limits import LIMITS

    LIMITS["chunk_rows"].check("chunk_rows", chunk_rows)
    return int(chunk_rows)


def iter_sweep(grid: Grid, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[pa.Table]:
    """Evaluate a grid in chunks of about ``chunk_rows`` rows (pyarrow Tables, same columns).

    Each categorical combination's numeric block is cut at ``chunk_rows``; small blocks are
    gathered until a chunk is full, so memory stays bounded by the chunk size. The pieces of
    one chunk are evaluated together (:func:`_eval_pieces`).
    """
    chunk_rows = checked_chunk_rows(chunk_rows)
    get_cluster = _cluster_cache() if "preset" in grid.axes else None
    pending: list[tuple[dict[str, Any], dict[str, np.ndarray], int]] = []
    pending_rows = 0
    for cat, block in _combos(grid):
        for start in range(0, block, chunk_rows):
            stop = min(block, start + chunk_rows)
            pending.append((cat, _numeric_block(grid, start, stop, cat), stop - start))
            pending_rows += stop - start
            if pending_rows >= chunk_rows:
                yield _unify(_eval_pieces(grid.kind, pending, get_cluster))
                pending, pending_rows = [], 0
    if pending:
        yield _unify(_eval_pieces(grid.kind, pending, get_cluster))


def evaluate_rows(grid: Grid, start: int, stop: int) -> pa.Table:
    """Evaluate the flat rows ``[start, stop)`` of a grid, in :func:`iter_sweep`'s row order.

    Row ``i`` is the same row whatever the split, so a grid cut into row ranges (the Dask engine
    in :mod:`costmodel.distributed`) gives back, concatenated in order, the single-process sweep.
    A range may cross categorical blocks; each block's piece is evaluated with one vectorized call
    (a step grid's pieces together: :func:`_eval_pieces`).
    """
    total = grid.rows
    if not 0 <= start <= stop <= total:
        raise ValueError(f"rows: need 0 <= start <= stop <= {total}, got [{start}, {stop})")
    get_cluster = _cluster_cache() if "preset" in grid.axes else None
    pieces: list[tuple[dict[str, Any], dict[str, np.ndarray], int]] = []
    offset = 0
    for cat, block in _combos(grid):
        lo, hi = max(start, offset) - offset, min(stop, offset + block) - offset
        offset += block
        if lo >= hi:
            if offset >= stop:
                break
            continue
        pieces.append((cat, _numeric_block(grid, lo, hi, cat), hi - lo))
    if not pieces:
        raise ValueError(f"rows: the range [{start}, {stop}) is empty")
    return _unify(_eval_pieces(grid.kind, pieces, get_cluster))
