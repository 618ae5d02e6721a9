"""Named constants with their unit and source. No unnamed factor lives inside a branch elsewhere.

Sections: nccl-tests bus-bandwidth factors (used by the textbook and NCCL models alike), then
NCCL's tuning constants (NCCL 2.30.7, ``src/graph/tuning.cc``), then the terms NCCL leaves out.
"""

from __future__ import annotations

from collections.abc import Callable

# --- nccl-tests bus bandwidth ---------------------------------------------------------------
# nccl-tests doc/PERFORMANCE.md l.136-143 and src/*.cu GetBw (v2.19.6): busbw = algbw * factor(N)
BUSBW_FACTOR: dict[str, Callable[[float], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
