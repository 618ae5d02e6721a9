"""Physics of the collective models a QA pass found wrong.

- A ring broadcast or reduce is a chain along NCCL's ring: its first byte crosses n - 1 hops,
  k - 1 of them between nodes. The ``nccl`` model charged NCCL's ranking figure (base + one
  hop), so 1 B to 32,768 GPUs took 11.7 us on dgx-h100 at every node count.
- NCCL's table (``nccl-table``) priced NVLSTree all-reduce on 2 x 8 B200 at 409 GB/s algbw
  over 8 x 400G NICs (400 GB/s); it is capped at the NICs' line rate and says so.
- ``predict_collective`` took 0.5 B (15 us) where the CLI refuses it.
- The lesson model's in-switch all-reduce (one NVLink domain's formula) across nodes got faster
  per node added (64 MiB on coreweave-hgx-h100: 1.43 ms on 2 nodes, 1.35 ms on 64).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import costmodel as cm
from costmodel import nccl, presets
from costmodel import realistic as R
from costmodel.predict import (
    NCCL_TABLE_CAPPED_NOTE,
    NCCL_TABLE_CHAIN_NOTE,
    predict_collective,
    predict_collective_nodes,
)
from costmodel.uncertainty import BORROWED_BAND_NOTE

PRESETS = presets.names("cluster")
NETWORKED = [n for n in PRESETS if presets.cluster(n).nics_per_node > 0]
NODES = (1, 2, 3, 4, 8, 16, 64, 256, 1024, 4096)
OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all")


# --- 1. ring broadcast / reduce: the chain's hops ------------------------------------------------
@pytest.mark.parametrize("name", NETWORKED)
@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_ring_broadcast_and_reduce_pay_every_network_hop_and_grow_with_nodes(name, op):
    """1 B on k nodes takes at least (k - 1) x the preset's inter-node latency, and never less
    on more nodes (1..4096): it was 11.7 us on dgx-h100 from 2 to 4,096 nodes."""
    times = []
    for k in NODES:
        c = presets.cluster(name, nodes=k)
        t = float(predict_collective(op, 1, c, nodes=k, algorithm="ring").time_s)
        assert t >= (k - 1) * c.inter_latency_s, (k, t, c.inter_latency_s)
        times.append(t)
    assert all(b >= a for a, b in zip(times, times[1:], strict=False)), times


def test_the_chain_is_the_all_gather_rings_hops():
    """``ring_chain_latency_us`` charges NCCL's ring all-gather latency (the same n - 1 hops,
    the same per-hop constants), and the array form the nccl model evaluates is the same."""
    for k, g in ((1, 2), (1, 8), (2, 8), (4, 4), (64, 8)):
        c = presets.cluster("dgx-h100", nodes=k, gpus_per_node=g)
        from costmodel.predict import cluster_topology

        topo = cluster_topology(c)
        for p in nccl.PROTOCOLS:
            chain = nccl.ring_chain_latency_us(p, topo)
            assert chain == pytest.approx(nccl.latency_us("all_gather", "ring", p, topo))
            arr = R._latency_us("broadcast", "ring", p, topo, np.array([float(k)]), chain=True)
            assert float(arr[0]) == pytest.approx(chain)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_the_bundled_two_rank_runs_do_not_move(op):
    """09c and 09d (1 node x 2 GPUs) measure the only bundled broadcast and reduce: one hop, so
    the chain's latency is NCCL's table figure there and the fit is unchanged."""
    c = presets.cluster("pcie3-2x-rtx2080ti-nop2p")
    from costmodel.predict import cluster_topology

    topo = cluster_topology(c)
    k = np.array([1.0])
    for p in nccl.PROTOCOLS:
        table = R._latency_us(op, "ring", p, topo, k, chain=False)
        chain = R._latency_us(op, "ring", p, topo, k, chain=True)
        assert float(chain[0]) == float(table[0])


def test_nccl_table_keeps_nccls_ranking_figure_and_says_so():
    """The reference baseline stays NCCL's table (base + one hop at every node count) and its
    rows say what that figure is; the nccl model's rows do not carry the note."""
    ts = [
        float(predict_collective("broadcast", 1, "dgx-h100", nodes=k, model="nccl-table").time_s)
        for k in (2, 64, 4096)
    ]
    assert ts[0] == pytest.approx(ts[1], rel=1e-4) == pytest.approx(ts[2], rel=1e-4)
    p = predict_collective("reduce", 1, "dgx-h100", nodes=2, model="nccl-table")
    assert NCCL_TABLE_CHAIN_NOTE in p.model_note
    assert predict_collective("reduce", 1, "dgx-h100", nodes=2).model_note == ""


def test_a_multi_node_broadcast_band_says_no_run_measures_one():
    far = predict_collective("broadcast", 2**20, "dgx-h100", nodes=2).error_band
    near = predict_collective("broadcast", 2**20, "dgx-h100", nodes=1).error_band
    ar = predict_collective("all_reduce", 2**20, "dgx-h100", nodes=2).error_band
    assert far is not None and near is not None and ar is not None
    assert BORROWED_BAND_NOTE in far.note
    assert BORROWED_BAND_NOTE not in near.note and BORROWED_BAND_NOTE not in ar.note


