"""The training step: how long is one step under DDP, ZeRO, FSDP or HSDP, and is it compute-
or communication-bound? (The DDP step page became the step page with a strategy choice.)"""

from __future__ import annotations

import threading
from typing import Any, Literal

import pandas as pd
import streamlit as st

from costmodel import architecture, batch, plots, training
from costmodel.compute import FP8_GPUS_TEXT
from costmodel.scenario import Scenario
from costmodel.strategy import DEFAULT_COMM_CONTENTION, STRATEGIES
from costmodel.strategy.band import band_covers, band_note, band_sources
from costmodel.strategy.compute import MEASURED_LABEL
from costmodel.strategy.layout import bucket_cap_bytes_for
from costmodel.strategy.memory import overheads_text
from costmodel.strategy.step import EXPOSED_SIGNIFICANT, PRECISIONS
from costmodel.units import (
    elapsed_unit,
    format_bytes,
    format_bytes_pair,
    format_change,
    format_count,
    format_counted,
    format_duration,
    format_elapsed,
    format_elapsed_in,
    format_gpu_hours,
    format_mfu,
    format_token_count,
    format_usd,
    format_usd_rate,
    noun_for,
    parse_bytes,
    parse_duration,
    parse_tokens,
    ungroup_thousands,
)
from costmodel.web import data
from costmodel.web.common import (
    BUCKET_BOX,
    BUCKET_HELP,
    CONTEXT_BOX,
    FRAGMENTATION_BOX,
    GRAD_DTYPE_BOX,
    PARAM_DTYPE_BOX,
    QP,
    bare_number_warning,
    bound_choice,
    bound_number,
    bound_switch,
    calibration_notes,
    chart,
    chart_tabs,
    comm_dtype_boxes,
    context_bytes,
    duration_range,
    headline,
    headline_caption,
    headline_text,
    keep_undrawn_in_url,
    mark_shown,
    notes,
    on_open,
    overhead_boxes,
    overheads_drawn_later,
    page_header,
    page_words,
    params_count,
    parse_input,
    section,
    table,
    text_cards,
    whole_from_text,
    within_limit,
)
from costmodel.web.own_model import OWN, upload_arch
from costmodel.web.scope import OUT_OF_SCOPE

#: The measured compute box, as its refusals name it.
COMPUTE_FIELD = "Measured compute per micro-batch"


#: The step page's boxes by the Scenario field each sets: a refusal names the box, not the API
#: argument ("Sequence length [tokens]: ...", not "sequence_length: ...").
BOX_LABELS = {
    "params": "Model parameters P",
    "nodes": "Nodes",
    "gpus_per_node": "GPUs per node",
    "local_batch": "Local batch per GPU [samples]",
    "sequence_length": "Sequence length [tokens]",
    "accumulation": "Accumulation steps [-]",
    "group_size": "HSDP group [GPUs]",
    "power_limit_w": "GPU power limit [W]",
    "comm_contention": "Overlap contention c",
    "mfu": "MFU [fraction of peak]",
    "precision": "Compute precision",
    "bucket_cap_bytes": "bucket_cap",
    "param_dtype": PARAM_DTYPE_BOX,
    "grad_dtype": GRAD_DTYPE_BOX,
    "compute_time_s": COMPUTE_FIELD,
    "cuda_context_bytes": CONTEXT_BOX,
    "fragmentation": FRAGMENTATION_BOX,
}

#: The URL keys of the step page's "CUDA context, fragmentation" boxes (common.overhead_boxes,
#: the Memory page's boxes under the step page's prefix).
OVERHEAD_KEYS = {"context_key": "ddp_context", "fragmentation_key": "ddp_fragmentation"}

#: The measured step's box, as its refusals name it.
MEASURED_BOX = "Measured step time [s]"

#: Configuration B's boxes: what B sets is named by B's box ("Nodes (B): ..."), the rest by A's.
B_BOX_LABELS = {
    **BOX_LABELS,
    "nodes": "Nodes (B)",
    "params": "Parameters (B)",
    "precision": "Compute precision (B)",
    "group_size": "HSDP group (B) [GPUs]",
}

CUSTOM = "custom (parameter count)"

#: The timeline's intervals a phone shows as cards, in the order the step lists them (the
#: phases' summary above says each phase's time; the grid on a wider screen and timeline.csv
#: hold every interval).
TIMELINE_PHONE_ROWS = 10
SAME = "same as A"


class _MfuSlot(threading.local):
    """The column of the MFU box, while no MFU is set and the box is not drawn: the efficiency
    in use is written there after the step is evaluated (:func:`_mfu_in_use`); one per session
    thread."""

    box: Any = None


_mfu_slot = _MfuSlot()


class _OverheadsSlot(threading.local):
    """Where the "CUDA context, fragmentation" boxes go (under the inputs), while the page has
    not drawn them yet (:func:`_overhead_boxes`); one per session thread."""

    box: Any = None


_overheads_slot = _OverheadsSlot()


def _mfu_in_use(result: Any) -> None:
    """State, where the MFU box would be, the compute the step used when no MFU is set: the
    fitted efficiency with its MFU ("fitted efficiency hopper/bf16: MFU 0.41 on one node ..."),
    the default MFU on a GPU without a fit, or the measured compute time."""
    box, _mfu_slot.box = _mfu_slot.box, None
    if box is not None and result is not None:
        box.caption(f"Compute in use: {page_words(result.compute_label)}.")
        mark_shown(f"compute per micro-batch: {result.compute_label}")  # the step's note


