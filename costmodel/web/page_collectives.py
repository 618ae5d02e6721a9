"""Collectives: how long does one collective take, and which algorithm wins at which size?"""

from __future__ import annotations

import streamlit as st

from costmodel import collectives, plots
from costmodel.units import format_bytes, format_duration, format_rate, parse_duration, parse_rate
from costmodel.web import data
from costmodel.web.common import (
    CUSTOM,
    QP,
    SIZES_BYTES,
    chart,
    headline,
    headline_text,
    page_header,
    parse_input,
    section,
    size_label,
    table,
)

OP_LABELS = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_to_all": "all-to-all",
}
DEFAULT_ALGORITHMS = {"all_reduce": ("ring", "tree", "recursive_doubling")}


#: the two views: formulas on one link, or a model on a cluster preset (costmodel.models)
VIEWS = {"link": "Formulas on one link (alpha-beta)", "cluster": "A model on a cluster preset"}
#: deprecated URL values of ``view`` (before issue 10 renamed the views) -> the view they meant
_OLD_VIEWS = {
    "Textbook (alpha-beta, one link)": "link",
    "NCCL-faithful (a cluster preset)": "cluster",
}


def _inputs() -> dict:
    old = st.query_params.get("view")
    if old in _OLD_VIEWS and "view" not in st.session_state:  # an old shared link keeps
        st.session_state["view"] = _OLD_VIEWS[old]  # opening the view it showed
    c1, c2, c3 = st.columns(3)
    op = c1.selectbox("Operation", collectives.OPS, format_func=OP_LABELS.get, key="op", bind=QP)
    view = c2.radio(
        "View",
        tuple(VIEWS),
        format_func=VIEWS.get,
        key="view",
        bind=QP,
        help="one link: the alpha-beta formulas of Thakur et al. 2005, every algorithm side by "
        "side; a cluster preset: one of the models lesson, textbook, nccl, calibrated "
        "(predict_collective, the same number as the API, the CLI and cm.sweep)",
    )
    ranks = c3.number_input(
        "Ranks N [GPUs]",
        value=8,
        step=1,
        key="ranks",
        bind=QP,
        disabled=view != "link",
        help="one-link view; the cluster view takes nodes x GPUs per node",
    )
    size = st.select_slider(
        "Message size M [B] (per-rank buffer, as nccl-tests prints it)",
        SIZES_BYTES,
        value=2**28,
        format_func=size_label,
        key="size",
        bind=QP,
    )
    if view == "cluster":
        c0, c1, c2 = st.columns(3)
        clusters = data.preset_names("cluster")
        cluster = c0.selectbox(
            "Cluster preset",
            clusters,
            index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0,
            key="nccl_cluster",
            bind=QP,
        )
        nodes = c1.number_input("Nodes", value=1, step=1, key="nccl_nodes", bind=QP)
        gpus = c2.number_input(
            "GPUs per node (empty: the preset's)",
            value=None,
            step=1,
            key="nccl_gpus",
            bind=QP,
            placeholder="preset",
        )
        model = st.radio(
            "Model",
            data.answer_models(cluster),
            horizontal=True,
            key="coll_model",
            bind=QP,
            help=data.MODELS_HELP,
        )
        return {
            "view": view,
            "op": op,
            "size": size,
            "cluster": cluster,
            "nodes": nodes,
            "gpus": gpus,
            "model": model,
        }
    c0, c1, c2 = st.columns(3)
    links = [CUSTOM, *data.preset_names("link")]
    link = c0.selectbox(
        "Link",
        links,
        key="link",
        bind=QP,
        help="a link preset (datasheet bandwidth per direction and latency) or custom figures",
    )
    if link == CUSTOM:
        bandwidth_text = c1.text_input(
            "Link bandwidth B, per direction [B/s]",
            value="450GB/s",
            key="bandwidth",
            bind=QP,
            help="e.g. 450GB/s (NVLink4 per direction), 400Gb/s (one NDR NIC), 64GB/s (PCIe 5)",
        )
        latency_text = c2.text_input(
            "Latency per step alpha [s]",
            value="5us",
            key="latency",
            bind=QP,
            help="e.g. 5us, 0.8us, 2ms",
        )
        bandwidth = parse_input("Link bandwidth", parse_rate, bandwidth_text)
        latency = parse_input("Latency", parse_duration, latency_text)
    else:
        fig = data.link_figures(link)
        bandwidth, latency = fig["bandwidth_bytes_per_s"], fig["latency_s"]
        c1.metric("Bandwidth per direction", format_rate(bandwidth))
        c2.metric("Latency per step alpha", format_duration(latency))
        st.caption(f"{fig['description']} Source: {fig['source']}")
    valid = collectives.ALGORITHMS[op]
    algorithms = st.multiselect(
        "Algorithms to compare",
        valid,
        default=DEFAULT_ALGORITHMS.get(op, valid),
        key=f"algorithms_{op}",
        bind=QP,
    )
    return {
        "view": view,
        "op": op,
        "ranks": ranks,
        "size": size,
        "bandwidth": bandwidth,
        "latency": latency,
        "algorithms": tuple(algorithms),
    }


