"""Time one GPU's forward + backward of an architecture; the fitted compute time beside it.

"Measure one node, predict the cluster" (``costmodel.compute``, docs/step-fidelity.md) starts
from a measured compute time. This job measures it for a llama-family architecture (a preset or
your model's ``config.json``: ``llama``, ``qwen2``; Mistral is ``llama``) built in plain PyTorch
from the same tensor list costmodel prices (:meth:`~costmodel.architecture.Architecture.tensors`,
names, shapes and order checked by the tests), and writes one JSON line per run with the
compute ``costmodel step`` shows for the same micro-batch on one GPU of the GPU's cluster preset
(the one road: ``strategy_step`` on a 1-GPU slice)::

    python -m costmodel.validation.compute_bench --arch llama-3.1-8b --seq 4096 -o compute.jsonl
    costmodel step --arch llama-3.1-8b --cluster hgx-h200 --nodes 16 --strategy fsdp --compute-time 407ms

The second line is the recommended use of the first's ``compute_s``.

What is timed (the ``compute`` of ``costmodel step``): forward, the loss, and backward of one
micro-batch, parameters and gradients in the compute dtype (bf16 by default, as FSDP's
``param_dtype``: no weight casts in the timed region), the loss in fp32, attention through
``torch.nn.functional.scaled_dot_product_attention`` (causal; FlashAttention or cuDNN kernels on
GPUs), everything else eager PyTorch without ``torch.compile`` (the fit's rows ran without it).
The optimizer step is timed apart with ``--optimizer adamw`` (after the model is freed): PyTorch's
fused AdamW over fp32 master weights, gradients and states of the architecture's tensor shapes,
beside :func:`costmodel.compute.optimizer_step_s` (HBM-bound, 28 B per parameter). Each of
``--steps`` timed iterations follows ``--warmup`` untimed ones, a device synchronise before and
after; the row keeps the median and every time. ``--layers N`` cuts the depth (a wide model
that does not fit one GPU; the prediction is made for the same cut architecture).
``--recompute full`` checkpoints every layer (its forward rerun in backward), priced and sized
as ``costmodel step --recompute full`` / ``costmodel memory --recompute full``.

The fitted efficiency is a single-node *step* efficiency (FSDP on 8 GPUs, its intra-node
communication inside: ``costmodel.compute``); the step engine takes the whole node's
communication back out for the compute it shows, on a slice of a node too. An eager
implementation (unfused norms, rotary and SwiGLU) is expected slower than the fused kernels of
the trainers the fit's runs used. ``ratio`` = measured / predicted; ``in_band`` says whether it
falls in the compute band. torch is imported only here and in
``torch_bench`` (the ``validate`` extra).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

#: families built here: llama (also Mistral) and qwen2 (q/k/v biases); the tensor list of each
#: is costmodel.architecture's, which the tests compare with the built module's
FAMILIES = ("llama", "qwen2")

#: a GPU family in a CUDA device name -> the GPU preset whose fit predicts it (A100: by memory)
_PRESET_OF_FAMILY = {
    "gb200": "gb200",
    "gh200": "gh200",
    "b200": "b200",
    "h200": "h200-sxm",
    "h100": "h100-sxm",
    "l40s": "l40s",
    "v100": "v100-sxm2",
}


#: ``--recompute`` choices: none, or full (every layer checkpointed). costmodel also prices
#: selective modes (``costmodel.compute.CHECKPOINTING``); this job times the two it builds.
RECOMPUTE = ("none", "full")


def gpu_preset_for(device: str) -> str | None:
    """The GPU preset a CUDA device name points to, or None (a CPU, a GPU with no preset, a PCIe
    H100/H200 NVL card whose power limit is not the SXM preset's).

    >>> gpu_preset_for("NVIDIA H200"), gpu_preset_for("NVIDIA A100-SXM4-40GB")
    ('h200-sxm', 'a100-sxm-40gb')
    >>> gpu_preset_for("NVIDIA H100 NVL"), gpu_preset_for("cpu")
    (None, None)
    """
    from .compare import _gpu_family

    squashed = "".join(device.lower().split())
    if "nvl" in squashed.replace("nvl72", "") or "pcie" in squashed:
        return None
    family = _gpu_family(device)
    if family == "a100":
        return "a100-sxm-80gb" if "80gb" in squashed else "a100-sxm-40gb"
    return _PRESET_OF_FAMILY.get(family or "")


def cluster_for(gpu: str) -> str | None:
    """The shipped cluster preset whose node carries ``gpu`` (a GPU preset), preferring a
    DGX/HGX board (the fitted one-node steps ran on 8-GPU NVSwitch nodes); None without one.

    >>> cluster_for("h200-sxm"), cluster_for("h100-sxm"), cluster_for("a100-sxm-80gb")
    ('hgx-h200', 'dgx-h100', 'dgx-a100')
    """
    from costmodel import presets

    names = [n for n in presets.names("cluster") if presets.cluster(n).gpu.name == gpu]
    names.sort(key=lambda n: (not n.startswith(("dgx-", "hgx-")), n))
    return names[0] if names else None


def arch_for(name: str, layers: int | None = None) -> Any:
    """The architecture to build and price: ``name`` (preset or config.json), its depth cut to
    ``layers`` when given. A family this job does not build is refused in one line."""
    from costmodel.architecture import load_arch

    a = load_arch(name)
    if a.family not in FAMILIES or a.moe:
        raise ValueError(
            f"--arch: {a.name} is a {a.family}{' MoE' if a.moe else ''} model; this job builds "
            f"{', '.join(FAMILIES)} (dense) models; time yours with your own trainer and give "
            "costmodel step --compute-time"
        )
    if layers is not None:
        if not 1 <= layers <= a.layers:
            raise ValueError(f"--layers: must be in [1, {a.layers}] for {a.name}, got {layers}")
        # validated afresh, not model_copy: the parameter count is cached on the instance
        cut = {**a.model_dump(), "layers": layers, "name": f"{a.name}[{layers} layers]"}
        a = type(a).model_validate(cut)
        a = type(a).model_validate({**cut, "published_params": float(a.params)})
    return a


def row_arch(row: dict[str, Any]) -> Any:
    """The architecture a row timed (``arch_for`` of its name, cut to its ``layers`` where the
    name says ``[N layers]``), to price a stored row again.

    >>> row_arch({"arch": "llama-3.1-70b[4 layers]", "layers": 4}).layers
    4
    """
    cut = "[" in row["arch"]
    return arch_for(row["arch"].split("[")[0], row["layers"] if cut else None)


def build_model(
    arch: Any, torch: Any, device: Any = None, dtype: Any = None, recompute: str = "none"
) -> Any:
    """A causal LM of ``arch`` in plain PyTorch whose ``named_parameters()`` are
    ``arch.tensors()`` (names, shapes and order: Hugging Face's LlamaForCausalLM/Qwen2ForCausalLM
    registration), randomly initialised (std 0.02, norms 1); ``recompute="full"`` checkpoints
    every layer."""
    nn, F = torch.nn, torch.nn.functional
    Module: Any = nn.Module  # a base class mypy can read (torch is typed Any here)
    h, d = arch.hidden, arch.dim_head
    nh, nkv = arch.heads, arch.kv_heads
    bias = arch.family == "qwen2"

    class RMSNorm(Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x: Any) -> Any:
            v = x.float()
            # eps 1e-5: Llama 2's config.json rms_norm_eps (the time does not depend on it)
            v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-5)
            return self.weight * v.to(x.dtype)

    class Attention(Module):
        def __init__(self) -> None:
            super().__init__()
            self.q_proj = nn.Linear(h, nh * d, bias=bias)
            self.k_proj = nn.Linear(h, nkv * d, bias=bias)
            self.v_proj = nn.Linear(h, nkv * d, bias=bias)
            self.o_proj = nn.Linear(nh * d, h, bias=False)

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, nh, d).transpose(1, 2)
            k = self.k_proj(x).view(b, s, nkv, d).transpose(1, 2)
            v = self.v_proj(x).view(b, s, nkv, d).transpose(1, 2)
            q, k = _rotate(q, cos, sin, torch), _rotate(k, cos, sin, torch)
            if nkv != nh:  # grouped-query attention: each K/V head serves nh / nkv query heads
                k = k.repeat_interleave(nh // nkv, dim=1)
                v = v.repeat_interleave(nh // nkv, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(o.transpose(1, 2).reshape(b, s, nh * d))

    class MLP(Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_proj = nn.Linear(h, arch.ffn, bias=False)
            self.up_proj = nn.Linear(h, arch.ffn, bias=False)
            self.down_proj = nn.Linear(arch.ffn, h, bias=False)

        def forward(self, x: Any) -> Any:
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(Module):
        def __init__(self) -> None:
            super().__init__()
            self.self_attn = Attention()
            self.mlp = MLP()
            self.input_layernorm = RMSNorm()
            self.post_attention_layernorm = RMSNorm()

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            x = x + self.self_attn(self.input_layernorm(x), cos, sin)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Body(Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed_tokens = nn.Embedding(arch.vocab, h)
            self.layers = nn.ModuleList(Layer() for _ in range(arch.layers))
            self.norm = RMSNorm()

    class CausalLM(Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = Body()
            if not arch.tied_embeddings:
                self.lm_head = nn.Linear(h, arch.vocab, bias=False)

        def forward(self, ids: Any) -> Any:
            s = ids.shape[1]
            pos = torch.arange(s, device=ids.device, dtype=torch.float32)
            # base 10000: RoPE's (Su et al. 2021, eq. 15); Llama 3 uses 500000, which changes
            # the angles, not the work timed
            inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=ids.device).float() / d))
            ang = torch.outer(pos, inv)
            ang = torch.cat((ang, ang), dim=-1)
            x = self.model.embed_tokens(ids)
            cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
            for layer in self.model.layers:
                if recompute == "full" and torch.is_grad_enabled():
                    # the layer's activations dropped after forward, its forward rerun in
                    # backward (Chen et al. 2016, arXiv:1604.06174; torchtitan's full AC)
                    x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, use_reentrant=False)
                else:
                    x = layer(x, cos, sin)
            x = self.model.norm(x)
            head = self.model.embed_tokens.weight if arch.tied_embeddings else self.lm_head.weight
            return F.linear(x, head)

    with torch.device(device or "cpu"):
        model = CausalLM()
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            continue
        with torch.no_grad():
            if name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02)
    return model.to(dtype=dtype) if dtype is not None else model


def _rotate(x: Any, cos: Any, sin: Any, torch: Any) -> Any:
    """Rotary position embedding (Su et al. 2021, arXiv:2104.09864), the half-split form of
    Hugging Face's ``apply_rotary_pos_emb``."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def predicted(
    arch: Any, cluster: str, seq: int, micro_batch: int, recompute: str = "none"
) -> dict[str, Any]:
    """The compute of this micro-batch that ``costmodel step`` shows for one GPU of ``cluster``
    (a cluster preset: ``strategy_step`` on a 1-GPU slice of one node, DDP, at its defaults:
    the fitted one-node step with the whole node's communication taken out; ``recompute`` as
    ``step --recompute``, its extra forward included) and its band."""
    from costmodel import presets
    from costmodel.compute import precision_peak_flops
    from costmodel.strategy.step import strategy_step

    c = presets.cluster(cluster, field="--cluster")
    step = strategy_step(
        arch=arch,
        cluster=c,
        nodes=1,
        gpus_per_node=1,
        strategy="ddp",
        micro_batch=micro_batch,
        sequence_length=seq,
        recompute=recompute,
        timeline=False,
    )
    t = step.compute_s
    low, high = step.compute_band
    return {
        "cluster": c.name,
        "gpu_preset": c.gpu.name,
        "compute_source": step.compute_source,
        "predicted_compute_s": t,
        "band_low_s": t * low,
        "band_high_s": t * high,
        "peak_flops": precision_peak_flops(c.gpu, "bf16"),
    }


