"""One road per model: the same question through every surface gives the same number.

For each of the four answer models (lesson, textbook, nccl, calibrated) an all-reduce of 8 GiB on
DGX H100, over 2 nodes and inside 1 node, is asked of the API (``cm.predict_collective``,
``cm.allreduce_time(M, cluster, model=...)``, ``predict.allreduce_time_fn`` as the DDP step and
Scenario use it), the CLI (``predict --json`` and ``collective --json``), a ``cm.sweep`` row, the
Cluster page and the Collectives page (streamlit AppTest, reading the tables the pages show).
Every answer must equal the API's to 1e-9 relative.

The calibrated model needs a calibrated cluster: a calibration preset with base ``dgx-h100`` is
fitted here from two real nccl-tests logs (06a: 2 x 8 H100, 8 x NDR400 per node, the inter-node
fit; 13a: a 4-GPU slice of one H100 node, the intra-node fit), written to a temporary presets
folder and found by name through ``COSTMODEL_PRESETS`` (as a user's own presets are).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, models, predict
from costmodel.units import format_duration
from tests._paths import NCCL_TESTS
from tests.test_app import open_tables

WEB = Path(__file__).resolve().parents[1] / "costmodel" / "web"
M = 8 * 2**30  # 8 GiB, in the app's size list (powers of two)
RTOL = 1e-9
CAL = "h100-cal"
QUESTIONS = [pytest.param(2, id="2-nodes"), pytest.param(1, id="1-node")]


@pytest.fixture(scope="module")
def calibrated_presets(tmp_path_factory):
    """A calibration preset ``h100-cal`` (base dgx-h100) on COSTMODEL_PRESETS for this module."""
    import streamlit as st

    from costmodel.validation.calibrate import calibrate, write_calibration
    from costmodel.validation.nccl_tests import read_nccl_tests

    logs = [
        "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt",
        "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt",
    ]
    measured = pd.concat([read_nccl_tests(NCCL_TESTS / f) for f in logs], ignore_index=True)
    cal = calibrate(
        measured, name=CAL, min_bytes=2**16, source="nccl-tests 06a + 13a", base="dgx-h100"
    )
    folder = tmp_path_factory.mktemp("presets")
    write_calibration(cal, folder / f"{CAL}.toml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COSTMODEL_PRESETS", str(folder))
        st.cache_data.clear()  # the app's cached preset list must see the new folder
        yield cal
    st.cache_data.clear()


def _cluster_name(model: str) -> str:
    return CAL if model == models.CALIBRATED else "dgx-h100"


def _api(model: str, nodes: int) -> float:
    p = cm.predict_collective("all_reduce", M, _cluster_name(model), nodes=nodes, model=model)
    assert p.model == model and p.ranks == 8 * nodes
    return float(p.time_s)


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli.app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def test_the_question_has_four_different_answers(calibrated_presets):
    """The four models are four models: on 2 nodes no two of them give the same time."""
    times = {m: _api(m, 2) for m in models.MODELS}
    assert len({round(t, 12) for t in times.values()}) == 4, times
    # the lesson's one-NIC-per-GPU ring: 50 GB/s busbw; the textbook's ring on 8 NICs: 8 x 48
    busbw = {m: 2 * 15 / 16 * M / t / 1e9 for m, t in times.items()}
    assert busbw["lesson"] == pytest.approx(50, rel=0.01)
    assert busbw["textbook"] == pytest.approx(8 * 48, rel=0.01)


@pytest.mark.parametrize("nodes", QUESTIONS)
@pytest.mark.parametrize("model", models.MODELS)
def test_api_cli_and_sweep_agree(calibrated_presets, model, nodes):
    want = _api(model, nodes)
    name = _cluster_name(model)
    cluster = cm.cluster(name, nodes=nodes)
    got = {
        "cm.allreduce_time": cm.allreduce_time(M, cluster, model=model),
        "cm.collective_time": cm.collective_time("all_reduce", M, cluster, model=model),
        "allreduce_time_fn (ddp, Scenario)": predict.allreduce_time_fn(
            name, nodes=nodes, model=model
        )(M),
        "cli predict": _cli_json(
            "predict", "--cluster", name, "--nodes", str(nodes), "--sizes", str(M), "--model", model
        )["results"][0]["time_s"],
        "cli collective": _cli_json(
            "collective",
            "all_reduce",
            "--size",
            str(M),
            "--cluster",
            name,
            "--nodes",
            str(nodes),
            "--model",
            model,
        )["results"][0]["time_s"],
    }
    row = cm.sweep(preset=name, nodes=nodes, size=M, model=model)
    assert len(row) == 1 and row["model"].iloc[0] == model
    got["cm.sweep row"] = row["time_s"].iloc[0]
    for surface, t in got.items():
        assert float(t) == pytest.approx(want, rel=RTOL), surface


def _page(page_file: str) -> AppTest:
    return AppTest.from_file(str(WEB / page_file), default_timeout=60).run()


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _frame_with(at: AppTest, column: str) -> pd.DataFrame:
    open_tables(at)
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, f"no table with a {column!r} column"
    return frames[-1]


@pytest.mark.parametrize("nodes", QUESTIONS)
@pytest.mark.parametrize("model", models.MODELS)
def test_cluster_page_agrees(calibrated_presets, model, nodes):
    want = _api(model, nodes)
    at = _page("page_cluster.py")
    at.selectbox(key="cl_cluster").set_value(_cluster_name(model)).run()
    at.number_input(key="cl_nodes").set_value(nodes)
    at.selectbox(key="cl_size").set_value(M)
    at.radio(key="cl_model").set_value(model).run()
    _clean(at)
    sweep = _frame_with(at, "model_s")
    here = sweep[(sweep["nodes"] == nodes) & (sweep["gpus_per_node"] == 8)]
    assert len(here) == 1 and (sweep["model"] == model).all()
    assert float(here["model_s"].iloc[0]) == pytest.approx(want, rel=RTOL)
    shown = {m.label: m.value for m in at.metric}
    assert shown[f"Time, model {model}"] == format_duration(want)
    if model == "textbook":  # the page's flat ring is the textbook's default algorithm
        assert float(here["flat_ring_s"].iloc[0]) == pytest.approx(want, rel=RTOL)


@pytest.mark.parametrize("nodes", QUESTIONS)
@pytest.mark.parametrize("model", models.MODELS)
def test_collectives_page_agrees(calibrated_presets, model, nodes):
    want = _api(model, nodes)
    at = _page("page_collectives.py")
    at.radio(key="view").set_value("cluster").run()
    at.selectbox(key="nccl_cluster").set_value(_cluster_name(model)).run()
    at.number_input(key="nccl_nodes").set_value(nodes)
    at.selectbox(key="size").set_value(M)
    at.radio(key="coll_model").set_value(model)
    # every model's sweep table sits behind the every-model toggle (off on the first view)
    at.toggle(key="coll_all_models").set_value(True).run()
    _clean(at)
    sweep = _frame_with(at, "busbw_bytes_per_s")
    row = sweep[(sweep["model"] == model) & np.isclose(sweep["message_bytes"], M, rtol=0)]
    assert len(row) == 1
    assert float(row["time_s"].iloc[0]) == pytest.approx(want, rel=RTOL)
    assert {m.label: m.value for m in at.metric}["Time"] == format_duration(want)


def test_nccl_table_is_a_reference_not_an_answer_model(calibrated_presets):
    assert "nccl-table" not in models.MODELS and "nccl-table" in models.REFERENCE_MODELS
    p = cm.predict_collective("all_reduce", M, "dgx-h100", nodes=2, model="nccl-table")
    assert p.model == "nccl-table" and p.time_s > 0  # still accepted everywhere
    # allreduce_time's own default (textbook) is the one its message marks
    with pytest.raises(ValueError, match="allowed: textbook \\(default\\), lesson, nccl"):
        cm.allreduce_time(M, cm.cluster("dgx-h100"), model="flat")
    with pytest.raises(ValueError, match="carries no calibration"):
        cm.predict_collective("all_reduce", M, "dgx-h100", model="calibrated")
    assert models.available(cm.cluster(CAL))[-1] == "calibrated"


def test_cluster_page_hierarchical_columns_are_the_textbook_model_on_a_sharp_cluster():
    """The page's hierarchical columns are cm.allreduce_time(M, cluster, algorithm=...), with
    the preset's own in-network reduction (CoreWeave HGX H100: IB SHARP) by default."""
    name, nodes = "coreweave-hgx-h100", 2
    at = _page("page_cluster.py")
    at.selectbox(key="cl_cluster").set_value(name).run()
    at.number_input(key="cl_nodes").set_value(nodes)
    at.selectbox(key="cl_size").set_value(M).run()
    _clean(at)
    assert at.checkbox(key="cl_sharp").value is False  # the what-if is off; the preset has SHARP
    sweep = _frame_with(at, "hierarchical_serial_s")
    here = sweep[(sweep["nodes"] == nodes) & (sweep["gpus_per_node"] == 8)].iloc[0]
    c = cm.cluster(name, nodes=nodes)
    for column, algorithm in (
        ("hierarchical_serial_s", "hierarchical"),
        ("hierarchical_pipelined_s", "hierarchical_pipelined"),
        ("flat_ring_s", "ring"),
    ):
        want = cm.allreduce_time(M, c, algorithm=algorithm)
        assert float(here[column]) == pytest.approx(want, rel=RTOL), column
