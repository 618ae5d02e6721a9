"""Candidate correction terms tried under grouped CV and not kept (scripts/fit_corrections.py,
TRIED_TERMS): their formulas act as stated when given a value, are no-ops at their defaults
(so the shipped model is unchanged), and the quick ``--try`` check shows why one of them cannot
pass grouped CV (its data comes from one source)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from costmodel import corrections as C
from costmodel.fitted_corrections import ALL
from costmodel.predict import predict_collective
from tests._paths import load_script

ROOT = Path(__file__).resolve().parents[1]
fit = load_script("fit_corrections")


def _time(op: str, size: float, nodes: int, **extra: object) -> float:
    p = {**dict(ALL), **extra}
    return float(predict_collective(op, size, "alcf-polaris", nodes=nodes, params=p).time_s)


def test_tried_terms_are_off_in_the_shipped_model():
    assert set(fit.TRIED_TERMS).isdisjoint(fit.TERMS)
    assert ALL["a2a_peer_latency_us"] == 0.0 and dict(ALL["fabric_fitted_fraction"]) == {}
    assert dict(ALL.get("fabric_net_ll128_off", {})) == {}
    assert float(ALL.get("nvlink_step_latency_scale", 1.0)) == 1.0
    assert C.DEFAULT_PARAMS["nvlink_step_latency_scale"] == 1.0
    assert C.DEFAULT_PARAMS["blackwell_nvlink_step_latency_scale"] == 1.0  # a no-op by default


def test_the_blackwell_hop_scale_is_kept_and_fitted_in_every_fold():
    """Tried as a candidate, then kept (last in TERMS): the shipped fit and every fold that has a
    Blackwell one-node run put NCCL's per-step NVSwitch hop at 2-3x on Blackwell."""
    from costmodel.fitted_corrections import CV

    assert "nvlink_step_blackwell" in fit.TERMS
    assert 1.5 <= float(ALL["blackwell_nvlink_step_latency_scale"]) <= 3.0
    folds = {float(p.get("blackwell_nvlink_step_latency_scale", 1.0)) for p in CV.values()}
    assert folds and all(1.5 <= v <= 3.0 for v in folds - {1.0})
    assert C.DEFAULT_PARAMS["a2a_peer_latency_us"] == 0.0


def test_a2a_peer_latency_grows_with_remote_peers_and_leaves_one_node_alone():
    """lambda x (n - g): on 4 GPUs per node, 8 nodes have 28 remote peers, 2 nodes 4; one node
    none. The small-size time rises by exactly that; other ops are untouched."""
    lam = 10.0
    for nodes, peers in ((2, 4), (8, 28)):
        d = _time("all_to_all", 1024, nodes, a2a_peer_latency_us=lam) - _time(
            "all_to_all", 1024, nodes
        )
        assert d == pytest.approx(lam * peers * 1e-6, rel=1e-6)
    assert _time("all_to_all", 1024, 1, a2a_peer_latency_us=lam) == _time("all_to_all", 1024, 1)
    assert _time("all_reduce", 2**20, 8, a2a_peer_latency_us=lam) == _time("all_reduce", 2**20, 8)
    with pytest.raises(ValueError, match="a2a_peer_latency_us"):
        C.a2a_peer_latency_us(8, 28, {"a2a_peer_latency_us": -1.0})


def test_fitted_nic_fraction_replaces_the_cited_share_and_keeps_the_nic_bound():
    """A fitted Slingshot share replaces the cited one in the cap and the NIC-bound ring; a
    lower share gives a slower (never faster) large all-reduce, and no share above 1 exists."""
    p = {"fabric_achievable_fraction": {"slingshot": 0.93}, "ring_nic_fraction": {}}
    fitted = {**p, "fabric_fitted_fraction": {"slingshot": 0.7}}
    assert C.achievable_fraction("slingshot", 8, p) == 0.93
    assert C.achievable_fraction("slingshot", 8, fitted) == 0.7
    assert C.ring_nic_fraction("slingshot", 8, fitted) == 0.7
    assert C.achievable_fraction("slingshot", 1, fitted) == 1.0
    slow = _time("all_reduce", 2**30, 8, fabric_fitted_fraction={"slingshot": 0.5})
    assert slow > _time("all_reduce", 2**30, 8)
    with pytest.raises(ValueError, match="fabric_fitted_fraction"):
        C.achievable_fraction("slingshot", 8, {"fabric_fitted_fraction": {"slingshot": 1.2}})


