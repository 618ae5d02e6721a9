"""CLI papercuts of pass 9 (a new user walking the planning questions: a collective's time,
which algorithm wins, what fits under which strategy, days and dollars, sweeps to files): each
test failed before its fix."""

from __future__ import annotations

import json

import pytest

import costmodel as cm

from ._cli import one_line_error, run

_LINK = ("--compute-time", "400ms", "--ranks", "64", "--bandwidth", "50GB/s")


# --- the one-link step and --nodes -------------------------------------------------------------
def test_the_one_link_step_refuses_nodes_as_the_one_link_collective_does():
    """`step --params 7B --compute-time 400ms --ranks 64 --bandwidth 50GB/s --nodes 8` answered
    for the 64 ranks of the link and read --nodes 8 past in silence (the step over one link has
    no preset whose nodes it could count), where `collective --ranks --bandwidth --nodes 8` and
    every other cluster option of the step (--gpus-per-node, --model, ...) are refused."""
    one_line_error(
        run("step", "--params", "7B", *_LINK, "--nodes", "8"),
        "--nodes: an option of the step on a cluster preset (--cluster NAME)",
    )
    link = ("--ranks", "64", "--bandwidth", "50GB/s", "--nodes", "8")
    one_line_error(
        run("collective", "all_reduce", "-s", "14GB", *link),
        "--nodes: an option of the collective on a cluster preset",
    )
    assert run("step", "--params", "7B", *_LINK).exit_code == 0


# --- a parameter count beside an architecture --------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ("memory", "--ranks", "8"),
        ("memory", "--strategy", "all", "--cluster", "dgx-h100"),
        ("step", "--cluster", "dgx-h100"),
        ("step", *_LINK),
        ("scenario", "--cluster", "dgx-h100"),
        ("train", "--tokens", "1T"),
    ],
    ids=["memory", "memory-all", "step", "step-link", "scenario", "train"],
)
def test_a_parameter_count_beside_another_architecture_is_refused_in_one_wording(command):
    """`memory --params 7B --arch llama-2-7b` and `step` said "give a parameter count or arch,
    not both (7000000000.0 vs llama-2-7b: 6738415616)", a float's repr, where train and scenario
    said "7B differs from llama-2-7b's 6,738,415,616; give one of them"; and `memory --strategy
    all` dropped the 7B and answered for the architecture."""
    one_line_error(
        run(*command, "--params", "7B", "--arch", "llama-2-7b"),
        "--params: 7B differs from llama-2-7b's 6,738,415,616; give one of them",
    )


def test_the_api_says_the_count_with_separators_not_a_float_repr():
    for call in (
        lambda: cm.training_memory(7e9, arch="llama-2-7b"),
        lambda: cm.strategy_step(params=7e9, arch="llama-2-7b", cluster="dgx-h100"),
        lambda: cm.Scenario(params=7e9, arch="llama-2-7b", cluster="dgx-h100"),
    ):
        with pytest.raises(ValueError) as err:
            call()
        said = str(err.value).splitlines()[0]
        assert "params: 7,000,000,000 differs from llama-2-7b's 6,738,415,616" in said, said
        assert "7000000000.0" not in said


