"""Fifth QA pass of the validation harness, as a cluster user drives it: the torch job on CPU
(gloo) for real, the output of a job launched under srun, bad logs, and calibrating a preset
from logs. Each test names the defect it guards against; tests/test_validate_qa.py to _qa4.py
hold the earlier passes."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- 1. the torch job's ranks aborted at exit after --ddp ------------------------------------------
@pytest.mark.torch
@pytest.mark.timeout(120)
def test_the_ddp_wrappers_are_gone_before_the_process_group_is_destroyed(tmp_path):
    """`validate torch --ddp` failed about one run in five on a loaded 2-core machine with every
    row written: a rank aborted at exit ("terminate called without an active exception",
    SIGABRT; a core dump showed a gloo worker thread releasing a collective's tensors while the
    interpreter finalized). The DDP wrappers sit in reference cycles and kept the process group
    alive past destroy_process_group, so gloo's threads outlived it. The race itself is not
    reproducible on demand; its cause is: with the garbage collector off (as between its
    automatic runs), a DDP wrapper was still alive when the job destroyed the process group (1),
    and is collected first now (0). One rank, gloo, in a child process."""
    probe = textwrap.dedent(
        """
        import gc, os, sys
        gc.disable()
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1])
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from costmodel.validation import torch_bench as tb
        seen, real = [], dist.destroy_process_group
        def spy(*a, **k):
            seen.append(sum(type(o) is DDP for o in gc.get_objects()))
            return real(*a, **k)
        dist.destroy_process_group = spy
        bench = tb._Bench(tb.parse_args([
            "-o", sys.argv[2], "--backend", "gloo", "--ops", "none", "--ddp",
            "--ddp-params", "10K", "--ddp-width", "16", "--ddp-steps", "1",
            "--accumulation", "1"]))
        bench.ddp()
        bench.close()
        print("alive", seen)
        """
    )
    out = tmp_path / "rows.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(_free_port()), str(out)],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "alive [0]" in done.stdout, done.stdout
    assert len(out.read_text().splitlines()) == 1  # the one DDP step was written


# --- 2. rows a calibration cannot predict, groups it could not fit --------------------------------
def _results_of(path: Path, *prefixes: str) -> Path:
    """A results file holding the bundled logs ``prefixes``, parsed and appended by the
    runner's own writer (what `validate nccl-tests run` leaves after one run per op)."""
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results
    from tests._paths import NCCL_TESTS

    for prefix in prefixes:
        log = next(NCCL_TESTS.glob(f"{prefix}_*"))
        append_results(path, read_nccl_tests(log), source="nccl-tests", run_key=prefix)
    return path


def test_compare_says_the_rows_a_calibration_could_not_predict(tmp_path):
    """A calibration fitted on all-reduce, compared with a results file of all-reduce and
    all-gather rows: the all-gather rows were left out of the errors, the summary and the
    verdict without a word (text: "over 62 rows", and "ok"), as if the file held only the
    all-reduce. Now one warning line says how many rows were not predicted and why."""
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._cli import run
    from tests._paths import NCCL_TESTS

    cal = tmp_path / "ar.toml"
    log = next(NCCL_TESTS.glob("13a_*"))
    assert run("calibrate", str(log), "-o", str(cal), "--nodes", "1").exit_code == 0
    results = _results_of(tmp_path / "results.jsonl", "13a", "13b")
    gathered = int((read_nccl_tests(next(NCCL_TESTS.glob("13b_*"))).size_bytes > 0).sum())
    got = run("validate", "compare", str(results), "--calibration", str(cal))
    warned = [x for x in got.stderr.splitlines() if "not predicted" in x]
    assert len(warned) == 1, got.stderr
    assert warned[0].startswith(f"costmodel: warning: {gathered} of ")
    assert "no fit for an intra-node all_gather" in warned[0] and f"({gathered} rows)" in warned[0]
    as_json = run("validate", "compare", str(results), "--calibration", str(cal), "--json")
    import json

    doc = json.loads(as_json.stdout)
    assert doc["rows"] - doc["predicted"] >= gathered
    assert any("not predicted" in w for w in doc["warnings"])
    # a cluster preset predicts every row: nothing to say
    plain = run("validate", "compare", str(results), "--cluster", "dgx-h100", "--nodes", "1")
    assert "not predicted" not in plain.stderr


