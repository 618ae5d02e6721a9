"""Headless app tests from the fifteenth QA pass: the step page's price date under each cost
(and, in chromium, readable at 1440 and 1024 px), each library note once and in the page's
words, configuration B's own price (against `costmodel scenario --vs ... --price-b`), the
Memory page's notes as sentences, a URL number past 2**53 in a text box named by that box, and
the Collectives cluster view's Ranks box showing the ranks its answer is for. Each test failed
on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

from costmodel import training
from tests._cli import run
from tests.test_app import _text, assert_clean, metrics, open_page


def _said(at) -> list[str]:
    """Every caption, markdown, warning and info text of the page, unescaped."""
    return [
        _text(x.value)
        for group in (at.caption, at.markdown, at.warning, at.info, at.success)
        for x in group
    ]


def _cost(at, label: str = "Cost [USD]"):
    return next(m for m in at.metric if m.label == label)


# --- Step page: the price's date under each cost, date first -----------------------------------
def test_the_price_under_a_cost_starts_with_its_date():
    """ "aws-p5-on-demand, prices as of 2026-11-09" was cut to "aws-p5-on-demand, prices as
    of 2026-…" at 1440 px: the date came last."""
    at = open_page("page_ddp.py", {"ddp_price": "aws-p5-on-demand"})
    assert_clean(at)
    date = training.load_price("aws-p5-on-demand").date
    assert _cost(at).proto.delta == f"{date} prices, aws-p5-on-demand"


