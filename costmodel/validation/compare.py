"""Measured vs predicted collectives (DESIGN.md section 4, step 3).

:func:`compare` takes measured rows and a *predictor* callable
``predictor(op, message_bytes, ranks, nodes, algorithm=None, protocol=None) -> time_s`` (array, or
an object with ``.time_s`` such as :class:`costmodel.predict.Prediction`) and returns one row per
measurement with the predicted time and busbw and ``rel_error = busbw_pred / busbw_meas - 1``
(= measured time / predicted time - 1; uncapped above, so a prediction of 350 GB/s against 45
measured reads +678 %, not the -87 % the time error would show) with ``abs_log_ratio =
|ln(busbw_pred / busbw_meas)|`` beside it (symmetric: a factor 2 either way is 0.69). :func:`cluster_predictor` builds the predictor from a cluster preset
through :func:`costmodel.predict.predict_collective`; :func:`costmodel.validation.calibrate.
calibrated_predictor` from a fitted calibration.

:func:`compare_cluster` runs several models of :func:`costmodel.predict.predict_collective`
(``"nccl"`` and ``"textbook"`` by default) over the same rows; :func:`side_by_side` puts them in
columns. A calibrated cluster (a calibration preset with a base, :mod:`costmodel.presets`) is
just a cluster here: its ``"nccl"`` column uses the fits where they cover the op.
:func:`predict_ddp` predicts measured DDP steps with :func:`costmodel.ddp.ddp_step` (compute =
the measured no-communication step time; bucket all-reduces from a predictor), and
:func:`write_report` shows them with their timelines.

>>> import pandas as pd
>>> rows = pd.DataFrame({"op": ["all_reduce"] * 2, "size_bytes": [1e6, 4e6], "ranks": [2, 2],
...                      "time_s": [1e-3, 4.4e-3]})
>>> out = compare(rows, lambda op, m, n, nodes, **kw: m / 1e9)
>>> out.rel_error.round(3).tolist()
[0.0, 0.1]
"""

from __future__ import annotations

import html
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from costmodel._checks import must_be
from costmodel._limits import MAX_MESSAGE_BYTES
from costmodel.atomic import write_text_atomic
from costmodel.tables import BUSBW_FACTOR

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SIZE_BANDS",
    "FIDELITY_MEDIAN_ALL",
    "FIDELITY_MEDIAN_FROM_1MIB",
    "REGIME_GOALS",
    "comparison_regimes",
    "busbw_rel_error",
    "cluster_predictor",
    "compare",
    "detect_cluster",
    "VERDICTS",
    "combine_outcomes",
    "fidelity_check",
    "fidelity_goals",
    "fidelity_verdict",
    "notes_text",
    "one_note",
    "median_error_lines",
    "preset_mismatch",
    "time_rel_error",
    "torch_first_bucket_bytes",
    "compare_cluster",
    "CPU_REGIME_NOTE",
    "cpu_regime_note",
    "nvls_off_rows",
    "reduction_note",
    "predict_ddp",
    "shared_ddp_compute",
    "DDP_COLUMNS",
    "ddp_columns",
    "side_by_side",
    "summarize",
    "write_report",
]

# PyTorch DDP: the first bucket is capped at 1 MiB only when bucket_cap_mb is left at its default
# (torch 2.13 torch/nn/parallel/distributed.py, _BucketConfig: first_bucket_bytes_cap =
# dist._DEFAULT_FIRST_BUCKET_BYTES (1024 * 1024) if bucket_cap_mb is None else bucket_bytes_cap)
_FIRST_BUCKET_BYTES = 2**20
#: Fidelity goal of docs/fidelity.md (high-trust runs): median |busbw error| <= 8 % from 1 MiB up
#: and <= 20 % over all sizes. ``validate compare`` checks it when no --tolerance is given.
FIDELITY_MEDIAN_FROM_1MIB = 0.08
FIDELITY_MEDIAN_ALL = 0.20
#: The docs/fidelity.md goal from 1 MiB up per regime (:func:`costmodel.uncertainty.regime`):
#: 8 % on one NVSwitch node and over InfiniBand, 15 % over cloud fabrics and Slingshot; over all
#: sizes 20 % in each. One node over PCIe and the fabrics not listed have none.
#: scripts/fit_corrections.py holds its grouped-CV table to the same goals.
REGIME_GOALS: dict[str, float] = {
    "single-node-nvlink": FIDELITY_MEDIAN_FROM_1MIB,
    "multi-node-infiniband": FIDELITY_MEDIAN_FROM_1MIB,
    "multi-node-cloud": 0.15,
    "multi-node-slingshot": 0.15,
}
# gloo on CPU: communication threads compete with compute for the cores, no overlap measurable
# (docs/design.md, machine notes, "DDP on CPU"): backward stalls while an all-reduce runs
_CPU_COMM_CONTENTION = 1.0

# (label, lower bound [B]) of the size bands summaries use
SIZE_BANDS: tuple[tuple[str, float], ...] = (
    ("< 64 KiB", 0.0),
    ("64 KiB - 1 MiB", 2.0**16),
    ("1 - 16 MiB", 2.0**20),
    ("16 - 256 MiB", 2.0**24),
    (">= 256 MiB", 2.0**28),
)
# nccl-tests doc/PERFORMANCE.md busbw factors (the one table: tables.BUSBW_FACTOR)
_BUSBW = BUSBW_FACTOR


def torch_first_bucket_bytes(bucket_cap_mb: float | None) -> float:
    """Cap of DDP's first gradient bucket [B], as torch 2.13 sets it.

    ``DistributedDataParallel(bucket_cap_mb=None)`` (the default, 25 MiB buckets) caps the first
    bucket at ``dist._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB; an explicit ``bucket_cap_mb`` makes
    the first bucket that size too (torch/nn/parallel/distributed.py, ``_BucketConfig``:
    ``first_bucket_bytes_cap = _DEFAULT_FIRST_BUCKET_BYTES if is_using_default else
    bucket_bytes_cap``; ``bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)``).
    """
    if bucket_cap_mb is None:
        return float(_FIRST_BUCKET_BYTES)
    if not (isinstance(bucket_cap_mb, int | float) and math.isfinite(bucket_cap_mb)) or (
        bucket_cap_mb <= 0
    ):
        raise must_be("bucket_cap_mb", "a finite number > 0 (MiB)", bucket_cap_mb)
    return float(int(bucket_cap_mb * 2**20))


def busbw_rel_error(measured_time_s: Any, predicted_time_s: Any) -> Any:
    r"""The harness's one prediction error, the busbw error:
    :math:`e = \mathrm{busbw_{pred}} / \mathrm{busbw_{meas}} - 1 = t_{meas} / t_{pred} - 1`
    (busbw = M / t x factor(op, N), so the factor cancels) [fraction].

    What ``rel_error`` means in every table of the harness: :func:`compare`'s rows and
    :func:`summarize`, :func:`fidelity_goals` (docs/fidelity.md's goal), ``calibrate``'s residuals
    and its fits' ``rms_rel_error``/``max_abs_rel_error``/``cv_*``, the Validate page. Uncapped
    above (a prediction 0.06x the measured time reads +1567 %), >= -1 below; the time error
    :func:`time_rel_error` of the same row reads -94 %, which hides how far off it is. Scalars,
    numpy arrays and pandas Series alike.

    >>> round(busbw_rel_error(1.0, 0.06), 4), round(busbw_rel_error(1.0, 1.25), 4)
    (15.6667, -0.2)
    """
    return measured_time_s / predicted_time_s - 1.0


def time_rel_error(measured_time_s: Any, predicted_time_s: Any) -> Any:
    r"""The time error :math:`t_{pred} / t_{meas} - 1` [fraction]: shown only where no busbw
    exists (a DDP step's ``step_time_rel_error``) and beside the busbw error as
    ``time_rel_error``; never labelled plain "error" (it is bounded by -100 % below, so a
    prediction 17x too fast reads -94 %).

    >>> round(time_rel_error(1.0, 0.06), 4)
    -0.94
    """
    return predicted_time_s / measured_time_s - 1.0


def comparison_regimes(comparison: pd.DataFrame, cluster: Any) -> pd.Series:
    """The regime (:func:`costmodel.uncertainty.regime`) of each row of a comparison predicted on
    ``cluster`` (a preset's name or a :class:`~costmodel.presets.ClusterPreset`), from the row's
    node count: the regime whose goal :func:`fidelity_goals` judges the row by.

    >>> import pandas as pd
    >>> comparison_regimes(pd.DataFrame({"nodes": [1, 2]}), "aws-p5").tolist()
    ['single-node-nvlink', 'multi-node-cloud']
    """
    import pandas as pd

    from costmodel import presets
    from costmodel.uncertainty import regime

    base = presets.cluster(cluster) if isinstance(cluster, str) else cluster
    nodes = pd.to_numeric(comparison["nodes"], errors="coerce").fillna(1).astype(int)
    return nodes.map(lambda k: regime(base.fabric, base.intra_kind, int(k)))


