r"""Fit latency and bandwidth to measured collectives (DESIGN.md section 4, step 4).

For each group (op, algorithm, protocol, level) the textbook alpha-beta model of
:mod:`costmodel.collectives` is fitted to the measured times:

.. math:: T(M, N) = s(N)\,\alpha + b(M, N) / B

with ``s`` = ``collectives.latency_steps(op, N, algorithm)`` (e.g. 2(N-1) for a ring all-reduce)
and ``b`` = ``collectives.bytes_per_rank(op, M, N, algorithm)`` (2(N-1)/N M), by weighted least
squares with weights 1/T (so every size counts by its relative error, not its absolute time;
machine-notes.md). ``level`` is ``intra`` for one-node runs and ``inter`` otherwise.

Cross-validation: the fit is repeated on every other size (sorted) and its error reported on
the sizes left out.

Every error this module reports (the residuals' ``rel_error`` and ``cv_rel_error``, a fit's
``rms_rel_error``, ``max_abs_rel_error`` and ``cv_max_abs_rel_error*``) is the harness's one
error, the busbw error :func:`costmodel.validation.compare.busbw_rel_error` (busbw_fit /
busbw_meas - 1 = t_meas / t_fit - 1), so a row reads the same here as in ``validate compare
--calibration``; the time error (t_fit / t_meas - 1, what the 1/T-weighted fit minimises) is
kept beside it as ``time_rel_error``.

With a cluster preset, the realistic model (:mod:`costmodel.realistic`) is calibrated too: the
fabric's terms per level (:func:`fit_fabric`: bandwidth efficiency, latency scale, host-floor
scale; across nodes the NICs' share of line rate and the latency per network hop; on
host-staged nodes the duplex share), common to every op, so one calibration predicts other ops
and other node/GPU counts of its level; each term is shrunk towards the model's own value by
how well the rows identify it (:data:`PRIOR_SD`), so a term a run barely sees does not carry a
share it never measured to the sibling (held-out figures: docs/calibration.md).

>>> import numpy as np
>>> m = np.array([1e6, 2e6, 4e6, 8e6])
>>> t = 2 * 1e-4 + m / 1e9          # all-reduce, N = 2: s = 2, b = M
>>> fit = fit_alpha_beta("all_reduce", m, 2, t)
>>> round(fit.latency_s * 1e6, 3), round(fit.bandwidth_bytes_per_s / 1e9, 6)
(100.0, 1.0)
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from costmodel._checks import must_be
from costmodel.atomic import write_text_atomic
from costmodel.collectives import ALGORITHMS, bytes_per_rank, latency_steps
from costmodel.validation.compare import busbw_rel_error, time_rel_error

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.collectives import Algorithm, Op
    from costmodel.hardware import CalibrationPreset

__all__ = [
    "Calibration",
    "FabricFit",
    "Fit",
    "InSample",
    "allreduce_time_fn",
    "calibrate",
    "calibrated_predictor",
    "fit_alpha_beta",
    "fit_fabric",
    "in_sample",
    "load_calibration",
    "poor_fit_note",
    "to_preset",
    "write_calibration",
]

# NCCL algorithm names (NCCL_ALGO, NCCL_DEBUG=TUNING) -> the textbook algorithm we fit.
_TEXTBOOK_ALGORITHM = {"ring": "ring", "tree": "tree", "nvls": "nvls"}


@dataclass(frozen=True)
class Fit:
    """One fitted group: alpha [s per step], B [B/s] and how well they fit (the busbw error
    :func:`~costmodel.validation.compare.busbw_rel_error` of its rows: RMS and largest |.| in
    sample, largest |.| on held-out sizes)."""

    op: str
    algorithm: str
    protocol: str
    level: str
    latency_s: float
    bandwidth_bytes_per_s: float
    points: int
    rms_rel_error: float
    max_abs_rel_error: float
    ranks: tuple[int, ...] = ()
    cv_max_abs_rel_error: float = math.nan  # held-out sizes (every other size)
    cv_max_abs_rel_error_ge_1mib: float = math.nan
    #: the smallest and largest size fitted [B]: its held-out error says nothing outside them
    min_bytes: float = math.nan
    max_bytes: float = math.nan

    def predict(self, message_bytes: Any, ranks: Any) -> np.ndarray:
        """T = s(N) alpha + b(M, N) / B [s]."""
        op, algorithm = _names(self.op, self.algorithm)
        return np.asarray(
            latency_steps(op, ranks, algorithm) * self.latency_s
            + bytes_per_rank(op, message_bytes, ranks, algorithm) / self.bandwidth_bytes_per_s,
            dtype=float,
        )


def _names(op: str, algorithm: str) -> tuple[Op, Algorithm]:
    """The names as the formula functions' Literal types; those functions check them
    (ValueError naming the valid ones), so nothing is checked twice here."""
    return cast("Op", op), cast("Algorithm", algorithm)


def _design(
    op_name: str, message_bytes: np.ndarray, ranks: np.ndarray, algorithm_name: str
) -> np.ndarray:
    op, algorithm = _names(op_name, algorithm_name)
    steps = np.broadcast_to(
        np.asarray(latency_steps(op, ranks, algorithm), float), message_bytes.shape
    )
    volume = np.asarray(bytes_per_rank(op, message_bytes, ranks, algorithm), float)
    return np.column_stack([steps, volume])


def fit_alpha_beta(
    op: str,
    message_bytes: Any,
    ranks: Any,
    time_s: Any,
    algorithm: str = "ring",
    *,
    protocol: str = "auto",
    level: str = "intra",
) -> Fit:
    r"""Weighted (1/T) least-squares fit of T = s(N) alpha + b(M, N) beta, B = 1/beta.

    Parameters
    ----------
    op, algorithm : str
        As in :func:`costmodel.collectives.collective_time`.
    message_bytes : array [B]
        Sizes as nccl-tests prints them.
    ranks : int or array
        Ranks of each measurement.
    time_s : array [s]
        Measured times, > 0.

    Notes
    -----
    Minimises :math:`\sum_i ((T_i - \hat T_i)/T_i)^2`. A negative alpha (latency below the
    resolution of the data) is refitted with alpha = 0. Reference: Hockney's model as used by
    Thakur, Rabenseifner & Gropp (2005). The fit's ``rms_rel_error`` and ``max_abs_rel_error``
    are of the busbw error :math:`T_i / \hat T_i - 1`, as ``validate compare`` reports it.

    Raises
    ------
    ValueError
        Fewer than 2 distinct sizes, non-positive times, or no positive bandwidth fits.
    """
    m = np.asarray(message_bytes, dtype=float).ravel()
    t = np.asarray(time_s, dtype=float).ravel()
    n = np.broadcast_to(np.asarray(ranks), m.shape).astype(float)
    if m.shape != t.shape:
        raise ValueError(f"message_bytes has {m.size} values but time_s has {t.size}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("time_s: must be finite and > 0 at every point")
    if np.unique(m).size < 2:
        raise ValueError(
            f"need at least 2 distinct sizes to fit {op}/{algorithm}, got {np.unique(m).size}"
        )
    x = _design(op, m, n, algorithm)
    w = 1.0 / t
    coef, *_ = np.linalg.lstsq(x * w[:, None], t * w, rcond=None)
    alpha, beta = float(coef[0]), float(coef[1])
    if alpha < 0:
        alpha = 0.0
        beta = float(np.sum((x[:, 1] * w) * (t * w)) / np.sum((x[:, 1] * w) ** 2))
    if not beta > 0:
        raise ValueError(
            f"{op}/{algorithm}: the fitted time does not grow with size "
            f"(its slope beta is {beta:.3g} s/B); measure larger sizes"
        )
    rel = busbw_rel_error(t, x @ np.array([alpha, beta]))
    return Fit(
        op,
        algorithm,
        protocol,
        level,
        alpha,
        1.0 / beta,
        int(m.size),
        float(np.sqrt(np.mean(rel**2))),
        float(np.max(np.abs(rel))),
        tuple(sorted({int(v) for v in n})),
        min_bytes=float(m.min()),
        max_bytes=float(m.max()),
    )


@dataclass
class Calibration:
    """Fitted groups plus where they came from."""

    name: str
    fits: list[Fit]
    source: str
    backend: str | None = None
    residuals: pd.DataFrame | None = field(default=None, repr=False)
    base: str | None = None  # the cluster preset the fits refine
    candidates: list[RealisticFit] = field(default_factory=list)  # realistic model, per op/level
    placement: str | None = None  # nccl-tests rows fitted: out-of-place, in-place or both
    fabric: list[FabricFit] = field(default_factory=list)  # fabric terms, per level

    def lookup(
        self, op: str, level: str, algorithm: str | None = None, protocol: str | None = None
    ) -> Fit:
        """The fit for a group; algorithm/protocol fall back to any fitted one."""
        candidates = [f for f in self.fits if f.op == op and f.level == level]
        for key, value in (("algorithm", algorithm), ("protocol", protocol)):
            if value is not None:
                narrowed = [f for f in candidates if getattr(f, key) == value]
                candidates = narrowed or candidates
        if not candidates:
            have = sorted({(f.op, f.level) for f in self.fits})
            raise ValueError(
                f"calibration {self.name!r} has no fit for an {level}-node {op}; it has "
                + ", ".join("/".join(h) for h in have)
            )
        return candidates[0]

    def to_preset(self, base: str | None = None) -> CalibrationPreset:
        """As a :class:`costmodel.hardware.CalibrationPreset` (see :func:`to_preset`)."""
        return to_preset(self, base=base)

    def table(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([asdict(f) for f in self.fits])


def _fitted_name(op: str, algorithm: Any) -> str:
    """The name a fit of ``op`` run with NCCL algorithm ``algorithm`` is stored and shown under:
    the textbook name for that op (:func:`costmodel.hardware.textbook_algorithm`: all-to-all's
    ring is ``pairwise``, broadcast's and reduce's ``chain``), the name a loaded calibration
    gives it, so calibrate's table, the TOML and ``validate compare``'s messages say one name;
    an algorithm without a textbook formula (CollNet) keeps its lower-case NCCL name."""
    from costmodel.hardware import textbook_algorithm

    name = _TEXTBOOK_ALGORITHM.get(str(algorithm).lower(), str(algorithm).lower())
    try:
        return textbook_algorithm(str(op), name)
    except ValueError:
        return name


def _applied(op: Any, value: Any, var: str) -> str | None:
    """The list NCCL applied to ``op`` for a recorded NCCL_ALGO / NCCL_PROTO ``value``
    (:func:`costmodel.nccl.names.nccl_list_for`; None: NCCL's own choice), refused on one
    line naming the column when NCCL would refuse the value."""
    from costmodel.nccl.names import nccl_list_for

    try:
        return nccl_list_for(str(op), value, var)
    except ValueError as exc:
        column = "algo_env" if var == "NCCL_ALGO" else "proto_env"
        raise ValueError(f"{column}: {exc}") from None


def _choice(op: Any, value: Any, var: str) -> str:
    """What NCCL ran ``op`` under for a recorded NCCL_ALGO / NCCL_PROTO ``value``, in our
    spelling: ``"auto"`` (NCCL's own choice: nothing recorded, or a list excluding nothing),
    one name (pinned: one name, or a set that allows one name NCCL has for ``op``), or a set
    (:func:`costmodel.nccl.names.canonical_choice`: ``"ring,tree"``, ``"^nvls"``), which is
    NCCL's own choice among its members, as :func:`.compare.compare` predicts the rows.

    The list applied to ``op`` is :func:`_applied`'s (NCCL 2.24+'s list per function
    resolved); a set's members are those NCCL has for ``op`` (``tables.NCCL_OP_ALGORITHMS``;
    NCCL ignores the others: ``ring,pat`` runs all_reduce as ring, ``ring,tree`` broadcast as
    ring, so those are pinned). A ``^`` set stays a set: what it leaves depends on the cluster.

    >>> _choice("all_reduce", "Ring,Tree", "NCCL_ALGO"), _choice("all_reduce", "Tree,", "NCCL_ALGO")
    ('ring,tree', 'tree')
    >>> _choice("broadcast", "allreduce:tree,nvls;broadcast:ring,tree", "NCCL_ALGO")
    'ring'
    >>> _choice("all_gather", "allreduce:tree", "NCCL_ALGO"), _choice("all_reduce", "^NVLS", "NCCL_ALGO")
    ('auto', '^nvls')
    """
    from costmodel import tables
    from costmodel.nccl.names import (
        PROTOCOLS,
        canonical_choice,
        is_choice_set,
        normalize_algorithm,
        normalize_protocol,
        set_members,
    )

    applied = _applied(op, value, var)
    if applied is None:
        return "auto"
    field = "algorithm" if var == "NCCL_ALGO" else "protocol"
    if not is_choice_set(applied):
        return (normalize_algorithm if field == "algorithm" else normalize_protocol)(applied)
    text = canonical_choice(applied, field)
    if is_choice_set(text) and not text.startswith("^"):
        universe = tables.NCCL_OP_ALGORITHMS.get(str(op), ()) if field == "algorithm" else PROTOCOLS
        members = set_members(text, universe, field)
        if len(members) == 1:  # the one name NCCL has for the op: pinned to it
            return members[0]
    return text


def _choice_line(op: str, choice: str, recorded: Any) -> str:
    """The alpha-beta line a row is fitted on, for NCCL_ALGO ``choice`` (:func:`_choice`).

    Pinned: that algorithm's line (:func:`_fitted_name`). NCCL's own choice, whole or among a
    set's members: the algorithm NCCL reported for the row's size (``recorded``, the
    NCCL_DEBUG=TUNING column ``nccl_algo``) where the log has it, else the ring line (the
    alpha-beta models' own choice), which a set fits only when it allows ring: a set without
    ring (``tree,nvls``, ``^ring``) keeps its spelling, a group skipped for having no one
    line (:func:`_no_formula_refusal`), as :func:`costmodel.predict.fitted_time_s` answers a
    set with its members' fits only.
    """
    from costmodel import tables
    from costmodel.nccl.names import is_choice_set, set_members

    if choice != "auto" and not is_choice_set(choice):
        return _fitted_name(op, choice.replace("_", ""))  # NCCL's spelling where none fits
    if isinstance(recorded, str) and recorded.strip():
        return _fitted_name(op, _applied(op, recorded, "NCCL_ALGO") or "ring")
    if choice == "auto" or "ring" in set_members(
        choice, tables.NCCL_OP_ALGORITHMS.get(op, ("ring",))
    ):
        return _fitted_name(op, "ring")
    return choice


def _group_columns(df: pd.DataFrame) -> pd.DataFrame:
    from costmodel.nccl.names import is_choice_set

    df = df.copy()
    none = [None] * len(df)
    env = df["algo_env"] if "algo_env" in df else none
    tuning = df["nccl_algo"].astype(object) if "nccl_algo" in df else none
    # what NCCL applied to each row's op (a list per function, NCCL 2.24+: allreduce:tree
    # pins all_reduce and leaves all_gather to NCCL; nccl_list_for): auto or a set of several
    # names is NCCL's choice (among the set's members), one name a pin
    df["algorithm"] = [
        _choice_line(op, _choice(op, a, "NCCL_ALGO"), t)
        for op, a, t in zip(df["op"], env, tuning, strict=True)
    ]
    proto = df["proto_env"] if "proto_env" in df else none
    # a set of several protocols is NCCL's choice among them: fitted as NCCL's own ("auto"),
    # which predict.fitted_time_s lets such a set use
    df["protocol"] = [
        p if p == "auto" or not is_choice_set(p) else "auto"
        for p in (_choice(op, v, "NCCL_PROTO") for op, v in zip(df["op"], proto, strict=True))
    ]
    nodes = df["nodes"] if "nodes" in df else None
    df["level"] = (
        np.where(nodes.fillna(1).astype(float) > 1, "inter", "intra")
        if nodes is not None
        else "intra"
    )
    return df


def calibrate(
    results: pd.DataFrame,
    *,
    name: str = "calibrated",
    min_bytes: float = 0.0,
    source: str = "<results>",
    max_bytes: float = math.inf,
    time_column: str = "time_s",
    base: str | None = None,
    nodes: int | None = None,
    ranks: int | None = None,
    gpus_per_process: int | None = None,
    placement: str = "out-of-place",
    cluster: Any = None,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    min_bytes_text: str | None = None,
) -> Calibration:
    """Fit every (op, algorithm, protocol, level) group of measured collective rows.

    ``min_bytes_text``: ``min_bytes`` as the user wrote it (CLI ``--min-bytes 64KiB``), so a
    refusal says the bound and the rows' span in its prefixes (``64 KiB``, not ``65.5 kB``).

    Two fits are made. The textbook alpha-beta line per (op, algorithm, protocol, level)
    (``fits``; kept for machines without a cluster preset, e.g. a CPU/gloo run) and, when a
    cluster structure is known (``cluster``, a :class:`~costmodel.hardware.Cluster` or preset
    name, default ``base``), the fabric's terms per level, every op of a level together
    (:func:`fit_fabric`; ``fabric``), which ``model="calibrated"`` and ``model="nccl"`` use on
    the calibrated cluster for every op and node/GPU count of that level
    (:mod:`costmodel.predict`). (Older files' per-op calibrated candidates, ``candidates``, are
    still read.)

    Shape of the runs (decision: never guessed): ``nodes`` and ``ranks`` come from the rows
    (nccl-tests host lines give ``nodes``) or from these arguments (CLI ``--nodes``/``--ranks``);
    rows with no node count and no ``nodes`` raise ValueError, as does an argument that
    contradicts the rows. ``gpus_per_process`` (nccl-tests ``-g``) fills rows that do not say;
    default 1.

    ``placement`` picks the nccl-tests rows fitted: ``"out-of-place"`` (default: the figures
    nccl-tests users quote), ``"in-place"`` or ``"both"``; it is recorded in the preset. Rows
    without a placement column (runner and torch results) are all used.

    ``results``: rows from :func:`costmodel.validation.runner.load_results` or
    :func:`costmodel.validation.nccl_tests.read_nccl_tests` (columns op, size_bytes, ranks,
    time_s; optional algo_env/nccl_algo, proto_env, nodes, flagged, placement). Rows nccl-tests
    flagged, DDP rows and sizes below ``min_bytes`` are left out. Groups whose algorithm the
    textbook model lacks, or that cannot be fitted, are skipped and listed in ``residuals``' attrs.

    ``max_bytes`` leaves out larger sizes too (fit one regime, e.g. the sizes that miss the CPU
    caches). ``time_column`` picks the statistic fitted: ``"time_s"`` (median over iterations,
    nccl-tests' mean) or torch_bench's ``"time_min_s"`` (the fastest iteration: on a machine
    shared with other processes, the estimate least disturbed by them). ``base`` names the
    cluster preset the fits refine (written to the TOML; see :mod:`costmodel.presets`).
    """
    import pandas as pd

    from costmodel.nccl.names import is_choice_set

    if "kind" in results and len(results) and (results["kind"] == "ddp_step").all():
        # a torch job run with --ops none --ddp: it read "results lack columns ['size_bytes']"
        raise ValueError(
            "results: the rows are DDP steps only (no collective rows); a calibration fits "
            "collectives: time some with the torch job (all_reduce besides its DDP steps), "
            "or give an nccl-tests log"
        )
    needed = {"op", "size_bytes", "ranks", time_column}
    missing = needed - set(results.columns)
    if missing:
        raise ValueError(f"results lack columns {sorted(missing)}; need {sorted(needed)}")
    df = results
    if time_column != "time_s":
        df = df.drop(columns=["time_s"]).rename(columns={time_column: "time_s"})
    if "kind" in df:
        df = df[df["kind"].fillna("collective") == "collective"]
    if "flagged" in df:
        flagged = df["flagged"].astype(object).fillna(False).astype(bool)
        if len(df) and flagged.all():  # said as what it is, not as a --min-bytes range
            reason = df["flag_reason"].dropna().iloc[0] if "flag_reason" in df else None
            raise ValueError(
                "results: every collective row is flagged by the run's own data check"
                + (f" ({reason})" if isinstance(reason, str) else "")
                + ": a collective that returned wrong data is not fitted; rerun it"
            )
        df = df[~flagged]
    timed = df[df.time_s > 0]
    if len(timed) and not (timed.size_bytes > 0).any():  # said as what it is, not a range
        raise ValueError(
            "results: every timed collective row is of 0 B (nothing moved, nothing to fit: "
            "nccl-tests prints such rows while a size is below one element per rank): the "
            "log ends before its first size above 0 B (cut off?); measure larger sizes"
        )
    df = timed[(timed.size_bytes >= max(min_bytes, 1)) & (timed.size_bytes <= max_bytes)]
    if df.empty:
        from costmodel.units import format_bytes_as_given

        def size(value: float) -> str:  # in the prefixes the user gave the bound in
            return format_bytes_as_given(value, min_bytes_text)

        span = (
            f"the rows span {size(timed.size_bytes.min())} to {size(timed.size_bytes.max())}"
            if len(timed)
            else "no timed collective rows at all"
        )
        raise ValueError(
            f"min_bytes: no usable collective rows from {size(max(min_bytes, 1))} to "
            f"{size(max_bytes) if max_bytes < float('inf') else 'the largest'} "
            f"(flagged and DDP rows left out); {span}"
        )
    df = _placement_rows(df, placement)
    from .compare import device_mix

    mixed = device_mix(df)
    if mixed:  # one alpha-beta line over CPU and GPU rows of one op describes neither
        raise ValueError(
            f"results: {mixed}; a calibration describes one device: calibrate a results file "
            "of one device (run each job into its own file)"
        )
    structure = cluster if cluster is not None else base
    if structure is not None:
        _check_base(df, structure)
    df = _shape_columns(df, nodes, ranks, gpus_per_process)
    # a run on one rank (a GPU-count sweep's first run, -g 1) moved nothing: the alpha-beta
    # line prices 0 bytes there, so its rows would be fitted as latency alone and each give
    # an infinite busbw error; left out and said, as validate compare leaves them out
    from .compare import ONE_RANK_MOVES_NOTHING, ONE_RANK_REFUSAL

    lonely = df["ranks"] < 2
    if lonely.all():
        raise ValueError(ONE_RANK_REFUSAL)
    df = df[~lonely]
    df = _group_columns(df)
    fits, parts, skipped = [], [], []
    if lonely.any():
        from costmodel.units import format_counted

        skipped.append(
            f"{format_counted(int(lonely.sum()), 'row')} at 1 rank: {ONE_RANK_MOVES_NOTHING}, "
            "left out of the fit"
        )
    no_formula: list[tuple[str, str]] = []  # (op, NCCL_ALGO) of the groups skipped for that
    for key, group in df.groupby(["op", "algorithm", "protocol", "level"], sort=True):
        # pandas-stubs types a group key as Hashable; by a list of columns it is a tuple
        op, algorithm, protocol, level = cast("tuple[str, str, str, str]", key)
        if is_choice_set(algorithm):  # NCCL's choice among a set without ring (_choice_line)
            skipped.append(
                f"{op}/{algorithm}: NCCL's own choice among a set without ring, which no one "
                "alpha-beta line describes"
            )
            no_formula.append((op, algorithm))
            continue
        if algorithm not in ALGORITHMS.get(op, ()) and algorithm != "ring":
            skipped.append(f"{op}/{algorithm}: no textbook formula")
            no_formula.append((op, algorithm))
            continue
        m = group.size_bytes.to_numpy(float)
        n = group.ranks.to_numpy(float)
        t = group.time_s.to_numpy(float)
        try:
            fit = fit_alpha_beta(op, m, n, t, algorithm, protocol=protocol, level=level)
        except ValueError as exc:  # the group named: groups of one op differ in protocol/level
            skipped.append(f"{exc} (protocol {protocol}, level {level})")
            continue
        fit, cv = _cross_validate(fit, m, n, t)
        fits.append(fit)
        predicted = fit.predict(m, n)
        parts.append(
            pd.DataFrame(
                {
                    "op": op,
                    "algorithm": algorithm,
                    "protocol": protocol,
                    "level": level,
                    "size_bytes": m,
                    "ranks": n.astype(int),
                    "measured_time_s": t,
                    "fitted_time_s": predicted,
                    "rel_error": busbw_rel_error(t, predicted),
                    "time_rel_error": time_rel_error(t, predicted),
                    "cv_rel_error": cv,
                }
            )
        )
    if not fits:
        if no_formula and len(no_formula) == len(skipped):
            raise ValueError(_no_formula_refusal(no_formula))
        raise ValueError("nothing could be fitted: " + "; ".join(skipped))
    residuals = pd.concat(parts, ignore_index=True)
    residuals.attrs["skipped"] = skipped
    backend = None
    if "backend" in results:
        from typing import get_args

        from costmodel.hardware import Backend

        values = results["backend"].dropna().unique()
        # one backend the harness knows (a results file edited to another text is not carried
        # into a calibration that every loader would then refuse)
        one = str(values[0]) if len(values) == 1 else None
        backend = one if one in get_args(Backend) else None
    fabric = []
    if structure is not None:
        nvls, collnet_enabled = _launch_switches(df, nvls, collnet_enabled)
        fabric = _fit_fabric_levels(df, structure, nvls, collnet_enabled, skipped)
    return Calibration(
        name, fits, source, backend, residuals, base, placement=placement, fabric=fabric
    )


def _no_formula_refusal(groups: list[tuple[str, str]]) -> str:
    """Why rows whose every group ran under an NCCL_ALGO without an alpha-beta line cannot be
    calibrated, and what to calibrate instead, in one line.

    A calibration is the alpha-beta line per (op, algorithm) (and, with a base cluster, the
    fabric terms beside it); the textbook model has Ring, Tree and NVLS, not CollNet (in-network
    reduction), NVLSTree or PAT. The bundled CollNet run 03 (``NCCL_ALGO=COLLNETCHAIN``) was
    refused as ``all_reduce/collnetchain: no textbook formula``, which says neither. (Its five
    sizes from 512 MiB up identify none of the realistic model's fabric terms either: each
    moves its log times by less than :data:`MEASURED_SENSITIVITY`.) A set of several
    algorithms is NCCL's own choice among them, fitted as an unpinned run is, by the ring line
    (:func:`_choice_line`); a set without ring (``tree,nvls``, ``^ring``) has no one line.

    >>> _no_formula_refusal([("all_reduce", "collnetchain")]).split("; ")[0]
    'nothing could be fitted: every row ran with NCCL_ALGO pinned to collnetchain (all_reduce), which the alpha-beta calibration has no formula for (it fits NCCL_ALGO ring, tree, nvls)'
    >>> _no_formula_refusal([("all_reduce", "tree,nvls")]).split("; ")[0]
    "nothing could be fitted: every row ran with NCCL_ALGO leaving NCCL the choice among tree,nvls (all_reduce), a set without ring, whose choice the alpha-beta calibration has no one line for (it fits NCCL's own choice by the ring line, and NCCL_ALGO ring, tree, nvls pinned)"
    """
    from costmodel.nccl.names import is_choice_set

    pinned = ", ".join(sorted({a for _, a in groups if not is_choice_set(a)}))
    sets = " and ".join(sorted({a for _, a in groups if is_choice_set(a)}))
    ops = ", ".join(sorted({o for o, _ in groups}))
    fitted = ", ".join(_TEXTBOOK_ALGORITHM)
    if sets:
        ran = f"leaving NCCL the choice among {sets}" + (
            f" or pinned to {pinned}" if pinned else ""
        )
        why = (
            f"a set without ring, whose choice the alpha-beta calibration has no one line for "
            f"(it fits NCCL's own choice by the ring line, and NCCL_ALGO {fitted} pinned)"
        )
    else:
        ran = f"pinned to {pinned}"
        why = f"which the alpha-beta calibration has no formula for (it fits NCCL_ALGO {fitted})"
    return (
        f"nothing could be fitted: every row ran with NCCL_ALGO {ran} ({ops}), {why}; "
        "calibrate a run with NCCL_ALGO=Ring or Tree, or unpinned (NCCL's own choice), and "
        "compare this one without calibrating (validate compare, the Validate page)"
    )


def _launch_switches(
    df: pd.DataFrame, nvls: bool | None, collnet_enabled: bool
) -> tuple[bool | None, bool]:
    """NVLS and CollNet as the rows' reader settled them (columns ``nvls`` and ``collnet``:
    :func:`.logread.read_log` fills them from a bundled run's index, as
    :func:`.compare.compare` predicts the rows) where the arguments do not set them, so a log
    is fitted with the launch it was compared with (04a-c: NVLS off; 03: CollNet)."""
    if nvls is None and "nvls" in df:
        values = {bool(v) for v in df["nvls"].dropna()}
        nvls = values.pop() if len(values) == 1 else None
    if not collnet_enabled and "collnet" in df:
        collnet_enabled = bool(df["collnet"].fillna(False).astype(bool).any())
    return nvls, collnet_enabled


def _check_base(rows: pd.DataFrame, structure: Any) -> None:
    """Check the rows against the base cluster a calibration is written into.

    Decision: rows measured on CPUs (the torch job with gloo) are refused on a (GPU) cluster:
    the realistic model of its GPUs, links and NICs cannot describe them, and the fabric terms
    fitted to them stay near the model's values (each is shrunk by how well the rows identify
    it), so the preset predicted its own gloo rows 70 % off at the median and 2-70x off from
    16 MiB, where the alpha-beta fits without a base cluster describe them (about 12 %).
    Rows whose GPU or GPUs per node contradict the base (:func:`.compare.preset_mismatch`, the
    check ``validate compare`` warns with) are fitted with a :class:`CalibrationWarning`: the
    terms then describe the hardware that ran, written into the base cluster's preset.
    """
    import warnings

    from costmodel.predict import CalibrationWarning

    from .compare import preset_mismatch, ran_on_cpus

    label = structure if isinstance(structure, str) else getattr(structure, "name", structure)
    if ran_on_cpus(rows):
        raise ValueError(
            f"cluster: the rows ran on CPUs (gloo) and {label} is a GPU cluster whose model "
            "cannot describe them; calibrate them without a base cluster (no `cluster`: the "
            "alpha-beta fits describe the rows) and compare with `calibrated_predictor`"
        )
    why = preset_mismatch(rows, structure)
    if why:
        warnings.warn(
            f"cluster: {label} does not match the measured rows ({why}): the fitted terms "
            f"describe the hardware that ran, written into {label}'s preset",
            CalibrationWarning,
            stacklevel=3,
        )


def _placement_rows(df: pd.DataFrame, placement: str) -> pd.DataFrame:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: {placement!r} unknown; allowed: {', '.join(PLACEMENTS)}")
    if "placement" not in df or placement == "both":
        return df
    out = df[df["placement"].isin(_PLACEMENT_ROWS[placement]) | df["placement"].isna()]
    if out.empty:
        have = sorted({str(v) for v in df["placement"].dropna()})
        raise ValueError(f"placement: no {placement} rows; the rows have {have}")
    return out


def _filled(df: pd.DataFrame, column: str, value: int | None, flag: str) -> pd.Series | None:
    """The column with ``value`` filled in; None if unknown somewhere and no value given."""
    have = df[column] if column in df else _nan_series(df)
    known = have.dropna()
    if value is not None:
        if value < 1:
            raise ValueError(f"{flag}: {value} must be an integer >= 1")
        if not known.empty and (known.astype(int) != int(value)).any():
            found = ", ".join(map(str, sorted({int(v) for v in known})))
            raise ValueError(f"{flag}: {value} contradicts the measured rows ({column} {found})")
        return have.fillna(int(value)).astype(int)
    if len(known) < len(have):
        return None
    return have.astype(int)


def _nan_series(df: pd.DataFrame) -> pd.Series:
    import pandas as pd

    return pd.Series(np.nan, index=df.index, dtype=float)


def _shape_columns(
    df: pd.DataFrame, nodes: int | None, ranks: int | None, gpus_per_process: int | None
) -> pd.DataFrame:
    """nodes, ranks, gpus_per_node and gpus_per_process of every row; refuse what is unknown."""
    df = df.copy()
    n = _filled(df, "nodes", nodes, "nodes")
    if n is None:
        raise ValueError(
            "nodes: the measured rows do not say how many nodes ran (an nccl-tests log without "
            "host lines); give it (`nodes`): it is never guessed"
        )
    r = _filled(df, "ranks", ranks, "ranks")
    if r is None:
        raise ValueError(
            "ranks: the measured rows do not say how many ranks ran; give it (`ranks`): it "
            "is never guessed"
        )
    if ((r % n) != 0).any():
        bad = sorted({(int(a), int(b)) for a, b in zip(r, n, strict=True) if a % b})
        raise ValueError(f"ranks must be a multiple of nodes; got (ranks, nodes) {bad}")
    df["nodes"], df["ranks"] = n, r
    df["gpus_per_node"] = (r // n).astype(int)
    gpp = df["gpus_per_process"] if "gpus_per_process" in df else _nan_series(df)
    df["gpus_per_process"] = gpp.fillna(gpus_per_process or 1).astype(int)
    return df


def _segments(
    df: pd.DataFrame, base: Any, skipped: list[str]
) -> dict[str, list[tuple[str, Segment]]]:
    """(op, launch-shape rows) per level of the rows (nodes/ranks already known); each row's
    algorithm and protocol as NCCL ran it (:func:`_choice`: a set stays a set, so the model
    chooses among its members, as ``validate compare`` predicts the rows)."""
    rows = df.copy()
    none = [None] * len(rows)
    rows["_algo"] = [
        _choice(op, v, "NCCL_ALGO")
        for op, v in zip(rows["op"], rows["algo_env"] if "algo_env" in rows else none, strict=True)
    ]
    rows["_proto"] = [
        _choice(op, v, "NCCL_PROTO")
        for op, v in zip(
            rows["op"], rows["proto_env"] if "proto_env" in rows else none, strict=True
        )
    ]
    # a type and reduction NCCL never runs on NVLS (int8, fp8, a max, ...) ran on ring or
    # tree: its rows are fitted with NVLS off, as validate compare predicts them
    from .compare import nvls_off_rows

    rows["_nvls_off"] = nvls_off_rows(rows)
    out: dict[str, list[tuple[str, Segment]]] = {}
    keys = [
        "level",
        "op",
        "nodes",
        "gpus_per_node",
        "gpus_per_process",
        "_algo",
        "_proto",
        "_nvls_off",
    ]
    for seg_key, seg in rows.groupby(keys, sort=True):
        level, op, k, g, gpp, a, p, off = cast(
            "tuple[str, str, int, int, int, Any, Any, bool]", seg_key
        )
        if g > base.gpus_per_node:
            skipped.append(
                f"{op}/{level}: {g} GPUs per node but cluster {base.name!r} has "
                f"{base.gpus_per_node}"
            )
            continue
        segment = Segment(
            int(k),
            int(g),
            int(gpp),
            a,
            p,
            seg.size_bytes.to_numpy(float),
            seg.time_s.to_numpy(float),
            nvls_off=bool(off),
        )
        out.setdefault(level, []).append((op, segment))
    return out


def _fit_fabric_levels(
    df: pd.DataFrame,
    structure: Any,
    nvls: bool | None,
    collnet_enabled: bool,
    skipped: list[str],
) -> list[FabricFit]:
    """fit_fabric per level of the rows, every op of a level together."""
    from costmodel.presets import cluster as load_cluster

    base = load_cluster(structure)
    out = []
    for level, segments in _segments(df, base, skipped).items():
        k = max(s.nodes for _, s in segments)
        c = base if level == "intra" else load_cluster(base, nodes=k)
        try:
            out.append(fit_fabric(segments, c, nvls=nvls, collnet_enabled=collnet_enabled))
        except ValueError as exc:
            skipped.append(f"{level} (fabric terms): {exc}")
    return out


def _cross_validate(
    fit: Fit, m: np.ndarray, n: np.ndarray, t: np.ndarray
) -> tuple[Fit, np.ndarray]:
    """Fit on every other distinct size, report the busbw error on the others."""
    sizes = np.unique(m)
    cv = np.full(m.shape, np.nan)
    if sizes.size < 4:
        return fit, cv
    train_sizes = sizes[::2]
    train = np.isin(m, train_sizes)
    try:
        half = fit_alpha_beta(fit.op, m[train], n[train], t[train], fit.algorithm)
    except ValueError:
        return fit, cv
    test = ~train
    cv[test] = busbw_rel_error(t[test], half.predict(m[test], n[test]))
    big = test & (m >= 2**20)
    return replace(
        fit,
        cv_max_abs_rel_error=float(np.nanmax(np.abs(cv[test]))),
        cv_max_abs_rel_error_ge_1mib=float(np.max(np.abs(cv[big]))) if big.any() else math.nan,
    ), cv


# ------------------------------------------------------------------------------ TOML
def _quantity(value: float, unit: str) -> str:
    """Exact unit string (repr round-trips) for the preset loader, which refuses bare numbers."""
    return f"{float(value)!r}{unit}"


def to_preset(
    calibration: Calibration, *, base: str | None = None, created: _dt.datetime | None = None
) -> CalibrationPreset:
    """The calibration as a validated :class:`costmodel.hardware.CalibrationPreset`.

    ``base`` (default: ``calibration.base``) names the cluster preset the fits refine;
    ``created`` stamps it (default: now, UTC; pass a fixed time for reproducible output).
    """
    from pydantic import ValidationError

    from costmodel.hardware import REQUIRE_UNITS, CalibrationPreset

    base = base if base is not None else calibration.base
    doc = _document(calibration, base, created)
    doc.pop("kind")
    try:
        return CalibrationPreset.model_validate(doc, context={REQUIRE_UNITS: True})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise ValueError(
            f"calibration {calibration.name!r} is not a valid preset: {problems}"
        ) from None


def _created_stamp(created: _dt.datetime | None) -> str:
    """ISO 8601 stamp of ``created`` (default: now), in UTC, to the second."""
    when = created if created is not None else _dt.datetime.now(_dt.UTC)
    if when.tzinfo is None:
        raise ValueError(f"created: needs a timezone (e.g. datetime.UTC), got {when.isoformat()}")
    return when.astimezone(_dt.UTC).isoformat(timespec="seconds")


#: The error a calibration's fit statistics hold, written into every calibration TOML.
ERROR_DEFINITION = (
    "fit errors (rms_rel_error, max_abs_rel_error, cv_*) are the busbw error, "
    "busbw_pred / busbw_meas - 1 = t_meas / t_pred - 1 "
    "(costmodel.validation.compare.busbw_rel_error), as validate compare reports it"
)


def _document(
    calibration: Calibration, base: str | None, created: _dt.datetime | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "calibration",
        "name": calibration.name,
        "source": calibration.source,
        "created": _created_stamp(created),
        # what the fit statistics (rms_rel_error, max_abs_rel_error, cv_*) hold, said in the
        # method: files written before 2026-12-03 held the time error under the same names
        "method": "textbook alpha-beta (costmodel.collectives), weighted least squares 1/T; "
        + ERROR_DEFINITION,
        "fit": [],
    }
    if base:
        doc["base"] = base
    poor = poor_fit_note(calibration)  # said in the file too, beside the rms it is about
    if poor:
        doc["description"] = poor
    if calibration.backend:
        doc["backend"] = calibration.backend
    if calibration.placement:
        doc["placement"] = calibration.placement
    if calibration.fabric:
        doc["method"] += (
            "; fabric terms of the realistic model (costmodel.realistic): bandwidth efficiency, "
            "latency scale, host-floor scale, NIC efficiency and network latency per level, "
            "robust least squares on log time, each shrunk towards the model's value by how "
            "well the rows identify it"
        )
        doc["fabric"] = [f.entry(calibration.source) for f in calibration.fabric]
    if calibration.candidates:
        doc["method"] += (
            "; realistic model candidates (costmodel.realistic): bandwidth efficiency and "
            "latency scale per (algorithm, protocol), robust least squares on log time"
        )
        doc["candidate"] = [
            e for fit in calibration.candidates for e in fit.entries(calibration.source)
        ]
    for f in calibration.fits:
        entry = {k: v for k, v in asdict(f).items() if not (isinstance(v, float) and math.isnan(v))}
        entry["latency_s"] = _quantity(f.latency_s, "s")
        entry["bandwidth_bytes_per_s"] = _quantity(f.bandwidth_bytes_per_s, "B/s")
        entry["ranks"] = list(f.ranks)
        for key in ("min_bytes", "max_bytes"):  # the fitted sizes, where known
            if key in entry:
                entry[key] = _quantity(entry[key], "B")
        entry["source"] = f"fitted to {f.points} measured points from {calibration.source}"
        doc["fit"].append(entry)
    return doc


def write_calibration(
    calibration: Calibration,
    path: str | Path,
    *,
    base: str | None = None,
    created: _dt.datetime | None = None,
) -> Path:
    """Write a calibration preset TOML (``kind = "calibration"``), every number with its source.

    The file loads through :func:`costmodel.presets.load` (by path, or by name from a presets
    folder when the file is named ``<name>.toml``); with ``base`` (default: ``calibration.base``,
    a cluster preset name, checked here) it loads as that cluster carrying the fits, which
    :func:`costmodel.predict.predict_collective` then uses. Quantities are written with units
    (``latency_s = "8.2e-05s"``), as every preset file must; :func:`load_calibration` also reads
    older files with bare numbers. ``created`` is the file's ``created`` stamp (default: now,
    UTC, to the second); pass it to make two writes of the same calibration byte-identical.
    """
    import tomli_w

    base = base if base is not None else calibration.base
    if base is not None:
        from costmodel import presets

        presets.load(base, "cluster")  # an unknown name fails here, with the closest ones
    doc = _document(calibration, base, created)
    to_preset(calibration, base=base, created=created)  # refuse what the preset loader refuses
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, tomli_w.dumps(doc))  # temporary file + rename: never a half file
    return path


def _number(value: Any, parse: Callable[..., float], name: str) -> float:
    return parse(value, name=name) if isinstance(value, str) else float(value)


def _preset_name(name: str) -> str:
    """``name`` as a preset name (lower-case ``[a-z0-9._-]``), for a calibration whose own
    name or file name is not one (``My H100 run``)."""
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "calibration"


def load_calibration(path: str | Path) -> Calibration:
    """Read a TOML written by :func:`write_calibration`; bad files raise ValueError naming them.

    The bytes are decoded as logs, results and grid files are (:mod:`costmodel.textfile`: UTF-8,
    UTF-16/32 by a byte-order mark, as a copy through a PowerShell 5 redirect has)."""
    from costmodel import textfile
    from costmodel.presets import MAX_PRESET_FILE_BYTES, MAX_PRESET_NESTING, toml_nesting
    from costmodel.units import parse_bytes, parse_duration, parse_rate

    path = Path(path)
    try:
        # the size and nesting a preset file is bounded by (presets.read_toml_bounded), before
        # parsing: a deeply nested value overflowed tomllib's recursion (a traceback)
        with path.open("rb") as fh:
            raw = fh.read(MAX_PRESET_FILE_BYTES + 1)
        if len(raw) > MAX_PRESET_FILE_BYTES:
            raise ValueError(
                f"{path}: cannot read calibration TOML: over {MAX_PRESET_FILE_BYTES:,} bytes; "
                f"allowed: at most {MAX_PRESET_FILE_BYTES:,} bytes"
            )
        text = textfile.decode_text(raw, str(path), what="calibration")
        depth = toml_nesting(text)
        if depth > MAX_PRESET_NESTING:
            raise ValueError(
                f"{path}: cannot read calibration TOML: it nests arrays or tables {depth} deep; "
                f"allowed: at most {MAX_PRESET_NESTING}"
            )
        doc = tomllib.loads(text)
    except textfile.TextDecodeError as exc:
        raise ValueError(f"{path}: cannot read calibration TOML: {exc.message}") from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read calibration TOML: {exc}") from exc
    kind = doc.get("kind", doc.get("preset"))
    if kind != "calibration" or not (doc.get("fit") or doc.get("candidate") or doc.get("fabric")):
        raise ValueError(
            f'{path}: not a calibration preset (needs kind = "calibration" and [[fit]], '
            "[[candidate]] or [[fabric]] tables)"
        )
    # the checks `--cluster FILE` makes (costmodel.presets.load): every key known, every value
    # of its type and in its range, the base a cluster preset on the network the inter-node
    # terms were fitted on; one line naming the file and the key, never a traceback
    from costmodel import presets

    data = {k: v for k, v in doc.items() if k not in ("kind", "preset")}
    data.setdefault("name", _preset_name(path.stem))
    data.setdefault("source", str(path))
    try:
        checked = presets.check_calibration(path, data, require_units=False)
        presets.check_calibration_base(path, checked)
    except presets.PresetError as exc:
        raise ValueError(str(exc)) from None
    fits = []
    names = {f.name for f in Fit.__dataclass_fields__.values()}
    for entry, valid in zip(doc.get("fit", []), checked.fits, strict=True):
        values = {k: v for k, v in entry.items() if k in names}
        values["ranks"] = tuple(values.get("ranks", ()))
        values["protocol"] = valid.protocol  # in calibrate's spelling (LL128 -> ll128)
        try:
            values["latency_s"] = _number(values["latency_s"], parse_duration, "latency_s")
            values["bandwidth_bytes_per_s"] = _number(
                values["bandwidth_bytes_per_s"], parse_rate, "bandwidth_bytes_per_s"
            )
            for key in ("min_bytes", "max_bytes"):  # written since 2026-12-05
                if key in values:
                    values[key] = _number(values[key], parse_bytes, key)
            fits.append(Fit(**values))
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"{path}: bad [[fit]] entry {entry}: {exc}") from exc
    try:
        candidates = _candidates_from_entries(doc.get("candidate", []))
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path}: bad [[candidate]] entry: {exc}") from exc
    try:
        fabric = [_fabric_from_entry(e) for e in doc.get("fabric", [])]
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path}: bad [[fabric]] entry: {exc}") from exc
    return Calibration(
        doc.get("name", path.stem),
        fits,
        doc.get("source", str(path)),
        doc.get("backend"),
        base=doc.get("base"),
        candidates=candidates,
        placement=doc.get("placement"),
        fabric=fabric,
    )


def _size(value: Any) -> float:
    from costmodel.units import parse_bytes

    return (
        float(parse_bytes(value, name="min_bytes/max_bytes"))
        if isinstance(value, str)
        else float(value)
    )


def _candidates_from_entries(entries: list[dict[str, Any]]) -> list[RealisticFit]:
    """[[candidate]] tables (as written by :meth:`RealisticFit.entries`) -> RealisticFit."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in entries:
        groups.setdefault((e["op"], e["level"]), []).append(e)
    out = []
    for (op, level), es in groups.items():
        star = next((e for e in es if e["algorithm"] == "*"), es[0])
        out.append(
            RealisticFit(
                op=op,
                level=level,
                fabric=str(star.get("fabric", "none")),
                scale={
                    (e["algorithm"], e["protocol"]): (
                        float(e["bandwidth_efficiency"]),
                        float(e["latency_scale"]),
                    )
                    for e in es
                },
                host_floor_scale=float(star.get("host_floor_scale", 1.0)),
                chosen={(e["algorithm"], e["protocol"]): int(e.get("points", 0)) for e in es},
                nodes=tuple(star.get("nodes", ())),
                gpus_per_node=tuple(star.get("gpus_per_node", ())),
                min_bytes=_size(star.get("min_bytes", 0.0)),
                max_bytes=_size(star.get("max_bytes", 0.0)),
                points=int(star.get("points", 0)),
                rms_log_error=math.nan,
            )
        )
    return out


