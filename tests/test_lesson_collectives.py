"""Every collective and topology worked example of the lesson
(summarised, with every number pinned here, in docs/lesson.md), pinned.

Tolerances follow the lesson's rounding: a figure printed with k significant digits is checked to
half a unit of its last digit; "~" figures to 3%. The numbers are checked on the formula modules
(``costmodel.collectives``, ``costmodel.topology``) and, in the last section, through the public
``import costmodel as cm`` front, which must give the same answers.

Not pinned here (another module's test): "the published crossover is roughly in the
low-tens-of-MB range" and "tree tends to win beyond ~32-64 nodes" (statements about NCCL's tuned
algorithms, not the textbook rows: pinned on the nccl model in tests/test_docs_qa5.py); the batch,
memory and DDP-step examples (tests/test_lesson_training.py).
"""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel import collectives as c
from costmodel import topology as t
from costmodel.units import parse_rate

NDR = 50e9  # lesson section 7: InfiniBand NDR 400 Gb/s = 50 GB/s per port
XDR = 100e9  # lesson section 7: InfiniBand XDR 800 Gb/s = 100 GB/s per port
NVLINK4 = 900e9  # lesson section 7: "900 GB/s" (a bidirectional total; the lesson uses it as is)


def test_link_rates_of_section_7():
    assert parse_rate("400Gb/s") == NDR
    assert parse_rate("800Gb/s") == XDR
    assert NVLINK4 / NDR == 18  # "NVLink is ~18x the per-GPU bandwidth of NDR InfiniBand"


# --- section 5: ring all-reduce and its cost ---------------------------------------------------
def test_ring_bytes_per_rank_flat_in_n():
    """Quiz, section 5: 2(7/8)M = 1.75M vs 2(511/512)M = 1.996M."""
    assert c.bytes_per_rank("all_reduce", 1.0, 8) == pytest.approx(1.75, abs=5e-3)
    assert c.bytes_per_rank("all_reduce", 1.0, 512) == pytest.approx(1.996, abs=5e-4)
    # "as N -> infinity the bandwidth term -> 2 M beta, a constant independent of N"
    assert c.bytes_per_rank("all_reduce", 1.0, 8192) == pytest.approx(2.0, rel=1e-3)


def test_ring_latency_term_grows_73x():
    """Quiz, section 5: the latency term 2(N-1) alpha grows 73x from N=8 to N=512."""
    a, bw = 5e-6, NDR

    def latency_term(n: int, algorithm: str = "ring") -> float:
        # the time with alpha less the time without, for a 1-byte message (0 B is not sent: 0 s)
        return c.allreduce_time(1.0, n, bw, a, algorithm) - c.allreduce_time(
            1.0, n, bw, 0.0, algorithm
        )

    ratio = latency_term(512) / latency_term(8)
    assert ratio == pytest.approx(73, abs=0.5)
    # the tree's 2 ceil(log2 N) alpha grows only 3x over the same range
    tree = latency_term(512, "tree") / latency_term(8, "tree")
    assert tree == pytest.approx(3, abs=1e-9)
    assert latency_term(512, "tree") == pytest.approx(2 * 9 * a, rel=1e-9)


def test_ring_is_bandwidth_optimal():
    """Section 5: 2(N-1)/N M is a lower bound the ring meets exactly (Patarasuk & Yuan 2009)."""
    for n in (2, 8, 64, 512):
        assert c.bytes_per_rank("all_reduce", 1e9, n) == c.allreduce_lower_bound_bytes(1e9, n)


def test_naive_allreduces():
    """Section 5: reduce-to-root makes the root's link carry (N-1)M in and (N-1)M out; all-to-all
    makes every rank send (N-1)M."""
    m, n = 1e9, 16
    assert c.bytes_per_rank("all_reduce", m, n, "naive_root") == pytest.approx(2 * (n - 1) * m)
    assert c.bytes_per_rank("all_reduce", m, n, "naive_all_to_all") == pytest.approx((n - 1) * m)
    # and the ring beats both for every N > 2 ("cost scales with N" for the naive ones)
    for n in (4, 8, 64):
        ring = c.allreduce_time(m, n, NDR)
        assert c.allreduce_time(m, n, NDR, algorithm="naive_root") > ring * (n - 1)
        assert c.allreduce_time(m, n, NDR, algorithm="naive_all_to_all") > ring * (n / 2 - 1e-9)


def test_tree_for_small_messages_ring_for_large():
    """Section 5: small messages / large N -> tree; large messages -> ring."""
    n, a, bw = 512, 5e-6, NDR
    m_star = c.crossover_bytes("ring", "tree", n, bw, a)
    assert 0 < m_star < float("inf")
    assert c.allreduce_time(m_star / 10, n, bw, a, "tree") < c.allreduce_time(m_star / 10, n, bw, a)
    assert c.allreduce_time(m_star * 10, n, bw, a) < c.allreduce_time(m_star * 10, n, bw, a, "tree")
    # more ranks push the crossover up: the tree wins over a wider range of sizes
    assert c.crossover_bytes("ring", "tree", 64, bw, a) < m_star