def test_calibrate_says_each_group_it_could_not_fit(tmp_path):
    """Bundled 13d pins NCCL_PROTO to LL, LL128 and Simple at one size each: no group has the
    two sizes a line needs. The text output listed the fitted groups only (the reasons were in
    --json's "skipped"), and the three reasons read alike. Now each is one warning line on
    stderr naming its protocol and level."""
    from tests._cli import run
    from tests._paths import NCCL_TESTS

    log = next(NCCL_TESTS.glob("13d_*"))
    got = run("calibrate", str(log), "-o", str(tmp_path / "c.toml"), "--nodes", "1")
    lines = [x for x in got.stderr.splitlines() if "not fitted" in x]
    assert len(lines) == len(set(lines)) == 3, got.stderr
    # each protocol in the lower case every fixed-list name is echoed in (the fit table's and
    # the written file's spelling)
    for proto in ("ll", "ll128", "simple"):
        assert any(f"(protocol {proto}, level intra)" in x for x in lines), lines
    assert all("need at least 2 distinct sizes" in x for x in lines)


# --- 3. a torch job launched under srun: its output is Slurm's .out file ---------------------------
#: lines NCCL prints with NCCL_DEBUG=INFO when the socket transport is the network and carries
#: a connection (as the runner tests' fake binaries print NCCL lines; on one node, as here, the
#: first alone is no sign: tests/test_validate_qa20.py); gloo prints none, so the test appends them
SOCKET_LINE = (
    "node01:4242:4250 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    "node01:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0\n"
)


def _srun(folder: Path, out: Path, *extra: str) -> None:
    """torch_bench as `srun -n 2` starts it inside `sbatch` (Slurm's variables, two ranks on
    one node), the ranks' output appended to Slurm's default output file, as slurmstepd
    writes it."""
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        clean.pop(name, None)
    clean["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    step = {
        "SLURM_JOB_ID": "1234",
        "SLURM_SUBMIT_DIR": str(folder),
        "SLURM_NTASKS": "2",
        "SLURM_NODEID": "0",
        "SLURM_STEP_TASKS_PER_NODE": "2",
        "SLURM_NNODES": "1",
        "MASTER_PORT": str(_free_port()),
    }
    argv = [sys.executable, "-m", "costmodel.validation.torch_bench", "-o", str(out)]
    argv += ["--backend", "gloo", "--ops", "all_reduce", "--min-bytes", "4KiB"]
    argv += ["--max-bytes", "8KiB", "--iters", "2", "-v", *extra]
    with (folder / "slurm-1234.out").open("a") as log:
        ranks = [
            subprocess.Popen(
                argv,
                env={**clean, **step, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=folder,
            )
            for r in (0, 1)
        ]
        codes = [p.wait(timeout=100) for p in ranks]
    assert codes == [0, 0], (folder / "slurm-1234.out").read_text()[-2000:]


@pytest.mark.torch
@pytest.mark.timeout(180)
def test_a_job_launched_under_srun_names_slurms_output_file_and_compare_reads_it(tmp_path):
    """A torch job launched with srun inside sbatch prints only to Slurm's output file; its
    rows named no log, so `validate compare` never saw the NCCL debug lines there (a socket
    fallback went unsaid), unlike a `validate torch` job's kept log. Now the rows name Slurm's
    default output file of the job (absolute), compare reads it, also from a copy beside the
    results file; and --job-log FILE names another one."""
    import json

    from tests._cli import run

    (tmp_path / "out").mkdir()
    (tmp_path / "slurm-1234.out").touch()  # slurmstepd creates it when the job starts
    results = tmp_path / "out" / "results.jsonl"
    _srun(tmp_path, results)
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    assert len(rows) == 2 and {r["log"] for r in rows} == {str(tmp_path / "slurm-1234.out")}
    assert "all_reduce" in (tmp_path / "slurm-1234.out").read_text()  # -v lines land there
    with (tmp_path / "slurm-1234.out").open("a") as log:
        log.write(SOCKET_LINE)
    said = run("validate", "compare", str(results), "--cluster", "dgx-h100").stderr
    assert "TCP-socket fallback: the log's NCCL debug lines" in said, said
    # the results and the .out copied elsewhere together: found beside the results file
    moved = tmp_path / "copy"
    moved.mkdir()
    for f in (results, tmp_path / "slurm-1234.out"):
        (moved / f.name).write_bytes(f.read_bytes())
    (tmp_path / "slurm-1234.out").unlink()
    said = run("validate", "compare", str(moved / "results.jsonl"), "--cluster", "dgx-h100")
    assert "TCP-socket fallback: the log's NCCL debug lines" in said.stderr

    # sbatch --output=other-%j.out: not found by name, given with --job-log (relative to the
    # job's folder, recorded absolute); one that does not exist is said, the rows still name it
    (tmp_path / "other-1234.out").touch()
    again = tmp_path / "again.jsonl"
    _srun(tmp_path, again, "--job-log", "other-1234.out")
    assert {json.loads(x)["log"] for x in again.read_text().splitlines()} == {
        str(tmp_path / "other-1234.out")
    }
    _srun(tmp_path, tmp_path / "typo.jsonl", "--job-log", "other-%j.out")
    assert "--job-log other-%j.out does not exist" in (tmp_path / "slurm-1234.out").read_text()


# --- 4. bad logs: units nccl-tests does not print, NCCL's own warnings -----------------------------
def _bundled_lines(prefix: str) -> list[str]:
    from tests._paths import NCCL_TESTS

    return next(NCCL_TESTS.glob(f"{prefix}_*")).read_text().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [("(us)", "(ms)", "(ms)"), ("(GB/s)  (GB/s)", "(MB/s)  (MB/s)", "(MB/s)")],
)
def test_a_units_line_nccl_tests_does_not_print_is_refused_naming_its_line(
    tmp_path, old, new, named
):
    """The reader takes time in us and bandwidth in GB/s whatever the units line says: a log
    whose header says (ms) (a tool of another make, an edited log) was compared with every time
    read 1000 times too small, and passed. Now it is refused on every surface, naming the line
    and the unit; nccl-tests' own units (-I's (%) too) still read."""
    from costmodel.validation.logread import read_log
    from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests
    from tests._cli import one_line_error, run

    lines = _bundled_lines("13a")
    at = next(i for i, x in enumerate(lines) if x.lstrip("# ").startswith("(B)"))
    lines[at] = lines[at].replace(old, new, 1)
    log = tmp_path / "edited_allreduce.txt"
    log.write_text("".join(lines))
    want = f"line {at + 1}: the units line names {named}"
    for strict in (True, False):
        with pytest.raises(NcclTestsParseError, match=re.escape(want)):
            parse_nccl_tests(log.read_text(), strict=strict)
    with pytest.raises(NcclTestsParseError, match=re.escape(want)):
        read_log(log.read_bytes(), log.name, strict=False)
    one_line_error(run("validate", "compare", str(log)), want)
    one_line_error(run("calibrate", str(log), "-o", str(tmp_path / "c.toml"), "--nodes", "1"), want)


