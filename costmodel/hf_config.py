r"""Your own model: a Hugging Face ``config.json`` read offline into an :class:`Architecture`.

The same object the shipped presets give (``presets/models/*.toml``), so parameters, the
tensor list (DDP buckets), activations and FLOPs per token come out as for a preset. Supported
``model_type`` values and the ``transformers`` modeling code whose shapes they follow:

========================  ==============  ====================================================
``model_type``            family          config keys read
========================  ==============  ====================================================
``llama``, ``mistral``    ``llama``       hidden_size, intermediate_size, num_hidden_layers,
                                          num_attention_heads, num_key_value_heads, head_dim,
                                          vocab_size, tie_word_embeddings,
                                          max_position_embeddings
``qwen2``                 ``qwen2``       as llama (q/k/v biases are part of the family)
``mixtral``               ``mixtral``     as llama + num_local_experts, num_experts_per_tok
``deepseek_v3``           ``deepseek-v3`` as llama + n_routed_experts, num_experts_per_tok,
                                          n_shared_experts, moe_intermediate_size,
                                          first_k_dense_replace, q_lora_rank, kv_lora_rank,
                                          qk_nope_head_dim, qk_rope_head_dim, v_head_dim
``gpt2``                  ``gpt2``        n_embd, n_layer, n_head, n_inner, n_positions
                                          (or n_ctx), vocab_size
``gpt_neox``              ``gpt-neox``    hidden_size, intermediate_size, num_hidden_layers,
                                          num_attention_heads, vocab_size,
                                          tie_word_embeddings, max_position_embeddings
========================  ==============  ====================================================

Keys that change the shape in a way the families do not model (``attention_bias`` or
``mlp_bias`` true on Llama, ``moe_layer_freq`` other than 1 on DeepSeek-V3, a GPT-NeoX
``attention_bias`` false) are refused with the key named; keys that do not change the parameter
shapes (dropout, RoPE theta, token ids) are ignored, and those that change the trained model
without changing the shapes the tool prices (DeepSeek-V3's ``num_nextn_predict_layers``, a
``torch_dtype`` other than bfloat16/float16) are said in a note (:func:`_ignored`). A missing
``num_key_value_heads`` takes ``transformers``' default for the model_type
(:data:`KV_HEADS_DEFAULTS`) and a sliding window is read as ``transformers`` reads it
(:func:`_window`), each default said in a note (:attr:`Architecture.config_notes`); a
``rope_scaling`` extends the context the note on a long sequence uses (:func:`_rope_scaling`).
The count is the shapes' count: there is
no published figure for your model, so ``published_params`` is the counted value.
``max_position_embeddings`` (GPT-2: ``n_positions``) is the model's trained context: an answer
at a longer sequence says so (:func:`costmodel.architecture.context_note`); a config without
it has no known context, and no such note.

>>> cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
...        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
...        "vocab_size": 32000, "max_position_embeddings": 4096}
>>> arch_from_hf_config(cfg, name="my-llama").params      # = Llama-2-7B's 6,738,415,616
6738415616
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import _limits
from .architecture import Architecture

#: Bytes of an fp32 value: the widest dtype a layer's parameters or gradients travel in [B]
FP32_BYTES = 4

#: Architecture field -> the config.json key it comes from (for error messages)
_CONFIG_KEYS = {
    "kv_heads": "num_key_value_heads",
    "heads": "num_attention_heads",
    "experts_per_token": "num_experts_per_tok",
    "experts": "num_local_experts / n_routed_experts",
    "kv_lora_rank": "kv_lora_rank",
}

#: model_type -> ``num_key_value_heads`` of ``transformers``' config class when the key is not
#: in the file (a fixed number: MistralConfig 8, MixtralConfig 8, Qwen2Config 32). LlamaConfig's
#: default is None, read as ``num_attention_heads`` (multi-head attention); DeepseekV3's MLA
#: shapes do not use the key. A null in the file is ``num_attention_heads`` in every class
#: ("for backward compatibility").
KV_HEADS_DEFAULTS: dict[str, int] = {"mistral": 8, "mixtral": 8, "qwen2": 32}

#: ``sliding_window`` of MistralConfig when the key is not in the file [tokens]
MISTRAL_WINDOW_DEFAULT = 4096
#: Qwen2Config's ``sliding_window`` and ``max_window_layers`` when ``use_sliding_window`` is
#: true and the key is not in the file
QWEN2_WINDOW_DEFAULT = 4096
QWEN2_MAX_WINDOW_LAYERS_DEFAULT = 28

#: model_type -> family of :class:`costmodel.architecture.Architecture`
MODEL_TYPES: dict[str, str] = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "qwen2",
    "mixtral": "mixtral",
    "deepseek_v3": "deepseek-v3",
    "gpt2": "gpt2",
    "gpt_neox": "gpt-neox",
}

MAX_CONFIG_BYTES = 10_000_000
"""A config.json is a few kB; a larger file is refused before it is parsed."""


def _int(cfg: dict[str, Any], key: str, *, default: Any = ..., low: int = 1) -> Any:
    """``cfg[key]`` as a whole number in [``low``, 1e12]; a missing or bad value names the key
    and that one range (a NaN or a string said ">= 1" where -2 said the range)."""
    rule = f"a whole number in [{low}, 1e12]"
    if key not in cfg or cfg[key] is None:
        if default is ...:
            raise ValueError(f"config.json: missing field {key!r} ({rule})")
        return default
    v = cfg[key]
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or not math.isfinite(v)
        or v != int(v)
        or not low <= v <= 1e12
    ):
        raise ValueError(f"config.json: {key} must be {rule}, got {v!r}")
    return int(v)


def _bool(cfg: dict[str, Any], key: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ValueError(f"config.json: {key} must be true or false, got {v!r}")
    return v


def _refuse(cfg: dict[str, Any], key: str, unsupported: Any, why: str) -> None:
    if key in cfg and cfg[key] == unsupported:
        raise ValueError(f"config.json: {key}={json.dumps(unsupported)} is not supported ({why})")


def _kv_heads(cfg: dict[str, Any], mt: str, heads: int, notes: list[str]) -> int:
    """``num_key_value_heads``, or ``transformers``' default for ``mt`` when the file has no
    such key (:data:`KV_HEADS_DEFAULTS`; Llama's: ``num_attention_heads``), said in ``notes``.
    A fixed default that does not divide the heads is refused naming the key."""
    if "num_key_value_heads" in cfg or mt == "deepseek_v3":  # null: num_attention_heads
        return int(_int(cfg, "num_key_value_heads", default=heads))
    if mt not in KV_HEADS_DEFAULTS:
        notes.append(
            f"num_key_value_heads not in the file: transformers' default for {mt}, "
            f"num_attention_heads ({heads}: multi-head attention)"
        )
        return heads
    kv = KV_HEADS_DEFAULTS[mt]
    said = f"num_key_value_heads not in the file: transformers' default for {mt}, {kv}"
    if heads % kv:
        raise ValueError(
            f"config.json: {said}, does not divide num_attention_heads {heads}; "
            "give num_key_value_heads in the file"
        )
    notes.append(said)
    return kv


def _window(cfg: dict[str, Any], mt: str, layers: int, notes: list[str]) -> dict[str, Any]:
    """``sliding_window`` and ``window_layers`` of :class:`Architecture` from the config, as
    ``transformers`` reads them: MistralConfig's ``sliding_window`` (4096 when the key is not
    in the file, null for none) and MixtralConfig's (None by default) window every layer;
    Qwen2Config's applies only when ``use_sliding_window`` is true, and then to the layers
    its ``layer_types`` marks ``sliding_attention``, by default those from
    ``max_window_layers`` on (``Qwen2Config.__post_init__``: layer ``i`` slides when
    ``i >= max_window_layers``; the layers below attend in full). Other families have none."""
    if mt in ("mistral", "mixtral"):
        if "sliding_window" not in cfg and mt == "mistral":
            notes.append(
                "sliding_window not in the file: transformers' default for mistral, "
                f"{MISTRAL_WINDOW_DEFAULT}"
            )
            return {"sliding_window": MISTRAL_WINDOW_DEFAULT}
        return {"sliding_window": _int(cfg, "sliding_window", default=None)}
    if mt != "qwen2" or not _bool(cfg, "use_sliding_window", False):
        return {}
    if "sliding_window" not in cfg:
        notes.append(
            "sliding_window not in the file: transformers' default for qwen2, "
            f"{QWEN2_WINDOW_DEFAULT}"
        )
    window = _int(cfg, "sliding_window", default=QWEN2_WINDOW_DEFAULT)
    kinds = cfg.get("layer_types")
    if kinds is not None:
        if not (
            isinstance(kinds, list)
            and len(kinds) == layers
            and all(k in ("sliding_attention", "full_attention") for k in kinds)
        ):
            raise ValueError(
                f"config.json: layer_types must list {layers} entries (num_hidden_layers), each "
                "sliding_attention or full_attention"
            )
        windowed = sum(k == "sliding_attention" for k in kinds)
    else:
        first = _int(cfg, "max_window_layers", default=QWEN2_MAX_WINDOW_LAYERS_DEFAULT, low=0)
        windowed = max(0, layers - first)
    if not windowed:
        return {}
    return {"sliding_window": window, "window_layers": windowed}


def _rope_scaling(cfg: dict[str, Any], ctx: int | None) -> dict[str, Any]:
    r"""The context a config's ``rope_scaling`` gives [tokens], as the context note reads it.

    .. math:: T_{ctx} = \max\big(T_{max},\ s \cdot T_{orig}\big)

    ``T_max`` its ``max_position_embeddings``, ``s`` the scaling's ``factor``, ``T_orig`` its
    ``original_max_position_embeddings`` (default ``T_max``): Qwen2.5's YaRN (32,768 x 4 =
    131,072; Peng et al. 2023, arXiv:2309.00071), linear position interpolation (Chen et al.
    2023, arXiv:2306.15595); Llama 3.1's ``llama3`` scaling already says 131,072 in
    ``max_position_embeddings`` (8 x 8,192 = 65,536 is less). ``transformers``'
    ``modeling_rope_utils`` reads the same keys (``rope_type``, older files ``type``).
    """
    rs = cfg.get("rope_scaling")
    if rs is None or ctx is None:
        return {}
    if not isinstance(rs, dict):
        raise ValueError(f"config.json: rope_scaling must be an object or null, got {rs!r}")
    kind = rs.get("rope_type", rs.get("type"))
    if kind in (None, "default") or "factor" not in rs:
        return {}
    factor = rs["factor"]
    if (
        isinstance(factor, bool)
        or not isinstance(factor, int | float)
        or not math.isfinite(factor)
        or not 1 <= factor <= 1e6
    ):
        raise ValueError(f"config.json: rope_scaling factor must be in [1, 1e6], got {factor!r}")
    orig = _int(rs, "original_max_position_embeddings", default=ctx)
    scaled = max(ctx, int(factor * orig))
    return {"rope_scaled_positions": scaled, "rope_scaling": f"{kind} x{factor:g}"}


def _ignored(cfg: dict[str, Any]) -> list[str]:
    """Notes for keys the reader leaves out that change the trained model: DeepSeek-V3's
    multi-token prediction (``num_nextn_predict_layers``: extra layers trained beside the main
    model, DeepSeek-V3 report arXiv:2412.19437 section 2.2, not in its 671B), and a
    ``torch_dtype`` other than bfloat16/float16 (the memory and step are priced with the
    recipe's dtypes, not the file's)."""
    out = []
    mtp = cfg.get("num_nextn_predict_layers")
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        out.append(
            f"num_nextn_predict_layers {mtp} in the file: the multi-token prediction "
            f"module{'s' if mtp > 1 else ''} (arXiv:2412.19437 section 2.2) are not counted: "
            "parameters, memory and FLOPs are the main model's"
        )
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    if isinstance(dtype, str) and dtype not in ("bfloat16", "float16"):
        out.append(
            f"torch_dtype {dtype} in the file: the checkpoint's dtype; memory and step are "
            "priced with the recipe's dtypes (bf16 weights and activations by default), not it"
        )
    return out


def arch_from_hf_config(
    cfg: dict[str, Any], *, name: str, source: str = "user config.json"
) -> Architecture:
    """An :class:`Architecture` from a parsed Hugging Face ``config.json`` (module docstring).

    Parameters
    ----------
    cfg : dict
        The parsed JSON object.
    name : str
        The name the answers show (e.g. the folder or file name).
    source : str
        Where the config came from (a path or URL), kept as the architecture's citation.
    """
    if not isinstance(cfg, dict):
        raise ValueError("config.json: must be a JSON object with a model_type")
    mt = cfg.get("model_type")
    if mt is None:
        raise ValueError(
            f"config.json: missing field 'model_type' (one of {', '.join(MODEL_TYPES)})"
        )
    if mt not in MODEL_TYPES:
        raise ValueError(
            f"config.json: model_type {mt!r} is not supported; supported: {', '.join(MODEL_TYPES)}"
        )
    family = MODEL_TYPES[mt]
    notes: list[str] = []  # what the reading assumed, said beside every answer
    fields: dict[str, Any] = {
        "name": name,
        "description": f"{name} (config.json, model_type {mt})",
        "family": family,
        "published_params": 1.0,  # replaced by the counted value below
        "published_params_source": "not published: counted from the config.json shapes",
        "source": source,
    }
    if family == "gpt2":
        h = _int(cfg, "n_embd")
        heads = _int(cfg, "n_head")
        fields.update(
            layers=_int(cfg, "n_layer"),
            hidden=h,
            ffn=_int(cfg, "n_inner", default=4 * h),  # GPT2MLP: n_inner None -> 4 * n_embd
            heads=heads,
            kv_heads=heads,
            vocab=_int(cfg, "vocab_size"),
            tied_embeddings=_bool(cfg, "tie_word_embeddings", True),
            # the learned position table's rows, the trained context (older configs: n_ctx)
            max_positions=_int(cfg, "n_positions", default=None)
            or _int(cfg, "n_ctx", default=None)
            or _int(cfg, "n_positions"),  # neither: refused as the missing n_positions
        )
    else:
        heads = _int(cfg, "num_attention_heads")
        kv = heads if family == "gpt-neox" else _kv_heads(cfg, mt, heads, notes)
        fields.update(
            layers=_int(cfg, "num_hidden_layers"),
            hidden=_int(cfg, "hidden_size"),
            ffn=_int(cfg, "intermediate_size"),
            heads=heads,
            kv_heads=kv,
            vocab=_int(cfg, "vocab_size"),
            tied_embeddings=_bool(cfg, "tie_word_embeddings", False),  # these configs default False
            # the trained context; None when the config does not say (no note is then given)
            max_positions=_int(cfg, "max_position_embeddings", default=None),
        )
        if family != "gpt-neox" and "head_dim" in cfg and cfg["head_dim"] is not None:
            fields["head_dim"] = _int(cfg, "head_dim")
    if family in ("llama", "mixtral"):
        _refuse(cfg, "qkv_bias", True, "q/k/v biases are not in the llama family")
    if family in ("llama", "qwen2", "mixtral"):
        _refuse(cfg, "attention_bias", True, "q/k/v/o biases are not in the llama family")
        _refuse(cfg, "mlp_bias", True, "MLP biases are not in the llama family")
    if family == "gpt-neox":
        _refuse(cfg, "attention_bias", False, "the gpt-neox family has q/k/v biases")
    if family == "mixtral":
        fields.update(
            experts=_int(cfg, "num_local_experts"),
            experts_per_token=_int(cfg, "num_experts_per_tok"),
        )
    if family == "deepseek-v3":
        _int(cfg, "moe_layer_freq", default=1)
        if cfg.get("moe_layer_freq", 1) != 1:
            raise ValueError(
                f"config.json: moe_layer_freq {cfg['moe_layer_freq']!r} is not supported "
                "(every layer after first_k_dense_replace is modelled as MoE)"
            )
        _refuse(cfg, "attention_bias", True, "no attention biases in DeepseekV3")
        fields.update(
            experts=_int(cfg, "n_routed_experts"),
            experts_per_token=_int(cfg, "num_experts_per_tok"),
            shared_experts=_int(cfg, "n_shared_experts", default=0, low=0),
            expert_ffn=_int(cfg, "moe_intermediate_size"),
            dense_layers=_int(cfg, "first_k_dense_replace", default=0, low=0),
            q_lora_rank=_int(cfg, "q_lora_rank", default=None),
            kv_lora_rank=_int(cfg, "kv_lora_rank"),
            qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
            qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
            v_head_dim=_int(cfg, "v_head_dim"),
        )
    fields.update(_window(cfg, mt, fields["layers"], notes))
    if family != "gpt2":
        fields.update(_rope_scaling(cfg, fields.get("max_positions")))
    notes += _ignored(cfg)
    fields["config_notes"] = tuple(notes)
    try:
        a = Architecture.model_validate(fields)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err.get("loc", ()))
            msg = str(err.get("msg", "")).removeprefix("Value error, ")
            parts.append(f"{loc}: {msg}" if loc else msg)
        text = "; ".join(parts)
        keys = [k for f, k in _CONFIG_KEYS.items() if f in text]
        where = f" (config key {', '.join(keys)})" if keys else ""
        raise ValueError(f"config.json: {text}{where}") from None
    # the parameter limit of every surface (--params, Scenario.params, the sweep's params): a
    # config past it was answered by `memory` and refused by `train`/`step` as an option the
    # user never typed (--params, message_bytes)
    limit = _limits.LIMITS["params"]
    if a.params > limit.hi:
        raise ValueError(
            f"config.json: its shapes count {a.params:.3g} parameters; must be {limit.rule} "
            "(the limit of `params`)"
        )
    # a unit the step sends whole (the embedding, one block, the head: FSDP's all-gather, a
    # ZeRO/DDP bucket holds a tensor whole) is one collective buffer, at most 16 TiB at up to
    # 4 B a parameter (fp32 gradients): past it `step` refused an internal message_bytes
    from .strategy.layout import wrap_units

    biggest = max(wrap_units(float(a.params), a), key=lambda u: u.params)
    most = _limits.MAX_MESSAGE_BYTES // FP32_BYTES
    if biggest.params > most:
        raise ValueError(
            f"config.json: its {biggest.name} holds {biggest.params:.3g} parameters, "
            f"{biggest.params * FP32_BYTES:.3g} B in fp32, past the largest collective buffer "
            f"of 16 TiB (2**44 B); must be at most {most:.3g} parameters per layer"
        )
    return a.model_copy(update={"published_params": float(a.params)})


#: a file's stem that names no model: what the Hub calls every config (``config.json``)
_PLAIN_STEMS = frozenset({"config"})
#: a character kept in a name the file gives (letters, digits, ``. _ - + /``); others are ``-``
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._+/-]+")
#: the longest name kept from a file (a long checkpoint path's last folder, a file name)
MAX_NAME_LENGTH = 60
#: the name of a config that says no name and was given under a plain name (never reached for
#: a config the reader accepts: its ``model_type`` names it)
GENERIC_NAME = "uploaded-config"


def _clean(text: str) -> str:
    return _NAME_CHARS.sub("-", text).strip("./-")[:MAX_NAME_LENGTH].strip("./-")


def _stated_name(cfg: Any) -> str | None:
    """The model the config says it is: its ``_name_or_path`` (``mistralai/Mistral-7B-v0.1``,
    a Hub id, kept whole; a local checkpoint path, ``/scratch/run3/llama-7b-ft``, by its last
    folder), else None."""
    said = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    if not isinstance(said, str) or not said.strip():
        return None
    said = said.strip().replace("\\", "/").rstrip("/")
    if said.startswith(("/", ".", "~")) or said.count("/") > 1 or ":" in said:
        said = said.rsplit("/", 1)[-1]  # a local path (a Hub id is owner/name): its last part
    return _clean(said) or None


def _size(params: float) -> str:
    """``7.2B``, ``72.7B``, ``671B``, ``124M``: a model's size as its name says it."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if params >= scale:
            x = params / scale
            return f"{x:.1f}{unit}" if x < 100 else f"{x:.0f}{unit}"
    return f"{params:.0f}"