#: The rms busbw error on its own rows above which a calibration is said not to describe its
#: run (:func:`poor_fit_note`): 3.0 is 300 %, the time off by a factor of about 4 in rms.
#: Decided on the repository's own calibrations (every timed bundled nccl-tests run calibrated
#: on its index's preset, 2026-12-06; README, "A calibration that does not describe its
#: run"): the fabric fit reaches at most 55 %
#: on the NVSwitch, InfiniBand, RoCE, EFA and PCIe runs (3-33 % on one node), 102-167 % on the
#: Slingshot runs and 233 % on GPUDirect-TCPX (20), whose small sizes the model misses by a
#: floor no term carries; the alpha-beta lines reach 0.1-57 % on one node count, 234-445 % on
#: Polaris. Above 300 %: 25d (multi-node all-to-all, 1227 %: a per-peer cost no term carries)
#: and an alpha-beta line drawn over 1 to 512 nodes (15, 1066 %), neither described by its
#: model. A threshold under the runs the model merely misses would cry wolf on every Slingshot
#: calibration; this one says so where the terms cannot describe the run at all (a socket
#: fallback priced as the NICs, a wrong cluster preset).
POOR_FIT_RMS = 3.0


def poor_fit_note(calibration: Calibration) -> str | None:
    r"""One line when the model a calibration predicts with misses its own rows by an rms
    busbw error over :data:`POOR_FIT_RMS`; None otherwise (and where the file records no rms).

    The model is the one ``validate compare --calibration`` predicts with
    (:func:`calibrated_predictor`): the fabric terms of a calibration with a base cluster
    (``[[fabric]]`` ``rms_rel_error``, the unshrunk fit's
    :math:`\sqrt{\overline{(t_{meas}/t_{pred} - 1)^2}}` on its rows), else the alpha-beta lines
    (``[[fit]]`` ``rms_rel_error``, the same error of the line). The worst level or line is named.

    >>> f = Fit("all_reduce", "ring", "auto", "inter", 1e-6, 1e9, 20, 6.34, 20.0)
    >>> poor_fit_note(Calibration("c", [f], "run.txt"))[:95]
    "calibration 'c' does not describe its own run: rms busbw error 634% on its rows (the alpha-beta"
    >>> poor_fit_note(Calibration("c", [replace(f, rms_rel_error=0.2)], "run.txt")) is None
    True
    """
    if (calibration.candidates or calibration.fabric) and calibration.base:
        scored = [
            (f.rms_rel_error, f"the fabric terms at level {f.level}", "the fabric terms do")
            for f in calibration.fabric
        ]
    else:
        scored = [
            (
                f.rms_rel_error,
                f"the alpha-beta line of {f.op} {f.algorithm} at level {f.level}",
                "the alpha-beta line does",
            )
            for f in calibration.fits
        ]
    scored = [x for x in scored if math.isfinite(x[0])]
    if not scored:
        return None
    rms, where, model = max(scored, key=lambda x: x[0])
    if rms <= POOR_FIT_RMS:
        return None
    return (
        f"calibration {calibration.name!r} does not describe its own run: rms busbw error "
        f"{rms:.0%} on its rows ({where}), above the {POOR_FIT_RMS:.0%} threshold that no "
        f"bundled run the model describes exceeds (calibrate.POOR_FIT_RMS): {model} not describe "
        "this run (a socket fallback, a wrong cluster preset, a failed run?); its predictions "
        "are not this cluster's"
    )


