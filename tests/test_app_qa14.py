"""Headless app tests from the fourteenth QA pass: the step page's GPUs per node (a node slice
and its whole-node billing, the CLI's --gpus-per-node), the Validate page's layout from nodes
and GPUs per node against `validate compare`, chart titles that use the width they have, and
what a new user met on the Memory and step pages (numbers checked against the CLI's --json).
Each test failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, metrics, open_page

# --- Step page: GPUs per node, a slice of the node billed whole -------------------------------
#: Llama-3.1-8B under FSDP on 2 DGX H100 nodes, 4 of each node's 8 GPUs, at a published price.
SLICE = {
    "ddp_arch": "llama-3.1-8b",
    "ddp_nodes": "2",
    "ddp_gpus_per_node": "4",
    "ddp_strategy": "fsdp",
    "ddp_price": "aws-p5-on-demand",
}
SLICE_CLI = (
    "--arch", "llama-3.1-8b", "--nodes", "2", "--gpus-per-node", "4", "--strategy", "fsdp",
)  # fmt: skip


def _cli_json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def test_step_page_gpus_per_node_is_the_cli_s_slice_billed_whole():
    """The page had no GPUs-per-node box: a slice's step and its whole-node billing were
    reachable from the CLI, the API and the sweep only."""
    from costmodel.units import format_duration, format_gpu_hours, format_usd

    at = open_page("page_ddp.py", SLICE)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    m = metrics(at)
    assert m["GPUs"] == "8 (2 x 4)"
    step = _cli_json("step", *SLICE_CLI)
    assert step["gpus_per_node"] == 4
    assert m["Step time"] == format_duration(step["step_time_s"])
    cost = _cli_json("train", *SLICE_CLI, "--tokens", "1T", "--price", "aws-p5-on-demand")
    scen = _cli_json("scenario", *SLICE_CLI)
    assert scen["step_time_s"] == pytest.approx(step["step_time_s"], rel=1e-12)
    assert m["Step time"] == format_duration(cost["step_time_s"])
    assert m["GPU-hours"] == format_gpu_hours(cost["gpu_hours"])
    assert m["Cost [USD]"] == format_usd(cost["cost_usd"])
    # the dollars are of the whole nodes: twice the GPU-hours used at the preset's rate
    assert cost["billing_note"] == "billed for 8 GPUs per node (the whole instance), 4 used"
    assert cost["billed_gpu_hours"] == pytest.approx(2 * cost["gpu_hours"])
    assert _usd(m["Cost [USD]"]) == pytest.approx(
        cost["billed_gpu_hours"] * cost["usd_per_gpu_hour"], rel=1e-3
    )
    said = " ".join(_text(c.value) for c in at.caption)
    assert "billed for 8 GPUs per node (the whole instance), 4 used" in said
    assert f"{format_gpu_hours(cost['billed_gpu_hours'])} GPU-hours billed" in said
    gph = next(x for x in at.metric if x.label == "GPU-hours")
    assert "billed" in (gph.help or "")


def test_step_page_gpus_per_node_defaults_to_the_preset_s_node_and_syncs_to_the_url():
    at = open_page("page_ddp.py", {"ddp_cluster": "alps-gh200", "ddp_nodes": "2"})
    assert_clean(at)
    box = at.number_input(key="ddp_gpus_per_node")
    assert box.value is None and box.placeholder.startswith("4 ")  # alps-gh200: 4 per node
    assert metrics(at)["GPUs"] == "8 (2 x 4)"
    assert "ddp_gpus_per_node" not in at.query_params
    at = box.set_value(2).run()
    assert_clean(at)
    assert metrics(at)["GPUs"] == "4 (2 x 2)"
    # a link restores it (Streamlit's binding writes the URL in a browser, not under AppTest)
    linked = open_page("page_ddp.py", {"ddp_cluster": "alps-gh200", "ddp_gpus_per_node": "2"})
    assert linked.number_input(key="ddp_gpus_per_node").value == 2
    assert metrics(linked)["GPUs"] == "8 (4 x 2)"  # the default 4 nodes
    # the whole node, given: the same step as the empty box, no billing note
    whole = open_page("page_ddp.py", {"ddp_gpus_per_node": "8"})
    empty = open_page("page_ddp.py")
    assert metrics(whole) == metrics(empty)
    assert not any("billed for" in c.value for c in whole.caption)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("16", "GPUs per node: dgx-h100 has 8 GPUs per node, got 16; allowed: 1..8"),
        ("0", "URL parameter ddp_gpus_per_node: 0 is outside the range of GPUs per node"),
        ("2.5", "URL parameter ddp_gpus_per_node: 2.5 is not a whole number"),
    ],
)
def test_step_page_gpus_per_node_out_of_range_is_named(value, said):
    """The CLI's range: 1..the preset's node (--gpus-per-node 16 on dgx-h100 exits 2)."""
    at = open_page("page_ddp.py", {"ddp_gpus_per_node": value})
    assert_clean(at)
    assert any(said in _text(e.value) for e in at.error), [e.value for e in at.error]
    if value == "16":
        one_line_error(
            run("train", "--gpus-per-node", "16", "--tokens", "1T", "--params", "7B"),
            "--gpus-per-node: dgx-h100 has 8 GPUs per node, got 16; allowed: 1..8",
        )


def test_step_page_b_on_another_cluster_runs_on_its_whole_nodes():
    """A's slice is of A's node: B on a cluster with 4-GPU nodes is not refused for A's 8."""
    at = open_page(
        "page_ddp.py",
        {"ddp_gpus_per_node": "8", "ddp_pin": "true", "ddp_b_cluster": "alps-gh200"},
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert "A or B?" in [h.value for h in at.subheader]
