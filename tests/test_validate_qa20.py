"""A QA pass of the validation harness as a cluster engineer runs it (``validate torch``,
``validate compare``, ``calibrate``, ``predict``, ``validate nccl-tests run``), each case a
misreading found by running it and fixed.

Logs are built in tmp_path from bundled runs (their provenance block left out, so each reads as
a user's own log); bundled files are never edited.
"""

from __future__ import annotations

from pathlib import Path

from costmodel.reference import reference_path
from costmodel.validation.fallback import socket_fallback
from costmodel.validation.logread import read_log as _read_log
from tests._cli import run

def read_log(path: Path):
    return _read_log(path.read_bytes(), path.name)


# --- 1. NCCL's socket lines on one node ------------------------------------------------------
#: NCCL_DEBUG=INFO on a one-node box without InfiniBand (a cloud VM, a workstation): NCCL names
#: the socket transport as its network, then connects the node's GPUs over P2P (NVLink)
ONE_NODE_DEBUG = [
    "node01:1275:1275 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>",
    "node01:1275:1275 [0] NCCL INFO NET/IB : No device found.",
    "node01:1275:1275 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>",
    "node01:1275:1275 [0] NCCL INFO Using network Socket",
    "node01:1275:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
]


def _one_node_log(tmp_path: Path, debug: list[str]) -> Path:
    """Bundled 13a (one process driving 4 H100 of one node) with ``debug`` after its device
    list, as NCCL prints its init lines there."""
    lines = reference_path("13a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    out: list[str] = []
    for line in lines[seps[1] + 1 :]:
        out.append(line)
        if line.startswith("#  Rank  3"):
            out.extend(debug)
    path = tmp_path / "h100_allreduce.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_socket_lines_on_one_node_are_no_fallback(tmp_path):
    """A one-node run over NVLink whose NCCL_DEBUG=INFO lines name the socket network (as every
    one-node box without InfiniBand prints them) was told it "looks like NCCL's TCP-socket
    fallback": on one node NCCL's network carries nothing. A connection that did go through the
    socket transport (``via NET/Socket/0``: P2P and shared memory switched off) is still said."""
    path = _one_node_log(tmp_path, ONE_NODE_DEBUG)
    measured = read_log(path).rows
    assert set(measured["nodes"]) == {1}
    assert socket_fallback(measured, "dgx-h100", text=path.read_bytes()) is None
    said = run("validate", "compare", str(path))
    assert said.exit_code == 0, said.output
    assert "socket" not in said.stderr.lower(), said.stderr

    carried = [*ONE_NODE_DEBUG, ONE_NODE_DEBUG[-1].replace("P2P/CUMEM", "NET/Socket/0")]
    path = _one_node_log(tmp_path, carried)
    line = socket_fallback(read_log(path).rows, "dgx-h100", text=path.read_bytes())
    assert line is not None and "TCP-socket fallback" in line
    said = run("validate", "compare", str(path))
    assert [x for x in said.stderr.splitlines() if "TCP-socket fallback" in x], said.stderr

    # across nodes the network lines alone still say it (tests/test_socket_fallback.py)
    df = read_log(reference_path("06a")).rows
    assert socket_fallback(df, None, text="\n".join(ONE_NODE_DEBUG[2:4])) is not None
