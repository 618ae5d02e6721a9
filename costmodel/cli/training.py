"""Subcommands about training: ``memory``, ``batch``, ``step``, ``scenario``, ``train``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from .. import units
from ..architecture import LOSS_MODES, RECOMPUTE_MODES
from ..compute import FP8_GPUS_TEXT
from ..hardware import DEFAULT_NODES
from ._common import (
    _MODEL_HELP,
    CLUSTER_OR_LINK,
    JsonOpt,
    _jsonable,
    _kv,
    _one_line,
    _print_json,
    bare_bytes_warning,
    bare_seconds_warning,
    cli_words,
    option_given,
    preset_ranks,
    preset_ranks_example,
    relay_bare_number_warnings,
)

_RECOMPUTE_HELP = "Activation recomputation (with --arch): " + ", ".join(RECOMPUTE_MODES) + "."
_LOSS_HELP = (
    "How the loss is computed, which sizes its logits (with --arch): fp32 = "
    "cross_entropy(logits.float()), 12 B per logit; fused = a fused or compiled loss, 4 B; "
    "fp32-held = fp32 logits kept through backward, 16 B."
)


def _arch_name(arch: str | None) -> str | None:
    """The model's one name for a header: a preset's own, a config.json's by what the file
    says (:func:`costmodel.hf_config.config_name`, as its notes name it), not the typed path;
    None (or the text as typed, if it names no architecture) otherwise."""
    if not arch:
        return arch
    from ..architecture import load_arch

    try:
        return load_arch(arch).name
    except ValueError:
        return arch


def _check_loss(loss: str) -> None:
    if loss not in LOSS_MODES:
        raise ValueError(f"--loss: must be {', '.join(LOSS_MODES)}, got {loss!r}")


def _refuse_activation_only(arch: str | None, loss: str | None, flash: bool | None) -> None:
    """``--loss`` and ``--flash/--no-flash`` size activations alone; a bare parameter count
    (no ``--arch``) sizes none, so they are refused there, given at any value, in
    ``costmodel memory``'s words (:func:`costmodel.strategy.memory.check_activation_inputs`)
    rather than ignored (``--seq``, ``--micro-batch`` and ``--recompute`` also set the step's
    tokens and FLOPs, so they stay)."""
    from ..strategy.memory import check_activation_inputs

    given = {"--loss": loss is not None, "--flash" if flash else "--no-flash": flash is not None}
    check_activation_inputs(
        [name for name, on in given.items() if on],
        arch=arch is not None,
        activations=False,
        arch_hint="--arch NAME",
    )


# --- options shared by the training commands (one spelling, one help text) ---------------------
_ParamsOpt = Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")]
_ClusterOpt = Annotated[str, typer.Option(help="Cluster preset.")]
_NodesOpt = Annotated[int, typer.Option(min=1, help="Nodes of the preset.")]
_GpnOpt = Annotated[
    int | None, typer.Option(min=1, help="Use a slice of each node (default: all GPUs).")
]
# train and scenario: a rank count of the preset, instead of --nodes (step's --ranks, which is
# also the one link's, has its own help); None = not given
_PresetRanksOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Ranks of the preset, instead of --nodes: N <= the node's GPUs is one node's slice, "
        "a multiple of them whole nodes, as the sweep's ranks axis reads it.",
    ),
]
_RecipeOpt = Annotated[str, typer.Option(help="Precision/optimizer recipe, e.g. mixed-adam.")]
_ZeroOpt = Annotated[
    int, typer.Option("--zero", "--zero-stage", min=0, max=3, help="ZeRO stage 0-3.")
]
# train and scenario: None = not given (1, or solved from --global-tokens), so that a value
# typed beside --tokens-per-gpu or --global-tokens is refused even at the default value
_LocalBatchOpt = Annotated[
    int | None,
    typer.Option(
        "--local-batch",
        "--micro-batch",
        min=1,
        help="Micro-batch per GPU [samples] (default 1, or solved from --global-tokens with "
        "--accumulation).",
    ),
]
_AccumulationOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Gradient-accumulation micro-batches per step (default 1, or solved from "
        "--global-tokens).",
    ),
]
_TokensPerGpuOpt = Annotated[
    str | None,
    typer.Option(
        help="Tokens per GPU per micro-batch, instead of --micro-batch: 8192 or 8Ki, a "
        "multiple of --seq (micro-batch = tokens / --seq, as `costmodel step`).",
    ),
]
_GlobalTokensOpt = Annotated[
    str | None,
    typer.Option(
        "--global-tokens",
        help="Global batch in tokens per step: 4Mi = 4 x 2^20, or 4194304 (as `costmodel "
        "batch --global-tokens`): / --seq gives the sequences per step, split over the GPUs "
        "as micro-batch x accumulation (the one not given is solved; micro-batch 1 when "
        "neither is).",
    ),
]
_SeqOpt = Annotated[
    str | None,
    typer.Option(
        "--seq",
        "--sequence-length",
        help="Tokens per sample: 4096, 8k, 8Ki (1..100,000,000). Where a step or its memory is "
        "priced, default 4096.",
    ),
]
"""``--seq`` of every command, as text: its one range and grammar (``_limits.LIMITS["seq"]``,
the token grammar of :func:`costmodel.units.parse_tokens`) refuse a bad value in one line
naming ``--seq`` before the command runs; :func:`_seq` reads it. None: not given."""


def _seq(text: str | None) -> int | None:
    """The token count of a ``--seq`` already checked against its limit, None if not given."""
    return None if text is None else units.parse_tokens(text, name="--seq")


def _params_given(params: str | None, arch: str | None) -> float | None:
    """The count of ``--params``, None if not given; beside an ``--arch`` whose count it is
    not, refused as train and scenario refuse it (the count as typed, ``7B``): ``memory
    --strategy all`` dropped it and priced the architecture."""
    if params is None:
        return None
    p = units.parse_count(params, name="--params")
    if arch is not None:
        from ..architecture import load_arch, params_differ

        a = load_arch(arch)
        if p != float(a.params):
            raise ValueError(params_differ(params, a))
    return p


#: what ``--compute-time``'s help says of the options it is refused with (:func:`_one_compute`)
_MEASURED_NOT_WITH = (
    "Not with --mfu or --power-limit-w (each sets the speed of the predicted compute, which it "
    "replaces)."
)

_MfuOpt = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Model FLOP utilisation [0.001, 1] of the --precision's dense peak, PaLM's: of the "
        "model's FLOPs, the same compute under any --recompute, at most 1 / (1 + r) under "
        "recomputation's extra work r (0.75 under --recompute full: the GPUs run the recomputed "
        "forward too) (default: the fitted efficiency).",
    ),
]
_BucketOpt = Annotated[
    str | None,
    typer.Option(
        help="Bucket size of ddp/zero1/zero2 in bytes of gradients: 50MiB (default: the "
        "strategy's own: ddp 25 MiB, PyTorch's bucket_cap_mb; zero1/zero2 DeepSpeed's "
        "reduce_bucket_size, 5e8 elements (1 GB of bf16 gradients), not DDP's 25 MiB; "
        "their parameter all-gather is one collective, uncut).",
    ),
]
_NoSyncOpt = Annotated[
    bool,
    typer.Option("--no-sync/--sync", help="Accumulate under no_sync (one all-reduce per step)."),
]
_FlashOpt = Annotated[
    bool | None,
    typer.Option("--flash/--no-flash", help="FlashAttention (with --arch; default on)."),
]
# the strategy options (step, scenario, train)
_StrategyOpt = Annotated[
    str | None,
    typer.Option(
        help="Data-parallel strategy: ddp, zero1, zero2, fsdp or hsdp (default: --zero's; "
        "ddp when neither is given)."
    ),
]
_GroupOpt = Annotated[
    int | None,
    typer.Option(min=1, help="hsdp: GPUs sharding one replica (default one node)."),
]
_ReshardOpt = Annotated[
    bool | None,
    typer.Option(
        "--reshard/--no-reshard",
        help="fsdp/hsdp: free gathered parameters after forward (default --reshard).",
    ),
]
_BucketViewOpt = Annotated[
    bool | None,
    typer.Option(
        "--gradient-as-bucket-view/--no-gradient-as-bucket-view",
        help="ddp: gradients are views into DDP's all-reduce buckets, so no bucket copy of them "
        "is held (PyTorch's gradient_as_bucket_view; default off, as PyTorch's).",
    ),
]
_ParamDtypeOpt = Annotated[
    str, typer.Option(help="dtype parameters are all-gathered in: bf16, fp16, fp8, fp32.")
]
# step's and memory's --param-dtype (None: not given, the step's default bf16)
_StepParamDtypeOpt = Annotated[
    str | None,
    typer.Option(help="dtype parameters are all-gathered in: bf16 (default), fp16, fp8, fp32."),
]
_PrecisionOpt = Annotated[
    str | None,
    typer.Option(
        help="Compute precision of the matmuls: bf16 or fp8 (fp8 needs fp8 tensor cores: "
        f"{FP8_GPUS_TEXT}). --mfu is a fraction of this precision's dense "
        "peak (fp8: H100 1979 TFLOP/s, twice bf16's), as llm-foundry and torchtitan quote fp8 "
        "MFU. Default: fp8 with --recipe fp8-mixed, else bf16."
    ),
]
_GradDtypeOpt = Annotated[
    str | None,
    typer.Option(help="dtype gradients are reduced in: fp32, bf16, fp16 (default: the recipe's)."),
]
_ContentionOpt = Annotated[
    float | None,
    typer.Option(
        "--contention",
        min=0.0,
        max=1.0,
        help="Overlap contention c in [0, 1]: compute slows to 1 - c while a collective runs "
        "(default: costmodel.strategy.DEFAULT_COMM_CONTENTION, shown with every answer; "
        "1 = the fit to PyTorch's V100 DDP benchmark).",
    ),
]

_PowerOpt = Annotated[
    float | None,
    typer.Option(
        "--power-limit-w",
        help="Board power limit of the cluster's GPUs [W], in [minimum, datasheet maximum] "
        "(H100/H200 SXM 200..700, A100 SXM 100..400; power scaling is not modelled for other "
        "GPUs, B200 included, which refuse it), e.g. 500 for H100s capped at 500 W "
        "(nvidia-smi -pl); the fitted compute efficiency follows it (default: the GPU's "
        "datasheet power, H100/H200 SXM 700 W, A100 SXM 400 W).",
    ),
]

# the memory's overheads (memory, step, scenario, train: strategy_memory's cuda_context_bytes
# and fragmentation, the Memory and step pages' "CUDA context, fragmentation" boxes); their
# ranges are the shared limits of costmodel._limits (LIMITS["cuda_context"], ["fragmentation"])
_CudaContextOpt = Annotated[
    str | None,
    typer.Option(
        "--cuda-context",
        help="CUDA context and library workspaces per GPU, not held by the allocator: "
        "1GiB, 500MB (measure with nvidia-smi; default 0). A bare number is bytes.",
    ),
]
_FragmentationOpt = Annotated[
    float | None,
    typer.Option(
        help="Allocator fragmentation allowance, a fraction in [0, 1) of everything the "
        "allocator holds (state, activations, buffers; default 0).",
    ),
]


def _overheads(cuda_context: str | None, fragmentation: float | None) -> dict[str, float]:
    """``cuda_context_bytes`` and ``fragmentation`` of ``--cuda-context`` and ``--fragmentation``
    (0 each when not given; their limits checked already, :func:`costmodel.cli._common.limited`),
    the keywords of ``strategy_memory``, ``strategy_step`` and ``Scenario`` alike. A bare
    context number is bytes (``--cuda-context 1`` is 1 B): said after the answer."""
    ctx = float(units.parse_bytes(cuda_context, name="--cuda-context")) if cuda_context else 0.0
    if ctx > 0.0:
        bare_bytes_warning("--cuda-context", cuda_context, "GiB")
    return {
        "cuda_context_bytes": ctx,
        "fragmentation": 0.0 if fragmentation is None else float(fragmentation),
    }


def _contention(value: float | None) -> float:
    from ..strategy import DEFAULT_COMM_CONTENTION

    return DEFAULT_COMM_CONTENTION if value is None else float(value)


def _strategy_of(strategy: str | None, zero: int | None, *, allow_all: bool = True) -> str:
    """``--strategy``, else ``--zero``'s strategy; a contradiction is an error. ``allow_all``:
    the command ranks every strategy (``step``, ``memory``); ``scenario`` and ``train`` price
    one, so their refusal lists no ``all``."""
    from ..strategy.layout import (
        STRATEGIES,
        STRATEGY_OF_STAGE,
        ZERO_STAGE,
        stage_agrees,
        unknown_strategy,
    )

    if strategy is None:
        return STRATEGY_OF_STAGE[zero or 0]
    st = strategy.lower()
    if st not in (*STRATEGIES, *(("all",) if allow_all else ())):
        raise ValueError(unknown_strategy(strategy, field="--strategy", allow_all=allow_all))
    # --zero's default 0 cannot be told from a typed 0: it reads as no stage given
    if st == "all" and zero:  # one stage beside every layout ranked: it would be ignored
        raise ValueError(
            f"--zero {zero}: --strategy all ranks every layout (ddp 0, zero1 1, zero2 2, fsdp "
            "and hsdp 3); give --strategy all or --zero, not both"
        )
    if st != "all" and not stage_agrees(st, zero or None):
        raise ValueError(f"--zero {zero} contradicts --strategy {st} (ZeRO-{ZERO_STAGE[st]})")
    return st


def _fit_text(
    fa: Any, top: int = 5, price: str | None = None, usd_per_gpu_hour: float | None = None
) -> str:
    """The fit suggestions' text: each change's cost in dollars at the price given (a larger
    card's at its own GPU's preset), else in GPU-time (:meth:`FitAdvice.summary`)."""
    return str(fa.summary(top, price, usd_per_gpu_hour))


# --- memory -----------------------------------------------------------------------------------
_NodesOfClusterOpt = Annotated[
    int | None,
    typer.Option(
        help="Nodes of --cluster: the ranks are nodes x its GPUs per node, or x --gpus-per-node "
        "(instead of --ranks)."
    ),
]


_GpnOfNodesOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="With --nodes: GPUs per node, a slice of each --cluster node as step, scenario and "
        "train take it (default: all the preset's GPUs); without --cluster, the GPUs of each of "
        "the --nodes.",
    ),
]


def _ranks_of_nodes(
    ranks: int | None,
    nodes: int | None,
    cluster: str | None,
    gpus_per_node: int | None = None,
) -> int | None:
    """The data-parallel ranks of ``--ranks`` or ``--nodes``: nodes x the GPUs per node, which
    ``--gpus-per-node`` gives (a slice of each of ``--cluster``'s nodes, checked against the
    preset by :func:`costmodel.presets.cluster`, the road of step, scenario and train, with
    their message) or else ``--cluster``'s own. Both ``--ranks`` and ``--nodes``: refused
    naming both; ``--nodes`` with neither ``--cluster`` nor ``--gpus-per-node``: refused (no
    hardware is assumed for a count of GPUs); ``--gpus-per-node`` without ``--nodes``: refused.
    None when neither ``--ranks`` nor ``--nodes`` is given."""
    if nodes is None:
        if gpus_per_node is not None:
            raise ValueError(
                "--gpus-per-node: only with --nodes (the ranks are --nodes x --gpus-per-node); "
                "or give --ranks"
            )
        return ranks
    if ranks is not None:
        raise ValueError(
            "--ranks, --nodes: give one of them (--nodes counts nodes of --cluster, each of its "
            "GPUs per node, or of --gpus-per-node)"
        )
    if cluster is None:
        if gpus_per_node is None:
            raise ValueError(
                "--nodes: needs the GPUs per node: --cluster NAME (the preset's) or "
                "--gpus-per-node G, e.g. --cluster dgx-h100 --nodes 8; or give --ranks"
            )
        return nodes * gpus_per_node
    from .. import presets

    c = presets.cluster(cluster, nodes=nodes, gpus_per_node=gpus_per_node, field="cluster")
    return int(c.ranks)


def memory(
    params: Annotated[
        str | None, typer.Option(help="Model parameters: 7B, 350M (or give --arch).")
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(
            "--arch",
            "--model",
            help="Architecture preset, e.g. llama-3.1-70b (see `costmodel archs`), or your model's "
            "Hugging Face config.json (or its folder): gives the "
            "parameters and the activations.",
        ),
    ] = None,
    recipe: _RecipeOpt = "mixed-adam",
    zero: _ZeroOpt = 0,
    ranks: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Data-parallel ranks sharding the state (default one node: --cluster's GPUs "
            "per node, or --gpus-per-node; with neither, 8, the default cluster dgx-h100's "
            "node, said on stderr as assumed).",
        ),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            help="Nodes of --cluster: the ranks are nodes x its GPUs per node, or x "
            "--gpus-per-node (instead of --ranks; default one node)."
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="GPUs per node, a slice of each --cluster node as step, scenario and train take "
            "it (default: all the preset's GPUs); without --cluster, the GPUs of each of the "
            "--nodes (default one node: the ranks are G).",
        ),
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="Data-parallel strategy, as `costmodel step --strategy` takes it: ddp, zero1, "
            "zero2, fsdp or hsdp (default: --zero's; ddp when neither is given); all: every "
            "layout `step --strategy all` ranks (fsdp with and without resharding, hsdp at each "
            "group that divides the ranks and divides a node or a slice of --gpus-per-node or is "
            "whole nodes), with --cluster, each row "
            "the memory sweep's."
        ),
    ] = None,
    group_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="hsdp: GPUs sharding one replica (default one node: --cluster's, the "
            "--gpus-per-node slice, or the 8 GPUs assumed without --ranks; --ranks without a "
            "node: give it).",
        ),
    ] = None,
    reshard: _ReshardOpt = None,
    bucket_view: _BucketViewOpt = None,
    # what the step's layout sizes with them, as `costmodel step` takes them (one definition)
    param_dtype: _StepParamDtypeOpt = None,
    grad_dtype: _GradDtypeOpt = None,
    bucket: _BucketOpt = None,
    activations: Annotated[
        str | None,
        typer.Option(
            help="Activation memory per GPU, 0 B..16 TiB: 10GB (default: from --arch, else 0)."
        ),
    ] = None,
    # what sizes activations: None = not given (the step's default, strategy.step.step_default), so
    # that a value typed is "given" even when it equals the default (refused without --arch)
    seq: _SeqOpt = None,
    micro_batch: Annotated[
        int | None,
        typer.Option(
            "--micro-batch",
            "--local-batch",
            min=1,
            help="Micro-batch per GPU [samples] (default 1).",
        ),
    ] = None,
    recompute: Annotated[str | None, typer.Option(help=_RECOMPUTE_HELP + " Default none.")] = None,
    loss: Annotated[str | None, typer.Option(help=_LOSS_HELP + " Default fp32.")] = None,
    flash: Annotated[
        bool | None,
        typer.Option(
            "--flash/--no-flash", help="FlashAttention (no s x s scores kept; default on)."
        ),
    ] = None,
    gpu_memory: Annotated[
        str | None, typer.Option(help="GPU memory to check against: 80GB.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="Take the GPU memory from a preset.")] = None,
    cuda_context: _CudaContextOpt = None,
    fragmentation: _FragmentationOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory per GPU of weights, gradients, optimizer state, activations (and what fits).

    With --arch the activations of one micro-batch are included (default recipe: 4096 tokens,
    micro-batch 1, FlashAttention, no recomputation); a bare --params count sizes the model
    state and no activations (as the step's memory of a count, which prices the count as a
    dense transformer of that size), so --seq, --micro-batch, --recompute, --loss
    and --flash/--no-flash are refused with it, and beside --activations, which replace what
    they size (as the memory sweep refuses them); given is given, even at the default value.
    The verdict (fits, the largest model, the
    fewest ranks) is checked against --gpu-memory or --cluster's GPU; with neither there is no
    card and no verdict, as `costmodel step` without --cluster and a memory sweep without
    preset or gpu_memory.
    --model is accepted for --arch here (this command has no cost model). The total is that of
    the layout `costmodel step` prices for the stage (0 ddp, 1 zero1, 2 zero2, 3 fsdp) or for
    --strategy (hsdp: ZeRO-3 inside groups of --group-size GPUs, as `step --strategy hsdp
    --group-size`): DDP's bucket copy, ZeRO-1/2's buckets or FSDP's gathered units are rows of
    their own, beside the lesson's total (one rank under ddp is plain training, no buckets;
    DeepSpeed's buffers and FSDP2's unit copies are held on one rank too, FSDP2 one unit at a
    time). --param-dtype, --grad-dtype and --bucket are `step`'s (the gathered units' dtype,
    the reduced gradients' dtype, the ddp/zero1/zero2 bucket), so the total is the step's for
    the same options. --nodes N with --cluster shards
    over N x the preset's GPUs per node (--gpus-per-node G: a slice of G of each, as step,
    scenario and train count them; without --cluster, N x G ranks and no verdict; not with
    --ranks). Without --ranks and --nodes the state is sharded over one node, the default of
    every surface (costmodel.hardware.DEFAULT_NODES, as step, scenario, train, the sweeps, the
    API and the Memory page default): --cluster's GPUs per node (or the --gpus-per-node
    slice); with no node given at all, 8 ranks, the node of the default cluster dgx-h100 that
    step prices, said on stderr as "assumed: 8 ranks, one node ...".
    --cuda-context C and --fragmentation f (the Memory and step pages' "CUDA context,
    fragmentation" boxes, strategy_memory's cuda_context_bytes and fragmentation) add C + f x
    what the allocator holds to the total, and so to the verdict, the largest model, the
    fewest ranks, --recompute's fit and the step advisor's fit suggestions (--cluster). `step`,
    `scenario` and `train` take the same two options, so their memory and "fits" are this
    total for the same layout.

    --strategy all lists every layout `step --strategy all` ranks (ddp, zero1, zero2, fsdp with
    and without resharding, hsdp at each group that divides the ranks and either divides a node
    of --cluster, which it needs, or is whole nodes; with --gpus-per-node G, a slice of G GPUs
    of each node or whole slices, as `step --strategy all --gpus-per-node G` ranks) with its memory per GPU and
    fit, each row the memory sweep's `strategy=all` row (--json: the sweep's columns, and
    gpus_per_node with --gpus-per-node); --group-size, --reshard and --zero name one layout and
    are refused with it.

    Examples (lesson: a 7B model under mixed-precision Adam needs 112 GB on one GPU):

    \b
        costmodel memory --params 7B --recipe mixed-adam --gpu-memory 80GB --ranks 1

    \b
        costmodel memory --arch llama-3.1-70b --zero-stage 3 --ranks 64 --seq 4096

    \b
        costmodel memory --arch llama-3.1-70b --strategy hsdp --group-size 8 --nodes 8 --cluster dgx-h100

    \b
        costmodel memory --arch llama-3.1-70b --strategy all --nodes 8 --cluster dgx-h100
    """
    from ..strategy.layout import ZERO_STAGE
    from ..strategy.memory import (
        PART_LABELS,
        check_activation_inputs,
        hsdp_ranks_note,
        memory_layout,
        stage_max_params,
        stage_memory,
        stage_min_ranks,
    )

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    # neither --ranks nor --nodes: one node (hardware.DEFAULT_NODES, the default of every
    # surface): of --cluster, or its --gpus-per-node slice; with no node given, 8 GPUs (the
    # default cluster's node, as step prices it and the Memory page's N), said as assumed
    from ..hardware import default_ranks

    ranks_assumed = ranks is None and nodes is None and cluster is None and gpus_per_node is None
    if ranks is None and nodes is None and not ranks_assumed:
        nodes = DEFAULT_NODES
    # --nodes: x --gpus-per-node, else x --cluster's GPUs per node
    ranks = _ranks_of_nodes(ranks, nodes, cluster, gpus_per_node) or default_ranks()
    st = _strategy_of(strategy, zero)  # --zero 3 --strategy hsdp agree; --zero 1 does not
    if st == "all":
        _check_memory_all(cluster, gpu_memory, group_size, reshard, zero, bucket_view)
    zero = ZERO_STAGE["fsdp" if st == "all" else st]
    from ..models import MODELS, NCCL_TABLE

    if arch is not None and arch.lower() in (*MODELS, NCCL_TABLE):
        # --model here is --arch: a step's `--model nccl` pasted onto memory replaced the
        # architecture and was refused as "--arch: unknown architecture 'nccl'"
        # one option name, at the head: the line names it as typed (as_typed), so a second
        # "--arch" in the text came out "--model/--model ... as --model"
        raise ValueError(
            f"--arch: {arch!r} is a collective cost model, not an architecture; memory prices "
            "no collective: drop it, and name the model's architecture (e.g. llama-3.1-8b; "
            "`costmodel archs` lists them) or its config.json"
        )
    # what sizes activations, given (whatever its value): refused where nothing uses it (a bare
    # count sizes none; --activations replace them), as the memory sweep refuses it
    shaped = {
        "--seq": seq is not None,
        "--micro-batch": micro_batch is not None,
        "--recompute": recompute is not None,
        "--loss": loss is not None,
        "--flash" if flash else "--no-flash": flash is not None,
    }
    check_activation_inputs(
        [name for name, on in shaped.items() if on],
        arch=arch is not None,
        activations=activations is not None,
        arch_hint="--arch NAME",
    )
    from ..strategy.step import step_default  # the layout `step` prices: one set of defaults

    seq_n = _seq(seq) or int(step_default("sequence_length"))
    micro_batch = step_default("micro_batch") if micro_batch is None else micro_batch
    recompute = step_default("recompute") if recompute is None else recompute
    loss = step_default("loss") if loss is None else loss
    flash = step_default("flash_attention") if flash is None else flash
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"--recompute: must be {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
    _check_loss(loss)
    p_given = _params_given(params, arch)
    act = units.parse_bytes(activations, name="--activations") if activations else None
    # the step's --param-dtype, --grad-dtype and --bucket: the layout's fields, as `step` sets
    # them (only where given: the Layout's defaults, the step's)
    dtype_kw = _memory_dtype_kw(param_dtype, grad_dtype, bucket)
    if st == "all":  # every layout, each row the memory sweep's (one road)
        assert cluster is not None  # _check_memory_all
        axes: dict[str, Any] = dict(
            preset=cluster, strategy="all", ranks=ranks, recipe=recipe, **_overheads_axes(
                cuda_context, fragmentation))  # fmt: skip
        if gpus_per_node is not None:  # a slice of each node: hsdp's groups fit the slice
            axes["gpus_per_node"] = [gpus_per_node]
        for key, value in dtype_kw.items():  # the memory sweep's axes of the same names
            axes["bucket_cap" if key == "bucket_cap_bytes" else key] = [value]
        axes.update(params=[p_given]) if arch is None else axes.update(arch=arch)
        if act is not None:
            axes["activations"] = [act]
        elif arch is not None:
            axes.update(sequence_length=[seq_n], micro_batch=[micro_batch], recompute=recompute,
                        loss=loss, flash_attention=[flash])  # fmt: skip
        # what makes it fit where nothing does: from fsdp, as `step --strategy all` says it
        fit_kw = None
        if act is None:
            fit_kw = dict(
                p=None if arch else float(p_given),  # type: ignore[arg-type]
                cluster=cluster,
                ranks=ranks,
                strategy="fsdp",
                arch=arch,
                gpus_per_node=gpus_per_node,
                recipe=recipe,
                sequence_length=seq_n,
                micro_batch=micro_batch,
                flash_attention=flash,
                recompute=recompute,
                loss=loss,
                **_overheads(cuda_context, fragmentation),
                **dtype_kw,
            )
        _memory_all_out(axes, arch, as_json, fit_kw, dtype_kw.get("bucket_cap_bytes"))
        return
    recipe_kw: dict[str, Any] = dict(
        sequence_length=seq_n,
        micro_batch=micro_batch,
        flash_attention=flash,
        recompute=recompute,
        loss=loss,
    )
    # the layout `costmodel step` prices for this stage or strategy: one total, one verdict
    gpn: int | None = gpus_per_node  # hsdp's default group: one node (its slice), as the step's
    if cluster is not None and gpn is None:
        from .. import presets

        gpn = int(presets.cluster(cluster, field="cluster").gpus_per_node)
    elif ranks_assumed:  # the node assumed (the default cluster's), as step's hsdp on it
        from ..hardware import DEFAULT_GPUS_PER_NODE

        gpn = DEFAULT_GPUS_PER_NODE
    lkw = memory_layout(
        st,
        ranks,
        group_size=group_size,
        reshard_after_forward=reshard,
        gpus_per_node=gpn,
        gradient_as_bucket_view=bucket_view,
        names=("--group-size", "--cluster"),
        **dtype_kw,
    )
    # the overheads the Memory page's expander takes, through the same stage_memory keywords
    over_kw: dict[str, Any] = _overheads(cuda_context, fragmentation)
    ctx, frag = over_kw["cuda_context_bytes"], over_kw["fragmentation"]
    skw: dict[str, Any] = dict(
        recipe=recipe, activations_bytes=act, arch=arch, **recipe_kw, **over_kw
    )
    skw.update(lkw)
    sm = stage_memory(zero, ranks, p_given, **skw)
    breakdown = sm.base
    if arch is not None:
        from ..architecture import resolve_params

        p = resolve_params(p_given, arch)[0]
    else:
        p = float(p_given)  # type: ignore[arg-type]
    parts = sm.parts()
    total = float(sm.total_bytes)
    lesson_total = float(breakdown.total_bytes)
    act_bytes = parts["activations_bytes"]
    # the memory sweep's names and units for what a sweep row holds (its columns in GB), and
    # `step --json`'s for the bytes (memory_bytes, memory_parts_bytes, gpu_memory_bytes)
    result: dict[str, Any] = {
        "params": p,
        "arch": arch,
        "recipe": recipe,
        "zero_stage": zero,
        # strategy, layout ("hsdp g=8"), group_size, reshard_after_forward: the layout sized,
        # named as a sweep row and step --json name it
        **_layout_identity(lkw, ranks),
        "ranks": ranks,
        # the overheads asked for (their bytes are rows of memory_parts_bytes)
        "cuda_context_bytes": ctx,
        "fragmentation": frag,
        # the step's dtypes and bucket given (step --json's layout fields), none where not
        **dtype_kw,
    }
    if arch is not None:  # what sizes the activations, as a sweep row over an arch has them
        result.update(
            recompute=recompute,
            loss=loss,
            flash_attention=flash,
            sequence_length=seq_n,
            micro_batch=micro_batch,
        )
    result.update(sm.gb_columns())
    result.update(
        memory_parts_bytes=parts,
        model_state_bytes=float(breakdown.model_state_bytes),
        lesson_memory_bytes=lesson_total,
        memory_bytes=total,
    )
    capacity = None
    gpu_name = None
    if gpu_memory is not None and cluster is not None:
        raise ValueError("give --gpu-memory or --cluster, not both")
    if gpu_memory is not None:
        bare_bytes_warning("--gpu-memory", gpu_memory, "GB")
        capacity = float(units.parse_bytes(gpu_memory, name="--gpu-memory"))
    elif cluster is not None:
        from .. import presets
        from ..strategy.step import check_fp8_support

        c = presets.cluster(cluster, field="cluster")
        check_fp8_support(c.gpu, recipe=recipe, param_dtype=lkw.get("param_dtype"))
        capacity, gpu_name = float(c.gpu.memory_bytes), c.gpu.name
    if capacity is not None:
        if cluster is not None:
            result["preset"] = cluster
        result["gpu_memory_GB"] = capacity / 1e9
        result["gpu_memory_bytes"] = capacity
        result["gpu"] = gpu_name
        result["fits"] = bool(total <= capacity)
        result["max_params"] = float(
            stage_max_params(
                capacity, zero, ranks, recipe=recipe, activations_bytes=act_bytes, **over_kw, **lkw
            )
        )
        if st == "hsdp":  # the state is sharded over the group: more replicas do not shrink it
            result["min_ranks"] = None
            result["min_ranks_note"] = hsdp_ranks_note(result["group_size"])
        elif zero > 0:
            try:
                result["min_ranks"] = _jsonable(stage_min_ranks(p_given, capacity, zero, **skw))
            except ValueError as exc:
                result["min_ranks"] = None
                result["min_ranks_note"] = str(exc)
        if arch is not None and act is None and not result["fits"]:
            from ..strategy.advisor import recompute_choices

            for rc in recompute_choices(recompute, flash):
                t = float(stage_memory(zero, ranks, **{**skw, "recompute": rc}).total_bytes)
                if t <= capacity:
                    result["fits_with_recompute"] = rc
                    break
    fa = None
    if capacity is not None and not result["fits"]:
        # what sits beside a model of no parameters: the activations, the context and their
        # fragmentation (the Memory page's figure: the total at P = 0)
        fixed = float(
            stage_memory(
                zero, ranks, 0.0, recipe=recipe, activations_bytes=act_bytes, **over_kw, **lkw
            ).total_bytes
        )
        if result["max_params"] <= 0.0:
            from ..strategy.advisor import nothing_fits_note

            # the tokens size the activations only when the architecture's are used (given
            # --activations are no sequence's; a bare count has none), as the Memory page says
            what = (
                units.format_tokens_by_micro_batch(seq_n, micro_batch)
                if arch and act is None
                else ""
            )
            result["max_params_note"] = nothing_fits_note(capacity, fixed, act_bytes, what)
        if cluster is not None and act is None:
            fa = _memory_fit(
                None if arch else p,
                cluster,
                ranks,
                st,
                arch=arch,
                group_size=group_size,
                reshard_after_forward=reshard,
                gradient_as_bucket_view=bucket_view,
                gpus_per_node=gpus_per_node,
                **recipe_kw,
                recipe=recipe,
                **over_kw,  # each change's memory with the same overheads as this total
                **dtype_kw,  # and the same dtypes and bucket
            )
            if fa is not None:
                result["fit_suggestions"] = fa.as_dict()
    # the activations' line first, then what the answer leaves out: a sweep row's notes
    # (a sequence past the model's context: only where the activations are sized at it)
    # strategy_memory's, as the API and a sweep row say them; beside a verdict, with what a
    # fit with little to spare leaves out (StrategyMemory.fit_notes, the step's road too)
    result["notes"] = list(sm.notes if capacity is None else sm.fit_notes(capacity))
    # a --param-dtype ddp does not gather in, said as the step says it (Layout.param_dtype_note)
    dtype_note = _layout_of(lkw, ranks).param_dtype_note
    if dtype_note:
        result["notes"].append(dtype_note)
    if as_json:
        _print_json(result)
        _warn_unused_bucket([st], dtype_kw.get("bucket_cap_bytes"))  # as `step` warns
        _say_assumed_ranks(ranks if ranks_assumed else None)
        return
    if fa is not None:
        typer.echo(_fit_text(fa))
    elif capacity is not None and not result["fits"]:
        # said first, as the advisor's warning is (--gpu-memory, --activations or ranks that
        # are not whole nodes of --cluster give no changes to try): in its words
        over, card = units.format_bytes_pair(total, capacity)
        typer.echo(f"DOES NOT FIT: {over} per GPU > {card} ({result['layout']})")
    extra = ("buckets_bytes", "gathered_units_bytes")  # shown when the layout holds them
    rows = [  # the parts in words, as the Memory page's bar names them
        (PART_LABELS.get(k, k.removesuffix("_bytes")), units.format_bytes(v))
        for k, v in parts.items()
        if k not in extra or v > 0.0
    ]
    if total != lesson_total:
        rows.append(("lesson total (no buffers)", units.format_bytes(lesson_total)))
    shown, card = units.format_bytes_pair(total, total if capacity is None else capacity)
    rows.append(("total per GPU", shown))
    if capacity is not None:
        rows.append(("GPU memory", card + (f" {gpu_name}" if gpu_name else "")))
        verdict = "yes" if result["fits"] else "no"
        if not result["fits"]:
            verdict += f" ({units.format_bytes(total - capacity)} over)"
            if "fits_with_recompute" in result:
                verdict += f"; fits with --recompute {result['fits_with_recompute']}"
        rows.append(("fits", verdict))
        rows.append(
            (
                "largest model that fits",
                result.get("max_params_note")
                or units.format_count(result["max_params"])
                + (" param" if result["max_params"] == 1 else " params")
                + _held_fixed(parts),
            )
        )
        if result.get("min_ranks") is not None:
            rows.append(("fewest ranks that fit", str(result["min_ranks"])))
    else:  # no card given, no default one (as step and the sweep): say how to get the verdict
        rows.append(("fits", "give --gpu-memory (e.g. 80GB) or --cluster NAME for the verdict"))
    head = f"{_arch_name(arch)}: " if arch else ""
    over = (
        f"ZeRO-{zero} inside groups of {result['group_size']} GPUs"
        if st == "hsdp"
        else f"ZeRO-{zero}"
    )
    typer.echo(
        f"{head}{units.format_count(p)} params, {recipe}, {over} over {units.format_counted(ranks, 'rank')} "
        f"(the step's layout: {result['layout']})"
    )
    typer.echo(cli_words(result["notes"][0]))  # the activations' line
    typer.echo(_kv(rows))
    for n in result["notes"][1:]:
        typer.echo(f"note: {cli_words(n)}")
    _warn_unused_bucket([st], dtype_kw.get("bucket_cap_bytes"))  # as `step` warns
    _say_assumed_ranks(ranks if ranks_assumed else None)


