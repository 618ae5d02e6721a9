"""A fresh-eyes pass as a demanding new user: each defect it found, asked the way a user asked it.

Each test fails on the code before its fix: a "does not fit" header about another layout than the
step shown, an option silently ignored, a README figure that the code no longer prints.
"""

from __future__ import annotations

import json
import re

import pytest

from tests._cli import one_line_error, run

STEP_70B = ("step", "--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "8")


@pytest.mark.parametrize(
    ("extra", "label"),
    [(("--strategy", "hsdp", "--group-size", "16"), "hsdp g=16"),
     (("--strategy", "fsdp", "--no-reshard"), "fsdp (no reshard)")],
)  # fmt: skip
def test_step_says_what_makes_the_step_shown_fit_not_another_layout(extra, label):
    """`step --strategy hsdp --group-size 16` said "DOES NOT FIT: 260 GB (hsdp g=8)" above a
    189 GB hsdp g=16 step: the suggestions were built without the group (and without
    --no-reshard), so their base was another layout than the step printed below them."""
    r = run(*STEP_70B, *extra, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert not d["fits"]
    assert d["fit_suggestions"]["memory_bytes"] == pytest.approx(d["memory_bytes"], rel=1e-12)
    text = run(*STEP_70B, *extra).stdout
    header = text.splitlines()[0]
    assert header.startswith("DOES NOT FIT") and f"({label})" in header, header


# --- collective: an option of the other form is refused, not silently ignored -----------------
COLL_LINK = ("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s")
COLL_CLUSTER = ("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes",
                "8")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "field"),
    [((*COLL_CLUSTER, "--latency", "5us"), "--latency"),
     ((*COLL_CLUSTER, "--gamma", "1e-12"), "--gamma"),
     ((*COLL_CLUSTER, "--algorithm", "all", "--latency", "5us"), "--latency"),
     ((*COLL_LINK, "--model", "nccl"), "--model"),
     (("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s",
       "--nodes", "8"), "--nodes"),
     ((*COLL_LINK, "--gpus-per-node", "4"), "--gpus-per-node")],
)  # fmt: skip
def test_collective_refuses_an_option_its_form_would_ignore(args, field):
    """`collective --cluster dgx-h100 --latency 5us` printed the preset's answer as if no
    latency had been given; `--ranks/--bandwidth --model lesson` answered with the textbook
    (now a cluster's model, nccl, is refused there; textbook and lesson, the link's own
    formula, are taken and named in the row: tests/test_cli_qa_pass18.py)."""
    line = one_line_error(run(*args), field)
    assert line.startswith(f"costmodel: error: {field}: ")
    assert "of the collective on a cluster preset" in line or "an option of the collective" in line


def test_collective_over_a_link_still_takes_latency_and_gamma():
    base = json.loads(run(*COLL_LINK, "--json").stdout)["results"][0]["time_s"]
    slow = json.loads(run(*COLL_LINK, "--latency", "5us", "--json").stdout)["results"][0]
    assert slow["time_s"] == pytest.approx(base + 2 * 63 * 5e-6, rel=1e-9)  # 2(N-1) alpha


