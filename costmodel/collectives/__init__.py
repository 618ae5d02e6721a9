r"""Textbook alpha-beta-gamma cost of every collective and algorithm (DESIGN.md section 3.1).

A message of ``n`` bytes between two ranks costs ``alpha + n * beta``; reducing ``n`` bytes costs
``n * gamma``. Every (op, algorithm) row below is affine in the message size ``M``:

.. math:: t(M, N) = s(N)\,\alpha + c(N)\,M\,\beta + r(N)\,M\,\gamma

with ``s`` the number of sequential latency steps, ``c`` the bytes one rank moves over its
link (per direction, on the critical path) per byte of message, and ``r`` the bytes one rank
reduces on the critical path per byte of message. ``L = ceil(log2 N)``. A single rank (``N = 1``)
communicates nothing and takes no time; nor does an empty message (``M = 0``): nothing is sent,
so no latency is paid either (NCCL discards an empty collective; ``predict_collective`` says 0 s
for 0 B on every model), element-wise for arrays.

=============== ==================== ============ ============== ============
op              algorithm            s(N)         c(N)           r(N)
=============== ==================== ============ ============== ============
all_reduce      ring                 2(N-1)       2(N-1)/N       (N-1)/N
all_reduce      tree                 2L           2              (N-1)/N
all_reduce      binomial_tree        2L           2L             L
all_reduce      recursive_doubling   L            L              L
all_reduce      halving_doubling     2L           2(N-1)/N       (N-1)/N
all_reduce      nvls                 1            (N+1)/N        0
all_reduce      naive_root           2(N-1)       2(N-1)         N-1
all_reduce      naive_all_to_all     N-1          N-1            N-1
reduce_scatter  ring                 N-1          (N-1)/N        (N-1)/N
reduce_scatter  halving              L            (N-1)/N        (N-1)/N
all_gather      ring                 N-1          (N-1)/N        0
all_gather      recursive_doubling   L            (N-1)/N        0
broadcast       chain                N-1          1              0
broadcast       binomial_tree        L            L              0
reduce          chain                N-1          1              1
reduce          binomial_tree        L            L              L
all_to_all      pairwise             N-1          (N-1)/N        0
=============== ==================== ============ ============== ============

``"ring"`` is accepted for the ring-like algorithm of every op (``chain`` for broadcast and
reduce, ``pairwise`` for all-to-all), and ``"pairwise"`` for the reduce-scatter ring.

Message size ``M`` is the per-rank buffer as nccl-tests prints it (for all-gather the full output
buffer, for reduce-scatter the full input buffer). Bandwidth is per direction.

References
----------
R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication Operations in
MPICH", IJHPCA 19(1):49-66, 2005. P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms
for clusters of workstations", JPDC 69(2):117-124, 2009. P. Sanders, J. Speck, J. L. Traff,
"Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing 35(12),
2009. nccl-tests doc/PERFORMANCE.md (bus bandwidth); NVIDIA/nccl-tests issue #239 (NVLS volume).

>>> allreduce_ring(500e6, 8, 900e9)   # 8 GPUs, NVLink4 quoted bidirectionally (the lesson's figure)
0.000972...
>>> bytes_per_rank("all_reduce", 14e9, 64) / 1e9   # 7B model, bf16 gradients, 64 GPUs
27.5625

The package follows the seams of the model: :mod:`.rows` (the table and its lookup),
:mod:`._inputs` (input checks), :mod:`.evaluate` (the generic evaluators) and
:mod:`.named` (one function per row). Every public name is importable from here.
"""

from __future__ import annotations

from ..tables import OPS, Op
from ._inputs import FloatOrArray
from .evaluate import (
    algorithm_bandwidth,
    allreduce_lower_bound_bytes,
    allreduce_time,
    bus_bandwidth,
    busbw_factor,
    bytes_per_rank,
    collective_time,
    crossover_bytes,
    latency_steps,
)
from .named import (
    all_gather_recursive_doubling,
    all_gather_ring,
    all_to_all_pairwise,
    allreduce_binomial_tree,
    allreduce_halving_doubling,
    allreduce_naive_all_to_all,
    allreduce_naive_root,
    allreduce_nvls,
    allreduce_recursive_doubling,
    allreduce_ring,
    allreduce_tree,
    broadcast_binomial_tree,
    broadcast_chain,
    reduce_binomial_tree,
    reduce_chain,
    reduce_scatter_halving,
    reduce_scatter_ring,
)
from .rows import (
    ALGORITHMS,
    ALIASES,
    EQUATIONS,
    LINK_HARDWARE_NOTES,
    Algorithm,
    canonical_algorithm,
    link_hardware_note,
)

__all__ = [
    "ALGORITHMS",
    "ALIASES",
    "Algorithm",
    "EQUATIONS",
    "FloatOrArray",
    "LINK_HARDWARE_NOTES",
    "OPS",
    "Op",
    "algorithm_bandwidth",
    "all_gather_recursive_doubling",
    "all_gather_ring",
    "all_to_all_pairwise",
    "canonical_algorithm",
    "allreduce_binomial_tree",
    "allreduce_halving_doubling",
    "allreduce_lower_bound_bytes",
    "allreduce_naive_all_to_all",
    "allreduce_naive_root",
    "allreduce_nvls",
    "allreduce_recursive_doubling",
    "allreduce_ring",
    "allreduce_time",
    "allreduce_tree",
    "broadcast_binomial_tree",
    "broadcast_chain",
    "bus_bandwidth",
    "busbw_factor",
    "bytes_per_rank",
    "collective_time",
    "crossover_bytes",
    "latency_steps",
    "link_hardware_note",
    "reduce_binomial_tree",
    "reduce_chain",
    "reduce_scatter_halving",
    "reduce_scatter_ring",
]
