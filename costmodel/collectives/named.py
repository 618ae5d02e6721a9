"""One named function per row (``allreduce_ring``, ...): ``collective_time`` with the
op and algorithm fixed (STYLE: the module names the quantity, the function the model)."""

from __future__ import annotations

from numpy.typing import ArrayLike

from ._inputs import FloatOrArray
from .evaluate import allreduce_time, collective_time


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
