"""A step's band is extrapolated where one of its collectives' own bands is, and the CLI's
``band:`` line says how many runs and sources a band rests on and which run is its widest.

- The step band (compute, scaling beyond one node, the collectives at the ends of their own
  bands: ``strategy.band``) was checked on published runs of up to 64 nodes / 512 GPUs, but
  the collectives' bands (``fitted_corrections.toml``, ``[band.<model>.<regime>.<size>]``)
  rest on smaller runs: InfiniBand from 1 MiB on 20 nodes. Between the two a step's band
  folded in collective bands extrapolated beyond their runs and said nothing; now the step's
  one rule (``strategy.band.band_extrapolation``) flags it, naming which collectives, on the
  API, ``step``/``scenario``/``train`` (text and ``--json``) and the step sweep.
- The ``band:`` line of ``collective`` named the largest run a band rests on and nothing of
  the others, and its "Sources:" count was the larger size class's for every size shown.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from costmodel.fitted_corrections import FITTED
from costmodel.predict import predict_collective
from costmodel.presets import cluster as load_cluster
from costmodel.strategy import strategy_step
from costmodel.strategy.band import measured_range, step_time_band
from costmodel.strategy.comm import span_cluster

from ._cli import run

IB = FITTED.bands["nccl"]["multi-node-infiniband"]
REACH = int(IB["ge1MiB"]["max_nodes"])  # the InfiniBand band from 1 MiB: its largest run
STEP = dict(cluster="dgx-h100", strategy="fsdp")


def _collectives_beyond(s, cluster: str, group_size: int | None = None) -> set[str]:
    """The ops of the step's drawn collectives (that take time) whose own band, as
    predict_collective gives it on the span they run on, is extrapolated: the step's rule
    recomputed from its timeline, one prediction per collective."""
    c = load_cluster(cluster)
    c = load_cluster(cluster, nodes=s.ranks // int(c.gpus_per_node))
    g = group_size or int(c.gpus_per_node)
    out = set()
    for bar in s.timeline:
        if bar.stream == "compute" or bar.end_s <= bar.start_s:
            continue
        sc = span_cluster(c, bar.span, g)
        if sc.ranks < 2:
            continue
        b = predict_collective(bar.kind, bar.message_bytes, sc, nodes=sc.nodes).error_band
        assert b is not None and b.measured
        if b.extrapolated:
            out.add(bar.kind)
    return out


# --- 1. the step band and its collectives' bands ---------------------------------------------
def test_the_collective_band_rests_on_fewer_nodes_than_the_step_band():
    """The gap this flag closes: node counts inside the step band's runs and beyond the
    collectives' (if a refit closes it, the tests below still hold, over an empty range)."""
    assert REACH < measured_range()[0], (REACH, measured_range())


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "zero2"])
def test_the_step_is_flagged_exactly_where_a_collective_of_it_is(strategy):
    steps = []
    for nodes in (REACH - 4, REACH, REACH + 1, measured_range()[0]):
        s = strategy_step(7e9, cluster="dgx-h100", nodes=nodes, strategy=strategy)
        beyond = _collectives_beyond(s, "dgx-h100")
        assert s.band_extrapolated == bool(beyond), (nodes, s.band_extrapolation)
        for op in beyond:  # the note names each one
            assert op.replace("_", "-") in s.band_extrapolation
        steps.append(s)
    assert [s.band_extrapolated for s in steps] == [False, False, True, True]
    far = steps[2]
    assert f"(multi-node-infiniband), fitted to runs of up to {REACH} nodes" in (
        far.band_extrapolation
    )
    assert f"over {REACH + 1} nodes ({8 * (REACH + 1)} GPUs)" in far.band_extrapolation
    assert far.band_extrapolation.endswith(
        ": the step band is extrapolated, not measured at this scale"
    )
    assert far.band_extrapolated_beyond == f"the collective band's {REACH} nodes"
    assert "step band was checked on" not in far.band_extrapolation  # within its own runs


