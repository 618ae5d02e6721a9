"""Memory: does the model fit on one GPU, and how many ranks does sharding need?"""

from __future__ import annotations

from typing import Any

import streamlit as st

from costmodel import architecture, memory, plots
from costmodel.hardware import DEFAULT_GPUS_PER_NODE, default_ranks
from costmodel.strategy.layout import STRATEGY_OF_STAGE
from costmodel.strategy.memory import fit_notes, memory_notes
from costmodel.units import (
    format_bytes,
    format_bytes_pair,
    format_count,
    format_tokens_by_micro_batch,
)
from costmodel.web import data
from costmodel.web.common import (
    CONTEXT_BOX,
    GRAD_DTYPE_BOX,
    PARAM_DTYPE_BOX,
    QP,
    bound_choice,
    bound_number,
    bound_switch,
    chart,
    check_boxes,
    comm_dtype_boxes,
    context_bytes,
    error,
    gpu_choice,
    headline,
    headline_text,
    notes,
    overhead_boxes,
    page_header,
    params_count,
    parse_input,
    section,
    sentence,
    table,
    whole_from_text,
)
from costmodel.web.common import CUSTOM as CUSTOM_GPU
from costmodel.web.own_model import OWN, describe, upload_arch
from costmodel.web.scope import OUT_OF_SCOPE

#: Largest parameter count the page takes [-]: the DDP page's bound (``Scenario.params``,
#: ``le=1e15``), about 1,000x the largest dense model published (~1e12, 2024).
MAX_PARAMS = 1e15

STAGE_LABELS = {0: "0 (DDP)", 1: "1 (optimizer)", 2: "2 (+ gradients)", 3: "3 (FSDP)"}


CUSTOM = "custom (parameter count)"
SAME = "same as A"
#: The ranks boxes, with the unit the Batch and Collectives pages give ranks ("Data-parallel
#: ranks N [GPUs]", "Ranks N [GPUs]"): this page's said no unit.
RANKS_BOX = "Data-parallel ranks N [GPUs]"
RANKS_BOX_B = "Data-parallel ranks (B) [GPUs]"
GROUP_BOX_B = "HSDP group (B) [GPUs]"
RECIPE_BOX_B = "Precision recipe (B)"

#: Recomputation modes a typed shape (layers, hidden, heads) is sized under: torchtitan's
#: selective-layer keeps half the attention scores in ``memory.activation_bytes``, which
#: FlashAttention does not store, and that formula has no FlashAttention switch; a named model
#: sizes every mode of :data:`costmodel.architecture.RECOMPUTE_MODES` with either.
SHAPE_RECOMPUTE = ("none", "selective", "full")


