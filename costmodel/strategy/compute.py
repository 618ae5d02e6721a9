r"""Compute time of one micro-batch: the single function the step engine calls.

Today: the model's training FLOPs over the GPU's peak times a model FLOP utilisation,

.. math:: t = \frac{F_{token}\, T}{\text{peak} \times \text{MFU}}\quad(+\ \tfrac13 t
   \text{ with full recomputation})

(Kaplan et al. 2020, arXiv:2001.08361, ``C = 6 N D``; PaLM's MFU, Chowdhery et al. 2022,
arXiv:2204.02311, appendix B). A measured ``compute_time_s`` overrides it. A fitted achievable
efficiency replaces the constant MFU here (one place) when it is fitted and validated.

Full recomputation reruns each unit's forward in its backward (Korthikanti et al. 2022,
arXiv:2205.05198, section 5): one more forward, ``2 N`` FLOPs per token on top of ``6 N``, so a
third more time at the same efficiency. Selective recomputation's extra (a few percent there) is
not counted.
"""

from __future__ import annotations

import math

DEFAULT_MFU = 0.4
"""Model FLOP utilisation when nothing is measured (the tool's long-standing default)."""

# Forward 2PT, backward 4PT FLOPs (Kaplan et al. 2020, section 2.1).
FORWARD_FRACTION = 1.0 / 3.0
RECOMPUTE_EXTRA = {"none": 0.0, "selective": 0.0, "full": FORWARD_FRACTION}
"""Extra compute of each recomputation mode, as a fraction of forward + backward."""


def micro_batch_compute_s(
    flops_per_token: float,
    tokens: float,
    peak_flops: float,
    mfu: float | None = None,
    compute_time_s: float | None = None,
) -> float:
    """Forward + backward of one micro-batch on one GPU [s] (module docstring).

    ``compute_time_s`` (measured) wins over ``mfu``; ``mfu`` defaults to :data:`DEFAULT_MFU`.

    >>> round(micro_batch_compute_s(6 * 7e9, 4096, 989e12), 3)
    0.435
    >>> micro_batch_compute_s(6 * 7e9, 4096, 989e12, compute_time_s=0.4)
    0.4
    """
    if compute_time_s is not None:
        t = float(compute_time_s)
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"compute_time_s: must be a finite time > 0 s, got {compute_time_s!r}")
        return t
    u = DEFAULT_MFU if mfu is None else float(mfu)
    if not (0 < u <= 1):
        raise ValueError(f"mfu: must be in (0, 1], got {mfu!r}")
    return float(flops_per_token) * float(tokens) / (float(peak_flops) * u)


def recompute_extra(recompute: str) -> float:
    """Extra compute of a recomputation mode, a fraction of forward + backward [-]."""
    if recompute not in RECOMPUTE_EXTRA:
        raise ValueError(f"recompute: unknown {recompute!r}; allowed: {', '.join(RECOMPUTE_EXTRA)}")
    return RECOMPUTE_EXTRA[recompute]
