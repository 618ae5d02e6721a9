"""Consistency between roads that should say the same thing:

- every pydantic road into a Scenario (the constructor, ``with_changes``, ``model_validate``,
  ``model_validate_json``, ``model_validate_strings``) refuses with the one-line ScenarioError;
- a memory sweep takes ``zero_stage`` with ``strategy`` exactly where ``costmodel memory
  --zero --strategy`` does (one rule: ``strategy.layout.stage_agrees``);
- a memory sweep mixing hsdp with other strategies writes ``group_size`` beside the layout, in
  every chunk (CSV rows stay aligned, Parquet chunks share a schema);
- ``max_params`` refuses a count past the float range without a numpy overflow warning;
- the CLI package does not carry an unused ``subprocess`` import.
"""

from __future__ import annotations

import csv
import inspect
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel, ValidationError

import costmodel as cm
from costmodel.strategy.layout import STRATEGIES, ZERO_STAGE
from tests._cli import one_line_error, run

# --- 1. every road into a Scenario refuses with the one-line ScenarioError -------------------

ROADS = {
    "model_validate": lambda: cm.Scenario.model_validate({"params": "7B", "nodes": 0}),
    "model_validate_json": lambda: cm.Scenario.model_validate_json('{"params": "7B", "nodes": 0}'),
    "model_validate_strings": lambda: cm.Scenario.model_validate_strings(
        {"params": "7B", "nodes": "0"}
    ),
}


@pytest.mark.parametrize("road", sorted(ROADS))
def test_model_validate_roads_raise_the_one_line_scenario_error(road):
    with pytest.raises(ValidationError) as info:  # still caught as pydantic's error
        ROADS[road]()
    exc = info.value
    assert isinstance(exc, cm.ScenarioError), type(exc)
    text = str(exc)
    assert "\n" not in text and "errors.pydantic.dev" not in text, text
    assert text.startswith("nodes: must be a whole number in 1..1,000,000, got "), text
    assert exc.errors()[0]["loc"] == ("nodes",)  # pydantic's structured errors kept
    # the constructor says the same
    with pytest.raises(cm.ScenarioError) as direct:
        cm.Scenario(params="7B", nodes=0)
    assert str(direct.value).split(", got ")[0] == text.split(", got ")[0]


def test_model_validate_roads_keep_pydantic_signatures_and_answers():
    for name in ROADS:
        assert inspect.signature(getattr(cm.Scenario, name)) == inspect.signature(
            getattr(BaseModel, name)
        ), name
    a = cm.Scenario.model_validate({"params": "7B", "nodes": 2})
    b = cm.Scenario.model_validate_json(a.model_dump_json())
    c = cm.Scenario.model_validate_strings({"params": "7B", "nodes": "2"})
    assert a == b == c == cm.Scenario(params="7B", nodes=2)
    assert type(b) is cm.Scenario


def test_invalid_json_is_a_scenario_error_too():
    with pytest.raises(cm.ScenarioError) as info:
        cm.Scenario.model_validate_json("{not json")
    assert "\n" not in str(info.value) and "Invalid JSON" in str(info.value)


# --- 2. zero_stage with strategy: one rule for memory and the memory sweep -------------------

SWEEP = {"params": "7B", "ranks": 16, "preset": "dgx-h100"}


def _sweep_accepts(stage: int, strategy: str) -> bool:
    try:
        cm.sweep(kind="memory", zero_stage=stage, strategy=strategy, **SWEEP)
    except ValueError as exc:
        assert str(exc).startswith("zero_stage: "), exc
        return False
    return True


def _memory_accepts(stage: int, strategy: str) -> bool:
    r = run("memory", "--params", "7B", "--ranks", "16", "--cluster", "dgx-h100",
            "--zero", str(stage), "--strategy", strategy, "--json")  # fmt: skip
    if r.exit_code == 2:
        one_line_error(r, "--zero")
        return False
    assert r.exit_code == 0, r.output
    return True


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_sweep_and_memory_agree_on_stage_with_strategy(stage):
    from costmodel.strategy.layout import stage_agrees  # the one rule both use

    for strategy in STRATEGIES:
        expected = ZERO_STAGE[strategy] == stage
        assert stage_agrees(strategy, stage) is expected
        assert _memory_accepts(stage, strategy) is expected, strategy
        assert _sweep_accepts(stage, strategy) is expected, strategy


def test_an_agreeing_stage_gives_the_strategy_s_rows():
    both = cm.sweep(kind="memory", zero_stage=3, strategy=["fsdp", "hsdp"], **SWEEP)
    alone = cm.sweep(kind="memory", strategy=["fsdp", "hsdp"], **SWEEP)
    pd.testing.assert_frame_equal(both, alone)
    assert both["zero_stage"].tolist() == [3, 3]
    # a given 0 is ddp's (the sweep knows it was typed, unlike --zero's default)
    assert _sweep_accepts(0, "ddp") and not _sweep_accepts(0, "fsdp")


