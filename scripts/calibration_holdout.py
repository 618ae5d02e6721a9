"""Held-out error of calibration (issue 11 item 5): writes docs/calibration.md.

Usage: ``python scripts/calibration_holdout.py`` (a few CPU-minutes). For every bundled run with
at least 6 sizes (the runs of scripts/fit_corrections.py, RUNS and HELD_OUT_RUNS, out-of-place
rows, sizes > 0):

- **half split**: calibrate on the even-indexed sizes (sorted), predict the odd-indexed ones;
- **siblings**: calibrate on one run of a cluster and predict another node/GPU count of the same
  cluster (13e 2/4/6 GPUs, 15 Alps 2..128 nodes, 13a <-> 13d, 13e -> 13f).

Calibration goes the whole road a user takes: :func:`costmodel.validation.calibrate.calibrate`
(nodes and ranks given, placement out-of-place, base = the run's preset), the preset it makes
(:meth:`Calibration.to_preset`) on the cluster, and :func:`costmodel.predict.predict_collective`
with ``model="calibrated"``. Beside it: the uncalibrated ``nccl`` model and the single alpha-beta
line per group (the calibration before issue 11), on the same held-out rows. The error is the
median |busbw error| = median |t_measured / t_predicted - 1|, from 1 MiB and over all held-out
sizes. Goals: <= 5 % from 1 MiB on the other half; <= 10 % (from 1 MiB) on a sibling.
tests/test_calibration_holdout.py recomputes a subset and asserts the achieved figures.
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_spec = importlib.util.spec_from_file_location(
    "fit_corrections", ROOT / "scripts/fit_corrections.py"
)
fc = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules.setdefault("fit_corrections", fc)
_spec.loader.exec_module(fc)  # type: ignore[union-attr]

import pandas as pd  # noqa: E402

from costmodel import nccl  # noqa: E402
from costmodel.predict import predict_collective  # noqa: E402
from costmodel.presets import cluster as load_cluster  # noqa: E402
from costmodel.validation.calibrate import calibrate, fit_alpha_beta  # noqa: E402
from costmodel.validation.nccl_tests import read_nccl_tests  # noqa: E402

MIN_SIZES = 6
HALF_GOAL = 0.05
SIBLING_GOAL = 0.10
MIB = 2.0**20

# sibling pairs: (train key, test key); keys as scripts/fit_corrections.py names runs
_ALPS = [f"15/{i}" for i in range(1, 8)]  # 2..128 nodes (one level: several nodes)
SIBLINGS: tuple[tuple[str, str], ...] = (
    *((a, b) for a in ("13e/0", "13e/1", "13e/2") for b in ("13e/0", "13e/1", "13e/2") if a != b),
    *((a, b) for a in _ALPS for b in _ALPS if a != b),
    ("13a", "13d"),
    ("13d", "13a"),
    ("13e/1", "13f/3"),
    ("13e/2", "13f/6"),
)


@dataclass
class Run:
    """One run's out-of-place rows and how it was launched (fit_corrections.RunSpec)."""

    key: str
    spec: object
    op: str
    nodes: int
    gpus_per_node: int
    gpus_per_process: int
    segments: pd.DataFrame  # size_bytes, time_s, algorithm, protocol (pinned or "auto")

    @property
    def cluster(self):
        return load_cluster(self.spec.preset, nodes=self.nodes, gpus_per_node=self.gpus_per_node)


def load_runs(prefixes: tuple[str, ...] | None = None) -> dict[str, Run]:
    """Every run of RUNS + HELD_OUT_RUNS (or of those files), out-of-place, size > 0, by key."""
    out: dict[str, Run] = {}
    for spec in (*fc.RUNS, *fc.HELD_OUT_RUNS):
        if prefixes is not None and spec.prefix not in prefixes:
            continue
        (path,) = sorted(fc.DATA.glob(f"{spec.prefix}_*.txt"))
        df = read_nccl_tests(path)
        multi = df.run.nunique() > 1
        df = df[(df.placement == "out_of_place") & (df.size_bytes > 0) & ~df.flagged.astype(bool)]
        for run, r in df.groupby("run", sort=True):
            over = spec.per_run.get(int(run), {})
            ranks = spec.ranks or int(r.ranks.iloc[0])
            g = spec.gpus_per_node or ranks // (spec.nodes or 1)
            nodes = spec.nodes or ranks // g
            algo = over.get("algorithm") or (r.algo_env.iloc[0] or "auto")
            proto = r.proto_env.iloc[0] or "auto"
            key = spec.prefix + (f"/{int(run)}" if multi else "")
            rows = r[["size_bytes", "time_s"]].sort_values("size_bytes").reset_index(drop=True)
            rows["algorithm"] = nccl.normalize_algorithm(algo) if algo != "auto" else "auto"
            rows["protocol"] = nccl.normalize_protocol(proto) if proto != "auto" else "auto"
            out[key] = Run(key, spec, r.op.iloc[0], nodes, g, spec.gpus_per_process or g, rows)
    return out


