"""Subcommands about training: ``memory``, ``batch``, ``step``, ``scenario``, ``train``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import units
from ._common import _MODEL_HELP, JsonOpt, _jsonable, _kv, _print_json


# --- memory -----------------------------------------------------------------------------------
def memory(
    params: Annotated[
        str | None, typer.Option(help="Model parameters: 7B, 350M (or give --arch).")
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(
            "--arch",
            "--model",
            help="Architecture preset, e.g. llama-3.1-70b (see `costmodel archs`): gives the "
            "parameters and the activations.",
        ),
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Precision/optimizer recipe, e.g. mixed-adam.")
    ] = "mixed-adam",
    zero: Annotated[
        int, typer.Option("--zero", "--zero-stage", min=0, max=3, help="ZeRO stage 0-3.")
    ] = 0,
    ranks: Annotated[int, typer.Option(min=1, help="Data-parallel ranks sharding the state.")] = 1,
    activations: Annotated[
        str | None,
        typer.Option(help="Activation memory per GPU: 10GB (default: from --arch, else 0)."),
    ] = None,
    seq: Annotated[
        int, typer.Option("--seq", "--sequence-length", min=1, help="Tokens per sample.")
    ] = 4096,
    micro_batch: Annotated[int, typer.Option(min=1, help="Micro-batch per GPU [samples].")] = 1,
    recompute: Annotated[
        str, typer.Option(help="Activation recomputation: none, selective, full.")
    ] = "none",
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="FlashAttention (no s x s scores kept).")
    ] = True,
    gpu_memory: Annotated[
        str | None, typer.Option(help="GPU memory to check against: 80GB.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="Take the GPU memory from a preset.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory per GPU of weights, gradients, optimizer state, activations (and what fits).

    With --arch the activations of one micro-batch are included (default recipe: 4096 tokens,
    micro-batch 1, FlashAttention, no recomputation) and the verdict is checked against
    --gpu-memory, --cluster's GPU, or an 80 GB H100 (h100-sxm) when neither is given.
    --model is accepted for --arch here (this command has no cost model).

    Examples (lesson: a 7B model under mixed-precision Adam needs 112 GB):

        costmodel memory --params 7B --recipe mixed-adam --gpu-memory 80GB

        costmodel memory --arch llama-3.1-70b --zero-stage 3 --ranks 64 --seq 4096
    """
    from .. import memory as mem

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"--recompute: must be none, selective or full, got {recompute!r}")
    p_given = units.parse_count(params, name="--params") if params is not None else None
    act = units.parse_bytes(activations, name="--activations") if activations else None
    recipe_kw: dict[str, Any] = dict(
        sequence_length=seq, micro_batch=micro_batch, flash_attention=flash, recompute=recompute
    )
    breakdown = mem.training_memory(
        p_given,
        recipe=recipe,
        zero_stage=zero,
        dp_ranks=ranks,
        activations_bytes=act,
        arch=arch,
        **recipe_kw,
    )
    if arch is not None:
        from ..architecture import resolve_params

        p = resolve_params(p_given, arch)[0]
    else:
        p = float(p_given)  # type: ignore[arg-type]
    parts = {k: float(v) for k, v in breakdown.parts().items()}
    total = float(breakdown.total_bytes)
    act_bytes = parts["activations_bytes"]
    result: dict[str, Any] = {
        "params": p,
        "arch": arch,
        "recipe": recipe,
        "zero_stage": zero,
        "dp_ranks": ranks,
        "activations": breakdown.activations_note,
        "parts_bytes": parts,
        "total_bytes": total,
    }
    capacity = None
    gpu_name = None
    if gpu_memory is not None and cluster is not None:
        raise ValueError("give --gpu-memory or --cluster, not both")
    if gpu_memory is not None:
        capacity = float(units.parse_bytes(gpu_memory, name="--gpu-memory"))
    elif cluster is not None:
        from .. import presets

        c = presets.cluster(cluster)
        capacity, gpu_name = float(c.gpu.memory_bytes), c.gpu.name
    elif arch is not None:
        from .. import presets

        g = presets.load("h100-sxm", "gpu")
        capacity, gpu_name = float(g.memory_bytes), f"{g.name} (default)"
    if capacity is not None:
        result["gpu_memory_bytes"] = capacity
        result["gpu"] = gpu_name
        result["fits"] = bool(total <= capacity)
        result["max_params"] = float(
            mem.max_params(
                capacity,
                recipe=recipe,
                zero_stage=zero,
                dp_ranks=ranks,
                activations_bytes=act_bytes,
            )
        )
        if zero > 0:
            try:
                result["min_ranks"] = _jsonable(
                    mem.min_ranks(
                        p, capacity, recipe=recipe, zero_stage=zero, activations_bytes=act_bytes
                    )
                )
            except ValueError as exc:
                result["min_ranks"] = None
                result["min_ranks_note"] = str(exc)
        if arch is not None and act is None and not result["fits"]:
            for rc in ("selective", "full"):
                if rc == recompute or (rc == "selective" and flash):
                    continue  # with FlashAttention selective recomputation saves nothing more
                t = float(
                    mem.training_memory(
                        recipe=recipe,
                        zero_stage=zero,
                        dp_ranks=ranks,
                        arch=arch,
                        **{**recipe_kw, "recompute": rc},
                    ).total_bytes
                )
                if t <= capacity:
                    result["fits_with_recompute"] = rc
                    break
    if as_json:
        _print_json(result)
        return
    rows = [(k.removesuffix("_bytes"), units.format_bytes(v)) for k, v in parts.items()]
    rows.append(("total per GPU", units.format_bytes(total)))
    if capacity is not None:
        rows.append(
            ("GPU memory", units.format_bytes(capacity) + (f" {gpu_name}" if gpu_name else ""))
        )
        verdict = "yes" if result["fits"] else "no"
        if not result["fits"]:
            verdict += f" ({units.format_bytes(total - capacity)} over)"
            if "fits_with_recompute" in result:
                verdict += f"; fits with --recompute {result['fits_with_recompute']}"
        rows.append(("fits", verdict))
        rows.append(
            ("largest model that fits", units.format_count(result["max_params"]) + " params")
        )
        if result.get("min_ranks") is not None:
            rows.append(("fewest ranks that fit", str(result["min_ranks"])))
    head = f"{arch}: " if arch else ""
    typer.echo(f"{head}{units.format_count(p)} params, {recipe}, ZeRO-{zero} over {ranks} ranks")
    typer.echo(breakdown.activations_note)
    typer.echo(_kv(rows))


