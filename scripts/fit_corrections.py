"""Fit the correction terms of costmodel/corrections.py on the reference nccl-tests runs.

Usage: ``python scripts/fit_corrections.py [--refit-ablation | --docs-only | --bands-only |
--try TERMS]``
(about 20 CPU-s per fold, 27 folds (sources, fabric families, op classes) spread over 2
processes: 10-30 min wall on 2 shared cores; ``--refit-ablation`` refits every fold with each
term off, about 8x; ``--docs-only`` rewrites the report from the fitted file; ``--bands-only`` recomputes the
error bands and their coverage from the file's fold parameters (then ``--docs-only``);
``--try a,b`` is
the quick grouped-CV check of candidate terms on the shipped folds, :func:`try_terms`). Writes
``costmodel/data/fitted_corrections.toml`` (ALL = fitted on every run; CV[run] = fitted on every
run of the other sources, grouped cross-validation, :func:`group_of`; the error bands per regime)
and ``docs/fidelity.md`` + ``costmodel/data/fidelity.md`` (per-run median |busbw error| of the
lesson (flat ring), NCCL-table and full models, the full model in-sample and grouped-CV; the
ablation of every correction term). tests/test_fidelity.py imports this file for RUNS and
evaluate().

Every run is predicted from its cluster preset alone plus what the run's own header states about
how it was launched (nodes, GPUs per node, GPUs per process ``-g``, NCCL_ALGO/PROTO,
NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE); nothing is tuned by hand to a file.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodel import corrections as C  # noqa: E402
from costmodel import nccl  # noqa: E402
from costmodel import predict as P  # noqa: E402
from costmodel import tables as T  # noqa: E402
from costmodel.fabrics import (  # noqa: E402
    achievable_fractions,
    node_rates_gbs,
    prior_latency_us,
    proxy_driven_fabrics,
)
from costmodel.reference import reference_dir  # noqa: E402
from costmodel.validation.compare import REGIME_GOALS as _COMPARE_REGIME_GOALS  # noqa: E402
from costmodel.validation.compare import busbw_rel_error  # noqa: E402

DATA = reference_dir("nccl-tests")  # the published runs bundled in costmodel/data/reference


# The index of the bundled runs (preset, nodes, GPUs per node, trust, per-run overrides, what
# each header states) lives in the package, the one source the CLI and the app default a bundled
# log's cluster from: costmodel/validation/reference_runs.py. RunSpec is its BundledRun.
# the groups are re-exported: tests and scripts/calibration_holdout.py read them from here
from costmodel.validation.reference_runs import (  # noqa: E402, F401
    BUSBW_ONLY_RUNS,
    NEWER_RUNS,
    NOT_FITTED,
    PCIE_P2P_RUNS,
    POLARIS_RUNS,
    RUNS,
)
from costmodel.validation.reference_runs import BundledRun as RunSpec  # noqa: E402

# Runs scored but never fitted on (not in RUNS, so no fitting step, fold, band or coverage in
# costmodel/data/fitted_corrections.toml sees them): the report predicts them with the shipped
# parameters, which is exactly grouped CV for them (the fit without their source is the fit on
# every run), as a check on a cluster the model has never seen. Empty today (26, the last one,
# joined the fit); the mechanism stays for the next run bundled before a refit: add its RunSpec
# here, its bound to UNSEEN_BOUNDS and its regimes' coverage to UNSEEN_COVERAGE_BOUNDS.
UNSEEN_RUNS: tuple[RunSpec, ...] = ()

# Do the busbw-only runs enter the fit? Decided by grouped CV: they would stay out
# unless including them lowers the grouped-CV score (_score, the ablation's score). Of today's
# fitting steps only the host floor sees them (the others take multi-node, host-staged, > 8-GPU
# NVLink-domain or high-trust runs), through their 1-4 KiB rows, published to 2 decimals (0.07
# GB/s at 1 KiB: +-7 %; the floor takes the median of the three). Measured 2026-12-01, every
# other term as fitted, all 64 runs scored: without them in any fold's fit 33.57 %, with them
# 33.39 % (-0.18 points). So they enter. The gain is 12a (8 A100 in one process, the same -g 8
# launch: all sizes 51 % -> 23 %, a second -g 8 source for the floor's per-GPU slope); 13a
# (5 -> 9 %), 13c (5 -> 7 %) and 23a (25 -> 26 %) lose a little, and the single-node-nvlink
# median over all sizes rises 5.0 -> 5.7 %. Their own grouped-CV errors do not depend on it
# (their fold never sees them). Set False, fit_runs() drops them before every fitting step.
# (Those scores predate the network ramp and the fabric priors, which leave the host floor and
# the single-node runs unchanged; the margin is small, so re-check it when a term changes.)
FIT_ON_BUSBW_ONLY = True


def fit_runs(runs: list[Run]) -> list[Run]:
    """The runs the fitting steps see: all of ``runs`` but the busbw-only ones, unless
    FIT_ON_BUSBW_ONLY (the grouped-CV decision written above it)."""
    return [r for r in runs if FIT_ON_BUSBW_ONLY or not r.spec.busbw_only]


# nothing is held out of the fit any more: generalisation is measured by grouped CV instead
HELD_OUT_RUNS: tuple[RunSpec, ...] = ()


def group_of(key: str) -> str:
    """The cross-validation group of a run: its source (the two-digit file prefix).

    All sub-runs of one file and all files of one source leave the fit together (13a-f: one
    machine; 15/0-9: Alps; 09a-e; 21a-d: Azure; 24a-d; 16a-c: AWS), so no run is predicted with
    constants fitted on a sibling from the same machine.

    >>> group_of("13d/2"), group_of("15/7"), group_of("24c"), group_of("06a")
    ('13', '15', '24', '06')
    """
    return key.split("/")[0][:2]


# per regime: (bound on the median over runs of the grouped-CV error >= 1 MiB, all sizes), 1-2
# points above the achieved figure; asserted by tests/test_fidelity.py
CV_BOUNDS: dict[str, tuple[float, float]] = {
    # achieved 4.4 % / 5.7 % with the busbw-only 21a-d (4.0 % / 4.4 % before they were scored)
    "single-node-nvlink": (0.06, 0.07),  # goal 8 % / 20 %: met
    # 70.9 % / 39.9 % over 09a-e and 26 (09 alone: 130 % / 63 %, duplex term neutralised;
    # 26, P2P over PCIe Gen5 switches: 12 % / 17 %); unchanged when 26 joined the fit (no
    # fitting step takes its rows, so no fold moved)
    "single-node-pcie": (0.73, 0.42),
    # 7.6 % / 8.9 % (goal 8 %: met by the median, not by every run; 11.5 % before the network
    # ramp and the NIC-bound ring)
    "multi-node-infiniband": (0.09, 0.10),
    # 11.5 % / 15.2 % (goal 15 % from 1 MiB: met; 40 % / 79 % before the cited fabric priors
    # and the network ramp)
    "multi-node-cloud": (0.13, 0.17),
    # 26.9 % / 33.2 % with Polaris 25a-d (two sources; 28.5 % / 32.5 % on Alps alone; was 69 %)
    "multi-node-slingshot": (0.29, 0.35),
}


# per (regime, op class): (bound on the median over runs of the grouped-CV error >= 1 MiB, all
# sizes), 1-2 points above the achieved figure (more where one run is the whole cell), asserted
# by tests/test_fidelity.py so a term that helps one cell cannot quietly hurt another. Measured
# 2026-12-01 after the Polaris runs (25a-e), the single-node cap, the all-to-all NIC efficiency
# and the socket node rate entered the fit.
REGIME_OP_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    ("single-node-nvlink", "all-reduce"): (0.06, 0.06),  # 4.3 % / 4.3 % (goal 8 %: met)
    # goal 8 % / 20 %: met since the Blackwell hop scale (7.8 % / 24.7 % before: 24b-c small sizes)
    ("single-node-nvlink", "all-gather/reduce-scatter"): (0.09, 0.08),
    ("single-node-nvlink", "all-to-all"): (0.27, 0.12),  # 25.2 % / 10.2 % (24d, one source)
    # 80.5 % / 50.4 %: 09a (149 % / 84 %, no P2P) and 26 (12 % / 17 %, P2P; RUN_CV_BOUNDS)
    ("single-node-pcie", "all-reduce"): (0.83, 0.52),
    ("single-node-pcie", "all-gather/reduce-scatter"): (1.69, 1.03),  # 166 % / 101 % (09b)
    ("single-node-pcie", "all-to-all"): (1.32, 0.65),  # 130 % / 63 % (09e)
    ("single-node-pcie", "broadcast/reduce"): (0.11, 0.16),  # 9.3 % / 14.0 % (09c-d)
    ("multi-node-infiniband", "all-reduce"): (0.09, 0.10),  # 7.6 % / 8.9 % (goal 8 %: met)
    ("multi-node-cloud", "all-reduce"): (0.10, 0.16),  # 8.1 % / 14.3 % (goal 15 %: met)
    ("multi-node-slingshot", "all-reduce"): (0.29, 0.34),  # 26.9 % / 32.1 % (goal 15 %)
    ("multi-node-slingshot", "all-gather/reduce-scatter"): (0.27, 0.54),  # 24.6 % / 51.4 %
    ("multi-node-slingshot", "all-to-all"): (0.67, 3.60),  # 64.2 % / 351 % (25d only)
    ("multi-node-other", "all-reduce"): (0.78, 2.40),  # 75 % / 237 % (25e, socket, one source)
}

# per (regime, size class) with a measured (leave one source out) coverage: the achieved range
# of the nominal 80 % band, +-3 points (goal 75-85 %); asserted by tests/test_fidelity.py.
# Measured on the band a prediction carries (the hull of the held-out range and the prediction,
# uncertainty.band_hull) since 2026-12-03; on the range alone it was the same in every cell but
# cloud < 1 MiB (65.4 %, 74.0 % by source), whose bounds were re-derived from the new figure.
# Measured 2026-12-02 with the band weighting each source once (band_of), each run weighted once
# in the coverage; the same cells weighted by source are COVERAGE_BY_SOURCE_BOUNDS. With the band
# weighting each run once (before 2026-12-02): 86.6, 79.2, 79.7, 82.6, 90.2, 65.4, 81.9, 82.0,
# 40.9, 80.5 % in this order (the one-node NVLink band 0.84-1.07 x busbw, set by source 13's 27
# runs, held 58 % of a held-out source's rows, each source once); before the between-source
# spread in quadrature: 79.5, 77.9, 75.8, 74.9, 85.8, 54.6, 87.6, 84.7, 40.4, 80.3 %.
COVERAGE_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    # 93.5 %: NOT met, over-covers: each run weighs once here, so source 13 (H100, 27 of the 38
    # runs, predicted within a few % and inside the others' band 99.7 % of the time) sets it;
    # each source once, 73 % (below)
    ("single-node-nvlink", "ge1MiB"): (0.91, 0.96),
    ("single-node-nvlink", "lt1MiB"): (0.79, 0.85),  # 82.3 %: met
    ("multi-node-infiniband", "ge1MiB"): (0.74, 0.80),  # 76.5 %: met
    ("multi-node-infiniband", "lt1MiB"): (0.80, 0.86),  # 82.6 %: met (2 sources)
    ("multi-node-cloud", "ge1MiB"): (0.86, 0.92),  # 89.4 %: NOT met (over-covers; 3 sources)
    ("multi-node-cloud", "lt1MiB"): (0.66, 0.72),  # 69.3 %: NOT met (3 runs, 2 sources)
    ("multi-node-slingshot", "ge1MiB"): (0.79, 0.85),  # 81.9 %: met (2 sources)
    ("multi-node-slingshot", "lt1MiB"): (0.79, 0.85),  # 82.0 %: met
    # two sources (09 no P2P, 26 P2P)
    ("single-node-pcie", "ge1MiB"): (0.38, 0.44),  # 40.9 %: NOT met (09 no P2P vs 26 P2P)
    ("single-node-pcie", "lt1MiB"): (0.78, 0.84),  # 80.5 %: met
}

# the same cells, each held-out source weighted once (coverage's measured_by_source: what a new
# cluster sees on average), achieved +-3 points; goal 75-85 %. 5 of 10 cells in range.
COVERAGE_BY_SOURCE_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    ("single-node-nvlink", "ge1MiB"): (0.70, 0.76),  # 73.1 % (58 % with the run-weighted band)
    ("single-node-nvlink", "lt1MiB"): (0.67, 0.73),  # 69.6 %: under (15, one run, 25 %)
    ("multi-node-infiniband", "ge1MiB"): (0.72, 0.78),  # 75.1 %: met
    ("multi-node-infiniband", "lt1MiB"): (0.80, 0.86),  # 82.6 %: met
    ("multi-node-cloud", "ge1MiB"): (0.80, 0.86),  # 82.9 %: met
    ("multi-node-cloud", "lt1MiB"): (0.74, 0.80),  # 77.0 %: met (EFA 54 %, TCPX 100 %)
    ("multi-node-slingshot", "ge1MiB"): (0.77, 0.83),  # 80.4 %: met
    ("multi-node-slingshot", "lt1MiB"): (0.68, 0.74),  # 70.7 %: under (Polaris 41 %, Alps 100 %)
    ("single-node-pcie", "ge1MiB"): (0.41, 0.48),  # 44.6 %: under (09 vs 26, a model gap)
    ("single-node-pcie", "lt1MiB"): (0.85, 0.91),  # 88.3 %: over
}


# per run: (bound on its grouped-CV error >= 1 MiB, all sizes, why), 1-2 points above the
# achieved figure, for a run whose own figure a two-run (regime, op class) median would hide;
# asserted by tests/test_fidelity.py. 26 was an unseen run (these were its UNSEEN_BOUNDS); it is
# now fitted on, in its own CV group, and no fitting step takes its rows, so its grouped-CV
# parameters are the fit on every other run, exactly what scored it when it was unseen.
RUN_CV_BOUNDS: dict[str, tuple[float, float, str]] = {
    "26": (
        0.13,
        0.19,
        "8 RTX PRO 6000 over two PCIe Gen5 switches with P2P, ring all-reduce through "
        "torch.distributed: 12 % from 1 MiB, 17 % over all sizes (grouped CV: its source left "
        "out), every miss on the slow side from 16 KB to 64 MiB (the model's time is up to "
        "1.8x the measured one at 256 KB). NCCL's table alone gives 4 % / 14 %: the intra-node "
        "mid-size ramp (`ramp`, fitted on high-trust NVLink runs) is what costs it (4.6 % from "
        "1 MiB without it); from 256 MiB within 2 %.",
    ),
}

# unseen runs (UNSEEN_RUNS): run -> (bound >= 1 MiB, bound all sizes, why), 1-2 points above
# the error measured with the shipped parameters (never fitted on them); tests/test_fidelity.py.
# Empty while UNSEEN_RUNS is.
UNSEEN_BOUNDS: dict[str, tuple[float, float, str]] = {}

# measured (leave one source out) coverage of the regimes with unseen runs, computed by
# with_unseen() (the fitted file's coverage does not include them): achieved +-3 points.
# Empty while UNSEEN_RUNS is (26's single-node PCIe cells are in COVERAGE_BOUNDS now).
UNSEEN_COVERAGE_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {}


# goal from 1 MiB per regime (each op class with data), grouped CV: the goals `validate compare`
# judges a log by (costmodel.validation.compare.REGIME_GOALS, one table)
REGIME_GOALS: dict[str, float] = dict(_COMPARE_REGIME_GOALS)


# per regime that misses the grouped-CV goal under grouped CV: the cause, from the per-run errors
REGIME_GAPS: dict[str, str] = {
    "multi-node-infiniband": "median 7.6 % over 6 runs from 5 sources (goal 8 %: met by the "
    "median; 11.5 % before the network ramp and the NIC-bound ring), but not by every run: "
    "04c (20 NVL72 racks, 46 %: the algorithm NCCL 2.26 ran is not in the source, and the "
    "NIC-bound ring makes the model's Ring faster still) and 02 (16 x 8 A100, 55 %; 47 % in-sample; was 48 % before the Polaris A100 runs entered its fold: the HCA "
    "rate is not stated; its plateau is half the model's) miss; 03 (SHARP, 9 %) is near it; "
    "06a (4 %), 04b (6 %) and 22 (7 %) meet it.",
    "multi-node-cloud": "met from 1 MiB (8.1 %, 11.5 % before Polaris and the new terms; goal 15 %; 40 % before the cited fabric "
    "priors and the network ramp); all sizes 15 %. Every cloud fabric has one source (16: EFA, "
    "20: GPUDirect-TCPX, 23: Spectrum-X RoCE); under grouped CV each is predicted with the "
    "cited priors of costmodel/data/fabric_priors.toml (EFA: 17 us per step) and the network "
    "ramp fitted on the others. Left: EFA v1 (16a, 28 %: mid sizes up to 2x the model's "
    "time), 16c (31 %; 20 % before Polaris joined the proxy-driven ramp's fit), and TCPX (20) "
    "still has a 1.6-1.8 ms floor from 1 to 16 MiB that no "
    "term models and no public figure explains.",
    "multi-node-slingshot": "two sources now (Alps 15, ALCF Polaris 25a-d): 27 % from 1 MiB "
    "over 13 runs (goal 15 %: not met). Polaris' all-reduce and all-gather plateau at 36 GB/s "
    "busbw, 72 % of the 2 x 200G per node that ALCF's documentation states (a later log in the "
    "same repository reports 4 NICs, which would make it 36 %); the model gives the cited 93 %. "
    "Alps at 2-4 nodes stays 23-27 % off. The Slingshot Tree efficiency, fitted on one site "
    "and checked on the other, now passes the ablation by a hair. 25d (all-to-all) keeps a "
    "290-630 us small-size time, 10-20 us per remote peer, that no term carries.",
    "single-node-pcie": "two sources, both single-node: 09 (2 x RTX 2080 Ti without P2P) "
    "and 26 (8 x RTX PRO 6000 over PCIe Gen5 switches with P2P, timed through PyTorch; fitted "
    "on since the last refit, its own CV group, so its figure is still held out). 09: the "
    "host-staged duplex sharing is fitted on 09 alone, so grouped CV cannot assess it; "
    "all-reduce, all-gather and all-to-all are predicted 2-3x too fast without it. 26: 12 % "
    "from 1 MiB, 17 % over all sizes, the model too slow at mid sizes (the NVLink-fitted "
    "intra-node ramp; NCCL's table alone: 4 %). The median over the six runs (71 %) mixes "
    "the two kinds of box; the band now pools both sources and covers 40 % of the >= 1 MiB "
    "rows left one source out (09's band misses 26 and 26's misses 09).",
}


# Goal runs that miss the goals (<= 8 % from 1 MiB up, <= 20 % over all sizes): run ->
# (bound >= 1 MiB, bound all sizes, why). The bounds sit 1-2 points above the achieved
# in-sample figure and are asserted by tests/test_fidelity.py as regression bounds.
NOT_MET: dict[str, tuple[float, float, str]] = {
    "04a": (
        0.18,
        0.18,
        "one GB200 NVL72 rack (72 GPUs, NVLS off): NCCL's Blackwell per-link NVLink constant "
        "(40.1 GB/s) is below what the rack delivers. The NVLink-domain scale that fixed it "
        "(7 % with it) is fitted on 04 alone, so grouped CV cannot show that it generalises "
        "and the ablation rule neutralised it; a second multi-node NVLink domain source "
        "would let it back in.",
    ),
    "04c": (
        0.48,
        0.48,
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
        "regression to 55 %. The NIC-bound ring (C.ring_nic_fraction, kept by the grouped-CV "
        "ablation for 22 and 04b) moves it from 41 % to 46 %.",
    ),
}


# High-trust multi-node runs on fabrics NCCL reaches through aws-ofi-nccl (not goal runs: the
# issue's goals are for NVSwitch/InfiniBand). Regression bounds (>= 1 MiB), 1-3 points above the
# achieved leave-one-run-out figure, asserted by tests/test_fidelity.py, and why each is off.
OFI_BOUNDS: dict[str, tuple[float, str]] = {
    "15/1": (
        0.21,
        "2 nodes: NCCL's Tree with bwIntra raised to 2 x bwInter (search.cc pass 2) "
        "gives 145 GB/s busbw at 1-4 GiB where 155-158 is measured; 2-32 MiB rows are "
        "slower than any NCCL protocol's model (LL128 is off on NCCL 2.23's PHB "
        "GPU-NIC path). Was 10 % (bound 12 %) before the corrections entered the choice: the "
        "refitted global ramp and fabric latency moved it to 14 %, and the network ramp's "
        "proxy-driven multiplier (fitted across EFA, TCPX and Slingshot) to 19 %.",
    ),
    "15/2": (
        0.25,
        "4 nodes: Ring at 4 x 25 GB/s from 64 MiB up; 5 % before the network ramp's "
        "proxy-driven multiplier, which is set by three fabrics and too large here (23 %).",
    ),
    "15/5": (
        0.11,
        "32 nodes: Tree at NCCL's InfiniBand constants up to 16 MiB, Ring/LL128 above; "
        "1-16 MiB rows vary by 2x between neighbouring sizes (shared machine). 9 % in-sample, "
        "25 % under grouped CV: the Slingshot Tree efficiency, neutralised while it was fitted "
        "on Alps alone, is kept since Polaris (25) is a second Slingshot source "
        "(docs/fidelity.md, ablation).",
    ),
    "15/6": (
        0.12,
        "64 nodes: NCCL 2.23 switched to Ring at 1 GiB; NCCL 2.30's table keeps Tree "
        "to 2 GiB (Ring's 510-step latency); 10 % in-sample, 23 % under grouped CV, with the "
        "Slingshot Tree efficiency kept (two Slingshot sources).",
    ),
    "15/7": (
        0.13,
        "128 nodes: as 64 nodes; NCCL 2.23 ran Ring from 2 GiB, 2.30's table Tree. 11 % "
        "in-sample, 15 % under grouped CV. The bounds of 15/5-15/7 were 32, 51 and 46 % until "
        "2026-12-04, grouped-CV figures left from when this check was leave-one-run-out.",
    ),
    "16a": (
        0.12,
        "2 x p4de, EFA v1 4 x 100G: 1-64 MiB take 2-3x NCCL's time (aws-ofi-nccl "
        "per-message cost): the fitted EFA latency and the network ramp's proxy-driven "
        "multiplier take most of it (10 %; 44 % before). From 512 MiB within 7 %.",
    ),
    "16b": (
        0.08,
        "2 x p5, EFA v2 32 x 100G: NVLSTree (6 %; 5 % before the network ramp, whose "
        "proxy-driven multiplier is set by the slower EFA v1, TCPX and Slingshot runs).",
    ),
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
    #: rows NCCL never runs on NVLS (int8, fp8, float max, ...: compare.nvls_off_rows),
    #: predicted with NVLS off as ``validate compare`` predicts them; None: no such row
    nvls_off: np.ndarray | None = None

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
    from costmodel.validation.compare import nvls_off_rows
    from costmodel.validation.nccl_tests import read_nccl_tests

    out = []
    for spec in specs:
        (path,) = sorted(DATA.glob(f"{spec.prefix}_*.txt"))
        if spec.busbw_only:
            out.append(_busbw_only_run(spec, path))
            continue
        if spec.torch_table:
            out.append(_torch_table_run(spec, path))
            continue
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
                    nvls_off=nvls_off_rows(r) if nvls_off_rows(r).any() else None,
                )
            )
    return out


def _busbw_only_run(spec: RunSpec, path: Path) -> Run:
    r"""One busbw-only table (:func:`read_busbw_table`) as a :class:`Run`.

    The table has no times. So that one evaluation path serves every run, the row's busbw is
    turned into the time it stands for, by nccl-tests' own definition (doc/PERFORMANCE.md:
    algbw = M / t, busbw = algbw x factor(op, n)):

    .. math:: t = M \cdot f(n) / \mathrm{busbw} \quad [\mathrm{s} = \mathrm{B} / (\mathrm{B/s})]

    with ``M`` the exact power of two the rounded label stands for and ``f(n) = 2(n-1)/n`` for
    all-reduce. This is a unit conversion, not a measurement: :func:`errors` then gives
    t_meas / t_pred - 1 = busbw_pred / busbw_meas - 1 exactly, the busbw error of the row.
    """
    from costmodel.collectives import busbw_factor
    from costmodel.presets import cluster as load_cluster
    from costmodel.validation.nccl_tests import read_busbw_table

    df = read_busbw_table(path)
    ranks = spec.ranks or int(df.ranks.iloc[0])
    g = spec.gpus_per_node or ranks // (spec.nodes or 1)
    nodes = spec.nodes or ranks // g
    if nodes * g != ranks:
        raise ValueError(f"{spec.prefix}: {nodes} x {g} GPUs but the header says {ranks} ranks")
    over = spec.per_run.get(0, {})
    algo = over.get("algorithm", "auto")
    op = str(df.op.iloc[0])
    size = df.size_bytes.to_numpy(float)
    # unit conversion t = M f(n) / busbw (docstring): NOT a measured time
    time_s = size * float(busbw_factor(op, ranks)) / df.busbw_bytes_per_s.to_numpy(float)
    return Run(
        key=spec.prefix,
        spec=spec,
        op=op,
        nodes=nodes,
        gpus_per_node=g,
        gpus_per_process=spec.gpus_per_process or g,
        algorithm=nccl.normalize_algorithm(algo) if algo != "auto" else "auto",
        protocol="auto",
        trust=over.get("trust", spec.trust),
        size=size,
        time_s=time_s,
        cluster=load_cluster(spec.preset, nodes=nodes, gpus_per_node=g),
    )


_BINARY = {"KB": 2**10, "MB": 2**20, "GB": 2**30}


def read_torch_tables(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Sizes [B] and group A times [s] of run 26's two markdown tables (PyTorch-timed ring
    all-reduce on 8 GPUs; binary size labels, as its header checks against the time column).

    Table 7 (4 KB-4 MB) prints the time per call; table 6 (1 MB-1 GB) prints algbw only, so its
    time is M / algbw (nccl-tests' definition, algbw = M / t). Where both tables have a size
    (1 MB, 4 MB) the printed time of table 7 is kept; each size appears once, in size order.
    """
    times: dict[int, float] = {}
    table = ""
    for line in text.splitlines():
        if line.startswith("### "):
            table = "time" if "small" in line else "algbw"
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"(\d+)\s*(KB|MB|GB)", cells[0]) if len(cells) > 2 else None
        if not m or not table:
            continue
        size = int(m[1]) * _BINARY[m[2]]
        if table == "time":
            t = float(cells[1].split()[0]) * 1e-6  # "23.93 µs"
        else:
            if size in times:
                continue  # table 7's printed time wins
            t = size / (float(cells[1].split()[0]) * 1e9)  # algbw "12.33 GB/s"
        times[size] = t
    if not times:
        raise ValueError("no torch table rows (want '| 4 KB | 23.93 µs | ...' rows)")
    sizes = np.array(sorted(times), dtype=float)
    return sizes, np.array([times[int(s)] for s in sizes])


