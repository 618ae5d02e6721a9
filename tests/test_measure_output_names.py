"""The harness's output options say a folder and a name without an extension as what they are
(`calibrate -o`, `validate compare --report`, `validate torch -o`), as `sweep -o` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel.cli import app

LOG = "costmodel/data/reference/nccl-tests/13d_waynehacking8_1x4xH100-slice_algo-proto-pinned_allreduce.txt"


def _refusal(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize(
    ("command", "option", "ending"),
    [
        (["calibrate", LOG, "-o"], "--output", ".toml"),
        (["validate", "compare", LOG, "--report"], "--report", ".html or .htm"),
        (["validate", "torch", "--dry-run", "-o"], "--output", ".jsonl"),
    ],
)
def test_a_folder_and_a_bare_name_are_said_as_such(tmp_path: Path, command, option, ending):
    folder = tmp_path / ("out" + ending.split(" ")[0])  # a folder named like the file wanted
    folder.mkdir()
    line = _refusal([*command, str(folder)])
    assert f"{option}: {str(folder)!r} is a folder; give a file name ending in {ending}" in line
    bare = tmp_path / "out"
    line = _refusal([*command, str(bare)])
    assert f"{option}: {str(bare)!r} has no extension; give a file name ending in {ending}" in line
    assert not bare.exists()  # nothing written on a refusal
    other = tmp_path / "out.csv"
    line = _refusal([*command, str(other)])
    assert f"{option}: {str(other)!r} must end in {ending}" in line
