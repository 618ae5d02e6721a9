"""The sixty-seventh QA pass (a planner pricing training runs), through the API:

- ``Scenario.with_changes`` moved A's measured compute time to a B on another GPU: B priced at
  A's GPU's speed and B's GPU's price (a B200 at an H100's 430 ms, 2.07x A's dollars), the
  caveat only in the answer's words; now refused unless the changes give B's own compute time
  or none (B's predicted compute), by one rule (``measured_on_another_gpu``); the step sweep
  priced a grid of two GPUs at one measured compute time, now refused too;
- a price preset's cited source (a third-party dump for aws-p5-on-demand) was in ``archs
  --json`` alone: the cost's note ends with its sites (``Price.source_sites``) and the cost
  carries the citation (``TrainingCost.price_source``);
- the fit advisor's larger card had its GPU-time as ``cost_change`` even with a price (-50% for
  a B200 that costs +3% in dollars) and ``updates`` without its cluster: now its dollars at its
  GPU's preset, ``cost_unit`` and ``cost_price`` say which, and ``updates`` reproduce it.
"""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel.scenario import measured_on_another_gpu

A = dict(arch="llama-2-7b", nodes=8, strategy="fsdp", compute_time_s="430ms")


def test_a_change_of_gpu_beside_a_measured_compute_is_refused():
    a = cm.Scenario(**A)
    with pytest.raises(ValueError, match=r"^cluster: B runs on b200, not A's h100-sxm") as e:
        a.with_changes("cluster=dgx-b200")
    said = str(e.value)
    assert "430 ms" in said and "`compute_time_s`" in said and "--" not in said
    with pytest.raises(ValueError, match="B runs on b200"):
        a.with_changes({"cluster": "dgx-b200"})


def test_b_with_its_own_or_a_predicted_compute_on_another_gpu_is_answered():
    a = cm.Scenario(**A)
    predicted = a.with_changes("cluster=dgx-b200,compute_time=none")
    assert predicted.compute_time_s is None
    own = a.with_changes({"cluster": "dgx-b200", "compute_time_s": 0.25})
    assert own.compute_time_s == 0.25
    # the same GPU (another node count, another H100 cluster) keeps A's measured time
    same = a.with_changes("nodes=4")
    assert same.compute_time_s == pytest.approx(0.43)
    assert measured_on_another_gpu(a, same) is None
    rb = predicted.evaluate(scaling=False, flips=False)
    assert rb.compute_source != "measured"
    assert rb.compute_s < 0.43 * 0.8  # a B200's own compute, not the H100's measured one


def test_the_rule_names_both_gpus_only_where_b_shares_as_measured_time():
    a = cm.Scenario(**A)
    b = cm.Scenario(**{**A, "cluster": "dgx-b200"})  # built directly: the rule still sees it
    assert measured_on_another_gpu(a, b) == ("h100-sxm", "b200")
    assert measured_on_another_gpu(a, b.model_copy(update={"compute_time_s": 0.2})) is None
    plain = cm.Scenario(arch="llama-2-7b", nodes=8, strategy="fsdp")
    assert measured_on_another_gpu(plain, plain.with_changes("cluster=dgx-b200")) is None


# --- a price preset's cited source, said where its dollars are ---------------------------------
def test_a_preset_price_says_its_sources_sites_and_keeps_the_full_citation():
    """A preset's source (a third-party dump for aws-p5-on-demand) was in ``archs --json``
    alone: the cost's note now ends with its sites and the cost carries the citation."""
    from costmodel.training import load_price, training_cost

    p = load_price("aws-p5-on-demand")
    assert p.source_sites == "github.com/datareceipts"
    assert (
        load_price("lambda-b200-on-demand").source_sites == "lambda.ai, github.com/api-evangelist"
    )
    assert load_price("gcp-a3-ultra-on-demand").source_sites == "huggingface.co/datasets/tanod"
    c = training_cost(
        1e12, tokens_per_step=4e6, step_time_s=1.0, ranks=64, price="aws-p5-on-demand"
    )
    assert c.price_note.endswith("price as of 2026-11-09 (source: github.com/datareceipts)")
    assert c.price_source == p.source and c.as_dict()["price_source"] == p.source
    typed = training_cost(
        1e12, tokens_per_step=4e6, step_time_s=1.0, ranks=64, usd_per_gpu_hour=2.0
    )
    assert typed.price_source is None and "source" not in typed.price_note


