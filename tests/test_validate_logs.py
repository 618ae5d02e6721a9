"""One reading of an nccl-tests log on both surfaces (``validate compare`` and the Validate page):
a log cut mid-row, the launch line of each MPI and Slurm launcher, and an op its sources
disagree on. Each test drives the CLI in-process and the page headless (AppTest's uploader, the
bytes a browser sends), and checks they say the same one line.

Section 5: the logs the harness keeps of the jobs it launches (``validate torch``, ``validate
nccl-tests run``), with fake launchers, and one real two-rank gloo job."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from costmodel.validation import runner
from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests
from costmodel.web.common import sentence  # a note as the page says it
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _is_row(line: str) -> bool:
    from costmodel.validation.nccl_tests._lexer import _strip_prefix

    tokens = _strip_prefix(line).split()  # "0: " of srun -l
    return len(tokens) >= 12 and tokens[0].isdigit() and tokens[1].isdigit()


def _cut_mid_row(prefix: str) -> tuple[bytes, int, int]:
    """A bundled log cut in the middle of its last result row, as a copy made while the run
    was still printing: (bytes, the cut line's number, complete rows before it)."""
    lines = reference_path(prefix).read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if _is_row(line))
    complete = sum(_is_row(line) for line in lines[:last])
    cut = lines[last][: len(lines[last]) // 2]  # no newline: the file ends here
    return "".join(lines[:last]).encode() + cut.encode(), last + 1, complete


# --- 1. a log cut mid-row ------------------------------------------------------------------
def test_parser_keeps_the_rows_before_a_cut_at_the_end_in_strict_mode_too():
    raw, line, complete = _cut_mid_row("13a")
    for strict in (True, False):
        df = parse_nccl_tests(raw.decode(), strict=strict)
        assert len(df) == 2 * complete  # out-of-place and in-place of every complete row
        assert df.attrs["cut_row"]["line"] == line
        assert df.attrs["problems"] == []
        assert any(w["line"] == line and "cut off" in w["message"] for w in df.attrs["warnings"])


def test_a_malformed_row_inside_the_log_is_still_refused_naming_its_line():
    """Only the end of the file makes a short row a cut: one inside the log is damage."""
    raw, line, _ = _cut_mid_row("13a")
    text = raw.decode() + "\n" + reference_path("13a").read_text().splitlines()[line - 2]
    with pytest.raises(NcclTestsParseError, match=f"line {line}: result row has"):
        parse_nccl_tests(text, strict=True)


def test_a_damaged_row_inside_the_log_is_skipped_with_one_line_on_both_surfaces(tmp_path):
    """One behaviour for a row that cannot be read anywhere in the log: the CLI refused the file
    (exit 2, the line) while the page compared the rest; both now skip it and say so."""
    lines = reference_path("13a").read_text().splitlines()
    i = next(k for k, row in enumerate(lines) if row.strip().startswith("1048576 "))
    lines[i] = lines[i][:40]  # "1048576  262144  float": the rest of the row lost
    raw, name = "\n".join(lines).encode(), "h100_allreduce.txt"
    (notice,) = read_log(raw, name, cluster="dgx-h100", strict=False).notices
    assert notice.startswith(f"1 line skipped (not read as result rows): line {i + 1}: "), notice
    path = tmp_path / name
    path.write_bytes(raw)
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100", "--json")
    assert result.exit_code in (0, 1), result.output
    out = json.loads(result.stdout)
    assert (
        out["warnings"] == [notice]
        and f"costmodel: warning: {notice}" in result.stderr.splitlines()
    )

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    at.selectbox(key="val_cluster").set_value("dgx-h100").run()
    assert_clean(at)
    assert [_text(w.value) for w in at.warning].count(notice) == 1
    assert metrics(at)["Rows compared"].endswith(f" of {out['rows']}")


def test_cut_log_is_compared_with_one_warning_on_the_cli_and_the_page(tmp_path):
    """The CLI refused the whole file (exit 2, the cut row's field count) while the page
    skipped the row: now both compare the complete rows and say the same line."""
    raw, line, complete = _cut_mid_row("13a")
    name = reference_path("13a").name
    path = tmp_path / name
    path.write_bytes(raw)
    result = run("validate", "compare", str(path), "--json", "--tolerance", "100")
    assert result.exit_code in (0, 1), result.output  # 1: a row beyond the tolerance
    out = json.loads(result.stdout)
    assert out["rows"] == 2 * complete
    (notice,) = out["warnings"]
    assert notice.startswith(f"line {line}: the log ends in the middle of a result row")
    assert f"costmodel: warning: {notice}" in result.stderr.splitlines()
    assert read_log(raw, name).notices == (notice,)  # the one reader, strict or not
    assert read_log(raw, name, strict=False).notices == (notice,)  # as both surfaces read

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    shown = [_text(w.value) for w in at.warning]
    assert sentence(notice) in shown, shown  # as the page says a note
    assert not any("skipped: line" in w for w in shown), shown  # said once, not twice
    assert metrics(at)["Rows compared"].endswith(f" of {2 * complete}")
    assert metrics(at)["Median |busbw error|"] == f"{100 * out['median_abs_rel_error']:.1f} %"


# --- 3. an op its sources disagree on ------------------------------------------------------
def _header_says(op_perf: str) -> bytes:
    """13b (an all_gather run: ``redop none``, root -1) with its header naming ``op_perf``."""
    text = reference_path("13b").read_text()
    assert "Collective test starting: all_gather_perf" in text
    return text.replace("all_gather_perf", op_perf).encode()


@pytest.mark.parametrize(
    "raw,name,said",
    [  # (log, file name, what the one line says beside the winner)
        (_header_says("all_reduce_perf"), "run.txt", ["redop/root columns (redop none, root -1)"]),
        (_header_says("all_gather_perf"), "run_allreduce.txt", ["the file name says all_reduce"]),
        (
            _header_says("all_reduce_perf"),
            "h100_allgather.log",
            ["the file name says all_gather", "fit all_gather or all_to_all, not all_reduce"],
        ),
    ],
    ids=["columns", "file name", "both"],
)
def test_an_op_the_file_name_or_the_columns_contradict_is_said_in_one_line(raw, name, said):
    read = read_log(raw, name, cluster="dgx-h100")
    (notice,) = read.notices
    won = "all_reduce" if "all_reduce_perf" in raw.decode() else "all_gather"
    assert read.op == won  # the header still wins: the order is unchanged, and said
    assert notice.startswith(f"op: {won} from the log's header wins, but "), notice
    assert f"compared as {won}" in notice and "\n" not in notice
    for part in said:
        assert part in notice, notice


def test_agreeing_sources_and_the_users_op_say_nothing_or_name_the_user():
    raw = reference_path("13b").read_bytes()
    assert read_log(raw, "run_allgather.txt", cluster="dgx-h100").notices == ()
    for prefix in ("09c", "09d", "09e", "13c", "24d"):  # each op's columns fit its op
        path = reference_path(prefix)
        assert read_log(path.read_bytes(), path.name).notices == (), prefix
    text = raw.decode().replace("# Collective test starting: all_gather_perf", "#")
    text = text.replace("# Collective test concluded: all_gather_perf", "#")
    (notice,) = read_log(text.encode(), "run.txt", op="all_reduce", cluster="dgx-h100").notices
    assert notice.startswith("op: all_reduce from your setting wins, but its redop/root"), notice


def test_op_disagreement_is_the_same_line_on_the_cli_and_the_page(tmp_path):
    raw, name = _header_says("all_reduce_perf"), "h100_allgather.log"
    (notice,) = read_log(raw, name, cluster="dgx-h100").notices
    path = tmp_path / name
    path.write_bytes(raw)
    args = ["validate", "compare", str(path), "--cluster", "dgx-h100", "--json"]
    result = run(*args, "--tolerance", "100")
    assert result.exit_code in (0, 1), result.output
    # the library's notice names the field (`op`); the CLI says its option, the page its box
    assert notice.endswith("set the op (`op`)"), notice
    said = notice.replace("(`op`)", "(--op)")
    assert json.loads(result.stdout)["warnings"] == [said]
    assert f"costmodel: warning: {said}" in result.stderr.splitlines()

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    at.selectbox(key="val_cluster").set_value("dgx-h100").run()
    assert_clean(at)
    assert sentence(notice) in [_text(w.value) for w in at.warning]


# --- 2. the launch line, in each launcher's spelling -----------------------------------------
# (line as a log or a job script keeps it, (processes, per node, nodes, GPUs per process)); the
# option names are the manuals': Open MPI mpirun(1) (-np, -N, --map-by ppr:N:node, -H h:slots),
# Intel MPI / MPICH Hydra (-n, -ppn, -perhost, -hosts, -f), srun(1) (-N, -n, --ntasks-per-node),
# HPE PALS mpiexec (--ppn) and Cray aprun (-n, -N)
LAUNCH_LINES = [
    ("mpirun -n 16 -ppn 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1", (16, 8, 2, 1)),
    (
        "mpiexec -np 16 -hosts gpu01,gpu02 /opt/nccl-tests/build/all_reduce_perf -b 8 -g 1",
        (16, 8, 2, 1),
    ),
    ("mpiexec.hydra -f ./hosts -n 32 -ppn 8 ./all_gather_perf -b 1M -e 1G -f 2", (32, 8, 4, None)),
    (
        "mpirun -n 32 -perhost 8 -genv NCCL_DEBUG INFO ./all_reduce_perf -b 8 -e 8G",
        (32, 8, 4, None),
    ),
    (
        "mpirun -np 16 --map-by ppr:8:node:PE=8 --bind-to numa -x NCCL_DEBUG=INFO \\\n"
        "  ./all_reduce_perf -b 8 -e 16G -f 2 -g 1",
        (16, 8, 2, 1),
    ),
    ("mpirun --map-by=ppr:4:node -H a100-1:4,a100-2:4 all_reduce_perf -g 1", (8, 4, 2, 1)),
    ("mpirun -np 8 -N 4 --mca pml ucx ./all_reduce_perf -g 1", (8, 4, 2, 1)),
    (
        "srun -N2 --ntasks-per-node=8 --mpi=pmix ./all_reduce_perf -b 8 -e 16G -g 1 -n 100",
        (16, 8, 2, 1),
    ),
    ("+ srun --nodes 4 --ntasks 32 -l all_reduce_perf -N 5 -n 20", (32, 8, 4, None)),
    ("mpiexec -n 8 --ppn 4 --depth=16 --cpu-bind depth ./all_reduce_perf -g 1", (8, 4, 2, 1)),
    ("aprun -n 32 -N 4 --cc depth -d 16 ./build/all_reduce_perf -b 4 -g 1", (32, 4, 8, 1)),
]


@pytest.mark.parametrize(
    "line,want",
    LAUNCH_LINES,
    ids=[cmd.split()[0] + str(i) for i, (cmd, _) in enumerate(LAUNCH_LINES)],
)
def test_launch_line_of_every_launcher(line, want):
    from costmodel.validation.nccl_tests._launch import parse_launch

    got = parse_launch(line)
    assert got is not None
    assert (got.ranks, got.per_node, got.nodes, got.gpus_per_process) == want, got.describe()


def test_the_binarys_own_options_are_not_the_launchers():
    """nccl-tests' -n (iterations) and -N (cycles) after the binary: 16a's line read 100 ranks
    from its -n 100; a range (srun -N 2-4) or a shell expression says nothing exact."""
    from costmodel.validation.nccl_tests._launch import parse_launch

    line16a = reference_path("16a").read_text().split("COMMAND (sbatch): ")[1].splitlines()[0]
    assert parse_launch(line16a).ranks is None
    assert parse_launch("srun -N 2-4 -n 16 all_reduce_perf").nodes is None
    assert parse_launch("aprun -n $((PBS_JOBSIZE*4)) -N 4 ./all_reduce_perf").ranks is None
    assert parse_launch("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8") is None  # no launcher


# host lists and ranges: what the line settles by itself (the host list's slots, a Slurm range
# of hosts, a node range that is one count), and what it does not (a hostfile, a node range, a
# shell expression, uneven slots), said in the description both surfaces show
HOST_LINES = [
    ("mpirun -H node1:8,node2:8 ./all_reduce_perf -b 8 -e 8G -g 1", (16, 8, 2), ()),
    ("mpirun --host a,b ./all_reduce_perf -g 1", (2, 1, 2), ()),  # one slot per mention
    ("mpirun -host n1,n1,n2,n2 ./all_reduce_perf", (4, 2, 2), ()),
    ("mpirun -np 16 --host a:8,b:8 ./all_reduce_perf", (16, 8, 2), ()),
    ("mpiexec -n 16 --ppn 8 --hosts x1000c0s0b0n0,x1000c0s0b1n0 ./all_reduce_perf", (16, 8, 2), ()),
    ("srun -N 2 --ntasks-per-node 8 ./all_reduce_perf -g 1", (16, 8, 2), ()),
    ("srun -w node[01-04] --ntasks-per-node=8 ./all_reduce_perf", (32, 8, 4), ()),
    ("srun --nodelist=gpu[01-04,07],dgx[1-2] -n 56 all_reduce_perf", (56, 8, 7), ()),
    ("srun -N4-4 -n 32 all_reduce_perf", (32, 8, 4), ()),
    (
        "srun --nodes=2-4 --ntasks-per-node 8 all_reduce_perf",
        (None, 8, None),
        ("nodes unknown: 2-4 is a range",),
    ),
    (
        "mpirun --hostfile /shared/hosts.txt -np 16 ./all_reduce_perf",
        (16, None, None),
        ("nodes unknown: the hostfile /shared/hosts.txt is not read",),
    ),
    (
        "srun -w ./hosts -n 16 all_reduce_perf",
        (16, None, None),
        ("nodes unknown: the hostfile ./hosts is not read",),
    ),
    (
        "mpirun -H node1:8,node2:4 ./all_reduce_perf",
        (12, None, 2),
        ("per node unknown: the hosts have different slots (node1:8, node2:4)",),
    ),
    (
        "mpirun -np 8 -H a:8,b:8 ./all_reduce_perf",
        (8, None, None),
        ("nodes and per node unknown: 8 processes on 16 slots of 2 hosts",),
    ),
    (
        "srun -w gpu[1-x] -n 8 all_reduce_perf",
        (8, None, None),
        ("nodes unknown: host list 'gpu[1-x]' is not read",),
    ),
    (
        "aprun -n $((PBS_JOBSIZE*4)) -N 4 ./build/all_reduce_perf -g 1",
        (None, 4, None),
        ("processes unknown: '$((PBS_JOBSIZE*4))' is not a number",),
    ),
]


@pytest.mark.parametrize(
    "line,want,unknown",
    HOST_LINES,
    ids=[cmd.split()[0] + str(i) for i, (cmd, _, _) in enumerate(HOST_LINES)],
)
def test_launch_line_host_lists_ranges_and_hostfiles(line, want, unknown):
    from costmodel.validation.nccl_tests._launch import parse_launch

    got = parse_launch(line)
    assert (got.ranks, got.per_node, got.nodes) == want, got.describe()
    assert got.unknown == unknown
    for note in unknown:
        assert got.describe().endswith(note) or f"; {note};" in got.describe()


def test_a_host_list_too_large_for_any_job_is_not_expanded():
    """Ranges that would name more hosts than any job has are said unread, in bounded work
    (a line is at most MAX_LINE_CHARS; 1,500 ranges of 100,000 hosts each is not a job)."""
    import time

    from costmodel.validation.nccl_tests._launch import parse_launch

    start = time.perf_counter()
    got = parse_launch("srun -w " + ",".join(["n[0-99999]"] * 1500) + " all_reduce_perf")
    assert time.perf_counter() - start < 5
    assert got.nodes is None and got.unknown[0].startswith("nodes unknown: host list 'n[0-99999]")


def test_a_hostfile_named_in_a_log_is_never_opened(tmp_path, monkeypatch):
    """The hostfile exists and names four nodes: the reader still says the nodes are unknown
    (and never opens it), then takes them as it would without the line."""
    import builtins
    import io

    hostfile = tmp_path / "hosts"
    hostfile.write_text("n1 slots=4\nn2 slots=4\nn3 slots=4\nn4 slots=4\n")
    real_open = builtins.open
    io_open = io.open

    def guarded(file, *args, **kwargs):
        assert str(file) != str(hostfile), "the hostfile was opened"
        return real_open(file, *args, **kwargs)

    def guarded_io(file, *args, **kwargs):
        assert str(file) != str(hostfile), "the hostfile was opened"
        return io_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded_io)
    raw = _launched(f"mpirun --hostfile {hostfile} -np 16 ./all_reduce_perf -b 8 -e 16G -g 1")
    df = parse_nccl_tests(raw.decode())
    assert df.attrs["launch"]["hostfile"] == str(hostfile)
    assert df.attrs["launch"]["nodes"] is None
    assert f"nodes unknown: the hostfile {hostfile} is not read" in df.attrs["launch"]["said"]
    read = read_log(raw, "p5_allreduce.txt", cluster="aws-p5")
    assert read.nodes == 2  # 16 ranks / aws-p5's 8 GPUs per node: said as assumed
    assert ("nodes", "2", "ranks / aws-p5's 8 GPUs per node") in read.assumed


