r"""The terms NCCL's tuning model leaves out, each a named function with its provenance.

NCCL's table (:mod:`costmodel.nccl`) predicts the device time of the algorithm it picks. What
nccl-tests measures differs from it in a few systematic ways; each is one function here:

=============================  ==============================================================
term                           what and why
=============================  ==============================================================
:func:`host_floor_s`           per-operation host launch cost: nccl-tests times back-to-back
                               launches, so an op never completes faster than the thread can
                               launch it, once per GPU that thread drives (``-g``); fitted.
:func:`fabric_latency_us`      extra latency per network hop of a fabric class, in NCCL's own
                               ``latencyInter`` slot (NCCL's NET latencies are InfiniBand's);
                               fitted per fabric.
:func:`nvls_allreduce_algbw_gbs`  NVLink SHARP all-reduce moves M(1 + 1/n) per GPU each way:
                               algbw = eff x link x n/(n + 1) (nccl-tests PR #239, nccl#1455).
                               NCCL's formula uses min(32, n) channels capped at its top speed,
                               far too low at 2-4 GPUs. No fitted value: eff and link are NCCL's.
:func:`host_staged_duplex_factor`  without GPU peer-to-peer NCCL copies through host memory;
                               both directions then share it, so ops that send and receive at
                               once (all-reduce, all-gather, all-to-all) get a fraction of the
                               one-way rate NCCL's table assumes; broadcast and reduce move data
                               one way and are not reduced; fitted.
:func:`nvlink_domain_scale`    NCCL's Blackwell per-link NVLink constant (40.1 GB/s) is below
                               what multi-node NVLink domains (GB200 NVL72) deliver; a
                               multiplier on it for NVLink domains of more than 8 GPUs on one
                               or two domains (beyond, the network's bwInter governs), fitted
                               on Blackwell runs.
:func:`fabric_tree_efficiency`  Tree's share of NCCL's modelled bandwidth beyond two nodes on
                               fabrics reached through the libfabric net plugin (aws-ofi-nccl:
                               Slingshot, EFA); NCCL's Tree constants are InfiniBand figures;
                               fitted per fabric (1 where no such run exists).
:func:`fabric_ramp_phi`        the mid-size ramp amplitude on several nodes of such a fabric:
                               a proxy-driven plugin pays a per-message cost on every chunk, so
                               mid sizes (small chunks) reach far less of the link; fitted per
                               fabric (the global amplitude elsewhere).
:func:`mid_size_ramp`          pipeline fill: the bandwidth of a large transfer is reached
                               only slowly; one fitted shape, scaled per (op, algorithm,
                               protocol) by :func:`ramp_amplitude`: x2 for a lone ring
                               reduce-scatter/all-gather (half the steps per loop), none for
                               Tree (NCCL's treeCorrectionFactor) nor for LL/LL128 (line-
                               granular forwarding).
:func:`net_ramp_phi`           the mid-size ramp across nodes: every network chunk is handled
                               by a proxy thread on the host; one amplitude for NCCL's verbs
                               fabrics and one multiplier shared by the proxy-driven ones
                               (EFA, Slingshot, TCPX, TCPXO: cited in
                               ``costmodel/data/fabric_priors.toml``), each fitted on several
                               sources.
:func:`achievable_fraction`    share of the NICs' line rate large transfers reach: cited
                               priors (:mod:`costmodel.fabrics`), not fitted; it caps the
                               network term of the hardware bound.
:func:`ring_nic_fraction`      the same cited share as the bandwidth a multi-node Ring/Simple
                               reaches (NIC-bound), where NCCL's quantised channel speeds give
                               less.
:func:`a2a_net_efficiency`     share of its NIC bandwidth a multi-node all-to-all reaches
                               (incast, many concurrent flows per NIC); a cited prior where no
                               multi-node all-to-all run is fitted, else fitted.
:func:`fabric_node_rate_gbs`   per-node rate of a transport that copies every byte through host
                               memory (NCCL's TCP socket fallback): it caps a multi-node op's
                               busbw whatever the NICs' line rate; cited prior or fitted.
:func:`fitted_nic_fraction`    a fabric's effective share of its NICs' line rate fitted across
                               its sources (Slingshot: Alps and Polaris), replacing the cited
                               :func:`achievable_fraction` and :func:`ring_nic_fraction`.
:func:`a2a_peer_latency_us`    a multi-node all-to-all's fixed cost per remote peer (one
                               proxy-posted send/receive pair per peer, incast at the receiver).
:func:`net_ll128_enabled`      NCCL runs LL128 across nodes only where the GPU reaches its NIC
                               through PCIe switches (tuning.cc); off per fabric (tried).
:func:`nvlink_step_latency_scale`  a multiplier on NCCL's per-step NVLink hop latency of Ring
                               and Tree (tuning.cc ``hwLatencies[NVLINK]``), fitted on one-node
                               NVLink runs (tried).
:func:`blackwell_nvlink_step_latency_scale`  the same, on Blackwell GPUs only (tried).
=============================  ==============================================================

Where the fit has no multi-node run of a fabric (a fold of the grouped cross-validation
without its only source, or a fabric no bundled run measures), :func:`fabric_latency_us`
takes the fabric's cited per-message overhead (:mod:`costmodel.fabrics`) instead of 0.

Fitted values come from ``scripts/fit_corrections.py`` (grouped cross-validation, written to
``costmodel/data/fitted_corrections.toml`` and read by :mod:`costmodel.fitted_corrections`);
this module holds only the formulas. How they enter the model (inside every candidate's cost,
before the choice, under the hardware caps) is :mod:`costmodel.realistic`.

>>> round(host_floor_s(4, {"host_base_us": 3.0, "host_per_gpu_us": 5.0}) * 1e6, 1)
23.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from . import tables as T
from ._checks import must_be
from .nccl import TopologyInputs, tree_correction_applies


def host_floor_s(
    gpus_per_process: int, params: Mapping[str, float], processes_per_node: ArrayLike = 1
) -> float | np.ndarray:
    r"""Host launch floor of one operation [s]: ``t_host = a + b g + c (p - 1)``.

    nccl-tests launches ``iters`` operations back to back and divides the wall time by their
    number, so the measured time per op is ``max(t_host, t_device)``; a thread that drives
    ``g`` GPUs (``-g g``) launches g kernels per op. With ``p`` processes per node (one per GPU
    under mpirun/srun) the op completes only once the last of them has launched its kernel, so
    the floor also grows with p: ``c`` (host_per_process_us, 0 where not fitted). ``a``
    (host_base_us), ``b`` (host_per_gpu_us) and ``c`` are fitted on single-node runs
    (scripts/fit_corrections.py).

    >>> round(host_floor_s(1, {"host_base_us": 3.0, "host_per_gpu_us": 5.0}) * 1e6, 1)
    8.0
    >>> p = {"host_base_us": 3.0, "host_per_gpu_us": 5.0, "host_per_process_us": 2.0}
    >>> round(host_floor_s(1, p, processes_per_node=8) * 1e6, 1)
    22.0
    """
    g = int(gpus_per_process)
    if g < 1:
        raise must_be("gpus_per_process", "an integer >= 1", gpus_per_process)
    procs = np.asarray(processes_per_node, dtype=float)
    if procs.size and (np.any(procs < 1) or np.any(procs != np.floor(procs))):
        raise must_be("processes_per_node", "integers >= 1", processes_per_node)
    c = float(params.get("host_per_process_us", 0.0))
    t = (params["host_base_us"] + params["host_per_gpu_us"] * g + c * (procs - 1.0)) * 1e-6
    return float(t) if t.ndim == 0 else t


#: Extra host time per call of a PyTorch timing loop over nccl-tests' C loop [us], a cited prior
#: (no bundled run measures a PyTorch loop): torch.distributed.all_reduce with NCCL on 8 x H100
#: measured 19.19 us at 128 B and 19.50 us at 1 KiB (ByteDance-Seed/Triton-distributed#57),
#: against NCCL's own model of 15.0 us for an 8-rank Ring/LL all-reduce (tuning.cc: 6.6 +
#: 2 x 7 x 0.6 us): about 4.5 us of Python and ProcessGroupNCCL work per call. A custom kernel
#: launched from Python costs at least 3.7 us per call (sgl-project/sglang#2904). Derived as a
#: difference from the model's time, it is added to it the same way (costmodel.predict, harness
#: "pytorch"); negligible from 1 MiB up. Low confidence (two sources subtracted); the error
#: band below 1 MiB stays unknown for this harness.
PYTORCH_LOOP_EXTRA_US = 4.5


def fabric_latency_us(fabric: str, params: Mapping[str, object]) -> float:
    """Extra latency per network hop for a fabric class [us] (0 where nothing was fitted).

    >>> fabric_latency_us("efa", {"fabric_latency_us": {"efa": 20.0}})
    20.0
    >>> fabric_latency_us("roce", {"fabric_latency_us": {"efa": 20.0}})
    0.0
    """
    # a per-fabric table {fabric: us} (corrections_toml checks its shape when it loads it)
    table = cast("Mapping[str, float]", params.get("fabric_latency_us", {}))
    return float(table.get(fabric, 0.0))


def nvls_allreduce_algbw_gbs(topo: TopologyInputs) -> float:
    r"""NVLink SHARP all-reduce algorithm bandwidth inside one node [GB/s].

    Each GPU sends its share of every reduction and receives the result, M(1 + 1/n) per
    direction (multimem ld_reduce + st), so with the per-GPU link capacity L NCCL's search sees
    and NCCL's own NVLS efficiency (0.85 Hopper, 0.74 Blackwell; tuning.cc l.139-144):

    .. math:: \mathrm{algbw} = \mathrm{eff} \cdot L \cdot \frac{n}{n + 1}

    Provenance: nccl-tests PR #239 (sjeaugey: "algobw = busbw * n / (n+1)"), nccl#1455 (8 x
    H100 NVLS busbw 420, 440, 460, 480 GB/s at 5-8 GPUs). On H100 (L = 18 x 20.6 GB/s) it gives
    210 GB/s at 2 GPUs and 252 at 4, where data 13f measures 207 and 251; NCCL's formula gives
    102 and 160. No fitted constant.

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=4,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> round(nvls_allreduce_algbw_gbs(t), 1)
    252.1
    """
    n = topo.gpus_per_node
    return T.NCCL_NVLS_EFFICIENCY[topo.cc] * topo.link_gbs * n / (n + 1)


# ops that send and receive at the same time on every rank
_DUPLEX_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def host_staged_duplex_factor(op: str, topo: TopologyInputs, params: Mapping[str, float]) -> float:
    """Bandwidth multiplier for host-staged (no P2P) transfers in both directions at once.

    1.0 where GPUs have peer-to-peer access or the op moves data one way (broadcast, reduce).

    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=7.5, nodes=1, gpus_per_node=2,
    ...                     intra_kind="pcie", p2p=False)
    >>> host_staged_duplex_factor("all_reduce", t, {"host_staged_duplex": 0.33})
    0.33
    >>> host_staged_duplex_factor("broadcast", t, {"host_staged_duplex": 0.33})
    1.0
    """
    if not topo.host_staged or op not in _DUPLEX_OPS:
        return 1.0
    return float(params["host_staged_duplex"])


# an NVLink domain larger than one HGX board (8 GPUs) is a multi-node NVLink (MNNVL) system
NVLINK_DOMAIN_MIN_GPUS = 9


def nvlink_domain_scale(
    compute_capability: float,
    gpus_per_node: int,
    intra_kind: str,
    params: Mapping[str, float],
    nodes: int = 1,
) -> float:
    """Multiplier on NCCL's per-link NVLink constant for Blackwell multi-node NVLink domains.

    Applies to NVSwitch domains of more than 8 GPUs (GB200 NVL72) with cc >= 10; 1 elsewhere
    (an 8-GPU B300 board measures 695 GB/s ring busbw, close to NCCL's 720, nccl#2140). It also
    stays 1 on more than two domains: there NCCL's per-channel bandwidth is the graph's
    ``bwInter``, the network path (tuning.cc l.306: ``bw = nNodes <= 2 ? bwIntra : bwInter``),
    so NVLink is not what governs, and a larger NVLink figure must not buy more channels.

    >>> nvlink_domain_scale(10.0, 72, "nvswitch", {"nvl_domain_link_scale": 1.17})
    1.17
    >>> nvlink_domain_scale(10.0, 8, "nvswitch", {"nvl_domain_link_scale": 1.17})
    1.0
    >>> nvlink_domain_scale(10.0, 72, "nvswitch", {"nvl_domain_link_scale": 1.17}, nodes=20)
    1.0
    """
    if (
        compute_capability >= 10.0
        and intra_kind == "nvswitch"
        and gpus_per_node >= NVLINK_DOMAIN_MIN_GPUS
        and nodes <= 2
    ):
        return float(params.get("nvl_domain_link_scale", 1.0))
    return 1.0


# fabrics NCCL reaches through the libfabric ("AWS Libfabric") net plugin, aws-ofi-nccl: EFA
# (data 16a-c: FI_PROVIDER=efa) and HPE Slingshot via the CXI provider (data 15:
# NCCL_NET="AWS Libfabric"). Its proxy thread drives every transfer on the host (no GPU-initiated
# network path), and NCCL's per-hop and per-channel constants were measured on InfiniBand.
OFI_FABRICS: tuple[str, ...] = ("efa", "slingshot")

# fabrics whose mid-size ramp amplitude is fitted on its own (:func:`fabric_ramp_phi`): the OFI
# ones, RoCE (run 23: Spectrum-X) and the TCP-based GPUDirect stacks (TCPX/TCPXO, data 20: a
# host-driven socket transport with its own per-chunk cost); InfiniBand keeps the global one.
PER_MESSAGE_FABRICS: tuple[str, ...] = (*OFI_FABRICS, "roce", "ethernet", "tcpxo")


def fabric_tree_efficiency(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Share of NCCL's Tree bandwidth reached beyond two nodes on a libfabric (OFI) fabric.

    On three or more nodes a Tree channel's head GPU exchanges with a parent and two children
    through one NIC at once (the double binary tree, nccl#545); NCCL's per-channel Tree figures
    (``perChMaxTreeBws``, ``0.92`` factor; tuning.cc l.178-211, 327-337) were set on
    InfiniBand. Where the network is reached through aws-ofi-nccl the measured Tree rate is a
    fitted fraction ``e`` of it, :math:`\mathrm{algbw} = e \cdot \mathrm{algbw}_\mathrm{NCCL}`;
    NCCL still picks the algorithm by its own table. 1 on InfiniBand/RoCE, on one or two nodes
    (there Tree's bandwidth is the intra-node one, tuning.cc l.306) and for fabrics without a
    fitted value. Fitted per fabric by scripts/fit_corrections.py (leave-one-run-out).

    >>> fabric_tree_efficiency("slingshot", 8, {"fabric_tree_efficiency": {"slingshot": 0.5}})
    0.5
    >>> fabric_tree_efficiency("slingshot", 2, {"fabric_tree_efficiency": {"slingshot": 0.5}})
    1.0
    >>> fabric_tree_efficiency("infiniband", 8, {"fabric_tree_efficiency": {"slingshot": 0.5}})
    1.0
    """
    if fabric not in OFI_FABRICS or int(nodes) <= 2:
        return 1.0
    table = cast("Mapping[str, float]", params.get("fabric_tree_efficiency", {}) or {})
    e = float(table.get(fabric, 1.0))
    if not 0.0 < e <= 1.0:
        raise must_be(f"fabric_tree_efficiency[{fabric!r}]", "in (0, 1]", e)
    return e


def fabric_ramp_phi(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Mid-size ramp amplitude :math:`\phi_0` for this fabric and node count.

    aws-ofi-nccl's proxy posts, completes and signals each NCCL chunk from the host, a fixed
    cost per message that NCCL's table (an InfiniBand latency per hop) does not carry; mid
    sizes move small chunks, so they lose a larger share of the link than on InfiniBand. The
    same holds for RoCE and the TCP-based GPUDirect stacks (TCPX/TCPXO). On several nodes of
    such a fabric (:data:`PER_MESSAGE_FABRICS`) the fitted per-fabric amplitude replaces the
    global ``ramp_phi`` (same knee and shape, :func:`mid_size_ramp`); elsewhere, and for a
    fabric without a fitted value, the global one.

    >>> p = {"ramp_phi": 0.12, "fabric_ramp_phi": {"efa": 1.5}}
    >>> fabric_ramp_phi("efa", 2, p), fabric_ramp_phi("efa", 1, p), fabric_ramp_phi("slingshot", 4, p)
    (1.5, 0.12, 0.12)
    """
    base = float(params.get("ramp_phi", 0.0))  # type: ignore[arg-type]
    if fabric not in PER_MESSAGE_FABRICS or int(nodes) < 2:
        return base
    table = cast("Mapping[str, float]", params.get("fabric_ramp_phi", {}) or {})
    phi = float(table.get(fabric, base))
    if not (math.isfinite(phi) and phi >= 0):
        raise must_be(f"fabric_ramp_phi[{fabric!r}]", "a finite number >= 0", phi)
    return phi


def ramp_amplitude(
    op: str,
    algorithm: ArrayLike,
    topo: TopologyInputs | None = None,
    protocol: ArrayLike = "simple",
) -> np.ndarray:
    r"""How strongly the mid-size ramp applies to (op, algorithm, protocol): 0, 1 or 2.

    - 0 where NCCL's table already carries a size-dependent efficiency: Tree all-reduce (and
      NVLSTree from cc 10.0 on x86) get ``treeCorrectionFactor`` (tuning.cc l.623-655), NCCL's
      own fitted mid-size ramp; adding ours would count it twice (13d: NCCL_ALGO=Tree is within
      7 % on NCCL's table alone).
    - 2 for ring reduce-scatter and all-gather: the fill of a ring pipeline is paid once per
      operation and amortised over the steps of its loop; all-reduce runs reduce-scatter and
      all-gather back to back in one loop (2(N-1) steps, NCCL's ncclPatternRingTwice), a lone
      reduce-scatter or all-gather N - 1 (ncclPatternRing; enqueue.cc calcCollChunking), so the
      same fill is twice as large a share of its transfer time.
    - 0 for the LL and LL128 protocols: every 16-byte (LL) or 128-byte (LL128) line carries its
      own flag and is forwarded as soon as it lands (src/include/device.h), so there is no
      chunk-sized store-and-forward stage to fill (13d: NCCL_PROTO=LL and LL128 pinned are
      within 4 % on NCCL's table alone).
    - 1 otherwise.

    ``algorithm`` and ``protocol`` may be arrays of names (NCCL's choice per size).

    >>> ramp_amplitude("all_gather", ["ring", "nvls"]).tolist()
    [2.0, 1.0]
    >>> ramp_amplitude("all_reduce", ["ring", "ring"], protocol=["ll", "simple"]).tolist()
    [0.0, 1.0]
    >>> from costmodel.nccl import topology_inputs
    >>> t = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=4,
    ...                     intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
    >>> ramp_amplitude("all_reduce", ["tree", "ring"], t).tolist()
    [0.0, 1.0]
    """
    algos = np.asarray(algorithm, dtype=str)
    protos = np.broadcast_to(np.asarray(protocol, dtype=str), algos.shape)
    names_a, which_a = np.unique(algos, return_inverse=True)
    names_p, which_p = np.unique(protos, return_inverse=True)
    table = np.array(
        [[ramp_amplitude_of(op, a, topo, pr) for pr in names_p.tolist()] for a in names_a.tolist()]
    ).reshape(len(names_a), len(names_p))
    return table[which_a, which_p].reshape(algos.shape)


def ramp_amplitude_of(
    op: str, algorithm: str, topo: TopologyInputs | None = None, protocol: str = "simple"
) -> float:
    """:func:`ramp_amplitude` of one (algorithm, protocol): the rules written there.

    >>> ramp_amplitude_of("reduce_scatter", "ring"), ramp_amplitude_of("all_reduce", "tree")
    (2.0, 0.0)
    """
    if protocol != "simple":
        return 0.0
    amplitude = 1.0
    if op in ("reduce_scatter", "all_gather") and algorithm == "ring":
        amplitude = T.RAMP_RING_SINGLE_PHASE_FACTOR * amplitude
    if topo is not None:
        if tree_correction_applies(op, algorithm, topo):
            return 0.0
    elif op == "all_reduce" and algorithm == "tree":
        return 0.0
    return amplitude


def mid_size_ramp(
    message_bytes: ArrayLike,
    params: Mapping[str, float],
    *,
    op: str | None = None,
    algorithm: ArrayLike = "ring",
    topo: TopologyInputs | None = None,
    protocol: ArrayLike = "simple",
) -> np.ndarray:
    r"""Bandwidth shortfall of mid-size transfers: time multiplier on the bandwidth term.

    .. math:: 1 + g\,\phi_0 \min\left(1, \sqrt{S_k / M}\right)
              \ \text{for } M \ge 1\,\mathrm{MiB}

    flat at :math:`1 + g\phi_0` up to the knee :math:`S_k`, then fading as :math:`M^{-1/2}`; 1
    below 1 MiB, where latency and the host floor dominate. ``g`` is :func:`ramp_amplitude`
    of (op, algorithm, protocol) (1 when ``op`` is None). ``ramp_phi`` and ``ramp_knee_bytes`` are fitted
    (leave-one-run-out) on every run's rows from 1 MiB up.

    >>> mid_size_ramp([2**20, 2**30], {"ramp_phi": 0.1, "ramp_knee_bytes": 2**28}).round(3)
    array([1.1 , 1.05])
    >>> mid_size_ramp([2**30], {"ramp_phi": 0.1, "ramp_knee_bytes": 2**28},
    ...               op="all_gather", algorithm="ring").round(3)
    array([1.1])
    """
    m = np.asarray(message_bytes, dtype=float)
    phi, knee = params.get("ramp_phi", 0.0), params.get("ramp_knee_bytes", 1.0)
    g = (
        1.0
        if op is None
        else np.broadcast_to(ramp_amplitude(op, algorithm, topo, protocol), m.shape)
    )
    ramp = 1.0 + g * phi * np.minimum(1.0, np.sqrt(knee / np.maximum(m, 1.0)))
    return np.where(m >= 2**20, ramp, 1.0)


def net_ramp_phi(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Amplitude :math:`\phi_n` of the network mid-size ramp on ``nodes`` > 1 (0 on one node).

    Across nodes every NCCL chunk is handed to the network by a proxy thread on the host
    (src/transport/net.cc: the proxy posts, tests and completes each send and receive), a cost
    per chunk NCCL's tuning model does not carry; mid sizes move few, small chunks per channel
    and so reach less of the link than NCCL's per-channel bandwidth. It is applied to every
    candidate of a multi-node row, whatever its protocol (LL/LL128 lines are still sent over
    the network in chunks), with its own knee and fade (:func:`costmodel.realistic.net_ramp_extra`).
    ``net_ramp_phi`` is fitted on the verbs fabrics' runs (InfiniBand, RoCE); fabrics whose data
    path needs host software beyond NCCL's verbs transport (proxy-driven, cited in
    :mod:`costmodel.fabrics`) share one fitted multiplier, ``fabric_net_ramp_scale`` (1 for the
    others); each is fitted on several sources (scripts/fit_corrections.py).

    >>> net_ramp_phi("infiniband", 2, {"net_ramp_phi": 0.2})
    0.2
    >>> net_ramp_phi("efa", 2, {"net_ramp_phi": 0.2, "fabric_net_ramp_scale": {"efa": 3.0}})
    0.6000000000000001
    >>> net_ramp_phi("infiniband", 1, {"net_ramp_phi": 0.2})
    0.0
    """
    if int(nodes) < 2:
        return 0.0
    base = float(params.get("net_ramp_phi", 0.0))  # type: ignore[arg-type]
    table = cast("Mapping[str, float]", params.get("fabric_net_ramp_scale", {}) or {})
    phi = base * float(table.get(fabric, 1.0))
    if not (math.isfinite(phi) and phi >= 0):
        raise must_be(f"net_ramp_phi for {fabric!r}", "a finite number >= 0", phi)
    return phi


def _fabric_share(key: str, fabric: str, params: Mapping[str, object], default: float) -> float:
    """A per-fabric share of line rate from ``params[key]`` (``default`` where none), in [0, 1]."""
    table = cast("Mapping[str, float]", params.get(key, {}) or {})
    f = float(table.get(fabric, default))
    if not 0.0 <= f <= 1.0:
        raise must_be(f"{key}[{fabric!r}]", "in [0, 1]", f)
    return f


def fitted_nic_fraction(fabric: str, nodes: int, params: Mapping[str, object]) -> float | None:
    r"""The fabric's effective share :math:`f` of its NICs' line rate, fitted across its
    sources (``fabric_fitted_fraction``); None where none is fitted (or on one node).

    Where present it replaces the cited share in :func:`achievable_fraction` (the cap
    :math:`B \to f B` of every candidate) and :func:`ring_nic_fraction` (a multi-node
    Ring/Simple at :math:`f B`). Fitted in scripts/fit_corrections.py on every multi-node run
    of the fabric in a fit (Slingshot: Alps and Polaris together, never per run). Tried and not
    kept (grouped CV: docs/fidelity.md), so the shipped parameters have none. Were it kept, a
    calibration's NIC share (which sets the cited tables) would have to clear it for its fabric,
    since this value takes precedence.

    >>> fitted_nic_fraction("slingshot", 8, {"fabric_fitted_fraction": {"slingshot": 0.7}})
    0.7
    >>> fitted_nic_fraction("efa", 8, {"fabric_fitted_fraction": {"slingshot": 0.7}}) is None
    True
    """
    table = cast("Mapping[str, float]", params.get("fabric_fitted_fraction", {}) or {})
    if int(nodes) < 2 or fabric not in table:
        return None
    f = float(table[fabric])
    if not 0.0 < f <= 1.0:
        raise must_be(f"fabric_fitted_fraction[{fabric!r}]", "in (0, 1]", f)
    return f


def achievable_fraction(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Share :math:`f` of the NICs' line rate that large transfers reach on this fabric.

    Scales the network term of every candidate's hardware cap,
    :math:`B \to f B` in :func:`costmodel.realistic.busbw_bound_bytes_per_s`. The values are
    cited priors (:mod:`costmodel.fabrics`, e.g. 0.95 for InfiniBand: 46-49 GB/s per 400G NIC,
    NVIDIA/nccl-tests#290 and #267), not fitted; 1 on one node and for a fabric without one.

    >>> achievable_fraction("efa", 2, {"fabric_achievable_fraction": {"efa": 0.8}})
    0.8
    >>> achievable_fraction("efa", 1, {"fabric_achievable_fraction": {"efa": 0.8}})
    1.0
    """
    if int(nodes) < 2:
        return 1.0
    fitted = fitted_nic_fraction(fabric, nodes, params)
    if fitted is not None:
        return fitted
    f = _fabric_share("fabric_achievable_fraction", fabric, params, 1.0)
    if f == 0.0:  # a cap of 0 would stop every transfer
        raise must_be(f"fabric_achievable_fraction[{fabric!r}]", "in (0, 1]", f)
    return f


def ring_nic_fraction(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Share :math:`f` of the NICs' line rate a multi-node Ring (Simple) reaches; 0: not used.

    At large sizes a ring across nodes is bound by the NICs: every ring crosses each node
    boundary carrying the busbw volume, so :math:`\mathrm{busbw} \to f B` with B the node's NIC
    aggregate. NCCL's table gives less (its quantised per-channel speeds must also fit the
    conservative per-link NVLink figure: 2 x 8 H100 on 8 x 400G, 8 channels x 45 GB/s = 360
    GB/s where 392 is measured); NVIDIA's maintainers quote 46-49 GB/s per 400G NIC
    (nccl-tests#290, #267). The realistic model raises a multi-node Ring/Simple candidate's
    bandwidth to :math:`f B` where the fabric has a cited fraction (:mod:`costmodel.fabrics`).

    >>> ring_nic_fraction("infiniband", 2, {"ring_nic_fraction": {"infiniband": 0.95}})
    0.95
    >>> ring_nic_fraction("infiniband", 1, {"ring_nic_fraction": {"infiniband": 0.95}})
    0.0
    """
    if int(nodes) < 2:
        return 0.0
    fitted = fitted_nic_fraction(fabric, nodes, params)
    if fitted is not None:
        return fitted
    return _fabric_share("ring_nic_fraction", fabric, params, 0.0)


#: Prior for :func:`a2a_net_efficiency` where no multi-node all-to-all run is fitted: on 8 nodes
#: x 8 V100 over 100 Gb/s InfiniBand, all-to-all reached 0.51 GB/s busbw where all-reduce on the
#: same nodes reached 4.33 (NVIDIA/nccl-tests#78, 2021-12, user measurement). With the NIC
#: bound of each (ring all-reduce busbw = B per node; all-to-all busbw = (n-1)/(n-g) B/g for n
#: ranks of g per node: 63/56 x B/8) that is 0.51 / (4.33 x 63/448) = 0.84 of what all-reduce
#: reaches on the same network. A maintainer adds that all-to-all "cannot aggregate the
#: bandwidth of multiple NICs" (nccl-tests#267). Low confidence: one report.
A2A_NET_EFFICIENCY_PRIOR = 0.84


def a2a_net_efficiency(nodes: int, params: Mapping[str, object]) -> float:
    r"""Share :math:`e` of its NIC bandwidth a multi-node all-to-all reaches (1 on one node).

    NCCL runs all-to-all as grouped point-to-point sends: every rank keeps one flow to each of
    the ``n - g`` ranks on other nodes, so each NIC carries many concurrent flows into many
    receivers at once (incast) and, through the net plugin, as many proxy-posted messages per
    chunk. It does not reach the rate one ring flow per NIC reaches; the inter-node term of
    :func:`costmodel.realistic._p2p_time_s` runs at :math:`e` times the per-GPU NIC share.
    ``a2a_net_efficiency`` is fitted on the multi-node all-to-all runs
    (scripts/fit_corrections.py), the cited :data:`A2A_NET_EFFICIENCY_PRIOR` where a fit has
    none; 1 = no correction.

    >>> a2a_net_efficiency(8, {"a2a_net_efficiency": 0.4}), a2a_net_efficiency(1, {"a2a_net_efficiency": 0.4})
    (0.4, 1.0)
    """
    if int(nodes) < 2:
        return 1.0
    e = float(cast("float", params.get("a2a_net_efficiency", 1.0)))
    if not 0.0 < e <= 1.0:
        raise must_be("a2a_net_efficiency", "in (0, 1]", e)
    return e


def a2a_peer_latency_us(
    nodes: int, remote_peers: ArrayLike, params: Mapping[str, object]
) -> np.ndarray:
    r"""Extra latency of a multi-node all-to-all [us]: :math:`\lambda_p (n - g)` for
    :math:`n - g` remote peers per rank (0 on one node).

    NCCL runs all-to-all as one send and one receive per peer; across nodes each is a
    proxy-posted network message, so the fixed cost grows with the number of remote peers
    (many flows per NIC, incast at each receiver) where NCCL's table charges one ring step.
    ``a2a_peer_latency_us`` (:math:`\lambda_p`) is fitted on the multi-node all-to-all runs'
    small sizes (scripts/fit_corrections.py); 0 = no correction.

    >>> float(a2a_peer_latency_us(8, 28, {"a2a_peer_latency_us": 10.0}))
    280.0
    >>> float(a2a_peer_latency_us(1, 0, {"a2a_peer_latency_us": 10.0}))
    0.0
    """
    lam = float(cast("float", params.get("a2a_peer_latency_us", 0.0)))
    if not (math.isfinite(lam) and lam >= 0.0):
        raise must_be("a2a_peer_latency_us", "a finite number >= 0 us", lam)
    if int(nodes) < 2:
        return np.zeros_like(np.asarray(remote_peers, dtype=float))
    return lam * np.asarray(remote_peers, dtype=float)


def net_ll128_enabled(fabric: str, nodes: int, params: Mapping[str, object]) -> bool:
    r"""Whether NCCL may run its LL128 protocol across nodes of this fabric.

    NCCL enables LL128 by default only where the GPU reaches its NIC through PCIe switches
    (src/graph/tuning.cc, ncclTopoTuneModel: ``typeInter <= PATH_PXB``, or PXN on sm90),
    since other paths were not validated for its 128-byte stores. A node whose NICs hang off
    the CPU's root ports (PATH_PHB: the path that needs ``NCCL_NET_GDR_LEVEL=PHB`` for GPUDirect
    RDMA, as set at both bundled Slingshot sites) then runs LL or Simple across nodes.
    ``fabric_net_ll128_off[fabric] = 1`` marks such a fabric (a per-fabric stand-in for the
    node's GPU-NIC path, which presets do not state). Tried and not kept (grouped CV:
    docs/fidelity.md), so the shipped parameters have none: always True then.

    >>> net_ll128_enabled("slingshot", 8, {"fabric_net_ll128_off": {"slingshot": 1.0}})
    False
    >>> net_ll128_enabled("slingshot", 1, {"fabric_net_ll128_off": {"slingshot": 1.0}})
    True
    """
    table = cast("Mapping[str, float]", params.get("fabric_net_ll128_off", {}) or {})
    off = float(table.get(fabric, 0.0))
    if off not in (0.0, 1.0):
        raise must_be(f"fabric_net_ll128_off[{fabric!r}]", "0 or 1", off)
    return int(nodes) < 2 or off == 0.0


def nvlink_step_latency_scale(
    intra_kind: str, algorithm: str, protocol: str, params: Mapping[str, object]
) -> float:
    r"""Multiplier :math:`s` on NCCL's per-step NVLink hop latency of Ring and Tree (1 elsewhere).

    NCCL charges a Ring collective :math:`\ell_\mathrm{base} + n_\mathrm{steps}\,\ell_\mathrm{hw}`
    (tuning.cc, ncclTopoTuneModel: ``latencies += nsteps * intraLat``; Tree ``2 (ppn - 1)
    intraLat``) with one ``hwLatencies[NVLINK]`` row for every GPU generation (0.6 / 1.9 /
    3.4 us per Ring step for LL / LL128 / Simple). On 8 x B200 (bundled 24a-c, one process per
    GPU, so the host floor sits below the device time) the small sizes take 16.2 us for
    all-gather and reduce-scatter (7 steps) and 24.7 us for all-reduce (14 steps) where NCCL's
    table gives 10.8 and 15.0: the excess grows with the step count (5.4 and 9.7 us, 0.7 us per
    step), i.e. about 1.3 us per LL step, not a fixed cost; NCCL's own issue tracker reports a
    higher small-message latency on 8 x B200 than on 8 x H200/H800 with the same tuning
    (NVIDIA/nccl#1940: 3.0 vs 2.3 us for an 8-byte all-reduce). ``nvlink_step_latency_scale``
    (:math:`s`) scales ``intraLat`` of Ring and Tree on an NVLink path (not NVLS, CollNet or
    the point-to-point all-to-all, whose single hop the table already matches on 24d); fitted
    on one-node NVLink runs (scripts/fit_corrections.py). Tried, not kept (it moves a coverage
    bound; docs/fidelity.md, "Tried, not kept"): 1 = NCCL's table.

    >>> nvlink_step_latency_scale("nvswitch", "ring", "ll", {"nvlink_step_latency_scale": 2.0})
    2.0
    >>> nvlink_step_latency_scale("pcie", "ring", "ll", {"nvlink_step_latency_scale": 2.0})
    1.0
    >>> nvlink_step_latency_scale("nvswitch", "nvls", "simple", {"nvlink_step_latency_scale": 2.0})
    1.0
    """
    s = float(cast("float", params.get("nvlink_step_latency_scale", 1.0)))
    if not (math.isfinite(s) and s > 0.0):
        raise must_be("nvlink_step_latency_scale", "a finite number > 0", s)
    if intra_kind != "nvswitch" or algorithm not in ("ring", "tree") or protocol == "simple":
        return 1.0
    return s


def blackwell_nvlink_step_latency_scale(
    compute_capability: float,
    intra_kind: str,
    algorithm: str,
    protocol: str,
    params: Mapping[str, object],
) -> float:
    r"""Multiplier :math:`s_\mathrm{B}` on NCCL's per-step NVLink hop latency, Blackwell only.

    The narrower form of :func:`nvlink_step_latency_scale`: the same Ring/Tree LL and LL128 hop
    on one NVSwitch node, but only on a Blackwell GPU (compute capability >= 10, CUDA C
    Programming Guide), where the bundled 8 x B200 run measures about 1.3 us per LL step
    against NCCL's 0.6 (one ``hwLatencies[NVLINK]`` row for every generation, tuning.cc) and
    NCCL's tracker a slower small-message latency than on Hopper (NVIDIA/nccl#1940: 3.0 vs
    2.3 us); a cited 8 x H100 all-reduce (19.19 us at 128 B) leaves no room for the scale on
    Hopper. ``blackwell_nvlink_step_latency_scale`` (:math:`s_\mathrm{B}`), fitted on the
    Blackwell one-node NVLink runs (scripts/fit_corrections.py); tried, not kept
    (docs/fidelity.md, "Tried, not kept"): 1 = NCCL's table.

    >>> p = {"blackwell_nvlink_step_latency_scale": 2.0}
    >>> blackwell_nvlink_step_latency_scale(10.0, "nvswitch", "ring", "ll", p)
    2.0
    >>> blackwell_nvlink_step_latency_scale(9.0, "nvswitch", "ring", "ll", p)
    1.0
    >>> blackwell_nvlink_step_latency_scale(10.0, "nvswitch", "ring", "simple", p)
    1.0
    """
    s = float(cast("float", params.get("blackwell_nvlink_step_latency_scale", 1.0)))
    if not (math.isfinite(s) and s > 0.0):
        raise must_be("blackwell_nvlink_step_latency_scale", "a finite number > 0", s)
    if compute_capability < 10.0:
        return 1.0
    return nvlink_step_latency_scale(
        intra_kind, algorithm, protocol, {"nvlink_step_latency_scale": s}
    )


def fabric_node_rate_gbs(fabric: str, nodes: int, params: Mapping[str, object]) -> float:
    r"""Per-node rate of a host-copy transport [GB/s]; ``inf`` where none applies.

    NCCL's TCP socket transport (the fallback when neither its verbs transport nor a net plugin
    loads) copies every byte through host memory and TCP sockets driven by a few threads, so a
    node moves at most a rate set by the host, not by its NICs: :math:`\mathrm{busbw} \le R`
    (a ring's busbw is the node's rate per direction),
    :math:`t \ge M f_\mathrm{bus}(n) / R` with nccl-tests' busbw factor. Fitted per fabric on its
    multi-node runs (median busbw from 64 MiB), the cited prior of
    ``costmodel/data/fabric_priors.toml`` elsewhere; 1 node or no value: no cap.

    >>> fabric_node_rate_gbs("socket", 8, {"fabric_node_rate_gbs": {"socket": 3.4}})
    3.4
    >>> fabric_node_rate_gbs("socket", 1, {"fabric_node_rate_gbs": {"socket": 3.4}})
    inf
    """
    if int(nodes) < 2:
        return math.inf
    table = cast("Mapping[str, float]", params.get("fabric_node_rate_gbs", {}) or {})
    r = float(table.get(fabric, math.inf))
    if not r > 0.0:
        raise must_be(f"fabric_node_rate_gbs[{fabric!r}]", "> 0 GB/s", r)
    return r


DEFAULT_PARAMS: dict[str, object] = {
    "host_base_us": 0.0,
    "host_per_gpu_us": 0.0,
    "fabric_latency_us": {},
    "host_staged_duplex": 1.0,
    "nvl_domain_link_scale": 1.0,
    "ramp_phi": 0.0,
    "ramp_knee_bytes": 1.0,
    "fabric_tree_efficiency": {},
    "fabric_ramp_phi": {},
    "net_ramp_phi": 0.0,
    "net_ramp_knee_bytes": 1.0,
    "fabric_net_ramp_scale": {},
    "fabric_achievable_fraction": {},
    "host_per_process_us": 0.0,
    "net_ramp_exponent": 0.5,
    "ring_nic_fraction": {},
    "a2a_net_efficiency": 1.0,
    "fabric_node_rate_gbs": {},
    "fabric_fitted_fraction": {},
    "a2a_peer_latency_us": 0.0,
    "fabric_net_ll128_off": {},
    "nvlink_step_latency_scale": 1.0,
    "blackwell_nvlink_step_latency_scale": 1.0,
}
"""Parameters that make every correction a no-op (NCCL's table alone)."""

# keys a caller's params may leave out (their absence means: no such correction)
_OPTIONAL = (
    "fabric_tree_efficiency",
    "fabric_ramp_phi",
    "net_ramp_phi",
    "net_ramp_knee_bytes",
    "fabric_net_ramp_scale",
    "fabric_achievable_fraction",
    "host_per_process_us",
    "net_ramp_exponent",
    "ring_nic_fraction",
    "a2a_net_efficiency",
    "fabric_node_rate_gbs",
    "fabric_fitted_fraction",
    "a2a_peer_latency_us",
    "fabric_net_ll128_off",
    "nvlink_step_latency_scale",
    "blackwell_nvlink_step_latency_scale",
)


def _finite_number(value: object) -> bool:
    if type(value) is float:  # the common case, answered the same way: NaN fails both
        return 0.0 <= value < math.inf
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(float(value))
        and float(value) >= 0
    )


def check_params(params: object, name: str = "params") -> Mapping[str, object]:
    """The correction parameters ``params`` (a mapping with the keys of :data:`DEFAULT_PARAMS`,
    e.g. ``costmodel.predict.fitted_params()``), else ValueError naming the argument.

    Every correction parameter is a rate, scale, latency or exponent, so each scalar entry must
    be a finite number >= 0 and each per-fabric table a mapping of such numbers (their finer
    ranges are checked where each correction reads them). Unknown keys are refused: a
    misspelled key would otherwise be silently unused.

    >>> check_params(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: params: must be a mapping of correction parameters (...) or None, got 0 (...)
    """
    if not isinstance(params, Mapping):
        err = must_be(
            name,
            "a mapping of correction parameters (the keys of costmodel.corrections."
            "DEFAULT_PARAMS, e.g. costmodel.predict.fitted_params()) or None",
            params,
        )
        if isinstance(params, int | float) and not isinstance(params, bool):
            err = ValueError(
                f"{err} (a collective takes no parameter count: its size is message_bytes)"
            )
        raise err
    unknown = sorted(str(k) for k in params if k not in DEFAULT_PARAMS)
    if unknown:
        raise ValueError(f"{name}: unknown keys {unknown}; allowed: {list(DEFAULT_PARAMS)}")
    missing = [k for k in DEFAULT_PARAMS if k not in params and k not in _OPTIONAL]
    if missing:
        raise ValueError(f"{name}: missing keys {missing}; expected keys {list(DEFAULT_PARAMS)}")
    for k, v in params.items():
        if isinstance(DEFAULT_PARAMS[k], dict):
            ok = isinstance(v, Mapping) and all(_finite_number(x) for x in v.values())
            if not ok:
                raise must_be(f"{name}[{k!r}]", "a mapping of fabric -> finite number >= 0", v)
        elif not _finite_number(v):
            raise must_be(f"{name}[{k!r}]", "a finite number >= 0", v)
    return params


def _check(params: Mapping[str, object]) -> None:
    check_params(params)