# --- section 4: all-reduce = reduce-scatter + all-gather ---------------------------------------
def test_allreduce_is_reduce_scatter_plus_all_gather_in_bytes():
    m = 500e6
    for n in (2, 8, 64):
        rs = c.bytes_per_rank("reduce_scatter", m, n)
        ag = c.bytes_per_rank("all_gather", m, n)
        assert rs == ag == pytest.approx((n - 1) / n * m)  # "(N-1) M/N" per phase
        assert rs + ag == pytest.approx(c.bytes_per_rank("all_reduce", m, n), rel=1e-15)


# --- section 6: in-network reduction -----------------------------------------------------------
def test_in_network_reduction_roughly_halves_the_volume():
    """Section 6: with NVLS / SHARP per-GPU volume drops toward (N-1)/N M, about half the ring's."""
    m = 1e9
    for n in (64, 512):
        ratio = c.bytes_per_rank("all_reduce", m, n, "nvls") / c.bytes_per_rank("all_reduce", m, n)
        assert ratio == pytest.approx(0.5, abs=0.02)  # (N+1)/(2(N-1)): 0.516 at 64, 0.502 at 512
    # across nodes (IB SHARP): each node sends its shard once and receives it once, n/(2(n-1))
    # of the ring's bytes: about half on many nodes (0.508 on 64), never below one send
    for n in (8, 64):
        plain = t.hierarchical_allreduce_phases(m, n, 8, 450e9, NDR)["inter_allreduce_s"]
        sharp = t.hierarchical_allreduce_phases(m, n, 8, 450e9, NDR, in_network_reduction=True)
        assert sharp["inter_allreduce_s"] == pytest.approx(plain * n / (2 * (n - 1)), rel=1e-12)
    assert sharp["inter_allreduce_s"] / plain == pytest.approx(0.5, abs=0.01)


# --- section 7 quiz: 500 MB over NVLink vs NDR -------------------------------------------------
def test_500mb_on_8_gpus_nvlink_vs_ndr():
    m, n = 500e6, 8
    assert c.bytes_per_rank("all_reduce", m, n) / 1e6 == pytest.approx(875, abs=0.5)
    nvlink = c.allreduce_time(m, n, NVLINK4)
    ndr = c.allreduce_time(m, n, NDR)
    assert nvlink * 1e3 == pytest.approx(0.97, abs=0.005)
    assert ndr * 1e3 == pytest.approx(17.5, abs=0.05)
    assert ndr / nvlink == pytest.approx(18, abs=0.5)  # "exactly the bandwidth ratio"
    # (b) as the lesson sets it up: 8 GPUs one per node, each node with one NDR NIC
    assert t.flat_ring_allreduce_time(m, 8, 1, NVLINK4, 1, NDR) == pytest.approx(ndr, rel=1e-12)
    # (a) one node of 8 over NVLink: the flat ring never touches the fabric
    assert t.flat_ring_allreduce_time(m, 1, 8, NVLINK4, 0, 0.0) == pytest.approx(nvlink, rel=1e-12)


# --- practice problem 1: 7B model, 64 H100s, NDR ------------------------------------------------
GRAD_BYTES = 7e9 * 2  # 7B params, bf16 gradients = 14 GB
COMPUTE_S = 0.400


def test_practice_1a_allreduce_time():
    assert c.bytes_per_rank("all_reduce", GRAD_BYTES, 64) / 1e9 == pytest.approx(27.6, abs=0.05)
    assert c.allreduce_time(GRAD_BYTES, 64, NDR) == pytest.approx(0.55, abs=0.005)


def test_practice_1a_on_a_cluster_through_model_lesson():
    """The same worked example asked of a cluster: 8 x DGX H100 (one 400G NDR NIC per GPU) under
    model="lesson" is the lesson's flat ring at 50 GB/s per GPU, plus the preset's per-hop
    latency (2 x 63 steps of a few us: < 1 ms on 0.55 s); the topology-aware textbook, whose
    ring uses all 8 NICs of a node, is several times faster (two models, two names)."""
    cluster = cm.cluster("dgx-h100", nodes=8)
    lesson = cm.allreduce_time(GRAD_BYTES, cluster, model="lesson")
    assert lesson == pytest.approx(0.55, abs=0.005)
    assert lesson - c.allreduce_time(GRAD_BYTES, 64, NDR) < 1e-3
    p = cm.predict_collective("all_reduce", GRAD_BYTES, cluster, nodes=8, model="lesson")
    assert p.time_s == lesson and p.busbw_bytes_per_s / 1e9 == pytest.approx(50, rel=0.01)
    assert cm.allreduce_time(GRAD_BYTES, cluster, model="textbook") < lesson / 5


def test_practice_1b_comms_bound():
    comm = c.allreduce_time(GRAD_BYTES, 64, NDR)
    assert comm > COMPUTE_S  # comms-bound
    step = max(COMPUTE_S, comm)  # perfect overlap
    assert step == pytest.approx(0.55, abs=0.005)
    assert step - COMPUTE_S >= 0.150 - 1e-3  # ">= 150 ms of comm is exposed"
    assert COMPUTE_S / step == pytest.approx(0.73, abs=0.005)  # "efficiency ~ 73%"