def test_the_architecture_s_own_count_beside_it_is_still_taken():
    r = run("memory", "--params", "6738415616", "--arch", "llama-2-7b", "--ranks", "8", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["arch"] == "llama-2-7b"


# --- which algorithm wins: the ones that cannot run, and why ------------------------------------
def _not_available(*args: str) -> list[str]:
    r = run("collective", *args)
    assert r.exit_code == 0, r.stderr
    return [x for x in r.stdout.splitlines() if x.startswith("not available: ")]


@pytest.mark.parametrize("nodes", ["1", "2"])
def test_every_op_s_unavailable_algorithms_say_each_op_s_own_reason(nodes):
    """`collective all --cluster dgx-h100 --nodes 2 --algorithm all` said "not available:
    all_reduce nvls: algorithm: 'nvls' with `protocol` 'auto' cannot run all_reduce on this
    cluster (nvls/simple: ...)": the library's refusal of a pinned algorithm, a protocol the
    command has no option for in backticks. Each line is now the one `collective OP
    --algorithm all` prints for that op, with the op in front."""
    where = ("-s", "1GB", "--cluster", "dgx-h100", "--nodes", nodes, "--algorithm", "all")
    every = _not_available("all", *where)
    assert every and not [x for x in every if "`" in x or "protocol" in x], every
    for op in ("all_reduce", "reduce_scatter", "all_gather"):
        own = _not_available(op, *where)
        assert [x for x in every if x.startswith(f"not available: {op} ")] == [
            x.replace("not available: ", f"not available: {op} ", 1) for x in own
        ]


def test_a_reason_names_the_option_not_the_api_argument():
    """Under `--model textbook` nvls across nodes said "... has NVLS on and `nodes` 2", the
    API's argument in backticks; the command's option is --nodes."""
    where = ("-s", "1GB", "--cluster", "dgx-h100", "--nodes", "2", "--algorithm", "all")
    for op in ("all", "all_reduce"):
        (line,) = [x for x in _not_available(op, *where, "--model", "textbook") if "nvls" in x]
        assert "has NVLS on and --nodes 2" in line and "`" not in line, line


# --- what fits under which strategy: memory --strategy all's notes -----------------------------
_ALL_70B = ("memory", "--arch", "llama-3.1-70b", "--strategy", "all", "--nodes", "8",
            "--cluster", "dgx-h100")  # fmt: skip


def test_memory_strategy_all_says_its_notes_as_memory_does():
    """`memory --arch llama-3.1-70b --strategy all ...` printed "activations: ... loss fp32 |
    a model of 71B parameters: ..." on one line, the sweep's CSV separator; `memory` says the
    activations' line over its table and each other note on a `note:` line."""
    r = run(*_ALL_70B)
    assert r.exit_code == 0, r.stderr
    assert " | " not in r.stdout
    lines = r.stdout.splitlines()
    assert lines[1].startswith("NOTHING FITS")  # no layout holds 115 GB of activations
    # then what makes it fit (fsdp's changes, as `step --strategy all`), then the activations
    head = lines.index(next(x for x in lines if x.startswith("layout ")))
    assert lines[2].startswith("DOES NOT FIT") and lines[3].startswith("  ")
    assert lines[head - 1].startswith("activations: llama-3.1-70b, 4,096 tokens")
    one = run("memory", "--arch", "llama-3.1-70b", "--nodes", "8", "--cluster", "dgx-h100")
    notes = [x for x in one.stdout.splitlines() if x.startswith("note: ")]
    assert notes and [x for x in lines if x.startswith("note: ")] == notes


def test_memory_strategy_all_json_gives_each_layout_s_notes_as_a_list():
    r = run(*_ALL_70B, "--json")
    assert r.exit_code == 0, r.stderr
    one = run("memory", "--arch", "llama-3.1-70b", "--nodes", "8", "--cluster", "dgx-h100",
              "--strategy", "fsdp", "--json")  # fmt: skip
    want = json.loads(one.stdout)["notes"]
    assert isinstance(want, list) and len(want) == 2
    for row in json.loads(r.stdout)["layouts"]:
        assert row["notes"] == want, row["layout"]


# --- sweeps: an axis of another kind, or one misspelt ------------------------------------------
@pytest.mark.parametrize(
    ("sets", "said"),
    [
        # the kind left at its default (collective) for a step question
        (("--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b", "--set", "strategy=fsdp"),
         "--set arch: unknown collective axis 'arch' (an axis of the memory and step sweeps: "
         "--kind memory or step); allowed: preset, "),
        (("--kind", "memory", "--set", "arch=llama-2-7b", "--set", "tokens=2T"),
         "--set tokens: unknown memory axis 'tokens' (an axis of the step sweep: --kind step)"),
        (("--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b",
          "--set", "stratgy=ddp"),
         "--set stratgy: unknown step axis 'stratgy' (closest: strategy); allowed: "),
        (("--set", "prest=dgx-h100", "--set", "size=1MB"),
         "--set prest: unknown collective axis 'prest' (closest: preset); allowed: "),
    ],
    ids=["step-axis-no-kind", "step-axis-on-memory", "misspelt-step-axis", "misspelt-preset"],
)  # fmt: skip
def test_an_unknown_axis_says_which_kind_has_it_or_the_closest_name(tmp_path, sets, said):
    """`sweep --set preset=dgx-h100 --set arch=llama-3.1-8b --set strategy=fsdp` (no --kind)
    said "unknown collective axis 'arch'; allowed: preset, model, op, ..." and nothing of the
    step sweep that has it; `--set stratgy=ddp` listed 32 step axes without pointing at
    `strategy`. Unknown names elsewhere (presets, architectures, prices) say the closest."""
    out = tmp_path / "o.csv"
    one_line_error(run("sweep", *sets, "-o", str(out)), said)
    assert not out.exists()


def test_a_grid_file_s_unknown_axis_says_it_too(tmp_path):
    f = tmp_path / "g.toml"
    f.write_text('[grid]\npreset = ["dgx-h100"]\narch = ["llama-3.1-8b"]\nnodes = [1]\n')
    one_line_error(
        run("sweep", str(f), "-o", str(tmp_path / "o.csv")),
        f"{f}: unknown collective axis 'arch' (an axis of the memory and step sweeps: ",
    )
    with pytest.raises(ValueError, match=r"'arch' \(an axis of the memory and step sweeps: `kind`"):
        cm.sweep(preset="dgx-h100", arch="llama-3.1-8b")


# --- predict --compare-models beside a model named ---------------------------------------------
@pytest.mark.parametrize("model", ["textbook", "lesson", "nccl-table", "Calibrated"])
def test_compare_models_refuses_a_model_named_beside_it(model):
    """`predict --compare-models --model textbook` printed every model side by side and read
    --model past in silence, where --algorithm and --protocol beside --compare-models are
    refused ("compares each model's own choice")."""
    where = ("predict", "--cluster", "dgx-h100", "--sizes", "1MB", "--compare-models")
    said = model.lower()
    one_line_error(
        run(*where, "--model", model),
        f"--model: --compare-models answers with every model side by side, so --model {said} ",
        f"drop --compare-models for the {said} model alone",
    )
    assert run(*where).exit_code == 0
    one_line_error(run(*where, "--model", "nccll"), "--model: 'nccll' is not a model; allowed: ")


# --- scenario --vs: a refusal names the change typed -------------------------------------------
@pytest.mark.parametrize(
    ("vs", "said"),
    [
        ("cluster=pcie-8x-l40s", "--vs cluster: 8 nodes but the node has no network"),
        ("cluster=pcie-8x-l40s,zero=3", "--vs: 8 nodes but the node has no network"),
        ("micro_batch=0", "--vs micro_batch: must be a whole number in 1..1,000,000"),
    ],
)
def test_a_vs_refusal_names_the_change_typed_not_a_field_it_kept(vs, said):
    """`scenario --nodes 8 ... --vs cluster=pcie-8x-l40s` (a node with no network; B keeps A's
    8 nodes) said "--vs nodes: 8 nodes but the node has no network", a --vs key never typed:
    the refusal now names the change that made it (`--vs cluster`), or `--vs` for several."""
    line = one_line_error(
        run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "1", "--vs", vs), said
    )
    assert "--vs nodes" not in line


# --- a warning after the answer, to a reader that has gone ---------------------------------------
def test_a_warning_to_a_closed_pipe_after_the_answer_keeps_the_exit_status(tmp_path):
    """`costmodel step --arch llama-2-7b --bucket 50 2>&1 | head -3` exited 1 when head had
    left before the warning after the answer ("--bucket 50 is 50 bytes ...") was written: a
    traceback went to the closed pipe, where a closed stdout ends a command quietly with 0. The
    read end of stderr is closed here before the command runs, so that write fails every
    time; the answer goes to a file and is whole."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out.txt"
    with out.open("wb") as sink:
        p = subprocess.Popen(
            [sys.executable, "-m", "costmodel", "step", "--params", "7B", "--compute-time",
             "400", "--ranks", "64", "--bandwidth", "50GB/s"],
            stdout=sink,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(root)},
            cwd=root,
        )  # fmt: skip
        assert p.stderr is not None
        p.stderr.close()
        assert p.wait(timeout=60) == 0
    assert "step time" in out.read_text() and "overlap contention" in out.read_text()
