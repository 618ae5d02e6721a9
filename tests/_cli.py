"""Shared helpers for the CLI tests: run a command in-process and read a one-line refusal."""

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
