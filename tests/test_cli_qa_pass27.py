"""The twenty-seventh CLI QA pass (a planner pricing training runs):

- ``scenario --compute-time T --vs cluster=<another GPU>`` priced B at A's measured T on B's
  GPU's price (a B200 at an H100's 430 ms, $928,137, 2.07x A) with ``warnings: []``: now refused
  in one line naming ``--vs compute_time=...`` and ``compute_time=none``; ``sweep --set
  compute_time=...`` over presets of two GPUs likewise;
- ``--price-b`` alone priced B beside A's "n/a (no price)" with no warning: now one;
- ``archs``' price listing said "source" over the description and ``train``'s ``price:`` line
  named no source: both show the source's sites;
- ``train --price``'s fit suggestions priced a larger card in GPU-time and dropped its cluster
  from ``updates``: now in dollars at its GPU's preset, its cluster named.
"""

from __future__ import annotations

import json

import pytest

from tests._cli import one_line_error, run

A = ("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--strategy", "fsdp",
     "--compute-time", "430ms", "--tokens", "2T", "--price", "aws-p5-on-demand")  # fmt: skip


def test_a_change_of_gpu_beside_a_measured_compute_is_refused():
    line = one_line_error(
        run(*A, "--vs", "cluster=dgx-b200"), "--vs cluster", "b200", "h100-sxm", "430 ms"
    )
    assert "--vs compute_time=" in line and "compute_time=none" in line
    assert "`" not in line  # no library mark left
    one_line_error(run(*A, "--vs", "cluster=dgx-b200,nodes=4"), "--vs cluster", "b200")


def test_b_on_another_gpu_with_its_own_or_a_predicted_compute_is_answered():
    res = run(*A, "--vs", "cluster=dgx-b200,compute_time=none", "--json")
    assert res.exit_code == 0, res.stderr
    b = json.loads(res.stdout)["b"]
    assert b["compute_source"] != "measured"
    assert b["compute_s"] < 0.43 * 0.8
    own = run(*A, "--vs", "cluster=dgx-b200,compute_time=250ms", "--json")
    assert own.exit_code == 0, own.stderr
    assert json.loads(own.stdout)["b"]["compute_s"] == pytest.approx(0.25)
    # the same GPU keeps A's measured compute: nothing to refuse
    assert run(*A, "--vs", "nodes=4").exit_code == 0
    assert run(*A, "--vs", "cluster=dgx-h100,nodes=4").exit_code == 0


ONE_SIDE = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "4", "--strategy", "fsdp",
            "--tokens", "1T")  # fmt: skip


def test_only_b_priced_warns_in_text_and_json():
    """``--price-b`` alone priced B beside A's "n/a (no price)" with no warning and
    ``warnings: []``: now a warning says only B is priced and what A's dollars need."""
    res = run(*ONE_SIDE, "--vs", "nodes=8", "--price-b", "coreweave-h100-on-demand")
    assert res.exit_code == 0, res.stderr
    assert "costmodel: warning: only B is priced" in res.stderr
    data = json.loads(
        run(*ONE_SIDE, "--vs", "nodes=8", "--price-b", "coreweave-h100-on-demand", "--json").stdout
    )
    (said,) = [w for w in data["warnings"] if w.startswith("only B is priced")]
    assert "--price" in said and "h100-sxm" in said
    # both priced (B takes A's price on A's GPU): nothing to say
    both = run(*ONE_SIDE, "--vs", "nodes=8", "--price", "coreweave-h100-on-demand", "--json")
    assert not [w for w in json.loads(both.stdout)["warnings"] if "is priced" in w]


def test_only_a_priced_warns_too():
    res = run(*ONE_SIDE, "--vs", "cluster=dgx1-v100", "--price", "aws-p5-on-demand", "--json")
    assert res.exit_code == 0, res.stderr
    (said,) = [w for w in json.loads(res.stdout)["warnings"] if w.startswith("only A is priced")]
    assert "--usd-per-gpu-hour-b" in said and "v100-sxm2" in said


def test_the_price_listing_and_the_price_line_show_the_source():
    """``archs``' header said "source" over the description; ``train``'s ``price:`` line named
    no source: both now show the source's sites (the citation is ``archs --json``'s)."""
    listing = run("archs")
    assert listing.exit_code == 0, listing.stderr
    (row,) = [x for x in listing.stdout.splitlines() if x.startswith("aws-p5-on-demand ")]
    assert "github.com/datareceipts" in row and "(as of 2026-11-09)" in row
    (row,) = [x for x in listing.stdout.splitlines() if x.startswith("lambda-b200-on-demand ")]
    assert "lambda.ai, github.com/api-evangelist" in row
    train = run("train", "--arch", "llama-2-7b", "--nodes", "8", "--strategy", "fsdp",
                "--tokens", "2T", "--price", "aws-p5-on-demand")  # fmt: skip
    assert train.exit_code == 0, train.stderr
    (line,) = [x for x in train.stdout.splitlines() if x.startswith("price: ")]
    assert line.endswith("(source: github.com/datareceipts)")
    data = json.loads(run("train", "--arch", "llama-2-7b", "--nodes", "8", "--strategy", "fsdp",
                          "--tokens", "2T", "--price", "aws-p5-on-demand", "--json").stdout)  # fmt: skip
    assert data["price_source"].startswith("https://github.com/datareceipts/")


def test_train_prices_a_larger_card_at_its_own_gpu_and_names_its_cluster():
    args = ("train", "--arch", "llama-2-7b", "--nodes", "8", "--tokens", "2T")
    data = json.loads(run(*args, "--price", "aws-p5-on-demand", "--json").stdout)
    (card,) = [c for c in data["fit_suggestions"]["changes"]
               if c["change"] == "a larger card: dgx-b200 (b200)"]  # fmt: skip
    assert card["updates"]["cluster"] == "dgx-b200"
    assert (card["cost_unit"], card["cost_price"]) == ("usd", "aws-p6-b200-on-demand")
    assert 0 < card["cost_change"] < 0.1  # +3.3% in dollars, not the -50% of GPU-time
    text = run(*args, "--price", "aws-p5-on-demand").stdout
    (line,) = [x for x in text.splitlines() if x.startswith("  a larger card: dgx-b200 (b200):")]
    assert "cost per token +3% at aws-p6-b200-on-demand" in line
    bare = json.loads(run(*args, "--json").stdout)
    (card,) = [c for c in bare["fit_suggestions"]["changes"]
               if c["change"] == "a larger card: dgx-b200 (b200)"]  # fmt: skip
    assert (card["cost_unit"], card["cost_price"]) == ("gpu_hours", None)


def test_the_step_sweep_refuses_one_measured_compute_across_gpus():
    line = one_line_error(
        run("sweep", "--kind", "step", "--set", "preset=dgx-h100,dgx-b200", "--set",
            "arch=llama-2-7b", "--set", "nodes=8", "--set", "compute_time=430ms", "--json"),
        "--set compute_time", "b200, h100-sxm",
    )  # fmt: skip
    assert "`" not in line
