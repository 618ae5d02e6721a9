"""What sizes activations is refused where nothing uses it, by ``costmodel memory`` as by the
memory sweep (one rule, :func:`costmodel.strategy.memory.check_activation_inputs`): a bare
``--params`` count has no shape, so its memory has no activations (the step's memory of a count
holds the model state alone too), and given ``--activations`` replace what the options size.
``memory --params 7B --seq 8192 --recompute full`` answered as if neither option were there."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from tests._cli import one_line_error, run

# (CLI options, the sweep's axes for the same question, the input both name first)
REFUSED = [
    (["--params", "7B", "--seq", "8192", "--recompute", "full"],
     {"params": "7B", "sequence_length": 8192, "recompute": "full"}, "seq"),
    (["--params", "7B", "--micro-batch", "4"], {"params": "7B", "micro_batch": 4}, "micro"),
    (["--params", "7B", "--recompute", "full"], {"params": "7B", "recompute": "full"}, "recompute"),
    (["--params", "7B", "--loss", "fused"], {"params": "7B", "loss": "fused"}, "loss"),
    (["--params", "7B", "--no-flash"], {"params": "7B", "flash_attention": False}, "flash"),
    (["--arch", "llama-3.1-8b", "--activations", "1GB", "--seq", "8192"],
     {"arch": "llama-3.1-8b", "activations": "1GB", "sequence_length": 8192}, "seq"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "axes", "name"), REFUSED)
def test_memory_and_the_sweep_refuse_the_same_inputs(args, axes, name):
    line = one_line_error(run("memory", *args, "--gpu-memory", "80GB"), "sizes activations")
    with pytest.raises(ValueError, match="sizes activations") as swept:
        cm.sweep(kind="memory", gpu_memory="80GB", **axes)
    # one rule, one sentence: the same words after each surface's spelling of the input
    assert line.split(": ", 3)[3] == str(swept.value).split(": ", 1)[1].replace(
        "arch=NAME", "--arch NAME"
    )
    assert name in line.split(": ", 3)[2] and name in str(swept.value).split(":")[0]


def test_what_uses_them_is_still_answered():
    """An architecture's inputs, and a bare count with its own activations, are answered."""
    for args, axes in (
        (["--arch", "llama-3.1-8b", "--seq", "8192", "--recompute", "full"],
         {"arch": "llama-3.1-8b", "sequence_length": 8192, "recompute": "full"}),
        (["--params", "7B", "--activations", "10GB"], {"params": "7B", "activations": "10GB"}),
    ):  # fmt: skip
        r = run("memory", *args, "--json")
        assert r.exit_code == 0, r.output
        (row,) = cm.sweep(kind="memory", **axes).to_dict(orient="records")
        assert json.loads(r.stdout)["memory_GB"] == pytest.approx(row["memory_GB"], rel=1e-12)


def test_step_on_a_count_holds_no_activations_either():
    """The step prices a count's compute on a shape but holds its model state alone: the
    memory command's count has the same memory, with or without a sequence."""
    s = json.loads(
        run(
            "step",
            "--params",
            "7B",
            "--cluster",
            "dgx-h100",
            "--strategy",
            "fsdp",
            "--seq",
            "8192",
            "--json",
        ).stdout  # fmt: skip
    )
    assert s["memory_parts_bytes"]["activations_bytes"] == 0.0
    d = json.loads(run("memory", "--params", "7B", "--zero", "3", "--ranks", "8", "--json").stdout)
    assert d["memory_bytes"] == pytest.approx(s["memory_bytes"], rel=1e-12)


# --- given is given: an input typed at its default value is an input --------------------------
# (memory's option typed at the default value, the sweep's axis for it, the option named)
AT_DEFAULT = [
    (["--seq", "4096"], {"sequence_length": 4096}, "--seq"),
    (["--sequence-length", "4096"], {"sequence_length": 4096}, "--sequence-length"),
    (["--micro-batch", "1"], {"micro_batch": 1}, "--micro-batch"),
    (["--recompute", "none"], {"recompute": "none"}, "--recompute"),
    (["--loss", "fp32"], {"loss": "fp32"}, "--loss"),
    (["--flash"], {"flash_attention": True}, "--flash"),
]


@pytest.mark.parametrize(("args", "axes", "option"), AT_DEFAULT)
def test_an_input_typed_at_its_default_value_is_given(args, axes, option):
    """`memory --params 7B --seq 4096` was answered while `--seq 8192` was refused: "given" was
    read as "not the default", so the default's own value typed was dropped unsaid. The
    memory sweep refuses the same axis at the same value."""
    one_line_error(run("memory", "--params", "7B", *args), f"{option}: sizes activations")
    with pytest.raises(ValueError, match="sizes activations"):
        cm.sweep(kind="memory", params="7B", gpu_memory="80GB", **axes)
    one_line_error(
        run("memory", "--arch", "llama-3.1-8b", "--activations", "1GB", *args),
        f"{option}: sizes activations, which the given activations replace",
    )


def test_an_input_left_out_takes_the_default_and_typed_gives_the_same_answer():
    """Absent is the default (the step's memory's: 4096 tokens, micro-batch 1, FlashAttention,
    no recomputation, fp32 loss), so with an architecture typing it changes nothing."""
    absent = run("memory", "--arch", "llama-3.1-8b", "--json")
    typed = run("memory", "--arch", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1",
                "--recompute", "none", "--loss", "fp32", "--flash", "--json")  # fmt: skip
    assert absent.exit_code == 0 and typed.exit_code == 0, absent.output + typed.output
    a, t = json.loads(absent.stdout), json.loads(typed.stdout)
    assert a == t
    assert (a["sequence_length"], a["micro_batch"], a["recompute"], a["loss"]) == (
        4096, 1, "none", "fp32",
    )  # fmt: skip
    assert a["flash_attention"] is True
    longer = json.loads(run("memory", "--arch", "llama-3.1-8b", "--seq", "8192", "--json").stdout)
    assert longer["activations_GB"] > a["activations_GB"] > 0  # the value is used when given
    bare = run("memory", "--params", "7B", "--json")  # nothing typed: a bare count is answered
    assert bare.exit_code == 0 and json.loads(bare.stdout)["memory_bytes"] > 0