def _inputs() -> dict:
    c = st.columns(4)
    arch = bound_choice(
        c[0],
        "selectbox",
        "Model",
        (CUSTOM, OWN, *architecture.arch_names()),
        key="ddp_arch",
        help="A published architecture or your own model's Hugging Face config.json: its real "
        "tensor list makes PyTorch's DDP buckets, its shape the activations and FLOPs per token. "
        "Custom (a bare count): the dense transformer of that size (architecture_for_params) "
        "makes the buckets, the FSDP units and, at the fitted efficiency, the FLOPs per token; its "
        "memory has no "
        "activations.",
    )
    params_text = "0"
    arch_field = None if arch == CUSTOM else arch  # Scenario.arch: a preset name or a path
    if arch == OWN:
        upload = upload_arch(c[0], "ddp_arch_config")  # the CLI's --arch path/config.json road
        if upload is None:
            st.stop()
        arch_field = upload[1]
    if arch == CUSTOM:
        params_text = c[0].text_input(
            "Model parameters P", value="7B", key="ddp_params", bind=QP, help="e.g. 7B, 1.3B"
        )
    clusters = data.preset_names("cluster")
    cluster = bound_choice(
        c[1],
        "selectbox",
        "Cluster",
        clusters,
        index=clusters.index("dgx-h100") if "dgx-h100" in clusters else 0,
        key="ddp_cluster",
    )
    # the page opens on 4 nodes, a step whose timeline crosses the network; the CLI and the API
    # ask one node when none is given (hardware.DEFAULT_NODES): a page decision, in the README
    nodes = bound_number(c[2], "Nodes", value=4, step=1, key="ddp_nodes")
    model = bound_choice(
        c[3],
        "radio",
        "Collective model",
        data.answer_models(cluster),
        horizontal=True,
        key="ddp_model",
        help=data.MODELS_HELP,
    )
    # read under the first row, as the Memory page reads its box: parsed with the others at the
    # end, a refused count's red line stood under every box of the page, on a 390 px phone about
    # 1,400 px below the box it names, the answer gone and the reason out of sight (chromium,
    # 2026-12-05)
    params = (
        parse_input("Model parameters P", params_count, params_text) if arch == CUSTOM else None
    )
    c = st.columns(4)
    local_batch = bound_number(
        c[0], "Local batch per GPU [samples]", value=1, step=1, key="ddp_local_batch"
    )
    seq = bound_number(
        c[1], "Sequence length [tokens]", value=4096, step=1, key="ddp_seq", tokens=True
    )
    own_mfu = bound_switch(
        c[2],
        "checkbox",
        "Set the MFU (else the fitted efficiency)",
        value=False,
        key="ddp_own_mfu",
        help="Default: the achievable efficiency fitted on published one-node runs "
        "(costmodel.compute), shown with its band under the step; 0.4 on a GPU it has no fit for",
    )
    mfu, _mfu_slot.box = None, None  # never a slot of an earlier run
    if own_mfu:  # a number box like the page's others: no slider's chunk to load
        mfu = bound_number(
            c[2],
            "MFU [fraction of peak]",
            min_value=0.05,
            max_value=1.0,
            value=0.4,
            step=0.05,
            format="%.2f",
            key="ddp_mfu",
            limit="mfu",
            help="PaLM's MFU: model FLOPs over time x peak, recomputation's not counted (as "
            "the fitted efficiency's MFU and llm-foundry's and torchtitan's tables), so the "
            "same compute under any Recompute",
        )
    else:
        # no greyed box: it showed 0.40 while the step used the fitted efficiency (0.41 on an
        # H100); the efficiency in use is written in this column, under the check box, once
        # the step is evaluated (_mfu_in_use; the column itself, not an st.empty slot: one
        # element on the first view, as the box was)
        _mfu_slot.box = c[2]
    bucket_text = c[3].text_input(
        BUCKET_BOX,
        value="",
        key="ddp_bucket",
        bind=QP,
        placeholder="strategy default",
        help=BUCKET_HELP,  # the Memory page's bucket box says the same
    )
    bucket = (
        parse_input("bucket_cap", within_limit("bucket", parse_bytes), bucket_text)
        if bucket_text.strip()
        else None
    )
    if bucket is not None:  # "25" is 25 bytes, as the CLI's --bucket 25 warns
        bare_number_warning(c[3], "bucket_cap", bucket_text, "bytes", "MiB")
    c = st.columns(4)
    accumulation = bound_number(
        c[0], "Accumulation steps [-]", value=1, step=1, key="ddp_accumulation"
    )
    no_sync = bound_switch(
        c[1], "checkbox", "no_sync on all but the last micro-batch", value=True, key="ddp_no_sync"
    )
    compute_text = c[2].text_input(
        "Measured compute per micro-batch [s] (optional)",
        value="",
        key="ddp_compute",
        bind=QP,
        help="e.g. 350ms; leave empty to use the FLOPs at the fitted efficiency (or the MFU set)",
    )
    # checked here, so that a refusal names this box (the scenario would name compute_time_s)
    compute_s = (
        parse_input(COMPUTE_FIELD, within_limit("compute_time", parse_duration), compute_text)
        if compute_text.strip()
        else None
    )
    if compute_s is not None:  # "400" is 400 s, as the CLI's --compute-time 400 warns
        bare_number_warning(c[2], COMPUTE_FIELD, compute_text, "seconds", "ms")
    if own_mfu and compute_text.strip():  # the API's rule: a compute time overrides the MFU
        # said under the compute box, not by a placeholder under the MFU (an element more
        # before the first chart on every view: tests/test_first_view.py)
        c[2].caption(f"MFU not used: the {MEASURED_LABEL} is given.")
    contention = bound_number(
        c[3],
        "Overlap contention c [0-1]",
        min_value=0.0,
        max_value=1.0,
        value=DEFAULT_COMM_CONTENTION,
        step=0.1,
        key="ddp_contention",
        limit="contention",
        help="Compute runs at 1 - c while a collective is in flight (NCCL shares the SMs and "
        f"memory bandwidth). Default c = {DEFAULT_COMM_CONTENTION:g}, the same on every "
        "surface (API, CLI, Scenario); 1 = the fit to PyTorch's V100 ResNet DDP benchmark.",
    )
    recompute, flash, loss = "none", True, "fp32"
    # every row's columns are all filled: on a phone (below 641 px) Streamlit stacks a row's
    # columns with a 16 px gap each, an empty one's too, so the Strategy row of a bare count
    # (three empty columns beside Strategy) left 48 px of nothing under it, and the power row
    # (its fourth column never used) 16 px (chromium, 390 px)
    c = st.columns(4)
    strategy = bound_choice(
        c[0],
        "selectbox",
        "Strategy",
        STRATEGIES,
        key="ddp_strategy",
        help="ddp: bucketed all-reduce; zero1/zero2: reduce-scatter + all-gather (DeepSpeed); "
        "fsdp: per-block all-gathers and reduce-scatters (ZeRO-3); hsdp: fsdp inside a group, "
        "all-reduce across groups",
    )
    precision = bound_choice(
        c[1],
        "selectbox",
        "Compute precision",
        PRECISIONS,
        key="ddp_precision",
        help="Precision of the matmuls: bf16, or fp8 (float8 training; fp8 tensor cores: "
        f"{FP8_GPUS_TEXT}). Under fp8 the fitted efficiency is fp8's and the "
        "MFU set is a fraction of the fp8 dense peak (H100: 1979 TFLOP/s, twice bf16's), as "
        "llm-foundry and torchtitan quote fp8 MFU; the same input as the CLI's --precision and "
        "Scenario's precision.",
    )
    power = bound_number(
        c[2],
        "GPU power limit [W] (optional)",
        value=None,
        step=50.0,
        key="ddp_power",
        placeholder="datasheet",
        help="Board power limit the cluster's GPUs run at (nvidia-smi -pl), in [minimum, "
        "datasheet maximum] (H100/H200 SXM 200..700 W, A100 SXM 100..400 W): e.g. 500 for "
        "H100s capped at 500 W. The fitted compute efficiency follows it "
        "(costmodel.compute.gpu_power_w). Empty: the datasheet power (H100/H200 SXM 700 W, "
        "A100 SXM 400 W), as the API's and the CLI's default.",
    )
    if power is not None and compute_text.strip():  # as the MFU: a compute time replaces
        # the compute whose speed the limit sets (the API, the CLI and the sweep refuse both:
        # costmodel.strategy.compute.speed_beside_measured), so the step runs without it
        c[2].caption(f"Power limit not used: the {MEASURED_LABEL} is given.")
        power = None
    node_gpus = int(data.cluster_facts(cluster, 1, None)["gpus_per_node"])
    from costmodel._limits import LIMITS

    # the box's bounds are the CLI's --gpus-per-node limit, the same for every preset (a bound
    # that followed the cluster made Streamlit drop a value past it without a word when the
    # cluster changed); the node's own 1..G is the library's refusal, naming the preset
    gpus_per_node = bound_number(
        c[3],
        "GPUs per node",
        value=None,
        step=1,
        min_value=1,
        max_value=int(LIMITS["gpus_per_node"].hi),
        key="ddp_gpus_per_node",
        limit="gpus_per_node",
        placeholder=f"{node_gpus} (the whole node)",
        help=f"GPUs the run uses in each node, 1..{node_gpus} on {cluster}: a slice of the "
        "node, as the CLI's --gpus-per-node (step, scenario, train) and Scenario's "
        "gpus_per_node. A slice is still billed for the whole instance "
        "(costmodel.training.billed_gpus_per_node): the cost says how many GPUs are paid for. "
        f"Empty: the whole node ({node_gpus} GPUs), the default of every surface.",
    )
    group_size, reshard, bucket_view = None, None, None
    # the strategy's own options under it: hsdp's group beside its reshard switch (a row of
    # two filled columns), fsdp's switch or ddp's alone (no columns)
    where = st.columns([1, 3]) if strategy == "hsdp" else (st, st)
    if strategy == "hsdp":
        # empty: one node of the cluster, the default of strategy_step, the CLI and the sweep
        group_size = bound_number(
            where[0],
            "HSDP group [GPUs]",
            value=None,
            step=1,
            min_value=1,
            key="ddp_group",
            limit="group_size",
            placeholder="one node",
            help="GPUs that shard one replica (FSDP inside the group, all-reduce across "
            "groups): a divisor of a node's GPUs or whole nodes. Empty: one node of the "
            "cluster (dgx-h100: 8, alps-gh200: 4, gb200-nvl72: 72; a slice's GPUs per node "
            "when set), as the API's, the CLI's (--group-size) and the sweep's default.",
        )
    if strategy in ("fsdp", "hsdp"):
        reshard = bound_switch(
            where[1],
            "checkbox",
            "reshard_after_forward (FULL_SHARD; off = SHARD_GRAD_OP)",
            value=True,
            key="ddp_reshard",
        )
    if strategy == "ddp":
        # ddp's own option (Layout.gradient_as_bucket_view): no bucket copy of the gradients
        bucket_view = bound_switch(
            st,
            "checkbox",
            "gradient_as_bucket_view (DDP: no bucket copy of the gradients)",
            value=False,
            key="ddp_bucket_view",
            help="On: the gradients are views into DDP's all-reduce buckets, so the memory "
            "holds no bucket copy of them (P x the gradient dtype's bytes less per GPU; the "
            "step time is the same), as `costmodel step --gradient-as-bucket-view`; off is "
            "PyTorch's default",
        )
    # the dtypes the collectives move (CLI --param-dtype, --grad-dtype): a switch, its two
    # boxes once on (one element on the first view)
    dtypes = comm_dtype_boxes(st, prefix="ddp") or {}
    if arch != CUSTOM:  # a shape's activations: three boxes, one row of three
        row3 = st.columns(3)
        recompute = bound_choice(
            row3[0], "selectbox", "Recompute", architecture.RECOMPUTE_MODES, key="ddp_recompute"
        )
        flash = bound_switch(row3[1], "checkbox", "FlashAttention", value=True, key="ddp_flash")
        loss = bound_choice(
            row3[2],
            "selectbox",
            "Loss",
            architecture.LOSS_MODES,
            key="ddp_loss",
            help="How the loss is computed, which sizes its logits: fp32 = "
            "cross_entropy(logits.float()), 12 B per logit at its peak; fused = a fused or "
            "compiled loss, 4 B; fp32-held = fp32 logits kept through backward, 16 B",
        )
        st.caption(
            f"Memory includes the activations of one micro-batch ({int(local_batch)} x "
            f"{int(seq)} tokens, {'FlashAttention' if flash else 'no FlashAttention'}, "
            f"recompute {recompute}, loss {loss}; Korthikanti et al. 2022); 'fits' means the "
            "total fits the card."
        )
    # the memory's overheads: an empty slot here, under the other inputs, which their boxes fill
    # once the first chart is sent (_overhead_boxes), so the first view sends no widget more
    # before its chart, and the boxes keep their place (their expander stays open) whatever the
    # answer below them shows; what they hold now sizes the step (overheads_drawn_later)
    _overheads_slot.box = st.container()
    ctx_text, fragmentation = overheads_drawn_later(**OVERHEAD_KEYS)
    context = parse_input(CONTEXT_BOX, context_bytes, ctx_text)
    return {
        "arch": arch_field,
        "flash_attention": flash,
        "recompute": recompute,
        "loss": loss,
        "params": params,
        "cluster": cluster,
        "nodes": nodes,
        "gpus_per_node": None if gpus_per_node is None else int(gpus_per_node),
        "model": model,
        "local_batch": local_batch,
        "sequence_length": seq,
        "mfu": float(mfu) if mfu is not None else None,
        "accumulation": accumulation,
        "no_sync": no_sync,
        # empty: the strategy's default bucket (None); a bad entry shows its error
        "bucket_cap_bytes": bucket,
        "_bad_bucket": bool(bucket_text.strip()) and bucket is None,
        "_bad_compute": bool(compute_text.strip()) and compute_s is None,
        "compute_time_s": ungroup_thousands(compute_text).strip() or None,  # as parse_input
        "strategy": strategy,
        "group_size": None if group_size is None else int(group_size),
        "reshard_after_forward": reshard,
        "gradient_as_bucket_view": bucket_view,
        "comm_contention": float(contention),
        "power_limit_w": None if power is None else float(power),
        "precision": precision,
        "param_dtype": dtypes.get("param_dtype", "bf16"),
        "grad_dtype": dtypes.get("grad_dtype"),
        # the memory's CUDA context [B] and fragmentation allowance (Scenario's, strategy_memory's)
        "cuda_context_bytes": 0.0 if context is None else context,
        "fragmentation": fragmentation,
        "_bad_context": context is None,
    }


