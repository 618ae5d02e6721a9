"""A fresh look at the CLI as a new user planning a run (pass 16): what a command prints beside
a measured step, and what scenario --vs may change."""

import json

import pytest

from tests._cli import one_line_error, run

# Llama-3.1-70B under ZeRO-1 on 64 H100s does not fit: train lists the changes that make it fit
TRAIN_70B = ("train", "--arch", "llama-3.1-70b", "--tokens", "2T", "--nodes", "8", "--zero", "1")


# --- train --step-time: the fit changes' steps are predicted, and say against what -------------


def test_train_step_time_fit_changes_say_they_are_against_the_predicted_step():
    """With --step-time the train's step is the measurement, but the fit changes are predicted
    and their % is against the predicted step of the setup: the text names that step (it is
    shown nowhere else) so '+24%' is not read against the 5 s typed."""
    pred = json.loads(run(*TRAIN_70B, "--json").stdout)["step_time_s"]
    r = run(*TRAIN_70B, "--step-time", "5s")
    assert r.exit_code == 0, r.stderr
    head = r.stdout.split("\n")
    assert head[0].startswith("DOES NOT FIT")
    fit_lines = [ln for ln in head[1:] if ln.startswith("  ") and not ln.startswith("  (")]
    assert fit_lines, r.stdout
    said = next(ln for ln in head if "not the measured --step-time" in ln)
    from costmodel import units

    assert units.format_duration(pred) in said and "5 s" in said
    # and it comes right after the changes, before the train's own table
    assert head.index(said) == 1 + len(fit_lines)


def test_train_step_time_fit_json_names_the_predicted_step():
    d = json.loads(run(*TRAIN_70B, "--step-time", "5s", "--json").stdout)
    pred = json.loads(run(*TRAIN_70B, "--json").stdout)["step_time_s"]
    fs = d["fit_suggestions"]
    assert fs["step_time_s"] == pred and d["step_time_s"] == 5.0
    ch = fs["changes"][0]
    assert abs(ch["step_time_change"] - (ch["step_time_s"] / pred - 1.0)) < 1e-12


def test_train_without_step_time_fit_text_unchanged():
    r = run(*TRAIN_70B)
    assert r.exit_code == 0, r.stderr
    assert "not the measured --step-time" not in r.stdout


# --- scenario --tokens-per-gpu --vs seq: B keeps the tokens per GPU, as the sweep's rows ------

SC = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "2", "--zero", "1")


def _sides(*args: str) -> tuple[dict, dict, dict]:
    r = run(*SC, *args, "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    return d["a"], d["b"], d


def _micro(side: dict) -> int:
    return int(side["scenario"]["local_batch"])


def _sweep_step(*sets: str) -> list[dict]:
    r = run(
        "sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100",
        "--set", "arch=llama-3.1-8b", "--set", "nodes=2", "--set", "strategy=zero1", *sets,
        "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_tokens_per_gpu_vs_seq_keeps_the_tokens_per_gpu():
    """8Ki tokens per GPU at seq 4096 is micro-batch 2; B at seq 8Ki is micro-batch 1, still
    8Ki tokens per GPU (it kept micro-batch 2: 16Ki tokens, a setup not asked for)."""
    a, b, d = _sides("--tokens-per-gpu", "8Ki", "--vs", "seq=8Ki")
    assert _micro(a) == 2 and _micro(b) == 1
    assert a["tokens_per_step"] == b["tokens_per_step"]  # 16 GPUs x 8Ki tokens each side
    assert d["b_solved"] == {
        "from": "--tokens-per-gpu",
        "tokens_per_gpu": 8192,
        "local_batch": 1,
        "accumulation": 1,
    }


def test_tokens_per_gpu_vs_seq_is_the_sweeps_row():
    """One road: the step sweep's tokens_per_gpu x sequence_length row is B's step."""
    _, b, _ = _sides("--tokens-per-gpu", "8Ki", "--vs", "seq=8Ki")
    (row,) = _sweep_step("--set", "tokens_per_gpu=8Ki", "--set", "sequence_length=8Ki")
    assert row["micro_batch"] == _micro(b)
    assert row["step_time_s"] == b["step_time_s"]


def test_tokens_per_gpu_vs_seq_says_so_in_bs_header():
    r = run(*SC, "--tokens-per-gpu", "8Ki", "--vs", "seq=8Ki")
    assert r.exit_code == 0, r.stderr
    b_line = next(ln for ln in r.stdout.splitlines() if ln.startswith("B: "))
    assert "micro-batch 1 solved from --tokens-per-gpu" in b_line


def test_tokens_per_gpu_vs_micro_batch_sets_bs_micro_batch():
    """--vs micro_batch names B's micro-batch: taken as typed, nothing solved."""
    a, b, d = _sides("--tokens-per-gpu", "8Ki", "--vs", "seq=8Ki,micro_batch=3")
    assert _micro(a) == 2 and _micro(b) == 3 and d["b_solved"] is None


def test_tokens_per_gpu_vs_nodes_keeps_the_micro_batch():
    a, b, d = _sides("--tokens-per-gpu", "8Ki", "--vs", "nodes=4")
    assert _micro(a) == _micro(b) == 2 and d["b_solved"] is None


def test_tokens_per_gpu_vs_seq_not_dividing_is_one_line():
    r = run(*SC, "--tokens-per-gpu", "8Ki", "--vs", "seq=3000")
    line = one_line_error(r, "--tokens-per-gpu", "8192", "3000")
    assert "--vs" in line


def test_tokens_per_gpu_and_global_tokens_vs_seq_keep_both():
    """With --global-tokens too, B's micro-batch is the tokens per GPU at B's sequence and its
    accumulation is solved from A's tokens per step."""
    a, b, d = _sides("--tokens-per-gpu", "8Ki", "--global-tokens", "1Mi", "--vs", "seq=8Ki")
    assert (_micro(a), a["scenario"]["accumulation"]) == (2, 8)
    assert (_micro(b), b["scenario"]["accumulation"]) == (1, 8)
    assert a["tokens_per_step"] == b["tokens_per_step"] == 2**20


# --- step --ranks without a link: the preset road it names ----------------------------------


def test_step_ranks_alone_names_the_cluster_road():
    """--ranks with only a link's --latency is the one-link step's half: the refusal names the
    preset road with the same count (`--cluster dgx-h100 --ranks 64`, which step takes as the
    sweep does); --ranks alone is that road (the default cluster, as train reads it)."""
    r = run("step", "--params", "7B", "--ranks", "64", "--latency", "5us")
    one_line_error(r, "--bandwidth: missing", "--cluster dgx-h100 --ranks 64")
    ok = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--ranks", "64", "--json")
    assert json.loads(ok.stdout)["ranks"] == 64


def test_step_cluster_with_ranks_and_bandwidth_still_refused():
    r = run(
        "step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--ranks", "64",
        "--bandwidth", "50GB/s",
    )  # fmt: skip
    one_line_error(r, "--cluster", "--bandwidth")


# --- scenario --vs with a scenario option that is no field of B: what gives B's value ---------


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ("price=lambda-b200-on-demand", ["--vs price", "--price-b"]),
        ("price-b=lambda-b200-on-demand", ["--vs price_b", "--price-b"]),
        ("usd_per_gpu_hour=3", ["--vs usd_per_gpu_hour", "--usd-per-gpu-hour-b"]),
        ("tokens=2T", ["--vs tokens", "--tokens", "both sides"]),
    ],
)
def test_vs_scenario_option_names_what_sets_bs_value(change, fragments):
    r = run(*SC, "--tokens", "2T", "--price", "aws-p5-on-demand", "--vs", f"nodes=4,{change}")
    line = one_line_error(r, *fragments)
    assert "unknown field" not in line


