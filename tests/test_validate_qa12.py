"""Validation leftovers: the log reader's refusals (a stray byte, gzip, a wrapped header), the
launch of an nccl-tests run on `collective` (-g, NVLS off) matching `validate compare`, the
textbook NVLS row over a raw link, and the fidelity document's wrapped lines."""

from __future__ import annotations

import gzip
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import NcclTestsParseError, decode_log
from tests._cli import one_line_error, run

REF = Path(__file__).resolve().parents[1] / "costmodel" / "data" / "reference" / "nccl-tests"
LOG_13A = next(REF.glob("13a_*.txt"))
LOG_04A = next(REF.glob("04a_*.txt"))


def _lines() -> list[bytes]:
    return LOG_13A.read_bytes().split(b"\n")


def _header_index(lines: list[bytes]) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(b"#       size"))


# --- the log reader -------------------------------------------------------------------------
def test_a_stray_byte_in_a_comment_is_read_and_said():
    raw = LOG_13A.read_bytes().replace(b"# POSTER:", b"# POSTER \xe9:", 1)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # the log really is not UTF-8
    read = read_log(raw, "x.log", cluster="dgx-h100")
    plain = read_log(LOG_13A.read_bytes(), "x.log", cluster="dgx-h100")
    pd.testing.assert_frame_equal(read.rows, plain.rows)  # the same rows as the clean log
    line = LOG_13A.read_bytes()[: LOG_13A.read_bytes().index(b"# POSTER:")].count(b"\n") + 1
    said = [n for n in read.notices if "not UTF-8" in n]
    assert len(said) == 1 and f"line {line}" in said[0], read.notices


def test_a_stray_byte_in_a_result_row_is_refused_naming_the_line():
    lines = _lines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith(b"1048576 "))
    lines[row] = lines[row].replace(b"float", b"fl\xe9at", 1)
    with pytest.raises(NcclTestsParseError) as info:
        decode_log(b"\n".join(lines), "x.log")
    assert info.value.line == row + 1
    assert "result row" in str(info.value) and "0xe9" in str(info.value)
    # a number damaged by the byte is a row too
    lines = _lines()
    lines[row] = lines[row].replace(b"1048576", b"10\xff8576", 1)
    with pytest.raises(NcclTestsParseError, match="result row"):
        decode_log(b"\n".join(lines), "x.log")


def test_the_cli_reads_a_log_with_a_stray_comment_byte(tmp_path):
    path = tmp_path / "stray.log"
    path.write_bytes(LOG_13A.read_bytes().replace(b"# POSTER:", b"# POSTER \xe9:", 1))
    r = run("validate", "compare", str(path), "--cluster", "dgx-h100", "--gpus-per-node", "4")
    assert r.exit_code == 0, r.stderr
    assert "not UTF-8" in r.stderr and "replaced" in r.stderr


def test_a_gzip_log_is_refused_with_how_to_read_it(tmp_path):
    path = tmp_path / "log.txt.gz"
    path.write_bytes(gzip.compress(LOG_13A.read_bytes()))
    with pytest.raises(NcclTestsParseError, match="gzip-compressed"):
        decode_log(path.read_bytes(), path.name)
    line = one_line_error(
        run("validate", "compare", str(path), "--cluster", "dgx-h100"), "gzip", "gunzip"
    )
    assert "not UTF-8" not in line


@pytest.mark.parametrize("prefix", [b"#  ", b"      "])
def test_a_wrapped_column_header_is_named(prefix):
    lines = _lines()
    i = _header_index(lines)
    head = lines[i]
    cut = head.index(b"time") + len(b"time   algbw   busbw  #wrong")
    lines[i : i + 1] = [head[:cut], prefix + head[cut:].strip()]
    with pytest.raises(ValueError) as info:
        read_log(b"\n".join(lines), "x.log", cluster="dgx-h100")
    text = str(info.value)
    assert f"column header at line {i + 1} looks wrapped" in text, text
    assert f"line {i + 2} continues it" in text
    assert "a cut-off or joined row" not in text