@pytest.mark.parametrize(
    ("args", "field"),
    [(("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50"),
      "--bandwidth: must be a per-direction rate in 1 MB/s..1 PB/s"),
     (("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "1e40GB/s"),
      "--bandwidth: must be"),
     ((*COLL_LINK, "--latency", "1e9s"), "--latency: must be a latency in 0..1 s"),
     (("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "64", "--bandwidth",
       "50"), "--bandwidth: must be")],
)  # fmt: skip
def test_a_link_rate_or_latency_outside_any_real_link_is_refused(args, field):
    """A bare `--bandwidth 50` (meant as 50 GB/s) was 50 B/s and answered 5.51e+08 s; a
    `--latency 1e9s` answered 1.26e+11 s. Both are typos, not links: exit 2 naming the range."""
    one_line_error(run(*args), field)


def test_python_dash_m_costmodel_runs_the_cli():
    """`python -m costmodel ...` (what a user without the script on PATH types) said "No module
    named costmodel.__main__"; only `python -m costmodel.cli` worked."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "costmodel", "batch", "--local", "4", "--ranks", "64",
         "--global-batch", "8192", "--json"],
        capture_output=True, text=True, cwd=root, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["accumulation"] == 32


def test_the_sweep_rate_says_a_slow_sweep_s_rate_not_zero():
    """A one-row step sweep in 2 s printed "wrote 1 rows ... (0 rows/s)"."""
    from costmodel.cli.comm import _rate_text, _rows_text

    assert _rate_text(1, 2.03) == " (0.493 rows/s)"
    assert _rate_text(4123, 0.99) == " (4,165 rows/s)"
    assert _rate_text(5, 0.0) == ""  # too fast to time: no "inf rows/s"
    assert (_rows_text(1), _rows_text(4123)) == ("1 row", "4,123 rows")


def test_a_cost_of_a_setup_that_does_not_fit_says_so():
    """`Scenario(arch="llama-2-7b", nodes=8).evaluate().training_cost(2e12, price=...)` (the
    README's example) handed out $474k for plain DDP at 142 GB per 85.5 GB card with nothing
    in the cost saying it cannot run; the CLI printed a warning, the API object did not."""
    import costmodel as cm

    ddp = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8).evaluate()
    cost = ddp.training_cost(2e12, price="aws-p5-on-demand")
    assert not ddp.fits
    # 143 GB since the loss's logits are sized from what PyTorch keeps alive (12 B per logit)
    assert cost.fit_warning.startswith("DOES NOT FIT: 143 GB per GPU > 85.5 GB (ddp)")
    assert cost.as_dict()["fit_warning"] == cost.fit_warning  # JSON (`train --json`) too
    fsdp = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate()
    assert fsdp.fits and fsdp.training_cost(2e12, price="aws-p5-on-demand").fit_warning == ""


@pytest.mark.parametrize(
    ("name", "where"),
    [("aws-p5-on-demand", "is a price preset"), ("llama-2-7b", "is an architecture preset")],
)
def test_presets_show_of_a_price_or_architecture_says_where_it_lives(name, where):
    """`presets show aws-p5-on-demand` (a name `costmodel archs` prints) said "unknown preset;
    closest: aws-p4de, aws-p5", pointing at a cluster instead of the price."""
    one_line_error(run("presets", "show", name), f"NAME: {name!r} {where}", "costmodel archs")
    assert run("presets", "show", "dgx-h100").exit_code == 0


def test_a_gpu_without_bf16_is_not_labelled_bf16():
    """A V100 step said "default MFU 0.40 (no fitted efficiency for volta/bf16)": Volta has no
    bf16 at all; the step is priced at its fp16 peak, and the label now says so."""
    import costmodel as cm

    s = cm.strategy_step(arch="llama-3.1-8b", cluster="dgx1-v100", nodes=1, strategy="fsdp",
                         recompute="full")  # fmt: skip
    assert "volta/bf16" not in s.compute_label
    assert "volta/fp16" in s.compute_label and "has no bf16" in s.compute_label
    h100 = cm.strategy_step(arch="llama-3.1-8b", cluster="dgx-b200", nodes=1, strategy="fsdp")
    assert "blackwell/bf16" in h100.compute_label  # a GPU with bf16 keeps its label


def test_same_gpu_at_two_node_counts_is_judged_under_the_scaling_band():
    """`scenario --arch llama-2-7b --nodes 8 --strategy fsdp --vs nodes=16` said "faster step:
    A (B is 2% slower; expected error +/-0.89%)": a 2 % ratio between two node counts is inside
    the scaling path's own measured band (x0.964-1.032), so no winner may be named."""
    import costmodel as cm
    from costmodel.strategy.band import scaling_band
    from costmodel.verdict import decide_scenarios

    a = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, strategy="fsdp")
    ra = a.evaluate(scaling=False, flips=False)
    rb = a.with_changes("nodes=16").evaluate(scaling=False, flips=False)
    v = decide_scenarios(ra, rb)
    lo, hi = scaling_band()
    assert v.half_width >= max(1 - lo, hi - 1)
    assert abs(rb.step_time_s / ra.step_time_s - 1) < max(1 - lo, hi - 1)  # the case asked
    assert v.winner is None and "within the expected error" in v.text()
    from costmodel.scenario import compare_summary

    # tokens/s per GPU carries the step's error: no "A does more tokens/s per GPU" either
    assert "tokens/s per GPU within the expected error" in compare_summary(ra, rb)
    from costmodel.verdict import _scaling_half_width

    zero1 = a.with_changes("strategy=zero1").evaluate(scaling=False, flips=False)
    assert _scaling_half_width(ra, zero1) == 0.0  # one node count: no scaling band added
    assert _scaling_half_width(ra, rb) == pytest.approx(max(1 - lo, hi - 1))


def test_a_model_folder_is_read_through_its_config_json(tmp_path):
    """`--arch path/to/model-folder` (how Hugging Face saves a model) said "unknown architecture
    '...'; allowed: deepseek-v3, ...", listing presets for what is plainly a path."""
    import costmodel as cm

    folder = "tests/data/hf_configs/mistral-7b"
    assert cm.load_arch(folder).params == cm.load_arch(f"{folder}/config.json").params
    r = run("memory", "--arch", folder, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["params"] == 7_241_732_096
    one_line_error(run("memory", "--arch", str(tmp_path)), "is a folder with no config.json")
    (tmp_path / "weights.bin").write_bytes(b"\0\1")
    one_line_error(run("memory", "--arch", str(tmp_path / "weights.bin")), "is not a .json file")


@pytest.mark.parametrize("command", ["memory", "step", "scenario", "train"])
def test_arch_help_says_a_config_json_is_accepted(command):
    """The README's `--arch path/config.json` was in no `--help` text."""
    text = " ".join(run(command, "--help").stdout.split())
    assert "config.json" in text


def test_train_with_a_measured_step_does_not_show_the_unused_compute_estimate():
    """`train --step-time 600ms` printed "compute source  fitted efficiency hopper/bf16 ..."
    beside a step that was measured, not predicted from that compute."""
    base = ("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--nodes", "8", "--strategy",
            "fsdp")  # fmt: skip
    measured = run(*base, "--step-time", "600ms").stdout
    assert "not used (the step time is measured)" in measured
    assert "fitted efficiency" not in measured
    assert "fitted efficiency hopper/bf16" in run(*base).stdout


def test_scenario_cost_of_one_configuration_has_no_a_column():
    """`scenario --tokens 15T --price P` without --vs headed its cost table "A" and wrote
    "price A: ...", naming a side of a comparison that was not asked."""
    base = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--strategy", "fsdp", "--tokens",
            "15T", "--price", "aws-p5-on-demand")  # fmt: skip
    one = run(*base).stdout
    assert "\nprice: aws-p5-on-demand" in one and "price A:" not in one
    assert [ln for ln in one.splitlines() if ln.startswith("time and cost to train")] == [
        "time and cost to train"
    ]
    two = run(*base, "--vs", "nodes=16").stdout
    assert "price A: aws-p5-on-demand" in two and "price B: aws-p5-on-demand" in two


def test_a_wrong_price_for_b_names_price_b():
    """`scenario ... --vs cluster=dgx-b200 --price-b aws-p5-on-demand` said "price: ... not for
    this cluster's GPU b200", naming A's option and "this cluster" for B's price."""
    base = ("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--strategy", "fsdp", "--tokens",
            "2T", "--vs", "cluster=dgx-b200")  # fmt: skip
    one_line_error(run(*base, "--price-b", "aws-p5-on-demand"),
                   "--price-b: aws-p5-on-demand is a price for h100-sxm, not for B's GPU b200")  # fmt: skip
    one_line_error(run(*base, "--usd-per-gpu-hour-b", "0"), "--usd-per-gpu-hour-b: must be")


def test_scenario_fit_is_never_silently_ignored():
    """`scenario --fit` on a setup that fits printed nothing about fitting, and with --vs the
    option was dropped without a word."""
    base = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--strategy", "fsdp", "--fit")
    out = run(*base).stdout.strip().splitlines()
    assert out[-1] == "fits: 33.4 GB of 85.5 GB per GPU: nothing to change"  # fp32 loss: 12 B/logit
    one_line_error(run(*base, "--vs", "nodes=2"), "--fit: lists what makes one configuration fit")


# --- README figures quoted in prose: what the code prints today ------------------------------
def _readme() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_quoted_figures_match_the_code():
    """Figures the README quoted that had gone stale: 14 architectures (25 ship), the 70B
    ZeRO-3 total "111 GB" (the activations alone; the total is 129 GB) and "25 GB" with full
    recompute (27 GB), and the 1 GB lesson-vs-realistic "4.2 ms ... 8.9x"."""
    import re

    import costmodel as cm

    text = _readme()
    n = int(re.search(r"cm\.arch_names\(\) lists all (\d+)", text)[1])
    assert n == len(cm.arch_names())
    m = re.search(
        r"m\.total_bytes, m\.activations_note  # (\d+) GB \((\d+) GB activations\); "
        r'recompute="full": (\d+) GB',
        text,
    )
    mem = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64)
    full = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64, recompute="full")
    got = (mem.total_bytes, mem.activations_bytes, full.total_bytes)
    assert tuple(int(x) for x in m.groups()) == tuple(round(x / 1e9) for x in got)
    m = re.search(r"and (\d+\.\d) ms realistically \(`costmodel predict\n--compare-models`\): "
                  r"(\d+\.\d)x", text)  # fmt: skip
    nccl = float(cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=2).time_s)
    lesson = float(
        cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=2, model="lesson").time_s
    )
    assert (float(m[1]), float(m[2])) == (round(nccl * 1e3, 1), round(lesson / nccl, 1))


