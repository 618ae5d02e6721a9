r"""Transformer architectures by name: shape, parameter tensors, activations, FLOPs per token.

An :class:`Architecture` is the shape of a published decoder-only transformer (layers, hidden,
FFN, heads, KV heads, vocabulary, tied embeddings, experts, biases, MLA ranks), loaded from
``presets/models/*.toml`` (:func:`load_arch`, :func:`arch_names`). The word *model* is kept for
the cost models (``lesson``, ``textbook``, ``nccl``, ``calibrated``); every surface takes an
architecture as ``arch=`` (API) or ``--arch`` (CLI), or a bare parameter count.

From the shape alone:

* :meth:`Architecture.tensors` - every parameter tensor ``(name, shape)`` in PyTorch registration
  order (the order of ``module.parameters()`` of the Hugging Face ``transformers`` modeling code
  for that family), so DDP buckets (:func:`costmodel.ddp.bucket_assignment`) are PyTorch's;
* :attr:`Architecture.params` (total) and :attr:`Architecture.active_params` (per token, MoE);
* :meth:`Architecture.activation_bytes_per_token` per layer (Korthikanti et al. 2022);
* :meth:`Architecture.training_flops_per_token` (6N plus attention; PaLM appendix B).

>>> a = load_arch("llama-2-7b")
>>> a.params
6738415616
>>> len(a.tensors())                       # 32 layers x 9 + embedding, final norm, lm_head
291
"""

from __future__ import annotations

import functools
import math
import os
import re
import tomllib
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from ._checks import heads_divide_hidden
from .hardware import Flag, OneLineModel, OneLineValidationError
from .presets import shipped_dir


