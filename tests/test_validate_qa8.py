"""Eighth QA pass of the validation harness: one meaning of "error" (the busbw error) in
calibrate, validate compare and their reports; user presets and the runner's runs.jsonl decoded
as every other file the harness reads; --check-from's bound printed as the user gave it. Each
test names the defect it guards against; tests/test_validate_qa.py to _qa7.py hold the earlier
passes."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from costmodel import presets
from costmodel.presets import PresetError
from tests._cli import one_line_error, run


# --- 1. one meaning of "error" ---------------------------------------------------------------
def _off_line_rows() -> pd.DataFrame:
    """All-reduce on 2 ranks on an alpha-beta line (alpha 20 us, B 10 GB/s), sizes 64 KiB to
    64 MiB, with the 8 MiB row measured 17x slower than the line: the fit cannot follow it, so
    its prediction there is about 0.06x the measured time."""
    sizes = [2.0**k for k in range(16, 27)]
    times = [2 * 20e-6 + m / 10e9 for m in sizes]
    times[sizes.index(2.0**23)] *= 17.0
    return pd.DataFrame(
        {"op": "all_reduce", "size_bytes": sizes, "ranks": 2, "nodes": 1, "time_s": times}
    )


def test_one_row_reads_the_same_error_in_calibrate_and_compare():
    """calibrate's residuals and fit statistics were time errors ((t_fit - t_meas) / t_meas), while
    validate compare reports the busbw error (busbw_pred / busbw_meas - 1 = t_meas / t_pred - 1):
    a row predicted at 0.06x its time read -94 % in one and +1567 % in the other, both labelled
    rel_error. Both are the busbw error now: the same row through calibrate and through compare
    with that calibration gives the same number under the same name, and the fit's
    max_abs_rel_error is compare's largest |rel_error|."""
    from costmodel.validation.calibrate import calibrate, calibrated_predictor
    from costmodel.validation.compare import busbw_rel_error, compare, summarize

    rows = _off_line_rows()
    cal = calibrate(rows, name="off-line")
    residuals = cal.residuals.sort_values("size_bytes").reset_index(drop=True)
    compared = compare(rows, calibrated_predictor(cal)).sort_values("size_bytes")
    compared = compared.reset_index(drop=True)
    assert residuals["rel_error"].to_numpy() == pytest.approx(compared["rel_error"].to_numpy())
    off = residuals["size_bytes"] == 2.0**23
    ratio = float(residuals.loc[off, "measured_time_s"].iloc[0]) / float(
        residuals.loc[off, "fitted_time_s"].iloc[0]
    )
    assert ratio > 10  # the row the line cannot follow: predicted far below its time
    assert float(residuals.loc[off, "rel_error"].iloc[0]) == pytest.approx(ratio - 1)
    # the time error is kept, named so, and agrees with compare's time_rel_error
    assert float(residuals.loc[off, "time_rel_error"].iloc[0]) == pytest.approx(1 / ratio - 1)
    assert residuals["time_rel_error"].to_numpy() == pytest.approx(
        compared["time_rel_error"].to_numpy()
    )
    fit = cal.fits[0]
    assert fit.max_abs_rel_error == pytest.approx(compared["rel_error"].abs().max())
    assert fit.max_abs_rel_error == pytest.approx(summarize(compared)["max_abs_rel_error"].max())
    assert fit.rms_rel_error == pytest.approx(((compared["rel_error"] ** 2).mean()) ** 0.5)
    # held-out sizes: the busbw error of the half fit, so >= -1 and uncapped above
    cv = residuals["cv_rel_error"].dropna()
    assert (cv >= -1).all() and fit.cv_max_abs_rel_error == pytest.approx(cv.abs().max())
    assert busbw_rel_error(1.0, 0.06) == pytest.approx(1 / 0.06 - 1)