def fidelity_goals(
    comparison: pd.DataFrame,
    *,
    from_bytes: float = 0.0,
    from_label: str | None = None,
    cluster: Any = None,
) -> list[dict[str, Any]]:
    """The checks of the fidelity goal of docs/fidelity.md on a comparison, as data: per check
    its ``check`` (the sizes it covers: "from 1 MiB", "all sizes"), ``regime`` (the regime it
    judges, None without ``cluster``), ``from_bytes`` (the smallest size it covers [B]),
    ``median_abs_rel_error`` (busbw; None without rows), ``goal`` (None: no goal for the regime),
    ``rows``, ``assessed`` (False without rows or without a goal) and ``passed`` (None without
    rows or without a goal: not assessed, never a pass).

    Median |rel_error| (busbw) from 1 MiB up <= the regime's goal (:data:`REGIME_GOALS`: 8 % on
    one NVSwitch node and over InfiniBand, 15 % over cloud fabrics and Slingshot) and over all
    sizes <= :data:`FIDELITY_MEDIAN_ALL`, per regime of the rows predicted on ``cluster`` (a
    preset's name or preset; :func:`comparison_regimes`); one node over PCIe and other fabrics
    have no goal, and their checks say so (not assessed). Without ``cluster`` the rows are
    judged by the NVSwitch/InfiniBand goal (:data:`FIDELITY_MEDIAN_FROM_1MIB`). Where the rows
    span several regimes (one node and several in one log), each regime is checked on its own
    rows and its checks are named by it. ``from_bytes`` (``validate compare --check-from``)
    leaves out the rows below it: a check it narrows is named by it (``from_label``, the bound
    as the user wrote it, e.g. "64 KiB"; default :func:`costmodel.units.format_bytes`), never
    "all sizes" over rows that are not all of them; from 1 MiB up both checks would judge the
    same rows, and only the stricter (the 1 MiB goal) is kept.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"size_bytes": [2**16, 2**20, 2**22], "rel_error": [0.3, 0.05, 0.1]})
    >>> [(g["check"], g["rows"]) for g in fidelity_goals(rows, from_bytes=2**16, from_label="64 KiB")]
    [('from 1 MiB', 2), ('from 64 KiB', 3)]
    >>> [(g["check"], g["goal"]) for g in fidelity_goals(rows, from_bytes=2**22, from_label="4 MiB")]
    [('from 4 MiB', 0.08)]
    >>> two = rows.assign(nodes=2)
    >>> [(g["regime"], g["goal"]) for g in fidelity_goals(two, cluster="aws-p5")][0]
    ('multi-node-cloud', 0.15)
    """
    from costmodel.units import format_bytes

    ok = comparison[comparison["rel_error"].notna()]
    # rows measured on CPUs (gloo) are outside the regimes the goal is set for: left out of
    # the checks (counted in ``outside_regimes``), so a gloo run is never passed or failed by
    # a GPU cluster's goal (cpu_regime_note says why, beside the verdict)
    cpu = _on_cpus(ok)
    outside = int(cpu.sum())
    ok = ok[~cpu]
    label = from_label or format_bytes(from_bytes)
    if cluster is None or "nodes" not in ok or ok.empty:
        groups: list[tuple[str | None, pd.DataFrame]] = [(None, ok)]
    else:
        regimes = comparison_regimes(ok, cluster)
        groups = [(r, ok[regimes == r]) for r in dict.fromkeys(regimes.tolist())]
    out: list[dict[str, Any]] = []
    for regime, part in groups:
        from_1mib = FIDELITY_MEDIAN_FROM_1MIB if regime is None else REGIME_GOALS.get(regime)
        own: list[dict[str, Any]] = []
        for own_label, own_bytes, goal in (
            ("from 1 MiB", float(2**20), from_1mib),
            ("all sizes", 0.0, None if from_1mib is None else FIDELITY_MEDIAN_ALL),
        ):
            bound = max(own_bytes, float(from_bytes))
            if any(g["from_bytes"] == bound for g in own):  # the same rows as the stricter goal
                continue
            rows = part[part["size_bytes"] >= bound]
            median = float(rows["rel_error"].abs().median()) if len(rows) else None
            judged = median is not None and goal is not None
            check = own_label if bound == own_bytes else f"from {label}"
            own.append(
                {
                    "check": check if len(groups) == 1 else f"{check} ({regime})",
                    "regime": regime,
                    "from_bytes": bound,
                    "median_abs_rel_error": median,
                    "goal": goal,
                    "rows": int(len(rows)),
                    "assessed": judged,
                    "passed": bool(median <= goal) if judged else None,  # type: ignore[operator]
                    "outside_regimes": outside,
                }
            )
        out += own
    return out


def _on_cpus(rows: pd.DataFrame) -> Any:
    """A boolean Series: the rows measured on CPUs (the torch job with gloo: ``device`` cpu)."""
    import pandas as pd

    if "device" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["device"].astype(str).str.strip().str.lower() == "cpu"


CPU_REGIME_NOTE = (
    "{rows} ran on CPUs (gloo): outside the model's regimes (GPU clusters over NVLink, PCIe, "
    "InfiniBand, Slingshot and cloud fabrics, where its error and the docs/fidelity.md goal "
    "are measured); on shared CPU cores gloo's times, DDP steps' included, move with whatever "
    "else runs there, so these rows are shown against the prediction, not judged by the goal"
)
"""What :func:`cpu_regime_note` says of rows measured on CPUs (``{rows}``: how many)."""


def cpu_regime_note(rows: pd.DataFrame) -> str | None:
    """One line saying rows measured on CPUs (gloo) are outside the model's regimes and left
    out of the docs/fidelity.md goal (:func:`fidelity_goals`), or None when no row ran on CPUs.
    ``validate compare`` prints it as a warning (``--json``'s ``"warnings"``), the Validate page
    as a warning box; DDP steps measured on CPUs count too (their step error is shown, never
    judged).

    >>> import pandas as pd
    >>> cpu_regime_note(pd.DataFrame({"device": ["cpu", "cpu"]})).split(":")[0]
    'the rows ran on CPUs (gloo)'
    >>> cpu_regime_note(pd.DataFrame({"device": ["cpu", "NVIDIA H100 80GB HBM3"]}))[:30]
    '1 of 2 rows ran on CPUs (gloo)'
    >>> cpu_regime_note(pd.DataFrame({"device": ["NVIDIA H100 80GB HBM3"]})) is None
    True
    """
    from costmodel.units import format_counted

    cpu = _on_cpus(rows)
    if not cpu.any():
        return None
    said = "the rows" if cpu.all() else f"{int(cpu.sum())} of {format_counted(len(rows), 'row')}"
    return CPU_REGIME_NOTE.format(rows=said)


def _reduction_kinds(rows: pd.DataFrame) -> list[tuple[str, str, bool | None, int]]:
    """(dtype, redop, NVLS allowed, rows) for each type and reduction of the rows that reduce
    (their ``dtype`` and ``redop`` columns both known, the redop not ``none``), in the log's
    order."""
    from costmodel.nccl.availability import nvls_reduction_supported

    if not {"op", "dtype", "redop"} <= set(rows.columns):
        return []
    counts: dict[tuple[str, str, bool | None], int] = {}
    for op, dtype, redop in zip(rows["op"], rows["dtype"], rows["redop"], strict=True):
        if op not in ("all_reduce", "reduce_scatter", "reduce"):
            continue
        if not isinstance(dtype, str) or not isinstance(redop, str) or redop == "none":
            continue  # nccl-tests' "none": the table reduces nothing, whatever op it is given
        key = (dtype, redop, nvls_reduction_supported(str(op), dtype, redop))
        counts[key] = counts.get(key, 0) + 1
    return [(d, r, ok, n) for (d, r, ok), n in counts.items()]


def nvls_off_rows(rows: pd.DataFrame) -> np.ndarray:
    """A boolean array: the rows whose type and reduction NCCL never runs on NVLS or NVLS tree
    (:func:`costmodel.nccl.availability.nvls_reduction_supported` is False: int8, uint8 and fp8
    reductions, float or double max, any prod or avg, ...). :func:`compare` predicts them with
    NVLS off (``nvls=False``, as NCCL_NVLS_ENABLE=0 is), so the model's candidates are ring and
    tree, as NCCL's are; the rows' other facts stay as they are. Rows with no ``dtype`` or
    ``redop`` column, or a value the rule does not know, are left as they were (False).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"op": ["all_reduce"] * 3, "dtype": ["float", "int8", "float"],
    ...                      "redop": ["sum", "sum", "max"]})
    >>> nvls_off_rows(rows).tolist()
    [False, True, True]
    """
    from costmodel.nccl.availability import nvls_reduction_supported

    if not {"op", "dtype", "redop"} <= set(rows.columns):
        return np.zeros(len(rows), dtype=bool)
    return np.array(
        [
            nvls_reduction_supported(str(op), d, r) is False
            for op, d, r in zip(rows["op"], rows["dtype"], rows["redop"], strict=True)
        ],
        dtype=bool,
    )


def reduction_note(rows: pd.DataFrame) -> str | None:
    """One line for a log whose reductions are not float sum (nccl-tests' default, what the
    model's corrections are fitted on): the model prices a reduction of any type and op alike
    (no term for the reduction's speed on int8, fp8, a max, ...), and the rows NCCL never
    runs on NVLS (:func:`nvls_off_rows`) are predicted on ring and tree. None where every
    reducing row is float sum, or the rows say no type and reduction. ``validate compare``
    prints it as a warning, the Validate page in its warning box (:func:`.logread.read_log`'s
    notices).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"op": ["all_reduce"] * 3, "dtype": ["float", "int8", "float"],
    ...                      "redop": ["sum", "sum", "max"]})
    >>> print(reduction_note(rows))
    dtype/redop: 2 of 3 reducing rows are not float sum (int8 sum, float max): the model prices every reduction as float sum (no term for the reduction's speed on another type or op); NCCL runs int8 sum, float max on ring or tree, never NVLS (ncclNvlsSupported), so those rows are predicted without NVLS
    """
    from costmodel.units import format_counted

    kinds = _reduction_kinds(rows)
    other = [(d, r, ok, n) for d, r, ok, n in kinds if (d, r) != ("float", "sum")]
    if not other:
        return None
    total = sum(n for *_, n in kinds)
    count = sum(n for *_, n in other)
    listed = ", ".join(f"{d} {r}" for d, r, _, _ in other)
    said = (
        f"dtype/redop: {count} of {format_counted(total, 'reducing row')} "
        f"{'is' if count == 1 else 'are'} not float sum "
        f"({listed}): the model prices every reduction as float sum (no term for the "
        "reduction's speed on another type or op)"
    )
    off = [f"{d} {r}" for d, r, ok, _ in other if ok is False]
    if off:
        said += (
            f"; NCCL runs {', '.join(off)} on ring or tree, never NVLS (ncclNvlsSupported), "
            "so those rows are predicted without NVLS"
        )
    return said


VERDICTS = {True: "ok", False: "FAIL", None: "NOT ASSESSED"}
"""The word a check's outcome is printed with (``validate compare``'s last line, ``"verdict"``
in its ``--json``): passed, failed, or not assessed (no rows to judge it on)."""