def _pinned(inp: dict) -> dict | None:
    """The second configuration (B): A's inputs with the cluster, model, nodes or strategy
    changed; None when nothing is pinned. Every B widget is URL-bound ("same as A" is left out
    of the URL), so a shared link restores both configurations."""
    pin = bound_switch(
        st,
        "toggle",
        "Compare with a second configuration (B)",
        value=False,
        key="ddp_pin",
        help="Pin B: A with another cluster, model, node count, strategy or compute precision; "
        "both are drawn "
        "on the same charts and a table gives B - A.",
    )
    if not pin:
        return None
    c = st.columns(4)
    clusters = data.preset_names("cluster")
    cluster = bound_choice(c[0], "selectbox", "Cluster (B)", (SAME, *clusters), key="ddp_b_cluster")
    arch = bound_choice(
        c[1], "selectbox", "Model (B)", (SAME, *architecture.arch_names(), CUSTOM), key="ddp_b_arch"
    )
    nodes_text = c[2].text_input(
        "Nodes (B)", value="", key="ddp_b_nodes", bind=QP, placeholder=SAME
    )
    strat_b = bound_choice(
        c[3], "selectbox", "Strategy (B)", (SAME, *STRATEGIES), key="ddp_b_strategy"
    )
    # B's own precision, as `scenario --vs precision=bf16`: without it an fp8 A put beside a GPU
    # with no fp8 tensor cores (an A100) was refused "use bf16", a change A's box alone could make.
    # It sits under B's cluster (whose GPU it runs on) and B's HSDP group under B's strategy: a
    # row of their own left two or three columns empty, 16 px of nothing each on a phone
    prec_b = bound_choice(
        c[0],
        "selectbox",
        "Compute precision (B)",
        (SAME, *PRECISIONS),
        key="ddp_b_precision",
        help="The precision of B's matmuls; same as A by default (as `scenario --vs "
        "precision=...`): fp8 A beside a GPU without fp8 tensor cores needs bf16 here.",
    )
    # B's own HSDP group, as `scenario --vs group_size=8`: A's group (16 = two H100 nodes) on
    # B's one node or on B's other cluster was refused, with no box of B's to change it in
    group_text = ""
    if (inp["strategy"] if strat_b == SAME else strat_b) == "hsdp":
        group_text = c[3].text_input(
            B_BOX_LABELS["group_size"],
            value="",
            key="ddp_b_group",
            bind=QP,
            placeholder=SAME,
            help="GPUs that shard one replica of B: a divisor of B's ranks and of a node's "
            "GPUs, or whole nodes. Empty: A's group (one node of B's cluster where A's box is "
            "empty).",
        )
    changes: dict = {}
    if prec_b not in (SAME, inp["precision"]):
        changes["precision"] = prec_b
    if cluster not in (SAME, inp["cluster"]):
        # A's power limit caps A's GPUs, and A's slice is of A's node: B's other cluster runs
        # at its datasheet power on its whole nodes. A's own cluster picked for B is "same as
        # A": it dropped A's power limit and slice (B on 32 GPUs at 700 W beside A's 16 at 500 W,
        # both labelled "dgx-h100 x 4", read as the strategy's gain)
        changes.update(cluster=cluster, power_limit_w=None, gpus_per_node=None)
    if arch == CUSTOM:
        text = c[1].text_input("Parameters (B)", value="7B", key="ddp_b_params", bind=QP)
        p = parse_input("Parameters (B)", params_count, text)
        if p is None:
            return None
        changes.update(arch=None, params=p)
    elif arch != SAME:
        changes.update(arch=arch, params=None)
    if nodes_text.strip():
        n = whole_from_text(nodes_text, "Nodes (B)", "nodes")
        if n is None:
            return None
        changes["nodes"] = n
    if strat_b != SAME:
        changes["strategy"] = strat_b
        if strat_b != "hsdp":
            changes["group_size"] = None
        if strat_b not in ("fsdp", "hsdp"):
            changes["reshard_after_forward"] = None
        if strat_b != "ddp":
            changes["gradient_as_bucket_view"] = None
    if group_text.strip():
        g = whole_from_text(group_text, B_BOX_LABELS["group_size"], "group_size")
        if g is None:
            return None
        if g != inp["group_size"] or "strategy" in changes:  # A's own group: B the same
            changes["group_size"] = g
    if not changes:
        st.info(
            "B is the same as A: pick another cluster, model, node count, strategy, compute "
            "precision or HSDP group."
        )
        return None
    return {**inp, **changes}


def _label(inp: dict, result) -> str:
    a = result.scenario.architecture()  # an uploaded config's name, not its saved path
    model = a.name if a is not None else f"{format_count(result.scenario.params)} params"
    # a node slice and a power limit are named (the collectives page names B's GPUs per node):
    # "dgx-h100 x 4" alone read as 32 GPUs at 700 W beside B's whole nodes
    s = result.scenario
    kept = [
        *([] if s.gpus_per_node is None else [f"{s.gpus_per_node} GPUs per node"]),
        *([] if s.power_limit_w is None else [f"{s.power_limit_w:g} W"]),
        # fp8 named (bf16 is every surface's default): an fp8 A beside a bf16 B read alike
        *([] if s.compute_precision == "bf16" else [s.compute_precision]),
    ]
    said = f" ({', '.join(kept)})" if kept else ""
    return f"{model} on {result.cluster_name} x {result.nodes:,}{said}, {result.layout}"


def _b_compute_on_its_gpu(result, inp_b: dict) -> tuple[dict, str]:
    """B on another GPU than A's measured compute time was measured on
    (:func:`costmodel.scenario.measured_on_another_gpu`, the rule by which ``Scenario.with_changes``
    and ``scenario --vs`` refuse it): B has no compute box of its own, so its compute is
    predicted on its own GPU, as ``scenario --vs cluster=...,compute_time=none`` (A's time would
    price B at A's GPU's speed and B's price). Returns B's inputs and the caption saying so
    (empty where B keeps A's time)."""
    from costmodel.scenario import measured_on_another_gpu

    if result.scenario.compute_time_s is None or inp_b.get("compute_time_s") is None:
        return inp_b, ""
    try:
        gpus = measured_on_another_gpu(result.scenario, Scenario(**inp_b))
    except ValueError:  # B's own refusal is said by _compare, in red
        return inp_b, ""
    if gpus is None:
        return inp_b, ""
    return {**inp_b, "compute_time_s": None}, (
        f"B's compute is predicted on its own GPU ({gpus[1]}): the {MEASURED_LABEL} "
        f"({format_duration(result.scenario.compute_time_s)}) is of A's {gpus[0]}, and would "
        f"price B at {gpus[0]}'s speed and {gpus[1]}'s price (the CLI's `scenario --vs` "
        "refuses it without B's own `compute_time=...` or `compute_time=none`)."
    )


