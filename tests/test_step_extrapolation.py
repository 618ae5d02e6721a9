"""A training step's band beyond the published runs it was checked on, the default MFU under
recomputation, the fit advisor's recomputation under a given compute, a 0-byte collective and
the hsdp groups ``--strategy all`` tries.

- The step band (compute, scaling beyond one node, collectives: ``strategy.band``) was checked
  on published runs up to 64 nodes / 512 GPUs. A step beyond them kept its band without a word
  (``step --nodes 100000``), where a collective's band says it is extrapolated. Now one rule,
  ``strategy.band.band_extrapolation``, flags it on every surface.
- The default MFU 0.4 (a GPU with no fitted efficiency) made full recomputation free: it now
  describes a run without recomputation, so recomputation adds its FLOPs at that utilisation.
- ``fit_suggestions`` listed "recompute full ... (0%)" under a given MFU or compute time: it
  now says the recomputation's cost is inside that measurement.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import costmodel as cm
from costmodel.strategy import strategy_step

from ._cli import one_line_error, run

STEP = dict(cluster="dgx-h100", strategy="fsdp", timeline=False)
PAGE = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"


# --- 1. the step band's measured range --------------------------------------------------------
def test_the_measured_range_is_the_largest_published_run_of_the_steps_data():
    from costmodel.step_fidelity import measured_range as of_rows
    from costmodel.steps_data import pure_dp_rows
    from costmodel.strategy.band import measured_range

    df = pure_dp_rows()
    assert measured_range() == of_rows(df) == (int(df.gpus.max()) // 8, int(df.gpus.max()))


def test_a_step_beyond_the_published_runs_says_its_band_is_extrapolated():
    far = strategy_step(7e9, nodes=100, **STEP)
    near = strategy_step(7e9, nodes=8, **STEP)
    assert all(math.isfinite(x) for x in far.step_time_band_s)  # the band keeps its numbers
    assert far.band_extrapolated and not near.band_extrapolated
    assert far.band_extrapolation.startswith("100 nodes and 800 GPUs are beyond")
    assert "(64 nodes, 512 GPUs at most, over 317 runs from 2 sources)" in far.band_extrapolation
    # the step band's own run first; then its collectives' (tests/test_band_extrapolation2.py)
    assert far.band_extrapolated_beyond.startswith("64 nodes and 512 GPUs; the collective band")
    d = far.as_dict()
    assert d["band_extrapolated"] is True and d["band_extrapolation"] == far.band_extrapolation
    assert near.as_dict()["band_extrapolated"] is False


def test_gpus_alone_can_be_beyond_and_an_unknown_band_is_not_extrapolated():
    from costmodel.strategy.band import band_extrapolation

    note, beyond = band_extrapolation(16, 1152, (1.0, 2.0))  # 72-GPU nodes: GPUs, not nodes
    assert note.startswith("1,152 GPUs is beyond") and beyond == "512 GPUs"
    assert band_extrapolation(64, 512, (1.0, 2.0)) == ("", "")
    assert band_extrapolation(1000, 8000, (math.nan, math.nan)) == ("", "")
    b200 = strategy_step(7e9, cluster="dgx-b200", nodes=100, strategy="fsdp", timeline=False)
    assert math.isnan(b200.step_time_band_s[0]) and not b200.band_extrapolated


def test_cli_step_text_and_json_say_it():
    r = run("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "100")
    assert r.exit_code == 0, r.stderr
    (row,) = [x for x in r.stdout.splitlines() if x.startswith("step time")]
    assert "extrapolated beyond 64 nodes and 512 GPUs" in row
    assert "\nband: 100 nodes and 800 GPUs are beyond" in r.stdout
    js = json.loads(run("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "100",
                        "--json").stdout)  # fmt: skip
    assert js["band_extrapolated"] is True and "800 GPUs" in js["band_extrapolation"]
    near = json.loads(run("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "8",
                          "--json").stdout)  # fmt: skip
    assert near["band_extrapolated"] is False
    r = run("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "100", "--strategy",
            "all")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "\nband: 100 nodes and 800 GPUs are beyond" in r.stdout


def test_the_step_sweep_has_the_column():
    df = cm.sweep(kind="step", preset="dgx-h100", params="7B", strategy="fsdp", nodes=[8, 100])
    assert df["band_extrapolated"].tolist() == [False, True]


def test_scenario_and_train_say_it():
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=100, zero_stage=3).evaluate(
        scaling=False, flips=False
    )
    assert r.band_extrapolated and r.band_extrapolation.startswith("100 nodes")
    assert r.model_dump()["band_extrapolated"] is True
    assert "\nband: 100 nodes and 800 GPUs are beyond" in r.summary()
    vs = run(
        "scenario", "--params", "7B", "--nodes", "100", "--strategy", "fsdp", "--vs", "nodes=8"
    )
    assert vs.exit_code == 0, vs.stderr
    assert "\nnote (A): step band extrapolated: 100 nodes and 800 GPUs" in vs.stdout
    assert "note (B): step band extrapolated" not in vs.stdout
    t = run("train", "--params", "7B", "--nodes", "100", "--strategy", "fsdp", "--tokens", "1T")
    assert t.exit_code == 0, t.stderr
    (wall,) = [x for x in t.stdout.splitlines() if x.startswith("wall clock")]
    assert "extrapolated beyond 64 nodes and 512 GPUs" in wall
    js = json.loads(run("train", "--params", "7B", "--nodes", "100", "--strategy", "fsdp",
                        "--tokens", "1T", "--json").stdout)  # fmt: skip
    assert js["band_extrapolated"] is True
    near = json.loads(run("train", "--params", "7B", "--nodes", "8", "--strategy", "fsdp",
                          "--tokens", "1T", "--json").stdout)  # fmt: skip
    assert near["band_extrapolated"] is False


def test_the_step_page_caption_says_it():
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(PAGE), default_timeout=180)
    at.query_params.update({"ddp_nodes": "100"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=100).evaluate(scaling=False)
    shown = " ".join(str(c.value) for c in at.caption)
    assert r.band_extrapolated_beyond.startswith("64 nodes and 512 GPUs")
    assert f"extrapolated beyond {r.band_extrapolated_beyond}: {r.band_extrapolation}." in shown


# --- 2. the default MFU under recomputation ---------------------------------------------------
def _b200(recompute: str):
    return cm.Scenario(params=7e9, cluster="dgx-b200", nodes=1, recompute=recompute).evaluate(
        scaling=False, flips=False
    )


def test_the_default_mfu_charges_recomputation_at_the_same_utilisation():
    from costmodel.architecture import architecture_for_params
    from costmodel.strategy.compute import recompute_extra

    none, full = _b200("none"), _b200("full")
    assert none.compute_source == full.compute_source == "default-mfu"
    r = recompute_extra("full", architecture_for_params(7e9), 4096)
    assert r == pytest.approx(1 / 3, rel=0.05)
    assert full.compute_s == pytest.approx(none.compute_s * (1 + r), rel=1e-12)
    assert full.compute_label.endswith(
        "of a run without recomputation; recompute full adds its 33% extra work at the same "
        "utilisation: MFU 0.30"
    )
    # a given MFU stays PaLM's: the recomputation inside it
    given = [
        cm.Scenario(params=7e9, cluster="dgx-b200", nodes=1, recompute=m, mfu=0.4)
        .evaluate(scaling=False, flips=False)
        .compute_s
        for m in ("none", "full")
    ]
    assert given[0] == pytest.approx(given[1], rel=1e-12)


def test_one_number_on_api_cli_sweep_and_page():
    from costmodel.strategy.compute import recompute_extra

    arch = "llama-2-7b"
    full, none = (
        cm.Scenario(arch=arch, cluster="dgx-b200", nodes=1, recompute=m).evaluate(
            scaling=False, flips=False
        )
        for m in ("full", "none")
    )
    r = recompute_extra("full", cm.load_arch(arch), 4096)
    assert full.compute_s == pytest.approx(none.compute_s * (1 + r), rel=1e-12)  # the number
    api = strategy_step(
        arch=arch, cluster="dgx-b200", nodes=1, strategy="ddp", recompute="full", timeline=False
    )
    assert api.compute_s == pytest.approx(full.compute_s, rel=1e-12)
    cli = json.loads(run("step", "--arch", arch, "--cluster", "dgx-b200", "--nodes", "1",
                         "--recompute", "full", "--json").stdout)  # fmt: skip
    assert cli["compute_s"] == pytest.approx(full.compute_s, rel=1e-12)
    df = cm.sweep(kind="step", preset="dgx-b200", arch=arch, strategy="ddp", nodes=1,
                  recompute="full")  # fmt: skip
    assert float(df["compute_s"].iloc[0]) == pytest.approx(full.compute_s, rel=1e-12)
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from costmodel.units import format_duration

    at = AppTest.from_file(str(PAGE), default_timeout=180)
    at.query_params.update(
        {"ddp_cluster": "dgx-b200", "ddp_nodes": "1", "ddp_arch": arch, "ddp_recompute": "full"}
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Compute"] == format_duration(full.compute_s)
    assert f"Compute in use: {full.compute_label}." in [str(c.value) for c in at.caption]


# --- 3. the fit advisor's recomputation under a given compute ---------------------------------
def test_a_recompute_change_under_a_given_mfu_says_its_cost_is_inside_it():
    from costmodel.strategy.advisor import RECOMPUTE_INSIDE, fit_suggestions

    kw = dict(cluster="dgx-h100", nodes=1, strategy="fsdp", micro_batch=4, band=False)
    fa = fit_suggestions(arch="llama-2-7b", mfu=0.4, **kw)
    (rc,) = [c for c in fa.changes if c.change == "recompute full"]
    assert rc.compute_note(fa.base) == RECOMPUTE_INSIDE["mfu"]
    assert "cost inside the given MFU" in fa.summary()
    timed = fit_suggestions(arch="llama-2-7b", compute_time_s=2.0, **kw)
    (rc,) = [c for c in timed.changes if c.change == "recompute full"]
    assert rc.compute_note(timed.base) == RECOMPUTE_INSIDE["measured"]
    fitted = fit_suggestions(arch="llama-2-7b", **kw)  # priced by the fit: no such note
    assert all(c.compute_note(fitted.base) not in RECOMPUTE_INSIDE.values() for c in fitted.changes)
    r = run("step", "--arch", "llama-2-7b", "--mfu", "0.4", "--micro-batch", "4", "--strategy",
            "fsdp", "--cluster", "dgx-h100", "--nodes", "1")  # fmt: skip
    (line,) = [x for x in r.stdout.splitlines() if x.strip().startswith("recompute full:")]
    assert line.endswith(f"({RECOMPUTE_INSIDE['mfu']})")


# --- small: a 0-byte collective, hsdp's groups ------------------------------------------------
def test_a_zero_byte_collective_takes_no_time_on_every_model():
    for model in ("nccl", "lesson", "textbook", "nccl-table"):
        p = cm.predict_collective("all_reduce", 0, "dgx-h100", nodes=2, model=model)
        assert (p.time_s, p.algorithm, p.protocol, p.busbw_bytes_per_s) == (
            0.0,
            "none",
            "none",
            0.0,
        )
    arr = cm.predict_collective("all_reduce", [0, 2**20], "dgx-h100", nodes=2)
    assert arr.time_s[0] == 0.0 and arr.time_s[1] > 0
    one_line_error(
        run("collective", "all-reduce", "--cluster", "dgx-h100", "--size", "0B"), "--size"
    )


def test_the_strategy_all_refusal_names_the_groups_it_tries():
    from costmodel.strategy.advisor import candidate_layouts

    # a group of whole nodes is tried, not only one that fits a node
    assert {"strategy": "hsdp", "group_size": 16} in candidate_layouts(32, 8)
    line = one_line_error(
        run(
            "memory",
            "--params",
            "7B",
            "--strategy",
            "all",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--group-size",
            "8",
        ),  # fmt: skip
        "--group-size",
    )
    assert "fits a node" not in line and "whole nodes" in line
