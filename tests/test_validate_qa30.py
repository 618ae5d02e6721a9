"""What a log's launch pins, read and said as the file says it: defects a QA pass of the day's
changes found. Each test failed on the defect it names before its fix.

- a pinned NCCL_PROTO changed the prediction but was never said on the "from the log:" line;
- a NCCL_ALGO on a launch command continued over lines with a backslash (as launch commands
  are pasted), or set with MPICH's ``-genv NAME VALUE``, was not read;
- a ``--algo`` the user typed was said on the "from the log:" line as if the log said it.
"""

from __future__ import annotations

from pathlib import Path

from costmodel.reference import reference_path
from tests._cli import run

ARGS = ("--op", "all_reduce", "--cluster", "aws-p4de")


def _body() -> str:
    """Bundled run 16a (2 x p4de, EFA) without its comments and rank prefixes: a log no
    bundled run's index describes, which states no algorithm or protocol."""
    lines = reference_path("16a").read_text().splitlines()
    return "".join(line.removeprefix("0: ") + "\n" for line in lines if not line.startswith("#"))


def _compare(tmp_path: Path, head: str, *extra: str) -> tuple[str, str]:
    log = tmp_path / "run.log"
    log.write_text(head + _body())
    said = run("validate", "compare", str(log), *ARGS, *extra)
    assert said.exit_code in (0, 1), said.output
    (read,) = [line for line in said.stderr.splitlines() if line.startswith("from the log:")]
    (median,) = [line for line in said.stdout.splitlines() if line.startswith("median |busbw")]
    return read, median


def test_a_pinned_protocol_is_said_where_it_was_read(tmp_path):
    """``-x NCCL_PROTO=LL`` moved the median (38.0% -> 43.1%) with no word of it."""
    plain = _compare(tmp_path, "", "--nodes", "2")
    read, median = _compare(
        tmp_path, "mpirun -np 16 -x NCCL_PROTO=LL ./all_reduce_perf -b 8 -e 2G\n", "--nodes", "2"
    )
    assert "NCCL_PROTO LL (the launch line)" in read, read
    assert median != plain[1]  # the protocol is applied, and now said


def test_a_launch_continued_with_backslashes_is_read_as_one_line(tmp_path):
    """The same ``mpirun -x NCCL_ALGO=Ring`` over three lines read nothing (NCCL's default
    choice predicted); joined it gives what the one-line command gives."""
    one = _compare(
        tmp_path, "mpirun -np 16 -x NCCL_ALGO=Ring ./all_reduce_perf -b 8 -e 2G\n", "--nodes", "2"
    )
    three = _compare(
        tmp_path,
        "mpirun -np 16 \\\n  -x NCCL_ALGO=Ring \\\n  ./all_reduce_perf -b 8 -e 2G\n",
        "--nodes",
        "2",
    )
    assert "NCCL_ALGO Ring (the launch line)" in three[0], three[0]
    assert three == one


def test_mpichs_genv_is_read_with_its_ranks(tmp_path):
    """``mpiexec -genv NCCL_ALGO Ring`` (MPICH, Intel MPI; the harness's own runner writes it
    so) was not read, while ``-x NCCL_ALGO=Ring`` was."""
    read, median = _compare(
        tmp_path, "mpiexec -n 16 -ppn 8 -genv NCCL_ALGO Ring ./all_reduce_perf -b 8 -e 2G\n"
    )
    assert "NCCL_ALGO Ring (the launch line)" in read and "nodes 2" in read, read
    ring = _compare(
        tmp_path, "mpirun -np 16 -x NCCL_ALGO=Ring ./all_reduce_perf -b 8 -e 2G\n", "--nodes", "2"
    )
    assert median == ring[1]


def test_a_typed_algorithm_is_assumed_not_read(tmp_path):
    """``--algo Tree`` on a log that says nothing of it read "from the log: ...; NCCL_ALGO
    Tree" beside "assumed: NCCL_ALGO = Tree (you set it)"."""
    log = tmp_path / "run.log"
    log.write_text(_body())
    said = run("validate", "compare", str(log), *ARGS, "--nodes", "2", "--algo", "Tree")
    assert said.exit_code in (0, 1), said.output
    (read,) = [line for line in said.stderr.splitlines() if line.startswith("from the log:")]
    assert "NCCL_ALGO" not in read, read
    assert "assumed: NCCL_ALGO = Tree (you set it)" in said.stderr


def test_calibrate_help_says_a_folder_left_short_exits_1():
    """``calibrate`` on a folder that leaves a log out exits 1 (README, validate compare's
    help); its own help did not say so."""
    text = " ".join(run("calibrate", "--help").stdout.split())
    assert "the command exits 1" in text


def test_the_window_note_counts_no_query_past_its_window():
    """The sliding-window note read "min(position, 4,096), 7,680 per query": PaLM's count
    (no causal mask) beside a window no query can see past. The average a query attends
    under the causal mask is now said, and it is within the window."""
    import re

    from costmodel.architecture import window_note

    note = window_note("mistral-7b", 32768)
    avg = re.search(r"a query attends ([\d,]+) keys on average where full attention has "
                    r"([\d,]+)", note)  # fmt: skip
    assert avg, note
    windowed, full = (int(x.replace(",", "")) for x in avg.groups())
    assert windowed <= 4096 and full == 16384 and abs(windowed - 3840) <= 1
