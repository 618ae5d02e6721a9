"""Papercuts of pass 33: one helper for a whole float said as an int, the ``archs`` price column,
a sweep's failed rows said once, numpy scalars in a Layout/Scenario refusal, and ``predict
--harness`` under the lesson and textbook models.
"""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

import costmodel as cm
from costmodel import units
from costmodel.strategy.step import StrategyStep
from costmodel.training import TrainingCost

from ._cli import run

# --- 1. a whole float said as an int: one helper (units.whole_number) ------------------------


@pytest.mark.parametrize(
    ("given", "said"),
    [(8192.0, 8192), (-3.0, -3), (0.0, 0), (2.5, 2.5), (-0.5, -0.5), (7, 7)],
)
def test_whole_number_says_a_whole_float_as_an_int(given: float, said: float) -> None:
    got = units.whole_number(given)
    assert got == said and type(got) is type(said)


@pytest.mark.parametrize("given", [math.inf, -math.inf])
def test_whole_number_keeps_an_infinity_a_float(given: float) -> None:
    assert units.whole_number(given) == given


def test_whole_number_keeps_nan_a_float() -> None:
    got = units.whole_number(float("nan"))
    assert isinstance(got, float) and math.isnan(got)


@pytest.mark.parametrize("as_dict", [StrategyStep.as_dict, TrainingCost.as_dict])
def test_step_and_training_as_dict_use_the_one_helper(as_dict) -> None:
    source = inspect.getsource(as_dict)
    assert "whole_number(self.tokens_per_step)" in source
    assert "is_integer" not in source


# --- 2. archs: the price column on its decimal points ------------------------------------------


def test_archs_aligns_the_prices_on_their_decimal_points() -> None:
    lines = [x for x in run("archs").stdout.splitlines() if "/GPU-h" in x]
    prices = [re.search(r"\$([\d,]+)\.(\d+)/GPU-h", x) for x in lines]
    assert all(prices) and len(prices) > 10
    points = {m.start(2) - 1 for m in prices}  # type: ignore[union-attr]
    assert len(points) == 1, sorted(points)  # $5.97 under $11.0612 on the point, not the end
    # the price text as before: the unit beside each price, the column after it aligned
    assert any("  $4.858/GPU-h  committed-3y" in x for x in lines)
    assert any(" $11.0612/GPU-h on-demand" in x for x in lines)
    assert len({x.index("(as of") for x in lines}) == 1
    # the fractions differ in length (two to four decimals), so the points align only so
    assert len({len(m.group(2)) for m in prices}) > 1  # type: ignore[union-attr]


# --- 3. a sweep whose rows fail for several reasons says the total once ------------------------


def test_a_sweep_with_three_algorithms_refused_says_the_failed_rows_once() -> None:
    # on two DGX H100 nodes (no SHARP switch, no CollNet) nvls, collnet_direct and collnet_chain
    # cannot run all_reduce; ring, tree and nvls_tree can
    algos = "ring,tree,nvls,nvls_tree,collnet_direct,collnet_chain"
    r = run("sweep", "--set", "preset=dgx-h100", "--set", f"algorithm={algos}",
            "--set", "size=1GB", "--set", "nodes=2")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert [x for x in lines if "rows failed" in x or "row failed" in x] == [
        "costmodel: warning: 3 of 6 rows failed (in the output with NaN answers and their "
        "error) for 3 reasons:"
    ], lines
    assert "1 of 6" not in r.stderr
    reasons = lines[1:]
    assert len(reasons) == 3
    for line, algo in zip(reasons, ("nvls", "collnet_direct", "collnet_chain"), strict=True):
        assert line.startswith(f"costmodel: warning: 1 row: --set algorithm: {algo!r} "), line


def test_a_sweep_with_one_reason_keeps_its_one_line() -> None:
    r = run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1,2,4", "--set", "size=1GiB",
            "--set", "algorithm=nvls")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith(
        "costmodel: warning: 2 of 3 rows failed (in the output with NaN answers and this error): "
        "--set algorithm: 'nvls'"
    ), line


# --- 4. a numpy scalar in a refusal is said as the number it holds ----------------------------

_SCENARIO = {"params": "7B", "cluster": "dgx-h100"}
_SCENARIO_NUMBERS = ["params", "zero_stage", "group_size", "nodes", "gpus_per_node",
                     "power_limit_w", "local_batch", "accumulation", "sequence_length", "mfu",
                     "compute_time_s", "bucket_cap_bytes", "comm_contention",
                     "cuda_context_bytes", "fragmentation"]  # fmt: skip
_LAYOUT_NUMBERS = ["ranks", "gpus_per_node", "group_size", "bucket_cap_bytes", "comm_contention"]
_VALUES = [math.nan, math.inf, -math.inf, 1e30, 2.5, 1.5, -1.0, 0.0, 5.0]


def _refusal(cls, kwargs: dict) -> str:
    try:
        cls(**kwargs)
    except ValueError as exc:
        return str(exc)
    return "accepted"


def test_layout_says_a_numpy_contention_as_a_float() -> None:
    with pytest.raises(ValueError) as exc:
        cm.Layout(comm_contention=np.float64(1.5))
    assert str(exc.value) == "comm_contention: must be an overlap contention in [0, 1], got 1.5"


def test_layout_says_a_numpy_count_as_an_int() -> None:
    with pytest.raises(ValueError) as exc:
        cm.Layout(ranks=np.int64(0))
    assert str(exc.value).endswith("allowed: [1, 1,000,000,000] (got 0)"), str(exc.value)


@pytest.mark.parametrize(
    ("model", "field"),
    [("Scenario", f) for f in _SCENARIO_NUMBERS] + [("Layout", f) for f in _LAYOUT_NUMBERS],
)
def test_a_numpy_scalar_is_refused_in_a_python_number_s_words(model: str, field: str) -> None:
    cls = getattr(cm, model)
    base = {**(_SCENARIO if model == "Scenario" else {})}
    if field == "group_size":
        base["strategy"] = "hsdp"
    for v in _VALUES:
        pairs = [(np.float64(v), v)]
        if math.isfinite(v) and v == int(v) and abs(v) < 2**62:
            pairs.append((np.int64(int(v)), int(v)))
        for given, plain in pairs:
            said = _refusal(cls, {**base, field: given})
            assert said == _refusal(cls, {**base, field: plain}), (given, said)
            assert "np." not in said, said
