"""Tests for costmodel.hardware: units, per-direction figures, validators, Cluster numbers."""

from __future__ import annotations

import pydantic
import pytest

from costmodel.hardware import GPU, REQUIRE_UNITS, Cluster, Link, Node
from costmodel.presets import cluster, load

# All figures below are exact decimal arithmetic on datasheet numbers; rel=1e-12 only absorbs
# float rounding.
EXACT = 1e-12


def _link(**kw):
    base = dict(
        name="x",
        kind="infiniband",
        generation="NDR",
        datasheet_bandwidth_bytes_per_s="400Gb/s",
        datasheet_direction="per_direction",
        latency_s="2.7us",
        source="test",
    )
    return Link(**{**base, **kw})


# --- per direction vs bidirectional ----------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "datasheet_gb_s", "per_direction_gb_s"),
    [
        ("nvlink4", 900, 450),  # H100 datasheet "NVLink 900GB/s"; nccl-tests #212: 450 each way
        ("nvlink5", 1800, 900),  # Blackwell "1.8TB/s" NVLink 5 per GPU
        ("pcie5-x16", 128, 64),  # H100 PCIe datasheet "PCIe Gen5 128GB/s"
    ],
)
def test_bidirectional_datasheet_figure_is_halved(name, datasheet_gb_s, per_direction_gb_s):
    link = load(name)
    assert link.datasheet_direction == "bidirectional"
    assert link.datasheet_bandwidth_bytes_per_s == pytest.approx(datasheet_gb_s * 1e9, rel=EXACT)
    assert link.per_direction_bandwidth_bytes_per_s == pytest.approx(
        per_direction_gb_s * 1e9, rel=EXACT
    )
    assert link.bidirectional_bandwidth_bytes_per_s == pytest.approx(
        datasheet_gb_s * 1e9, rel=EXACT
    )


def test_lesson_pcie5_figure_is_the_per_direction_one():
    # The lesson calls PCIe 5.0 x16 "~64 GB/s bidirectional"; the datasheet's 64 is per direction.
    pcie5 = load("pcie5-x16")
    assert pcie5.per_direction_bandwidth_bytes_per_s == pytest.approx(64e9, rel=EXACT)
    assert pcie5.bidirectional_bandwidth_bytes_per_s != pytest.approx(64e9, rel=0.1)
    assert "lesson" in pcie5.description


def test_per_direction_nic_is_not_halved():
    ndr = load("ib-ndr")
    assert ndr.datasheet_direction == "per_direction"
    assert ndr.per_direction_bandwidth_bytes_per_s == pytest.approx(50e9, rel=EXACT)


def test_per_link_and_effective_bandwidth():
    nvl4 = load("nvlink4")
    assert nvl4.per_link_bandwidth_bytes_per_s == pytest.approx(25e9, rel=EXACT)  # 450 / 18
    ndr = load("ib-ndr")
    # nccl-tests #290/#319: 46-48 GB/s per 400G NIC; the preset takes the top, 48
    assert 46e9 <= ndr.effective_bandwidth_bytes_per_s <= 48e9
    assert "#290" in ndr.efficiency_source


# --- units and strictness --------------------------------------------------------------------
def test_quantity_accepts_unit_string_or_si_number_in_python():
    a = _link(datasheet_bandwidth_bytes_per_s="400Gb/s")
    b = _link(datasheet_bandwidth_bytes_per_s=50e9)
    assert a == b
    assert a.latency_s == pytest.approx(2.7e-6, rel=EXACT)


def test_bare_number_refused_when_units_required():
    data = _link().model_dump()
    data["datasheet_bandwidth_bytes_per_s"] = 450e9
    with pytest.raises(pydantic.ValidationError, match="a unit is required"):
        Link.model_validate(data, context={REQUIRE_UNITS: True})


@pytest.mark.parametrize("bad", ["0GB/s", "-5GB/s", 0.0, -1.0])
def test_zero_or_negative_bandwidth_refused(bad):
    with pytest.raises(pydantic.ValidationError, match="datasheet_bandwidth_bytes_per_s"):
        _link(datasheet_bandwidth_bytes_per_s=bad)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("datasheet_bandwidth_bytes_per_s", True),
        ("datasheet_bandwidth_bytes_per_s", "fast"),
        ("datasheet_bandwidth_bytes_per_s", "400"),  # a string without a unit
        ("latency_s", "4 parsecs"),
    ],
)
def test_malformed_quantity_refused(field, bad):
    with pytest.raises(pydantic.ValidationError, match=field):
        _link(**{field: bad})


def test_models_are_frozen_and_forbid_extra():
    link = _link()
    with pytest.raises(pydantic.ValidationError):
        link.latency_s = 1.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="colour"):
        _link(colour="red")


def test_efficiency_below_one_needs_a_source():
    with pytest.raises(pydantic.ValidationError, match="efficiency_source"):
        _link(efficiency=0.9)
    assert _link(efficiency=0.9, efficiency_source="measured").efficiency == 0.9


def test_missing_source_refused():
    with pytest.raises(pydantic.ValidationError, match="source"):
        Link(
            name="x",
            kind="pcie",
            generation="Gen5",
            datasheet_bandwidth_bytes_per_s="128GB/s",
            datasheet_direction="bidirectional",
            latency_s="1us",
        )


