"""The validation harness as a cluster engineer uses it: calibrate a run, then predict it with
the calibration (``validate compare --calibration``, the Validate page, ``collective``); a
folder of logs given to ``validate compare`` with an output inside it; a ``-J`` JSON log's
flagged rows; a gloo run on this machine's CPUs, which is outside the model's regimes.

Files are real measurements only: bundled logs (their nccl-tests output as a user's own log,
the provenance block left out), the synthetic format fixture under tests/data for the JSON
layout, and the session's one real gloo run of the harness (``gloo_run``, tests/conftest.py).
Each check compares two surfaces or two roads on the same file, never with a number written
here.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pandas as pd
import pytest
import streamlit

from costmodel.reference import reference_path
from tests._cli import one_line_error, run

logging.getLogger("streamlit").setLevel(logging.ERROR)
ROOT = Path(__file__).resolve().parents[1]


def _user_log(run_id: str, folder: Path, name: str) -> Path:
    """A bundled log's nccl-tests output as a user's own file (no provenance block: the
    reader then knows it by its own lines, not by the bundled run's index)."""
    lines = reference_path(run_id).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# nccl-tests version"))
    path = folder / name
    path.write_text("\n".join(lines[start:]) + "\n")
    return path


def _json(*args: str) -> tuple[dict, int]:
    said = run(*args, "--json")
    assert said.exit_code in (0, 1), said.output
    return json.loads(said.stdout), said.exit_code


# --- a calibration predicts the rows it was fitted on as they were launched -------------------
def test_a_calibration_of_a_one_process_run_predicts_its_rows_with_its_launch_floor(tmp_path):
    """13a ran nccl-tests with ``-g 4``: one process drives the 4 GPUs, whose launch floor the
    model prices (``gpus_per_process``) and ``calibrate --cluster`` fits. The calibrated
    predictor dropped ``gpus_per_process`` (and NVLS/CollNet), so ``validate compare
    --calibration`` predicted the small sizes as one process per GPU: 71 % median error on
    the very rows it was fitted on, against 9 % uncalibrated. It now predicts as the fit did,
    the calibrated cluster's own ``predict_collective`` with the rows' ``gpus_per_process``."""
    from costmodel import presets
    from costmodel.predict import predict_collective
    from costmodel.validation.calibrate import calibrated_predictor, load_calibration
    from costmodel.validation.compare import compare

    log = _user_log("13a", tmp_path, "h100x4_allreduce.log")
    cal = tmp_path / "cal.toml"
    made = run("calibrate", str(log), "-o", str(cal), "--cluster", "dgx-h100")
    assert made.exit_code == 0, made.output
    calibrated, _ = _json("validate", "compare", str(log), "--calibration", str(cal))
    preset, _ = _json("validate", "compare", str(log), "--cluster", "dgx-h100")
    # fitted on these rows: the calibration predicts them at least as well as the preset
    assert calibrated["median_abs_rel_error"] <= preset["median_abs_rel_error"], (
        calibrated["median_abs_rel_error"],
        preset["median_abs_rel_error"],
    )
    # one road: each row predicted as the calibrated cluster predicts it at the rows' launch
    from costmodel.validation.logread import read_log

    rows = read_log(log.read_text(), log.name).rows
    (gpp,) = set(rows["gpus_per_process"])
    assert gpp > 1  # the -g run this checks
    table = compare(rows, calibrated_predictor(load_calibration(cal)))
    sizes = table["size_bytes"].to_numpy(float)
    own = predict_collective(
        "all_reduce",
        sizes,
        presets.cluster(str(cal)),
        gpus_per_node=int(rows["ranks"].iloc[0]),
        gpus_per_process=int(gpp),
        model="calibrated",
    )
    assert table["predicted_time_s"].tolist() == pytest.approx(list(own.time_s))
    assert calibrated["median_abs_rel_error"] == pytest.approx(
        float(table["rel_error"].abs().median())
    )


def test_collective_on_a_calibrated_preset_gives_the_compared_prediction(tmp_path):
    """``calibrate --cluster`` on a run of one process per GPU (16a, 2 x 8 A100 over EFA), then
    ``collective --cluster THE.toml --model calibrated``: the times ``validate compare
    --calibration`` predicted for the same rows."""
    log = reference_path("16a")  # the bundled file: its index says 2 nodes
    cal = tmp_path / "p4de-cal.toml"
    made = run("calibrate", str(log), "-o", str(cal), "--cluster", "aws-p4de")
    assert made.exit_code == 0, made.output
    out = tmp_path / "cmp.csv"
    said = run("validate", "compare", str(log), "--calibration", str(cal), "-o", str(out))
    assert said.exit_code in (0, 1), said.output
    table = pd.read_csv(out)
    rows = table[table["placement"] == "out_of_place"].iloc[[0, 18, 26]]  # 8 B, 2 MiB, 512 MiB
    answer, _ = _json(
        "collective", "all_reduce", *[f"--size={int(s)}B" for s in rows["size_bytes"]],
        "--cluster", str(cal), "--nodes", str(int(rows["nodes"].iloc[0])),
        "--model", "calibrated",
    )  # fmt: skip
    times = [r["time_s"] for r in answer["results"]]
    assert times == pytest.approx(rows["predicted_time_s"].tolist())


def test_a_calibration_without_a_base_given_as_a_cluster_says_where_it_is_used(tmp_path):
    """``calibrate`` without --cluster (what a gloo run needs) writes alpha-beta fits with no
    base cluster; ``collective --cluster THAT.toml`` said "add base = ... (or calibrate with
    base=...)", the API's keyword, pointing a CPU calibration at a GPU cluster. It now says
    what the file is for (validate compare --calibration) and how a cluster one is made."""
    from costmodel import presets

    cal = tmp_path / "lines.toml"
    made = run("calibrate", str(reference_path("13a")), "-o", str(cal))
    assert made.exit_code == 0, made.output
    line = one_line_error(
        run("collective", "all_reduce", "-s", "1MiB", "--cluster", str(cal)),
        "names no base cluster, so it is not a cluster",
        "validate compare --calibration FILE",
        "costmodel calibrate ... --cluster NAME",
    )
    assert "base=" not in line, line
    with pytest.raises(presets.PresetError) as refused:  # the API's words: its names
        presets.cluster(str(cal))
    assert "`calibrated_predictor`" in str(refused.value) and "`calibrate`" in str(refused.value)


# --- an output is never one of the files a folder given as input holds -----------------------
def test_an_output_that_is_a_log_of_the_folder_compared_is_refused(tmp_path):
    """``validate compare FOLDER -o FOLDER/b.csv``, where b.csv is one of the folder's logs:
    the log was read, compared and then replaced by the per-row table. Refused now, one line
    naming the option and the folder, the log left as it was."""
    folder = tmp_path / "runs"
    folder.mkdir()
    _user_log("13a", folder, "a_allreduce.log")
    log = _user_log("13b", folder, "b.csv")  # an all-gather log, named as the user named it
    before = log.read_bytes()
    pooled, _ = _json("validate", "compare", str(folder))
    assert pooled["skipped_files"] == [] and pooled["rows"] > 62  # b.csv is read as a log
    line = one_line_error(
        run("validate", "compare", str(folder), "-o", str(log)),
        "--output: ",
        "is a file of the folder this command reads",
    )
    assert str(folder) in line
    assert log.read_bytes() == before
    # a new file beside the logs is no input: written
    fresh = folder / "cmp.csv"
    said = run("validate", "compare", str(folder), "-o", str(fresh))
    assert said.exit_code in (0, 1), said.output
    assert fresh.is_file() and log.read_bytes() == before


# --- a -J JSON log's rows have no line ---------------------------------------------------------
def test_a_json_logs_flagged_row_is_not_said_to_be_on_line_0():
    """nccl-tests ``-J`` output has no lines: the flagged-row warning named "line 0"."""
    path = ROOT / "tests" / "data" / "nccl_tests_synthetic_v3.json"
    said, _ = _json("validate", "compare", str(path), "--cluster", "dgx-h100")
    (flagged,) = [w for w in said["warnings"] if "data check" in w]
    assert "#wrong=" in flagged and "line" not in flagged.split(":")[0], flagged


# --- logs as launchers and log collectors write them -------------------------------------------
@pytest.mark.parametrize(
    "prefix",
    [
        "[1,0]<stdout>:",  # mpirun --tag-output: read as invalid JSON ("[" first)
        "2024-05-01T10:00:00.123456789Z ",  # kubectl logs --timestamps, docker logs -t
        "[pod/nccl-launcher-x7/mpi-launcher] 2024-05-01T10:00:00.5+00:00 ",  # --prefix too
    ],
)
def test_a_tagged_log_reads_as_the_plain_one_in_the_cli_and_on_the_page(prefix, tmp_path):
    """Every line of 13a's nccl-tests output tagged as a launcher or ``kubectl logs`` writes
    it: ``validate compare`` and the Validate page's reader give the plain log's error and
    cluster (the mpirun tag refused the file as "invalid JSON: Extra data", the timestamps
    as "no nccl-tests result rows found")."""
    from costmodel.web import data

    plain = _user_log("13a", tmp_path, "plain_allreduce.log")
    tagged = tmp_path / "tagged_allreduce.log"
    tagged.write_text("".join(prefix + line + "\n" for line in plain.read_text().splitlines()))
    want, _ = _json("validate", "compare", str(plain))
    said, _ = _json("validate", "compare", str(tagged))
    assert said["cluster"] == want["cluster"] and said["rows"] == want["rows"]
    assert said["median_abs_rel_error"] == pytest.approx(want["median_abs_rel_error"])
    streamlit.cache_data.clear()
    page = data.compare_text(
        tagged.read_bytes(), tagged.name, (None, None, None, "both"), said["cluster"], "nccl"
    )
    assert float(page["rel_error"].abs().median()) == pytest.approx(said["median_abs_rel_error"])
    streamlit.cache_data.clear()


# --- a path that is no regular file -----------------------------------------------------------
@pytest.mark.timeout(120)
def test_a_pipe_given_as_the_log_is_said_to_be_one_not_missing(tmp_path):
    """``validate compare <(ssh node cat run.log)`` hands a pipe: it read "'/dev/fd/63' does
    not exist". A named pipe stands in for it (nothing opens it: no writer is needed)."""
    pipe = tmp_path / "run.log"
    os.mkfifo(pipe)
    for args, option in (
        (("validate", "compare", str(pipe)), "RESULTS: "),
        (("calibrate", str(pipe), "-o", str(tmp_path / "c.toml")), "RESULTS: "),
        (("validate", "compare", str(ROOT / "tests" / "data" / "nccl_tests_synthetic_v3.json"),
          "--calibration", str(pipe)), "--calibration: "),
    ):  # fmt: skip
        one_line_error(run(*args), option, f"{str(pipe)!r} is not a regular file (a pipe")
    one_line_error(run("validate", "compare", str(tmp_path / "gone.log")), "does not exist")


# --- rows measured on CPUs are outside the model's regimes ------------------------------------
def test_the_goal_leaves_out_rows_measured_on_cpus():
    """The docs/fidelity.md goal is set on GPU clusters: a row that ran on CPUs (gloo) is not
    judged by it, and a comparison of CPU rows only is not assessed, saying why."""
    from costmodel.validation.compare import cpu_regime_note, fidelity_check, fidelity_goals

    sizes = [2**12, 2**20, 2**22]
    gpu = pd.DataFrame({"size_bytes": sizes, "rel_error": [0.05, 0.02, 0.03], "device": "h100"})
    cpu = gpu.assign(rel_error=[3.0, 0.9, 0.8], device="cpu")
    passed, lines = fidelity_check(cpu)
    assert passed is None and len(lines) == 1 and "ran on CPUs (gloo)" in lines[0]
    assert all(g["rows"] == 0 and g["outside_regimes"] == 3 for g in fidelity_goals(cpu))
    both = pd.concat([gpu, cpu], ignore_index=True)
    assert fidelity_check(both) == fidelity_check(gpu)  # the GPU rows' verdict, unchanged
    assert [g["outside_regimes"] for g in fidelity_goals(both)] == [3, 3]
    assert cpu_regime_note(gpu) is None
    assert cpu_regime_note(both).startswith("3 of 6 rows ran on CPUs (gloo)")


@pytest.fixture(scope="module")
def gloo(gloo_run) -> tuple[Path, Path]:
    """(results file, its calibration) of the session's one real gloo run (tests/conftest.py)."""
    return gloo_run


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_gloo_run_is_shown_not_judged_by_the_gpu_goal(gloo):
    """A real ``validate torch`` gloo run compared with its own calibration printed "FAIL:
    docs/fidelity.md goal" (or ok), a verdict of a goal measured on GPU clusters, with
    nothing saying gloo on shared CPU cores is outside the model's regimes (its DDP steps
    there are predicted tens of percent low). Now: a warning saying so, and NOT ASSESSED."""
    from costmodel.validation.compare import cpu_regime_note
    from costmodel.validation.logread import read_results

    results, cal = gloo
    said, code = _json("validate", "compare", str(results), "--calibration", str(cal))
    assert code == 1  # not assessed is never a pass
    assert (said["verdict"], said["assessed"], said["passed"]) == ("not assessed", False, False)
    note = cpu_regime_note(read_results(results, calibrated=True).rows)
    assert note is not None and note in said["warnings"]
    assert note.startswith("the rows ran on CPUs (gloo): outside the model's regimes")
    text = run("validate", "compare", str(results), "--calibration", str(cal))
    last = text.stdout.strip().splitlines()[-1]
    assert last.startswith("NOT ASSESSED: docs/fidelity.md goal") and "CPUs (gloo)" in last
    assert f"costmodel: warning: {note}" in text.stderr
    # a GPU preset forced on them: the mismatch warned of, and still not judged by the goal
    forced, code = _json("validate", "compare", str(results), "--cluster", "dgx-h100")
    assert code == 1 and forced["verdict"] == "not assessed" and note in forced["warnings"]
    # a tolerance the user sets is the user's check: judged, the note still said
    loose, code = _json(
        "validate", "compare", str(results), "--calibration", str(cal), "--tolerance", "1000"
    )
    assert (code, loose["verdict"]) == (0, "ok") and note in loose["warnings"]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_gloo_runs_ddp_steps_alone_carry_the_note_in_json_too(gloo, tmp_path):
    """The run's DDP steps alone (``validate torch --ops none --ddp``): stderr said the note,
    ``--json`` printed only ``ddp_steps``, so a script never saw it."""
    results, cal = gloo
    steps = tmp_path / "ddp.jsonl"
    steps.write_text(
        "".join(
            line + "\n"
            for line in results.read_text().splitlines()
            if json.loads(line).get("kind") == "ddp_step"
        )
    )
    said, code = _json("validate", "compare", str(steps), "--calibration", str(cal))
    assert code == 0 and len(said["ddp_steps"]) > 0  # shown, not judged
    text = run("validate", "compare", str(steps), "--calibration", str(cal))
    (line,) = [w for w in text.stderr.splitlines() if "CPUs (gloo)" in w]
    assert line.removeprefix("costmodel: warning: ") in said["warnings"]
    # Every warning stderr said is in --json, and nothing else: on shared cores a step can
    # also come in under its compute (a second, timing-dependent note), so the list is
    # compared with stderr's rather than pinned to the gloo note alone.
    told = [
        w.removeprefix("costmodel: warning: ")
        for w in text.stderr.splitlines()
        if w.startswith("costmodel: warning: ")
    ]
    assert said["warnings"] == told


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_validate_page_says_the_same_of_a_gloo_run(gloo, tmp_path, monkeypatch):
    """The page with the gloo run and its calibration: the CLI's warning as a yellow box and
    its NOT ASSESSED verdict line (one function on both: compare.cpu_regime_note,
    compare.fidelity_verdict)."""
    from tests.test_app_qa21 import _cli
    from tests.test_app_qa23 import _upload

    streamlit.cache_data.clear()
    results, cal = gloo
    said = _cli(results, tmp_path, "--calibration", str(cal))
    page = _upload(monkeypatch, results, cal)
    assert not page.at.error
    assert page.verdict == said.stdout.strip().splitlines()[-1]
    assert page.verdict.startswith("NOT ASSESSED")
    (note,) = [w for w in said.json["warnings"] if "CPUs (gloo)" in w]
    from costmodel.web.common import sentence

    assert sentence(note) in page.warnings, page.warnings
    streamlit.cache_data.clear()


# --- the torch job times DDP steps after DDP's one-time bucket rebuild --------------------------
_SPY = """
import json, os, sys
from torch.nn.parallel import DistributedDataParallel
from costmodel.validation import torch_bench

seen = []
real = torch_bench._Bench.timed

def timed(self, fn, iters, warmup):
    wrappers = [d for d in (fn.__defaults__ or ()) if isinstance(d, DistributedDataParallel)]
    seen.extend(bool(getattr(d, "_has_rebuilt_buckets", False)) for d in wrappers)
    return real(self, fn, iters, warmup)

torch_bench._Bench.timed = timed
code = torch_bench.main(sys.argv[1:])
print(json.dumps({"code": code, "seen": seen}))
"""


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_torch_job_times_ddp_steps_after_the_bucket_rebuild(tmp_path):
    """DDP rebuilds its gradient buckets once, in its second forward; the job's one warm-up
    step left that in the first timed step (on 2 shared cores about twice a later step, so a
    few steps' median read the step slower than predicted). Every DDP wrapper has rebuilt
    before its steps are timed now (one rank, gloo, the job's own code, DDP's own flag)."""
    import subprocess
    import sys

    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "RANK": "0", "WORLD_SIZE": "1",
        "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(29500 + os.getpid() % 1000), "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    argv = [sys.executable, "-c", _SPY, "-o", str(tmp_path / "t.jsonl"), "--backend", "gloo",
            "--ops", "none", "--ddp", "--ddp-params", "64K", "--ddp-steps", "1",
            "--bucket-cap-mb", "1,25"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["code"] == 0 and len(said["seen"]) >= 4, said
    assert all(said["seen"]), said
