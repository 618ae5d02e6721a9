"""Eighth QA pass: a new user on the CLI and the Python API. Each test failed before its fix."""

from __future__ import annotations

import json

import pytest

from costmodel._limits import LIMITS
from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-2-7b")


# --- one node limit: scenario and train answer where step answers --------------------------------
@pytest.mark.parametrize("command", ["scenario", "train"])
def test_scenario_and_train_take_the_node_count_step_takes(command):
    """``step --nodes 200000`` answered while ``scenario`` and ``train`` refused it with
    "--nodes: Input should be less than or equal to 100000": the Scenario model kept a bound of
    its own, ten times below the one limit every command names (1..1,000,000)."""
    assert LIMITS["nodes"].hi == 1_000_000
    tokens = ("--tokens", "1T") if command == "train" else ()
    args = (*LLAMA, "--cluster", "dgx-h100", "--nodes", "200000", "--zero", "3", *tokens)
    res = run(command, *args, "--json")
    assert res.exit_code == 0, res.stderr
    step = json.loads(run("step", *LLAMA, "--cluster", "dgx-h100", "--nodes", "200000",
                          "--strategy", "fsdp", "--json").stdout)  # fmt: skip
    doc = json.loads(res.stdout)
    got = doc["step_time_s"]
    assert got == pytest.approx(step["step_time_s"], rel=1e-9)


def test_a_scenario_change_past_the_node_limit_names_the_limit():
    line = one_line_error(
        run("scenario", *LLAMA, "--nodes", "8", "--vs", "nodes=2000000"), "nodes", "1,000,000"
    )
    assert "100,000]" not in line


# --- a NaN fraction is refused as not finite, with the option's range ----------------------------
@pytest.mark.parametrize("command", ["step", "scenario", "train"])
@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [
        ("--mfu", "nan", "[0.001, 1]"),
        ("--mfu", "inf", "[0.001, 1]"),
        ("--mfu", "0", "[0.001, 1]"),
        ("--contention", "nan", "[0, 1]"),
        ("--contention", "-0.5", "[0, 1]"),
    ],
)
def test_a_fraction_option_out_of_range_says_its_range(command, option, value, rule):
    """``step --mfu nan`` answered "Invalid value for '--mfu': Input should be less than or
    equal to 1" (NaN is not above 1); ``--mfu 0`` named the API's ``mfu``."""
    tokens = ("--tokens", "1T") if command == "train" else ()
    args = (command, *LLAMA, "--cluster", "dgx-h100", option, value, *tokens)
    line = one_line_error(run(*args), f"error: {option}: must be ", rule, repr(float(value)))
    assert "less than or equal" not in line


# --- step's refusals name the option typed, as train and scenario do ---------------------------
@pytest.mark.parametrize(
    ("options", "option", "field", "why"),
    [
        (("--power-limit-w", "50"), "--power-limit-w", "power_limit_w", "must be a power in"),
        (("--bucket", "0"), "--bucket", "bucket_cap_bytes", "must be a bucket size in 1 B"),
        (("--strategy", "hsdp", "--group-size", "3"), "--group-size", "group_size",
         "does not divide the 8 ranks"),
        (("--strategy", "ddp", "--reshard"), "--reshard", "reshard_after_forward",
         "only fsdp and hsdp reshard"),
        (("--cluster", "dgx-h1000"), "--cluster", "name", "unknown cluster preset"),
        (("--param-dtype", "fp9"), "--param-dtype", "param_dtype", "'fp9'"),
    ],
)  # fmt: skip
def test_a_step_refusal_names_the_option(options, option, field, why):
    """``step --power-limit-w 50`` answered "power_limit_w: must be a power in [200, 700] W",
    ``--bucket 0`` "bucket_cap_bytes: ...", ``--cluster dgx-h1000`` "name: unknown cluster
    preset": the library's arguments, where ``train`` and ``scenario`` name the option."""
    args = ("step", "--arch", "llama-3.1-8b", *options)
    if "--cluster" not in options:
        args = (*args, "--cluster", "dgx-h100")
    line = one_line_error(run(*args), f"error: {option}: ", why)
    assert f"{field}:" not in line.replace(f"{option}:", "")


def test_the_one_link_step_names_its_option_too():
    res = run("step", "--params", "7B", "--ranks", "8", "--bandwidth", "50GB/s",
              "--compute-time", "1s", "--gradient-bytes", "nan")  # fmt: skip
    one_line_error(
        res, "error: --gradient-bytes: must be a size per gradient element in (0, 8] B", "got nan"
    )


