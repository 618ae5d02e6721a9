"""The docs review's mechanical checks, fourth pass: statements of README.md and docs/*.md the
audits (``tests/test_docs_audit.py``, ``tests/test_docs_current.py``, ``tests/test_docs_qa3.py``)
did not read yet, each found stale once by reading the docs against the code.

- **the values a signature lists for a parameter** (``model="nccl"|"textbook"``) are the values
  the code accepts there (:data:`ALTERNATIVES`): ``compare.cluster_predictor`` takes every
  model ``validate compare --model`` does (it listed two of five), ``sweep``'s ``kind`` takes
  ``"step"`` (left out), ``activation_bytes``' ``recompute`` takes ``"selective-op"`` and
  ``"selective-layer"`` (left out); the signature check skips a default written with ``|``;
- **the kept logs' first lines**, as the README quotes them, are the lines the harness writes:
  the torch job's ``# costmodel: ...`` and an nccl-tests run's ``# costmodel runner: ...``
  (the README gave the first for both);
- **the size quoted for the largest bundled nccl-tests log** (the input limits' scale) is
  within a quarter of the largest there (it said ~100 kB; the largest is 53 kB).

Each reader is checked on a planted stale sentence (the last test).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.test_docs_audit import DOCS, ROOT

README = ROOT / "README.md"


# --- the values a signature lists for a parameter ------------------------------------------------
def _accepted() -> dict[tuple[str, str], tuple[str, ...]]:
    """``(function, parameter)`` -> the values the code accepts there, read from the constant
    each function checks against (a new ``f(p="a"|"b")`` in the docs needs its row here)."""
    from costmodel import architecture, batch, models, sweep, topology
    from costmodel.validation import runner

    every_model = (*models.MODELS, *models.REFERENCE_MODELS)
    return {
        ("hierarchical_allreduce_time", "mode"): topology.MODES,
        ("predict_collective", "model"): every_model,
        ("compare.cluster_predictor", "model"): every_model,  # passed to predict_collective
        ("scale_learning_rate", "rule"): tuple(batch.LR_RULES),
        ("scale_learning_rate", "unit"): tuple(batch.LR_RULE_DEFAULT),
        ("activation_bytes", "recompute"): architecture.RECOMPUTE_MODES,
        ("sweep", "kind"): sweep.KINDS,
        ("sweep", "engine"): sweep.ENGINES,
        ("runner.plan_sweep", "launcher"): runner.LAUNCHERS,
        # any time column of the rows; these two are the statistics the harness writes (its
        # docstring's): nccl-tests' mean and torch_bench's fastest iteration
        ("calibrate", "time_column"): ("time_s", "time_min_s"),
    }


_CALL = re.compile(r"`([\w.]+)\(([^`]*)\)")
_CHOICES = re.compile(r'(\w+)=((?:"[^"]*"\|)+"[^"]*")')


def _listed(doc: str, text: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """``(where, function, parameter, values)`` of every ``f(..., p="a"|"b", ...)`` written."""
    found = []
    for call in _CALL.finditer(text):  # a code span may run over a line break
        line = text.count("\n", 0, call.start()) + 1
        for choice in _CHOICES.finditer(" ".join(call.group(2).split())):
            values = tuple(re.findall(r'"([^"]*)"', choice.group(2)))
            found.append((f"{doc}:{line}", call.group(1), choice.group(1), values))
    return found


def _alternatives_problems(found, accepted) -> list[str]:
    bad = []
    for where, function, parameter, values in found:
        key = (function, parameter)
        if key not in accepted:
            bad.append(f"{where}: {function}({parameter}=...): not in ALTERNATIVES; add its row")
        elif set(values) != set(accepted[key]):
            bad.append(
                f"{where}: {function}({parameter}=...) lists {'|'.join(values)}; the code "
                f"takes {'|'.join(accepted[key])}"
            )
    return bad


def _all_listed() -> list[tuple[str, str, str, tuple[str, ...]]]:
    return [
        item
        for path in DOCS
        for item in _listed(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    ]


def test_every_list_of_values_written_in_a_signature_is_what_the_code_takes():
    found = _all_listed()
    assert len(found) >= 8, found  # the reader reads the lists written
    assert _alternatives_problems(found, _accepted()) == []


# --- the kept logs' first lines --------------------------------------------------------------------
def _first_lines(tmp_path: Path) -> dict[str, str]:
    """The first line of each kept log, as the harness writes it: the torch job's
    (``runner.run_logged``) and an nccl-tests run's with an NCCL variable set (``run_sweep``,
    a stand-in binary printing bundled run 13a)."""
    from costmodel.reference import reference_path
    from costmodel.validation import runner

    torch_log = tmp_path / "logs" / "torch.log"
    assert runner.run_logged([sys.executable, "-c", "pass"], torch_log) == 0
    binary = tmp_path / "all_reduce_perf"
    binary.write_text(f"#!/bin/sh\ncat '{reference_path('13a')}'\n")
    binary.chmod(0o755)
    spec = runner.RunSpec(
        key="all_reduce", op="all_reduce", algo="Ring", proto=None, argv=(str(binary),),
        env={"NCCL_ALGO": "Ring"},
    )  # fmt: skip
    runner.run_sweep([spec], tmp_path / "out", progress=False)
    (sweep_log,) = (tmp_path / "out" / "logs").glob("all_reduce.*.log")
    lines = sweep_log.read_text().splitlines()
    return {"torch": torch_log.read_text().splitlines()[0], "runner": lines[0], "env": lines[1]}


def _quoted_prefix(line: str) -> str:
    """``# costmodel runner: /path/x -b 8`` -> ``# costmodel runner:`` (the words before the
    command, as the README quotes them with a placeholder)."""
    return line.split(":", 1)[0] + ":"


def test_the_readme_quotes_each_kept_logs_first_line(tmp_path):
    first = _first_lines(tmp_path)
    text = " ".join(README.read_text(encoding="utf-8").split())
    torch, sweep, env = (_quoted_prefix(first[k]) for k in ("torch", "runner", "env"))
    assert (torch, sweep, env) == (
        "# costmodel:",
        "# costmodel runner:",
        "# costmodel runner env:",
    ), first
    assert first["env"] == "# costmodel runner env: NCCL_ALGO=Ring"
    assert f"`{torch} <command line>` (the torch job's)" in text
    assert f"`{sweep} <command line>` and one `{env} NAME=VALUE`" in text
    assert "it starts with a `# costmodel: <command line>` line" not in text


# --- the largest bundled log's size ----------------------------------------------------------------
_LARGEST = re.compile(r"the largest reference log is ~(\d+) kB")


def _size_problems(text: str, largest_bytes: int) -> list[str]:
    said = [int(m.group(1)) for m in _LARGEST.finditer(text)]
    return [
        f"the largest reference log is ~{kb} kB; it is {largest_bytes / 1000:.0f} kB"
        for kb in said
        if not 0.75 <= kb * 1000 / largest_bytes <= 1.25
    ] + ([] if said else ["no size quoted for the largest reference log"])


def test_the_size_quoted_for_the_largest_bundled_log_is_its_own():
    logs = ROOT / "costmodel" / "data" / "reference" / "nccl-tests"
    largest = max(p.stat().st_size for p in logs.glob("*.txt"))
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert _size_problems(text, largest) == []
    source = (ROOT / "costmodel" / "validation" / "nccl_tests" / "_common.py").read_text()
    assert _size_problems(" ".join(source.split()), largest) == []


# --- the readers catch a planted stale sentence ----------------------------------------------------
def test_the_readers_catch_planted_stale_sentences():
    accepted = _accepted()
    planted = _listed("x.md", '`compare.cluster_predictor(cluster, model="nccl"|"textbook")`')
    (problem,) = _alternatives_problems(planted, accepted)
    assert "lists nccl|textbook; the code takes" in problem
    unknown = _listed("x.md", '`plan(x, mode="a"|"b")`')
    assert "not in ALTERNATIVES" in _alternatives_problems(unknown, accepted)[0]
    assert _size_problems("the largest reference log is ~100 kB", 53_285)
    assert not _size_problems("the largest reference log is ~53 kB", 53_285)
