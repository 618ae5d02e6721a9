"""QA pass 27: a tight fit's note comes from one road, and a train sweep's notes split back.

What it found: the note that a fit with under 5 % of the card to spare leaves the CUDA context
and fragmentation out (``strategy.memory.headroom_note``) was added by ``costmodel memory`` and
the Memory page alone; the same configuration priced by ``step``, ``scenario``, ``train``, the
step page, a sweep or the API said nothing. It now comes from ``strategy.memory.fit_notes``
(the step's notes, ``StrategyMemory.fit_notes``, a memory sweep's notes). And a train sweep's
``cost_note`` joined its notes with "; ", which a note holds.
"""

from __future__ import annotations

import json
import re

import pytest

from costmodel import Scenario, strategy_step, sweep
from costmodel.strategy.memory import HEADROOM_NOTE_START, fit_notes, stage_memory
from costmodel.sweep.evaluate import NOTES_SEPARATOR
from tests._cli import run

#: 405B over 256 H200 in hsdp groups of 64 with full recompute: 150.5 GB of 150.8 GB (0.2 %)
TIGHT = {
    "arch": "llama-3.1-405b",
    "cluster": "hgx-h200",
    "nodes": 32,
    "strategy": "hsdp",
    "group_size": 64,
    "recompute": "full",
}
#: the same model on 512 GPUs under fsdp: plenty of room
ROOMY = {**TIGHT, "nodes": 64, "strategy": "fsdp", "group_size": None}
TIGHT_CLI = (
    *("--arch", "llama-3.1-405b", "--cluster", "hgx-h200", "--nodes", "32"),
    *("--strategy", "hsdp", "--group-size", "64", "--recompute", "full"),
)
ROOMY_CLI = (*TIGHT_CLI[:5], "64", "--strategy", "fsdp", "--recompute", "full")


def _tight(notes) -> list[str]:
    return [n for n in notes if n.startswith(HEADROOM_NOTE_START)]


def _one_library_note(notes) -> str:
    (tight,) = _tight(notes)
    assert re.match(r"fits with 0\.2% headroom \(under 5%\): ", tight), tight
    # the library's words: API fields in backquotes, never a CLI flag
    assert "`cuda_context_bytes`" in tight and "`fragmentation`" in tight, tight
    assert "--" not in tight, tight
    return tight


# --- the API: the step, Scenario and the memory carry the same note --------------------------
def test_api_step_scenario_and_memory_say_the_tight_fit() -> None:
    kw = {k: v for k, v in TIGHT.items() if v is not None}
    st = strategy_step(**kw)
    assert st.fits  # the verdict is unchanged
    note = _one_library_note(st.notes)
    r = Scenario(**kw).evaluate(scaling=False, flips=False)
    assert r.fits and _one_library_note(r.notes) == note
    # the training cost carries it too (train's road)
    cost = r.training_cost(tokens=1e12)
    assert _one_library_note(cost.notes) == note
    sm = st.memory
    assert _one_library_note(sm.fit_notes(st.gpu_memory_bytes)) == note
    assert sm.fit_notes(st.gpu_memory_bytes)[: len(sm.notes)] == sm.notes
    # both overheads set: nothing left out, nothing said
    over = strategy_step(**kw, cuda_context_bytes=1e8, fragmentation=0.0001)
    assert not _tight(over.notes)
    # one set: the other named alone
    half = strategy_step(**kw, cuda_context_bytes=1e8)  # 0.1 GB: still fits
    (n,) = _tight(half.notes)
    assert "`fragmentation`" in n and "`cuda_context_bytes`" not in n


def test_api_roomy_and_over_say_nothing() -> None:
    kw = {k: v for k, v in ROOMY.items() if v is not None}
    st = strategy_step(**kw)
    assert st.fits and st.memory_bytes < 0.95 * st.gpu_memory_bytes
    assert not _tight(st.notes)
    r = Scenario(**kw).evaluate(scaling=False, flips=False)
    assert not _tight(r.notes)
    assert not _tight(stage_memory(3, 8, 7e9).fit_notes(80e9))  # 14 GB of 80
    # over the card: the verdict says so, no headroom note
    assert fit_notes(("a",), 81e9, 80e9) == ("a",)


