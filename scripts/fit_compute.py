"""Fit the achievable compute efficiency (costmodel.compute) on the published single-node runs.

Data: every pure data-parallel row of ``costmodel.steps_data`` on 8 GPUs (one node) that ran
without torch.compile (the model has no compiler term; compiled rows are scored, not fitted).
Model (costmodel/compute.py): per token,

    t P = u_k [ F_lin (1 + r_lin) (1 + h0 / h + T0 / T) + rho F_att (1 + r_att) P / P_att ]

with one scale ``u_k`` per GPU family and precision (closed form for a given shape) and a shape
shared by all (``h0`` hidden saturation, ``T0`` micro-batch tokens saturation, ``rho`` attention
cost relative to matmuls), found on a grid. Candidate forms switch terms off (h0 = 0, T0 = 0,
rho = 1); grouped cross-validation leaves out one (source, GPU type) group at a time, refits
everything on the rest and scores the group. A term is kept only if it lowers the grouped median
|error|. The band of each key is the 10th-90th percentile of the held-out time ratios.

Writes costmodel/data/fitted_compute.toml (constants + CV report). Run:
    PYTHONPATH=. .venv/bin/python scripts/fit_compute.py
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel import presets  # noqa: E402
from costmodel.architecture import load_arch  # noqa: E402
from costmodel.atomic import write_text_atomic  # noqa: E402
from costmodel.compute import flops_split, recompute_extra  # noqa: E402
from costmodel.steps_data import GPU_TYPES, pure_dp_rows  # noqa: E402

OUT = ROOT / "costmodel" / "data" / "fitted_compute.toml"

H0_GRID = np.concatenate([[0.0], np.geomspace(50, 8000, 30)])
T0_GRID = np.concatenate([[0.0], np.geomspace(64, 32768, 20)])
RHO_GRID = np.geomspace(0.5, 4.0, 30)

FORMS = {
    "flat": dict(h0=False, t0=False, rho=False),
    "attention": dict(h0=False, t0=False, rho=True),
    "hidden": dict(h0=True, t0=False, rho=False),
    "hidden+attention": dict(h0=True, t0=False, rho=True),
    "hidden+attention+microbatch": dict(h0=True, t0=True, rho=True),
}


def table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The fit's inputs per row: FLOPs (with recomputation), peaks, observed time x peak."""
    if df is None:
        df = pure_dp_rows()
    rows = []
    for r in df.itertuples():
        a = load_arch(r.model)
        g = presets.load(GPU_TYPES[r.gpu_type][0])
        lin, att = flops_split(a, int(r.seq))
        rl, ra = recompute_extra(str(r.activation_checkpointing), lin, att)
        bf16 = float(g.bf16_dense_flops)
        p_lin = float(g.fp8_dense_flops) if r.precision == "fp8" else bf16
        rows.append(
            {
                "key": f"{g.architecture}-{r.precision}",
                "group": f"{r.source}/{r.gpu_type}",
                "lin": lin * (1 + rl),
                "att": att * (1 + ra) * p_lin / bf16,  # attention in bf16: time in lin-peak units
                "h": float(a.hidden),
                "tok": float(r.seq * r.micro_batch),
                "obs": p_lin / float(r.tokens_per_s_per_gpu),  # t x P_lin [FLOP]
            }
        )
    return pd.DataFrame(rows, index=df.index)


def _shape(t: pd.DataFrame, h0: float, t0: float, rho: float) -> np.ndarray:
    return (
        t.lin.to_numpy() * (1 + h0 / t.h.to_numpy() + t0 / t.tok.to_numpy())
        + rho * t.att.to_numpy()
    )


def _scales(t: pd.DataFrame, g: np.ndarray) -> dict[str, float]:
    x = g / t.obs.to_numpy()
    out = {}
    for k in t.key.unique():
        m = (t.key == k).to_numpy()
        out[k] = float(x[m].sum() / (x[m] ** 2).sum())  # min sum (u x - 1)^2
    return out


def fit(t: pd.DataFrame, form: dict[str, bool]) -> dict[str, object]:
    """Best shape on the grid (sum of squared relative errors) and the per-key scales.

    For a shape, x = g / obs; the best scale of key k is sum(x) / sum(x^2) and its sum of
    squared relative errors is n_k - sum(x)^2 / sum(x^2): evaluated for the whole grid at once.
    """
    h0s = H0_GRID if form["h0"] else np.array([0.0])
    t0s = T0_GRID if form["t0"] else np.array([0.0])
    rhos = RHO_GRID if form["rho"] else np.array([1.0])
    H, T, R = np.meshgrid(h0s, t0s, rhos, indexing="ij")  # noqa: N806
    H, T, R = H.ravel()[:, None], T.ravel()[:, None], R.ravel()[:, None]  # noqa: N806
    lin, att, obs = t.lin.to_numpy(), t.att.to_numpy(), t.obs.to_numpy()
    x = (lin * (1 + H / t.h.to_numpy() + T / t.tok.to_numpy()) + R * att) / obs
    sse = np.zeros(len(H))
    for k in t.key.unique():
        m = (t.key == k).to_numpy()
        s1, s2 = x[:, m].sum(axis=1), (x[:, m] ** 2).sum(axis=1)
        sse += m.sum() - s1**2 / s2
    i = int(np.argmin(sse))
    h0, t0, rho = float(H[i, 0]), float(T[i, 0]), float(R[i, 0])
    return {"h0": h0, "t0": t0, "rho": rho, "u": _scales(t, _shape(t, h0, t0, rho))}


