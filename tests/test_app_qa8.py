"""Headless app tests from the eighth QA pass (streamlit.testing AppTest), a new user on every
page. Each one failed on the defect it names before its fix."""

from __future__ import annotations

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page

#: The shipped clusters whose node has no network: one node is the only size they come in.
NO_NETWORK = ("pcie-8x-l40s", "pcie3-2x-rtx2080ti-nop2p", "pcie5-8x-rtxpro6000-p2p")


@pytest.mark.parametrize("strategy", ["ddp", "zero1", "zero2", "fsdp", "hsdp"])
def test_the_step_page_runs_on_a_one_node_box_with_no_network(strategy):
    """A PCIe box (no NICs) at its only size, one node, showed a traceback on the Training step
    page for every strategy: the scaling table asked the cluster for 2 nodes, which it cannot
    have. The table now holds the node counts the cluster can have."""
    at = open_page(
        "page_ddp.py",
        {"ddp_cluster": "pcie-8x-l40s", "ddp_nodes": "1", "ddp_strategy": strategy},
    )
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    assert metrics(at)["GPUs"] == "8 (1 x 8)"


@pytest.mark.parametrize("cluster", NO_NETWORK)
def test_a_scenario_on_a_box_with_no_network_scales_over_one_node_only(cluster):
    """The same defect on the API and `costmodel scenario`: evaluate(scaling=True) raised
    'nodes=2 but the node has no network' for the box's only valid node count."""
    import costmodel as cm

    result = cm.Scenario(params=1e9, cluster=cluster, nodes=1).evaluate(scaling=True)
    assert [row.nodes for row in result.scaling] == [1]
