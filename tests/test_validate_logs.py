"""One reading of an nccl-tests log on both surfaces (``validate compare`` and the Validate page):
a log cut mid-row, the launch line of each MPI and Slurm launcher, and an op its sources
disagree on. Each test drives the CLI in-process and the page headless (AppTest's uploader, the
bytes a browser sends), and checks they say the same one line."""

from __future__ import annotations

import json
import logging

import pytest

from costmodel.reference import reference_path
from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests
from tests._cli import run
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
    assert notice in shown, shown
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
    assert json.loads(result.stdout)["warnings"] == [notice]
    assert f"costmodel: warning: {notice}" in result.stderr.splitlines()

    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    at.selectbox(key="val_cluster").set_value("dgx-h100").run()
    assert_clean(at)
    assert notice in [_text(w.value) for w in at.warning]


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
        (notice,) = read.notices
        assert notice.startswith(f"line {line}: the log ends in the middle"), path.name
        assert len(read.rows) == 2 * complete, path.name
        table = compare(read.rows, cluster_predictor(read.cluster), model="nccl")
        assert table["rel_error"].abs().median() < float("inf"), path.name
        checked += 1
    assert checked >= 30
