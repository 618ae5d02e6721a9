"""One layout, one name: ``strategy``, ``layout``, ``group_size`` and ``reshard_after_forward``
mean one thing each on every surface (``Layout.identity``).

``strategy`` is the plain strategy (one of ``STRATEGIES``), ``layout`` the layout's name
(``hsdp g=8``, ``fsdp (no reshard)``), ``group_size`` hsdp's sharding group (null elsewhere) and
``reshard_after_forward`` whether fsdp/hsdp free the gathered parameters after forward (null
elsewhere). A named step sweep wrote the layout's name under ``strategy`` with no ``layout``
column, while ``strategy=all`` and the memory sweep wrote the plain strategy beside it; ``step
--json`` and the advisor's rows wrote the name under ``strategy``; ``memory --json`` and
``step --json`` echoed ``group_size``/``reshard_after_forward`` as typed (null for hsdp's
default group), not as the layout priced. ``scenario --vs --json`` said what B was only as the
``--vs`` text.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

import costmodel as cm
from costmodel import presets
from costmodel.strategy.layout import LAYOUT_KEYS, STRATEGIES, make_layout
from costmodel.sweep import read_table, sweep_to_file
from tests._cli import run

ARCH, PRESET, NODES = "llama-3.1-8b", "dgx-h100", 2
GPN = int(presets.cluster(PRESET).gpus_per_node)  # hsdp's default group: one node
RANKS = NODES * GPN

# (CLI options, sweep axes) naming one layout each, and the Layout they ask for
LAYOUTS = {
    "ddp": ([], {}, {"strategy": "ddp"}),
    "zero1": ([], {}, {"strategy": "zero1"}),
    "fsdp": ([], {}, {"strategy": "fsdp"}),
    "fsdp-no-reshard": (
        ["--no-reshard"],
        {"reshard_after_forward": "false"},
        {"strategy": "fsdp", "reshard_after_forward": False},
    ),
    "hsdp-default": ([], {}, {"strategy": "hsdp"}),
    "hsdp-4": (["--group-size", "4"], {"group_size": "4"}, {"strategy": "hsdp", "group_size": 4}),
}


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def _ident(row: dict) -> dict:
    """The five keys of a row, with a table's NaN (a null integer) read as None."""
    out = {}
    for k in LAYOUT_KEYS:
        v = row[k]
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            v = None
        elif k == "group_size":
            v = int(v)
        elif k in ("reshard_after_forward", "gradient_as_bucket_view"):
            v = bool(v)
        out[k] = v
    return out


def _expected(fields: dict) -> dict:
    """What the five keys must say for a layout asked with ``fields`` on RANKS GPUs, worked
    out here from the rule, not read from the code under test."""
    st = fields["strategy"]
    group = fields.get("group_size", GPN) if st == "hsdp" else None
    reshard = fields.get("reshard_after_forward", True) if st in ("fsdp", "hsdp") else None
    name = f"hsdp g={group}" if st == "hsdp" else st
    if reshard is False:
        name += " (no reshard)"
    view = fields.get("gradient_as_bucket_view", False) if st == "ddp" else None
    if view:
        name += " (bucket view)"
    return {
        "strategy": st,
        "layout": name,
        "group_size": group,
        "reshard_after_forward": reshard,
        "gradient_as_bucket_view": view,
    }


@pytest.fixture(scope="module")
def all_sweep() -> pd.DataFrame:
    return cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="all", nodes=str(NODES))


@pytest.mark.parametrize("key", list(LAYOUTS))
def test_one_layout_reads_the_same_on_every_surface(key, all_sweep):
    options, axes, fields = LAYOUTS[key]
    want = _expected(fields)
    assert make_layout(ranks=RANKS, gpus_per_node=GPN, **fields).identity() == want
    st = fields["strategy"]
    common = ["--arch", ARCH, "--cluster", PRESET, "--strategy", st, *options]
    got = {}
    # the sweeps: a named step sweep, strategy=all, a memory sweep
    (named,) = cm.sweep(
        kind="step", preset=PRESET, arch=ARCH, nodes=str(NODES), strategy=st, **axes
    ).to_dict("records")
    got["step sweep"] = named
    ranked = all_sweep[all_sweep["layout"] == want["layout"]].to_dict("records")
    assert len(ranked) == 1, (want["layout"], sorted(all_sweep["layout"]))
    got["strategy=all sweep"] = ranked[0]
    (mem,) = cm.sweep(
        kind="memory", preset=PRESET, arch=ARCH, ranks=str(RANKS), strategy=st, **axes
    ).to_dict("records")
    got["memory sweep"] = mem
    # the commands' --json
    got["step --json"] = _json("step", *common, "--nodes", str(NODES))
    got["memory --json"] = _json("memory", *common, "--ranks", str(RANKS))
    got["scenario --json"] = _json("scenario", *common, "--nodes", str(NODES))
    got["train --json"] = _json("train", *common, "--nodes", str(NODES), "--steps", "10")
    adv = _json("step", "--arch", ARCH, "--cluster", PRESET, "--nodes", str(NODES), "--strategy",
                "all")  # fmt: skip
    rows = [r for r in adv["strategies"] if r["layout"] == want["layout"]]
    assert len(rows) == 1
    got["step --strategy all --json"] = rows[0]
    for surface, row in got.items():
        assert _ident(row) == want, surface
    # and the number each prices is the one layout's
    t = got["step --json"]["step_time_s"]
    for surface in ("step sweep", "strategy=all sweep", "step --strategy all --json"):
        assert got[surface]["step_time_s"] == pytest.approx(t, rel=1e-12), surface
    m = got["step --json"]["memory_bytes"]
    assert got["memory sweep"]["memory_GB"] * 1e9 == pytest.approx(m, rel=1e-12)
    assert got["memory --json"]["memory_bytes"] == pytest.approx(m, rel=1e-12)