def _torch_table_run(spec: RunSpec, path: Path) -> Run:
    """Run 26 (:func:`read_torch_tables`) as a :class:`Run`: one all-reduce, one node."""
    from costmodel.presets import cluster as load_cluster

    size, time_s = read_torch_tables(path.read_text(encoding="utf-8"))
    g, nodes = int(spec.gpus_per_node or 0), int(spec.nodes or 1)
    return Run(
        key=spec.prefix,
        spec=spec,
        op="all_reduce",
        nodes=nodes,
        gpus_per_node=g,
        gpus_per_process=spec.gpus_per_process,
        algorithm="auto",
        protocol="auto",
        trust=spec.trust,
        size=size,
        time_s=time_s,
        cluster=load_cluster(spec.preset, nodes=nodes, gpus_per_node=g),
    )


UNSEEN_KEYS = frozenset(s.prefix for s in UNSEEN_RUNS)


def unseen_params(
    runs: list[Run], params: dict[str, dict], params_all: dict, kind: str = "source"
) -> dict[str, dict]:
    """``params`` (per fitted run, one fold kind) plus an entry for every run of ``runs`` it
    lacks that is an unseen run (:data:`UNSEEN_RUNS`: never in any fit). Such a run's fold is
    the fit without its :func:`fold_key`: for a source, the fit on every run (``params_all``);
    for a fabric family or an op class, the same fold as any fitted run that shares the key.
    A fitted run without parameters is a stale file: KeyError."""
    out = dict(params)
    for r in runs:
        if r.key in out:
            continue
        if r.spec.prefix not in UNSEEN_KEYS:
            raise KeyError(f"no fold parameters for fitted run {r.key}: stale fitted file")
        key = fold_key(r, kind)
        same = [o.key for o in runs if o.key in params and fold_key(o, kind) == key]
        out[r.key] = params[same[0]] if same else params_all
    return out


