"""A new user's pass over the CLI: odd values are refused in the option's words with its range.

Found walking the planning questions (an all-reduce on 64 H100s, which algorithm wins, a 70B
model's strategies, days and dollars, batch planning in tokens, a Hugging Face config) and
then typing odd values into every option touched:

- ``collective all_to_all --algorithm all --json`` wrote ``"gap": "inf"`` (a string where a
  script reads a number) for the only candidate's verdict: null now, as the API's
  ``Verdict.as_dict()`` says it.
- ``step --peak-flops 989`` (meant as 989T) priced a step of 870 billion seconds, ``--gradient-
  bytes 1e300`` one of 2.76e299 s, and ``collective --gamma 1e300`` answered in the library's
  words (``gamma_s_per_byte ... array([1.e+300])``): each has a range now (costmodel._limits).
- ``--global-tokens 1e30`` leaked numpy's overflow warning and ``solve_batch``'s
  ``global_batch`` limit; the option has the token budget's range (1..1e16), and the batch
  library's limits name their fields marked, so ``batch`` and ``step`` say their options.
- ``scenario --fit --json`` wrote a flip no change reaches as ``"relative_change": "inf"``: null.
- The one-link step (``--ranks/--bandwidth``) showed its step time with no band and no word
  about it: it says "no error band" now (no measured runs of a link given by its numbers).
- ``step --params 1e15`` on one link said "raise bucket_cap_bytes or pass layer_param_counts".
- An empty value was read as not given: ``batch --critical-batch ''`` and ``memory
  --activations ''`` answered (exit 0), ``collective --algorithm ''`` priced auto;
  ``collective --cluster ''`` / ``--model ''`` said "empty list of values" with no allowed list;
  ``scenario``/``train`` read an empty ``--strategy`` or ``--param-dtype`` as not given, and
  listed ``all`` among the strategies they refuse it as.
"""

from __future__ import annotations

import json
import math

import pytest

from costmodel import verdict

from ._cli import one_line_error, run


def _strict_json(text: str):
    """JSON with no NaN/Infinity constants and no "inf"/"nan" strings anywhere."""

    def refuse(c):
        raise ValueError(f"not JSON: {c}")

    data = json.loads(text, parse_constant=refuse)

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            assert v.strip().lower() not in {"inf", "-inf", "nan", "infinity"}, v
        elif isinstance(v, float):
            assert math.isfinite(v), v

    walk(data)
    return data


# --- the only candidate's verdict has no gap -----------------------------------------------------
def test_a_verdict_without_runner_up_has_a_null_gap():
    v = verdict.decide({"p2p": 0.014}, 0.38)
    assert v.runner_up is None and v.winner == "p2p"
    assert v.as_dict()["gap"] is None
    assert verdict.decide({"ring": 1.0, "tree": 2.0}, 0.41).as_dict()["gap"] == 1.0


