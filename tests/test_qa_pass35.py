"""API papercuts of QA pass 35 (a new user planning training runs): each test failed before its
fix. The CLI's own tests of the same pass: tests/test_cli_qa_pass8.py."""

from __future__ import annotations

import math
import re

import pytest

import costmodel as cm

from ._cli import one_line_error, run

PRICE_RULE = "usd_per_gpu_hour: must be a price in (0, 1000] USD per GPU-hour, got"
STEP = {"kind": "step", "preset": "dgx-h100", "arch": "llama-3.1-8b", "tokens": 1e12}


# --- a sweep's typed price: one range, in one set of words -------------------------------------
@pytest.mark.parametrize("usd", [-1, math.nan, math.inf, 0, 5000])
def test_a_sweeps_typed_price_out_of_range_is_refused_in_the_price_limits_words(usd):
    """`cm.sweep(kind="step", ..., usd_per_gpu_hour=-1)` (and a NaN or an infinity) said "must
    be a finite number >= 0", a range the price's own limit contradicts (0 is refused, as
    `train --usd-per-gpu-hour 0` is); `cm.sweep` now says the limit, as `train` and
    `Scenario.training_cost` do."""
    with pytest.raises(ValueError) as err:
        cm.sweep(**STEP, usd_per_gpu_hour=usd)
    assert str(err.value).startswith(PRICE_RULE), err.value
    with pytest.raises(ValueError, match=r"^usd_per_gpu_hour: must be a price in \(0, 1000\]"):
        cm.Scenario(arch="llama-3.1-8b").evaluate().training_cost(1e12, usd_per_gpu_hour=usd)


def test_a_grid_files_negative_price_is_refused_in_the_price_limits_words(tmp_path):
    grid = tmp_path / "plan.toml"
    grid.write_text(
        'kind = "step"\n[grid]\npreset = ["dgx-h100"]\narch = ["llama-3.1-8b"]\n'
        'tokens = ["1T"]\nusd_per_gpu_hour = [-1]\n'
    )
    out = tmp_path / "plan.csv"
    one_line_error(run("sweep", str(grid), "-o", str(out)), PRICE_RULE)
    assert not out.exists()


def test_a_sweeps_typed_price_in_range_still_prices_every_row():
    df = cm.sweep(**STEP, usd_per_gpu_hour="2.5")
    assert list(df["usd_per_gpu_hour"]) == [2.5]
    assert df["cost_usd"].iloc[0] == pytest.approx(2.5 * df["billed_gpu_hours"].iloc[0])