def predict(t: pd.DataFrame, p: dict[str, object], fallback: float | None = None) -> np.ndarray:
    g = _shape(t, float(p["h0"]), float(p["t0"]), float(p["rho"]))  # type: ignore[arg-type]
    u: dict[str, float] = p["u"]  # type: ignore[assignment]
    pooled = fallback if fallback is not None else float(np.mean(list(u.values())))
    return g * np.array([u.get(k, pooled) for k in t.key])


def grouped_cv(t: pd.DataFrame, form: dict[str, bool]) -> pd.Series:
    """Held-out ratio predicted/observed time of every row, one (source, GPU) group out."""
    ratio = pd.Series(np.nan, index=t.index)
    for grp in t.group.unique():
        out = t.group == grp
        p = fit(t[~out], form)
        ratio[out] = predict(t[out], p) / t[out].obs.to_numpy()
    return ratio


def main() -> None:
    df = pure_dp_rows()
    one_node = df[(df.gpus == 8) & ~df["compile"]]
    t = table(one_node)
    report = {}
    for name, form in FORMS.items():
        r = grouped_cv(t, form)
        err = np.abs(1 / r - 1)  # throughput error = observed/predicted time - 1
        report[name] = {"median": float(np.median(err)), "p90": float(np.quantile(err, 0.9))}
        print(
            f"{name:32s} grouped-CV median {report[name]['median']:.4f} p90 {report[name]['p90']:.4f}"
        )
    # keep a term only if it lowers the grouped median: walk from flat, add terms greedily
    chosen = "flat"
    for name in ("attention", "hidden", "hidden+attention", "hidden+attention+microbatch"):
        if report[name]["median"] < report[chosen]["median"] - 1e-4 and set(
            k for k, v in FORMS[chosen].items() if v
        ) <= set(k for k, v in FORMS[name].items() if v):
            chosen = name
    form = FORMS[chosen]
    p = fit(t, form)
    cv = grouped_cv(t, form)
    in_sample = predict(t, p) / t.obs.to_numpy()
    u: dict[str, float] = p["u"]  # type: ignore[assignment]
    lines = [
        "# Achievable compute efficiency fitted by scripts/fit_compute.py (generated; do not edit).",
        "# t P = u F_lin (1 + h0/h + T0/T) + w F_att  per token (costmodel/compute.py); v = u h0,",
        "# m = u T0, w = u rho. Data: the 8-GPU pure-DP rows of costmodel.steps_data without",
        "# torch.compile. Band: 10th-90th percentile of observed/predicted time, grouped CV, per key.",
        f'fitted_on = "{datetime.date.today().isoformat()}"',
        f'form = "{chosen}"',
        f"rows = {len(t)}",
        f"h0 = {float(p['h0'])!r}",  # type: ignore[arg-type]
        f"t0 = {float(p['t0'])!r}",  # type: ignore[arg-type]
        f"rho = {float(p['rho'])!r}",  # type: ignore[arg-type]
        "",
    ]
    for k in sorted(u):
        m = (t.key == k).to_numpy()
        rr = 1.0 / cv[m].to_numpy()  # observed / predicted time
        lo, hi = np.quantile(rr, [0.1, 0.9]) if len(rr) > 1 else (rr[0], rr[0])
        lines += [
            f'[fit."{k}"]',
            f"u = {u[k]!r}",
            f"v = {u[k] * float(p['h0'])!r}",  # type: ignore[arg-type]
            f"m = {u[k] * float(p['t0'])!r}",  # type: ignore[arg-type]
            f"w = {u[k] * float(p['rho'])!r}",  # type: ignore[arg-type]
            f"rows = {int(m.sum())}",
            f"band_low = {float(min(lo, 1.0))!r}",
            f"band_high = {float(max(hi, 1.0))!r}",
            f"in_sample_median_abs_err = {float(np.median(np.abs(1 / in_sample[m] - 1)))!r}",
            "",
        ]
    lines.append("# grouped CV (one source/GPU-type group left out): |throughput error| per form")
    for name, rep in report.items():
        lines += [f'[cv."{name}"]', f"median = {rep['median']!r}", f"p90 = {rep['p90']!r}", ""]
    lines.append("# coefficients fitted without each (source/GPU type) group: the grouped-CV fits")
    for grp in sorted(t.group.unique()):
        pg = fit(t[t.group != grp], form)
        ug: dict[str, float] = pg["u"]  # type: ignore[assignment]
        pooled = float(np.mean(list(ug.values())))
        for k in sorted(u):
            uk = ug.get(k, pooled)
            lines += [
                f'[cv_fit."{grp}"."{k}"]',
                f"u = {uk!r}",
                f"v = {uk * float(pg['h0'])!r}",  # type: ignore[arg-type]
                f"m = {uk * float(pg['t0'])!r}",  # type: ignore[arg-type]
                f"w = {uk * float(pg['rho'])!r}",  # type: ignore[arg-type]
                "",
            ]
    lines.append("# held-out median |error| per group, chosen form")
    lines.append("[cv_groups]")
    for grp in sorted(t.group.unique()):
        m = (t.group == grp).to_numpy()
        lines.append(f'"{grp}" = {float(np.median(np.abs(1 / cv[m].to_numpy() - 1)))!r}')
    write_text_atomic(OUT, "\n".join(lines) + "\n")
    print(
        f"chosen form {chosen}: h0={p['h0']:.0f} T0={p['t0']:.0f} rho={p['rho']:.3f}; wrote {OUT}"
    )
    for k in sorted(u):
        print(f"  {k}: e_max {1 / u[k]:.3f}")


if __name__ == "__main__":
    main()
