"""QA pass 19: a sequence past the model's context is said, DOES NOT FIT once, a gap no run
could measure is a tie, one typed price over many GPUs is warned, ``--base-tokens`` has a
range, and a grid file's relative paths are read from its own folder."""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings

import pytest
from streamlit.testing.v1 import AppTest

import costmodel as cm
from costmodel import cli
from costmodel.architecture import architecture_for_params, architecture_notes, context_note
from costmodel.hf_config import arch_from_hf_config
from costmodel.strategy.advisor import advise, vs_fastest
from costmodel.strategy.memory import memory_notes
from costmodel.strategy.step import left_out_notes
from costmodel.verdict import GAP_RESOLUTION, decide, within_expected_error

from ._cli import one_line_error, run
from ._paths import ROOT

WEB = ROOT / "costmodel" / "web"
PAST = "is past gpt2-124m's context of 1,024 tokens"


# --- 1. a sequence longer than the model's context ---------------------------------------------
def test_presets_carry_their_trained_context():
    # the config.json values cited beside each preset's number (n_positions, max_position_...)
    assert cm.load_arch("gpt2-124m").max_positions == 1024
    assert cm.load_arch("llama-2-7b").max_positions == 4096
    assert cm.load_arch("llama-3-8b").max_positions == 8192
    assert cm.load_arch("llama-3.1-8b").max_positions == 131072
    # a bare parameter count has no model's context: nothing to run past
    assert architecture_for_params(7e9).max_positions is None


def test_context_note_says_learned_tables_cannot_run_past_and_rope_can_be_extended():
    assert context_note("gpt2-124m", 1024) is None
    learned = context_note("gpt2-124m", 4096)
    assert PAST in learned and "learned position table" in learned
    assert "cannot run" in learned
    rope = context_note("llama-3-8b", 16384)
    assert "past llama-3-8b's context of 8,192 tokens" in rope and "rotary" in rope
    assert "cannot run" not in rope  # a note, not a refusal: RoPE can be scaled
    assert context_note("llama-3.1-8b", 16384) is None
    assert architecture_notes(None, 10**6) == ()


def test_hf_config_carries_its_context_and_none_when_it_does_not_say():
    llama = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024,
             "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000}  # fmt: skip
    assert arch_from_hf_config(llama, name="x").max_positions is None  # was 1: "past 1 token"
    assert context_note(arch_from_hf_config(llama, name="x"), 4096) is None
    with_ctx = arch_from_hf_config({**llama, "max_position_embeddings": 2048}, name="y")
    assert "context of 2,048 tokens" in context_note(with_ctx, 4096)
    gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100}
    assert arch_from_hf_config({**gpt2, "n_ctx": 512}, name="old").max_positions == 512
    assert arch_from_hf_config({**gpt2, "n_positions": 256}, name="new").max_positions == 256
    with pytest.raises(ValueError, match="missing field 'n_positions'"):
        arch_from_hf_config(gpt2, name="none")  # it sizes the position table: needed


def test_shared_notes_functions_say_it():
    p = cm.load_arch("gpt2-124m").params
    assert any(PAST in n for n in left_out_notes(cm.load_arch("gpt2-124m"), p, 4096))
    assert not any("is past" in n for n in left_out_notes(cm.load_arch("gpt2-124m"), p, 1024))
    assert any(PAST in n for n in memory_notes("", p, "gpt2-124m", 4096))
    assert not any("is past" in n for n in memory_notes("", p, "gpt2-124m"))


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "--arch", "gpt2-124m", "--ranks", "8"),
        ("step", "--arch", "gpt2-124m"),
        ("step", "--arch", "gpt2-124m", "--strategy", "all"),
        ("scenario", "--arch", "gpt2-124m"),
        ("train", "--arch", "gpt2-124m", "--tokens", "1B", "--usd-per-gpu-hour", "2"),
    ],
)
def test_every_command_notes_a_sequence_past_the_context(args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert PAST in r.stdout, r.stdout
    short = run(*args, "--seq", "1024")
    assert short.exit_code == 0, short.stderr
    assert "is past" not in short.stdout


def test_api_scenario_cost_and_sweeps_note_it():
    s = cm.Scenario(arch="gpt2-124m", cluster="dgx-h100")
    r = s.evaluate()
    assert any(PAST in n for n in r.notes)
    assert any(PAST in n for n in r.training_cost(1e9, usd_per_gpu_hour=2.0).notes)
    step = cm.sweep(kind="step", preset="dgx-h100", arch="gpt2-124m,llama-2-7b")
    by_arch = dict(zip(step["arch"], step["notes"], strict=True))
    assert PAST in by_arch["gpt2-124m"] and "is past" not in by_arch["llama-2-7b"]
    mem = cm.sweep(kind="memory", arch="gpt2-124m", ranks=8, sequence_length="1024,4096")
    by_seq = dict(zip(mem["sequence_length"], mem["notes"], strict=True))
    assert PAST in by_seq[4096] and "is past" not in by_seq[1024]


# --- 2. scenario says DOES NOT FIT once --------------------------------------------------------
def test_scenario_says_does_not_fit_once():
    r = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "1")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("DOES NOT FIT") == 1, r.stdout
    summary = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100").evaluate().summary()
    assert summary.count("DOES NOT FIT") == 1
    assert summary.startswith("DOES NOT FIT")