# --- batch ------------------------------------------------------------------------------------
def batch(
    local: Annotated[
        int | None, typer.Option("--local", "--local-batch", min=1, help="Per-GPU micro-batch.")
    ] = None,
    ranks: Annotated[int | None, typer.Option(min=1, help="Data-parallel ranks.")] = None,
    accumulation: Annotated[int | None, typer.Option(min=1, help="Accumulation steps.")] = None,
    global_: Annotated[
        int | None, typer.Option("--global", "--global-batch", min=1, help="Global batch.")
    ] = None,
    sequence_length: Annotated[int | None, typer.Option(min=1, help="Tokens per sample.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Solve B_global = B_local x N x A for the one unknown left out.

    Example (which accumulation gives a global batch of 1024 on 64 GPUs at 4 each?):

        costmodel batch --local 4 --ranks 64 --global 1024
    """
    from .. import batch as bt

    sol = bt.solve_batch(
        local_batch=local, ranks=ranks, accumulation=accumulation, global_batch=global_
    )
    data = _jsonable(sol)
    if not isinstance(data, dict):
        data = {
            k: _jsonable(getattr(sol, k))
            for k in ("local_batch", "ranks", "accumulation", "global_batch")
        }
    if sequence_length is not None:
        data["sequence_length"] = sequence_length
        data["tokens_per_step"] = int(data["global_batch"]) * sequence_length
    if as_json:
        _print_json(data)
        return
    rows = [(k, str(data[k])) for k in ("local_batch", "ranks", "accumulation", "global_batch")]
    if sequence_length is not None:
        rows.append(("tokens per step", units.format_count(data["tokens_per_step"])))
    typer.echo(_kv(rows))


# --- step -------------------------------------------------------------------------------------
def step(
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: Annotated[
        str | None,
        typer.Option(help="Architecture preset: its parameters and real tensor list (buckets)."),
    ] = None,
    compute_time: Annotated[
        str | None,
        typer.Option(help="Measured compute (forward + backward) per micro-batch: 400ms."),
    ] = None,
    tokens_per_gpu: Annotated[
        str | None, typer.Option(help="Tokens per GPU per micro-batch (with --mfu): 8k.")
    ] = None,
    mfu: Annotated[float, typer.Option(min=0.0, max=1.0, help="Model FLOP utilisation.")] = 0.4,
    peak_flops: Annotated[
        str | None,
        typer.Option(help="Peak dense FLOP/s per GPU (default: the preset's bf16 figure): 989T."),
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Cluster preset (the realistic model).")
    ] = None,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    ranks: Annotated[int | None, typer.Option(min=1, help="Ranks (with --bandwidth).")] = None,
    bandwidth: Annotated[str | None, typer.Option(help="Per-direction bandwidth: 50GB/s.")] = None,
    latency: Annotated[str, typer.Option(help="All-reduce latency per step: 5us.")] = "0s",
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    gradient_bytes: Annotated[
        float, typer.Option(help="Bytes per gradient element all-reduced (2 = bf16, 1 = fp8).")
    ] = 2.0,
    accumulation: Annotated[int, typer.Option(min=1, help="Micro-batches per step.")] = 1,
    no_sync: Annotated[
        bool, typer.Option("--no-sync/--sync", help="Skip all-reduce on non-final micro-batches.")
    ] = True,
    model: Annotated[str, typer.Option(help="With --cluster: " + _MODEL_HELP)] = "nccl",
    as_json: JsonOpt = False,
) -> None:
    """One DDP training step: compute, bucketed all-reduce, exposed comm, bound, efficiency.

    Example (the lesson's practice problem 1: comms-bound, about 73% efficient):

        costmodel step --params 7B --compute-time 400ms --ranks 64 --bandwidth 50GB/s
    """
    from .. import ddp

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    kwargs: dict[str, Any] = dict(
        bucket_cap_bytes=units.parse_bytes(bucket, name="--bucket"),
        gradient_bytes_per_param=gradient_bytes,
        accumulation=accumulation,
        no_sync=no_sync,
    )
    if compute_time is not None:
        if tokens_per_gpu is not None:
            raise ValueError("give --compute-time or --tokens-per-gpu (with --mfu), not both")
        kwargs["compute_time_s"] = units.parse_duration(compute_time, name="--compute-time")
    elif tokens_per_gpu is None:
        raise ValueError("step: needs --compute-time, or --tokens-per-gpu with --mfu")
    else:
        kwargs["tokens_per_gpu"] = units.parse_count(tokens_per_gpu, name="--tokens-per-gpu")
        kwargs["mfu"] = mfu
    if cluster is not None:
        if bandwidth is not None or ranks is not None:
            raise ValueError("give either --cluster (with --nodes) or --ranks and --bandwidth")
        from .. import predict, presets

        c = presets.cluster(cluster, nodes=nodes)
        n = int(c.ranks)
        kwargs["allreduce_time_fn"] = predict.allreduce_time_fn(c, nodes=nodes, model=model)
        kwargs["bandwidth_bytes_per_s"] = float(
            c.inter_bandwidth_bytes_per_s if nodes > 1 else c.intra_bandwidth_bytes_per_s
        )
        if "tokens_per_gpu" in kwargs:
            kwargs["peak_flops"] = (
                units.parse_count(peak_flops, name="--peak-flops")
                if peak_flops
                else float(c.peak_flops)
            )
    else:
        if ranks is None or bandwidth is None:
            raise ValueError("step: needs --ranks and --bandwidth, or --cluster NAME")
        n = ranks
        kwargs["bandwidth_bytes_per_s"] = units.parse_rate(bandwidth, name="--bandwidth")
        kwargs["latency_s"] = units.parse_duration(latency, name="--latency")
        if "tokens_per_gpu" in kwargs:
            if peak_flops is None:
                raise ValueError("--tokens-per-gpu without --cluster needs --peak-flops, e.g. 989T")
            kwargs["peak_flops"] = units.parse_count(peak_flops, name="--peak-flops")
    p_given = units.parse_count(params, name="--params") if params is not None else None
    if arch is not None:
        from ..architecture import resolve_params

        p, a = resolve_params(p_given, arch)
        kwargs["layer_param_counts"] = a.tensor_sizes  # type: ignore[union-attr]
    else:
        p = float(p_given)  # type: ignore[arg-type]
    result = ddp.ddp_step(p, n, **kwargs)
    data = {
        "params": p,
        "arch": arch,
        "buckets": result.buckets,
        "ranks": n,
        "compute_s": result.compute_s,
        "comm_s": result.comm_s,
        "exposed_comm_s": result.exposed_comm_s,
        "step_time_s": result.step_time_s,
        "bound": result.bound,
        "efficiency": result.efficiency,
    }
    if as_json:
        data["timeline"] = _jsonable(result.timeline)
        _print_json(data)
        return
    typer.echo(
        _kv(
            [
                ("ranks", str(n)),
                ("buckets", f"{result.buckets}" + (f" ({arch} tensors)" if arch else "")),
                ("compute", units.format_duration(result.compute_s)),
                ("all-reduce (sum of buckets)", units.format_duration(result.comm_s)),
                ("exposed communication", units.format_duration(result.exposed_comm_s)),
                ("step time", units.format_duration(result.step_time_s)),
                ("bound", f"{result.bound}-bound"),
                ("scaling efficiency", f"{100 * float(result.efficiency):.1f}%"),
            ]
        )
    )


# --- scenario ---------------------------------------------------------------------------------
_ArchOpt = Annotated[
    str | None,
    typer.Option(
        help="Architecture preset (`costmodel archs`): parameters, tensors, activations, FLOPs."
    ),
]


def _scenario_from_options(o: dict[str, Any]) -> Any:
    from ..scenario import Scenario

    if o["params"] is None and o["arch"] is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    if o["recompute"] not in ("none", "selective", "full"):
        raise ValueError(f"--recompute: must be none, selective or full, got {o['recompute']!r}")
    return Scenario(
        params=o["params"],
        arch=o["arch"],
        cluster=o["cluster"],
        nodes=o["nodes"],
        gpus_per_node=o["gpus_per_node"],
        recipe=o["recipe"],
        zero_stage=o["zero"],
        local_batch=o["local_batch"],
        accumulation=o["accumulation"],
        sequence_length=o["sequence_length"],
        mfu=o["mfu"],
        compute_time_s=units.parse_duration(o["compute_time"], name="--compute-time")
        if o["compute_time"] is not None
        else None,
        bucket_cap_bytes=o["bucket"],
        no_sync=o["no_sync"],
        model=o["model"],
        flash_attention=o["flash"],
        recompute=o["recompute"],
        comm_contention=o.get("contention", 0.0),
    )


def scenario(
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: _ArchOpt = None,
    cluster: Annotated[str, typer.Option(help="Cluster preset.")] = "dgx-h100",
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    gpus_per_node: Annotated[
        int | None, typer.Option(min=1, help="Use a slice of each node (default: all GPUs).")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Precision/optimizer recipe, e.g. mixed-adam.")
    ] = "mixed-adam",
    zero: Annotated[
        int, typer.Option("--zero", "--zero-stage", min=0, max=3, help="ZeRO stage 0-3.")
    ] = 0,
    local_batch: Annotated[int, typer.Option(min=1, help="Micro-batch per GPU [samples].")] = 1,
    accumulation: Annotated[
        int, typer.Option(min=1, help="Gradient-accumulation micro-batches per step.")
    ] = 1,
    sequence_length: Annotated[
        int, typer.Option("--sequence-length", "--seq", min=1, help="Tokens per sample.")
    ] = 4096,
    mfu: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Model FLOP utilisation (0, 1].")
    ] = 0.4,
    compute_time: Annotated[
        str | None, typer.Option(help="Measured compute per micro-batch (overrides --mfu): 0.4s.")
    ] = None,
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    no_sync: Annotated[
        bool,
        typer.Option(
            "--no-sync/--sync", help="Accumulate under no_sync (one all-reduce per step)."
        ),
    ] = True,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    recompute: Annotated[str, typer.Option(help="none, selective or full (with --arch).")] = "none",
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="FlashAttention (with --arch).")
    ] = True,
    contention: Annotated[
        float,
        typer.Option(
            "--contention",
            min=0.0,
            max=1.0,
            help="Overlap contention c in [0, 1]: backward slows to 1 - c while an all-reduce "
            "runs. 0 = perfect overlap; 1 = the fit to PyTorch's V100 DDP benchmark.",
        ),
    ] = 0.0,
    vs: Annotated[
        str | None,
        typer.Option(
            help="Second configuration to compare: this one with some fields changed, "
            "e.g. 'nodes=16,zero_stage=3' or 'cluster=dgx-a100,arch=llama-3.1-70b'."
        ),
    ] = None,
    bucket_advice: Annotated[
        bool,
        typer.Option(
            "--bucket-advice/--no-bucket-advice",
            help="Sweep bucket_cap 1-200 MiB and print the cap with the least exposed comm.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A whole training setup: memory, batch, DDP step, verdict and what flips it.

    --model names the collective cost model; the architecture is --arch. --vs compares a
    second configuration (A = the options, B = A with the --vs changes) and prints both
    side by side with B - A and B / A; --bucket-advice adds the bucket_cap advisor.

    Example:

        costmodel scenario --params 7B --cluster dgx-h100 --nodes 8 --local-batch 1 --zero 1

        costmodel scenario --arch llama-2-7b --cluster dgx-h100 --nodes 8 --recompute full

        costmodel scenario --arch llama-3.1-70b --nodes 8 --zero 3 --vs 'cluster=dgx-a100'
    """
    a = _scenario_from_options(locals())
    b = a.with_changes(vs) if vs is not None else None
    result = a.evaluate(scaling=b is None, flips=b is None)
    other = b.evaluate(scaling=False, flips=False) if b is not None else None
    advice = {"A": a.bucket_advice()} if bucket_advice else {}
    if bucket_advice and b is not None:
        advice["B"] = b.bucket_advice()
    if as_json:
        if other is None and not advice:
            _print_json(result)
            return
        data: dict[str, Any] = {"a": result} if other is not None else {**_jsonable(result)}
        if other is not None:
            from ..verdict import decide_scenarios

            data.update(b=other, changes=vs, comparison=result.compare(other))
            data["faster_step"] = decide_scenarios(result, other).as_dict()
        if advice:
            data["bucket_advice"] = {k: v.as_dict() for k, v in advice.items()}
        _print_json(data)
        return
    if other is None:
        typer.echo(result.summary())
    else:
        typer.echo(_comparison_text(result, other, vs or ""))
    for name, adv in advice.items():
        typer.echo(_advice_text(name if other is not None else "", adv, a if name == "A" else b))


def _comparison_text(a: Any, b: Any, changes: str) -> str:
    """A and B side by side (one row per figure, B - A and B / A), and the one-line answer."""
    from ..scenario import compare, compare_summary

    def fmt(v: Any, unit: str) -> str:
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
        return units.format_count(v)

    def diff(r: dict[str, Any]) -> str:
        d, unit = r["difference"], r["unit"]
        if d is None:
            return "same" if r["a"] == r["b"] else "differs"
        if unit == "%":
            return f"{100 * d:+.1f} pt"
        sign = "+" if d >= 0 else "-"
        return sign + fmt(abs(d), unit)

    head = f"A: {a.summary().splitlines()[0]}\nB: {b.summary().splitlines()[0]}  (A with {changes})"
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
    return f"{head}\n{table}\nanswer: {compare_summary(a, b)}\nfaster step: {faster.text()}"


def _advice_text(name: str, adv: Any, scenario: Any) -> str:
    """The bucket_cap advisor in a few lines: best cap, and the exposed time there vs now."""
    caps = list(adv.caps_bytes)
    now = float(scenario.bucket_cap_bytes)
    label = f"bucket_cap advice{' (' + name + ')' if name else ''}"
    best = adv.best_index
    line = (
        f"{label}: {adv.best_cap_bytes / 2**20:g} MiB minimises the exposed "
        f"communication ({units.format_duration(adv.exposed_comm_s[best])}, "
        f"{adv.buckets[best]} buckets) over {caps[0] / 2**20:g}-{caps[-1] / 2**20:g} MiB"
    )
    if now in caps:
        k = caps.index(now)
        line += (
            f"; at the current {now / 2**20:g} MiB: "
            f"{units.format_duration(adv.exposed_comm_s[k])} ({adv.buckets[k]} buckets)"
        )
    return line


def train(
    tokens: Annotated[
        str | None, typer.Option(help="Tokens to train: 2T, 300B (or --steps).")
    ] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Optimizer steps.")] = None,
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: _ArchOpt = None,
    cluster: Annotated[str, typer.Option(help="Cluster preset.")] = "dgx-h100",
    nodes: Annotated[int, typer.Option(min=1)] = 1,
    gpus_per_node: Annotated[int | None, typer.Option(min=1)] = None,
    recipe: Annotated[str, typer.Option()] = "mixed-adam",
    zero: Annotated[int, typer.Option("--zero", "--zero-stage", min=0, max=3)] = 0,
    local_batch: Annotated[int, typer.Option(min=1)] = 1,
    accumulation: Annotated[int, typer.Option(min=1)] = 1,
    sequence_length: Annotated[int, typer.Option("--sequence-length", "--seq", min=1)] = 4096,
    mfu: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.4,
    compute_time: Annotated[
        str | None, typer.Option(help="Measured compute per micro-batch.")
    ] = None,
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    no_sync: Annotated[bool, typer.Option("--no-sync/--sync")] = True,
    model: Annotated[str, typer.Option(help="Collective cost model: nccl or textbook.")] = "nccl",
    recompute: Annotated[str, typer.Option(help="none, selective or full (with --arch).")] = "none",
    flash: Annotated[bool, typer.Option("--flash/--no-flash")] = True,
    step_time: Annotated[
        str | None,
        typer.Option(help="Measured step time: 1.2s (else the predicted one); gives the MFU."),
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None, typer.Option(min=0.0, help="Price of one GPU-hour [USD].")
    ] = None,
    price: Annotated[
        str | None, typer.Option(help="Price preset, e.g. aws-p5-on-demand (`costmodel archs`).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Time and cost to train: wall-clock days, GPU-hours, dollars and MFU.

    The step time is the scenario's prediction, or --step-time as measured (then the MFU shown
    is what that measurement implies).

    Example (Llama-2-7B on 2T tokens, 64 H100s at the 2023 AWS on-demand price):

        costmodel train --arch llama-2-7b --tokens 2T --cluster dgx-h100 --nodes 8 \\
            --local-batch 4 --recompute full --price aws-p5-on-demand
    """
    opts = dict(locals())
    if (tokens is None) == (steps is None):
        raise ValueError("--tokens or --steps: give exactly one of them")
    d = units.parse_count(tokens, name="--tokens") if tokens is not None else None
    measured = units.parse_duration(step_time, name="--step-time") if step_time else None
    result = _scenario_from_options(opts).evaluate(scaling=False, flips=False)
    cost = result.training_cost(
        d,
        steps=steps,
        usd_per_gpu_hour=usd_per_gpu_hour,
        price=price,
        measured_step_time_s=measured,
    )
    data = {
        **cost.as_dict(),
        "arch": arch,
        "params": result.scenario.params,
        "cluster": cluster,
        "memory_total_bytes": result.memory_total_bytes,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "fits": result.fits,
    }
    if as_json:
        _print_json(data)
        return
    rows = [
        ("tokens", units.format_count(cost.tokens)),
        ("steps", f"{cost.steps:,}"),
        ("tokens per step", units.format_count(cost.tokens_per_step)),
        (f"step time ({cost.step_time_source})", units.format_duration(cost.step_time_s)),
        ("GPUs", str(cost.ranks)),
        ("wall clock", f"{cost.wall_days:,.1f} days"),
        ("GPU-hours", f"{cost.gpu_hours:,.0f}"),
    ]
    if cost.cost_usd is not None:
        rows.append(("price", f"${cost.usd_per_gpu_hour:.3g} per GPU-hour"))
        rows.append(("cost", f"${cost.cost_usd:,.0f}"))
    if cost.mfu is not None:
        rows.append(
            ("MFU" + (" implied" if measured else " at this step"), f"{100 * cost.mfu:.1f}%")
        )
    rows.append(
        (
            "memory per GPU",
            f"{units.format_bytes(result.memory_total_bytes)} of "
            f"{units.format_bytes(result.gpu_memory_bytes)}"
            + ("" if result.fits else " (does NOT fit)"),
        )
    )
    head = arch or f"{units.format_count(result.scenario.params)} params"
    typer.echo(f"{head} on {cluster} x {result.nodes} nodes, {result.scenario.recipe}")
    typer.echo(_kv(rows))
    if cost.price_note and price is not None:
        typer.echo(f"price: {cost.price_note}")
