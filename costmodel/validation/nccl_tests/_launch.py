"""The launch line of an nccl-tests run: how many processes, on how many nodes, how many per node.

A log often keeps the command that started it (a collector's ``# COMMAND: ...`` line, a shell
trace ``+ srun ...``). :func:`parse_launch` reads the process count and placement from the
launcher's own options, in each launcher's spelling (the option names as their manuals give them):

- **Open MPI** ``mpirun``/``mpiexec``/``orterun``/``prterun`` (mpirun(1)): ``-np``/``--np``/``-n``
  processes; ``-N``/``-npernode``/``--npernode`` per node; ``--map-by ppr:N:node``; ``-H``/
  ``--host``/``-host`` ``h1:8,h2:8`` (a host per node, ``:slots`` its processes; a host named
  without ``:N`` is one slot per mention, ``a,a,b,b`` two each; no ``-np``: one process per
  slot); ``--hostfile``/``--machinefile``/``--default-hostfile``.
- **MPICH / Intel MPI Hydra** ``mpirun``/``mpiexec``/``mpiexec.hydra`` (Intel MPI Developer
  Reference, "Global Hydra Options"; MPICH's "Using the Hydra Process Manager"): ``-n``/``-np``;
  ``-ppn``/``-perhost`` per node; ``-hosts h1,h2`` or ``h1:8,h2:8`` (a comma-separated list of
  nodes, ``:N`` processes on each); ``-f``/``-hostfile``/``-machinefile``. HPE PALS ``mpiexec``
  alike (``--ppn``, ``--hosts``).
- **Slurm** ``srun`` (srun(1)): ``-N``/``--nodes`` nodes (a range ``2-4`` is not a count: the
  nodes stay unknown, ``4-4`` is 4); ``-n``/``--ntasks``; ``--ntasks-per-node``; ``-w``/
  ``--nodelist`` a host list with Slurm's ranges (``node[01-04,07]``: five nodes; a value with
  a ``/`` is a file), counted when ``-N`` is not given; ``-F``/``--nodefile``.
- **Cray ALPS** ``aprun``: ``-n`` processing elements, ``-N`` per node.

Only the launcher's options are read: they end at the nccl-tests binary (``*_perf``), whose own
``-n`` (iterations) and ``-N`` (cycles) mean something else; ``-g``/``--ngpus`` after it is the
GPUs each process drives. Only what the line itself settles is read: a hostfile is never
opened (the log does not hold it, and a path in a log is not ours to read), a value that is not
a number (``-n $((NODES*8))``) or a range says nothing, processes on hosts with different slots
(``-H a:8,b:4``) have no one per-node count; each of these is said in :attr:`Launch.unknown`
(and so in :meth:`Launch.describe`, which both surfaces show).
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
    "--hosts": "hosts",  # HPE PALS mpiexec
    "-f": "hostfile",
    "-hostfile": "hostfile",
    "--hostfile": "hostfile",
    "-machinefile": "hostfile",
    "--machinefile": "hostfile",
    "--default-hostfile": "hostfile",
}
_SRUN = {
    "-N": "nodes",
    "--nodes": "nodes",
    "-n": "ranks",
    "--ntasks": "ranks",
    "--ntasks-per-node": "per_node",
    "--tasks-per-node": "per_node",
    "-w": "hosts",
    "--nodelist": "hosts",
    "-F": "hostfile",
    "--nodefile": "hostfile",
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
    #: what the line names but does not settle, in words (a hostfile, a range of nodes, a
    #: shell expression): ``("nodes unknown: the hostfile ./hosts is not read",)``
    unknown: tuple[str, ...] = ()
    #: False where the line places the processes unevenly (``-H a:8,b:4``) or leaves it to the
    #: mapper: ranks / nodes is then no per-node count
    even: bool = True

    def describe(self) -> str:
        """``"mpirun: 16 processes, 8 per node, 2 nodes"`` (what was read, in words), then what
        stays unknown (``"; nodes unknown: --nodes 2-4 is a range"``)."""
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
        return (
            f"{self.launcher}: "
            + (", ".join(parts) or "no process count")
            + "".join(f"; {note}" for note in self.unknown)
        )


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
            glued = re.match(r"^(-[nN])(\d[\d-]*)$", token)  # srun -N2, -N2-4, aprun -n32
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
            if fact == "hosts":
                facts["hosts_option"] = name
        i += 1
    ranks, per_node, nodes, unknown, even = _settle(launcher, facts)
    line = " ".join(text[match.start() :].replace("\\\n", " ").split())
    return Launch(
        launcher, line, ranks, per_node, nodes, gpus, facts.get("hostfile"), tuple(unknown), even
    )


_OPTION_WORDS = {"ranks": "processes", "per_node": "per node", "nodes": "nodes"}


def _count(value: str | None, what: str, unknown: list[str]) -> int | None:
    """A whole number of ``what``, or None with a note in ``unknown`` when the line gives
    something else (a shell expression ``$((N*8))``, a range ``2-4``)."""
    if value is None:
        return None
    if _INT.match(value):
        return int(value)
    low, dash, high = value.partition("-")
    if dash and _INT.match(low) and _INT.match(high):
        if int(low) == int(high):
            return int(low)
        unknown.append(f"{what} unknown: {value} is a range")
        return None
    unknown.append(f"{what} unknown: {value!r} is not a number")
    return None


def _hostlist(value: str) -> list[tuple[str, int | None]] | None:
    """Host mentions of a host option as (name, slots or None): ``a:8,b:8``, ``a,a,b``, and
    Slurm's ranges ``node[01-04,07]`` (one mention per host of the range). None when the value
    cannot be read (an unbalanced bracket, a range too large to be a job's).

    >>> [h for h, _ in _hostlist("gpu[01-03,07],login1")]
    ['gpu01', 'gpu02', 'gpu03', 'gpu07', 'login1']
    >>> _hostlist("n1:8,n2:4")
    [('n1', 8), ('n2', 4)]
    """
    out: list[tuple[str, int | None]] = []
    for part in re.findall(r"(?:[^,\[\]]|\[[^\[\]]*\])+", value):
        name, colon, slots = part.partition(":")
        if colon and not _INT.match(slots):
            return None
        names = [""]
        for piece in re.split(r"(\[[^\[\]]*\])", name):
            if not piece.startswith("["):
                if "[" in piece or "]" in piece:
                    return None
                names = [n + piece for n in names]
                continue
            items: list[str] = []
            for item in piece[1:-1].split(","):
                low, dash, high = item.partition("-")
                if not (_INT.match(low) and (not dash or _INT.match(high))):
                    return None
                hi = int(high) if dash else int(low)
                grown = len(out) + (len(items) + hi - int(low) + 1) * len(names)
                if hi < int(low) or grown > _MAX_HOSTS:  # bounds the work on any line
                    return None
                items += [str(k).zfill(len(low)) for k in range(int(low), hi + 1)]
            names = [n + item for n in names for item in items]
        out += [(n, int(slots) if colon else None) for n in names if n]
        if len(out) > _MAX_HOSTS:
            return None
    return out


#: Hosts a host list may name before it is not read (no job has more nodes than this).
_MAX_HOSTS = 100_000


def _settle(
    launcher: str, facts: dict[str, str]
) -> tuple[int | None, int | None, int | None, list[str], bool]:
    """(processes, per node, nodes, what stays unknown, even) from a launcher's options.

    A host list counts its distinct hosts (the nodes) unless ``-N``/``--nodes`` says; its slots
    (``h:8``; Open MPI's ``-H``/``--host`` count a host named without ``:N`` as one slot per
    mention) give the processes per node when every host has as many, and the processes when
    the line gives no count. A hostfile is never opened: the nodes it would give stay unknown.
    """
    unknown: list[str] = []
    ranks = _count(facts.get("ranks"), "processes", unknown)
    per_node = _count(facts.get("per_node"), "per node", unknown)
    nodes = _count(facts.get("nodes"), "nodes", unknown)
    ppr = re.match(r"^ppr:(\d+):node\b", facts.get("map_by", ""))
    if ppr and per_node is None:
        per_node = int(ppr.group(1))
    even = True  # the processes spread evenly over the nodes (no host list says otherwise)
    option = facts.get("hosts_option", "")
    hosts = facts.get("hosts", "")
    if hosts and launcher == "srun" and "/" in hosts:  # srun(1): a '/' makes it a file name
        facts.setdefault("hostfile", hosts)
        hosts = ""
    mentions = _hostlist(hosts) if hosts else None
    if hosts and mentions is None:
        shown = hosts if len(hosts) <= 60 else hosts[:57] + "..."
        unknown.append(f"nodes unknown: host list {shown!r} is not read")
    if mentions and "nodes" not in facts:
        slots: dict[str, int | None] = {}
        one_slot = option in ("-H", "--host", "-host")  # Open MPI: a mention is one slot
        for host, n in mentions:
            add = n if n is not None else (1 if one_slot else None)
            before = slots.get(host, 0)
            slots[host] = None if add is None or before is None else before + add
        nodes = len(slots)
        counts = set(slots.values())
        total = None if None in counts else sum(v for v in slots.values() if v is not None)
        if ranks is None and total is not None and "ranks" not in facts:
            ranks = total
        if ranks is not None and total is not None and ranks != total and per_node is None:
            # fewer or more processes than slots: where they land is the mapper's choice
            nodes, even = None, False
            unknown.append(
                f"nodes and per node unknown: {ranks} processes on {total} slots of "
                f"{len(slots)} hosts"
            )
        elif len(counts) > 1 and per_node is None:
            even = False
            listed = ", ".join(f"{h}:{n}" for h, n in slots.items())
            unknown.append(f"per node unknown: the hosts have different slots ({listed[:80]})")
        elif per_node is None and len(counts) == 1 and None not in counts:
            per_node = counts.pop()
    if ranks is None and nodes is not None and per_node is not None:
        ranks = nodes * per_node
    if nodes is None and ranks is not None and per_node and ranks % per_node == 0:
        nodes = ranks // per_node
    if even and per_node is None and ranks is not None and nodes and ranks % nodes == 0:
        per_node = ranks // nodes
    if "hostfile" in facts and nodes is None:
        unknown.append(f"nodes unknown: the hostfile {facts['hostfile']} is not read")
    return ranks, per_node, nodes, unknown, even


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
