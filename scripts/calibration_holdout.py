"""Held-out error of calibration: writes docs/calibration.md.

Usage: ``python scripts/calibration_holdout.py`` (a few CPU-minutes). For every bundled run with
at least 6 sizes (the runs of scripts/fit_corrections.py with timed rows, out-of-place rows,
sizes > 0):

- **half split**: calibrate on the even-indexed sizes (sorted), predict the odd-indexed ones;
- **siblings**: calibrate on one run of a cluster and predict every other run of the same
  cluster at another node count, GPU count or op (NCCL's own choice of algorithm, no pinned
  NCCL_ALGO/NCCL_PROTO), found automatically from the runs' presets; runs of a cluster preset
  that does not exist yet (:data:`EXTRA_RUNS`) join once it does. A pair across levels (one
  node -> several) is listed apart: the calibration says it does not apply there and the
  uncalibrated model answers.

Calibration goes the whole road a user takes: :func:`costmodel.validation.calibrate.calibrate`
(nodes and ranks given, placement out-of-place, base = the run's preset), the preset it makes
(:meth:`Calibration.to_preset`) on the cluster, and :func:`costmodel.predict.predict_collective`
with ``model="calibrated"``. Beside it: the uncalibrated ``nccl`` model and the single alpha-beta
line per group, on the same held-out rows. The error is the median |busbw error| = median
|t_measured / t_predicted - 1|, from 1 MiB and over all held-out sizes. Goals: <= 5 % from 1 MiB
on the other half; on siblings, <= 10 % on at least 80 % of pairs and never more than 2 points
worse than the uncalibrated model. tests/test_calibration_holdout.py recomputes a subset and
asserts the achieved figures.

``--in-sample`` prints each bundled file calibrated on itself beside the uncalibrated model
(the files whose median |busbw error| does not fall; docs/calibration.md, "A calibration on
its own run").
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import math
import sys
import warnings
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
from costmodel.validation.compare import busbw_rel_error, nvls_off_rows  # noqa: E402
from costmodel.validation.nccl_tests import read_nccl_tests  # noqa: E402

MIN_SIZES = 6
HALF_GOAL = 0.05
SIBLING_GOAL = 0.10
MIB = 2.0**20

SIBLING_WORSE = 0.02  # a calibrated sibling may be at most 2 points worse than uncalibrated
SIBLING_SHARE = 0.80  # of the applicable sibling pairs within SIBLING_GOAL


def extra_runs() -> tuple:
    """Bundled runs whose cluster preset other work adds (ALCF Polaris, 25a-d), as RunSpecs.

    Used only when the preset exists and scripts/fit_corrections.py does not list the run
    already, so the pairs join the sibling table by themselves once the preset lands.
    """
    from costmodel.presets import PresetError, names

    have = {s.prefix for s in (*fc.RUNS, *fc.HELD_OUT_RUNS)}
    try:
        ok = "polaris" in names("cluster")
    except PresetError:
        ok = False
    if not ok:
        return ()
    specs = [fc.RunSpec(p, "polaris", 4, 1) for p in ("25a", "25b", "25c", "25d")]
    return tuple(s for s in specs if s.prefix not in have and any(fc.DATA.glob(f"{s.prefix}_*")))


@dataclass
class Run:
    """One run's out-of-place rows and how it was launched (fit_corrections.RunSpec)."""

    key: str
    spec: object
    op: str
    nodes: int
    gpus_per_node: int
    gpus_per_process: int
    segments: pd.DataFrame  # size_bytes, time_s, nvls_off, algorithm, protocol (pinned or "auto")

    @property
    def cluster(self):
        return load_cluster(self.spec.preset, nodes=self.nodes, gpus_per_node=self.gpus_per_node)


def load_runs(prefixes: tuple[str, ...] | None = None) -> dict[str, Run]:
    """Every run of RUNS + HELD_OUT_RUNS (or of those files), out-of-place, size > 0, by key."""
    out: dict[str, Run] = {}
    for spec in (*fc.RUNS, *fc.HELD_OUT_RUNS, *extra_runs()):
        if prefixes is not None and spec.prefix not in prefixes:
            continue
        if getattr(spec, "busbw_only", False):  # no timed rows to calibrate on
            continue
        if getattr(spec, "torch_table", False):  # run 26: PyTorch-timed tables, not nccl-tests rows
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
            # rows NCCL never runs on NVLS (23b's int8, uint8 and fp8 sums: NCCL refuses NVLS
            # for those types), predicted with NVLS off as validate compare and
            # fit_corrections.predict_run predict them (compare.nvls_off_rows)
            r = r.assign(nvls_off=nvls_off_rows(r))
            rows = (
                r[["size_bytes", "time_s", "nvls_off"]]
                .sort_values("size_bytes")
                .reset_index(drop=True)
            )
            # the log's attrs (header, runs, findings) stay with the log: pandas deep-copies a
            # frame's attrs into every frame and column derived from it, on every access
            rows.attrs = {}
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
    off = rows["nvls_off"] if "nvls_off" in rows else pd.Series(False, index=rows.index)
    keyed = rows.assign(nvls_off=off.astype(bool))
    for (a, p, no_nvls), idx in keyed.groupby(["algorithm", "protocol", "nvls_off"]).groups.items():
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
            nvls=False if no_nvls else run.spec.nvls,
            collnet_enabled=run.spec.collnet,
        )
        t[sel] = pred.time_s
    return t


