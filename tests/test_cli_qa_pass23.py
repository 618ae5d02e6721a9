"""A sweep's integer columns stay integers where some rows are empty.

``preset=all`` with a ``ranks`` axis leaves some rows refused (12 GPUs cannot be built from
8-GPU nodes): their ``nodes``, ``gpus_per_node``, ``tokens_per_step`` and ``steps`` are empty,
as ``group_size`` is off hsdp. The Arrow tables held these as integers with nulls, but the
DataFrame (``cm.sweep``, ``read_table`` of either file) made each such column float64, ``3.0``
beside NaN, and ``costmodel sweep --json`` wrote ``"nodes": 3.0``. They are now pandas'
nullable ``Int64`` (``3`` beside ``<NA>``) on every road: the DataFrame, CSV and Parquet read
back, and ``--json`` (``3`` and null). The CSV keeps ``3`` and an empty field.

Each test checks every integer column the Parquet file types as integer, on every sweep kind,
so a column added later is held to it too; each failed before.
"""

from __future__ import annotations

import csv
import json
import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import costmodel as cm
from costmodel.sweep import read_table, sweep_to_file
from tests._cli import run

REFUSED = "cannot be built from"

# every sweep kind, each with empty integer cells (a refused row's, or group_size off hsdp)
KINDS = {
    "collective": dict(kind="collective", preset="all", ranks="6,12", size="1MB", op="all_reduce"),
    "step": dict(kind="step", preset="all", params="7B", ranks="6,12"),
    "train": dict(
        kind="step", preset="all", params="7B", ranks="6,12", tokens="1T", usd_per_gpu_hour="2"
    ),
    "memory": dict(kind="memory", preset="dgx-h100", params="7B", ranks="8", strategy="all"),
}


def _sweep(axes: dict) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one typed price over several GPUs: said, not tested
        return cm.sweep(**axes)