def test_collective_all_json_has_no_inf_string_for_the_only_candidate():
    r = run("collective", "all_to_all", "-s", "1GB", "--cluster", "dgx-h100", "--nodes", "2",
            "--algorithm", "all", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    data = _strict_json(r.stdout)
    (v,) = data["verdicts"]
    assert v["runner_up"] is None and v["gap"] is None and v["winner"] == "p2p"


# --- one-link values with no range: a typo was priced ---------------------------------------------
LINK_STEP = ("step", "--params", "7B", "--ranks", "64", "--bandwidth", "50GB/s")


@pytest.mark.parametrize("value", ["989", "1e40", "0", "989t", ""])
def test_peak_flops_has_a_range(value):
    r = run(*LINK_STEP, "--tokens-per-gpu", "8Ki", "--peak-flops", value)
    one_line_error(r, "--peak-flops: must be a peak in 1 GFLOP/s..1 EFLOP/s per GPU", "989T",
                   f"got {value!r}")  # fmt: skip


def test_peak_flops_in_range_is_priced():
    r = run(*LINK_STEP, "--tokens-per-gpu", "8Ki", "--peak-flops", "989T", "--json")
    assert r.exit_code == 0, r.stderr
    data = _strict_json(r.stdout)
    # 6 x 7e9 x 8192 / (989e12 x 0.4): under a second, not 870 billion seconds
    assert 0.5 < data["compute_s"] < 1.5, data["compute_s"]


@pytest.mark.parametrize("value", ["1e300", "9", "0", "-2", "nan"])
def test_gradient_bytes_has_a_range(value):
    r = run(*LINK_STEP, "--compute-time", "400ms", "--gradient-bytes", value)
    one_line_error(r, "--gradient-bytes: must be a size per gradient element in (0, 8] B")


@pytest.mark.parametrize("value", ["1e300", "1e-3", "-1", "nan"])
def test_gamma_has_a_range_in_the_options_words(value):
    r = run("collective", "all_reduce", "-s", "14GB", "--ranks", "64", "--bandwidth", "50GB/s",
            "--gamma", value)  # fmt: skip
    line = one_line_error(r, "--gamma: must be a reduction cost in 0..1e-6 s/B")
    assert "gamma_s_per_byte" not in line and "array(" not in line


# --- --global-tokens: the token budget's range, the options' words --------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("step", "--arch", "llama-3.1-8b", "--nodes", "2"),
        ("train", "--arch", "llama-3.1-8b", "--nodes", "2", "--tokens", "1T"),
        ("scenario", "--arch", "llama-3.1-8b", "--nodes", "2"),
        ("batch", "--local", "1", "--ranks", "64", "--seq", "4096"),
    ],
)
@pytest.mark.parametrize("value", ["1e30", "1e17", "0", ""])
def test_global_tokens_has_the_token_budgets_range(args, value):
    r = run(*args, "--global-tokens", value)
    line = one_line_error(
        r, "--global-tokens: must be a whole number of tokens in 1..1e16", f"got {value!r}"
    )
    assert "overflow" not in r.stderr and "global_batch" not in line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("batch", "--ranks", "1000000000", "--local", "1000000", "--accumulation", "1000000"),
         ("past the --global limit", "a smaller --local, --ranks or --accumulation")),
        (("batch", "--ranks", "1", "--local", "1", "--global", "1000000000000"),
         ("past the --accumulation limit", "a smaller --global, or a larger --local or --ranks")),
        (("batch", "--local", "1", "--ranks", "64", "--global-tokens", "1e16", "--seq", "1"),
         ("--global-tokens: ", "past the --global limit")),
        (("step", "--arch", "llama-3.1-8b", "--nodes", "1", "--gpus-per-node", "1",
          "--global-tokens", "1e16", "--seq", "1"),
         # step has no --global-batch (batch's option): the global batch in words
         ("(--global-tokens: 10000000000000000 / 1", "past the global batch limit")),
    ],
)  # fmt: skip
def test_a_batch_past_its_limits_names_options_not_fields(args, words):
    line = one_line_error(run(*args), *words)
    for field in ("global_batch", "local_batch", "global_tokens", "`"):
        assert field not in line, line


@pytest.mark.parametrize(
    "args",
    [
        ("scenario", "--params", "1e15"),
        ("train", "--params", "1e15", "--tokens", "1T"),
        ("step", "--params", "1e15", "--cluster", "dgx-h100"),
    ],
)
def test_too_many_buckets_on_a_cluster_names_the_options(args):
    line = one_line_error(
        run(*args), "--params: ", "raise --bucket or name an architecture (--arch)"
    )
    assert "bucket_cap_bytes" not in line


def test_too_many_buckets_names_the_options():
    r = run("step", "--params", "1e15", "--compute-time", "1000s", "--ranks", "1000000000",
            "--bandwidth", "1MB/s", "--latency", "1s")  # fmt: skip
    line = one_line_error(
        r, "--params: 1e+15 parameters make about ", "raise --bucket or pass --arch"
    )
    assert "bucket_cap_bytes" not in line and "layer_param_counts" not in line


