"""Batch arithmetic (costmodel.batch): global batch, solving for one unknown, LR scaling, warmup."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.batch import (
    BatchSolution,
    global_batch,
    scale_learning_rate,
    solve_batch,
    tokens_per_step,
    warmup_learning_rate,
)


def test_global_batch_and_tokens() -> None:
    assert global_batch(4, 256, 8) == 8192
    assert global_batch(32, 8) == 256  # accumulation defaults to 1
    assert global_batch(np.array([1, 2]), 8, 4).tolist() == [32, 64]
    assert tokens_per_step(8192, 4096) == 8192 * 4096


@pytest.mark.parametrize(
    ("kwargs", "unknown", "value"),
    [
        (dict(ranks=64, accumulation=32, global_batch=8192), "local_batch", 4),
        (dict(local_batch=4, accumulation=32, global_batch=8192), "ranks", 64),
        (dict(local_batch=4, ranks=64, global_batch=8192), "accumulation", 32),
        (dict(local_batch=4, ranks=64, accumulation=32), "global_batch", 8192),
    ],
)
def test_solve_each_unknown(kwargs, unknown, value) -> None:
    sol = solve_batch(**kwargs)
    assert isinstance(sol, BatchSolution)
    assert getattr(sol, unknown) == value and sol.solved == unknown
    assert sol.local_batch * sol.ranks * sol.accumulation == sol.global_batch
    assert sol.tokens_per_step(2048) == 8192 * 2048
    assert sol.as_dict()["solved"] == unknown


def test_non_integer_split_is_refused_with_nearest_values() -> None:
    with pytest.raises(ValueError) as err:
        solve_batch(local_batch=3, ranks=64, global_batch=8192)
    msg = str(err.value)
    assert msg.startswith("accumulation: 8192 / (3 x 64) = 42.67 is not a whole number")
    assert (
        "accumulation=42 (global_batch=8064)" in msg
        and "accumulation=43 (global_batch=8256)" in msg
    )
    # below 1: only the ceiling is offered
    with pytest.raises(
        ValueError,
        match=r"ranks: 8 / \(16 x 1\) = 0.5 .* nearest valid: ranks=1 \(global_batch=16\);",
    ):
        solve_batch(local_batch=16, accumulation=1, global_batch=8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            dict(local_batch=4, ranks=64, accumulation=32, global_batch=8192),
            "exactly one .* got 0 unknown",
        ),
        (dict(local_batch=4, ranks=64), "got 2 unknown \\(accumulation, global_batch\\)"),
        (
            dict(local_batch=2.5, ranks=64, accumulation=1),
            "local_batch: must be a whole number in 1..1,000,000, got 2.5",
        ),
        (
            dict(local_batch=4, ranks=0, accumulation=1),
            "ranks: must be a whole number in 1..1,000,000,000, got 0",
        ),
        (dict(local_batch=4, ranks=8, global_batch=float("nan")), "global_batch"),
        (dict(local_batch=True, ranks=8, accumulation=1), "local_batch"),
    ],
)
def test_bad_batch_input(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        solve_batch(**kwargs)


def test_global_batch_bad_input() -> None:
    with pytest.raises(
        ValueError, match="ranks: must be a whole number in 1..1,000,000,000, got 1.5"
    ):
        global_batch(4, 1.5, 1)


def test_learning_rate_rules() -> None:
    # Goyal et al. 2017: lr 0.1 at batch 256 -> 3.2 at 8192 (k = 32)
    assert scale_learning_rate(0.1, 256, 8192) == pytest.approx(3.2, rel=1e-12)
    assert scale_learning_rate(0.1, 256, 8192, rule="sqrt") == pytest.approx(
        0.1 * math.sqrt(32), rel=1e-12
    )
    assert scale_learning_rate(0.1, 8192, 256) == pytest.approx(0.1 / 32, rel=1e-12)
    with pytest.raises(
        ValueError, match="rule: unknown learning-rate rule 'cubic'; allowed: linear, sqrt"
    ):
        scale_learning_rate(0.1, 256, 512, rule="cubic")
    with pytest.raises(ValueError, match="base_batch: must be a finite number > 0"):
        scale_learning_rate(0.1, 0, 512)


def test_warmup() -> None:
    lr = warmup_learning_rate(np.arange(0, 11), 1.0, 10)
    assert np.allclose(lr, np.arange(0, 11) / 10)
    assert warmup_learning_rate(100, 1.0, 10) == 1.0
    assert warmup_learning_rate(0, 1.0, 0) == 1.0  # no warmup
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_learning_rate(0, 1.0, -1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 512), st.integers(1, 4096), st.integers(1, 256))
def test_solve_round_trips(b, n, a) -> None:
    g = global_batch(b, n, a)
    assert solve_batch(ranks=n, accumulation=a, global_batch=g).local_batch == b
    assert solve_batch(local_batch=b, accumulation=a, global_batch=g).ranks == n
    assert solve_batch(local_batch=b, ranks=n, global_batch=g).accumulation == a


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 10**6))
def test_refusal_offers_valid_neighbours(b, n, g) -> None:
    if g % (b * n) == 0:
        assert solve_batch(local_batch=b, ranks=n, global_batch=g).accumulation == g // (b * n)
        return
    with pytest.raises(ValueError) as err:
        solve_batch(local_batch=b, ranks=n, global_batch=g)
    lo, hi = g // (b * n), g // (b * n) + 1
    assert f"accumulation={hi} (global_batch={hi * b * n})" in str(err.value)
    assert (lo >= 1) == (f"accumulation={lo} " in str(err.value))


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-5, 10), st.integers(1, 10**5), st.integers(1, 10**5))
def test_sqrt_rule_is_between_one_and_linear(lr, b0, b1) -> None:
    lin = scale_learning_rate(lr, b0, b1)
    sq = scale_learning_rate(lr, b0, b1, rule="sqrt")
    assert min(lr, lin) * (1 - 1e-12) <= sq <= max(lr, lin) * (1 + 1e-12)
