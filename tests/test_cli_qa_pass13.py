"""A QA pass over batch evaluation (`costmodel sweep`, grid files, `cm.sweep`): each row equals
the single command's answer for its inputs, ranges take the forms the refusals list, and an
output never replaces an input."""

from __future__ import annotations

import csv
import importlib
import io
import json

import pytest

from tests._cli import one_line_error, run

sweep = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

GRID = "[grid]\npreset = 'dgx-h100'\nnodes = 1\nsize = '1MB'\n"


# --- ranges: START..STOP +STEP with a unit --------------------------------------------------


@pytest.mark.parametrize(
    ("axis", "text", "values"),
    [
        ("size", "1KB..4KB +1KB", [1000, 2000, 3000, 4000]),
        ("size", "8B..32B+8B", [8, 16, 24, 32]),
        ("bandwidth", "10GB/s..30GB/s +10GB/s", [10e9, 20e9, 30e9]),
        ("latency", "0us..2us +1us", [0.0, 1e-6, 2e-6]),
    ],
)
def test_an_arithmetic_range_takes_a_step_with_its_unit(axis, text, values):
    """RANGE_FORMS lists START..STOP +STEP, but a step with a unit ('+1KB', '+1us') was read
    as part of the stop and refused ("its stop '4KB +1KB' is not"): an arithmetic range over
    a unit axis could not be written at all where its start is 0 (latency)."""
    assert sweep.parse_values(axis, text) == values


def test_a_step_that_does_not_parse_is_named_as_the_step():
    with pytest.raises(ValueError, match=r"cannot parse the step of '1KB\.\.8KB\+1KBB'"):
        sweep.parse_values("size", "1KB..8KB+1KBB")


def test_an_arithmetic_float_range_gives_the_values_as_typed():
    """start + k x step drifted in the last bit: the 6th value of 0..10us +1us was
    4.9999999999999996e-06 s, not the 5us `collective --latency 5us` takes, so the row's time
    was not the single command's for the same latency."""
    values = sweep.parse_values("latency", "0..1e-5 +1e-6")
    assert values[5] == 5e-6 and values[10] == 1e-5
    assert sweep.parse_values("gamma", "1e-12..1.1e-11 +1e-12")[2] == 3e-12


