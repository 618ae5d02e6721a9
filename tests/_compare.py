"""One recursive comparison of results (dicts, lists, floats) for the tests that check two roads
give the same numbers."""

from __future__ import annotations

import math

import pytest


def assert_same(a: object, b: object, where: str, *, rel: float | None = None) -> None:
    """``a`` and ``b`` hold the same values, ``where`` naming the first that differs.

    ``rel=None``: exact (dict keys in the same order, floats bit-equal, NaN equal to NaN);
    otherwise floats within ``rel`` (and 1e-15 absolute) and dict keys as sets."""
    if isinstance(a, dict):
        assert isinstance(b, dict), where
        assert (list(a) == list(b)) if rel is None else (set(a) == set(b)), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}", rel=rel)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]", rel=rel)
    elif isinstance(a, float) and not isinstance(b, bool):
        if rel is None:
            assert type(b) is float and (a == b or (math.isnan(a) and math.isnan(b))), (where, a, b)
        elif math.isnan(a):
            assert isinstance(b, float) and math.isnan(b), where
        else:
            assert isinstance(b, float) and b == pytest.approx(a, rel=rel, abs=1e-15), where
    else:
        assert a == b, (where, a, b)