def _compare(inp: dict, result, inp_b: dict, b_note: str = ""):
    """B beside A: the one-line answer, the steps as bars, B - A per figure, overlaid scaling.
    ``b_note``: the caption of B's compute predicted on its own GPU (:func:`_b_compute_on_its_gpu`).
    Returns B's result (None when B cannot be evaluated)."""
    from costmodel.scenario import compare, compare_summary

    rb = None  # stays None when B is refused (its red message is shown by section)
    with section("Configuration B", B_BOX_LABELS):
        rb = data.evaluate_scenario(**inp_b)
    if rb is None:
        return None
    st.subheader("A or B?")
    # B priced at A's measured compute though it changes that work (another model, precision):
    # the answer carries the caveat (compare_summary), said as a warning, not a green answer
    from costmodel.scenario import measured_compute_changed

    shared = measured_compute_changed(result.scenario, rb.scenario)
    (st.warning if shared else st.success)(
        compare_summary(result, rb), icon=":material/compare_arrows:"
    )
    if b_note:
        st.caption(b_note)
    if not rb.fits:
        _b_does_not_fit(rb, "its step below is")
    # B's own notes, as `scenario --vs` prints them ("note (B): ..."): A's bucket_cap not
    # applied to B's fsdp, B's model past data parallelism alone; the page said A's only
    notes(
        (n for n in rb.notes if not n.startswith("DOES NOT FIT") and n not in result.notes),
        prefix="note (B): ",
    )
    la, lb = f"A: {_label(inp, result)}", f"B: {_label(inp_b, rb)}"
    chart(
        plots.step_compare_figure(
            {
                la: (result.compute_s, result.exposed_comm_s, _rest_s(result)),
                lb: (rb.compute_s, rb.exposed_comm_s, _rest_s(rb)),
            },
            title="One step, A and B",
        ),
        key="chart_compare_step",
    )
    rows = []
    for r in compare(result, rb):
        rows.append(
            {
                "figure": r["label"],
                "A": _fmt(r["a"], r["unit"]),
                "B": _fmt(r["b"], r["unit"]),
                "B - A": _diff(r),
                "B / A": f"{r['ratio']:.3g}x" if r["ratio"] is not None else "",
            }
        )
    # as text (16 figures), cards on a phone; the grid and its CSV in the expander under it
    table(
        pd.DataFrame(rows),
        "compare.csv",
        key="compare",
        caption=f"{la}  |  {lb}",
        on_demand=True,
        cards=True,
    )
    sa = data.evaluate_scenario(scaling=True, **inp).scaling_frame()
    sb = data.evaluate_scenario(scaling=True, **inp_b).scaling_frame()
    chart(
        plots.scaling_compare_figure({la: sa, lb: sb}, title="Scaling efficiency, A and B"),
        key="chart_compare_scaling",
    )
    return rb


def _rest_parts(result) -> list[tuple[str, float]]:
    """The step's parts that are neither compute nor exposed communication, labelled as
    ``costmodel step`` prints them: the optimizer step, the wait for the slowest rank and DDP's
    host overhead [s]; those that are zero are left out."""
    parts = (
        ("optimizer step", result.optimizer_s),
        ("waiting for the slowest rank", result.sync_s),
        ("DDP host overhead", result.host_overhead_s),
    )
    return [(k, float(v)) for k, v in parts if v > 0]


def _rest_s(result) -> float:
    """Step time not in compute or exposed communication [s] (:func:`_rest_parts` summed)."""
    return sum(v for _, v in _rest_parts(result))


def _step_sum_caption(result) -> None:
    """Say what the step is made of, so the headline's figures add up to the step time, and
    what the communication sum adds (separate calls, one of the same bytes: comm_calls_note,
    as `costmodel step` says it)."""
    rest = _rest_parts(result)
    calls = " ".join(
        f"Communication (sum), {k.replace('_', '-')} "
        f"{format_duration(result.comm_by_kind_s.get(k, 0.0))}: {note}."
        for k, note in result.comm_calls_notes.items()
    )
    if not rest and not calls:
        return
    headline_caption(  # under the metrics it completes, above the inputs
        (
            f"Step {format_duration(result.step_time_s)} = compute "
            f"{format_duration(result.compute_s)} + exposed communication "
            f"{format_duration(result.exposed_comm_s)} + "
            + " + ".join(f"{k} {format_duration(v)}" for k, v in rest)
            + "."
            if rest
            else ""
        )
        + (" " if rest and calls else "")
        + calls
    )


def _b_does_not_fit(rb, what: str) -> None:
    """The warning beside B's step or cost when B does not fit (A's is above B's inputs)."""
    st.warning(
        f"Configuration B does not fit in GPU memory: {format_bytes(rb.memory_total_bytes)} "
        f"per GPU > {format_bytes(rb.gpu_memory_bytes)}; {what} for a setup that cannot run.",
        icon=":material/memory:",
    )


def _fmt(v, unit: str) -> str:
    if isinstance(v, float) and v != v:
        return "unknown"
    if unit == "B":
        return format_bytes(v)
    if unit == "s":
        return format_duration(v)
    if unit == "%":
        return f"{100 * v:.1f} %"
    if unit == "bool":
        return "yes" if v else "no"
    if unit == "text":
        return str(v)
    return format_count(v)


def _diff(r: dict) -> str:
    d = r["difference"]
    if d is None:
        if r["unit"] not in ("bool", "text"):
            return "?"
        return "same" if r["a"] == r["b"] else "differs"
    if r["unit"] == "%":
        # a gap under 0.05 pt is +0.0, not "-0.0 pt" (A 99.7 %, B 99.7 %: the compare table)
        return f"{round(100 * d, 1) or 0.0:+.1f} pt"
    return ("+" if d >= 0 else "-") + _fmt(abs(d), r["unit"])


@st.cache_data(show_spinner=False, max_entries=64)
def _advice(**fields):
    """Cached :meth:`Scenario.bucket_advice`: the DDP step without its timeline at each of the
    200 caps of :data:`costmodel.ddp.ADVICE_CAPS_BYTES`, sharing one compute estimate and one
    all-reduce prediction per distinct bucket size; each cap's buckets are summed in one
    vectorised pass over the tensor list (``costmodel.ddp._bucket_totals``).

    Measured 2026-12-03 on the shared 2-core box, after the page's own step: 0.1-0.2 s for a
    7B-70B dense model, about 4 s for deepseek-v3's 45,395 tensors. Cached per distinct set of
    inputs (64 entries), so a rerun that changes nothing the advice depends on (a tab, a price)
    costs nothing."""

    return Scenario(**fields).bucket_advice()


def _advisor(inp: dict, inp_b: dict | None, fits: bool = True, rb=None) -> None:
    """The bucket_cap that minimises the exposed communication, with the curve per cap; a
    setup that does not fit (``fits``, B's ``rb``) is said so beside its times."""
    st.subheader("bucket_cap advisor")
    if not fits:
        st.warning(
            ("Configuration A does" if rb is not None else "This configuration does")
            + " not fit in GPU memory: the exposed times below are for a setup that cannot run.",
            icon=":material/memory:",
        )
    # the advisor sweeps DDP's buckets: a B on another strategy has none (it was a red refusal,
    # "bucket_advice: ... allowed: strategy ddp", for a B the user set up rightly)
    # a B refused above (rb None) is said there, once: its advice is not asked for again
    b_ddp = inp_b is not None and inp_b["strategy"] == "ddp" and rb is not None
    if inp_b is not None and not b_ddp:
        st.caption(
            f"B ({inp_b['strategy']}) has no bucket_cap to advise: the advisor sweeps DDP's "
            "bucketed all-reduce."
        )
    if b_ddp and rb is not None and not rb.fits:
        _b_does_not_fit(rb, "its exposed times below are")
    curves = {}
    with section("bucket_cap advisor", BOX_LABELS):
        curves["A"] = _advice(**inp)
        if b_ddp:
            assert inp_b is not None  # b_ddp says so
            curves["B"] = _advice(**inp_b)
    if not curves:
        return
    a = curves["A"]
    caps = list(a.caps_bytes)
    now = bucket_cap_bytes_for("ddp", inp["bucket_cap_bytes"], 1.0)  # DDP's cap now
    m = st.columns(4)
    m[0].metric("Best bucket_cap", f"{a.best_cap_bytes / 2**20:g} MiB")
    m[1].metric("Exposed at the best cap", format_duration(a.exposed_comm_s[a.best_index]))
    if now in caps:
        m[2].metric(
            f"Exposed at {now / 2**20:g} MiB (current)",
            format_duration(a.exposed_comm_s[caps.index(now)]),
        )
    m[3].metric("Buckets at the best cap", f"{a.buckets[a.best_index]:,}")
    if "B" in curves:
        st.caption(
            f"B: best bucket_cap {curves['B'].best_cap_bytes / 2**20:g} MiB, exposed "
            f"{format_duration(curves['B'].exposed_comm_s[curves['B'].best_index])}."
        )
    chart(
        plots.bucket_advice_figure(
            curves,
            current_cap_bytes=now,
            title=f"Exposed communication vs bucket_cap ({caps[0] / 2**20:g}-"
            f"{caps[-1] / 2**20:g} MiB)",
        ),
        key="chart_bucket_advice",
        # drawn in the same task as the first chart (one chunk, one reveal): once, not twice
        reserve_margins=True,
    )
    st.caption(
        "Each cap re-runs the step with everything else as above; the star is the least "
        f"exposed communication ({a.tie_text()}, as `costmodel scenario --bucket-advice` says). "
        "Small caps start sending early but pay NCCL's latency per bucket; large caps leave "
        "more to send after backward."
    )


