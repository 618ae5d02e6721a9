r"""Does a measured run look like NCCL's fallback to TCP sockets?

A network plugin that does not load (a wrong ``NCCL_NET``/``NCCL_NET_PLUGIN``, a missing
aws-ofi-nccl or libibverbs on the library path) makes NCCL fall back to its built-in socket
transport: the run completes and passes its checks, only an order of magnitude slower across
nodes. Two signs, either is enough:

1. NCCL's own debug lines (``NCCL_DEBUG=INFO``) name the socket transport: ``NET/Socket :
   Using ...`` or ``Using network Socket`` (NCCL src/transport/net_socket.cc and init.cc print
   these when the socket transport is the network in use). On one node that network carries
   nothing (NCCL connects the node's GPUs over P2P or shared memory, and a one-node box without
   InfiniBand prints both lines): there only a connection made through it, ``... via
   NET/Socket/0``, counts;
2. the busbw profile: a run across nodes whose largest sizes (from :data:`LARGE_BYTES`) never
   reach :data:`SOCKET_SHARE` of the busbw the cluster's NICs allow
   (:func:`costmodel.realistic.busbw_bound_bytes_per_s` at line rate). A working RDMA path
   reaches most of it (InfiniBand about 95 %, Slingshot through aws-ofi-nccl about 72 % on
   ALCF Polaris, run 25b); the socket fallback on the same 8 Polaris nodes peaks at
   3.4 GB/s, 7 % of the 2 x 200 Gb/s NICs (run 25e). Fabrics that are TCP-based by design
   (:data:`TCP_FABRICS`) are not judged by the profile.

:func:`socket_fallback` returns one line saying so, or None; ``costmodel validate compare``
and the Validate page print it.

>>> import pandas as pd
>>> rows = pd.DataFrame({"op": "all_reduce", "size_bytes": [2.0**30], "nodes": 8, "ranks": 32,
...                      "busbw_bytes_per_s": [3.3e9]})
>>> print(socket_fallback(rows, "dgx-a100"))  # 8 x 200G HDR per node: 200 GB/s
looks like NCCL's TCP-socket fallback: peak busbw 3.3 GB/s from 64 MiB on 8 nodes is 2% of the 200 GB/s the NICs allow; check that the network plugin loads (NCCL_NET, NCCL_NET_PLUGIN, NCCL_DEBUG=INFO shows 'NET/Socket')
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from costmodel.validation.nccl_tests import decode_lenient

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.hardware import Cluster

__all__ = ["LARGE_BYTES", "SOCKET_SHARE", "TCP_FABRICS", "socket_fallback"]

#: sizes from which a working network path is bandwidth-bound (64 MiB)
LARGE_BYTES = 2.0**26
#: below this share of the NICs' busbw bound at the largest sizes a run looks like the socket
#: fallback: run 25e reaches 7 %; every working multi-node run bundled stays far above it
#: (tests/test_socket_fallback.py checks them all)
SOCKET_SHARE = 0.15
#: fabrics whose normal data path is TCP (GPUDirect-TCPX/TCPXO, plain Ethernet): no fallback
#: to detect from the profile
TCP_FABRICS = ("ethernet", "tcpx", "tcpxo", "socket")

# NCCL_DEBUG=INFO lines of the socket transport in use (NCCL net_socket.cc, init.cc)
_SOCKET_DEBUG = re.compile(r"NCCL INFO.*(NET/Socket\b|Using network Socket)")
# a connection the socket transport carries (NCCL transport.cc: "Channel 00/0 : 0[0] -> 1[1]
# [send] via NET/Socket/0"), the one sign that counts on one node
_SOCKET_CONNECTION = re.compile(r"NCCL INFO.*\bvia NET/Socket\b")


def _one_node(measured: pd.DataFrame | None) -> bool:
    """True when every row ran on one node (a known node count of 1): NCCL's network is then
    not on the data path unless a connection says it is."""
    if measured is None or measured.empty or "nodes" not in measured:
        return False
    nodes = measured["nodes"]
    return bool(nodes.notna().all() and (nodes.astype(float) == 1).all())


def _text(text: bytes | str | None) -> str:
    if text is None:
        return ""
    # UTF-16 by its byte-order mark as the log reader decodes it; a bad byte replaced
    return decode_lenient(text) if isinstance(text, bytes) else text


def socket_fallback(
    measured: pd.DataFrame, cluster: str | Cluster | None = None, *, text: bytes | str | None = None
) -> str | None:
    """One line when the run looks like NCCL's TCP-socket fallback, else None.

    Parameters
    ----------
    measured : DataFrame
        Parsed rows (:func:`costmodel.validation.nccl_tests.read_nccl_tests` or the runner's):
        op, size_bytes, busbw_bytes_per_s, and nodes (rows without a node count are taken as
        one node: the profile test then does not apply). A row whose ``time_s`` is not > 0
        (0, N/A) measured nothing and is not judged by the profile test.
    cluster : str or Cluster, optional
        The preset the run is compared with; its NICs give the bound of the profile test.
        Without it only the debug lines are read.
    text : bytes or str, optional
        The raw log, for NCCL's debug lines. On a run whose every row is on one node
        (``nodes`` 1) they count only where a connection went through the socket transport
        (``via NET/Socket``): the lines naming the network in use are printed there too.
    """
    debug = _text(text)
    if _SOCKET_DEBUG.search(debug) and (
        not _one_node(measured) or _SOCKET_CONNECTION.search(debug)
    ):
        return (
            "looks like NCCL's TCP-socket fallback: the log's NCCL debug lines name the socket "
            "transport (NET/Socket); check that the network plugin loads (NCCL_NET, "
            "NCCL_NET_PLUGIN)"
        )
    if cluster is None or measured is None or measured.empty:
        return None
    return _profile(measured, cluster)


def _profile(measured: pd.DataFrame, cluster: Any) -> str | None:
    import numpy as np
    import pandas as pd

    from costmodel import units
    from costmodel.presets import cluster as load_cluster
    from costmodel.realistic import busbw_bound_bytes_per_s

    need = {"op", "size_bytes", "busbw_bytes_per_s", "nodes"}
    if not need <= set(measured.columns):
        return None
    rows = measured[measured["size_bytes"] >= LARGE_BYTES]
    rows = rows[rows["nodes"].notna() & (rows["nodes"].astype(float) > 1)]
    rows = rows[np.isfinite(rows["busbw_bytes_per_s"].astype(float))]
    # a row without a time > 0 (0, N/A, a damaged log) measured nothing: its busbw of 0 is no
    # slow network; a log of such rows alone is not judged (compare leaves them out too). A
    # row without a time column is judged by a busbw > 0 alone.
    if "time_s" in rows:
        time_s = pd.to_numeric(rows["time_s"], errors="coerce").astype(float)
        rows = rows[np.isfinite(time_s) & (time_s > 0)]
    else:
        rows = rows[rows["busbw_bytes_per_s"].astype(float) > 0]
    if rows.empty:
        return None
    base = load_cluster(cluster)
    if base.fabric in TCP_FABRICS or base.nic is None:
        return None
    worst = None
    for key, group in rows.groupby(["op", "nodes"], sort=True):
        op, nodes = cast("tuple[str, int]", key)
        k = int(nodes)
        c = load_cluster(base, nodes=k)
        known = group["ranks"].dropna() if "ranks" in group else group["op"].iloc[0:0]
        g = int(known.iloc[0]) // k if len(known) else c.gpus_per_node
        g = max(1, min(g, c.gpus_per_node))
        bound = float(
            busbw_bound_bytes_per_s(
                str(op),
                "ring",
                k,
                g,
                c.intra_bandwidth_bytes_per_s,
                c.node_inter_bandwidth_bytes_per_s,
            )
        )
        peak = float(group["busbw_bytes_per_s"].astype(float).max())
        if bound > 0 and peak < SOCKET_SHARE * bound:
            share = peak / bound
            if worst is None or share < worst[0]:
                worst = (share, peak, bound, k)
    if worst is None:
        return None
    share, peak, bound, k = worst
    return (
        f"looks like NCCL's TCP-socket fallback: peak busbw {units.format_rate(peak)} from "
        f"{LARGE_BYTES / 2**20:.0f} MiB on {k} nodes is {share:.0%} of the "
        f"{units.format_rate(bound)} the NICs allow; check that the network plugin loads "
        "(NCCL_NET, NCCL_NET_PLUGIN, NCCL_DEBUG=INFO shows 'NET/Socket')"
    )