# --- batch: the options' names, not solve_batch's arguments --------------------------------------
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--local-batch", "4", "--ranks", "64"),
         ("give three of --local-batch, --ranks, --accumulation and --global-batch",
          "missing: --accumulation, --global-batch")),
        (("--local-batch", "4", "--ranks", "64", "--accumulation", "2", "--global-batch", "8192"),
         ("give three of", "all four are given")),
        (("--local", "1", "--ranks", "512", "--global-tokens", "4Mi"),
         ("--global-tokens: needs --seq",)),
        (("--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096",
          "--global-batch", "1024"),
         ("--global-batch, --global-tokens: give the global batch in samples or in tokens",)),
    ],
)  # fmt: skip
def test_batch_refusals_name_the_options(args, fragments):
    """``batch --local-batch 4 --ranks 64`` answered "solve_batch: exactly one of local_batch,
    ranks, accumulation, global_batch must be None (the unknown)": Python's names and None."""
    line = one_line_error(run("batch", *args), *fragments)
    for api in ("solve_batch", "must be None", "sequence_length:", "global_tokens:"):
        assert api not in line


# --- every algorithm on one GPU: a sentence, not pandas' "Empty DataFrame" -----------------------
def test_every_algorithm_on_one_gpu_says_none_runs():
    """``collective all_reduce --cluster dgx-h100 --gpus-per-node 1 --algorithm all`` printed
    "Empty DataFrame / Columns: [...] / Index: []" above the reasons."""
    res = run("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100",
              "--gpus-per-node", "1", "--algorithm", "all")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "Empty DataFrame" not in res.stdout and "Index: []" not in res.stdout
    assert "no algorithm runs here" in res.stdout
    assert "not available: ring: one rank: nothing to communicate" in res.stdout


# --- an output that is the measured log is refused, not written over it --------------------------
def _bundled_log(tmp_path, name):
    from costmodel.reference import reference_path

    path = tmp_path / name
    path.write_bytes(reference_path("06a").read_bytes())
    return path


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("log.toml", ("calibrate", "{log}", "--cluster", "dgx-h100", "--nodes", "2", "-o", "{log}")),
        ("log.csv", ("validate", "compare", "{log}", "--cluster", "dgx-h100", "--nodes", "2",
                     "-o", "{log}")),
        ("log.html", ("validate", "compare", "{log}", "--cluster", "dgx-h100", "--nodes", "2",
                      "--report", "{log}")),
    ],
)  # fmt: skip
def test_an_output_equal_to_the_input_log_is_refused(tmp_path, monkeypatch, name, command):
    """``calibrate log.toml -o log.toml`` and ``validate compare r.csv -o r.csv`` wrote over the
    measured nccl-tests log they had just read (exit 0): the measurements were gone."""
    log = _bundled_log(tmp_path, name)
    before = log.read_bytes()
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{log}", name) for a in command]
    args[-1] = f"./{name}"  # the same file under another spelling
    option = args[-2]
    line = one_line_error(run(*args), f"error: {'--output' if option == '-o' else option}: ",
                          "is the file this command reads")  # fmt: skip
    assert name in line
    assert log.read_bytes() == before


# --- a sweep axis out of range in the words of the command's option ------------------------------
@pytest.mark.parametrize(
    ("sets", "words"),
    [
        (("preset=dgx-h100", "nodes=0", "size=14GB"),
         "nodes: must be a whole number in 1..1,000,000, got 0"),
        (("preset=dgx-h100", "arch=llama-3.1-8b", "nodes=0"),
         "nodes: must be a whole number in 1..1,000,000, got 0"),
        (("preset=dgx-h100", "arch=llama-3.1-8b", "mfu=0.4,1.5"),
         "mfu: must be a model FLOP utilisation in [0.001, 1], got 1.5"),
        (("preset=dgx-h100", "arch=llama-3.1-8b", "comm_contention=2"),
         "comm_contention: must be an overlap contention in [0, 1], got 2.0"),
    ],
)  # fmt: skip
def test_a_sweep_axis_out_of_range_says_the_option_s_range(sets, words):
    """``--set nodes=0`` said "nodes: every value must be >= 1" where ``nodes=2000000`` and every
    command's ``--nodes 0`` say the range; ``mfu=1.5`` "every value must be in (0, 1]"."""
    kind = ("--kind", "step") if any(s.startswith("arch=") for s in sets) else ()
    args = [a for s in sets for a in ("--set", s)]
    one_line_error(run("sweep", *kind, *args, "-o", "never.csv"), words)


