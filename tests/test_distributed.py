"""Sweeps on a Dask cluster (costmodel.distributed): a partitioned Parquet dataset equal to the
single-process sweep row for row, resumable, atomic per partition, one grid per folder."""

from __future__ import annotations

import importlib
import json
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli
from costmodel import distributed as dist

sw = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

# realistic model, two presets, node counts and sizes: partitions of 97 rows cut across the
# (preset, algorithm) blocks of 7 x 21 = 147 rows, so a partition spans two blocks
GRID = {
    "preset": "dgx-h100,dgx-a100",
    "nodes": "1..64x2",
    "size": "8B..8GB x2.7",
    "algorithm": "auto,ring",
}
PART = 97


@pytest.fixture(scope="module")
def client():
    # threads in this process: starts in well under a second on 2 shared cores, and the
    # monkeypatches below reach the workers; the partition logic is the same as with processes.
    # dask.distributed (the `distributed` extra, installed by `make test`) is imported here, not
    # at collection: every pytest process collects this file, one runs it
    from dask import distributed

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def grid():
    return sw.make_grid(GRID)


@pytest.fixture(scope="module")
def reference(grid):
    return _plain(sw.sweep(grid))


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Categoricals as strings: partitions carry their own dictionaries, the values must agree."""
    return df.astype({c: str for c in df.select_dtypes("category").columns}).reset_index(drop=True)


def _settle(folder, quiet_s: float = 0.5, limit_s: float = 20.0) -> None:
    """Wait until the folder's listing stops changing."""
    t0, last = time.monotonic(), None
    while time.monotonic() - t0 < limit_s:
        now = sorted(p.name for p in folder.iterdir())
        if now == last:
            return
        last = now
        time.sleep(quiet_s)


def _parts(folder):
    return sorted(p.name for p in folder.glob("part-*.parquet"))


