"""The published reference measurements bundled with the package, by name.

The files live in ``costmodel/data/reference/`` (shipped in the wheel and the Docker image as
package data of ``costmodel.data``): ``nccl-tests/`` holds public nccl-tests logs, ``ddp/`` PyTorch's
own DDP benchmark figures, ``steps/`` published end-to-end training throughput tables (read by
:mod:`costmodel.steps_data`). Every file is a verbatim copy of its public source with a ``#`` header
naming source, hardware, NCCL version and trust; ``reference/README.md`` indexes them. Nothing here
was measured by this project.

A run's *name* is its file name without ``.txt`` (``"06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_
allreduce"``). :func:`reference_path` also accepts the file name itself and the short id before the
first underscore (``"06a"``), the way the docs and ``scripts/fit_corrections.py`` cite the runs.

>>> "06a" in [reference_id(n) for n in reference_runs()]
True
>>> reference_path("06a").name
'06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt'
>>> reference_runs("ddp")
['14_pytorch-ddp-benchmark-README_DGX1-V100_ddp-scaling-bucketsize']
"""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

__all__ = [
    "ddp_benchmark_file",
    "parse_ddp_benchmark",
    "KINDS",
    "reference_dir",
    "reference_id",
    "reference_path",
    "reference_runs",
]

#: The kinds of bundled reference data: one folder each under ``costmodel/data/reference/``.
KINDS: tuple[str, ...] = ("nccl-tests", "ddp", "steps")


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not a reference kind; allowed: {', '.join(KINDS)}")
    return kind


def reference_dir(kind: str = "nccl-tests") -> Path:
    """The folder of bundled reference files of one kind (``"nccl-tests"`` or ``"ddp"``).

    Found through :mod:`importlib.resources`, so it is the installed copy in a wheel install and
    the repository folder in an editable one. Raises ``ValueError`` for an unknown kind and
    ``FileNotFoundError`` if the package was installed without its data.
    """
    _check_kind(kind)
    root = importlib.resources.files("costmodel.data") / "reference" / kind
    path = Path(str(root))  # a plain folder: setuptools installs package data unzipped
    if not path.is_dir():
        raise FileNotFoundError(
            f"bundled reference data missing at {path}: reinstall costmodel (package data "
            "costmodel/data/reference/ is part of the wheel)"
        )
    return path


def reference_runs(kind: str = "nccl-tests") -> list[str]:
    """Names of the bundled reference runs of one kind, sorted (file names without ``.txt``)."""
    return sorted(p.stem for p in reference_dir(kind).glob("*.txt"))


def reference_id(name: str) -> str:
    """The short id of a run name: the part before the first underscore (``"06a"``)."""
    return Path(name).stem.split("_", 1)[0]


def reference_path(name: str, kind: str | None = None) -> Path:
    """Path of one bundled reference file, by name, file name or short id (``"06a"``).

    ``kind`` limits the search to one folder; by default every kind is searched. Raises
    ``ValueError`` naming the allowed names when ``name`` matches no run or more than one.
    """
    kinds = KINDS if kind is None else (_check_kind(kind),)
    key = name.strip()
    stem = key[:-4] if key.endswith(".txt") else key
    candidates = [(k, n) for k in kinds for n in reference_runs(k)]
    hits = [(k, n) for k, n in candidates if n == stem]
    if not hits:
        hits = [(k, n) for k, n in candidates if _id_key(reference_id(n)) == _id_key(stem)]
    if len(hits) != 1:
        ids = ", ".join(dict.fromkeys(reference_id(n) for _, n in candidates))
        why = "matches several runs" if hits else "is not a bundled reference run"
        raise ValueError(
            f"reference: {name!r} {why}; allowed: a run's short id ({ids}) or its full name "
            "(the file name, e.g. 06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce; "
            "costmodel/data/reference/README.md lists them)"
        )
    k, n = hits[0]
    return reference_dir(k) / f"{n}.txt"


def _id_key(text: str) -> str:
    """A short id as it is matched: in any case and without leading zeros, so ``"6a"`` and
    ``"06A"`` are ``"06a"`` (the ids are cited ``06a``, and people drop the zero).

    >>> _id_key("06A"), _id_key("6a"), _id_key("02"), _id_key("0")
    ('6a', '6a', '2', '0')
    """
    low = text.lower()
    return low.lstrip("0") or low


def ddp_benchmark_file() -> Path:
    """PyTorch's own DDP benchmark output (bundled under ``reference_dir("ddp")``)."""
    files = sorted(reference_dir("ddp").glob("14_*.txt"))
    if not files:
        raise FileNotFoundError(f"PyTorch DDP benchmark file missing under {reference_dir('ddp')}")
    return files[0]


def parse_ddp_benchmark(text: str) -> tuple[dict, dict]:
    """(p50 sec/iter by model and setup, bucket-1-vs-25 diff % by model and GPUs).

    Setups: "no ddp" (one GPU, no DDP) and GPU counts 1, 2, 4, 8, 16 (DDP, bucket_cap_mb=25).
    The diff block gives p75 sec/iter with bucket_cap_mb=1 and its change in ex/sec vs 25.
    Used by the DDP shape check (tests) and the overhead fit (``scripts/fit_ddp_overhead.py``);
    the benchmark's models and machine are in :mod:`costmodel.ddp_benchmark`.
    """
    main, diff = text.split("diff.py output")
    steps: dict[str, dict] = {}
    model = ""
    for line in main.splitlines():
        if m := re.match(r"Benchmark: (\S+) with batch size", line):
            model = m[1]
            steps[model] = {}
        elif m := re.match(r"\s*(\d+) GPUs --\s+(no ddp|\d+M/\d+G):\s+p50:\s+([\d.]+)s", line):
            steps[model]["no ddp" if m[2] == "no ddp" else int(m[1])] = float(m[3])
    diffs: dict[str, dict] = {}
    for line in diff.splitlines():
        if m := re.match(r"Benchmark: (\S+) with batch size", line):
            model = m[1]
            diffs[model] = {}
        elif m := re.match(r"\s*(\d+) GPUs:\s+p75:\s+[\d.]+s\s+\d+/s\s+([-\d.]+)%", line):
            diffs[model][int(m[1])] = float(m[2])
    return steps, diffs