def _inputs() -> dict:
    archs = (CUSTOM, OWN, *architecture.arch_names())
    c1, c2, c3 = st.columns(3)
    arch = bound_choice(
        c1,
        "selectbox",
        "Model",
        archs,
        key="arch",
        help="A published architecture (its shape gives the parameters and the activations), "
        "your own model's Hugging Face config.json, or a bare parameter count (the dense "
        "transformer of that size, architecture_for_params, as the step page prices it; its "
        f"memory is the model state, as `costmodel memory --params`). {OUT_OF_SCOPE}",
    )
    a: architecture.Architecture | None
    if arch == OWN:
        upload = upload_arch(c1, "arch_config")  # the CLI's --arch path/config.json reader
        if upload is None:
            st.stop()
        a = upload[0]
    else:
        a = None if arch == CUSTOM else architecture.load_arch(arch)
    if a is None:
        params_text = c1.text_input(
            "Parameters P", value="7B", key="params", bind=QP, help="e.g. 7B, 1.3B, 350M, 70e9"
        )
        params = parse_input("Parameters P", params_count, params_text)
    else:
        params = float(a.params)
        if arch != OWN:
            describe(a, c1)
    recipe = bound_choice(c2, "selectbox", "Precision recipe", tuple(memory.RECIPES), key="recipe")
    st.caption(
        f"{recipe}: {memory.RECIPES[recipe].description} "
        f"({memory.RECIPES[recipe].bytes_per_param:g} B/param). "
        f"Source: {memory.RECIPES[recipe].source}"
    )
    # one node, the default of every surface (hardware.default_ranks: the page has a GPU, not
    # a cluster, so 8, the default cluster's node, as `costmodel memory` without --cluster)
    ranks = bound_number(c3, RANKS_BOX, value=default_ranks(), step=1, key="dp_ranks")
    c1, c2, c3 = st.columns(3)
    stage = bound_choice(
        c1,
        "radio",
        "ZeRO stage",
        memory.ZERO_STAGES,
        format_func=STAGE_LABELS.get,
        horizontal=True,
        key="zero_stage",
    )
    gpu = gpu_choice(c2)
    layout3 = _zero3_layout(c3, stage)
    bucket_view = _ddp_bucket_view(c3, stage)
    # the dtypes the collectives move and the bucket, as the step prices them (CLI --param-dtype,
    # --grad-dtype, --bucket): a switch, its boxes once on (one element on the first view)
    dtypes = comm_dtype_boxes(c3, prefix="mem", bucket=True)
    shape = _count_shape(params) if a is None else None
    if a is None:
        # a bare count: the model state alone by default, as `costmodel memory --params` and
        # the step size it (one road: the same count, the same memory per GPU on every surface)
        with_act = bound_switch(
            st,
            "checkbox",
            "Add activations of a transformer shape (Korthikanti et al. 2022 eq. 1)",
            value=False,
            key="shape_activations",
            help="Off by default: a bare parameter count is sized as `costmodel memory --params` "
            "and the step page size it, the model state alone (a count gives no shape to size "
            "activations from). On: the activations of the layers, hidden size and heads "
            "entered below (by default the dense transformer the count stands for, "
            "architecture_for_params), which the step and the CLI do not add",
        )
    else:
        with_act = bound_switch(
            st,
            "checkbox",
            "Include activations (Korthikanti et al. 2022)",
            value=True,
            key="activations",
            help="On by default: a verdict without activations says a model fits that does not",
        )
    r = st.columns(5)
    # the activation recipe sizes nothing without activations (a bare count's default, as
    # `costmodel memory --params`, which refuses --seq and the rest): greyed then, as Heads is
    idle = not with_act
    seq = bound_number(
        r[0],
        "Sequence length [tokens]",
        value=4096,
        step=1,
        key="act_seq",
        disabled=idle,
        tokens=True,
    )
    micro = bound_number(
        r[1], "Local batch per GPU [samples]", value=1, step=1, key="micro", disabled=idle
    )
    recompute = bound_choice(
        r[2],
        "selectbox",
        "Recompute",
        # a named model: every mode of `costmodel memory --arch --recompute` and the step page;
        # a typed shape: the three its per-layer formula sizes with and without FlashAttention
        architecture.RECOMPUTE_MODES if a is not None else SHAPE_RECOMPUTE,
        key="recompute",
        not_offered="for a named model" if a is not None else "for a custom model",
        disabled=idle,
    )
    flash = bound_switch(
        r[3],
        "checkbox",
        "FlashAttention",
        value=True,
        key="flash",
        disabled=idle,
        help="FlashAttention (Dao et al. 2022) keeps no s x s attention scores: "
        "the 5 a s^2 b term of eq. (1) drops, as with selective recomputation",
    )
    loss = bound_choice(
        r[4],
        "selectbox",
        "Loss",
        architecture.LOSS_MODES,
        key="loss",
        # a custom shape has no vocabulary, so no logits for the loss to size
        disabled=a is None or idle,
        help="How the loss is computed, which sizes its logits (named models only: a custom "
        "shape has no vocabulary): fp32 = "
        "cross_entropy(logits.float()), 12 B per logit at its peak; fused = a fused or compiled "
        "loss, 4 B; fp32-held = fp32 logits kept through backward, 16 B",
    )
    layers = hidden = heads = None
    if a is None:
        st.caption(_custom_note(params, shape, bool(with_act)))
    if a is None and with_act:
        r3 = st.columns(3)
        # empty boxes: the shape of the transformer the count stands for (architecture_for_params,
        # the step's shape); a number typed replaces its part
        dims: dict[str, int | None] = {"layers": None, "hidden": None, "heads": None}
        if shape is not None:
            dims = {"layers": shape.layers, "hidden": shape.hidden, "heads": shape.heads}
        layers = bound_number(
            r3[0],
            "Layers",
            value=None,
            step=1,
            key="layers",
            placeholder=_placeholder(dims["layers"]),
            help=_SHAPE_HELP,
        )
        hidden = bound_number(
            r3[1],
            "Hidden size",
            value=None,
            step=1,
            key="hidden",
            placeholder=_placeholder(dims["hidden"]),
            help=_SHAPE_HELP,
        )
        heads = bound_number(
            r3[2],
            "Heads",
            value=None,
            step=1,
            key="heads",
            placeholder=_placeholder(dims["heads"]),
            # the heads enter only the 5 a s^2 b scores, which both of these drop
            disabled=flash or recompute != "none",
            help="Attention heads a: used only for the 5 a s^2 b attention scores of eq. (1), "
            "which FlashAttention and recomputation (selective or full) do not keep. "
            + _SHAPE_HELP,
        )
        if dims["heads"] is None and (flash or recompute != "none"):
            dims["heads"] = 1  # a disabled box the formula does not read: any divisor of h
        typed = {"layers": layers, "hidden": hidden, "heads": heads}
        missing = [k for k, v in typed.items() if v is None and dims[k] is None]
        if missing:  # a count outside the dense shapes' range has no shape to fall back on
            label = {"layers": "Layers", "hidden": "Hidden size", "heads": "Heads"}[missing[0]]
            error(
                f"{label}: enter it; {format_count(params) if params else 'this count'} "
                "has no dense transformer shape (architecture_for_params covers 1e6 to 1e13 "
                "parameters)"
            )
            st.stop()
        layers, hidden, heads = (dims[k] if v is None else v for k, v in typed.items())
        greyed = typed["heads"] is None and (flash or recompute != "none")
        if greyed and hidden is not None and heads is not None and hidden % heads:
            # the Heads box greyed and empty (its scores are not kept): the count's default
            # heads (69 for 70B) refused a Hidden size typed as 8192, naming a box no one could
            # change; heads typed are the user's and stay checked
            heads = 1
    if with_act:
        st.caption(
            f"Activation recipe: {format_tokens_by_micro_batch(seq, micro)}, "
            f"{'FlashAttention' if flash else 'no FlashAttention'}, recompute {recompute}"
            + (
                # a named model is sized term by term with its own widths (gated MLP, GQA, its
                # logits): the GPT layer's 34 s b h of eq. (1) is not its number
                f", loss {loss}; each layer's tensors at the model's own widths, and its "
                "logits (Korthikanti et al. 2022 section 4.1). "
                if a is not None
                else "; bytes per layer s b h (34 + 5 a s / h), Korthikanti et al. 2022 eq. (1). "
            )
            + "'Fits' means the total below (state + activations + buckets + context + "
            "fragmentation) fits the card."
        )
    else:
        st.caption("Activations left out: the verdict below counts the model state only.")
    # the step page's boxes too (common.overhead_boxes): one label, default and range
    ctx_text, frag = overhead_boxes(context_key="context", fragmentation_key="fragmentation")
    recipe_act = (int(seq), int(micro), bool(flash), recompute)
    activation: tuple[object, ...] | None  # the cache key of data.activations_for
    if not with_act:
        activation = None
    elif a is not None:
        # an uploaded config's Architecture is its own cache key (it has no preset name)
        activation = ("arch", a if arch == OWN else a.name, *recipe_act, loss)
    else:
        activation = ("shape", layers, hidden, heads, *recipe_act)
    return {
        "params": params,
        "arch": a,
        "recipe": recipe,
        "ranks": ranks,
        "stage": stage,
        "layout3": layout3,
        "bucket_view": bucket_view,
        # the Layout's param_dtype, grad_dtype and bucket_cap_bytes set (None: a refused bucket)
        "dtypes": dtypes,
        "gpu": gpu,
        "activation": activation,
        "context": parse_input(CONTEXT_BOX, context_bytes, ctx_text),
        "fragmentation": frag,
        "recipe_act": recipe_act,
        "loss": loss,
    }


