"""Headless app tests from the thirteenth QA pass (a new user in chromium at 1440 and 390 px,
every page, numbers checked against ``python -m costmodel ... --json``). Each test failed on
the defect it names before its fix; tests/test_browser_qa12.py holds the one a browser shows."""

from __future__ import annotations

import pytest

from tests.test_app import _text, assert_clean, open_page

#: A bundled run whose log states its rank count (128) but neither its nodes nor its GPUs per
#: node: the run's index fills both (16 x 8).
RUN_02 = "02_coreweave-16x8xA100-IB_allreduce.txt"


def _facts(at) -> str:
    return next(_text(c.value) for c in at.caption if c.value.startswith("From the log"))


# --- Validate: a shared link's op, nodes or GPUs per node survive its first load ---------------
@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("val_nodes", 32, "nodes = 32 (you set it)"),
        ("val_gpus_per_node", 4, "ranks / 4 GPUs per node (you set it)"),
    ],
)
def test_a_validate_link_without_a_cluster_keeps_its_nodes(key, value, said):
    """A link that set Nodes (or GPUs per node) on a reference run, the cluster left at its
    default (so not in the URL), opened with the box empty and the parameter dropped from the
    URL: the page reset the boxes a new log settles unless the link named a cluster."""
    at = open_page(
        "page_validate.py", {"val_source": "reference", "val_reference": RUN_02, key: str(value)}
    )
    assert_clean(at)
    assert at.number_input(key=key).value == value
    assert at.query_params[key] == str(value)
    assert said in _facts(at)


def test_a_validate_link_with_an_op_keeps_it():
    at = open_page(
        "page_validate.py",
        {"val_source": "reference", "val_reference": RUN_02, "val_op": "all_gather"},
    )
    assert_clean(at)
    assert at.selectbox(key="val_op").value == "all_gather"
    assert at.query_params["val_op"] == "all_gather"
    # the log names all-reduce: the link's op is used, and refused by name
    assert any("op: all_gather contradicts the log" in _text(e.value) for e in at.error)


# --- Memory: the A and B chart's bar names on a phone ---------------------------------------
def test_memory_compare_chart_breaks_long_bar_names_onto_level_lines():
    """The chart's long bar names were tilted by plotly at 390 px and took most of its height
    (tests/test_browser_qa12.py measures it in chromium)."""
    import pandas as pd

    from costmodel import plots

    names = ("A: llama-3.1-8b, N = 8, ZeRO-0, h100-sxm", "B: llama-3.1-8b, N = 8, ZeRO-3 as fsdp")
    frame = pd.DataFrame(
        {"config": [names[0], names[0], names[1]], "part": ["weights", "gradients", "weights"]}
    ).assign(bytes=[16e9, 16e9, 2e9])
    fig = plots.memory_compare_figure(frame, capacities={n: 85.5e9 for n in names})
    axis = fig.layout.xaxis
    assert axis.tickangle == 0
    assert list(axis.tickvals) == list(names)  # the bars keep their full names (the hover's)
    for text, name in zip(axis.ticktext, names, strict=True):
        lines = text.split("<br>")
        assert len(lines) > 1 and all(len(x) <= plots.ROW_LABEL_CHARS for x in lines)
        assert " ".join(lines) == name
    # the stages' chart keeps its short names on one line
    stages = plots.memory_stack_figure(frame.assign(config="ZeRO-3"))
    assert list(stages.layout.xaxis.ticktext) == ["ZeRO-3"]