def predict_run(run: Run, model: str, params=None) -> np.ndarray:
    """Predicted time per row of a run; rows NCCL never runs on NVLS (``run.nvls_off``: 23b's
    int8 and fp8 rows) with NVLS off, as ``validate compare`` predicts them."""

    def times(size: np.ndarray, nvls: bool | None) -> np.ndarray:
        p = P.predict_collective(
            run.op,
            size,
            run.cluster,
            nodes=run.nodes,
            gpus_per_node=run.gpus_per_node,
            algorithm=run.algorithm if model in ("nccl", "nccl-table") else "auto",
            protocol=run.protocol if model in ("nccl", "nccl-table") else "auto",
            model=model,
            gpus_per_process=run.gpus_per_process,
            nvls=nvls,
            collnet_enabled=run.spec.collnet,
            params=params,
            harness=run.spec.harness,
        )
        return np.asarray(p.time_s, dtype=float)

    t = times(run.size, run.spec.nvls).copy()  # the prediction's own array is read-only
    if run.nvls_off is not None:
        t[run.nvls_off] = times(run.size[run.nvls_off], False)
    return t


def errors(run: Run, t_pred: np.ndarray) -> np.ndarray:
    """Relative busbw error per row: busbw_pred / busbw_meas - 1 = t_meas / t_pred - 1 (the
    harness's one error, ``compare.busbw_rel_error``)."""
    return np.asarray(busbw_rel_error(run.time_s, t_pred), dtype=float)


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
    """host floor a + b g + c (p - 1): least squares (non-negative) of each single-node run's
    small-size time on g (GPUs per process) and p (processes per node). c is identified only
    by single-node runs with one process per GPU (15/0, 24a-d); with none in a fold it is 0."""
    rows, ys = [], []
    for r in runs:
        sel = r.size <= 4096
        if r.nodes == 1 and sel.sum() >= 3:
            procs = max(1, r.gpus_per_node // max(1, r.gpus_per_process))
            rows.append((1.0, float(r.gpus_per_process), float(procs - 1)))
            ys.append(float(np.median(r.time_s[sel])) * 1e6)
    zero = {"host_base_us": 0.0, "host_per_gpu_us": 0.0, "host_per_process_us": 0.0}
    if not rows:
        return zero
    X, y = np.asarray(rows), np.asarray(ys)
    cols = [k for k in range(3 if PER_PROCESS_FLOOR else 2) if np.ptp(X[:, k]) > 0 or k == 0]
    coef = np.zeros(3)
    while True:  # non-negative least squares by dropping negative columns (3 unknowns)
        sol, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
        if (sol >= 0).all() or len(cols) == 1:
            coef[:] = 0.0
            coef[cols] = np.maximum(sol, 0.0)
            break
        cols = [c for c, v in zip(cols, sol, strict=True) if v >= 0 or c == 0]
    return {
        "host_base_us": float(coef[0]),
        "host_per_gpu_us": float(coef[1]),
        "host_per_process_us": float(coef[2]),
    }


# The per-process floor term (c above, costmodel.corrections.host_floor_s) is built but off.
# Decided by grouped CV on 2026-12-01: c is identified only by single-node runs with one process
# per GPU, two sources (15/0: 4 GH200; 24a-d: 8 B200, launch not stated), so each source's fold
# fits it from the other, which points the other way (15/0's floor sits below a + b). Ablation:
# neutralised, -0.01 points (no gain); refitted, score 20.07 % without it and 20.02 % with it
# (-0.05 points), but the joint fit moves a from 8.5 to 3.1 us and b from 3.3 to 4.0 us and the
# cloud regime from 16 % to 22 % from 1 MiB (its -g 8 run 23a). The gain is below the noise of
# two sources, so it stays off until a third source of one-process-per-GPU single-node floors
# (or a cited prior for c) is bundled; host_floor_s keeps the term for calibrated presets.
PER_PROCESS_FLOOR = False


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
    fitted = {f: max(0.0, float(np.median(v))) for f, v in per_fabric.items()}
    # a fabric without a multi-node run here (its only source left out of this fold, or never
    # measured) takes its cited prior (costmodel/data/fabric_priors.toml), not NCCL's IB value
    return {"fabric_latency_us": {**prior_latency_us(), **fitted}}


def _prior_ring_nic(runs: list[Run], params: dict) -> dict:
    """Multi-node Ring/Simple at the cited achievable fraction of the NICs (C.ring_nic_fraction):
    the priors, not fitted; the grouped-CV ablation decides whether it stays."""
    return {"ring_nic_fraction": achievable_fractions()}


def _prior_fraction(runs: list[Run], params: dict) -> dict:
    """Achievable fraction of line rate per fabric: the cited priors, not fitted (the bundled
    runs are the test of whether they help: grouped-CV ablation below)."""
    return {"fabric_achievable_fraction": achievable_fractions()}


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


def _fit_ramp(runs: list[Run], params: dict) -> dict:
    """Mid-size ramp on the high-trust runs: minimise the median over runs of the median |error|
    from 1 MiB up (medians, so one badly identified fabric does not set it for all).

    Every grid point runs the full model: the ramp enters each candidate's cost before the
    choice, so a larger amplitude can move the choice (e.g. Simple to LL128) and the
    time is not linear in it."""
    runs = [r for r in runs if r.trust == "H"]
    best, best_err = (0.0, 1.0), math.inf
    for knee in 2.0 ** np.arange(22, 35, 2):
        for phi in np.arange(0.0 if knee == 2.0**22 else 0.04, 0.42, 0.04):  # phi 0: no knee
            p = _base(params, ramp_phi=float(phi), ramp_knee_bytes=float(knee), fabric_ramp_phi={})
            errs = []
            for r in runs:
                e = np.abs(errors(r, predict_run(r, "nccl", p)))[r.size >= 2**20]
                if e.size:
                    errs.append(np.median(e))
            err = float(np.median(errs))
            if err < best_err - 1e-9:
                best, best_err = (float(phi), float(knee)), err
    return {"ramp_phi": round(best[0], 2), "ramp_knee_bytes": best[1]}


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


def _fabric_fit_runs(runs: list[Run], fabric: str) -> list[Run]:
    """A fabric's multi-node runs a per-fabric term is fitted on: its high-trust runs where it
    has some, else its medium-trust ones (20, 23a-b); empty where the fit has none."""
    multi = [r for r in runs if r.nodes > 1 and r.cluster.fabric == fabric]
    return [r for r in multi if r.trust == "H"] or [r for r in multi if r.trust == "M"]


def _fit_fabric_ramp(runs: list[Run], params: dict) -> dict:
    """Per fabric of C.PER_MESSAGE_FABRICS: the mid-size ramp amplitude on its multi-node runs
    (high-trust where it has some, else medium; the global knee and shape; grid 0-4, minimising
    the median of run medians from 1 MiB up)."""
    out = {}
    for fabric in C.PER_MESSAGE_FABRICS:
        sel = _fabric_fit_runs(runs, fabric)
        if not sel:
            continue
        best, best_err = 0.0, math.inf
        for phi in np.arange(0.0, 4.01, 0.1):  # the full model per point (choice may move)
            p = _base(params, fabric_ramp_phi={fabric: float(phi)})
            errs = []
            for r in sel:
                e = np.abs(errors(r, predict_run(r, "nccl", p)))[r.size >= 2**20]
                if e.size:
                    errs.append(np.median(e))
            err = float(np.median(errs)) if errs else math.inf
            if err < best_err - 1e-9:
                best, best_err = float(phi), err
        out[fabric] = round(best, 2)
    return {"fabric_ramp_phi": out}


def _group_median_error(
    runs: list[Run], params: dict, lo: float = 2**20, hi: float = math.inf
) -> float:
    """Median over sources (CV groups) of the mean over each source's runs of the run's median
    |error| over sizes lo..hi: one source with many runs (Alps: 10) counts once."""
    per: dict[str, list[float]] = {}
    for r in runs:
        sel = (r.size >= lo) & (r.size <= hi)
        if sel.any():
            e = np.abs(errors(r, predict_run(r, "nccl", params)))[sel]
            per.setdefault(group_of(r.key), []).append(float(np.median(e)))
    return float(np.median([np.mean(v) for v in per.values()])) if per else math.inf


PLATEAU_OK = 0.15  # see _fit_net_ramp
# the ramp is fitted on the rows it acts on, 1 MiB to 512 MiB (above, the plateau; a run's
# median from 1 MiB up is set by its many large sizes and barely sees a ramp)
RAMP_HI = 2.0**29
# the network ramp's fade beyond its knee, (knee / M)^beta: 1/2 (slow) or 1 (a pipeline fill of
# fixed duration); chosen by the same objective as the amplitude
NET_RAMP_EXPONENTS = (0.5, 1.0)


def _fit_net_ramp(runs: list[Run], params: dict) -> dict:
    """Network mid-size ramp (C.net_ramp_phi), two parameters and a knee, each fitted on
    several sources so grouped CV can tell whether it generalises:

    1. amplitude and knee on the multi-node runs of verbs fabrics (InfiniBand, RoCE: NCCL's
       own transport) that have rows from 1 MiB to 64 MiB (the others cannot see a ramp);
    2. one multiplier for every proxy-driven fabric (cited per fabric in
       costmodel/data/fabric_priors.toml: EFA, Slingshot, TCPX, TCPXO), on theirs.

    Objective: median over sources of the source's mean run median |error| from 1 MiB to
    512 MiB (:func:`_group_median_error`), so a source with many runs does not set it alone."""
    proxy = set(proxy_driven_fabrics())

    def eligible(r: Run) -> bool:
        mid = ((r.size >= 2**20) & (r.size <= 2**26)).sum() >= 3
        big = r.size >= 2**30
        if not (r.nodes > 1 and r.trust in ("H", "M") and mid and big.any()):
            return False
        # a run whose plateau the model misses by more than 15 % cannot inform a ramp (its
        # mid-size error is a bandwidth error: 02, whose HCA rate is not stated)
        e = np.abs(errors(r, predict_run(r, "nccl", params)))[big]
        return float(np.median(e)) <= PLATEAU_OK

    verbs = [r for r in runs if eligible(r) and r.cluster.fabric not in proxy]
    proxied = [r for r in runs if eligible(r) and r.cluster.fabric in proxy]
    best, best_err = (0.0, 1.0, 0.5), math.inf
    for beta in NET_RAMP_EXPONENTS if verbs else ():
        for knee in 2.0 ** np.arange(22, 33, 2):
            for phi in np.arange(0.0 if knee == 2.0**22 else 0.05, 1.01, 0.05):
                p = _base(
                    params,
                    net_ramp_phi=float(phi),
                    net_ramp_knee_bytes=float(knee),
                    net_ramp_exponent=float(beta),
                )
                err = _group_median_error(verbs, p, hi=RAMP_HI)
                if err < best_err - 1e-9:
                    best, best_err = (float(phi), float(knee), float(beta)), err
    phi, knee, beta = round(best[0], 2), best[1], best[2]
    out = {
        "net_ramp_phi": phi,
        "net_ramp_knee_bytes": knee,
        "net_ramp_exponent": beta,
        "fabric_net_ramp_scale": {},
    }
    if phi <= 0 or not proxied:
        return out
    best_s, best_err = 1.0, math.inf
    for s in np.arange(1.0, 12.01, 0.5):
        p = _base(params, **{**out, "fabric_net_ramp_scale": {f: float(s) for f in proxy}})
        err = _group_median_error(proxied, p, hi=RAMP_HI)
        if err < best_err - 1e-9:
            best_s, best_err = float(s), err
    out["fabric_net_ramp_scale"] = {f: best_s for f in sorted(proxy)}
    return out


def _fit_node_rate(runs: list[Run], params: dict) -> dict:
    """Per host-copy fabric (a cited node_rate_gbs prior: the socket transport): the median over
    its multi-node runs of the median measured busbw from 64 MiB (C.fabric_node_rate_gbs); a
    fabric without such a run here keeps its cited prior."""
    from costmodel.collectives import busbw_factor

    priors = node_rates_gbs()
    per: dict[str, list[float]] = {}
    for r in runs:
        sel = r.size >= 2**26
        if r.nodes < 2 or r.cluster.fabric not in priors or not sel.any():
            continue
        f = float(busbw_factor(r.op, r.nodes * r.gpus_per_node))
        busbw = r.size[sel] * f / r.time_s[sel] / 1e9
        per.setdefault(r.cluster.fabric, []).append(float(np.median(busbw)))
    fitted = {f: float(np.median(v)) for f, v in per.items()}
    return {"fabric_node_rate_gbs": {**priors, **fitted}}


def _fit_a2a(runs: list[Run], params: dict) -> dict:
    """Multi-node all-to-all from 64 MiB: median over runs of median(predicted at e = 1 /
    measured time), the share of the NIC bandwidth reached (C.a2a_net_efficiency); the cited
    prior C.A2A_NET_EFFICIENCY_PRIOR where this fold has no such run."""
    vals = []
    for r in runs:
        sel = r.size >= 2**26
        if r.op != "all_to_all" or r.nodes < 2 or not sel.any():
            continue
        t = predict_run(r, "nccl", _base(params, a2a_net_efficiency=1.0))[sel]
        vals.append(float(np.median(t / r.time_s[sel])))
    if not vals:
        return {"a2a_net_efficiency": C.A2A_NET_EFFICIENCY_PRIOR}
    return {"a2a_net_efficiency": float(np.clip(np.median(vals), 0.05, 1.0))}


#: fabrics whose effective NIC share is fitted across their sources (C.fitted_nic_fraction): the
#: only fabric with multi-node runs from two sites, Slingshot (Alps 15, Polaris 25)
FITTED_RATE_FABRICS: tuple[str, ...] = ("slingshot",)


def _fit_nic_rate(runs: list[Run], params: dict) -> dict:
    """Per fabric of :data:`FITTED_RATE_FABRICS`: one share of the NICs' line rate for all its
    multi-node runs in this fit (high-trust where it has some, else medium), grid 0.40-1.00,
    minimising the median over sources of the source's mean run median |error| from 1 MiB
    (:func:`_group_median_error`), so neither site sets it alone; none where the fit has no
    such run (the cited share stays)."""
    out: dict[str, float] = {}
    for fabric in FITTED_RATE_FABRICS:
        sel = _fabric_fit_runs(runs, fabric)
        if not sel:
            continue
        best, best_err = 1.0, math.inf
        for f in np.round(np.arange(1.0, 0.39, -0.02), 2):
            table = {**params.get("fabric_fitted_fraction", {}), fabric: float(f)}
            err = _group_median_error(sel, _base(params, fabric_fitted_fraction=table))
            if err < best_err - 1e-9:
                best, best_err = float(f), err
        out[fabric] = best
    return {"fabric_fitted_fraction": out}


def _fit_a2a_peer(runs: list[Run], params: dict) -> dict:
    """Multi-node all-to-all rows <= 64 KiB: median over runs of the median over rows of
    (measured - predicted time) / (remote peers per rank) [us] (C.a2a_peer_latency_us), >= 0;
    0 where this fit has no such run (no cited figure)."""
    vals = []
    for r in runs:
        sel = r.size <= 2**16
        peers = (r.nodes - 1) * r.gpus_per_node
        if r.op != "all_to_all" or r.nodes < 2 or sel.sum() < 3:
            continue
        t0 = predict_run(r, "nccl", _base(params, a2a_peer_latency_us=0.0))[sel]
        vals.append(float(np.median((r.time_s[sel] - t0) * 1e6 / peers)))
    return {"a2a_peer_latency_us": max(0.0, float(np.median(vals))) if vals else 0.0}


#: fabrics whose bundled sites state a GPU-NIC path through the CPU (NCCL_NET_GDR_LEVEL=PHB in
#: the headers of Alps 15 and Polaris 25a-d), where NCCL's tuning.cc leaves LL128 off across
#: nodes (C.net_ll128_enabled)
PHB_NIC_FABRICS: tuple[str, ...] = ("slingshot",)


def _fit_net_ll128(runs: list[Run], params: dict) -> dict:
    """Per fabric of :data:`PHB_NIC_FABRICS` with multi-node runs in this fit (high-trust where
    it has some, else medium): LL128 across nodes off (1) where that lowers the median over
    sources of the source's mean run median |error| from 128 KiB (:func:`_group_median_error`;
    the protocol choice moves from 128 KiB up), else on (0); none where the fit has no such run.
    So the fold without one Slingshot site decides on the other site alone."""
    out: dict[str, float] = {}
    for fabric in PHB_NIC_FABRICS:
        sel = _fabric_fit_runs(runs, fabric)
        if not sel:
            continue
        errs = {}
        for off in (0.0, 1.0):
            table = {**params.get("fabric_net_ll128_off", {}), fabric: off}
            p = _base(params, fabric_net_ll128_off=table)
            errs[off] = _group_median_error(sel, p, lo=2**17)
        out[fabric] = 1.0 if errs[1.0] < errs[0.0] - 1e-9 else 0.0
        print(f"    net_ll128 {fabric}: on {errs[0.0]:.4f}, off {errs[1.0]:.4f}", flush=True)
    return {"fabric_net_ll128_off": out}


def _prior_net_ll128(runs: list[Run], params: dict) -> dict:
    """LL128 off across nodes on every fabric of :data:`PHB_NIC_FABRICS`, as NCCL's tuning.cc
    rule says for a GPU-NIC path through the CPU: the cited prior, not decided on data."""
    return {"fabric_net_ll128_off": dict.fromkeys(PHB_NIC_FABRICS, 1.0)}


def _group_mean_error(runs: list[Run], params: dict, rows: dict[str, np.ndarray]) -> float:
    """Mean over sources (CV groups) of the mean over each source's runs of the run's median
    |error| over its ``rows`` (a mask per run; runs without any are left out)."""
    per: dict[str, list[float]] = {}
    for r in runs:
        if rows[r.key].any():
            e = np.abs(errors(r, predict_run(r, "nccl", params)))[rows[r.key]]
            per.setdefault(group_of(r.key), []).append(float(np.median(e)))
    return float(np.mean([np.mean(v) for v in per.values()])) if per else math.inf


#: grid of C.nvlink_step_latency_scale (1 = NCCL's hop latency; 3 = 1.8 us per LL step)
NVLINK_STEP_GRID = np.round(np.arange(1.0, 3.01, 0.1), 2)


def _fit_nvlink_step(runs: list[Run], params: dict) -> dict:
    """One multiplier on NCCL's per-step NVSwitch hop latency of LL and LL128
    (C.nvlink_step_latency_scale) for the one-node NVLink runs of this fit: grid
    :data:`NVLINK_STEP_GRID`, minimising the mean over sources of the source's mean run median
    |error| over the rows where the host floor does not bind at scale 1 (there the floor, not
    the device, sets the time: a -g 8 run's small sizes say nothing about a hop's latency and
    would otherwise ask for any scale that reaches its floor); 1 where the fit has none."""
    sel = [r for r in runs if regime_of(r) == "single-node-nvlink"]
    if not sel:
        return {"nvlink_step_latency_scale": 1.0}
    one = _base(params, nvlink_step_latency_scale=1.0)
    free = _base(one, host_base_us=0.0, host_per_gpu_us=0.0, host_per_process_us=0.0)
    rows = {r.key: predict_run(r, "nccl", free) >= predict_run(r, "nccl", one) for r in sel}
    best, best_err = 1.0, math.inf
    for s in NVLINK_STEP_GRID:
        err = _group_mean_error(sel, _base(params, nvlink_step_latency_scale=float(s)), rows)
        if err < best_err - 1e-9:
            best, best_err = float(s), err
    return {"nvlink_step_latency_scale": best}


def _is_blackwell(r: Run) -> bool:
    return float(r.cluster.gpu.compute_capability) >= 10.0  # type: ignore[attr-defined]


def _fit_nvlink_step_blackwell(runs: list[Run], params: dict) -> dict:
    """:func:`_fit_nvlink_step` on the Blackwell (compute capability >= 10) one-node NVLink runs
    of this fit only (C.blackwell_nvlink_step_latency_scale): the same grid and rows (where
    the host floor does not bind at scale 1); 1 where the fit has none."""
    key = "blackwell_nvlink_step_latency_scale"
    sel = [r for r in runs if regime_of(r) == "single-node-nvlink" and _is_blackwell(r)]
    if not sel:
        return {key: 1.0}
    one = _base(params, **{key: 1.0})
    free = _base(one, host_base_us=0.0, host_per_gpu_us=0.0, host_per_process_us=0.0)
    rows = {r.key: predict_run(r, "nccl", free) >= predict_run(r, "nccl", one) for r in sel}
    best, best_err = 1.0, math.inf
    for s in NVLINK_STEP_GRID:
        err = _group_mean_error(sel, _base(params, **{key: float(s)}), rows)
        if err < best_err - 1e-9:
            best, best_err = float(s), err
    return {key: best}


#: Candidate terms tried under grouped CV and NOT kept: name -> what it is and its numbers
#: (measured 2026-12-01/02 with :func:`try_terms` on the shipped folds, each step fitted on every
#: source fold's runs; written into docs/fidelity.md). The formulas of all but the proxy ramp stay
#: in costmodel/corrections.py at their no-op values and ``--try NAME`` re-runs the check
#: (``net_ll128_off_prior`` is the cited-prior form of ``net_ll128_off``).
TRIED_NOT_KEPT: dict[str, str] = {
    "fitted_nic_rate": "one Slingshot share of the NICs' line rate fitted across Alps and "
    "Polaris together (C.fitted_nic_fraction, replacing the cited 0.93). Each site's fold, "
    "fitted on the other site, chooses 1.00 (from 1 MiB, and also fitted on >= 256 MiB only), "
    "never the 0.72 of Polaris' plateau: the mid-size rows under the network ramp dominate. "
    "Score 26.03 -> 25.98 % (-0.05 points); Alps better (15/2 23 -> 17 %, 15/5 25 -> 23 %), "
    "Polaris worse (25a 21 -> 23 %, 25b 27 -> 28 %, 25c 25 -> 26 %): Slingshot all-reduce "
    "26.9 -> 27.1 %, all-gather 24.6 -> 26.4 % from 1 MiB. Estimated directly instead (median "
    "busbw from 256 MiB over line rate, high-trust runs): Polaris gives 0.71, which makes Alps "
    "3-15 points worse from 1 MiB (15/5 25 -> 38 %); Alps gives 0.91, Polaris within a point. "
    "Not kept: a cell gets worse.",
    "a2a_peer_latency": "a multi-node all-to-all's fixed cost per remote peer "
    "(C.a2a_peer_latency_us): 21.5 us per peer on 25d's rows <= 64 KiB; in-sample 25d goes "
    "from 50 % / 324 % to 33 % / 38 % (>= 1 MiB / all sizes). But 25d is the only multi-node "
    "all-to-all: its own fold has none and fits 0, so grouped CV is unchanged (64 % / 351 %, "
    "delta 0). Not kept until a second source of multi-node all-to-all is bundled.",
    "slingshot_net_ramp": "the proxy ramp multiplier fitted on the Slingshot runs alone (not "
    "shared with EFA and TCPX): score -0.24 points (15/8-9, medium trust), but Slingshot "
    "all-reduce 26.9 / 32.1 -> 27.1 / 33.2 % (>= 1 MiB / all): the fold without Alps fits 8.5 "
    "on Polaris where Alps' large sizes want less. Not kept (no code kept for it).",
    "net_ll128_off": "the mechanism both Slingshot sites share: their GPUs reach the NICs "
    "through the CPU (both set NCCL_NET_GDR_LEVEL=PHB to get GPUDirect RDMA at all), and "
    "NCCL's tuning.cc enables LL128 across nodes only on a path through PCIe switches "
    "(typeInter <= PATH_PXB), so NCCL ran LL or Simple there while the model chose LL128 "
    "over most of 128 KiB-64 MiB (C.net_ll128_enabled, fabric_net_ll128_off). Two forms, on "
    "the shipped folds (26 included): (1) decided per fold on the fold's Slingshot runs "
    "(median over sources from 128 KiB): the fold without Alps decides on Polaris (47.0 % off "
    "vs 48.3 % on: off), the fold without Polaris on Alps (24.3 % off vs 17.7 % on: on), so "
    "all of the gain is Alps predicted with Polaris' choice. Score 25.87 -> 24.98 %; "
    "Slingshot all-reduce 26.9 / 32.1 -> 23.6 / 26.9 % (>= 1 MiB / all; from 1 MiB 15/3, "
    "15/4 and 15/9 8-26 points better, 15/5-15/8 0-3, 15/2 one worse, 15/1 27 -> 36 %), no "
    "other cell moves. But the shipped fit (both sites: off) "
    "would make Alps' high-trust 32-128 node runs 7-16 points worse in-sample (15/5 9 -> 25 %) "
    "and 25c 24.5 -> 29.3 %, since the Tree efficiency and the proxy ramp were fitted with "
    "LL128 on. (2) the cited prior, off in every fold: score 24.88 %, all-reduce 22.5 / "
    "26.9 %, but Slingshot all-gather (25c) 24.6 -> 29.4 % from 1 MiB (41.6 % from 51.4 % "
    "over all sizes): a cell worse. (3) the full refit (2026-12-02, 32 min) with the fitted "
    "switch ahead of the Tree efficiency and the ramps, so they refit around it: the ablation "
    "keeps it (+0.47 points) and the Slingshot Tree efficiency moves 0.3 -> 0.6, but the "
    "proxy ramp multiplier it shares with EFA and TCPX refits too: cloud all-reduce 8 / 14 % -> "
    "14 / 16 %, Slingshot all-reduce 27 / 32 -> 26 / 34 %, all-gather 25 / 51 -> 20 / 51 %, "
    "all-to-all 64 / 351 -> 85 / 414 % (>= 1 MiB / all). Not kept: the prior and the full "
    "refit make cells worse, and the quick check's gain rests on one direction of a two-site "
    "split whose sites disagree.",
    "nvlink_step": "why one node's all-gather and reduce-scatter miss at small sizes: NCCL "
    "charges a Ring nsteps x its NVLink hop latency (tuning.cc, ncclTopoTuneModel: 0.6 / 1.9 us "
    "per LL / LL128 step, one row for every GPU generation). On 8 x B200 (24, one process per "
    "GPU, so the host floor, 7.7 us in its fold, sits below the device time) the small sizes "
    "take 16.2 us for all-gather and reduce-scatter (7 steps) and 24.7 us for all-reduce (14) "
    "where NCCL's table gives 10.8 and 15.0 (ring/LL, chosen by both): the excess grows with "
    "the step count (5.4 vs 9.7 us), about 1.3 us per LL step, not a fixed cost, and the "
    "model's LL slope matches from 2 to 8 MiB; not the protocol (LL below 16 MiB in both), "
    "not NVLS (not chosen), not the channels. NCCL's tracker reports a slower small-message "
    "latency on 8 x B200 than on Hopper (NVIDIA/nccl#1940: 3.0 vs 2.3 us). On 13 (-g 4) the "
    "host floor (21 us) hides it (13b's 16.9 us sits below that floor). The term "
    "(C.nvlink_step_latency_scale) scales the hop of Ring/Tree LL and LL128 on one NVSwitch "
    "node (Simple: 04a's 72-GPU ring got 4-9 points worse; a direct NVLink mesh, 15/0: "
    "10 -> 26 % over all sizes), fitted on the one-node NVLink rows where the host floor does "
    "not bind (else the -g 8 A100 runs ask for any scale that reaches their floor). It "
    "generalises: the fold without 24 fits 2.6 on 12a, 13 and 21 (fold values 2.3-2.6). Quick "
    "check: score 25.87 -> 24.68 %, one-node AG/RS 7.8 / 24.7 -> 7.6 / 6.5 % (>= 1 MiB / all; "
    "24b 35 -> 5 %, 24c 48 -> 4 %, 24a 61 -> 10 %, 12a 20 -> 13 % from 1 MiB, 21c 21 -> 6 %), "
    "all-reduce 4.3 / 4.3 -> 4.3 / 4.4 %. Full refit (2026-12-02, fitted last, 2.6): score "
    "25.87 -> 24.92 %, the ablation keeps it (+1.18 points), AG/RS 8 / 25 -> 8 / 6 %, no other "
    "regime x op cell moves; but the single-node NVLink band's coverage from 1 MiB rises 82.3 "
    "-> 86.8 % (bound 79-85 %, goal 75-85 %). Each run weighs once, so source 13 (27 of the "
    "38 runs) sets it: its rows inside the band the other sources give it go 94.2 -> 99.6 % "
    "(that band 0.68-1.07 -> 0.71-1.11 x busbw; 24's 52 -> 56 %, 12a's 47 -> 51 %), and the "
    "between-source spread tau falls 0.207 -> 0.181; InfiniBand's < 1 MiB coverage 83.1 -> "
    "80.3 %, cloud's 65.7 -> 63.1 %. "
    "Fitted ahead of the ramp instead, the ramp refits around it and the PCIe cells get worse "
    "(all-reduce 81 / 50 -> 89 / 54 %, all-gather 166 -> 196 % from 1 MiB). Not kept: a "
    "coverage bound breaks; to ship it, refit with it last in TERMS and re-derive that band. "
    "Shipped that way (2026-12-02: the same numbers; coverage 86.8 %, tau 0.181), it breaks a "
    "cited check outside grouped CV: torch.distributed.all_reduce on 8 x H100 measured 19.19 us "
    "at 128 B (ByteDance-Seed/Triton-distributed#57, the source of the PyTorch-loop prior) and "
    "the model gives 29.5 us (device 25.0 us, NVLS chosen over a 28.4 us Ring/LL; NCCL's "
    "table 15.0), so on H100 the hop is at most 1.5x NCCL's, not 2.6x (and 8 x H100 at 1 MiB "
    "would switch from Ring/LL to NVLS). Not shipped: one scale for every GPU generation does "
    "not fit H100's one small-size measurement; a per-generation scale needs a one-node run "
    "outside Blackwell whose small sizes the host floor does not hide.",
    "nvlink_step_blackwell": "nvlink_step on Blackwell only (compute capability >= 10; "
    "C.blackwell_nvlink_step_latency_scale), fitted on the Blackwell one-node NVLink rows where "
    "the host floor does not bind: 24 (8 x B200), 21d (4 x GB200, -g 4, free from 2 MiB) and "
    "04a (a 72-GPU GB200 rack, free only from 512 MiB, where the hop does not move its median: "
    "flat). H100 and every other generation keep NCCL's hop, so the cited 8 x H100 128 B "
    "all-reduce (19.19 us) is untouched. Not a one-source term: the fold without 24 fits 2.6 on "
    "21d alone (median error 8.9 % at 1, 6.7 % at 1.2-2.4, 5.6 % from 2.6: its 2 MiB row 33 -> "
    "5 %; a staircase, so the level is loosely pinned but > 1), the fold without 21 fits 2.3 on "
    "24 (fold values 2.3-2.6). Quick check (2026-12-02): score 25.87 -> 24.88 %, one-node AG/RS "
    "7.8 / 24.7 -> 7.6 / 6.5 % (>= 1 MiB / all), one-node all-reduce 4.3 / 4.3 unchanged, no "
    "other cell moves; held out, 24a 18.0 / 60.9 -> 12.4 / 10.3 %, 24b 5.1 / 35.0 -> 4.7 / "
    "4.9 %, 24c 2.5 / 47.7 -> 2.8 / 4.2 %, 21d 9.0 / 17.7 -> 7.8 / 11.5 %, 04a 16.1 and 24d "
    "(all-to-all) unchanged: it passes the quick check. Full refit (2026-12-02, fitted last in "
    "TERMS, 2 min on an idle machine; 2.6, folds 2.3-2.6): score 25.87 -> 25.12 %, the ablation "
    "keeps it (+0.98 points), one-node AG/RS 8 / 25 -> 8 / 6 %, no other regime x op cell "
    "moves, tau 0.207 -> 0.199; but the one-node NVLink band's coverage from 1 MiB still rises "
    "82 -> 87 % (86 % with tau re-estimated without the regime; bound 79-85 %, goal 75-85 %; "
    "band 0.82-1.06 -> 0.84-1.07 x busbw), though H100 is untouched: source 13 (27 of the 38 "
    "runs) sets it again, its rows inside the band the other sources give it going 94.2 -> "
    "99.7 % (that band 0.68-1.07 -> 0.69-1.11 x busbw, widened upward by 21d and 24 now "
    "predicted slower; 24's own share 52 -> 57 %, 04a's 10 -> 3 %). KEPT after all (2026-12-02, "
    "the lead's decision): a term that lowers the grouped error in every fold, from two "
    "Blackwell sources, is kept; the band's over-coverage in that one cell (a conservative "
    "band, set by one source's 27 runs) is reported as a gap, not fixed by dropping the term.",
}
TRIED_TERMS: dict[str, object] = {
    "fitted_nic_rate": _fit_nic_rate,
    "a2a_peer_latency": _fit_a2a_peer,
    "net_ll128_off": _fit_net_ll128,
    "net_ll128_off_prior": _prior_net_ll128,
    "nvlink_step": _fit_nvlink_step,
}


# correction term -> the parameters it owns (their no-op values are C.DEFAULT_PARAMS)
TERM_PARAMS: dict[str, tuple[str, ...]] = {
    "host_floor": ("host_base_us", "host_per_gpu_us"),
    "host_per_process": ("host_per_process_us",),
    "fabric_latency": ("fabric_latency_us",),
    "host_staged_duplex": ("host_staged_duplex",),
    "nvl_domain_link_scale": ("nvl_domain_link_scale",),
    "fabric_tree_efficiency": ("fabric_tree_efficiency",),
    "ramp": ("ramp_phi", "ramp_knee_bytes"),
    "fabric_ramp": ("fabric_ramp_phi",),
    "net_ramp": (
        "net_ramp_phi",
        "net_ramp_knee_bytes",
        "net_ramp_exponent",
        "fabric_net_ramp_scale",
    ),
    "achievable_fraction": ("fabric_achievable_fraction",),
    "ring_nic_rate": ("ring_nic_fraction",),
    "fabric_node_rate": ("fabric_node_rate_gbs",),
    "a2a_net_efficiency": ("a2a_net_efficiency",),
    "nvlink_step_blackwell": ("blackwell_nvlink_step_latency_scale",),
}
ABLATION_MODE = ["neutralised"]  # how main() switched terms off (for the report)


def neutralise(params: dict, terms) -> dict:
    """``params`` with every parameter of ``terms`` at its no-op value (C.DEFAULT_PARAMS).

    >>> neutralise({"ramp_phi": 0.1, "ramp_knee_bytes": 2.0, "host_staged_duplex": 0.3},
    ...            {"ramp"})["ramp_phi"]
    0.0
    """
    out = dict(params)
    for t in terms:
        for k in TERM_PARAMS[t]:
            v = C.DEFAULT_PARAMS[k]
            out[k] = dict(v) if isinstance(v, dict) else v
    return out


# correction term -> its fitting step; a term "off" keeps its no-op value (C.DEFAULT_PARAMS)
TERMS: dict[str, object] = {
    "host_floor": _fit_host,
    "host_per_process": lambda runs, params: {},  # fitted with host_floor (_fit_host)
    "fabric_latency": _fit_fabric,
    "achievable_fraction": _prior_fraction,
    "ring_nic_rate": _prior_ring_nic,
    "host_staged_duplex": _fit_duplex,
    "nvl_domain_link_scale": _fit_nvl_scale,
    "fabric_tree_efficiency": _fit_tree_efficiency,
    "ramp": _fit_ramp,
    "fabric_ramp": _fit_fabric_ramp,
    "net_ramp": _fit_net_ramp,
    "fabric_node_rate": _fit_node_rate,
    "a2a_net_efficiency": _fit_a2a,
    # last: fitted ahead of the mid-size ramp it refits the ramp and PCIe gets worse
    "nvlink_step_blackwell": _fit_nvlink_step_blackwell,
}


def fit(runs: list[Run], off: frozenset[str] | set[str] = frozenset()) -> dict:
    """All correction parameters, fitted in order on ``runs``; terms in ``off`` stay no-ops."""
    unknown = set(off) - set(TERMS)
    if unknown:
        raise ValueError(f"off={sorted(unknown)}: allowed terms {list(TERMS)}")
    p = _base({})
    for name, step in TERMS.items():
        if name in off:
            continue
        p.update(step(runs) if name == "host_floor" else step(runs, p))  # type: ignore[operator]
    return _rounded(neutralise(p, off))


def _rounded(p: dict) -> dict:
    out = {}
    for k, v in p.items():
        if isinstance(v, dict):
            out[k] = {kk: round(float(vv), 3) for kk, vv in v.items()}
        else:
            out[k] = round(float(v), 3)
    return out


def evaluate(runs: list[Run], cv: dict[str, dict], params_all: dict | None = None) -> list[dict]:
    """Per run, the three models' summaries: ``nccl`` with the run's grouped-CV parameters
    (fitted without its source), ``in_sample`` (when ``params_all`` is given) with the
    parameters fitted on every run, and the regime and CV group of the run."""
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
            "group": group_of(r.key),
            "regime": regime_of(r),
            "busbw_only": r.spec.busbw_only,
        }
        for model in ("lesson", "nccl-table", "nccl"):
            params = cv[r.key] if model == "nccl" else None
            row[model] = summary(r, predict_run(r, model, params))
        if params_all is not None:
            row["in_sample"] = summary(r, predict_run(r, "nccl", params_all))
        rows.append(row)
    return rows


