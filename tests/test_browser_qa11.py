"""The eleventh browser QA pass: a new user planning a run, walked in chromium at 1440 and 390
px (every page; llama-3.1-70b on 8 dgx-h100 nodes under fsdp/hsdp at 8192 tokens, fp8, a typed
14 GB, an uploaded nccl-tests log). Each test failed on the defect it names before its fix.
Every defect found shows in the page's own script, so each is tested headless (AppTest); no
defect needed a real browser to show, so this file starts no server and no chromium."""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel.units import format_duration
from tests.test_app import _text, assert_clean, metrics, open_page


# --- the step page's HSDP group: the API's default, one node of the cluster -------------------
@pytest.mark.parametrize(("cluster", "group"), [("alps-gh200", 4), ("dgx-h100", 8)])
def test_step_page_hsdp_group_defaults_to_one_node_as_the_cli(cluster, group):
    """The step page's "HSDP group [GPUs]" box started at 8 on every cluster, where the API,
    `costmodel step --strategy hsdp` and the sweep take one node: on alps-gh200 (4 GPUs a
    node) the page priced hsdp g=8 (524 ms) against the CLI's g=4 (581 ms) for the same
    question. The box is empty by default now, and empty is the API's default."""
    api = cm.strategy_step(7e9, cluster=cluster, nodes=4, strategy="hsdp")
    assert api.layout.name == f"hsdp g={group}"
    at = open_page("page_ddp.py", {"ddp_cluster": cluster, "ddp_strategy": "hsdp"})
    assert_clean(at)
    assert at.number_input(key="ddp_group").value is None
    assert metrics(at)["Step time"] == format_duration(api.step_time_s)
    assert any(f"hsdp g={group}:" in c.value for c in at.caption), [c.value for c in at.caption]


# --- Validate: a cluster the user picked is said as theirs --------------------------------------
def test_validate_says_a_cluster_the_user_picked_was_set_by_them():
    """A bundled AWS p5 run compared on dgx-h100 (picked by the user over the run's own aws-p5)
    said "Assumed (...): cluster = dgx-h100 (the log names no GPU a preset has: check the
    cluster)": an assumption the page never made, about a log whose run has a preset. A
    cluster other than the one the page picked is now "(you set it)", as op and nodes say it."""
    at = open_page(
        "page_validate.py",
        {
            "val_source": "A reference run",
            "val_reference": "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt",
            "val_cluster": "dgx-h100",
        },
    )
    assert_clean(at)
    facts = next(_text(c.value) for c in at.caption if c.value.startswith("From the log"))
    assert "cluster = dgx-h100 (you set it)" in facts, facts
    assert "names no GPU" not in facts, facts
    # the page's own pick is still said as an assumption (the bundled run's preset)
    own = open_page(
        "page_validate.py",
        {
            "val_source": "A reference run",
            "val_reference": "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt",
        },
    )
    facts = next(_text(c.value) for c in own.caption if c.value.startswith("From the log"))
    assert "cluster = aws-p5 (" in facts and "you set it" not in facts.split("cluster =")[1]


# --- the precision inputs' help: the GPUs fp8 runs on, from the presets --------------------------
def test_precision_help_names_every_gpu_fp8_runs_on():
    """The step page's "Compute precision" help (and the CLI's --precision, Scenario.precision)
    said fp8 runs on "H100, H200, L40S, B200, refused on A100", while GH200 (alps-gh200), GB200
    (gb200-nvl72) and the RTX PRO 6000 run it too and V100 and RTX 2080 Ti refuse it. The list
    is one constant now, checked here against every shipped GPU preset's fp8 peak, and each
    named GPU is priced at fp8 or refused as the help says."""
    from costmodel import presets
    from costmodel.compute import FP8_GPUS, FP8_GPUS_TEXT, NO_FP8_GPUS

    gpus = {n: presets.load(n, kind="gpu") for n in presets.names(kind="gpu")}
    assert set(FP8_GPUS) == {n for n, g in gpus.items() if g.fp8_dense_flops}
    assert set(NO_FP8_GPUS) == {n for n, g in gpus.items() if not g.fp8_dense_flops}
    for cluster, runs in (("alps-gh200", True), ("gb200-nvl72", True), ("dgx1-v100", False)):
        if runs:
            assert cm.strategy_step(7e9, cluster=cluster, precision="fp8").precision == "fp8"
        else:
            with pytest.raises(ValueError, match="no fp8 tensor cores"):
                cm.strategy_step(7e9, cluster=cluster, precision="fp8")
    at = open_page("page_ddp.py", {"ddp_cluster": "alps-gh200", "ddp_precision": "fp8"})
    assert_clean(at)
    box = at.selectbox(key="ddp_precision")
    assert box.value == "fp8" and FP8_GPUS_TEXT in box.help and "GH200" in box.help, box.help


# --- the Memory page says what `costmodel memory` says beside the numbers ------------------------
@pytest.mark.parametrize(
    ("arch", "says"),
    [
        (
            "llama-3.1-405b",
            ["406B parameters: production runs of this size add tensor and pipeline"],
        ),
        ("deepseek-v3", ["production runs of this size add tensor", "all-to-all"]),
        ("llama-3.1-8b", []),
    ],
)
def test_memory_page_gives_the_cli_notes_on_a_large_or_moe_model(arch, says):
    """`costmodel memory --arch llama-3.1-405b` (and the step page) say that production runs of
    this size add tensor and pipeline parallelism, which is not modelled, and for deepseek-v3
    that its experts are not sharded (expert parallelism); the Memory page gave the numbers
    alone (its sidebar's general line is hidden on a phone). The page now shows the notes of
    strategy.memory.memory_notes, the function the CLI's and the sweep's notes come from."""
    from costmodel.architecture import load_arch
    from costmodel.strategy.memory import memory_notes
    from costmodel.web.common import sentence

    a = load_arch(arch)
    # the CLI's, less its activation line, as the page shows a note (a sentence, web.common)
    notes = [sentence(n) for n in memory_notes("", a.params, a)[1:]]
    at = open_page("page_memory.py", {"arch": arch, "dp_ranks": "64"})
    assert_clean(at)
    shown = [_text(c.value) for c in at.caption]
    assert all(n in shown for n in notes), (notes, shown)
    for text in says:
        assert any(text in c for c in shown), shown
    if not says:
        assert not notes and not any("production runs of this size" in c for c in shown)