def predicted_optimizer(params: int, cluster: str) -> dict[str, Any]:
    """The optimizer step costmodel prices for ``params`` fp32 parameters updated by AdamW on one
    GPU of ``cluster``: fp32 master weights, gradients and both states (28 B per parameter)."""
    from costmodel import presets
    from costmodel.compute import optimizer_bytes_per_param, optimizer_step_s

    g = presets.cluster(cluster, field="--cluster").gpu
    per = optimizer_bytes_per_param(4.0, 4.0, 8.0, 4.0)
    return {
        "optimizer_bytes_per_param": per,
        "predicted_optimizer_s": optimizer_step_s(
            params, per, float(g.memory_bandwidth_bytes_per_s)
        ),
    }


def time_optimizer(arch: Any, torch: Any, device: Any, steps: int, warmup: int) -> list[float]:
    """Times of PyTorch's fused AdamW step (foreach on CPU) over fp32 weights, gradients and
    states shaped as ``arch.tensors()`` [s]."""
    cuda = device.type == "cuda"
    params = [torch.nn.Parameter(torch.zeros(shape, device=device)) for _, shape in arch.tensors()]
    for p in params:
        p.grad = torch.full_like(p, 1e-3)
    opt = torch.optim.AdamW(params, lr=1e-4, fused=cuda, foreach=not cuda)
    times = []
    for i in range(warmup + steps):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m costmodel.validation.compute_bench", description=__doc__.splitlines()[0]
    )
    p.add_argument("--arch", required=True, help="llama-family preset or config.json")
    p.add_argument("--layers", type=int, default=None, help="cut the depth to this many layers")
    p.add_argument("--seq", type=int, default=4096, help="tokens per sequence (default 4096)")
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per micro-batch (1)")
    p.add_argument("--steps", type=int, default=10, help="timed iterations, median kept (10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed iterations first (3)")
    p.add_argument(
        "--dtype",
        choices=("bf16", "fp32"),
        default="bf16",
        help="parameters, gradients and compute (default bf16; fp32 for CPUs without bf16)",
    )
    p.add_argument(
        "--cluster",
        default="auto",
        help="cluster preset whose GPU to predict for: auto (the DGX/HGX preset of the CUDA "
        "device's GPU), none, or a name",
    )
    p.add_argument(
        "--optimizer",
        choices=("none", "adamw"),
        default="none",
        help="also time an AdamW step over fp32 weights, gradients and states (16 B per "
        "parameter of device memory) beside costmodel's optimizer_step_s (default none)",
    )
    p.add_argument(
        "--compile",
        choices=("none", "inductor", "eager"),
        default="none",
        help="torch.compile each layer with this backend (inductor: fused kernels, as "
        "torchtitan's --compile; eager: traced only; default none: the fit's rows ran "
        "without it)",
    )
    p.add_argument(
        "--recompute",
        choices=RECOMPUTE,
        default="none",
        help="full: every layer's forward rerun in backward (torch.utils.checkpoint per layer), "
        "priced as `costmodel step --recompute full` (default none)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check every argument and print what would be timed and predicted; nothing runs",
    )
    p.add_argument("-o", "--output", default=None, help="JSON lines file to append the row to")
    return p


