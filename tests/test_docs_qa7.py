"""A new user's pass over the README and the docs: each claim here was found stale by pasting
the README's commands and reading what they print, and is now recomputed from the code."""

from __future__ import annotations

import json
import re

import pytest

from tests._cli import run
from tests._paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


# -- the size of a large CSV sweep ------------------------------------------------------------


def _csv_gb_said(text: str) -> list[float]:
    """Every ``a 3e8-row CSV is about N GB`` the text says, as N."""
    return [float(n) for n in re.findall(r"3e8-row CSV is about (\d+(?:\.\d+)?) GB", _flat(text))]


def test_the_size_said_of_a_3e8_row_csv_is_what_the_writer_writes_now(tmp_path):
    """README ("Sweeps") and the disk-room check's docstring said a 3e8-row CSV is about 50 GB;
    the collective sweep's rows have grown columns since (band, extrapolation and memory notes,
    error): the README's own example grid writes about 230 B a row, 69 GB for 3e8 rows."""
    said = _csv_gb_said((ROOT / "README.md").read_text(encoding="utf-8"))
    said += _csv_gb_said((ROOT / "costmodel" / "sweep" / "output.py").read_text(encoding="utf-8"))
    assert len(said) == 2, said
    out = tmp_path / "grid.csv"
    r = run("sweep", "--set", "preset=all", "--set", "nodes=1..64x2", "--set", "size=8B..16GB x2",
            "-o", str(out))  # fmt: skip
    assert r.exit_code == 0, r.stderr
    rows = sum(1 for _ in out.open(encoding="utf-8")) - 1
    assert rows > 1000
    gb = out.stat().st_size / rows * 3e8 / 1e9
    for n in said:
        assert n == pytest.approx(gb, rel=0.15), (n, gb)


# -- one name per number: perfect overlap is the lesson's max(compute, comm) ------------------

_C0_PERFECT = re.compile(
    r"(?:c = 0|``c = 0``|DEFAULT_COMM_CONTENTION`? = 0)[^.;)]{0,20}perfect overlap"
    r"|perfect overlap \(``?c = 0"
)


def _c0_called_perfect(text: str) -> list[str]:
    return [m.group(0) for m in _C0_PERFECT.finditer(_flat(text))]


def test_the_reader_of_c0_called_perfect_overlap():
    assert _c0_called_perfect("defaults to `cm.DEFAULT_COMM_CONTENTION` (c = 0, perfect\noverlap)")
    assert _c0_called_perfect("where perfect overlap (``c = 0``) would hide")
    assert not _c0_called_perfect("(`cm.DEFAULT_COMM_CONTENTION` = 0, no contention)")
    assert not _c0_called_perfect("step 0.55 s with perfect overlap, at least 150 ms exposed")


def test_no_doc_calls_zero_contention_perfect_overlap():
    """The words "perfect overlap" name the lesson's max(compute, comm) alone (551 ms for practice 1b),
    not the timeline at c = 0 (685 ms: gradients go out only while backward runs). The README's
    bucket_cap advisor paragraph and ddp.py's docstring still called c = 0 perfect overlap."""
    files = [*DOCS, *sorted((ROOT / "costmodel").rglob("*.py"))]
    wrong = {
        str(f.relative_to(ROOT)): hits
        for f in files
        if (hits := _c0_called_perfect(f.read_text(encoding="utf-8")))
    }
    assert not wrong, wrong


# -- step --json gives the global batch train --json gives -----------------------------------


def test_the_readme_says_step_json_names_the_global_batch():
    text = _flat((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "`train` and `step` print the global batch in tokens" in text
    assert "`--json`: `global_tokens`, `global_batch`, `micro_batch`, `accumulation`" in text


def test_step_json_gives_the_global_batch_in_sequences_and_tokens_as_train_does():
    """The README: "`train` and `step` print the global batch in tokens (...; `--json`:
    `global_tokens`, `global_batch`, `micro_batch`, `accumulation`)". `step --json` had the
    last two and `tokens_per_step` only, so a script reading one command's JSON found no
    `global_batch` in the other's."""
    args = ["--arch", "llama-2-7b", "--nodes", "64", "--zero", "1", "--global-tokens", "4Mi",
            "--seq", "4096"]  # fmt: skip
    step = run("step", *args, "--json")
    train = run("train", *args, "--tokens", "2T", "--json")
    assert step.exit_code == 0 and train.exit_code == 0, (step.stderr, train.stderr)
    s, t = json.loads(step.stdout), json.loads(train.stdout)
    keys = ("global_tokens", "global_batch", "micro_batch", "accumulation")
    assert {k: s[k] for k in keys} == {k: t[k] for k in keys}
    assert s["global_batch"] == 1024 and s["global_tokens"] == 4 * 2**20
    assert s["global_tokens"] == s["tokens_per_step"]
    text = run("step", *args).stdout
    assert "4.19 M tokens per step = 1,024 sequences x 4,096 tokens" in text