def test_nccls_warn_lines_are_one_finding_naming_the_first(tmp_path):
    """NCCL WARN lines between (or inside) result rows were read past as debug text without a
    word: a run whose network operations failed and were retried compared as a clean one. Now
    one finding (validate compare's stderr, --json "findings", the Validate page's list) counts
    them and quotes the first, with its line; the rows are read as before."""
    import json

    from costmodel.validation.nccl_tests import parse_nccl_tests
    from tests._cli import run

    warn = "bm-h100-01:29262:29400 [0] NCCL WARN NET/IB : Got completion from peer with error 12\n"
    lines = _bundled_lines("06a")
    first_row = next(i for i, x in enumerate(lines) if x.strip().startswith("8 "))
    edited = lines[: first_row + 3] + [warn] + lines[first_row + 3 :]
    glued = edited[first_row + 6].rstrip("\n") + warn  # the second glued to a row's end
    edited[first_row + 6] = glued
    log = tmp_path / "warned_allreduce.txt"
    log.write_text("".join(edited))
    plain = parse_nccl_tests("".join(lines))
    df = parse_nccl_tests(log.read_text())
    assert df["time_s"].tolist() == plain["time_s"].tolist()  # every row read, unchanged
    got = run("validate", "compare", str(log), "--cluster", "dell-xe9680-h100", "--json")
    (finding,) = [f for f in json.loads(got.stdout)["findings"] if "WARN" in f]
    assert finding.startswith(f"line {first_row + 4}: NCCL printed 2 WARN lines")
    assert "'NCCL WARN NET/IB : Got completion from peer with error 12'" in finding
    text = run("validate", "compare", str(log), "--cluster", "dell-xe9680-h100")
    assert f"costmodel: warning: {finding}" in text.stderr.splitlines()
    clean = run("validate", "compare", str(_bundled_path("06a")), "--json")
    assert not [f for f in json.loads(clean.stdout)["findings"] if "WARN" in f]