def config_name(cfg: Any, params: float, file_name: str | None) -> str:
    """The name a Hugging Face config's answers show: what the file says, then its file name.

    In order: its ``_name_or_path`` (:func:`_stated_name`); the file's name without ``.json``
    when it names a model (``qwen2.5-7b.json``, not ``config.json``, the Hub's name for every
    config); its ``model_type`` with the counted size (``mistral (7.2B)``); else
    :data:`GENERIC_NAME`. One rule for ``--arch path``, ``cm.load_arch(path)`` and the app's
    upload (``file_name``: the path's or the uploaded file's name), so the same file has the
    same name everywhere.

    >>> config_name({"_name_or_path": "mistralai/Mistral-7B-v0.1"}, 7.2e9, "config.json")
    'mistralai/Mistral-7B-v0.1'
    >>> config_name({"model_type": "mistral"}, 7_241_732_096, "config.json")
    'mistral (7.2B)'
    >>> config_name({"model_type": "qwen2"}, 7.6e9, "qwen2.5-7b.json")
    'qwen2.5-7b'
    """
    stated = _stated_name(cfg)
    if stated:
        return stated
    stem = _clean(Path(file_name).name.removesuffix(".json")) if file_name else ""
    if stem and stem.lower() not in _PLAIN_STEMS:
        return stem
    mt = cfg.get("model_type") if isinstance(cfg, dict) else None
    if isinstance(mt, str) and _clean(mt):
        return f"{_clean(mt)} ({_size(params)})"
    return GENERIC_NAME