#: how the step page's text names its overhead boxes
OVERHEAD_BOX_WORDS = '"CUDA context, fragmentation" boxes'


def _overhead_boxes() -> None:
    """The memory's overheads (common.overhead_boxes: the Memory page's boxes, ranges and
    defaults), drawn into their slot under the inputs once the first chart is sent (or where
    the page stops before it); the step reads them before it is priced (_inputs:
    common.overheads_drawn_later)."""
    slot, _overheads_slot.box = _overheads_slot.box, None
    with slot if slot is not None else st.container():
        overhead_boxes(
            **OVERHEAD_KEYS,
            caption="Added to the memory per GPU and to every 'fits' on this page (the "
            "strategies, what makes it fit, the scaling table), as `costmodel step "
            "--cuda-context --fragmentation` and the Memory page add them.",
        )


def render() -> None:
    """Draw the training step page."""
    page_header(
        "Training step",
        "One data-parallel training step under DDP, ZeRO-1/2, FSDP or HSDP: compute, the "
        "collectives that overlap it (all-reduces, reduce-scatters, all-gathers, each on the "
        "ranks it spans), the exposed communication, memory from the same layout, and every "
        "strategy ranked.",
    )
    st.caption(OUT_OF_SCOPE)
    inp = _inputs()
    bad_bucket = inp.pop("_bad_bucket")
    bad_compute = inp.pop("_bad_compute")
    bad_context = inp.pop("_bad_context")
    inp_b = _pinned(inp)
    if (inp["params"] is None and inp["arch"] is None) or bad_bucket or bad_compute or bad_context:
        _overhead_boxes()  # drawn on every run: a refused entry stays there to be corrected
        keep_undrawn_in_url()  # the cost boxes below, not drawn: kept in the URL
        return
    result = None
    with section("Scenario", BOX_LABELS, answer=True):  # refused: said at the top, as the answer
        result = data.evaluate_scenario(**inp)
    _mfu_in_use(result)
    if result is None:
        _overhead_boxes()
        keep_undrawn_in_url()
        return
    headline_text(
        f"Step on {format_counted(result.ranks, 'GPU')} ({result.nodes:,} x {result.gpus_per_node:,})",
        f"{format_duration(result.step_time_s)}, {result.bound}-bound"
        + (
            ""
            if result.fits
            else f" (does not fit: {format_bytes(result.memory_total_bytes)} per GPU > "
            f"{format_bytes(result.gpu_memory_bytes)})"
        ),
    )
    # the step's collectives on a calibrated cluster: what the calibration warns of (a level it
    # did not measure answered uncalibrated), as `costmodel step` says it on stderr
    calibration_notes(
        "all_reduce", inp["cluster"], result.nodes, result.gpus_per_node, inp["model"]
    )
    m = headline(4)
    m[0].metric("Step time", format_duration(result.step_time_s))
    m[1].metric("Compute", format_duration(result.compute_s))
    m[2].metric(
        "Communication (sum)",
        format_duration(result.comm_s),
        help=", ".join(
            f"{k.replace('_', '-')} {format_duration(v)}"
            # a sum of separate calls, said as `costmodel step` says it (comm_calls_note)
            + (f" ({result.comm_calls_notes[k]})" if k in result.comm_calls_notes else "")
            for k, v in result.comm_by_kind_s.items()
        ),
    )
    m[3].metric("Exposed communication", format_duration(result.exposed_comm_s))
    m = headline(4)
    m[0].metric(
        "Verdict",
        f"{result.bound}-bound",
        # the rule (strategy.step.verdict): "comms-bound" beside an 80 % compute share read as
        # "communication dominates"
        help=f"comms-bound: the communication outlasts the compute, or more than "
        f"{EXPOSED_SIGNIFICANT:.0%} of the step waits on it (here "
        f"{result.exposed_comm_s / result.step_time_s:.0%} exposed)",
    )
    m[1].metric(
        "Scaling efficiency",
        f"{100 * result.efficiency:.1f} %",
        help="throughput on these GPUs / (GPUs x throughput on one GPU) = the step of the same "
        f"micro-batches on one GPU ({format_duration(result.one_gpu_step_s)}: no communication, "
        "the optimizer step unsharded) / this step, at the overlap contention c chosen above. "
        f"Compute share of the step: {100 * result.compute_share:.1f} %",
    )
    m[2].metric("GPUs", f"{result.ranks:,} ({result.nodes:,} x {result.gpus_per_node:,})")
    m[3].metric("Throughput [tokens/s]", format_count(result.tokens_per_s))
    m = headline(4)
    m[0].metric(
        "Tokens per GPU per micro-batch",
        format_token_count(int(batch.tokens_per_step(inp["local_batch"], inp["sequence_length"]))),
    )
    m[1].metric("Global batch [samples]", f"{result.global_batch:,}")
    over = overheads_text(inp["cuda_context_bytes"], inp["fragmentation"])
    shown, card = format_bytes_pair(result.memory_total_bytes, result.gpu_memory_bytes)
    m[2].metric(
        "Memory per GPU",
        shown,
        delta="fits" if result.fits else "does not fit",
        delta_color="normal" if result.fits else "inverse",
        delta_arrow="off",
        # the overheads set in their boxes under the inputs, named where they count
        help=f"{over[:1].upper()}{over[1:]} (the {OVERHEAD_BOX_WORDS})." if over else None,
    )
    m[3].metric("GPU memory", card)
    _step_sum_caption(result)
    if not result.fits:  # below the headline (drawn in the slot above), computed after it
        _does_not_fit(inp, result)
    c = inp["comm_contention"]
    ideal = data.evaluate_scenario(**{**inp, "comm_contention": 0.0}) if c > 0 else result
    band_why = band_note((result.step_time_lo_s, result.step_time_hi_s), result.compute_source)
    # beside a measured compute the band spans the collectives and the scaling alone, said as
    # `costmodel step` says it (strategy.band.band_scope)
    covers = band_covers(result.compute_source, result.optimizer_s + result.host_overhead_s)
    band = (
        f" Step {band_why}."
        if band_why
        else f" Step band ({covers}; an 80% band"
        f" checked on published runs, {band_sources()}): {format_duration(result.step_time_lo_s)}"
        f" to {format_duration(result.step_time_hi_s)}"
        # beyond the largest published run it was checked on: the step's one rule
        + (
            f", extrapolated beyond {result.band_extrapolated_beyond}: {result.band_extrapolation}."
            if result.band_extrapolated
            else "."
        )
    )
    st.caption(
        f"{result.layout}: scaling efficiency at overlap contention c = {c:g}"
        + (" (the default of every surface)" if c == DEFAULT_COMM_CONTENTION else "")
        + f": {100 * result.efficiency:.1f} % (vs one GPU with the same micro-batches, "
        f"{format_duration(result.one_gpu_step_s)} per step"
        + (
            "; above 100 %: the optimizer step sharded over the ranks saves more than the "
            "sharding costs)."
            if result.efficiency > 1 + 1e-9
            else ")."
        )
        # "perfect overlap" is the lesson's max(compute, comm) everywhere (Scenario's and
        # step's perfect_overlap_*): this is the timeline at c = 0, the buckets' order kept
        + (
            f" With no contention (c = 0), in the same order: {100 * ideal.efficiency:.1f} %."
            if c > 0
            else ""
        )
        + f" Compute share of the step: {100 * result.compute_share:.1f} %."
        + band
    )
    # each note once on the page, as a sentence (common.notes): the A/B view's costs carry the
    # step's "activations: not included" note again, and the compute note is the caption above
    notes(n for n in result.notes if not n.startswith("DOES NOT FIT"))
    b_note = ""
    if inp_b is not None:
        inp_b, b_note = _b_compute_on_its_gpu(result, inp_b)
    rb = _compare(inp, result, inp_b, b_note) if inp_b is not None else None
    _training_cost(result, inp, rb)
    (tab_step, step_open), (tab_scaling, scaling_open) = chart_tabs(
        ["One step", "Scaling vs GPU count"], key="ddp_chart_tab"
    )
    if step_open:  # the open tab's chart only (common.chart_tabs)
        with tab_step:
            chart(
                plots.ddp_timeline_figure(
                    result.timeline,
                    compute_s=result.compute_s,
                    step_time_s=result.step_time_s,
                    title=f"One step ({result.layout}): compute and collectives",
                ),
                key="chart_timeline",
                reserve_margins=True,  # drawn once: the page's first chart
            )
    if scaling_open:
        with tab_scaling:
            frame = data.evaluate_scenario(scaling=True, **inp).scaling_frame()
            chart(
                plots.scaling_figure(frame, title="Scaling efficiency vs GPU count"),
                key="chart_scaling",
            )
            no_fit = [int(n) for n in frame.loc[~frame["fits"].astype(bool), "nodes"]]
            if no_fit:  # never a point for a setup that cannot run without saying so
                st.warning(
                    f"Does not fit in GPU memory at {', '.join(map(str, no_fit))} "
                    f"{noun_for(no_fit[0] if len(no_fit) == 1 else len(no_fit), 'node')}: "
                    "those points are steps of a configuration that cannot run.",
                    icon=":material/memory:",
                )
    _overhead_boxes()  # once the first chart is sent: nothing more before it on the first view
    _strategies(inp)
    if inp["strategy"] in ("ddp",):
        _advisor(inp, inp_b, result.fits, rb)  # the bucket_cap advisor: DDP's buckets
    # the searches re-evaluate the step many times: shown after the step, cached on their own
    if inp["strategy"] == "ddp":
        flips = data.evaluate_scenario(flips=True, **inp)
        unfit = (
            "" if result.fits else " (of a step that does not fit in GPU memory: make it fit first)"
        )
        # the flips move the comm-vs-compute balance (Scenario._flips); where the verdict is
        # set by the exposed share instead (comms-bound with the all-reduce shorter than the
        # compute), a flip "makes it comms-bound" of a step already comms-bound: said so, as
        # `costmodel scenario` leaves its flip lines out there
        from costmodel.scenario import balance

        if balance(result.comm_s, result.compute_s) != result.bound:
            st.info(
                f"The verdict is {result.bound}-bound by the exposed communication "
                f"({result.exposed_comm_s / result.step_time_s:.0%} of the step, over "
                f"{EXPOSED_SIGNIFICANT:.0%}) while the all-reduce is shorter than the compute: "
                f"the changes below move that balance, not the verdict{unfit}.",
                icon=":material/swap_vert:",
            )
        elif flips.flip is not None:
            (st.success if result.fits else st.warning)(
                f"Smallest change that flips the comm-vs-compute balance (the lesson's verdict):"
                f" **{flips.flip.description}**{unfit}",
                icon=":material/swap_vert:",
            )
        else:
            st.info(f"No change within reach flips the comm-vs-compute balance{unfit}.")
    scaling = data.evaluate_scenario(scaling=True, **inp).scaling_frame()
    if inp["strategy"] == "ddp":
        tried = pd.DataFrame([f.model_dump() for f in flips.flips])
        table(
            tried,
            "verdict_flips.csv",
            key="flips",
            on_demand=True,
            cards=True,
            caption="Each change tried, and whether it flips (the comm-vs-compute balance)",
            # "yes"/"no" as the strategy and scaling tables' "fits", not Python's True/False
            # (the CSV keeps the booleans)
            shown=tried.assign(flips=tried["flips"].map({True: "yes", False: "no"}))
            if len(tried)
            else None,
        )
    table(
        scaling.assign(fits=scaling["fits"].map({True: "yes", False: "NO"})).rename(
            columns={
                "step_time_s": "step [s]",
                "comm_s": "communication [s]",
                "exposed_comm_s": "exposed [s]",
                # fractions shown as percentages, as the metrics above (common.column_formatter)
                "efficiency": "scaling efficiency [fraction]",
                "compute_share": "compute share of the step [fraction]",
                "tokens_per_s": "tokens/s",
                "memory_bytes": "memory per GPU [B]",  # as the strategy table says it
            }
        ),
        "scaling.csv",
        key="scaling",
        on_demand=True,
        cards=True,
        caption="Step time and scaling efficiency (vs one GPU) vs node count",
    )
    # every interval of the step (hundreds of rows, the page's largest message): sent once the
    # expander is opened
    box = on_open(
        f"The timeline, interval by interval ({len(result.timeline):,} intervals)",
        key="timeline_open",
    )
    if box is not None:
        with box:
            # each phase's time first (a dozen rows at most), then the intervals: on a phone
            # a card per interval was 144,000 px of page for a 70B model under FSDP, so a phone
            # shows the first TIMELINE_PHONE_ROWS of them (the grid and the CSV hold them all)
            st.caption("Each phase of the step: its intervals, from the first to the last, busy")
            text_cards(data.timeline_phases(result.timeline), key="timeline_phases")
            table(
                pd.DataFrame(result.timeline),
                "timeline.csv",
                key="timeline",
                caption="The timeline (seconds from the start of the step)",
                # an interval per card on a phone: 9 columns scrolled 853 px in the grid's 322
                cards=True,
                phone_rows=TIMELINE_PHONE_ROWS,
            )


