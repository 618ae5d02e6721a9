r"""NCCL's own tuning model (NCCL 2.30.7, ``src/graph/tuning.cc``), as pure vectorized functions.

NCCL picks, for every collective call, the (algorithm, protocol) pair whose modelled time

.. math:: t = \mathrm{lat}(a, p) + \frac{M}{\mathrm{algbw}(a, p)}

is smallest. ``lat`` is a base latency plus per-hop latencies by link class (NVLink, PCI,
network); ``algbw`` is the number of channels times the per-channel bandwidth the topology search
found, times protocol factors, capped per channel and converted from bus to algorithm bandwidth.
Every constant lives in :mod:`costmodel.tables` with its NCCL source line; the derivation of each
branch is in ``docs/nccl-model.md`` section 1 (the "nccl_model.md 1.3" to "1.6" citations below are
its section numbers).

The topology inputs NCCL's search would find (channels, per-channel intra/inter bandwidth per
algorithm) come from :func:`topology_inputs`, a small emulation of ``search.cc`` over plain
hardware numbers (NVLink count, NIC count and speed, PCIe generation), so no preset types them.

This module imports only numpy, the standard library and :mod:`costmodel.tables`. Bandwidths
inside are NCCL's GB/s (1e9 B/s) and latencies its microseconds; the public results are SI.

>>> topo = topology_inputs(compute_capability=9.0, nodes=1, gpus_per_node=8,
...                        intra_kind="nvswitch", nvlinks_per_gpu=18, nvls=True)
>>> topo.ring.n_channels, topo.ring.bw_intra_gbs, topo.nvls.n_channels, topo.nvls.bw_intra_gbs
(12, 30.0, 8, 40.0)
>>> t, algo, proto = nccl_table_time("all_reduce", 8 * 2**30, topo)
>>> str(algo), str(proto), round(8 * 2**30 / t * 2 * 7 / 8 / 1e9)   # busbw of NVLS, GB/s
('nvls', 'simple', 476)

The package follows the model's steps: :mod:`.names`, :mod:`.search` (topology
inputs), :mod:`.bandwidth` (bandwidth and latency), :mod:`.availability` and
:mod:`.selection` (time and choice). Every public name is importable from here.
"""

from __future__ import annotations

from .availability import candidates, unavailable_reason
from .bandwidth import (
    algorithm_bandwidth_gbs,
    bus_bandwidth_gbs,
    latency_us,
    ring_chain_latency_us,
)
from .names import (
    ALGORITHMS,
    CPU_VENDORS,
    INTRA_KINDS,
    OPS,
    P2P_ALGORITHM,
    PROTOCOLS,
    canonical_choice,
    cc_index,
    check_op,
    is_choice_set,
    normalize_algorithm,
    normalize_protocol,
)
from .search import Graph, TopologyInputs, nvlink_bw_gbs, pci_bw_gbs, topology_inputs
from .selection import (
    nccl_table_time,
    p2p_time_s,
    table_time_s,
    tree_correction_applies,
    tree_correction_factor,
)

__all__ = [
    "ALGORITHMS",
    "CPU_VENDORS",
    "Graph",
    "INTRA_KINDS",
    "OPS",
    "P2P_ALGORITHM",
    "PROTOCOLS",
    "TopologyInputs",
    "algorithm_bandwidth_gbs",
    "bus_bandwidth_gbs",
    "candidates",
    "cc_index",
    "check_op",
    "latency_us",
    "ring_chain_latency_us",
    "nccl_table_time",
    "normalize_algorithm",
    "canonical_choice",
    "is_choice_set",
    "normalize_protocol",
    "nvlink_bw_gbs",
    "p2p_time_s",
    "pci_bw_gbs",
    "table_time_s",
    "topology_inputs",
    "tree_correction_applies",
    "tree_correction_factor",
    "unavailable_reason",
]
