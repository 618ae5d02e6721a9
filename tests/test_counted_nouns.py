"""Counts are written with their noun in the right number ("1 node", "2 nodes"), through one
helper (costmodel.units.format_counted / noun_for), in the CLI and on every app page: never
"node(s)", "line(s)", "1 ranks" or "1 GPUs"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from costmodel import units
from tests._cli import run
from tests.test_app import _text, assert_clean, open_page

PACKAGE = Path(__file__).resolve().parents[1] / "costmodel"
_HEDGED = re.compile(r"\b[a-z]+\(s\)")


def test_format_counted_is_singular_for_one_only():
    assert units.format_counted(1, "node") == "1 node"
    assert units.format_counted(2, "node") == "2 nodes"
    assert units.format_counted(0, "finding") == "0 findings"
    assert units.format_counted(1000, "GPU") == "1,000 GPUs"
    assert units.noun_for(1, "entry", "entries") == "entry"
    assert units.noun_for(3, "entry", "entries") == "entries"


def test_no_text_in_the_package_hedges_a_plural_with_parentheses():
    """A string (or f-string part) such as "node(s)" would be written to a user as is."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and _HEDGED.search(node.value)
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_collectives_side_by_side_names_one_node_in_the_singular():
    at = open_page(
        "page_collectives.py",
        {
            "view": "A model on a cluster preset",
            "nccl_nodes": "1",
            "size_text": "1GB",
            "coll_compare": "true",
            "pin_cluster": "dgx-a100",
            "pin_nodes": "1",
            "pin_model": "nccl",
        },
    )
    assert_clean(at)
    said = [_text(m.value) for m in at.markdown if "Side by side" in _text(m.value)]
    assert said, [_text(m.value) for m in at.markdown]
    assert "dgx-h100, 1 node, nccl" in said[0] and "dgx-a100, 1 node, nccl" in said[0], said
    assert "node(s)" not in said[0] and "1 nodes" not in said[0]


def test_collectives_side_by_side_names_several_nodes_in_the_plural():
    at = open_page(
        "page_collectives.py",
        {
            "view": "A model on a cluster preset",
            "nccl_nodes": "2",
            "size_text": "1GB",
            "coll_compare": "true",
            "pin_cluster": "dgx-h100",
            "pin_nodes": "4",
            "pin_model": "nccl",
        },
    )
    assert_clean(at)
    said = [_text(m.value) for m in at.markdown if "Side by side" in _text(m.value)]
    assert "dgx-h100, 2 nodes, nccl" in said[0] and "dgx-h100, 4 nodes, nccl" in said[0], said


def test_step_page_scaling_warning_names_one_node_in_the_singular():
    """7B under DDP on 80 GB cards does not fit at any node count of the scaling chart; with a
    single point (nodes 1 only is not a page input) the word follows the count: the page's
    warning lists the counts then one noun, plural for several counts."""
    at = open_page("page_ddp.py", {"ddp_chart_tab": "Scaling vs GPU count"})
    assert_clean(at)
    texts = [
        _text(w.value) for w in at.warning if "Does not fit in GPU memory at" in _text(w.value)
    ]
    assert texts, [_text(w.value) for w in at.warning]
    counts = texts[0].split(" at ", 1)[1].split(":", 1)[0]  # "1, 2, 4 nodes" or "1 node"
    numbers = counts.rsplit(" ", 1)[0].split(", ")
    word = counts.rsplit(" ", 1)[1]
    assert word == ("node" if numbers == ["1"] else "nodes"), texts[0]
    assert "node(s)" not in texts[0]


def test_cli_memory_on_one_rank_says_rank():
    out = run("memory", "--params", "7B", "--ranks", "1").stdout
    assert "ZeRO-0 over 1 rank " in out, out.splitlines()[0]
    out = run("memory", "--params", "7B", "--ranks", "8").stdout
    assert "ZeRO-0 over 8 ranks " in out, out.splitlines()[0]


def test_error_band_notes_count_runs_and_sources_in_the_right_number():
    """A regime measured by one run of one source said "(1 runs from 1 sources, ...)"."""
    import numpy as np

    from costmodel import presets
    from costmodel.predict import predict_collective

    notes = set()
    for name in presets.names("cluster"):
        for nodes in (1, 2):
            try:
                p = predict_collective("all_reduce", np.array([1e6, 1e9]), name, nodes=nodes)
            except ValueError:  # a preset with no network between nodes
                continue
            notes.add(str(p.error_band.note))
    counted = [n for n in notes if re.search(r"\d+ runs? from \d+ sources?", n)]
    assert counted, sorted(notes)[:3]
    bad = [n for n in notes if re.search(r"\b1 (runs|sources)\b", n)]
    assert not bad, bad