def test_a_slurm_node_range_gives_the_nodes_on_both_surfaces(tmp_path):
    """``srun -w node[01-04] --ntasks-per-node=4``: 4 nodes x 4 on aws-p5 (8 GPUs per node),
    not the preset's 2 x 8; before, a bracketed node list was not read."""
    raw = _launched("srun -w p5-[01-04] --ntasks-per-node=4 ./all_reduce_perf -b 8 -e 16G -g 1")
    read = read_log(raw, "p5_allreduce.txt", cluster="aws-p5")
    assert (read.nodes, read.gpus_per_node) == (4, 4)
    path = tmp_path / "p5_allreduce.txt"
    path.write_bytes(raw)
    csv = tmp_path / "rows.csv"
    result = run("validate", "compare", str(path), "--cluster", "aws-p5", "-o", str(csv))
    assert result.exit_code in (0, 1), result.output
    import pandas as pd

    assert set(pd.read_csv(csv)["nodes"]) == {4}


def _launched(line: str) -> bytes:
    """16b (2 x 8 H100, no host lines: 16 ranks from busbw/algbw), its command replaced by
    ``line``, and no longer byte-for-byte the bundled run (so no index fills the nodes)."""
    text = reference_path("16b").read_text()
    old = next(row for row in text.splitlines() if row.startswith("# COMMAND"))
    return text.replace(old, f"# COMMAND: {line}").encode()


