"""A new user's pass over the CLI and the API: what each papercut it found does now.

Each test asks a question the way a planner would (a typo, a folder instead of a file, an option
that belongs to the other form of a command, a step faster than the GPUs' peak) and checks the
answer: one line naming the field on exit 2, or the numbers that make up a step adding up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import costmodel as cm
from costmodel.strategy.layout import unknown_strategy
from tests._cli import one_line_error, run

ONE_LINK = ("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "64", "--bandwidth",
            "50GB/s")  # fmt: skip
ON_CLUSTER = ("step", "--params", "7B", "--compute-time", "400ms", "--cluster", "dgx-h100",
              "--nodes", "8")  # fmt: skip


# --- pydantic's errors: the field and the rule, without "value: Value error," ------------------
def test_a_scenario_error_names_the_field_without_pydantic_noise():
    line = one_line_error(
        run("train", "--arch", "llama-3.1-8B", "--tokens", "15T"), "arch: unknown architecture"
    )
    assert "Value error" not in line and "value:" not in line
    assert "did you mean 'llama-3.1-8b'?" in line


def test_a_preset_name_in_other_case_gets_did_you_mean():
    """Names are lower-case, one spelling each: DGX-H100 is refused with the one to type."""
    line = one_line_error(
        run("collective", "all_reduce", "--size", "1GB", "--cluster", "DGX-H100"),
        "unknown cluster preset 'DGX-H100'",
    )
    assert "did you mean 'dgx-h100'?" in line
    line = one_line_error(run("presets", "show", "Dgx-A100"), "unknown preset 'Dgx-A100'")
    assert "did you mean 'dgx-a100'?" in line


# --- one name per strategy: the other names users type point to it ----------------------------
@pytest.mark.parametrize(
    ("args", "hint"),
    [
        ((*ON_CLUSTER, "--strategy", "zero3"), "(ZeRO-3 is fsdp here)"),
        (("scenario", "--params", "7B", "--strategy", "ZeRO-3"), "(ZeRO-3 is fsdp here)"),
        (("scenario", "--params", "7B", "--vs", "strategy=full_shard"), "(full_shard is fsdp"),
        (
            (
                "sweep",
                "--kind",
                "step",
                "--set",
                "preset=dgx-h100",
                "--set",
                "params=7B",
                "--set",
                "strategy=zero-2",
                "--set",
                "nodes=1",
            ),
            "(ZeRO-2 is zero2 here)",
        ),
    ],  # fmt: skip
)
def test_another_name_for_a_strategy_points_to_its_name(args, hint):
    one_line_error(run(*args), "strategy: unknown", "allowed: ddp, zero1, zero2, fsdp, hsdp", hint)


def test_unknown_strategy_hint_only_for_names_of_a_strategy():
    assert unknown_strategy("bogus").endswith("allowed: ddp, zero1, zero2, fsdp, hsdp")
    assert "(NO_SHARD is ddp here)" in unknown_strategy("NO_SHARD")
    with pytest.raises(ValueError, match=r"ZeRO-3 is fsdp here"):
        cm.strategy_step(7e9, cluster="dgx-h100", nodes=1, strategy="zero3")


# --- step: an option of the other form is refused, not silently ignored -----------------------
@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((*ON_CLUSTER, "--gradient-bytes", "1"), "--gradient-bytes"),
        ((*ON_CLUSTER, "--latency", "5us"), "--latency"),
        ((*ONE_LINK, "--grad-dtype", "fp32"), "--grad-dtype"),
        ((*ONE_LINK, "--param-dtype", "fp8"), "--param-dtype"),
        ((*ONE_LINK, "--micro-batch", "2"), "--micro-batch"),
        ((*ONE_LINK, "--recompute", "full"), "--recompute"),
        ((*ONE_LINK, "--model", "lesson"), "--model"),
        ((*ONE_LINK, "--group-size", "8"), "--group-size"),
    ],
)
def test_step_refuses_an_option_the_form_would_ignore(args, field):
    line = one_line_error(run(*args), field)
    assert line.startswith(f"costmodel: error: {field}: an option of the")


@pytest.mark.parametrize(
    "typed",
    [("--seq", "4096"), ("--sequence-length", "4096"), ("--micro-batch", "1"),
     ("--recipe", "mixed-adam"), ("--recompute", "none"), ("--loss", "fp32"),
     ("--model", "nccl"), ("--param-dtype", "bf16")],
)  # fmt: skip
def test_step_refuses_a_cluster_option_typed_at_its_default_value(typed):
    """Given is given: `step --ranks 8 --bandwidth 50GB/s --seq 4096` was answered (4096 is the
    default, read as not given) while `--seq 8192` was refused. The refusal names the spelling
    typed (--sequence-length, not --seq)."""
    option = typed[0]
    line = one_line_error(run(*ONE_LINK, *typed), option)
    assert line.startswith(f"costmodel: error: {option}: an option of the")


def test_step_on_a_cluster_takes_the_default_whether_typed_or_left_out():
    typed = ("--seq", "4096", "--micro-batch", "1", "--recipe", "mixed-adam", "--recompute",
             "none", "--model", "nccl", "--param-dtype", "bf16")  # fmt: skip
    # --loss sizes activations alone, which a bare count has none of: given is given, refused
    # at its default too, as memory refuses it (tests/test_cli_qa_pass5.py)
    one_line_error(run(*ON_CLUSTER, "--loss", "fp32"), "--loss: sizes activations")
    absent = json.loads(run(*ON_CLUSTER, "--json").stdout)
    given = json.loads(run(*ON_CLUSTER, *typed, "--json").stdout)
    assert absent == given
    assert (absent["sequence_length"], absent["micro_batch"], absent["recipe"]) == (
        4096, 1, "mixed-adam",
    )  # fmt: skip
    # --tokens-per-gpu sets the micro-batch: a typed --micro-batch 1 beside it is refused too
    tokens = ("step", "--params", "7B", "--cluster", "dgx-h100", "--tokens-per-gpu", "8192")
    one_line_error(run(*tokens, "--micro-batch", "1"), "--micro-batch: not with --tokens-per-gpu")
    assert run(*tokens).exit_code == 0


def test_the_one_link_step_still_takes_its_own_options():
    base = json.loads(run(*ONE_LINK, "--json").stdout)
    fp8 = json.loads(run(*ONE_LINK, "--gradient-bytes", "1", "--json").stdout)
    slow = json.loads(run(*ONE_LINK, "--latency", "5us", "--json").stdout)
    assert fp8["comm_s"] == pytest.approx(base["comm_s"] / 2, rel=1e-9)  # half the bytes
    assert slow["comm_s"] > base["comm_s"]  # a latency per ring step adds to every bucket


# --- step and scenario: the parts of a step add up to it ---------------------------------------
def test_step_text_shows_every_part_of_the_step():
    args = (*ON_CLUSTER, "--strategy", "fsdp")
    d = json.loads(run(*args, "--json").stdout)
    assert d["optimizer_s"] > 0 and d["sync_s"] > 0
    parts = d["compute_s"] + d["exposed_comm_s"] + d["optimizer_s"] + d["sync_s"]
    assert parts == pytest.approx(d["step_time_s"], rel=1e-9)
    text = run(*args).stdout
    assert "optimizer step" in text and "waiting for slowest rank" in text


def test_scenario_carries_the_optimizer_and_sync_of_the_same_step():
    kw = dict(params=7e9, cluster="dgx-h100", nodes=8, compute_time_s=0.4)
    r = cm.Scenario(**kw, strategy="fsdp").evaluate(scaling=False)
    s = cm.strategy_step(7e9, cluster="dgx-h100", nodes=8, compute_time_s=0.4, strategy="fsdp")
    assert (r.optimizer_s, r.sync_s, r.step_time_s) == (s.optimizer_s, s.sync_s, s.step_time_s)
    assert "optimizer, sync" in r.summary()
    # the comparison row is every collective (fsdp has no all-reduce), not "all-reduce"
    rows = {row["field"]: row for row in r.compare(r)}
    assert rows["comm_s"]["label"] == "communication (sum)"
    assert rows["comm_s"]["a"] == pytest.approx(sum(r.comm_by_kind_s.values()), rel=1e-12)


# --- one name for the micro-batch on step, scenario, train and memory --------------------------
def test_micro_batch_and_local_batch_are_one_option_everywhere():
    scen = ("scenario", "--params", "7B", "--compute-time", "400ms", "--json")
    a = json.loads(run(*scen, "--micro-batch", "2").stdout)
    b = json.loads(run(*scen, "--local-batch", "2").stdout)
    assert a["scenario"]["local_batch"] == 2 and a["step_time_s"] == b["step_time_s"]
    step = ("step", "--params", "7B", "--cluster", "dgx-h100", "--json")
    c = json.loads(run(*step, "--local-batch", "2").stdout)
    d = json.loads(run(*step, "--micro-batch", "2").stdout)
    assert c["tokens_per_step"] == d["tokens_per_step"] == 2 * 8 * 4096
    solved = json.loads(
        run(
            "batch", "--micro-batch", "4", "--ranks", "64", "--global-batch", "8192", "--json"
        ).stdout
    )
    assert solved["accumulation"] == 32
    vs = cm.Scenario(params=7e9).with_changes("micro_batch=2")
    assert vs.local_batch == 2


# --- a measured step faster than the GPUs' peak compute is an input error ----------------------
def test_a_measured_step_faster_than_peak_is_refused():
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8).evaluate(scaling=False)
    assert 0 < r.training_cost(2e12, measured_step_time_s=1.0).mfu < 1
    with pytest.raises(ValueError, match=r"step_time_s: .* implies an MFU of .*at least 0\.1"):
        r.training_cost(2e12, measured_step_time_s=1e-3)
    line = one_line_error(
        run("train", "--arch", "llama-2-7b", "--tokens", "2T", "--nodes", "8", "--step-time",
            "1ms"),
        "--step-time:", "allowed: a step of at least",
    )  # fmt: skip
    assert "%" in line  # the MFU it implied, in percent


# --- files: a folder or a non-text file is named as such ----------------------------------------
def test_a_folder_or_binary_file_where_a_file_is_expected(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    binary = tmp_path / "grid.toml"
    binary.write_bytes(b"kind = \xff\xfe\n")
    one_line_error(run("validate", "compare", str(folder)), "RESULTS:", "is a folder")
    one_line_error(
        run("calibrate", str(folder), "-o", str(tmp_path / "c.toml")), "RESULTS:", "is a folder"
    )
    one_line_error(run("sweep", str(folder)), "GRID_FILE:", "is a folder")
    one_line_error(run("sweep", str(binary)), "GRID_FILE:", "not UTF-8 text")
    assert not (tmp_path / "c.toml").exists()


# --- nothing fits under any strategy: say what makes it fit -----------------------------------
def test_strategy_all_when_nothing_fits_lists_the_changes_that_make_it_fit():
    args = ("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "all",
            "--seq", "65536")  # fmt: skip
    text = run(*args).stdout
    assert "NOTHING FITS" in text and "recompute full:" in text
    d = json.loads(run(*args, "--json").stdout)
    assert d["best"] is None
    assert not d["fit_suggestions"]["fits"] and d["fit_suggestions"]["changes"][0]["fits"]


# --- small things a user reads ------------------------------------------------------------------
def test_train_says_fits_and_lists_every_collective_model():
    out = run("train", "--params", "1B", "--tokens", "1B", "--cluster", "dgx-b200").stdout
    assert "(fits)" in out
    helptext = " ".join(run("train", "--help").stdout.split())
    assert "lesson, textbook, nccl (default), calibrated" in helptext


def test_a_count_has_no_stray_space_before_the_comma():
    with pytest.raises(ValueError, match=r"must be a finite number >= 0, got -1\.0$"):
        cm.training_memory(-1)
    with pytest.raises(ValueError, match=r"must be a finite number > 0 s, got"):
        cm.ddp_step(7e9, 64, compute_time_s=-0.4, bandwidth_bytes_per_s=50e9)


# --- validate compare: --op fills a gap in the log, it never overrides what the log says ------
def test_an_op_that_contradicts_the_log_is_refused():
    from costmodel.reference import reference_path

    log = str(reference_path("13a"))  # header: "Collective test starting: all_reduce_perf"
    one_line_error(
        run("validate", "compare", log, "--op", "all_gather"),
        "op: all_gather contradicts the log, which names all_reduce",
    )
    same = run("validate", "compare", log, "--op", "all_reduce", "--json")
    assert same.exit_code == 0, same.stderr
    assert json.loads(same.stdout)["rows"]


# --- a measured compute time faster than the GPU's peak is refused, as a measured step is ------
def test_a_compute_time_faster_than_peak_is_refused():
    kw = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, strategy="fsdp")
    with pytest.raises(ValueError, match=r"compute_time_s: .* implies an MFU of .*at least 0\.2"):
        cm.strategy_step(None, compute_time_s=1e-3, **kw)
    ok = cm.strategy_step(None, compute_time_s=0.4, **kw)  # 2.1e14 FLOP in 0.4 s: 53% of peak
    assert not any("faster than the GPU" in n for n in ok.notes)
    one_line_error(
        run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--strategy", "fsdp",
            "--compute-time", "1ms"),
        "--compute-time:", "implies an MFU of", "allowed: a compute time of at least",
    )  # fmt: skip


# --- the bucket_cap advisor answers for the step it models (ddp), and says so otherwise -------
def test_bucket_advice_is_for_ddp_only():
    kw = dict(arch="llama-2-7b", cluster="dgx-h100", nodes=2)
    for strategy in ("zero1", "fsdp"):
        with pytest.raises(ValueError, match=rf"bucket_advice: .*; {strategy} .*allowed: strategy"):
            cm.Scenario(**kw, strategy=strategy).bucket_advice()
    ddp = cm.Scenario(**kw).bucket_advice()  # its curve is the scenario's own step at each cap
    r = cm.Scenario(**kw).evaluate(scaling=False, flips=False)
    now = list(ddp.caps_bytes).index(25 * 2**20)
    assert ddp.step_time_s[now] == pytest.approx(r.step_time_s, rel=1e-12)
    out = run("scenario", "--arch", "llama-2-7b", "--nodes", "2", "--zero", "3", "--vs",
              "strategy=ddp", "--bucket-advice").stdout  # fmt: skip
    assert "bucket_cap advice (A): none: " in out and "bucket_cap advice (B): 25 MiB" in out


# --- a shipped preset file loads by its path, and the calibration hint names a real option ---
def test_a_preset_in_a_kind_folder_loads_by_path():
    from costmodel import presets

    root = Path(__file__).resolve().parents[1] / "presets"
    by_path = presets.cluster(str(root / "clusters" / "dgx-h100.toml"), nodes=2)
    assert by_path.ranks == 16 and by_path.gpu.name == "h100-sxm"
    assert run("presets", "show", str(root / "gpus" / "h100-sxm.toml")).exit_code == 0
    line = one_line_error(
        run("predict", "--cluster", "dgx-h100", "--sizes", "1GB", "--model", "calibrated"),
        "carries no calibration",
    )
    assert "--cluster NAME" in line and "--base" not in line


def test_a_gap_of_rounding_noise_is_not_printed_as_a_figure():
    from costmodel.verdict import decide

    text = decide({"a": 1.0, "b": 1.0 + 1e-15}, 0.01).text()
    # under the printed resolution: the same time, said so (no "1e-13% faster")
    assert "the same time (to within 0.01%)" in text and "e-" not in text
    assert "0.12%" in decide({"a": 1.0, "b": 1.0012}, 0.01).text()


def test_train_says_what_a_data_parallel_answer_leaves_out_for_moe():
    out = run("train", "--arch", "mixtral-8x7b", "--tokens", "1T", "--nodes", "4", "--strategy",
              "fsdp").stdout  # fmt: skip
    assert "note: mixtral-8x7b is a mixture of experts" in out and "expert parallelism" in out
    dense = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--strategy", "fsdp").stdout
    assert "mixture of experts" not in dense


def test_fp8_all_gathers_need_a_gpu_with_fp8():
    kw = dict(arch="llama-3.1-8b", nodes=1, strategy="fsdp", param_dtype="fp8", band=False)
    with pytest.raises(ValueError, match=r"param_dtype: .*a100-sxm-80gb has none; allowed: bf16"):
        cm.strategy_step(None, cluster="dgx-a100", **kw)
    assert cm.strategy_step(None, cluster="dgx-h100", **kw).step_time_s > 0
    one_line_error(
        run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--strategy", "fsdp",
            "--param-dtype", "fp8"),
        "--param-dtype: fp8 all-gathers need fp8 tensor cores",
    )  # fmt: skip


def test_a_step_with_half_a_link_asks_for_the_other_half_first():
    """`step --params 7B --ranks 8 --latency 5us`: the missing half of the link is named, not
    the compute time (`step --arch X --ranks 8` alone runs on the default cluster, as `train
    --ranks 8` does: tests/test_cli_qa_pass21.py)."""
    line = one_line_error(
        run("step", "--params", "7B", "--ranks", "8", "--latency", "5us"),
        "--bandwidth: missing",
        "a cluster: --cluster dgx-h100 --ranks 8",
    )
    assert "--compute-time, or --tokens-per-gpu" not in line
    # with a link and no compute, the compute is what is missing
    one_line_error(
        run("step", "--params", "7B", "--ranks", "8", "--bandwidth", "50GB/s"),
        "needs --compute-time, or --tokens-per-gpu",
    )


def test_a_size_past_every_cap_names_one_range():
    """1e30 B said "must be a size in 1 B..16 TiB" and then, in brackets, "above the largest
    size accepted, 1e+18 B": two ranges for one box. The command's range is the one said."""
    line = one_line_error(
        run("collective", "all_reduce", "--size", "1e30", "--ranks", "8", "--bandwidth", "50GB/s"),
        "16 TiB",
    )
    assert "1e+18" not in line
