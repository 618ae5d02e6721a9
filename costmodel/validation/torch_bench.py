"""Time torch.distributed collectives and DDP steps; rank 0 writes JSON lines.

Launch one process per rank with ``torchrun``, ``srun`` or ``mpirun``::

    torchrun --standalone --nproc_per_node 2 -m costmodel.validation.torch_bench -o results.jsonl
    srun -N 2 --ntasks-per-node 8 python -m costmodel.validation.torch_bench --backend nccl ...
    mpirun -np 16 --map-by ppr:8:node -x MASTER_ADDR=node01 python -m costmodel.validation.torch_bench ...
    mpirun -np 16 -ppn 8 -genv MASTER_ADDR node01 python -m costmodel.validation.torch_bench ...  # MPICH, Intel MPI

A job launched this way prints to wherever the launcher puts its output (Slurm: the batch
job's ``slurm-<job>.out``); its rows name that file as their ``log`` (``--job-log FILE``, or
under sbatch Slurm's default output file when it is there: :func:`slurm_output_file`), so
``costmodel validate compare`` reads NCCL's debug lines from it as from the log ``costmodel
validate torch`` keeps.

Under srun the ranks per node come from the step (``SLURM_STEP_TASKS_PER_NODE``) and
``MASTER_ADDR`` defaults to the step's first node; under mpirun (OpenMPI's or MPICH's variables,
read before Slurm's) a job over several nodes needs ``MASTER_ADDR`` exported.

Backend ``nccl`` on GPUs, ``gloo`` on CPUs (``auto`` picks by ``torch.cuda.is_available()``).
Timing method (docs/design.md, machine notes, "torch on CPU"): one thread per rank on CPU,
buffers preallocated once at the largest size (a fresh 256 MiB tensor per call costs 170 ms of
page faults there), warm-up iterations, a barrier before each timed op, the time of an iteration
is the max over ranks, and the reported time is the median over iterations.

Sizes follow nccl-tests (DESIGN.md section 2): ``size_bytes`` is the per-rank buffer as
nccl-tests prints it (all-gather: the full output; reduce-scatter: the full input), and
busbw = algbw x factor (all-reduce 2(N-1)/N; all-gather, reduce-scatter, all-to-all (N-1)/N;
broadcast 1). torch is imported only in this module (the ``validate`` extra).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any

from costmodel.tables import BUSBW_FACTOR
from costmodel.units import format_counted, parse_bytes, parse_count

# the ops this benchmark implements (a subset of tables.OPS: no plain reduce here); busbw
# factors: nccl-tests doc/PERFORMANCE.md, the one table costmodel.tables.BUSBW_FACTOR
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


def _slurm_tasks_here() -> str | None:
    """Tasks of this srun step on this node, from ``SLURM_STEP_TASKS_PER_NODE`` (srun sets it
    for every step, ``"8(x2)"`` or ``"3,2(x2)"`` in node order) at ``SLURM_NODEID``; else
    ``SLURM_NTASKS_PER_NODE`` (set only with ``--ntasks-per-node``, and inherited from sbatch
    by a step that asked for another count). None when neither is there."""
    text = os.environ.get("SLURM_STEP_TASKS_PER_NODE") or os.environ.get("SLURM_TASKS_PER_NODE")
    if text:
        counts: list[str] = []
        for part in text.split(","):
            count, _, times = part.partition("(x")
            counts += [count.strip()] * (int(times.rstrip(")")) if times else 1)
        node = int(os.environ.get("SLURM_NODEID", "0") or 0)
        if counts and 0 <= node < len(counts) and counts[node].isdigit():
            return counts[node]
    per_node = os.environ.get("SLURM_NTASKS_PER_NODE")
    return per_node.split("(")[0] if per_node else None


def _first_slurm_host(hostlist: str) -> str | None:
    """First host of a Slurm hostlist (``gpu[07-09,12],login1`` -> ``gpu07``), as
    ``scontrol show hostnames`` lists it first; None for a form this does not read (a
    hostlist with two bracket groups in one name).

    >>> _first_slurm_host("gpu[07-09,12],login1"), _first_slurm_host("a100-1,a100-2")
    ('gpu07', 'a100-1')
    """
    head, bracket, rest = hostlist.strip().partition("[")
    if not bracket:
        return head.split(",")[0] or None
    inside, _, tail = rest.partition("]")
    suffix = tail.split(",")[0]
    if "[" in suffix or "," in head:
        return None if "," not in head else head.split(",")[0]
    return head + inside.split(",")[0].split("-")[0] + suffix


def _launcher_env() -> str | None:
    """Map srun / mpirun rank variables onto torch's env:// names when torchrun did not.

    Ranks spread over several nodes need ``MASTER_ADDR``, the host of rank 0: under Slurm it is
    the step's first node (the store rank 0 opens there), with srun's own rank variables or,
    under ``srun --mpi=pmi2`` (a cluster's ``MpiDefault``), the PMI ones srun sets alike;
    under mpirun no variable names it, so it must be exported. The default 127.0.0.1 is right on one node only: on several, every
    other node's ranks would wait for a store on their own host until the timeout. Returns
    why the job cannot start (one line), or None.
    """
    if "RANK" in os.environ:
        return None
    # MPI's own variables first: mpirun inside a Slurm job leaves the batch step's
    # SLURM_PROCID (0) in every rank's environment, which is not the rank
    pairs = (
        (
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE",
        ),
        ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""),
    )
    slurm = False
    for rank, size, local, local_size in pairs:
        if rank in os.environ and size in os.environ:
            # srun's own tasks: its rank variables, or a PMI's that srun set to the same
            # rank and size (--mpi=pmi2 sets PMI_RANK and PMI_SIZE to the step's task id and
            # count); mpirun inside sbatch leaves the batch step's SLURM_PROCID 0 and its
            # one task, so its ranks are not the step's
            slurm = rank == "SLURM_PROCID" or (
                os.environ.get("SLURM_PROCID") == os.environ[rank]
                and os.environ.get("SLURM_STEP_NUM_TASKS") == os.environ[size]
            )
            os.environ["RANK"], os.environ["WORLD_SIZE"] = os.environ[rank], os.environ[size]
            os.environ["LOCAL_RANK"] = os.environ.get(local, os.environ.get("SLURM_LOCALID", "0"))
            here = os.environ.get(local_size) if local_size else None
            if not here and "SLURM_PROCID" in os.environ:  # srun --mpi=pmi2 sets PMI_RANK only
                here = _slurm_tasks_here()
            if here:
                os.environ["LOCAL_WORLD_SIZE"] = here.split("(")[0]
            break
    else:
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    os.environ.setdefault("MASTER_PORT", "29500")
    if "MASTER_ADDR" in os.environ:
        return None
    world = int(os.environ["WORLD_SIZE"])
    nodes = os.environ.get("SLURM_STEP_NUM_NODES") or os.environ.get("SLURM_NNODES")
    several = (
        int(nodes) > 1
        if slurm and nodes and nodes.isdigit()
        else world > int(os.environ.get("LOCAL_WORLD_SIZE", world))
    )
    if not several:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        return None
    hostlist = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
    first = _first_slurm_host(hostlist) if slurm and hostlist else None
    if first:
        os.environ["MASTER_ADDR"] = first
        return None
    return (
        "MASTER_ADDR is not set and the ranks span several nodes: export MASTER_ADDR=<host "
        "of rank 0> (Open MPI's mpirun: -x MASTER_ADDR; MPICH/Intel MPI: -genv MASTER_ADDR "
        "<host>; Slurm: $(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1))"
    )


def slurm_output_file(env: Mapping[str, str] | None = None) -> str | None:
    """The batch job's output file under Slurm's default name, when it is there: the job's
    log for rows of a job launched with srun inside sbatch (its ranks' output goes only there).

    sbatch without ``--output`` writes the job's output (every srun step's too) to
    ``slurm-%j.out``, for an array job ``slurm-%A_%a.out``, in the folder it was submitted
    from (``SLURM_SUBMIT_DIR``). Slurm exports no variable naming the file, so another
    ``--output`` name is not found here: give it with ``--job-log``. None outside Slurm, or
    when no such file is there (``srun`` from ``salloc`` writes to the terminal).

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "slurm-1234.out"), "w").close()
    >>> env = {"SLURM_JOB_ID": "1234", "SLURM_SUBMIT_DIR": folder}
    >>> slurm_output_file(env) == os.path.join(folder, "slurm-1234.out")
    True
    >>> slurm_output_file({**env, "SLURM_JOB_ID": "99"}) is None  # not there: not guessed
    True
    """
    names: Mapping[str, str] = os.environ if env is None else env
    folder, job = names.get("SLURM_SUBMIT_DIR"), names.get("SLURM_JOB_ID")
    if not folder or not job:
        return None
    array, task = names.get("SLURM_ARRAY_JOB_ID"), names.get("SLURM_ARRAY_TASK_ID")
    name = f"slurm-{array}_{task}.out" if array and task else f"slurm-{job}.out"
    path = os.path.join(os.path.abspath(folder), name)
    return path if os.path.isfile(path) else None


def measured_counts(sizes: list[int], ranks: int, elem: int = 4) -> tuple[list[int], str | None]:
    """The element counts the job times for ``sizes`` [B] on ``ranks`` ranks, and a line saying
    what was rounded or dropped (None where every size is measured as asked).

    Each size is rounded down to whole ``elem``-byte (float32) elements divisible by the ranks,
    as nccl-tests rounds its per-rank counts (every op then splits evenly); a size below
    ``ranks x elem`` B has no such count and is dropped, and sizes that round to one count are
    timed once. ``--min-bytes 3 --max-bytes 12`` on 2 ranks measured only 8 B, said nowhere.
    The line names the dropped sizes and those rounded by more than 1 % (4096 B on 3 ranks,
    measured as 4092 B, is not named: the rows say their own size).

    >>> measured_counts([3, 6, 12], 2)
    ([2], 'sizes rounded down to whole float32 elements divisible by the 2 ranks: 3 B, 6 B dropped (below 8 B); 12 B measured as 8 B')
    >>> measured_counts([1024, 2048], 8)
    ([256, 512], None)
    >>> measured_counts([4096], 3)
    ([1023], None)
    """
    counts: list[int] = []
    dropped: list[str] = []
    rounded: list[str] = []
    for size in sizes:
        count = size // elem
        count -= count % ranks  # all ops divisible by n, as nccl-tests rounds per-rank counts
        if count < ranks:
            dropped.append(f"{size} B")
            continue
        if size - count * elem > 0.01 * size:  # more than nccl-tests' own rounding shows
            rounded.append(f"{size} B measured as {count * elem} B")
        if count not in counts:
            counts.append(count)
    if not dropped and not rounded:
        return counts, None
    parts = []
    if dropped:
        parts.append(f"{', '.join(dropped)} dropped (below {ranks * elem} B)")
    if rounded:
        parts.append(", ".join(rounded))
    return counts, (
        f"sizes rounded down to whole float32 elements divisible by the {ranks} ranks: "
        + "; ".join(parts)
    )


def sizes_between(min_bytes: int, max_bytes: int, factor: float) -> list[int]:
    """Geometric sweep as nccl-tests ``-b -e -f`` does (a factor below 2, e.g. 1.5, is allowed).

    >>> sizes_between(1024, 8192, 2)
    [1024, 2048, 4096, 8192]
    >>> sizes_between(2**20, 2**22, 2**0.5)
    [1048576, 1482910, 2097152, 2965821, 4194304]
    """
    if min_bytes < 1 or max_bytes < min_bytes or not factor > 1:
        raise ValueError(
            "sizes: need 1 <= `min_bytes` <= `max_bytes` and `factor` > 1, got "
            f"{min_bytes}, {max_bytes} and {factor}"
        )
    out, step = [], 0
    while (size := round(min_bytes * factor**step)) <= max_bytes * (1 + 1e-12):
        out.append(min(int(size), int(max_bytes)))
        step += 1
    return out


def device_name(torch: Any, device: Any) -> str:
    """What the rows ran on, in the ``device`` column: a CUDA device's name as nccl-tests prints
    it (``NVIDIA H100 80GB HBM3``), so ``validate compare`` finds the cluster preset it points
    to and warns when ``--cluster`` has another GPU, as for nccl-tests rows; ``cpu`` on CPUs.
    It was ``cuda`` for every GPU, which names none.

    >>> from types import SimpleNamespace as NS
    >>> fake = NS(cuda=NS(get_device_name=lambda d: "NVIDIA H100 80GB HBM3"))
    >>> device_name(fake, NS(type="cuda")), device_name(fake, NS(type="cpu"))
    ('NVIDIA H100 80GB HBM3', 'cpu')
    """
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return str(device.type)


#: job arguments that do not change what is measured (where it goes, how it is labelled)
_NOT_CONFIG = frozenset({"output", "run_key", "verbose", "attempt", "job_log"})


def nccl_env(backend: str, environ: Any = None) -> dict[str, str | None]:
    """The NCCL_ALGO and NCCL_PROTO a job on ``backend`` runs under, as the nccl-tests runner's
    rows name them (``algo_env``, ``proto_env``; None: NCCL's own choice), read from the
    environment every rank inherits: ``validate compare`` predicts a row pinned to its
    NCCL_ALGO, so an exported ``NCCL_ALGO=Tree`` the rows did not name was compared with
    NCCL's own choice. gloo reads neither: both None. A value NCCL would refuse is refused as
    the nccl-tests sweep refuses it, in its words (ValueError, one line:
    :func:`costmodel.validation.runner.inherited_nccl`); a list per function
    (``allreduce:tree``, NCCL 2.24+) is valid.

    >>> nccl_env("nccl", {"NCCL_ALGO": "Tree"})
    {'algo_env': 'Tree', 'proto_env': None}
    >>> nccl_env("gloo", {"NCCL_ALGO": "Tree"})
    {'algo_env': None, 'proto_env': None}
    """
    from costmodel.validation.runner import inherited_nccl

    env = os.environ if environ is None else environ
    if backend != "nccl":
        return {"algo_env": None, "proto_env": None}
    remedy = "unset it for NCCL's own choice (the torch job sets none of its own)"
    return {
        "algo_env": inherited_nccl("NCCL_ALGO", env, remedy),
        "proto_env": inherited_nccl("NCCL_PROTO", env, remedy),
    }


def _launch_columns() -> dict[str, bool]:
    """The rows' ``nvls`` / ``collnet`` from the NCCL variables the ranks inherit
    (:func:`costmodel.validation.runner.launch_columns`)."""
    from costmodel.validation.runner import launch_columns, launch_env

    return launch_columns(launch_env())


def job_config(args: argparse.Namespace, backend: str, world: int, local_world: int) -> str:
    """Hash of what a job measures: its arguments (sizes, ops, iterations, DDP settings; not
    the output file, the run key or ``-v``), the backend it ran and its ranks per node and in
    all. :func:`costmodel.validation.runner.load_results` keeps the latest attempt of each
    (run key, config): a rerun of the same job replaces the earlier rows, a job of another
    configuration in the same file stays beside them.

    >>> a = parse_args(["--max-bytes", "1MiB"])
    >>> job_config(a, "gloo", 2, 2) == job_config(a, "gloo", 2, 2) != job_config(a, "gloo", 3, 3)
    True
    """
    import hashlib

    settings = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_CONFIG}
    # the NCCL_ALGO/NCCL_PROTO the job runs under, where set: a rerun under another is another
    # configuration (none set: the hash it always had)
    pinned: dict[str, Any] = {k: v for k, v in nccl_env(backend).items() if v is not None}
    if backend == "nccl":
        pinned.update(_launch_columns())
    blob = json.dumps(
        [settings, backend, world, local_world, *([pinned] if pinned else [])],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def job_summary(records: list[dict[str, Any]], output: str) -> str:
    """What a finished job wrote, in one line: ranks, backend, nodes, the collective rows (ops,
    sizes) and DDP steps, rows appended and where, the run key ``validate compare`` lists.
    ``records``: the rows the job appended (rank 0's JSON lines). ``costmodel validate torch``
    prints it, as ``validate nccl-tests run`` prints its sweep's summary; it printed nothing.

    >>> rows = [{"kind": "collective", "op": "all_reduce", "size_bytes": s, "ranks": 2,
    ...          "nodes": 1, "backend": "gloo", "run_key": "torch@30228247"} for s in (4096, 8192)]
    >>> job_summary(rows, "t.jsonl")
    'torch job, 2 ranks on 1 node, gloo: all_reduce at 4096..8192 B (2 rows); 2 rows -> t.jsonl (run torch@30228247)'
    >>> job_summary([{**rows[0], "ranks": 1}], "t.jsonl").split(",")[1]
    ' 1 rank on 1 node'
    """
    from costmodel.units import format_counted

    if not records:
        return f"torch job: no rows written to {output}"

    def values(key: str) -> list[str]:
        return sorted({str(r[key]) for r in records if r.get(key) is not None}, key=_natural)

    collective = [r for r in records if r.get("kind", "collective") == "collective"]
    ddp = [r for r in records if r.get("kind") == "ddp_step"]
    ranks, nodes = values("ranks"), values("nodes")
    on = (
        format_counted(int(nodes[0]), "node")
        if len(nodes) == 1 and nodes[0].isdigit()
        else f"{'/'.join(nodes) or '?'} nodes"
    )
    shape = (
        format_counted(int(ranks[0]), "rank")
        if len(ranks) == 1 and ranks[0].isdigit()
        else f"{'/'.join(ranks) or '?'} ranks"
    ) + f" on {on}"
    parts = []
    if collective:
        sizes = [int(r["size_bytes"]) for r in collective if r.get("size_bytes") is not None]
        ops = ", ".join(dict.fromkeys(str(r.get("op")) for r in collective))
        span = f" at {min(sizes)}..{max(sizes)} B" if sizes else ""
        parts.append(f"{ops}{span} ({format_counted(len(collective), 'row')})")
    if ddp:
        parts.append(format_counted(len(ddp), "DDP step"))
    runs = values("run_key")
    return (
        f"torch job, {shape}, {'/'.join(values('backend')) or '?'}: {'; '.join(parts)}; "
        f"{format_counted(len(records), 'row')} -> {output}"
        + (f" (run {', '.join(runs)})" if runs else "")
    )


def _natural(text: str) -> tuple[int, str]:
    """Sort key: numbers by value ("8" before "16"), words after them."""
    return (int(text), "") if text.isdigit() else (10**18, text)


def backend_problem(backend: str, ranks_here: int) -> str | None:
    """Why ``backend`` cannot run ``ranks_here`` ranks on this machine, or None.

    ``nccl`` needs one CUDA GPU per rank (each rank sets its local rank's device): on a machine
    where torch sees no GPU (a CPU-only node, a CPU build of torch) it would fail in every rank
    inside ``torch.cuda.set_device``; ``gloo`` and ``auto`` (gloo without GPUs) run anywhere.
    """
    if backend != "nccl":
        return None
    import torch

    if not torch.cuda.is_available():
        return (
            "--backend nccl needs CUDA GPUs and torch sees none here "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False); "
            "use --backend gloo on CPUs"
        )
    found = torch.cuda.device_count()
    if ranks_here > found:
        return (
            f"--backend nccl runs one rank per GPU: {ranks_here} ranks on this node, "
            f"torch sees {format_counted(found, 'GPU')}; start at most {found}"
        )
    return None


def warm_up_ddp(ddp: Any, batch: Any) -> None:
    """Two plain steps of a new DDP wrapper before any step is timed. DDP lays out its
    gradient buckets in parameter order, records the order gradients arrive in during the
    first backward, and rebuilds its buckets once, in the second forward (torch 2.13
    ``DistributedDataParallel._pre_forward``: ``reducer._rebuild_buckets()``, then
    ``_has_rebuilt_buckets``). The one warm-up step the timing loop runs left that rebuild in
    the first timed step of the first setting: with gloo on this machine's 2 shared cores it
    took as long as the first step, about twice the later ones (29 vs 19 ms, 20 vs 10 ms, 22
    vs 16 ms in three runs of a 1M-parameter MLP), and the median of a few steps
    (``--ddp-steps 2``) read the step that much slower than the model's prediction."""
    for _ in range(2):
        ddp(batch).sum().backward()


class _Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.args = torch, dist, args
        backend = args.backend
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        self.backend = backend
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if backend == "nccl":
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            torch.set_num_threads(args.threads)
            self.device = torch.device("cpu")
        # NCCL: the process group bound to this rank's GPU (torch >= 2.3), so its barriers use
        # it rather than guessing ("barrier(): using the device under current context", a
        # warning per barrier on one H200 with torch 2.11, 2026-12-04)
        bound = self.device if backend == "nccl" else None
        dist.init_process_group(backend=backend, device_id=bound)
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))
        self.nodes = max(1, self.world // max(1, self.local_world))
        from costmodel.validation.runner import attempt_stamp, drop_partial_line

        # unique per job (sub-second, pid): two jobs within a second were one attempt; given
        # by `costmodel validate torch`, which names the job's log after it
        self.attempt = args.attempt or attempt_stamp()
        self.config = job_config(args, self.backend, self.world, self.local_world)
        # the job's output, named in every row (validate compare reads NCCL's debug lines
        # there): as given, absolute (a path relative to the job's folder named nothing once
        # read from elsewhere), else Slurm's default output file of this batch job
        self.job_log = os.path.abspath(args.job_log) if args.job_log else slurm_output_file()
        self.out = None
        if self.rank == 0:
            if args.job_log and not os.path.isfile(self.job_log or ""):
                print(
                    f"torch_bench: warning: --job-log {args.job_log} does not exist (yet); the "
                    "rows name it all the same",
                    file=sys.stderr,
                )
            drop_partial_line(args.output)  # a row cut by an earlier killed job
            self.out = open(args.output, "a", encoding="utf-8")  # noqa: SIM115

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def emit(self, record: dict[str, Any]) -> None:
        if self.out is None:
            return
        base = {
            "source": "torch",
            "backend": self.backend,
            "ranks": self.world,
            "nodes": self.nodes,
            "gpus_per_node": self.local_world,
            "device": device_name(self.torch, self.device),
            "torch_version": self.torch.__version__,
            "host": socket.gethostname(),
            "attempt": self.attempt,
            "complete": True,
            # the key names the configuration, as the nccl-tests runner's does: a job of other
            # ranks, sizes or backend appended to the same file is another run, never taken
            # for a retry of this one (load_results keeps one attempt per key and config)
            "run_key": f"{self.args.run_key}@{self.config[:8]}",
            "config": self.config,
            # the log of the job that measured the row (its output, torchrun's and each rank's)
            **({"log": self.job_log} if self.job_log else {}),
            # an exported NCCL_ALGO/NCCL_PROTO pins every collective: named as the runner's
            # rows name it, so validate compare predicts what ran
            **{k: v for k, v in nccl_env(self.backend).items() if v is not None},
            # NVLS off / CollNet on, as the runner's rows say them
            **(_launch_columns() if self.backend == "nccl" else {}),
        }
        self.out.write(json.dumps({**base, **record}) + "\n")
        self.out.flush()

    def timed(self, fn, iters: int, warmup: int) -> list[float]:
        """Per-iteration time, max over ranks [s]."""
        dist, torch = self.dist, self.torch
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(iters):
            dist.barrier()
            self.sync()
            start = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - start)
        tensor = torch.tensor(times, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.cpu().tolist()

    def _collective_fn(self, op: str, count: int) -> Any:
        """The timed call for ``op`` on ``count`` float32 elements of the preallocated buffers."""
        dist, n = self.dist, self.world
        part = count // n
        src, dst = self.send[:count], self.recv[:count]
        if op == "all_reduce":
            return lambda t=src: dist.all_reduce(t)
        if op == "broadcast":
            return lambda t=src: dist.broadcast(t, src=0)
        if op == "all_gather":
            return lambda o=list(dst.split(part)), t=self.send[:part]: dist.all_gather(o, t)
        if op == "reduce_scatter":
            return lambda o=dst[:part], i=list(src.split(part)): dist.reduce_scatter(o, i)
        return lambda o=dst, t=src: dist.all_to_all_single(o, t)

    def collectives(self) -> None:
        """Time every op x size; with ``--rounds R`` the sweep is repeated R times, interleaved.

        Interleaving spreads a burst of load from other processes over all sizes instead of
        spoiling one size; each row reports the median and the minimum over all iterations.
        """
        torch, n = self.torch, self.world
        sizes = sizes_between(self.args.min_bytes, self.args.max_bytes, self.args.factor)
        elem = 4  # float32
        top = max(sizes) // elem
        top -= top % n
        self.send = torch.ones(top, dtype=torch.float32, device=self.device)
        self.recv = torch.zeros(top, dtype=torch.float32, device=self.device)
        counts, rounding = measured_counts(sizes, n, elem)
        if rounding and self.rank == 0 and self.args.ops:  # said, not only seen in the rows
            print(f"torch_bench: {rounding}", file=sys.stderr)
        cases = [(op, count) for op in self.args.ops for count in counts]
        rounds = max(1, self.args.rounds)
        per_round = max(1, -(-self.args.iters // rounds))
        times: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
        unsupported: set[str] = set()
        for r in range(rounds):
            for op, count in cases:
                if op in unsupported:
                    continue
                try:
                    times[op, count] += self.timed(
                        self._collective_fn(op, count), per_round, self.args.warmup if r == 0 else 0
                    )
                except (RuntimeError, NotImplementedError) as exc:
                    unsupported.add(op)
                    if self.rank == 0:
                        print(
                            f"torch_bench: {op} not supported by {self.backend}: {exc}",
                            file=sys.stderr,
                        )
        for op, count in cases:
            samples = times[op, count]
            if op in unsupported or not samples:
                continue
            t = statistics.median(samples)
            nbytes = count * elem
            algbw = nbytes / t
            self.emit(
                {
                    "kind": "collective",
                    "op": op,
                    "size_bytes": nbytes,
                    "count": count,
                    "dtype": "float32",
                    "placement": "out_of_place",
                    "time_s": t,
                    "time_min_s": min(samples),
                    "time_max_s": max(samples),
                    "iters": len(samples),
                    "rounds": rounds,
                    "algbw_bytes_per_s": algbw,
                    "busbw_bytes_per_s": algbw * BUSBW_FACTOR[op](n),
                    "flagged": False,
                }
            )
            if self.rank == 0 and self.args.verbose:
                print(
                    f"{op:15s} {nbytes:>12d} B  {t * 1e6:10.1f} us  "
                    f"{algbw * BUSBW_FACTOR[op](n) / 1e9:7.3f} GB/s busbw",
                    flush=True,
                )

    def ddp(self) -> None:
        """Time DDP steps of a synthetic MLP for each bucket cap and accumulation (1 and
        ``--accumulation``), with and without ``no_sync`` (the latter only when accumulating).

        ``time_s``: the median step; ``compute_time_s``: the median of the same steps under
        ``no_sync`` throughout (no communication), the compute ``compare.predict_ddp`` splits
        into micro-batches. The rows of one setting (bucket cap and accumulation; the model and
        the ranks are the job's), the ``no_sync`` true and false ones, share one compute
        measurement: it is timed after each of them, adjacent to its step, and the median over
        both sets of samples is reported in both rows. Timed once per row, a loaded machine gave
        the two rows 10 ms and 19 ms for the same compute, so the no_sync step could be
        predicted slower than the one without it: noise, not the model; shared, the two rows'
        predictions differ by their communication only.
        """
        torch = self.torch
        from torch.nn.parallel import DistributedDataParallel

        width = self.args.ddp_width
        layers = max(1, round(self.args.ddp_params / (width * width + width)))
        model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
        model = model.to(self.device)
        params = sum(p.numel() for p in model.parameters())
        batch = torch.randn(self.args.ddp_batch, width, device=self.device)
        for cap in self.args.bucket_cap_mb:
            ddp = DistributedDataParallel(
                model,
                bucket_cap_mb=cap,
                device_ids=[self.local_rank] if self.device.type == "cuda" else None,
            )
            warm_up_ddp(ddp, batch)
            for accumulation in sorted({1, self.args.accumulation}):

                def compute(acc=accumulation, d=ddp):
                    with d.no_sync():
                        for _ in range(acc):
                            d(batch).sum().backward()

                step_times: dict[bool, list[float]] = {}
                compute_times: list[float] = []  # pooled over the setting's rows
                for no_sync in (False, True) if accumulation > 1 else (False,):

                    def step(acc=accumulation, ns=no_sync, d=ddp):
                        for micro in range(acc):
                            if ns and micro < acc - 1:
                                with d.no_sync():
                                    d(batch).sum().backward()
                            else:
                                d(batch).sum().backward()

                    step_times[no_sync] = self.timed(step, self.args.ddp_steps, 1)
                    compute_times += self.timed(compute, self.args.ddp_steps, 1)
                for no_sync, times in step_times.items():
                    self.emit(
                        {
                            "kind": "ddp_step",
                            "op": "ddp_step",
                            "params": params,
                            "gradient_bytes": params * 4,
                            "layers": layers,
                            "width": width,
                            "bucket_cap_mb": cap,
                            "accumulation": accumulation,
                            "no_sync": no_sync,
                            "time_s": statistics.median(times),
                            "compute_time_s": statistics.median(compute_times),
                            "iters": len(times),
                            "compute_iters": len(compute_times),
                            "flagged": False,
                        }
                    )
            del ddp

    def close(self) -> None:
        """Close the results file and the process group, the DDP wrappers collected first.

        A DistributedDataParallel wrapper sits in reference cycles and holds the process group
        until the garbage collector frees it; left to the interpreter's exit, the group outlived
        ``destroy_process_group`` and gloo's worker threads still ran while Python finalized:
        one releasing the last collective's tensors then needed the GIL, was stopped by the
        finalizing interpreter inside a C++ destructor and aborted the rank ("terminate called
        without an active exception", SIGABRT), so a job that had written every row failed,
        about one run in five with --ddp on a loaded 2-core machine. Collected here, the
        wrappers let go of the group and destroy_process_group joins its threads.
        """
        import gc

        if self.out is not None:
            self.out.close()
        gc.collect()
        self.dist.destroy_process_group()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m costmodel.validation.torch_bench", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "-o",
        "--output",
        default="results.jsonl",
        help="JSON lines results file, .jsonl (appended; default: %(default)s)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "gloo", "nccl"),
        default="auto",
        help="gloo (CPU), nccl (GPU) or auto: nccl where CUDA is available, else gloo "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--ops",
        default="all_reduce,all_gather,reduce_scatter,broadcast,all_to_all",
        help="comma-separated subset of " + ",".join(OPS) + " (or 'none'; default: all)",
    )
    p.add_argument(
        "--min-bytes",
        default="4KiB",
        help="smallest message per collective, with a unit: 4KiB, 1MB (default: %(default)s)",
    )
    p.add_argument(
        "--max-bytes",
        default="64MiB",
        help="largest message per collective, with a unit (default: %(default)s)",
    )
    p.add_argument(
        "--factor",
        type=float,
        default=2.0,
        help="size step factor (> 1; 2 doubles, 1.41 gives two sizes per doubling; default: "
        "%(default)g)",
    )
    p.add_argument(
        "--iters",
        type=int,
        default=10,
        help="timed iterations per op and size (default: %(default)s)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat the size sweep this many times, interleaved (iters split over "
        "rounds); spreads bursts of load from other processes over all sizes (default: "
        "%(default)s)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="untimed iterations before each op and size (default: %(default)s)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads per rank on CPU (default: %(default)s)",
    )
    p.add_argument("--ddp", action="store_true", help="also time DDP steps")
    p.add_argument(
        "--ddp-params",
        default="4M",
        help="synthetic MLP size (parameters; 4M, 25M; default: %(default)s)",
    )
    p.add_argument(
        "--ddp-width",
        type=int,
        default=None,
        help="the MLP's layer width: its layers are --ddp-params / (width^2 + width), at least "
        f"one (default: {DDP_WIDTH}, or the widest layer --ddp-params holds when smaller)",
    )
    p.add_argument(
        "--ddp-batch",
        type=int,
        default=32,
        help="samples per micro-batch and rank (default: %(default)s)",
    )
    p.add_argument(
        "--ddp-steps",
        type=int,
        default=5,
        help="timed DDP steps per setting, the median kept (default: %(default)s)",
    )
    p.add_argument(
        "--bucket-cap-mb",
        default="25",
        help="comma-separated bucket caps [MiB], one setting each (default: %(default)s)",
    )
    p.add_argument(
        "--accumulation",
        type=int,
        default=4,
        help="micro-batches per step: each bucket cap is timed at 1 and at this many (with and "
        "without no_sync) (default: %(default)s)",
    )
    p.add_argument(
        "--run-key",
        default="torch",
        help="the rows' run key before @ and the configuration's hash (default: %(default)s)",
    )
    p.add_argument(
        "--attempt",
        default=None,
        help="the attempt name the rows carry (default: a fresh one); set by costmodel "
        "validate torch",
    )
    p.add_argument(
        "--job-log",
        default=None,
        help="the file the job's output goes to, recorded (absolute) in each row's 'log', where "
        "costmodel validate compare reads NCCL's debug lines: for a job you launch yourself, "
        "the launcher's output file, e.g. --job-log slurm-$SLURM_JOB_ID.out (default under "
        "sbatch: Slurm's default output file slurm-<job>.out in the submit folder, when it is "
        "there); set by costmodel validate torch",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="print each collective's row as it is timed"
    )
    return p


#: the options that set up the DDP steps, which only ``--ddp`` times
DDP_WIDTH = 512  # the synthetic MLP's default layer width (--ddp-width)

DDP_OPTIONS = ("ddp_params", "ddp_width", "ddp_batch", "ddp_steps", "bucket_cap_mb", "accumulation")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse and check the job's arguments (sizes through costmodel.units). A DDP step's
    option (:data:`DDP_OPTIONS`) given without ``--ddp`` is refused: no step would be timed,
    and it was read past in silence (``validate torch -- --ddp-params 25M`` timed no DDP)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    ddp_only = [  # refused once every value is checked (a bad value is said as such)
        f"--{dest.replace('_', '-')}"
        for dest in DDP_OPTIONS
        if not args.ddp and getattr(args, dest) != parser.get_default(dest)
    ]
    from costmodel.tables import spelled_as

    # any spelling (ALL_REDUCE, all-reduce), each op once: as costmodel validate torch --ops
    args.ops = (
        []
        if args.ops.strip().lower() == "none"
        else list(
            dict.fromkeys(
                spelled_as(o.strip(), OPS) or o.strip() for o in args.ops.split(",") if o.strip()
            )
        )
    )
    unknown = [o for o in args.ops if o not in OPS]
    if unknown:  # a bad value, said as every other: one line, exit 2 (it was exit 1, no prefix)
        raise ValueError(
            f"--ops: {', '.join(map(repr, unknown))} not known; allowed: {','.join(OPS)} or none"
        )
    if not args.output.lower().endswith(".jsonl"):  # the file every reader takes for results
        raise ValueError(
            f"--output: {args.output!r} must end in .jsonl: the rows are JSON lines, appended, "
            "and validate compare and calibrate read a file as results by that suffix (any "
            "other is read as an nccl-tests log); a file of another kind is never appended to"
        )
    from costmodel.validation.runner import check_appendable

    try:  # rows are appended as UTF-8: never to a file re-saved as UTF-16 (two encodings)
        check_appendable(args.output)
    except ValueError as exc:
        raise ValueError(f"--output: {exc}") from None
    args.min_bytes = parse_bytes(args.min_bytes, name="--min-bytes")
    args.max_bytes = parse_bytes(args.max_bytes, name="--max-bytes")
    args.ddp_params = int(parse_count(args.ddp_params, name="--ddp-params"))
    caps = []
    for text in args.bucket_cap_mb.split(","):
        try:
            cap = float(text)
        except ValueError:
            cap = math.nan
        if not (math.isfinite(cap) and cap > 0):
            raise ValueError(
                f"--bucket-cap-mb: {text.strip()!r} is not a bucket cap; allowed: numbers > 0 "
                "[MiB], comma-separated, e.g. 1,25"
            )
        caps.append(cap)
    args.bucket_cap_mb = caps
    # counts the job divides by or takes a median over: 0 gave no rows (--iters) or a
    # StatisticsError traceback from every rank (--ddp-steps)
    for flag, value, low in (
        ("--iters", args.iters, 1),
        ("--rounds", args.rounds, 1),
        ("--warmup", args.warmup, 0),
        ("--threads", args.threads, 1),
        ("--ddp-params", args.ddp_params, 2),  # the smallest layer: 1 x 1 weight + bias
        ("--ddp-width", 1 if args.ddp_width is None else args.ddp_width, 1),
        ("--ddp-batch", args.ddp_batch, 1),
        ("--ddp-steps", args.ddp_steps, 1),
        ("--accumulation", args.accumulation, 1),
    ):
        if value < low:
            raise ValueError(f"{flag}: must be a whole number >= {low}, got {value}")
    # one layer of the MLP holds width^2 + width parameters: a width past that made a model
    # larger than --ddp-params asked for (--ddp-width 10000000 at 4M: a 1e14-parameter layer)
    widest = math.isqrt(args.ddp_params)
    while widest * widest + widest > args.ddp_params:
        widest -= 1
    if args.ddp_width is None:  # the default, narrowed to a model of --ddp-params
        args.ddp_width = min(DDP_WIDTH, widest)
    if args.ddp_width * args.ddp_width + args.ddp_width > args.ddp_params:
        raise ValueError(
            f"--ddp-width: one layer {args.ddp_width} wide holds "
            f"{args.ddp_width * args.ddp_width + args.ddp_width:,} parameters, more than "
            f"--ddp-params {args.ddp_params:,}; allowed: 1..{widest:,} at this --ddp-params"
        )
    try:  # its fields said as this job's flags
        sizes_between(args.min_bytes, args.max_bytes, args.factor)
    except ValueError as exc:
        from costmodel._limits import name_fields

        flags = {"min_bytes": "--min-bytes", "max_bytes": "--max-bytes", "factor": "--factor"}
        raise ValueError(name_fields(str(exc), flags)) from None
    if ddp_only:
        raise ValueError(
            f"{ddp_only[0]}: sets up the DDP steps, which only --ddp times; add --ddp (or leave "
            f"{', '.join(ddp_only)} out)"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except ValueError as exc:
        print(f"torch_bench: {exc}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print(
            "torch_bench: torch is not installed; pip install 'costmodel[validate]'",
            file=sys.stderr,
        )
        return 2
    problem = _launcher_env()
    if problem is not None:
        if os.environ.get("LOCAL_RANK", "0") == "0":
            print(f"torch_bench: {problem}", file=sys.stderr)
        return 2
    problem = backend_problem(args.backend, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    if problem is not None:
        if os.environ.get("LOCAL_RANK", "0") == "0":  # one line per node, not one per rank
            print(f"torch_bench: {problem}", file=sys.stderr)
        return 2
    backend = args.backend
    if backend == "auto":  # as _Bench picks it
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    try:  # an NCCL_ALGO / NCCL_PROTO NCCL would refuse: one line, before any rank starts work
        nccl_env(backend)
    except ValueError as exc:
        if os.environ.get("LOCAL_RANK", "0") == "0":
            print(f"torch_bench: {exc}", file=sys.stderr)
        return 2
    bench = _Bench(args)
    try:
        bench.collectives()
        if args.ddp:
            bench.ddp()
    finally:
        bench.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