def alpha_beta_rows(run: Run, train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """The single alpha-beta line (the first calibration model) fitted on ``train``."""
    n = run.nodes * run.gpus_per_node
    fit = fit_alpha_beta(run.op, train.size_bytes, n, train.time_s, "ring")
    return fit.predict(test.size_bytes.to_numpy(float), n)


def median_errors(test: pd.DataFrame, t_pred: np.ndarray) -> tuple[float, float]:
    """(median |busbw err| from 1 MiB, over all rows); nan where no rows."""
    e = np.abs(busbw_rel_error(test.time_s.to_numpy(float), t_pred))  # compare's one error
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
    try:
        out["calibrated"] = median_errors(
            test, predict_rows(run, test, calibrated_cluster(run, train), "calibrated")
        )
    except ValueError as exc:  # no fabric terms could be fitted on the half: listed as '-'
        print(f"{run.key}: half split not calibrated: {exc}")
        out["calibrated"] = (math.nan, math.nan)
    out["nccl"] = median_errors(test, predict_rows(run, test, run.cluster, "nccl"))
    try:
        out["alpha_beta"] = median_errors(test, alpha_beta_rows(run, train, test))
    except ValueError:
        out["alpha_beta"] = (math.nan, math.nan)
    return out


def _auto(run: Run) -> bool:
    """NCCL's own choice on every row (no pinned NCCL_ALGO/NCCL_PROTO)."""
    return bool(
        (run.segments.algorithm == "auto").all() and (run.segments.protocol == "auto").all()
    )


def sibling_pairs(runs: dict[str, Run]) -> list[tuple[str, str]]:
    """(fit on, predict): ordered pairs of auto runs of one cluster preset that differ in op,
    node count or GPUs per node."""
    shape = {k: (r.op, r.nodes, r.gpus_per_node) for k, r in runs.items()}
    keys = sorted(k for k, r in runs.items() if _auto(r))
    return [
        (a, b)
        for a in keys
        for b in keys
        if a != b and runs[a].spec.preset == runs[b].spec.preset and shape[a] != shape[b]
    ]


_ACROSS_LEVELS = " only: its terms "  # predict._fabric_terms_or_warn's wording


def sibling(train_run: Run, test_run: Run, cache: dict | None = None) -> dict:
    """Calibrate on one run, predict a sibling run (another op, node or GPU count).

    ``applies`` is False where the calibration's level (one node / several) is not the sibling's:
    the prediction then warns (CalibrationWarning) and is the uncalibrated model's.
    """
    from costmodel.predict import CalibrationWarning

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
        "train_shape": f"{train_run.op} {train_run.nodes}x{train_run.gpus_per_node}",
        "test_shape": f"{test_run.op} {test_run.nodes}x{test_run.gpus_per_node}",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibrationWarning)
        try:
            out["calibrated"] = median_errors(test, predict_rows(test_run, test, c, "calibrated"))
        except ValueError as exc:  # no fabric terms fitted: the alpha-beta lines refuse
            out["calibrated"] = (math.nan, math.nan)
            warnings.warn(str(exc), CalibrationWarning, stacklevel=1)
    notes = [str(w.message) for w in caught if issubclass(w.category, CalibrationWarning)]
    # across levels the calibration does not apply; a term it did not measure (the duplex share
    # from one-way rows) is said too, but the rest applies and the pair counts
    out["applies"] = not any(_ACROSS_LEVELS in n or "no fit for" in n for n in notes)
    out["note"] = notes[0] if notes else ""
    out["nccl"] = median_errors(test, predict_rows(test_run, test, test_run.cluster, "nccl"))
    return out


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def sibling_summary(siblings: list[dict]) -> dict:
    """Counts of the applicable sibling pairs: within the goal, worse than uncalibrated."""
    rows = [r for r in siblings if r["applies"] and not math.isnan(r["calibrated"][0])]
    within = sum(r["calibrated"][0] <= SIBLING_GOAL for r in rows)
    within_nccl = sum(r["nccl"][0] <= SIBLING_GOAL for r in rows)
    worse = [r for r in rows if r["calibrated"][0] > r["nccl"][0] + SIBLING_WORSE]
    return {
        "pairs": len(rows),
        "within": within,
        "within_nccl": within_nccl,
        "share": within / len(rows) if rows else math.nan,
        "worse": len(worse),
        "worst_excess": max((r["calibrated"][0] - r["nccl"][0] for r in rows), default=math.nan),
        "not_applicable": sum(not r["applies"] for r in siblings),
    }


