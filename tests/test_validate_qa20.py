"""A QA pass of the validation harness as a cluster engineer runs it (``validate torch``,
``validate compare``, ``calibrate``, ``predict``, ``validate nccl-tests run``), each case a
misreading found by running it and fixed.

Logs are built in tmp_path from bundled runs (their provenance block left out, so each reads as
a user's own log); bundled files are never edited.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from costmodel.validation.fallback import socket_fallback
from costmodel.validation.logread import read_log as _read_log
from tests._cli import one_line_error, run


def read_log(path: Path):
    return _read_log(path.read_bytes(), path.name)


# --- 1. NCCL's socket lines on one node ------------------------------------------------------
#: NCCL_DEBUG=INFO on a one-node box without InfiniBand (a cloud VM, a workstation): NCCL names
#: the socket transport as its network, then connects the node's GPUs over P2P (NVLink)
ONE_NODE_DEBUG = [
    "node01:1275:1275 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>",
    "node01:1275:1275 [0] NCCL INFO NET/IB : No device found.",
    "node01:1275:1275 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>",
    "node01:1275:1275 [0] NCCL INFO Using network Socket",
    "node01:1275:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
]


def _one_node_log(tmp_path: Path, debug: list[str]) -> Path:
    """Bundled 13a (one process driving 4 H100 of one node) with ``debug`` after its device
    list, as NCCL prints its init lines there."""
    lines = reference_path("13a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    out: list[str] = []
    for line in lines[seps[1] + 1 :]:
        out.append(line)
        if line.startswith("#  Rank  3"):
            out.extend(debug)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "h100_allreduce.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_socket_lines_on_one_node_are_no_fallback(tmp_path):
    """A one-node run over NVLink whose NCCL_DEBUG=INFO lines name the socket network (as every
    one-node box without InfiniBand prints them) was told it "looks like NCCL's TCP-socket
    fallback": on one node NCCL's network carries nothing. A connection that did go through the
    socket transport (``via NET/Socket/0``: P2P and shared memory switched off) is still said."""
    path = _one_node_log(tmp_path, ONE_NODE_DEBUG)
    measured = read_log(path).rows
    assert set(measured["nodes"]) == {1}
    assert socket_fallback(measured, "dgx-h100", text=path.read_bytes()) is None
    said = run("validate", "compare", str(path))
    assert said.exit_code == 0, said.output
    assert "socket" not in said.stderr.lower(), said.stderr

    carried = [*ONE_NODE_DEBUG, ONE_NODE_DEBUG[-1].replace("P2P/CUMEM", "NET/Socket/0")]
    path = _one_node_log(tmp_path, carried)
    line = socket_fallback(read_log(path).rows, "dgx-h100", text=path.read_bytes())
    assert line is not None and "TCP-socket fallback" in line
    said = run("validate", "compare", str(path))
    assert [x for x in said.stderr.splitlines() if "TCP-socket fallback" in x], said.stderr

    # across nodes the network lines alone still say it (tests/test_socket_fallback.py)
    df = read_log(reference_path("06a")).rows
    assert socket_fallback(df, None, text="\n".join(ONE_NODE_DEBUG[2:4])) is not None


# --- 2. a GPU-count sweep that starts at one GPU ---------------------------------------------
def _scaling_log(tmp_path: Path, one_gpu: bool) -> Path:
    """Bundled 13e (all-reduce on 2, 4 and 6 H100 of one node, a run each) as a user's own log,
    with a first run on one GPU when ``one_gpu`` (``for g in 1 2 4 6``): nccl-tests prints its
    busbw as 0.00 (algbw x 2(n-1)/n at n = 1)."""
    lines = reference_path("13e").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    body = lines[seps[1] + 1 :]
    head: list[str] = []
    if one_gpu:
        head.append("### GPUS=1")
        for line in body[1:7]:  # the 2-GPU run's sizes, each timed at a quarter of its time
            f = line.split()
            t = float(f[5]) / 4
            algbw = f"{int(f[0]) / t / 1e3:.2f}"
            f[5:8] = [f"{t:.2f}", algbw, "0.00"]
            f[9:12] = [f"{t:.2f}", algbw, "0.00"]
            head.append("  ".join(f))
        head.append("# Avg bus bandwidth    : 0 ")
    path = tmp_path / ("scaling_1246_allreduce.log" if one_gpu else "scaling_246_allreduce.log")
    path.write_text("\n".join(head + body) + "\n")
    return path


def test_a_one_gpu_run_beside_others_is_left_out_of_compare_not_infinite(tmp_path):
    """A log of a GPU-count sweep from one GPU (2, 4, 6) was compared row by row: the one-GPU
    rows, predicted at 0 s (one rank moves nothing), gave an "all_reduce none" line of inf%
    in the summary, counted in the median and outside the band ("36 of 48 rows within it"),
    and the runs line said "on 1 ranks". They are now left out, with the reason in the
    warning of rows not predicted, and the rest compares as the log without them does."""
    with_one = run(
        "validate", "compare", str(_scaling_log(tmp_path, True)), "--cluster", "dgx-h100", "--json"
    )
    without = run(
        "validate", "compare", str(_scaling_log(tmp_path, False)), "--cluster", "dgx-h100", "--json"
    )
    assert with_one.exit_code == without.exit_code == 0, with_one.output
    a, b = json.loads(with_one.stdout), json.loads(without.stdout)
    assert "inf" not in with_one.stdout.lower()
    assert a["summary"] == b["summary"]
    assert a["median_abs_rel_error"] == b["median_abs_rel_error"]
    assert (a["rows"], a["predicted"]) == (b["rows"] + 12, b["predicted"])
    (left_out,) = [w for w in a["warnings"] if "not predicted" in w]
    assert left_out.startswith("12 of 48 rows not predicted")
    assert "1 rank: a collective on one rank moves nothing" in left_out
    text = run("validate", "compare", str(_scaling_log(tmp_path, True)), "--cluster", "dgx-h100")
    assert "line 1: all_reduce on 1 rank, line 9: all_reduce on 2 ranks" in text.stderr
    assert "inf%" not in text.stdout, text.stdout


def test_calibrate_leaves_one_gpu_rows_out_of_the_fit_and_says_so(tmp_path):
    """calibrate fitted the one-GPU rows too (as latency alone): the TOML's rms_rel_error,
    max_abs_rel_error and cv_max_abs_rel_error were inf, and the table printed inf%. They are
    left out (the fit is the one of the log without them) and said; rows all on one rank are
    refused, as validate compare refuses them."""
    import tomllib

    fits = []
    for one_gpu in (True, False):
        out = tmp_path / f"cal-{int(one_gpu)}.toml"
        said = run(
            "calibrate", str(_scaling_log(tmp_path, one_gpu)), "--nodes", "1", "-o", str(out)
        )
        assert said.exit_code == 0, said.output
        assert "inf" not in said.stdout, said.stdout
        notes = [x for x in said.stderr.splitlines() if "1 rank" in x]
        assert notes == (
            [
                "costmodel: warning: not fitted: 6 rows at 1 rank: a collective on one rank "
                "moves nothing, busbw undefined, left out of the fit"
            ]
            if one_gpu
            else []
        ), said.stderr
        (fit,) = tomllib.loads(out.read_text())["fit"]
        fits.append({k: v for k, v in fit.items() if k not in ("source", "points")})
    assert fits[0] == fits[1]
    assert all(math.isfinite(v) for v in fits[0].values() if isinstance(v, float))
    # every row on one rank: refused as validate compare refuses it
    log = _scaling_log(tmp_path, True)
    only = log.read_text().split("### GPUS=2")[0]
    log.write_text(only)
    for said in (
        run("calibrate", str(log), "--nodes", "1", "-o", str(tmp_path / "one.toml")),
        run("validate", "compare", str(log), "--cluster", "dgx-h100"),
    ):
        one_line_error(said, "every measured row ran on 1 rank, which communicates nothing")
    assert not (tmp_path / "one.toml").exists()


# --- 3. an NCCL_ALGO exported in the shell ---------------------------------------------------
def _sweep(tmp_path: Path, *extra: str, log: str = "12a", gpus: str = "8"):
    """``validate nccl-tests run`` of a fake all_reduce_perf that prints bundled ``log`` (12a:
    one process driving 8 A100, ``-g 8``; 13a: 4 H100, ``-g 4``), as the local launcher starts
    it."""
    build = tmp_path / "build"
    build.mkdir(parents=True, exist_ok=True)
    binary = build / "all_reduce_perf"
    binary.write_text(f"#!/bin/sh\ncat '{reference_path(log)}'\n")
    binary.chmod(0o755)
    out = tmp_path / "run"
    return out, run(
        "validate", "nccl-tests", "run", "-o", str(out), "--build-dir", str(build),
        "--gpus", gpus, "--no-progress", *extra,
    )  # fmt: skip


def test_an_nccl_algo_the_runs_inherit_is_recorded_and_said(tmp_path, monkeypatch):
    """Every run inherits the shell's environment, so an ``export NCCL_ALGO=Tree`` left from an
    earlier test pinned the whole sweep, while its rows recorded no algorithm (``algo_env``
    null, the run key without it) and ``validate compare`` predicted NCCL's own choice. The
    sweep now takes it as its value, says so before anything runs, and the rows, the key and
    the comparison carry it; ``--algos`` still wins, and a value NCCL does not know is refused
    naming the variable."""
    monkeypatch.setenv("NCCL_ALGO", "Tree")
    out, said = _sweep(tmp_path)
    assert said.exit_code == 0, said.output
    assert said.stderr.splitlines()[0] == (
        "costmodel: warning: NCCL_ALGO=Tree is set in this environment and every run inherits "
        "it: the sweep runs it pinned, as with --algos Tree (recorded in its rows); unset it for "
        "NCCL's own choice"
    )
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["algo_env"] for r in rows} == {"Tree"}
    assert {r["run_key"].split("@")[0] for r in rows} == {"all_reduce-algo_Tree"}
    (log,) = (out / "logs").glob("*.log")
    assert "# costmodel runner env: NCCL_ALGO=Tree" in log.read_text()
    compared = run("validate", "compare", str(out / "results.jsonl"), "--json")
    assert compared.exit_code in (0, 1), compared.output
    assert {s["algorithm"] for s in json.loads(compared.stdout)["summary"]} == {"tree"}

    # the sweep's own --algos wins over the shell's, with no word of it
    out, said = _sweep(tmp_path / "own", "--algos", "Ring", "--dry-run")
    assert said.exit_code == 0 and "inherits" not in said.stderr, said.output
    assert said.stdout.startswith("NCCL_ALGO=Ring ")
    # a value NCCL does not know: refused before anything runs, naming the variable
    monkeypatch.setenv("NCCL_ALGO", "Ringg")
    out, said = _sweep(tmp_path / "bad")
    one_line_error(said, "NCCL_ALGO: 'Ringg', set in this environment", "allowed: collnetchain")
    assert not out.exists()
    # none set: NCCL's own choice, as before
    monkeypatch.delenv("NCCL_ALGO")
    out, said = _sweep(tmp_path / "none")
    assert said.exit_code == 0 and "inherits" not in said.stderr, said.output
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["algo_env"] for r in rows} == {None}


def test_a_torch_job_on_nccl_names_the_nccl_algo_it_inherits(tmp_path, monkeypatch):
    """The torch job on NCCL ran under an exported NCCL_ALGO without a word in its rows, so
    ``validate compare`` predicted NCCL's own choice for them. Its rows now carry it as the
    runner's do (``algo_env``, ``proto_env``), and a rerun under another value is another
    configuration (run key); gloo reads neither. (No GPU here: the job's own functions, and
    rows as an 8-GPU job writes them.)"""
    from costmodel.validation import torch_bench as tb

    monkeypatch.delenv("NCCL_ALGO", raising=False)
    monkeypatch.delenv("NCCL_PROTO", raising=False)
    args = tb.parse_args(["--max-bytes", "1MiB"])
    plain = tb.job_config(args, "nccl", 8, 8)
    assert tb.nccl_env("nccl") == {"algo_env": None, "proto_env": None}
    monkeypatch.setenv("NCCL_ALGO", "Ring")
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    assert tb.nccl_env("nccl") == {"algo_env": "Ring", "proto_env": "Simple"}
    assert tb.nccl_env("gloo") == {"algo_env": None, "proto_env": None}
    assert tb.job_config(args, "nccl", 8, 8) != plain
    assert tb.job_config(args, "gloo", 2, 2) == tb.job_config(args, "gloo", 2, 2)

    # such rows are predicted pinned: 1 GiB on one DGX H100, ring as run, not NCCL's NVLS
    base = {"source": "torch", "backend": "nccl", "ranks": 8, "nodes": 1, "gpus_per_node": 8,
            "device": "NVIDIA H100 80GB HBM3", "kind": "collective", "op": "all_reduce",
            "size_bytes": 2**30, "placement": "out_of_place", "time_s": 5e-3, "flagged": False,
            "run_key": "torch@x", "config": "x", "attempt": "20261205T000000.0-1",
            "complete": True}  # fmt: skip
    chosen = {}
    for name, extra in (("own", {}), ("pinned", tb.nccl_env("nccl"))):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({**base, **extra}) + "\n")
        said = run("validate", "compare", str(path), "--cluster", "dgx-h100", "--json")
        assert said.exit_code in (0, 1), said.output
        (row,) = json.loads(said.stdout)["summary"]
        chosen[name] = row["algorithm"]
    assert chosen == {"own": "nvls", "pinned": "ring"}, chosen


# --- 4. NVLS switched off, as the log's NCCL lines say ---------------------------------------
def test_a_log_whose_nccl_lines_say_nvls_was_off_is_predicted_without_it(tmp_path):
    """NCCL_DEBUG=INFO prints ``NCCL_NVLS_ENABLE set by environment to 0.`` when NVLink SHARP is
    switched off; such an H100 log was predicted with NVLS, NCCL's default choice from 1 MiB on
    one node (a bundled run's index said it for 04a-c; a user's own log could not). Both
    surfaces read the log's line now, as they read the index."""
    off = ["node01:1275:1275 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0."]
    algorithms = {}
    for name, debug in (("on", []), ("off", off)):
        path = _one_node_log(tmp_path, debug)
        said = run("validate", "compare", str(path), "--json")
        assert said.exit_code in (0, 1), said.output
        algorithms[name] = {s["algorithm"] for s in json.loads(said.stdout)["summary"]}
        read = read_log(path)
        assert ("NVLS", "off (NCCL_NVLS_ENABLE=0)", "the log's NCCL lines") in read.facts or (
            name == "on"
        )
    assert "nvls" in algorithms["on"]
    assert "nvls" not in algorithms["off"] and algorithms["off"] <= {"ring", "tree"}


