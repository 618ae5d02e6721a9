"""QA pass 20: ``batch`` and ``memory`` count ``--nodes`` as step, scenario and train do
(``--gpus-per-node`` too), the note of a sequence past the model's context comes from one
function on every surface that prices a sequence, and a new user's walk over the planning
commands' examples."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel.strategy.layout import Layout

from ._cli import one_line_error, run

PAST = "is past gpt2-124m's context of 1,024 tokens"


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


# --- 1. batch's GPUs: --ranks, or --nodes x --gpus-per-node / --cluster's GPUs per node -----------
def test_batch_takes_gpus_per_node_as_a_slice_of_the_cluster_as_step_does():
    base = ("batch", "--local", "1", "--global-tokens", "4Mi", "--seq", "4096")
    whole = _json(*base, "--nodes", "64", "--cluster", "dgx-h100")
    assert whole["ranks"] == 512 and whole["accumulation"] == 2
    half = _json(*base, "--nodes", "64", "--cluster", "dgx-h100", "--gpus-per-node", "4")
    assert half["ranks"] == 256 and half["accumulation"] == 4
    # the same slice as step counts it: 64 nodes x 4 GPUs
    step = _json("step", "--params", "1B", "--nodes", "64", "--gpus-per-node", "4")
    assert step["ranks"] == half["ranks"]
    # without a cluster the GPUs per node are given outright (batch is arithmetic)
    bare = _json(*base, "--nodes", "64", "--gpus-per-node", "4")
    assert bare["ranks"] == 256


def test_batch_gpus_per_node_refusals_name_the_flag_and_its_range():
    base = ("batch", "--local", "1", "--global-tokens", "4Mi", "--seq", "4096")
    # step's own message for a slice larger than the preset's node, word for word
    line = one_line_error(
        run(*base, "--nodes", "2", "--cluster", "dgx-h100", "--gpus-per-node", "9"),
        "--gpus-per-node",
        "1..8",
    )
    step_line = one_line_error(run("step", "--params", "1B", "--gpus-per-node", "9"))
    assert line == step_line
    one_line_error(run(*base, "--nodes", "2", "--gpus-per-node", "0"), "--gpus-per-node", "1..")
    one_line_error(run(*base, "--ranks", "8", "--gpus-per-node", "4"), "--gpus-per-node", "--nodes")
    one_line_error(run(*base, "--nodes", "2"), "--nodes", "--cluster", "--gpus-per-node")
    one_line_error(run(*base, "--nodes", "2", "--ranks", "8"), "--ranks, --nodes")


def test_memory_takes_gpus_per_node_and_sizes_steps_layout():
    args = ("--arch", "llama-3.1-70b", "--strategy", "hsdp", "--nodes", "8")
    mem = _json("memory", *args, "--cluster", "dgx-h100", "--gpus-per-node", "4")
    step = _json("step", *args, "--cluster", "dgx-h100", "--gpus-per-node", "4")
    assert mem["ranks"] == step["ranks"] == 32
    assert mem["layout"] == step["layout"] == "hsdp g=4"  # one node is the 4-GPU slice
    assert mem["memory_bytes"] == step["memory_bytes"]
    one_line_error(
        run("memory", "--params", "7B", "--ranks", "8", "--gpus-per-node", "4"), "--gpus-per-node"
    )


def test_batch_help_says_why_no_cluster_is_assumed():
    r = run("batch", "--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "--gpus-per-node" in text and "no cluster is assumed" in text
    for command in ("batch", "memory"):  # --nodes' own help names both ways to count a node
        text = " ".join(run(command, "--help").stdout.split())
        assert "its GPUs per node, or x --gpus-per-node" in text, command


# --- 2. a sequence past the model's context: one function, every surface that prices one -------
def test_strategy_memory_carries_the_notes_the_cli_prints():
    m = cm.strategy_memory(Layout(strategy="ddp", ranks=8), arch="gpt2-124m", sequence_length=4096)
    assert any(PAST in n for n in m.notes)
    ok = cm.strategy_memory(Layout(strategy="ddp", ranks=8), arch="gpt2-124m", sequence_length=1024)
    assert not any("is past" in n for n in ok.notes)
    mem = _json("memory", "--arch", "gpt2-124m", "--ranks", "8")
    assert mem["notes"] == list(m.notes)


def test_given_activations_are_no_sequences_so_no_context_note():
    # the activations replace what the sequence sizes: nothing is priced at 4096 tokens
    m = cm.strategy_memory(Layout(strategy="ddp", ranks=8), arch="gpt2-124m", activations_bytes=1e9)
    assert not any("is past" in n for n in m.notes)
    r = run("memory", "--arch", "gpt2-124m", "--activations", "10GB")
    assert r.exit_code == 0, r.stderr
    assert "is past" not in r.stdout
    # and a sequence beside them is refused (not silently left unpriced)
    one_line_error(run("memory", "--arch", "gpt2-124m", "--activations", "10GB", "--seq", "8k"))
    # the memory sweep's row says the same as the command (it said "priced at 4,096 tokens")
    row = cm.sweep(kind="memory", arch="gpt2-124m", ranks=8, activations_bytes=1e9)
    assert "is past" not in row["notes"].iloc[0]


def test_one_link_step_takes_no_sequence_so_has_nothing_to_note():
    link = ("step", "--arch", "gpt2-124m", "--ranks", "8", "--bandwidth", "50GB/s")
    r = run(*link, "--compute-time", "100ms")
    assert r.exit_code == 0, r.stderr
    assert "is past" not in r.stdout
    one_line_error(run(*link, "--compute-time", "100ms", "--seq", "8192"), "--seq", "--cluster")


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "--arch", "gpt2-124m", "--ranks", "8", "--seq", "8192"),
        ("memory", "--arch", "gpt2-124m", "--nodes", "1", "--cluster", "dgx-h100"),
        ("step", "--arch", "gpt2-124m", "--nodes", "2", "--global-tokens", "64Ki"),
        ("scenario", "--arch", "gpt2-124m", "--vs", "nodes=2"),
        ("train", "--arch", "gpt2-124m", "--tokens", "1B", "--global-tokens", "64Ki"),
    ],
)
def test_more_surfaces_note_a_sequence_past_the_context(args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert PAST in r.stdout, r.stdout
    data = _json(*args)
    # a comparison's JSON carries each side's notes (both at the default 4096 tokens here)
    sides = [data["a"], data["b"]] if "a" in data else [data]
    for side in sides:
        assert any(PAST in n for n in side["notes"]), side["notes"]


# --- 3. the walk: bad input, one line naming the flag and its range ----------------------------
BUCKET_RULE = "--bucket: must be a bucket size in 1 B..10 TB (1e13 B), whole bytes, e.g. 50MiB"


@pytest.mark.parametrize(
    "args",
    [
        ("step", "--params", "7B"),
        ("step", "--params", "7B", "--ranks", "8", "--bandwidth", "50GB/s", "--compute-time", "1s"),
        ("scenario", "--params", "7B"),
        ("train", "--params", "7B", "--tokens", "1T"),
    ],
)
@pytest.mark.parametrize("value", ["0", "0MB", "-5MB", "20TB"])
def test_bucket_out_of_range_is_one_rule_on_every_command(args, value):
    # four messages before: pydantic's "Input should be greater than or equal to 1 (got 0)",
    # the same with "allowed: [1, 10,000,000,000,000]", the parser's "must be >= 0 bytes" and
    # the one-link step's "must be a finite number > 0 B"
    line = one_line_error(run(*args, "--bucket", value))
    assert line == f"costmodel: error: {BUCKET_RULE}, got {value!r}"


def test_batch_text_says_each_factor_in_words_with_units_and_which_was_solved():
    # it printed the JSON keys (local_batch, global_batch) beside "sequence length" in words,
    # with no unit and nothing saying which of the four was solved
    r = run(
        "batch", "--local", "1", "--nodes", "64", "--cluster", "dgx-h100",
        "--global-tokens", "4Mi", "--seq", "4096",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["local", "batch", "per", "GPU", "[samples]", "1"]
    assert "data-parallel ranks N [GPUs]   512 (= 64 nodes x 8 GPUs per node)" in lines[1]
    assert lines[2].endswith("2 (solved: global / (local x N))")
    assert lines[3].endswith("1,024 (= tokens / sequence length)")  # the Batch page's words
    assert "local_batch" not in r.stdout and "global_batch" not in r.stdout
    # the solved value is the API's
    sol = cm.solve_batch(local_batch=1, ranks=512, global_tokens=4 * 2**20, sequence_length=4096)
    assert sol.accumulation == 2 and sol.solved == "accumulation"


def test_archs_lists_each_models_trained_context():
    # the context a longer --seq is noted past: a new user reading the note could not look it up
    r = run("archs")
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("gpt2-124m "))
    assert line.endswith("context=1,024")
    assert f"context={cm.load_arch('llama-3.1-8b').max_positions:,}" in r.stdout
    assert "context=131,072" in next(
        x for x in r.stdout.splitlines() if x.startswith("llama-3.1-8b ")
    )


def test_an_efficiency_above_100_percent_says_why_on_scenario_and_a_comparison():
    from costmodel.strategy.step import ABOVE_ONE_GPU

    # fsdp's sharded optimizer step: above 100 % (the step said why, scenario and --vs did not)
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, zero_stage=3).evaluate()
    assert r.efficiency > 1.0
    step = run("step", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "3")
    alone = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "3")
    both = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--vs", "zero=3")
    for out in (step, alone, both):
        assert out.exit_code == 0, out.stderr
        assert ABOVE_ONE_GPU in out.stdout, out.stdout
    assert f"note (B): scaling efficiency {ABOVE_ONE_GPU}" in both.stdout  # A (ddp) is below
    below = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "1")
    assert below.exit_code == 0 and "above 100%" not in below.stdout


def test_memory_lists_its_parts_in_words_as_the_memory_page_names_them():
    from costmodel.strategy.memory import PART_LABELS

    r = run("memory", "--arch", "llama-3.1-70b", "--zero", "3", "--ranks", "64", "--cuda-context",
            "1GiB")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    labels = [line.split("  ")[0] for line in r.stdout.splitlines()[2:]]
    for key in ("weights", "fp32 master", "optimizer states", "CUDA context"):
        assert key in labels, labels
    assert PART_LABELS["gathered_units_bytes"] in labels  # fsdp's units in flight
    assert not any("_" in label for label in labels), labels  # no JSON keys (cuda_context)


def test_batch_with_all_four_names_nodes_as_the_ranks_given():
    line = one_line_error(
        run(
            "batch",
            "--local",
            "2",
            "--global",
            "1024",
            "--accumulation",
            "2",
            "--nodes",
            "4",
            "--cluster",
            "dgx-h100",
        ),  # fmt: skip
        "give three of",
        "--nodes for --ranks",
        "all four are given (--nodes gives the ranks)",
    )
    assert "--global-tokens with --seq for --global-batch" in line


def test_a_comparisons_notes_come_shared_first_then_each_sides():
    # a note both sides give sat between A's and B's own, read as if it were A's too
    r = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "8", "--zero", "3", "--recompute",
            "full", "--vs", "cluster=dgx-a100")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    kinds = [line.split(":")[0] for line in r.stdout.splitlines() if line.startswith("note")]
    assert kinds == sorted(kinds, key=["note", "note (A)", "note (B)"].index), kinds
    assert {"note", "note (A)", "note (B)"} <= set(kinds)


def test_batch_json_says_how_nodes_counted_the_ranks_in_steps_keys():
    base = ("batch", "--local", "1", "--global-tokens", "4Mi", "--seq", "4096")
    d = _json(*base, "--nodes", "64", "--cluster", "dgx-h100", "--gpus-per-node", "4")
    step = _json("step", "--params", "1B", "--nodes", "64", "--gpus-per-node", "4")
    for key in ("nodes", "gpus_per_node", "preset", "ranks"):
        assert d[key] == step[key], key
    bare = _json(*base, "--nodes", "64", "--gpus-per-node", "4")
    assert (bare["nodes"], bare["gpus_per_node"], "preset" in bare) == (64, 4, False)
    assert "nodes" not in _json(*base, "--ranks", "512")


def test_presets_show_takes_gpus_per_node_as_the_planning_commands_do():
    # it took --nodes but not --gpus-per-node ("No such option"), so a slice's figures (its
    # share of the NICs) could not be looked up where the step's were
    d = _json("presets", "show", "dgx-h100", "--nodes", "2", "--gpus-per-node", "4")
    c = cm.presets.cluster("dgx-h100", nodes=2, gpus_per_node=4)
    assert (d["derived"]["ranks"], d["derived"]["gpus_per_node"]) == (8, 4)
    assert d["derived"]["node_inter_bandwidth_bytes_per_s"] == c.node_inter_bandwidth_bytes_per_s
    step_line = one_line_error(run("step", "--params", "1B", "--gpus-per-node", "9"))
    assert one_line_error(run("presets", "show", "dgx-h100", "--gpus-per-node", "9")) == step_line
    one_line_error(
        run("presets", "show", "h100-sxm", "--gpus-per-node", "4"), "--gpus-per-node", "cluster"
    )


def test_batch_options_help_in_the_words_of_its_output():
    text = " ".join(run("batch", "--help").stdout.split())
    for words in ("Local batch per GPU [samples]", "Data-parallel ranks N [GPUs] (or --nodes)",
                  "Gradient-accumulation steps A", "Global batch [samples]"):  # fmt: skip
        assert words in text, words
