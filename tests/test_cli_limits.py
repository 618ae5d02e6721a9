"""One set of limits, one message, for every CLI command (each command asked for each limit).

Every command option named in ``costmodel._limits.LIMITS`` is found by walking the command
tree, so a new command or option gets the same check; each is given a value just below and just
above its range and must answer exit 2 with the one line ``--OPTION: must be RULE, got VALUE``.
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any

import pytest
import typer

from costmodel import cli
from costmodel._limits import LIMITS, LINK_RANKS, Limit

# a minimal valid command line per command; the limited option is appended to it
BASE: dict[str, list[str]] = {
    "collective": ["collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100"],
    "memory": ["memory", "--params", "7B"],
    "batch": ["batch", "--local", "4", "--ranks", "64"],
    "step": ["step", "--params", "7B", "--compute-time", "400ms", "--cluster", "dgx-h100"],
    "scenario": ["scenario", "--params", "7B", "--cluster", "dgx-h100"],
    "train": ["train", "--params", "7B", "--cluster", "dgx-h100", "--tokens", "1T"],
    "predict": ["predict", "--cluster", "dgx-h100", "--sizes", "1GB"],
    "sweep": ["sweep", "--set", "preset=dgx-h100", "--set", "size=8B"],
    "calibrate": ["calibrate", "results.jsonl", "-o", "out.toml"],
    "presets show": ["presets", "show", "dgx-h100"],
    "validate torch": ["validate", "torch", "-o", "r.jsonl"],
    "validate compare": ["validate", "compare"],
    "validate compute": ["validate", "compute", "--arch", "llama-3.1-8b", "--dry-run"],
    "validate nccl-tests run": ["validate", "nccl-tests", "run", "-o", "out", "--dry-run"],
    "app": ["app"],  # only refusals are run: a --port out of range never starts the server
}


def _walk(command: Any, path: list[str]) -> list[tuple[str, Any]]:
    if hasattr(command, "commands"):
        return [x for n, sub in command.commands.items() for x in _walk(sub, [*path, n])]
    return [(" ".join(path), command)]


def _cases() -> list[tuple[str, str, str, str]]:
    """(command, option flag, parameter, bad value) for every limited option of every command."""
    out = []
    for path, command in _walk(typer.main.get_command(cli.app), []):
        for param in command.params:
            limit = LIMITS.get(param.name)
            if limit is None:
                continue
            flag = max(param.opts, key=len)
            out += [(path, flag, param.name, bad) for bad in _bad_values(param.name, limit)]
    return out


def _bad_values(name: str, limit: Limit) -> list[str]:
    """Just outside the range on each side, written as a user would."""
    if name in ("size", "sizes", "min_bytes", "max_bytes"):
        return (["-1"] if limit.lo == 0 else ["0", "1.5B"]) + ["32TB"]
    if name == "gpu_memory":
        return ["0B", "32TB"]
    if name in ("compute_time", "step_time", "timeout"):
        return ["0s", "1e30s"]
    if name == "bandwidth":
        return ["999kB/s", "2PB/s"]
    if name == "latency":
        return ["-1us", "2s"]
    if name == "peak_flops":  # 1e9 - 1 is printed 1e+09 by %g, inside the range
        return ["999M", "2e18"]
    if name in ("params", "tokens", "tokens_per_gpu"):
        return ["0", f"{limit.hi * 10:g}"]
    # an open lower end is itself outside; a closed one needs a value below it
    low = limit.lo if limit.lo_open and not limit.whole else limit.lo - 1
    return [f"{low:g}", f"{int(limit.hi) + 1}" if limit.whole else f"{limit.hi * 10:g}"]


CASES = _cases()


def _run(argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(argv)
    return code, err.getvalue()


def test_every_command_with_a_limited_option_has_a_base_line() -> None:
    commands = {c for c, *_ in CASES}
    assert commands <= set(BASE), sorted(commands - set(BASE))
    # the table reaches the commands the issue names
    assert {"collective", "predict", "memory", "train", "validate nccl-tests run"} <= commands


def _base_without(command: str, param: str) -> list[str]:
    """``BASE[command]`` without the option ``param`` (any spelling) and its value: the bad
    value is its only one (an option given twice with two values is refused as such)."""
    cmd = dict(_walk(typer.main.get_command(cli.app), []))[command]
    spellings = next(p for p in cmd.params if p.name == param).opts
    argv, out = iter(BASE[command]), []
    for arg in argv:
        if arg in spellings:
            next(argv, None)  # its value
            continue
        out.append(arg)
    return out


@pytest.mark.parametrize(("command", "flag", "param", "bad"), CASES)
def test_each_command_refuses_each_limit_with_one_message(
    command: str, flag: str, param: str, bad: str
) -> None:
    code, err = _run([*_base_without(command, param), f"{flag}={bad}"])
    rule = LIMITS[param].rule
    assert code == 2, (command, flag, bad, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("costmodel: error: --"), err
    assert f": must be {rule}, got " in lines[0], err


def test_the_same_limit_gives_the_same_line_everywhere() -> None:
    """--nodes 1000001: collective, predict, scenario, train and presets show say the same."""
    lines = {
        _run([*BASE[c], "--nodes", "1000001"])[1].strip()
        for c in ("collective", "predict", "scenario", "train", "presets show")
    }
    assert lines == {
        "costmodel: error: --nodes: must be a whole number in 1..1,000,000, got 1000001"
    }


def test_the_sweep_uses_the_same_node_and_size_limits() -> None:
    code, err = _run(
        ["sweep", "--set", "preset=dgx-h100", "--set", "nodes=1..2000000x2", "--set", "size=8B"]
    )
    assert code == 2 and f"nodes: must be {LIMITS['nodes'].rule}" in err
    code, err = _run(["sweep", "--set", "preset=dgx-h100", "--set", "size=32TB"])
    assert code == 2 and f"size: must be {LIMITS['size'].rule}" in err


def test_ranks_over_a_link_say_the_range_that_holds_there() -> None:
    """--ranks over a link has every command's range (1..1e9): 0 gets one line with that range,
    in the CLI and the sweep alike; one rank is answered, 0 s with a note, as the API's
    ``cm.allreduce_time(M, 1, B)`` and a one-GPU cluster answer (one rule on every surface)."""
    link = ["collective", "all_reduce", "--size", "1GB", "--bandwidth", "50GB/s", "--ranks"]
    for bad in ("0", "2,0"):
        code, err = _run([*link, bad])
        assert (code, err.strip().count("\n")) == (2, 0), err
        assert err.strip() == f"costmodel: error: --ranks: must be {LINK_RANKS.rule}, got {bad!r}"
    assert LINK_RANKS.rule.startswith("a whole number in 1..")
    assert _run([*link, "2"])[0] == 0
    code, err = _run(["sweep", "--set", "bandwidth=50GB/s", "--set", "ranks=0", "--set", "size=8B"])
    assert code == 2 and f"ranks: must be {LINK_RANKS.rule}" in err
    assert _run([*BASE["memory"], "--ranks", "1"])[0] == 0  # one rank still shards for memory


def test_a_learning_rate_of_zero_is_refused_before_anything_is_solved() -> None:
    """--base-lr 0 (or below) trains nothing: one line naming the option and its range."""
    lr = [*BASE["batch"], "--accumulation", "1", "--base-batch", "256", "--base-lr"]
    for bad in ("0", "-3e-4"):
        code, err = _run([*lr, bad])
        assert code == 2 and err.strip() == (
            f"costmodel: error: --base-lr: must be {LIMITS['base_lr'].rule}, got {float(bad)!r}"
        )
    assert _run([*lr, "3e-4"])[0] == 0


@pytest.mark.parametrize("sizes", ["1,,2", "1,", "1.5B", "0", "-0", "1e-400"])
def test_bad_size_lists_are_refused_not_read_as_other_sizes(sizes: str) -> None:
    for base in (BASE["collective"][:2] + ["--cluster", "dgx-h100"], BASE["predict"][:3]):
        flag = "--size" if base[0] == "collective" else "--sizes"
        code, err = _run([*base, f"{flag}={sizes}"])
        assert code == 2, (base, sizes, err)
        assert "must be a size in 1 B..16 TiB" in err


def test_values_inside_the_limits_still_answer() -> None:
    for argv in (
        [*BASE["collective"], "--nodes", "1000000"],
        [*BASE["memory"], "--ranks", "1000000000", "--zero-stage", "3"],
        [*BASE["train"], "--usd-per-gpu-hour", "1000"],
        # lists and ranges the sweep reads are checked value by value, not refused as text
        [
            "collective",
            "all_reduce",
            "--size",
            "1GB,8..64",
            "--ranks",
            "8..64x2",
            "--bandwidth",
            "50GB/s",
        ],
        # 1e8 tokens (the limit) on a 70B model: an answer (it printed a traceback)
        ["memory", "--arch", "llama-3.1-70b", "--zero", "3", "--ranks", "64", "--seq", "100000000"],
    ):
        code, err = _run(argv)
        assert code == 0, (argv, err)
    assert math.isfinite(LIMITS["nodes"].hi)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["-o", "/proc/x.jsonl"], "--output: cannot create '/proc/x.jsonl'"),
        (["-o", "{tmp}/t.jsonl", "--", "--bogus", "1"], "'--bogus 1' not known"),
        (["-o", "{tmp}/t.jsonl", "--", "--ddp-width", "abc"], "--ddp-width: invalid int"),
    ],
)
def test_validate_torch_checks_its_output_and_job_arguments_before_torchrun(
    tmp_path: Any, extra: list[str], fragment: str
) -> None:
    """One line and exit 2 (torchrun would print a traceback per rank); nothing created."""
    argv = ["validate", "torch", *(x.replace("{tmp}", str(tmp_path)) for x in extra)]
    code, err = _run(argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "t.jsonl").exists()
