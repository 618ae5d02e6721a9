"""A third new user's pass over the CLI and the API: what each defect it found does now.

Each test asks a planner's question (a recipe the GPU cannot run, a bare parameter count, a
setup where nothing fits, a bundled nccl-tests log) through the surfaces that answer it and
checks that they agree, say what they leave out, and refuse bad input on one line.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import costmodel as cm
from tests._cli import one_line_error, run

FP8_REFUSED = r"recipe: fp8-mixed .*fp8 tensor cores; a100-sxm-80gb has none; allowed: mixed-adam"


# --- an fp8 recipe on a GPU without fp8 ----------------------------------------------------------
def test_an_fp8_recipe_on_a_gpu_without_fp8_is_refused_everywhere(tmp_path):
    """`step --cluster dgx-a100 --recipe fp8-mixed` priced an A100 step (and sized its memory)
    with fp8 weights and gradients, which need fp8 tensor cores (Hopper, Ada, Blackwell); only
    `--param-dtype fp8` was refused. Now the one check refuses it on every surface."""
    kw = dict(arch="llama-3.1-8b", nodes=1, strategy="fsdp", recipe="fp8-mixed", band=False)
    with pytest.raises(ValueError, match=FP8_REFUSED):
        cm.strategy_step(None, cluster="dgx-a100", **kw)
    assert cm.strategy_step(None, cluster="dgx-h100", **kw).step_time_s > 0  # H100 has fp8
    with pytest.raises(ValueError, match=FP8_REFUSED):
        cm.Scenario(arch="llama-2-7b", cluster="dgx-a100", nodes=1, recipe="fp8-mixed").evaluate()
    for args in (
        ("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed"),
        ("train", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed",
         "--tokens", "1T"),
        ("memory", "--arch", "llama-3.1-8b", "--cluster", "dgx-a100", "--recipe", "fp8-mixed",
         "--ranks", "8"),
        ("sweep", "--kind", "step", "--set", "preset=dgx-a100", "--set", "arch=llama-3.1-8b",
         "--set", "nodes=1", "--set", "recipe=fp8-mixed", "-o", str(tmp_path / "s.csv")),
    ):  # fmt: skip
        one_line_error(run(*args), "recipe: fp8-mixed", "a100-sxm-80gb has none")
    assert not (tmp_path / "s.csv").exists()
    # without a GPU named, memory is a formula: the recipe's bytes, no verdict to refuse
    assert run("memory", "--params", "7B", "--recipe", "fp8-mixed").exit_code == 0


# --- a bare parameter count: "fits" says its memory has no activations -------------------------
UNSIZED = "activations: not included"


def test_a_fit_of_a_bare_parameter_count_says_it_has_no_activations(tmp_path):
    """`train --params 7B --strategy fsdp` and `step --params 7B --cluster ...` said
    "memory per GPU 3.07 GB of 85.5 GB (fits)" with no word that the memory holds the model
    state alone (its compute is priced on a 7B shape, its activations, ~20 GB at 4096 tokens,
    are not counted); `memory` and `scenario` said so. Now the step's notes carry it, and the
    training cost, the JSON and the sweep's notes column with them."""
    kw = dict(nodes=8, strategy="fsdp", band=False)
    st = cm.strategy_step(7e9, cluster="dgx-h100", **kw)
    assert st.fits and any(n.startswith(UNSIZED) for n in st.notes)
    shaped = cm.strategy_step(None, arch="llama-2-7b", cluster="dgx-h100", **kw)
    assert not any(n.startswith(UNSIZED) for n in shaped.notes)
    r = cm.Scenario(params="7B", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate()
    assert sum(n.startswith(UNSIZED) for n in r.notes) == 1  # once, not twice
    assert any(n.startswith(UNSIZED) for n in r.training_cost(2e12).notes)
    for args in (
        ("train", "--params", "7B", "--tokens", "2T", "--nodes", "8", "--strategy", "fsdp"),
        ("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "8", "--strategy", "fsdp"),
    ):
        res = run(*args)
        assert res.exit_code == 0 and "(fits)" in res.stdout
        assert f"note: {UNSIZED}" in res.stdout, res.stdout
    out = tmp_path / "s.csv"
    res = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "params=7B",
              "--set", "strategy=fsdp", "--set", "nodes=8", "-o", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert UNSIZED in pd.read_csv(out)["notes"][0]


# --- validate compare: a refusal is one line, even after "assumed:" ----------------------------
def test_validate_compare_refusal_after_assumptions_is_one_line():
    """`validate compare --reference 06a --model calibrated` printed "assumed: op = ...",
    "assumed: cluster = ..." and then the error: three lines on stderr for exit 2. What was
    assumed is said once the comparison is made; a refusal is its one line."""
    res = run("validate", "compare", "--reference", "06a", "--model", "calibrated")
    one_line_error(res, "no row could be predicted", "dell-xe9680-h100", "carries no calibration")
    ok = run("validate", "compare", "--reference", "06a")
    assert ok.exit_code == 0
    assert "assumed: cluster = dell-xe9680-h100" in ok.stderr


def test_validate_compare_json_carries_the_goal_checks_the_text_prints():
    """`validate compare --reference 06a` printed "median |busbw error| from 1 MiB: 3.4% (<= goal
    8%, 30 rows)"; `--json` had only "passed": true, not the figures it was judged on."""
    text = run("validate", "compare", "--reference", "06a")
    doc = json.loads(run("validate", "compare", "--reference", "06a", "--json").stdout)
    goals = {g["check"]: g for g in doc["goal"]}
    assert set(goals) == {"from 1 MiB", "all sizes"}
    for label, g in goals.items():
        assert g["passed"] is True and 0 < g["median_abs_rel_error"] <= g["goal"]
        shown = f"median |busbw error| {label}: {g['median_abs_rel_error']:.1%}"
        assert f"{shown} (<= goal {g['goal']:.0%}, {g['rows']} rows)" in text.stdout
    assert goals["all sizes"]["rows"] == doc["checked_rows"] == doc["predicted"]
    assert goals["from 1 MiB"]["rows"] < goals["all sizes"]["rows"]


# --- DDP's host time is its own figure, not exposed communication ------------------------------
def test_ddp_host_overhead_is_not_exposed_communication():
    """`step --params 7B --cluster dgx-h100 --nodes 1 --gpus-per-node 1` (one GPU, no
    all-reduce) said "all-reduce (sum) 0 s, exposed communication 13 ms", and `step --arch
    llama-2-7b --nodes 8 --bucket 100GB` "all-reduce (sum) 71.7 ms, exposed communication
    80.1 ms": DDP's fitted host time (hooks, bucket copies) was counted as exposed
    communication. It is now a part of the step of its own, on every road and in the timeline."""
    from costmodel.plots import compute_gaps

    one = cm.strategy_step(7e9, cluster="dgx-h100", nodes=1, gpus_per_node=1, band=False)
    # one GPU is plain training, no DDP wrapper: no host time either (test_qa_pass73)
    assert one.comm_s == 0.0 and one.exposed_comm_s == 0.0 and one.host_overhead_s == 0.0
    big = cm.strategy_step(None, arch="llama-2-7b", cluster="dgx-h100", nodes=8,
                           bucket_cap_bytes=100e9, band=False)  # fmt: skip
    assert 0 < big.exposed_comm_s <= big.comm_s
    for s in (one, big):
        parts = s.compute_s + s.exposed_comm_s + s.optimizer_s + s.sync_s + s.host_overhead_s
        assert parts == pytest.approx(s.step_time_s, rel=1e-12)
        # the timeline draws it on the compute row: the gaps are the exposed communication
        gaps = compute_gaps([vars(i) for i in s.timeline], s.step_time_s)
        assert sum(b - a for a, b in gaps) == pytest.approx(s.exposed_comm_s, abs=1e-9)
        host = [i for i in s.timeline if i.kind == "host"]
        assert sum(i.duration_s for i in host) == pytest.approx(s.host_overhead_s, rel=1e-12)
    # the same step through Scenario (DDP's own road) and the CLI's text and JSON
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, bucket_cap_bytes=100e9)
    res = r.evaluate(scaling=False, flips=False)
    assert res.exposed_comm_s == pytest.approx(big.exposed_comm_s, rel=1e-9)
    assert res.host_overhead_s == pytest.approx(big.host_overhead_s, rel=1e-12)
    args = ("step", "--params", "7B", "--cluster", "dgx-h100", "--gpus-per-node", "1")
    d = json.loads(run(*args, "--json").stdout)
    assert d["exposed_comm_s"] == 0.0 and d["host_overhead_s"] == pytest.approx(one.host_overhead_s)
    text = run(*args).stdout
    assert "exposed communication  0 s" in text and "DDP host overhead" not in text
    assert (
        big.host_overhead_s > 0
        and "DDP host overhead"
        in run("step", "--params", "7B", "--cluster", "dgx-h100", "--gpus-per-node", "2").stdout
    )
    # the lesson's road with a host time gives the same split
    from costmodel import ddp

    lesson = ddp.ddp_step(7e9, 1, compute_time_s=0.4, bandwidth_bytes_per_s=50e9,
                          step_overhead_s=0.01)  # fmt: skip
    assert lesson.exposed_comm_s == pytest.approx(0.0, abs=1e-12)
    assert lesson.host_overhead_s == 0.01


# --- "a larger card" is the same job on a larger card ------------------------------------------
@pytest.mark.parametrize(
    ("kw", "gpus"),
    [
        (dict(arch="llama-3.1-70b", nodes=8, strategy="fsdp"), 64),
        (dict(params=7e9, nodes=1, gpus_per_node=1, compute_time_s=0.4), 1),
    ],
)
def test_a_larger_card_keeps_the_job_s_gpu_count(kw, gpus):
    """`step --arch llama-3.1-70b --nodes 8 --strategy fsdp` offered "a larger card: gb200-nvl72
    (gb200): 121 GB per GPU" against 136 GB on the H100s: 8 NVL72 racks, 576 GPUs, not 64, so
    the state was sharded 9 ways finer; on one GPU (`--gpus-per-node 1`) the larger cards were
    whole 8-GPU nodes. A larger card is now the same GPU count on that card (whole nodes, or a
    slice of one node), so its memory per GPU is the same layout's."""
    from costmodel.strategy.advisor import fit_suggestions

    params = kw.pop("params", None)
    fa = fit_suggestions(params, cluster="dgx-h100", band=False, **kw)
    cards = [c for c in fa.changes if c.kind == "larger_card"]
    assert cards, fa.changes
    for c in cards:
        assert c.step.ranks == gpus, c.change
        # the card alone (not with recompute or a sharding change, also offered): the same layout
        if set(c.updates) <= {"cluster", "nodes", "gpus_per_node"}:
            assert c.step.memory_bytes == pytest.approx(fa.base.memory_bytes, rel=1e-9), c.change


# --- the scaling table says which node counts do not fit ----------------------------------------
@pytest.mark.parametrize("strategy", ["fsdp", "ddp"])
def test_scenario_scaling_rows_say_which_node_counts_do_not_fit(strategy):
    """`scenario --arch llama-3.1-70b --nodes 8 --zero 3 --recompute full` fits (34 GB per GPU)
    and its scaling table listed 1 and 2 nodes (158 and 87 GB per GPU on 85.5 GB cards) with a
    step and an efficiency and no word that those configurations cannot run. Each row now has
    the memory per GPU of its own layout (the strategy step's, at that node count) and fits."""
    kw = dict(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy=strategy)
    r = cm.Scenario(**kw, recompute="full").evaluate(flips=False)
    rows = {row.nodes: row for row in r.scaling}
    for n in (1, 8):
        st = cm.strategy_step(None, **{**kw, "nodes": n}, recompute="full", band=False)
        assert rows[n].memory_bytes == pytest.approx(st.memory_bytes, rel=1e-9)
        assert rows[n].fits is st.fits
    assert rows[8].fits is r.fits
    if strategy == "fsdp":
        assert r.fits and not rows[1].fits and rows[16].fits
    text = r.summary()
    line = next(x for x in text.splitlines() if x.split()[:2] == ["1", "8"])
    assert ("does NOT fit" in line) is (not rows[1].fits)
    assert {"memory_bytes", "fits"} <= set(r.scaling_frame().columns)


# --- batch: a learning rate tuned at two batches at once ----------------------------------------
def test_a_base_batch_given_twice_is_refused_as_twice():
    """`batch ... --base-lr 0.1 --base-batch 256 --base-tokens 1Mi` said "--base-batch or
    --base-tokens: give the batch the LR was tuned at", as if neither had been given."""
    base = ("batch", "--local", "4", "--ranks", "64", "--global-batch", "8192", "--seq", "4096",
            "--base-lr", "0.1")  # fmt: skip
    one_line_error(run(*base, "--base-batch", "256", "--base-tokens", "1Mi"), "not both")
    one_line_error(run(*base), "give the batch the LR was tuned at")
    assert run(*base, "--base-batch", "256").exit_code == 0


# --- step --strategy all: the order it states is the order it prints ----------------------------
def test_strategy_ranking_header_states_the_order_of_rows_that_do_not_fit():
    """`step --arch llama-3.1-70b --nodes 8 --strategy all` (nothing fits) was headed "every
    strategy ranked by step time among those that fit" above ten rows in memory order (fsdp
    4.29 s, hsdp 4.3 s, ..., zero2 4.7 s, fsdp no-reshard 4.29 s): the rows that do not fit
    are ranked by memory per GPU, and the header now says so."""
    args = ("step", "--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "8",
            "--strategy", "all")  # fmt: skip
    text = run(*args).stdout
    assert "then the rest by memory per GPU" in text.splitlines()[0]
    doc = json.loads(run(*args, "--json").stdout)
    rows = doc["strategies"]
    fit = [r for r in rows if r["fits"]]
    rest = [r for r in rows if not r["fits"]]
    assert rows == fit + rest and rest  # nothing fits at 70B, recompute none, on 64 H100s
    assert [r["memory_bytes"] for r in rest] == sorted(r["memory_bytes"] for r in rest)
    steps = [r["step_time_s"] for r in rest]
    assert steps != sorted(steps)  # memory order is not step order: the header must say it


# --- a mixture of experts says what a data-parallel answer leaves out, on every surface ---------
def test_moe_note_is_in_memory_and_in_the_train_json():
    """`memory --arch mixtral-8x7b` said nothing of expert parallelism (its "fits" assumes every
    GPU holds all experts), and `train --arch mixtral-8x7b --json` had "notes": [] while its
    text printed the mixture-of-experts note: the note came from the CLI, not the cost."""
    moe = "mixture of experts"
    mem = run("memory", "--arch", "mixtral-8x7b", "--zero-stage", "3", "--ranks", "64")
    assert mem.stdout.count(moe) == 1
    doc = json.loads(
        run(
            "memory", "--arch", "mixtral-8x7b", "--zero-stage", "3", "--ranks", "64", "--json"
        ).stdout
    )
    assert any(moe in n for n in doc["notes"])
    args = ("train", "--arch", "mixtral-8x7b", "--tokens", "1T", "--strategy", "fsdp")
    assert run(*args).stdout.count(moe) == 1
    assert any(moe in n for n in json.loads(run(*args, "--json").stdout)["notes"])
    r = cm.Scenario(arch="mixtral-8x7b", cluster="dgx-h100", nodes=1, strategy="fsdp").evaluate(
        scaling=False, flips=False
    )
    assert any(moe in n for n in r.training_cost(1e12).notes)
    dense = run("memory", "--arch", "llama-3.1-8b", "--ranks", "8", "--json")
    assert not any(moe in n for n in json.loads(dense.stdout)["notes"])


# --- rounding is not exposed communication -------------------------------------------------------
def test_a_step_without_communication_shows_no_exposed_communication():
    """One rank, no communication: `step --arch gpt2-124m --gpus-per-node 1 --strategy fsdp`
    said "exposed communication 2.17e-09 ns" and the lesson's `step --ranks 1` "3.28e-06 ns",
    the rounding residue of step - compute - optimizer."""
    s = cm.strategy_step(None, arch="gpt2-124m", cluster="dgx-h100", gpus_per_node=1,
                         strategy="fsdp", band=False)  # fmt: skip
    assert s.comm_s == 0.0 and s.exposed_comm_s == 0.0
    lesson = cm.ddp_step(7e9, 1, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    assert lesson.exposed_comm_s == 0.0
    out = run("step", "--params", "7B", "--ranks", "1", "--compute-time", "400ms",
              "--bandwidth", "50GB/s").stdout  # fmt: skip
    assert "exposed communication        0 s" in out
    # a real exposed time is kept, however small against the step
    assert cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9).exposed_comm_s > 0.2


# --- a Scenario field out of range: the field, why, and the range --------------------------------
@pytest.mark.parametrize(
    ("change", "field", "why", "allowed"),
    [
        ("contention=nan", "contention", "must be an overlap contention", "[0, 1]"),
        ("mfu=nan", "mfu", "must be a model FLOP utilisation", "[0.001, 1]"),
        ("nodes=0", "nodes", "must be a whole number", "1..1,000,000"),
        ("micro_batch=-1", "micro_batch", "must be a whole number", "1..1,000,000"),
    ],
)
def test_a_scenario_field_out_of_range_names_the_range(change, field, why, allowed):
    """`scenario ... --vs contention=nan` said "comm_contention: Input should be less than or
    equal to 1" (NaN is not above 1; pydantic names one bound) and `--vs nodes=0` gave no upper
    bound. NaN is now refused as not finite, and the field's range is named, as ``--vs KEY``
    with the key typed there."""
    res = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--vs", change)
    one_line_error(res, f"--vs {field}: ", why, allowed)
    with pytest.raises(ValueError, match=why):
        cm.Scenario(arch="llama-2-7b", nodes=8).with_changes(change)


# --- "which algorithm wins" over one link --------------------------------------------------------
def test_collective_over_a_link_with_every_algorithm_names_the_fastest():
    """The README's `collective all_reduce --size 500MB --ranks 8 --bandwidth 900GB/s
    --algorithm all` printed eight rows in no order and no answer to "which algorithm wins"
    (the cluster form says "fastest at ..."); now it names the fastest per size, with the
    runner-up's gap, in the text and the JSON."""
    args = ("collective", "all_reduce", "--size", "500MB", "--size", "14GB", "--ranks", "8",
            "--bandwidth", "900GB/s", "--algorithm", "all")  # fmt: skip
    doc = json.loads(run(*args, "--json").stdout)
    rows = pd.DataFrame(doc["results"])
    assert [f["size_bytes"] for f in doc["fastest"]] == [5e8, 14e9]
    for f in doc["fastest"]:
        at = rows[rows["size_bytes"] == f["size_bytes"]]
        best = at.loc[at["time_s"].idxmin()]
        assert best["algorithm"] in f["fastest"]
        assert set(at[at["time_s"] <= best["time_s"] * (1 + 1e-9)]["algorithm"]) == set(
            f["fastest"]
        )
    text = run(*args).stdout
    assert "fastest at 500 MB: nvls (ring is 56% slower" in text
    assert text.count("fastest at ") == 2
    # one algorithm asked: no ranking to state
    one = run("collective", "all_reduce", "--size", "500MB", "--ranks", "8", "--bandwidth",
              "900GB/s")  # fmt: skip
    assert "fastest" not in one.stdout and "fastest" not in json.loads(
        run("collective", "all_reduce", "--size", "500MB", "--ranks", "8", "--bandwidth",
            "900GB/s", "--json").stdout
    )  # fmt: skip


def test_one_node_is_written_in_the_singular():
    """'dgx-h100 x 1 nodes' read wrong in the scenario summary and the step header."""
    import costmodel as cm

    text = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=1).evaluate().summary()
    assert "x 1 node " in text and "x 1 nodes" not in text
    one = run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "-s", "1GB").stdout
    assert "all_reduce on dgx-h100 x 1 node\n" in one and "node(s)" not in one


