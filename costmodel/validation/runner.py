"""Run nccl-tests sweeps and keep every parsed row as it comes (DESIGN.md section 4, step 1).

One sweep = collectives x optional NCCL_ALGO x optional NCCL_PROTO. Each run is one nccl-tests
binary invocation, single node (``-g GPUS``) or under ``srun``/``mpirun`` (``-g 1``, one rank per
GPU). For each run the raw log is kept under ``OUT/logs/``, its rows are parsed and appended to
``OUT/results.jsonl`` as soon as it ends, and its status goes to ``OUT/runs.jsonl``. An
interrupted sweep keeps what finished; running the same sweep again skips the runs already
``ok``. A run that times out or dies keeps its partial rows, marked ``complete = False``
(:func:`load_results` drops them once a later attempt of the same run completed).

>>> spec = plan_sweep(["all_reduce"], algos=["Ring"], gpus=8, build_dir="/opt/nccl-tests/build")[0]
>>> spec.key
'all_reduce-algo_Ring'
>>> " ".join(spec.argv)
'/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8589934592 -f 2 -w 5 -n 20 -g 8'
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from costmodel import textfile, units
from costmodel._checks import must_be
from costmodel.nccl import names as _names
from costmodel.validation.nccl_tests import (
    NcclTestsParseError,
    looks_like_nccl_tests,
    parse_nccl_tests,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BUILD_HINT",
    "NcclTestsMissing",
    "RunSpec",
    "SweepSummary",
    "append_results",
    "attempt_stamp",
    "check_appendable",
    "cut_line",
    "cut_line_note",
    "detect_mpi",
    "drop_partial_line",
    "find_binary",
    "inherited_env",
    "inherited_nccl",
    "launch_columns",
    "launch_env",
    "load_results",
    "mpirun_argv",
    "parse_mpirun_version",
    "plan_sweep",
    "run_logged",
    "run_nccl_tests",
    "run_sweep",
]

Launcher = Literal["local", "srun", "mpirun"]
LAUNCHERS: tuple[str, ...] = ("local", "srun", "mpirun")
MpiFlavor = Literal["openmpi", "mpich"]
#: How ``mpirun`` is spoken (:func:`mpirun_argv`): Open MPI's, or Hydra's (MPICH, Intel MPI,
#: MVAPICH and the MPIs built on them).
MPI_FLAVORS: tuple[str, ...] = ("openmpi", "mpich")

#: ``mpirun --version``'s first words per MPI -> (the MPI's name, the flavour that speaks its
#: mpirun), tried in order; group 1 is the version. Open MPI: ``mpirun (Open MPI) 4.1.5``
#: (``OpenRTE`` in place of ``Open MPI`` from some builds' runtime); Intel MPI: ``Intel(R) MPI
#: Library for Linux* OS, Version 2021.10 Build 20230619 (id: ...)``, tried before Hydra's,
#: which Intel MPI's launcher is built on; MPICH and MVAPICH (Hydra): ``HYDRA build
#: details:`` then ``    Version:   4.1.2`` on the next line (Hydra's ``info_fn``).
MPI_BANNERS: tuple[tuple[str, str, MpiFlavor], ...] = (
    (r"^\S+ \((?:Open MPI|OpenRTE)\) v?(\S+)", "Open MPI", "openmpi"),
    (r"^Intel\(R\) MPI\b(?:[^\n]*?\bVersion (\S+(?: Update \d+)?))?", "Intel MPI", "mpich"),
    (r"^HYDRA build details:\s*\n\s*Version:\s*(\S+)", "MPICH (Hydra)", "mpich"),
)

_MPI_ALLOWED = "allowed: openmpi (Open MPI) or mpich (Hydra: MPICH, Intel MPI, MVAPICH)"


@dataclass(frozen=True)
class MpiInstall:
    """The MPI behind an ``mpirun``, read from its ``--version`` output."""

    flavor: MpiFlavor
    name: str
    version: str


def parse_mpirun_version(text: str) -> MpiInstall:
    """Which MPI printed ``text``, the output of ``mpirun --version`` (:data:`MPI_BANNERS`).

    >>> parse_mpirun_version("mpirun (Open MPI) 4.1.5\\n\\nReport bugs to https://www.open-mpi.org/community/help/\\n")
    MpiInstall(flavor='openmpi', name='Open MPI', version='4.1.5')
    >>> parse_mpirun_version("HYDRA build details:\\n    Version:                                 4.1.2\\n")
    MpiInstall(flavor='mpich', name='MPICH (Hydra)', version='4.1.2')

    Raises ValueError (``mpi: ...``) naming the first line of any other output.
    """
    import re

    for pattern, name, flavor in MPI_BANNERS:
        m = re.search(pattern, text, re.MULTILINE)
        if m:
            return MpiInstall(flavor, name, m.group(1) or "")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    raise ValueError(
        f"mpi: not given, and `mpirun --version` printed {first[:80]!r}, which is not Open "
        f"MPI's, MPICH's (Hydra) or Intel MPI's banner; {_MPI_ALLOWED}"
    )


def detect_mpi(mpirun: str = "mpirun", timeout_s: float = 30.0) -> MpiInstall:
    """The MPI of the ``mpirun`` on ``$PATH``, from ``mpirun --version``
    (:func:`parse_mpirun_version`): the flavour :func:`plan_sweep` speaks it with when no
    ``mpi`` is given. Its launch options differ (:func:`mpirun_argv`), so a guess would stop
    every run before a rank starts. ValueError (``mpi: ...``, one line) when there is no
    mpirun, it fails, or its output is no MPI's this knows."""
    path = shutil.which(mpirun)
    if path is None:
        raise ValueError(
            f"mpi: not given, and no {mpirun} on PATH to ask which MPI it is "
            f"(`{mpirun} --version`); {_MPI_ALLOWED}"
        )
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(
            f"mpi: not given, and `{path} --version` did not run ({exc}); {_MPI_ALLOWED}"
        ) from None
    text = (done.stdout or "") + (done.stderr or "")
    try:
        return parse_mpirun_version(text)
    except ValueError:
        if done.returncode != 0:
            first = next((x.strip() for x in text.splitlines() if x.strip()), "no output")
            raise ValueError(
                f"mpi: not given, and `{path} --version` failed (exit {done.returncode}: "
                f"{first[:80]!r}); {_MPI_ALLOWED}"
            ) from None
        raise


def resolve_mpi(mpi: MpiFlavor | None, launcher: str) -> MpiFlavor:
    """``mpi`` as given, else (launcher ``mpirun``) the installed mpirun's (:func:`detect_mpi`);
    the other launchers never use it (``"openmpi"``, unread)."""
    if mpi is not None:
        if mpi not in MPI_FLAVORS:
            raise ValueError(f"mpi: {mpi!r} is not known; allowed: {', '.join(MPI_FLAVORS)}")
        return mpi
    return detect_mpi().flavor if launcher == "mpirun" else "openmpi"


# our op name -> nccl-tests binary stem
BINARIES: dict[str, str] = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_to_all": "alltoall",
    "sendrecv": "sendrecv",
    "gather": "gather",
    "scatter": "scatter",
    "hypercube": "hypercube",
}

# read as one line too (the CLI's error is one line): each step ends in "&&" or ";", no "#"
BUILD_HINT = (
    "Build nccl-tests from source (https://github.com/NVIDIA/nccl-tests):\n"
    "  git clone https://github.com/NVIDIA/nccl-tests && cd nccl-tests &&\n"
    "  make -j CUDA_HOME=/usr/local/cuda NCCL_HOME=/path/to/nccl;\n"
    "  for srun or mpirun add MPI=1 MPI_HOME=/path/to/mpi to make;\n"
    "then give `build_dir` (nccl-tests/build) or set NCCL_TESTS_BUILD."
)