# --- a tie with the fastest is mutual --------------------------------------------------------------
def test_the_fastest_is_in_the_tie_it_makes():
    """Llama 3.1 8B on 8 DGX B200 ranked fsdp "1 ... fastest (error unknown)" and fsdp without
    resharding "1= ... +0% (within ±8.3%)": the second was in a tie with a first that was not.
    Now fsdp without resharding ranks first on B200 (fsdp's shard collectives serialized) and
    no B200 row has a known error (no fitted efficiency for Blackwell): none may claim a tie,
    and no winner is named; on DGX H100 the tie of fsdp, fsdp without resharding and hsdp
    (README) holds its first row too."""
    import costmodel as cm

    b200 = cm.advise_strategy(arch="llama-3.1-8b", cluster="dgx-b200", nodes=8)
    assert not any(r["within_expected_error"] is True for r in b200.rows())
    assert not b200.decisive and b200.as_dict()["winner"] is None  # still no winner named
    h100 = cm.advise_strategy(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8)
    rows = h100.rows()
    assert any(r["within_expected_error"] is True for r in rows[1:])  # the known tie
    assert rows[0]["within_expected_error"] is True
    assert not h100.decisive and h100.as_dict()["winner"] is None
    out = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "8",
              "--strategy", "all").stdout  # fmt: skip
    first = out.splitlines()[2]
    assert first.startswith("1=") and "fastest (a tie)" in first, first


# --- nccl-tests runs NCCL would refuse are left out, and said -----------------------------------
def test_a_sweep_leaves_out_the_runs_nccl_has_no_kernel_for():
    """``validate nccl-tests run --ops all_reduce,all_gather --algos Ring,Tree`` (the command's
    own help example) planned ``NCCL_ALGO=Tree all_gather_perf``: NCCL has no Tree all-gather,
    and its enqueue fails "no algorithm/protocol available", so that run could only fail."""
    from costmodel.validation.runner import plan_sweep

    specs = plan_sweep(["all_reduce", "all_gather"], algos=["Ring", "Tree"], gpus=8, build_dir="/b")
    assert [(s.op, s.env.get("NCCL_ALGO")) for s in specs] == [
        ("all_reduce", "Ring"), ("all_reduce", "Tree"), ("all_gather", "Ring")
    ]  # fmt: skip
    nvls = plan_sweep(["all_reduce"], algos=["NVLS"], protos=["LL", "Simple"], build_dir="/b")
    assert [s.env["NCCL_PROTO"] for s in nvls] == ["Simple"]
    # NCCL's own choice, a list, an exclusion and all-to-all (p2p) are planned as given
    assert len(plan_sweep(["all_gather"], algos=[None, "Ring,Tree", "^Ring"], build_dir="/b")) == 3
    assert len(plan_sweep(["all_to_all"], algos=["Tree"], build_dir="/b")) == 1
    res = run("validate", "nccl-tests", "run", "-o", "runs", "--ops", "all_reduce,all_gather",
              "--gpus", "8", "--algos", "Ring,Tree", "--dry-run")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "all_gather_perf" in res.stdout and "NCCL_ALGO=Tree all_gather" not in res.stdout
    assert "skipped all_gather with NCCL_ALGO=Tree: NCCL has no tree for all_gather" in res.stderr
    one_line_error(
        run("validate", "nccl-tests", "run", "-o", "runs", "--ops", "broadcast", "--algos",
            "Tree", "--dry-run"),
        "--algos: NCCL runs none of this sweep", "NCCL has no tree for broadcast",
    )  # fmt: skip


# --- predict --json: the keys collective --json and the sweep write, band_note included ---------
def test_predict_json_rows_carry_the_preset_and_why_a_band_is_unknown():
    """The README says ``predict --json`` writes the keys ``collective --json`` and the sweep
    write, ``preset`` among them; its rows had no ``preset`` and no ``band_note``, so a
    multi-node all-to-all's ``error_band_pct: null`` came with no reason."""
    q = ("--cluster", "dgx-h100", "--nodes", "2")
    (p,) = json.loads(run("predict", "--op", "all_to_all", *q, "--sizes", "1GB", "--json").stdout)[
        "results"
    ]
    (c,) = json.loads(run("collective", "all_to_all", *q, "--size", "1GB", "--json").stdout)[
        "results"
    ]
    assert p["error_band_pct"] is None and c["error_band_pct"] is None
    assert p["preset"] == c["preset"] == "dgx-h100"
    assert p["band_note"] == c["band_note"] and "the error is unknown" in p["band_note"]
    for key in ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps"):
        assert p[key] == pytest.approx(c[key], rel=1e-12)
    assert p["algorithm_used"] == c["algorithm_used"]
    (known,) = json.loads(run("predict", *q, "--sizes", "1GB", "--json").stdout)["results"]
    assert known["band_note"] == "" and known["error_band_pct"] > 0