def test_calibrate_says_why_its_fitted_bandwidth_exceeds_the_preset_s(tmp_path):
    """`calibrate 06a --cluster dgx-h100` printed a fitted 402 GB/s beside a 'preset bandwidth'
    of 50 GB/s with no word that one is per rank over all of a node's NICs and the other one
    GPU's NIC: it read as the model being 8x off."""
    from tests._paths import NCCL_TESTS

    log = next(NCCL_TESTS.glob("06a_*"))
    out = run("calibrate", str(log), "--cluster", "dgx-h100", "-o", str(tmp_path / "c.toml"))
    assert out.exit_code == 0, out.output
    fitted = [ln for ln in out.stdout.splitlines() if ln.startswith("all_reduce")]
    assert fitted and "GB/s" in fitted[0]
    assert "preset_bandwidth: the preset's link bandwidth per GPU" in out.stdout
    assert "not by one GPU's share" in out.stdout


@pytest.mark.parametrize("spelling", ["all-reduce", "AllReduce", "all_reduce", "allreduce"])
def test_a_collective_is_read_as_people_write_it(spelling):
    """`costmodel collective all-reduce ...` (the spelling of the lesson, the README's prose and
    most papers) was refused, as was NCCL's `AllReduce`; each form now gives the same answer."""
    link = ("-s", "1GB", "--ranks", "8", "--bandwidth", "900GB/s", "--json")
    want = json.loads(run("collective", "all_reduce", *link).stdout)
    out = run("collective", spelling, *link)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == want
    pred = run("predict", "--op", spelling, "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB")
    assert pred.exit_code == 0 and "all_reduce on dgx-h100" in pred.stdout, pred.output


