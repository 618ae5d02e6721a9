"""A cluster engineer's logs, as the validation harness reads them: real logs transformed the
way launchers, log collectors and shell habits transform them (every measured number is a
bundled log's own; nothing here is a measurement of its own).

- Tags stacked by two tools (``kubectl logs --prefix`` of an MPI Operator launcher running
  ``mpirun --tag-output``: ``[pod/launcher/mpi] [1,0]<stdout>:``) are stripped as one tag is;
  two launcher tasks' rows under such a collector tag are refused as without it.
- Runs of other ops concatenated under one op's file name are each said (op_disagreement).
- Swapped rows are said out of order, not also as rows missing.
- A results file appended to itself reads each row once (two joined files' byte-order marks
  too); copies of a log in a folder are compared once.
- calibrate on 0 B rows only says so, not ``--min-bytes``.
- A results row whose op is no collective's name is one line naming it.
- A -J JSON file cut off is said cut off.
- Each run of a several-binary log takes the op of the command line before it.
- moreutils' ``ts`` stamps are stripped; a row without a time is said to have none.
"""

from __future__ import annotations

import pytest

from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests
from tests._paths import NCCL_TESTS

#: a 2 x 8 H100 all_reduce sweep with its device list (hosts) and footer
H100_2X8 = next(NCCL_TESTS.glob("06a_*")).read_text(encoding="utf-8")
MEASURED = ["size_bytes", "placement", "time_s", "busbw_bytes_per_s", "ranks", "nodes"]


def _tagged(text: str, tag: str) -> str:
    return "".join(f"{tag}{line}\n" for line in text.splitlines())


@pytest.mark.parametrize(
    "tag",
    [
        "[pod/nccl-launcher/mpi] [1,0]<stdout>:",
        "[pod/nccl-launcher/mpi] 2026-12-05T02:00:00.5Z [1,0]<stdout>:",
        "0: 0: ",
    ],
)
def test_tags_stacked_by_a_collector_over_a_launcher_read_as_the_plain_log(tag):
    plain = parse_nccl_tests(H100_2X8, op="all_reduce")
    tagged = parse_nccl_tests(_tagged(H100_2X8, tag), op="all_reduce")
    assert len(tagged) == len(plain) == 64
    assert tagged[MEASURED].equals(plain[MEASURED])
    assert set(tagged["nodes"]) == {2} and set(tagged["gpus_per_node"]) == {8}


def test_two_launcher_tasks_under_a_collector_tag_are_refused_as_without_it():
    lines = H100_2X8.splitlines()
    both = "".join(
        f"[pod/nccl-launcher/mpi] [1,{task}]<stdout>:{line}\n" for line in lines for task in (0, 1)
    )
    with pytest.raises(NcclTestsParseError, match=r"result rows from 2 launcher tasks"):
        parse_nccl_tests(both, op="all_reduce")


def _body(name: str) -> str:
    """A bundled log without its provenance comment block (so it is not the bundled run)."""
    text = next(NCCL_TESTS.glob(f"{name}_*")).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("# ----"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("# ----"))
    return "".join(lines[end + 1 :])


def test_runs_of_other_ops_concatenated_under_one_ops_file_name_are_each_said():
    """Five logs of an nccl-tests too old to name its op (all_reduce, all_gather, broadcast,
    reduce, alltoall on 2 RTX 2080 Ti), concatenated into one file named for all_reduce: every
    run is compared as all_reduce, and the four whose columns say another op are said
    (only the first run's row was looked at, so the file read without a word); runs that say
    the same (all_gather's and alltoall's columns alike) are said once, naming their lines."""
    from costmodel.validation.logread import read_log

    text = "".join(_body(n) for n in ("09a", "09b", "09c", "09d", "09e"))
    read = read_log(text, "sweep_allreduce.txt", strict=False)
    assert set(read.rows["op"]) == {"all_reduce"}
    said = [n for n in read.notices if n.startswith("op: all_reduce from the file name wins")]
    assert len(said) == 3, read.notices
    assert "in the runs from lines " in said[0], said[0]
    assert "fit all_gather or all_to_all, not all_reduce" in said[0]
    assert "fit broadcast, not all_reduce" in said[1]
    assert "fit reduce, not all_reduce" in said[2]
    assert all("in the run from line " in n for n in said[1:])
    # one run alone is said as before, without a run's line
    one = read_log(_body("09c"), "bcast_allreduce.txt", strict=False)
    assert [n for n in one.notices if "wins" in n] == [
        "op: all_reduce from the file name wins, but its redop/root columns (redop none, "
        "root 0) fit broadcast, not all_reduce: the rows are compared as all_reduce; check "
        "the log or set the op (`op`)"
    ]


