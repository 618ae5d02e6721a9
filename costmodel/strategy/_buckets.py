"""Gradient (and parameter) buckets of the bucketed strategies, as PyTorch DDP forms them."""

from __future__ import annotations

import numpy as np

from .events import StepInputs


def buckets(inp: StepInputs, bytes_per_param: float) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, parameters) of each bucket in reduction order (``costmodel.ddp`` rules)."""
    from .. import ddp

    cap = float(inp.layout.bucket_cap_bytes)
    if inp.tensor_params:
        counts = np.asarray(inp.tensor_params, dtype=float)
        return ddp._bucket_totals(
            counts * bytes_per_param,
            counts,
            cap,
            float(inp.first_bucket_bytes),
            bool(inp.small_bucket_last),
        )
    b, p = ddp._default_bucket_totals(
        inp.params, bytes_per_param, cap, float(inp.first_bucket_bytes), bool(inp.small_bucket_last)
    )
    return b.copy(), p.copy()


def backward_segments(inp: StepInputs, bucket_params: np.ndarray) -> np.ndarray:
    """Backward work [s] between consecutive bucket-ready points (gradients at a rate
    proportional to parameter count; the last ends the backward)."""
    ready = np.cumsum(bucket_params) / inp.params
    ready[-1] = 1.0
    return np.diff(np.concatenate(([0.0], ready))) * inp.backward_total_s
