"""A fresh-eyes pass as a demanding new user: each defect it found, asked the way a user asked it.

Each test fails on the code before its fix: a "does not fit" header about another layout than the
step shown, an option silently ignored, a README figure that the code no longer prints.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costmodel import cli


def run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def one_line_error(result, *fragments: str) -> str:
    """Exit 2, nothing on stdout, one line on stderr naming ``fragments``; returns the line."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("costmodel: error: ")
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


STEP_70B = ("step", "--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "8")


@pytest.mark.parametrize(
    ("extra", "label"),
    [(("--strategy", "hsdp", "--group-size", "16"), "hsdp g=16"),
     (("--strategy", "fsdp", "--no-reshard"), "fsdp (no reshard)")],
)  # fmt: skip
def test_step_says_what_makes_the_step_shown_fit_not_another_layout(extra, label):
    """`step --strategy hsdp --group-size 16` said "DOES NOT FIT: 260 GB (hsdp g=8)" above a
    189 GB hsdp g=16 step: the suggestions were built without the group (and without
    --no-reshard), so their base was another layout than the step printed below them."""
    r = run(*STEP_70B, *extra, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert not d["fits"]
    assert d["fit_suggestions"]["memory_bytes"] == pytest.approx(d["memory_bytes"], rel=1e-12)
    text = run(*STEP_70B, *extra).stdout
    header = text.splitlines()[0]
    assert header.startswith("DOES NOT FIT") and f"({label})" in header, header