@pytest.mark.parametrize(
    "line",
    [
        "mpirun -n 16 -ppn 4 ./all_reduce_perf -b 8 -e 16G -f 2 -g 1",
        "mpiexec -np 16 --map-by ppr:4:node ./all_reduce_perf -b 8 -e 16G -f 2 -g 1",
        "srun -N 4 --ntasks-per-node=4 ./all_reduce_perf -b 8 -e 16G -f 2 -g 1",
    ],
    ids=["hydra", "map-by", "srun"],
)
def test_nodes_come_from_the_launch_line_before_the_presets_gpus_per_node(line):
    """4 nodes x 4 processes on aws-p5 (8 GPUs per node): the line says 4 nodes; the preset's
    GPUs per node would have assumed 2."""
    read = read_log(_launched(line), "p5_allreduce.txt", cluster="aws-p5")
    assert (read.nodes, read.gpus_per_node) == (4, 4)
    facts = {field: where for field, _, where in read.facts}
    assert facts["nodes"].startswith("the log's launch line (") and "4 per node" in facts["nodes"]
    assert not [a for a in read.assumed if a[0] in ("nodes", "GPUs per node")]


def test_launch_line_nodes_on_the_cli_and_the_page(tmp_path):
    raw = _launched("mpirun -n 16 -ppn 4 ./all_reduce_perf -b 8 -e 16G -f 2 -g 1")
    path = tmp_path / "p5_allreduce.txt"
    path.write_bytes(raw)
    csv = tmp_path / "rows.csv"
    result = run("validate", "compare", str(path), "--cluster", "aws-p5", "-o", str(csv))
    assert result.exit_code in (0, 1), result.output
    assert "assumed: nodes" not in result.stderr
    import pandas as pd

    assert set(pd.read_csv(csv)["nodes"]) == {4}

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((path.name, raw, "text/plain")).run()
    at.selectbox(key="val_cluster").set_value("aws-p5").run()
    assert_clean(at)
    caption = " ".join(_text(c.value) for c in at.caption)
    assert "nodes 4 (the log's launch line (mpirun: 16 processes, 4 per node" in caption, caption


