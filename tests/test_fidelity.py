"""Fidelity report as a test: every reference nccl-tests run predicted from its preset alone.

Prints, per run, the median |busbw error| (>= 1 MiB / all sizes / < 64 KiB) of the lesson (flat ring),
NCCL-table and full models; the full model twice: with the run's grouped-CV parameters
(costmodel/data/fitted_corrections.toml ``[cv]``: fitted with the run's whole source left out)
and in-sample (``[all]``).

Goals for high-trust NVSwitch/InfiniBand runs: <= 8 % from 1 MiB up, <= 20 % over all
sizes. Since grouped CV: the per-run goal and regression bounds (NOT_MET, OFI_BOUNDS)
are now checked in-sample (they were leave-one-run-out, which the issue shows is close to
in-sample), and the generalisation figure, grouped CV, is held per regime to CV_BOUNDS (the
achieved grouped-CV medians plus 1-2 points; docs/fidelity.md names the gap to the goal).
The busbw-only Azure runs 21a-d (no times) are scored on busbw like the others, as one CV group
("21"), so they are predicted with parameters fitted without any of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests._paths import load_script

ROOT = Path(__file__).resolve().parents[1]
fit = load_script("fit_corrections")

GOAL_GE_1MIB = 0.08
GOAL_ALL = 0.20

# run -> (bound >= 1 MiB, bound all sizes, why the goal is not met); bounds ~1-2 points above
# the achieved leave-one-run-out figure. One list, also written into docs/fidelity.md.
NOT_MET = fit.NOT_MET


@pytest.fixture(scope="module")
def unseen():
    """The fitted runs plus the unseen ones (UNSEEN_RUNS, empty today), their CV parameters and
    the measured coverage of the unseen runs' regimes, from the fitted file's folds."""
    from costmodel.fitted_corrections import ALL, CV, FITTED

    runs = fit.load_runs()
    missing = sorted({r.key for r in runs} - set(CV))
    assert not missing, (
        f"data/fitted_corrections.toml is stale (no CV for {missing}): re-run the script"
    )
    folds = {k: {r: v.as_dict() for r, v in FITTED.folds[k].items()} for k in ("family", "op")}
    return fit.with_unseen(runs, {k: dict(v) for k, v in CV.items()}, dict(ALL), folds)


@pytest.fixture(scope="module")
def rows(unseen):
    from costmodel.fitted_corrections import ALL

    every, cv, _ = unseen
    return fit.evaluate(every, cv, dict(ALL))


def _pct(x: float) -> str:
    return "   -" if math.isnan(x) else f"{100 * x:4.0f}"


def test_print_fidelity_table(rows, capsys):
    with capsys.disabled():
        print("\nrun        op              lesson (>=1M/all/<64K)    nccl-table          full")
        for r in rows:
            cells = [
                "/".join(_pct(r[m][k]) for k in ("ge1MiB", "all", "lt64KiB"))
                for m in ("lesson", "nccl-table", "nccl")
            ]
            print(f"{r['run'] + ('*' if r['goal'] else ''):10s} {r['op']:15s} " + "   ".join(cells))
    assert len(rows) >= 60


def test_goal_runs_meet_goals_or_their_regression_bound(rows):
    goal_rows = [r for r in rows if r["goal"]]
    assert len(goal_rows) >= 30
    failures = []
    for r in goal_rows:
        ge, al = r["in_sample"]["ge1MiB"], r["in_sample"]["all"]
        b_ge, b_all, _ = NOT_MET.get(r["run"], (GOAL_GE_1MIB, GOAL_ALL, ""))
        if not (ge <= b_ge and al <= b_all):
            failures.append(f"{r['run']}: {ge:.3f} (bound {b_ge}), all {al:.3f} (bound {b_all})")
    assert not failures, failures


def test_not_met_list_is_honest(rows):
    """Every NOT_MET entry really misses a goal (else it must be removed from the list)."""
    by_run = {r["run"]: r for r in rows}
    for run in NOT_MET:
        s = by_run[run]["in_sample"]
        assert s["ge1MiB"] > GOAL_GE_1MIB or s["all"] > GOAL_ALL, run


def test_full_model_beats_nccl_table_and_lesson(rows):
    import numpy as np

    goal = [r for r in rows if r["goal"]]
    for key in ("ge1MiB", "all"):
        full = np.nanmedian([r["nccl"][key] for r in goal])
        table = np.nanmedian([r["nccl-table"][key] for r in goal])
        book = np.nanmedian([r["lesson"][key] for r in goal])
        assert full < table < book, (key, full, table, book)
    small = [r for r in rows if not math.isnan(r["nccl"]["lt64KiB"])]
    assert np.median([r["nccl"]["lt64KiB"] for r in small]) < np.median(
        [r["nccl-table"]["lt64KiB"] for r in small]
    )


def test_docs_table_written():
    text = (ROOT / "docs" / "fidelity.md").read_text()
    assert "| 06a* |" in text and "full model" in text
    for run in NOT_MET:
        assert f"**{run}**" in text, f"docs/fidelity.md does not explain {run}: re-run the script"


def test_ofi_fabric_runs_hold_their_regression_bounds(rows):
    """Slingshot / EFA multi-node runs (not goal runs): full model within its bound from 1 MiB up
    and, over them, better than NCCL's table alone (median of run medians)."""
    import numpy as np

    by_run = {r["run"]: r for r in rows}
    over = [
        f"{k}: {by_run[k]['in_sample']['ge1MiB']:.3f} > {b}"
        for k, (b, _) in fit.OFI_BOUNDS.items()
        if by_run[k]["in_sample"]["ge1MiB"] > b
    ]
    assert not over, over
    keys = list(fit.OFI_BOUNDS)
    full = np.median([by_run[k]["in_sample"]["ge1MiB"] for k in keys])
    table = np.median([by_run[k]["nccl-table"]["ge1MiB"] for k in keys])
    assert full < table, (full, table)
    text = (ROOT / "docs" / "fidelity.md").read_text()
    assert all(f"**{k}**" in text for k in keys), "docs/fidelity.md lacks OFI_BOUNDS: re-run"


