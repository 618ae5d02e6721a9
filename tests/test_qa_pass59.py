"""What makes it fit offers DDP's ``gradient_as_bucket_view``.

With the view the gradients are views into DDP's all-reduce buckets, so ddp holds no bucket
copy of them (``P g`` bytes per GPU less, the step time the same: tests/test_qa_pass57.py). The
advisor's fit suggestions (``cm.fit_suggestions``, ``Scenario.fit_suggestions``, the commands'
DOES NOT FIT list, the step page's "What makes it fit") did not offer it, so a ddp job over its
card by less than its bucket copy was told to shard, recompute or buy a larger card, never to
turn on the one switch that frees the copy. Each test here failed before.
"""

from __future__ import annotations

import json
import logging

import pytest

import costmodel as cm
from costmodel import memory
from costmodel.strategy.advisor import BUCKET_VIEW_CHANGE, FitAdvice, FitChange
from costmodel.units import format_bytes_pair
from tests._cli import run
from tests.test_app import assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

PRESET = "dgx-h100"
# a bare 5B count under mixed-precision Adam on 8 ranks: 16 B/param of state plus the bf16
# bucket copy, 90 GB, over the H100's 85.5 GB; without the copy 80 GB fits
P = 5e9
COPY = P * memory.RECIPES["mixed-adam"].gradient_bytes


def _view(fa: FitAdvice) -> FitChange:
    (ch,) = [c for c in fa.changes if c.kind == "bucket_view" and "recompute" not in c.change]
    return ch


def test_the_view_is_offered_with_its_memory_and_no_step_cost() -> None:
    fa = cm.fit_suggestions(P, cluster=PRESET, nodes=1)
    assert not fa.fits
    ch = _view(fa)
    assert ch.change == BUCKET_VIEW_CHANGE
    assert ch.updates == {"gradient_as_bucket_view": True}
    assert ch.fits
    assert fa.base.memory_bytes - ch.step.memory_bytes == pytest.approx(COPY, rel=1e-12)
    assert ch.step.layout.name == "ddp (bucket view)"
    d = ch.as_dict(fa.base)
    assert d["step_time_change"] == 0.0 and d["cost_change"] == 0.0
    assert d["memory_change_bytes"] == pytest.approx(-COPY, rel=1e-12)
    # ranked by the one rule of every change: GPU-time per token, then memory
    ok = [c for c in fa.changes if c.fits and c.kind != "larger_card"]
    assert ok == sorted(ok, key=lambda c: (c.gpu_seconds_per_token, c.step.memory_bytes))
    # and said in the summary, with its memory per GPU
    shown = format_bytes_pair(ch.step.memory_bytes, ch.step.gpu_memory_bytes)[0]
    assert f"  {BUCKET_VIEW_CHANGE}: {shown} per GPU" in fa.summary(top=10)


def test_the_view_is_the_cheapest_change_when_every_other_costs_more() -> None:
    """Its cost is 0 (the same step): among the changes that fit, only one predicted faster
    than the base ranks above it."""
    fa = cm.fit_suggestions(P, cluster=PRESET, nodes=1)
    ok = [c for c in fa.changes if c.fits and c.kind != "larger_card"]
    i = ok.index(_view(fa))
    base_cost = fa.base.ranks * fa.base.step_time_s / fa.base.tokens_per_step
    assert all(c.gpu_seconds_per_token < base_cost for c in ok[:i])
    assert all(c.gpu_seconds_per_token >= base_cost for c in ok[i + 1 :])


def test_with_recompute_it_fits_where_recompute_alone_does_not() -> None:
    """Llama 3.1 8B on one H200 node: recompute full alone leaves it over the card; with the
    view too it fits, and that combination is offered."""
    fa = cm.fit_suggestions(arch="llama-3.1-8b", cluster="hgx-h200", nodes=1)
    by = {c.change: c for c in fa.changes}
    alone, both = by["recompute full"], by[f"{BUCKET_VIEW_CHANGE} and recompute full"]
    assert not alone.fits and both.fits
    assert both.updates == {"gradient_as_bucket_view": True, "recompute": "full"}
    assert alone.step.memory_bytes - both.step.memory_bytes == pytest.approx(
        float(cm.architecture.load_arch("llama-3.1-8b").params) * 2, rel=1e-12
    )
    assert both.step.step_time_s == alone.step.step_time_s