def _zero3_layout(where: object, stage: int) -> tuple[str, int | None, bool] | None:
    """ZeRO-3's layout, as ``costmodel memory --strategy`` takes it: fsdp, resharding after
    forward or not (``--reshard/--no-reshard``), or hsdp inside groups of a given size
    (``--group-size``; the page has a GPU, not a cluster, so the group is typed, 8 = one node
    of a DGX/HGX, as the step page's box). Shown at stage 3 only (None below it, so the first
    view, at ZeRO-0, is unchanged): (strategy, group or None, reshard)."""
    if stage != 3:
        return None
    strategy = bound_choice(
        where,
        "radio",
        "ZeRO-3 as",
        ("fsdp", "hsdp"),
        horizontal=True,
        key="mem_strategy",
        help="fsdp: the state sharded over all N ranks; hsdp: fsdp inside groups of the HSDP "
        "group's GPUs, replicated across groups (its state per GPU does not fall with N)",
    )
    group = None
    if strategy == "hsdp":
        group = int(
            bound_number(
                where,
                "HSDP group [GPUs]",
                value=DEFAULT_GPUS_PER_NODE,
                step=1,
                min_value=1,
                key="mem_group",
                limit="group_size",
                help="GPUs that shard one replica: a divisor of the ranks. The page has a GPU, "
                "not a cluster, so the group stands for the node, as `costmodel memory "
                "--group-size` without --cluster (memory_layout); on a cluster (the step page, "
                "`memory --cluster`, cm.Layout's 8-GPU node) it must also divide a node's GPUs "
                "or be whole nodes.",
            )
        )
    reshard = bound_switch(
        where,
        "checkbox",
        "reshard_after_forward (FULL_SHARD; off = SHARD_GRAD_OP)",
        value=True,
        key="mem_reshard",
        help="Off: every unit's gathered parameters stay from forward to backward (P x 2 B "
        "more per GPU in bf16), as `costmodel memory --no-reshard`",
    )
    return strategy, group, bool(reshard)


def _ddp_bucket_view(where: object, stage: int) -> bool:
    """DDP's ``gradient_as_bucket_view``, as ``costmodel memory --gradient-as-bucket-view``
    takes it: the gradients are views into DDP's all-reduce buckets, so ZeRO-0 (ddp) holds no
    bucket copy of them. Shown at stage 0 only (False above it: the option is ddp's, and the
    other stages' bars are as before); off by default, as PyTorch's."""
    if stage != 0:
        return False
    return bound_switch(
        where,
        "checkbox",
        "gradient_as_bucket_view (DDP)",
        value=False,
        key="mem_bucket_view",
        help="On: gradients are views into DDP's buckets, no bucket copy (`costmodel memory "
        "--gradient-as-bucket-view`). Off: PyTorch's default",
    )


def _layout(inp: dict) -> Any:
    """The :class:`costmodel.strategy.layout.Layout` the selected stage is sized as: the
    stage's strategy with ZeRO-3's or ZeRO-0's options and the communication dtypes set."""
    from costmodel.strategy.layout import make_layout

    stage, ranks = inp["stage"], int(inp["ranks"])
    kw = data.stage_layout(stage, ranks, inp.get("layout3"), inp.get("bucket_view", False))
    fields = {k: v for k, v in {**kw, **(inp.get("dtypes") or {})}.items() if v is not None}
    fields.setdefault("strategy", STRATEGY_OF_STAGE[stage])
    return make_layout(ranks=ranks, **fields)


def _layout_name(inp: dict) -> str:
    """The layout the selected stage is sized as, in the step's words (``hsdp g=8``,
    ``fsdp (no reshard)``, ``zero1``): :attr:`costmodel.strategy.layout.Layout.name`."""
    return str(_layout(inp).name)


def _card(name: str, capacity: float) -> str:
    """The card a verdict is against, as the page names it: ``"h100-sxm's 85.5 GB"``, or
    ``"a card of 80 GB"`` for a typed memory (:func:`costmodel.web.common.gpu_choice` names
    that one "custom"). The page always has a card, unlike ``costmodel memory`` (README,
    "Decisions and known limits"), so every verdict says which.

    >>> _card("h100-sxm", 85.5e9), _card("custom", 80e9)
    ("h100-sxm's 85.5 GB", 'a card of 80 GB')
    """
    if name == CUSTOM_GPU:
        return f"a card of {format_bytes(capacity)}"
    return f"{name}'s {format_bytes(capacity)}"


def _gpu_name(name: str, capacity: float) -> str:
    """The GPU in a label: the preset's name, or ``"custom 80 GB"`` for a typed memory.

    >>> _gpu_name("h100-sxm", 85.5e9), _gpu_name("custom", 80e9)
    ('h100-sxm', 'custom 80 GB')
    """
    return f"{CUSTOM_GPU} {format_bytes(capacity)}" if name == CUSTOM_GPU else name


