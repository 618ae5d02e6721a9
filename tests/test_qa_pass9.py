"""Ninth QA pass: the command line and the API. Each test failed before its fix."""

from __future__ import annotations

import os
import re
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
    assert "calibrating need logs with times" in by_calibrate and "read_busbw_table" in by_calibrate
    assert not (tmp_path / "c.toml").exists()


# --- a bucket given to a strategy that has none --------------------------------------------------------
def test_a_bucket_given_to_fsdp_is_warned_and_not_claimed():
    """``step --strategy fsdp --bucket 50MB`` ignored the bucket without a word and ``--json``
    echoed it in the layout as if used. FSDP gathers and reduces per wrapped module."""
    import json

    argv = ("step", *LLAMA, "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "fsdp")
    res = run(*argv, "--bucket", "50MB")
    assert res.exit_code == 0, res.stderr
    (warning,) = [x for x in res.stderr.splitlines() if x.startswith("costmodel: warning:")]
    assert warning.startswith("costmodel: warning: --bucket: not applied to fsdp")
    assert "ddp, zero1 and zero2 use it" in warning
    assert "bucket_cap_bytes" not in res.stdout  # said once, as the warning
    doc = json.loads(run(*argv, "--bucket", "50MB", "--json").stdout)
    assert doc["layout_fields"]["bucket_cap_bytes"] is None and doc["bucket_cap_bytes"] is None
    assert any(n.startswith("bucket_cap_bytes: not applied to fsdp") for n in doc["notes"])
    plain = json.loads(run(*argv, "--json").stdout)
    assert doc["step_time_s"] == plain["step_time_s"]  # nothing priced differently
    # a strategy that buckets takes it, with no warning
    z = run("step", *LLAMA, "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "zero2",
            "--bucket", "50MB", "--json")  # fmt: skip
    assert "warning" not in z.stderr
    assert json.loads(z.stdout)["layout_fields"]["bucket_cap_bytes"] == 50_000_000


def test_strategy_all_names_the_rows_that_ignore_the_bucket():
    res = run("step", *LLAMA, "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "all",
              "--bucket", "50MB")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "costmodel: warning: --bucket: not applied to fsdp and hsdp" in res.stderr


def test_the_api_says_it_in_the_steps_notes_and_scenario_and_train_warn():
    import costmodel as cm
    from costmodel.strategy import strategy_step

    s = strategy_step(arch="llama-2-7b", cluster="dgx-h100", nodes=2, strategy="hsdp",
                      bucket_cap_bytes=50_000_000, band=False)  # fmt: skip
    assert [n for n in s.notes if n.startswith("bucket_cap_bytes: not applied to hsdp")]
    assert s.as_dict()["layout_fields"]["bucket_cap_bytes"] is None
    r = cm.Scenario(arch="llama-2-7b", nodes=2, strategy="fsdp", bucket_cap_bytes=50_000_000)
    assert [n for n in r.evaluate(scaling=False, flips=False).notes if "not applied" in n]
    d = strategy_step(arch="llama-2-7b", cluster="dgx-h100", nodes=2, strategy="ddp",
                      bucket_cap_bytes=50_000_000, band=False)  # fmt: skip
    assert not [n for n in d.notes if "bucket_cap_bytes" in n]
    for argv in (("scenario", "--strategy", "fsdp"), ("train", "--zero", "3", "--tokens", "1T")):
        res = run(*argv, *LLAMA, "--nodes", "2", "--bucket", "50MB")
        assert res.exit_code == 0, res.stderr
        assert "costmodel: warning: --bucket: not applied to fsdp" in res.stderr, argv


# --- numbers typed without a unit: --vs, --set and the options warn alike --------------------------------
@pytest.mark.parametrize(
    ("argv", "warning"),
    [
        (("scenario", *LLAMA, "--vs", "compute_time=400"),
         "--vs compute_time=400 is 400 s (a number without a unit is seconds); for 400 ms write 400ms"),
        (("scenario", *LLAMA, "--vs", "bucket=50"),
         "--vs bucket=50 is 50 bytes (a number without a unit is bytes); for 50 MiB write 50MiB"),
        (("sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
          "--set", "bucket_cap=25", "--json"),
         "--set bucket_cap=25 is 25 bytes"),
        (("sweep", "--kind", "memory", "--set", "arch=llama-2-7b", "--set", "gpu_memory=80",
          "--json"),
         "--set gpu_memory=80 is 80 bytes (a number without a unit is bytes); for 80 GB write 80GB"),
        (("sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
          "--set", "compute_time=100..400 x4", "--json"),
         "--set compute_time=400 is 400 s"),
        (("step", "--params", "7B", "--compute-time", "400", "--ranks", "64", "--bandwidth",
          "50GB/s"),
         "--compute-time 400 is 400 s (a number without a unit is seconds); for 400 ms write 400ms"),
    ],
)  # fmt: skip
def test_a_bare_number_is_warned_on_vs_set_and_options_alike(argv, warning):
    """``--vs compute_time=400`` took 400 s and ``--vs bucket=50`` 50 B without a word, while
    ``--bucket 25`` warned; sweep axes likewise. One warning for each, answered all the same."""
    res = run(*argv)
    assert res.exit_code == 0, res.stderr
    assert f"costmodel: warning: {warning}" in res.stderr, res.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("scenario", *LLAMA, "--vs", "compute_time=400ms"),
        ("scenario", *LLAMA, "--vs", "compute_time_s=400"),  # the key says its unit
        ("scenario", *LLAMA, "--vs", "bucket=50MiB"),
        ("step", "--params", "7B", "--compute-time", "0.4", "--ranks", "64", "--bandwidth",
         "50GB/s"),
    ],
)  # fmt: skip
def test_a_number_with_its_unit_is_not_warned(argv):
    res = run(*argv)
    assert res.exit_code == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr


# --- size_bytes: whole bytes on every surface ----------------------------------------------------------
def test_size_bytes_is_int_on_the_api_the_cli_json_and_the_sweep_csv(tmp_path):
    """``size_bytes`` was 14000000000.0 in ``collective --json`` and ``predict --json`` and a
    float column of the API's sweep (nccl model), but an int in the textbook sweep and the CSV."""
    import json

    import numpy as np
    import pandas as pd

    import costmodel as cm

    for model in ("nccl", "textbook", "lesson"):
        df = cm.sweep({"preset": "dgx-h100", "nodes": 2, "size": "8B:64B", "model": model})
        assert df["size_bytes"].dtype == np.int64, model
    p = cm.predict_collective("all_reduce", [8, 1024], "dgx-h100", nodes=2)
    assert p.to_frame()["message_bytes"].dtype == np.int64
    d = cm.predict_all_algorithms("all_reduce", [8, 1024], "dgx-h100", 2).to_dict()
    assert all(type(r["size_bytes"]) is int for r in d["results"] + d["verdicts"])

    one = json.loads(run("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100",
                         "--nodes", "2", "--json").stdout)  # fmt: skip
    many = json.loads(run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes",
                          "2", "--sizes", "8B:64B", "--json").stdout)  # fmt: skip
    swept = json.loads(run("sweep", "--set", "preset=dgx-h100", "--set", "size=8B:64B",
                           "--json").stdout)  # fmt: skip
    rows = [*one["results"], *many["results"], *swept] if isinstance(one, dict) else []
    sizes = [r["size_bytes"] for r in rows]
    assert sizes and all(type(x) is int for x in sizes), sizes
    out = tmp_path / "s.csv"
    assert (
        run("sweep", "--set", "preset=dgx-h100", "--set", "size=8B:64B", "-o", str(out)).exit_code
        == 0
    )
    assert pd.read_csv(out)["size_bytes"].dtype == np.int64
    assert ".0," not in out.read_text().splitlines()[1]


# --- a larger card whose compute is not fitted --------------------------------------------------------------
def test_a_larger_b200_card_says_its_compute_is_not_fitted():
    """A suggestion of "a larger card: dgx-b200" gave its step time and GPU-time change as if
    known; the step on that card says its band is unknown (no fitted efficiency: the default
    MFU). The suggestion now says so too, on the CLI, in --json and in the API."""
    import json

    from costmodel.strategy.band import UNKNOWN_COMPUTE

    argv = ("step", "--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "1",
            "--strategy", "fsdp", "--micro-batch", "2")  # fmt: skip
    res = run(*argv)
    assert res.exit_code == 0, res.stderr
    b200 = [x for x in res.stdout.splitlines() if "a larger card: dgx-b200" in x]
    assert b200 and all(x.endswith(f"({UNKNOWN_COMPUTE})") for x in b200), b200
    # the fewest nodes that fit (3 since the bisection between the doublings; it read 4)
    fitted = [x for x in res.stdout.splitlines() if re.match(r"  \d+ nodes", x)]
    assert fitted and UNKNOWN_COMPUTE not in fitted[0]
    changes = json.loads(run(*argv, "--json").stdout)["fit_suggestions"]["changes"]
    for ch in changes:
        if "b200" in ch["change"]:  # b200, gb200: Blackwell, no fitted efficiency
            assert ch["compute_note"] == UNKNOWN_COMPUTE, ch
        elif ch["kind"] != "larger_card":  # the H100 base's own compute: fitted
            assert ch["compute_note"] is None, ch
    # what the step on that card says
    step = json.loads(run("step", "--arch", "llama-3.1-70b", "--cluster", "dgx-b200",
                          "--strategy", "fsdp", "--json").stdout)  # fmt: skip
    assert step["band_note"] == UNKNOWN_COMPUTE


# --- a log of several runs: what is compared, said once -------------------------------------------------
@pytest.mark.parametrize("ref", ["13e", "13f", "15"])
def test_a_log_of_several_runs_says_what_is_compared_once(ref):
    """13e, 13f and 15 printed "mixed runs in one file (...); compare them one by one" while
    the command compared them all: one line now says what is compared and how."""
    import json

    res = run("validate", "compare", "--reference", ref)
    assert res.exit_code in (0, 1), res.stderr
    lines = res.stderr.splitlines()
    said = [x for x in lines if "runs of one file" in x]
    assert len(said) == 1 and said[0].startswith("comparing "), lines
    assert "each row is predicted at its own run's ranks and nodes" in said[0]
    assert not [x for x in lines if "mixed runs" in x or "one by one" in x], lines
    doc = json.loads(run("validate", "compare", "--reference", ref, "--json").stdout)
    assert doc["runs"] == said[0]
    assert not [f for f in doc["findings"] if "mixed runs" in f]


def test_the_parser_still_finds_mixed_runs():
    """The parser's own finding stays for a reader of its rows (the API)."""
    from costmodel.validation.nccl_tests import read_nccl_tests

    df = read_nccl_tests(reference_path("13e"), strict=False)
    assert [w for w in df.attrs["warnings"] if w["message"].startswith("mixed runs in one file")]