def _measured_frame(run: Run, rows: pd.DataFrame) -> pd.DataFrame:
    """Rows as calibrate() takes them (pinned algorithm/protocol as NCCL_ALGO/PROTO)."""
    return pd.DataFrame(
        {
            "op": run.op,
            "size_bytes": rows.size_bytes.to_numpy(float),
            "time_s": rows.time_s.to_numpy(float),
            "ranks": run.nodes * run.gpus_per_node,
            "nodes": run.nodes,
            "gpus_per_process": run.gpus_per_process,
            "algo_env": [None if a == "auto" else a for a in rows.algorithm],
            "proto_env": [None if p == "auto" else p for p in rows.protocol],
            "placement": "out_of_place",
        }
    )


def calibrated_cluster(run: Run, rows: pd.DataFrame):
    """The run's cluster carrying a calibration fitted on ``rows`` (the user's road)."""
    cal = calibrate(
        _measured_frame(run, rows),
        name="holdout",
        source=f"bundled run {run.key}",
        base=run.spec.preset,
        nvls=run.spec.nvls,
        collnet_enabled=run.spec.collnet,
    )
    return run.cluster.model_copy(update={"calibration": cal.to_preset()})


def predict_rows(run: Run, rows: pd.DataFrame, cluster, model: str) -> np.ndarray:
    """Predicted time per row (one call per pinned algorithm/protocol)."""
    t = np.empty(len(rows))
    for (a, p), idx in rows.groupby(["algorithm", "protocol"]).groups.items():
        sel = rows.index.get_indexer(idx)
        pred = predict_collective(
            run.op,
            rows.size_bytes.to_numpy(float)[sel],
            cluster,
            nodes=run.nodes,
            gpus_per_node=run.gpus_per_node,
            algorithm=a,
            protocol=p,
            model=model,
            gpus_per_process=run.gpus_per_process,
            nvls=run.spec.nvls,
            collnet_enabled=run.spec.collnet,
        )
        t[sel] = pred.time_s
    return t


