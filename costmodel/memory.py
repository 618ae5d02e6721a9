r"""Memory per GPU of a data-parallel training run (DESIGN.md section 3.4).

The model state of one rank is ``P`` parameters times the bytes each one costs in the precision
recipe, split in four parts: the working weights, their gradients, an fp32 master copy of the
weights and the optimizer states. ZeRO (Rajbhandari et al. 2020) shards these parts over the
``N_dp`` data-parallel ranks:

=========== ==================================== ===========================================
ZeRO stage  sharded over the ``N_dp`` ranks       memory per rank
=========== ==================================== ===========================================
0 (DDP)     nothing                               ``P (w + g + m + o)``
1           optimizer states (and master copy)    ``P (w + g) + P (m + o) / N``
2           + gradients                           ``P w + P (g + m + o) / N``
3 (FSDP)    + weights                             ``P (w + g + m + o) / N``
=========== ==================================== ===========================================

On top of the model state: activations (optional; :func:`activation_bytes` gives the
Korthikanti et al. 2022 estimate), DDP's flat bucket copy of the gradients, the CUDA context, and
a fragmentation allowance (a fraction of everything the caching allocator holds).

Precision recipes are data (:data:`RECIPES`), not branches: a :class:`Recipe` is four numbers of
bytes per parameter with its source.

>>> training_memory(7e9).total_bytes / 1e9          # 7B, mixed-precision Adam: 16 B/param
112.0
>>> max_params(80e9) / 1e9                          # the largest model an 80 GB card holds
5.0
>>> min_ranks(30e9, 80e9, zero_stage=3)             # 480 GB of state in 80 GB cards
6
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import asdict, dataclass, fields
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ._checks import (
    element_text,
    finite_result,
    flag,
    heads_divide_hidden,
    named_shapes,
    refuse_unreal,
    said,
)
from .units import choice_name, format_bytes, format_tokens_by_micro_batch

if TYPE_CHECKING:
    from ._limits import Limit

FloatOrArray = float | np.ndarray


# --- precision recipes -------------------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of one precision/optimizer recipe, with its source.

    ``master_bytes`` counts with the optimizer state: ZeRO stage 1 shards it (Rajbhandari et al.
    2020, section 5.1, ``K`` = 12 for mixed-precision Adam covers master weights, momentum and
    variance).
    """

    name: str
    weight_bytes: float  # working copy of the weights, per parameter [B]
    gradient_bytes: float  # gradient, per parameter [B]; what DDP all-reduces
    master_bytes: float  # fp32 master copy of the weights, per parameter [B] (0 if none)
    optimizer_bytes: float  # optimizer states (Adam m and v, momentum, ...), per parameter [B]
    description: str
    source: str

    @property
    def bytes_per_param(self) -> float:
        """Total model-state bytes per parameter, unsharded [B]."""
        return self.weight_bytes + self.gradient_bytes + self.master_bytes + self.optimizer_bytes


# 8-bit Adam keeps one fp32 absmax per block of 2048 values for each of its two states
# (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization", ICLR, section 2.1: B = 2048).
_ADAM8_BLOCK = 2048
_ADAM8_STATE_BYTES = 2 * (1.0 + 4.0 / _ADAM8_BLOCK)

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "mixed-adam",
            2.0,
            2.0,
            4.0,
            8.0,
            "bf16/fp16 weights and gradients, fp32 master weights, fp32 Adam m and v",
            "Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054) section 3.1: 2 + 2 + 12 = 16 B",
        ),
        Recipe(
            "mixed-adam-fp32-grads",
            2.0,
            4.0,
            4.0,
            8.0,
            "as mixed-adam, but gradients accumulated and all-reduced in fp32",
            "Megatron-LM accumulate_allreduce_grads_in_fp32 (main_grad buffers); 2 + 4 + 12 = 18 B",
        ),
        Recipe(
            "fp32-adam",
            4.0,
            4.0,
            0.0,
            8.0,
            "fp32 weights and gradients, fp32 Adam m and v, no separate master copy",
            "Kingma & Ba 2015 (Adam: two fp32 moments); 4 + 4 + 8 = 16 B",
        ),
        Recipe(
            "fp8-mixed",
            1.0,
            1.0,
            4.0,
            8.0,
            "fp8 working weights and gradients, fp32 master weights, fp32 Adam m and v",
            "Micikevicius et al. 2022 (FP8 formats, arXiv:2209.05433); 1 + 1 + 12 = 14 B",
        ),
        Recipe(
            "sgd-momentum",
            4.0,
            4.0,
            0.0,
            4.0,
            "fp32 weights and gradients, one fp32 momentum buffer (torch.optim.SGD)",
            "Goyal et al. 2017 (ResNet-50 SGD with momentum); 4 + 4 + 4 = 12 B",
        ),
        Recipe(
            "adafactor",
            4.0,
            4.0,
            0.0,
            0.0,
            "fp32 weights and gradients, factored second moment, no momentum (beta1 = 0)",
            "Shazeer & Stern 2018 (Adafactor, arXiv:1804.04235): the state is rows + cols values "
            "per matrix, under 0.01 B/param for matrices wider than 1000; taken as 0",
        ),
        Recipe(
            "adam-8bit",
            2.0,
            2.0,
            4.0,
            _ADAM8_STATE_BYTES,
            "bf16 weights and gradients, fp32 master weights, block-wise 8-bit Adam m and v",
            "Dettmers et al. 2022 (8-bit optimizers, arXiv:2110.02861): 1 B per state "
            "+ one fp32 scale per 2048-value block; 2 + 2 + 4 + 2.004 = 10.004 B",
        ),
    )
}
"""Precision recipes by name. Add one by building a :class:`Recipe` and passing it as ``recipe``."""

ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)

# ZeRO stage -> which parts are sharded over the data-parallel ranks (Rajbhandari et al. 2020,
# section 5: P_os, P_os+g, P_os+g+p).
_SHARDED: dict[int, frozenset[str]] = {
    0: frozenset(),
    1: frozenset({"master", "optimizer"}),
    2: frozenset({"master", "optimizer", "gradients"}),
    3: frozenset({"master", "optimizer", "gradients", "weights"}),
}
#: the Recipe field of each part of the state (``_SHARDED``'s names)
_RECIPE_FIELD = {
    "weights": "weight_bytes",
    "gradients": "gradient_bytes",
    "master": "master_bytes",
    "optimizer": "optimizer_bytes",
}

Recompute = Literal["none", "selective", "selective-op", "selective-layer", "full"]

# Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
# arXiv:2205.05198), section 4.1, eq. (1) and section 4.3: activation bytes per transformer layer
# with 16-bit activations = s b h (34 + 5 a s / h) without recomputation; selective recomputation
# drops the 5 a s / h attention term; full recomputation keeps only the layer input, 2 s b h.
# torchtitan's checkpointing options (torchtitan/parallelisms/parallelize_llama.py, 2024) on the
# same GPT layer (4h MLP, multi-head attention): op-level SAC keeps the layer input 2h, the
# attention output 2h and every other matmul output (half of 2(3h + h + 4h + h) = 9h): 13h;
# layer-level SAC checkpoints every second block: (34h + 2h) / 2 = 18h (+ half the scores).
_ACTIVATION_TERMS: dict[str, tuple[float, float]] = {
    "none": (34.0, 5.0),
    "selective": (34.0, 0.0),
    "selective-op": (13.0, 0.0),
    "selective-layer": (18.0, 2.5),
    "full": (2.0, 0.0),
}


# --- input checking ----------------------------------------------------------------------------
def _numbers(name: str, value: ArrayLike) -> np.ndarray:
    """``value`` as a float array, refusing what is no number (a bool, None, text) by ``name``;
    the range is the caller's to check."""
    if isinstance(value, bool | np.bool_) or getattr(value, "dtype", None) == np.bool_:
        raise ValueError(f"{name}: expected a number, got a bool ({value!r})")
    refuse_unreal(name, value)  # a duration read as its unit's count, a complex part dropped
    try:
        if value is None:  # numpy would read it as NaN and the message would say "got nan"
            raise TypeError
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        from .units import text_hint

        raise ValueError(
            f"{name}: expected a number or an array of numbers, got {value!r}"
            + text_hint(name, value)
        ) from None


def _first_bad(value: object, x: np.ndarray, bad: np.ndarray) -> str:
    """The first bad element of ``x`` as the caller gave it (``None``, not the NaN numpy read),
    with its place in an array of several (``-1.0 (element 1 of 2)``), as the collective
    formulas say it; a one-element array is said as the number alone is (the scalar path's
    message, word for word)."""
    i = int(np.flatnonzero(bad.ravel())[0])
    return element_text(value, x, i) + (f" (element {i} of {x.size})" if x.size > 1 else "")


def _array(name: str, value: ArrayLike, *, positive: bool = False, unit: str = "") -> np.ndarray:
    x = _numbers(name, value)
    bad = ~np.isfinite(x) | ((x <= 0.0) if positive else (x < 0.0))
    if bad.any():
        first = _first_bad(value, x, bad)
        need = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{name}: must be a finite number {need}{' ' * bool(unit)}{unit}, got {first}"
        )
    return x


def _scalar(name: str, value: object, *, positive: bool = False, unit: str = "") -> float | None:
    """One Python number checked as :func:`_array` checks it (same message), as a float; None
    when ``value`` is not a plain int or float (the caller then takes the array path)."""
    if type(value) is not float and type(value) is not int:
        return None
    x = float(value)
    if not (math.isfinite(x) and (x > 0.0 if positive else x >= 0.0)):
        need = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{name}: must be a finite number {need}{' ' * bool(unit)}{unit}, got {x!r}"
        )
    return x


@functools.cache
def _ranks_limit() -> Limit:
    """The range of a rank count, the one every CLI command and sweep checks ``--ranks``
    against (``_limits.LIMITS["ranks"]``: whole, 1..1e9); imported on first use, as units is
    (it builds a pydantic validator at import)."""
    from ._limits import LIMITS

    return LIMITS["ranks"]


def _ranks(value: ArrayLike, name: str = "dp_ranks") -> np.ndarray:
    """``value`` as an array of rank counts, each a whole number within the shared ranks limit
    (:func:`_ranks_limit`), else ValueError ``"dp_ranks: must be a whole number in
    1..1,000,000,000, got VALUE"``, the CLI's ``--ranks`` message for the same value."""
    x = _numbers(name, value)  # 0, NaN and inf in the same words as 1.5: one rule, one message
    limit = _ranks_limit()
    bad = ~np.isfinite(x) | (x < limit.lo) | (x != np.floor(x)) | (x > limit.hi)
    if bad.any():
        first = _first_bad(value, x, bad)
        raise ValueError(f"{name}: must be {limit.rule}, got {first}")
    return x


#: the largest parameter count a memory formula takes: the 1e15 of every entry point
#: (``_limits.LIMITS["params"]``, ``Scenario.params``); 0 stays a formula's value (M(0) is the
#: fixed part :func:`max_params` reads)
MAX_PARAMS = 1e15


def _params_limit(value: object, x: np.ndarray | float) -> None:
    """Refuse a finite parameter count past :data:`MAX_PARAMS` (``x``: ``value`` read; NaN, inf
    and negatives are left to the caller's own check), ``"params: must be a parameter count in
    0..1e15, got 1e+30"``: 1e30 priced a memory of 1.6e31 B as an answer."""
    arr = np.asarray(x, dtype=float)
    bad = (arr > MAX_PARAMS) & np.isfinite(arr)
    if bad.any():
        first = _first_bad(value, arr, bad)
        raise ValueError(f"params: must be a parameter count in 0..1e15, got {first}")


def _gpu_memory_limit(value: object, x: np.ndarray | float, name: str = "memory_bytes") -> None:
    """Refuse a GPU memory outside the one limit every entry point holds it to
    (``_limits.LIMITS["gpu_memory"]``: 1 B..16 TiB), in its words: 1e30 B answered 6.25e28
    parameters, 0.5 B a count of 0."""
    from ._limits import LIMITS  # lazy: the formula API's import budget

    limit = LIMITS["gpu_memory"]
    arr = np.asarray(x, dtype=float)
    bad = (arr < limit.lo) | (arr > limit.hi)
    if bad.any():
        raise ValueError(f"{name}: must be {limit.rule}, got {_first_bad(value, arr, bad)}")