# --- an empty value is refused, not read as not given ---------------------------------------------
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("batch", "--local", "1", "--ranks", "64", "--global-tokens", "4Mi", "--seq", "4096",
          "--base-lr", "3e-4", "--base-tokens", "1Mi", "--critical-batch", ""),
         ("--critical-batch: must be a whole number of tokens in 1..1e16 (of samples for a "
          "base batch in samples)",)),
        (("memory", "--params", "8B", "--activations", ""),
         ("--activations: must be a size in 0 B..16 TiB",)),
        (("collective", "all_reduce", "-s", "14GB", "--cluster", "dgx-h100", "--algorithm", ""),
         ("--algorithm: '' is not a nccl all_reduce algorithm; allowed: auto, tree, ring",)),
        (("collective", "all_reduce", "-s", "14GB", "--ranks", "8", "--bandwidth", "50GB/s",
          "--algorithm", ""),
         ("--algorithm: '' is not a textbook all_reduce algorithm over one link; allowed: ",)),
        (("collective", "all", "-s", "14GB", "--ranks", "8", "--bandwidth", "50GB/s",
          "--algorithm", " "),
         ("--algorithm: ", "allowed with every op: ")),
        (("collective", "all_reduce", "-s", "14GB", "--cluster", ""),
         ("--cluster: unknown cluster preset ''; allowed: ", "dgx-h100")),
        (("collective", "all_reduce", "-s", "14GB", "--cluster", "dgx-h100", "--model", ""),
         ("--model: '' is not a model; allowed: nccl (default)",)),
    ],
)  # fmt: skip
def test_an_empty_value_is_refused_with_the_allowed_values(args, fragments):
    line = one_line_error(run(*args), *fragments)
    assert "empty list of values" not in line


@pytest.mark.parametrize("value", ["1e30", "-1GB"])
def test_activations_say_one_range(value):
    one_line_error(
        run("memory", "--params", "8B", "--activations", value),
        "--activations: must be a size in 0 B..16 TiB (2**44 B), whole bytes",
        f"got {value!r}",
    )


def test_critical_batch_in_range_still_caps_the_learning_rate():
    r = run("batch", "--local", "1", "--ranks", "64", "--global-tokens", "4Mi", "--seq", "4096",
            "--base-lr", "3e-4", "--base-tokens", "1Mi", "--critical-batch", "2Mi", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    data = _strict_json(r.stdout)
    # sqrt rule, capped at the critical batch: 3e-4 x sqrt(2Mi / 1Mi), not x sqrt(4)
    assert data["learning_rate"]["learning_rate"] == pytest.approx(3e-4 * math.sqrt(2))


# --- a flip no change reaches: null in JSON, inf in Python ----------------------------------------
def test_scenario_fit_json_writes_an_unreachable_flip_as_null():
    r = run("scenario", "--arch", "deepseek-v3", "--nodes", "1", "--fit", "--json")
    assert r.exit_code == 0, r.stderr
    flips = _strict_json(r.stdout)["flips"]
    unreachable = [f for f in flips if not f["flips"]]
    assert unreachable and all(f["relative_change"] is None for f in unreachable)
    assert all(isinstance(f["relative_change"], float) for f in flips if f["flips"])


def test_a_flips_null_change_reads_back_as_inf():
    import costmodel as cm
    from costmodel.scenario import Flip

    (f,) = [f for f in cm.Scenario(arch="deepseek-v3", nodes=1).evaluate().flips if not f.flips]
    assert f.relative_change == math.inf  # ranked last in Python
    assert json.loads(f.model_dump_json())["relative_change"] is None
    assert Flip.model_validate_json(f.model_dump_json()) == f


# --- train: every figure without a band says so -------------------------------------------------
def test_train_without_a_band_says_so_on_gpu_hours_and_dollars():
    r = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--cluster", "dgx-b200",
            "--zero", "3", "--price", "lambda-b200-on-demand")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    rows = {ln.split("  ")[0]: ln for ln in r.stdout.splitlines()}
    assert "band unknown" in rows["wall clock"]
    assert "(band unknown, as the wall clock's)" in rows["GPU-hours"]
    assert "(band unknown, as the wall clock's)" in rows["cost"]


