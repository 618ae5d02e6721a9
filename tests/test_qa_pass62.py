"""The sixty-second QA pass (a new user's questions through the CLI and the API):

- ``scenario --compute-time T --vs ...`` priced a B that changes the micro-batch's work (another
  model, micro-batch, recomputation, precision, MFU or power limit) at A's measured T: a 13B
  model at a 7B's compute, twice the micro-batch "for free", with no word; now refused in one
  line asking for B's own compute time, and the API's comparison says it;
- ``--power-limit-w`` beside ``--compute-time`` moved nothing and was accepted silently; refused,
  as ``--mfu`` is;
- ``train``/``scenario --model nccl-table`` was listed in their help and refused ("Input should
  be ..."): a step sweep row at that model had no scenario; now one road;
- the one-link ``step`` called a step with 20 % exposed communication "compute-bound" without a
  word (the lesson's rule, comm vs compute); the line now says which rule and the share;
- "what makes it fit" offered the next doubling of the nodes (4 nodes, 32 GPUs) where 3 fit.
"""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel import ddp
from costmodel.scenario import compare_summary, measured_compute_changed
from costmodel.strategy import strategy_step
from costmodel.strategy.advisor import fit_suggestions
from tests._cli import one_line_error, run

A = ("scenario", "--arch", "llama-2-7b", "--nodes", "4", "--zero", "1", "--compute-time", "500ms")


@pytest.mark.parametrize(
    "vs, named",
    [
        ("arch=llama-2-13b", "--vs arch"),
        ("micro_batch=2", "--vs micro_batch"),
        ("recompute=full", "--vs recompute"),
        ("precision=fp8", "--vs precision"),
        ("seq=8192", "--vs seq"),
    ],
)
def test_a_b_that_changes_the_work_of_a_measured_micro_batch_is_refused(vs, named):
    line = one_line_error(run(*A, "--vs", vs), named, "--compute-time", "compute_time=")
    assert "500 ms" in line


def test_a_b_with_an_mfu_beside_a_measured_compute_is_refused():
    """An MFU beside a measured compute time is refused by Scenario itself, as the CLI and the
    sweep refuse it (speed_beside_measured); B with its own predicted compute is answered."""
    one_line_error(run(*A, "--vs", "mfu=0.3"), "--vs mfu", "not with compute_time_s")
    assert run(*A, "--vs", "mfu=0.3,compute_time=none").exit_code == 0


def test_a_b_with_a_power_limit_beside_a_measured_compute_is_refused():
    """A power limit beside a measured compute time is refused by Scenario itself (it sets the
    speed of the compute the measurement replaces: speed_beside_measured), B's too."""
    one_line_error(
        run(*A, "--vs", "power_limit_w=300"), "--vs power_limit_w", "not with compute_time_s"
    )
    assert run(*A, "--vs", "power_limit_w=300,compute_time=none").exit_code == 0


def test_a_b_with_its_own_compute_or_the_same_work_is_answered():
    own = run(*A, "--vs", "micro_batch=2,compute_time=900ms", "--json")
    assert own.exit_code == 0, own.stderr
    data = json.loads(own.stdout)
    # B's own measured compute: twice the micro-batch is no longer free
    assert data["b"]["compute_s"] == pytest.approx(0.9)
    fitted = run(*A, "--vs", "micro_batch=2,compute_time=none", "--json")
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads(fitted.stdout)["b"]["compute_s"] != pytest.approx(0.5)
    # nodes change the communication, not the micro-batch: A's compute carries
    nodes = run(*A, "--vs", "nodes=8")
    assert nodes.exit_code == 0, nodes.stderr


