"""Eighth QA pass: a new user on the CLI and the Python API. Each test failed before its fix."""

from __future__ import annotations

import json

import pytest

from costmodel._limits import LIMITS
from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-2-7b")


# --- one node limit: scenario and train answer where step answers --------------------------------
@pytest.mark.parametrize("command", ["scenario", "train"])
def test_scenario_and_train_take_the_node_count_step_takes(command):
    """``step --nodes 200000`` answered while ``scenario`` and ``train`` refused it with
    "--nodes: Input should be less than or equal to 100000": the Scenario model kept a bound of
    its own, ten times below the one limit every command names (1..1,000,000)."""
    assert LIMITS["nodes"].hi == 1_000_000
    tokens = ("--tokens", "1T") if command == "train" else ()
    args = (*LLAMA, "--cluster", "dgx-h100", "--nodes", "200000", "--zero", "3", *tokens)
    res = run(command, *args, "--json")
    assert res.exit_code == 0, res.stderr
    step = json.loads(run("step", *LLAMA, "--cluster", "dgx-h100", "--nodes", "200000",
                          "--strategy", "fsdp", "--json").stdout)  # fmt: skip
    doc = json.loads(res.stdout)
    got = doc["step_time_s"]
    assert got == pytest.approx(step["step_time_s"], rel=1e-9)


def test_a_scenario_change_past_the_node_limit_names_the_limit():
    line = one_line_error(
        run("scenario", *LLAMA, "--nodes", "8", "--vs", "nodes=2000000"), "nodes", "1,000,000"
    )
    assert "100,000]" not in line
