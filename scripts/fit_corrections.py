"""Fit the correction terms of costmodel/corrections.py on the reference nccl-tests runs.

Usage: ``python scripts/fit_corrections.py`` (about 20-45 s on 2 shared cores). Writes
``costmodel/fitted_corrections.py`` (ALL = fitted on every run; LORO[run] = fitted on every run
but that one) and ``docs/fidelity.md`` (per-run median |busbw error| of the lesson, NCCL-table
and full models, each run predicted with the LORO parameters, i.e. never by constants fitted on
itself). tests/test_fidelity.py imports this file for RUNS and evaluate().

Every run is predicted from its cluster preset alone plus what the run's own header states about
how it was launched (nodes, GPUs per node, GPUs per process ``-g``, NCCL_ALGO/PROTO,
NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE); nothing is tuned by hand to a file.
"""

from __future__ import annotations

import datetime as _dt
import math
import pprint
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodel import corrections as C  # noqa: E402
from costmodel import nccl  # noqa: E402
from costmodel import predict as P  # noqa: E402
from costmodel import tables as T  # noqa: E402
from costmodel.reference import reference_dir  # noqa: E402

DATA = reference_dir("nccl-tests")  # the published runs bundled in costmodel/data/reference


@dataclass(frozen=True)
class RunSpec:
    """How one file's runs were made (from the file header; README trust column)."""

    prefix: str
    preset: str
    gpus_per_node: int | None = None
    gpus_per_process: int = 1
    nodes: int | None = None  # None: from the parsed ranks / gpus_per_node
    trust: str = "H"
    nvls: bool | None = None
    collnet: bool = False
    ranks: int | None = None  # when the header says the rows imply another count
    note: str = ""
    per_run: dict = field(default_factory=dict)  # run index -> overrides


