"""A sweep's CSV and Parquet files read back alike; the step band's runs and sources; band reach
figures quoted in the docs.

- A float column whose values were all whole numbers (a step sweep's ``comm_contention`` 0 and
  ``tokens_per_step``, a memory sweep's ``params``, a budget's ``tokens``, a link's
  ``bandwidth_GBps`` 50) was written to CSV as integers, so ``pandas.read_csv`` (and
  ``costmodel.sweep.read_table``) read it back as int64 where the Parquet file of the same sweep
  holds float64; and a boolean column with no value in any row (``reshard_after_forward`` of a
  zero1 sweep) came back from CSV as float NaN where Parquet gives booleans with nulls.
- The step band's note named only the largest run it was checked on; its file recorded no
  count of runs or sources. Now the script counts them from the rows and the note says
  "N runs from S sources", as a collective band's does.
- Docstrings and docs quote each band's reach ("20 nodes, 1,440 GPUs", "64 nodes, 512 GPUs"):
  each quote is checked against the fitted files, so a refit that moves them fails here.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import tomllib
from pathlib import Path

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


# --- the step band's runs and sources ----------------------------------------------------------
# The step band's note named only the largest run it was checked on, "(64 nodes, 512 GPUs)",
# where a collective band's says how many runs and sources its largest counts are the maxima of
# ("(20 nodes, 1,440 GPUs at most, over 6 runs from 5 sources)"), and fitted_step_band.toml
# recorded no count of runs or sources.
ROOT = Path(__file__).resolve().parents[1]
BAND_FILE = ROOT / "costmodel" / "data" / "fitted_step_band.toml"


def _step_fidelity_script():
    spec = importlib.util.spec_from_file_location(
        "_step_fidelity", ROOT / "scripts/step_fidelity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_step_band_file_records_the_runs_and_sources_counted_from_the_rows():
    """``n_runs`` and ``n_sources`` of the shipped file are the published rows' count and their
    sources' (``step_fidelity.measured_sources``), and the file is what the script writes from
    them: no count typed in, the fitted band unchanged."""
    from costmodel.step_fidelity import measured_range as range_of_rows
    from costmodel.step_fidelity import measured_sources as sources_of_rows
    from costmodel.steps_data import pure_dp_rows
    from costmodel.strategy.band import measured_range, measured_sources

    df = pure_dp_rows()
    runs, sources = sources_of_rows(df)
    assert (runs, sources) == (len(df), df["source"].nunique())
    assert measured_sources() == (runs, sources)
    assert sources > 1 and runs > sources
    doc = tomllib.loads(BAND_FILE.read_text())["scaling"]
    assert (doc["n_runs"], doc["n_sources"]) == (runs, sources)
    written = _step_fidelity_script().band_toml(
        (doc["low"], doc["high"]), doc["rows"], range_of_rows(df), sources_of_rows(df)
    )
    assert written == BAND_FILE.read_text()
    assert measured_range() == range_of_rows(df)


def test_the_step_band_note_says_how_many_runs_and_sources_on_every_surface():
    """One note, :func:`strategy.band.band_extrapolation`'s, in the collective bands' words
    ("N runs from S sources", ``uncertainty.runs_from_sources``): the API's step and scenario,
    ``costmodel step`` (text and ``--json``); the step sweep's row is flagged by the same rule
    (the step page shows ``ScenarioResult.band_extrapolation``: tests/test_step_extrapolation.py)."""
    import costmodel as cm
    from costmodel.strategy import strategy_step
    from costmodel.strategy.band import (
        band_extrapolation,
        band_sources,
        measured_range,
        measured_sources,
    )
    from costmodel.uncertainty import runs_from_sources

    from ._cli import run

    runs, sources = measured_sources()
    nodes, gpus = measured_range()
    assert (
        band_sources() == runs_from_sources(runs, sources) == f"{runs} runs from {sources} sources"
    )
    said = f"({nodes} nodes, {gpus} GPUs at most, over {band_sources()}): the band is extrapolated"
    far_nodes = nodes + 36
    note = band_extrapolation(far_nodes, 8 * far_nodes, (1.0, 2.0))[0]
    assert said in note, note
    step = strategy_step(7e9, cluster="dgx-h100", nodes=far_nodes, strategy="fsdp", timeline=False)
    assert step.band_extrapolation.startswith(note), step.band_extrapolation
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=far_nodes, zero_stage=3).evaluate(
        scaling=False, flips=False
    )
    assert said in r.band_extrapolation
    args = ("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", str(far_nodes))
    text = run(*args, "--strategy", "fsdp")
    assert text.exit_code == 0, text.stderr
    (line,) = [x for x in text.stdout.splitlines() if x.startswith("band: ")]
    assert said in line
    js = json.loads(run(*args, "--strategy", "fsdp", "--json").stdout)
    assert js["band_extrapolation"] == step.band_extrapolation
    df = cm.sweep(kind="step", preset="dgx-h100", params="7B", strategy="fsdp", nodes=far_nodes)
    assert df["band_extrapolated"].tolist() == [True]


# --- band reach figures quoted in docs and docstrings ------------------------------------------
# The docs and docstrings quote how far each band reaches ("20 nodes, 1,440 GPUs" across
# InfiniBand from 1 MiB, the step band's "64 nodes, 512 GPUs", "6 runs from 5 sources"); a
# refit that moves the fitted reach must fail here until every quote says the new figures.
class Above:
    """A quoted example count that must lie beyond a fitted one ("64 nodes is beyond ...")."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and other > self.limit

    def __repr__(self) -> str:
        return f"> {self.limit}"


