"""QA pass 65 (a notebook user): the formulas' limits and four papercuts.

- The public collective formulas took what every command, ``cm.sweep``, ``cm.ddp_step`` and the
  cluster form refuse: ``cm.allreduce_time(14e9, 64, 50)`` (a bandwidth typed in GB/s) answered
  551,250,000 s, ``cm.allreduce_time(1e30, 64, 50e9)`` 3.9e19 s, a latency of 10 s 1,260 s;
  ``hierarchical_allreduce_time`` with an inter-node bandwidth of 50 37,500,000 s. They hold the
  shared ranges of ``costmodel._limits`` now, element-wise for arrays, in the same words.
- ``cm.min_ranks(30e9, 80)`` named ``dp_ranks``, an argument it does not have.
- ``cm.collective_time(14e9, 64, 50e9)`` (op left out) asked for a bandwidth, not the op.
- ``cm.parse_count("8Ki")`` refused a token count's binary suffix saying nothing of where it is
  read; ``cm.parse_tokens`` (the reader that takes it) was not exported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import costmodel as cm
from costmodel._limits import LIMITS, MESSAGE_BYTES

BANDWIDTH = LIMITS["bandwidth"].rule
LATENCY = LIMITS["latency"].rule
MESSAGE = MESSAGE_BYTES.rule
FABRIC = BANDWIDTH + ", or 0 with one node"  # a fabric's bandwidth: none needed on one node

# (id, call of the one bad value, the argument named, its rule)
CALLS: list[tuple[str, Callable[[Any], Any], str, str]] = [
    ("allreduce_time-bw", lambda v: cm.allreduce_time(14e9, 64, v), "bandwidth_bytes_per_s", BANDWIDTH),
    ("allreduce_time-m", lambda v: cm.allreduce_time(v, 64, 50e9), "message_bytes", MESSAGE),
    ("allreduce_time-lat", lambda v: cm.allreduce_time(14e9, 64, 50e9, v), "latency_s", LATENCY),
    ("collective_time-bw", lambda v: cm.collective_time("all_gather", 1e9, 8, v), "bandwidth_bytes_per_s", BANDWIDTH),
    ("collective_time-m", lambda v: cm.collective_time("broadcast", v, 8, 50e9), "message_bytes", MESSAGE),
    ("collectives.collective_time-lat", lambda v: cm.collectives.collective_time("reduce", 1e9, 8, 50e9, v), "latency_s", LATENCY),
    ("bytes_per_rank-m", lambda v: cm.bytes_per_rank("all_reduce", v, 64), "message_bytes", MESSAGE),
    ("bus_bandwidth-m", lambda v: cm.bus_bandwidth("all_reduce", v, 64, 1.0), "message_bytes", MESSAGE),
    ("algorithm_bandwidth-m", lambda v: cm.algorithm_bandwidth(v, 1.0), "message_bytes", MESSAGE),
    ("lower_bound-m", lambda v: cm.allreduce_lower_bound_bytes(v, 64), "message_bytes", MESSAGE),
    ("crossover-bw", lambda v: cm.crossover_bytes("ring", "tree", 64, v, 5e-6), "bandwidth_bytes_per_s", BANDWIDTH),
    ("crossover-lat", lambda v: cm.crossover_bytes("ring", "tree", 64, 50e9, v), "latency_s", LATENCY),
    ("flat_ring-nic", lambda v: cm.flat_ring_allreduce_time(14e9, 8, 8, 900e9, 8, v), "nic_bandwidth_bytes_per_s", FABRIC),
    ("flat_ring-intra", lambda v: cm.flat_ring_allreduce_time(14e9, 8, 8, v, 8, 50e9), "intra_bandwidth_bytes_per_s", BANDWIDTH),
    ("flat_ring-m", lambda v: cm.flat_ring_allreduce_time(v, 8, 8, 900e9, 8, 50e9), "message_bytes", MESSAGE),
    ("flat_ring-lat", lambda v: cm.flat_ring_allreduce_time(1e9, 8, 8, 900e9, 8, 50e9, 0.0, v), "inter_latency_s", LATENCY),
    ("hierarchical-inter", lambda v: cm.hierarchical_allreduce_time(14e9, 8, 8, 900e9, v), "inter_bandwidth_bytes_per_s", FABRIC),
    ("hierarchical-intra", lambda v: cm.hierarchical_allreduce_time(14e9, 8, 8, v, 50e9), "intra_bandwidth_bytes_per_s", BANDWIDTH),
    ("hierarchical-m", lambda v: cm.hierarchical_allreduce_time(v, 8, 8, 900e9, 50e9), "message_bytes", MESSAGE),
    ("hierarchical-lat", lambda v: cm.hierarchical_allreduce_time(1e9, 8, 8, 900e9, 50e9, v), "intra_latency_s", LATENCY),
]  # fmt: skip

# one value past each kind of range: a bandwidth typed in GB/s and one past 1 PB/s, a size past
# 2**44 B, a latency typed in us
BAD = {BANDWIDTH: (50.0, 2e15), MESSAGE: (1e30, 2.0**44 + 1), LATENCY: (10.0, 5.0)}
BAD[FABRIC] = BAD[BANDWIDTH]


@pytest.mark.parametrize(
    ("call", "name", "rule"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS]
)
def test_a_value_outside_the_shared_range_is_refused_naming_it(call, name, rule) -> None:  # fmt: skip
    for bad in BAD[rule]:
        with pytest.raises(ValueError) as err:
            call(bad)
        assert str(err.value) == f"{name}: must be {rule}, got {bad!r}"
        # an array: checked element-wise, the first bad element named
        with pytest.raises(ValueError) as err:
            call(np.array([_good(rule), bad]))
        assert str(err.value) == f"{name}: must be {rule}, got {bad!r} (element 1 of 2)"


def _good(rule: str) -> float:
    return {BANDWIDTH: 50e9, FABRIC: 50e9, MESSAGE: 1e9, LATENCY: 5e-6}[rule]


@pytest.mark.parametrize(
    ("call", "name", "rule"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS]
)
def test_the_ends_of_each_range_are_answered(call, name, rule) -> None:  # fmt: skip
    ends = {BANDWIDTH: (1e6, 1e15), MESSAGE: (0.0, 2.0**44), LATENCY: (0.0, 1.0)}
    lo, hi = ends[BANDWIDTH if rule == FABRIC else rule]
    for ok in (lo, hi, np.array([lo, hi])):
        out = call(ok)
        # a number out (a crossover may be inf: the lines never cross), never NaN
        assert not np.isnan(np.asarray(out)).any()


def test_the_qa_calls_are_refused_as_the_sweep_and_ddp_step_refuse_them() -> None:
    sweep_words = _said(lambda: cm.sweep(ranks=64, bandwidth=50, size=14e9))
    step_words = _said(lambda: cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50))
    api_words = _said(lambda: cm.allreduce_time(14e9, 64, 50))
    assert sweep_words == "bandwidth: must be " + BANDWIDTH + ", got 50.0"
    assert step_words == "bandwidth_bytes_per_s: must be " + BANDWIDTH + ", got 50"
    assert api_words == "bandwidth_bytes_per_s: must be " + BANDWIDTH + ", got 50.0"
    # a size past 2**44 B: the words of the cluster form, over one link too
    cluster_words = _said(lambda: cm.allreduce_time(1e30, cm.cluster("dgx-h100")))
    assert _said(lambda: cm.allreduce_time(1e30, 64, 50e9)) == cluster_words
    assert _said(lambda: cm.allreduce_time(14e9, 64, 50e9, 10)) == (
        f"latency_s: must be {LATENCY}, got 10.0"
    )
    assert _said(lambda: cm.sweep(ranks=64, bandwidth=50e9, size=14e9, latency=10)) == (
        f"latency: must be {LATENCY}, got 10.0"
    )


def _said(call: Callable[[], Any]) -> str:
    with pytest.raises(ValueError) as err:
        call()
    return str(err.value)


def test_the_lessons_numbers_and_the_ranges_edges_are_unchanged() -> None:
    assert round(cm.allreduce_time(14e9, 64, 50e9), 3) == 0.551
    assert cm.allreduce_time(0.0, 64, 50e9, 5e-6) == 0.0  # an empty message: nothing sent
    assert cm.bytes_per_rank("all_reduce", 1.0, 8) == 1.75  # a fraction of a byte per rank
    assert cm.bytes_per_rank("all_reduce", 0.5, 8) == 0.875
    # one node needs no fabric: a zero inter-node bandwidth is still answered there
    assert cm.hierarchical_allreduce_time(1e9, 1, 8, 450e9, 0.0) > 0.0
    assert cm.flat_ring_allreduce_time(1e9, 1, 8, 450e9, 0, 0.0) > 0.0
    with pytest.raises(ValueError, match=r"^inter_bandwidth_bytes_per_s: must be > 0 B/s when"):
        cm.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 0.0)


# --- papercuts -----------------------------------------------------------------------------------


def test_min_ranks_names_its_own_argument_and_its_unit() -> None:
    words = _said(lambda: cm.min_ranks(30e9, 80))
    assert words.startswith("memory_bytes: the fewest ranks that fit, 6,000,000,000, are past"), (
        words
    )
    assert "dp_ranks" not in words
    assert words.endswith("; memory_bytes is in bytes: 80 B per GPU here (80 GB is 80e9)"), words
    # a memory of 1 MB or more: no unit hint, the count said exactly (8 MB cards: the count
    # within the parameter limit of 1e15)
    words = _said(lambda: cm.min_ranks(5e14 + 1, 8e6))
    assert words.startswith("memory_bytes: the fewest ranks that fit, 1,000,000,001, are past")
    assert "is in bytes" not in words
    assert cm.min_ranks(30e9, 80e9) == 6


@pytest.mark.parametrize("forgot", [14e9, np.float64(14e9), 14])
def test_collective_time_without_its_op_names_the_op(forgot) -> None:
    words = _said(lambda: cm.collective_time(forgot, 64, 50e9))
    assert words.startswith(
        "op: must be the collective's name, the first argument (all_reduce, reduce_scatter, "
        "all_gather, broadcast, reduce, all_to_all), got 14"
    ), words
    assert "allreduce_time(message_bytes, ranks, bandwidth_bytes_per_s)" in words
    assert "required when ranks" not in words
    # the op in any spelling still answers, with numbers and with a cluster
    assert cm.collective_time("AllReduce", 14e9, 64, 50e9) == cm.allreduce_time(14e9, 64, 50e9)
    assert cm.collective_time("all-reduce", 1e9, "dgx-h100") > 0.0
    assert _said(lambda: cm.collective_time("foo", 1e9, 8, 50e9)).startswith(
        "op: unknown collective 'foo'; allowed: all_reduce"
    )


def test_a_token_count_is_read_by_parse_tokens_and_parse_count_says_so() -> None:
    assert cm.parse_tokens("4Mi") == 4 * 2**20 and cm.parse_tokens("8Ki") == 8192
    assert cm.parse_tokens("8k") == 8000
    words = _said(lambda: cm.parse_count("8Ki"))
    assert words == (
        "count: cannot parse '8Ki'; expected a number with a unit, e.g. '7B', '25M', '1.5e9'; "
        "the binary suffixes Ki, Mi, Gi, Ti are read in token counts only, where '8Ki' is 8192"
    )
    assert re.search(r"'4Mi' is 4194304$", _said(lambda: cm.parse_count("4Mi")))
    # a text no token count reads either gets no hint
    assert "binary" not in _said(lambda: cm.parse_count("8KI"))
    assert cm.parse_count("7B") == 7e9  # the count grammar itself unchanged
