"""The runs bundled after the first correction fits (scripts/fit_corrections.NEWER_RUNS, once
held out, now in RUNS and in the grouped CV; and BUSBW_ONLY_RUNS, 21a-d, busbw-only tables):
every bundled run is accounted for, each spec agrees with its own rows or header, and the full
model predicts them from their presets with the parameters fitted without their source
(costmodel.fitted_corrections.CV). They stay medium trust (not goal runs); their accuracy is in
docs/fidelity.md and tests/test_fidelity.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from costmodel import predict as P
from costmodel.collectives import busbw_factor
from costmodel.reference import reference_id, reference_path, reference_runs
from costmodel.validation.nccl_tests import is_busbw_table, read_busbw_table, read_nccl_tests
from tests._paths import load_script

ROOT = Path(__file__).resolve().parents[1]
fit = load_script("fit_corrections")

HELD = {s.prefix: s for s in fit.NEWER_RUNS}
BUSBW = {s.prefix: s for s in fit.RUNS if s.busbw_only}


def test_every_bundled_run_is_in_the_runs_busbw_only_ones_marked():
    in_runs = {s.prefix for s in fit.RUNS}
    assert set(HELD) <= in_runs and not fit.HELD_OUT_RUNS
    busbw_only = {
        reference_id(n) for n in reference_runs() if is_busbw_table(reference_path(n).read_text())
    }
    assert busbw_only == set(BUSBW) == {"21a", "21b", "21c", "21d"}
    assert in_runs | set(fit.NOT_FITTED) == {reference_id(n) for n in reference_runs()}
    assert not in_runs & set(fit.NOT_FITTED)
    # never goal runs: the newer ones as curated, the busbw-only ones have no times
    assert all(s.trust != "H" for s in (*HELD.values(), *BUSBW.values()))


@pytest.mark.parametrize("prefix", sorted(HELD))
def test_spec_matches_the_ranks_its_rows_imply(prefix):
    """busbw / algbw of every printed row is nccl-tests' factor for the spec's rank count."""
    spec = HELD[prefix]
    df = read_nccl_tests(reference_path(prefix))
    ok = df[(df.algbw_bytes_per_s > 1e9)]
    ratio = (ok.busbw_bytes_per_s / ok.algbw_bytes_per_s).to_numpy()
    ranks = spec.nodes * spec.gpus_per_node
    want = busbw_factor(df.op.iloc[0], ranks)
    assert np.allclose(ratio, want, rtol=0.01), (prefix, np.unique(ratio.round(3)), want)


@pytest.fixture(scope="module")
def held_runs():
    return fit.load_runs(fit.NEWER_RUNS)


def test_held_out_runs_predicted_from_their_presets(held_runs, capsys):
    from costmodel.fitted_corrections import CV

    assert {r.key for r in held_runs} == set(HELD)
    with capsys.disabled():
        print("\nheld-out run  op              nodes x gpus  median |busbw error| >= 1 MiB / all")
    for run in held_runs:
        t = fit.predict_run(run, "nccl", CV[run.key])
        assert np.isfinite(t).all() and (t > 0).all(), run.key
        s = fit.summary(run, t)
        assert not math.isnan(s["all"])
        with capsys.disabled():
            print(
                f"{run.key:12s}  {run.op:15s} {run.nodes:5d} x {run.gpus_per_node:<5d}"
                f"  {100 * s['ge1MiB']:5.1f}% / {100 * s['all']:5.1f}%"
            )


# --- busbw-only runs (21a-d) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def busbw_runs():
    return {r.key: r for r in fit.load_runs(tuple(BUSBW.values()))}


# run -> (algorithm the spec pins, GPUs = ranks in the one process, the header's words for it)
BUSBW_LAUNCH = {
    "21a": ("nvls", 8, "(NVLS algorithm)"),
    "21b": ("nvls", 8, "(NVLS algorithm)"),
    "21c": ("auto", 8, "NVLS is not available on A100"),  # the page's label is copied: unknown
    "21d": ("ring", 4, "(Ring algorithm)"),
}


@pytest.mark.parametrize("key", sorted(BUSBW_LAUNCH))
def test_busbw_only_spec_follows_its_header(busbw_runs, key):
    algo, gpus, words = BUSBW_LAUNCH[key]
    run, text = busbw_runs[key], reference_path(key).read_text()
    assert words in text and f"{gpus} ranks in one process" in text.lower()
    assert (run.nodes, run.gpus_per_node, run.gpus_per_process) == (1, gpus, gpus)
    assert run.algorithm == algo and run.op == "all_reduce"
    assert fit.group_of(key) == "21" and fit.regime_of(run) == "single-node-nvlink"


@pytest.mark.parametrize(
    ("key", "label", "size", "busbw_gbs", "time_s"),
    [
        # 1M = 2**20 B; t = 1048576 B x 2(8-1)/8 / 43.70e9 B/s = 1835008 / 43.70e9
        ("21a", "1M", 1048576, 43.70, 4.199102974828375e-05),
        # 536M = 2**29 B (not 536e6 nor 536 x 2**20); t = 536870912 x 2(4-1)/4 / 618.74e9
        ("21d", "536M", 536870912, 618.74, 1.301526275980218e-03),
    ],
)
def test_busbw_only_row_sized_and_converted_by_hand(
    busbw_runs, key, label, size, busbw_gbs, time_s
):
    """One published row against a hand-computed value: fails if a rounded label decodes to
    the wrong size or the busbw -> time conversion uses the wrong factor or rank count."""
    run = busbw_runs[key]
    df = read_busbw_table(reference_path(key))
    (i,) = np.flatnonzero(df.size_label.to_numpy() == label)
    assert df.busbw_bytes_per_s.iloc[i] == pytest.approx(busbw_gbs * 1e9, rel=1e-12)
    assert run.size[i] == size
    assert run.time_s[i] == pytest.approx(time_s, rel=1e-12)
    # every row: the exact powers of two of the -f 2 sweep, 1 KiB ... 8 GiB
    assert run.size.tolist() == [2.0**k for k in range(10, 34)]


@pytest.mark.parametrize("key", sorted(BUSBW_LAUNCH))
def test_busbw_only_error_is_predicted_over_published_busbw(busbw_runs, key):
    """errors() on a busbw-only run is busbw_pred / busbw_meas - 1 with busbw_pred as
    predict_collective reports it (its own busbw factor) and busbw_meas as published."""
    from costmodel.fitted_corrections import CV

    run = busbw_runs[key]
    p = P.predict_collective(
        run.op,
        run.size,
        run.cluster,
        nodes=run.nodes,
        gpus_per_node=run.gpus_per_node,
        algorithm=run.algorithm,
        protocol=run.protocol,
        model="nccl",
        gpus_per_process=run.gpus_per_process,
        nvls=run.spec.nvls,
        collnet_enabled=run.spec.collnet,
        params=dict(CV[key]),
    )
    published = read_busbw_table(reference_path(key)).busbw_bytes_per_s.to_numpy(float)
    want = np.asarray(p.busbw_bytes_per_s, float) / published - 1.0
    got = fit.errors(run, np.asarray(p.time_s, float))
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def test_mnnvl_headline_is_near_the_single_domain_nvlink_plateau():
    """27 (two headline numbers, L trust): 2 GB200 trays x 4 over multi-node NVLink "811 GB/s";
    the model's 8-GPU slice of one NVL72 NVLink domain at 8 GiB lands within 25 % of it (a
    coarse check: the metric, sizes and NCCL version are not in the source), and the
    InfiniBand figure (85 GB/s) is far below any NVLink prediction."""
    text = reference_path("27").read_text()
    assert "811GB/s" in text and "85GB/s" in text
    p = P.predict_collective("all_reduce", 8 * 2**30, "gb200-nvl72", gpus_per_node=8, nodes=1)
    busbw = float(np.asarray(p.busbw_bytes_per_s)) / 1e9
    assert abs(busbw / 811 - 1) < 0.25, busbw
    assert busbw > 5 * 85