def test_nvls_switched_off_in_the_shell_is_carried_by_a_sweep_and_the_torch_job(
    tmp_path, monkeypatch
):
    """``NCCL_NVLS_ENABLE=0`` exported before a sweep switched NVLS off in every run (and, under
    mpirun, on the ranks of the launching node only); the rows did not say it and the H100 runs
    were compared with NVLS. The sweep now exports it to every rank, records it in the run key
    and as ``nvls`` false in its rows, which ``validate compare`` reads; the torch job on NCCL
    writes the same column."""
    from costmodel.validation import runner
    from costmodel.validation import torch_bench as tb

    algorithms = {}
    for name, value in (("on", None), ("off", "0")):
        if value is None:
            monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
        else:
            monkeypatch.setenv("NCCL_NVLS_ENABLE", value)
        out, said = _sweep(tmp_path / name, log="13a", gpus="4")
        assert said.exit_code == 0, said.output
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        compared = run("validate", "compare", str(out / "results.jsonl"), "--json")
        assert compared.exit_code in (0, 1), compared.output
        algorithms[name] = {s["algorithm"] for s in json.loads(compared.stdout)["summary"]}
        if value is None:
            assert all("nvls" not in r for r in rows)
            continue
        assert {r["nvls"] for r in rows} == {False}
        assert {r["run_key"].split("@")[0] for r in rows} == {"all_reduce-nvls_enable_0"}
        assert "costmodel: warning: NCCL_NVLS_ENABLE=0 is set in this environment" in said.stderr
    assert "nvls" in algorithms["on"] and "nvls" not in algorithms["off"], algorithms
    argv = runner.mpirun_argv("openmpi", 2, 8, runner.launch_env(), ["all_reduce_perf"])
    assert argv[5:7] == ["-x", "NCCL_NVLS_ENABLE"]
    assert tb._launch_columns() == {"nvls": False}


