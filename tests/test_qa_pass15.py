"""QA pass 15: a new user's walk through the CLI and the API (planning questions, edge inputs,
output files). Each defect found is pinned here with the surface it was typed on."""

from __future__ import annotations

import os

import pytest

from ._cli import one_line_error, run

GRID = 'kind = "collective"\n[grid]\npreset = "dgx-h100"\nnodes = 1\nsize = "1MB,1GB"\n'


# --- a sweep never writes over the grid file it reads ---------------------------------------------
@pytest.mark.parametrize("name", ["grid.csv", "grid.parquet"])
def test_a_sweep_refuses_to_write_its_rows_over_its_grid_file(tmp_path, name):
    """``costmodel sweep g.csv -o g.csv`` (a TOML grid under another extension) read the grid,
    then replaced it with the rows: the input was gone. The measure commands refused this; the
    sweep did not."""
    grid = tmp_path / name
    grid.write_text(GRID)
    r = run("sweep", str(grid), "-o", str(grid), "--no-progress")
    one_line_error(r, "--output", "is the file this command reads")
    assert grid.read_text() == GRID


def test_a_sweep_refuses_an_output_that_is_a_link_to_its_grid_file(tmp_path):
    """``-o out.parquet`` where out.parquet is a symbolic link to the grid: the rows were written
    through the link over the grid file."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    link = tmp_path / "out.parquet"
    os.symlink(grid, link)
    r = run("sweep", str(grid), "-o", str(link), "--no-progress")
    one_line_error(r, "--output", "is the file this command reads")
    assert grid.read_text() == GRID


def test_a_sweep_still_writes_another_file_and_overwrites_its_own_earlier_output(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out = tmp_path / "rows.csv"
    for _ in range(2):  # a rerun replaces the earlier rows, as before
        r = run("sweep", str(grid), "-o", str(out), "--no-progress")
        assert r.exit_code == 0, r.stderr
    assert out.read_text().count("\n") == 3  # header and two rows
    assert grid.read_text() == GRID