def _bundled_path(prefix: str) -> Path:
    from tests._paths import NCCL_TESTS

    return next(NCCL_TESTS.glob(f"{prefix}_*"))


# --- 5. a folder of logs with one bad file ---------------------------------------------------------
def test_a_folder_of_logs_is_compared_and_calibrated_with_the_bad_file_named(tmp_path):
    """`validate compare DIR` and `calibrate DIR` refused any folder ("is a folder; give a
    file"), so a folder of nccl-tests logs (one per op, as a cluster user collects them) had to
    be compared file by file. Now every file is read alike and the rows pooled; a file that
    does not read (here: empty, and one with a units line in ms) is named with its reason and
    left out while the others are still compared, and compare then exits 1 (a validation
    that could not read a file it was given fails)."""
    import json

    from tests._cli import run

    folder = tmp_path / "logs"
    folder.mkdir()
    for prefix in ("13a", "13b"):
        path = _bundled_path(prefix)
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "empty.log").write_text("")
    lines = _bundled_lines("13c")
    at = next(i for i, x in enumerate(lines) if x.lstrip("# ").startswith("(B)"))
    lines[at] = lines[at].replace("(us)", "(ms)", 1)
    (folder / "edited_reducescatter.txt").write_text("".join(lines))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    got = run("validate", "compare", str(folder))
    assert got.exit_code == 1, got.stderr
    warned = [x for x in got.stderr.splitlines() if "not compared" in x]
    assert warned == [
        "costmodel: warning: not compared: edited_reducescatter.txt: line "
        f"{at + 1}: the units line names (ms): nccl-tests prints time in (us) and bandwidths "
        "in (GB/s), the units this reader converts from; a log of another tool or an edited "
        "one is not read",
        "costmodel: warning: not compared: empty.log: empty log: no nccl-tests output at all",
    ]
    assert "comparing 2 logs of" in got.stderr
    assert (
        got.stdout.strip().splitlines()[-1]
        == f"FAIL: 2 files of {folder} not compared (named above)"
    )
    doc = json.loads(run("validate", "compare", str(folder), "--json").stdout)
    assert [x.split(":")[0] for x in doc["skipped_files"]] == [
        "edited_reducescatter.txt",
        "empty.log",
    ]
    assert doc["passed"] is False
    # the rows are the two good logs', as each compares alone
    alone = [
        json.loads(run("validate", "compare", str(_bundled_path(p)), "--json").stdout)["rows"]
        for p in ("13a", "13b")
    ]
    assert doc["rows"] == sum(alone)

    cal = tmp_path / "c.toml"
    fitted = run("calibrate", str(folder), "-o", str(cal), "--nodes", "1", "--json")
    # two files left out: written, and exit 1, as validate compare (tests/test_validate_qa29.py)
    assert fitted.exit_code == 1, fitted.stderr
    out = json.loads(fitted.stdout)
    assert {f["op"] for f in out["fits"]} == {"all_reduce", "all_gather"}
    assert len(out["skipped_files"]) == 2 and cal.is_file()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # nothing touched

    # a folder whose logs point to two presets needs --cluster; a runner's folder its results
    other = tmp_path / "two"
    other.mkdir()
    for prefix in ("13a", "09a"):
        (other / _bundled_path(prefix).name).write_bytes(_bundled_path(prefix).read_bytes())
    from tests._cli import one_line_error

    one_line_error(
        run("validate", "compare", str(other)), "--cluster: the logs of", "give --cluster"
    )
    (other / "results.jsonl").write_text("")
    one_line_error(run("validate", "compare", str(other)), "a validate nccl-tests run folder")


