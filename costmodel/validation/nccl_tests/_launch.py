"""The launch line of an nccl-tests run: how many processes, on how many nodes, how many per node.

A log often keeps the command that started it (a collector's ``# COMMAND: ...`` line, a shell
trace ``+ srun ...``). :func:`parse_launch` reads the process count and placement from the
launcher's own options, in each launcher's spelling (the option names as their manuals give them):

- **Open MPI** ``mpirun``/``mpiexec``/``orterun``/``prterun`` (mpirun(1)): ``-np``/``--np``/``-n``
  processes; ``-N``/``-npernode``/``--npernode`` per node; ``--map-by ppr:N:node``; ``-H``/
  ``--host`` ``h1:8,h2:8`` (a host per node, ``:slots`` per node); ``--hostfile`` (a file the
  log does not hold: noted, not read).
- **MPICH / Intel MPI Hydra** ``mpirun``/``mpiexec``/``mpiexec.hydra`` (Intel MPI Developer
  Reference, "Global Hydra Options"; MPICH's "Using the Hydra Process Manager"): ``-n``/``-np``;
  ``-ppn``/``-perhost`` per node; ``-hosts h1,h2`` (a comma-separated list of nodes); ``-f``/
  ``-hostfile``/``-machinefile`` (a file: noted, not read). HPE PALS ``mpiexec --ppn`` alike.
- **Slurm** ``srun`` (srun(1)): ``-N``/``--nodes`` nodes (a range ``2-4`` says nothing exact);
  ``-n``/``--ntasks``; ``--ntasks-per-node``; ``-w``/``--nodelist`` a plain comma list.
- **Cray ALPS** ``aprun``: ``-n`` processing elements, ``-N`` per node.

Only the launcher's options are read: they end at the nccl-tests binary (``*_perf``), whose own
``-n`` (iterations) and ``-N`` (cycles) mean something else; ``-g``/``--ngpus`` after it is the
GPUs each process drives. A value that is not a number (``-n $((NODES*8))``) says nothing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

__all__ = ["Launch", "find_launch", "parse_launch"]

_LAUNCHERS = {
    "mpirun": "mpirun",
    "mpiexec": "mpiexec",
    "mpiexec.hydra": "mpiexec",
    "orterun": "mpirun",
    "prterun": "mpirun",
    "srun": "srun",
    "aprun": "aprun",
}
# a launcher word at a token start (after a prompt, "+ " of set -x, "#", a pipe, a path)
_LAUNCH_RE = re.compile(
    r"(?:^|(?<=[\s;|&$+#/:]))(mpirun|mpiexec(?:\.hydra)?|orterun|prterun|srun|aprun)\s"
)
_BINARY_RE = re.compile(r"(?:^|/)\w+_perf(?:_mpi)?$")
_INT = re.compile(r"^\d+$")

# option -> the fact it sets, per launcher family ("ranks", "per_node", "nodes", "hosts",
# "map_by", "hostfile"); options not listed are skipped with their value when they take one
_MPI = {
    "-np": "ranks",
    "--np": "ranks",
    "-n": "ranks",
    "--n": "ranks",
    "-N": "per_node",  # Open MPI: processes per node (npernode)
    "-npernode": "per_node",
    "--npernode": "per_node",
    "-ppn": "per_node",  # Hydra (MPICH, Intel MPI)
    "--ppn": "per_node",  # HPE PALS mpiexec
    "-perhost": "per_node",  # Intel MPI
    "--map-by": "map_by",
    "-map-by": "map_by",
    "-H": "hosts",
    "--host": "hosts",
    "-host": "hosts",
    "-hosts": "hosts",
    "-f": "hostfile",
    "-hostfile": "hostfile",
    "--hostfile": "hostfile",
    "-machinefile": "hostfile",
    "--machinefile": "hostfile",
}
_SRUN = {
    "-N": "nodes",
    "--nodes": "nodes",
    "-n": "ranks",
    "--ntasks": "ranks",
    "--ntasks-per-node": "per_node",
    "-w": "hosts",
    "--nodelist": "hosts",
}
_APRUN = {"-n": "ranks", "-N": "per_node"}
_OPTIONS = {"mpirun": _MPI, "mpiexec": _MPI, "srun": _SRUN, "aprun": _APRUN}
# options that take no value (so the next token is not skipped as theirs)
_FLAGS = {
    "-l",
    "-u",
    "--label",
    "--unbuffered",
    "--exclusive",
    "--tag-output",
    "--allow-run-as-root",
    "--oversubscribe",
    "--report-bindings",
    "-v",
    "--verbose",
    "-rr",
    "-bootstrap-exec-args",
    "--display-map",
}


@dataclass(frozen=True)
class Launch:
    """What a launch line says (None: it does not say). ``ranks`` and ``per_node`` count
    processes; ``gpus_per_process`` is nccl-tests' ``-g`` on the same line."""

    launcher: str
    text: str
    ranks: int | None = None
    per_node: int | None = None
    nodes: int | None = None
    gpus_per_process: int | None = None
    hostfile: str | None = None

    def describe(self) -> str:
        """``"mpirun: 16 processes, 8 per node, 2 nodes"`` (what was read, in words)."""
        parts = [
            f"{v} {what}"
            for v, what in (
                (self.ranks, "processes"),
                (self.per_node, "per node"),
                (self.nodes, "nodes"),
                (
                    self.gpus_per_process,
                    "GPU per process" if self.gpus_per_process == 1 else "GPUs per process",
                ),
            )
            if v is not None
        ]
        return f"{self.launcher}: " + (", ".join(parts) or "no process count")


