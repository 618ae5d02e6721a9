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


# -- the command lines the README's skipped blocks and the docs' fenced blocks write ----------


def _parse(line: str) -> str | None:
    """Parse a ``costmodel ...`` line as the CLI would, without running the command: None when
    it parses, else the CLI's reason (an unknown option, a missing one, a value of the wrong
    type)."""
    import shlex

    import typer

    from costmodel import cli
    from costmodel.cli import _common

    args = shlex.split(line, comments=True)
    assert args[0] == "costmodel", line
    cmd, name, rest = typer.main.get_command(cli.app), "costmodel", args[1:]
    while hasattr(cmd, "commands"):
        if not rest or rest[0] not in cmd.commands:
            return f"no command {rest[:1]}"
        cmd, name, rest = cmd.commands[rest[0]], rest[0], rest[1:]
    try:
        cmd.make_context(name, list(rest))
    except typer.Exit:
        return None
    except Exception as exc:  # the CLI's own usage errors (typer's click)
        fmt = getattr(exc, "format_message", None)
        return fmt() if fmt else str(exc)
    finally:
        _common._PENDING_WARNINGS.clear()
        _common._COMMAND.clear()
    return None


def _fenced_costmodel_lines() -> list[tuple[str, str]]:
    """Every ``costmodel`` line of a fenced block in docs/*.md, and of the README blocks the
    README test skips (continuations joined, comments dropped)."""
    from tests.test_readme import BLOCKS, _commands

    out = []
    for b in BLOCKS:
        if b["skip"] and b["lang"] == "sh":
            out += [(f"README.md:{b['line']}", ln) for ln in _commands(b["code"])]
    for md in sorted((ROOT / "docs").glob("*.md")):
        inside, block, start = False, [], 0
        for i, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                if inside:
                    where = f"docs/{md.name}:{start}"
                    out += [(where, ln) for ln in _commands("\n".join(block))]
                inside, block, start = not inside, [], i
            elif inside:
                block.append(line)
    return [(w, ln.strip()) for w, ln in out if ln.strip().startswith("costmodel ")]


FENCED = _fenced_costmodel_lines()


def test_the_fenced_lines_are_found():
    assert len(FENCED) >= 10
    assert any(w.startswith("README.md") for w, _ in FENCED)
    # the parse check itself: an unknown option, a bad value and a missing one are caught
    assert "--nodez" in (_parse("costmodel step --nodez 3") or "")
    assert "--nodes" in (_parse("costmodel step --nodes abc") or "")
    assert _parse("costmodel calibrate runs.jsonl --cluster dgx-h100") is not None
    assert _parse("costmodel step --arch llama-3.1-8b --nodes 2") is None


@pytest.mark.parametrize(("where", "line"), FENCED, ids=[f"{w} {ln}" for w, ln in FENCED])
def test_every_fenced_command_line_parses(where, line):
    """A command the docs write in a block, or one the README test cannot run here (a GPU, a
    cluster, a Dask scheduler), still has every option it names, with a value of its type."""
    assert _parse(line) is None, f"{where}: {line}: {_parse(line)}"


def test_the_validation_blocks_torch_and_compute_job_lines_parse():
    """The README's validation block launches the torch job with torchrun and names the
    compute job's module; both parsers take what it and docs/CONTRACTS.md write."""
    from costmodel.validation import compute_bench, torch_bench

    torch_bench.build_parser().parse_args(
        "-o results.jsonl --backend gloo --ops all_reduce --min-bytes 4KiB --max-bytes 64MiB "
        "--iters 3 --ddp --ddp-params 4M --bucket-cap-mb 1,25 --accumulation 4 "
        "--ddp-steps 7".split()
    )
    compute_bench.build_parser().parse_args(
        "--arch llama-3.1-8b --layers 2 --seq 4096 --micro-batch 1 --steps 10 --warmup 3 "
        "--dtype bf16 --cluster auto --optimizer adamw -o compute.jsonl".split()
    )


