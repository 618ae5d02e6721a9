"""Benchmark: every all-reduce algorithm over 1e6 (size, ranks) pairs, vectorized vs a Python loop.

For each algorithm of ``costmodel.collectives.ALGORITHMS["all_reduce"]`` it measures, in one run,
side by side:

- **vectorized**: one call of ``collectives.allreduce_time`` on arrays of 1e6 sizes and ranks
  (best of ``--repeat``);
- **loop (same functions)**: ``collectives.allreduce_time`` called once per row with Python
  scalars, over a random subsample, extrapolated to rows/s;
- **loop (bare math)**: the same DESIGN.md 3.1 formula written as plain ``math`` with no input
  checking, over a larger subsample: the fastest a scalar loop can be.

It checks that the three agree on the subsample, then prints rows/s and the ratios. numpy's
element-wise operations run on one thread, and times are CPU (process) time, best of
``--repeat`` interleaved runs, so the rows/s are per core.

A second table times the notebook formulas three ways on the same inputs:
one call with Python numbers (the scalar fast path, target <= 10 us), one call with one-element
arrays (the array path for one row) and a vectorised call per row; it checks the first two are
equal.

Usage: ``python benchmarks/bench_formulas.py [--rows 1000000] [--repeat 5] [--scalar-only]``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from costmodel import collectives

BANDWIDTH_BYTES_PER_S = 50e9  # NDR InfiniBand per GPU
LATENCY_S = 5e-6


def _l(n: int) -> int:
    return (n - 1).bit_length()  # ceil(log2 n) for n >= 1


# DESIGN.md 3.1 all-reduce rows as bare scalar math (gamma = 0): (M, N, a, B) -> seconds
BARE = {
    "ring": lambda m, n, a, b: 2 * (n - 1) * a + 2 * (n - 1) / n * m / b,
    "tree": lambda m, n, a, b: 2 * _l(n) * a + 2 * m / b,
    "binomial_tree": lambda m, n, a, b: 2 * _l(n) * (a + m / b),
    "recursive_doubling": lambda m, n, a, b: _l(n) * (a + m / b),
    "halving_doubling": lambda m, n, a, b: 2 * _l(n) * a + 2 * (n - 1) / n * m / b,
    "nvls": lambda m, n, a, b: a + (n + 1) / n * m / b,
    "naive_root": lambda m, n, a, b: 2 * (n - 1) * (a + m / b),
    "naive_all_to_all": lambda m, n, a, b: (n - 1) * (a + m / b),
}


def _cpu_s(fn) -> float:
    """CPU seconds of one call (process time: per core, and robust to other load on the box)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main(
    rows: int = 1_000_000,
    repeat: int = 5,
    loop_rows: int = 10_000,
    bare_rows: int = 30_000,
    seed: int = 0,
) -> list[dict[str, float | str]]:
    # the loops time a subsample of the rows: never more rows than there are
    loop_rows, bare_rows = min(loop_rows, rows), min(bare_rows, rows)
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(math.log(8.0), math.log(16 * 2.0**30), rows))  # 8 B .. 16 GiB
    ranks = rng.integers(2, 4097, rows).astype(float)
    pick = rng.choice(rows, max(loop_rows, bare_rows), replace=False)
    sub_m = [float(x) for x in sizes[pick]]
    sub_n = [int(x) for x in ranks[pick]]
    bw, a = BANDWIDTH_BYTES_PER_S, LATENCY_S
    results = []
    print(
        f"{rows:.0e} (size, ranks) pairs; sizes 8 B..16 GiB, ranks 2..4096, B = 50 GB/s, "
        f"alpha = 5 us; loops over {loop_rows} / {bare_rows} sampled rows"
    )
    head = (
        f"{'algorithm':<20}{'vectorized':>14}{'loop (same fn)':>16}{'ratio':>9}"
        f"{'loop (bare math)':>18}{'ratio':>8}"
    )
    print(head)
    print("-" * len(head))
    for alg in collectives.ALGORITHMS["all_reduce"]:
        vec = collectives.allreduce_time(sizes, ranks, bw, a, alg)

        def same_fn(alg=alg):
            return [
                collectives.allreduce_time(m, n, bw, a, alg)
                for m, n in zip(sub_m[:loop_rows], sub_n[:loop_rows], strict=True)
            ]

        def bare(alg=alg):
            f = BARE[alg]
            return [
                f(m, n, a, bw) for m, n in zip(sub_m[:bare_rows], sub_n[:bare_rows], strict=True)
            ]

        # interleaved, best of `repeat` each, so a burst of other load hits neither side alone
        t_vec = t_same = t_bare = math.inf
        for _ in range(repeat):
            t_vec = min(
                t_vec, _cpu_s(lambda alg=alg: collectives.allreduce_time(sizes, ranks, bw, a, alg))
            )
            t_same = min(t_same, _cpu_s(same_fn))
            t_bare = min(t_bare, _cpu_s(bare))
        np.testing.assert_allclose(same_fn(), vec[pick[:loop_rows]], rtol=1e-12)
        np.testing.assert_allclose(bare(), vec[pick[:bare_rows]], rtol=1e-12)
        r_vec, r_same, r_bare = rows / t_vec, loop_rows / t_same, bare_rows / t_bare
        results.append(
            {
                "algorithm": alg,
                "vectorized_rows_per_s": r_vec,
                "loop_rows_per_s": r_same,
                "bare_loop_rows_per_s": r_bare,
                "ratio_vs_loop": r_vec / r_same,
                "ratio_vs_bare_loop": r_vec / r_bare,
            }
        )
        print(
            f"{alg:<20}{r_vec:>12.3g}/s{r_same:>14.3g}/s{r_vec / r_same:>8.0f}x"
            f"{r_bare:>16.3g}/s{r_vec / r_bare:>7.0f}x"
        )
    worst = min(r["vectorized_rows_per_s"] for r in results)
    worst_ratio = min(r["ratio_vs_loop"] for r in results)
    print(
        f"\nslowest vectorized: {worst:.3g} rows/s (target >= 1e7 per core: "
        f"{'met' if worst >= 1e7 else 'NOT met'}); smallest ratio vs the same functions in a "
        f"loop: {worst_ratio:.0f}x (target >= 100x: {'met' if worst_ratio >= 100 else 'NOT met'})"
    )
    return results