def calibrated_predictor(calibration: Calibration | str | Path) -> Callable[..., np.ndarray]:
    """A predictor for :func:`costmodel.validation.compare.compare` from a calibration.

    ``predictor(op, message_bytes, ranks, nodes, algorithm=None, protocol=None) -> time_s``.
    With calibrated candidates and a base cluster: the calibrated realistic model on the base
    cluster (``predict_collective(..., model="calibrated")``, the road a calibrated cluster
    takes; ``ranks`` must then be a multiple of ``nodes``); otherwise the alpha-beta fits through
    :func:`costmodel.predict.fitted_time_s`.
    """
    import warnings

    from costmodel.predict import CalibrationWarning, fitted_time_s, predict_collective

    cal = calibration if isinstance(calibration, Calibration) else load_calibration(calibration)
    # a calibration that misses its own rows widely: said with every prediction it makes, as
    # its other CalibrationWarnings are (validate compare --calibration, the Validate page)
    poor = poor_fit_note(cal)

    def say_poor() -> None:
        if poor:
            warnings.warn(poor, CalibrationWarning, stacklevel=3)

    # a preset name must be lower-case [a-z0-9._-]; the predictor only needs the fits
    safe = _preset_name(cal.name)
    preset = to_preset(replace(cal, name=safe, source=cal.source or "<results>"), base=None)
    if (cal.candidates or cal.fabric) and cal.base:
        from costmodel.presets import cluster as load_cluster

        base = load_cluster(cal.base).model_copy(update={"calibration": preset})

        def realistic_prediction(
            op: str,
            message_bytes: Any,
            ranks: int,
            nodes: int = 1,
            algorithm: str | None = None,
            protocol: str | None = None,
            gpus_per_process: int = 1,
            nvls: bool | None = None,
            collnet_enabled: bool = False,
        ) -> Any:
            say_poor()
            if int(ranks) % int(nodes):
                raise must_be("ranks", f"a multiple of the {nodes} `nodes`", ranks)
            gpus = int(ranks) // int(nodes)
            # how the rows were launched, as the fit (fit_fabric) priced them: GPUs per
            # process (nccl-tests -g: the launch floor grows with it), NVLS and CollNet as the
            # reader settled them; a row of a -g 4 run predicted as one process per GPU
            # would miss the floor the calibration fitted on it
            p = predict_collective(
                op,
                message_bytes,
                base,
                nodes=int(nodes),
                gpus_per_node=gpus,
                algorithm=algorithm or "auto",
                protocol=protocol or "auto",
                model="calibrated",
                gpus_per_process=max(1, min(int(gpus_per_process), gpus)),
                nvls=nvls,
                collnet_enabled=bool(collnet_enabled),
            )
            return p

        @functools.wraps(realistic_prediction)  # its parameters, for compare's inspection
        def realistic(*args: Any, **kwargs: Any) -> np.ndarray:
            return np.asarray(realistic_prediction(*args, **kwargs).time_s, float)

        realistic.model_name = f"calibrated:{cal.name}"  # type: ignore[attr-defined]
        # the whole prediction (time and the algorithm NCCL's choice ran), as
        # compare.cluster_predictor's, so validate compare --calibration fills
        # predicted_algorithm as --cluster does (compare calls it where it is given)
        realistic.prediction = realistic_prediction  # type: ignore[attr-defined]
        return realistic

    def predictor(
        op: str,
        message_bytes: Any,
        ranks: int,
        nodes: int = 1,
        algorithm: str | None = None,
        protocol: str | None = None,
    ) -> np.ndarray:
        say_poor()
        m = np.asarray(message_bytes, float)
        t, _, _ = fitted_time_s(
            preset, op, m, int(ranks), int(nodes), algorithm or "auto", protocol or "auto"
        )
        return t.reshape(m.shape) if m.ndim else t[0]

    predictor.model_name = f"calibrated:{cal.name}"  # type: ignore[attr-defined]
    return predictor


