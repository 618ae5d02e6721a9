"""Headless tests from the forty-second QA pass: the step page's power limit beside a measured
compute time, and the GPU's peak under full recomputation. Each test failed on the defect it
names before its fix."""

from __future__ import annotations

import re

from costmodel.strategy.compute import MEASURED_LABEL
from tests.test_app import assert_clean, metrics, open_page

UNUSED = f"Power limit not used: the {MEASURED_LABEL} is given."
BASE = {"ddp_arch": "llama-3.1-8b", "ddp_cluster": "dgx-h100", "ddp_nodes": "8",
        "ddp_strategy": "fsdp"}  # fmt: skip


def _captions(at) -> list[str]:
    return [str(c.value) for c in at.caption]


def _errors(at) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", str(e.value)) for e in at.error]  # Markdown unescaped


def test_a_power_limit_beside_a_measured_compute_time_is_said_not_used():
    """The page priced the same step with and without a power limit beside a measured compute
    time, and said nothing (the API, the CLI and the sweep refuse the two together): now it
    says the limit is not used, as it says of an MFU, and the cluster's name carries no cap."""
    measured = open_page("page_ddp.py", {**BASE, "ddp_compute": "350ms"})
    assert_clean(measured)
    at = open_page("page_ddp.py", {**BASE, "ddp_compute": "350ms", "ddp_power": "300"})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert UNUSED in _captions(at)
    assert metrics(at)["Step time"] == metrics(measured)["Step time"]
    assert not any("300 W" in c for c in _captions(at))  # no cap named on the cluster
    # the limit alone is used and nothing is said
    alone = open_page("page_ddp.py", {**BASE, "ddp_power": "300"})
    assert_clean(alone)
    assert UNUSED not in _captions(alone)
    assert metrics(alone)["Step time"] != metrics(measured)["Step time"]


def test_full_recomputation_faster_than_the_peak_is_refused_in_red():
    """A measured compute of 1.9 s for Llama 3.1 70B with full recomputation is 130 % of the
    H100's peak in the FLOPs the GPU runs (2.48 s at least): refused in red, as a compute time
    faster than the peak without recomputation is; an MFU of 0.95 likewise (at most 0.75)."""
    q = {**BASE, "ddp_arch": "llama-3.1-70b", "ddp_recompute": "full"}
    at = open_page("page_ddp.py", {**q, "ddp_compute": "1.9s"})
    assert_clean(at)
    assert any("recompute full" in e and "2.48 s" in e for e in _errors(at)), _errors(at)
    at = open_page("page_ddp.py", {**q, "ddp_own_mfu": "true", "ddp_mfu": "0.95"})
    assert_clean(at)
    assert any("at most 0.75 under recompute full" in e for e in _errors(at)), _errors(at)
    ok = open_page("page_ddp.py", {**q, "ddp_compute": "2.6s"})
    assert_clean(ok)
    assert not _errors(ok), _errors(ok)


def test_the_hsdp_group_box_says_which_groups_a_cluster_takes():
    """The Memory page sizes any group that divides the ranks (3 of 12), as ``costmodel memory``
    without --cluster (memory_layout: no node, the group stands for it), while ``memory
    --cluster dgx-h100`` and ``cm.Layout`` (an 8-GPU node) refuse 3: the box's help says so."""
    at = open_page("page_memory.py", {"dp_ranks": "12"})
    at.radio(key="zero_stage").set_value(3).run()
    at.radio(key="mem_strategy").set_value("hsdp").run()
    at.number_input(key="mem_group").set_value(3).run()
    assert_clean(at)
    assert not _errors(at), _errors(at)
    helped = at.number_input(key="mem_group").help
    assert "without --cluster" in helped and "divide a node's GPUs" in helped