#: parsed configs by (resolved path, SHA-256 of the bytes): a file rewritten in place, even
#: within one mtime tick and at the same size, is read again (keyed on mtime and size it was not)
_PARSED: dict[tuple[str, str], Architecture] = {}
_PARSED_MAX = 64


def _load(path: str, raw: bytes) -> Architecture:
    p = Path(path)
    from . import textfile

    try:  # the one decoder of user files: UTF-8 (a BOM too), UTF-16/32 by its mark
        text = textfile.decode_text(raw, path, what="config.json")
    except textfile.TextDecodeError as exc:
        raise ValueError(f"arch: {path} is not a JSON config: {exc.message}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arch: {path} is not a JSON config ({exc})") from None
    try:
        a = arch_from_hf_config(cfg, name=GENERIC_NAME, source=str(p))
    except ValueError as exc:  # named as the file's other refusals: the field, then the file
        text = str(exc).removeprefix("config.json: ")
        raise ValueError(f"arch: {path}: {text}") from None
    return renamed(a, config_name(cfg, a.params, p.name))


def renamed(a: Architecture, name: str) -> Architecture:
    """``a`` under ``name``, its description too (which starts with the name)."""
    if name == a.name:
        return a
    text = name + a.description.removeprefix(a.name)
    return a.model_copy(update={"name": name, "description": text})