@dataclass(frozen=True)
class InSample:
    """A calibration's error on the rows it was fitted on, beside the uncalibrated model's
    (:func:`in_sample`): median |busbw error| (the figure ``validate compare`` reports) and
    mean |ln(predicted / measured)| (what the fit lowers: its robust loss on log time is
    about the sum of these beyond a 3 % residual, :data:`HUBER_DELTA`)."""

    name: str
    base: str
    rows: int
    uncalibrated: float
    calibrated: float
    uncalibrated_log: float
    calibrated_log: float
    identified: bool = True  # some fabric term was fitted (else the model answers unchanged)

    @property
    def lowered(self) -> bool:
        """Whether the calibration lowers the median |busbw error| on its own rows."""
        return self.calibrated < self.uncalibrated

    def note(self) -> str | None:
        """The warning when it does not lower it; None when it does, and when the rows
        identified no term (the prediction is the uncalibrated model's: ``calibrate`` says so
        in its own warning). A median within 0.05 points of the model's is said unchanged.

        >>> InSample("c20", "gcp-a3-high", 14, 0.0685, 0.0846, 0.801, 0.585).note()[:96]
        "calibration 'c20' does not lower the error on its own rows: median |busbw error| 8.5% calibrated"
        >>> InSample("c", "dgx-h100", 54, 0.025, 0.0252, 0.029, 0.029).note()[:80]
        "calibration 'c' leaves the error on its own rows as it was: median |busbw error|"
        """
        if self.lowered or not self.identified:
            return None
        if self.calibrated <= self.uncalibrated + 5e-4:
            return (
                f"calibration {self.name!r} leaves the error on its own rows as it was: median "
                f"|busbw error| {self.calibrated:.1%} calibrated, {self.uncalibrated:.1%} "
                f"uncalibrated (the nccl model on {self.base}) over "
                f"{self.rows} {'row' if self.rows == 1 else 'rows'}: its terms barely move the "
                "prediction there"
            )
        return (
            f"calibration {self.name!r} does not lower the error on its own rows: median "
            f"|busbw error| {self.calibrated:.1%} calibrated against {self.uncalibrated:.1%} "
            f"uncalibrated (the nccl model on {self.base}) over "
            f"{self.rows} {'row' if self.rows == 1 else 'rows'}. Its fit lowers a robust loss "
            f"on log time over every size (mean |ln ratio| {self.uncalibrated_log:.3f} -> "
            f"{self.calibrated_log:.3f}); where the model misses one range of sizes by a wide "
            "margin, the terms pull those rows in and give up rows the model already matched, "
            "which set the median (docs/calibration.md, a calibration on its own run)"
        )


