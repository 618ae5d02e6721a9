"""QA pass 18: ``step --strategy all`` says what its ranking leaves out, a refused measured
step time is named as typed, and the Adam square-root rule is written as Malladi et al. state it."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel import batch
from costmodel.architecture import moe_data_parallel_note
from costmodel.strategy.advisor import advise
from costmodel.training import scale_notes

from ._cli import one_line_error, run

MOE = "mixture of experts"
TP_PP = "tensor and pipeline parallelism"


# --- 1. step --strategy all: the notes one strategy's step prints ------------------------------
@pytest.mark.parametrize(
    ("arch", "said"),
    [("mixtral-8x7b", MOE), ("llama-3.1-70b", TP_PP), ("deepseek-v3", MOE)],
)
def test_step_all_text_says_what_the_ranking_leaves_out(arch, said):
    one = run("step", "--arch", arch, "--cluster", "dgx-h100", "--nodes", "8", "--strategy", "fsdp")
    every = run(
        "step", "--arch", arch, "--cluster", "dgx-h100", "--nodes", "8", "--strategy", "all"
    )
    assert one.exit_code == 0 and every.exit_code == 0, (one.stderr, every.stderr)
    notes_one = [ln for ln in one.stdout.splitlines() if ln.startswith("note: ")]
    notes_all = [ln for ln in every.stdout.splitlines() if ln.startswith("note: ")]
    assert any(said in n for n in notes_all), every.stdout
    assert notes_all == notes_one  # the same lines, once each, not one per strategy


def test_advice_notes_are_every_steps_once_and_in_json():
    a = advise(arch="mixtral-8x7b", cluster="dgx-h100", nodes=8)
    moe = moe_data_parallel_note("mixtral-8x7b")
    assert a.notes == (moe,)
    assert all(moe in s.notes for s in a.steps)
    assert a.as_dict()["notes"] == [moe]
    big = advise(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8)
    assert big.notes == tuple(scale_notes(cm.load_arch("llama-3.1-70b").params))
    r = run("step", "--arch", "mixtral-8x7b", "--nodes", "8", "--strategy", "all", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["notes"] == [moe]


def test_advice_notes_leave_the_bucket_note_to_the_warning():
    a = advise(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, bucket_cap_bytes=50 * 2**20)
    bucket = {s.layout.bucket_note for s in a.steps} - {None}
    assert bucket  # fsdp and hsdp have no gradient bucket: their steps say so
    assert not bucket & set(a.notes)


# --- 2. a refused measured step time is named as the argument typed ----------------------------
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), 1e9, 1e-9])
def test_measured_step_time_refusal_names_measured_step_time_s(bad):
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=1).evaluate()
    with pytest.raises(ValueError, match=r"^measured_step_time_s: "):
        r.training_cost(1e12, measured_step_time_s=bad)


def test_formula_layer_keeps_its_own_name_and_the_cli_its_flag():
    with pytest.raises(ValueError, match=r"^step_time_s: "):
        cm.training_cost(1e12, tokens_per_step=1e6, step_time_s=0.0, ranks=8)
    for bad in ("0s", "1ms"):
        one_line_error(
            run(
                "train",
                *("--arch", "llama-3.1-8b", "--tokens", "15T", "--nodes", "8", "--zero", "1"),
                *("--step-time", bad),
            ),
            "--step-time: ",
        )


# --- 3. Malladi et al.'s rule: 1 - beta is what is multiplied by k -----------------------------
def test_sqrt_rule_citation_scales_one_minus_beta():
    text = batch.LR_RULE_INFO["sqrt"][1]
    assert "(1 - beta) x k" in text and "1 - beta x k" not in text


# --- 4. scenario --vs: each side's notes, as one scenario prints them ---------------------------
def _notes(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if ln.startswith("note")]


@pytest.mark.parametrize(("arch", "said"), [("mixtral-8x7b", MOE), ("llama-3.1-70b", TP_PP)])
def test_scenario_vs_text_keeps_what_the_answer_leaves_out(arch, said):
    base = ("scenario", "--arch", arch, "--nodes", "8", "--zero", "3", "--recompute", "full")
    one = run(*base)
    two = run(*base, "--vs", "nodes=16")
    assert one.exit_code == 0 and two.exit_code == 0, (one.stderr, two.stderr)
    left_out = [n for n in _notes(one.stdout) if said in n]
    assert left_out and all(n in _notes(two.stdout) for n in left_out), two.stdout


def test_scenario_vs_notes_name_the_side_that_gives_them():
    r = run(
        *("scenario", "--arch", "llama-3.1-70b", "--nodes", "8", "--zero", "3"),
        *("--recompute", "full", "--vs", "cluster=dgx-a100"),
    )
    assert r.exit_code == 0, r.stderr
    notes = _notes(r.stdout)
    a, b = (
        cm.Scenario(arch="llama-3.1-70b", nodes=8, zero_stage=3, recompute="full").evaluate(),
        cm.Scenario(
            arch="llama-3.1-70b", nodes=8, zero_stage=3, recompute="full", cluster="dgx-a100"
        ).evaluate(scaling=False, flips=False),
    )
    # the API's notes name the field (`mfu`), the CLI's the option (--mfu)
    only_a = [n.replace("`mfu`", "--mfu") for n in a.notes if n not in b.notes]
    only_b = [n.replace("`mfu`", "--mfu") for n in b.notes if n not in a.notes]
    both = [n.replace("`mfu`", "--mfu") for n in a.notes if n in b.notes]
    assert only_a and only_b and both  # the compute's source differs, the model's size not
    assert all(f"note (A): {n}" in notes for n in only_a)
    assert all(f"note (B): {n}" in notes for n in only_b)
    assert all(f"note: {n}" in notes for n in both)
    # once each, beside the table's own: why an efficiency is above 100 % (A's fsdp here)
    above = [n for n in notes if "scaling efficiency above 100%" in n]
    assert len(notes) == len(only_a) + len(only_b) + len(both) + len(above)


def test_scenario_vs_leaves_does_not_fit_to_the_header_and_the_bucket_to_the_warning():
    r = run(
        *("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--bucket", "50MiB"),
        *("--vs", "zero=3"),
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("DOES NOT FIT") == 1  # A's header
    assert not [n for n in _notes(r.stdout) if "bucket_cap_bytes" in n]
    assert "--bucket: not applied to fsdp" in r.stderr


# --- 5. the one-link step prices a mixture of experts' compute on its active parameters --------
def test_one_link_step_compute_of_a_moe_is_six_active_params_per_token():
    a = cm.load_arch("mixtral-8x7b")
    tok, peak, mfu = 4096, 989e12, 0.4
    s = cm.ddp_step("mixtral-8x7b", 64, tokens_per_gpu=tok, peak_flops=peak, mfu=mfu,
                    bandwidth_bytes_per_s=50e9)  # fmt: skip
    assert s.compute_s == pytest.approx(6 * a.active_params * tok / (peak * mfu), rel=1e-12)
    # 6 x 12.9e9 x 4096 / (0.4 x 989e12) = 0.80 s, not the 2.9 s of all 46.7e9 parameters
    assert 0.79 < s.compute_s < 0.81
    # the gradients all-reduced are every parameter's: the same buckets as a dense count of P
    dense = cm.ddp_step(float(a.params), 64, tokens_per_gpu=tok, peak_flops=peak, mfu=mfu,
                        bandwidth_bytes_per_s=50e9, layer_param_counts=a.tensor_sizes)  # fmt: skip
    assert s.comm_s == dense.comm_s and s.buckets == dense.buckets
    assert dense.compute_s == pytest.approx(s.compute_s * a.params / a.active_params)
    # a dense architecture is unchanged: 6 P T
    d = cm.load_arch("llama-2-7b")
    s7 = cm.ddp_step("llama-2-7b", 64, tokens_per_gpu=tok, peak_flops=peak, mfu=mfu,
                     bandwidth_bytes_per_s=50e9)  # fmt: skip
    assert s7.compute_s == pytest.approx(6 * d.params * tok / (peak * mfu), rel=1e-12)


def test_cli_one_link_step_of_a_moe_matches_the_api():
    r = run(
        *("step", "--arch", "mixtral-8x7b", "--tokens-per-gpu", "4096", "--mfu", "0.4"),
        *("--peak-flops", "989T", "--ranks", "64", "--bandwidth", "50GB/s", "--json"),
    )
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    api = cm.ddp_step("mixtral-8x7b", 64, tokens_per_gpu=4096, peak_flops=989e12, mfu=0.4,
                      bandwidth_bytes_per_s=50e9)  # fmt: skip
    assert got["compute_s"] == api.compute_s and got["step_time_s"] == api.step_time_s
    assert got["buckets"] == api.buckets == 834


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--arch", "mixtral-8x7b", "--compute-time", "400ms"), MOE),
        (("--arch", "llama-3.1-70b", "--compute-time", "4s"), TP_PP),
        (("--params", "70B", "--compute-time", "4s"), TP_PP),
    ],
)
def test_one_link_step_says_what_it_leaves_out(args, said):
    base = ("step", *args, "--ranks", "64", "--bandwidth", "50GB/s")
    text, machine = run(*base), run(*base, "--json")
    assert text.exit_code == 0 and machine.exit_code == 0, (text.stderr, machine.stderr)
    notes = json.loads(machine.stdout)["notes"]
    assert any(said in n for n in notes)
    assert [ln for ln in text.stdout.splitlines() if ln.startswith("note: ")] == [
        f"note: {n}" for n in notes
    ]
    # the cluster step's words for the same model
    arch = args[1] if args[0] == "--arch" else None
    if arch:
        cluster = cm.strategy_step(arch=arch, cluster="dgx-h100", nodes=8, band=False)
        assert all(n in cluster.notes for n in notes)


def test_one_link_step_of_a_dense_7b_has_no_notes():
    r = run("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "64",
            "--bandwidth", "50GB/s", "--json")  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.stdout)["notes"] == []


# --- 6. --price-b refused: B's own price option is the way out, not A's -------------------------
def test_price_b_for_another_gpu_offers_usd_per_gpu_hour_b():
    line = one_line_error(
        run(
            *("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--zero", "1"),
            *("--tokens", "15T", "--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200"),
            *("--price-b", "aws-p5-on-demand"),
        ),
        "--price-b: aws-p5-on-demand is a price for h100-sxm, not for B's GPU b200",
        "lambda-b200-on-demand",
    )
    assert line.endswith("or give --usd-per-gpu-hour-b")
    assert "(--usd-per-gpu-hour)" not in line  # A's option: it does not price B


# --- 7. a grid file that names no kind is of --kind's (kind=) ----------------------------------
MEMORY_AXES = (
    '[grid]\npreset = ["dgx-h100"]\narch = ["llama-3.1-8b"]\nzero_stage = [3]\nranks = [8]\n'
)


def test_kindless_grid_file_takes_the_kind_given(tmp_path):
    from costmodel import sweep as sw

    f = tmp_path / "g.toml"
    f.write_text(MEMORY_AXES)
    out = tmp_path / "m.csv"
    r = run("sweep", str(f), "--kind", "memory", "-o", str(out))
    assert r.exit_code == 0, r.stderr  # was "grid: unknown collective axis 'arch'"
    api = cm.sweep(str(f), kind="memory")
    one = run("memory", "--arch", "llama-3.1-8b", "--zero", "3", "--ranks", "8",
              "--cluster", "dgx-h100", "--json")  # fmt: skip
    assert api["memory_GB"].tolist() == [json.loads(one.stdout)["memory_GB"]]
    assert sw.load_grid(f, "memory").kind == "memory"
    # no kind anywhere: a collective grid, as before
    c = tmp_path / "c.toml"
    c.write_text('[grid]\npreset = ["dgx-h100"]\nsize = ["1MiB"]\n')
    assert sw.load_grid(c).kind == "collective"
    assert run("sweep", str(c), "-o", str(tmp_path / "c.csv")).exit_code == 0


def test_grid_file_kind_is_its_own_and_a_contradiction_is_refused(tmp_path):
    from costmodel import sweep as sw

    f = tmp_path / "g.toml"
    f.write_text('kind = "memory"\n' + MEMORY_AXES)
    assert sw.load_grid(f, "step").kind == "memory"  # the file says it
    one_line_error(
        run("sweep", str(f), "--kind", "step", "-o", str(tmp_path / "s.csv")),
        "--kind step contradicts kind = 'memory'",
    )
    assert run("sweep", str(f), "-o", str(tmp_path / "m.csv")).exit_code == 0


# --- 8. a grid file's refused key is named by its file, with the allowed range ------------------
@pytest.mark.parametrize(
    ("body", "kind", "said"),
    [
        ("[grid]\nparams = [1e9]\nranks = [0]\n", "memory",
         "{f}: ranks: must be a whole number in 1..1,000,000,000, got 0"),
        ('[grid]\npreset = ["dgx-h100"]\nnodes = [0]\nsize = ["1MiB"]\n', "collective",
         "{f}: nodes: must be a whole number in 1..1,000,000, got 0"),
        ('[grid]\npreset = ["dgx-h100"]\nparams = [1e9]\nbandwidth = ["50GB/s"]\n', "memory",
         "{f}: unknown memory axis 'bandwidth' (an axis of the collective sweep: "
         "--kind collective); allowed: "),
        ('[grid]\narch = ["nope-arch"]\nranks = [8]\n', "memory",
         "{f}: arch: unknown architecture 'nope-arch'"),
    ],
)  # fmt: skip
def test_grid_file_refusal_names_the_file(tmp_path, body, kind, said):
    f = tmp_path / "g.toml"
    f.write_text(body)
    one_line_error(
        run("sweep", str(f), "--kind", kind, "-o", str(tmp_path / "x.csv")), said.format(f=f)
    )
    assert not (tmp_path / "x.csv").exists()


def test_set_count_of_zero_names_the_range():
    one_line_error(
        run("sweep", "--kind", "memory", "--set", "ranks=0", "--set", "params=1e9"),
        "--set ranks: must be a whole number in 1..1,000,000,000, got 0",
    )
    one_line_error(
        run(
            *("sweep", "--kind", "step", "--set", "preset=dgx-h100"),
            *("--set", "arch=llama-3.1-8b", "--set", "micro_batch=0"),
        ),
        "--set micro_batch: must be a whole number in 1..1,000,000, got 0",
    )
