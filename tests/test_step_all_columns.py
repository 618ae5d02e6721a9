"""`costmodel step --strategy all --json`: each strategy's row carries the step sweep row's
columns for that layout (:func:`costmodel.sweep.evaluate.step_columns` and the sweep's inputs),
with the same values, as ``step --strategy NAME --json`` does for one strategy. The rows held
only the ranking's keys (no compute_s, comm_s, memory_GB, tokens_per_step, band_note, ...), so
a script reading the sweep or one step could not read the ranking."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.sweep.evaluate import join_notes

BASE = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2")
# (step options, the same configuration as sweep axes)
CASES = [
    ((), ()),
    (
        ("--micro-batch", "2", "--seq", "2048", "--contention", "0.3", "--power-limit-w", "500",
         "--recompute", "full"),
        ("micro_batch=2", "sequence_length=2048", "comm_contention=0.3", "power_limit_w=500",
         "recompute=full"),
    ),
]  # fmt: skip


def _json(args: list[str]) -> object:
    out = CliRunner().invoke(cli.app, args)
    assert out.exit_code == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12) or (a != a and b != b)
    return a == b


@pytest.mark.parametrize(("options", "axes"), CASES)
def test_each_ranked_row_is_the_sweep_row_of_its_layout(options, axes):
    doc = _json(["step", *BASE, *options, "--strategy", "all", "--json"])
    rows = doc["strategies"]
    assert len(rows) >= 6  # ddp, zero1, zero2, fsdp, fsdp (no reshard), hsdp groups
    for row in rows:
        lay = [f"strategy={row['strategy'].split()[0]}"]
        if row["reshard_after_forward"] is not None:
            lay.append(f"reshard_after_forward={str(row['reshard_after_forward']).lower()}")
        if row["group_size"] is not None:
            lay.append(f"group_size={row['group_size']}")
        sets = ["preset=dgx-h100", "arch=llama-3.1-8b", "nodes=2", *axes, *lay]
        args = ["sweep", "--kind", "step", "--json"]
        for s in sets:
            args += ["--set", s]
        (swept,) = _json(args)
        assert swept["strategy"] == row["strategy"]
        for col, value in swept.items():
            if col == "error":  # the sweep's own column: why a row was refused, "" if priced
                assert value == "", value
                continue
            assert col in row, (row["strategy"], col)
            mine = join_notes(row[col]) if col == "notes" else row[col]
            assert _same(mine, value), (row["strategy"], col, mine, value)


def test_a_ranked_row_carries_the_columns_of_the_one_strategy_step():
    """`step --strategy fsdp --json` and the fsdp row of `--strategy all` say one thing."""
    one = _json(["step", *BASE, "--strategy", "fsdp", "--json"])
    (row,) = [r for r in _json(["step", *BASE, "--strategy", "all", "--json"])["strategies"]
              if r["layout"] == "fsdp"]  # fmt: skip
    from costmodel.sweep.evaluate import STEP_COLUMNS

    for col in (*STEP_COLUMNS, "preset", "model", "recipe", "nodes", "gpus_per_node"):
        assert _same(row[col], one[col]), (col, row[col], one[col])
