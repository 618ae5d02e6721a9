"""Leftovers of a review pass: one check for an inherited NCCL_ALGO/NCCL_PROTO, library words
in the runner's messages, the API's answer to ``strategy='all'``, one wording per message.
"""

from __future__ import annotations

import pytest

from costmodel.validation import runner
from costmodel.validation import torch_bench as tb

BAD_PROTO = {"NCCL_PROTO": "Fast"}


# --- the torch job checks an exported NCCL_ALGO / NCCL_PROTO as the nccl-tests sweep does --------
def test_the_torch_job_refuses_an_nccl_value_in_the_sweeps_words():
    """The torch job recorded any exported value (``NCCL_PROTO=Fast`` went into its rows and
    its config hash, and NCCL refused it inside every rank); it now reads it through the
    sweep's one function, so the refusal is the sweep's, but for what to do instead."""
    with pytest.raises(ValueError) as torch_said:
        tb.nccl_env("nccl", BAD_PROTO)
    with pytest.raises(ValueError) as sweep_said:
        runner.inherited_env(None, None, BAD_PROTO)
    head = (
        "NCCL_PROTO: 'Fast', set in this environment and inherited by every run, is not an "
        "NCCL_PROTO value ('Fast' is not a name NCCL knows); allowed: ll, ll128, simple"
    )
    assert str(torch_said.value).startswith(head) and str(sweep_said.value).startswith(head)
    assert (
        str(torch_said.value).split("; allowed")[0] == str(sweep_said.value).split("; allowed")[0]
    )
    assert "\n" not in str(torch_said.value)
    assert str(torch_said.value).endswith(
        "unset it for NCCL's own choice (the torch job sets none of its own)"
    )
    # gloo reads neither variable: nothing to refuse
    assert tb.nccl_env("gloo", BAD_PROTO) == {"algo_env": None, "proto_env": None}


def test_the_torch_job_takes_a_list_per_function():
    """NCCL 2.24+'s per-function lists (vLLM's ``allreduce:tree``) are valid, as for the sweep."""
    env = {"NCCL_ALGO": " allreduce:tree ", "NCCL_PROTO": "LL,Simple;allreduce:^LL"}
    assert tb.nccl_env("nccl", env) == {
        "algo_env": "allreduce:tree",
        "proto_env": "LL,Simple;allreduce:^LL",
    }


