"""Header facts of a run: rank count, nodes, GPUs per node and device from the preamble, markers,
the busbw/algbw ratio or the launch command; the op from the redop/root columns as a last resort.
"""

from __future__ import annotations

import math
from typing import Any

from ._common import _BUSBW_NUMERATOR
from ._launch import Launch
from ._lexer import _INT_RE, _Layout, _Run


def _ranks_span(op: str, pairs: list[tuple[float, float]]) -> tuple[int, int] | None:
    """The rank counts n whose busbw/algbw = a (n-1)/n fits every row (algbw >= 1 GB/s), as
    (lowest, highest): the rounding intervals of the printed values intersected. None when no
    row says anything (an op of factor 1, rows printing 0.00) or no count fits every row."""
    numerator = _BUSBW_NUMERATOR.get(op)
    if not numerator:
        return None
    lo_n, hi_n, used = 1.0, math.inf, 0
    for algbw, busbw in pairs:  # GB/s as printed
        if not algbw >= 1.0:
            continue
        half = 0.005  # values printed with 2 decimals (%.2f) at these magnitudes
        f_lo = (busbw - half) / (algbw + half) / numerator
        f_hi = (busbw + half) / (algbw - half) / numerator
        if f_hi >= 1.0:
            f_hi = 1.0 - 1e-12
        f_lo = max(f_lo, 0.0)
        lo_n, hi_n = max(lo_n, 1.0 / (1.0 - f_lo)), min(hi_n, 1.0 / (1.0 - f_hi))
        used += 1
    if not used or not math.isfinite(hi_n):
        return None
    lo, hi = math.ceil(lo_n - 1e-9), math.floor(hi_n + 1e-9)
    return (lo, hi) if lo <= hi else None


def _ranks_from_busbw(op: str, pairs: list[tuple[float, float]]) -> int | None:
    """Infer n from busbw/algbw = a (n-1)/n, intersecting the rounding intervals of all rows:
    the one count that fits every row (:func:`_ranks_span`), else None."""
    span = _ranks_span(op, pairs)
    return span[0] if span is not None and span[0] == span[1] else None


def _run_facts(
    run: _Run, op: str, pairs: list[tuple[float, float]], launch: Launch | None
) -> dict[str, Any]:
    ranks: int | None = None
    source = "unknown"
    nodes: int | None = None
    gpus_per_node: int | None = None
    listed = sorted({r for r, _, _ in run.rank_lines})
    if listed:
        complete_list = listed == list(range(len(listed))) and not run.elided and not run.omitted
        if run.omitted:
            ranks, source = max(len(listed) + run.omitted, listed[-1] + 1), "devices+omitted"
        elif complete_list:
            ranks, source = len(listed), "devices"
        elif listed[-1] + 1 > len(listed):
            ranks, source = listed[-1] + 1, "devices (highest rank)"
        hosts: dict[str, int] = {}
        for _, host, _ in run.rank_lines:
            hosts[host] = hosts.get(host, 0) + 1
        if complete_list:
            nodes = len(hosts)
            counts = set(hosts.values())
            gpus_per_node = counts.pop() if len(counts) == 1 else None
        elif len(hosts) >= 2:
            first = next(iter(hosts.values()))
            if ranks and ranks % first == 0:
                gpus_per_node, nodes = first, ranks // first
    if source == "devices":
        # a device list that looks complete but is not (a curated log kept rank 0's line
        # only, or a 32-node log its first two hosts' lines): busbw/algbw = a (n-1)/n of every
        # row rules out its count. The rows' own ratio wins: the one count it fits, else the
        # one of its counts that fills whole nodes of the list's GPUs per node (where the list
        # shows two hosts or more of one count each: 128 of 127-129 at 4 per node), else
        # unknown; nodes = ranks / that GPUs per node, else unknown, never the list's hosts
        # (a lower bound, not a count).
        span = _ranks_span(op, pairs)
        if span is not None and not span[0] <= (ranks or 0) <= span[1]:
            per_node = gpus_per_node if nodes is not None and nodes >= 2 else None
            fits = [n for n in range(span[0], span[1] + 1) if per_node and n % per_node == 0]
            ranks = span[0] if span[0] == span[1] else fits[0] if len(fits) == 1 else None
            source = "busbw/algbw (the device list is incomplete)"
            if ranks is not None and per_node and ranks % per_node == 0:
                nodes, gpus_per_node = ranks // per_node, per_node
            else:
                nodes = gpus_per_node = None
    if ranks is None:
        for key in ("GPUS", "RANKS", "NP"):
            if key in run.markers and _INT_RE.match(run.markers[key]):
                ranks, source = int(run.markers[key]), f"marker {key}"
                break
    if ranks is None:
        inferred = _ranks_from_busbw(op, pairs)
        if inferred is not None:
            ranks, source = inferred, "busbw/algbw"
    if ranks is None and launch is not None and launch.ranks is not None:
        # processes x the GPUs each drives (-g on the line, else the run's nGpus) x threads
        per_process = launch.gpus_per_process or run.ngpus or 1
        ranks, source = launch.ranks * per_process * (run.nthread or 1), "launch line"
    if ranks is None and run.nthread and run.ngpus and not run.rank_lines:
        ranks, source = run.nthread * run.ngpus, "nThread*nGpus"
    if (
        ranks is not None
        and nodes is None
        and listed
        and len({h for _, h, _ in run.rank_lines}) == 1
        and ranks == len(listed)
        and not run.elided
    ):
        nodes, gpus_per_node = 1, ranks
    devices = sorted({d for _, _, d in run.rank_lines if d})
    return {
        "ranks": ranks,
        "ranks_source": source,
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        # nccl-tests' -g: GPUs one thread drives (its launches are serialised on that thread)
        "gpus_per_process": run.ngpus,
        "device": "; ".join(devices) if devices else None,
    }


def _op_from_rows(rows: list[list[str]], layout: _Layout) -> str | None:
    """Last resort: redop/root tell reduce and broadcast apart from the rest."""
    if "root" not in layout.preamble or not rows:
        return None
    redop, root = rows[0][3], rows[0][4]
    if root != "-1":
        return "broadcast" if redop == "none" else "reduce"
    return None
