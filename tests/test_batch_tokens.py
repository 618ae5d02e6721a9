"""Tokens-first batch planning and the Adam/AdamW learning-rate rules (batch.py and the CLI)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from costmodel import batch, cli


def run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def test_global_batch_in_tokens_in_and_out():
    # "4M tokens, seq 4096, 512 GPUs" (Llama 2: 4M-token batches at 4096): 1024 sequences
    sol = batch.solve_batch(local_batch=1, ranks=512, global_tokens=4 * 2**20, sequence_length=4096)
    assert (sol.accumulation, sol.global_batch, sol.global_tokens) == (2, 1024, 4 * 2**20)
    assert sol.as_dict()["global_tokens"] == 4 * 2**20
    back = batch.solve_batch(local_batch=2, ranks=256, accumulation=4, sequence_length=2048)
    assert back.global_tokens == 2 * 256 * 4 * 2048 and back.solved == "global_batch"
    assert batch.solve_batch(local_batch=4, ranks=64, global_batch=8192).global_tokens is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(global_tokens=4_000_000, sequence_length=4096), "global_tokens"),
        (dict(global_tokens=2**22), "sequence_length"),
        (dict(global_tokens=2**22, sequence_length=4096, global_batch=1024), "global_tokens"),
        (dict(global_tokens=0, sequence_length=4096), "global_tokens"),
        (dict(global_batch=1024, sequence_length=0), "sequence_length"),
    ],
)
def test_tokens_that_do_not_split_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        batch.solve_batch(local_batch=1, ranks=512, **kwargs)


def test_decimal_token_count_offers_the_binary_reading():
    with pytest.raises(ValueError, match=r"4,194,304 tokens \(1024 x 4096\)"):
        batch.global_batch_from_tokens(4_000_000, 4096)


def test_adam_square_root_rule_and_sgd_linear_rule_are_labelled_and_cited():
    who_sqrt, cite_sqrt = batch.LR_RULE_INFO["sqrt"]
    assert "Adam" in who_sqrt and "arXiv:2205.10287" in cite_sqrt  # Malladi et al. 2022
    who_lin, cite_lin = batch.LR_RULE_INFO["linear"]
    assert "ResNet" in who_lin and "SGD" in who_lin and "arXiv:1706.02677" in cite_lin
    assert "arXiv:1812.06162" in batch.CRITICAL_BATCH_CITATION  # McCandlish et al. 2018
    # 4x the tokens: Adam's rate x 2 (sqrt), SGD's x 4 (linear)
    assert batch.scale_learning_rate(3e-4, 2**20, 2**22, rule="sqrt") == pytest.approx(6e-4)
    assert batch.scale_learning_rate(0.1, 256, 1024, rule="linear") == pytest.approx(0.4)


def test_no_scaling_past_the_critical_batch():
    lr = batch.scale_learning_rate
    # below the critical batch: the plain rule
    assert lr(3e-4, 2**20, 2**21, rule="sqrt", critical_batch=2**23) == pytest.approx(
        3e-4 * math.sqrt(2)
    )
    # past it: as at the critical batch, not beyond
    capped = lr(3e-4, 2**20, 2**24, rule="sqrt", critical_batch=2**22)
    assert capped == pytest.approx(lr(3e-4, 2**20, 2**22, rule="sqrt"))
    assert lr(0.1, 256, 8192, rule="linear", critical_batch=1024) == pytest.approx(0.4)
    # tuned above the critical batch already: no increase, a smaller batch still scales down
    assert lr(0.1, 4096, 8192, critical_batch=1024) == pytest.approx(0.1)
    assert lr(0.1, 4096, 1024, critical_batch=1024) == pytest.approx(0.025)
    arr = lr(0.1, 256, [512, 8192], critical_batch=1024)
    assert arr.tolist() == pytest.approx([0.2, 0.4])
    with pytest.raises(ValueError, match="critical_batch"):
        lr(0.1, 256, 512, critical_batch=0)


def test_cli_batch_tokens_first_with_adam_lr():
    d = json.loads(
        run(
            "batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096",
            "--base-lr", "3e-4", "--base-tokens", "1Mi", "--json",
        ).stdout
    )  # fmt: skip
    assert d["accumulation"] == 2 and d["global_tokens"] == 4 * 2**20
    lr = d["learning_rate"]
    assert lr["rule"] == "sqrt" and lr["learning_rate"] == pytest.approx(6e-4)
    assert "Malladi" in lr["citation"] and lr["unit"] == "tokens"
    text = run("batch", "--local", "4", "--ranks", "64", "--global", "1024", "--seq", "2048").stdout
    assert "global batch [tokens]" in text and "2.1 M" in text
    r = run("batch", "--local", "1", "--ranks", "512", "--global-tokens", "4M", "--seq", "4096")
    assert r.exit_code == 2 and "--global-tokens:" in r.stderr and "4,194,304" in r.stderr
    r = run("batch", "--local", "4", "--ranks", "64", "--global", "1024", "--base-batch", "256")
    assert r.exit_code == 2 and "--base-lr" in r.stderr
    r = run(
        "batch", "--local", "4", "--ranks", "64", "--global", "8192", "--base-lr", "0.1",
        "--base-batch", "256", "--rule", "linear", "--critical-batch", "1024",
    )  # fmt: skip
    assert r.exit_code == 0 and "0.4 (SGD" in r.stdout and "McCandlish" in r.stdout
