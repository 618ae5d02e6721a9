"""Headless (AppTest) checks from the thirty-third QA pass (a new user planning a run: a
14 GB all-reduce on 64 H100s, Llama-3.1-70B under ZeRO-3/FSDP/HSDP on 64 GPUs, days and
dollars on two GPUs side by side, the batch in tokens, an nccl-tests log in Validate).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

from tests.test_app import _text, assert_clean, metrics, open_page, open_tables

logging.getLogger("streamlit").setLevel(logging.ERROR)

#: Llama-3.1-70B under FSDP with full recomputation on 8 DGX H100 nodes (it fits), B on H200s.
STEP_70B = {
    "ddp_arch": "llama-3.1-70b",
    "ddp_nodes": "8",
    "ddp_strategy": "fsdp",
    "ddp_recompute": "full",
    "ddp_price": "aws-p5-on-demand",
}


def _warnings(at) -> list[str]:
    return [_text(w.value) for w in at.warning]


def test_a_measured_step_beside_bs_predicted_one_is_said() -> None:
    """The measured step box is A's: B's days and dollars stay at B's predicted step, so A's
    measured 6 s beside B's predicted 5.77 s compared a measurement with a prediction without
    a word; the page now says so, naming A's predicted step."""
    at = open_page(
        "page_ddp.py",
        {**STEP_70B, "ddp_pin": "true", "ddp_b_cluster": "hgx-h200", "ddp_measured_step": "6s"},
    )
    assert_clean(at)
    m = metrics(at)
    assert m["MFU implied by the measured step (A)"]
    assert "MFU at the predicted step (B)" in m
    said = [w for w in _warnings(at) if "measured step" in w]
    assert len(said) == 1, _warnings(at)
    assert "A's time and cost are at your measured step (6 s)" in said[0], said
    assert "B's at its predicted step (5.77 s)" in said[0], said
    assert f"A's predicted step is {m['Step time']}" in said[0], said


def test_a_measured_step_without_b_has_no_such_warning() -> None:
    at = open_page("page_ddp.py", {**STEP_70B, "ddp_measured_step": "6s"})
    assert_clean(at)
    assert not [w for w in _warnings(at) if "measured step" in w], _warnings(at)


def test_a_typed_hidden_size_is_not_refused_by_the_greyed_heads_box() -> None:
    """A bare 70B count with its activations sized at a typed shape (80 layers, hidden 8192):
    under FlashAttention (the default) the Heads box is greyed, the scores it sizes are not
    kept, yet its default (69 heads, the count's own shape) refused the hidden size, "Hidden
    size: must be a multiple of the 69 Heads", naming a box that cannot be changed. The greyed
    box no longer refuses: the memory is the same as with 64 heads typed."""
    shape = {
        "params": "70B",
        "dp_ranks": "64",
        "zero_stage": "3",
        "shape_activations": "true",
        "layers": "80",
        "hidden": "8192",
    }
    at = open_page("page_memory.py", shape)
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    assert at.number_input(key="heads").disabled
    ungreyed = open_page("page_memory.py", {**shape, "heads": "64"})
    key = "Memory per GPU, ZeRO-3"
    assert metrics(at)[key] == metrics(ungreyed)[key] == "116 GB"
    # with the box in use (no FlashAttention), its default is still checked, and named
    at = open_page("page_memory.py", {**shape, "flash": "false"})
    said = [_text(e.value) for e in at.error]
    assert len(said) == 1 and "multiple of the 69 Heads" in said[0], said


def _sizes_said(at) -> str:
    """The headline, the captions and the chart titles: where a page says the size M."""
    import json

    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    return "\n".join(
        [h.value for h in at.subheader] + [_text(c.value) for c in at.caption] + titles
    )