def test_the_flag_changes_no_band_number():
    s = strategy_step(7e9, nodes=REACH + 1, **STEP)
    assert s.band_extrapolated
    again = step_time_band(
        s.step_time_s, s.collective_band_s, s.compute_source, s.compute_band, True
    )
    assert s.step_time_band_s == again
    assert all(math.isfinite(x) for x in s.step_time_band_s)


def test_an_hsdp_step_names_the_collective_across_nodes_with_its_span():
    n = REACH + 1
    s = strategy_step(7e9, cluster="dgx-h100", nodes=n, strategy="hsdp", group_size=8)
    assert _collectives_beyond(s, "dgx-h100", 8) == {"all_reduce"}  # the replicas' all-reduce
    assert f"the all-reduce from 1 MiB over {n} nodes ({n} GPUs) is beyond its" in (
        s.band_extrapolation
    )
    inside = strategy_step(7e9, cluster="dgx-h100", nodes=REACH, strategy="hsdp", group_size=8)
    assert not inside.band_extrapolated


def test_beyond_both_runs_both_are_said_the_steps_first():
    n = measured_range()[0] + 36
    s = strategy_step(7e9, nodes=n, **STEP)
    step_part, coll_part = s.band_extrapolation.split("; the ", 1)
    assert step_part.startswith(f"{n} nodes and {8 * n} GPUs are beyond the largest published")
    assert coll_part.startswith("all-gather and reduce-scatter from 1 MiB")
    assert s.band_extrapolated_beyond == (
        f"{measured_range()[0]} nodes and {measured_range()[1]} GPUs; "
        f"the collective band's {REACH} nodes"
    )


def test_an_unknown_band_or_a_measured_collective_is_not_flagged():
    # no fitted compute efficiency: the band is NaN, nothing to extrapolate
    b200 = strategy_step(7e9, cluster="dgx-b200", nodes=REACH + 1, strategy="fsdp")
    assert math.isnan(b200.step_time_band_s[0]) and not b200.band_extrapolated
    # no band asked: nothing to extrapolate
    s = strategy_step(7e9, nodes=REACH + 1, **STEP, band=False)
    assert not s.band_extrapolated


def test_a_band_fitted_on_larger_runs_leaves_the_same_step_unflagged():
    """alps-gh200's Slingshot band rests on larger runs than the step band's: a 64-node step
    there is within every run; on dgx-h100's InfiniBand it is beyond the collectives'."""
    sl = FITTED.bands["nccl"]["multi-node-slingshot"]["ge1MiB"]
    nodes = measured_range()[0]
    assert int(sl["max_nodes"]) >= nodes and int(sl["max_gpus"]) >= 4 * nodes
    alps = strategy_step(7e9, cluster="alps-gh200", nodes=nodes, strategy="fsdp")
    assert all(math.isfinite(x) for x in alps.step_time_band_s)
    assert not _collectives_beyond(alps, "alps-gh200") and not alps.band_extrapolated
    assert strategy_step(7e9, nodes=nodes, **STEP).band_extrapolated


# --- the surfaces --------------------------------------------------------------------------
def _step(*extra: str):
    strategy = () if "--strategy" in extra else ("--strategy", "fsdp")  # given once
    return run("step", "--params", "7B", "--cluster", "dgx-h100", *strategy, *extra)


def test_cli_step_text_and_json():
    n = str(REACH + 1)
    r = _step("--nodes", n)
    assert r.exit_code == 0, r.stderr
    (row,) = [x for x in r.stdout.splitlines() if x.startswith("step time")]
    assert f"extrapolated beyond the collective band's {REACH} nodes)" in row
    api = strategy_step(7e9, nodes=REACH + 1, **STEP, timeline=False)
    assert f"\nband: {api.band_extrapolation}\n" in r.stdout
    js = json.loads(_step("--nodes", n, "--json").stdout)
    assert js["band_extrapolated"] is True
    assert js["band_extrapolation"] == api.band_extrapolation
    near = json.loads(_step("--nodes", str(REACH), "--json").stdout)
    assert near["band_extrapolated"] is False and near["band_extrapolation"] == ""
    r = _step("--nodes", str(REACH))
    assert "extrapolated" not in r.stdout


