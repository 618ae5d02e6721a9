"""Ninth QA pass: the command line and the API. Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-2-7b")
ROOT = Path(__file__).resolve().parents[1]


# --- one range in a size's refusal ---------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ("collective", "all_reduce", "--size", "-14GB", "--cluster", "dgx-h100", "--nodes", "2"),
        ("sweep", "--set", "preset=dgx-h100", "--set", "size=-8B", "--json"),
    ],
)
def test_a_negative_size_is_refused_with_one_range(argv):
    """``--size -14GB`` said "must be a size in 1 B..16 TiB ... (size: must be >= 0 bytes ...)":
    two lower bounds in one line. The parser's own bound is the rule's to say, once."""
    line = one_line_error(run(*argv), "must be a size in 1 B..16 TiB", "-")
    assert line.count("must be") == 1 and ">= 0" not in line, line


def test_a_size_that_does_not_parse_keeps_the_reason():
    """Only a bound is dropped: what is wrong with text that is no size stays said."""
    line = one_line_error(
        run("collective", "all_reduce", "--size", "14Gb", "--cluster", "dgx-h100"), "in bits"
    )
    assert "must be a size in 1 B..16 TiB" in line


# --- files a command writes: the option that named them ---------------------------------------------
def test_a_report_refusal_names_report_not_output(tmp_path):
    """``validate compare LOG --report r.txt`` said "--output: 'r.txt' must end in .html": the
    writers' "output:" became the command's --output whatever the option typed."""
    log = str(reference_path("16a"))
    one_line_error(
        run("validate", "compare", log, "--report", str(tmp_path / "r.txt")),
        "--report: ",
        "must end in .html",
    )
    line = one_line_error(
        run("validate", "compare", log, "--report", str(tmp_path / "no" / "r.html")),
        "--report: folder",
    )
    assert "--output" not in line


def test_validate_torch_names_its_output_option(tmp_path):
    line = one_line_error(
        run("validate", "torch", "-o", "/proc/x.jsonl"), "--output: cannot create"
    )
    assert not line.startswith("costmodel: error: output:")


# --- an --arch that names no file ------------------------------------------------------------------
@pytest.mark.parametrize("command", ["memory", "step", "scenario"])
def test_an_arch_file_that_does_not_exist_is_named_as_given(command):
    """``memory --arch bad.json`` said "no config.json at 'bad.json'": as if a folder had been
    searched. It names the file given and the two forms --arch takes."""
    line = one_line_error(
        run(command, "--arch", "bad.json"), "--arch: no such file 'bad.json'", "costmodel archs"
    )
    assert "no config.json at" not in line


# --- token counts: one grammar ---------------------------------------------------------------------
def test_tokens_per_gpu_takes_binary_suffixes_as_global_tokens_does():
    """``batch --global-tokens 4Mi`` answered while ``step --tokens-per-gpu 8Ki`` was refused;
    8Ki = 8192 tokens = 2 sequences of 4096."""
    import json

    a = run("step", *LLAMA, "--cluster", "dgx-h100", "--tokens-per-gpu", "8Ki", "--json")
    assert a.exit_code == 0, a.stderr
    b = run("step", *LLAMA, "--cluster", "dgx-h100", "--micro-batch", "2", "--json")
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert da["tokens_per_gpu"] == 8192 and da["micro_batch"] == 2
    assert da["step_time_s"] == pytest.approx(db["step_time_s"], rel=1e-12)


def test_seq_takes_the_token_grammar_and_says_its_forms():
    import json

    a = run("memory", *LLAMA, "--seq", "2Ki", "--json")
    b = run("memory", *LLAMA, "--seq", "2048", "--json")
    assert a.exit_code == 0, a.stderr
    assert json.loads(a.stdout) == json.loads(b.stdout)
    line = one_line_error(run("step", *LLAMA, "--cluster", "dgx-h100", "--seq", "8x"), "--seq")
    assert "'8Ki'" in line and "'8k'" in line  # the forms accepted, not "a valid integer"


def test_sweep_token_axes_take_the_same_grammar(tmp_path):
    import pandas as pd

    out = tmp_path / "s.csv"
    res = run("sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
              "--set", "seq=4k,4Ki", "-o", str(out))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert pd.read_csv(out)["sequence_length"].tolist() == [4000, 4096]


def test_parse_tokens_forms():
    from costmodel import units

    assert units.parse_tokens("8Ki") == 8192 and units.parse_tokens("8k") == 8000
    assert units.parse_tokens("2T") == 2 * 10**12 and units.parse_tokens("4Mi") == 4 * 2**20
    with pytest.raises(ValueError, match="'8Ki'"):
        units.parse_tokens("8 tokens")
    with pytest.raises(ValueError, match="whole token count"):
        units.parse_tokens("1.5")


# --- a closed stdout: a quiet exit ---------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["archs"], ["--help"], []])
def test_a_reader_that_stops_reading_ends_the_command_quietly(argv):
    """``costmodel archs | head -1`` exited 1 when head closed the pipe before the list was
    written (click's broken-pipe handling). The read end is closed here before the command
    writes, so the write fails every time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "costmodel", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=60) == 0, err
    assert err == ""


# --- a busbw-only table: one refusal for calibrate too ----------------------------------------------
def test_calibrate_refuses_a_busbw_only_table_as_validate_does(tmp_path):
    """``calibrate`` on a busbw-only table gave the parser's own message; validate compare,
    the Validate page and calibrate now give one."""
    path = reference_path("21a")
    by_calibrate = one_line_error(
        run("calibrate", str(path), "-o", str(tmp_path / "c.toml"), "--nodes", "1"), path.name
    )
    by_compare = one_line_error(run("validate", "compare", str(path)))
    assert by_calibrate == by_compare
    assert "calibrate" in by_calibrate and "read_busbw_table" in by_calibrate
    assert not (tmp_path / "c.toml").exists()