def load_hf_config(path: str | Path) -> Architecture:
    """The :class:`Architecture` of the Hugging Face ``config.json`` at ``path``, or in the
    model's folder ``path`` (read offline, never modified; cached by the file's bytes). Its name is what the file says
    (:func:`config_name`: ``_name_or_path``, then the file's own name unless it is the plain
    ``config.json``, then ``model_type`` with its size: ``mistral (7.2B)``), the same for the
    app's upload of the same file; not the folder's name (``/tmp``, a Hub cache's commit)."""
    if not isinstance(path, str | os.PathLike):  # Path(0): Python's own "expected str, ..."
        raise ValueError(f"arch: the path of a config.json (a str or Path), got {path!r}")
    p = Path(path).expanduser()
    if p.is_dir() and (p / "config.json").is_file():  # the model's folder, as load_arch reads
        p = p / "config.json"
    try:
        st = p.resolve().stat()
    except OSError:
        # what was given, named as given (the folder and preset forms say the same)
        raise ValueError(
            f"arch: no such file {str(path)!r}; give a Hugging Face config.json (or the "
            "model's folder that holds it) or an architecture preset (`cm.arch_names()`)"
        ) from None
    if not p.is_file():
        raise ValueError(f"arch: {str(path)!r} is not a file")
    where = str(p.resolve())
    if st.st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"arch: {where} is {st.st_size} bytes; a config.json is at most 10 MB")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"arch: {where}: cannot read: {exc.strerror or exc}") from None
    key = (where, hashlib.sha256(raw).hexdigest())
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))  # the oldest
        _PARSED[key] = _load(where, raw)
    return _PARSED[key]