def test_vs_real_unknown_field_still_lists_the_fields():
    one_line_error(run(*SC, "--vs", "nodez=4"), "unknown field nodez", "allowed:")


# --- train and scenario --strategy all: one layout each; which command ranks them all --------


@pytest.mark.parametrize(
    "argv",
    [
        ("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--nodes", "8"),
        ("scenario", "--arch", "llama-3.1-8b", "--nodes", "8"),
    ],
)
@pytest.mark.parametrize("value", ["all", "ALL"])
def test_strategy_all_on_train_and_scenario_names_step_strategy_all(argv, value):
    r = run(*argv, "--strategy", value)
    one_line_error(r, "--strategy", "costmodel step --strategy all", "ddp, zero1, zero2, fsdp")


def test_vs_strategy_all_names_step_strategy_all():
    r = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--vs", "strategy=all")
    one_line_error(r, "strategy", "costmodel step --strategy all")


def test_train_gpus_row_has_thousands_separators():
    """train's GPUs row read "GPUs 1024" beside its own "x 1,024 GPUs" in the global batch row
    and scenario's "1,024"."""
    r = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--nodes", "128", "--zero", "3")
    assert r.exit_code == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("GPUs "))
    assert row.split()[-1] == "1,024"
    assert "x 1,024 GPUs" in r.stdout


def test_step_help_ranks_says_how_a_cluster_reads_it():
    r = run("step", "--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    ranks_help = text.split("--ranks <int>", 1)[1].split("--bandwidth <str>", 1)[0]
    assert "--cluster" in ranks_help and "whole nodes" in ranks_help


# --- a results file whose last line is no JSON at all: not JSON, not a row cut off -------------

ROW = json.dumps({"op": "all_reduce", "size_bytes": 1024, "time_s": 1e-5, "ranks": 2})


@pytest.mark.parametrize("command", [("validate", "compare"), ("calibrate",)])
def test_a_one_line_file_of_text_is_not_json_not_a_row_cut_off(tmp_path, command):
    """'garbage' in results.jsonl read "holds no rows (line 1, its only row, is cut off)": a row
    cut off by a killed job is the start of one ({...), not any text."""
    path = tmp_path / "r.jsonl"
    path.write_text("garbage\n")
    extra = ("-o", str(tmp_path / "c.toml")) if command == ("calibrate",) else ()
    line = one_line_error(run(*command, str(path), *extra), "line 1 is not JSON")
    assert "cut off" not in line


def test_a_last_line_of_text_after_rows_is_not_json(tmp_path):
    """A last line that is no start of a row (a shell's 'Killed' appended) is refused as a
    middle line is, not skipped as a row cut off."""
    from costmodel.validation.runner import load_results

    path = tmp_path / "r.jsonl"
    path.write_text(f"{ROW}\n{ROW.replace('1024', '2048')}\nKilled\n")
    with pytest.raises(ValueError, match=r"line 3 is not JSON$"):
        load_results(path)


def test_a_row_cut_off_is_still_a_warning(tmp_path):
    from costmodel.validation.runner import load_results

    path = tmp_path / "r.jsonl"
    path.write_text(f"{ROW}\n{ROW[:20]}")
    with pytest.warns(UserWarning, match="line 2 is cut off"):
        assert len(load_results(path)) == 1