def _link(inp: dict) -> None:
    op, ranks, size = inp["op"], int(inp["ranks"]), inp["size"]
    if inp["bandwidth"] is None or inp["latency"] is None:
        return
    if not inp["algorithms"]:
        st.warning("Pick at least one algorithm to compare.")
        return
    with section("Ranks N"):
        collectives.busbw_factor(op, ranks)  # the library refuses ranks < 1 with a clear message
        if ranks == 1:
            st.info("One rank communicates nothing: every collective takes 0 s.")
            return
        args = (op, ranks, inp["bandwidth"], inp["latency"], inp["algorithms"])
        sweep = data.textbook_sweep(*args)
        crossovers = data.textbook_crossovers(*args)
        at_size = sweep[sweep["message_bytes"] == size]
        best = at_size.loc[at_size["time_s"].idxmin()]

        headline_text(f"{OP_LABELS[op]} of {format_bytes(size)} over {ranks} ranks")
        m = headline(4)
        m[0].metric("Fastest algorithm", best["algorithm"])
        m[1].metric("Time", format_duration(best["time_s"]))
        m[2].metric("Bus bandwidth (busbw)", format_rate(best["busbw_bytes_per_s"]))
        m[3].metric("Bytes sent per rank", format_bytes(best["bytes_per_rank"]))

        marks = crossovers.assign(label=crossovers["pair"])
        tab_time, tab_busbw = st.tabs(["Time vs size", "busbw vs size"])
        with tab_time:
            chart(
                plots.collective_sweep_figure(
                    sweep,
                    y="time_s",
                    marks=marks,
                    selected_bytes=size,
                    title=f"{OP_LABELS[op]} time, N = {ranks}, M = {size_label(size)} dotted"
                    " (crossovers x)",
                ),
                key="chart_time",
            )
        with tab_busbw:
            chart(
                plots.collective_sweep_figure(
                    sweep,
                    y="busbw_bytes_per_s",
                    marks=marks,
                    selected_bytes=size,
                    title=f"{OP_LABELS[op]} bus bandwidth as nccl-tests prints it, N = {ranks},"
                    f" M = {size_label(size)} dotted",
                ),
                key="chart_busbw",
            )

        per_alg = at_size.assign(
            **{
                "time [µs]": at_size["time_s"] * 1e6,
                "algbw [GB/s]": at_size["algbw_bytes_per_s"] / 1e9,
                "busbw [GB/s]": at_size["busbw_bytes_per_s"] / 1e9,
                "bytes sent per rank [B]": at_size["bytes_per_rank"],
                "equation": [collectives.EQUATIONS[(op, a)] for a in at_size["algorithm"]],
            }
        )[
            [
                "algorithm",
                "time [µs]",
                "algbw [GB/s]",
                "busbw [GB/s]",
                "bytes sent per rank [B]",
                "equation",
            ]
        ]
        table(
            per_alg,
            "collective_at_size.csv",
            key="at_size",
            caption=f"Each algorithm at M = {format_bytes(size)}",
        )
        if op == "all_reduce":
            bound = collectives.allreduce_lower_bound_bytes(size, ranks)
            st.caption(f"Lower bound on bytes each rank sends, 2(N-1)/N M = {format_bytes(bound)}.")
        if len(crossovers):
            table(
                crossovers.assign(
                    **{
                        "crossover size [B]": crossovers["message_bytes"],
                        "time there [µs]": crossovers["time_s"] * 1e6,
                    }
                )[
                    [
                        "pair",
                        "crossover size [B]",
                        "time there [µs]",
                        "faster_below",
                        "faster_above",
                    ]
                ],
                "crossovers.csv",
                key="crossovers",
                caption="Crossover sizes",
            )
        else:
            st.caption("No crossover: one algorithm is never slower over every size.")
        table(
            sweep,
            "collective_sweep.csv",
            key="sweep",
            caption="The whole sweep (SI units: bytes, seconds, bytes per second)",
        )


