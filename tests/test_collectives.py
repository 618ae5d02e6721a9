"""Tests of costmodel.collectives: every DESIGN.md 3.1 row, the bandwidth helpers, the crossover,
bad input, and hypothesis properties of the model.

Expected values are computed here independently from the DESIGN.md 3.1 table with ``math``
(scalar, one row at a time), never from the module's own coefficient table.
"""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from costmodel import collectives as c
from tests._paths import NCCL_TESTS

REL = 1e-12  # float64 evaluation of the same closed forms: only rounding separates them


def log2ceil(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


# DESIGN.md 3.1, transcribed row by row: (op, algorithm) -> t(M, N, a, b=1/B, g)
def _design(op, alg, m, n, a, b, g):
    L = log2ceil(n)  # noqa: N806
    f = (n - 1) / n
    return {
        ("all_reduce", "ring"): 2 * (n - 1) * a + 2 * f * m * b + f * m * g,
        ("all_reduce", "tree"): 2 * L * a + 2 * m * b + f * m * g,
        ("all_reduce", "binomial_tree"): 2 * L * (a + m * b) + L * m * g,
        ("all_reduce", "recursive_doubling"): L * (a + m * b + m * g),
        ("all_reduce", "halving_doubling"): 2 * L * a + 2 * f * m * b + f * m * g,
        ("all_reduce", "nvls"): a + (n + 1) / n * m * b,
        ("all_reduce", "naive_root"): 2 * (n - 1) * (a + m * b) + (n - 1) * m * g,
        ("all_reduce", "naive_all_to_all"): (n - 1) * (a + m * b) + (n - 1) * m * g,
        ("reduce_scatter", "ring"): (n - 1) * a + f * m * (b + g),
        ("reduce_scatter", "halving"): L * a + f * m * (b + g),
        ("all_gather", "ring"): (n - 1) * a + f * m * b,
        ("all_gather", "recursive_doubling"): L * a + f * m * b,
        ("broadcast", "chain"): (n - 1) * a + m * b,
        ("broadcast", "binomial_tree"): L * (a + m * b),
        ("reduce", "chain"): (n - 1) * a + m * (b + g),
        ("reduce", "binomial_tree"): L * (a + m * b + m * g),
        ("all_to_all", "pairwise"): (n - 1) * a + f * m * b,
    }[(op, alg)]


ROWS = [(op, alg) for op in c.OPS for alg in c.ALGORITHMS[op]]
NAMED = {
    ("all_reduce", "ring"): c.allreduce_ring,
    ("all_reduce", "tree"): c.allreduce_tree,
    ("all_reduce", "binomial_tree"): c.allreduce_binomial_tree,
    ("all_reduce", "recursive_doubling"): c.allreduce_recursive_doubling,
    ("all_reduce", "halving_doubling"): c.allreduce_halving_doubling,
    ("all_reduce", "nvls"): c.allreduce_nvls,
    ("all_reduce", "naive_root"): c.allreduce_naive_root,
    ("all_reduce", "naive_all_to_all"): c.allreduce_naive_all_to_all,
    ("reduce_scatter", "ring"): c.reduce_scatter_ring,
    ("reduce_scatter", "halving"): c.reduce_scatter_halving,
    ("all_gather", "ring"): c.all_gather_ring,
    ("all_gather", "recursive_doubling"): c.all_gather_recursive_doubling,
    ("broadcast", "chain"): c.broadcast_chain,
    ("broadcast", "binomial_tree"): c.broadcast_binomial_tree,
    ("reduce", "chain"): c.reduce_chain,
    ("reduce", "binomial_tree"): c.reduce_binomial_tree,
    ("all_to_all", "pairwise"): c.all_to_all_pairwise,
}
GAMMA_ENTERS = {op for op in ("all_reduce", "reduce_scatter", "reduce")}


def test_names_match_the_contract():
    assert c.OPS == (
        "all_reduce",
        "reduce_scatter",
        "all_gather",
        "broadcast",
        "reduce",
        "all_to_all",
    )
    assert c.ALGORITHMS == {
        "all_reduce": (
            "ring",
            "tree",
            "binomial_tree",
            "recursive_doubling",
            "halving_doubling",
            "nvls",
            "naive_root",
            "naive_all_to_all",
        ),
        "reduce_scatter": ("ring", "halving"),
        "all_gather": ("ring", "recursive_doubling"),
        "broadcast": ("chain", "binomial_tree"),
        "reduce": ("chain", "binomial_tree"),
        "all_to_all": ("pairwise",),
    }
    assert set(NAMED) == set(ROWS)


@pytest.mark.parametrize(("op", "alg"), ROWS)
@pytest.mark.parametrize("n", [2, 3, 6, 8, 13, 64, 1000])
def test_every_row_matches_design_table(op, alg, n):
    m, bw, a, g = 3.7e8, 123e9, 4.2e-6, 1.3e-12
    want = _design(op, alg, m, n, a, 1 / bw, g)
    got = c.collective_time(op, m, n, bw, a, alg, g)
    assert isinstance(got, float)
    assert got == pytest.approx(want, rel=REL)
    fn = NAMED[(op, alg)]
    kw = {"gamma_s_per_byte": g} if op in GAMMA_ENTERS else {}
    assert fn(m, n, bw, a, **kw) == pytest.approx(want, rel=REL)  # g does not enter the others


@pytest.mark.parametrize(("op", "alg"), ROWS)
def test_bytes_per_rank_is_the_bandwidth_term(op, alg):
    m, n, bw = 1e9, 12, 80e9
    t = c.collective_time(op, m, n, bw, 0.0, alg)
    assert c.bytes_per_rank(op, m, n, alg) / bw == pytest.approx(t, rel=REL)
    # the latency term: the time with alpha less the time without (of a sent message: 0 B is 0 s)
    with_a = c.collective_time(op, m, n, bw, 1e-3, alg)
    assert c.latency_steps(op, n, alg) * 1e-3 == pytest.approx(with_a - t, rel=1e-9)


@pytest.mark.parametrize(("op", "alg"), ROWS)
def test_one_rank_communicates_nothing(op, alg):
    assert c.collective_time(op, 1e9, 1, 1e9, 1e-3, alg, 1e-9) == 0.0
    assert c.bytes_per_rank(op, 1e9, 1, alg) == 0.0


def test_ring_aliases():
    for op, ringlike in [("broadcast", "chain"), ("reduce", "chain"), ("all_to_all", "pairwise")]:
        assert c.collective_time(op, 1e9, 8, 1e10, 1e-5, "ring") == c.collective_time(
            op, 1e9, 8, 1e10, 1e-5, ringlike
        )
    assert c.collective_time(
        "reduce_scatter", 1e9, 8, 1e10, 1e-5, "pairwise"
    ) == c.reduce_scatter_ring(1e9, 8, 1e10, 1e-5)
    # the default algorithm is valid for every op
    for op in c.OPS:
        assert c.collective_time(op, 1e9, 8, 1e10) > 0


def test_allreduce_is_reduce_scatter_plus_all_gather():
    """Lesson section 4: All-Reduce = Reduce-Scatter + All-Gather, for the ring and Rabenseifner."""
    m, bw, a, g = np.array([1e3, 1e6, 1e9]), 50e9, 3e-6, 2e-12
    for n in (2, 5, 8, 100):
        ar = c.allreduce_time(m, n, bw, a, "ring", g)
        rs = c.collective_time("reduce_scatter", m, n, bw, a, "ring", g)
        ag = c.collective_time("all_gather", m, n, bw, a, "ring")
        np.testing.assert_allclose(ar, rs + ag, rtol=REL)
        hd = c.allreduce_time(m, n, bw, a, "halving_doubling", g)
        np.testing.assert_allclose(
            hd,
            c.collective_time("reduce_scatter", m, n, bw, a, "halving", g)
            + c.collective_time("all_gather", m, n, bw, a, "recursive_doubling"),
            rtol=REL,
        )


def test_vectorized_broadcasting_and_scalar_out():
    m = np.logspace(3, 10, 8)
    n = np.array([[2], [8], [512]])
    t = c.allreduce_time(m, n, 50e9, 5e-6)
    assert t.shape == (3, 8)
    for i, ni in enumerate([2, 8, 512]):
        for j, mj in enumerate(m):
            assert t[i, j] == pytest.approx(
                _design("all_reduce", "ring", mj, ni, 5e-6, 1 / 50e9, 0), rel=REL
            )
    assert isinstance(c.allreduce_time(1e6, 8, 1e9), float)
    assert isinstance(c.bytes_per_rank("all_reduce", 1e6, 8), float)
    assert isinstance(c.busbw_factor("broadcast", 8), float)
    assert c.busbw_factor("broadcast", np.array([2, 4])).shape == (2,)


def test_ceil_log2_is_exact_for_large_and_odd_counts():
    for n in [2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 2**20, 2**20 + 1, 10**6]:
        assert c.latency_steps("all_reduce", n, "recursive_doubling") == log2ceil(n)


# --- bandwidth helpers -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "factor"),
    [
        ("all_reduce", lambda n: 2 * (n - 1) / n),
        ("reduce_scatter", lambda n: (n - 1) / n),
        ("all_gather", lambda n: (n - 1) / n),
        ("all_to_all", lambda n: (n - 1) / n),
        ("broadcast", lambda n: 1.0),
        ("reduce", lambda n: 1.0),
    ],
)
def test_busbw_factor_is_nccl_tests(op, factor):
    """nccl-tests doc/PERFORMANCE.md: the bus-bandwidth factor per collective."""
    for n in (1, 2, 8, 16, 1440):
        assert c.busbw_factor(op, n) == pytest.approx(factor(n), rel=REL)
    assert c.bus_bandwidth(op, 2e9, 16, 0.01) == pytest.approx(2e11 * factor(16), rel=REL)