# --- the fit advisor's larger card: its cost in dollars at its own price, its cluster named ----
def _card(changes, name):
    (c,) = [c for c in changes if c["change"] == f"a larger card: {name} (b200)"]
    return c


def test_a_larger_cards_cost_is_in_dollars_at_its_gpus_preset_with_a_price():
    """A larger card's ``cost_change`` was its GPU-time (-50% for a B200) labelled as cost,
    even with a price: with one it is now the dollars at the B200's preset (the one
    ``scenario --vs`` picks), +3% at aws-p6-b200-on-demand, and says so."""
    from costmodel.training import default_price, load_price

    s = cm.Scenario(arch="llama-2-7b", nodes=8)
    fa = s.fit_suggestions()
    plain = _card(fa.as_dict()["changes"], "dgx-b200")
    assert plain["cost_unit"] == "gpu_hours" and plain["cost_price"] is None
    priced = _card(fa.as_dict("aws-p5-on-demand")["changes"], "dgx-b200")
    assert priced["cost_unit"] == "usd"
    want = default_price("b200", like="aws-p5-on-demand")[0]
    assert priced["cost_price"] == want.name == "aws-p6-b200-on-demand"
    ratio = want.usd_per_gpu_hour / load_price("aws-p5-on-demand").usd_per_gpu_hour
    assert priced["cost_change"] == pytest.approx((1 + plain["cost_change"]) * ratio - 1)
    assert priced["cost_change"] > 0 > plain["cost_change"]
    # the same hardware at the price given: its dollars change as its GPU-time
    fsdp = [c for c in fa.as_dict("aws-p5-on-demand")["changes"] if c["change"] == "fsdp"][0]
    assert fsdp["cost_unit"] == "usd" and fsdp["cost_price"] == "aws-p5-on-demand"
    text = fa.summary(price="aws-p5-on-demand")
    assert "cost per token" in text and "at aws-p6-b200-on-demand" in text
    assert "GPU-time per token" in fa.summary()


def test_a_larger_cards_updates_name_its_cluster_and_reproduce_it():
    s = cm.Scenario(arch="llama-2-7b", nodes=8)
    fa = s.fit_suggestions()
    (ch,) = [c for c in fa.changes if c.change == "a larger card: dgx-b200 (b200)"]
    d = ch.as_dict(fa.base)
    assert d["updates"] == {"cluster": "dgx-b200", "nodes": 8, "gpus_per_node": 8}
    again = s.with_changes(d["updates"]).evaluate(scaling=False, flips=False)
    assert again.step_time_s == pytest.approx(ch.step.step_time_s, rel=1e-9)
    assert again.memory_total_bytes == pytest.approx(ch.step.memory_bytes, rel=1e-9)


def test_the_step_sweep_refuses_one_measured_compute_across_gpus():
    """The sweep priced a grid of dgx-h100 and dgx-b200 at one measured compute time: the
    B200 rows at the H100's speed. Refused, as ``with_changes`` refuses it; presets of one GPU
    keep it."""
    axes = dict(kind="step", arch="llama-2-7b", strategy="fsdp", nodes=8, compute_time=0.43)
    with pytest.raises(ValueError, match=r"^compute_time: a measured compute time is of one GPU"):
        cm.sweep(preset=["dgx-h100", "dgx-b200"], **axes)
    df = cm.sweep(preset=["dgx-h100", "aws-p5"], **axes)  # both H100 SXM
    assert len(df) == 2 and (df["compute_time_s"] == 0.43).all()