def test_a_launch_line_inside_the_log_is_read_too():
    """A shell trace (``+ srun ...``) in the log proper, not a collector's COMMAND line."""
    text = reference_path("16b").read_text().replace("# COMMAND", "# was COMMAND")
    lines = text.splitlines()
    first = next(i for i, row in enumerate(lines) if not row.startswith("#"))
    lines.insert(first, "+ srun -N 4 --ntasks-per-node 4 --mpi=pmix ./all_reduce_perf -g 1")
    df = parse_nccl_tests("\n".join(lines))
    assert df.attrs["launch"]["nodes"] == 4 and df.attrs["launch"]["per_node"] == 4


# --- 4. QA of every bundled log -----------------------------------------------------------
def test_gpus_per_node_said_is_the_one_compared():
    """13e runs 2, 4 and 6 GPUs on one node and names no hosts: it is compared with ranks //
    nodes GPUs per node (compare's rule), and said so; it said "GPUs per node = 8" (the
    preset's), which no row was compared with."""
    result = run("validate", "compare", "--reference", "13e", "--json", "--tolerance", "100")
    assert result.exit_code in (0, 1), result.output
    assumed = json.loads(result.stdout)["assumed"]
    assert "GPUs per node = 2, 4, 6 (ranks / nodes of each run)" in assumed, assumed