def test_nccl_tests_row_reproduces_its_busbw():
    """A row of data/nccl-tests/06a (16 ranks, 16 GiB): time 68655 us would print algbw 250.25,
    busbw 469.21 (GB/s) by the same definitions. Tolerance 0.01 GB/s: nccl-tests prints 2 decimals."""
    path = NCCL_TESTS / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"
    rows = [ln.split() for ln in open(path) if ln.strip() and not ln.lstrip().startswith("#")]
    rows = [r for r in rows if r[0].isdigit()]
    size, time_us, algbw, busbw = (float(rows[-1][i]) for i in (0, 5, 6, 7))
    assert size == 17179869184
    assert c.algorithm_bandwidth(size, time_us * 1e-6) / 1e9 == pytest.approx(algbw, abs=0.01)
    assert c.bus_bandwidth("all_reduce", size, 16, time_us * 1e-6) / 1e9 == pytest.approx(
        busbw, abs=0.01
    )


def test_lower_bound():
    assert c.allreduce_lower_bound_bytes(1.0, 8) == 1.75
    assert c.allreduce_lower_bound_bytes(1.0, 1) == 0.0
    np.testing.assert_allclose(c.allreduce_lower_bound_bytes(7.0, np.array([2, 4])), [7.0, 10.5])


# --- crossover ---------------------------------------------------------------------------------
def test_crossover_closed_form_ring_vs_tree():
    # ring 2(N-1)a + 2(N-1)/N M/B = tree 2La + 2M/B  =>  M* = (N-1-L) a N B
    for n in (8, 64, 512):
        want = (n - 1 - log2ceil(n)) * 5e-6 * n * 50e9
        assert c.crossover_bytes("ring", "tree", n, 50e9, 5e-6) == pytest.approx(want, rel=1e-12)
        assert c.crossover_bytes("tree", "ring", n, 50e9, 5e-6) == pytest.approx(want, rel=1e-12)