def test_the_lines_of_the_skipped_validation_block_that_need_no_gpu_run(tmp_path, monkeypatch):
    """The validation block is skipped by the README test (nccl-tests, GPUs, torchrun), but two
    of its lines need none of that: the torchrun line ``--dry-run`` prints, and the step priced
    from a measured compute time. They run here verbatim."""
    import shlex

    from typer.testing import CliRunner

    from costmodel import cli

    monkeypatch.chdir(tmp_path)
    lines = [
        ln
        for w, ln in FENCED
        if w.startswith("README.md") and ("--dry-run" in ln or ln.startswith("costmodel step "))
    ]
    assert len(lines) == 2, lines
    for line in lines:
        r = CliRunner().invoke(cli.app, shlex.split(line, comments=True)[1:])
        assert r.exit_code == 0, (line, r.stderr, r.stdout[-2000:])
        assert "Traceback" not in r.stdout
    dry = CliRunner().invoke(cli.app, shlex.split(lines[0], comments=True)[1:])
    assert "costmodel.validation.torch_bench" in dry.stdout
    assert not (tmp_path / "results.jsonl").exists()  # a dry run writes nothing


def test_make_bench_runs_every_benchmark_the_speed_table_names():
    """The README's Speed table says its figures come from one ``make bench`` run, but
    ``make bench`` left ``bench_import.py`` out; the memory estimators have their own target
    (they install the ``bench`` extra), as the README's command table says."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    speed = readme.split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"benchmarks/(bench_\w+\.py)", speed))
    assert {"bench_import.py", "bench_formulas.py"} <= named
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = {
        t: re.findall(r"benchmarks/(bench_\w+\.py)", body)
        for t, body in re.findall(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)+)", make, flags=re.M)
    }
    assert named - set(recipe["bench"]) == {"bench_memory_estimators.py"}
    assert recipe["bench-estimators"] == ["bench_memory_estimators.py"]
    assert "`make bench-estimators`" in readme


#: each benchmark's count options and the least each takes (0 repeats printed "NOT met" or
#: stopped with a traceback: an empty median, an unbound frame, a log of no rows)
COUNTS = [
    ("bench_formulas.py", "--rows", 1),
    ("bench_formulas.py", "--repeat", 1),
    ("bench_parse.py", "--rows", 1),
    ("bench_parse.py", "--repeat", 1),
    ("bench_import.py", "--repeat", 1),
    ("bench_strategy.py", "--repeat", 1),
    ("bench_strategy.py", "--pairs", 1),
    ("bench_distributed.py", "--rows", 1),
    ("bench_distributed.py", "--workers", 1),
    ("bench_distributed.py", "--partition-rows", 0),
    ("bench_memory_estimators.py", "--configs", 1),
    ("bench_memory_estimators.py", "--loop-configs", 0),
    ("bench_memory_estimators.py", "--repeat", 1),
    ("bench_sweep.py", "--rows", 1),
    ("bench_sweep.py", "--stream-rows", 1),
    ("bench_sweep.py", "--chunk-rows", 1),
    ("bench_sweep.py", "--pairs", 1),
    ("bench_input_kinds.py", "--repeats", 1),
    ("bench_app.py", "--repeats", 1),
]


@pytest.mark.parametrize(("script", "flag", "least"), COUNTS)
def test_a_benchmarks_count_below_its_least_is_one_line(script, flag, least, monkeypatch, capsys):
    """``bench_parse.py --repeat 0`` stopped with an UnboundLocalError, ``bench_strategy.py
    --repeat 0`` with "no median for empty data", ``--rows 0`` with a parse error of an empty
    log: every count is checked as the options are read, before anything runs."""
    import runpy

    monkeypatch.setattr(sys, "argv", [script, flag, str(least - 1)])
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(ROOT / "benchmarks" / script), run_name="__main__")
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"{script}: error: {flag} must be at least {least} (got {least - 1})"


def _benchmark_options() -> dict[str, set[str]]:
    """Each benchmark's ``--options``, read from its ``add_argument`` calls."""
    import ast

    out = {}
    for path in (ROOT / "benchmarks").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[path.name] = {"--help"} | {
            a.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
            for a in node.args
            if isinstance(a, ast.Constant) and str(a.value).startswith("--")
        }
    return out