def _result_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if line[:1] == " " and "float" in line]


def test_swapped_rows_are_said_out_of_order_not_also_missing():
    """Two rows swapped (a hand edit, rows sorted by another column): each is said out of
    order, and no size is said missing, since none is; read in file order, each swap was also
    a gap ("size 33554432 follows 8388608 ...: rows are missing")."""
    lines = H100_2X8.splitlines()
    at = _result_lines(H100_2X8)
    a, b = at[20], at[21]
    lines[a], lines[b] = lines[b], lines[a]
    rows = parse_nccl_tests("\n".join(lines) + "\n", op="all_reduce")
    said = [w["message"] for w in rows.attrs["warnings"]]
    assert any("sizes out of order: 8388608 after 16777216" in m for m in said), said
    assert not any("rows are missing" in m for m in said), said
    assert len(rows) == 64
    # a row really missing is still said, named by the size after the gap
    lines = H100_2X8.splitlines()
    del lines[at[20]]
    rows = parse_nccl_tests("\n".join(lines) + "\n", op="all_reduce")
    assert [w["message"] for w in rows.attrs["warnings"] if "missing" in w["message"]] == [
        "size 16777216 follows 4194304 (line "
        + str(at[19] + 1)
        + "), the header's step is 2 (factor): rows are missing"
    ]


def test_a_results_file_appended_to_itself_reads_each_row_once(tmp_path):
    """A torch job's results.jsonl (an H200 run's, bundled with the tests) appended twice into
    one file (`cat results.jsonl >> all.jsonl` run twice): each row is read once and said,
    on validate compare's, calibrate's and the Validate page's reader; the copies were read as
    37 more measurements, each row counted twice in the median and the fit."""
    from costmodel.validation.logread import read_results
    from costmodel.validation.runner import load_results
    from tests._paths import ROOT

    once = ROOT / "tests" / "data" / "gpu_check_h200_2026-12-04" / "torch.jsonl"
    twice = tmp_path / "all.jsonl"
    twice.write_bytes(once.read_bytes() * 2)
    with pytest.warns(UserWarning, match="37 lines repeat earlier lines exactly"):
        rows = load_results(twice)
    assert rows.equals(load_results(once))
    read = read_results(twice, calibrated=True)
    assert len(read.rows) == 37
    assert any(
        n.endswith(
            "37 lines repeat earlier lines exactly (line 38 is line 1's row again: the file "
            "appended to itself, or a run's rows appended twice?): each row is read once"
        )
        for n in read.notices
    ), read.notices


def test_copies_of_a_log_in_a_folder_are_compared_once(tmp_path):
    """A folder of logs holding a log, its backup (``.bak``) and a copy saved with Windows
    line endings: each copy's rows are the log's, so the folder is compared (and calibrated)
    as the one log, each copy named on stderr; the three were pooled, every row counted three
    times (192 rows where the log has 64)."""
    import json

    from tests._cli import run

    folder = tmp_path / "logs"
    folder.mkdir()
    text = _body("06a")
    (folder / "h100_allreduce.txt").write_text(text, newline="")
    (folder / "h100_allreduce.txt.bak").write_text(text, newline="")
    (folder / "h100_allreduce_copy.txt").write_text(text.replace("\n", "\r\n"), newline="")
    got = run("validate", "compare", str(folder), "--json")
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout)["rows"] == 64
    copies = [x for x in got.stderr.splitlines() if "(a copy of it?)" in x]
    assert copies == [
        f"costmodel: warning: {name}: the same rows as h100_allreduce.txt (a copy of it?): "
        "left out, its rows would count twice"
        for name in ("h100_allreduce.txt.bak", "h100_allreduce_copy.txt")
    ]
    fitted = run("calibrate", str(folder), "-o", str(tmp_path / "fit.toml"), "--json")
    assert fitted.exit_code == 0, fitted.stderr
    assert fitted.stderr.count("(a copy of it?)") == 2
    alone = run("calibrate", str(folder / "h100_allreduce.txt"), "-o", str(tmp_path / "one.toml"))
    assert alone.exit_code == 0, alone.stderr
    # the same fit, term for term (but the names of its source, its time and its own name)

    def terms(name: str) -> list[str]:
        text = (tmp_path / name).read_text()
        return [x for x in text.splitlines() if not x.startswith(("source", "created", "name"))]

    assert terms("fit.toml") == terms("one.toml")