def _memory_dtype_kw(
    param_dtype: str | None, grad_dtype: str | None, bucket: str | None
) -> dict[str, Any]:
    """``memory``'s ``--param-dtype``, ``--grad-dtype`` and ``--bucket`` as the Layout fields
    ``param_dtype``, ``grad_dtype`` and ``bucket_cap_bytes`` (``--bucket`` read as `step` reads
    it, :func:`_bucket_bytes`), only those given: the rest stay the step's defaults. The
    values are checked by the layout (:func:`costmodel.strategy.memory.memory_layout`)."""
    out: dict[str, Any] = {}
    if param_dtype is not None:
        out["param_dtype"] = param_dtype
    if grad_dtype is not None:
        out["grad_dtype"] = grad_dtype
    cap = _bucket_bytes(bucket)
    if cap is not None:
        out["bucket_cap_bytes"] = cap
    return out


def _check_memory_all(
    cluster: str | None,
    gpu_memory: str | None,
    group_size: int | None,
    reshard: bool | None,
    zero: int | None,
    bucket_view: bool | None = None,
) -> None:
    """``memory --strategy all``'s refusals: it is the memory sweep's ``strategy=all`` on the
    preset's node or a slice of it (hsdp's groups are those that fit it), so it needs
    --cluster, and the options naming one layout have nothing to set."""
    if cluster is None:
        raise ValueError(
            "--strategy all: lists every layout `step --strategy all` ranks on a cluster's node "
            "(hsdp at each group that fits it); give --cluster NAME"
            + (" (not --gpu-memory)" if gpu_memory is not None else "")
        )
    for name, value in (
        ("--group-size", group_size),
        ("--reshard/--no-reshard", reshard),
        ("--zero-stage", zero or None),
        ("--gradient-as-bucket-view", bucket_view),
    ):
        if value is not None:
            raise ValueError(
                f"{name}: --strategy all sizes every layout (each stage, fsdp with and without "
                "resharding, every hsdp group that divides the ranks and divides a node, or its "
                "--gpus-per-node slice, or is whole nodes); give "
                "--strategy NAME for one"
            )