def in_sample(
    calibration: Calibration,
    results: pd.DataFrame,
    *,
    nodes: int | None = None,
    ranks: int | None = None,
    gpus_per_process: int | None = None,
) -> InSample | None:
    """The calibration's error on the rows it was fitted on (its placement, the fabric fits'
    sizes; flagged, untimed and DDP rows left out, as :func:`calibrate` leaves them), predicted
    as ``validate compare --calibration`` predicts them (:func:`calibrated_predictor`), and the
    uncalibrated ``nccl`` model's on its base cluster (``validate compare --cluster BASE``).

    ``results``, ``nodes``, ``ranks`` and ``gpus_per_process``: as given to :func:`calibrate`.
    None for a calibration without fabric terms or base cluster (alpha-beta lines only: there
    is no uncalibrated model to set beside them), or when no row is compared by both.
    """
    from .compare import calibration_warnings, cluster_predictor, compare

    if not calibration.fabric or not calibration.base:
        return None
    df = results
    if "kind" in df:
        df = df[df["kind"].fillna("collective") == "collective"]
    if "flagged" in df:
        df = df[~df["flagged"].astype(object).fillna(False).astype(bool)]
    lo = min(f.min_bytes for f in calibration.fabric)
    hi = max(f.max_bytes for f in calibration.fabric)
    df = df[(df["time_s"] > 0) & (df["size_bytes"] >= lo) & (df["size_bytes"] <= hi)]
    df = _placement_rows(df, calibration.placement or "out-of-place")
    df = _shape_columns(df, nodes, ranks, gpus_per_process)
    if df.empty:
        return None
    try:  # the calibration's warnings while it predicts are calibrate's to say, not these
        mine, _ = calibration_warnings(
            lambda: compare(df, calibrated_predictor(calibration), model="calibrated")
        )
        # the base as shipped: a calibrated preset as base (the Validate page allows one)
        # would set a calibration beside a calibration
        from costmodel.presets import cluster as load_cluster

        plain = load_cluster(calibration.base).model_copy(update={"calibration": None})
        model = compare(df, cluster_predictor(plain), model="nccl")
    except ValueError:  # rows compare refuses (one rank each): nothing to set side by side
        return None
    both = mine["rel_error"].notna() & model["rel_error"].notna()
    if not both.any():
        return None
    return InSample(
        name=calibration.name,
        base=calibration.base,
        rows=int(both.sum()),
        uncalibrated=float(model.loc[both, "rel_error"].abs().median()),
        calibrated=float(mine.loc[both, "rel_error"].abs().median()),
        uncalibrated_log=float(model.loc[both, "abs_log_ratio"].mean()),
        calibrated_log=float(mine.loc[both, "abs_log_ratio"].mean()),
        identified=any(f.measured for f in calibration.fabric),
    )


