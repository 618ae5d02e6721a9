"""Headless app tests from the eleventh QA pass (streamlit.testing AppTest), and the exactness
checks of the speed-ups that pass made to the training step page. Each one failed on the defect
it names before its fix, or pins a speed-up to the numbers of the code it replaced."""

from __future__ import annotations

import random

import numpy as np
import pytest

from costmodel.units import format_duration
from tests.test_app import assert_clean, metrics, open_page

MiB = 2**20


# --- the deepseek-v3 step page: fast, and the numbers of the API ----------------------------
def _greedy_buckets(sizes, cap, first, small_bucket_last):
    """PyTorch's bucket rule, parameter by parameter (the loop bucket_assignment ran before it
    read the buckets off one cumulative sum)."""
    n = len(sizes)
    order = range(n) if small_bucket_last else range(n - 1, -1, -1)
    buckets, current, size, limit = [], [], 0.0, first
    for i in order:
        current.append(i)
        size += sizes[i]
        if size >= limit:
            buckets.append(current)
            current, size, limit = [], 0.0, cap
    if current:
        buckets.append(current)
    return [b[::-1] for b in reversed(buckets)] if small_bucket_last else buckets


def test_bucket_assignment_is_the_greedy_pass_on_any_sizes():
    """Whole-byte sizes take the cumulative-sum road, fractional ones the loop: both give the
    greedy pass's buckets, whatever the caps (fractional, below or above every size)."""
    from costmodel import ddp

    rng = np.random.default_rng(11)
    for trial in range(1500):
        n = int(rng.integers(1, 80))
        if trial % 3 == 0:
            sizes = rng.integers(1, 50, n).astype(float)
        elif trial % 3 == 1:
            sizes = rng.random(n) * 50 + 1e-3
        else:
            sizes = rng.integers(1, 4, n) * 10.0  # exact ties with the caps below
        cap = float(rng.choice([rng.integers(1, 200), rng.random() * 200 + 0.01, 30.0, 1e300]))
        first = float(rng.choice([rng.integers(1, 100), rng.random() * 100 + 0.01, 10.0]))
        last = bool(rng.integers(0, 2))
        got = ddp.bucket_assignment(sizes, cap, first, last)
        assert got == _greedy_buckets(sizes.tolist(), cap, first, last), (sizes, cap, first, last)
        totals = ddp.bucket_sizes(sizes, cap, first, last)
        assert np.allclose(totals, [sum(sizes[b]) for b in got], rtol=1e-12, atol=0)


def test_deepseek_v3_buckets_are_the_greedy_pass():
    """The model that made the page slow: 45,395 tensors, the default and the advisor's caps."""
    from costmodel import architecture, ddp

    sizes = [2.0 * x for x in architecture.load_arch("deepseek-v3").tensor_sizes]
    for cap in (MiB, 25 * MiB, 197 * MiB):
        assert ddp.bucket_assignment(sizes, cap) == _greedy_buckets(sizes, cap, MiB, False)


def _loop_schedule(cols, work):
    """The list schedule task by task (engine._list_schedule before its numpy runs)."""
    n = len(work)
    starts, ends, last = [0.0] * n, [0.0] * n, [0.0] * cols.n_streams
    for i, (st, after, w) in enumerate(zip(cols.stream, cols.after, work, strict=True)):
        s = last[st]
        for d in after:
            s = max(s, ends[d])
        starts[i] = s
        ends[i] = last[st] = s + w
    return np.array(starts), np.array(ends)


