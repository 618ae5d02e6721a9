"""A fresh look at the CLI as a new user planning a run (pass 16): what a command prints beside
a measured step, and what scenario --vs may change."""

import json

from tests._cli import run

# Llama-3.1-70B under ZeRO-1 on 64 H100s does not fit: train lists the changes that make it fit
TRAIN_70B = ("train", "--arch", "llama-3.1-70b", "--tokens", "2T", "--nodes", "8", "--zero", "1")


# --- train --step-time: the fit changes' steps are predicted, and say against what -------------


def test_train_step_time_fit_changes_say_they_are_against_the_predicted_step():
    """With --step-time the train's step is the measurement, but the fit changes are predicted
    and their % is against the predicted step of the setup: the text names that step (it is
    shown nowhere else) so '+24%' is not read against the 5 s typed."""
    pred = json.loads(run(*TRAIN_70B, "--json").stdout)["step_time_s"]
    r = run(*TRAIN_70B, "--step-time", "5s")
    assert r.exit_code == 0, r.stderr
    head = r.stdout.split("\n")
    assert head[0].startswith("DOES NOT FIT")
    fit_lines = [ln for ln in head[1:] if ln.startswith("  ") and not ln.startswith("  (")]
    assert fit_lines, r.stdout
    said = next(ln for ln in head if "not the measured --step-time" in ln)
    from costmodel import units

    assert units.format_duration(pred) in said and "5 s" in said
    # and it comes right after the changes, before the train's own table
    assert head.index(said) == 1 + len(fit_lines)


def test_train_step_time_fit_json_names_the_predicted_step():
    d = json.loads(run(*TRAIN_70B, "--step-time", "5s", "--json").stdout)
    pred = json.loads(run(*TRAIN_70B, "--json").stdout)["step_time_s"]
    fs = d["fit_suggestions"]
    assert fs["step_time_s"] == pred and d["step_time_s"] == 5.0
    ch = fs["changes"][0]
    assert abs(ch["step_time_change"] - (ch["step_time_s"] / pred - 1.0)) < 1e-12


def test_train_without_step_time_fit_text_unchanged():
    r = run(*TRAIN_70B)
    assert r.exit_code == 0, r.stderr
    assert "not the measured --step-time" not in r.stdout
