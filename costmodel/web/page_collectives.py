"""Collectives: how long does one collective take, and which algorithm wins at which size?"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from costmodel import collectives, models, plots
from costmodel._limits import LIMITS, LINK_RANKS
from costmodel.predict import buffer_memory_note
from costmodel.units import (
    format_bytes,
    format_counted,
    format_duration,
    format_rate,
    parse_duration,
    parse_rate,
)
from costmodel.verdict import decide, pair_half_width
from costmodel.web import data, data_collectives
from costmodel.web.common import (
    BUFFER_DOES_NOT_FIT,
    CUSTOM,
    QP,
    accuracy_caption,
    bare_number_warning,
    bound_choice,
    bound_number,
    bound_switch,
    calibration_notes,
    chart,
    chart_tabs,
    check_boxes,
    headline,
    headline_text,
    headline_time,
    keep_undrawn_in_url,
    notes,
    page_header,
    parse_input,
    plain,
    prediction_band,
    said_size,
    section,
    size_input,
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
#: The view a page opens on: the realistic model (nccl) on a cluster preset; the lesson's
#: formulas on one link are one click away (decision: a planner's first number is the realistic
#: one, not the lesson's flat ring at the NIC rate, which is several times slower).
DEFAULT_VIEW = "cluster"
#: URL values of ``view`` from before the views were renamed -> the view they meant (a link
#: names a view ``view=link`` or ``view=cluster``; its label is accepted too: common.bound_choice)
_OLD_VIEWS = {
    "Textbook (alpha-beta, one link)": "link",
    "NCCL-faithful (a cluster preset)": "cluster",
}


#: Configuration A's and B's boxes by the library argument each sets: a refusal names the box.
_A_BOXES = {"nodes": "Nodes", "gpus_per_node": "GPUs per node"}
_B_BOXES = {"nodes": "B: nodes", "gpus_per_node": "B: GPUs per node"}


#: The custom link's boxes: a refusal names the box and the range `collective --bandwidth` and
#: `--latency` keep (costmodel._limits.LIMITS), as every other box of the app does; the page
#: took 1e30B/s and a latency of 1e9 s, which the CLI refuses, and said "cannot parse" alone.
#: The size box beside the list: a size typed there is said back in its own prefixes.
SIZE_TEXT = "size_text"
BANDWIDTH_BOX = "Link bandwidth B, per direction [B/s]"
LATENCY_BOX = "Latency per step alpha [s]"


#: The cluster view's NCCL_ALGO box: empty is the model's own choice; one name pins it; a set
#: as NCCL_ALGO writes one ("ring,tree": the fastest of those; "^nvls": all but NVLS) restricts
#: the choice, as `collective --cluster ... --algorithm ring,tree` and the API's
#: ``predict_collective(..., algorithm="ring,tree")`` (one road: the same function).
ALGO_BOX = "Algorithms (NCCL_ALGO)"
ALGO_KEY = "coll_algo"
#: the models that choose among NCCL's algorithms: the box restricts their choice in every row
#: (the "NCCL's choice" metric, every model's table); the headline's model always takes it
NCCL_CHOOSERS = ("nccl", "nccl-table", "calibrated")


def _shares(model: str, other: str) -> bool:
    """Whether ``other``'s prediction takes the box's value read for ``model``: the same model,
    or both choosing among NCCL's algorithms (NCCL_ALGO applies to both)."""
    return other == model or (model in NCCL_CHOOSERS and other in NCCL_CHOOSERS)


def _algorithm(text: str, op: str, model: str) -> str:
    """The NCCL_ALGO box's value for ``model``: ``"auto"`` when empty, else the name or set
    as :func:`costmodel.models.check_algorithm` reads it (ValueError naming ``algorithm`` and
    the allowed names: an unknown name, a set under a model that chooses nothing)."""
    text = (text or "").strip()
    return models.check_algorithm(model, op, text) if text else "auto"


def _link_rate(text: str, *, name: str = BANDWIDTH_BOX) -> float:
    """The Link bandwidth box's rate [B/s], in the CLI's range (1 MB/s..1 PB/s), named by the box."""
    LIMITS["bandwidth"].check(name, text.strip())  # said as typed, in the range's words
    return parse_rate(text.strip(), name=name)