def _overheads_axes(cuda_context: str | None, fragmentation: float | None) -> dict[str, Any]:
    """The memory sweep axes of --cuda-context and --fragmentation (none where not given)."""
    over = _overheads(cuda_context, fragmentation)
    out: dict[str, Any] = {}
    if cuda_context is not None:
        out["cuda_context"] = [over["cuda_context_bytes"]]
    if fragmentation is not None:
        out["fragmentation"] = [over["fragmentation"]]
    return out


def _memory_fit(
    p: float | None,
    cluster: str,
    ranks: int,
    strategy: str,
    *,
    gpus_per_node: int | None,
    **kw: Any,
) -> Any:
    """What makes ``memory``'s layout fit on ``ranks`` of ``cluster``: the changes
    :func:`costmodel.strategy.advisor.fit_suggestions` prices (``kw``: its keywords, the
    activations' and the overheads'), as ``step`` lists them; None where the ranks are not
    whole nodes of the cluster (or of its ``gpus_per_node`` slice), which no change is priced
    on. ``memory --strategy`` and ``memory --strategy all`` (from fsdp, the most sharded, as
    ``step --strategy all``) both say it through this one function."""
    from .. import presets
    from ..strategy.advisor import fit_suggestions

    gpn = int(presets.cluster(cluster, gpus_per_node=gpus_per_node).gpus_per_node)
    if ranks % gpn != 0:
        return None
    if gpus_per_node is not None:  # a slice of each node, as the memory was sized on
        kw["gpus_per_node"] = gpus_per_node
    return fit_suggestions(
        p, cluster=cluster, nodes=ranks // gpn, strategy=strategy, band=False, **kw
    )


