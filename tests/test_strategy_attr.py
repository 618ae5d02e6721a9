"""One name per thing on every result: a result's ``strategy`` attribute is the plain strategy
(``hsdp``), as its ``as_dict()``, every sweep row and every ``--json`` write ``strategy``; the
layout's name (``hsdp g=8``, ``fsdp (no reshard)``) is ``layout_name`` (``layout`` in a dict),
and the text surfaces (the CLI's ranking, the step page's table) still show that name."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel.strategy import strategy_step
from costmodel.strategy.memory import stage_memory
from tests._cli import run

# (layout keywords, the plain strategy, the layout's name) on 4 nodes of 8 GPUs (32 ranks)
LAYOUTS = [
    ({"strategy": "ddp"}, "ddp", "ddp"),
    ({"strategy": "zero1"}, "zero1", "zero1"),
    ({"strategy": "zero2"}, "zero2", "zero2"),
    ({"strategy": "fsdp"}, "fsdp", "fsdp"),
    ({"strategy": "fsdp", "reshard_after_forward": False}, "fsdp", "fsdp (no reshard)"),
    ({"strategy": "hsdp", "group_size": 8}, "hsdp", "hsdp g=8"),
    ({"strategy": "hsdp", "group_size": 16}, "hsdp", "hsdp g=16"),
]
IDS = [name for _, _, name in LAYOUTS]
SETUP = {"cluster": "dgx-h100", "nodes": 4, "model": "lesson", "compute_time_s": 0.4}


def _step(kw: dict) -> cm.strategy.StrategyStep:
    return strategy_step(7e9, **SETUP, **kw, timeline=False)


@pytest.mark.parametrize(("kw", "plain", "name"), LAYOUTS, ids=IDS)
def test_a_steps_strategy_is_the_plain_strategy_its_dict_writes(kw, plain, name):
    s = _step(kw)
    d = s.as_dict()
    assert s.strategy == d["strategy"] == s.layout.strategy == plain
    assert s.layout_name == d["layout"] == s.layout.name == name
    # the step's memory names the same layout the same way
    assert (s.memory.strategy, s.memory.layout_name) == (plain, name)


@pytest.mark.parametrize(("kw", "plain", "name"), LAYOUTS, ids=IDS)
def test_stage_memory_names_its_layout_as_the_step_does(kw, plain, name):
    stage = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3, "hsdp": 3}[plain]
    m = stage_memory(stage, 32, 7e9, gpus_per_node=8, **kw)
    assert (m.strategy, m.layout_name) == (plain, name)
    assert m.total_bytes == pytest.approx(_step(kw).memory_bytes, rel=1e-12)  # one layout


def test_memory_json_names_the_layout_as_the_memory_object():
    r = run(
        "memory", "--params", "7e9", "--ranks", "64", "--zero", "3", "--strategy", "hsdp",
        "--group-size", "8", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    m = stage_memory(3, 64, 7e9, strategy="hsdp", group_size=8)
    assert (d["strategy"], d["layout"]) == (m.strategy, m.layout_name) == ("hsdp", "hsdp g=8")


def test_advisor_rows_and_names_follow_the_steps():
    a = cm.advise_strategy(7e9, **SETUP)
    rows = a.rows()
    assert len(rows) == len(a.steps)
    for s, r in zip(a.steps, rows, strict=True):
        assert (r["strategy"], r["layout"]) == (s.strategy, s.layout_name)
        assert s.strategy == s.layout.strategy
    names = {s.layout_name for s in a.steps}
    assert {"fsdp (no reshard)", "hsdp g=8", "hsdp g=16"} <= names
    d = a.as_dict()
    assert a.best is not None and d["best"] == a.best.layout_name  # best: a layout's name
    assert d["tied"] == [s.layout_name for s in a.tied]


@pytest.mark.parametrize(("kw", "plain", "name"), LAYOUTS[4:], ids=IDS[4:])
def test_a_scenario_result_names_the_layout_as_its_step(kw, plain, name):
    sc = cm.Scenario(params=7e9, **SETUP, **kw)
    r = sc.evaluate(scaling=False, flips=False)
    s = sc.strategy_step(timeline=False, band=False)
    assert (r.strategy, r.layout) == (s.strategy, s.layout_name) == (plain, name)


def test_step_sweep_rows_name_the_layout_as_the_steps():
    df = cm.sweep(
        kind="step", preset="dgx-h100", params="7e9", strategy="all", nodes="4", model="lesson"
    )
    a = cm.advise_strategy(7e9, cluster="dgx-h100", nodes=4, model="lesson")
    assert sorted(zip(df["strategy"], df["layout"], strict=True)) == sorted(
        (s.strategy, s.layout_name) for s in a.steps
    )


def test_cli_ranking_shows_layout_names():
    r = run(
        "step", "--params", "7e9", "--cluster", "dgx-h100", "--nodes", "4", "--strategy", "all",
        "--model", "lesson",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    # a ranked line: its rank (1, 2, ..., 1= in a tie), then the layout's name in 20 columns
    out = r.stdout.splitlines()
    head = next(i for i, ln in enumerate(out) if ln.startswith("rank strategy"))
    ranked = [ln for ln in out[head + 1 :] if ln[:1].isdigit()]
    shown = {ln[5:25].strip() for ln in ranked}
    assert shown == {s.layout_name for s in cm.advise_strategy(7e9, **SETUP).steps}, r.stdout
    assert {"fsdp (no reshard)", "hsdp g=8", "hsdp g=16"} <= shown


def test_step_page_ranking_shows_layout_names():
    from streamlit.testing.v1 import AppTest

    from tests._paths import ROOT

    at = AppTest.from_file(str(ROOT / "costmodel" / "web" / "page_ddp.py"), default_timeout=120)
    at.query_params.update({"ddp_arch": "llama-2-7b", "ddp_strategy": "fsdp"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    keys = [k for e in at.expander if (k := e.proto.id.rsplit("-", 1)[-1]).startswith("table_")]
    for key in keys:  # open the tables kept in an expander, as a click does
        at.session_state[key] = True
    at.run()
    ranking = next(d.value for d in at.dataframe if "vs fastest" in d.value.columns)
    assert {"fsdp", "fsdp (no reshard)", "hsdp g=8"} <= set(ranking["strategy"])
