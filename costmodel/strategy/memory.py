r"""Memory per GPU from the same :class:`~.layout.Layout` that prices the step.

The model state is :func:`costmodel.memory.training_memory` at the layout's ZeRO stage, sharded
over the ranks that shard it (all ranks; an hsdp group), plus what the strategy holds unsharded
while it communicates:

========= ==================================================================================
ddp       the bucket copy of every gradient (``gradient_as_bucket_view=False``, PyTorch's
          default), from two ranks up (one rank: plain training, below); none with
          ``gradient_as_bucket_view=True`` (the gradients are the buckets)
zero1/2   DeepSpeed's contiguous gradient ("ipg") buffers, allocated whole: two (double
          buffered, as ``overlap_comm`` allocates them; one with ``overlap=False``) of the
          reduce bucket's elements (``reduce_bucket_size``, 5e8 by default) in the weights'
          dtype, whatever the model's size and at any rank count, one rank included; the
          parameter all-gather holds nothing more: it writes in place into the flat weight
          buffer the weights part already counts
fsdp/hsdp the gathered units in flight: two neighbouring units' parameters (the one computing
          and the one prefetched) and their unsharded gradients awaiting the reduce-scatter;
          without resharding every unit stays gathered from forward to backward (``P x`` the
          gather dtype)
========= ==================================================================================

Memory says what the process holds. ``ddp`` on one rank is plain training, the lesson's one
GPU: nothing to reduce, so no DDP wrapper and no bucket copy (``16 P`` for mixed-precision Adam,
:func:`costmodel.memory.training_memory`); its step prices no all-reduce either. A one-process
job that wraps its model in DDP all the same holds ``2 P`` more in bf16 (PyTorch's reducer
allocates its buckets whatever the world size: :func:`_ddp_buckets_bytes`); ask for two ranks to
see it. ZeRO-1/2 and fsdp name a wrapper that is the training loop itself, so one rank holds
what it allocates there: DeepSpeed its ipg buffers in ``setup_buckets``
(:func:`_zero_buffers_bytes`), FSDP2 a copy of each unit in an unsharded buffer though it
gathers nothing (one unit at a time, no prefetched neighbour: :func:`_fsdp_one_rank_bytes`). An
hsdp group of one GPU is FSDP2 on a shard group of one, alike.

ZeRO's per-rank model state for mixed-precision Adam (``K = 12``) is ``16 P / N`` at stage 3,
``(2 + 2) P + 12 P / N`` at stage 1 and ``2 P + 14 P / N`` at stage 2 (Rajbhandari et al. 2020,
arXiv:1910.02054, figure 1). Activations come from ``training_memory``'s activation part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..units import format_bytes
from .layout import Layout, largest_pair_params


@dataclass(frozen=True)
class StrategyMemory:
    """Bytes one GPU holds under a layout [B]: the sharded state and the gathered buffers."""

    base: Any  # costmodel.memory.MemoryBreakdown (state sharded as the layout shards it)
    gathered_bytes: float  # unsharded units in flight (fsdp/hsdp) [B]
    buffers_bytes: float  # communication buckets (ddp bucket copy, zero buckets) [B]
    # (both as allocated; their fragmentation is in fragmentation_bytes, with the rest's)
    # the layout sized, named as Layout.identity names it: the plain strategy (hsdp) and the
    # layout's name (hsdp g=8, fsdp (no reshard)), as_dict's "strategy" and "layout"
    strategy: str
    layout_name: str
    # what the answer says beside its numbers (:func:`memory_notes`): how the activations were
    # sized, what data parallelism leaves out at this size, and for an architecture a sequence
    # past its trained context (only where the activations are sized at the sequence: given
    # activations_bytes are no sequence's)
    notes: tuple[str, ...] = ()
    # the overheads the total holds (strategy_memory's): what a tight fit's note names when 0
    cuda_context_bytes: float = 0.0
    fragmentation: float = 0.0

    def fit_notes(self, capacity_bytes: float) -> tuple[str, ...]:
        """:attr:`notes` beside a verdict on a card of ``capacity_bytes`` [B]: with
        :func:`headroom_note`'s after them where the total fits with little to spare
        (:func:`fit_notes`); what ``costmodel memory``, the Memory page and the step say."""
        return fit_notes(
            self.notes,
            self.total_bytes,
            capacity_bytes,
            self.cuda_context_bytes,
            self.fragmentation,
        )

    @property
    def buffer_fragmentation_bytes(self) -> float:
        """The fragmentation allowance on the buffers [B]: ``f (gathered + buckets)``, the
        share of ``fragmentation_bytes`` beyond the state's and the activations' (the
        allocator holds the buffers too: :func:`costmodel.memory.training_memory`'s
        allowance is ``f`` x everything it holds)."""
        return self.fragmentation * (self.gathered_bytes + self.buffers_bytes)

    @property
    def fragmentation_bytes(self) -> float:
        """The whole fragmentation allowance [B]: ``f`` x (state + activations + buffers)."""
        return float(self.base.fragmentation_bytes) + self.buffer_fragmentation_bytes

    @property
    def total_bytes(self) -> float:
        return (
            float(self.base.total_bytes)
            + self.gathered_bytes
            + self.buffers_bytes
            + self.buffer_fragmentation_bytes
        )

    @property
    def activations_bytes(self) -> float:
        return float(self.base.activations_bytes)

    def parts(self) -> dict[str, float]:
        """Every part [B] by name (the state parts, activations, buffers, gathered units)."""
        d = {k: float(v) for k, v in self.base.parts().items()}
        d.pop("ddp_buckets_bytes", None)
        d["fragmentation_bytes"] = self.fragmentation_bytes  # the buffers' share too
        d["buckets_bytes"] = self.buffers_bytes
        d["gathered_units_bytes"] = self.gathered_bytes
        return d

    def gb_columns(self) -> dict[str, float]:
        """The memory sweep's columns, which ``costmodel memory --json`` writes too [GB, 1e9 B]:
        each part of the sharded state and the activations (``weights_GB``, ...,
        ``fragmentation_GB``: of everything the allocator holds, the buffers included),
        ``buffers_GB`` (the buckets and the gathered units: what the layout holds while it
        communicates), ``lesson_memory_GB`` (the lesson's total, no buffers, nor their
        fragmentation) and ``memory_GB`` (the total, ``lesson_memory_GB + buffers_GB`` + the
        buffers' fragmentation)."""
        out = {
            f"{k.removesuffix('_bytes')}_GB": float(v) / _GB
            for k, v in self.base.parts().items()
            if k != "ddp_buckets_bytes"  # counted with the other buffers
        }
        out["fragmentation_GB"] = self.fragmentation_bytes / _GB
        out["buffers_GB"] = (self.gathered_bytes + self.buffers_bytes) / _GB
        out["lesson_memory_GB"] = float(self.base.total_bytes) / _GB
        out["memory_GB"] = self.total_bytes / _GB
        return out


#: Each part of :meth:`StrategyMemory.parts` in words, as `costmodel memory` lists them and the
#: Memory page's bar names them.
PART_LABELS: dict[str, str] = {
    "weights_bytes": "weights",
    "gradients_bytes": "gradients",
    "master_bytes": "fp32 master",
    "optimizer_bytes": "optimizer states",
    "activations_bytes": "activations",
    "cuda_context_bytes": "CUDA context",
    "fragmentation_bytes": "fragmentation",
    "buckets_bytes": "communication buckets",
    "gathered_units_bytes": "gathered units (FSDP)",
}

_GB = 1e9
"""GB of :meth:`StrategyMemory.gb_columns` (SI, as every ``_GB`` column of the sweeps)."""


def check_activation_inputs(
    shaped: Sequence[str], *, arch: bool, activations: bool, arch_hint: str
) -> None:
    """Refuse what sizes activations where nothing uses it, one rule for ``costmodel memory``
    and the memory sweep: ``shaped`` names the activation inputs given away from their
    defaults (sequence length, micro-batch, recomputation, loss, FlashAttention; each in its
    surface's spelling). A bare parameter count (``arch`` False) sizes the model state alone,
    so its memory has no activations (the step's memory of a bare count holds the model state alone too) and
    those inputs would be ignored; given ``activations`` replace the ones they size. ValueError
    naming the first such input; ``arch_hint`` says how to name an architecture
    (``--arch NAME``, ``arch=NAME``)."""
    if shaped and not arch:
        raise ValueError(
            f"{shaped[0]}: sizes activations, which need an architecture ({arch_hint}); a "
            "bare parameter count has none"
        )
    if shaped and activations:
        raise ValueError(
            f"{shaped[0]}: sizes activations, which the given activations replace; give one "
            "or the other"
        )


def memory_notes(
    activations_note: str, params: float, arch: Any = None, sequence_length: int | None = None
) -> list[str]:
    """What ``costmodel memory`` and a memory sweep row say beside the numbers: how the
    activations were sized (``activations_note``), then what a data-parallel answer leaves out
    for ``params`` parameters (tensor and pipeline parallelism from the 70B class:
    :func:`costmodel.training.scale_notes`) and for ``arch`` at ``sequence_length`` tokens
    (:func:`costmodel.architecture.architecture_notes`: a mixture of experts' expert
    parallelism, a sequence past the model's trained context). The CLI's JSON writes the list,
    a sweep row one text (:func:`costmodel.sweep.evaluate.join_notes`)."""
    from ..architecture import architecture_notes
    from ..training import scale_notes

    return [
        activations_note,
        *scale_notes(float(params)),
        *architecture_notes(arch, sequence_length),
    ]


def strategy_memory(
    layout: Layout,
    params: float | str | None = None,
    *,
    arch: Any = None,
    recipe: str = "mixed-adam",
    sequence_length: int = 4096,
    micro_batch: int = 1,
    flash_attention: bool = True,
    recompute: str = "none",
    activations_bytes: float | None = None,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
    loss: str = "fp32",
    overlap: bool = True,
) -> StrategyMemory:
    """Memory per GPU of ``layout`` [B] (module docstring): ``M = training_memory(P, stage,
    N_shard) + buffers + gathered``, e.g. ``16 P / N`` of model state under fsdp and
    ``4 P + 12 P / N`` under zero1 for mixed-precision Adam (Rajbhandari et al. 2020,
    arXiv:1910.02054, figure 1). ``loss``: how the loss is computed,
    which sizes its logits (:func:`costmodel.architecture.loss_logits_bytes`). ``params`` a
    count, or an architecture name read as ``arch`` (``strategy_memory(lay, "llama-3.1-8b")``,
    as :func:`~.step.strategy_step` reads it); a count beside ``arch`` must be its count.
    ``overlap``: the step's (:func:`~.step.strategy_step`, default True: gradient
    reductions overlapped with backward, which DeepSpeed runs with ``overlap_comm`` and its
    second ipg buffer); False sizes zero1/zero2 with one buffer (:func:`_zero_buffers_bytes`),
    and fsdp/hsdp with every unit's unsharded gradient held until the backward ends (their
    reduce-scatters wait for it), not only the gathered pair's.

    >>> m = strategy_memory(Layout(strategy="fsdp", ranks=64), 7e9)
    >>> round(float(m.base.model_state_bytes) / 1e9, 3)             # 16 P / N
    1.75
    >>> m = strategy_memory(Layout(strategy="zero1", ranks=8), 1e9)
    >>> round(float(m.base.model_state_bytes) / 1e9, 2)             # 4 P + 12 P / N
    5.5
    """
    from .._checks import flag

    flash_attention = flag("flash_attention", flash_attention)
    overlap = flag("overlap", overlap)
    if not isinstance(overlap, bool):  # an array of flags: one layout, one answer
        raise ValueError(f"overlap: one True or False per call, got {overlap!r}")
    from ..architecture import Architecture

    if isinstance(params, Architecture) or (isinstance(params, str) and not _numeric_text(params)):
        # a name, as strategy_step("llama-3.1-8b") and training_memory read it ("7e9" stays
        # a count)
        from ..architecture import arch_of_params_text

        named = arch_of_params_text(params)  # "7B": refused naming the number it means
        params, arch = (None, params) if arch is None else (float(named.params), arch)
    plain = (
        params,
        recipe,
        sequence_length,
        micro_batch,
        recompute,
        activations_bytes,
        cuda_context_bytes,
        fragmentation,
        loss,
        overlap,
    )
    if not (isinstance(layout, Layout) and all([isinstance(v, _SCALARS) for v in plain])):
        return _strategy_memory(layout, params, arch, flash_attention, plain)
    # the values and their types (1, 1.0 and True are not one key)
    who = arch if isinstance(arch, str) else id(arch)
    key: tuple[Any, ...] = (layout, who, flash_attention, plain, tuple(map(type, plain)))
    hit = _KEPT.get(key)
    if hit is not None and (isinstance(arch, str) or hit[0] is arch):
        return hit[1]
    m = _strategy_memory(layout, params, arch, flash_attention, plain)
    if len(_KEPT) >= _BASE_KEPT:
        _KEPT.clear()
    _KEPT[key] = (arch, m)
    return m


_KEPT: dict[tuple[Any, ...], tuple[Any, StrategyMemory]] = {}


def _numeric_text(text: str) -> bool:
    """Whether ``text`` is a number ``float`` reads (``"7e9"``), not a name."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _one_number(name: str, value: object) -> Any:
    """``value`` as a float when it is one real number; an array as it is (the caller refuses
    it); else ValueError naming ``name`` (the range is checked by ``training_memory``)."""
    if value is None or isinstance(value, bool | np.bool_ | dict):  # None read as NaN
        raise ValueError(f"{name}: expected a number, got {value!r}")
    try:
        x = np.asarray(value if not isinstance(value, str) else float(value), dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if x.ndim:
        raise ValueError(
            f"{name}: one number per call (strategy_memory is per layout), got {value!r}"
        )
    return float(x)


def check_overheads(cuda_context_bytes: Any = 0.0, fragmentation: Any = 0.0) -> tuple[float, float]:
    """The CUDA context [B] and the fragmentation allowance [-] of one layout's memory, checked
    as :func:`strategy_memory` checks them: one number each (:func:`_one_number`), in
    :func:`costmodel.memory.training_memory`'s ranges (:func:`costmodel.memory.check_overheads`:
    a context finite and >= 0 B, an allowance in [0, 1)); ValueError naming the field. The step
    (:func:`~.step.strategy_step`, so the advisor and the step sweep), ``Scenario`` and the
    step page check them here before any step is priced.

    >>> check_overheads(2**31, 0.05)
    (2147483648.0, 0.05)
    >>> check_overheads(0.0, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: fragmentation: must be a fraction in [0, 1), got 1.0
    """
    from .. import memory as M

    for name, value in (
        ("cuda_context_bytes", cuda_context_bytes),
        ("fragmentation", fragmentation),
    ):
        _one_number(name, value)
    ctx, frag = M.check_overheads(cuda_context_bytes, fragmentation)
    return float(ctx), float(frag)


def overheads_text(cuda_context_bytes: float, fragmentation: float) -> str:
    """The overheads a memory total includes, in words, for the text beside it (``costmodel
    step``, ``scenario``, ``train``, the step page): empty when there are none.

    >>> overheads_text(2**31, 0.05)
    'incl. CUDA context 2.15 GB and fragmentation 0.05'
    >>> overheads_text(0.0, 0.0)
    ''
    """
    said = [
        *([f"CUDA context {format_bytes(cuda_context_bytes)}"] if cuda_context_bytes else []),
        *([f"fragmentation {fragmentation:g}"] if fragmentation else []),
    ]
    return "incl. " + " and ".join(said) if said else ""


#: Below this spare share of the card (``(capacity - total) / capacity``) a memory that fits
#: says what its total leaves out (:func:`headroom_note`): a rule of this tool, not a measured
#: figure. What it stands for is measured: the CUDA context alone takes some 0.5-1 GB per GPU
#: (it depends on the driver, the CUDA version and the GPU; PyTorch's "CUDA semantics" notes,
#: memory management: the caching allocator's counters, ``torch.cuda.memory_allocated`` and
#: ``memory_reserved``, leave it out, and ``nvidia-smi`` shows it), and the caching allocator
#: holds more than it hands out (blocks split and cached: the same notes' fragmentation and
#: ``expandable_segments``), which 5 % of an 80-192 GB card (4-10 GB) covers. Measured on one
#: H200 (docs/gpu-checks.md, "Memory the device holds beyond the model"): the context 0.80 GB,
#: the allocator's reserve 0.8-6.1 GB above its peak allocated, together 1.1-4.6 % of the card.
TIGHT_FIT_HEADROOM = 0.05

#: How :func:`headroom_note`'s note starts (a ranking of several layouts leaves each one's out).
HEADROOM_NOTE_START = "fits with "


def headroom_note(
    total_bytes: float,
    capacity_bytes: float,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
) -> str | None:
    """What a verdict of "fits" with little room to spare leaves out: None when the total does
    not fit, when it leaves at least :data:`TIGHT_FIT_HEADROOM` of the card free, or when both
    overheads are set already; else the note, naming the overheads left at 0 (the verdict
    itself is unchanged). Every surface says it through :func:`fit_notes`.

    >>> headroom_note(150.5e9, 150.8e9)[:35]
    'fits with 0.2% headroom (under 5%):'
    >>> headroom_note(70e9, 80e9) is None, headroom_note(81e9, 80e9) is None
    (True, True)
    >>> headroom_note(79e9, 80e9, 1e9, 0.05) is None
    True
    """
    total, cap = float(total_bytes), float(capacity_bytes)
    if not (cap > 0.0 and total <= cap):
        return None
    spare = (cap - total) / cap
    if spare >= TIGHT_FIT_HEADROOM:
        return None
    left = [
        *(
            ["the CUDA context (~0.5-1 GB per GPU, `cuda_context_bytes`)"]
            if not cuda_context_bytes
            else []
        ),
        *(
            ["the allocator's fragmentation (`fragmentation`, a fraction of what it holds)"]
            if not fragmentation
            else []
        ),
    ]
    if not left:
        return None
    what = " and ".join(left)
    verb = "are" if len(left) > 1 else "is"
    return (
        f"{HEADROOM_NOTE_START}{spare * 100:.1f}% headroom (under {TIGHT_FIT_HEADROOM:.0%}): {what} "
        f"{verb} not counted; set {'them' if len(left) > 1 else 'it'} to check"
    )


def fit_notes(
    notes: Sequence[str],
    total_bytes: float,
    capacity_bytes: float,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
) -> tuple[str, ...]:
    """A memory answer's ``notes`` beside its verdict on a card of ``capacity_bytes`` [B]:
    ``notes``, then :func:`headroom_note`'s where ``total_bytes`` fits with under
    :data:`TIGHT_FIT_HEADROOM` to spare and an overhead is left at 0. The one place the note is
    added: :meth:`StrategyMemory.fit_notes` (``costmodel memory``, the Memory page), the step's
    notes (:class:`~.step.StrategyStep`: ``costmodel step``, ``scenario``, ``train``, the step
    page, ``Scenario``, the step sweep) and the memory sweep's ``notes`` column.

    >>> fit_notes(["a"], 79.5e9, 80e9, 1e9)[1][:35]
    'fits with 0.6% headroom (under 5%):'
    >>> fit_notes(["a"], 60e9, 80e9)
    ('a',)
    """
    tight = headroom_note(total_bytes, capacity_bytes, cuda_context_bytes, fragmentation)
    return (*notes, *([tight] if tight else []))


def _strategy_memory(
    layout: Layout,
    params: float | str | None,
    arch: Any,
    flash_attention: bool,
    plain: tuple[Any, ...],
) -> StrategyMemory:
    """:func:`strategy_memory` of checked arguments (``plain``: its other arguments in order),
    kept there per setting when they are plain values, the layout and one architecture
    (every table of the advisor asks for the same layouts)."""
    from .. import memory as M
    from .._checks import said

    if not isinstance(layout, Layout):  # a count or a strategy name in its place: say where
        raise ValueError(
            f"layout: expected a `cm.Layout` (e.g. cm.Layout(strategy='fsdp', ranks=8)), got "
            f"{said(layout)}; the parameter count is `params` and the architecture `arch` "
            "(strategy_memory(layout, params) or strategy_memory(layout, arch=...))"
        )
    (
        _,
        recipe,
        sequence_length,
        micro_batch,
        recompute,
        activations_bytes,
        cuda_context_bytes,
        fragmentation,
        loss,
        overlap,
    ) = plain
    lay = layout
    # one layout, one number each: an array (or a list, a dict) raised float()'s TypeError or
    # gave a result whose total_bytes failed (training_memory takes the arrays)
    for name, value in (
        ("activations_bytes", activations_bytes),
        ("cuda_context_bytes", cuda_context_bytes),
        ("fragmentation", fragmentation),
    ):
        if value is not None or name != "activations_bytes":  # None: the architecture's
            _one_number(name, value)
    if arch is not None:
        from ..architecture import load_arch, params_differ

        a = load_arch(arch)
        p = float(a.params)
        if params is not None and _one_number("params", params) != p:
            # as strategy_step, training_memory and Scenario refuse it (the count was dropped)
            raise ValueError(params_differ(params, a))
    elif params is None:
        raise ValueError("params: give a parameter count or `arch` (an architecture name)")
    else:
        p = _one_number("params", params)
    kw: dict[str, Any] = {
        "recipe": recipe,
        "zero_stage": lay.zero_stage,
        "dp_ranks": lay.shard_group,
        "activations_bytes": activations_bytes,
        "ddp_bucket_copy": False,
        "cuda_context_bytes": cuda_context_bytes,
        "fragmentation": fragmentation,
        "arch": arch,
        "sequence_length": sequence_length,
        "micro_batch": micro_batch,
        "flash_attention": flash_attention,
        "recompute": recompute,
        "loss": loss,
    }
    base = _training_memory(None if arch is not None else p, kw)
    r = M.get_recipe(recipe)
    grad_b = lay.grad_bytes(r.gradient_bytes)
    gathered = buffers = 0.0
    if lay.strategy in ("zero1", "zero2"):
        # at any rank count, one included: DeepSpeed allocates the ipg buffers whatever the
        # world size (_zero_buffers_bytes); the bucket's elements are the cap over the
        # gradient dtype's bytes (the step cuts its reduce-scatters at cap bytes of them)
        elements = lay.bucket_cap(grad_b) / grad_b
        buffers = _zero_buffers_bytes(elements, r.weight_bytes, overlap)
    elif lay.strategy == "ddp":
        # from two ranks up; one rank is plain training, no DDP wrapper (module docstring)
        # gradient_as_bucket_view: the gradients are views into the buckets, no copy
        buffers = _ddp_buckets_bytes(p, grad_b) if lay.ranks > 1 and not lay.bucket_view else 0.0
    elif lay.shard_group == 1:
        # fsdp on one rank, an hsdp group of one GPU: FSDP2 all-gathers nothing but still
        # copies each unit into its unsharded buffer and its gradients into the reduce buffer
        # (_fsdp_one_rank_bytes)
        gathered = _fsdp_one_rank_bytes(
            _largest_unit(p, arch), _largest_pair(p, arch), p, lay, grad_b
        )
    else:
        pair = _largest_pair(p, arch)
        gathered = (pair if lay.reshards else p) * lay.param_bytes + pair * grad_b
    if lay.strategy in ("fsdp", "hsdp") and not overlap:
        # the reduce-scatters wait for the whole backward (the step's overlap=False): every
        # unit's unsharded gradient is held until then, not only the pair's in flight
        gathered += max(0.0, p - _largest_pair(p, arch)) * grad_b
    seq = sequence_length if activations_bytes is None else None
    notes = tuple(memory_notes(base.activations_note, p, arch, seq))
    return StrategyMemory(
        base,
        gathered,  # as allocated: their fragmentation is StrategyMemory.fragmentation_bytes
        buffers,
        lay.strategy,
        lay.name,
        notes,
        float(cuda_context_bytes),
        float(fragmentation),
    )


def _ddp_buckets_bytes(params: float, grad_bytes: float) -> float:
    r"""DDP's bucket copy of the gradients [B]: ``B = P g``, every gradient once more in the
    reduction dtype ``g`` (the layout's ``grad_dtype``, else the recipe's), whatever the rank
    count of a DDP-wrapped process (the ddp layout counts it from two ranks up: one rank is
    plain training, the module docstring).

    From PyTorch's source (pytorch/pytorch, v2.13.0): ``DistributedDataParallel.__init__``
    (torch/nn/parallel/distributed.py) builds its ``Reducer`` through ``_ddp_init_helper``
    with no test of the world size, and ``Reducer::initialize_buckets``
    (torch/csrc/distributed/c10d/reducer.cpp) allocates each bucket's flat ``gradients``
    tensor (``at::empty({bucketSize}, options)``, "Allocate the bucket's flattened `gradients`
    tensor") whatever the world size: its buckets together hold every parameter's gradient.
    With ``gradient_as_bucket_view=False`` (PyTorch's default) each ``param.grad`` is a tensor
    of its own and the bucket a copy of it; ``gradient_as_bucket_view=True`` makes the grads
    views into the buckets, which removes the copy: the ddp layout's
    ``gradient_as_bucket_view=True`` holds none (:func:`strategy_memory`). PyTorch's docs of the
    argument (``torch.nn.parallel.DistributedDataParallel``,
    pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html; the
    argument since PyTorch 1.7, its text the same in the 2.x docstring of
    torch/nn/parallel/distributed.py): "When set to ``True``, gradients will be views pointing
    to different offsets of ``allreduce`` communication buckets. This can reduce peak memory
    usage, where the saved memory size will be equal to the total gradients size." So the
    saving is ``B`` itself. Measured on PyTorch 2.13 (CPU, gloo, world size 1): an 8 x
    ``Linear(1024, 1024)`` model's ``_get_ddp_logging_data()["bucket_sizes"]`` sum to
    33,587,200 B, its 8,396,800 fp32 gradients' bytes (tests/test_qa_pass46.py checks it).
    So a DDP-wrapped process holds the copy on one rank too; the ``ddp`` layout on one rank is
    the lesson's ``16 P`` (:func:`costmodel.memory.training_memory`), a process without DDP.

    >>> _ddp_buckets_bytes(7e9, 2.0) / 1e9
    14.0
    """
    return float(params) * float(grad_bytes)


def _fsdp_one_rank_bytes(
    unit: float, pair: float, params: float, layout: Layout, grad_bytes: float
) -> float:
    r"""What fsdp on one rank (and an hsdp group of one GPU) holds beside its whole state [B]:
    ``U w + U_2 g`` with
    resharding, ``P w + U_2 g`` without (``U`` the largest unit's parameters, ``U_2`` the
    largest two neighbouring units', ``w`` the gather dtype's bytes, ``g`` the gradient
    dtype's); more ranks hold ``U_2 w + U_2 g`` (the prefetched neighbour too).

    From PyTorch's source (v2.13.0), FSDP2's ``fully_shard``
    (torch/distributed/fsdp/_fully_shard/): with a world size of 1,
    ``FSDPParamGroup.unshard`` (_fsdp_param_group.py) runs no all-gather and allocates
    nothing, so a prefetch holds nothing ahead; ``wait_for_unshard`` then allocates each
    parameter's unsharded buffer (``init_all_gather_outputs``, ``alloc_storage``) and copies
    the sharded parameter into it (``tensor.copy_(all_gather_input)``), and ``reshard``
    frees it after the unit's forward (and backward); ``foreach_reduce``
    (_fsdp_collectives.py) copies the unit's gradients into ``reduce_scatter_input`` and
    that into ``reduce_output`` ("For single GPU, just copy the input to output"; hsdp then
    all-reduces ``reduce_output`` across its replicas), overlapping the next unit's backward
    as with more ranks. The world size tested is the all-gather group's, the shard group. So the gathered parameters are one unit's,
    not two; the gradients in flight are counted as on more ranks. FSDP1
    (``FullyShardedDataParallel``) switches to ``NO_SHARD`` on one rank
    (_init_utils.py: "FSDP is switching to use `NO_SHARD` ... since the world size is 1") and
    holds no gathered copy; the fsdp step is FSDP2's (costmodel/strategy/fsdp.py).

    >>> from .layout import Layout
    >>> _fsdp_one_rank_bytes(2e8, 5e8, 8e9, Layout(strategy="fsdp", ranks=1), 4.0) / 1e9
    2.4
    """
    gathered_params = unit if layout.reshards else float(params)
    return gathered_params * layout.param_bytes + pair * float(grad_bytes)


def _zero_buffers_bytes(bucket_elements: float, weight_bytes: float, overlap: bool = True) -> float:
    r"""What ZeRO-1/2 hold beside the sharded state while they communicate [B]: the contiguous
    gradient ("ipg") buffers, ``B = k E w``: ``E`` the reduce bucket's elements
    (``reduce_bucket_size``, 5e8 by default: ``bucket_cap / g`` for a cap given in bytes of
    the gradient dtype ``g``), ``w`` the weights' bytes per element (the recipe's
    ``weight_bytes``: DeepSpeed's ``self.dtype``, not the gradient dtype), ``k = 2`` with
    ``overlap`` (the step's default) and 1 without; whatever the parameter count and the rank
    count, and no parameter bucket.

    From DeepSpeed's source (deepspeedai/DeepSpeed, master of 2026-08-22,
    deepspeed/runtime/zero/stage_1_and_2.py unless named):

    - ``DeepSpeedZeroOptimizer.setup_buckets`` (line 2493), with ``contiguous_gradients``
      (its default, True: deepspeed/runtime/zero/config.py line 102), allocates
      ``buf_0 = torch.empty(int(self.reduce_bucket_size), dtype=self.dtype, ...)`` (lines
      2502-2504) per communication dtype before the gradients arrive: the whole
      ``reduce_bucket_size`` (config.py line 113, ``pp_int(5e8)``, "Number of elements"),
      not the model's gradients, so a model smaller than the bucket still holds all of it;
    - its dtype is ``self.dtype = self.optimizer.param_groups[0]['params'][0].dtype``
      (``__init__``, line 354): the weights' dtype ("Buffer's dtype is the same as the dtype
      of optimizer, not dtype for autocast", line 2501), so gradients reduced in fp32 beside
      bf16 weights still pass through a bf16 buffer;
    - with ``overlap_comm`` it allocates a second one, ``buf_1``, alike (lines 2508-2514:
      "Use double buffers to avoid data access conflict when overlap_comm is enabled"), and
      ``reduce_independent_p_g_buckets_and_remove_grads`` swaps between them (line 1206).
      Nothing else ``overlap_comm`` switches allocates memory: the ``reduction_stream`` is
      created whatever it is (line 531, a stream, no tensor), and ``grads_in_partition``
      (``copy_grads_in_partition``, line 1678) is the rank's gradient partition, allocated
      with ``contiguous_gradients`` with or without overlap, which the state's gradients part
      counts. The step overlaps the reduce-scatters with backward by default, which DeepSpeed
      does only with ``overlap_comm`` (``process_gradients``, line 1764, reduces from the
      backward hooks only under ``partition_gradients or overlap_comm``; its default is False
      below stage 3, config.py ``overlap_comm_valid``, lines 383-385): so memory counts two
      buffers where the step overlaps and one where it does not (``overlap=False``), one
      configuration for both;
    - the buffers are allocated on the first gradient of each backward whatever the
      data-parallel world size (``process_gradients`` calls ``setup_buckets``, line 1761;
      ``_release_ipg_buffers``, line 828, frees them after it): one rank holds them too;
    - after the optimizer step each rank copies its fp32 partition into its slice of the flat
      weight buffer (``step``: ``bit16_partitions[partition_id].data.copy_(...)``), and
      ``all_gather_dp_groups`` (deepspeed/runtime/utils.py) gathers into that same buffer,
      ``bit16_groups_flat`` (``all_gather_into_tensor``: the output is the flat buffer
      itself; :func:`costmodel.strategy.zero.gather_bytes`). It allocates nothing.

    So the gathered weights are the weights part of the state (replicated at stages 1 and 2,
    ``P w``), zero1 never holds more than zero2's state plus the same buffers, and ZeRO-1
    holds more than DDP when the optimizer state it shards saves less than the buffers cost
    beyond DDP's bucket copy (a model of fewer than about 2e8 parameters under
    mixed-precision Adam at DeepSpeed's default bucket, 2 GB of bf16 buffers), as DeepSpeed
    does.

    >>> _zero_buffers_bytes(5e8, 2.0), _zero_buffers_bytes(5e8, 2.0, overlap=False)
    (2000000000.0, 1000000000.0)
    """
    return (2.0 if overlap else 1.0) * float(bucket_elements) * float(weight_bytes)


def stage_memory(
    zero_stage: int,
    ranks: int,
    params: float | None = None,
    *,
    strategy: str | None = None,
    group_size: int | None = None,
    reshard_after_forward: bool | None = None,
    gpus_per_node: int | None = None,
    gradient_as_bucket_view: bool | None = None,
    param_dtype: str | None = None,
    grad_dtype: str | None = None,
    bucket_cap_bytes: int | None = None,
    **kw: Any,
) -> StrategyMemory:
    """Memory per GPU under a bare ZeRO stage on ``ranks`` data-parallel ranks [B]: the
    :class:`~.layout.Layout` the step prices for that stage
    (:data:`~.layout.STRATEGY_OF_STAGE`: 0 ddp, 1 zero1, 2 zero2, 3 fsdp), so ``costmodel
    memory``, the Memory page, the memory sweep and ``costmodel step`` size one configuration.
    ``kw`` as for :func:`strategy_memory`.

    ``strategy`` names the layout where the stage alone does not (``"hsdp"``: ZeRO-3 inside a
    sharding group of ``group_size`` ranks, default one node of ``gpus_per_node`` GPUs, the
    Layout's own default where None); it must be a strategy of ``zero_stage``
    (:data:`~.layout.ZERO_STAGE`). ``reshard_after_forward`` is fsdp/hsdp's (default True),
    ``gradient_as_bucket_view`` ddp's (default False: it holds the bucket copy).
    ``param_dtype`` (the gathered units' dtype, default bf16), ``grad_dtype`` (the reduced
    gradients' dtype: DDP's bucket copy, the gathered units' gradients and the bytes a ZeRO
    bucket cap counts elements in; default the recipe's) and ``bucket_cap_bytes`` (ddp/zero1/
    zero2's bucket [B], default the strategy's own) are the step's too.
    These are the :class:`~.layout.Layout` fields ``costmodel step --strategy`` sets, so
    ``costmodel memory --strategy hsdp --group-size 8`` and the step size one layout.

    >>> round(stage_memory(0, 8, 7e9).total_bytes / 1e9)        # 16 B x 7B + the bucket copy
    126
    >>> round(stage_memory(0, 8, 7e9).buffers_bytes / 1e9)      # + DDP's bf16 bucket copy
    14
    >>> stage_memory(0, 8, 7e9, gradient_as_bucket_view=True).buffers_bytes  # grads are buckets
    0.0
    >>> m = stage_memory(3, 64, 7e9, strategy="hsdp", group_size=8)
    >>> m.strategy, m.layout_name, round(float(m.base.model_state_bytes) / 1e9)  # 16 P / 8
    ('hsdp', 'hsdp g=8', 14)
    >>> round(stage_memory(0, 8, 7e9, grad_dtype="fp32").buffers_bytes / 1e9)  # 4 B x 7B
    28
    """
    from .layout import STRATEGY_OF_STAGE, ZERO_STAGE, unknown_strategy

    if zero_stage not in STRATEGY_OF_STAGE:
        raise ValueError(f"zero_stage: must be one of 0, 1, 2, 3, got {zero_stage!r}")
    from ..memory import _ranks_limit

    limit = _ranks_limit()  # the CLI's --ranks range and message
    if isinstance(ranks, bool) or not limit.lo <= ranks <= limit.hi or int(ranks) != ranks:
        raise ValueError(f"dp_ranks: must be {limit.rule}, got {ranks!r}")
    name = STRATEGY_OF_STAGE[zero_stage]
    if strategy is not None:
        name = str(strategy).lower()
        if name not in ZERO_STAGE:
            raise ValueError(unknown_strategy(strategy))
        if ZERO_STAGE[name] != zero_stage:
            raise ValueError(
                f"strategy: {name} is ZeRO-{ZERO_STAGE[name]}, not zero_stage {zero_stage}; "
                "give one of them, or both alike"
            )
    from .layout import make_layout

    fields: dict[str, Any] = dict(strategy=name, ranks=int(ranks))
    for key, value in (
        ("group_size", group_size),
        ("reshard_after_forward", reshard_after_forward),
        ("gpus_per_node", gpus_per_node),
        ("gradient_as_bucket_view", gradient_as_bucket_view),
        ("param_dtype", param_dtype),
        ("grad_dtype", grad_dtype),
        ("bucket_cap_bytes", bucket_cap_bytes),
    ):
        if value is not None:  # unset: the Layout's own default, as the step's
            fields[key] = value
    return strategy_memory(make_layout(**fields), params, **kw)


def memory_layout(
    strategy: str,
    ranks: int,
    *,
    group_size: int | None = None,
    reshard_after_forward: bool | None = None,
    gpus_per_node: int | None = None,
    gradient_as_bucket_view: bool | None = None,
    param_dtype: str | None = None,
    grad_dtype: str | None = None,
    bucket_cap_bytes: int | None = None,
    names: tuple[str, str] = ("group_size", "cluster"),
) -> dict[str, Any]:
    """The layout keywords of :func:`stage_memory` for ``strategy`` on ``ranks`` ranks: the one
    rule of ``costmodel memory --strategy``, the memory sweep's ``strategy`` axis and the Memory
    page. ``gpus_per_node`` is the cluster's node (given with a preset): hsdp's default group is
    one node, as the step's. Without one, hsdp needs ``group_size`` (ValueError naming
    ``names``: the surface's spellings of the group and the cluster), and the group stands for
    the node (any group that divides the ranks; one that does not is refused by the
    :class:`~.layout.Layout`, listing the divisors). ``param_dtype``, ``grad_dtype`` and
    ``bucket_cap_bytes`` are the step's (``costmodel step --param-dtype``, ``--grad-dtype``,
    ``--bucket``); each is in the keywords only where given (None: the Layout's default). The
    layout is checked here (:func:`~.layout.make_layout`), so a bad group, dtype or bucket is
    refused before anything is sized.

    >>> memory_layout("hsdp", 64, group_size=8)["gpus_per_node"]
    8
    >>> memory_layout("zero1", 64)
    {'strategy': 'zero1', 'group_size': None, 'reshard_after_forward': None, 'gpus_per_node': None, 'gradient_as_bucket_view': None}
    """
    from .layout import make_layout

    group, cluster = names
    gpn = gpus_per_node
    if gpn is None and strategy == "hsdp":
        if group_size is None:
            raise ValueError(
                f"{group}: hsdp without {cluster} needs the GPUs sharding one replica "
                f"(e.g. {group} 8); with {cluster} the default is one node"
                if group.startswith("--")
                else f"{group}: hsdp without {cluster} needs the GPUs sharding one replica "
                f"(e.g. {group}=8); with {cluster} the default is one node"
            )
        # no node to span: any group that divides the ranks (a group that does not is
        # refused by the Layout, listing the divisors of the ranks)
        gpn = group_size if ranks % group_size == 0 else min(ranks, 4096)
    out: dict[str, Any] = dict(
        strategy=strategy,
        group_size=group_size,
        reshard_after_forward=reshard_after_forward,
        gpus_per_node=gpn,
        gradient_as_bucket_view=gradient_as_bucket_view,
    )
    for key, value in (
        ("param_dtype", param_dtype),
        ("grad_dtype", grad_dtype),
        ("bucket_cap_bytes", bucket_cap_bytes),
    ):
        if value is not None:  # the step's options, only where given
            out[key] = value
    try:
        make_layout(ranks=int(ranks), **{k: v for k, v in out.items() if v is not None})
    except ValueError as exc:
        if strategy != "hsdp" or group_size is not None or "does not divide" not in str(exc):
            raise
        # the default group (one node) refused: named as the default, not as a group typed
        # (`memory --ranks 12 --cluster dgx-h100 --strategy hsdp` said "--group-size: 8 does
        # not divide the 12 ranks", of an option not given)
        said = str(exc).removeprefix("group_size: ")
        raise ValueError(
            f"{group}: the default, one node's {gpn} GPUs, {said.split(' ', 1)[1]}; give {group}"
        ) from None
    return out


def hsdp_ranks_note(group: int, group_name: str = "`group_size`") -> str:
    """Why hsdp has no fewest ranks that fit: its state is sharded over its group of ``group``
    GPUs, not over the ranks, so more ranks (replicas) do not lower the memory per GPU; a larger
    group (``group_name``, the surface's spelling) does. ``costmodel memory``'s and the Memory
    page's words."""
    return (
        f"hsdp shards the state over its group of {group} GPUs, not over the ranks: more "
        f"ranks (replicas) do not lower the memory per GPU; a larger {group_name} does"
    )


def stage_buffers_bytes(
    zero_stage: int, ranks: Any, params: Any, recipe: str = "mixed-adam", **layout: Any
) -> Any:
    """What :func:`stage_memory` adds to the lesson's state for bare parameter counts [B],
    elementwise over arrays of ``ranks`` and ``params`` (the memory sweep's rows): the buckets
    and gathered units, which depend on the count and not on the rank count above one rank, so
    each distinct count is sized once for one rank and once above one (by :func:`stage_memory`
    itself: ZeRO-1/2's ipg buffers are the same on one rank, ddp holds no bucket copy there
    (plain training) and fsdp one gathered unit less, :func:`_fsdp_one_rank_bytes`). ``layout``: :func:`stage_memory`'s layout keywords
    (``strategy``, ``group_size``, ``reshard_after_forward``, ``gpus_per_node``,
    ``gradient_as_bucket_view``), valid at
    every rank count of ``ranks`` (:func:`memory_layout`).

    >>> [round(b / 1e9) for b in stage_buffers_bytes(0, [1, 8], [7e9, 7e9])]
    [0, 14]
    >>> [round(b / 1e9) for b in stage_buffers_bytes(1, [1, 8], [7e9, 7e9])]
    [2, 2]
    """
    import numpy as np

    p = np.asarray(params, dtype=float)
    n = np.asarray(ranks)
    p, n = np.broadcast_arrays(p, n)
    one = n == 1
    out = np.zeros(p.shape)

    def extra(at: int, v: float) -> float:
        m = stage_memory(zero_stage, at, v, recipe=recipe, **layout)
        return float(m.gathered_bytes + m.buffers_bytes)

    # one rank, then any rank count above one (the buffers do not depend on which)
    for mask in (one, ~one):
        if not mask.any():
            continue
        at = int(n[mask].ravel()[0])
        values, index = np.unique(p[mask], return_inverse=True)
        out[mask] = np.array([extra(at, float(v)) for v in values], dtype=float)[index.ravel()]
    return out


def stage_max_params(capacity_bytes: float, zero_stage: int, ranks: int, **kw: Any) -> float:
    """Largest bare parameter count whose :func:`stage_memory` fits in ``capacity_bytes`` [-].

    The state is affine in ``P`` and the buffers grow with ``P`` (piecewise linearly: the
    buckets stop at their cap, the gathered pair follows the wrap units), so the total is
    monotone in ``P``: bisection on ``log P`` to a relative 1e-9, then on whole counts, so the
    answer is a whole parameter count (a float with no fraction; past 2**53 every float is
    whole); 0 when not even one parameter fits. ``kw`` as for :func:`strategy_memory` (no
    ``arch``: the count is the unknown).

    >>> stage_max_params(80e9, 0, 1) / 1e9                      # one rank: 80 GB / 16 B
    5.0
    >>> round(stage_max_params(80e9, 0, 8) / 1e9, 6)            # ddp: 80 GB / (16 + 2) B
    4.444444
    >>> stage_max_params(20.0, 0, 1)                            # 16 B a parameter: one, not 1.25
    1.0
    """

    def total(p: float) -> float:
        return float(stage_memory(zero_stage, ranks, p, **kw).total_bytes)

    base = stage_memory(zero_stage, ranks, 1.0, **kw).base
    per_param = float(base.total_bytes) - float(
        stage_memory(zero_stage, ranks, 0.0, **kw).total_bytes
    )
    return largest_count_that_fits(total, capacity_bytes, per_param)


def layout_max_params(capacity_bytes: float, layout: Layout, **kw: Any) -> float:
    """Largest bare parameter count whose :func:`strategy_memory` of ``layout`` fits in
    ``capacity_bytes`` [-]: :func:`stage_max_params` for a whole :class:`~.layout.Layout`
    (its dtypes and bucket caps too), the figure ``Scenario.evaluate`` reports as
    ``max_params``. ``kw`` as for :func:`strategy_memory` (no ``arch``).

    >>> from .layout import Layout
    >>> round(layout_max_params(80e9, Layout(strategy="ddp", ranks=8)) / 1e9, 6)  # 80 GB / 18 B
    4.444444
    """

    def total(p: float) -> float:
        return float(strategy_memory(layout, p, **kw).total_bytes)

    base = strategy_memory(layout, 1.0, **kw).base
    per_param = float(base.total_bytes) - float(strategy_memory(layout, 0.0, **kw).total_bytes)
    return largest_count_that_fits(total, capacity_bytes, per_param)


def largest_count_that_fits(
    total: Callable[[float], float], capacity_bytes: float, per_param_bytes: float
) -> float:
    """Largest whole ``P >= 0`` with ``total(P) <= capacity_bytes`` [-], for a ``total``
    monotone in ``P`` whose model state alone costs ``per_param_bytes`` a parameter (so
    ``capacity / per_param`` bounds the answer): bisection on ``log P`` to a relative 1e-9,
    then on whole counts; 0 when not even one parameter fits.

    >>> largest_count_that_fits(lambda p: 16.0 * p + 4.0, 100.0, 16.0)   # (100 - 4) / 16
    6.0
    """
    import math

    cap = float(capacity_bytes)
    if total(0.0) > cap:
        return 0.0
    hi = max(1.0, cap / max(per_param_bytes, 1e-30))  # the state alone: an upper bound
    if total(math.floor(hi)) <= cap:
        return float(math.floor(hi))
    lo = 0.0
    if total(1.0) <= cap:
        lo = 1.0
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            if total(mid) <= cap:
                lo = mid
            else:
                hi = mid
            if hi / lo - 1.0 < 1e-9:
                break
    # whole counts: floor(lo) fits and ceil(hi) does not (the total is monotone)
    lo_n, hi_n = math.floor(lo), math.ceil(hi)
    while hi_n - lo_n > 1:
        mid_n = (lo_n + hi_n) // 2
        if total(float(mid_n)) <= cap:
            lo_n = mid_n
        else:
            hi_n = mid_n
    return float(lo_n)


def stage_min_ranks(
    params: float | None,
    capacity_bytes: float,
    zero_stage: int,
    *,
    max_ranks: int | None = None,
    **kw: Any,
) -> int:
    """Fewest data-parallel ranks whose :func:`stage_memory` fits in ``capacity_bytes`` [-].

    The buffers do not depend on the rank count (above one rank) and the sharded state falls as
    ``1/N``, so the total is monotone in ``N`` from 2 on: bisection over ``[2, max_ranks]``,
    whole counts, by default up to the ranks limit every command and ``dp_ranks`` keep
    (``_limits.LIMITS["ranks"]``, 1e9; it stopped at 1e7 and said no count fits a card that
    2e7 ranks fit).

    Raises
    ------
    ValueError
        When no rank count up to ``max_ranks`` fits: the replicated part alone exceeds the card.

    >>> stage_min_ranks(30e9, 80e9, 3)
    7
    """
    cap = float(capacity_bytes)
    limit = ""
    if max_ranks is None:
        from .._limits import LIMITS

        max_ranks, limit = int(LIMITS["ranks"].hi), " (the ranks limit)"

    def fits(n: int) -> bool:
        return float(stage_memory(zero_stage, n, params, **kw).total_bytes) <= cap

    if fits(1):
        return 1
    if not fits(max_ranks):
        m = stage_memory(zero_stage, max_ranks, params, **kw)
        raise ValueError(
            f"no rank count fits ZeRO-{zero_stage} in {format_bytes(cap)} per GPU: even at "
            f"{max_ranks:,} ranks{limit} each needs {format_bytes(float(m.total_bytes))}"
            + (
                " (stage 0 replicates the whole state; shard it: ZeRO-1/2/3)"
                if zero_stage == 0
                else ""
            )
        )
    lo, hi = 1, max_ranks  # fits(lo) False, fits(hi) True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


_PAIRS: dict[tuple[Any, ...], tuple[Any, float]] = {}


def _largest_unit(p: float, arch: Any) -> float:
    """Parameters of the largest one wrap unit (fsdp on one rank gathers one at a time)."""
    from .layout import largest_unit_params

    return float(largest_unit_params(p, arch))


def _largest_pair(p: float, arch: Any) -> float:
    """Parameters of the two neighbouring wrap units that are gathered at once (the one
    computing, the one prefetched), at most; kept per (count, architecture object)."""
    key = (p, id(arch))
    hit = _PAIRS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    pair = largest_pair_params(p, arch)
    if len(_PAIRS) >= 256:
        _PAIRS.clear()
    _PAIRS[key] = (arch, pair)
    return pair


_BASE: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_BASE_KEPT = 256
_SCALARS = (str, int, float, bool, type(None))


def _training_memory(params: float | None, kw: dict[str, Any]) -> Any:
    """:func:`costmodel.memory.training_memory` of these arguments, kept per setting when they
    are all plain numbers, names or one architecture object (its identity): every node count of
    an advisor table asks for the same few, and the architecture's activations are the costly
    part. The answer is a frozen dataclass of floats, shared as it is."""
    from .. import memory as M

    arch = kw["arch"]
    rest = {k: v for k, v in kw.items() if k != "arch"}
    values = tuple(rest.values())
    plain = all([isinstance(v, _SCALARS) for v in values])
    if not plain or isinstance(params, bool):
        return M._training_memory(params, **kw)  # unbounded: the searches reach any count
    named = isinstance(arch, str)
    key = (  # the names, values and their types (1, 1.0 and True are not one key)
        type(params),
        params,
        arch if named else id(arch),
        tuple(rest),
        values,
        tuple(map(type, values)),
    )
    hit = _BASE.get(key)
    if hit is not None and (named or hit[0] is arch):
        return hit[1]
    base = M._training_memory(params, **kw)
    if len(_BASE) >= _BASE_KEPT:
        _BASE.clear()
    _BASE[key] = (arch, base)
    return base