def test_every_bundled_log_cut_mid_row_keeps_its_rows_and_says_one_line():
    """The reader on each timed bundled log cut in its last row: no error, the complete rows,
    one notice naming the line, and a finite median error."""
    from costmodel.reference import reference_dir, reference_id
    from costmodel.validation.compare import cluster_predictor, compare
    from costmodel.validation.nccl_tests import why_not_timed

    checked = 0
    for path in sorted(reference_dir("nccl-tests").glob("*.txt")):
        if why_not_timed(path.read_text(errors="replace")) is not None:
            continue
        raw, line, complete = _cut_mid_row(reference_id(path.name))
        read = read_log(raw, path.name)
        # 23b's dtypes are said in a line of their own (compare.reduction_note)
        (notice,) = [n for n in read.notices if not n.startswith("dtype/redop: ")]
        assert notice.startswith(f"line {line}: the log ends in the middle"), path.name
        assert len(read.rows) == 2 * complete, path.name
        table = compare(read.rows, cluster_predictor(read.cluster), model="nccl")
        assert table["rel_error"].abs().median() < float("inf"), path.name
        checked += 1
    assert checked >= 30


# --- 5. the launched job's own output, kept beside the results ----------------------------
# `validate torch` and `validate nccl-tests run` keep every attempt's stdout and stderr in
# <results folder>/logs/, name that file in their one-line errors and in each row's "log".