def _check_rows(rows: list[dict]) -> None:
    """Each row's five keys agree with each other: the name is the strategy's, its ``g`` is
    ``group_size``, ``(no reshard)`` in it exactly where ``reshard_after_forward`` is False,
    and the options a strategy lacks are null."""
    assert rows
    for row in rows:
        r = _ident(row)
        st, name = r["strategy"], r["layout"]
        assert st in STRATEGIES, r
        assert name.split()[0] == st, r
        g = re.search(r"\bg=(\d+)\b", name)
        if st == "hsdp":
            assert g is not None and int(g.group(1)) == r["group_size"], r
            assert r["group_size"] >= 1 and row["ranks"] % r["group_size"] == 0, r
        else:
            assert g is None and r["group_size"] is None, r
        if st in ("fsdp", "hsdp"):
            assert r["reshard_after_forward"] in (True, False), r
            assert ("(no reshard)" in name) == (r["reshard_after_forward"] is False), r
        else:
            assert r["reshard_after_forward"] is None and "reshard" not in name, r
        if st == "ddp":
            assert r["gradient_as_bucket_view"] in (True, False), r
            assert ("(bucket view)" in name) == r["gradient_as_bucket_view"], r
        else:
            assert r["gradient_as_bucket_view"] is None and "bucket view" not in name, r


def test_every_strategy_all_row_names_its_layout_consistently():
    df = cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="all", nodes="1,2,4")
    rows = df.to_dict("records")
    _check_rows(rows)
    # hsdp at several groups, each its own row; fsdp both ways
    hsdp = {(r["nodes"], r["group_size"]) for r in rows if r["strategy"] == "hsdp"}
    assert {(4, 2), (4, 8), (4, 16)} <= hsdp
    fsdp = {(r["nodes"], r["reshard_after_forward"]) for r in rows if r["strategy"] == "fsdp"}
    assert {(2, True), (2, False)} <= fsdp


def test_every_memory_row_names_its_layout_consistently():
    groups = cm.sweep(kind="memory", params="7B", strategy="hsdp", group_size="2,4,8",
                      ranks="16,64", reshard_after_forward="true,false")  # fmt: skip
    _check_rows(groups.to_dict("records"))
    assert sorted(set(groups["group_size"])) == [2, 4, 8]
    every = cm.sweep(kind="memory", params="7B", strategy="all", ranks="8,16", preset=PRESET)
    _check_rows(every.to_dict("records"))
    stages = cm.sweep(kind="memory", params="7B", zero_stage="0,1,2,3", ranks="8")
    _check_rows(stages.to_dict("records"))
    assert list(stages["layout"]) == ["ddp", "zero1", "zero2", "fsdp"]


@pytest.mark.parametrize(
    "frame",
    [
        lambda: cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="ddp,zero1", nodes="2"),
        lambda: cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="hsdp,fsdp", nodes="2"),
        lambda: cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="all", nodes="1"),
        lambda: cm.sweep(kind="memory", params="7B", strategy="ddp,zero2", ranks="8"),
        lambda: cm.sweep(
            kind="memory", params="7B", strategy="ddp,hsdp", ranks="16", preset=PRESET
        ),  # fmt: skip
    ],
    ids=["step-no-sharding", "step-sharded", "step-all", "memory-no-sharding", "memory-hsdp"],
)
def test_the_layout_columns_are_always_there_side_by_side(frame):
    """Every step and memory sweep, whatever its strategies, has the layout columns next to
    each other (a grid without hsdp or fsdp: nulls), so two sweeps concatenate column by
    column."""
    cols = list(frame().columns)
    i = cols.index("strategy")
    assert cols[i : i + len(LAYOUT_KEYS)] == list(LAYOUT_KEYS), cols