def _link_latency(text: str, *, name: str = LATENCY_BOX) -> float:
    """The Latency box's alpha [s], in the CLI's range (0..1 s), named by the box."""
    LIMITS["latency"].check(name, text.strip())
    return parse_duration(text.strip(), name=name)


def _inputs() -> dict:
    c1, c2, c3 = st.columns(3)
    # every op has a label (the headline indexes OP_LABELS too)
    op = bound_choice(
        c1, "selectbox", "Operation", collectives.OPS, format_func=OP_LABELS.__getitem__, key="op"
    )
    view = bound_choice(
        c2,
        "radio",
        "View",
        tuple(VIEWS),
        index=tuple(VIEWS).index(DEFAULT_VIEW),
        format_func=VIEWS.get,
        aliases=_OLD_VIEWS,  # an old shared link keeps opening the view it showed
        key="view",
        help="one link: the alpha-beta formulas of Thakur et al. 2005, every algorithm side by "
        "side; a cluster preset: one of the models lesson, textbook, nccl, calibrated "
        "(predict_collective, the same number as the API, the CLI and cm.sweep)",
    )
    # the cluster view's answer is for nodes x GPUs per node: its box shows those ranks, filled
    # once the answer has them (:func:`_cluster`); a greyed 8 beside an answer for 64 GPUs was
    # the one-link view's box. The one-link box keeps its value meanwhile (common.KEPT).
    ranks, ranks_slot = None, None
    if view == "link":
        ranks = bound_number(
            c3,
            "Ranks N [GPUs]",
            value=8,
            step=1,
            key="ranks",
            help="GPUs in the collective, on one link",
        )
    else:
        ranks_slot = c3  # the column itself: an st.empty would be one element kind more
    size = size_input(
        "Message size M [B] (per-rank buffer, as nccl-tests prints it)",
        value=2**28,
        key="size",
        text_key=SIZE_TEXT,
    )
    if view == "cluster":
        c0, c1, c2, c3, c4 = st.columns([1.2, 0.8, 0.9, 1.3, 1.0], vertical_alignment="bottom")
        clusters = data.preset_names("cluster")
        cluster = bound_choice(
            c0,
            "selectbox",
            "Cluster preset",
            clusters,
            index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0,
            key="nccl_cluster",
        )
        nodes = bound_number(c1, _A_BOXES["nodes"], value=1, step=1, key="nccl_nodes")
        gpus = bound_number(
            c2,
            _A_BOXES["gpus_per_node"],
            value=None,
            step=1,
            key="nccl_gpus",
            placeholder="preset",
            help="empty: the preset's",
        )
        model = bound_choice(
            c3,
            "radio",
            "Model",
            data.answer_models(cluster),
            horizontal=True,
            key="coll_model",
            help=data.MODELS_HELP,
        )
        algorithm = c4.text_input(
            ALGO_BOX,
            value="",
            key=ALGO_KEY,
            bind=QP,
            placeholder="all",
            help="Empty: the model's choice. A name pins it; ring,tree: the fastest of those; "
            "^nvls: all but NVLS (as NCCL_ALGO, and the CLI's collective)",
        )
        return {
            "view": view,
            "op": op,
            "size": size,
            "cluster": cluster,
            "nodes": nodes,
            "gpus": gpus,
            "model": model,
            "algorithm": algorithm,
            "pin": _pin_inputs(clusters, st),
            "ranks_slot": ranks_slot,
        }
    c0, c1, c2 = st.columns(3)
    links = [CUSTOM, *data.preset_names("link")]
    link = bound_choice(
        c0,
        "selectbox",
        "Link",
        links,
        key="link",
        help="a link preset (datasheet bandwidth per direction and latency) or custom figures",
    )
    if link == CUSTOM:
        bandwidth_text = c1.text_input(
            BANDWIDTH_BOX,
            value="450GB/s",
            key="bandwidth",
            bind=QP,
            help="e.g. 450GB/s (NVLink4 per direction), 400Gb/s (one NDR NIC), 64GB/s (PCIe 5)",
        )
        latency_text = c2.text_input(
            LATENCY_BOX,
            value="5us",
            key="latency",
            bind=QP,
            help="e.g. 5us, 0.8us, 2ms",
        )
        bandwidth = parse_input(BANDWIDTH_BOX, _link_rate, bandwidth_text)
        latency = parse_input(LATENCY_BOX, _link_latency, latency_text)
        if latency is not None:  # `collective --latency 0.5`'s warning, in the same words
            bare_number_warning(c2, "Latency", latency_text, "latency", "us")
    else:
        fig = data.link_figures(link)
        bandwidth, latency = fig["bandwidth_bytes_per_s"], fig["latency_s"]
        c1.metric("Bandwidth per direction", format_rate(bandwidth))
        c2.metric("Latency per step alpha", format_duration(latency))
        st.caption(f"{fig['description']} Source: {fig['source']}")
    assert op is not None  # a non-empty selectbox with a default index never gives None
    # the one table of algorithms per op (models.algorithms): the formulas over one link
    valid = models.algorithms(models.TEXTBOOK, op, link=True)
    _url_canonical_algorithms(op, f"algorithms_{op}")
    algorithms = bound_choice(
        st,
        "multiselect",
        "Algorithms to compare",
        valid,
        default=DEFAULT_ALGORITHMS.get(op, valid),
        key=f"algorithms_{op}",
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


def _url_canonical_algorithms(op: str, key: str) -> None:
    """A link naming an algorithm by its alias (``?algorithms_all_to_all=ring``: the
    pairwise exchange; broadcast's and reduce's ``ring``: the chain; reduce-scatter's
    ``pairwise``: its ring) opens the canonical name (:func:`costmodel.models.algorithm_aliases`),
    as the API, the CLI and the sweeps accept it; the box and the URL then say the canonical
    name. Any other name not in the op's list is named in red by the box
    (:func:`~costmodel.web.common.bound_choice`), with the allowed ones."""
    if key not in st.query_params:
        return
    given = st.query_params.get_all(key)
    aliases = models.algorithm_aliases(models.TEXTBOOK, op)
    named = [aliases.get(v, v) for v in given]
    if named != given:
        # Streamlit's binding reads the URL as the run began: the canonical names take effect
        # on a rerun (once: the URL then holds no alias)
        st.query_params[key] = list(dict.fromkeys(named))
        st.rerun()


#: (configuration A's widget key, pinned B's widget key) copied by "Pin the current as B"
_PIN_KEYS = (
    ("nccl_cluster", "pin_cluster"),
    ("nccl_nodes", "pin_nodes"),
    ("nccl_gpus", "pin_gpus"),
    ("coll_model", "pin_model"),
)


def _pin_current() -> None:
    """Copy configuration A into B's inputs (then A can be changed and compared with it)."""
    for a, b in _PIN_KEYS:
        if a in st.session_state:
            st.session_state[b] = st.session_state[a]


def _default(key: str, **default) -> dict:
    """A widget's default, left out once "Pin" has put its value in the session state (a
    default together with a value set through the session state makes Streamlit warn)."""
    return {} if key in st.session_state else default


def _pin_inputs(clusters: list[str], where) -> dict | None:
    """Inputs of the pinned configuration B (None when side by side is off); the toggle goes
    in ``where`` (beside the model)."""
    on = bound_switch(
        where,
        "toggle",
        "Side by side: compare with a second configuration B",
        key="coll_compare",
        help="B is another cluster, node count, GPUs per node or model: its choice is drawn "
        "dashed over A's algorithms, with a table of time and busbw ratios per size",
    )
    if not on:
        return None
    st.button(
        "Pin the current configuration as B",
        on_click=_pin_current,
        key="pin_now",
        icon=":material/push_pin:",
        help="Copies A's cluster, nodes, GPUs per node and model into B; then change A",
    )
    b0, b1, b2, b3 = st.columns(4)
    cluster = bound_choice(
        b0,
        "selectbox",
        "B: cluster preset",
        clusters,
        key="pin_cluster",
        **_default(
            "pin_cluster", index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0
        ),
    )
    nodes = bound_number(b1, _B_BOXES["nodes"], value=2, step=1, key="pin_nodes", set_by_page=True)
    gpus = bound_number(
        b2,
        _B_BOXES["gpus_per_node"],
        step=1,
        key="pin_gpus",
        placeholder="preset",
        value=None,
        set_by_page=True,
    )
    model = bound_choice(
        b3,
        "selectbox",
        "B: model",
        data.answer_models(cluster),
        key="pin_model",
        help=data.MODELS_HELP,
    )
    return {"cluster": cluster, "nodes": nodes, "gpus": gpus, "model": model}


def _label(cfg: dict) -> str:
    gpus = "" if cfg["gpus"] is None else f" x {format_counted(int(cfg['gpus']), 'GPU')}"
    return f"{cfg['cluster']}, {format_counted(int(cfg['nodes']), 'node')}{gpus}, {cfg['model']}"


def _link(inp: dict) -> None:
    op, ranks, size = inp["op"], int(inp["ranks"]), inp["size"]
    if size is None or inp["bandwidth"] is None or inp["latency"] is None:
        keep_undrawn_in_url()  # refused in red: the chart tab below is kept in the URL
        return
    if not inp["algorithms"]:
        st.warning("Pick at least one algorithm to compare.")
        keep_undrawn_in_url()
        return
    drawn = False  # the section ran to its end (a refusal in it stops it before the charts)
    with section("Ranks N"):
        # the CLI's range for a link's ranks (--ranks, the sweep's ranks axis), 1..1e9, said
        # whole before the library's own refusal of ranks < 1 names one bound
        LINK_RANKS.check("Ranks N [GPUs]", ranks)
        collectives.busbw_factor(op, ranks)
        if ranks == 1:
            st.info("One rank communicates nothing: every collective takes 0 s.")
            return
        args = (op, ranks, inp["bandwidth"], inp["latency"], inp["algorithms"])
        sweep = data.textbook_sweep(*args)
        crossovers = data.textbook_crossovers(*args)
        at_size = data_collectives.textbook_at_size(*args, float(size))
        best = at_size.loc[at_size["time_s"].idxmin()]  # type: ignore[call-overload]  # pandas-stubs: idxmin gives Hashable
        positive = at_size[at_size["time_s"] > 0]
        verdict = decide(dict(zip(positive["algorithm"], positive["time_s"], strict=True)), None)

        headline_text(
            f"{OP_LABELS[op]} of {said_size(size, SIZE_TEXT)} over {ranks:,} ranks",
            f"{format_duration(best['time_s'])} at best by the formulas",
        )
        m = headline(4)
        m[0].metric(
            "Fastest by the formulas",
            best["algorithm"],
            help="The alpha-beta formulas' ranking on this one link. No measured run backs a "
            "single link's error, so this names no winner on hardware: the cluster view's "
            "nccl model does, when the gap beats its expected error.",
        )
        m[1].metric("Time", format_duration(best["time_s"]))
        m[2].metric("Bus bandwidth (busbw)", format_rate(best["busbw_bytes_per_s"]))
        m[3].metric("Bytes sent per rank", format_bytes(best["bytes_per_rank"]))

        st.caption(plain(f"By the formulas: {verdict.text()}."))
        # a row that needs more than a link (nvls: a switch that reduces), as the CLI says it
        notes(n for n in map(collectives.link_hardware_note, at_size["algorithm"]) if n)
        # each pair's crossing as the cluster view names one: faster below -> faster above
        marks = crossovers.assign(
            label=[
                f"{a} → {b}"
                for a, b in zip(crossovers["faster_below"], crossovers["faster_above"], strict=True)
            ]
        )
        titles = {
            "time_s": f"{OP_LABELS[op]} time, N = {ranks}, M = {said_size(size, SIZE_TEXT)} dotted"
            " (crossovers x)",
            "busbw_bytes_per_s": f"{OP_LABELS[op]} bus bandwidth as nccl-tests prints it, "
            f"N = {ranks}, M = {said_size(size, SIZE_TEXT)} dotted",
        }
        tabs = chart_tabs(["Time vs size", "busbw vs size"], key="link_chart_tab")
        for (tab, is_open), (y, key) in zip(
            tabs, (("time_s", "chart_time"), ("busbw_bytes_per_s", "chart_busbw")), strict=True
        ):
            if is_open:  # the open tab's chart only (common.chart_tabs)
                with tab:
                    chart(
                        plots.collective_sweep_figure(
                            sweep, y=y, marks=marks, selected_bytes=size, title=titles[y]
                        ),
                        key=key,
                        reserve_margins=True,  # a first chart: drawn once (plots.reserve_margins)
                    )
        drawn = True

        columns: dict[str, Any] = {
            "time [µs]": at_size["time_s"] * 1e6,
            "algbw [GB/s]": at_size["algbw_bytes_per_s"] / 1e9,
            "busbw [GB/s]": at_size["busbw_bytes_per_s"] / 1e9,
            "bytes sent per rank [B]": at_size["bytes_per_rank"],
            "equation": [collectives.EQUATIONS[(op, a)] for a in at_size["algorithm"]],
        }
        per_alg = at_size.assign(**columns)[
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
            on_demand=True,
            cards=True,  # an algorithm per card on a phone: 6 columns needed 517 px of 358
            caption=f"Each algorithm at M = {said_size(size, SIZE_TEXT)}",
        )
        if op == "all_reduce":
            bound = float(collectives.allreduce_lower_bound_bytes(size, ranks))  # scalar in
            st.caption(f"Lower bound on bytes each rank sends, 2(N-1)/N M = {format_bytes(bound)}.")
        if len(crossovers):
            table(
                crossovers.assign(
                    **{
                        "crossover size [B]": crossovers["message_bytes"],
                        "time there [µs]": crossovers["time_s"] * 1e6,
                        # the cluster view's names for the same two columns
                        "faster below": crossovers["faster_below"],
                        "faster above": crossovers["faster_above"],
                    }
                )[
                    [
                        "pair",
                        "crossover size [B]",
                        "time there [µs]",
                        "faster below",
                        "faster above",
                    ]
                ],
                "crossovers.csv",
                key="crossovers",
                on_demand=True,
                cards=True,  # a pair per card on a phone: 5 columns needed 533 px of 358
                caption="Crossover sizes",
            )
        else:
            st.caption(  # no pair changes order: the fastest at M is the fastest everywhere
                f"No crossover: {best['algorithm']} is the fastest at every size (no two "
                "algorithms change order)."
            )
        table(
            sweep,
            "collective_sweep.csv",
            key="sweep",
            on_demand=True,
            cards=True,  # a size per card on a phone: its grid scrolled sideways in its box
            caption="The whole sweep (its CSV in SI units: bytes, seconds, bytes per second)",
        )
    if not drawn:  # refused in the section: its chart tab is kept in the URL
        keep_undrawn_in_url()


def _algorithm_rows(r, size: float) -> pd.DataFrame:
    """Each available algorithm at the size asked about, fastest first."""
    at = r.frame[r.frame["message_bytes"] == float(size)].sort_values("time_s")
    best = float(at["time_s"].min())
    return pd.DataFrame(
        {
            "algorithm": at["algorithm"].to_numpy(),
            "protocol": at["protocol"].to_numpy(),
            "model's choice": ["yes" if c else "" for c in at["chosen"]],
            "time [µs]": at["time_s"].to_numpy() * 1e6,
            "busbw [GB/s]": at["busbw_bytes_per_s"].to_numpy() / 1e9,
            "time / fastest": at["time_s"].to_numpy() / best if best > 0 else np.nan,
        }
    )


def _cluster_ranks(inp: dict, ranks: int | None) -> None:
    """The cluster view's greyed Ranks box: the ranks its answer is for (nodes x GPUs per
    node), or empty while the nodes or GPUs per node are refused."""
    slot = inp.get("ranks_slot")
    if slot is None:
        return
    inp["ranks_slot"] = None  # filled once a run
    slot.number_input(
        "Ranks N [GPUs]",
        value=ranks,
        disabled=True,
        placeholder="nodes x GPUs per node",
        help="The cluster view's ranks: nodes x GPUs per node of the preset (the one-link "
        "view takes the ranks typed here)",
    )


def _cluster(inp: dict) -> None:
    op, size, model = inp["op"], inp["size"], inp["model"]
    if size is None:
        keep_undrawn_in_url()  # refused in red: the switch and chart tabs below stay in the URL
        return
    r = at_size = None
    algorithm = None
    with section(ALGO_BOX, {"algorithm": ALGO_BOX}):
        algorithm = _algorithm(inp["algorithm"], op, model)
    if algorithm is None:  # refused in red, naming the box and the allowed names
        keep_undrawn_in_url()
        return
    inp["algo"] = algorithm
    # an algorithm the cluster cannot run is refused here, under the box it was typed in
    with section(
        "Nodes / GPUs per node", {**_A_BOXES, "algorithm": ALGO_BOX}, own_boxes=("algorithm",)
    ):
        check_boxes({"nodes": inp["nodes"], "gpus_per_node": inp["gpus"]}, _A_BOXES)
        gpus = None if inp["gpus"] is None else int(inp["gpus"])
        nodes = int(inp["nodes"])
        models = tuple(dict.fromkeys((*data.answer_models(inp["cluster"]), "nccl-table")))
        # the headline's model under the box's value, and NCCL's models with it where it is
        # NCCL_ALGO (a lesson or textbook name, binomial_tree, is no NCCL algorithm)
        algos = tuple(algorithm if _shares(model, m) else "auto" for m in models)
        at_size = data_collectives.models_at_size(
            op, inp["cluster"], nodes, gpus, models, size, algos
        )
        chosen = at_size.loc[model]
        nccl = at_size.loc["nccl"]
        ranks = int(chosen["ranks"])
        _cluster_ranks(inp, ranks)
        # a buffer no GPU of the preset holds: the note the Cluster page, collective --cluster
        # and predict give beside the same number (200 GB on an 85.5 GB H100 had none here)
        memory_note = buffer_memory_note(float(size), inp["cluster"], nodes, gpus)
        headline_text(
            f"{OP_LABELS[op]} of {said_size(size, SIZE_TEXT)} on {inp['cluster']}, {format_counted(ranks, 'GPU')}, "
            f"model {model}",
            format_duration(chosen["time_s"]) + (BUFFER_DOES_NOT_FIT if memory_note else ""),
        )
        band = prediction_band(op, size, inp["cluster"], nodes, gpus, model, algorithm)
        m = headline(4)
        # on a phone the band's times under the Time (the caption is a screen below it there)
        headline_time(m[0], "Time", float(chosen["time_s"]), band, help=f"model {model}")
        m[1].metric("Bus bandwidth (busbw)", format_rate(chosen["busbw_bytes_per_s"]))
        m[2].metric("Algorithm / protocol", f"{chosen['algorithm']} / {chosen['protocol']}")
        m[3].metric("NCCL's choice", f"{nccl['algorithm']} / {nccl['protocol']}")
        accuracy_caption(band, time_s=float(chosen["time_s"]))
        calibration_notes(op, inp["cluster"], nodes, gpus, model, algorithm)
        if memory_note:  # once, in the page's words (common.notes)
            notes([f"{memory_note}."], kind="warning", prefix="note: ")
        r = data_collectives.algorithms_on_cluster(
            op, inp["cluster"], nodes, gpus, model, size, algorithm
        )
        _algorithms(inp, r, size)
    if r is None or at_size is None:
        keep_undrawn_in_url()
        return
    if inp["pin"] is not None:
        with section("Configuration B", {**_B_BOXES, "algorithm": ALGO_BOX}):
            _side_by_side(inp, r, size)
    # every model's curves are the secondary answer: drawn on request, so the first view
    # renders the answer (metrics, table, one chart) with less for the browser to draw
    if bound_switch(
        st,
        "toggle",
        "Every model on this cluster (lesson, textbook, nccl, nccl-table)",
        key="coll_all_models",
        help="The lesson's flat ring at the NIC rate, the topology-aware textbook model, NCCL's "
        "tuning model and its table alone, side by side over every size",
    ):
        with section("Nodes / GPUs per node"):
            _models(inp, at_size, int(at_size["ranks"].iloc[0]))


def _verdict_at(r, size: float):
    """predict_all_algorithms' verdict (costmodel.verdict) at the size asked about, or None."""
    for m, v in zip(r.sizes, r.verdicts, strict=True):
        if float(m) == float(size) and v.best != "-":
            return v
    return None


def _algorithms(inp: dict, r, size: float) -> None:
    """Every algorithm of the model on the cluster: table at the size, charts, unavailable."""
    op = inp["op"]
    if not len(r.frame):
        st.info("No algorithm has a time here (one rank communicates nothing).")
    else:
        verdict = _verdict_at(r, size)
        # "Fastest" only for a winner: inside the expected error none is named (as on Cluster)
        lead = "" if verdict is None else "Fastest algorithm" if verdict.decided else "Algorithms"
        said = "" if verdict is None else f"{lead}: {verdict.text()}. "
        table(
            _algorithm_rows(r, size),
            "collective_algorithms_at_size.csv",
            key="algorithms_at_size",
            on_demand=True,
            cards="page",  # an algorithm per card on a phone: 6 columns needed 474 px of 358
            caption=plain(
                f"{said}Every {inp['model']} algorithm {inp['cluster']} can run at M = "
                f"{said_size(size, SIZE_TEXT)}, fastest first (protocol: the model's pick for it)"
            ),
        )
    if r.unavailable:
        table(
            pd.DataFrame(r.unavailable, columns=["algorithm", "why not here"]),
            "collective_algorithms_unavailable.csv",
            key="algorithms_unavailable",
            on_demand=True,
            caption="Algorithms this cluster (or this model) cannot run, and why",
        )
    if not len(r.frame):
        return
    tabs = chart_tabs(["Time vs size", "busbw vs size"], key="cluster_chart_tab")
    for (tab, is_open), y, what in zip(
        tabs, ("time_s", "busbw_bytes_per_s"), ("time", "bus bandwidth"), strict=True
    ):
        if not is_open:  # the open tab's chart only (common.chart_tabs)
            continue
        with tab:
            chart(
                plots.algorithms_on_cluster_figure(
                    r.frame,
                    y=y,
                    crossovers=r.crossovers,
                    selected_bytes=size,
                    title=f"{OP_LABELS[op]} {what}, every algorithm on {inp['cluster']}, "
                    f"N = {r.ranks}, M = {said_size(size, SIZE_TEXT)} dotted (o: the model's choice, "
                    "x: crossovers)",
                ),
                key=f"chart_algorithms_{y}",
                reserve_margins=True,  # a first chart: drawn once (plots.reserve_margins)
            )
    if len(r.crossovers):

        def crossings(x: pd.DataFrame) -> pd.DataFrame:
            return pd.DataFrame(
                {
                    "faster below": x["faster_below"].to_numpy(),
                    "faster from [B]": x["message_bytes"].to_numpy(),
                    "previous size [B]": x["previous_bytes"].to_numpy(),
                    "faster above": x["faster_above"].to_numpy(),
                    "time there [µs]": x["time_s"].to_numpy() * 1e6,
                }
            )

        table(
            crossings(r.crossovers),
            "collective_algorithm_crossovers.csv",
            key="algorithm_crossovers",
            on_demand=True,
            # a crossover per card on a phone: 5 columns needed 407 px of 358 on 8 DGX H100
            # nodes (its two sizes and the time there), more with the textbook model's names
            cards="page",
            caption="Crossovers: sizes where the fastest algorithm changes (on the x2 grid)",
        )
    else:
        st.caption("No crossover: one algorithm is the fastest at every size.")


def _side_by_side(inp: dict, r, size: float) -> None:
    """Configuration B (pinned) against A: overlaid curves and a table of ratios per size."""
    pin = inp["pin"]
    check_boxes({"nodes": pin["nodes"], "gpus_per_node": pin["gpus"]}, _B_BOXES)
    gpus = None if pin["gpus"] is None else int(pin["gpus"])
    # B runs under the same NCCL_ALGO where its model chooses among NCCL's algorithms too
    algo_b = inp["algo"] if _shares(inp["model"], pin["model"]) else "auto"
    rb = data_collectives.algorithms_on_cluster(
        inp["op"], pin["cluster"], int(pin["nodes"]), gpus, pin["model"], size, algo_b
    )
    a_label, b_label = _label(inp), _label(pin)
    st.markdown(f"**Side by side: A = {a_label}; B = {b_label}**")
    memory_note = buffer_memory_note(float(size), pin["cluster"], int(pin["nodes"]), gpus)
    if memory_note:  # B's GPU may hold less than A's
        notes([f"{memory_note}."], kind="warning", prefix="note (B): ")
    diff = data_collectives.difference_table(r, rb)
    here = diff[diff["message size [B]"] == float(size)]
    if len(here):
        row = here.iloc[0]
        ba, bb = (
            prediction_band(inp["op"], size, cfg["cluster"], int(cfg["nodes"]), g, cfg["model"], a)
            for cfg, g, a in (
                (inp, None if inp["gpus"] is None else int(inp["gpus"]), inp["algo"]),
                (pin, gpus, algo_b),
            )
        )
        m = st.columns(4)
        # B's time with its own band, as A's headline (64 nodes: extrapolated, said below)
        headline_time(m[0], "B: time", row["B time [µs]"] / 1e6, bb, help=f"model {pin['model']}")
        m[1].metric("B: algorithm / protocol", f"{row['B algorithm']} / {row['B protocol']}")
        m[2].metric("Time B / A", f"{row['time B / A']:.3g}x")
        m[3].metric("busbw B / A", f"{row['busbw B / A']:.3g}x")
        accuracy_caption(bb, where=" of B", time_s=row["B time [µs]"] / 1e6)
        same_error = (inp["cluster"], inp["model"], ba.regime) == (
            pin["cluster"],
            pin["model"],
            bb.regime,
        )
        faster = decide(  # one error when both rest on it, else the two add (pair_half_width)
            {"A": row["A time [µs]"] / 1e6, "B": row["B time [µs]"] / 1e6},
            pair_half_width(
                float(np.max(np.asarray(ba.half_width, dtype=float))),
                float(np.max(np.asarray(bb.half_width, dtype=float))),
                same_error=same_error,
            ),
        )
        # "Faster" only for a winner: inside the expected error none is named (as the
        # algorithms' caption above and the step page's "A or B?")
        lead = "Faster configuration" if faster.decided else "A or B"
        st.markdown(plain(f"{lead}: {faster.text()}."))
    tabs = chart_tabs(["A and B: time", "A and B: busbw"], key="pinned_chart_tab")
    for (tab, is_open), y in zip(tabs, ("time_s", "busbw_bytes_per_s"), strict=True):
        if not is_open:
            continue
        with tab:
            chart(
                plots.algorithms_on_cluster_figure(
                    r.frame,
                    y=y,
                    selected_bytes=size,
                    pinned=rb.frame,
                    pinned_label=f"B's choice ({b_label})",
                    title=f"A's algorithms (lines) and B's choice (dashed); A = {a_label}",
                ),
                key=f"chart_pinned_{y}",
            )
    table(
        diff,
        "collective_side_by_side.csv",
        key="side_by_side",
        cards=True,  # a size per card on a phone: 11 columns scrolled sideways in its box
        caption="Each model's choice on A and on B per size; time B / A > 1: B is slower",
    )


def _models(inp: dict, at_size, ranks: int) -> None:
    """Every model on the cluster (lesson, textbook, nccl, nccl-table): charts and table."""
    op, size = inp["op"], inp["size"]
    gpus = None if inp["gpus"] is None else int(inp["gpus"])
    sweep = data.model_sweep(op, inp["cluster"], int(inp["nodes"]), gpus)
    st.markdown("**Every model on this cluster (the model's choice each)**")
    tabs = chart_tabs(["Models: time vs size", "Models: busbw vs size"], key="models_chart_tab")
    for (tab, is_open), y, what in zip(
        tabs, ("time_s", "busbw_bytes_per_s"), ("time", "bus bandwidth"), strict=True
    ):
        if not is_open:
            continue
        with tab:
            chart(
                plots.collective_sweep_figure(
                    sweep,
                    y=y,
                    series="model",
                    selected_bytes=size,
                    title=f"{OP_LABELS[op]} {what} on {inp['cluster']}, N = {ranks}, "
                    f"M = {said_size(size, SIZE_TEXT)} dotted: every model",
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
        on_demand=True,  # four rows: text, its grid and CSV in the expander under it
        cards="page",  # a model per card on a phone: its grid scrolled, 467 px in 356
        caption=f"Each model at M = {said_size(size, SIZE_TEXT)} (lesson: the lesson's flat ring; "
        "textbook: topology-aware alpha-beta; nccl: NCCL 2.30's tuning model with the terms "
        "it leaves out; nccl-table: its table alone, a reference baseline)",
    )
    table(
        sweep,
        "collective_models_sweep.csv",
        key="models_sweep",
        on_demand=True,  # 4 models x 32 sizes, 128 cards on a phone: opened when asked for
        cards=True,  # a model and size per card on a phone: its grid scrolled sideways
        caption="The whole sweep (its CSV in SI units: bytes, seconds, bytes per second)",
    )
    if "note" in at_size.columns:  # what nccl-table's row is (capped at the NICs, ...)
        said = [str(n) for n in at_size["note"] if n]
        notes([x for n in said for x in n.split("; ")], prefix="note (nccl-table): ")


def render() -> None:
    """Draw the Collectives page."""
    page_header(
        "Collectives",
        "How long does one collective take, and which algorithm wins at which message size? "
        "The alpha-beta formulas on one link, or a model (lesson, textbook, nccl, calibrated) on "
        "a cluster preset: every algorithm it can run, and a second cluster side by side.",
    )
    inp = _inputs()
    if inp["view"] == "cluster":
        _cluster(inp)
        _cluster_ranks(inp, None)  # refused nodes or size: the box stays, empty
    else:
        _link(inp)


if __name__ == "__main__":
    render()
