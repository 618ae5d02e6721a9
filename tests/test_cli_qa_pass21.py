"""A QA pass over the new-user walk's leftovers: ``memory --strategy all`` says what makes it
fit where nothing does, as one strategy's answer says it; the step's all-reduce sum says it is
a sum of bucket all-reduces; ``step --ranks N`` alone reads the default cluster, as ``train``
and ``scenario`` do; ``batch`` takes micro-batch 1 where micro-batch and accumulation are both
missing, as ``step`` and ``train`` do; a whole-number refusal suggests only spellings of what
was typed."""

from __future__ import annotations

import json

import pytest

from tests._cli import one_line_error, run


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- memory --strategy all: what makes it fit, as one strategy's answer -----------------------
MEM70 = ("memory", "--arch", "llama-3.1-70b", "--ranks", "64", "--seq", "8192",
         "--cluster", "dgx-h100")  # fmt: skip


def test_memory_all_nothing_fits_says_what_makes_it_fit():
    r = run(*MEM70, "--strategy", "all")
    assert r.exit_code == 0, r.stderr
    assert "NOTHING FITS" in r.stdout
    assert "Changes that make it fit" in r.stdout
    assert "recompute full:" in r.stdout
    one = run(*MEM70, "--strategy", "fsdp")
    # the same lines as fsdp's own answer (the most sharded layout: step --strategy all's base)
    fit_lines = [ln for ln in one.stdout.splitlines() if ln.startswith(("DOES NOT FIT", "  "))]
    assert fit_lines and all(ln in r.stdout.splitlines() for ln in fit_lines)


def test_memory_all_json_has_the_fit_suggestions_of_fsdp():
    every = _json(*MEM70, "--strategy", "all")
    one = _json(*MEM70, "--strategy", "fsdp")
    assert every["fit_suggestions"] == one["fit_suggestions"]
    assert every["fit_suggestions"]["changes"]


def test_memory_all_that_fits_has_no_suggestions():
    every = _json("memory", "--arch", "llama-3.1-8b", "--ranks", "64", "--cluster", "dgx-h100",
                  "--strategy", "all")  # fmt: skip
    assert "fit_suggestions" not in every


# --- a whole-number refusal suggests spellings of what was typed ------------------------------
def test_batch_refusal_offers_no_spelling_that_was_not_typed():
    """``--global-tokens 4M --seq 4k`` offered "4000 x 2^10 ..., the binary reading of 4000k",
    a spelling no one typed; it now offers the binary readings of 4M and 4k together."""
    line = one_line_error(
        run("batch", "--local", "1", "--ranks", "512", "--global-tokens", "4M", "--seq", "4k")
    )
    assert "4000k" not in line and "4000 x 2^10" not in line, line
    assert (
        "; or --global-tokens=4,194,304 with --seq=4096 (--accumulation=2), the binary readings "
        "of 4M and 4k (4Mi, 4Ki)" in line
    ), line
    r = run("batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4Ki")
    assert r.exit_code == 0 and "accumulation steps A [-]       2" in r.stdout, r.stdout


def test_batch_refusal_reads_the_tokens_as_written_shortest():
    """4,000,000 tokens are 4M: the binary reading offered is 4Mi's, never 4000k's (at 1,000
    tokens per sequence on 512 GPUs 4000 x 2^10 splits and was offered)."""
    from costmodel import batch as bt

    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4_000_000, sequence_length=1000)
    said = bt.split_refusal(err.value)
    assert "4000k" not in said and "4000 x 2^10" not in said, said
    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4_000_000, sequence_length=4096)
    assert "the binary reading of 4M" in bt.split_refusal(err.value)


