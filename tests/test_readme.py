"""The README's shell and Python blocks run verbatim (in a scratch folder).

A block that needs what a test machine has not got (a GPU, a cluster, a server that runs until
stopped) carries ``<!-- readme-test: skip (reason) -->`` on the line before its fence; the
list of such blocks is checked to stay short. ``costmodel`` lines run in-process through the
CLI (the same code as the script, without a new interpreter per line); Python blocks run in
document order in one namespace, as a notebook would, as ``__main__``. A ``toml`` block whose
first line is ``# NAME`` is written to ``NAME`` first (the files the commands read).
"""

from __future__ import annotations

import ast
import math
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


def _fences(lines: list[str]) -> list[int]:
    """Line indexes of every fence that opens a block (```, with or without a language)."""
    opens, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            if not inside:
                opens.append(i)
            inside = not inside
    return opens


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


def test_every_block_names_its_language():
    """A fence with no language (```) was skipped by every test here, so the four `step`,
    `scenario` and `train` commands of the strategies section ran nowhere; each block says
    what it is, and ```text is for output that is not run."""
    lines = README.read_text(encoding="utf-8").splitlines()
    bare = [i + 1 for i in _fences(lines) if not re.match(r"^```\w+\s*$", lines[i])]
    assert not bare, f"README.md lines {bare}: a fence without a language is never run"
    assert len(_fences(lines)) == len(BLOCKS)


def _claim(comment: str) -> object:
    """The Python literal a ``# comment`` starts with (``0.551 s: ...`` -> 0.551, ``8192``,
    ``0.551, 'comms', 0.726``), else None. The longest prefix ending at a space, ``:`` or
    ``;`` that parses is taken, so ``2x8 H100`` is no claim."""
    cuts = [m.start() for m in re.finditer(r"[ :;]", comment)] + [len(comment)]
    for cut in sorted(set(cuts), reverse=True):
        text = comment[:cut].strip()
        if not text:
            continue
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _agrees(claim: object, value: object, text: str) -> bool:
    """``value`` shown as the README shows ``claim``: a number to its last written digit
    (``0.551`` holds 0.5505-0.5515, ``875e6`` 874.5e6-875.5e6), a string equal or, ending in
    ``...``, a prefix, a tuple element by element."""
    if isinstance(claim, tuple):
        value = tuple(value)  # type: ignore[arg-type]
        return len(claim) == len(value) and all(
            _agrees(c, v, repr(c)) for c, v in zip(claim, value, strict=True)
        )
    if isinstance(claim, str):
        return value.startswith(claim[:-3]) if claim.endswith("...") else value == claim  # type: ignore[union-attr]
    if isinstance(claim, bool) or not isinstance(claim, int | float):
        return claim == value
    m = re.match(r"^-?(\d*)(?:\.(\d+))?(?:[eE]([-+]?\d+))?", text.strip())
    decimals = len(m[2] or "") if m else 0
    exponent = int(m[3] or 0) if m else 0
    half = 0.5 * 10.0 ** (exponent - decimals)
    return math.isclose(float(value), float(claim), abs_tol=half * (1 + 1e-9))  # type: ignore[arg-type]


def test_python_comments_state_what_the_line_returns(scratch):
    """``cm.allreduce_time(14e9, 64, 50e9)  # 0.551 s`` promises a number: each expression line
    whose comment starts with a literal of the value's shape must give it to the digits
    written, so a README that drifts from the code fails here, not in a reader's notebook."""
    namespace: dict = {"__name__": "__main__"}
    checked, wrong = 0, []
    for b in BLOCKS:
        if b["lang"] != "python" or b["skip"]:
            continue
        tree = ast.parse(b["code"])
        lines = b["code"].splitlines()
        for node in tree.body:
            last = lines[node.end_lineno - 1]
            comment = last.split("  # ", 1)[1] if "  # " in last else ""
            if not isinstance(node, ast.Expr) or not comment:
                exec(compile(ast.Module([node], []), "README.md", "exec"), namespace)  # noqa: S102
                continue
            value = eval(compile(ast.Expression(node.value), "README.md", "eval"), namespace)  # noqa: S307
            claim = _claim(comment)
            if claim is None:
                continue
            shaped = isinstance(claim, tuple) == isinstance(value, tuple) and (
                not isinstance(claim, tuple) or len(claim) == len(value)
            )
            if not shaped:
                continue
            checked += 1
            if not _agrees(claim, value, comment):
                wrong.append(f"README.md:{b['line'] + node.end_lineno}: {comment!r} but {value!r}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 12, checked