@pytest.mark.parametrize(
    ("what", "time_s"),
    [
        ("XDR 100 GB/s", lambda: c.allreduce_time(GRAD_BYTES, 64, XDR)),
        (
            "in-network reduction (NVLS/SHARP)",
            lambda: c.allreduce_time(GRAD_BYTES, 64, NDR, algorithm="nvls"),
        ),
        ("fp8 gradients", lambda: c.allreduce_time(7e9 * 1, 64, NDR)),
        ("ZeRO reduce-scatter", lambda: c.collective_time("reduce_scatter", GRAD_BYTES, 64, NDR)),
    ],
)
def test_practice_1c_each_change_flips_the_verdict(what, time_s):
    """ "XDR roughly halves the transfer to ~275 ms, or NVLS/SHARP halves the volume; either makes
    you compute-bound. (Also valid: FP8 gradients halve M; or ZeRO ... reduce-scatter.)"
    Tolerance 3% (the lesson writes "~"): 0.276 s for XDR/fp8/ZeRO, 0.284 s for NVLS's (N+1)/N."""
    assert time_s() == pytest.approx(0.28, rel=0.03)
    assert time_s() < COMPUTE_S


def test_practice_1c_xdr_275ms():
    assert c.allreduce_time(GRAD_BYTES, 64, XDR) * 1e3 == pytest.approx(275, abs=1.0)


# --- section 8: bucketing amortizes alpha --------------------------------------------------------
def test_fewer_larger_messages_amortize_latency():
    """Section 8: one all-reduce per parameter tensor "would drown in per-message latency"."""
    n, a = 64, 5e-6
    one = c.allreduce_time(GRAD_BYTES, n, NDR, a)
    buckets = 560 * c.allreduce_time(GRAD_BYTES / 560, n, NDR, a)  # 25 MB buckets
    tensors = 50_000 * c.allreduce_time(GRAD_BYTES / 50_000, n, NDR, a)
    assert one < buckets < tensors
    assert tensors - one == pytest.approx((50_000 - 1) * 2 * (n - 1) * a, rel=1e-6)


# --- hands-on 2: what nccl-tests' busbw column reports ------------------------------------------
def test_nccl_tests_busbw_is_2_n_minus_1_over_n_m_over_t():
    m, n, time_s = 1 << 30, 8, 3.1e-3
    assert c.bus_bandwidth("all_reduce", m, n, time_s) == pytest.approx(
        2 * (n - 1) / n * m / time_s, rel=1e-15
    )


# --- the same answers through the public front: import costmodel as cm --------------------------
def test_cm_front_formula_names():
    assert cm.bytes_per_rank("all_reduce", 500e6, 8) == pytest.approx(875e6, rel=1e-12)
    assert cm.allreduce_lower_bound_bytes(GRAD_BYTES, 64) / 1e9 == pytest.approx(27.6, abs=0.05)
    assert cm.busbw_factor("all_reduce", 8) == 1.75
    assert cm.bus_bandwidth("all_reduce", 1e9, 8, 1e-2) == pytest.approx(1.75e11)
    assert cm.algorithm_bandwidth(1e9, 1e-2) == pytest.approx(1e11)
    assert cm.crossover_bytes("ring", "tree", 512, NDR, 5e-6) == c.crossover_bytes(
        "ring", "tree", 512, NDR, 5e-6
    )
    assert "all_reduce" in cm.OPS and "nvls" in cm.ALGORITHMS["all_reduce"]
    assert cm.flat_ring_allreduce_time(500e6, 8, 1, NVLINK4, 1, NDR) * 1e3 == pytest.approx(
        17.5, abs=0.05
    )
    assert cm.hierarchical_allreduce_time(1e9, 1, 8, NVLINK4, 0.0) == pytest.approx(
        c.allreduce_time(1e9, 8, NVLINK4), rel=1e-12
    )


def test_cm_front_allreduce_time():
    """cm.allreduce_time / cm.collective_time resolve to costmodel.api (which also accepts a
    Cluster); with plain numbers they must give the formula module's answers."""
    assert cm.allreduce_time(14e9, 64, 50e9) == pytest.approx(0.55, abs=0.005)
    assert cm.allreduce_time(500e6, 8, 900e9) * 1e3 == pytest.approx(0.97, abs=0.005)
    assert cm.allreduce_time(500e6, 8, 50e9, algorithm="tree") == c.allreduce_time(
        500e6, 8, 50e9, algorithm="tree"
    )
    assert cm.collective_time("all_reduce", 14e9, 64, 100e9) * 1e3 == pytest.approx(275, abs=1.0)
    assert cm.collective_time("all_gather", 1e9, 4, 100e9, latency_s=1e-5) == c.collective_time(
        "all_gather", 1e9, 4, 100e9, 1e-5
    )
