"""A step sweep's ``strategy=all`` is the advisor's question: every layout ``costmodel step
--strategy all`` ranks (fsdp with and without resharding, hsdp at each group that divides the
ranks, ...), one row each, with the advisor's step time (one road: API, CLI, sweep)."""

import io
import json
import math

import pandas as pd
import pytest

import costmodel as cm
from costmodel.strategy.advisor import candidate_layouts
from costmodel.sweep import evaluate_rows, iter_sweep, make_grid
from tests._cli import one_line_error, run

ARCH, PRESET = "llama-3.1-8b", "dgx-h100"
COMPARED = (
    "step_time_s",
    "step_time_lo_s",
    "step_time_hi_s",
    "exposed_comm_s",
    "tokens_per_s",
    "fits",
    "bound",
)


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, bool | str) or a is None:
        return a == b
    return a == pytest.approx(b, rel=1e-12)


@pytest.fixture(scope="module")
def swept() -> pd.DataFrame:
    return cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="all", nodes="2,4")


@pytest.mark.parametrize("nodes", [2, 4])
def test_every_sweep_row_is_the_advisors_row(swept: pd.DataFrame, nodes: int) -> None:
    advice = cm.advise_strategy(arch=ARCH, cluster=PRESET, nodes=nodes)
    by_name = {r["layout"]: r for r in advice.rows()}
    rows = swept[swept["nodes"] == nodes]
    # exactly the advisor's layouts: none missing, none extra, none twice
    assert sorted(rows["layout"]) == sorted(by_name)
    assert len(rows) == len(candidate_layouts(8 * nodes, 8))
    for _, row in rows.iterrows():
        adv = by_name[row["layout"]]
        for k in COMPARED:
            assert _close(row[k], adv[k]), (row["layout"], k, row[k], adv[k])
        assert row["memory_GB"] == pytest.approx(adv["memory_bytes"] / 1e9, rel=1e-12)


def test_layout_columns_identify_each_layout(swept: pd.DataFrame) -> None:
    four = swept[swept["nodes"] == 4].set_index("layout")
    assert list(four.loc[["hsdp g=2", "hsdp g=4", "hsdp g=8", "hsdp g=16"], "group_size"]) == [
        2,
        4,
        8,
        16,
    ]
    assert (four.loc[["hsdp g=16"], "strategy"] == "hsdp").all()
    assert four.loc["fsdp", "reshard_after_forward"]
    assert not four.loc["fsdp (no reshard)", "reshard_after_forward"]
    assert four.loc["fsdp (no reshard)", "strategy"] == "fsdp"
    for name in ("ddp", "zero1", "zero2"):
        assert pd.isna(four.loc[name, "group_size"])
        assert pd.isna(four.loc[name, "reshard_after_forward"])
        assert four.loc[name, "strategy"] == name
    # every row identified once per node count
    assert not swept.duplicated(["nodes", "strategy", "group_size", "reshard_after_forward"]).any()


def test_cli_sweep_equals_step_strategy_all_json() -> None:
    sweep = run(
        "sweep",
        "--kind",
        "step",
        "--set",
        f"preset={PRESET}",
        "--set",
        f"arch={ARCH}",
        "--set",
        "strategy=all",
        "--set",
        "nodes=2",
    )
    assert sweep.exit_code == 0, sweep.stderr
    table = pd.read_csv(io.StringIO(sweep.stdout))
    step = run(
        "step", "--cluster", PRESET, "--arch", ARCH, "--nodes", "2", "--strategy", "all", "--json"
    )
    assert step.exit_code == 0, step.stderr
    ranked = {r["layout"]: r["step_time_s"] for r in json.loads(step.stdout)["strategies"]}
    assert sorted(table["layout"]) == sorted(ranked)
    for name, t in zip(table["layout"], table["step_time_s"], strict=True):
        assert t == pytest.approx(ranked[name], rel=1e-9), name


def test_row_ranges_and_chunks_agree_with_the_whole() -> None:
    grid = make_grid(
        {"preset": PRESET, "arch": ARCH, "strategy": "all", "nodes": "1,2", "micro_batch": "1,2"},
        kind="step",
    )
    # 1 node: 5 + hsdp g=2, 4 = 7 layouts; 2 nodes: 8; each at two micro-batches
    assert grid.rows == 2 * (len(candidate_layouts(8, 8)) + len(candidate_layouts(16, 8)))
    whole = pd.concat([t.to_pandas() for t in iter_sweep(grid, chunk_rows=5)], ignore_index=True)
    assert len(whole) == grid.rows
    cut = pd.concat(
        [evaluate_rows(grid, 0, 11).to_pandas(), evaluate_rows(grid, 11, grid.rows).to_pandas()],
        ignore_index=True,
    )
    # the same rows in the same order (a chunk's text columns may be dictionary-encoded)
    pd.testing.assert_frame_equal(whole.astype(object), cut.astype(object))


def test_all_refuses_a_group_or_reshard_axis() -> None:
    for name, value in (("group_size", "8"), ("reshard_after_forward", "false")):
        with pytest.raises(ValueError, match=f"^{name}: strategy=all"):
            make_grid({"preset": PRESET, "arch": ARCH, "strategy": "all", name: value}, kind="step")
    one_line_error(
        run(
            "sweep",
            "--kind",
            "step",
            "--set",
            f"preset={PRESET}",
            "--set",
            f"arch={ARCH}",
            "--set",
            "strategy=all",
            "--set",
            "group_size=8",
        ),
        "group_size",
        "strategy=fsdp,hsdp",
    )


def test_named_strategies_keep_their_axes() -> None:
    df = cm.sweep(
        kind="step", preset=PRESET, arch=ARCH, strategy="hsdp", group_size="4,8", nodes="2"
    )
    # named as strategy=all names them: the strategy, the layout's name, its group
    assert list(df["strategy"]) == ["hsdp", "hsdp"]
    assert list(df["layout"]) == ["hsdp g=4", "hsdp g=8"]
    assert list(df["group_size"]) == [4, 8]
    assert list(df["reshard_after_forward"]) == [True, True]