def _tokens(text: str) -> list[str]:
    text = text.replace("\\\n", " ").replace("\n", " ")
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:  # an unbalanced quote in a pasted line: split on blanks
        return text.split()


def parse_launch(text: str) -> Launch | None:
    """The first launcher command in ``text`` (one command line, continuation lines joined),
    read as :mod:`this module <._launch>` says; None when no launcher is named.

    >>> parse_launch("mpirun -n 16 -ppn 8 -hosts n1,n2 ./all_reduce_perf -b 8 -n 20").describe()
    'mpirun: 16 processes, 8 per node, 2 nodes'
    >>> parse_launch("srun -N 2 --ntasks-per-node=8 all_gather_perf -g 1").describe()
    'srun: 16 processes, 8 per node, 2 nodes, 1 GPU per process'
    """
    match = _LAUNCH_RE.search(text)
    if match is None:
        return None
    tokens = _tokens(text[match.start() :])
    launcher = _LAUNCHERS[tokens[0].rsplit("/", 1)[-1]]
    options = _OPTIONS[launcher]
    facts: dict[str, str] = {}
    gpus: int | None = None
    i = 1
    while i < len(tokens):
        token = tokens[i]
        if _BINARY_RE.search(token):  # the nccl-tests binary: its -g is the GPUs per process
            rest = tokens[i + 1 :]
            for j, arg in enumerate(rest[:-1]):
                if arg in ("-g", "--ngpus") and _INT.match(rest[j + 1]):
                    gpus = int(rest[j + 1])
            for arg in rest:
                if arg.startswith("--ngpus=") and _INT.match(arg.split("=", 1)[1]):
                    gpus = int(arg.split("=", 1)[1])
            break
        if not token.startswith("-"):
            i += 1  # a wrapper (a container runner, a script) before the binary
            continue
        name, eq, value = token.partition("=")
        if not eq:
            glued = re.match(r"^(-[nN])(\d+)$", token)  # srun -N2, aprun -n32
            if glued:
                name, value = glued.group(1), glued.group(2)
            elif token not in _FLAGS and i + 1 < len(tokens):
                value = tokens[i + 1]
                if value.startswith("-") or _BINARY_RE.search(value):
                    value = ""  # a flag this table does not know: nothing taken from it
                else:
                    i += 1
        fact = options.get(name)
        if fact is not None and value and fact not in facts:
            facts[fact] = value
        i += 1
    ranks = int(facts["ranks"]) if _INT.match(facts.get("ranks", "")) else None
    per_node = int(facts["per_node"]) if _INT.match(facts.get("per_node", "")) else None
    nodes = int(facts["nodes"]) if _INT.match(facts.get("nodes", "")) else None
    ppr = re.match(r"^ppr:(\d+):node\b", facts.get("map_by", ""))
    if ppr and per_node is None:
        per_node = int(ppr.group(1))
    hosts = facts.get("hosts", "")
    if hosts and "[" not in hosts and nodes is None:  # a plain list, not a Slurm range
        names = [h for h in hosts.split(",") if h]
        slots = {int(s) for _, _, s in (h.partition(":") for h in names) if _INT.match(s)}
        nodes = len({h.partition(":")[0] for h in names})
        if per_node is None and len(slots) == 1 and all(":" in h for h in names):
            per_node = slots.pop()
    if ranks is None and nodes is not None and per_node is not None:
        ranks = nodes * per_node
    if nodes is None and ranks is not None and per_node and ranks % per_node == 0:
        nodes = ranks // per_node
    if per_node is None and ranks is not None and nodes and ranks % nodes == 0:
        per_node = ranks // nodes
    line = " ".join(text[match.start() :].replace("\\\n", " ").split())
    return Launch(launcher, line, ranks, per_node, nodes, gpus, facts.get("hostfile"))


def find_launch(meta: dict[str, str], lines: list[str]) -> Launch | None:
    """The run's launch line: a collector's ``# COMMAND...: ...`` (or ``# launch: ...``) value
    first, else the first line of the log that names a launcher (``+ srun ...``, ``$ mpirun``)."""
    for key, value in meta.items():
        if "COMMAND" in key.upper() or key.upper().startswith("LAUNCH"):
            found = parse_launch(value)
            if found is not None:
                return found
    for line in lines:
        found = parse_launch(line)
        if found is not None:
            return found
    return None