def test_grouped_cv_errors_per_regime_hold_their_regression_bounds(rows):
    """The generalisation figure: median over a regime's runs of the grouped-CV error."""
    got = {g["regime"]: g for g in fit.regime_summary(rows)}
    assert set(fit.CV_BOUNDS) <= set(got)
    over = []
    for reg, (b_ge, b_all) in fit.CV_BOUNDS.items():
        g = got[reg]
        if not (g["cv_ge1MiB"] <= b_ge and g["cv_all"] <= b_all):
            over.append(f"{reg}: {g['cv_ge1MiB']:.3f} (bound {b_ge}), {g['cv_all']:.3f} ({b_all})")
    assert not over, over


def test_grouped_cv_is_never_better_than_in_sample_by_much(rows):
    """Leaving a source out cannot help much on average (a sanity check of the split), over the
    regimes measured by several sources. Not over the cloud and Slingshot fabrics: there a
    fold without the fabric's only source uses the cited priors (fabric_priors.toml), which
    can beat a per-fabric value fitted on that one source's small sizes (16a, 16c, 23a)."""
    import numpy as np

    several = ("single-node-nvlink", "multi-node-infiniband")
    cv = np.nanmean([r["nccl"]["ge1MiB"] for r in rows if r["regime"] in several])
    ins = np.nanmean([r["in_sample"]["ge1MiB"] for r in rows if r["regime"] in several])
    assert cv >= ins - 0.01, (cv, ins)


def test_packaged_fidelity_report_is_the_docs_one():
    packaged = (ROOT / "costmodel" / "data" / "fidelity.md").read_text()
    assert packaged == (ROOT / "docs" / "fidelity.md").read_text()
    assert "grouped CV" in packaged and "earn their place" in packaged


BUSBW_ONLY = {"21a", "21b", "21c", "21d"}


