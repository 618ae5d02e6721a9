"""A QA pass over one road per question: a preset's rank count read alike by every command
that counts a preset's nodes (`step`, `scenario`, `train`, `batch`, as `collective` and the
sweep); `train --step-time` showing only what describes the measured step; `validate compare`
beside its own saved text output."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from tests._cli import one_line_error, run

ARCH = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "fsdp")
#: each command on a cluster preset, with what it needs beside the rank count
COMMANDS = {
    "step": ("step", *ARCH),
    "scenario": ("scenario", *ARCH),
    "train": ("train", *ARCH, "--tokens", "1T"),
    "batch": ("batch", "--local", "1", "--cluster", "dgx-h100", "--global-tokens", "4Mi",
              "--seq", "4096"),
}  # fmt: skip


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- --cluster NAME --ranks N: the nodes the sweep's ranks axis takes, on every command -------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("ranks", "shape"),
    [("16", ("--nodes", "2")), ("4", ("--nodes", "1", "--gpus-per-node", "4"))],
    ids=["whole-nodes", "one-node-slice"],
)
def test_cluster_ranks_is_the_same_answer_as_its_nodes(command, ranks, shape):
    """`step --cluster dgx-h100 --ranks 16` was refused ("give either --cluster (with --nodes)
    or --ranks and --bandwidth"), `batch` refused --cluster without --nodes, scenario and train
    had no --ranks. Each is now the answer of the nodes and GPUs per node the ranks take, key
    for key."""
    by_ranks = _json(*COMMANDS[command], "--ranks", ranks)
    assert by_ranks == _json(*COMMANDS[command], *shape)


@pytest.mark.parametrize("command", COMMANDS)
def test_cluster_ranks_not_whole_nodes_refused_as_collective_refuses_them(command):
    words = ("--ranks: 12 GPUs cannot be built from 'dgx-h100' nodes of 8 GPUs",
             "--ranks <= 8 or a multiple of 8", "or set --nodes instead")  # fmt: skip
    line = one_line_error(run(*COMMANDS[command], "--ranks", "12"), *words)
    collective = run("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "12",
                     "-s", "1GB")  # fmt: skip
    assert line == one_line_error(collective, *words)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("extra", "field"),
    [(("--nodes", "1"), "--nodes: 1 disagrees with --ranks 16"),
     (("--gpus-per-node", "4"), "--gpus-per-node: 4 disagrees with --ranks 16")],
)  # fmt: skip
def test_cluster_ranks_with_a_disagreeing_shape_refused(command, extra, field):
    """--nodes 1 typed is refused though 1 is --nodes' default: it disagrees with 16 ranks."""
    one_line_error(run(*COMMANDS[command], "--ranks", "16", *extra), field, "2 nodes of 8 GPUs")


@pytest.mark.parametrize("command", COMMANDS)
def test_cluster_ranks_with_agreeing_nodes_answered(command):
    assert run(*COMMANDS[command], "--ranks", "16", "--nodes", "2", "--json").exit_code == 0


def test_step_cluster_ranks_and_bandwidth_refused_naming_both_roads():
    one_line_error(
        run(*COMMANDS["step"], "--ranks", "16", "--bandwidth", "50GB/s"),
        "give either --cluster (with --nodes or --ranks) or --ranks and --bandwidth",
    )


def test_step_sweep_ranks_is_read_as_step_ranks_reads_it():
    """A step sweep's `ranks` (once refused, "its ranks are nodes x gpus_per_node") is an axis
    read as step --cluster --ranks reads it: 16 ranks of dgx-h100 are 2 nodes of 8, the row
    writing them (tests/test_cli_qa_pass19.py: every column, every road)."""
    r = run("sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100",
            "--set", "arch=llama-3.1-8b", "--set", "strategy=fsdp",
            "--set", "ranks=16")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = next(csv.DictReader(io.StringIO(r.stdout)))
    assert (row["nodes"], row["gpus_per_node"], row["ranks"]) == ("2", "8", "16")
    step = _json(*COMMANDS["step"], "--ranks", "16")
    assert float(row["step_time_s"]) == pytest.approx(step["step_time_s"], rel=1e-12)


# --- train --step-time: only what describes the measured step ---------------------------------

TRAIN = ("train", "--arch", "llama-3.1-8b", "--nodes", "2", "--tokens", "1T", "--strategy", "fsdp")


def test_train_measured_step_shows_no_contention_and_no_compute_label():
    """`train --step-time` headed the measured step "(overlap contention c = 0)" and its --json
    carried the predicted step's comm_contention, compute_source and compute_label."""
    text = run(*TRAIN, "--step-time", "500ms")
    assert text.exit_code == 0, text.stderr
    head = text.stdout.splitlines()[0]
    assert head.endswith("(measured step time)") and "contention" not in head, head
    doc = _json(*TRAIN, "--step-time", "500ms")
    assert doc["step_time_source"] == "measured"
    assert not {"comm_contention", "compute_source", "compute_label"} & set(doc)
    predicted = _json(*TRAIN)  # the predicted step keeps them
    assert {"comm_contention", "compute_source", "compute_label"} <= set(predicted)
    assert "(overlap contention c = 0)" in run(*TRAIN).stdout.splitlines()[0]


# --- validate compare FOLDER beside its own saved text output ---------------------------------

H100_LOG = "costmodel/data/reference/nccl-tests/13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt"


def test_compare_leaves_out_its_own_saved_text_output(tmp_path):
    """`validate compare logs/ > logs/out.txt 2> logs/err.txt` kept: the next run read both as
    logs, warned "not compared" and failed (exit 1) with every log compared."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(H100_LOG, logs)
    first = run("validate", "compare", str(logs))  # the assumed cluster is said on stderr
    assert first.exit_code == 0, first.stderr
    assert first.stderr.startswith("from the log: ") and "\nassumed: " in first.stderr
    assert first.stdout.splitlines()[-1].startswith("ok:")
    (logs / "out.txt").write_text(first.stdout, encoding="utf-8")
    (logs / "err.txt").write_text(first.stderr, encoding="utf-8")
    (logs / "both.txt").write_text(first.stderr + first.stdout, encoding="utf-8")  # 2>&1
    failed = run("validate", "compare", str(tmp_path / "none"))  # a refusal saved there too
    (logs / "refused.txt").write_text(failed.stderr, encoding="utf-8")
    assert failed.stderr.startswith("costmodel: error: ")
    again = run("validate", "compare", str(logs), "--json")
    assert again.exit_code == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["skipped_files"] == [] and doc["passed"] is True
    assert [x.split(":")[0] for x in doc["skipped_outputs"]] == [
        "both.txt", "err.txt", "out.txt", "refused.txt"
    ]  # fmt: skip
    text = run("validate", "compare", str(logs))
    assert text.exit_code == 0, text.stderr
    assert "left out: out.txt: validate compare's own text output" in text.stderr
    assert "left out: err.txt: costmodel's own standard error text" in text.stderr


def test_a_log_with_text_around_it_is_still_a_log(tmp_path):
    """Told by every line, not by one: a log beside a line of stderr is read as a log."""
    from costmodel.cli.measure import _compare_output

    log = tmp_path / "run.txt"
    log.write_text("comparing 1 log\n" + open(H100_LOG, encoding="utf-8").read(), encoding="utf-8")
    assert _compare_output(log) is None
    only = tmp_path / "only.txt"
    only.write_text("assumed: cluster = dgx-h100\n", encoding="utf-8")
    assert _compare_output(only) is not None
