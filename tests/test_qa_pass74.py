"""QA pass 74: hand-written Hugging Face configs (sliding windows, transformers' defaults for a
missing num_key_value_heads, MLA activations, one name per model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli
from costmodel.architecture import architecture_notes, load_arch
from costmodel.hf_config import arch_from_hf_config, load_hf_config

DATA = Path(__file__).parent / "data" / "hf_configs"
MISTRAL = DATA / "mistral-7b" / "config.json"


def _cfg(name: str) -> dict:
    return json.loads((DATA / name / "config.json").read_text())


def _span(t: int, w: int) -> float:
    """Keys per query in PaLM's count (mask not credited) under a causal window ``w``: the
    full ``t`` scaled by the windowed share of the causal (query, key) pairs, summed by brute
    force."""
    pairs = sum(min(i, w) for i in range(1, t + 1))
    return t * pairs / (t * (t + 1) / 2)


# --- 1. sliding window ---------------------------------------------------------------------------
def test_the_window_closed_form_is_the_brute_force_sum():
    from costmodel.architecture import windowed_span

    for t, w in [(10, 3), (7, 7), (7, 20), (100, 1), (4096, 4096), (513, 64)]:
        assert windowed_span(t, w) == pytest.approx(_span(t, w), rel=1e-12)
    assert windowed_span(4096, None) == 4096


@pytest.mark.parametrize("arch", ["mistral-7b", str(MISTRAL)])
def test_mistral_prices_attention_on_its_window(arch):
    a = load_arch(arch)
    assert a.sliding_window == 4096
    n = a.active_params - a.embedding_params
    attn = 12.0 * a.layers * a.heads * a.dim_head
    for t in (4096, 32768):
        want = 6.0 * n + attn * _span(t, 4096)
        assert a.training_flops_per_token(t) == pytest.approx(want, rel=1e-12)
    # at 4096 the window is the whole sequence: as before, 49.1 G
    assert a.training_flops_per_token(4096) == pytest.approx(6.0 * n + attn * 4096)
    assert a.training_flops_per_token(32768) < 0.6 * (6.0 * n + attn * 32768)


def test_a_window_past_the_sequence_or_null_changes_nothing():
    cfg = _cfg("mistral-7b")
    full = arch_from_hf_config({**cfg, "sliding_window": None}, name="m")
    assert full.sliding_window is None
    assert full.training_flops_per_token(32768) == pytest.approx(
        6.0 * (full.active_params - full.embedding_params)
        + 12.0 * full.layers * full.heads * full.dim_head * 32768
    )
    wide = arch_from_hf_config({**cfg, "sliding_window": 65536}, name="m")
    assert wide.training_flops_per_token(32768) == full.training_flops_per_token(32768)


def test_mistral_without_the_key_takes_transformers_default_window():
    cfg = {k: v for k, v in _cfg("mistral-7b").items() if k != "sliding_window"}
    a = arch_from_hf_config(cfg, name="m")
    assert a.sliding_window == 4096
    assert any("sliding_window not in the file" in n for n in a.config_notes)


def test_qwen2_window_only_when_used_and_only_above_max_window_layers():
    cfg = _cfg("qwen2.5-7b")
    off = arch_from_hf_config(cfg, name="q")
    assert off.sliding_window is None  # use_sliding_window false
    on = arch_from_hf_config(
        {**cfg, "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 20},
        name="q",
    )
    assert on.sliding_window == 4096 and on.window_layers == 28 - 20
    n = on.active_params - on.embedding_params
    per = 12.0 * on.heads * on.dim_head
    t = 32768
    want = 6.0 * n + per * (20 * t + 8 * _span(t, 4096))
    assert on.training_flops_per_token(t) == pytest.approx(want, rel=1e-12)
    # every layer below max_window_layers: all full attention
    allfull = arch_from_hf_config(
        {**cfg, "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 28},
        name="q",
    )
    assert allfull.training_flops_per_token(t) == off.training_flops_per_token(t)
    # an explicit layer_types list is what transformers reads
    typed = arch_from_hf_config(
        {
            **cfg,
            "use_sliding_window": True,
            "sliding_window": 4096,
            "layer_types": ["sliding_attention", "full_attention"] * 14,
        },
        name="q",
    )
    assert typed.window_layers == 14


def test_activations_do_not_change_with_the_window():
    a = load_arch("mistral-7b")
    full = a.model_copy(update={"sliding_window": None})
    assert a.activation_bytes(32768, 1) == full.activation_bytes(32768, 1)


def test_the_window_is_said_where_it_changes_the_numbers():
    notes = architecture_notes("mistral-7b", 32768)
    assert any("sliding window 4,096" in n for n in notes), notes
    assert not any("sliding window" in n for n in architecture_notes("mistral-7b", 4096))
    r = CliRunner().invoke(
        cli.app,
        [
            "train",
            "--arch",
            str(MISTRAL),
            "--tokens",
            "1T",
            "--nodes",
            "8",
            "--strategy",
            "fsdp",
            "--recompute",
            "full",
            "--seq",
            "32768",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "sliding window 4,096" in r.output


# --- 2. missing num_key_value_heads -----------------------------------------------------------
BARE = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "vocab_size": 32000,
}


@pytest.mark.parametrize(
    ("model_type", "extra", "kv"),
    [
        ("mistral", {}, 8),
        ("mixtral", {"num_local_experts": 8, "num_experts_per_tok": 2}, 8),
        ("qwen2", {}, 32),
    ],
)
def test_missing_kv_heads_is_transformers_default_and_said(model_type, extra, kv):
    a = arch_from_hf_config({"model_type": model_type, **BARE, **extra}, name="m")
    assert a.kv_heads == kv
    said = f"num_key_value_heads not in the file: transformers' default for {model_type}, {kv}"
    assert any(said in n for n in a.config_notes), a.config_notes
    assert any(said in n for n in architecture_notes(a, 4096))


def test_the_qa_mistral_is_7_24b(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"model_type": "mistral", **BARE}))
    assert load_hf_config(p).params == 7_241_732_096
    r = CliRunner().invoke(cli.app, ["memory", "--arch", str(p), "--ranks", "8"])
    assert r.exit_code == 0, r.output
    assert "num_key_value_heads not in the file" in r.output


def test_llama_default_is_full_multi_head_and_said():
    a = arch_from_hf_config({"model_type": "llama", **BARE}, name="m")
    assert a.kv_heads == 32
    assert any("num_attention_heads" in n for n in a.config_notes)


def test_a_default_that_does_not_divide_the_heads_names_the_key():
    with pytest.raises(ValueError, match="num_key_value_heads.*default.*32"):
        arch_from_hf_config({"model_type": "qwen2", **BARE, "num_attention_heads": 28}, name="q")


def test_a_full_config_has_no_default_notes():
    for name in ("mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "llama-2-7b"):
        assert load_arch(str(DATA / name / "config.json")).config_notes == ()


# --- 3. MLA activations ------------------------------------------------------------------------
def _mla_attention_bytes(a) -> float:
    h = a.hidden
    qk = a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
    v = a.heads * a.v_head_dim
    lat_q = 2 * 2 * a.q_lora_rank  # q_a output (norm input) and the normed latent (q_b input)
    lat_kv = 2 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2 * a.kv_lora_rank
    return 2 * h + lat_q + lat_kv + 2 * (qk + qk + v) + 2 * v


def test_deepseek_v3_layer_activations_use_the_mla_widths():
    a = load_arch("deepseek-v3")
    h = a.hidden
    f_dense = a.ffn
    f_moe = a.expert_ffn * (a.experts_per_token + a.shared_experts)
    attn = _mla_attention_bytes(a)
    dense = 4 * h + attn + 2 * h + 8 * f_dense
    moe = 4 * h + attn + 2 * h + 8 * f_moe
    assert a._layer_activation_bytes(0, 4096, True) == pytest.approx(dense)
    assert a._layer_activation_bytes(a.layers - 1, 4096, True) == pytest.approx(moe)
    # the matmul outputs: q_a, q_b, kv_a, kv_b, o, then the MLP
    mm = (
        a.q_lora_rank
        + a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
        + a.kv_lora_rank
        + a.qk_rope_head_dim
        + a.heads * (a.qk_nope_head_dim + a.v_head_dim)
        + h
        + 2 * f_moe
        + h
    )
    assert a._matmul_output_bytes(a.layers - 1) == pytest.approx(2.0 * mm)
    sel = 2 * h + 2 * a.heads * a.v_head_dim + 0.5 * 2.0 * mm
    full = a._layer_activation_bytes(a.layers - 1, 4096, True)
    assert a._layer_mode_bytes(a.layers - 1, full, 4096, "selective-op", 2) == pytest.approx(
        min(full, sel)
    )


def test_dense_families_keep_korthikantis_terms():
    a = load_arch("gpt2-124m")
    assert a.activation_bytes_per_token(1024) / a.hidden == 34.0


def test_cm_load_hf_config_takes_a_folder():
    assert cm.load_hf_config(DATA / "mistral-7b").params == load_arch("mistral-7b").params


# --- papercuts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("typed", ["/tmp/x/config.jsn", "/tmp/no-such-folder/mixtral", "m/x"])
def test_a_mistyped_path_is_no_such_file(typed):
    with pytest.raises(ValueError, match="no such file") as exc:
        load_arch(typed)
    assert "closest" not in str(exc.value)
    r = CliRunner().invoke(cli.app, ["memory", "--arch", typed, "--ranks", "8"])
    assert r.exit_code == 2 and "no such file" in r.output, r.output


def test_a_preset_typo_still_gets_the_closest():
    with pytest.raises(ValueError, match="closest: llama-2-7b"):
        load_arch("llama2-7b")


@pytest.mark.parametrize(
    "cmd",
    [["memory", "--ranks", "8"], ["train", "--tokens", "1B", "--nodes", "4", "--strategy", "fsdp"]],
)
def test_one_model_one_name(cmd):
    folder = str(DATA / "mixtral-8x7b")
    r = CliRunner().invoke(cli.app, [cmd[0], "--arch", folder, *cmd[1:]])
    assert r.exit_code == 0, r.output
    assert folder not in r.output
    assert r.output.splitlines()[0].startswith("mixtral (46.7B)"), r.output


def test_rope_scaling_in_the_file_is_its_context():
    cfg = {
        **_cfg("qwen2.5-7b"),
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    a = arch_from_hf_config(cfg, name="q")
    assert a.rope_scaled_positions == 131072
    assert not any("context" in n for n in architecture_notes(a, 65536))
    past = [n for n in architecture_notes(a, 262144) if "context" in n]
    assert past and "131,072" in past[0] and "yarn x4" in past[0], past
    # Llama 3.1's max_position_embeddings already is its scaled context: unchanged
    b = load_arch(str(DATA / "llama-3.1-8b" / "config.json"))
    assert architecture_notes(b, 131072) == ()
    with pytest.raises(ValueError, match="rope_scaling factor"):
        arch_from_hf_config({**cfg, "rope_scaling": {"type": "yarn", "factor": "x"}}, name="q")


def test_keys_that_change_the_trained_model_are_said():
    a = load_arch(str(DATA / "deepseek-v3" / "config.json"))
    assert any("num_nextn_predict_layers 1" in n for n in a.config_notes), a.config_notes
    b = arch_from_hf_config({**_cfg("mistral-7b"), "torch_dtype": "float32"}, name="m")
    assert any("torch_dtype float32" in n for n in b.config_notes)
    assert any("torch_dtype float32" in n for n in architecture_notes(b, 4096))