def test_calibrate_and_compare_print_the_same_error_under_the_same_label(tmp_path):
    """The CLI: `calibrate --json` fits' max_abs_rel_error equals `validate compare
    --calibration --json`'s largest max_abs_rel_error, and the text tables print the same
    figure under the same column name; calibrate says which error it is."""
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(json.dumps(r) + "\n" for r in _off_line_rows().to_dict(orient="records"))
    )
    toml = tmp_path / "cal.toml"
    cal = run("calibrate", str(results), "-o", str(toml), "--json")
    assert cal.exit_code == 0, cal.stderr
    fitted = json.loads(cal.stdout)["fits"][0]["max_abs_rel_error"]
    cmp = run("validate", "compare", str(results), "--calibration", str(toml), "--json")
    assert cmp.exit_code in (0, 1), cmp.stderr  # the goal fails on such a row: exit 1
    summary = json.loads(cmp.stdout)["summary"]
    assert max(r["max_abs_rel_error"] for r in summary) == pytest.approx(fitted)
    assert fitted > 10  # the busbw error of the off row, not the -94 % time error

    shown = f"{100 * fitted:.1f}%"
    text = run("calibrate", str(results), "-o", str(toml))
    assert text.exit_code == 0, text.stderr
    header = text.stdout.splitlines()[0].split()
    assert "max_abs_rel_error" in header and "rms_rel_error" in header
    assert shown in text.stdout
    assert "busbw_fit / busbw_meas - 1" in text.stdout  # which error, said once
    compared = run("validate", "compare", str(results), "--calibration", str(toml))
    assert "max_abs_rel_error" in compared.stdout.splitlines()[0].split()
    assert shown in compared.stdout


def test_ddp_step_error_is_named_time_error():
    """A DDP step has no busbw: its error is the time error. It was printed as a bare "error"
    column and stored as step_rel_error beside the busbw rel_error; it is time_error in the text
    and step_time_rel_error in the data (and --json), never a plain "error"."""
    from costmodel.validation.compare import DDP_COLUMNS

    assert "step_time_rel_error" in DDP_COLUMNS and "step_rel_error" not in DDP_COLUMNS


def test_the_ddp_step_error_is_printed_as_time_error(tmp_path):
    """The text table's bare "error" column (the time error, beside a collective table whose
    rel_error is the busbw error) is "time_error" now; --json and the report carry
    step_time_rel_error, the report as a percentage under its definition."""
    from tests.test_validate_qa import _torch_results

    results = tmp_path / "ddp.jsonl"
    _torch_results(results, collectives=False)
    report = tmp_path / "r.html"
    args = ("validate", "compare", str(results), "--cluster", "dgx-h100")
    text = run(*args, "--report", str(report))
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("DDP steps"))
    assert "time_error = predicted / measured step time - 1" in lines[head]
    assert lines[head + 1].split()[-1] == "time_error"
    assert "error" not in lines[head + 1].split()
    steps = json.loads(run(*args, "--json").stdout)["ddp_steps"]
    assert all("step_time_rel_error" in s and "step_rel_error" not in s for s in steps)
    table = report.read_text().split("DDP step: measured vs predicted", 1)[1]
    table = table.split("</table>", 1)[0]
    assert (
        "the time error: a step has no busbw" in table and "<th>step_time_rel_error</th>" in table
    )
    shown = [f"{100 * s['step_time_rel_error']:+.1f}%" for s in steps]
    assert all(f"<td>{v}</td>" in table for v in shown), (shown, table)


def test_the_report_shows_errors_as_compare_prints_them(tmp_path):
    """`validate compare --report`'s summary table printed the errors as bare fractions (0.127)
    with no definition, while the CLI prints 12.7 % under "median |busbw error|"; its chart was
    titled "Prediction error vs size". The table now shows percentages (signed for the mean,
    unsigned for magnitudes) under the busbw error's definition with the CLI's headline (median
    |busbw error| over the rows), and the chart says busbw."""
    results = _results(tmp_path)
    report = tmp_path / "r.html"
    args = ("validate", "compare", str(results), "--cluster", "dgx-h100")
    text = run(*args, "--report", str(report)).stdout
    summary = json.loads(run(*args, "--json").stdout)["summary"]
    html = report.read_text()
    # the CLI's headline, the same words and figure in the report
    headline = next(x for x in text.splitlines() if x.startswith("median |busbw error|"))
    assert f"<p><b>{headline.split(';')[0]}</b></p>" in html
    assert "rel_error = busbw predicted / measured - 1 (the busbw error" in html
    assert "Busbw error vs size" in html and "Prediction error vs size" not in html
    for row in summary:
        assert f"<td>{100 * row['median_abs_rel_error']:.1f}%</td>" in html
        assert f"<td>{100 * row['mean_rel_error']:+.1f}%</td>" in html