def test_a_size_typed_in_binary_prefixes_is_said_back_in_them() -> None:
    """``64KiB`` typed on the Collectives page was said "65.5 kB" in the headline, the
    algorithms' caption and the chart's title, where ``collective --size 64KiB`` says "64 KiB"
    (docs/design.md section 2: a size given in binary prefixes is said back in them)."""
    from costmodel.units import format_bytes_as_given

    assert format_bytes_as_given(2**16, "64KiB") == "64 KiB"
    at = open_page("page_collectives.py", {"size_text": "64KiB", "nccl_nodes": "8"})
    assert_clean(at)
    said = _sizes_said(at)
    assert "all-reduce of 64 KiB on dgx-h100, 64 GPUs" in said, said
    assert "can run at M = 64 KiB, fastest first" in said, said
    assert "M = 64 KiB dotted" in said, said
    assert "65.5 kB" not in said, said
    # the one-link view and the Cluster page too; a decimal size stays decimal
    link = _sizes_said(open_page("page_collectives.py", {"view": "link", "size_text": "14GiB"}))
    assert "all-reduce of 14 GiB over 8 ranks" in link and "M = 14 GiB" in link, link
    cluster = _sizes_said(open_page("page_cluster.py", {"cl_size_text": "1GiB"}))
    assert "All-reduce of 1 GiB over 32 GPUs" in cluster, cluster
    decimal = _sizes_said(open_page("page_collectives.py", {"size_text": "14GB"}))
    assert "all-reduce of 14 GB on dgx-h100" in decimal, decimal


def test_a_bare_counts_compute_mfu_is_the_one_the_mfu_box_takes() -> None:
    """The step page's default (a bare 7B count) said "the compute alone at MFU 0.44, the value
    for the MFU box (Set the MFU) that gives this compute": 0.44 in the box gave 395 ms for the
    fitted 464 ms. A bare count's fitted compute is priced at 6N + attention of its shape, a
    given MFU at 6N (``model_flops_per_token``); the number named is now of 6N and gives the
    compute back (the library's label: the API, ``costmodel step`` and the page)."""
    import re

    import pytest

    import costmodel as cm
    from costmodel.compute import precision_peak_flops
    from costmodel.strategy import strategy_step

    kw = dict(params=7e9, cluster="dgx-h100", nodes=4, strategy="ddp")
    fitted = strategy_step(**kw)
    peak = precision_peak_flops(cm.presets.load("h100-sxm"), "bf16")
    m = 6 * 7e9 * 4096 / (fitted.compute_s * peak)  # 6N FLOPs per token, micro-batch 1
    named = [float(x) for x in re.findall(r"MFU (\d\.\d\d)", fitted.compute_label)]
    assert named[1] == pytest.approx(m, abs=0.005), fitted.compute_label
    assert "of 6N FLOPs" in fitted.compute_label
    assert strategy_step(**kw, mfu=m).compute_s == pytest.approx(fitted.compute_s, rel=1e-9)
    # the page: the MFU it names, typed into the box, gives its compute to the rounding
    at = open_page("page_ddp.py")
    said = next(_text(c.value) for c in at.caption if "Compute in use" in c.value)
    box = re.search(r"compute alone at MFU (\d\.\d\d)", said)
    assert box is not None, said
    again = open_page("page_ddp.py", {"ddp_own_mfu": "true", "ddp_mfu": box.group(1)})

    def ms(at) -> float:
        return float(metrics(at)["Compute"].removesuffix(" ms"))

    assert ms(again) == pytest.approx(ms(at), rel=0.015), (said, ms(again), ms(at))


def _warmup(at) -> dict:
    return next(d.value.to_dict("list") for d in at.dataframe if "step [-]" in d.value.columns)


def test_the_warmup_table_lists_each_step_once_at_the_quarters() -> None:
    """The Batch page's warmup table took steps 0, w/4, w/2, w: at warmup 0 (no warmup, the
    box's minimum) it listed step 0 four times, at warmup 1 three times, and 3w/4 was left
    out of the quarters. Each step is listed once, at the quarters."""
    at = open_page("page_batch.py", {"warmup": "0"})
    assert_clean(at)
    assert _warmup(at) == {"step [-]": [0], "learning rate [-]": [3.2]}
    at = open_page("page_batch.py", {"warmup": "1"})
    assert _warmup(at)["step [-]"] == [0, 1]
    at = open_page("page_batch.py")  # 500 steps, 0.1 at 256 to 3.2 at 8,192 (linear rule)
    got = _warmup(at)
    assert got["step [-]"] == [0, 125, 250, 375, 500]
    assert [round(x, 4) for x in got["learning rate [-]"]] == [0.1, 0.875, 1.65, 2.425, 3.2]