def _whole(name: str, value: object, unit: str) -> int:
    """``value`` as a whole number >= 1, or a ValueError naming the field and the range.

    A numpy number (an element of an array, a DataFrame cell) is a number too:

    >>> import numpy as np
    >>> _whole("sequence_length", np.int64(4096), "tokens")
    4096
    """
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # type: ignore[attr-defined]
    ndim: int = getattr(value, "ndim", 0)
    if isinstance(value, list | tuple) or ndim:
        # [2048, 4096] are whole numbers >= 1: say that one is taken, not that they are wrong
        raise ValueError(
            f"{name}: one whole number >= 1 {unit} per call (an architecture's activations and "
            f"FLOPs are sized for one configuration), got {value!r}; for several, call once per "
            "value"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        x = math.nan  # text, None, a bool: no number, refused in the range's words
    else:
        x = float(value) if abs(value) < 1e300 else math.inf  # 10**400 overflowed float()
    if name in _SHARED_LIMITS:  # Scenario's and the CLI's range (--seq 1..1e8), in its words:
        from ._limits import LIMITS  # lazy: a layer above the formulas

        # every refusal says that one range (0, 2.5, 1e300 and 1e9 named three different ones)
        if not LIMITS[name].holds(x):
            raise ValueError(f"{name}: must be {LIMITS[name].rule}, got {value!r}")
        return int(x)
    if not x >= 1:
        raise ValueError(f"{name}: must be a whole number >= 1 {unit}, got {value!r}")
    if x > 1e12 or x != int(x):
        raise ValueError(f"{name}: must be a whole number in [1, 1e12] {unit}, got {value!r}")
    return int(x)


_SHARED_LIMITS = ("sequence_length", "micro_batch")
"""The activation recipe's counts with a limit of every surface (:data:`costmodel._limits.LIMITS`):
``training_memory(arch=..., sequence_length=1e12)`` is refused as ``Scenario`` and ``--seq`` refuse
it, not sized."""


Family = Literal["gpt2", "gpt-neox", "llama", "mixtral", "qwen2", "deepseek-v3"]
Recompute = Literal["none", "selective", "selective-op", "selective-layer", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "selective-op", "selective-layer", "full")
"""Activation checkpointing modes (:meth:`Architecture.activation_bytes_per_token`)."""

Loss = Literal["fp32", "fp32-held", "fused"]
"""How the loss is computed (:data:`LOSS_LOGIT_BYTES`)."""
#: The loss's tensors of ``s b V`` logits, in bytes per logit: ``(peak, held)``, ``peak`` the
#: most alive at once at the loss (forward or backward), ``held`` what stays alive for the rest
#: of backward (it meets the recomputed layer there). Derivation: :func:`loss_logits_bytes`.
LOSS_LOGIT_BYTES: dict[str, tuple[float, float]] = {
    "fp32": (12.0, 0.0),
    "fp32-held": (16.0, 4.0),
    "fused": (4.0, 2.0),
}
LOSS_MODES: tuple[str, ...] = tuple(LOSS_LOGIT_BYTES)
"""Loss implementations (:func:`loss_logits_bytes`)."""
DEFAULT_LOSS = "fp32"
"""Plain PyTorch: ``F.cross_entropy(logits.float(), labels)``, the bf16 logits dropped before
backward (torchtitan's train step since 2024-06)."""


def arch_of_params_text(text: str | Architecture) -> Architecture:
    """The architecture a ``params`` argument names (``training_memory("llama-2-7b")``) or is
    (``strategy_step(cm.load_arch("llama-3.1-8b"))``: the object stands where its name does); a
    count written as text (``"7B"``, which ``Scenario`` reads) is refused naming ``params`` and
    the number it means, not as an unknown architecture.

    >>> arch_of_params_text("llama-2-7b").params
    6738415616
    >>> arch_of_params_text("7B")
    Traceback (most recent call last):
    ...
    ValueError: params: '7B' is neither a number nor an architecture name; the API takes numbers in SI units: params=7e+09 (cm.parse_count('7B'))
    """
    if isinstance(text, Architecture):
        return text
    try:
        return load_arch(text)
    except ValueError:
        from .units import text_hint

        hint = text_hint("params", text)
        if not hint:
            raise
        raise ValueError(
            f"params: {text!r} is neither a number nor an architecture name{hint}"
        ) from None


def check_activation_recipe(
    sequence_length: object, micro_batch: object, recompute: object, loss: object
) -> None:
    """Refuse an activation recipe no architecture could use, naming the field and its range.

    The recipe's own checks (:meth:`Architecture.activation_bytes`) run only when activations
    are computed from a shape; a caller that has none (a bare parameter count, or activations
    given in bytes) calls this so that ``recompute="ful"`` or ``micro_batch=0`` is an error
    there too, never silently ignored.

    >>> check_activation_recipe(4096, 1, "full", "fused")
    >>> check_activation_recipe(4096, 1, "ful", "fp32")
    Traceback (most recent call last):
    ...
    ValueError: recompute: unknown 'ful'; allowed: none, selective, selective-op, selective-layer, full
    """
    _whole("sequence_length", sequence_length, "tokens")
    _whole("micro_batch", micro_batch, "sequences")
    if not isinstance(recompute, str) or recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute: unknown {recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}")
    if not isinstance(loss, str) or loss not in LOSS_MODES:
        raise ValueError(f"loss: unknown {loss!r}; allowed: {', '.join(LOSS_MODES)}")


def loss_logits_bytes(tokens: float, vocab: float, loss: str = DEFAULT_LOSS) -> tuple[float, float]:
    r"""Bytes of the loss's logit tensors at its peak, and held through the rest of backward [B].

    .. math:: M_{loss} = c_{peak}\, s b V, \qquad M_{held} = c_{held}\, s b V

    with ``s b`` the tokens of a micro-batch and ``V`` the vocabulary; ``c`` in bytes per logit
    from what PyTorch keeps alive (:data:`LOSS_LOGIT_BYTES`):

    * ``fp32`` (``F.cross_entropy(logits.float(), y)``, the bf16 logits ``del``-ed before
      ``backward``, torchtitan train.py since e29b6b4, 2024-06-12, "del logits ... to save 3.9G
      memory"): ``cross_entropy`` is ``nll_loss(log_softmax(x))`` (PyTorch
      aten/src/ATen/native/LossNLL.cpp ``cross_entropy_loss``). Forward: the bf16 logits
      ``2``, their fp32 copy ``4`` and the log-softmax output ``4``, 10. Backward
      (tools/autograd/derivatives.yaml): ``nll_loss_backward`` writes a dense fp32 gradient
      ``4`` while the log-softmax output ``4`` is saved (``_log_softmax_backward_data`` reads
      its ``result``, not its input), then the log-softmax gradient, a new fp32 tensor ``4``:
      12; the cast's backward (``_to_copy``) makes the bf16 gradient ``2`` once those are
      freed. Peak 12, nothing held after the output layer's backward.
    * ``fp32-held`` (the model returns fp32 logits, kept by the caller through ``backward``:
      torchtitan's model ``self.output(h).float()`` and train step before e29b6b4): the 12 above
      plus the held fp32 logits ``4``, 16; they stay alive through the whole backward.
    * ``fused`` (a fused kernel that upcasts in registers: flash-attention's
      ``flash_attn/ops/triton/cross_entropy.py``, llm-foundry's default ``fused_crossentropy``;
      a ``torch.compile``-d loss, torchtitan since e10cb94, 2024-10-22, "forward and backward
      casts can be fused with the loss"): it saves the bf16 logits ``2`` (and a per-row
      log-sum-exp, ``s b`` fp32, left out) and writes a bf16 gradient ``2``
      (``torch.empty_like(logits)``): 4; the logits stay with the caller's output (Composer's
      ``state.outputs``) through backward, 2.

    >>> loss_logits_bytes(8192 * 2, 128256)[0] / 2**30      # 12 B x 16384 x 128256: GiB
    23.484375
    >>> loss_logits_bytes(10, 100, "fused")
    (4000.0, 2000.0)
    """
    if loss not in LOSS_LOGIT_BYTES:
        raise ValueError(f"loss: unknown {loss!r}; allowed: {', '.join(LOSS_MODES)}")
    peak, held = LOSS_LOGIT_BYTES[loss]
    n = float(tokens) * float(vocab)
    return peak * n, held * n


MAX_TENSORS = 1_000_000
"""Most parameter tensors an :class:`Architecture` may list. Its tensor list is built in full
(one entry per tensor: the buckets, the wrap units and the parameter count read it), so a
config.json with ``num_hidden_layers`` 1e12 (or a billion experts) ran out of memory instead of
being refused; DeepSeek-V3, the largest shipped list, has about 45,000 tensors, and a million
takes tens of seconds to price."""

TENSORS_PER_LAYER_BOUND = 16
"""Parameter tensors of one layer besides its experts, at most, in every family (attention:
up to 7 with MLA's low-rank projections and norms, or 4 plus 3 biases; the MLP's 3 to 4, or a
router and its bias; 2 norms, with biases 4)."""

TENSORS_PER_EXPERT = 3
"""Parameter tensors of one expert: the SwiGLU gate, up and down projections."""


class ArchitectureError(OneLineValidationError):
    """A refused :class:`Architecture`, in one line naming each field and its allowed range
    (``layers: Input should be greater than or equal to 1; allowed: [1, inf) (got 0)``), as
    :class:`costmodel.hardware.HardwareError` says a GPU's; still a ``ValidationError``."""


class Architecture(OneLineModel):
    """Shape of a decoder-only transformer, with its citation (frozen, strict).

    Families and their Hugging Face modeling code (tensor names and registration order):
    ``gpt2`` (GPT2LMHeadModel: learned positions, LayerNorm with bias, fused c_attn Conv1D,
    GeLU MLP with biases), ``gpt-neox`` (GPTNeoXForCausalLM: rotary positions, LayerNorm with
    bias, fused query_key_value, GeLU MLP with biases, untied embed_in/embed_out), ``llama``
    (LlamaForCausalLM, also Mistral: RMSNorm, SwiGLU, GQA, no
    biases), ``qwen2`` (Qwen2ForCausalLM: as llama plus q/k/v biases), ``mixtral``
    (MixtralForCausalLM: router ``gate`` then ``experts`` w1/w2/w3), ``deepseek-v3``
    (DeepseekV3ForCausalLM: MLA attention, ``dense_layers`` dense MLPs then routed + shared
    experts with a sigmoid router carrying ``e_score_correction_bias``).
    """

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", allow_inf_nan=False)
    one_line_error: ClassVar[type[OneLineValidationError]] = ArchitectureError

    name: str
    description: str
    family: Family
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    ffn: int = Field(ge=1, description="intermediate size of a dense MLP")
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int | None = Field(default=None, ge=1, description="default hidden / heads")
    vocab: int = Field(ge=1)
    tied_embeddings: Flag
    max_positions: int | None = Field(
        default=None,
        ge=1,
        description="trained context length [tokens]: the learned position table (gpt2, its "
        "rows) or the config's max_position_embeddings (rotary); None: not known",
    )
    rope_scaled_positions: int | None = Field(
        default=None,
        ge=1,
        description="context its config's rope_scaling gives [tokens]: factor x the original "
        "context (YaRN, linear, dynamic, llama3); None: no scaling in the config",
    )
    rope_scaling: str | None = Field(
        default=None, description="the config's rope_scaling, as said in a note (yarn x4)"
    )
    experts: int = Field(default=0, ge=0, description="routed experts per MoE layer")
    experts_per_token: int = Field(default=0, ge=0)
    shared_experts: int = Field(default=0, ge=0)
    expert_ffn: int | None = Field(default=None, ge=1, description="default ffn")
    dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP")
    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    qk_nope_head_dim: int | None = Field(default=None, ge=1)
    qk_rope_head_dim: int | None = Field(default=None, ge=1)
    v_head_dim: int | None = Field(default=None, ge=1)
    sliding_window: int | None = Field(
        default=None,
        ge=1,
        description="causal sliding-window attention span [tokens]: a query attends its last "
        "sliding_window keys, itself included (Mistral's sliding_window); None: full attention",
    )
    window_layers: int | None = Field(
        default=None,
        ge=0,
        description="layers that attend through sliding_window (Qwen2: those from "
        "max_window_layers on); None: every layer",
    )
    config_notes: tuple[str, ...] = Field(
        default=(),
        description="what reading its config.json assumed (a key not in the file, taken at "
        "transformers' default) or left out; said beside every answer",
    )
    published_params: float = Field(gt=0, description="published total parameter count")
    published_active_params: float | None = Field(default=None, gt=0)
    published_params_source: str
    source: str

    @model_validator(mode="after")
    def _check(self) -> Architecture:
        per_layer = TENSORS_PER_LAYER_BOUND + TENSORS_PER_EXPERT * (
            self.experts + self.shared_experts
        )
        if self.layers * per_layer > MAX_TENSORS:  # before anything builds the tensor list
            each = (
                f"{TENSORS_PER_LAYER_BOUND} + {TENSORS_PER_EXPERT} x "
                f"{self.experts + self.shared_experts:,} experts"
                if self.experts
                else f"{TENSORS_PER_LAYER_BOUND}"
            )
            raise ValueError(
                f"layers: {self.layers:,} layers of up to {each} parameter tensors each make "
                f"{float(self.layers * per_layer):.3g} tensors; an architecture lists at most "
                f"{MAX_TENSORS:,} (DeepSeek-V3 has about 45,000)"
            )
        if self.family == "gpt2" and self.max_positions is None:  # it sizes the table wpe
            raise ValueError("max_positions: a gpt2 architecture needs its position table's rows")
        if self.head_dim is None:  # the head dimension is hidden / heads: whole
            heads_divide_hidden(self.hidden, self.heads)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads: must divide the {self.heads} `heads`, got {self.kv_heads}")
        if self.family in ("mixtral", "deepseek-v3") and not (
            self.experts and self.experts_per_token
        ):
            raise ValueError(f"experts: a {self.family} architecture needs experts >= 1")
        if self.experts_per_token > self.experts:
            raise ValueError("experts_per_token: must be <= experts")
        if self.window_layers is not None and self.window_layers > self.layers:
            raise ValueError(
                f"window_layers: must be at most the {self.layers} layers, got {self.window_layers}"
            )
        mla = (self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim)
        if self.family == "deepseek-v3" and None in mla:
            raise ValueError("kv_lora_rank: deepseek-v3 needs the MLA dims (kv_lora_rank, ...)")
        return self

    # --- shape helpers ---------------------------------------------------------------------
    @property
    def dim_head(self) -> int:
        """Head dimension [-]: ``head_dim`` or ``hidden / heads``."""
        return self.head_dim or self.hidden // self.heads

    @property
    def moe(self) -> bool:
        """Whether the MLPs (after ``dense_layers``) are mixtures of experts."""
        return self.experts > 0

    def _expert_ffn(self) -> int:
        return self.expert_ffn or self.ffn

    # --- tensors ---------------------------------------------------------------------------
    def tensors(self) -> list[tuple[str, tuple[int, ...]]]:
        """Every parameter tensor ``(name, shape)`` in PyTorch registration order.

        Shapes are ``nn.Linear`` ``(out, in)`` except GPT-2's ``Conv1D`` ``(in, out)``. A tied
        ``lm_head`` is the embedding tensor and is not listed again (``module.parameters()``
        yields a shared tensor once). DeepSeek-V3's multi-token-prediction module is left out
        (it is not part of the 671B main model; DeepSeek-V3 report, section 2.2).
        """
        h, v = self.hidden, self.vocab
        out: list[tuple[str, tuple[int, ...]]] = []
        if self.family == "gpt2":
            out += [
                ("transformer.wte.weight", (v, h)),
                ("transformer.wpe.weight", (int(self.max_positions or 0), h)),
            ]
            for i in range(self.layers):
                p = f"transformer.h.{i}"
                out += [
                    (f"{p}.ln_1.weight", (h,)),
                    (f"{p}.ln_1.bias", (h,)),
                    (f"{p}.attn.c_attn.weight", (h, 3 * h)),
                    (f"{p}.attn.c_attn.bias", (3 * h,)),
                    (f"{p}.attn.c_proj.weight", (h, h)),
                    (f"{p}.attn.c_proj.bias", (h,)),
                    (f"{p}.ln_2.weight", (h,)),
                    (f"{p}.ln_2.bias", (h,)),
                    (f"{p}.mlp.c_fc.weight", (h, self.ffn)),
                    (f"{p}.mlp.c_fc.bias", (self.ffn,)),
                    (f"{p}.mlp.c_proj.weight", (self.ffn, h)),
                    (f"{p}.mlp.c_proj.bias", (h,)),
                ]
            out += [("transformer.ln_f.weight", (h,)), ("transformer.ln_f.bias", (h,))]
            if not self.tied_embeddings:
                out.append(("lm_head.weight", (v, h)))
            return out
        if self.family == "gpt-neox":
            return self._neox_tensors()
        out.append(("model.embed_tokens.weight", (v, h)))
        for i in range(self.layers):
            p = f"model.layers.{i}"
            out += self._attention(f"{p}.self_attn")
            out += self._mlp(f"{p}", i)
            out += [
                (f"{p}.input_layernorm.weight", (h,)),
                (f"{p}.post_attention_layernorm.weight", (h,)),
            ]
        out.append(("model.norm.weight", (h,)))
        if not self.tied_embeddings:
            out.append(("lm_head.weight", (v, h)))
        return out

    def _neox_tensors(self) -> list[tuple[str, tuple[int, ...]]]:
        """GPTNeoXForCausalLM's parameters (``nn.Linear`` ``(out, in)``), registration order."""
        h, v, f = self.hidden, self.vocab, self.ffn
        out: list[tuple[str, tuple[int, ...]]] = [("gpt_neox.embed_in.weight", (v, h))]
        for i in range(self.layers):
            p = f"gpt_neox.layers.{i}"
            out += [
                (f"{p}.input_layernorm.weight", (h,)),
                (f"{p}.input_layernorm.bias", (h,)),
                (f"{p}.post_attention_layernorm.weight", (h,)),
                (f"{p}.post_attention_layernorm.bias", (h,)),
                (f"{p}.attention.query_key_value.weight", (3 * h, h)),
                (f"{p}.attention.query_key_value.bias", (3 * h,)),
                (f"{p}.attention.dense.weight", (h, h)),
                (f"{p}.attention.dense.bias", (h,)),
                (f"{p}.mlp.dense_h_to_4h.weight", (f, h)),
                (f"{p}.mlp.dense_h_to_4h.bias", (f,)),
                (f"{p}.mlp.dense_4h_to_h.weight", (h, f)),
                (f"{p}.mlp.dense_4h_to_h.bias", (h,)),
            ]
        out += [
            ("gpt_neox.final_layer_norm.weight", (h,)),
            ("gpt_neox.final_layer_norm.bias", (h,)),
        ]
        if not self.tied_embeddings:
            out.append(("embed_out.weight", (v, h)))
        return out

    def _attention(self, p: str) -> list[tuple[str, tuple[int, ...]]]:
        h, d = self.hidden, self.dim_head
        q, kv = self.heads * d, self.kv_heads * d
        if self.family == "deepseek-v3":
            assert self.kv_lora_rank and self.qk_nope_head_dim and self.qk_rope_head_dim
            assert self.v_head_dim
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            out: list[tuple[str, tuple[int, ...]]] = []
            if self.q_lora_rank:
                out += [
                    (f"{p}.q_a_proj.weight", (self.q_lora_rank, h)),
                    (f"{p}.q_a_layernorm.weight", (self.q_lora_rank,)),
                    (f"{p}.q_b_proj.weight", (self.heads * qk, self.q_lora_rank)),
                ]
            else:
                out.append((f"{p}.q_proj.weight", (self.heads * qk, h)))
            return out + [
                (f"{p}.kv_a_proj_with_mqa.weight", (self.kv_lora_rank + self.qk_rope_head_dim, h)),
                (f"{p}.kv_a_layernorm.weight", (self.kv_lora_rank,)),
                (
                    f"{p}.kv_b_proj.weight",
                    (self.heads * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank),
                ),
                (f"{p}.o_proj.weight", (h, self.heads * self.v_head_dim)),
            ]
        bias = self.family == "qwen2"
        out = [(f"{p}.q_proj.weight", (q, h))]
        out += [(f"{p}.q_proj.bias", (q,))] if bias else []
        out += [(f"{p}.k_proj.weight", (kv, h))]
        out += [(f"{p}.k_proj.bias", (kv,))] if bias else []
        out += [(f"{p}.v_proj.weight", (kv, h))]
        out += [(f"{p}.v_proj.bias", (kv,))] if bias else []
        return out + [(f"{p}.o_proj.weight", (h, q))]

    def _mlp(self, p: str, layer: int) -> list[tuple[str, tuple[int, ...]]]:
        h = self.hidden

        def swiglu(
            q: str, f: int, names: tuple[str, str, str]
        ) -> list[tuple[str, tuple[int, ...]]]:
            g, u, d = names
            return [
                (f"{q}.{g}.weight", (f, h)),
                (f"{q}.{u}.weight", (f, h)),
                (f"{q}.{d}.weight", (h, f)),
            ]

        std = ("gate_proj", "up_proj", "down_proj")
        if self.family == "mixtral":
            q = f"{p}.block_sparse_moe"
            f = self._expert_ffn()
            out: list[tuple[str, tuple[int, ...]]] = [(f"{q}.gate.weight", (self.experts, h))]
            for e in range(self.experts):  # MixtralBlockSparseTop2MLP: w1 gate, w2 down, w3 up
                x = f"{q}.experts.{e}"
                out += [
                    (f"{x}.w1.weight", (f, h)),
                    (f"{x}.w2.weight", (h, f)),
                    (f"{x}.w3.weight", (f, h)),
                ]
            return out
        if self.family == "deepseek-v3" and layer >= self.dense_layers:
            q = f"{p}.mlp"
            out = []
            for e in range(self.experts):
                out += swiglu(f"{q}.experts.{e}", self._expert_ffn(), std)
            out += [
                (f"{q}.gate.weight", (self.experts, h)),
                (f"{q}.gate.e_score_correction_bias", (self.experts,)),
            ]
            if self.shared_experts:
                out += swiglu(f"{q}.shared_experts", self._expert_ffn() * self.shared_experts, std)
            return out
        return swiglu(f"{p}.mlp", self.ffn, std)

    # --- counts ----------------------------------------------------------------------------
    @functools.cached_property
    def tensor_sizes(self) -> list[int]:
        """Elements of each tensor of :meth:`tensors`, registration order [-]."""
        sizes = []
        for _, shape in self.tensors():
            n = 1
            for d in shape:
                n *= d
            sizes.append(n)
        return sizes

    @functools.cached_property
    def params(self) -> int:
        """Total parameters ``P`` [-]: the sum over :meth:`tensors` (tied embeddings once)."""
        return sum(self.tensor_sizes)

    @property
    def active_params(self) -> int:
        """Parameters a token passes through [-]: all, less the routed experts it skips.

        .. math:: P_{active} = P - L_{moe} (E - k)\\, 3 h f_e
        """
        if not self.moe:
            return self.params
        moe_layers = self.layers - self.dense_layers
        per_expert = 3 * self.hidden * self._expert_ffn()
        return self.params - moe_layers * (self.experts - self.experts_per_token) * per_expert

    @functools.cached_property
    def dense_stand_in(self) -> Architecture:
        r"""The dense model of this one's active size: the same architecture with each MoE
        layer holding only the ``k`` routed experts a token passes through
        (``experts = experts_per_token``; shared experts, attention, dense layers, embeddings
        kept). A dense architecture, or a mixture whose tokens pass through every expert, is
        its own stand-in.

        .. math:: P_{stand-in} = P_{active} - L_{moe} (E - k)\,(h + b)

        ``L_moe`` the MoE layers, ``E`` the routed experts, ``k`` those per token, ``h`` the
        hidden size, ``b`` 1 where the router carries a bias per expert (DeepSeek-V3's
        ``e_score_correction_bias``), else 0. The difference is the router: a token scores
        every one of the ``E`` experts, so the MoE's active parameters count its ``E`` rows,
        while the stand-in's router has ``k`` (mixtral-8x7b: 786,432 of 12.9B parameters,
        0.006 %; deepseek-v3: 103M of 37.6B, 0.27 %). The router is one ``E x h`` matmul
        beside the experts' ``3 h f_e`` each; it is left as the stand-in's own.

        The step's compute per micro-batch is calibrated on it
        (:func:`costmodel.strategy.step._calibrated_micro_s`): the fitted efficiency is of
        dense models, whose one-node step gathers and reduces their own weights.

        >>> a = load_arch("mixtral-8x7b")
        >>> d = a.dense_stand_in
        >>> d.experts, d.params == d.active_params, a.active_params - d.params == 32 * 6 * a.hidden
        (2, True, True)
        """
        if not self.moe or self.experts_per_token == self.experts:
            return self
        k, e = self.experts_per_token, self.experts
        fields = {
            **self.model_dump(),
            "name": f"{self.name} dense stand-in ({k} of {e} experts)",
            "description": f"{self.name} with only the {k} routed experts a token passes through "
            "in each MoE layer: the dense model of its active size",
            "experts": k,
            "published_active_params": None,
            "published_params_source": "counted: the stand-in's own tensors",
        }
        cut = type(self).model_validate(fields)  # validated afresh: params is cached
        return type(self).model_validate({**fields, "published_params": float(cut.params)})

    @property
    def embedding_params(self) -> int:
        """Parameters used as lookups, not matmuls [-]: the input (and position) embeddings.

        A tied embedding is also the output projection, a matmul, so it is not counted here.
        """
        pos = int(self.max_positions or 0) * self.hidden if self.family == "gpt2" else 0
        return pos + (0 if self.tied_embeddings else self.vocab * self.hidden)

    @functools.cached_property
    def head_params(self) -> int:
        r"""Parameters counted in ``N`` (:meth:`training_flops_per_token`) outside every
        transformer block [-]: the output projection (``V h``, tied or untied: a tied embedding
        is also the output projection's matmul) and the final norm.

        .. math:: P_{head} = P_{outside} - P_{emb}

        ``P_outside`` the tensors of :meth:`tensors` in no block (``transformer.h.<i>``,
        ``model.layers.<i>``, ``gpt_neox.layers.<i>``), ``P_emb`` :attr:`embedding_params`
        (lookups, not in ``N``). Activation checkpointing wraps the blocks
        (``torch.utils.checkpoint`` around each layer; FSDP's ``apply_activation_checkpointing``
        with a block ``check_fn``; torchtitan's ``apply_ac`` wraps each ``TransformerBlock``),
        so ``6 P_head`` FLOPs per token are the matmul work recomputation never reruns
        (:func:`costmodel.compute.recompute_extra`).

        >>> a = load_arch("llama-3.1-8b")                 # untied lm_head and model.norm
        >>> a.head_params == a.vocab * a.hidden + a.hidden
        True
        """
        outside = sum(
            n
            for (name, _), n in zip(self.tensors(), self.tensor_sizes, strict=True)
            if not _BLOCK_TENSOR.match(name)
        )
        return outside - self.embedding_params

    # --- activations ---------------------------------------------------------------------
    def _attention_widths(self) -> tuple[float, float, float, float]:
        r"""Per-token widths of attention's ``(Q, K, V, O)`` across all heads [elements].

        Multi-head and grouped-query attention: ``Q = O = H d``, ``K = V = H_kv d`` (``d``
        :attr:`dim_head`). Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, section
        2.1.2; DeepSeek-V3, arXiv:2412.19437, section 2.1.1; ``DeepseekV3Attention`` in
        ``transformers``): queries and keys carry a no-position part and a rotary part,
        ``Q = K = H (d_nope + d_rope)``, values and the attention output
        ``V = O = H d_v``; ``hidden / heads`` (56 for DeepSeek-V3) is no width of it.

        >>> load_arch("deepseek-v3")._attention_widths()
        (24576.0, 24576.0, 16384.0, 16384.0)
        """
        if self.family == "deepseek-v3":
            assert self.qk_nope_head_dim and self.qk_rope_head_dim and self.v_head_dim
            qk = float(self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim))
            v = float(self.heads * self.v_head_dim)
            return qk, qk, v, v
        d = float(self.dim_head)
        return self.heads * d, self.kv_heads * d, self.kv_heads * d, self.heads * d

    def _mla_latent_bytes(self) -> float:
        r"""Bytes per token MLA's low-rank latents keep for backward (16-bit) [B], 0 without MLA.

        .. math:: a_{lat} = 2 \cdot 2 r_q + 2 (r_{kv} + d_{rope}) + 2 r_{kv}

        ``q_a_proj``'s output (``r_q`` wide, ``q_lora_rank``: the input of ``q_a_layernorm``)
        and the normed latent (``q_b_proj``'s input); ``kv_a_proj_with_mqa``'s output
        (``r_kv + d_rope``: ``kv_a_layernorm``'s and the shared rotary key's input) and the
        normed ``r_kv`` latent (``kv_b_proj``'s input). The norms' inputs as Korthikanti et al.
        2022 (section 4.1) count a LayerNorm's; DeepSeek-V2, arXiv:2405.04434, eqs. (9)-(13)
        and (37)-(40) for the shapes.
        """
        if self.family != "deepseek-v3":
            return 0.0
        assert self.kv_lora_rank and self.qk_rope_head_dim
        q = 4.0 * self.q_lora_rank if self.q_lora_rank else 0.0
        return q + 2.0 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2.0 * self.kv_lora_rank

    def _layer_activation_bytes(self, layer: int, sequence_length: int, flash: bool) -> float:
        r"""Bytes one layer stores per token for backward with nothing recomputed [B].

        .. math::
            a = 4h + \big[2h + 2(Q + K + V) + 2 O + a_{lat}\big]
                + \big[2h + c f\big] + m + 5 H s\,[\text{no flash}]

        Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
        arXiv:2205.05198, section 4.1, term by term with this architecture's widths (16-bit
        activations): the two norm inputs ``4h``; attention ``2h`` (projection input) +
        ``2(Q + K + V)`` (the inputs of the score and context matmuls) + ``2 O`` (attention
        output, the output projection's input), widths from :meth:`_attention_widths` (MLA's
        192-wide queries and keys and 128-wide values for DeepSeek-V3), plus MLA's latents
        ``a_lat`` (:meth:`_mla_latent_bytes`); the MLP's input ``2h`` plus ``c f`` with ``c = 4``
        for a GeLU MLP (GeLU input and output) or ``8`` for a gated one (gate and up outputs,
        the activation's output, their product); for a GPT layer the dropout masks
        ``m = h + h`` (Korthikanti's ``34h`` for ``f = 4h``, ``Q = K = V = O = h``). Gated
        families train without dropout (Llama, Mixtral, Qwen2, DeepSeek-V3 configs) and keep
        no masks. An MoE layer's MLP counts the ``k`` routed experts a token passes through and
        the shared experts. Without FlashAttention the ``s x s`` scores, softmax and dropout
        add ``5 H s`` (eq. (1)); FlashAttention stores only O and the softmax statistics (Dao
        et al. 2022, arXiv:2205.14135, section 3.1), so a sliding window (:attr:`sliding_window`)
        changes none of it: no score matrix is stored with or without one.
        """
        h = float(self.hidden)
        q, k, v, o = self._attention_widths()
        gpt = self.family in ("gpt2", "gpt-neox")  # GeLU MLP
        moe_layer = self.moe and layer >= self.dense_layers
        f = (
            float(self._expert_ffn()) * (self.experts_per_token + self.shared_experts)
            if moe_layer
            else float(self.ffn)
        )
        attn = 2 * h + 2 * (q + k + v) + 2 * o + self._mla_latent_bytes()
        mlp = 2 * h + (4 * f if gpt else 8 * f)
        masks = 2 * h if self.family == "gpt2" else 0.0  # GPT-NeoX trains without dropout
        scores = 0.0 if flash else 5.0 * self.heads * sequence_length
        return 4 * h + attn + mlp + masks + scores

    def _matmul_output_bytes(self, layer: int) -> float:
        r"""Bytes per token of every matmul output of one layer (16-bit) [B].

        .. math:: 2\,(W_{attn} + h + W_{mlp})

        ``W_attn`` the projections' outputs: ``Q + K + V`` (:meth:`_attention_widths`), or for
        MLA ``q_a_proj`` ``r_q``, ``q_b_proj`` ``H (d_nope + d_rope)``, ``kv_a_proj_with_mqa``
        ``r_kv + d_rope`` and ``kv_b_proj`` ``H (d_nope + d_v)`` (DeepSeek-V2,
        arXiv:2405.04434, section 2.1.2); ``h`` the output projection's; ``W_mlp`` the MLP's,
        ``f + h`` (GeLU) or ``2f + h`` (gated). The selective-op recipe keeps half of them.
        """
        h = float(self.hidden)
        if self.family == "deepseek-v3":
            assert self.kv_lora_rank and self.qk_nope_head_dim and self.qk_rope_head_dim
            assert self.v_head_dim
            qk = self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
            proj = float(
                (self.q_lora_rank or 0)
                + qk
                + self.kv_lora_rank
                + self.qk_rope_head_dim
                + self.heads * (self.qk_nope_head_dim + self.v_head_dim)
            )
        else:
            q, k, v, _ = self._attention_widths()
            proj = q + k + v
        moe_layer = self.moe and layer >= self.dense_layers
        f = (
            float(self._expert_ffn()) * (self.experts_per_token + self.shared_experts)
            if moe_layer
            else float(self.ffn)
        )
        mlp = f + h if self.family in ("gpt2", "gpt-neox") else 2 * f + h
        return 2.0 * (proj + h + mlp)

    def activation_bytes_per_token(
        self,
        sequence_length: int,
        *,
        flash_attention: bool = True,
        recompute: Recompute = "none",
        ac_every: int = 2,
    ) -> float:
        r"""Activation bytes the layers keep per token for backward, averaged per layer [B].

        With ``a`` the full layer (:meth:`_layer_activation_bytes`, Korthikanti et al. 2022,
        section 4.1) and ``2h`` a layer's input:

        * ``none``: ``a``;
        * ``selective`` (Korthikanti et al. section 5: recompute the attention core): ``a``
          less the ``5 a s`` scores term (nothing left to drop with FlashAttention);
        * ``selective-op`` (torchtitan's op-level SAC: keep every matmul output except every
          second ``mm``, keep the attention output, recompute the element-wise ops):
          ``2h + 2 O +`` half the matmul outputs;
        * ``selective-layer`` (every ``ac_every``-th block checkpointed, torchtitan's
          ``selective_ac_option = "2"``): ``(1 - 1/k) a + (1/k) 2h``;
        * ``full`` (every block checkpointed; llm-foundry ``activation_checkpointing: true``,
          torchtitan ``mode = "full"``): ``2h``.

        >>> a = load_arch("gpt2-124m")
        >>> a.activation_bytes_per_token(1024) / a.hidden           # Korthikanti's 34 h
        34.0
        >>> a.activation_bytes_per_token(1024, recompute="full") / a.hidden
        2.0
        """
        if recompute not in RECOMPUTE_MODES:
            raise ValueError(
                f"recompute: unknown {recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}"
            )
        from ._checks import flag

        flash_attention = flag("flash_attention", flash_attention)
        sequence_length = _whole("sequence_length", sequence_length, "tokens")
        k = _whole("ac_every", ac_every, "blocks")
        total = 0.0
        for i in range(self.layers):
            full = self._layer_activation_bytes(i, sequence_length, flash_attention)
            total += self._layer_mode_bytes(i, full, sequence_length, recompute, k)
        return total / self.layers

    def _layer_mode_bytes(self, i: int, full: float, s: int, recompute: str, k: int) -> float:
        h = float(self.hidden)
        if recompute == "none":
            return full
        if recompute == "selective":
            return self._layer_activation_bytes(i, s, True)  # the layer without its scores
        if recompute == "selective-op":
            o = self._attention_widths()[3]  # the attention output, kept
            return min(full, 2 * h + 2 * o + 0.5 * self._matmul_output_bytes(i))
        if recompute == "selective-layer":
            return (1.0 - 1.0 / k) * full + (1.0 / k) * 2 * h
        return 2 * h

    def activation_bytes(
        self,
        sequence_length: int,
        micro_batch: int = 1,
        *,
        flash_attention: bool = True,
        recompute: Recompute = "none",
        ac_every: int = 2,
        loss: Loss = "fp32",
    ) -> float:
        r"""Activation memory of one micro-batch on one GPU, whole model, at its peak [B].

        .. math::
            A = s\, b\, \Big[\sum_l a_l^{mode} + 5 h
                + \max\big(c_{peak} V,\ (a - a^{mode})_{max} + c_{held} V\big)\Big]

        The layers (:meth:`activation_bytes_per_token` times ``L``), the embedding dropout mask
        ``sbh`` and final-norm and output-projection inputs ``4 sbh`` (Korthikanti et al. 2022,
        section 4.1, "input embeddings and output layer"), then the larger of two moments that
        are not alive at once: the loss at its peak, ``c_peak sbV`` (:func:`loss_logits_bytes`,
        ``loss`` its implementation: ``fp32`` 12 B per logit by default), and later in backward
        the one layer being recomputed when checkpointing (its full activations exist again
        while its backward runs) beside the logits the loss still holds, ``c_held sbV``.
        """
        p = self.activation_parts(
            sequence_length,
            micro_batch,
            flash_attention=flash_attention,
            recompute=recompute,
            ac_every=ac_every,
            loss=loss,
        )
        return (
            p["layers"]
            + p["output_layer"]
            + max(p["loss_peak"], p["recomputed_layer"] + p["loss_held"])
        )

    def activation_parts(
        self,
        sequence_length: int,
        micro_batch: int = 1,
        *,
        flash_attention: bool = True,
        recompute: Recompute = "none",
        ac_every: int = 2,
        loss: Loss = "fp32",
    ) -> dict[str, float]:
        """The terms of :meth:`activation_bytes`, each for the whole micro-batch [B]:
        ``layers`` (``sb sum_l a_l``), ``output_layer`` (``5 sbh``), ``recomputed_layer``
        (``sb (a - a^mode)_max``, 0 without checkpointing), ``loss_peak`` and ``loss_held``
        (:func:`loss_logits_bytes`).

        >>> p = load_arch("llama-3.1-8b").activation_parts(8192, 2, recompute="selective-op")
        >>> round(p["loss_peak"] / 2**30, 2), p["loss_held"]      # 12 B x 16384 x 128256
        (23.48, 0.0)
        """
        micro_batch = _whole("micro_batch", micro_batch, "sequences")
        per = self.activation_bytes_per_token(
            sequence_length, flash_attention=flash_attention, recompute=recompute, ac_every=ac_every
        )
        regen = 0.0
        if recompute != "none":
            full = max(
                self._layer_activation_bytes(i, sequence_length, flash_attention)
                for i in {0, self.layers - 1}
            )
            regen = max(0.0, full - per)
        tokens = float(sequence_length) * micro_batch
        peak, held = loss_logits_bytes(tokens, self.vocab, loss)
        return {
            "layers": tokens * self.layers * per,
            "output_layer": tokens * 5.0 * self.hidden,
            "recomputed_layer": tokens * regen,
            "loss_peak": peak,
            "loss_held": held,
        }

    # --- FLOPs -----------------------------------------------------------------------------
    def training_flops_per_token(self, sequence_length: int) -> float:
        r"""Training FLOPs per token, forward + backward [FLOP].

        .. math:: C = 6 N + 12\, H\, Q \big[(L - L_w)\, T + L_w\, T_w\big]

        ``N`` the active non-embedding parameters (matmul weights a token passes through: the
        output projection counts, lookups do not), ``L`` layers, ``H`` heads, ``Q`` head dim
        (the query/key dim for MLA), ``T`` the sequence length. Chowdhery et al. 2022 (PaLM),
        arXiv:2204.02311, appendix B; the ``6N`` is Kaplan et al. 2020, arXiv:2001.08361,
        section 2.1 (also Hoffmann et al. 2022, Chinchilla, appendix F). The causal mask is not
        credited (as PaLM's MFU). ``L_w`` layers attend through a sliding window of ``W``
        tokens (:attr:`sliding_window`, :attr:`window_layers`), the others all ``T`` keys;
        ``T_w`` is :func:`windowed_span` (``T`` when ``W >= T``).

        >>> round(load_arch("llama-2-7b").training_flops_per_token(4096) / 1e9, 1)
        46.1
        >>> round(load_arch("mistral-7b").training_flops_per_token(32768) / 1e9, 1)  # W 4096
        54.8
        """
        sequence_length = _whole("sequence_length", sequence_length, "tokens")
        n = self.active_params - self.embedding_params
        q = (
            (self.qk_nope_head_dim or 0) + (self.qk_rope_head_dim or 0)
            if self.family == "deepseek-v3"
            else self.dim_head
        )
        t = float(sequence_length)
        windowed = self.windowed_layers
        span = (self.layers - windowed) * t + windowed * windowed_span(
            sequence_length, self.sliding_window
        )
        return 6.0 * n + 12.0 * self.heads * q * span

    @property
    def windowed_layers(self) -> int:
        """Layers that attend through :attr:`sliding_window` [-]: 0 without a window,
        :attr:`window_layers` when given, else every layer."""
        if self.sliding_window is None:
            return 0
        return self.layers if self.window_layers is None else self.window_layers