def _check(args: argparse.Namespace) -> None:
    for name, value, low in (("--seq", args.seq, 1), ("--micro-batch", args.micro_batch, 1)):
        if value < low:
            raise ValueError(f"{name}: must be >= {low}, got {value}")
    if args.steps < 1:
        raise ValueError(f"--steps: must be >= 1, got {args.steps}")
    if args.warmup < 0:
        raise ValueError(f"--warmup: must be >= 0, got {args.warmup}")
    if args.output is not None and not args.output.endswith(".jsonl"):
        raise ValueError(f"--output: the row is a JSON line; give a .jsonl file, got {args.output}")


def measure(args: argparse.Namespace, torch: Any) -> dict[str, Any]:
    """Build, warm up and time the model; the row (without the prediction)."""
    arch = arch_for(args.arch, args.layers)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    model = build_model(arch, torch, device, dtype, args.recompute)
    if args.compile != "none":
        # each transformer layer compiled in place (regional compilation: one compiled graph
        # serves every layer), as torchtitan's --compile does; the warm-up iterations compile
        for layer in model.model.layers:
            layer.compile(backend=args.compile)
    g = torch.Generator(device=device).manual_seed(0)
    ids = torch.randint(0, arch.vocab, (args.micro_batch, args.seq + 1), device=device, generator=g)
    x, y = ids[:, :-1], ids[:, 1:]

    def step() -> float:
        """One forward, loss and backward; the forward and loss's time [s] (CUDA events on a
        GPU, no synchronise between the two halves; the clock on a CPU)."""
        for p in model.parameters():
            p.grad = None
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(2)] if cuda else []
        if cuda:
            marks[0].record()
        t0 = time.perf_counter()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        if cuda:
            marks[1].record()
        forward = time.perf_counter() - t0
        loss.backward()
        if cuda:
            marks[1].synchronize()
            forward = marks[0].elapsed_time(marks[1]) / 1e3
        return forward

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    times, forwards = [], []
    for _ in range(args.steps):
        sync()
        t0 = time.perf_counter()
        forwards.append(step())
        sync()
        times.append(time.perf_counter() - t0)
    from .torch_bench import device_name

    row: dict[str, Any] = {
        "kind": "compute",
        "arch": arch.name,
        "family": arch.family,
        "params": arch.params,
        "layers": arch.layers,
        "seq": args.seq,
        "micro_batch": args.micro_batch,
        "tokens": args.seq * args.micro_batch,
        "dtype": args.dtype,
        "compile": args.compile,
        "recompute": args.recompute,
        "device": device_name(torch, device),
        "torch": torch.__version__,
        "compute_s": statistics.median(times),
        "times_s": times,
        # forward + loss of each timed iteration; against FORWARD_FRACTION (1/3), the split
        # of the step's timeline and of the recomputation's price
        "forward_s": statistics.median(forwards),
        "forward_times_s": forwards,
        "forward_fraction": statistics.median(forwards) / statistics.median(times),
        "peak_memory_bytes": int(torch.cuda.max_memory_allocated()) if cuda else None,
        # what the caching allocator held at its peak (allocated + its reserve), and the
        # device's used memory now (the reserve, the CUDA context and any other process):
        # against costmodel.memory's fragmentation allowance and cuda_context_bytes
        "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()) if cuda else None,
        "device_used_bytes": _device_used(torch) if cuda else None,
        "reserved_bytes": int(torch.cuda.memory_reserved()) if cuda else None,
        "model_flops": arch.training_flops_per_token(args.seq) * args.seq * args.micro_batch,
        "_arch": arch,
    }
    if args.optimizer == "adamw":
        del model, x, y, ids
        if cuda:
            torch.cuda.empty_cache()
        times = time_optimizer(arch, torch, device, args.steps, args.warmup)
        row.update(optimizer="adamw", optimizer_s=statistics.median(times), optimizer_times_s=times)
    return row


