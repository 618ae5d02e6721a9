"""The advisor's table is the per-configuration steps, made from fewer predictions.

The advisor shares its collective predictions (one ``predict_collective`` call per op and
cluster, hinted sizes included); that may not change a number. The speed goal itself is measured side by side in
benchmarks/bench_strategy.py; here the deterministic part of it (the count of predictions a
table makes) is bounded.
"""

from __future__ import annotations

import pytest

import costmodel.predict
from costmodel.strategy.advisor import advise
from costmodel.strategy.comm import PredictionCache
from costmodel.strategy.step import strategy_step
from tests._compare import assert_same

REL = 1e-9


def _same(a: object, b: object, where: str) -> None:
    assert_same(a, b, where, rel=REL)


SETUPS = [
    # an architecture, NCCL's model, the band; two node counts sharing one cache
    ({"arch": "llama-3.1-8b", "cluster": "dgx-h100"}, (1, 3)),
    # a bare count with accumulation (the per-micro-batch schedules) on another cluster
    ({"cluster": "dgx-a100", "micro_batch": 2, "accumulation": 2, "params": 3e9}, (2,)),
    # contention > 0 (the event-by-event engine), bf16 gradients, the lesson's model
    (
        {
            "arch": "llama-2-7b",
            "cluster": "dgx-h100",
            "comm_contention": 0.5,
            "grad_dtype": "bf16",
            "model": "lesson",
        },
        (2,),
    ),
]


@pytest.mark.parametrize(("setup", "node_counts"), SETUPS)
def test_advisor_table_is_the_per_configuration_steps(setup, node_counts):
    kw = dict(setup)
    params = kw.pop("params", None)
    cache = PredictionCache()
    for nodes in node_counts:
        a = advise(params, nodes=nodes, predictions=cache, **kw)
        assert len(a.steps) >= 5
        for s in a.steps:
            lay = s.layout
            opts = {
                k: getattr(lay, k)
                for k in ("strategy", "group_size", "reshard_after_forward")
                if getattr(lay, k) is not None
            }
            alone = strategy_step(params, nodes=nodes, timeline=False, **opts, **kw)
            assert alone.layout.name == lay.name
            _same(alone.as_dict(), s.as_dict(), f"{nodes} nodes {lay.name}")


def test_an_advisor_table_predicts_each_op_on_each_cluster_once(monkeypatch):
    calls: list[tuple[str, int, int]] = []
    real = costmodel.predict.predict_collective

    def counting(op, sizes, cluster, *a, **k):
        calls.append((op, int(cluster.nodes), int(cluster.gpus_per_node)))
        return real(op, sizes, cluster, *a, **k)

    monkeypatch.setattr(costmodel.predict, "predict_collective", counting)
    strategies = [
        {"strategy": "ddp"},
        {"strategy": "zero1"},
        {"strategy": "zero2"},
        {"strategy": "fsdp"},
        {"strategy": "fsdp", "reshard_after_forward": False},
        {"strategy": "hsdp"},
    ]
    cache = PredictionCache()
    for nodes in (1, 2, 3, 4):
        s = [x for x in strategies if x["strategy"] != "hsdp" or nodes > 1]
        advise(arch="llama-3.1-8b", nodes=nodes, strategies=s, predictions=cache, band=True)
    # one node: all-reduce, reduce-scatter and all-gather over its 8 GPUs; then per node count
    # the same three over the job and the all-reduce across its nodes (one GPU each); HSDP's
    # 8-GPU group is the one-node cluster already predicted, unit sizes included (hinted)
    assert len(calls) == len(set(calls)) == cache.calls == 3 + 3 * 4
    assert {c for c in calls if c[0] == "all_reduce" and c[2] == 1} == {
        ("all_reduce", n, 1) for n in (2, 3, 4)
    }