def windowed_span(sequence_length: int, window: int | None) -> float:
    r"""Keys per query in the PaLM attention count under a causal sliding window [tokens].

    .. math::
        T_w = T \frac{\sum_{i=1}^{T} \min(i, W)}{\sum_{i=1}^{T} i}
            = \frac{W (2T - W + 1)}{T + 1} \quad (W < T), \qquad T_w = T \quad (W \ge T)

    The query at position ``i`` (1-based) attends ``min(i, W)`` keys, itself included: Mistral
    7B's sliding window (Jiang et al. 2023, arXiv:2310.06825, section 2: "each hidden state
    can access up to W tokens"; ``transformers``' sliding-window mask keeps key ``j`` for query
    ``i`` when ``i - W < j <= i``; flash-attn's ``window_size=(W - 1, 0)``). A windowed kernel
    computes only those (query, key) pairs, ``sum_i min(i, W) = W(W+1)/2 + (T - W) W`` of them
    where full causal attention has ``T(T+1)/2``. PaLM's count (``12 L H Q T``,
    :meth:`Architecture.training_flops_per_token`) credits no causal mask, so the window keeps
    that convention: ``T`` scaled by the windowed share of the causal pairs, continuous at
    ``W = T``.

    >>> round(windowed_span(32768, 4096), 2)
    7679.89
    >>> windowed_span(4096, 4096), windowed_span(4096, None)
    (4096.0, 4096.0)
    """
    t = float(sequence_length)
    if window is None or window >= sequence_length:
        return t
    w = float(window)
    return w * (2.0 * t - w + 1.0) / (t + 1.0)