# --- the CLI: memory, step, scenario and train, text and --json ------------------------------
@pytest.mark.parametrize("command", ["memory", "step", "scenario", "train"])
def test_cli_commands_say_the_tight_fit(command: str) -> None:
    extra = ("--tokens", "1T") if command == "train" else ()
    text = run(command, *TIGHT_CLI, *extra)
    assert text.exit_code == 0, text.stderr
    lines = [ln for ln in text.stdout.splitlines() if "headroom (under 5%)" in ln]
    assert len(lines) == 1, text.stdout  # said once
    # the CLI's words: its options, not the library's fields
    assert lines[0].startswith("note: fits with 0.2% headroom"), lines
    assert "--cuda-context" in lines[0] and "--fragmentation" in lines[0], lines
    assert "`" not in lines[0], lines
    out = json.loads(run(command, *TIGHT_CLI, *extra, "--json").stdout)
    assert len(_tight(out["notes"])) == 1, out["notes"]
    roomy = run(command, *ROOMY_CLI, *extra)
    assert roomy.exit_code == 0, roomy.stderr
    assert "headroom (under" not in roomy.stdout
    assert not _tight(json.loads(run(command, *ROOMY_CLI, *extra, "--json").stdout)["notes"])


# --- the sweeps: a memory and a step sweep's notes column ------------------------------------
@pytest.mark.parametrize(("kind", "axis"), [("memory", "ranks"), ("step", "nodes")])
def test_sweep_notes_say_the_tight_fit(kind: str, axis: str) -> None:
    # one row tight (hsdp g=64 on 256 GPUs), one roomy (fsdp on 512): as memory and step say
    tight_v, roomy_v = (256, 512) if axis == "ranks" else (32, 64)
    common = {"arch": "llama-3.1-405b", "recompute": "full", "preset": "hgx-h200"}
    t = sweep.sweep(kind=kind, strategy="hsdp", group_size=64, **common, **{axis: tight_v})
    r = sweep.sweep(kind=kind, strategy="fsdp", **common, **{axis: roomy_v})
    notes_t = t["notes"].iloc[0].split(NOTES_SEPARATOR)
    assert bool(t["fits"].iloc[0])
    (tight,) = _tight(notes_t)
    assert tight == notes_t[-1]  # after the others, as memory --json lists them
    api = strategy_step(**{k: v for k, v in TIGHT.items() if v is not None}).notes
    assert tight == _tight(api)[0].rstrip(".")  # the library's words, the API's note
    assert bool(r["fits"].iloc[0]) and not _tight(r["notes"].iloc[0].split(NOTES_SEPARATOR))


def test_memory_sweep_of_bare_counts_says_it_row_by_row() -> None:
    # 5.2B and 4B parameters on one 85.9 GB card: 83.2 GB (3.1 % spare) and 64 GB (one rank,
    # asked for: without ranks the sweep shards over one node, 8 ranks)
    df = sweep.sweep(kind="memory", params=[5.2e9, 4e9], gpu_memory=85.9e9, ranks=1)
    tight, roomy = (row.split(NOTES_SEPARATOR) for row in df["notes"])
    assert tight[0] == roomy[0]  # the activations' line, as before
    assert tight[-1].startswith("fits with 3.1% headroom") and not _tight(roomy)
    # no card, no verdict: no note
    none = sweep.sweep(kind="memory", params=[5.2e9], ranks=1)
    assert "fits" not in none.columns and not _tight(none["notes"].iloc[0].split(NOTES_SEPARATOR))


# --- the train sweep's cost_note joins as every notes column ---------------------------------
def test_train_sweep_cost_note_splits_back() -> None:
    # no price and no fit: two notes, the first holding "; " (the old separator)
    df = sweep.sweep(
        kind="step", preset="dgx-h100", params=7e9, strategy="ddp", nodes=1, tokens=1e12
    )
    parts = df["cost_note"].iloc[0].split(NOTES_SEPARATOR)
    assert len(parts) == 2, parts
    assert parts[0].startswith("no price given: ") and "; or give `usd_per_gpu_hour`" in parts[0]
    assert parts[1].startswith("does not fit in GPU memory")


# --- the pages: Memory and step say it as their boxes ----------------------------------------
def _page_tight(at) -> list[str]:
    return [c.value for c in at.caption if re.match(r"Fits with \d\.\d% headroom", c.value)]


def test_memory_and_step_pages_say_the_tight_fit() -> None:
    from tests.test_app import open_page

    at = open_page("page_memory.py")
    at.number_input(key="dp_ranks").set_value(1)
    at.text_input(key="params").set_value("5.2B").run()  # 83.2 GB of state on 85.9 GB
    (mem,) = _page_tight(at)
    assert "CUDA context per GPU [B]" in mem and "`" not in mem
    at.text_input(key="params").set_value("4B").run()
    assert not _page_tight(at)

    at = open_page("page_ddp.py")  # DDP on 32 H100s: 18 B per parameter (bucket copy)
    at.text_input(key="ddp_params").set_value("4.6B").run()  # 96.8 % of the card
    assert not at.exception and not at.error
    (step,) = _page_tight(at)
    assert step.startswith("Fits with 3.2% headroom"), step
    assert "CUDA context per GPU [B]" in step and "Fragmentation allowance" in step
    assert "`" not in step
    at.text_input(key="ddp_params").set_value("3B").run()
    assert not _page_tight(at)
