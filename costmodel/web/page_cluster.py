"""Cluster: nodes x GPUs per node; where does an all-reduce's time go, inside or between nodes?"""

from __future__ import annotations

import streamlit as st

from costmodel import plots
from costmodel.predict import buffer_memory_note
from costmodel.units import format_counted, format_duration, format_rate
from costmodel.verdict import decide
from costmodel.web import data
from costmodel.web.common import (
    BUFFER_DOES_NOT_FIT,
    accuracy_caption,
    bound_choice,
    bound_number,
    bound_switch,
    calibration_notes,
    chart,
    check_boxes,
    cliff_band,
    headline,
    headline_text,
    headline_time,
    notes,
    page_header,
    plain,
    prediction_band,
    said_size,
    section,
    sentence,
    size_input,
    table,
)

#: The boxes by the library argument each sets: a refusal names the box typed in.
_BOXES = {"nodes": "Nodes", "gpus_per_node": "GPUs per node (empty: the preset's)"}


def _inputs() -> dict:
    c = st.columns(4)
    clusters = data.preset_names("cluster")
    cluster = bound_choice(
        c[0],
        "selectbox",
        "Cluster preset",
        clusters,
        index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0,
        key="cl_cluster",
    )
    nodes = bound_number(c[1], _BOXES["nodes"], value=4, step=1, key="cl_nodes")
    gpus = bound_number(
        c[2],
        _BOXES["gpus_per_node"],
        value=None,
        step=1,
        key="cl_gpus",
        placeholder="preset",
    )
    sharp = bound_switch(
        c[3],
        "checkbox",
        "In-network reduction across nodes (SHARP)",
        value=False,
        key="cl_sharp",
        help="what-if: each GPU sends its inter-node shard once and receives it once in the "
        "hierarchical columns, about half a ring's bytes on many nodes (a preset with "
        "IB SHARP, as the textbook model, uses it anyway)",
    )
    model = bound_choice(
        st,
        "radio",
        "Model",
        data.answer_models(cluster),
        horizontal=True,
        key="cl_model",
        help=data.MODELS_HELP,
    )
    size = size_input(
        "Message size M [B] (per-GPU gradient buffer)",
        value=2**30,
        key="cl_size",
        text_key="cl_size_text",
    )
    return {
        "cluster": cluster,
        "nodes": nodes,
        "gpus": gpus,
        "sharp": sharp,
        "size": size,
        "model": model,
    }


def _pair(algorithm_protocol: str) -> str:
    """ "nvls_tree/simple" as the Collectives page writes it, "nvls_tree / simple": a metric
    too narrow for it wraps at the spaces, not inside a word ("nvls_tree/simpl" + "e")."""
    return " / ".join(str(algorithm_protocol).split("/"))


