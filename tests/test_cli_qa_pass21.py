"""A QA pass over the new-user walk's leftovers: ``memory --strategy all`` says what makes it
fit where nothing does, as one strategy's answer says it; the step's all-reduce sum says it is
a sum of bucket all-reduces; ``step --ranks N`` alone reads the default cluster, as ``train``
and ``scenario`` do; ``batch`` takes micro-batch 1 where micro-batch and accumulation are both
missing, as ``step`` and ``train`` do; a whole-number refusal suggests only spellings of what
was typed."""

from __future__ import annotations

import json

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
    import pytest

    from costmodel import batch as bt

    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4_000_000, sequence_length=1000)
    said = bt.split_refusal(err.value)
    assert "4000k" not in said and "4000 x 2^10" not in said, said
    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4_000_000, sequence_length=4096)
    assert "the binary reading of 4M" in bt.split_refusal(err.value)