# --- the layout and memory axes: each option's range, in its words -----------------------------
@pytest.mark.parametrize(
    ("kind", "axis", "bad", "option", "rule"),
    [
        ("step", "bucket_cap", "-1", "--bucket", "a bucket size in 1 B..10 TB (1e13 B)"),
        ("step", "bucket_cap", "0", "--bucket", "a bucket size in 1 B..10 TB (1e13 B)"),
        ("step", "bucket_cap", "1e20", "--bucket", "a bucket size in 1 B..10 TB (1e13 B)"),
        ("step", "zero_stage", "-1", "--zero", "a ZeRO stage in 0..3 (0 ddp"),
        ("step", "zero_stage", "5", "--zero", "a ZeRO stage in 0..3 (0 ddp"),
        ("memory", "zero_stage", "-1", "--zero", "a ZeRO stage in 0..3 (0 ddp"),
        ("memory", "zero_stage", "4", "--zero", "a ZeRO stage in 0..3 (0 ddp"),
        ("step", "group_size", "-2", "--group-size", "a whole number in 1..1,000,000,000"),
        ("memory", "activations", "-1GB", "--activations", "a size in 0 B..16 TiB (2**44 B)"),
        ("memory", "activations", "nan", "--activations", "a size in 0 B..16 TiB (2**44 B)"),
    ],
)
def test_a_sweep_axis_out_of_range_says_the_range_its_command_option_says(
    kind, axis, bad, option, rule
):
    """`--set bucket_cap=-1` said "must be >= 0 bytes", `bucket_cap=0` "every value must be 1
    to 1e+13 bytes", `bucket_cap=1e20` "above the largest size accepted, 1e+18 B": three ranges
    for one, where `step --bucket` says "a bucket size in 1 B..10 TB". Likewise `zero_stage=-1`
    ("a whole number >= 0", and `=5` "allowed 0, 1, 2, 3"), `group_size=-2` (">= 0", where 0
    said 1..1e9) and `activations=-1GB` or `nan`. Each now says its option's limit, in the
    CLI, the API and a grid file alike."""
    head = ["sweep", "--kind", kind, "--set", "preset=dgx-h100"]
    what = ["--set", "arch=llama-3.1-8b"] if kind == "step" else ["--set", "params=7B"]
    extra = ["--set", "strategy=hsdp"] if axis == "group_size" else []
    line = one_line_error(run(*head, *what, *extra, "--set", f"{axis}={bad}"), f"--set {axis}: ")
    assert f"must be {rule}" in line, line
    # the command's own option says the same range
    if kind == "step":
        own = ["step", "--arch", "llama-3.1-8b", *(["--strategy", "hsdp"] if extra else [])]
    else:
        own = ["memory", "--params", "7B"]
    assert f"must be {rule}" in one_line_error(run(*own, option, bad), f"{option}: ")
    api = {"arch": "llama-3.1-8b"} if kind == "step" else {"params": "7B"}
    if extra:
        api["strategy"] = "hsdp"
    with pytest.raises(ValueError, match=rf"^{axis}: must be {re.escape(rule)}"):
        cm.sweep(kind=kind, preset="dgx-h100", **api, **{axis: bad})


# --- papercuts the app's QA pass 32 found in shared wording ------------------------------------
def test_a_gap_of_twice_or_more_is_said_as_a_ratio_not_hundreds_of_percent():
    """`scenario --vs` said "A 393% faster than B by the model alone" where its table said
    B / A 4.93x; a verdict's gap of 2x or more is now a ratio on every surface."""
    from costmodel.verdict import decide

    unknown = decide({"a": 1.0, "b": 4.93}, None).text()
    assert "a 4.93x faster than b" in unknown and "%" not in unknown.split(";")[0], unknown
    assert decide({"a": 1.0, "b": 2.0}, 0.41).text() == "a (b is 2x slower; expected error ±41%)"
    within = decide({"a": 1.0, "b": 2.5}, 1.6).text()
    assert within == "within the expected error: a 2.5x faster than b, under ±160%", within
    assert decide({"a": 1.0, "b": 1.5}, 0.1).text() == "a (b is 50% slower; expected error ±10%)"


def test_the_activation_recipe_writes_its_tokens_with_separators_and_in_the_singular():
    """The memory note read "1 tokens x micro-batch 1" and "100000000 tokens x micro-batch 1"."""
    one = cm.training_memory(arch="llama-3.1-8b", sequence_length=1, micro_batch=1)
    big = cm.training_memory(arch="llama-3.1-8b", sequence_length=100_000_000, micro_batch=1)
    assert "1 token x micro-batch 1," in one.activations_note, one.activations_note
    assert "100,000,000 tokens x micro-batch 1," in big.activations_note, big.activations_note


def test_a_typed_size_that_says_what_is_allowed_says_it_once():
    """The Collectives page's size box read "...; allowed: whole bytes, e.g. '2B', ... .
    Allowed: a number of bytes with an optional unit ..." for '1.5B'."""
    from costmodel.web.data_collectives import typed_size

    with pytest.raises(ValueError) as exc:
        typed_size("1.5B")
    assert str(exc.value).lower().count("allowed") == 1, exc.value
    with pytest.raises(ValueError, match=r"\. Allowed: a number of bytes"):
        typed_size("abc")