TARGET_SCALAR_S = 10e-6  # goal: one call with Python numbers


def _scalar_cases():
    """name -> (scalar args, the function, vectorised args of ``n`` rows) for the notebook API.

    Each formula is called three ways on the same inputs: Python numbers (the scalar fast path),
    one-element arrays (the array path for one row: what a scalar call cost before the fast
    path) and ``n``-row arrays (per row)."""
    import costmodel as cm
    from costmodel import batch, memory, topology

    def rows(n, x):
        return np.full(n, float(x))

    return {
        "allreduce_time": (cm.allreduce_time, (14e9, 64, 50e9)),
        "collectives.collective_time": (
            collectives.collective_time,
            ("all_gather", 1e9, 8, 100e9, 5e-6),
        ),
        "bus_bandwidth": (cm.bus_bandwidth, ("all_reduce", 1e9, 8, 0.01)),
        "bytes_per_rank": (cm.bytes_per_rank, ("all_reduce", 1e9, 8)),
        "crossover_bytes": (cm.crossover_bytes, ("ring", "tree", 64, 50e9, 5e-6)),
        "hierarchical_allreduce_time": (
            cm.hierarchical_allreduce_time,
            (1e9, 4, 8, 450e9, 50e9, 1e-6, 5e-6),
        ),
        "flat_ring_allreduce_time": (
            cm.flat_ring_allreduce_time,
            (1e9, 4, 8, 450e9, 8, 50e9, 1e-6, 5e-6),
        ),
        "training_memory": (cm.training_memory, (7e9,)),
        "max_params": (cm.max_params, (80e9,)),
        "activation_bytes": (memory.activation_bytes, (32, 4096, 2048, 1, 32)),
        "global_batch": (cm.global_batch, (4, 64, 8)),
        "scale_learning_rate": (cm.scale_learning_rate, (0.1, 256, 8192)),
        "per_gpu_inter_bandwidth": (topology.per_gpu_inter_bandwidth, (8, 50e9, 8)),
        "tokens_per_step": (batch.tokens_per_step, (8192, 2048)),
    }, rows


def _per_call(fn, number: int, repeat: int) -> float:
    """Best-of-``repeat`` CPU seconds per call over ``number`` calls."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - t0) / number)
    return best


def scalar_main(calls: int = 20_000, rows: int = 100_000, repeat: int = 5) -> list[dict]:
    """Scalar call vs one-row array call vs vectorised per row, side by side (one run)."""
    cases, full = _scalar_cases()
    print(
        f"\nscalar calls (Python numbers in, a Python float out; target <= "
        f"{TARGET_SCALAR_S * 1e6:.0f} us): CPU per call, best of {repeat} x {calls} calls"
    )
    head = (
        f"{'function':<30}{'scalar':>10}{'1-row array':>13}{'speed-up':>10}"
        f"{'vectorised/row':>16}  verdict"
    )
    print(head)
    print("-" * len(head))
    out = []
    for name, (fn, args) in cases.items():
        one = tuple(np.array([a]) if not isinstance(a, str) else a for a in args)
        many = tuple(full(rows, a) if not isinstance(a, str) else a for a in args)
        fast, slow = fn(*args), fn(*one)
        value = fast.total_bytes if hasattr(fast, "total_bytes") else fast
        ref = slow.total_bytes if hasattr(slow, "total_bytes") else slow
        assert type(value) in (float, int), (name, type(value))
        assert value == np.asarray(ref).item(), name  # equal results, both paths
        t_scalar = _per_call(lambda fn=fn, args=args: fn(*args), calls, repeat)
        t_one = _per_call(lambda fn=fn, one=one: fn(*one), max(calls // 10, 100), repeat)
        try:
            t_vec = _per_call(lambda fn=fn, many=many: fn(*many), 3, repeat) / rows
        except ValueError:  # a scalar-only function (none today)
            t_vec = math.nan
        verdict = "met" if t_scalar <= TARGET_SCALAR_S else "NOT met"
        print(
            f"{name:<30}{t_scalar * 1e6:>8.2f}us{t_one * 1e6:>11.1f}us{t_one / t_scalar:>9.0f}x"
            f"{t_vec * 1e9:>14.1f}ns  {verdict}"
        )
        out.append(
            {"function": name, "scalar_s": t_scalar, "one_row_array_s": t_one, "row_s": t_vec}
        )
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scalar-only", action="store_true", help="only the scalar-call table")
    args = parser.parse_args()
    for flag, least in (("--rows", 1), ("--repeat", 1)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    if not args.scalar_only:
        main(rows=args.rows, repeat=args.repeat)
    scalar_main(repeat=args.repeat)
