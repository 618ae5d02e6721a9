"""CLI findings of pass 12 (an option given twice, a memory that does not fit said first):
each test failed before its fix."""

from __future__ import annotations

import pytest

from ._cli import one_line_error, run

_LINK = ("--ranks", "64", "--bandwidth", "50GB/s")
_ONE_LINK_STEP = ("step", "--params", "7B", "--compute-time", "400ms", *_LINK)


# --- an option given twice with two values is refused, not the last one kept ------------------
@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (
            ("collective", "all_reduce", "-s", "14GB", *_LINK, "--ranks", "32"),
            ("--ranks: given twice (64, then 32)",),
        ),
        (
            (*_ONE_LINK_STEP, "--no-sync", "--sync"),
            ("--no-sync, --sync: given both",),
        ),
        (
            ("step", "--arch", "llama-3.1-8b", "--seq", "4096", "--sequence-length", "8192"),
            ("--seq/--sequence-length: given twice (4096, then 8192)",),
        ),
        (
            ("scenario", "--params", "7B", "--vs", "nodes=2", "--vs", "zero_stage=3"),
            ("--vs: given twice (nodes=2, then zero_stage=3)", "--vs 'nodes=2,zero_stage=3'"),
        ),
        (
            (
                "sweep",
                "--set",
                "preset=dgx-h100",
                "--set",
                "size=1GB",
                "-o",
                "nowhere/a.csv",
                "-onowhere/b.csv",
            ),
            ("-o: given twice (nowhere/a.csv, then nowhere/b.csv)",),
        ),
        (
            ("train", "--params", "7B", "--tokens", "1T", "--nodes=2", "--nodes", "4"),
            ("--nodes: given twice (2, then 4)",),
        ),
        (  # a command of a sub-group
            ("presets", "show", "dgx-h100", "--nodes", "1", "--nodes", "2"),
            ("--nodes: given twice (1, then 2)",),
        ),
    ],
    ids=["collective", "flag-pair", "spellings", "scenario-vs", "sweep-output", "train", "sub"],
)
def test_an_option_given_twice_with_two_values_is_refused(command, fragments):
    one_line_error(run(*command), *fragments)


def test_an_option_repeated_with_its_value_or_a_repeatable_one_is_answered():
    # the same value twice asks one thing; --size is a list
    r = run("collective", "all_reduce", "-s", "14GB", "-s", "1GB", *_LINK, "--ranks", "64")
    assert r.exit_code == 0, r.stderr
    assert "14 GB" in r.stdout and "1 GB" in r.stdout


def test_help_is_answered_beside_an_option_given_twice():
    r = run("step", "--nodes", "1", "--nodes", "2", "--help")
    assert r.exit_code == 0, r.stderr
    assert "Usage:" in r.stdout