#: The help of the shape boxes of a bare count.
_SHAPE_HELP = (
    "Empty: the dense transformer the count stands for (architecture_for_params, the shape the "
    "step page prices), shown greyed; a number typed replaces it"
)


def _placeholder(value: int | None) -> str:
    """What an empty shape box stands for: the count's shape, or a prompt when it has none.

    >>> _placeholder(41), _placeholder(None)
    ("41 (the count's shape)", 'enter a number')
    """
    return "enter a number" if value is None else f"{value} (the count's shape)"


def _count_shape(params: float | None) -> architecture.Architecture | None:
    """The dense transformer a bare count stands for, as the step prices it
    (:func:`costmodel.architecture.architecture_for_params`); None without a count or outside
    that function's range (there the step has equal blocks)."""
    if params is None:
        return None
    try:
        return architecture.architecture_for_params(params)
    except ValueError:
        return None


def _custom_note(params: float | None, shape: object, with_act: bool) -> str:
    """Which model a bare parameter count stands for, and what its memory holds: the dense
    transformer of that size (:func:`costmodel.architecture.architecture_for_params`, the
    shape the step page and ``costmodel step --params`` price, whose blocks are ZeRO-3's
    gathered units here too), and the model state alone, as ``costmodel memory --params`` and
    the step size a count, unless activations of a shape are added (which those do not)."""
    if shape is not None:
        d: architecture.Architecture = shape  # type: ignore[assignment]
        stands = (
            f"{format_count(d.published_params)} parameters stand for a dense transformer of {d.layers} "
            f"layers x hidden {d.hidden} ({d.heads} heads; architecture_for_params), the shape "
            "the step page prices, whose blocks are ZeRO-3's gathered units here too."
        )
    else:
        stands = (
            "this count has no dense transformer shape (the dense shapes cover 1e6 to 1e13 "
            "parameters): ZeRO-3's gathered units are equal blocks, as in the step."
        )
    sized = (
        "The activations below are those of the shape entered (empty boxes: that transformer's); "
        "`costmodel memory --params` and the step page add none to a bare count, so they give "
        "less: clear 'Add activations' for their number."
        if with_act
        else "Its memory is the model state alone, as `costmodel memory --params` and the step "
        "page size a bare count (the same number on all three); tick 'Add activations' to add "
        "a shape's activations."
    )
    return f"Custom model: {stands} {sized} Pick a named model to size its published shape."


def _pinned(inp: dict) -> dict | None:
    """The second configuration (B): A with another model, rank count, ZeRO stage or GPU.

    Every B widget is URL-bound ("same as A" stays out of the URL), so a shared link restores
    both. B's model is a named architecture (its activations come from its shape with A's
    sequence, micro-batch, recompute and FlashAttention choices); None when nothing is pinned.
    """
    pin = bound_switch(
        st,
        "toggle",
        "Compare with a second configuration (B)",
        value=False,
        key="mem_pin",
        help="Pin B: A with another model, rank count, ZeRO stage or GPU; both bars are drawn "
        "side by side and a table gives B - A part by part.",
    )
    if not pin:
        return None
    c = st.columns(4)
    arch = bound_choice(
        c[0], "selectbox", "Model (B)", (SAME, *architecture.arch_names()), key="mem_b_arch"
    )
    ranks_text = c[1].text_input(
        RANKS_BOX_B, value="", key="mem_b_ranks", bind=QP, placeholder=SAME
    )
    stage = bound_choice(
        c[2], "selectbox", "ZeRO stage (B)", (SAME, *memory.ZERO_STAGES), key="mem_b_zero"
    )
    gpus = (SAME, *data.preset_names("gpu"))
    gpu = bound_choice(c[3], "selectbox", "GPU (B)", gpus, key="mem_b_gpu")
    # B's own HSDP group while B is ZeRO-3 as hsdp: A's group of 8 on B's 4 ranks was refused
    # under A's box, the one change that could make B run being A's
    row = st.columns(4)
    # B's own recipe, as `scenario --vs recipe=mixed-adam`: A's fp8-mixed beside an A100 B was
    # refused (no fp8 tensor cores) under A's box, which only A could change
    recipe = bound_choice(
        row[0],
        "selectbox",
        RECIPE_BOX_B,
        (SAME, *memory.RECIPES),
        key="mem_b_recipe",
        help="B's precision/optimizer recipe; same as A by default.",
    )
    layout3 = inp.get("layout3")
    group_text = ""
    if (
        layout3 is not None
        and layout3[0] == "hsdp"
        and (inp["stage"] if stage == SAME else stage) == 3
    ):
        group_text = row[1].text_input(
            GROUP_BOX_B,
            value="",
            key="mem_b_group",
            bind=QP,
            placeholder=SAME,
            help="GPUs that shard one replica of B: a divisor of B's ranks. Empty: A's group.",
        )
    b = dict(inp)
    changed = False
    if arch != SAME:
        a = architecture.load_arch(arch)
        b.update(arch=a, params=float(a.params))
        if inp["activation"] is not None:
            b["activation"] = ("arch", a.name, *inp["recipe_act"], inp["loss"])
        changed = True
    if ranks_text.strip():
        n = whole_from_text(ranks_text, RANKS_BOX_B, "ranks")
        if n is None:
            return None
        b["ranks"], changed = n, True
    if stage != SAME:
        b["stage"], changed = stage, True
    if gpu != SAME:
        b["gpu"], changed = (gpu, float(data.gpu_memory_bytes(gpu))), True
    if recipe not in (SAME, inp["recipe"]):
        b["recipe"], changed = recipe, True
    if group_text.strip() and layout3 is not None:
        g = whole_from_text(group_text, GROUP_BOX_B, "group_size")
        if g is None:
            return None
        if g != layout3[1]:
            b["layout3"], changed = (layout3[0], g, layout3[2]), True
    if not changed:
        st.info(
            "B is the same as A: pick another model, rank count, ZeRO stage, GPU, recipe or "
            "HSDP group."
        )
        return None
    return b


