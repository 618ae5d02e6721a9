"""Headless tests from the forty-fourth app QA pass (a planner pricing training runs). Each test
failed on the defect it names before its fix."""

from __future__ import annotations

from tests.test_app import assert_clean, open_page

BASE = {"ddp_arch": "llama-2-7b", "ddp_cluster": "dgx-h100", "ddp_nodes": "8",
        "ddp_strategy": "fsdp", "ddp_compute": "430ms", "ddp_pin": "true"}  # fmt: skip


def test_b_on_another_gpu_beside_a_measured_compute_has_its_own_predicted_compute():
    """The step page's B on a B200 took A's 430 ms measured on H100s (B at an H100's speed and
    a B200's price): B's compute is now predicted on its own GPU, as ``scenario --vs
    cluster=...,compute_time=none``, and a caption says so."""
    at = open_page("page_ddp.py", {**BASE, "ddp_b_cluster": "dgx-b200"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    said = [str(c.value) for c in at.caption]
    assert any(c.startswith("B's compute is predicted on its own GPU (b200)") for c in said), said
    answer = [str(x.value) for x in (*at.success, *at.warning)]
    assert not any("Both sides use the one measured compute" in x for x in answer), answer
    assert any("faster than A" in x and "B " in x for x in answer), answer
    # B on A's own GPU keeps A's measured compute and says nothing of it
    same = open_page("page_ddp.py", {**BASE, "ddp_b_nodes": "4"})
    assert_clean(same)
    assert not any("predicted on its own GPU" in str(c.value) for c in same.caption)


def test_the_cost_caption_names_the_price_presets_source():
    """The step page's cost caption gave a preset's name and date, never its source: it now
    ends the price's note with the source's sites (a third-party dump for aws-p5-on-demand)."""
    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_nodes": "8",
                                   "ddp_strategy": "fsdp"})  # fmt: skip
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    said = [str(c.value) for c in at.caption]
    assert any("(source: github.com/datareceipts)" in c for c in said), said
    assert "source" in at.selectbox(key="ddp_price").help
