"""training_memory's scalar fast path: Python floats out, equal bit for bit to
the array path, and the same errors for bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from costmodel import memory


def _fields(mb: memory.MemoryBreakdown) -> dict:
    return {k: v for k, v in mb.as_dict().items()}


@pytest.mark.parametrize(
    ("recipe", "stage"), list(itertools.product(sorted(memory.RECIPES), memory.ZERO_STAGES))
)
def test_scalar_path_equals_array_path(recipe, stage):
    for params, ranks, act, ctx, frag, ddp in itertools.product(
        [0, 1.0, 7e9, 1.234567e11],
        [1, 3, 64.0, 4096],
        [0, 3.5e9],
        [0.0, 6e8],
        [0.0, 0.07],
        [False, True] if stage <= 1 else [False],
    ):
        kw = dict(
            recipe=recipe,
            zero_stage=stage,
            activations_bytes=act,
            cuda_context_bytes=ctx,
            fragmentation=frag,
            ddp_bucket_copy=ddp,
        )
        fast = memory.training_memory(params, dp_ranks=ranks, **kw)
        slow = memory.training_memory(np.array([params]), dp_ranks=np.array([ranks]), **kw)
        for name, value in _fields(fast).items():
            want = getattr(slow, name) if hasattr(slow, name) else slow.as_dict()[name]
            if isinstance(value, str | int) and not isinstance(value, float):
                assert value == want
            else:
                assert type(value) is float, name
                assert value == float(np.asarray(want).item()), (name, params, ranks)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"params": -1.0}, "params: must be a finite number >= 0"),
        ({"params": math.inf}, "params: must be a finite number >= 0"),
        ({"params": 1e9, "dp_ranks": 0}, "dp_ranks: must be a whole number in 1.."),
        ({"params": 1e9, "dp_ranks": 2.5, "zero_stage": 1}, "dp_ranks: must be a whole number"),
        ({"params": 1e9, "activations_bytes": -1}, "activations_bytes: must be a finite number"),
        ({"params": 1e9, "cuda_context_bytes": math.nan}, "cuda_context_bytes: must be"),
        ({"params": 1e9, "fragmentation": 1.0}, "fragmentation: must be a fraction in [0, 1)"),
        ({"params": 1e9, "zero_stage": 2, "ddp_bucket_copy": True}, "ddp_bucket_copy"),
    ],
)
def test_scalar_bad_input_gives_the_array_paths_error(kwargs, fragment):
    with pytest.raises(ValueError) as scalar_err:
        memory.training_memory(**kwargs)
    assert fragment in str(scalar_err.value)
    arr = {k: (np.array([v]) if k == "params" else v) for k, v in kwargs.items()}
    with pytest.raises(ValueError) as array_err:
        memory.training_memory(**arr)
    assert str(scalar_err.value) == str(array_err.value)


def test_numpy_scalars_and_arrays_keep_the_array_path():
    got = memory.training_memory(np.float64(7e9), zero_stage=3, dp_ranks=np.arange(1, 5))
    assert isinstance(got.total_bytes, np.ndarray) and got.total_bytes.shape == (4,)
    assert got.total_bytes[0] == memory.training_memory(7e9, zero_stage=3).total_bytes