class Reach:
    """One fitted band's reach: largest nodes and GPUs, runs and sources."""

    def __init__(self, nodes: float, gpus: float, runs: float, sources: float) -> None:
        self.n, self.g, self.r, self.s = int(nodes), int(gpus), int(runs), int(sources)

    def all(self) -> tuple[int, int, int, int]:
        return self.n, self.g, self.r, self.s


def _reach() -> dict[str, Reach]:
    """The fitted reach the library reads: the collective bands' cells of the ``nccl`` model
    (``fitted_corrections.toml``) and the step band (``fitted_step_band.toml``)."""
    from costmodel.fitted_corrections import FITTED
    from costmodel.strategy.band import measured_range, measured_sources

    out = {}
    for reg, cells in FITTED.bands["nccl"].items():
        for sc, c in cells.items():
            if "max_nodes" in c:
                out[f"{reg}/{sc}"] = Reach(
                    c["max_nodes"], c["max_gpus"], c["n_runs"], c["n_groups"]
                )
    out["step"] = Reach(*measured_range(), *measured_sources())
    return out


R = _reach()
IB, IB_LT = R["multi-node-infiniband/ge1MiB"], R["multi-node-infiniband/lt1MiB"]
NV_LT = R["single-node-nvlink/lt1MiB"]
NV = R["single-node-nvlink/ge1MiB"]
CLOUD = R["multi-node-cloud/ge1MiB"]
#: "the cloud fabrics on 2 nodes": one count for both size classes (None: they differ)
CLOUD_N = CLOUD.n if CLOUD.n == R["multi-node-cloud/lt1MiB"].n else None
STEP = R["step"]