# --- batch without micro-batch and accumulation: micro-batch 1, as step and train -------------
BATCH = ("batch", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096")


def test_batch_takes_micro_batch_1_as_step_and_train_do():
    r = run(*BATCH)
    assert r.exit_code == 0, r.stderr
    assert "local batch per GPU [samples]  1 (assumed: step's default)" in r.stdout, r.stdout
    assert "accumulation steps A [-]       2 (solved" in r.stdout, r.stdout
    assert r.stderr.startswith("assumed: --local-batch 1 "), r.stderr
    d = _json(*BATCH)
    assert (d["local_batch"], d["accumulation"], d["assumed"]) == (1, 2, ["local_batch"])
    # the split train makes of the same batch on the same 512 GPUs (64 DGX H100 nodes)
    t = _json("train", "--arch", "llama-3.1-8b", "--nodes", "64", "--tokens", "1B",
              "--global-tokens", "4Mi", "--seq", "4096")  # fmt: skip
    assert (t["micro_batch"], t["accumulation"]) == (1, 2), {k: t[k] for k in ("micro_batch",)}


def test_batch_given_its_micro_batch_assumes_nothing():
    d = _json("batch", "--local", "2", "--ranks", "256", "--global-tokens", "4Mi", "--seq", "4096")
    assert "assumed" not in d and d["accumulation"] == 2
    # still refused where the ranks are missing too: two unknowns
    one_line_error(run("batch", "--global-tokens", "4Mi", "--seq", "4096"), "missing: ")


# --- step --ranks N alone: N GPUs of the default cluster, as train and scenario ---------------
@pytest.mark.parametrize("extra", [(), ("--zero", "3")], ids=["ddp", "zero3"])
def test_step_ranks_alone_is_the_default_cluster_as_train_reads_it(extra):
    """``step --arch llama-3.1-8b --ranks 64`` was read as the one-link lesson step and refused
    naming a --bandwidth never given (with --zero 3: "--ranks/--bandwidth prices ddp only");
    ``train --ranks 512`` and ``scenario --ranks 64`` take the default cluster. One road now:
    the answer of ``--cluster dgx-h100 --ranks 64``, the assumption said on stderr."""
    args = ("step", "--arch", "llama-3.1-8b", "--ranks", "64", *extra)
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert "assumed: cluster dgx-h100" in r.stderr
    alone = _json(*args)
    named = _json(*args, "--cluster", "dgx-h100")
    assert alone == named
    sc = _json("scenario", "--arch", "llama-3.1-8b", "--ranks", "64", *extra)
    assert sc["step_time_s"] == alone["step_time_s"]


@pytest.mark.parametrize(
    ("args", "missing", "given"),
    [
        (("--ranks", "64", "--latency", "5us", "--compute-time", "400ms"), "--bandwidth",
         "--latency"),
        (("--bandwidth", "50GB/s", "--compute-time", "400ms"), "--ranks", "--bandwidth"),
    ],
)  # fmt: skip
def test_one_link_refusal_names_the_two_ways_and_only_options_given(args, missing, given):
    line = one_line_error(run("step", "--params", "7B", *args))
    assert line.startswith(f"costmodel: error: {missing}: missing; {given} given: "), line
    assert "needs both --ranks and --bandwidth" in line and "a cluster: --cluster " in line


def test_sharded_refusal_names_the_link_option_given():
    line = one_line_error(
        run("step", "--params", "7B", "--latency", "5us", "--ranks", "64", "--zero", "3")
    )
    assert "the one-link step (--latency given) prices ddp only" in line, line
    assert "--bandwidth" not in line, line


# --- the step's all-reduce sum: a sum of bucket all-reduces, said so --------------------------
STEP7 = ("step", "--params", "7B", "--nodes", "8")


def test_step_all_reduce_sum_says_it_sums_bucket_all_reduces():
    """``step --params 7B --nodes 8`` showed "all-reduce (sum) 146 ms" while ``collective
    all-reduce --size 14GB`` on the same 8 nodes gives 74.1 ms: the step sums hundreds of
    bucket all-reduces, each paying its latency. The line says so, with the one-call time."""
    d = _json(*STEP7)
    ar = d["comm_calls_by_kind"]["all_reduce"]
    assert ar["calls"] > 100 and ar["calls"] == ar["calls_per_micro_batch"]
    assert abs(ar["message_bytes"] - 14e9) < 1.0  # 7B bf16 gradients
    one = _json("collective", "all-reduce", "--size", "14GB", "--cluster", "dgx-h100",
                "--nodes", "8")  # fmt: skip
    t = one["results"][0]["time_s"]
    assert abs(ar["one_call_s"] - t) < 1e-9 * t
    assert ar["one_call_s"] < d["comm_by_kind_s"]["all_reduce"]
    line = next(x for x in run(*STEP7).stdout.splitlines() if x.startswith("all-reduce (sum)"))
    assert f"(sum of {ar['calls']} bucket all-reduces of " in line, line
    assert line.endswith("; one 14 GB all-reduce: 74.1 ms)"), line


def test_one_call_per_micro_batch_adds_no_words():
    """A sum of one call is that call: nothing to add. Two buckets (--bucket 100GB: DDP's first
    bucket, then the rest) are a sum of two, said with the one call it is compared with."""
    from costmodel.strategy.step import CommCalls, comm_calls_note

    one = CommCalls("all_reduce", 1, 1, 1, 14e9, "job")
    assert comm_calls_note(one, 0.074, bucketed=True) == ""
    ar = _json("step", "--params", "7B", "--nodes", "8", "--bucket", "100GB")
    ar = ar["comm_calls_by_kind"]["all_reduce"]
    assert ar["calls"] == 2 and ar["note"].startswith("sum of 2 bucket all-reduces of 7 GB")


def test_step_page_caption_says_the_sum_of_bucket_all_reduces():
    import logging

    from tests.test_app import assert_clean, open_page

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp"})
    assert_clean(at)
    said = " ".join(c.value for c in at.caption)
    assert "Communication (sum), all-reduce " in said, said
    assert " bucket all-reduces of " in said and "; one 14 GB all-reduce: " in said, said


def test_scenario_says_the_same_sum_as_step():
    """scenario's all-reduce line and --json carry the step's words (one function)."""
    step = _json(*STEP7)["comm_calls_by_kind"]["all_reduce"]["note"]
    r = run("scenario", "--params", "7B", "--nodes", "8")
    line = next(x for x in r.stdout.splitlines() if x.startswith("all-reduce "))
    assert line.endswith(f": {step}"), line
    assert _json("scenario", "--params", "7B", "--nodes", "8")["comm_calls_notes"] == {
        "all_reduce": step
    }


def test_the_sum_s_words_leave_the_band_row_in_place():
    """The words beside each sum are no band note: the step band's row is still there."""
    out = run("step", "--arch", "llama-3.1-8b", "--strategy", "fsdp", "--nodes", "4").stdout
    assert "\nstep band " in out and "(sum of " in out, out