def _recipe_runs_on(inp: dict, side: str = "") -> bool:
    """Whether the recipe can train on the configuration's GPU (an fp8 recipe needs fp8 tensor
    cores: :func:`costmodel.web.data.check_recipe_on_gpu`); else a red message naming the box,
    and False. ``side``: B's words (" (B)") in the section's name."""
    name = inp["gpu"][0]
    if name == CUSTOM_GPU:  # a typed memory names no GPU (`memory --gpu-memory`)
        return True
    ok = False
    # a refusal of the recipe on the GPU names the side's box, not the API's argument
    with section(f"GPU{side}", {"recipe": f"Precision recipe{side}"}):
        data.check_recipe_on_gpu(name, inp["recipe"])
        ok = True
    return ok


def _figures(inp: dict) -> dict:
    """Memory per GPU of one configuration at its ZeRO stage: parts, total, capacity, largest."""
    name, capacity = inp["gpu"]
    activations = 0.0
    if inp["activation"] is not None:
        activations = data.activations_for(*inp["activation"])
    kw = {
        "recipe": inp["recipe"],
        "activations_bytes": activations,
        "cuda_context_bytes": inp["context"],
        "fragmentation": inp["fragmentation"],
        **inp["dtypes"],
    }
    lay = inp.get("layout3")
    parts, totals, _ = data.memory_by_stage(
        inp["params"],
        int(inp["ranks"]),
        _arch(inp),
        layout3=lay,
        bucket_view=inp.get("bucket_view", False),
        **kw,
    )
    stage = inp["stage"]
    return {
        "parts": parts[parts["config"] == f"ZeRO-{stage}"],
        "total": totals[stage],
        "capacity": capacity,
        "gpu": name,
        "largest": data.max_params(
            capacity,
            stage,
            int(inp["ranks"]),
            layout3=lay,
            bucket_view=inp.get("bucket_view", False),
            **kw,
        ),
    }


def _model_notes(inp: dict) -> list[str]:
    """What a data-parallel answer leaves out for the configuration's model, as `costmodel
    memory` says it (:func:`costmodel.strategy.memory.memory_notes`, its activation line aside:
    the page's caption says it)."""
    seq_n = int(inp["recipe_act"][0]) if inp["activation"] else None
    return memory_notes("", inp["params"], inp["arch"], seq_n)[1:]


def _arch(inp: dict) -> object:
    """The architecture the gathered units are cut from: a preset's name (the step's key), an
    uploaded config's Architecture, or None for a bare parameter count."""
    a = inp["arch"]
    if a is None:
        return None
    return a if a.name not in architecture.arch_names() else a.name


def _label(inp: dict) -> str:
    model = inp["arch"].name if inp["arch"] is not None else format_count(inp["params"])
    stage = f"ZeRO-{inp['stage']}" + (f" as {_layout_name(inp)}" if inp["stage"] == 3 else "")
    return f"{model}, N = {int(inp['ranks'])}, {stage}, {_gpu_name(*inp['gpu'])}"


def _compare(inp: dict, inp_b: dict) -> None:
    """A and B side by side: the bars against each GPU's memory, and B - A part by part."""
    import pandas as pd

    if not _recipe_runs_on(inp_b, " (B)"):  # A's recipe on B's GPU: refused as on A's
        return
    b_boxes = {**_LAYOUT_BOXES, "group_size": GROUP_BOX_B}  # B's refusals name B's boxes
    if inp_b["ranks"] != inp["ranks"]:
        b_boxes.update(dp_ranks=RANKS_BOX_B, ranks=RANKS_BOX_B)
    with section("Configuration B", b_boxes):
        fa, fb = _figures(inp), _figures(inp_b)
        la, lb = f"A: {_label(inp)}", f"B: {_label(inp_b)}"
        st.subheader("A or B?")
        verdict = {True: "fits", False: "does NOT fit"}
        fits_a, fits_b = fa["total"] <= fa["capacity"], fb["total"] <= fb["capacity"]
        # green only when both fit: a side that does not fit is a warning, as on A's own view
        (st.success if fits_a and fits_b else st.warning)(
            f"A needs {format_bytes(fa['total'])} per GPU of {format_bytes(fa['capacity'])} "
            f"({verdict[fits_a]}); B needs {format_bytes(fb['total'])} "
            f"of {format_bytes(fb['capacity'])} ({verdict[fits_b]}).",
            icon=":material/compare_arrows:",
        )
        # what `costmodel memory` says beside B's numbers and not beside A's (B's 405B model
        # needs tensor and pipeline parallelism, B's mixture of experts expert parallelism)
        notes((n for n in _model_notes(inp_b) if n not in _model_notes(inp)), prefix="note (B): ")
        frame = pd.concat([fa["parts"].assign(config=la), fb["parts"].assign(config=lb)])
        chart(
            plots.memory_compare_figure(
                frame,
                capacities={la: fa["capacity"], lb: fb["capacity"]},
                title="Memory per GPU, A and B",
            ),
            key="chart_memory_compare",
        )
        pa = fa["parts"].set_index("part")["bytes"]
        pb = fb["parts"].set_index("part")["bytes"]
        rows = [
            {
                "part": part,
                "A": format_bytes(pa.get(part, 0.0)),
                "B": format_bytes(pb.get(part, 0.0)),
                "B - A": _signed(pb.get(part, 0.0) - pa.get(part, 0.0)),
            }
            for part in dict.fromkeys([*pa.index, *pb.index])
        ]
        rows += [
            {
                "part": "total per GPU",
                "A": format_bytes(fa["total"]),
                "B": format_bytes(fb["total"]),
                "B - A": _signed(fb["total"] - fa["total"]),
            },
            {
                "part": "GPU memory",
                "A": format_bytes(fa["capacity"]),
                "B": format_bytes(fb["capacity"]),
                "B - A": _signed(fb["capacity"] - fa["capacity"]),
            },
            {
                "part": "headroom",
                "A": _signed(fa["capacity"] - fa["total"]),
                "B": _signed(fb["capacity"] - fb["total"]),
                "B - A": _signed((fb["capacity"] - fb["total"]) - (fa["capacity"] - fa["total"])),
            },
            {
                "part": "largest model that fits [params]",
                "A": format_count(fa["largest"]),
                "B": format_count(fb["largest"]),
                "B - A": "",
            },
        ]
        # as text (a dozen parts), cards on a phone (the grid scrolled sideways at 390 px); the
        # grid and its CSV in the expander under it, as the step page's B - A table
        table(
            pd.DataFrame(rows),
            "memory_compare.csv",
            key="memory_compare",
            caption=f"{la}  |  {lb}",
            on_demand=True,
            cards=True,
        )


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "-") + format_bytes(abs(v))