#: <key>.<attempt>.log, the attempt as runner.attempt_stamp names it
STAMP = r"\d{8}T\d{6}\.\d{9}-\d+"


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def test_run_logged_tees_stdout_and_stderr_and_keeps_both_in_one_log(tmp_path, capfd):
    job = _script(
        tmp_path / "job.sh",
        "#!/bin/sh\necho 'out one'\necho 'err one' >&2\nprintf 'no newline at the end'\nexit 3\n",
    )
    log = tmp_path / "logs" / "a.log"
    assert runner.run_logged([str(job), "x y"], log) == 3  # the job's exit code
    seen = capfd.readouterr()
    assert seen.out == "out one\nno newline at the end"  # stdout to stdout, as it came
    assert seen.err == "err one\n"  # and stderr to stderr
    text = log.read_text()
    assert text.splitlines()[0] == f"# costmodel: {job} 'x y'"  # the command, quoted
    # whole lines of both streams; a last line without newline is kept, ended in the log
    assert sorted(text.splitlines()[1:]) == ["err one", "no newline at the end", "out one"]


def test_run_logged_never_overwrites_a_file_and_keeps_long_lines_whole(tmp_path, capfd):
    log = tmp_path / "mine.log"
    log.write_text("the user's\n")
    with pytest.raises(FileExistsError):
        runner.run_logged(["true"], log)
    assert log.read_text() == "the user's\n"
    # 1 MB without a newline, then more: more than one read, the log gets every byte in order
    job = _script(
        tmp_path / "long.py",
        f"#!{sys.executable}\nimport sys\nsys.stdout.write('a' * 1_000_000 + 'END\\n')\n"
        "print('next')\n",
    )
    long = tmp_path / "long.log"
    assert runner.run_logged([str(job)], long) == 0
    body = long.read_text().split("\n", 1)[1]
    assert body == "a" * 1_000_000 + "END\nnext\n"
    assert capfd.readouterr().out == body


