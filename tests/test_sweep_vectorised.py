"""The vectorised NCCL sweep path equals predict_collective row by row."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from costmodel import nccl
from costmodel.predict import cluster_topology, predict_collective
from costmodel.presets import cluster
from costmodel.realistic import realistic_rows

sw = importlib.import_module("costmodel.sweep")


@pytest.mark.parametrize("model", ["nccl", "nccl-table"])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all", "broadcast"])
def test_sweep_rows_equal_predict_collective(model, op):
    sizes = [8, 4096, 2**20, 2**27, 2**33]
    nodes = [1, 2, 3, 5, 16]
    df = sw.sweep(
        sw.make_grid(
            preset=["dgx-h100", "gcp-a4", "alps-gh200"], model=model, op=op, nodes=nodes, size=sizes
        )
    )
    assert len(df) == 3 * len(nodes) * len(sizes)
    for (preset, k), rows in df.groupby(["preset", "nodes"]):
        p = predict_collective(
            op, np.asarray(rows["size_bytes"], float), preset, nodes=int(k), model=model
        )
        assert np.allclose(rows["time_s"], p.time_s, rtol=1e-12, atol=0)
        assert rows["algorithm_used"].astype(str).tolist() == p.algorithm.tolist()
        assert rows["protocol_used"].astype(str).tolist() == p.protocol.tolist()


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "gb200-nvl72", "aws-p5", "dgx1-v100"])
def test_table_mode_matches_the_scalar_nccl_table(name):
    """corrected=False is NCCL's table: the same choice and time as nccl.nccl_table_time."""
    m = 8.0 * 2.0 ** np.arange(0, 32, 3)
    for k in (1, 2, 3, 7, 32):
        c = cluster(name, nodes=k)
        want_t, want_a, want_p = nccl.nccl_table_time("all_reduce", m, cluster_topology(c))
        t, a, p, (an, pn) = realistic_rows("all_reduce", m, k, c.gpus_per_node, c, corrected=False)
        assert np.allclose(t, want_t, rtol=1e-12)
        assert np.asarray(an)[a].tolist() == want_a.tolist()
        assert np.asarray(pn)[p].tolist() == want_p.tolist()


_AB_CASES = [
    ("all_reduce", "auto"),
    ("all_reduce", "tree"),
    ("all_gather", "auto"),
    ("all_to_all", "auto"),
    ("broadcast", "binomial_tree"),
]


@pytest.mark.parametrize(
    ("model", "op", "algorithm"),
    [(m, op, a) for m in ("lesson", "textbook") for op, a in _AB_CASES]
    + [
        ("textbook", "all_reduce", "hierarchical"),
        ("textbook", "all_reduce", "hierarchical_pipelined"),
    ],
)
def test_alpha_beta_sweep_rows_equal_predict_collective(model, op, algorithm):
    """Lesson and textbook rows (one array call per GPUs-per-node) equal the per-cluster road."""
    sizes = [1, 4096, 2**20, 2**33]
    nodes = [1, 2, 3, 16]
    presets_ = ["dgx-h100", "aws-p5", "alps-gh200"]
    df = sw.sweep(
        sw.make_grid(
            preset=presets_,
            model=model,
            op=op,
            algorithm=algorithm,
            nodes=nodes,
            gpus_per_node=[1, 2, 4],
            size=sizes,
        )
    )
    assert len(df) == len(presets_) * len(nodes) * 3 * len(sizes)
    for (preset, k, g), rows in df.groupby(["preset", "nodes", "gpus_per_node"], observed=True):
        p = predict_collective(
            op,
            np.asarray(rows["size_bytes"], float),
            preset,
            nodes=int(k),
            gpus_per_node=int(g),
            model=model,
            algorithm=algorithm,
        )
        assert np.allclose(rows["time_s"], p.time_s, rtol=1e-12, atol=0)
        assert np.allclose(rows["busbw_GBps"] * 1e9, p.busbw_bytes_per_s, rtol=1e-12)
        assert rows["algorithm_used"].astype(str).tolist() == p.algorithm.tolist()


def test_alpha_beta_rows_refuse_what_predict_refuses():
    """A bad algorithm, and nodes on a preset without a network, raise as predict_collective."""
    from costmodel.models import alpha_beta_rows

    with pytest.raises(ValueError, match="algorithm"):
        alpha_beta_rows("lesson", "all_reduce", 8, 2, 8, cluster("dgx-h100"), "hierarchical")
    with pytest.raises(ValueError, match="nvls"):
        alpha_beta_rows("textbook", "all_reduce", 8, [1, 2], 8, cluster("dgx-h100"), "nvls")
    with pytest.raises(ValueError, match="network"):
        alpha_beta_rows("textbook", "all_reduce", 8, [1, 2], 8, cluster("pcie-8x-l40s"))


@pytest.mark.parametrize("model", ["nccl", "lesson"])
def test_band_columns_per_distinct_pair_equal_the_per_row_call(model):
    """The sweep evaluates the error band once per (size, node class); the rows get the same
    error_band_pct and regime as uncertainty.band_columns row by row."""
    from costmodel.uncertainty import band_columns

    df = sw.sweep(
        sw.make_grid(
            preset=["dgx-h100", "aws-p5", "gcp-a4"],
            model=model,
            nodes=[1, 2, 3, 17],
            gpus_per_node=[1, 8],
            size=[1, 8, 4096, 2**20, 2**30],
        )
    )
    for name, rows in df.groupby("preset", observed=True):
        c = cluster(name)
        pct, reg = band_columns(
            model, c.fabric, c.intra_kind, rows.nodes.to_numpy(), rows.size_bytes.to_numpy()
        )
        assert np.array_equal(pct, rows.error_band_pct.to_numpy(), equal_nan=True)
        assert rows.regime.astype(str).tolist() == reg.tolist()
