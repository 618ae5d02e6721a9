"""QA pass 22: a band's measured range counts GPUs as well as nodes (a one-node NVL72), `memory
--strategy all --gpus-per-node`, the band's percentage without float noise in CSV and JSON,
and a word in ``protocol_used`` where no NCCL protocol runs."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from costmodel import uncertainty as U
from costmodel.fitted_corrections import FITTED
from costmodel.predict import predict_collective, predict_collective_nodes
from costmodel.presets import cluster as load_cluster
from costmodel.sweep import sweep, sweep_to_file
from costmodel.sweep.grid import make_grid
from tests._cli import one_line_error, run

EXTRAPOLATED = "beyond the largest measured run in this regime"
NVL72 = "gb200-nvl72"  # 72 GPUs in one NVLink domain: one "node" of the preset


def _cell(regime: str, size_class: str, model: str = "nccl") -> dict[str, float]:
    return dict(FITTED.bands[model][regime][size_class])


# --- 1. the measured range is nodes and GPUs ----------------------------------------------------
def test_a_one_node_nvl72_beyond_the_gpus_measured_says_extrapolated():
    """Below 1 MiB the one-node NVLink band rests on runs of at most 8 GPUs: a 72-GPU NVLink
    domain is one node, yet nine times the GPUs any of those runs had."""
    small = _cell("single-node-nvlink", "lt1MiB")
    gpus = load_cluster(NVL72).gpus_per_node
    if not small["max_gpus"] < gpus:
        pytest.fail("the test needs a one-node band measured on fewer GPUs than an NVL72 has")
    b = predict_collective("all_reduce", 1024.0, NVL72).error_band
    assert b is not None and b.measured and b.regime == "single-node-nvlink"
    run_ = (
        f"1 node, {int(small['max_gpus']):,} GPUs at most, over {int(small['n_runs'])} runs "
        f"from {int(small['n_groups'])} sources"
    )
    assert b.extrapolated == (
        f"{gpus} GPUs is {EXTRAPOLATED} ({run_}): the band is extrapolated, not measured at "
        "this scale"
    )
    assert b.extrapolated in b.note and "nodes is" not in b.extrapolated
    assert b.max_gpus_measured == int(small["max_gpus"]) and b.max_nodes_measured == 1
    assert b.extrapolated_beyond == f"{int(small['max_gpus'])} GPUs"


def test_the_nvl72_run_that_was_measured_is_not_called_extrapolated():
    big = _cell("single-node-nvlink", "ge1MiB")
    gpus = load_cluster(NVL72).gpus_per_node
    assert big["max_gpus"] >= gpus  # a bundled NVL72 run measured it from 1 MiB
    b = predict_collective("all_reduce", 2.0**30, NVL72).error_band
    assert b is not None and b.extrapolated == "" and b.extrapolated_beyond == ""


def test_a_multi_rack_nvl72_within_the_nodes_but_beyond_the_gpus_is_extrapolated():
    small = _cell("multi-node-infiniband", "lt1MiB")
    c = load_cluster(NVL72, nodes=2)
    if not (c.nodes <= small["max_nodes"] and c.ranks > small["max_gpus"]):
        pytest.fail("the test needs 2 racks inside the nodes measured and beyond the GPUs")
    b = predict_collective("all_reduce", 1024.0, c).error_band
    assert b is not None and b.regime == "multi-node-infiniband"
    assert b.extrapolated.startswith(f"{c.ranks} GPUs is {EXTRAPOLATED}"), b.extrapolated


def test_both_counts_beyond_the_run_are_both_named():
    big = _cell("multi-node-infiniband", "ge1MiB")
    n = int(big["max_nodes"]) + 1
    c = load_cluster(NVL72, nodes=n)
    assert c.ranks > big["max_gpus"]
    b = predict_collective("all_reduce", 2.0**30, c).error_band
    assert b is not None
    assert b.extrapolated.startswith(f"{n} nodes and {c.ranks:,} GPUs are {EXTRAPOLATED}")
    assert (
        b.extrapolated_beyond == f"{int(big['max_nodes'])} nodes and {int(big['max_gpus']):,} GPUs"
    )


@pytest.mark.parametrize("model", ["nccl", "textbook", "lesson"])
def test_api_cli_and_sweep_flag_the_same_rows(model):
    """One road: the sweep's ``band_extrapolated`` is True exactly where predict_collective's
    band says extrapolated, over node counts, node slices and both size classes of an NVL72
    and a DGX; ``collective --json`` carries the same flag and the text its ``band:`` line."""
    for preset, gpn in ((NVL72, [8, 72]), ("dgx-h100", [1, 8])):
        rows = sweep(
            preset=[preset], model=[model], nodes=[1, 2, 17], gpus_per_node=gpn,
            size=[1024.0, 2.0**30],
        )  # fmt: skip
        seen = set()
        for r in rows.itertuples():
            c = load_cluster(preset, nodes=r.nodes, gpus_per_node=r.gpus_per_node)
            band = predict_collective("all_reduce", r.size_bytes, c, model=model).error_band
            assert band is not None
            assert bool(r.band_extrapolated) == bool(band.extrapolated), (preset, r)
            seen.add(bool(r.band_extrapolated))
        assert seen == {True, False}, preset
    said = run("collective", "all_reduce", "--size", "1KB", "--cluster", NVL72, "--model", model,
               "--json")  # fmt: skip
    assert said.exit_code == 0, said.output
    assert json.loads(said.stdout)["results"][0]["band_extrapolated"] is True
    text = run("collective", "all_reduce", "--size", "1KB", "--cluster", NVL72, "--model", model)
    assert text.exit_code == 0, text.output
    assert f"band: single-node-nvlink, 72 GPUs is {EXTRAPOLATED}" in text.stdout


def test_predict_collective_nodes_gives_each_node_count_its_own_band():
    """The advisor's one call for several node counts: each Prediction's band (its
    extrapolation note too) is predict_collective's for that node count, not the first
    multi-node cluster's."""
    big = _cell("multi-node-infiniband", "ge1MiB")
    far = int(big["max_nodes"]) * 4
    clusters = [load_cluster("dgx-h100", nodes=n) for n in (2, far)]
    got = predict_collective_nodes("all_reduce", [2.0**30], clusters)
    for c, p in zip(clusters, got, strict=True):
        want = predict_collective("all_reduce", [2.0**30], c).error_band
        assert p.error_band is not None and want is not None
        assert p.error_band.extrapolated == want.extrapolated, c.nodes
    assert got[0].error_band.extrapolated == "" and got[1].error_band.extrapolated != ""  # type: ignore[union-attr]