GOAL_GE_1MIB, GOAL_ALL, GOAL_CLOUD_GE_1MIB = 0.08, 0.20, 0.15


def regime_summary(rows: list[dict]) -> list[dict]:
    """Per regime: runs, sources, median over runs of the grouped-CV and in-sample errors."""
    from costmodel.uncertainty import REGIMES

    out = []
    for reg in REGIMES:
        sel = [r for r in rows if r["regime"] == reg]
        if not sel:
            continue

        def med(key, model, sel=sel):
            v = [r[model][key] for r in sel if not math.isnan(r[model][key])]
            return float(np.median(v)) if v else math.nan

        out.append(
            {
                "regime": reg,
                "runs": len(sel),
                "groups": len({r["group"] for r in sel}),
                "cv_ge1MiB": med("ge1MiB", "nccl"),
                "cv_all": med("all", "nccl"),
                "in_ge1MiB": med("ge1MiB", "in_sample"),
                "in_all": med("all", "in_sample"),
                "table_ge1MiB": med("ge1MiB", "nccl-table"),
            }
        )
    return out


def fabric_priors_markdown() -> list[str]:
    """The cited fabric priors (costmodel/data/fabric_priors.toml) as a markdown section."""
    from costmodel.fabrics import PRIORS

    def num(v, unit=""):
        return "-" if v is None else f"{v:g}{unit}"

    lines = [
        "## Fabric priors (cited, not fitted)",
        "",
        "Used where the fit has no multi-node run of a fabric: in a grouped-CV fold without the",
        "fabric's only source, and in the shipped parameters for fabrics no bundled run measures.",
        "`-`: no public figure found (the model keeps NCCL's InfiniBand behaviour and the error",
        "band says the fabric is unmeasured). Sources in costmodel/data/fabric_priors.toml.",
        "The overhead stands in for `fabric_latency`; the achievable fraction is the",
        "`achievable_fraction` term and proxy-driven selects the fabrics that share the",
        "`net_ramp` multiplier (verdicts in the ablation above).",
        "",
        "| fabric | per-message overhead | achievable fraction | proxy-driven | confidence |",
        "|---|---|---|---|---|",
    ]
    for f, p in PRIORS.items():
        lines.append(
            f"| {f} | {num(p.per_message_overhead_us, ' us')} | {num(p.achievable_fraction)} | "
            f"{'yes' if p.proxy_driven else 'no'} | {p.confidence} |"
        )
    return [*lines, ""]


