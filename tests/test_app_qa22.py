"""The Validate page takes a calibration file, as ``validate compare LOG --calibration FILE``
does: an optional uploader under the log's predicts with the calibration's fits and shows the
calibration's own held-out error as the expected error, with the CLI's numbers, band, rows
within, verdict and warnings; a file that is not a calibration gets one red message naming the
box.

The calibration is made in tmp_path by ``costmodel calibrate`` (no --cluster: alpha-beta fits)
on a bundled log; the log and the calibration go through the real page (AppTest's uploaders)
and through the CLI in-process (``--json`` and text), compared with each other, never against
numbers written here. Bundled files are never edited.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.reference import reference_path
from costmodel.web.common import sentence
from costmodel.web.page_validate import CALIBRATION_BOX
from tests.test_app import WEB, _text, assert_clean, metrics
from tests.test_app_qa21 import Cli, Page, _cli

logging.getLogger("streamlit").setLevel(logging.ERROR)


@pytest.fixture
def calibration(tmp_path):
    """A calibration of bundled 06a's rows alone (``costmodel calibrate`` without --cluster:
    its alpha-beta fits predict, no preset), as ``cal.toml`` in tmp_path; the page's caches are
    emptied before and after."""
    cal = tmp_path / "cal.toml"
    made = CliRunner().invoke(cli.app, ["calibrate", str(reference_path("06a")), "-o", str(cal)])
    assert made.exit_code == 0, made.output
    streamlit.cache_data.clear()
    yield cal
    streamlit.cache_data.clear()


def _page(monkeypatch: pytest.MonkeyPatch, log: Path, cal_name: str, cal: bytes) -> Page:
    """The Validate page with ``log`` and the calibration bytes uploaded (as ``cal_name``),
    every table's expander opened, and the CSVs its download buttons hold."""
    csvs: dict[str, str] = {}
    real = streamlit.download_button

    def spy(label, data, **kwargs):  # the CSV is made on click: made here, as a click would
        made = data() if callable(data) else data
        csvs[kwargs["file_name"]] = made if isinstance(made, str) else made.decode()
        return real(label, data=made, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", spy)
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value((log.name, log.read_bytes(), "text/plain")).run()
    at.file_uploader(key="val_calibration").set_value((cal_name, cal, "application/toml")).run()
    assert_clean(at)
    for table in ("summary", "comparison"):  # as a user opens each table's expander
        at.session_state[f"table_{table}"] = True
    at.run()
    assert_clean(at)
    return Page(at, csvs)


@pytest.mark.parametrize("run", ["06a", "25e"])  # its own log; another (a socket fallback)
def test_an_uploaded_calibration_predicts_as_validate_compare_calibration(
    run, calibration, tmp_path, monkeypatch
):
    log = reference_path(run)
    said: Cli = _cli(log, tmp_path, "--calibration", str(calibration))
    page = _page(monkeypatch, log, calibration.name, calibration.read_bytes())
    assert not page.at.error, [_text(e.value) for e in page.at.error]
    j, m = said.json, metrics(page.at)
    assert j["cluster"] == "calibration cal.toml"  # a calibration's, not a preset's
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    assert m["Rows compared"] == f"{j['predicted']} of {j['rows']}"
    basis, band, within = said.band()
    assert basis == j["expected_error"]["basis"] == "the calibration's held-out sizes"
    assert m["Expected error"] == band
    assert m["Rows within the expected error"] == within
    helps = [e.proto.help for e in page.at.metric if e.label == "Expected error"]
    assert len(helps) == 1 and helps[0].startswith(f"Basis: {basis}."), helps
    assert page.verdict == said.stdout.strip().splitlines()[-1]
    # the CLI's warnings, each a yellow box in the page's sentence form, none more
    for line in j["warnings"]:
        assert sentence(line) in page.warnings, (line, page.warnings)
    assert page.findings == [sentence(f) for f in j["findings"]]
    boxes = len(page.warnings) - bool(page.findings)
    assert boxes + len(page.findings) == len(said.warning_lines), (
        page.warnings,
        said.warning_lines,
    )
    for line in j["assumed"]:  # what was assumed; no cluster, as the CLI says none
        assert line in page.caption, (line, page.caption)
    assert "cluster =" not in page.caption
    assert "Predicted with calibration cal.toml" in page.caption
    # the per-row CSV: the CLI's rows and errors, named as the CLI's are
    rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
    assert set(rows["cluster"]) == set(said.rows["cluster"]) == {j["cluster"]}
    for column in ("size_bytes", "ranks", "nodes", "rel_error", "predicted_time_s"):
        assert rows[column].tolist() == pytest.approx(said.rows[column].tolist(), nan_ok=True)
    summary = pd.read_csv(io.StringIO(page.csvs["comparison_summary.csv"]))
    assert set(summary["cluster"]) == {j["cluster"]} and len(summary) == len(j["summary"])


def test_the_calibration_is_what_predicts(calibration, tmp_path, monkeypatch):
    """Without the file the page predicts on a preset (grouped-CV band); with it, on the
    calibration: a different prediction, so the upload is not ignored."""
    log = reference_path("25e")
    preset = _cli(log, tmp_path)
    page = _page(monkeypatch, log, calibration.name, calibration.read_bytes())
    assert preset.band()[0] != "the calibration's held-out sizes"
    rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
    assert rows["predicted_time_s"].tolist() != pytest.approx(
        preset.rows["predicted_time_s"].tolist(), nan_ok=True
    )


@pytest.mark.parametrize(
    "content",
    [
        b"this is = = not toml\n",  # unreadable TOML
        b'name = "x"\nkind = "cluster"\n',  # TOML, not a calibration
    ],
)
def test_a_bad_calibration_gets_one_red_message_naming_the_box(
    content, calibration, tmp_path, monkeypatch
):
    log = reference_path("13a")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(content)
    page = _page(monkeypatch, log, "bad.toml", content)
    errors = [_text(e.value) for e in page.at.error]
    assert len(errors) == 1, errors
    (error,) = errors
    assert error.replace("**", "").startswith(f"{CALIBRATION_BOX}: bad.toml: "), error
    assert "\n" not in error.strip() and "/tmp" not in error, error
    assert not page.at.metric  # no comparison made with a preset instead
    # the CLI refuses the same file, in one line naming its flag
    refused = CliRunner().invoke(
        cli.app, ["validate", "compare", str(log), "--calibration", str(bad)]
    )
    assert refused.exit_code == 2
    assert (
        refused.stderr.strip().splitlines()[-1].split("--calibration: ")[1].split(": ", 1)[1]
        in error
    )