def test_crossover_is_vectorized_over_ranks_latency_bandwidth():
    n = np.array([8, 64, 512])[:, None, None]
    a = np.array([1e-6, 5e-6])[None, :, None]
    bw = np.array([25e9, 50e9, 450e9])[None, None, :]
    got = c.crossover_bytes("ring", "tree", n, bw, a)
    assert got.shape == (3, 2, 3)
    L = np.array([3, 6, 9])[:, None, None]  # noqa: N806
    np.testing.assert_allclose(got, (n - 1 - L) * a * n * bw, rtol=1e-12)


def test_crossover_inf_where_lines_do_not_cross():
    assert c.crossover_bytes("ring", "tree", 64, 50e9, 0.0) == math.inf  # no latency
    assert c.crossover_bytes("ring", "ring", 64, 50e9, 5e-6) == math.inf  # identical
    assert c.crossover_bytes("ring", "halving_doubling", 2, 50e9, 5e-6) == math.inf  # same at N=2
    assert c.crossover_bytes("ring", "tree", 1, 50e9, 5e-6) == math.inf  # one rank
    # ring always beats naive_root (fewer steps and fewer bytes): never a crossover
    assert c.crossover_bytes("ring", "naive_root", 16, 50e9, 5e-6) == math.inf
    got = c.crossover_bytes("ring", "tree", np.array([1, 8]), 50e9, 5e-6)
    assert math.isinf(got[0]) and math.isfinite(got[1])
    assert not np.isnan(got).any()


