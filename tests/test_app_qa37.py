"""Headless (AppTest) checks from the thirty-seventh QA pass: the Memory chart's sharded bars,
where the step page says a refusal, its empty columns, and the default MFU's label.

Each test failed before its fix.
"""

from __future__ import annotations

import base64
import json
import logging
import re

import numpy as np
import pytest

from tests.test_app import _text, assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _values(spec: object) -> list[float]:
    """A trace's numbers as plotly's JSON holds them: a list, or base64 typed-array data."""
    if isinstance(spec, dict):
        return np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"]).tolist()
    return [float(v) for v in spec]  # type: ignore[union-attr]


def _chart(at, key: str) -> dict:
    chart = next(c for c in at.get("plotly_chart") if key in c.proto.id)
    return json.loads(chart.proto.spec)


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# --- 1. Memory: every bar's total is written on it ---------------------------------------------
@pytest.mark.parametrize("stage", ["0", "3"])
def test_every_memory_bar_carries_its_total_the_metric_says(stage) -> None:
    """Llama-3.1-70B on 64 ranks: ZeRO-3's bar (25.3 GB) was a sliver beside ZeRO-0's
    (1.27 TB) on the chart's linear axis, with nothing saying how tall. Each bar now has
    its total written above it, the sum of its parts and the number the headline metric gives
    for the selected stage; the card's line is still drawn on the same (linear) axis."""
    at = open_page(  # the model state (activations off): ZeRO-3 25.3 GB, ZeRO-0 1.27 TB
        "page_memory.py",
        {"arch": "llama-3.1-70b", "dp_ranks": "64", "activations": "false", "zero_stage": stage},
    )
    assert_clean(at)
    spec = _chart(at, "chart_memory")
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    labels = [t for t in spec["data"] if t.get("mode") == "text"]
    assert len(labels) == 1, [t.get("name") for t in spec["data"]]
    configs = labels[0]["x"]
    assert configs == ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"], configs
    from costmodel.units import format_bytes

    sums = {c: 0.0 for c in configs}
    for trace in bars:
        ys = _values(trace["y"])
        assert any(ys), trace["name"]  # a part no bar holds is not drawn
        for c, y in zip(trace["x"], ys, strict=True):
            sums[c] += y
    written = dict(zip(configs, labels[0]["text"], strict=True))
    assert written == {c: format_bytes(sums[c]) for c in configs}, written
    # the selected stage's label is the headline's number
    shown = _metrics(at)[f"Memory per GPU, ZeRO-{stage}"]
    assert written[f"ZeRO-{stage}"] == shown, (written, shown)
    # the sharded bar is tiny beside the unsharded one: the case the labels are for
    assert sums["ZeRO-3"] < sums["ZeRO-0"] / 10, sums
    # the card's line, on the linear axis the bars are stacked on
    card = [s for s in spec["layout"]["shapes"] if s["type"] == "line"]
    assert len(card) == 1 and card[0]["y0"] == pytest.approx(85.52e9, rel=1e-3), card
    assert spec["layout"]["yaxis"].get("type") in (None, "linear"), spec["layout"]["yaxis"]


def test_the_side_by_side_memory_chart_carries_each_total_too() -> None:
    """A and B (the same figure with each GPU's memory marked) write each bar's total too."""
    at = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-70b", "dp_ranks": "64", "mem_pin": "true", "mem_b_zero": "3"},
    )
    assert_clean(at)
    spec = _chart(at, "chart_memory_compare")
    labels = [t for t in spec["data"] if t.get("mode") == "text"]
    assert len(labels) == 1 and len(labels[0]["text"]) == 2, labels
    assert all(re.fullmatch(r"[\d.]+ [kMGT]?B", t) for t in labels[0]["text"]), labels


# --- 2. Training step: a refusal only the step makes is said at the top ------------------------
@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"ddp_strategy": "hsdp", "ddp_group": "3"}, "HSDP group [GPUs]: 3 does not divide"),
        ({"ddp_cluster": "dgx-a100", "ddp_precision": "fp8"}, "Compute precision"),
    ],
)
def test_a_refusal_of_the_step_is_said_in_the_answers_place(query, said) -> None:
    """A refusal the step's computation makes (no box's own check: an HSDP group that does not
    divide the ranks, fp8 on an A100) was drawn under every input: on a 390 px phone about
    2,000 px below the top, where the answer was missing without a word. It is now drawn in
    the answer's place under the page's question, before the first input."""
    at = open_page("page_ddp.py", query)
    assert_clean(at)
    order = [
        ("error", _text(n.value)) if n.type == "error" else ("box", n.label)
        for n in at.main
        if n.type in ("error", "selectbox")
    ]
    errors = [i for i, (kind, _) in enumerate(order) if kind == "error"]
    assert len(errors) == 1 and said in order[errors[0]][1], order
    assert errors[0] == 0 and order[1] == ("box", "Model"), order
    assert not at.metric  # no number beside it