@pytest.mark.parametrize(
    ("low", "high", "b", "e"),
    [("1.5GB", "16TB", "1500000000", "16000000000000"),  # nccl-tests read these as 1 B, 16 B
     ("1e3", "1GB", "1000", "1000000000"),  # 1 B; 1 GiB to nccl-tests, 1e9 to our checks
     (8, "8GiB", "8", "8589934592")],  # the default: the same run as nccl-tests' own -e 8G
)  # fmt: skip
def test_nccl_tests_sizes_are_handed_over_as_the_bytes_we_checked(low, high, b, e):
    """`validate nccl-tests run -b 1.5GB` passed '1.5GB' verbatim: nccl-tests parses
    `%zu%[kmgKMG]`, so it ran from 1 B (and '16TB' ended at 16 B, '1e9' at 1 B) after our own
    checks had read 1.5e9."""
    from costmodel.validation.runner import plan_sweep

    argv = plan_sweep(["all_reduce"], min_bytes=low, max_bytes=high, build_dir="/b")[0].argv
    assert argv[argv.index("-b") + 1] == b and argv[argv.index("-e") + 1] == e


@pytest.mark.parametrize("extra", [("--group-size", "8"), ("--no-reshard",)])
def test_step_strategy_all_refuses_one_layout_s_option(extra):
    """`step --strategy all --group-size 8` (or --no-reshard) printed the whole ranking as if
    the option had not been given."""
    one_line_error(
        run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2",
            "--strategy", "all", *extra),
        f"{extra[0] if extra[0] == '--group-size' else '--reshard/--no-reshard'}: --strategy all",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "field"),
    [(("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "fsdp",
       "--compute-time", "400ms", "--mfu", "0.5"), "--mfu: not with --compute-time"),
     (("scenario", "--arch", "llama-3.1-8b", "--compute-time", "400ms", "--mfu", "0.5"),
      "--mfu: not with --compute-time"),
     (("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--step-time", "400ms", "--mfu",
       "0.5"), "--mfu: not with --step-time"),
     (("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--step-time", "400ms",
       "--compute-time", "300ms"), "--compute-time: not with --step-time")],
)  # fmt: skip
def test_a_second_compute_input_is_refused_not_ignored(args, field):
    """`step --compute-time 400ms --mfu 0.5` (and scenario/train, and train --step-time with
    --mfu or --compute-time) answered with the measured time and dropped the other silently."""
    one_line_error(run(*args), field)