def test_the_api_comparison_says_b_is_priced_at_as_measured_compute():
    a = cm.Scenario(arch="llama-2-7b", nodes=4, zero_stage=1, compute_time_s=0.5)
    b = a.with_changes({"local_batch": 2})
    assert measured_compute_changed(a, b) == ("local_batch",)
    assert measured_compute_changed(a, a.with_changes({"arch": "llama-2-13b"})) == ("arch",)
    assert measured_compute_changed(a, a.with_changes({"nodes": 8})) == ()
    own = a.with_changes({"local_batch": 2, "compute_time_s": 0.9})
    assert measured_compute_changed(a, own) == ()
    ra, rb = a.evaluate(scaling=False, flips=False), b.evaluate(scaling=False, flips=False)
    assert rb.compute_s == ra.compute_s  # what the caveat is about
    said = compare_summary(ra, rb)
    assert "B changes its work (local_batch)" in said and "its own measured compute" in said
    fitted = cm.Scenario(arch="llama-2-7b", nodes=4, zero_stage=1)
    plain = compare_summary(
        fitted.evaluate(scaling=False, flips=False),
        fitted.with_changes({"local_batch": 2}).evaluate(scaling=False, flips=False),
    )
    assert "measured compute" not in plain


@pytest.mark.parametrize("command", [("step", "--params", "7B"), ("train", "--params", "7B",
                                     "--tokens", "1T")])  # fmt: skip
def test_a_power_limit_beside_a_measured_compute_is_refused(command):
    one_line_error(
        run(*command, "--compute-time", "400ms", "--power-limit-w", "300"),
        "--power-limit-w: not with --compute-time",
    )
    # alone, each is answered
    assert run(*command, "--compute-time", "400ms").exit_code == 0
    assert run(*command, "--power-limit-w", "300").exit_code == 0


def test_scenario_and_train_take_the_reference_baseline_as_step_does():
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="fsdp")
    want = strategy_step(**kw, model="nccl-table").step_time_s
    assert want != strategy_step(**kw).step_time_s  # the baseline is another answer
    r = cm.Scenario(**kw, model="nccl-table").evaluate(scaling=False, flips=False)
    assert r.step_time_s == pytest.approx(want, rel=1e-12)
    args = ("--arch", "llama-3.1-8b", "--nodes", "2", "--strategy", "fsdp", "--json")
    for cmd in (("scenario",), ("train", "--tokens", "1T")):
        res = run(*cmd, *args, "--model", "nccl-table")
        assert res.exit_code == 0, res.stderr
        data = json.loads(res.stdout)
        assert data["step_time_s"] == pytest.approx(want, rel=1e-12), cmd
    step = json.loads(run("step", *args, "--model", "nccl-table").stdout)
    assert step["step_time_s"] == pytest.approx(want, rel=1e-12)
    # an unknown model is still refused, naming the baseline among the choices
    one_line_error(run("scenario", *args, "--model", "magic"), "--model")


def test_the_one_link_verdict_says_its_rule_and_the_exposed_share():
    s = ddp.ddp_step(7e9, 64, compute_time_s=0.6, bandwidth_bytes_per_s=50e9)
    assert s.bound == "compute"  # the lesson's rule: 551 ms of all-reduce < 600 ms of compute
    share = s.exposed_comm_s / s.step_time_s
    assert share > 0.05
    text = ddp.bound_text(s)
    assert text.startswith("compute-bound by the lesson's rule") and f"{share:.0%}" in text
    assert "comms-bound by the cluster step's rule" in text
    res = run("step", "--params", "7B", "--compute-time", "600ms", "--ranks", "64",
              "--bandwidth", "50GB/s")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("bound")]
    assert line.split(None, 1)[1] == text
    # the lesson's own problem: comms-bound by both rules, said plainly
    comms = ddp.bound_text(ddp.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9))
    assert comms.startswith("comms-bound (all-reduce") and "rule" not in comms
    # fp8 gradients (the lesson's flip): compute-bound with 2.5 % exposed, no caveat
    fp8 = ddp.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9,
                       gradient_bytes_per_param=1)  # fmt: skip
    assert ddp.bound_text(fp8).startswith("compute-bound (all-reduce")


@pytest.mark.parametrize(
    "arch, nodes, want",
    [("llama-3.1-70b", 1, 3), ("llama-3.1-405b", 16, 23)],
)
def test_more_gpus_offers_the_fewest_nodes_that_fit(arch, nodes, want):
    kw = dict(arch=arch, cluster="dgx-h100", strategy="fsdp", recompute="full")
    fa = fit_suggestions(nodes=nodes, **kw)
    more = [c for c in fa.changes if c.kind == "more_gpus" and c.fits]
    assert more, [c.change for c in fa.changes]
    first = more[0]
    assert first.updates["nodes"] == want
    assert first.change.startswith(f"{want} nodes ({want * 8} GPUs)")
    # it fits there and not one node fewer: the fewest
    assert strategy_step(nodes=want, **kw).fits
    assert not strategy_step(nodes=want - 1, **kw).fits
    assert first.step.step_time_s == pytest.approx(
        strategy_step(nodes=want, **kw).step_time_s, rel=1e-12
    )


