"""QA pass 15: a new user's walk through the CLI and the API (planning questions, edge inputs,
output files). Each defect found is pinned here with the surface it was typed on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import costmodel as cm

from ._cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
GRID = 'kind = "collective"\n[grid]\npreset = "dgx-h100"\nnodes = 1\nsize = "1MB,1GB"\n'


# --- a sweep never writes over the grid file it reads ---------------------------------------------
@pytest.mark.parametrize("name", ["grid.csv", "grid.parquet"])
def test_a_sweep_refuses_to_write_its_rows_over_its_grid_file(tmp_path, name):
    """``costmodel sweep g.csv -o g.csv`` (a TOML grid under another extension) read the grid,
    then replaced it with the rows: the input was gone. The measure commands refused this; the
    sweep did not."""
    grid = tmp_path / name
    grid.write_text(GRID)
    r = run("sweep", str(grid), "-o", str(grid), "--no-progress")
    one_line_error(r, "--output", "is the file this command reads")
    assert grid.read_text() == GRID


def test_a_sweep_refuses_an_output_that_is_a_link_to_its_grid_file(tmp_path):
    """``-o out.parquet`` where out.parquet is a symbolic link to the grid: the rows were written
    through the link over the grid file."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    link = tmp_path / "out.parquet"
    os.symlink(grid, link)
    r = run("sweep", str(grid), "-o", str(link), "--no-progress")
    one_line_error(r, "--output", "is the file this command reads")
    assert grid.read_text() == GRID


def test_a_sweep_still_writes_another_file_and_overwrites_its_own_earlier_output(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out = tmp_path / "rows.csv"
    for _ in range(2):  # a rerun replaces the earlier rows, as before
        r = run("sweep", str(grid), "-o", str(out), "--no-progress")
        assert r.exit_code == 0, r.stderr
    assert out.read_text().count("\n") == 3  # header and two rows
    assert grid.read_text() == GRID


# --- calibrate refines a cluster preset named by name ---------------------------------------------
LOG = (
    "costmodel/data/reference/nccl-tests/06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"
)


@pytest.fixture
def presets_env(monkeypatch):
    """``--presets-dir`` sets COSTMODEL_PRESETS for the process (the CLI's own process, which
    ends); in-process here, it is put back after the test so no later test sees the folder."""
    monkeypatch.setenv("COSTMODEL_PRESETS", "")  # recorded, so undone after the test
    monkeypatch.delenv("COSTMODEL_PRESETS")


@pytest.fixture(scope="module")
def calibrated_folder(tmp_path_factory):
    """A presets folder holding a calibration of dgx-h100 named ``mine``."""
    folder = tmp_path_factory.mktemp("presets")
    r = run("calibrate", str(ROOT / LOG), "--cluster", "dgx-h100", "-o", str(folder / "mine.toml"))
    assert r.exit_code == 0, r.stderr
    return folder


def test_calibrate_refuses_a_calibration_as_its_base_and_names_the_cluster_to_give(
    calibrated_folder, tmp_path, presets_env
):
    """``calibrate --cluster mine`` (a calibration) wrote ``base = "mine"``: a preset no command
    could load, and a presets folder holding it failed every command that read the folder."""
    out = tmp_path / "again.toml"
    r = run("--presets-dir", str(calibrated_folder), "calibrate", str(ROOT / LOG),
            "--cluster", "mine", "-o", str(out))  # fmt: skip
    one_line_error(r, "--cluster", "'mine' is a calibration of 'dgx-h100'", "--cluster dgx-h100")
    assert not out.exists()
    r = run("calibrate", str(ROOT / LOG), "--cluster", str(calibrated_folder / "mine.toml"),
            "-o", str(out))  # fmt: skip
    one_line_error(r, "--cluster", "is a calibration of 'dgx-h100'")
    assert not out.exists()


def test_calibrate_refuses_a_cluster_file_by_path_naming_its_preset_name(tmp_path, presets_env):
    """A cluster preset given by path was stored as ``base = "/path/x.toml"`` and refused late with
    pydantic's "String should match pattern"; the base is a preset name."""
    text = (ROOT / "presets/clusters/dgx-h100.toml").read_text()
    mine = tmp_path / "mycl.toml"
    mine.write_text('preset = "cluster"\n' + text.replace('name = "dgx-h100"', 'name = "mycl"', 1))
    out = tmp_path / "cal.toml"
    r = run("calibrate", str(ROOT / LOG), "--cluster", str(mine), "-o", str(out))
    one_line_error(r, "--cluster", "is a file", "--cluster mycl")
    assert not out.exists()
    r = run("--presets-dir", str(tmp_path), "calibrate", str(ROOT / LOG), "--cluster", "mycl",
            "-o", str(out))  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert 'base = "mycl"' in out.read_text()


# --- a config.json past the parameter limit is refused as --arch, on every command ----------------
@pytest.fixture
def huge_config(tmp_path):
    """Llama 3.1 8B with a 1e12 intermediate size: 3.9e17 parameters, past the 1e15 limit."""
    cfg = json.loads((ROOT / "tests/data/hf_configs/llama-3.1-8b/config.json").read_text())
    cfg["intermediate_size"] = 10**12
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "--zero", "3", "--ranks", "8"),  # answered "weights 98.3 PB", exit 0
        ("train", "--nodes", "8", "--tokens", "1T"),  # "--params: Input should be ..."
        ("step", "--nodes", "8"),  # "message_bytes: must be between 0 and 2**44 B ..."
        ("scenario", "--nodes", "8"),
    ],
)
def test_a_config_past_the_parameter_limit_is_refused_naming_arch(huge_config, args):
    r = run(*args, "--arch", str(huge_config))
    one_line_error(r, "--arch", "3.93e+17 parameters", "1..1e15")