#: The activation boxes by the argument each sets: a refusal names the box the user typed in.
_ACTIVATION_BOXES = {
    "sequence_length": "Sequence length [tokens]",
    "micro_batch": "Local batch per GPU [samples]",
    "layers": "Layers",
    "hidden": "Hidden size",
    "heads": "Heads",
}

#: The boxes by the library argument each sets: a refusal names the box the user typed in
#: ("Data-parallel ranks N [GPUs]: must be ...", not "dp_ranks: must be ..."); the hsdp group is a
#: Layout field.
_LAYOUT_BOXES = {
    "group_size": "HSDP group [GPUs]",
    "param_dtype": PARAM_DTYPE_BOX,
    "grad_dtype": GRAD_DTYPE_BOX,
    "bucket_cap_bytes": "bucket_cap",
    "dp_ranks": RANKS_BOX,
    "ranks": RANKS_BOX,
    "fragmentation": "Fragmentation allowance [fraction of held memory]",
    "cuda_context_bytes": "CUDA context per GPU [B]",
}

#: What the step holds beyond the model state and activations, per ZeRO stage (the buffers
#: of :mod:`costmodel.strategy.memory`): said for the stage shown, not for all four.
_BUFFER_OF_STAGE = {
    0: "DDP's bucket copy of the gradients",
    1: "ZeRO-1's gradient bucket buffers (DeepSpeed's ipg buffers)",
    2: "ZeRO-2's gradient bucket buffers (DeepSpeed's ipg buffers)",
    3: "FSDP's gathered units in flight",
}


def _more_sharded(layout3: tuple | None, ranks: int) -> list[tuple[str, tuple]]:
    """ZeRO-3 layouts that hold less per GPU than ``layout3`` at ``ranks``, least change first,
    in the words of the CLI's advisor (:func:`costmodel.strategy.advisor.more_sharded_zero3`),
    as the page's ``(strategy, group, reshard)``.

    >>> _more_sharded(("hsdp", 8, True), 64)[-1]
    ('fsdp', ('fsdp', None, True))
    >>> _more_sharded(("fsdp", None, False), 64)
    [('reshard after forward (FULL_SHARD)', ('fsdp', None, True))]
    """
    from costmodel.strategy.advisor import more_sharded_zero3

    if layout3 is None:
        return []
    strategy, group, reshard = layout3
    out = []
    for words, upd in more_sharded_zero3(strategy, group, reshard, ranks):
        s = upd.get("strategy", strategy)
        g = None if s == "fsdp" else upd.get("group_size", group)
        out.append((words, (s, g, upd.get("reshard_after_forward", reshard))))
    return out