def allreduce_time_fn(
    calibration: Calibration | str | Path, ranks: int, nodes: int = 1
) -> Callable[[Any], np.ndarray]:
    """bytes -> seconds of a fitted all-reduce at ``ranks`` (for :func:`costmodel.ddp.ddp_step`),
    when no cluster preset describes the machine (e.g. a CPU/gloo run)."""
    predictor = calibrated_predictor(calibration)
    return lambda message_bytes: predictor("all_reduce", message_bytes, ranks, nodes)


# ------------------------------------------------------------------- realistic-model calibration
#: Huber threshold of the robust fit, on log time (about 3 % relative error)
HUBER_DELTA = 0.03
#: bounds of the fitted multipliers (log space is clipped to these): efficiency, latency, floor
EFFICIENCY_BOUNDS = (0.05, 20.0)
LATENCY_SCALE_BOUNDS = (0.02, 50.0)
FLOOR_SCALE_BOUNDS = (0.05, 20.0)
#: weight of the prior pulling every fitted term towards the model's own value (the
#: uncalibrated model)
PRIOR_WEIGHT = 1e-3
#: prior width of every fitted fabric term around the model's own value, in its fit variable
#: (log units for the multipliers and shares, tens of microseconds for the network latency).
#: After the fit each term is shrunk towards the model's value by how well the rows identify
#: it (:func:`fit_fabric`): a term many rows see clearly (a duplex share from a whole run of
#: large sizes: 99 % kept) keeps nearly all of its fitted shift, one that only a few sizes or
#: sizes where it hardly matters move (the host floor of an all-gather on NVLink: 0 %; a NIC
#: share and hop latency from Polaris' scattered 8-node plateau: 11 % and 3 %) keeps little of
#: it; on the op and shape the rows measured the whole fit applies. Siblings more than 2
#: points worse than uncalibrated: 6 of 128 without it, 0 with it. Chosen by leave one cluster out
#: over the repository's sibling sets among (inf, 0.5, 0.2, 0.1, 0.05, 0.03)
#: (scripts/calibration_holdout.py ``--select-prior``; docs/calibration.md). math.inf: none.
PRIOR_SD = 0.1
#: smallest residual scatter (log time) the shrinkage assumes: a fit that matches its own rows
#: to better than 1 % is not taken as proof the terms transfer that well
NOISE_FLOOR = 0.01
PLACEMENTS = ("out-of-place", "in-place", "both")
_PLACEMENT_ROWS = {"out-of-place": ("out_of_place",), "in-place": ("in_place",)}


@dataclass(frozen=True)
class Segment:
    """Rows of one launch shape: same nodes, GPUs per node, -g, algorithm and protocol;
    ``nvls_off``: a type and reduction NCCL never runs on NVLS
    (:func:`.compare.nvls_off_rows`), fitted with NVLS off whatever the run's setting."""

    nodes: int
    gpus_per_node: int
    gpus_per_process: int
    algorithm: str
    protocol: str
    size: np.ndarray
    time_s: np.ndarray
    nvls_off: bool = False


@dataclass
class RealisticFit:
    """The realistic model's calibrated multipliers for one (op, level) of a cluster."""

    op: str
    level: str
    fabric: str
    scale: dict[tuple[str, str], tuple[float, float]]
    host_floor_scale: float
    chosen: dict[tuple[str, str], int]  # measured points each candidate was chosen on
    nodes: tuple[int, ...]
    gpus_per_node: tuple[int, ...]
    min_bytes: float
    max_bytes: float
    points: int
    rms_log_error: float

    def entries(self, source: str) -> list[dict[str, Any]]:
        """[[candidate]] tables (hardware.CandidateCalibration), the '*' default first."""
        out = []
        for (a, p), (eta, lam) in sorted(self.scale.items(), key=lambda kv: kv[0] != ("*", "*")):
            entry: dict[str, Any] = {
                "op": self.op,
                "level": self.level,
                "fabric": self.fabric,
                "algorithm": a,
                "protocol": p,
                "bandwidth_efficiency": float(eta),
                "latency_scale": float(lam),
                "nodes": list(self.nodes),
                "gpus_per_node": list(self.gpus_per_node),
                "min_bytes": f"{int(self.min_bytes)}B",
                "max_bytes": f"{int(self.max_bytes)}B",
                "points": int(self.chosen.get((a, p), self.points if a == "*" else 0)),
                "source": f"fitted (robust least squares on log time) to {self.points} measured "
                f"points from {source}",
            }
            if (a, p) == ("*", "*"):
                entry["host_floor_scale"] = float(self.host_floor_scale)
            out.append(entry)
        return out


