"""Headless app tests from the fifth fresh-eyes QA pass (streamlit.testing AppTest): each one
failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel.units import format_duration
from tests.test_app import _text, assert_clean, open_page

LLAMA_70B_FSDP = {"ddp_arch": "llama-3.1-70b", "ddp_nodes": "8", "ddp_strategy": "fsdp"}


def _plain(markdown: str) -> str:
    """An element's text as shown: Markdown's escapes and bold removed."""
    return _text(markdown).replace("**", "")


def test_the_step_s_headline_parts_add_up_to_the_step():
    """Llama-3.1-70B under FSDP on 64 H100s showed "Step time 4.29 s", "Compute 3.85 s",
    "Exposed communication 22 ms" and nothing else: 404 ms waiting for the slowest rank and
    11 ms of optimizer step (10% of the step, printed by `costmodel step`) were on no line of
    the page, and A-vs-B's "One step" bars (compute + exposed) were 10% shorter than the
    steps they stood for. The page now says what the rest is, and the bars reach the step."""
    at = open_page("page_ddp.py", {**LLAMA_70B_FSDP, "ddp_pin": "true", "ddp_b_nodes": "16"})
    assert_clean(at)
    r = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate(
        scaling=False, flips=False
    )
    assert r.sync_s > 0.05 * r.step_time_s  # the case: a part worth seeing
    said = next(_plain(c.value) for c in at.caption if _plain(c.value).startswith("Step "))
    for part in (r.step_time_s, r.compute_s, r.exposed_comm_s, r.optimizer_s, r.sync_s):
        assert format_duration(part) in said, said
    assert "slowest rank" in said and "optimizer step" in said
    fig = next(c for c in at.get("plotly_chart") if "chart_compare_step" in c.proto.id)
    bars = json.loads(fig.proto.spec)["data"]
    step = {m.label: m.value for m in at.metric}["Step time"]
    a_label = bars[0]["y"][0]
    a_total = sum(b["x"][b["y"].index(a_label)] for b in bars)
    assert format_duration(a_total) == step  # the bar's length is the step shown
    assert a_total == pytest.approx(r.step_time_s, rel=1e-9)
