"""Validation-harness defects a QA pass found comparing and calibrating runs of bundled run 15
(GH200, 4 per node, 1 to 512 nodes) cut into one log per job. Each test failed on the defect it
names before its fix.

- a one-node calibration compared with a two-node log (its prediction the uncalibrated
  model's) showed no expected-error band, though the model predicting has one;
- a folder's "from the log:" line gave the first file's nodes only;
- calibrate on a folder named no file in its nodes refusal, applied ``--nodes`` to logs whose
  host lines state theirs and exited 0 after dropping them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests._cli import run
from tests.test_validate_qa28 import _alps_job, _read_line


def _alps(tmp_path: Path, jobs=(1, 2, 3)) -> Path:
    folder = tmp_path / "alps"
    folder.mkdir()
    for k in jobs:
        (folder / f"job{k}_all_reduce.log").write_text(_alps_job(k))
    return folder


def _one_node_calibration(tmp_path: Path) -> Path:
    log = tmp_path / "job1_all_reduce.log"
    log.write_text(_alps_job(1))
    out = tmp_path / "c1.toml"
    made = run("calibrate", str(log), "--cluster", "alps-gh200", "-o", str(out))
    assert made.exit_code == 0, made.output
    return out


# --- the band of the model that predicts ------------------------------------------------------
def test_a_cross_level_calibration_shows_the_uncalibrated_band(tmp_path):
    cal = _one_node_calibration(tmp_path)
    log = tmp_path / "job2_all_reduce.log"
    log.write_text(_alps_job(2))
    said = run("validate", "compare", str(log), "--calibration", str(cal))
    assert said.exit_code in (0, 1), said.output
    plain = run("validate", "compare", str(log))
    band = re.compile(r"expected error \(([^)]*)\) (±\d+% from 1 MiB, ±\d+% below 1 MiB)")
    got, want = band.search(said.stdout), band.search(plain.stdout)
    assert got and want, said.stdout
    assert got.group(2) == want.group(2)
    assert "uncalibrated" in got.group(1), got.group(1)
    within = re.compile(r"(\d+) of 60 rows within it")
    assert within.search(said.stdout).group(1) == within.search(plain.stdout).group(1)


# --- a folder's nodes per file ----------------------------------------------------------------
def test_a_folder_s_nodes_are_listed_per_file(tmp_path):
    said = run("validate", "compare", str(_alps(tmp_path)))
    line = _read_line(said.stderr)
    assert "nodes 1 in job1_all_reduce.log, 2 in job2_all_reduce.log (" in line, line
    assert "nodes = 4 (ranks / the device list's 4 GPUs per node; job3" in said.stderr


# --- calibrate on a folder --------------------------------------------------------------------
def _no_hosts(k: int) -> str:
    """Job k of run 15 without its device list: no host lines, so no nodes."""
    return "".join(x for x in _alps_job(k).splitlines(True) if "Rank " not in x)


def test_calibrate_on_a_folder_names_the_log_without_nodes(tmp_path):
    folder = _alps(tmp_path, jobs=(1, 2))
    (folder / "job3_all_reduce.log").write_text(_no_hosts(3))
    made = run("calibrate", str(folder), "--cluster", "alps-gh200", "-o", str(tmp_path / "a.toml"))
    assert made.exit_code == 2, made.output
    assert "job3_all_reduce.log" in made.stderr, made.stderr


def test_calibrate_on_a_folder_applies_nodes_only_where_unstated(tmp_path):
    folder = _alps(tmp_path, jobs=(1, 2))
    (folder / "job3_all_reduce.log").write_text(_no_hosts(3))
    out = tmp_path / "a.toml"
    made = run("calibrate", str(folder), "--cluster", "alps-gh200", "--nodes", "4", "-o", str(out))
    assert made.exit_code == 0, made.output
    assert "contradicts" not in made.stderr
    (fabric,) = [f for f in tomllib.loads(out.read_text())["fabric"] if f["level"] == "inter"]
    assert sorted(fabric["nodes"]) == [2, 4], fabric
    assert "nodes = 4 (you set it; job3_all_reduce.log)" in made.stderr, made.stderr


def test_calibrate_on_a_folder_exits_1_when_a_log_is_dropped(tmp_path):
    folder = _alps(tmp_path, jobs=(1, 2))
    (folder / "notes.txt").write_text("not a log\n")
    out = tmp_path / "a.toml"
    made = run("calibrate", str(folder), "--cluster", "alps-gh200", "-o", str(out))
    assert made.exit_code == 1, made.output
    assert out.exists()
