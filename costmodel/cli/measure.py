"""Subcommands that measure and fit: ``validate nccl-tests run``, ``validate torch``, ``validate compute``,
``validate compare`` and ``calibrate``."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from .. import units
from ._common import (
    _MODEL_HELP,
    REPLACED_OUTPUT,
    JsonOpt,
    _human_frame,
    _not_an_input,
    _print_json,
    _records,
    cli_words,
    output_option,
    say_warning,
)


# --- validate ---------------------------------------------------------------------------------
def _csv_list(text: str | None, name: str = "list") -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"{name}: expected a comma-separated list, got {text!r}")
    return items


# runner.plan_sweep names its arguments as the API spells them; the CLI says its options
_PLAN_FIELDS = (
    ("ops:", "--ops:"),
    ("op:", "--ops:"),
    ("algos:", "--algos:"),
    ("protos:", "--protos:"),
    ("nodes:", "--nodes:"),
    ("min_bytes:", "--min-bytes:"),
    ("max_bytes:", "--max-bytes:"),
    ("mpi:", "--mpi:"),
)


def _plan_error(exc: ValueError) -> ValueError:
    """A plan_sweep error with the CLI's option name in front."""
    msg = str(exc)
    for api, cli in _PLAN_FIELDS:
        if msg.startswith(api):
            return ValueError(cli + msg.removeprefix(api.removesuffix("=")).lstrip(":="))
    return exc


def _nccl_tests_op(op: str) -> str:
    """``--op`` as nccl-tests' reader spells it ("all-gather", "AllGather" -> "all_gather");
    a name it does not know is passed on for the reader's own error."""
    from ..tables import spelled_as
    from ..validation.nccl_tests._common import NCCL_TESTS_OPS

    return spelled_as(op, NCCL_TESTS_OPS.values()) or op


def nccl_tests_run(
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Folder for results.jsonl, runs.jsonl and logs/ (created)."
        ),
    ],
    ops: Annotated[str, typer.Option(help="Comma list: all_reduce,all_gather,...")] = "all_reduce",
    algos: Annotated[
        str | None, typer.Option(help="NCCL_ALGO values to sweep: Ring,Tree,...")
    ] = None,
    protos: Annotated[str | None, typer.Option(help="NCCL_PROTO values: LL,LL128,Simple.")] = None,
    gpus: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 1,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (with srun or mpirun).")] = 1,
    launcher: Annotated[str, typer.Option(help="local (-g GPUS), srun or mpirun.")] = "local",
    mpi: Annotated[
        str | None,
        typer.Option(
            help="The MPI behind --launcher mpirun: openmpi (--map-by ppr:G:node, -x VAR) or "
            "mpich (Hydra, also Intel MPI and MVAPICH: -ppn G, -genv VAR VALUE); default: "
            "the MPI of the mpirun on PATH, from `mpirun --version`.",
        ),
    ] = None,
    build_dir: Annotated[
        Path | None, typer.Option(help="nccl-tests build folder (or $NCCL_TESTS_BUILD, or $PATH).")
    ] = None,
    min_bytes: Annotated[
        str,
        typer.Option(
            "--min-bytes",
            "-b",
            help="Smallest message (nccl-tests -b): 8, 1KiB; passed to nccl-tests in bytes.",
        ),
    ] = "8",
    max_bytes: Annotated[
        str,
        typer.Option(
            "--max-bytes",
            "-e",
            help="Largest message (nccl-tests -e): 8GiB (= 8 x 2^30; 8GB is 8e9); passed to "
            "nccl-tests in bytes.",
        ),
    ] = "8GiB",
    step_factor: Annotated[
        int,
        typer.Option(
            "--step-factor", "-f", min=2, help="Size multiplier per step (nccl-tests -f)."
        ),
    ] = 2,
    iters: Annotated[
        int, typer.Option("--iters", "-n", min=1, help="Timed iterations per size (nccl-tests -n).")
    ] = 20,
    warmup: Annotated[
        int, typer.Option("--warmup", "-w", min=0, help="Untimed warm-up iterations (-w).")
    ] = 5,
    timeout: Annotated[str, typer.Option(help="Per-run time limit: 30min, 600s.")] = "30min",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the command lines only.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show a progress bar on a terminal.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Run nccl-tests over collectives (x NCCL_ALGO x NCCL_PROTO), appending parsed rows.

    Reruns skip finished runs; an interrupted sweep keeps what finished. Exit 1 if a run failed.

    Example:

    \b
        costmodel validate nccl-tests run -o runs/h100 --ops all_reduce,all_gather --gpus 8 --algos Ring,Tree
    """
    from ..validation import runner

    if launcher not in runner.LAUNCHERS:
        raise ValueError(
            f"--launcher: unknown {launcher!r}; allowed: {', '.join(runner.LAUNCHERS)}"
        )
    launcher_kind = cast("runner.Launcher", launcher)  # checked against LAUNCHERS above
    if mpi is not None and mpi not in runner.MPI_FLAVORS:
        raise ValueError(f"--mpi: unknown {mpi!r}; allowed: {', '.join(runner.MPI_FLAVORS)}")
    if mpi is not None and launcher != "mpirun":
        raise ValueError(f"--mpi: applies to --launcher mpirun only, not {launcher}")
    algo_list, proto_list = _csv_list(algos, "--algos"), _csv_list(protos, "--protos")
    # any spelling --op of validate compare takes (AllReduce, all-reduce), each op once
    op_list = list(dict.fromkeys(_nccl_tests_op(o) for o in _csv_list(ops, "--ops") or []))
    try:  # every argument checked before anything runs, under the CLI's option names
        # --mpi, else the MPI of the mpirun on PATH (`mpirun --version`), as plan_sweep does;
        # asked once here, for the plan and the run
        mpi_flavor = runner.resolve_mpi(cast("runner.MpiFlavor | None", mpi), launcher_kind)
        specs = runner.plan_sweep(
            op_list,
            algos=algo_list,
            protos=proto_list,
            gpus=gpus,
            nodes=nodes,
            launcher=launcher_kind,
            mpi=mpi_flavor,
            build_dir=build_dir,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            step_factor=step_factor,
            warmup_iters=warmup,
            iters=iters,
        )
    except ValueError as exc:
        raise _plan_error(exc) from None
    # an NCCL_ALGO / NCCL_PROTO exported in the shell pins every run: plan_sweep takes it as
    # the sweep's (recorded in the rows), said here before anything runs
    swept_algos, swept_protos, inherited = runner.inherited_env(algo_list, proto_list)
    for line in inherited:
        say_warning(line)
    for line in runner.refused_runs(op_list, swept_algos, swept_protos):  # left out of the plan
        say_warning(f"skipped {line}")
    if dry_run:
        rows = [{"key": sp.key, "argv": list(sp.argv), "env": sp.env} for sp in specs]
        if as_json:
            _print_json(rows)
        else:
            import shlex

            for sp in specs:  # quoted as a shell reads it: a folder with a space pastes
                env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sp.env.items())
                typer.echo((env + " " if env else "") + shlex.join(sp.argv))
        return
    if output.exists() and not output.is_dir():  # it was "[Errno 20] Not a directory: ..."
        raise ValueError(
            f"--output: {str(output)!r} is a file; give a folder (results.jsonl, runs.jsonl and "
            "logs/ are written in it)"
        )
    summary = runner.run_nccl_tests(
        output,
        op_list,
        timeout_s=units.parse_duration(timeout, name="--timeout"),
        progress=progress and sys.stderr.isatty() and not as_json,
        algos=algo_list,
        protos=proto_list,
        gpus=gpus,
        nodes=nodes,
        launcher=launcher_kind,
        mpi=mpi_flavor,
        build_dir=build_dir,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=step_factor,
        warmup_iters=warmup,
        iters=iters,
    )
    if as_json:
        _print_json(
            {
                "out_dir": str(summary.out_dir),
                "ok": summary.ok,
                "skipped": summary.skipped,
                "failed": summary.failed,
                "rows": summary.rows,
                "interrupted": summary.interrupted,
                "results": str(summary.results_path),
                "warnings": summary.notes,
            }
        )
    else:
        typer.echo(summary.message())
        for note in summary.notes:
            typer.echo(f"costmodel: warning: {cli_words(note)}", err=True)
    if summary.failed or summary.interrupted:
        raise typer.Exit(1)


def validate_torch(
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="JSON lines results file, .jsonl (appended)."),
    ] = Path("results.jsonl"),
    nproc: Annotated[
        int, typer.Option(min=1, help="Ranks on this machine (torchrun --nproc_per_node).")
    ] = 2,
    backend: Annotated[str, typer.Option(help="auto, gloo (CPU) or nccl (GPU).")] = "auto",
    ops: Annotated[
        str, typer.Option(help="Comma list of collectives, or none.")
    ] = "all_reduce,all_gather,reduce_scatter,broadcast,all_to_all",
    min_bytes: Annotated[
        str, typer.Option(help="Smallest message per collective: 4KiB (sizes double).")
    ] = "4KiB",
    max_bytes: Annotated[
        str, typer.Option(help="Largest message per collective: 64MiB.")
    ] = "64MiB",
    iters: Annotated[int, typer.Option(min=1, help="Timed iterations per size.")] = 10,
    ddp: Annotated[bool, typer.Option("--ddp", help="Also time DDP steps.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the torchrun command line only (every argument checked); nothing runs "
            "and nothing is written.",
        ),
    ] = False,
    extra: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="ARGS",
            help="More torch_bench arguments after --, e.g. --ddp -- --ddp-params 25M.",
        ),
    ] = None,
) -> None:
    """Time torch.distributed collectives (and DDP steps) on this machine with torchrun.

    For several nodes launch the job yourself (srun ... python -m costmodel.validation.torch_bench);
    its rows then name the launcher's output file (under sbatch Slurm's slurm-<job>.out, or
    --job-log FILE). The job's output, streamed here, is also kept in logs/torch.<attempt>.log
    beside the results file; its rows name it. Exit 1 when the job wrote no row (nothing measured), else the job's
    own exit code.

    Example (CPU, gloo, 2 ranks):

    \b
        costmodel validate torch --nproc 2 --backend gloo --max-bytes 16MiB -o torch.jsonl
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ValueError(
            "validate torch: torch is not installed; pip install 'costmodel[validate]'"
        )
    # every argument is checked here, before torchrun starts: a bad one is one line and exit 2,
    # not torch's elastic error page from inside the job
    from ..atomic import check_writable
    from ..validation.torch_bench import OPS as TORCH_OPS

    low = units.parse_bytes(min_bytes, name="--min-bytes")
    high = units.parse_bytes(max_bytes, name="--max-bytes")
    if not low > 0:
        raise ValueError(f"--min-bytes: must be > 0, got {min_bytes!r}")
    if low > high:
        raise ValueError(f"--min-bytes {min_bytes} is larger than --max-bytes {max_bytes}")
    if backend not in ("auto", "gloo", "nccl"):
        raise ValueError(f"--backend: unknown {backend!r}; allowed: auto, gloo, nccl")
    from ..tables import spelled_as

    # any spelling (ALL_REDUCE, all-reduce), as validate compare's --op, and each op once
    chosen = (
        []
        if ops.strip().lower() == "none"
        else list(
            dict.fromkeys(
                spelled_as(o.strip(), TORCH_OPS) or o.strip() for o in ops.split(",") if o.strip()
            )
        )
    )
    unknown = [o for o in chosen if o not in TORCH_OPS]
    if unknown:
        raise ValueError(
            f"--ops: {', '.join(map(repr, unknown))} not known; allowed: {','.join(TORCH_OPS)} "
            "or none"
        )
    if not chosen and not ddp:
        raise ValueError("--ops: empty; name at least one collective, or give --ddp with none")
    # the job's own check, said before anything runs
    _check_suffix(
        output,
        "--output",
        (".jsonl",),
        ": the rows are JSON lines, appended, and validate compare and calibrate read a file as "
        "results by that suffix (any other is read as an nccl-tests log); a file of another "
        "kind is never appended to",
    )
    with output_option("--output"):
        check_writable(output)
    if output.exists() and not os.access(output, os.W_OK):
        raise ValueError(f"--output: {str(output)!r} is not writable")
    from ..validation.runner import check_appendable

    try:  # the job appends UTF-8 rows: never to a UTF-16 file
        check_appendable(output)
    except ValueError as exc:
        raise ValueError(f"--output: {exc}") from None
    if not output.exists():  # /proc, a read-only mount: os.access cannot tell; try it
        try:
            output.open("x").close()
        except OSError as exc:
            raise ValueError(f"--output: cannot create {str(output)!r}: {exc.strerror}") from None
        output.unlink()  # the job creates it; nothing of the user's is touched
    from ..validation.runner import attempt_stamp

    # the job's output (torchrun's and each rank's) is kept beside the results, one new file
    # per attempt, named after the attempt its rows carry; checked before torchrun starts
    logs = output.parent / "logs"
    if logs.exists() and not logs.is_dir():
        raise ValueError(
            f"--output: {str(logs)!r} is a file; the job's log goes in a folder logs/ beside "
            "the results file: move that file or give another --output"
        )
    if not logs.exists() and not os.access(output.parent, os.W_OK):
        raise ValueError(f"--output: cannot create {str(logs)!r} for the job's log")
    attempt = attempt_stamp()
    log_path = logs / f"torch.{attempt}.log"
    if log_path.exists():  # the stamp is unique (time and pid): only a file made to collide
        raise ValueError(f"--output: {str(log_path)!r} exists; it is never overwritten")
    taken = _runner_set_args(extra or [])
    if taken:
        raise ValueError(
            f"ARGS: {taken[0]} is set by validate torch (the job's attempt and log); leave it out"
        )
    bench_args = [
        "-o",
        str(output),
        "--backend",
        backend,
        "--ops",
        ",".join(chosen) or "none",
        "--min-bytes",
        min_bytes,
        "--max-bytes",
        max_bytes,
        "--iters",
        str(iters),
        *(["--ddp"] if ddp else []),
        "--attempt",
        attempt,
        "--job-log",
        str(log_path),
        *(extra or []),
    ]
    parsed = _check_torch_bench_args(bench_args)  # the job's own arguments, checked before
    from ..validation.torch_bench import backend_problem, measured_counts, nccl_env, sizes_between

    if parsed.ops:  # sizes the job rounds or drops on these ranks: said before it runs, as it says
        _, rounding = measured_counts(
            sizes_between(parsed.min_bytes, parsed.max_bytes, parsed.factor), nproc
        )
        if rounding:
            typer.echo(f"costmodel: warning: {rounding}", err=True)

    problem = backend_problem(backend, nproc)  # nccl without GPUs: one line, not a traceback
    if problem is not None:
        raise ValueError(problem)
    nccl_env(backend)  # an exported NCCL_ALGO / NCCL_PROTO NCCL would refuse: before torchrun
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
        "-m",
        "costmodel.validation.torch_bench",
        *bench_args,
    ]
    if dry_run:  # as validate nccl-tests run --dry-run: the line, nothing created
        import shlex

        # without --attempt and --job-log: they name this attempt and the log validate torch
        # would write (the job only records it), so the line run by hand or in an srun script
        # gave every run one attempt name and rows naming a log nobody wrote; the job's own
        # defaults then apply (a fresh attempt; under sbatch Slurm's output file)
        # (arguments after -- never hold them: _runner_set_args refused them above)
        own = {"--attempt", "--job-log"}
        shown = [a for i, a in enumerate(cmd) if a not in own and cmd[i - 1] not in own]
        typer.echo(shlex.join(shown))
        return
    from ..validation import runner
    from ..validation.torch_bench import job_summary

    # as the job does first (said here, not silently): the rows after `start` are its own
    cut = runner.cut_line(output)
    runner.drop_partial_line(output)
    start = output.stat().st_size if output.exists() else 0
    code = runner.run_logged(cmd, log_path)  # to the terminal as it comes, and to the log
    notes = [runner.cut_line_note(output, cut)] if cut is not None else []
    if code != 0:
        for note in notes:
            typer.echo(f"costmodel: warning: {cli_words(note)}", err=True)
        typer.echo(
            f"costmodel: error: torch job failed (exit {code}); its output, torchrun's and "
            f"each rank's, is in {log_path}",
            err=True,
        )
        raise typer.Exit(code)
    written = _rows_after(output, start)
    if written:
        typer.echo(job_summary(written, str(output)))
    for note in notes:
        typer.echo(f"costmodel: warning: {cli_words(note)}", err=True)
    if not written:  # exit 0 and nothing measured: a validation that measured nothing fails
        typer.echo(
            f"costmodel: error: {job_summary(written, str(output))}: it exited 0 having "
            "measured nothing (the job skips an op its backend does not support); its "
            f"messages, torchrun's and each rank's, are in {log_path}",
            err=True,
        )
        raise typer.Exit(1)