def test_the_list_schedule_of_a_ddp_micro_batch_is_the_loop_s_to_the_last_bit():
    """Forward and backward segments, then one all-reduce per bucket (and an optimizer task):
    the numpy road's starts and ends equal the loop's float for float, compute- or comms-bound,
    with zero-length tasks and exact ties."""
    from costmodel.strategy import engine
    from costmodel.strategy.engine import COMPUTE, Task

    rng = random.Random(11)
    for _ in range(400):
        k = rng.randint(1, 700)
        ints = rng.random() < 0.3
        scale_c, scale_b = rng.choice([1e-3, 1.0, 1e3]), rng.choice([1e-3, 1.0, 1e3])

        def w(scale, ints=ints):
            if ints:
                return float(rng.randint(0, 3))
            return rng.random() * scale if rng.random() > 0.05 else 0.0

        tasks = [Task("forward", COMPUTE, w(scale_c))]
        tasks += [Task("backward", COMPUTE, w(scale_c)) for _ in range(k)]
        tasks += [Task("all_reduce", "grads", w(scale_b), after=(1 + j,)) for j in range(k)]
        if rng.random() < 0.5:
            tasks.append(Task("optimizer", COMPUTE, rng.random(), after=(len(tasks) - 1,)))
        tasks = tuple(tasks)
        cols = engine.columns(tasks)
        got = engine._list_schedule(tasks, cols=cols)
        want = _loop_schedule(cols, cols.work)
        for g, x in zip(got, want, strict=True):
            assert np.array_equal(g, x) and np.array_equal(np.signbit(g), np.signbit(x))


def test_a_chain_with_near_ties_is_the_loop_s_or_left_to_the_loop(monkeypatch):
    """Dependencies ready exactly at, or one ulp either side of, the stream's previous end:
    where the numpy road's guess of the blocks could round the other way, it must give the
    loop's numbers or decline (None, and the loop runs); both happen here."""
    import math

    from costmodel.strategy import engine
    from costmodel.strategy.engine import COMPUTE, Task

    rng = random.Random(3)
    declined = kept = 0
    for _ in range(1500):
        m = rng.randint(2, 300)
        work = [rng.random() * rng.choice([1e-3, 0.1, 1.0]) for _ in range(m)]
        ready, starts, ends, e = [], [], [], 0.0
        for j in range(m):
            r = rng.choice(
                [e, math.nextafter(e, math.inf), math.nextafter(e, -math.inf), e + rng.random()]
            )
            ready.append(max(r, ready[-1] if ready else 0.0))
            starts.append(max(e, ready[-1]))
            e = starts[-1] + work[j]
            ends.append(e)
        got = engine._chain_schedule(np.array(ready), np.array(work), 0.0)
        if got is None:
            declined += 1
            continue
        kept += 1
        assert np.array_equal(got[0], starts) and np.array_equal(got[1], ends)
    assert declined and kept, (declined, kept)
    # declined: _list_schedule runs the loop over the whole list
    monkeypatch.setattr(engine, "_chain_schedule", lambda *a: None)
    tasks = [Task("forward", COMPUTE, 0.5)] + [Task("backward", COMPUTE, 0.1)] * 300
    tasks += [Task("all_reduce", "grads", 0.2, after=(1 + j,)) for j in range(300)]
    cols = engine.columns(tuple(tasks))
    for g, x in zip(
        engine._list_schedule(tuple(tasks), cols=cols),
        _loop_schedule(cols, cols.work),
        strict=True,
    ):
        assert np.array_equal(g, x)


def test_the_deepseek_v3_step_page_shows_the_api_s_numbers():
    """The step page with the deepseek-v3 architecture took 25-30 s to draw (the bucket_cap
    advisor re-ran the whole engine step per cap, and every step went parameter by parameter
    over 45,395 tensors). Its numbers are still the API's: the step of Scenario.evaluate and
    the advice of Scenario.bucket_advice, which in turn agrees with the step evaluated at each
    cap on its own."""
    import costmodel as cm

    at = open_page("page_ddp.py", {"ddp_arch": "deepseek-v3"})
    assert_clean(at)
    shown = metrics(at)
    s = cm.Scenario(arch="deepseek-v3", cluster="dgx-h100", nodes=4)
    r = s.evaluate(scaling=False, flips=False)
    assert shown["Step time"] == format_duration(r.step_time_s)
    assert shown["Exposed communication"] == format_duration(r.exposed_comm_s)
    adv = s.bucket_advice()
    best = adv.best_index
    assert shown["Best bucket_cap"] == f"{adv.best_cap_bytes / MiB:g} MiB"
    assert shown["Exposed at the best cap"] == format_duration(adv.exposed_comm_s[best])
    assert shown["Exposed at 25 MiB (current)"] == format_duration(adv.exposed_comm_s[24])
    assert shown["Buckets at the best cap"] == f"{adv.buckets[best]:,}"
    # the sweep (one compute for every cap) against the step evaluated at each cap alone
    for i in sorted({0, 24, 99, best, len(adv.caps_bytes) - 1}):
        alone = s.model_copy(update={"bucket_cap_bytes": int(adv.caps_bytes[i])})
        ri = alone.evaluate(scaling=False, flips=False, timeline=False)
        assert adv.exposed_comm_s[i] == pytest.approx(ri.exposed_comm_s, rel=1e-9)
        assert adv.step_time_s[i] == pytest.approx(ri.step_time_s, rel=1e-9)


