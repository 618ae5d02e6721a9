"""Validation-harness defects a QA pass found reading trimmed and launch-pinned nccl-tests logs.
Each test failed on the defect it names before its fix.

- a 32-node log whose device list was trimmed to two hosts was compared at 8 ranks, and the
  right node count was refused as contradicting the host lines;
- a NCCL_ALGO the log's launch line pins (``mpirun -x NCCL_ALGO=Ring``, ``export``, an env
  assignment, the harness's own runner comment) was not read;
- a log whose ratio is too close to 2 to pin a rank count was refused as if its rows printed
  0.00;
- a folder's "from the log:" line gave the first file's nodes only;
- calibrate on a folder named no file in its refusal and applied the nodes to every log.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from costmodel.reference import reference_path
from tests._cli import run


def _alps_job(k: int) -> str:
    """The k-th job of bundled run 15 (1, 2, 4, ..., 512 nodes of GH200, 4 per node), its
    collector lines dropped, as the QA pass cut it: job 6 is 32 nodes whose device list keeps
    its first 8 ranks on 2 hosts."""
    text = reference_path("15").read_text()
    out, seen = [], 0
    for line in text.splitlines():
        if line.startswith("# ===== "):
            seen += 1
            continue
        if seen == k and "collector" not in line:
            out.append(line)
    return "\n".join(out) + "\n"


def _read_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith("from the log: ")]
    return line


# --- a trimmed device list: the rows' ratio wins ------------------------------------------------
def test_a_trimmed_device_list_is_not_the_rank_count(tmp_path):
    """Job 6 of run 15: 32 nodes x 4 GH200, its device list trimmed to ranks 0-7 on 2 hosts.
    Its rows' busbw/algbw (1.98 at 4 GiB: 128 ranks) contradict the 8 the list shows: the
    ratio wins (128 ranks, the list's 4 GPUs per node: 32 nodes), said as assumed."""
    log = tmp_path / "job6_all_reduce.log"
    log.write_text(_alps_job(6))
    said = run("validate", "compare", str(log))
    assert said.exit_code in (0, 1), said.output
    assert "an incomplete device list?" not in said.stderr
    assert "assumed: ranks = 128 (the rows' busbw/algbw ratio" in said.stderr
    assert "nodes 2" not in said.stderr and "ranks 8" not in _read_line(said.stderr)
    assert re.search(r"nodes = 32 \(|nodes 32 \(", said.stderr), said.stderr
    m = re.search(r"median \|busbw error\| ([\d.]+)%", said.stdout)
    assert m and float(m.group(1)) < 100, said.stdout


@pytest.mark.parametrize("extra", [(), ("--gpus-per-node", "4")])
def test_the_right_node_count_is_accepted_over_a_trimmed_list(tmp_path, extra):
    log = tmp_path / "job6_all_reduce.log"
    log.write_text(_alps_job(6))
    said = run("validate", "compare", str(log), "--nodes", "32", *extra)
    assert said.exit_code in (0, 1), said.output
    assert "contradicts" not in said.stderr


def test_a_node_count_the_ratio_contradicts_is_refused(tmp_path):
    log = tmp_path / "job6_all_reduce.log"
    log.write_text(_alps_job(6))
    said = run("validate", "compare", str(log), "--nodes", "2")
    assert said.exit_code == 2, said.output
    assert "busbw/algbw" in said.stderr and "nodes: 2" in said.stderr


def test_calibrate_writes_the_ratio_s_nodes(tmp_path):
    log = tmp_path / "job6_all_reduce.log"
    log.write_text(_alps_job(6))
    out = tmp_path / "c.toml"
    made = run("calibrate", str(log), "--cluster", "alps-gh200", "-o", str(out))
    assert made.exit_code == 0, made.output
    (fabric,) = tomllib.loads(out.read_text())["fabric"]
    assert fabric["nodes"] == [32] and fabric["gpus_per_node"] == [4], fabric


# --- a ratio too close to 2 is not "0.00" -----------------------------------------------------
def _a100_elided(tmp_path: Path) -> Path:
    text = reference_path("02").read_text().splitlines()
    start = next(i for i, x in enumerate(text) if "nThread" in x)
    log = tmp_path / "a100_all_reduce.log"
    log.write_text("\n".join(text[start:]) + "\n")
    return log


def test_unknown_ranks_says_the_ratio_is_too_close_to_2(tmp_path):
    said = run("validate", "compare", str(_a100_elided(tmp_path)))
    assert said.exit_code == 2, said.output
    assert "0.00" not in said.stderr
    assert "fits 126 to 128 ranks: too close to its limit of 2" in said.stderr


def test_unknown_ranks_of_zero_rows_still_says_0_00(tmp_path):
    lines = reference_path("02").read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if "nThread" in x)
    kept = [x for x in lines[start:] if not re.match(r"\s+\d+\s", x) or int(x.split()[0]) < 256]
    log = tmp_path / "small_all_reduce.log"
    log.write_text("\n".join(kept) + "\n")
    said = run("validate", "compare", str(log))
    assert said.exit_code == 2, said.output
    assert "0.00" in said.stderr


