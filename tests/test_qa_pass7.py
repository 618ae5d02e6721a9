"""Seventh QA pass: what a planner types on the CLI and reads on the pages. Each test failed
before its fix.
"""

from __future__ import annotations

import pytest

from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-3.1-8b")


# --- a Scenario refusal on train/scenario names the option typed, not the API field ------------
@pytest.mark.parametrize("command", ["train", "scenario"])
@pytest.mark.parametrize(
    ("options", "option", "field", "why"),
    [
        (("--nodes", "16", "--strategy", "hsdp", "--group-size", "3"), "--group-size",
         "group_size", "does not divide the 128 ranks"),
        (("--power-limit-w", "5"), "--power-limit-w", "power_limit_w", "must be a power in"),
        (("--strategy", "ddp", "--reshard"), "--reshard", "reshard_after_forward",
         "only fsdp and hsdp reshard"),
        (("--cluster", "dgx-h1000"), "--cluster", "name", "unknown cluster preset"),
        (("--recipe", "adam"), "--recipe", "recipe", "unknown recipe 'adam'"),
        (("--params", "5B"), "--params", "params", "differs from llama-3.1-8b's"),
    ],
)  # fmt: skip
def test_a_scenario_refusal_names_the_option(command, options, option, field, why):
    """``train --strategy hsdp --group-size 3`` answered "Scenario: group_size: 3 does not
    divide ...": the API's field, not the option the user typed."""
    tokens = ("--tokens", "1T") if command == "train" else ()
    line = one_line_error(run(command, *LLAMA, *options, *tokens), f"error: {option}: ", why)
    assert "Scenario" not in line and f"{field}:" not in line.replace(f"{option}:", "")


# --- the step chart's time axis reads in minutes, hours or days, not "10Ms" ----------------------
@pytest.mark.parametrize(
    ("kw", "unit", "seconds"),
    [
        ({"mfu": 1e-3, "local_batch": 640}, "h", 3600.0),  # a 33-hour step (MFU at its 0.1% floor)
        ({"mfu": 1e-3, "local_batch": 40960}, "days", 86400.0),  # weeks
        ({"mfu": 0.02, "local_batch": 32}, "min", 60.0),  # minutes
    ],
)
def test_a_long_step_s_time_axis_reads_in_a_unit_a_person_uses(kw, unit, seconds):
    """An absurd step's timeline read "10Ms, 20Ms" (plotly's SI multiples of a second); the
    ticks are now written in minutes, hours or days, and still cover the whole step."""
    from costmodel import plots
    from costmodel.scenario import Scenario

    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4, strategy="fsdp", **kw).evaluate(
        scaling=False, flips=False
    )
    assert r.step_time_s >= 2 * seconds
    figures = (
        plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s),
        plots.step_compare_figure({"A": (r.compute_s, r.exposed_comm_s)}),
    )
    for fig in figures:
        axis = fig.layout.xaxis
        assert all(t.endswith(f" {unit}") for t in axis.ticktext), axis.ticktext
        assert 3 <= len(axis.ticktext) <= 9
        for text, value in zip(axis.ticktext, axis.tickvals, strict=True):
            assert float(text.split()[0]) * seconds == pytest.approx(value)
        assert axis.tickvals[-1] >= r.step_time_s * (1 - 1e-9) or fig is figures[1]


def test_a_short_step_s_time_axis_keeps_si_seconds():
    from costmodel import plots
    from costmodel.scenario import Scenario

    r = Scenario(params=7e9, cluster="dgx-h100", nodes=4, strategy="fsdp").evaluate(
        scaling=False, flips=False
    )
    fig = plots.ddp_timeline_figure(r.timeline, compute_s=r.compute_s, step_time_s=r.step_time_s)
    assert fig.layout.xaxis.ticksuffix == "s" and fig.layout.xaxis.tickvals is None


# --- step has the default cluster of train, scenario and the API -------------------------------
@pytest.mark.parametrize("strategy", ["fsdp", "all"])
def test_step_without_a_cluster_runs_on_the_api_s_default_and_says_so(strategy):
    """``step --arch llama-3.1-8b --nodes 16`` exited 2 "needs --cluster NAME" while train,
    scenario and strategy_step answer the same question on dgx-h100: one default now, named on
    stderr; the answer is the one ``--cluster dgx-h100`` gives."""
    import inspect
    import json

    import costmodel as cm
    from costmodel.scenario import Scenario

    default = Scenario.model_fields["cluster"].default
    assert inspect.signature(cm.strategy_step).parameters["cluster"].default == default
    args = ("step", *LLAMA, "--nodes", "16", "--strategy", strategy, "--json")
    bare, given = run(*args), run(*args, "--cluster", default)
    assert bare.exit_code == 0, bare.stderr
    assert (
        bare.stderr.strip()
        == f"assumed: cluster {default} (the default; --cluster NAME for another)"
    )
    assert given.stderr == "" and json.loads(bare.stdout) == json.loads(given.stdout)
    if strategy == "fsdp":
        api = cm.strategy_step(None, arch="llama-3.1-8b", nodes=16, strategy="fsdp", band=False)
        assert json.loads(bare.stdout)["step_time_s"] == pytest.approx(api.step_time_s, rel=1e-9)


def test_scenario_names_its_field_for_the_step_s_name():
    """``Scenario(micro_batch=2)`` said only "Extra inputs are not permitted"; the step's name
    for the same input is ``micro_batch``, Scenario's ``local_batch``: the error names both."""
    import pydantic

    import costmodel as cm

    with pytest.raises(
        pydantic.ValidationError, match="micro_batch: Scenario calls it local_batch"
    ):
        cm.Scenario(arch="llama-3.1-8b", micro_batch=2)
    assert cm.Scenario(arch="llama-3.1-8b", local_batch=2).local_batch == 2
