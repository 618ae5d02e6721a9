"""Seventh QA pass: what a planner types on the CLI and reads on the pages. Each test failed
before its fix.
"""

from __future__ import annotations

import pytest

from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-3.1-8b")


# --- a Scenario refusal on train/scenario names the option typed, not the API field ------------
@pytest.mark.parametrize("command", ["train", "scenario"])
@pytest.mark.parametrize(
    ("options", "option", "field", "why"),
    [
        (("--nodes", "16", "--strategy", "hsdp", "--group-size", "3"), "--group-size",
         "group_size", "does not divide the 128 ranks"),
        (("--power-limit-w", "5"), "--power-limit-w", "power_limit_w", "must be a power in"),
        (("--strategy", "ddp", "--reshard"), "--reshard", "reshard_after_forward",
         "only fsdp and hsdp reshard"),
        (("--cluster", "dgx-h1000"), "--cluster", "name", "unknown cluster preset"),
        (("--recipe", "adam"), "--recipe", "recipe", "unknown recipe 'adam'"),
        (("--params", "5B"), "--params", "params", "differs from llama-3.1-8b's"),
    ],
)  # fmt: skip
def test_a_scenario_refusal_names_the_option(command, options, option, field, why):
    """``train --strategy hsdp --group-size 3`` answered "Scenario: group_size: 3 does not
    divide ...": the API's field, not the option the user typed."""
    tokens = ("--tokens", "1T") if command == "train" else ()
    line = one_line_error(run(command, *LLAMA, *options, *tokens), f"error: {option}: ", why)
    assert "Scenario" not in line and f"{field}:" not in line.replace(f"{option}:", "")