def test_crossover_other_ops():
    # broadcast chain vs binomial tree: (N-1)a + M b = L a + L M b => M* = (N-1-L) a B / (L-1)
    n, a, bw = 64, 5e-6, 50e9
    want = (n - 1 - 6) * a * bw / (6 - 1)
    assert c.crossover_bytes("chain", "binomial_tree", n, bw, a, op="broadcast") == pytest.approx(
        want, rel=1e-12
    )


# --- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"message_bytes": -1.0}, "message_bytes"),
        ({"message_bytes": float("nan")}, "message_bytes"),
        ({"message_bytes": float("inf")}, "message_bytes"),
        ({"message_bytes": np.array([1.0, -5.0])}, "message_bytes"),
        ({"message_bytes": "25MB"}, "message_bytes"),
        ({"ranks": 0}, "ranks"),
        ({"ranks": -3}, "ranks"),
        ({"ranks": 2.5}, "ranks"),
        ({"ranks": float("nan")}, "ranks"),
        ({"bandwidth_bytes_per_s": 0.0}, "bandwidth_bytes_per_s"),
        ({"bandwidth_bytes_per_s": -1e9}, "bandwidth_bytes_per_s"),
        ({"bandwidth_bytes_per_s": float("inf")}, "bandwidth_bytes_per_s"),
        ({"latency_s": -1e-6}, "latency_s"),
        ({"latency_s": float("nan")}, "latency_s"),
        ({"gamma_s_per_byte": -1.0}, "gamma_s_per_byte"),
    ],
)
@pytest.mark.parametrize("as_array", [False, True], ids=["scalar-path", "array-path"])
def test_bad_numbers_raise_naming_argument_and_value(kwargs, needle, as_array):
    args = {
        "message_bytes": 1e6,
        "ranks": 8,
        "bandwidth_bytes_per_s": 1e9,
        "latency_s": 1e-6,
        "gamma_s_per_byte": 0.0,
    } | kwargs
    if as_array:
        args = {k: v if isinstance(v, str) else np.asarray(v) for k, v in args.items()}
    with pytest.raises(ValueError, match=needle) as err:
        c.allreduce_time(**args)
    bad = kwargs[needle]
    if not isinstance(bad, np.ndarray | str):
        assert repr(float(bad)) in str(err.value)


def test_bad_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="op") as err:
        c.collective_time("allreduc", 1e6, 8, 1e9)  # "allreduce" is all_reduce
    assert all(op in str(err.value) for op in c.OPS)
    with pytest.raises(ValueError, match="algorithm") as err:
        c.allreduce_time(1e6, 8, 1e9, algorithm="butterfly")
    assert all(alg in str(err.value) for alg in c.ALGORITHMS["all_reduce"])
    with pytest.raises(ValueError, match="tree.*broadcast.*chain, binomial_tree"):
        c.collective_time("broadcast", 1e6, 8, 1e9, algorithm="tree")
    with pytest.raises(ValueError, match="algorithm"):
        c.crossover_bytes("ring", "bogus", 8, 1e9, 1e-6)
    with pytest.raises(ValueError, match="op"):
        c.busbw_factor("gather", 8)


def test_bad_bandwidth_helpers():
    with pytest.raises(ValueError, match="time_s"):
        c.algorithm_bandwidth(1e6, 0.0)
    with pytest.raises(ValueError, match="time_s"):
        c.bus_bandwidth("all_reduce", 1e6, 8, -1.0)
    with pytest.raises(ValueError, match="ranks"):
        c.busbw_factor("all_reduce", 0)
    with pytest.raises(ValueError, match="ranks"):
        c.allreduce_lower_bound_bytes(1e6, 1.5)
    with pytest.raises(ValueError, match="latency_s"):
        c.crossover_bytes("ring", "tree", 8, 1e9, -1e-6)