#: (file, quoted phrase with # for each figure, the figures the fitted files say). Each phrase
#: must be in its file (whitespace and comment markers aside), every occurrence with those
#: figures.
QUOTES: list[tuple[str, str, tuple[object, ...]]] = [
    (
        "README.md",
        "across InfiniBand # nodes and # GPUs from 1 MiB, # nodes and # GPUs below; on one "
        "NVLink node # GPUs from 1 MiB, # below",
        (IB.n, IB.g, IB_LT.n, IB_LT.g, NV.g, NV_LT.g),
    ),
    (
        "README.md",
        '"# nodes is beyond the largest measured run in this regime (# nodes, # GPUs at most, '
        "over # runs from # sources)",
        (Above(IB.n), *IB.all()),
    ),
    (
        "README.md",
        '"# GPUs is beyond ... (# node, # GPUs at most',
        (Above(NV_LT.g), NV_LT.n, NV_LT.g),
    ),
    ("README.md", 'the sources and "extrapolated beyond # nodes"', (IB.n,)),
    (
        "README.md",
        '("multi-node-infiniband # runs from # sources from 1 MiB, # runs from # sources below '
        '1 MiB")',
        (IB.r, IB.s, IB_LT.r, IB_LT.s),
    ),
    (
        "README.md",
        "(a 1 kB prediction across InfiniBand rests on # sources, not the # from 1 MiB)",
        (IB_LT.s, IB.s),
    ),
    (
        "README.md",
        "Beyond the largest published run the band was checked on (# nodes, # GPUs: `max_nodes`",
        (STEP.n, STEP.g),
    ),
    (
        "README.md",
        "the step band was checked on (# nodes, # GPUs at most, over # runs from # sources)",
        STEP.all(),
    ),
    (
        "README.md",
        "(InfiniBand from 1 MiB on # nodes, below 1 MiB on # nodes and # GPUs, the cloud fabrics "
        "on # nodes",
        (IB.n, IB_LT.n, IB_LT.g, CLOUD_N),
    ),
    (
        "README.md",
        'a #-node FSDP step on DGX H100 says "the all-gather and reduce-scatter from 1 MiB over # '
        "nodes (# GPUs) are beyond their collective band (multi-node-infiniband), fitted to runs "
        'of up to # nodes" and its row "extrapolated beyond the collective band\'s # nodes"',
        (IB.n + 1, IB.n + 1, 8 * (IB.n + 1), IB.n, IB.n),
    ),
    ("README.md", "a collective of each lies beyond the collective band's # nodes", (IB.n,)),
    ("docs/design.md", "(`max_nodes`, `max_gpus` of that file: # nodes, # GPUs)", (STEP.n, STEP.g)),
    (
        "docs/design.md",
        "`band.collective_extrapolation`: #-# nodes of an InfiniBand cluster, whose collective "
        "band rests on #)",
        (IB.n + 1, STEP.n, IB.n),
    ),
    (
        "docs/CONTRACTS.md",
        "from `step_fidelity.measured_range(df)`: #, #)",
        (STEP.n, STEP.g),
    ),
    (
        "docs/CONTRACTS.md",
        'from `step_fidelity.measured_sources(df)`: #, #) and `band_sources()` ("# runs from # '
        'sources"',
        (STEP.r, STEP.s, STEP.r, STEP.s),
    ),
    (
        "docs/CONTRACTS.md",
        '`band_extrapolated_beyond` ("# nodes", "# GPUs" or both)',
        (STEP.n, STEP.g),
    ),
    (
        "docs/CONTRACTS.md",
        "reduce-scatter from 1 MiB over # nodes (# GPUs) are beyond their collective band "
        '(multi-node-infiniband), fitted to runs of up to # nodes: ...", `band_extrapolated_beyond` '
        '"the collective band\'s # nodes"',
        (IB.n + 1, 8 * (IB.n + 1), IB.n, IB.n),
    ),
    (
        "costmodel/uncertainty.py",
        "more GPUs than ``max_gpus``: # nodes, # GPUs across InfiniBand from 1 MiB; one node of # "
        "GPUs below 1 MiB over NVLink, so a one-node NVL72 of # GPUs is beyond it",
        (IB.n, IB.g, NV_LT.g, Above(NV_LT.g)),
    ),
    (
        "costmodel/uncertainty.py",
        '"# nodes is beyond the largest measured run in this regime (# nodes, # GPUs at most, '
        "over # runs from # sources): the band is extrapolated",
        (Above(IB.n), *IB.all()),
    ),
    (
        "costmodel/uncertainty.py",
        '"# GPUs is beyond ... (# node, # GPUs at most',
        (Above(NV_LT.g), NV_LT.n, NV_LT.g),
    ),
    ("costmodel/uncertainty.py", '"# sources; extrapolated beyond # nodes"', (IB.s, IB.n)),
    (
        "costmodel/uncertainty.py",
        '"# nodes", "# GPUs" or "# nodes and # GPUs"',
        (IB.n, NV_LT.g, IB.n, IB.g),
    ),
    (
        "costmodel/uncertainty.py",
        '(the app\'s caption: "extrapolated beyond # GPUs")',
        (NV_LT.g,),
    ),
    (
        "costmodel/uncertainty.py",
        "a one-node NVL72's # GPUs against a regime measured on #)",
        (Above(NV_LT.g), NV_LT.g),
    ),
    (
        "docs/CONTRACTS.md",
        '`ErrorBand.extrapolated_beyond` the counts exceeded ("# GPUs")',
        (NV_LT.g,),
    ),
    (
        "costmodel/strategy/band.py",
        "(the InfiniBand band from 1 MiB rests on runs of up to # nodes, below 1 MiB up to # nodes "
        "and # GPUs; the cloud-fabric band on # nodes) makes the step band extrapolated there "
        "too, inside the step band's own # nodes",
        (IB.n, IB_LT.n, IB_LT.g, CLOUD_N, STEP.n),
    ),
    (
        "costmodel/strategy/band.py",
        'the fitted run\'s counts it exceeds: "# nodes", "# nodes and # GPUs"',
        (IB.n, IB_LT.n, IB_LT.g),
    ),
    (
        "costmodel/strategy/comm.py",
        'the span exceeds ("# nodes", "# nodes and # GPUs"',
        (IB.n, IB_LT.n, IB_LT.g),
    ),
    (
        "costmodel/strategy/step.py",
        '"# nodes", "# GPUs" or both, and "the collective band\'s # nodes"',
        (STEP.n, STEP.g, IB.n),
    ),
    (
        "costmodel/scenario.py",
        "the measured counts the step exceeds, '# nodes', '# GPUs', ",
        (STEP.n, STEP.g),
    ),
    (
        "tests/test_step_extrapolation.py",
        "on published runs up to # nodes / # GPUs",
        (STEP.n, STEP.g),
    ),
    (
        "tests/test_band_extrapolation2.py",
        "published runs of up to # nodes / # GPUs",
        (STEP.n, STEP.g),
    ),
]