@pytest.mark.torch
def test_more_nccl_ranks_than_gpus_is_said_in_counted_words(monkeypatch):
    """``validate torch --nproc 2 --backend nccl`` on a one-GPU machine said "torch sees 1
    GPU(s)"; counts take their noun in the right number on every surface."""
    import torch

    from costmodel.validation.torch_bench import backend_problem

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for found, words in ((1, "torch sees 1 GPU; start at most 1"), (4, "sees 4 GPUs;")):
        monkeypatch.setattr(torch.cuda, "device_count", lambda found=found: found)
        line = backend_problem("nccl", 8)
        assert line is not None and words in line and "(s)" not in line, line


# --- 5. a run timed with CUDA graphs ---------------------------------------------------------
def test_a_run_timed_with_cuda_graphs_is_a_finding(tmp_path):
    """nccl-tests ``-G 10`` prints ``graph: 10`` in its header and replays each iteration from
    a CUDA graph, without the per-op host launch the model's floor adds (fitted on eager runs
    only: every bundled log says ``graph: 0``); the log was compared with no word of it. It is
    a finding now, on both surfaces (one function), and ``graph: 0`` says nothing."""
    for graph, said in (("0", False), ("10", True)):
        lines = reference_path("13a").read_text().splitlines()
        seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
        body = [x.replace("graph: 0", f"graph: {graph}") for x in lines[seps[1] + 1 :]]
        path = tmp_path / f"graph{graph}_allreduce.log"
        path.write_text("\n".join(body) + "\n")
        found = [f for f in read_log(path).findings if "CUDA graphs" in f]
        out = run("validate", "compare", str(path), "--json")
        assert out.exit_code in (0, 1), out.output
        assert [f for f in json.loads(out.stdout)["findings"] if "CUDA graphs" in f] == found
        if said:
            (line,) = found
            at = next(i for i, x in enumerate(body, 1) if x.startswith("# nThread"))
            assert line.startswith(f"line {at}: the run timed CUDA graphs (graph: 10, ")
        else:
            assert found == []