#: A tensor of a transformer block (:meth:`Architecture.tensors`' names): GPT-2's
#: ``transformer.h.<i>.``, Llama-style ``model.layers.<i>.``, GPT-NeoX's ``gpt_neox.layers.<i>.``.
_BLOCK_TENSOR = re.compile(r"^(?:transformer\.h|model\.layers|gpt_neox\.layers)\.\d+\.")


@functools.lru_cache(maxsize=1)
def _width_rule() -> tuple[float, float]:
    """``(a, b)`` of ``log h = a + b log P``, least squares over the shipped dense presets."""
    import math

    pts = [(math.log(x.params), math.log(x.hidden)) for x in _all().values() if not x.moe]
    n = len(pts)
    mx = sum(p for p, _ in pts) / n
    my = sum(h for _, h in pts) / n
    b = sum((p - mx) * (h - my) for p, h in pts) / sum((p - mx) ** 2 for p, _ in pts)
    return my - b * mx, b


def architecture_for_params(params: float) -> Architecture:
    r"""A dense transformer of about ``params`` parameters, for a bare parameter count [-].

    So that bucketing (DDP ``bucket_cap``) and wrap units (FSDP) see layers of a realistic size
    when only a count is known. The rule, documented and fitted rather than chosen:

    * hidden size ``h = e^a P^b``, with ``(a, b)`` the least-squares fit of ``log h`` on
      ``log P`` over the shipped dense presets (GPT-2 124M ... Llama 3.1 405B, MPT), rounded to
      a multiple of 128 (>= 128);
    * a Llama layer (Touvron et al. 2023, arXiv:2302.13971): heads of 128, multi-head
      attention, SwiGLU MLP of width ``8h/3`` rounded up to 256, vocabulary 32000, untied
      embeddings, so a layer holds ``4h^2 + 3 h f + 2h`` parameters;
    * layers: the whole number that brings the total closest to ``params`` (>= 1).

    >>> a = architecture_for_params(7e9)
    >>> a.layers, a.hidden, round(a.params / 7e9, 2)
    (41, 3712, 1.01)
    """
    p = float(params)
    if not (math.isfinite(p) and 1e6 <= p <= 1e13):
        raise ValueError(f"params: must be a parameter count in [1e6, 1e13], got {params!r}")
    return _architecture_for_count(p)