#: The notes' own wording wherever it is quoted: each figure must be a fitted band's.
_N = r"(\d[\d,]*)"
PATTERNS: list[tuple[str, str]] = [
    (rf"{_N} nodes?, {_N} GPUs? at most, over {_N} runs? from {_N} sources?", "cell"),
    (
        rf"largest measured run in this regime \((?:from 1 MiB: )?{_N} nodes?, {_N} GPUs?",
        "nodes, gpus",
    ),
    (rf"below 1 MiB: {_N} nodes?, {_N} GPUs?", "nodes, gpus"),
    (rf"the step band was checked on \({_N} nodes?, {_N} GPUs?", "step"),
    (rf"the collective band's {_N} nodes?", "nodes"),
    (rf"fitted to runs of up to {_N} nodes?", "nodes"),
]


def _normal(text: str) -> str:
    """Whitespace as one space, a comment's ``#``/``#:`` at a line's start dropped (a phrase
    quoted across lines of a comment reads as one)."""
    text = re.sub(r"\n[ \t]*#:?[ \t]*", " ", text)
    return re.sub(r"\s+", " ", text)


def _figures(groups: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(int(g.replace(",", "")) for g in groups)


@pytest.mark.parametrize(
    ("path", "quote", "fitted"), QUOTES, ids=[f"{p}:{q[:40]}" for p, q, _ in QUOTES]
)
def test_each_quoted_band_reach_is_the_fitted_one(path, quote, fitted):
    text = _normal((ROOT / path).read_text())
    pattern = r"\#".join(re.escape(part) for part in quote.split("#")).replace(r"\#", _N)
    found = [_figures(m.groups()) for m in re.finditer(pattern, text)]
    assert found, f"{path} no longer says: {quote}"
    for figures in found:
        assert list(figures) == list(fitted), (path, quote, figures, fitted)


def _quoted_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return files + sorted((ROOT / "costmodel").rglob("*.py"))


def test_every_note_quoted_anywhere_names_a_fitted_reach():
    """Wherever the notes' wording is quoted (README, docs/, every docstring and comment of the
    package), the figures are those of a fitted band: a collective band's cell or the step
    band."""
    cells = {r.all() for r in R.values()}
    pairs = {(r.n, r.g) for r in R.values() if r is not STEP}
    collective_nodes = {r.n for r in R.values() if r is not STEP}
    seen = 0
    for f in _quoted_files():
        text = _normal(f.read_text())
        for pattern, kind in PATTERNS:
            for m in re.finditer(pattern, text):
                got = _figures(m.groups())
                seen += 1
                where = f"{f.relative_to(ROOT)}: {m.group(0)}"
                if kind == "cell":
                    assert got in cells, where
                elif kind == "nodes, gpus":
                    assert got in pairs, where
                elif kind == "step":
                    assert got == (STEP.n, STEP.g), where
                else:
                    assert got[0] in collective_nodes, where
    assert seen >= 10, seen  # the patterns still find the notes' quotes