# --- 2. memory --strategy all --gpus-per-node ----------------------------------------------------
def _json(*args: str) -> dict:
    out = run(*args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_memory_strategy_all_takes_a_node_slice():
    """``--gpus-per-node 3`` means what it means for one strategy: a slice of 3 GPUs of each
    node, so the ranks are nodes x 3 and hsdp's groups are those the advisor ranks on that
    slice (candidate_layouts(12, 3): 3 and 6, where a whole 8-GPU node has 2 and 4), each row
    the memory sweep's with the same slice."""
    from costmodel.strategy import Layout
    from costmodel.strategy.advisor import candidate_layouts

    args = ("memory", "--arch", "llama-3.1-8b", "--strategy", "all", "--cluster", "dgx-h100",
            "--nodes", "4", "--gpus-per-node", "3")  # fmt: skip
    got = _json(*args)
    assert got["ranks"] == 12
    names = [r["layout"] for r in got["layouts"]]
    assert names == [Layout(ranks=12, gpus_per_node=3, **k).name for k in candidate_layouts(12, 3)]
    assert {"hsdp g=3", "hsdp g=6"} <= set(names) and "hsdp g=2" not in names
    assert {r["gpus_per_node"] for r in got["layouts"]} == {3}
    rows = sweep(kind="memory", preset="dgx-h100", arch="llama-3.1-8b", strategy="all",
                 ranks=[12], gpus_per_node=[3])  # fmt: skip
    assert rows["layout"].tolist() == names
    assert rows["memory_GB"].tolist() == [r["memory_GB"] for r in got["layouts"]]


def test_memory_strategy_all_slice_agrees_with_one_strategy_on_the_slice():
    """hsdp's default group on a slice is the slice (one road with ``--strategy hsdp``)."""
    common = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "4",
              "--gpus-per-node", "3")  # fmt: skip
    one = _json("memory", "--strategy", "hsdp", *common)
    every = _json("memory", "--strategy", "all", *common)
    (row,) = [r for r in every["layouts"] if r["layout"] == one["layout"]]
    assert one["layout"] == "hsdp g=3"
    assert row["memory_GB"] == one["memory_GB"] and row["fits"] == one["fits"]


def test_memory_strategy_all_refuses_a_slice_larger_than_the_node():
    one_line_error(
        run("memory", "--arch", "llama-3.1-8b", "--strategy", "all", "--cluster", "dgx-h100",
            "--nodes", "2", "--gpus-per-node", "9"),
        "--gpus-per-node", "1..8",
    )  # fmt: skip


def test_a_memory_sweep_slice_needs_a_preset():
    with pytest.raises(ValueError, match=r"^gpus_per_node: .*preset"):
        sweep(kind="memory", params=[7e9], ranks=[16], gpus_per_node=[4], gpu_memory=[80e9])