def test_busbw_only_runs_are_one_cv_group_in_the_report_and_the_band(rows):
    from costmodel.fitted_corrections import ALL, CV, FITTED

    got = [r for r in rows if r["busbw_only"]]
    assert {r["run"] for r in got} == BUSBW_ONLY
    for r in got:
        assert r["group"] == FITTED.groups[r["run"]] == "21", r["run"]
        assert r["regime"] == "single-node-nvlink" and not r["goal"]
        assert not math.isnan(r["nccl"]["ge1MiB"]) and not math.isnan(r["nccl"]["lt64KiB"])
    # one fold: all four share the parameters fitted without group 21; where they are fitted
    # on (FIT_ON_BUSBW_ONLY), the in-sample parameters saw them and so differ
    cvs = [dict(CV[k]) for k in sorted(BUSBW_ONLY)]
    assert all(c == cvs[0] for c in cvs)
    if fit.FIT_ON_BUSBW_ONLY:
        assert cvs[0] != dict(ALL)
    # they count in the regime summary and in its error band
    single = [r for r in rows if r["regime"] == "single-node-nvlink"]
    reg = {g["regime"]: g for g in fit.regime_summary(rows)}["single-node-nvlink"]
    assert reg["runs"] == len(single) and reg["groups"] == len({r["group"] for r in single})
    band = FITTED.bands["nccl"]["single-node-nvlink"]["ge1MiB"]
    assert band["n_runs"] == len(single) and band["n_groups"] == reg["groups"]
    text = (ROOT / "docs" / "fidelity.md").read_text()
    for k in sorted(BUSBW_ONLY):
        assert f"| {k} (busbw-only) | all_reduce |" in text, f"{k} not in docs/fidelity.md"


@pytest.mark.slow
def test_busbw_only_runs_are_predicted_with_parameters_fitted_without_them():
    """Refits the fold (one fit, about 10 s on 2 cores): CV[21x] is what fitting every run of
    the other sources gives, with the dropped terms at their no-op values."""
    from costmodel.fitted_corrections import CV, FITTED

    others = fit.fit_runs([r for r in fit.load_runs() if fit.group_of(r.key) != "21"])
    assert others and not any(r.spec.busbw_only for r in others)
    dropped = frozenset(FITTED.dropped_terms)
    got = dict(CV["21a"])
    # main()'s default ablation mode neutralises the dropped terms, --refit-ablation refits
    ok = got == fit.neutralise(fit.fit(others), dropped) or got == fit.fit(others, dropped)
    assert ok, "CV[21a] is not the fit without group 21: stale file, or the fold saw 21a-d"


# --- per regime x op class, bands from the harder folds (issue: don't trade regimes) ---------
def test_every_regime_and_op_class_holds_its_regression_bound(rows):
    """A term that helps one regime must not quietly hurt another: every (regime, op class)
    cell with data is held to its bound (REGIME_OP_BOUNDS, achieved + 1-2 points), and every
    cell with data has one (a new cell must be added knowingly)."""
    table = {(c["regime"], c["op_class"]): c for c in fit.regime_op_table(rows)}
    assert set(table) == set(fit.REGIME_OP_BOUNDS)
    bad = []
    for cell, (b_ge, b_all) in fit.REGIME_OP_BOUNDS.items():
        c = table[cell]
        ge = 0.0 if math.isnan(c["cv_ge1MiB"]) else c["cv_ge1MiB"]
        if not (ge <= b_ge and c["cv_all"] <= b_all):
            bad.append((cell, round(ge, 3), round(c["cv_all"], 3), (b_ge, b_all)))
    assert not bad, bad


def test_band_coverage_on_the_harder_folds_holds_its_regression_bound():
    """Measured (leave one source out) coverage of the nominal 80 % band, per regime and size
    class, as the fit wrote it: within COVERAGE_BOUNDS (the achieved range; goal 75-85 %)."""
    from costmodel.fitted_corrections import FITTED

    got = {
        (reg, sc): v["measured"]
        for reg, classes in FITTED.coverage.items()
        for sc, v in classes.items()
        if "measured" in v
    }
    assert set(got) == set(fit.COVERAGE_BOUNDS)
    bad = [
        (cell, got[cell], lohi)
        for cell, lohi in fit.COVERAGE_BOUNDS.items()
        if not lohi[0] <= got[cell] <= lohi[1]
    ]
    assert not bad, bad