def test_cli_scenario_and_train():
    n = REACH + 1
    res = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=n, zero_stage=3).evaluate(
        scaling=False, flips=False
    )
    assert res.band_extrapolated
    assert res.band_extrapolated_beyond == f"the collective band's {REACH} nodes"
    assert res.model_dump()["band_extrapolated_beyond"] == res.band_extrapolated_beyond
    sc = run("scenario", "--params", "7B", "--nodes", str(n), "--strategy", "fsdp", "--json")
    assert sc.exit_code == 0, sc.stderr
    js = json.loads(sc.stdout)
    assert js["band_extrapolated"] is True and "collective band" in js["band_extrapolation"]
    vs = run(
        "scenario", "--params", "7B", "--nodes", str(n), "--strategy", "fsdp",
        "--vs", f"nodes={REACH}",
    )  # fmt: skip
    assert vs.exit_code == 0, vs.stderr
    assert "\nnote (A): step band extrapolated: the all-gather and reduce-scatter" in vs.stdout
    assert "note (B): step band extrapolated" not in vs.stdout
    t = run("train", "--params", "7B", "--nodes", str(n), "--strategy", "fsdp", "--tokens", "1T")
    assert t.exit_code == 0, t.stderr
    (wall,) = [x for x in t.stdout.splitlines() if x.startswith("wall clock")]
    assert f"extrapolated beyond the collective band's {REACH} nodes" in wall


def test_step_strategy_all_names_the_layouts_whose_collectives_are_beyond():
    from costmodel.strategy.advisor import advise

    n = REACH + 1
    adv = advise(7e9, cluster="dgx-h100", nodes=n)
    flagged = [x.layout_name for x in adv.steps if x.band_extrapolated]
    assert flagged and all(x.band_collectives for x in adv.steps if x.band_extrapolated)
    r = _step("--nodes", str(n), "--strategy", "all")
    assert r.exit_code == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("band: ")]
    assert lines == [
        f"band: {', '.join(flagged)}: a collective of each lies beyond the collective band's "
        f"{REACH} nodes, so their step bands are extrapolated too (each layout's own step "
        "names which)"
    ]
    far = _step("--nodes", str(measured_range()[0] + 36), "--strategy", "all").stdout
    lines = [x for x in far.splitlines() if x.startswith("band: ")]
    assert lines[0].startswith(f"band: {measured_range()[0] + 36} nodes and") and len(lines) == 2
    assert "lies beyond the collective band's" in lines[1]


def test_the_step_sweep_flags_the_rows_as_the_api_does():
    nodes = [REACH - 4, REACH, REACH + 1, measured_range()[0]]
    df = cm.sweep(
        kind="step", preset="dgx-h100", params="7B", strategy=["ddp", "fsdp"], nodes=nodes
    )
    assert df["band_extrapolated"].dtype == bool
    for r in df.itertuples():
        api = strategy_step(7e9, cluster="dgx-h100", nodes=int(r.nodes), strategy=r.strategy)
        assert bool(r.band_extrapolated) == api.band_extrapolated, (r.strategy, r.nodes)
    assert df.groupby("nodes")["band_extrapolated"].all().tolist() == [False, False, True, True]


# --- 2. the collective band line: how many runs and sources, which run is the widest --------
def _collective(*extra: str) -> str:
    r = run("collective", "all_reduce", "--cluster", "dgx-h100", *extra)
    assert r.exit_code == 0, r.stderr
    return r.stdout


def _runs(cell) -> str:
    from costmodel.units import format_counted

    return (
        f"{format_counted(int(cell['n_runs']), 'run')} from "
        f"{format_counted(int(cell['n_groups']), 'source')}"
    )


def test_the_sources_are_counted_per_size_class_shown():
    big = IB["ge1MiB"]
    small = IB["lt1MiB"]
    assert int(big["n_groups"]) != int(small["n_groups"])  # else this would show nothing
    one = _collective("--nodes", "2", "--size", "1KB")
    assert f"Sources: multi-node-infiniband {_runs(small)}." in one
    both = _collective("--nodes", "2", "--size", "1KB,1GB")
    assert (
        f"Sources: multi-node-infiniband {_runs(big)} from 1 MiB, {_runs(small)} below 1 MiB."
        in both
    )


