"""Expected error bands: derived in code from the grouped-CV
residuals written by scripts/fit_corrections.py, carried by every prediction, shown by the CLI,
the sweep and the app; a regime or fabric without a measurement says so."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from costmodel import uncertainty as U
from costmodel.fitted_corrections import CV, FITTED
from costmodel.predict import predict_collective
from tests._paths import load_script

ROOT = Path(__file__).resolve().parents[1]
fit = load_script("fit_corrections")


def test_bands_in_the_file_are_the_grouped_cv_residuals_recomputed():
    """Not hand-typed: recomputing from the fold parameters in the file (grouped CV, then the
    fabric-family and op-class folds) gives the file's bands and coverage."""
    runs = fit.load_runs()
    cv = {k: dict(v) for k, v in CV.items()}
    assert set(FITTED.folds) == {"family", "op"}
    hard = [cv, *({k: v.as_dict() for k, v in FITTED.folds[f].items()} for f in ("family", "op"))]
    again = fit.bands(runs, cv, hard)
    cover = fit.coverage(fit._residual_pool(runs, "nccl", hard))
    for reg, classes in cover.items():
        for sc, v in classes.items():
            for key in ("measured", "measured_loro", "tau"):
                want = FITTED.coverage[reg][sc].get(key, math.nan)
                assert (math.isnan(v[key]) and math.isnan(want)) or v[key] == (
                    pytest.approx(want, abs=2e-4)
                ), (reg, sc, key)
    assert set(again) == set(FITTED.bands)
    for model, regs in again.items():
        assert set(regs) == set(FITTED.bands[model]), model
        for reg, classes in regs.items():
            for sc, vals in classes.items():
                for k, v in vals.items():
                    assert FITTED.bands[model][reg][sc][k] == pytest.approx(v, abs=2e-4), (
                        model,
                        reg,
                        sc,
                        k,
                    )


def test_every_measured_regime_has_a_band_and_cv_is_grouped_by_source():
    regs = FITTED.bands["nccl"]
    for reg in (
        "single-node-nvlink",
        "single-node-pcie",
        "multi-node-infiniband",
        "multi-node-cloud",
        "multi-node-slingshot",
    ):
        for sc in U.SIZE_CLASSES:
            b = regs[reg][sc]
            assert 0 < b["half_width"] < 10 and 0 < b["lo"] < b["hi"], (reg, sc)
            assert b["n_runs"] >= 1 and 1 <= b["n_groups"] <= b["n_runs"], (reg, sc)
    # siblings share their CV parameters: one fit per source, never per sub-run
    by_group: dict[str, set] = {}
    for run, g in FITTED.groups.items():
        by_group.setdefault(g, set()).add(repr(sorted(CV[run].items())))
    assert all(len(v) == 1 for v in by_group.values())
    assert {"13", "15", "09", "24"} <= set(by_group)


def test_prediction_carries_its_band():
    p = predict_collective("all_reduce", [2**10, 2**30], "dgx-h100", nodes=2)
    b = p.error_band
    assert b.regime == "multi-node-infiniband" and b.measured
    want = FITTED.bands["nccl"]["multi-node-infiniband"]
    assert b.half_width[1] == want["ge1MiB"]["half_width"]
    assert b.half_width[0] == want["lt1MiB"]["half_width"]
    assert b.pct(1) == f"±{100 * want['ge1MiB']['half_width']:.0f}%"
    fast, slow = b.time_bounds(p.time_s)
    assert (fast <= p.time_s).all() and (slow >= p.time_s).all()
    one = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=1)
    assert one.error_band.regime == "single-node-nvlink" and isinstance(
        one.error_band.half_width, float
    )


def test_unmeasured_fabric_says_so():
    assert "tcpxo" not in FITTED.measured_fabrics
    b = predict_collective("all_reduce", 2**30, "gcp-a3-mega", nodes=2).error_band
    assert not b.measured and math.isnan(b.half_width)
    assert "tcpxo" in b.note and b.pct().startswith("± ?")


def test_pytorch_harness_has_no_small_message_band_and_g_raises_the_floor():
    sizes = [8.0, 2.0**30]
    base = predict_collective("all_reduce", sizes, "dgx-h100")
    g = predict_collective("all_reduce", sizes, "dgx-h100", harness="nccl-tests-g")
    torch = predict_collective("all_reduce", sizes, "dgx-h100", harness="pytorch")
    assert g.time_s[0] > base.time_s[0] and g.time_s[1] == base.time_s[1]
    assert math.isnan(torch.error_band.half_width[0])
    assert torch.error_band.half_width[1] == base.error_band.half_width[1]
    with pytest.raises(ValueError, match="harness"):
        predict_collective("all_reduce", 8, "dgx-h100", harness="mpi")


def test_sweep_rows_carry_band_columns_equal_to_the_prediction():
    import costmodel as cm

    df = cm.sweep(preset=["dgx-h100"], nodes=[1, 2], size=["4KB", "1GB"])
    assert {"error_band_pct", "regime"} <= set(df.columns)
    for _, row in df.iterrows():
        p = predict_collective("all_reduce", row["size_bytes"], "dgx-h100", nodes=row["nodes"])
        assert row["regime"] == p.error_band.regime
        assert row["error_band_pct"] == pytest.approx(100 * p.error_band.half_width)


def test_cli_prints_the_band():
    from typer.testing import CliRunner

    from costmodel.cli import app

    out = CliRunner().invoke(app, ["predict", "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB"])
    assert out.exit_code == 0, out.output
    assert (
        "±" in out.output and "multi-node-infiniband" in out.output and "Leaves out" in out.output
    )
    out = CliRunner().invoke(
        app, ["collective", "all_reduce", "--cluster", "gcp-a3-mega", "--nodes", "2", "-s", "1GB"]
    )
    assert out.exit_code == 0 and "± ?" in out.output


def test_band_trace_shades_between_the_multipliers():
    from costmodel import plots

    fig = plots.bandwidth_vs_gpus_figure(
        __import__("pandas").DataFrame({"gpus": [8, 16], "b": [100.0, 50.0]}), {"x": "b"}
    )
    plots.band_trace(fig, [8, 16], [100.0, 50.0], [0.9, np.nan], [1.1, np.nan])
    upper, lower = fig.data[0], fig.data[1]
    assert upper.y[0] == pytest.approx(110.0) and lower.y[0] == pytest.approx(90.0)
    assert np.isnan(upper.y[1]) and lower.fill == "tonexty"


def test_pytorch_loop_adds_the_cited_per_call_cost():
    """8 x H100, torch.distributed.all_reduce (NCCL) in a loop: 19.19 us at 128 B and 19.50 us at
    1 KiB published (ByteDance-Seed/Triton-distributed#57), the source of the prior."""
    from costmodel import corrections as C

    sizes = [128.0, 1024.0, 2.0**30]
    torch = predict_collective("all_reduce", sizes, "dgx-h100", harness="pytorch").time_s
    plain = predict_collective("all_reduce", sizes, "dgx-h100").time_s
    assert torch[0] * 1e6 == pytest.approx(19.19, rel=0.10)
    assert torch[1] * 1e6 == pytest.approx(19.50, rel=0.10)
    assert torch[0] - plain[0] == pytest.approx(C.PYTORCH_LOOP_EXTRA_US * 1e-6)
    assert torch[2] == pytest.approx(plain[2], rel=2e-3)  # 0.1 % at 1 GiB
    # one GPU: nothing to communicate, no loop cost either
    assert predict_collective("all_reduce", 128.0, "dgx-h100", 1, 1, harness="pytorch").time_s == 0
