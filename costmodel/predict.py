r"""The one road from (model, cluster, op, sizes) to predicted collective times.

Every surface goes through :func:`predict_collective` (``cm.allreduce_time(M, cluster)``, the
Cluster and Collectives pages, the CLI, ``cm.sweep``, Scenario and the DDP step via
:func:`allreduce_time_fn`). The models, one name each (:mod:`costmodel.models`):

- ``"lesson"``: the seed lesson's flat ring at the per-GPU NIC bandwidth
  (:func:`costmodel.models.lesson_time_s`; DESIGN 3.1); it reproduces the lesson's examples.
- ``"textbook"``: topology-aware alpha-beta, hierarchical intra/inter, NIC-count aware
  (:func:`costmodel.models.textbook_time_s`; DESIGN 3.2).
- ``"nccl"`` (default): the terms NCCL leaves out (:mod:`costmodel.corrections`, fitted values
  in ``costmodel/data/fitted_corrections.toml``) inside every candidate's cost, capped by the
  hardware, and the fastest candidate taken (:mod:`costmodel.realistic`, vectorised over
  node counts).
- ``"nccl-table"`` (reference baseline, not an answer model): NCCL 2.30's own tuning model
  (:mod:`costmodel.nccl`) with the topology its search would find on this hardware.
- ``"calibrated"``: the realistic model under the fabric terms fitted to measurements on this
  cluster (:class:`~costmodel.hardware.CalibrationPreset`, written by
  :func:`costmodel.validation.calibrate.write_calibration`, loaded as a cluster preset).
- ``"nccl-table"``: reference baseline only (fidelity report, compare): NCCL 2.30's own tuning
  model (:mod:`costmodel.nccl`) with the topology its search would find on this hardware.

Calibrated clusters (decision): a calibration preset is a base cluster preset plus, per level,
the **fabric's terms** (``[[fabric]]``: bandwidth efficiency and latency scale of every
candidate, host-floor scale; across nodes the NICs' share of line rate and the latency per
network hop; on host-staged nodes the duplex share;
:func:`costmodel.validation.calibrate.fit_fabric`), older files' per-op calibrated candidates
(``[[candidate]]``) and the alpha-beta lines ``T = s(N) alpha + b(M, N) / B`` per (op, textbook
algorithm, protocol, level). Loading it (``cm.cluster("my-cluster")`` or a path) gives the base
:class:`~costmodel.hardware.Cluster` with ``.calibration`` set. Then

- with ``[[fabric]]`` entries, ``model="calibrated"`` **and** ``model="nccl"`` both run the
  realistic model under the fitted terms (:func:`fabric_calibration_inputs`), for every op and
  every node/GPU count of a calibrated level: the terms are the path's, not an op's or a
  candidate's, so they carry over (docs/calibration.md). A level the calibration did not
  measure (one node vs several) warns (:class:`CalibrationWarning`) under both and answers with
  the uncalibrated model: never refused, never applied silently;
- with ``[[candidate]]`` entries only (older files), ``model="calibrated"`` **and**
  ``model="nccl"`` both run the realistic model with the calibrated multipliers inside every
  candidate; an uncovered (op, level) raises ValueError under ``"calibrated"`` and warns under
  ``"nccl"``, which then answers with the uncalibrated model;
- a preset with alpha-beta fits only (older files, or a calibration without a base cluster):
  ``model="calibrated"`` uses only the fits (:func:`fitted_time_s`) and raises ValueError for an
  op/level/algorithm/protocol no fit covers; ``model="nccl"`` uses the fits where they cover the
  request and warns where it falls back to the realistic model;
- ``"nccl-table"``, ``"textbook"`` and ``"lesson"`` ignore the calibration.

The level is ``"intra"`` for one node and ``"inter"`` for several; a fit is reused at other rank
counts through ``s(N)`` and ``b(M, N)``. With ``algorithm="auto"`` every covering fit is
evaluated and the fastest taken per size (NCCL also picks the fastest it believes in); a fitted
row reports its textbook algorithm and its protocol (``"auto"`` when the runs did not pin one:
NCCL chose, and which protocol it chose is not known).

>>> p = predict_collective("all_reduce", [2**20, 2**30], "dgx-h100", nodes=1)
>>> p.algorithm.tolist(), p.protocol.tolist()
(['ring', 'nvls'], ['ll', 'simple'])
>>> bool(p.busbw_bytes_per_s[1] > 400e9)        # NVLS on 8 x H100: about 480 GB/s busbw
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from . import corrections as C
from . import models as _models
from . import nccl, units
from . import tables as T
from ._checks import _all_finite, finite_result, flag, must_be, refuse_unreal
from .nccl.availability import _default_enabled

if TYPE_CHECKING:
    import pandas as pd

    from .hardware import CalibrationPreset, Cluster
    from .uncertainty import ErrorBand

#: the four answer models (costmodel.models.MODELS); "calibrated" needs a calibrated cluster
MODELS: tuple[str, ...] = _models.MODELS
#: reference baselines, accepted wherever a model is (costmodel.models.REFERENCE_MODELS)
REFERENCE_MODELS: tuple[str, ...] = _models.REFERENCE_MODELS
CALIBRATED = _models.CALIBRATED
#: how the collective is launched and timed (the host launch floor):
#: "nccl-tests" one process per GPU (the default, as the reference runs), "nccl-tests-g" one
#: process drives every GPU of its node (``-g gpus_per_node``), "pytorch" a torch.distributed
#: loop (the nccl-tests floor, and no error band below 1 MiB: no bundled measurement of it)
HARNESSES: tuple[str, ...] = ("nccl-tests", "nccl-tests-g", "pytorch")
OPS: tuple[str, ...] = nccl.OPS
#: the value of ``algorithm`` that asks for every algorithm (:func:`predict_all_algorithms`)
ALL = "all"
_CPU = {"intel": "intel", "amd": "amd", "nvidia": "other", "unknown": "intel"}


@dataclass(frozen=True)
class Prediction:
    """Predicted collective times, per message size (arrays, or scalars for scalar input)."""

    op: str
    ranks: int
    nodes: int
    model: str
    message_bytes: Any
    time_s: Any
    algbw_bytes_per_s: Any
    busbw_bytes_per_s: Any
    algorithm: Any
    protocol: Any
    #: expected error from grouped cross-validation (costmodel.uncertainty.ErrorBand):
    #: relative half-width per size, (lo, hi) multipliers on busbw, regime, and whether the
    #: regime was measured at all
    error_band: ErrorBand | None = None
    #: where a size's per-rank buffer is more than the GPU's memory, the note saying those
    #: times are the model's extrapolation (:func:`buffer_memory_note`, the note ``collective
    #: --cluster``, ``predict`` and the sweep's ``memory_note`` column say), else ""
    memory_note: str = ""
    #: what the model's numbers are on these rows where a reader would take them for more:
    #: NCCL's own table (``nccl-table``) capped at the NICs' line rate, or its broadcast/reduce
    #: latency being NCCL's ranking figure (:func:`nccl_table_note`), else ""
    model_note: str = ""

    def all_finite(self) -> bool:
        """Whether every number is finite: what :func:`costmodel._checks.finite_result` checks
        field by field, in one pass (the names are text; NaN in the error band means "no
        measurement", not an overflow, so the band is not checked there either)."""
        return all(
            _all_finite(v, 2)
            for v in (
                self.ranks,
                self.nodes,
                self.message_bytes,
                self.time_s,
                self.algbw_bytes_per_s,
                self.busbw_bytes_per_s,
                self.algorithm,
                self.protocol,
            )
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per size: op, model, ranks, nodes, sizes, time, bandwidths, choice, and the
        error band (``error_band_pct``: ±% to 0.01, the fitted file's precision,
        :func:`costmodel.uncertainty.band_pct`; NaN where no measurement; ``time_lo_s`` and
        ``time_hi_s``, the time at its fast and slow ends, asymmetric; ``regime``). Sizes of two
        dimensions or more give their rows in ``np.ravel`` order."""
        import pandas as pd

        from .uncertainty import band_pct
        from .units import whole_bytes

        # one row per size in np.ravel's order: a 2-D grid of sizes (the Prediction keeps its
        # shape) is a flat frame, each column 1-D, as pandas takes them
        shape = np.broadcast_shapes(np.shape(self.message_bytes), np.shape(self.time_s))
        shape = shape or (1,)

        def column(x: Any) -> np.ndarray:
            return np.ravel(np.broadcast_to(np.asarray(x), shape))

        size = column(self.message_bytes)
        return pd.DataFrame(
            {
                "op": self.op,
                "model": self.model,
                "ranks": self.ranks,
                "nodes": self.nodes,
                "message_bytes": whole_bytes(size),  # the sizes as given: whole bytes
                "time_s": column(self.time_s),
                "algbw_bytes_per_s": column(self.algbw_bytes_per_s),
                "busbw_bytes_per_s": column(self.busbw_bytes_per_s),
                "algorithm": column(self.algorithm),
                "protocol": column(self.protocol),
                **(
                    {
                        # ±% to 0.01, the fitted file's precision (uncertainty.band_pct)
                        "error_band_pct": column(band_pct(self.error_band.half_width)),
                        **dict(
                            zip(
                                ("time_lo_s", "time_hi_s"),
                                (column(b) for b in self.error_band.time_bounds(self.time_s)),
                                strict=True,
                            )
                        ),
                        "regime": self.error_band.regime,
                    }
                    if self.error_band is not None
                    else {}
                ),
            }
        )


def _resolve(cluster: str | Cluster, nodes: int | None, gpus_per_node: int | None) -> Cluster:
    from .presets import cluster as load_cluster

    return load_cluster(cluster, nodes=nodes, gpus_per_node=gpus_per_node, field="cluster")


#: ``nccl-table``'s broadcast and reduce latency: NCCL's figure for ranking algorithms
NCCL_TABLE_CHAIN_NOTE = (
    "nccl-table's broadcast/reduce latency is NCCL's ranking figure (base + one hop), which "
    "does not grow with the ranks: the nccl model charges the chain's n - 1 hops"
)
#: ``nccl-table`` rows whose time NCCL's table put above the NICs' line rate
NCCL_TABLE_CAPPED_NOTE = "NCCL's table exceeds the NIC line rate here: capped at the node's NICs"


def nccl_table_note(op: str, ranks: int, capped: bool) -> str:
    """The ``model_note`` of an ``nccl-table`` prediction (:class:`Prediction`, the notes
    ``costmodel collective --model nccl-table`` prints): :data:`NCCL_TABLE_CHAIN_NOTE` for a
    broadcast or reduce of 2 or more ranks, :data:`NCCL_TABLE_CAPPED_NOTE` where a size was
    capped at the node's NIC line rate (:func:`costmodel.realistic.table_nic_floor_s`).

    >>> nccl_table_note("all_reduce", 16, True) == NCCL_TABLE_CAPPED_NOTE
    True
    >>> nccl_table_note("all_reduce", 16, False)
    ''
    """
    return "; ".join(_nccl_table_note_parts(op, ranks, capped))


def _nccl_table_note_parts(op: str, ranks: int, capped: bool) -> list[str]:
    parts = [NCCL_TABLE_CHAIN_NOTE] if op in ("broadcast", "reduce") and ranks >= 2 else []
    if capped:
        parts.append(NCCL_TABLE_CAPPED_NOTE)
    return parts


def nccl_table_notes(rows: pd.DataFrame) -> list[str]:
    """The ``nccl-table`` notes of sweep rows (columns ``preset``, ``op``, ``nodes``,
    ``ranks``, ``size_bytes``, ``time_s``, ``algorithm_used``, ``model``), once each: what
    :func:`nccl_table_note` says of the predictions they hold (a row is capped where its time
    is the NICs' line-rate floor). Empty for other models."""
    from .presets import cluster as preset_cluster
    from .realistic import table_nic_floor_s

    need = {"preset", "op", "nodes", "ranks", "size_bytes", "time_s", "algorithm_used", "model"}
    if not need <= set(rows.columns):
        return []
    table = rows[(rows["model"] == "nccl-table") & rows["time_s"].notna()]
    notes: dict[str, None] = {}
    for key, part in table.groupby(["preset", "op", "nodes", "ranks"], sort=False, observed=True):
        preset, op, nodes, ranks = cast("tuple[str, str, int, int]", key)
        k, n = int(nodes), int(ranks)
        capped = False
        if k > 1:
            c = preset_cluster(str(preset), nodes=k, gpus_per_node=n // k)
            floor = table_nic_floor_s(
                str(op),
                part["size_bytes"].to_numpy(dtype=float),
                k,
                part["algorithm_used"].astype(str).to_numpy(),
                c,
            )
            t = part["time_s"].to_numpy(dtype=float)
            capped = bool(np.any((floor > 0) & (t <= floor * (1 + 1e-12))))
        for x in _nccl_table_note_parts(str(op), n, capped):
            notes[x] = None
    return list(notes)


def buffer_memory_note(
    sizes_bytes: Any,
    cluster: str | Cluster,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
) -> str:
    """A note where a per-rank buffer is larger than the GPU's memory, else ``""``.

    ``M`` is the per-rank buffer as nccl-tests' size column counts it: the largest buffer the
    collective touches (all-reduce in place holds ``M``; out of place, as nccl-tests runs by
    default, ``2 M``; all-gather's ``M`` is its full output, reduce-scatter's its full input,
    each with its ``M / N`` shard beside it: ``(1 + 1/N) M``). The note holds for every op
    (called without one): the other buffer comes on top, up to twice ``M``.
    No GPU can run a collective whose buffer it cannot hold, so its time is the formula's
    extrapolation, not a run that could be measured; the note says so beside the number.

    >>> buffer_memory_note([14e9], "dgx-h100")
    ''
    >>> buffer_memory_note([1e12], "dgx-h100")[:60]
    'size 1 TB per rank is more than the h100-sxm GPU memory (85.'
    """
    from .units import format_bytes

    gpu = _resolve(cluster, nodes, gpus_per_node).gpu
    sizes = np.atleast_1d(np.asarray(sizes_bytes, dtype=float))
    over = sizes[sizes > gpu.memory_bytes]
    if not over.size:
        return ""
    return (
        f"size {format_bytes(float(over.min()))} per rank is more than the {gpu.name} GPU memory "
        f"({format_bytes(float(gpu.memory_bytes))}): the GPU cannot hold that buffer (out of "
        "place, as nccl-tests runs, the op's other buffer comes on top: up to twice that), so "
        "the times at and above it are the model's extrapolation, not a run that could be "
        "measured"
    )


def fitted_params() -> dict[str, object]:
    """The correction parameters fitted on every reference run (fitted_corrections.ALL).

    Read from the packaged ``costmodel/data/fitted_corrections.toml``; a fresh dict per call.
    """
    from .fitted_corrections import FITTED

    return FITTED.all.as_dict()


class CalibrationWarning(UserWarning):
    """A calibrated cluster was asked something its calibration does not cover."""


def calibration_base_params(params: Mapping[str, object], floor_scale: float) -> dict[str, object]:
    r"""The base parameters under a calibration: the host floor :math:`a + b g` multiplied by
    ``floor_scale``, and the network mid-size ramp off.

    A calibration fits each candidate's bandwidth efficiency and latency on the cluster's own
    sweep (:mod:`costmodel.validation.calibrate`); the network ramp, fitted across clusters,
    would be counted twice (on Alps, calibrating at 2 nodes with it and predicting 4 nodes
    missed by 19 %, without it by 6 %: docs/calibration.md).

    >>> p = calibration_base_params({"host_base_us": 3.0, "host_per_gpu_us": 5.0}, 2.0)
    >>> p["host_base_us"], p["host_per_gpu_us"], p["net_ramp_phi"]
    (6.0, 10.0, 0.0)
    """
    out = dict(params)
    out["net_ramp_phi"] = 0.0
    out["host_base_us"] = float(out["host_base_us"]) * floor_scale  # type: ignore[arg-type]
    out["host_per_gpu_us"] = float(out["host_per_gpu_us"]) * floor_scale  # type: ignore[arg-type]
    return out


def fabric_calibration_inputs(
    params: Mapping[str, object],
    fabric: str,
    *,
    bandwidth_efficiency: float = 1.0,
    latency_scale: float = 1.0,
    host_floor_scale: float = 1.0,
    nic_efficiency: float | None = None,
    net_latency_us: float | None = None,
    duplex_efficiency: float | None = None,
) -> tuple[dict[str, object], dict[tuple[str, str], tuple[float, float]]]:
    r"""The realistic model's inputs under calibrated fabric terms: ``(params, candidate_scale)``.

    The terms (:class:`~costmodel.hardware.FabricCalibration`) are properties of the path, not
    of an op or an NCCL candidate, so they enter every candidate alike: the bandwidth
    efficiency :math:`\eta` and latency scale :math:`\lambda` as the ``("*", "*")`` entry of
    ``candidate_scale`` (:func:`costmodel.realistic.candidate_scale_of`), the host floor
    multiplied by :math:`\phi` (the model's own network ramp kept),
    ``nic_efficiency`` as the fabric's share of the NICs' line rate (the hardware cap and the
    NIC-bound ring: ``fabric_achievable_fraction`` and ``ring_nic_fraction``) and
    ``net_latency_us`` as the fabric's extra latency per network hop (``fabric_latency_us``)
    and ``duplex_efficiency`` as the share of the one-way rate a host-staged (no P2P) path
    gives each direction when both run at once (``host_staged_duplex``).
    None keeps the model's own value.

    >>> p, s = fabric_calibration_inputs({"host_base_us": 3.0, "host_per_gpu_us": 5.0,
    ...     "fabric_latency_us": {"efa": 40.0}}, "slingshot", bandwidth_efficiency=0.9,
    ...     nic_efficiency=0.8, net_latency_us=4.0)
    >>> s, p["fabric_latency_us"], p["ring_nic_fraction"]
    ({('*', '*'): (0.9, 1.0)}, {'efa': 40.0, 'slingshot': 4.0}, {'slingshot': 0.8})
    """
    out = calibration_base_params(params, host_floor_scale)
    # the model's own network ramp stays (calibration_base_params drops it for the per-candidate
    # multipliers, which absorbed it): none of these terms has its mid-size shape, and without
    # it the half splits on cloud fabrics missed by more than the uncalibrated model (16b 10.2 %
    # vs 6.1 %; with it 4.0 %; 23a 6.5 % -> 1.6 %; docs/calibration.md)
    out["net_ramp_phi"] = params.get("net_ramp_phi", 0.0)
    if net_latency_us is not None:
        table = dict(cast("Mapping[str, float]", out.get("fabric_latency_us", {}) or {}))
        out["fabric_latency_us"] = {**table, fabric: float(net_latency_us)}
    if duplex_efficiency is not None:
        out["host_staged_duplex"] = float(duplex_efficiency)
    if nic_efficiency is not None:
        for key in ("fabric_achievable_fraction", "ring_nic_fraction"):
            table = dict(cast("Mapping[str, float]", out.get(key, {}) or {}))
            out[key] = {**table, fabric: float(nic_efficiency)}
    return out, {("*", "*"): (float(bandwidth_efficiency), float(latency_scale))}


def _fabric_inputs(
    terms: Any, fabric: str, params: Mapping[str, object]
) -> tuple[dict[str, object], dict[tuple[str, str], tuple[float, float]]]:
    """:func:`fabric_calibration_inputs` of a :class:`~costmodel.hardware.FabricCalibration`."""
    return fabric_calibration_inputs(
        params,
        fabric,
        bandwidth_efficiency=terms.bandwidth_efficiency,
        latency_scale=terms.latency_scale,
        host_floor_scale=terms.host_floor_scale,
        nic_efficiency=terms.nic_efficiency,
        net_latency_us=None if terms.net_latency_s is None else terms.net_latency_s * 1e6,
        duplex_efficiency=terms.duplex_efficiency,
    )


def _fabric_terms_or_warn(cal: CalibrationPreset, level: str) -> Any:
    """The calibration's fabric terms for ``level``, or None with a :class:`CalibrationWarning`.

    Decision: fabric terms fitted on one node say nothing about the network, and terms fitted
    across nodes mix the network into every figure, so a level the calibration did not measure
    is answered by the uncalibrated model under both ``"nccl"`` and ``"calibrated"``, with a
    warning that says so (never refused, never applied silently).
    """
    terms = cal.fabric_terms(level)
    if terms is None:
        why = {
            "inter": "was fitted on one node only: its terms say nothing about the network "
            "between nodes; this multi-node prediction",
            "intra": "was fitted across nodes only: its terms include the network; this "
            "one-node prediction",
        }[level]
        warnings.warn(
            f"calibration {cal.name!r} {why} uses the uncalibrated nccl model",
            CalibrationWarning,
            stacklevel=4,
        )
    elif not terms.measured:  # fitted, but its rows constrained none of the terms
        warnings.warn(
            f"calibration {cal.name!r} identified none of the model's terms at this level (its "
            f"rows: {', '.join(terms.ops) or 'none'}): this prediction is the uncalibrated nccl "
            "model's, unchanged by the calibration",
            CalibrationWarning,
            stacklevel=4,
        )
    return terms


def _warn_unmeasured_duplex(
    cal: CalibrationPreset,
    terms: Any,
    op: str,
    c: Cluster,
    nvls: bool | None,
    collnet_enabled: bool,
) -> None:
    """Warn when ``op`` moves data both ways on a host-staged (no P2P) path whose duplex share
    the calibration did not measure (its rows were one-way ops): the rest of its terms apply,
    the duplex share stays the model's own."""
    if terms.duplex_efficiency is not None:
        return
    topo = cluster_topology(c, nvls=nvls, collnet_enabled=collnet_enabled)
    if C.host_staged_duplex_factor(op, topo, {"host_staged_duplex": 0.5}) == 1.0:
        return  # peer-to-peer, or an op that moves data one way
    warnings.warn(
        f"calibration {cal.name!r} did not measure the duplex share of this host-staged (no "
        f"P2P) path (its rows: {', '.join(terms.ops) or 'one-way ops'}); {op} sends and "
        "receives at once and keeps the model's own share",
        CalibrationWarning,
        stacklevel=4,
    )


def cluster_topology(
    cluster: Cluster,
    *,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    nvlink_scale: float = 1.0,
    latency_inter_us: float = 0.0,
) -> nccl.TopologyInputs:
    """NCCL's topology inputs for a :class:`~costmodel.hardware.Cluster` (nccl.topology_inputs).

    ``nvls=False`` models NCCL_NVLS_ENABLE=0; ``nvlink_scale`` multiplies NCCL's per-link
    NVLink constant; ``latency_inter_us`` fills NCCL's latencyInter slot.

    >>> from costmodel.presets import cluster
    >>> cluster_topology(cluster("dgx-a100")).ring
    Graph(n_channels=12, bw_intra_gbs=20.0, bw_inter_gbs=20.0)
    """
    from dataclasses import replace

    cc = float(cluster.gpu.compute_capability)
    per_link = None
    if cluster.intra_kind != "pcie" and nvlink_scale != 1.0:
        per_link = nccl.nvlink_bw_gbs(cc) * nvlink_scale
    nic = cluster.nic
    topo = nccl.topology_inputs(
        compute_capability=cc,
        nodes=cluster.nodes,
        gpus_per_node=cluster.gpus_per_node,
        intra_kind=cluster.intra_kind,
        nvlinks_per_gpu=cluster.nvlinks_per_gpu,
        nvlink_bw_per_link_gbs=per_link,
        p2p=cluster.p2p,
        nvls=cluster.nvls if nvls is None else (nvls and cluster.nvls),
        sharp=cluster.sharp,
        collnet_enabled=collnet_enabled,
        nics_per_node=cluster.nics_per_node,
        nic_bandwidth_bytes_per_s=0.0 if nic is None else nic.per_direction_bandwidth_bytes_per_s,
        cpu_vendor=_CPU.get(cluster.cpu_vendor, "intel"),
    )
    return replace(topo, latency_inter_us=latency_inter_us) if latency_inter_us else topo


def _covering_fits(
    calibration: CalibrationPreset, op: str, level: str, algorithm: str, protocol: str
) -> list:
    from .hardware import textbook_algorithm

    fits = [f for f in calibration.fits if f.op == op and f.level == level]
    if nccl.is_choice_set(algorithm):  # a set (nccl.candidates): the fits of its members
        members = nccl.names.set_members(algorithm, (*nccl.ALGORITHMS, nccl.P2P_ALGORITHM))
        wanted = {_textbook_or_none(op, a) for a in members}
        fits = [f for f in fits if f.algorithm in wanted]
    elif algorithm != "auto":
        try:
            want = textbook_algorithm(op, algorithm)
        except ValueError:
            return []
        fits = [f for f in fits if f.algorithm == want]
    if nccl.is_choice_set(protocol):
        # NCCL's choice among the set's protocols: its members' fits, and those of NCCL's own
        # choice ("auto"), as calibrate fits rows whose NCCL_PROTO was a set of several
        fits = [
            f
            for f in fits
            if f.protocol.lower() == "auto"
            or nccl.names.set_members(protocol, [f.protocol.lower()], "protocol")
        ]
    elif protocol != "auto":
        fits = [f for f in fits if f.protocol.lower() == str(protocol).lower()]
    return fits


def _textbook_or_none(op: str, algorithm: str) -> str | None:
    """The textbook name of an NCCL ``algorithm`` for ``op`` (a fit's name), or None."""
    from .hardware import textbook_algorithm

    try:
        return textbook_algorithm(op, algorithm)
    except ValueError:
        return None


def _calibrated_scale(
    cal: CalibrationPreset, model: str, op: str, level: str, algorithm: str, protocol: str
) -> dict | None:
    """The calibrated candidate multipliers for (op, level), or None (with a warning/raise).

    Decision: a calibration never silently falls back. ``model="calibrated"``
    raises ValueError for an (op, level) it does not cover; ``model="nccl"`` then warns
    (:class:`CalibrationWarning`) and uses the uncalibrated realistic model. Inside a covered
    level, other node/rank counts and sizes outside the fitted range are extrapolated by the
    model's structure (the fitted multipliers scale every candidate's latency and bandwidth;
    node count, steps, caps and the choice are the model's), without a warning.
    """
    if not cal.candidates:
        if model == "nccl" and not _covering_fits(cal, op, level, algorithm, protocol):
            warnings.warn(
                f"calibration {cal.name!r} has no fit for {op} at level {level!r}; "
                "using the uncalibrated nccl model",
                CalibrationWarning,
                stacklevel=4,
            )
        return None
    scale = cal.candidate_scale(op, level)
    if scale:
        return scale
    have = sorted({f"{c.op}/{c.level}" for c in cal.candidates})
    what = (
        f"calibration {cal.name!r} covers {', '.join(have)}; not {op} at level {level!r} "
        f"({'several nodes' if level == 'inter' else 'one node'})"
    )
    if model == CALIBRATED:
        raise ValueError(
            f"model: 'calibrated', but {what}; allowed: calibrate on a run of that shape, or "
            "the nccl model (uncalibrated there)"
        )
    warnings.warn(f"{what}: using the uncalibrated nccl model", CalibrationWarning, stacklevel=4)
    return None


def fitted_time_s(
    calibration: CalibrationPreset,
    op: str,
    message_bytes: ArrayLike,
    ranks: int,
    nodes: int = 1,
    algorithm: str = "auto",
    protocol: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Time from a calibration's fits: ``(time_s, algorithm, protocol)`` arrays.

    :math:`T = s(N)\,lpha + b(M, N)/B` of the fit for (op, level, algorithm, protocol), level
    ``"inter"`` when ``nodes > 1`` else ``"intra"``; with ``algorithm="auto"`` the fastest
    covering fit per size. Raises ValueError when no fit covers the request.

    >>> from costmodel.hardware import CalibrationPreset
    >>> cal = CalibrationPreset(name="toy", source="example", fits=[dict(
    ...     op="all_reduce", level="intra", latency_s="10us", bandwidth_bytes_per_s="4GB/s",
    ...     source="example")])
    >>> t, a, p = fitted_time_s(cal, "all_reduce", [4e6], 2)   # 2 x 10 us + 4 MB / 4 GB/s
    >>> round(float(t[0]) * 1e3, 6), str(a[0]), str(p[0])
    (1.02, 'ring', 'auto')
    """
    m = np.atleast_1d(np.asarray(message_bytes, dtype=float))
    level = "inter" if int(nodes) > 1 else "intra"
    fits = _covering_fits(calibration, op, level, algorithm, protocol)
    if not fits:
        have = sorted({(f.op, f.level, f.algorithm, f.protocol) for f in calibration.fits})
        raise ValueError(
            f"calibration {calibration.name!r} has no fit for an {level}-node {op} "
            f"(algorithm {algorithm!r}, protocol {protocol!r}); it has "
            + ", ".join("/".join(h) for h in have)
        )
    times = np.array(
        [np.broadcast_to(np.asarray(f.time_s(m, ranks), float), m.shape) for f in fits]
    )
    best = np.argmin(times, axis=0)
    t = np.take_along_axis(times, best[None, :], axis=0)[0]
    algos = np.array([fits[i].algorithm for i in best], dtype=object).astype(str)
    # an unpinned fit's runs let NCCL choose: "auto" says so (which protocol ran is not known)
    protos = np.array([fits[i].protocol for i in best], dtype=object).astype(str)
    return t, algos, protos


def realistic_time_s(
    op: str,
    m: np.ndarray,
    c: Cluster,
    algorithm: str = "auto",
    protocol: str = "auto",
    *,
    params: Mapping[str, object] | None = None,
    gpus_per_process: int = 1,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    candidate_scale: Mapping[tuple[str, str], tuple[float, float]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The corrected model's choice and time: ``(time_s, algorithm, protocol)`` arrays.

    Every (algorithm, protocol) candidate is timed on the corrected topology (NVLink-domain
    scale, fabric latency) with NVLS all-reduce at its physical bandwidth, host-staged duplex
    sharing, the mid-size ramp (its amplitude per fabric on aws-ofi-nccl fabrics), Tree's fitted
    efficiency beyond two nodes on those fabrics, and capped by the hardware bound of its
    algorithm; the pick is the argmin of these corrected times (as a tuner would), then the
    host floor. One row per size: :func:`costmodel.realistic.realistic_rows`, which also takes
    arrays of node counts and GPUs per node.
    """
    from .realistic import realistic_rows

    t, a, pr, (a_names, p_names) = realistic_rows(
        op,
        m,
        c.nodes,
        c.gpus_per_node,
        c,
        algorithm,
        protocol,
        params=params,
        gpus_per_process=gpus_per_process,
        nvls=nvls,
        collnet_enabled=collnet_enabled,
        candidate_scale=candidate_scale,
    )
    return t, np.asarray(a_names)[a], np.asarray(p_names)[pr]


@finite_result("prediction")
def check_gpus_per_process(gpus_per_process: int, gpus_per_node: int, cluster: str) -> None:
    """Refuse ``gpus_per_process`` that does not divide a node's ``gpus_per_node``.

    One process drives ``g`` GPUs of its own node (nccl-tests ``-g g``); the ranks the model
    prices are every GPU of every node (``nodes x gpus_per_node``), so the processes of a node
    must split its GPUs evenly: ``gpus_per_node mod g == 0``. ``-g 3`` on 8-GPU nodes leaves
    two GPUs idle or a process straddling nodes, neither of which the model describes.
    """
    g, n = int(gpus_per_process), int(gpus_per_node)
    if g > n or n % g:
        allowed = ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)
        raise ValueError(
            f"gpus_per_process: {g} GPUs per process, but a node of {cluster} runs {n} GPUs "
            f"here (`gpus_per_node`); allowed: {allowed} (one process drives GPUs of its own "
            "node, and a node's processes split its GPUs evenly)"
        )


def predict_collective(
    op: str,
    message_bytes: ArrayLike,
    cluster: str | Cluster,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    algorithm: str = "auto",
    protocol: str = "auto",
    model: str = "nccl",
    *,
    gpus_per_process: int = 1,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    params: Mapping[str, object] | None = None,
    harness: str = "nccl-tests",
) -> Prediction:
    r"""Predict one collective per message size: time, algbw, busbw, algorithm and protocol.

    Parameters
    ----------
    op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"}
    message_bytes : array_like
        Per-rank buffer as nccl-tests prints it in its ``size`` column [B]: 0, or 1 to 2**44
        (below 1 B is refused, scalar or array, as the CLI refuses it). A 0-byte message takes
        0 s (algorithm and protocol ``none``): NCCL discards an empty collective
        (:func:`_empty_messages`). The CLI and the sweeps take whole bytes, 1 B to 2**44 B;
        here a size need not be whole (an ``np.logspace`` grid draws a smooth curve).
        A buffer larger than the GPU's memory is priced as any other (the model's
        extrapolation): the :class:`Prediction` has no field for notes, so the note the CLI,
        the app and the sweep's ``memory_note`` column print beside such a time is
        :func:`buffer_memory_note` (``buffer_memory_note([100e9], "dgx-h100")``).
    cluster : str or Cluster
        A preset name or a :class:`~costmodel.hardware.Cluster`.
    nodes : int, optional
        Nodes (NVLink domains) used; default one node of a preset named, or the nodes of a
        :class:`~costmodel.hardware.Cluster` passed in (``cm.cluster("dgx-h100", nodes=8)``).
    gpus_per_node : int, optional
        Use a slice of each node.
    algorithm, protocol : str
        ``"auto"`` (the model's choice) or an algorithm the model defines for ``op``: the one
        table :func:`costmodel.models.algorithms` (NCCL's names for ``nccl``, ``nccl-table``
        and ``calibrated``: ring, tree, nvls, ... as NCCL_ALGO, all-to-all ``p2p``; the
        alpha-beta rows of ``collectives.ALGORITHMS[op]`` for ``lesson`` / ``textbook``, the
        textbook also ``"hierarchical"``, ``"hierarchical_pipelined"`` for all-reduce), or an
        alias (:func:`costmodel.models.algorithm_aliases`: ``"ring"`` for all-to-all's
        pairwise and broadcast's and reduce's chain, ``"pairwise"`` for the reduce-scatter
        ring, ``"collnet"``), answered by the canonical name; any other name is refused with
        the op's allowed list. Protocols: ll, ll128, simple, as NCCL_PROTO. Every algorithm
        at once (``"all"``) is :func:`predict_all_algorithms`. For ``nccl``, ``nccl-table``
        and ``calibrated`` either may be a set as NCCL_ALGO / NCCL_PROTO allow one
        (``"ring,tree"``, ``"^ring"``, ``"^ll"``; :func:`costmodel.nccl.names.choice_set`):
        per size the fastest pair it allows, chosen as ``"auto"`` chooses among all
        (:func:`costmodel.nccl.candidates` restricts auto's candidates), and named in
        ``algorithm`` / ``protocol`` of the result; a set that leaves nothing the cluster can
        run is refused as a pinned name that cannot run is.
    model : {"nccl", "lesson", "textbook", "calibrated", "nccl-table"}
        :mod:`costmodel.models`; see the module docstring for how a calibration is used.
    gpus_per_process : int
        GPUs one host thread drives (nccl-tests ``-g``; 1 for torchrun-style jobs).
    nvls : bool, optional
        False models NCCL_NVLS_ENABLE=0.
    collnet_enabled : bool
        NCCL_COLLNET_ENABLE=1 (IB SHARP clusters).
    params : mapping, optional
        Correction parameters (default: :func:`fitted_params`).
    harness : {"nccl-tests", "nccl-tests-g", "pytorch"}
        How the op is launched and timed (:data:`HARNESSES`). ``"nccl-tests"`` (default): one
        process per GPU, host floor ``a + b g`` with ``g = gpus_per_process``;
        ``"nccl-tests-g"``: one process drives the node's GPUs (``g = gpus_per_node`` unless
        ``gpus_per_process`` is given); ``"pytorch"``: a torch.distributed loop, whose floor
        is the nccl-tests time plus a cited per-call extra
        (:data:`costmodel.corrections.PYTORCH_LOOP_EXTRA_US`, 4.5 us). No bundled run
        measures a PyTorch loop, so its error band is NaN below 1 MiB.

    Returns
    -------
    Prediction
        ``busbw = algbw x factor(op, ranks)`` with nccl-tests' factors.

    Examples
    --------
    >>> p = predict_collective("all_reduce", 8 * 2**30, "dgx-h100", nodes=8, model="lesson")
    >>> round(p.busbw_bytes_per_s / 1e9)      # one 400G NIC per GPU: the lesson's 50 GB/s
    50
    >>> p = predict_collective("all_reduce", 8 * 2**30, "dgx-h100", nodes=8, model="textbook")
    >>> round(p.busbw_bytes_per_s / 1e9)      # a ring uses all 8 NICs of a node: 8 x 48 GB/s
    381
    >>> p = predict_collective("all_reduce", 8 * 2**30, "dgx-h100", nodes=8, model="nccl-table")
    >>> p.algorithm, round(p.busbw_bytes_per_s / 1e9)    # NCCL: NVLSTree, 8 ch x 45.5 GB/s cap
    ('nvls_tree', 363)
    """
    # names in any case, as every surface reads them (costmodel._limits.CHOICES)
    model, algorithm, protocol = (units.choice_name(v) for v in (model, algorithm, protocol))
    model = _models.check_model(model)
    op = T.canonical_op(op)  # "all-reduce", "AllReduce": as the CLI reads them
    nvls = flag("nvls", nvls, allow_none=True)
    collnet_enabled = flag("collnet_enabled", collnet_enabled)
    if algorithm == ALL:
        raise ValueError(
            "algorithm='all' gives several rows per size: call predict_all_algorithms(op, sizes, "
            "cluster, nodes, model=...); allowed here: auto or one algorithm"
        )
    if not isinstance(harness, str) or harness not in HARNESSES:
        raise ValueError(f"harness: unknown harness {harness!r}; allowed: {', '.join(HARNESSES)}")
    for name, value in (("algorithm", algorithm), ("protocol", protocol), ("model", model)):
        if not isinstance(value, str):  # a list or dict is not a name (it raised "unhashable")
            raise must_be(name, "a name such as 'auto'", value)
    # a set as NCCL_ALGO / NCCL_PROTO allow one ("ring,tree", "^ring"): one spelling, checked
    # name by name; auto's candidates restricted to it (nccl.candidates), so the choice is
    # auto's own among fewer
    protocol = nccl.canonical_choice(protocol, "protocol")
    algorithm = nccl.canonical_choice(algorithm, "algorithm")
    if protocol != "auto" and not nccl.is_choice_set(protocol):
        # a name that is no protocol is refused on every model: the alpha-beta models, which
        # have none, answered protocol='foo' as if it were 'auto'
        nccl.normalize_protocol(protocol)
    if model in (_models.LESSON, _models.TEXTBOOK, _models.NCCL_TABLE):
        # the one table of algorithms per op (models.algorithms): refused before any cluster
        # is built, in the words of every surface; the nccl and calibrated models are checked
        # below, where a calibration's alpha-beta fits (by textbook name) may answer instead
        algorithm = _models.check_algorithm(model, op, algorithm)
    if params is not None:
        C.check_params(params)  # params=0 raised "'int' object is not iterable"
    if (
        isinstance(gpus_per_process, bool)
        or not isinstance(gpus_per_process, int | float | np.integer | np.floating)
        or not 1 <= gpus_per_process <= 1_000_000
        or gpus_per_process != math.floor(gpus_per_process)
    ):
        raise must_be("gpus_per_process", "a whole number in 1..1,000,000", gpus_per_process)
    if (
        isinstance(message_bytes, bool | np.bool_)
        or getattr(message_bytes, "dtype", None) == np.bool_
    ):
        # True is not 1 B (as the formulas' message_bytes, collectives._inputs)
        raise ValueError(
            f"message_bytes: expected a number or an array of numbers, got {message_bytes!r}"
        )
    refuse_unreal("message_bytes", message_bytes)  # a complex part dropped, a duration's count
    try:
        m = np.asarray(message_bytes, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"message_bytes: {message_bytes!r} is not a number or an array of "
            "numbers; allowed: sizes in bytes (parse '1MB' with "
            "costmodel.units.parse_bytes)"
        ) from exc
    from ._limits import CLUSTER_MESSAGE_BYTES, MESSAGE_BYTES  # the formulas' range, words

    bad = ~((m >= MESSAGE_BYTES.lo) & (m <= MESSAGE_BYTES.hi))  # NaN fails both
    rule = MESSAGE_BYTES.rule
    if not bad.any():  # below a byte, not empty: the commands' range (CLUSTER_MESSAGE_BYTES)
        bad = (m > 0) & (m < CLUSTER_MESSAGE_BYTES.lo)
        rule = CLUSTER_MESSAGE_BYTES.rule
    if bad.any():
        if m.ndim == 0:
            raise must_be("message_bytes", rule, message_bytes)
        i = int(np.flatnonzero(bad.ravel())[0])  # the element, not the whole array
        raise ValueError(
            f"message_bytes: must be {rule}, got {float(m.ravel()[i])!r} (element {i} of {m.size})"
        )
    scalar = m.ndim == 0
    m1 = np.atleast_1d(m)
    c = _resolve(cluster, nodes, gpus_per_node)
    n = c.ranks
    cal = c.calibration
    level = "inter" if c.nodes > 1 else "intra"
    if model == CALIBRATED and cal is None:
        raise ValueError(
            f"model: 'calibrated', but cluster {c.name!r} carries no calibration; "
            "allowed: a calibration preset (as `calibrate` writes one) or "
            "the models " + ", ".join(m for m in MODELS if m != CALIBRATED)
        )
    if harness == "nccl-tests-g" and gpus_per_process == 1:
        gpus_per_process = c.gpus_per_node  # one process drives every GPU of its node
    check_gpus_per_process(gpus_per_process, c.gpus_per_node, c.name)
    scale: dict | None = None
    fabric_params: dict[str, object] | None = None
    if cal is not None and cal.fabric and model in (CALIBRATED, "nccl") and n >= 2:
        terms = _fabric_terms_or_warn(cal, level)
        if terms is not None:
            _warn_unmeasured_duplex(cal, terms, op, c, nvls, collnet_enabled)
            # the unshrunk fit on the op and shape the rows measured; elsewhere the terms as
            # shrunk by how well the rows identify them (calibrate.fit_fabric)
            terms = terms.at(op, c.nodes, c.gpus_per_node)
            base = fitted_params() if params is None else dict(params)
            fabric_params, scale = _fabric_inputs(terms, c.fabric, base)
    elif cal is not None and model in (CALIBRATED, "nccl") and n >= 2:
        scale = _calibrated_scale(cal, model, op, level, algorithm, protocol)
    # fabric terms that do not apply here (warned above): the uncalibrated model answers
    fabric_off = cal is not None and bool(cal.fabric) and not scale
    used_fits = bool(
        bool(scale)
        or (model == CALIBRATED and not fabric_off)
        or (
            model == "nccl"
            and cal is not None
            and n >= 2
            and not cal.candidates
            and not cal.fabric
            and _covering_fits(cal, op, level, algorithm, protocol)
        )
    )
    model_note = ""  # nccl-table's notes (nccl_table_note), set where it answers
    if model in (_models.NCCL, CALIBRATED) and (scale or not used_fits):
        # NCCL's candidates answer (calibrated or not): NCCL's row of the table; alpha-beta
        # fits answer by their textbook algorithm (fitted_time_s names what they lack)
        algorithm = _models.check_algorithm(model, op, algorithm)
    if scale:
        assert cal is not None
        base = fitted_params() if params is None else dict(params)
        t, algos, protos = realistic_time_s(
            op,
            m1,
            c,
            algorithm,
            protocol,
            params=fabric_params
            if fabric_params is not None
            else calibration_base_params(base, cal.host_floor_scale(op, level)),
            gpus_per_process=gpus_per_process,
            nvls=nvls,
            collnet_enabled=collnet_enabled,
            candidate_scale=scale,
        )
    elif model == CALIBRATED and cal is not None and cal.candidates and not cal.fabric:
        t, algos, protos = (
            np.zeros_like(m1),
            np.full(m1.shape, "none"),
            np.full(m1.shape, T.NO_PROTOCOL),
        )
    elif used_fits:
        assert cal is not None
        t, algos, protos = fitted_time_s(cal, op, m1, n, c.nodes, algorithm, protocol)
    elif model in (_models.LESSON, _models.TEXTBOOK):
        timer = _models.lesson_time_s if model == _models.LESSON else _models.textbook_time_s
        t, algo = timer(op, m1, c, algorithm)
        algos, protos = np.full(m1.shape, algo), np.full(m1.shape, T.NO_PROTOCOL)
    elif n < 2:
        t, algos, protos = (
            np.zeros_like(m1),
            np.full(m1.shape, "none"),
            np.full(m1.shape, T.NO_PROTOCOL),
        )
    elif model == "nccl-table":
        topo = cluster_topology(c, nvls=nvls, collnet_enabled=collnet_enabled)
        # m1 is 1-d, so the array form comes back (asarray passes arrays through: no copy)
        res = nccl.nccl_table_time(op, m1, topo, algorithm, protocol)
        t, algos, protos = (np.asarray(x) for x in res)
        capped = False
        if c.nodes > 1:  # never above the NICs' line rate (table_nic_floor_s; said in its notes)
            from .realistic import table_nic_floor_s

            floor = table_nic_floor_s(op, m1, c.nodes, algos, c)
            capped = bool(np.any((floor > t) & (m1 > 0)))
            t = np.maximum(t, floor)
        model_note = nccl_table_note(op, n, capped)
    else:
        t, algos, protos = realistic_time_s(
            op,
            m1,
            c,
            algorithm,
            protocol,
            params=params,
            gpus_per_process=gpus_per_process,
            nvls=nvls,
            collnet_enabled=collnet_enabled,
        )
    if harness == "pytorch" and model in ("nccl", CALIBRATED) and n >= 2:
        t = np.asarray(t, dtype=float) + C.PYTORCH_LOOP_EXTRA_US * 1e-6
    t, algos, protos = _empty_messages(m1, t, algos, protos)
    algbw, busbw = _bandwidths(op, m1, t, n)
    # the uncalibrated answer of a calibration that does not apply has the nccl model's band
    band_model = "nccl" if model == CALIBRATED and fabric_off else model
    band = _band(band_model, c, n, m if scalar else m1.reshape(m.shape), used_fits, harness, op)
    # a buffer no GPU of the cluster can hold: said beside the number, as every surface says it
    note = buffer_memory_note(m1, c) if m1.size and float(m1.max()) > c.gpu.memory_bytes else ""
    if scalar:
        return Prediction(
            op,
            n,
            c.nodes,
            model,
            float(m1[0]),
            float(t[0]),
            float(algbw[0]),
            float(busbw[0]),
            str(algos[0]),
            str(protos[0]),
            band,
            note,
            model_note,
        )
    return Prediction(
        op,
        n,
        c.nodes,
        model,
        m1.reshape(m.shape),
        t.reshape(m.shape),
        algbw.reshape(m.shape),
        busbw.reshape(m.shape),
        algos.reshape(m.shape),
        protos.reshape(m.shape),
        band,
        note,
        model_note,
    )


@finite_result("prediction")
def predict_collective_nodes(
    op: str, message_bytes: ArrayLike, clusters: list[Cluster], model: str = "nccl"
) -> list[Prediction]:
    """:func:`predict_collective` of the same sizes on one cluster at several node counts:
    ``[predict_collective(op, message_bytes, c, nodes=c.nodes, model=model) for c in
    clusters]``, the same numbers.

    Where the plain ``nccl`` model answers every cluster (no calibration, at least 2 ranks,
    clusters that differ only in their node count, sizes in range), the times of every node
    count are one :func:`costmodel.realistic.realistic_rows` call (its rows may mix node
    counts and give each row the number of a call of its own); otherwise one call each.

    >>> from costmodel.presets import cluster
    >>> cs = [cluster("dgx-h100", nodes=n) for n in (2, 4)]
    >>> both = predict_collective_nodes("all_reduce", [2**20, 2**30], cs)
    >>> alone = [predict_collective("all_reduce", [2**20, 2**30], c, nodes=c.nodes) for c in cs]
    >>> all((a.time_s == b.time_s).all() for a, b in zip(both, alone))
    True
    """
    m = np.asarray(message_bytes, dtype=float)
    c0 = clusters[0] if clusters else None
    if (
        c0 is None
        or _models.check_model(model) != "nccl"
        or m.ndim != 1
        or np.any(~np.isfinite(m))
        or np.any(m < 0)
        or np.any((m > 0) & (m < 1))  # refused below 1 B, in predict_collective's words
        or np.any(m > 2.0**44)
        or any(
            c.calibration is not None or c.ranks < 2 or not _same_but_nodes(c, c0) for c in clusters
        )
    ):
        return [predict_collective(op, m, c, nodes=c.nodes, model=model) for c in clusters]
    from .realistic import realistic_rows

    nccl.check_op(op)
    k = np.repeat(np.array([c.nodes for c in clusters], dtype=np.int64), m.size)
    g = np.repeat(np.array([c.gpus_per_node for c in clusters], dtype=np.int64), m.size)
    t_all, a, pr, (a_names, p_names) = realistic_rows(op, np.tile(m, len(clusters)), k, g, c0)
    algos_all, protos_all = np.asarray(a_names)[a], np.asarray(p_names)[pr]
    out = []
    # the clusters differ in their node count only; a band reads it as one node or more, and
    # against the largest measured run (nodes and GPUs: its extrapolation note)
    bands: dict[tuple[int, int], ErrorBand] = {}
    # the same GPU on every cluster: one buffer note for all (predict_collective's)
    note = buffer_memory_note(m, c0) if m.size and float(m.max()) > c0.gpu.memory_bytes else ""
    for i, c in enumerate(clusters):
        rows = slice(i * m.size, (i + 1) * m.size)
        t, n = t_all[rows], c.ranks
        t, algos, protos = _empty_messages(m, t, algos_all[rows], protos_all[rows])
        algbw, busbw = _bandwidths(op, m, t, n)
        band = bands.get((c.nodes, n))
        if band is None:
            band = bands[(c.nodes, n)] = _band(model, c, n, m, False, "nccl-tests", op)
        out.append(Prediction(op, n, c.nodes, model, m, t, algbw, busbw, algos, protos, band, note))
    return out


_SAME_BUT_NODES: dict[tuple[int, int], tuple[Cluster, Cluster]] = {}


def _same_but_nodes(c: Cluster, c0: Cluster) -> bool:
    """Whether cluster ``c`` is ``c0`` but for its node count; a yes is kept per pair of
    cluster objects (frozen: an advisor table asks about the same pairs for every op)."""
    if c is c0:
        return True
    hit = _SAME_BUT_NODES.get((id(c), id(c0)))
    if hit is not None and hit[0] is c and hit[1] is c0:
        return True
    if c.model_copy(update={"nodes": c0.nodes}) != c0:
        return False
    if len(_SAME_BUT_NODES) >= 1024:
        _SAME_BUT_NODES.clear()
    _SAME_BUT_NODES[(id(c), id(c0))] = (c, c0)
    return True


def _empty_messages(m: np.ndarray, t: Any, algos: Any, protos: Any) -> tuple[Any, Any, Any]:
    """A 0-byte message takes 0 s on every model, algorithm ``none`` and protocol ``none``
    (so algbw and busbw 0): NCCL discards an empty collective before it is enqueued
    (``src/enqueue.cc``, ``taskAppend``: "Empty collectives can be discarded", ``count ==
    0`` returns at once), so nothing runs and no latency is paid. The API takes 0 B (a
    step's computed sizes may be empty); the CLI and the sweeps take 1 B..2**44 B (README,
    "Limits on input"). The other sizes are returned as they are."""
    zero = m == 0
    if not zero.any():
        return t, algos, protos
    t = np.where(zero, 0.0, np.asarray(t, dtype=float))
    algos = np.where(zero, "none", np.asarray(algos)).astype(object).astype(str)
    protos = np.where(zero, T.NO_PROTOCOL, np.asarray(protos)).astype(object).astype(str)
    return t, algos, protos


def _bandwidths(op: str, m: np.ndarray, t: np.ndarray, ranks: int) -> tuple[Any, Any]:
    """nccl-tests' ``algbw = M / t`` (0 where t = 0) and ``busbw = algbw x factor(op, n)``
    (bytes/s; nccl-tests doc/PERFORMANCE.md)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(t > 0, m / np.where(t > 0, t, 1.0), 0.0)
    return algbw, algbw * T.BUSBW_FACTOR[op](ranks)


def _band(
    model: str,
    c: Cluster,
    ranks: int,
    m: ArrayLike,
    used_fits: bool,
    harness: str = "nccl-tests",
    op: str | None = None,
) -> ErrorBand:
    """The prediction's error band (costmodel.uncertainty): grouped-CV figures of its regime;
    a calibrated prediction or one rank has none from the reference runs, and says so; a
    PyTorch loop has none below 1 MiB (its launch floor was never measured here)."""
    import dataclasses

    from . import uncertainty as U

    if harness == "pytorch" and not used_fits and ranks >= 2:
        b = U.error_band(model, c.fabric, c.intra_kind, c.nodes, m, op=op, gpus=ranks)
        small = np.asarray(m, dtype=float) < U.ONE_MIB

        def cut(v: ArrayLike) -> float | np.ndarray:
            out = np.where(small, np.nan, v)
            return float(out) if out.ndim == 0 else out

        return dataclasses.replace(
            b,
            half_width=cut(b.half_width),
            lo=cut(b.lo),
            hi=cut(b.hi),
            lo_measured=cut(b.lo_measured),
            hi_measured=cut(b.hi_measured),
            note=b.note + "; below 1 MiB a PyTorch loop's launch floor is not measured (unknown)",
        )

    if used_fits:
        shape = np.shape(m)
        nan = np.full(shape, np.nan) if shape else float("nan")
        reg = U.regime(c.fabric, c.intra_kind, c.nodes)
        return U.ErrorBand(
            model,
            reg,
            False,
            nan,
            nan,
            nan,
            0,
            0,
            "calibrated fit: its error is the calibration report's, not the reference runs'",
        )
    if ranks < 2:
        return U.error_band("none", c.fabric, c.intra_kind, c.nodes, m, {}, ())
    return U.error_band(model, c.fabric, c.intra_kind, c.nodes, m, op=op, gpus=ranks)


#: Why a calibrated cluster's verdict between algorithms has no expected error
#: (:func:`predict_all_algorithms`): its band is the calibration's own, which no bundled run
#: measures (:func:`_band`'s "calibrated fit" band).
CALIBRATED_VERDICT_WHY = (
    "a calibration answers, and its error is the calibration report's, not the bundled runs'"
)


def _calibration_answers(band: Any) -> bool:
    """Whether ``band`` (an :class:`~costmodel.uncertainty.ErrorBand` or None) is unknown
    because a calibration's fits answered (:func:`_band`)."""
    return band is not None and not band.measured and band.note.startswith("calibrated fit")


def allreduce_time_fn(
    cluster: str | Cluster, nodes: int | None = None, model: str = "nccl"
) -> Callable[[Any], Any]:
    """A function bytes -> seconds for all-reduce on this cluster (for ddp's bucket timeline).

    Each call is :func:`predict_collective` with ``model`` (the same road as every surface).

    >>> f = allreduce_time_fn("dgx-h100", nodes=2)
    >>> bool(f(25 * 2**20) > f(2**20) > 0)
    True
    """
    c = _resolve(cluster, nodes, None)
    model = _models.check_model(model)

    def time_fn(message_bytes: Any) -> Any:
        return predict_collective("all_reduce", message_bytes, c, nodes=c.nodes, model=model).time_s

    return time_fn


def compare_models(
    op: str,
    message_bytes: ArrayLike,
    cluster: str | Cluster,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    models: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """Every model side by side: one row per size.

    ``models`` defaults to those that can answer for the cluster
    (:func:`costmodel.models.available`: lesson, textbook, nccl, and calibrated on a calibrated
    cluster) plus the reference baseline nccl-table. Columns ``message_bytes``, then per model
    ``time_s[<model>]``, ``busbw_bytes_per_s[<model>]``, ``algorithm[<model>]``, and
    ``<model>_over_nccl`` for lesson and textbook (that model's time / the realistic time: > 1
    where it is too slow, < 1 where it is too fast).

    >>> df = compare_models("all_reduce", [2**20, 2**30], "dgx-h100", nodes=8)
    >>> bool((df["lesson_over_nccl"] > 1).all())   # one NIC per GPU: far too pessimistic
    True
    """
    import pandas as pd

    c = _resolve(cluster, nodes, gpus_per_node)
    if models is None:
        models = _models.available(c, reference=True)
    m = np.atleast_1d(np.asarray(message_bytes, dtype=float))
    out = pd.DataFrame({"message_bytes": m})
    for mod in models:
        p = predict_collective(op, m, c, nodes=c.nodes, gpus_per_node=c.gpus_per_node, model=mod)
        out[f"time_s[{mod}]"] = p.time_s
        out[f"busbw_bytes_per_s[{mod}]"] = p.busbw_bytes_per_s
        out[f"algorithm[{mod}]"] = p.algorithm
    for mod in (_models.LESSON, _models.TEXTBOOK):
        if mod in models and "nccl" in models:
            out[f"{mod}_over_nccl"] = out[f"time_s[{mod}]"] / out["time_s[nccl]"]
    return out


# --------------------------------------------------------------------------------------------
# every algorithm on a cluster
# --------------------------------------------------------------------------------------------
_GB = 1e9
"""GB in :meth:`AlgorithmComparison.to_dict`'s ``*_GBps`` keys: SI, as nccl-tests and the sweep."""


@dataclass(frozen=True)
class AlgorithmComparison:
    """Every algorithm of one model on one cluster, per size (:func:`predict_all_algorithms`).

    Attributes
    ----------
    frame : pandas.DataFrame
        Long format, one row per (available algorithm, size): ``algorithm``, ``protocol`` (the
        protocol the model picks for that algorithm at that size; ``"none"``,
        :data:`costmodel.tables.NO_PROTOCOL`, for the alpha-beta models), ``message_bytes``
        [B], ``time_s`` [s], ``algbw_bytes_per_s``,
        ``busbw_bytes_per_s`` [B/s], ``chosen`` (the model's own choice, ``algorithm="auto"``:
        NCCL's for ``nccl``/``nccl-table``), ``best`` (the smallest time at that size, the
        model's ranking alone), ``fastest`` (the winner: the best, only when it beats the
        runner-up by more than the expected error, the rule of :attr:`verdicts`) and
        ``within_expected_error`` (no winner and within the expected error of the best: a tie;
        None where the expected error is unknown).
    unavailable : tuple of (str, str)
        ``(algorithm, reason)`` for every algorithm the cluster (or the model) cannot run.
    choice : Prediction
        :func:`predict_collective` with ``algorithm="auto"``: the time of the ``chosen`` row.
    crossovers : pandas.DataFrame
        Sizes where the fastest algorithm changes between neighbouring sizes of the grid:
        ``message_bytes`` (first size of the new winner), ``previous_bytes``, ``faster_below``,
        ``faster_above``, ``time_s`` and ``busbw_bytes_per_s`` of the new winner there.
    """

    op: str
    model: str
    cluster: str
    ranks: int
    nodes: int
    frame: Any
    unavailable: tuple[tuple[str, str], ...]
    choice: Prediction
    crossovers: Any
    #: per size, the decision between the best two algorithms under the expected error
    #: (:func:`costmodel.verdict.decide_sizes`; "within the expected error" when closer)
    verdicts: tuple[Any, ...] = ()

    @property
    def available(self) -> tuple[str, ...]:
        """Names of the algorithms with a time, in the order listed."""
        return tuple(dict.fromkeys(self.frame["algorithm"].tolist()))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (``costmodel collective --algorithm all --json``): the rows, the
        unavailable algorithms, the crossovers and the verdicts.

        Keys are those of the sweep's collective rows, which ``costmodel collective --json``
        prints in its other forms (one link, one cluster), so a quantity has one name whatever
        the form: ``preset``, ``op``, ``model``, ``nodes``, ``gpus_per_node``, ``ranks``,
        ``size_bytes`` [B], ``time_s`` [s], ``algbw_GBps`` and ``busbw_GBps`` [GB/s, GB = 1e9
        B, as nccl-tests], ``algorithm_used`` and ``protocol_used`` (the row's ``algorithm`` is
        the pinned candidate, so the two algorithm names agree), then ``chosen``, ``best``,
        ``fastest`` and ``within_expected_error`` (as in :attr:`frame`: ``fastest`` only on a
        winner, as the text's "fastest at" line says). :attr:`frame` keeps the API's names
        (``message_bytes``, B/s), those of
        :class:`Prediction`.
        """
        from .units import whole_bytes

        gpn = self.ranks // self.nodes if self.nodes else self.ranks
        rows = [
            {
                "preset": self.cluster,
                "model": self.model,
                "op": self.op,
                "algorithm": str(r["algorithm"]),
                "nodes": self.nodes,
                "gpus_per_node": gpn,
                "ranks": self.ranks,
                "size_bytes": whole_bytes(float(r["message_bytes"])),
                "time_s": float(r["time_s"]),
                "algbw_GBps": float(r["algbw_bytes_per_s"]) / _GB,
                "busbw_GBps": float(r["busbw_bytes_per_s"]) / _GB,
                "algorithm_used": str(r["algorithm"]),
                "protocol_used": str(r["protocol"]),
                "chosen": bool(r["chosen"]),
                "best": bool(r["best"]),
                "fastest": bool(r["fastest"]),
                "within_expected_error": r["within_expected_error"],
            }
            for r in self.frame.to_dict(orient="records")
        ]
        crossovers = [
            {
                "size_bytes": whole_bytes(float(x["message_bytes"])),
                "previous_size_bytes": whole_bytes(float(x["previous_bytes"])),
                "faster_below": x["faster_below"],
                "faster_above": x["faster_above"],
                "time_s": float(x["time_s"]),
                "busbw_GBps": float(x["busbw_bytes_per_s"]) / _GB,
            }
            for x in self.crossovers.to_dict(orient="records")
        ]
        return {
            "preset": self.cluster,
            "op": self.op,
            "model": self.model,
            "nodes": self.nodes,
            "gpus_per_node": gpn,
            "ranks": self.ranks,
            "results": rows,
            "unavailable": [{"algorithm": a, "reason": r} for a, r in self.unavailable],
            "crossovers": crossovers,
            "verdicts": [
                {"size_bytes": whole_bytes(float(m)), **v.as_dict()}
                for m, v in zip(self.sizes, self.verdicts, strict=True)
            ],
        }

    @property
    def sizes(self) -> Any:
        """The sizes of the grid [B], in order, as given (one verdict each: a size given
        twice has two, so the two stay paired)."""
        f = self.frame
        if not len(f):
            return f["message_bytes"].to_numpy()
        return f.loc[f["algorithm"] == f["algorithm"].iloc[0], "message_bytes"].to_numpy()


def _alpha_beta_only(cal: CalibrationPreset, op: str, level: str) -> bool:
    """Whether (op, level) is answered by the calibration's alpha-beta lines (no realistic
    calibration: no fabric terms, no calibrated candidates of (op, level))."""
    return not cal.fabric and not cal.candidate_scale(op, level)


def _listed_algorithms(model: str, op: str, c: Cluster, level: str) -> tuple[str, ...]:
    """The algorithms ``algorithm="all"`` lists for a model (see predict_all_algorithms)."""
    if model in (_models.LESSON, _models.TEXTBOOK):
        return _models.algorithms(model, op)
    if model == CALIBRATED:
        cal = c.calibration
        assert cal is not None  # predict_collective refused it before
        if _alpha_beta_only(cal, op, level):  # alpha-beta fits only: their algorithms
            return tuple(
                dict.fromkeys(f.algorithm for f in cal.fits if f.op == op and f.level == level)
            )
    return _models.algorithms(model, op)


def _nccl_reason(op: str, algorithm: str, protocol: str, topo: nccl.TopologyInputs) -> str | None:
    """Why NCCL would not run ``algorithm`` here (None: it would consider it)."""
    protos = (
        nccl.PROTOCOLS
        if protocol == "auto"
        else tuple(nccl.names.set_members(protocol, nccl.PROTOCOLS, "protocol"))
        if nccl.is_choice_set(protocol)
        else (nccl.normalize_protocol(protocol),)
    )
    why = [nccl.unavailable_reason(op, algorithm, p, topo) for p in protos]
    if all(w is not None for w in why):
        # the simple protocol's reason names the hardware; the others only "simple only"
        return why[protos.index("simple")] if "simple" in protos else why[0]
    if not _default_enabled(op, algorithm, topo):
        return (
            "off by default: NCCL considers it only with NCCL_COLLNET_ENABLE=1 "
            "(collnet_enabled=True)"
        )
    return None


def predict_all_algorithms(
    op: str,
    message_bytes: ArrayLike,
    cluster: str | Cluster,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    protocol: str = "auto",
    model: str = "nccl",
    *,
    gpus_per_process: int = 1,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    params: Mapping[str, object] | None = None,
) -> AlgorithmComparison:
    r"""Every algorithm the cluster can run, per size, with the model's choice and crossovers.

    Each row is :func:`predict_collective` with the algorithm pinned: time [s], ``algbw = M / t``
    and ``busbw = algbw x factor(op, N)`` [B/s] (nccl-tests doc/PERFORMANCE.md); a crossover is
    the size [B] where the fastest changes.

    This is ``algorithm="all"`` (decision: a function of its own rather than a mode of
    :func:`predict_collective`, whose result stays one :class:`Prediction` per size; the CLI's
    ``--algorithm all`` and the Collectives page call this). Each listed algorithm is
    :func:`predict_collective` with that algorithm pinned, so it goes through the same
    per-candidate costs as the automatic choice: for ``nccl`` and ``nccl-table`` the pinned
    algorithm's row is the fastest of its protocols, and the row of the algorithm NCCL picks
    has exactly the time of ``algorithm="auto"`` (the auto choice is the argmin over the same
    candidate times).

    Listed per model:

    - ``nccl``, ``nccl-table``: every algorithm NCCL's table holds for the op
      (:func:`costmodel.models.algorithms`: all-reduce tree, ring, collnet_direct,
      collnet_chain, nvls, nvls_tree; reduce-scatter and all-gather ring, nvls,
      collnet_direct, pat; broadcast and reduce ring; all-to-all p2p). One NCCL would not run
      here is in ``unavailable`` with :func:`costmodel.nccl.unavailable_reason` (no NVLink
      SHARP, no IB SHARP, one node for NVLSTree, PAT with more than one GPU per node, ...) or
      "off by default" for CollNet / multi-node NVLS without
      ``collnet_enabled=True`` (NCCL's default does not consider them, so neither does the
      choice here).
    - ``lesson``, ``textbook``: the textbook algorithms of :mod:`costmodel.collectives`, each
      once by its canonical name (and the hierarchical all-reduces for ``textbook``),
      in-network reduction (nvls) only where a switch
      reduces (textbook: one node with NVLink SHARP; lesson: that, or IB SHARP across nodes, in
      ``unavailable`` otherwise); the model's choice is its default (ring; broadcast and
      reduce: chain; all-to-all: pairwise), which
      need not be the fastest: ``fastest`` and the crossovers say which is.
    - ``calibrated``: the algorithms the calibration has fits for at this level.

    Crossovers are where the fastest algorithm changes between neighbouring sizes of the grid
    given (for NCCL's models the fastest is NCCL's choice), so pass a fine grid (x2 as
    nccl-tests) to find them.

    Parameters are those of :func:`predict_collective` (without ``algorithm``).

    Raises
    ------
    ValueError
        Bad op, sizes, model or cluster (as :func:`predict_collective`).

    Examples
    --------
    >>> r = predict_all_algorithms("all_reduce", [2**20, 2**34], "dgx-h100", nodes=8)
    >>> r.available
    ('tree', 'ring', 'nvls_tree')
    >>> dict(r.unavailable)["nvls"]
    'multi-node NVLS needs CollNet (IB SHARP)'
    >>> r.frame[r.frame.chosen].algorithm.tolist()      # the fastest at 1 MiB and 16 GiB
    ['tree', 'ring']
    >>> [v.label() for v in r.verdicts]  # a winner only when it beats the expected error
    ['tree', 'within the expected error']
    """
    import pandas as pd

    # names in any case, as predict_collective reads them (costmodel._limits.CHOICES)
    model, protocol = units.choice_name(model), units.choice_name(protocol)
    op = T.canonical_op(op)
    if np.ndim(np.asarray(message_bytes, dtype=object)) > 1:  # numpy said "axis remapping"
        raise ValueError(
            f"message_bytes: expected one list of sizes (1-D), got an array of shape "
            f"{np.shape(message_bytes)}; e.g. np.ravel(values)"
        )
    choice = predict_collective(
        op,
        message_bytes,
        cluster,
        nodes,
        gpus_per_node,
        "auto",
        protocol,
        model,
        gpus_per_process=gpus_per_process,
        nvls=nvls,
        collnet_enabled=collnet_enabled,
        params=params,
    )
    model = _models.check_model(model)
    c = _resolve(cluster, nodes, gpus_per_node)
    m1 = np.atleast_1d(np.asarray(message_bytes, dtype=float)).ravel()
    level = "inter" if c.nodes > 1 else "intra"
    listed = _listed_algorithms(model, op, c, level)
    # alpha-beta fits answer by textbook algorithm: NCCL's reasons do not apply to them
    calibrated_nccl = (
        model in ("nccl", CALIBRATED)
        and c.calibration is not None
        and _alpha_beta_only(c.calibration, op, level)
    )
    topo = None
    if model in ("nccl", "nccl-table", CALIBRATED) and c.ranks >= 2:
        topo = cluster_topology(c, nvls=nvls, collnet_enabled=collnet_enabled)
    frames, unavailable, names = [], [], []
    for a in listed:
        if c.ranks < 2:
            unavailable.append((a, "one rank: nothing to communicate"))
            continue
        if topo is not None and not calibrated_nccl:
            why = _nccl_reason(op, a, protocol, topo)
            if why is not None:
                unavailable.append((a, why))
                continue
        try:
            p = predict_collective(
                op,
                m1,
                c,
                c.nodes,
                c.gpus_per_node,
                a,
                protocol,
                model,
                gpus_per_process=gpus_per_process,
                nvls=nvls,
                collnet_enabled=collnet_enabled,
                params=params,
            )
        except ValueError as exc:
            unavailable.append((a, str(exc)))
            continue
        names.append(a)  # the frame's rows name it, but an empty list of sizes has no row
        frames.append(
            pd.DataFrame(
                {
                    "algorithm": a,
                    "protocol": np.asarray(p.protocol).astype(str),
                    "message_bytes": m1,
                    "time_s": p.time_s,
                    "algbw_bytes_per_s": p.algbw_bytes_per_s,
                    "busbw_bytes_per_s": p.busbw_bytes_per_s,
                }
            )
        )
    cols = [
        "algorithm",
        "protocol",
        "message_bytes",
        "time_s",
        "algbw_bytes_per_s",
        "busbw_bytes_per_s",
        "chosen",
        "best",
        "fastest",
        "within_expected_error",
    ]
    xcols = [
        "message_bytes",
        "previous_bytes",
        "faster_below",
        "faster_above",
        "time_s",
        "busbw_bytes_per_s",
    ]
    if not frames:
        empty = pd.DataFrame({k: [] for k in cols})
        return AlgorithmComparison(
            op,
            model,
            c.name,
            c.ranks,
            c.nodes,
            empty,
            tuple(unavailable),
            choice,
            pd.DataFrame({k: [] for k in xcols}),
        )
    frame = pd.concat(frames, ignore_index=True)
    n_sizes = m1.size
    size_idx = np.tile(np.arange(n_sizes), len(frames))
    auto_algo = np.atleast_1d(np.asarray(choice.algorithm)).astype(str).ravel()
    frame["chosen"] = frame["algorithm"].to_numpy() == auto_algo[size_idx]
    times = frame["time_s"].to_numpy().reshape(len(frames), n_sizes)
    best = np.argmin(times, axis=0)
    frame["best"] = False
    frame.loc[best * n_sizes + np.arange(n_sizes), "best"] = True
    rows = []
    for i in range(1, n_sizes):
        if best[i] != best[i - 1]:
            w = best[i]
            rows.append(
                {
                    "message_bytes": float(m1[i]),
                    "previous_bytes": float(m1[i - 1]),
                    "faster_below": names[best[i - 1]],
                    "faster_above": names[w],
                    "time_s": float(times[w, i]),
                    "busbw_bytes_per_s": float(frame["busbw_bytes_per_s"].iloc[w * n_sizes + i]),
                }
            )
    from .verdict import decide_sizes

    band = choice.error_band
    half = np.nan if band is None else np.broadcast_to(band.half_width, (n_sizes,))
    # a calibration's band is unknown for want of its own error, not of bundled runs (the
    # verdict said "no bundled run measured this regime" on a regime they measured)
    unknown = {"why_unknown": CALIBRATED_VERDICT_WHY} if _calibration_answers(band) else {}
    verdicts = tuple(decide_sizes(names, times, half, **unknown))
    _mark_winners(frame, verdicts, times, n_sizes)
    return AlgorithmComparison(
        op,
        model,
        c.name,
        c.ranks,
        c.nodes,
        frame[cols],
        tuple(unavailable),
        choice,
        pd.DataFrame(rows, columns=xcols),
        verdicts,
    )


def _mark_winners(frame: Any, verdicts: Sequence[Any], times: Any, n_sizes: int) -> None:
    """The ``fastest`` and ``within_expected_error`` columns of :func:`predict_all_algorithms`'
    frame from its verdicts (:func:`costmodel.verdict.decide_sizes`), the rule the text of
    ``collective --algorithm all`` and the Collectives page follow: ``fastest`` only on the
    winner (the best beats the runner-up by more than the expected error), and
    ``within_expected_error`` True on every row whose time is within the expected error of the
    best, ``t / t_best - 1 <= h`` (:func:`costmodel.verdict.within_expected_error`), when there
    is no winner (False with a winner; None where the expected error is unknown). ``frame`` is
    in place, rows algorithm-major as built there."""
    from .verdict import within_expected_error

    fastest = np.zeros(len(frame), dtype=bool)
    within: list[bool | None] = [False] * len(frame)
    best_row = frame["best"].to_numpy(dtype=bool)
    best_t = np.where(np.isfinite(times), times, np.inf).min(axis=0)
    for j, v in enumerate(verdicts):
        for i in range(times.shape[0]):
            k = i * n_sizes + j
            if v.decided:
                fastest[k] = best_row[k]
            elif not v.known:
                within[k] = None
            else:
                within[k] = within_expected_error(times[i, j] / best_t[j] - 1.0, v.half_width)
    frame["fastest"] = fastest
    # object dtype: None (unknown) stays None, not NaN, in the JSON
    frame["within_expected_error"] = np.asarray(within, dtype=object)