def test_evaluate_rows_concatenated_is_the_sweep(grid, reference):
    cuts = [0, 1, 146, 147, 148, 400, grid.rows]
    tables = [sw.evaluate_rows(grid, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    got = _plain(sw._unify(tables).to_pandas())
    pd.testing.assert_frame_equal(got, reference, check_exact=True)
    with pytest.raises(ValueError, match="rows"):
        sw.evaluate_rows(grid, 5, grid.rows + 1)


def test_dataset_equals_single_process_sweep(tmp_path, client, grid, reference):
    out = tmp_path / "ds"
    summary = dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    n_parts = -(-grid.rows // PART)
    assert (summary.rows, summary.partitions, summary.written, summary.skipped) == (
        grid.rows,
        n_parts,
        n_parts,
        0,
    )
    assert _parts(out) == [f"part-{i:06d}.parquet" for i in range(n_parts)]
    assert [pq.read_metadata(out / p).num_rows for p in _parts(out)] == [PART] * (n_parts - 1) + [
        grid.rows - PART * (n_parts - 1)
    ]
    pd.testing.assert_frame_equal(_plain(dist.read_dataset(out)), reference, check_exact=True)
    # a plain Parquet reader sees the same rows (the manifest's leading _ keeps it out)
    pd.testing.assert_frame_equal(_plain(pd.read_parquet(out)), reference, check_exact=True)
    doc = json.loads((out / dist.MANIFEST).read_text())
    assert doc["rows"] == grid.rows and doc["partition_rows"] == PART
    assert doc["axes"]["preset"] == ["dgx-h100", "dgx-a100"]


def test_memory_and_raw_link_grids(tmp_path, client):
    for i, g in enumerate(
        [
            sw.make_grid(
                {"params": "1e8..1e11x3", "ranks": "1..512x2", "zero_stage": "0,1,2,3"},
                kind="memory",
            ),
            sw.make_grid(size="8B..1GB x2", ranks="2..4096x2", bandwidth="50GB/s,25GB/s"),
        ]
    ):
        out = tmp_path / f"ds{i}"
        dist.sweep_dask(out, g, scheduler=client, partition_rows=50)
        pd.testing.assert_frame_equal(
            _plain(dist.read_dataset(out)), _plain(sw.sweep(g)), check_exact=True
        )


def test_rerun_recomputes_only_the_missing_partition(tmp_path, client, grid, reference):
    out = tmp_path / "ds"
    dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    before = {p: (out / p).stat() for p in _parts(out)}
    (out / "part-000003.parquet").unlink()
    summary = dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    assert (summary.written, summary.skipped) == (1, len(before) - 1)
    after = {p: (out / p).stat() for p in _parts(out)}
    assert after.keys() == before.keys()
    changed = [
        p
        for p in before
        if (before[p].st_ino, before[p].st_mtime_ns) != (after[p].st_ino, after[p].st_mtime_ns)
    ]
    assert changed == ["part-000003.parquet"]
    pd.testing.assert_frame_equal(_plain(dist.read_dataset(out)), reference, check_exact=True)


def test_interrupted_write_leaves_no_partial_partition(
    tmp_path, client, grid, reference, monkeypatch
):
    out = tmp_path / "ds"
    real_write = pq.write_table
    calls = {"n": 0}

    def dying_write(table, where, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= 3:  # from the third partition on, writes die half-way
            real_write(table.slice(0, table.num_rows // 2), where, *args, **kwargs)
            raise OSError("disk full (simulated)")
        return real_write(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", dying_write)
    with pytest.raises(OSError, match="simulated"):
        dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    _settle(out)  # a task already running when the error came back may still finish
    monkeypatch.setattr(pq, "write_table", real_write)
    # every visible partition is whole, no temporary file is left, one partition is missing
    finished = _parts(out)
    assert len(finished) < -(-grid.rows // PART)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    for name in finished:
        i = int(name[5:11])
        got = _plain(pq.read_table(out / name).to_pandas())
        want = reference.iloc[i * PART : (i + 1) * PART].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    with pytest.raises(ValueError, match="missing"):
        dist.read_dataset(out)
    # a worker killed outright leaves a hidden temporary: readers skip it, the rerun removes it
    (out / ".part-000000.parquet.x1y2.tmp").write_bytes(b"PAR1 half a file")
    assert len(pd.read_parquet(out)) == sum(pq.read_metadata(out / p).num_rows for p in finished)
    summary = dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    assert summary.skipped == len(finished)
    assert not list(out.glob(".*"))
    pd.testing.assert_frame_equal(_plain(dist.read_dataset(out)), reference, check_exact=True)


def test_a_different_grid_into_the_same_folder_is_refused(tmp_path, client, grid):
    out = tmp_path / "ds"
    dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART)
    other = sw.make_grid({**GRID, "nodes": "1..128x2"})
    with pytest.raises(ValueError, match=r"different sweep \(axes, rows differ\)"):
        dist.sweep_dask(out, other, scheduler=client, partition_rows=PART)
    with pytest.raises(ValueError, match="partition_rows"):
        dist.sweep_dask(out, grid, scheduler=client, partition_rows=PART + 1)
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        dist.sweep_dask(user, grid, scheduler=client, partition_rows=PART)
    assert [p.name for p in user.iterdir()] == ["notes.txt"]


def test_cm_sweep_engine_dask(tmp_path, client, grid, reference):
    df = cm.sweep(GRID, engine="dask", scheduler=client, chunk_rows=PART)
    pd.testing.assert_frame_equal(_plain(df), reference, check_exact=True)
    summary = cm.sweep(GRID, engine="dask", scheduler=client, output=tmp_path / "ds")
    assert isinstance(summary, dist.DatasetSummary) and summary.rows == grid.rows
    with pytest.raises(ValueError, match="engine: unknown 'spark'"):
        cm.sweep(GRID, engine="spark")
    with pytest.raises(ValueError, match="only with engine='dask'"):
        cm.sweep(GRID, scheduler=client)


def test_cli_engine_dask(tmp_path, client, reference):
    out = tmp_path / "ds"
    sets = [a for k, v in GRID.items() for a in ("--set", f"{k}={v}")]
    args = ["sweep", *sets, "--engine", "dask", "--scheduler", client.scheduler.address]
    res = CliRunner().invoke(cli.app, [*args, "--chunk-rows", str(PART), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["rows"] == len(reference) and doc["skipped"] == 0
    pd.testing.assert_frame_equal(_plain(dist.read_dataset(out)), reference, check_exact=True)
    res = CliRunner().invoke(cli.app, [*args, "--chunk-rows", str(PART), "-o", str(out)])
    assert res.exit_code == 0 and f"wrote 0 of {doc['partitions']} partitions" in res.stdout
    for bad, fragment in [
        (["sweep", *sets, "--engine", "dask"], "needs -o FOLDER"),
        (["sweep", *sets, "--engine", "spark", "-o", str(out)], "--engine: unknown"),
        (["sweep", *sets, "--scheduler", "tcp://x:1", "-o", str(tmp_path / "a.csv")], "only with"),
    ]:
        res = CliRunner().invoke(cli.app, bad)
        assert res.exit_code == 2, (res.stdout, res.stderr)
        assert fragment in res.stderr and len(res.stderr.strip().splitlines()) == 1