def test_band_coverage_each_source_once_holds_its_regression_bound():
    """The same coverage with each held-out source weighted once (what a new cluster sees on
    average; the band itself weighs each source once): within COVERAGE_BY_SOURCE_BOUNDS."""
    from costmodel.fitted_corrections import FITTED

    got = {
        (reg, sc): v["measured_by_source"]
        for reg, classes in FITTED.coverage.items()
        for sc, v in classes.items()
        if "measured_by_source" in v
    }
    assert set(got) == set(fit.COVERAGE_BY_SOURCE_BOUNDS)
    bad = [
        (cell, got[cell], lohi)
        for cell, lohi in fit.COVERAGE_BY_SOURCE_BOUNDS.items()
        if not lohi[0] <= got[cell] <= lohi[1]
    ]
    assert not bad, bad


def test_the_band_weighs_each_source_once():
    """band_of: a source with many runs weighs as much as a source with one. Two sources, one
    at ratio 1 with 9 runs, one at ratio 0.5 with 1 run: the band's median sits between them
    (a run-weighted median would sit on the 9-run source), and duplicating a source's runs does
    not move the band."""
    import numpy as np

    many = [{"group": "a", "q": np.full(20, 1.0)} for _ in range(9)]
    one = [{"group": "b", "q": np.full(20, 0.5)}]
    b = fit.band_of(many + one, tau=0.0)
    assert b["lo"] == pytest.approx(0.5) and b["hi"] == pytest.approx(1.0)
    assert fit.band_of(many[:1] + one, tau=0.0) == {**b, "n_runs": 2.0}


def test_the_between_source_spread_is_not_fitted_to_the_cells_it_widens():
    """The spread that widens a band (tau) is a variance estimate, not a knob tuned to the
    coverage: re-estimated with each cell's whole regime left out (measured_loro), no cell's
    leave-one-source-out coverage moves by more than 2 points (docs/fidelity.md)."""
    from costmodel.fitted_corrections import FITTED

    moved = {
        (reg, sc): (v["measured"], v["measured_loro"])
        for reg, classes in FITTED.coverage.items()
        for sc, v in classes.items()
        if "measured" in v and abs(v["measured"] - v["measured_loro"]) > 0.02
    }
    assert not moved, moved
    taus = {v["tau"] for classes in FITTED.coverage.values() for v in classes.values()}
    assert len(taus) == 1  # one spread, pooled over the regimes
    assert taus.pop() == pytest.approx(0.199, abs=0.01)  # the README and docs quote 0.199


def test_band_widens_with_few_sources_and_is_asymmetric():
    """band_of: with S sources the log spread on each side of the median ratio is
    sqrt(spread^2 + (z tau / S)^2): one source gains more than four, a narrow band gains more
    (relatively) than a wide one, tau = 0 leaves the percentiles as they are; one-sided misses
    give an asymmetric band (lo and hi not mirror images of each other around 1)."""
    import numpy as np

    q = np.exp(np.linspace(-0.5, 0.1, 101))  # measured slower than predicted, mostly
    tau = 0.2
    bare = fit.band_of([{"group": "a", "q": q}], 0.0)
    one = fit.band_of([{"group": "a", "q": q}], tau)
    four = fit.band_of([{"group": g, "q": q} for g in "abcd"], tau)
    mid = np.log(np.median(q))
    hi0 = np.log(bare["hi"]) - mid
    assert hi0 == pytest.approx(0.9 * 0.6 - 0.5 - mid, abs=0.01)  # the 90th percentile itself
    for band, groups in ((one, "a"), (four, "abcd")):
        spread0 = np.log(fit.band_of([{"group": g, "q": q} for g in groups], 0.0)["hi"]) - mid
        want = np.hypot(spread0, fit.Z90 * tau / len(groups))
        assert np.log(band["hi"]) - mid == pytest.approx(want, abs=1e-3)
    assert one["hi"] > four["hi"] > bare["hi"] and one["lo"] < four["lo"] < bare["lo"]
    qn = np.exp(0.1 * np.log(q))  # the same shape, a tenth of the spread
    mid_n = np.log(np.median(qn))
    narrow, narrow0 = (fit.band_of([{"group": "a", "q": qn}], t) for t in (tau, 0.0))
    grow_narrow = (np.log(narrow["hi"]) - mid_n) / (np.log(narrow0["hi"]) - mid_n)
    grow_wide = (np.log(one["hi"]) - mid) / hi0
    assert grow_narrow > 5 * grow_wide > 5
    assert one["n_groups"] == 1 and four["n_groups"] == 4
    assert abs(np.log(four["lo"]) + np.log(four["hi"])) > 0.1  # not symmetric around 1