def tried_terms_markdown() -> list[str]:
    """The candidate terms tried and not kept (:data:`TRIED_NOT_KEPT`), as a markdown section."""
    return [
        "## Tried, not kept",
        "",
        "Kept only if grouped CV (leave one source out) lowers the error without making any",
        "regime x op cell worse (`--try NAME` in scripts/fit_corrections.py re-runs the check):",
        "",
        *(f"- **{name}**: {why}" for name, why in TRIED_NOT_KEPT.items() if name not in TERMS),
        "",
        "Tried first as a candidate, then kept (in TERMS, fitted with the rest):",
        "",
        *(f"- **{name}**: {why}" for name, why in TRIED_NOT_KEPT.items() if name in TERMS),
        "",
    ]


def fidelity_markdown(
    rows: list[dict],
    date: str,
    ablation: dict[str, dict] | None = None,
    base_score: float = math.nan,
    dropped: frozenset[str] = frozenset(),
    band_table: dict | None = None,
    fabrics: list[str] | None = None,
    cover: dict | None = None,
) -> str:
    from costmodel.uncertainty import band_hull, one_sided_note

    def pct(x):
        return "-" if math.isnan(x) else f"{100 * x:.0f}%"

    def cell(s):
        return f"{pct(s['ge1MiB'])} / {pct(s['all'])} / {pct(s['lt64KiB'])}"

    taus = {v["tau"] for cl in (cover or {}).values() for v in cl.values() if "tau" in v}
    tau_txt = ", ".join(f"{t:.3f}" for t in sorted(taus)) or "not measured"
    lines = [
        f"# Fidelity: predicted vs measured nccl-tests busbw ({date})",
        "",
        "Median |busbw error| per run, sizes >= 1 MiB / all sizes / < 64 KiB, for the lesson's",
        "flat-ring alpha-beta model, NCCL 2.30's tuning model alone, and the full model (`nccl`:",
        "NCCL's table plus costmodel/corrections.py) twice: **in-sample** (parameters fitted on",
        "every run) and **grouped CV** (parameters fitted with the run's whole source left out:",
        "all of 13a-f together, all Alps runs 15/0-9, 09a-e, 16a-c, 21a-d, 24a-d, ...; never one",
        "sub-run with its siblings kept). Grouped CV is the figure to expect on a cluster the",
        "model has never seen. Goal (high-trust NVSwitch / InfiniBand runs, marked *):",
        "<= 8% from 1 MiB up, <= 20% over all sizes; cloud fabrics <= 15% from 1 MiB. Written by",
        "scripts/fit_corrections.py (also shipped as costmodel/data/fidelity.md, rendered on the",
        "app's Validate page). 21a-d (Azure, one source) publish only the in-place busbw per",
        "rounded size label, no times: they are marked busbw-only and compared on busbw directly",
        "(error = busbw_pred / busbw_meas - 1 at the power of two each label stands for), and",
        (
            "they enter the fit (like every run, never into their own fold) because with them"
            if FIT_ON_BUSBW_ONLY
            else "they stay out of the fit because without them"
        ),
        "the grouped-CV score below is lower (scripts/fit_corrections.py, FIT_ON_BUSBW_ONLY).",
        "",
        "The full model times every (algorithm, protocol) candidate with the corrections applied",
        "and capped by the hardware bound of its algorithm, then takes the fastest, as a tuner",
        "would (costmodel/realistic.py); tests/test_invariants.py checks bounds and shapes.",
        "",
        "## Per regime (median over runs)",
        "",
        "| regime | runs | sources | grouped CV >= 1 MiB | grouped CV all | in-sample >= 1 MiB "
        "| in-sample all | NCCL table >= 1 MiB | band (±, >= 1 MiB / < 1 MiB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    band_n = (band_table or {}).get("nccl", {})
    for g in regime_summary(rows):
        b = band_n.get(g["regime"], {})
        bcell = " / ".join(
            f"±{100 * b[sc]['half_width']:.0f}%" if sc in b else "-" for sc in ("ge1MiB", "lt1MiB")
        )
        lines.append(
            f"| {g['regime']} | {g['runs']} | {g['groups']} | {pct(g['cv_ge1MiB'])} | "
            f"{pct(g['cv_all'])} | {pct(g['in_ge1MiB'])} | {pct(g['in_all'])} | "
            f"{pct(g['table_ge1MiB'])} | {bcell} |"
        )
    lines += [
        "",
        "## Error bands from the hardest honest split",
        "",
        "Every run is predicted three times: with its whole source left out of the fit (grouped",
        "CV), with its whole fabric family left out (the regime: every run of one node over",
        "NVLink, of InfiniBand, of the cloud fabrics, ...), and with its whole op class left out",
        "(all-reduce; all-gather and reduce-scatter; all-to-all; broadcast and reduce). The band",
        "of a regime and size class pools the busbw ratios (measured / predicted) of all three,",
        "each source weighted once (its runs share its weight): the measured range `lo` - `hi`",
        "is their 10th and 90th percentiles, asymmetric where the misses are one-sided, and",
        "the `±` figure is the 80th percentile of |busbw error|. The band a prediction carries",
        "(`uncertainty.error_band`) is the hull of that range and the prediction itself,",
        "min(lo, 1) to max(hi, 1) x busbw (time band: time / hi to time / lo), so it always",
        "holds its own prediction; where the measured range lies wholly on one side (the model",
        "misses one way), the band runs from the prediction to it and `ErrorBand.one_sided`",
        "(the note beside the band) says which way and by how much. **Few sources widen it**: a",
        "new cluster's median error sits off the others' by a spread S sources cannot show.",
        "That spread, tau, is measured: the pooled standard deviation of the sources' median",
        f"log busbw ratios within a cell, over the cells with >= {SPREAD_MIN_SOURCES} sources "
        f"(tau = {tau_txt}, from every source;",
        "each coverage check below re-estimates it without the held-out source). With S sources",
        "the band adds (z tau / S)^2, z = 1.28 (the normal's 90th percentile), in quadrature to",
        "each side's log spread around the median ratio, and to log(1 + `±`): a narrow band",
        "on one source gains most, a wide band or one on many sources hardly moves. It replaces",
        "a multiplier 1 + 0.2/S^2 on the spread (c = 0.2 picked on these runs' coverage), which",
        "widened the wide bands most: 6 of 10 cells in 75-85 % then (79/78, 76/75, 86/55, 88/85,",
        "40/80 % for NVLink, InfiniBand, cloud, Slingshot, PCIe, >= 1 MiB / < 1 MiB), 7 of 10",
        "with it, no cell leaving the range; 6 of 10 since the Blackwell hop scale was kept (the",
        "one-node NVLink cell from 1 MiB over-covers, 87 %: source 13's 27 runs set it, and",
        "its rows sit inside the band the other sources give it 94 -> 99.7 % of the time once",
        "21d and 24 are predicted slower). tau is a variance estimate, not fitted to the coverage:",
        "the last column re-estimates it with the cell's whole regime left out as well (leave",
        "one regime out) and no cell moves by more than a point. Estimated from the cells with >= 2",
        "sources instead (one degree of freedom each, PCIe's no-P2P / P2P pair included),",
        "tau = 0.235 and 6 of 10 (InfiniBand < 1 MiB 86 %); from >= 4, 0.221 and 7 of 10",
        "(both measured before the Blackwell hop scale). Also out: cloud >= 1 MiB over-covers",
        "(90 %, 86 % before: source 20's slow tail widens",
        "the others' band), cloud < 1 MiB (69 %, 65 % on the measured range alone, 55 %",
        "before: 3 runs, 2 sources, EFA's and TCPX's small sizes 2-3x apart) and PCIe >= 1 MiB",
        "(41 %, 40 % before: median ratio",
        "0.44 without P2P vs 1.15 with it, a model gap no width rule should paper over).",
        "",
        "**Each source weighs once in the band, not each run** (2026-12-02). A band is for a",
        "cluster the model has not seen, and a new cluster is a new source. Weighted by run, the",
        "one-node NVLink band from 1 MiB was 0.84-1.07 x busbw (±10 %), set by source 13 (one",
        "4 x H100 slice, 27 of the cell's 38 runs, predicted within a few %): it held 87 % of the",
        "rows counted by run but 58 % counted by source (13: 100 %; 04, 12, 21, 24: 3-60 %),",
        "what a new cluster would see. Weighted by source it is 0.71-1.19 (±21 %): 73 % by",
        "source, 93 % by run. The other cells (>= 1 MiB / < 1 MiB), by run then by source, before",
        "-> after: InfiniBand 80 / 83, 79 / 83 -> 76 / 83, 75 / 83 %; cloud 90 / 65, 85 / 74 ->",
        "89 / 65, 83 / 74 % (its band from 1 MiB widens to 0.27 x busbw on the slow side: TCPX's",
        "run now weighs a third); Slingshot and PCIe unchanged. Still 6 of 10 cells in 75-85 %",
        "by run, 4 of 10 by source (these before-and-after figures on the measured range; on the",
        "band a prediction carries, below, cloud < 1 MiB is 69 / 77 %, and 5 of 10 cells by",
        "source are in range); both are regression bounds",
        "(`COVERAGE_BOUNDS`, `COVERAGE_BY_SOURCE_BOUNDS`). The grouped-CV errors do not move: the",
        "weighting is the band's, not the fit's.",
        "",
        "The app and the CLI show S next to the band; `Prediction.error_band` carries it",
        "(costmodel/uncertainty.py).",
        "",
        "Coverage: nominal 80 %; measured = share of a run's rows inside the band a prediction",
        "would carry from the *other* sources' runs only (leave one source out): the hull of",
        "their measured range `lo` - `hi` and the prediction, min(lo, 1) to max(hi, 1)",
        "(`uncertainty.band_hull`, what `error_band` shows), each run weighted once, and each",
        "source weighted once (its runs' mean share; what a new cluster sees on average: the",
        "range itself weighs each source once, `band_of`). The hull differs from the range only",
        "where the range lies on one side of the prediction; here that moves one cell, cloud",
        "< 1 MiB, from 65 % (74 % by source) on the range alone to 69 % (77 %). A cell that",
        "rests on one source has no band without it: `n/a` (its coverage cannot be checked).",
        "Goal: 75-85 % in every cell with data. The band column is the `nccl` model's band a",
        "prediction carries; the measured range column is `lo` / `hi` themselves.",
        "",
        "| regime | size | runs | sources | band lo / hi (x busbw) | measured range lo / hi "
        "| ± | nominal | measured | measured, each source once | measured, tau without the "
        "regime |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for reg, classes in (band_n or {}).items():
        for sc in ("ge1MiB", "lt1MiB"):
            if sc not in classes:
                continue
            b = classes[sc]
            cv_ = (cover or {}).get(reg, {}).get(sc, {})
            meas = cv_.get("measured", math.nan)
            loro = cv_.get("measured_loro", math.nan)
            by_src = cv_.get("measured_by_source", math.nan)
            lo, hi = band_hull(b["lo"], b["hi"])
            lines.append(
                f"| {reg} | {'>= 1 MiB' if sc == 'ge1MiB' else '< 1 MiB'} | {int(b['n_runs'])} | "
                f"{int(b['n_groups'])} | {lo:.2f} / {hi:.2f} | {b['lo']:.2f} / {b['hi']:.2f} | "
                f"{100 * b['half_width']:.0f}% | 80% | "
                f"{'n/a' if math.isnan(meas) else f'{100 * meas:.0f}%'} | "
                f"{'n/a' if math.isnan(by_src) else f'{100 * by_src:.0f}%'} | "
                f"{'n/a' if math.isnan(loro) else f'{100 * loro:.0f}%'} |"
            )
    one_sided = [  # the note's words up to its ", so the band runs ..." (said once below)
        f"{reg} {'>= 1 MiB' if sc == 'ge1MiB' else '< 1 MiB'} "
        f"({note.removeprefix('nccl ').split(', so the band')[0]})"
        for reg, classes in (band_n or {}).items()
        for sc in ("ge1MiB", "lt1MiB")
        if sc in classes and (note := one_sided_note("nccl", classes[sc]["lo"], classes[sc]["hi"]))
    ]
    if one_sided:
        lines += [
            "",
            "Cells whose measured range lies on one side of the prediction (the band runs from",
            "the prediction to it): " + "; ".join(one_sided) + ".",
        ]
    unseen_regs = sorted({r["regime"] for r in rows if r["run"] in UNSEEN_KEYS})
    if unseen_regs:
        lines += [
            "",
            f"**Unseen runs** ({', '.join(sorted(UNSEEN_KEYS))}; UNSEEN_RUNS: scored, never fitted",
            "on) are not in the bands above: the fitted file does not contain them. The measured",
            f"coverage of their regimes ({', '.join(unseen_regs)}) does include them: each",
            "source's rows against the band built from the other sources' runs, an unseen run's",
            "folds being the shipped ones (the fit without its source is the fit on every run),",
            "while the band those cells show rests on the fitted runs alone until the next refit.",
        ]
    lines += [
        "",
        "Fabrics measured between nodes: " + ", ".join(fabrics or []) + ". A multi-node",
        "prediction on any other fabric (e.g. `tcpxo`, GCP A3 Mega) has no band: the error is",
        "unknown, and the app and CLI say so.",
        "",
        "## Per regime and op class (grouped CV, median over runs)",
        "",
        "So that a term that helps one regime cannot quietly hurt another: tests/test_fidelity.py",
        "holds every cell to a regression bound (REGIME_OP_BOUNDS in scripts/fit_corrections.py).",
        "Goals: <= 8 % from 1 MiB for one node over NVLink and for InfiniBand, <= 15 % for cloud",
        "fabrics and Slingshot, per op class with data; <= 20 % over all sizes.",
        "",
        "| regime | op class | runs | sources | grouped CV >= 1 MiB | grouped CV all | goal >= 1 MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in regime_op_table(rows):
        goal = REGIME_GOALS.get(c["regime"])
        lines.append(
            f"| {c['regime']} | {c['op_class']} | {c['runs']} | {c['sources']} | "
            f"{pct(c['cv_ge1MiB'])} | {pct(c['cv_all'])} | "
            f"{'-' if goal is None else f'{100 * goal:.0f}%'} |"
        )
    lines.append("")
    if ablation:
        lines += [
            "## Which correction terms earn their place (grouped-CV ablation)",
            "",
            {
                "refit": "Each term switched off in turn, every other term refitted in every fold.",
                "neutralised": "Each term switched off in turn (its no-op value in every fold's "
                "fitted parameters, the other terms as fitted; `--refit-ablation` refits them, "
                "about 8x the CPU time).",
                "docs-only": "Recomputed from the shipped parameters (`--docs-only`: the dropped "
                "terms already off, each other term switched off in turn). The verdicts are the "
                "fit's own, taken with every term on; a delta here can differ from the fit's by a "
                "few hundredths (achievable_fraction: +0.04 in the fit, which kept it).",
            }[ABLATION_MODE[0]],
            "Score: mean over all runs of (median |err| >= 1 MiB + median |err| all sizes) / 2,"
            " grouped CV;",
            f"with every term: {100 * base_score:.2f}%. A term stays only if switching it off",
            "makes the score worse (delta > 0); the others are neutralised (no-op value) in the",
            "fitted file. A delta of exactly 0 means no CV prediction changes: the term is fitted",
            "on one source only (09's host-staged duplex, 04's NVLink-domain scale, the",
            "per-fabric ramps), so the fold that would use it is the fold without its data and",
            "grouped CV cannot show that it generalises. By the rule it is neutralised; its",
            "source's in-sample error rises (09a-b/e, 04a, 16a-b in the table below). A second",
            "source of the same kind lets a term earn its place: with Polaris (25) beside Alps",
            "(15) the Slingshot Tree efficiency is now kept (by a hair). `host_per_process` is",
            "off by design (PER_PROCESS_FLOOR in scripts/fit_corrections.py: two sources that",
            "disagree); `achievable_fraction` (cited, a cap on every candidate) is kept by",
            "+0.04 points in the fit, the same cited share also serving `ring_nic_rate`.",
            "",
            "| term | score with it off | delta (points) | verdict |",
            "|---|---|---|---|",
        ]
        for term, a in ablation.items():
            verdict = "dropped (no-op)" if term in dropped else "kept"
            lines.append(
                f"| {term} | {100 * a['score_off']:.2f}% | {100 * a['delta']:+.2f} | {verdict} |"
            )
        lines.append("")
    lines += tried_terms_markdown()
    lines += fabric_priors_markdown()
    lines += [
        "## Per run",
        "",
        "| run | op | cluster | nodes x GPUs | trust | regime | lesson | NCCL table | "
        "full, in-sample | full, grouped CV |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = "*" if r["goal"] else (" (busbw-only)" if r.get("busbw_only") else "")
        mark += " (unseen)" if r["run"] in UNSEEN_KEYS else ""
        ins = cell(r["in_sample"]) if "in_sample" in r else "-"
        lines.append(
            f"| {r['run']}{mark} | {r['op']} | {r['cluster']} | {r['nodes']} x "
            f"{r['gpus_per_node']} | {r['trust']} | {r['regime']} | {cell(r['lesson'])} | "
            f"{cell(r['nccl-table'])} | {ins} | {cell(r['nccl'])} |"
        )
    goal = [r for r in rows if r["goal"]]
    met_cv = [
        r for r in goal if r["nccl"]["ge1MiB"] <= GOAL_GE_1MIB and r["nccl"]["all"] <= GOAL_ALL
    ]
    met_in = [
        r
        for r in goal
        if "in_sample" in r
        and r["in_sample"]["ge1MiB"] <= GOAL_GE_1MIB
        and r["in_sample"]["all"] <= GOAL_ALL
    ]
    lines += [
        "",
        "## Goal vs measured gap",
        "",
        f"Goal runs meeting <= 8% / <= 20%: grouped CV {len(met_cv)}/{len(goal)}, in-sample "
        f"{len(met_in)}/{len(goal)}. Misses under grouped CV: "
        + (
            ", ".join(
                f"{r['run']} ({pct(r['nccl']['ge1MiB'])} / {pct(r['nccl']['all'])})"
                for r in goal
                if r not in met_cv
            )
            or "none"
        )
        + ".",
        "",
        "Where a regime misses under grouped CV, the cause:",
        "",
        *(f"- **{reg}**: {why}" for reg, why in REGIME_GAPS.items()),
        "",
        "## Why runs miss (in-sample regression bounds, tests/test_fidelity.py)",
        "",
    ]
    for run, (b_ge, b_all, why) in NOT_MET.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}% / {100 * b_all:.0f}%): {why}")
    lines += [
        "",
        "## Fabrics reached through aws-ofi-nccl (Slingshot, EFA)",
        "",
        "Not goal runs (the goals are for NVSwitch/InfiniBand), but held to regression "
        "bounds from 1 MiB up (in-sample). Terms: NCCL's tree search pass 2 (bwIntra up to 2 x "
        "bwInter, used on 2 nodes), `fabric_tree_efficiency` (Tree beyond 2 nodes, "
        "fitted per fabric) and `fabric_ramp_phi` (mid-size ramp per fabric: also RoCE and "
        "GPUDirect-TCPX over Ethernet); 02 uses the 4 HCAs per A100 node that "
        "coreweave/nccl-tests gpus/a100.cue lists. Runs 15/3, 15/4, 15/8, 15/9 reported wrong "
        "results (Out of bounds FAILED): medium trust, left out of the Tree-efficiency and "
        "ramp fits.",
        "",
    ]
    for run, (b_ge, why) in OFI_BOUNDS.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}%): {why}")
    lines += [
        "",
        "## Per-run grouped-CV bounds",
        "",
        "A run whose own figure a two-run (regime, op class) median would hide is held to a",
        "grouped-CV bound of its own (RUN_CV_BOUNDS in scripts/fit_corrections.py,",
        "tests/test_fidelity.py):",
        "",
    ]
    for run, (b_ge, b_all, why) in RUN_CV_BOUNDS.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}% / {100 * b_all:.0f}%): {why}")
    lines += [
        "",
        "## Unseen runs (scored with the shipped parameters, never fitted on)",
        "",
        "A check on clusters the model has never seen: a run bundled before the next refit is",
        "predicted from its preset and the parameters fitted on every other run (UNSEEN_RUNS in",
        "scripts/fit_corrections.py), held to a regression bound by tests/test_fidelity.py",
        "(UNSEEN_BOUNDS), until a refit takes it in as its own CV group.",
        "",
    ]
    for run, (b_ge, b_all, why) in UNSEEN_BOUNDS.items():
        lines.append(f"- **{run}** (bound {100 * b_ge:.0f}% / {100 * b_all:.0f}%): {why}")
    if not UNSEEN_BOUNDS:
        lines.append(
            "None at present: the last one, 26 (8 RTX PRO 6000 over PCIe Gen5 switches with P2P),"
        )
        lines.append("joined the fit as its own CV group (its bound is under Per-run bounds).")
    return _no_quote_lines("\n".join(lines) + "\n")


