"""The validation harness, sixth QA pass of its own (a new user with a cluster):

- ``validate nccl-tests run --dry-run`` printed its command lines unquoted: a build folder with
  a space (``--build-dir "nccl tests/build"``) pasted as two words, so the line it printed to be
  run could not run; the lines are now quoted as a shell reads them (``shlex``);
- ``--build-dir .`` (or ``NCCL_TESTS_BUILD=.``) gave the binary as a bare ``all_reduce_perf``,
  which the shell and the runner's ``subprocess`` look up on ``$PATH``, not in the folder
  given: the run failed (or ran another build's binary); the binary's path is now absolute;
- ``validate compare --report``'s DDP table said "None" in every note cell and "NaN" for a
  step not predicted: both "-", as its error columns say a missing value;
- a DDP step's option without ``--ddp`` (``validate torch -- --ddp-params 25M``, the command's
  own help's example) was read past in silence and no DDP step timed: refused, naming it;
- a run's kept log started with its command line unquoted (``# costmodel runner: ...``): quoted
  as the torch job's log's ``# costmodel: ...`` line is.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from costmodel.validation.runner import find_binary, plan_sweep
from tests._cli import one_line_error, run


def _fake_binary(folder: Path, name: str = "all_reduce_perf") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text('#!/bin/sh\necho fake nccl-tests "$@"\n')
    path.chmod(0o755)
    return path


def _pasted_argv(line: str) -> tuple[dict[str, str], list[str]]:
    """A printed command line as a POSIX shell splits it: leading NAME=VALUE words, then argv."""
    words = shlex.split(line)
    env = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


# --- --dry-run: the printed lines run as printed -----------------------------------------------
def test_dry_run_lines_quote_a_build_folder_with_a_space(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build = tmp_path / "nccl tests" / "build"
    binary = _fake_binary(build)
    for launcher in (("--launcher", "local"), ("--launcher", "srun", "--nodes", "2")):
        result = run(
            "validate", "nccl-tests", "run", "--build-dir", "nccl tests/build", "--gpus", "2",
            "--algos", "Ring", "--dry-run", "-o", "out", *launcher,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        (line,) = result.stdout.strip().splitlines()
        env, argv = _pasted_argv(line)
        assert env == {"NCCL_ALGO": "Ring"}, line
        assert str(binary.resolve()) in {str(Path(a).resolve()) for a in argv}, line
        assert argv[-2:] == ["-g", "1" if "srun" in launcher else "2"], line


def test_dry_run_line_of_a_mpich_launch_pastes_into_a_shell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_binary(tmp_path / "my build")
    result = run(
        "validate", "nccl-tests", "run", "--build-dir", "my build", "--launcher", "mpirun",
        "--mpi", "mpich", "--nodes", "2", "--gpus", "4", "--protos", "LL128", "--dry-run",
        "-o", "out",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    env, argv = _pasted_argv(result.stdout.strip())
    assert env == {"NCCL_PROTO": "LL128"}
    assert argv[:7] == ["mpirun", "-np", "8", "-ppn", "4", "-genv", "NCCL_PROTO"]
    assert Path(argv[8]).name == "all_reduce_perf" and Path(argv[8]).is_file(), argv


# --- a build folder given as '.' -----------------------------------------------------------------
def test_a_binary_in_the_current_folder_runs_from_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_binary(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no nccl-tests on PATH
    assert find_binary("all_reduce", ".") == tmp_path / "all_reduce_perf"
    for check in (True, False):  # the run's plan and the dry run's
        (spec,) = plan_sweep(["all_reduce"], build_dir=".", gpus=2, check_binaries=check)
        done = subprocess.run(spec.argv, capture_output=True, text=True, check=True)
        assert done.stdout.startswith("fake nccl-tests -b 8"), spec.argv
    monkeypatch.delenv("NCCL_TESTS_BUILD", raising=False)
    monkeypatch.setenv("NCCL_TESTS_BUILD", ".")
    (spec,) = plan_sweep(["all_reduce"], gpus=2)
    assert Path(spec.argv[0]).is_absolute() and Path(spec.argv[0]).is_file(), spec.argv


def test_a_relative_path_entry_still_names_the_binary_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_binary(tmp_path / "bin")
    monkeypatch.delenv("NCCL_TESTS_BUILD", raising=False)
    monkeypatch.setenv("PATH", "bin" + os.pathsep + os.environ["PATH"])
    found = find_binary("all_reduce")
    assert found == tmp_path / "bin" / "all_reduce_perf"


# --- the HTML report's DDP table ---------------------------------------------------------------
def test_the_reports_ddp_table_has_no_none_or_nan_cells(gloo_run, tmp_path):
    results, cal = gloo_run
    report = tmp_path / "report.html"
    said = run("validate", "compare", str(results), "--calibration", str(cal),
               "--report", str(report))  # fmt: skip
    assert said.exit_code in (0, 1), said.output  # 1: NOT ASSESSED (CPU rows)
    page = report.read_text()
    start = page.index("<h2>DDP step: measured vs predicted</h2>")
    table = page[start : page.index("</table>", start)]
    cells = re.findall(r"<td>(.*?)</td>", table)
    assert cells and "None" not in cells and "NaN" not in cells and "nan" not in cells, cells
    assert "<th>note</th>" in table  # the column is kept, its empty cells said '-'


# --- a DDP option without --ddp ------------------------------------------------------------------
def test_a_ddp_option_without_ddp_is_refused_not_read_past(tmp_path):
    from costmodel.validation.torch_bench import parse_args

    for extra in (["--ddp-params", "25M"], ["--bucket-cap-mb", "1,25"], ["--accumulation", "2"]):
        with pytest.raises(ValueError, match=f"^{extra[0]}: sets up the DDP steps, which only "):
            parse_args(["--backend", "gloo", *extra])
        assert parse_args(["--ddp", *extra]).ddp  # with --ddp: taken
    out = str(tmp_path / "t.jsonl")
    base = ("validate", "torch", "--backend", "gloo", "-o", out, "--dry-run")
    line = one_line_error(run(*base, "--", "--ddp-params", "25M"), "--ddp-params", "add --ddp")
    assert line.startswith("costmodel: error: --ddp-params: sets up the DDP steps"), line
    said = run(*base[:-1], "--ddp", "--dry-run", "--", "--ddp-params", "25M")
    assert said.exit_code == 0, said.output
    assert {"--ddp", "--ddp-params"} <= set(shlex.split(said.stdout)), said.stdout
    # a bad value is still said as such first
    with pytest.raises(ValueError, match="^--ddp-steps: must be a whole number"):
        parse_args(["--ddp-steps", "0"])


# --- the kept log's command line ---------------------------------------------------------------
def test_a_runs_kept_log_names_its_command_as_a_shell_reads_it(tmp_path):
    from costmodel.reference import reference_path

    build = tmp_path / "nccl tests" / "build"
    build.mkdir(parents=True)
    binary = build / "all_reduce_perf"
    binary.write_text(f"#!/bin/sh\ncat {shlex.quote(str(reference_path('12a')))}\n")
    binary.chmod(0o755)
    out = tmp_path / "runs"
    said = run("validate", "nccl-tests", "run", "--build-dir", str(build), "--gpus", "8",
               "--protos", "^LL", "-o", str(out), "--no-progress")  # fmt: skip
    assert said.exit_code == 0, said.output
    (log,) = (out / "logs").iterdir()
    first, env = log.read_text().splitlines()[:2]
    argv = shlex.split(first.removeprefix("# costmodel runner: "))
    assert argv[0] == str(binary) and argv[-2:] == ["-g", "8"], first
    assert shlex.split(env.removeprefix("# costmodel runner env: ")) == ["NCCL_PROTO=^LL"], env