def _device_used(torch: Any) -> int:
    """The device's used memory [B]: total less free (``torch.cuda.mem_get_info``)."""
    free, total = torch.cuda.mem_get_info()
    return int(total - free)


def summary(row: dict[str, Any]) -> str:
    """The lines printed for a row: measured, predicted and where the measurement falls (times
    in :func:`costmodel.units.format_duration`'s units, as every other surface)."""
    from costmodel.units import format_duration as t

    text = _compute_summary(row)
    if "optimizer_s" not in row:
        return text
    text += f"\n  AdamW step (fp32, {row['params']:,} parameters): {t(row['optimizer_s'])}"
    if row.get("predicted_optimizer_s") is None:
        return text
    return text + (
        f"; predicted {t(row['predicted_optimizer_s'])} "
        f"({row['optimizer_bytes_per_param']:g} B per parameter at the achievable HBM "
        f"bandwidth): measured/predicted {row['optimizer_ratio']:.3g}"
    )


def _compiled(row: dict[str, Any]) -> str:
    """``, torch.compile (inductor)`` for a compiled row and ``, recompute full`` for a
    checkpointed one, else nothing."""
    backend = row.get("compile", "none")
    text = "" if backend in (None, "none") else f", torch.compile ({backend})"
    return text + ("" if row.get("recompute", "none") == "none" else ", recompute full")