# --- 2. user presets and runs.jsonl through costmodel.textfile ---------------------------------
def _user_link(root: Path) -> str:
    """A user link preset (the shipped ib-ndr renamed), its TOML text."""
    text = presets.to_toml(presets.load("ib-ndr")).replace('name = "ib-ndr"', 'name = "my-nic"')
    (root / "links").mkdir(parents=True, exist_ok=True)
    return text


@pytest.mark.parametrize(
    ("encoding", "guessed"),
    [("utf-16", False), ("utf-8-sig", False), ("utf-32", False), ("utf-16-le", True)],
)
def test_a_user_preset_in_utf16_loads(tmp_path, monkeypatch, encoding, guessed):
    """A preset saved by Windows PowerShell 5 (UTF-16 with its mark) or Notepad (UTF-8 with a
    mark) was refused ("cannot read: 'utf-8' codec can't decode byte 0xff"), while the logs,
    results and calibrations beside it read; it loads now, from --presets-dir / dirs= and from
    COSTMODEL_PRESETS, and UTF-16 without a mark is read with a warning naming the file."""
    text = _user_link(tmp_path)
    path = tmp_path / "links" / "my-nic.toml"
    path.write_bytes(text.encode(encoding))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert presets.load("my-nic", dirs=[tmp_path]).kind == "infiniband"
        monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
        assert presets.load("my-nic").kind == "infiniband"
    said = [str(w.message) for w in caught]
    if guessed:
        assert said and all("my-nic.toml" in s and "UTF-16 LE" in s for s in said), said
    else:
        assert not said, said


def test_an_undecodable_user_preset_names_the_file_and_the_byte(tmp_path):
    """A Latin-1 preset (an accented description) read "cannot read: 'utf-8' codec can't decode
    byte 0xe9 in position ...: invalid continuation byte", Python's words; now the file, the
    byte, its offset and the fix, as a log gets them."""
    text = _user_link(tmp_path).replace('description = "', 'description = "r\u00e9seau ', 1)
    path = tmp_path / "links" / "my-nic.toml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(PresetError) as info:
        presets.names(dirs=[tmp_path])
    msg = str(info.value)
    assert str(path) in msg
    assert re.search(r"not UTF-8 text: byte 0xe9 at offset \d+ cannot be decoded", msg), msg
    assert "save the preset file as UTF-8" in msg
    assert "codec" not in msg


def test_the_cli_loads_a_utf16_preset_from_presets_dir(tmp_path):
    """The CLI's --presets-dir reads the same decoder: a UTF-16 link preset is listed."""
    text = _user_link(tmp_path)
    (tmp_path / "links" / "my-nic.toml").write_bytes(text.encode("utf-16"))
    result = run("--presets-dir", str(tmp_path), "presets", "list", "--kind", "link")
    assert result.exit_code == 0, result.stderr
    assert "my-nic" in result.stdout


def test_runs_jsonl_with_a_bom_keeps_its_first_run_done(tmp_path):
    """runs.jsonl was read UTF-8 only: re-saved by Notepad with a byte-order mark, its first
    record failed json.loads and was skipped, so a run already ok was measured again."""
    from costmodel.validation.runner import _runs_done

    path = tmp_path / "runs.jsonl"
    records = [
        {"key": "all_reduce", "config": "c1", "status": "ok"},
        {"key": "all_gather", "config": "c2", "status": "ok"},
    ]
    path.write_bytes("".join(json.dumps(r) + "\n" for r in records).encode("utf-8-sig"))
    assert _runs_done(path) == {("all_reduce", "c1"), ("all_gather", "c2")}


def test_runs_jsonl_undecodable_names_the_file(tmp_path):
    """A runs.jsonl with a byte UTF-8 cannot decode raised UnicodeDecodeError (a traceback from
    the CLI); it is a ValueError naming the file and the byte now."""
    from costmodel.validation.runner import _runs_done

    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"key": "x", "config": "\xe9", "status": "ok"}\n')
    with pytest.raises(ValueError, match=r"runs\.jsonl: not UTF-8 text: byte 0xe9 at offset 24"):
        _runs_done(path)


