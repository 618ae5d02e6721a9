"""Cached calls for the Collectives page: every algorithm on a cluster, typed sizes, a pinned B.

Like :mod:`costmodel.web.data`, every number comes from a costmodel function
(:func:`costmodel.predict.predict_all_algorithms`, :func:`costmodel.predict.predict_collective`,
:func:`costmodel.collectives.collective_time`); this module only gathers them for the page.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd
import streamlit as st

from costmodel import collectives
from costmodel._limits import is_bound
from costmodel.units import parse_bytes

from .common import SIZES_BYTES

#: Sizes a typed message size may take [B]: 1 B to 16 TiB (predict_collective's range).
MIN_TYPED_BYTES, MAX_TYPED_BYTES = 1, 2**44
#: What the size text box accepts, said in the red message when it refuses a text.
SIZE_GRAMMAR = (
    "a number of bytes with an optional unit: 14GB, 1.5GiB, 512MiB, 8B or 268435456 "
    "(kB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB powers of 1024; bytes, not bits), "
    "from 1 B to 16 TiB"
)


def typed_size(text: str) -> int:
    """The message size typed in the page's text box [B] (:func:`costmodel.units.parse_bytes`).

    Raises ValueError naming the field and :data:`SIZE_GRAMMAR` for a text it cannot read or a
    size outside 1 B .. 16 TiB.

    >>> typed_size("14GB"), typed_size(" 1KiB ")
    (14000000000, 1024)
    """
    field = "Message size"
    out_of_range = ValueError(f"{field}: {text!r} is out of range. Allowed: {SIZE_GRAMMAR}")
    try:
        size = parse_bytes(text.strip(), name=field)
    except ValueError as exc:
        # the parser's own bounds (>= 0 bytes, 1e18 B) are the box's range to say: "1e30B ...
        # above the largest size accepted, 1e+18 B. Allowed: ... to 16 TiB" named two limits
        if is_bound(exc):
            raise out_of_range from None
        # a message that says what is allowed already ("not a whole number of bytes; allowed:
        # whole bytes ...") keeps its one list, not a second "Allowed:" after it
        said = "allowed:" in str(exc).lower()
        raise ValueError(str(exc) if said else f"{exc}. Allowed: {SIZE_GRAMMAR}") from None
    if not MIN_TYPED_BYTES <= size <= MAX_TYPED_BYTES:
        raise out_of_range
    return size


def size_grid(size: float) -> np.ndarray:
    """The size list's powers of two plus the size asked about, sorted [B]."""
    return np.unique(np.append(np.asarray(SIZES_BYTES, dtype=float), float(size)))


@st.cache_data(show_spinner=False, max_entries=128)
def algorithms_on_cluster(
    op: str,
    cluster: str,
    nodes: int,
    gpus_per_node: int | None,
    model: str,
    size: float,
    algorithm: str = "auto",
):
    """:func:`costmodel.predict.predict_all_algorithms` over :func:`size_grid` (cached).

    Every algorithm pinned, each row as before; with ``algorithm`` a name or a set (the
    NCCL_ALGO box), the model's choice (``chosen``, ``choice``) is
    :func:`~costmodel.predict.predict_collective`'s under it, the headline's."""
    from dataclasses import replace

    from costmodel.predict import predict_all_algorithms, predict_collective

    r = predict_all_algorithms(
        op, size_grid(size), cluster, nodes=nodes, gpus_per_node=gpus_per_node, model=model
    )
    if algorithm == "auto":
        return r
    choice = predict_collective(
        op, size_grid(size), cluster, nodes, gpus_per_node, algorithm, model=model
    )
    frame = r.frame.copy()
    if len(frame):
        by_size = dict(
            zip(
                np.asarray(choice.message_bytes, float).ravel(),
                np.atleast_1d(np.asarray(choice.algorithm)).astype(str),
                strict=True,
            )
        )
        frame["chosen"] = [
            by_size.get(float(m)) == a
            for m, a in zip(frame["message_bytes"], frame["algorithm"], strict=True)
        ]
    return replace(r, frame=frame, choice=choice)


