"""Tests for costmodel.validation.runner with fake nccl-tests binaries: small shell scripts that
print a real published log bundled in costmodel/data/reference (testing the runner, not producing measurements),
hang, or die half way."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from costmodel.validation.runner import (
    NcclTestsMissing,
    find_binary,
    load_results,
    plan_sweep,
    run_nccl_tests,
    run_sweep,
)
from tests._paths import NCCL_TESTS as DATA  # noqa: E402

AR_LOG = DATA / "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt"  # 31 result rows
AG_LOG = DATA / "13b_waynehacking8_1x4xH100-slice_auto_allgather.txt"  # 31 result rows


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def build(tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    # echo the NCCL_ALGO the runner set, as NCCL prints it with NCCL_DEBUG=INFO
    _script(
        folder,
        "all_reduce_perf",
        'echo "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to ${NCCL_ALGO:-none}"\n'
        f'cat "{AR_LOG}"\n',
    )
    _script(folder, "all_gather_perf", f'cat "{AG_LOG}"\n')
    return folder


def test_plan_command_lines():
    specs = plan_sweep(
        ["all_reduce", "all_to_all"],
        algos=["Ring", "Tree"],
        protos=["Simple"],
        gpus=4,
        nodes=2,
        launcher="mpirun",
        mpi="openmpi",  # without it, the mpirun on PATH is asked (tests/test_validate_qa4.py)
        build_dir="/b",
        max_bytes="1G",
    )
    assert [s.key for s in specs] == [
        "all_reduce-algo_Ring-proto_Simple",
        "all_reduce-algo_Tree-proto_Simple",
        "all_to_all-algo_Ring-proto_Simple",
        "all_to_all-algo_Tree-proto_Simple",
    ]
    argv = specs[0].argv
    assert argv[:3] == ("mpirun", "-np", "8")
    assert ("-x", "NCCL_ALGO") == argv[5:7] and "/b/all_reduce_perf" in argv
    assert argv[-2:] == ("-g", "1") and specs[0].env == {
        "NCCL_ALGO": "Ring",
        "NCCL_PROTO": "Simple",
    }
    assert specs[2].argv[specs[2].argv.index("-b") - 1] == "/b/alltoall_perf"
    srun = plan_sweep(["all_reduce"], gpus=8, nodes=4, launcher="srun", build_dir="/b")[0].argv
    assert srun[:5] == ("srun", "-N", "4", "--ntasks-per-node", "8")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"launcher": "ssh"}, r"^launcher: 'ssh' is not known; allowed: local, "),
        ({"nodes": 2}, "^nodes: 2 nodes need `launcher` 'srun' or 'mpirun'; 'local' runs one"),
        ({"gpus": 0}, "gpus: must be a whole number in 1..1,024, got 0"),
        ({"gpus": True}, "gpus: must be an integer"),
        ({"iters": 0}, "iters: must be"),
        ({"warmup_iters": -1}, "warmup: must be"),
        ({"step_factor": 1}, "step_factor: must be"),
        ({"min_bytes": "abc"}, "min_bytes: must be"),
        ({"max_bytes": "abc"}, "max_bytes: must be"),
        ({"max_bytes": "32TB"}, "max_bytes: must be"),
        ({"min_bytes": "1G", "max_bytes": "8"}, "min_bytes: '1G' is above"),
        ({"extra_args": "-c 0"}, "extra_args: must be a list"),
        ({"algos": ["Rings"]}, "algos: 'Rings' is not an NCCL_ALGO value"),
        ({"protos": ["LL256"]}, "protos: 'LL256' is not an NCCL_PROTO value"),
    ],
)
def test_plan_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_sweep(["all_reduce"], **kwargs)


def test_missing_binary_says_how_to_build(tmp_path):
    with pytest.raises(NcclTestsMissing, match="git clone https://github.com/NVIDIA/nccl-tests"):
        find_binary("all_reduce", tmp_path)
    with pytest.raises(NcclTestsMissing, match="make"):
        run_nccl_tests(tmp_path / "out", ["all_reduce"], build_dir=tmp_path)
    assert not (tmp_path / "out").exists()  # nothing ran


def test_sweep_appends_rows_keeps_logs_and_skips_done(build, tmp_path):
    out = tmp_path / "out"
    summary = run_nccl_tests(
        out,
        ["all_reduce", "all_gather"],
        algos=[None, "Ring"],
        build_dir=build,
        gpus=4,
        progress=False,
    )
    assert summary.ok == [
        "all_reduce",
        "all_reduce-algo_Ring",
        "all_gather",
        "all_gather-algo_Ring",
    ]
    assert summary.rows == 4 * 62
    df = load_results(out / "results.jsonl")
    assert len(df) == 4 * 62 and df.complete.all()
    ring = df[df.run_key.str.startswith("all_reduce-algo_Ring@")]
    assert set(ring.algo_env) == {"Ring"}  # parsed from the log the fake printed
    assert set(df[df.run_key.str.startswith("all_gather-algo_Ring@")].algo_env) == {"Ring"}
    assert len(list((out / "logs").glob("*.log"))) == 4
    again = run_nccl_tests(
        out,
        ["all_reduce", "all_gather"],
        algos=[None, "Ring"],
        build_dir=build,
        gpus=4,
        progress=False,
    )
    assert again.ok == [] and len(again.skipped) == 4
    assert len(load_results(out / "results.jsonl")) == 4 * 62  # nothing appended twice


def test_timeout_and_dead_rank_keep_partial_rows(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    head = "".join(AR_LOG.read_text().splitlines(keepends=True)[:40])
    (tmp_path / "head.txt").write_text(head)
    _script(build, "all_reduce_perf", f'cat "{tmp_path / "head.txt"}"\nsleep 30\n')
    _script(build, "all_gather_perf", f'cat "{tmp_path / "head.txt"}"\nexit 3\n')
    out = tmp_path / "out"
    summary = run_nccl_tests(
        out, ["all_reduce", "all_gather"], build_dir=build, gpus=4, timeout_s=1.0, progress=False
    )
    assert summary.ok == []
    assert "no exit after 1 s" in summary.failed["all_reduce"]
    assert "exit code 3" in summary.failed["all_gather"]
    df = load_results(out / "results.jsonl")
    rows = sum(1 for line in head.splitlines() if line[:12].strip().isdigit())
    assert rows > 0 and len(df) == 2 * 2 * rows and not df.complete.any()
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in runs] == ["timeout", "failed"]
    # the fixed binary completes on rerun; the partial attempt is then dropped on load
    _script(build, "all_gather_perf", f'cat "{AG_LOG}"\n')
    again = run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=4), out, progress=False)
    assert again.ok == ["all_gather"]
    loaded = load_results(out / "results.jsonl")
    assert len(loaded[loaded.op == "all_gather"]) == 62
    assert len(load_results(out / "results.jsonl", keep_incomplete=True)) == 2 * 2 * rows + 62


def test_load_results_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_results(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        load_results(bad)
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"a": 1}\n{"a": 2')  # killed while writing the last line
    assert load_results(cut).a.tolist() == [1]


def test_log_never_modified(build, tmp_path):
    before = os.stat(AR_LOG).st_mtime_ns
    run_nccl_tests(tmp_path / "o", ["all_reduce"], build_dir=build, progress=False)
    assert os.stat(AR_LOG).st_mtime_ns == before


def test_append_after_a_row_cut_mid_write_keeps_the_file_readable(tmp_path):
    # A runner killed while writing leaves an unterminated fragment; the rerun's first row used
    # to be glued onto it, and the whole file then failed to load ("line 2 is not JSON").
    import pandas as pd

    from costmodel.validation.runner import append_results

    path = tmp_path / "results.jsonl"
    append_results(path, pd.DataFrame({"a": [1]}))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"a": 2, "b"')  # the killed writer's half row
    append_results(path, pd.DataFrame({"a": [3, 4]}))
    assert load_results(path).a.tolist() == [1, 3, 4]
    # a fragment as the only content is dropped the same way
    lone = tmp_path / "lone.jsonl"
    lone.write_text('{"a": 9')
    append_results(lone, pd.DataFrame({"a": [5]}))
    assert load_results(lone).a.tolist() == [5]


def test_retries_that_never_completed_are_not_counted_twice(tmp_path):
    """Two failed attempts of one run: only the latest attempt's rows are compared."""
    import json

    path = tmp_path / "results.jsonl"
    rows = []
    for attempt, t in (("20261129T100000-1", 1.0), ("20261129T110000-2", 2.0)):
        for size in (1024, 2048):
            rows.append(
                {
                    "run_key": "all_reduce",
                    "attempt": attempt,
                    "complete": False,
                    "op": "all_reduce",
                    "size_bytes": size,
                    "time_s": t * 1e-5,
                    "ranks": 8,
                }
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = load_results(path)
    assert len(df) == 2 and set(df.attempt) == {"20261129T110000-2"}
    assert len(load_results(path, keep_incomplete=True)) == 4


# ---------------------------------------------------------------------------- hygiene
def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _wait(predicate, seconds: float = 20.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_killed_runner_leaves_no_nccl_tests_child(tmp_path, how):
    """A fake nccl-tests binary that records its pid and sleeps; the runner is signalled while
    it runs. SIGTERM/SIGINT: the runner kills the child's process group and records the run as
    interrupted. SIGKILL: the child is told by the kernel (PR_SET_PDEATHSIG) and exits."""
    import signal
    import subprocess
    import sys

    build = tmp_path / "build"
    build.mkdir()
    pid_file = tmp_path / "child.pid"
    _script(build, "all_reduce_perf", f'echo $$ > "{pid_file}"\nexec sleep 60\n')
    code = (
        "from costmodel.validation.runner import run_nccl_tests\n"
        f"run_nccl_tests({str(tmp_path / 'out')!r}, ['all_reduce'], build_dir={str(build)!r}, "
        "progress=False)\n"
    )
    # as from a shell: SIGINT at its default, so Python turns it into KeyboardInterrupt (a
    # pytest-xdist worker ignores SIGINT, and an ignored signal is inherited: the runner never
    # saw the Ctrl-C)
    runner = subprocess.Popen(
        [sys.executable, "-c", code],
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert _wait(lambda: pid_file.is_file() and pid_file.read_text().strip())
        child = int(pid_file.read_text())
        assert _alive(child)
        runner.send_signal(getattr(signal, how))
        runner.wait(timeout=20)
        assert _wait(lambda: not _alive(child)), f"nccl-tests child {child} survived {how}"
    finally:
        if runner.poll() is None:
            runner.kill()
    if how != "SIGKILL":
        runs = [json.loads(x) for x in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
        assert [r["status"] for r in runs] == ["interrupted"]


def test_kill_reaps_the_child_even_when_an_interrupted_wait_left_popens_lock_held():
    """SIGTERM (raised as _Terminated) or Ctrl-C inside proc.wait(timeout=...) can leave
    Popen's wait lock held (CPython runs the handler between its acquire and its try; about one
    signal in a few hundred); _kill then must still kill and reap the child, not block forever
    in proc.wait() (the runner hung after SIGTERM with its benchmark dead)."""
    import signal
    import subprocess
    import threading

    from costmodel.validation.runner import _kill

    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        lock = getattr(proc, "_waitpid_lock", None)
        if lock is None:  # pragma: no cover - another Popen implementation
            pytest.skip("no Popen._waitpid_lock to hold")
        lock.acquire()
        done = threading.Thread(target=_kill, args=(proc,), daemon=True)
        done.start()
        done.join(timeout=15)
        assert not done.is_alive(), "_kill blocked on the wait lock an interrupted wait left held"
        assert proc.returncode == -signal.SIGTERM
    finally:
        if proc.returncode is None:
            proc.kill()
            os.waitpid(proc.pid, 0)


def test_sigkill_of_the_runner_kills_the_benchmarks_grandchildren_too(tmp_path):
    """A wrapper script (as srun/mpirun or a site's launcher) whose benchmark is a grandchild:
    PR_SET_PDEATHSIG reaches only the wrapper; the watchdog kills the whole group."""
    import signal
    import subprocess
    import sys

    build = tmp_path / "build"
    build.mkdir()
    pid_file = tmp_path / "grandchild.pid"
    # no exec: the shell stays (and ignores SIGTERM while waiting), sleep is its child
    _script(build, "all_reduce_perf", f'trap "" TERM\nsleep 60 &\necho $! > "{pid_file}"\nwait\n')
    code = (
        "from costmodel.validation.runner import run_nccl_tests\n"
        f"run_nccl_tests({str(tmp_path / 'out')!r}, ['all_reduce'], build_dir={str(build)!r}, "
        "progress=False)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    try:
        assert _wait(lambda: pid_file.is_file() and pid_file.read_text().strip())
        grandchild = int(pid_file.read_text())
        assert _alive(grandchild)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=20)
        assert _wait(lambda: not _alive(grandchild)), f"benchmark {grandchild} was orphaned"
    finally:
        if runner.poll() is None:
            runner.kill()


def test_rerun_with_another_configuration_measures_again(build, tmp_path):
    out = tmp_path / "out"
    first = run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=4), out, progress=False)
    assert first.ok == ["all_gather"]
    same = run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=4), out, progress=False)
    assert same.skipped == ["all_gather"] and same.ok == []
    for change in ({"gpus": 8}, {"max_bytes": "1G"}, {"algos": ["Ring"]}):
        plan = {"build_dir": build, "gpus": 4, **change}
        again = run_sweep(plan_sweep(["all_gather"], **plan), out, progress=False)
        # measured again (the 4-rank log under --gpus 8 is then reported as failed: its rows
        # are not the 8 ranks launched)
        assert again.skipped == [] and len([*again.ok, *again.failed]) == 1, change


