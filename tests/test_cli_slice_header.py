"""`step --strategy all` names a node slice in its header, as the billing note does."""

from __future__ import annotations

from typer.testing import CliRunner

from costmodel.cli import app

ARGS = [
    "step",
    "--arch",
    "llama-2-7b",
    "--cluster",
    "dgx-h100",
    "--nodes",
    "2",
    "--strategy",
    "all",
]


def _header(extra: list[str]) -> str:
    res = CliRunner().invoke(app, ARGS + extra)
    assert res.exit_code == 0, res.output
    return res.output.splitlines()[0]


def test_slice_named_in_the_ranking_header() -> None:
    head = _header(["--gpus-per-node", "4"])
    assert "2 nodes (4 of 8 GPUs per node, 8 GPUs)" in head


def test_whole_nodes_header_unchanged() -> None:
    head = _header([])
    assert "2 nodes (16 GPUs)" in head
    assert "per node" not in head