@functools.lru_cache(maxsize=256)
def _architecture_for_count(p: float) -> Architecture:
    """:func:`architecture_for_params` of a checked count, one instance per count: the class is
    frozen, so its cached tensor sizes are worked out once per count, not once per call (a
    step asks for them a few dozen times, an advisor's table a few thousand)."""
    a, b = _width_rule()
    h = max(128, int(round(math.exp(a + b * math.log(p)) / 128.0)) * 128)
    f = int(math.ceil(8 * h / 3 / 256.0)) * 256
    vocab = 32000
    per_layer = 4 * h * h + 3 * h * f + 2 * h
    fixed = 2 * vocab * h + h
    layers = max(1, int(round((p - fixed) / per_layer)))
    return Architecture(
        name=f"dense-{p / 1e9:.3g}b",
        description=f"a dense Llama-style transformer of about {p:.3g} parameters (bare count)",
        family="llama",
        layers=layers,
        hidden=h,
        ffn=f,
        heads=h // 128,
        kv_heads=h // 128,
        vocab=vocab,
        tied_embeddings=False,
        max_positions=None,  # no model's context: a bare count is not said to run past one
        published_params=p,
        published_params_source="the parameter count given (no published model)",
        source="costmodel.architecture.architecture_for_params (width fitted over the presets)",
    )