def _compute_summary(row: dict[str, Any]) -> str:
    from costmodel.units import format_duration as t

    text = (
        f"{row['arch']} on {row['device']}, seq {row['seq']} x micro-batch {row['micro_batch']}, "
        f"{row['dtype']}{_compiled(row)}: forward + backward {t(row['compute_s'])} "
        f"({row['tokens'] / row['compute_s']:,.0f} tokens/s"
        + (
            f"; forward + loss {t(row['forward_s'])}, {row['forward_fraction']:.2f} of it)"
            if row.get("forward_s") is not None
            else ")"
        )
    )
    if row.get("predicted_compute_s") is None:
        return text + "; no cluster preset to predict for (--cluster NAME)"
    return text + (
        f"; MFU {row['mfu']:.3g}; predicted {t(row['predicted_compute_s'])} "
        f"on one {row['gpu_preset']} of {row['cluster']} (band {t(row['band_low_s'])}-"
        f"{t(row['band_high_s'])}): measured/predicted {row['ratio']:.3g}, "
        f"{'inside' if row['in_band'] else 'outside'} the band"
    )


def memory_need_bytes(arch: Any, args: argparse.Namespace, cuda: bool = True) -> float:
    """Device memory the job will hold at its peak [B], from costmodel's own memory model: the
    weights, gradients and activations of one micro-batch (``training_memory``'s parts, bf16;
    fp32 doubles the weights and gradients), or with ``--optimizer adamw`` the 16 B per
    parameter of fp32 weights, gradients and both states (24 B off CUDA: the foreach AdamW
    there holds two parameter-sized fp32 temporaries), whichever is larger. On one H200 the
    parts were 2-32 % above the measured peak allocated (docs/gpu-checks.md): a safe estimate."""
    from costmodel.memory import training_memory

    m = training_memory(
        arch=arch, sequence_length=args.seq, micro_batch=args.micro_batch, recompute=args.recompute
    )
    width = 2.0 if args.dtype == "fp32" else 1.0  # fp32 weights and gradients: twice bf16's
    need = width * (m.weights_bytes + m.gradients_bytes) + m.activations_bytes
    if args.optimizer == "adamw":
        need = max(need, (16.0 if cuda else 24.0) * arch.params)
    return float(need)