def render() -> None:
    """Draw the Cluster page."""
    page_header(
        "Cluster",
        "An all-reduce over nodes x GPUs: hierarchical (reduce-scatter inside the node, "
        "all-reduce across nodes, all-gather inside) against one flat ring, and the cliff where "
        "the job leaves NVLink for the network.",
    )
    inp = _inputs()
    if inp["size"] is None:  # a typed size it cannot read: the red message names the grammar
        return
    facts = None
    with section("Nodes / GPUs per node", _BOXES):
        check_boxes({"nodes": inp["nodes"], "gpus_per_node": inp["gpus"]}, _BOXES)
        gpus = None if inp["gpus"] is None else int(inp["gpus"])
        facts = data.cluster_facts(inp["cluster"], int(inp["nodes"]), gpus)
    if facts is None:
        return
    if facts["ranks"] == 1:
        st.info("One GPU (1 node x 1 GPU) communicates nothing: an all-reduce takes 0 s.")
        return
    # the NIC by its preset (ib-ndr: the NDR of "NDR InfiniBand"); a box without one says so,
    # not "0 NICs per node on none (0 B/s per node, 0 B/s per GPU)"
    network = (
        f"{facts['nics_per_node']} NICs per node ({facts['nic']}) on {facts['fabric']} "
        f"({format_rate(facts['node_inter_bandwidth_bytes_per_s'])} per node, "
        f"{format_rate(facts['inter_bandwidth_bytes_per_s'])} per GPU)"
        if facts["nics_per_node"] > 0
        else "no network between nodes (one node only)"
    )
    st.caption(
        f"{facts['description']}: {format_counted(int(facts['gpus_per_node']), 'GPU')} per node over {facts['intra_kind']}"
        f" ({format_rate(facts['intra_bandwidth_bytes_per_s'])} per GPU per direction), "
        f"{network}."
    )
    with section("Cluster"):
        sweep = data.hierarchy_sweep(
            inp["cluster"], facts, float(inp["size"]), inp["sharp"], facts["nodes"], inp["model"]
        )
        here = sweep[
            (sweep["nodes"] == facts["nodes"]) & (sweep["gpus_per_node"] == facts["gpus_per_node"])
        ].iloc[0]
        # a buffer no GPU of the preset holds: the note collective --cluster, predict and the
        # sweep's memory_note give beside the same number
        memory_note = buffer_memory_note(
            float(inp["size"]), inp["cluster"], facts["nodes"], facts["gpus_per_node"]
        )
        headline_text(
            f"All-reduce of {said_size(inp['size'], 'cl_size_text')} over {format_counted(int(facts['ranks']), 'GPU')} "
            f"({int(facts['nodes']):,} x {int(facts['gpus_per_node']):,})",
            format_duration(here["model_s"]) + (BUFFER_DOES_NOT_FIT if memory_note else ""),
        )
        band = prediction_band(
            "all_reduce",
            inp["size"],
            inp["cluster"],
            facts["nodes"],
            facts["gpus_per_node"],
            inp["model"],
        )
        m = headline(4)
        # on a phone the band's times under the time (the caption is a screen below it there)
        headline_time(
            m[0],
            f"Time, model {inp['model']}",
            float(here["model_s"]),
            band,
            help="predict_collective with the chosen model (the same number as the API, the "
            "CLI and cm.sweep)",
        )
        m[1].metric(f"busbw, model {inp['model']}", format_rate(here["model_busbw_bytes_per_s"]))
        m[2].metric("Algorithm / protocol", _pair(here["model_algorithm"]))
        m[3].metric("Expected error", band.pct(), help=sentence(band.note))
        accuracy_caption(band, time_s=float(here["model_s"]))
        calibration_notes(
            "all_reduce", inp["cluster"], facts["nodes"], facts["gpus_per_node"], inp["model"]
        )
        if memory_note:  # once, in the page's words (common.notes)
            notes([f"{memory_note}."], kind="warning", prefix="note: ")
        # the SHARP box changes the hierarchical columns alone, and nothing on one node: said,
        # so that a box ticked with no number moving (or the model's time not moving) is read
        sharp = (
            ""
            if not inp["sharp"]
            else " In-network reduction (SHARP) is on: the hierarchical columns reduce across "
            "nodes in the switch; the model above, the flat ring and NCCL-faithful do not use it"
            + (
                " (on one node there is no inter-node phase: it changes nothing here)."
                if facts["nodes"] == 1
                else "."
            )
        )
        st.caption(
            "Below: the textbook model's algorithms (flat ring = its default) and the "
            "NCCL-faithful model, whichever model is chosen above." + sharp
        )
        m = st.columns(4)
        m[0].metric(
            "Hierarchical, serial",
            format_duration(here["hierarchical_serial_s"]),
            help="reduce-scatter, then all-reduce across nodes, then all-gather",
        )
        m[1].metric(
            "Hierarchical, pipelined",
            format_duration(here["hierarchical_pipelined_s"]),
            help="max(intra-node reduce-scatter + all-gather, inter-node all-reduce): chunks "
            "stream through the phases, so the all-reduce across nodes overlaps the work inside "
            "the node, whose reduce-scatter and all-gather share the node's links and add",
        )
        m[2].metric("Flat ring (textbook)", format_duration(here["flat_ring_s"]))
        m[3].metric(
            "busbw, hierarchical serial", format_rate(here["hierarchical_serial_busbw_bytes_per_s"])
        )
        m = st.columns(4)
        m[0].metric("Intra-node reduce-scatter", format_duration(here["intra_reduce_scatter_s"]))
        m[1].metric("Inter-node all-reduce", format_duration(here["inter_allreduce_s"]))
        m[2].metric("Intra-node all-gather", format_duration(here["intra_all_gather_s"]))
        m[3].metric("busbw, flat ring", format_rate(here["flat_ring_busbw_bytes_per_s"]))
        textbook = prediction_band(
            "all_reduce",
            inp["size"],
            inp["cluster"],
            facts["nodes"],
            facts["gpus_per_node"],
            "textbook",
        )
        verdict = decide(
            {
                name: float(here[col])
                for name, col in (
                    ("hierarchical (serial)", "hierarchical_serial_s"),
                    ("hierarchical (pipelined)", "hierarchical_pipelined_s"),
                    ("flat ring", "flat_ring_s"),
                )
                if float(here[col]) > 0
            },
            float(textbook.half_width),
        )
        # "Fastest" only for a winner: inside the expected error none is named
        lead = "Fastest textbook algorithm" if verdict.decided else "Textbook algorithms"
        st.markdown(plain(f"{lead}: {verdict.text()}."))
        m = st.columns(4)
        m[0].metric(
            "NCCL-faithful",
            format_duration(here["nccl_s"]),
            help="NCCL's own algorithm/protocol choice (predict_collective)",
        )
        m[1].metric("NCCL's choice", _pair(here["nccl_algorithm"]))
        m[2].metric("busbw, NCCL-faithful", format_rate(here["nccl_busbw_bytes_per_s"]))
        left, right = st.columns(2)
        with left:
            chart(
                plots.hierarchy_phases_figure(
                    sweep, title="Where the time goes (hierarchical, serial phases)"
                ),
                key="chart_phases",
            )
        with right:
            chart(
                cliff_band(
                    plots.bandwidth_vs_gpus_figure(
                        sweep,
                        {
                            "hierarchical (serial)": "hierarchical_serial_busbw_bytes_per_s",
                            "hierarchical (pipelined)": "hierarchical_pipelined_busbw_bytes_per_s",
                            "flat ring": "flat_ring_busbw_bytes_per_s",
                            "NCCL-faithful": "nccl_busbw_bytes_per_s",
                        },
                        node_gpus=facts["gpus_per_node"],
                        title="The cliff: busbw as the job grows past one node",
                    ),
                    sweep,
                    inp["cluster"],
                    float(inp["size"]),
                ),
                key="chart_cliff",
            )
        table(
            sweep,
            "cluster_allreduce.csv",
            key="cluster",
            on_demand=True,
            cards=True,  # a GPU count per card on a phone: 20 columns needed 1,775 px of 358
            caption="Every GPU count (its CSV in SI units: seconds, bytes per second)",
        )


if __name__ == "__main__":
    render()