def test_calibrate_on_a_log_of_0_byte_rows_only_says_so_not_min_bytes(tmp_path):
    """An all_gather log on 4 H100s cut off after its three 0 B rows (nccl-tests prints them
    while a size is below one element per rank): calibrate said "--min-bytes: no usable
    collective rows from 1 B", an option the user never gave; it says what the rows are."""
    from tests._cli import one_line_error, run

    text = _body("13b")
    cut = text[: text.index("\n          64 ") + 1]
    assert cut.rstrip().endswith("0       0")  # the last 0 B row, complete
    log = tmp_path / "h100_allgather.txt"
    log.write_text(cut)
    line = one_line_error(
        run("calibrate", str(log), "-o", str(tmp_path / "c.toml")),
        "every timed collective row is of 0 B",
        "the log ends before its first size above 0 B",
    )
    assert "--min-bytes" not in line
    assert not (tmp_path / "c.toml").exists()


@pytest.mark.parametrize("op", ["allreduce", "AllReduce", None])
def test_a_results_row_with_an_op_no_collective_has_is_one_line_naming_it(tmp_path, op):
    """A results file of the user's own script in the harness's format, its op spelled
    ``allreduce``: the row was read as a collective and said far from it (a gloo run compared
    with its calibration: "calibration 'cal' has no fit for an intra-node allreduce"), or the
    file refused for something else; validate compare and calibrate now refuse the row in one
    line naming the file, the op and the allowed names (here an H200 run's rows)."""
    import json

    from tests._cli import one_line_error, run
    from tests._paths import ROOT

    rows = (ROOT / "tests" / "data" / "gpu_check_h200_2026-12-04" / "torch.jsonl").read_text()
    records = [json.loads(x) for x in rows.splitlines()]
    first = next(i for i, r in enumerate(records) if r.get("kind") == "collective")
    records[first]["op"] = op
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    said = "no op" if op is None else f"op {op!r}"
    for got in (
        run("validate", "compare", str(path), "--cluster", "hgx-h200"),
        run("calibrate", str(path), "-o", str(tmp_path / "c.toml")),
    ):
        line = one_line_error(got, f"a collective row (size 4,096 B) has {said}; allowed: ")
        assert "all_reduce, all_gather, reduce_scatter, broadcast" in line
        assert "--op" not in line
    # a row of another kind appended to the same file (validate compute's, no op) is left
    # alone, as before: the file's collectives are read
    records[first]["op"] = "all_reduce"
    compute = (ROOT / "tests" / "data" / "gpu_check_h200_2026-12-04" / "compute.jsonl").read_text()
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + compute)
    from costmodel.validation.logread import read_results

    assert len(read_results(path, cluster="hgx-h200").rows) == len(records) + len(
        compute.splitlines()
    )