@st.cache_data(show_spinner=False, max_entries=32)
def _strategy_rows(**inp) -> dict:
    """Every strategy of this job ranked (costmodel.strategy.advisor.advise): its
    ``Advice.as_dict()`` (the rows, and which are within the expected error of the fastest)."""
    from costmodel import presets
    from costmodel.strategy.advisor import advise

    a = advise(
        inp["params"],
        arch=inp["arch"],
        cluster=presets.cluster(
            inp["cluster"],
            nodes=int(inp["nodes"]),
            gpus_per_node=inp["gpus_per_node"],  # a slice, as the step's (the CLI's advisor too)
            power_limit_w=inp["power_limit_w"],
        ),
        nodes=int(inp["nodes"]),
        model=inp["model"],
        recipe="mixed-adam",
        micro_batch=int(inp["local_batch"]),
        sequence_length=int(inp["sequence_length"]),
        accumulation=int(inp["accumulation"]),
        no_sync=bool(inp["no_sync"]),
        mfu=None if inp["compute_time_s"] else inp["mfu"],
        compute_time_s=parse_duration(inp["compute_time_s"]) if inp["compute_time_s"] else None,
        recompute=inp["recompute"],
        loss=inp["loss"],
        flash_attention=inp["flash_attention"],
        bucket_cap_bytes=inp["bucket_cap_bytes"],  # None: each strategy's default bucket
        comm_contention=inp["comm_contention"],
        cuda_context_bytes=inp["cuda_context_bytes"],  # each strategy's memory and fit with them
        fragmentation=inp["fragmentation"],
    )
    return a.as_dict()


def _strategies(inp: dict) -> None:
    """The strategy advisor: every strategy with its memory, fit, step and tokens/s."""
    st.subheader("Every strategy, ranked")
    with section("Strategy advisor"):
        from costmodel.strategy.advisor import rank_labels, vs_fastest

        advice = _strategy_rows(**inp)
        rows = advice["strategies"]
        frame = pd.DataFrame(
            [
                {
                    # the tie with the fastest ranks "1=": no 1, 2, 3 inside the expected error
                    "rank": rank,
                    "strategy": r["layout"],  # the layout's name: hsdp g=8
                    "memory per GPU": format_bytes(r["memory_bytes"]),
                    "fits": "yes" if r["fits"] else "NO",
                    "step": format_duration(r["step_time_s"]),
                    # "447–590 ms": one line of a phone's card ("447 ms - 590 ms" took three)
                    "band": duration_range(r["step_time_lo_s"], r["step_time_hi_s"]),
                    "tokens/s": format_count(r["tokens_per_s"]),
                    "bound": r["bound"],
                    "vs fastest": vs_fastest(r),
                }
                for r, rank in zip(rows, rank_labels(rows), strict=True)
            ]
        )
        # a winner only when it wins: the tie, or the winner with its margin (the CLI's line)
        st.caption(f"**Which strategy:** {advice['verdict']}.")
        table(
            frame,
            "strategies.csv",
            key="strategies",
            on_demand=True,
            cards=True,
            caption="Ranked by step time among the strategies that fit, then the rest by memory "
            f"(overlap contention c = {inp['comm_contention']:g}; the same as "
            "`costmodel step --strategy all`).",
        )


def _does_not_fit(inp: dict, result) -> None:
    """Say first that the setup cannot run, and the cheapest changes that make it fit."""
    with section("What makes it fit"):
        fa = data.fit_suggestions(**inp)
        shown, card = format_bytes_pair(result.memory_total_bytes, result.gpu_memory_bytes)
        st.warning(
            f"Does not fit: {shown} per GPU > {card}. The step and the cost below are for a "
            "configuration that cannot run.",
            icon=":material/memory:",
        )
        ok = [ch for ch in fa.changes if ch.fits][:5]
        if ok:
            st.markdown(
                "Changes that make it fit, cheapest first (GPU-time per token on this "
                "hardware; a larger card last, its cost is its price):\n\n"
                + "\n".join(
                    f"- **{ch.change}**: "
                    f"{format_bytes_pair(ch.step.memory_bytes, ch.step.gpu_memory_bytes)[0]} "
                    "per GPU, step "
                    f"{format_duration(ch.step.step_time_s)} "
                    f"({format_change(ch.step.step_time_s / fa.base.step_time_s - 1)})"
                    # a card with no fitted compute: its band unknown, as its step says
                    + (f"; {note}" if (note := ch.compute_note(fa.base)) else "")
                    for ch in ok
                )
            )
        else:
            st.markdown("None of the changes tried fits.")


