"""The project is self-contained: the published reference runs ship in the package
(costmodel.reference), a built wheel carries them and the presets, the CLI compares one by name,
and no tracked file points outside the repository for its data or docs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.reference import (
    reference_dir,
    reference_id,
    reference_path,
    reference_runs,
)

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "costmodel" / "data" / "reference"
RUN_06A = "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce"


# --- no path out of the repository ------------------------------------------------------------
# Built from pieces so that this file does not itself contain what it looks for.
_UP = ".." + "/"
_SHARED = "sha" + "red/"  # the workbench folder name, in pieces
FORBIDDEN = (_UP + _SHARED, _SHARED + "data", _SHARED + "reference")


def _tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_no_file_reads_or_cites_the_folder_beside_the_checkout():
    files = _tracked_files()
    assert any(p.name == "README.md" for p in files)  # the listing itself worked
    hits = []
    for path in files:
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            hits += [f"{path.relative_to(ROOT)}:{lineno}: {s}" for s in FORBIDDEN if s in line]
    assert not hits, "\n".join(hits)


# --- the bundled runs -------------------------------------------------------------------------
def test_every_bundled_file_is_indexed_with_its_source():
    index = (REF / "README.md").read_text()
    for kind in ("nccl-tests", "ddp"):
        names = reference_runs(kind)
        assert names, kind
        for name in names:
            assert f"{name}.txt" in index, f"{name} is not in reference/README.md"
            head = reference_path(name).read_text()[:400].lower()
            assert "source" in head, f"{name}: no source in its header"


def test_reference_path_accepts_name_file_name_and_short_id():
    want = reference_dir("nccl-tests") / f"{RUN_06A}.txt"
    assert reference_path(RUN_06A) == want
    assert reference_path(f"{RUN_06A}.txt") == want
    assert reference_path("06a") == want
    assert reference_id(RUN_06A) == "06a"
    assert reference_path("14", kind="ddp").parent == reference_dir("ddp")


@pytest.mark.parametrize("name", ["nope", "13", "06a", ""])
def test_reference_path_bad_name_lists_the_allowed(name):
    kind = "ddp" if name == "06a" else None  # 06a exists, but not among the DDP files
    with pytest.raises(ValueError, match="reference: .*allowed: .*_"):
        reference_path(name, kind=kind)
    with pytest.raises(ValueError, match="kind: .*allowed: nccl-tests, ddp"):
        reference_runs("logs")


def test_the_new_runs_are_bundled():
    ids = {reference_id(n) for n in reference_runs()}
    new = {"20", "21a", "21b", "21c", "21d", "22", "23a", "23b", "24a", "24b", "24c", "24d"}
    assert new <= ids, sorted(new - ids)


# --- CLI --------------------------------------------------------------------------------------
def _compare(*args: str):
    return CliRunner().invoke(
        cli.app, ["validate", "compare", *args, "--cluster", "dell-xe9680-h100", "--json"]
    )


def test_validate_compare_reference_equals_compare_of_the_file():
    by_name = _compare("--reference", "06a")
    by_path = _compare(str(reference_path("06a")))
    # exit 0 or 1 (1 = some row beyond the tolerance); both runs must agree on everything
    assert by_name.exit_code in (0, 1), by_name.stderr
    assert by_name.exit_code == by_path.exit_code
    d = json.loads(by_name.stdout)
    assert d == json.loads(by_path.stdout)
    assert d["rows"] == 2 * 32  # 32 result rows (out-of-place and in-place each), counted in 06a


def test_validate_compare_unknown_reference_lists_the_names():
    r = _compare("--reference", "99z")
    assert r.exit_code == 2
    assert r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert "allowed:" in line and RUN_06A in line


def test_validate_compare_wants_results_or_reference_not_both():
    r = _compare("--reference", "06a", str(reference_path("06a")))
    assert r.exit_code == 2
    assert "RESULTS or --reference" in r.stderr


def test_validate_compare_help_lists_the_bundled_ids():
    r = CliRunner().invoke(cli.app, ["validate", "compare", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    for short in ("06a", "13a", "24d"):
        assert short in r.stdout


# --- the wheel ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_wheel_carries_reference_runs_and_presets(tmp_path):
    """Build the wheel from what the Dockerfile copies (no network: the venv's setuptools)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("costmodel", "presets"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    out = tmp_path / "wheel"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(out), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    # every shipped folder is named in pyproject's packages and the metadata is in today's
    # form: `pip install .` prints no "Package would be ignored" warning about a data folder
    # and no deprecation (the license as a TOML table)
    said = built.stdout + built.stderr
    assert "would be ignored" not in said
    assert "deprecated" not in said.lower(), said
    (whl,) = out.glob("costmodel-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    for kind in ("nccl-tests", "ddp"):
        for run in reference_runs(kind):
            assert f"costmodel/data/reference/{kind}/{run}.txt" in names, run
    assert "costmodel/data/reference/README.md" in names
    # the MIT license the metadata declares ships beside it (pyproject `license-files`, PEP 639)
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    with zipfile.ZipFile(whl) as z:
        assert z.read(licence) == (ROOT / "LICENSE").read_bytes()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    assert "costmodel/reference.py" in names
    presets = sorted((ROOT / "presets" / "clusters").glob("*.toml"))
    assert presets
    for p in presets:
        assert f"costmodel/_presets/clusters/{p.name}" in names, p.name
    # byte-identical to the repository copies
    with zipfile.ZipFile(whl) as z:
        data = z.read(f"costmodel/data/reference/nccl-tests/{RUN_06A}.txt")
    assert data == reference_path("06a").read_bytes()