# --- 3. the band's percentage without float noise --------------------------------------------
_NOISE = re.compile(r"\d\.?\d*?(0{6,}|9{6,})\d{1,2}$")  # 37.730000000000004, 48.949999999999996


def test_a_sweep_csv_has_no_float_noise_in_its_percent_columns(tmp_path):
    """Every percent column of a sweep across node counts (which reaches the bands whose
    ``100 x half_width`` is not a short float) holds the fitted file's figure to 0.01, as
    written; the raw times are not rounded (they equal predict_collective's, digit for digit)."""
    grid = make_grid(
        {"preset": "dgx-h100,gb200-nvl72", "model": "nccl,textbook,lesson", "nodes": "1..32x2",
         "size": "8B..16GB x4"}, kind="collective",
    )  # fmt: skip
    path = tmp_path / "sweep.csv"
    sweep_to_file(path, grid)
    text = pd.read_csv(path, dtype=str, keep_default_na=False)
    pct_cols = [c for c in text.columns if c.endswith("_pct")]
    assert pct_cols == ["error_band_pct"]
    values = [v for c in pct_cols for v in text[c] if v]
    assert values and not [v for v in values if _NOISE.search(v)], sorted(set(values))[:5]
    assert all(float(v) == round(float(v), U.BAND_PCT_DECIMALS) for v in values)
    # the times are the model's, unrounded
    r = text.iloc[len(text) // 2]
    c = load_cluster(r["preset"], nodes=int(r["nodes"]))
    p = predict_collective("all_reduce", float(r["size_bytes"]), c, model=r["model"])
    assert float(r["time_s"]) == p.time_s


def test_the_band_percent_is_the_fitted_figure_on_every_surface():
    """API frame, CLI JSON and the sweep: the same ±% (the file's half-width x 100 to 0.01)."""
    half = _cell("multi-node-infiniband", "ge1MiB")["half_width"]
    want = round(100 * half, 2)
    frame = predict_collective("all_reduce", [2.0**30], "dgx-h100", nodes=2).to_frame()
    assert repr(float(frame["error_band_pct"].iloc[0])) == repr(want)
    got = _json(
        "collective", "all_reduce", "--size", "1GiB", "--cluster", "dgx-h100", "--nodes", "2"
    )
    assert repr(got["results"][0]["error_band_pct"]) == repr(want)
    row = sweep(preset=["dgx-h100"], nodes=[2], size=[2.0**30])
    assert repr(float(row["error_band_pct"].iloc[0])) == repr(want)
    assert U.band_pct(half) == want


def test_band_pct_removes_the_noise_of_the_product():
    assert repr(100 * 0.3773) == "37.730000000000004"  # the noise itself
    assert repr(U.band_pct(0.3773)) == "37.73"


# --- 4. protocol_used: a word where no NCCL protocol runs ------------------------------------
@pytest.mark.parametrize("model", ["lesson", "textbook"])
def test_the_alpha_beta_models_run_no_nccl_protocol(model):
    p = predict_collective("all_reduce", [1e3, 1e9], "dgx-h100", nodes=2, model=model)
    assert p.protocol.tolist() == ["none"] * 2
    got = _json("collective", "all_reduce", "--size", "1KB,1GB", "--cluster", "dgx-h100",
                "--nodes", "2", "--model", model)  # fmt: skip
    assert [r["protocol_used"] for r in got["results"]] == ["none"] * 2
    every = _json("collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100",
                  "--model", model, "--algorithm", "all")  # fmt: skip
    assert {r["protocol_used"] for r in every["results"]} == {"none"}
    pred = _json("predict", "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB", "--model", model)
    assert [r["protocol_used"] for r in pred["results"]] == ["none"]


def test_no_protocol_column_holds_a_placeholder(tmp_path):
    """Over the models and a one-GPU slice (nothing sent: algorithm and protocol "none"), a
    sweep CSV's ``protocol_used`` is an NCCL protocol or "none", never "-" or empty."""
    grid = make_grid(
        {"preset": "dgx-h100", "model": "nccl,nccl-table,textbook,lesson", "nodes": "1,2",
         "gpus_per_node": "1,8", "size": "1KB,1GB"}, kind="collective",
    )  # fmt: skip
    path = tmp_path / "p.csv"
    sweep_to_file(path, grid)
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert set(df["protocol_used"]) <= {"ll", "ll128", "simple", "none"}, set(df["protocol_used"])
    ab = df[df["model"].isin(["lesson", "textbook"])]
    assert set(ab["protocol_used"]) == {"none"}
    one = df[(df["nodes"] == "1") & (df["gpus_per_node"] == "1")]
    assert len(one) and set(one["protocol_used"]) == {"none"}
    assert set(one[one["model"] == "nccl"]["algorithm_used"]) == {"none"}