def fidelity_check(
    comparison: pd.DataFrame,
    *,
    from_bytes: float = 0.0,
    from_label: str | None = None,
    cluster: Any = None,
) -> tuple[bool | None, list[str]]:
    """The fidelity goal of docs/fidelity.md on a comparison: (passed, one line per check),
    the lines of :func:`fidelity_goals`. ``from_bytes``: the smallest size compared
    (``validate compare --check-from``), ``from_label`` that size as the user wrote it; a
    check it narrows is named by it; ``cluster`` (a preset or its name) picks each row's
    regime and so its goal (:func:`fidelity_goals`; a regime with no goal, one node over PCIe
    for one, is not assessed, and its line says so).

    ``passed`` is False when a check fails, else None when a check has no rows (not
    assessed: a log cut off below 1 MiB, or ``--check-from`` above every size, has no data to
    meet the goal with, and no data is not a pass), else True. Its line says so:
    ``median |busbw error| from 1 MiB: not assessed (no rows of 1 MiB or more)``.

    >>> import pandas as pd
    >>> small = pd.DataFrame({"size_bytes": [1024, 4096], "rel_error": [0.05, -0.1]})
    >>> fidelity_check(small)
    (None, ['median |busbw error| from 1 MiB: not assessed (no rows of 1 MiB or more)', \
'median |busbw error| all sizes: 7.5% (<= goal 20%, 2 rows)'])
    """
    from costmodel.units import format_counted

    lines: list[str] = []
    outcomes: list[bool | None] = []
    compared = comparison[comparison["rel_error"].notna()]
    all_cpus = len(compared) > 0 and bool(_on_cpus(compared).all())
    if all_cpus:  # every row ran on CPUs: not the goal's regime, one line for its checks
        return None, [
            "median |busbw error|: not assessed (every row ran on CPUs (gloo), outside the "
            "model's regimes)"
        ]
    for g in fidelity_goals(
        comparison, from_bytes=from_bytes, from_label=from_label, cluster=cluster
    ):
        outcomes.append(g["passed"])
        if g["goal"] is None and g["rows"]:  # a regime docs/fidelity.md sets no goal for
            lines.append(
                f"median |busbw error| {g['check']}: {g['median_abs_rel_error']:.1%} (no goal "
                f"for {g['regime']}, {format_counted(int(g['rows']), 'row')})"
            )
            continue
        if g["passed"] is None:
            if g["check"] == "from 1 MiB":
                rows = "rows of 1 MiB or more"
            elif g["check"] == "all sizes":
                rows = "rows"
            else:  # the bound the caller set left none: said, not blamed on the log
                rows = f"rows {g['check']} up"
            lines.append(f"median |busbw error| {g['check']}: not assessed (no {rows})")
            continue
        lines.append(
            f"median |busbw error| {g['check']}: {g['median_abs_rel_error']:.1%} "
            f"({'<=' if g['passed'] else '>'} goal {g['goal']:.0%}, "
            f"{format_counted(int(g['rows']), 'row')})"
        )
    return combine_outcomes(outcomes), lines


def fidelity_verdict(
    comparison: pd.DataFrame,
    *,
    from_bytes: float = 0.0,
    from_label: str | None = None,
    cluster: Any = None,
) -> tuple[bool | None, str]:
    """The docs/fidelity.md verdict of a comparison as one line, ``validate compare``'s last
    line and the Validate page's: (outcome, ``"<VERDICT>: docs/fidelity.md goal; <checks>"``),
    the outcome and checks of :func:`fidelity_check` (same arguments), the word of
    :data:`VERDICTS`.

    >>> import pandas as pd
    >>> big = pd.DataFrame({"size_bytes": [2**20, 2**21], "rel_error": [0.3, -0.2]})
    >>> fidelity_verdict(big)[1]  # doctest: +NORMALIZE_WHITESPACE
    'FAIL: docs/fidelity.md goal; median |busbw error| from 1 MiB: 25.0% (> goal 8%, 2 rows);
    median |busbw error| all sizes: 25.0% (> goal 20%, 2 rows)'
    """
    outcome, lines = fidelity_check(
        comparison, from_bytes=from_bytes, from_label=from_label, cluster=cluster
    )
    regimes = []
    if cluster is not None and "nodes" in comparison:
        ok = comparison[comparison["rel_error"].notna()]
        regimes = list(dict.fromkeys(comparison_regimes(ok[~_on_cpus(ok)], cluster).tolist()))
    if len(regimes) == 1 and regimes[0] not in REGIME_GOALS:
        goal = f"no docs/fidelity.md goal for {regimes[0]}"
    else:
        goal = "docs/fidelity.md goal" + (f" for {regimes[0]}" if len(regimes) == 1 else "")
    return outcome, f"{VERDICTS[outcome]}: {goal}; " + "; ".join(lines)


def combine_outcomes(outcomes: list[bool | None]) -> bool | None:
    """One verdict of several checks: False when any failed, else None when any was not
    assessed (or there are none), else True.

    >>> combine_outcomes([True, None]), combine_outcomes([None, False]), combine_outcomes([True])
    (None, False, True)
    """
    if any(o is False for o in outcomes):
        return False
    if not outcomes or any(o is None for o in outcomes):
        return None
    return True


def one_note(text: object, limit: int = 400) -> str:
    """An exception's text as a row's ``note``: on one line, and cut at a word (with "...")
    only past ``limit`` characters, never mid-word ("allowed algorithms h").

    >>> one_note("a  b  c")
    'a b c'
    >>> one_note("allowed algorithms here: auto, tree", limit=28)
    'allowed algorithms here:...'
    """
    line = " ".join(str(text).split())
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + "..."


def notes_text(notes: Iterable[object] | None, limit: int = 600) -> str:
    """The distinct notes of rows no prediction was made for, joined by "; " in sorted order, as
    the "no row could be predicted" refusal says them: whole notes only (the first always),
    the rest counted where they pass ``limit`` characters ("; and 2 more").

    >>> notes_text(["b", "a", "b", None])
    'a; b'
    >>> notes_text(["x" * 10, "y" * 10, "z" * 10], limit=15)
    'xxxxxxxxxx; and 2 more'
    """
    given = () if notes is None else notes
    distinct = sorted({str(n) for n in given if n is not None and str(n)})
    kept: list[str] = []
    for i, note in enumerate(distinct):
        if kept and len("; ".join([*kept, note])) > limit:
            return "; ".join(kept) + f"; and {len(distinct) - i} more"
        kept.append(note)
    return "; ".join(kept)


# GPU families as nccl-tests prints the device name (``NVIDIA H100 80GB HBM3``), most specific first
_GPU_FAMILIES = (
    "gb200",
    "gh200",
    "b200",
    "h200",
    "h100",
    "a100",
    "l40s",
    "v100",
    "2080ti",
)


def _gpu_family(text: str | None) -> str | None:
    squashed = "".join(str(text or "").lower().split()).replace("-", "")
    return next((f for f in _GPU_FAMILIES if f in squashed), None)


def _log_facts(measured: pd.DataFrame) -> dict[str, Any]:
    def first(column: str) -> Any:
        if column not in measured:
            return None
        values = measured[column].dropna()
        return values.iloc[0] if len(values) else None

    nodes, gpn = first("nodes"), first("gpus_per_node")
    return {
        "gpu": _gpu_family(first("device")),
        "device": first("device"),
        "nodes": int(nodes) if nodes is not None else None,
        "gpus_per_node": int(gpn) if gpn is not None else None,
    }


def device_mix(measured: pd.DataFrame) -> str | None:
    """What ran the rows when they ran on more than one kind of device (CPUs with gloo and a
    GPU, or two GPU models: runs appended to one results file), else None. The checks that read
    one device per file (:func:`preset_mismatch`, :func:`ran_on_cpus`) read the first row's.

    >>> import pandas as pd
    >>> device_mix(pd.DataFrame({"device": ["cpu", "NVIDIA H100 80GB HBM3", "cpu"]}))
    'the rows ran on several devices: CPUs (2 rows), h100 (1 row)'
    """
    from costmodel.units import format_counted

    if "device" not in measured:
        return None
    kinds = [
        "CPUs" if d.lower() == "cpu" else (_gpu_family(d) or d)
        for d in measured["device"].dropna().astype(str)
    ]
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    if len(counts) < 2:
        return None
    listed = ", ".join(f"{k} ({format_counted(n, 'row')})" for k, n in counts.items())
    return f"the rows ran on several devices: {listed}"


def ran_on_cpus(measured: pd.DataFrame) -> bool:
    """True when the rows were measured on CPUs (the torch job with gloo: ``device`` cpu)."""
    return str(_log_facts(measured)["device"]).lower() == "cpu"


def preset_mismatch(measured: pd.DataFrame, cluster: Any) -> str | None:
    """Why the log does not look like it ran on ``cluster`` (a preset name or a Cluster: GPU
    model from the device names, GPUs per node from the host names), or None when nothing
    contradicts it. ``validate compare`` warns with it (``--cluster`` and a ``--calibration``'s
    base cluster) and :func:`..calibrate.calibrate` checks its base cluster with it."""
    from costmodel import presets

    preset = presets.cluster(cluster)
    cluster = cluster if isinstance(cluster, str) else preset.name
    facts = _log_facts(measured)
    reasons = []
    mixed = device_mix(measured)  # the checks below read the first row's device
    if mixed:
        reasons.append(f"{mixed}; compare the rows of one device at a time")
    if ran_on_cpus(measured):  # the torch job on CPUs (gloo)
        reasons.append(
            f"the rows ran on CPUs (gloo), {cluster} is a GPU cluster; calibrate them without "
            "a base cluster (no `cluster`: the alpha-beta fits describe the rows) and compare "
            "with `calibrated_predictor`"
        )
    preset_gpu = _gpu_family(f"{preset.gpu.name} {preset.gpu.description}")
    if facts["gpu"] and preset_gpu and facts["gpu"] != preset_gpu:
        # the GPU's family and its preset's short name: the description is free text (a
        # sentence, a note) that read mid-sentence as "alps-gh200 has The Hopper GPU of ..."
        reasons.append(
            f"the log ran on {facts['device']}, {cluster} has {preset_gpu.upper()} GPUs "
            f"({preset.gpu.name})"
        )
    if facts["gpus_per_node"] and facts["gpus_per_node"] > preset.gpus_per_node:
        reasons.append(
            f"the log has {facts['gpus_per_node']} GPUs per node, {cluster} {preset.gpus_per_node}"
        )
    return "; ".join(reasons) or None


