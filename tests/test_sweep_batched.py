"""A step sweep prices its rows together, on the advisor's batched road, with the numbers of one
``strategy_step`` per row.

The sweep builds its steps' keyword sets with the advisor's ``layout_calls`` (one layout per
row, timers over one prediction cache) and evaluates them all with ``strategy_steps``; that may
not move a number. Here every output column of every row, the time and cost to train included,
is compared (1e-12 relative) with a direct ``strategy_step`` of the same question and
``training_cost`` of that step: every layout ``strategy=all`` ranks (ddp, zero1, zero2, fsdp with
and without resharding, hsdp at each group), several node counts, a node slice, accumulation,
a power limit, the lesson's model, rows that do not fit and rows that are refused. The speed is
measured side by side in benchmarks/bench_sweep.py (``--step-all``).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import costmodel as cm
import costmodel.strategy
import costmodel.strategy.step
from costmodel import presets
from costmodel.architecture import load_arch
from costmodel.strategy import strategy_step
from costmodel.strategy.advisor import candidate_layouts
from costmodel.strategy.layout import LAYOUT_KEYS
from costmodel.strategy.step import measured_peak_flops, model_flops_per_token
from costmodel.sweep import evaluate_rows, make_grid, to_frame
from costmodel.sweep.evaluate import STEP_COLUMNS, join_notes
from costmodel.training import load_price, training_cost

REL = 1e-12
TOKENS = 1e12
H100_PRICE = "coreweave-h100-on-demand"

#: every layout of Llama-3.1-8B on 1, 2 and 3 DGX H100 nodes at two micro-batches, priced: ddp
#: and zero1 do not fit one node (16 B of state per parameter), the others do
ALL_H100 = {
    "preset": "dgx-h100",
    "arch": "llama-3.1-8b",
    "strategy": "all",
    "nodes": "1,2,3",
    "micro_batch": "1,2",
    "tokens": TOKENS,
    "price": H100_PRICE,
}
#: a node slice (4 of 8 GPUs), accumulation, a power limit, the lesson's and NCCL's models, a
#: typed price: a cluster object of the sweep's own and the power-limited clusters
ALL_SLICES = {
    "preset": "dgx-a100",
    "arch": "llama-2-7b",
    "strategy": "all",
    "model": "lesson,nccl",
    "nodes": "1,2",
    "gpus_per_node": "4,8",
    "accumulation": 2,
    "power_limit_w": 300,
    "tokens": TOKENS,
    "usd_per_gpu_hour": 2.5,
}
#: named strategies of a bare parameter count with contention, a bucket and hsdp's groups
NAMED = {
    "preset": "dgx-h100",
    "params": 3e9,
    "strategy": "ddp,zero2",
    "nodes": "2,4",
    "comm_contention": "0,0.5",
    "bucket_cap": "25MB,100MB",
}
HSDP_GROUPS = {
    "preset": "dgx-h100",
    "arch": "llama-3.1-8b",
    "strategy": "hsdp",
    "group_size": "2,8,16",
    "reshard_after_forward": "true,false",
    "nodes": "2,4",
}


def _float(x: object) -> float:
    missing = x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))
    return float("nan") if missing else float(x)  # type: ignore[arg-type]


def _same(got: object, want: object, where: str) -> None:
    if isinstance(want, bool) or isinstance(want, str):
        assert got == want, (where, got, want)
    elif isinstance(want, int):
        assert int(got) == want, (where, got, want)  # type: ignore[call-overload]
    else:
        g, w = _float(got), _float(want)
        if math.isnan(w):
            assert math.isnan(g), (where, got, want)
        else:
            assert g == pytest.approx(w, rel=REL, abs=0.0), (where, got, want)


def _axis(row: pd.Series, name: str, default: object) -> object:
    v = row.get(name, default)
    # NaN in a float column, <NA> in an integer one with empty rows (Int64)
    return default if v is None or pd.isna(v) else v


def _direct_step(row: pd.Series) -> cm.strategy.StrategyStep:
    """The row's question asked of ``strategy_step`` directly, ``costmodel step``'s defaults."""
    gpn = _axis(row, "gpus_per_node", None)
    cluster = presets.cluster(
        row["preset"], nodes=int(row["nodes"]), gpus_per_node=None if gpn is None else int(gpn)
    )
    group = _axis(row, "group_size", None)
    reshard = _axis(row, "reshard_after_forward", None)
    strategy = row["strategy"].split(" ")[0]  # a named strategy's column is the layout's name
    params = _axis(row, "params", None)
    return strategy_step(
        None if params is None else float(params),
        arch=_axis(row, "arch", None),
        cluster=cluster,
        nodes=int(row["nodes"]),
        strategy=strategy,
        group_size=None if group is None else int(group),
        reshard_after_forward=None if reshard is None else bool(reshard),
        micro_batch=int(row["micro_batch"]),
        sequence_length=int(row["sequence_length"]),
        accumulation=int(row["accumulation"]),
        comm_contention=_axis(row, "comm_contention", None),
        bucket_cap_bytes=(
            None if _axis(row, "bucket_cap_bytes", None) is None else int(row["bucket_cap_bytes"])
        ),
        power_limit_w=_axis(row, "power_limit_w", None),
        compute_time_s=_axis(row, "compute_time_s", None),
        model=row["model"],
        timeline=False,
    )


def _expected_step_columns(s: cm.strategy.StrategyStep) -> dict[str, object]:
    lo, hi = s.step_time_band_s
    return {
        "ranks": s.ranks,
        "accumulation": s.accumulation,
        "comm_contention": s.comm_contention,
        "compute_s": s.compute_s,
        "comm_s": s.comm_s,
        "exposed_comm_s": s.exposed_comm_s,
        "step_time_s": s.step_time_s,
        "step_time_lo_s": lo,
        "step_time_hi_s": hi,
        "bound": s.bound,
        "efficiency": s.efficiency,
        "one_gpu_step_s": s.one_gpu_step_s,
        "compute_share": s.compute_s / s.step_time_s,
        "tokens_per_step": s.tokens_per_step,
        "tokens_per_s": s.tokens_per_s,
        "memory_GB": s.memory_bytes / 1e9,
        "gpu_memory_GB": s.gpu_memory_bytes / 1e9,
        "fits": bool(s.fits),
        "compute_source": s.compute_source,
        "band_extrapolated": s.band_extrapolated,
        "notes": join_notes(s.notes),
    }


def _expected_cost(row: pd.Series, s: cm.strategy.StrategyStep, axes: dict[str, object]) -> object:
    """``training_cost`` of the direct step, with ``train``'s MFU inputs (the model's FLOPs per
    token, the peak at the step's precision) and the grid's price (``axes``)."""
    gpu = presets.cluster(row["preset"]).gpu
    gpn = _axis(row, "gpus_per_node", None)
    node = presets.cluster(  # train's node: a slice is billed whole
        row["preset"], nodes=int(row["nodes"]), gpus_per_node=None if gpn is None else int(gpn)
    ).node
    arch = load_arch(row["arch"]) if _axis(row, "arch", None) else None
    params = float(arch.params) if arch is not None else float(row["params"])
    return training_cost(
        TOKENS,
        tokens_per_step=s.tokens_per_step,
        step_time_s=s.step_time_s,
        ranks=s.ranks,
        usd_per_gpu_hour=axes.get("usd_per_gpu_hour"),  # type: ignore[arg-type]
        price=axes.get("price"),  # type: ignore[arg-type]
        gpu=gpu.name,
        step_time_band_s=s.step_time_band_s,
        flops_per_token=model_flops_per_token(params, arch, int(row["sequence_length"]))[0],
        peak_flops=measured_peak_flops(gpu, s.precision),
        node=node,
    )


@pytest.fixture(scope="module")
def all_h100() -> pd.DataFrame:
    return cm.sweep(kind="step", **ALL_H100)


@pytest.fixture(scope="module")
def all_slices() -> pd.DataFrame:
    return cm.sweep(kind="step", **ALL_SLICES)


def test_the_grids_hold_every_kind_of_row(all_h100, all_slices):
    """What the comparisons below cover: every layout the advisor ranks at each node count,
    rows that fit and rows that do not, node slices and both models."""
    for nodes in (1, 2, 3):
        rows = all_h100[(all_h100.nodes == nodes) & (all_h100.micro_batch == 1)]
        names = sorted(rows.layout)
        assert len(names) == len(candidate_layouts(8 * nodes, 8))
        assert {"ddp", "zero1", "zero2", "fsdp", "fsdp (no reshard)", "hsdp g=4"} <= set(names)
    assert set(all_h100.fits) == {True, False}
    assert not all_h100[(all_h100.nodes == 1) & (all_h100.layout == "ddp")].fits.any()
    assert (all_h100.error == "").all() and (all_slices.error == "").all()
    # the comparisons below cover every output column of a step row but its names
    compared = set(_expected_step_columns(_direct_step(all_h100.iloc[0])))
    names = {*LAYOUT_KEYS, "micro_batch", "sequence_length", "band_note"}
    assert compared | names == set(STEP_COLUMNS)
    assert set(all_slices.gpus_per_node) == {4, 8} and set(all_slices.model) == {"lesson", "nccl"}


@pytest.mark.parametrize("grid", ["all_h100", "all_slices"])
def test_every_row_is_one_strategy_step(grid, request):
    df = request.getfixturevalue(grid)
    assert len(df) >= 40
    for i, row in df.iterrows():
        s = _direct_step(row)
        want = _expected_step_columns(s)
        where = f"{grid} row {i} ({row['layout']}, {row['nodes']} nodes)"
        for k, v in s.layout.identity().items():  # the names: the step's own layout's
            same = (pd.isna(row[k]) and v is None) or row[k] == v
            assert same, f"{where}: {k} {row[k]!r} != {v!r}"
        for k, v in want.items():
            _same(row[k], v, f"{grid} row {i} ({row['layout']}, {row['nodes']} nodes): {k}")
        assert row["band_note"] == "" or math.isnan(row["step_time_lo_s"])


@pytest.mark.parametrize("grid", ["all_h100", "all_slices"])
def test_time_and_cost_to_train_are_train_s_of_the_step(grid, request):
    df = request.getfixturevalue(grid)
    for i, row in df.iterrows():
        s = _direct_step(row)
        cost = _expected_cost(row, s, ALL_H100 if grid == "all_h100" else ALL_SLICES)
        where = f"{grid} row {i} ({row['layout']}, {row['nodes']} nodes)"
        assert int(row["steps"]) == cost.steps, where
        _same(row["wall_days"], cost.wall_days, f"{where}: wall_days")
        _same(row["gpu_hours"], cost.gpu_hours, f"{where}: gpu_hours")
        _same(row["billed_gpu_hours"], cost.billed_gpu_hours, f"{where}: billed_gpu_hours")
        _same(row["mfu"], cost.mfu, f"{where}: mfu")
        _same(row["cost_usd"], cost.cost_usd, f"{where}: cost_usd")
        _same(row["usd_per_gpu_hour"], cost.usd_per_gpu_hour, f"{where}: usd_per_gpu_hour")
        for name in ("wall_days", "gpu_hours", "cost_usd"):
            band = getattr(cost, f"{name}_band")
            assert band is not None, where
            _same(row[f"{name}_lo"], band[0], f"{where}: {name}_lo")
            _same(row[f"{name}_hi"], band[1], f"{where}: {name}_hi")
        assert ("does not fit" in row["cost_note"]) == (not s.fits), where
    if grid == "all_h100":  # the preset's price, its date; the arithmetic the columns claim
        price = load_price(H100_PRICE)
        assert (df.price == H100_PRICE).all()
        assert df.cost_usd.to_numpy() == pytest.approx(
            df.gpu_hours.to_numpy() * price.usd_per_gpu_hour, rel=REL
        )


@pytest.mark.parametrize("axes", [NAMED, HSDP_GROUPS], ids=["named", "hsdp-groups"])
def test_named_strategies_are_priced_on_the_same_road(axes):
    df = cm.sweep(kind="step", **axes)
    assert (df.error == "").all()
    if "group_size" in axes:  # hsdp at 2, 8, 16 GPUs per group, resharding or not
        assert set(df.group_size) == {2, 8, 16} and set(df.reshard_after_forward) == {True, False}
    for i, row in df.iterrows():
        for k, v in _expected_step_columns(_direct_step(row)).items():
            _same(row[k], v, f"row {i} ({row['strategy']}, {row['nodes']} nodes): {k}")


def test_the_rows_are_priced_in_one_batch_not_one_step_each(monkeypatch):
    """One ``strategy_steps`` call for every row of the sweep, and no ``strategy_step`` of a
    row alone (the road the sweep took before, one call per row)."""
    batches: list[int] = []
    real = costmodel.strategy.step.strategy_steps

    def counted(calls):
        batches.append(len(calls))
        return real(calls)

    def alone(*args, **kwargs):
        raise AssertionError("a row was priced alone")

    monkeypatch.setattr(costmodel.strategy.step, "strategy_steps", counted)
    monkeypatch.setattr(costmodel.strategy, "strategy_step", alone)
    df = cm.sweep(kind="step", **ALL_H100)
    assert batches == [len(df)]


def test_a_refused_row_says_what_the_step_says_and_the_others_are_priced():
    """A compute time faster than the GPU's peak refuses its rows (the batch finds them); an
    hsdp group that does not divide the ranks refuses its layout; each says what
    ``strategy_step`` says, and every other row is the direct step's."""
    fast = cm.sweep(
        kind="step",
        preset="dgx-h100",
        arch="llama-3.1-8b",
        strategy="ddp,fsdp",
        nodes="1,2",
        compute_time="1us,0.5s",
        tokens=TOKENS,
    )
    groups = cm.sweep(
        kind="step",
        preset="dgx-h100",
        arch="llama-3.1-8b",
        strategy="hsdp",
        group_size="3,4,16",
        nodes="1,2",
    )
    refused = 0
    for df in (fast, groups):
        for i, row in df.iterrows():
            if row["error"]:
                refused += 1
                with pytest.raises(ValueError) as exc:
                    _direct_step(row)
                assert row["error"] == " ".join(str(exc.value).split()), i
                assert math.isnan(row["step_time_s"]) and pd.isna(row["fits"])
                if "wall_days" in row:
                    assert math.isnan(row["wall_days"]) and row["cost_note"] == ""
                continue
            s = _direct_step(row)
            for k, v in _expected_step_columns(s).items():
                _same(row[k], v, f"row {i}: {k}")
            if "wall_days" in row:
                _same(row["wall_days"], _expected_cost(row, s, {}).wall_days, f"row {i}: wall_days")
    # 1 us per micro-batch: both strategies at both node counts; a 3-GPU group twice, a
    # 16-GPU group on one node
    assert refused == 4 + 3
    assert (groups[groups.group_size == 4].error == "").all()