def _missing(value: Any) -> bool:
    """A sweep cell with no value: NaN in a float column, ``<NA>`` in an ``Int64`` one."""
    import math

    return (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


def _memory_all_out(
    axes: dict[str, Any],
    arch: str | None,
    as_json: bool,
    fit_kw: dict[str, Any] | None = None,
    bucket: int | None = None,
) -> None:
    """``memory --strategy all``: the memory sweep's rows of ``axes`` (``strategy=all``: every
    layout :func:`costmodel.strategy.advisor.candidate_layouts` lists), as JSON (``layouts``:
    the rows in the sweep's columns) or a table of memory per GPU and fit. Where no layout
    fits, what makes fsdp fit (:func:`_memory_fit` of ``fit_kw``; ``fit_suggestions`` in
    JSON), as ``step --strategy all`` says it. A ``bucket`` (``--bucket``) given to layouts
    with no gradient bucket (fsdp, hsdp) is warned of, as ``step --strategy all`` warns of it:
    those rows are sized without it."""

    from .. import sweep as sweep_mod
    from ..sweep.evaluate import NOTES_SEPARATOR

    df = sweep_mod.sweep(kind="memory", **axes)
    rows: list[dict[str, Any]] = [
        {k: (None if _missing(v) else v) for k, v in r.items()} for r in df.to_dict("records")
    ]
    for r in rows:  # a list, as `memory --json` and `step --strategy all --json` give them
        r["notes"] = [n for n in str(r["notes"] or "").split(NOTES_SEPARATOR) if n]
    _warn_unused_bucket([str(r["strategy"]) for r in rows], bucket)  # said in --json too
    fa = None
    if fit_kw is not None and not any(r["fits"] for r in rows):
        fa = _memory_fit(**fit_kw)
    if as_json:
        out: dict[str, Any] = {"preset": axes["preset"], "ranks": axes["ranks"], "layouts": rows}
        if fa is not None:
            out["fit_suggestions"] = fa.as_dict()
        _print_json(out)
        return
    first = rows[0]
    what = _arch_name(arch) or f"{units.format_count(float(first['params']))} params"
    gpn = axes.get("gpus_per_node", [None])[0]
    where = "" if gpn is None else f", {units.format_counted(int(gpn), 'GPU')} of each node"
    typer.echo(
        f"{what}, {axes['recipe']}, on {units.format_counted(int(axes['ranks']), 'rank')} of "
        f"{axes['preset']}{where} ({units.format_bytes(first['gpu_memory_GB'] * 1e9)} per GPU): "
        "every layout `step --strategy all` ranks, memory per GPU"
    )
    if not any(r["fits"] for r in rows):  # said first, as `step --strategy all` says it
        typer.echo("NOTHING FITS: every layout needs more memory than the GPU has")
        if fa is not None:
            typer.echo(_fit_text(fa))
    notes = first["notes"]  # the activations' line, then what is left out, as `memory` says them
    if notes:
        typer.echo(cli_words(notes[0]))
    typer.echo(f"{'layout':<20}{'memory/GPU':>12}  fits")
    for r in rows:
        total, cap = r["memory_GB"] * 1e9, r["gpu_memory_GB"] * 1e9
        fit = "yes" if r["fits"] else f"no ({units.format_bytes(total - cap)} over)"
        typer.echo(f"{r['layout']:<20}{units.format_bytes(total):>12}  {fit}")
    for n in notes[1:]:
        typer.echo(f"note: {cli_words(n)}")


def _layout_of(layout_kw: dict[str, Any], ranks: int) -> Any:
    """The :class:`~costmodel.strategy.layout.Layout` of
    :func:`~costmodel.strategy.memory.stage_memory`'s keywords on ``ranks`` ranks."""
    from ..strategy.layout import make_layout

    return make_layout(ranks=ranks, **{k: v for k, v in layout_kw.items() if v is not None})


def _layout_identity(layout_kw: dict[str, Any], ranks: int) -> dict[str, Any]:
    """The five keys naming the layout of :func:`~costmodel.strategy.memory.stage_memory`'s
    keywords on ``ranks`` ranks (:meth:`costmodel.strategy.layout.Layout.identity`: hsdp's
    group by the Layout's own rule, --group-size, else one node; the resharding fsdp/hsdp do,
    given or the default)."""
    from ..strategy.layout import make_layout

    fields = {k: v for k, v in layout_kw.items() if v is not None}
    return make_layout(ranks=ranks, **fields).identity()


# --- batch ------------------------------------------------------------------------------------
def _tokens(text: str, name: str) -> int:
    """A whole token count >= 1: ``4194304``, ``4M`` (decimal) or ``4Mi`` (binary, 4 x 2^20),
    the grammar of every token count (:func:`costmodel.units.parse_tokens`)."""
    rule = f"{name}: must be a whole number of tokens >= 1, got {text!r}"
    try:
        value = units.parse_tokens(text, name=name)
    except ValueError as exc:  # -1 or 1.5: one rule with 0's, not the parser's ">= 0"
        if "must be a whole token count" in str(exc):
            raise ValueError(rule) from None
        raise
    if value < 1:
        raise ValueError(rule)
    return value


#: batch's options by the quantity each gives, for :func:`costmodel.batch.split_refusal`
_BATCH_OPTIONS = {
    "local_batch": "--local-batch",
    "ranks": "--ranks",
    "accumulation": "--accumulation",
    "global_batch": "--global-batch",
    "global_tokens": "--global-tokens",
    "sequence_length": "--seq",
}

#: train/scenario/step's words: the GPUs are --nodes x the cluster's GPUs per node, and the
#: global batch in samples is no option of theirs (batch's --global-batch), said in words
_SPLIT_OPTIONS = _BATCH_OPTIONS | {
    "local_batch": "--micro-batch",
    "ranks": "GPUs",
    "global_batch": "global batch",
}


def batch(
    local: Annotated[
        int | None,
        typer.Option(
            "--local",
            "--local-batch",
            "--micro-batch",
            min=1,
            help="Local batch per GPU [samples]: the micro-batch, as step, scenario and train's "
            "--micro-batch.",
        ),
    ] = None,
    ranks: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Data-parallel ranks N [GPUs] (or --nodes); with --cluster, N <= the node's "
            "GPUs is one node's slice, a multiple of them whole nodes, as step reads it.",
        ),
    ] = None,
    nodes: _NodesOfClusterOpt = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="Cluster preset whose GPUs per node --nodes (or --ranks) counts."),
    ] = None,
    gpus_per_node: _GpnOfNodesOpt = None,
    accumulation: Annotated[
        int | None,
        typer.Option(
            min=1, help="Gradient-accumulation steps A: micro-batches per optimizer step."
        ),
    ] = None,
    global_: Annotated[
        int | None,
        typer.Option("--global", "--global-batch", min=1, help="Global batch [samples]."),
    ] = None,
    global_tokens: Annotated[
        str | None,
        typer.Option(
            "--global-tokens",
            help="Global batch in tokens per step (needs --seq): 4Mi = 4 x 2^20, or 4194304 "
            "(instead of --global).",
        ),
    ] = None,
    sequence_length: _SeqOpt = None,
    base_lr: Annotated[
        float | None,
        typer.Option(help="Learning rate tuned at --base-batch/--base-tokens, > 0."),
    ] = None,
    base_batch: Annotated[
        int | None, typer.Option(min=1, help="Global batch the LR was tuned at [samples].")
    ] = None,
    base_tokens: Annotated[
        str | None, typer.Option(help="Global batch the LR was tuned at, in tokens: 1M.")
    ] = None,
    rule: Annotated[
        str | None,
        typer.Option(
            help="LR rule: sqrt (Adam/AdamW, Malladi et al. 2022) or linear (SGD, ResNet), "
            "with --base-lr.  [default: sqrt with --base-tokens, linear with --base-batch, as "
            "the Batch page and the API]"
        ),
    ] = None,
    critical_batch: Annotated[
        str | None,
        typer.Option(
            help="Critical batch size (McCandlish et al. 2018), in the unit of the base batch: "
            "the LR is not scaled past it."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Solve B_global = B_local x N x A for the one unknown left out; in samples or tokens.

    With --seq the global batch is also given in tokens (--global-tokens instead of --global
    plans tokens first); --base-lr scales a tuned learning rate to the new global batch.
    The ranks are --ranks, or --nodes N x the GPUs per node: --cluster NAME's, or
    --gpus-per-node G (a slice of each of its nodes, checked against the preset as step,
    scenario and train check it; without --cluster, G GPUs in each node). --nodes has no
    default here and no cluster is assumed for it (step, scenario and train assume dgx-h100):
    the ranks may be the unknown solved, and a GPU count should not come from hardware the
    user did not name.

    Examples (accumulation for a global batch of 1024 on 64 GPUs at 4 each; 4M tokens at
    sequence length 4096 on 512 GPUs, AdamW tuned at 3e-4 for 1M tokens):

    \b
        costmodel batch --local 4 --ranks 64 --global 1024

    \b
        costmodel batch --local 1 --ranks 512 --global-tokens 4Mi --seq 4096 --base-lr 3e-4 --base-tokens 1Mi
    """
    from .. import batch as bt

    rule_given = rule is not None  # a rule scales the tuned LR: given without one, refused
    if rule is not None and rule not in bt.LR_RULES:
        raise ValueError(
            f"--rule: must be one of {', '.join(bt.LR_RULES)}, got {rule!r}" + bt.rule_hint(rule)
        )
    if cluster is not None and ranks is not None:
        # the preset's nodes these ranks take, as step's, scenario's, train's and the sweep's:
        # then counted as those --nodes are (whole nodes keep the preset's GPUs per node)
        nodes, gpus_per_node = preset_ranks(cluster, ranks, nodes, gpus_per_node)
        ranks = None
    if cluster is not None and nodes is None:
        raise ValueError("--cluster: only with --nodes or --ranks (it gives the GPUs per node)")
    by_nodes = nodes is not None
    ranks = _ranks_of_nodes(ranks, nodes, cluster, gpus_per_node)
    tokens = _tokens(global_tokens, "--global-tokens") if global_tokens else None
    seq_n = _seq(sequence_length)
    # the options' names, not solve_batch's arguments ("exactly one ... must be None")
    if tokens is not None and seq_n is None:
        raise ValueError("--global-tokens: needs --seq (tokens per sample)")
    if tokens is not None and global_ is not None:
        raise ValueError(
            "--global-batch, --global-tokens: give the global batch in samples or in tokens, "
            "not both"
        )
    # micro-batch and accumulation both left out, the ranks and the global batch given: the
    # micro-batch step, scenario and train take then (1), the accumulation solved, and said
    local_assumed = (
        local is None
        and accumulation is None
        and ranks is not None
        and (global_ is not None or tokens is not None)
    )
    if local_assumed:
        from ..strategy.step import step_default

        local = int(step_default("micro_batch"))
    given = {
        "--local-batch": local,
        "--ranks": ranks,
        "--accumulation": accumulation,
        "--global-batch" if global_ is not None or tokens is None else "--global-tokens": (
            global_ if global_ is not None else tokens
        ),
    }
    unknown = [name for name, v in given.items() if v is None]
    if len(unknown) != 1:
        raise ValueError(
            "batch: give three of --local-batch, --ranks, --accumulation and --global-batch "
            "(--nodes for --ranks, --global-tokens with --seq for --global-batch) and the fourth "
            "is solved; "
            + (f"missing: {', '.join(unknown)}" if unknown else "all four are given")
            + (" (--nodes gives the ranks)" if by_nodes and not unknown else "")
        )
    try:
        sol = bt.solve_batch(
            local_batch=local,
            ranks=ranks,
            accumulation=accumulation,
            global_batch=global_,
            global_tokens=tokens,
            sequence_length=seq_n,
        )
    except bt.BatchSplitError as exc:  # the ways out in the options' names (one wording)
        names = _BATCH_OPTIONS | ({"ranks": "GPUs"} if by_nodes else {})
        raise ValueError(bt.split_refusal(exc, names)) from None
    data: dict[str, Any] = dict(sol.as_dict())
    if "global_tokens" in data:
        data["tokens_per_step"] = data["global_tokens"]
    if local_assumed:  # not given: step's default, said on stderr too
        data["assumed"] = ["local_batch"]
    if by_nodes:  # how the ranks were counted, as step/scenario/train --json name them
        data.update(nodes=nodes, gpus_per_node=sol.ranks // int(nodes or 1))
        if cluster is not None:  # the preset named, as step's and memory's --json name it
            data["preset"] = cluster
    lr_rows: list[tuple[str, str]] = []
    if base_lr is not None:
        if base_batch is not None and base_tokens is not None:
            raise ValueError(
                "--base-batch, --base-tokens: give the batch the LR was tuned at once, in "
                "samples or in tokens, not both"
            )
        if base_batch is None and base_tokens is None:
            raise ValueError("--base-batch or --base-tokens: give the batch the LR was tuned at")
        base: float
        new: int
        if base_tokens is not None:
            if sol.global_tokens is None:
                raise ValueError("--base-tokens: needs --seq (the new batch in tokens)")
            base, new, unit = _tokens(base_tokens, "--base-tokens"), sol.global_tokens, "tokens"
        else:
            assert base_batch is not None
            base, new, unit = float(base_batch), sol.global_batch, "samples"
        crit = _tokens(critical_batch, "--critical-batch") if critical_batch else None
        # not given: the unit's rule (bt.LR_RULE_DEFAULT), the API's and the Batch page's default
        rule = (
            bt.LR_RULE_DEFAULT["tokens" if unit == "tokens" else "samples"]
            if rule is None
            else rule
        )
        lr = bt.scale_learning_rate(base_lr, base, new, rule=rule, critical_batch=crit)
        who, cite = bt.LR_RULE_INFO[rule]
        data["learning_rate"] = {
            "base_lr": base_lr, "base_batch": base, "new_batch": new, "unit": unit,
            "rule": rule, "rule_for": who, "citation": cite, "critical_batch": crit,
            "learning_rate": float(lr),
        }  # fmt: skip
        capped = crit is not None and new > max(crit, base)
        lr_rows = [
            ("learning rate", f"{float(lr):.4g} ({who})"),
            ("", f"from {base_lr:g} at {units.format_count(base)} {unit}; {cite}"),
        ]
        if capped and crit is not None:
            lr_rows.append(("", f"capped at the critical batch {units.format_count(crit)} {unit}; "
                                + bt.CRITICAL_BATCH_CITATION))  # fmt: skip
    elif any(x is not None for x in (base_batch, base_tokens, critical_batch)):
        raise ValueError("--base-lr: give the tuned learning rate to scale")
    elif rule_given:  # it was ignored: no LR to scale
        raise ValueError(
            "--rule: scales a tuned learning rate; give --base-lr with --base-batch or "
            "--base-tokens"
        )
    said = (
        f"--local-batch {local} (the micro-batch step, scenario and train take without one; "
        "give --local-batch or --accumulation for another split)"
    )
    if as_json:
        _print_json(data)
        if local_assumed:
            _assumed_line(said)
        return
    # the four factors in words with their units (the Batch page's labels), the one solved
    # said with how ("= global / (local x N)"), the ranks of --nodes with how they count
    rows: list[tuple[str, str]] = []
    for name, label in bt.FIELD_LABELS.items():
        value = f"{int(data[name]):,}"
        if name == sol.solved:
            value += f" (solved: {bt.SOLVED_AS[name]})"
        elif name == "global_batch" and tokens is not None:  # typed in tokens
            value += " (= tokens / sequence length)"
        elif name == "local_batch" and local_assumed:
            value += " (assumed: step's default)"
        elif name == "ranks" and by_nodes:
            value += f" (= {nodes:,} nodes x {data['gpus_per_node']:,} GPUs per node)"
        rows.append((label, value))
    if sol.global_tokens is not None:
        rows.append(("sequence length [tokens]", f"{sol.sequence_length:,}"))
        rows.append(
            ("global batch [tokens]", f"{units.format_count(sol.global_tokens)} tokens per step")
        )
    typer.echo(_kv(rows + lr_rows))
    if local_assumed:
        _assumed_line(said)


# --- step -------------------------------------------------------------------------------------
def step(
    params: _ParamsOpt = None,
    arch: Annotated[
        str | None,
        typer.Option(
            help="Architecture preset, or your model's Hugging Face config.json (or its "
            "folder): its parameters and real tensor list (buckets)."
        ),
    ] = None,
    compute_time: Annotated[
        str | None,
        typer.Option(
            help=f"Measured compute (forward + backward) per micro-batch: 400ms. {_MEASURED_NOT_WITH}"
        ),
    ] = None,
    tokens_per_gpu: Annotated[
        str | None,
        typer.Option(
            help="Tokens per GPU per micro-batch: 8192 or 8Ki. One link: with --mfu and "
            "--peak-flops; with --cluster: micro-batch x --seq, so a multiple of --seq (8k = "
            "8000 is not one of 4096; 8Ki = 8192 is), priced like them (fitted efficiency or "
            "--mfu)."
        ),
    ] = None,
    mfu: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Model FLOP utilisation [0.001, 1], of the --precision's dense peak with --cluster "
            "(default with --cluster: the fitted efficiency; on one link, of --peak-flops, "
            "default 0.4); PaLM's: of the model's FLOPs, the same compute under any --recompute.",
        ),
    ] = None,
    peak_flops: Annotated[
        str | None,
        typer.Option(
            help="Peak dense FLOP/s per GPU of the one-link step (--ranks/--bandwidth with "
            "--tokens-per-gpu, which needs it: no preset there to take it from), 1e9..1e18: 989T. With "
            "--cluster the preset's GPU gives it (--precision picks bf16's or fp8's)."
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="Cluster preset (the realistic model; dgx-h100 by default, as train, scenario "
            "and the API's strategy_step, unless --ranks/--bandwidth give one link).  "
            # None in the signature (--ranks/--bandwidth's one link needs no preset); the
            # preset it assumes otherwise, marked as click marks train's and scenario's
            "[default: dgx-h100]",
        ),
    ] = None,
    nodes: _NodesOpt = DEFAULT_NODES,
    gpus_per_node: _GpnOpt = None,
    ranks: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Ranks: with --bandwidth, the one link's; with --cluster, instead of --nodes: "
            "N <= the node's GPUs is one node's slice, a multiple of them whole nodes, as the "
            "sweep's ranks axis reads it.",
        ),
    ] = None,
    bandwidth: Annotated[str | None, typer.Option(help="Per-direction bandwidth: 50GB/s.")] = None,
    latency: Annotated[
        str | None,
        typer.Option(help="All-reduce latency per step (with --bandwidth): 5us (default 0s)."),
    ] = None,
    bucket: _BucketOpt = None,
    gradient_bytes: Annotated[
        float | None,
        typer.Option(
            help="Bytes per gradient element all-reduced, (0, 8] (with --bandwidth; default 2 = bf16, "
            "1 = fp8). With --cluster: --grad-dtype."
        ),
    ] = None,
    accumulation: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Micro-batches per step (default 1, or solved from --global-tokens).",
        ),
    ] = None,
    global_tokens: _GlobalTokensOpt = None,
    no_sync: Annotated[
        bool, typer.Option("--no-sync/--sync", help="Skip all-reduce on non-final micro-batches.")
    ] = True,
    # the cluster step's options below default to None: not given (strategy_step's default,
    # resolved in _step_on_cluster), so that one typed at the default value is "given" (the
    # one-link step refuses it as it refuses any other value)
    model: Annotated[str | None, typer.Option(help="With --cluster: " + _MODEL_HELP)] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="ddp, zero1, zero2, fsdp, hsdp, or all (every strategy ranked; with --cluster). "
            "Default: --zero's; ddp when neither is given."
        ),
    ] = None,
    zero: Annotated[
        int | None,
        typer.Option(
            "--zero",
            "--zero-stage",
            help="ZeRO stage 0-3 as train, scenario and memory take it: 0 ddp, 1 zero1, 2 zero2, "
            "3 fsdp (or --strategy).",
        ),
    ] = None,
    group_size: _GroupOpt = None,
    reshard: _ReshardOpt = None,
    bucket_view: _BucketViewOpt = None,
    param_dtype: _StepParamDtypeOpt = None,
    grad_dtype: _GradDtypeOpt = None,
    contention: _ContentionOpt = None,
    power_limit_w: _PowerOpt = None,
    precision: _PrecisionOpt = None,
    recipe: Annotated[
        str | None,
        typer.Option(
            help="Precision/optimizer recipe (memory; with --cluster; default mixed-adam)."
        ),
    ] = None,
    micro_batch: Annotated[
        int | None,
        typer.Option(
            "--micro-batch",
            "--local-batch",
            min=1,
            help="Micro-batch per GPU [samples] (with --cluster; default 1).",
        ),
    ] = None,
    seq: _SeqOpt = None,
    recompute: Annotated[str | None, typer.Option(help=_RECOMPUTE_HELP + " Default none.")] = None,
    loss: Annotated[str | None, typer.Option(help=_LOSS_HELP + " Default fp32.")] = None,
    flash: Annotated[
        bool | None,
        typer.Option(
            "--flash/--no-flash",
            help="FlashAttention (with --arch and --cluster; default on), as train, scenario "
            "and memory take it: --no-flash keeps the s x s attention scores in the memory.",
        ),
    ] = None,
    cuda_context: _CudaContextOpt = None,
    fragmentation: _FragmentationOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One training step: compute, communication, exposed comm, bound, efficiency, memory.

    On a cluster preset (--cluster; without it and without a link, dgx-h100, the default of
    train, scenario and the API, named on stderr as assumed) every strategy is priced
    (``costmodel.strategy``: its collectives through the chosen --model, its memory from the
    same layout, with --cuda-context and --fragmentation as `costmodel memory` adds them);
    --strategy all ranks them all. With --ranks and --bandwidth it is the lesson's DDP step on
    one link.

    Examples (the lesson's practice problem 1: comms-bound, 58% efficient as printed, since
    gradients are sent only while backward runs; the lesson's 73% overlaps the all-reduce with
    all of the compute, printed beside it as "with perfect overlap"; then the strategies of
    Llama-3.1-8B on 8 DGX H100 nodes):

    \b
        costmodel step --params 7B --compute-time 400ms --ranks 64 --bandwidth 50GB/s

    \b
        costmodel step --arch llama-3.1-8b --cluster dgx-h100 --nodes 8 --strategy all
    """
    from .. import ddp

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    c_ = _contention(contention)
    seq_n = _seq(seq)
    _one_compute(mfu, compute_time, power_limit_w=power_limit_w)
    if compute_time is not None and tokens_per_gpu is not None:
        raise ValueError("give --compute-time or --tokens-per-gpu (with --mfu), not both")
    p_given = _params_given(params, arch)
    # --zero as train and scenario read it (`step --zero 3` said "No such option: --zero")
    strategy = _strategy_of(strategy, zero)
    # one default for one question: without a link (--bandwidth, --latency, --gradient-bytes)
    # the step is on the cluster train, scenario and strategy_step default to (--ranks N alone
    # its N GPUs, as `train --ranks N` reads them), and the output says it was assumed
    link = [
        name
        for name, value in (
            ("--bandwidth", bandwidth),
            ("--latency", latency),
            ("--gradient-bytes", gradient_bytes),
        )
        if value is not None
    ]
    assumed = cluster is None and not link
    if assumed:
        from ..scenario import Scenario

        cluster = str(Scenario.model_fields["cluster"].default)
    if cluster is not None:
        if bandwidth is not None:
            raise ValueError(CLUSTER_OR_LINK)
        if ranks is not None:  # the preset's nodes these ranks take, as the sweep's
            nodes, gpus_per_node = preset_ranks(
                cluster, ranks, nodes if option_given("--nodes") else None, gpus_per_node
            )
        _refuse_activation_only(arch, loss, flash)  # the one-link step refuses them below
        # options of the one-link step only: refused rather than silently ignored
        if gradient_bytes is not None:
            raise ValueError(
                "--gradient-bytes: an option of the one-link step (--ranks/--bandwidth); with "
                "--cluster give --grad-dtype fp32, bf16 or fp16"
            )
        if latency is not None:
            raise ValueError(
                "--latency: an option of the one-link step (--ranks/--bandwidth); with "
                "--cluster the preset's links and the --model give the latency"
            )
        if global_tokens is not None:
            # the global batch split as train and scenario split it (_batch_of_options, on
            # batch.solve_batch), with the same refusals; the tokens per GPU, if given, are
            # the micro-batch it solves from
            from ..strategy.step import step_default

            micro_batch, accumulation = _batch_of_options(
                {
                    "local_batch": micro_batch,
                    "accumulation": accumulation,
                    "tokens_per_gpu": tokens_per_gpu,
                    "global_tokens": global_tokens,
                    "cluster": cluster,
                    "nodes": nodes,
                    "gpus_per_node": gpus_per_node,
                },
                int(step_default("sequence_length") if seq_n is None else seq_n),
            )
            tokens_per_gpu = None
        _step_on_cluster(
            p_given,
            arch,
            cluster,
            nodes,
            gpus_per_node=gpus_per_node,
            strategy=strategy,
            group_size=group_size,
            reshard=reshard,
            bucket_view=bucket_view,
            param_dtype=param_dtype,
            grad_dtype=grad_dtype,
            contention=c_,
            power_limit_w=power_limit_w,
            precision=precision,
            recipe=recipe,
            micro_batch=micro_batch,
            seq=seq_n,
            accumulation=1 if accumulation is None else accumulation,
            no_sync=no_sync,
            mfu=mfu,
            compute_time=compute_time,
            tokens_per_gpu=tokens_per_gpu,
            peak_flops=peak_flops,
            recompute=recompute,
            loss=loss,
            flash=flash,
            bucket=bucket,
            model=model,
            as_json=as_json,
            assumed_cluster=assumed,
            cuda_context=cuda_context,
            fragmentation=fragmentation,
        )
        return
    if power_limit_w is not None:
        raise ValueError(
            "--power-limit-w: needs --cluster NAME (the limit caps its GPUs' fitted compute); "
            "--ranks/--bandwidth takes a measured --compute-time"
        )
    if strategy != "ddp":
        typed = f"--zero {zero}" if zero not in (None, 0) else f"--strategy {strategy}"
        raise ValueError(
            f"{typed}: the sharded strategies need --cluster NAME (their "
            f"collectives span nodes and groups); the one-link step ({', '.join(link)} given) "
            "prices ddp only"
        )
    # options of the cluster step only: refused rather than silently ignored
    cluster_only = {  # given is given, even at the default value
        # the nodes of a preset (as `collective` refuses them over one link): --ranks counts
        # the link's GPUs, so --nodes 8 beside it was read past in silence
        "--nodes": nodes if nodes != DEFAULT_NODES else None,
        "--gpus-per-node": gpus_per_node,
        "--grad-dtype": grad_dtype,
        "--param-dtype": param_dtype,
        "--group-size": group_size,
        "--reshard/--no-reshard": reshard,
        "--gradient-as-bucket-view/--no-gradient-as-bucket-view": bucket_view,
        "--recipe": recipe,
        "--precision": precision,
        "--micro-batch": micro_batch,
        "--recompute": recompute,
        "--loss": loss,
        "--flash" if flash else "--no-flash": flash,
        "--seq": seq,
        "--model": model,
        "--global-tokens": global_tokens,
        # the one-link step has no memory to add them to
        "--cuda-context": cuda_context,
        "--fragmentation": fragmentation,
    }
    given = [name for name, value in cluster_only.items() if value is not None]
    if given:
        raise ValueError(
            f"{given[0]}: an option of the step on a cluster preset (--cluster NAME); the "
            "one-link step (--ranks/--bandwidth) takes --gradient-bytes, --latency, --bucket, "
            "--accumulation, --no-sync and --contention"
        )
    from ..strategy.layout import bucket_cap_bytes_for

    kwargs: dict[str, Any] = dict(
        bucket_cap_bytes=bucket_cap_bytes_for("ddp", _bucket_bytes(bucket), 1.0),
        gradient_bytes_per_param=2.0 if gradient_bytes is None else gradient_bytes,
        accumulation=1 if accumulation is None else accumulation,
        no_sync=no_sync,
        comm_contention=c_,
    )
    if ranks is None or bandwidth is None:  # before the compute: without them, no step at all
        # the two ways, each as it is typed; only the options given are named as given
        example = "--cluster NAME --ranks N" if ranks is None else preset_ranks_example(ranks)
        raise ValueError(
            f"{'--bandwidth' if bandwidth is None else '--ranks'}: missing; {', '.join(link)} "
            "given: the one-link DDP step needs both --ranks and --bandwidth (with "
            f"--compute-time); or, without {', '.join(link)}, a cluster: {example}"
        )
    if compute_time is not None:
        bare_seconds_warning("--compute-time", compute_time)
        kwargs["compute_time_s"] = units.parse_duration(compute_time, name="--compute-time")
    elif tokens_per_gpu is None:
        # the whole second way at once: --tokens-per-gpu alone was then refused for want of
        # --peak-flops (a second round trip); --mfu has a default here (DEFAULT_MFU)
        from ..strategy.compute import DEFAULT_MFU

        raise ValueError(
            "step: needs --compute-time, or --tokens-per-gpu with --peak-flops (e.g. "
            f"--tokens-per-gpu 4096 --peak-flops 989T; --mfu, default {DEFAULT_MFU:g})"
        )
    else:
        kwargs["tokens_per_gpu"] = units.parse_tokens(tokens_per_gpu, name="--tokens-per-gpu")
        from ..strategy.compute import DEFAULT_MFU

        kwargs["mfu"] = DEFAULT_MFU if mfu is None else mfu  # one link: no GPU to fit
    n = ranks
    kwargs["bandwidth_bytes_per_s"] = units.parse_rate(bandwidth, name="--bandwidth")
    kwargs["latency_s"] = units.parse_duration(latency or "0s", name="--latency")
    if latency is not None:
        bare_seconds_warning("--latency", latency, "us", kind="latency")
    if "tokens_per_gpu" in kwargs:
        if peak_flops is None:
            raise ValueError("--tokens-per-gpu without --cluster needs --peak-flops, e.g. 989T")
        kwargs["peak_flops"] = units.parse_count(peak_flops, name="--peak-flops")
    a = None
    if arch is not None:
        from ..architecture import resolve_params

        # ddp_step(arch=): its real tensors (buckets) and, for a mixture of experts, the
        # compute of the parameters a token passes through (its active ones)
        p, a = resolve_params(p_given, arch)
        kwargs["arch"] = a
    else:
        p = float(p_given)  # type: ignore[arg-type]
    result = ddp.ddp_step(p, n, **kwargs)
    from ..strategy.layout import make_layout
    from ..strategy.step import left_out_notes

    data = {
        "params": p,
        "arch": arch,
        **make_layout(strategy="ddp", ranks=n).identity(),  # named as every --json names it
        "buckets": result.buckets,
        "ranks": n,
        "compute_s": result.compute_s,
        "comm_s": result.comm_s,
        "exposed_comm_s": result.exposed_comm_s,
        "step_time_s": result.step_time_s,
        "bound": result.bound,
        "efficiency": result.efficiency,
        "one_gpu_step_s": result.one_gpu_step_s,
        "compute_share": result.compute_share,
        # the lesson's answer beside the timeline's: every all-reduce hidden under any compute,
        # max(compute, comm) (practice problem 1b's 550 ms and 73 %)
        "perfect_overlap_step_s": result.perfect_overlap_step_s,
        "perfect_overlap_efficiency": result.perfect_overlap_efficiency,
        "comm_contention": c_,
        # no band, said as the cluster step's JSON says a band unknown (null ends, band_note)
        "step_time_lo_s": None,
        "step_time_hi_s": None,
        "band_note": ddp.NO_BAND,
        # what the step leaves out, as the cluster step says it (strategy.step.left_out_notes)
        "notes": list(left_out_notes(a, p)),
    }
    if as_json:
        data["timeline"] = _jsonable(result.timeline)
        _print_json(data)
        return
    typer.echo(
        _kv(
            [
                ("ranks", str(n)),
                (
                    "buckets",
                    f"{result.buckets}" + (f" ({_arch_name(arch)} tensors)" if arch else ""),
                ),
                ("compute", units.format_duration(result.compute_s)),
                ("all-reduce (sum of buckets)", units.format_duration(result.comm_s)),
                ("exposed communication", units.format_duration(result.exposed_comm_s)),
                # no band to show: said, as the cluster step says a band unknown (--cluster
                # prices the step with the band fitted on measured runs)
                (
                    "step time",
                    f"{units.format_duration(result.step_time_s)} ({cli_words(ddp.NO_BAND)}; "
                    "--cluster NAME for a step with its band)",
                ),
                ("bound", ddp.bound_text(result)),
                ("scaling efficiency", _efficiency_text(result.efficiency, result.one_gpu_step_s)),
                (
                    "with perfect overlap",
                    f"step {units.format_duration(result.perfect_overlap_step_s)}, scaling "
                    f"efficiency {100 * result.perfect_overlap_efficiency:.1f}% (the lesson's "
                    "max(compute, all-reduce): every bucket hidden under any compute, the "
                    "forward pass too)",
                ),
                ("compute share of step", f"{100 * float(result.compute_share):.1f}%"),
                ("overlap contention", f"c = {c_:g}"),
            ]
        )
    )
    for note in data["notes"]:
        typer.echo(f"note: {cli_words(note)}")


def _efficiency_text(efficiency: float, one_gpu_s: float) -> str:
    """:func:`costmodel.strategy.step.efficiency_text` (imported when a step is printed)."""
    from ..strategy.step import efficiency_text

    return efficiency_text(efficiency, one_gpu_s)


def _say_assumed(cluster: str | None) -> None:
    """The cluster ``step`` assumed (none given), on stderr once the answer is computed, as
    ``validate`` says what it assumed: stdout is the answer, and a refusal stays one line."""
    if cluster is not None:
        _assumed_line(f"cluster {cluster} (the default; --cluster NAME for another)")


def _say_assumed_ranks(ranks: int | None) -> None:
    """The ranks ``memory`` assumed (no --ranks, --nodes, --cluster or --gpus-per-node): one
    node of the default cluster's GPUs (:func:`costmodel.hardware.default_ranks`), said as
    ``step`` says the cluster it assumed."""
    if ranks is not None:
        _assumed_line(
            f"{units.format_counted(ranks, 'rank')}, one node (the default; --ranks N, or "
            "--cluster NAME for one node of it, for another)"
        )


def _assumed_line(what: str) -> None:
    """One ``assumed: ...`` line on stderr, after the answer (stdout stays the answer)."""
    typer.echo(f"assumed: {what}", err=True)


def _step_on_cluster(
    p: float | None,
    arch: str | None,
    cluster: str,
    nodes: int,
    *,
    gpus_per_node: int | None = None,
    strategy: str,
    contention: float,
    compute_time: str | None,
    tokens_per_gpu: str | None,
    peak_flops: str | None,
    mfu: float | None,
    bucket: str | None,
    as_json: bool,
    group_size: int | None,
    reshard: bool | None,
    power_limit_w: float | None = None,
    assumed_cluster: bool = False,
    bucket_view: bool | None = None,
    **kw: Any,
) -> None:
    """``step --cluster``: :func:`costmodel.strategy.strategy_step` (or the advisor for all);
    ``assumed_cluster``: the cluster is the default, not given, and the output says so. An
    option of ``kw`` that is None was not given: it takes strategy_step's default."""
    from ..strategy.step import step_default

    micro_batch_given = kw["micro_batch"] is not None
    for key, keyword in (("recipe", "recipe"), ("micro_batch", "micro_batch"),
                         ("seq", "sequence_length"), ("recompute", "recompute"), ("loss", "loss"),
                         ("model", "model"), ("param_dtype", "param_dtype"),
                         ("flash", "flash_attention")):  # fmt: skip
        if kw[key] is None:
            kw[key] = step_default(keyword)
    _check_loss(kw["loss"])
    from .. import presets
    from ..strategy import strategy_step
    from ..strategy.advisor import advise, fit_suggestions
    from ..strategy.band import band_note

    st = _strategy_of(strategy, None)
    c = presets.cluster(
        cluster,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        power_limit_w=power_limit_w,
        field="cluster",
    )
    compute_s = tok = None
    if peak_flops is not None:
        raise ValueError(
            "--peak-flops: an option of the step over one link (--ranks/--bandwidth); with "
            "--cluster the preset's GPU gives the peak (--power-limit-w caps it)"
        )
    if compute_time is not None:
        bare_seconds_warning("--compute-time", compute_time)
        compute_s = units.parse_duration(compute_time, name="--compute-time")
    elif tokens_per_gpu is not None:
        # tokens per micro-batch = micro-batch x sequence: the step's own compute road (the
        # fitted efficiency, or --mfu) then prices it and says which; computing a time here
        # and passing it on labelled an MFU-0.40 estimate "measured compute time"
        from ..strategy.compute import micro_batch_of_tokens

        tok = units.parse_tokens(tokens_per_gpu, name="--tokens-per-gpu")
        if micro_batch_given:  # the tokens set it: a second one would be ignored
            raise ValueError(
                "--micro-batch: not with --tokens-per-gpu (the tokens are micro-batch x --seq); "
                "give one of them"
            )
        kw["micro_batch"] = micro_batch_of_tokens(
            tok, kw["seq"], names=("--tokens-per-gpu", "--seq", "--micro-batch")
        )
    common: dict[str, Any] = dict(
        arch=arch,
        recipe=kw["recipe"],
        micro_batch=kw["micro_batch"],
        sequence_length=kw["seq"],
        accumulation=kw["accumulation"],
        no_sync=kw["no_sync"],
        mfu=None if compute_s is not None else mfu,
        compute_time_s=compute_s,
        precision=kw["precision"],
        recompute=kw["recompute"],
        loss=kw["loss"],
        flash_attention=kw["flash"],
        model=kw["model"],
        param_dtype=kw["param_dtype"],
        grad_dtype=kw["grad_dtype"],
        bucket_cap_bytes=_bucket_bytes(bucket),
        comm_contention=contention,
    )
    # the memory's overheads: each step's, and the record's inputs (as memory --json's)
    kw.update(_overheads(kw.pop("cuda_context"), kw["fragmentation"]))
    common.update(cuda_context_bytes=kw["cuda_context_bytes"], fragmentation=kw["fragmentation"])
    if st == "all":
        # the advisor ranks every hsdp group and fsdp with and without resharding: one of them
        # given here would be silently ignored
        for name, value in (("--group-size", group_size), ("--reshard/--no-reshard", reshard)):
            if value is not None:
                raise ValueError(
                    f"{name}: --strategy all ranks every hsdp group that divides the ranks and "
                    "fsdp with and without resharding; give --strategy hsdp or fsdp for one"
                )
        if bucket_view is not None:
            raise ValueError(
                "--gradient-as-bucket-view/--no-gradient-as-bucket-view: --strategy all ranks "
                "ddp at PyTorch's default (no bucket view); give --strategy ddp for the view"
            )
        adv = advise(p, cluster=c, nodes=nodes, **common)
        _warn_unused_bucket([st_.layout.strategy for st_ in adv.steps], common["bucket_cap_bytes"])
        ranked = adv.rows()
        inputs = dict(preset=cluster, kw=kw, nodes=nodes, c=c, mfu=mfu, compute_s=compute_s,
                      tok=tok, bucket=common["bucket_cap_bytes"], power_limit_w=power_limit_w)  # fmt: skip
        fa_all = None
        if adv.best is None:  # what makes it fit, from the most sharded strategy (fsdp)
            fa_all = fit_suggestions(
                p, cluster=c, nodes=nodes, strategy="fsdp", **{**common, "band": False}
            )
        _say_assumed(cluster if assumed_cluster else None)
        if as_json:
            out: dict[str, Any] = adv.as_dict()
            # each strategy's row: the ranking's keys, then the step sweep row's inputs and
            # columns for that layout (what `step --strategy NAME --json` and `sweep --kind
            # step` write for it), so a script reads one vocabulary on every surface
            for row, st_ in zip(out["strategies"], adv.steps, strict=True):
                row.update(_step_record(st_, p, arch, **inputs))
            if fa_all is not None:
                out["fit_suggestions"] = fa_all.as_dict()
            _print_json(out)
            return
        whole = c.node.whole_node_gpus  # a slice of each node: say so, as the billing note does
        gpus = units.format_counted(int(c.ranks), "GPU")
        if whole is not None and whole != c.node.gpus_per_node:
            gpus = f"{c.node.gpus_per_node} of {whole} GPUs per node, {gpus}"
        typer.echo(
            f"{_arch_name(arch) or units.format_count(float(p or 0)) + ' params'} on {cluster} x "
            f"{units.format_counted(nodes, 'node')} ({gpus}), every strategy ranked by step time among those that "
            f"fit, then the rest by memory per GPU (overlap contention c = {contention:g}, "
            f"collective model {kw['model']}):"
        )
        if fa_all is not None:
            typer.echo("NOTHING FITS: every strategy needs more memory than the GPU has")
            typer.echo(_fit_text(fa_all))
        typer.echo(_advice_table(ranked))
        for line in _advice_band_lines(adv.steps, nodes, int(c.ranks)):
            typer.echo(f"band: {line}")
        typer.echo(adv.summary())
        for n in adv.notes:  # what the ranking leaves out, as one strategy's step says it
            typer.echo(f"note: {cli_words(n)}")
        return
    # one set of arguments for the step and for what makes it fit, so that the suggestions'
    # base is the step shown (an hsdp group or --no-reshard dropped there priced another layout)
    layout_kw: dict[str, Any] = dict(
        cluster=c,
        nodes=nodes,
        strategy=st,
        group_size=group_size,
        reshard_after_forward=reshard,
        gradient_as_bucket_view=bucket_view,
        **common,
    )
    s = strategy_step(p, **layout_kw)
    _warn_unused_bucket([s.layout.strategy], common["bucket_cap_bytes"])
    data = {"params": float(p) if p is not None else None, "arch": arch, **s.as_dict()}
    data.update(
        _step_record(
            s,
            p,
            arch,
            cluster,
            kw,
            nodes,
            c,
            mfu=mfu,
            compute_s=compute_s,
            tok=tok,
            bucket=common["bucket_cap_bytes"],
            power_limit_w=power_limit_w,
        )  # fmt: skip
    )
    # the global batch the text prints, as `train --json` and `batch --json` name it: in
    # sequences (micro-batch x ranks x accumulation) and in tokens per step
    from ..batch import global_batch

    data["global_batch"] = int(global_batch(kw["micro_batch"], s.ranks, kw["accumulation"]))
    data["global_tokens"] = int(s.tokens_per_step)
    from ..strategy.step import comm_calls_by_kind

    calls = comm_calls_by_kind(s, c, kw["model"])
    data["comm_calls_by_kind"] = calls
    fa = None
    if not s.fits:
        fa = fit_suggestions(p, **{**layout_kw, "band": False})
        data["fit_suggestions"] = fa.as_dict()
    _say_assumed(cluster if assumed_cluster else None)
    if as_json:
        data["timeline"] = _jsonable(list(s.timeline))
        _print_json(data)
        return
    if fa is not None:
        typer.echo(_fit_text(fa))
    lo, hi = s.step_time_band_s
    note = band_note(s.step_time_band_s, s.compute_source)
    band = (
        f" ({note})" if note else f" (band {units.format_duration(lo)}-{units.format_duration(hi)})"
    )
    if s.band_extrapolated:  # beyond the largest published run it was checked on: said here
        band = band[:-1] + f", extrapolated beyond {s.band_extrapolated_beyond})"
    from ..batch import global_batch

    mb, acc, sq = int(kw["micro_batch"]), int(kw["accumulation"]), int(kw["seq"])
    sequences = int(global_batch(mb, s.ranks, acc))  # the one formula, B_local N A
    rows = [
        ("strategy", s.layout.name),
        ("ranks", str(s.ranks)),
        (
            "global batch",
            f"{units.format_count(s.tokens_per_step)} tokens per step = "
            f"{sequences:,} sequences x {sq:,} tokens (micro-batch {mb:,} x "
            f"accumulation {acc:,} x {units.format_counted(s.ranks, 'GPU')})",
        ),
        ("compute", units.format_duration(s.compute_s)),
        ("compute source", s.compute_label),
        ("compute precision", s.precision),
    ]
    for k, v in s.comm_by_kind_s.items():  # a sum of separate calls: said what it adds
        adds = calls.get(k, {}).get("note", "")  # not `note`: the band's, read below
        rows.append(
            (
                k.replace("_", "-") + " (sum)",
                units.format_duration(v) + (f" ({adds})" if adds else ""),
            )
        )
    rows.append(("exposed communication", units.format_duration(s.exposed_comm_s)))
    # the rest of the step, so that the parts add up to it (exposed = step - compute - these)
    if s.optimizer_s > 0:
        rows.append(("optimizer step", units.format_duration(s.optimizer_s)))
    if s.sync_s > 0:
        rows.append(("waiting for slowest rank", units.format_duration(s.sync_s)))
    if s.host_overhead_s > 0:  # DDP's hooks and bucket copies: neither compute nor comm
        rows.append(("DDP host overhead", units.format_duration(s.host_overhead_s)))
    rows += [
        ("step time", units.format_duration(s.step_time_s) + band),
    ]
    if not note:  # what the band rests on, as the collective bands' Sources: line says
        from ..strategy.band import band_scope

        unbanded = s.optimizer_s + s.host_overhead_s  # beside a measured compute: predicted
        rows.append(("step band", band_scope(s.compute_source, unbanded)))
    rows += [
        ("tokens/s", units.format_count(s.tokens_per_s)),
        ("bound", f"{s.bound}-bound"),
        ("scaling efficiency", _efficiency_text(s.efficiency, s.one_gpu_step_s)),
        ("compute share of step", f"{100 * float(s.compute_share):.1f}%"),
        ("overlap contention", f"c = {s.comm_contention:g}"),
        (
            "memory per GPU",
            " of ".join(units.format_bytes_pair(s.memory_bytes, s.gpu_memory_bytes))
            + (" (fits" if s.fits else " (does NOT fit")
            + _with_overheads(common["cuda_context_bytes"], common["fragmentation"])
            + ")",
        ),
    ]
    typer.echo(_kv(rows))
    if s.band_extrapolated:  # the band's line, as `costmodel collective` writes it
        typer.echo(f"band: {s.band_extrapolation}")
    for n in s.notes:
        if n != s.layout.bucket_note:  # said as --bucket's warning (_warn_unused_bucket)
            typer.echo(f"note: {cli_words(n)}")


def _warn_unused_bucket(strategies: list[str], bucket: int | None) -> None:
    """``costmodel: warning: --bucket: not applied to fsdp, ...; ddp, zero1 and zero2 use
    it`` after the answer, where --bucket was given to a strategy with no gradient bucket: the
    step's own note (:func:`costmodel.strategy.layout.bucket_not_applied`), under the option."""
    from ..strategy.layout import bucket_not_applied
    from ._common import warn_on_success

    note = bucket_not_applied(strategies, bucket)
    if note is not None:
        warn_on_success("--bucket: " + note.removeprefix("bucket_cap_bytes: "))


def _step_record(
    s: Any,
    p: float | None,
    arch: str | None,
    preset: str,
    kw: dict[str, Any],
    nodes: int,
    c: Any,
    *,
    mfu: float | None,
    compute_s: float | None,
    tok: float | None,
    bucket: int | None,
    power_limit_w: float | None,
) -> dict[str, Any]:
    """A step's inputs and a step sweep row's columns (:func:`costmodel.sweep.evaluate.
    step_columns`: the same names, units and values, memory_GB beside memory_bytes), as
    ``step --json`` writes them for its step and ``step --strategy all --json`` for each
    strategy's row, so a script reading one reads the other and the sweep. The layout is
    named by the step's own (``strategy``, ``layout``, ``group_size``,
    ``reshard_after_forward``, ``gradient_as_bucket_view``:
    :meth:`~costmodel.strategy.layout.Layout.identity`), not by
    the options typed. ``notes`` stays a list, as memory --json's (a sweep row joins them)."""
    from ..sweep.evaluate import step_columns

    out: dict[str, Any] = dict(
        params=float(p) if p is not None else None,
        arch=arch,
        preset=preset,
        model=kw["model"],
        recipe=kw["recipe"],
        precision=s.precision,  # the one the step ran at (given, or the recipe's)
        recompute=kw["recompute"],
        loss=kw["loss"],
        param_dtype=kw["param_dtype"],
        grad_dtype=kw["grad_dtype"],
        no_sync=kw["no_sync"],
        nodes=nodes,
        gpus_per_node=int(c.gpus_per_node),
        mfu=mfu,
        compute_time_s=compute_s,
        tokens_per_gpu=tok,
        # the bucket the step applied: none for a strategy without gradient buckets (its
        # notes say why), so the answer does not claim one
        bucket_cap_bytes=None if s.layout.bucket_note else bucket,
        power_limit_w=power_limit_w,
        # the memory's overheads (0 when not given), as memory --json writes them
        cuda_context_bytes=kw["cuda_context_bytes"],
        fragmentation=kw["fragmentation"],
    )
    out.update(step_columns(s, kw["micro_batch"], kw["seq"]))
    out["notes"] = list(s.notes)
    return out


def _with_overheads(cuda_context_bytes: float, fragmentation: float) -> str:
    """``"; incl. CUDA context 2.15 GB and fragmentation 0.05"`` after a memory verdict, where
    the total holds them (:func:`costmodel.strategy.memory.overheads_text`); empty otherwise."""
    from ..strategy.memory import overheads_text

    said = overheads_text(cuda_context_bytes, fragmentation)
    return f"; {said}" if said else ""


def _elapsed_of_days(days: float) -> str:
    """A wall clock in days (as :class:`costmodel.training.TrainingCost` and ``--json`` carry
    it) shown in the unit its size reads best in (:func:`costmodel.units.format_elapsed`)."""
    from ..training import SECONDS_PER_DAY

    return units.format_elapsed(days * SECONDS_PER_DAY)


def _band_range(band: tuple[float, float] | None, fmt: str | Callable[[float], str]) -> str:
    """'LO-HI' of a figure proportional to the step (days, GPU-hours, dollars); empty when
    there is no band (a measured step, or an unknown compute error). ``fmt``: a format string
    or a formatter (a wall clock: :func:`_elapsed_of_days`)."""
    if band is None or not all(math.isfinite(x) for x in band):
        return ""
    show = fmt if callable(fmt) else fmt.format
    return f"{show(band[0])}-{show(band[1])}"


def _band_text(band: tuple[float, float] | None, fmt: str | Callable[[float], str]) -> str:
    """' (band LO-HI)', or empty without a band (:func:`_band_range`)."""
    r = _band_range(band, fmt)
    return f" (band {r})" if r else ""


def _advice_band_lines(steps: Sequence[Any], nodes: int, ranks: int) -> list[str]:
    """The ``band:`` lines under ``step --strategy all``'s ranking: the one note where every
    extrapolated step says the same; else the step band's own range once (every strategy runs
    on the same ``nodes`` and ``ranks``) and, per range the collectives' bands were fitted to,
    the layouts with a collective beyond it (their collectives differ; one layout's step names
    which)."""
    from ..strategy.band import band_extrapolation, collective_extrapolation

    far = [x for x in steps if x.band_extrapolated]
    if len({x.band_extrapolation for x in far}) <= 1:
        return [x.band_extrapolation for x in far[:1]]
    own = band_extrapolation(nodes, ranks, far[0].step_time_band_s)[0]
    lines = [own] if own else []
    by_range: dict[str, list[str]] = {}
    for x in far:
        if x.band_collectives:
            beyond = collective_extrapolation(x.band_collectives)[1]
            by_range.setdefault(beyond, []).append(x.layout_name)
    for beyond, names in by_range.items():
        many = len(names) > 1
        lines.append(
            f"{', '.join(names)}: a collective of {'each' if many else 'it'} lies beyond "
            f"{beyond}, so {'their step bands are' if many else 'its step band is'} "
            "extrapolated too (each layout's own step names which)"
        )
    return lines


def _advice_table(rows: list[dict[str, Any]]) -> str:
    """The advisor's ranking as text: one line per strategy (a tie with the fastest ranks
    "1=", and its last column says how far each is from the fastest, under what error)."""
    from ..strategy.advisor import rank_labels, vs_fastest

    out = [
        f"{'rank':<5}{'strategy':<20}{'memory/GPU':>12}  {'fits':<5}{'step':>10}  "
        f"{'band':<21}{'tokens/s':>10}  {'bound':<9}vs fastest"
    ]
    for r, rank in zip(rows, rank_labels(rows), strict=True):
        lo, hi = r["step_time_lo_s"], r["step_time_hi_s"]
        band = (
            f"{units.format_duration(lo)}-{units.format_duration(hi)}"
            if lo == lo and hi == hi
            else "?"
        )
        out.append(
            f"{rank:<5}{r['layout']:<20}{units.format_bytes(r['memory_bytes']):>12}  "
            f"{'yes' if r['fits'] else 'NO':<5}{units.format_duration(r['step_time_s']):>10}  "
            f"{band:<21}{units.format_count(r['tokens_per_s']):>10}  {r['bound']:<9}"
            f"{vs_fastest(r)}"
        )
    return "\n".join(out)


# --- scenario ---------------------------------------------------------------------------------
_ArchOpt = Annotated[
    str | None,
    typer.Option(
        help="Architecture preset (`costmodel archs`), or your model's Hugging Face config.json "
        "(or its folder): parameters, tensors, activations, FLOPs."
    ),
]


def _bucket_bytes(bucket: str | None) -> int | None:
    """``--bucket`` in bytes, or None when not given (the strategy's default bucket)."""
    if bucket is None:
        return None
    bare_bytes_warning("--bucket", bucket, "MiB")
    return units.parse_bytes(bucket, name="--bucket")


def _bucket_text(bucket: str | None) -> str | None:
    """``--bucket`` as typed, for Scenario to read (after the bare-number warning)."""
    if bucket is not None:
        bare_bytes_warning("--bucket", bucket, "MiB")
    return bucket


def _refuse_step_only(step_time: Any, contention: Any, power_limit_w: Any) -> None:
    """``train --step-time``: the options that change only the predicted step (the collectives'
    model, the overlap contention, the power limit the fitted compute follows, accumulation
    under no_sync or not) have nothing to change beside a measured step, which replaces the
    predicted one whole; each is refused rather than accepted silently. (They did move the
    step times of the "what makes it fit" suggestions, which are predictions beside a measured
    step: the same answer whatever was measured.) The options of the memory (strategy,
    recompute, dtypes, bucket, overheads) and of the batch stay: the fit and the tokens per step
    follow them."""
    if step_time is None:
        return
    # --model and --sync/--no-sync have a value by default: typed or not is the command line's
    for name, given in (
        ("--model", option_given("--model")),
        ("--contention", contention is not None),
        ("--power-limit-w", power_limit_w is not None),
        ("--sync", option_given("--sync")),
        ("--no-sync", option_given("--no-sync")),
    ):
        if given:
            raise ValueError(
                f"{name}: not with --step-time (it changes only the predicted step, which a "
                "measured step replaces); give one of them"
            )


def _held_fixed(parts: dict[str, float]) -> str:
    """What "largest model that fits" holds at this model's size (:func:`costmodel.strategy.
    memory.stage_max_params`: the states scale with the count, the activations and FSDP's
    gathered units are this model's): said beside the count where they are not 0, since a
    larger model's are larger (Llama-3.1-8B at 8,192 tokens on 32 ranks said "46.5 B params"
    where a 30B model at the same settings needs 121 GB of an 85.5 GB card)."""
    fixed = parts.get("activations_bytes", 0.0) + parts.get("gathered_units_bytes", 0.0)
    if fixed <= 0:
        return ""
    return (
        f" (with this model's activations and gathered units, {units.format_bytes(fixed)}, "
        "held fixed: a larger model's are larger)"
    )


def _one_compute(
    mfu: Any, compute_time: Any, step_time: Any = None, power_limit_w: Any = None
) -> None:
    """A measured step replaces the compute, and a measured compute the MFU and the power limit
    (each sets only the predicted compute's speed): a second one given beside it would be
    silently ignored, so it is refused (the CLI's rule for options). The compute precision
    stays: its peak bounds a measured compute time."""
    if step_time is not None and (mfu is not None or compute_time is not None):
        given = "--mfu" if mfu is not None else "--compute-time"
        raise ValueError(
            f"{given}: not with --step-time (a measured step replaces the predicted compute); "
            "give one of them"
        )
    if mfu is not None and compute_time is not None:
        raise ValueError(
            "--mfu: not with --compute-time (a measured compute time replaces the MFU); give "
            "one of them"
        )
    if compute_time is None:
        return  # beside --step-time: _refuse_step_only's
    # the power limit sets only the predicted compute's speed: a measurement replaces it
    # (`step --compute-time 400ms --power-limit-w 300` gave the 700 W step, unchanged). Not
    # --precision: its peak bounds the measured time (a compute faster than the bf16 peak
    # needs fp8), and the compute source says so
    if power_limit_w is not None:
        from ..strategy.compute import speed_beside_measured

        raise ValueError(speed_beside_measured("--power-limit-w", "--compute-time"))


def _batch_of_options(o: dict[str, Any], seq: int) -> tuple[int, int]:
    """(micro-batch, accumulation) of ``train``/``scenario``'s batch options, tokens first.

    ``--tokens-per-gpu`` sets the micro-batch to tokens / ``--seq``
    (:func:`costmodel.strategy.compute.micro_batch_of_tokens`, the road of ``costmodel step``
    and the step sweep); ``--global-tokens`` is the global batch in tokens per step, split by
    :func:`costmodel.batch.solve_batch` (the function of ``costmodel batch --global-tokens``)
    into micro-batch x accumulation x the cluster's GPUs, solving whichever of the two was
    not given (the accumulation, at micro-batch 1, when neither was). A value given twice
    (``--micro-batch`` beside ``--tokens-per-gpu``; all three of ``--global-tokens``, the
    micro-batch and ``--accumulation``) is refused, naming the options; so is a batch that does
    not split into whole numbers (with the nearest that do).
    """
    from ..strategy.compute import micro_batch_of_tokens
    from ..strategy.step import step_default

    local, acc = o["local_batch"], o["accumulation"]
    micro_from = "--micro-batch"
    if o.get("tokens_per_gpu") is not None:
        if local is not None:
            raise ValueError(
                "--micro-batch, --tokens-per-gpu: give one of them (the tokens per GPU are "
                "micro-batch x --seq)"
            )
        tok = _tokens(o["tokens_per_gpu"], "--tokens-per-gpu")
        local = micro_batch_of_tokens(
            tok, seq, names=("--tokens-per-gpu", "--seq", "--micro-batch")
        )
        micro_from = "--tokens-per-gpu"
    if o.get("global_tokens") is None:
        return (1 if local is None else int(local)), (1 if acc is None else int(acc))
    total = _tokens(o["global_tokens"], "--global-tokens")
    if local is not None and acc is not None:
        raise ValueError(
            f"--global-tokens, {micro_from}, --accumulation: give at most two of them; the "
            "third is solved from global batch = micro-batch x accumulation x GPUs"
        )
    if local is None and acc is None:
        local = int(step_default("micro_batch"))
    from .. import presets

    ranks = int(
        presets.cluster(
            o["cluster"], nodes=o["nodes"], gpus_per_node=o["gpus_per_node"], field="cluster"
        ).ranks
    )
    return _split_global_tokens(total, seq, ranks, local, acc)


def _split_words(text: str, options: dict[str, str] | None = None) -> str:
    """A refusal of :func:`costmodel.batch.solve_batch` other than a split that is not whole (a
    count past its limit) in the options' words, as :func:`~costmodel.batch.split_refusal`
    says that one (:data:`_SPLIT_OPTIONS`): its leading field and each marked name
    (``global_tokens: ... past the `global_batch` limit`` read so inside ``step``'s line)."""
    from .._limits import name_fields

    names = _SPLIT_OPTIONS if options is None else options
    field, sep, rest = text.partition(": ")
    if sep and field in names:
        text = f"{names[field]}: {rest}"
    return name_fields(text, names)


def _split_global_tokens(
    total: int,
    seq: int,
    ranks: int,
    local: int | None,
    acc: int | None,
    side: str = "",
    name: str = "--global-tokens",
) -> tuple[int, int]:
    """(micro-batch, accumulation) of ``total`` tokens per step of ``seq``-token sequences on
    ``ranks`` GPUs, solving the one of ``local``/``acc`` that is None
    (:func:`costmodel.batch.solve_batch`, the function of ``costmodel batch --global-tokens``);
    a batch that does not split is refused in one line naming the values (``side``: the
    configuration's words, ``"B's "`` for scenario --vs; ``name``: the option the tokens came
    from, ``"--vs global_tokens"`` where --vs gave B's)."""
    from .. import batch as bt

    options = _SPLIT_OPTIONS | {"global_tokens": name}

    try:  # solve_batch's nearest valid counts split all the way: sequences, GPUs, the factor
        sol = bt.solve_batch(
            local_batch=local, ranks=ranks, accumulation=acc, global_tokens=total,
            sequence_length=seq,
        )  # fmt: skip
    except ValueError as exc:
        reason = (
            bt.split_refusal(exc, options)
            if isinstance(exc, bt.BatchSplitError)
            else _split_words(str(exc), options)
        )
        solved = "--accumulation" if acc is None else "--micro-batch"
        whole = total % seq == 0  # how many sequences, where the tokens are whole sequences
        seqs = f" = {total // seq:,} sequences" if whole else ""
        raise ValueError(
            f"{name}: {total:,} tokens per step at --seq {seq}{seqs} do not split over "
            f"{side}{units.format_counted(ranks, 'GPU')} with a whole {solved} ({reason}); change "
            f"{name}, "
            + (
                "B's nodes (--vs nodes)"
                + ("" if whole else ", B's sequence (--vs seq)")
                + " or give B's --vs micro_batch or accumulation"
                if side
                else "--nodes or the other of --micro-batch and --accumulation"
            )
        ) from None
    return int(sol.local_batch), int(sol.accumulation)


def _b_at_global_tokens(
    o: dict[str, Any], b: Any, vs: str, name: str = "--global-tokens", fixed: Any = ()
) -> Any:
    """B of ``scenario --global-tokens X --vs ...`` at A's global batch in tokens, or of
    ``--vs global_tokens=X`` at X (``o["global_tokens"]`` then B's, ``name`` ``"--vs
    global_tokens"``): B's micro-batch and accumulation re-solved from those tokens per step on
    B's GPUs and sequence (:func:`_split_global_tokens`, :func:`costmodel.batch.solve_batch`,
    the step sweep's ``global_tokens`` row), not A's split carried to B (which grows B's global
    batch with its GPUs). What stays fixed: the one of micro-batch and accumulation --vs
    changes (``fixed``: Scenario fields --vs sets otherwise, ``local_batch`` for --vs
    tokens_per_gpu), else the one A was given (its accumulation, when given; else its
    micro-batch, the one --tokens-per-gpu or the default set). Both changed in --vs: refused,
    naming them; with --vs global_tokens, A given both (three counts of one batch, as ``step``
    refuses them) too. B unchanged without a global batch in tokens (a per-GPU batch,
    --tokens-per-gpu, stays per GPU)."""
    if o.get("global_tokens") is None:
        return b
    from ..scenario import _parse_changes

    total = _tokens(o["global_tokens"], name)
    keys = set(_parse_changes(vs)) | set(fixed)
    whose = "--vs global_tokens" if name != "--global-tokens" else "A's --global-tokens"
    if {"local_batch", "accumulation"} <= keys:
        micro = "--vs tokens_per_gpu" if "local_batch" in fixed else "--vs micro_batch"
        raise ValueError(
            f"{micro}, --vs accumulation: with {whose} B's global batch is {total:,} tokens "
            "per step; give one of them, the other is solved on B's GPUs"
        )
    a_micro = o.get("local_batch") is not None or o.get("tokens_per_gpu") is not None
    if (
        name != "--global-tokens"
        and not keys & {"local_batch", "accumulation"}
        and a_micro
        and o.get("accumulation") is not None
    ):
        micro = "--micro-batch" if o.get("local_batch") is not None else "--tokens-per-gpu"
        raise ValueError(
            f"--vs global_tokens: A gives both {micro} and --accumulation, so B's {total:,} "
            "tokens per step leave neither to solve; add --vs micro_batch=M or --vs "
            "accumulation=N (the one that stays; the other is solved on B's GPUs)"
        )
    if "local_batch" in keys:
        local, acc = int(b.local_batch), None
    elif "accumulation" in keys or o.get("accumulation") is not None:
        local, acc = None, int(b.accumulation)
    else:
        local, acc = int(b.local_batch), None
    ranks = int(b._validated_cluster().ranks)
    m, n = _split_global_tokens(
        total, int(b.sequence_length), ranks, local, acc, side="B's ", name=name
    )
    return b.with_changes({"local_batch": m, "accumulation": n})


#: scenario's options that are no field of B's configuration, so no --vs key: what sets B's
#: value instead (the bare "unknown field" listed B's fields, never these options)
VS_RUN_OPTIONS = {
    "price": "B's price is --price-b (default: A's price on A's GPU; on another GPU a preset "
    "for B's GPU)",
    "price_b": "an option of its own: --price-b NAME",
    "usd_per_gpu_hour": "B's price is --usd-per-gpu-hour-b",
    "usd_per_gpu_hour_b": "an option of its own: --usd-per-gpu-hour-b USD",
    "tokens": "--tokens trains both sides on the same tokens",
}

#: --vs keys that are B's batch in tokens rather than a field of B: ``global_tokens`` (tokens
#: per step; B's micro-batch or accumulation solved from it on B's GPUs) and ``tokens_per_gpu``
#: (B's micro-batch is it / B's sequence), as A's --global-tokens and --tokens-per-gpu and the
#: step sweep's axes of those names (:func:`_scenario_b`)
VS_BATCH = ("global_tokens", "tokens_per_gpu")


def _vs_fields(a: Any, vs: str, batch: dict[str, Any]) -> Any:
    """B of ``scenario --vs``: A with the --vs changes that are fields of B
    (:meth:`costmodel.scenario.Scenario.with_changes`); the :data:`VS_BATCH` keys, B's batch
    in tokens, are checked against their limits (as A's --global-tokens and --tokens-per-gpu)
    and put in ``batch`` as typed, for the caller to solve B's micro-batch and accumulation
    from. ``tokens_per_gpu`` beside ``micro_batch``: refused (both set B's micro-batch)."""
    from .._limits import LIMITS
    from ..scenario import Scenario, _parse_changes

    fields = _parse_changes(vs)
    for key in VS_BATCH:
        if key in fields:
            LIMITS[key].check(f"--vs {key}", fields[key])
            batch[key] = fields.pop(key)
    if batch.get("tokens_per_gpu") is not None and "local_batch" in fields:
        raise ValueError(
            "--vs micro_batch, --vs tokens_per_gpu: give one of them (B's tokens per GPU are "
            "micro_batch x seq)"
        )
    if unknown := sorted(set(fields) - set(Scenario.model_fields) - {"ranks"}):
        # the keys --vs takes beyond B's fields are allowed too (the API's list has not them)
        raise ValueError(
            f"--vs: unknown {units.noun_for(len(unknown), 'field')} {', '.join(unknown)}; "
            f"allowed: {', '.join([*Scenario.model_fields, 'ranks', *VS_BATCH])}"
        )
    if "ranks" in fields:
        fields.update(_vs_ranks(a, fields))
    _refuse_measured_compute_on_another_gpu(a, fields)
    return a.with_changes(fields)


def _refuse_measured_compute_on_another_gpu(a: Any, fields: dict[str, Any]) -> None:
    """``scenario --compute-time T --vs cluster=...`` on another GPU, B's compute not given:
    T was measured on A's GPU, so B would be priced at A's speed and B's price. The API's
    refusal (:meth:`costmodel.scenario.Scenario.with_changes`,
    :func:`costmodel.scenario.measured_on_another_gpu`), said with --vs's keys."""
    from ..scenario import measured_on_another_gpu, measured_on_another_gpu_refusal

    t = a.compute_time_s
    if t is None or "cluster" not in fields or "compute_time_s" in fields:
        return
    # B as with_changes builds it, with A's time given explicitly (so that it is not refused)
    if gpus := measured_on_another_gpu(a, a.with_changes({**fields, "compute_time_s": t})):
        raise ValueError(
            measured_on_another_gpu_refusal(
                *gpus,
                units.format_duration(t),
                change="--vs cluster",
                own="its own: --vs compute_time=... (measured on B's GPU)",
                predicted="compute_time=none for B's predicted compute",
            )
        )


def _vs_ranks(a: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """``--vs ranks=N``: B's ``nodes`` and ``gpus_per_node`` on B's cluster (``--vs cluster``,
    else A's), as A's ``--ranks N`` takes them (:func:`preset_ranks`: ``N`` up to a node's GPUs
    is one node's slice, a multiple of them whole nodes, any other count refused naming ``--vs
    ranks``); a ``--vs nodes`` or ``--vs gpus_per_node`` beside it must agree. Pops ``ranks``
    from ``fields``."""
    from .._limits import LIMITS

    raw = fields.pop("ranks")
    LIMITS["ranks"].check("--vs ranks", raw)
    cluster = fields.get("cluster", a.cluster)

    def given(key: str) -> int | None:
        value = fields.get(key)
        if value is None:
            return None
        LIMITS[key].check(f"--vs {key}", value)
        return int(units.parse_count(value, name=f"--vs {key}"))

    nodes, gpus = preset_ranks(
        str(cluster),
        int(units.parse_count(raw, name="--vs ranks")),
        given("nodes"),
        given("gpus_per_node"),
        names=("--vs ranks", "--vs nodes", "--vs gpus_per_node"),
    )
    return {"nodes": nodes, "gpus_per_node": gpus}


#: the --vs key a user types for a Scenario field of :data:`~costmodel.scenario.COMPUTE_WORK_FIELDS`
#: where it is not the field's own name (``scenario --vs``'s short keys)
_VS_KEY_OF = {"local_batch": "micro_batch", "sequence_length": "seq", "flash_attention": "flash"}


def _refuse_measured_compute_for_b(a: Any, b: Any) -> None:
    """``scenario --compute-time T --vs ...`` where B changes the work of the micro-batch T was
    measured for (:func:`costmodel.scenario.measured_compute_changed`: the model, micro-batch,
    sequence, recomputation, precision, MFU or power limit): B would be priced with A's T
    whatever it changed, so it is refused in one line naming the changes and asking for B's
    own compute time (``--vs compute_time=...``) or none (``--vs compute_time=none``: B's
    fitted compute). The same measured compute on another GPU stays a caveat in the answer."""
    from ..scenario import measured_compute_changed

    if changed := measured_compute_changed(a, b):
        keys = ", ".join(f"--vs {_VS_KEY_OF.get(f, f)}" for f in changed)
        raise ValueError(
            f"{keys}: not with A's --compute-time alone ({units.format_duration(a.compute_time_s)} "
            "measured for A's micro-batch, whose work B changes, so B would be priced at A's "
            "compute); give B its own: --vs compute_time=... (or compute_time=none for B's "
            "fitted compute)"
        )


def _refuse_vs_run_options(vs: str) -> None:
    """Refuse a ``--vs`` key that is one of scenario's own options rather than a field of B
    (:data:`VS_RUN_OPTIONS`), naming what sets B's value, and ``strategy=all``
    (:func:`_refuse_strategy_all`); other keys go to the Scenario."""
    for part in vs.split(","):
        key, _, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if key in VS_RUN_OPTIONS:
            raise ValueError(f"--vs {key}: no field of B's configuration; {VS_RUN_OPTIONS[key]}")
        if key == "strategy":
            _refuse_strategy_all(value, "--vs strategy")


def _refuse_strategy_all(value: str | None, name: str) -> None:
    """``all`` is no layout of one configuration (train, scenario and --vs price one): refused
    naming the commands that rank every layout, ``step --strategy all`` (and the memory of
    each: ``memory --strategy all``), with the strategies one configuration takes."""
    if value is not None and value.strip().lower() == "all":
        raise ValueError(
            f"{name}: all is no strategy of one configuration (`costmodel step --strategy all` "
            "ranks every layout, `costmodel memory --strategy all` their memory); allowed: "
            "ddp, zero1, zero2, fsdp, hsdp"
        )


def _b_at_tokens_per_gpu(o: dict[str, Any], b: Any, vs: str, name: str = "--tokens-per-gpu") -> Any:
    """B of ``scenario --tokens-per-gpu X --vs ...`` at A's tokens per GPU: B's micro-batch is X
    / B's sequence (:func:`costmodel.strategy.compute.micro_batch_of_tokens`, A's road and the
    step sweep's ``tokens_per_gpu`` row), so ``--vs seq`` keeps the tokens per GPU as ``--vs
    nodes`` does (the micro-batch carried over would change them). ``--vs micro_batch`` names
    B's micro-batch and is taken as typed. B unchanged without --tokens-per-gpu; a sequence
    that does not divide the tokens is refused in one line naming both."""
    if o.get("tokens_per_gpu") is None:
        return b
    from ..scenario import _parse_changes
    from ..strategy.compute import micro_batch_of_tokens

    keys = set(_parse_changes(vs))
    if "local_batch" in keys:
        return b
    tok = _tokens(o["tokens_per_gpu"], name)
    seq = "--vs seq" if "sequence_length" in keys else "--seq"  # B's sequence: whose it is
    local = micro_batch_of_tokens(
        tok, int(b.sequence_length), names=(name, seq, "--vs micro_batch")
    )
    return b if local == int(b.local_batch) else b.with_changes({"local_batch": local})


def _b_solved(
    global_tokens: str | None, b: Any, name: str = "--global-tokens"
) -> dict[str, Any] | None:
    """What ``scenario --vs`` solved for B rather than took as typed, JSON-ready: with
    --global-tokens (or ``--vs global_tokens``, ``name``), B's micro-batch (``local_batch``,
    Scenario's name) and ``accumulation`` at B's global batch in tokens per step
    (:func:`_b_at_global_tokens`), with ``from`` (the option they were solved from) and
    ``global_tokens``; None when nothing was solved."""
    if global_tokens is None:
        return None
    s = b.scenario
    return {
        "from": name,
        "global_tokens": int(b.tokens_per_step),
        "local_batch": int(s.local_batch),
        "accumulation": int(s.accumulation),
    }


def _scenario_from_options(o: dict[str, Any]) -> Any:
    """The Scenario of ``train``/``scenario``'s options; its refusals name the option typed
    (``limited``'s :func:`costmodel.cli._common.command_options`, as every command's)."""
    from ..scenario import Scenario
    from ..strategy.step import step_default

    if o["params"] is None and o["arch"] is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    if o.get("ranks") is not None:  # the preset's nodes these ranks take, as step's and the sweep's
        # whole nodes leave the GPUs per node the preset's, as --nodes does (a --vs cluster=...
        # then takes its own); a slice of one node is --gpus-per-node's
        typed_nodes = o["nodes"] if option_given("--nodes") else None
        o["nodes"], o["gpus_per_node"] = preset_ranks(
            o["cluster"], o["ranks"], typed_nodes, o["gpus_per_node"]
        )
    _refuse_strategy_all(o.get("strategy"), "--strategy")
    if o["recompute"] not in RECOMPUTE_MODES:
        raise ValueError(
            f"--recompute: must be {', '.join(RECOMPUTE_MODES)}, got {o['recompute']!r}"
        )
    _refuse_activation_only(o["arch"], o["loss"], o["flash"])
    loss = "fp32" if o["loss"] is None else o["loss"]
    flash = True if o["flash"] is None else o["flash"]
    _check_loss(loss)
    _one_compute(
        o["mfu"], o["compute_time"], o.get("step_time"), power_limit_w=o.get("power_limit_w")
    )
    if o.get("precision") is not None:  # step's one-line refusal, with the value typed
        from ..strategy.step import compute_precision

        compute_precision(o["precision"])
    if o["compute_time"] is not None:
        bare_seconds_warning("--compute-time", o["compute_time"])
    seq_n = (
        int(step_default("sequence_length"))
        if o["sequence_length"] is None
        else _seq(o["sequence_length"])
    )
    local_batch, accumulation = _batch_of_options(o, int(seq_n or 0))
    return Scenario(
        params=o["params"],
        arch=o["arch"],
        cluster=o["cluster"],
        nodes=o["nodes"],
        gpus_per_node=o["gpus_per_node"],
        recipe=o["recipe"],
        # None is not given; '' is given and refused with the allowed list (it was ignored)
        zero_stage=o["zero"] if o.get("strategy") is None else None,
        local_batch=local_batch,
        accumulation=accumulation,
        sequence_length=seq_n,
        mfu=o["mfu"],
        compute_time_s=units.parse_duration(o["compute_time"], name="--compute-time")
        if o["compute_time"] is not None
        else None,
        precision=o.get("precision"),
        bucket_cap_bytes=_bucket_text(o["bucket"]),  # None: the strategy's default bucket
        no_sync=o["no_sync"],
        model=o["model"],
        flash_attention=flash,
        recompute=o["recompute"],
        loss=loss,
        comm_contention=_contention(o.get("contention")),
        strategy=(
            _strategy_of(o["strategy"], o["zero"], allow_all=False)
            if o.get("strategy") is not None
            else None
        ),
        group_size=o.get("group_size"),
        reshard_after_forward=o.get("reshard"),
        gradient_as_bucket_view=o.get("bucket_view"),
        param_dtype="bf16" if o.get("param_dtype") is None else o["param_dtype"],
        grad_dtype=o.get("grad_dtype"),
        power_limit_w=o.get("power_limit_w"),
        **_overheads(o.get("cuda_context"), o.get("fragmentation")),
    )


def scenario(
    params: _ParamsOpt = None,
    arch: _ArchOpt = None,
    cluster: _ClusterOpt = "dgx-h100",
    nodes: _NodesOpt = DEFAULT_NODES,
    gpus_per_node: _GpnOpt = None,
    ranks: _PresetRanksOpt = None,
    recipe: _RecipeOpt = "mixed-adam",
    zero: _ZeroOpt = 0,
    local_batch: _LocalBatchOpt = None,
    accumulation: _AccumulationOpt = None,
    tokens_per_gpu: _TokensPerGpuOpt = None,
    global_tokens: _GlobalTokensOpt = None,
    sequence_length: _SeqOpt = None,
    mfu: _MfuOpt = None,
    compute_time: Annotated[
        str | None,
        typer.Option(help=f"Measured compute per micro-batch: 0.4s. {_MEASURED_NOT_WITH}"),
    ] = None,
    bucket: _BucketOpt = None,
    no_sync: _NoSyncOpt = True,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    recompute: Annotated[str, typer.Option(help=_RECOMPUTE_HELP)] = "none",
    loss: Annotated[str | None, typer.Option(help=_LOSS_HELP + " Default fp32.")] = None,
    flash: _FlashOpt = None,
    contention: _ContentionOpt = None,
    power_limit_w: _PowerOpt = None,
    strategy: _StrategyOpt = None,
    group_size: _GroupOpt = None,
    reshard: _ReshardOpt = None,
    bucket_view: _BucketViewOpt = None,
    param_dtype: _ParamDtypeOpt = "bf16",
    grad_dtype: _GradDtypeOpt = None,
    precision: _PrecisionOpt = None,
    cuda_context: _CudaContextOpt = None,
    fragmentation: _FragmentationOpt = None,
    fit: Annotated[
        bool,
        typer.Option(
            "--fit/--no-fit",
            help="List the cheapest changes that make it fit (always when it does not fit).",
        ),
    ] = False,
    vs: Annotated[
        str | None,
        typer.Option(
            help="Second configuration to compare: this one with some fields changed, "
            "e.g. 'nodes=16,zero_stage=3' or 'cluster=dgx-a100,arch=llama-3.1-70b'; "
            "ranks=N is B's GPU count as --ranks reads it (whole nodes or one node's slice "
            "of B's cluster)."
        ),
    ] = None,
    bucket_advice: Annotated[
        bool,
        typer.Option(
            "--bucket-advice/--no-bucket-advice",
            help="ddp: sweep bucket_cap 1-200 MiB and print the cap with the least exposed comm.",
        ),
    ] = False,
    tokens: Annotated[
        str | None,
        typer.Option(help="Tokens to train (2T): adds days, GPU-hours and dollars (A and B)."),
    ] = None,
    price: Annotated[
        str | None, typer.Option(help="Price preset for A's GPU (with --tokens).")
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None, typer.Option(min=0.0, help="A's price of one GPU-hour [USD].")
    ] = None,
    price_b: Annotated[
        str | None,
        typer.Option(
            help="Price preset for B's GPU (default: A's price on A's GPU; on another GPU, "
            "with A priced, a preset for B's GPU, of A's provider and terms where published)."
        ),
    ] = None,
    usd_per_gpu_hour_b: Annotated[
        float | None,
        typer.Option(min=0.0, help="B's price of one GPU-hour [USD] (default: A's, same GPU)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A whole training setup: memory, batch, the step (ddp, zero1, zero2, fsdp, hsdp), verdict, flips.

    --model names the collective cost model; the architecture is --arch. --vs compares a
    second configuration (A = the options, B = A with the --vs changes) and prints both
    side by side with B - A and B / A; --tokens adds both sides' days, GPU-hours and (with a
    price for A; B on another GPU at a preset for its own GPU, named) dollars; --bucket-advice
    adds the bucket_cap advisor (ddp).
    --global-tokens (the global batch in tokens per step) and --tokens-per-gpu give A's batch
    tokens first, as `costmodel train` takes them; --vs global_tokens=8Mi or tokens_per_gpu=8Ki
    gives B's, its micro-batch or accumulation solved as `costmodel step --global-tokens` does. --cuda-context and --fragmentation add to
    the memory per GPU and its verdict, as `costmodel memory` adds them.

    Example:

    \b
        costmodel scenario --params 7B --cluster dgx-h100 --nodes 8 --local-batch 1 --zero 1

    \b
        costmodel scenario --arch llama-2-7b --cluster dgx-h100 --nodes 8 --recompute full

    \b
        costmodel scenario --arch llama-3.1-70b --nodes 8 --zero 3 --recompute full --vs 'cluster=dgx-a100'

    \b
        costmodel scenario --arch llama-2-7b --nodes 8 --zero 1 --tokens 2T --price aws-p5-on-demand --vs 'cluster=dgx-b200' --price-b lambda-b200-on-demand
    """
    if fit and vs is not None:
        raise ValueError(
            "--fit: lists what makes one configuration fit; with --vs each side's header says "
            "whether it fits (run --fit on each side alone)"
        )
    opts = locals()
    if vs is not None:
        _refuse_vs_run_options(vs)
    a = _scenario_from_options(opts)
    vs_batch: dict[str, Any] = {}  # --vs global_tokens / tokens_per_gpu: B's batch in tokens
    b = (  # a change typed with no unit: the API's warning, said as --vs's
        _on_side_b(
            lambda: relay_bare_number_warnings("--vs", lambda: _vs_fields(a, vs, vs_batch)), vs
        )
        if vs is not None
        else None
    )
    said_vs = vs or ""
    # B's batch in tokens: the --vs value where one is typed, else A's option
    o_b = {**opts, **vs_batch}
    tpg_name = "--vs tokens_per_gpu" if "tokens_per_gpu" in vs_batch else "--tokens-per-gpu"
    gt_name = "--vs global_tokens" if "global_tokens" in vs_batch else "--global-tokens"
    from_tokens = None  # B's micro-batch re-solved from --tokens-per-gpu at B's sequence
    if b is not None and o_b["tokens_per_gpu"] is not None:
        b_tok = _on_side_b(lambda: _b_at_tokens_per_gpu(o_b, b, said_vs, tpg_name), said_vs)
        if b_tok is not b or "tokens_per_gpu" in vs_batch:
            b, from_tokens = b_tok, _tokens(o_b["tokens_per_gpu"], tpg_name)
            if o_b["global_tokens"] is None:
                said_vs += f"; micro-batch {b.local_batch:,} solved from {tpg_name}"
    if b is not None and o_b["global_tokens"] is not None:  # B at its global batch in tokens
        fixed = ("local_batch",) if "tokens_per_gpu" in vs_batch else ()
        b = _b_at_global_tokens(o_b, b, said_vs, gt_name, fixed)
        said_vs += (
            f"; micro-batch {b.local_batch:,} x accumulation {b.accumulation:,} solved from "
            f"{gt_name}"
        )
    if b is not None:
        _refuse_measured_compute_for_b(a, b)
    result = a.evaluate(scaling=b is None, flips=b is None)
    sides = [sc for sc in (a, b) if sc is not None and sc.bucket_cap_bytes is not None]
    if sides:  # a bucket on a side whose strategy has none: --bucket's warning, once
        _warn_unused_bucket([sc.strategy_name for sc in sides], sides[0].bucket_cap_bytes)
    fa = _scenario_fit(a) if (fit or not result.fits) and b is None else None
    other = (
        _on_side_b(lambda: b.evaluate(scaling=False, flips=False), vs or "")
        if b is not None
        else None
    )
    from ..scenario import bucket_advice_refusal

    advice: dict[str, Any] = {}
    for side, sc in (("A", a), ("B", b)) if bucket_advice else ():
        if sc is not None:  # another strategy than ddp: why there is no advice, not DDP's curve
            why = bucket_advice_refusal(sc.strategy_name)
            advice[side] = sc.bucket_advice() if why is None else why
    costs = _side_costs(result, other, tokens, price, usd_per_gpu_hour, price_b, usd_per_gpu_hour_b)
    if as_json:
        if other is None and not advice and not costs and fa is None:
            _print_json(result)
            return
        data: dict[str, Any] = {"a": result} if other is not None else {**_jsonable(result)}
        if fa is not None:  # in dollars where scenario prices the run (--tokens and a price)
            data["fit_suggestions"] = fa.as_dict(*_fit_price(costs, price, usd_per_gpu_hour))
        if other is not None:
            from ..verdict import decide_scenarios

            # changes: --vs as typed; b_changes: B's value of each field it differs from A in
            # (typed, carried along, or solved); b_solved: what was solved for B, and from what
            data.update(
                b=other,
                changes=vs,
                b_changes=b.changes_from(a),  # type: ignore[union-attr]
                b_solved=_b_solved(o_b["global_tokens"], other, gt_name)
                or (
                    None
                    if from_tokens is None
                    else {
                        "from": tpg_name,
                        "tokens_per_gpu": int(from_tokens),
                        "local_batch": int(other.scenario.local_batch),
                        "accumulation": int(other.scenario.accumulation),
                    }
                ),
                comparison=result.compare(other),
            )
            data["faster_step"] = decide_scenarios(result, other).as_dict()
        if advice:
            data["bucket_advice"] = {
                k: (v.as_dict() if not isinstance(v, str) else {"best_cap_bytes": None, "note": v})
                for k, v in advice.items()
            }
        if costs:
            data["training_cost"] = {
                k: (
                    v
                    if isinstance(v, dict)
                    else v.as_dict()
                    if not isinstance(v, str)
                    else {"cost_usd": None, "price_note": v}
                )
                for k, v in costs.items()
            }
        _print_json(data, VS_FIT_WORDS if other is not None else None)
        return
    if other is None:
        from ..strategy.layout import bucket_not_applied

        said = bucket_not_applied(a.strategy_name, a.bucket_cap_bytes)  # the warning says it
        text = "\n".join(x for x in result.summary().splitlines() if x != f"note: {said}")
        if fa is not None and not fa.fits:
            typer.echo(_fit_text(fa, 5, *_fit_price(costs, price, usd_per_gpu_hour)))
            text = text.split("\n", 1)[1]  # its first line is the same warning
        typer.echo(cli_words(text))
        if fa is not None and fa.fits:  # --fit asked: say so rather than print nothing
            typer.echo(f"{_fit_text(fa)}: nothing to change")
    else:
        typer.echo(_comparison_text(result, other, said_vs))
    if costs:
        typer.echo(_cost_text(costs))
    for name, adv in advice.items():
        typer.echo(_advice_text(name if other is not None else "", adv, a if name == "A" else b))


def _vs_options(vs: str) -> Any:
    """A refused field of the --vs configuration -> ``--vs KEY``, KEY as the user typed it in
    --vs (``micro_batch`` for Scenario's ``local_batch``); ``changes`` is --vs itself. A field
    --vs did not change (B keeps A's ``nodes`` 8 and ``--vs cluster=pcie-8x-l40s`` has no
    network) is named by the change that made it refused, the one typed (``--vs cluster``), or
    ``--vs`` for several: ``--vs nodes`` named a key the user never typed."""
    from ..scenario import _CHANGE_ALIASES, Scenario

    typed: dict[str, str] = {}
    for part in vs.split(","):
        key = part.partition("=")[0].strip()
        typed.setdefault(_CHANGE_ALIASES.get(key.replace("-", "_"), key.replace("-", "_")), key)

    def option(field: str) -> str | None:
        if field == "changes":
            return "--vs"
        if field not in Scenario.model_fields:
            return None
        if field in typed:
            return f"--vs {typed[field]}"
        return f"--vs {next(iter(typed.values()))}" if len(typed) == 1 else "--vs"

    return option


def _on_side_b(make: Any, vs: str) -> Any:
    """``make()`` of the --vs configuration; a refusal names ``--vs KEY`` (what the user typed
    in --vs), not A's option of that field, which was not what was refused."""
    try:
        return make()
    except ValueError as exc:
        raise ValueError(_one_line(exc, _vs_options(vs))) from None


def _no_price_hint(
    gpu: str, price_opt: str = "--price", usd_opt: str = "--usd-per-gpu-hour"
) -> str:
    """How to get the dollars of a run on ``gpu``: a typed price, or one of the presets
    published for it (`costmodel archs` lists them); only the typed price where none is
    (``--price`` offered for a GPU without a preset could only be refused)."""
    from ..training import published_prices

    have = published_prices(gpu)  # the cluster's own GPU: never refused
    if have:
        return (
            f"{usd_opt}, or {price_opt} with one of the {len(have)} presets for {gpu} "
            f"(`costmodel archs`), e.g. {have[0]}"
        )
    return f"{usd_opt} (no price preset is published for {gpu})"


def _side_costs(
    a: Any,
    b: Any,
    tokens: str | None,
    price: str | None,
    usd: float | None,
    price_b: str | None,
    usd_b: float | None,
) -> dict[str, Any]:
    """Days, GPU-hours and dollars of training ``tokens`` on A (and B): {"A": TrainingCost, ...}.

    B takes A's price only when it runs on A's GPU (a price is published for one GPU). On
    another GPU, with A priced, B is priced at :func:`costmodel.training.default_price` for
    B's GPU (the preset of A's provider and terms where one is published; the app's Price (B)
    box starts on the same one), and ``"B_price_default"`` says which and why; with no preset
    for B's GPU, B's dollars need --price-b or --usd-per-gpu-hour-b, and ``"B_price"`` says so
    (a string).
    """
    if tokens is None:
        if any(x is not None for x in (price, usd, price_b, usd_b)):
            raise ValueError("--tokens: give the tokens to train with a price (e.g. --tokens 2T)")
        return {}
    if b is None and (price_b is not None or usd_b is not None):
        raise ValueError("--price-b/--usd-per-gpu-hour-b: need --vs (a B configuration)")
    d = units.parse_tokens(tokens, name="--tokens")
    out: dict[str, Any] = {"A": a.training_cost(d, usd_per_gpu_hour=usd, price=price)}
    gpu_a = a.scenario._validated_cluster().gpu.name
    gpu_b = b.scenario._validated_cluster().gpu.name if b is not None else gpu_a
    if all(x is None for x in (price, usd, price_b, usd_b)):
        # no dollars and no word of how to get them, where `train` says it (its cost row)
        out["no_price"] = (
            "no price given: "
            + _no_price_hint(gpu_a)
            + (
                f"; B on {gpu_b}: " + _no_price_hint(gpu_b, "--price-b", "--usd-per-gpu-hour-b")
                if gpu_b != gpu_a
                else ""
            )
        )
    if b is None:
        return out
    chosen = None
    if price_b is None and usd_b is None and gpu_a == gpu_b:
        price_b, usd_b = price, usd
    elif price_b is None and usd_b is None and (price is not None or usd is not None):
        from ..training import default_price

        chosen = default_price(gpu_b, like=price)
        if chosen is not None:
            price_b = chosen[0].name
    try:
        out["B"] = b.training_cost(d, usd_per_gpu_hour=usd_b, price=price_b)
    except ValueError as exc:  # B's price is --price-b's: name the option the user typed
        msg = str(exc)
        for field, option in (("usd_per_gpu_hour, price:", "--price-b, --usd-per-gpu-hour-b:"),
                              ("usd_per_gpu_hour:", "--usd-per-gpu-hour-b:"),
                              ("price:", "--price-b:")):  # fmt: skip
            if msg.startswith(field):
                msg = option + msg[len(field) :]
                break
        # B's side's words: its GPU, and its own price option as the other way out
        msg = msg.replace("this cluster's GPU", "B's GPU").replace(
            "`usd_per_gpu_hour`", "--usd-per-gpu-hour-b"
        )
        raise ValueError(msg) from None
    if chosen is not None:
        from ..training import published_prices

        p, why = chosen
        as_a = ", as A's "  # the rule's "as <A's preset>", said as whose preset it is
        others = [n for n in published_prices(gpu_b) if n != p.name]
        out["B_price_default"] = {
            "price": p.name,
            "price_date": p.date,
            "note": f"B runs on {gpu_b}, not A's {gpu_a}: priced at {p.name} ({p.date} prices), "
            f"{why.replace(', as ', as_a)}; --price-b for another"
            + (f" ({', '.join(others)})" if others else "")
            + " or --usd-per-gpu-hour-b",
        }
    priced = [k for k in ("A", "B") if out[k].cost_usd is not None]
    if len(priced) == 1:  # one side's dollars beside the other's "n/a": no comparison of cost
        from ._common import warn_on_success

        if priced == ["B"]:
            how = f"A's dollars need {_no_price_hint(gpu_a)}"
        else:
            how = f"B's dollars need {_no_price_hint(gpu_b, '--price-b', '--usd-per-gpu-hour-b')}"
        warn_on_success(
            f"only {priced[0]} is priced: the dollars of A and B cannot be compared; {how}"
        )
    if out["B"].cost_usd is None and (price is not None or usd is not None):
        from ..training import published_prices

        match = published_prices(gpu_b)
        out["B_price"] = (
            f"B runs on {gpu_b}, not A's {gpu_a}: give --price-b ({', '.join(match)}) "
            "or --usd-per-gpu-hour-b for B's dollars"
            if match  # no --price-b to offer where no preset is published for B's GPU
            else f"B runs on {gpu_b}, not A's {gpu_a}: give --usd-per-gpu-hour-b for B's "
            f"dollars (no price preset is published for {gpu_b})"
        )
    return out


def _cost_text(costs: dict[str, Any]) -> str:
    """The time-and-cost rows of one or two sides, with each price's date."""
    from ..training import whole_steps_note

    sides = [k for k in ("A", "B") if k in costs]
    two = len(sides) > 1  # one configuration: no "A" that names a comparison there is not
    rows = [("time and cost to train", *(sides if two else [""]))]

    def money(c: Any) -> str:
        if c.cost_usd is None:
            return "n/a (no price)"
        when = f" ({c.price_date} prices)" if c.price_date else " (price given)"
        return f"${units.format_usd(c.cost_usd)}{when}"

    rows.append(("steps", *(f"{costs[k].steps:,}" for k in sides)))
    rows.append(("wall clock", *(_elapsed_of_days(costs[k].wall_days) for k in sides)))
    rows.append(
        (
            "wall clock band",
            # a side with no band says "unknown", as the step band rows above say it ("?" read
            # as a typo)
            *(_band_range(costs[k].wall_days_band, _elapsed_of_days) or "unknown" for k in sides),
        )
    )
    rows.append(("GPU-hours", *(units.format_gpu_hours(costs[k].gpu_hours) for k in sides)))
    # the GPU-hours and the dollars carry the step's band as the wall clock does (train prints
    # all three; the table gave the wall clock's alone, the dollars read as exact)
    rows.append(
        (
            "GPU-hours band",
            *(
                _band_range(costs[k].gpu_hours_band, units.format_gpu_hours) or "unknown"
                for k in sides
            ),
        )
    )
    rows.append(
        (
            "price per GPU-hour",
            *(
                f"${units.format_usd_rate(costs[k].usd_per_gpu_hour)}"
                + (f" ({costs[k].price_terms})" if costs[k].price_terms else "")
                if costs[k].usd_per_gpu_hour
                else "-"
                for k in sides
            ),
        )
    )
    if any(costs[k].billing_note and costs[k].cost_usd is not None for k in sides):
        rows.append(
            (
                "GPU-hours billed",
                *(units.format_gpu_hours(costs[k].billed_gpu_hours) for k in sides),
            )
        )
    rows.append(("cost [USD]", *(money(costs[k]) for k in sides)))
    rows.append(
        (
            "cost band",
            *(
                "-"
                if costs[k].cost_usd is None
                else _band_range(costs[k].cost_usd_band, lambda v: f"${units.format_usd(v)}")
                or "unknown"
                for k in sides
            ),
        )
    )
    if any(costs[k].fit_warning for k in sides):
        # beside the dollars: the DOES NOT FIT that says so is the output's first line, a screen
        # above this table (train prints the memory line under its cost; this table did not)
        rows.append(
            (
                "fits in memory",
                *("NO: for a configuration that cannot run" if costs[k].fit_warning else "yes"
                  for k in sides),
            )
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    for k in sides:
        c = costs[k]
        if c.price_note and c.price_date:
            lines.append(f"price{' ' + k if two else ''}: {c.price_note}")
        if c.billing_note and c.cost_usd is not None:
            lines.append(f"billing{' ' + k if two else ''}: {c.billing_note}")
        if c.price_warning:
            lines.append(f"warning{f' ({k})' if two else ''}: {cli_words(c.price_warning)}")
        # the cost's own note of whole steps past the tokens asked (its model-size notes are
        # the scenario's, said with them)
        for n in whole_steps_note(c.tokens, c.steps, c.tokens_per_step):
            lines.append(f"note{f' ({k})' if two else ''}: {n}")
    if "no_price" in costs:
        lines.append(f"note: {costs['no_price']}")
    if "B_price" in costs:
        lines.append(f"note: {costs['B_price']}")
    if "B_price_default" in costs:
        lines.append(f"note: {costs['B_price_default']['note']}")
    return "\n".join(lines)


def _fit_price(
    costs: dict[str, Any], price: str | None, usd: float | None
) -> tuple[str | None, float | None]:
    """The price ``scenario``'s fit suggestions are costed at: the run's, where it is priced
    (``--tokens`` with ``--price`` or ``--usd-per-gpu-hour``), else none (GPU-time)."""
    return (price, usd) if costs.get("A") is not None else (None, None)


def _scenario_fit(s: Any) -> Any:
    """What makes a scenario fit: :meth:`costmodel.scenario.Scenario.fit_suggestions`."""
    return s.fit_suggestions()


#: ``scenario --vs`` names the library's `fit_suggestions` (a side's DOES NOT FIT note) as the
#: command run on that side alone: ``--fit`` is refused beside ``--vs`` (text and ``--json``)
VS_FIT_WORDS = {"`fit_suggestions`": "`costmodel scenario --fit`, run on that side without --vs,"}


def _comparison_text(a: Any, b: Any, changes: str) -> str:
    """A and B side by side (one row per figure, B - A and B / A), and the one-line answer."""
    from ..scenario import compare, compare_summary

    def fmt(v: Any, unit: str) -> str:
        if isinstance(v, float) and math.isnan(v):
            return "unknown"
        if unit == "B":
            return units.format_bytes(v)
        if unit == "s":
            return units.format_duration(v)
        if unit == "%":
            return f"{100 * v:.1f}%"
        if unit == "bool":
            return "yes" if v else "no"
        if unit == "text":
            return str(v)
        # a whole count (GPUs, sequences) exactly, as the title lines write it: 1,024 GPUs
        # were "1.02 k" in the table under "(1,024 GPUs)"
        return units.format_token_count(v)

    def diff(r: dict[str, Any]) -> str:
        d, unit = r["difference"], r["unit"]
        if d is None:
            if unit not in ("bool", "text"):
                return "?"
            return "same" if r["a"] == r["b"] else "differs"
        if unit == "%":
            return f"{100 * d:+.1f} pt"
        sign = "+" if d >= 0 else "-"
        return sign + fmt(abs(d), unit)

    def title(side: str, r: Any, after: str = "") -> list[str]:
        """The side's setup line (model, cluster, strategy), then its DOES NOT FIT warning: the
        summary puts the warning first, which stood in for the setup where a side did not fit."""
        lines = r.summary().splitlines()
        if r.fits or len(lines) < 2:
            return [f"{side}: {lines[0]}{after}"]
        return [f"{side}: {lines[1]}{after}", f"   {lines[0]}"]

    # the sides' DOES NOT FIT lines name the library's `fit_suggestions`: said as the CLI does
    # it, on that side alone (--fit is refused beside --vs: one configuration's list)
    sides = "\n".join([*title("A", a), *title("B", b, f"  (A with {changes})")])
    for old, new in VS_FIT_WORDS.items():
        sides = sides.replace(old, new)
    head = cli_words(sides)
    rows = [("", "A", "B", "B - A", "B / A")]
    for r in compare(a, b):
        ratio = f"{r['ratio']:.3g}x" if r["ratio"] is not None else ""
        rows.append((r["label"], fmt(r["a"], r["unit"]), fmt(r["b"], r["unit"]), diff(r), ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    table = "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
    from ..verdict import decide_scenarios

    faster = decide_scenarios(a, b)  # a winner only when the gap beats the expected error
    text = f"{head}\n{table}\nanswer: {compare_summary(a, b)}\nfaster step: {faster.text()}"
    notes = _side_notes(a, b)
    return text + "".join(f"\n{cli_words(n)}" for n in notes)


def _side_notes(a: Any, b: Any) -> list[str]:
    """The notes one scenario prints (``ScenarioResult.notes``: the activations sized, the
    compute's source, what the answer leaves out: a mixture of experts' expert parallelism,
    the 70B class's tensor and pipeline parallelism), for A and B side by side: a note both
    sides give once (``note:``), a side's own as ``note (A):`` / ``note (B):``. Not a side's
    DOES NOT FIT (its header says it) nor the bucket note (``--bucket``'s warning says it)."""
    from ..strategy.layout import bucket_not_applied

    def own(r: Any) -> list[str]:
        said = bucket_not_applied(r.scenario.strategy_name, r.scenario.bucket_cap_bytes)
        return [n for n in r.notes if not n.startswith("DOES NOT FIT") and n != said]

    from ..strategy.step import ABOVE_ONE_GPU, above_one_gpu

    na, nb = own(a), own(b)
    # a scaling efficiency above 100 % in the table says why, as the step's and scenario's do
    na += [f"scaling efficiency {ABOVE_ONE_GPU}"] if above_one_gpu(a.efficiency) else []
    nb += [f"scaling efficiency {ABOVE_ONE_GPU}"] if above_one_gpu(b.efficiency) else []
    # a band beyond the largest published run it was checked on, as each side's step says it
    na += [f"step band extrapolated: {a.band_extrapolation}"] if a.band_extrapolated else []
    nb += [f"step band extrapolated: {b.band_extrapolation}"] if b.band_extrapolated else []
    # both sides' notes first, then A's own, then B's (A's own between two shared notes read as
    # if the second were A's too)
    every = list(dict.fromkeys([*na, *nb]))
    shared = [f"note: {n}" for n in every if n in na and n in nb]
    return [
        *shared,
        *(f"note (A): {n}" for n in every if n in na and n not in nb),
        *(f"note (B): {n}" for n in every if n in nb and n not in na),
    ]


def _advice_text(name: str, adv: Any, scenario: Any) -> str:
    """The bucket_cap advisor in a few lines: best cap, and the exposed time there vs now."""
    label = f"bucket_cap advice{' (' + name + ')' if name else ''}"
    if isinstance(adv, str):  # no advice for this strategy, and why
        return f"{label}: none: {adv.removeprefix('bucket_advice: ')}"
    caps = list(adv.caps_bytes)
    now = float(scenario.ddp_bucket_cap_bytes)
    best = adv.best_index
    line = (
        f"{label}: {adv.best_cap_bytes / 2**20:g} MiB minimises the exposed "
        f"communication ({units.format_duration(adv.exposed_comm_s[best])}, "
        f"{units.format_counted(int(adv.buckets[best]), 'bucket')}) over {caps[0] / 2**20:g}-{caps[-1] / 2**20:g} MiB "
        f"({adv.tie_text()})"
    )
    if now in caps:
        k = caps.index(now)
        line += (
            f"; at the current {now / 2**20:g} MiB: "
            f"{units.format_duration(adv.exposed_comm_s[k])} "
            f"({units.format_counted(int(adv.buckets[k]), 'bucket')})"
        )
    return line


def train(
    tokens: Annotated[
        str | None, typer.Option(help="Tokens to train: 2T, 300B (or --steps).")
    ] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Optimizer steps.")] = None,
    params: _ParamsOpt = None,
    arch: _ArchOpt = None,
    cluster: _ClusterOpt = "dgx-h100",
    nodes: _NodesOpt = DEFAULT_NODES,
    gpus_per_node: _GpnOpt = None,
    ranks: _PresetRanksOpt = None,
    recipe: _RecipeOpt = "mixed-adam",
    zero: _ZeroOpt = 0,
    local_batch: _LocalBatchOpt = None,
    accumulation: _AccumulationOpt = None,
    tokens_per_gpu: _TokensPerGpuOpt = None,
    global_tokens: _GlobalTokensOpt = None,
    sequence_length: _SeqOpt = None,
    mfu: _MfuOpt = None,
    compute_time: Annotated[
        str | None,
        typer.Option(help=f"Measured compute per micro-batch: 0.4s. {_MEASURED_NOT_WITH}"),
    ] = None,
    bucket: _BucketOpt = None,
    no_sync: _NoSyncOpt = True,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    contention: _ContentionOpt = None,
    power_limit_w: _PowerOpt = None,
    strategy: _StrategyOpt = None,
    group_size: _GroupOpt = None,
    reshard: _ReshardOpt = None,
    bucket_view: _BucketViewOpt = None,
    param_dtype: _ParamDtypeOpt = "bf16",
    grad_dtype: _GradDtypeOpt = None,
    precision: _PrecisionOpt = None,
    recompute: Annotated[str, typer.Option(help=_RECOMPUTE_HELP)] = "none",
    loss: Annotated[str | None, typer.Option(help=_LOSS_HELP + " Default fp32.")] = None,
    flash: _FlashOpt = None,
    cuda_context: _CudaContextOpt = None,
    fragmentation: _FragmentationOpt = None,
    step_time: Annotated[
        str | None,
        typer.Option(help="Measured step time: 1.2s (else the predicted one); gives the MFU."),
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None, typer.Option(min=0.0, help="Price of one GPU-hour [USD].")
    ] = None,
    price: Annotated[
        str | None,
        typer.Option(
            help="Price preset for the cluster's GPU, e.g. aws-p5-on-demand (`costmodel archs` "
            "lists them with their GPU and date)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Time and cost to train: wall-clock days, GPU-hours, dollars and MFU.

    The step time is the scenario's prediction, or --step-time as measured (then the MFU shown
    is what that measurement implies, and the options that change only the predicted step,
    --model, --contention, --power-limit-w, --mfu, --compute-time and --sync/--no-sync, are
    refused: the measurement replaces that step; the memory's and the batch's options stay). A --price preset must be one published for the
    cluster's GPU; every cost is shown with its price's date. The batch can be given tokens
    first: --global-tokens (the global batch in tokens per step, split over the GPUs as
    `costmodel batch --global-tokens` splits it) and --tokens-per-gpu (instead of
    --micro-batch).

    Example (Llama-2-7B on 2T tokens, 64 H100s, AWS p5 on-demand price):

    \b
        costmodel train --arch llama-2-7b --tokens 2T --cluster dgx-h100 --nodes 8 --zero 1 --recompute full --price aws-p5-on-demand

    Tokens first (4M-token batches at sequence length 4096 on 512 GPUs: accumulation 2):

    \b
        costmodel train --arch llama-2-7b --tokens 2T --nodes 64 --zero 1 --global-tokens 4Mi --seq 4096
    """
    opts = dict(locals())
    if (tokens is None) == (steps is None):
        raise ValueError("--tokens or --steps: give exactly one of them")
    d = units.parse_tokens(tokens, name="--tokens") if tokens is not None else None
    _refuse_step_only(step_time, contention, power_limit_w)
    if step_time:
        bare_seconds_warning("--step-time", step_time)
    measured = units.parse_duration(step_time, name="--step-time") if step_time else None
    sc = _scenario_from_options(opts)
    result = sc.evaluate(scaling=False, flips=False)
    _warn_unused_bucket([sc.strategy_name], sc.bucket_cap_bytes)
    fa = _scenario_fit(sc) if not result.fits else None
    cost = result.training_cost(
        d,
        steps=steps,
        usd_per_gpu_hour=usd_per_gpu_hour,
        price=price,
        measured_step_time_s=measured,
    )
    from ..strategy.band import band_note
    from ..strategy.layout import LAYOUT_KEYS

    # why the days', GPU-hours' and dollars' bands are missing (a measured step has none to
    # give), in `step`'s words: the text and the JSON left them out silently
    why_no_band = (
        ""
        if measured is not None
        else band_note((result.step_time_lo_s, result.step_time_hi_s), result.compute_source)
    )
    # the step band beyond the largest published run it was checked on: so are the days',
    # GPU-hours' and dollars' bands drawn from it (a measured step has no band to extrapolate)
    far = "" if measured is not None else result.band_extrapolation
    data = {
        **cost.as_dict(),
        "band_note": why_no_band,
        "band_extrapolated": bool(far),
        "band_extrapolation": far,
        "arch": arch,
        "params": result.scenario.params,
        "cluster": cluster,
        "memory_total_bytes": result.memory_total_bytes,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "fits": result.fits,
        # the memory's overheads (0 when not given), as memory --json and step --json write them
        "cuda_context_bytes": result.scenario.cuda_context_bytes,
        "fragmentation": result.scenario.fragmentation,
        # the layout, named as a sweep row, step --json and scenario --json name it
        **{k: getattr(result, k) for k in LAYOUT_KEYS},
        # the batch as `costmodel batch --json` words it: the global batch in samples and in
        # tokens per step (global_tokens = tokens_per_step), and how it splits
        "micro_batch": result.scenario.local_batch,
        "accumulation": result.scenario.accumulation,
        "sequence_length": result.scenario.sequence_length,
        "global_batch": result.global_batch,
        "global_tokens": result.tokens_per_step,
        # the predicted step's compute and overlap: none with a measured step, which
        # replaces the prediction whole (the text says "measured step time" for them)
        **(
            {}
            if measured is not None
            else {
                "comm_contention": result.comm_contention,
                "compute_source": result.compute_source,
                "compute_label": result.compute_label,
            }
        ),
        # the matmuls' precision, whose dense peak the mfu is a fraction of (as step --json)
        "precision": result.scenario.compute_precision,
        "mfu_flops": result.scenario.flops_definition(),
    }
    if fa is not None:  # dollars at the price given (a larger card's at its GPU's preset)
        data["fit_suggestions"] = fa.as_dict(price, usd_per_gpu_hour)
    if as_json:
        _print_json(data)
        return
    if fa is not None:
        typer.echo(_fit_text(fa, price=price, usd_per_gpu_hour=usd_per_gpu_hour))
        if measured is not None:  # the changes' % are against a step the table does not show
            typer.echo(
                "  (the steps above are predicted, each % against this setup's predicted step "
                f"{units.format_duration(fa.base.step_time_s)}, not the measured --step-time "
                f"{units.format_duration(measured)})"
            )
    from ..training import SECONDS_PER_DAY

    unit = units.elapsed_unit(cost.wall_s)  # the band in the wall clock's unit
    wall_band = _band_text(
        cost.wall_days_band, lambda d: units.format_elapsed_in(d * SECONDS_PER_DAY, unit)
    ) or (f" ({why_no_band})" if why_no_band else "")
    if far and wall_band.endswith(")"):
        wall_band = wall_band[:-1] + f", extrapolated beyond {result.band_extrapolated_beyond})"
    # the GPU-hours and the dollars without a band say so too, as the wall clock does (they
    # read as exact figures beside it)
    unknown = " (band unknown, as the wall clock's)" if why_no_band else ""
    rows = [
        ("tokens", units.format_count(cost.tokens)),
        ("steps", f"{cost.steps:,}"),
        (
            "global batch",
            f"{units.format_count(cost.tokens_per_step)} tokens per step = "
            f"{result.global_batch:,} sequences x {result.scenario.sequence_length:,} tokens "
            f"(micro-batch {result.scenario.local_batch} x accumulation "
            f"{result.scenario.accumulation} x {units.format_counted(cost.ranks, 'GPU')})",
        ),
        (f"step time ({cost.step_time_source})", units.format_duration(cost.step_time_s)),
        # a measured step replaces the predicted one whole: its compute estimate was not used
        (
            "compute source",
            "not used (the step time is measured)" if measured else result.compute_label,
        ),
        ("GPUs", f"{cost.ranks:,}"),
        ("wall clock", _elapsed_of_days(cost.wall_days) + wall_band),
        (
            "GPU-hours",
            units.format_gpu_hours(cost.gpu_hours)
            + (_band_text(cost.gpu_hours_band, units.format_gpu_hours) or unknown),
        ),
    ]
    if cost.cost_usd is not None:
        # how the preset is bought beside its rate (a spot or a 3-year rate is no on-demand one)
        when = f" ({cost.price_terms}), as of {cost.price_date}" if cost.price_date else " (given)"
        rows.append(
            ("price", f"${units.format_usd_rate(cost.usd_per_gpu_hour)} per GPU-hour{when}")
        )
        if cost.billing_note:  # a node slice: the whole instance is paid for
            rows.append(
                (
                    "GPU-hours billed",
                    units.format_gpu_hours(cost.billed_gpu_hours) + f" ({cost.billing_note})",
                )
            )
        rows.append(
            (
                "cost",
                f"${units.format_usd(cost.cost_usd)}"
                + (f" at {cost.price_date} prices" if cost.price_date else "")
                + (_band_text(cost.cost_usd_band, lambda v: f"${units.format_usd(v)}") or unknown),
            )
        )
    else:  # no price: say how to get the dollars (the row was left out without a word)
        gpu = result.scenario.build_cluster().gpu.name
        rows.append(("cost", "no price given: " + _no_price_hint(gpu)))
    if cost.mfu is not None:
        rows.append(
            (
                "MFU" + (" implied" if measured else " at this step"),
                units.format_mfu(cost.mfu)
                # an fp8 MFU is of the fp8 peak (twice bf16's on H100): 27% under fp8 is not
                # slower than 41% under bf16, so the peak is named, as the given MFU's label
                + (" of the fp8 dense peak" if result.scenario.compute_precision == "fp8" else "")
                + f" (model FLOPs: {result.scenario.flops_definition()})",
            )
        )
    rows.append(
        (
            "memory per GPU",
            " of ".join(units.format_bytes_pair(result.memory_total_bytes, result.gpu_memory_bytes))
            + (" (fits" if result.fits else " (does NOT fit")
            + _with_overheads(result.scenario.cuda_context_bytes, result.scenario.fragmentation)
            + ")",
        )
    )
    head = _arch_name(arch) or f"{units.format_count(result.scenario.params)} params"
    # a measured step replaces the predicted one whole: no contention of its overlap to show
    step_of = (
        "measured step time"
        if measured is not None
        else f"overlap contention c = {result.comm_contention:g}"
    )
    typer.echo(
        f"{head} on {cluster} x {units.format_counted(result.nodes, 'node')}, {result.scenario.recipe}, "
        f"{result.layout} ({step_of})"
    )
    typer.echo(_kv(rows))
    if far:  # the step's band, and so the days' and dollars', beyond the published runs
        typer.echo(f"band: {far}")
    if cost.price_note and price is not None:
        typer.echo(f"price: {cost.price_note}")
    if cost.price_warning:
        typer.echo(f"warning: {cli_words(cost.price_warning)}")
    for n in cost.notes:  # what the answer leaves out (70B class, mixture of experts, ...)
        typer.echo(f"note: {cli_words(n)}")
