"""The Validate page says what ``validate compare`` says, for the same log and settings: the
median and expected error, the rows nccl-tests' own data check flagged, the parser's findings
(a failure line, columns it does not know, a '#' note after a row), what was assumed (a rank
count from the busbw/algbw ratio), the verdict, and the per-row CSV naming the cluster preset
the rows were predicted on.

Each log goes through the real page (AppTest's file uploader, the bytes a browser sends) and
through the CLI in-process (typer's CliRunner, ``--json`` and text, ``-o`` for the per-row
CSV); the two are compared line by line, never against numbers written here. Odd logs are built
in tmp_path from bundled 06a (its provenance block left out, so it reads as a user's own log);
bundled files are never edited. tests/test_validate_parity.py compares the median error of
every bundled log; tests/test_validate_qa9.py holds the CLI's side of each new warning.
"""

from __future__ import annotations

import io
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.reference import reference_path
from costmodel.web.common import sentence
from costmodel.web.page_validate import FINDINGS
from tests.test_app import WEB, _text, assert_clean, metrics

logging.getLogger("streamlit").setLevel(logging.ERROR)

DATA = Path(__file__).parent / "data"


# --- the two surfaces --------------------------------------------------------------------------
@dataclass
class Cli:
    """What ``validate compare`` said of one log: --json's object, the text run's stdout and
    stderr, and its per-row table (-o)."""

    json: dict
    stdout: str
    stderr: str
    rows: pd.DataFrame

    @property
    def warning_lines(self) -> list[str]:
        return [
            line.removeprefix("costmodel: warning: ")
            for line in self.stderr.splitlines()
            if line.startswith("costmodel: warning: ")
        ]

    def band(self) -> tuple[str, str, str]:
        """(basis, band text, rows within) of the headline's "expected error (BASIS) TEXT: W of
        N rows within it" (rows within: "no band" where the line gives none)."""
        head = next(line for line in self.stdout.splitlines() if line.startswith("median |"))
        m = re.search(
            r"; expected error \((?P<basis>[^)]*)\) (?P<band>.*?)"
            r"(?:: (?P<within>[\d,]+ of [\d,]+) rows? within it)?$",
            head,
        )
        assert m, head
        return m["basis"], m["band"], m["within"] or "no band"


def _cli(path: Path, tmp_path: Path, *args: str) -> Cli:
    out = tmp_path / f"{path.stem}.cli.csv"
    runner = CliRunner()
    base = ["validate", "compare", str(path), *args]
    as_json = runner.invoke(cli.app, [*base, "--json"])
    text = runner.invoke(cli.app, [*base, "-o", str(out)])
    for result in (as_json, text):  # 1: the docs/fidelity.md goal failed
        assert result.exit_code in (0, 1), result.output
    return Cli(json.loads(as_json.stdout), text.stdout, text.stderr, pd.read_csv(out))


@dataclass
class Page:
    at: AppTest
    csvs: dict[str, str]

    @property
    def warnings(self) -> list[str]:
        """Each yellow box's text as shown (Markdown escapes and zero-width spaces removed)."""
        return [_text(w.value).replace("\u200b", "") for w in self.at.warning]

    @property
    def findings(self) -> list[str]:
        """The lines of the "Findings in the log:" box, without its title."""
        boxes = [w for w in self.warnings if w.startswith(FINDINGS)]
        assert len(boxes) <= 1, boxes
        return boxes[0].split("  \n")[1:] if boxes else []

    @property
    def caption(self) -> str:
        return " ".join(_text(c.value) for c in self.at.caption)

    @property
    def verdict(self) -> str:
        (line,) = [
            _text(m.value) for m in self.at.markdown if "docs/fidelity.md goal" in _text(m.value)
        ]
        return line


