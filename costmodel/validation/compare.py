"""Measured vs predicted collectives (DESIGN.md section 4, step 3).

:func:`compare` takes measured rows and a *predictor* callable
``predictor(op, message_bytes, ranks, nodes, algorithm=None, protocol=None) -> time_s`` (array, or
an object with ``.time_s`` such as :class:`costmodel.predict.Prediction`) and returns one row per
measurement with the predicted time and busbw and ``rel_error = (predicted - measured) /
measured`` (of the time). :func:`cluster_predictor` builds the predictor from a cluster preset
through :func:`costmodel.predict.predict_collective`; :func:`costmodel.validation.calibrate.
calibrated_predictor` from a fitted calibration.

>>> import pandas as pd
>>> rows = pd.DataFrame({"op": ["all_reduce"] * 2, "size_bytes": [1e6, 4e6], "ranks": [2, 2],
...                      "time_s": [1e-3, 4.4e-3]})
>>> out = compare(rows, lambda op, m, n, nodes, **kw: m / 1e9)
>>> out.rel_error.round(3).tolist()
[0.0, -0.091]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SIZE_BANDS", "cluster_predictor", "compare", "summarize", "write_report"]

# (label, lower bound [B]) of the size bands summaries use
SIZE_BANDS: tuple[tuple[str, float], ...] = (
    ("< 64 KiB", 0.0), ("64 KiB - 1 MiB", 2.0**16), ("1 - 16 MiB", 2.0**20),
    ("16 - 256 MiB", 2.0**24), (">= 256 MiB", 2.0**28),
)
# nccl-tests doc/PERFORMANCE.md busbw factors
_BUSBW = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}


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

    def predictor(op: str, message_bytes: Any, ranks: int, nodes: int = 1,
                  algorithm: str | None = None, protocol: str | None = None) -> Any:
        gpus = max(1, int(ranks) // max(1, int(nodes)))
        kwargs: dict[str, Any] = {"nodes": int(nodes), "gpus_per_node": gpus, "model": model}
        if algorithm:
            kwargs["algorithm"] = algorithm
        if protocol:
            kwargs["protocol"] = protocol
        return predict_collective(op, np.asarray(message_bytes, float), cluster, **kwargs)

    predictor.model_name = model  # type: ignore[attr-defined]
    return predictor


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
    measured NCCL_ALGO/NCCL_PROTO (when set) to the predictor.
    """
    import pandas as pd

    needed = {"op", "size_bytes", "ranks", "time_s"}
    missing = needed - set(measured.columns)
    if missing:
        raise ValueError(f"measured rows lack columns {sorted(missing)}; need {sorted(needed)}")
    df = measured.reset_index(drop=True).copy()
    if "kind" in df:
        df = df[df["kind"].fillna("collective") == "collective"].reset_index(drop=True)
    if "nodes" not in df:
        df["nodes"] = 1
    df["nodes"] = df["nodes"].fillna(1).astype(int)
    df["predicted_time_s"] = math.nan
    df["predicted_algorithm"] = None
    df["note"] = None
    algo = df["algo_env"] if "algo_env" in df else pd.Series([None] * len(df))
    proto = df["proto_env"] if "proto_env" in df else pd.Series([None] * len(df))
    df["_algo"] = algo.astype(object).where(algo.notna(), None)
    df["_proto"] = proto.astype(object).where(proto.notna(), None)
    keys = ["op", "ranks", "nodes", "_algo", "_proto"]
    for (op, ranks, nodes, a, p), group in df.groupby(keys, dropna=False, sort=False):
        kwargs = {}
        if use_algorithm and isinstance(a, str):
            kwargs["algorithm"] = a
        if use_algorithm and isinstance(p, str):
            kwargs["protocol"] = p
        if ranks is None or (isinstance(ranks, float) and math.isnan(ranks)):
            df.loc[group.index, "note"] = "rank count unknown"
            continue
        try:
            t, chosen = _times(predictor(op, group.size_bytes.to_numpy(float), int(ranks),
                                         int(nodes), **kwargs))
        except (ValueError, KeyError, NotImplementedError) as exc:
            df.loc[group.index, "note"] = " ".join(str(exc).split())[:200]
            continue
        df.loc[group.index, "predicted_time_s"] = np.broadcast_to(t, (len(group),))
        if chosen is not None:
            df.loc[group.index, "predicted_algorithm"] = list(np.broadcast_to(
                np.asarray(chosen, dtype=object), (len(group),)))
    factor = np.array([_BUSBW.get(op, lambda n: math.nan)(float(n)) if n == n else math.nan
                       for op, n in zip(df.op, df.ranks.astype(float), strict=True)])
    df["measured_busbw_bytes_per_s"] = df.size_bytes / df.time_s * factor
    df["predicted_busbw_bytes_per_s"] = df.size_bytes / df.predicted_time_s * factor
    df["rel_error"] = (df.predicted_time_s - df.time_s) / df.time_s
    df["busbw_rel_error"] = (df.predicted_busbw_bytes_per_s - df.measured_busbw_bytes_per_s) \
        / df.measured_busbw_bytes_per_s
    df["size_band"] = size_band(df.size_bytes)
    df["algorithm"] = df["_algo"].where(df["_algo"].notna(), df["predicted_algorithm"])
    df["model"] = model or getattr(predictor, "model_name", "predictor")
    return df.drop(columns=["_algo", "_proto"])


def summarize(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per op / algorithm / size band: points, median and max |rel_error|, bias (mean error)."""
    df = comparison[comparison.rel_error.notna()].copy()
    df["abs_error"] = df.rel_error.abs()
    df["algorithm"] = df["algorithm"].fillna("auto")
    band_order = {label: i for i, (label, _) in enumerate(SIZE_BANDS)}
    out = df.groupby(["op", "algorithm", "size_band"], sort=False).agg(
        points=("rel_error", "size"), median_abs_rel_error=("abs_error", "median"),
        max_abs_rel_error=("abs_error", "max"), mean_rel_error=("rel_error", "mean"),
    ).reset_index()
    out["_order"] = out.size_band.map(band_order)
    return out.sort_values(["op", "algorithm", "_order"]).drop(columns="_order").reset_index(
        drop=True)


def exceeds(comparison: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Rows whose |rel_error| exceeds ``tolerance`` (a fraction, e.g. 0.25)."""
    if not tolerance > 0:
        raise ValueError(f"tolerance={tolerance!r} must be a fraction > 0, e.g. 0.25")
    return comparison[comparison.rel_error.abs() > tolerance]


def write_report(
    comparison: pd.DataFrame, path: str | Path, *, title: str = "costmodel: measured vs predicted",
    ddp: pd.DataFrame | None = None,
) -> Path:
    """Write an HTML report: summary table and plotly charts (busbw vs size, error vs size)."""
    from costmodel import plots

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figures = [plots.validation_busbw_figure(comparison), plots.validation_error_figure(comparison)]
    if ddp is not None and not ddp.empty:
        figures.append(plots.validation_ddp_figure(ddp))
    parts = [f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>",
             f"<h1>{title}</h1>", summarize(comparison).to_html(index=False, float_format="%.3f")]
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
