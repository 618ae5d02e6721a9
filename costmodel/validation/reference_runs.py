"""How each bundled nccl-tests run was made: its cluster preset, nodes and GPUs per node.

The one index of the published runs in ``costmodel/data/reference/nccl-tests/`` (data, no
formulas): file prefix (the short id, ``"16a"``) -> the preset that describes the machine it ran
on (presets/README.md), GPUs per node, GPUs per process, nodes, trust and what its header or
source states about the launch. Read by ``scripts/fit_corrections.py`` (every run is fitted and
cross-validated with these facts), by ``costmodel validate compare`` and by the app's Validate
page (:func:`costmodel.validation.logread.read_log` defaults the cluster, nodes and GPUs per node
of a bundled log from here and says so), so a bundled log gets the same cluster on every surface.

The values come from each file's ``#`` header and ``reference/README.md`` (the curated trust
column); none is measured or tuned here.

>>> run_spec("16a").preset, run_spec("16a").gpus_per_node
('aws-p4de', 8)
>>> from costmodel.reference import reference_path
>>> raw = reference_path("20", kind="nccl-tests").read_bytes()
>>> find_bundled_run(raw.replace(b"\\n", b"\\r\\n"), "my-copy.txt").preset
'gcp-a3-high'
>>> find_bundled_run(b"# my own run", "20_my-copy.txt") is None
True
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

__all__ = [
    "BUSBW_ONLY_RUNS",
    "FIRST_RUNS",
    "NEWER_RUNS",
    "NOT_FITTED",
    "PCIE_P2P_RUNS",
    "POLARIS_RUNS",
    "RUNS",
    "BundledRun",
    "find_bundled_run",
    "run_spec",
    "timed_runs",
]


@dataclass(frozen=True)
class BundledRun:
    """How one bundled file's runs were made (from the file header; README trust column)."""

    prefix: str
    preset: str
    gpus_per_node: int | None = None
    gpus_per_process: int = 1
    nodes: int | None = None  # None: from the parsed ranks / gpus_per_node
    trust: str = "H"
    nvls: bool | None = None
    collnet: bool = False
    ranks: int | None = None  # when the header says the rows imply another count
    note: str = ""
    per_run: dict = field(default_factory=dict)  # run index -> overrides
    busbw_only: bool = False  # a busbw-only table (read_busbw_table): no times published
    torch_table: bool = False  # PyTorch-timed markdown tables (read_torch_tables), not nccl-tests
    harness: str = "nccl-tests"  # what timed the rows (predict_collective's harness=)


