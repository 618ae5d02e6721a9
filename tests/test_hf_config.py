"""Your own model: a Hugging Face config.json read offline into the Architecture a preset gives
(parameters within 0.5 % of the shipped presets, same tensors, activations and FLOPs)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.architecture import load_arch
from costmodel.hf_config import MODEL_TYPES, arch_from_hf_config, load_hf_config
from costmodel.scenario import Scenario

DATA = Path(__file__).parent / "data" / "hf_configs"
SHIPPED = sorted(
    d.name for d in DATA.iterdir() if d.is_dir() and d.name != "gpt-neox-20b"
)  # gpt-neox-20b has no shipped preset


def _cfg(name: str) -> dict:
    return json.loads((DATA / name / "config.json").read_text())


def test_every_shipped_transformer_with_a_config_is_covered():
    assert len(SHIPPED) == 13
    covered = {MODEL_TYPES[_cfg(n)["model_type"]] for n in [*SHIPPED, "gpt-neox-20b"]}
    assert covered == set(MODEL_TYPES.values())


@pytest.mark.parametrize("name", SHIPPED)
def test_config_gives_the_presets_architecture(name):
    a = load_arch(str(DATA / name / "config.json"))
    ref = load_arch(name)
    assert a.params == pytest.approx(ref.params, rel=0.005)
    assert a.params == pytest.approx(ref.published_params, rel=0.005)
    assert a.active_params == pytest.approx(ref.active_params, rel=0.005)
    assert a.tensors() == ref.tensors()
    assert a.activation_bytes(4096, 2) == pytest.approx(ref.activation_bytes(4096, 2))
    assert a.training_flops_per_token(4096) == pytest.approx(ref.training_flops_per_token(4096))
    # named by what the file says (no _name_or_path: its model_type and size), not its folder
    model_type = json.loads((DATA / name / "config.json").read_text(encoding="utf-8"))["model_type"]
    assert re.fullmatch(rf"{model_type} \([0-9.]+[MBT]\)", a.name), a.name
    assert a.source.endswith("config.json")


def test_gpt_neox_20b_matches_its_published_count():
    a = load_hf_config(DATA / "gpt-neox-20b" / "config.json")
    # Black et al. 2022, "GPT-NeoX-20B", arXiv:2204.06745: 20B parameters (HF model card: 20B)
    assert a.params == pytest.approx(20.55e9, rel=0.005)
    names = [n for n, _ in a.tensors()]
    assert names[0] == "gpt_neox.embed_in.weight" and names[-1] == "embed_out.weight"
    assert len(names) == 44 * 12 + 4


def test_the_users_file_is_read_not_modified(tmp_path):
    p = tmp_path / "mine" / "config.json"
    p.parent.mkdir()
    p.write_bytes((DATA / "llama-2-7b" / "config.json").read_bytes())
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    a = load_arch(str(p))
    assert a.name == "llama (6.7B)" and a.params == 6738415616  # the file's, not the folder's
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model_type": "bert"}, "model_type 'bert' is not supported"),
        ({"model_type": None}, "model_type"),
        ({"hidden_size": None}, "hidden_size"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"intermediate_size": 1.5}, "intermediate_size"),
        ({"vocab_size": "32000"}, "vocab_size"),
        ({"attention_bias": True}, "attention_bias"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"num_key_value_heads": 7}, "kv_heads"),
    ],
)
def test_a_config_it_cannot_read_names_the_field(change, field):
    cfg = {k: v for k, v in {**_cfg("llama-2-7b"), **change}.items() if v is not None}
    with pytest.raises(ValueError, match=field):
        arch_from_hf_config(cfg, name="x")


def test_moe_fields_are_required_and_checked():
    cfg = _cfg("mixtral-8x7b")
    del cfg["num_local_experts"]
    with pytest.raises(ValueError, match="num_local_experts"):
        arch_from_hf_config(cfg, name="x")
    ds = {**_cfg("deepseek-v3"), "moe_layer_freq": 2}
    with pytest.raises(ValueError, match="moe_layer_freq"):
        arch_from_hf_config(ds, name="x")


def test_bad_paths_and_files_are_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no such file .*missing.json.*architecture preset"):
        load_arch(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a JSON config"):
        load_arch(str(bad))


def test_cli_and_scenario_take_a_config_path():
    path = str(DATA / "llama-2-7b" / "config.json")
    r = CliRunner().invoke(cli.app, ["memory", "--arch", path, "--json"])
    assert r.exit_code == 0, r.stderr
    ref = CliRunner().invoke(cli.app, ["memory", "--arch", "llama-2-7b", "--json"])
    a, b = json.loads(r.stdout), json.loads(ref.stdout)
    assert a["memory_bytes"] == b["memory_bytes"] and a["params"] == b["params"]
    s = Scenario(arch=path, cluster="dgx-h100", nodes=2).evaluate(scaling=False, flips=False)
    t = Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=2).evaluate(
        scaling=False, flips=False
    )
    assert s.step_time_s == pytest.approx(t.step_time_s)
    r = CliRunner().invoke(cli.app, ["memory", "--arch", str(DATA / "nope" / "config.json")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