def test_the_api_refuses_a_config_past_the_parameter_limit(huge_config):
    with pytest.raises(ValueError, match=r"arch: .*3\.93e\+17 parameters; must be .*1\.\.1e15"):
        cm.load_arch(str(huge_config))
    with pytest.raises(ValueError, match="1..1e15"):
        cm.training_memory(str(huge_config), zero_stage=3, dp_ranks=8)


# --- a price preset typed in another case is named back in lower case ----------------------------
@pytest.mark.parametrize(
    ("option", "args"),
    [
        ("--price", ("train", "--arch", "llama-3.1-8b", "--nodes", "8", "--tokens", "1T")),
        (
            "--price",
            (
                "sweep",
                "--kind",
                "step",
                "--set",
                "preset=dgx-h100",
                "--set",
                "arch=llama-3.1-8b",
                "--tokens",
                "1T",
            ),
        ),  # fmt: skip
    ],
)
def test_a_price_in_upper_case_is_answered_with_its_lower_case_name(option, args):
    """``--cluster DGX-H100`` and ``--arch LLAMA-3.1-8B`` say "did you mean 'dgx-h100'?";
    ``--price AWS-P5-ON-DEMAND`` listed all 70 price presets instead."""
    r = run(*args, option, "AWS-P5-ON-DEMAND")
    line = one_line_error(r, option, "did you mean 'aws-p5-on-demand'?", "lower-case")
    assert "lambda-b200-on-demand" not in line


def test_a_misspelt_price_gets_the_closest_names_and_the_api_says_the_same():
    r = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--price", "aws-p5-ondemand")
    one_line_error(r, "--price", "closest: aws-p5-on-demand")
    with pytest.raises(ValueError, match=r"^price: .*did you mean 'lambda-b200-on-demand'\?"):
        cm.load_price("Lambda-B200-On-Demand")