# --- train says why its days have no band ---------------------------------------------------------
@pytest.mark.parametrize(
    ("cluster", "why"),
    [
        ("dgx-b200", "band unknown: no fitted compute efficiency for this GPU, so the default MFU"),
        ("gcp-a3-mega", "band unknown: a collective's error band is unknown"),
    ],
)
def test_train_says_why_the_days_have_no_band(cluster, why):
    """``train --cluster dgx-b200`` printed "wall clock 12.6 days" with no band and no word
    (H100: "25.2 days (band 22.0-29.1)"); ``step`` says "band unknown: ..." for the same
    step, and its JSON had ``wall_days_band: null`` with no reason."""
    args = ("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--cluster", cluster,
            "--nodes", "8", "--usd-per-gpu-hour", "3")  # fmt: skip
    out = run(*args).stdout
    (line,) = [ln for ln in out.splitlines() if ln.startswith("wall clock")]
    assert line.endswith(f"days ({why})"), line
    doc = json.loads(run(*args, "--json").stdout)
    assert doc["wall_days_band"] is None and doc["band_note"] == why
    h100 = json.loads(run(*args[:-6], "--cluster", "dgx-h100", "--nodes", "8", "--json").stdout)
    assert h100["band_note"] == "" and h100["wall_days_band"] is not None
    measured = json.loads(run(*args, "--step-time", "300ms", "--json").stdout)
    assert measured["band_note"] == ""  # a measured step: no model band to miss


# --- given activations are no sequence's ---------------------------------------------------------
@pytest.mark.parametrize("model", [("--params", "7B"), ("--arch", "llama-3.1-70b")])
def test_given_activations_are_not_said_to_come_from_a_sequence(model):
    """``memory --params 7B --activations 100GB --gpu-memory 80GB`` said "(activations 100 GB
    at 4096 tokens x micro-batch 1)": tokens the command had refused to take with a bare count,
    and that size nothing when the activations are given."""
    doc = json.loads(run("memory", *model, "--activations", "100GB", "--gpu-memory", "80GB",
                         "--json").stdout)  # fmt: skip
    note = doc["max_params_note"]
    assert "(activations 100 GB) on a GPU with 80 GB" in note and "tokens" not in note
    sized = json.loads(run("memory", "--arch", "llama-3.1-70b", "--seq", "65536",
                           "--gpu-memory", "80GB", "--json").stdout)  # fmt: skip
    assert "at 65,536 tokens x micro-batch 1)" in sized["max_params_note"]


# --- a size given twice: every algorithm, no internal error --------------------------------------
def test_every_algorithm_at_a_size_given_twice():
    """``collective all_reduce --size 1GB,1GB --cluster dgx-h100 --nodes 2 --algorithm all``
    printed the table, then "costmodel: error: zip() argument 2 is longer than argument 1"
    (exit 2): ``AlgorithmComparison.sizes`` dropped the repeat, its verdicts did not."""
    import costmodel as cm

    r = cm.predict_all_algorithms("all_reduce", [1e9, 1e6, 1e9], "dgx-h100", nodes=2)
    assert list(r.sizes) == [1e9, 1e6, 1e9] and len(r.verdicts) == 3
    assert len(r.to_dict()["verdicts"]) == 3
    res = run("collective", "all_reduce", "--size", "1GB,1GB", "--cluster", "dgx-h100",
              "--nodes", "2", "--algorithm", "all")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert res.stdout.count("fastest at 1 GB:") == 2


def test_every_algorithm_over_a_link_at_a_size_given_twice():
    """Over one link the same repeat answered "fastest at 1 GB: nvls and nvls tie"."""
    res = run("collective", "all_reduce", "--size", "1GB,1GB", "--ranks", "8", "--bandwidth",
              "50GB/s", "--algorithm", "all")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("fastest at")]
    assert line.startswith("fastest at 1 GB: nvls (ring is 56% slower"), line