@pytest.mark.parametrize(
    "kw",
    [
        {"gradient_as_bucket_view": True},  # already on
        {"strategy": "zero1"},  # no DDP buckets
        {"strategy": "fsdp"},
        {"gpus_per_node": 1},  # one rank: plain training holds no copy either way
    ],
    ids=["on", "zero1", "fsdp", "one-rank"],
)
def test_not_offered_where_it_changes_nothing(kw: dict) -> None:
    # over the card without the copy too (5.5B: 88 GB), so the list is of what makes it fit
    fa = cm.fit_suggestions(P * (10 if "strategy" in kw else 1.1), cluster=PRESET, nodes=1, **kw)
    assert not fa.fits
    assert not [c for c in fa.changes if c.kind == "bucket_view" or "bucket" in c.change]


def test_off_explicitly_is_offered_as_left_out() -> None:
    a = cm.fit_suggestions(P, cluster=PRESET, nodes=1, gradient_as_bucket_view=False)
    b = cm.fit_suggestions(P, cluster=PRESET, nodes=1)
    assert [c.change for c in a.changes] == [c.change for c in b.changes]


def _listed(fa: dict) -> list[tuple[str, float, float]]:
    return [(c["change"], c["memory_bytes"], c["step_time_s"]) for c in fa["changes"]]


def test_one_list_on_every_surface() -> None:
    """The API, Scenario, the four commands' --json and the app's cached call give one list."""
    want = _listed(cm.fit_suggestions(P, cluster=PRESET, nodes=1).as_dict())
    assert BUCKET_VIEW_CHANGE in [w for w, _, _ in want]
    got = {
        "Scenario": _listed(
            cm.Scenario(params=P, cluster=PRESET, nodes=1).fit_suggestions().as_dict()
        )
    }
    on = ["--params", "5B", "--cluster", PRESET]
    for name, args in (
        ("step", ["step", *on, "--nodes", "1"]),
        ("scenario", ["scenario", *on, "--nodes", "1", "--fit"]),
        ("train", ["train", *on, "--nodes", "1", "--steps", "10"]),
        ("memory", ["memory", *on, "--ranks", "8"]),
    ):
        r = run(*args, "--json")
        assert r.exit_code == 0, r.stdout + r.stderr
        got[name] = _listed(json.loads(r.stdout)["fit_suggestions"])
    from costmodel.web import data

    got["app"] = _listed(data.fit_suggestions(params=P, cluster=PRESET, nodes=1).as_dict())
    for surface, listed in got.items():
        assert [w for w, _, _ in listed] == [w for w, _, _ in want], surface
        for (w, m, t), (_, m0, t0) in zip(listed, want, strict=True):
            assert m == pytest.approx(m0, rel=1e-12), (surface, w)
            assert t == pytest.approx(t0, rel=1e-9), (surface, w)


def test_the_commands_say_it_in_their_text() -> None:
    r = run("step", "--params", "5B", "--cluster", PRESET, "--nodes", "1")
    assert r.exit_code == 0, r.stdout + r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith(f"  {BUCKET_VIEW_CHANGE}:")]
    assert len(line) == 1 and "80 GB per GPU" in line[0] and "GPU-time per token 0%" in line[0]


def test_the_step_page_lists_it() -> None:
    at = open_page("page_ddp.py", {"ddp_params": "5B", "ddp_cluster": PRESET, "ddp_nodes": "1"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    said = [m.value for m in at.markdown if "Changes that make it fit" in m.value]
    assert len(said) == 1
    assert f"- **{BUCKET_VIEW_CHANGE}**: 80 GB per GPU" in said[0]


def test_the_memory_page_names_it_at_zero_0() -> None:
    """The Memory page's own "What makes it fit" at ZeRO-0 names the view, in the CLI's words,
    with the memory the page's own switch gives; not once the switch is on."""
    query = {"params": "4.9B", "dp_ranks": "8"}
    on = open_page("page_memory.py", {**query, "mem_bucket_view": "true"})
    want = {m.label: m.value for m in on.metric}["Memory per GPU, ZeRO-0"]
    at = open_page("page_memory.py", query)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    said = [w.value for w in at.warning if "Does not fit" in w.value]
    assert len(said) == 1
    assert f"What makes it fit: {BUCKET_VIEW_CHANGE}: {want} per GPU" in said[0]
    assert not [w.value for w in on.warning if BUCKET_VIEW_CHANGE in w.value]
