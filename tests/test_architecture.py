"""Architecture presets: parameter counts against the published figures, tensors, activations,
FLOPs, and DDP buckets against torch's own bucket assignment."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from costmodel import ddp
from costmodel.architecture import Architecture, arch_names, load_arch

# Published totals, cited per row (independent of the shapes in presets/models/*.toml).
PUBLISHED = {
    # transformers GPT2LMHeadModel num_parameters(), huggingface.co/openai-community/gpt2
    "gpt2-124m": 124_439_808,
    # github.com/openai/gpt-2: the "1558M" model
    "gpt2-1.5b": 1558e6,
    # Brown et al. 2020, arXiv:2005.14165, Table 2.1: 175.0B
    "gpt3-175b": 175.0e9,
    # Hugging Face safetensors totals of the meta-llama / mistralai repositories
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    # Qwen2.5 model cards: "Number of Parameters: 7.61B" / "72.7B"
    "qwen2.5-7b": 7.61e9,
    "qwen2.5-72b": 72.7e9,
    # DeepSeek-V3 technical report, arXiv:2412.19437, abstract: 671B total
    "deepseek-v3": 671e9,
    # Meta-Llama-3-8B / -70B safetensors totals (same shapes as Llama 3.1)
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    # llm-foundry benchmarking README, NumParams column at SeqLen 2048 (@ 495218376)
    "mpt-125m": 125_311_488,
    "mpt-350m": 355_985_408,
    "mpt-760m": 760_470_528,
    "mpt-1b": 1_315_950_592,
    "mpt-3b": 2_651_837_440,
    "mpt-7b": 6_658_859_008,
    "mpt-13b": 12_853_954_560,
    "mpt-30b": 29_975_214_080,
    "mpt-70b": 64_862_437_376,
}
# Active parameters per token of the MoE models, as published (rounded to 2 figures there).
PUBLISHED_ACTIVE = {
    "mixtral-8x7b": 13e9,  # Jiang et al. 2024, arXiv:2401.04088: "13B active parameters"
    "deepseek-v3": 37e9,  # arXiv:2412.19437 abstract: "37B activated for each token"
}


def test_every_issue_architecture_is_shipped():
    assert set(arch_names()) == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_params_from_shape_within_half_percent_of_published(name):
    a = load_arch(name)
    assert a.params == pytest.approx(PUBLISHED[name], rel=0.005)
    assert a.published_params == pytest.approx(PUBLISHED[name], rel=1e-9)  # preset cites it


@pytest.mark.parametrize("name", sorted(PUBLISHED_ACTIVE))
def test_moe_active_params_match_published_rounding(name):
    a = load_arch(name)
    assert a.active_params < a.params / 3
    # the published figure has two significant digits: within half a unit of its last digit
    assert abs(a.active_params - PUBLISHED_ACTIVE[name]) <= 0.5e9 + 0.1e9  # 37.55B vs "37B"


def test_tensor_order_is_hf_registration_order():
    names = [n for n, _ in load_arch("llama-2-7b").tensors()]
    assert names[:10] == [
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight",
    ]
    assert names[-2:] == ["model.norm.weight", "lm_head.weight"]
    gpt2 = [n for n, _ in load_arch("gpt2-124m").tensors()]
    assert "lm_head.weight" not in gpt2  # tied: registered once, as wte
    assert gpt2[2:4] == ["transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias"]
    qwen = [n for n, _ in load_arch("qwen2.5-7b").tensors()]
    assert qwen[1:3] == [
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.q_proj.bias",
    ]


def test_gqa_shrinks_kv_projections():
    shapes = dict(load_arch("llama-3.1-70b").tensors())
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (8 * 128, 8192)
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (8192, 8192)


def test_architecture_is_frozen_and_strict():
    a = load_arch("llama-2-7b")
    with pytest.raises(ValidationError):
        a.layers = 3  # type: ignore[misc]
    data = a.model_dump()
    with pytest.raises(ValidationError):
        Architecture.model_validate({**data, "layers": "32"})  # strict: no str -> int
    with pytest.raises(ValidationError, match="kv_heads"):
        Architecture.model_validate({**data, "kv_heads": 5})
    with pytest.raises(ValueError, match="closest: llama-2-7b"):
        load_arch("llama-2-7")


def test_activations_korthikanti_eq1():
    g = load_arch("gpt2-124m")  # Korthikanti's GPT layer: eq. (1) exactly
    assert g.activation_bytes_per_token(1024, flash_attention=False) == 34 * 768 + 5 * 12 * 1024
    a = load_arch("llama-2-7b")
    s, h, heads, f = 4096, 4096, 32, 11008
    # the same terms with Llama's widths: norms 4h, attention 2h + 6h + 2h, SwiGLU 2h + 8f, no
    # dropout masks; + 5 a s without FlashAttention
    layer = 4 * h + 10 * h + 2 * h + 8 * f
    assert a.activation_bytes_per_token(s, flash_attention=False) == layer + 5 * heads * s
    assert a.activation_bytes_per_token(s, flash_attention=True) == layer
    assert a.activation_bytes_per_token(s, flash_attention=False, recompute="selective") == layer
    assert a.activation_bytes_per_token(s, recompute="full") == 2 * h
    # torchtitan op SAC: input, attention output, half the matmul outputs (q k v o gate up down)
    op = 2 * h + 2 * h + 0.5 * 2 * (3 * h + h + 2 * f + h)
    assert a.activation_bytes_per_token(s, recompute="selective-op") == op
    assert a.activation_bytes_per_token(s, recompute="selective-layer") == (layer + 2 * h) / 2
    # without FlashAttention the s^2 term dominates at 4k tokens: 5 a s / 34 h = 4.7x
    assert a.activation_bytes_per_token(
        s, flash_attention=False
    ) > 5 * a.activation_bytes_per_token(s)
    one = a.activation_bytes(s, 1)
    assert a.activation_bytes(s, 2) == pytest.approx(2 * one)
    assert one > 32 * s * layer  # layers plus embedding/output/logits
    # checkpointing: the layer being recomputed is held again during its backward, after the
    # loss's logits are freed (fp32: 12 B per logit, none held) or beside the held ones
    full = a.activation_bytes(s, 1, recompute="full")
    assert 12 * 32000 > layer - 2 * h  # the loss's peak is the larger moment here
    assert full == s * (32 * 2 * h + 5 * h + 12 * 32000)
    fused = a.activation_bytes(s, 1, recompute="full", loss="fused")
    assert (layer - 2 * h) + 2 * 32000 > 4 * 32000  # the recomputed layer + held bf16 logits
    assert fused == s * (32 * 2 * h + 5 * h + (layer - 2 * h) + 2 * 32000)
    held = a.activation_bytes(s, 1, recompute="full", loss="fp32-held")
    assert held == s * (32 * 2 * h + 5 * h + 16 * 32000)
    with pytest.raises(ValueError, match="loss"):
        a.activation_bytes(s, 1, loss="chunked")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recompute"):
        a.activation_bytes_per_token(s, recompute="some")
    with pytest.raises(ValueError, match="micro_batch"):
        a.activation_bytes(s, 0)
    for bad in (float("nan"), float("inf"), 0, 2.5, True, "4096"):
        with pytest.raises(ValueError, match="sequence_length"):
            a.activation_bytes_per_token(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="sequence_length"):
            a.training_flops_per_token(bad)  # type: ignore[arg-type]


def test_training_flops_per_token():
    a = load_arch("llama-2-7b")
    non_embedding = a.params - 32000 * 4096  # the input embedding is a lookup
    assert a.training_flops_per_token(2048) == 6 * non_embedding + 12 * 32 * 32 * 128 * 2048
    # MoE: active parameters, far below 6 x total
    ds = load_arch("deepseek-v3")
    assert 6 * 36e9 < ds.training_flops_per_token(4096) < 6 * 0.1 * ds.params
    # GPT-3: Brown et al. 2020 Table D.1 gives 3.14e23 FLOPs for 300B tokens -> 1.05e12 / token
    g = load_arch("gpt3-175b")
    assert g.training_flops_per_token(2048) == pytest.approx(3.14e23 / 300e9, rel=0.05)


def test_bucket_count_of_real_tensors_differs_from_equal_split():
    # equal 2^24-parameter tensors give 402 buckets, PyTorch's real layers 226
    sizes = np.array(load_arch("llama-2-7b").tensor_sizes) * 2.0
    assert len(ddp.bucket_assignment(sizes)) == 226


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_buckets_equal_torch_assignment(name):
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    tensors = [
        torch.empty(s, dtype=torch.bfloat16, device="meta") for _, s in load_arch(name).tensors()
    ]
    sizes = [t.numel() * t.element_size() for t in tensors]
    limits = [ddp.DEFAULT_FIRST_BUCKET_BYTES, ddp.DEFAULT_BUCKET_CAP_BYTES]
    # DDP's constructor: registration order, small bucket first; DDP reverses the list
    initial, _ = dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors))
    ours = ddp.bucket_assignment(sizes, small_bucket_last=True)
    assert [sorted(b) for b in reversed(initial)] == [sorted(b) for b in ours]
    # Reducer::rebuild_buckets: gradient-ready order (reverse registration), indices given
    ready = list(range(len(tensors)))[::-1]
    rebuilt, _ = dist._compute_bucket_assignment_by_size(
        [tensors[i] for i in ready], limits, [False] * len(tensors), ready
    )
    ours = ddp.bucket_assignment(sizes)
    assert len(rebuilt) == len(ours)
    assert [sorted(b) for b in rebuilt] == [sorted(b) for b in ours]
    assert [sum(sizes[i] for i in b) for b in rebuilt] == ddp.bucket_sizes(sizes).tolist()


def test_mpt_params_match_every_published_numparams_cell():
    """NumParams of every llm-foundry row (it grows with the sequence length: a learned position
    table of max_seq_len x d_model) from the preset's shape with max_positions = the row's seq."""
    from costmodel.steps_data import step_rows

    df = step_rows()
    rows = df[df.source == "llm-foundry"].drop_duplicates(["model", "seq"])
    assert len(rows) >= 40
    for r in rows.itertuples():
        shape = load_arch(r.model).model_dump() | {"max_positions": int(r.seq)}
        a = Architecture.model_validate(shape)  # a fresh object: params are cached
        assert a.params == pytest.approx(r.published_params, rel=0.005), (r.model, r.seq)


def test_moe_flops_come_from_the_active_parameters_and_the_answer_says_what_is_left_out():
    from costmodel.architecture import moe_data_parallel_note

    for name, active in (("deepseek-v3", 37e9), ("mixtral-8x7b", 13e9)):
        a = load_arch(name)
        per_token = a.training_flops_per_token(4096)
        assert 6 * 0.8 * active < per_token < 6 * 1.4 * active  # far below 6 x total
        assert per_token < 6 * a.params / 3  # not the dense 6 x total
        note = moe_data_parallel_note(name)
        assert note is not None
        assert "expert parallelism" in note and "all-to-all" in note and "not priced" in note
    assert moe_data_parallel_note("llama-3.1-70b") is None


def test_a_bare_parameter_count_gets_a_transformer_of_that_size():
    from costmodel.architecture import architecture_for_params

    for p in (1.25e8, 7e9, 70e9, 405e9):
        a = architecture_for_params(p)
        assert a.params == pytest.approx(p, rel=0.02)
        assert a.hidden % 128 == 0 and a.layers >= 8
    # the width rule is fitted on the presets: within a factor 1.5 of Llama's at 7B and 70B
    assert 4096 / 1.5 < architecture_for_params(7e9).hidden < 4096 * 1.5
    assert 8192 / 1.5 < architecture_for_params(70e9).hidden < 8192 * 1.5
    # bucketing now has layers to work with: a 7B count no longer makes 2 buckets
    sizes = np.array(architecture_for_params(7e9).tensor_sizes, dtype=float) * 2.0
    n1 = len(ddp.bucket_sizes(sizes[::-1], bucket_cap_bytes=1 * 2**20))
    n25 = len(ddp.bucket_sizes(sizes[::-1], bucket_cap_bytes=25 * 2**20))
    assert n1 >= n25 > 100  # (a bare count used to make 2 buckets whatever the cap)
    with pytest.raises(ValueError, match="params"):
        architecture_for_params(float("nan"))