def test_a2a_peer_latency_cannot_pass_grouped_cv_with_one_source():
    """The quick check (--try) on two sources: 25d is the only multi-node all-to-all, so the
    fold that predicts it has none and fits 0 us; the fold without 16a fits it on 25d (about
    20 us per peer) but 16a is an all-reduce. No grouped-CV prediction changes."""
    runs = fit.load_runs(tuple(s for s in fit.RUNS if s.prefix in ("16a", "25d")))
    steps = fit._fit_a2a_peer
    lam_without_25 = steps([r for r in runs if r.key != "25d"], fit._base(dict(ALL)))
    lam_with_25 = steps([r for r in runs if r.key == "25d"], fit._base(dict(ALL)))
    assert lam_without_25["a2a_peer_latency_us"] == 0.0
    assert 10.0 < lam_with_25["a2a_peer_latency_us"] < 40.0
    table = fit.try_terms(runs, ["a2a_peer_latency"])
    assert table and all(
        np.isclose(b_ge, a_ge) and np.isclose(b_all, a_all)
        for _, _, a_ge, a_all, b_ge, b_all in table
    )


def test_net_ll128_off_drops_ll128_across_nodes_only():
    """fabric_net_ll128_off (NCCL's tuning.cc: LL128 across nodes only on a GPU-NIC path through
    PCIe switches): the choice on 8 Polaris nodes never takes LL128, one node keeps it, a
    pinned LL128 is still honoured, and only 0 or 1 are accepted."""
    sizes = 2.0 ** np.arange(12, 31, 2)
    off = {**dict(ALL), "fabric_net_ll128_off": {"slingshot": 1.0}}

    def protocols(nodes: int, params: dict) -> set[str]:
        r = predict_collective("all_reduce", sizes, "alcf-polaris", nodes=nodes, params=params)
        return {str(x) for x in r.protocol}

    assert "ll128" in protocols(8, dict(ALL)) and "ll128" not in protocols(8, off)
    assert protocols(1, off) == protocols(1, dict(ALL)) and "ll128" in protocols(1, off)
    pinned = predict_collective(
        "all_reduce", 2**20, "alcf-polaris", nodes=8, protocol="ll128", params=off
    )
    assert str(pinned.protocol) == "ll128"
    assert C.net_ll128_enabled("efa", 8, off) and not C.net_ll128_enabled("slingshot", 8, off)
    with pytest.raises(ValueError, match="fabric_net_ll128_off"):
        C.net_ll128_enabled("slingshot", 8, {"fabric_net_ll128_off": {"slingshot": 0.5}})


def test_net_ll128_off_is_decided_per_fold_on_the_other_slingshot_site():
    """The fitted switch (_fit_net_ll128) sees only the Slingshot runs of its fold: without
    any it decides nothing; a fold holding one site decides on that site alone."""
    runs = fit.load_runs(tuple(s for s in fit.RUNS if s.prefix in ("16a", "25b")))
    p = fit._base(dict(ALL))
    assert fit._fit_net_ll128([r for r in runs if r.key == "16a"], p) == {
        "fabric_net_ll128_off": {}
    }
    got = fit._fit_net_ll128([r for r in runs if r.key == "25b"], p)["fabric_net_ll128_off"]
    assert set(got) == {"slingshot"} and got["slingshot"] in (0.0, 1.0)