def test_row_ranges_price_the_same_rows_as_the_whole_sweep(all_h100):
    """A range of rows (the Dask engine's partitions) is its own batch: the same numbers."""
    grid = make_grid(ALL_H100, kind="step")
    cut = [0, 7, 30, grid.rows]
    parts = pd.concat(
        [to_frame(evaluate_rows(grid, a, b)) for a, b in zip(cut, cut[1:], strict=False)],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(parts.astype(object), all_h100.astype(object), check_exact=True)


def test_batches_of_a_few_rows_price_the_same_rows(all_h100, monkeypatch):
    """A long sweep is priced in batches of at most ``STEP_BATCH_ROWS`` rows (bounded memory):
    the same rows, every call batch within the bound."""
    import costmodel.sweep.evaluate as ev

    batches: list[int] = []
    real = costmodel.strategy.step.strategy_steps

    def counted(calls):
        batches.append(len(calls))
        return real(calls)

    monkeypatch.setattr(ev, "STEP_BATCH_ROWS", 5)
    monkeypatch.setattr(costmodel.strategy.step, "strategy_steps", counted)
    small = cm.sweep(kind="step", **ALL_H100)
    assert max(batches) <= 5 and sum(batches) == len(small) and len(batches) >= len(small) / 5
    pd.testing.assert_frame_equal(small.astype(object), all_h100.astype(object), check_exact=True)