# --- properties (hypothesis) -------------------------------------------------------------------
sizes = st.floats(min_value=0.0, max_value=1e12, allow_nan=False)
pos_sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False)
ranks = st.integers(min_value=2, max_value=100_000)
bandwidths = st.floats(min_value=1e6, max_value=1e13, allow_nan=False)
latencies = st.floats(min_value=0.0, max_value=1e-2, allow_nan=False)
pos_latencies = st.floats(min_value=1e-8, max_value=1e-2, allow_nan=False)
AR_ON_RANKS = [a for a in c.ALGORITHMS["all_reduce"] if a != "nvls"]  # nvls reduces in the switch
PROPS = settings(max_examples=80, deadline=None)


@PROPS
@given(m=sizes, n=ranks, bw=bandwidths, a=latencies, alg=st.sampled_from(AR_ON_RANKS))
def test_no_rank_reducing_allreduce_beats_the_lower_bound(m, n, bw, a, alg):
    import math

    bound = c.allreduce_lower_bound_bytes(m, n)
    # a relative 1e-12 is finer than one step of a subnormal float (1e-300 B over 1.3 TB/s is
    # 7e-313 s, whose spacing is 5e-324: 4e-12 of it), so two ulps of slack are allowed too
    assert c.bytes_per_rank("all_reduce", m, n, alg) >= bound * (1 - 1e-12) - 2 * math.ulp(bound)
    floor = bound / bw
    assert c.allreduce_time(m, n, bw, a, alg) >= floor * (1 - 1e-12) - 2 * math.ulp(floor)


def test_the_lower_bound_holds_at_a_subnormal_time():
    """The example hypothesis found (a 1e-300 B message on 10 ranks at 1.35 TB/s): the time is
    a subnormal float, within an ulp of the bound, not below it by the model's doing."""
    import math

    m, n, bw = 1e-300, 10, 1349070439484.0
    floor = c.allreduce_lower_bound_bytes(m, n) / bw
    t = c.allreduce_time(m, n, bw, 0.0, "ring")
    assert abs(t - floor) <= 2 * math.ulp(floor)


@PROPS
@given(m=pos_sizes, n=ranks)
def test_ring_meets_the_bound_and_in_switch_beats_it(m, n):
    assert c.bytes_per_rank("all_reduce", m, n) == pytest.approx(
        c.allreduce_lower_bound_bytes(m, n), rel=1e-12
    )
    nvls, bound = c.bytes_per_rank("all_reduce", m, n, "nvls"), c.allreduce_lower_bound_bytes(m, n)
    assert (nvls < bound) == (n >= 4)  # (N+1)/N < 2(N-1)/N  <=>  N > 3


@PROPS
@given(m1=sizes, m2=sizes, n=ranks, bw=bandwidths, a=latencies, row=st.sampled_from(ROWS))
def test_time_grows_with_size(m1, m2, n, bw, a, row):
    lo, hi = sorted((m1, m2))
    op, alg = row
    t_lo, t_hi = (c.collective_time(op, m, n, bw, a, alg, 1e-12) for m in (lo, hi))
    assert t_hi >= t_lo
    # strictly, whenever the extra bytes are visible in float64 (every row has c(N) >= 1/2)
    if 0.5 * (hi - lo) / bw > 1e-12 * t_hi:
        assert t_hi > t_lo


@PROPS
@given(n=st.integers(min_value=2, max_value=2**20), a=pos_latencies, bw=bandwidths)
def test_tree_latency_grows_with_log_n_ring_with_n(n, a, bw):
    def latency_term(ranks: int, algorithm: str) -> float:
        # the time with alpha less the time without, for 1 B (0 B is not sent: 0 s)
        with_a = c.allreduce_time(1.0, ranks, bw, a, algorithm)
        return with_a - c.allreduce_time(1.0, ranks, bw, 0.0, algorithm)

    tree = latency_term(n, "tree")
    ring = latency_term(n, "ring")
    assert tree == pytest.approx(2 * log2ceil(n) * a, rel=1e-9)
    assert ring == pytest.approx(2 * (n - 1) * a, rel=1e-9)
    # doubling N adds exactly one tree level (2 steps) but doubles the ring's step count, plus 2
    assert latency_term(2 * n, "tree") - tree == pytest.approx(2 * a, rel=1e-7)
    assert latency_term(2 * n, "ring") == pytest.approx(2 * ring + 2 * a, rel=1e-9)


