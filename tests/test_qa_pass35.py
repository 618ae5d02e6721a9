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
