"""Every algorithm on a real cluster: cm.predict_all_algorithms and the CLI's
``collective --cluster ... --algorithm all``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, collectives, models
from costmodel.predict import predict_collective

SIZES = 2.0 ** np.arange(3, 36)  # 8 B .. 32 GiB, x2 as nccl-tests
CASES = [
    ("all_reduce", "dgx-h100", 1),
    ("all_reduce", "dgx-h100", 8),
    ("all_reduce", "dgx-a100", 2),
    ("all_reduce", "gb200-nvl72", 1),
    ("all_gather", "dgx-h100", 1),
    ("reduce_scatter", "dgx-h100", 4),
    ("broadcast", "dgx-a100", 2),
    ("all_to_all", "dgx-h100", 2),
]


@pytest.mark.parametrize("model", ["nccl", "nccl-table"])
@pytest.mark.parametrize(("op", "cluster", "nodes"), CASES)
def test_the_chosen_algorithm_has_exactly_the_auto_time(op, cluster, nodes, model):
    r = cm.predict_all_algorithms(op, SIZES, cluster, nodes, model=model)
    auto = predict_collective(op, SIZES, cluster, nodes, model=model)
    chosen = r.frame[r.frame["chosen"]].sort_values("message_bytes")
    # one chosen row per size, and it is NCCL's pick with its protocol and its exact time
    assert chosen["message_bytes"].tolist() == SIZES.tolist()
    assert chosen["algorithm"].tolist() == auto.algorithm.tolist()
    assert chosen["protocol"].tolist() == auto.protocol.tolist()
    assert np.array_equal(chosen["time_s"].to_numpy(), auto.time_s)
    # NCCL takes the fastest candidate, so no listed algorithm beats its choice anywhere
    fastest = r.frame.groupby("message_bytes")["time_s"].min().to_numpy()
    assert np.array_equal(fastest, auto.time_s)
    assert (r.frame["chosen"] == r.frame["best"]).all()


@pytest.mark.parametrize(("op", "cluster", "nodes"), CASES)
def test_every_algorithm_is_either_timed_or_refused_with_a_reason(op, cluster, nodes):
    r = cm.predict_all_algorithms(op, SIZES, cluster, nodes)
    refused = dict(r.unavailable)
    # the op's row of the one table (NCCL's tuning table; all-to-all p2p): no other name
    expected = models.algorithms("nccl", op)
    assert set(r.available) | set(refused) == set(expected)
    assert not set(r.available) & set(refused)
    assert all(isinstance(why, str) and len(why) > 10 for why in refused.values())
    # each available algorithm is the same number as pinning it in predict_collective
    for a in r.available:
        pinned = predict_collective(op, SIZES, cluster, nodes, algorithm=a)
        rows = r.frame[r.frame["algorithm"] == a]
        assert np.array_equal(rows["time_s"].to_numpy(), pinned.time_s)
        assert np.allclose(rows["busbw_bytes_per_s"].to_numpy(), pinned.busbw_bytes_per_s)


def test_reasons_name_the_missing_hardware():
    def why(cluster, nodes, op="all_reduce", **kw):
        return dict(cm.predict_all_algorithms(op, [2**30], cluster, nodes, **kw).unavailable)

    assert "NVLink SHARP" in why("dgx-a100", 1)["nvls"]  # A100: no NVLS
    assert "several nodes" in why("dgx-h100", 1)["nvls_tree"]
    assert "IB SHARP" in why("dgx-h100", 8)["collnet_direct"]  # no SHARP on this preset
    # NCCL's table has no PAT all-reduce: not listed at all (the table lists the op's own)
    assert "pat" not in why("dgx-h100", 8)
    assert "one GPU per node" in why("dgx-h100", 8, "all_gather")["pat"]
    # a SHARP cluster: CollNet is off unless enabled, as in NCCL; enabled, it is timed
    off = why("coreweave-hgx-h100", 4)
    assert "NCCL_COLLNET_ENABLE" in off["collnet_direct"]
    on = cm.predict_all_algorithms(
        "all_reduce", SIZES, "coreweave-hgx-h100", 4, collnet_enabled=True
    )
    assert {"collnet_direct", "collnet_chain", "nvls"} <= set(on.available)
    auto = predict_collective("all_reduce", SIZES, "coreweave-hgx-h100", 4, collnet_enabled=True)
    chosen = on.frame[on.frame["chosen"]].sort_values("message_bytes")
    assert np.array_equal(chosen["time_s"].to_numpy(), auto.time_s)


def test_one_rank_lists_every_algorithm_as_unavailable():
    r = cm.predict_all_algorithms("all_reduce", [2**20], "dgx-h100", 1, gpus_per_node=1)
    assert r.available == ()
    assert [a for a, _ in r.unavailable] == list(models.algorithms("nccl", "all_reduce"))
    assert all("one rank" in why for _, why in r.unavailable)


@pytest.mark.parametrize(("op", "cluster", "nodes"), CASES[:4])
def test_crossovers_are_where_the_curves_swap(op, cluster, nodes):
    r = cm.predict_all_algorithms(op, SIZES, cluster, nodes)
    wide = r.frame.pivot(index="message_bytes", columns="algorithm", values="time_s")
    winner = wide.idxmin(axis=1)
    changes = [
        (wide.index[i - 1], wide.index[i], winner.iloc[i - 1], winner.iloc[i])
        for i in range(1, len(winner))
        if winner.iloc[i] != winner.iloc[i - 1]
    ]
    got = list(
        r.crossovers[
            ["previous_bytes", "message_bytes", "faster_below", "faster_above"]
        ].itertuples(index=False, name=None)
    )
    assert got == changes
    for x in r.crossovers.itertuples():
        # below: the old winner is faster than the new one; from the crossover: the reverse
        assert wide.at[x.previous_bytes, x.faster_below] < wide.at[x.previous_bytes, x.faster_above]
        assert wide.at[x.message_bytes, x.faster_above] < wide.at[x.message_bytes, x.faster_below]
        assert x.time_s == wide.at[x.message_bytes, x.faster_above]


def test_a_multi_node_h100_all_reduce_has_crossovers():
    # 8 x DGX H100: Tree/LL for small sizes, NVLSTree for large (the page's question)
    r = cm.predict_all_algorithms("all_reduce", SIZES, "dgx-h100", 8)
    assert len(r.crossovers) >= 1
    assert r.frame[r.frame["message_bytes"] == SIZES[0]].query("chosen").algorithm.item() != (
        r.frame[r.frame["message_bytes"] == SIZES[-1]].query("chosen").algorithm.item()
    )


@pytest.mark.parametrize("model", ["textbook", "lesson"])
def test_alpha_beta_models_list_the_textbook_algorithms(model):
    from costmodel import models

    r = cm.predict_all_algorithms("all_reduce", SIZES, "dgx-h100", 8, model=model)
    listed = models.textbook_algorithms(model, "all_reduce")
    assert set(r.available) | set(dict(r.unavailable)) == set(listed)
    auto = predict_collective("all_reduce", SIZES, "dgx-h100", 8, model=model)
    chosen = r.frame[r.frame["chosen"]].sort_values("message_bytes")
    assert np.array_equal(chosen["time_s"].to_numpy(), auto.time_s)  # the default: ring
    fastest = r.frame[r.frame["best"]].sort_values("message_bytes")
    assert (fastest["time_s"].to_numpy() <= auto.time_s).all()
    if model == "textbook":  # in-switch reduction needs one node: refused with the reason
        assert "inside one node" in dict(r.unavailable)["nvls"]


def test_bad_input_is_refused_like_predict_collective():
    with pytest.raises(ValueError, match="model"):
        cm.predict_all_algorithms("all_reduce", [1e6], "dgx-h100", 2, model="magic")
    with pytest.raises(ValueError, match="message_bytes"):
        cm.predict_all_algorithms("all_reduce", [-1.0], "dgx-h100", 2)


# --- CLI --------------------------------------------------------------------------------------
ALL = ("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes", "8")


def test_cli_algorithm_all_json_matches_the_api():
    res = CliRunner().invoke(cli.app, [*ALL, "--size", "1MB", "--algorithm", "all", "--json"])
    assert res.exit_code == 0, res.stderr + res.stdout
    out = json.loads(res.stdout)
    rows = out["results"]
    assert {r["algorithm"] for r in rows} == {"tree", "ring", "nvls_tree"}
    reasons = {u["algorithm"]: u["reason"] for u in out["unavailable"]}
    assert "IB SHARP" in reasons["nvls"] and "IB SHARP" in reasons["collnet_direct"]
    for size in (14e9, 1e6):
        p = predict_collective("all_reduce", size, "dgx-h100", 8)
        (chosen,) = [r for r in rows if r["chosen"] and r["size_bytes"] == size]
        assert chosen["algorithm"] == p.algorithm
        assert chosen["time_s"] == pytest.approx(p.time_s, rel=1e-12)
    assert isinstance(out["crossovers"], list)


def test_cli_algorithm_all_human_table_marks_the_choice():
    res = CliRunner().invoke(cli.app, [*ALL, "--algorithm", "all"])
    assert res.exit_code == 0, res.stderr + res.stdout
    p = predict_collective("all_reduce", 14e9, "dgx-h100", 8)
    marked = [line for line in res.stdout.splitlines() if " * " in line]
    assert len(marked) == 1 and p.algorithm in marked[0]
    assert "not available: nvls: multi-node NVLS needs CollNet" in res.stdout


def test_cli_algorithm_all_with_op_all_lists_each_ops_table():
    """``collective all --cluster ... -a all`` lists every op's algorithms (as over one link),
    not a refusal: each op's own row of the table, the ones the cluster cannot run with why."""
    res = CliRunner().invoke(
        cli.app,
        ["collective", "all", "--size", "1MB", "--cluster", "dgx-h100", "-a", "all", "--json"],
    )
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)["results"]
    for op in collectives.OPS:
        assert [r["algorithm"] for r in rows if r["op"] == op] == list(
            models.algorithms("nccl", op)
        )
    refused = [r for r in rows if r["error"]]
    assert refused and all(r["time_s"] is None for r in refused)


