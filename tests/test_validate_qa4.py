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

    from costmodel.validation import runner

    pytest.importorskip("torch")
    out = tmp_path / "t.jsonl"
    earlier = json.dumps({"op": "all_reduce", "kind": "collective"}) + "\n"
    out.write_text(earlier)  # an earlier job's row: not this job's, not counted
    monkeypatch.setattr(runner, "run_logged", lambda cmd, log: 0)
    result = run("validate", "torch", "--backend", "gloo", "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        f"costmodel: error: torch job: no rows written to {out}: it exited 0 having measured "
        "nothing (the job skips an op its backend does not support); its messages, torchrun's "
        f"and each rank's, are in {tmp_path / 'logs'}/torch."
    ), line  # the log kept beside the results: tests/test_validate_logs.py
    assert out.read_text() == earlier
    monkeypatch.setattr(runner, "run_logged", lambda cmd, log: 3)  # a failed job: its own exit code
    assert run("validate", "torch", "--backend", "gloo", "-o", str(out)).exit_code == 3


# --- 3. which MPI the installed mpirun is ------------------------------------------------------
# `mpirun --version` as each MPI prints it, copied from public sources:
# - Open MPI: "mpirun (Open MPI) 4.1.5" and its "Report bugs to" line, the form of Open MPI's
#   version banner (horovod/horovod test/single/test_run.py: "mpirun (Open MPI) 2.1.1\n
#   Report bugs to http://www.open-mpi.org/community/help/"); 5.0.6 as a user's notes show it.
# - MPICH (Hydra): pmodels/mpich src/pm/hydra/mpiexec/options.c, info_fn: "HYDRA build
#   details:\n" then "    Version:" padded to column 45; the 4.1.2 block below is a user's
#   `mpiexec --version` of an MPICH 4.1.2 build, verbatim but for the Configure options line.
# - Intel MPI: "Intel(R) MPI Library for Linux* OS, Version 2021.12 Build 20240213 (id:
#   4f55822)" and, 2019, "Version 2019 Update 2 Build 20190123 (id: e2d820d49)" with its
#   Copyright line (`mpirun --version` in public build logs); horovod's test matches
#   "Intel(R) MPI" alone.
OPEN_MPI_4 = "mpirun (Open MPI) 4.1.5\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OPEN_MPI_5 = "mpirun (Open MPI) 5.0.6\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
HYDRA_4 = """\
HYDRA build details:
    Version:                                 4.1.2
    Release Date:                            Wed Jun  7 15:22:45 CDT 2023
    CC:                              gcc      
    Configure options:                       '--disable-option-checking' '--prefix=NONE'
    Process Manager:                         pmi
    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist
    Topology libraries available:            hwloc
    Resource management kernels available:   user slurm ll lsf sge pbs cobalt
    Demux engines available:                 poll select
"""  # noqa: W291 (Hydra pads the CC value with spaces)
HYDRA_3 = "HYDRA build details:\n    Version:           3.3a2\n    Configure options: 'MPICHLIB_CFLAGS=-g -O2'\n"
INTEL_2021 = "Intel(R) MPI Library for Linux* OS, Version 2021.12 Build 20240213 (id: 4f55822)\n"
INTEL_2019 = (
    "Intel(R) MPI Library for Linux* OS, Version 2019 Update 2 Build 20190123 (id: e2d820d49)\n"
    "Copyright 2003-2019, Intel Corporation.\n"
)


@pytest.mark.parametrize(
    ("text", "flavor", "name", "version"),
    [
        (OPEN_MPI_4, "openmpi", "Open MPI", "4.1.5"),
        (OPEN_MPI_5, "openmpi", "Open MPI", "5.0.6"),
        (HYDRA_4, "mpich", "MPICH (Hydra)", "4.1.2"),
        (HYDRA_3, "mpich", "MPICH (Hydra)", "3.3a2"),
        (INTEL_2021, "mpich", "Intel MPI", "2021.12"),
        (INTEL_2019, "mpich", "Intel MPI", "2019 Update 2"),
        ("Intel(R) MPI", "mpich", "Intel MPI", ""),
    ],
)
def test_mpirun_version_banners_name_the_mpi_and_its_flavour(text, flavor, name, version):
    from costmodel.validation.runner import MpiInstall, parse_mpirun_version

    assert parse_mpirun_version(text) == MpiInstall(flavor, name, version)