def _page(
    monkeypatch: pytest.MonkeyPatch, name: str, raw: bytes, cluster: str | None = None, **boxes
) -> Page:
    """The Validate page with ``raw`` uploaded as ``name`` (its cluster set when given, other
    boxes by key), every table's expander opened, and the CSVs its download buttons hold."""
    csvs: dict[str, str] = {}
    real = streamlit.download_button

    def spy(label, data, **kwargs):  # the CSV is made on click: made here, as a click would
        made = data() if callable(data) else data
        csvs[kwargs["file_name"]] = made if isinstance(made, str) else made.decode()
        return real(label, data=made, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", spy)
    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    if cluster is not None:
        at.selectbox(key="val_cluster").set_value(cluster).run()
    for key, value in boxes.items():
        at.radio(key=key).set_value(value).run()
    assert_clean(at)
    assert not at.error, [_text(e.value) for e in at.error]
    for table in ("summary", "comparison"):  # as a user opens each table's expander
        at.session_state[f"table_{table}"] = True
    at.run()
    assert_clean(at)
    return Page(at, csvs)


def _assert_same(page: Page, said: Cli, refused: bool = False) -> None:
    """The page shows what the CLI said: numbers, band, verdict, warnings, findings, assumptions,
    and a per-row CSV with the CLI's errors under the preset the CLI names. ``refused``: the CLI
    refused the log without ``--cluster`` (no preset matches it) and was given the page's
    default; the page says that refusal as one warning more ("No cluster preset matches")."""
    j, m = said.json, metrics(page.at)
    assert page.at.selectbox(key="val_cluster").value == j["cluster"]
    assert m["Median |busbw error|"] == f"{100 * j['median_abs_rel_error']:.1f} %"
    assert m["Rows compared"] == f"{j['predicted']} of {j['rows']}"
    basis, band, within = said.band()
    assert basis == j["expected_error"]["basis"]
    assert m["Expected error"] == band
    assert m["Rows within the expected error"] == within
    assert page.verdict == said.stdout.strip().splitlines()[-1]
    # the reader's notices and the comparison's warnings (flagged rows, rows not predicted):
    # each a yellow box of its own, in the page's sentence form
    for line in j["warnings"]:
        assert sentence(line) in page.warnings, (line, page.warnings)
    assert page.findings == [sentence(f) for f in j["findings"]]
    # nothing more and nothing less than the CLI's warning lines (a preset mismatch, NCCL's
    # socket fallback included): the page gathers the findings in one box
    no_preset = [w for w in page.warnings if w.startswith("No cluster preset matches this log")]
    assert len(no_preset) == refused, page.warnings
    boxes = len(page.warnings) - bool(page.findings) - refused
    assert boxes + len(page.findings) == len(said.warning_lines), (
        page.warnings,
        said.warning_lines,
    )
    for line in j["assumed"]:
        assert line in page.caption, (line, page.caption)
    # the downloaded per-row CSV: the CLI's rows and errors, each naming the preset
    rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
    assert set(rows["cluster"]) == set(said.rows["cluster"]) == {j["cluster"]}
    for column in ("size_bytes", "ranks", "nodes", "rel_error", "predicted_time_s"):
        assert rows[column].tolist() == pytest.approx(said.rows[column].tolist(), nan_ok=True)
    summary = pd.read_csv(io.StringIO(page.csvs["comparison_summary.csv"]))
    assert set(summary["cluster"]) == {j["cluster"]}
    assert len(summary) == len(j["summary"])


# --- bundled logs, as uploaded ----------------------------------------------------------------
@pytest.mark.parametrize(
    "run",
    [
        "13a",  # the page's first view: a clean single-node run
        "06a",  # op from the file name, host lines
        "16a",  # a finding (a launch line), the cluster from the index
        "04b",  # the index's rank count over the log's, a finding
        "13e",  # several runs in one log (GPU count scaling)
        "25e",  # NCCL fell back to sockets: the CLI's warning
    ],
)
def test_a_bundled_log_reads_the_same_on_the_page_and_in_the_cli(run, tmp_path, monkeypatch):
    path = reference_path(run)
    said = _cli(path, tmp_path)
    page = _page(monkeypatch, path.name, path.read_bytes())
    _assert_same(page, said)


def test_the_flagged_rows_warning_and_the_preset_in_the_csv(tmp_path, monkeypatch):
    """tests/data's synthetic log of nccl-tests' -C/-I layouts: every row flagged by its data
    check (``# Out of bounds values : 1 FAILED``, a ``#wrong`` of 3). validate compare warns
    of them; the page compared them with no word. It names no GPU a preset has, so the CLI is
    given the cluster the page opens on."""
    path = DATA / "nccl_tests_synthetic_cputime_iter.txt"
    page = _page(monkeypatch, path.name, path.read_bytes())
    cluster = page.at.selectbox(key="val_cluster").value
    said = _cli(path, tmp_path, "--cluster", cluster)
    (flagged,) = [w for w in said.json["warnings"] if "data check" in w]
    assert sentence(flagged) in page.warnings
    _assert_same(page, said, refused=True)


# --- odd logs, built from bundled 06a ------------------------------------------------------------
def _user_log(tmp_path: Path, name: str = "run_allreduce.log") -> tuple[Path, list[str]]:
    """Bundled 06a (2 x 8 H100, all-reduce) as a user's own log: its provenance block left out,
    nccl-tests' output kept verbatim."""
    lines = reference_path("06a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    body = lines[seps[1] + 1 :]
    path = tmp_path / name
    path.write_text("\n".join(body) + "\n")
    return path, body


def _row_lines(body: list[str]) -> list[int]:
    return [i for i, line in enumerate(body) if line.strip()[:1].isdigit()]


def _failed_mid_sweep(body: list[str]) -> list[str]:
    stop = _row_lines(body)[25]
    return [
        *body[:stop],
        "bm-h100-01: Test NCCL failure common.cu:1279 'unhandled system error (run with "
        "NCCL_DEBUG=INFO for details) / '",
        " .. bm-h100-01 pid 29262: Test failure common.cu:1100",
    ]


def _unknown_columns(body: list[str]) -> list[str]:
    rows, out = set(_row_lines(body)), []
    for i, line in enumerate(body):
        if i in rows:
            f = line.split()
            out.append("  ".join([*f[:9], "12.3", "1.1", *f[9:13], "12.3", "1.1"]))
        elif line.lstrip("# ").startswith("size"):
            out.append(
                (line + "  graph  cpu").replace("#wrong     time", "#wrong  graph  cpu     time")
            )
        elif line.lstrip("# ").startswith("(B)"):
            out.append(line.replace("(GB/s)            (us)", "(GB/s)    (us)  (us)  (us)")
                       + "  (us)  (us)")  # fmt: skip
        else:
            out.append(line)
    return out


def _comment_after_rows(body: list[str]) -> list[str]:
    rows, out = _row_lines(body), list(body)
    out[rows[3]] += "   # after the NIC swap"
    out[rows[12]] += "  #rerun"
    return out


def _no_device_list(body: list[str]) -> list[str]:
    return [line for line in body if "Rank " not in line]


def _wrong_data(body: list[str]) -> list[str]:
    """Two rows whose out-of-place #wrong is not 0, as nccl-tests prints a failed check."""
    rows, out = _row_lines(body), list(body)
    for i in (rows[20], rows[30]):
        f = out[i].split()
        f[8] = "7"
        out[i] = "  ".join(f)
    return out


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_failed_mid_sweep, "nccl-tests reports a failure"),
        (_unknown_columns, "column header names graph, cpu"),
        (_comment_after_rows, "a '#' comment after a result row's fields"),
        (_no_device_list, "ranks = 16 (the rows' busbw/algbw ratio; the log lists no devices)"),
        (_wrong_data, "flagged by the run's own data check (#wrong=7"),
    ],
    ids=["failure-line", "unknown-columns", "comment-after-row", "no-device-list", "wrong-data"],
)
def test_an_odd_log_reads_the_same_on_the_page_and_in_the_cli(edit, said, tmp_path, monkeypatch):
    """Each of the CLI's new lines for an odd log is on the page, in its place: a finding in the
    findings box, an assumption in the caption, a flagged row in a yellow box of its own."""
    path, body = _user_log(tmp_path)
    path.write_text("\n".join(edit(body)) + "\n")
    page = _page(monkeypatch, path.name, path.read_bytes())
    named = CliRunner().invoke(cli.app, ["validate", "compare", str(path), "--json"])
    # a log without its device list names no GPU: the CLI is given the cluster the page opens on
    given = (
        [] if named.exit_code != 2 else ["--cluster", page.at.selectbox(key="val_cluster").value]
    )
    cli_said = _cli(path, tmp_path, *given)
    assert said in cli_said.stderr, cli_said.stderr  # the CLI says it (tests/test_validate_qa9.py)
    shown = " ".join([page.caption, *page.warnings])
    assert said in shown or sentence(said)[:-1] in shown, shown
    _assert_same(page, cli_said, refused=bool(given))


