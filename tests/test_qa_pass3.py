"""A third new user's pass over the CLI and the API: what each defect it found does now.

Each test asks a planner's question (a recipe the GPU cannot run, a bare parameter count, a
setup where nothing fits, a bundled nccl-tests log) through the surfaces that answer it and
checks that they agree, say what they leave out, and refuse bad input on one line.
"""

from __future__ import annotations

import pytest

import costmodel as cm
from tests._cli import one_line_error, run

FP8_REFUSED = r"recipe: fp8-mixed .*fp8 tensor cores; a100-sxm-80gb has none; allowed: mixed-adam"


# --- an fp8 recipe on a GPU without fp8 ----------------------------------------------------------
def test_an_fp8_recipe_on_a_gpu_without_fp8_is_refused_everywhere(tmp_path):
    """`step --cluster dgx-a100 --recipe fp8-mixed` priced an A100 step (and sized its memory)
    with fp8 weights and gradients, which need fp8 tensor cores (Hopper, Ada, Blackwell); only
    `--param-dtype fp8` was refused. Now the one check refuses it on every surface."""
    kw = dict(arch="llama-3.1-8b", nodes=1, strategy="fsdp", recipe="fp8-mixed", band=False)
    with pytest.raises(ValueError, match=FP8_REFUSED):
        cm.strategy_step(None, cluster="dgx-a100", **kw)
    assert cm.strategy_step(None, cluster="dgx-h100", **kw).step_time_s > 0  # H100 has fp8
    with pytest.raises(ValueError, match=FP8_REFUSED):
        cm.Scenario(arch="llama-2-7b", cluster="dgx-a100", nodes=1, recipe="fp8-mixed").evaluate()
    for args in (
        ("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed"),
        ("train", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed",
         "--tokens", "1T"),
        ("memory", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed",
         "--ranks", "8"),
        ("sweep", "--kind", "step", "--set", "preset=dgx-a100", "--set", "arch=llama-3.1-8b",
         "--set", "nodes=1", "--set", "recipe=fp8-mixed", "-o", str(tmp_path / "s.csv")),
    ):  # fmt: skip
        one_line_error(run(*args), "recipe: fp8-mixed", "a100-sxm-80gb has none")
    assert not (tmp_path / "s.csv").exists()
    # without a GPU named, memory is a formula: the recipe's bytes, no verdict to refuse
    assert run("memory", "--params", "7B", "--recipe", "fp8-mixed").exit_code == 0