FIRST_RUNS: tuple[BundledRun, ...] = (
    BundledRun(
        "02",
        "coreweave-hgx-a100",
        8,
        1,
        trust="M",
        note="4 HCAs per node (coreweave gpus/a100.cue), HDR rate assumed",
    ),
    BundledRun(
        "03",
        "coreweave-hgx-h100",
        8,
        1,
        trust="L",
        collnet=True,
        ranks=96,
        note="COLLNETCHAIN pinned; rows imply 96 ranks",
    ),
    BundledRun("04a", "gb200-nvl72", 72, 1, nodes=1, nvls=False),
    BundledRun(
        "04b",
        "gb200-nvl72",
        64,
        1,
        nodes=2,
        nvls=False,
        trust="M",
        ranks=128,
        note="rows imply 128 ranks (2 x 64)",
    ),
    BundledRun("04c", "gb200-nvl72", 72, 1, nodes=20, nvls=False, trust="H"),
    BundledRun("06a", "dell-xe9680-h100", 8, 1),
    BundledRun("09a", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    BundledRun("09b", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    BundledRun("09c", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    BundledRun("09d", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    BundledRun("09e", "pcie3-2x-rtx2080ti-nop2p", 2, 2),
    BundledRun("12a", "dgx-a100", 8, 8, trust="M"),
    BundledRun("13a", "dgx-h100", 4, 4),
    BundledRun("13b", "dgx-h100", 4, 4),
    BundledRun("13c", "dgx-h100", 4, 4),
    BundledRun("13d", "dgx-h100", 4, 4),
    BundledRun("13e", "dgx-h100", None, 0),  # -g 2/4/6: gpus_per_process = GPUs
    BundledRun(
        "13f",
        "dgx-h100",
        None,
        0,
        per_run={i: {"algorithm": ("auto", "ring", "nvls")[i % 3]} for i in range(9)},
    ),
    BundledRun(
        "15",
        "alps-gh200",
        4,
        1,
        per_run={i: {"trust": "M"} for i in (3, 4, 8, 9)},
        note="Out of bounds FAILED at 8, 16, 256, 512 nodes",
    ),
    BundledRun("16a", "aws-p4de", 8, 1, trust="H"),
    BundledRun("16b", "aws-p5", 8, 1, trust="H"),
    BundledRun("16c", "aws-p5", 8, 1, trust="M", note="partial, NCCL 2.18.5"),
)

# Runs bundled after the first fits (20, 22, 23a-b, 24a-d), each with the preset that describes it
# (presets/README.md). They are fitted on and cross-validated like the others;
# trust stays "M" as curated (env or launch details not printed), so they are not goal runs.
NEWER_RUNS: tuple[BundledRun, ...] = (
    BundledRun(
        "20",
        "gcp-a3-high",
        8,
        1,
        nodes=2,
        trust="M",
        per_run={0: {"algorithm": "ring"}},
        note="GPUDirect-TCPX example output, 10 iterations; the run's env is not printed, the "
        "chart's defaults (gke/values.yaml, same commit) pin NCCL_ALGO=Ring",
    ),
    BundledRun(
        "22",
        "dgx-h100",
        8,
        1,
        nodes=2,
        trust="M",
        per_run={0: {"algorithm": "ring"}},
        note="NCCL_ALGO=Ring on the header's mpirun line (-x), which the parser does not read",
    ),
    BundledRun(
        "23a",
        "dell-xe9680-h200-roce",
        8,
        8,
        nodes=2,
        ranks=16,
        trust="M",
        note="curator cut the device list to rank 0; busbw/algbw = 1.875 implies 16 ranks",
    ),
    BundledRun(
        "23b",
        "dell-xe9680-h200-roce",
        8,
        8,
        nodes=2,
        trust="M",
        note="12 datatypes at 10-40 GiB; the model has no datatype term",
    ),
    BundledRun("24a", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    BundledRun("24b", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    BundledRun("24c", "dgx-b200", 8, 1, nodes=1, trust="M", note="processes per GPU not stated"),
    BundledRun(
        "24d", "dgx-b200", 8, 1, nodes=1, trust="M", note="uint8; processes per GPU not stated"
    ),
)

# 21a-21d: Azure/AI-benchmarking-guide results pages, one source (group "21"), single VM, every
# rank in one process (NCCLBandwidth.py: ``all_reduce_perf -b 8 -e 8G -f 2 -g <ngpus>``). The
# pages publish only the in-place busbw per rounded size label (read_busbw_table decodes each
# label to the power of two the -f 2 sweep ran: 65K = 2**16, 536M = 2**29), so these runs are
# compared on busbw alone (load_runs: the time it carries is a unit conversion, not a
# measurement). Trust "M" for all four: busbw-only, rounded labels (README: M-H for 21a-b, M for
# 21c-d), so they are not goal runs. The algorithm is the one each page states.
BUSBW_ONLY_RUNS: tuple[BundledRun, ...] = (
    BundledRun(
        "21a",
        "azure-nd-h100-v5",
        8,
        8,
        nodes=1,
        trust="M",
        busbw_only=True,
        per_run={0: {"algorithm": "nvls"}},
        note="page: 'NCCL AllReduce (NVLS algorithm)'; NCCL 2.18.5; busbw-only",
    ),
    BundledRun(
        "21b",
        "hgx-h200",
        8,
        8,
        nodes=1,
        trust="M",
        busbw_only=True,
        per_run={0: {"algorithm": "nvls"}},
        note="page: 'NCCL AllReduce (NVLS algorithm)'; NCCL 2.20.5; busbw-only. No ND H200 v5 "
        "preset: hgx-h200 is the board the VM carries (8 H200 SXM, NVLink 4 through NVSwitch, 18 "
        "links, NVLS); on one node its NICs and unset CPU vendor (read as Intel; the VM has "
        "Xeon 8480C) do not enter NCCL's single-node model",
    ),
    BundledRun(
        "21c",
        "dgx-a100",
        8,
        8,
        nodes=1,
        trust="M",
        busbw_only=True,
        note="page's '(NVLS algorithm)' is copied from the H100 page (A100 has no NVLink "
        "SHARP): algorithm unknown, auto; NCCL 2.18.5; busbw-only. No ND A100 v4 preset: "
        "dgx-a100 has the same 8 A100-SXM4-80GB on NVLink 3 through NVSwitch (12 links) and "
        "an AMD Rome host (the VM: EPYC 7V12)",
    ),
    BundledRun(
        "21d",
        "gb200-nvl72",
        4,
        4,
        nodes=1,
        trust="M",
        busbw_only=True,
        per_run={0: {"algorithm": "ring"}},
        note="page: 'NCCL AllReduce (Ring algorithm)'; NCCL 2.25.1; busbw-only. No ND GB200 v6 "
        "preset: gb200-nvl72 sliced to the 4 GPUs of one host (same GB200 GPUs, 18 NVLink 5 "
        "links each to the rack's NVLink Switch, Grace host); 4 GPUs are below "
        "NVLINK_DOMAIN_MIN_GPUS, so no NVLink-domain term applies",
    ),
)
# 25a-25e: ALCF Polaris (argonne-lcf/alcf-nccl-tests, one source, group "25"): a second
# Slingshot site beside Alps (15), with the repository's first multi-node all-gather (25c) and
# all-to-all (25d), and the same 8 nodes on NCCL's TCP socket transport (25e: no net plugin).
# One rank per GPU (aprun -n 4N -N 4, -g 1 in the README's script). The NIC count is the one the
# site's documentation states (2 per node, preset alcf-polaris); a later log in the same
# repository says 4, so the Slingshot runs' plateau is compared with a stated, not a measured,
# NIC count.
POLARIS_RUNS: tuple[BundledRun, ...] = (
    BundledRun("25a", "alcf-polaris", 4, 1, nodes=2, note="aws-ofi-nccl, README setup 4"),
    BundledRun("25b", "alcf-polaris", 4, 1, nodes=8, note="aws-ofi-nccl, README setup 4"),
    BundledRun("25c", "alcf-polaris", 4, 1, nodes=8, note="aws-ofi-nccl, README setup 4"),
    BundledRun(
        "25d",
        "alcf-polaris",
        4,
        1,
        nodes=8,
        note="aws-ofi-nccl, README setup 5 (setup 4 + three libfabric CXI settings)",
    ),
    BundledRun(
        "25e",
        "alcf-polaris-socket",
        4,
        1,
        nodes=8,
        note="README setup 1: no NCCL environment, NCCL's TCP socket transport",
    ),
)

# Bundled files that are not nccl-tests runs and are not fitted: file prefix -> why.
NOT_FITTED: dict[str, str] = {
    "27": "two headline numbers (811 GB/s multi-node NVLink, 85 GB/s InfiniBand on 2 x 4 "
    "GB200), no sizes or times: a coarse check (tests/test_held_out_runs.py), not a run",
}

# Run 26: 8 RTX PRO 6000 Blackwell behind two PCIe Gen5 switches with peer-to-peer (the second
# single-node PCIe source beside 09, which has no P2P), ring all-reduce timed through
# torch.distributed (NCCL 2.27.5, NCCL_P2P_LEVEL=SYS; the author calls it ring, NCCL_ALGO is not
# stated, so the model chooses: "auto"); group A's columns (GPUs 0-7). Trust "M": markdown
# tables, not raw nccl-tests rows. It was first scored as an unseen run (never fitted on:
# 12 % from 1 MiB, 17 % over all sizes with the parameters fitted on every other run); it is now
# fitted on like the others, its own source (group "26") in grouped CV, so its grouped-CV error
# is still a held-out figure. No fitting step takes its rows (host floor: one row <= 4 KiB;
# ramp: high-trust runs; duplex: host-staged runs); it enters the bands, the coverage and the
# fabric-family and op-class folds of single-node PCIe.
PCIE_P2P_RUNS: tuple[BundledRun, ...] = (
    BundledRun(
        "26",
        "pcie5-8x-rtxpro6000-p2p",
        8,
        1,
        nodes=1,
        trust="M",
        torch_table=True,
        harness="pytorch",
        note="torch.distributed all-reduce, NCCL 2.27.5, P2P over two PCIe Gen5 switches",
    ),
)

#: Every fitted bundled run, by prefix.
RUNS: tuple[BundledRun, ...] = tuple(
    sorted(
        FIRST_RUNS + NEWER_RUNS + BUSBW_ONLY_RUNS + POLARIS_RUNS + PCIE_P2P_RUNS,
        key=lambda s: s.prefix,
    )
)


def run_spec(prefix: str) -> BundledRun | None:
    """The index entry of one bundled run by its short id (``"16a"``), or None (27, a user's id)."""
    return _BY_PREFIX.get(prefix.strip())


_BY_PREFIX: dict[str, BundledRun] = {r.prefix: r for r in RUNS}


def _text_digest(data: bytes) -> str:
    """sha256 of a log's text with its line ends made LF and each line's trailing blanks
    and the trailing blank lines dropped: the same run saved by another editor or system has
    the same digest."""
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return hashlib.sha256(b"\n".join(x.rstrip() for x in lines).rstrip(b"\n")).hexdigest()


@functools.cache
def _bundled_digests() -> dict[str, str]:
    """sha256 of each bundled nccl-tests file's bytes, and of its text as
    :func:`_text_digest` reads it -> its short id."""
    from costmodel.reference import reference_dir, reference_id

    out: dict[str, str] = {}
    for p in sorted(reference_dir("nccl-tests").glob("*.txt")):
        data = p.read_bytes()
        out[hashlib.sha256(data).hexdigest()] = out[_text_digest(data)] = reference_id(p.name)
    return out


@functools.cache
def timed_runs() -> tuple[str, ...]:
    """Short ids of the bundled nccl-tests logs with times, in file order: the runs
    ``validate compare --reference`` and the Validate page compare (not the busbw-only tables,
    nor files without nccl-tests result rows; :func:`..nccl_tests.why_not_timed`)."""
    from costmodel.reference import reference_id, reference_path, reference_runs

    from .nccl_tests import why_not_timed

    return tuple(
        reference_id(name)
        for name in reference_runs("nccl-tests")
        if why_not_timed(reference_path(name, kind="nccl-tests").read_text(errors="replace"))
        is None
    )


def find_bundled_run(raw: bytes | str, name: str) -> BundledRun | None:
    """The index entry of a log that is a bundled run, else None.

    A log is a bundled run when its content is a bundled file's (its bytes, or its text with
    other line ends or trailing blanks, :func:`_text_digest`) under any name, or when its file
    name is a bundled file's whole name (a copy of it cut short or edited). Decision: a short
    id alone, the part of the name before the first underscore, no longer counts. It did, so a
    user's own run saved as ``20_allreduce.txt`` was read as the bundled run 20: its index's
    cluster (gcp-a3-high) and pinned ring were applied to an H100 log beside the ``--cluster``
    the user gave, and the same bytes went from 3.4 % to 20 % off.
    """
    from pathlib import PurePath

    from costmodel.reference import reference_id

    data = raw.encode() if isinstance(raw, str) else raw
    digests = _bundled_digests()
    prefix = digests.get(hashlib.sha256(data).hexdigest()) or digests.get(_text_digest(data))
    if prefix is None and name and PurePath(name).name in _bundled_names():
        prefix = reference_id(PurePath(name).name)
    return run_spec(prefix or "")


@functools.cache
def _bundled_names() -> frozenset[str]:
    """The bundled nccl-tests files' names."""
    from costmodel.reference import reference_dir

    return frozenset(p.name for p in reference_dir("nccl-tests").glob("*.txt"))