def _to_files(tmp_path, axes: dict) -> tuple[pd.DataFrame, pd.DataFrame, pa.Schema, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep_to_file(str(tmp_path / "s.csv"), **axes)
        sweep_to_file(str(tmp_path / "s.parquet"), **axes)
    return (
        read_table(tmp_path / "s.csv"),
        read_table(tmp_path / "s.parquet"),
        pq.read_schema(tmp_path / "s.parquet"),
        (tmp_path / "s.csv").read_text(),
    )


@pytest.mark.parametrize("name", list(KINDS))
def test_every_integer_column_stays_integer_on_every_road(name: str, tmp_path) -> None:
    axes = KINDS[name]
    df = _sweep(axes)
    from_csv, from_parquet, schema, text = _to_files(tmp_path, axes)
    ints = [f.name for f in schema if pa.types.is_integer(f.type)]
    empty = [c for c in ints if df[c].isna().any()]
    assert empty, f"{name}: no integer column with an empty row; the test would check nothing"
    rows = list(csv.DictReader(text.splitlines()))
    for c in ints:
        for where, frame in (("sweep", df), ("csv", from_csv), ("parquet", from_parquet)):
            col = frame[c]
            assert pd.api.types.is_integer_dtype(col.dtype), (name, where, c, col.dtype)
            assert str(col.dtype) == ("Int64" if c in empty else "int64"), (name, where, c)
            assert col.isna().tolist() == df[c].isna().tolist(), (name, where, c)
            assert [None if pd.isna(v) else v for v in col] == [
                None if pd.isna(v) else int(v) for v in df[c]
            ], (name, where, c)
        # the CSV writes a whole number and an empty field, never 3.0
        assert all(r[c] == "" or r[c].lstrip("-").isdigit() for r in rows), (name, c)
        assert [r[c] == "" for r in rows] == df[c].isna().tolist(), (name, c)


def test_the_refused_rows_are_empty_and_the_others_whole() -> None:
    df = _sweep(KINDS["collective"])
    refused = df["error"].astype(str).str.contains(REFUSED)
    assert refused.any() and (~refused).any()
    assert df.loc[refused, "nodes"].isna().all()
    assert df.loc[refused, "gpus_per_node"].isna().all()
    # 12 GPUs of 4-GPU nodes: 3 nodes of 4, integers
    row = df[(df["preset"] == "alcf-polaris") & (df["ranks"] == 12)].iloc[0]
    assert (row["nodes"], row["gpus_per_node"]) == (3, 4)
    assert not isinstance(row["nodes"], float)
    assert df["nodes"].dtype == "Int64"


def test_a_float_column_of_whole_numbers_beside_nan_reads_back_a_float(tmp_path) -> None:
    """``comm_contention`` is 0 on every priced row and NaN on a refused one: a float in the
    Parquet file, so a float from the CSV too (not integers with nulls)."""
    df = _sweep(KINDS["step"])
    from_csv, from_parquet, _, _ = _to_files(tmp_path, KINDS["step"])
    assert df["comm_contention"].dtype == "float64"
    assert from_parquet["comm_contention"].dtype == "float64"
    assert from_csv["comm_contention"].dtype == "float64"
    pd.testing.assert_frame_equal(from_csv, from_parquet)


@pytest.mark.parametrize(
    ("axes", "column"),
    [
        (dict(kind="memory", params="7B", ranks="8,16", strategy="ddp,zero1"), "group_size"),
        (
            dict(kind="step", preset="dgx-h100", params="7B", nodes="1", strategy="fsdp",
                 bucket_cap="25MiB"),
            "bucket_cap_bytes",
        ),
    ],
    ids=["group_size", "bucket_cap_bytes"],
)  # fmt: skip
def test_an_integer_column_empty_in_every_row_reads_back_integer(
    axes: dict, column: str, tmp_path
) -> None:
    """A ddp and zero1 memory sweep's ``group_size``, an fsdp step sweep's ``bucket_cap_bytes``:
    empty in every row, an integer column with nulls in the Parquet file; the CSV holds no
    type for it and reads it back the same."""
    df = _sweep(axes)
    from_csv, from_parquet, schema, _ = _to_files(tmp_path, axes)
    assert pa.types.is_integer(schema.field(column).type)
    for frame in (df, from_csv, from_parquet):
        assert frame[column].dtype == "Int64"
        assert frame[column].isna().all()
    pd.testing.assert_frame_equal(from_csv, from_parquet)


def test_the_cli_json_and_csv_write_integers() -> None:
    sets = ["--kind", "collective", "--set", "preset=all", "--set", "ranks=6,12",
            "--set", "size=1MB", "--set", "op=all_reduce"]  # fmt: skip
    r = run("sweep", *sets, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)
    refused = [x for x in rows if REFUSED in x["error"]]
    built = [x for x in rows if not x["error"]]
    assert refused and built
    assert all(x["nodes"] is None and x["gpus_per_node"] is None for x in refused)
    assert all(type(x["nodes"]) is int and type(x["gpus_per_node"]) is int for x in built)
    polaris = [x for x in built if x["preset"] == "alcf-polaris" and x["ranks"] == 12]
    assert '"nodes": 3, "gpus_per_node": 4,' in r.stdout and len(polaris) == 1
    r = run("sweep", *sets)
    assert r.exit_code == 0, r.stdout + r.stderr
    table = list(csv.DictReader(r.stdout.splitlines()))
    assert {x["nodes"] for x in table} <= {"", "1", "2", "3", "4"}
    assert any(x["nodes"] == "" for x in table) and any(x["nodes"] == "3" for x in table)


def test_memory_strategy_all_json_writes_no_group_as_null() -> None:
    """``memory --strategy all --json`` reads the memory sweep's rows: an hsdp row's group is
    an integer, the others' null (an Int64 cell's <NA> is not JSON)."""
    r = run("memory", "--params", "7B", "--cluster", "dgx-h100", "--strategy", "all", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    layouts = json.loads(r.stdout)["layouts"]
    groups = {x["layout"]: x["group_size"] for x in layouts}
    assert groups["ddp"] is None and groups["fsdp"] is None
    assert groups["hsdp g=2"] == 2 and type(groups["hsdp g=2"]) is int