#: The rate the cost is shown at while the USD-per-GPU-hour box is empty: a placeholder, not a
#: price anyone gave (the box shows it greyed; a typed 2.00 is the user's)
DEFAULT_USD_PER_GPU_HOUR = 2.0


def _price_input(
    col,
    gpu: str,
    key: str,
    label: str,
    usd_key: str,
    same: tuple | None = None,
    start: str | None = None,
):
    """A price preset published for ``gpu`` (never another GPU's), or USD per GPU-hour typed.
    Returns ``(price name or None, usd or None, usd_source)``.

    ``same``: A's ``(price, usd, usd_source)`` when this is B's box on A's GPU: the box then
    offers "same as A" first, its default (B rents at A's price until another is picked: two
    H100 clusters of two clouds priced apart, as the CLI's ``scenario --vs ... --price-b``).
    ``start``: the preset the box starts on, listed first (B's box on another GPU than A's:
    the CLI's default for B, :func:`costmodel.training.default_price`, first as "same as A" is
    on A's GPU); else it starts on "custom".

    The box starts empty, with the placeholder rate as its grey placeholder text: while it is
    empty the cost is computed at :data:`DEFAULT_USD_PER_GPU_HOUR` with ``usd_source``
    ``"default"`` (the cost note and the metric's help say "placeholder", not "given by the
    user"); any number typed, the placeholder's own 2.00 too, is ``"user"``. A box that
    started at 2.00 could not tell a typed 2.00 from the untouched default."""
    prices = training.published_prices(gpu)
    first = (SAME,) if same is not None else (start,) if start in prices else ()
    name = bound_choice(
        col,
        "selectbox",
        label,
        (*first, "custom", *(p for p in prices if p not in first)),
        key=key,
        help=(f"{SAME}: B rents at A's price (A's GPU, {gpu}); or " if same is not None else "")
        + (
            f"cited list prices published for {gpu}, with their dates; the caption under the "
            "cost names the chosen one's source (its sites: the vendor's page, or a third "
            "party's dump or transcription; the full citation in `costmodel archs --json`)"
            if prices
            else f"no cited price is published for {gpu}: type USD per GPU-hour"
        ),
    )
    if name == SAME and same is not None:
        return same
    if name != "custom":
        return name, None, "user"
    usd = bound_number(
        col,
        _usd_label(gpu),
        value=None,
        step=0.1,
        key=usd_key,
        box_bounds=False,  # a price out of range, typed or linked: refused with the cost
        # in the library's range and words (_training_cost), as --usd-per-gpu-hour
        placeholder=f"{format_usd_rate(DEFAULT_USD_PER_GPU_HOUR)} (placeholder)",
        help=f"Empty: the cost is shown at a ${format_usd_rate(DEFAULT_USD_PER_GPU_HOUR)} placeholder, "
        "labelled as such, until you type your price"
        + (f" or pick one of the {len(prices)} published for {gpu}" if prices else ""),
    )
    if usd is None:
        return None, DEFAULT_USD_PER_GPU_HOUR, "default"
    return None, float(usd), "user"


def _usd_label(gpu: str) -> str:
    """The label of the typed price's box for ``gpu`` (A's and B's): a refused price is named
    by it (:func:`_training_cost`), not by the API's ``usd_per_gpu_hour``."""
    return f"USD per GPU-hour ({gpu})"


def _follow_default(key: str, start: str | None) -> None:
    """A box whose default follows another box (B's price preset follows A's provider and
    terms) and still shows its previous default moves to the new one, as a link to the view
    would open it (the URL leaves a box at its default out); one the user moved elsewhere
    stays. The default shown last is kept under ``_<key>_start``. The box is moved through
    ``st.session_state``, so the browser's box shows it too (a new default alone leaves a
    drawn box as it was); its default is its first option, so Streamlit sees no default
    beside the state set."""
    kept = f"_{key}_start"
    before = st.session_state.get(kept)
    st.session_state[kept] = start
    if before is not None and start is not None and before != start:
        if st.session_state.get(key) == before:
            st.session_state[key] = start


def _price_source(cost, price: str | None, source: str) -> tuple[str, Literal["off", "inverse"]]:
    """Where the cost's price came from, in a few words under the number, and the colour of
    those words (``st.metric``'s ``delta_color``): the preset's date and name (the CLI's
    ``train --price`` line says the same; the date first, so that a narrow column never hides
    it), the user's typed rate, or the placeholder in red."""
    if price is not None:
        return f"{cost.price_date} prices, {price}", "off"
    if source == "default":
        return (
            f"${format_usd_rate(cost.usd_per_gpu_hour)}/GPU-hour placeholder, not a price",
            "inverse",
        )
    return f"${format_usd_rate(cost.usd_per_gpu_hour)}/GPU-hour, your price", "off"


def _placeholder_warning(gpu: str, what: str) -> None:
    """The warning beside a cost computed at the placeholder rate: it is no price anyone gave,
    and which prices are published for ``gpu`` (the presets ``costmodel train --price`` takes
    for it, :func:`costmodel.training.prices_for_gpu`), with their names and dates."""
    names = training.published_prices(gpu)
    if names:
        by_rate = sorted((training.load_price(n) for n in names), key=lambda p: p.usd_per_gpu_hour)
        lo, hi = by_rate[0], by_rate[-1]
        offer = (
            f"Prices published for {gpu}: ${format_usd_rate(lo.usd_per_gpu_hour)} ({lo.name}, {lo.date}) to "
            f"${format_usd_rate(hi.usd_per_gpu_hour)} ({hi.name}, {hi.date}) per GPU-hour, "
            f"{format_counted(len(names), 'preset')} in the Price box: pick one or type yours."
        )
    else:
        offer = f"No price is published for {gpu}: type yours (USD per GPU-hour)."
    st.warning(
        f"{what} at a ${format_usd_rate(DEFAULT_USD_PER_GPU_HOUR)} per GPU-hour placeholder: not a published "
        f"price and not one you gave. {offer}",
        icon=":material/payments:",
    )


def _cost_metrics(
    cost,
    side: str = "",
    result=None,
    source: str = "user",
    price: str | None = None,
    placeholder_warning: tuple[str, str] | None = None,
) -> None:
    """Days, GPU-hours, dollars (with the price's source under the number: the preset's name
    and date, the user's rate, or the placeholder) and MFU of one side; ``result`` (the side's
    step) says why a predicted step's band is unknown, never left out silently; ``source``:
    where a typed price came from (:func:`_price_input`); ``price``: the preset chosen;
    ``placeholder_warning``: (GPU, what is costed) of :func:`_placeholder_warning`, shown
    right under the number when the cost is at the placeholder rate (None: no warning here,
    e.g. the one above the costs says it)."""
    # the one definition of the API and the CLI (Scenario.flops_definition): a bare count's
    # MFU is not 6N here and 6N + attention in the step's compute source
    flops = (
        result.scenario.flops_definition()
        if result is not None
        else "6N + attention of the architecture, PaLM appendix B"
    )
    m = st.columns(4)
    # the wall clock in the unit its size reads best in, as the CLI's train writes it (548 ms,
    # 11.6 h, 48.4 days): a run of seconds is not "0.0000063" days
    wall_s = cost.wall_s
    m[0].metric(f"Wall clock{side}", format_elapsed(wall_s))
    m[1].metric(
        f"GPU-hours{side}",
        format_gpu_hours(cost.gpu_hours),
        # a node slice: the GPU-hours used, and those paid for (the CLI's billed_gpu_hours)
        help=f"GPU-hours used; paid for: {format_gpu_hours(cost.billed_gpu_hours)} "
        f"({cost.billing_note})"
        if cost.billing_note
        else None,
    )
    when = (
        f"prices as of {cost.price_date}"
        if cost.price_date
        else "placeholder price: pick a published one or type yours"
        if source == "default"
        else "price given by you"
    )
    said, colour = _price_source(cost, price, source)
    m[2].metric(
        f"Cost{side} [USD]",
        format_usd(cost.cost_usd),
        help=when + (f"; {cost.billing_note}" if cost.billing_note else ""),
        delta=said,
        delta_color=colour,
        delta_arrow="off",
    )
    m[3].metric(
        (
            "MFU implied by the measured step"
            if cost.step_time_source == "measured"
            else "MFU at the predicted step"
        )
        + side,
        format_mfu(cost.mfu, sep=" "),
    )
    if source == "default" and price is None and placeholder_warning is not None:
        _placeholder_warning(*placeholder_warning)
    db, hb, cb = cost.wall_days_band, cost.gpu_hours_band, cost.cost_usd_band
    unit = elapsed_unit(wall_s)  # the band in the wall clock's unit, as the CLI's
    band = (
        f" Expected-error band (the step's): {format_elapsed_in(db[0] * training.SECONDS_PER_DAY, unit)}-"
        f"{format_elapsed_in(db[1] * training.SECONDS_PER_DAY, unit)} {unit[1]}"
        # the GPU-hours' band too, as the CLI's train prints it beside the same figure
        + (f", {format_gpu_hours(hb[0])}-{format_gpu_hours(hb[1])} GPU-hours" if hb else "")
        + (f", ${format_usd(cb[0])}-${format_usd(cb[1])}" if cb is not None else "")
        + (
            f", extrapolated beyond {result.band_extrapolated_beyond}"
            if result is not None and result.band_extrapolated
            else ""
        )
        + "."
        if db is not None
        else f" Expected-error {why}."
        if result is not None
        and cost.step_time_source != "measured"
        and (
            why := band_note((result.step_time_lo_s, result.step_time_hi_s), result.compute_source)
        )
        else ""
    )
    st.caption(
        f"{side.strip() + ': ' if side else ''}{format_counted(int(cost.steps), 'step')} of "
        f"{format_token_count(cost.tokens_per_step)} tokens at {format_duration(cost.step_time_s)} "
        f"({cost.step_time_source}) on {format_counted(cost.ranks, 'GPU')}; {cost.price_note}.{band} MFU: "
        f"model FLOPs per token ({flops}) x tokens/s / (GPUs x the dense peak of the compute "
        f"precision{', ' + result.scenario.compute_precision if result is not None else ''})."
    )
    if cost.billing_note and cost.cost_usd is not None:  # a node slice: the node is paid whole
        st.caption(
            f"Cost{side}: {cost.billing_note}, so the dollars are of "
            f"{format_gpu_hours(cost.billed_gpu_hours)} GPU-hours billed, not the "
            f"{format_gpu_hours(cost.gpu_hours)} used."
        )
    if cost.price_warning:
        st.warning(page_words(cost.price_warning))
    notes(cost.notes)  # those the step above said already are not repeated


