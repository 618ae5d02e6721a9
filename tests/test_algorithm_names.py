"""One name per algorithm in the lesson and textbook collective models.

``models.textbook_algorithms`` appended "ring" to every op's list, so all-to-all listed
``ring`` beside ``pairwise`` and broadcast/reduce ``ring`` beside ``chain``: the same formula
(``collectives.canonical_algorithm``) twice, with identical times, and the textbook model's
automatic choice answered ``ring`` where the lesson model answered ``pairwise``/``chain``.
Now both models list and answer the canonical name; ``ring`` stays accepted as an input alias
(CLI, API, sweeps, the app's links) and gives the same time as the canonical name.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel import cli, collectives, models, sweep
from costmodel.predict import predict_all_algorithms, predict_collective

ALPHA_BETA = (models.LESSON, models.TEXTBOOK)
#: the ops whose "ring" input names another row (canonical_algorithm)
ALIASED = {"all_to_all": "pairwise", "broadcast": "chain", "reduce": "chain"}
SIZE = 2**28


def _formula(op: str, name: str) -> str:
    """The row a listed name stands for; the cluster-only all-reduce algorithms are their own."""
    if name in models.CLUSTER_ALLREDUCE_ALGORITHMS:
        return name
    return collectives.canonical_algorithm(op, name)


@pytest.mark.parametrize("model", ALPHA_BETA)
@pytest.mark.parametrize("op", collectives.OPS)
def test_all_lists_each_formula_once_and_auto_is_listed(model, op):
    listed = models.textbook_algorithms(model, op)
    formulas = [_formula(op, a) for a in listed]
    assert len(formulas) == len(set(formulas)), listed
    # every listed name is canonical: the name the model answers with when pinned
    assert all(_formula(op, a) == a for a in listed), listed
    auto = predict_collective(op, SIZE, "dgx-h100", 2, model=model)
    assert auto.algorithm in listed
    # the "all" expansion on a cluster (CLI --algorithm all, the Collectives page)
    cmp = predict_all_algorithms(op, SIZE, "dgx-h100", 2, model=model)
    names = list(cmp.frame["algorithm"]) + [a for a, _ in cmp.unavailable]
    assert len(names) == len(set(names)) and set(names) <= set(listed), names
    chosen = cmp.frame[cmp.frame["chosen"]]["algorithm"].tolist()
    assert chosen == [auto.algorithm]


@pytest.mark.parametrize("op", collectives.OPS)
def test_lesson_and_textbook_name_the_same_algorithm_alike(op):
    lesson = predict_collective(op, SIZE, "dgx-h100", 2, model="lesson").algorithm
    textbook = predict_collective(op, SIZE, "dgx-h100", 2, model="textbook").algorithm
    assert lesson == textbook == models.LESSON_DEFAULT_ALGORITHM[op]
    for name in collectives.ALGORITHMS[op]:
        if name == "nvls":  # refused across nodes without SHARP by both models
            continue
        a = predict_collective(op, SIZE, "dgx-h100", 2, model="lesson", algorithm=name)
        b = predict_collective(op, SIZE, "dgx-h100", 2, model="textbook", algorithm=name)
        assert a.algorithm == b.algorithm == name


@pytest.mark.parametrize("model", ALPHA_BETA)
@pytest.mark.parametrize(("op", "canonical"), ALIASED.items())
def test_ring_input_runs_the_canonical_row_through_the_api(model, op, canonical):
    ring = predict_collective(op, SIZE, "dgx-h100", 2, model=model, algorithm="ring")
    named = predict_collective(op, SIZE, "dgx-h100", 2, model=model, algorithm=canonical)
    assert ring.algorithm == named.algorithm == canonical
    assert ring.time_s == named.time_s > 0
    # the lesson model's auto is the same row too: the old "ring" answer kept its time
    auto = predict_collective(op, SIZE, "dgx-h100", 2, model=model)
    assert auto.time_s == named.time_s


@pytest.mark.parametrize("model", ALPHA_BETA)
@pytest.mark.parametrize(("op", "canonical"), ALIASED.items())
def test_ring_input_on_the_cli(model, op, canonical):
    def run(algorithm: str) -> dict:
        args = ["collective", op, "-s", "256MiB", "--cluster", "dgx-h100", "--nodes", "2"]
        result = CliRunner().invoke(
            cli.app, [*args, "--model", model, "--algorithm", algorithm, "--json"]
        )
        assert result.exit_code == 0, result.output
        (row,) = json.loads(result.output)["results"]
        return row

    ring, named = run("ring"), run(canonical)
    # the request as given, the algorithm that ran (the sweeps' requested vs used columns)
    assert (ring["algorithm"], ring["algorithm_used"]) == ("ring", canonical)
    assert (named["algorithm"], named["algorithm_used"]) == (canonical, canonical)
    assert ring["time_s"] == named["time_s"] > 0


@pytest.mark.parametrize("model", ALPHA_BETA)
def test_cli_all_lists_no_ring_row_where_ring_is_an_alias(model):
    for op, canonical in ALIASED.items():
        result = CliRunner().invoke(
            cli.app,
            ["collective", op, "-s", "1GB", "--cluster", "dgx-h100", "--nodes", "2"]
            + ["--model", model, "--algorithm", "all", "--json"],
        )
        assert result.exit_code == 0, result.output
        rows = json.loads(result.output)["results"]
        assert canonical in {r["algorithm"] for r in rows}
        assert "ring" not in {r["algorithm"] for r in rows}, rows


def test_an_unknown_algorithm_names_the_alias():
    with pytest.raises(ValueError, match=r"allowed: auto, pairwise.*ring \(alias of pairwise\)"):
        predict_collective("all_to_all", SIZE, "dgx-h100", 2, model="lesson", algorithm="tree")


@pytest.mark.parametrize("model", ALPHA_BETA)
def test_ring_input_in_a_sweep(model):
    df = sweep.sweep(
        preset="dgx-h100",
        model=model,
        op="all_to_all,broadcast,reduce",
        algorithm="ring",
        nodes="1,2",
        size="1MB,1GB",
    )
    assert (df["error"] == "").all()
    assert set(df["algorithm"]) == {"ring"}
    for op, canonical in ALIASED.items():
        rows = df[df["op"] == op]
        assert set(rows["algorithm_used"]) == {canonical}
        same = sweep.sweep(
            preset="dgx-h100",
            model=model,
            op=op,
            algorithm=canonical,
            nodes="1,2",
            size="1MB,1GB",
        )
        np.testing.assert_array_equal(rows["time_s"].to_numpy(), same["time_s"].to_numpy())
        assert set(same["algorithm_used"]) == {canonical}


@pytest.mark.parametrize("model", ALPHA_BETA)
def test_sweep_all_has_no_duplicate_formula(model):
    df = sweep.sweep(preset="dgx-h100", model=model, op="all", algorithm="all", size="1GB")
    for op, rows in df.groupby("op"):
        names = rows["algorithm"].tolist()
        formulas = [_formula(str(op), a) for a in names]
        assert len(formulas) == len(set(formulas)), (op, names)


@pytest.mark.parametrize(
    ("op", "given", "shown"),
    [
        ("all_to_all", ["ring"], ["pairwise"]),
        ("broadcast", ["ring", "binomial_tree"], ["chain", "binomial_tree"]),
        ("reduce", ["ring"], ["chain"]),
    ],
)
def test_app_links_with_ring_open_the_canonical_name(op, given, shown):
    """The Collectives page's one-link view: a link naming ``ring`` opens its row, no red
    "not a choice" message, and the URL then carries the canonical name."""
    from tests.test_app import assert_clean, open_page

    at = open_page("page_collectives.py", {"view": "link", "op": op, f"algorithms_{op}": given})
    assert_clean(at)
    assert [m.value for m in at.multiselect] == [shown]
    assert "ring" not in at.query_params.get(f"algorithms_{op}", [])
