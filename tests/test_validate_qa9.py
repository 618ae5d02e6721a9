"""Ninth QA pass of the validation harness, as a user on a cluster node runs it: a log whose run
nccl-tests stopped with a failure, the DDP steps a prediction could not price, the algorithm
names of pinned runs, and the gloo job end to end. Each test names the defect it guards against;
tests/test_validate_qa.py to _qa8.py hold the earlier passes."""

from __future__ import annotations

from pathlib import Path

from costmodel.reference import reference_path
from tests._cli import one_line_error, run


def _user_log(tmp_path: Path, name: str = "run_allreduce.log") -> tuple[Path, list[str]]:
    """Bundled 06a (2 x 8 H100, all-reduce) as a user's own log: its provenance block left
    out (so it is not recognised as a bundled run), nccl-tests' output kept verbatim."""
    lines = reference_path("06a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    body = lines[seps[1] + 1 :]
    path = tmp_path / name
    path.write_text("\n".join(body) + "\n")
    return path, body


def _row_lines(body: list[str]) -> list[int]:
    return [i for i, line in enumerate(body) if line.strip()[:1].isdigit()]


# --- 1. a run nccl-tests stopped with a failure ------------------------------------------------
_NCCL_FAILURE = (
    "bm-h100-01: Test NCCL failure common.cu:1279 'unhandled system error (run with "
    "NCCL_DEBUG=INFO for details) / '"
)
_TEST_FAILURE = " .. bm-h100-01 pid 29262: Test failure common.cu:1100"


def test_a_log_whose_run_failed_mid_sweep_says_so(tmp_path):
    """nccl-tests stops at its first error and prints `host: Test NCCL failure file:line '...'`
    (src/common.h NCCLCHECK): the reader read past that line as text and said only that the
    log "may be cut off", and compare printed "ok" as for a complete sweep. The failure is one
    warning naming its line and quoting it; the rows before it are still compared."""
    path, body = _user_log(tmp_path)
    rows = _row_lines(body)
    stop = rows[25]
    path.write_text("\n".join([*body[:stop], _NCCL_FAILURE, _TEST_FAILURE]) + "\n")
    result = run("validate", "compare", str(path))
    assert result.exit_code in (0, 1), result.output
    warned = [w for w in result.stderr.splitlines() if "Test NCCL failure" in w]
    assert len(warned) == 1, result.stderr  # the two failure lines are said once
    assert warned[0].startswith(
        f"costmodel: warning: line {stop + 1}: nccl-tests reports a failure"
    )
    assert "unhandled system error" in warned[0]
    assert "no size after this line was measured" in warned[0]
    assert "over 50 rows" in result.stdout  # the 25 sizes before it, both placements


def test_a_log_whose_run_failed_before_its_first_size_names_the_failure(tmp_path):
    """A run that failed at initialisation has no row: the one-line refusal said only "no
    nccl-tests result rows found", leaving the user to open the log for why."""
    path, body = _user_log(tmp_path)
    head = body[: _row_lines(body)[0]]
    failure = (
        "bm-h100-01: Test NCCL failure common.cu:1005 'remote process exited or there was a "
        "network error / NET/IB : Got completion from peer'"
    )
    path.write_text("\n".join([*head, failure, _TEST_FAILURE]) + "\n")
    for command in (("validate", "compare", str(path)), ("calibrate", str(path), "-o",
                                                         str(tmp_path / "c.toml"))):  # fmt: skip
        line = one_line_error(run(*command), "no nccl-tests result rows found",
                              "the run failed before its first size", "network error")  # fmt: skip
        assert f"line {len(head) + 1}:" in line
    assert not (tmp_path / "c.toml").exists()


def test_no_bundled_log_is_said_to_have_failed():
    """A failure quoted in a provenance block ('#' lines before the output) or NCCL's own
    debug text is not nccl-tests' failure line: no bundled log with times is said to have
    failed."""
    from costmodel.validation.logread import log_findings
    from costmodel.validation.nccl_tests import read_nccl_tests

    folder = reference_path("06a").parent
    for path in sorted(folder.glob("*.txt")):
        if "busbw-only" in path.name or path.name[:2] in ("26", "27"):
            continue  # no nccl-tests rows (refused elsewhere, tests/test_validate_logs.py)
        rows = read_nccl_tests(path, strict=False, op="all_reduce")
        assert not [f for f in log_findings(rows) if "reports a failure" in f], path.name
