"""NCCL_ALGO / NCCL_PROTO sets: ``ring,tree`` (NCCL picks the fastest of those), ``^ring``.

``predict_collective(..., algorithm="ring,tree")`` refused the value ("is not a nccl
all_reduce algorithm"), so ``validate compare`` left rows recording such a set "not
predicted". A set now restricts auto's candidates (``costmodel.nccl.candidates``): the choice
is auto's own argmin over fewer pairs, so a set's time is the fastest of its members pinned one
by one, and ``^ring`` is auto without ring.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from costmodel.nccl.names import canonical_choice, choice_set
from costmodel.predict import predict_collective
from tests._cli import one_line_error, run

SIZES = [2**16, 2**22, 2**28, 2**33]  # 64 KiB (LL), 4 MiB, 256 MiB, 8 GiB


def _pinned_min(op, nodes, members, model="nccl", protocol="auto"):
    """The fastest of ``members`` pinned one by one, per size (those that cannot run: none)."""
    times, names = [], []
    for a in members:
        try:
            p = predict_collective(
                op, SIZES, "dgx-h100", nodes=nodes, algorithm=a, protocol=protocol, model=model
            )
        except ValueError:
            continue
        times.append(p.time_s)
        names.append(p.algorithm)
    times = np.array(times)
    best = np.argmin(times, axis=0)
    return times.min(axis=0), np.array(names)[best, np.arange(len(SIZES))]


@pytest.mark.parametrize("model", ["nccl", "nccl-table"])
@pytest.mark.parametrize("nodes", [1, 4])
@pytest.mark.parametrize(
    "value",
    ["ring,tree", "Tree,NVLS", "ring,nvlstree,collnetdirect", "RING,tree,ring"],
)
def test_a_set_is_the_fastest_of_its_members(value, nodes, model):
    members = [m.strip() for m in value.split(",")]
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=nodes, algorithm=value,
                           model=model)  # fmt: skip
    t, chosen = _pinned_min("all_reduce", nodes, members, model)
    np.testing.assert_array_equal(p.time_s, t)
    assert p.algorithm.tolist() == chosen.tolist()  # predicted_algorithm: the one chosen


def test_a_set_chooses_per_size():
    """On 4 nodes ring,tree is tree at small sizes and ring at large: a choice, not a pin."""
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=4, algorithm="ring,tree")
    assert p.algorithm.tolist() == ["tree", "tree", "ring", "ring"]


@pytest.mark.parametrize(("nodes", "rest"), [(1, ["tree", "nvls"]), (4, ["tree", "nvls_tree"])])
def test_excluding_ring_is_auto_without_ring(nodes, rest):
    """``^ring``: auto's candidates (on by default) less ring; on dgx-h100 those are tree and
    NVLS in one node, tree and NVLSTree across nodes (multi-node NVLS and CollNet are not on
    without NCCL_COLLNET_ENABLE)."""
    auto = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=nodes)
    assert "ring" in auto.algorithm.tolist()  # so the exclusion changes the answer
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=nodes, algorithm="^Ring")
    t, chosen = _pinned_min("all_reduce", nodes, rest)
    np.testing.assert_array_equal(p.time_s, t)
    assert p.algorithm.tolist() == chosen.tolist()
    assert "ring" not in p.algorithm.tolist()


def test_a_protocol_set_restricts_the_protocols():
    full = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=1)
    assert full.protocol[0] == "ll"
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=1, protocol="^LL")
    assert "ll" not in p.protocol.tolist()
    t = np.min(
        [
            predict_collective("all_reduce", SIZES, "dgx-h100", nodes=1, protocol=x).time_s
            for x in ("ll128", "simple")
        ],
        axis=0,
    )
    np.testing.assert_array_equal(p.time_s, t)
    both = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=1, protocol="ll128,simple")
    np.testing.assert_array_equal(both.time_s, p.time_s)


def test_the_spellings():
    assert choice_set("Ring, CollNetDirect,ring") == (False, ("ring", "collnet_direct"))
    assert canonical_choice("^") == "auto"  # excludes nothing: NCCL's own choice
    assert canonical_choice("tree,") == "tree"  # a set of one is that name pinned
    one = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=4, algorithm="tree,")
    pin = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=4, algorithm="tree")
    np.testing.assert_array_equal(one.time_s, pin.time_s)
    # a name NCCL has no kernel for on the op is ignored, as NCCL ignores it
    pat = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=4, algorithm="ring,pat")
    ring = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=4, algorithm="ring")
    np.testing.assert_array_equal(pat.time_s, ring.time_s)


# --- refusals: one line naming the field and the allowed names ------------------------------
@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        # nothing usable: NVLS on an A100 (no NVLink SHARP), as a single nvls is refused
        (
            dict(cluster="dgx-a100", algorithm="nvls,nvls_tree"),
            [
                "algorithm: 'nvls,nvls_tree' with `protocol` 'auto' cannot run all_reduce",
                "NVLS needs NVLink SHARP",
                "allowed algorithms here: auto, tree, ring",
            ],
        ),
        # every algorithm the op has on this cluster excluded
        (
            dict(cluster="dgx-a100", algorithm="^ring,tree"),
            [
                "algorithm: '^ring,tree' with `protocol` 'auto' cannot run all_reduce",
                "allowed algorithms here: auto, tree, ring",
            ],
        ),
        # names NCCL has, but none for the op
        (
            dict(cluster="dgx-h100", algorithm="pat,p2p"),
            [
                "algorithm: 'pat,p2p'",
                "NCCL has none of them for all_reduce",
                "allowed algorithms here: auto",
            ],
        ),
        (
            dict(cluster="dgx-h100", algorithm="ring,treee"),
            [
                "algorithm: 'treee' in the set 'ring,treee' is not an NCCL algorithm; allowed in a set: "
            ],
        ),
        (
            dict(cluster="dgx-h100", protocol="ll,fast"),
            [
                "protocol: 'fast' in the set 'll,fast' is not an NCCL protocol; allowed in a set: ll, "
            ],
        ),
        (
            dict(cluster="dgx-h100", algorithm="allreduce:tree"),
            ["algorithm: 'allreduce:tree' is a list per function", "allowed: auto"],
        ),
        # the alpha-beta models choose nothing: a set is refused with their list
        (
            dict(cluster="dgx-h100", algorithm="ring,tree", model="textbook"),
            [
                "algorithm: 'ring,tree' is a set to choose from, but the textbook model does not",
                "allowed: auto, ring, tree",
            ],
        ),
    ],
)
def test_a_set_that_cannot_run_is_refused_on_one_line(kwargs, fragments):
    cluster = kwargs.pop("cluster")
    with pytest.raises(ValueError) as err:
        predict_collective("all_reduce", SIZES, cluster, **kwargs)
    msg = str(err.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, msg


def test_all_to_all_takes_a_set_with_p2p_only():
    p = predict_collective("all_to_all", SIZES, "dgx-h100", nodes=2, algorithm="p2p,ring")
    assert set(p.algorithm.tolist()) == {"p2p"}
    with pytest.raises(
        ValueError, match=r"^algorithm: 'ring,tree' cannot run all_to_all; allowed: auto, p2p$"
    ):
        predict_collective("all_to_all", SIZES, "dgx-h100", nodes=2, algorithm="ring,tree")


# --- validate compare: a row recording a set is predicted ------------------------------------
def _rows(tmp_path: Path, values: list[str | None]) -> Path:
    """Synthetic rows (format fixture, not a measurement): 1 GiB all_reduce on one DGX H100,
    8 ranks, one row per NCCL_ALGO value. No bundled log records an NCCL_ALGO set."""
    base = {"ranks": 8, "nodes": 1, "gpus_per_node": 8, "device": "NVIDIA H100 80GB HBM3",
            "kind": "collective", "size_bytes": 2**30, "placement": "out_of_place",
            "time_s": 5e-3, "flagged": False, "op": "all_reduce"}  # fmt: skip
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({**base, "algo_env": v}) + "\n" for v in values))
    return path


def test_compare_predicts_a_row_recording_a_set(tmp_path):
    values = ["Ring,Tree", "^ring", "allreduce:tree,nvls", "ring"]
    csv = tmp_path / "rows.csv"
    said = run("validate", "compare", str(_rows(tmp_path, values)), "--cluster", "dgx-h100",
               "-o", str(csv))  # fmt: skip
    assert said.exit_code in (0, 1), said.output
    rows = pd.read_csv(csv).set_index("algo_env")
    assert rows["predicted_time_s"].notna().all(), rows["note"]
    for value, as_set in (("Ring,Tree", "ring,tree"), ("^ring", "^ring"),
                          ("allreduce:tree,nvls", "tree,nvls")):  # fmt: skip
        p = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=1, algorithm=as_set)
        assert rows.loc[value, "predicted_time_s"] == pytest.approx(p.time_s, rel=1e-12)
        assert rows.loc[value, "predicted_algorithm"] == p.algorithm
    assert rows.loc["Ring,Tree", "predicted_algorithm"] == "ring"
    assert rows.loc["^ring", "predicted_algorithm"] == "nvls"


# --- the CLI --------------------------------------------------------------------------------
def test_collective_and_predict_take_a_set_as_one_value():
    """``--algorithm ring,tree`` on a cluster is one set (one row: the fastest), as
    ``predict --algorithm``; ``all`` still lists every algorithm side by side."""
    p = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=4, algorithm="ring,tree")
    said = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "4",
               "--size", "1GiB", "--algorithm", "ring,tree", "--json")  # fmt: skip
    assert said.exit_code == 0, said.output
    rows = json.loads(said.stdout)["results"]
    assert len(rows) == 1, rows
    assert rows[0]["algorithm_used"] == p.algorithm == "ring"
    assert rows[0]["time_s"] == pytest.approx(p.time_s, rel=1e-12)
    said = run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "4",
               "--sizes", "1GiB", "--algorithm", "^ring")  # fmt: skip
    assert said.exit_code == 0, said.output
    assert "nvls_tree" in said.stdout
    every = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "4",
                "--size", "1GiB", "--algorithm", "all", "--json")  # fmt: skip
    assert every.exit_code == 0, every.output
    assert len(json.loads(every.stdout)["results"]) > 1


def test_the_cli_refuses_a_set_that_cannot_run():
    said = run("collective", "all_reduce", "--cluster", "dgx-a100", "--size", "1GiB",
               "--algorithm", "nvls,nvls_tree")  # fmt: skip
    one_line_error(
        said, "--algorithm: 'nvls,nvls_tree'", "allowed algorithms here: auto, tree, ring"
    )
    said = run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--sizes", "1GiB",
               "--algorithm", "ring,tree", "--model", "textbook")  # fmt: skip
    one_line_error(said, "--algorithm: 'ring,tree' is a set to choose from", "allowed: auto, ring")


# --- the sweep: a comma string is values crossed; a set is one list item, or a "^" value ---
def test_a_sweep_prices_a_set_as_the_api():
    import costmodel as cm

    df = cm.sweep(preset="dgx-h100", nodes="1,4", size="64KiB,256MiB",
                  algorithm=["ring,tree", "^ring"], protocol=["auto", "^ll"])  # fmt: skip
    assert len(df) == 2 * 2 * 2 * 2
    for r in df.itertuples():
        p = predict_collective("all_reduce", r.size_bytes, "dgx-h100", nodes=r.nodes,
                               algorithm=r.algorithm, protocol=r.protocol_requested)  # fmt: skip
        assert r.time_s == pytest.approx(p.time_s, rel=1e-12), r
        assert r.algorithm_used == p.algorithm and r.protocol_used == p.protocol, r
    crossed = cm.sweep(preset="dgx-h100", nodes=4, size="1GiB", algorithm="ring,tree")
    assert crossed["algorithm"].tolist() == ["ring", "tree"]  # a comma string: two values
    with pytest.raises(ValueError, match=r"^protocol: 'fast' in the set '\^fast' is not an NCCL"):
        cm.sweep(preset="dgx-h100", nodes=1, size="1GiB", protocol=["^fast"])


def test_a_calibrations_fits_answer_a_set_by_its_members():
    """Alpha-beta fits (by textbook name) under a set: the fastest fit of its members."""
    from costmodel.hardware import CalibrationPreset
    from costmodel.predict import fitted_time_s

    fit = dict(op="all_reduce", level="intra", source="example (synthetic fits)")
    cal = CalibrationPreset(name="toy", source="example", fits=[
        dict(fit, algorithm="ring", latency_s="10us", bandwidth_bytes_per_s="4GB/s"),
        dict(fit, algorithm="tree", latency_s="2us", bandwidth_bytes_per_s="2GB/s"),
        dict(fit, algorithm="nvls", latency_s="30us", bandwidth_bytes_per_s="9GB/s"),
    ])  # fmt: skip
    m = [1e3, 4e6, 4e9]
    ring, tree = (fitted_time_s(cal, "all_reduce", m, 8, 1, a)[0] for a in ("ring", "tree"))
    for value in ("Ring,Tree", "^nvls"):
        t, algos, _ = fitted_time_s(cal, "all_reduce", m, 8, 1, value)
        np.testing.assert_array_equal(t, np.minimum(ring, tree))
        assert algos.tolist() == ["tree", "ring", "ring"]
    with pytest.raises(ValueError, match="has no fit for an intra-node all_reduce"):
        fitted_time_s(cal, "all_reduce", m, 8, 1, "collnet_direct,pat")
