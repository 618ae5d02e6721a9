"""The validation harness, seventh QA pass of its own (an engineer on a cluster node):

- a log without its ``# Collective test starting`` header, named ``..._allreduce`` (or given
  ``--op all_reduce``) but holding reduce_scatter rows, was compared as all_reduce in silence:
  the redop/root columns cannot tell the two apart (both ``sum``, root -1), but nccl-tests'
  ``count`` column does (all_reduce counts the whole message, reduce_scatter one rank's share);
  a count that contradicts the op is now said in the op's one line, on both surfaces;
- the writers that append rows (``validate nccl-tests run``'s results.jsonl, ``validate
  torch -o``, the torch job) appended to a file that was not a results file (notes, an
  nccl-tests log saved as ``.jsonl``) and removed its last line, without a newline, as a row a
  killed job cut off: the user's file changed, and unreadable as results; now refused.
- ``validate compare --calibration``'s expected error, a fit's held-out error at the ranks it
  was fitted at, was claimed for rows at other rank counts: now only at those ranks.
- a device list with 7 ranks on one host and 9 on the other was compared as 8 + 8 in silence
  (the GPUs per node not even among the assumptions): a finding says it, the value is assumed.
- "the rows name no GPU a preset has" said of a log naming its 16 H100s per host (no preset
  has 16 per node): the reason is said as it is, by the CLI and the Validate page alike.
- the torch job under ``srun --mpi=pmi2`` over several nodes refused to start asking for
  MASTER_ADDR (pmi2's PMI_RANK read as an MPI launch): srun's step node list names it.
- ``validate compare FOLDER -o``'s rows did not name their log (each log's own run and line
  numbers): a ``file`` column.

Real data only: bundled logs, cut as users have them (their header lines left out), each
checked against the library on the same file, never against numbers written here.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from costmodel.validation.logread import read_log
from costmodel.validation.reference_runs import timed_runs
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, open_page


def _headerless(short: str) -> str:
    """A bundled log's nccl-tests output without the lines that name its op (the header's
    ``Collective test starting/concluded`` and the provenance block above it), as a user's
    own copy of the table often is."""
    lines = reference_path(short).read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("# nccl-tests version"))
    return "".join(line for line in lines[start:] if "Collective test" not in line)


# --- 1. the count column names the op the redop/root columns cannot ---------------------------
def test_reduce_scatter_rows_named_all_reduce_are_said_by_their_count_column(tmp_path):
    """13c is a reduce_scatter run (redop sum, root -1, as all_reduce's): named
    ``..._allreduce.txt`` without its header it was compared as all_reduce, no line said. Its
    busbw/algbw ratio (0.75 on 4 ranks) rules all_reduce out too, so the file name's op is now
    refused (tests/test_validate_qa26.py); the op set by the user is compared, the count column
    said in the op's one line."""
    text = _headerless("13c")
    with pytest.raises(ValueError, match="busbw/algbw ratio") as refused:
        read_log(text.encode(), "h100_allreduce.txt")
    assert "the file name h100_allreduce.txt says all_reduce, but its count column (" in str(
        refused.value
    )
    read = read_log(text.encode(), "h100_allreduce.txt", op="all_reduce")
    assert read.op == "all_reduce"  # the user's op is never overridden
    (notice,) = read.notices
    assert notice.startswith("op: all_reduce from your setting wins, but its count column ("), (
        notice
    )
    assert "fits all_gather, reduce_scatter or all_to_all, not all_reduce" in notice
    assert "a count per rank" in notice and "redop/root" not in notice  # the columns agree

    path = tmp_path / "h100_allreduce.txt"
    path.write_text(text)
    args = ("validate", "compare", str(path), "--json", "--tolerance", "1000")
    result = run(*args, "--op", "all_reduce")
    assert result.exit_code in (0, 1), result.output
    said = notice.replace("(`op`)", "(--op)")
    assert said in json.loads(result.stdout)["warnings"]
    assert f"costmodel: warning: {said}" in result.stderr.splitlines()
    one_line_error(run(*args), "--op: the file name h100_allreduce.txt says all_reduce")

    at = open_page("page_validate.py")  # the Validate page reads it through read_log too
    at.file_uploader(key="val_upload").set_value((path.name, text.encode(), "text/plain")).run()
    assert_clean(at)
    assert any("busbw/algbw ratio" in _text(e.value) for e in at.error)


def test_the_users_op_against_a_count_per_rank_is_said_beside_the_columns():
    """13b (all_gather, 4 ranks) given --op all_reduce: the redop/root columns and the count
    column both disagree, said in one line."""
    (notice,) = read_log(_headerless("13b").encode(), "run.txt", op="all_reduce").notices
    assert notice.startswith("op: all_reduce from your setting wins, but its redop/root"), notice
    assert "and its count column (" in notice and notice.count("\n") == 0


def test_an_all_reduce_log_named_reduce_scatter_is_said_by_its_whole_count():
    """Its busbw/algbw ratio (1.5 on 4 ranks) names all_reduce as its count column does: the
    file name's op is refused (tests/test_validate_qa26.py), naming both."""
    with pytest.raises(ValueError) as refused:
        read_log(_headerless("13a").encode(), "run_reducescatter.txt")
    line = str(refused.value)
    assert line.startswith("op: the file name run_reducescatter.txt says reduce_scatter"), line
    assert "the whole message's count) and its busbw/algbw ratio (1.5) fit all_reduce" in line


@pytest.mark.parametrize("short", timed_runs())
def test_every_bundled_logs_count_column_fits_its_op(short):
    """Every bundled log's count column agrees with its op (all_reduce, all_gather,
    reduce_scatter, broadcast, reduce, alltoall; 23b's twelve dtypes): no notice of it."""
    path: Path = reference_path(short)
    read = read_log(path.read_bytes(), path.name, strict=False)
    assert not any("count column" in n for n in read.notices), read.notices


# --- 2. a file that is not a results file is never appended to ---------------------------------
def _fake_nccl_tests(folder: Path) -> Path:
    """A stand-in all_reduce_perf that prints bundled run 13a's nccl-tests output (a real log):
    the runner runs it as it runs the real binary."""
    folder.mkdir()
    log = folder / "13a.txt"
    log.write_text(
        _headerless("13a").replace("#\n", "# Collective test starting: all_reduce_perf\n", 1)
    )
    binary = folder / "all_reduce_perf"
    binary.write_text(f"#!/bin/sh\ncat '{log}'\n")
    binary.chmod(0o755)
    return folder


def test_the_runner_does_not_append_to_or_cut_a_results_jsonl_of_notes(tmp_path):
    """A folder whose results.jsonl holds something else (notes here) got the sweep's rows
    appended, and its last line, without a newline, removed as "a line a killed job cut off":
    the user's file was changed, then unreadable as results ("line 1 is not JSON")."""
    from costmodel.validation.runner import check_appendable

    build = _fake_nccl_tests(tmp_path / "build")
    out = tmp_path / "runs"
    out.mkdir()
    notes = b"my notes about the cluster\nnode list: gpu01,gpu02"
    (out / "results.jsonl").write_bytes(notes)
    result = run("validate", "nccl-tests", "run", "-o", str(out), "--build-dir", str(build))
    one_line_error(result, "results.jsonl: is not a results file (line 1 is not a JSON row")
    assert (out / "results.jsonl").read_bytes() == notes  # untouched
    with pytest.raises(ValueError, match="is not a results file"):
        check_appendable(out / "results.jsonl")


@pytest.mark.parametrize("content", [b"", b"\n\n", b'{"op": "all_re'])
def test_results_files_a_writer_appends_to_are_still_taken(tmp_path, content):
    """An empty file, and one whose only row a killed writer cut off, are still appended to."""
    from costmodel.validation.runner import check_appendable

    path = tmp_path / "r.jsonl"
    path.write_bytes(content)
    check_appendable(path)


def test_the_torch_job_refuses_an_nccl_tests_log_saved_as_jsonl(tmp_path, capsys):
    """``validate torch -o allreduce.jsonl`` where that file is an nccl-tests log (saved under
    the suffix: tests/test_validate_qa6.py) appended the job's rows to the log; --dry-run,
    which checks every argument, took it."""
    from costmodel.validation import torch_bench

    path = tmp_path / "allreduce.jsonl"
    shutil.copyfile(reference_path("13a"), path)
    before = path.read_bytes()
    line = one_line_error(
        run("validate", "torch", "--dry-run", "--backend", "gloo", "-o", str(path)),
        "--output: ",
        "is an nccl-tests log, not a results file (rename it .log or .txt)",
    )
    assert "Traceback" not in line
    assert torch_bench.main(["-o", str(path)]) == 2
    assert "is an nccl-tests log, not a results file" in capsys.readouterr().err
    assert path.read_bytes() == before


# --- 3. a calibration's expected error only where it was fitted ---------------------------------
def test_a_calibrations_band_is_not_claimed_at_ranks_it_was_not_fitted_at(tmp_path):
    """A bare calibration of bundled 13a (all_reduce, 4 GPUs) predicting 13e (the same host at
    2, 4 and 6 GPUs): its held-out error (measured at 4 ranks) was claimed for every row, "18 of
    36 rows within it", the 2- and 6-rank rows judged by a band the fit never measured there.
    The band is now the 4-rank rows', and the line says which ranks have none."""
    cal = tmp_path / "13a.toml"
    made = run("calibrate", str(reference_path("13a")), "-o", str(cal))
    assert made.exit_code == 0, made.output
    table = tmp_path / "13e.csv"
    args = ["validate", "compare", str(reference_path("13e")), "--calibration", str(cal)]
    result = run(*args, "--json", "-o", str(table))
    assert result.exit_code in (0, 1), result.output
    band = json.loads(result.stdout)["expected_error"]
    import pandas as pd

    rows = pd.read_csv(table)
    rows = rows[rows["rel_error"].notna()]
    at_four = rows[rows["ranks"] == 4]
    assert sorted(set(rows["ranks"])) == [2, 4, 6] and len(at_four) < len(rows)
    assert band["rows_with_band"] == len(at_four)
    inside = (at_four["rel_error"].abs() <= band["half_width_from_1MiB"]).sum()
    assert band["rows_within"] == inside
    assert band["basis"].endswith("; none for rows at 2, 6 ranks, which no fit was fitted at")
    text = run(*args)
    assert f"{band['basis']})" in text.stdout
    assert f"{band['rows_within']} of {band['rows_with_band']} rows within it" in text.stdout


# --- 4. a device list that puts an uneven number of ranks on its hosts ---------------------------
def test_an_uneven_device_list_is_said_and_its_gpus_per_node_assumed(tmp_path, monkeypatch):
    """Bundled 06a (2 x 8 H100) with rank 7's host line on the second node (7 and 9 ranks, as
    ``mpirun -np 16`` over hosts of 7 and 9 slots places them): compared as 8 + 8 with no word,
    the GPUs per node (ranks / nodes) not even listed as assumed, since the host lines stated
    the nodes. Now a finding says the layout, and the GPUs per node is assumed, on both
    surfaces alike."""
    from tests.test_app_qa21 import _assert_same, _cli, _page

    source = reference_path("06a")
    text = source.read_text()
    moved = "#  Rank  7 Group  0 Pid  29269 on bm-h100-01 "
    assert text.count(moved) == 1
    uneven = text.replace(moved, moved.replace("bm-h100-01", "bm-h100-02"))
    path = tmp_path / source.name.replace("06a_", "mine_")  # not the bundled run by its name
    path.write_text(uneven)
    said = _cli(path, tmp_path)
    (finding,) = [f for f in said.json["findings"] if "different number of ranks" in f]
    assert "(bm-h100-01: 7, bm-h100-02: 9)" in finding
    assert "its 16 ranks were spread evenly over the 2 nodes" in finding
    assert "GPUs per node = 8 (ranks / nodes of each run)" in said.json["assumed"]
    _assert_same(_page(monkeypatch, path.name, uneven.encode()), said)

    even = read_log(text.encode(), path.name)  # the log as it ran: nothing said
    assert not [f for f in even.findings if "different number of ranks" in f]
    assert not [a for a in even.assumed if a[0] == "GPUs per node"]


# --- 5. why no preset was found, said as it is ----------------------------------------------------
def _one_host(tmp_path: Path) -> Path:
    """Bundled 06a (16 H100 over two hosts) with both hosts named alike: 16 GPUs on one host."""
    source = reference_path("06a")
    text = source.read_text().replace("bm-h100-01", "gpu01").replace("bm-h100-02", "gpu01")
    path = tmp_path / "run_allreduce.txt"
    path.write_text(text)
    return path


def test_no_preset_for_16_gpus_per_node_is_not_called_a_log_without_a_gpu(tmp_path):
    """A log naming its H100s, 16 on one host, was refused with "the rows name no GPU a preset
    has": it names one; what no preset has is 16 of them per node. Each reason in its words."""
    line = one_line_error(
        run("validate", "compare", str(_one_host(tmp_path))),
        "--cluster: the log has 16 GPUs per node (NVIDIA H100 80GB HBM3); the presets of that "
        "GPU hold at most 8 (dgx-h100); give --cluster NAME",
    )
    assert "name no GPU" not in line
    other = tmp_path / "a6000_allreduce.txt"  # a GPU no preset has
    other.write_text(reference_path("13a").read_text().replace("H100 80GB HBM3", "RTX A6000"))
    one_line_error(
        run("validate", "compare", str(other)),
        "--cluster: no preset has the rows' GPU (NVIDIA RTX A6000); give --cluster NAME",
    )
    bare = tmp_path / "bare_allreduce.txt"  # 13a without its device list
    lines = _headerless("13a").splitlines(keepends=True)
    bare.write_text("".join(line for line in lines if "#  Rank" not in line))
    one_line_error(
        run("validate", "compare", str(bare)),
        "--cluster: the rows name no GPU (the log lists no devices); give --cluster NAME",
    )


def test_the_validate_page_says_the_same_reason_beside_its_default_cluster(tmp_path):
    """The page picks dgx-h100 where no preset fits and said "(the log names no GPU a preset
    has: check the cluster)" of a log naming its 16 H100s per host: now the CLI's reason."""
    from costmodel.validation.compare import no_cluster_reason

    path = _one_host(tmp_path)
    reason = no_cluster_reason(read_log(path.read_bytes(), path.name).rows)
    assert reason.startswith("the log has 16 GPUs per node")
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain"))
    at.run()
    assert_clean(at)
    facts = next(_text(c.value) for c in at.caption if _text(c.value).startswith("From the log"))
    assert f"cluster = dgx-h100 ({reason}: check the cluster)" in facts, facts


# --- 6. the torch job under srun --mpi=pmi2 on several nodes -------------------------------------
_SET_BY_THE_JOB = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR")


@pytest.fixture
def launcher(monkeypatch):
    """A clean launcher environment (tests/test_validate_qa.py's variables and the step's task
    count), each put back as it was after the test; returns a setter."""
    from tests.test_validate_qa import _LAUNCH_VARS

    for name in (*_LAUNCH_VARS, "SLURM_STEP_NUM_TASKS"):
        monkeypatch.setenv(name, "-")  # seen, so restored after the test even if unset now
        monkeypatch.delenv(name)

    def set_env(**values: str):
        for key, value in values.items():
            monkeypatch.setenv(key, value)
        return os.environ

    return set_env


def test_srun_with_pmi2_over_two_nodes_finds_rank_0s_host(launcher):
    """``srun -N 2 --ntasks-per-node 8 --mpi=pmi2 python -m costmodel.validation.torch_bench``
    (pmi2 is many clusters' MpiDefault): Slurm's pmi2 plugin sets PMI_RANK and PMI_SIZE to the
    step's task id and count, which the job read as an MPI launch, so it refused to start
    ("MASTER_ADDR is not set ...") where plain srun finds rank 0's host in the step's node
    list. Now the same host: the PMI rank and size are the step's."""
    from costmodel.validation.torch_bench import _launcher_env

    env = launcher(
        PMI_RANK="9",
        PMI_SIZE="16",
        SLURM_PROCID="9",
        SLURM_NTASKS="16",
        SLURM_STEP_NUM_TASKS="16",
        SLURM_LOCALID="1",
        SLURM_NODEID="1",
        SLURM_STEP_TASKS_PER_NODE="8(x2)",
        SLURM_STEP_NUM_NODES="2",
        SLURM_STEP_NODELIST="gpu[07-08]",
    )
    assert _launcher_env() is None
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("9", "16", "1")
    assert env["LOCAL_WORLD_SIZE"] == "8" and env["MASTER_ADDR"] == "gpu07"


def test_mpich_inside_sbatch_still_needs_master_addr(launcher):
    """MPICH's mpiexec inside sbatch: PMI_RANK from Hydra, the batch step's SLURM_PROCID 0 and
    one task. Its rank 0 (PMI_RANK 0 == SLURM_PROCID 0) is not taken for an srun task either:
    every rank says the same line."""
    from costmodel.validation.torch_bench import _launcher_env

    for rank in ("0", "5"):
        launcher(
            PMI_RANK=rank,
            PMI_SIZE="16",
            MPI_LOCALRANKID=rank,
            MPI_LOCALNRANKS="8",
            SLURM_PROCID="0",
            SLURM_NTASKS="1",
            SLURM_STEP_NUM_TASKS="1",
            SLURM_JOB_NODELIST="gpu[07-08]",
        )
        for name in _SET_BY_THE_JOB:
            os.environ.pop(name, None)
        problem = _launcher_env()
        assert problem is not None and "MASTER_ADDR is not set" in problem, rank


# --- 7. a folder's per-row table names each row's log ------------------------------------------
def test_a_folders_per_row_table_names_each_rows_log(tmp_path):
    """``validate compare FOLDER -o rows.csv`` pools the logs' rows, each with its own log's
    run and line numbers: two runs on one machine (13a's all_reduce, 13c's reduce_scatter)
    gave rows that nothing in the table told apart (run 0 and the same line numbers in both). Each row now names its file. (Two copies of one log are
    one log: the second is left out, tests/test_validate_qa18.py.)"""
    import pandas as pd

    folder = tmp_path / "runs"
    folder.mkdir()
    texts = {"a_allreduce.txt": _headerless("13a"), "b_reducescatter.txt": _headerless("13c")}
    for name, text in texts.items():
        (folder / name).write_text(text)
    table = tmp_path / "rows.csv"
    result = run("validate", "compare", str(folder), "--cluster", "dgx-h100", "-o", str(table))
    assert result.exit_code in (0, 1), result.output
    rows = pd.read_csv(table)
    own = {
        name: read_log(text.encode(), name, cluster="dgx-h100").rows for name, text in texts.items()
    }
    assert rows["file"].value_counts().to_dict() == {name: len(r) for name, r in own.items()}
    for name, got in rows.groupby("file"):
        assert got["line"].tolist() == own[str(name)]["line"].tolist(), name
