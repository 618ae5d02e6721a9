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
