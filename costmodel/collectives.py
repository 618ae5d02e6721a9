r"""Textbook alpha-beta-gamma cost of every collective and algorithm (DESIGN.md section 3.1).

A message of ``n`` bytes between two ranks costs ``alpha + n * beta``; reducing ``n`` bytes costs
``n * gamma``. Every (op, algorithm) row below is affine in the message size ``M``:

.. math:: t(M, N) = s(N)\,\alpha + c(N)\,M\,\beta + r(N)\,M\,\gamma

with ``s`` the number of sequential latency steps, ``c`` the bytes one rank moves over its
link (per direction, on the critical path) per byte of message, and ``r`` the bytes one rank
reduces on the critical path per byte of message. ``L = ceil(log2 N)``. A single rank (``N = 1``)
communicates nothing and takes no time.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._checks import finite_result
from .tables import BUSBW_FACTOR, OPS, Op

Algorithm = Literal[
    "ring",
    "tree",
    "binomial_tree",
    "recursive_doubling",
    "halving_doubling",
    "nvls",
    "naive_root",
    "naive_all_to_all",
    "halving",
    "chain",
    "pairwise",
]
FloatOrArray = float | np.ndarray


# --- the table: one row per (op, algorithm) ----------------------------------------------------
@dataclass(frozen=True)
class _Row:
    """Coefficients of one affine cost row, each a function of (N, L=ceil(log2 N)) arrays."""

    latency_steps: Callable[[np.ndarray, np.ndarray], np.ndarray]
    bandwidth_factor: Callable[[np.ndarray, np.ndarray], np.ndarray]
    reduction_factor: Callable[[np.ndarray, np.ndarray], np.ndarray]
    equation: str

    @property
    def uses_log(self) -> bool:
        """Whether the row needs L = ceil(log2 N) (computed only then: it costs a pass)."""
        return "L" in self.equation

    def log(self, n: np.ndarray) -> np.ndarray | None:
        return _ceil_log2(n) if self.uses_log else None


def _zero(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return 0.0 * n


def _one(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return 0.0 * n + 1.0


def _n_minus_1(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return n - 1.0


def _frac(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return (n - 1.0) / n


def _log(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return L


_ROWS: dict[str, dict[str, _Row]] = {
    "all_reduce": {
        # Patarasuk & Yuan 2009: reduce-scatter + all-gather on a ring
        "ring": _Row(
            lambda n, L: 2.0 * (n - 1.0),
            lambda n, L: 2.0 * (n - 1.0) / n,
            _frac,
            "2(N-1) a + 2(N-1)/N M b + (N-1)/N M g",
        ),
        # Sanders, Speck & Traff 2009: pipelined double binary tree (NCCL "Tree")
        "tree": _Row(
            lambda n, L: 2.0 * L, lambda n, L: 2.0 + 0.0 * n, _frac, "2L a + 2 M b + (N-1)/N M g"
        ),
        # Thakur et al. 2005: binomial-tree reduce then binomial-tree broadcast
        "binomial_tree": _Row(
            lambda n, L: 2.0 * L, lambda n, L: 2.0 * L, _log, "2L (a + M b) + L M g"
        ),
        # Thakur et al. 2005: recursive doubling, the full vector each round
        "recursive_doubling": _Row(_log, _log, _log, "L (a + M b + M g)"),
        # Thakur et al. 2005 (Rabenseifner): recursive-halving reduce-scatter + doubling all-gather
        "halving_doubling": _Row(
            lambda n, L: 2.0 * L,
            lambda n, L: 2.0 * (n - 1.0) / n,
            _frac,
            "2L a + 2(N-1)/N M b + (N-1)/N M g",
        ),
        # NVLink SHARP: each GPU sends and receives M(1+1/N); the switch reduces (nccl-tests #239)
        "nvls": _Row(_one, lambda n, L: (n + 1.0) / n, _zero, "a + (N+1)/N M b"),
        # reduce to a root, then broadcast from it: the root's link is the bottleneck
        "naive_root": _Row(
            lambda n, L: 2.0 * (n - 1.0),
            lambda n, L: 2.0 * (n - 1.0),
            _n_minus_1,
            "2(N-1)(a + M b) + (N-1) M g",
        ),
        # every rank sends its whole buffer to every other rank and reduces locally
        "naive_all_to_all": _Row(_n_minus_1, _n_minus_1, _n_minus_1, "(N-1)(a + M b) + (N-1) M g"),
    },
    "reduce_scatter": {
        "ring": _Row(_n_minus_1, _frac, _frac, "(N-1) a + (N-1)/N M (b + g)"),
        "halving": _Row(_log, _frac, _frac, "L a + (N-1)/N M (b + g)"),
    },
    "all_gather": {
        "ring": _Row(_n_minus_1, _frac, _zero, "(N-1) a + (N-1)/N M b"),
        "recursive_doubling": _Row(_log, _frac, _zero, "L a + (N-1)/N M b"),
    },
    "broadcast": {
        "chain": _Row(_n_minus_1, _one, _zero, "(N-1) a + M b"),
        "binomial_tree": _Row(_log, _log, _zero, "L (a + M b)"),
    },
    "reduce": {
        "chain": _Row(_n_minus_1, _one, _one, "(N-1) a + M (b + g)"),
        "binomial_tree": _Row(_log, _log, _log, "L (a + M b + M g)"),
    },
    "all_to_all": {
        "pairwise": _Row(_n_minus_1, _frac, _zero, "(N-1) a + (N-1)/N M b"),
    },
}

ALGORITHMS: dict[str, tuple[str, ...]] = {op: tuple(rows) for op, rows in _ROWS.items()}

# accepted alternative names -> canonical name, per op
_ALIASES: dict[str, dict[str, str]] = {
    "all_reduce": {},
    "reduce_scatter": {"pairwise": "ring"},
    "all_gather": {},
    "broadcast": {"ring": "chain"},
    "reduce": {"ring": "chain"},
    "all_to_all": {"ring": "pairwise"},
}

EQUATIONS: dict[tuple[str, str], str] = {
    (op, name): row.equation for op, rows in _ROWS.items() for name, row in rows.items()
}
"""Human-readable equation of every (op, algorithm) row, for docs, the CLI and the app."""


# --- input checking ----------------------------------------------------------------------------
def _first_bad(x: np.ndarray, bad: np.ndarray) -> str:
    if x.ndim == 0:
        return repr(float(x))
    i = int(np.flatnonzero(bad.ravel())[0])
    return f"{float(x.ravel()[i])!r} (element {i} of {x.size})"


def _array(name: str, value: ArrayLike) -> np.ndarray:
    if isinstance(value, bool | np.bool_) or getattr(value, "dtype", None) == np.bool_:
        raise ValueError(f"{name}: expected a number or an array of numbers, got {value!r}")
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: expected a number or an array of numbers, got {value!r}"
        ) from None


def _nonnegative(name: str, value: ArrayLike, unit: str) -> np.ndarray:
    x = _array(name, value)
    ok = (x >= 0.0) & (x < np.inf)  # NaN fails both comparisons
    if not ok.all():
        bad = ~ok
        raise ValueError(f"{name}: must be a finite number >= 0 {unit}, got {_first_bad(x, bad)}")
    return x


def _positive(name: str, value: ArrayLike, unit: str) -> np.ndarray:
    x = _array(name, value)
    ok = (x > 0.0) & (x < np.inf)
    if not ok.all():
        bad = ~ok
        raise ValueError(f"{name}: must be a finite number > 0 {unit}, got {_first_bad(x, bad)}")
    return x


def _ranks(value: ArrayLike, name: str = "ranks") -> np.ndarray:
    n = _array(name, value)
    with np.errstate(invalid="ignore"):
        ok = (n >= 1.0) & (n - np.floor(n) == 0.0)  # NaN and inf (inf - inf = NaN) fail
    if not ok.all():
        bad = ~ok
        raise ValueError(f"{name}: must be a whole number >= 1, got {_first_bad(n, bad)}")
    return n


def _ceil_log2(n: np.ndarray) -> np.ndarray:
    """ceil(log2 n) for whole n >= 1, exactly (frexp gives the binary exponent of n - 1)."""
    return np.frexp(n - 1.0)[1].astype(float)


def _op(op: str) -> str:
    if op not in _ROWS:
        raise ValueError(f"op: unknown collective {op!r}; allowed: {', '.join(OPS)}")
    return op


def _row(op: str, algorithm: str) -> _Row:
    rows = _ROWS[_op(op)]
    name = _ALIASES[op].get(algorithm, algorithm)
    if name not in rows:
        valid = ", ".join([*rows, *_ALIASES[op]])
        raise ValueError(f"algorithm: unknown algorithm {algorithm!r} for {op}; allowed: {valid}")
    return rows[name]


def _zero_for_one_rank(n: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0 where N == 1 (a single rank communicates nothing); the where-pass only when needed."""
    return np.where(n > 1.0, value, 0.0) if (n == 1.0).any() else value


