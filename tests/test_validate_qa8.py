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

import pytest

from costmodel import presets
from costmodel.presets import PresetError
from tests._cli import one_line_error, run


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


def test_validate_torch_refuses_a_utf16_results_file(tmp_path):
    """validate torch appends to --output: a UTF-16 results file is refused, one line, exit 2,
    before torchrun starts."""
    out = tmp_path / "results.jsonl"
    out.write_bytes('{"op": "all_reduce"}\n'.encode("utf-16"))
    one_line_error(run("validate", "torch", "--output", str(out)), "results.jsonl", "UTF-16")