def _measured_beside_predicted(measured_s: float, result, rb) -> None:
    """The warning above A's and B's costs when A's are at a measured step: the box is A's, so
    B's days and dollars are at B's predicted step, and the two sides differ by the measurement
    as well as by the configuration (a measured 900 ms beside B's predicted 537 ms read as B 40%
    cheaper, where both predicted steps were 534-537 ms). A's predicted step is named, the one
    to set B's beside."""
    st.warning(
        f"A's time and cost are at your measured step ({format_duration(measured_s)}), B's at "
        f"its predicted step ({format_duration(rb.step_time_s)}): the two costs differ by the "
        f"measurement as well as by the configuration. A's predicted step is "
        f"{format_duration(result.step_time_s)}; empty the {MEASURED_BOX} box to compare "
        "predicted with predicted.",
        icon=":material/compare_arrows:",
    )


def _tokens(text: str, name: str) -> float:
    """Tokens to train, within the one limit every surface has (``--tokens``: 1..1e16), in
    the token grammar of ``train --tokens`` (:func:`costmodel.units.parse_tokens`: ``2T``,
    ``300B``, ``2Ti`` = 2 x 2^40); the box read it as a bare count, which refused ``2Ti``."""
    from costmodel._limits import LIMITS

    LIMITS["tokens"].check(name, text.strip())
    return float(parse_tokens(text.strip(), name=name))


def _training_cost(result, inp: dict, rb=None) -> None:
    """Time and cost to train at the predicted step time, or at a measured one; B's too."""
    st.subheader("Time and cost to train")
    if not result.fits:
        st.warning(
            ("Configuration A does" if rb is not None else "This configuration does")
            + " not fit in GPU memory: the time and cost below are for a setup that cannot run "
            "(see the changes above).",
            icon=":material/warning:",
        )
    if rb is not None and not rb.fits:
        _b_does_not_fit(rb, "its time and cost below are")
    gpu = result.scenario._validated_cluster().gpu.name
    gpu_b = rb.scenario._validated_cluster().gpu.name if rb is not None else None
    # no empty column: on a phone it stacks into 16 px of nothing (B's price takes the third)
    c = st.columns(4 if gpu_b is not None else 3)
    tokens_text = c[0].text_input(
        "Tokens to train", value="1T", key="ddp_tokens", bind=QP, help="e.g. 2T, 300B"
    )
    price_name, usd, source = _price_input(c[1], gpu, "ddp_price", "Price", "ddp_usd")
    price_b, usd_b, source_b = price_name, usd, source
    if gpu_b is not None:  # B's own price: on A's GPU "same as A" by default, else B's GPU's
        same_gpu = gpu_b == gpu
        # on another GPU: the preset the CLI's scenario --vs prices B at without --price-b
        start = None if same_gpu else training.default_price(gpu_b, like=price_name)
        _follow_default("ddp_price_b", start[0].name if start is not None else None)
        price_b, usd_b, source_b = _price_input(
            c[2],
            gpu_b,
            "ddp_price_b",
            "Price (B)" if same_gpu else f"Price (B, {gpu_b})",
            "ddp_b_usd",
            same=(price_name, usd, source) if same_gpu else None,
            start=start[0].name if start is not None else None,
        )
        if start is not None and price_b == start[0].name:  # which preset, why, of when
            c[2].caption(
                f"Default for {gpu_b}: {start[0].name} ({start[0].date} prices), "
                + start[1].replace(", as ", ", as A's ")
            )
    b_own_price = gpu_b == gpu and (price_b, usd_b, source_b) != (price_name, usd, source)
    measured_text = c[-1].text_input(
        f"{MEASURED_BOX} (optional)",
        value="",
        key="ddp_measured_step",
        bind=QP,
        help="e.g. 1.2s: days and cost at the measured step, and the MFU it implies",
    )
    two_gpus = gpu_b is not None and gpu_b != gpu
    if two_gpus and "default" in (source, source_b):
        placeholder = [
            f"{side} ({g})"
            for side, g, src in (("A", gpu, source), ("B", gpu_b, source_b))
            if src == "default"
        ]
        # one side at the placeholder, the other at its price: the two do not rent "for that
        # price" alike (the warning said so of an A at $6.88 beside a B at the $2 placeholder)
        why = (
            f"the two costs compare {gpu} and {gpu_b} as if they rented for the same price. "
            "Pick a published price for each GPU or type yours to compare dollars."
            if len(placeholder) == 2
            else "not a price, so its dollars against the other side's priced ones say "
            f"nothing about {gpu} against {gpu_b}. Pick a published price for "
            f"{gpu if source == 'default' else gpu_b} or type yours to compare dollars."
        )
        st.warning(
            f"{' and '.join(placeholder)} {'is' if len(placeholder) == 1 else 'are'} costed at "
            f"the ${format_usd_rate(DEFAULT_USD_PER_GPU_HOUR)} per GPU-hour placeholder: {why}",
            icon=":material/payments:",
        )
    tokens = parse_input("Tokens to train", _tokens, tokens_text)
    measured = (
        parse_input(MEASURED_BOX, within_limit("step_time", parse_duration), measured_text)
        if measured_text.strip()
        else None
    )
    if tokens is None or (measured_text.strip() and measured is None):
        return
    if measured is not None:  # "1200" is 1,200 s, as the CLI's train --step-time 1200 warns
        bare_number_warning(c[-1], "Measured step time", measured_text, "seconds", "ms")
        if rb is not None:  # the box is A's: B is costed at its predicted step
            _measured_beside_predicted(measured, result, rb)
    # a refused measured step names its box: training_cost calls it step_time_s, the API's
    # Scenario.training_cost measured_step_time_s; a predicted step's refusal is not the box's
    box = {"step_time_s": MEASURED_BOX, "measured_step_time_s": MEASURED_BOX}
    # a typed price past the library's range is refused under its box, A's or B's (each side's
    # cost in its own section: B's refused price leaves A's time and cost on the page)
    usd_box = {"usd_per_gpu_hour": _usd_label(gpu)}
    with section("Time and cost to train", {**usd_box, **(box if measured is not None else {})}):
        cost = result.training_cost(
            tokens,
            usd_per_gpu_hour=usd,
            price=price_name,
            measured_step_time_s=measured,
            usd_source=source,
        )
        # a placeholder is flagged under its number, unless the warning above (two GPUs at
        # one placeholder rate) says it already; B at A's price shares A's warning
        both = "Cost" if rb is None else "Cost (A)" if b_own_price else "Costs (A) and (B)"
        _cost_metrics(
            cost,
            " (A)" if rb is not None else "",
            result,
            source,
            price_name,
            None if two_gpus else (gpu, both),
        )
    if rb is not None and gpu_b is not None:
        with section("Time and cost to train (B)", {"usd_per_gpu_hour": _usd_label(gpu_b)}):
            cost_b = rb.training_cost(
                tokens, usd_per_gpu_hour=usd_b, price=price_b, usd_source=source_b
            )
            _cost_metrics(
                cost_b, " (B)", rb, source_b, price_b, (gpu, "Cost (B)") if b_own_price else None
            )


if __name__ == "__main__":
    render()