# --- the collective API reads names in any case, as predict_collective and the CLI do --------------
def test_allreduce_time_reads_the_algorithm_in_any_case_with_plain_numbers_as_with_a_cluster():
    """``cm.allreduce_time(M, cluster, algorithm="RING")`` was taken and
    ``cm.allreduce_time(M, 64, 50e9, algorithm="RING")`` refused; ``collective --algorithm RING
    --ranks 64 --bandwidth 50GB/s`` answers it."""
    assert cm.allreduce_time(14e9, 64, 50e9, algorithm="RING") == cm.allreduce_time(14e9, 64, 50e9)
    assert cm.collective_time("all_gather", 1e9, 4, 100e9, algorithm="Ring", model="LESSON") == (
        cm.collective_time("all_gather", 1e9, 4, 100e9)
    )
    r = run("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s",
            "--algorithm", "RING", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["time_s"] == cm.allreduce_time(14e9, 64, 50e9)


def test_the_model_name_is_read_in_any_case_by_allreduce_time_and_predict_all_algorithms():
    """``predict_collective(model="NCCL")`` answered; ``allreduce_time(M, cluster, model="NCCL")``
    and ``predict_all_algorithms(model="NCCL")`` refused the same name."""
    c = cm.cluster("dgx-h100", nodes=8)
    want = cm.predict_collective("all_reduce", 14e9, c, nodes=8, model="nccl").time_s
    assert cm.allreduce_time(14e9, c, model="NCCL") == want
    assert cm.allreduce_time(14e9, c, model="Textbook") == cm.allreduce_time(14e9, c)
    upper = cm.predict_all_algorithms("all_reduce", [2**20, 2**30], "dgx-h100", nodes=8,
                                      model="NCCL", protocol="AUTO")  # fmt: skip
    lower = cm.predict_all_algorithms("all_reduce", [2**20, 2**30], "dgx-h100", nodes=8)
    assert upper.frame.equals(lower.frame)


def test_a_sweep_axis_set_twice_is_named():
    """ "--set: the same axis is given twice" did not say which of the --set options."""
    r = run("sweep", "--set", "preset=dgx-h100", "--set", "size=1GB", "--set", "nodes=1",
            "--set", "size=2GB")  # fmt: skip
    one_line_error(r, "--set size: given twice", "size=1GB", "size=2GB", "size=v1,v2")


# --- a count option that is not an integer as typed says its range, as every other refusal -------
@pytest.mark.parametrize(
    ("args", "option", "rule"),
    [
        (
            ("step", "--arch", "llama-3.1-8b", "--nodes", "1e-1"),
            "--nodes",
            "1..1,000,000, got '1e-1'",
        ),
        (("step", "--arch", "llama-3.1-8b", "--local-batch", "2.5"), "--local-batch", "got '2.5'"),
        (
            ("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--accumulation=2.5e0"),
            "--accumulation",
            "1..1,000,000, got '2.5e0'",
        ),  # fmt: skip
        (
            ("collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100", "--nodes", "x"),
            "--nodes",
            "got 'x'",
        ),  # fmt: skip
        (("step", "--arch", "llama-3.1-8b", "--mfu", "abc"), "--mfu", "[0.001, 1], got 'abc'"),
    ],
)
def test_a_value_click_cannot_read_is_refused_with_the_options_range(args, option, rule):
    """``--nodes 1e3`` said "Invalid value for '--nodes': Input should be a valid integer, unable
    to parse string as an integer" with no range, where ``--nodes 0`` says "--nodes: must be a
    whole number in 1..1,000,000, got 0". Since counts read one grammar (README, "Limits on
    input"), ``--nodes 1e3`` is 1,000 nodes; a spelling that is no whole number (``1e-1``,
    ``2.5e0``) is refused with the option's range, as typed."""
    r = run(*args)
    line = one_line_error(r, f"error: {option}: must be ", rule)
    assert "Invalid value" not in line and "Input should be" not in line


# --- batch: token counts refused with one rule; the LR rule read in any case ----------------------
BATCH = ("batch", "--local", "1", "--ranks", "512", "--seq", "4096")


@pytest.mark.parametrize("typed", ["-1", "0", "1.5"])
@pytest.mark.parametrize(
    "args",
    [
        ("--global-tokens", "{}"),
        ("--global-tokens", "4Mi", "--base-lr", "3e-4", "--base-tokens", "{}"),
        (
            "--global-tokens",
            "4Mi",
            "--base-lr",
            "3e-4",
            "--base-tokens",
            "1Mi",
            "--critical-batch",
            "{}",
        ),  # fmt: skip
    ],
)
def test_batch_token_counts_are_refused_with_one_rule(typed, args):
    """``--critical-batch 0`` said "must be a whole number of tokens >= 1" and ``-1`` said
    "must be a whole token count >= 0", as if 0 were allowed."""
    r = run(*BATCH, *(a.format(typed) for a in args))
    # --base-tokens says its range too (1..1e16, costmodel._limits), in the same words
    line = one_line_error(r, "must be a whole number of tokens ", f"got '{typed}'")
    assert ">= 0" not in line


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (
            (
                *BATCH,
                "--global-tokens",
                "4Mi",
                "--base-lr",
                "3e-4",
                "--base-tokens",
                "1Mi",
                "--rule",
                "{}",
                "--json",
            ),
            "rule",
        ),  # fmt: skip
        (("sweep", "--set", "preset=dgx-h100", "--set", "size=1GB", "--engine", "{}"), None),
    ],
)
def test_the_other_fixed_lists_of_the_cli_are_read_in_any_case(args, option):
    """``--rule LINEAR``, ``--engine LOCAL`` and ``--placement BOTH`` were refused where
    ``--precision FP8`` and ``--algorithm RING`` are read as their lower-case names."""
    word = "linear" if option == "rule" else "local"
    upper = run(*(a.format(word.upper()) for a in args))
    lower = run(*(a.format(word) for a in args))
    assert upper.exit_code == 0, upper.stderr
    assert upper.stdout == lower.stdout
    if option:
        assert json.loads(upper.stdout)["learning_rate"]["rule"] == "linear"