def test_gpu_compute_capability_must_match_architecture():
    h100 = load("h100-sxm")
    data = {k: getattr(h100, k) for k in GPU.model_fields}
    with pytest.raises(pydantic.ValidationError, match="compute_capability"):
        GPU(**{**data, "compute_capability": 8.0})


# --- node rules ------------------------------------------------------------------------------
def _node_kwargs(name="dgx-h100"):
    node = cluster(name).node
    return {k: getattr(node, k) for k in Node.model_fields}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpu": "a100-sxm-80gb"}, "nvls: true needs a hopper or blackwell"),
        ({"intra_kind": "pcie"}, "intra_kind: 'pcie' needs a pcie `intra_link`"),
        ({"p2p": False}, "p2p: false is only possible with `intra_kind` 'pcie'"),
        ({"fabric": "none"}, "either all three"),
        (
            {"fabric": "efa"},
            "fabric: 'efa' does not match the `nic` kind 'infiniband'; allowed: 'infiniband'",
        ),
        ({"nics_per_node": 0}, "either all three"),
    ],
)
def test_node_cross_field_rules(change, message):
    kw = _node_kwargs()
    if "gpu" in change:
        change = {"gpu": load(change["gpu"])}
    with pytest.raises(pydantic.ValidationError, match=message):
        Node(**{**kw, **change})


def test_sharp_needs_infiniband():
    kw = _node_kwargs("aws-p5")
    with pytest.raises(pydantic.ValidationError, match="sharp: true needs `fabric` 'infiniband'"):
        Node(**{**kw, "sharp": True})


# --- cluster numbers -------------------------------------------------------------------------
def test_dgx_h100_cluster_numbers():
    c = cluster("dgx-h100", nodes=2)
    assert (c.nodes, c.gpus_per_node, c.ranks) == (2, 8, 16)
    assert c.intra_bandwidth_bytes_per_s == pytest.approx(450e9, rel=EXACT)  # 18 x 25 GB/s
    assert c.nvlinks_per_gpu == 18
    assert c.nvlink_bandwidth_per_link_bytes_per_s == pytest.approx(25e9, rel=EXACT)
    assert c.node_inter_bandwidth_bytes_per_s == pytest.approx(400e9, rel=EXACT)  # 8 x 400G
    assert c.inter_bandwidth_bytes_per_s == pytest.approx(50e9, rel=EXACT)
    assert c.effective_node_inter_bandwidth_bytes_per_s == pytest.approx(384e9, rel=EXACT)
    assert (c.intra_kind, c.fabric, c.p2p, c.nvls, c.sharp) == (
        "nvswitch",
        "infiniband",
        True,
        True,
        False,
    )
    assert c.intra_latency_s < c.inter_latency_s
    assert c.gpu.architecture == "hopper" and c.gpu.compute_capability == 9.0
    assert c.nic is not None and c.nic.name == "ib-ndr"
    assert c.cpu_vendor == "intel"


def test_pcie_cluster_has_no_nvlink_numbers():
    c = cluster("pcie3-2x-rtx2080ti-nop2p")
    assert c.nvlinks_per_gpu == 0 and c.nvlink_bandwidth_per_link_bytes_per_s == 0.0
    assert c.p2p is False and c.fabric == "none" and c.nic is None
    assert c.inter_bandwidth_bytes_per_s == 0.0 and c.inter_latency_s == 0.0
    assert c.intra_bandwidth_bytes_per_s == pytest.approx(16e9, rel=EXACT)  # 32 GB/s bidir / 2


def test_nodes_without_network_refused():
    with pytest.raises(ValueError, match="no network"):
        cluster("pcie-8x-l40s", nodes=2)


def test_with_nodes_and_slices():
    c = cluster("aws-p5")
    assert c.with_nodes(4).ranks == 32
    half = c.with_gpus_per_node(4)
    assert half.nics_per_node == 16  # 32 EFA ports for 8 GPUs -> 16 for 4
    assert half.inter_bandwidth_bytes_per_s == pytest.approx(c.inter_bandwidth_bytes_per_s)
    assert isinstance(half, Cluster) and half.name == c.name
    with pytest.raises(ValueError, match="gpus_per_node"):
        c.with_gpus_per_node(0)
    with pytest.raises(
        ValueError, match=r"^nodes: must be a whole number in 1\.\.1,000,000, got 0"
    ):
        c.with_nodes(0)  # one line naming the field, as with_gpus_per_node (not pydantic's report)


def test_gb200_node_is_the_nvlink_domain():
    c = cluster("gb200-nvl72", nodes=20)
    assert c.gpus_per_node == 72 and c.hosts_per_node == 18 and c.ranks == 1440
    assert c.intra_bandwidth_bytes_per_s == pytest.approx(900e9, rel=EXACT)  # NVLink5 1.8 TB/s / 2


def test_a_slice_cannot_hold_more_gpus_than_the_node():
    import costmodel as cm

    c = cm.cluster("dgx-h100")
    assert c.with_gpus_per_node(4).gpus_per_node == 4
    with pytest.raises(
        ValueError, match=r"gpus_per_node: dgx-h100 has 8 GPUs per node, got 9; allowed: 1\.\.8"
    ):
        c.with_gpus_per_node(9)
    with pytest.raises(ValueError, match="gpus_per_node"):
        cm.predict_collective("all_reduce", 1e6, "dgx-h100", gpus_per_node=9)
