"""Socket-fallback detection (costmodel.validation.fallback) on real logs.

25e is ALCF Polaris (8 x 4 A100, Slingshot-11) with NCCL's default setup, which falls back to
TCP sockets (its header); 25b is the same 8 nodes through aws-ofi-nccl (RDMA). Every other
bundled nccl-tests log is a working run and must not be flagged.

The Polaris cluster is the shipped ``alcf-polaris`` preset (4 A100 on NVLink 3, 2 Slingshot-11
NICs of 200 Gb/s per node, as ALCF documents it).
"""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel import presets
from costmodel.cli import app
from costmodel.reference import reference_path, reference_runs
from costmodel.validation.fallback import socket_fallback
from costmodel.validation.nccl_tests import read_nccl_tests
from costmodel.web.common import sentence  # a note as the page says it
from tests._paths import load_script

fc = load_script("fit_corrections")


@pytest.fixture(scope="module")
def polaris(tmp_path_factory):
    """(preset name, presets folder or None): the shipped ALCF Polaris preset."""
    assert "alcf-polaris" in presets.names("cluster")
    return "alcf-polaris", None


def _cluster(polaris):
    name, folder = polaris
    return presets.cluster(name, dirs=[folder] if folder else None)


def _log(prefix: str) -> tuple[pd.DataFrame, str]:
    path = reference_path(prefix)
    return read_nccl_tests(path), path.read_text()


def test_polaris_socket_fallback_is_flagged_and_rdma_is_not(polaris):
    c = _cluster(polaris)
    df, text = _log("25e")
    line = socket_fallback(df, c, text=text)
    assert line is not None and "TCP-socket fallback" in line and "\n" not in line
    assert "3.36 GB/s from 64 MiB on 8 nodes is 7%" in line  # of 2 x 200 Gb/s = 50 GB/s
    df, text = _log("25b")  # the same 8 nodes through aws-ofi-nccl: 36 GB/s
    assert socket_fallback(df, c, text=text) is None
    # without a cluster the profile cannot be judged (no NIC bound): no claim either way
    assert socket_fallback(read_nccl_tests(reference_path("25e")), None) is None


def test_nccl_debug_lines_naming_the_socket_transport():
    df, text = _log("06a")  # a working 2 x 8 H100 NDR run
    assert socket_fallback(df, "dell-xe9680-h100", text=text) is None
    # the same rows with NCCL_DEBUG=INFO lines of the socket transport in use
    debug = "node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    line = socket_fallback(df, "dell-xe9680-h100", text=debug + text)
    assert line is not None and "NET/Socket" in line
    line = socket_fallback(df, None, text=b"n1:1:1 [0] NCCL INFO Using network Socket\n")
    assert line is not None


def _specs() -> dict[str, object]:
    return {s.prefix: s for s in fc.RUNS}


def test_no_false_positive_on_any_bundled_log(polaris):
    """Every bundled nccl-tests log but 25e, with its preset and its node count (from the run's
    description where the log has no host lines), is not flagged."""
    specs = _specs()
    checked = 0
    for name in reference_runs("nccl-tests"):
        prefix = name.split("_")[0]
        if prefix == "25e":
            continue
        path = reference_path(name)
        spec = specs.get(prefix)
        if prefix.startswith("25") and spec is None:
            cluster = _cluster(polaris)
        elif spec is None or spec.busbw_only or spec.torch_table:
            # busbw-only tables (21a-d) and points files have no node count to judge; a
            # PyTorch-timed table (26) is not an nccl-tests log
            continue
        else:
            cluster = presets.cluster(spec.preset)
        df = read_nccl_tests(path)
        if spec is not None and spec.nodes and df["nodes"].isna().any():
            df["nodes"] = df["nodes"].fillna(spec.nodes)
        if spec is not None and spec.ranks:
            df["ranks"] = spec.ranks
        assert socket_fallback(df, cluster, text=path.read_text()) is None, name
        checked += 1
    assert checked >= 30


def test_validate_compare_says_so_in_one_line(polaris, monkeypatch):
    name, folder = polaris
    if folder is not None:
        monkeypatch.setenv(presets.ENV_VAR, str(folder))
    runner = CliRunner()
    args = ["validate", "compare", "--reference", "25e", "--cluster", name, "--tolerance", "100"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    hits = [ln for ln in out.output.splitlines() if "TCP-socket fallback" in ln]
    assert len(hits) == 1 and hits[0].startswith("costmodel: warning: looks like NCCL's TCP-socket")
    args[3] = "25b"
    out = runner.invoke(app, args)
    assert out.exit_code == 0 and "socket" not in out.output.lower(), out.output


def test_validate_page_shows_the_same_line():
    """The Validate page calls the same function: an uploaded log whose NCCL debug lines name
    the socket transport gets the warning; the same log without them does not."""
    from tests.test_app import assert_clean, open_page

    name = "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"
    text = reference_path("06a").read_bytes()
    debug = b"node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"

    def warnings_of(content: bytes) -> list[str]:
        at = open_page("page_validate.py")
        at.file_uploader(key="val_upload").set_value((name, content, "text/plain")).run()
        assert_clean(at)
        return [str(w.value) for w in at.warning if "socket" in str(w.value).lower()]

    (line,) = warnings_of(debug + text)
    expected = socket_fallback(read_nccl_tests(reference_path("06a")), None, text=debug)
    assert expected is not None
    assert line.replace("\\", "") == sentence(expected)  # Markdown-escaped, as a sentence
    assert warnings_of(text) == []