def _out(x: np.ndarray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


def get_recipe(name: str | Recipe) -> Recipe:
    """Look up a precision recipe by name (a :class:`Recipe` passes through).

    >>> get_recipe("mixed-adam").bytes_per_param
    16.0
    """
    if isinstance(name, Recipe):
        return name
    name = choice_name(name)  # "MIXED-ADAM" is mixed-adam, as every surface reads it
    if not isinstance(name, str) or name not in RECIPES:  # an array: not "unhashable type"
        raise ValueError(f"recipe: unknown recipe {name!r}; allowed: {', '.join(RECIPES)}")
    return RECIPES[name]


def _stage(zero_stage: int) -> int:
    if np.ndim(zero_stage) != 0:  # `in` on an array is ambiguous: say what is allowed instead
        raise ValueError(
            f"zero_stage: one stage per call, one of {ZERO_STAGES}, got {zero_stage!r}; for "
            "several stages call once per stage, or cm.sweep(kind='memory', zero_stage='0,3')"
        )
    if isinstance(zero_stage, bool) or zero_stage not in ZERO_STAGES:
        raise ValueError(f"zero_stage: must be one of {ZERO_STAGES}, got {zero_stage!r}")
    return int(zero_stage)


def check_overheads(
    cuda_context_bytes: ArrayLike, fragmentation: float
) -> tuple[np.ndarray, float]:
    """The CUDA context [B] and the fragmentation allowance [-] of :func:`training_memory`,
    checked: the context within ``LIMITS['cuda_context']`` (0 B..16 TiB; or an array of them), the allowance one
    fraction in [0, 1); else ValueError naming ``cuda_context_bytes`` or ``fragmentation``. The
    one check of these inputs, for every surface that takes them (``strategy_step``,
    ``Scenario``, the advisor, the step sweep, through
    :func:`costmodel.strategy.memory.check_overheads`).

    >>> check_overheads(2**30, 0.05)[1]
    0.05
    """
    from ._limits import LIMITS

    ctx = _numbers("cuda_context_bytes", cuda_context_bytes)
    # the CLI's --cuda-context range (0 B..16 TiB), for every surface and every way out of it
    # (NaN, negative, past the top) in its whole words: Scenario and --vs took 1 PB, and -1
    # said "a finite number >= 0 B" with no upper bound
    limit = LIMITS["cuda_context"]
    if (bad := ~((ctx >= 0.0) & (ctx <= limit.hi))).any():  # NaN fails both
        first = _first_bad(cuda_context_bytes, ctx, bad)
        raise ValueError(f"cuda_context_bytes: must be {limit.rule}, got {first}")
    return ctx, _fraction("fragmentation", fragmentation)


def _fraction(name: str, value: float) -> float:
    arr = _numbers(name, value)
    if arr.ndim:  # float() of an array raised numpy's "only 0-dimensional arrays" naming nothing
        raise ValueError(f"{name}: one fraction per call, got {value!r}")
    x = float(arr)
    # a NaN or a negative one said with the whole range, as 1.0 is ("a finite number >= 0"
    # left the upper bound out)
    if not 0.0 <= x < 1.0:
        raise ValueError(f"{name}: must be a fraction in [0, 1), got {said(value)}")
    return x


# --- the formulas ------------------------------------------------------------------------------
def state_bytes_per_param(
    recipe_name: str | Recipe = "mixed-adam", zero_stage: int = 0, dp_ranks: ArrayLike = 1
) -> dict[str, FloatOrArray]:
    r"""Model-state bytes per parameter held by one rank, per part [B/param].

    .. math:: b_x = w_x / N \text{ if part } x \text{ is sharded at this ZeRO stage, else } w_x

    Parameters
    ----------
    recipe_name : str or Recipe
        A key of :data:`RECIPES` or a :class:`Recipe`.
    zero_stage : {0, 1, 2, 3}
        ZeRO stage (Rajbhandari et al. 2020): 1 shards optimizer states, 2 also gradients,
        3 also weights.
    dp_ranks : array_like
        Data-parallel ranks ``N`` the state is sharded over [-], whole >= 1.

    Returns
    -------
    dict
        ``weights``, ``gradients``, ``master``, ``optimizer`` in B per parameter.

    Examples
    --------
    >>> state_bytes_per_param("mixed-adam", zero_stage=1, dp_ranks=4)
    {'weights': 2.0, 'gradients': 2.0, 'master': 1.0, 'optimizer': 2.0}
    """
    r = get_recipe(recipe_name)
    sharded = _SHARDED[_stage(zero_stage)]
    n_s = float(dp_ranks) if type(dp_ranks) is float or type(dp_ranks) is int else None
    if n_s is not None and 1.0 <= n_s <= _ranks_limit().hi and n_s == math.floor(n_s):
        parts_s: dict[str, FloatOrArray] = {
            "weights": r.weight_bytes,
            "gradients": r.gradient_bytes,
            "master": r.master_bytes,
            "optimizer": r.optimizer_bytes,
        }
        return {k: v / n_s if k in sharded else v + 0.0 for k, v in parts_s.items()}
    n = _ranks(dp_ranks)
    parts = {
        "weights": r.weight_bytes,
        "gradients": r.gradient_bytes,
        "master": r.master_bytes,
        "optimizer": r.optimizer_bytes,
    }
    return {k: _out(v / n if k in sharded else v + 0.0 * n) for k, v in parts.items()}


@named_shapes
def activation_bytes(
    layers: ArrayLike,
    hidden: ArrayLike,
    sequence_length: ArrayLike,
    micro_batch: ArrayLike,
    heads: ArrayLike,
    recompute: Recompute = "none",
) -> FloatOrArray:
    r"""Activation memory of a transformer's layers, 16-bit activations [B].

    .. math:: A = L\, s\, b\, h \left(34 + 5 \frac{a s}{h}\right)

    without recomputation; selective recomputation of attention drops the ``5 a s / h`` term
    (``34 s b h``); full recomputation stores only each layer's input (``2 s b h``); torchtitan's
    op-level selective checkpointing keeps ``13 s b h`` and its layer-level one (every second
    block) ``18 s b h`` plus half the scores. For an architecture's own widths (GQA, SwiGLU,
    experts) use ``Architecture.activation_bytes``.

    Parameters
    ----------
    layers : array_like
        Transformer layers ``L`` [-].
    hidden : array_like
        Hidden size ``h`` [-].
    sequence_length : array_like
        Sequence length ``s`` [tokens].
    micro_batch : array_like
        Micro-batch size ``b`` [sequences].
    heads : array_like
        Attention heads ``a`` [-]; ``hidden`` must be a multiple of it (each head takes
        ``h / a`` dimensions), else ValueError naming ``hidden``.
    recompute : {"none", "selective", "selective-op", "selective-layer", "full"}

    Notes
    -----
    Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    arXiv:2205.05198, eq. (1) (no parallelism, no dropout-mask savings) and section 5. The
    embedding and output-layer terms are left out (small for many layers).

    Examples
    --------
    >>> activation_bytes(1, 4096, 2048, 1, 32) / 1e9        # s b h (34 + 5 a s / h)
    0.956301312
    >>> activation_bytes(1, 4096, 2048, 1, 32, recompute="full") / 1e6   # 2 s b h
    16.777216
    """
    if recompute not in _ACTIVATION_TERMS:
        raise ValueError(
            f"recompute: unknown {recompute!r}; allowed: {', '.join(_ACTIVATION_TERMS)}"
        )
    c, attn = _ACTIVATION_TERMS[recompute]
    if all(
        type(v) is float or type(v) is int
        for v in (layers, hidden, sequence_length, micro_batch, heads)
    ):
        # all five are Python numbers here, so none of these is None (the checks narrow the type)
        L1 = _scalar("layers", layers, positive=True)  # noqa: N806
        h1 = _scalar("hidden", hidden, positive=True)
        s1 = _scalar("sequence_length", sequence_length, positive=True, unit="tokens")
        b1 = _scalar("micro_batch", micro_batch, positive=True)
        a1 = _scalar("heads", heads, positive=True)
        if L1 is not None and h1 is not None and s1 is not None and b1 is not None:
            if a1 is not None:
                heads_divide_hidden(hidden, heads)
                return L1 * s1 * b1 * h1 * (c + attn * a1 * s1 / h1)
    L = _array("layers", layers, positive=True)  # noqa: N806
    h = _array("hidden", hidden, positive=True)
    s = _array("sequence_length", sequence_length, positive=True, unit="tokens")
    b = _array("micro_batch", micro_batch, positive=True)
    a = _array("heads", heads, positive=True)
    heads_divide_hidden(h, a)
    return _out(L * s * b * h * (c + attn * a * s / h))


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one rank holds, per part [B]. Arrays when any input was an array."""

    weights_bytes: FloatOrArray
    gradients_bytes: FloatOrArray
    master_bytes: FloatOrArray
    optimizer_bytes: FloatOrArray
    activations_bytes: FloatOrArray
    ddp_buckets_bytes: FloatOrArray
    cuda_context_bytes: FloatOrArray
    fragmentation_bytes: FloatOrArray
    recipe: str
    zero_stage: int
    activations_note: str = ""  # how the activations were obtained (recipe), or why they are 0

    def all_finite(self) -> bool:
        """Every part finite (the parts are >= 0, so their sum is finite exactly when each is);
        one expression, so the result check of the scalar path stays a fraction of a us."""
        s = (
            self.weights_bytes
            + self.gradients_bytes
            + self.master_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.ddp_buckets_bytes
            + self.cuda_context_bytes
            + self.fragmentation_bytes
        )
        return math.isfinite(s) if type(s) is float else bool(np.isfinite(s).all())

    @property
    def model_state_bytes(self) -> FloatOrArray:
        """Weights + gradients + master weights + optimizer states [B]."""
        return self.weights_bytes + self.gradients_bytes + self.master_bytes + self.optimizer_bytes

    @property
    def total_bytes(self) -> FloatOrArray:
        """Everything the rank needs [B]."""
        return (
            self.model_state_bytes
            + self.activations_bytes
            + self.ddp_buckets_bytes
            + self.cuda_context_bytes
            + self.fragmentation_bytes
        )

    def as_dict(self) -> dict[str, FloatOrArray | str | int]:
        """Every part and the total, by name (for tables, JSON and charts)."""
        d = asdict(self)
        d["model_state_bytes"] = self.model_state_bytes
        d["total_bytes"] = self.total_bytes
        return d

    def parts(self) -> dict[str, FloatOrArray]:
        """Only the byte parts (no recipe/stage, no totals): what a stacked bar shows."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name.endswith("_bytes")}


DEFAULT_SEQUENCE_LENGTH = 4096
"""Default tokens per sample of the activation estimate (Llama 2's context, Touvron et al. 2023)."""


def _arch_activations(
    arch: object,
    sequence_length: int,
    micro_batch: int,
    flash_attention: bool,
    recompute: Recompute,
    loss: str = "fp32",
) -> tuple[float, str]:
    """(activation bytes, note) of an architecture under one recipe (architecture module)."""
    from .architecture import load_arch  # lazy: architecture reads the presets folder

    a = load_arch(arch)  # type: ignore[arg-type]
    act = a.activation_bytes(
        sequence_length,
        micro_batch,
        flash_attention=flash_attention,
        recompute=recompute,
        loss=loss,  # type: ignore[arg-type]
    )
    note = (
        f"activations: {a.name}, {format_tokens_by_micro_batch(sequence_length, micro_batch)}, "
        f"{'FlashAttention' if flash_attention else 'no FlashAttention'}, recompute {recompute} "
        f"(Korthikanti et al. 2022), loss {loss}"
    )
    return act, note


#: How the step prices a bare parameter count, as :func:`bare_count_note` says it by default
BARE_COUNT_STEP = "a dense transformer of that size (architecture_for_params)"


def bare_count_note(priced: str = BARE_COUNT_STEP) -> str:
    """The note beside the memory of a bare parameter count: what that memory holds (the model
    state; the activations are not sized, a count alone gives no layers, width or vocabulary to
    size them from), how the step prices the same count (``priced``: by default a dense
    transformer of that size, :func:`costmodel.architecture.architecture_for_params`, whose
    tensors make its buckets and wrap units and, on the fitted road, its FLOPs; the step's own
    note names the shape), and how to get activations.

    No brackets around the whole: ``priced`` brings its own (the shape the step priced), which
    would otherwise sit inside them.

    >>> bare_count_note().startswith("activations: not included; for a bare parameter count: ")
    True
    """
    return (
        "activations: not included; for a bare parameter count: the model state, activations not "
        f"sized; the step prices the count as {priced}; name an architecture to size "
        "activations: `arch`"
    )


def given_activations_note(activations_bytes: ArrayLike) -> str:
    """The activations' line where they are given (``--activations``, ``activations_bytes``):
    the size given, as ``units.format_bytes`` writes it (GB = 1e9 B); an array of sizes (a
    sweep block, whose ``activations_GB`` column holds each row's) says ``given`` alone.

    >>> given_activations_note(12e9)
    'activations: 12 GB given'
    >>> given_activations_note([1e9, 2e9])
    'activations: given'
    """
    try:
        a = np.asarray(activations_bytes, dtype=float)
    except (TypeError, ValueError):  # refused with its field by the check that follows
        return "activations: given"
    if a.ndim == 0 and math.isfinite(float(a)):
        return f"activations: {format_bytes(float(a))} given"
    return "activations: given"


def _check_unused_recipe(
    sequence_length: object, micro_batch: object, recompute: object, loss: object
) -> None:
    """Check an activation recipe :func:`training_memory` does not use (a bare count, whose
    activations are not sized, or the activations given): a typo is refused as it is with an architecture, not ignored. The
    defaults pass without importing :mod:`costmodel.architecture` (the bare-count fast path)."""
    if (sequence_length, micro_batch, recompute, loss) == (
        DEFAULT_SEQUENCE_LENGTH,
        1,
        "none",
        "fp32",
    ) and all(type(v) in (int, str) for v in (sequence_length, micro_batch, recompute, loss)):
        return
    from .architecture import check_activation_recipe

    check_activation_recipe(sequence_length, micro_batch, recompute, loss)


@finite_result("memory")
def training_memory(
    params: ArrayLike | str | None = None,
    recipe: str | Recipe = "mixed-adam",
    zero_stage: int = 0,
    dp_ranks: ArrayLike = 1,
    activations_bytes: ArrayLike | None = None,
    ddp_bucket_copy: bool = False,
    cuda_context_bytes: ArrayLike = 0.0,
    fragmentation: float = 0.0,
    *,
    arch: object = None,
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH,
    micro_batch: int = 1,
    flash_attention: bool = True,
    recompute: Recompute = "none",
    loss: str = "fp32",
) -> MemoryBreakdown:
    r"""Memory one data-parallel rank needs for training [B], part by part.

    .. math::
        M = (1 + f)\Big[P\sum_x b_x + A + D\Big] + C,\qquad D = P\, g \text{ (DDP buckets)}

    with ``b_x`` from :func:`state_bytes_per_param` (ZeRO sharding over ``N`` ranks), ``A`` the
    activations, ``D`` DDP's flat gradient buckets, ``C`` the CUDA context and ``f`` the
    fragmentation allowance.

    Parameters
    ----------
    params : array_like
        Parameters ``P`` of the model [-], >= 0.
    recipe : str or Recipe
        Precision recipe: a key of :data:`RECIPES` (default ``"mixed-adam"``, 16 B/param) or a
        :class:`Recipe`.
    zero_stage : {0, 1, 2, 3}
        0 = plain DDP (everything replicated), 1/2/3 = ZeRO stage (3 = FSDP full sharding).
    dp_ranks : array_like
        Data-parallel ranks the state is sharded over [-] (no effect at stage 0). Its default
        1 is the lesson's per-GPU formula with nothing sharded: this is a formula, not the
        planner's default, which is one node (:data:`costmodel.hardware.DEFAULT_NODES`, 8 ranks
        without a cluster: ``costmodel memory``, ``Layout``, ``strategy_step``, the Memory page).
    activations_bytes : array_like
        Activation memory per rank [B] (e.g. from :func:`activation_bytes`); default 0.
    ddp_bucket_copy : bool
        Add DDP's bucket buffers, a second copy of all gradients (PyTorch DDP with the default
        ``gradient_as_bucket_view=False``; torch/nn/parallel/distributed.py). Only with
        unsharded gradients (stage 0 or 1).
    cuda_context_bytes : array_like
        CUDA context and library workspaces per GPU [B], not tracked by the allocator; default 0
        (it depends on the driver, CUDA version and GPU: measure it with ``nvidia-smi``).
    fragmentation : float
        Allowance for allocator fragmentation, a fraction in [0, 1) of everything the allocator
        holds (model state, activations, buckets).
    arch : str or Architecture, optional
        A named architecture (``"llama-3.1-70b"``, see ``costmodel.architecture.arch_names``);
        ``params`` may also be that name. Gives ``P`` and, unless ``activations_bytes`` is
        given, the activations of one micro-batch (``Architecture.activation_bytes``).
    sequence_length, micro_batch, flash_attention, recompute, loss
        The activation recipe used with ``arch``: by default 4096 tokens, micro-batch 1,
        FlashAttention, no recomputation, the loss in plain PyTorch (``"fp32"``: 12 B per logit
        at its peak; ``"fused"``, ``"fp32-held"``:
        :func:`costmodel.architecture.loss_logits_bytes`). A bare parameter count sizes the
        model state only: the activations are 0 unless ``activations_bytes`` is given, and
        ``activations_note`` says so (:func:`bare_count_note`); the recipe is checked all the
        same (a typo is an error).

    Returns
    -------
    MemoryBreakdown

    Notes
    -----
    16 B/param for mixed-precision Adam and the ZeRO stages: Rajbhandari et al. 2020, "ZeRO:
    Memory Optimizations Toward Training Trillion Parameter Models", arXiv:1910.02054, section 5.

    Examples
    --------
    >>> training_memory(30e9).total_bytes / 1e9                             # plain DP
    480.0
    >>> training_memory(30e9, zero_stage=3, dp_ranks=16).total_bytes / 1e9  # ZeRO-3 over 16
    30.0
    >>> m = training_memory(1e9, zero_stage=1, dp_ranks=8)
    >>> m.weights_bytes / 1e9, m.gradients_bytes / 1e9, m.optimizer_bytes / 1e9
    (2.0, 2.0, 1.0)
    >>> m = training_memory(arch="llama-3.1-70b", zero_stage=3, dp_ranks=64)
    >>> round(m.activations_bytes / 1e9, 1), round(m.total_bytes / 1e9, 1)  # 80 layers x 4096
    (115.2, 132.8)
    >>> m = training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64, recompute="full")
    >>> round(m.activations_bytes / 1e9, 1), round(m.total_bytes / 1e9, 1)  # 80 x 4096 x 2h + loss
    (11.8, 29.5)
    """
    # a finite count past the limit; NaN, inf and negatives keep the core's own message
    if type(params) is float or type(params) is int:  # the scalar path: one comparison
        if MAX_PARAMS < params < math.inf:
            _params_limit(params, float(params))
    elif _is_count(params):
        _params_limit(params, np.asarray(params, dtype=float))
    return _training_memory(
        params,
        recipe,
        zero_stage,
        dp_ranks,
        activations_bytes,
        ddp_bucket_copy,
        cuda_context_bytes,
        fragmentation,
        arch=arch,
        sequence_length=sequence_length,
        micro_batch=micro_batch,
        flash_attention=flash_attention,
        recompute=recompute,
        loss=loss,
    )


def _is_count(value: object) -> bool:
    """Whether ``value`` is a number or an array of real numbers (not a name, None or an
    Architecture), whose size the public :func:`training_memory` bounds."""
    if type(value) is int or type(value) is float:
        return True
    try:
        return np.asarray(value).dtype.kind in "iuf"
    except (TypeError, ValueError):
        return False


def _training_memory(
    params: ArrayLike | str | None = None,
    recipe: str | Recipe = "mixed-adam",
    zero_stage: int = 0,
    dp_ranks: ArrayLike = 1,
    activations_bytes: ArrayLike | None = None,
    ddp_bucket_copy: bool = False,
    cuda_context_bytes: ArrayLike = 0.0,
    fragmentation: float = 0.0,
    *,
    arch: object = None,
    sequence_length: int = DEFAULT_SEQUENCE_LENGTH,
    micro_batch: int = 1,
    flash_attention: bool = True,
    recompute: Recompute = "none",
    loss: str = "fp32",
) -> MemoryBreakdown:
    """:func:`training_memory` without the bound on ``params`` (1e15): the memory models'
    searches (:func:`costmodel.strategy.memory.largest_count_that_fits`) evaluate it at any
    count their bisection reaches."""
    if flash_attention is not True and flash_attention is not False:
        flash_attention = flag("flash_attention", flash_attention)
    recompute, loss = choice_name(recompute), choice_name(loss)  # any case, as the CLI reads
    # an Architecture object exists only once its module is loaded: a count does not load it
    # (the formula API's import budget)
    arch_module = sys.modules.get("costmodel.architecture")
    if isinstance(params, str) or (
        arch_module is not None and isinstance(params, arch_module.Architecture)
    ):
        # a name or an Architecture stands for the model; beside ``arch=`` it is its count, so
        # two different models are refused (resolve_params: "not both"), as strategy_step does
        from .architecture import arch_of_params_text

        named = arch_of_params_text(params)
        params, arch = (None, named) if arch is None else (float(named.params), arch)
    note = ""
    if arch is not None:
        from .architecture import resolve_params

        params, arch = resolve_params(params, arch)  # type: ignore[arg-type]
        if activations_bytes is None:
            activations_bytes, note = _arch_activations(
                arch, sequence_length, micro_batch, flash_attention, recompute, loss
            )
        else:
            _check_unused_recipe(sequence_length, micro_batch, recompute, loss)
            note = given_activations_note(activations_bytes)
    elif params is None:
        raise ValueError("params: give a parameter count or `arch` (an architecture name)")
    elif activations_bytes is None:
        _check_unused_recipe(sequence_length, micro_batch, recompute, loss)
        activations_bytes = 0.0
        note = bare_count_note()
    else:
        _check_unused_recipe(sequence_length, micro_batch, recompute, loss)
        note = given_activations_note(activations_bytes)
    r = get_recipe(recipe)
    stage = _stage(zero_stage)
    plain = _plain_numbers(params, dp_ranks, activations_bytes, cuda_context_bytes, fragmentation)
    if plain is not None:
        p_s, n_s, act_s, ctx_s, frag_s = plain
        fast = _training_memory_scalar(
            r, stage, p_s, n_s, act_s, ddp_bucket_copy, ctx_s, frag_s, note
        )
        if fast is not None:
            return fast
    p = _array("params", params)
    per = state_bytes_per_param(r, stage, dp_ranks)
    act = _array("activations_bytes", activations_bytes, unit="B")
    ctx, frag = check_overheads(cuda_context_bytes, fragmentation)
    ddp_bucket_copy = flag("ddp_bucket_copy", ddp_bucket_copy)
    if ddp_bucket_copy and stage > 1:
        raise ValueError(
            f"ddp_bucket_copy: DDP's bucket copy applies to unsharded gradients (zero_stage 0 or 1); "
            f"got `zero_stage` {stage}, whose gradients are reduce-scattered, not DDP-bucketed"
        )
    parts = {k: p * v for k, v in per.items()}
    buckets = p * r.gradient_bytes if ddp_bucket_copy else 0.0 * p
    held = sum(parts.values()) + act + buckets
    return MemoryBreakdown(
        weights_bytes=_out(parts["weights"]),
        gradients_bytes=_out(parts["gradients"]),
        master_bytes=_out(parts["master"]),
        optimizer_bytes=_out(parts["optimizer"]),
        activations_bytes=_out(act + 0.0 * p),
        ddp_buckets_bytes=_out(buckets + 0.0 * held),
        cuda_context_bytes=_out(ctx + 0.0 * held),
        fragmentation_bytes=_out(frag * held),
        recipe=r.name,
        zero_stage=stage,
        activations_note=note,
    )


def _plain_numbers(*values: object) -> tuple[float, ...] | None:
    """The values when each is a plain Python int or float (the scalar fast path applies), else
    None. Returning them (not a bool) lets the type checker see that they are numbers."""
    out: list[float] = []
    for v in values:
        if not (type(v) is int or type(v) is float):  # not bool, not numpy scalars
            return None
        out.append(v)
    return tuple(out)


def _training_memory_scalar(
    r: Recipe,
    stage: int,
    params: float,
    dp_ranks: float,
    act: float,
    ddp_bucket_copy: bool,
    ctx: float,
    frag: float,
    note: str = "",
) -> MemoryBreakdown | None:
    """:func:`training_memory` for Python scalars, without numpy (a few us instead of ~80 us).

    The same operations in the same order on IEEE doubles, so the result equals the array
    path's bit for bit. Returns None for anything the array path must refuse, which then raises
    its usual ValueError naming the field.
    """
    p, n, act, ctx, frag = float(params), float(dp_ranks), float(act), float(ctx), float(frag)
    if not (
        0.0 <= p < math.inf
        and 1.0 <= n <= _ranks_limit().hi
        and n == math.floor(n)
        and 0.0 <= act < math.inf
        and 0.0 <= ctx < math.inf
        and 0.0 <= frag < 1.0
        and (ddp_bucket_copy is False or (ddp_bucket_copy is True and stage <= 1))
    ):
        return None  # the array path refuses it (or a non-bool flag) with its message
    sharded = _SHARDED[stage]
    w = p * (r.weight_bytes / n if "weights" in sharded else r.weight_bytes + 0.0)
    g = p * (r.gradient_bytes / n if "gradients" in sharded else r.gradient_bytes + 0.0)
    m = p * (r.master_bytes / n if "master" in sharded else r.master_bytes + 0.0)
    o = p * (r.optimizer_bytes / n if "optimizer" in sharded else r.optimizer_bytes + 0.0)
    buckets = p * r.gradient_bytes if ddp_bucket_copy else 0.0 * p
    held = w + g + m + o + act + buckets
    return MemoryBreakdown(
        w, g, m, o, act + 0.0, buckets + 0.0, ctx + 0.0, frag * held, r.name, stage, note
    )


def _per_param_and_fixed(
    recipe_obj: Recipe,
    zero_stage: int,
    dp_ranks: ArrayLike,
    activations_bytes: ArrayLike,
    ddp_bucket_copy: bool,
    cuda_context_bytes: ArrayLike,
    fragmentation: float,
    *,
    scalar: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[float, float]:
    """(bytes per parameter, fixed bytes) of the affine model M(P) = a P + c.

    ``a`` is read over :data:`_SLOPE_PARAMS` parameters, not one: ``M(1) - M(0)`` beside
    gigabytes of activations kept only 8 digits of ``a``, and the largest count was off by
    thousands (a count that did not fit by 4.9 kB).

    ``scalar=True``: Python floats when training_memory answered with floats (its scalar path)."""
    one = training_memory(
        _SLOPE_PARAMS,
        recipe_obj,
        zero_stage,
        dp_ranks,
        activations_bytes,
        ddp_bucket_copy,
        cuda_context_bytes,
        fragmentation,
    )
    zero = training_memory(
        0.0,
        recipe_obj,
        zero_stage,
        dp_ranks,
        activations_bytes,
        ddp_bucket_copy,
        cuda_context_bytes,
        fragmentation,
    )
    if scalar and type(zero.total_bytes) is float and type(one.total_bytes) is float:
        return (one.total_bytes - zero.total_bytes) / _SLOPE_PARAMS, zero.total_bytes
    fixed = np.asarray(zero.total_bytes, dtype=float)
    return (np.asarray(one.total_bytes, dtype=float) - fixed) / _SLOPE_PARAMS, fixed


_SLOPE_PARAMS = 2.0**40
"""Parameters over which :func:`max_params` reads the bytes per parameter of the affine memory
(a power of two: the division is exact; about 1.1e12, so the difference is of the order of the
card's own bytes and keeps their digits)."""


@finite_result("parameter count")
def max_params(
    memory_bytes: ArrayLike,
    recipe: str | Recipe = "mixed-adam",
    zero_stage: int = 0,
    dp_ranks: ArrayLike = 1,
    activations_bytes: ArrayLike = 0.0,
    ddp_bucket_copy: bool = False,
    cuda_context_bytes: ArrayLike = 0.0,
    fragmentation: float = 0.0,
) -> FloatOrArray:
    r"""Largest parameter count whose training memory fits in ``memory_bytes`` per GPU [-].

    :func:`training_memory` is affine in ``P``, ``M(P) = a P + c``, so
    :math:`P_{max} = \max(0, \lfloor (M_{GPU} - c) / a \rfloor)`: a whole count of parameters
    (a float with no fraction), 0 when even one parameter does not fit (the fixed part fills
    the card, or one parameter's state alone is larger than what is left). Arguments as for
    :func:`training_memory` (bytes per parameter and ZeRO sharding: Rajbhandari et al. 2020);
    ``dp_ranks=1`` is the lesson's formula on one rank, not the planner's default of one node
    (:data:`costmodel.hardware.DEFAULT_NODES`).

    Examples
    --------
    >>> max_params(80e9) / 1e9                                  # 80 GB / 16 B
    5.0
    >>> max_params(80e9, zero_stage=3, dp_ranks=16) / 1e9       # 80 GB / (16 B / 16)
    80.0
    >>> max_params(20.0), max_params(10.0)                      # 20 B / 16 B: one, not 1.25
    (1.0, 0.0)
    """
    args = (
        get_recipe(recipe),
        zero_stage,
        dp_ranks,
        activations_bytes,
        ddp_bucket_copy,
        cuda_context_bytes,
        fragmentation,
    )
    mem_s = _scalar("memory_bytes", memory_bytes, positive=True, unit="B")
    if mem_s is not None:
        _gpu_memory_limit(memory_bytes, mem_s)
    plain = _plain_numbers(dp_ranks, activations_bytes, cuda_context_bytes, fragmentation)
    if mem_s is not None and plain is not None and type(ddp_bucket_copy) is bool:
        # Python numbers: the scalar core of training_memory at P = 2**40 and 0 (M is affine)
        r, stage = args[0], _stage(zero_stage)
        n_s, act_s, ctx_s, frag_s = plain
        at = _SLOPE_PARAMS
        one = _training_memory_scalar(r, stage, at, n_s, act_s, ddp_bucket_copy, ctx_s, frag_s)
        zero = _training_memory_scalar(r, stage, 0.0, n_s, act_s, ddp_bucket_copy, ctx_s, frag_s)
        if one is not None and zero is not None:
            fixed = float(zero.total_bytes)
            slope = (float(one.total_bytes) - fixed) / at
            return _whole_fit(mem_s, slope, fixed)
    if mem_s is not None:  # Python number: training_memory's scalar path twice, floats out
        a, c = _per_param_and_fixed(*args, scalar=True)
        if type(a) is float:  # the fixed part fills the card: none fits (no 0/0 when A >> P)
            return _whole_fit(mem_s, a, float(c))
    mem = _array("memory_bytes", memory_bytes, positive=True, unit="B")
    _gpu_memory_limit(memory_bytes, mem)
    a, c = _per_param_and_fixed(*args)
    room = mem - c
    ok = (room > 0.0) & (a > 0.0)
    # a count past the float range (a recipe of ~1e-300 B per parameter) is inf, as the scalar
    # path's: @finite_result refuses it naming the input, so numpy's overflow warning is not
    # also printed (an invalid 0/0 or inf - inf still warns); dp_ranks past the ranks limit
    # (1e9) never get here
    with np.errstate(over="ignore", invalid="ignore"):
        count = np.floor(room / np.where(ok, a, 1.0))
        # the division rounds: step to the largest whole count whose memory fits
        a_ok = np.where(ok, a, 1.0)
        count = np.where(a_ok * (count + 1.0) + c <= mem, count + 1.0, count)
        count = np.where((count > 0.0) & (a_ok * count + c > mem), count - 1.0, count)
    return _out(np.where(ok, np.maximum(count, 0.0), 0.0))


def _whole_fit(memory_bytes: float, per_param_bytes: float, fixed_bytes: float) -> float:
    """Largest whole ``P >= 0`` with ``a P + c <= M`` [-] (:func:`max_params`' scalar core).

    The floor of ``(M - c) / a``, stepped by one where the division rounded across a whole
    count; counts past 2**53 are whole as floats already (an inf count is returned as inf, for
    :func:`max_params`' finite-result check to refuse).

    >>> _whole_fit(20.0, 16.0, 0.0), _whole_fit(80e9, 16.0, 0.0), _whole_fit(10.0, 16.0, 0.0)
    (1.0, 5000000000.0, 0.0)
    """
    m, a, c = memory_bytes, per_param_bytes, fixed_bytes
    if c >= m or a <= 0.0:
        return 0.0
    q = (m - c) / a
    if not math.isfinite(q):
        return q
    p = float(math.floor(q))
    if a * (p + 1.0) + c <= m:
        p += 1.0
    elif p > 0.0 and a * p + c > m:
        p -= 1.0
    return p


@finite_result("rank count")
def min_ranks(
    params: float,
    memory_bytes: float,
    recipe: str | Recipe = "mixed-adam",
    zero_stage: int = 3,
    activations_bytes: float = 0.0,
    ddp_bucket_copy: bool = False,
    cuda_context_bytes: float = 0.0,
    fragmentation: float = 0.0,
) -> int:
    r"""Fewest data-parallel ranks whose sharded training state fits in ``memory_bytes`` each [-].

    With ``R`` the replicated bytes (unsharded parts, activations, buckets, context) and ``S``
    the sharded bytes, a rank holds ``R + S/N``, so :math:`N_{min} = \lceil S / (M - R) \rceil`
    (which parts ZeRO stage s shards: Rajbhandari et al. 2020). The ceiling is taken in
    integer arithmetic on the exact values of the inputs (:func:`_replicated_and_sharded`), so
    the answer is exact at every count up to the ranks limit (1e9).

    Raises
    ------
    ValueError
        When no rank count can fit: ``R >= M`` (at ZeRO stage 0 every part is replicated, so
        plain DP never fits a model whose state exceeds one GPU). The message gives the bytes
        needed and the stage that would fit. Also when the fewest ranks are past the ranks
        limit (1..1,000,000,000): no call takes that count back; the message names
        ``memory_bytes`` (in bytes: ``80`` is 80 B, with a hint below 1 MB) and gives the count
        exactly.

    Examples
    --------
    >>> min_ranks(30e9, 80e9, zero_stage=3)
    6
    >>> min_ranks(7e9, 80e9, zero_stage=1)      # 28 GB replicated + 84 GB / N
    2
    >>> try:
    ...     min_ranks(30e9, 80e9, zero_stage=0)                # plain DP: no rank count helps
    ... except ValueError as err:
    ...     print(str(err).split(": ", 2)[2])
    480 GB per rank, 6x the 80 GB available, and no rank count changes that; `zero_stage` 3 needs 6 ranks
    """
    if np.ndim(params) or np.ndim(memory_bytes):
        raise ValueError("params, memory_bytes: min_ranks takes scalars (one model, one GPU size)")
    r = get_recipe(recipe)
    stage = _stage(zero_stage)
    mem_s = _scalar("memory_bytes", memory_bytes, positive=True, unit="B")
    mem = (
        mem_s
        if mem_s is not None
        else float(_array("memory_bytes", memory_bytes, positive=True, unit="B"))
    )
    _gpu_memory_limit(memory_bytes, mem)
    p_s = _scalar("params", params)
    p: float = p_s if p_s is not None else float(_array("params", params))
    _params_limit(params, p)

    for name, value in (
        ("activations_bytes", activations_bytes),
        ("cuda_context_bytes", cuda_context_bytes),
        ("fragmentation", fragmentation),
    ):
        if np.ndim(value):
            raise ValueError(
                f"{name}: one number per call (min_ranks answers one setting), got {value!r}"
            )
    training_memory(  # its checks of every input, with its messages
        p,
        r,
        stage,
        1,
        activations_bytes=activations_bytes,
        ddp_bucket_copy=ddp_bucket_copy,
        cuda_context_bytes=cuda_context_bytes,
        fragmentation=fragmentation,
    )
    args = (activations_bytes, ddp_bucket_copy, cuda_context_bytes, fragmentation)
    need = _fewest_ranks(p, mem, r, stage, *args)
    top = int(_ranks_limit().hi)
    if need is None:
        n3 = _fewest_ranks(p, mem, r, 3, *args) if stage < 3 else None
        hint = (
            ""
            if stage == 3
            else "; even `zero_stage` 3 cannot fit it (reduce activations or the context)"
            if n3 is None
            else f"; `zero_stage` 3 needs {_big_count(n3)} ranks"
            + (f", past the ranks limit of {top:,}" if n3 > top else "")
        )
        replicated = float(_replicated_and_sharded(p, r, stage, *args)[0])
        what = "every part of the state" if stage == 0 else "the unsharded parts"
        from .units import format_bytes  # lazy: units builds a pydantic validator at import

        raise ValueError(
            f"zero_stage: stage {stage} replicates {what} on every rank: "
            f"{format_bytes(replicated)} per rank, {replicated / mem:.3g}x the "
            f"{format_bytes(mem)} available, and no rank count changes that{hint}"
        )
    if need > top:  # an answer no call could take back as a rank count
        # named by this function's own argument, the memory per GPU (min_ranks has no dp_ranks),
        # and, for a memory no GPU has (80 typed for 80 GB), its unit
        from .units import format_bytes  # lazy: units builds a pydantic validator at import

        unit = (
            f"; memory_bytes is in bytes: {format_bytes(mem)} per GPU here (80 GB is 80e9)"
            if mem < MIN_PLAUSIBLE_GPU_BYTES
            else ""
        )
        raise ValueError(
            f"memory_bytes: the fewest ranks that fit, {_big_count(need)}, are past the ranks "
            f"limit ({_ranks_limit().rule}); a larger memory_bytes or less unsharded memory "
            f"fits in fewer{unit}"
        )
    return need


MIN_PLAUSIBLE_GPU_BYTES = 1e6
"""Below 1 MB a ``memory_bytes`` is no GPU's (the smallest carry gigabytes) but a size typed in
another unit (``80`` for 80 GB): :func:`min_ranks` says its unit when such a memory fits no
allowed rank count. Only a hint: the value is refused for the count it needs, not for itself."""


def _big_count(n: int) -> str:
    """A rank count as a message says it: exact with separators up to 1e15, beyond in three
    digits (``1e+300``'s fewest ranks are not 300 digits), past a float's range too (a
    ``memory_bytes`` of 1e-300 B needs 4.8e+311 ranks, which ``float()`` overflowed on).

    >>> _big_count(1024), _big_count(2 * 10**300), _big_count(48 * 10**320)
    ('1,024', '2e+300', '4.8e+321')
    """
    if n <= 10**15:
        return f"{n:,}"
    if n < 10**300:
        return f"{float(n):.3g}"
    return f"{Decimal(f'{Decimal(n):.3g}').normalize():g}"  # float() overflows past ~1.8e308


def _fewest_ranks(
    params: float,
    memory_bytes: float,
    r: Recipe,
    stage: int,
    activations_bytes: Any,
    ddp_bucket_copy: bool,
    cuda_context_bytes: Any,
    fragmentation: Any,
) -> int | None:
    r""":math:`N_{min} = \lceil S / (M - R) \rceil` [-] in integer arithmetic (1 when one rank
    fits), with no upper limit; None when no count fits (``R >= M``)."""
    replicated, sharded = _replicated_and_sharded(
        params, r, stage, activations_bytes, ddp_bucket_copy, cuda_context_bytes, fragmentation
    )
    m = Fraction(memory_bytes)
    if replicated + sharded <= m:
        return 1
    if replicated >= m or sharded <= 0:
        return None
    return math.ceil(sharded / (m - replicated))  # R + S/N <= M  <=>  N >= S / (M - R)


def _replicated_and_sharded(
    params: float,
    r: Recipe,
    stage: int,
    activations_bytes: Any,
    ddp_bucket_copy: bool,
    cuda_context_bytes: Any,
    fragmentation: Any,
) -> tuple[Fraction, Fraction]:
    r"""(R, S) [B] of :func:`training_memory`'s per-rank memory :math:`R + S / N`, exactly.

    .. math:: R = (1 + f)\Big[P \sum_{x\ \mathrm{kept}} b_x + A + D\Big] + C, \qquad
              S = (1 + f)\, P \sum_{x\ \mathrm{sharded}} b_x

    (:func:`training_memory`'s equation with the parts ZeRO stage ``stage`` shards split off).
    Every input is a float, which is a fraction of integers, so R and S are exact fractions:
    :func:`min_ranks` takes the ceiling of ``S / (M - R)`` in integer arithmetic, exact at
    any rank count (float slack to absorb rounding, as in 480 GB / 80 GB = 6.000...01, is a
    thousandth of a rank near the ranks limit of 1e9 and gave a count that did not fit).
    At an exact fit the float sum :func:`training_memory` reports may exceed ``M`` by an ulp.

    >>> _replicated_and_sharded(30e9, RECIPES["mixed-adam"], 3, 0.0, False, 0.0, 0.0)
    (Fraction(0, 1), Fraction(480000000000, 1))
    """
    f = Fraction(float(fragmentation))
    p = Fraction(params)
    kept = sum(
        (
            Fraction(getattr(r, field))
            for part, field in _RECIPE_FIELD.items()
            if part not in _SHARDED[stage]
        ),
        Fraction(0),
    )
    split = sum(
        (Fraction(getattr(r, _RECIPE_FIELD[part])) for part in _SHARDED[stage]), Fraction(0)
    )
    act = Fraction(float(0.0 if activations_bytes is None else activations_bytes))
    buckets = p * Fraction(r.gradient_bytes) if ddp_bucket_copy else Fraction(0)
    replicated = (1 + f) * (p * kept + act + buckets) + Fraction(float(cuda_context_bytes))
    return replicated, (1 + f) * p * split