def _cluster(inp: dict) -> None:
    op, size, model = inp["op"], inp["size"], inp["model"]
    with section("Nodes / GPUs per node"):
        gpus = None if inp["gpus"] is None else int(inp["gpus"])
        sweep = data.model_sweep(op, inp["cluster"], int(inp["nodes"]), gpus)
        at_size = sweep[sweep["message_bytes"] == size].set_index("model")
        chosen = at_size.loc[model]
        nccl = at_size.loc["nccl"]
        ranks = int(chosen["ranks"])
        headline_text(
            f"{OP_LABELS[op]} of {format_bytes(size)} on {inp['cluster']}, {ranks} GPUs, "
            f"model {model}"
        )
        m = headline(4)
        m[0].metric("Time", format_duration(chosen["time_s"]), help=f"model {model}")
        m[1].metric("Bus bandwidth (busbw)", format_rate(chosen["busbw_bytes_per_s"]))
        m[2].metric("Algorithm / protocol", f"{chosen['algorithm']} / {chosen['protocol']}")
        m[3].metric("NCCL's choice", f"{nccl['algorithm']} / {nccl['protocol']}")
        tab_time, tab_busbw = st.tabs(["Time vs size", "busbw vs size"])
        for tab, y, what in (
            (tab_time, "time_s", "time"),
            (tab_busbw, "busbw_bytes_per_s", "bus bandwidth"),
        ):
            with tab:
                chart(
                    plots.collective_sweep_figure(
                        sweep,
                        y=y,
                        series="model",
                        selected_bytes=size,
                        title=f"{OP_LABELS[op]} {what} on {inp['cluster']}, N = {ranks}, "
                        f"M = {size_label(size)} dotted: every model",
                    ),
                    key=f"chart_nccl_{y}",
                )
        per_model = at_size.reset_index().assign(
            **{
                "time [µs]": at_size["time_s"].to_numpy() * 1e6,
                "algbw [GB/s]": at_size["algbw_bytes_per_s"].to_numpy() / 1e9,
                "busbw [GB/s]": at_size["busbw_bytes_per_s"].to_numpy() / 1e9,
            }
        )[["model", "algorithm", "protocol", "time [µs]", "algbw [GB/s]", "busbw [GB/s]"]]
        table(
            per_model,
            "collective_models_at_size.csv",
            key="models_at_size",
            caption=f"Each model at M = {format_bytes(size)} (lesson: the lesson's flat ring; "
            "textbook: topology-aware alpha-beta; nccl: NCCL 2.30's tuning model with the terms "
            "it leaves out; nccl-table: its table alone, a reference baseline)",
        )
        table(
            sweep,
            "collective_models_sweep.csv",
            key="models_sweep",
            caption="The whole sweep (SI units: bytes, seconds, bytes per second)",
        )


def render() -> None:
    """Draw the Collectives page."""
    page_header(
        "Collectives",
        "How long does one collective take, and which algorithm wins at which message size? "
        "The alpha-beta formulas on one link, or a model (lesson, textbook, nccl, calibrated) on "
        "a cluster preset.",
    )
    inp = _inputs()
    if inp["view"] == "cluster":
        _cluster(inp)
    else:
        _link(inp)


if __name__ == "__main__":
    render()