def moe_data_parallel_note(arch: str | Architecture) -> str | None:
    """What a data-parallel-only answer leaves out for a mixture-of-experts model; None if dense.

    Real MoE training shards the experts over GPUs (expert parallelism): each MoE layer sends
    every token to the GPUs holding its ``k`` experts and back, an all-to-all dispatch and an
    all-to-all combine in the forward and again in the backward (GShard, Lepikhin et al. 2020,
    arXiv:2006.16668, section 2.2; DeepSeek-V3 report, arXiv:2412.19437, section 3.2). A
    data-parallel step prices the compute of the active parameters but (i) keeps every expert
    on every GPU (memory and gradient traffic of all ``P`` parameters), (ii) has no all-to-all
    time, (iii) assumes balanced routing. The engine, CLI and app show this line next to an MoE
    answer.

    >>> moe_data_parallel_note("llama-3.1-8b") is None
    True
    >>> "all-to-all" in moe_data_parallel_note("deepseek-v3")
    True
    """
    a = load_arch(arch)
    if not a.moe:
        return None
    moe_layers = a.layers - a.dense_layers
    return (
        f"{a.name} is a mixture of experts ({a.experts} experts, {a.experts_per_token} per token; "
        f"{a.active_params / 1e9:.1f}B of {a.params / 1e9:.0f}B parameters active). Compute is "
        "priced on the active parameters, but this is a data-parallel-only answer: real MoE "
        "training uses expert parallelism, with an all-to-all dispatch and combine per MoE layer "
        f"({moe_layers} layers, forward and backward), which is not priced here; every GPU is "
        "assumed to hold and synchronise all experts, and routing is assumed balanced."
    )