def test_validate_compare_reads_the_placement_in_any_case():
    log = str(ROOT / LOG)
    upper = run(
        "validate", "compare", log, "--cluster", "dgx-h100", "--placement", "BOTH", "--json"
    )
    lower = run(
        "validate", "compare", log, "--cluster", "dgx-h100", "--placement", "both", "--json"
    )
    assert upper.exit_code == 0, upper.stderr
    assert json.loads(upper.stdout) == json.loads(lower.stdout)


def test_calibrate_refuses_to_write_over_its_base_clusters_file(tmp_path, presets_env):
    """``calibrate --cluster mycl -o presets/mycl.toml`` replaced the user's cluster preset with
    its own calibration (``base = "mycl"``, itself): the cluster was gone and the folder no
    longer loaded."""
    text = (ROOT / "presets/clusters/dgx-h100.toml").read_text()
    mine = tmp_path / "mycl.toml"
    before = 'preset = "cluster"\n' + text.replace('name = "dgx-h100"', 'name = "mycl"', 1)
    mine.write_text(before)
    r = run("--presets-dir", str(tmp_path), "calibrate", str(ROOT / LOG), "--cluster", "mycl",
            "-o", str(mine))  # fmt: skip
    one_line_error(r, "--output", "is the file this command reads")
    assert mine.read_text() == before
    r = run("--presets-dir", str(tmp_path), "presets", "show", "mycl")
    assert r.exit_code == 0, r.stderr


def test_an_unknown_model_names_the_default_of_the_function_called():
    """``cm.allreduce_time(M, cluster, model="magic")`` said "allowed: nccl (default), ..."
    where allreduce_time's default is textbook (predict_collective's is nccl)."""
    c = cm.cluster("dgx-h100", nodes=2)
    with pytest.raises(
        ValueError, match=r"allowed: textbook \(default\), lesson, nccl, calibrated"
    ):
        cm.allreduce_time(1e9, c, model="magic")
    with pytest.raises(ValueError, match=r"allowed: nccl \(default\), lesson, textbook"):
        cm.predict_collective("all_reduce", 1e9, c, model="magic")


# --- time and cost to train: a bool is not a number; the measured step is named as given ----------
@pytest.fixture(scope="module")
def result():
    return cm.Scenario(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8).evaluate()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tokens": True}, "tokens"),  # was priced as 1 token
        ({"steps": True}, "steps"),  # 1 step
        # was a 1 s step; named as typed (training_cost's own name was step_time_s)
        ({"tokens": 1e12, "measured_step_time_s": True}, "measured_step_time_s"),
    ],
)
def test_training_cost_refuses_a_bool_where_a_number_is_expected(result, kwargs, field):
    with pytest.raises(ValueError, match=rf"^{field}: expected a number, got a bool \(True\)"):
        result.training_cost(**kwargs)


def test_text_tokens_are_answered_with_the_number_they_mean(result):
    """``training_cost("2T")`` said "tokens: expected a number, got '2T'" and no more."""
    with pytest.raises(
        ValueError, match=r"^tokens: .*the API takes numbers in SI units: tokens=2e\+12"
    ):
        result.training_cost("2T")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: cm.Scenario(arch="llama-3.1-8b", nodes=True), "nodes"),  # was one node
        (lambda: cm.Scenario(arch="llama-3.1-8b", mfu=True), "mfu"),  # an MFU of 1
        (lambda: cm.Scenario(params=True), "params"),  # one parameter
        (lambda: cm.Scenario(arch="llama-3.1-8b", comm_contention=True), "comm_contention"),
        (lambda: cm.predict_collective("all_reduce", True, "dgx-h100"), "message_bytes"),  # 1 B
        (lambda: cm.scale_learning_rate(True, 256, 512), "base_lr"),  # a learning rate of 1
        (lambda: cm.scale_learning_rate(0.1, 256, 512, critical_batch=True), "critical_batch"),
        (
            lambda: cm.strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", comm_contention=True),
            "comm_contention",
        ),  # fmt: skip
        (lambda: cm.Layout(strategy="fsdp", ranks=True), "ranks"),
    ],
)
def test_a_bool_given_for_a_number_is_refused_naming_the_field(make, field):
    """README: a bad value, a bool where a number is expected among them, raises ValueError
    naming the field; these took ``True`` as 1."""
    with pytest.raises(ValueError, match=rf"{field}: expected a number"):
        make()