def test_predict_collective_points_all_at_predict_all_algorithms():
    with pytest.raises(ValueError, match="predict_all_algorithms"):
        predict_collective("all_reduce", [1e6], "dgx-h100", 2, algorithm="all")


@pytest.mark.parametrize("model", ["nccl", "calibrated"])
def test_a_calibrated_cluster_keeps_choice_equal_to_auto(model, tmp_path):
    from costmodel.validation.calibrate import calibrate, write_calibration
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._paths import NCCL_TESTS

    log = read_nccl_tests(NCCL_TESTS / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt")
    cal = calibrate(
        log, name="rtx-cal", min_bytes=2**16, source="09a", base="pcie3-2x-rtx2080ti-nop2p"
    )
    write_calibration(cal, tmp_path / "rtx-cal.toml")
    c = cm.cluster(str(tmp_path / "rtx-cal.toml"))
    sizes = 2.0 ** np.arange(10, 30)
    r = cm.predict_all_algorithms("all_reduce", sizes, c, 1, model=model)
    auto = predict_collective("all_reduce", sizes, c, 1, model=model)
    chosen = r.frame[r.frame["chosen"]].sort_values("message_bytes")
    assert np.array_equal(chosen["time_s"].to_numpy(), auto.time_s)
    assert "NVLink SHARP" in dict(r.unavailable)["nvls"]  # PCIe: no NVLS, with the reason


# --- one vocabulary in every form of `collective --json` -----------------------------------------
#: the API's names for quantities the JSON names otherwise (size_bytes, *_GBps, protocol_used)
_API_NAMES = {"message_bytes", "algbw_bytes_per_s", "busbw_bytes_per_s", "protocol", "cluster"}


def _keys(doc) -> set[str]:
    """Every key anywhere in a JSON document."""
    if isinstance(doc, dict):
        return set(doc) | set().union(*(_keys(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(_keys(v) for v in doc)) if doc else set()
    return set()


def _json(*args: str) -> dict:
    res = CliRunner().invoke(
        cli.app, ["collective", "all_reduce", "--size", "1GB", *args, "--json"]
    )
    assert res.exit_code == 0, res.stderr + res.stdout
    return json.loads(res.stdout)


def test_collective_json_names_a_quantity_alike_in_every_form():
    """The one-link, one-cluster and ``--algorithm all`` forms of ``collective --json`` name
    the size, times, bandwidths, algorithm and protocol with the same keys (the all form said
    message_bytes, algbw_bytes_per_s, protocol and cluster where the others say size_bytes,
    algbw_GBps, protocol_used and preset), and the shared numbers agree."""
    link = _json("--ranks", "16", "--bandwidth", "50GB/s")
    link_all = _json("--ranks", "16", "--bandwidth", "50GB/s", "--algorithm", "all")
    one = _json("--cluster", "dgx-h100", "--nodes", "2")
    every = _json("--cluster", "dgx-h100", "--nodes", "2", "--algorithm", "all")
    shared = {
        "op",
        "model",
        "algorithm",
        "ranks",
        "size_bytes",
        "time_s",
        "algbw_GBps",
        "busbw_GBps",
    }
    for doc in (link, link_all, one, every):
        for row in doc["results"]:
            assert shared <= set(row), sorted(set(row))
        assert not _keys(doc) & _API_NAMES, sorted(_keys(doc) & _API_NAMES)
    # every quantity a row of the all form shows is named as the one-cluster form names it
    only_all = {"chosen", "best", "fastest", "within_expected_error"}
    for row in every["results"]:
        assert set(row) - only_all <= set(one["results"][0]), sorted(
            set(row) - set(one["results"][0])
        )
    assert every["preset"] == one["results"][0]["preset"] == "dgx-h100"
    assert {v["size_bytes"] for v in every["verdicts"]} == {1e9}
    # the same numbers under the same names: the model's choice is the one-cluster answer
    (chosen,) = [r for r in every["results"] if r["chosen"]]
    base = one["results"][0]
    for key in ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm_used",
                "protocol_used", "nodes", "gpus_per_node", "ranks"):  # fmt: skip
        if isinstance(base[key], str):
            assert chosen[key] == base[key], key
        else:
            assert chosen[key] == pytest.approx(base[key], rel=1e-12), key
    ring = next(r for r in link_all["results"] if r["algorithm"] == "ring")
    assert ring["time_s"] == link["results"][0]["time_s"]
