"""Memory per GPU (costmodel.memory): recipes, ZeRO sharding, activations, solvers, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import memory
from costmodel.memory import (
    RECIPES,
    Recipe,
    activation_bytes,
    max_params,
    min_ranks,
    state_bytes_per_param,
    training_memory,
)

# Exact arithmetic on a handful of float products: 1e-12 relative covers rounding only.
EXACT = 1e-12

# Bytes per parameter each recipe's source states (weights + grads + master + optimizer).
PUBLISHED_TOTALS = {
    "mixed-adam": 16.0,  # ZeRO paper section 3.1: 2 + 2 + 12
    "fp32-adam": 16.0,  # 4 + 4 + 4 + 4
    "mixed-adam-fp32-grads": 18.0,
    "fp8-mixed": 14.0,
    "sgd-momentum": 12.0,
    "adafactor": 8.0,
    "adam-8bit": 2 + 2 + 4 + 2 * (1 + 4 / 2048),  # Dettmers et al.: 1 B/state + fp32 per 2048
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTALS))
def test_recipe_totals(name: str) -> None:
    assert RECIPES[name].bytes_per_param == pytest.approx(PUBLISHED_TOTALS[name], rel=EXACT)
    assert training_memory(1e9, name).total_bytes == pytest.approx(
        1e9 * PUBLISHED_TOTALS[name], rel=EXACT
    )


def test_every_recipe_has_a_source_and_positive_weights() -> None:
    assert set(RECIPES) == set(PUBLISHED_TOTALS)
    for r in RECIPES.values():
        assert r.source and r.description
        assert r.weight_bytes > 0 and r.gradient_bytes > 0


def test_zero_stages_shard_the_right_parts() -> None:
    # 1e9 params, mixed Adam, 8 ranks: (w, g, master, opt) = (2, 2, 4, 8) GB unsharded
    gb = 1e9
    expected = {
        0: (2, 2, 4, 8),
        1: (2, 2, 0.5, 1),
        2: (2, 0.25, 0.5, 1),
        3: (0.25, 0.25, 0.5, 1),
    }
    for stage, parts in expected.items():
        m = training_memory(1e9, zero_stage=stage, dp_ranks=8)
        got = (m.weights_bytes, m.gradients_bytes, m.master_bytes, m.optimizer_bytes)
        assert got == pytest.approx(tuple(p * gb for p in parts), rel=EXACT), stage


def test_extra_parts_add_up_and_as_dict() -> None:
    m = training_memory(
        1e9,
        activations_bytes=3e9,
        ddp_bucket_copy=True,
        cuda_context_bytes=0.5e9,
        fragmentation=0.1,
    )
    held = 16e9 + 3e9 + 2e9  # state + activations + DDP bucket copy of bf16 grads
    assert m.ddp_buckets_bytes == pytest.approx(2e9, rel=EXACT)
    assert m.fragmentation_bytes == pytest.approx(0.1 * held, rel=EXACT)
    assert m.total_bytes == pytest.approx(1.1 * held + 0.5e9, rel=EXACT)
    d = m.as_dict()
    assert d["total_bytes"] == m.total_bytes and d["recipe"] == "mixed-adam"
    assert sum(m.parts().values()) == pytest.approx(m.total_bytes, rel=EXACT)


def test_vectorised_over_params_and_ranks() -> None:
    m = training_memory(np.array([1e9, 2e9]), zero_stage=3, dp_ranks=np.array([1, 4]))
    assert np.allclose(m.total_bytes, [16e9, 8e9], rtol=EXACT)
    assert isinstance(training_memory(1e9).total_bytes, float)


def test_activation_formula_by_hand() -> None:
    # Korthikanti et al. 2022 eq. (1): s b h (34 + 5 a s / h) per layer, 16-bit activations.
    L, h, s, b, a = 32, 4096, 2048, 2, 32  # noqa: N806
    none = L * s * b * h * (34 + 5 * a * s / h)
    assert activation_bytes(L, h, s, b, a) == pytest.approx(none, rel=EXACT)
    assert activation_bytes(L, h, s, b, a, "selective") == pytest.approx(
        L * s * b * h * 34, rel=EXACT
    )
    assert activation_bytes(L, h, s, b, a, "full") == pytest.approx(L * s * b * h * 2, rel=EXACT)
    with pytest.raises(
        ValueError, match="recompute.*allowed: none, selective, selective-op, selective-layer, full"
    ):
        activation_bytes(L, h, s, b, a, "some")


def test_custom_recipe_is_data() -> None:
    lion = Recipe("lion", 2, 2, 4, 4, "bf16 + fp32 master + one momentum", "Chen et al. 2023")
    assert training_memory(1e9, lion).total_bytes == pytest.approx(12e9, rel=EXACT)
    assert training_memory(1e9, lion).recipe == "lion"


def test_max_params_inverts_training_memory() -> None:
    kw = dict(
        zero_stage=2,
        dp_ranks=8,
        activations_bytes=10e9,
        ddp_bucket_copy=False,
        cuda_context_bytes=1e9,
        fragmentation=0.05,
    )
    p = max_params(80e9, **kw)
    assert training_memory(p, **kw).total_bytes == pytest.approx(80e9, rel=1e-9)
    assert max_params(0.5e9, cuda_context_bytes=1e9) == 0.0  # nothing fits


def test_min_ranks_is_minimal() -> None:
    for params, stage in [(30e9, 3), (70e9, 3), (13e9, 2), (7e9, 1)]:
        n = min_ranks(params, 80e9, zero_stage=stage)
        assert training_memory(params, zero_stage=stage, dp_ranks=n).total_bytes <= 80e9
        if n > 1:
            assert training_memory(params, zero_stage=stage, dp_ranks=n - 1).total_bytes > 80e9


def test_min_ranks_refuses_when_replicated_part_does_not_fit() -> None:
    # ZeRO-1 keeps weights + grads (4 B/param) everywhere: 30B -> 120 GB > 80 GB at any N
    with pytest.raises(
        ValueError, match=r"^zero_stage: stage 1 .*120 GB per rank.*`zero_stage` 3 needs 6"
    ):
        min_ranks(30e9, 80e9, zero_stage=1)
    with pytest.raises(ValueError, match="even `zero_stage` 3 cannot fit"):
        min_ranks(30e9, 80e9, zero_stage=0, activations_bytes=90e9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: training_memory(-1), "params: must be a finite number >= 0"),
        (lambda: training_memory(float("nan")), "params"),
        (
            lambda: training_memory(1e9, "adam-16bit"),
            "recipe: unknown recipe 'adam-16bit'; allowed: mixed-adam",
        ),
        (
            lambda: training_memory(1e9, zero_stage=4),
            r"zero_stage: must be one of \(0, 1, 2, 3\), got 4",
        ),
        (lambda: training_memory(1e9, zero_stage=3, dp_ranks=0), "dp_ranks"),
        (
            lambda: training_memory(1e9, zero_stage=3, dp_ranks=2.5),
            "dp_ranks: must be a whole number",
        ),
        (lambda: training_memory(1e9, fragmentation=1.5), "fragmentation: must be a fraction"),
        (lambda: training_memory(1e9, zero_stage=2, ddp_bucket_copy=True), "ddp_bucket_copy"),
        (lambda: max_params(0), "memory_bytes: must be a finite number > 0"),
        (lambda: min_ranks([1e9], 80e9), "scalars"),
    ],
)
def test_bad_input(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


# --- invariants --------------------------------------------------------------------------------
params_st = st.floats(min_value=1e6, max_value=1e12)
ranks_st = st.integers(min_value=1, max_value=4096)
recipe_st = st.sampled_from(sorted(RECIPES))


@settings(max_examples=200, deadline=None)
@given(params_st, ranks_st, recipe_st, st.floats(0, 1e11), st.floats(0, 0.5))
def test_zero_never_increases_memory(params, ranks, recipe, act, frag) -> None:
    totals = [
        training_memory(params, recipe, s, ranks, act, fragmentation=frag).total_bytes
        for s in memory.ZERO_STAGES
    ]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(totals, totals[1:], strict=False))


@settings(max_examples=200, deadline=None)
@given(params_st, ranks_st, ranks_st, recipe_st, st.sampled_from(memory.ZERO_STAGES))
def test_more_ranks_never_increase_memory(params, n1, n2, recipe, stage) -> None:
    lo, hi = sorted((n1, n2))
    a = training_memory(params, recipe, stage, lo).total_bytes
    b = training_memory(params, recipe, stage, hi).total_bytes
    assert b <= a * (1 + 1e-12)
    if stage == 0:
        assert math.isclose(a, b, rel_tol=EXACT)  # plain DP: ranks change nothing


@settings(max_examples=100, deadline=None)
@given(st.floats(1e9, 1e12), recipe_st, st.sampled_from((1, 2, 3)))
def test_min_ranks_fits_and_is_tight(params, recipe, stage) -> None:
    try:
        n = min_ranks(params, 80e9, recipe, stage)
    except ValueError:
        # refusing is right only when the state does not fit even on the most ranks a call
        # takes (the ranks limit, 1e9): the replicated part alone, or near it
        assert training_memory(params, recipe, stage, 10**9).total_bytes >= 80e9 * (1 - 1e-9)
        return
    assert training_memory(params, recipe, stage, n).total_bytes <= 80e9 * (1 + 1e-9)
    if n > 1:
        assert training_memory(params, recipe, stage, n - 1).total_bytes > 80e9


def test_state_bytes_per_param_is_a_dict_of_floats() -> None:
    d = state_bytes_per_param("fp32-adam", 3, 4)
    assert d == {"weights": 1.0, "gradients": 1.0, "master": 0.0, "optimizer": 2.0}