def _out(x: np.ndarray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


def _scalars(*values: object) -> bool:
    """True when every value is a plain Python int or float (the fast scalar path applies)."""
    return all(type(v) is float or type(v) is int for v in values)


def _scalar_log2(n: float) -> float:
    """ceil(log2 n) of a whole float n >= 1, exactly (the scalar twin of :func:`_ceil_log2`)."""
    return float((int(n) - 1).bit_length())


def _row_time_scalar(row: _Row, m: float, n: float, bw: float, a: float, g: float = 0.0) -> float:
    """One row's time for checked Python floats: :func:`collective_time`'s scalar path."""
    if n == 1.0:
        return 0.0
    L = _scalar_log2(n)  # noqa: N806
    return float(
        row.latency_steps(n, L) * a
        + row.bandwidth_factor(n, L) * (m / bw)
        + row.reduction_factor(n, L) * m * g
    )


def _check_scalar(name: str, x: float, unit: str, *, positive: bool = False) -> float:
    ok = math.isfinite(x) and (x > 0.0 if positive else x >= 0.0)
    if not ok:
        rule = "> 0" if positive else ">= 0"
        raise ValueError(f"{name}: must be a finite number {rule} {unit}, got {float(x)!r}")
    return float(x)


def _check_scalar_ranks(n: float, name: str = "ranks") -> float:
    if not (math.isfinite(n) and n >= 1 and n == math.floor(n)):
        raise ValueError(f"{name}: must be a whole number >= 1, got {float(n)!r}")
    return float(n)


# --- the generic evaluators --------------------------------------------------------------------
@finite_result("time")
def collective_time(
    op: Op,
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    algorithm: Algorithm = "ring",
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Time of one collective under the alpha-beta-gamma model [s].

    Parameters
    ----------
    op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"}
    message_bytes : array_like
        Per-rank buffer ``M`` as nccl-tests prints it [B], >= 0.
    ranks : array_like
        Number of ranks ``N`` [-], a whole number >= 1.
    bandwidth_bytes_per_s : array_like
        Per-direction link bandwidth ``B = 1/beta`` [B/s], > 0.
    latency_s : array_like
        Latency per message/step ``alpha`` [s], >= 0.
    algorithm : str
        One of ``ALGORITHMS[op]`` (``"ring"`` is accepted for every op).
    gamma_s_per_byte : array_like
        Reduction cost ``gamma`` [s/B], >= 0.

    Returns
    -------
    float or ndarray
        ``t = s(N) alpha + c(N) M / B + r(N) M gamma`` with the row of the module table;
        0 for ``N = 1``. Arrays broadcast; scalar in gives a float out.

    Notes
    -----
    Rows from Thakur, Rabenseifner & Gropp (2005), Patarasuk & Yuan (2009) and Sanders, Speck &
    Traff (2009); see the module docstring for the table.

    Examples
    --------
    >>> collective_time("all_gather", 1e9, 4, 100e9)          # 3/4 GB at 100 GB/s
    0.0075
    >>> collective_time("broadcast", 1e9, 8, 100e9, algorithm="binomial_tree")   # 3 hops of 10 ms
    0.03
    """
    row = _row(op, algorithm)
    if _scalars(message_bytes, ranks, bandwidth_bytes_per_s, latency_s, gamma_s_per_byte):
        # fast path for Python scalars: the same row, evaluated with floats (no array overhead)
        m = _check_scalar("message_bytes", message_bytes, "B")
        n = _check_scalar_ranks(ranks)
        bw = _check_scalar("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "B/s", positive=True)
        a = _check_scalar("latency_s", latency_s, "s")
        g = _check_scalar("gamma_s_per_byte", gamma_s_per_byte, "s/B")
        return _row_time_scalar(row, m, n, bw, a, g)
    m = _nonnegative("message_bytes", message_bytes, "B")
    n = _ranks(ranks)
    bw = _positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "B/s")
    a = _nonnegative("latency_s", latency_s, "s")
    g = _nonnegative("gamma_s_per_byte", gamma_s_per_byte, "s/B")
    L = row.log(n)  # noqa: N806
    t = row.latency_steps(n, L) * a + row.bandwidth_factor(n, L) * (m / bw)
    if np.any(g):
        t = t + row.reduction_factor(n, L) * m * g
    return _out(_zero_for_one_rank(n, t))


def allreduce_time(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    algorithm: Algorithm = "ring",
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""All-reduce time under the alpha-beta-gamma model [s]; ``collective_time("all_reduce", ...)``.

    Ring: :math:`t = 2(N-1)\alpha + 2\frac{N-1}{N} M/B + \frac{N-1}{N} M\gamma`
    (Patarasuk & Yuan 2009); other algorithms in the module table.

    >>> round(allreduce_time(14e9, 64, 50e9), 3)   # the lesson's 7B model over NDR: 0.55 s
    0.551
    >>> allreduce_time(1e6, 512, 50e9, 5e-6, algorithm="tree") < allreduce_time(1e6, 512, 50e9, 5e-6)
    True
    """
    return collective_time(
        "all_reduce",
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        algorithm,
        gamma_s_per_byte,
    )


@finite_result("byte count")
def bytes_per_rank(
    op: Op, message_bytes: ArrayLike, ranks: ArrayLike, algorithm: Algorithm = "ring"
) -> FloatOrArray:
    r"""Bytes one rank sends over its link on the critical path [B]: ``c(N) * M``.

    For the symmetric algorithms (ring, halving-doubling, recursive doubling, pairwise, naive
    all-to-all) this is what every rank sends. For rooted ones it is the bottleneck rank's
    traffic taken in sequence: the root of ``naive_root`` receives ``(N-1) M`` and then sends
    ``(N-1) M``; a binomial tree's root moves ``M`` per level. So ``time = latency term +
    bytes_per_rank / B + reduction term``.

    >>> bytes_per_rank("all_reduce", 1.0, 8), bytes_per_rank("all_reduce", 1.0, 512)
    (1.75, 1.99609375)
    >>> bytes_per_rank("all_reduce", 500e6, 8) / 1e6   # the lesson's 875 MB per GPU
    875.0
    """
    row = _row(op, algorithm)
    if _scalars(message_bytes, ranks):
        m = _check_scalar("message_bytes", message_bytes, "B")
        n = _check_scalar_ranks(ranks)
        return 0.0 if n == 1.0 else float(row.bandwidth_factor(n, _scalar_log2(n)) * m)
    m = _nonnegative("message_bytes", message_bytes, "B")
    n = _ranks(ranks)
    return _out(_zero_for_one_rank(n, row.bandwidth_factor(n, row.log(n)) * m))


def latency_steps(op: Op, ranks: ArrayLike, algorithm: Algorithm = "ring") -> FloatOrArray:
    r"""Number of sequential latency terms ``s(N)`` of a row [-] (0 for ``N = 1``).

    >>> latency_steps("all_reduce", 512) / latency_steps("all_reduce", 8)   # ring: 2(N-1)
    73.0
    >>> latency_steps("all_reduce", 512, "tree")   # 2 ceil(log2 512)
    18.0
    """
    row = _row(op, algorithm)
    if _scalars(ranks):
        n = _check_scalar_ranks(ranks)
        return 0.0 if n == 1.0 else float(row.latency_steps(n, _scalar_log2(n)))
    n = _ranks(ranks)
    return _out(_zero_for_one_rank(n, row.latency_steps(n, row.log(n))))


@finite_result("factor")
def busbw_factor(op: Op, ranks: ArrayLike) -> FloatOrArray:
    r"""nccl-tests bus-bandwidth factor: busbw = algbw x factor [-].

    all-reduce :math:`2(N-1)/N`; reduce-scatter, all-gather, all-to-all :math:`(N-1)/N`;
    broadcast, reduce 1 (nccl-tests doc/PERFORMANCE.md; ``tables.BUSBW_FACTOR``).

    >>> busbw_factor("all_reduce", 8), busbw_factor("broadcast", 8)
    (1.75, 1.0)
    """
    factor = BUSBW_FACTOR[_op(op)]
    if _scalars(ranks):
        return float(factor(_check_scalar_ranks(ranks)))
    n = _ranks(ranks)
    return _out(np.asarray(factor(n), dtype=float) + np.zeros_like(n))


@finite_result("algorithm bandwidth")
def algorithm_bandwidth(message_bytes: ArrayLike, time_s: ArrayLike) -> FloatOrArray:
    r"""Algorithm bandwidth ``algbw = M / t`` [B/s] (nccl-tests doc/PERFORMANCE.md).

    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    if _scalars(message_bytes, time_s):
        m = _check_scalar("message_bytes", message_bytes, "B")
        return m / _check_scalar("time_s", time_s, "s", positive=True)
    m = _nonnegative("message_bytes", message_bytes, "B")
    t = _positive("time_s", time_s, "s")
    return _out(m / t)


@finite_result("bus bandwidth")
def bus_bandwidth(
    op: Op, message_bytes: ArrayLike, ranks: ArrayLike, time_s: ArrayLike
) -> FloatOrArray:
    r"""Bus bandwidth ``busbw = M / t x factor(op, N)`` [B/s] (nccl-tests doc/PERFORMANCE.md).

    For a latency-free ring all-reduce it equals the link bandwidth, whatever ``N``.

    >>> bus_bandwidth("all_reduce", 500e6, 8, allreduce_ring(500e6, 8, 900e9)) / 1e9
    900.0...
    """
    factor = busbw_factor(op, ranks)
    if _scalars(message_bytes, ranks, time_s):
        return algorithm_bandwidth(message_bytes, time_s) * factor
    return _out(np.asarray(algorithm_bandwidth(message_bytes, time_s)) * factor)


@finite_result("byte count")
def allreduce_lower_bound_bytes(message_bytes: ArrayLike, ranks: ArrayLike) -> FloatOrArray:
    r"""Lower bound on the bytes each rank must send in an all-reduce [B]: :math:`2\frac{N-1}{N}M`.

    Every rank must receive ``(N-1)/N M`` bytes of data it does not have and send as much
    (Patarasuk & Yuan 2009, Theorem 1); the ring meets the bound.

    >>> allreduce_lower_bound_bytes(14e9, 64) / 1e9
    27.5625
    """
    if _scalars(message_bytes, ranks):
        m = _check_scalar("message_bytes", message_bytes, "B")
        n = _check_scalar_ranks(ranks)
        return 2.0 * (n - 1.0) / n * m
    m = _nonnegative("message_bytes", message_bytes, "B")
    n = _ranks(ranks)
    return _out(2.0 * (n - 1.0) / n * m)


def crossover_bytes(
    algorithm_a: Algorithm,
    algorithm_b: Algorithm,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike,
    op: Op = "all_reduce",
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Message size at which two algorithms take the same time [B]; ``inf`` where none exists.

    Every row is affine in ``M``: :math:`t_x = A_x + K_x M` with :math:`A_x = s_x(N)\alpha` and
    :math:`K_x = c_x(N)/B + r_x(N)\gamma`, so the crossover has the closed form

    .. math:: M^* = \frac{A_a - A_b}{K_b - K_a}

    and no numeric solve is needed. Below ``M*`` the algorithm with the smaller latency term is
    faster, above it the one with the smaller per-byte term. Returns ``numpy.inf`` (documented,
    never NaN) when the lines do not cross at a positive size: equal per-byte terms, one
    algorithm never slower (e.g. zero latency), or ``N = 1``.

    >>> m = crossover_bytes("ring", "tree", 64, 50e9, 5e-6)   # (N-1-L) a N B = 57 x 5us x 64 x 50 GB/s
    >>> round(m / 1e6, 1)
    912.0
    >>> crossover_bytes("ring", "tree", 64, 50e9, 0.0)
    inf
    """
    row_a, row_b = _row(op, algorithm_a), _row(op, algorithm_b)
    if _scalars(ranks, bandwidth_bytes_per_s, latency_s, gamma_s_per_byte):
        return _crossover_scalar(
            row_a, row_b, ranks, bandwidth_bytes_per_s, latency_s, gamma_s_per_byte
        )
    n = _ranks(ranks)
    bw = _positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "B/s")
    a = _nonnegative("latency_s", latency_s, "s")
    g = _nonnegative("gamma_s_per_byte", gamma_s_per_byte, "s/B")
    L = _ceil_log2(n)  # noqa: N806
    fixed_a, fixed_b = row_a.latency_steps(n, L) * a, row_b.latency_steps(n, L) * a
    slope_a = row_a.bandwidth_factor(n, L) / bw + row_a.reduction_factor(n, L) * g
    slope_b = row_b.bandwidth_factor(n, L) / bw + row_b.reduction_factor(n, L) * g
    for name, terms, value in (
        ("latency_s", (fixed_a, fixed_b), latency_s),
        ("bandwidth_bytes_per_s", (slope_a, slope_b), bandwidth_bytes_per_s),
    ):
        if not all(np.isfinite(t).all() for t in terms):
            raise ValueError(
                f"{name}: the crossover is not finite (overflow) with {name}={value!r}, "
                f"ranks={ranks!r}; allowed: values that keep both times finite"
            )
    num, den = fixed_a - fixed_b, slope_b - slope_a
    with np.errstate(divide="ignore", invalid="ignore"):
        m = num / den
    ok = (den != 0.0) & (m > 0.0) & np.isfinite(m) & (n > 1.0)
    return _out(np.where(ok, m, np.inf))


def _crossover_scalar(
    row_a: _Row, row_b: _Row, ranks: float, bandwidth: float, latency: float, gamma: float
) -> float:
    """:func:`crossover_bytes` for Python scalars: the same expressions on floats."""
    n = _check_scalar_ranks(ranks)
    bw = _check_scalar("bandwidth_bytes_per_s", bandwidth, "B/s", positive=True)
    a = _check_scalar("latency_s", latency, "s")
    g = _check_scalar("gamma_s_per_byte", gamma, "s/B")
    L = _scalar_log2(n)  # noqa: N806
    fixed_a, fixed_b = row_a.latency_steps(n, L) * a, row_b.latency_steps(n, L) * a
    slope_a = row_a.bandwidth_factor(n, L) / bw + row_a.reduction_factor(n, L) * g
    slope_b = row_b.bandwidth_factor(n, L) / bw + row_b.reduction_factor(n, L) * g
    num, den = fixed_a - fixed_b, slope_b - slope_a
    if den == 0.0 or n <= 1.0:
        return math.inf
    m = num / den
    return float(m) if (m > 0.0 and math.isfinite(m)) else math.inf


# --- one named function per row (STYLE: the module names the quantity, the function the model) --
def allreduce_ring(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Ring all-reduce [s]: :math:`2(N-1)\alpha + 2\frac{N-1}{N}M\beta + \frac{N-1}{N}M\gamma`.

    Reduce-scatter then all-gather around a ring (Patarasuk & Yuan 2009).

    >>> allreduce_ring(500e6, 8, 900e9)   # 8 GPUs, NVLink4 quoted bidirectionally
    0.000972...
    >>> allreduce_ring(500e6, 8, 50e9)    # the same over NDR InfiniBand: 17.5 ms
    0.0175
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "ring", gamma_s_per_byte
    )


def allreduce_tree(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Pipelined double-binary-tree all-reduce [s]: :math:`2L\alpha + 2M\beta + \frac{N-1}{N}M\gamma`.

    Two complementary binary trees, each carrying half the data, pipelined (Sanders, Speck &
    Traff 2009; NCCL "Tree"). ``L = ceil(log2 N)``.

    >>> allreduce_tree(1e9, 16, 100e9, 1e-5)   # 8 x 10 us + 2 x 10 ms
    0.02008
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "tree", gamma_s_per_byte
    )


def allreduce_binomial_tree(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Binomial-tree reduce then broadcast [s]: :math:`2L(\alpha + M\beta) + LM\gamma`.

    Thakur, Rabenseifner & Gropp (2005), section 4.

    >>> allreduce_binomial_tree(1e9, 8, 100e9)   # 2 x 3 rounds of 10 ms
    0.06
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "binomial_tree", gamma_s_per_byte
    )


def allreduce_recursive_doubling(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Recursive-doubling all-reduce [s]: :math:`L(\alpha + M\beta + M\gamma)`.

    Exchange the full vector with a partner at distance 1, 2, 4, ... (Thakur et al. 2005).

    >>> allreduce_recursive_doubling(1e9, 8, 100e9)   # 3 rounds of 10 ms
    0.03
    """
    return allreduce_time(
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        "recursive_doubling",
        gamma_s_per_byte,
    )


def allreduce_halving_doubling(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Rabenseifner all-reduce [s]: :math:`2L\alpha + 2\frac{N-1}{N}M\beta + \frac{N-1}{N}M\gamma`.

    Recursive-halving reduce-scatter then recursive-doubling all-gather (Thakur et al. 2005).

    >>> allreduce_halving_doubling(1e9, 8, 100e9, 1e-5)   # 6 x 10 us + 1.75 x 10 ms
    0.01756
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "halving_doubling", gamma_s_per_byte
    )


def allreduce_nvls(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""In-switch (NVLink SHARP) all-reduce [s]: :math:`\alpha + \frac{N+1}{N}M\beta`.

    Each GPU sends and receives ``M(1 + 1/N)``; the switch does the reduction, so ``gamma`` does
    not enter (NVIDIA/nccl-tests issue #239: for NVLS, algbw = busbw x n/(n+1)).

    >>> allreduce_nvls(1e9, 8, 450e9) * 1e3   # 9/8 GB at 450 GB/s, in ms
    2.5
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "nvls", gamma_s_per_byte
    )


def allreduce_naive_root(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Reduce to a root, then broadcast from it [s]: :math:`2(N-1)(\alpha + M\beta) + (N-1)M\gamma`.

    The root's one link carries ``(N-1) M`` in and then ``(N-1) M`` out.

    >>> allreduce_naive_root(1e9, 8, 100e9)   # 14 GB through one link at 100 GB/s
    0.14
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "naive_root", gamma_s_per_byte
    )


def allreduce_naive_all_to_all(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Every rank sends its whole buffer to every rank [s]: :math:`(N-1)(\alpha + M\beta) + (N-1)M\gamma`.

    >>> allreduce_naive_all_to_all(1e9, 8, 100e9)   # 7 GB per rank at 100 GB/s
    0.07
    """
    return allreduce_time(
        message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "naive_all_to_all", gamma_s_per_byte
    )


def reduce_scatter_ring(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Ring (pairwise) reduce-scatter [s]: :math:`(N-1)\alpha + \frac{N-1}{N}M(\beta + \gamma)`.

    ``M`` is the full input buffer (nccl-tests' size column). Thakur et al. (2005).

    >>> reduce_scatter_ring(1e9, 8, 100e9)
    0.00875
    """
    return collective_time(
        "reduce_scatter",
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        "ring",
        gamma_s_per_byte,
    )


def reduce_scatter_halving(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Recursive-halving reduce-scatter [s]: :math:`L\alpha + \frac{N-1}{N}M(\beta + \gamma)`.

    Thakur et al. (2005).

    >>> reduce_scatter_halving(1e9, 8, 100e9, 1e-5)   # 3 x 10 us + 8.75 ms
    0.00878
    """
    return collective_time(
        "reduce_scatter",
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        "halving",
        gamma_s_per_byte,
    )


def all_gather_ring(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Ring all-gather [s]: :math:`(N-1)\alpha + \frac{N-1}{N}M\beta`.

    ``M`` is the full output buffer (nccl-tests' size column). Thakur et al. (2005).

    >>> all_gather_ring(1e9, 8, 100e9, 1e-5)   # 7 x 10 us + 8.75 ms
    0.00882
    """
    return collective_time(
        "all_gather", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "ring"
    )


def all_gather_recursive_doubling(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Recursive-doubling all-gather [s]: :math:`L\alpha + \frac{N-1}{N}M\beta`.

    Thakur et al. (2005).

    >>> all_gather_recursive_doubling(1e9, 8, 100e9, 1e-5)   # 3 x 10 us + 8.75 ms
    0.00878
    """
    return collective_time(
        "all_gather", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "recursive_doubling"
    )


def broadcast_chain(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Pipelined chain broadcast [s]: :math:`(N-1)\alpha + M\beta`.

    The message is cut into small pieces that flow down a chain of ranks (NCCL's ring broadcast).

    >>> broadcast_chain(1e9, 8, 100e9, 1e-5)   # 7 x 10 us + 10 ms
    0.01007
    """
    return collective_time(
        "broadcast", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "chain"
    )


def broadcast_binomial_tree(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Binomial-tree broadcast [s]: :math:`L(\alpha + M\beta)`.

    Thakur et al. (2005).

    >>> broadcast_binomial_tree(1e9, 8, 100e9)
    0.03
    """
    return collective_time(
        "broadcast", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "binomial_tree"
    )


def reduce_chain(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Pipelined chain reduce [s]: :math:`(N-1)\alpha + M(\beta + \gamma)`.

    >>> reduce_chain(1e9, 8, 100e9, 1e-5)
    0.01007
    """
    return collective_time(
        "reduce", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "chain", gamma_s_per_byte
    )


def reduce_binomial_tree(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    gamma_s_per_byte: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Binomial-tree reduce [s]: :math:`L(\alpha + M\beta + M\gamma)`.

    Thakur et al. (2005).

    >>> reduce_binomial_tree(1e9, 8, 100e9)
    0.03
    """
    return collective_time(
        "reduce",
        message_bytes,
        ranks,
        bandwidth_bytes_per_s,
        latency_s,
        "binomial_tree",
        gamma_s_per_byte,
    )


def all_to_all_pairwise(
    message_bytes: ArrayLike,
    ranks: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
) -> FloatOrArray:
    r"""Pairwise-exchange all-to-all [s]: :math:`(N-1)\alpha + \frac{N-1}{N}M\beta`.

    In step ``k`` rank ``r`` sends its chunk for rank ``r+k`` (Thakur et al. 2005).

    >>> all_to_all_pairwise(1e9, 8, 100e9)
    0.00875
    """
    return collective_time(
        "all_to_all", message_bytes, ranks, bandwidth_bytes_per_s, latency_s, "pairwise"
    )