def test_an_in_place_only_table_compares_its_in_place_rows_on_both(tmp_path, monkeypatch):
    """A table whose one block of columns is titled ``in-place``: both surfaces take its rows as
    in-place ones, so the Placement choice (``--placement``) in-place compares them all alike."""
    path, body = _user_log(tmp_path)
    rows, edited = set(_row_lines(body)), []
    for i, line in enumerate(body):
        if i in rows:
            edited.append("  ".join(line.split()[:5] + line.split()[9:]))
        elif "out-of-place" in line:
            edited.append("#" + " " * 62 + "in-place")
        elif line.lstrip("# ").startswith("size"):
            edited.append("#       size         count      type   redop    root     time   "
                          "algbw   busbw #wrong")  # fmt: skip
        elif line.lstrip("# ").startswith("(B)"):
            edited.append("#        (B)    (elements)                               (us)  "
                          "(GB/s)  (GB/s)")  # fmt: skip
        else:
            edited.append(line)
    path.write_text("\n".join(edited) + "\n")
    said = _cli(path, tmp_path, "--placement", "in-place")
    page = _page(monkeypatch, path.name, path.read_bytes(), val_placement="in-place")
    _assert_same(page, said)
    # out-of-place finds no row on either surface, in the same words
    at = page.at
    at.radio(key="val_placement").set_value("out-of-place").run()
    assert_clean(at)
    refused = CliRunner().invoke(
        cli.app, ["validate", "compare", str(path), "--placement", "out-of-place"]
    )
    assert refused.exit_code == 2
    why = refused.stderr.strip().splitlines()[-1].split("no ", 1)[1]
    assert any(why in _text(e.value) for e in at.error), [_text(e.value) for e in at.error]


