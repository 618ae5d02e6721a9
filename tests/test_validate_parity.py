"""One log reader for the app and the CLI: every bundled nccl-tests log uploaded on the Validate
page gives the median busbw error ``validate compare`` prints for the same file and inputs.

The page is driven headless (AppTest) through its file uploader with the file's bytes, as a
browser upload sends them; the CLI runs in-process (typer's CliRunner) with ``--json`` and no
``--cluster``, ``--nodes`` or ``--gpus-per-node``: both surfaces take their defaults, which for
a bundled run are its index entry (costmodel.validation.reference_runs, the one the fit uses),
so the test checks the two surfaces assume the same cluster as well as give the same error.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.reference import reference_dir
from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import is_busbw_table
from tests.test_app import WEB, _text, assert_clean, metrics

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _has_result_rows(text: str) -> bool:
    from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests

    try:
        parse_nccl_tests(text, strict=False)
    except NcclTestsParseError:
        return False
    return True


@functools.cache
def _logs() -> list[Path]:
    """The bundled nccl-tests logs with times (not the busbw-only tables 21a-d, nor 26 and 27,
    which have no nccl-tests result row: a PyTorch-timed write-up and two headline points); the
    same list the Validate page offers (costmodel.web.data.reference_logs). Read when a test
    asks, not when the file is collected (every pytest process collects it)."""
    return sorted(
        p
        for p in reference_dir("nccl-tests").glob("*.txt")
        if not is_busbw_table(p.read_text(errors="replace"))
        and _has_result_rows(p.read_text(errors="replace"))
    )


def _cli_median(*where: str) -> tuple[float, list[str]]:
    """``validate compare WHERE --json``, no cluster, nodes or GPUs per node given."""
    args = ["validate", "compare", *where, "--json", "--tolerance", "100"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code in (0, 1), result.output  # 1: a row beyond the tolerance
    out = json.loads(result.stdout)
    return float(out["median_abs_rel_error"]), out["assumed"]  # "inf" as text in JSON


def _assumed_cluster(assumed: list[str]) -> str:
    """The cluster of the CLI's ``cluster = NAME (where from)`` line."""
    (line,) = [a for a in assumed if a.startswith("cluster = ")]
    return line.split(" = ", 1)[1].split(" ", 1)[0]


def test_every_bundled_log_gives_the_cli_error_on_the_page():
    """Every log: the page's default cluster, reader and headline (the functions the page draws
    with, fed the bytes the uploader gives) against ``validate compare --reference ID --json``
    with no --cluster: both assume the run's own preset from the index, and give one error."""
    from costmodel.reference import reference_id
    from costmodel.validation.reference_runs import run_spec
    from costmodel.web import data, page_validate

    assert len(_logs()) >= 20  # the bundled logs with times (busbw-only tables have none)
    assert {p.name for p in _logs()} == set(data.reference_logs())  # what the page offers
    clusters = data.preset_names("cluster")
    for path in _logs():
        raw, run = path.read_bytes(), run_spec(reference_id(path.name))
        assert run is not None, path.name  # every log the page offers is in the index
        cluster = page_validate._default_cluster(raw, path.name, clusters)
        want, assumed = _cli_median("--reference", reference_id(path.name))
        assert cluster == _assumed_cluster(assumed) == run.preset, path.name
        assert f"cluster = {cluster} (the bundled run's preset)" in assumed
        settings = (None, None, None, "both")  # the page's defaults: everything from the log
        shown = page_validate.median_error_text(
            data.compare_text(raw, path.name, settings, cluster, "nccl")
        )
        assert shown == f"{100 * want:.1f} %", path.name


@pytest.mark.parametrize(
    "prefix", ["02_", "06a_", "13e_", "16b_"]
)  # no host lines; host lines; several runs; no GPU named
def test_uploaded_log_shows_the_cli_error_and_its_assumptions(prefix):
    """Through the real page (AppTest's file uploader), a few logs of each kind, against the
    CLI on the same file with no --cluster: same default cluster, error and assumptions."""
    path = next(p for p in _logs() if p.name.startswith(prefix))
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    raw = path.read_bytes()
    at.file_uploader(key="val_upload").set_value((path.name, raw, "text/plain")).run()
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    want, assumed = _cli_median(str(path))
    assert at.selectbox(key="val_cluster").value == _assumed_cluster(assumed)
    assert metrics(at)["Median |busbw error|"] == f"{100 * want:.1f} %"
    caption = " ".join(_text(c.value) for c in at.caption)
    for line in assumed:  # what the CLI says it assumed, the page says too (cluster included)
        assert line in caption, line