def alpha_beta_rows(run: Run, train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """The single alpha-beta line (the calibration before issue 11) fitted on ``train``."""
    n = run.nodes * run.gpus_per_node
    fit = fit_alpha_beta(run.op, train.size_bytes, n, train.time_s, "ring")
    return fit.predict(test.size_bytes.to_numpy(float), n)


def median_errors(test: pd.DataFrame, t_pred: np.ndarray) -> tuple[float, float]:
    """(median |busbw err| from 1 MiB, over all rows); nan where no rows."""
    e = np.abs(test.time_s.to_numpy(float) / t_pred - 1.0)
    big = test.size_bytes.to_numpy(float) >= MIB
    return (float(np.median(e[big])) if big.any() else math.nan, float(np.median(e)))


def half_split(run: Run) -> dict:
    """Calibrate on even-indexed sizes, predict the odd ones."""
    rows = run.segments
    train, test = rows.iloc[::2], rows.iloc[1::2]
    out = {
        "run": run.key,
        "op": run.op,
        "cluster": run.spec.preset,
        "nodes": run.nodes,
        "gpus": run.nodes * run.gpus_per_node,
        "sizes": len(rows),
    }
    out["calibrated"] = median_errors(
        test, predict_rows(run, test, calibrated_cluster(run, train), "calibrated")
    )
    out["nccl"] = median_errors(test, predict_rows(run, test, run.cluster, "nccl"))
    try:
        out["alpha_beta"] = median_errors(test, alpha_beta_rows(run, train, test))
    except ValueError:
        out["alpha_beta"] = (math.nan, math.nan)
    return out


def sibling(train_run: Run, test_run: Run, cache: dict | None = None) -> dict:
    """Calibrate on one run, predict a sibling run at another node/GPU count."""
    cache = {} if cache is None else cache
    if train_run.key not in cache:
        cache[train_run.key] = calibrated_cluster(train_run, train_run.segments)
    cal = cache[train_run.key].calibration
    c = test_run.cluster.model_copy(update={"calibration": cal})
    test = test_run.segments
    out = {
        "train": train_run.key,
        "test": test_run.key,
        "cluster": test_run.spec.preset,
        "train_gpus": train_run.nodes * train_run.gpus_per_node,
        "test_gpus": test_run.nodes * test_run.gpus_per_node,
    }
    out["calibrated"] = median_errors(test, predict_rows(test_run, test, c, "calibrated"))
    out["nccl"] = median_errors(test, predict_rows(test_run, test, test_run.cluster, "nccl"))
    return out


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def markdown(halves: list[dict], siblings: list[dict], date: str) -> str:
    def met(x: float, goal: float) -> bool:
        return not math.isnan(x) and x <= goal

    h_ok = sum(met(r["calibrated"][0], HALF_GOAL) for r in halves)
    h_old = sum(met(r["alpha_beta"][0], HALF_GOAL) for r in halves)
    h_n = sum(not math.isnan(r["calibrated"][0]) for r in halves)
    s_ok = sum(met(r["calibrated"][0], SIBLING_GOAL) for r in siblings)
    s_n = sum(not math.isnan(r["calibrated"][0]) for r in siblings)
    lines = [
        f"# Calibration: held-out error ({date})",
        "",
        "Written by `scripts/calibration_holdout.py`; regression bounds in",
        "`tests/test_calibration_holdout.py`. Calibration fits the realistic model's own",
        "candidates (bandwidth efficiency and latency scale per NCCL algorithm/protocol, and a",
        "host-floor scale; robust least squares on log time, `calibrate.fit_realistic`) and",
        'predicts with `model="calibrated"`. Error: median |busbw error| on the held-out rows',
        "(out-of-place), from 1 MiB and over all held-out sizes. Beside it the uncalibrated",
        "`nccl` model and the single alpha-beta line per group (the calibration before issue 11).",
        "",
        "| goal | achieved |",
        "|---|---|",
        f"| half split: <= 5 % from 1 MiB on the other half | {h_ok}/{h_n} runs "
        f"(alpha-beta line: {h_old}/{h_n}) |",
        f"| sibling at another node/GPU count: <= 10 % from 1 MiB | {s_ok}/{s_n} pairs |",
        "",
        "## Half split (fit on even-indexed sizes, predict the odd ones)",
        "",
        "| run | op | cluster | GPUs | sizes | calibrated >= 1 MiB | all | nccl >= 1 MiB | "
        "alpha-beta >= 1 MiB | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in halves:
        c = r["calibrated"]
        lines.append(
            f"| {r['run']} | {r['op']} | {r['cluster']} | {r['gpus']} | {r['sizes']} | "
            f"{_pct(c[0])} | {_pct(c[1])} | {_pct(r['nccl'][0])} | {_pct(r['alpha_beta'][0])} | "
            f"{'met' if met(c[0], HALF_GOAL) else ('-' if math.isnan(c[0]) else 'not met')} |"
        )
    lines += [
        "",
        "## Siblings (fit on one run, predict another node/GPU count of the same cluster)",
        "",
        "| fit on | predict | cluster | GPUs fit -> predicted | calibrated >= 1 MiB | all | "
        "nccl >= 1 MiB | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in siblings:
        c = r["calibrated"]
        lines.append(
            f"| {r['train']} | {r['test']} | {r['cluster']} | {r['train_gpus']} -> "
            f"{r['test_gpus']} | {_pct(c[0])} | {_pct(c[1])} | {_pct(r['nccl'][0])} | "
            f"{'met' if met(c[0], SIBLING_GOAL) else ('-' if math.isnan(c[0]) else 'not met')} |"
        )
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


NOTES = """## How to read it, and where the goals are not met

- Goals: <= 5 % from 1 MiB on the other half; <= 10 % on a sibling. The issue measured the
  calibration before this one (one alpha-beta line per group) at 3/10 runs and 1/15 pairs on
  its own selection; the alpha-beta column above is that line on these runs.
- Out of the fitted range the calibrated model extrapolates by its structure: the fitted
  multipliers scale each candidate's latency and bandwidth, while steps, node count, caps,
  the NCCL-like choice and protocol switches stay the model's; a candidate never chosen on a
  fitted row keeps the model's own figures (multipliers 1). A level (one node vs several) that
  was not calibrated is refused by `model="calibrated"` and warned about by `model="nccl"`
  (never a silent fall-back), so no sibling pair here crosses levels (Alps 1 node -> 2 nodes).
- Half-split misses. 02 (16 x 8 A100): on the fitted half Tree wins up to 1 GiB with fitted
  multipliers; on held-out sizes from 512 MiB Ring candidates, never chosen on the fitted half
  and so unfitted, win and are 24-28 % too fast. All-to-all (09e, 24d): the model has one
  candidate and no mid-size term for its ramp. Alps (15/x) at 32+ nodes: rows vary by up to 2x
  between neighbouring sizes (shared machine). 16c and 20 have 6 and 14 sizes: 3-7 fitted
  points for 2 x (candidates) + 1 parameters. 23b: 12 datatypes at 10-40 GiB (no datatype term).
- Sibling misses are all Alps (Slingshot, NCCL 2.23 through aws-ofi-nccl): the multipliers
  fitted at one node count belong to the candidates chosen there (Tree at 2 nodes, Ring/LL128
  at 4, Tree/Ring at 32+); at another count other candidates win, unfitted or fitted on another
  regime, and Slingshot's mid-size ramp (fitted into Tree/LL's efficiency) does not scale with
  nodes the way the model's steps do. 13e (2/4/6 GPUs, one node) meets the goal on every pair.
"""


def main() -> None:
    runs = load_runs()
    halves = [half_split(r) for r in runs.values() if len(r.segments) >= MIN_SIZES]
    cache: dict = {}
    siblings = [sibling(runs[a], runs[b], cache) for a, b in SIBLINGS if a in runs and b in runs]
    date = _dt.date.today().isoformat()
    out = ROOT / "docs" / "calibration.md"
    from costmodel.atomic import write_text_atomic

    write_text_atomic(out, markdown(halves, siblings, date))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