def _no_quote_lines(text: str) -> str:
    """``text`` with every line that starts with ``>`` (a wrapped ">= 2 sources", which
    Markdown renders as a quote) joined to the line before it: the report is hand-wrapped
    prose, so a comparison that lands at a line's start moves up one line.

    >>> _no_quote_lines("cells with\n>= 2 sources\n| a |\n")
    'cells with >= 2 sources\n| a |\n'
    """
    out: list[str] = []
    for line in text.split("\n"):
        if line.lstrip().startswith(">") and out and out[-1].strip():
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


def _score(rows: list[dict]) -> float:
    """Ablation score: mean over runs of (median |err| >= 1 MiB + median |err| all sizes) / 2.

    A mean, not a median, over runs, so a term that serves a few runs (host-staged duplex:
    09a-e; NVLink-domain scale: 04a-b) registers; both size ranges, so a small-size term
    (host floor, fabric latency) does too."""
    vals = []
    for r in rows:
        s = r["nccl"]
        ge = s["ge1MiB"] if not math.isnan(s["ge1MiB"]) else s["all"]
        vals.append(0.5 * (ge + s["all"]))
    return float(np.mean(vals))


_POOL_RUNS: list[Run] = []  # the runs, shared with forked workers


#: op -> op class (the rows of the per-regime x op-class table and the op-class folds)
OP_CLASS: dict[str, str] = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather/reduce-scatter",
    "reduce_scatter": "all-gather/reduce-scatter",
    "all_to_all": "all-to-all",
    "broadcast": "broadcast/reduce",
    "reduce": "broadcast/reduce",
}


