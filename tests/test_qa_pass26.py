"""QA pass 26: papercuts of a walk through memory, sweeps and tables.

What it found: a 405B hsdp layout said "fits" at 150.5 of 150.8 GB (0.2 % spare) with the CUDA
context and fragmentation left at 0, unsaid; a boolean in a sweep grid file was refused in
Python's spelling, twice; a bad ``--set nodes=1...64`` quoted only its tail; the sweep's
``notes`` column joined notes that hold its separator.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from costmodel import sweep
from costmodel.strategy.memory import TIGHT_FIT_HEADROOM, headroom_note
from costmodel.sweep import read_table
from costmodel.sweep.evaluate import NOTES_SEPARATOR, join_notes
from costmodel.sweep.grid import parse_values
from tests._cli import one_line_error, run

#: 405B over 256 H200 in hsdp groups of 64 with full recompute: 150.5 GB of 150.8 GB
TIGHT_405B = (
    *("memory", "--arch", "llama-3.1-405b", "--cluster", "hgx-h200", "--nodes", "32"),
    *("--strategy", "hsdp", "--group-size", "64", "--recompute", "full"),
)


# --- a fit with little headroom says what it leaves out -------------------------------------
def test_tight_fit_names_the_overheads_left_out() -> None:
    r = run(*TIGHT_405B, "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["fits"] is True  # the verdict itself is unchanged
    spare = 1 - out["memory_bytes"] / out["gpu_memory_bytes"]
    assert 0 < spare < TIGHT_FIT_HEADROOM
    tight = [n for n in out["notes"] if n.startswith("fits with ")]
    assert len(tight) == 1, out["notes"]
    assert f"{spare * 100:.1f}% headroom" in tight[0]
    assert "CUDA context" in tight[0] and "fragmentation" in tight[0]
    text = run(*TIGHT_405B)
    assert text.exit_code == 0
    # the CLI's words: its options, not the library's fields
    assert "note: fits with 0.2% headroom" in text.stdout
    assert "--cuda-context" in text.stdout and "`cuda_context_bytes`" not in text.stdout


def test_roomy_fit_or_overheads_set_say_nothing_more() -> None:
    # the same layout on 512 GPUs in fsdp: plenty of room, no note
    r = run(*TIGHT_405B[:6], "64", "--strategy", "fsdp", "--recompute", "full", "--json")
    out = json.loads(r.stdout)
    assert out["fits"] and 1 - out["memory_bytes"] / out["gpu_memory_bytes"] >= 0.05
    assert not [n for n in out["notes"] if n.startswith("fits with ")]
    # only the overhead left at 0 is named; both set: nothing to say
    one = headroom_note(79e9, 80e9, cuda_context_bytes=1e9)
    assert one is not None and "fragmentation" in one and "CUDA context" not in one
    assert headroom_note(79e9, 80e9, 1e9, 0.05) is None
    assert headroom_note(81e9, 80e9) is None  # does not fit: the verdict says so already


# --- a boolean in a grid file: said once, as TOML spells it ---------------------------------
@pytest.mark.parametrize(("axis", "value"), [("nodes", "true"), ("nodes", "false")])
def test_grid_file_boolean_in_toml_spelling(tmp_path, axis: str, value: str) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(f'[grid]\npreset = ["dgx-h100"]\n{axis} = [{value}]\n')
    line = one_line_error(run("sweep", str(grid), "-o", str(tmp_path / "out.csv")))
    assert f"got {value} (a boolean); expected a whole number" in line, line
    assert "True" not in line and "False" not in line and "bool (" not in line, line
    assert line.count("(a boolean)") == 1 and "a bool " not in line, line  # once


def test_bool_refusal_in_the_api_too() -> None:
    with pytest.raises(ValueError) as e:
        parse_values("nodes", [True])
    assert str(e.value).endswith("got true (a boolean); expected a whole number"), e.value


# --- a bad range quotes the whole text typed --------------------------------------------------
def test_bad_range_quotes_the_whole_value(tmp_path) -> None:
    out = str(tmp_path / "out.csv")
    line = one_line_error(
        run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1...64", "-o", out)
    )
    assert "got '1...64'" in line and "its stop '.64'" in line, line
    line = one_line_error(
        run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=x..64", "-o", out)
    )
    assert "got 'x..64'" in line and "its start 'x'" in line, line
    assert "got 'x'" not in line


# --- a row's notes split back exactly ---------------------------------------------------------
def test_a_rows_notes_split_back_into_the_notes() -> None:
    # a 405B row's notes: the activations' line, then the 70B class's note, which holds "; "
    # (Megatron-LM, arXiv:2104.04473; Llama 3, ...): the old separator split it in two
    (row,) = sweep.sweep(
        kind="memory", arch="llama-3.1-405b", strategy="fsdp", ranks=512, preset="hgx-h200"
    ).to_dict(orient="records")
    r = run(*TIGHT_405B[:6], "64", "--strategy", "fsdp", "--json")
    notes = [n.rstrip(".").replace("--arch", "`arch`") for n in json.loads(r.stdout)["notes"]]
    assert any("; " in n for n in notes)  # a note holds the old separator
    assert row["notes"].split(NOTES_SEPARATOR) == notes
    # a step row of a mixture of experts: its notes back, each whole
    df = sweep.sweep(kind="step", preset="dgx-h100", arch="deepseek-v3", strategy="fsdp", nodes=64)
    parts = df["notes"].iloc[0].split(NOTES_SEPARATOR)
    assert len(parts) >= 2 and parts[0].startswith("a model of 671B")
    assert any("mixture of experts" in p for p in parts[1:])
    # a note holding the separator (a name the user gave) still splits back into as many
    assert len(join_notes(["model a | b: note", "two"]).split(NOTES_SEPARATOR)) == 2


# --- a CSV and a Parquet file read back alike -------------------------------------------------
def test_csv_and_parquet_read_back_with_the_same_categories(tmp_path) -> None:
    # NCCL picks 2 of its 4 all-reduce algorithms here: the Parquet file kept the 4 candidates
    # as the column's categories, the CSV (no dictionary) the 2 its rows hold
    axes = {"preset": "dgx-h100", "nodes": [1, 2, 4, 16], "size": "1KB..1GBx4"}
    df = sweep.sweep(**axes)
    back = {}
    for ext in ("csv", "parquet"):
        sweep.sweep_to_file(tmp_path / f"t.{ext}", **axes)
        back[ext] = read_table(tmp_path / f"t.{ext}")
    assert df["algorithm_used"].nunique() >= 2
    pd.testing.assert_frame_equal(back["csv"], back["parquet"])
    pd.testing.assert_frame_equal(back["parquet"], df)
    for col in ("algorithm_used", "protocol_used", "regime"):
        assert set(df[col].cat.categories) == set(df[col]), col  # the values the rows hold


def test_memory_page_says_a_tight_fit_in_its_boxes_words() -> None:
    from tests.test_app import open_page

    at = open_page("page_memory.py")
    at.number_input(key="dp_ranks").set_value(1)
    at.text_input(key="params").set_value("5.2B").run()  # 83.2 GB of state on 85.9 GB
    texts = [c.value for c in at.caption]
    tight = [t for t in texts if re.match(r"Fits with \d\.\d% headroom \(under 5%\): ", t)]
    assert len(tight) == 1, texts
    assert "CUDA context per GPU [B]" in tight[0] and "`" not in tight[0]
    at.text_input(key="params").set_value("4B").run()  # 64 GB: 20% to spare, nothing said
    assert not [c.value for c in at.caption if c.value.startswith("Fits with")]