class NcclTestsMissing(FileNotFoundError):
    """An nccl-tests binary was not found; the message says how to build it."""


@dataclass(frozen=True)
class RunSpec:
    """One nccl-tests invocation of a sweep."""

    key: str
    op: str
    algo: str | None
    proto: str | None
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    ranks: int | None = None
    nodes: int = 1

    @property
    def config(self) -> str:
        """Hash of the whole configuration: the command line (the binary by its name, not its
        folder), the NCCL environment, ranks and nodes. The resume key is (``key``, ``config``):
        a rerun with other ``--gpus``, sizes or env measures again instead of skipping."""
        argv = [Path(a).name if a.endswith("_perf") else a for a in self.argv]
        blob = json.dumps([argv, sorted(self.env.items()), self.ranks, self.nodes])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class SweepSummary:
    """What a sweep did: run keys by status, rows appended, where things are."""

    out_dir: Path
    ok: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # key -> reason
    rows: int = 0
    interrupted: bool = False
    #: one-line warnings (a row of an earlier killed run cut off, removed: :func:`cut_line_note`)
    notes: list[str] = field(default_factory=list)

    @property
    def results_path(self) -> Path:
        return self.out_dir / "results.jsonl"

    def message(self) -> str:
        parts = [
            f"{len(self.ok)} ok",
            f"{len(self.skipped)} skipped (done before)",
            f"{len(self.failed)} failed",
            f"{units.format_counted(self.rows, 'row')} -> {self.results_path}",
        ]
        text = ", ".join(parts)
        for key, reason in self.failed.items():
            text += f"\n  {key}: {reason}"
        if self.interrupted:
            text += "\ninterrupted: rerun the same command to continue (finished runs are kept)"
        return text


def find_binary(op: str, build_dir: str | Path | None = None) -> Path:
    """Path of the nccl-tests binary for ``op`` (``<stem>_perf`` or ``<stem>_perf_mpi``).

    Looks in ``build_dir``, then ``$NCCL_TESTS_BUILD``, then ``$PATH``. Raises
    :class:`NcclTestsMissing` with build instructions when none is found. The path is
    absolute: a bare name (``--build-dir .`` gave ``all_reduce_perf``) is looked up on
    ``$PATH`` by the shell and by the runner, never in the folder it was found in.
    """
    if op not in BINARIES:
        raise ValueError(
            f"op: {op!r} has no nccl-tests binary; allowed: {', '.join(sorted(BINARIES))}"
        )
    names = [f"{BINARIES[op]}_perf", f"{BINARIES[op]}_perf_mpi"]
    dirs = [Path(d) for d in (build_dir, os.environ.get("NCCL_TESTS_BUILD")) if d]
    for folder in dirs:
        for name in names:
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate.absolute()
    if not dirs:
        for name in names:
            found = shutil.which(name)
            if found:  # a relative $PATH entry ('.') gives a relative path
                return Path(found).absolute()
    where = ", ".join(str(d) for d in dirs) or "$PATH"
    raise NcclTestsMissing(f"nccl-tests binary {names[0]} not found in {where}.\n{BUILD_HINT}")


#: NCCL_ALGO / NCCL_PROTO names NCCL 2.30 accepts, lower case (kept beside the grammar that reads
#: them, :func:`costmodel.nccl.names.parse_nccl_list`)
NCCL_ALGO_NAMES = _names.NCCL_ALGO_NAMES
NCCL_PROTO_NAMES = _names.NCCL_PROTO_NAMES


def refused_by_nccl(op: str, algo: str | None, proto: str | None) -> str | None:
    """Why NCCL refuses to run ``op`` with this NCCL_ALGO / NCCL_PROTO pinned, or None.

    NCCL has no such kernel (``NCCL_ALGO=Tree`` for all_gather, broadcast or reduce; NVLS, PAT
    or CollNet with a protocol other than Simple): its enqueue fails with "no algorithm/protocol
    available for function ...", so the run would only fail (``enqueue.cc``; the model's list
    of what NCCL runs per op, :func:`costmodel.nccl.availability.unavailable_reason`). None
    for NCCL's own choice, a list or an exclusion (``^tree``: NCCL picks among the rest) and
    for all_to_all (peer-to-peer: NCCL_ALGO does not apply). A value with a list per function
    (``allreduce:tree``) is read for ``op`` as NCCL reads it
    (:func:`costmodel.nccl.names.nccl_list_for`): all_gather runs at NCCL's own choice there.

    >>> refused_by_nccl("all_gather", "Tree", None)
    'NCCL has no tree for all_gather (allowed: ring, nvls, collnet_direct, pat)'
    >>> refused_by_nccl("all_reduce", "Tree", None) is None
    True
    >>> refused_by_nccl("all_gather", "allreduce:tree", None) is None
    True
    """
    from costmodel.nccl.bandwidth import _candidates
    from costmodel.nccl.names import normalize_algorithm, normalize_protocol

    def single(value: str | None) -> str | None:
        return value if value and "," not in value and not value.startswith("^") else None

    a = single(_names.nccl_list_for(op, algo, "NCCL_ALGO"))
    p = single(_names.nccl_list_for(op, proto, "NCCL_PROTO"))
    if op == "all_to_all" or a is None:
        return None
    name = normalize_algorithm(a)
    if name not in _candidates(op):
        return f"NCCL has no {name} for {op} (allowed: {', '.join(_candidates(op))})"
    simple_only = ("nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain")
    if p is not None and name in simple_only and normalize_protocol(p) != "simple":
        return f"NCCL runs {name} only with the Simple protocol"
    return None


#: NCCL variables of the launching environment that change what a run measures and that
#: ``validate compare`` predicts (``nvls`` off, ``collnet`` on): carried by every run of a sweep
LAUNCH_ENV = ("NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE")


