"""What every strategy module hands the engine: the job's inputs and one micro-batch's tasks."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .comm import CollectiveTimer
from .layout import Layout, WrapUnit


@dataclass(frozen=True)
class StepInputs:
    """One data-parallel step's inputs, as the strategy modules read them.

    ``units``: the wrapped units in forward order; ``tensor_params``: parameter tensors in
    registration order (DDP/ZeRO buckets); ``forward_s``/``backward_s``: one micro-batch's
    compute on one GPU [s] (``backward_s`` includes any recomputation); ``grad_bytes`` and
    ``param_bytes``: bytes per element reduced and gathered; ``band``: the task lists also
    carry each task's work at the ends of the collectives' error bands.
    """

    layout: Layout
    units: tuple[WrapUnit, ...]
    tensor_params: tuple[float, ...] | None
    forward_s: float
    backward_s: float
    recompute_s: float
    grad_bytes: float
    param_bytes: float
    timer: CollectiveTimer
    first_bucket_bytes: float
    overlap: bool = True
    small_bucket_last: bool = False
    band: bool = False

    @property
    def backward_total_s(self) -> float:
        """Backward of one micro-batch with its recomputation [s]."""
        return self.backward_s + self.recompute_s

    @functools.cached_property
    def params(self) -> float:
        """Parameters of the units (their sum; kept: a step reads it several times)."""
        return float(sum(u.params for u in self.units))
