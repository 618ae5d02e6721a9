"""The generic evaluators over the table: time, bytes per rank, latency steps,
bus and algorithm bandwidth, the all-reduce lower bound and crossover sizes."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._checks import finite_result, named_shapes
from ..tables import BUSBW_FACTOR, Op
from ._inputs import (
    FloatOrArray,
    _check_scalar,
    _check_scalar_gamma,
    _check_scalar_limited,
    _check_scalar_ranks,
    _gamma,
    _limited,
    _out,
    _positive,
    _ranks,
    _scalars,
    _zero_for_nothing_sent,
    _zero_for_one_rank,
)
from .rows import Algorithm, _ceil_log2, _op, _Row, _row, _row_time_scalar, _scalar_log2


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
        Per-rank buffer ``M`` as nccl-tests prints it [B], 0..2**44 (16 TiB).
    ranks : array_like
        Number of ranks ``N`` [-], a whole number in 1..1e9.
    bandwidth_bytes_per_s : array_like
        Per-direction link bandwidth ``B = 1/beta`` [B/s], 1e6..1e15 (1 MB/s..1 PB/s).
    latency_s : array_like
        Latency per message/step ``alpha`` [s], 0..1.

    Every argument is held to the range every command and ``cm.sweep`` hold it to
    (:mod:`costmodel._limits`), element-wise for arrays: a bandwidth typed in GB/s (``50``) or
    a latency typed in us (``5``) is refused naming it, not priced.
    algorithm : str
        One of ``ALGORITHMS[op]`` (``"ring"`` is accepted for every op).
    gamma_s_per_byte : array_like
        Reduction cost ``gamma`` [s/B], in 0..1e-6 (``_limits.LIMITS["gamma"]``: a reduction
        at 1 MB/s or faster, the range of ``collective --gamma`` and the sweep's ``gamma``).

    Returns
    -------
    float or ndarray
        ``t = s(N) alpha + c(N) M / B + r(N) M gamma`` with the row of the module table;
        0 for ``N = 1`` and 0 for ``M = 0`` (an empty message is not sent, so it pays no
        latency either: NCCL discards an empty collective, and ``predict_collective`` says
        0 s for 0 B), element-wise for arrays. Arrays broadcast; scalar in gives a float out.

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
    >>> collective_time("all_gather", [0.0, 1e9], 4, 100e9, 1e-5)   # 0 B: nothing sent, 0 s
    array([0.     , 0.00753])
    """
    row = _row(op, algorithm)
    scalars = _scalars(message_bytes, ranks, bandwidth_bytes_per_s, latency_s, gamma_s_per_byte)
    if scalars is not None:
        # fast path for Python scalars: the same row, evaluated with floats (no array overhead)
        m_s, n_s, bw_s, a_s, g_s = scalars
        return _row_time_scalar(
            row,
            _check_scalar_limited("message_bytes", m_s, "message"),
            _check_scalar_ranks(n_s),
            _check_scalar_limited("bandwidth_bytes_per_s", bw_s, "bandwidth"),
            _check_scalar_limited("latency_s", a_s, "latency"),
            _check_scalar_gamma(g_s),
        )
    m = _limited("message_bytes", message_bytes, "message")
    n = _ranks(ranks)
    bw = _limited("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "bandwidth")
    a = _limited("latency_s", latency_s, "latency")
    g = _gamma(gamma_s_per_byte)
    L = row.log(n)  # noqa: N806
    # the inputs are checked finite, so an inf here is an overflow (1e9 B / 1e-300 B/s) that
    # @finite_result refuses naming the input, as the scalar path's; and a NaN only inf x 0 of
    # one rank's zero factors after one (replaced by one rank's 0 s) or refused the same way:
    # numpy's RuntimeWarning is not printed beside the one clear error
    with np.errstate(over="ignore", invalid="ignore"):
        t: np.ndarray = row.latency_steps(n, L) * a + row.bandwidth_factor(n, L) * (m / bw)
        if np.any(g):
            t = t + row.reduction_factor(n, L) * m * g
    return _out(_zero_for_nothing_sent(n, m, t))


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
    (Patarasuk & Yuan 2009); other algorithms in the module table. 0 s for one rank or a
    0-byte message (no latency term either), element-wise for arrays.

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
    bytes_per_rank / B + reduction term``. ``c(N)`` per algorithm: Thakur, Rabenseifner & Gropp
    2005; the ring's ``2(N-1)/N``: Patarasuk & Yuan 2009 (module docstring).

    >>> bytes_per_rank("all_reduce", 1.0, 8), bytes_per_rank("all_reduce", 1.0, 512)
    (1.75, 1.99609375)
    >>> bytes_per_rank("all_reduce", 500e6, 8) / 1e6   # the lesson's 875 MB per GPU
    875.0
    """
    row = _row(op, algorithm)
    scalars = _scalars(message_bytes, ranks)
    if scalars is not None:
        m_s = _check_scalar_limited("message_bytes", scalars[0], "message")
        n_s = _check_scalar_ranks(scalars[1])
        return 0.0 if n_s == 1.0 else float(row.bandwidth_factor(n_s, _scalar_log2(n_s)) * m_s)
    m = _limited("message_bytes", message_bytes, "message")
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
    scalars = _scalars(ranks)
    if scalars is not None:
        n_s = _check_scalar_ranks(scalars[0])
        return 0.0 if n_s == 1.0 else float(row.latency_steps(n_s, _scalar_log2(n_s)))
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
    scalars = _scalars(ranks)
    if scalars is not None:
        return float(factor(_check_scalar_ranks(scalars[0])))
    n = _ranks(ranks)
    return _out(np.asarray(factor(n), dtype=float) + np.zeros_like(n))


@finite_result("algorithm bandwidth")
def algorithm_bandwidth(message_bytes: ArrayLike, time_s: ArrayLike) -> FloatOrArray:
    r"""Algorithm bandwidth ``algbw = M / t`` [B/s] (nccl-tests doc/PERFORMANCE.md).

    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    scalars = _scalars(message_bytes, time_s)
    if scalars is not None:
        m_s = _check_scalar_limited("message_bytes", scalars[0], "message")
        return m_s / _check_scalar("time_s", scalars[1], "s", positive=True)
    m = _limited("message_bytes", message_bytes, "message")
    t = _positive("time_s", time_s, "s")
    return _out(m / t)


@finite_result("bus bandwidth")
def bus_bandwidth(
    op: Op, message_bytes: ArrayLike, ranks: ArrayLike, time_s: ArrayLike
) -> FloatOrArray:
    r"""Bus bandwidth ``busbw = M / t x factor(op, N)`` [B/s] (nccl-tests doc/PERFORMANCE.md).

    For a latency-free ring all-reduce it equals the link bandwidth, whatever ``N``.

    >>> from costmodel.collectives import allreduce_ring
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
    scalars = _scalars(message_bytes, ranks)
    if scalars is not None:
        m_s = _check_scalar_limited("message_bytes", scalars[0], "message")
        n_s = _check_scalar_ranks(scalars[1])
        return 2.0 * (n_s - 1.0) / n_s * m_s
    m = _limited("message_bytes", message_bytes, "message")
    n = _ranks(ranks)
    return _out(2.0 * (n - 1.0) / n * m)


def _named_row(op: str, algorithm: str, name: str) -> _Row:
    """:func:`_row`, its refusal naming the argument ``name`` (``algorithm_b: unknown algorithm
    'tree' for reduce_scatter; ...``), not ``algorithm``, which crossover_bytes has none of."""
    try:
        return _row(op, algorithm)
    except ValueError as err:
        text = str(err)
        if not text.startswith("algorithm: "):
            raise
        raise ValueError(f"{name}: {text.removeprefix('algorithm: ')}") from None


@named_shapes
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
    algorithm never slower (e.g. zero latency), or ``N = 1``. The rows are the alpha-beta-gamma
    costs of Thakur, Rabenseifner & Gropp 2005 (module docstring).

    >>> m = crossover_bytes("ring", "tree", 64, 50e9, 5e-6)   # (N-1-L) a N B = 57 x 5us x 64 x 50 GB/s
    >>> round(m / 1e6, 1)
    912.0
    >>> crossover_bytes("ring", "tree", 64, 50e9, 0.0)
    inf
    """
    row_a, row_b = (
        _named_row(op, algorithm_a, "algorithm_a"),
        _named_row(op, algorithm_b, "algorithm_b"),
    )
    scalars = _scalars(ranks, bandwidth_bytes_per_s, latency_s, gamma_s_per_byte)
    if scalars is not None:
        n_s, bw_s, a_s, g_s = scalars
        return _crossover_scalar(row_a, row_b, n_s, bw_s, a_s, g_s)
    n = _ranks(ranks)
    bw = _limited("bandwidth_bytes_per_s", bandwidth_bytes_per_s, "bandwidth")
    a = _limited("latency_s", latency_s, "latency")
    g = _gamma(gamma_s_per_byte)
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
                f"{name}: the crossover is not finite (overflow) with {name} {value!r} and "
                f"`ranks` {ranks!r}; allowed: values that keep both times finite"
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
    bw = _check_scalar_limited("bandwidth_bytes_per_s", bandwidth, "bandwidth")
    a = _check_scalar_limited("latency_s", latency, "latency")
    g = _check_scalar_gamma(gamma)
    L = _scalar_log2(n)  # noqa: N806
    fixed_a, fixed_b = row_a.latency_steps(n, L) * a, row_b.latency_steps(n, L) * a
    slope_a = row_a.bandwidth_factor(n, L) / bw + row_a.reduction_factor(n, L) * g
    slope_b = row_b.bandwidth_factor(n, L) / bw + row_b.reduction_factor(n, L) * g
    num, den = fixed_a - fixed_b, slope_b - slope_a
    if den == 0.0 or n <= 1.0:
        return math.inf
    m = num / den
    return float(m) if (m > 0.0 and math.isfinite(m)) else math.inf