def test_a_json_file_cut_off_is_said_cut_off():
    """nccl-tests' -J output cut off (the run killed while writing it; the format fixture of
    tests/data): "invalid JSON: Expecting ',' delimiter" or "Unterminated string starting at"
    named a line and not the cause; the cut is said, with what to do. A document that closes
    but is broken otherwise is said as before."""
    from tests._paths import ROOT

    text = (ROOT / "tests" / "data" / "nccl_tests_synthetic_v3.json").read_text(encoding="utf-8")
    for end in (len(text) // 2, len(text) - 5, len(text.rstrip()) - 1):
        with pytest.raises(NcclTestsParseError) as info:
            parse_nccl_tests(text[:end], source="out.json")
        assert "invalid JSON: the file ends with " in str(info.value)
        assert "still open" in str(info.value) and "it is cut off" in str(info.value)
    with pytest.raises(NcclTestsParseError, match=r"invalid JSON: Expecting") as info:
        parse_nccl_tests(text.replace('"size":1024,', '"size":1024', 1), source="out.json")
    assert "cut off" not in str(info.value)


#: the binaries of the five 2 x RTX 2080 Ti logs (an nccl-tests too old to name its op)
BINARIES = {
    "09a": ("all_reduce_perf", "all_reduce"),
    "09b": ("all_gather_perf", "all_gather"),
    "09c": ("broadcast_perf", "broadcast"),
    "09d": ("reduce_perf", "reduce"),
    "09e": ("alltoall_perf", "all_to_all"),
}


@pytest.mark.parametrize("before", ["# ./build/{} -b 8 -e 1G -f 2 -g 2", "+ ./build/{} -b 8 -g 2"])
def test_each_run_takes_the_op_of_the_command_line_before_it(before):
    """Five binaries run one after the other into one file, each after its command line (a
    comment, or a shell's ``set -x`` trace): each run took the op of the command line *after*
    it (all_reduce rows compared as all_gather, ...), and a trace line named no op at all
    (refused: "no X_perf command line")."""
    text = "".join(before.format(b) + "\n" + _body(n) for n, (b, _) in BINARIES.items())
    rows = parse_nccl_tests(text, strict=False)
    got = rows.groupby("run")["op"].first().tolist()
    assert got == [op for _, op in BINARIES.values()]
    assert len(rows) == sum(
        len(parse_nccl_tests(_body(n), op=op)) for n, (_, op) in BINARIES.items()
    )


@pytest.mark.parametrize(
    "stamp",
    ["Dec 05 02:00:{:02d} ", "Dec  5 02:00:{:02d}.123456 ", "2026-12-05 02:00:{:02d} ",
     "[2026-12-05 02:00:{:02d}] ", "[pod/launcher/mpi] 2026-12-05 02:00:{:02d},250 "],
)  # fmt: skip
def test_a_log_piped_through_ts_reads_as_the_plain_log(stamp):
    """nccl-tests' output piped through moreutils' ``ts`` (each line stamped ``Dec 05
    02:00:13``, or as a format string asks): refused as "no nccl-tests result rows found",
    every row "looks like a result row but cannot be read"."""
    plain = parse_nccl_tests(H100_2X8, op="all_reduce")
    lines = H100_2X8.splitlines()
    stamped = "".join(stamp.format(i % 60) + line + "\n" for i, line in enumerate(lines))
    rows = parse_nccl_tests(stamped, op="all_reduce")
    assert rows[MEASURED].equals(plain[MEASURED])
    assert rows.attrs["warnings"] == plain.attrs["warnings"]


def test_a_row_without_a_time_is_said_to_have_none_not_a_time_not_above_0():
    """A row whose time reads N/A (a hand-edited or damaged log): left out of the errors, as
    before, and said "no time measured"; it was said "time not > 0", a time it never had."""
    from costmodel.validation.compare import compare

    rows = parse_nccl_tests(H100_2X8, op="all_reduce")
    lines = H100_2X8.splitlines()
    at = _result_lines(H100_2X8)[25]
    fields = lines[at].split()
    fields[5] = "N/A"  # the out-of-place time
    lines[at] = "  ".join(fields)
    damaged = parse_nccl_tests("\n".join(lines) + "\n", op="all_reduce")
    out = compare(damaged, lambda op, m, n, nodes, **kw: m / 1e9 + 1e-5)
    blank = out[out.time_s.isna()]
    assert len(blank) == 1 and len(damaged) == len(rows)
    assert blank.note.tolist() == ["no time measured (N/A; not compared)"]
    assert blank.rel_error.isna().all()


def test_two_results_files_each_with_a_byte_order_mark_joined_read_whole(tmp_path):
    """Two results files each saved with a UTF-8 byte-order mark (Windows tools), joined into
    one (`cat a.jsonl b.jsonl`): the second mark sits at the head of a row in the middle of the
    file, which was refused as "line 20 is not JSON"; every row is read."""
    from costmodel.validation.runner import load_results
    from tests._paths import ROOT

    lines = (ROOT / "tests" / "data" / "gpu_check_h200_2026-12-04" / "torch.jsonl").read_bytes()
    rows = lines.splitlines(keepends=True)
    bom = b"\xef\xbb\xbf"
    joined = tmp_path / "all.jsonl"
    joined.write_bytes(bom + b"".join(rows[:19]) + bom + b"".join(rows[19:]))
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(lines)
    assert load_results(joined).equals(load_results(plain))


@pytest.mark.parametrize("after", ["+ ./build/all_gather_perf -b 8", "# next: ./all_gather_perf"])
def test_a_command_line_after_the_last_run_names_no_runs_op(after):
    """The job's next command traced after the rows (``set -x``; the job killed before that
    binary printed anything), in a log named for all_reduce: the rows were compared as
    all_gather, "from a command line in the log"; they are all_reduce, from the file name."""
    from costmodel.validation.logread import read_log

    read = read_log(_body("06a") + after + "\n", "h100_allreduce.txt", strict=False)
    assert (read.op, read.op_source) == ("all_reduce", "the file name")
    assert not [n for n in read.notices if "wins" in n]
