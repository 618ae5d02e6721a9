"""The app's cached data helpers (issue 12 item 3) answer what the library answers.

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
    # 02 has no host lines: calibration never assumes the node count (the comparison does, and
    # says so); nodes set by the user are used
    with pytest.raises(ValueError, match="node"):
        data.calibrated_toml_text(text, LOG, oop, "dgx-a100", "calibrated-x")
    toml = data.calibrated_toml_text(text, LOG, (None, 16, None, "out-of-place"), "dgx-a100", "c")
    assert "name" in toml
    hosts = (reference_dir("nccl-tests") / HOSTS_LOG).read_text()
    toml = data.calibrated_toml_text(hosts, HOSTS_LOG, oop, "dell-xe9680-h100", "calibrated-x")
    assert "calibrated-x" in toml


def test_scenario_without_timeline_has_the_same_totals():
    from costmodel.scenario import Scenario

    sc = Scenario(params=70e9, cluster="dgx-h100", nodes=4)
    full = sc.evaluate(scaling=True, flips=True).model_dump()
    lean = sc.evaluate(scaling=True, flips=True, timeline=False).model_dump()
    assert len(full.pop("timeline")) > 1000 and lean.pop("timeline") == []
    assert full == lean
