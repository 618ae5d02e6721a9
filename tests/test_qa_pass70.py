"""QA pass 70: a step sweep's ``strategy=all`` is counted before any layout is built.

``MAX_STEP_ROWS`` is "checked before evaluating" (docs/CONTRACTS.md), but a ``strategy=all``
grid was counted by building every layout of every rank count (``candidate_layouts``, a loop
over every number below the ranks, and a preset read per node count): ``nodes=1..10000``
took about two minutes to be refused. The count now comes from ``candidate_count`` (the fixed
layouts plus ``hsdp_group_sizes``, the rule ``candidate_layouts`` itself uses).
"""

from __future__ import annotations

import pytest

from costmodel.strategy import advisor
from costmodel.sweep import grid as gridmod
from costmodel.sweep.grid import MAX_STEP_ROWS, make_grid


def _brute_groups(ranks: int, gpn: int) -> list[int]:
    """The hsdp rule as candidate_layouts wrote it: every g in 2..ranks-1."""
    return [g for g in range(2, ranks) if ranks % g == 0 and (gpn % g == 0 or g % gpn == 0)]


@pytest.mark.parametrize("gpn", [1, 2, 4, 6, 8, 16])
def test_hsdp_groups_match_the_rule(gpn: int) -> None:
    for ranks in range(1, 400):
        assert advisor.hsdp_group_sizes(ranks, gpn) == _brute_groups(ranks, gpn), (ranks, gpn)
        assert advisor.candidate_count(ranks, gpn) == len(advisor.candidate_layouts(ranks, gpn))


@pytest.mark.parametrize(
    "axes",
    [
        {"preset": "dgx-h100", "arch": "llama-3.1-8b", "nodes": "1..40"},
        {"preset": "dgx-h100", "params": "7B", "nodes": "1..12", "gpus_per_node": "2,4,8"},
        {"preset": "dgx-h100", "params": "7B", "ranks": "8,16,24,64", "micro_batch": "1,2"},
        {"preset": "dgx-h100,dgx-a100", "params": "7B", "nodes": "1..6", "recipe": "mixed-adam"},
    ],
)
def test_count_equals_the_expanded_blocks(axes: dict[str, str]) -> None:
    g = make_grid(kind="step", strategy="all", **axes)
    expanded = sum(n for _, n in gridmod._combos(g))
    assert g.rows == expanded


def test_big_all_grid_refused_without_building_a_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> list[dict[str, object]]:
        raise AssertionError("candidate_layouts called while counting the rows")

    monkeypatch.setattr(advisor, "candidate_layouts", boom)
    with pytest.raises(ValueError, match="MAX_STEP_ROWS") as err:
        make_grid(
            kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes="1..10000", strategy="all"
        )
    assert f"at most {MAX_STEP_ROWS:,} per step sweep" in str(err.value)
    assert "153,668 step rows" in str(err.value)


# A memory sweep's strategy=all gave one piece per rank count and layout (a row each), each
# sized by its own _eval_memory call: about 130 rows/s against thousands with named
# strategies. The pieces of one layout are now sized together, rows in the same order.


def _memory_all(**axes: str) -> gridmod.Grid:
    return make_grid(kind="memory", preset="dgx-h100", params="7B", strategy="all", **axes)


@pytest.mark.parametrize(
    "axes",
    [
        {"nodes": "1..24"},
        {"ranks": "8,12,16,24,64"},
        {"nodes": "1..6", "gpus_per_node": "2,8"},
        {"nodes": "1..4", "recipe": "mixed-adam,fp8-mixed", "cuda_context": "0,1GB"},
    ],
)
def test_memory_all_grouped_rows_equal_each_piece_alone(
    axes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from costmodel.sweep import evaluate as ev

    g = _memory_all(**axes)
    grouped = ev._unify(list(ev.iter_sweep(g)))

    def one_by_one(kind: str, pieces: list, get_cluster: object) -> list:
        return [ev._to_table(ev._eval_block(kind, c, n, get_cluster), k) for c, n, k in pieces]

    monkeypatch.setattr(ev, "_eval_pieces", one_by_one)
    alone = ev._unify(list(ev.iter_sweep(g)))
    assert grouped.num_rows == g.rows == alone.num_rows
    assert grouped.schema.names == alone.schema.names
    assert grouped.equals(alone)


def test_memory_all_sized_once_per_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    from costmodel.sweep import evaluate as ev

    calls: list[int] = []
    real = ev._eval_memory

    def counted(cat: dict, num: dict, get_cluster: object) -> dict:
        calls.append(1)
        return real(cat, num, get_cluster)

    monkeypatch.setattr(ev, "_eval_memory", counted)
    g = _memory_all(nodes="1..40")
    table = ev._unify(list(ev.iter_sweep(g)))
    assert table.num_rows == g.rows
    # ddp, zero1, zero2, fsdp (two) and hsdp g=2,4,8 at every node count, then 8 x each
    # divisor of the nodes: one call per distinct layout, not one per row
    assert len(calls) < g.rows / 5
