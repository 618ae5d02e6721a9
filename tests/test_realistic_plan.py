"""The realistic model keeps its size-independent work per (op, cluster, node count): the kept
plan gives the numbers of a computation from scratch, and cannot be changed by a caller."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel import realistic as R
from costmodel.predict import fitted_params
from costmodel.presets import cluster

SIZES = 2.0 ** np.arange(0, 35, 1.5)


def _rows(op, nodes, **kw):
    t, a, p, (an, pn) = R.realistic_rows(op, SIZES, nodes, 8, cluster("dgx-h100"), **kw)
    return t, np.asarray(an)[a], np.asarray(pn)[p]


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
@pytest.mark.parametrize("nvls", [None, False])
def test_kept_plan_gives_the_numbers_of_a_fresh_one(op, nvls):
    R._group_plan_cached.cache_clear()
    kept = {k: _rows(op, k, nvls=nvls) for k in (1, 2, 4, 5)}  # one node count: plan kept
    again = {k: _rows(op, k, nvls=nvls) for k in (1, 2, 4, 5)}  # from the kept plans
    # several node counts in one call of the >= 3 class: computed afresh, not kept
    k = np.repeat([4, 5], SIZES.size)
    t, a, p, (an, pn) = R.realistic_rows(
        op, np.tile(SIZES, 2), k, 8, cluster("dgx-h100"), nvls=nvls
    )
    fresh = {4: slice(0, SIZES.size), 5: slice(SIZES.size, None)}
    for n, sl in fresh.items():
        for x, y, z in zip(
            kept[n], again[n], (t[sl], np.asarray(an)[a[sl]], np.asarray(pn)[p[sl]]), strict=True
        ):
            assert np.array_equal(x, y) and np.array_equal(x, z), (op, nvls, n)
    # the same parameters given explicitly (a copy: not kept) give the same numbers
    for n in (1, 2):
        given = _rows(op, n, nvls=nvls, params=fitted_params())
        assert all(np.array_equal(x, y) for x, y in zip(kept[n], given, strict=True)), (op, nvls, n)


def test_kept_plan_and_parameters_are_read_only():
    _rows("all_reduce", 2)
    plan = R._group_plan_cached(
        "all_reduce",
        cluster("dgx-h100", nodes=2),
        ("auto", "auto"),
        "fitted",
        None,
        False,
        2.0,
        R._Ref(R._fitted_shared()),
    )
    assert plan.stack is not None
    with pytest.raises(ValueError):
        plan.stack.bw[0, 0] = 1.0
    with pytest.raises(TypeError):
        R._fitted_shared()["ramp_phi"] = 0.0  # type: ignore[index]