def test_a_latency_row_equals_collective_for_that_latency():
    r = run(
        "sweep", "--no-progress", "--json", "--set", "ranks=64", "--set", "bandwidth=50GB/s",
        "--set", "size=14GB", "--set", "latency=0us..10us +1us",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = [x for x in json.loads(r.stdout) if x["latency_s"] == 5e-6]
    one = run(
        "collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s",
        "--latency", "5us", "--json",
    )  # fmt: skip
    assert one.exit_code == 0, one.stderr
    assert len(row) == 1 and row[0]["time_s"] == json.loads(one.stdout)["results"][0]["time_s"]


# --- an output never replaces the grid file it reads ----------------------------------------


def test_sweep_to_file_refuses_to_write_over_its_grid_file(tmp_path):
    """`costmodel sweep g -o g` is refused; the API's sweep_to_file(g, g) replaced the grid
    file (any extension is read as TOML) with the rows."""
    grid = tmp_path / "grid.csv"  # a TOML grid under a .csv name: the API read it, then
    grid.write_text(GRID, encoding="utf-8")
    with pytest.raises(ValueError, match=r"is the grid file this sweep reads"):
        sweep.sweep_to_file(grid, grid)
    assert grid.read_text(encoding="utf-8") == GRID
    link = tmp_path / "link.csv"
    link.symlink_to(grid)
    with pytest.raises(ValueError, match=r"is the grid file this sweep reads"):
        sweep.sweep_to_file(link, str(grid))
    assert grid.read_text(encoding="utf-8") == GRID
    out = tmp_path / "out.csv"  # another file: written
    assert sweep.sweep_to_file(out, grid).rows == 1
    assert len(list(csv.DictReader(io.StringIO(out.read_text())))) == 1


def test_the_cli_names_the_grid_file_it_reads(tmp_path):
    grid = tmp_path / "grid.csv"
    grid.write_text(GRID, encoding="utf-8")
    one_line_error(run("sweep", str(grid), "-o", str(grid)), "--output", "is the file this command")
    assert grid.read_text(encoding="utf-8") == GRID


# --- a power limit typed with its unit ------------------------------------------------------

POWER_RULE = "must be a power in watts, a plain number (a100-sxm-80gb 100..400, h100-sxm 200..700"


@pytest.mark.parametrize("command", ["step", "train"])
def test_a_power_limit_with_its_unit_is_refused_naming_the_range(command):
    """`--power-limit-w 500W` was click's "Invalid value for '--power-limit-w': Input should be
    a valid number, unable to parse string as a number", with no range."""
    args = ["--cluster", "dgx-h100", "--arch", "llama-3.1-8b", "--power-limit-w", "500W"]
    extra = ["--tokens", "1T"] if command == "train" else []
    one_line_error(run(command, *args, *extra), f"--power-limit-w: {POWER_RULE}", "got '500W'")


def test_the_sweep_refuses_a_power_limit_with_its_unit_in_the_same_words():
    """The step sweep's power_limit_w said "cannot parse '500W' as a number", no range."""
    r = run(
        "sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100",
        "--set", "arch=llama-3.1-8b", "--set", "nodes=1", "--set", "power_limit_w=500W",
    )  # fmt: skip
    one_line_error(r, f"--set power_limit_w: {POWER_RULE}", "got '500W'")


# --- the Dask engine: a refused run leaves no folder behind -----------------------------------


@pytest.fixture(scope="module")
def client():
    # threads in this process, as tests/test_distributed.py: well under a second to start
    from dask import distributed

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_a_dask_sweep_refused_by_its_workers_leaves_no_folder(tmp_path, client):
    """A preset file the workers cannot read refused the sweep (as the local engine refuses
    it) but left the new folder behind with a manifest and no rows."""
    (tmp_path / "mine.toml").write_text("name = 'mine'\n", encoding="utf-8")  # no preset kind
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\npreset = 'mine.toml'\nnodes = 1\nsize = '1MB'\n", encoding="utf-8")
    out = tmp_path / "ds"
    with pytest.raises(ValueError, match=r"preset: missing"):
        sweep.sweep(grid, engine="dask", scheduler=client, output=out)
    assert not out.exists()
    with pytest.raises(ValueError, match=r"preset: missing"):
        sweep.sweep(grid, engine="dask", scheduler=client, output=out)  # the same, again
    assert not out.exists()
    out.mkdir()  # a folder the user made: kept, and left empty
    with pytest.raises(ValueError, match=r"preset: missing"):
        sweep.sweep(grid, engine="dask", scheduler=client, output=out)
    assert out.is_dir() and not list(out.iterdir())


def test_a_dask_rerun_after_its_preset_file_was_edited_is_refused(tmp_path, client):
    """The manifest recorded the preset file's name, not what it held: a rerun after editing
    it skipped every finished partition and returned rows of the old cluster as the new one's."""
    from tests._paths import ROOT

    preset = tmp_path / "mine.toml"
    text = (ROOT / "presets" / "clusters" / "dgx-h100.toml").read_text(encoding="utf-8")
    preset.write_text("preset = 'cluster'\n" + text.replace('"dgx-h100"', '"mine"', 1))
    grid = {"preset": str(preset), "nodes": [1, 2], "size": "1GB"}
    out = tmp_path / "ds"
    first = sweep.sweep(grid, engine="dask", scheduler=client, output=out)
    assert first.written == 1
    again = sweep.sweep(grid, engine="dask", scheduler=client, output=out)  # unchanged: skipped
    assert again.written == 0
    preset.write_text(preset.read_text().replace("nics_per_node = 8", "nics_per_node = 1", 1))
    with pytest.raises(ValueError, match=r"holds a different sweep \(inputs differ; edited since"):
        sweep.sweep(grid, engine="dask", scheduler=client, output=out)


# --- grid files: an axis set again under another spelling, kind under [grid] ----------------


def test_a_set_axis_replaces_the_files_axis_under_its_alias(tmp_path):
    """--help: "an axis set here replaces the file's axis of that name"; `--set sizes=2MB`
    over a file's `size` was refused as "axis 'size' given twice" (the reverse worked)."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID, encoding="utf-8")
    r = run("sweep", str(grid), "--no-progress", "--json", "--set", "sizes=2MB")
    assert r.exit_code == 0, r.stderr
    assert [row["size_bytes"] for row in json.loads(r.stdout)] == [2_000_000]


def test_cm_sweep_keywords_override_a_grid_under_an_alias(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID, encoding="utf-8")
    assert sweep.sweep(grid, sizes="2MB")["size_bytes"].tolist() == [2_000_000]
    base = {"preset": "dgx-h100", "nodes": 1, "size": "1MB"}
    assert sweep.sweep(base, sizes="2MB")["size_bytes"].tolist() == [2_000_000]
    assert sweep.sweep(sweep.make_grid(base), message="2MB")["size_bytes"].tolist() == [2_000_000]
    with pytest.raises(ValueError, match=r"axis 'size' given twice"):  # one mapping: ambiguous
        sweep.make_grid({**base, "sizes": "2MB"})


def test_kind_under_the_grid_header_says_where_it_goes(tmp_path):
    """`kind = "step"` typed after `[grid]` is a key of the grid table: it was refused as an
    unknown collective axis with no word on where kind goes."""
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nkind = 'step'\npreset = 'dgx-h100'\nnodes = 1\n", encoding="utf-8")
    one_line_error(
        run("sweep", str(grid)), f"{grid}: unknown collective axis 'kind'", "above the [grid] table"
    )


# --- cm.sweep's chunk_rows: --chunk-rows' range and words ------------------------------------


@pytest.mark.parametrize("value", [1.5, True, 0, 3e9])
def test_cm_sweep_chunk_rows_is_refused_in_the_cli_words(value, tmp_path):
    """`--chunk-rows` takes a whole number in 1..1e9; `cm.sweep(chunk_rows=1.5)` raised
    TypeError ("'float' object cannot be interpreted as an integer"), `chunk_rows=True` ran
    one-row chunks and 3e9 was taken."""
    rule = r"chunk_rows: must be a whole number in 1\.\.1e9, got "
    with pytest.raises(ValueError, match=rule):
        sweep.sweep(preset="dgx-h100", nodes=1, size="1MB", chunk_rows=value)
    out = tmp_path / "out.csv"
    with pytest.raises(ValueError, match=rule):
        sweep.sweep_to_file(out, preset="dgx-h100", nodes=1, size="1MB", chunk_rows=value)
    assert not out.exists()
    assert len(sweep.sweep(preset="dgx-h100", nodes=[1, 2], size="1MB", chunk_rows=1.0)) == 2


def test_output_dash_says_how_to_get_stdout(tmp_path):
    """`-o -` (stdout, in most tools) was refused as "'-' has no extension", no word on the
    CSV that sweep writes to stdout without -o."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID, encoding="utf-8")
    one_line_error(run("sweep", str(grid), "-o", "-"), "--output: '-' is no file", "without -o")
    assert not (tmp_path / "-").exists()


def test_a_link_axis_beside_a_preset_is_named_by_its_set():
    """`--set latency=5us` beside a preset said "grid: ['gamma', 'latency'] come from the
    preset": a Python list, and no --set named, where `collective --cluster --latency` names
    --latency."""
    r = run(
        "sweep", "--set", "preset=dgx-h100", "--set", "latency=5us", "--set", "gamma=0",
        "--set", "size=1MB",
    )  # fmt: skip
    line = one_line_error(r, "--set gamma, --set latency: an axis of the collective over one link")
    assert "['" not in line


def test_cm_sweep_names_the_link_axis_beside_a_preset():
    with pytest.raises(ValueError, match=r"^bandwidth: an axis of the collective over one link"):
        sweep.sweep(preset="dgx-h100", bandwidth="50GB/s", size="1MB")


def test_the_summary_keys_each_reason_as_the_files_error_column(tmp_path):
    """`sweep -o out.csv --json` keyed its errors by the library's words ("with `protocol`
    'auto'") where the file's error column, and the Dask engine's summary, say them plain: a
    script could not find a reason's rows by it."""
    out = tmp_path / "out.csv"
    r = run(
        "sweep", "--no-progress", "--json", "--set", "preset=dgx-h100,dgx-a100",
        "--set", "nodes=2", "--set", "algorithm=nvls,ring", "--set", "size=1MB", "-o", str(out),
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    errors = json.loads(r.stdout)["errors"]
    column = [row["error"] for row in csv.DictReader(io.StringIO(out.read_text()))]
    assert errors and all("`" not in k for k in errors)
    assert {k: column.count(k) for k in errors} == errors


def test_nodes_without_a_preset_is_named_before_the_missing_ranks():
    """`--set nodes=2 --set bandwidth=50GB/s` said "a sweep over a raw link needs ranks", no
    word on the nodes given, which only a preset's cluster has."""
    r = run("sweep", "--set", "nodes=2", "--set", "bandwidth=50GB/s", "--set", "size=1MB")
    one_line_error(r, "--set nodes: an axis of a preset's cluster, so it needs a preset")
    with pytest.raises(ValueError, match=r"^gpus_per_node: an axis of a preset's cluster"):
        sweep.sweep(gpus_per_node=4, bandwidth="50GB/s", size="1MB")