def test_sweep_cli_accepts_an_agreeing_pair_and_names_a_contradiction(tmp_path):
    base = ["sweep", "--kind", "memory", "--set", "params=7B", "--set", "ranks=16",
            "--set", "preset=dgx-h100"]  # fmt: skip
    ok = run(*base, "--set", "zero_stage=3", "--set", "strategy=hsdp", "-o",
             str(tmp_path / "m.csv"))  # fmt: skip
    assert ok.exit_code == 0, ok.output
    bad = run(*base, "--set", "zero_stage=3", "--set", "strategy=fsdp,zero1", "-o",
              str(tmp_path / "n.csv"))  # fmt: skip
    one_line_error(bad, "--set zero_stage", "contradicts strategy zero1", "ZeRO-1")


# --- 3. group_size beside the layout in a mixed memory sweep ---------------------------------

MIXED = {"params": "7B", "ranks": 16, "preset": "dgx-h100", "strategy": ["ddp", "hsdp"]}


def _header_after_layout(columns: list[str]) -> None:
    i = columns.index("layout")
    assert columns[i + 1] == "group_size", columns
    assert columns[-1] == "notes", columns


@pytest.mark.parametrize("order", [["ddp", "hsdp"], ["hsdp", "fsdp", "ddp"]])
def test_mixed_sweep_puts_group_size_beside_the_layout(order):
    df = cm.sweep(kind="memory", **{**MIXED, "strategy": order})
    _header_after_layout(list(df.columns))
    groups = dict(zip(df["strategy"], df["group_size"], strict=True))
    assert groups["hsdp"] == 8  # one node of the preset
    assert all(pd.isna(groups[s]) for s in order if s != "hsdp")
    arch = cm.sweep(kind="memory", arch="llama-3.1-8b", ranks=16, preset="dgx-h100",
                    strategy=order)  # fmt: skip
    _header_after_layout(list(arch.columns))
    # a sweep without hsdp has the same columns (group_size null): one layout, one set of keys
    plain = cm.sweep(kind="memory", **{**MIXED, "strategy": ["ddp", "fsdp"]})
    _header_after_layout(list(plain.columns))
    assert plain["group_size"].isna().all()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_mixed_sweep_writes_aligned_chunks(tmp_path, suffix):
    out = tmp_path / f"m.{suffix}"
    r = run("sweep", "--kind", "memory", "--set", "params=7B", "--set", "ranks=16",
            "--set", "preset=dgx-h100", "--set", "strategy=ddp,hsdp", "--chunk-rows", "1",
            "-o", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    if suffix == "csv":
        with out.open() as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        assert all(len(row) == len(header) for row in body), rows
        got = [dict(zip(header, row, strict=True)) for row in body]
    else:
        df = pd.read_parquet(out)
        header = list(df.columns)
        got = df.astype(object).where(df.notna(), "").astype(str).to_dict(orient="records")
    _header_after_layout(header)
    assert [g["strategy"] for g in got] == ["ddp", "hsdp"]
    assert got[0]["group_size"] == "" and float(got[1]["group_size"]) == 8


def test_mixed_sweep_columns_are_memory_json_keys_with_its_null():
    df = cm.sweep(kind="memory", **MIXED)
    for strategy in MIXED["strategy"]:
        r = run("memory", "--params", "7B", "--ranks", "16", "--cluster", "dgx-h100",
                "--strategy", strategy, "--json")  # fmt: skip
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert set(df.columns) <= set(d), sorted(set(df.columns) - set(d))
        row = df[df["strategy"] == strategy].iloc[0]
        if d["group_size"] is None:
            assert pd.isna(row["group_size"])
        else:
            assert row["group_size"] == d["group_size"]


# --- 4. max_params past the float range: a refusal, no numpy warning -------------------------


def test_max_params_overflow_is_refused_without_a_runtime_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail here
        # ranks past the shared ranks limit (the CLI's --ranks range) are refused by that
        # range before any count could overflow
        for ranks in (1e300, np.array([1e300, 1.0])):
            with pytest.raises(ValueError, match=r"^dp_ranks: must be a whole number in 1\.\."):
                cm.max_params(80 * 2**30, zero_stage=3, dp_ranks=ranks)
        # the most ranks allowed are answered, element by element
        out = cm.max_params(80 * 2**30, zero_stage=3, dp_ranks=np.array([1e9, 8.0]))
    assert np.all(np.isfinite(out)) and out[0] == pytest.approx(80 * 2**30 / 16 * 1e9)
    assert out[1] == pytest.approx(80 * 2**30 / (16 / 8))


# --- 5. no stale subprocess import in the CLI package ----------------------------------------


def test_cli_package_has_no_unused_subprocess_import():
    from costmodel import cli

    assert not hasattr(cli, "subprocess")  # validate torch runs through runner.run_logged
