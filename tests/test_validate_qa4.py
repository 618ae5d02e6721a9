"""Fourth QA pass of the validation harness and the batch paths: a Dask sweep whose every row
fails, a torch job that measured nothing, the installed mpirun's flavour, and the coverage
figures of docs/fidelity.md. Each test names the defect it guards against;
tests/test_validate_qa.py, _qa2.py and _qa3.py hold the earlier passes."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._cli import one_line_error, run

sw = importlib.import_module("costmodel.sweep")  # cm.sweep is also a function name

# --- 1. a Dask sweep whose every row fails ---------------------------------------------------------
#: a step sweep whose every row is refused (a measured compute time no GPU reaches); the local
#: engine refuses it with its first row's reason (tests/test_qa_pass10.py)
ALL_FAIL = {"arch": "llama-2-7b", "preset": "dgx-h100", "compute_time": "1ms,2ms"}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask cluster of threads in this process (as tests/test_distributed.py): starts in well
    under a second on 2 shared cores; the partition logic is the one a process cluster runs."""
    from dask import distributed

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _sets(axes: dict[str, str]) -> list[str]:
    return [a for k, v in axes.items() for a in ("--set", f"{k}={v}")]


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_dask_sweep_whose_every_row_fails_is_refused_as_the_local_one(tmp_path, client):
    """`costmodel sweep --engine dask -o DIR` whose every row failed wrote the dataset (a
    manifest and partitions of NaN answers) and exited 0 with a warning, where the local
    engine writes nothing and exits 2 with one line naming the --set. Now the same refusal,
    word for word, and the folder is left as it was: not created when it did not exist."""
    argv = ["sweep", "--kind", "step", *_sets(ALL_FAIL)]
    local = run(*argv, "-o", str(tmp_path / "local.csv"))
    want = one_line_error(local, "--set compute_time: a measured compute time of 0.001 s")
    dask_argv = [*argv, "--engine", "dask", "--scheduler", client.scheduler.address]
    for extra in ([], ["--json"], ["--chunk-rows", "1"]):
        got = run(*dask_argv, *extra, "-o", str(tmp_path / "ds"))
        assert one_line_error(got) == want
        assert _listing(tmp_path) == []  # neither the local file nor the dataset folder


def test_an_all_failed_dask_sweep_leaves_an_existing_folder_as_it_was(tmp_path, client):
    """Into an empty folder the user made: it stays, empty (no manifest, no partition). The
    API raises the local sweep's ValueError."""
    from costmodel import distributed as dist

    out = tmp_path / "mine"
    out.mkdir()
    (out / ".keep").write_text("the user's\n")
    with pytest.raises(ValueError, match=r"^compute_time_s: a measured compute time of 0\.001 s"):
        dist.sweep_dask(out, None, scheduler=client, partition_rows=1, kind="step", **ALL_FAIL)
    assert _listing(out) == [".keep"] and (out / ".keep").read_text() == "the user's\n"
    with pytest.raises(ValueError, match=r"^compute_time_s: a measured compute time of 0\.001 s"):
        sw.sweep(kind="step", engine="dask", scheduler=client, output=out, **ALL_FAIL)
    assert _listing(out) == [".keep"]


def test_a_dask_sweep_with_one_answered_row_is_still_written(tmp_path, client):
    """The refusal is for a sweep that answered nothing: one row answered and the dataset is
    written with the failed row and its reason, as before (and as locally)."""
    from costmodel import distributed as dist

    axes = {**ALL_FAIL, "compute_time": "1ms,400ms"}
    s = dist.sweep_dask(tmp_path / "d", None, scheduler=client, partition_rows=1, kind="step",
                        **axes)  # fmt: skip
    assert (s.rows, s.failed_rows, s.written) == (2, 1, 2)
    assert dist.read_dataset(tmp_path / "d")["error"].tolist()[1] == ""


# --- 2. `validate torch` that measured nothing -----------------------------------------------------
def test_validate_torch_that_measured_nothing_fails_saying_why_and_where(tmp_path, monkeypatch):
    """A torch job that exits 0 having written no row (every op refused by its backend: the
    job skips an unsupported op rather than failing) exited 0 with a warning, so a script or a
    batch job read "validated" where nothing was measured. Now exit 1 and one line: nothing was
    written, why it can happen, and where the job's messages are; the file is untouched."""
    import json
    import subprocess

    pytest.importorskip("torch")
    out = tmp_path / "t.jsonl"
    earlier = json.dumps({"op": "all_reduce", "kind": "collective"}) + "\n"
    out.write_text(earlier)  # an earlier job's row: not this job's, not counted
    monkeypatch.setattr(subprocess, "call", lambda cmd: 0)
    result = run("validate", "torch", "--backend", "gloo", "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"costmodel: error: torch job: no rows written to {out}: it exited 0 having measured "
        "nothing (the job skips an op its backend does not support); its messages, torchrun's "
        "and each rank's, are above on stderr"
    ]
    assert out.read_text() == earlier
    monkeypatch.setattr(subprocess, "call", lambda cmd: 3)  # a failed job: its own exit code
    assert run("validate", "torch", "--backend", "gloo", "-o", str(out)).exit_code == 3
