"""What a new user runs from the README besides the app and the suite: the benchmarks of
``make bench`` and docs/speed.md at their smallest sizes, and the command lines the docs write.

Each check is parse-level or a few hundred rows: the benchmarks' own full runs stay in
``make bench``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests._paths import ROOT


def _bench(name: str) -> ModuleType:
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_qa6_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", ["textbook", "nccl", "nccl-table"])
def test_bench_sweep_models_grid_has_whole_byte_sizes(model):
    """``bench_sweep.py`` (and ``--models-only``) stopped at its warm-up: its log-spaced sizes
    were fractions of a byte, which the sweep's ``size`` axis refuses."""
    bench = _bench("bench_sweep")
    grid = bench.model_grid(1000, model)
    assert grid is not None
    sizes = bench.whole_byte_sizes(40)
    assert sizes.size == 40 and len(set(sizes.tolist())) == 40
    assert sizes[0] == 8 and sizes[-1] == 16_000_000_000


def test_bench_formulas_takes_fewer_rows_than_its_loop_sample(capsys):
    """``bench_formulas.py --rows 100`` failed in numpy (a sample of 30,000 rows out of 100):
    the loops now time at most the rows there are."""
    bench = _bench("bench_formulas")
    rows = bench.main(rows=100, repeat=1)
    assert len(rows) == len(bench.collectives.ALGORITHMS["all_reduce"])
    assert "loops over 100 / 100 sampled rows" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [["--rows", "0"], ["--repeat", "0"]])
def test_bench_formulas_refuses_no_rows_or_no_repeat_in_one_line(bad):
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_formulas.py"), *bad],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert r.returncode == 2
    assert f"error: {bad[0]} must be at least 1" in r.stderr
    assert "Traceback" not in r.stderr


def test_bench_memory_estimators_without_its_extra_says_so_in_one_line():
    """Without DeepSpeed and llm-analysis (the ``bench`` extra, which ``make bench-estimators``
    installs) the benchmark stopped with a ModuleNotFoundError traceback; it names the missing
    packages and how to get them. The references are hidden from the child either way, so the
    check runs the same with or without the extra."""
    hide = (
        "import importlib.util as u, runpy, sys\n"
        "real = u.find_spec\n"
        "u.find_spec = lambda name, *a: None if name in ('deepspeed', 'llm_analysis') "
        "else real(name, *a)\n"
        "sys.argv = [sys.argv[1], '--configs', '10']\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    script = ROOT / "benchmarks" / "bench_memory_estimators.py"
    r = subprocess.run(
        [sys.executable, "-c", hide, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last == (
        "bench_memory_estimators.py: error: needs deepspeed and llm-analysis (the bench extra): "
        "make bench-estimators, or pip install -e '.[bench]'"
    )
    assert "Traceback" not in r.stderr


def _descriptions() -> dict[str, str]:
    """Each benchmark's ``--help`` description, as its ``ArgumentParser(description=...)``
    makes it from the module docstring (read from the source: nothing is imported)."""
    import ast

    out = {}
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree, clean=False)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "ArgumentParser":
                for kw in node.keywords:
                    if kw.arg == "description":
                        expr = ast.Expression(kw.value)
                        code = compile(expr, str(path), "eval")
                        out[path.name] = eval(code, {"__doc__": doc})  # noqa: S307
    return out


def test_every_benchmarks_help_says_a_whole_sentence():
    """``bench_app.py --help`` described itself as "... (AppTest), the work before" and
    ``bench_input_kinds.py --help`` as "... the bare page of benchmarks/bench_app.py with": the
    first line of a docstring whose sentence runs on. The first paragraph is whole."""
    found = _descriptions()
    assert len(found) >= 10, sorted(found)
    cut = {name: text for name, text in found.items() if not text.rstrip().endswith((".", ")"))}
    assert not cut, cut