# --- 6. a results file with rows of an older version -----------------------------------------------
def test_a_results_file_mixing_rows_without_a_config_is_read(tmp_path):
    """Rows without ``config`` or ``attempt`` (an older version's, before runs carried a
    configuration) followed by a current run's rows in one results file: every command that
    read it failed with ``sequence item 1: expected str instance, float found`` (pandas 3 keeps
    NaN through astype(str), and the run key's join met it). Now the older rows read as a run
    of their own and both runs are compared."""
    import json

    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results, load_results
    from tests._cli import run

    results = tmp_path / "results.jsonl"
    append_results(results, read_nccl_tests(_bundled_path("13a")), run_key="all_reduce")
    current = {"config": "0123456789abcdef", "attempt": "20261203T100000.1-1", "complete": True}
    append_results(results, read_nccl_tests(_bundled_path("13b")), run_key="ag@01234567", **current)
    df = load_results(results)
    assert sorted(set(df["op"])) == ["all_gather", "all_reduce"] and len(df) == 124
    doc = json.loads(run("validate", "compare", str(results), "--json").stdout)
    assert doc["rows"] == 124


# --- 7. one results file, rows of two devices --------------------------------------------------------
@pytest.mark.torch
@pytest.mark.timeout(180)
def test_rows_of_a_gpu_and_of_cpus_in_one_file_are_not_fitted_or_compared_as_one(tmp_path):
    """A GPU sweep's rows and a gloo job's rows appended to one results file (a test job run
    on the login node into the cluster's file): the checks read the first row's device, so
    `validate compare` took the GPU's preset for every row without a word (the CPU rows came
    out thousands of percent off) and `calibrate` fitted one all-reduce line through H100 and
    CPU rows together. Now compare refuses to pick a preset for them, warns under --cluster,
    and calibrate refuses, each naming the devices and their rows."""
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results
    from tests._cli import one_line_error, run

    results = tmp_path / "results.jsonl"
    append_results(results, read_nccl_tests(_bundled_path("13a")), run_key="13a")
    (tmp_path / "slurm-1234.out").touch()
    _srun(tmp_path, results)  # two gloo ranks: two all-reduce rows on CPUs
    one_line_error(
        run("validate", "compare", str(results)),
        "--cluster: the rows ran on several devices: h100 (62 rows), CPUs (2 rows)",
    )
    warned = run("validate", "compare", str(results), "--cluster", "dgx-h100")
    assert "does not match the log: the rows ran on several devices" in warned.stderr
    one_line_error(
        run("calibrate", str(results), "-o", str(tmp_path / "c.toml")),
        "the rows ran on several devices: h100 (31 rows), CPUs (2 rows)",
    )
    assert not (tmp_path / "c.toml").exists()


