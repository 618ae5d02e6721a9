"""Gradient (and parameter) buckets of the bucketed strategies, as PyTorch DDP forms them."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .events import StepInputs

_TOTALS: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
_BY_ID: dict[tuple[object, ...], tuple[tuple[np.ndarray, np.ndarray], object]] = {}
_TOTALS_KEPT = 256


def buckets(inp: StepInputs, bytes_per_param: float) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, parameters) of each bucket in reduction order (``costmodel.ddp`` rules), capped
    at the layout's bucket size for elements of ``bytes_per_param`` bytes
    (:meth:`~.layout.Layout.bucket_cap`: ddp 25 MiB, zero1/zero2 5e8 elements by default).

    The buckets depend only on the tensor list, the bytes per element and the caps, not on the
    cluster: they are formed once per such setting and copied out (every node count and every
    bucketed strategy of an advisor table asks for the same ones)."""
    from .. import ddp

    cap = inp.layout.bucket_cap(bytes_per_param)
    first, last = float(inp.first_bucket_bytes), bool(inp.small_bucket_last)
    tensors = inp.tensor_params or None
    rest = (inp.params if tensors is None else None, float(bytes_per_param), cap, first, last)
    # found first by the tensor list's identity (hashing thousands of sizes costs more than
    # the look-up), then by its value
    same = _BY_ID.get((id(tensors), *rest))
    if same is not None and same[1] is tensors:
        return same[0][0].copy(), same[0][1].copy()
    key = (tensors, *rest)
    hit = _TOTALS.get(key)
    if hit is None:
        if tensors is not None:
            counts = np.asarray(tensors, dtype=float)
            hit = ddp._bucket_totals(counts * bytes_per_param, counts, cap, first, last)
        else:
            hit = ddp._default_bucket_totals(inp.params, bytes_per_param, cap, first, last)
        if len(_TOTALS) >= _TOTALS_KEPT:
            _TOTALS.clear()
        _TOTALS[key] = hit
    if len(_BY_ID) >= _TOTALS_KEPT:
        _BY_ID.clear()
    _BY_ID[(id(tensors), *rest)] = (hit, tensors)
    return hit[0].copy(), hit[1].copy()


def backward_segments(inp: StepInputs, bucket_params: np.ndarray) -> np.ndarray:
    """Backward work [s] between consecutive bucket-ready points (gradients at a rate
    proportional to parameter count; the last ends the backward)."""
    return _segment_fractions(bucket_params, inp.params) * inp.backward_total_s


_FRACTIONS: dict[tuple[bytes, float], np.ndarray] = {}


def _segment_fractions(bucket_params: np.ndarray, params: float) -> np.ndarray:
    """The share of the backward between consecutive bucket-ready points, kept per buckets
    (every node count of an advisor table cuts the same backward at the same points)."""
    key = (np.asarray(bucket_params, dtype=float).tobytes(), float(params))
    hit = _FRACTIONS.get(key)
    if hit is None:
        ready = np.cumsum(bucket_params) / params
        ready[-1] = 1.0
        hit = np.diff(np.concatenate(([0.0], ready)))
        hit.flags.writeable = False
        if len(_FRACTIONS) >= _TOTALS_KEPT:
            _FRACTIONS.clear()
        _FRACTIONS[key] = hit
    return hit


@lru_cache(maxsize=256)
def labels(pattern: str, n: int) -> tuple[str, ...]:
    """``pattern.format(k)`` for ``k`` in ``0..n-1`` (the buckets' task labels), kept per
    pattern and count: every step of a table labels the same buckets."""
    return tuple(map(pattern.format, range(n)))