# --- collective with the launch of an nccl-tests run ----------------------------------------
def _compared(tmp_path: Path, reference: str) -> pd.DataFrame:
    out = tmp_path / f"{reference}.csv"
    r = run("validate", "compare", "--reference", reference, "-o", str(out))
    assert r.exit_code in (0, 1) and out.exists(), r.stderr  # 1: the fidelity goal not met
    rows = pd.read_csv(out)
    return rows[rows["predicted_time_s"].notna()].drop_duplicates("size_bytes")


def _collective(*args: str) -> pd.DataFrame:
    r = run("collective", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return pd.DataFrame(json.loads(r.stdout)["results"])


def _sizes(rows: pd.DataFrame) -> str:
    return ",".join(f"{int(s)}B" for s in rows["size_bytes"])


def test_collective_with_gpus_per_process_is_validate_compares_prediction(tmp_path):
    rows = _compared(tmp_path, "13a")  # -g 4: one process drives the 4 GPUs
    assert (rows["gpus_per_process"] == 4).all() and len(rows) > 20
    base = ("all_reduce", "--cluster", "dgx-h100", "--gpus-per-node", "4", "--size", _sizes(rows))
    got = _collective(*base, "--gpus-per-process", "4")
    np.testing.assert_array_equal(got["time_s"], rows["predicted_time_s"])
    assert (got["gpus_per_process"] == 4).all()
    # the option matters: one process per GPU is another prediction (a lower launch floor)
    plain = _collective(*base)
    assert (plain["time_s"].to_numpy() < got["time_s"].to_numpy()).any()


def test_collective_with_nvls_off_is_validate_compares_prediction(tmp_path):
    rows = _compared(tmp_path, "04a")  # NCCL_NVLS_ENABLE=0 on a GB200 NVL72 rack
    assert not rows["nvls"].astype(bool).any()
    base = ("all_reduce", "--cluster", "gb200-nvl72", "--size", _sizes(rows))
    got = _collective(*base, "--no-nvls")
    np.testing.assert_array_equal(got["time_s"], rows["predicted_time_s"])
    assert "nvls" not in set(got["algorithm_used"])
    plain = _collective(*base)  # the preset's NVLS on: NCCL picks it at large sizes
    assert "nvls" in set(plain["algorithm_used"])


def test_collective_launch_options_and_their_ranges():
    one_line_error(
        run(
            "collective",
            "all_reduce",
            "--cluster",
            "dgx-h100",
            "--gpus-per-process",
            "9",
            "--size",
            "1MB",
        ),  # fmt: skip
        "--gpus-per-process",
        "1, 2, 4, 8",
    )
    one_line_error(
        run(
            "collective",
            "all_reduce",
            "--ranks",
            "4",
            "--bandwidth",
            "50GB/s",
            "--no-nvls",
            "--size",
            "1MB",
        ),  # fmt: skip
        "--no-nvls",
        "--cluster",
    )
    r = run("collective", "--help")
    flat = re.sub(r"[\s│]+", " ", r.stdout)
    for words in ("--gpus-per-process", "nccl-tests' -g N", "--nvls / --no-nvls",
                  "NCCL_NVLS_ENABLE", "--collnet / --no-collnet"):  # fmt: skip
        assert words in flat, words
    # --algorithm all takes the launch too: NVLS off leaves nvls out of the candidates
    r = run("collective", "all_reduce", "--cluster", "gb200-nvl72", "--no-nvls", "--size",
            "1GB", "--algorithm", "all", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    algos = {row["algorithm"] for row in json.loads(r.stdout)["results"]}
    assert "nvls" not in algos and "ring" in algos


def test_no_warning_escapes_from_a_clean_log():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_log(LOG_13A.read_bytes(), "x.log")


# --- the textbook nvls row over a raw link --------------------------------------------------
def test_the_link_nvls_winner_says_it_needs_in_switch_reduction():
    from costmodel.collectives import link_hardware_note

    note = link_hardware_note("nvls")
    assert "in-switch reduction" in note and "NVLink SHARP" in note
    assert link_hardware_note("ring") == ""
    r = run("collective", "all_reduce", "--ranks", "8", "--bandwidth", "50GB/s", "--size",
            "1MB,1GB", "--algorithm", "all")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    fastest = [line for line in lines if line.startswith("fastest at")]
    assert len(fastest) == 2 and all("nvls needs in-switch reduction" in f for f in fastest)
    assert lines.count(f"note: {note}") == 1  # the note itself, once
    out = json.loads(
        run(
            "collective",
            "all_reduce",
            "--ranks",
            "8",
            "--bandwidth",
            "50GB/s",
            "--size",
            "1MB",
            "--algorithm",
            "all",
            "--json",
        ).stdout  # fmt: skip
    )
    assert out["fastest"][0]["note"] == note and note in out["notes"]
    # a table without nvls says nothing of it
    r = run("collective", "all_reduce", "--ranks", "8", "--bandwidth", "50GB/s", "--size", "1MB")
    assert "in-switch" not in r.stdout


def test_the_collectives_page_shows_the_same_note():
    from costmodel.collectives import link_hardware_note
    from costmodel.web.common import sentence
    from tests.test_app import assert_clean, metrics, open_page

    link = {"view": "Formulas on one link (alpha-beta)"}
    at = open_page("page_collectives.py", link)
    assert not any("in-switch" in c.value for c in at.caption)  # ring, tree, doubling
    at.multiselect(key="algorithms_all_reduce").set_value(["ring", "nvls"]).run()
    assert_clean(at)
    assert metrics(at)["Fastest by the formulas"] == "nvls"
    captions = [c.value for c in at.caption]
    assert sentence(link_hardware_note("nvls")) in captions, captions


# --- the fidelity report's wrapped lines ------------------------------------------------------
def test_no_line_of_the_fidelity_report_reads_as_a_markdown_quote():
    from tests._paths import ROOT

    for path in (ROOT / "docs" / "fidelity.md", ROOT / "costmodel" / "data" / "fidelity.md"):
        text = path.read_text(encoding="utf-8")
        quoted = [line for line in text.splitlines() if line.lstrip().startswith(">")]
        assert not quoted, (path.name, quoted)
        assert "cells with >= 2\nsources instead" in text  # the line the wrap broke, rewrapped


def test_the_report_writer_joins_a_line_that_would_start_a_quote():
    from tests._paths import load_script

    fit = load_script("fit_corrections")
    text = "Estimated from the cells with\n>= 2 sources instead\n\n| a | b |\n|---|---|\n"
    out = fit._no_quote_lines(text)
    assert out == "Estimated from the cells with >= 2 sources instead\n\n| a | b |\n|---|---|\n"
    assert fit._no_quote_lines("> alone\n") == "> alone\n"  # nothing before it to join to


# --- the Validate page reads a log as the CLI does --------------------------------------------
def test_the_validate_page_reads_a_stray_comment_byte_and_says_it(monkeypatch):
    import streamlit

    from tests.test_app_qa21 import _page

    streamlit.cache_data.clear()
    raw = LOG_13A.read_bytes().replace(b"# POSTER:", b"# POSTER \xe9:", 1)
    page = _page(monkeypatch, "stray.log", raw, "dgx-h100")
    assert any("not UTF-8" in w and "replaced" in w for w in page.warnings), page.warnings
    streamlit.cache_data.clear()


def test_the_validate_page_refuses_a_gzip_log_saying_so():
    from streamlit.testing.v1 import AppTest

    from tests.test_app import WEB, _text

    at = AppTest.from_file(str(WEB / "page_validate.py"), default_timeout=120).run()
    raw = gzip.compress(LOG_13A.read_bytes())
    at.file_uploader(key="val_upload").set_value(("log.txt.gz", raw, "application/gzip")).run()
    errors = [_text(e.value) for e in at.error]
    assert any("gzip" in e and "gunzip" in e for e in errors), errors