def fold_key(r: Run, kind: str) -> str:
    """What a fold of ``kind`` leaves out with ``r``: its source (``"source"``, grouped CV), its
    fabric family (``"family"``: the error-band regime, so one node over NVLink, one node over
    PCIe, InfiniBand, cloud fabrics, Slingshot, other fabrics such as the socket transport) or
    its op class (``"op"``, :data:`OP_CLASS`)."""
    if kind == "source":
        return group_of(r.key)
    if kind == "family":
        return regime_of(r)
    if kind == "op":
        return OP_CLASS[r.op]
    raise ValueError(f"fold kind {kind!r}: allowed source, family, op")


#: the harder folds the error bands come from (uncertainty.py): a run is predicted three times,
#: with its source, its fabric family and its op class left out of the fit in turn
HARD_FOLD_KINDS: tuple[str, ...] = ("source", "family", "op")


def _fold(task: tuple[frozenset[str], str, str]) -> dict:
    off, kind, value = task
    return fit(fit_runs([r for r in _POOL_RUNS if fold_key(r, kind) != value]), off)


def grouped_cv_many(
    runs: list[Run], offs: list[frozenset[str]], workers: int = 2
) -> list[dict[str, dict]]:
    """:func:`grouped_cv` for several sets of terms off, the folds spread over ``workers``
    processes (each fold is one independent fit)."""
    return _folds_many(runs, [(off, "source") for off in offs], workers)


def _folds_many(
    runs: list[Run], specs: list[tuple[frozenset[str], str]], workers: int = 2
) -> list[dict[str, dict]]:
    """Per (terms off, fold kind): per run, the parameters fitted without the run's
    :func:`fold_key` of that kind; all folds spread over ``workers`` processes."""
    global _POOL_RUNS
    tasks = []
    for off, kind in specs:
        tasks += [(off, kind, v) for v in sorted({fold_key(r, kind) for r in runs})]
    _POOL_RUNS = runs
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            fitted = pool.map(_fold, tasks, chunksize=1)
    else:
        fitted = [_fold(t) for t in tasks]
    by_task = dict(zip(tasks, fitted, strict=True))
    return [{r.key: by_task[(off, kind, fold_key(r, kind))] for r in runs} for off, kind in specs]


