"""ZeRO-1/2's ipg buffers as DeepSpeed allocates them (deepspeedai/DeepSpeed, master of
2026-08-22, deepspeed/runtime/zero/stage_1_and_2.py unless named).

- dtype: ``setup_buckets`` (line 2493) allocates ``torch.empty(int(self.reduce_bucket_size),
  dtype=self.dtype, ...)`` (lines 2502-2504), ``self.dtype`` the optimizer's parameters'
  dtype (``__init__``, line 354): the weights', not the gradients'. The model counted the
  gradient dtype (2 GB instead of 1 GB for fp32 gradients beside bf16 weights).
- overlap: the step overlaps the reduce-scatters with backward by default, which DeepSpeed
  does with ``overlap_comm``, and with it ``setup_buckets`` allocates a second buffer
  (lines 2508-2514). The memory counted one whatever the step did.
- one rank: the buffers are allocated on the first gradient of every backward whatever the
  world size (``process_gradients``, line 1761); the model gave one rank none.
- the default bucket is DeepSpeed's ``reduce_bucket_size`` (deepspeed/runtime/zero/config.py
  line 113: 5e8, a number of elements), not DDP's 25 MiB; the help says which, in which unit.

Each test failed before the fix.
"""

from __future__ import annotations

import json
import warnings

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel.cli import app
from costmodel.strategy import Layout, strategy_memory
from costmodel.strategy.memory import stage_buffers_bytes, stage_memory, stage_min_ranks

E = 5e8  # DeepSpeed's reduce_bucket_size [elements]
ZERO = ("zero1", "zero2")


def _step(strategy: str, params: float = 1e9, **kw: object) -> cm.StrategyStep:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings: not the point
        return cm.strategy_step(
            params, cluster="dgx-h100", nodes=1, strategy=strategy, band=False, **kw
        )


@pytest.mark.parametrize("strategy", ZERO)
def test_the_ipg_buffers_are_in_the_weights_dtype(strategy: str) -> None:
    """bf16 weights: 2 B per element whatever the gradient dtype; fp32 weights: 4 B."""
    lay = Layout(strategy=strategy, ranks=8)
    assert strategy_memory(lay, 7e9).buffers_bytes == 2 * E * 2
    fp32_grads = Layout(strategy=strategy, ranks=8, grad_dtype="fp32")
    assert strategy_memory(fp32_grads, 7e9).buffers_bytes == 2 * E * 2  # bf16 weights
    assert strategy_memory(lay, 7e9, recipe="mixed-adam-fp32-grads").buffers_bytes == 2 * E * 2
    assert strategy_memory(lay, 7e9, recipe="fp32-adam").buffers_bytes == 2 * E * 4
    # a bucket given in bytes of gradients is cap / g elements, held in the weights' dtype
    given = Layout(strategy=strategy, ranks=8, grad_dtype="fp32", bucket_cap_bytes=2**20)
    assert strategy_memory(given, 7e9).buffers_bytes == 2 * (2**20 / 4) * 2


@pytest.mark.parametrize("strategy", ZERO)
def test_memory_counts_the_buffers_the_step_s_overlap_allocates(strategy: str) -> None:
    """Two buffers with overlap (the step's default, DeepSpeed's overlap_comm), one without;
    the step's memory is the memory road's with its own overlap."""
    lay = Layout(strategy=strategy, ranks=8)
    both = strategy_memory(lay, 1e9)
    one = strategy_memory(lay, 1e9, overlap=False)
    assert both.buffers_bytes == 2 * one.buffers_bytes == 2 * E * 2
    on, off = _step(strategy, timeline=False), _step(strategy, timeline=False, overlap=False)
    assert on.memory_bytes == pytest.approx(strategy_memory(lay, 1e9).total_bytes, rel=1e-12)
    assert off.memory_bytes == pytest.approx(one.total_bytes, rel=1e-12)
    assert on.memory_bytes - off.memory_bytes == pytest.approx(E * 2, rel=1e-12)
    # ddp holds the same with or without overlap; fsdp without it holds every unit's unsharded
    # gradient until the backward ends (its reduce-scatters wait for it: tests/test_qa_pass71.py)
    other = Layout(strategy="ddp", ranks=8)
    assert (
        strategy_memory(other, 1e9).total_bytes
        == strategy_memory(other, 1e9, overlap=False).total_bytes
    )
    other = Layout(strategy="fsdp", ranks=8)
    assert (
        strategy_memory(other, 1e9).total_bytes
        < strategy_memory(other, 1e9, overlap=False).total_bytes
    )