def _presets_of_family(family: str) -> list[tuple[str, Any]]:
    """``(name, Cluster)`` of every cluster preset whose GPU is of ``family``
    (:func:`_gpu_family`), in :func:`costmodel.presets.names` order; a preset that does not
    load is left out. The candidates of :func:`detect_cluster` and :func:`no_cluster_reason`."""
    from costmodel import presets

    out = []
    for name in presets.names("cluster"):
        try:
            preset = presets.cluster(name)
        except ValueError:
            continue
        if _gpu_family(f"{preset.gpu.name} {preset.gpu.description}") == family:
            out.append((name, preset))
    return out


def detect_cluster(measured: pd.DataFrame, source: str = "") -> str | None:
    """The cluster preset the log most likely ran on, or None when the log names no GPU.

    Candidates: presets whose GPU family matches the log's device name and whose nodes hold at
    least the log's GPUs per node. Ranked by GPUs per node equal to the log's, then by how many
    words of the preset name appear in ``source`` (the file name), then NVIDIA's DGX systems
    first, then by name.
    """

    facts = _log_facts(measured)
    if facts["gpu"] is None:
        return None
    lowered = source.lower()
    scored = []
    for name, preset in _presets_of_family(facts["gpu"]):
        try:
            if preset_mismatch(measured, name) is not None:
                continue
        except ValueError:
            continue
        exact = facts["gpus_per_node"] == preset.gpus_per_node
        words = sum(1 for w in name.split("-") if len(w) > 2 and w in lowered)
        # then NVIDIA's reference systems (dgx-*) before a cloud's variant of the same node
        scored.append((-int(exact), -words, not name.startswith("dgx"), name))
    return min(scored)[-1] if scored else None


def no_cluster_reason(measured: pd.DataFrame) -> str:
    """Why :func:`detect_cluster` names no preset for ``measured``, in words for the refusal
    that asks for one (``validate compare`` without ``--cluster``): the rows name no device, a
    GPU no preset has, or more GPUs per node than every preset of their GPU holds (it said "the
    rows name no GPU a preset has" of 16 H100s on one host).

    >>> import pandas as pd
    >>> no_cluster_reason(pd.DataFrame({"device": [None]}))
    'the rows name no GPU (the log lists no devices)'
    """

    facts = _log_facts(measured)
    if facts["device"] is None:
        return "the rows name no GPU (the log lists no devices)"
    if facts["gpu"] is None:
        return f"no preset has the rows' GPU ({facts['device']})"
    sizes = [(preset.gpus_per_node, name) for name, preset in _presets_of_family(facts["gpu"])]
    gpn = facts["gpus_per_node"]
    if sizes and gpn and gpn > max(sizes)[0]:  # named as detect_cluster ranks: DGX first
        _, _, most, name = min((-g, not n.startswith("dgx"), g, n) for g, n in sizes)
        return (
            f"the log has {gpn} GPUs per node ({facts['device']}); the presets of that GPU "
            f"hold at most {most} ({name})"
        )
    return f"no preset fits the rows ({facts['device']})"


def size_band(message_bytes: Any) -> np.ndarray:
    """Label of the size band of each size.

    >>> size_band([1000, 2**20, 2**30]).tolist()
    ['< 64 KiB', '1 - 16 MiB', '>= 256 MiB']
    """
    m = np.asarray(message_bytes, dtype=float)
    bounds = np.array([b for _, b in SIZE_BANDS])
    labels = np.array([label for label, _ in SIZE_BANDS], dtype=object)
    return labels[np.searchsorted(bounds, m, side="right") - 1]