def free_bytes(torch: Any) -> tuple[float, str] | None:
    """Free memory of the device the job runs on [B] and its name: the GPU's free memory
    (``torch.cuda.mem_get_info``), else this machine's available memory (Linux
    ``/proc/meminfo`` MemAvailable); None where neither can be read."""
    if torch.cuda.is_available():
        return float(torch.cuda.mem_get_info()[0]), torch.cuda.get_device_name()
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0, "this machine (CPU)"
    except OSError:
        return None
    return None


def check_fits(arch: Any, args: argparse.Namespace, torch: Any) -> None:
    """Refuse, in one line, a configuration the device cannot hold (it was killed for memory,
    or OOM'd in CUDA after minutes of set-up): what it needs, what is free, what to change."""
    have = free_bytes(torch)
    if have is None:
        return
    from costmodel.units import format_bytes

    need = memory_need_bytes(arch, args, cuda=torch.cuda.is_available())
    if need > 0.9 * have[0]:  # a tenth kept for the allocator, the process and the loss
        raise ValueError(
            f"--arch: {arch.name} at {args.seq} x {args.micro_batch} tokens needs about "
            f"{format_bytes(need)} (weights, gradients and activations, costmodel's memory "
            f"model{'; or the AdamW step' if args.optimizer == 'adamw' else ''}) "
            f"and {have[1]} has {format_bytes(have[0])} free (a tenth kept spare); give "
            "--layers N (fewer layers), a "
            "smaller --seq or --micro-batch"
        )