def _figure(at, key: str) -> dict:
    """The plotly figure (JSON) the page sent for the chart ``key``."""
    import json

    for chart in at.get("plotly_chart"):
        if key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart {key}")


def _array(value) -> np.ndarray:
    """A figure's array: a list, or plotly's typed array ``{"dtype", "bdata"}`` (base64)."""
    import base64

    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).astype(float)
    return np.asarray(value, dtype=float)


def _bars_by_kind(fig: dict) -> dict[str, tuple[int, float, float]]:
    """(bars, first start, last end) of each bar trace of a timeline figure [s]."""
    out = {}
    for trace in fig["data"]:
        if trace.get("type") != "bar":
            continue
        base, x = _array(trace["base"]), _array(trace["x"])
        out[trace["name"]] = (len(base), float(base.min()), float((base + x).max()))
    return out


def test_the_deepseek_v3_timeline_draws_a_few_bars_over_the_api_s_span():
    """The page's other 30 s, in the browser: the timeline sent 44,912 backward segments and as
    many all-reduce bars (9.4 MB of figure), which chromium took about 30 s to draw, the page
    frozen behind it (the advisor's numbers came 40-45 s after opening). Bars of one kind closer
    than a pixel are now drawn as one above 5,000 of them; each kind still spans what the API's
    timeline gives."""
    import costmodel as cm
    from costmodel.plots import TIMELINE_MAX_BARS

    at = open_page("page_ddp.py", {"ddp_arch": "deepseek-v3"})
    assert_clean(at)
    drawn = _bars_by_kind(_figure(at, "chart_timeline"))
    r = cm.Scenario(arch="deepseek-v3", cluster="dgx-h100", nodes=4).evaluate(
        scaling=False, flips=False
    )
    assert sum(iv["kind"] == "all_reduce" for iv in r.timeline) > 40_000
    for kind in {iv["kind"] for iv in r.timeline}:
        ivs = [iv for iv in r.timeline if iv["kind"] == kind]
        n, start, end = drawn[kind.replace("_", "-")]
        assert n <= TIMELINE_MAX_BARS
        assert start == pytest.approx(min(iv["start_s"] for iv in ivs), rel=1e-12, abs=1e-12)
        assert end == pytest.approx(max(iv["end_s"] for iv in ivs), rel=1e-12)