def test_train_with_a_band_or_a_measured_step_adds_no_unknown():
    fitted = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--zero", "3",
                 "--price", "aws-p5-on-demand").stdout  # fmt: skip
    measured = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--zero", "3",
                   "--price", "aws-p5-on-demand", "--step-time", "500ms").stdout  # fmt: skip
    for out in (fitted, measured):
        assert "GPU-hours" in out and "band unknown" not in out
    assert "(band " in next(ln for ln in fitted.splitlines() if ln.startswith("GPU-hours"))


# --- a Hugging Face config's bad count: one range whatever the value ------------------------------
@pytest.mark.parametrize("bad", ["NaN", '"4096"', "-2", "4096.5", "0"])
def test_a_config_count_says_one_range(tmp_path, bad):
    cfg = tmp_path / "config.json"
    head = '{"model_type": "llama", "hidden_size": '
    tail = ', "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008, '
    cfg.write_text(head + bad + tail + '"vocab_size": 32000}')
    line = one_line_error(run("step", "--arch", str(cfg), "--nodes", "2"), "--arch: ")
    assert "hidden_size must be a whole number in [1, 1e12], got " in line, line


# --- the one-link step says it has no band ---------------------------------------------------------
def test_the_one_link_step_says_it_has_no_error_band():
    r = run(*LINK_STEP, "--compute-time", "400ms")
    assert r.exit_code == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("step time"))
    assert (
        "(no error band: a step over one link (--ranks, --bandwidth) has no measured runs" in line
    )
    assert "--cluster NAME for a step with its band" in line
    data = _strict_json(run(*LINK_STEP, "--compute-time", "400ms", "--json").stdout)
    assert data["step_time_lo_s"] is None and data["step_time_hi_s"] is None
    assert data["band_note"].startswith("no error band: ")


def test_a_collective_over_one_link_says_it_has_no_error_band():
    link = ("collective", "all_reduce", "-s", "14GB", "--ranks", "64", "--bandwidth", "50GB/s")
    r = run(*link)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[-1] == (
        "note: no error band: a link given by --ranks/--bandwidth has no measured runs to take "
        "one from; --cluster NAME for a prediction with its band"
    )
    assert _strict_json(run(*link, "--json").stdout)["band_note"].startswith("no error band: ")
    # on a cluster the band is shown (or said unknown) per row: no link note there
    on_cluster = run("collective", "all_reduce", "-s", "14GB", "--cluster", "dgx-h100")
    assert "over one link" not in on_cluster.stdout


def test_scenario_vs_says_a_wall_clock_band_unknown_in_words():
    r = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--zero", "3", "--tokens", "15T",
            "--usd-per-gpu-hour", "3", "--vs", "cluster=dgx-b200")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("wall clock band"))
    assert row.split()[-1] == "unknown" and "?" not in row, row


@pytest.mark.parametrize("folder", ["", "  "])
def test_an_empty_presets_dir_is_refused_not_read_as_the_working_folder(folder):
    # '' was Path('.'): the working folder's pyproject.toml was read as a preset and refused
    line = one_line_error(run("--presets-dir", folder, "presets", "list"), "--presets-dir: ")
    assert line.endswith("is not a folder; give a folder of preset TOML files"), line
    assert "pyproject" not in line


# --- scenario/train: an empty --strategy or --param-dtype is refused; no 'all' offered ----------
@pytest.mark.parametrize("command", [("scenario",), ("train", "--tokens", "1B")])
@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--strategy", "--strategy: unknown ''; allowed: ddp, zero1, zero2, fsdp, hsdp"),
        ("--param-dtype", "--param-dtype: must be bf16, fp16, fp8 or fp32, got ''"),
    ],
)
def test_scenario_and_train_refuse_an_empty_strategy_or_param_dtype(command, option, said):
    line = one_line_error(run(*command, "--arch", "gpt2-124m", option, ""), said)
    assert not line.endswith(", all"), line


@pytest.mark.parametrize("command", [("scenario",), ("train", "--tokens", "1B")])
def test_scenario_and_train_do_not_offer_strategy_all_which_they_refuse(command):
    for typed in ("nope", "all"):
        line = one_line_error(run(*command, "--arch", "gpt2-124m", "--strategy", typed))
        assert line.endswith("allowed: ddp, zero1, zero2, fsdp, hsdp"), line