def test_source_spread_is_the_pooled_sd_of_source_medians():
    """source_spread: cells with fewer than SPREAD_MIN_SOURCES sources do not count, the
    held-out source is left out of every cell, and the figure is the pooled SD of the sources'
    median log ratios (a cell whose sources agree has tau 0)."""
    import numpy as np

    one = np.ones(20)
    pool = {
        ("r", "ge1MiB"): [
            {"group": g, "q": one * f} for g, f in zip("abc", (1.0, 2.0, 4.0), strict=True)
        ],
        ("s", "ge1MiB"): [{"group": g, "q": one * 3.0} for g in "abc"],
        ("t", "ge1MiB"): [
            {"group": g, "q": one * f} for g, f in zip("ab", (1.0, 9.0), strict=True)
        ],
    }
    assert fit.SPREAD_MIN_SOURCES == 3
    ln2 = np.log(2.0)  # r: log medians 0, ln2, 2 ln2 -> squares 2 ln2^2 over 2 + 2 dof
    assert fit.source_spread(pool) == pytest.approx(np.sqrt(2 * ln2**2 / 4))
    assert fit.source_spread(pool, leave_out="c") == 0.0  # no cell keeps 3 sources
    assert fit.source_spread({("s", "ge1MiB"): pool[("s", "ge1MiB")]}) == 0.0


def test_coverage_is_measured_without_the_runs_own_source():
    """coverage(): a source far off the others lands outside their band; a cell with one
    source has no measured coverage (NaN), not 100 %."""
    import numpy as np

    q = np.linspace(0.9, 1.1, 50)
    pool = {
        ("r", "ge1MiB"): [
            {"group": "a", "q": q},
            {"group": "b", "q": q},
            {"group": "c", "q": 3 * q},
        ],
        ("s", "ge1MiB"): [{"group": "a", "q": q}],
    }
    cov = fit.coverage(pool)
    assert cov["r"]["ge1MiB"]["measured"] < 0.8
    assert math.isnan(cov["s"]["ge1MiB"]["measured"])


def test_error_band_shows_its_source_count():
    from costmodel.predict import predict_collective

    b = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=2).error_band
    assert b.measured and b.sources == b.n_groups >= 2


# --- run 26 (PCIe Gen5 switches with P2P): fitted on, its own CV group ----------------------
def test_run_26_is_fitted_as_its_own_source_and_holds_its_grouped_cv_bound(rows):
    """26 (8 RTX PRO 6000 over PCIe Gen5 switches, P2P) is in RUNS, in the fitted file as CV
    group "26" and in the single-node PCIe band; its grouped-CV figure (its source left out)
    is held to RUN_CV_BOUNDS. No fitting step takes its rows (one row <= 4 KiB for the host
    floor, medium trust for the ramps, P2P so not host-staged), so the fit without it is the fit
    on every run: its CV parameters are the shipped ones, as when it was scored unseen."""
    from costmodel.fitted_corrections import ALL, CV, FITTED

    assert "26" in {s.prefix for s in fit.RUNS} and "26" not in fit.NOT_FITTED
    assert FITTED.groups["26"] == "26" and dict(CV["26"]) == dict(ALL)
    by_run = {r["run"]: r for r in rows}
    bad = []
    for run, (b_ge, b_all, _) in fit.RUN_CV_BOUNDS.items():
        r = by_run[run]
        if not (r["nccl"]["ge1MiB"] <= b_ge and r["nccl"]["all"] <= b_all):
            bad.append((run, r["nccl"]["ge1MiB"], r["nccl"]["all"], (b_ge, b_all)))
    assert not bad, bad
    r = by_run["26"]
    assert r["regime"] == "single-node-pcie" and not r["goal"] and r["group"] == "26"
    band = FITTED.bands["nccl"]["single-node-pcie"]["ge1MiB"]
    assert band["n_groups"] == 2 and band["n_runs"] == 6  # 09a-e and 26
    text = (ROOT / "docs" / "fidelity.md").read_text()
    assert "| 26 | all_reduce | pcie5-8x-rtxpro6000-p2p |" in text and "**26**" in text
    assert "(unseen)" not in text