RUNS: tuple[RunSpec, ...] = (
    RunSpec(
        "02",
        "coreweave-hgx-a100",
        8,
        1,
        trust="M",
        note="4 HCAs per node (coreweave gpus/a100.cue), HDR rate assumed",
    ),
    RunSpec(
        "03",
        "coreweave-hgx-h100",
        8,
        1,
        trust="L",
        collnet=True,
        ranks=96,
        note="COLLNETCHAIN pinned; rows imply 96 ranks",
    ),
    RunSpec("04a", "gb200-nvl72", 72, 1, nodes=1, nvls=False),
    RunSpec(
        "04b",
        "gb200-nvl72",
        64,
        1,
        nodes=2,
        nvls=False,
        trust="M",
        ranks=128,
        note="rows imply 128 ranks (2 x 64)",
    ),
    RunSpec("04c", "gb200-nvl72", 72, 1, nodes=20, nvls=False, trust="H"),
    RunSpec("06a", "dell-xe9680-h100", 8, 1),
    RunSpec("09a", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    RunSpec("09b", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    RunSpec("09c", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    RunSpec("09d", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    RunSpec("09e", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    RunSpec("12a", "dgx-a100", 8, 8, trust="M"),
    RunSpec("13a", "dgx-h100", 4, 4),
    RunSpec("13b", "dgx-h100", 4, 4),
    RunSpec("13c", "dgx-h100", 4, 4),
    RunSpec("13d", "dgx-h100", 4, 4),
    RunSpec("13e", "dgx-h100", None, 0),  # -g 2/4/6: gpus_per_process = GPUs
    RunSpec(
        "13f",
        "dgx-h100",
        None,
        0,
        per_run={i: {"algorithm": ("auto", "ring", "nvls")[i % 3]} for i in range(9)},
    ),
    RunSpec(
        "15",
        "alps-gh200",
        4,
        1,
        per_run={i: {"trust": "M"} for i in (3, 4, 8, 9)},
        note="Out of bounds FAILED at 8, 16, 256, 512 nodes",
    ),
    RunSpec("16a", "aws-p4de", 8, 1, trust="H"),
    RunSpec("16b", "aws-p5", 8, 1, trust="H"),
    RunSpec("16c", "aws-p5", 8, 1, trust="M", note="partial, NCCL 2.18.5"),
)

# Runs bundled after the last fit (20, 22, 23a-b, 24a-d), each with the preset that describes it
# (presets/README.md). They are NOT in RUNS: nothing is fitted on them and they are not goal runs,
# so tests/test_fidelity.py and costmodel/fitted_corrections.py (whose LORO has one entry per
# RUNS key) stay as they are until the fit's owner moves them into RUNS and re-runs this script.
# Until then they are genuinely held-out data: tests/test_held_out_runs.py checks each spec against
# its rows and predicts them with the ALL parameters. Trust is capped at "M" (not a goal run) for
# the same reason. 21a-21d are busbw-only tables (no times: read_busbw_table) and cannot be runs.
HELD_OUT_RUNS: tuple[RunSpec, ...] = (
    RunSpec(
        "20",
        "gcp-a3-high",
        8,
        1,
        nodes=2,
        trust="M",
        per_run={0: {"algorithm": "ring"}},
        note="GPUDirect-TCPX example output, 10 iterations; the run's env is not printed, the "
        "chart's defaults (gke/values.yaml, same commit) pin NCCL_ALGO=Ring",
    ),
    RunSpec(
        "22",
        "dgx-h100",
        8,
        1,
        nodes=2,
        trust="M",
        per_run={0: {"algorithm": "ring"}},
        note="NCCL_ALGO=Ring on the header's mpirun line (-x), which the parser does not read",
    ),
    RunSpec(
        "23a",
        "dell-xe9680-h200-roce",
        8,
        8,
        nodes=2,
        ranks=16,
        trust="M",
        note="curator cut the device list to rank 0; busbw/algbw = 1.875 implies 16 ranks",
    ),
    RunSpec(
        "23b",
        "dell-xe9680-h200-roce",
        8,
        8,
        nodes=2,
        trust="M",
        note="12 datatypes at 10-40 GiB; the model has no datatype term",
    ),
    RunSpec("24a", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    RunSpec("24b", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    RunSpec("24c", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    RunSpec(
        "24d", "dgx-b200", 8, 1, nodes=1, trust="M", note="uint8; processes per GPU not stated"
    ),
)


# Goal runs that miss issue 4's goals (<= 8 % from 1 MiB up, <= 20 % over all sizes): run ->
# (bound >= 1 MiB, bound all sizes, why). The bounds sit 1-2 points above the achieved
# leave-one-run-out figure and are asserted by tests/test_fidelity.py as regression bounds.
NOT_MET: dict[str, tuple[float, float, str]] = {
    "04c": (
        0.43,
        0.43,
        "20 GB200 NVL72 racks over IB (1440 ranks, 512 MiB-16 GiB). The rows follow "
        "t = 4.4-5.4 ms + M / (210-217 GB/s algbw), i.e. about 430 GB/s busbw at the margin, "
        "half of what one or two racks reach (04a 847, 04b 820). The intercept matches a "
        "1440-rank ring's 2 x 1439 steps at 1.5-1.9 us each; the slope matches NCCL's own "
        "Tree cap at >= 4 nodes (16 ch x 24 GB/s, Blackwell). NCCL 2.30's table picks Tree up "
        "to 2 GiB and Ring/LL128 (640 GB/s) above, so from 4 GiB it is 30-43 % too fast. "
        "Which algorithm NCCL 2.26 ran, how many of the 72 NICs per rack its rings used and "
        "whether LL128 runs over the C2C-attached NICs are not in the source; no term is "
        "fitted on this one file. The NVLink-domain correction no longer applies here (more "
        "than two domains: NCCL's bandwidth is the network's bwInter), which removed the "
        "regression to 55 %.",
    ),
}


# High-trust multi-node runs on fabrics NCCL reaches through aws-ofi-nccl (not goal runs: the
# issue's goals are for NVSwitch/InfiniBand). Regression bounds (>= 1 MiB), 1-3 points above the
# achieved leave-one-run-out figure, asserted by tests/test_fidelity.py, and why each is off.
OFI_BOUNDS: dict[str, tuple[float, str]] = {
    "15/1": (
        0.12,
        "2 nodes: NCCL's Tree with bwIntra raised to 2 x bwInter (search.cc pass 2) "
        "gives 145 GB/s busbw at 1-4 GiB where 155-158 is measured; 2-32 MiB rows are "
        "slower than any NCCL protocol's model (LL128 is off on NCCL 2.23's PHB "
        "GPU-NIC path).",
    ),
    "15/2": (0.07, "4 nodes: Ring at 4 x 25 GB/s from 64 MiB up."),
    "15/5": (
        0.22,
        "32 nodes: Tree at the fitted Slingshot efficiency up to 256 MiB, Ring above; "
        "1-16 MiB rows vary by 2x between neighbouring sizes (shared machine).",
    ),
    "15/6": (
        0.48,
        "64 nodes: NCCL 2.23 switched to Ring at 1 GiB; NCCL 2.30's table keeps Tree "
        "to 2 GiB (Ring's 510-step latency), so 1-2 GiB are predicted at Tree's rate.",
    ),
    "15/7": (0.47, "128 nodes: as 64 nodes; NCCL 2.23 ran Ring from 2 GiB, 2.30's table Tree."),
    "16a": (
        0.44,
        "2 x p4de, EFA v1 4 x 100G: 1-64 MiB take 2-3x NCCL's time (aws-ofi-nccl "
        "per-message cost); the EFA ramp amplitude is fitted on the p5 run (16b), which "
        "shows far less of it, so it does not carry over. From 512 MiB within 7 %.",
    ),
    "16b": (0.07, "2 x p5, EFA v2 32 x 100G: NVLSTree."),
}


@dataclass
class Run:
    """One parsed run with everything needed to predict it."""

    key: str
    spec: RunSpec
    op: str
    nodes: int
    gpus_per_node: int
    gpus_per_process: int
    algorithm: str
    protocol: str
    trust: str
    size: np.ndarray
    time_s: np.ndarray
    cluster: object = None

    @property
    def goal(self) -> bool:
        """High-trust run on an NVSwitch + InfiniBand (or single-node NVSwitch) system."""
        c = self.cluster
        return (
            self.trust == "H"
            and c.intra_kind == "nvswitch"
            and (self.nodes == 1 or c.fabric == "infiniband")
        )


def load_runs(specs: tuple[RunSpec, ...] = RUNS) -> list[Run]:
    """Parse every reference file of ``specs`` and attach its cluster (preset + header facts)."""
    from costmodel.presets import cluster as load_cluster
    from costmodel.validation.nccl_tests import read_nccl_tests

    out = []
    for spec in specs:
        (path,) = sorted(DATA.glob(f"{spec.prefix}_*.txt"))
        df = read_nccl_tests(path)
        for run, r in df.groupby("run", sort=True):
            r = r[r.size_bytes > 0]
            if r.empty:
                continue
            over = spec.per_run.get(int(run), {})
            ranks = spec.ranks or int(r.ranks.iloc[0])
            g = spec.gpus_per_node or ranks // (spec.nodes or 1)
            nodes = spec.nodes or ranks // g
            gpp = spec.gpus_per_process or g
            algo = over.get("algorithm") or (r.algo_env.iloc[0] or "auto")
            proto = r.proto_env.iloc[0] or "auto"
            c = load_cluster(spec.preset, nodes=nodes, gpus_per_node=g)
            out.append(
                Run(
                    key=f"{spec.prefix}" + (f"/{int(run)}" if df.run.nunique() > 1 else ""),
                    spec=spec,
                    op=r.op.iloc[0],
                    nodes=nodes,
                    gpus_per_node=g,
                    gpus_per_process=gpp,
                    algorithm=nccl.normalize_algorithm(algo) if algo != "auto" else "auto",
                    protocol=nccl.normalize_protocol(proto) if proto != "auto" else "auto",
                    trust=over.get("trust", spec.trust),
                    size=r.size_bytes.to_numpy(float),
                    time_s=r.time_s.to_numpy(float),
                    cluster=c,
                )
            )
    return out


def predict_run(run: Run, model: str, params=None) -> np.ndarray:
    """Predicted time per row of a run."""
    p = P.predict_collective(
        run.op,
        run.size,
        run.cluster,
        nodes=run.nodes,
        gpus_per_node=run.gpus_per_node,
        algorithm=run.algorithm if model != "lesson" else "auto",
        protocol=run.protocol if model != "lesson" else "auto",
        model=model,
        gpus_per_process=run.gpus_per_process,
        nvls=run.spec.nvls,
        collnet_enabled=run.spec.collnet,
        params=params,
    )
    return np.asarray(p.time_s, dtype=float)


def errors(run: Run, t_pred: np.ndarray) -> np.ndarray:
    """Relative busbw error per row: busbw_pred / busbw_meas - 1 = t_meas / t_pred - 1."""
    return run.time_s / t_pred - 1.0


def summary(run: Run, t_pred: np.ndarray) -> dict[str, float]:
    """Median |busbw error| for >= 1 MiB, all sizes, < 64 KiB (nan where no rows)."""
    e = np.abs(errors(run, t_pred))
    out = {}
    for name, sel in (
        ("ge1MiB", run.size >= 2**20),
        ("all", run.size > 0),
        ("lt64KiB", run.size < 2**16),
    ):
        out[name] = float(np.median(e[sel])) if sel.any() else math.nan
    return out


# ------------------------------------------------------------------------------------------
# fitting
# ------------------------------------------------------------------------------------------
def _base(params: dict, **kw) -> dict:
    p = {**C.DEFAULT_PARAMS, **params}
    p.update(kw)
    return p


def _fit_host(runs: list[Run]) -> dict:
    """host floor a + b g: least squares of each single-node run's small-size time on g."""
    xs, ys = [], []
    for r in runs:
        sel = r.size <= 4096
        if r.nodes == 1 and sel.sum() >= 3:
            xs.append(r.gpus_per_process)
            ys.append(float(np.median(r.time_s[sel])) * 1e6)
    if not xs:
        return {"host_base_us": 0.0, "host_per_gpu_us": 0.0}
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    if np.ptp(xs) == 0:
        return {"host_base_us": max(0.0, float(ys.mean()) - 0.0), "host_per_gpu_us": 0.0}
    b, a = np.polyfit(xs, ys, 1)
    return {"host_base_us": max(0.0, float(a)), "host_per_gpu_us": max(0.0, float(b))}


def _fit_fabric(runs: list[Run], params: dict) -> dict:
    """Per fabric: median of (measured - predicted) / d(time)/d(latencyInter) at <= 64 KiB."""
    per_fabric: dict[str, list[float]] = {}
    for r in runs:
        sel = r.size <= 2**16
        if r.nodes < 2 or sel.sum() < 3:
            continue
        p0 = _base(params, fabric_latency_us={})
        t0 = predict_run(r, "nccl", p0)[sel]
        p1 = _base(params, fabric_latency_us={r.cluster.fabric: 1.0})
        t1 = predict_run(r, "nccl", p1)[sel]
        slope = (t1 - t0) * 1e6
        ok = slope > 0
        if ok.any():
            d = (r.time_s[sel][ok] - t0[ok]) * 1e6 / slope[ok]
            per_fabric.setdefault(r.cluster.fabric, []).append(float(np.median(d)))
    return {"fabric_latency_us": {f: max(0.0, float(np.median(v))) for f, v in per_fabric.items()}}


def _fit_duplex(runs: list[Run], params: dict) -> dict:
    """Host-staged runs of duplex ops, >= 1 MiB: median(predicted / measured time) at factor 1."""
    ratios = []
    for r in runs:
        topo = P.cluster_topology(r.cluster)
        sel = r.size >= 2**20
        if topo.host_staged and r.op in C._DUPLEX_OPS and sel.any():
            t = predict_run(r, "nccl", _base(params, host_staged_duplex=1.0))[sel]
            ratios.append(float(np.median(t / r.time_s[sel])))
    return {"host_staged_duplex": float(np.median(ratios)) if ratios else 1.0}


def _grid_error(runs: list[Run], params: dict, key: str, grid) -> float:
    best, best_err = 1.0, math.inf
    for v in grid:
        errs = [
            summary(r, predict_run(r, "nccl", _base(params, **{key: v})))["ge1MiB"] for r in runs
        ]
        err = float(np.mean(errs)) if errs else math.inf
        if err < best_err - 1e-9:
            best, best_err = float(v), err
    return best


def _fit_nvl_scale(runs: list[Run], params: dict) -> dict:
    """Blackwell NVLink-domain runs: the per-link multiplier minimising median |error|."""
    sel = [
        r
        for r in runs
        if C.nvlink_domain_scale(
            r.cluster.gpu.compute_capability,
            r.gpus_per_node,
            r.cluster.intra_kind,
            {"nvl_domain_link_scale": 2.0},
        )
        != 1.0
    ]
    if not sel:
        return {"nvl_domain_link_scale": 1.0}
    grid = np.round(np.arange(1.0, 1.41, 0.02), 2)
    return {"nvl_domain_link_scale": _grid_error(sel, params, "nvl_domain_link_scale", grid)}


def _ramp_parts(runs: list[Run], params: dict):
    """Per run: (floor, time without the ramp, its excess at unit amplitude and no knee), so the
    ramp grid is plain numpy: t = max(floor, t0 + phi min(1, sqrt(knee/M)) d)."""
    parts = []
    for r in runs:
        p1 = _base(params, ramp_phi=0.0, host_base_us=0.0, host_per_gpu_us=0.0, fabric_ramp_phi={})
        p2 = _base(
            params,
            ramp_phi=1.0,
            ramp_knee_bytes=2.0**62,
            host_base_us=0.0,
            host_per_gpu_us=0.0,
            fabric_ramp_phi={},
        )
        t1, t2 = predict_run(r, "nccl", p1), predict_run(r, "nccl", p2)
        floor = C.host_floor_s(r.gpus_per_process, params)
        parts.append((r, floor, t1, t2 - t1))
    return parts


def _fit_ramp(runs: list[Run], params: dict, parts=None) -> dict:
    """Mid-size ramp on the high-trust runs: minimise the median over runs of the median |error|
    from 1 MiB up (medians, so one badly identified fabric does not set it for all)."""
    runs = [r for r in runs if r.trust == "H"]
    parts = _ramp_parts(runs, params) if parts is None else parts
    best, best_err = (0.0, 1.0), math.inf
    for knee in 2.0 ** np.arange(22, 35, 2):
        for phi in np.arange(0.0, 0.42, 0.04):
            errs = []
            for r, floor, t0, d in parts:
                shape = np.minimum(1.0, np.sqrt(knee / np.maximum(r.size, 1.0)))
                t = np.maximum(floor, t0 + phi * shape * d)
                e = np.abs(r.time_s / t - 1.0)[r.size >= 2**20]
                if e.size:
                    errs.append(np.median(e))
            err = float(np.median(errs))
            if err < best_err - 1e-9:
                best, best_err = (float(phi), float(knee)), err
    return {"ramp_phi": round(best[0], 2), "ramp_knee_bytes": best[1]}


def _ofi_multi_node(r: Run) -> bool:
    """A multi-node run on a fabric reached through aws-ofi-nccl (its own ramp amplitude)."""
    return r.nodes > 1 and r.cluster.fabric in C.OFI_FABRICS


def _median_error(runs: list[Run], params: dict) -> float:
    """Median over runs of each run's median |busbw error| from 1 MiB up."""
    errs = [summary(r, predict_run(r, "nccl", params))["ge1MiB"] for r in runs]
    errs = [e for e in errs if not math.isnan(e)]
    return float(np.median(errs)) if errs else math.inf


def _fit_tree_efficiency(runs: list[Run], params: dict) -> dict:
    """Per OFI fabric: Tree's share of NCCL's bandwidth beyond two nodes, on the high-trust
    runs of more than two nodes (grid 0.30-1.00, minimising the median of run medians)."""
    out = {}
    for fabric in C.OFI_FABRICS:
        sel = [r for r in runs if r.trust == "H" and r.nodes > 2 and r.cluster.fabric == fabric]
        if not sel:
            continue
        best, best_err = 1.0, math.inf
        for e in np.round(np.arange(1.0, 0.29, -0.05), 2):
            err = _median_error(
                sel,
                _base(
                    params,
                    fabric_tree_efficiency={
                        **params.get("fabric_tree_efficiency", {}),
                        fabric: float(e),
                    },
                ),
            )
            if err < best_err - 1e-9:
                best, best_err = float(e), err
        out[fabric] = best
    return {"fabric_tree_efficiency": out}


def _fit_fabric_ramp(runs: list[Run], params: dict) -> dict:
    """Per OFI fabric: the mid-size ramp amplitude on its high-trust multi-node runs (the
    global knee and shape; grid 0-4, minimising the median of run medians from 1 MiB up)."""
    out = {}
    knee = params["ramp_knee_bytes"]
    for fabric in C.OFI_FABRICS:
        sel = [
            r for r in runs if r.trust == "H" and _ofi_multi_node(r) and r.cluster.fabric == fabric
        ]
        if not sel:
            continue
        parts = []
        for r in sel:
            t0 = predict_run(
                r,
                "nccl",
                _base(params, host_base_us=0.0, host_per_gpu_us=0.0, fabric_ramp_phi={fabric: 0.0}),
            )
            t1 = predict_run(
                r,
                "nccl",
                _base(
                    params,
                    host_base_us=0.0,
                    host_per_gpu_us=0.0,
                    ramp_knee_bytes=2.0**62,
                    fabric_ramp_phi={fabric: 1.0},
                ),
            )
            parts.append((r, C.host_floor_s(r.gpus_per_process, params), t0, t1 - t0))
        best, best_err = 0.0, math.inf
        for phi in np.arange(0.0, 4.01, 0.1):
            errs = []
            for r, floor, t0, d in parts:
                shape = np.minimum(1.0, np.sqrt(knee / np.maximum(r.size, 1.0)))
                t = np.maximum(floor, t0 + phi * shape * d)
                e = np.abs(r.time_s / t - 1.0)[r.size >= 2**20]
                if e.size:
                    errs.append(np.median(e))
            err = float(np.median(errs)) if errs else math.inf
            if err < best_err - 1e-9:
                best, best_err = float(phi), err
        out[fabric] = round(best, 2)
    return {"fabric_ramp_phi": out}


def fit(runs: list[Run]) -> dict:
    """All correction parameters, fitted in order on ``runs``."""
    p = _base({})
    p.update(_fit_host(runs))
    p.update(_fit_fabric(runs, p))
    p.update(_fit_duplex(runs, p))
    p.update(_fit_nvl_scale(runs, p))
    p.update(_fit_tree_efficiency(runs, p))
    p.update(_fit_ramp(runs, p))
    p.update(_fit_fabric_ramp(runs, p))
    return _rounded(p)


def _rounded(p: dict) -> dict:
    out = {}
    for k, v in p.items():
        if isinstance(v, dict):
            out[k] = {kk: round(float(vv), 3) for kk, vv in v.items()}
        else:
            out[k] = round(float(v), 3)
    return out


def evaluate(runs: list[Run], loro: dict[str, dict]) -> list[dict]:
    """Per run, the three models' summaries (full model with the run's LORO parameters)."""
    rows = []
    for r in runs:
        row = {
            "run": r.key,
            "op": r.op,
            "cluster": r.spec.preset,
            "nodes": r.nodes,
            "gpus_per_node": r.gpus_per_node,
            "trust": r.trust,
            "goal": r.goal,
        }
        for model in ("lesson", "nccl-table", "nccl"):
            params = loro[r.key] if model == "nccl" else None
            row[model] = summary(r, predict_run(r, model, params))
        rows.append(row)
    return rows


def fidelity_markdown(rows: list[dict], date: str) -> str:
    def pct(x):
        return "-" if math.isnan(x) else f"{100 * x:.0f}%"

    lines = [
        f"# Fidelity: predicted vs measured nccl-tests busbw ({date})",
        "",
        "Median |busbw error| per run, sizes >= 1 MiB / all sizes / < 64 KiB, for the lesson's",
        "flat-ring alpha-beta model, NCCL 2.30's tuning model alone, and the full model (NCCL's table plus",
        "costmodel/corrections.py, each run predicted with parameters fitted leave-one-run-out).",
        "Goal (high-trust NVSwitch / InfiniBand runs, marked *): <= 8% from 1 MiB up, <= 20% over",
        "all sizes. Written by scripts/fit_corrections.py.",
        "",
        "| run | op | cluster | nodes x GPUs | trust | lesson | NCCL table | full model |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        for model in ("lesson", "nccl-table", "nccl"):
            s = r[model]
            cells.append(f"{pct(s['ge1MiB'])} / {pct(s['all'])} / {pct(s['lt64KiB'])}")
        mark = "*" if r["goal"] else ""
        lines.append(
            f"| {r['run']}{mark} | {r['op']} | {r['cluster']} | {r['nodes']} x "
            f"{r['gpus_per_node']} | {r['trust']} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "## Goals not met",
        "",
        "Each is held to a regression bound just above its figure (tests/test_fidelity.py).",
        "",
    ]
    for run, (b_ge, b_all, why) in NOT_MET.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}% / {100 * b_all:.0f}%): {why}")
    lines += [
        "",
        "## Fabrics reached through aws-ofi-nccl (Slingshot, EFA)",
        "",
        "Not goal runs (the goals are for NVSwitch/InfiniBand), but held to regression "
        "bounds from 1 MiB up. Terms: NCCL's tree search pass 2 (bwIntra up to 2 x "
        "bwInter, used on 2 nodes), `fabric_tree_efficiency` (Tree beyond 2 nodes, "
        "fitted per fabric) and `fabric_ramp_phi` (mid-size ramp per fabric); "
        "02 uses the 4 HCAs per A100 node that coreweave/nccl-tests gpus/a100.cue lists "
        "(was 8 assumed), and is still about 2x faster than measured from 128 MiB up "
        "(45 GB/s busbw: the HCA rate is not stated; 4 x HDR gives 90). Runs 15/3, 15/4, "
        "15/8, 15/9 reported wrong results (Out of bounds FAILED): medium trust, left out of "
        "the Tree-efficiency and ramp fits.",
        "",
    ]
    for run, (b_ge, why) in OFI_BOUNDS.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}%): {why}")
    return "\n".join(lines) + "\n"


def main() -> None:
    runs = load_runs()
    params_all = fit(runs)
    loro = {}
    for r in runs:
        loro[r.key] = fit([x for x in runs if x.key != r.key])
    date = _dt.date.today().isoformat()
    out = ROOT / "costmodel" / "fitted_corrections.py"
    out.write_text(
        '"""Correction parameters fitted by scripts/fit_corrections.py (generated; do not edit).\n\n'
        "ALL: fitted on every reference run. LORO[run]: fitted on every run except that one\n"
        '(used by tests/test_fidelity.py so that no run is predicted by constants fitted on it).\n"""\n\n'
        f"FITTED_ON = {date!r}\n"
        f"NCCL_VERSION = {T.NCCL_VERSION!r}\n\n"
        f"ALL = {pprint.pformat(params_all, width=98, sort_dicts=True)}\n\n"
        f"LORO = {pprint.pformat(loro, width=98, sort_dicts=True)}\n"
    )
    rows = evaluate(runs, loro)
    (ROOT / "docs").mkdir(exist_ok=True)
    (ROOT / "docs" / "fidelity.md").write_text(fidelity_markdown(rows, date))
    print(fidelity_markdown(rows, date))
    print("ALL =", params_all)


if __name__ == "__main__":
    main()