def test_a_run_aggregating_ops_per_launch_is_a_finding(tmp_path):
    """nccl-tests ``-m 8`` (``agg iters: 8``) groups 8 ops into one launch, so each op pays an
    eighth of the host launch the model's floor adds per op (every bundled log: ``agg iters:
    1``); it is a finding, as a CUDA-graph run is."""
    lines = reference_path("13a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    body = [x.replace("agg iters: 1 ", "agg iters: 8 ") for x in lines[seps[1] + 1 :]]
    path = tmp_path / "agg_allreduce.log"
    path.write_text("\n".join(body) + "\n")
    (line,) = [f for f in read_log(path).findings if "ops per launch" in f]
    assert "the run aggregated 8 ops per launch (agg iters: 8, nccl-tests -m)" in line
    out = run("validate", "compare", str(path))
    assert f"costmodel: warning: {line}" in out.stderr, out.stderr


# --- 6. the Validate page says the same ------------------------------------------------------
def test_the_validate_page_reads_these_logs_as_validate_compare_does(tmp_path, monkeypatch):
    """The page calls the same functions: a sweep from one GPU (its one-GPU rows left out and
    named), NVLS off in the log's NCCL lines, socket lines on one node (no fallback warning)
    and a CUDA-graph run (a finding) read there as ``validate compare`` reads them, line by
    line (tests/test_app_qa21.py's comparison)."""
    import io

    import pandas as pd

    from tests.test_app_qa21 import _assert_same, _cli, _page

    graph = _one_node_log(tmp_path / "g", [])
    graph.write_text(graph.read_text().replace("graph: 0", "graph: 10"))
    logs = [
        (_scaling_log(tmp_path, True), True, "a collective on one rank moves nothing"),
        (_one_node_log(tmp_path / "n", ["x:1:1 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0."]), False, None),
        (_one_node_log(tmp_path / "s", ONE_NODE_DEBUG), False, None),
        (graph, False, "the run timed CUDA graphs"),
    ]  # fmt: skip
    for path, no_gpu_named, said in logs:
        page = _page(monkeypatch, path.name, path.read_bytes())
        given = ["--cluster", page.at.selectbox(key="val_cluster").value] if no_gpu_named else []
        cli_said = _cli(path, tmp_path, *given)
        _assert_same(page, cli_said, refused=no_gpu_named)
        shown = " ".join(page.warnings)
        assert "socket" not in shown.lower() and "inf%" not in shown, shown
        if said is not None:
            assert said in shown, shown
        if path.parent.name == "n":  # NVLS off: predicted without it, on the page too
            rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
            assert "nvls" not in set(rows["algorithm"].dropna()), rows
