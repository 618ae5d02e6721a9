"""The Validate page reads the validation harness's results file (``.jsonl``) with the reader
``validate compare`` uses (logread.read_results), and predicts a bundled reference run with an
uploaded calibration, as ``validate compare --reference ID --calibration FILE`` does.

Every file goes through the real page (AppTest's uploaders, the bytes a browser sends) and
through the CLI in-process; the two are compared with each other, never with numbers written
here. The files are real measurements: a bundled log's rows as the runner writes them, and a
gloo run of the harness on this machine's CPUs (tests/test_validate_qa10.py, marked as the
other torch tests are). Every input the page does not use for a file says so on the page.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from costmodel.reference import reference_id, reference_path
from costmodel.web.page_validate import CALIBRATION_BOX, RESULTS_BOXES
from tests._cli import run
from tests.test_app import WEB, _text, assert_clean, metrics
from tests.test_app_qa21 import Page, _assert_same, _cli
from tests.test_validate_qa10 import bundled_results, calibration_of

logging.getLogger("streamlit").setLevel(logging.ERROR)

REFERENCE = "06a"  # a bundled run the page lists (timed rows)


@pytest.fixture(autouse=True)
def _fresh_caches():
    streamlit.cache_data.clear()
    yield
    streamlit.cache_data.clear()


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The CSVs the page's download buttons hold, made as a click would make them."""
    csvs: dict[str, str] = {}
    real = streamlit.download_button

    def spy(label, data, **kwargs):
        made = data() if callable(data) else data
        csvs[kwargs["file_name"]] = made if isinstance(made, str) else made.decode()
        return real(label, data=made, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", spy)
    return csvs


def _open_tables(at: AppTest, *tables: str) -> None:
    for table in ("summary", "comparison", *tables):  # as a user opens each table's expander
        at.session_state[f"table_{table}"] = True
    at.run()
    assert_clean(at)


def _errors(at: AppTest) -> list[str]:
    return [_text(e.value).replace("**", "") for e in at.error]


def _upload(monkeypatch, path: Path, cal: Path | None = None, **boxes) -> Page:
    """The page with ``path`` in the log uploader (and ``cal`` in the calibration box), the
    select boxes of ``boxes`` set by key, every table opened."""
    csvs = _spy(monkeypatch)
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain"))
    at.run()
    for key, value in boxes.items():
        at.selectbox(key=key).set_value(value).run()
    if cal is not None:
        at.file_uploader(key="val_calibration").set_value(
            (cal.name, cal.read_bytes(), "application/toml")
        ).run()
    assert_clean(at)
    _open_tables(at, "ddp_steps")
    return Page(at, csvs)


def _caption(at: AppTest) -> str:
    return " ".join(_text(c.value) for c in at.caption)


def _same_rows(page: Page, cli_rows: pd.DataFrame) -> None:
    rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
    assert len(rows) == len(cli_rows)
    for column in ("size_bytes", "ranks", "rel_error", "predicted_time_s"):
        assert rows[column].tolist() == pytest.approx(cli_rows[column].tolist(), nan_ok=True)
    assert set(rows["cluster"]) == set(cli_rows["cluster"])


# --- a results file of GPU rows ----------------------------------------------------------------
def test_a_results_file_reads_the_same_on_the_page_and_in_the_cli(tmp_path, monkeypatch):
    """Bundled 06a as the runner writes it: the page picks the cluster the rows point to and
    shows validate compare's numbers, band, verdict, warnings and rows; the Op and GPUs per
    node boxes say they are not used."""
    results = bundled_results(tmp_path, REFERENCE)
    said = _cli(results, tmp_path)
    page = _upload(monkeypatch, results)
    assert not page.at.error, _errors(page.at)
    _assert_same(page, said)
    assert RESULTS_BOXES in _caption(page.at)


def test_a_results_file_named_like_a_bundled_run_keeps_its_rows_cluster(tmp_path, monkeypatch):
    """A log named with a bundled run's short id opens on that run's preset; a results file's
    rows name their own device, and validate compare reads the cluster from them."""
    rows = bundled_results(tmp_path, REFERENCE)
    named = rows.rename(tmp_path / "16a_results.jsonl")  # 16a: another machine's bundled run
    said = _cli(named, tmp_path)
    page = _upload(monkeypatch, named)
    assert not page.at.error, _errors(page.at)
    assert page.at.selectbox(key="val_cluster").value == said.json["cluster"]
    _assert_same(page, said)


def test_the_op_box_does_not_change_a_results_file_and_says_so(tmp_path, monkeypatch):
    results = bundled_results(tmp_path, REFERENCE)
    said = _cli(results, tmp_path, "--op", "broadcast")  # the CLI's --op: not used either
    page = _upload(monkeypatch, results, val_op="broadcast")
    assert not page.at.error, _errors(page.at)
    m, j = metrics(page.at), said.json
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    assert RESULTS_BOXES in _caption(page.at)
    assert "Op" in RESULTS_BOXES and "GPUs per node" in RESULTS_BOXES


def _refused_by_cli_and_page(results):
    """(the CLI's refusal of ``validate compare RESULTS``, exit 2; the page after the same
    upload; its one red line)."""
    refused = run("validate", "compare", str(results))
    assert refused.exit_code == 2
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value((results.name, results.read_bytes(), "x")).run()
    assert_clean(at)
    (error,) = _errors(at)
    return refused, at, error


def test_rows_of_two_gpus_get_the_clis_refusal_in_one_red_line(tmp_path, monkeypatch):
    results = bundled_results(tmp_path, REFERENCE, "02")
    refused, at, error = _refused_by_cli_and_page(results)
    assert "\n" not in error.strip() and "/tmp" not in error, error
    assert error.startswith("Log file: Cluster it ran on: the rows ran on several devices")
    why = refused.stderr.split("--cluster: ", 1)[1].split(", which")[0]
    assert why in error, (why, error)
    assert not at.metric


# --- a reference run with a calibration --------------------------------------------------------
@pytest.fixture
def calibration(tmp_path) -> Path:
    """A calibration of the reference run's rows (``costmodel calibrate`` without --cluster:
    alpha-beta fits of each level it measured)."""
    return calibration_of(reference_path(REFERENCE), tmp_path)


def _reference(monkeypatch, cal: Path | None = None, content: bytes | None = None) -> Page:
    """The page on the reference run, its calibration box opened at the page's end and
    ``cal`` (or ``content`` under cal's name) uploaded there."""
    csvs = _spy(monkeypatch)
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.radio(key="val_source").set_value("reference").run()
    name = next(o for o in at.selectbox(key="val_reference").options if o.startswith(REFERENCE))
    at.selectbox(key="val_reference").set_value(name).run()
    assert_clean(at)
    # the first view has no calibration uploader (tests/test_first_view.py): a closed box
    assert not at.get("file_uploader")
    assert len([e for e in at.expander if "calibration TOML" in e.label]) == 1
    at.session_state["val_calibration_open"] = True
    at.run()
    assert [u.label for u in at.get("file_uploader")] == [
        f"{CALIBRATION_BOX} (optional; from costmodel calibrate)"
    ]
    if cal is not None:
        data = cal.read_bytes() if content is None else content
        at.file_uploader(key="val_calibration").set_value((cal.name, data, "application/toml"))
        at.run()
    assert_clean(at)
    _open_tables(at)
    return Page(at, csvs)


def test_a_reference_run_is_predicted_with_an_uploaded_calibration(
    calibration, tmp_path, monkeypatch
):
    said = _cli(reference_path(REFERENCE), tmp_path, "--calibration", str(calibration))
    cli_json = run(
        "validate", "compare", "--reference", reference_id(reference_path(REFERENCE).name),
        "--calibration", str(calibration), "--json",
    )  # fmt: skip
    assert cli_json.exit_code in (0, 1), cli_json.output
    # --reference ID reads the bundled file as its path does: the page's reference run
    assert json.loads(cli_json.stdout)["median_abs_rel_error"] == said.json["median_abs_rel_error"]
    page = _reference(monkeypatch, calibration)
    assert not page.at.error, _errors(page.at)
    j, m = said.json, metrics(page.at)
    assert j["cluster"] == "calibration cal.toml"
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    assert m["Rows compared"] == f"{j['predicted']} of {j['rows']}"
    basis, band, within = said.band()
    assert basis == "the calibration's held-out sizes"
    assert (m["Expected error"], m["Rows within the expected error"]) == (band, within)
    assert page.verdict == said.stdout.strip().splitlines()[-1]
    assert "Predicted with calibration cal.toml" in page.caption
    for line in j["assumed"]:  # the bundled run's nodes and GPUs per node, as the CLI's
        assert line in page.caption, (line, page.caption)
    _same_rows(page, said.rows)


def test_removing_the_calibration_goes_back_to_the_preset(calibration, tmp_path, monkeypatch):
    preset = _cli(reference_path(REFERENCE), tmp_path)
    page = _reference(monkeypatch, calibration)
    assert "Predicted with calibration" in page.caption
    page.at.file_uploader(key="val_calibration").set_value(None).run()
    assert_clean(page.at)
    m = metrics(page.at)
    assert "Predicted with calibration" not in _caption(page.at)
    assert m["Median |busbw error|"] == f"{100 * preset.json['median_abs_rel_error']:.1f} %"
    assert m["Expected error"] == preset.band()[1]


def test_a_bad_calibration_for_a_reference_run_is_one_red_line(calibration, monkeypatch):
    page = _reference(monkeypatch, calibration, content=b'name = "x"\nkind = "cluster"\n')
    (error,) = _errors(page.at)
    assert error.startswith(f"{CALIBRATION_BOX}: cal.toml: "), error
    assert "\n" not in error.strip() and "/tmp" not in error, error
    assert not page.at.metric  # no comparison with a preset instead
    assert page.at.get("file_uploader")  # the box to remove it from is still there


# --- the harness's gloo path -------------------------------------------------------------------
@pytest.fixture(scope="module")
def gloo(gloo_run) -> tuple[Path, Path]:
    """(results file, its calibration) of one real gloo run, the session's (tests/conftest.py:
    tests/test_validate_qa10.py reads the same run)."""
    return gloo_run


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_gloo_results_need_a_calibration_and_then_read_as_the_cli(gloo, tmp_path, monkeypatch):
    """A real `validate torch` gloo file: without a calibration the page refuses it in the
    CLI's words (one red line naming the Cluster and Calibration boxes); with one it shows the
    CLI's numbers, rows and DDP steps."""
    results, cal = gloo
    refused, at, error = _refused_by_cli_and_page(results)
    assert error.startswith("Log file: Cluster it ran on: the rows ran on CPUs (gloo)"), error
    assert error.endswith("(the Calibration TOML box)"), error
    assert not at.metric

    said = _cli(results, tmp_path, "--calibration", str(cal))
    page = _upload(monkeypatch, results, cal)
    assert not page.at.error, _errors(page.at)
    j, m = said.json, metrics(page.at)
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    assert m["Rows compared"] == f"{j['predicted']} of {j['rows']}"
    assert (m["Expected error"], m["Rows within the expected error"]) == said.band()[1:]
    assert page.verdict == said.stdout.strip().splitlines()[-1]
    _same_rows(page, said.rows)
    steps = pd.read_csv(io.StringIO(page.csvs["ddp_steps.csv"]))
    cli_steps = pd.DataFrame(j["ddp_steps"])
    assert len(steps) == len(cli_steps) > 0
    for column in ("time_s", "predicted_step_s", "step_time_rel_error"):
        # null in the CLI's JSON is NaN on the page (a step the fit cannot predict)
        said = pd.to_numeric(cli_steps[column]).tolist()
        assert pd.to_numeric(steps[column]).tolist() == pytest.approx(said, nan_ok=True)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_gloo_results_against_a_chosen_preset_read_as_the_clis_cluster(gloo, tmp_path, monkeypatch):
    """A preset picked in the Cluster box is the CLI's --cluster: compared, with the CLI's
    warning that CPU rows are not that cluster's, and its DDP steps predicted on it."""
    results, _ = gloo
    said = _cli(results, tmp_path, "--cluster", "dgx-a100")
    page = _upload(monkeypatch, results, val_cluster="dgx-a100")
    assert not page.at.error, _errors(page.at)
    j, m = said.json, metrics(page.at)
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    (mismatch,) = [w for w in said.warning_lines if "does not match" in w]
    assert any("ran on CPUs (gloo)" in w for w in page.warnings), page.warnings
    assert "ran on CPUs (gloo)" in mismatch
    _same_rows(page, said.rows)
    steps = pd.read_csv(io.StringIO(page.csvs["ddp_steps.csv"]))
    assert steps["predicted_step_s"].tolist() == pytest.approx(
        pd.DataFrame(j["ddp_steps"])["predicted_step_s"].tolist()
    )