def test_joined_bars_keep_their_gaps_and_rows():
    """Bars closer than a pixel join; a real gap, another row or another kind do not."""
    from costmodel.plots import TIMELINE_MAX_BARS, _drawn_bars

    n = TIMELINE_MAX_BARS + 1
    ivs = [
        {"kind": "all_reduce", "start_s": k * 1.0 + (500.0 if k >= n // 2 else 0.0)}
        for k in range(n)
    ]
    for iv in ivs:
        iv["end_s"] = iv["start_s"] + 1.0
    ivs[-1]["stream"] = "params"  # the last on another row
    bars = _drawn_bars(ivs, 10_000.0)
    assert [(b["start_s"], b["end_s"]) for b in bars] == [
        (0.0, float(n // 2)),
        (500.0 + n // 2, 500.0 + n - 1),
        (500.0 + n - 1, 500.0 + n),
    ]
    assert _drawn_bars(ivs[:TIMELINE_MAX_BARS], 10_000.0) == ivs[:TIMELINE_MAX_BARS]


def test_a_timeline_of_a_few_hundred_buckets_keeps_every_bar():
    import costmodel as cm

    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b"})
    assert_clean(at)
    drawn = _bars_by_kind(_figure(at, "chart_timeline"))
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=4).evaluate(
        scaling=False, flips=False
    )
    for kind in {iv["kind"] for iv in r.timeline}:
        assert drawn[kind.replace("_", "-")][0] == sum(iv["kind"] == kind for iv in r.timeline)


# --- the Memory page's "nothing makes it fit" was false where two changes together do --------
def test_the_memory_page_names_a_stage_and_a_recomputation_that_fit_together():
    """70B at ZeRO-0 on 64 H100s: the page said "No recomputation mode or ZeRO stage makes it
    fit at these ranks", while ZeRO-3 with full recomputation at those 64 ranks needs 37 GB
    of the card's 85.5 GB (what the page itself shows for that setting, and the step page's
    FSDP advice). It now names that pair, with the page's own figure for it."""
    from tests.test_app import _text

    at = open_page("page_memory.py", {"arch": "llama-3-70b", "dp_ranks": "64"})
    assert_clean(at)
    warn = " ".join(_text(w.value) for w in at.warning)
    assert "No recomputation mode" not in warn, warn
    both = open_page(
        "page_memory.py",
        {"arch": "llama-3-70b", "dp_ranks": "64", "zero_stage": "3 (FSDP)", "recompute": "full"},
    )
    shown = metrics(both)
    assert shown["Fits?"] == "yes"
    total = shown["Memory per GPU, ZeRO-3"]
    assert f"ZeRO-3 and recompute full at N = 64: {total} per GPU" in warn, (warn, total)


def test_the_memory_page_still_says_when_nothing_fits_at_these_ranks():
    """At 8 ranks not even ZeRO-3 with full recomputation fits 70B on an H100: said so."""
    from tests.test_app import _text

    at = open_page("page_memory.py", {"arch": "llama-3-70b", "dp_ranks": "8"})
    assert_clean(at)
    warn = " ".join(_text(w.value) for w in at.warning)
    assert "No recomputation mode or ZeRO stage, alone or together, makes it fit" in warn


# --- a typed size greys out the list of sizes it overrides ---------------------------------
@pytest.mark.parametrize(
    ("page_file", "key", "text_key"),
    [("page_collectives.py", "size", "size_text"), ("page_cluster.py", "cl_size", "cl_size_text")],
)
def test_a_typed_size_greys_out_the_list_it_overrides(page_file, key, text_key):
    """With 1MiB typed, the Collectives page answered for 1.05 MB while its size list still
    showed 268 MB, enabled, as if it were in use. The list is now disabled, saying why, while
    the box holds a size; emptied, the list is back and its size is used."""
    at = open_page(page_file, {text_key: "1MiB"})
    assert_clean(at)
    listed = at.selectbox(key=key)
    assert listed.disabled and "Not used while a size is typed" in listed.help
    assert "1 MiB" in " ".join(s.value for s in at.subheader)  # said as typed, not 1.05 MB
    at.text_input(key=text_key).set_value("").run()
    assert_clean(at)
    listed = at.selectbox(key=key)
    assert not listed.disabled
    assert listed.format_func(listed.value) in " ".join(s.value for s in at.subheader)


# --- H100 vs B200: the placeholder price is said when it costs two different GPUs ----------
_H100_VS_B200 = {
    "ddp_arch": "llama-3-70b",
    "ddp_strategy": "fsdp",
    "ddp_nodes": "8",
    "ddp_recompute": "full",
    "ddp_tokens": "15T",
    "ddp_pin": "true",
    "ddp_b_cluster": "dgx-b200",
}


def _placeholder_warnings(at) -> list[str]:
    from tests.test_app import _text

    return [_text(w.value) for w in at.warning if "placeholder" in w.value]


def test_an_h100_vs_b200_cost_at_the_placeholder_price_says_so():
    """Comparing H100 with B200 left both prices at the $2 placeholder: Cost (A) $11.7 M and
    Cost (B) $6.2 M, B "cheaper" by GPU-hours alone, where a B200 rents for about twice an
    H100 (the price presets). Only a caption under each side's metrics said placeholder; a
    warning above the costs now says the dollars compare the GPUs at one price. (B on another
    GPU now starts on a preset for its GPU: its box set to custom leaves it at the placeholder.)"""
    at = open_page("page_ddp.py", {**_H100_VS_B200, "ddp_price_b": "custom"})
    assert_clean(at)
    warns = _placeholder_warnings(at)
    assert len(warns) == 1 and "A (h100-sxm) and B (b200)" in warns[0], warns
    # one side priced: the warning names the other
    at = open_page(
        "page_ddp.py", {**_H100_VS_B200, "ddp_price": "aws-p5-on-demand", "ddp_price_b": "custom"}
    )
    warns = _placeholder_warnings(at)
    assert len(warns) == 1 and warns[0].startswith("B (b200) is costed"), warns
    # both priced: no warning, and B's cost is the API's at its price
    import costmodel as cm

    at = open_page(
        "page_ddp.py",
        {
            **_H100_VS_B200,
            "ddp_price": "aws-p5-on-demand",
            "ddp_price_b": "aws-p6-b200-on-demand",
        },
    )
    assert_clean(at)
    assert _placeholder_warnings(at) == []
    b = cm.Scenario(
        arch="llama-3-70b", cluster="dgx-b200", nodes=8, strategy="fsdp", recompute="full"
    ).evaluate(scaling=False, flips=False)
    cost = b.training_cost(15e12, price="aws-p6-b200-on-demand")
    assert metrics(at)["Cost (B) [USD]"] == f"{cost.cost_usd:,.0f}"


def test_the_same_gpu_on_both_sides_needs_no_price_comparison_warning():
    """One GPU on both sides: the dollars compare like with like, so no warning that they
    compare two GPUs at one price; the placeholder itself is still flagged under the costs
    (one warning for both: B shares A's price), as on a page with one configuration."""
    at = open_page(
        "page_ddp.py", {**_H100_VS_B200, "ddp_b_cluster": "dgx-h100", "ddp_b_nodes": "16"}
    )
    assert_clean(at)
    warns = _placeholder_warnings(at)
    assert len(warns) == 1 and warns[0].startswith("Costs (A) and (B) at a $2"), warns
    assert "as if they rented" not in warns[0]


# --- the Memory page names the batch and sequence as the Training step page does -----------
def test_the_memory_page_s_batch_and_sequence_boxes_read_as_the_step_page_s():
    """The Memory page asked for "Sequence [tokens]" and "Micro-batch [seq]" (a unit no other
    surface uses) where the Training step page asks for the same two numbers as "Sequence
    length [tokens]" and "Local batch per GPU [samples]" (the CLI's --micro-batch is "[samples]"
    too). The boxes now carry the step page's names, and a refusal names them."""
    memory_page = open_page("page_memory.py", {"arch": "llama-3-8b"})
    step_page = open_page("page_ddp.py", {"ddp_arch": "llama-3-8b"})
    for mine, theirs in (("act_seq", "ddp_seq"), ("micro", "ddp_local_batch")):
        assert memory_page.number_input(key=mine).label == step_page.number_input(key=theirs).label


# --- the two crossover tables of the Collectives page name their columns alike ---------------
def _table_header(at, first_column: str) -> list[str]:
    from tests.test_app import _text

    for md in at.markdown:
        # the table's first line; a table shown as cards on a phone is preceded by its <style>
        lines = [ln for ln in _text(md.value).split("\n") if ln.startswith("|")]
        if not lines:
            continue
        head = lines[0]
        cells = [c.strip() for c in head.strip("|").split("|")]
        if cells and cells[0] == first_column:
            return cells
    raise AssertionError(f"no table starting with {first_column!r}")


def test_the_crossover_tables_of_both_views_name_the_winners_alike():
    """The one-link view's crossover table read "faster_below" and "faster_above" (the API's
    field names) where the cluster view's reads "faster below" and "faster above"."""
    link = open_page("page_collectives.py", {"view": "Formulas on one link (alpha-beta)"})
    assert_clean(link)
    cluster = open_page("page_collectives.py", {"nccl_nodes": "2"})
    assert_clean(cluster)
    one_link = _table_header(link, "pair")
    on_cluster = _table_header(cluster, "faster below")
    for name in ("faster below", "faster above"):
        assert name in one_link and name in on_cluster, (one_link, on_cluster)
    assert not any("_" in c for c in one_link), one_link