# --- a memory that does not fit is said first, on every road to the verdict -------------------
@pytest.mark.parametrize(
    "command",
    [
        ("memory", "--params", "7B", "--gpu-memory", "80GB", "--ranks", "1"),
        ("memory", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--activations", "100GB"),
        ("memory", "--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--ranks", "12"),
    ],
    ids=["gpu-memory", "activations", "ranks-not-whole-nodes"],
)
def test_memory_that_does_not_fit_says_so_first(command):
    r = run(*command)
    assert r.exit_code == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("DOES NOT FIT: "), r.stdout
    assert " per GPU > " in first and "(ddp)" in first


def test_memory_that_fits_has_no_warning():
    r = run("memory", "--params", "1B", "--gpu-memory", "80GB", "--ranks", "1")
    assert r.exit_code == 0, r.stderr
    assert "FIT" not in r.stdout


def test_memory_strategy_all_says_nothing_fits_before_its_table():
    r = run("memory", "--arch", "llama-3.1-70b", "--strategy", "all", "--cluster", "dgx-h100")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "NOTHING FITS: every layout needs more memory than the GPU has"
    fits = run("memory", "--arch", "llama-3.1-8b", "--strategy", "all", "--cluster", "dgx-h100")
    assert "NOTHING FITS" not in fits.stdout


# --- a unit typed in the wrong case: the spelling meant is said, never read in its place ------
@pytest.mark.parametrize(
    ("command", "typed", "meant"),
    [
        (
            ("collective", "all_reduce", "--ranks", "2", "--bandwidth", "50GB/s", "-s"),
            "14gib",
            "14GiB",
        ),
        (
            ("collective", "all_reduce", "--ranks", "2", "--bandwidth", "50GB/s", "-s"),
            "14 gb",
            "14 GB",
        ),
        (
            ("collective", "all_reduce", "-s", "1GB", "--ranks", "2", "--bandwidth"),
            "50GB/S",
            "50GB/s",
        ),
        (
            ("collective", "all_reduce", "-s", "1GB", "--ranks", "2", "--bandwidth"),
            "400gbps",
            "400Gbps",
        ),
        ((*_ONE_LINK_STEP[:3], *_LINK, "--compute-time"), "400MS", "400ms"),
        (("memory", "--params", "7B", "--ranks", "1", "--gpu-memory"), "80gb", "80GB"),
        (("sweep", "--set", "preset=dgx-h100", "--set"), "size=1gib", "1GiB"),
    ],
)
def test_a_unit_in_the_wrong_case_is_refused_with_the_spelling_meant(command, typed, meant):
    one_line_error(run(*command, typed), f"did you mean '{meant}'? units are case-sensitive")


def test_a_size_in_bits_is_still_refused_as_bits_and_no_case_is_guessed_for_nonsense():
    line = one_line_error(run("collective", "all_reduce", "-s", "14Gb", *_LINK))
    assert "in bits" in line and "did you mean" not in line
    line = one_line_error(run("collective", "all_reduce", "-s", "14XB", *_LINK))
    assert "expected a number with a unit" in line and "did you mean" not in line


# --- batch --rule without a learning rate to scale is refused, not ignored ---------------------
def test_batch_rule_without_base_lr_is_refused():
    one_line_error(
        run("batch", "--local", "1", "--ranks", "2", "--global", "4", "--rule", "linear"),
        "--rule: scales a tuned learning rate; give --base-lr",
    )


def test_batch_rule_default_is_the_unit_s():
    # was sqrt in every unit; now the unit's (batch.LR_RULE_DEFAULT), the API's and the Batch
    # page's: a batch in samples takes linear (tests/test_qa_pass63.py has the token case)
    base = ("batch", "--local", "1", "--ranks", "2", "--global", "4", "--base-lr", "1e-3")
    plain = run(*base, "--base-batch", "2", "--json")
    linear = run(*base, "--base-batch", "2", "--rule", "linear", "--json")
    assert plain.exit_code == 0 and linear.exit_code == 0, plain.stderr + linear.stderr
    assert plain.stdout == linear.stdout
    assert '"rule": "linear"' in plain.stdout


# --- a sweep range past its axis's limit names the range typed, not a value never typed --------
@pytest.mark.parametrize(
    ("axis", "value"),
    [
        ("nodes=1..2000000x2", "1,048,576"),
        ("size=1GB..64TiB x2", "32,768,000,000,000"),
        ("mfu=0.1..2x2", "1.6"),
    ],
)
def test_a_sweep_range_past_its_limit_is_named_as_typed(axis, value):
    kind = ("--kind", "step", "--set", "arch=llama-3.1-8b") if axis.startswith("mfu") else ()
    size = () if kind or axis.startswith("size") else ("--set", "size=1GB")
    r = run("sweep", *kind, "--set", "preset=dgx-h100", *size, "--set", axis, "--no-progress")
    name, typed = axis.split("=", 1)
    one_line_error(r, f"--set {name}: must be ", f"got {typed!r} (its value {value} is not)")


# --- step --strategy all beside one ZeRO stage is refused, as memory's and the sweep's are ----
@pytest.mark.parametrize("typed", ["--zero", "--zero-stage"])
def test_step_strategy_all_with_a_zero_stage_is_refused(typed):
    r = run("step", "--arch", "llama-3.1-8b", "--strategy", "all", typed, "1")
    one_line_error(r, f"{typed} 1: --strategy all ranks every layout", "not both")


# --- whole steps that train far more tokens than asked are said, on every road --------------
_FEW = ("--arch", "llama-3.1-8b", "--strategy", "fsdp", "--tokens", "1000")
_WHOLE = "steps are whole: 1 step of 32,768 tokens trains 32,768 tokens, 32.8x the 1,000 asked"


@pytest.mark.parametrize("command", ["train", "scenario"])
def test_tokens_under_one_step_are_said_to_train_a_whole_step(command):
    r = run(command, *_FEW)
    assert r.exit_code == 0, r.stderr
    assert f"note: {_WHOLE}" in r.stdout


def test_the_sweep_row_says_the_whole_step_too():
    r = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b",
            "--set", "strategy=fsdp", "--tokens", "1000", "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert _WHOLE in r.stdout


def test_a_long_run_s_last_partial_step_is_not_noted():
    r = run("train", "--arch", "llama-3.1-8b", "--strategy", "fsdp", "--tokens", "1T")
    assert r.exit_code == 0, r.stderr
    assert "steps are whole" not in r.stdout