def test_the_band_line_says_how_many_runs_its_widest_run_is_of():
    out = _collective("--nodes", str(REACH + 12), "--size", "1GB")
    (line,) = [x for x in out.splitlines() if x.startswith("band: ")]
    big = IB["ge1MiB"]
    widest = f"{int(big['max_nodes'])} nodes, {int(big['max_gpus']):,} GPUs"
    assert f"({widest} at most, over {_runs(big)})" in line
    # the API's band has the same counts for that size
    b = predict_collective("all_reduce", 1e9, "dgx-h100", nodes=REACH + 12).error_band
    assert b is not None and (b.n_runs, b.sources) == (int(big["n_runs"]), int(big["n_groups"]))


def test_the_api_counts_the_runs_of_the_size_class_asked():
    small = IB["lt1MiB"]
    b = predict_collective("all_reduce", 1024, "dgx-h100", nodes=2).error_band
    assert b is not None and (b.n_runs, b.sources) == (int(small["n_runs"]), int(small["n_groups"]))
    both = predict_collective("all_reduce", [1024, 1e9], "dgx-h100", nodes=2).error_band
    assert both is not None
    assert both.sources == max(int(IB[k]["n_groups"]) for k in ("ge1MiB", "lt1MiB"))


def test_several_clusters_beyond_the_run_are_counted_and_the_widest_named():
    from costmodel.cli.comm import _extrapolated

    n = [REACH - 1, REACH + 4, REACH + 12]
    df = pd.DataFrame(
        {
            "model": "nccl",
            "regime": "multi-node-infiniband",
            "nodes": n,
            "ranks": [8 * x for x in n],
            "size_bytes": 1e9,
            "error_band_pct": 40.0,
        }
    )
    line = _extrapolated(df)
    assert line.startswith(
        f"multi-node-infiniband, 2 of the clusters shown are beyond it; the widest: "
        f"{REACH + 12} nodes"
    ), line
    assert np.sum(df["nodes"] > REACH) == 2
    one = _extrapolated(df.iloc[[0, 2]])
    assert "clusters shown" not in one and one.startswith(f"multi-node-infiniband, {REACH + 12}")


def test_the_collectives_page_says_what_the_cli_says():
    """The app's caption: the sources of the size shown, the widest run exceeded, and on hover
    the same note as the CLI's ``band:`` line (how many runs and sources)."""
    pytest.importorskip("streamlit")
    from tests.test_app import _text, assert_clean, open_page

    view = {"view": "A model on a cluster preset"}
    n = REACH + 12
    at = open_page("page_collectives.py", {**view, "size_text": "14GB", "nccl_nodes": str(n)})
    assert_clean(at)
    said = [(_text(c.value), str(c.help)) for c in at.caption if "Expected error" in c.value]
    assert said, [c.value for c in at.caption]
    head, detail = said[0]
    big = IB["ge1MiB"]
    assert f"{_runs(big).split(' from ')[1]}; extrapolated beyond {REACH} nodes" in head
    assert f"at most, over {_runs(big)})" in detail
    out = _collective("--nodes", str(n), "--size", "14GB")
    assert f"at most, over {_runs(big)})" in out
    small = IB["lt1MiB"]
    at = open_page("page_collectives.py", {**view, "size_text": "1KB", "nccl_nodes": "2"})
    assert_clean(at)
    said = [_text(c.value) for c in at.caption if "Expected error" in c.value]
    assert said and f"{_runs(small).split(' from ')[1]})" in said[0], said
    assert f"Sources: multi-node-infiniband {_runs(small)}." in _collective(
        "--nodes", "2", "--size", "1KB"
    )


def test_the_step_page_caption_names_the_collective_band():
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=180)
    at.query_params.update({"ddp_nodes": str(REACH + 1)})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=REACH + 1).evaluate(scaling=False)
    assert r.band_extrapolated and "collective band" in r.band_extrapolation
    shown = " ".join(str(c.value) for c in at.caption)
    assert f"extrapolated beyond the collective band's {REACH} nodes: {r.band_extrapolation}." in (
        shown
    )