def launch_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`LAUNCH_ENV` variables set in the environment, which every run inherits: each
    run's ``env`` holds them (exported to every rank under mpirun, in the log's header and the
    run key), and its rows say what they mean for the prediction (``nvls`` False for
    ``NCCL_NVLS_ENABLE=0``, ``collnet`` True for ``NCCL_COLLNET_ENABLE=1``).

    >>> launch_env({"NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG": "INFO"})
    {'NCCL_NVLS_ENABLE': '0'}
    """
    env = os.environ if environ is None else environ
    return {k: str(env[k]).strip() for k in LAUNCH_ENV if str(env.get(k) or "").strip()}


def launch_columns(env: Mapping[str, str]) -> dict[str, bool]:
    """The rows' ``nvls`` / ``collnet`` for a run's ``env`` (:func:`launch_env`), as
    ``validate compare`` reads them (a bundled run's index sets the same columns).

    >>> launch_columns({"NCCL_NVLS_ENABLE": "0", "NCCL_COLLNET_ENABLE": "1"})
    {'nvls': False, 'collnet': True}
    """
    out = {}
    if env.get("NCCL_NVLS_ENABLE") == "0":
        out["nvls"] = False
    if env.get("NCCL_COLLNET_ENABLE") == "1":
        out["collnet"] = True
    return out


def inherited_nccl(var: str, environ: Mapping[str, str], remedy: str) -> str | None:
    """The ``NCCL_ALGO`` or ``NCCL_PROTO`` (``var``) exported in ``environ``, stripped, once
    checked as NCCL 2.24+ reads it (:func:`costmodel.nccl.names.parse_nccl_list`: a list per
    function, ``allreduce:tree``, is valid); None when unset or blank (NCCL's own choice).

    Every process a job starts inherits it, so the nccl-tests sweep (:func:`inherited_env`)
    and the torch job (:func:`costmodel.validation.torch_bench.nccl_env`) read it through this
    one function and refuse a value NCCL would refuse in the same words: a ValueError, one
    line, naming the variable, its value and the allowed names, then ``remedy`` (what the
    caller can do instead).

    >>> inherited_nccl("NCCL_ALGO", {"NCCL_ALGO": " allreduce:tree "}, "unset it")
    'allreduce:tree'
    >>> inherited_nccl("NCCL_PROTO", {"NCCL_PROTO": "Fast"}, "unset it")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: NCCL_PROTO: 'Fast', set in this environment and inherited by every run, is not an NCCL_PROTO value ('Fast' is not a name NCCL knows); allowed: ll, ll128, simple (...); unset it
    """
    value = (environ.get(var) or "").strip()
    if not value:
        return None
    try:  # NCCL 2.24+'s grammar: a list per function too (vLLM's NCCL_ALGO=allreduce:tree)
        _names.parse_nccl_list(
            value,
            var,
            lead=f"{var}: {value!r}, set in this environment and inherited by every run,",
        )
    except ValueError as exc:
        raise ValueError(f"{exc}; {remedy}") from None
    return value


def inherited_env(
    algos: Sequence[str | None] | None = None,
    protos: Sequence[str | None] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[str | None] | None, list[str | None] | None, list[str]]:
    """The sweep's NCCL_ALGO and NCCL_PROTO values once the launching environment is read, and
    one line per value taken from it.

    Every run inherits the environment (:func:`_execute` starts it with ``os.environ``; srun
    passes it on, and mpirun's ``-x`` / ``-genv`` export what the sweep sets), so an
    ``NCCL_ALGO`` or ``NCCL_PROTO`` exported in the shell pins every run of a sweep that does
    not set its own (``algos`` / ``protos`` empty). It is taken as the sweep's value: exported
    to every rank, recorded in the rows (``algo_env`` / ``proto_env``, which
    ``validate compare`` predicts) and in the run key, as if given; the rows said nothing of
    it and were compared with NCCL's own choice. A value the sweep sets wins, as it did. A
    list per function (NCCL 2.24+: ``allreduce:tree``, which vLLM and SGLang export) is read
    as NCCL reads it (:func:`costmodel.nccl.names.parse_nccl_list`), each op then run and
    compared with its own list (:func:`refused_by_nccl`, ``validate compare``).

    >>> inherited_env(None, None, {"NCCL_ALGO": "Tree"})[0]
    ['Tree']
    >>> print(inherited_env(None, None, {"NCCL_ALGO": "Tree"})[2][0])
    NCCL_ALGO=Tree is set in this environment and every run inherits it: the sweep runs it pinned, as with `algos` Tree (recorded in its rows); unset it for NCCL's own choice
    >>> inherited_env(["Ring"], None, {"NCCL_ALGO": "Tree"})
    (['Ring'], None, [])
    >>> inherited_env(None, None, {"NCCL_ALGO": "allreduce:tree"})[0]  # vLLM's, NCCL 2.24+
    ['allreduce:tree']
    """
    env = os.environ if environ is None else environ
    values: dict[str, list[str | None] | None] = {
        "algos": list(algos) if algos else None,
        "protos": list(protos) if protos else None,
    }
    notes = []
    for name, var in (("algos", "NCCL_ALGO"), ("protos", "NCCL_PROTO")):
        if values[name]:
            continue
        value = inherited_nccl(var, env, f"unset it, or set the sweep's own (`{name}`)")
        if value is None:
            continue
        values[name] = [value]
        notes.append(
            f"{var}={value} is set in this environment and every run inherits it: the sweep "
            f"runs it pinned, as with `{name}` {value} (recorded in its rows); unset it for "
            "NCCL's own choice"
        )
    for name, value in launch_env(env).items():
        notes.append(
            f"{name}={value} is set in this environment and every run inherits it: recorded in "
            "the rows (validate compare predicts them so) and exported to every rank"
        )
    return values["algos"], values["protos"], notes


def refused_runs(
    ops: Iterable[str],
    algos: Sequence[str | None] | None = None,
    protos: Sequence[str | None] | None = None,
) -> list[str]:
    """The (op, NCCL_ALGO, NCCL_PROTO) runs of a sweep that :func:`plan_sweep` leaves out
    because NCCL would refuse them (:func:`refused_by_nccl`), one line each."""
    out = []
    for op in ops:
        for algo in algos or [None]:
            for proto in protos or [None]:
                why = refused_by_nccl(op, algo, proto)
                if why is not None:
                    env = " ".join(
                        f"{k}={v}" for k, v in (("NCCL_ALGO", algo), ("NCCL_PROTO", proto)) if v
                    )
                    out.append(f"{op} with {env}: {why}")
    return out


def plan_sweep(
    ops: Iterable[str],
    *,
    algos: Sequence[str | None] | None = None,
    protos: Sequence[str | None] | None = None,
    gpus: int = 1,
    nodes: int = 1,
    launcher: Launcher = "local",
    build_dir: str | Path | None = None,
    min_bytes: str | int = 8,
    max_bytes: str | int = "8GiB",
    step_factor: int = 2,
    warmup_iters: int = 5,
    iters: int = 20,
    extra_args: Sequence[str] = (),
    launcher_args: Sequence[str] = (),
    check_binaries: bool = False,
    mpi: MpiFlavor | None = None,
) -> list[RunSpec]:
    """Command lines for a sweep: every op x NCCL_ALGO x NCCL_PROTO (None = NCCL's choice).

    ``gpus`` is GPUs per node. ``local``: one process, ``-g gpus`` (nodes must be 1).
    ``srun``: ``srun -N nodes --ntasks-per-node gpus <bin> -g 1``. ``mpirun``:
    ``mpirun -np nodes*gpus --map-by ppr:gpus:node -x NCCL_ALGO ... <bin> -g 1`` (Open MPI,
    ``mpi="openmpi"``) or ``mpirun -np nodes*gpus -ppn gpus -genv NCCL_ALGO Ring
    ... <bin> -g 1`` (``mpi="mpich"``: Hydra, MPICH's and Intel MPI's launcher; see
    :func:`mpirun_argv`); without ``mpi``, the flavour of the mpirun on ``$PATH``
    (:func:`detect_mpi`; ValueError when there is none or it is no MPI this knows).
    Sizes are read in costmodel's units (``8``, ``1MiB``, ``8GiB`` = 8 x 2**30, ``8GB`` = 8e9)
    and handed to nccl-tests as whole bytes: nccl-tests reads ``-b``/``-e`` itself as a whole
    number with an optional binary K/M/G, so ``1.5GB`` or ``1e9`` would be 1 B to it and
    ``16TB`` 16 B, after our checks had passed them. With no ``algos`` (``protos``), an
    ``NCCL_ALGO`` (``NCCL_PROTO``) set in the environment, which every run inherits, is the
    sweep's value (:func:`inherited_env`).
    """
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher: {launcher!r} is not known; allowed: {', '.join(LAUNCHERS)}")
    # an NCCL_ALGO / NCCL_PROTO the runs inherit is the sweep's, recorded (inherited_env)
    algos, protos, _ = inherited_env(algos, protos)
    if mpi is not None and mpi not in MPI_FLAVORS:
        raise ValueError(f"mpi: {mpi!r} is not known; allowed: {', '.join(MPI_FLAVORS)}")
    from .._limits import LIMITS

    # every argument is checked before anything is launched, with the CLI's limits
    for name, value in (
        ("gpus", gpus),
        ("nodes", nodes),
        ("step_factor", step_factor),
        ("iters", iters),
        ("warmup", warmup_iters),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise must_be(name, "an integer", value)
        LIMITS[name].check(name, value)
    LIMITS["min_bytes"].check("min_bytes", min_bytes)
    LIMITS["max_bytes"].check("max_bytes", max_bytes)
    if units.parse_bytes(min_bytes) > units.parse_bytes(max_bytes):
        raise ValueError(f"min_bytes: {min_bytes!r} is above max_bytes {max_bytes!r}")
    for name, items in (("extra_args", extra_args), ("launcher_args", launcher_args)):
        if isinstance(items, str) or not all(isinstance(x, str) for x in items):
            raise must_be(name, "a list of strings", items)
    ops = list(ops)
    unknown = [op for op in ops if op not in BINARIES]
    if unknown:
        raise ValueError(
            f"ops: {unknown[0]!r} has no nccl-tests binary; allowed: {', '.join(sorted(BINARIES))}"
        )
    for name, values in (("algos", algos), ("protos", protos)):
        for choice in values or []:
            if choice is not None:  # NCCL's grammar (parse_nccl_list): a list per function too
                var = f"NCCL_{name[:-1].upper()}"
                _names.parse_nccl_list(str(choice), var, lead=f"{name}: {str(choice)!r}")
    if launcher == "local" and nodes != 1:
        raise ValueError(
            f"nodes: {nodes} nodes need `launcher` 'srun' or 'mpirun'; 'local' runs one node"
        )
    flavor = resolve_mpi(mpi, launcher)  # every other argument checked first
    specs = []
    for op in ops:
        folder = build_dir or os.environ.get("NCCL_TESTS_BUILD")
        binary = (
            find_binary(op, build_dir)
            if check_binaries
            # in the folder given, absolute as find_binary's; none given: $PATH's, by name
            else (Path(folder).absolute() if folder else Path()) / f"{BINARIES.get(op, op)}_perf"
        )
        if op not in BINARIES:
            raise ValueError(
                f"op: {op!r} has no nccl-tests binary; allowed: {', '.join(sorted(BINARIES))}"
            )
        for algo in algos or [None]:
            for proto in protos or [None]:
                if refused_by_nccl(op, algo, proto) is not None:
                    continue  # NCCL has no such kernel: the run could only fail (refused_runs)
                env = {}
                if algo:
                    env["NCCL_ALGO"] = algo
                if proto:
                    env["NCCL_PROTO"] = proto
                env.update(launch_env())  # NVLS off, CollNet on: carried by every run
                test = [
                    str(binary),
                    "-b",
                    str(units.parse_bytes(min_bytes)),
                    "-e",
                    str(units.parse_bytes(max_bytes)),
                    "-f",
                    str(step_factor),
                    "-w",
                    str(warmup_iters),
                    "-n",
                    str(iters),
                    *extra_args,
                ]
                if launcher == "local":
                    argv = [*test, "-g", str(gpus)]
                elif launcher == "srun":
                    argv = [
                        "srun",
                        "-N",
                        str(nodes),
                        "--ntasks-per-node",
                        str(gpus),
                        *launcher_args,
                        *test,
                        "-g",
                        "1",
                    ]
                else:
                    argv = mpirun_argv(flavor, nodes, gpus, env, [*launcher_args, *test, "-g", "1"])
                key = "-".join(
                    [op] + [f"{k.removeprefix('NCCL_').lower()}_{v}" for k, v in env.items()]
                )
                specs.append(
                    RunSpec(key, op, algo, proto, tuple(argv), env, ranks=nodes * gpus, nodes=nodes)
                )
    if ops and not specs:
        raise ValueError(
            f"algos: NCCL runs none of this sweep: {'; '.join(refused_runs(ops, algos, protos))}"
        )
    return specs


def mpirun_argv(
    mpi: MpiFlavor, nodes: int, gpus: int, env: dict[str, str], rest: Sequence[str]
) -> list[str]:
    """An ``mpirun`` line starting ``nodes x gpus`` ranks, ``gpus`` per node, each rank with
    ``env`` (NCCL_ALGO, NCCL_PROTO), then ``rest`` (launcher arguments, the binary and its own).

    Open MPI (``"openmpi"``) places ranks with ``--map-by ppr:G:node`` and passes a variable of
    the launching environment to every rank with ``-x NAME`` (the runner sets it there). Hydra
    (``"mpich"``: the ``mpirun``/``mpiexec`` of MPICH, Intel MPI, MVAPICH) knows neither: it
    places ranks with ``-ppn G`` and sets a variable on every rank with ``-genv NAME VALUE``;
    Open MPI's flags make it stop with an unknown-option error before any rank starts.
    ``costmodel.validation.nccl_tests``' launch-line reader reads both spellings back.

    >>> " ".join(mpirun_argv("openmpi", 2, 8, {"NCCL_ALGO": "Ring"}, ["all_reduce_perf"]))
    'mpirun -np 16 --map-by ppr:8:node -x NCCL_ALGO all_reduce_perf'
    >>> " ".join(mpirun_argv("mpich", 2, 8, {"NCCL_ALGO": "Ring"}, ["all_reduce_perf"]))
    'mpirun -np 16 -ppn 8 -genv NCCL_ALGO Ring all_reduce_perf'
    """
    if mpi == "openmpi":
        place = ["--map-by", f"ppr:{gpus}:node"]
        exports = [x for name in env for x in ("-x", name)]
    elif mpi == "mpich":
        place = ["-ppn", str(gpus)]
        exports = [x for name, value in env.items() for x in ("-genv", name, value)]
    else:
        raise ValueError(f"mpi: {mpi!r} is not known; allowed: {', '.join(MPI_FLAVORS)}")
    return ["mpirun", "-np", str(nodes * gpus), *place, *exports, *rest]


# ------------------------------------------------------------------------------ results file
_ATTEMPT_LOCK = threading.Lock()
_last_attempt_ns = 0


def attempt_stamp() -> str:
    """A run attempt's name, ``<YYYYmmddTHHMMSS>.<ns>-<pid>`` (local time, nanoseconds, the
    writer's process id): unique and in start order, so :func:`load_results` keeps the latest.

    Both writers use it: the nccl-tests runner (one per run) and the torch job (one per job).
    Within a process each stamp is at least 1 ns after the one before, so two attempts never
    share a name even where the clock is coarser than the loop (two calls within one tick, or a
    clock stepped back); two processes differ by their pid. The torch job's stamp was
    ``YYYYmmddTHHMMSS``: two jobs of one configuration within a second shared it, and
    load_results kept both as one attempt, counting every row twice. Such older names still
    read and sort: a shorter stamp of the same second sorts first.

    >>> stamps = [attempt_stamp() for _ in range(1000)]
    >>> len(set(stamps)) == 1000 and stamps == sorted(stamps)
    True
    """
    global _last_attempt_ns
    with _ATTEMPT_LOCK:
        now = time.time_ns()
        now = max(now, _last_attempt_ns + 1)
        _last_attempt_ns = now
    seconds, nanos = divmod(now, 10**9)
    return time.strftime("%Y%m%dT%H%M%S", time.localtime(seconds)) + f".{nanos:09d}-{os.getpid()}"


def append_results(path: str | Path, df: pd.DataFrame, **constant: Any) -> int:
    """Append the rows of ``df`` (plus ``constant`` columns) to a JSON-lines results file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = df.assign(**constant) if constant else df
    text = frame.to_json(orient="records", lines=True, date_format="iso")
    drop_partial_line(path)
    with path.open("a", encoding="utf-8") as handle:
        if text:
            handle.write(text if text.endswith("\n") else text + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return len(frame)


def drop_partial_line(path: str | Path) -> int:
    """Cut an unterminated last line (a writer killed mid-row) off a JSON-lines file; a last
    line that is a whole JSON row missing its newline (an editor dropped it) is terminated
    instead, never cut.

    Without this, the next appended row would be glued onto the fragment and the file would no
    longer read (:func:`load_results` refuses a damaged line that is not the last). The fragment
    is not a readable row either way. Returns the number of bytes removed (0 when the file ends
    with a newline or does not exist).
    """
    path = Path(path)
    if not path.is_file():
        return 0
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        handle.seek(0)
        data = handle.read()
        keep = data.rfind(b"\n") + 1  # 0 when the fragment is the only line
        if _whole_row(data[keep:]):  # a complete row missing its newline (an edited file)
            handle.write(b"\n")  # is terminated, never cut: it reads as a row
            return 0
        handle.truncate(keep)
        return size - keep


def _whole_row(tail: bytes) -> bool:
    """Whether the unterminated last line of a results file is a whole JSON row (a file whose
    editor dropped the final newline), not a fragment left by a killed writer.

    >>> _whole_row(b'{"op": "all_reduce"}'), _whole_row(b'{"op": "all_re')
    (True, False)
    """
    try:
        return isinstance(json.loads(tail), dict)
    except ValueError:  # JSONDecodeError and a UnicodeDecodeError are ValueErrors
        return False


def cut_line(path: str | Path) -> int | None:
    """The line number of an unterminated last line of a JSON-lines file (a writer killed
    mid-row), or None (the file ends with a newline, is empty or does not exist). The writers
    say it (:func:`cut_line_note`) before :func:`drop_partial_line` removes the fragment, so a
    row lost to a kill is never dropped without a word."""
    path = Path(path)
    if not path.is_file():
        return None
    data = path.read_bytes()
    if not data or data.endswith(b"\n") or _whole_row(data[data.rfind(b"\n") + 1 :]):
        return None
    return data.count(b"\n") + 1


def cut_line_note(path: str | Path, line: int) -> str:
    """One line saying a writer removed the cut-off ``line`` of ``path`` before appending."""
    return (
        f"{path}: line {line} was cut off (a job killed while writing it?): removed before "
        "appending; the rows before it are kept"
    )


def describe_runs(df: pd.DataFrame) -> list[str]:
    """One line per run key of a results frame: ranks, nodes, sizes, NCCL env, rows.

    ``validate compare`` prints these, so a folder holding several configurations (a rerun
    with other ``--gpus`` or sizes) says which rows it compares.
    """
    if "run_key" not in df.columns or df.empty:
        return []
    out = []
    for key, rows in df.groupby(df["run_key"].astype(str), sort=True):
        parts = [str(key)]
        for column, label in (("ranks", "ranks"), ("nodes", "nodes")):
            if column in rows and rows[column].notna().any():
                parts.append(
                    f"{label} {', '.join(str(int(v)) for v in sorted(set(rows[column].dropna())))}"
                )
        if "size_bytes" in rows:
            parts.append(f"sizes {int(rows.size_bytes.min())}..{int(rows.size_bytes.max())} B")
        for column in ("algo_env", "proto_env"):
            if column in rows and rows[column].notna().any():
                parts.append(
                    f"{column.split('_')[0].upper()}={','.join(sorted(set(map(str, rows[column].dropna()))))}"
                )
        parts.append(units.format_counted(len(rows), "row"))
        out.append(": ".join([parts[0], ", ".join(parts[1:])]))
    return out


def incomplete_note(df: pd.DataFrame) -> str | None:
    """One line naming the runs of a results frame whose rows are a failed attempt's
    (``complete`` False: timed out, a rank died, or rows of another shape than launched) and
    that no later attempt completed (:func:`load_results` keeps them then), or None.

    ``validate compare`` and ``calibrate`` print it: those rows were used without a word.
    """
    if "complete" not in df.columns or df.empty:
        return None
    bad = ~df["complete"].fillna(True).astype(bool)
    if not bad.any():
        return None
    keys = df.loc[bad, "run_key"].astype(str) if "run_key" in df.columns else None
    runs = sorted(set(keys)) if keys is not None else []
    return (
        f"{units.format_counted(int(bad.sum()), 'row')} from runs that did not finish "
        f"(complete = false: timed out, a rank died, or another shape than launched)"
        + (
            f": {', '.join(runs[:3])}" + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
            if runs
            else ""
        )
        + "; see runs.jsonl, rerun to replace them"
    )


def load_results(path: str | Path, *, keep_incomplete: bool = False) -> pd.DataFrame:
    """Read a results file (JSON lines from the runner or the torch job) into a DataFrame.

    Rows of an attempt marked ``complete = False`` are dropped when a complete attempt of the
    same ``run_key`` exists, and when none completed only the latest attempt's rows are kept (so
    retries are never counted twice), unless ``keep_incomplete``. A last line cut off (a job
    killed while writing it) is skipped, the complete rows before it kept, and said: a
    :class:`UserWarning` naming the file and the line, also in ``df.attrs["cut_row"]``
    (``{"line", "message"}``, as the nccl-tests parser says a row the end of a log cut off),
    which ``validate compare`` and ``calibrate`` print as a ``warning:`` line. A line that
    repeats an earlier one exactly (the file appended to itself) is read once and said the
    same way (``df.attrs["repeated_rows"]``). Raises
    ValueError naming the file when nothing can be read, and naming the line and the field
    when a row is not a JSON object or a number column holds something else. The bytes are
    decoded as an nccl-tests log's are (:func:`costmodel.textfile.decode`: UTF-8, or
    UTF-16/32 by a byte-order mark; UTF-16 without a mark is read, with a
    :class:`~costmodel.textfile.GuessedEncodingWarning` also in ``df.attrs["encoding_note"]``,
    which ``validate compare`` and ``calibrate`` print as a ``warning:`` line); a line that
    is not JSON in a file whose head reads as an nccl-tests log (:func:`~costmodel.validation.nccl_tests.looks_like_nccl_tests`) is refused
    with the advice to rename it .log or .txt: every command reads a ``.jsonl`` file as results
    and any other file as a log, by the suffix.
    """
    import warnings

    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"results file {str(path)!r} does not exist")
    records: list[dict[str, Any]] = []
    lines: list[int] = []  # each record's line, for a refusal that names it
    cut: int | None = None
    # UTF-8, or UTF-16/32 by a byte-order mark (a file redirected by Windows PowerShell 5), as
    # an nccl-tests log is decoded; undecodable bytes are one line naming the offset
    try:
        decoded = textfile.decode(path.read_bytes(), str(path), what="results file")
    except textfile.TextDecodeError as exc:
        raise NcclTestsParseError(0, exc.message, str(path)) from exc
    text = decoded.text
    handle = io.StringIO(text, newline=None)  # universal newlines, as open() reads them
    first_at: dict[str, int] = {}  # each row's text -> the line it was first read on
    repeated: list[tuple[int, int]] = []  # (line, the earlier line it repeats)
    for number, line in enumerate(handle, start=1):
        # a byte-order mark inside the file: two files each saved with one joined into one
        # (`cat a.jsonl b.jsonl`, PowerShell's Get-Content a, b): the mark is no part of the row
        line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        if line.strip() in first_at:
            # the same row again, to the last digit of its time: a file appended to itself
            # or a run's rows appended twice (`cat results.jsonl >> all.jsonl` run twice),
            # never a second measurement (each attempt names itself): read once, said
            repeated.append((number, first_at[line.strip()]))
            continue
        first_at[line.strip()] = number
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            # no row read yet, and the first lines show an nccl-tests log (below a few lines
            # of a launcher's or the user's, as the bundled logs' provenance)
            head = itertools.islice(io.StringIO(text, newline=None), 64)
            if not records and any(looks_like_nccl_tests(x) for x in head):
                # a log saved as .jsonl: read as results by its suffix, as every command does
                raise ValueError(
                    f"{path}: line {number} is not JSON; the file looks like an nccl-tests "
                    "log: rename it .log or .txt (a .jsonl file is read as JSON lines results)"
                ) from None
            # not the last line, or no start of a row ({...: text such as a shell's "Killed"
            # appended): the file is damaged, say where; a last line that starts a row is one
            # a killed job cut off
            if handle.read(1) or not line.lstrip().startswith("{"):
                raise ValueError(f"{path}: line {number} is not JSON") from None
            cut = number
            continue
        if not isinstance(record, dict):  # a list or a number read as columns 0, 1, ...
            raise ValueError(
                f"{path}: line {number} is JSON but not an object ({type(record).__name__}); "
                "a results file holds one {...} row per line"
            )
        records.append(record)
        lines.append(number)
    message = (
        None
        if cut is None
        else f"{path}: line {cut} is cut off (a job killed while writing it?): skipped, "
        f"{units.format_counted(len(records), 'complete row')} before it kept"
    )
    if not records:
        raise ValueError(
            f"results file {str(path)!r} holds no rows"
            + (f" (line {cut}, its only row, is cut off)" if cut is not None else "")
        )
    if message is not None:
        warnings.warn(message, UserWarning, stacklevel=2)
    twice = (
        None
        if not repeated
        else f"{path}: {units.format_counted(len(repeated), 'line')} repeat earlier lines "
        f"exactly (line {repeated[0][0]} is line {repeated[0][1]}'s row again: the file "
        "appended to itself, or a run's rows appended twice?): each row is read once"
    )
    if twice is not None:
        warnings.warn(twice, UserWarning, stacklevel=2)
    guessed = None if decoded.note is None else f"{path}: {decoded.note}"
    if guessed is not None:
        warnings.warn(guessed, textfile.GuessedEncodingWarning, stacklevel=2)
    df = pd.DataFrame.from_records(records)
    _check_columns(df, path, lines)
    if not keep_incomplete and {"run_key", "complete", "attempt"} <= set(df.columns):
        # one attempt per run: the latest complete one, else the latest. A runner killed between
        # appending a run's rows and recording it as done reruns it; the earlier complete
        # attempt is then dropped here, never counted twice. Runs of other configurations (other
        # GPUs, sizes, env) under the same key are kept apart by ``config``.
        run = ["run_key", "config"] if "config" in df.columns else ["run_key"]
        # a row without one of these (written by an older version, before runs carried a
        # config, then appended to by a newer job) reads as "": pandas 3 keeps NaN through
        # astype(str), and the join of the key failed with a TypeError for the whole file
        ids = df[run].astype(object).fillna("").astype(str).agg("\x1f".join, axis=1)
        complete = df.complete.astype(bool)
        # attempts are named <YYYYmmddTHHMMSS>[.<ns>]-<pid>: the largest is the latest
        attempt = df.attempt.astype(object).fillna("").astype(str)
        best_complete = attempt.where(complete).groupby(ids).transform("max")
        latest = attempt.groupby(ids).transform("max")
        chosen = best_complete.where(best_complete.notna(), latest)
        df = df[attempt == chosen].reset_index(drop=True)
    if message is not None:
        df.attrs["cut_row"] = {"line": cut, "message": message}
    if twice is not None:
        df.attrs["repeated_rows"] = twice
    if guessed is not None:
        df.attrs["encoding_note"] = guessed
    return df


_RESULT_NUMBERS = (
    "size_bytes",
    "time_s",
    "time_min_s",
    "time_max_s",
    "ranks",
    "nodes",
    "gpus_per_node",
    "count",
    "iters",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "params",
    "gradient_bytes",
    "layers",
    "width",
    "bucket_cap_mb",
    "accumulation",
    "compute_time_s",
    "compute_iters",
)
"""Columns of a results file that hold numbers (the runner's and the torch job's rows)."""


def _check_columns(df: pd.DataFrame, path: Path, lines: list[int]) -> None:
    """Refuse, naming the file, the line and the field, a results file holding a value that is
    not a number where a number belongs (:data:`_RESULT_NUMBERS`; it failed later with pandas'
    own "Invalid comparison between dtype=str and int")."""
    import pandas as pd

    for column in _RESULT_NUMBERS:
        if column not in df:
            continue
        values = df[column]
        numeric = pd.to_numeric(values, errors="coerce")
        bad = numeric.isna() & values.notna() | values.map(lambda v: isinstance(v, bool))
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(
                f"{path}: line {lines[i]}: {column} {values.iloc[i]!r} is not a number"
            )
        if values.dtype == object:  # numbers mixed with nulls: one numeric column
            df[column] = numeric


def check_appendable(path: str | Path) -> None:
    """Refuse a JSON-lines file the writers would append UTF-8 rows to while it is in another
    encoding (UTF-16 or UTF-32, e.g. re-saved by Windows PowerShell 5): the file would then hold
    two encodings and no reader could read it whole. UTF-8 with a byte-order mark is fine (its
    appended rows are UTF-8). A file that does not exist yet is fine, and so is an empty one.

    Refuse too a file that is not a results file: its first line that is not blank is not a
    JSON row (``{...}``; a row a killed writer cut off starts so too). An nccl-tests log saved
    as ``.jsonl``, or notes, were appended to (the user's file changed, and then unreadable as
    results: "line 1 is not JSON"), and their last line, without a newline, removed as a cut
    row (:func:`drop_partial_line`).

    Raises ValueError naming the file, what it holds and the fix.
    """
    path = Path(path)
    if not path.is_file():
        return
    with path.open("rb") as handle:  # the head: the encoding's sniff, and 64 lines of a log
        head = handle.read(max(textfile.SNIFF_BYTES, 64 * 1024))
    name = textfile.encoding_name(head[: textfile.SNIFF_BYTES])
    if name != "UTF-8":
        raise ValueError(
            f"{path}: is {name} text; new rows are appended as UTF-8, which would leave one file "
            f"in two encodings: save it as UTF-8 (e.g. iconv -f {name.replace(' ', '')} -t "
            "UTF-8) or write to another file or folder"
        )
    text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    number, first = next(
        ((n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()),
        (0, ""),
    )
    if first and not first.lstrip().startswith("{"):
        what = (
            "an nccl-tests log, not a results file (rename it .log or .txt)"
            if any(looks_like_nccl_tests(line) for line in text.splitlines()[:64])
            else f"not a results file (line {number} is not a JSON row: {first.strip()[:40]!r})"
        )
        raise ValueError(
            f"{path}: is {what}; rows are never appended to another kind of file: write to a "
            "new .jsonl file or folder"
        )


def _runs_done(runs_path: Path) -> set[tuple[str, str | None]]:
    """(key, config) of every run recorded ``ok`` (config None for records of older runners,
    which therefore match no spec and are measured again). Decoded as the results file is
    (:mod:`costmodel.textfile`: an editor's UTF-8 byte-order mark no longer hides the first
    record, so its run is not measured again; undecodable bytes are refused naming the file)."""
    done = set()
    if runs_path.is_file():
        text = textfile.decode_text(runs_path.read_bytes(), str(runs_path), what="runs file")
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("status") == "ok" and "key" in record:
                done.add((record["key"], record.get("config")))
    return done


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line, flushed to disk, after dropping a line an earlier
    killed writer left cut (``runs.jsonl`` here; a compute job's rows, ``compute_bench``)."""
    path = Path(path)
    drop_partial_line(path)  # a record cut by a kill would swallow this one
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete temporary files a killed writer left in ``out`` (costmodel.atomic's
    ``.<name>.*.tmp``); they are never a result. Returns what was removed."""
    removed = []
    for folder in (out, out / "logs"):
        for tmp in folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()
                removed.append(tmp)
    return removed


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """In the child before exec: get SIGTERM when the runner dies, even by SIGKILL (Linux
    prctl PR_SET_PDEATHSIG = 1); elsewhere a no-op (the watchdog kills the group). A runner
    killed between the fork and the prctl call is caught by the parent check after it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
        if os.getppid() == 1:  # the runner died before the prctl: do not start at all
            os._exit(1)


_WATCHDOG = """\
import os, signal, sys, time
group = int(sys.argv[1])
if sys.stdin.buffer.read() != b"done":  # EOF without 'done': the runner died (SIGKILL)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(2)
"""


def _watchdog(group: int) -> subprocess.Popen[bytes] | None:
    """A small process outside the benchmark's group that kills the group if the runner dies
    without saying ``done`` (SIGKILL): PR_SET_PDEATHSIG reaches the direct child only, and a
    wrapper script or launcher (srun, mpirun) leaves grandchildren running."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(group)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:  # pragma: no cover - no interpreter to start: PDEATHSIG alone
        return None


def _release(watchdog: subprocess.Popen[bytes] | None) -> None:
    """Tell the watchdog the run is over (the group is gone or was killed by us)."""
    if watchdog is None or watchdog.stdin is None:
        return
    with contextlib.suppress(OSError):
        watchdog.stdin.write(b"done")
        watchdog.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        watchdog.wait(timeout=5)


class _Terminated(KeyboardInterrupt):
    """SIGTERM/SIGHUP to the runner, handled as Ctrl-C: kill the child's group, record, stop."""


@contextlib.contextmanager
def _signals_interrupt() -> Any:
    """Within: SIGTERM and SIGHUP raise :class:`_Terminated` (main thread only; elsewhere the
    handlers cannot be set and the defaults stay)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated(f"signal {signum}")

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def _execute(spec: RunSpec, log_path: Path, timeout_s: float) -> tuple[str, int | None, str]:
    """Run one command, streaming its output to log_path. Returns (status, rc, reason)."""
    env = {**os.environ, **spec.env}
    with log_path.open("x", encoding="utf-8") as log:  # a new file: never one already there
        # quoted as a shell reads it (a build folder with a space), as the torch job's log
        log.write(f"# costmodel runner: {shlex.join(spec.argv)}\n")
        for name, value in spec.env.items():
            log.write(f"# costmodel runner env: {name}={shlex.quote(value)}\n")
        log.flush()
        try:
            # own session = own process group, killed as a whole (srun/mpirun and their ranks);
            # and the child is told when the runner dies without cleaning up (SIGKILL)
            proc = subprocess.Popen(
                spec.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            return "failed", None, f"cannot start {spec.argv[0]}: {exc.strerror}; see {log_path}"
        watchdog = None
        try:  # the watchdog's start inside: an interrupt while it starts still kills the child
            watchdog = _watchdog(proc.pid)
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return (
                "timeout",
                None,
                f"no exit after {timeout_s:g} s (killed); partial log: {log_path}",
            )
        except BaseException:  # Ctrl-C, SIGTERM (as _Terminated), SystemExit: no orphan
            _kill(proc)
            raise
        finally:
            _release(watchdog)
    if rc != 0:
        failure = _first_failure(log_path)
        why = f"nccl-tests: {failure!r}" if failure else "a rank died or the binary failed"
        return "failed", rc, f"exit code {rc} ({why}); see {log_path}"
    return "ok", rc, ""


def _first_failure(log_path: Path) -> str | None:
    """The first failure line nccl-tests printed in a run's log (``host: Test NCCL failure
    common.cu:N 'unhandled system error / ...'``), cut to 160 characters: what a failed run's
    one-line error quotes, so the cause is read without opening the log; None when the log has
    none (a rank killed, a launcher's error) or cannot be read."""
    from .nccl_tests._text import _TEST_FAILURE_RE

    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            for line in log:
                if _TEST_FAILURE_RE.search(line):
                    return " ".join(line.split())[:160]
    except OSError:
        return None
    return None


#: bytes read from a job's pipe at a time, and the longest line held back from the log
_CHUNK_BYTES = 65536


def _pump(pipe: Any, terminal: Any, log: Any, lock: threading.Lock) -> None:
    """Copy one of a job's pipes to ``terminal`` as it comes and to ``log`` line by line.

    The terminal gets each chunk at once (the job streams as it did without a log); the log
    gets whole lines under ``lock``, so a line of stdout and one of stderr never interleave
    mid-line in it (a line longer than :data:`_CHUNK_BYTES` goes in pieces; a stream ending
    without a newline gets one in the log). Nothing more than one line is held in memory. A
    terminal that went away (a closed pipe) stops the copy to it, not to the log.
    """
    target = getattr(terminal, "buffer", None)
    pending = b""
    try:  # the pipe or log closed under a pump that outlived its job (run_logged): stop
        while chunk := os.read(pipe.fileno(), _CHUNK_BYTES):
            if terminal is not None:
                try:
                    if target is not None:
                        target.write(chunk)
                    else:
                        terminal.write(chunk.decode("utf-8", "replace"))
                    terminal.flush()
                except (OSError, ValueError):
                    terminal = None
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if not cut and len(pending) < _CHUNK_BYTES:
                continue
            cut = cut or len(pending)
            with lock:
                log.write(pending[:cut])
            pending = pending[cut:]
        if pending:  # the stream ended mid-line: ended here, so the other's next line
            with lock:  # starts a line of its own
                log.write(pending + b"\n")
    except (OSError, ValueError):
        return


def run_logged(argv: Sequence[str], log_path: str | Path) -> int:
    """Run ``argv`` as :func:`subprocess.call` does (same terminal, same process group, so
    Ctrl-C reaches it too) and keep its stdout and stderr, together, in ``log_path``.

    The job's stdout still goes to ours and its stderr to ours as they come (a tee, read in
    64 KiB chunks, never the whole output in memory); the log gets both, whole lines in the
    order they arrived, written unbuffered, so a runner killed mid-job leaves the log up to
    that point. The log starts with one ``# costmodel: <command line>`` line. ``log_path``
    must not exist (created with mode ``x``: no user file is ever overwritten; its folder is
    created). Python children run unbuffered (``PYTHONUNBUFFERED=1``, unless set), so their
    lines arrive when printed, as on a terminal. Returns the job's exit code; an interrupt
    (Ctrl-C) stops the job, SIGTERM then SIGKILL after 10 s, and re-raises.
    """

    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONUNBUFFERED": "1", **os.environ}
    with log_path.open("xb", buffering=0) as log:
        log.write(f"# costmodel: {shlex.join(argv)}\n".encode())
        lock = threading.Lock()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        pumps = [
            threading.Thread(target=_pump, args=(pipe, terminal, log, lock), daemon=True)
            for pipe, terminal in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))
        ]
        try:  # from the job's start: a Ctrl-C while the pumps start stops the job too (it
            for pump in pumps:  # was left running, the interrupt raised before this try)
                pump.start()
            code = proc.wait()
        except BaseException:  # Ctrl-C: no job left behind. SIGTERM first, so a launcher
            with contextlib.suppress(ProcessLookupError):  # (torchrun) stops its ranks
                proc.terminate()
            # reaped by pid (_reap), not proc.wait(): the interrupt may have come inside
            # proc.wait() above and left Popen's wait lock held (see _kill); SIGKILL after 10 s
            if not _reap(proc, 10.0):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                _reap(proc, None)
            raise
        finally:
            for pump in pumps:  # a grandchild holding the pipe open does not hold us
                if pump.ident is not None:  # started (an interrupt may come before)
                    pump.join(timeout=10)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
    return code


def _kill(proc: subprocess.Popen) -> None:
    """Kill the child's process group (SIGTERM, SIGKILL after 5 s) and reap the child.

    Reaped with os.waitpid, not proc.wait(): a signal whose handler raised inside
    proc.wait(timeout=...) (SIGTERM as _Terminated, Ctrl-C) can leave Popen's internal wait lock
    held (CPython runs the handler between the lock's acquire and its try), and proc.wait() then
    never returns: the runner hung after SIGTERM with its benchmark already dead.
    """
    for sig, grace_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):  # the group is gone: reap the child
            os.killpg(proc.pid, sig)
        if _reap(proc, grace_s):
            return


def _reap(proc: subprocess.Popen, timeout_s: float | None) -> bool:
    """Wait for ``proc`` (None: without limit) by its pid, setting ``proc.returncode``; False
    when it still runs after timeout_s."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while proc.returncode is None:
        try:
            pid, status = os.waitpid(proc.pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped already (by the wait the signal interrupted)
            return True
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
        elif deadline is not None and time.monotonic() >= deadline:
            return False
        else:
            time.sleep(0.01)
    return True


def run_sweep(
    specs: Sequence[RunSpec],
    out_dir: str | Path,
    *,
    timeout_s: float = 1800.0,
    progress: bool | None = None,
) -> SweepSummary:
    """Run ``specs`` in order; append each run's parsed rows to ``out_dir/results.jsonl``.

    Runs already ``ok`` in ``out_dir/runs.jsonl`` with the same configuration
    (:attr:`RunSpec.config`) are skipped. Each run's raw log is kept in
    ``out_dir/logs/<key>.<attempt>.log``. Ctrl-C, SIGTERM or SIGHUP stop the sweep after killing
    the running job's whole process group; what finished is on disk. Stale temporary files of a
    killed earlier run are removed first. Never raises for a failed run: it is reported in the
    summary.
    """
    out = Path(out_dir)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    runs_path, results_path = out / "runs.jsonl", out / "results.jsonl"
    for path in (runs_path, results_path):  # before anything runs: appended as UTF-8
        check_appendable(path)
    _remove_stale_temporaries(out)
    summary = SweepSummary(out)
    done = _runs_done(runs_path)
    todo = [s for s in specs if (s.key, s.config) not in done]
    summary.skipped = [s.key for s in specs if (s.key, s.config) in done]
    cut = cut_line(results_path) if todo else None
    if cut is not None:  # removed before this sweep appends: said, not silently
        drop_partial_line(results_path)
        summary.notes.append(cut_line_note(results_path, cut))
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
        )
        bar.start()
        bar.add_task("nccl-tests", total=len(todo))
    try:
        with _signals_interrupt():
            _run_all(todo, out, runs_path, results_path, timeout_s, summary, bar)
    finally:
        if bar is not None:
            bar.stop()
    return summary


def _run_all(
    todo: Sequence[RunSpec],
    out: Path,
    runs_path: Path,
    results_path: Path,
    timeout_s: float,
    summary: SweepSummary,
    bar: Any,
) -> None:
    """Run each spec: execute, parse, append its rows, record it (see :func:`run_sweep`)."""
    task = bar.task_ids[0] if bar is not None else None
    for spec in todo:
        if bar is not None:
            bar.update(task, description=f"running {spec.key}")
        attempt = attempt_stamp()
        log_path = out / "logs" / f"{spec.key}.{attempt}.log"
        started = time.time()
        try:
            status, rc, reason = _execute(spec, log_path, timeout_s)
        except KeyboardInterrupt:
            append_record(
                runs_path,
                {
                    "key": spec.key,
                    "config": spec.config,
                    "status": "interrupted",
                    "log": str(log_path),
                    "attempt": attempt,
                },
            )
            summary.interrupted = True
            summary.failed[spec.key] = "interrupted"
            break
        rows, parse_note = 0, ""
        try:
            df = parse_nccl_tests(
                log_path.read_text(encoding="utf-8", errors="replace"),
                source=str(log_path),
                op=spec.op,
                strict=status == "ok",
            )
        except NcclTestsParseError as exc:
            df, parse_note = None, str(exc)
            if status == "ok":
                status, reason = "failed", f"log does not parse: {exc}"
        if df is not None and status == "ok":
            wrong = _ranks_problem(spec, df)
            if wrong:  # measured, but not what was launched: kept, marked, and the sweep fails
                status, reason = "failed", wrong
        if df is not None:
            if spec.algo:
                df["algo_env"] = df["algo_env"].where(df["algo_env"].notna(), spec.algo)
            if spec.proto:
                df["proto_env"] = df["proto_env"].where(df["proto_env"].notna(), spec.proto)
            for column, value in launch_columns(spec.env).items():
                df[column] = value
            rows = append_results(
                results_path,
                df,
                source="nccl-tests",
                backend="nccl",
                # the key names the configuration too: a rerun with other --gpus, sizes or env
                # into the same folder is another run, never mixed with the first under one key
                run_key=f"{spec.key}@{spec.config[:8]}",
                config=spec.config,
                attempt=attempt,
                complete=status == "ok",
                log=str(log_path),
            )
        summary.rows += rows
        append_record(
            runs_path,
            {
                "key": spec.key,
                "config": spec.config,
                "status": status,
                "rc": rc,
                "reason": reason,
                "rows": rows,
                "log": str(log_path),
                "attempt": attempt,
                "argv": list(spec.argv),
                "env": spec.env,
                "seconds": round(time.time() - started, 3),
                "parse_note": parse_note,
            },
        )
        if status == "ok":
            summary.ok.append(spec.key)
        else:
            summary.failed[spec.key] = reason + (f" ({rows} partial rows kept)" if rows else "")
        if bar is not None:
            bar.advance(task)


def _ranks_problem(spec: RunSpec, df: pd.DataFrame) -> str | None:
    """Why a finished run's rows are not the run that was launched (their rank count, from the
    log's device lines or busbw/algbw ratio, is not the launch's nodes x GPUs), or None.

    Under srun or mpirun an nccl-tests build without ``MPI=1`` runs one independent one-rank
    job per process (every row ranks = 1, the log those jobs interleaved); locally the GPUs the
    job sees may be fewer than ``-g`` asked for. Either way the rows would be compared and
    calibrated as the launch's shape without a word.
    """
    if spec.ranks is None or "ranks" not in df or df["ranks"].isna().all():
        return None
    found = sorted({int(v) for v in df["ranks"].dropna()})
    if found == [spec.ranks]:
        return None
    hint = (
        "an nccl-tests build without MPI=1 runs one job per process under "
        f"{spec.argv[0]}: rebuild with MPI=1 (see the build steps)"
        if spec.argv and spec.argv[0] in ("srun", "mpirun")
        else "nccl-tests saw other GPUs than -g asked for (CUDA_VISIBLE_DEVICES?)"
    )
    shape = f"{units.format_counted(spec.nodes, 'node')} x {spec.ranks // max(spec.nodes, 1)} GPUs"
    return (
        f"the log's rows ran on {', '.join(map(str, found))} ranks, the launch asked for "
        f"{spec.ranks} ({shape}): {hint}"
    )


def run_nccl_tests(
    out_dir: str | Path,
    ops: Sequence[str] = ("all_reduce",),
    *,
    timeout_s: float = 1800.0,
    progress: bool | None = None,
    **plan: Any,
) -> SweepSummary:
    """Plan and run a sweep (:func:`plan_sweep` arguments), checking the binaries first.

    Missing binaries raise :class:`NcclTestsMissing` before anything runs, with build steps.
    """
    specs = plan_sweep(ops, check_binaries=True, **plan)
    return run_sweep(specs, out_dir, timeout_s=timeout_s, progress=progress)