def test_a_refused_step_row_still_names_its_layout():
    df = cm.sweep(kind="step", preset=PRESET, arch=ARCH, strategy="hsdp", nodes=str(NODES),
                  compute_time="1us,1s")  # fmt: skip
    refused, priced = df.to_dict("records")
    assert refused["error"] and math.isnan(refused["step_time_s"])
    assert priced["error"] == ""
    want = _expected({"strategy": "hsdp"})
    assert _ident(refused) == _ident(priced) == want


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_the_columns_read_back_from_a_file(tmp_path, ext):
    axes = {"preset": PRESET, "arch": ARCH, "strategy": "all", "nodes": "2"}
    df = cm.sweep(kind="step", **axes)
    out = tmp_path / f"s.{ext}"
    sweep_to_file(out, kind="step", chunk_rows=1, **axes)  # one chunk per row: types agree
    back = read_table(out)
    assert [_ident(r) for r in back.to_dict("records")] == [
        _ident(r) for r in df.to_dict("records")
    ]


def test_the_ranked_text_still_shows_each_layouts_name():
    r = run("step", "--arch", ARCH, "--cluster", PRESET, "--nodes", str(NODES), "--strategy", "all")
    assert r.exit_code == 0, r.stderr
    for name in ("fsdp (no reshard)", f"hsdp g={GPN}", "hsdp g=2"):
        assert name in r.stdout, name


# --- scenario --vs --json: what B is, structured ------------------------------------------------
def _fields_differing(a: dict, b: dict) -> dict:
    return {k: v for k, v in b.items() if a.get(k) != v}


def test_vs_json_carries_bs_changes_and_what_was_solved():
    d = _json("scenario", "--arch", ARCH, "--nodes", "2", "--global-tokens", "4Mi", "--vs",
              "nodes=4,strategy=hsdp")  # fmt: skip
    a, b = d["a"]["scenario"], d["b"]["scenario"]
    assert d["changes"] == "nodes=4,strategy=hsdp"  # as typed
    # every field B differs from A in, with B's value: typed, carried along, solved
    assert d["b_changes"] == _fields_differing(a, b)
    assert d["b_changes"]["nodes"] == 4 and d["b_changes"]["strategy"] == "hsdp"
    assert d["b_changes"]["zero_stage"] == 3  # what strategy=hsdp carries
    # B's split of A's tokens per step on its twice as many GPUs: solved, not typed
    solved = d["b_solved"]
    assert solved["from"] == "--global-tokens" and solved["global_tokens"] == 4 * 2**20
    assert (solved["local_batch"], solved["accumulation"]) == (b["local_batch"], b["accumulation"])
    ranks_b = d["b"]["ranks"]
    assert ranks_b == 2 * d["a"]["ranks"]
    assert (
        solved["local_batch"] * solved["accumulation"] * ranks_b * b["sequence_length"]
        == (solved["global_tokens"])
    )
    assert d["b"]["tokens_per_step"] == d["a"]["tokens_per_step"] == solved["global_tokens"]
    # A's accumulation halves on twice the GPUs: a solved change, in b_changes too
    assert d["b_changes"]["accumulation"] == a["accumulation"] // 2
    # each side names its layout as every surface does
    assert _ident(d["b"]) == _expected({"strategy": "hsdp"})
    assert _ident(d["a"]) == _expected({"strategy": "ddp"})


def test_vs_json_without_a_solve_has_no_b_solved():
    d = _json("scenario", "--arch", ARCH, "--nodes", "2", "--vs", "arch=llama-3.1-70b")
    assert d["b_solved"] is None
    # the architecture's parameter count comes with it: a change B carries, in numbers
    assert d["b_changes"] == {"params": d["b"]["scenario"]["params"], "arch": "llama-3.1-70b"}
    assert d["b_changes"]["params"] > 7e10 > d["a"]["scenario"]["params"]


def test_a_step_sweep_says_the_precision_each_row_was_priced_at():
    """``precision`` is a column of every step sweep (not only where it is an axis): each row's
    compute precision as ``step --json`` writes it, the recipe's where the grid sets none."""
    df = cm.sweep(
        kind="step", arch=ARCH, preset=PRESET, nodes=[1, NODES], strategy="fsdp",
        recipe=["mixed-adam", "fp8-mixed"],
    )  # fmt: skip
    assert "precision" in df.columns
    for recipe, want in (("mixed-adam", "bf16"), ("fp8-mixed", "fp8")):
        rows = df[df.recipe == recipe]
        assert len(rows) == 2 and set(rows.precision) == {want}
        out = run("step", "--arch", ARCH, "--cluster", PRESET, "--nodes", str(NODES),
                  "--strategy", "fsdp", "--recipe", recipe, "--json")  # fmt: skip
        assert json.loads(out.stdout)["precision"] == want
