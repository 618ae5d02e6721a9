"""A sweep's CSV and Parquet files read back alike: every sweep kind, every column.

A float column whose values were all whole numbers (a step sweep's ``comm_contention`` 0 and
``tokens_per_step``, a memory sweep's ``params``, a budget's ``tokens``, a link's
``bandwidth_GBps`` 50) was written to CSV as integers, so ``pandas.read_csv`` (and
``costmodel.sweep.read_table``) read it back as int64 where the Parquet file of the same sweep
holds float64; and a boolean column with no value in any row (``reshard_after_forward`` of a
zero1 sweep) came back from CSV as float NaN where Parquet gives booleans with nulls.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from costmodel import sweep

# every sweep kind, with columns of whole-valued floats where the kind has them
GRIDS = {
    "collective-preset": {"preset": "dgx-h100", "nodes": [1, 2], "size": "1KB,1GB"},
    "collective-link": {
        "ranks": [8, 64],
        "size": "1MB,1GB",
        "bandwidth": "50GB/s",
        "latency": "5us",
    },
    "memory": {"params": "7B,70B", "ranks": [8, 64], "zero_stage": [0, 3]},
    "memory-arch": {
        "arch": "llama-3.1-8b",
        "strategy": "zero1,fsdp",
        "ranks": 64,
        "preset": "dgx-h100",
        "cuda_context": "1GB",
    },
    "step": {"preset": "dgx-h100", "arch": "llama-3.1-8b", "strategy": "fsdp", "nodes": [1, 2]},
    "train": {
        "preset": "dgx-h100",
        "arch": "llama-3.1-8b",
        "strategy": "zero1",
        "nodes": [4, 8],
        "tokens": "2T",
        "price": "aws-p5-on-demand",
    },
    # refused rows among priced ones: NaN floats, null integers and booleans
    "step-refused-rows": {
        "preset": "dgx-h100",
        "arch": "llama-3.1-8b",
        "strategy": "hsdp",
        "group_size": "3,4",
        "nodes": [1, 2],
    },
}
KIND = {"collective-preset": "collective", "collective-link": "collective"}
KIND.update({k: "memory" for k in ("memory", "memory-arch")})


def _kind(name: str) -> str:
    return KIND.get(name, "step")


def _whole_float_columns(df: pd.DataFrame) -> list[str]:
    """The float columns of ``df`` whose every value is a whole number (what CSV wrote as
    integers)."""
    out = []
    for c in df.columns:
        if df[c].dtype.kind == "f":
            x = df[c].to_numpy()
            if np.isfinite(x).all() and (x == np.floor(x)).all():
                out.append(c)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[pd.DataFrame, dict[str, object]]]:
    """Each grid's DataFrame and its CSV and Parquet files."""
    folder = tmp_path_factory.mktemp("dtypes")
    out = {}
    for name, axes in GRIDS.items():
        kind = _kind(name)
        paths = {}
        for ext in ("csv", "parquet"):
            paths[ext] = folder / f"{name}.{ext}"
            sweep.sweep_to_file(paths[ext], kind=kind, chunk_rows=3, **axes)  # several chunks
        out[name] = (sweep.sweep(kind=kind, **axes), paths)
    return out


@pytest.mark.parametrize("name", list(GRIDS))
def test_csv_and_parquet_read_back_equal_with_read_table(files, name):
    """``read_table`` of the CSV equals ``read_table`` of the Parquet file, column types
    included, and both equal the DataFrame ``sweep`` gives."""
    df, paths = files[name]
    csv, parquet = (sweep.read_table(paths[e]) for e in ("csv", "parquet"))
    assert dict(csv.dtypes) == dict(parquet.dtypes), name
    pd.testing.assert_frame_equal(csv, parquet, check_exact=True)
    pd.testing.assert_frame_equal(parquet, df.reset_index(drop=True), check_exact=True)


@pytest.mark.parametrize("name", list(GRIDS))
def test_pandas_reads_every_number_back_with_the_parquet_type(files, name):
    """With pandas alone (``read_csv`` as it comes, and as the README's recipe for texts), every
    number and boolean column of the CSV has the dtype and values ``read_parquet`` gives: a
    float column of whole numbers is no longer int64 from the CSV."""
    df, paths = files[name]
    parquet = pd.read_parquet(paths["parquet"])
    plain = pd.read_csv(paths["csv"])
    numbers = [c for c in parquet.columns if parquet[c].dtype.kind in "fiub"]
    assert numbers, name
    for col in numbers:
        assert plain[col].dtype == parquet[col].dtype, (name, col)
        np.testing.assert_array_equal(plain[col].to_numpy(), parquet[col].to_numpy())
    recipe = pd.read_csv(paths["csv"], keep_default_na=False, na_values=["nan"])
    for col in numbers:
        if not parquet[col].isna().any():  # the recipe keeps an empty field as text ""
            assert recipe[col].dtype == parquet[col].dtype, (name, col)


@pytest.mark.parametrize("name", ["collective-link", "memory", "memory-arch", "step", "train"])
def test_the_grids_have_a_float_column_of_whole_numbers(files, name):
    """The grids above hold the case the fix is for (so the tests above can fail): a float
    column whose every value is whole, written with one decimal in the CSV."""
    df, paths = files[name]
    whole = _whole_float_columns(df)
    assert whole, name
    cells = next(csv.DictReader(paths["csv"].read_text().splitlines()))
    for col in whole:
        assert cells[col].endswith(".0") and "e" not in cells[col], (name, col, cells[col])


def test_a_zero1_step_sweep_keeps_its_empty_boolean_column_boolean(files):
    """``reshard_after_forward`` is null in every zero1 row: read back from CSV as booleans
    with nulls (it was a float column of NaN), as from Parquet."""
    df, paths = files["train"]
    assert df["reshard_after_forward"].isna().all()
    for ext in ("csv", "parquet"):
        back = sweep.read_table(paths[ext])["reshard_after_forward"]
        assert back.dtype == object and back.tolist() == [None] * len(df), ext


def test_csv_ready_writes_whole_floats_with_one_decimal():
    """Per column: all whole (nulls aside, below 2**53) -> one decimal, exact, no exponent;
    a fraction, a NaN or a float past 2**53 keeps the float's shortest form; integers and
    booleans are written as they are."""
    table = pa.table(
        {
            "params": [7e9, 7e10],
            "zero": [0.0, -0.0],
            "gap": pa.array([2.0, None], type=pa.float64()),
            "x": [0.5, 2.0],
            "big": [1e16, 3.0],
            "nan": [float("nan"), 1.0],
            "n": pa.array([8, 64], type=pa.int64()),
            "ok": [True, False],
        }
    )
    ready = sweep.csv_ready(table)
    buf = io.BytesIO()
    import pyarrow.csv as pacsv

    pacsv.write_csv(ready, buf)
    lines = buf.getvalue().decode().splitlines()
    assert lines[1:] == [
        "7000000000.0,0.0,2.0,0.5,1e+16,nan,8,true",
        "70000000000.0,0.0,,2,3,1,64,false",
    ]
    back = pd.read_csv(io.BytesIO(buf.getvalue()))
    assert [str(t) for t in back.dtypes] == ["float64"] * 6 + ["int64", "bool"]
    assert back["params"].tolist() == [7e9, 7e10]