def test_reruns_with_other_configurations_keep_their_rows_apart(build, tmp_path):
    """Two configurations into one -o: two run keys, no (run_key, size, placement) twice, and
    validate compare names the runs it compares."""
    from costmodel.cli import main
    from costmodel.validation.runner import describe_runs

    out = tmp_path / "out"
    for gpus in (4, 8):
        run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=gpus), out, progress=False)
    df = load_results(out / "results.jsonl")
    assert df.run_key.nunique() == 2 and len(df) == 2 * 62
    assert df.groupby("run_key").size().tolist() == [62, 62]  # one configuration per key
    assert len(describe_runs(df)) == 2
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        main(["validate", "compare", str(out / "results.jsonl"), "--cluster", "dgx-h100"])
    assert "comparing 2 runs: all_gather@" in err.getvalue()


def test_kill_between_rows_and_done_record_never_duplicates(build, tmp_path):
    out = tmp_path / "out"
    run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=4), out, progress=False)
    assert len(load_results(out / "results.jsonl")) == 62
    # as if killed after appending the rows, before recording the run as done
    (out / "runs.jsonl").write_text("")
    again = run_sweep(plan_sweep(["all_gather"], build_dir=build, gpus=4), out, progress=False)
    assert again.ok == ["all_gather"]
    assert len(load_results(out / "results.jsonl", keep_incomplete=True)) == 124
    df = load_results(out / "results.jsonl")
    assert len(df) == 62 and df.attempt.nunique() == 1


def test_rerun_removes_stale_temporary_files(build, tmp_path):
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    stale = [out / ".results.jsonl.abc123.tmp", out / "logs" / ".x.log.q.tmp"]
    for path in stale:
        path.write_text("half")
    keep = out / "notes.txt"
    keep.write_text("mine")
    run_sweep(plan_sweep(["all_gather"], build_dir=build), out, progress=False)
    assert not any(p.exists() for p in stale) and keep.read_text() == "mine"
