"""CLI papercuts of pass 6: ``predict --harness`` where it cannot take effect."""

from __future__ import annotations

import json

import pytest

from ._cli import one_line_error, run

_PREDICT = ("predict", "--cluster", "dgx-h100", "--nodes", "2", "--sizes", "1KB,4MB")


def _times(*args: str) -> list[float]:
    r = run(*_PREDICT, *args, "--json")
    assert r.exit_code == 0, r.stderr
    return [row["time_s"] for row in json.loads(r.stdout)["results"]]


@pytest.mark.parametrize("model", ["lesson", "textbook", "nccl-table", "LESSON"])
@pytest.mark.parametrize("harness", ["pytorch", "nccl-tests-g"])
def test_predict_refuses_a_harness_the_model_has_no_floor_for(model: str, harness: str) -> None:
    # the alpha-beta formulas and NCCL's table answered --harness pytorch with nccl-tests' times
    line = one_line_error(run(*_PREDICT, "--model", model, "--harness", harness), "--harness: ")
    assert f"the {model.lower()} model has no launch floor" in line
    assert f"{harness!r}" in line and "--model nccl or calibrated" in line


def test_predict_refuses_a_harness_with_compare_models() -> None:
    line = one_line_error(run(*_PREDICT, "--compare-models", "--harness", "pytorch"))
    assert line.startswith("costmodel: error: --harness: --compare-models compares every model")


@pytest.mark.parametrize("model", ["nccl", "lesson", "textbook", "nccl-table"])
def test_predict_takes_the_default_harness_under_every_model(model: str) -> None:
    assert len(_times("--model", model, "--harness", "nccl-tests")) == 2


def test_predict_s_harness_still_sets_the_nccl_model_s_floor() -> None:
    torch, nccl_tests = _times("--harness", "pytorch"), _times()
    assert all(t > n for t, n in zip(torch, nccl_tests, strict=True))


def test_an_unknown_model_or_harness_is_refused_as_before() -> None:
    one_line_error(run(*_PREDICT, "--model", "magic", "--harness", "pytorch"), "--model: 'magic'")
    one_line_error(run(*_PREDICT, "--model", "lesson", "--harness", "mpi"), "unknown harness 'mpi'")


def test_predict_help_says_where_the_harness_applies() -> None:
    text = " ".join(run("predict", "--help").stdout.split())
    assert "launch floor of --model nccl and calibrated" in text
