"""CLI leftovers of pass 11 (the warnings of a --json answer, a busy port, the bucket advisor
off its grid, a sweep's row errors in plain words, fractional tokens per step): each test failed
before its fix."""

from __future__ import annotations

import importlib
import json

import pytest

from costmodel import cli

from ._cli import run


def _stderr_warnings(stderr: str) -> list[str]:
    prefix = "costmodel: warning: "
    return [line.removeprefix(prefix) for line in stderr.splitlines() if line.startswith(prefix)]


# --- --json carries the warnings stderr says ---------------------------------------------------
_LINK = ("--ranks", "64", "--bandwidth", "50GB/s")


@pytest.mark.parametrize(
    "command",
    [
        ("collective", "all_reduce", "-s", "14GB", *_LINK, "--latency", "0.005"),
        ("collective", "all_reduce", "-s", "14GB", "--cluster", "dgx-h100"),
        ("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "-s", "1MB"),
        ("step", "--params", "7B", "--compute-time", "400ms", *_LINK, "--bucket", "25"),
        ("memory", "--params", "7B", "--gpu-memory", "80"),
        ("scenario", "--params", "7B", "--compute-time", "400", "--cluster", "dgx-h100"),
        ("archs",),
        ("presets", "show", "dgx-h100"),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_every_json_object_carries_the_warnings_stderr_says(command):
    """`collective ... --json` said its warning (`--latency 0.005 is 0.005 s ...`) on stderr
    only: a script reading the JSON never saw it. Every command's JSON object has a
    `warnings` list, the lines stderr says ([] when none), through one helper."""
    r = run(*command, "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert isinstance(data["warnings"], list)
    assert data["warnings"] == _stderr_warnings(r.stderr)


def test_a_collective_warning_is_in_its_json():
    r = run("collective", "all_reduce", "-s", "14GB", *_LINK, "--latency", "0.005", "--json")
    (warning,) = json.loads(r.stdout)["warnings"]
    assert warning.startswith("--latency 0.005 is 0.005 s")
    quiet = run("collective", "all_reduce", "-s", "14GB", *_LINK, "--latency", "5us", "--json")
    assert json.loads(quiet.stdout)["warnings"] == []


def test_a_python_warning_said_by_the_entry_point_is_in_the_json(tmp_path, capsys):
    """A library warning (a memory sweep's hsdp rows assuming one default node) is turned into
    a `costmodel: warning:` line by the entry point, and the summary's JSON carries it."""
    out = tmp_path / "m.csv"
    code = cli.main(
        ["sweep", "--kind", "memory", "--set", "params=7B", "--set", "strategy=hsdp"]
        + ["-o", str(out), "--json"]
    )
    assert code == 0
    said = capsys.readouterr()
    warnings = json.loads(said.out)["warnings"]
    assert warnings and warnings == _stderr_warnings(said.err)
    assert warnings[0].startswith("assumed: 8 ranks, one node")


# --- `costmodel app` on a port in use ----------------------------------------------------------
def test_app_on_a_port_in_use_is_one_line_naming_port():
    """`costmodel app --port N` with N taken started Streamlit, which logged `Port N is not
    available` and exited 1; now one line naming --port, exit 2, before any server starts."""
    import socket

    from ._cli import one_line_error

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for address in (("--address", "127.0.0.1"), ()):
            line = one_line_error(run("app", "--port", str(port), *address), "--port: ")
            assert f"{port} is already in use" in line and "e.g. --port" in line


def test_a_free_port_passes_the_check():
    import socket

    from costmodel.web import launch

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launch.check_port(port, "127.0.0.1")  # no error: the server would start


# --- benchmarks/bench_sweep.py --quick ---------------------------------------------------------
def test_bench_sweep_quick_runs_every_part_in_seconds():
    """`bench_sweep.py` had no small run: its every-model part swept 1.27 million rows per model
    three times whatever --rows said. `--quick` runs every part on small grids and judges no
    goal."""
    import os
    import subprocess
    import sys

    from tests._paths import ROOT

    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_sweep.py"), "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the streamed part's children too
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "5 presets x 1..64 nodes x 31 sizes -> DataFrame: 9,920 rows" in out
    assert out.count("not judged, --quick") == 4  # lesson, textbook, nccl, nccl-table
    assert "(not judged: --quick's grids are too small)" in out
    assert out.count("streamed to Parquet: 10,640 rows") == 2


# --- the bucket_cap advisor at a cap off its grid ----------------------------------------------
_OFF_GRID = ("--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "2", "--bucket-advice")


@pytest.mark.parametrize("cap", ["25.5MiB", "300MiB"])
def test_the_advice_prices_a_current_cap_off_its_grid(cap):
    """`scenario --bucket 25.5MiB --bucket-advice` gave no "at the current" figure: the advisor
    swept 1..200 MiB in 1 MiB steps and the cap in use was not one of them. It is now swept
    too, exactly, and its figure is the step's own exposed communication at that cap."""
    import costmodel as cm
    from costmodel import units

    r = run("scenario", *_OFF_GRID, "--bucket", cap)
    assert r.exit_code == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("bucket_cap advice")]
    mib = units.parse_bytes(cap) / 2**20
    assert f"; at the current {mib:g} MiB: " in line
    s = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=2, bucket_cap_bytes=cap)
    adv = s.bucket_advice()
    k = adv.caps_bytes.index(units.parse_bytes(cap))
    alone = s.evaluate(scaling=False, flips=False, timeline=False)
    assert adv.exposed_comm_s[k] == pytest.approx(alone.exposed_comm_s, rel=1e-9)
    assert f"at the current {mib:g} MiB: {units.format_duration(adv.exposed_comm_s[k])}" in line
    assert list(adv.caps_bytes) == sorted(adv.caps_bytes) and len(adv.caps_bytes) == 201


def test_a_cap_on_the_grid_and_a_given_grid_are_swept_as_before():
    import costmodel as cm
    from costmodel.ddp import ADVICE_CAPS_BYTES

    on = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=2).bucket_advice()
    assert on.caps_bytes == tuple(float(c) for c in ADVICE_CAPS_BYTES)
    given = cm.Scenario(
        arch="llama-2-7b", cluster="dgx-h100", nodes=2, bucket_cap_bytes="25.5MiB"
    ).bucket_advice([2**20, 2**21])
    assert given.caps_bytes == (2.0**20, 2.0**21)  # the caller's caps, as given


# --- a sweep's row errors in plain words -------------------------------------------------------
_LAUNCH = ("--set", "preset=dgx-h100", "--set", "gpus_per_process=2,8", "--set", "size=1MB",
           "--set", "gpus_per_node=4,8")  # fmt: skip


@pytest.mark.parametrize("out", ["c.csv", "c.parquet", None, "json"])
def test_a_sweeps_row_errors_are_plain_words_in_its_outputs(tmp_path, out):
    """A refused row's `error` cell kept the library's marks in the CSV (``runs 4 GPUs here
    (`gpus_per_node`)``); every output written for a reader (CSV, Parquet, stdout's CSV and
    --json rows) says the name alone, from one function (sweep.output.plain_errors). The
    DataFrame keeps the API's words, as the API's own refusal says them."""
    import io

    import pandas as pd

    import costmodel as cm
    from costmodel.sweep import read_table

    extra = {"json": ["--json"], None: []}.get(out, ["-o", str(tmp_path / str(out))])
    r = run("sweep", *_LAUNCH, *extra)
    assert r.exit_code == 0, r.stderr
    if out == "json":
        errors = {row["error"] for row in json.loads(r.stdout)}
    elif out is None:
        errors = set(pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)["error"])
    else:
        errors = set(read_table(tmp_path / out)["error"])
    (error,) = errors - {""}
    assert "`" not in error and "runs 4 GPUs here (gpus_per_node)" in error
    assert error.startswith("gpus_per_process: 8 GPUs per process")
    # the warning still names the --set the user typed
    assert "--set gpus_per_process: 8 GPUs per process" in r.stderr
    df = cm.sweep(preset="dgx-h100", gpus_per_process="2,8", size="1MB", gpus_per_node="4,8")
    (api,) = set(df["error"]) - {""}
    assert "here (`gpus_per_node`)" in api and api.replace("`", "") == error


def test_the_dask_engines_partitions_say_plain_errors_too(tmp_path):
    import pyarrow.parquet as pq

    from costmodel import distributed as dist

    sw = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function

    grid = sw.make_grid(preset="dgx-h100", gpus_per_process="2,8", size="1MB", gpus_per_node="4,8")
    assert dist.write_partition(str(tmp_path), grid, 0, 0, grid.rows) == grid.rows
    errors = set(pq.read_table(tmp_path / dist.PART_NAME.format(0))["error"].to_pylist())
    (error,) = errors - {""}
    assert "`" not in error and "runs 4 GPUs here (gpus_per_node)" in error


# --- a fraction of a token per step ------------------------------------------------------------
@pytest.mark.parametrize("per_step", [0.1, 0.5, 4e6 + 0.5, 1.5])
def test_a_fractional_tokens_per_step_is_refused_naming_it(per_step):
    """`training_cost(..., tokens_per_step=0.5)` answered (2 steps per token): a step trains whole
    sequences of whole tokens, so a fraction is a unit slip (0.5 for 0.5M); refused in one line
    naming tokens_per_step. A whole float (4e6) is a count and answers."""
    from costmodel.training import training_cost

    with pytest.raises(ValueError) as err:
        training_cost(1e12, tokens_per_step=per_step, step_time_s=1.0, ranks=8)
    line = str(err.value)
    assert line.startswith("tokens_per_step: must be a whole number of tokens >= 1")
    assert f"got {per_step!r}" in line and "\n" not in line


def test_a_whole_float_tokens_per_step_answers_as_its_int():
    from costmodel.training import training_cost

    a = training_cost(2e12, tokens_per_step=4e6, step_time_s=8.0, ranks=512)
    b = training_cost(2e12, tokens_per_step=4_000_000, step_time_s=8.0, ranks=512)
    assert a.steps == b.steps == 500_000 and a.wall_days == b.wall_days
