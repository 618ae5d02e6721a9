"""Cached calls from the pages into the library: presets, sweeps, scenarios.

Each function here gathers library results into a DataFrame for a page and is cached with
``st.cache_data`` (keyed on its arguments), so moving one input reruns only what changed.
No model figure is computed here: every number comes from a costmodel function.
"""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
import streamlit as st

from costmodel import collectives, memory
from costmodel import models as _models
from costmodel._limits import MAX_MESSAGE_BYTES
from costmodel.strategy.memory import PART_LABELS

from .common import SIZES_BYTES

_SIZES = np.asarray(SIZES_BYTES, dtype=float)


def _op(name: str) -> collectives.Op:
    """A page's op name as the formula functions' Literal type (they check it: ValueError)."""
    return cast("collectives.Op", name)


def _alg(name: str) -> collectives.Algorithm:
    """A page's algorithm name as the formula functions' Literal type (they check it)."""
    return cast("collectives.Algorithm", name)


@st.cache_data(show_spinner=False, max_entries=256)
def textbook_sweep(
    op: str,
    ranks: int,
    bandwidth_bytes_per_s: float,
    latency_s: float,
    algorithms: tuple[str, ...],
) -> pd.DataFrame:
    """Textbook time, algbw and busbw of each algorithm over the size list's sizes (long format)."""
    parts = []
    for algorithm in algorithms:
        time_s = np.asarray(
            collectives.collective_time(
                _op(op), _SIZES, ranks, bandwidth_bytes_per_s, latency_s, algorithm=_alg(algorithm)
            )
        )
        parts.append(
            pd.DataFrame(
                {
                    "algorithm": algorithm,
                    "message_bytes": _SIZES,
                    "time_s": time_s,
                    "algbw_bytes_per_s": collectives.algorithm_bandwidth(_SIZES, time_s),
                    "busbw_bytes_per_s": collectives.bus_bandwidth(_op(op), _SIZES, ranks, time_s),
                    "bytes_per_rank": collectives.bytes_per_rank(
                        _op(op), _SIZES, ranks, _alg(algorithm)
                    ),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


@st.cache_data(show_spinner=False, max_entries=256)
def textbook_crossovers(
    op: str,
    ranks: int,
    bandwidth_bytes_per_s: float,
    latency_s: float,
    algorithms: tuple[str, ...],
) -> pd.DataFrame:
    """Crossover size of every pair of algorithms, with the (equal) time there; finite only."""
    rows = []
    for a, b in itertools.combinations(algorithms, 2):
        size = collectives.crossover_bytes(
            _alg(a), _alg(b), ranks, bandwidth_bytes_per_s, latency_s, op=_op(op)
        )
        # a crossover past the largest message a collective takes (2**44 B, the formulas'
        # limit; 2.2e24 B at a million ranks) is no size anyone runs: as no crossover
        if not np.isfinite(size) or size > MAX_MESSAGE_BYTES:
            continue
        time_s = collectives.collective_time(
            _op(op), size, ranks, bandwidth_bytes_per_s, latency_s, algorithm=_alg(a)
        )
        faster_below = (
            a
            if collectives.collective_time(
                _op(op), size / 2, ranks, bandwidth_bytes_per_s, latency_s, algorithm=_alg(a)
            )
            < collectives.collective_time(
                _op(op), size / 2, ranks, bandwidth_bytes_per_s, latency_s, algorithm=_alg(b)
            )
            else b
        )
        rows.append(
            {
                "pair": f"{a} / {b}",
                "message_bytes": float(size),
                "time_s": float(time_s),
                "busbw_bytes_per_s": float(collectives.bus_bandwidth(_op(op), size, ranks, time_s)),
                "faster_below": faster_below,
                "faster_above": b if faster_below == a else a,
            }
        )
    columns = [
        "pair",
        "message_bytes",
        "time_s",
        "busbw_bytes_per_s",
        "faster_below",
        "faster_above",
    ]
    return pd.DataFrame(rows, columns=columns)


# --- memory ------------------------------------------------------------------------------------
_PART_LABELS = PART_LABELS  # the parts' words, as `costmodel memory` lists them


@st.cache_data(show_spinner=False, max_entries=256)
def activation_bytes(layers, hidden, seq, micro, heads, recompute) -> float:
    """Cached :func:`costmodel.memory.activation_bytes` [B]."""
    return float(memory.activation_bytes(layers, hidden, seq, micro, heads, recompute))


@st.cache_data(show_spinner=False, max_entries=256)
def activations_for(kind: str, *args) -> float:
    """Activation bytes of one micro-batch [B], cached.

    ``("arch", name, seq, micro, flash, recompute, loss)``: ``Architecture.activation_bytes``
    (layers plus embedding, output and the loss's logits). ``("shape", layers, hidden, heads, seq, micro, flash,
    recompute)``: :func:`costmodel.memory.activation_bytes` of the layers; FlashAttention drops
    the attention-score term, as selective recomputation does.
    """
    if kind == "arch":
        from costmodel.architecture import load_arch

        name, seq, micro, flash, recompute, loss = args
        return float(
            load_arch(name).activation_bytes(
                seq, micro, flash_attention=flash, recompute=recompute, loss=loss
            )
        )
    layers, hidden, heads, seq, micro, flash, recompute = args
    if flash and recompute == "none":
        recompute = "selective"  # same terms: eq. (1) without 5 a s / h
    return float(memory.activation_bytes(layers, hidden, seq, micro, heads, recompute))


def stage_layout(
    stage: int, ranks: int, layout3: tuple | None = None, bucket_view: bool = False
) -> dict:
    """:func:`costmodel.strategy.memory.stage_memory`'s layout keywords of the Memory page's
    ``stage`` on ``ranks`` ranks: ``layout3`` = (strategy, hsdp group or None, reshard after
    forward) is ZeRO-3's layout (fsdp or hsdp), as ``costmodel memory --strategy --group-size
    --reshard/--no-reshard`` takes it (:func:`costmodel.strategy.memory.memory_layout`, one
    rule); ``bucket_view`` is ZeRO-0's (ddp's ``gradient_as_bucket_view``, ``costmodel
    memory --gradient-as-bucket-view``); the other stages (and stage 3 without one) are their
    strategies' defaults."""
    if stage == 0 and bucket_view:
        return {"gradient_as_bucket_view": True}
    if stage != 3 or layout3 is None:
        return {}
    from costmodel.strategy.memory import memory_layout

    strategy, group, reshard = layout3
    return memory_layout(
        strategy,
        int(ranks),
        group_size=group,
        reshard_after_forward=reshard,
        names=("HSDP group [GPUs]", "a cluster"),
    )


@st.cache_data(show_spinner=False, max_entries=256)
def memory_by_stage(
    params: float,
    ranks: int,
    arch: object = None,
    layout3: tuple | None = None,
    bucket_view: bool = False,
    **kw,
) -> tuple[pd.DataFrame, dict[int, float], dict[int, float]]:
    """Memory per GPU, part by part, at every ZeRO stage (long format), the totals and the
    lesson's totals (state + activations, no communication buffers) [B].

    Each stage is the layout ``costmodel step`` prices for it
    (:func:`costmodel.strategy.memory.stage_memory`), as ``costmodel memory`` sizes it: DDP's
    bucket copy, ZeRO-1/2's gradient (ipg) buffers and FSDP's gathered units are parts of the bar. ZeRO-3 is
    ``layout3``'s fsdp or hsdp, ZeRO-0 ddp with ``bucket_view``'s gradient_as_bucket_view
    (:func:`stage_layout`).
    """
    from costmodel.strategy.memory import stage_memory

    rows, totals, lesson = [], {}, {}
    for stage in memory.ZERO_STAGES:
        lkw = stage_layout(stage, ranks, layout3, bucket_view)
        p = None if arch is not None else params
        sm = stage_memory(stage, ranks, p, arch=arch, **lkw, **kw)
        totals[stage] = float(sm.total_bytes)
        lesson[stage] = float(sm.base.total_bytes)
        rows += [
            {"config": f"ZeRO-{stage}", "part": _PART_LABELS[k], "bytes": float(v)}
            for k, v in sm.parts().items()
        ]
    return pd.DataFrame(rows), totals, lesson


@st.cache_data(show_spinner=False, max_entries=256)
def max_params(
    capacity_bytes: float,
    stage: int,
    ranks: int,
    layout3: tuple | None = None,
    bucket_view: bool = False,
    **kw,
) -> float:
    """Cached :func:`costmodel.strategy.memory.stage_max_params` [-] (ZeRO-3 as ``layout3``,
    ZeRO-0 with ``bucket_view``: :func:`stage_layout`)."""
    from costmodel.strategy.memory import stage_max_params

    lkw = stage_layout(stage, ranks, layout3, bucket_view)
    return float(stage_max_params(capacity_bytes, stage, ranks, **lkw, **kw))


@st.cache_data(show_spinner=False, max_entries=256)
def ranks_needed(
    params: float,
    capacity_bytes: float,
    arch: object = None,
    layout3: tuple | None = None,
    bucket_view: bool = False,
    **kw,
) -> pd.DataFrame:
    """Fewest ranks per ZeRO stage (:func:`costmodel.strategy.memory.stage_min_ranks`, the
    layout the step prices; ZeRO-3 as ``layout3``), or why none fits. hsdp has none: its state
    is sharded over its group, not the ranks (:func:`~costmodel.strategy.memory.
    hsdp_ranks_note`, ``costmodel memory``'s words)."""
    from costmodel.strategy.memory import hsdp_ranks_note, stage_min_ranks

    rows = []
    for stage in memory.ZERO_STAGES:
        lkw: dict = {}
        if stage == 3 and layout3 is not None:
            lkw = {"strategy": layout3[0], "reshard_after_forward": layout3[2]}
        elif stage == 0 and bucket_view:
            lkw = {"gradient_as_bucket_view": True}
        try:
            if lkw.get("strategy") == "hsdp":
                raise ValueError(hsdp_ranks_note(layout3[1], "HSDP group [GPUs]"))  # type: ignore[index]
            n, note = (
                stage_min_ranks(
                    None if arch is not None else params,
                    capacity_bytes,
                    stage,
                    arch=arch,
                    **lkw,
                    **kw,
                ),
                "",
            )
        except ValueError as exc:
            n, note = None, str(exc)
        rows.append({"ZeRO stage": stage, "ranks needed": n, "note": note})
    frame = pd.DataFrame(rows)
    frame["ranks needed"] = frame["ranks needed"].astype("Int64")
    return frame


# --- presets -----------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def preset_names(kind: str) -> list[str]:
    """Names of the shipped (and user) presets of one kind: ``gpu``, ``link`` or ``cluster``."""
    from costmodel import presets

    return presets.names(kind)


@st.cache_data(show_spinner=False)
def gpu_memory_bytes(name: str) -> float:
    """Device memory of a GPU preset [B] (its datasheet figure)."""
    from costmodel import presets

    return float(presets.load(name, "gpu").memory_bytes)


def check_recipe_on_gpu(gpu: str, recipe: str) -> None:
    """Refuse an fp8 recipe on a GPU preset without fp8 tensor cores, as ``costmodel memory
    --cluster`` and the memory sweep's ``preset`` refuse it
    (:func:`costmodel.strategy.step.check_fp8_support`, the one check of every surface that
    knows the GPU); a typed GPU memory names no GPU, as ``--gpu-memory``, and is not checked."""
    from costmodel import presets
    from costmodel.strategy.step import check_fp8_support

    check_fp8_support(presets.load(gpu, "gpu"), recipe=recipe)


# --- scenario (DDP step) -----------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=128)
def evaluate_scenario(scaling: bool = False, flips: bool = False, **fields):
    """:meth:`costmodel.scenario.Scenario.evaluate` of the page's inputs (validated there).

    The step itself is cheap; the flip search and the scaling table re-evaluate it many times,
    so the page asks for them in separate (separately cached) calls and shows the step first.
    """
    from costmodel.scenario import Scenario

    # the flips and the scaling table read totals only: no timeline to build there
    return Scenario(**fields).evaluate(
        scaling=scaling, flips=flips, timeline=not (scaling or flips)
    )


@st.cache_data(show_spinner=False, max_entries=32)
def fit_suggestions(**fields):
    """:meth:`costmodel.scenario.Scenario.fit_suggestions` of the page's inputs, shared by every
    session: the cheapest changes that make a setup fit re-evaluate the step for each change
    tried (22 steps for the page's default 7B model, about 0.9 s of CPU), work a new session
    would otherwise repeat before the page's first chart."""
    from costmodel.scenario import Scenario

    return Scenario(**fields).fit_suggestions()


@st.cache_data(show_spinner=False)
def link_figures(name: str) -> dict:
    """Per-direction bandwidth [B/s], latency [s] and description of a link preset."""
    from costmodel import presets

    link = presets.load(name, "link")
    return {
        "bandwidth_bytes_per_s": float(link.per_direction_bandwidth_bytes_per_s),
        "latency_s": float(link.latency_s),
        "description": link.description,
        "source": link.source,
    }


# --- cluster (hierarchy) -----------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def cluster_facts(name: str, nodes: int, gpus_per_node: int | None) -> dict:
    """The figures of a cluster preset the Cluster page uses (SI units)."""
    from costmodel import presets

    c = presets.cluster(name, nodes=nodes, gpus_per_node=gpus_per_node)
    return {
        "description": c.node.name or c.name,
        "nodes": int(c.nodes),
        "gpus_per_node": int(c.gpus_per_node),
        "ranks": int(c.ranks),
        "intra_bandwidth_bytes_per_s": float(c.intra_bandwidth_bytes_per_s),
        "inter_bandwidth_bytes_per_s": float(c.inter_bandwidth_bytes_per_s),
        "node_inter_bandwidth_bytes_per_s": float(c.node_inter_bandwidth_bytes_per_s),
        "intra_latency_s": float(c.intra_latency_s),
        "inter_latency_s": float(c.inter_latency_s),
        "nics_per_node": int(c.nics_per_node),
        "nic_bandwidth_bytes_per_s": float(c.nic.per_direction_bandwidth_bytes_per_s)
        if c.nic is not None
        else 0.0,
        "nic": c.nic.name if c.nic is not None else None,
        "intra_kind": c.intra_kind,
        "fabric": c.fabric,
        "sharp": bool(c.sharp),
    }


def _gpu_counts(gpus_per_node: int, max_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, GPUs per node) of 2, 4, ... GPUs inside one node, then 2, 4, ... full nodes, and
    ``max_nodes`` full nodes itself (the page's own point, a power of two or not).

    A single GPU (1 x 1) communicates nothing and is left out.
    """
    inside = [k for k in (2**i for i in range(1, 11)) if k < gpus_per_node]
    pairs = [(1, k) for k in inside] + ([(1, gpus_per_node)] if gpus_per_node > 1 else [])
    nodes = sorted({n for n in (2**i for i in range(1, 64)) if n <= max_nodes} | {max_nodes})
    pairs += [(n, gpus_per_node) for n in nodes if n > 1]
    node_counts, gpus = zip(*pairs, strict=True)
    return np.asarray(node_counts, dtype=float), np.asarray(gpus, dtype=float)


@functools.lru_cache(maxsize=4096)
def _hierarchy_row(
    cluster: str, nodes: int, gpus_per_node: int, message_bytes: float, sharp: bool
) -> dict[str, float | str]:
    """One GPU count of :func:`hierarchy_sweep`: every column but the chosen model's.

    Cached per row (a pure function of hashable inputs), so moving the Nodes box computes only
    the one new row (the page's own node count): the powers of two below it are shared by every
    node count, and the Model radio does not touch these columns at all.
    """
    from costmodel import models, predict, presets, topology

    c = presets.cluster(presets.cluster(cluster), nodes=nodes, gpus_per_node=gpus_per_node)
    phases = topology.hierarchical_allreduce_phases(
        message_bytes,
        c.nodes,
        c.gpus_per_node,
        c.effective_intra_bandwidth_bytes_per_s,
        c.effective_inter_bandwidth_bytes_per_s,
        c.intra_latency_s,
        c.inter_latency_s,
        in_network_reduction=c.sharp or sharp,
    )
    row: dict[str, float | str] = {k: float(v) for k, v in phases.items()}
    for name, algo in (
        ("hierarchical_serial", "hierarchical"),
        ("hierarchical_pipelined", "hierarchical_pipelined"),
    ):
        t, _ = models.textbook_time_s(
            "all_reduce", message_bytes, c, algo, in_network_reduction=c.sharp or sharp
        )
        row[f"{name}_s"] = float(t)
    ring = predict.predict_collective(
        "all_reduce",
        message_bytes,
        c,
        algorithm="ring",
        model="textbook",
        nodes=c.nodes,
        gpus_per_node=c.gpus_per_node,
    )
    row["flat_ring_s"] = float(ring.time_s)
    nccl = predict.predict_collective(
        "all_reduce", message_bytes, c, model="nccl", nodes=c.nodes, gpus_per_node=c.gpus_per_node
    )
    row["nccl_s"] = float(nccl.time_s)
    row["nccl_algorithm"] = f"{nccl.algorithm}/{nccl.protocol}"
    return row


@functools.lru_cache(maxsize=4096)
def _model_row(
    cluster: str, nodes: int, gpus_per_node: int, message_bytes: float, model: str
) -> tuple[float, str]:
    """(time [s], "algorithm/protocol") of ``model`` at one GPU count of :func:`hierarchy_sweep`."""
    from costmodel import predict, presets

    c = presets.cluster(presets.cluster(cluster), nodes=nodes, gpus_per_node=gpus_per_node)
    p = predict.predict_collective(
        "all_reduce", message_bytes, c, model=model, nodes=c.nodes, gpus_per_node=c.gpus_per_node
    )
    return float(p.time_s), f"{p.algorithm}/{p.protocol}"


@st.cache_data(show_spinner=False, max_entries=256)
def hierarchy_sweep(
    cluster: str,
    facts: dict,
    message_bytes: float,
    in_network_reduction: bool,
    max_nodes: int,
    model: str = "nccl",
) -> pd.DataFrame:
    """Hierarchical (phases, serial, pipelined), flat-ring, NCCL-faithful and ``model`` vs GPUs.

    Every time column is :func:`costmodel.predict.predict_collective` (the one road): the
    ``flat_ring`` / ``hierarchical_*`` columns are the textbook model (:mod:`costmodel.models`)
    with that algorithm, ``nccl_*`` the realistic model, ``model_*`` the page's chosen model;
    the phases are :func:`costmodel.topology.hierarchical_allreduce_phases` on the same effective
    figures the textbook model uses. ``in_network_reduction`` is the page's SHARP what-if for
    the hierarchical columns (a preset with IB SHARP reduces in the network either way).
    """
    # two nodes at least, to show the cliff where the job leaves the node; a preset without a
    # network (nics_per_node = 0: one PCIe box) has no second node, and asking for one refused
    # the whole page even at Nodes = 1
    fewest = 2 if facts["nics_per_node"] > 0 else 1
    nodes, gpus = _gpu_counts(facts["gpus_per_node"], max(max_nodes, fewest))
    ranks = nodes * gpus
    sharp = bool(in_network_reduction)
    rows = []
    for n, g in zip(nodes.astype(int).tolist(), gpus.astype(int).tolist(), strict=True):
        row = dict(_hierarchy_row(cluster, n, g, float(message_bytes), sharp))
        if model == "nccl":  # the same call as the nccl column: reuse it
            row["model_s"], row["model_algorithm"] = row["nccl_s"], row["nccl_algorithm"]
        else:
            row["model_s"], row["model_algorithm"] = _model_row(
                cluster, n, g, float(message_bytes), model
            )
        rows.append(row)
    out = pd.DataFrame(
        {
            "gpus": ranks.astype(int),
            "nodes": nodes.astype(int),
            "gpus_per_node": gpus.astype(int),
            "message_bytes": message_bytes,
        }
    )
    out = pd.concat([out, pd.DataFrame(rows)], axis=1)
    out.insert(4, "model", model)
    for name in ("hierarchical_serial", "hierarchical_pipelined", "flat_ring", "nccl", "model"):
        out[f"{name}_busbw_bytes_per_s"] = collectives.bus_bandwidth(
            "all_reduce", message_bytes, ranks, out[f"{name}_s"].to_numpy()
        )
    return out


#: the help text of every model radio (one source: costmodel.models.DESCRIPTIONS)
MODELS_HELP = "; ".join(f"{k}: {v}" for k, v in _models.DESCRIPTIONS.items() if k in _models.MODELS)


@st.cache_data(show_spinner=False)
def answer_models(cluster: str) -> tuple[str, ...]:
    """The answer models for a cluster preset, ``nccl`` first (the default of every radio):
    lesson, textbook, and calibrated when the preset carries a calibration
    (:func:`costmodel.models.available`)."""
    from costmodel import models, presets

    have = models.available(presets.cluster(cluster))
    return (models.DEFAULT, *(m for m in have if m != models.DEFAULT))


# --- validation --------------------------------------------------------------------------------
def reference_dirs() -> list[Path]:
    """Folders searched for reference nccl-tests logs, in order.

    The runs bundled in the package first (:func:`costmodel.reference.reference_dir`, present in a
    pip install and the Docker image), then ``$COSTMODEL_REFERENCE_LOGS`` if set (a folder of the
    user's own logs; a name already bundled keeps the bundled file).
    """
    from costmodel.reference import reference_dir

    dirs = [reference_dir("nccl-tests")]
    if os.environ.get("COSTMODEL_REFERENCE_LOGS"):
        dirs.append(Path(os.environ["COSTMODEL_REFERENCE_LOGS"]))
    return [d for d in dirs if d.is_dir()]


@st.cache_data(show_spinner=False)
def reference_logs() -> dict[str, str]:
    """Reference log name -> path, from :func:`reference_dirs` (the first folder wins a name).

    Busbw-only markdown tables (bundled 21a-21d) are left out: they have no times to compare
    (read them with :func:`costmodel.validation.nccl_tests.read_busbw_table`); so are files with
    no nccl-tests result row at all (bundled 26, 27: a PyTorch-timed write-up, headline points).
    """
    from costmodel.validation.nccl_tests import why_not_timed

    out: dict[str, str] = {}
    for d in reference_dirs():
        for p in sorted(d.glob("*.txt")):
            text = p.read_text(errors="replace")
            if p.name not in out and why_not_timed(text) is None:
                out[p.name] = str(p)
    return out


@st.cache_data(show_spinner=False, max_entries=32)
def parse_log(raw: bytes | str, source: str) -> pd.DataFrame:
    """:func:`costmodel.validation.nccl_tests.parse_nccl_tests`, lenient: bad rows are listed in
    ``attrs["problems"]`` instead of stopping the whole log. Bytes are decoded as UTF-8, or UTF-16/32
    by a byte-order mark (the mark dropped); undecodable bytes raise a ValueError naming the
    byte. What the decoder warns (bytes replaced outside the rows, UTF-16 without its mark) is
    kept in ``attrs["notices"]``, in :func:`costmodel.validation.logread.read_log`'s words
    (:func:`~costmodel.validation.logread.decode_noting`), for the page to say, never on the
    server's stderr (and it stays with the cached frame: a warning is raised only on a miss)."""
    from costmodel.validation.logread import decode_noting
    from costmodel.validation.nccl_tests import parse_nccl_tests

    text, notices = decode_noting(raw, source)
    frame = parse_nccl_tests(text, source=source, strict=False)
    frame.attrs["notices"] = notices
    return frame


@st.cache_data(show_spinner=False, max_entries=32)
def detect_log_cluster(raw: bytes | str, source: str) -> str | None:
    """The cluster preset a log ran on (validation.compare.detect_cluster), or None; for a
    results file (``.jsonl``) the one its rows point to (:func:`read_results`)."""
    from costmodel.validation.compare import detect_cluster
    from costmodel.validation.logread import is_results_file

    if is_results_file(source):
        return read_results(raw, source, calibrated=True).cluster
    return detect_cluster(parse_log(raw, source), source)


def cluster_mismatch(measured: pd.DataFrame, cluster: str) -> str | None:
    """Why ``measured`` does not look like a run on ``cluster`` (compare.preset_mismatch)."""
    from costmodel.validation.compare import preset_mismatch

    return preset_mismatch(measured, cluster)


@st.cache_data(show_spinner=False, max_entries=32)
def compare_log(measured: pd.DataFrame, cluster: str, model: str) -> pd.DataFrame:
    """Measured rows against the prediction for a cluster preset (validation.compare)."""
    from costmodel.validation.compare import cluster_predictor, compare

    return compare(measured, cluster_predictor(cluster, model=model), model=model)


@st.cache_data(show_spinner=False, max_entries=32)
def summarize_comparison(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per op / algorithm / size band error statistics (validation.compare.summarize)."""
    from costmodel.validation.compare import summarize

    return summarize(comparison)


@st.cache_data(show_spinner=False, max_entries=32)
def calibrated_preset_toml(measured: pd.DataFrame, name: str, source: str) -> str:
    """A calibration preset (TOML text) fitted to the measured rows (validation.calibrate)."""
    import tempfile

    from costmodel.validation.calibrate import calibrate, write_calibration

    calibration = calibrate(measured, name=name, source=source)
    with tempfile.TemporaryDirectory() as tmp:
        return write_calibration(calibration, Path(tmp) / f"{name}.toml").read_text()


@st.cache_data(show_spinner=False, max_entries=256)
def model_sweep(op: str, cluster: str, nodes: int, gpus_per_node: int | None) -> pd.DataFrame:
    """predict_collective over the size list's sizes for every model that can answer for this
    cluster (:func:`answer_models`) and the reference baseline nccl-table."""
    from costmodel import models, predict

    parts = []
    for model in (*answer_models(cluster), *models.REFERENCE_MODELS):
        p = predict.predict_collective(
            op, _SIZES, cluster, nodes=nodes, gpus_per_node=gpus_per_node, model=model
        )
        parts.append(
            pd.DataFrame(
                {
                    "model": model,
                    "message_bytes": _SIZES,
                    "time_s": p.time_s,
                    "algbw_bytes_per_s": p.algbw_bytes_per_s,
                    "busbw_bytes_per_s": p.busbw_bytes_per_s,
                    "algorithm": p.algorithm,
                    "protocol": p.protocol,
                    "ranks": p.ranks,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


# --- validation, keyed by the log text ---------------------------------------------------------
# These take what the page has as plain values (the log bytes, its name, the inputs), so a
# rerun's cache lookup hashes one string, not a DataFrame column by column. They all go through
# costmodel.validation.logread.read_log, the reader `validate compare` uses too (one reader: a
# log gives the same rows, and so the same error, in the app and the CLI).
@st.cache_data(show_spinner=False, max_entries=32)
def read_log(
    text: bytes | str,
    source: str,
    op: str | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    cluster: str | None = None,
    placement: str = "both",
):
    """:func:`costmodel.validation.logread.read_log`, lenient (skipped lines listed in
    ``rows.attrs["problems"]``), cached on the log text and the inputs; a results file
    (``.jsonl``, the harness's rows) by :func:`read_results` (``op`` and ``gpus_per_node``
    are its rows': the page says it does not use those boxes for one)."""
    from costmodel.validation.logread import is_results_file
    from costmodel.validation.logread import read_log as _read

    if is_results_file(source):
        return read_results(text, source, nodes, placement, cluster)
    return _read(
        text,
        source,
        op=op,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        cluster=cluster,
        placement=placement,
        strict=False,
    )


@st.cache_data(show_spinner=False, max_entries=32)
def read_results(
    content: bytes | str,
    name: str,
    nodes: int | None = None,
    placement: str = "both",
    cluster: str | None = None,
    calibrated: bool = False,
):
    """:func:`costmodel.validation.logread.read_results` of an uploaded results file's bytes,
    the reader ``validate compare`` uses for the same file.

    The bytes are written under their file name to a temporary folder (the reader reads a
    path); a refusal or a notice names the file as uploaded, not the temporary path. The
    ``log`` each row names (a file on the machine that ran the job) is dropped: the page reads
    no file an upload names, so NCCL's debug lines in those logs are not looked for here."""
    import dataclasses
    import tempfile

    from costmodel.validation.logread import read_results as _read

    shown = Path(name).name or "results.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / shown
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        try:
            read = _read(
                path, nodes=nodes, placement=placement, cluster=cluster, calibrated=calibrated
            )
        except ValueError as exc:
            raise ValueError(str(exc).replace(str(path), shown)) from None
    return dataclasses.replace(
        read,
        rows=read.rows.drop(columns=["log"], errors="ignore"),
        notices=tuple(n.replace(str(path), shown) for n in read.notices),
    )


@st.cache_data(show_spinner=False, max_entries=32)
def compare_text(
    text: bytes | str,
    source: str,
    settings: tuple,
    cluster: str,
    model: str,
) -> pd.DataFrame:
    """:func:`compare_log` of the log ``text`` read with ``settings`` = (op, nodes,
    gpus_per_node, placement) on ``cluster`` (:func:`read_log`)."""
    from costmodel.validation.compare import calibration_warnings, cluster_predictor, compare

    op, nodes, gpn, placement = settings
    rows = read_log(text, source, op, nodes, gpn, cluster, placement).rows
    # a calibrated cluster preset's warnings kept with the comparison (attrs["warnings"]), so
    # the page says them on every rerun, cached or not, as validate compare --cluster does
    table, said = calibration_warnings(
        lambda: compare(rows, cluster_predictor(cluster, model=model), model=model)
    )
    table.attrs["warnings"] = said
    return table


@st.cache_data(show_spinner=False, max_entries=32)
def summarize_text(
    text: bytes | str, source: str, settings: tuple, cluster: str, model: str
) -> pd.DataFrame:
    """:func:`summarize_comparison` of :func:`compare_text` (same arguments)."""
    from costmodel.validation.compare import summarize

    return summarize(compare_text(text, source, settings, cluster, model))


@st.cache_data(show_spinner=False, max_entries=32)
def band_text(text: bytes | str, source: str, settings: tuple, cluster: str, model: str):
    """:func:`costmodel.validation.logread.band_check` of :func:`compare_text`."""
    from costmodel.validation.logread import band_check

    return band_check(compare_text(text, source, settings, cluster, model), cluster, model)


def calibrated_toml_text(
    text: bytes | str, source: str, settings: tuple, cluster: str, name: str
) -> str:
    """:func:`calibrated_preset_toml` of the rows :func:`compare_text` compares."""
    return _calibrated(text, source, settings, cluster, name)[0]


def calibrated_own_note(
    text: bytes | str, source: str, settings: tuple, cluster: str, name: str
) -> str | None:
    """The warning ``costmodel calibrate --cluster`` says when the calibration of
    :func:`calibrated_toml_text` does not lower the median |busbw error| on the rows it was
    fitted on (``calibrate.in_sample``) and where its model cannot describe the run
    (``calibrate.poor_fit_note``), else None: the same calibration, computed once."""
    return _calibrated(text, source, settings, cluster, name)[1]


@st.cache_data(show_spinner=False, max_entries=32)
def _calibrated(
    text: bytes | str, source: str, settings: tuple, cluster: str, name: str
) -> tuple[str, str | None]:
    """(TOML text, in-sample warning or None) of the calibration the page offers."""
    import tempfile

    from costmodel.validation.calibrate import (
        calibrate,
        in_sample,
        poor_fit_note,
        write_calibration,
    )
    from costmodel.validation.logread import read_log as _read

    op, nodes, gpn, placement = settings
    from costmodel.validation.logread import is_results_file

    rows = (
        read_results(text, source, nodes, placement, cluster).rows
        if is_results_file(source)
        else _read(
            text,
            source,
            op=op,
            nodes=nodes,
            gpus_per_node=gpn,
            cluster=cluster,
            placement=placement,
            strict=False,
            assume_nodes=False,  # calibration never assumes the node count
        ).rows
    )
    # `calibrate`'s default rows (out-of-place) unless the page compares in-place rows only
    fitted = "in-place" if placement == "in-place" else "out-of-place"
    # the page's cluster is the base, as `costmodel calibrate --cluster`: the preset carries the
    # fabric terms (shrunk by how well the run identifies them) and loads as that cluster
    calibration = calibrate(rows, name=name, source=source, placement=fitted, base=cluster)
    check = in_sample(calibration, rows)  # as `calibrate` warns on its own rows
    with tempfile.TemporaryDirectory() as tmp:
        toml = write_calibration(calibration, Path(tmp) / f"{name}.toml").read_text()
    # and, as `calibrate` says it too, a run its model cannot describe (poor_fit_note)
    said = [n for n in (None if check is None else check.note(), poor_fit_note(calibration)) if n]
    return toml, " ".join(said) or None


@st.cache_data(show_spinner=False, max_entries=8)
def ddp_steps(
    measured: pd.DataFrame,
    cluster: str | None,
    model: str,
    cal_content: bytes | None = None,
    cal_name: str | None = None,
):
    """:func:`costmodel.validation.compare.predict_ddp` of a results file's DDP steps, with the
    predictor of the comparison beside them, as ``validate compare`` predicts them: the preset
    ``cluster``'s ``model``, or (``cluster`` None) the uploaded calibration's fits."""
    from costmodel.validation.calibrate import calibrated_predictor
    from costmodel.validation.compare import calibration_warnings, cluster_predictor, predict_ddp

    if cluster is None:
        assert cal_content is not None and cal_name is not None
        predictor = calibrated_predictor(uploaded_calibration(cal_content, cal_name))
    else:
        predictor = cluster_predictor(cluster, model=model)
    # the calibration's warnings while it prices the steps' buckets, kept with the steps
    # (attrs["warnings"]) as compare_calibrated keeps the collectives': said once on the page
    steps, said = calibration_warnings(lambda: predict_ddp(measured, predictor))
    steps.attrs["warnings"] = said
    return steps


# --- a calibration file, as validate compare --calibration takes one ---------------------------
@st.cache_data(show_spinner=False, max_entries=8)
def uploaded_calibration(content: bytes, name: str):
    """:func:`costmodel.validation.calibrate.load_calibration` of an uploaded TOML's bytes.

    The bytes are written under their file name to a temporary folder (the loader reads a
    path); a refusal names the file as uploaded, not the temporary path."""
    import tempfile

    from costmodel.validation.calibrate import load_calibration

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (Path(name).name or "calibration.toml")
        path.write_bytes(content)
        try:
            return load_calibration(path)
        except ValueError as exc:
            raise ValueError(str(exc).replace(str(path), Path(name).name)) from None


def calibrated_read(text: bytes | str, source: str, settings: tuple):
    """The log (or results file) read for a calibration's prediction: no cluster, as
    ``validate compare --calibration`` reads it (a results file of CPU rows is not refused:
    the calibration predicts them)."""
    from costmodel.validation.logread import is_results_file

    op, nodes, gpn, placement = settings
    if is_results_file(source):
        return read_results(text, source, nodes, placement, None, calibrated=True)
    return read_log(text, source, op, nodes, gpn, None, placement)


def calibrated_rows(text: bytes | str, source: str, settings: tuple) -> pd.DataFrame:
    """The rows of :func:`calibrated_read`."""
    return calibrated_read(text, source, settings).rows


@st.cache_data(show_spinner=False, max_entries=32)
def compare_calibrated(
    text: bytes | str, source: str, settings: tuple, cal_content: bytes, cal_name: str
) -> pd.DataFrame:
    """The log ``text`` (read with ``settings`` as :func:`compare_text` does, no cluster: a
    calibration's fits are the prediction) compared with the uploaded calibration's predictor
    (``calibrate.calibrated_predictor``), labelled as ``validate compare --calibration`` does."""
    from costmodel.validation.calibrate import calibrated_predictor
    from costmodel.validation.compare import calibration_warnings, compare

    rows = calibrated_rows(text, source, settings)
    loaded = uploaded_calibration(cal_content, cal_name)
    # the calibration's warnings (no term identified at a level, ...) kept with the comparison,
    # so the page shows them on every rerun, cached or not, as validate compare says them
    table, said = calibration_warnings(
        lambda: compare(
            rows, calibrated_predictor(loaded), model=f"calibration {Path(cal_name).name}"
        )
    )
    table.attrs["warnings"] = said
    return table


@st.cache_data(show_spinner=False, max_entries=32)
def calibrated_band(
    text: bytes | str, source: str, settings: tuple, cal_content: bytes, cal_name: str
):
    """:func:`costmodel.validation.logread.calibration_band` of :func:`compare_calibrated`:
    the calibration's own held-out error, as ``validate compare --calibration`` shows it."""
    from costmodel.validation.logread import calibration_band

    return calibration_band(
        compare_calibrated(text, source, settings, cal_content, cal_name),
        uploaded_calibration(cal_content, cal_name),
    )


def timeline_phases(timeline: list[dict]) -> pd.DataFrame:
    """One row per phase of a step's timeline (an interval kind on its stream: forward,
    backward, all_gather on params, ...), in the order the phases start: how many intervals,
    when the first starts and the last ends, and the time the phase keeps its stream busy
    (the sum of its intervals) [s]. The step page's summary above the interval list: on a
    phone the whole list was a card per interval (581 for the default step)."""
    frame = pd.DataFrame(timeline, columns=["kind", "stream", "start_s", "end_s"])
    frame["stream"] = frame["stream"].fillna("").astype(str)
    frame["busy_s"] = frame["end_s"] - frame["start_s"]
    phases = (
        frame.groupby(["kind", "stream"], sort=False)
        .agg(
            intervals=("busy_s", "size"),
            start_s=("start_s", "min"),
            end_s=("end_s", "max"),
            busy_s=("busy_s", "sum"),
        )
        .reset_index()
        .sort_values("start_s", kind="stable")
        .rename(columns={"kind": "phase"})
    )
    return phases.reset_index(drop=True)
