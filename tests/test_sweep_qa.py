"""A new user's pass over the sweeps (`costmodel sweep`, grid TOML files, `cm.sweep`): what a
user types that the README does not show, and what each should get back."""

from __future__ import annotations

import importlib
import json

import pytest

from tests._cli import one_line_error, run

sweep = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

STEP = "kind = 'step'\n[grid]\npreset = 'dgx-h100'\narch = 'llama-3.1-8b'\nnodes = 1\n"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        # was silently mfu 1.0 (contention 1.0)
        ("mfu = true", "mfu: must be a model FLOP utilisation in [0.001, 1], got true (a boolean)"),
        ("comm_contention = true", "comm_contention: must be an overlap contention in [0, 1]"),
        ("nodes = true", "nodes: must be a whole number in 1..1,000,000, got true (a boolean)"),
        ("micro_batch = true", "micro_batch: must be a whole number"),
    ],
)
def test_a_bool_in_a_grid_file_is_refused_and_named_by_the_file(tmp_path, line, fragment):
    """TOML `true` for a number was read as 1 (`mfu = true`: every row priced at MFU 1.0) or
    refused with a TypeError that escaped the file's name and the axis' range."""
    text = STEP.replace("nodes = 1\n", "") + ("" if line.startswith("nodes") else "nodes = 1\n")
    grid = tmp_path / "grid.toml"
    grid.write_text(text + line + "\n", encoding="utf-8")
    before = grid.read_bytes()
    out = tmp_path / "out.csv"
    one_line_error(run("sweep", str(grid), "-o", str(out)), f"{grid}: {fragment}")
    assert not out.exists() and grid.read_bytes() == before  # nothing written, input untouched


@pytest.mark.parametrize("axes", [{"mfu": True}, {"gamma": True}, {"nodes": True}])
def test_a_bool_for_a_number_is_a_value_error_in_the_api(axes):
    """The API refuses a bool for a number with a ValueError naming the axis (not a TypeError,
    and not the number 1)."""
    kind = "collective" if "mfu" not in axes else "step"
    base = {"preset": "dgx-h100", "nodes": 1, "size": "1MB"}
    if kind == "step":
        base = {"preset": "dgx-h100", "arch": "llama-3.1-8b", "nodes": 1}
    if "gamma" in axes:
        base = {"bandwidth": "50GB/s", "latency": "5us", "ranks": 8, "size": "1MB"}
    name = next(iter(axes))
    base = {k: v for k, v in base.items() if k != name}
    with pytest.raises(ValueError, match=f"^{name}: .*bool"):
        sweep.sweep(**base, **axes, kind=kind)