def _what_fits(inp: dict, kw: dict, totals: dict[int, float], capacity: float) -> None:
    """Say first that it does not fit, and what would: at ZeRO-0 DDP's
    ``gradient_as_bucket_view`` where it is off and alone makes it fit (the CLI's list names
    it too), the recomputation the CLI's ``memory``
    names (same order, :func:`costmodel.strategy.advisor.recompute_choices`), a higher ZeRO
    stage at these ranks, or at ZeRO-3 a layout that shards more (:func:`_more_sharded`: hsdp
    g=8 or fsdp without resharding said nothing fitted, where the CLI named fsdp and recompute
    full), both together when neither alone does, and the fewest ranks (the table below)."""
    from costmodel.strategy.advisor import recompute_choices

    stage, ranks = inp["stage"], int(inp["ranks"])
    alts = _more_sharded(inp.get("layout3"), ranks) if stage == 3 else []

    def zero3(layout: tuple, extra: dict) -> float:
        t = data.memory_by_stage(
            inp["params"],
            ranks,
            _arch(inp),
            layout3=layout,
            bucket_view=inp.get("bucket_view", False),
            **{**kw, **extra},
        )[1]
        return t[3]

    changes = []
    if stage == 0 and not inp.get("bucket_view") and ranks > 1:
        # DDP's gradient_as_bucket_view drops the bucket copy at no step cost: said first, in
        # the words of the CLI's list (fit_suggestions), where it alone makes ZeRO-0 fit
        from costmodel.strategy.advisor import BUCKET_VIEW_CHANGE

        t0 = data.memory_by_stage(
            inp["params"],
            ranks,
            _arch(inp),
            layout3=inp.get("layout3"),
            bucket_view=True,
            **kw,
        )[1][0]
        if t0 <= capacity:
            changes.append(f"{BUCKET_VIEW_CHANGE}: {format_bytes(t0)} per GPU")
    both = None  # (stage, mode, total) of the cheapest mode that fits only with a higher stage
    both_alt: list[str] = []  # the same for the ZeRO-3 layouts, said
    act = inp["activation"]
    if act is not None:
        seq, micro, flash, recompute = inp["recipe_act"]
        for rc in recompute_choices(recompute, flash):
            key = (*act[:-2], rc, act[-1]) if act[0] == "arch" else (*act[:-1], rc)
            a_rc = data.activations_for(*key)
            t = data.memory_by_stage(
                inp["params"],
                ranks,
                _arch(inp),
                layout3=inp.get("layout3"),
                bucket_view=inp.get("bucket_view", False),
                **{**kw, "activations_bytes": a_rc},
            )[1]
            if t[stage] <= capacity:
                changes.append(f"recompute {rc}: {format_bytes(t[stage])} per GPU")
                break
            fit = [s for s in memory.ZERO_STAGES if s > stage and t[s] <= capacity]
            if both is None and fit:
                both = (fit[0], rc, t[fit[0]])
            if not both_alt:  # every layout that fits with the first mode that fits any
                both_alt = [
                    f"{words} and recompute {rc}: {format_bytes(t3)} per GPU"
                    for words, layout in alts
                    if (t3 := zero3(layout, {"activations_bytes": a_rc})) <= capacity
                ]
    higher = [s for s in memory.ZERO_STAGES if s > stage and totals[s] <= capacity]
    if higher:
        changes.append(
            f"ZeRO-{higher[0]} at N = {int(ranks):,}: {format_bytes(totals[higher[0]])} per GPU"
        )
    for words, layout in alts:  # every ZeRO-3 layout that fits alone
        if (t3 := zero3(layout, {})) <= capacity:
            changes.append(f"{words}: {format_bytes(t3)} per GPU")
    if not changes and both is not None:  # neither alone: the two together
        changes.append(
            f"ZeRO-{both[0]} and recompute {both[1]} at N = {int(ranks):,}: "
            f"{format_bytes(both[2])} per GPU"
        )
    if not changes:
        changes += both_alt
    # more ranks: the fewest that fit this stage (the 'Ranks needed' table's figure), or none
    needed = data.ranks_needed(
        inp["params"],
        capacity,
        _arch(inp),
        layout3=inp.get("layout3"),
        bucket_view=inp.get("bucket_view", False),
        **kw,
    )
    col = needed.loc[needed["ZeRO stage"] == stage, "ranks needed"]
    n = None if col.isna().iloc[0] else int(col.iloc[0])
    more = (
        f"More ranks: ZeRO-{stage} fits from N = {n:,} ('Ranks needed' below)."
        if n is not None and n > ranks
        else f"More ranks do not make ZeRO-{stage} fit ('Ranks needed' below)."
    )
    st.warning(
        f"Does not fit: {format_bytes(totals[stage])} per GPU > "
        f"{_card(inp['gpu'][0], capacity)}. "
        + (
            "What makes it fit: " + "; ".join(changes) + f". {more}"
            if changes
            else "No recomputation mode or "
            + ("ZeRO-3 layout" if alts else "ZeRO stage")
            + ", alone or together, makes it fit at these ranks. "
            f"{more} Else a smaller micro-batch or sequence, or a larger card."
        ),
        icon=":material/memory:",
    )


