"""The README's shell and Python blocks run verbatim (in a scratch folder).

A block that needs what a test machine has not got (a GPU, a cluster, a server that runs until
stopped) carries ``<!-- readme-test: skip (reason) -->`` on the line before its fence; the
list of such blocks is checked to stay short. ``costmodel`` lines run in-process through the
CLI (the same code as the script, without a new interpreter per line); Python blocks run in
document order in one namespace, as a notebook would, as ``__main__``. A ``toml`` block whose
first line is ``# NAME`` is written to ``NAME`` first (the files the commands read).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP = re.compile(r"^<!-- readme-test: skip \((?P<why>.+)\) -->$")
MAX_SKIPPED = 6


def _blocks() -> list[dict]:
    lines = README.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w+)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while lines[j] != "```":
            j += 1
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        skip = SKIP.match(prev)
        out.append(
            {
                "lang": m[1],
                "line": i + 1,
                "code": "\n".join(lines[i + 1 : j]),
                "skip": skip["why"] if skip else None,
            }
        )
        i = j + 1
    return out


BLOCKS = _blocks()


def _commands(code: str) -> list[str]:
    """The command lines of a shell block (continuations joined, comments dropped)."""
    joined = code.replace("\\\n", " ")
    return [ln for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch folder holding the README's files, where ``tests/`` resolves to the repo's."""
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    for b in BLOCKS:
        first = b["code"].splitlines()[0] if b["code"] else ""
        if b["lang"] == "toml" and first.startswith("# "):
            (tmp_path / first[2:].strip()).write_text(b["code"] + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_skip_list_stays_short_and_says_why():
    skipped = [b for b in BLOCKS if b["skip"]]
    assert 0 < len(skipped) <= MAX_SKIPPED
    assert all(len(b["skip"]) > 20 for b in skipped)
    assert {b["lang"] for b in BLOCKS} >= {"sh", "python", "toml"}


SHELL_LINES = [
    (b["line"], line)
    for b in BLOCKS
    if b["lang"] == "sh" and not b["skip"]
    for line in _commands(b["code"])
]


def test_the_shell_blocks_have_commands():
    assert len(SHELL_LINES) >= 15


@pytest.mark.parametrize(("where", "line"), SHELL_LINES, ids=[ln for _, ln in SHELL_LINES])
def test_shell_line_runs_verbatim(where, line, scratch):
    args = shlex.split(line, comments=True)
    assert args[0] == "costmodel", (
        f"README.md:{where}: {line!r} is not a costmodel command; mark the block with "
        "<!-- readme-test: skip (why) --> if it cannot run here"
    )
    r = CliRunner().invoke(cli.app, args[1:])
    assert r.exit_code == 0, (line, r.stderr, r.stdout[-2000:])


def test_python_blocks_run_verbatim_in_order(scratch, capsys):
    namespace: dict = {"__name__": "__main__"}
    ran = 0
    for b in BLOCKS:
        if b["lang"] != "python" or b["skip"]:
            continue
        code = compile(b["code"], f"README.md:{b['line']}", "exec")
        exec(code, namespace)  # noqa: S102  (the README's own examples)
        ran += 1
    assert ran >= 3
    assert "no rank count fixes plain DP" not in capsys.readouterr().err
