"""Fifth QA pass: the notebook API (``import costmodel as cm``) as a new user meets it, with
numbers, numpy arrays and the mistakes a notebook makes (a typo, a NaN, text for a number).

Each test failed before its fix; the fix is in the function every surface calls.
"""

import math

import pytest

import costmodel as cm

# --- training_memory: an activation recipe it does not use is still checked ---------------


@pytest.mark.parametrize(
    ("kw", "field", "allowed"),
    [
        ({"recompute": "ful"}, "recompute", "allowed: none, selective"),
        ({"loss": "fsed"}, "loss", "allowed: fp32, fp32-held, fused"),
        ({"sequence_length": 0}, "sequence_length", "whole number >= 1"),
        ({"sequence_length": math.nan}, "sequence_length", "whole number >= 1"),
        ({"micro_batch": -1}, "micro_batch", "whole number >= 1"),
        ({"micro_batch": True}, "micro_batch", "whole number >= 1"),
    ],
)
@pytest.mark.parametrize("memory", ["bare count", "activations given"])
def test_an_activation_recipe_typo_is_refused_without_an_architecture(kw, field, allowed, memory):
    """``cm.training_memory(7e9, recompute="ful")`` returned 112 GB, as did
    ``micro_batch=-1`` or ``sequence_length=nan``: with no shape (or the activations given in
    bytes) the recipe was never read, so a typo was never seen. With ``arch=`` the same typo
    was an error; now it is one everywhere."""
    call = (
        (lambda: cm.training_memory(7e9, **kw))
        if memory == "bare count"
        else (lambda: cm.training_memory("llama-2-7b", activations_bytes=1e9, **kw))
    )
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(f"{field}: "), err.value
    assert allowed in str(err.value)


def test_a_valid_recipe_on_a_bare_count_still_answers_and_stays_light():
    """A valid recipe is no error (the note says the activations are not included), and the
    default call does not import the architecture module (the formula API's import budget)."""
    import subprocess
    import sys

    m = cm.training_memory(7e9, recompute="full", sequence_length=8192.0, loss="fused")
    assert m.total_bytes == cm.training_memory(7e9).total_bytes == 112e9
    assert "not included" in m.activations_note
    code = (
        "import sys, costmodel as cm; cm.training_memory(7e9); "
        "print('costmodel.architecture' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
