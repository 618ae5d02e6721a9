r"""Expected error of a prediction: the regime it falls in and that regime's grouped-CV band.

A prediction's error band is not a guess: ``scripts/fit_corrections.py`` predicts every bundled
nccl-tests run with parameters fitted on the *other sources* only (grouped cross-validation, one
source at a time: :func:`fit_corrections.group_of`), collects the relative busbw residuals
``e = busbw_pred / busbw_meas - 1`` of every row, and writes per (model, regime, size class)
into ``costmodel/data/fitted_corrections.toml`` (``[band.<model>.<regime>]``):

- ``half_width``: the 80th percentile of ``|e|`` (each source weighted equally, whatever its
  run and row counts: a band is for a cluster not seen, a new source), shown as "±X%": four in
  five measured rows of that regime fell within it;
- ``lo``, ``hi``: the 10th and 90th percentiles of ``busbw_meas / busbw_pred`` (multipliers on
  the predicted busbw; the time band is ``time / hi`` to ``time / lo``): asymmetric, since the
  misses are mostly one-sided. The band a prediction carries (:func:`error_band`) is the hull
  of that range and the prediction itself, ``min(lo, 1)`` to ``max(hi, 1)``: see the decision
  below;
- ``n_runs``, ``n_groups``: how many runs and independent sources the figures rest on
  (:attr:`ErrorBand.sources`);
- ``max_nodes``, ``max_gpus``: the largest node and GPU counts among those runs (the measured
  range: :func:`extrapolation_note`).

The residuals come from the harder folds: each run predicted with its source, then its whole
fabric family (the regime), then its whole op class left out of the fit. A regime resting on
few sources S is widened by the spread between clusters those S cannot show: (z tau / S)^2
added in quadrature to each side's log spread, tau the measured standard deviation of the
sources' median errors within a regime (pooled over the regimes with >= 3 sources), z = 1.28
(docs/fidelity.md, "Error bands from the hardest honest split", which also reports the
measured leave-one-source-out coverage).

Size classes: ``"ge1MiB"`` (from 1 MiB per rank up) and ``"lt1MiB"``. Regimes
(:func:`regime`): one node over NVSwitch/NVLink, one node over PCIe, several nodes over
InfiniBand, over a cloud fabric (RoCE, EFA, GPUDirect-TCPX/TCPXO over Ethernet), over
Slingshot. A regime without measured runs, or a multi-node prediction on a fabric no bundled
run measured (e.g. ``tcpxo``: GCP A3 Mega), gets ``measured=False`` and no number: the note
says so instead of borrowing another fabric's band.

Decision: the band describes the *model's* error against nccl-tests out-of-place busbw on
clusters it was not fitted on; it does not cover what the model leaves out (:data:`LEAVES_OUT`).

Decision: a band shown beside a prediction contains that prediction. Where a model misses one
way in a regime, the measured 10th-90th percentile range lies wholly on one side of its
prediction: the lesson's flat ring at one NIC per GPU is 3.0-8.3x too slow across InfiniBand
nodes from 1 MiB (its 1 GiB all-reduce on 8 DGX H100 nodes: 42.6 ms predicted, 5.1-14.2 ms
where the measured rows lay), and the textbook model is too fast on one NVLink node. A band
of 5.1-14.2 ms printed beside 42.6 ms reads as a band around another number, so the band is the
hull of the prediction and that range (5.1-42.6 ms): it still holds at least the same four in
five measured rows, and its note (:attr:`ErrorBand.note`) says which way the model misses and
by how much. ``lo_measured``/``hi_measured`` keep the percentiles themselves.

Decision: beyond the largest measured run of its regime (more nodes than ``max_nodes`` or
more GPUs than ``max_gpus``: 20 nodes, 1,440 GPUs across InfiniBand from 1 MiB; one node of 8
GPUs below 1 MiB over NVLink, so a one-node NVL72 of 72 GPUs is beyond it), a band keeps its
numbers and says it is extrapolated, naming the count that exceeds the run
(:attr:`ErrorBand.extrapolated`, appended to the note): "64 nodes is beyond the largest
measured run in this regime (20 nodes, 1,440 GPUs at most, over 6 runs from 5 sources): the
band is extrapolated, not measured at this scale", "72 GPUs is beyond ... (1 node, 8 GPUs at
most, ...) ...", "100,000 nodes and 800,000 GPUs are beyond ...". The largest counts are
maxima over the runs the band rests on, and the note says how many runs and sources those
are (a band rests on several clusters; the largest alone is named: the app's caption gives
the same, "5 sources; extrapolated beyond 20 nodes"). GPUs count as well as nodes: a 72-GPU NVLink domain is one node, yet its ring
and its NVLink SHARP tree span nine times the GPUs of an 8-GPU node. Not "± ?": the numbers are still the model's measured error in that
regime, the best figure there is, and any cut-off (2x, 10x the largest run) would be a constant
with no measurement behind it. But nothing measured them at that scale, and what grows with
scale (congestion, stragglers, deeper trees: :data:`LEAVES_OUT`) can make the real error
larger, so every surface says so beside the number: the API's note and ``extrapolated``, a
``band:`` line under the CLI's table, the app's caption.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .units import format_counted

#: regime -> what it covers (the order is the display order)
REGIMES: dict[str, str] = {
    "single-node-nvlink": "one node, GPUs over NVSwitch or an NVLink mesh",
    "single-node-pcie": "one node, GPUs over PCIe (peer-to-peer or host-staged)",
    "multi-node-infiniband": "several nodes over InfiniBand",
    "multi-node-cloud": "several nodes over a cloud fabric (RoCE, EFA, GPUDirect-TCPX/TCPXO)",
    "multi-node-slingshot": "several nodes over HPE Slingshot (aws-ofi-nccl)",
    "multi-node-other": "several nodes over a fabric or intra-node link not listed above",
}
CLOUD_FABRICS: tuple[str, ...] = ("roce", "efa", "ethernet", "tcpxo")
#: multi-node regimes with a bundled all-to-all run across nodes (tests/test_band_ops.py checks
#: this against the fitted runs). All-to-all across nodes is point-to-point to every remote
#: peer: incast and many-flow effects the model leaves out, and the one bundled run (Slingshot)
#: misses by several times the all-reduce band. Elsewhere its error is unknown, not borrowed.
MULTI_NODE_ALL_TO_ALL_REGIMES: frozenset[str] = frozenset({"multi-node-slingshot"})
SIZE_CLASSES: tuple[str, ...] = ("ge1MiB", "lt1MiB")
ONE_MIB = 2**20

#: one line on what the predicted times leave out (shown next to the numbers in the app)
LEAVES_OUT = (
    "Leaves out: other jobs sharing the network, stragglers and congestion, GPU clocks and "
    "thermals, datatype and reduction-op speed, in-place vs out-of-place, NCCL versions other "
    "than the modelled one and env tuning beyond NCCL_ALGO/PROTO."
)


def regime(fabric: str, intra_kind: str, nodes: int) -> str:
    """The error-band regime of a prediction.

    >>> regime("infiniband", "nvswitch", 1), regime("infiniband", "nvswitch", 4)
    ('single-node-nvlink', 'multi-node-infiniband')
    >>> regime("tcpxo", "nvswitch", 2), regime("none", "pcie", 1)
    ('multi-node-cloud', 'single-node-pcie')
    """
    if int(nodes) <= 1:
        return "single-node-pcie" if intra_kind == "pcie" else "single-node-nvlink"
    if fabric == "infiniband":
        return "multi-node-infiniband"
    if fabric in CLOUD_FABRICS:
        return "multi-node-cloud"
    if fabric == "slingshot":
        return "multi-node-slingshot"
    return "multi-node-other"


@dataclass(frozen=True)
class ErrorBand:
    """Expected error of a prediction (see the module docstring for how it is derived).

    ``half_width`` (relative, e.g. 0.08 for ±8 %), ``lo`` and ``hi`` (multipliers on the
    predicted busbw) are per size like the prediction (scalars for a scalar prediction); NaN
    where ``measured`` is False.
    """

    #: NaN in a band means "no measurement for this regime": costmodel._checks skips it
    NAN_MEANS_UNKNOWN: ClassVar[bool] = True

    model: str
    regime: str
    measured: bool
    half_width: Any
    lo: Any
    hi: Any
    n_runs: int
    n_groups: int
    note: str
    #: the measured 10th and 90th percentiles of busbw_meas / busbw_pred themselves (``lo``
    #: and ``hi`` are their hull with 1, the prediction); None where not from a fitted table
    lo_measured: Any = None
    hi_measured: Any = None
    #: which way the model misses where the measured range lies on one side of its prediction
    #: (:func:`one_sided_note`, per size class shown); "" where the range holds it
    one_sided: str = ""
    #: the largest node count among the runs the band rests on (the smallest such count over
    #: the size classes shown); 0 where not from a fitted table that records it
    max_nodes_measured: int = 0
    #: that the prediction's node or GPU count lies beyond the largest measured run of its
    #: regime, so the band is extrapolated (:func:`extrapolation_note`); "" within the
    #: measured range
    extrapolated: str = ""
    #: the largest GPU count among the runs the band rests on (as ``max_nodes_measured``)
    max_gpus_measured: int = 0
    #: the measured counts the prediction exceeds, "20 nodes", "8 GPUs" or "20 nodes and
    #: 1,440 GPUs" (the app's caption: "extrapolated beyond 8 GPUs"); "" within the range
    extrapolated_beyond: str = ""

    @property
    def sources(self) -> int:
        """How many independent sources (clusters, CV groups) the band rests on; 0 unmeasured.

        Few sources widen the band (scripts/fit_corrections.py, ``band_of``: (z tau /
        sources)^2 added in quadrature to the log spread, tau the measured spread between
        sources), and the app and CLI show the count next to it.

        >>> ErrorBand("nccl", "r", True, 0.084, 0.9, 1.1, 3, 2, "").sources
        2
        """
        return int(self.n_groups)

    def pct(self, i: int | None = None) -> str:
        """``"±X%"`` (the largest half-width over sizes, or size ``i``'s), or ``"± ?"``.

        >>> ErrorBand("nccl", "r", True, 0.084, 0.9, 1.1, 3, 2, "").pct()
        '±8%'
        >>> ErrorBand("nccl", "r", False, float("nan"), float("nan"), float("nan"), 0, 0, "").pct()
        '± ? (no measurement)'
        """
        if not self.measured:
            return "± ? (no measurement)"
        hw = np.atleast_1d(np.asarray(self.half_width, dtype=float))
        x = hw[i] if i is not None else np.nanmax(hw)
        return f"±{100 * x:.0f}%"

    def time_bounds(self, time_s) -> tuple[Any, Any]:
        """(fastest, slowest) time the band allows: ``time / hi``, ``time / lo``."""
        t = np.asarray(time_s, dtype=float)
        return t / np.asarray(self.hi, dtype=float), t / np.asarray(self.lo, dtype=float)


def _empty(model: str, reg: str, note: str, shape) -> ErrorBand:
    nan = np.full(shape, np.nan) if shape else float("nan")
    return ErrorBand(model, reg, False, nan, nan, nan, 0, 0, note)


#: What the band of a multi-node broadcast or reduce rests on: no bundled run measures one, so
#: the band shown is its regime's, measured on the other ops (all-reduce chiefly)
#: (:func:`borrowed_band_note`)
BORROWED_BAND_NOTE = (
    "no bundled run measures a multi-node broadcast or reduce: the band is the regime's, "
    "measured on all-reduce and the other ops"
)


def borrowed_band_note(op: str | None, nodes: int) -> str:
    """:data:`BORROWED_BAND_NOTE` for a broadcast or reduce across nodes, else ``""``: the note
    :attr:`ErrorBand.note` carries and ``costmodel collective`` prints (``band:``).

    >>> borrowed_band_note("broadcast", 2) == BORROWED_BAND_NOTE, borrowed_band_note("reduce", 1)
    (True, '')
    """
    return BORROWED_BAND_NOTE if op in ("broadcast", "reduce") and int(nodes) > 1 else ""


def error_band(
    model: str,
    fabric: str,
    intra_kind: str,
    nodes: int,
    message_bytes,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None = None,
    measured_fabrics: tuple[str, ...] | None = None,
    op: str | None = None,
    gpus: int | None = None,
) -> ErrorBand:
    """The band of a prediction from the fitted file's grouped-CV figures.

    ``bands[model][regime][size_class]`` holds ``half_width``, ``lo``, ``hi``, ``n_runs``,
    ``n_groups`` (default: the packaged file, :data:`costmodel.fitted_corrections.FITTED`).
    ``op``: the collective; an all-to-all across nodes in a regime with no bundled multi-node
    all-to-all run (:data:`MULTI_NODE_ALL_TO_ALL_REGIMES`) has an unknown error. ``gpus``: the
    prediction's GPU count (ranks), checked with ``nodes`` against the largest measured run
    (:func:`extrapolation_note`; None: the node count alone).
    """
    if bands is None or measured_fabrics is None:
        from .fitted_corrections import FITTED

        bands = FITTED.bands if bands is None else bands
        measured_fabrics = FITTED.measured_fabrics if measured_fabrics is None else measured_fabrics
    m = np.asarray(message_bytes, dtype=float)
    shape = m.shape
    reg = regime(fabric, intra_kind, nodes)
    table = bands.get(model, {}).get(reg)
    if int(nodes) > 1 and fabric not in measured_fabrics:
        return _empty(
            model,
            reg,
            f"no bundled run measured {fabric!r} between nodes: the error is unknown "
            f"(fabric constants are priors, not fits)",
            shape,
        )
    if not table or any(sc not in table for sc in SIZE_CLASSES):
        return _empty(model, reg, f"no grouped-CV measurement for {model!r} in {reg}", shape)
    if op == "all_to_all" and int(nodes) > 1 and reg not in MULTI_NODE_ALL_TO_ALL_REGIMES:
        return _empty(
            model,
            reg,
            f"all-to-all across nodes, {REGIMES[reg]}: no bundled run measured it, and the one "
            "multi-node all-to-all bundled (HPE Slingshot) misses by several times the "
            "all-reduce band (incast and many-flow effects are not modelled): the error is "
            "unknown",
            shape,
        )
    big = m >= ONE_MIB

    def pick(key: str):
        v = np.where(big, table["ge1MiB"][key], table["lt1MiB"][key])
        return float(v) if not shape else v

    present = {"ge1MiB": bool(np.any(big)), "lt1MiB": bool(np.any(~big))}
    # the runs and sources of the size classes shown (a 1 kB prediction rests on the cell
    # below 1 MiB alone); the larger count where both are shown
    shown = [sc for sc in SIZE_CLASSES if present[sc]] or list(SIZE_CLASSES)
    n_runs = int(max(table[sc]["n_runs"] for sc in shown))
    n_groups = int(max(table[sc]["n_groups"] for sc in shown))
    note = (
        f"{REGIMES[reg]}: 80% of measured rows within this band under grouped cross-validation "
        f"({runs_from_sources(n_runs, n_groups)}, none fitted on)"
    )
    lo_m, hi_m = pick("lo"), pick("hi")
    ways = []
    for sc, label in (("ge1MiB", "from 1 MiB"), ("lt1MiB", "below 1 MiB")):
        one_way = one_sided_note(model, float(table[sc]["lo"]), float(table[sc]["hi"]))
        if present[sc] and one_way:
            ways.append(f"{label}, {one_way}")
    one_sided = "; ".join(ways)
    if one_sided:
        note += f"; {one_sided}"
    extrapolated, beyond = _extrapolation(table, nodes, gpus, m)
    if extrapolated:
        note += f"; {extrapolated}"
    borrowed = borrowed_band_note(op, nodes)
    if borrowed:
        note += f"; {borrowed}"
    measured_nodes, measured_gpus = (
        [int(table[sc][key]) for sc, has in present.items() if has and key in table[sc]]
        for key in ("max_nodes", "max_gpus")
    )
    lo, hi = band_hull(lo_m, hi_m)
    return ErrorBand(
        model,
        reg,
        True,
        pick("half_width"),
        lo,
        hi,
        n_runs,
        n_groups,
        note,
        lo_m,
        hi_m,
        one_sided,
        min(measured_nodes, default=0),
        extrapolated,
        min(measured_gpus, default=0),
        beyond,
    )


def extrapolation_note(
    table: Mapping[str, Mapping[str, float]],
    nodes: int,
    message_bytes,
    gpus: int | None = None,
) -> str:
    """That a prediction on ``nodes`` nodes (``gpus`` GPUs in all) lies beyond the largest
    measured run its band rests on, so the band is extrapolated; ``""`` within the measured
    range.

    ``table``: one regime's band cells by size class (``FITTED.bands[model][regime]``), each with
    ``max_nodes`` and ``max_gpus``, the largest run among those the grouped CV used in that
    regime and size class (``scripts/fit_corrections.py``, ``band_of``); a cell without them
    (a file written before they were recorded) says nothing. Only the size classes of
    ``message_bytes`` count. A prediction is beyond a run when either count exceeds the run's
    (more nodes, or more GPUs: a one-node NVL72's 72 GPUs against a regime measured on 8), and
    the note names the count (or both) that does, and, where the cell records them
    (``n_runs``, ``n_groups``), how many runs and sources the largest counts are the maxima of.
    ``gpus`` None: the node count alone. The band
    keeps its numbers beyond that run (the module docstring's decision): this note is what
    says they were never measured at that scale.

    >>> cell = {"max_nodes": 20.0, "max_gpus": 1440.0}
    >>> extrapolation_note({"ge1MiB": cell, "lt1MiB": cell}, 20, 2**30, gpus=160)
    ''
    >>> extrapolation_note({"ge1MiB": cell, "lt1MiB": cell}, 64, 2**30, gpus=512)
    '64 nodes is beyond the largest measured run in this regime (20 nodes, 1,440 GPUs): the band is extrapolated, not measured at this scale'
    >>> one = {"max_nodes": 1.0, "max_gpus": 8.0}
    >>> extrapolation_note({"ge1MiB": one, "lt1MiB": one}, 1, 1024, gpus=72)
    '72 GPUs is beyond the largest measured run in this regime (1 node, 8 GPUs): the band is extrapolated, not measured at this scale'
    >>> big = {"max_nodes": 20.0, "max_gpus": 1440.0, "n_runs": 6.0, "n_groups": 5.0}
    >>> small = {"max_nodes": 16.0, "max_gpus": 128.0, "n_runs": 2.0, "n_groups": 2.0}
    >>> extrapolation_note({"ge1MiB": big, "lt1MiB": small}, 32, 2**30, gpus=256)
    '32 nodes is beyond the largest measured run in this regime (20 nodes, 1,440 GPUs at most, over 6 runs from 5 sources): the band is extrapolated, not measured at this scale'
    >>> extrapolation_note({"ge1MiB": big, "lt1MiB": small}, 32, [1024, 2**30], gpus=256)
    '32 nodes and 256 GPUs are beyond the largest measured run in this regime (from 1 MiB: 20 nodes, 1,440 GPUs at most, over 6 runs from 5 sources; below 1 MiB: 16 nodes, 128 GPUs at most, over 2 runs from 2 sources): the band is extrapolated, not measured at this scale'
    """
    return _extrapolation(table, nodes, gpus, message_bytes)[0]


def _extrapolation(
    table: Mapping[str, Mapping[str, float]], nodes: int, gpus: int | None, message_bytes
) -> tuple[str, str]:
    """(:func:`extrapolation_note`, the measured counts exceeded: "20 nodes", "8 GPUs" or "20
    nodes and 1,440 GPUs", the smallest over the size classes shown; ``""`` each within the
    measured range)."""
    m = np.asarray(message_bytes, dtype=float)
    present = {"ge1MiB": bool(np.any(m >= ONE_MIB)), "lt1MiB": bool(np.any(m < ONE_MIB))}
    over = []
    node_limits: list[int] = []
    gpu_limits: list[int] = []
    for sc, label in (("ge1MiB", "from 1 MiB"), ("lt1MiB", "below 1 MiB")):
        cell = table.get(sc, {})
        if not present[sc] or "max_nodes" not in cell:
            continue
        more_nodes = int(nodes) > int(cell["max_nodes"])
        more_gpus = gpus is not None and "max_gpus" in cell and int(gpus) > int(cell["max_gpus"])
        if not (more_nodes or more_gpus):
            continue
        if more_nodes:
            node_limits.append(int(cell["max_nodes"]))
        if more_gpus:
            gpu_limits.append(int(cell["max_gpus"]))
        run = format_counted(int(cell["max_nodes"]), "node")
        if "max_gpus" in cell:
            run += f", {format_counted(int(cell['max_gpus']), 'GPU')}"
        if "n_runs" in cell and "n_groups" in cell:  # how many runs the largest is of
            run += f" at most, over {runs_from_sources(int(cell['n_runs']), int(cell['n_groups']))}"
        over.append((label, run))
    if not over:
        return "", ""
    if all(present.values()):  # sizes on both sides of 1 MiB: say which class each run is
        runs = "; ".join(f"{label}: {run}" for label, run in over)
    else:
        runs = over[0][1]
    counts = []  # what the prediction has more of than the run: nodes, GPUs or both
    beyond = []
    if node_limits:
        counts.append(format_counted(int(nodes), "node"))
        beyond.append(format_counted(min(node_limits), "node"))
    if gpu_limits:
        assert gpus is not None
        counts.append(format_counted(int(gpus), "GPU"))
        beyond.append(format_counted(min(gpu_limits), "GPU"))
    verb = "are" if len(counts) > 1 else "is"
    note = (
        f"{' and '.join(counts)} {verb} beyond the largest measured run in this "
        f"regime ({runs}): the band is extrapolated, not measured at this scale"
    )
    return note, " and ".join(beyond)


def max_nodes_measured(
    model: str,
    regimes,
    message_bytes,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None = None,
) -> np.ndarray:
    """Per row: the largest node count among the runs the band of (``model``, the row's
    regime, its size class) rests on (``max_nodes`` of the band cell, written by
    ``scripts/fit_corrections.py``); NaN where the cell or its record is missing. A row on more
    nodes than this, or more GPUs than :func:`max_gpus_measured`, has an extrapolated band
    (:func:`band_extrapolated`, :func:`extrapolation_note`).

    >>> max_nodes_measured("nccl", ["multi-node-infiniband", "no-such-regime"], [2**30, 2**30])
    array([20., nan])
    """
    return _measured("max_nodes", model, regimes, message_bytes, bands)


def max_gpus_measured(
    model: str,
    regimes,
    message_bytes,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None = None,
) -> np.ndarray:
    """Per row: the largest GPU count among the runs the band of (``model``, the row's regime,
    its size class) rests on (``max_gpus`` of the band cell); NaN where it is missing.

    >>> max_gpus_measured("nccl", ["single-node-nvlink"] * 2, [1024, 2**30])
    array([ 8., 72.])
    """
    return _measured("max_gpus", model, regimes, message_bytes, bands)


def band_extrapolated(
    model: str,
    regimes,
    message_bytes,
    nodes,
    gpus,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None = None,
) -> np.ndarray:
    """Per row: whether its band is extrapolated, the rows' form of :func:`extrapolation_note`
    (a sweep's ``band_extrapolated`` column): more ``nodes`` than :func:`max_nodes_measured`
    or more ``gpus`` than :func:`max_gpus_measured` of its regime and size class. False where
    the cell or its record is missing (the caller also clears rows whose band is unknown).

    >>> band_extrapolated("nccl", ["single-node-nvlink"] * 3, [1024, 2**30, 1024], 1, [72, 72, 8])
    array([ True, False, False])
    """
    most_nodes = max_nodes_measured(model, regimes, message_bytes, bands)
    most_gpus = max_gpus_measured(model, regimes, message_bytes, bands)
    n = np.broadcast_to(np.asarray(nodes, dtype=float), most_nodes.shape)
    g = np.broadcast_to(np.asarray(gpus, dtype=float), most_gpus.shape)
    with np.errstate(invalid="ignore"):  # NaN (no record) compares False
        return (n > most_nodes) | (g > most_gpus)


def _measured(
    key: str,
    model: str,
    regimes,
    message_bytes,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None,
) -> np.ndarray:
    """Per row: ``key`` (``max_nodes`` or ``max_gpus``) of the band cell of (``model``, the
    row's regime, its size class); NaN where the cell or its record is missing."""
    if bands is None:
        from .fitted_corrections import FITTED

        bands = FITTED.bands
    reg = np.asarray(regimes, dtype=object)
    m = np.broadcast_to(np.asarray(message_bytes, dtype=float), reg.shape)
    out = np.full(reg.shape, np.nan)
    table = bands.get(model, {})
    for r in dict.fromkeys(reg.ravel().tolist()):
        for sc, sel_size in (("ge1MiB", m >= ONE_MIB), ("lt1MiB", m < ONE_MIB)):
            cell = table.get(str(r), {}).get(sc, {})
            if key in cell:
                out[(reg == r) & sel_size] = float(cell[key])
    return out


def band_hull(lo_measured, hi_measured) -> tuple[Any, Any]:
    """The band a prediction carries from the measured 10th-90th percentile range of
    busbw_meas / busbw_pred: the hull of that range and the prediction (multiplier 1),
    ``min(lo, 1)`` to ``max(hi, 1)`` (the module docstring's decision). Scalars give floats,
    arrays arrays.

    >>> band_hull(0.36, 0.86), band_hull(0.57, 1.12)
    ((0.36, 1.0), (0.57, 1.12))
    """
    lo, hi = np.minimum(lo_measured, 1.0), np.maximum(hi_measured, 1.0)
    if np.ndim(lo) == 0 and np.ndim(hi) == 0:
        return float(lo), float(hi)
    return lo, hi


def one_sided_note(model: str, lo: float, hi: float) -> str:
    """Which way ``model`` misses where its measured busbw multipliers ``lo``-``hi`` (10th-90th
    percentile of ``busbw_meas / busbw_pred``) lie on one side of 1, and that its band runs from
    its prediction to that range; ``""`` where the range holds the prediction.

    >>> one_sided_note("lesson", 3.0, 8.3)
    'lesson predicts too slow: measured runs were 3.0x-8.3x faster, so the band runs from its prediction down to theirs'
    >>> one_sided_note("nccl", 0.6, 1.1)
    ''
    """
    if lo > 1.0:
        return (
            f"{model} predicts too slow: measured runs were {lo:.1f}x-{hi:.1f}x faster, "
            "so the band runs from its prediction down to theirs"
        )
    if hi < 1.0:
        return (
            f"{model} predicts too fast: measured runs took {1 / hi:.1f}x-{1 / lo:.1f}x its "
            "time, so the band runs from its prediction up to theirs"
        )
    return ""


def weighted_quantile(values, weights, q: float) -> float:
    """Quantile ``q`` of ``values`` with ``weights`` (midpoint rule on the weighted CDF).

    >>> weighted_quantile([1, 2, 3, 4], [1, 1, 1, 1], 0.5)
    2.5
    >>> weighted_quantile([1, 10], [3, 1], 0.25)  # below the first midpoint (0.375)
    1.0
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    o = np.argsort(v)
    v, w = v[o], w[o]
    cdf = (np.cumsum(w) - 0.5 * w) / w.sum()
    return float(np.interp(q, cdf, v))


#: decimals of ``error_band_pct``: the fitted file records ``half_width`` to four decimals
#: (``scripts/fit_corrections.py``), so its percentage is meaningful to 0.01, no further
BAND_PCT_DECIMALS = 2


def band_pct(half_width) -> Any:
    """``error_band_pct`` of a band's ``half_width`` (a fraction): the ± in percent, rounded
    to :data:`BAND_PCT_DECIMALS` (0.01), the precision the fitted file records. Without the
    rounding ``100 * 0.3773`` is ``37.730000000000004`` in every CSV and JSON; with it, the
    column is the file's own figure. NaN stays NaN; scalars give floats, arrays arrays.

    >>> band_pct(0.3773), band_pct(float("nan"))
    (37.73, nan)
    >>> band_pct([0.4895, 0.2093]).tolist()
    [48.95, 20.93]
    """
    pct = np.round(100.0 * np.asarray(half_width, dtype=float), BAND_PCT_DECIMALS)
    return float(pct) if pct.ndim == 0 else pct


def band_columns(
    model: str, fabric: str, intra_kind: str, nodes, message_bytes, op: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sweep columns per row: ``error_band_pct`` (±% to 0.01, :func:`band_pct`; NaN where
    unmeasured) and ``regime``.

    >>> pct, reg = band_columns("nccl", "tcpxo", "nvswitch", [1, 2], [2**20, 2**20])
    >>> reg.tolist(), bool(np.isnan(pct[1]))
    (['single-node-nvlink', 'multi-node-cloud'], True)
    """
    pct, _, _, reg = band_arrays(model, fabric, intra_kind, nodes, message_bytes, op=op)
    return pct, reg


def band_arrays(
    model: str, fabric: str, intra_kind: str, nodes, message_bytes, op: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: ``error_band_pct`` (±%), the band's busbw multipliers ``lo`` and ``hi`` (the
    time band is ``time / hi`` to ``time / lo``: asymmetric) and ``regime``; NaN where the
    regime is unmeasured. :func:`band_columns` without the multipliers.

    >>> pct, lo, hi, reg = band_arrays("nccl", "infiniband", "nvswitch", [2], [2**30])
    >>> bool(lo[0] < 1 < hi[0]), reg.tolist()
    (True, ['multi-node-infiniband'])
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    m = np.broadcast_to(np.asarray(message_bytes, dtype=float), np.broadcast(nodes, 0).shape)
    nodes = np.broadcast_to(nodes, m.shape)
    pct, lo, hi = (np.full(m.shape, np.nan) for _ in range(3))
    reg = np.empty(m.shape, dtype=object)
    for n1 in np.unique(np.minimum(nodes, 2)):  # regimes depend on 1 vs several nodes only
        sel = np.minimum(nodes, 2) == n1
        b = error_band(model, fabric, intra_kind, int(n1), m[sel], op=op)
        pct[sel] = band_pct(b.half_width)
        lo[sel] = np.asarray(b.lo, dtype=float)
        hi[sel] = np.asarray(b.hi, dtype=float)
        reg[sel] = b.regime
    return pct, lo, hi, reg.astype(str)


def runs_from_sources(n_runs: int, n_sources: int) -> str:
    """How many runs and sources a band rests on, in the words of every band's note: "6 runs
    from 5 sources" (:func:`band_sources`, :attr:`ErrorBand.note`, :func:`extrapolation_note`,
    and the step band's, :func:`costmodel.strategy.band.band_sources`).

    >>> runs_from_sources(6, 5), runs_from_sources(1, 1)
    ('6 runs from 5 sources', '1 run from 1 source')
    """
    return f"{format_counted(int(n_runs), 'run')} from {format_counted(int(n_sources), 'source')}"


def band_sources(bands: Mapping[str, Any], sizes: Any = None) -> str:
    """How many runs and sources one regime's band rests on, per size class shown: "6 runs from
    5 sources" for one class, "6 runs from 5 sources from 1 MiB, 2 runs from 2 sources below 1
    MiB" where ``sizes`` [B] fall on both sides (None: both classes). ``bands`` is the regime's
    fitted cells (``FITTED.bands[model][regime]``); the counts are those ``ErrorBand.n_runs`` and
    ``sources`` give for one size. ``""`` where no shown class has a cell.

    >>> cells = {"ge1MiB": {"n_runs": 6.0, "n_groups": 5.0},
    ...          "lt1MiB": {"n_runs": 2.0, "n_groups": 2.0}}
    >>> band_sources(cells, [1024])
    '2 runs from 2 sources'
    >>> band_sources(cells, [1024, 2**30])
    '6 runs from 5 sources from 1 MiB, 2 runs from 2 sources below 1 MiB'
    """
    at = None if sizes is None else np.asarray(sizes, dtype=float)
    classes = [
        (sc, label)
        for sc, label, has in (
            ("ge1MiB", "from 1 MiB", at is None or bool((at >= ONE_MIB).any())),
            ("lt1MiB", "below 1 MiB", at is None or bool((at < ONE_MIB).any())),
        )
        if has and sc in bands
    ]
    return ", ".join(
        runs_from_sources(bands[sc]["n_runs"], bands[sc]["n_groups"])
        + (f" {label}" if len(classes) > 1 else "")
        for sc, label in classes
    )