def grouped_cv(runs: list[Run], off: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Per run, the parameters fitted on every run of the other groups (:func:`group_of`)."""
    return grouped_cv_many(runs, [off], workers=1)[0]


def _summaries(runs: list[Run], per_run: dict[str, dict]) -> list[dict]:
    return [
        {"run": r.key, "nccl": summary(r, predict_run(r, "nccl", per_run[r.key]))} for r in runs
    ]


def regime_of(r: Run) -> str:
    from costmodel.uncertainty import regime

    return regime(r.cluster.fabric, r.cluster.intra_kind, r.nodes)


def _residual_pool(
    runs: list[Run], model: str, folds: list[dict[str, dict]] | None
) -> dict[tuple[str, str], list[dict]]:
    """Per (regime, size class): one entry per run with its rows' busbw ratios
    (measured / predicted) under every fold of ``folds`` (None: the model fits nothing), and the
    run's node and GPU counts (the measured range a band records, :func:`band_of`)."""
    from costmodel.uncertainty import ONE_MIB

    pool: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        ratios = []
        for f in folds or [None]:
            t = predict_run(r, model, f[r.key] if f is not None else None)
            ratios.append(1.0 / (1.0 + errors(r, t)))  # busbw_meas / busbw_pred
        q = np.stack(ratios)  # (folds, rows)
        for sc, sel in (("ge1MiB", r.size >= ONE_MIB), ("lt1MiB", r.size < ONE_MIB)):
            if sel.any():
                pool.setdefault((regime_of(r), sc), []).append(
                    {
                        "group": group_of(r.key),
                        "q": q[:, sel].ravel(),
                        "nodes": r.nodes,
                        "gpus": r.nodes * r.gpus_per_node,
                    }
                )
    return pool


#: z of the normal's 90th percentile: a 10th-90th percentile band is the median +- Z90 sigma
Z90 = 1.2815515655446004
#: the between-source spread (:func:`source_spread`) is estimated from the cells (model, regime,
#: size class) resting on at least this many sources: two or more degrees of freedom each
SPREAD_MIN_SOURCES = 3


def _source_medians(entries: list[dict]) -> np.ndarray:
    """Per source of ``entries``: the median log busbw ratio of its rows (each run weighted
    once)."""
    from costmodel.uncertainty import weighted_quantile

    out = []
    for g in sorted({d["group"] for d in entries}):
        mine = [d for d in entries if d["group"] == g]
        lq = np.log(np.concatenate([d["q"] for d in mine]))
        w = np.concatenate([np.full(d["q"].size, 1.0 / d["q"].size) for d in mine])
        out.append(weighted_quantile(lq, w, 0.5))
    return np.asarray(out)


def source_spread(pool: dict[tuple[str, str], list[dict]], leave_out: str | None = None) -> float:
    r"""tau: how far one source's median busbw ratio sits from another's in the same cell.

    The pooled standard deviation of the sources' median log ratios around their cell's mean,
    :math:`\tau^2 = \sum_{cells} \sum_s (m_s - \bar m)^2 / \sum_{cells} (S - 1)`, over every
    (regime, size class) of ``pool`` with at least :data:`SPREAD_MIN_SOURCES` sources once the
    source ``leave_out`` is removed (so a coverage check never sees the held-out source). A
    variance estimate from the data, not a knob: the coverage is its check, not its target.
    0 where no cell has enough sources.
    """
    ss, dof = 0.0, 0
    for entries in pool.values():
        m = _source_medians([d for d in entries if d["group"] != leave_out])
        if m.size >= SPREAD_MIN_SOURCES:
            ss += float(((m - m.mean()) ** 2).sum())
            dof += m.size - 1
    return math.sqrt(ss / dof) if dof else 0.0


def _source_weights(entries: list[dict]) -> np.ndarray:
    """Row weights over ``entries`` (concatenated in order) that give each source (``group``)
    the same total weight, each of its runs an equal share of it and each row of a run an equal
    share of the run's."""
    runs_of: dict[str, int] = {}
    for d in entries:
        runs_of[d["group"]] = runs_of.get(d["group"], 0) + 1
    return np.concatenate(
        [np.full(d["q"].size, 1.0 / (d["q"].size * runs_of[d["group"]])) for d in entries]
    )


def band_of(entries: list[dict], tau: float) -> dict[str, float]:
    r"""The band of one (regime, size class) from its runs' busbw ratios, **each source weighted
    once** (its runs share its weight equally, a run's rows share the run's).

    Why by source, not by run: a band is for a cluster the model has not seen, and a new
    cluster is a new source. Weighted by run, one source with many runs sets the band (13, one
    4 x H100 slice measured 27 times, is 27 of the one-node NVLink cell's 38 runs): that band
    was 0.84-1.07 x busbw and held 58 % of a held-out source's rows on average (each source
    once; 3 % to 100 % by source), while its run-weighted coverage, 87 %, counted 13 27 times.

    ``lo``, ``hi``: the 10th and 90th percentiles of busbw_meas / busbw_pred; ``half_width``: the
    80th percentile of :math:`|1/q - 1|` (the relative busbw error). **Few sources widen it**:
    with :math:`S` independent sources and the between-source spread :math:`\tau`
    (:func:`source_spread`), the variance a new source adds that :math:`S` sources cannot show,
    :math:`(z_{0.9}\tau/S)^2`, is added in quadrature to each side's spread in log space around
    the median ratio :math:`m`: :math:`\log lo' = m - \sqrt{(m - \log lo)^2 + (z\tau/S)^2}`,
    same for hi and for :math:`\log(1 + half\_width)`. A narrow band from one source grows
    most (it shows none of the spread between clusters); a wide one, or one over many sources,
    hardly moves. Replaces the multiplier 1 + 0.2/S^2, which widened wide bands most
    (docs/fidelity.md compares the two by leave-one-source-out coverage).

    ``max_nodes``, ``max_gpus`` (where the entries carry their runs' ``nodes`` and ``gpus``, as
    :func:`_residual_pool`'s do): the largest node and GPU counts among the runs the band rests
    on, the measured range a prediction beyond which is extrapolated
    (:func:`costmodel.uncertainty.extrapolation_note`).
    """
    from costmodel.uncertainty import weighted_quantile

    q = np.concatenate([d["q"] for d in entries])
    w = _source_weights(entries)
    n_src = len({d["group"] for d in entries})
    extra = (Z90 * tau / n_src) ** 2

    def wider(spread: float) -> float:
        return math.sqrt(spread**2 + extra)

    lq = np.log(q)
    mid = weighted_quantile(lq, w, 0.5)
    lo = math.exp(mid - wider(mid - weighted_quantile(lq, w, 0.1)))
    hi = math.exp(mid + wider(weighted_quantile(lq, w, 0.9) - mid))
    half = math.log1p(weighted_quantile(np.abs(1.0 / q - 1.0), w, 0.8))
    out = {
        "half_width": round(math.expm1(wider(half)), 4),
        "lo": round(lo, 4),
        "hi": round(hi, 4),
        "n_runs": float(len(entries)),
        "n_groups": float(n_src),
    }
    if all("nodes" in d for d in entries):  # entries from runs (_residual_pool) say their size
        # the largest run the band rests on: beyond it the band is extrapolated
        # (costmodel.uncertainty.extrapolation_note)
        out["max_nodes"] = float(max(d["nodes"] for d in entries))
        out["max_gpus"] = float(max(d["gpus"] for d in entries))
    return out


def bands(runs: list[Run], cv: dict[str, dict], hard: list[dict[str, dict]] | None = None) -> dict:
    """``[model][regime][size class]`` -> half_width, lo, hi, n_runs, n_groups, max_nodes,
    max_gpus (:func:`band_of`) from the rows' residuals: nccl under every fold of ``hard`` (the harder folds: source,
    fabric family, op class left out in turn) or, without it, its grouped-CV parameters; the
    other models fit nothing. Each model's between-source spread (:func:`source_spread`) is
    estimated from its own residuals."""
    out: dict = {}
    for model in ("nccl", "nccl-table", "textbook", "lesson"):
        folds = (hard or [cv]) if model == "nccl" else None
        pool = _residual_pool(runs, model, folds)
        tau = source_spread(pool)
        for (reg, sc), entries in sorted(pool.items()):
            out.setdefault(model, {}).setdefault(reg, {})[sc] = band_of(entries, tau)
    return out


def coverage(pool: dict[tuple[str, str], list[dict]]) -> dict[str, dict[str, dict]]:
    """Measured coverage of the nominal 80 % band per regime and size class, leave one source
    out: each run's rows are checked against the band built (:func:`band_of`) from the other
    sources' runs only, its between-source spread estimated without the run's source in any
    cell; the share of rows inside, each run weighted once (``measured``), and each source
    weighted once (``measured_by_source``: the mean over held-out sources of their runs' mean
    share, what a new cluster sees on average). ``measured_loro``:
    the same with the spread estimated without the run's whole regime as well (leave one
    regime out: the spread applied to a cell never saw that cell). ``tau``: the spread from
    every source (the shipped band's). A cell resting on a single source has no band without
    it: ``measured`` is NaN there.

    The band checked is the one a prediction carries (:func:`costmodel.uncertainty.band_hull`:
    the hull of the others' measured 10th-90th percentile range and the prediction), not the
    range itself: where the others' range lies on one side of the prediction, a held-out row
    between it and the prediction is inside what the user is shown."""
    from costmodel.uncertainty import band_hull

    out: dict[str, dict[str, dict]] = {}
    memo: dict[tuple[str, str | None], float] = {}

    def tau(group: str, reg: str | None) -> float:
        if (group, reg) not in memo:
            cells = {k: v for k, v in pool.items() if k[0] != reg}
            memo[(group, reg)] = source_spread(cells, leave_out=group)
        return memo[(group, reg)]

    for (reg, sc), entries in sorted(pool.items()):
        inside, inside_loro, weight = 0.0, 0.0, 0.0
        by_source: dict[str, list[float]] = {}
        for d in entries:
            others = [e for e in entries if e["group"] != d["group"]]
            if not others:
                continue
            for t, acc in ((tau(d["group"], None), "s"), (tau(d["group"], reg), "r")):
                b = band_of(others, t)
                lo, hi = band_hull(b["lo"], b["hi"])  # the band a prediction carries
                share = float(np.mean((d["q"] >= lo) & (d["q"] <= hi)))
                if acc == "s":
                    inside += share
                    by_source.setdefault(d["group"], []).append(share)
                else:
                    inside_loro += share
            weight += 1.0
        per_source = [float(np.mean(v)) for v in by_source.values()]
        out.setdefault(reg, {})[sc] = {
            "nominal": 0.8,
            "measured": round(inside / weight, 4) if weight else math.nan,
            "measured_by_source": round(float(np.mean(per_source)), 4) if weight else math.nan,
            "measured_loro": round(inside_loro / weight, 4) if weight else math.nan,
            "tau": round(source_spread(pool), 4),
            "n_runs": float(len(entries)),
            "n_groups": float(len({d["group"] for d in entries})),
        }
    return out


def regime_op_table(rows: list[dict]) -> list[dict]:
    """Per regime x op class: runs, sources, median over runs of the grouped-CV error >= 1 MiB
    and over all sizes (the regression table of docs/fidelity.md and tests/test_fidelity.py)."""
    out = []
    from costmodel.uncertainty import REGIMES

    for reg in REGIMES:
        for oc in dict.fromkeys(OP_CLASS.values()):
            sel = [r for r in rows if r["regime"] == reg and OP_CLASS[r["op"]] == oc]
            if not sel:
                continue
            ge = [r["nccl"]["ge1MiB"] for r in sel if not math.isnan(r["nccl"]["ge1MiB"])]
            out.append(
                {
                    "regime": reg,
                    "op_class": oc,
                    "runs": len(sel),
                    "sources": len({r["group"] for r in sel}),
                    "cv_ge1MiB": float(np.median(ge)) if ge else math.nan,
                    "cv_all": float(np.median([r["nccl"]["all"] for r in sel])),
                }
            )
    return out


def with_unseen(
    runs: list[Run], cv: dict[str, dict], params_all: dict, folds: dict[str, dict] | None = None
) -> tuple[list[Run], dict[str, dict], dict[str, float] | None]:
    """The fitted ``runs`` plus the unseen ones (:data:`UNSEEN_RUNS`), their grouped-CV
    parameters (:func:`unseen_params`) and, given the fitted file's fabric-family and op-class
    folds, the measured coverage of the regimes the unseen runs fall in.

    Coverage there is computed as :func:`coverage` does for every cell (leave one source out,
    each run weighted once), over the fitted runs and the unseen ones, each
    predicted under the three harder folds; the unseen runs' folds are :func:`unseen_params`'s.
    Returns (all runs, CV parameters of all runs, ``{regime: {size class: coverage}}`` or None).
    """
    unseen = load_runs(UNSEEN_RUNS)
    every = [*runs, *unseen]
    cv_all = unseen_params(every, cv, params_all)
    if folds is None:
        return every, cv_all, None
    hard = [cv_all] + [unseen_params(every, folds[k], params_all, k) for k in ("family", "op")]
    regs = {regime_of(r) for r in unseen}
    # every regime in the pool: the between-source spread of the bands is pooled over them all
    cover = coverage(_residual_pool(every, "nccl", hard))
    return every, cv_all, {reg: v for reg, v in cover.items() if reg in regs}


def measured_fabrics(runs: list[Run]) -> list[str]:
    """Fabrics with at least one multi-node run in the fit."""
    return sorted({r.cluster.fabric for r in runs if r.nodes > 1})


def docs_text(runs: list[Run]) -> str:
    """docs/fidelity.md as ``--docs-only`` writes it, from the fitted file without fitting:
    the ablation is recomputed by neutralising each term in the file's CV parameters (the
    default ablation mode; terms already neutralised give delta 0, as when they were
    dropped). tests/test_validate_qa3.py checks the shipped report against it."""
    from costmodel.fitted_corrections import ALL, CV, FITTED

    cv = {k: dict(v) for k, v in CV.items()}
    base_score = _score(_summaries(runs, cv))
    ablation = {}
    for t in TERMS:
        sc = _score(_summaries(runs, {k: neutralise(p, {t}) for k, p in cv.items()}))
        ablation[t] = {"score_off": sc, "delta": sc - base_score}
    bands_ = {
        m: {r: {c: dict(v) for c, v in cl.items()} for r, cl in regs.items()}
        for m, regs in FITTED.bands.items()
    }
    folds = {k: {r: v.as_dict() for r, v in FITTED.folds[k].items()} for k in ("family", "op")}
    every, cv_every, unseen_cover = with_unseen(runs, cv, dict(ALL), folds)
    rows = evaluate(every, cv_every, dict(ALL))
    ABLATION_MODE[0] = "docs-only"
    return fidelity_markdown(
        rows,
        FITTED.fitted_on,
        ablation,
        base_score,
        frozenset(FITTED.dropped_terms),
        bands_,
        list(FITTED.measured_fabrics),
        {
            **{r: {c: dict(v) for c, v in cl.items()} for r, cl in FITTED.coverage.items()},
            **(unseen_cover or {}),
        },
    )


def _docs_only(runs: list[Run]) -> None:
    """Rewrite docs/fidelity.md (and its packaged copy) from the fitted file without fitting
    (:func:`docs_text`)."""
    from costmodel.atomic import write_text_atomic

    text = docs_text(runs)
    write_text_atomic(ROOT / "docs" / "fidelity.md", text)
    write_text_atomic(ROOT / "costmodel" / "data" / "fidelity.md", text)
    print(text)


def _bands_only(runs: list[Run]) -> None:
    """Recompute the error bands and their coverage from the fitted file's fold parameters
    (grouped CV, fabric family and op class left out) without fitting, rewrite the file with
    every parameter as it was; then run ``--docs-only`` for the report. What a full refit's
    band step computes from the same folds (tests/test_uncertainty.py checks the file against
    it)."""
    import tomllib

    from costmodel.atomic import write_text_atomic
    from costmodel.corrections_toml import dumps
    from costmodel.fitted_corrections import CV, FITTED

    path = ROOT / "costmodel" / "data" / "fitted_corrections.toml"
    doc = tomllib.loads(path.read_text(encoding="utf-8"))  # the parameters written back verbatim
    cv = {k: dict(v) for k, v in CV.items()}
    hard = [cv, *({r: v.as_dict() for r, v in FITTED.folds[k].items()} for k in ("family", "op"))]
    text = dumps(
        doc["fitted_on"],
        doc["nccl_version"],
        doc["all"],
        doc["cv"],
        groups=doc.get("groups"),
        bands=bands(runs, cv, hard),
        measured_fabrics=doc.get("measured_fabrics", ()),
        dropped_terms=doc.get("dropped_terms", ()),
        coverage=coverage(_residual_pool(runs, "nccl", hard)),
        folds=doc.get("fold"),
    )
    write_text_atomic(path, text)
    print("bands and coverage rewritten; now run --docs-only for docs/fidelity.md")


def try_terms(
    runs: list[Run], names: list[str]
) -> list[tuple[str, str, float, float, float, float]]:
    """The quick check of a candidate term (``--try``), minutes instead of a full refit: every
    source fold's shipped parameters (the fitted file's ``[cv]``) plus the candidate steps of
    ``names`` (:data:`TRIED_TERMS` or :data:`TERMS`) fitted on that fold's runs, then the grouped-CV
    (regime, op class) table before and after. Exact for a step fitted after every other term
    (what the others were fitted with does not change); the full refit decides for real.
    Returns (regime, op class, before >= 1 MiB, before all, after >= 1 MiB, after all)."""
    from costmodel.fitted_corrections import ALL, CV

    steps = {**TERMS, **TRIED_TERMS}
    unknown = [n for n in names if n not in steps]
    if unknown:
        raise SystemExit(f"--try: unknown terms {unknown}; allowed {sorted(steps)}")
    base = {r.key: _base(dict(CV.get(r.key, ALL))) for r in runs}
    new: dict[str, dict] = {}
    for g in sorted({group_of(r.key) for r in runs}):
        inside = [r for r in runs if group_of(r.key) == g]
        p = base[inside[0].key]
        add: dict = {}
        fold_runs = fit_runs([r for r in runs if group_of(r.key) != g])
        for n in names:
            add.update(steps[n](fold_runs, {**p, **add}))  # type: ignore[operator]
        for r in inside:
            new[r.key] = _rounded({**p, **add})
        print(f"  fold {g}: {add}", flush=True)
    before, after = _summaries(runs, base), _summaries(runs, new)
    for rows_ in (before, after):
        for row, r in zip(rows_, runs, strict=True):
            row.update(op=r.op, group=group_of(r.key), regime=regime_of(r))
    print(f"score {_score(before):.4f} -> {_score(after):.4f}")
    out = []
    for a, b in zip(regime_op_table(before), regime_op_table(after), strict=True):
        out.append(
            (a["regime"], a["op_class"], a["cv_ge1MiB"], a["cv_all"], b["cv_ge1MiB"], b["cv_all"])
        )
        worse = b["cv_ge1MiB"] > a["cv_ge1MiB"] + 1e-9 or b["cv_all"] > a["cv_all"] + 1e-9
        print(
            f"{a['regime']:24s} {a['op_class']:27s} {100 * a['cv_ge1MiB']:6.1f} "
            f"{100 * a['cv_all']:6.1f} -> {100 * b['cv_ge1MiB']:6.1f} {100 * b['cv_all']:6.1f}"
            + ("  WORSE" if worse else "")
        )
    return out


def _check_argv(flags: tuple[str, ...], with_value: tuple[str, ...] = ()) -> None:
    """:func:`scripts._argv.check_argv` with this script's docstring as its usage."""
    from scripts._argv import check_argv

    check_argv(__doc__, flags, with_value)


def main() -> None:
    import time

    _check_argv(("--refit-ablation", "--docs-only", "--bands-only"), ("--try",))
    t0 = time.time()
    runs = load_runs()
    # 1. ablation under grouped CV: every term off in turn, everything else refitted
    if "--docs-only" in sys.argv:
        return _docs_only(runs)
    if "--bands-only" in sys.argv:  # the bands and coverage from the file's folds, no fitting
        return _bands_only(runs)
    if "--try" in sys.argv:  # --try NAME[,NAME]: the quick grouped-CV check of candidate terms
        try_terms(runs, sys.argv[sys.argv.index("--try") + 1].split(","))
        return None
    terms = list(TERMS)
    refit = "--refit-ablation" in sys.argv
    offs = [frozenset({t}) for t in terms] if refit else []
    specs = [(off, "source") for off in [frozenset(), *offs]]
    specs += [(frozenset(), kind) for kind in HARD_FOLD_KINDS if kind != "source"]
    folds = _folds_many(runs, specs)
    cvs = folds[: 1 + len(offs)]
    hard_extra = folds[1 + len(offs) :]  # fabric family and op class left out
    cv = cvs[0]
    base_score = _score(_summaries(runs, cv))
    print(f"grouped CV with every term: score {base_score:.4f} ({time.time() - t0:.0f} s)")
    ablation: dict[str, dict] = {}
    if refit:
        cv_off: dict[str, dict] = dict(zip(terms, cvs[1:], strict=True))
    else:  # the term's no-op value in every fold's fitted parameters, the others as fitted
        cv_off = {t: {k: neutralise(p, {t}) for k, p in cv.items()} for t in terms}
    for term in terms:
        sc = _score(_summaries(runs, cv_off[term]))
        ablation[term] = {"score_off": sc, "delta": sc - base_score}
        print(f"  {term:24s} off: {sc:.4f} ({sc - base_score:+.4f}) ({time.time() - t0:.0f} s)")
    # 2. a term stays only if switching it off makes the grouped-CV score worse
    dropped = frozenset(t for t, a in ablation.items() if a["delta"] <= 0.0)
    if not dropped:
        final_cv = cv
    elif refit:
        final_cv = grouped_cv_many(runs, [dropped])[0]
    else:
        final_cv = {k: neutralise(p, dropped) for k, p in cv.items()}
    fitted_on = fit_runs(runs)  # what the fitting steps see (FIT_ON_BUSBW_ONLY decides 21a-d)
    params_all = fit(fitted_on, dropped) if refit else neutralise(fit(fitted_on), dropped)
    ABLATION_MODE[0] = "refit" if refit else "neutralised"
    date = _dt.date.today().isoformat()
    hard = [final_cv, *({k: neutralise(p, dropped) for k, p in f.items()} for f in hard_extra)]
    band_table = bands(runs, final_cv, hard)
    cover = coverage(_residual_pool(runs, "nccl", hard))
    fabrics = measured_fabrics(runs)
    from costmodel.atomic import write_text_atomic
    from costmodel.corrections_toml import dumps

    out = ROOT / "costmodel" / "data" / "fitted_corrections.toml"
    write_text_atomic(
        out,
        dumps(
            date,
            T.NCCL_VERSION,
            params_all,
            final_cv,
            groups={r.key: group_of(r.key) for r in runs},
            bands=band_table,
            measured_fabrics=fabrics,
            dropped_terms=sorted(dropped),
            coverage=cover,
            folds=dict(zip(("family", "op"), hard[1:], strict=True)),
        ),
    )
    folds_ = dict(zip(("family", "op"), hard[1:], strict=True))
    every, cv_every, unseen_cover = with_unseen(runs, final_cv, params_all, folds_)
    rows = evaluate(every, cv_every, params_all)
    cover_shown = {**cover, **(unseen_cover or {})}
    text = fidelity_markdown(
        rows, date, ablation, base_score, dropped, band_table, fabrics, cover_shown
    )
    (ROOT / "docs").mkdir(exist_ok=True)
    write_text_atomic(ROOT / "docs" / "fidelity.md", text)
    write_text_atomic(ROOT / "costmodel" / "data" / "fidelity.md", text)
    print(text)
    print("ALL =", params_all)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
