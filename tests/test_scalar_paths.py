"""Scalar fast paths of the formula functions.

A Python number in gives a Python ``float`` (or ``int``) out, equal bit for bit to the array
path on the same inputs, and bad input raises the same ValueError naming the field. The array
path is reached here with one-element numpy arrays (numpy scalars and arrays never take the
fast path). Speed is measured in ``benchmarks/bench_formulas.py``, not here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from costmodel import batch, collectives, memory, topology

SIZES = [0, 1, 8.0, 1e6, 123456789.0, 16 * 2.0**30]
RANKS = [1, 2, 3, 7, 8.0, 64, 1000, 4096]


def _arr(args):
    """The same arguments with every number as a one-element float array."""
    return [np.array([a], dtype=float) if type(a) in (int, float) else a for a in args]


def _same(fn, *args, **kw):
    fast = fn(*args, **kw)
    slow = fn(*_arr(args), **kw)
    assert type(fast) in (float, int), (fn.__name__, args, type(fast))
    want = np.asarray(slow).item()
    assert fast == want or (math.isinf(fast) and math.isinf(want)), (fn.__name__, args, fast, want)
    return fast


def _same_error(fn, *args, **kw):
    with pytest.raises(ValueError) as fast:
        fn(*args, **kw)
    with pytest.raises(ValueError) as slow:
        fn(*_arr(args), **kw)
    # the field named first (before the colon) and the rule are the same on both paths
    assert str(fast.value).split(" got ")[0] == str(slow.value).split(" got ")[0]


@pytest.mark.parametrize("op", collectives.OPS)
def test_collectives_scalar_equals_array(op):
    for alg in collectives.ALGORITHMS[op]:
        for m, n in itertools.product(SIZES, RANKS):
            _same(collectives.bytes_per_rank, op, m, n, alg)
            _same(collectives.latency_steps, op, n, alg)
            _same(collectives.collective_time, op, m, n, 50e9, 5e-6, alg, 1e-12)
        for n in RANKS:
            _same(collectives.busbw_factor, op, n)
            _same(collectives.bus_bandwidth, op, 1e9, n, 0.0123)
            for other in collectives.ALGORITHMS[op]:
                for a in (0.0, 5e-6):
                    _same(collectives.crossover_bytes, alg, other, n, 50e9, a, op)


def test_bandwidth_helpers_scalar_equals_array():
    for m, n in itertools.product(SIZES, RANKS):
        _same(collectives.allreduce_lower_bound_bytes, m, n)
        _same(collectives.algorithm_bandwidth, m, 0.37)


@pytest.mark.parametrize("sharp", [False, True])
def test_topology_scalar_equals_array(sharp):
    for m, nodes, g in itertools.product(SIZES, [1, 2, 5, 64], [1, 2, 8]):
        fast = topology.hierarchical_allreduce_phases(
            m, nodes, g, 450e9, 50e9, 1e-6, 5e-6, in_network_reduction=sharp
        )
        slow = topology.hierarchical_allreduce_phases(
            *_arr([m, nodes, g, 450e9, 50e9, 1e-6, 5e-6]), in_network_reduction=sharp
        )
        for k in topology.PHASES:
            assert type(fast[k]) is float and fast[k] == np.asarray(slow[k]).item(), k
        for mode in topology.MODES:
            _same(
                topology.hierarchical_allreduce_time,
                m, nodes, g, 450e9, 50e9, 1e-6, 5e-6, mode=mode, in_network_reduction=sharp,
            )  # fmt: skip
        for nics, intra in itertools.product([1, 4, 8], [25e9, 450e9]):
            _same(topology.flat_ring_bandwidth, nodes, g, intra, nics, 50e9)
            _same(topology.flat_ring_allreduce_time, m, nodes, g, intra, nics, 50e9, 1e-6, 5e-6)
            _same(topology.per_gpu_inter_bandwidth, nics, 50e9, g)


def test_batch_and_memory_scalar_equals_array():
    for b, n, a in itertools.product([1, 3, 4.0], [1, 8, 256], [1, 32]):
        assert type(batch.global_batch(b, n, a)) is int
        _same(batch.global_batch, b, n, a)
        _same(batch.tokens_per_step, b * n, 2048)
    for lr, old, new, rule in itertools.product(
        [0.1, 3e-4], [256, 1000.0], [7, 8192], batch.LR_RULES
    ):
        _same(batch.scale_learning_rate, lr, old, new, rule=rule)
    for rec in ("none", "selective", "full"):
        _same(memory.activation_bytes, 32, 4096, 2048.0, 3, 32, rec)
    for recipe, stage, n in itertools.product(memory.RECIPES, memory.ZERO_STAGES, [1, 8, 64.0]):
        fast = memory.state_bytes_per_param(recipe, stage, n)
        slow = memory.state_bytes_per_param(recipe, stage, np.array([n]))
        assert all(type(v) is float and v == np.asarray(slow[k]).item() for k, v in fast.items())
        for cap in (16e9, 80e9, 1.0):
            _same(
                memory.max_params, cap, recipe, dp_ranks=n, zero_stage=stage,
                activations_bytes=3e9, ddp_bucket_copy=stage <= 1,
                cuda_context_bytes=6e8, fragmentation=0.05,
            )  # fmt: skip


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (collectives.bytes_per_rank, ("all_reduce", -1.0, 8)),
        (collectives.bytes_per_rank, ("all_reduce", 1e6, 2.5)),
        (collectives.latency_steps, ("all_reduce", 0)),
        (collectives.busbw_factor, ("all_reduce", math.inf)),
        (collectives.algorithm_bandwidth, (1e9, 0.0)),
        (collectives.bus_bandwidth, ("all_reduce", math.nan, 8, 0.1)),
        (collectives.allreduce_lower_bound_bytes, (1e9, 0.5)),
        (collectives.crossover_bytes, ("ring", "tree", 8, 0.0, 5e-6)),
        (collectives.crossover_bytes, ("ring", "tree", 8, 50e9, -1.0)),
        (topology.hierarchical_allreduce_time, (1e9, 2, 8, 450e9, 0.0)),
        (topology.hierarchical_allreduce_time, (1e9, 0, 8, 450e9, 50e9)),
        (topology.hierarchical_allreduce_time, (1e9, 2, 8, -450e9, 50e9)),
        (topology.flat_ring_bandwidth, (2, 8, 450e9, 0, 50e9)),
        (topology.flat_ring_bandwidth, (2, 8, 450e9, 1.5, 50e9)),
        (topology.flat_ring_allreduce_time, (1e9, 2, 8, 450e9, 8, 50e9, -1.0)),
        (topology.per_gpu_inter_bandwidth, (8, 50e9, 0)),
        (batch.scale_learning_rate, (0.0, 256, 512)),
        (batch.scale_learning_rate, (0.1, 256, math.inf)),
        (memory.activation_bytes, (0, 4096, 2048, 1, 32)),
        (memory.max_params, (0.0,)),
        (lambda mem, n: memory.max_params(mem, zero_stage=1, dp_ranks=n), (80e9, 2.5)),
    ],
)
def test_scalar_path_refuses_what_the_array_path_refuses(fn, args):
    _same_error(fn, *args)


def test_batch_scalar_refuses_fractions():
    with pytest.raises(ValueError, match="ranks: must be a whole number in 1..1,000,000,000"):
        batch.global_batch(4, 2.5)
    with pytest.raises(
        ValueError, match="sequence_length: must be a whole number in 1..100,000,000"
    ):
        batch.tokens_per_step(8, 0)
