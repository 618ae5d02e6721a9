"""A ``ranks`` axis over ``preset=all``: every preset, so a count one preset's node cannot build
(128 ranks of gb200-nvl72's 72-GPU node) is that (preset, ranks) pair's refused rows, with
``ranks_slice``'s reason in ``error``, and every buildable pair is answered, in the collective
and step sweeps alike (``strategy=all`` too), whole or in chunks, CSV or Parquet. A preset the
user names is still refused up front, one line, exit 2; so is a grid no preset can build."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import costmodel as cm
from costmodel import presets
from costmodel.sweep import evaluate_rows, iter_sweep, make_grid
from tests._cli import one_line_error, run

RANKS = "8..512x2"  # 8, 16, ..., 512
COUNTS = [8, 16, 32, 64, 128, 256, 512]
STEP = {"preset": "all", "params": "1B"}  # a step grid's axes


def _node(preset: str) -> int:
    return int(presets.cluster(preset, field="preset").gpus_per_node)


def _buildable(preset: str, ranks: int) -> bool:
    """The rule, written out here: one node's slice, or whole nodes."""
    g = _node(preset)
    return ranks <= g or ranks % g == 0


def _assert_pairs(df: pd.DataFrame, answered: str) -> None:
    """Every (preset, ranks) row: answered (``answered`` finite, its shape the rank count) where
    the preset's node builds the count, else refused naming the preset and its node size."""
    assert "gb200-nvl72" in set(df["preset"])  # the 72-GPU node is among 'all'
    refused = 0
    for row in df.itertuples(index=False):
        n, preset = int(row.ranks), str(row.preset)
        if _buildable(preset, n):
            assert row.error == "", (preset, n, row.error)
            assert math.isfinite(getattr(row, answered)), (preset, n)
            assert int(row.nodes) * int(row.gpus_per_node) == n
        else:
            refused += 1
            g = _node(preset)
            assert row.error.startswith(
                f"ranks: {n} GPUs cannot be built from '{preset}' nodes of {g} GPUs"
            ), row.error
            assert math.isnan(getattr(row, answered))
            assert pd.isna(row.nodes) and pd.isna(row.gpus_per_node)
    gb = df[df["preset"] == "gb200-nvl72"]
    assert sorted(gb.loc[gb["error"] != "", "ranks"]) == [128, 256, 512]
    assert refused == (df["error"] != "").sum() >= 3


def test_collective_preset_all_answers_every_buildable_pair():
    df = cm.sweep(preset="all", ranks=RANKS, size="1GB")
    assert set(df["ranks"]) == set(COUNTS)
    _assert_pairs(df, "time_s")
    # an answered row is the named preset's own answer (one road)
    one = cm.sweep(preset="gb200-nvl72", ranks="8..64x2", size="1GB")
    mine = df[(df["preset"] == "gb200-nvl72") & (df["error"] == "")].reset_index(drop=True)
    assert mine["time_s"].tolist() == one["time_s"].tolist()
    assert mine["ranks"].tolist() == one["ranks"].tolist()


def test_step_preset_all_answers_every_buildable_pair():
    df = cm.sweep(kind="step", **STEP, ranks=RANKS)
    assert len(df) == make_grid(STEP, kind="step", ranks=RANKS).rows
    _assert_pairs(df, "step_time_s")
    gb = df[df["preset"] == "gb200-nvl72"]
    assert gb.loc[gb["error"] != "", "strategy"].tolist() == ["ddp"] * 3  # the one asked
    one = cm.sweep(kind="step", preset="gb200-nvl72", params="1B", ranks="8..64x2")
    mine = gb[gb["error"] == ""].reset_index(drop=True)
    assert mine["step_time_s"].tolist() == one["step_time_s"].tolist()


def test_step_strategy_all_refused_pair_is_one_row_counted_by_the_grid():
    """No cluster lists a layout for 128 GPUs of a 72-GPU node: one row, strategy 'all' as
    asked; every other pair has its layouts; the grid's row count (MAX_STEP_ROWS') is the
    rows'."""
    spec = {**STEP, "strategy": "all", "ranks": "128"}
    df = cm.sweep(spec, kind="step")
    assert len(df) == make_grid(spec, kind="step").rows
    bad = df[df["error"] != ""]
    assert bad[["preset", "strategy", "ranks"]].values.tolist() == [["gb200-nvl72", "all", 128]]
    assert "nodes of 72 GPUs" in bad["error"].iloc[0]
    dgx = df[df["preset"] == "dgx-h100"]
    assert len(dgx) > 5 and (dgx["error"] == "").all()  # its layouts at 16 nodes of 8


