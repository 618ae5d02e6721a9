"""DDP step: how long is one training step, and is it compute- or communication-bound?"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from costmodel import architecture, batch, plots, training
from costmodel.units import (
    format_bytes,
    format_count,
    format_duration,
    parse_bytes,
    parse_count,
    parse_duration,
)
from costmodel.web import data
from costmodel.web.common import QP, chart, headline, page_header, parse_input, section, table

CUSTOM = "custom (parameter count)"


def _inputs() -> dict:
    c = st.columns(4)
    arch = c[0].selectbox(
        "Model",
        (CUSTOM, *architecture.arch_names()),
        key="ddp_arch",
        bind=QP,
        help="A published architecture: its real tensor list makes PyTorch's DDP buckets, its "
        "shape the activations and FLOPs per token. Custom: equal 2^24-parameter tensors, 6P "
        "FLOPs per token, no activations.",
    )
    params_text = "0"
    if arch == CUSTOM:
        params_text = c[0].text_input(
            "Model parameters P", value="7B", key="ddp_params", bind=QP, help="e.g. 7B, 1.3B"
        )
    clusters = data.preset_names("cluster")
    cluster = c[1].selectbox(
        "Cluster",
        clusters,
        index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0,
        key="ddp_cluster",
        bind=QP,
    )
    nodes = c[2].number_input("Nodes", value=4, step=1, key="ddp_nodes", bind=QP)
    model = c[3].radio(
        "Collective model",
        data.answer_models(cluster),
        horizontal=True,
        key="ddp_model",
        bind=QP,
        help=data.MODELS_HELP,
    )
    c = st.columns(4)
    local_batch = c[0].number_input(
        "Local batch per GPU [samples]", value=1, step=1, key="ddp_local_batch", bind=QP
    )
    seq = c[1].number_input("Sequence length [tokens]", value=4096, step=1, key="ddp_seq", bind=QP)
    mfu = c[2].slider("MFU [fraction of peak]", 0.05, 1.0, 0.4, 0.05, key="ddp_mfu", bind=QP)
    bucket_text = c[3].text_input(
        "DDP bucket_cap [B]",
        value="25MiB",
        key="ddp_bucket",
        bind=QP,
        help="PyTorch default 25 MiB",
    )
    c = st.columns(4)
    accumulation = c[0].number_input(
        "Accumulation steps [-]", value=1, step=1, key="ddp_accumulation", bind=QP
    )
    no_sync = c[1].checkbox(
        "no_sync on all but the last micro-batch", value=True, key="ddp_no_sync", bind=QP
    )
    compute_text = c[2].text_input(
        "Measured compute per micro-batch [s] (optional)",
        value="",
        key="ddp_compute",
        bind=QP,
        help="e.g. 350ms; leave empty to use 6 P tokens / (peak x MFU)",
    )
    recompute, flash = "none", True
    if arch != CUSTOM:
        c = st.columns(4)
        recompute = c[0].selectbox(
            "Recompute", ("none", "selective", "full"), key="ddp_recompute", bind=QP
        )
        flash = c[1].checkbox("FlashAttention", value=True, key="ddp_flash", bind=QP)
        st.caption(
            f"Memory includes the activations of one micro-batch ({int(local_batch)} x "
            f"{int(seq)} tokens, {'FlashAttention' if flash else 'no FlashAttention'}, "
            f"recompute {recompute}; Korthikanti et al. 2022); 'fits' means the total fits "
            "the card."
        )
    return {
        "arch": None if arch == CUSTOM else arch,
        "flash_attention": flash,
        "recompute": recompute,
        "params": None
        if arch != CUSTOM
        else parse_input("Model parameters", parse_count, params_text),
        "cluster": cluster,
        "nodes": nodes,
        "model": model,
        "local_batch": local_batch,
        "sequence_length": seq,
        "mfu": mfu,
        "accumulation": accumulation,
        "no_sync": no_sync,
        "bucket_cap_bytes": parse_input("DDP bucket_cap", parse_bytes, bucket_text),
        "compute_time_s": compute_text.strip() or None,
    }


def render() -> None:
    """Draw the DDP step page."""
    page_header(
        "DDP step",
        "One data-parallel training step: compute, the bucketed gradient all-reduces that "
        "overlap it (PyTorch DDP, Li et al. 2020), the exposed tail, and what would flip the "
        "verdict.",
    )
    inp = _inputs()
    if (inp["params"] is None and inp["arch"] is None) or inp["bucket_cap_bytes"] is None:
        return
    result = None
    with section("Scenario"):
        result = data.evaluate_scenario(**inp)
    if result is None:
        return
    m = headline(4)
    m[0].metric("Step time", format_duration(result.step_time_s))
    m[1].metric("Compute", format_duration(result.compute_s))
    m[2].metric("All-reduce (sum over buckets)", format_duration(result.comm_s))
    m[3].metric("Exposed communication", format_duration(result.exposed_comm_s))
    m = headline(4)
    m[0].metric("Verdict", f"{result.bound}-bound")
    m[1].metric("Scaling efficiency", f"{100 * result.efficiency:.1f} %")
    m[2].metric("GPUs", f"{result.ranks} ({result.nodes} x {result.gpus_per_node})")
    m[3].metric("Throughput [tokens/s]", format_count(result.tokens_per_s))
    m = headline(4)
    m[0].metric(
        "Tokens per GPU per micro-batch",
        format_count(batch.tokens_per_step(inp["local_batch"], inp["sequence_length"])),
    )
    m[1].metric("Global batch [samples]", f"{result.global_batch:,}")
    m[2].metric(
        "Memory per GPU",
        format_bytes(result.memory_total_bytes),
        delta="fits" if result.fits else "does not fit",
        delta_color="normal" if result.fits else "inverse",
        delta_arrow="off",
    )
    m[3].metric("GPU memory", format_bytes(result.gpu_memory_bytes))
    for note in result.notes:
        st.caption(note)
    _training_cost(result, inp)
    chart(
        plots.ddp_timeline_figure(
            result.timeline,
            compute_s=result.compute_s,
            step_time_s=result.step_time_s,
            title="One step: compute and bucket all-reduces",
        ),
        key="chart_timeline",
    )
    # the searches re-evaluate the step many times: shown after the step, cached on their own
    flips = data.evaluate_scenario(flips=True, **inp)
    if flips.flip is not None:
        st.success(
            f"Smallest change that flips the verdict: **{flips.flip.description}**",
            icon=":material/swap_vert:",
        )
    else:
        st.info("No change within reach flips the verdict.")
    scaling = data.evaluate_scenario(scaling=True, **inp).scaling_frame()
    chart(
        plots.scaling_figure(scaling, title="Scaling efficiency vs GPU count"), key="chart_scaling"
    )
    table(
        pd.DataFrame([f.model_dump() for f in flips.flips]),
        "verdict_flips.csv",
        key="flips",
        caption="Each change tried, and whether it flips",
    )
    table(
        scaling.rename(
            columns={
                "step_time_s": "step [s]",
                "comm_s": "all-reduce [s]",
                "exposed_comm_s": "exposed [s]",
                "efficiency": "efficiency [0-1]",
                "tokens_per_s": "tokens/s",
            }
        ),
        "scaling.csv",
        key="scaling",
        caption="Step time and efficiency vs node count",
    )
    table(
        pd.DataFrame(result.timeline),
        "timeline.csv",
        key="timeline",
        caption="The timeline (seconds from the start of the step)",
    )


def _training_cost(result, inp: dict) -> None:
    """Time and cost to train at the predicted step time, or at a measured one."""
    st.subheader("Time and cost to train")
    prices = training.price_names()
    c = st.columns(4)
    tokens_text = c[0].text_input(
        "Tokens to train", value="1T", key="ddp_tokens", bind=QP, help="e.g. 2T, 300B"
    )
    price_name = c[1].selectbox(
        "Price", ("custom", *prices), key="ddp_price", bind=QP, help="cited list prices"
    )
    usd = None
    if price_name == "custom":
        usd = c[2].number_input(
            "USD per GPU-hour", value=2.0, step=0.1, key="ddp_usd", bind=QP, min_value=0.01
        )
    measured_text = c[3].text_input(
        "Measured step time [s] (optional)",
        value="",
        key="ddp_measured_step",
        bind=QP,
        help="e.g. 1.2s: days and cost at the measured step, and the MFU it implies",
    )
    tokens = parse_input("Tokens to train", parse_count, tokens_text)
    measured = (
        parse_input("Measured step time", parse_duration, measured_text)
        if measured_text.strip()
        else None
    )
    if tokens is None or (measured_text.strip() and measured is None):
        return
    with section("Time and cost to train"):
        cost = result.training_cost(
            tokens,
            usd_per_gpu_hour=usd,
            price=None if price_name == "custom" else price_name,
            measured_step_time_s=measured,
        )
        m = st.columns(4)
        m[0].metric("Wall clock [days]", f"{cost.wall_days:,.1f}")
        m[1].metric("GPU-hours", f"{cost.gpu_hours:,.0f}")
        m[2].metric("Cost [USD]", f"{cost.cost_usd:,.0f}")
        m[3].metric(
            "MFU implied by the measured step" if measured else "MFU at the predicted step",
            f"{100 * cost.mfu:.1f} %",
        )
        st.caption(
            f"{cost.steps:,} steps of {format_count(cost.tokens_per_step)} tokens at "
            f"{format_duration(cost.step_time_s)} ({cost.step_time_source}) on {cost.ranks} "
            f"GPUs; {cost.price_note}. MFU: model FLOPs per token (6N + attention, PaLM "
            "appendix B) x tokens/s / (GPUs x peak)."
        )


if __name__ == "__main__":
    render()