# --- 3. a gap no run could measure is a tie ----------------------------------------------------
def test_tie_rule_ties_a_gap_below_the_printed_resolution():
    assert within_expected_error(GAP_RESOLUTION / 100, 0.0)
    assert not within_expected_error(0.073, 0.0074)
    v = decide({"fsdp": 1.0, "zero1": 1.0 + 1e-7}, 0.0)
    assert v.winner is None and "(beyond" not in v.text()
    assert decide({"a": 1.0, "b": 1.05}, 0.0).winner == "a"  # a real gap still wins


def test_step_all_on_one_gpu_calls_rounding_noise_tied():
    a = advise(1e9, cluster=cm.presets.cluster("dgx-h100", gpus_per_node=1))
    rows = a.rows()
    tiny = [r for r in rows if r["gap_to_best"] is not None and r["gap_to_best"] < GAP_RESOLUTION]
    assert tiny  # zero1/zero2 a rounding gap behind fsdp on one GPU
    assert all(r["within_expected_error"] and vs_fastest(r) == "tied" for r in tiny)
    r = run("step", "--params", "1B", "--strategy", "all", "--gpus-per-node", "1")
    assert r.exit_code == 0, r.stderr
    assert "beyond ±0%" not in r.stdout and "<0.01%" not in r.stdout.split("note:")[0]
    assert "tied" in r.stdout


# --- 4. one typed price over several GPUs ------------------------------------------------------
STEP_SWEEP = ("sweep", "--kind", "step", "--set", "arch=llama-3.1-8b", "--set", "nodes=2",
              "--tokens", "1T", "--usd-per-gpu-hour", "2", "--no-progress")  # fmt: skip


def _main(*argv: str) -> tuple[int, str]:
    """``costmodel ARGV`` through the script's entry (its warnings as ``costmodel: warning:``)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, err.getvalue()


def test_sweep_warns_once_when_one_typed_price_spans_gpus():
    code, stderr = _main(*STEP_SWEEP, "--set", "preset=dgx-h100,dgx-a100")
    assert code == 0, stderr
    said = [ln for ln in stderr.splitlines() if "one typed price" in ln]
    assert len(said) == 1, stderr
    assert said[0].startswith("costmodel: warning: usd_per_gpu_hour:")
    assert "h100" in said[0] and "a100" in said[0]
    code, stderr = _main(*STEP_SWEEP, "--set", "preset=dgx-h100")
    assert code == 0 and "one typed price" not in stderr
    with pytest.warns(UserWarning, match="one typed price"):
        cm.sweep(kind="step", preset="dgx-h100,dgx-a100", arch="llama-3.1-8b", tokens="1T",
                 usd_per_gpu_hour=2.0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", tokens="1T",
                 usd_per_gpu_hour=2.0)  # fmt: skip


# --- 5. --base-tokens has a range --------------------------------------------------------------
BATCH = ("batch", "--local", "1", "--ranks", "8", "--accumulation", "1", "--seq", "4096",
         "--base-lr", "3e-4")  # fmt: skip


@pytest.mark.parametrize("typed", ["1e30", "0", "1.5", "2e16"])
def test_base_tokens_out_of_range_is_one_line(typed):
    one_line_error(
        run(*BATCH, "--base-tokens", typed),
        "--base-tokens: must be a whole number of tokens in 1..1e16",
        f"got '{typed}'",
    )
    assert run(*BATCH, "--base-tokens", "1Mi").exit_code == 0


def test_app_batch_page_refuses_base_tokens_in_the_same_words():
    at = AppTest.from_file(str(WEB / "page_batch.py"), default_timeout=60)
    at.query_params.update({"batch_unit": "tokens"})
    at.run()
    assert not at.exception and not at.error
    # the box holds at most 2**53 (the widget's own bound): 0, below the range, is refused in
    # the CLI's words (it was "base_batch: must be a finite number > 0", the library's)
    at.number_input(key="base_tokens").set_value(0).run()
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
    assert any(
        "must be a whole number of tokens in 1..1e16" in e and "tuned at [tokens]" in e
        for e in errors
    ), errors


# --- 6. a grid file's relative paths -----------------------------------------------------------
def test_grid_file_paths_are_read_from_its_folder(tmp_path, monkeypatch):
    model = tmp_path / "grids" / "my-model"
    model.mkdir(parents=True)
    cfg = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024,
           "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000}  # fmt: skip
    (model / "config.json").write_text(json.dumps(cfg))
    grid = tmp_path / "grids" / "grid.toml"
    grid.write_text('kind = "memory"\n[grid]\narch = ["my-model/config.json", "my-model"]\n'
                    "ranks = 8\n")  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    g = cm.sweep.load_grid(grid)
    assert [str(x) for x in g.axes["arch"]] == [
        str(model / "config.json"),
        str(model),
    ]
    r = run("sweep", str(grid), "--no-progress", "--json")
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)) == 2
