"""A review pass over one road per question: a preset's rank count past the nodes a job may
have is refused naming the rank count typed (``--ranks``, the sweep's ``ranks``), with the
largest count the preset allows, on every surface that reads it."""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel._limits import MAX_NODES
from costmodel.sweep.evaluate import ranks_slice
from tests._cli import one_line_error, run

#: 1e8 nodes of dgx-h100's 8 GPUs: a multiple of the node, past the 1,000,000 nodes of a job
TOO_MANY = str(8 * MAX_NODES * 100)
ALLOWED = f"{8 * MAX_NODES:,}"


def test_ranks_slice_refuses_more_nodes_than_a_job_has():
    with pytest.raises(ValueError, match=rf"^ranks: .*allowed: .*{ALLOWED}"):
        ranks_slice([int(TOO_MANY)], 8, "dgx-h100")
    nodes, gpus = ranks_slice([8 * MAX_NODES], 8, "dgx-h100")  # the largest: taken
    assert (int(nodes[0]), int(gpus[0])) == (MAX_NODES, 8)


@pytest.mark.parametrize(
    "args",
    [
        ("step", "--params", "7e9", "--cluster", "dgx-h100"),
        ("scenario", "--params", "7e9", "--cluster", "dgx-h100"),
        ("train", "--params", "7e9", "--cluster", "dgx-h100", "--tokens", "1T"),
        ("batch", "--cluster", "dgx-h100", "--global-tokens", "4Mi", "--seq", "4096"),
        ("collective", "all_reduce", "-s", "1GiB", "--cluster", "dgx-h100"),
    ],
)
def test_cluster_ranks_past_a_jobs_nodes_names_ranks(args):
    # it said "--nodes: must be a whole number in 1..1,000,000, got 100000000": an option
    # not typed, a count not typed
    line = one_line_error(run(*args, "--ranks", TOO_MANY), "--ranks: ", ALLOWED)
    assert "--nodes:" not in line and "`" not in line


def test_sweep_ranks_past_a_jobs_nodes_refused_as_nodes_are():
    # the ranks axis answered a row of 100,000,000 nodes, which nodes=100000000 refuses
    with pytest.raises(ValueError, match=rf"ranks: .*{ALLOWED}"):
        cm.sweep(preset="dgx-h100", ranks=int(TOO_MANY), size=2**20)
    with pytest.raises(ValueError, match="nodes"):
        cm.sweep(preset="dgx-h100", nodes=int(TOO_MANY) // 8, size=2**20)