def test_an_unknown_collective_is_still_one_line_naming_the_allowed():
    out = run("collective", "allreduc", "-s", "1GB", "--ranks", "8", "--bandwidth", "900GB/s")
    one_line_error(out, "OP: unknown collective 'allreduc'", "allowed: all_reduce")


def test_validate_compare_reads_op_as_people_write_it():
    from tests._paths import NCCL_TESTS

    log = str(next(NCCL_TESTS.glob("24b_*")))
    a = run("validate", "compare", log, "--op", "all-gather", "--json")
    b = run("validate", "compare", log, "--op", "all_gather", "--json")
    assert a.exit_code == b.exit_code and a.exit_code in (0, 1), (a.output, b.output)  # 1: goal
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert "op = all_gather" in a.stderr


def test_tokens_per_gpu_on_a_cluster_takes_the_step_s_own_compute_road():
    """`step --params 7B --cluster dgx-h100 --tokens-per-gpu 4096` priced compute at MFU 0.40
    and called it 'measured compute time' (519 ms against 549 ms by default); the larger-card
    suggestion then kept the H100's compute time on a GB200. Now the tokens are micro-batch x
    sequence and the step's own road (the fitted efficiency, or --mfu) prices and names them."""
    base = ("step", "--cluster", "dgx-h100", "--nodes", "4", "--strategy", "fsdp", "--json")
    for model in (("--params", "7B"), ("--arch", "llama-2-7b")):
        tok = json.loads(run(*base, *model, "--tokens-per-gpu", "8192").stdout)
        seq = json.loads(run(*base, *model, "--seq", "4096", "--micro-batch", "2").stdout)
        assert tok["compute_source"] == "fitted" == seq["compute_source"]
        assert tok["step_time_s"] == pytest.approx(seq["step_time_s"], rel=1e-12)
    at = json.loads(run(*base, "--params", "7B", "--tokens-per-gpu", "4096", "--mfu", "0.3").stdout)
    assert at["compute_source"] == "mfu"
    one_line_error(
        run(*base, "--arch", "llama-2-7b", "--tokens-per-gpu", "5000"),
        "--tokens-per-gpu: 5000",
        "multiple of --seq",
    )
    one_line_error(
        run(*base, "--params", "7B", "--tokens-per-gpu", "4096", "--peak-flops", "989T"),
        "--peak-flops: an option of the step over one link",
    )