# --- a NCCL_ALGO the log's launch pins --------------------------------------------------------
def _rows_of_22() -> str:
    return "\n".join(reference_path("22").read_text().splitlines()[17:]) + "\n"


RING_LINES = {
    "mpirun -x": "+ mpirun -np 16 -x NCCL_ALGO=Ring /opt/nccl_tests/build/all_reduce_perf "
    "-b 512M -e 8G -f 2 -g 1",
    "export": "$ export NCCL_ALGO=Ring",
    "assignment": "NCCL_ALGO=Ring ./build/all_reduce_perf -b 512M -e 8G -f 2 -g 1",
    "runner": "# costmodel runner env: NCCL_ALGO=Ring",
}


@pytest.mark.parametrize("kind", sorted(RING_LINES))
def test_a_pinned_nccl_algo_in_the_log_is_read(tmp_path, kind):
    """Bundled 22's rows (2 x 8 H100, NCCL_ALGO=Ring) under a launch line that pins Ring: the
    comparison predicts Ring, as the bundled run (whose index says Ring) is compared, and the
    "from the log:" line says where it read it."""
    log = tmp_path / "ring_all_reduce.log"
    log.write_text(RING_LINES[kind] + "\n" + _rows_of_22())
    said = run("validate", "compare", str(log), "--cluster", "dgx-h100", "--nodes", "2")
    assert said.exit_code in (0, 1), said.output
    line = _read_line(said.stderr)
    assert "NCCL_ALGO Ring (" in line, line
    ring = [x for x in said.stdout.splitlines() if x.startswith("all_reduce ")]
    assert ring and all(x.split()[1] == "ring" for x in ring), said.stdout
    bundled = run("validate", "compare", "--reference", "22", "--cluster", "dgx-h100")
    median = re.compile(r"median \|busbw error\| ([\d.]+)%")
    assert median.search(said.stdout).group(1) == median.search(bundled.stdout).group(1)


def test_an_unpinned_log_is_not_said_pinned(tmp_path):
    log = tmp_path / "auto_all_reduce.log"
    log.write_text("+ mpirun -np 16 -x NCCL_IB_HCA=mlx5 ./all_reduce_perf -g 1\n" + _rows_of_22())
    said = run("validate", "compare", str(log), "--cluster", "dgx-h100", "--nodes", "2")
    assert "NCCL_ALGO" not in _read_line(said.stderr)


def test_the_cluster_mismatch_names_the_preset_s_gpu_by_its_short_name():
    """Bundled 25a (Polaris, A100) compared with alps-gh200: the warning pasted the GPU
    preset's free-text description mid-sentence ("alps-gh200 has The Hopper GPU of a ...")."""
    said = run("validate", "compare", str(reference_path("25a")), "--cluster", "alps-gh200")
    (line,) = [x for x in said.stderr.splitlines() if "does not match the log" in x]
    assert "alps-gh200 has GH200 GPUs (gh200)" in line and "The Hopper" not in line, line


def test_a_header_env_line_is_said_as_such():
    """Bundled 25a sets NCCL_COLLNET_ENABLE=1 on a '# ENV:' header line, not in NCCL's lines."""
    said = run("validate", "compare", str(reference_path("25a")))
    line = _read_line(said.stderr)
    assert "CollNet on (NCCL_COLLNET_ENABLE=1) (the log's '# ENV:' line)" in line, line


def test_validate_compare_algo_states_it_and_a_contradiction_is_refused(tmp_path):
    from tests._cli import one_line_error

    log = tmp_path / "rows_all_reduce.log"
    log.write_text(_rows_of_22())
    said = run(
        "validate", "compare", str(log), "--cluster", "dgx-h100", "--nodes", "2", "--algo", "Ring"
    )
    assert said.exit_code in (0, 1), said.output
    assert "assumed: NCCL_ALGO = Ring (you set it)" in said.stderr
    ring = [x for x in said.stdout.splitlines() if x.startswith("all_reduce ")]
    assert ring and all(x.split()[1] == "ring" for x in ring), said.stdout
    pinned = tmp_path / "ring_all_reduce.log"
    pinned.write_text(RING_LINES["mpirun -x"] + "\n" + _rows_of_22())
    refused = run("validate", "compare", str(pinned), "--cluster", "dgx-h100", "--algo", "Tree")
    one_line_error(refused, "--algo: Tree contradicts the log, which pins NCCL_ALGO Ring")
    one_line_error(
        run("validate", "compare", str(log), "--cluster", "dgx-h100", "--algo", "Rung"),
        "--algo: 'Rung' is not an NCCL_ALGO value",
    )