def test_op_from_the_file_name_and_the_band_beside_the_error():
    """The 2 x 8 H100 log (06a): its header names no op; the file name does (5.8 % in the CLI
    then). The page reads it, says where the op came from and shows the expected error."""
    path = next(p for p in _logs() if p.name.startswith("06a_"))
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain"))
    at.run()
    assert_clean(at)
    m = metrics(at)
    assert m["Expected error"].startswith("±") and "from 1 MiB" in m["Expected error"]
    within, rows = (int(x) for x in m["Rows within the expected error"].split(" of "))
    assert 0 < within <= rows
    caption = " ".join(_text(c.value) for c in at.caption)
    assert "op = all_reduce (the file name)" in caption
    assert not at.info  # no "never guessed" box on success: the log states its nodes
    # in-place rows are compared by default, as in the CLI; the out-of-place choice drops them
    both = int(m["Rows compared"].split(" of ")[1])
    at.radio(key="val_placement").set_value("out-of-place").run()
    assert int(metrics(at)["Rows compared"].split(" of ")[1]) == both // 2


def test_an_op_the_log_does_not_name_is_asked_for_then_used():
    path = next(p for p in _logs() if p.name.startswith("24a_"))
    raw = path.read_bytes()
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value(("run.txt", raw, "text/plain")).run()
    assert_clean(at)
    assert any("op" in _text(e.value) and "set the op" in _text(e.value) for e in at.error)
    at.selectbox(key="val_op").set_value("all_reduce").run()
    assert_clean(at)
    assert not at.error
    caption = " ".join(_text(c.value) for c in at.caption)
    assert "op = all_reduce (you set it)" in caption
    # nodes set by hand change what is compared, and say so
    at.number_input(key="val_nodes").set_value(2).run()
    assert "nodes = 2 (you set it)" in " ".join(_text(c.value) for c in at.caption)


def test_reader_refuses_nodes_that_contradict_the_host_lines():
    path = next(p for p in _logs() if p.name.startswith("06a_"))
    with pytest.raises(ValueError, match="nodes: 4 contradicts"):
        read_log(path.read_bytes(), path.name, nodes=4)
    with pytest.raises(ValueError, match="placement"):
        read_log(path.read_bytes(), path.name, placement="sideways")


def test_a_user_log_without_host_lines_says_why_calibration_needs_the_nodes():
    """A log that is not a bundled run (one byte changed, another name) and names no hosts:
    the comparison assumes its nodes from the cluster and says so, and the calibration, which
    never assumes them, says that beside it instead of the API's ``nodes=...`` hint."""
    path = next(p for p in _logs() if p.name.startswith("16a_"))
    raw = path.read_bytes() + b"\n# a copy of the run\n"
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value(("run_all_reduce.txt", raw, "text/plain")).run()
    assert_clean(at)
    caption = " ".join(_text(c.value) for c in at.caption)
    assert "GPUs per node" in caption and "nodes = 2 (ranks / " in caption, caption
    said = [_text(c.value) for c in at.caption if "No calibrated preset" in _text(c.value)]
    assert said == [
        "No calibrated preset: the log does not say how many nodes ran, and a calibration never "
        "uses a node count the comparison above assumed: set Nodes above to fit one."
    ], said
    at.number_input(key="val_nodes").set_value(2).run()  # given, it fits one
    assert not [c for c in at.caption if "No calibrated preset" in _text(c.value)]


def test_an_op_the_rows_cannot_have_is_refused_in_one_line_not_a_pandas_error(tmp_path):
    """An all-gather log whose header names no op, compared as an all-reduce: its rows' rank
    counts cannot be read from the bus/algorithm bandwidth ratio (pandas' NA); the reader
    used to test NA for truth ('boolean value of NA is ambiguous')."""
    path = next(p for p in _logs() if p.name.startswith("24b_"))
    copy = tmp_path / "run.txt"
    copy.write_bytes(path.read_bytes() + b"\n# a copy of the run\n")
    args = ["validate", "compare", str(copy), "--op", "all_reduce", "--cluster", "dgx-h100"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 2, result.output
    assert "ambiguous" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("costmodel: error: ranks: "), line