#: How each family encodes positions (the modeling code of :class:`Architecture`'s docstring):
#: a learned table (GPT-2's ``wpe``, one row per position: nothing past its last row) or
#: rotary embeddings (RoPE, Su et al. 2021, arXiv:2104.09864), which can run past the trained
#: context when scaled (position interpolation, Chen et al. 2023, arXiv:2306.15595; YaRN,
#: Peng et al. 2023, arXiv:2309.00071), usually with some fine-tuning at the longer length.
POSITIONS: dict[str, str] = {
    "gpt2": "learned",
    "gpt-neox": "rotary",
    "llama": "rotary",
    "mixtral": "rotary",
    "qwen2": "rotary",
    "deepseek-v3": "rotary",
}


def context_note(arch: str | Architecture | None, sequence_length: object) -> str | None:
    """What an answer at ``sequence_length`` tokens says when it is longer than the model's
    trained context (:attr:`Architecture.max_positions`, from its config.json:
    ``max_position_embeddings``, GPT-2's ``n_positions``); None within it, or when the
    context is not known (a bare parameter count, a config.json without the field).

    A learned position table has no row past its last one, so the model cannot run such a
    sequence as it is; rotary positions can be extended (:data:`POSITIONS`), and a config
    whose ``rope_scaling`` extends them (:attr:`Architecture.rope_scaled_positions`) has that
    longer context. Either way the
    memory, step and cost are priced at the sequence given: a note, not a refusal.

    >>> context_note("llama-3.1-8b", 8192) is None
    True
    >>> context_note("gpt2-124m", 4096)[:60]
    "sequence length: 4,096 tokens is past gpt2-124m's context of"
    """
    if arch is None or sequence_length is None:
        return None
    a = load_arch(arch)
    ctx, seq = a.max_positions, int(sequence_length)  # type: ignore[call-overload]
    scaled = a.rope_scaled_positions
    if scaled is not None and ctx is not None and scaled > ctx:
        # the file carries its RoPE scaling: its context is the scaled one
        if seq <= scaled:
            return None
        return (
            f"sequence length: {seq:,} tokens is past {a.name}'s context of {scaled:,} tokens "
            f"(max_position_embeddings {ctx:,} with its rope_scaling, {a.rope_scaling}): "
            "rotary positions can be scaled further, usually with fine-tuning at the longer "
            "length; priced as given"
        )
    if ctx is None or seq <= ctx:
        return None
    head = f"sequence length: {seq:,} tokens is past {a.name}'s context of {ctx:,} tokens"
    if POSITIONS[a.family] == "learned":
        return (
            f"{head} (a learned position table of {ctx:,} rows): the model cannot run it as "
            f"it is (a longer table would have to be trained); memory and step are priced at "
            f"{seq:,} tokens all the same"
        )
    return (
        f"{head} (its max_position_embeddings): rotary positions can be extended past it "
        "(RoPE scaling: position interpolation, arXiv:2306.15595; YaRN, arXiv:2309.00071), "
        "usually with fine-tuning at the longer length; priced as given"
    )