# --- the same configuration twice: the same time, not "A 0% faster than B" ----------------------
def test_the_same_configuration_twice_takes_the_same_time():
    """``scenario --arch llama-2-7b --nodes 8 --vs nodes=8`` said "A 0% faster than B"."""
    from costmodel.verdict import decide

    v = decide({"A": 1.0, "B": 1.0}, 0.05)
    assert v.text() == "within the expected error: A and B take the same time, under ±5%"
    assert "faster" not in decide({"A": 1.0, "B": 1.0}, float("nan")).text()
    assert decide({"A": 1.0, "B": 1.01}, 0.05).text().endswith("A 1% faster than B, under ±5%")
    out = run("scenario", *LLAMA, "--nodes", "8", "--vs", "nodes=8").stdout
    assert "0% faster" not in out and "A and B take the same time" in out


# --- a size without a unit under 1 MiB is answered, with a word ----------------------------------
@pytest.mark.parametrize(
    ("args", "option", "meant"),
    [
        # one rank given: the default (one node, 8 ranks) is said on stderr as assumed
        (
            ("memory", "--params", "7B", "--gpu-memory", "80", "--ranks", "1"),
            "--gpu-memory 80",
            "80GB",
        ),
        (("step", *LLAMA, "--cluster", "dgx-h100", "--bucket", "25"), "--bucket 25", "25MiB"),
        (("scenario", *LLAMA, "--bucket", "25"), "--bucket 25", "25MiB"),
        (("train", *LLAMA, "--bucket", "25", "--tokens", "1T"), "--bucket 25", "25MiB"),
    ],
)
def test_a_bare_small_size_is_answered_with_a_warning(args, option, meant):
    """``memory --gpu-memory 80`` answered for an 80-byte card ("largest model that fits 5
    params") and ``step --bucket 25`` with 25-byte buckets (PyTorch's bucket_cap_mb=25 is 25
    MiB), without a word: a bare number is bytes, as the unit grammar says."""
    res = run(*args)
    assert res.exit_code == 0, res.stderr
    line = f"costmodel: warning: {option} is {option.split()[1]} bytes"
    assert line in res.stderr and f"write {meant}" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    with_unit = [a if a not in ("80", "25") else a + ("GB" if a == "80" else "MiB") for a in args]
    assert "warning" not in run(*with_unit).stderr


def test_a_refusal_stays_one_line_beside_a_bare_size():
    one_line_error(run("step", *LLAMA, "--cluster", "dgx-h1000", "--bucket", "25"), "--cluster")
    one_line_error(run("step", *LLAMA, "--cluster", "dgx-h100", "--bucket", "0"), "--bucket")


def test_the_tokens_per_gpu_help_example_is_answered():
    """``step --help`` offered "--tokens-per-gpu ... 8k", which the step refuses at the default
    --seq 4096 (8000 is not a whole number of sequences)."""
    import re

    text = " ".join(run("step", "--help").stdout.split())
    found = re.search(r"Tokens per GPU per micro-batch: (.+?)\. ", text)
    assert found, text
    examples = found[1].split(" or ")
    for example in examples:
        res = run("step", *LLAMA, "--cluster", "dgx-h100", "--tokens-per-gpu", example)
        assert res.exit_code == 0, (example, res.stderr)


# --- an activation input typed at its default value is refused with a bare count too -------------
@pytest.mark.parametrize(
    "option", [("--seq", "4096"), ("--micro-batch", "1"), ("--recompute", "none"),
               ("--loss", "fp32"), ("--flash",)],
)  # fmt: skip
def test_memory_refuses_an_activation_input_typed_at_its_default(option):
    """``memory --params 7B --seq 4096`` answered (exit 0) while ``--seq 8192`` was refused:
    the check compared with the default, so a value typed at the default was ignored, against
    the README's "refuse ... instead of ignoring them"."""
    one_line_error(run("memory", "--params", "7B", *option), f"error: {option[0]}: sizes "
                   "activations, which need an architecture")  # fmt: skip
    assert run("memory", "--arch", "llama-3.1-8b", *option).exit_code == 0


def test_train_shows_a_run_of_minutes_in_days_with_significant_digits_as_the_app_does():
    """At 100,000 nodes `train` printed "wall clock 0.0 days (band 0.0-0.0)"; its days now
    come from units.format_days, as the Training step page's (three significant digits below
    10 days)."""
    from costmodel import units

    out = run("train", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "100000",
              "--tokens", "1T")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("wall clock"))
    days = json.loads(run("train", "--params", "7B", "--cluster", "dgx-h100", "--nodes",
                          "100000", "--tokens", "1T", "--json").stdout)  # fmt: skip
    shown = units.format_elapsed(days["wall_days"] * 86400)  # a readable unit (was days)
    assert float(shown.split()[0]) > 0
    assert f" {shown} (band " in line, line