@PROPS
@given(
    n=ranks,
    bw=bandwidths,
    a=pos_latencies,
    op_pair=st.sampled_from(
        [(op, x, y) for op in c.OPS for x in c.ALGORITHMS[op] for y in c.ALGORITHMS[op] if x < y]
    ),
    g=st.sampled_from([0.0, 1e-12]),
)
def test_algorithms_equal_at_their_crossover(n, bw, a, op_pair, g):
    op, x, y = op_pair
    m = c.crossover_bytes(x, y, n, bw, a, op=op, gamma_s_per_byte=g)
    assert not math.isnan(m)
    # a crossover is any size, but the times are priced up to the largest buffer (2**44 B)
    assume(math.isfinite(m) and 2 * m <= 2**44)
    tx = c.collective_time(op, m, n, bw, a, x, g)
    ty = c.collective_time(op, m, n, bw, a, y, g)
    assert tx == pytest.approx(ty, rel=1e-9)
    # and the order flips across it
    below = c.collective_time(op, m / 2, n, bw, a, x, g) - c.collective_time(
        op, m / 2, n, bw, a, y, g
    )
    above = c.collective_time(op, m * 2, n, bw, a, x, g) - c.collective_time(
        op, m * 2, n, bw, a, y, g
    )
    assert below * above < 0


@PROPS
@given(m=pos_sizes, n=ranks, bw=bandwidths, op=st.sampled_from(c.OPS))
def test_busbw_of_latency_free_ring_is_link_bandwidth(m, n, bw, op):
    t = c.collective_time(op, m, n, bw, 0.0, "ring")
    assert c.bus_bandwidth(op, m, n, t) == pytest.approx(bw, rel=1e-9)


@PROPS
@given(
    m=sizes,
    n=st.integers(1, 10**6),
    bw=bandwidths,
    a=latencies,
    g=st.sampled_from([0.0, 1e-12]),
    row=st.sampled_from(ROWS),
)
def test_scalar_fast_path_equals_array_path(m, n, bw, a, g, row):
    op, alg = row
    scalar = c.collective_time(op, m, n, bw, a, alg, g)
    array = c.collective_time(op, np.array([m]), np.array([n]), np.array(bw), a, alg, g)
    assert isinstance(scalar, float) and array.shape == (1,)
    assert scalar == pytest.approx(float(array[0]), rel=1e-12, abs=0.0)


@pytest.mark.parametrize("bad", [True, False, np.array([True, False])])
def test_booleans_are_not_rank_counts(bad):
    with pytest.raises(ValueError, match="ranks: expected a number"):
        c.allreduce_time(1e6, bad, 50e9)


def test_one_op_list_and_one_busbw_table():
    """Every module that names the collectives uses tables.OPS; the busbw factors are one table."""
    from costmodel import hardware, nccl, predict, tables
    from costmodel.validation import compare, nccl_tests, torch_bench

    assert c.OPS is tables.OPS and nccl.OPS is tables.OPS and predict.OPS is tables.OPS
    assert typing.get_args(hardware.CollectiveOp) == tables.OPS
    assert set(tables.BUSBW_FACTOR) == set(tables.OPS) == set(tables.BUSBW_NUMERATOR)
    assert compare._BUSBW is tables.BUSBW_FACTOR
    assert torch_bench.BUSBW_FACTOR is tables.BUSBW_FACTOR
    assert set(torch_bench.OPS) <= set(tables.OPS)
    assert nccl_tests._BUSBW_NUMERATOR is tables.BUSBW_NUMERATOR
    # nccl-tests doc/PERFORMANCE.md: 2(n-1)/n, (n-1)/n, 1
    assert tables.BUSBW_FACTOR["all_reduce"](4) == 1.5
    assert tables.BUSBW_FACTOR["all_gather"](4) == 0.75
    assert tables.BUSBW_FACTOR["broadcast"](4) == 1.0
