"""Cited fabric priors and the network mid-size ramp."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel import corrections as C
from costmodel import fabrics
from costmodel.fitted_corrections import ALL, CV, FITTED
from costmodel.predict import predict_collective


def test_every_prior_value_has_a_source_and_is_in_range():
    assert {"infiniband", "roce", "efa", "slingshot", "tcpxo", "ethernet"} <= set(fabrics.PRIORS)
    for f, p in fabrics.PRIORS.items():
        if p.per_message_overhead_us is not None:
            assert p.per_message_overhead_us >= 0 and p.sources["per_message_overhead_us"], f
        if p.achievable_fraction is not None:
            assert 0 < p.achievable_fraction <= 1 and p.sources["achievable_fraction"], f
        if p.proxy_driven:
            assert p.sources["proxy_driven"], f
    # InfiniBand is NCCL's own reference: no extra per-message cost, not proxy-driven
    assert fabrics.PRIORS["infiniband"].per_message_overhead_us == 0.0
    assert set(fabrics.proxy_driven_fabrics()) == {
        "efa",
        "ethernet",
        "slingshot",
        "socket",
        "tcpxo",
    }


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '[x]\nachievable_fraction = 1.2\nachievable_fraction_source = "a"\n',
            r"must be in \(0, 1\]",
        ),
        ("[x]\nachievable_fraction = 0.9\n", "no achievable_fraction_source"),
        ("[x]\nper_message_overhead_us = -1.0\nper_message_overhead_us_source = 'a'\n", ">= 0 us"),
        ("[x]\nproxy_driven = true\n", "proxy_driven"),
    ],
)
def test_priors_file_rejects_uncited_or_out_of_range_values(text, match):
    with pytest.raises(ValueError, match=match):
        fabrics.parse(text)


def test_a_fold_without_a_fabrics_only_source_uses_its_cited_prior():
    """16 (AWS) is the only EFA source, 23 the only RoCE one: their grouped-CV parameters carry
    the priors (17 us, 0 us), where the parameters fitted on every run carry fitted values."""
    efa, roce = fabrics.PRIORS["efa"], fabrics.PRIORS["roce"]
    assert CV["16a"]["fabric_latency_us"]["efa"] == efa.per_message_overhead_us
    assert CV["23a"]["fabric_latency_us"]["roce"] == roce.per_message_overhead_us
    assert ALL["fabric_latency_us"]["efa"] != efa.per_message_overhead_us
    # a fabric no bundled run measures (TCPXO) has no cited overhead: none is invented
    assert "tcpxo" not in ALL["fabric_latency_us"]
    assert "tcpxo" not in FITTED.measured_fabrics


def test_network_ramp_is_fitted_and_shared_by_proxy_driven_fabrics():
    assert "net_ramp" not in FITTED.dropped_terms
    phi = float(ALL["net_ramp_phi"])
    assert phi > 0
    scale = ALL["fabric_net_ramp_scale"]
    assert set(scale) == set(fabrics.proxy_driven_fabrics())
    assert len(set(scale.values())) == 1  # one multiplier, not one per fabric
    assert C.net_ramp_phi("infiniband", 2, ALL) == pytest.approx(phi)
    assert C.net_ramp_phi("efa", 2, ALL) == pytest.approx(phi * scale["efa"])
    assert C.net_ramp_phi("efa", 1, ALL) == 0.0


def test_network_ramp_slows_mid_sizes_across_nodes_only():
    sizes = np.array([2.0**24, 2.0**34])
    off = {**ALL, "net_ramp_phi": 0.0}
    two = predict_collective("all_reduce", sizes, "dgx-h100", nodes=2).time_s
    two_off = predict_collective("all_reduce", sizes, "dgx-h100", nodes=2, params=off).time_s
    one = predict_collective("all_reduce", sizes, "dgx-h100", nodes=1).time_s
    one_off = predict_collective("all_reduce", sizes, "dgx-h100", nodes=1, params=off).time_s
    assert two[0] > two_off[0] * 1.01  # 16 MiB across two nodes: slower with the ramp
    assert two[1] == pytest.approx(two_off[1], rel=0.01)  # 16 GiB: the ramp has faded
    np.testing.assert_allclose(one, one_off)  # one node: no network, no network ramp


def test_net_ramp_rejects_a_negative_multiplier():
    with pytest.raises(ValueError, match="net_ramp_phi"):
        C.net_ramp_phi("efa", 2, {"net_ramp_phi": 0.2, "fabric_net_ramp_scale": {"efa": -1.0}})


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_network_ramp_shape_keeps_time_monotone_and_busbw_drops_small(beta):
    """The ramp adds phi min(M, S^beta M^(1 - beta)) / B: non-decreasing and at most doubling
    when M doubles, for both fitted shapes (tests/test_invariants.py checks the full grid)."""
    from costmodel.realistic import ramp_time_factor

    m = 2.0 ** np.arange(10, 40)
    extra = m * ramp_time_factor(m, 0.5, 2.0**26, 1.0, beta)  # the added time, in units of 1/B
    assert (np.diff(extra) >= 0).all()
    assert (extra[1:] <= 2.0 * extra[:-1] + 1e-9).all()
    assert float(ALL["net_ramp_exponent"]) in (0.5, 1.0)


def test_multi_node_ring_reaches_the_cited_share_of_the_nics_and_no_more():
    """2 x 8 H100 over 8 x 400G: NCCL's table gives Ring 8 channels x 45 GB/s (360 GB/s busbw);
    with the NIC-bound ring the model's plateau is near 0.95 x 400 GB/s (22 measures 392), and
    never above the line rate."""
    assert "ring_nic_rate" not in FITTED.dropped_terms
    f = fabrics.PRIORS["infiniband"].achievable_fraction
    assert ALL["ring_nic_fraction"]["infiniband"] == f
    p = predict_collective("all_reduce", 2.0**33, "dgx-h100", nodes=2, algorithm="ring")
    table = predict_collective(
        "all_reduce", 2.0**33, "dgx-h100", nodes=2, algorithm="ring", model="nccl-table"
    )
    line = 8 * 400e9 / 8
    assert table.busbw_bytes_per_s < 0.92 * line
    assert 0.9 * f * line <= p.busbw_bytes_per_s <= f * line
    one = predict_collective("all_reduce", 2.0**33, "dgx-h100", nodes=1, algorithm="ring")
    off = {**ALL, "ring_nic_fraction": {}}
    one_off = predict_collective(
        "all_reduce", 2.0**33, "dgx-h100", nodes=1, algorithm="ring", params=off
    )
    assert one.time_s == one_off.time_s  # one node: no NICs, no change