def test_overlap_is_refused_in_one_line_when_not_a_bool() -> None:
    with pytest.raises(ValueError, match=r"^overlap: expected a bool") as e:
        strategy_memory(Layout(strategy="zero1", ranks=8), 1e9, overlap="no")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("stage", [1, 2])
def test_one_rank_holds_the_ipg_buffers(stage: int) -> None:
    """DeepSpeed allocates them whatever the world size: memory says what the process holds,
    on every road (strategy_memory, stage_memory, the sweep's buffers, the CLI's JSON)."""
    one = stage_memory(stage, 1, 1e9)
    assert one.buffers_bytes == 2 * E * 2
    assert one.total_bytes == pytest.approx(16e9 + 2 * E * 2, rel=1e-12)
    assert list(stage_buffers_bytes(stage, [1, 8], [1e9, 1e9])) == [2 * E * 2] * 2
    df = cm.sweep(kind="memory", params="1B", ranks="1", zero_stage=str(stage))
    assert float(df["buffers_GB"].iloc[0]) == pytest.approx(2.0, rel=1e-12)
    r = CliRunner().invoke(
        app, ["memory", "--params", "1e9", "--zero", str(stage), "--ranks", "1", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory_parts_bytes"]["buckets_bytes"] == 2 * E * 2
    # fsdp on one rank holds FSDP2's unit copies; ddp on one rank is plain training, no buckets
    assert stage_memory(0, 1, 1e9).buffers_bytes == 0.0
    assert stage_memory(3, 1, 1e9).gathered_bytes > 0
    # the fewest ranks that fit counts them at one rank too: 16 GB + 2 GB > 17 GB
    assert stage_min_ranks(1e9, 17e9, stage) == 2
    assert stage_min_ranks(1e9, 18e9, stage) == 1


def test_the_bucket_help_names_deepspeed_s_default_and_its_unit() -> None:
    """``--bucket`` is bytes of gradients; zero1/zero2's default is DeepSpeed's 5e8 elements
    (1 GB of bf16 gradients), not DDP's 25 MiB."""
    r = CliRunner().invoke(app, ["step", "--help"], env={"COLUMNS": "400", "TERM": "dumb"})
    text = " ".join(r.output.replace("│", " ").split())
    assert "in bytes of gradients" in text, text
    assert "5e8 elements (1 GB of bf16 gradients)" in text, text


@pytest.mark.parametrize(("stage", "label"), [(1, "1 (optimizer)"), (2, "2 (+ gradients)")])
def test_the_memory_page_names_zero_s_buffers_on_one_rank(stage: int, label: str) -> None:
    """The Memory page said "no communication buffer (one rank communicates nothing)" for
    ZeRO-1/2 on one rank; it names their buffers and their size, as the total counts them."""
    from tests.test_app import _text, assert_clean, open_page

    at = open_page("page_memory.py", {"zero_stage": label, "dp_ranks": "1"})
    assert_clean(at)
    sized = next(
        _text(c.value).replace("**", "") for c in at.caption if c.value.startswith("Sized as")
    )
    assert "no communication buffer" not in sized, sized
    assert f"2 GB of ZeRO-{stage}'s gradient bucket buffers" in sized, sized
    assert "allocated on one rank too" in sized, sized