def test_the_largest_model_says_it_holds_this_models_activations_fixed():
    """``memory --arch llama-3.1-8b --zero 3 --ranks 32 --seq 8192`` said "largest model that
    fits 46.5 B params", read as "any model up to 46.5B fits", while a 30B model at the same
    settings does not: the count holds the 8B's activations and gathered units fixed."""
    args = ("memory", "--zero", "3", "--ranks", "32", "--seq", "8192", "--cluster", "dgx-h100")
    small = run(*args, "--arch", "llama-3.1-8b")
    assert small.exit_code == 0, small.stderr
    (line,) = [x for x in small.stdout.splitlines() if x.startswith("largest model that fits")]
    data = json.loads(run(*args, "--arch", "llama-3.1-8b", "--json").stdout)
    fixed = data["activations_GB"] + data["buffers_GB"]  # fsdp: its gathered units
    assert f"activations and gathered units, {fixed:.3g} GB, held fixed" in line, line
    assert data["max_params"] > 30e9  # the count says a 30B would fit ...
    big = json.loads(run(*args, "--arch", "mpt-30b", "--json").stdout)
    assert big["fits"] is False  # ... and a named 30B does not: what the words are for


def test_a_measured_computes_band_says_what_it_spans():
    """``step --arch llama-2-7b --nodes 1 --compute-time 400ms`` read "479 ms (band 479 ms-479
    ms)", "an 80% band, checked on published runs", of a step whose 78 ms of optimizer step and
    DDP host time are predictions with no band; the line now says what the band spans."""
    args = ("step", "--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "1")
    measured = run(*args, "--compute-time", "400ms")
    data = json.loads(run(*args, "--compute-time", "400ms", "--json").stdout)
    assert data["step_time_hi_s"] - data["step_time_lo_s"] < 0.01 * data["step_time_s"]
    (line,) = [x for x in measured.stdout.splitlines() if x.startswith("step band")]
    unbanded = cm.units.format_duration(data["optimizer_s"] + data["host_overhead_s"])
    assert "the measured compute is taken as it is" in line and f"({unbanded})" in line, line
    fitted = run(*args)
    (plain,) = [x for x in fitted.stdout.splitlines() if x.startswith("step band")]
    assert "measured" not in plain and plain.endswith("sources)")


@pytest.mark.parametrize(
    "change, said",
    [
        ("precision=fp4", "--vs precision: must be bf16 or fp8, got 'fp4'"),
        ("param_dtype=int4", "--vs param_dtype: must be bf16, fp16, fp8 or fp32, got 'int4'"),
        ("loss=x", "--vs loss: must be fp32, fp32-held or fused, got 'x'"),
    ],
)
def test_a_refused_choice_says_what_was_typed(change, said):
    """``--vs precision=fp4`` said pydantic's "Input should be 'bf16' or 'fp8'", no word of what
    was typed, where ``--precision fp4`` says "must be bf16 or fp8, got 'fp4'"; the API too."""
    assert one_line_error(run("scenario", "--params", "7B", "--vs", change)).endswith(said)
    key, _, value = change.partition("=")
    with pytest.raises(ValueError, match=said.removeprefix("--vs ")):
        cm.Scenario(params=7e9, **{key: value})


def test_hsdps_default_group_is_named_as_the_default():
    """``memory --ranks 12 --cluster dgx-h100 --strategy hsdp`` said "--group-size: 8 does not
    divide the 12 ranks", of an option not given: the default (one node) is named as such."""
    args = ("memory", "--arch", "llama-3.1-8b", "--ranks", "12", "--cluster", "dgx-h100",
            "--strategy", "hsdp")  # fmt: skip
    line = one_line_error(run(*args))
    assert line.endswith(
        "--group-size: the default, one node's 8 GPUs, does not divide the 12 ranks; "
        "allowed: 1, 2, 4; give --group-size"
    ), line
    typed = one_line_error(run(*args, "--group-size", "8"))
    assert typed.endswith("--group-size: 8 does not divide the 12 ranks; allowed: 1, 2, 4")
    assert run(*args, "--group-size", "4").exit_code == 0


def test_a_users_log_named_like_a_bundled_runs_short_id_is_the_users_own(tmp_path):
    """A user's own 2 x 8 H100 log saved as ``20_allreduce.txt`` was read as the bundled run 20
    (its file name's short id): that run's cluster (gcp-a3-high) and pinned ring were applied
    beside the ``--cluster dgx-h100`` given, and the same bytes went from ok to FAIL. Only a
    bundled file's content (or its whole name) makes a log that run now."""
    from costmodel.reference import reference_path

    lines = reference_path("06a", kind="nccl-tests").read_text().splitlines(keepends=True)
    # the user's own copy: no curator's header, no device lines (rows alone)
    mine = "".join(x for x in lines if not x.startswith("# ") or "nThread" in x)
    results = []
    for name in ("mine.txt", "20_allreduce.txt"):
        (tmp_path / name).write_text(mine)
        args = ("validate", "compare", str(tmp_path / name), "--op", "all_reduce",
                "--nodes", "2", "--cluster", "dgx-h100", "--json")  # fmt: skip
        res = run(*args)
        assert res.exit_code in (0, 1), res.stderr
        assert "bundled run" not in res.stdout + res.stderr, name
        results.append(json.loads(res.stdout)["median_abs_rel_error"])
    assert results[0] == results[1]


@pytest.mark.parametrize("kind, axes", [("collective", {"size": "1GB"}),
                                        ("step", {"arch": "llama-3.1-8b", "strategy": "fsdp"})])  # fmt: skip
def test_preset_all_says_which_presets_it_leaves_out(kind, axes):
    """``sweep --set preset=all --set nodes=1,2`` dropped the three one-node PCIe boxes, their
    valid one-node rows too, without a word: now a warning names them, once a sweep."""
    import warnings

    from costmodel import presets

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = cm.sweep(kind=kind, preset="all", nodes=[1, 2], **axes)
    said = [str(w.message) for w in caught if "leaves out" in str(w.message)]
    no_network = [n for n in presets.names("cluster") if presets.cluster(n).node.nics_per_node == 0]
    assert no_network and len(said) == 1, said
    assert all(n in said[0] for n in no_network) and not set(no_network) & set(df["preset"])
    # one node only: every preset, nothing said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = cm.sweep(kind=kind, preset="all", nodes=[1], **axes)
    assert not [w for w in caught if "leaves out" in str(w.message)]
    assert set(no_network) <= set(one["preset"])


@pytest.mark.parametrize(
    "text, typed, said",
    [
        ('kind = "step"\n[grid]\npreset = "dgx-h100"\nsize = "1GB"\nnodes = [2]\n',
         "collective", "--kind collective contradicts kind = 'step' in "),
        ('kind = "collective"\n[grid]\npreset = "dgx-h100"\narch = "llama-3.1-8b"\n'
         'nodes = [2]\n', "step", "--kind step contradicts kind = 'collective' in "),
    ],
)  # fmt: skip
def test_a_grid_files_kind_against_kind_is_said_first(tmp_path, text, typed, said):
    """A grid file whose ``kind`` contradicts ``--kind`` was refused for an axis of the file's
    kind, its message asking for the ``--kind`` the user had typed; the contradiction is said
    first."""
    grid = tmp_path / "g.toml"
    grid.write_text(text)
    one_line_error(run("sweep", str(grid), "--kind", typed), said + str(grid))
    # the API reads a file's kind as its own (kind= is the default of a file naming none)
    from costmodel.sweep import load_grid

    with pytest.raises(ValueError, match="unknown"):
        load_grid(grid, typed)


def test_a_calibration_on_another_cluster_than_a_bundled_runs_is_said(tmp_path):
    """``validate compare --reference 16a --calibration p5.toml`` (16a: A100s on aws-p4de; the
    calibration's cluster aws-p5) said nothing and showed a 135 % error as the calibration's;
    ``--cluster aws-p5`` says the run ran elsewhere. Now both say it."""
    from costmodel.reference import reference_path

    cal = tmp_path / "p5cal.toml"
    made = run("calibrate", str(reference_path("16b", kind="nccl-tests")), "--cluster", "aws-p5",
               "--name", "p5cal", "-o", str(cal))  # fmt: skip
    assert made.exit_code == 0, made.stderr
    want = "cluster: the bundled run 16a ran on aws-p4de (its index), not aws-p5"
    for option in (("--calibration", str(cal)), ("--cluster", "aws-p5")):
        res = run("validate", "compare", "--reference", "16a", *option, "--json")
        assert any(w.startswith(want) for w in json.loads(res.stdout)["warnings"]), option
    # the run it was calibrated on: nothing to say
    same = run("validate", "compare", "--reference", "16b", "--calibration", str(cal), "--json")
    assert not any("ran on" in w for w in json.loads(same.stdout)["warnings"])


def test_a_step_sweeps_progress_moves_and_is_said_off_a_terminal(tmp_path, capsys, monkeypatch):
    """A step sweep's rows were evaluated in one chunk (1,000,000 rows), so its progress bar
    jumped from 0 to the end, and off a terminal ``--progress`` printed nothing at all (a
    40-minute sweep silent under nohup or Slurm). Now the count moves in chunks of at most
    STEP_PROGRESS_ROWS, as plain lines where no bar is drawn; the rows are the same."""
    import pandas as pd

    import costmodel.sweep as sw

    monkeypatch.setattr(sw, "PROGRESS_LINE_S", 0.0)  # every chunk said
    monkeypatch.setattr(sw, "STEP_PROGRESS_ROWS", 16)
    axes = dict(preset="dgx-h100", arch="llama-3.1-8b", strategy="fsdp", nodes="1..40")
    sw.sweep_to_file(tmp_path / "a.csv", kind="step", progress="lines", **axes)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("sweep: ")]
    counts = [int(x.split()[1].replace(",", "")) for x in lines]
    assert counts[:3] == [16, 32, 40] and lines[-1].startswith("sweep: 40 of 40 rows (100.0 %)")
    sw.sweep_to_file(tmp_path / "b.csv", kind="step", **axes)  # no progress: one chunk
    assert pd.read_csv(tmp_path / "a.csv").equals(pd.read_csv(tmp_path / "b.csv"))
    # the CLI off a terminal (CliRunner's stderr is none): lines with --progress, none without
    args = ("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b",
            "--set", "nodes=1..3")  # fmt: skip
    said = run(*args, "--progress", "-o", str(tmp_path / "c.csv"))
    assert said.exit_code == 0 and "sweep: 3 of 3 rows (100.0 %)" in said.stderr, said.stderr
    quiet = run(*args, "-o", str(tmp_path / "d.csv"))
    assert quiet.exit_code == 0 and "sweep: " not in quiet.stderr
    with pytest.raises(ValueError, match="progress: must be True, False or 'lines'"):
        sw.sweep_to_file(tmp_path / "e.csv", kind="step", progress="bar", **axes)


def test_no_flip_is_called_the_verdicts_where_the_exposed_share_sets_it():
    """``Scenario.evaluate().flip`` is the smallest change of the comm-vs-compute balance (the
    lesson's verdict); a step comms-bound by its exposed share (14 %) with the all-reduce
    shorter than the compute had "1.08x less compute per step makes it comms-bound" as its
    flip. None there now; the list stays, and where the two rules agree the flip is kept."""
    s = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=8, compute_time_s=0.7, model="lesson")
    r = s.evaluate(scaling=False)
    assert r.bound == "comms" and r.comm_s < r.compute_s
    assert r.flip is None and r.flips
    agree = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=8, compute_time_s=0.4,
                        model="lesson").evaluate(scaling=False)  # fmt: skip
    assert agree.bound == "comms" and agree.comm_s > agree.compute_s and agree.flip is not None
    text = run("scenario", "--params", "7B", "--nodes", "8", "--compute-time", "400ms",
               "--model", "lesson").stdout  # fmt: skip
    assert "(of the comm-vs-compute balance, the lesson's verdict)" in text