def test_a_rows_notes_are_told_apart_in_a_table():
    """Two notes of one memory sweep row (the activations' line, then the 70B class's tensor
    and pipeline parallelism) ran into one another ("... loss fp32 a model of 71B ...");
    they are joined by " | ", and the row's text is `memory --json`'s list joined so."""
    axes = {"arch": "llama-3.1-70b", "strategy": "fsdp", "ranks": 64, "preset": "dgx-h100"}
    (row,) = sweep.sweep(kind="memory", **axes).to_dict(orient="records")
    r = run("memory", "--arch", "llama-3.1-70b", "--strategy", "fsdp", "--ranks", "64",
            "--cluster", "dgx-h100", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["notes"]
    assert len(notes) == 2 and notes[1].startswith("a model of 71B")
    assert row["notes"].replace("`arch`", "--arch") == " | ".join(notes)
    assert "loss fp32 | a model of 71B parameters" in row["notes"]


def test_a_step_rows_notes_are_told_apart_too():
    """A step sweep row of a 671B mixture of experts carries two notes (its size, its experts):
    " | " between them, the MoE note's own sentences kept, no ". |" or ".;"."""
    df = sweep.sweep(kind="step", preset="dgx-h100", arch="deepseek-v3", strategy="fsdp", nodes=64)
    text = df["notes"].iloc[0]
    assert text.count(" | ") >= 1 and "a model of 671B" in text and "mixture of experts" in text
    assert ". |" not in text and not text.endswith(".")


@pytest.mark.parametrize("name", ["out.csv", "out.parquet"])
def test_a_file_the_disk_has_no_room_for_is_refused_after_its_first_chunk(
    tmp_path, monkeypatch, name
):
    """A grid under the row limit can still be tens of GB of CSV: it ran until the disk was
    full. The first chunk's bytes per row now estimate the file; one the folder has no room for
    is refused on one line naming the estimate and the free space, and the file already there
    (and the folder) are left as they were."""
    import shutil

    output = importlib.import_module("costmodel.sweep.output")
    real = shutil.disk_usage
    monkeypatch.setattr(output.shutil, "disk_usage", lambda p: real(p)._replace(free=5000))
    out = tmp_path / name
    out.write_bytes(b"an earlier sweep")
    args = ("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1..64")
    args += ("--set", "size=8B..16GB x2", "--chunk-rows", "100", "-o", str(out))
    line = one_line_error(run(*args), "output: about ", "for 1,984 rows (from the first 100)")
    assert "5 kB free in" in line
    assert ("write .parquet" in line) == name.endswith(".csv")
    assert out.read_bytes() == b"an earlier sweep"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left
    monkeypatch.setattr(output.shutil, "disk_usage", real)  # with room: written, every row
    assert run(*args).exit_code == 0
    assert len(sweep.read_table(out)) == 1984


def test_sigterm_mid_write_leaves_neither_a_half_file_nor_its_temporary(tmp_path):
    """`kill`, `timeout` and a batch scheduler's preemption send SIGTERM, whose default action
    skipped the cleanup Ctrl-C gets: the half-written `.out.csv.<random>.tmp` stayed beside the
    output (as large as the sweep so far). Now it is removed, the earlier file is left as it
    was, and the process exits 143 as a SIGTERM-killed one does."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out.csv"
    out.write_text("an earlier sweep\n")
    ready = tmp_path / "ready"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from costmodel.atomic import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_text('half a sweep')\n"
        "    Path(sys.argv[2]).touch()\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", script, str(out), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert len(list(tmp_path.glob(".out.csv.*.tmp"))) == 1  # the write under way
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "ready"]
    assert out.read_text() == "an earlier sweep\n"


def test_the_dask_engine_refuses_a_csv_name_for_its_folder(tmp_path):
    """`--engine dask -o out.csv` made a folder named out.csv holding Parquet files; the name
    promised one CSV file. Refused before any cluster starts, naming the folder names allowed;
    nothing created."""
    out = tmp_path / "out.csv"
    args = ("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1", "--set", "size=1GB")
    one_line_error(
        run(*args, "--engine", "dask", "-o", str(out)),
        "--output: 'out.csv' names a CSV file, but the dask engine writes a folder of Parquet",
        "'out' or 'out.parquet'",
    )
    assert list(tmp_path.iterdir()) == []


def test_output_without_dask_names_what_was_given_and_the_local_road(tmp_path):
    """`cm.sweep(..., output="grid.parquet")` said "scheduler, output: only with engine='dask'"
    though no scheduler was given; it names the argument given and the local road."""
    out = tmp_path / "grid.parquet"
    with pytest.raises(ValueError) as info:
        sweep.sweep(preset="dgx-h100", nodes=1, size="1GB", output=str(out))
    assert str(info.value) == (
        "output: only with engine='dask'; to write a file here: cm.sweep.sweep_to_file(path, ...)"
    )
    with pytest.raises(ValueError, match=r"^scheduler: only with engine='dask'$"):
        sweep.sweep(preset="dgx-h100", nodes=1, size="1GB", scheduler="tcp://x:1")
    assert not out.exists()
    sweep.sweep_to_file(out, preset="dgx-h100", nodes=1, size="1GB")  # the road named
    assert len(sweep.read_table(out)) == 1