def test_real_booleans_and_numbers_still_pass_scenario():
    s = cm.Scenario(arch="llama-3.1-8b", nodes=2, flash_attention=False, no_sync=True, mfu=0.4)
    assert (s.nodes, s.flash_attention, s.no_sync, s.mfu) == (2, False, True, 0.4)


def test_the_memory_api_reads_recipe_recompute_and_loss_in_any_case():
    """``memory --recipe MIXED-ADAM --recompute FULL`` answers; ``cm.training_memory(...,
    recipe="MIXED-ADAM")``, ``max_params`` and ``min_ranks`` refused the same names."""
    want = cm.training_memory("llama-3.1-8b", recompute="full", loss="fused").total_bytes
    got = cm.training_memory("llama-3.1-8b", recipe="MIXED-ADAM", recompute="FULL", loss="Fused")
    assert got.total_bytes == want
    assert cm.max_params(80e9, recipe="Mixed-Adam") == cm.max_params(80e9)
    assert cm.min_ranks(30e9, 80e9, zero_stage=3, recipe="MIXED-ADAM") == cm.min_ranks(
        30e9, 80e9, zero_stage=3
    )
    r = run("memory", "--arch", "llama-3.1-8b", "--recipe", "MIXED-ADAM", "--recompute", "FULL",
            "--loss", "Fused", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["lesson_memory_bytes"] == want


def test_the_formulas_read_algorithm_rule_and_mode_in_any_case():
    """``collective --algorithm RING``, ``batch --rule LINEAR`` answer; ``crossover_bytes("RING",
    "TREE", ...)``, ``ddp_step(algorithm="RING")``, ``scale_learning_rate(rule="LINEAR")`` and
    ``hierarchical_allreduce_time(mode="PIPELINED")`` refused the same names."""
    assert cm.crossover_bytes("RING", "Tree", 512, 50e9, 5e-6) == cm.crossover_bytes(
        "ring", "tree", 512, 50e9, 5e-6
    )
    kw = {"compute_time_s": 0.4, "bandwidth_bytes_per_s": 50e9}
    assert cm.ddp_step(7e9, 64, algorithm="RING", **kw).step_time_s == (
        cm.ddp_step(7e9, 64, **kw).step_time_s
    )
    assert cm.scale_learning_rate(0.1, 256, 8192, rule="LINEAR") == 3.2
    args = (8e9, 2, 8, 450e9, 50e9)
    assert cm.hierarchical_allreduce_time(*args, mode="PIPELINED") == (
        cm.hierarchical_allreduce_time(*args, mode="pipelined")
    )
    with pytest.raises(ValueError, match="'foo' is not a textbook all_reduce algorithm"):
        cm.allreduce_time(1e9, 8, 50e9, algorithm="foo")


# --- steps to train are the exact ceiling of tokens over tokens per step --------------------------
@pytest.mark.parametrize(
    ("tokens", "per_step", "steps"),
    [
        (10**16, 4096, 2_441_406_250_000),  # was 2,441,406,249,998: ratio x (1 - 1e-12), ceiled
        (10**13 + 1, 10**13, 2),  # one token past a whole step needs a second one (was 1)
        (15 * 10**12, 262_144, 57_220_459),
        (7.5, 2.0, 4),  # a fraction of a token to train is ceiled; a whole float per step
        (3.0000000000000004, 1.0, 3),  # a ratio within float rounding of 3 is 3, not 4
    ],
)
def test_steps_are_the_exact_ceiling_of_tokens_over_tokens_per_step(tokens, per_step, steps):
    from costmodel.training import training_cost

    got = training_cost(tokens, tokens_per_step=per_step, step_time_s=1.0, ranks=1)
    assert got.steps == steps


def test_train_counts_every_step_of_a_long_run():
    r = run("train", "--arch", "llama-3.1-8b", "--nodes", "1", "--gpus-per-node", "1",
            "--strategy", "fsdp", "--tokens", "1e16", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["steps"] == 10**16 // 4096


def test_an_axis_given_under_two_names_says_both():
    """``--set seq=4096 --set sequence_length=2048`` said "axis 'sequence_length' given twice
    (as 'sequence_length')", naming one of the two."""
    r = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "params=7B",
            "--set", "seq=4096", "--set", "sequence_length=2048")  # fmt: skip
    one_line_error(r, "'sequence_length' given twice (as 'seq' and 'sequence_length')")