@pytest.mark.parametrize("kind", ["collective", "step"])
def test_same_rows_chunked_and_in_row_ranges(kind: str):
    """Whole, in chunks of 1 and 7 rows, in two row ranges (the Dask engine's road): the same
    rows, refused ones included, each piece reading each preset's counts alike."""
    spec = (
        {**STEP, "ranks": "64,128"}
        if kind == "step"
        else {"preset": "all", "ranks": RANKS, "size": "1GB"}
    )
    grid = make_grid(spec, kind=kind)

    def frame(tables) -> pd.DataFrame:
        return pd.concat([t.to_pandas() for t in tables], ignore_index=True).astype(object)

    whole = frame(iter_sweep(grid, chunk_rows=10**6))
    assert len(whole) == grid.rows and (whole["error"] != "").sum() >= 1
    for chunk in (1, 7):
        pd.testing.assert_frame_equal(frame(iter_sweep(grid, chunk_rows=chunk)), whole)
    cut = grid.rows // 3
    ranges = frame([evaluate_rows(grid, 0, cut), evaluate_rows(grid, cut, grid.rows)])
    pd.testing.assert_frame_equal(ranges, whole)


def test_cli_writes_the_rows_and_counts_the_refused(tmp_path):
    """CSV and Parquet, in one chunk or one row a chunk: the same rows as the API's
    DataFrame; the summary counts the refused rows, each reason in ranks_slice's words."""
    read = {}
    for ext in ("csv", "parquet"):
        for chunk in ("1", "100000"):
            out = tmp_path / f"c{chunk}.{ext}"
            r = run("sweep", "--no-progress", "--set", "preset=all", "--set", f"ranks={RANKS}",
                    "--set", "size=1GB", "--chunk-rows", chunk, "-o", str(out))  # fmt: skip
            assert r.exit_code == 0, (r.stdout, r.stderr)
            assert "3 of" in r.stderr and "rows failed" in r.stderr, r.stderr
            assert "--set ranks: 128 GPUs cannot be built from 'gb200-nvl72' nodes of 72" in (
                r.stderr
            )
            read[ext, chunk] = cm.sweep.read_table(out)
    api = cm.sweep(preset="all", ranks=RANKS, size="1GB")
    said = [e.replace("`", "") for e in api.pop("error")]  # a file's words (plain_errors)
    for df in read.values():
        assert df.pop("error").astype(str).tolist() == said
        pd.testing.assert_frame_equal(df, api, check_exact=True)
    api["error"] = said
    bad = api[api["error"] != ""]
    assert sorted(bad["ranks"]) == [128, 256, 512]
    assert bad["error"].str.contains("or a multiple of 72, or set nodes instead").all()


@pytest.mark.parametrize("kind", ["collective", "step"])
@pytest.mark.parametrize("named", ["gb200-nvl72", "dgx-h100,gb200-nvl72"])
def test_a_named_preset_is_refused_up_front(kind: str, named: str):
    extra = ("--set", "size=1GB") if kind == "collective" else ("--set", "params=1B")
    one_line_error(
        run(
            "sweep",
            "--no-progress",
            "--kind",
            kind,
            "--set",
            f"preset={named}",
            "--set",
            f"ranks={RANKS}",
            *extra,
        ),  # fmt: skip
        "--set ranks: 128 GPUs cannot be built from 'gb200-nvl72' nodes of 72 GPUs",
    )
    axes = {"size": "1GB"} if kind == "collective" else {"params": "1B"}
    with pytest.raises(ValueError, match="128 GPUs cannot be built from 'gb200-nvl72'"):
        make_grid({"preset": named, "ranks": RANKS, **axes}, kind=kind)  # before any row


@pytest.mark.parametrize("kind", ["collective", "step"])
def test_preset_all_with_no_buildable_pair_is_refused_up_front(kind: str):
    """130 GPUs: no shape of 4-, 8- or 72-GPU nodes (the 2-GPU node has no network)."""
    axes = {"size": "1GB"} if kind == "collective" else {"params": "1B"}
    with pytest.raises(ValueError, match=r"^ranks: 130 GPUs cannot be built from '"):
        make_grid({"preset": "all", "ranks": 130, **axes}, kind=kind)