def validate_compute(
    arch: Annotated[
        str,
        typer.Option(
            help="A llama-family architecture (llama, qwen2, Mistral; dense): a preset or your "
            "model's config.json."
        ),
    ],
    layers: Annotated[
        int | None,
        typer.Option(
            min=1, help="Cut the depth to this many layers (a model too deep for one GPU)."
        ),
    ] = None,
    seq: Annotated[int, typer.Option(min=1, help="Tokens per sequence.")] = 4096,
    micro_batch: Annotated[int, typer.Option(min=1, help="Sequences per micro-batch.")] = 1,
    steps: Annotated[int, typer.Option(min=1, help="Timed iterations (the median is kept).")] = 10,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed iterations before them.")] = 3,
    dtype: Annotated[
        str, typer.Option(help="bf16 (parameters, gradients, compute) or fp32 (CPUs).")
    ] = "bf16",
    cluster: Annotated[
        str,
        typer.Option(
            help="Cluster preset whose one GPU to predict: auto (the DGX/HGX preset of the CUDA "
            "device's GPU), none, or a name."
        ),
    ] = "auto",
    optimizer: Annotated[
        str,
        typer.Option(
            help="none, or adamw: also time a fused fp32 AdamW step (16 B per parameter of "
            "device memory) beside its HBM bound."
        ),
    ] = "none",
    compile_: Annotated[
        str,
        typer.Option(
            "--compile",
            help="none (the fit's runs ran without it), inductor (fused kernels, as "
            "torchtitan's --compile) or eager (traced only): torch.compile each layer.",
        ),
    ] = "none",
    recompute: Annotated[
        str,
        typer.Option(
            help="none, or full: every layer's forward rerun in backward (checkpointed), "
            "priced as `step --recompute full`."
        ),
    ] = "none",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="JSON lines file the row is appended to, .jsonl."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Check every argument and print what would be timed, the memory it needs and "
            "the prediction; nothing is built, timed or written.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Time one GPU's forward + backward of an architecture beside the compute `step` shows.

    Builds the model from the tensor list costmodel prices (costmodel.validation.compute_bench),
    times one micro-batch's forward, loss and backward (median of --steps), and shows it beside
    the compute `costmodel step` shows for one GPU of --cluster, with its band. Give the measured
    time to `step --compute-time` to predict the cluster ("measure one node, predict the
    cluster"). One GPU (or the CPU: --dtype fp32); a configuration the device cannot hold (by
    costmodel's memory model) is refused before anything is built. docs/gpu-checks.md records a
    run on an H200.

    Example:

    \b
        costmodel validate compute --arch llama-3.1-8b --seq 4096 -o compute.jsonl
    """
    import argparse

    from ..atomic import check_writable
    from ..validation import compute_bench

    for name, value, allowed in (
        ("--dtype", dtype, ("bf16", "fp32")),
        ("--optimizer", optimizer, ("none", "adamw")),
        ("--compile", compile_, ("none", "inductor", "eager")),
        ("--recompute", recompute, compute_bench.RECOMPUTE),
    ):
        if value not in allowed:
            raise ValueError(f"{name}: unknown {value!r}; allowed: {', '.join(allowed)}")
    if output is not None:
        _check_suffix(output, "--output", (".jsonl",), ": the row is a JSON line, appended")
        with output_option("--output"):
            check_writable(output)
        from ..validation.runner import check_appendable

        try:  # rows are appended as UTF-8: never to a UTF-16 file
            check_appendable(output)
        except ValueError as exc:
            raise ValueError(f"--output: {exc}") from None
    args = argparse.Namespace(
        arch=arch,
        layers=layers,
        seq=seq,
        micro_batch=micro_batch,
        steps=steps,
        warmup=warmup,
        dtype=dtype,
        cluster=cluster,
        optimizer=optimizer,
        compile=compile_,
        recompute=recompute,
        output=None,  # checked above; appended below, after the row is complete
        dry_run=dry_run,
    )
    if dry_run:
        typer.echo(compute_bench.dry_run(args))
        return
    row = compute_bench.run(args)
    if output is not None:
        from ..validation.runner import append_record

        append_record(output, row)
    if as_json:
        _print_json(row)
    else:
        typer.echo(compute_bench.summary(row))
        if output is not None:
            typer.echo(f"row appended to {output}")


def _rows_after(path: Path, offset: int) -> list[dict[str, Any]]:
    """The JSON rows of a results file from byte ``offset`` on (what one job appended); a line
    that does not read is left out (load_results says it when the file is read)."""
    import json

    if not path.is_file():
        return []
    with path.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode("utf-8", errors="replace")
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _runner_set_args(extra: list[str]) -> list[str]:
    """The job options among ``extra`` that ``validate torch`` sets itself (``--attempt``,
    ``--job-log``, under any abbreviation argparse accepts): given twice, the rows would name
    another log than the one kept."""
    import contextlib
    import io

    from ..validation.torch_bench import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            given, _ = build_parser().parse_known_args(extra)
    except SystemExit:  # a bad value: said by _check_torch_bench_args
        return []
    return [
        f"--{name.replace('_', '-')}"
        for name in ("attempt", "job_log")
        if getattr(given, name) is not None
    ]


def _check_torch_bench_args(argv: list[str]) -> Any:
    """The job's own argument parser run here first: an unknown ``--`` argument or a bad
    value is one line and exit 2, not torchrun's traceback from every rank. Returns the
    parsed arguments."""
    import contextlib
    import io

    from ..validation.torch_bench import build_parser, parse_args

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            _, unknown = build_parser().parse_known_args(argv)
            if unknown:
                raise ValueError(
                    f"ARGS: {' '.join(unknown)!r} not known; allowed: the options "
                    "of python -m costmodel.validation.torch_bench --help"
                )
            return parse_args(argv)
    except SystemExit as exc:
        lines = [x for x in err.getvalue().splitlines() if x.strip()]
        text = lines[-1] if lines else str(exc.code)
        raise ValueError(f"ARGS: {text.removeprefix('torch_bench: ')}") from None


def _not_a_file(path: Path) -> str:
    """Why ``path`` (not a folder, not a regular file) cannot be read: missing, or something
    that exists but is no file (a pipe such as bash's ``<(...)``, a device), which read as
    "does not exist"."""
    if not path.exists():
        return f"{str(path)!r} does not exist"
    return (
        f"{str(path)!r} is not a regular file (a pipe or a device); save it to a file and give that"
    )


def _need_file(path: Path) -> None:
    """A results file the user named: a folder or a missing path is one clear line."""
    if path.is_dir():
        raise ValueError(
            f"results: {str(path)!r} is a folder; give a file: a results.jsonl or an nccl-tests log"
        )
    if not path.is_file():
        raise ValueError(f"results: {_not_a_file(path)}")
    if path.suffix.lower() == ".toml":  # it read "no nccl-tests result rows found"
        raise ValueError(
            f"results: {str(path)!r} is {_TOML_FILE}; give the measured rows (a results .jsonl "
            "or an nccl-tests log) as RESULTS, and a calibration as --calibration"
        )


_TOML_FILE = "a TOML file (a calibration or a preset), not measurements"


def _unused_with_results(**given: object) -> list[str]:
    """The warning that options a results file (.jsonl) records per row are not used (``op``,
    ``gpus_per_node`` given: the rows name their op, ranks and nodes), as the Validate page
    says its Op and GPUs per node boxes are not; empty when none is given."""
    names = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None]
    if not names:
        return []
    return [
        f"costmodel: warning: {' and '.join(names)} {'is' if len(names) == 1 else 'are'} not "
        "used: a results file (.jsonl) names each row's op, ranks and GPUs per node"
    ]


def _read_measurements(
    path: Path, nodes: int | None = None, notices: list[str] | None = None
) -> Any:
    """Measured rows from a results file (.jsonl: runner or torch job) or an nccl-tests log.

    A results file's last row cut off (a job killed while writing it) is skipped, and the
    reader's line naming the file and the line goes to ``notices`` (said with the command's
    other warnings, once it has an answer; not as a Python warning before it). A results
    file is read by :func:`~costmodel.validation.logread.read_results`, the Validate page's
    reader of the same file."""
    from ..validation import nccl_tests
    from ..validation.logread import is_results_file, read_results

    _need_file(path)
    if is_results_file(path.name):  # the Validate page's reader of the same file
        read = read_results(path, nodes=nodes, calibrated=True)
        if notices is not None:
            notices.extend(read.notices)
        return read.rows
    try:
        df = nccl_tests.read_nccl_tests(path)
    except nccl_tests.NcclTestsParseError:
        from ..validation.logread import busbw_only_refusal

        if nccl_tests.is_busbw_table(nccl_tests.decode_lenient(path.read_bytes())):
            # the one refusal validate compare and the Validate page give such a table
            raise ValueError(busbw_only_refusal(path.name)) from None
        raise
    if nodes is not None:
        if "nodes" in df and df["nodes"].notna().any() and (df["nodes"].dropna() != nodes).any():
            found = ", ".join(map(str, sorted({int(v) for v in df["nodes"].dropna()})))
            raise ValueError(f"--nodes: {nodes} contradicts the results file (nodes {found})")
        df["nodes"] = nodes
    return df


def _socket_fallback(
    measured: Any, path: Path, cluster: str | None, text: bytes | None = None
) -> str | None:
    """validation.fallback.socket_fallback of the rows, with the raw log's NCCL debug lines:
    ``text`` when given (a folder's logs), else the file's own, or for a results file the logs
    its rows name (``log``: the harness keeps each attempt's output beside the results), where
    they are still there."""
    from ..validation.fallback import socket_fallback

    if text is None:
        text = _kept_logs(measured, path) if path.suffix.lower() == ".jsonl" else path.read_bytes()
    return socket_fallback(measured, cluster, text=text)


def _kept_logs(measured: Any, results: Path) -> bytes | None:
    """The text of the logs a results file's rows name in their ``log`` column, found as
    recorded, in ``logs/`` beside the results file or beside it (a folder moved or read from
    elsewhere; a self-launched torch job's Slurm output file copied with its results); at most
    the parser's limit in all (the logs past it are left unread), None when none is found."""
    from ..validation.nccl_tests import MAX_LOG_BYTES, decode_lenient

    if measured is None or "log" not in getattr(measured, "columns", ()):
        return None
    texts, left = [], MAX_LOG_BYTES
    for recorded in sorted({str(x) for x in measured["log"].dropna()}):
        name = Path(recorded).name
        for candidate in (Path(recorded), results.parent / "logs" / name, results.parent / name):
            if candidate.is_file() and candidate.stat().st_size <= left:
                data = candidate.read_bytes()
                # each log decoded by its own byte-order mark (UTF-16 from PowerShell), then
                # joined as UTF-8: a mark inside the joined bytes would not be seen
                texts.append(decode_lenient(data).encode("utf-8"))
                left -= len(data)
                break
    return b"\n".join(texts) if texts else None


def _bundled_elsewhere(results: Path, cluster: str) -> str | None:
    """:func:`costmodel.validation.logread.bundled_elsewhere` of the log ``results`` (None for a
    folder or a results file, or a log that is no bundled run)."""
    from ..validation.logread import bundled_elsewhere
    from ..validation.reference_runs import find_bundled_run

    if not results.is_file():
        return None
    return bundled_elsewhere(find_bundled_run(results.read_bytes(), results.name), cluster)


def _read_log(path: Path, **settings: Any) -> Any:
    """:func:`costmodel.validation.logread.read_log` of a log file, with the file name the op and
    the cluster may come from; lenient as the Validate page reads it (a row that cannot be read
    is skipped and said in one ``warning:`` line; a log with no readable row is an error)."""
    from ..validation.logread import read_log
    from ..validation.nccl_tests import MAX_LOG_BYTES, NcclTestsParseError

    _need_file(path)
    if path.stat().st_size > MAX_LOG_BYTES:
        raise NcclTestsParseError(
            0, f"file is {path.stat().st_size:,} bytes; the limit is {MAX_LOG_BYTES:,}", str(path)
        )
    return read_log(path.read_bytes(), path.name, strict=False, **settings)


#: The columns of a log's rows that are its measurement: two logs of a folder alike in all of
#: them are one log twice (:func:`_read_folder`)
_MEASURED_COLUMNS = (
    "op",
    "size_bytes",
    "dtype",
    "placement",
    "time_s",
    "busbw_bytes_per_s",
    "ranks",
)


#: Columns only ``validate compare``'s per-row table (``--output``, CSV or Parquet) has: the
#: prediction beside the measurement and its error (a log, whatever its name, has neither)
_COMPARISON_COLUMNS = ("predicted_time_s", "predicted_busbw_bytes_per_s", "rel_error")
#: Keys only ``validate compare --json``'s document has, written to a file beside the logs
_COMPARISON_JSON_KEYS = ("median_abs_rel_error", "skipped_files", "expected_error")
#: Largest JSON file looked into for those keys [B]: --json of a comparison is a few kB
_MAX_OWN_JSON_BYTES = 8 * 2**20
#: How each line ``validate compare`` and ``calibrate`` say on standard error begins (what was
#: assumed, the runs compared, warnings, files left out, a refusal): a file whose every line
#: begins so is that text saved beside the logs (``2> logs/err.txt``), never an nccl-tests log
#: (whose lines begin ``#`` or with a size)
_OWN_STDERR_PREFIXES = (
    "assumed: ",
    "from the log: ",
    "comparing ",
    "costmodel: warning: ",
    "costmodel: error: ",
    "left out: ",
)
#: Columns of the summary table ``validate compare`` prints first on standard output
_SUMMARY_HEADER = ("size_band", "points", "median_abs_rel_error")
#: Largest text file looked into for the command's own text [B]: its output is a few kB
_MAX_OWN_TEXT_BYTES = 65536


def _own_text(head: bytes) -> str | None:
    """Why ``head`` (a whole file) is ``validate compare``'s own text saved beside the logs by
    an earlier run, or None: its standard error (every line one of
    :data:`_OWN_STDERR_PREFIXES`; ``calibrate``'s alike, a refusal of either), or its standard
    output (the summary table's header first,
    :data:`_SUMMARY_HEADER`, its verdict last: ``ok:``, ``FAIL:`` or ``NOT ASSESSED:``,
    :data:`costmodel.validation.compare.VERDICTS`), or both in one file (``> out.txt 2>&1``:
    the standard error's lines first, as the command says them before the table)."""
    from ..validation.compare import VERDICTS

    lines = [x.strip() for x in head.decode("utf-8", "replace").splitlines() if x.strip()]
    said = 0
    while said < len(lines) and lines[said].startswith(_OWN_STDERR_PREFIXES):
        said += 1
    rest = lines[said:]
    if not rest:
        if said:
            return "costmodel's own standard error text (an earlier run's, saved there), not a log"
        return None
    verdicts = tuple(f"{word}: " for word in VERDICTS.values())
    if set(_SUMMARY_HEADER) <= set(rest[0].split()) and rest[-1].startswith(verdicts):
        return "validate compare's own text output (its summary and verdict), not a log"
    return None


def _compare_output(path: Path) -> str | None:
    """Why ``path`` is one of ``validate compare``'s own outputs written beside the logs by an
    earlier run (its --output table, CSV or Parquet; its --report; its --json saved to a file),
    or None. Told by the content, not the name: a log named ``b.csv`` is read as a log, and an
    output named ``run.txt`` is still an output."""
    import csv
    import json

    from ..validation.compare import REPORT_TITLE

    for name, stream in (("standard output", sys.stdout), ("standard error", sys.stderr)):
        try:  # `validate compare logs/ --json > logs/out.json`: the shell made it, empty
            if os.path.samestat(os.fstat(stream.fileno()), path.stat()):
                return f"this command's own {name} (redirected there), not a log"
        except (AttributeError, OSError, ValueError):  # no file behind the stream (a test's)
            pass
    try:
        with path.open("rb") as f:
            head = f.read(_MAX_OWN_TEXT_BYTES)  # the whole of a file of the command's own text
    except OSError:
        return None
    if head.startswith(b"PAR1"):  # Parquet's magic: never a text log
        import pyarrow.parquet as pq

        try:
            names = set(pq.read_schema(path).names)
        except Exception:  # noqa: BLE001 - not a Parquet file after all: read as a log
            return None
        if set(_COMPARISON_COLUMNS) <= names:
            return "validate compare's own --output table (Parquet), not a log"
        return None
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if set(_COMPARISON_COLUMNS) <= set(next(csv.reader([first]), [])):
        return "validate compare's own --output table (CSV), not a log"
    if head.lstrip()[:6].lower() == b"<html>" and f"<title>{REPORT_TITLE}</title>".encode() in head:
        return "validate compare's own --report (HTML), not a log"
    if head.lstrip().startswith(b"{") and path.stat().st_size <= _MAX_OWN_JSON_BYTES:
        try:
            doc = json.loads(path.read_bytes())
        except (ValueError, OSError):
            return None
        if isinstance(doc, dict) and set(_COMPARISON_JSON_KEYS) <= set(doc):
            return "validate compare's own --json output, not a log"
        return None
    if len(head) < _MAX_OWN_TEXT_BYTES:  # the whole file: its every line is looked at
        return _own_text(head)
    return None


def _read_folder(
    folder: Path, *, nodes_where_unstated: bool = False, **settings: Any
) -> tuple[Any, list[str], bytes, list[str]]:
    """Every file of ``folder`` read as an nccl-tests log (:func:`_read_log`, one set of
    ``settings``), in name order, pooled into one :class:`~costmodel.validation.logread.LogRead`:
    rows concatenated, each assumed fact once with the logs it holds for, each warning and
    finding prefixed with its file's name. A file that cannot be read is left out and named
    with its reason (the second value: ``bad.txt: line 28: ...``), so the others are still
    compared; none readable is an error naming each. The third value: the readable logs' bytes
    (NCCL's debug lines). The fourth: ``validate compare``'s own outputs an earlier run wrote
    into the folder (:func:`_compare_output`), each named with what it is: left out, not read
    as logs and not counted as logs that failed to read. Without a cluster the logs must point
    to one preset. ``nodes_where_unstated`` (calibrate's): the nodes set are given only to the
    logs that do not state theirs (no host lines), said in the pooled assumed facts; a log
    that states its own is read as it says, not left out as contradicting them."""
    import dataclasses

    import pandas as pd

    from ..validation import nccl_tests

    if (folder / "results.jsonl").is_file():
        raise ValueError(
            f"results: {str(folder)!r} is a validate nccl-tests run folder; give its "
            f"{str(folder / 'results.jsonl')!r}"
        )
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise ValueError(
            f"results: {str(folder)!r} is a folder holding no log file; give a results.jsonl, "
            "an nccl-tests log or a folder of logs"
        )
    reads: list[tuple[Path, Any]] = []
    skipped: list[str] = []
    outputs: list[str] = []
    for path in files:
        own = _compare_output(path)
        if own is not None:
            outputs.append(f"{path.name}: {own}")
            continue
        if path.suffix.lower() == ".jsonl":  # every command reads .jsonl as results, not a log
            skipped.append(
                f"{path.name}: a results file (.jsonl), not an nccl-tests log; give it on its "
                f"own: {str(path)!r}"
            )
            continue
        if path.suffix.lower() == ".toml":  # a calibration written beside the logs
            skipped.append(f"{path.name}: {_TOML_FILE}")
            continue
        try:
            read = None
            if nodes_where_unstated and settings.get("nodes") is not None:
                own_nodes = _read_log(path, **{**settings, "nodes": None})
                if own_nodes.rows["nodes"].notna().all():  # the log states its nodes
                    read = own_nodes
            reads.append((path, read or _read_log(path, **settings)))
        except (ValueError, OSError) as exc:  # an NcclTestsParseError is a ValueError
            why = " ".join(str(exc).split())
            for own in (f"{path.name}: ", f"{path.name}, ", f"{path}: ", f"{path}, "):
                why = why.removeprefix(own)
            skipped.append(f"{path.name}: {why}")
    if not reads:
        raise ValueError(
            f"results: no file of {str(folder)!r} reads as an nccl-tests log: "
            + "; ".join(skipped + outputs)[:600]
        )
    # a log whose measured rows are another's of the folder (a copy kept beside it: x.bak,
    # x-copy.txt, the same log with Windows line endings) measures nothing new: pooled, each
    # of its rows counted twice in the median and the fit; left out and said
    copies: list[str] = []
    first_of: dict[str, str] = {}
    kept: list[tuple[Path, Any]] = []
    for path, r in reads:
        measured = [c for c in _MEASURED_COLUMNS if c in r.rows]
        key = r.rows[measured].to_csv(index=False)
        if key in first_of:
            copies.append(
                f"{path.name}: the same rows as {first_of[key]} (a copy of it?): left out, "
                "its rows would count twice"
            )
            continue
        first_of[key] = path.name
        kept.append((path, r))
    # a log whose rows are all among a longer one's (the same log cut off: a copy saved
    # while the run went on) measures nothing new either: left out, the longer one kept
    rows_of = {
        path: frozenset(
            r.rows[[c for c in _MEASURED_COLUMNS if c in r.rows]]
            .to_csv(index=False, header=False)
            .splitlines()
        )
        for path, r in kept
    }
    cut: set[Path] = set()
    for path, _ in kept:
        longer = next(
            (
                other
                for other, _ in kept
                if other != path and other not in cut and rows_of[path] < rows_of[other]
            ),
            None,
        )
        if longer is not None and rows_of[path]:
            cut.add(path)
            copies.append(
                f"{path.name}: its rows are all among {longer.name}'s (a cut-off copy of it?): "
                "left out, its rows would count twice"
            )
    reads = [(path, r) for path, r in kept if path not in cut]
    clusters = {name: r.cluster for name, r in ((p.name, r) for p, r in reads)}
    if settings.get("cluster") is None and len(set(clusters.values())) > 1:
        said = ", ".join(f"{name} {cluster or 'none'}" for name, cluster in clusters.items())
        raise ValueError(
            f"--cluster: the logs of {str(folder)!r} point to different presets ({said}); "
            "give --cluster NAME"
        )
    names = [p.name for p, _ in reads]
    holds: dict[tuple[str, str, str], list[str]] = {}
    for path, r in reads:
        for fact in r.assumed:
            holds.setdefault(fact, []).append(path.name)
    assumed = tuple(
        (field, value, f"{source}; {'every log' if len(on) == len(names) else ', '.join(on)}")
        for (field, value, source), on in holds.items()
    )
    # each row names its log (-o's `file` column): the pooled rows' run and line numbers are
    # each file's own, so two logs' rows were told apart by nothing in the per-row table
    rows = pd.concat([r.rows.assign(file=p.name) for p, r in reads], ignore_index=True)
    rows.attrs = {}
    first = reads[0][1]

    def shape(r: Any) -> str:
        ranks = sorted({int(v) for v in r.rows["ranks"].dropna()})
        return f"{r.op} on {'/'.join(map(str, ranks)) or '?'} ranks"

    each = ", ".join(f"{p.name} ({shape(r)})" for p, r in reads)
    pooled = dataclasses.replace(
        first,
        facts=_pooled_facts(reads),
        rows=rows,
        name=folder.name,
        op=", ".join(dict.fromkeys(r.op for _, r in reads)),
        nodes=first.nodes if all(r.nodes == first.nodes for _, r in reads) else None,
        gpus_per_node=first.gpus_per_node
        if all(r.gpus_per_node == first.gpus_per_node for _, r in reads)
        else None,
        assumed=assumed,
        notices=(*copies, *(f"{p.name}: {n}" for p, r in reads for n in r.notices)),
        findings=tuple(f"{p.name}: {n}" for p, r in reads for n in r.findings),
        runs=f"comparing {units.format_counted(len(reads), 'log')} of {folder}: {each}; each row "
        "is predicted at its own log's ranks and nodes; the summary pools them",
    )
    # each log by its own byte-order mark (UTF-16 from PowerShell), joined as UTF-8
    text = b"\n".join(nccl_tests.decode_lenient(p.read_bytes()).encode("utf-8") for p, _ in reads)
    return pooled, skipped, text, outputs


def _folder_nodes_known(rows: Any) -> None:
    """Refuse, naming the logs, a folder whose logs do not all say how many nodes ran (no host
    lines, no launch line) when no --nodes fills them: calibration never guesses them."""
    unknown = rows["nodes"].isna()
    if unknown.any():
        names = ", ".join(dict.fromkeys(str(f) for f in rows.loc[unknown, "file"]))
        raise ValueError(
            f"--nodes: {names} {'does' if ',' not in names else 'do'} not say how many nodes "
            "ran (an nccl-tests log without host lines); give --nodes (given only to the logs "
            "that do not state theirs): it is never guessed"
        )


def _pooled_facts(reads: list[tuple[Path, Any]]) -> tuple[tuple[str, str, str], ...]:
    """The facts a folder's logs state (each :attr:`LogRead.facts` not among its assumed), one
    per field: as is where every log states the same, else each log's value named by its file
    (``nodes 1 in job1.log, 2 in job2.log (the log's host lines)``); the first log's alone
    said its nodes were every log's."""
    by_field: dict[str, list[tuple[str, str, str]]] = {}
    for path, r in reads:
        for field, value, where in r.facts:
            if (field, value, where) not in r.assumed:
                by_field.setdefault(field, []).append((path.name, value, where))
    out = []
    for field, said in by_field.items():
        if len(said) == len(reads) and len({(v, w) for _, v, w in said}) == 1:
            out.append((field, said[0][1], said[0][2]))
            continue
        value = ", ".join(f"{v} in {name}" for name, v, _ in said)
        out.append((field, value, "; ".join(dict.fromkeys(w for _, _, w in said))))
    return tuple(out)


def _reference_help() -> str:
    """--reference help: the bundled runs' short ids (full names in the error of a wrong one)."""
    from ..reference import reference_id, reference_runs

    ids = ", ".join(reference_id(n) for n in reference_runs("nccl-tests"))
    return (
        f"A bundled published nccl-tests run instead of RESULTS, by name or short id: {ids} "
        "(a busbw-only table or a run without nccl-tests rows is refused, naming the others)."
    )


def validate_compare(
    results: Annotated[
        Path | None,
        typer.Argument(
            metavar="RESULTS",
            help="results.jsonl, an nccl-tests log or a folder of nccl-tests logs.",
        ),
    ] = None,
    reference: Annotated[str | None, typer.Option(help=_reference_help())] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="Cluster preset to predict with. Default: for a bundled run (--reference, or "
            "a log equal to or named like one) the preset it is fitted with; else the preset "
            "the log's GPU and GPUs per node point to (said on stderr)."
        ),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Nodes, when the file does not say (default: a bundled run's own, else "
            "ranks / the GPUs per node).",
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="GPUs per node, when the log has no host lines (sets the nodes too, which must "
            "split the ranks evenly; with --nodes, the node's GPUs, ranks / nodes of them used; "
            "default: a bundled run's own, else the preset's). Not used for a results .jsonl, "
            "whose rows name it: a warning says so.",
        ),
    ] = None,
    op: Annotated[
        str | None,
        typer.Option(
            help="The collective, when the log's header, command line and file name do not "
            "name it: all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all. Not "
            "used for a results .jsonl, whose rows name it: a warning says so."
        ),
    ] = None,
    placement: Annotated[
        str,
        typer.Option(
            help="Rows compared: both (out-of-place and in-place), out-of-place or in-place "
            "(the Validate page's choice, same default)."
        ),
    ] = "both",
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    algo: Annotated[
        str | None,
        typer.Option(
            help="The NCCL_ALGO the run was launched with (Ring, Tree, ...), when the log does "
            "not say (its launch line, NCCL lines or header); one that contradicts the log's "
            "is refused. Not used for a results .jsonl, whose rows name it.",
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="Predict with a calibration TOML (from 'costmodel calibrate') instead."),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            help="Exit 1 when any row's |busbw error| (predicted/measured - 1) exceeds this "
            "fraction, in (0, 1000]: 0.25 is 25%. Default: the docs/fidelity.md goal, median |error| <= 8% from 1 MiB up "
            "and <= 20% over all sizes."
        ),
    ] = None,
    check_from: Annotated[
        str,
        typer.Option(
            help="Judge only sizes from this one up (the --tolerance check, or the "
            "docs/fidelity.md goal without it), said as given: 1MiB."
        ),
    ] = "0B",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help=f"Per-row CSV/Parquet. {REPLACED_OUTPUT}"),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help=f"HTML report with plotly charts. {REPLACED_OUTPUT}")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measured vs predicted time and busbw per row; summary per op/algorithm/size band.

    Error = busbw_pred / busbw_meas - 1 (uncapped; the error calibrate reports too), with |ln
    ratio| beside it (median_abs_log_ratio: |ln(predicted / measured)|, a pure number; 0.095
    is a factor 1.1 either way). The headline "median |busbw error| X over N rows" is over
    every predicted row, as --json's median_abs_rel_error and the report's; with --check-from
    it says so and how many rows the checks judge (--json: checked_rows,
    checked_median_abs_rel_error). Exit 1 when any
    |error| (sizes from --check-from up) exceeds --tolerance, or, without --tolerance, when the
    docs/fidelity.md goal fails; also when a check has no rows to judge (a log cut off below 1
    MiB, --check-from above every size, --tolerance on a file of DDP steps only): the verdict
    is then NOT ASSESSED, never ok. DDP steps are shown, not judged. A log whose GPU or GPUs
    per node contradict --cluster gets a warning on stderr naming the preset the log looks
    like. A bundled run's cluster, nodes and GPUs per node default to its index entry
    (costmodel.validation.reference_runs), as on the app's Validate page; stderr says what
    was assumed, and any option given wins. What the
    parser found that nccl-tests would not have printed (a duplicate row, a missing footer, a
    launch line the rows contradict, ...) is one warning line each on stderr, the lines the
    Validate page lists. A folder of nccl-tests logs is compared as one: every file read alike,
    the rows pooled; a file that does not read is named with its reason on stderr and left out,
    and the command then exits 1.

    Example:

    \b
        costmodel validate compare runs/h100/results.jsonl --cluster dgx-h100 --nodes 2 --report r.html

    \b
        costmodel validate compare --reference 16a
    """
    from ..validation import compare as cmp

    if (results is None) == (reference is None):
        raise ValueError("validate compare: give RESULTS or --reference NAME (one)")
    if reference is not None:
        from ..reference import reference_id, reference_path, reference_runs
        from ..validation.logread import busbw_only_refusal
        from ..validation.nccl_tests import is_busbw_table, why_not_timed
        from ..validation.reference_runs import timed_runs

        try:
            results = reference_path(reference, kind="nccl-tests")
        except ValueError as exc:
            if "is not a bundled reference run" not in str(exc):
                raise
            # the ids this command reads, and the bundled files it does not (no times)
            timed = timed_runs()
            others = [
                i
                for i in dict.fromkeys(map(reference_id, reference_runs("nccl-tests")))
                if i not in timed
            ]
            raise ValueError(
                f"--reference: {reference!r} is not a bundled reference run; allowed: a "
                f"run's short id ({', '.join(timed)}) or its full name (the file name, e.g. "
                "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce; "
                "costmodel/data/reference/README.md lists them)"
                + (
                    f"; {', '.join(others)} are bundled without times (busbw-only tables, "
                    "or no result rows), not compared"
                    if others
                    else ""
                )
            ) from None

        text = results.read_text(errors="replace")
        if is_busbw_table(text):  # the message a path to the same file gets, and the page
            raise ValueError(f"--reference: {busbw_only_refusal(results.name)}")
        why = why_not_timed(text)
        if why is not None:  # the Validate page does not offer these: the same list here
            raise ValueError(
                f"--reference: {results.name} is {why}; the bundled runs validate compare "
                f"reads: {', '.join(timed_runs())}"
            )
    assert results is not None  # one of the two, checked above
    if cluster is not None and calibration is not None:
        raise ValueError("validate compare: give --cluster NAME or --calibration FILE (one)")
    floor = units.parse_bytes(check_from, name="--check-from")
    floor_text = units.format_bytes_as_given(floor, check_from)  # 1MiB said "1 MiB", not 1.05 MB
    if output is not None:
        _check_output(output, "--output")
        _not_an_input(output, "--output", results, calibration)
    if report is not None:
        _check_output(report, "--report", (".html", ".htm"))
        _not_an_input(report, "--report", results, calibration)
    from ..validation.logread import PLACEMENTS, is_results_file, read_results

    if placement not in PLACEMENTS:
        raise ValueError(f"--placement: {placement!r} unknown; allowed: {', '.join(PLACEMENTS)}")
    if cluster is not None:  # before any log is read: the refusal names --cluster, and a
        from .. import presets  # folder's logs are not each refused for it

        presets.cluster(cluster, field="cluster")
    if calibration is None:  # it was "validate compare: no row could be predicted (model=...)"
        from ..models import check_model

        check_model(model)
    elif calibration.is_dir():
        raise ValueError(
            f"--calibration: {str(calibration)!r} is a folder; give the TOML file costmodel "
            "calibrate wrote"
        )
    elif not calibration.is_file():
        raise ValueError(f"--calibration: {_not_a_file(calibration)}")
    elif model != "nccl":  # the default: a calibration predicts with its own fits, no model
        raise ValueError(
            f"--model: {model!r} with --calibration; a calibration predicts with its own fits "
            "(give --model with --cluster, or a calibrated cluster preset as --cluster)"
        )
    assumed: list[str] = []
    notices: list[str] = []  # the reader's one-line warnings, as the Validate page shows them
    findings: list[str] = []  # the parser's findings, the list the Validate page shows
    log_runs: str | None = None  # what a log of several runs compares (logread.runs_compared)
    skipped_files: list[str] = []  # a folder's files that do not read as logs: named, not compared
    own_outputs: list[str] = []  # a folder's files an earlier validate compare wrote: left out
    log_text: bytes | None = None  # a folder's readable logs, for NCCL's debug lines
    unused: list[str] = []  # options a results file records per row: said not used
    if is_results_file(results.name) and not results.is_dir():
        # the Validate page's reader of the same file (logread.read_results): the cluster the
        # rows' GPU points to, or a refusal naming what to do (CPU rows, several devices)
        _need_file(results)
        read = read_results(
            results,
            nodes=nodes,
            placement=placement,
            cluster=cluster,
            calibrated=calibration is not None,
        )
        measured = read.rows
        cluster = read.cluster if calibration is None else None
        assumed = read.assumed_lines()
        notices = list(read.notices)
        unused = _unused_with_results(op=op, gpus_per_node=gpus_per_node, algo=algo)
    else:  # an nccl-tests log: the Validate page's reader (op, nodes, cluster settled the same)
        settings: dict[str, Any] = {
            "op": None if op is None else _nccl_tests_op(op),
            "nodes": nodes,
            "gpus_per_node": gpus_per_node,
            "cluster": cluster if calibration is None else None,
            "placement": placement,
            "algo": algo,
        }
        if results.is_dir():  # a folder of logs: each read alike, a bad one named and left out
            read, skipped_files, log_text, own_outputs = _read_folder(results, **settings)
        else:
            read = _read_log(results, **settings)
        measured = read.rows
        if calibration is None:
            cluster = read.cluster
        assumed = [
            line
            for line in read.assumed_lines()
            if calibration is None or not line.startswith("cluster")
        ]
        notices = list(read.notices)
        findings = list(read.findings)
        log_runs = read.runs
    if calibration is None and cluster is None:
        raise ValueError(
            f"--cluster: {cmp.no_cluster_reason(measured)}; give --cluster NAME "
            "(costmodel presets list --kind cluster) or --calibration FILE"
        )
    # what was assumed and the warnings go to stderr once the comparison is made: a refusal
    # below stays the one line on stderr it is everywhere else
    # what the file itself said (op, ranks, dtype, sizes, NCCL, ...) before what was assumed:
    # the Validate page's "From the log:" caption, from the same function
    read_from = read.read_lines()
    said = (
        ([f"from the log: {'; '.join(read_from)}"] if read_from else [])
        + [f"assumed: {line}" for line in assumed]
        + [f"costmodel: warning: {n}" for n in (*notices, *findings)]
    )
    said += unused
    from ..validation.runner import describe_runs, incomplete_note

    unfinished = incomplete_note(measured)
    if unfinished:
        notices.append(unfinished)
        said.append(f"costmodel: warning: {unfinished}")
    runs = describe_runs(measured)
    if len(runs) > 1 and not as_json:  # several configurations in one folder: say which
        said.append(f"comparing {len(runs)} runs: " + "; ".join(runs))
    elif log_runs is not None and not as_json:  # several runs in one log: the same, once
        said.append(log_runs)
    if calibration is not None:
        from ..validation.calibrate import calibrated_predictor, load_calibration

        try:
            loaded = load_calibration(calibration)
        except ValueError as exc:  # names the file; the option too
            raise ValueError(f"--calibration: {exc}") from None
        predictor = calibrated_predictor(loaded)
        label = f"calibration {calibration.name}"
        if loaded.base:  # the cluster it predicts on: checked against the log as --cluster is
            mismatch = cmp.preset_mismatch(measured, loaded.base)
            if mismatch:
                said.append(
                    f"costmodel: warning: --calibration {calibration.name} (cluster "
                    f"{loaded.base}) does not match the log: {mismatch}"
                )
            # a bundled run on another cluster than the calibration's: said as --cluster's is
            # (the reader's notice; --reference 16a with an aws-p5 calibration said nothing of
            # 16a's aws-p4de and showed a 135 % error as the calibration's)
            other = _bundled_elsewhere(results, loaded.base)
            if other:
                notices.append(other)
                said.append(f"costmodel: warning: {other}")
    else:
        from .. import presets

        assert cluster is not None  # exactly one of --cluster/--calibration, checked above
        presets.cluster(cluster, field="cluster")  # unknown names fail here, with the closest ones
        predictor = cmp.cluster_predictor(cluster, model=model)
        label = model
        mismatch = cmp.preset_mismatch(measured, cluster)
        if mismatch:
            guess = cmp.detect_cluster(measured, results.name)
            said.append(
                f"costmodel: warning: --cluster {cluster} does not match the log: {mismatch}"
                + (f" (it looks like {guess})" if guess else "")
            )
    # rows measured on CPUs (gloo): outside the model's regimes, shown but not judged by the
    # goal (compare.fidelity_goals leaves them out); said before the DDP-only return below
    on_cpus = cmp.cpu_regime_note(measured)
    if on_cpus:
        notices.append(on_cpus)
        said.append(f"costmodel: warning: {on_cpus}")
    fallback = _socket_fallback(measured, results, cluster, log_text)
    if fallback:
        said.append(f"costmodel: warning: {fallback}")
    # the torch job's DDP steps (--ddp): predicted with the same predictor for their buckets
    # (compare() takes collectives only; they were measured and then never shown)
    ddp = None
    if "kind" in measured and (measured["kind"] == "ddp_step").any():
        ddp = _saying_warnings(lambda: cmp.predict_ddp(measured, predictor), notices, said)
        # an older file's pairs of two compute times, steps faster than their compute: once
        for note in cmp.ddp_notes(ddp):
            notices.append(note)
            said.append(f"costmodel: warning: {note}")
        if not (measured["kind"].fillna("collective") == "collective").any():
            for line in said:  # a job run with --ops none --ddp: the steps are the comparison
                typer.echo(cli_words(line), err=True)  # the library's marks: options
            if tolerance is None:  # shown, not judged: the goal is the collectives'
                # --json carries the warnings stderr said (gloo's rows outside the regimes),
                # the report too
                _echo_ddp(ddp, as_json, report, {"warnings": notices}, said=notices)
                return
            # --tolerance asked for a check of collectives' busbw error, and there is none:
            # not assessed, exit 1, as a goal with no rows (it was ignored, exit 0)
            unassessed = {"passed": False, "assessed": False, "verdict": "not assessed"}
            _echo_ddp(ddp, as_json, report, {**unassessed, "warnings": notices}, said=notices)
            if not as_json:
                typer.echo(
                    f"{cmp.VERDICTS[None]}: --tolerance checks the collectives' |busbw error| "
                    "and the file holds DDP steps only (shown above, not judged)"
                )
            raise typer.Exit(1)
    # a calibration's warning (no term identified at a level, ...) said once on stderr and
    # carried in --json's "warnings" too, as every other warning of the comparison
    table = _saying_warnings(lambda: cmp.compare(measured, predictor, model=label), notices, said)
    # what every row was predicted on, in the per-row table too (-o): a CSV read later says
    # which preset (or calibration) its predictions are, not only the model's name
    predicted_on = (
        cluster
        if calibration is None
        else f"calibration {calibration.name}" + (f" of {loaded.base}" if loaded.base else "")
    )
    table["cluster"] = predicted_on
    if table["rel_error"].notna().sum() == 0:
        why = cmp.notes_text(table.get("note", []))  # whole notes, never cut mid-word
        raise ValueError(
            "validate compare: no row could be predicted" + (f" ({why})" if why else "")
        )
    for line in skipped_files:
        said.append(f"costmodel: warning: not compared: {line}")
    # an earlier run's outputs beside the logs: named and left out, not a log that failed
    said += [f"left out: {line}" for line in own_outputs]
    # rows nccl-tests' own data check failed (#wrong, out of bounds FAILED): said, as compared
    flagged = cmp.flagged_note(table[table["kind"].fillna("collective") == "collective"]
                               if "kind" in table else table)  # fmt: skip
    if flagged:
        notices.append(flagged)
        said.append(f"costmodel: warning: {flagged}")
    # rows left out (a calibration with no fit for their op, ...): said, not a smaller count
    missed = cmp.unpredicted_note(table)
    if missed:
        notices.append(missed)
        said.append(f"costmodel: warning: {missed}")
    for line in said:
        typer.echo(cli_words(line), err=True)  # the library's marks: options
    summary = cmp.summarize(table)
    from ..validation.logread import band_check, calibration_band

    if calibration is None:
        assert cluster is not None  # settled above
        band = band_check(table, cluster, model)
    else:  # the fits' own held-out error: the bundled runs' grouped-CV band does not apply
        band = calibration_band(table, loaded)
    checked = table[(table["size_bytes"] >= floor) & table["rel_error"].notna()]
    goals = None
    # the outcome: True passed, False failed, None not assessed (no rows to judge: a log cut
    # off below 1 MiB, --check-from above every size); not assessed exits 1 as a failure does,
    # as a folder's unread file does: no data is never a pass
    if tolerance is None:
        # the goal of each row's regime: the cluster's (or the calibration's base cluster's)
        goal_on = cluster if calibration is None else (loaded.base or None)
        outcome, goal_line = cmp.fidelity_verdict(
            checked, from_bytes=floor, from_label=floor_text, cluster=goal_on
        )
        goals = cmp.fidelity_goals(
            checked, from_bytes=floor, from_label=floor_text, cluster=goal_on
        )
        bad = checked.iloc[0:0] if outcome is not False else checked
    else:
        bad = cmp.exceeds(checked, tolerance)
        outcome = None if checked.empty else not len(bad)
    verdict = cmp.VERDICTS[outcome]
    if tolerance is None:
        verdict_line = goal_line
    elif outcome is None:
        verdict_line = (
            f"{verdict}: no predicted row from {floor_text} up to check "
            f"against |busbw error| {tolerance:.0%} (--check-from)"
        )
    else:  # the sizes checked, named as given: all of them unless --check-from says
        scope = f"from {floor_text} up (--check-from)" if floor > 0 else "over all sizes"
        verdict_line = (
            f"{verdict}: {len(bad)} of {units.format_counted(len(checked), 'row')} {scope} "
            f"beyond |busbw error| {tolerance:.0%}"
        )
    # the expected error beside the measured one, on every surface that shows the error
    band_line = f"expected error ({band.basis}) {band.text()}" + (
        f": {band.within} of {units.format_counted(band.rows, 'row')} within it"
        if band.rows
        else ""
    )
    sw = importlib.import_module("costmodel.sweep")
    if output is not None:
        sw.write_table(
            output,
            table.drop(
                columns=[
                    c for c in table.columns if table[c].dtype == object and c not in _TEXT_COLUMNS
                ],
                errors="ignore",
            ),
        )
    if report is not None:
        with output_option("--report"), sw.atomic_path(report) as tmp:
            cmp.write_report(
                table,
                tmp,
                ddp=ddp,
                notes=[
                    f"predicted on: {predicted_on}"
                    + (f" (model {model})" if calibration is None else ""),
                    *(f"assumed: {line}" for line in assumed),
                    # the warnings stderr says (gloo's rows outside the regimes, flagged rows,
                    # ...), as --json's "warnings" and the Validate page's boxes carry them
                    *(f"warning: {cli_words(line)}" for line in notices),
                    band_line,
                    verdict_line,
                ],
            )
    if as_json:
        _print_json(
            {
                "ddp_steps": None if ddp is None else _ddp_records(ddp),
                "rows": int(len(table)),
                "predicted": int(table["rel_error"].notna().sum()),
                "tolerance": tolerance,
                "check_from_bytes": floor,
                "checked_rows": int(len(checked)),
                "exceeding": int(len(bad)) if tolerance is not None else None,
                "goal": goals,  # the docs/fidelity.md checks (without --tolerance), as the text
                "passed": outcome is True and not skipped_files,
                "assessed": outcome is not None,  # false: no rows to judge (exit 1)
                # "ok", "fail" or "not assessed", as the text's verdict; a folder's file not
                # compared fails the command whatever the rows read
                "verdict": "fail" if skipped_files and outcome else verdict.lower(),
                "skipped_files": skipped_files,  # a folder's files that did not read as logs
                # a folder's files an earlier validate compare wrote (its -o, --report, --json):
                # left out, not failures
                "skipped_outputs": own_outputs,
                "socket_fallback": fallback,
                # over every predicted row (the text's headline); the checked range's own:
                "median_abs_rel_error": float(table["rel_error"].abs().median()),
                "checked_median_abs_rel_error": float(checked["rel_error"].abs().median())
                if len(checked)
                else None,
                "cluster": predicted_on,
                "assumed": assumed,
                "warnings": notices,
                "findings": findings,
                "runs": log_runs,  # several runs in one log: what is compared (else null)
                "expected_error": {
                    "basis": band.basis,
                    "half_width_from_1MiB": band.half_width_large,
                    "half_width_below_1MiB": band.half_width_small,
                    "rows_within": band.within,
                    "rows_with_band": band.rows,
                    "note": band.note or None,
                },
                "summary": _records(summary),
            }
        )
    else:
        typer.echo(_human_frame(summary))
        # the report's headline too, over every predicted row (--json's median_abs_rel_error);
        # under --check-from it says so and how many of them the checks below judge
        scope = (
            f" of all sizes (--check-from {floor_text} judges the {len(checked):,} from "
            f"{floor_text} up, below)"
            if floor > 0
            else ""
        )
        typer.echo(cmp.median_error_lines(table)[0] + scope + f"; {band_line}")
        if ddp is not None:
            _echo_ddp(ddp, False, None)
        typer.echo(verdict_line)
        if skipped_files:
            typer.echo(
                f"FAIL: {units.format_counted(len(skipped_files), 'file')} of {results} not "
                "compared (named above)"
            )
    if outcome is not True or skipped_files:
        raise typer.Exit(1)


def _saying_warnings(make: Any, notices: list[str], said: list[str]) -> Any:
    """``make()``, the :class:`costmodel.predict.CalibrationWarning` s it raises added to
    ``notices`` (``--json``'s ``"warnings"``, the report's) and to ``said`` (stderr) once each,
    rather than printed by the warnings machinery beside them and missing from ``--json``
    (``compare.calibration_warnings``: the Validate page's road for the same warnings, of the
    collectives and of the DDP steps alike); any other warning goes on as it came."""
    cmp = importlib.import_module("costmodel.validation.compare")
    result, texts = cmp.calibration_warnings(make)
    for text in texts:
        if text not in notices:
            notices.append(text)
            said.append(f"costmodel: warning: {text}")
    return result


def _ddp_records(ddp: Any) -> list[dict[str, Any]]:
    """Measured vs predicted DDP steps (compare.predict_ddp), one record per setting [s]."""
    cmp = importlib.import_module("costmodel.validation.compare")
    return _records(ddp[cmp.ddp_columns(ddp)])


def _echo_ddp(
    ddp: Any,
    as_json: bool,
    report: Path | None,
    verdict: dict[str, Any] | None = None,
    said: Sequence[str] = (),
) -> None:
    """Print the DDP steps (and write the report of a job that timed nothing else);
    ``verdict``: keys added to the JSON (a check asked for and not assessed); ``said``: the
    warnings stderr said, written into that report too."""
    if report is not None:
        import pandas as pd

        sw = importlib.import_module("costmodel.sweep")
        with output_option("--report"), sw.atomic_path(report) as tmp:
            cmp = importlib.import_module("costmodel.validation.compare")
            empty = pd.DataFrame(columns=["op", "size_bytes", "ranks", "time_s"])
            cmp.write_report(
                cmp.compare(empty, lambda *a, **k: 0.0),
                tmp,
                ddp=ddp,
                notes=[f"warning: {cli_words(line)}" for line in said],
            )
    if as_json:
        _print_json({"ddp_steps": _ddp_records(ddp), **(verdict or {})})
        return
    predicted = ddp["predicted_step_s"].astype(float)
    shown = ddp.assign(
        accumulation=ddp["accumulation"].astype(int),
        measured_ms=(ddp["time_s"] * 1e3).round(2),
        # a step the predictor could not price (a calibration without an all-reduce fit) shows
        # "-" as its error does, never "NaN"; why is said below the table
        predicted_ms=[f"{t * 1e3:.2f}" if t == t else "-" for t in predicted],
        time_error=[
            f"{e:+.1%}" if e == e else "-" for e in ddp["step_time_rel_error"].astype(float)
        ],
    )
    typer.echo(
        "DDP steps, measured vs predicted (time_error = predicted / measured step time - 1; a "
        "step has no busbw):"
    )
    typer.echo(
        _human_frame(
            shown[
                [
                    "bucket_cap_mb",
                    "accumulation",
                    "no_sync",
                    "measured_ms",
                    "predicted_ms",
                    "time_error",
                ]
            ]
        )
    )
    # the steps' own summary (the busbw summary by op and size band has no row for a step)
    cmp = importlib.import_module("costmodel.validation.compare")
    typer.echo(cmp.ddp_summary(ddp))
    if "outside_regimes" in ddp and ddp["outside_regimes"].any():  # gloo: beside the table too
        outside = int(ddp["outside_regimes"].sum())
        typer.echo(
            f"{'the steps' if outside == len(ddp) else f'{outside} of these steps'} ran on CPUs "
            "(gloo): outside the model's regimes, shown against the prediction, not judged"
        )
    missed = predicted.isna()
    if missed.any():
        notes = ddp.loc[missed, "note"] if "note" in ddp else None
        reasons = (
            notes.astype(object).fillna("no reason given").value_counts(sort=False)
            if notes is not None
            else {"no reason given": int(missed.sum())}
        )
        said = "; ".join(
            f"{note} ({units.format_counted(int(n), 'step')})" for note, n in reasons.items()
        )
        typer.echo(
            f"costmodel: warning: {int(missed.sum())} of "
            f"{units.format_counted(len(ddp), 'DDP step')} not predicted: {said}",
            err=True,
        )


_TEXT_COLUMNS = (
    "op",
    "algorithm",
    "predicted_algorithm",
    "size_band",
    "model",
    "cluster",
    "note",
    "placement",
    "dtype",
    "redop",
    "run",
    "run_key",
    "source",
    "file",
    "backend",
    "algo_env",
    "proto_env",
    "nccl_algo",
    "nccl_proto",
    "kind",
)


def _check_suffix(path: Path, option: str, allowed: Sequence[str], why: str = "") -> None:
    """``option``'s file name ends in one of ``allowed``: a folder, a name with no extension
    and another ending each said as what it is (as the sweep's ``--output`` says them:
    :func:`costmodel.sweep.output.output_format`), ``why`` appended to the last."""
    from ..sweep.output import refuse_folder_or_bare_name

    ends = " or ".join(allowed)
    refuse_folder_or_bare_name(path, option, ends)
    if path.suffix.lower() not in allowed:
        raise ValueError(f"{option}: {str(path)!r} must end in {ends}{why}")


def _check_output(path: Path, option: str, allowed: Sequence[str] | None = None) -> None:
    """A file ``option`` (``--output``, ``--report``) names, checked before anything runs: its
    format (``allowed`` suffixes, else a table's) and its folder; refusals name ``option``."""
    sw = importlib.import_module("costmodel.sweep")
    with output_option(option):
        if allowed is None:
            sw.output_format(path)
        else:
            _check_suffix(path, option, allowed)
        sw.check_writable(path)


def _check_preset_name(name: str | None, output: Path) -> None:
    """The calibration's name (``--name``, else the output file's stem) checked before the fit:
    a preset name is what presets load by; ``-o H100-calibrated.toml`` was refused only after
    the fit, as "calibration 'H100-calibrated' is not a valid preset: name: String should
    match pattern ...", naming no option."""
    import re

    from ..hardware import _NAME_PATTERN

    chosen = output.stem if name is None else name  # --name '' is refused, not the stem
    if re.fullmatch(_NAME_PATTERN, chosen) and len(chosen) <= 64:
        return
    fixed = re.sub(r"[^a-z0-9._-]+", "-", chosen.lower()).strip("-._")[:64] or "my-cluster"
    rule = (
        "a preset name is up to 64 lowercase letters, digits, '.', '_' and '-', starting with a "
        "letter or digit"
    )
    if name is not None:
        raise ValueError(f"--name: {name!r} is not a preset name ({rule}), e.g. {fixed!r}")
    raise ValueError(
        f"--name: not given, and the output's file name {output.stem!r} is not a preset name "
        f"({rule}); give --name {fixed} or name the file {fixed}.toml"
    )


def _shadowed_preset(name: str) -> str | None:
    """Why a calibration named ``name`` cannot join a presets folder, when a GPU, link or
    cluster preset already has the name (``-o dgx-h100.toml --cluster dgx-h100``: the file
    loads by its path, but in a presets folder a preset is overridden only by one of its kind,
    so that folder, and every command given it, was refused afterwards); None otherwise."""
    from .. import presets

    try:
        other = next(
            (r for r in presets.listing() if r.name == name and r.kind != "calibration"), None
        )
    except presets.PresetError:  # a presets folder that does not load is refused elsewhere
        return None
    if other is None:
        return None
    return (
        f"--name: {name!r} is also the name of the {other.kind} preset {other.path}: the "
        "calibration loads by its path (--cluster FILE), but a presets folder (--presets-dir, "
        f"COSTMODEL_PRESETS) holding it is refused; give --name {name}-calibrated, or name the "
        "file so"
    )


def calibrate(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help="results.jsonl, an nccl-tests log or a folder of nccl-tests logs.",
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help=f"Calibration preset TOML. {REPLACED_OUTPUT}")
    ],
    name: Annotated[str | None, typer.Option(help="Name stored in the TOML.")] = None,
    min_bytes: Annotated[str, typer.Option(help="Leave out sizes below this: 64KiB.")] = "0B",
    nodes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Nodes, when the file does not say (no host lines, launch line or bundled "
            "run's index): never guessed.",
        ),
    ] = None,
    ranks: Annotated[
        int | None, typer.Option(min=1, help="Ranks, when the file does not say.")
    ] = None,
    placement: Annotated[
        str,
        typer.Option(
            help="nccl-tests rows to fit: out-of-place (the figures users quote), in-place, both."
        ),
    ] = "out-of-place",
    op: Annotated[
        str | None,
        typer.Option(
            help="The collective of an nccl-tests log whose header, command line and file name "
            "do not name it (as validate compare's --op): all_reduce, all_gather, ... Not used "
            "for a results .jsonl, whose rows name it: a warning says so."
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="Base cluster preset, by name (not a calibration, not a file path: the TOML "
            "stores it as base = NAME): the TOML then loads as that cluster carrying the fits "
            "(cm.cluster(NAME), --cluster NAME everywhere), its realistic model calibrated "
            "(fabric terms per level); the preset's figures are shown next to the fitted ones."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Calibrate on a measured sweep; write a calibration preset TOML.

    With --cluster the realistic model's fabric terms are calibrated (per level: latency and
    host-floor scale, NIC efficiency and network latency across nodes, duplex share without P2P;
    robust least squares on log time, each term then shrunk towards the model's value by how
    well the rows identify it) and the written preset is that cluster, loadable by name from a COSTMODEL_PRESETS
    folder or by path; model "calibrated" and "nccl" then use them. The textbook alpha-beta
    line per op/algorithm/protocol/level is fitted too (its busbw error, as validate compare reports
    it, on the fitted rows and on held-out sizes). An
    nccl-tests log is read as validate compare and the Validate page read it (the nodes from its
    host lines, its launch line or a bundled run's index, said on stderr with the reader's
    warnings); without them it needs --nodes (and --ranks if it lacks them): never guessed from a
    preset. A folder of logs is read as validate compare reads it (a file that does not read is
    named on stderr and left out of the fit; the preset is written and the command exits 1, as
    validate compare does). Rows measured on CPUs (gloo) are refused with
    --cluster: calibrate them without it.

    Example (the rows `validate torch`'s example measures on CPUs, so no --cluster):

    \b
        costmodel calibrate torch.jsonl -o my-cluster.toml --min-bytes 64KiB
    """
    import pandas as pd

    from ..validation import calibrate as cal

    _check_suffix(output, "--output", (".toml",))
    _check_preset_name(name, output)
    sw = importlib.import_module("costmodel.sweep")
    sw.check_writable(output)
    _not_an_input(output, "--output", results)
    if placement not in cal.PLACEMENTS:
        raise ValueError(
            f"--placement: {placement!r} unknown; allowed: {', '.join(cal.PLACEMENTS)}"
        )
    if cluster is not None:
        from .. import presets

        base = presets.cluster(cluster, field="cluster")  # an unknown name fails here, first
        # the written preset names its base cluster preset (``base = NAME``) and loads it by that
        # name: a calibration as base, or a file by path, wrote a preset that could not load
        # (and a presets folder holding it failed to load at all)
        if base.calibration is not None:
            was = base.calibration.base
            raise ValueError(
                f"--cluster: {cluster!r} is a calibration"
                + (f" of {was!r}" if was else "")
                + "; a calibration refines a cluster preset: give that one"
                + (f" (--cluster {was})" if was else "")
            )
        if base.name != cluster:
            raise ValueError(
                f"--cluster: {cluster!r} is a file; the calibration names its base cluster preset "
                f"by name: put the file in a presets folder (--presets-dir or COSTMODEL_PRESETS) "
                f"and give --cluster {base.name}"
            )
        # the base's own file is read too: a calibration written over it replaced the cluster
        # (and left a calibration whose base is itself, which no command could load)
        files = [Path(r.path) for r in presets.listing("cluster") if r.name == cluster]
        _not_an_input(output, "--output", *files)
    said: list[str] = []  # what the reader assumed and warns of, as validate compare says it
    assumed: list[str] = []
    fit_nodes = nodes  # a folder's rows carry their nodes (the logs' own, else --nodes)
    notices: list[str] = []
    findings: list[str] = []
    skipped_files: list[str] = []  # a folder's files that do not read as logs: named, not fitted
    own_outputs: list[str] = []  # a folder's files an earlier validate compare wrote: left out
    if results.suffix.lower() == ".jsonl" and not results.is_dir():
        from ..validation.runner import incomplete_note

        measured = _read_measurements(results, nodes, notices)
        said += [f"costmodel: warning: {n}" for n in notices] + _unused_with_results(op=op)
        unfinished = incomplete_note(measured)
        if unfinished:
            notices.append(unfinished)
            said.append(f"costmodel: warning: {unfinished}")
    else:  # an nccl-tests log: the reader validate compare and the Validate page use
        settings: dict[str, Any] = {
            "op": None if op is None else _nccl_tests_op(op),
            "nodes": nodes,
            "cluster": cluster,
            "placement": "both",
            "assume_nodes": False,
        }
        if results.is_dir():  # a folder of logs, as validate compare reads it
            # --nodes fills the logs that do not state theirs only (said per log in the
            # assumed lines); the rows then all carry their nodes
            read, skipped_files, _, own_outputs = _read_folder(
                results, nodes_where_unstated=True, **settings
            )
            _folder_nodes_known(read.rows)
            fit_nodes = None
        else:
            read = _read_log(results, **settings)
        measured = read.rows
        # a bare calibration (no --cluster) has no cluster: the one the reader guessed is not said
        assumed = [
            line
            for line in read.assumed_lines()
            if cluster is not None or not line.startswith("cluster")
        ]
        notices, findings = list(read.notices), list(read.findings)
        said = [f"assumed: {line}" for line in assumed] + [
            f"costmodel: warning: {n}" for n in (*notices, *findings)
        ]
        said += [f"costmodel: warning: not fitted: {line}" for line in skipped_files]
        said += [f"left out: {line}" for line in own_outputs]
    shadowed = _shadowed_preset(name or output.stem)
    if shadowed:
        notices.append(shadowed)
        said.append(f"costmodel: warning: {shadowed}")
    try:
        c = cal.calibrate(
            measured,
            name=name or output.stem,
            min_bytes=units.parse_bytes(min_bytes, name="--min-bytes"),
            min_bytes_text=min_bytes,
            source=str(results),
            nodes=fit_nodes,
            ranks=ranks,
            placement=placement,
            base=cluster,
        )
    except ValueError as exc:
        msg = str(exc)
        for field in ("nodes", "ranks", "placement", "min_bytes", "cluster"):
            if msg.startswith(f"{field}:"):
                flag = field.replace("_", "-")
                msg = f"--{flag}: " + msg.removeprefix(f"{field}:").lstrip()
        raise ValueError(msg) from None
    # the calibration on its own rows beside the uncalibrated model: a fit that lowers its
    # robust log-time loss can raise the median |busbw error| validate compare reports (the
    # model misses one range of sizes widely; docs/calibration.md): said, not hidden
    check = cal.in_sample(c, measured, nodes=fit_nodes, ranks=ranks)
    own = None if check is None else check.note()
    if own:
        notices.append(own)
        said.append(f"costmodel: warning: {own}")
    # a run the model cannot describe (a socket fallback, a wrong cluster): written, and said
    poor = cal.poor_fit_note(c)
    if poor:
        notices.append(poor)
        said.append(f"costmodel: warning: {poor}")
    for line in said:
        typer.echo(cli_words(line), err=True)  # the library's marks: options
    with sw.atomic_path(output) as tmp:
        cal.write_calibration(c, tmp, base=cluster)
    fits = c.table()
    reference: dict[str, float] = {}
    if cluster is not None:
        from .. import presets

        pc = presets.cluster(cluster)
        reference = {
            "intra": float(pc.intra_bandwidth_bytes_per_s),
            "inter": float(pc.inter_bandwidth_bytes_per_s),
        }
        fits["preset_bandwidth_bytes_per_s"] = [
            reference.get(lv, float("nan")) for lv in fits["level"]
        ]
    candidates = pd.DataFrame(
        [
            {
                "op": f.op,
                "level": f.level,
                "algorithm": a,
                "protocol": p,
                "efficiency": e,
                "latency_scale": lam,
                "points": f.chosen.get((a, p), 0),
            }
            for f in c.candidates
            for (a, p), (e, lam) in f.scale.items()
        ]
    )
    fabric = pd.DataFrame(
        [
            {
                "level": f.level,
                "fabric": f.fabric,
                **{k: f.terms.get(k, float("nan")) for k in cal.FABRIC_BOUNDS},
                "ops": ",".join(f.ops),
                "points": f.points,
                # the fit's rms busbw error on its own rows (calibrate.poor_fit_note)
                "rms_rel_error": f.rms_rel_error,
                # share of each term's fitted shift kept after the shrinkage towards the
                # model's value (how well the rows identify it; fit_fabric)
                "kept": ", ".join(f"{k} {100 * v:.0f}%" for k, v in f.kept.items()),
            }
            for f in c.fabric
        ]
    )
    if as_json:
        _print_json(
            {
                "path": str(output),
                "placement": placement,
                "fabric": _records(fabric),
                "candidates": _records(candidates),
                "fits": _records(fits),
                "skipped": list(c.residuals.attrs.get("skipped", []))
                if c.residuals is not None
                else [],
                "assumed": assumed,
                "warnings": notices,
                "findings": findings,
                "skipped_files": skipped_files,  # a folder's files that did not read as logs
                "skipped_outputs": own_outputs,  # an earlier validate compare's, left out
            }
        )
        if skipped_files:  # written, and exit 1: a log left out (as below)
            raise typer.Exit(1)
        return
    cols = [
        x
        for x in (
            "op",
            "algorithm",
            "protocol",
            "level",
            "points",
            "latency_s",
            "bandwidth_bytes_per_s",
            "preset_bandwidth_bytes_per_s",
            "rms_rel_error",
            "max_abs_rel_error",
            "cv_max_abs_rel_error",
            "cv_max_abs_rel_error_ge_1mib",
        )
        if x in fits.columns
    ]
    typer.echo(_human_frame(fits[cols]))
    # the error validate compare reports, under the same name: one row reads the same in both
    typer.echo(
        "rel_error: the busbw error of the alpha-beta line, busbw_fit / busbw_meas - 1 = "
        "t_meas / t_fit - 1, the error validate compare reports (cv_: on the held-out sizes, "
        "every other size)"
        + (
            "; validate compare --calibration predicts with the calibrated realistic model "
            "below, not this line"
            if not fabric.empty
            else ""
        )
    )
    # the groups left unfitted, as --json's "skipped": without them an op measured and not
    # fitted vanished from the table (and later from validate compare --calibration) unsaid
    for reason in c.residuals.attrs.get("skipped", []) if c.residuals is not None else []:
        typer.echo(f"costmodel: warning: not fitted: {reason}", err=True)
    if "preset_bandwidth_bytes_per_s" in fits.columns:
        typer.echo(
            "preset_bandwidth: the preset's link bandwidth per GPU at that level (the lesson's "
            "B). The fitted bandwidth is the per-rank bus bandwidth, which across nodes is bounded "
            "by the node's NICs together (NCCL spreads its rings over all of them), not by one "
            "GPU's share: it can exceed the preset's"
        )
    if not fabric.empty:
        typer.echo(
            "realistic model, calibrated fabric terms (NaN: not measured, model's own; kept: "
            "share of each fitted shift kept, by how well the rows identify it):"
        )
        # the hop latency in seconds for the text, formatted as every duration is (1.69 µs,
        # not 1.694661); --json keeps net_latency_us
        shown = fabric.copy()
        if "net_latency_us" in shown:
            at = list(shown.columns).index("net_latency_us")
            shown.insert(at, "net_latency_s", shown.pop("net_latency_us") * 1e-6)
            shown["kept"] = shown["kept"].str.replace("net_latency_us", "net_latency")
        typer.echo(_human_frame(shown))
        for f in c.fabric:
            if not f.measured:
                typer.echo(
                    f"costmodel: warning: at level {f.level} the rows ({', '.join(f.ops)}) identify none "
                    "of these terms: predictions there stay the uncalibrated nccl model's (the "
                    "alpha-beta fit above describes the rows, it does not carry to other node "
                    "counts or ops)",
                    err=True,
                )
    if not candidates.empty:
        typer.echo(
            "realistic model, calibrated candidates (efficiency x bandwidth, scale x latency):"
        )
        typer.echo(_human_frame(candidates))
    typer.echo(f"wrote {output} (placement {placement})")
    if skipped_files:  # a folder's log left out: written, and exit 1 as validate compare does
        raise typer.Exit(1)