def test_a_runner_killed_mid_job_leaves_the_log_written_so_far(tmp_path):
    """The log is written as the job prints, not at its end: SIGKILL to the runner (an
    out-of-memory kill, a node lost) leaves the lines printed before it."""
    pid_file = tmp_path / "job.pid"
    job = _script(
        tmp_path / "job.sh",
        f"#!/bin/sh\necho 'step 1 done'\necho $$ > {pid_file}\nexec sleep 60\n",
    )
    log = tmp_path / "logs" / "k.log"
    code = (
        "import sys; from costmodel.validation.runner import run_logged; "
        f"run_logged([{str(job)!r}], {str(log)!r})"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not (log.is_file() and "step 1 done" in log.read_text()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the line never reached the log"
            time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=30)
        assert "step 1 done\n" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        deadline = time.monotonic() + 10
        while not pid_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_file.is_file():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        if proc.stderr is not None:
            proc.stderr.close()


def test_ctrl_c_stops_the_job_and_keeps_its_log(tmp_path):
    """An interrupt of the runner (Ctrl-C; KeyboardInterrupt) stops the job it started, none
    left running, and the log keeps what the job printed."""
    pid_file = tmp_path / "job.pid"
    job = _script(tmp_path / "job.sh", f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    log = tmp_path / "i.log"
    code = (  # SIGINT as a terminal delivers it: a runner started in the background of a
        # non-interactive shell (CI's `... &`) inherits SIGINT ignored, and Python then installs
        # no KeyboardInterrupt handler
        "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from costmodel.validation.runner import run_logged\n"
        f"try:\n    run_logged([{str(job)!r}], {str(log)!r})\n"
        "except KeyboardInterrupt:\n    print('interrupted')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        job_pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert out.strip() == b"interrupted"
        assert not Path(f"/proc/{job_pid}").exists() or "Z" in _state(job_pid)
        assert log.read_text().startswith("# costmodel: ")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _state(pid: int) -> str:
    """The process state letter of ``pid`` (Z: a zombie, gone but not yet reaped)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return ""


# --- 5a. validate torch, with a fake torchrun in place of the interpreter's -----------------
FAKE_TORCHRUN = """#!{python}
import json, os, sys
argv = sys.argv[1:]
def value(flag):
    return argv[argv.index(flag) + 1]
print("fake torchrun: starting 2 ranks", file=sys.stderr, flush=True)
print("[rank0]: hello from rank 0", flush=True)
mode = os.environ["FAKE_TORCH_MODE"]
if mode == "fail":
    print("[rank1]: RuntimeError: rank 1 died", file=sys.stderr)
    sys.exit(3)
if mode == "rows":
    row = {{"kind": "collective", "op": "all_reduce", "size_bytes": 4096, "ranks": 2,
           "nodes": 1, "backend": "gloo", "run_key": "torch@00000000",
           "attempt": value("--attempt"), "log": value("--job-log")}}
    with open(value("-o"), "a") as out:
        out.write(json.dumps(row) + "\\n")
"""


@pytest.fixture
def fake_torch(tmp_path, monkeypatch):
    """`validate torch` launches ``sys.executable -m torch.distributed.run ...``: the
    interpreter is this fake, which prints as torchrun and a rank would and writes a row,
    nothing, or fails (FAKE_TORCH_MODE)."""
    pytest.importorskip("torch")  # validate torch refuses to start without it
    fake = _script(tmp_path / "bin" / "python", FAKE_TORCHRUN.format(python=sys.executable))
    monkeypatch.setattr(sys, "executable", str(fake))
    return lambda mode: monkeypatch.setenv("FAKE_TORCH_MODE", mode)


def _torch(out: Path, *extra: str):
    return run(
        "validate", "torch", "--backend", "gloo", "--ops", "all_reduce", "-o", str(out), *extra
    )


def _only_log(folder: Path, pattern: str) -> Path:
    (log,) = folder.iterdir()
    assert re.fullmatch(pattern, log.name), log.name
    return log


def test_validate_torch_keeps_the_jobs_output_and_its_rows_name_the_log(tmp_path, fake_torch):
    fake_torch("rows")
    out = tmp_path / "t.jsonl"
    result = _torch(out)
    assert result.exit_code == 0, result.stderr
    assert "[rank0]: hello from rank 0" in result.stdout  # still streamed, as before
    assert "fake torchrun: starting 2 ranks" in result.stderr
    log = _only_log(tmp_path / "logs", rf"torch\.({STAMP})\.log")
    text = log.read_text()
    assert "[rank0]: hello from rank 0\n" in text and "fake torchrun: starting 2 ranks\n" in text
    assert text.startswith("# costmodel: ") and "torch.distributed.run" in text.splitlines()[0]
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert row["log"] == str(log)  # the attempt that produced the row, by its log
    assert log.name == f"torch.{row['attempt']}.log"


def test_validate_torch_failed_or_empty_job_names_its_log_in_one_line(tmp_path, fake_torch):
    out = tmp_path / "t.jsonl"
    fake_torch("fail")
    result = _torch(out)
    assert result.exit_code == 3  # the job's own exit code, as before
    log = _only_log(tmp_path / "logs", rf"torch\.{STAMP}\.log")
    assert result.stderr.strip().splitlines()[-1] == (
        f"costmodel: error: torch job failed (exit 3); its output, torchrun's and each rank's, "
        f"is in {log}"
    )
    assert "[rank1]: RuntimeError: rank 1 died" in log.read_text()
    log.unlink()
    fake_torch("none")
    result = _torch(out)
    assert result.exit_code == 1
    log = _only_log(tmp_path / "logs", rf"torch\.{STAMP}\.log")
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("costmodel: error: torch job: no rows written") and last.endswith(
        f"are in {log}"
    )
    assert "hello from rank 0" in log.read_text()


def test_validate_torch_leaves_the_users_files_alone(tmp_path, fake_torch):
    fake_torch("rows")
    out = tmp_path / "t.jsonl"
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "notes.txt").write_text("the user's\n")
    assert _torch(out).exit_code == 0
    assert (logs / "notes.txt").read_text() == "the user's\n"
    assert len(list(logs.glob("torch.*.log"))) == 1
    # a file named logs beside the results: refused before anything runs, the file untouched
    other = tmp_path / "b"
    other.mkdir()
    (other / "logs").write_text("mine\n")
    one_line_error(_torch(other / "t.jsonl"), "--output", "logs", "is a file")
    assert (other / "logs").read_text() == "mine\n" and not (other / "t.jsonl").exists()
    # the job options the command sets itself, under any abbreviation argparse takes
    for extra in (["--job-log", "x.log"], ["--att", "1"]):
        one_line_error(_torch(tmp_path / "c.jsonl", "--", *extra), "set by validate torch")
    assert len(list(logs.glob("torch.*.log"))) == 1  # nothing launched


# --- 5b. validate nccl-tests run, with fake srun and binaries on PATH ------------------------
SOCKET_DEBUG = "node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"


def _nccl_tests(tmp_path: Path, monkeypatch, binary: str) -> Path:
    """A fake all_reduce_perf (``binary``: its shell body) and a fake srun that runs the
    command after its own options, both on PATH; returns the build folder."""
    build = tmp_path / "build"
    _script(build / "all_reduce_perf", "#!/bin/sh\n" + binary)
    _script(
        tmp_path / "bin" / "srun",
        '#!/bin/sh\necho "fake srun: $*" >&2\n'
        'while [ $# -gt 0 ]; do case "$1" in *_perf) break;; *) shift;; esac; done\nexec "$@"\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return build


def _sweep(out: Path, build: Path, *extra: str):
    return run(
        "validate",
        "nccl-tests",
        "run",
        "-o",
        str(out),
        "--build-dir",
        str(build),
        "--launcher",
        "srun",
        "--nodes",
        "2",
        "--gpus",
        "8",
        "--no-progress",
        *extra,
    )


def test_a_sweeps_log_is_kept_named_in_its_rows_and_compare_still_sees_the_socket_fallback(
    tmp_path, monkeypatch
):
    reference = reference_path("06a")  # a 2 x 8 H100 run, printed with NCCL's socket lines
    build = _nccl_tests(
        tmp_path, monkeypatch, f"printf '%s' '{SOCKET_DEBUG.strip()}'\necho\ncat '{reference}'\n"
    )
    out = tmp_path / "run"
    result = _sweep(out, build)
    assert result.exit_code == 0, result.output
    log = _only_log(out / "logs", rf"all_reduce\.({STAMP})\.log")
    text = log.read_text()
    assert "fake srun: -N 2 --ntasks-per-node 8" in text  # the launcher's own output too
    assert SOCKET_DEBUG in text and reference.read_text().strip() in text
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert rows and {r["log"] for r in rows} == {str(log)}
    # the kept log and the results file both still say it looks like the socket fallback
    for source in (log, out / "results.jsonl"):
        said = run(
            "validate",
            "compare",
            str(source),
            "--cluster",
            "dell-xe9680-h100",
            "--tolerance",
            "1000",
        )
        hits = [x for x in said.stderr.splitlines() if "TCP-socket fallback" in x]
        assert len(hits) == 1 and "NET/Socket" in hits[0], (source, said.stderr)


@pytest.mark.parametrize(
    ("binary", "timeout", "reason"),
    [
        ("echo 'rank 3: cudaErrorNoDevice'\nexit 5\n", "30s", "exit code 5"),
        ("echo '# nccl-tests started, printed no row'\n", "30s", "no nccl-tests result rows found"),
        ("echo 'warming up'\nexec sleep 30\n", "1s", "no exit after 1 s"),
    ],
    ids=["failed", "nothing-measured", "timeout"],
)
def test_a_failed_sweep_run_names_its_log_in_its_line(
    tmp_path, monkeypatch, binary, timeout, reason
):
    build = _nccl_tests(tmp_path, monkeypatch, binary)
    out = tmp_path / "run"
    result = _sweep(out, build, "--timeout", timeout)
    assert result.exit_code == 1
    log = _only_log(out / "logs", rf"all_reduce\.{STAMP}\.log")
    (line,) = [x for x in result.output.splitlines() if x.startswith("  all_reduce: ")]
    assert reason in line and str(log) in line, line
    first = binary.splitlines()[0].removeprefix("echo '").removesuffix("'")
    assert first in log.read_text()


def test_a_dry_run_writes_nothing(tmp_path, monkeypatch):
    build = _nccl_tests(tmp_path, monkeypatch, "exit 0\n")
    out = tmp_path / "run"
    result = _sweep(out, build, "--dry-run")
    assert result.exit_code == 0 and "all_reduce_perf" in result.stdout
    assert not out.exists()


# --- 5c. a real job: two gloo ranks on this machine --------------------------------------
@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_real_gloo_jobs_log_holds_the_ranks_output(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "t.jsonl"
    args = ("validate", "torch", "--nproc", "2", "--backend", "gloo", "--ops", "all_reduce")
    args += ("--min-bytes", "4KiB", "--max-bytes", "8KiB", "--iters", "2", "-o", str(out))
    result = run(*args, "--", "-v")
    assert result.exit_code == 0, result.stderr
    log = _only_log(tmp_path / "logs", rf"torch\.{STAMP}\.log")
    text = log.read_text()
    # rank 0's own lines (-v), unbuffered through the pipe, as they reached the terminal
    lines = [x for x in text.splitlines() if re.match(r"all_reduce\s+\d+ B\s", x)]
    assert len(lines) == 2 and all(x in result.stdout for x in lines), text
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2 and {r["log"] for r in rows} == {str(log)}
    assert {f"torch.{r['attempt']}.log" for r in rows} == {log.name}
