"""Sixth QA pass: a new user planning a training run (step, strategy, train) on the CLI and the
API. Each test failed before its fix; the fix is in the function every surface calls.
"""

from __future__ import annotations

import pytest

import costmodel as cm
from tests._cli import one_line_error, run


# --- a predicted step past the step-time limit names what the user set ------------------------
def test_a_predicted_step_past_the_limit_names_the_sequence_not_step_time_s():
    """``train --seq 99999999`` (inside --seq's 1..1e8) answered "step_time_s: must be a
    duration in (0, 1e6] s ... got 44583630.76": a field the user never typed, a bare float."""
    line = one_line_error(
        run(
            "train",
            "--arch",
            "llama-3.1-8b",
            "--nodes",
            "16",
            "--strategy",
            "fsdp",
            "--seq",
            "99999999",
            "--tokens",
            "1T",
        ),  # fmt: skip
        "step time: the predicted step of",
        "sequence length 99,999,999",
        "1,000,000 s",
    )
    assert "step_time_s" not in line
    r = cm.Scenario(arch="llama-3.1-8b", nodes=16, strategy="fsdp", sequence_length=99_999_999)
    with pytest.raises(ValueError, match="shorten the sequence") as err:
        r.evaluate(scaling=False, flips=False).training_cost(1e12)
    assert "step_time_s" not in str(err.value)


# --- the step's --help says what its example prints -----------------------------------------
def test_the_step_help_example_states_the_efficiency_it_prints():
    """``step --help`` called practice problem 1 "about 73% efficient"; the example it shows
    prints 58.4% (the 73% is the lesson's perfect overlap, with all of the compute)."""
    import json
    import re

    help_text = " ".join(run("step", "--help").stdout.split())
    claimed = re.search(r"comms-bound, (\d+)% efficient as printed", help_text)
    assert claimed is not None, help_text
    out = run("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "64",
              "--bandwidth", "50GB/s", "--json")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    eff = json.loads(out.stdout)["efficiency"]
    assert int(claimed.group(1)) == round(100 * eff)


# --- a price per GPU-hour is shown as published --------------------------------------------
@pytest.mark.parametrize("vs", [False, True])
def test_the_price_per_gpu_hour_is_the_one_the_cost_is_made_of(vs):
    """``train ... --price aws-p6-b200-on-demand`` printed "$14.2 per GPU-hour" for the
    published $14.242 (three significant figures): GPU-hours x the shown price missed the
    printed cost by $11,000 on a B200 run."""
    price = cm.load_price("aws-p6-b200-on-demand").usd_per_gpu_hour
    args = ["--arch", "llama-3.1-8b", "--nodes", "8", "--strategy", "fsdp", "--tokens", "1T"]
    if vs:
        out = run("scenario", *args, "--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200",
                  "--price-b", "aws-p6-b200-on-demand")  # fmt: skip
    else:
        out = run("train", *args, "--cluster", "dgx-b200", "--price", "aws-p6-b200-on-demand")
    assert out.exit_code == 0, out.stderr
    assert f"${price:g}" in out.stdout and price != float(f"{price:.3g}")


def test_an_unknown_strategy_is_named_before_a_missing_cluster():
    """``step --arch llama-3.1-8b --strategy zero4`` (no --cluster) answered "--strategy zero4:
    the sharded strategies need --cluster NAME", as if zero4 were one of them."""
    one_line_error(
        run("step", "--arch", "llama-3.1-8b", "--nodes", "16", "--strategy", "zero4"),
        "--strategy: unknown 'zero4'; allowed: ddp, zero1, zero2, fsdp, hsdp, all",
    )


def test_a_or_b_says_whose_tokens_per_gpu_each_number_is():
    """FSDP (B) beside HSDP g=8 (A) of Llama 3.1 70B on 16 nodes read "B does more tokens/s per
    GPU (920 vs 942 tokens/s per GPU)": the first number, read after "B does more", is A's."""
    from costmodel.scenario import compare_summary
    from costmodel.units import format_count

    a = cm.Scenario(arch="llama-3.1-70b", nodes=16, strategy="hsdp", group_size=8)
    ra = a.evaluate(scaling=False, flips=False)
    rb = a.with_changes("strategy=fsdp").evaluate(scaling=False, flips=False)
    ga, gb = ra.tokens_per_s / ra.ranks, rb.tokens_per_s / rb.ranks
    said = compare_summary(ra, rb)
    assert f"(A {format_count(ga)} vs B {format_count(gb)} tokens/s per GPU)" in said, said


@pytest.mark.parametrize(
    "name", ["strategy_step", "advise_strategy", "advise_strategy_nodes", "fit_suggestions"]
)
def test_scenario_s_local_batch_on_the_step_names_micro_batch(name):
    """``cm.strategy_step(..., local_batch=1)`` (Scenario's name, and the CLI's --local-batch)
    raised "_prepare_step() got an unexpected keyword argument 'local_batch'": a private
    function, and no word of the step's own name for it."""
    with pytest.raises(TypeError, match="did you mean 'micro_batch'") as err:
        getattr(cm, name)(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, local_batch=1)
    assert str(err.value).startswith(f"{name}: unknown argument 'local_batch'")