def _fake_mpirun(folder: Path, out: str, code: int = 0, stream: str = "1") -> Path:
    """An ``mpirun`` that prints ``out`` for ``--version`` (on fd ``stream``) and exits
    ``code``; any other call fails loudly (nothing here may launch it)."""
    import shlex

    folder.mkdir(exist_ok=True)
    script = folder / "mpirun"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f"  printf '%s' {shlex.quote(out)} >&{stream}\n"
        f"  exit {code}\n"
        "fi\n"
        "echo 'fake mpirun: launched' >&2\nexit 99\n"
    )
    script.chmod(0o755)
    return folder


NCCL_RUN = ("validate", "nccl-tests", "run", "--dry-run", "--launcher", "mpirun")
NCCL_RUN += ("--nodes", "2", "--gpus", "4", "--algos", "Ring")


@pytest.mark.parametrize(
    ("banner", "line"),
    [
        (OPEN_MPI_4, "mpirun -np 8 --map-by ppr:4:node -x NCCL_ALGO "),
        (OPEN_MPI_5, "mpirun -np 8 --map-by ppr:4:node -x NCCL_ALGO "),
        (HYDRA_4, "mpirun -np 8 -ppn 4 -genv NCCL_ALGO Ring "),
        (INTEL_2021, "mpirun -np 8 -ppn 4 -genv NCCL_ALGO Ring "),
    ],
)
def test_without_mpi_the_installed_mpiruns_flavour_is_spoken(tmp_path, monkeypatch, banner, line):
    """`--launcher mpirun` without --mpi wrote Open MPI's options whatever the mpirun was, and
    Hydra (MPICH, Intel MPI) stops at `--map-by` before any rank starts. Now the mpirun on
    PATH is asked (`mpirun --version`) and its own options are written, by the CLI and the
    API alike (plan_sweep without mpi)."""
    from costmodel.validation.runner import plan_sweep

    monkeypatch.setenv("PATH", str(_fake_mpirun(tmp_path / "bin", banner)))
    result = run(*NCCL_RUN, "-o", str(tmp_path / "o"))
    assert result.exit_code == 0, result.stderr
    assert line in result.stdout
    (spec,) = plan_sweep(["all_reduce"], algos=["Ring"], gpus=4, nodes=2, launcher="mpirun")
    assert " ".join(spec.argv).startswith(line)


def test_an_explicit_mpi_is_not_checked_against_mpirun(tmp_path, monkeypatch):
    """--mpi wins, and mpirun is not asked: an MPICH mpirun with --mpi openmpi (a wrapper
    the user knows better) writes Open MPI's line; srun never asks."""
    monkeypatch.setenv("PATH", str(_fake_mpirun(tmp_path / "bin", "", code=7)))
    result = run(*NCCL_RUN, "--mpi", "openmpi", "-o", str(tmp_path / "o"))
    assert result.exit_code == 0 and "--map-by ppr:4:node" in result.stdout
    srun = ("validate", "nccl-tests", "run", "--dry-run", "--launcher", "srun", "--nodes", "2")
    assert run(*srun, "-o", str(tmp_path / "o")).exit_code == 0


def test_no_mpirun_or_an_unknown_one_is_one_line_naming_mpi(tmp_path, monkeypatch):
    """Missing, unrecognised or failing: one line (exit 2) naming --mpi, what was found and
    the allowed values, before anything runs; nothing is written."""
    out = tmp_path / "o"
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    one_line_error(
        run(*NCCL_RUN, "-o", str(out)),
        "--mpi: not given, and no mpirun on PATH",
        "allowed: openmpi (Open MPI) or mpich (Hydra: MPICH, Intel MPI, MVAPICH)",
    )
    # horovod's test of an MPI it does not know: "Unknown MPI v1.00"
    monkeypatch.setenv("PATH", str(_fake_mpirun(tmp_path / "odd", "Unknown MPI v1.00\n")))
    one_line_error(
        run(*NCCL_RUN, "-o", str(out)),
        "--mpi: not given, and `mpirun --version` printed 'Unknown MPI v1.00'",
        "allowed: openmpi",
    )
    failing = _fake_mpirun(tmp_path / "bad", "mpirun: error while loading shared libraries\n",
                           code=127, stream="2")  # fmt: skip
    monkeypatch.setenv("PATH", str(failing))
    line = one_line_error(run(*NCCL_RUN, "-o", str(out)), "--version` failed (exit 127: ")
    assert "error while loading shared libraries" in line
    assert not out.exists()
    # the banner on stderr still counts (some builds print it there)
    monkeypatch.setenv("PATH", str(_fake_mpirun(tmp_path / "err", HYDRA_4, stream="2")))
    assert "-ppn 4" in run(*NCCL_RUN, "-o", str(out)).stdout