def test_a_scenario_of_less_than_one_parameter_is_refused_naming_the_field():
    """`Scenario(params=5e-300)` was accepted (only > 0 was asked) and the step page then showed
    'Compute 3.1e-301 ns'; the CLI already refused counts below 1."""
    with pytest.raises(ValueError, match="params"):
        cm.Scenario(params=0.5, cluster="dgx-h100")
    assert cm.Scenario(params=1, cluster="dgx-h100").params == 1


def test_a_fit_suggestion_never_reads_minus_zero_percent():
    """The fit suggestions printed 'step 549 ms (-0%)' for a change of -0.1 %."""
    from costmodel.units import format_change

    assert format_change(-0.0004) == "0%" == format_change(0.0004)
    assert format_change(-0.08) == "-8%"
    out = run("step", "--arch", "llama-2-7b", "--cluster", "dgx-h100", "--nodes", "4")
    assert "-0%" not in out.stdout and "+0%" not in out.stdout


def test_the_model_size_note_is_on_the_step_as_on_memory_and_train():
    """`costmodel step --params 70B` (and the step sweep) left out the note that production runs
    of this size add tensor and pipeline parallelism, which memory, train and Scenario carry;
    Scenario shows it once."""
    base = ("--cluster", "dgx-h100", "--nodes", "8", "--strategy", "fsdp")
    step = json.loads(run("step", "--params", "70B", *base, "--json").stdout)
    assert any("tensor and pipeline" in n for n in step["notes"])
    small = json.loads(run("step", "--params", "7B", *base, "--json").stdout)
    assert not any("tensor and pipeline" in n for n in small["notes"])
    r = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate(
        scaling=False, flips=False
    )
    assert sum("tensor and pipeline" in n for n in r.notes) == 1


@pytest.mark.parametrize("loss", ["fp32", "fused", "fp32-held"])
def test_a_scaling_row_s_memory_is_the_step_s_memory_at_its_node_count(loss):
    """DDP's scaling rows' memory per GPU was sized without the scenario's loss (the default
    fp32 loss whatever `loss=` said), so a fused-loss scenario's row at its own node count
    disagreed with its step's memory."""
    s = cm.Scenario(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="ddp", loss=loss)
    rows = {x.nodes: x for x in s.evaluate(scaling=True, flips=False).scaling}
    for n in (1, 4):
        at = s.model_copy(update={"nodes": n}).evaluate(scaling=False, flips=False)
        assert rows[n].memory_bytes == pytest.approx(at.memory_total_bytes, rel=1e-12)