# --- a calibration, as the page offers one ----------------------------------------------------------
@pytest.fixture
def user_presets(tmp_path, monkeypatch):
    """A presets folder (COSTMODEL_PRESETS) holding a calibration of bundled 06a on its base
    cluster, written by ``costmodel calibrate --cluster``; the page's cached preset list is
    emptied before and after, so it lists the folder only here."""
    folder = tmp_path / "presets"
    (folder / "calibrations").mkdir(parents=True)
    path = reference_path("06a")
    made = CliRunner().invoke(cli.app, ["calibrate", str(path), "--cluster", "dell-xe9680-h100",
                                        "--name", "cal-06a", "-o",
                                        str(folder / "calibrations" / "cal-06a.toml")])  # fmt: skip
    assert made.exit_code == 0, made.output
    monkeypatch.setenv("COSTMODEL_PRESETS", str(folder))
    streamlit.cache_data.clear()
    yield folder / "calibrations" / "cal-06a.toml"
    monkeypatch.delenv("COSTMODEL_PRESETS")
    streamlit.cache_data.clear()


@pytest.mark.parametrize("model", ["nccl", "calibrated"])
def test_a_calibrated_preset_picked_as_the_cluster_gives_the_cli_band(
    model, user_presets, tmp_path, monkeypatch
):
    """The page takes a calibration file too (test_app_qa22.py); one with a base also loads
    as a cluster, which the page lists from the user's presets folder and predicts with. Picked
    there, it says what ``validate compare --cluster NAME --model M`` says: the same errors and
    the same expected error (the calibrated fit's: not the bundled runs' grouped-CV band)."""
    path = reference_path("06a")
    said = _cli(path, tmp_path, "--cluster", "cal-06a", "--model", model)
    page = _page(monkeypatch, path.name, path.read_bytes(), "cal-06a", val_model=model)
    assert said.json["cluster"] == "cal-06a"
    assert "calibrated" in said.band()[1]  # the band says whose error it would be
    _assert_same(page, said)
    # and what it measures: no grouped-CV band where the calibration answers every row (was
    # "expected error (grouped CV) unknown (calibrated fit ...)"), on the CLI and in the help
    # of the page's Expected error box
    assert said.band()[0] == "calibrated model"
    helps = [e.proto.help for e in page.at.metric if e.label == "Expected error"]
    assert len(helps) == 1 and "Basis: calibrated model." in helps[0], helps
