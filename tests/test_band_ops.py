"""An all-to-all across nodes has a band only where a bundled run measured one: elsewhere its
error is unknown, on every surface (API, sweep, validate), not the all-reduce band borrowed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from costmodel import uncertainty as U
from tests._paths import load_script


def test_the_regimes_with_a_multi_node_all_to_all_are_those_of_the_fitted_runs():
    fit = load_script("fit_corrections")
    specs = tuple(s for s in fit.RUNS if not s.busbw_only and not s.torch_table)
    runs = fit.load_runs(specs)
    measured = {
        U.regime(r.cluster.fabric, r.cluster.intra_kind, r.nodes)
        for r in runs
        if r.op == "all_to_all" and r.nodes > 1
    }
    assert measured == set(U.MULTI_NODE_ALL_TO_ALL_REGIMES)


@pytest.mark.parametrize("cluster", ["dgx-h100", "aws-p5"])
def test_a_multi_node_all_to_all_without_a_measured_run_has_an_unknown_band(cluster):
    p = cm.predict_collective("all_to_all", 2**28, cluster, nodes=4)
    assert not p.error_band.measured
    assert math.isnan(float(p.error_band.half_width))
    assert "all-to-all across nodes" in p.error_band.note
    # the same cluster's all-reduce and one-node all-to-all keep theirs
    assert cm.predict_collective("all_reduce", 2**28, cluster, nodes=4).error_band.measured
    assert cm.predict_collective("all_to_all", 2**28, cluster, nodes=1).error_band.measured


def test_slingshot_keeps_its_all_to_all_band():
    p = cm.predict_collective("all_to_all", 2**28, "alcf-polaris", nodes=8)
    assert p.error_band.measured and p.error_band.regime == "multi-node-slingshot"


def test_the_sweep_and_the_validate_band_say_the_same():
    pct, reg = U.band_columns(
        "nccl", "infiniband", "nvswitch", [1, 4, 4], [2**28] * 3, op="all_to_all"
    )
    assert not math.isnan(pct[0]) and math.isnan(pct[1])
    pct_ar, _ = U.band_columns("nccl", "infiniband", "nvswitch", [4], [2**28], op="all_reduce")
    assert not math.isnan(pct_ar[0])
    from costmodel.validation.logread import band_check

    table = pd.DataFrame(
        {
            "op": ["all_to_all", "all_reduce"],
            "nodes": [4, 4],
            "size_bytes": [2.0**28, 2.0**28],
            "rel_error": [0.5, 0.05],
        }
    )
    b = band_check(table, "dgx-h100", "nccl")
    assert b.rows == 1  # only the all-reduce row has a band to fall in
    assert np.isclose(b.half_width_large, pct_ar[0] / 100)