def markdown(halves: list[dict], siblings: list[dict], date: str, before: str = "") -> str:
    def met(x: float, goal: float) -> bool:
        return not math.isnan(x) and x <= goal

    h_ok = sum(met(r["calibrated"][0], HALF_GOAL) for r in halves)
    h_old = sum(met(r["alpha_beta"][0], HALF_GOAL) for r in halves)
    h_n = sum(not math.isnan(r["calibrated"][0]) for r in halves)
    sm = sibling_summary(siblings)
    lines = [
        f"# Calibration: held-out error ({date})",
        "",
        "Written by `scripts/calibration_holdout.py`; regression bounds in",
        "`tests/test_calibration_holdout.py`. Calibration fits the **fabric's terms** of the",
        "realistic model, one set per level (one node / several nodes) and common to every op,",
        "only those that transfer to the cluster's other ops and node counts (`FABRIC_TERMS`,",
        "chosen by leave one cluster out: below): on one node the latency scale of every",
        "candidate, the host-floor scale and, without P2P, the duplex share; across nodes the",
        "host-floor scale, the NICs' efficiency (share of line rate) and the extra latency per",
        "network hop (`calibrate.fit_fabric`; robust least squares on log time), each then",
        "shrunk towards the model's own value by how well the run identifies it (prior width",
        "`calibrate.PRIOR_SD`, chosen by leave one cluster out: below). It predicts with",
        '`model="calibrated"`. Error: median |busbw error| on the held-out rows (out-of-place),',
        "from 1 MiB and over all held-out sizes. Beside it the uncalibrated `nccl` model and the",
        "single alpha-beta line per group.",
        "",
        "| goal | achieved |",
        "|---|---|",
        f"| half split: <= 5 % from 1 MiB on the other half | {h_ok}/{h_n} runs "
        f"(alpha-beta line: {h_old}/{h_n}) |",
        f"| siblings (same cluster, other op, node or GPU count): <= 10 % from 1 MiB on >= 80 % "
        f"of pairs | {sm['within']}/{sm['pairs']} pairs ({_pct(sm['share'])}; uncalibrated "
        f"{sm['within_nccl']}/{sm['pairs']}) |",
        f"| siblings: never more than 2 points worse than uncalibrated | {sm['worse']} pairs "
        f"worse by more (largest excess {_pct(sm['worst_excess'])}) |",
        f"| siblings across levels (one node <-> several) | {sm['not_applicable']} pairs: the "
        "calibration says it does not apply (CalibrationWarning) and the uncalibrated model "
        "answers |",
        "",
    ]
    if before:
        lines += [before, ""]
    lines += [PRIOR, "", SELECTION, "", TRIED, "", IN_SAMPLE, ""]
    lines += [
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
        "## Siblings (fit on one run, predict another op, node or GPU count of the same cluster)",
        "",
        "Shapes are `op nodes x GPUs per node`. 'applies: no' marks a pair across levels.",
        "",
        "| fit on | predict | cluster | shape fit -> predicted | applies | calibrated >= 1 MiB | "
        "all | nccl >= 1 MiB | goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in siblings:
        c = r["calibrated"]
        ok = met(c[0], SIBLING_GOAL) and c[0] <= r["nccl"][0] + SIBLING_WORSE
        verdict = "-" if math.isnan(c[0]) or not r["applies"] else ("met" if ok else "not met")
        lines.append(
            f"| {r['train']} | {r['test']} | {r['cluster']} | {r['train_shape']} -> "
            f"{r['test_shape']} | {'yes' if r['applies'] else 'no'} | {_pct(c[0])} | "
            f"{_pct(c[1])} | {_pct(r['nccl'][0])} | {verdict} |"
        )
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


#: the same sibling pairs with the calibration this one replaced (per-candidate multipliers per
#: op and level, the calibration before fabric terms), measured on 2026-12-01 on this script's pairs
BEFORE = """Before (per-candidate multipliers per op and level, the same 116 same-level pairs): 37/116
within 10 % (32 %); the 62 pairs to another op were refused; of the 54 pairs to another node or
GPU count, 37 within 10 % and 7 more than 2 points worse than uncalibrated."""

#: the leave-one-cluster-out choice of the prior width (``--select-prior``, minutes of CPU),
#: measured on 2026-12-01 with calibrate.FABRIC_TERMS as shipped; calibrate.PRIOR_SD holds it
PRIOR = """## How far a term moves from the model's value (leave one cluster out)

A fitted term is shrunk towards the model's own value by how well the run identifies it:
the linearised posterior mean under a Gaussian prior of width tau (log units; tens of
microseconds for the network latency) around the model's value, with the run's own scatter
about the fit as the noise (`calibrate.fit_fabric`). A term many sizes measure where it
matters keeps nearly all of its shift (on the runs' own calibrations: the duplex share of the
host-staged all-reduce 09a 99 %, the latency scale of the B200 and H100 runs 90-96 %); one
that few sizes or a noisy run move keeps little (the host-floor scale of the H100 and B200
all-gathers 0 %, Polaris' NIC share and hop latency fitted on its 8-node all-gather 11 % and
3 %, Alps' hop latency at 64-128 nodes 25-43 %). On the ops and node/GPU counts the run
measured the whole fit applies (`FabricCalibration.measured_shape`; the half split below is
that case; no sibling pair is, so the table is the same with or without it). Each sibling
pair at one level, predicted with every width (`python scripts/calibration_holdout.py
--select-prior`; measured 2026-12-02, since the Blackwell NVSwitch hop scale: 86, 85, 86,
87, 86, 83 within 10 % on 2026-12-01, every fold choosing 0.1); for each cluster the width
with the lowest loss on the other clusters' pairs (as below) is scored on its own pairs.

| prior width (log units) | pairs | within 10 % | > 2 points worse |
|---|---|---|---|
| inf (no shrinkage) | 128 | 84 | 5 |
| 0.5 | 128 | 83 | 4 |
| 0.2 | 128 | 84 | 2 |
| 0.1 | 128 | 85 | 0 |
| 0.05 | 128 | 84 | 0 |
| 0.03 | 128 | 83 | 0 |

Leave one cluster out: 83/128 pairs within 10 %, 0 more than 2 points worse than
uncalibrated. Five folds (alcf-polaris, dgx-b200, dgx-h100, gb200-nvl72,
pcie3-2x-rtx2080ti-nop2p) choose 0.1, the width `calibrate.PRIOR_SD` ships; alps-gh200's fold
(chosen on the others) picks 0.03, which scores its own pairs lower. 0.1 is still the best
width on every cluster's pairs together (85/128), so it stays. A guard that
returns the uncalibrated model when the calibration does not fit its own run better (its rms
log error on its own rows not below the uncalibrated model's) was tried once beside it, not
in this script: the totals stay 87 within and 0 worse, so it is not shipped."""

#: the leave-one-cluster-out choice of the carried terms (``--select``, minutes of CPU),
#: measured on 2026-12-01; calibrate.FABRIC_TERMS holds the chosen sets
SELECTION = """## Which terms a calibration carries (leave one cluster out)

Each sibling pair at one level, predicted with every term set: all terms, and each one
left out (`python scripts/calibration_holdout.py --select`; measured 2026-12-01 before
`calibrate.FABRIC_TERMS` took the chosen sets, and before the shrinkage above). For each cluster the set with the lowest
loss on the other clusters' pairs (a pair costs 1 when it misses the goal, plus its excess
over the uncalibrated error) is scored on its own pairs.

| level | terms carried | pairs | within 10 % | > 2 points worse |
|---|---|---|---|---|
| intra | bandwidth_efficiency, latency_scale, host_floor_scale, duplex_efficiency | 94 | 80 | 12 |
| intra | latency_scale, host_floor_scale, duplex_efficiency | 94 | 80 | 2 |
| intra | bandwidth_efficiency, host_floor_scale, duplex_efficiency | 94 | 76 | 8 |
| intra | bandwidth_efficiency, latency_scale, duplex_efficiency | 94 | 80 | 5 |
| intra | bandwidth_efficiency, latency_scale, host_floor_scale | 94 | 73 | 17 |
| inter | bandwidth_efficiency, host_floor_scale, nic_efficiency, net_latency_us | 34 | 6 | 19 |
| inter | host_floor_scale, nic_efficiency, net_latency_us | 34 | 6 | 4 |
| inter | bandwidth_efficiency, nic_efficiency, net_latency_us | 34 | 6 | 19 |
| inter | bandwidth_efficiency, host_floor_scale, net_latency_us | 34 | 5 | 17 |
| inter | bandwidth_efficiency, host_floor_scale, nic_efficiency | 34 | 5 | 17 |

Leave one cluster out: 86/128 pairs within 10 %, 6 more than 2 points worse than uncalibrated. Chosen per fold: dgx-b200 (intra): latency_scale, host_floor_scale, duplex_efficiency; dgx-h100 (intra): latency_scale, host_floor_scale, duplex_efficiency; pcie3-2x-rtx2080ti-nop2p (intra): latency_scale, host_floor_scale, duplex_efficiency; alcf-polaris (inter): host_floor_scale, nic_efficiency, net_latency_us; alps-gh200 (inter): host_floor_scale, nic_efficiency, net_latency_us; gb200-nvl72 (inter): host_floor_scale, nic_efficiency, net_latency_us.

Every fold chooses the same sets, so the shipped choice is the one each cluster was scored
with. A second step (every set with two terms left out as well, measured the same way) is
not taken: its folds disagree (B200 keeps host floor and duplex, H100 also the latency
scale, the PCIe box the latency scale and duplex; Alps and GB200 drop the NIC efficiency,
Polaris keeps it) and left one cluster out it scores 84/128 within 10 % and 5 pairs more
than 2 points worse: one pair fewer worse, two fewer within."""

#: changes weighed against the shipped shrinkage and inter-node terms (``--tried``, tens of
#: minutes of CPU), measured on 2026-12-01; none is kept
TRIED = """## Tried, not kept (leave one cluster out)

Why the inter-node pairs miss (7/34 within 10 %; the uncalibrated model 5/34). The fit does
move the terms on its own run, and the shrinkage then takes most of it back: Polaris 2 nodes
(25a) fits a NIC share of 0.84 (the model's 0.93) and keeps 0 % of that shift, its hop
latency 1.0 us (model 2.3 us) 21 %; Alps' hop latency at 32-128 nodes keeps 25-45 %. The
noise the shrinkage assumes is inflated by a misfit of the model's shape, not by the terms:
the run's rms log error about the fit is 0.60 on 25a, 0.38-0.88 on Alps, because from about
128 KiB to 4 MiB the 2-8 node runs take 1.7-5.3x (Polaris) and up to 12x (Alps 2-4 nodes,
1 MiB) the model's time while some tens of MiB take 0.64-0.8x of it (25a 16-64 MiB, Alps 2-4
nodes 32-128 MiB). Carrying the whole fit does not help
either: unshrunk (prior width inf) 25a -> 25b is 26.7 % (shrunk and uncalibrated 26.9 %),
because 25b's median from 1 MiB is set by its 1-16 MiB sizes (1.6-5.3x the model, 5 of its
11 sizes), which neither the NIC share (the >= 128 MiB plateau) nor the hop latency (the
smallest sizes) reaches; Alps 2 and 4 nodes miss the same way (19-23 % at every width). So no
noise estimate or width can lift these pairs; the misses are the model's mid-size regime on
Slingshot at 2-8 nodes.

Each change below was scored as `--select-prior` scores the width (the width per fold chosen on
the other clusters' pairs, every width of the grid): `python scripts/calibration_holdout.py
--tried`. A change would be kept only with more pairs within 10 % and still none more than 2
points worse; the half split does not move with any of them (on the run's own shape the
unshrunk fit applies).

| change | pairs | within 10 % (inter-node) | > 2 points worse | width per fold |
|---|---|---|---|---|
| shipped: the run's scatter, one width | 128 | 87 (7) | 0 | alcf-polaris 0.1, alps-gh200 0.1, dgx-b200 0.1, dgx-h100 0.1, gb200-nvl72 0.1, pcie3-2x-rtx2080ti-nop2p 0.1 |
| a separate width per level | 128 | 83 (5) | 0 | alcf-polaris 0.1, alps-gh200 0.03, dgx-b200 0.03, dgx-h100 0.1, gb200-nvl72 0.1, pcie3-2x-rtx2080ti-nop2p 0.1 |
| noise: median absolute residual | 128 | 85 (5) | 2 | alcf-polaris 0.2, alps-gh200 0.03, dgx-b200 0.2, dgx-h100 0.2, gb200-nvl72 0.2, pcie3-2x-rtx2080ti-nop2p 0.2 |
| noise: Huber-weighted rows | 128 | 86 (6) | 2 | alcf-polaris 0.2, alps-gh200 0.05, dgx-b200 0.2, dgx-h100 0.2, gb200-nvl72 0.2, pcie3-2x-rtx2080ti-nop2p 0.2 |
| noise: per term, rows weighted by J^2 | 128 | 86 (6) | 1 | alcf-polaris 0.1, alps-gh200 0.05, dgx-b200 0.1, dgx-h100 0.1, gb200-nvl72 0.1, pcie3-2x-rtx2080ti-nop2p 0.1 |

None is kept: a separate width for the inter-node level picks 0.03 for Alps and B200 from the
other clusters' pairs and loses 4 pairs; the robust noise estimates (median absolute residual,
Huber-weighted rows) keep more of each shift, choose a wider prior (0.2) and make 2 pairs more
than 2 points worse; the noise per term (the scatter of the rows that identify each term, so
the NIC share is judged on the bandwidth-bound sizes) loses one pair and makes one worse. The
inter-node terms re-chosen under the shrinkage (every non-empty subset of bandwidth
efficiency, host floor, NIC share, hop latency; fitting the NIC share alone is one of them)
score 5/34 inter-node pairs within 10 % and 2 more than 2 points worse left one cluster out,
against 7 and 0 shipped. Even the best setting above for each pair (width, noise estimate,
inter-node subset), chosen after seeing the answer, reaches 9/34 inter-node and 82/94
one-node pairs within 10 % (91/128): the 80 % goal (103/128) is out of reach of any setting
of these terms."""

#: a calibration on the rows it was fitted on, beside the uncalibrated model
#: (``--in-sample``, seconds of CPU), measured on 2026-12-04 with the shipped fit
IN_SAMPLE = """## A calibration on its own run

Calibrated on itself (`costmodel calibrate LOG --cluster PRESET`: out-of-place rows, the
bundled run's preset as base), a run is not always predicted better than by the uncalibrated
model: on the rows fitted (`calibrate.in_sample`, the figures `validate compare` reports for
them) the median |busbw error| rises on four files and stays as it was on a fifth (23b, 3.9 %:
the NIC efficiency its rows identify since its int8, uint8 and fp8 rows are fitted with NVLS
off, 0.95, barely moves them; `python scripts/calibration_holdout.py
--in-sample`), and `costmodel calibrate` then warns ("does not lower the error on its own
rows"), as the Validate page does beside the calibrated preset it offers. Files whose rows identify no term are left out (`calibrate` says that in its own
warning); every other file's median falls (25a 21.1 % -> 12.7 %, 09a 91 % -> 2 %).

| run | cluster | rows | uncalibrated | calibrated | mean abs ln ratio |
|---|---|---|---|---|---|
| 15 | alps-gh200 | 180 | 19.5% | 21.3% | 0.374 -> 0.351 |
| 20 | gcp-a3-high | 14 | 6.9% | 8.5% | 0.801 -> 0.585 |
| 23b | dell-xe9680-h200-roce | 36 | 3.9% | 3.9% | 0.037 -> 0.037 |
| 25c | alcf-polaris | 22 | 52.1% | 60.4% | 0.650 -> 0.577 |
| 25e | alcf-polaris-socket | 29 | 13.8% | 15.6% | 0.425 -> 0.425 |
| pooled (15, 20, 23b, 25c, 25e) | | 401 | 18.7% | 20.0% | |

Not a bug (no term is fitted on other rows or sizes than the ones compared, no sign is
reversed: the fit's own loss falls on every file) but what the fit minimises: a robust loss
on log time over every size (Huber at 3 %, about the sum of |ln ratio| beyond it), not the
median. Where the model misses one range of sizes by a wide margin and matches the rest,
the terms move to pull the missed rows in and give up a few points on the matched ones,
which set the median. Run 20 (GCP TCPX): 1-32 MiB take about 1.7 ms whatever the size,
1.9-16x the model's time, while 64 MiB-8 GiB are within 7 %; the network latency moves from
the model's value to 79 us and the NIC share to 0.93, the mean |ln ratio| falls 0.80 -> 0.58
and the large sizes go from 1-7 % to 0-10 % off, so the median of the 14 sizes rises. Run
25c (Polaris all-gather, 8 nodes): 512 KiB-8 MiB take 3.2-5.8x the model's time and 1-32
KiB 0.67-0.75x; the hop latency moves to 14 us, which halves the mid-size misses and takes
the small sizes from 25-33 % to 60-65 % off. Run 25e's hop latency (17.8 us against the model's
17.1 us) lowers the loss by 0.1 % and moves the small sizes that set its median by 2
points. Pooled over 20, 25a and 25c (the three files first reported), the rows fitted go
25.2 % -> 24.3 % and both placements (`validate compare`'s default, the in-place rows not
fitted) 23.8 % -> 24.1 %. A median-based objective, or a guard that keeps the uncalibrated
model where the calibration does not fit its own run better, would be a fitted change, to
be scored by leave one cluster out on the sibling pairs as the shrinkage was; the guard (on
the rms log error) was tried (above, "How far a term moves") and left the pair totals as
they were, so it is not shipped and the warning says it instead."""

NOTES = """## How to read it, and where the goals are not met

- The fabric terms are properties of the path (how much of the link or NIC a transfer gets,
  how long a hop takes, how long the host takes to launch), so one calibration applies to
  every op and to other node and GPU counts of its level; steps, node count, caps, NCCL's
  choice and the protocol switches stay the model's. A term the fitted rows cannot see (the
  NIC efficiency on rows that never reach the NIC bound) is not fitted and keeps the model's
  value (`measured` in the preset lists the fitted ones).
- A calibration from one node says nothing about the network, and one across nodes mixes
  the network into every term: across levels `model="calibrated"` and `model="nccl"` warn
  (CalibrationWarning) and answer with the uncalibrated model (never refused, never applied
  silently).
- ALCF Polaris (25a-d: 2 and 8 nodes; all-reduce, all-gather, all-to-all) is in the sibling
  table (preset `alcf-polaris`).
- Which terms carry: leave one cluster out (above) drops the candidate-wide bandwidth
  efficiency at both levels: it is identified only for the candidates the calibration run's
  sizes chose and moved the others by a share no row measured (31 pairs more than 2 points
  worse with it, 6 without). A NIC efficiency fitted to its bound (1) no longer breaks the
  fit (the finite differences stay inside the bounds): before, such a run (Alps 32 nodes)
  fell back to its alpha-beta line, 50-60 % off at other node counts.
- Shrinkage (above): before it, 6 pairs were more than 2 points worse than uncalibrated,
  by 2.1-6.4 points (Polaris 8 -> 2 nodes and all-gather -> all-reduce: the extra latency
  per hop fitted at 8 nodes; Alps 128 -> 32 nodes; H100 all-gather -> all-reduce and B200
  all-reduce -> reduce-scatter: the latency scale of one op's candidates); with it none is.
- Where the goals are not met. Within 10 % on 85/128 pairs (goal 80 %: 103; 87/128 before
  the Blackwell NVSwitch hop scale, which made the uncalibrated B200 all-reduce 19 -> 14 %
  off and the calibrated 24b and 24c -> 24a pairs 10 -> 14 %, none more than 2 points worse
  than uncalibrated): every pair
  that misses is missed by the uncalibrated model too (81 within), and no calibrated term
  can reach what misses it: no Alps pair at 2-4 nodes or Polaris pair is within 10 %
  (Slingshot: rows vary up to 2x between neighbouring sizes at 32+ nodes; Polaris' plateau
  is 72 % of the NICs its site states and its ops differ from each other, which one
  op-independent NIC share cannot follow); PCIe without P2P from a one-way op (broadcast,
  reduce) to a duplex op (the duplex share is not measured by one-way rows; the prediction
  says so, CalibrationWarning); B200 all-to-all and GB200 across racks. Half split: 26/46
  within 5 %: three terms per level cannot follow one run's every bend.
"""


def _level(run: Run) -> str:
    return "inter" if run.nodes > 1 else "intra"


def _candidate_sets(level: str) -> list[tuple[str, ...]]:
    """The term sets :func:`select_terms` weighs at a level: all of them, and every set with
    one term left out (one step of backward elimination)."""
    from costmodel.validation.calibrate import ALL_FABRIC_TERMS

    full = ALL_FABRIC_TERMS[level]
    return [full, *(tuple(t for t in full if t != drop) for drop in full)]


def _pair_loss(calibrated: float, uncalibrated: float) -> float:
    """What a sibling pair costs a term set: 1 if it misses the goal (over 10 %, or more than
    2 points worse than uncalibrated), plus its excess over the uncalibrated error."""
    miss = calibrated > SIBLING_GOAL or calibrated > uncalibrated + SIBLING_WORSE
    return float(miss) + max(0.0, calibrated - uncalibrated)


def select_terms(runs: dict[str, Run]) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """Which fabric terms a calibration should carry, per level, by leave one cluster out.

    Every sibling pair (same level) is predicted under every candidate term set of its level
    (:func:`_candidate_sets`); for each cluster, the set with the lowest total
    :func:`_pair_loss` over the *other* clusters' pairs (ties: the larger set) is scored on its
    own pairs, so no pair's data picks its own setting. Returns the set chosen on all clusters
    per level and a markdown report (per set: pairs within 10 % and more than 2 points worse;
    the leave-one-cluster-out result and the sets each fold chose). Minutes of CPU.
    """
    import costmodel.validation.calibrate as cal

    pairs = [
        p for p in sibling_pairs(runs) if _level(runs[p[0]]) == _level(runs[p[1]])
    ]  # across levels the calibration does not apply
    sets = {lvl: _candidate_sets(lvl) for lvl in ("intra", "inter")}
    keep = dict(cal.FABRIC_TERMS)
    err: dict[tuple[str, tuple[str, ...]], dict[tuple[str, str], tuple[float, float]]] = {}
    try:
        for i in range(max(len(v) for v in sets.values())):
            for lvl in sets:
                cal.FABRIC_TERMS[lvl] = sets[lvl][min(i, len(sets[lvl]) - 1)]
            cache: dict = {}
            for a, b in pairs:
                lvl = _level(runs[a])
                if i >= len(sets[lvl]):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = sibling(runs[a], runs[b], cache)
                err.setdefault((lvl, sets[lvl][i]), {})[(a, b)] = (
                    r["calibrated"][0],
                    r["nccl"][0],
                )
    finally:
        cal.FABRIC_TERMS.clear()
        cal.FABRIC_TERMS.update(keep)

    def loss(lvl: str, terms: tuple[str, ...], sel: list[tuple[str, str]]) -> float:
        return sum(_pair_loss(*err[(lvl, terms)][p]) for p in sel)

    def group(p: tuple[str, str]) -> str:
        return runs[p[0]].spec.preset

    chosen: dict[str, tuple[str, ...]] = {}
    lines = [
        "| level | terms carried | pairs | within 10 % | > 2 points worse |",
        "|---|---|---|---|---|",
    ]
    loco = {"within": 0, "worse": 0, "pairs": 0}
    folds: list[str] = []
    for lvl, cands in sets.items():
        mine = [p for p in pairs if _level(runs[p[0]]) == lvl]
        if not mine:
            continue
        for terms in cands:
            e = [err[(lvl, terms)][p] for p in mine]
            lines.append(
                f"| {lvl} | {', '.join(terms) or '(none)'} | {len(e)} | "
                f"{sum(c <= SIBLING_GOAL for c, _ in e)} | "
                f"{sum(c > n + SIBLING_WORSE for c, n in e)} |"
            )
        chosen[lvl] = min(cands, key=lambda t: (loss(lvl, t, mine), -len(t)))
        for g in sorted({group(p) for p in mine}):
            others = [p for p in mine if group(p) != g]
            own = [p for p in mine if group(p) == g]
            pick = min(cands, key=lambda t: (loss(lvl, t, others), -len(t)))
            folds.append(f"{g} ({lvl}): {', '.join(pick)}")
            for p in own:
                c, n = err[(lvl, pick)][p]
                loco["pairs"] += 1
                loco["within"] += c <= SIBLING_GOAL
                loco["worse"] += c > n + SIBLING_WORSE
    lines += [
        "",
        f"Leave one cluster out: {loco['within']}/{loco['pairs']} pairs within 10 %, "
        f"{loco['worse']} more than 2 points worse than uncalibrated. Chosen per fold: "
        + "; ".join(folds)
        + ".",
    ]
    return chosen, lines


#: prior widths weighed by :func:`select_prior` (log units; inf: no shrinkage)
PRIOR_GRID: tuple[float, ...] = (math.inf, 0.5, 0.2, 0.1, 0.05, 0.03)


def _prior_label(tau: float) -> str:
    return "inf (no shrinkage)" if math.isinf(tau) else f"{tau:g}"


def _prior_errors(
    runs: dict[str, Run], pairs: list[tuple[str, str]], grid: tuple[float, ...]
) -> dict[float, dict[tuple[str, str], tuple[float, float]]]:
    """(calibrated, uncalibrated) median error from 1 MiB of every pair under every width."""
    import costmodel.validation.calibrate as cal

    keep = cal.PRIOR_SD
    err: dict[float, dict[tuple[str, str], tuple[float, float]]] = {}
    try:
        for tau in grid:
            cal.PRIOR_SD = tau
            cache: dict = {}
            for a, b in pairs:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = sibling(runs[a], runs[b], cache)
                err.setdefault(tau, {})[(a, b)] = (r["calibrated"][0], r["nccl"][0])
    finally:
        cal.PRIOR_SD = keep
    return err


def _prior_loco(
    runs: dict[str, Run],
    pairs: list[tuple[str, str]],
    err: dict[float, dict[tuple[str, str], tuple[float, float]]],
    grid: tuple[float, ...],
    by_level: bool = False,
) -> tuple[dict[str, int], dict[str, float]]:
    """Leave one cluster out over the widths: each cluster's pairs scored with the width of
    lowest total :func:`_pair_loss` on the other clusters' pairs (``by_level``: on those of its
    own level only, a separate width per level). Returns the totals and the width per fold."""

    def pick(sel: list[tuple[str, str]]) -> float:
        return min(grid, key=lambda t: (sum(_pair_loss(*err[t][p]) for p in sel), grid.index(t)))

    loco = {"within": 0, "worse": 0, "pairs": 0}
    folds: dict[str, float] = {}
    for g in sorted({runs[a].spec.preset for a, _ in pairs}):
        own = [p for p in pairs if runs[p[0]].spec.preset == g]
        lvl = _level(runs[own[0][0]])
        tau = pick(
            [
                p
                for p in pairs
                if runs[p[0]].spec.preset != g and (not by_level or _level(runs[p[0]]) == lvl)
            ]
        )
        folds[g] = tau
        for p in own:
            c, n = err[tau][p]
            loco["pairs"] += 1
            loco["within"] += c <= SIBLING_GOAL
            loco["worse"] += c > n + SIBLING_WORSE
    return loco, folds


def select_prior(
    runs: dict[str, Run], grid: tuple[float, ...] = PRIOR_GRID
) -> tuple[float, list[str]]:
    """The prior width of the fabric terms (:data:`calibrate.PRIOR_SD`) by leave one cluster out.

    Every same-level sibling pair is predicted with the calibration fitted under every width of
    ``grid``; for each cluster, the width with the lowest total :func:`_pair_loss` on the *other*
    clusters' pairs (ties: the weaker prior, earlier in ``grid``) is scored on its own pairs, so
    no pair's data picks its own setting. Returns the width chosen on all clusters and a
    markdown report (per width: pairs within 10 % and more than 2 points worse; the
    leave-one-cluster-out result and the width each fold chose). Minutes of CPU.
    """
    pairs = [p for p in sibling_pairs(runs) if _level(runs[p[0]]) == _level(runs[p[1]])]
    err = _prior_errors(runs, pairs, grid)
    lines = [
        "| prior width (log units) | pairs | within 10 % | > 2 points worse |",
        "|---|---|---|---|",
    ]
    for tau in grid:
        e = list(err[tau].values())
        lines.append(
            f"| {_prior_label(tau)} | {len(e)} | {sum(c <= SIBLING_GOAL for c, _ in e)} | "
            f"{sum(c > n + SIBLING_WORSE for c, n in e)} |"
        )
    loco, folds = _prior_loco(runs, pairs, err, grid)
    chosen = min(grid, key=lambda t: (sum(_pair_loss(*err[t][p]) for p in pairs), grid.index(t)))
    lines += [
        "",
        f"Leave one cluster out: {loco['within']}/{loco['pairs']} pairs within 10 %, "
        f"{loco['worse']} more than 2 points worse than uncalibrated. Chosen per fold: "
        + "; ".join(f"{g}: {_prior_label(t)}" for g, t in folds.items())
        + f". Chosen on every cluster: {_prior_label(chosen)}.",
    ]
    return chosen, lines


def _noise_mad(jac: np.ndarray, r: np.ndarray, prior_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Tried: the noise from the median absolute residual (1.4826 MAD, a robust scale)."""
    from costmodel.validation.calibrate import NOISE_FLOOR

    s = 1.4826 * float(np.median(np.abs(r)))
    return jac.T @ jac, max(s * s, NOISE_FLOOR**2) / prior_sd**2 * np.eye(jac.shape[1])


def _noise_huber(jac: np.ndarray, r: np.ndarray, prior_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Tried: rows weighted as the Huber fit weighs them (min(1, delta/|r|)), in the
    information and in the scatter (an M-estimator's covariance)."""
    from costmodel.validation.calibrate import HUBER_DELTA, NOISE_FLOOR

    w = np.minimum(1.0, HUBER_DELTA / np.maximum(np.abs(r), 1e-12))
    s2 = float(np.sum(w * r**2)) / max(float(w.sum()) - jac.shape[1], 1.0)
    return (jac * w[:, None]).T @ jac, max(s2, NOISE_FLOOR**2) / prior_sd**2 * np.eye(jac.shape[1])


def _noise_per_term(
    jac: np.ndarray, r: np.ndarray, prior_sd: float
) -> tuple[np.ndarray, np.ndarray]:
    """Tried: a noise per term, the scatter of the rows weighted by how much they identify it
    (J_ij^2): a NIC share judged on the bandwidth-bound sizes, not on a misfit elsewhere."""
    from costmodel.validation.calibrate import NOISE_FLOOR

    j2 = jac**2
    s2 = (j2 * (r**2)[:, None]).sum(axis=0) / np.maximum(j2.sum(axis=0), 1e-30)
    s2 = s2 * r.size / max(r.size - jac.shape[1], 1)
    return jac.T @ jac, np.diag(np.maximum(s2, NOISE_FLOOR**2)) / prior_sd**2


#: the noise estimates :func:`tried` weighs against the shipped one (calibrate._shrinkage)
NOISE_VARIANTS = {
    "median absolute residual": _noise_mad,
    "Huber-weighted rows": _noise_huber,
    "per term, rows weighted by J^2": _noise_per_term,
}


def tried(runs: dict[str, Run], grid: tuple[float, ...] = PRIOR_GRID) -> list[str]:
    """Changes to the shrinkage and the inter-node terms weighed by leave one cluster out
    (``--tried``; docs/calibration.md "Tried, not kept"), each against the shipped one: a
    separate prior width per level; each noise estimate of :data:`NOISE_VARIANTS`, its width
    chosen by leave one cluster out; and, under the shipped shrinkage, every non-empty subset
    of the inter-node terms. Tens of minutes of CPU."""
    import itertools

    import costmodel.validation.calibrate as cal

    pairs = [p for p in sibling_pairs(runs) if _level(runs[p[0]]) == _level(runs[p[1]])]
    lines = [
        "| change | pairs | within 10 % (inter-node) | > 2 points worse | width per fold |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, err: dict, by_level: bool = False) -> None:
        loco, tau = _prior_loco(runs, pairs, err, grid, by_level)
        inter = sum(
            err[tau[runs[a].spec.preset]][(a, b)][0] <= SIBLING_GOAL
            for a, b in pairs
            if _level(runs[a]) == "inter"
        )
        lines.append(
            f"| {name} | {loco['pairs']} | {loco['within']} ({inter}) | {loco['worse']} | "
            + ", ".join(f"{g} {_prior_label(t)}" for g, t in tau.items())
            + " |"
        )

    shipped = _prior_errors(runs, pairs, grid)
    row("shipped: the run's scatter, one width", shipped)
    row("a separate width per level", shipped, by_level=True)
    seen = list(shipped.values())  # every setting's errors, for the best-per-pair bound
    keep = cal._shrinkage
    try:
        for name, fn in NOISE_VARIANTS.items():
            cal._shrinkage = fn
            variant = _prior_errors(runs, pairs, grid)
            seen += variant.values()
            row(f"noise: {name}", variant)
    finally:
        cal._shrinkage = keep
    inter = [p for p in pairs if _level(runs[p[0]]) == "inter"]
    full = cal.ALL_FABRIC_TERMS["inter"]
    subsets = [c for k in range(len(full), 0, -1) for c in itertools.combinations(full, k)]
    err: dict[tuple[str, ...], dict[tuple[str, str], tuple[float, float]]] = {}
    keep_terms = dict(cal.FABRIC_TERMS)
    try:
        for terms in subsets:
            cal.FABRIC_TERMS["inter"] = terms
            cache: dict = {}
            for a, b in inter:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = sibling(runs[a], runs[b], cache)
                err.setdefault(terms, {})[(a, b)] = (r["calibrated"][0], r["nccl"][0])
    finally:
        cal.FABRIC_TERMS.clear()
        cal.FABRIC_TERMS.update(keep_terms)
    loco = {"within": 0, "worse": 0, "pairs": 0}
    folds = []
    for g in sorted({runs[a].spec.preset for a, _ in inter}):
        own = [p for p in inter if runs[p[0]].spec.preset == g]
        others = [p for p in inter if runs[p[0]].spec.preset != g]
        pick = min(subsets, key=lambda t: (sum(_pair_loss(*err[t][p]) for p in others), -len(t)))
        folds.append(f"{g}: {', '.join(pick)}")
        for p in own:
            c, n = err[pick][p]
            loco["pairs"] += 1
            loco["within"] += c <= SIBLING_GOAL
            loco["worse"] += c > n + SIBLING_WORSE
    seen += err.values()
    best = {p: min(e[p][0] for e in seen if p in e) for p in pairs}
    within = {
        lvl: sum(best[p] <= SIBLING_GOAL for p in pairs if _level(runs[p[0]]) == lvl)
        for lvl in ("intra", "inter")
    }
    lines += [
        "",
        f"Inter-node term set chosen by leave one cluster out among all {len(subsets)} "
        f"non-empty subsets (prior width {_prior_label(cal.PRIOR_SD)}): "
        f"{loco['within']}/{loco['pairs']} inter-node pairs within 10 %, {loco['worse']} more "
        "than 2 points worse. Chosen per fold: " + "; ".join(folds) + ".",
        "",
        "Best per pair of every setting above (width, noise estimate, inter-node subset; "
        f"chosen after seeing the answer): {within['inter']}/{len(inter)} inter-node pairs "
        f"and {within['intra']}/{len(pairs) - len(inter)} one-node pairs within 10 % "
        f"({within['inter'] + within['intra']}/{len(pairs)}).",
    ]
    return lines


def in_sample_table(prefixes: tuple[str, ...] | None = None) -> list[str]:
    """Each bundled file calibrated on itself as ``costmodel calibrate LOG --cluster PRESET``
    does it (the reader validate compare uses, placement out-of-place, base = its preset), and
    :func:`costmodel.validation.calibrate.in_sample` on the same rows: the median |busbw error|
    and mean |ln ratio| of the uncalibrated nccl model and of the calibration, per file and
    pooled over the files whose median rises (``--in-sample``; docs/calibration.md, "A
    calibration on its own run")."""
    from costmodel.reference import reference_id, reference_path
    from costmodel.validation.calibrate import calibrated_predictor, in_sample
    from costmodel.validation.compare import cluster_predictor, compare
    from costmodel.validation.logread import read_log
    from costmodel.validation.reference_runs import run_spec, timed_runs

    lines = [
        "| run | cluster | rows | uncalibrated | calibrated | mean abs ln ratio |",
        "|---|---|---|---|---|---|",
    ]
    pooled: list[tuple[np.ndarray, np.ndarray]] = []
    risen: list[str] = []
    for name in timed_runs():
        run = reference_id(name)
        if prefixes is not None and run not in prefixes:
            continue
        spec = run_spec(run)
        path = reference_path(run, kind="nccl-tests")
        read = read_log(
            path.read_bytes(), path.name, cluster=spec.preset, placement="both",
            strict=False, assume_nodes=False,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cal = calibrate(read.rows, name=f"c{run}", source=str(path), base=spec.preset)
            except ValueError:  # nothing the fabric terms fit (03: CollNet pinned)
                continue
            check = in_sample(cal, read.rows)
            if check is None or check.note() is None:  # lowered, or no term identified
                continue
            rows = read.rows[read.rows["placement"] == "out_of_place"]
            mine = compare(rows, calibrated_predictor(cal))["rel_error"].abs()
            model = compare(rows, cluster_predictor(spec.preset))["rel_error"].abs()
        both = mine.notna() & model.notna()
        pooled.append((model[both].to_numpy(), mine[both].to_numpy()))
        risen.append(run)
        lines.append(
            f"| {run} | {spec.preset} | {check.rows} | {_pct(check.uncalibrated)} | "
            f"{_pct(check.calibrated)} | {check.uncalibrated_log:.3f} -> "
            f"{check.calibrated_log:.3f} |"
        )
    if pooled:
        before = np.concatenate([b for b, _ in pooled])
        after = np.concatenate([a for _, a in pooled])
        lines.append(
            f"| pooled ({', '.join(risen)}) | | {before.size} | {_pct(float(np.median(before)))}"
            f" | {_pct(float(np.median(after)))} | |"
        )
    return lines


def _check_argv(flags: tuple[str, ...], with_value: tuple[str, ...] = ()) -> None:
    """:func:`scripts._argv.check_argv` with this script's docstring as its usage."""
    from scripts._argv import check_argv

    check_argv(__doc__, flags, with_value)


def main() -> None:
    _check_argv(("--tried", "--select-prior", "--select", "--in-sample"))
    if "--in-sample" in sys.argv:
        print("\n".join(in_sample_table()))
        return
    if "--tried" in sys.argv:
        print("\n".join(tried(load_runs())))
        return
    if "--select-prior" in sys.argv:
        tau, lines = select_prior(load_runs())
        print("\n".join(lines))
        print("chosen on every cluster:", _prior_label(tau))
        return
    if "--select" in sys.argv:
        chosen, lines = select_terms(load_runs())
        print("\n".join(lines))
        print("chosen on every cluster:", chosen)
        return
    runs = load_runs()
    halves = [half_split(r) for r in runs.values() if len(r.segments) >= MIN_SIZES]
    cache: dict = {}
    siblings = [sibling(runs[a], runs[b], cache) for a, b in sibling_pairs(runs)]
    date = _dt.date.today().isoformat()
    out = ROOT / "docs" / "calibration.md"
    from costmodel.atomic import write_text_atomic

    write_text_atomic(out, markdown(halves, siblings, date, BEFORE))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