# every metric delta and its parts: the text and whether it overflows its box (an ellipsis)
_DELTAS_JS = """
() => [...document.querySelectorAll('[data-testid="stMetricDelta"]')].map(d => ({
  text: d.innerText,
  cut: [d, ...d.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 0.5),
}))
"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 1024])
def test_the_price_date_under_a_cost_is_readable_in_chromium(_shared_chromium, app_url, width):
    """At 1440 px the delta's box was 221 px for 254 px of text, at 1024 px 117 px: Streamlit
    cut it with an ellipsis and the date, last, was never seen."""
    import playwright.sync_api as playwright_api

    date = training.load_price("aws-p5-on-demand").date
    with _shared_chromium.lent() as browser:  # the process's chromium (tests/conftest.py)
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.goto(f"{app_url}/ddp?ddp_price=aws-p5-on-demand")
        delta = page.get_by_test_id("stMetricDelta").filter(has_text="aws-p5-on-demand")
        playwright_api.expect(delta.first).to_be_visible(timeout=120_000)
        page.wait_for_timeout(500)
        deltas = page.evaluate(_DELTAS_JS)
        price = [d for d in deltas if "aws-p5-on-demand" in d["text"]]
        assert price, deltas
        for d in price:
            assert " ".join(d["text"].split()) == f"{date} prices, aws-p5-on-demand", d
            assert not d["cut"], (width, d)
        assert not any(d["cut"] for d in deltas), deltas  # no delta on the page is cut


# --- Step page: each note once, in the page's words --------------------------------------------
def test_ab_view_shows_each_note_once_and_no_cli_flag():
    """The A/B view said "activations: not included (...)" three times (the step's notes, A's
    cost, B's cost) and "compute per micro-batch: ... the --mfu of this compute", the "Compute
    in use" caption again with a CLI flag the page does not have."""
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_nodes": "8"})
    assert_clean(at)
    said = _said(at)
    activations = [t for t in said if t.lower().startswith("activations: not included")]
    assert len(activations) == 1, activations
    assert activations[0].startswith("Activations: not included")  # a sentence
    assert not any("--mfu" in t for t in said), [t for t in said if "--mfu" in t]
    in_use = [t for t in said if t.startswith("Compute in use: ")]
    assert len(in_use) == 1 and "MFU box" in in_use[0], in_use
    assert not any(t.lower().startswith("compute per micro-batch:") for t in said)


def test_with_the_mfu_set_the_compute_note_is_shown_once_as_a_sentence():
    at = open_page("page_ddp.py", {"ddp_own_mfu": "true"})
    assert_clean(at)
    said = _said(at)
    compute = [t for t in said if t.lower().startswith("compute per micro-batch:")]
    assert len(compute) == 1 and compute[0].startswith("Compute per micro-batch: "), compute
    assert not any(t.startswith("Compute in use") for t in said)


# --- Step page: B's own price, as the CLI's --price-b -------------------------------------------
AB = {
    "ddp_pin": "true",
    "ddp_b_nodes": "8",
    "ddp_price": "aws-p5-on-demand",
    "ddp_price_b": "coreweave-h100-on-demand",
}


def test_b_on_a_s_gpu_has_its_own_price_as_the_cli_s_price_b():
    """B on A's GPU had no price box: two H100 clusters of two clouds were priced at A's
    rate. B's box offers "same as A" (the default) and every H100 price, never another GPU's."""
    from costmodel.units import format_usd

    at = open_page("page_ddp.py", {k: v for k, v in AB.items() if k != "ddp_price_b"})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    assert box.value == "same as A"
    assert set(box.options[2:]) == set(training.prices_for_gpu("h100-sxm"))
    same = metrics(at)
    at = open_page("page_ddp.py", AB)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    m = metrics(at)
    assert m["Cost (A) [USD]"] == same["Cost (A) [USD]"]
    r = run(
        "scenario", "--params", "7B", "--nodes", "4", "--tokens", "1T",
        "--price", "aws-p5-on-demand", "--vs", "nodes=8",
        "--price-b", "coreweave-h100-on-demand", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    cost = json.loads(r.stdout)["training_cost"]
    assert m["Cost (A) [USD]"] == format_usd(cost["A"]["cost_usd"])
    assert m["Cost (B) [USD]"] == format_usd(cost["B"]["cost_usd"])
    assert m["Cost (B) [USD]"] != same["Cost (B) [USD]"]  # B's own rate, not A's
    date = training.load_price("coreweave-h100-on-demand").date
    assert _cost(at, "Cost (B) [USD]").proto.delta == f"{date} prices, coreweave-h100-on-demand"


def test_b_s_own_placeholder_is_flagged_under_b():
    at = open_page("page_ddp.py", {**AB, "ddp_price_b": "custom"})
    assert_clean(at)
    warned = [w.value for w in at.warning if "placeholder" in w.value]
    assert len(warned) == 1 and warned[0].startswith("Cost (B) at a $2"), warned


def test_b_on_another_gpu_is_offered_that_gpu_s_prices_only():
    query = {k: v for k, v in AB.items() if k != "ddp_price_b"}
    at = open_page("page_ddp.py", {**query, "ddp_b_cluster": "dgx-a100"})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    assert "same as A" not in box.options
    gpu = box.label.removeprefix("Price (B, ").removesuffix(")")
    assert gpu != "h100-sxm" and training.prices_for_gpu(gpu)
    # first the preset B starts on (training.default_price, as A's provider and terms: the
    # CLI's default for B), then custom and the rest
    start, _ = training.default_price(gpu, like="aws-p5-on-demand")
    assert box.value == start.name
    assert list(box.options) == [
        start.name,
        "custom",
        *(p for p in training.prices_for_gpu(gpu) if p != start.name),
    ]


# --- Memory page: notes as sentences, no jargon -------------------------------------------------
def test_memory_nothing_fits_warning_is_a_sentence_and_the_state_is_said_plainly():
    """The warning began "even one parameter does not fit" (a library note reused word for
    word), and the sizing caption said "the lesson's state"."""
    at = open_page("page_memory.py", {"arch": "llama-3.1-70b", "act_seq": "32768"})
    assert_clean(at)
    warned = [w.value for w in at.warning if "one parameter does not fit" in w.value]
    assert warned and all(w.startswith("Even one parameter does not fit") for w in warned)
    bare = open_page("page_memory.py")
    sized = next(c.value for c in bare.caption if c.value.startswith("Sized as the step"))
    assert "lesson" not in sized
    assert "model state (weights, gradients, optimizer: mixed-adam's 16 B per parameter" in sized


# --- URL numbers in text boxes: the box's own range --------------------------------------------
@pytest.mark.parametrize(
    ("page", "query", "said"),
    [
        (
            "page_memory.py",
            {"params": "1e20"},
            "Parameters P: must be a parameter count in 1..1e15",
        ),
        ("page_ddp.py", {"ddp_params": "1e20"}, "Model parameters P: "),
        ("page_ddp.py", {"ddp_tokens": "1e20"}, "Tokens to train: must be a token count in"),
    ],
)
def test_a_url_number_past_2_53_in_a_text_box_is_named_by_the_box(page, query, said):
    """?params=1e20 was refused before any box with "not a finite number below 2**53", which
    is no box's range (the box takes up to 1e15 parameters)."""
    at = open_page(page, query)
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(said in e for e in errors), errors
    assert not any("2**53" in e for e in errors), errors
    if "params" in said or "Parameters" in said:
        assert any("in 1..1e15" in e for e in errors), errors


def test_a_number_box_past_2_53_names_the_box_and_its_range():
    at = open_page("page_memory.py", {"dp_ranks": "1e20"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any(
        e.startswith("URL parameter dp_ranks: 1e20 is not a finite number below 2**53")
        and "Data-parallel ranks N" in e
        for e in errors
    ), errors
    assert at.number_input(key="dp_ranks").value == 8


# --- Collectives, cluster view: the Ranks box shows the answer's ranks --------------------------
def test_cluster_view_ranks_box_shows_the_ranks_of_the_answer():
    """The greyed "Ranks N [GPUs]" box read 8 (the one-link view's default) beside an answer
    for 64 GPUs (8 DGX H100 nodes)."""
    at = open_page("page_collectives.py", {"nccl_nodes": "8"})
    assert_clean(at)
    box = next(n for n in at.number_input if n.label == "Ranks N [GPUs]")
    assert box.disabled and box.value == 64
    assert any("64 GPUs" in _text(h.value) for h in at.subheader)  # the headline's count
    at = open_page("page_collectives.py", {"nccl_nodes": "2", "nccl_gpus": "4"})
    assert next(n for n in at.number_input if n.label == "Ranks N [GPUs]").value == 8
    # the one-link view's ranks are kept across a visit to the cluster view
    at = open_page("page_collectives.py", {"view": "link", "ranks": "16"})
    at.radio(key="view").set_value("cluster").run()
    assert next(n for n in at.number_input if n.label == "Ranks N [GPUs]").value == 8  # 1 x 8
    at.radio(key="view").set_value("link").run()
    assert_clean(at)
    assert at.number_input(key="ranks").value == 16 and not at.number_input(key="ranks").disabled