# --- 3. Training step: no empty column -----------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        {},
        {"ddp_arch": "llama-3.1-8b"},
        {"ddp_strategy": "hsdp"},
        {"ddp_strategy": "fsdp", "ddp_arch": "llama-3.1-8b"},
        {"ddp_strategy": "zero2", "ddp_arch": "llama-3.1-8b"},
        # B pinned: its precision under B's cluster, B's HSDP group under B's strategy (a row
        # of their own left two or three columns empty)
        {"ddp_pin": "true"},
        {"ddp_pin": "true", "ddp_b_strategy": "hsdp"},
        {"ddp_pin": "true", "ddp_strategy": "hsdp", "ddp_b_arch": "custom (parameter count)"},
    ],
)
def test_the_step_pages_inputs_leave_no_column_empty(query) -> None:
    """On a phone Streamlit stacks a row's columns, each 16 px below the one before, an empty
    one too: the Strategy row of a bare count (Strategy and three empty columns) left 48 px of
    nothing under the box at 390 px, the power row (a fourth column never used) and the cost
    row without B (a third column kept for B's price) 16 px each. Every column A's inputs and
    the cost draw now holds something."""
    at = open_page("page_ddp.py", query)
    assert_clean(at)
    empty = [
        i
        for i, col in enumerate(at.columns)
        if not [n for n in col.children.values() if n.type != "column"]
    ]
    assert not empty, (empty, len(at.columns))
    labels = {n.label for n in at.main if getattr(n, "label", None)}
    assert {"Strategy", "Compute precision", "GPU power limit [W] (optional)"} <= labels


# --- 4. the default MFU's label is the value the step uses --------------------------------------
def test_the_l40s_fp8_default_mfu_label_is_the_value_used() -> None:
    """An L40S has no fitted efficiency, so under fp8 its compute is the default MFU 0.4 of the
    bf16 peak, 0.4 x 362.05 / 733 = 0.19757 of the fp8 peak; the label said "0.20 of the fp8
    peak", a value 1.2 % off the one used (typed back as the MFU, a compute 1.2 % faster).
    The label now writes the value to 0.05 %, and that MFU typed prices the same compute."""
    q = {
        "ddp_cluster": "pcie-8x-l40s",
        "ddp_nodes": "1",
        "ddp_precision": "fp8",
        "ddp_arch": "llama-3.1-8b",
    }
    at = open_page("page_ddp.py", q)
    assert_clean(at)
    said = [c.value for c in at.caption if c.value.startswith("Compute in use: default MFU")]
    assert len(said) == 1, [c.value for c in at.caption][:12]
    found = re.search(r"default MFU ([\d.]+) of the bf16 peak, ([\d.]+) of the fp8 peak", said[0])
    assert found, said
    bf16, fp8 = (float(x) for x in found.groups())
    from costmodel import presets
    from costmodel.compute import precision_peak_flops
    from costmodel.strategy.compute import DEFAULT_MFU, MFU_LABEL_REL

    l40s = presets.load("l40s")
    used = DEFAULT_MFU * precision_peak_flops(l40s, "bf16") / precision_peak_flops(l40s, "fp8")
    assert bf16 == DEFAULT_MFU
    assert fp8 == pytest.approx(used, rel=MFU_LABEL_REL) and found.group(2) != "0.20", said
    # the label's MFU, set in the MFU box, prices the compute the default priced
    typed = open_page("page_ddp.py", {**q, "ddp_own_mfu": "true", "ddp_mfu": found.group(2)})
    assert_clean(typed)
    from costmodel.scenario import Scenario

    kw = dict(arch="llama-3.1-8b", cluster="pcie-8x-l40s", nodes=1, precision="fp8", strategy="ddp")
    default = Scenario(**kw).evaluate(scaling=False, flips=False, timeline=False)
    given = Scenario(**kw, mfu=fp8).evaluate(scaling=False, flips=False, timeline=False)
    assert given.compute_s == pytest.approx(default.compute_s, rel=MFU_LABEL_REL)
    assert _metrics(typed)["Compute"] == _metrics(at)["Compute"]


@pytest.mark.parametrize(
    ("mfu", "text"),
    [(0.4, "0.40"), (0.5, "0.50"), (0.19757162, "0.1976"), (0.342857, "0.343"), (0.001, "0.001")],
)
def test_an_mfu_label_writes_the_value_to_the_precision_that_matters(mfu, text) -> None:
    """Two decimals where they are the value; more where two would be off by more than
    MFU_LABEL_REL (the step's times are read to three significant digits)."""
    from costmodel.strategy.compute import MFU_LABEL_REL, _mfu_text

    assert _mfu_text(mfu) == text
    assert float(text) == pytest.approx(mfu, rel=MFU_LABEL_REL)