# ---------------------------------------------------------------------- fabric-term calibration
#: bounds of the fitted fabric terms: bandwidth efficiency, latency scale, host-floor scale,
#: NIC efficiency (a share of line rate: at most 1) and the extra latency per network hop [us]
FABRIC_BOUNDS: dict[str, tuple[float, float]] = {
    "bandwidth_efficiency": EFFICIENCY_BOUNDS,
    "latency_scale": LATENCY_SCALE_BOUNDS,
    "host_floor_scale": FLOOR_SCALE_BOUNDS,
    "nic_efficiency": (0.05, 1.0),
    "net_latency_us": (0.0, 500.0),
    "duplex_efficiency": (0.05, 1.0),
}
#: every fabric term of each level (the network terms only where rows span several nodes)
ALL_FABRIC_TERMS: dict[str, tuple[str, ...]] = {
    "intra": ("bandwidth_efficiency", "latency_scale", "host_floor_scale", "duplex_efficiency"),
    "inter": (
        "bandwidth_efficiency",
        "host_floor_scale",
        "nic_efficiency",
        "net_latency_us",
    ),
}
#: the terms a calibration fits and carries, per level: those of :data:`ALL_FABRIC_TERMS` that
#: transfer to the same cluster's other ops and node/GPU counts. Decided by leave one cluster
#: out over the repository's sibling sets (scripts/calibration_holdout.py ``--select``): for
#: each cluster, the term set chosen on the other clusters' pairs among all terms and every
#: set with one term left out is scored on its own pairs (measured 2026-12-01,
#: docs/calibration.md). Every fold drops ``bandwidth_efficiency`` at both levels and keeps
#: the rest: the candidate-wide multiplier is identified only for the candidates the
#: calibration run's sizes chose (NVLS for an H100 all-reduce, Ring for an all-gather, the
#: network ring at one node count), and carried to an op or node count where others win it
#: moves them by a share the run never measured (siblings more than 2 points worse than
#: uncalibrated: 31 of 128 with it, 6 without; within 10 %: 86 both; the half split of one
#: run: 26 of 46 within 5 %, 25 with it). The bandwidth the run does identify stays: the NICs' share
#: of line rate across nodes (the bound its large sizes reach) and, on host-staged nodes, the
#: duplex share.
FABRIC_TERMS: dict[str, tuple[str, ...]] = {
    "intra": ("latency_scale", "host_floor_scale", "duplex_efficiency"),
    "inter": ("host_floor_scale", "nic_efficiency", "net_latency_us"),
}
#: a term counts as measured when a 1-unit step of its fit variable (log for multipliers,
#: 10 us for the network latency) moves some measured point's log time by at least this much;
#: below it the rows cannot see the term and it keeps the model's own value
MEASURED_SENSITIVITY = 0.05
_LATENCY_UNIT_US = 10.0  # fit variable of net_latency_us: tens of microseconds (well scaled)
# terms written as plain numbers (net_latency_us is written as net_latency_s, with its unit)
_PLAIN_TERMS = (
    "bandwidth_efficiency",
    "latency_scale",
    "host_floor_scale",
    "nic_efficiency",
    "duplex_efficiency",
)
#: (specific, general): where the rows cannot tell two terms apart (their effects on the
#: measured log times are collinear), the specific one is fitted and the general one keeps the
#: model's value. Duplex-only rows of a host-staged node (all-reduce on PCIe without P2P) see
#: the duplex share and the link efficiency as one product; the model's one-way rate is the
#: better-founded (09c/09d, broadcast and reduce, within 3 % uncalibrated), so the shortfall
#: goes to the duplex share and a broadcast predicted from an all-reduce keeps the link rate.
CONFOUNDED = (("duplex_efficiency", "bandwidth_efficiency"),)


@dataclass
class FabricFit:
    """Calibrated fabric terms of one level (see :class:`costmodel.hardware.FabricCalibration`).

    ``terms`` holds the fitted values of the terms in ``measured``; the others keep the model's
    own (absent here, None in the preset).
    """

    level: str
    fabric: str
    terms: dict[str, float]
    measured: tuple[str, ...]
    ops: tuple[str, ...]
    nodes: tuple[int, ...]
    gpus_per_node: tuple[int, ...]
    min_bytes: float
    max_bytes: float
    points: int
    rms_log_error: float
    kept: dict[str, float] = field(default_factory=dict)  # share of each fitted shift kept
    #: the fit's rms busbw error on its own rows (t_meas / t_pred - 1 of the unshrunk fit,
    #: which predicts the shapes it measured): how well the terms can describe the run at all
    rms_rel_error: float = math.nan
    #: the unshrunk fit of the terms the shrinkage moved, used on the ops and shapes measured
    measured_shape: dict[str, float] = field(default_factory=dict)
    #: the table's ``source`` as read from a file (:func:`_fabric_from_entry`): written back
    #: as it was, since the shares kept (``kept``) are said only there
    written_source: str = ""

    def at(self, op: str, nodes: int, gpus_per_node: int) -> FabricFit:
        """These terms for ``op`` on ``nodes`` x ``gpus_per_node``: the unshrunk fit
        (``measured_shape``) on an op and shape the rows measured, as
        :meth:`costmodel.hardware.FabricCalibration.at`."""
        if op in self.ops and nodes in self.nodes and gpus_per_node in self.gpus_per_node:
            return replace(self, terms={**self.terms, **self.measured_shape})
        return self

    def inputs(self, params: dict[str, object]) -> tuple[dict[str, object], dict]:
        """(params, candidate_scale) of the realistic model under these terms."""
        from costmodel.predict import fabric_calibration_inputs

        return fabric_calibration_inputs(params, self.fabric, **self.terms)

    def _kept_note(self) -> str:
        """How far each term was shrunk towards the model's value (fit_fabric), in words."""
        if not self.kept:
            return ""
        shares = ", ".join(f"{k} {100 * v:.0f} %" for k, v in self.kept.items())
        return (
            "; on other ops and node/GPU counts each is shifted from the model's value by the "
            f"share the rows identify (kept: {shares}), on those measured by the whole fit "
            "(measured_shape)"
        )

    def entry(self, source: str) -> dict[str, Any]:
        """The ``[[fabric]]`` table (hardware.FabricCalibration), quantities with units."""
        out: dict[str, Any] = {"level": self.level, "fabric": self.fabric}
        for key in (*_PLAIN_TERMS,):
            if key in self.terms:
                out[key] = float(self.terms[key])
        if "net_latency_us" in self.terms:
            out["net_latency_s"] = _quantity(self.terms["net_latency_us"] * 1e-6, "s")
        if self.measured_shape:
            own: dict[str, Any] = {
                k: float(v) for k, v in self.measured_shape.items() if k in _PLAIN_TERMS
            }
            if "net_latency_us" in self.measured_shape:
                own["net_latency_s"] = _quantity(self.measured_shape["net_latency_us"] * 1e-6, "s")
            out["measured_shape"] = own
        out.update(
            measured=list(self.measured),
            ops=list(self.ops),
            nodes=list(self.nodes),
            gpus_per_node=list(self.gpus_per_node),
            min_bytes=f"{int(self.min_bytes)}B",
            max_bytes=f"{int(self.max_bytes)}B",
            points=int(self.points),
            **(
                {"rms_rel_error": float(self.rms_rel_error)}
                if math.isfinite(self.rms_rel_error)
                else {}
            ),
            source=self.written_source
            or f"fitted (robust least squares on log time) to {self.points} measured points "
            f"from {source}"
            + self._kept_note(),
        )
        return out


def _fabric_from_entry(e: dict[str, Any]) -> FabricFit:
    from costmodel.units import parse_duration

    terms = {k: float(e[k]) for k in _PLAIN_TERMS if k in e}
    if "net_latency_s" in e:
        terms["net_latency_us"] = _number(e["net_latency_s"], parse_duration, "net_latency_s") * 1e6
    shape = dict(e.get("measured_shape", {}) or {})
    own = {k: float(shape[k]) for k in _PLAIN_TERMS if k in shape}
    if "net_latency_s" in shape:
        own["net_latency_us"] = (
            _number(shape["net_latency_s"], parse_duration, "measured_shape.net_latency_s") * 1e6
        )
    return FabricFit(
        level=str(e["level"]),
        fabric=str(e.get("fabric", "none")),
        terms=terms,
        measured=tuple(e.get("measured", ())),
        ops=tuple(e.get("ops", ())),
        nodes=tuple(e.get("nodes", ())),
        gpus_per_node=tuple(e.get("gpus_per_node", ())),
        min_bytes=_size(e.get("min_bytes", 0.0)),
        max_bytes=_size(e.get("max_bytes", 0.0)),
        points=int(e.get("points", 0)),
        rms_log_error=math.nan,
        rms_rel_error=float(e.get("rms_rel_error", math.nan)),
        measured_shape=own,
        written_source=str(e.get("source", "")),
    )


def _term_start(name: str, fabric: str, params: dict[str, object]) -> float:
    """The model's own value of a term (where the fit starts and the prior pulls)."""
    if name == "net_latency_us":
        table = cast("dict[str, float]", params.get("fabric_latency_us", {}) or {})
        return float(table.get(fabric, 0.0))
    if name == "duplex_efficiency":
        return float(cast("float", params.get("host_staged_duplex", 1.0)))
    if name == "nic_efficiency":
        for key in ("ring_nic_fraction", "fabric_achievable_fraction"):
            table = cast("dict[str, float]", params.get(key, {}) or {})
            if table.get(fabric):
                return float(table[fabric])
        return 1.0
    return 1.0


def _to_var(name: str, value: float) -> float:
    return value / _LATENCY_UNIT_US if name == "net_latency_us" else math.log(value)


def _from_var(name: str, var: float) -> float:
    return var * _LATENCY_UNIT_US if name == "net_latency_us" else math.exp(var)


def _shrinkage(jac: np.ndarray, r: np.ndarray, prior_sd: float) -> tuple[np.ndarray, np.ndarray]:
    r"""(information :math:`J^\top J`, prior precision :math:`(s^2/\tau^2) I`) of
    :func:`fit_fabric`'s shrinkage: ``jac`` the sensitivities of the measured log times to the
    fitted variables at the fit, ``r`` the residuals there, :math:`s^2 = \sum r_i^2 / (n - p)`
    (at least :data:`NOISE_FLOOR` squared) the whole run's scatter about the fit.

    Robust or per-term noise estimates (the median absolute residual, Huber-weighted rows, the
    scatter of the rows that identify each term) were weighed against it by leave one cluster
    out and are not kept (scripts/calibration_holdout.py ``--tried``, docs/calibration.md).
    """
    p = jac.shape[1]
    noise = max(float(r @ r) / max(r.size - p, 1), NOISE_FLOOR**2)
    return jac.T @ jac, noise / prior_sd**2 * np.eye(p)


