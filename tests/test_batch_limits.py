"""The batch formulas keep the shared input limits, and min_ranks is exact up to the ranks limit.

``costmodel.batch`` took ``ranks`` of any size (``global_batch(4, 10**12, 8)`` answered) while
every command bounds ``--ranks`` to 1..1e9 (``costmodel._limits.LIMITS``); it now checks
``local_batch``, ``ranks``, ``accumulation``, ``global_batch`` and ``sequence_length`` against
the limit of the CLI option of the same quantity, in the CLI's words, and refuses a solved
value no call could take back. ``memory.min_ranks`` took the ceiling of a float with a relative
slack of 1e-12, which is a thousandth of a rank near 1e9: a count one short, that does not
fit, was answered; it is now the ceiling of an exact fraction.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from costmodel import batch, memory
from costmodel._limits import LIMITS
from tests._cli import one_line_error, run

RANKS = LIMITS["ranks"].rule  # "a whole number in 1..1,000,000,000"
BATCH = LIMITS["local_batch"].rule  # "a whole number in 1..1,000,000"
GLOBAL = LIMITS["global_"].rule  # "a whole number in 1..1e12"
SEQ = LIMITS["sequence_length"].rule  # "a whole number in 1..100,000,000 tokens"


def _refusal(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    return str(err.value)


# --- the limits and their words ---------------------------------------------------------------


def test_the_rules_are_the_shared_table_s_and_the_bounds_those_of_the_cli():
    # a test of the test's premise: if the table changes, the checks below follow it
    assert (LIMITS["ranks"].lo, LIMITS["ranks"].hi) == (1, 1e9)
    assert LIMITS["accumulation"] is LIMITS["local_batch"]
    assert (LIMITS["local_batch"].lo, LIMITS["local_batch"].hi) == (1, 1e6)
    assert (LIMITS["global_"].lo, LIMITS["global_"].hi) == (1, 1e12)
    assert (LIMITS["sequence_length"].lo, LIMITS["sequence_length"].hi) == (1, 1e8)


@pytest.mark.parametrize(
    ("arg", "rule", "top"),
    [
        ("local_batch", BATCH, 10**6),
        ("ranks", RANKS, 10**9),
        ("accumulation", BATCH, 10**6),
    ],
)
def test_global_batch_takes_both_boundaries_and_refuses_just_outside(arg, rule, top):
    base = {"local_batch": 2, "ranks": 3, "accumulation": 5}
    for ok in (1, top, float(top), np.int64(top)):
        got = batch.global_batch(**{**base, arg: ok})
        assert got == 30 // base[arg] * int(ok) and type(got) is int
    for bad, shown in [(0, "0"), (top + 1, str(top + 1)), (float(top) + 1, f"{top + 1}.0")]:
        msg = _refusal(lambda bad=bad: batch.global_batch(**{**base, arg: bad}))
        assert msg == f"{arg}: must be {rule}, got {shown}"
    # a fraction inside the range: whole is part of the same rule
    assert _refusal(lambda: batch.global_batch(**{**base, arg: 2.5})) == (
        f"{arg}: must be {rule}, got 2.5"
    )


def test_a_count_too_large_for_a_float_is_refused_in_the_same_words():
    huge = 10**400  # float(huge) overflows: it was an OverflowError naming nothing
    assert _refusal(lambda: batch.global_batch(4, huge, 8)).startswith(
        f"ranks: must be {RANKS}, got 1000"
    )


@pytest.mark.parametrize(
    ("values", "index", "shown"),
    [
        ([8, 10**9 + 1, 16], 1, "1000000001"),  # one past the top
        (np.array([1, 10**9, 0]), 2, "0"),  # both boundaries pass; the element below does not
        (np.array([[8.0, 16.0], [2.5, 4.0]]), 2, "2.5"),  # 2-D: the flat index
        (np.array([8.0, math.nan]), 1, "nan"),
        (np.array([8, 2**62], dtype=np.int64), 1, str(int(float(2**62)))),
    ],
)
def test_an_array_with_one_bad_element_names_it(values, index, shown):
    size = np.size(values)
    msg = _refusal(lambda: batch.global_batch(4, values, 8))
    assert msg == f"ranks: must be {RANKS}, got {shown} (element {index} of {size})"


def test_an_array_at_the_boundaries_answers_exactly():
    got = batch.global_batch(np.array([1, 10**6]), np.array([1, 10**9]), np.array([1, 10**6]))
    # 10**21 is past int64: the exact product, not a wrapped one
    assert [int(x) for x in got] == [1, 10**21]
    assert batch.global_batch(10**6, 10**9, 10**6) == 10**21


def test_tokens_per_step_keeps_the_global_batch_and_sequence_limits():
    assert batch.tokens_per_step(10**12, 10**8) == 10**20
    assert batch.tokens_per_step(1, 1) == 1
    assert _refusal(lambda: batch.tokens_per_step(10**12 + 1, 8)) == (
        f"global_batch_size: must be {GLOBAL}, got 1000000000001"
    )
    assert _refusal(lambda: batch.tokens_per_step(8, 10**8 + 1)) == (
        f"sequence_length: must be {SEQ}, got 100000001"
    )
    assert _refusal(lambda: batch.tokens_per_step([8, 10**12 + 1], 8)) == (
        f"global_batch_size: must be {GLOBAL}, got 1000000000001 (element 1 of 2)"
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(local_batch=4, ranks=10**9 + 1, accumulation=1), f"ranks: must be {RANKS}"),
        (dict(local_batch=4, ranks=8, accumulation=10**6 + 1), f"accumulation: must be {BATCH}"),
        (dict(local_batch=10**6 + 1, ranks=8, accumulation=1), f"local_batch: must be {BATCH}"),
        (dict(local_batch=4, ranks=8, global_batch=10**12 + 1), f"global_batch: must be {GLOBAL}"),
        (
            dict(local_batch=4, ranks=8, accumulation=1, sequence_length=10**8 + 1),
            f"sequence_length: must be {SEQ}",
        ),
    ],
)
def test_solve_batch_refuses_a_given_value_past_its_limit(kwargs, expected):
    assert _refusal(lambda: batch.solve_batch(**kwargs)).startswith(expected + ", got ")


def test_solve_batch_answers_at_the_top_and_refuses_one_past_it():
    sol = batch.solve_batch(local_batch=1, accumulation=1, global_batch=10**9)
    assert sol.ranks == 10**9
    assert batch.solve_batch(local_batch=10**3, ranks=10**6, accumulation=10**3).global_batch == (
        10**12
    )
    msg = _refusal(lambda: batch.solve_batch(local_batch=1, accumulation=1, global_batch=10**9 + 1))
    assert msg.startswith(
        f"ranks: 1000000001 / (1 x 1) = 1,000,000,001 is past the `ranks` limit ({RANKS})"
    )
    msg = _refusal(lambda: batch.solve_batch(local_batch=10**3, ranks=10**6, accumulation=1001))
    assert msg.startswith(
        f"global_batch: 1000 x 1000000 x 1001 = 1,001,000,000,000 is past the `global_batch` limit "
        f"({GLOBAL})"
    )


def test_the_nearest_valid_values_offered_are_within_the_limit():
    # 2e9 + 1 over 2 is 1e9 + 0.5: 1e9 is offered, 1e9 + 1 (past the limit) is not
    msg = _refusal(
        lambda: batch.solve_batch(local_batch=2, accumulation=1, global_batch=2 * 10**9 + 1)
    )
    assert msg.endswith("nearest valid: ranks=1000000000 (global_batch=2000000000)")
    msg = _refusal(lambda: batch.solve_batch(local_batch=3, accumulation=1, global_batch=10**12))
    assert msg.endswith(f"the nearest whole values are past the ranks limit ({RANKS})")


def test_a_neighbour_past_the_unknown_s_own_limit_is_left_out():
    # (1e12 - 2) / 999,999 = 1,000,000.999998999...: accumulation 1,000,001 is past its 1e6, so only
    # 1,000,000 is offered; as ranks (limit 1e9) both neighbours are
    g, b = 10**12 - 2, 999_999
    msg = _refusal(lambda: batch.solve_batch(local_batch=b, ranks=1, global_batch=g))
    # the quotient with the digits that show it is not whole (it read "1e+06")
    assert msg.startswith("accumulation: 999999999998 / (999999 x 1) = 1000000.999999 is not a")
    assert msg.endswith("nearest valid: accumulation=1000000 (global_batch=999999000000)")
    msg = _refusal(lambda: batch.solve_batch(local_batch=1, accumulation=b, global_batch=g))
    assert (
        "nearest valid: ranks=1000000 (global_batch=999999000000) or ranks=1000001 "
        "(global_batch=999999999999);" in msg
    )


def test_global_tokens_past_the_global_batch_limit_name_global_tokens():
    ok = batch.solve_batch(
        local_batch=10**3, ranks=10**6, global_tokens=2 * 10**12, sequence_length=2
    )
    assert (ok.accumulation, ok.global_batch) == (10**3, 10**12)
    msg = _refusal(
        lambda: batch.solve_batch(
            local_batch=1, ranks=1, global_tokens=2 * 10**12 + 2, sequence_length=2
        )
    )
    assert msg == (
        f"global_tokens: {2 * 10**12 + 2} / 2 = 1,000,000,000,001 sequences per step, past the "
        f"`global_batch` limit ({GLOBAL})"
    )


@pytest.mark.parametrize(
    ("option", "arg", "value"),
    [
        ("--ranks", "ranks", 10**9 + 1),
        ("--accumulation", "accumulation", 10**6 + 1),
        ("--local", "local_batch", 10**6 + 1),
        ("--global", "global_batch", 10**12 + 1),
    ],
)
def test_the_api_and_the_cli_refuse_the_same_value_in_the_same_words(option, arg, value):
    given = {"local_batch": 4, "ranks": 8, "accumulation": 2, "global_batch": 64}
    given[arg] = value
    unknown = "global_batch" if arg != "global_batch" else "accumulation"
    given[unknown] = None
    api = _refusal(lambda: batch.solve_batch(**given))
    flags = {"local_batch": "--local", "ranks": "--ranks", "accumulation": "--accumulation"}
    flags["global_batch"] = "--global"
    argv = [x for k, v in given.items() if v is not None for x in (flags[k], str(v))]
    line = one_line_error(run("batch", *argv))
    assert line == f"costmodel: error: {option}: {api.split(': ', 1)[1]}"


def test_a_solved_value_past_its_limit_is_refused_by_the_cli_too():
    one_line_error(
        run("batch", "--local", "1", "--accumulation", "1", "--global", "1000000000001"),
        "--global: must be",
    )
    one_line_error(
        run("batch", "--local", "1", "--accumulation", "1", "--global", "1000000000000"),
        f"--ranks: 1000000000000 / (1 x 1) = 1,000,000,000,000 is past the --ranks limit ({RANKS})",
    )


def test_batch_s_ranks_and_memory_s_dp_ranks_share_one_rule():
    b = _refusal(lambda: batch.global_batch(4, 10**9 + 1))
    m = _refusal(lambda: memory.training_memory(7e9, zero_stage=3, dp_ranks=10**9 + 1))
    assert b.split(", got")[0].removeprefix("ranks") == m.split(", got")[0].removeprefix("dp_ranks")


# --- min_ranks: exact ---------------------------------------------------------------------------


def _brute_min_ranks(params: int, memory_bytes: int, bytes_per_param: int) -> int:
    """ZeRO-3 (every part sharded, nothing else held): the least N with P b / N <= M, by trying
    every N in integers."""
    n = 1
    while params * bytes_per_param > n * memory_bytes:
        n += 1
    return n


@pytest.mark.parametrize("seed", range(3))
def test_min_ranks_equals_the_brute_force_count_on_small_problems(seed):
    rng = random.Random(seed)
    for _ in range(200):
        p, m = rng.randint(1, 10**5), rng.randint(1, 10**4)
        assert memory.min_ranks(float(p), float(m), zero_stage=3) == _brute_min_ranks(p, m, 16)


def test_min_ranks_equals_a_brute_force_search_with_replicated_parts():
    # ZeRO-1 with activations, a CUDA context and fragmentation: the memory of N ranks from
    # training_memory itself, searched one count at a time, away from exact fits (where a float
    # sum may sit an ulp either side)
    rng = random.Random(7)
    for _ in range(60):
        p, act = float(rng.randint(10**6, 10**8)), float(rng.randint(0, 10**8))
        ctx, frag = float(rng.randint(0, 10**8)), rng.choice([0.0, 0.05, 0.1])
        mem = float(rng.randint(10**8, 10**9) * 2 + 1)
        kw = dict(activations_bytes=act, cuda_context_bytes=ctx, fragmentation=frag)
        try:
            n = memory.min_ranks(p, mem, zero_stage=1, **kw)
        except ValueError:
            assert memory.training_memory(p, zero_stage=1, dp_ranks=10**9, **kw).total_bytes > mem
            continue
        brute = next(
            k
            for k in range(1, 100_000)
            if memory.training_memory(p, zero_stage=1, dp_ranks=k, **kw).total_bytes <= mem
        )
        assert n == brute


@pytest.mark.parametrize("seed", range(3))
def test_min_ranks_is_the_integer_ceiling_at_large_counts(seed):
    """Counts up to the limit, against -(-16 P // M) in Python integers: the float slack of
    1e-12 gave one rank too few (that did not fit) or one too many near whole quotients."""
    rng = random.Random(seed)
    for _ in range(300):
        # cards of tens of bytes: a count up to the ranks limit within the parameter limit
        # (1e15, as every entry point holds it); 16 P up to ~1.4e13, past float's 2**53 slack
        m = rng.choice([24e3, 40e3, 80e3, 96e3, 141e3])
        target = rng.randint(10**6, 10**9)
        p = float(target * int(m) // 16 + rng.randint(-(10**2), 10**2))
        want = -(-16 * int(p) // int(m))
        if want > 10**9:
            with pytest.raises(
                ValueError, match=r"memory_bytes: the fewest ranks that fit, 1,000,"
            ):
                memory.min_ranks(p, m)
        else:
            assert memory.min_ranks(p, m) == want


def test_exact_fits_are_not_rounded_up():
    # k ranks of 80 kB hold exactly 16 x 5e3 k bytes: the answer is k, whatever the float sum
    # (80 kB cards: the ranks limit within the parameter limit of 1e15)
    for k in [*range(1, 2000), 999_999_937, 10**9]:
        assert memory.min_ranks(5e3 * k, 80e3) == k


def test_min_ranks_at_the_ranks_limit_and_one_past_it():
    # 8 MB cards: the ranks limit within the parameter limit (1e15), no unit hint (>= 1 MB)
    assert memory.min_ranks(5e14, 8e6) == 10**9  # 16 x 5e14 B in 8 MB cards: 1e9, exactly
    # (the float breakdown sums to 8e6 within rounding; min_ranks' ceiling is in integers)
    assert memory.training_memory(5e14, zero_stage=3, dp_ranks=10**9).total_bytes <= 8e6 * (
        1 + 1e-12
    )
    # one parameter more: 16 B over 1e9 ranks -> one rank more (a float slack answered 1e9, a
    # count whose memory is over the card)
    p = 5e14 + 1
    assert memory.training_memory(p, zero_stage=3, dp_ranks=10**9).total_bytes > 8e6
    msg = _refusal(lambda: memory.min_ranks(p, 8e6))
    assert msg == (
        "memory_bytes: the fewest ranks that fit, 1,000,000,001, are past the ranks limit "
        f"({RANKS}); a larger memory_bytes or less unsharded memory fits in fewer"
    )


def test_the_zero3_hint_of_a_refusal_is_exact_past_the_limit():
    msg = _refusal(lambda: memory.min_ranks(5e14 + 1, 8e6, zero_stage=1))
    assert msg.endswith(
        "; `zero_stage` 3 needs 1,000,000,001 ranks, past the ranks limit of 1,000,000,000"
    )
    msg = _refusal(lambda: memory.min_ranks(5e14, 8e6, zero_stage=1))
    assert msg.endswith("; `zero_stage` 3 needs 1,000,000,000 ranks")


# --- the CLI's fewest ranks (memory --json min_ranks): the same limit ------------------------


def test_stage_min_ranks_searches_up_to_the_ranks_limit():
    """``costmodel memory`` (stage_min_ranks) stopped at 1e7 ranks: a 1,000T model on 3 GB
    cards fits on about 1.2e7, and the answer was "no rank count fits ... even at 10,000,000"."""
    from costmodel.strategy.memory import stage_memory, stage_min_ranks

    n = stage_min_ranks(1e15, 3e9, 3)
    assert 10**7 < n <= 10**9
    assert stage_memory(3, n, 1e15).total_bytes <= 3e9 < stage_memory(3, n - 1, 1e15).total_bytes
    got = run("memory", "--params", "1000T", "--zero", "3", "--gpu-memory", "3GB", "--json")
    assert got.exit_code == 0 and f'"min_ranks": {n},' in got.stdout
    with pytest.raises(ValueError, match=r"even at 1,000,000,000 ranks \(the ranks limit\)"):
        stage_min_ranks(1e15, 1e9, 3)