# --- 4. docs/fidelity.md's coverage is of the band a prediction carries ---------------------------
def test_coverage_counts_the_rows_inside_the_band_a_prediction_carries():
    """coverage() checked a held-out run against the others' measured 10th-90th percentile
    range, where a prediction carries the hull of that range and itself (band_hull): a row
    between a one-sided range and the prediction is inside what the user is shown, and was
    counted outside. Three sources at busbw ratios 0.5, 0.6 and 0.95 (the model too fast):
    held out, 0.95 lies above the others' range 0.5-0.6 but inside its hull 0.5-1 (counted
    outside before: 1 of 3 sources inside, now 2); 0.5 lies below 0.6-0.95 either way."""
    import numpy as np

    from tests._paths import load_script

    fit = load_script("fit_corrections")
    assert fit.SPREAD_MIN_SOURCES == 3  # two sources left: no spread widens the band
    entries = [{"group": g, "q": np.full(10, q)} for g, q in (("a", 0.5), ("b", 0.6), ("c", 0.95))]
    cell = fit.coverage({("multi-node-cloud", "lt1MiB"): entries})["multi-node-cloud"]["lt1MiB"]
    assert cell["measured"] == pytest.approx(2 / 3, abs=1e-4)
    assert cell["measured_by_source"] == pytest.approx(2 / 3, abs=1e-4)


def test_the_reports_coverage_figures_are_recomputed_on_the_hull():
    """docs/fidelity.md's coverage columns (through the fitted file) are what coverage()
    gives now, from the file's fold parameters; the one cell the hull moves (cloud below
    1 MiB, whose measured range 0.36-0.86 lies below the prediction) reads above its
    range-only figure, and the text says which band is checked."""
    import math

    from costmodel.fitted_corrections import CV, FITTED
    from costmodel.uncertainty import band_hull
    from tests._paths import ROOT, load_script

    fit = load_script("fit_corrections")
    runs = fit.load_runs()
    cv = {k: dict(v) for k, v in CV.items()}
    hard = [cv, *({k: v.as_dict() for k, v in FITTED.folds[f].items()} for f in ("family", "op"))]
    pool = fit._residual_pool(runs, "nccl", hard)
    cover = fit.coverage(pool)
    text = (ROOT / "docs" / "fidelity.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 11 and cells[1] in (">= 1 MiB", "< 1 MiB"):
            rows[cells[0], "ge1MiB" if cells[1] == ">= 1 MiB" else "lt1MiB"] = cells
    assert set(rows) == {(r, c) for r, cl in cover.items() for c in cl}
    for (reg, sc), cells in rows.items():
        for col, key in ((8, "measured"), (9, "measured_by_source"), (10, "measured_loro")):
            v = cover[reg][sc][key]
            assert cells[col] == ("n/a" if math.isnan(v) else f"{100 * v:.0f}%"), (reg, sc, key)
    # the range-only share of the cloud cell below 1 MiB, counted as coverage() did before
    entries = pool["multi-node-cloud", "lt1MiB"]
    inside_range, inside_hull = [], []
    for d in entries:
        others = [e for e in entries if e["group"] != d["group"]]
        b = fit.band_of(others, fit.source_spread(pool, leave_out=d["group"]))
        lo, hi = band_hull(b["lo"], b["hi"])
        inside_range.append(float(((d["q"] >= b["lo"]) & (d["q"] <= b["hi"])).mean()))
        inside_hull.append(float(((d["q"] >= lo) & (d["q"] <= hi)).mean()))
    hull, rng = sum(inside_hull) / len(entries), sum(inside_range) / len(entries)
    assert cover["multi-node-cloud"]["lt1MiB"]["measured"] == pytest.approx(hull, abs=1e-4)
    assert hull > rng  # the defect: the report showed the range's share (65 %)
    assert (
        f"from {100 * rng:.0f} % (" in text and f"on the range alone to {100 * hull:.0f} %" in text
    )
    assert "inside the band a prediction\nwould carry" in text and "`uncertainty.band_hull`" in text
