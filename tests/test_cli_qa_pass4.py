"""A new user's fourth pass over the CLI, planning a training run.

The questions walked: a 14 GB all-reduce on 8 DGX H100 nodes (`collective`, `predict`, the
sweep), Llama-3.1-70B under FSDP against the other strategies (`step --strategy all`,
`memory`), Llama-3.1-8B on 15T tokens on H100 and B200 with prices (`train`, `scenario --vs`),
a 4M-token batch on 512 GPUs (`batch`) and a model from a Hugging Face config.json. What was
wrong, each pinned here:

- a protocol that is no protocol (`--protocol foo`) was answered under the alpha-beta models
  (predict, the sweep), and `predict --model lesson --protocol LL` answered what auto answers;
- `collective --ranks/--bandwidth --model nccl` answered with the textbook formulas, where
  every other value of --model was refused over one link;
- the cost line of `train` (and the --vs note of `scenario`) offered --price for a GPU that
  has no price preset, and `scenario --tokens` without a price said nothing of how to get one;
- `costmodel archs`, where that line sends the user for prices, listed them under no heading;
- `costmodel presets --help` promised a `describe` command there is not;
- `step` and the step sweep had no --flash/--no-flash (flash_attention), which train,
  scenario, memory and the memory sweep take, so the same question could not be asked of them.
"""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel.sweep import sweep
from tests._cli import one_line_error, run

# --- the protocol: a name that is none is refused on every model -----------------------------


@pytest.mark.parametrize("model", ["lesson", "textbook"])
def test_an_unknown_protocol_is_refused_on_every_model(model):
    with pytest.raises(ValueError, match="'foo' is not an NCCL protocol"):
        cm.predict_collective("all_reduce", 1e9, "dgx-h100", model=model, protocol="foo")
    one_line_error(
        run(
            *("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--size", "1GB"),
            *("--model", model, "--protocol", "foo"),
        ),
        "--protocol: 'foo' is not an NCCL protocol",
    )


def test_the_sweep_refuses_an_unknown_protocol_under_the_alpha_beta_models():
    with pytest.raises(ValueError, match="'foo' is not an NCCL protocol"):
        sweep(preset="dgx-h100", model="textbook", protocol="foo", size="1GB")
    # a real protocol still sweeps (the textbook rows say none ran)
    df = sweep(preset="dgx-h100", model="textbook", protocol="LL,Simple", size="1GB")
    assert list(df["protocol_requested"]) == ["ll", "simple"]