@st.cache_data(show_spinner=False, max_entries=128)
def models_at_size(
    op: str,
    cluster: str,
    nodes: int,
    gpus_per_node: int | None,
    models: tuple[str, ...],
    size,
    algorithms: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """:func:`costmodel.predict.predict_collective` of each model at one size (any size),
    each with its entry of ``algorithms`` (default: each model's own choice, ``auto``)."""
    from costmodel.predict import predict_collective

    rows = []
    for model, algorithm in zip(models, algorithms or ("auto",) * len(models), strict=True):
        p = predict_collective(
            op,
            float(size),
            cluster,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            algorithm=algorithm,
            model=model,
        )
        rows.append(
            {
                "model": model,
                "ranks": p.ranks,
                "algorithm": p.algorithm,
                "protocol": p.protocol,
                "time_s": p.time_s,
                "algbw_bytes_per_s": p.algbw_bytes_per_s,
                "busbw_bytes_per_s": p.busbw_bytes_per_s,
                # nccl-table capped at the NICs, its broadcast/reduce latency: said on the page
                "note": p.model_note,
            }
        )
    return pd.DataFrame(rows).set_index("model")


@st.cache_data(show_spinner=False, max_entries=256)
def textbook_at_size(
    op: str,
    ranks: int,
    bandwidth_bytes_per_s: float,
    latency_s: float,
    algorithms: tuple[str, ...],
    size: float,
) -> pd.DataFrame:
    """The one-link view's rows at one size (any size; the sweep holds only powers of two)."""
    rows = []
    # the formula functions check the names themselves (ValueError naming the valid ones)
    op_ = cast("collectives.Op", op)
    for a in algorithms:
        alg = cast("collectives.Algorithm", a)
        t = float(
            collectives.collective_time(op_, size, ranks, bandwidth_bytes_per_s, latency_s, alg)
        )
        rows.append(
            {
                "algorithm": a,
                "message_bytes": float(size),
                "time_s": t,
                "algbw_bytes_per_s": float(collectives.algorithm_bandwidth(size, t)),
                "busbw_bytes_per_s": float(collectives.bus_bandwidth(op_, size, ranks, t)),
                "bytes_per_rank": float(collectives.bytes_per_rank(op_, size, ranks, alg)),
            }
        )
    return pd.DataFrame(rows)


def difference_table(a, b) -> pd.DataFrame:
    """Side by side: the model's choice of configuration A and of B per size, with ratios.

    ``a`` and ``b`` are :class:`costmodel.predict.AlgorithmComparison` on the same size grid.
    Columns: size, each side's chosen algorithm/protocol, time and busbw, and the ratios
    ``time B / A`` (> 1: B is slower) and ``busbw B / A``.
    """

    def chosen(r) -> pd.DataFrame:
        f = r.frame[r.frame["chosen"]]
        return f.set_index("message_bytes")[
            ["algorithm", "protocol", "time_s", "busbw_bytes_per_s"]
        ]

    left, right = chosen(a), chosen(b)
    both = left.merge(right, how="inner", left_index=True, right_index=True, suffixes=("_a", "_b"))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ratio = both["time_s_b"] / both["time_s_a"]
        bw_ratio = both["busbw_bytes_per_s_b"] / both["busbw_bytes_per_s_a"]
    return pd.DataFrame(
        {
            "message size [B]": both.index.to_numpy(),
            "A algorithm": both["algorithm_a"].to_numpy(),
            "A protocol": both["protocol_a"].to_numpy(),
            "A time [µs]": both["time_s_a"].to_numpy() * 1e6,
            "A busbw [GB/s]": both["busbw_bytes_per_s_a"].to_numpy() / 1e9,
            "B algorithm": both["algorithm_b"].to_numpy(),
            "B protocol": both["protocol_b"].to_numpy(),
            "B time [µs]": both["time_s_b"].to_numpy() * 1e6,
            "B busbw [GB/s]": both["busbw_bytes_per_s_b"].to_numpy() / 1e9,
            "time B / A": t_ratio.to_numpy(),
            "busbw B / A": bw_ratio.to_numpy(),
        }
    )
