"""`costmodel collective`: a ring broadcast's time grows with the nodes (it printed 22.3 us for
1 MiB at 2, 64 and 4,096 nodes of dgx-h100), NCCL's table is capped at the NICs' line rate and
says so (409 GB/s algbw over 8 x 400G NICs on dgx-b200), the multi-node broadcast's band says
no run measures one, and the lesson's in-switch all-reduce is refused across nodes."""

from __future__ import annotations

import json

from costmodel.predict import NCCL_TABLE_CAPPED_NOTE, NCCL_TABLE_CHAIN_NOTE
from costmodel.uncertainty import BORROWED_BAND_NOTE
from tests._cli import run


def _time_s(*args: str) -> float:
    result = run("collective", *args, "--json")
    assert result.exit_code == 0, result.output
    return float(json.loads(result.stdout)["results"][0]["time_s"])


def test_a_broadcast_takes_longer_on_more_nodes():
    base = ("broadcast", "--size", "1MiB", "--cluster", "dgx-h100", "--nodes")
    times = [_time_s(*base, n) for n in ("2", "64", "4096")]
    assert times[0] < times[1] < times[2], times
    assert times[2] > 4095 * 2.7e-6  # a network hop per node at least


def test_nccl_table_rows_are_capped_at_the_nics_and_say_so():
    args = ("all_reduce", "--size", "64GiB", "--cluster", "dgx-b200", "--nodes", "2")
    result = run("collective", *args, "--model", "nccl-table")
    assert result.exit_code == 0, result.output
    assert "400 GB/s" in result.stdout.splitlines()[1]
    assert f"note: {NCCL_TABLE_CAPPED_NOTE}" in result.stdout.splitlines()
    data = json.loads(run("collective", *args, "--model", "nccl-table", "--json").stdout)
    assert data["notes"] == [NCCL_TABLE_CAPPED_NOTE]
    assert "notes" not in json.loads(run("collective", *args, "--json").stdout)


def test_nccl_table_broadcast_says_its_latency_is_nccls_ranking_figure_and_the_band_is_borrowed():
    args = ("broadcast", "--size", "1MiB", "--cluster", "dgx-h100", "--nodes", "2")
    table = run("collective", *args, "--model", "nccl-table")
    assert table.exit_code == 0, table.output
    assert f"note: {NCCL_TABLE_CHAIN_NOTE}" in table.stdout.splitlines()
    assert f"band: {BORROWED_BAND_NOTE}" in table.stdout.splitlines()
    one = run("collective", "broadcast", "--size", "1MiB", "--cluster", "dgx-h100")
    assert BORROWED_BAND_NOTE not in one.stdout


def test_the_lesson_refuses_nvls_across_nodes_in_one_line():
    result = run(
        "collective", "all_reduce", "--size", "64MiB", "--cluster", "coreweave-hgx-h100",
        "--nodes", "64", "--model", "lesson", "--algorithm", "nvls",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "cannot run 'nvls' across nodes" in lines[0] and "textbook" in lines[0]
    )