def test_every_benchmark_option_written_is_one_of_its_options():
    """A benchmark line the README, the docs, the Makefile or a benchmark's own usage writes
    (``bench_app.py --no-rerun --cached-only ...``) names only options that script has."""
    import re

    options = _benchmark_options()
    sources = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    sources += sorted((ROOT / "benchmarks").glob("*.py"))
    seen, unknown = set(), []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        spans = re.findall(r"`([^`]*)`", text.replace("\n", " ")) + text.splitlines()
        for span in spans:
            for m in re.finditer(r"(bench_\w+\.py)((?:\s+(?:--[\w-]+|[^\s-]\S*))*)", span):
                for flag in re.findall(r"(?<!\S)--[\w-]+", m[2]):
                    seen.add((m[1], flag))
                    if flag not in options.get(m[1], {flag}):
                        unknown.append(f"{path.name}: {m[1]} {flag}")
    assert len(seen) >= 15, sorted(seen)
    assert not unknown, unknown


def test_the_skipped_python_blocks_compile_and_call_sweep_with_its_parameters():
    """The README's Dask and Slurm examples cannot run here (a scheduler, a Slurm cluster);
    each still compiles, and every keyword it gives ``cm.sweep`` is one of its parameters or an
    axis of the collective grid."""
    import ast
    import inspect

    import costmodel as cm
    from costmodel.sweep.grid import AXES
    from tests.test_readme import BLOCKS

    # its own parameters, and the collective grid's axes (``**axes``)
    params = set(inspect.signature(cm.sweep).parameters) - {"axes"} | set(AXES["collective"])
    skipped = [b for b in BLOCKS if b["skip"] and b["lang"] == "python"]
    assert len(skipped) >= 2
    calls = 0
    for b in skipped:
        tree = ast.parse(b["code"], f"README.md:{b['line']}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "cm.sweep":
                calls += 1
                given = {kw.arg for kw in node.keywords}
                assert given <= params, (b["line"], given - params)
    assert calls >= 3


def _inline_commands() -> list[tuple[str, str]]:
    """Every ```costmodel ...``` span of README.md and docs/*.md written as a whole command:
    no ``...``, no placeholder (``NAME``, ``[--nodes N]``, ``a|b``), and at least one value
    given (``costmodel step --ranks --bandwidth`` names two options)."""
    import re

    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8").replace("\n", " ")
        for span in re.findall(r"`(costmodel [^`]+)`", text):
            words = span.split()
            placeholder = any(re.fullmatch(r"[A-Z][A-Z_]*", w) for w in words)
            if "..." in span or "[" in span or "|" in span or placeholder:
                continue
            first = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
            if all(w.startswith("--") for w in words[first:]):
                continue  # options named, no value given: a mention, not a command
            out.append((path.name, " ".join(words)))
    return out


INLINE = _inline_commands()


def test_every_whole_inline_command_parses():
    """A command the prose writes whole (``costmodel step --arch llama-3.1-8b --nodes 16
    --compute-time 407ms``) names options its command has, each with a value of its type; a
    span naming a command and one option (``costmodel step --cluster``) may leave out the
    value and what the command also requires."""
    assert len(INLINE) >= 12
    wrong = []
    for where, line in INLINE:
        why = _parse(line)
        if why is None or why.startswith(("Missing option", "Missing argument")):
            continue
        if why.endswith("requires an argument."):
            continue
        wrong.append(f"{where}: {line}: {why}")
    assert not wrong, "\n".join(wrong)