def test_memory_of_a_bare_count_says_how_to_get_the_verdict():
    """The README's first question, `memory --params 30B --zero-stage 3 --ranks 16` ("does a 30B
    model fit?"), printed the bytes and no fit line at all (a bare count has no default card,
    unlike --arch); it now says which option gives the verdict."""
    out = run("memory", "--params", "30B", "--zero-stage", "3", "--ranks", "16").stdout
    assert "give --gpu-memory (e.g. 80GB) or --cluster NAME for the verdict" in out
    given = run("memory", "--params", "30B", "--zero-stage", "3", "--ranks", "16",
                "--gpu-memory", "80GB").stdout  # fmt: skip
    assert "for the verdict" not in given and re.search(r"^fits\s+yes", given, re.M)


def test_presets_list_of_prices_points_to_where_they_are():
    """`presets list --kind price` (prices are presets too: presets/prices) said only "not a
    preset kind; allowed: gpu, link, cluster, calibration"."""
    one_line_error(run("presets", "list", "--kind", "price"), "`costmodel archs`")
    assert "costmodel archs" not in run("presets", "list", "--kind", "foo").stderr


def test_step_takes_a_slice_of_each_node_like_scenario_and_train():
    """`step --gpus-per-node 4` was "No such option" while scenario, train, collective and
    predict take it: the same question (2 nodes x 4 GPUs) now gives one number on both."""
    args = ("--arch", "llama-2-7b", "--nodes", "2", "--gpus-per-node", "4", "--strategy",
            "fsdp", "--json")  # fmt: skip
    step = json.loads(run("step", "--cluster", "dgx-h100", *args).stdout)
    scen = json.loads(run("scenario", "--cluster", "dgx-h100", *args).stdout)
    assert step["ranks"] == scen["ranks"] == 8
    assert step["step_time_s"] == pytest.approx(scen["step_time_s"], rel=1e-12)
    assert step["memory_bytes"] == pytest.approx(scen["memory_total_bytes"], rel=1e-12)


@pytest.mark.parametrize(
    ("ref", "what"),
    [("21a", "is a busbw-only table"), ("26", "is not an nccl-tests log")],  # 27: as 26
)  # fmt: skip
def test_validate_compare_reference_that_has_no_times_says_what_it_is(ref, what):
    """`validate compare --reference 26` (offered by --help) failed with the parser's "no
    nccl-tests result rows found (expected lines like ...)"; the Validate page leaves these runs
    out. One predicate now decides for both, and the CLI names the runs it can compare."""
    from costmodel.reference import reference_id
    from costmodel.web import data

    line = one_line_error(run("validate", "compare", "--reference", ref), f"--reference: {ref}_",
                          what, ": 02, 03, ")  # fmt: skip
    listed = line.rsplit(": ", 1)[1].split(", ")
    assert listed == [reference_id(n) for n in data.reference_logs()]  # the page's list
    assert ref not in listed