def test_predict_refuses_a_protocol_the_alpha_beta_models_do_not_have():
    line = one_line_error(
        run(
            *("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "8"),
            *("--size", "14GB", "--model", "lesson", "--protocol", "LL"),
        ),
        "--protocol: the lesson model",
        "leave it at auto",
    )
    assert "--model nccl" in line
    # auto, and NCCL's own models, answer as before
    r = run(
        *("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "8"),
        *("--size", "14GB", "--model", "textbook", "--protocol", "auto", "--json"),
    )
    assert r.exit_code == 0, r.stderr
    r = run(
        *("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "8"),
        *("--size", "14GB", "--protocol", "LL", "--json"),
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["protocol_used"] == "ll"


# --- collective over one link: a cluster's --model typed is refused ---------------------------


def test_collective_over_one_link_refuses_model_nccl_typed():
    one_line_error(
        run(
            *("collective", "all_reduce", "--size", "14GB", "--ranks", "64"),
            *("--bandwidth", "50GB/s", "--model", "nccl"),
        ),
        "--model: nccl is a model of the collective on a cluster preset",
    )
    # on the cluster, nccl is still the default and the 14 GB all-reduce the same number
    # predict gives
    a = json.loads(
        run(
            "collective",
            "all_reduce",
            "--size",
            "14GB",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "8",
            "--json",
        ).stdout
    )["results"][0]
    b = json.loads(
        run(
            "predict",
            "--op",
            "all_reduce",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "8",
            "--size",
            "14GB",
            "--json",
        ).stdout
    )["results"][0]
    assert a["model"] == "nccl" and a["algorithm_used"] == b["algorithm_used"] == "ring"
    assert a["time_s"] == pytest.approx(b["time_s"], rel=1e-12)


# --- prices: what to give where a GPU has no preset; scenario says it too ---------------------


def test_train_without_a_preset_for_the_gpu_offers_only_the_typed_price():
    r = run(
        "train",
        "--arch",
        "llama-3.1-8b",
        "--tokens",
        "15T",
        "--cluster",
        "dgx1-v100",
        "--nodes",
        "8",
        "--zero",
        "3",
    )
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("cost "))
    assert "no price given: --usd-per-gpu-hour (no price preset is published for v100-sxm2)" in line
    assert "--price" not in line.replace("no price preset", "")
    # a GPU with presets still lists them
    r = run("train", "--arch", "llama-3.1-8b", "--tokens", "15T", "--nodes", "8", "--zero", "3")
    line = next(x for x in r.stdout.splitlines() if x.startswith("cost "))
    assert "--price with one of the 18 presets for h100-sxm (`costmodel archs`)" in line


def test_a_price_for_another_gpu_without_presets_gives_the_one_way_out():
    line = one_line_error(
        run(
            "train",
            "--arch",
            "llama-3.1-8b",
            "--tokens",
            "15T",
            "--cluster",
            "dgx1-v100",
            "--nodes",
            "8",
            "--zero",
            "3",
            "--price",
            "aws-p5-on-demand",
        ),
        "no price preset is published for v100-sxm2: give --usd-per-gpu-hour",
    )
    assert "; or give" not in line
    df = sweep(
        kind="step", preset="dgx1-v100", arch="llama-3.1-8b", strategy="fsdp", nodes=8, tokens="15T"
    )
    note = df["cost_note"].iloc[0]
    assert "no price preset is published for v100-sxm2: give `usd_per_gpu_hour`" in note
    assert "(`price`)" not in note


def test_scenario_tokens_without_a_price_says_how_to_get_the_dollars():
    r = run(
        "scenario",
        "--arch",
        "llama-3.1-8b",
        "--nodes",
        "8",
        "--zero",
        "3",
        "--tokens",
        "15T",
        "--vs",
        "cluster=dgx-b200",
    )
    assert r.exit_code == 0, r.stderr
    note = next(x for x in r.stdout.splitlines() if x.startswith("note: no price given"))
    assert "--usd-per-gpu-hour, or --price with one of the 18 presets for h100-sxm" in note
    assert "B on b200: --usd-per-gpu-hour-b, or --price-b with one of the 10 presets" in note
    # the days and GPU-hours are train's, on both sides
    for cluster, side in (("dgx-h100", "A"), ("dgx-b200", "B")):
        t = json.loads(
            run(
                "train",
                "--arch",
                "llama-3.1-8b",
                "--nodes",
                "8",
                "--zero",
                "3",
                "--tokens",
                "15T",
                "--cluster",
                cluster,
                "--json",
            ).stdout
        )
        s = json.loads(
            run(
                "scenario",
                "--arch",
                "llama-3.1-8b",
                "--nodes",
                "8",
                "--zero",
                "3",
                "--tokens",
                "15T",
                "--vs",
                "cluster=dgx-b200",
                "--json",
            ).stdout
        )["training_cost"][side]
        assert s["gpu_hours"] == pytest.approx(t["gpu_hours"], rel=1e-12)
        assert s["steps"] == t["steps"] == 57_220_459


def test_scenario_b_on_a_gpu_without_presets_is_not_offered_price_b():
    r = run(
        "scenario",
        "--arch",
        "llama-3.1-8b",
        "--nodes",
        "8",
        "--zero",
        "3",
        "--tokens",
        "15T",
        "--price",
        "aws-p5-on-demand",
        "--vs",
        "cluster=dgx1-v100",
    )
    assert r.exit_code == 0, r.stderr
    note = r.stdout.strip().splitlines()[-1]
    assert note == (
        "note: B runs on v100-sxm2, not A's h100-sxm: give --usd-per-gpu-hour-b for B's "
        "dollars (no price preset is published for v100-sxm2)"
    )


# --- where train sends the user for prices: archs, under a heading ----------------------------


def test_archs_puts_each_list_under_a_heading():
    lines = run("archs").stdout.splitlines()
    assert lines[0].startswith("architecture presets (--arch NAME)")
    heading = next(i for i, x in enumerate(lines) if x.startswith("price presets (--price NAME)"))
    assert all("/GPU-h" not in x for x in lines[:heading])
    assert all("/GPU-h" in x for x in lines[heading + 1 :])
    assert lines[heading - 1] == ""


def test_presets_help_names_only_its_commands():
    r = run("presets", "--help")
    assert r.exit_code == 0
    assert "describe" not in r.stdout
    assert "schema" in r.stdout


# --- step takes --flash/--no-flash as train, scenario and memory do ----------------------------


def test_step_no_flash_gives_the_memory_of_train_scenario_and_memory():
    common = ("--arch", "llama-3.1-8b", "--nodes", "8", "--zero", "3", "--no-flash")
    step = json.loads(run("step", *common, "--json").stdout)
    train = json.loads(run("train", *common, "--tokens", "1T", "--json").stdout)
    scen = json.loads(run("scenario", *common, "--json").stdout)
    mem = json.loads(run("memory", *common, "--cluster", "dgx-h100", "--json").stdout)
    flash = json.loads(run("step", *common[:-1], "--json").stdout)
    assert step["memory_bytes"] > 3 * flash["memory_bytes"]  # the s x s scores kept
    assert step["memory_bytes"] == pytest.approx(train["memory_total_bytes"], rel=1e-12)
    assert step["memory_bytes"] == pytest.approx(scen["memory_total_bytes"], rel=1e-12)
    assert step["memory_bytes"] == pytest.approx(mem["memory_bytes"], rel=1e-12)
    assert step["fits"] is False and flash["fits"] is True


def test_step_strategy_all_takes_no_flash():
    d = json.loads(
        run(
            "step",
            "--arch",
            "llama-3.1-8b",
            "--nodes",
            "8",
            "--strategy",
            "all",
            "--no-flash",
            "--json",
        ).stdout
    )
    fsdp = next(r for r in d["strategies"] if r["layout"] == "fsdp")
    one = json.loads(
        run(
            "step",
            "--arch",
            "llama-3.1-8b",
            "--nodes",
            "8",
            "--strategy",
            "fsdp",
            "--no-flash",
            "--json",
        ).stdout
    )
    assert fsdp["memory_bytes"] == pytest.approx(one["memory_bytes"], rel=1e-12)


@pytest.mark.parametrize("typed", ["--flash", "--no-flash"])
def test_the_one_link_step_refuses_flash_which_sizes_a_memory_it_has_not(typed):
    """The one-link step has no memory to size: --flash given there (even at its default) is
    refused as every other option of the cluster step is."""
    one_line_error(
        run(
            *("step", "--arch", "llama-2-7b", "--compute-time", "400ms", "--ranks", "64"),
            *("--bandwidth", "50GB/s", typed),
        ),
        f"{typed}: an option of the step on a cluster preset",
    )


def test_the_step_sweep_takes_flash_as_step_does():
    """The memory sweep had a flash_attention axis; the step sweep, each row `costmodel
    step`'s answer, refused it (unknown step axis 'flash')."""
    grid = dict(kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=8, strategy="fsdp")
    df = sweep(**grid, flash="false,true")
    assert list(df["flash_attention"]) == [False, True]
    for flag, row in (("--no-flash", 0), ("--flash", 1)):
        args = ("step", "--arch", "llama-3.1-8b", "--nodes", "8", "--strategy", "fsdp", flag)
        one = json.loads(run(*args, "--json").stdout)
        assert df["memory_GB"].iloc[row] * 1e9 == pytest.approx(one["memory_bytes"], rel=1e-12)
        assert df["step_time_s"].iloc[row] == pytest.approx(one["step_time_s"], rel=1e-12)
    # a grid that does not set it has no such column, as before
    assert "flash_attention" not in sweep(**grid).columns


# --- 4M tokens on 512 GPUs, then 1,024: counts said exactly --------------------------------


def test_scenario_says_gpu_and_sequence_counts_exactly():
    """`scenario --vs nodes=128` titled B "(1,024 GPUs)" over a table that said "1.02 k" GPUs
    and a global batch of "1.02 k" samples; the one-side summary said "1024" unseparated."""
    args = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "64", "--zero", "3")
    r = run(*args, "--global-tokens", "4Mi", "--vs", "nodes=128")
    assert r.exit_code == 0, r.stderr
    rows = {x[:31].strip(): x[31:].split() for x in r.stdout.splitlines()[3:20]}
    assert rows["GPUs"][:3] == ["512", "1,024", "+512"]
    assert rows["global batch [samples]"][:2] == ["1,024", "1,024"]
    one = run(*args, "--global-tokens", "4Mi")
    line = next(x for x in one.stdout.splitlines() if x.startswith("global batch"))
    assert line.split()[2] == "1,024"


# --- memory --model nccl (a step's option pasted): one option named, as typed ------------------


@pytest.mark.parametrize("typed", ["--model", "--arch"])
def test_memory_refuses_a_collective_model_in_one_readable_line(typed):
    """`memory --model nccl` said "--model/--model: 'nccl' is a collective cost model; memory
    has none (its --model is the architecture, as --model): drop it, and give the model as
    --model NAME": every --arch of the line renamed to the spelling typed."""
    line = one_line_error(
        run("memory", "--cluster", "dgx-h100", typed, "nccl"),
        f"{typed}: 'nccl' is a collective cost model, not an architecture",
        "`costmodel archs`",
    )
    assert line.count("--model") + line.count("--arch") == 1