def window_note(arch: str | Architecture | None, sequence_length: object) -> str | None:
    """What an answer at ``sequence_length`` tokens says when the model's sliding window is
    shorter (:attr:`Architecture.sliding_window`): its attention FLOPs are priced on the keys
    each query attends (:func:`windowed_span`); None without a window or within it.

    >>> window_note("mistral-7b", 4096) is None
    True
    >>> window_note("mistral-7b", 32768)[:58]
    'mistral-7b attends through a sliding window 4,096 tokens w'
    """
    if arch is None or sequence_length is None:
        return None
    a = load_arch(arch)
    w, seq = a.sliding_window, int(sequence_length)  # type: ignore[call-overload]
    if w is None or seq <= w or not a.windowed_layers:
        return None
    where = (
        f"all {a.layers} layers"
        if a.windowed_layers == a.layers
        else f"{a.windowed_layers} of its {a.layers} layers (the others attend in full)"
    )
    return (
        f"{a.name} attends through a sliding window {w:,} tokens wide in {where}: attention "
        f"FLOPs are priced on the keys each query attends, min(position, {w:,}): "
        f"{windowed_span(seq, w) / seq:.3g} of full attention's (PaLM's count, {seq:,} keys "
        f"per query, becomes {windowed_span(seq, w):,.0f}; with the causal mask a query "
        f"attends {windowed_span(seq, w) / 2:,.0f} keys on average where full attention has "
        f"{seq / 2:,.0f}; Mistral 7B, arXiv:2310.06825); activation memory is as without it (FlashAttention "
        "stores no score matrix either way)"
    )


def architecture_notes(
    arch: str | Architecture | None, sequence_length: object = None
) -> tuple[str, ...]:
    """What an answer for ``arch`` at ``sequence_length`` tokens leaves out, assumes or runs
    past, the notes every surface writes beside it: what reading its config.json assumed
    (:attr:`Architecture.config_notes`), a mixture of experts' expert parallelism
    (:func:`moe_data_parallel_note`), a sliding window shorter than the sequence
    (:func:`window_note`), then a sequence past the model's context (:func:`context_note`).
    Empty for a bare parameter count (``arch`` None).

    >>> architecture_notes(None, 4096), architecture_notes("llama-3.1-8b", 4096)
    ((), ())
    """
    if arch is None:
        return ()
    said = tuple(f"{load_arch(arch).name}: {n}" for n in load_arch(arch).config_notes)
    notes = (
        *said,
        moe_data_parallel_note(arch),
        window_note(arch, sequence_length),
        context_note(arch, sequence_length),
    )
    return tuple(n for n in notes if n)


# --- presets -----------------------------------------------------------------------------------
def models_dir() -> Path:
    """The shipped ``presets/models`` folder."""
    return shipped_dir() / "models"


@functools.lru_cache(maxsize=1)
def _all() -> dict[str, Architecture]:
    out: dict[str, Architecture] = {}
    for path in sorted(models_dir().glob("*.toml")):
        with path.open("rb") as f:
            data = tomllib.load(f)
        data.pop("preset", None)
        try:
            a = Architecture.model_validate(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        out[a.name] = a
    return out


def arch_names() -> list[str]:
    """Names of the shipped architecture presets, sorted.

    >>> "llama-3.1-70b" in arch_names()
    True
    """
    return sorted(_all())


def load_arch(name: str | Architecture) -> Architecture:
    """The architecture preset called ``name`` (an :class:`Architecture` passes through).

    A name ending in ``.json`` is a Hugging Face ``config.json`` read offline by
    :func:`costmodel.hf_config.load_hf_config` (your own model). An unknown name is a
    ValueError naming ``arch`` and the closest presets (or all of them).

    >>> load_arch("llama-2-7b").params  # Llama 2 7B: 6.74e9 parameters
    6738415616
    >>> load_arch("llama2-7b")
    Traceback (most recent call last):
    ...
    ValueError: arch: unknown architecture 'llama2-7b'; closest: llama-2-7b, llama-2-70b, llama-3-70b
    """
    if isinstance(name, Architecture):
        return name
    if isinstance(name, os.PathLike):  # a pathlib.Path to a config.json or a model's folder
        name = os.fspath(name)
    if not isinstance(name, str):  # an array or a list is no name (it was "unhashable type")
        from ._checks import said

        raise ValueError(
            f"arch: expected one architecture name (`cm.arch_names()`), a config.json path or "
            f"a `cm.Architecture`, got {said(name)}"
        )
    if name.lower().endswith(".json"):
        from .hf_config import load_hf_config  # the reader builds on this module's class

        return load_hf_config(name)
    table = _all()
    # a path's ~ is the home folder, as load_hf_config reads a config.json's (and the shell
    # an unquoted one): '~/models/m' was "unknown architecture" where '~/models/m/config.json'
    # was read
    path = os.path.expanduser(name) if name not in table else name
    if isinstance(name, str) and name not in table and os.path.exists(path):
        # a path that is not a .json file: a model's folder (as Hugging Face saves one) is read
        # through its config.json; anything else is said to be the wrong kind of file
        cfg = os.path.join(path, "config.json")
        if os.path.isdir(path) and os.path.isfile(cfg):
            from .hf_config import load_hf_config

            return load_hf_config(cfg)
        what = "a folder with no config.json" if os.path.isdir(path) else "not a .json file"
        raise ValueError(
            f"arch: {name!r} is {what}; give a Hugging Face config.json (or the model's folder "
            "that holds it) or an architecture preset (`cm.arch_names()`)"
        )
    if name not in table and ("/" in name or "\\" in name):
        # a path that is not there (a mistyped file or folder): no preset has a slash, so
        # the presets closest to its spelling were no answer
        raise ValueError(
            f"arch: no such file {name!r}; give a Hugging Face config.json (or the model's "
            "folder that holds it) or an architecture preset (`cm.arch_names()`)"
        )
    if name not in table:
        from ._checks import unknown_name

        raise ValueError(unknown_name("arch", "architecture", name, sorted(table)))
    return table[name]


def params_differ(params: object, a: Architecture) -> str:
    """The one refusal of a parameter count given beside an architecture whose count it is not
    (``training_memory``, ``strategy_step``, ``Scenario``; the CLI's ``--params`` beside
    ``--arch``): the count as typed (``7B``), else with separators (``7,000,000,000``), never
    a float's repr (``7000000000.0``).

    >>> params_differ("7B", load_arch("llama-2-7b"))
    "params: 7B differs from llama-2-7b's 6,738,415,616; give one of them"
    >>> params_differ(7e9, load_arch("llama-2-7b"))
    "params: 7,000,000,000 differs from llama-2-7b's 6,738,415,616; give one of them"
    """
    if isinstance(params, str):
        said = params.strip()
    else:
        try:
            x = float(params)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            said = repr(params)
        else:
            said = f"{int(x):,}" if math.isfinite(x) and x.is_integer() else f"{x:g}"
    return f"params: {said} differs from {a.name}'s {a.params:,}; give one of them"


def resolve_params(
    params: float | None, arch: str | Architecture | None
) -> tuple[float, Architecture | None]:
    """``(P, architecture)`` from a parameter count or an architecture (exactly one given)."""
    if arch is not None:
        a = load_arch(arch)
        if params is not None and float(params) != float(a.params):
            raise ValueError(params_differ(params, a))
        return float(a.params), a
    if params is None:
        raise ValueError("params: give a parameter count or `arch` (an architecture name)")
    return float(params), None