def cluster_predictor(cluster: Any, model: str = "nccl") -> Callable[..., Any]:
    """Predictor from a cluster preset name or Cluster via costmodel.predict.predict_collective."""
    from costmodel.predict import predict_collective

    def predictor(
        op: str,
        message_bytes: Any,
        ranks: int,
        nodes: int = 1,
        algorithm: str | None = None,
        protocol: str | None = None,
        gpus_per_process: int = 1,
        nvls: bool | None = None,
        collnet_enabled: bool = False,
        harness: str = "nccl-tests",
    ) -> Any:
        if int(ranks) >= int(nodes) > 0 and int(ranks) % int(nodes):
            # the prediction puts the same GPUs on every node: 9 ranks on 2 nodes would be
            # predicted on 2 x 4 = 8 GPUs, so the row is left unpredicted with this note
            raise ValueError(
                f"nodes: {int(ranks)} ranks do not split evenly over {int(nodes)} nodes (the "
                "prediction puts the same GPUs on every node); set the nodes or GPUs per node"
            )
        gpus = max(1, int(ranks) // max(1, int(nodes)))
        kwargs: dict[str, Any] = {
            "nodes": int(nodes),
            "gpus_per_node": gpus,
            "model": model,
            "gpus_per_process": max(1, min(int(gpus_per_process), gpus)),
            "nvls": nvls,
            "collnet_enabled": bool(collnet_enabled),
            "harness": harness,
        }
        if algorithm:
            kwargs["algorithm"] = algorithm
        if protocol:
            kwargs["protocol"] = protocol
        return predict_collective(op, np.asarray(message_bytes, float), cluster, **kwargs)

    def nodes_for(ranks: float) -> int:
        """Nodes of ``cluster`` that ``ranks`` GPUs fill (a log that does not say its nodes)."""
        from costmodel import presets

        per_node = presets.cluster(cluster).gpus_per_node
        return max(1, math.ceil(float(ranks) / per_node))

    predictor.model_name = model  # type: ignore[attr-defined]
    predictor.nodes_for = nodes_for  # type: ignore[attr-defined]
    return predictor


def compare_cluster(
    measured: pd.DataFrame,
    cluster: Any,
    *,
    models: tuple[str, ...] = ("nccl", "textbook"),
    use_algorithm: bool = True,
) -> pd.DataFrame:
    """:func:`compare` once per model of ``predict_collective`` on ``cluster``, stacked (long).

    Rows keep the ``model`` column; :func:`side_by_side` makes one row per measurement.
    """
    import pandas as pd

    parts = [
        compare(measured, cluster_predictor(cluster, model=m), model=m, use_algorithm=use_algorithm)
        for m in models
    ]
    return pd.concat(parts, ignore_index=True)


def side_by_side(comparison: pd.DataFrame) -> pd.DataFrame:
    """One row per measurement, per model ``predicted_time_s[<model>]``, ``rel_error[<model>]``,
    ``predicted_busbw_bytes_per_s[<model>]`` and ``predicted_algorithm[<model>]``."""
    models = list(dict.fromkeys(comparison["model"]))
    per_model = [comparison[comparison.model == m].reset_index(drop=True) for m in models]
    first = per_model[0]
    keep = [
        c
        for c in (
            "op",
            "size_bytes",
            "ranks",
            "nodes",
            "placement",
            "algo_env",
            "proto_env",
            "time_s",
            "measured_busbw_bytes_per_s",
            "size_band",
        )
        if c in first
    ]
    out = first[keep].copy()
    for m, part in zip(models, per_model, strict=True):
        if len(part) != len(out):
            raise ValueError(
                f"model {m!r} has {len(part)} rows, {models[0]!r} {len(out)}: "
                "side_by_side needs one compare() of the same rows per model"
            )
        for col in (
            "predicted_time_s",
            "rel_error",
            "predicted_busbw_bytes_per_s",
            "predicted_algorithm",
        ):
            out[f"{col}[{m}]"] = part[col].to_numpy()
    return out


def _times(result: Any) -> tuple[np.ndarray, Any]:
    if hasattr(result, "time_s"):
        return np.asarray(result.time_s, float), getattr(result, "algorithm", None)
    return np.asarray(result, float), None


def compare(
    measured: pd.DataFrame,
    predictor: Callable[..., Any],
    *,
    model: str | None = None,
    use_algorithm: bool = True,
) -> pd.DataFrame:
    """Per measured row: predicted time and busbw, relative error, size band.

    Rows of kind ``ddp_step`` and ops the predictor cannot handle get NaN predictions and a
    ``note`` saying why (never an exception for one bad group). ``use_algorithm`` passes the
    measured NCCL_ALGO/NCCL_PROTO (when set) to the predictor. Rows whose ``nodes`` the log does
    not state (nccl-tests prints no node count without the per-rank device lines) get the nodes
    their ranks fill on the predictor's cluster (``predictor.nodes_for``, which
    :func:`cluster_predictor` provides), else 1.
    """
    import pandas as pd

    needed = {"op", "size_bytes", "ranks", "time_s"}
    missing = needed - set(measured.columns)
    if missing:
        raise ValueError(f"measured rows lack columns {sorted(missing)}; need {sorted(needed)}")
    df = measured.reset_index(drop=True).copy()
    # the log's attrs (header, runs, findings) are set aside while the rows are worked on and
    # given back at the end: pandas deep-copies a frame's attrs into every frame and column
    # derived from it, which took a fifth of a comparison
    attrs, df.attrs = df.attrs, {}
    if "kind" in df:
        df = df[df["kind"].fillna("collective") == "collective"].reset_index(drop=True)
    ranks = pd.to_numeric(df["ranks"], errors="coerce").astype(float)
    if len(df) and ranks.isna().all():  # NaN < 2 is False, but pandas' NA skipped: all() True
        raise ValueError(unknown_ranks_refusal(df, attrs))
    single = ranks < 2
    if len(df) and single.all():  # busbw = algbw x 0 at one rank: every error would be inf
        raise ValueError(ONE_RANK_REFUSAL)
    # nodes the log does not state: as many of the predictor's nodes as the ranks fill (a
    # cluster_predictor knows its preset's GPUs per node), else 1
    nodes = (
        pd.to_numeric(df["nodes"], errors="coerce")
        if "nodes" in df
        else pd.Series(math.nan, index=df.index)
    )
    nodes_for = getattr(predictor, "nodes_for", None)
    unknown = nodes.isna() & pd.to_numeric(df["ranks"], errors="coerce").notna()
    if nodes_for is not None and unknown.any():
        nodes[unknown] = [nodes_for(r) for r in df.loc[unknown, "ranks"]]
    df["nodes"] = nodes.fillna(1).astype(int)
    # GPUs per node the rows do not state: ranks // nodes, what the prediction uses, so the
    # per-row table (-o) says it (13e's runs of 2, 4 and 6 GPUs on one node left it blank)
    ranks_known = pd.to_numeric(df["ranks"], errors="coerce")
    gpn = (
        pd.to_numeric(df["gpus_per_node"], errors="coerce")
        if "gpus_per_node" in df
        else pd.Series(math.nan, index=df.index)
    )
    fill = gpn.isna() & ranks_known.notna()
    if fill.any():
        gpn = gpn.astype(object)
        gpn[fill] = (ranks_known[fill] // df.loc[fill, "nodes"]).clip(lower=1).astype(int)
        df["gpus_per_node"] = pd.to_numeric(gpn, errors="coerce").astype("Int64")
    df["predicted_time_s"] = math.nan
    df["predicted_algorithm"] = None
    df["note"] = None
    # a 0-byte row (nccl-tests prints them: count 0, NCCL returns at once) moves nothing: its
    # busbw is 0 measured and predicted, so busbw_pred / busbw_meas is undefined, and the time
    # ratio would compare NCCL's early return with a launch; a time that is not > 0 (a
    # negative number in a damaged log) or none at all (N/A, NaN) measures nothing either. Neither is compared, as the
    # fit (scripts/fit_corrections.py) and calibrate leave them out.
    size = pd.to_numeric(df["size_bytes"], errors="coerce")
    measured_time = pd.to_numeric(df["time_s"], errors="coerce")
    empty = ~(size > 0)
    untimed = ~empty & ~(np.isfinite(measured_time) & (measured_time > 0))
    df.loc[empty, "note"] = "0 B: nothing moved, busbw undefined (not compared)"
    df.loc[untimed, "note"] = "time not > 0 (not compared)"
    # no time at all (N/A in a log, null in a results row) is no time <= 0: said as what it is
    df.loc[untimed & measured_time.isna(), "note"] = "no time measured (N/A; not compared)"
    # a run on one rank (a GPU-count sweep's first run, -g 1) beside others: it moved nothing,
    # the prediction is 0 s and the error infinite, so it is not compared either (said in
    # unpredicted_note's warning, as every row left out that had bytes)
    lonely = ~(empty | untimed) & single.to_numpy()
    df.loc[lonely, "note"] = ONE_RANK_NOTE
    # a buffer larger than any the model prices (a damaged or synthetic row): left out with its
    # reason, as the rows above; passed on, the predictor refused its whole group, and a log
    # with one such row could not be compared at all
    oversize = ~(empty | untimed | lonely) & (size > MAX_MESSAGE_BYTES).to_numpy()
    df.loc[oversize, "note"] = OVERSIZE_NOTE
    algo = df["algo_env"] if "algo_env" in df else pd.Series([None] * len(df))
    proto = df["proto_env"] if "proto_env" in df else pd.Series([None] * len(df))
    # what NCCL applied to each row's op: a list per function (NCCL 2.24+'s NCCL_ALGO=
    # allreduce:tree, which vLLM exports) pins all_reduce and leaves all_gather to NCCL
    # (nccl_list_for); a value NCCL would refuse is said on its rows, which are not predicted
    from costmodel.nccl.names import nccl_list_for

    def recorded(values: pd.Series) -> list[str | None]:
        return [
            None if v is None or v is pd.NA or v != v else str(v) for v in values.astype(object)
        ]

    applied: dict[tuple[str, str | None, str | None], tuple[Any, Any, str | None]] = {}
    for op, a, p in zip(df["op"].astype(str), recorded(algo), recorded(proto), strict=True):
        if (op, a, p) not in applied:
            try:
                applied[op, a, p] = (
                    nccl_list_for(op, a, "NCCL_ALGO"),
                    nccl_list_for(op, p, "NCCL_PROTO"),
                    None,
                )
            except ValueError as exc:
                applied[op, a, p] = (None, None, one_note(exc))
    rows = [
        applied[k] for k in zip(df["op"].astype(str), recorded(algo), recorded(proto), strict=True)
    ]
    df["_algo"] = pd.Series([r[0] for r in rows], index=df.index, dtype=object)
    df["_proto"] = pd.Series([r[1] for r in rows], index=df.index, dtype=object)
    refused = np.array([r[2] is not None for r in rows], dtype=bool)
    df.loc[refused, "note"] = [r[2] for r in rows if r[2] is not None]
    # GPUs one process/thread drives (nccl-tests -g): the launch floor grows with it, so it is
    # passed to predictors that take it (costmodel.predict's launch-floor term)
    gpp = df["gpus_per_process"] if "gpus_per_process" in df else pd.Series([1] * len(df))
    df["_gpp"] = pd.to_numeric(gpp, errors="coerce").fillna(1).astype(int).to_numpy()
    # a predictor that also gives its whole prediction (calibrate.calibrated_predictor's
    # `.prediction`) is asked for it: the algorithm it chose goes into predicted_algorithm
    call = getattr(predictor, "prediction", predictor)
    takes = inspect.signature(call).parameters
    takes_gpp = "gpus_per_process" in takes
    # how the run was launched where its rows say (a bundled run's index: NCCL_NVLS_ENABLE=0,
    # CollNet on; logread.read_log fills them): passed to predictors that take them
    nvls = df["nvls"] if "nvls" in df else pd.Series([None] * len(df), index=df.index)
    df["_nvls"] = [None if pd.isna(v) else bool(v) for v in nvls.astype(object)]
    # a type and reduction NCCL does not run on NVLS (int8, fp8, float max, ...): the row runs
    # on ring or tree, so it is predicted with NVLS off (nvls_off_rows)
    df.loc[nvls_off_rows(df), "_nvls"] = False
    collnet = df["collnet"] if "collnet" in df else pd.Series([False] * len(df), index=df.index)
    df["_collnet"] = [False if pd.isna(v) else bool(v) for v in collnet.astype(object)]
    # what timed the row: the torch job (torch_bench, source "torch") times torch.distributed
    # calls, which predict_collective prices as harness "pytorch" (its per-call extra)
    source = df["source"] if "source" in df else pd.Series([None] * len(df), index=df.index)
    df["_harness"] = np.where(source.astype(object) == "torch", "pytorch", "nccl-tests")
    keys = ["op", "ranks", "nodes", "_algo", "_proto", "_gpp", "_nvls", "_collnet", "_harness"]
    for key, group in df[~(empty | untimed | lonely | oversize | refused)].groupby(
        keys, dropna=False, sort=False
    ):
        # pandas-stubs types a group key as Hashable; grouped by a list of columns it is a tuple
        op, ranks, group_nodes, a, p, g, nv, cn, harness = cast("tuple[Any, ...]", key)
        kwargs: dict[str, Any] = {}
        if "harness" in takes and harness != "nccl-tests":
            kwargs["harness"] = harness
        if "nvls" in takes and isinstance(nv, bool):
            kwargs["nvls"] = nv
        if "collnet_enabled" in takes and cn is True:
            kwargs["collnet_enabled"] = True
        if use_algorithm and isinstance(a, str):
            kwargs["algorithm"] = a
        if use_algorithm and isinstance(p, str):
            kwargs["protocol"] = p
        if takes_gpp:
            kwargs["gpus_per_process"] = int(g)
        if ranks is None or (isinstance(ranks, float) and math.isnan(ranks)):
            df.loc[group.index, "note"] = "rank count unknown"
            continue
        try:
            t, chosen = _times(
                call(op, group.size_bytes.to_numpy(float), int(ranks), int(group_nodes), **kwargs)
            )
        except (ValueError, KeyError, NotImplementedError) as exc:
            df.loc[group.index, "note"] = one_note(exc)
            continue
        df.loc[group.index, "predicted_time_s"] = np.broadcast_to(t, (len(group),))
        if chosen is not None:
            df.loc[group.index, "predicted_algorithm"] = list(
                np.broadcast_to(np.asarray(chosen, dtype=object), (len(group),))
            )
    factor = np.array(
        [
            _BUSBW.get(op, lambda n: math.nan)(float(n)) if n == n else math.nan
            for op, n in zip(df.op, df.ranks.astype(float), strict=True)
        ]
    )
    df["measured_busbw_bytes_per_s"] = df.size_bytes / df.time_s * factor
    df["predicted_busbw_bytes_per_s"] = df.size_bytes / df.predicted_time_s * factor
    # busbw_pred / busbw_meas - 1 = t_meas / t_pred - 1 (the busbw factor cancels, so ops
    # without one are compared too); uncapped above, >= -1 below; |ln ratio| is symmetric
    df["rel_error"] = busbw_rel_error(df.time_s, df.predicted_time_s)
    df["abs_log_ratio"] = np.abs(np.log(df.time_s / df.predicted_time_s))
    df["busbw_rel_error"] = df["rel_error"]
    df["time_rel_error"] = time_rel_error(df.time_s, df.predicted_time_s)
    df["size_band"] = size_band(df.size_bytes)
    # the algorithm a row ran: its pinned NCCL_ALGO (in the model's spelling, as the predicted
    # one is: a log's "### ALGO=Ring" run and NCCL's own choice of ring are one "ring" in the
    # summary, not "Ring" and "ring"), else the predicted one
    df["algorithm"] = [
        _algorithm_name(a) if isinstance(a, str) else p
        for a, p in zip(df["_algo"], df["predicted_algorithm"], strict=True)
    ]
    df["model"] = model or getattr(predictor, "model_name", "predictor")
    out = df.drop(columns=["_algo", "_proto", "_gpp", "_nvls", "_collnet", "_harness"])
    out.attrs = attrs
    return out


def _algorithm_name(pinned: str) -> str:
    """A pinned NCCL_ALGO value in the model's spelling (``"Ring"`` -> ``"ring"``,
    ``"NVLSTree"`` -> ``"nvls_tree"``); a value NCCL's names do not know is kept as written.

    >>> _algorithm_name("Ring"), _algorithm_name("COLLNETCHAIN"), _algorithm_name("Foo")
    ('ring', 'collnet_chain', 'Foo')
    """
    from costmodel.nccl.names import normalize_algorithm

    try:
        return normalize_algorithm(pinned)
    except ValueError:
        return pinned


#: the note of a 0-byte row: never compared by design (busbw undefined), so never warned of
_EMPTY_NOTE = "0 B: nothing moved, busbw undefined (not compared)"
#: why a row measured on one rank is neither compared nor fitted (compare's note, calibrate's
#: warning: one wording)
ONE_RANK_MOVES_NOTHING = "a collective on one rank moves nothing, busbw undefined"
#: the note of a row measured on one rank beside rows of more (compare leaves it out)
ONE_RANK_NOTE = f"1 rank: {ONE_RANK_MOVES_NOTHING} (not compared)"
#: the note of a row larger than the largest buffer predicted (compare leaves it out)
OVERSIZE_NOTE = "over 16 TiB (2**44 B), the largest buffer the model prices (not compared)"
#: the refusal of rows all measured on one rank (compare and calibrate)
ONE_RANK_REFUSAL = (
    "ranks: every measured row ran on 1 rank, which communicates nothing (busbw is 0 "
    "and the error infinite); allowed: 2 ranks or more (a log whose device list is "
    "cut short: give the nodes and GPUs per node)"
)

#: the refusal of rows whose rank count nothing says (a log cut off before its device list ends
#: and rows whose busbw and algbw print as 0.00, whose ratio then says nothing); they read as
#: "every row ran on 1 rank" before (2026-12-06), a guess stated as a fact
UNKNOWN_RANKS_REFUSAL = (
    "ranks: the log does not say how many ranks ran (no complete device list, and its rows "
    "print busbw and algbw as 0.00, so their ratio says nothing); give the nodes and GPUs per "
    "node"
)

#: the refusal of rows whose busbw/algbw ratio is read but fits several rank counts (near its
#: limit: all_reduce's 2 (n-1)/n is 1.984 at 128 ranks and 1.985 at 129), with no complete
#: device list; the "0.00" refusal said their rows printed nothing, which they did not
UNKNOWN_RANKS_RATIO_REFUSAL = (
    "ranks: the log does not say how many ranks ran (no complete device list, and its rows' "
    "busbw/algbw ratio fits {fits}: too close to its limit of {limit:g} ({op}) to pin one "
    "count); give the nodes and GPUs per node"
)


def unknown_ranks_refusal(rows: pd.DataFrame, attrs: Mapping[Any, Any]) -> str:
    """The refusal of rows whose rank count nothing says, in the words of its cause: rows
    whose busbw/algbw ratio is read (algbw >= 1 GB/s) but fits several counts
    (:data:`UNKNOWN_RANKS_RATIO_REFUSAL`, the counts from the parser's ``ranks_span``), else
    rows that print 0.00 (:data:`UNKNOWN_RANKS_REFUSAL`).

    >>> import pandas as pd
    >>> unknown_ranks_refusal(pd.DataFrame({"algbw_bytes_per_s": [0.0]}), {}) == (
    ...     UNKNOWN_RANKS_REFUSAL)
    True
    >>> unknown_ranks_refusal(pd.DataFrame({"op": ["all_reduce"], "algbw_bytes_per_s": [4e10]}),
    ...     {"runs": [{"op": "all_reduce", "ranks": None, "ranks_span": (127, 130)}]})[81:149]
    "rows' busbw/algbw ratio fits 127 to 130 ranks: too close to its limi"
    """
    from costmodel.tables import BUSBW_NUMERATOR

    algbw = rows["algbw_bytes_per_s"] if "algbw_bytes_per_s" in rows else None
    if algbw is None or not (algbw.astype(float) >= 1e9).any():
        return UNKNOWN_RANKS_REFUSAL
    spans = [
        (str(info.get("op")), tuple(info["ranks_span"]))
        for info in attrs.get("runs") or []
        if info.get("ranks") is None and info.get("ranks_span")
    ]
    op = spans[0][0] if spans else str(rows["op"].iloc[0]) if "op" in rows else "the op"
    found = sorted({s for _, s in spans})
    fits = (
        "; ".join(f"{lo} to {hi} ranks" if lo != hi else f"{lo} ranks" for lo, hi in found)
        if found
        else "no one count"
    )
    limit = BUSBW_NUMERATOR.get(op) or 1.0
    return UNKNOWN_RANKS_RATIO_REFUSAL.format(fits=fits, limit=limit, op=op)


def flagged_note(rows: pd.DataFrame) -> str | None:
    """One line naming the rows the measurement itself flagged (nccl-tests' data check:
    ``#wrong`` > 0, ``Out of bounds values : N FAILED``), which ``validate compare`` compares as
    measured and ``calibrate`` leaves out; None when no row is flagged.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"flagged": [True, False, True], "line": [18, 19, 20],
    ...                   "flag_reason": ["#wrong=3", None, "#wrong=1"]})
    >>> flagged_note(t)
    "2 of 3 rows flagged by the run's own data check (#wrong=3, line 18; ...): a collective that returned wrong data; compared as measured (calibrate leaves them out)"
    """
    from costmodel.units import format_counted

    if "flagged" not in rows or rows.empty:
        return None
    flagged = rows["flagged"].astype(object).fillna(False).astype(bool)
    if not flagged.any():
        return None
    first = rows[flagged].iloc[0]
    reason = first.get("flag_reason") if "flag_reason" in rows else None
    # a row's line in its log; a -J JSON file's rows have none (line 0): no line is named
    line = first["line"] if "line" in rows else math.nan
    where = f", line {int(line)}" if line == line and line >= 1 else ""
    said = f"{reason}{where}" if isinstance(reason, str) and reason else f"the first{where}"
    more = "; ..." if int(flagged.sum()) > 1 else ""
    return (
        f"{int(flagged.sum())} of {format_counted(len(rows), 'row')} flagged by the run's own "
        f"data check ({said}{more}): a collective that returned wrong data; compared as "
        "measured (calibrate leaves them out)"
    )


def unpredicted_note(comparison: pd.DataFrame) -> str | None:
    """One line naming the rows :func:`compare` could not predict (a calibration without a fit
    for their op, a rank count unknown, ...), which the summary, the median error and the
    verdict leave out; None when every row with bytes was predicted. 0-byte rows are not
    counted: they are never compared (busbw undefined).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"rel_error": [0.1, None, None], "note": [None, "no fit for x", "0 B: "
    ...                   "nothing moved, busbw undefined (not compared)"]})
    >>> unpredicted_note(t)
    '1 of 2 rows not predicted, left out of the errors and the verdict: no fit for x (1 row)'
    """
    from costmodel.units import format_counted

    if "note" not in comparison or "rel_error" not in comparison:
        return None
    notes = comparison["note"].astype(object)
    counted = notes != _EMPTY_NOTE
    missed = comparison["rel_error"].isna() & counted
    if not missed.any():
        return None
    reasons = notes[missed].fillna("no reason given").value_counts(sort=False)
    said = "; ".join(f"{note} ({format_counted(int(n), 'row')})" for note, n in reasons.items())
    return (
        f"{int(missed.sum())} of {format_counted(int(counted.sum()), 'row')} not predicted, "
        f"left out of the errors and the verdict: {said}"
    )


def summarize(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per op / algorithm / size band: points, median and max |rel_error| (busbw), median
    |log ratio|, bias (mean error).

    A stacked comparison of several models (:func:`compare_cluster`) is summarized per model too.
    """
    df = comparison[comparison.rel_error.notna()].copy()
    df["abs_error"] = df.rel_error.abs()
    df["algorithm"] = df["algorithm"].fillna("auto")
    band_order = {label: i for i, (label, _) in enumerate(SIZE_BANDS)}
    keys = ["op", "algorithm", "size_band"]
    if "model" in df and df["model"].nunique() > 1:
        keys = ["model", *keys]
    out = (
        df.groupby(keys, sort=False)
        .agg(
            points=("rel_error", "size"),
            median_abs_rel_error=("abs_error", "median"),
            max_abs_rel_error=("abs_error", "max"),
            median_abs_log_ratio=("abs_log_ratio", "median"),
            mean_rel_error=("rel_error", "mean"),
        )
        .reset_index()
    )
    out["_order"] = out.size_band.map(band_order)
    return out.sort_values([*keys[:-1], "_order"]).drop(columns="_order").reset_index(drop=True)


def exceeds(comparison: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Rows whose |rel_error| (busbw_pred / busbw_meas - 1) exceeds ``tolerance`` (a fraction
    in (0, 1000]: :data:`costmodel._limits.TOLERANCE`, the range of ``validate compare
    --tolerance``).

    >>> import pandas as pd
    >>> exceeds(pd.DataFrame({"rel_error": [0.1]}), 1e300)
    Traceback (most recent call last):
    ValueError: tolerance: must be a fraction in (0, 1000], e.g. 0.25 for 25 %, got 1e+300
    """
    from costmodel._limits import TOLERANCE

    TOLERANCE.check("tolerance", tolerance)
    return comparison[comparison.rel_error.abs() > tolerance]


# what identifies one DDP setting of one job: the rows of a setting, no_sync true and false, were
# timed by one job (attempt) on one model (params/layers/width), bucket cap and accumulation
_DDP_SETTING = (
    "source",
    "run_key",
    "config",
    "attempt",
    "backend",
    "device",
    "ranks",
    "nodes",
    "params",
    "layers",
    "width",
    "bucket_cap_mb",
    "accumulation",
)


def shared_ddp_compute(ddp_rows: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """One compute time per DDP setting: the rows and a note, None when nothing changed.

    ``validate torch --ddp`` writes the ``no_sync`` true and false rows of one setting (the
    job, model, bucket cap and accumulation: :data:`_DDP_SETTING`) with one compute time, the
    median over the no-communication steps timed beside both (``compute_iters`` counts them).
    Results files written before that timed the compute once per row, so a pair carries two
    measurements of the same compute (10 ms and 19 ms on a loaded machine) and the ``no_sync``
    step could be predicted slower than the plain one: noise, not the model. Such a pair is
    reconciled here: both rows get the median of the pair's values (of two, their mean; the
    median of the pooled samples, which the file no longer holds, lies between them), the
    recorded values kept in ``compute_time_recorded_s``, and the note says so once, with the
    first pair's values. Rows of one setting that agree (every file written since) are
    returned unchanged, and so is a frame with no such pair.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"attempt": ["a", "a"], "bucket_cap_mb": [25.0, 25.0],
    ...     "accumulation": [2, 2], "no_sync": [False, True], "compute_time_s": [0.010, 0.019]})
    >>> out, note = shared_ddp_compute(rows)
    >>> out["compute_time_s"].round(4).tolist(), out["compute_time_recorded_s"].tolist()
    ([0.0145, 0.0145], [0.01, 0.019])
    >>> note.split(";")[0]
    '1 DDP setting (no_sync and plain rows) carries two compute times, as results files written before the rows shared one compute did'
    """
    import pandas as pd

    if ddp_rows.empty or not {"compute_time_s", "no_sync"} <= set(ddp_rows.columns):
        return ddp_rows, None
    keys = [c for c in _DDP_SETTING if c in ddp_rows.columns]
    if not keys:
        return ddp_rows, None
    ids = ddp_rows[keys].astype(object).fillna("").astype(str).agg("\x1f".join, axis=1)
    compute = ddp_rows["compute_time_s"].astype(float)
    groups = compute.groupby(ids)
    spread = groups.transform("max") - groups.transform("min")
    pairs = ddp_rows["no_sync"].astype(object).fillna(False).astype(bool).groupby(ids)
    both = pairs.transform("any") & ~pairs.transform("all")  # a no_sync row and a plain one
    split = both & (spread > 0)
    if not split.any():
        return ddp_rows, None
    out = ddp_rows.copy()
    out["compute_time_recorded_s"] = compute
    median = groups.transform("median")
    out["compute_time_s"] = compute.where(~split, median)
    first = out[split].iloc[0]
    shown = compute[split & (ids == ids[split].iloc[0])]
    from costmodel.units import format_counted

    setting = (
        f"bucket {float(first['bucket_cap_mb']):g} MiB, accumulation {int(first['accumulation'])}"
        if {"bucket_cap_mb", "accumulation"} <= set(out.columns)
        else "the first"
    )
    values = " and ".join(f"{v * 1e3:.3g} ms" for v in sorted(shown))
    note = (
        f"{format_counted(int(ids[split].nunique()), 'DDP setting')} (no_sync and plain rows) "
        "carries two compute times, as results files written before the rows shared one "
        f"compute did; each pair is predicted with its median ({setting}: {values} -> "
        f"{float(first['compute_time_s']) * 1e3:.3g} ms); rerun the torch job's DDP steps for one "
        "measurement"
    )
    return pd.DataFrame(out), note


def predict_ddp(
    measured: pd.DataFrame,
    predictor: Callable[..., Any],
    *,
    comm_contention: float | None = None,
) -> pd.DataFrame:
    """Predict each measured DDP step (torch_bench ``kind == "ddp_step"`` rows) with ddp_step.

    Per row: :func:`costmodel.ddp.ddp_step` with the row's parameters (the synthetic MLP's
    tensors, ``layers`` x (``width``^2 weights, ``width`` biases), in registration order),
    gradient bytes, ``bucket_cap_mb``, ``accumulation`` and ``no_sync``; compute per micro-batch
    = the measured no-communication step time (``compute_time_s``, the same steps under
    ``no_sync``) / accumulation; each bucket's all-reduce from ``predictor`` (as for
    :func:`compare`: :func:`cluster_predictor` of a cluster or calibrated cluster, or
    :func:`costmodel.validation.calibrate.calibrated_predictor`). ``comm_contention`` (0-1, see
    ddp_step) defaults to 1 for gloo (no overlap on CPU, machine-notes.md) and 0 otherwise.

    Adds ``predicted_compute_s, predicted_comm_s, predicted_exposed_comm_s, predicted_step_s,
    step_time_rel_error`` (predicted / measured step time - 1: a step has no busbw, so its error
    is the time error, named so) and ``timeline`` (list of interval dicts) and ``note`` (why a row could
    not be predicted) and ``outside_regimes`` (True for a step measured on CPUs, gloo: outside
    the model's regimes, as :func:`cpu_regime_note` says). A results file written before the ``no_sync`` and plain rows of a
    setting shared one compute time has its pairs reconciled first
    (:func:`shared_ddp_compute`); the note saying so is in ``df.attrs["compute_note"]``
    (``validate compare`` prints it once as a warning).
    """
    from dataclasses import asdict

    from costmodel.ddp import ddp_step

    df = measured
    if "kind" in df:
        df = df[df["kind"] == "ddp_step"]
    df = df.reset_index(drop=True).copy()
    needed = {"params", "ranks", "time_s", "compute_time_s", "bucket_cap_mb", "accumulation"}
    missing = needed - set(df.columns)
    if missing:
        raise ValueError(
            f"DDP rows lack columns {sorted(missing)}; need {sorted(needed)} "
            "(the torch job's DDP steps write them: costmodel.validation.torch_bench)"
        )
    df, compute_note = shared_ddp_compute(df)
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "predicted_compute_s",
            "predicted_comm_s",
            "predicted_exposed_comm_s",
            "predicted_step_s",
            "timeline",
            "note",
        )
    }
    row: Any  # an itertuples namedtuple: its fields are the frame's columns (unknown to stubs)
    for row in df.itertuples(index=False):
        ranks, nodes = int(row.ranks), int(getattr(row, "nodes", 1) or 1)
        acc = int(row.accumulation)
        contention = comm_contention
        if contention is None:
            contention = _CPU_COMM_CONTENTION if getattr(row, "backend", "") == "gloo" else 0.0
        layers, width = getattr(row, "layers", None), getattr(row, "width", None)
        counts = (
            [float(width) ** 2, float(width)] * int(layers)
            if layers and width and layers == layers and width == width
            else None
        )
        grad = (
            float(row.gradient_bytes) / float(row.params)
            if getattr(row, "gradient_bytes", None)
            else 4.0
        )  # torch_bench: float32

        def time_fn(message_bytes, n=ranks, k=nodes):
            return _times(predictor("all_reduce", np.asarray(message_bytes, float), n, k))[0]

        try:
            step = ddp_step(
                None if counts else float(row.params),
                ranks,
                compute_time_s=float(row.compute_time_s) / acc,
                gradient_bytes_per_param=grad,
                bucket_cap_bytes=float(row.bucket_cap_mb) * 2**20,
                first_bucket_bytes=torch_first_bucket_bytes(
                    None
                    if getattr(row, "bucket_cap_default", False) is True
                    else float(row.bucket_cap_mb)
                ),
                accumulation=acc,
                no_sync=bool(getattr(row, "no_sync", True)),
                allreduce_time_fn=time_fn,
                layer_param_counts=counts,
                comm_contention=contention,
            )
        except (ValueError, KeyError, NotImplementedError) as exc:
            for k in cols:
                cols[k].append(math.nan if k not in ("timeline", "note") else None)
            cols["note"][-1] = one_note(exc)
            continue
        cols["predicted_compute_s"].append(step.compute_s)
        cols["predicted_comm_s"].append(step.comm_s)
        cols["predicted_exposed_comm_s"].append(step.exposed_comm_s)
        cols["predicted_step_s"].append(step.step_time_s)
        cols["timeline"].append([asdict(iv) for iv in step.timeline])
        cols["note"].append(None)
    for k, v in cols.items():
        df[k] = v
    # a step has no busbw: its error is the time error, named so
    df["step_time_rel_error"] = time_rel_error(df.time_s, df.predicted_step_s.astype(float))
    # a step measured on CPUs (gloo) is outside the model's regimes (cpu_regime_note): said on
    # the row itself, so every table of the steps (the report's, --json's, the page's CSV)
    # carries it, not only the warning beside them
    df["outside_regimes"] = _on_cpus(df).to_numpy(dtype=bool)
    df.attrs["compute_note"] = compute_note
    return df


def compute_faster_note(ddp: pd.DataFrame) -> str | None:
    """One line when DDP steps were measured faster than the compute :func:`predict_ddp`
    prices for them alone (``time_s < predicted_compute_s``), else None.

    A step is its compute plus the communication it does not hide (>= 0), so no error of
    the communication's prediction makes a measured step shorter than its compute: the
    compute estimate is off (a no-communication measurement slowed by warm-up or a busy
    device, a compute time given for another model or GPU). Said on every surface of the
    steps (``validate compare``'s stderr, its report and ``--json`` warnings, the Validate
    page) through :func:`ddp_notes`.

    >>> import pandas as pd
    >>> d = pd.DataFrame({"time_s": [0.010, 0.020], "predicted_compute_s": [0.014, 0.012],
    ...     "bucket_cap_mb": [25.0, 25.0], "accumulation": [1, 2]})
    >>> compute_faster_note(d)[:106]
    '1 of 2 DDP steps measured faster than its predicted compute alone (bucket_cap_mb 25, accumulation 1: 10 ms'
    """
    from costmodel.units import format_counted, format_duration

    if "predicted_compute_s" not in ddp or "time_s" not in ddp:
        return None
    compute = ddp["predicted_compute_s"].astype(float)
    measured = ddp["time_s"].astype(float)
    faster = (measured < compute).to_numpy(dtype=bool)
    if not faster.any():
        return None
    worst = int(np.argmin(np.where(faster, measured / compute, np.inf)))
    row = ddp.iloc[worst]
    setting = ", ".join(
        f"{key} {float(row[key]):g}" for key in ("bucket_cap_mb", "accumulation") if key in ddp
    )
    return (
        f"{int(faster.sum())} of {format_counted(len(ddp), 'DDP step')} measured faster than "
        f"{'its' if faster.sum() == 1 else 'their'} predicted compute alone ("
        + (f"{setting}: " if setting else "")
        + f"{format_duration(float(row['time_s']))} measured, "
        f"{format_duration(float(row['predicted_compute_s']))} of compute): a step is its "
        "compute plus the communication it does not hide, so the compute estimate is off, not "
        "the communication; measure the compute again (more steps, the device otherwise idle) "
        "or measure one GPU's compute with the compute job (costmodel.validation.compute_bench) "
        'and give it as the measured compute time (README, "Measure one GPU\'s compute")'
    )


def ddp_notes(ddp: pd.DataFrame) -> list[str]:
    """The warnings about a :func:`predict_ddp` frame's compute, for every surface that shows
    the steps: an older file's two compute times reconciled (``attrs["compute_note"]``) and
    steps measured faster than their compute (:func:`compute_faster_note`)."""
    return [n for n in (ddp.attrs.get("compute_note"), compute_faster_note(ddp)) if n]


DDP_COLUMNS = (
    "bucket_cap_mb",
    "accumulation",
    "no_sync",
    "time_s",
    "compute_time_s",
    "predicted_step_s",
    "predicted_comm_s",
    "predicted_exposed_comm_s",
    "step_time_rel_error",
    "outside_regimes",
    "note",
)
"""The columns a measured-vs-predicted DDP step is shown with (the setting, the measured times,
:func:`predict_ddp`'s predictions, ``outside_regimes`` (measured on CPUs: shown, not judged,
:func:`cpu_regime_note`) and ``note``, why a row has no prediction), in order: the
one list of :func:`write_report`'s table and ``validate compare --json``'s ``ddp_steps``
(:func:`ddp_columns`). Each left one out (the report ``note``, the JSON ``predicted_comm_s``)
for no reason: a reader of either needs both."""


def ddp_columns(ddp: pd.DataFrame) -> list[str]:
    """:data:`DDP_COLUMNS` that ``ddp`` (:func:`predict_ddp`'s frame) has, in order."""
    return [c for c in DDP_COLUMNS if c in ddp]


def ddp_summary(ddp: pd.DataFrame) -> str:
    """The DDP steps' own summary, one line (``validate compare``'s text and report, the
    Validate page): how many steps were measured and predicted, and the median and largest
    |step time error| (predicted / measured step time - 1: a step has no busbw, so the busbw
    summary by op and size band has no row for it).

    >>> import pandas as pd
    >>> ddp_summary(pd.DataFrame({"step_time_rel_error": [-0.71, -0.52, None]}))
    'DDP steps: 2 of 3 predicted; median |step time error| 61.5%, largest 71.0%'
    """
    errors = ddp["step_time_rel_error"].astype(float).dropna().abs()
    head = f"DDP steps: {len(errors)} of {len(ddp)} predicted"
    if errors.empty:
        return head
    return f"{head}; median |step time error| {errors.median():.1%}, largest {errors.max():.1%}"


#: why a comparison of DDP steps alone has no busbw summary table, chart or verdict (the
#: report's line in their place; validate compare's text prints none of them either)
DDP_ONLY_NOTE = (
    "The file holds DDP steps only: no collective was timed, so there is no busbw summary by "
    "op and size band, no busbw chart and no fidelity verdict; the steps' own summary and "
    "table are below."
)


def calibration_warnings(make: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``make()`` and the :class:`costmodel.predict.CalibrationWarning` s it raised, each once,
    in order: the warnings a calibration gives while it predicts (no term identified at a
    level, fitted on one node only, ...), for every surface to say once, in the same words,
    whether the rows were collectives (:func:`compare`) or DDP steps (:func:`predict_ddp`).
    Any other warning goes on as it came.

    >>> import warnings
    >>> from costmodel.predict import CalibrationWarning
    >>> def noisy():
    ...     warnings.warn("calibration 'c' has no fit", CalibrationWarning)
    ...     warnings.warn("calibration 'c' has no fit", CalibrationWarning)
    ...     return 1
    >>> calibration_warnings(noisy)
    (1, ["calibration 'c' has no fit"])
    """
    import warnings

    from costmodel.predict import CalibrationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibrationWarning)
        result = make()
    said: list[str] = []
    for w in caught:
        if issubclass(w.category, CalibrationWarning):
            if str(w.message) not in said:
                said.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result, said


def median_error_lines(comparison: pd.DataFrame) -> list[str]:
    """The headline of a comparison, as ``validate compare`` prints it: ``median |busbw error|
    6.8% over 64 rows``, one line per model of a stacked comparison (prefixed with its name).

    >>> import pandas as pd
    >>> median_error_lines(pd.DataFrame({"rel_error": [0.1, -0.3, None]}))
    ['median |busbw error| 20.0% over 2 rows']
    """
    from costmodel.units import format_counted

    groups: list[tuple[str, pd.DataFrame]] = [("", comparison)]
    if "model" in comparison and comparison["model"].nunique() > 1:
        groups = [(f"{m}: ", part) for m, part in comparison.groupby("model", sort=False)]
    lines = []
    for prefix, part in groups:
        errors = part["rel_error"].dropna().abs()
        if len(errors):
            lines.append(
                f"{prefix}median |busbw error| {errors.median():.1%} over "
                f"{format_counted(len(errors), 'row')}"
            )
    return lines


#: what the report's summary errors are, in the words of the Validate page's caption
_REPORT_ERROR_CAPTION = (
    "Error by op, algorithm and size band: rel_error = busbw predicted / measured - 1 (the busbw "
    "error, uncapped; = measured / predicted time - 1), as validate compare and calibrate "
    "report it; abs_log_ratio = |ln(predicted / measured)|."
)


def _error_formatters(frame: pd.DataFrame) -> dict[str, Callable[[Any], str]]:
    """Column -> formatter for the report's error columns: a percentage as ``validate
    compare`` prints it, signed (``+12.7%``) except for magnitudes (``abs``, ``rms``)."""

    def signed(v: Any) -> str:
        return "-" if v != v else f"{100 * float(v):+.1f}%"

    def magnitude(v: Any) -> str:
        return "-" if v != v else f"{100 * float(v):.1f}%"

    return {
        str(c): (magnitude if ("abs" in str(c) or "rms" in str(c)) else signed)
        for c in frame.columns
        if "rel_error" in str(c)
    }


REPORT_TITLE = "costmodel: measured vs predicted"
"""The title of :func:`write_report`'s page (``validate compare --report``), by which the
command knows an earlier report left among the logs it reads."""


def write_report(
    comparison: pd.DataFrame,
    path: str | Path,
    *,
    title: str = REPORT_TITLE,
    ddp: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Write an HTML report: summary table and plotly charts (busbw vs size, error vs size).

    ``notes``: lines shown under the headline, as ``validate compare`` prints them: what was
    assumed, the expected error beside the measured one, the verdict.

    Errors are shown as ``validate compare`` prints them: percentages (signed, unsigned for a
    magnitude such as ``median_abs_rel_error``), under the definition of the busbw error
    (:func:`busbw_rel_error`); a DDP step's ``step_time_rel_error`` is the time error, said so.
    """
    from costmodel import plots

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    several = "model" in comparison and comparison["model"].nunique() > 1
    # DDP steps alone (the torch job with --ops none --ddp): no collective row, so no busbw
    # summary (it was an empty table), chart or verdict; one line says why, in their place
    steps_only = comparison.empty and ddp is not None and not ddp.empty
    figures = (
        []
        if steps_only
        else [
            plots.validation_models_figure(comparison)
            if several
            else plots.validation_busbw_figure(comparison),
            plots.validation_error_figure(comparison, title="Busbw error vs size"),
        ]
    )
    summary = summarize(comparison)
    # pandas accepts a format string for float_format (it has for years); pandas-stubs allows
    # only a callable
    tables = [
        (f"<p>{DDP_ONLY_NOTE}</p>" if steps_only else f"<p>{_REPORT_ERROR_CAPTION}</p>")
        + "".join(f"<p><b>{line}</b></p>" for line in median_error_lines(comparison))
        + "".join(f"<p>{html.escape(line)}</p>" for line in notes)
        + (
            ""
            if steps_only
            else summary.to_html(  # type: ignore[call-overload]
                index=False,
                float_format="%.3f",
                formatters=_error_formatters(summary),
                na_rep="-",  # as the error formatters: a missing value, never 'NaN'
            )
        )
    ]
    if ddp is not None and not ddp.empty:
        figures.append(plots.validation_ddp_figure(ddp))
        shown = ddp_columns(ddp)
        tables.append(
            "<h2>DDP step: measured vs predicted</h2>"
            f"<p><b>{html.escape(ddp_summary(ddp))}</b></p>"
            "<p>step_time_rel_error = predicted / measured step time - 1 (the time error: a "
            "step has no busbw)</p>"
            # a step without a note read 'None' (pandas' na_rep skips a column of None only),
            # one not predicted 'NaN': each '-', as the error formatters say a missing value
            + ddp[shown]
            .fillna({c: "-" for c in shown if ddp[c].dtype == object})
            .to_html(  # type: ignore[call-overload]  # as above
                index=False,
                float_format="%.4g",
                formatters=_error_formatters(ddp[shown]),
                na_rep="-",
            )
        )
        if "timeline" in ddp:
            row: Any  # an itertuples namedtuple (fields: the frame's columns)
            for row in ddp[ddp["timeline"].notna()].head(6).itertuples(index=False):
                figures.append(
                    plots.ddp_timeline_figure(
                        row.timeline,
                        compute_s=row.predicted_compute_s,
                        step_time_s=row.predicted_step_s,
                        title=f"Predicted DDP step: bucket cap {row.bucket_cap_mb:g} MiB, "
                        f"accumulation {row.accumulation}, no_sync={row.no_sync} "
                        f"(measured {row.time_s * 1e3:.1f} ms, predicted "
                        f"{row.predicted_step_s * 1e3:.1f} ms)",
                    )
                )
    parts = [
        f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>",
        f"<h1>{title}</h1>",
        *tables,
    ]
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    parts.append("</body></html>")
    write_text_atomic(path, "\n".join(parts))  # temporary file + rename: never a half file
    return path