def dry_run(args: argparse.Namespace) -> str:
    """What :func:`run` would time and predict, every argument checked, nothing built or timed
    (torch not imported): the architecture, the micro-batch, the memory it needs and, for a
    named cluster, the compute ``costmodel step`` shows for it."""
    from costmodel.units import format_bytes, format_duration

    _check(args)
    arch = arch_for(args.arch, args.layers)
    text = (
        f"would time {arch.name} ({arch.params:,} parameters), seq {args.seq} x micro-batch "
        f"{args.micro_batch}, {args.dtype}{_compiled(vars(args))}: {args.warmup} warm-up and "
        f"{args.steps} timed iterations of forward + backward"
        f"{' and of an AdamW step' if args.optimizer == 'adamw' else ''}, needing about "
        f"{format_bytes(memory_need_bytes(arch, args))} of device memory"
    )
    if args.cluster in ("auto", "none"):
        return text + (
            "; predicted for the cluster preset of the GPU it runs on"
            if args.cluster == "auto"
            else ""
        )
    p = predicted(arch, args.cluster, args.seq, args.micro_batch, args.recompute)
    return text + (
        f"; predicted {format_duration(p['predicted_compute_s'])} on one {p['gpu_preset']} of "
        f"{p['cluster']} (band {format_duration(p['band_low_s'])}-"
        f"{format_duration(p['band_high_s'])})"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Check, measure and predict one configuration (``build_parser``'s arguments); the row. A
    refused argument is a ValueError naming it, raised before torch is imported or anything is
    timed. ``costmodel validate compute`` and :func:`main` both run this."""
    _check(args)
    arch = arch_for(args.arch, args.layers)
    if args.cluster not in ("auto", "none"):  # a named preset is checked before anything runs
        predicted(arch, args.cluster, args.seq, args.micro_batch, args.recompute)
    try:
        import torch
    except ImportError:
        raise ValueError("torch is not installed; pip install 'costmodel[validate]'") from None
    check_fits(arch, args, torch)
    row = measure(args, torch)
    arch = row.pop("_arch")
    cluster = args.cluster
    if cluster == "auto":
        gpu = gpu_preset_for(row["device"])
        cluster = cluster_for(gpu) if gpu is not None else None
    if cluster in (None, "none"):
        row.update(cluster=None, gpu_preset=None, predicted_compute_s=None)
        return row
    row.update(predicted(arch, cluster, args.seq, args.micro_batch, args.recompute))
    if "optimizer_s" in row:
        row.update(predicted_optimizer(arch.params, cluster))
        row["optimizer_ratio"] = row["optimizer_s"] / row["predicted_optimizer_s"]
    row["mfu"] = row["model_flops"] / (row["compute_s"] * row["peak_flops"])
    row["ratio"] = row["compute_s"] / row["predicted_compute_s"]
    row["in_band"] = row["band_low_s"] <= row["compute_s"] <= row["band_high_s"]
    return row


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.dry_run:
            print(dry_run(args))
            return 0
        row = run(args)
    except ValueError as exc:
        print(f"compute_bench: {exc}", file=sys.stderr)
        return 2
    print(summary(row))
    if args.output:
        from .runner import append_record

        append_record(args.output, row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