def test_as_own_cluster_picked_for_b_keeps_as_power_limit_and_slice() -> None:
    """B's Cluster (B) set to A's own cluster dropped A's power limit and node slice, as for
    another cluster: A on 16 GPUs (4 per node) at 500 W beside B "fsdp" on 32 GPUs at 700 W,
    both labelled "dgx-h100 x 4", and "B's step is 1.3x faster" credited to the strategy. A's
    cluster picked for B is A's cluster: B keeps A's GPUs and power."""
    at = open_page(
        "page_ddp.py",
        {
            "ddp_arch": "llama-3.1-8b",
            "ddp_power": "500",
            "ddp_gpus_per_node": "4",
            "ddp_pin": "true",
            "ddp_b_cluster": "dgx-h100",
            "ddp_b_strategy": "fsdp",
        },
    )
    assert_clean(at)
    at = open_tables(at)
    rows = next(d.value for d in at.dataframe if "figure" in d.value.columns).set_index("figure")
    assert rows.loc["GPUs", "A"] == rows.loc["GPUs", "B"] == "16", rows
    # the same B as "same as A" for the cluster
    same = open_page(
        "page_ddp.py",
        {
            "ddp_arch": "llama-3.1-8b",
            "ddp_power": "500",
            "ddp_gpus_per_node": "4",
            "ddp_pin": "true",
            "ddp_b_strategy": "fsdp",
        },
    )
    assert [_text(s.value) for s in at.success] == [_text(s.value) for s in same.success]


def test_b_on_another_cluster_is_the_clis_vs_b() -> None:
    """A on a 4-of-8 slice of each dgx-h100 node, B on hgx-h200: the page's B ran on whole
    nodes (32 GPUs, as its changelog says), ``scenario --vs cluster=hgx-h200`` (through
    ``Scenario.with_changes``) kept A's slice (16 GPUs): two B's for one change. A's slice is
    of A's node, as its power limit is of A's GPUs: both are dropped with the cluster on every
    surface, unless given."""
    import costmodel as cm

    a = cm.Scenario(arch="llama-3.1-8b", nodes=4, gpus_per_node=4, power_limit_w=500)
    b = a.with_changes("cluster=hgx-h200")
    assert b.gpus_per_node is None and b.power_limit_w is None
    kept = a.with_changes("cluster=hgx-h200,gpus_per_node=4")
    assert kept.gpus_per_node == 4
    rb = b.evaluate(scaling=False, flips=False)
    at = open_page(
        "page_ddp.py",
        {
            "ddp_arch": "llama-3.1-8b",
            "ddp_power": "500",
            "ddp_gpus_per_node": "4",
            "ddp_pin": "true",
            "ddp_b_cluster": "hgx-h200",
        },
    )
    assert_clean(at)
    rows = next(
        d.value for d in open_tables(at).dataframe if "figure" in d.value.columns
    ).set_index("figure")
    assert rows.loc["GPUs", "B"] == str(rb.ranks) == "32", rows
    from costmodel.units import format_duration

    assert rows.loc["step time", "B"] == format_duration(rb.step_time_s), rows


def test_the_side_by_side_labels_name_a_slice_and_a_power_limit() -> None:
    """A on 4 of each dgx-h100 node's GPUs at 500 W beside B on hgx-h200's whole nodes: both
    were labelled by cluster and nodes alone ("A: llama-3.1-8b on dgx-h100 x 4, ddp"), in the
    table's caption and the charts' legends, as if A ran 32 GPUs at the datasheet's 700 W."""
    at = open_page(
        "page_ddp.py",
        {
            "ddp_arch": "llama-3.1-8b",
            "ddp_power": "500",
            "ddp_gpus_per_node": "4",
            "ddp_pin": "true",
            "ddp_b_cluster": "hgx-h200",
        },
    )
    assert_clean(at)
    said = next(_text(c.value) for c in at.caption if _text(c.value).startswith("A: "))
    assert said == (
        "A: llama-3.1-8b on dgx-h100 x 4 (4 GPUs per node, 500 W), ddp  |  "
        "B: llama-3.1-8b on hgx-h200 x 4, ddp"
    ), said