# --- 2. NCCL's table under the NICs' line rate ----------------------------------------------------
def _nic_bound(op: str, algorithms, name: str, k: int) -> np.ndarray:
    c = presets.cluster(name, nodes=k)
    B = c.node_inter_bandwidth_bytes_per_s
    return np.array(
        [
            float(R.busbw_bound_bytes_per_s(op, str(a), k, c.gpus_per_node, math.inf, B))
            for a in np.atleast_1d(algorithms)
        ]
    )


@pytest.mark.parametrize("name", NETWORKED)
def test_nccl_table_never_beats_the_nic_line_rate(name):
    """Every op, 2-64 nodes, 1 MiB-64 GiB: busbw within the NIC bound of the algorithm NCCL's
    table chose, through the API and the sweep (dgx-b200 NVLSTree was 409 GB/s algbw)."""
    sizes = 2.0 ** np.arange(20, 37, 2)
    for op in OPS:
        for k in (2, 3, 8, 64):
            p = predict_collective(op, sizes, name, nodes=k, model="nccl-table")
            bound = _nic_bound(op, p.algorithm, name, k)
            assert np.all(p.busbw_bytes_per_s <= bound * (1 + 1e-9)), (op, k)
    df = cm.sweep(preset=name, op=list(OPS), nodes=[2, 8], size=[2**30, 2**36], model="nccl-table")
    for r in df.itertuples():
        bound = _nic_bound(str(r.op), [r.algorithm_used], name, int(r.nodes))[0]
        assert r.busbw_GBps * 1e9 <= bound * (1 + 1e-9), r


def test_nccl_table_says_where_it_was_capped():
    capped = predict_collective("all_reduce", 64 * 2**30, "dgx-b200", nodes=2, model="nccl-table")
    assert capped.algbw_bytes_per_s == pytest.approx(400e9)
    assert NCCL_TABLE_CAPPED_NOTE in capped.model_note
    small = predict_collective("all_reduce", 2**20, "dgx-b200", nodes=2, model="nccl-table")
    assert small.model_note == ""


# --- 3. sizes below a byte --------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.5, [1.0, 0.5], np.array([2**20, 1e-3])])
def test_a_size_below_one_byte_is_refused_on_a_cluster(value):
    with pytest.raises(ValueError, match=r"^message_bytes: must be 0 or between 1 and 2\*\*44 B"):
        predict_collective("all_reduce", value, "dgx-h100")
    with pytest.raises(ValueError, match=r"^message_bytes: must be 0 or between 1 and 2\*\*44 B"):
        cm.collective_time("all_reduce", value, cm.cluster("dgx-h100"))
    with pytest.raises(ValueError, match=r"^message_bytes: "):
        predict_collective_nodes("all_reduce", np.atleast_1d(value), [cm.cluster("dgx-h100")])


def test_empty_and_non_whole_sizes_from_one_byte_stay_accepted():
    """0 B is an empty message (0 s); a notebook's logspace grid (1.5 B, 31.6 B) draws a curve;
    the alpha-beta formulas keep fractions of a byte (computed sizes, crossovers)."""
    assert predict_collective("all_reduce", 0, "dgx-h100").time_s == 0
    t = predict_collective("all_reduce", np.logspace(0, 3, 7), "dgx-h100").time_s
    assert np.all(np.isfinite(t)) and np.all(np.diff(t) >= 0)
    assert cm.allreduce_time(0.5, 8, 50e9) > 0


# --- 4. the lesson's in-switch all-reduce is one NVLink domain's --------------------------------
@pytest.mark.parametrize("nodes", [2, 64])
def test_the_lesson_refuses_nvls_across_nodes(nodes):
    with pytest.raises(ValueError, match="cannot run .nvls. across nodes") as e:
        predict_collective(
            "all_reduce", 64 * 2**20, "coreweave-hgx-h100", nodes=nodes, model="lesson",
            algorithm="nvls",
        )  # fmt: skip
    assert "textbook" in str(e.value) and "nccl" in str(e.value)


def test_the_lesson_runs_nvls_in_one_node():
    p = predict_collective(
        "all_reduce", 64 * 2**20, "coreweave-hgx-h100", nodes=1, model="lesson", algorithm="nvls"
    )
    assert p.algorithm == "nvls" and p.time_s > 0


def test_the_collectives_pages_every_model_view_says_what_nccl_tables_row_is():
    """The Collectives page's "Every model" view shows nccl-table's row: capped at the NICs on
    2 x dgx-b200 at 64 GiB, and its broadcast latency NCCL's ranking figure, said under it."""
    from tests.test_app import open_page

    for op, said in (
        ("all_reduce", "exceeds the NIC line rate here: capped"),
        ("broadcast", "broadcast/reduce latency is NCCL's ranking figure"),
    ):
        at = open_page(
            "page_collectives.py",
            {
                "op": op,
                "nccl_cluster": "dgx-b200",
                "nccl_nodes": "2",
                "size_text": "64GiB",
                "coll_all_models": "true",
            },
        )
        assert not at.exception and not at.error, [e.value for e in at.error]
        captions = " ".join(str(c.value) for c in at.caption)
        assert "Note (nccl-table): " in captions and said in captions, captions