def test_run_26_is_read_from_its_two_tables():
    """read_torch_tables: table 7 (4 KB-4 MB, printed times) and table 6 (algbw, up to 1 GB)
    give 10 sizes, each once, binary labels; busbw = 1.75 M / t reproduces the file's printed
    group A busbw within its rounding."""
    import numpy as np

    (run,) = fit.load_runs(fit.PCIE_P2P_RUNS)
    assert run.size.tolist() == [4096 * 4**i for i in range(10)]
    assert run.time_s[0] == pytest.approx(23.93e-6) and run.time_s[4] == pytest.approx(81.08e-6)
    busbw = 1.75 * run.size / run.time_s / 1e9
    printed = [0.30, 1.54, 6.33, 18.28, 22.63, 40.22, 44.16, 45.63, 45.94, 46.44]
    assert np.allclose(busbw, printed, rtol=0.02, atol=0.01), busbw.round(2)
    assert run.spec.harness == "pytorch" and run.cluster.p2p and run.cluster.ranks == 8
    with pytest.raises(ValueError, match="no torch table rows"):
        fit.read_torch_tables("| 1 MB | 12.33 GB/s |")


# --- unseen runs: scored with the shipped parameters, never fitted on ------------------------
def test_unseen_mechanism_with_none_and_with_one(unseen, monkeypatch):
    """UNSEEN_RUNS is empty today: with_unseen() then returns the fitted runs and their CV
    parameters unchanged and no coverage, and the bounds tables are empty too. With a run
    declared unseen (26 again, its fitted-file entries removed), it is scored with the shipped
    parameters and the coverage of its regime is measured over both sources, which is what the
    refit that took 26 in wrote (no fitting step takes 26's rows, so no fold differs)."""
    from costmodel.fitted_corrections import ALL, CV, FITTED

    every, cv_every, cover = unseen
    assert fit.UNSEEN_RUNS == () and not fit.UNSEEN_KEYS
    assert not fit.UNSEEN_BOUNDS and not fit.UNSEEN_COVERAGE_BOUNDS
    assert [r.key for r in every] == [r.key for r in fit.load_runs()] and cover == {}
    assert set(cv_every) == set(CV)
    monkeypatch.setattr(fit, "UNSEEN_RUNS", fit.PCIE_P2P_RUNS)
    monkeypatch.setattr(fit, "UNSEEN_KEYS", frozenset({"26"}))
    fitted = [r for r in every if r.key != "26"]
    cv = {k: dict(v) for k, v in CV.items() if k != "26"}
    folds = {
        k: {r: v.as_dict() for r, v in FITTED.folds[k].items() if r != "26"}
        for k in ("family", "op")
    }
    got_runs, got_cv, got_cover = fit.with_unseen(fitted, cv, dict(ALL), folds)
    assert got_runs[-1].key == "26" and got_cv["26"] == dict(ALL)
    assert set(got_cover) == {"single-node-pcie"}
    for sc, v in got_cover["single-node-pcie"].items():
        assert v["n_groups"] == 2
        assert v["measured"] == pytest.approx(FITTED.coverage["single-node-pcie"][sc]["measured"])
    with pytest.raises(KeyError, match="stale fitted file"):
        fit.unseen_params(fitted, {k: v for k, v in cv.items() if k != "06a"}, dict(ALL))