# --- 8. a preset calibrated from a log, used by predict and scenario --------------------------------
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_preset_calibrated_from_a_log_is_used_and_its_warning_said_once(tmp_path):
    """`calibrate LOG --cluster BASE` writes a preset that `predict` and `scenario` load by
    name from COSTMODEL_PRESETS (and by path) and answer with (its fitted terms move the
    prediction off the base preset's). A scenario on it said the calibration's "fitted across
    nodes only" warning six times (by name; twice by path): Python's once-per-place registry is
    reset by every catch_warnings block inside the command. The script's warning printer now
    says each message once."""
    import json
    import os

    from tests._cli import run

    presets = tmp_path / "presets"
    presets.mkdir()
    made = run(
        "calibrate",
        str(_bundled_path("06a")),
        "--cluster",
        "dell-xe9680-h100",
        "-o",
        str(presets / "my-xe.toml"),
        "--json",
    )
    assert made.exit_code == 0, made.stderr
    env = {**os.environ, "COSTMODEL_PRESETS": str(presets)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "costmodel", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    ask = ("predict", "--nodes", "2", "--sizes", "1MiB", "--json")
    mine = json.loads(cli(*ask, "--cluster", "my-xe").stdout)
    base = json.loads(cli(*ask, "--cluster", "dell-xe9680-h100").stdout)
    by_path = json.loads(cli(*ask, "--cluster", str(presets / "my-xe.toml")).stdout)
    t = [d["results"][0]["time_s"] for d in (mine, base, by_path)]
    assert t[0] == t[2] != t[1]  # the calibrated terms are used, by name and by path
    for cluster in ("my-xe", str(presets / "my-xe.toml")):
        done = cli(
            "scenario", "--arch", "llama-2-7b", "--cluster", cluster, "--nodes", "2", "--json"
        )
        assert done.returncode == 0, done.stderr
        lines = [x for x in done.stderr.splitlines() if "fitted across nodes only" in x]
        assert len(lines) == 1, done.stderr


# --- 9. the user's files: never cut, never appended to by mistake -----------------------------------
def test_a_whole_last_row_missing_its_newline_is_kept_when_rows_are_appended(tmp_path):
    """A results file whose last row is whole but lacks its final newline (an editor dropped
    it) was taken for a row cut by a killed writer: the next `validate torch` or sweep removed
    it before appending (and said a line was "cut off"). Now it is terminated and kept; a true
    fragment is still removed."""
    import json

    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results, cut_line, load_results

    results = _results_of(tmp_path / "results.jsonl", "13a")
    text = results.read_text()
    results.write_text(text.rstrip("\n"))  # the editor's save
    assert cut_line(results) is None
    append_results(results, read_nccl_tests(_bundled_path("13b")), run_key="13b")
    df = load_results(results)
    assert len(df) == 124 and json.loads(text.splitlines()[-1]) in [
        json.loads(x) for x in results.read_text().splitlines()
    ]
    results.write_text(text + '{"op": "all_re')  # a writer killed mid-row
    assert cut_line(results) == len(text.splitlines()) + 1
    append_results(results, read_nccl_tests(_bundled_path("13b")), run_key="13b")
    assert len(load_results(results)) == 124


def test_validate_torch_never_appends_to_a_file_that_is_not_a_results_file(tmp_path):
    """`validate torch -o notes.txt` (or a Slurm .out, a CSV) appended JSON rows to the user's
    file, first cutting its last line when it had no newline (taken for a killed writer's
    fragment), and the rows then did not read: validate compare takes any file not named
    .jsonl for an nccl-tests log. Now the output must end in .jsonl, checked before anything
    runs by the CLI and by the job itself (launched under srun), and the file is untouched."""
    from costmodel.validation.torch_bench import main
    from tests._cli import one_line_error, run

    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes\nlast line without a newline")
    one_line_error(run("validate", "torch", "-o", str(notes)), "--output:", "must end in .jsonl")
    assert main(["-o", str(notes), "--backend", "gloo"]) == 2
    assert notes.read_bytes() == b"my notes\nlast line without a newline"


# --- 10. the torchrun line, printed ------------------------------------------------------------------
def test_validate_torch_dry_run_prints_the_torchrun_line_and_writes_nothing(tmp_path):
    """`validate nccl-tests run --dry-run` prints its srun/mpirun lines; `validate torch` had no
    way to show the torchrun line it builds (to check it, or to take the job's arguments into
    an srun line). Now --dry-run prints it, after every argument is checked, and creates
    nothing: no results file, no logs/ folder."""
    import shlex

    from costmodel.validation.torch_bench import parse_args
    from tests._cli import one_line_error, run

    out = tmp_path / "t.jsonl"
    args = ("validate", "torch", "--nproc", "3", "--backend", "gloo", "--max-bytes", "1MiB")
    got = run(*args, "-o", str(out), "--ddp", "--dry-run", "--", "--ddp-params", "1M")
    assert got.exit_code == 0, got.stderr
    (line,) = got.stdout.splitlines()
    argv = shlex.split(line)
    assert argv[:6] == [sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", "3"]  # fmt: skip
    assert argv[6:8] == ["-m", "costmodel.validation.torch_bench"]
    bench = parse_args(argv[8:])  # the job's own parser takes the rest
    assert bench.output == str(out) and bench.max_bytes == 2**20 and bench.ddp_params == 10**6
    assert list(tmp_path.iterdir()) == []
    one_line_error(run(*args, "-o", str(out), "--dry-run", "--", "--iters", "0"), "--iters")


# --- 11. refusals name the option the user typed ---------------------------------------------------
def test_refusals_of_compare_and_calibrate_name_the_option(tmp_path):
    """An unknown --cluster was refused as "name: unknown cluster preset" by validate compare
    of a log, and as "--name: ..." by calibrate, naming an option the user had not typed
    (calibrate's own --name); in a folder every log was refused for it ("no file reads as an
    nccl-tests log"). An unknown --model said "validate compare: no row could be predicted
    (model='foo' ...)", a missing --calibration file named no option. Each now starts with
    the option."""
    from tests._cli import one_line_error, run

    log = str(_bundled_path("13a"))
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a_allreduce.txt").write_bytes(_bundled_path("13a").read_bytes())
    toml = str(tmp_path / "c.toml")
    for argv in (
        ("validate", "compare", log, "--cluster", "nope"),
        ("validate", "compare", str(folder), "--cluster", "nope"),
        ("calibrate", log, "-o", toml, "--cluster", "nope"),
        ("calibrate", str(folder), "-o", toml, "--cluster", "nope", "--nodes", "1"),
    ):
        one_line_error(run(*argv), "costmodel: error: --cluster: unknown cluster preset 'nope'")
    one_line_error(run("validate", "compare", log, "--model", "foo"), "error: --model: 'foo'")
    missing = str(tmp_path / "missing.toml")
    one_line_error(run("validate", "compare", log, "--calibration", missing), "--calibration:")
    one_line_error(run("validate", "compare", log, "--calibration", log), "--calibration:")


def test_calibrate_checks_the_preset_name_before_fitting(tmp_path):
    """`calibrate LOG -o H100-calibrated.toml` (the name taken from the file) fitted and then
    failed: "calibration 'H100-calibrated' is not a valid preset: name: String should match
    pattern '^[a-z0-9][a-z0-9._-]*$'", naming no option. Now the name is checked first, and the
    refusal names --name, the rule and a name that would do; --name fixes it."""
    from costmodel import presets
    from tests._cli import one_line_error, run

    log = str(_bundled_path("13a"))
    out = tmp_path / "H100-calibrated.toml"
    line = one_line_error(
        run("calibrate", log, "-o", str(out), "--nodes", "1"), "--name: not given"
    )
    assert "give --name h100-calibrated or name the file h100-calibrated.toml" in line
    one_line_error(
        run("calibrate", log, "-o", str(out), "--nodes", "1", "--name", "a/b"),
        "--name: 'a/b' is not a preset name",
    )
    assert not out.exists()
    done = run("calibrate", log, "-o", str(out), "--nodes", "1", "--name", "h100-calibrated")
    assert done.exit_code == 0, done.stderr
    assert presets.load(str(out)).name == "h100-calibrated"


# --- 12. Ctrl-C as the job starts ------------------------------------------------------------------
def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, gone but not reaped, does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_ctrl_c_while_the_log_pumps_start_stops_the_job(tmp_path, monkeypatch):
    """run_logged started the threads that copy the job's output to the log before entering
    the block that stops the job on an interrupt: a Ctrl-C in that window (threads start
    slowly on a loaded machine) raised with the job left running (a likely cause of
    tests/test_validate_logs.py's Ctrl-C test failing now and then under `pytest -n 2`). The
    interrupt is simulated
    where it landed, at the first thread's start; the job is stopped now."""
    import os
    import signal
    import stat
    import threading
    import time
    import types

    from costmodel.validation import runner

    pid_file = tmp_path / "job.pid"
    job = tmp_path / "job.sh"
    job.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    job.chmod(job.stat().st_mode | stat.S_IXUSR)

    class Interrupted(threading.Thread):
        def start(self) -> None:
            raise KeyboardInterrupt

    fake = types.SimpleNamespace(Thread=Interrupted, Lock=threading.Lock)
    monkeypatch.setattr(runner, "threading", fake)
    with pytest.raises(KeyboardInterrupt):
        runner.run_logged([str(job)], tmp_path / "i.log")
    deadline = time.monotonic() + 3
    while not (pid_file.is_file() and pid_file.read_text().strip()):
        if time.monotonic() > deadline:
            return  # stopped before it wrote its pid: nothing left running
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    try:
        time.sleep(0.2)
        assert not _alive(pid), "the job was left running"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_count_that_contradicts_the_rows_is_refused_naming_the_option_first(tmp_path):
    """`calibrate LOG --ranks 3` said "ranks 3 contradicts the measured rows" (no option), and
    a results file's --nodes "--nodes 3 contradicts ..." where every other refusal reads
    "--option: ..."; both now start with the option and a colon."""
    from tests._cli import one_line_error, run

    log = str(_bundled_path("13a"))
    toml = str(tmp_path / "c.toml")
    one_line_error(
        run("calibrate", log, "-o", toml, "--nodes", "1", "--ranks", "3"),
        "costmodel: error: --ranks: 3 contradicts the measured rows (ranks 4)",
    )
    results = _results_of(tmp_path / "results.jsonl", "13a")
    one_line_error(
        run("calibrate", str(results), "-o", toml, "--nodes", "3"),
        "costmodel: error: --nodes: 3 contradicts the results file (nodes 1)",
    )
