"""The sweep engine: grid parsing, vectorized evaluation, chunked streaming, atomic files."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from costmodel import collectives, memory, models

# costmodel.sweep is both a module and (in the package namespace) the function cm.sweep
sweep = importlib.import_module("costmodel.sweep")


# --- grid parsing ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        ("ranks", "8..4096x2", [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]),
        ("ranks", "2..8", [2, 3, 4, 5, 6, 7, 8]),
        ("ranks", "0..64+16", [0, 16, 32, 48, 64]),
        ("ranks", "2..10 x3", [2, 6]),
        ("size", "1KB..8KB x2", [1000, 2000, 4000, 8000]),
        ("size", "8B:64B", [8, 16, 32, 64]),
        ("size", "1MiB,1GB", [2**20, 10**9]),
        ("size", "1.5GB..6GB x2", [1_500_000_000, 3_000_000_000, 6_000_000_000]),
        ("bandwidth", "400Gb/s", [50e9]),
        ("latency", "1us..4us x2", [1e-6, 2e-6, 4e-6]),
        ("algorithm", "ring, tree", ["ring", "tree"]),
        ("ranks", [2, "4"], [2, 4]),
    ],
)
def test_parse_values(name, spec, expected):
    got = sweep.parse_values(name, spec)
    if isinstance(expected[0], str):
        assert got == expected
    else:  # float ranges: start * f**k, equal to 1e-12 relative (a few ulps of rounding)
        assert got == pytest.approx(expected, rel=1e-12)


def test_size_range_reaches_16GB():
    sizes = sweep.parse_values("size", "8B..16GB x2")
    assert sizes[0] == 8 and sizes[-1] == 8 * 2**30  # 8 B * 2^30 <= 16e9 < 8 B * 2^31
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:], strict=False))


@pytest.mark.parametrize(
    ("name", "spec", "fragment"),
    [
        ("ranks", "64..8", "empty range"),
        ("ranks", "8..64x1", "factor > 1"),
        (
            "size",
            "8XB..1GB",
            r"size: must be a size in 1 B\.\.16 TiB .*, got .8XB\.\.1GB. \(its start .8XB. is not\); "
            "expected",
        ),
        ("ranks", "2.5", "whole number"),
        ("ranks", "", "empty list"),
        ("colour", "red", "unknown collective axis 'colour'; allowed: preset"),
    ],
)
def test_parse_values_rejects(name, spec, fragment):
    with pytest.raises(ValueError, match=fragment):
        sweep.parse_values(name, spec)


def test_parse_set():
    assert sweep.parse_set("size=8B..16GB x2") == ("size", "8B..16GB x2")
    with pytest.raises(ValueError, match="name=v1,v2"):
        sweep.parse_set("ranks")


@pytest.mark.parametrize(
    ("axes", "fragment"),
    [
        ({"ranks": 8, "bandwidth": "50GB/s"}, "needs sizes"),
        ({"size": "1GB", "ranks": 8}, "needs a preset"),
        ({"size": "1GB", "bandwidth": "50GB/s"}, "needs ranks"),
        ({"size": "1GB", "ranks": 0, "bandwidth": "50GB/s"}, r"in 1\.\.1,000,000,000"),
        ({"size": "1GB", "ranks": 8, "bandwidth": "5GB/s", "model": "nccl"}, "model=textbook"),
        ({"size": "1GB", "preset": "x", "bandwidth": "5GB/s"}, "not both"),
        ({"size": "1GB", "ranks": 8, "bandwidth": "5GB/s", "nodes": 2}, "need a preset"),
    ],
)
def test_inconsistent_grids_are_refused(axes, fragment):
    with pytest.raises(ValueError, match=fragment):
        sweep.make_grid(axes)


def test_axis_given_twice_through_alias():
    with pytest.raises(ValueError, match="given twice"):
        sweep.make_grid({"size": "1GB", "sizes": "2GB", "ranks": 8, "bandwidth": "5GB/s"})


def test_toml_grid(tmp_path):
    f = tmp_path / "grid.toml"
    f.write_text(
        'kind = "collective"\n[grid]\nsize = "1MB..4MB x2"\nranks = [8, 16]\n'
        'bandwidth = "50GB/s"\nalgorithm = "ring,tree"\n'
    )
    g = sweep.load_grid(f)
    assert g.rows == 3 * 2 * 2
    assert g.axes["ranks"] == [8, 16]
    bad = tmp_path / "bad.toml"
    bad.write_text("[grid\n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        sweep.load_grid(bad)
    extra = tmp_path / "extra.toml"
    extra.write_text('colour = 1\n[grid]\nsize = "1MB"\n')
    with pytest.raises(ValueError, match="unknown keys"):
        sweep.load_grid(extra)


# --- evaluation ------------------------------------------------------------------------------
def test_lesson_allreduce_through_sweep():
    # lesson practice problem 1: 2 (63/64) 14 GB / 50 GB/s = 0.55125 s; exact arithmetic
    df = sweep.sweep(size="14GB", ranks=64, bandwidth="50GB/s")
    assert df["time_s"].iloc[0] == pytest.approx(2 * 63 / 64 * 14e9 / 50e9, rel=1e-12)
    assert df["busbw_GBps"].iloc[0] == pytest.approx(50.0, rel=1e-12)  # ring busbw = link bw


def test_every_row_matches_the_formula():
    df = sweep.sweep(
        size="8B..1GB x4",
        ranks="2..1024x2",
        bandwidth="25GB/s,50GB/s",
        latency="5us",
        algorithm="all",
    )
    n_alg = len(collectives.ALGORITHMS["all_reduce"])
    n_sizes = len(sweep.parse_values("size", "8B..1GB x4"))  # 8 B x 4^k <= 1e9: k = 0..13
    assert n_sizes == 14
    assert len(df) == n_alg * n_sizes * 10 * 2
    assert set(df["algorithm"]) == set(collectives.ALGORITHMS["all_reduce"])
    for alg, part in df.groupby("algorithm", observed=True):
        expected = collectives.collective_time(
            "all_reduce",
            part["size_bytes"].to_numpy(float),
            part["ranks"].to_numpy(),
            part["bandwidth_GBps"].to_numpy() * 1e9,
            latency_s=5e-6,
            algorithm=str(alg),
        )
        np.testing.assert_allclose(part["time_s"], expected, rtol=1e-12)  # same function
    np.testing.assert_allclose(df["algbw_GBps"], df["size_bytes"] / df["time_s"] / 1e9, rtol=1e-12)


def test_all_ops_expand_with_their_algorithms():
    df = sweep.sweep(op="all", algorithm="all", size="1MB", ranks=8, bandwidth="50GB/s")
    assert len(df) == sum(len(v) for v in collectives.ALGORITHMS.values())


def test_memory_sweep_matches_the_steps_layout_memory():
    from costmodel.strategy.memory import stage_memory

    df = sweep.sweep(kind="memory", params="1B..64B x2", zero_stage="0,3", ranks="8,64")
    assert len(df) == 7 * 2 * 2
    for _, row in df.iterrows():
        z, n = int(row["zero_stage"]), int(row["ranks"])
        mb = memory.training_memory(row["params"], zero_stage=z, dp_ranks=n)  # the lesson's
        assert row["lesson_memory_GB"] == pytest.approx(mb.total_bytes / 1e9, rel=1e-12)
        sm = stage_memory(z, n, row["params"])  # + buckets or gathered units, as the step
        assert row["memory_GB"] == pytest.approx(sm.total_bytes / 1e9, rel=1e-12)
        assert row["memory_GB"] > row["lesson_memory_GB"]


def test_chunking_does_not_change_the_result():
    axes = dict(size="8B..1GB x2", ranks="2..64x2", bandwidth="50GB/s", algorithm="ring,tree")
    whole = sweep.sweep(**axes)
    chunked = sweep.sweep(chunk_rows=7, **axes)
    pd.testing.assert_frame_equal(whole, chunked)
    g = sweep.make_grid(axes)
    sizes = [t.num_rows for t in sweep.iter_sweep(g, chunk_rows=50)]
    assert sum(sizes) == g.rows == len(whole)
    assert max(sizes) < 100  # a chunk closes once it holds >= 50 rows; blocks are <= 50


def test_in_memory_limit(monkeypatch):
    monkeypatch.setattr(sweep, "MAX_IN_MEMORY_ROWS", 10)
    with pytest.raises(ValueError, match="sweep_to_file"):
        sweep.sweep(size="8B..1MB x2", ranks=8, bandwidth="50GB/s")  # 17 rows


# --- files -----------------------------------------------------------------------------------
AXES = dict(
    size="8B..16GB x2",
    ranks="8..4096x2",
    bandwidth="50GB/s",
    latency="5us",
    algorithm="ring,tree,nvls",
)


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_streamed_file_reloads_equal_to_the_dataframe(tmp_path, ext):
    df = sweep.sweep(**AXES)
    out = tmp_path / f"out{ext}"
    summary = sweep.sweep_to_file(out, chunk_rows=97, **AXES)  # many chunks
    assert summary.rows == len(df)
    if ext == ".csv":
        back = pd.read_csv(out)
    else:
        back = pd.read_parquet(out)
    assert list(back.columns) == list(df.columns)
    for col in df.columns:
        if df[col].dtype.kind in "fiu":
            # CSV: shortest round-trip repr, so exact; integers stay integers
            np.testing.assert_array_equal(back[col].to_numpy(), df[col].to_numpy())
        else:
            assert back[col].astype(str).tolist() == df[col].astype(str).tolist()


def test_csv_writes_a_count_column_in_one_format(tmp_path):
    """params 7B and 70B: one format per column in the file and on stdout (Arrow's shortest
    float form wrote 7000000000 and 7e+10 in one column), with one decimal, so the column reads
    back a float as the Parquet file holds it; fractions stay in their shortest form."""
    import csv

    from costmodel import cli

    args = ["sweep", "--kind", "memory", "--set", "params=7B,70B,700B", "--set", "ranks=8"]
    out = tmp_path / "m.csv"
    assert cli.main([*args, "--no-progress", "-o", str(out)]) == 0
    stdout = CliRunner().invoke(cli.app, args).stdout
    for text in (out.read_text(), stdout):
        rows = list(csv.DictReader(text.splitlines()))
        assert [r["params"] for r in rows] == ["7000000000.0", "70000000000.0", "700000000000.0"]
        assert not any("e+" in v for r in rows for v in r.values())
    cols = {"x": [0.5, 2.0], "n": [1e15, 3.0], "big": [1e16, 3.0], "z": [float("nan"), 1.0]}
    table = sweep.csv_ready(pa.table(cols))  # past 2**53 a float is not an exact count
    assert [str(t) for t in table.schema.types] == [
        "double",
        "decimal128(38, 1)",
        "double",
        "double",
    ]


def test_output_format_and_writability(tmp_path):
    assert sweep.output_format("x.PQ") == "parquet"
    with pytest.raises(ValueError, match="allowed: .csv, .parquet"):
        sweep.output_format("x.xlsx")
    with pytest.raises(ValueError, match="does not exist"):
        sweep.check_writable(tmp_path / "missing" / "x.csv")
    with pytest.raises(ValueError, match="is a folder"):
        sweep.check_writable(tmp_path)


def test_failing_write_leaves_no_file(tmp_path):
    out = tmp_path / "out.csv"

    def chunks():
        yield from sweep.iter_sweep(sweep.make_grid(AXES), chunk_rows=10)
        raise KeyboardInterrupt  # interrupted after some chunks were written

    with pytest.raises(KeyboardInterrupt):
        sweep.write_table(out, chunks())
    assert list(tmp_path.iterdir()) == []  # neither the final name nor a temporary file


def test_failing_write_keeps_the_old_file(tmp_path):
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")

    def chunks():
        yield from sweep.iter_sweep(sweep.make_grid(AXES), chunk_rows=10)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        sweep.write_table(out, chunks())
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_write_text_atomic(tmp_path):
    out = tmp_path / "a.txt"
    sweep.write_text_atomic(out, "hello")
    assert out.read_text() == "hello"


# --- presets through predict -----------------------------------------------------------------
def test_preset_rows_equal_predict_collective():
    from costmodel import predict

    df = sweep.sweep(preset="dgx-h100,dgx-a100", nodes="1,2,8", size="8B..16GB x4")
    n_sizes = len(sweep.parse_values("size", "8B..16GB x4"))
    assert len(df) == 2 * 3 * n_sizes
    assert set(df["model"]) == {"nccl"}
    for (preset, nodes), part in df.groupby(["preset", "nodes"], observed=True):
        p = predict.predict_collective(
            "all_reduce", part["size_bytes"].to_numpy(float), str(preset), nodes=int(nodes)
        )
        np.testing.assert_allclose(part["time_s"], p.time_s, rtol=1e-12)  # the same road
        np.testing.assert_allclose(part["busbw_GBps"], p.busbw_bytes_per_s / 1e9, rtol=1e-12)
        assert part["algorithm_used"].astype(str).tolist() == [str(a) for a in p.algorithm]
        assert part["protocol_used"].astype(str).tolist() == [str(a) for a in p.protocol]
        assert (part["ranks"] == part["nodes"] * part["gpus_per_node"]).all()


def test_preset_ranks_map_to_nodes_and_slices():
    df = sweep.sweep(preset="dgx-h100", ranks="2,4,8,16,64", size="1GB", model="textbook")
    assert df["nodes"].tolist() == [1, 1, 1, 2, 8]
    assert df["gpus_per_node"].tolist() == [2, 4, 8, 8, 8]
    with pytest.raises(ValueError, match="cannot be built"):
        sweep.sweep(preset="dgx-h100", ranks=12, size="1GB")


def test_preset_all_and_textbook_algorithms():
    from costmodel import presets

    df = sweep.sweep(preset="all", size="1GB")
    assert set(df["preset"]) == set(presets.names("cluster"))
    # the flat formula over every algorithm is the lesson's model now ("textbook" is
    # topology-aware and refuses NVLS across nodes, as cm.allreduce_time(M, cluster) always did)
    df = sweep.sweep(preset="dgx-h100", model="lesson", algorithm="all", nodes=2, size="1GB")
    assert set(df["algorithm"]) == set(collectives.ALGORITHMS["all_reduce"])
    assert (df["model"] == "lesson").all()
    # the NVLS row is refused row by row (its error says why); the others are answered
    df = sweep.sweep(preset="dgx-h100", model="textbook", algorithm="all", nodes=2, size="1GB")
    nvls = df[df["algorithm"] == "nvls"]
    assert len(nvls) == 1 and nvls["time_s"].isna().all()
    assert "'nvls' needs in-switch reduction" in nvls["error"].iloc[0]
    rest = df[df["algorithm"] != "nvls"]
    assert (rest["error"] == "").all() and (rest["time_s"] > 0).all()
    with pytest.raises(ValueError, match="model: 'magic' is not a model"):
        sweep.sweep(preset="dgx-h100", model="magic", size="1GB")
    # the nccl model's 'all' is its row of the one table, as collective --algorithm all lists
    df = sweep.sweep(preset="dgx-h100", algorithm="all", size="1GB")
    assert df["algorithm"].tolist() == list(models.algorithms("nccl", "all_reduce"))


def test_memory_sweep_with_preset_says_what_fits():
    df = sweep.sweep(kind="memory", preset="dgx-h100", params="4B,6B")
    # 16 B/param: 64 GB and 96 GB vs the H100's device-true 81559 MiB = 85.5 GB
    assert df["fits"].tolist() == [True, False]
    assert (df["gpu_memory_GB"] == 81559 * 2**20 / 1e9).all()


# --- empty texts: "" in every output -------------------------------------------------------------
_TEXT_GRIDS = [
    # band_note: "" on one node (the band is known), a reason between nodes (all-to-all)
    ("collective", {"preset": "dgx-h100", "op": "all_to_all", "size": "1MB", "nodes": [1, 2]}),
    # notes and band_note: "" on DDP for an 8B model on H100 (nothing left out, band known)
    ("step", {"preset": "dgx-h100", "arch": "llama-3.1-8b", "nodes": [1, 2]}),
    ("memory", {"params": "7B,70B", "ranks": [1, 8]}),
]


@pytest.mark.parametrize(("kind", "axes"), _TEXT_GRIDS, ids=[k for k, _ in _TEXT_GRIDS])
def test_text_columns_read_back_alike_from_csv_and_parquet(tmp_path, kind, axes):
    """An empty ``notes``/``band_note`` is ``""`` in the DataFrame and read back ``""`` from CSV
    and from Parquet (pandas' read_csv made it NaN where read_parquet gave ""): the two files
    round-trip to the same text columns, equal to the DataFrame's."""
    df = sweep.sweep(kind=kind, **axes)
    # text: a column of strings (reshard_after_forward, a bool with nulls off fsdp/hsdp, is
    # an object column too, but of True/False/None)
    text = [
        c
        for c in df.columns
        if df[c].dtype.kind not in "fiub" and any(isinstance(v, str) for v in df[c])
    ]
    assert {"notes", "band_note"} & set(text), text
    back = {}
    for ext in (".csv", ".parquet"):
        out = tmp_path / f"t{ext}"
        sweep.sweep_to_file(out, kind=kind, **axes)
        back[ext] = sweep.read_table(out)
        assert list(back[ext].columns) == list(df.columns)
    for col in text:
        want = df[col].astype(str).tolist()
        assert not back[".csv"][col].isna().any() and not back[".parquet"][col].isna().any(), col
        assert back[".csv"][col].astype(str).tolist() == want, col
        assert back[".parquet"][col].astype(str).tolist() == want, col
    for col in df.columns:  # numbers too: NaN where missing, in both
        if col not in text:
            np.testing.assert_array_equal(
                back[".csv"][col].to_numpy(dtype=float), df[col].to_numpy(dtype=float)
            )
    # the pandas recipe the README gives reads the CSV's texts alike
    plain = pd.read_csv(tmp_path / "t.csv", keep_default_na=False, na_values=["nan"])
    for col in text:
        assert plain[col].astype(str).tolist() == df[col].astype(str).tolist(), col
    if kind != "memory":  # the grids above do have an empty text
        assert any((df[c].astype(str) == "").any() for c in text)


def test_a_missing_text_is_written_empty_in_csv_and_parquet(tmp_path):
    """A text cell with nothing in it (a compare table's ``note`` None) is written ``""`` in
    both formats: Parquet held a null (None in pandas) where CSV held an empty field. Numbers
    keep their NaN."""
    frame = pd.DataFrame({"x": [1.5, float("nan")], "note": [None, "why"], "empty": [None, None]})
    for ext in (".csv", ".parquet"):
        out = tmp_path / f"n{ext}"
        sweep.write_table(out, frame)
        got = sweep.read_table(out)
        assert got["note"].astype(str).tolist() == ["", "why"], ext
        assert got["empty"].astype(str).tolist() == ["", ""], ext
        assert got["x"].iloc[0] == 1.5 and np.isnan(got["x"].iloc[1]), ext
    assert pd.read_parquet(tmp_path / "n.parquet")["note"].tolist() == ["", "why"]
    assert (tmp_path / "n.csv").read_text().splitlines()[1:] == ['1.5,"",""', ',"why",""']
