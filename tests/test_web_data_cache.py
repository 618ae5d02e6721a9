"""The app's cached data helpers answer what the library answers.

The Cluster page's sweep is cached per GPU count, and the Validate page's comparison is keyed
by the log text instead of a DataFrame; these tests hold both to the uncached library calls.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from costmodel import predict, presets
from costmodel.reference import reference_dir
from costmodel.validation.compare import cluster_predictor, compare, summarize
from costmodel.validation.nccl_tests import parse_nccl_tests
from costmodel.validation.reference_runs import run_spec
from costmodel.web import data

logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime": caches work in memory

LOG = "02_coreweave-16x8xA100-IB_allreduce.txt"
HOSTS_LOG = "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"  # has host lines


@pytest.mark.parametrize("model", ["nccl", "textbook", "lesson"])
def test_hierarchy_sweep_rows_equal_direct_predictions(model):
    facts = data.cluster_facts("dgx-h100", 4, None)
    small = data.hierarchy_sweep("dgx-h100", facts, 2**28, False, 4, model)
    big = data.hierarchy_sweep("dgx-h100", facts, 2**28, False, 6, model)  # 6: not a power of two
    assert list(big["nodes"])[-1] == 6 and 6 not in set(small["nodes"])
    for frame in (small, big):
        for row in frame.itertuples():
            c = presets.cluster("dgx-h100", nodes=row.nodes, gpus_per_node=row.gpus_per_node)
            kw = dict(nodes=c.nodes, gpus_per_node=c.gpus_per_node)
            want = predict.predict_collective("all_reduce", 2.0**28, c, model=model, **kw)
            assert row.model_s == float(want.time_s)
            assert row.model_algorithm == f"{want.algorithm}/{want.protocol}"
            nccl = predict.predict_collective("all_reduce", 2.0**28, c, model="nccl", **kw)
            assert row.nccl_s == float(nccl.time_s)
    shared = small.merge(big, on=["nodes", "gpus_per_node"], suffixes=("", "_big"))
    assert len(shared) == len(small)
    np.testing.assert_array_equal(shared["flat_ring_s"], shared["flat_ring_s_big"])


@pytest.mark.parametrize("in_place", [False, True])
def test_compare_text_equals_compare_of_the_parsed_rows(in_place):
    text = (reference_dir("nccl-tests") / LOG).read_text()
    measured = parse_nccl_tests(text, source=LOG, strict=False)
    # a bundled run's GPUs per node, which its log does not state, come from the runs' index
    # (costmodel.validation.reference_runs), as on the page and in `validate compare`
    gpn = run_spec(LOG.split("_")[0]).gpus_per_node
    measured["gpus_per_node"] = measured["gpus_per_node"].fillna(gpn)
    if not in_place:
        measured = measured[measured["placement"] != "in_place"]
    want = compare(measured, cluster_predictor("dgx-a100", model="nccl"), model="nccl")
    settings = (None, None, None, "both" if in_place else "out-of-place")
    got = data.compare_text(text, LOG, settings, "dgx-a100", "nccl")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    pd.testing.assert_frame_equal(
        data.summarize_text(text, LOG, settings, "dgx-a100", "nccl").reset_index(drop=True),
        summarize(want).reset_index(drop=True),
    )


def test_in_place_choice_changes_the_rows_compared():
    text = (reference_dir("nccl-tests") / LOG).read_text()
    both = data.compare_text(text, LOG, (None, None, None, "both"), "dgx-a100", "nccl")
    oop = (None, None, None, "out-of-place")
    out_of_place = data.compare_text(text, LOG, oop, "dgx-a100", "nccl")
    assert set(out_of_place["placement"]) == {"out_of_place"}
    assert len(both) == 2 * len(out_of_place)
    # a log with no host lines that is not a bundled run (one byte added, another name):
    # calibration never assumes the node count (the comparison does, and says so); nodes set
    # by the user are used. 02 itself takes its 16 nodes from the runs' index, a stated fact.
    mine = text + "\n# a copy\n"
    with pytest.raises(ValueError, match="node"):
        data.calibrated_toml_text(mine, "mine.txt", ("all_reduce", *oop[1:]), "dgx-a100", "x")
    assert "name" in data.calibrated_toml_text(text, LOG, oop, "dgx-a100", "calibrated-x")
    toml = data.calibrated_toml_text(text, LOG, (None, 16, None, "out-of-place"), "dgx-a100", "c")
    assert "name" in toml
    hosts = (reference_dir("nccl-tests") / HOSTS_LOG).read_text()
    toml = data.calibrated_toml_text(hosts, HOSTS_LOG, oop, "dell-xe9680-h100", "calibrated-x")
    assert "calibrated-x" in toml
    # the same road as `costmodel calibrate --cluster`: the page's cluster is the base and the
    # preset carries the fabric terms with how much of each fitted shift was kept
    assert 'base = "dell-xe9680-h100"' in toml and "[[fabric]]" in toml and "kept:" in toml


def test_scenario_without_timeline_has_the_same_totals():
    from costmodel.scenario import Scenario

    sc = Scenario(params=70e9, cluster="dgx-h100", nodes=4)
    full = sc.evaluate(scaling=True, flips=True).model_dump()
    lean = sc.evaluate(scaling=True, flips=True, timeline=False).model_dump()
    assert len(full.pop("timeline")) > 1000 and lean.pop("timeline") == []
    assert full == lean


# --- figures and tables shared across reruns and sessions --------------------------------------
def _parts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config": ["ZeRO-0", "ZeRO-0", "ZeRO-3", "ZeRO-3"],
            "part": ["weights", "optimizer states", "weights", "optimizer states"],
            "bytes": [14e9, 84e9, 1.75e9, 10.5e9],
        }
    )


def _spec(figure) -> dict:
    import json

    return json.loads(figure.to_json())  # key order aside, what the browser receives


def test_a_shared_figure_is_the_built_one_and_each_caller_gets_its_own_copy():
    from costmodel import plots

    built = plots.memory_stack_figure.uncached(_parts(), capacity_bytes=80e9, title="t")
    first = plots.memory_stack_figure(_parts(), capacity_bytes=80e9, title="t")
    assert _spec(first) == _spec(built)
    plots.band_trace(first, [1.0, 2.0], [1.0, 2.0], [0.9, 0.9], [1.1, 1.1])  # callers add to it
    plots.clear_of_toolbar(first)
    again = plots.memory_stack_figure(_parts(), capacity_bytes=80e9, title="t")
    assert _spec(again) == _spec(built) and len(first.data) == len(built.data) + 2
    other = plots.memory_stack_figure(_parts(), capacity_bytes=40e9, title="t")
    assert _spec(other) != _spec(built)  # another argument value: another figure


def test_figure_builders_run_once_per_distinct_arguments(monkeypatch):
    from costmodel import plots

    calls = []
    real = plots.memory_stack_figure.uncached
    shared = plots._shared_figure(lambda *a, **k: calls.append(a) or real(*a, **k))
    title = f"count {len(plots._figures)}"
    for _ in range(3):
        shared(_parts(), capacity_bytes=80e9, title=title)  # an equal frame, a new object
    assert len(calls) == 1
    monkeypatch.setattr(plots, "FIGURE_CACHE_ENTRIES", 2)
    for cap in (1e9, 2e9, 3e9):
        shared(_parts(), capacity_bytes=cap, title=title)
    assert len(plots._figures) == 2 and len(calls) == 4  # bounded: the oldest went first
    monkeypatch.setattr(plots, "FIGURE_CACHE_MAX_INPUT_BYTES", 10)
    shared(_parts(), capacity_bytes=3e9, title=title)  # too large to keep: built again
    assert len(calls) == 5


def test_a_table_is_rendered_once_and_shows_what_pandas_renders(monkeypatch):
    from pandas.io.formats.style import Styler
    from streamlit.elements.lib.pandas_styler_utils import marshall_styler
    from streamlit.proto.ArrowData_pb2 import ArrowData

    from costmodel.web import common

    def display(styler) -> pd.DataFrame:
        from streamlit import dataframe_util

        proto = ArrowData()
        marshall_styler(proto, styler, "u")
        return dataframe_util.convert_arrow_bytes_to_pandas_df(proto.styler.display_values)

    frame = pd.DataFrame({"time_s": [5e-5, 1.25e-3, 2.5], "message_bytes": [8.0, 2**30, 1e12]})
    want = display(frame.style.format({c: common.column_formatter(c) for c in frame.columns}))
    translated = []
    real = Styler._translate
    monkeypatch.setattr(
        Styler, "_translate", lambda s, *a, **k: translated.append(1) or real(s, *a, **k)
    )
    common._translated.clear()
    for _ in range(3):  # three reruns (or sessions) showing the same table
        got = display(common.styled(frame.copy()))
        pd.testing.assert_frame_equal(got, want)
    assert len(translated) == 1 and got.loc[0, "time_s"] == "50 µs"
    changed = frame.assign(time_s=[1.0, 2.0, 3.0])
    assert display(common.styled(changed)).loc[0, "time_s"] == "1 s" and len(translated) == 2
