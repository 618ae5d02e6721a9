"""A step sweep's ``ranks`` axis: a rank count of the preset, read as every command's
``--cluster NAME --ranks N`` and the collective sweep read it (``sweep.evaluate.ranks_slice``:
``N <= G`` one node's slice of ``N`` GPUs, a multiple of ``G`` ``N / G`` whole nodes, any
other count refused in one set of words). One road: each row is ``costmodel step --cluster
NAME --ranks N --json``'s answer, named (``strategy=all``: every layout) and by the API, the
CLI and a grid file alike, each preset of a grid on its own node size."""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest

import costmodel as cm
from costmodel.strategy.advisor import candidate_layouts
from costmodel.sweep import evaluate_rows, iter_sweep, make_grid
from costmodel.sweep import grid as grid_mod
from costmodel.sweep.evaluate import STEP_COLUMNS, join_notes
from tests._cli import one_line_error, run

ARCH = "llama-3.1-8b"
#: a node of 8 GPUs and a node of 4 (alps-gh200: 4 GH200 per node)
NODE_OF = {"dgx-h100": 8, "alps-gh200": 4}
RANKS = (4, 8, 16, 64)


def _step_json(preset: str, ranks: int, *extra: str) -> dict:
    r = run("step", "--cluster", preset, "--ranks", str(ranks), "--arch", ARCH, *extra, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


def _py(v):
    """A DataFrame cell as a Python value (numpy scalars' ``.item()``; an Int64 column's <NA>
    None, as JSON's null)."""
    if v is pd.NA:
        return None
    return v.item() if hasattr(v, "item") else v


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if a is None or b is None:
        return (a is None or (isinstance(a, float) and math.isnan(a))) and (
            b is None or (isinstance(b, float) and math.isnan(b))
        )
    if isinstance(a, bool | str):
        return a == b
    return a == pytest.approx(b, rel=1e-12, abs=0)


def _assert_row_is_step(row: pd.Series, step: dict) -> None:
    """Every output column of a sweep row is ``step --json``'s, and its cluster's shape."""
    for k in ("preset", "nodes", "gpus_per_node", "ranks"):
        assert row[k] == step[k], (k, row[k], step[k])
    for k in STEP_COLUMNS:
        want = join_notes(step[k]) if k == "notes" else step[k]
        got = _py(row[k])
        assert _same(got, want), (row["ranks"], k, got, want)


@pytest.fixture(scope="module")
def by_ranks() -> pd.DataFrame:
    """Both presets crossed in one grid, each its own node size."""
    return cm.sweep(
        kind="step", preset=list(NODE_OF), arch=ARCH, strategy="fsdp", ranks=list(RANKS)
    )


@pytest.mark.parametrize("preset", NODE_OF)
@pytest.mark.parametrize("ranks", RANKS)
def test_rows_are_step_cluster_ranks_json(by_ranks: pd.DataFrame, preset: str, ranks: int):
    """`sweep --set ranks=...` was refused as no step axis ("its ranks are nodes x
    gpus_per_node"); each row is now `step --cluster P --ranks N --json`, column for column."""
    rows = by_ranks[(by_ranks["preset"] == preset) & (by_ranks["ranks"] == ranks)]
    assert len(rows) == 1
    row = rows.iloc[0]
    assert row["error"] == ""
    g = NODE_OF[preset]
    shape = (1, ranks) if ranks <= g else (ranks // g, g)
    assert (row["nodes"], row["gpus_per_node"]) == shape
    _assert_row_is_step(row, _step_json(preset, ranks, "--strategy", "fsdp"))


def test_columns_are_nodes_gpus_per_node_ranks(by_ranks: pd.DataFrame):
    cols = list(by_ranks.columns)
    i = cols.index("nodes")
    assert cols[i : i + 3] == ["nodes", "gpus_per_node", "ranks"]
    assert len(by_ranks) == 2 * len(RANKS)
    assert make_grid(
        {"preset": list(NODE_OF), "arch": ARCH, "strategy": "fsdp", "ranks": list(RANKS)},
        kind="step",
    ).rows == len(by_ranks)


def test_cli_sweep_is_the_api_sweep(by_ranks: pd.DataFrame):
    r = run("sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100,alps-gh200",
            "--set", f"arch={ARCH}", "--set", "strategy=fsdp",
            "--set", "ranks=4,8,16,64")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    table = pd.read_csv(io.StringIO(r.stdout))
    assert list(table["ranks"]) == list(by_ranks["ranks"])
    assert list(table["nodes"]) == list(by_ranks["nodes"])
    assert list(table["gpus_per_node"]) == list(by_ranks["gpus_per_node"])
    for a, b in zip(table["step_time_s"], by_ranks["step_time_s"], strict=True):
        assert a == pytest.approx(b, rel=1e-12)


def test_grid_file_with_ranks_is_the_api_sweep(tmp_path, by_ranks: pd.DataFrame):
    path = tmp_path / "ranks.toml"
    path.write_text(
        'kind = "step"\n[grid]\npreset = ["dgx-h100", "alps-gh200"]\n'
        f'arch = "{ARCH}"\nstrategy = "fsdp"\nranks = [4, 8, 16, 64]\n'
    )
    df = cm.sweep(str(path))
    pd.testing.assert_frame_equal(df, by_ranks)


@pytest.mark.parametrize(("preset", "ranks"), [("dgx-h100", 4), ("dgx-h100", 16),
                                               ("alps-gh200", 8)])  # fmt: skip
def test_strategy_all_rows_are_step_strategy_all_json(preset: str, ranks: int):
    """strategy=all: every layout the advisor ranks on that rank count's cluster (a node
    slice, whole nodes of 8, whole nodes of 4), each row step --strategy all's layout."""
    df = cm.sweep(kind="step", preset=preset, arch=ARCH, strategy="all", ranks=ranks)
    g = NODE_OF[preset]
    nodes, gpn = (1, ranks) if ranks <= g else (ranks // g, g)
    assert len(df) == len(candidate_layouts(ranks, gpn))
    assert set(df["nodes"]) == {nodes} and set(df["gpus_per_node"]) == {gpn}
    assert set(df["ranks"]) == {ranks}
    step = _step_json(preset, ranks, "--strategy", "all")
    ranked = {r["layout"]: r for r in step["strategies"]}
    assert sorted(df["layout"]) == sorted(ranked)
    for _, row in df.iterrows():
        want = ranked[row["layout"]]
        for k in ("step_time_s", "exposed_comm_s", "tokens_per_s", "fits"):
            assert _same(_py(row[k]), want[k]), (row["layout"], k)


def test_strategy_all_row_count_counts_each_rank_counts_layouts():
    """MAX_STEP_ROWS counts a strategy=all grid's rows by each rank count's layouts."""
    g = make_grid(
        {"preset": "dgx-h100", "arch": ARCH, "strategy": "all", "ranks": "4,64",
         "micro_batch": "1,2"},
        kind="step",
    )  # fmt: skip
    assert g.rows == 2 * (len(candidate_layouts(4, 4)) + len(candidate_layouts(64, 8)))
    with pytest.raises(ValueError, match="MAX_STEP_ROWS"):
        make_grid(
            {"preset": "dgx-h100", "params": "7B", "ranks": "8,16", "sequence_length": "1..60000"},
            kind="step",
        )


def test_row_ranges_and_chunks_agree_with_the_whole():
    """A ranks grid's rows are the same cut in chunks or row ranges (the Dask engine's road):
    each piece reads its ranks as its preset's nodes alike."""
    g = make_grid(
        {"preset": list(NODE_OF), "arch": ARCH, "strategy": "all", "ranks": "4,16",
         "micro_batch": "1,2"},
        kind="step",
    )  # fmt: skip
    whole = pd.concat([t.to_pandas() for t in iter_sweep(g, chunk_rows=5)], ignore_index=True)
    assert len(whole) == g.rows
    cut = pd.concat(
        [evaluate_rows(g, 0, 13).to_pandas(), evaluate_rows(g, 13, g.rows).to_pandas()],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(whole.astype(object), cut.astype(object))


def test_global_tokens_split_over_each_rank_counts_gpus():
    """global_tokens is split over each row's ranks, as step --ranks --global-tokens splits it."""
    df = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="fsdp", ranks=[4, 16],
                  global_tokens="1Mi")  # fmt: skip
    assert list(df["accumulation"]) == [64, 16]  # 256 sequences of 4096 over 4 and 16 GPUs
    for _, row in df.iterrows():
        step = _step_json("dgx-h100", int(row["ranks"]), "--strategy", "fsdp",
                          "--global-tokens", "1Mi")  # fmt: skip
        _assert_row_is_step(row, step)


# --- refusals: one line, exit 2, the words of the commands -------------------------------

BASE = ("sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100",
        "--set", f"arch={ARCH}")  # fmt: skip


def test_ranks_not_a_node_shape_refused_in_ranks_slice_words():
    """12 GPUs on nodes of 8: the collective sweep's line, as step --cluster --ranks 12."""
    line = one_line_error(
        run(*BASE, "--set", "ranks=8,12"),
        "--set ranks: 12 GPUs cannot be built from 'dgx-h100' nodes of 8 GPUs",
        "ranks <= 8 or a multiple of 8",
    )
    collective = run("sweep", "--no-progress", "--set", "preset=dgx-h100", "--set", "ranks=12",
                     "--set", "size=1GB")  # fmt: skip
    assert line == one_line_error(collective)
    with pytest.raises(ValueError, match="ranks: 12 GPUs cannot be built from 'dgx-h100'"):
        cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, ranks=12)


def test_ranks_on_each_presets_own_node():
    """12 is 3 nodes of alps-gh200's 4 GPUs, but no shape of dgx-h100's 8: refused there."""
    df = cm.sweep(kind="step", preset="alps-gh200", arch=ARCH, ranks=12)
    assert (df["nodes"].iloc[0], df["gpus_per_node"].iloc[0]) == (3, 4)
    with pytest.raises(ValueError, match="'dgx-h100' nodes of 8 GPUs"):
        make_grid({"preset": "alps-gh200,dgx-h100", "arch": ARCH, "ranks": 12}, kind="step")


@pytest.mark.parametrize("other", ["nodes=2", "gpus_per_node=4"])
def test_ranks_beside_nodes_refused_as_the_collective_sweep(other: str):
    words = "grid: with a preset give ranks or nodes/gpus_per_node, not both"
    line = one_line_error(run(*BASE, "--set", "ranks=16", "--set", other), words)
    collective = run("sweep", "--no-progress", "--set", "preset=dgx-h100", "--set", "ranks=16",
                     "--set", other, "--set", "size=1GB")  # fmt: skip
    assert line == one_line_error(collective, words)


def test_ranks_zero_refused_in_the_limits_words():
    one_line_error(run(*BASE, "--set", "ranks=0"), "--set ranks: must be", "got 0")


def test_ranks_is_no_one_link_option_any_more():
    assert "ranks" not in grid_mod.STEP_LINK_OPTIONS
    assert grid_mod._axis("step", "ranks").name == "ranks"