@pytest.mark.parametrize("name", ["runs.jsonl", "results.jsonl"])
def test_a_sweep_never_appends_utf8_to_a_utf16_file(tmp_path, name):
    """The runner appends UTF-8 records: to a runs.jsonl or results.jsonl re-saved as UTF-16 it
    wrote a file of two encodings that no reader could read whole. The sweep is refused before
    anything runs, naming the file, its encoding and the fix."""
    from costmodel.validation.runner import RunSpec, run_sweep

    path = tmp_path / name
    path.write_bytes('{"key": "x", "config": "c", "status": "ok"}\n'.encode("utf-16"))
    spec = RunSpec(key="never", op="all_reduce", algo=None, proto=None, argv=("false",))
    with pytest.raises(ValueError, match=rf"{name}: is UTF-16 text; .*save it as UTF-8"):
        run_sweep([spec], tmp_path, progress=False)
    assert not list((tmp_path / "logs").glob("never*")) if (tmp_path / "logs").exists() else True
    assert path.read_bytes().decode("utf-16").count("\n") == 1  # untouched


def test_the_torch_job_refuses_a_utf16_results_file(tmp_path, capsys):
    """The job launched by hand (torchrun -m costmodel.validation.torch_bench -o FILE) appends
    UTF-8 rows too: a UTF-16 FILE is refused before torch is imported, exit 2."""
    from costmodel.validation.torch_bench import main

    out = tmp_path / "results.jsonl"
    out.write_bytes('{"op": "all_reduce"}\n'.encode("utf-16"))
    assert main(["-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torch_bench: --output: ") and "is UTF-16 text" in err


def test_validate_torch_refuses_a_utf16_results_file(tmp_path):
    """validate torch appends to --output: a UTF-16 results file is refused, one line, exit 2,
    before torchrun starts."""
    out = tmp_path / "results.jsonl"
    out.write_bytes('{"op": "all_reduce"}\n'.encode("utf-16"))
    line = one_line_error(run("validate", "torch", "--output", str(out)), "UTF-16")
    assert line.startswith(f"costmodel: error: --output: {out}: is UTF-16 text")


# --- 3. --check-from said as given, the checked range named -----------------------------------
def _results(tmp_path: Path) -> Path:
    results = tmp_path / "results.jsonl"
    rows = _off_line_rows().to_dict(orient="records")
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return results


def test_check_from_is_printed_as_the_user_gave_it(tmp_path):
    """`--check-from 1MiB --tolerance 0.1` printed "1 of 7 rows from 1.05 MB beyond": a binary
    size in decimal. It is "from 1 MiB up" now (a decimal one stays decimal), and without
    --check-from the line says all sizes instead of "from 0 B"."""
    results = _results(tmp_path)
    args = ("validate", "compare", str(results), "--cluster", "dgx-h100", "--tolerance", "0.1")
    for given, shown in (("1MiB", "1 MiB"), ("64 KiB", "64 KiB"), ("2MB", "2 MB")):
        last = run(*args, "--check-from", given).stdout.strip().splitlines()[-1]
        assert f"rows from {shown} up (--check-from) beyond |busbw error| 10%" in last, last
        assert "1.05 MB" not in last
    last = run(*args).stdout.strip().splitlines()[-1]
    assert re.search(r"of 11 rows over all sizes beyond \|busbw error\| 10%$", last), last
    assert "0 B" not in last


def test_the_goal_checks_name_the_range_check_from_leaves(tmp_path):
    """With --check-from 64KiB the goal's "all sizes" check judged the rows from 64 KiB up under
    the name "all sizes"; it is named "from 64 KiB" now (text and --json), and from 1 MiB up
    the two checks judge the same rows, so only the stricter one is said."""
    results = _results(tmp_path)
    args = ("validate", "compare", str(results), "--cluster", "dgx-h100")
    last = run(*args, "--check-from", "64KiB").stdout.strip().splitlines()[-1]
    assert "median |busbw error| from 1 MiB: " in last
    assert "median |busbw error| from 64 KiB: " in last and "all sizes" not in last
    doc = json.loads(run(*args, "--check-from", "64KiB", "--json").stdout)
    assert [(g["check"], g["from_bytes"]) for g in doc["goal"]] == [
        ("from 1 MiB", 2**20),
        ("from 64 KiB", 2**16),
    ]
    doc = json.loads(run(*args, "--check-from", "4MiB", "--json").stdout)
    assert [(g["check"], g["goal"]) for g in doc["goal"]] == [("from 4 MiB", 0.08)]
    assert doc["goal"][0]["rows"] == doc["checked_rows"] == 5
    full = json.loads(run(*args, "--json").stdout)  # no --check-from: the goal's own names
    assert [g["check"] for g in full["goal"]] == ["from 1 MiB", "all sizes"]


def test_binary_sizes_format_as_binary():
    """units.format_bytes_as_given: the prefixes the user wrote, through the one formatter."""
    from costmodel import units

    assert units.format_bytes_as_given(units.parse_bytes("1MiB"), "1MiB") == "1 MiB"
    assert units.format_bytes_as_given(units.parse_bytes("1.5 GiB"), "1.5 GiB") == "1.5 GiB"
    assert units.format_bytes_as_given(units.parse_bytes("1MB"), "1MB") == "1 MB"
    assert units.format_bytes_as_given(0, "0B") == "0 B"
    # the prefix by the exact value: 2**30 rounded first (1.07e9) fell below 2**30 ("1,020 MiB")
    for given, shown in (
        ("1GiB", "1 GiB"),
        ("1TiB", "1 TiB"),
        ("4 GiB", "4 GiB"),
        ("256KiB", "256 KiB"),
    ):
        assert units.format_bytes_as_given(units.parse_bytes(given), given) == shown


def test_calibrate_min_bytes_refusal_says_sizes_as_given(tmp_path):
    """`calibrate --min-bytes 1GiB` above every row said "no usable collective rows from 1.07 GB
    ...; the rows span 65.5 kB to 67.1 MB": the bound and the span are in the prefixes the
    user gave now (1 GiB; 64 KiB to 64 MiB), and a decimal bound stays decimal."""
    results = _results(tmp_path)
    out = str(tmp_path / "c.toml")
    line = one_line_error(run("calibrate", str(results), "-o", out, "--min-bytes", "1GiB"))
    assert "--min-bytes: no usable collective rows from 1 GiB to the largest" in line
    assert "the rows span 64 KiB to 64 MiB" in line
    line = one_line_error(run("calibrate", str(results), "-o", out, "--min-bytes", "1GB"))
    assert "from 1 GB to the largest" in line and "65.5 kB to 67.1 MB" in line


# --- QA: calibrate's text output ---------------------------------------------------------------
def test_calibrate_with_a_cluster_says_which_model_its_errors_are_of(tmp_path):
    """With --cluster, `validate compare --calibration` predicts with the calibrated realistic
    model, not the alpha-beta line whose errors the table shows: the line under the table says
    so. The fabric table printed the hop latency as a bare 1.694661 (net_latency_us); it is a
    duration formatted as every other one (net_latency 1.69 µs), --json unchanged."""
    from costmodel.reference import reference_path

    log = str(reference_path("06a"))
    args = ("calibrate", log, "-o", str(tmp_path / "c.toml"), "--cluster", "dell-xe9680-h100")
    text = run(*args)
    assert text.exit_code == 0, text.stderr
    caption = next(x for x in text.stdout.splitlines() if x.startswith("rel_error: "))
    assert "busbw error of the alpha-beta line" in caption
    assert "--calibration predicts with the calibrated realistic model" in caption
    fabric = text.stdout.split("calibrated fabric terms", 1)[1].splitlines()
    header, row = fabric[1].split(), fabric[2]
    assert "net_latency" in header and "net_latency_us" not in header
    assert re.search(r" \d+(\.\d+)? [µn]s ", row), row
    assert "net_latency_us" not in row
    doc = json.loads(run(*args, "--json").stdout)
    assert "net_latency_us" in doc["fabric"][0]
    # without --cluster there is no realistic model: the line does not mention one
    bare = run("calibrate", log, "-o", str(tmp_path / "b.toml"), "--nodes", "2")
    assert bare.exit_code == 0, bare.stderr
    assert "realistic" not in next(x for x in bare.stdout.splitlines() if x.startswith("rel_error"))