def fit_fabric(
    segments: list[tuple[str, Segment]],
    cluster: Any,
    *,
    nvls: bool | None = None,
    collnet_enabled: bool = False,
    max_iterations: int = 40,
    terms: tuple[str, ...] | None = None,
    prior_sd: float | None = None,
) -> FabricFit:
    r"""Calibrate the fabric terms of one level on measured rows of any ops.

    Terms (:data:`ALL_FABRIC_TERMS`; how they enter the model:
    :func:`costmodel.predict.fabric_calibration_inputs`): on one node the bandwidth efficiency
    :math:`\eta` of every candidate, the latency scale :math:`\lambda` and the host-floor scale
    :math:`\phi`; across nodes also the NICs' efficiency :math:`\eta_N` (share of line rate:
    the cap and the NIC-bound ring) and the extra latency per network hop :math:`\delta`.
    ``terms`` (default :data:`FABRIC_TERMS` of the level: the ones that transfer to other ops
    and node counts, chosen by leave one cluster out) says which of them are fitted; the
    others keep the model's own value.
    They are properties of the path, not of an op, a node count or an NCCL candidate, so the
    same figures apply to other ops and other node/GPU counts of the level (the per-candidate
    multipliers of the calibration before this one did not: at another node count other
    candidates win).

    A term whose fit variable cannot move any measured point's log time by
    :data:`MEASURED_SENSITIVITY` (e.g. the NIC efficiency on rows that never reach the NIC
    bound) is not fitted and keeps the model's own value (``measured`` lists the others).

    Objective: robust (Huber, :data:`HUBER_DELTA` on log time) least squares of
    :math:`r_i = \log \hat t_i - \log t_i` plus a weak prior :data:`PRIOR_WEIGHT` towards the
    model's own values, by Levenberg-Marquardt with a forward-difference Jacobian and
    iteratively reweighted Huber weights; variables clipped to :data:`FABRIC_BOUNDS`.

    Shrinkage (what makes the terms transfer): the fitted shift
    :math:`\hat\theta - \theta_0` from the model's own values is replaced by the linearised
    posterior mean under a Gaussian prior of width :math:`\tau` (``prior_sd``, default
    :data:`PRIOR_SD`, chosen by leave one cluster out),

    .. math:: \theta = \theta_0 + (J^\top J + (s^2/\tau^2) I)^{-1} J^\top J\,(\hat\theta - \theta_0)

    with :math:`J` the sensitivities of the measured log times to the fit variables at the fit
    and :math:`s^2 = \sum r_i^2 / (n - p)` (at least :data:`NOISE_FLOOR` squared) the rows'
    scatter about it: a term identified by many rows where it matters keeps its fit, one that
    only a few sizes or a noisy run move is pulled back to the model's value. ``kept`` is the
    share of each shift kept (the diagonal of the gain); ``measured_shape`` holds the unshrunk
    fit, which predictions use on the ops and node/GPU counts the rows measured
    (:meth:`costmodel.hardware.FabricCalibration.at`: there the fit is the best estimate of
    the path). ``prior_sd=math.inf``: no shrinkage.
    Reference: Huber (1964); Marquardt (1963), SIAM J. Appl. Math. 11(2); the ridge/posterior
    mean: Hoerl & Kennard (1970), Technometrics 12(1).

    ``segments``: (op, rows of one launch shape), all one node or all several.
    """
    from costmodel.predict import fabric_calibration_inputs, fitted_params
    from costmodel.realistic import realistic_rows

    prior_sd = PRIOR_SD if prior_sd is None else float(prior_sd)
    if not prior_sd > 0:
        raise ValueError(f"prior_sd: {prior_sd} must be > 0 (math.inf: no shrinkage)")
    if not segments:
        raise ValueError("fit_fabric: no measured rows")
    m_all = np.concatenate([s.size for _, s in segments])
    t_all = np.concatenate([s.time_s for _, s in segments])
    if m_all.size < 2 or np.unique(m_all).size < 2:
        raise ValueError(f"need at least 2 distinct sizes to calibrate, got {m_all.size}")
    if not np.all(np.isfinite(t_all)) or np.any(t_all <= 0):
        raise ValueError("time_s: must be finite and > 0 at every point")
    log_t = np.log(t_all)
    multi = {s.nodes > 1 for _, s in segments}
    if len(multi) > 1:
        raise ValueError("fit_fabric: segments mix one node and several nodes; fit each level")
    level = "inter" if multi.pop() else "intra"
    fabric = str(cluster.fabric) if level == "inter" else "none"
    base = fitted_params()
    names = list(FABRIC_TERMS[level] if terms is None else terms)
    unknown = sorted(set(names) - set(ALL_FABRIC_TERMS[level]))
    if unknown:
        raise ValueError(
            f"terms: {unknown} not fitted at level {level!r}; "
            f"allowed: {', '.join(ALL_FABRIC_TERMS[level])}"
        )
    start = np.array([_to_var(k, _term_start(k, fabric, base)) for k in names])
    lo = np.array([_to_var(k, max(FABRIC_BOUNDS[k][0], 1e-12)) for k in names])
    hi = np.array([_to_var(k, FABRIC_BOUNDS[k][1]) for k in names])
    lo = np.where(np.array(names) == "net_latency_us", 0.0, lo)
    start = np.clip(start, lo, hi)

    def terms_of(theta: np.ndarray, active: list[int]) -> dict[str, float]:
        values = start.copy()
        values[active] = theta
        return {k: _from_var(k, float(v)) for k, v in zip(names, values, strict=True)}

    def residual(theta: np.ndarray, active: list[int]) -> np.ndarray:
        params, scale = fabric_calibration_inputs(base, fabric, **terms_of(theta, active))
        times = []
        for op, s in segments:
            t, *_ = realistic_rows(
                op,
                s.size,
                s.nodes,
                s.gpus_per_node,
                cluster,
                s.algorithm,
                s.protocol,
                params=params,
                gpus_per_process=s.gpus_per_process,
                nvls=False if s.nvls_off else nvls,
                collnet_enabled=collnet_enabled,
                candidate_scale=scale,
            )
            times.append(np.asarray(t, float))
        return np.log(np.maximum(np.concatenate(times), 1e-30)) - log_t

    def jacobian(theta: np.ndarray, active: list[int], r: np.ndarray) -> np.ndarray:
        # one-sided differences that stay inside the bounds: a term fitted to its upper bound
        # (a NIC efficiency of 1) is differenced downwards, never evaluated out of range
        jac = np.empty((r.size, theta.size))
        for j in range(theta.size):
            h = 1e-4 if theta[j] + 1e-4 <= hi[active[j]] else -1e-4
            step = theta.copy()
            step[j] += h
            jac[:, j] = (residual(step, active) - r) / h
        return jac

    everything = list(range(len(names)))
    r0 = residual(start, everything)
    jac0 = jacobian(start, everything, r0)
    sensitivity = np.max(np.abs(jac0), axis=0)
    active = [j for j in everything if sensitivity[j] >= MEASURED_SENSITIVITY]
    for specific, general in CONFOUNDED:
        if specific in names and general in names:
            i, j = names.index(specific), names.index(general)
            if i in active and j in active:
                a, b = jac0[:, i], jac0[:, j]
                cos = abs(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-30)
                if cos > 0.98:
                    active.remove(j)
    theta = start[active].copy()
    center = theta.copy()

    def cost(r: np.ndarray, th: np.ndarray) -> float:
        a = np.abs(r)
        huber = np.where(a <= HUBER_DELTA, 0.5 * r**2, HUBER_DELTA * (a - 0.5 * HUBER_DELTA))
        return float(huber.sum() + 0.5 * PRIOR_WEIGHT * np.sum((th - center) ** 2))

    r = r0
    if active:
        lo_a, hi_a = lo[active], hi[active]
        c0 = cost(r, theta)
        mu = 1e-2
        for _ in range(max_iterations):
            w = np.minimum(1.0, HUBER_DELTA / np.maximum(np.abs(r), 1e-12))
            jac = jacobian(theta, active, r)
            jw = jac * w[:, None]
            g = jw.T @ r + PRIOR_WEIGHT * (theta - center)
            a = jw.T @ jac + PRIOR_WEIGHT * np.eye(theta.size)
            improved = False
            delta = np.zeros_like(theta)
            for _try in range(8):
                delta = np.linalg.solve(a + mu * np.diag(np.diag(a) + 1e-9), -g)
                cand = np.clip(theta + delta, lo_a, hi_a)
                rc = residual(cand, active)
                cc = cost(rc, cand)
                if cc < c0 - 1e-12:
                    theta, r, c0, mu, improved = cand, rc, cc, max(mu / 3, 1e-6), True
                    break
                mu *= 10
            if not improved or np.max(np.abs(delta)) < 1e-5:
                break
    kept = np.ones(len(active))
    own: dict[str, float] = {}
    if active and math.isfinite(prior_sd):
        # shrink towards the model's value by how well the rows identify each term: the
        # linearised posterior mean (J'J + s^2/tau^2 I)^-1 J'J (theta - theta_0), J the
        # sensitivities of the measured log times at the fit, s^2 their residual variance
        info, precision = _shrinkage(jacobian(theta, active, r), r, prior_sd)
        gain = np.linalg.solve(info + precision, info)
        kept = np.clip(np.diag(gain), 0.0, 1.0)
        own = terms_of(theta, active)  # the fit itself: what the run's own shape measured
        theta = np.clip(center + gain @ (theta - center), lo[active], hi[active])
    fitted = terms_of(theta, active)
    measured = tuple(names[j] for j in active)
    own = {k: v for k, v in own.items() if k in measured and not math.isclose(v, fitted[k])}
    return FabricFit(
        level=level,
        fabric=fabric,
        terms={k: fitted[k] for k in measured},
        measured=measured,
        ops=tuple(sorted({op for op, _ in segments})),
        nodes=tuple(sorted({s.nodes for _, s in segments})),
        gpus_per_node=tuple(sorted({s.gpus_per_node for _, s in segments})),
        min_bytes=float(m_all.min()),
        max_bytes=float(m_all.max()),
        points=int(m_all.size),
        rms_log_error=float(np.sqrt(np.mean(r**2))),
        # r = ln t_pred - ln t_meas, so the busbw error t_meas / t_pred - 1 is exp(-r) - 1
        rms_rel_error=float(np.sqrt(np.mean(np.expm1(-r) ** 2))),
        kept={k: float(v) for k, v in zip(measured, kept, strict=True)},
        measured_shape=own,
    )