def test_the_torch_job_exits_2_in_one_line_before_any_work(monkeypatch, capsys):
    monkeypatch.setenv("NCCL_ALGO", "Treee")
    monkeypatch.setenv("RANK", "0")  # as torchrun sets it: no launcher mapping
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setattr(tb, "backend_problem", lambda backend, ranks: None)  # no GPU here

    def no_job(args):
        raise AssertionError("the job started")

    monkeypatch.setattr(tb, "_Bench", no_job)
    assert tb.main(["--backend", "nccl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("torch_bench: NCCL_ALGO: 'Treee', set in this environment and inherited")


# --- runner.py speaks the API's words; the CLI says its options -------------------------------
def test_the_runner_names_the_fields_not_the_cli_options():
    """``inherited_env`` said "(--algos)" and "as with --algos Tree", and the missing-binary hint
    "pass --build-dir", to a notebook calling ``run_nccl_tests``: runner.py was exempt from the
    messages scan as a whole file, and a flag built as ``--{name}`` was never scanned."""
    with pytest.raises(ValueError, match=r"set the sweep's own \(`algos`\)$"):
        runner.inherited_env(None, None, {"NCCL_ALGO": "bogus"})
    (note,) = runner.inherited_env(None, None, {"NCCL_PROTO": "Simple"})[2]
    assert "as with `protos` Simple" in note and "--" not in note
    assert "--build-dir" not in runner.BUILD_HINT and "`build_dir`" in runner.BUILD_HINT


def test_the_cli_still_says_its_options(tmp_path, monkeypatch):
    """The CLI maps the fields onto ``validate nccl-tests run``'s options: its words are as
    before."""
    from tests._cli import one_line_error, run

    monkeypatch.setenv("NCCL_PROTO", "Fast")
    said = run("validate", "nccl-tests", "run", "-o", str(tmp_path / "o"), "--dry-run")
    line = one_line_error(said, "NCCL_PROTO: 'Fast', set in this environment")
    assert line.endswith("; unset it, or set the sweep's own (--protos)")
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    said = run("validate", "nccl-tests", "run", "-o", str(tmp_path / "o"), "--dry-run")
    assert said.exit_code == 0, said.output
    assert "as with --protos Simple (recorded in its rows)" in said.stderr
    monkeypatch.delenv("NCCL_PROTO")
    (tmp_path / "empty").mkdir()
    said = run(
        "validate",
        "nccl-tests",
        "run",
        "-o",
        str(tmp_path / "o"),
        "--build-dir",
        str(tmp_path / "empty"),
        "--no-progress",
    )
    line = one_line_error(said, "all_reduce_perf not found")
    assert line.endswith("then give --build-dir (nccl-tests/build) or set NCCL_TESTS_BUILD.")


def test_validate_torch_refuses_an_nccl_value_before_torchrun(tmp_path, monkeypatch):
    """``validate torch --backend nccl`` checks the exported value before it starts torchrun
    (one line, exit 2), past the GPU check this CPU machine would fail."""
    import importlib.util

    from tests._cli import one_line_error, run

    if (
        importlib.util.find_spec("torch") is None
    ):  # pragma: no cover - the validate extra is installed
        raise AssertionError("the validate extra (torch) is part of the test install")
    monkeypatch.setenv("NCCL_ALGO", "Treee")
    monkeypatch.setattr(tb, "backend_problem", lambda backend, ranks: None)
    said = run(
        "validate",
        "torch",
        "--nproc",
        "1",
        "--backend",
        "nccl",
        "-o",
        str(tmp_path / "t.jsonl"),
        "--dry-run",
    )
    one_line_error(said, "NCCL_ALGO: 'Treee', set in this environment", "own choice")


# --- strategy='all' through the API: the call that ranks every layout ---------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda cm: cm.Scenario(params=7e9, strategy="all"),
        lambda cm: cm.Layout(strategy="all"),
        lambda cm: cm.strategy_step(7e9, strategy="All"),
    ],
    ids=["Scenario", "Layout", "strategy_step"],
)
def test_strategy_all_through_the_api_names_the_call_that_ranks_every_layout(call):
    """They said "unknown 'all'" with nothing of where every layout is ranked; the CLI's
    refusal names its commands (`costmodel step --strategy all`)."""
    import costmodel as cm

    with pytest.raises(ValueError) as said:
        call(cm)
    text = str(said.value)
    assert "\n" not in text.strip()
    assert "strategy: unknown '" in text
    assert text.strip().endswith(
        "'; allowed: ddp, zero1, zero2, fsdp, hsdp (`cm.advise_strategy()` ranks every layout, "
        "with its memory)"
    )
    # the call it names does it: every layout ranked, each with its memory
    rows = cm.advise_strategy(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1).rows()
    assert {r["strategy"] for r in rows} >= {"ddp", "zero1", "zero2", "fsdp", "hsdp"}
    assert all(r["memory_bytes"] > 0 for r in rows)


# --- one wording per message --------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ("collective", "all_reduce", "-s", "1GB", "--cluster", "dgx-h100", "--bandwidth", "50GB/s"),
        (
            "step",
            "--params",
            "7B",
            "--cluster",
            "dgx-h100",
            "--ranks",
            "16",
            "--bandwidth",
            "50GB/s",
        ),
    ],
    ids=["collective", "step"],
)
def test_cluster_and_bandwidth_refused_in_one_wording(argv):
    """The refusal was written out twice (cli/comm.py, cli/training.py): one constant now."""
    from costmodel.cli._common import CLUSTER_OR_LINK
    from tests._cli import one_line_error, run

    assert one_line_error(run(*argv)) == f"costmodel: error: {CLUSTER_OR_LINK}"


def test_one_rank_rows_are_said_alike_by_compare_and_calibrate(tmp_path):
    """compare said "moves nothing, busbw undefined (not compared)", calibrate "moves nothing
    (busbw undefined), left out of the fit": one reason now, each with what it did."""
    import pandas as pd

    from costmodel.validation.calibrate import calibrate
    from costmodel.validation.compare import ONE_RANK_MOVES_NOTHING, ONE_RANK_NOTE

    assert ONE_RANK_NOTE == f"1 rank: {ONE_RANK_MOVES_NOTHING} (not compared)"
    sizes = [2**k for k in range(16, 28)]
    rows = [
        {"op": "all_reduce", "size_bytes": s, "ranks": r, "nodes": 1, "gpus_per_node": r,
         "time_s": 1e-5 + s / (1e10 if r > 1 else 1e15)}
        for r in (1, 8) for s in sizes
    ]  # fmt: skip
    result = calibrate(pd.DataFrame(rows))
    said = [x for x in result.residuals.attrs["skipped"] if "1 rank" in x]
    assert said == [f"12 rows at 1 rank: {ONE_RANK_MOVES_NOTHING}, left out of the fit"]