def render() -> None:
    """Draw the Memory page."""
    page_header(
        "Memory",
        "How much memory does one GPU need to train this model, which ZeRO stage fits it, "
        "and how many ranks does sharding need? (ZeRO: Rajbhandari et al. 2020)",
    )
    inp = _inputs()
    inp_b = _pinned(inp)
    name, capacity = inp["gpu"]
    if inp["params"] is not None and not 0 < inp["params"] <= MAX_PARAMS:
        error(f"Parameters P: must be > 0 and <= {MAX_PARAMS:g}, got {inp['params']:g}")
        return
    if inp["params"] is None or inp["context"] is None or capacity is None:
        return
    if inp["dtypes"] is None:  # the bucket box refused its entry (said in red under it)
        return
    if not _recipe_runs_on(inp):  # fp8 on an A100: refused, as `costmodel memory --cluster`
        return
    activations = 0.0
    if inp["activation"] is not None:
        got: float | None = None  # stays None when the section refuses the shape (its message)
        with section("Activations", _ACTIVATION_BOXES):
            seq, micro = inp["recipe_act"][:2]  # the CLI's --seq and --micro-batch ranges
            check_boxes({"sequence_length": seq, "micro_batch": micro}, _ACTIVATION_BOXES)
            if inp["activation"][0] == "shape":  # the typed shape: its boxes' ranges
                shape = dict(
                    zip(("layers", "hidden", "heads"), inp["activation"][1:4], strict=True)
                )
                check_boxes(shape, _ACTIVATION_BOXES)
            got = data.activations_for(*inp["activation"])
        if got is None:  # no memory without the activations the box asks for
            return
        activations = got
    kw = {
        "recipe": inp["recipe"],
        "activations_bytes": activations,
        "cuda_context_bytes": inp["context"],
        "fragmentation": inp["fragmentation"],
        **inp["dtypes"],  # the step's --param-dtype, --grad-dtype and --bucket, where set
    }
    parts = None
    with section("Memory", _LAYOUT_BOXES):
        lay = inp["layout3"]
        parts, totals, lesson = data.memory_by_stage(
            inp["params"],
            int(inp["ranks"]),
            _arch(inp),
            layout3=lay,
            bucket_view=inp.get("bucket_view", False),
            **kw,
        )
        stage = inp["stage"]
        total = totals[stage]
        headline_text(  # the verdict names its card: the page always has one (README)
            f"Memory per GPU, ZeRO-{stage}",
            f"{format_bytes(total)} ({'fits' if total <= capacity else 'does not fit'} "
            f"{_card(name, capacity)})",
        )
        st.caption(  # one road: `costmodel memory` and `costmodel step` size the same layout
            f"Sized as the step prices {_layout_name(inp)} (ZeRO-{stage}): model state "
            f"(weights, gradients, optimizer: {inp['recipe']}'s "
            f"{memory.RECIPES[inp['recipe']].bytes_per_param:g} B per parameter before sharding)"
            + (" + activations" if inp["activation"] is not None else "")  # none when left out
            + (" + context + fragmentation" if inp["context"] or inp["fragmentation"] else "")
            + f", {format_bytes(lesson[stage])}, plus "
            + (
                "no communication buffer (one rank is plain training: nothing to reduce, no "
                "DDP buckets)."
                if int(inp["ranks"]) == 1 and stage == 0
                else "no bucket copy of the gradients (gradient_as_bucket_view: they are "
                "views into DDP's buckets)."
                if stage == 0 and inp.get("bucket_view")
                else f"{format_bytes(total - lesson[stage])} of {_BUFFER_OF_STAGE[stage]}"
                # DeepSpeed's ipg buffers and FSDP2's unit copies are allocated whatever the
                # world size (costmodel.strategy.memory)
                + (", allocated on one rank too." if int(inp["ranks"]) == 1 else ".")
            )
        )
        # what `costmodel memory` says beside the numbers (its activation line is the
        # "Activation recipe" caption above): tensor and pipeline parallelism from the 70B
        # class, expert parallelism for a mixture of experts
        # beside the verdict, with what a fit with little to spare leaves out (the library's
        # fit_notes, as the CLI and the step say it; its fields named as the page's boxes)
        said = _model_notes(inp)
        dtype_note = _layout(inp).param_dtype_note  # ddp gathers no parameters: said, as the step
        if dtype_note:
            said.append(dtype_note)
        notes(fit_notes(said, total, capacity, inp["context"], inp["fragmentation"]))
        m = headline(4)
        shown, card = format_bytes_pair(total, capacity)  # apart where they differ
        m[0].metric(f"Memory per GPU, ZeRO-{stage}", shown)
        m[1].metric(f"GPU memory ({_gpu_name(name, capacity)})", card)
        m[2].metric(
            "Fits?",
            "yes" if total <= capacity else "no",
            delta=f"{format_bytes(capacity - total)} headroom"
            if total <= capacity
            else f"{format_bytes(total - capacity)} over",  # the CLI's "no (1.3 TB over)"
            delta_color="normal" if total <= capacity else "inverse",  # red either way
        )
        largest = data.max_params(
            capacity,
            stage,
            int(inp["ranks"]),
            layout3=lay,
            bucket_view=inp.get("bucket_view", False),
            **kw,
        )
        m[3].metric(
            f"Largest model that fits, ZeRO-{stage}",
            f"{format_count(largest)} params" if largest > 0 else "none",
            # what it holds at this model's size, as `costmodel memory` says it beside the
            # count: read alone, "46.5 B params" for an 8B at 8,192 tokens read as "any model
            # up to 46.5B fits", where a 30B at the same settings needs 121 GB
            help="States that fit beside this model's activations and gathered units, held "
            "fixed: a larger model's are larger",
        )
        if largest <= 0:  # never "0 params": say what even one parameter would sit beside
            from costmodel.strategy.advisor import nothing_fits_note

            fixed = float(
                data.memory_by_stage(
                    0.0,
                    int(inp["ranks"]),
                    None,
                    layout3=lay,
                    bucket_view=inp.get("bucket_view", False),
                    **kw,
                )[1][stage]
            )
            seq, micro = inp["recipe_act"][:2]  # the CLI's `memory` note, word for word
            what = format_tokens_by_micro_batch(seq, micro) if inp["activation"] else ""
            st.warning(  # the library's note, shown as a sentence (common.sentence)
                sentence(nothing_fits_note(capacity, fixed, activations, what)),
                icon=":material/memory:",
            )
        if total > capacity:
            _what_fits(inp, kw, totals, capacity)
        chart(
            plots.memory_stack_figure(
                parts,
                capacity_bytes=capacity,
                title=f"Memory per GPU, {inp['arch'].name + ': ' if inp['arch'] else ''}"
                f"{format_count(inp['params'])} params, "
                f"{inp['recipe']}, N = {int(inp['ranks'])} (selected: ZeRO-{stage})",
            ),
            key="chart_memory",
            reserve_margins=True,  # the page's first chart: drawn once (plots.reserve_margins)
        )
    if inp_b is not None and parts is not None:
        _compare(inp, inp_b)
    with section("Ranks needed", _LAYOUT_BOXES):
        rows = data.ranks_needed(
            inp["params"],
            capacity,
            _arch(inp),
            layout3=inp["layout3"],
            bucket_view=inp.get("bucket_view", False),
            **kw,
        )
        table(
            rows,
            "ranks_needed.csv",
            key="ranks_needed",
            on_demand=True,
            caption=f"Fewest data-parallel ranks whose share fits {_card(name, capacity)}",
        )
    if parts is None:  # the section above showed why
        return
    with section("Memory", _LAYOUT_BOXES):
        order = list(dict.fromkeys(parts["part"]))
        wide = (
            parts.pivot(index="part", columns="config", values="bytes").reindex(order).reset_index()
        )
        wide.columns = ["part", *[f"{c} [B]" for c in wide.columns[1:]]]
        table(
            wide,
            "memory_per_gpu.csv",
            key="memory",
            on_demand=True,
            cards=True,  # a part per card on a phone: five columns needed 418 px of 358
            caption="Bytes per GPU, part by part",
        )


if __name__ == "__main__":
    render()
