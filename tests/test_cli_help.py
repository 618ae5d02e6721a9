"""Every CLI option has help text, and the examples in `--help` run when pasted."""

from __future__ import annotations

import shlex

import pytest
import typer
from typer.testing import CliRunner

from costmodel import cli


def _commands():
    root = typer.main.get_command(cli.app)
    out = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs is not None:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out.append((" ".join(path), cmd))

    walk(root, [])
    return out


COMMANDS = _commands()


def test_the_walk_reaches_the_nested_commands():
    names = {n for n, _ in COMMANDS}
    assert {"train", "validate torch", "validate nccl-tests run", "presets show"} <= names
    assert len(names) >= 18


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_option_has_help_text(name, cmd):
    missing = [
        "/".join(p.opts)
        for p in cmd.params
        if getattr(p, "param_type_name", "") == "option"
        and not p.hidden
        and not (p.help or "").strip()
    ]
    assert not missing, f"costmodel {name}: options without help: {missing}"


def _examples(help_text: str) -> list[str]:
    """The `costmodel ...` lines of a --help page (each one whole: no line continuation)."""
    return [
        line.strip() for line in help_text.splitlines() if line.strip().startswith("costmodel ")
    ]


@pytest.mark.parametrize("name", ["train", "batch", "scenario", "memory", "step"])
def test_help_examples_run_when_pasted(name):
    r = CliRunner().invoke(cli.app, [name, "--help"], terminal_width=80)
    assert r.exit_code == 0
    examples = _examples(r.stdout)
    assert examples, r.stdout
    for line in examples:
        assert not line.endswith("\\"), line  # no continuation for the shell to trip on
        args = shlex.split(line)[1:]
        if "--json" not in args:
            args.append("--json")
        got = CliRunner().invoke(cli.app, args)
        assert got.exit_code == 0, (line, got.stderr)
