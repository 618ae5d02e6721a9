"""The ``costmodel`` command line: every question from the shell, grids to CSV and Parquet.

A thin face over the library: each subcommand parses units through :mod:`costmodel.units`, calls
one library function and prints its answer, with units for people by default and as JSON with
``--json``. Bad input (an unknown name, a unit that does not parse, an inconsistent grid, an
unwritable output path) exits with code 2 and one line on stderr; nothing prints a traceback.

Examples::

    costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s
    costmodel predict --op all_reduce --cluster dgx-h100 --nodes 2 --sizes 8B:16GB --json
    costmodel sweep --set preset=dgx-h100,dgx-a100 --set nodes=1..16x2 --set size=8B..16GB x2 -o out.parquet
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from . import units

EXIT_USAGE = 2
"""Exit code for bad input of any kind (click's own code for usage errors)."""


# --- error handling: one line, exit 2 ----------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    """A single-line message for an exception (pydantic's multi-error text joined with '; ')."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":
        try:
            parts = []
            for err in exc.errors():  # type: ignore[attr-defined]
                loc = ".".join(str(x) for x in err.get("loc", ())) or "value"
                parts.append(f"{loc}: {err.get('msg', '')}")
            return f"{getattr(exc, 'title', 'input')}: " + "; ".join(parts)
        except Exception:  # noqa: BLE001  (fall back to the plain text)
            pass
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _exception_modules() -> list[Any]:
    """click's exception modules: typer >= 0.20 vendors click as ``typer._click``."""
    mods = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mods.append(importlib.import_module(name))
        except ImportError:
            continue
    return mods


_EXC = _exception_modules()
_CLICK_ERRORS = tuple(m.ClickException for m in _EXC)
_EXITS = (typer.Exit, *(getattr(m, "Exit", typer.Exit) for m in _EXC))
_ABORTS = (typer.Abort, KeyboardInterrupt, *(getattr(m, "Abort", typer.Abort) for m in _EXC))
_NO_ARGS = tuple(m.NoArgsIsHelpError for m in _EXC if hasattr(m, "NoArgsIsHelpError"))


def _usage_line(exc: Exception) -> str:
    msg = exc.format_message()  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and getattr(exc, "exit_code", 1) == 2:
        command = ctx.command
        if hasattr(command, "list_commands") and "command" in msg.lower():
            msg += f" Allowed: {', '.join(sorted(command.list_commands(ctx)))}."
        msg = msg.rstrip()
        msg += ("" if msg.endswith((".", "?", "!")) else ".") + f" See '{ctx.command_path} --help'."
    return " ".join(msg.split())


_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    LookupError,
    OSError,
    TypeError,
    ImportError,
)


class _Group(TyperGroup):
    """The top-level group: turns every usage or input error into exit 2 and one line."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code: int | None = 0
        try:
            rv = super().main(
                args, prog_name or "costmodel", complete_var, standalone_mode=False, **extra
            )
            code = rv if isinstance(rv, int) else 0
        except _EXITS as exc:
            code = getattr(exc, "exit_code", 0)
        except _NO_ARGS as exc:  # bare `costmodel` or `costmodel presets`: show the help
            typer.echo(exc.format_message())  # type: ignore[attr-defined]
            code = 0
        except _CLICK_ERRORS as exc:
            typer.echo(f"costmodel: error: {_usage_line(exc)}", err=True)
            code = getattr(exc, "exit_code", EXIT_USAGE)
        except _ABORTS:
            typer.echo("costmodel: interrupted", err=True)
            code = 130
        except _INPUT_ERRORS as exc:
            typer.echo(f"costmodel: error: {_one_line(exc)}", err=True)
            code = EXIT_USAGE
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    rich_markup_mode=None,
    cls=_Group,
    name="costmodel",
    help="Predict what data-parallel training costs on a GPU cluster, and check it against "
    "measurements. Sizes and rates take units: 14GB, 1.5GiB, 400Gb/s, 50GB/s, 5us.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
presets_app = typer.Typer(
    rich_markup_mode=None, help="List, show and describe hardware presets.", no_args_is_help=True
)
validate_app = typer.Typer(
    rich_markup_mode=None,
    help="Measure (nccl-tests, torch) and compare with the model.",
    no_args_is_help=True,
)
nccl_tests_app = typer.Typer(
    rich_markup_mode=None,
    help="Run nccl-tests binaries and keep their parsed rows.",
    no_args_is_help=True,
)
app.add_typer(presets_app, name="presets")
app.add_typer(validate_app, name="validate")
validate_app.add_typer(nccl_tests_app, name="nccl-tests")


@app.callback()
def _root(
    presets_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--presets-dir",
            help="Extra folder of preset TOML files (repeatable); overrides "
            "shipped presets of the same name, like COSTMODEL_PRESETS.",
        ),
    ] = None,
) -> None:
    """Predict what data-parallel training costs on a GPU cluster.

    Example: costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s
    """
    if presets_dir:
        for d in presets_dir:
            if not d.is_dir():
                raise ValueError(f"--presets-dir: {str(d)!r} is not a folder")
        old = os.environ.get("COSTMODEL_PRESETS", "")
        paths = [str(d) for d in presets_dir] + ([old] if old else [])
        os.environ["COSTMODEL_PRESETS"] = os.pathsep.join(paths)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``costmodel`` script; returns the exit code (2 for bad input)."""
    command = typer.main.get_command(app)
    return int(
        command.main(
            args=list(argv) if argv is not None else None,
            prog_name="costmodel",
            standalone_mode=False,
        )
        or 0
    )


# --- output helpers ---------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if hasattr(value, "model_dump"):
        return _jsonable(value.model_dump(mode="json"))
    if isinstance(value, Path):
        return str(value)
    return value


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(_jsonable(data), indent=2))


def _records(df: Any) -> list[dict[str, Any]]:
    return [_jsonable(r) for r in df.to_dict(orient="records")]


_FORMATTERS: dict[str, Callable[[float], str]] = {
    "_bytes_per_s": units.format_rate,
    "_GBps": lambda v: units.format_rate(v * 1e9),
    "_GB": lambda v: units.format_bytes(v * 1e9),
    "_bytes": units.format_bytes,
    "_rel_error": lambda v: f"{100 * v:+.1f}%",
    "_s": units.format_duration,
}
"""Column-name suffix -> formatter for text output (first match wins; order matters)."""


def _percent(v: float) -> str:
    return f"{100 * v:.1f}%"


def _human_frame(df: Any) -> str:
    """A DataFrame as aligned text, numbers formatted with their units from the column names."""
    out = df.copy()
    renames = {}
    for col in out.columns:
        name, bracket = str(col), ""
        if name.endswith("]") and "[" in name:  # "time_s[textbook]": unit before the bracket
            name, bracket = name[: name.index("[")], name[name.index("[") :]
        for suffix, fmt in _FORMATTERS.items():
            hit = ("_rel_error" in name) if suffix == "_rel_error" else name.endswith(suffix)
            if hit and out[col].dtype.kind in "fiu":
                if suffix == "_rel_error" and ("abs" in name or "rms" in name):
                    fmt = _percent  # noqa: PLW2901  (a magnitude: no sign)
                out[col] = [fmt(float(v)) if v == v else "-" for v in out[col]]
                if suffix != "_rel_error":
                    renames[col] = name[: -len(suffix)] + bracket
                break
        else:
            if col == "params" and out[col].dtype.kind in "fiu":
                out[col] = [units.format_count(float(v)) for v in out[col]]
            elif col.endswith("_over_nccl"):
                out[col] = [f"{v:.3g}x" for v in out[col]]
    out = out.rename(columns=renames)
    return out.to_string(index=False)


def _with_error_band(df: Any) -> Any:
    """Replace ``error_band_pct`` by an ``expected_error`` column of "±X%" strings ("± ?" where
    the regime has no measurement; costmodel.uncertainty)."""
    if "error_band_pct" not in df.columns:
        return df
    out = df.copy()
    out.insert(
        list(out.columns).index("error_band_pct"),
        "expected_error",
        [f"±{v:.0f}%" if v == v else "± ?" for v in out["error_band_pct"]],
    )
    return out.drop(columns=["error_band_pct"])


def _band_note(df: Any) -> str:
    """One line: what the ± means, whether a regime has no measurement, what is left out."""
    from .uncertainty import LEAVES_OUT

    if "error_band_pct" not in df.columns:
        return ""
    text = "expected_error: 80% of measured rows of this regime fell within it (grouped CV)."
    if df["error_band_pct"].isna().any():
        text += " '± ?': no bundled run measured this regime or fabric: the error is unknown."
    return text + " " + LEAVES_OUT


def _left_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned plain-text columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(f"{x:<{w}}" for x, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    )


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _sizes(values: Sequence[str], name: str = "--size") -> list[int]:
    from .sweep import parse_values

    if not values:
        raise ValueError(f"{name}: give at least one size, e.g. {name} 14GB or {name} 8B:1GB")
    out: list[int] = []
    for v in values:
        out.extend(parse_values("size", v))
    return out


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]


def _model_help() -> str:
    from . import models

    answer = ", ".join(f"{m}{' (default)' if m == models.DEFAULT else ''}" for m in models.MODELS)
    return f"{answer}; reference baseline: {', '.join(models.REFERENCE_MODELS)}."


_MODEL_HELP = _model_help()


# --- collective -------------------------------------------------------------------------------
@app.command()
def collective(
    op: Annotated[
        str,
        typer.Argument(
            help="all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, or 'all'."
        ),
    ],
    size: Annotated[
        list[str],
        typer.Option(
            "--size",
            "-s",
            help="Per-rank buffer, as nccl-tests' size column: 14GB, 8B:1GB "
            "(doubling), 1MB,2MB. Repeatable.",
        ),
    ],
    ranks: Annotated[str | None, typer.Option(help="Number of ranks N (with --bandwidth).")] = None,
    bandwidth: Annotated[
        str | None, typer.Option(help="Per-direction bandwidth per rank: 50GB/s, 400Gb/s.")
    ] = None,
    latency: Annotated[str, typer.Option(help="Latency per step (alpha): 5us.")] = "0s",
    gamma: Annotated[float, typer.Option(help="Reduction cost per byte [s/B].")] = 0.0,
    algorithm: Annotated[
        str,
        typer.Option(
            "--algorithm",
            "-a",
            help="Textbook: ring, tree, ..., or 'all'. With --cluster: auto, an NCCL algorithm, "
            "or 'all' (every algorithm the cluster can run, the model's choice marked *).",
        ),
    ] = "",
    cluster: Annotated[
        str | None,
        typer.Option(
            help="A cluster preset (see 'costmodel presets list') instead of --bandwidth."
        ),
    ] = None,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    gpus_per_node: Annotated[int | None, typer.Option(min=1, help="GPUs per node.")] = None,
    model: Annotated[str, typer.Option(help="With --cluster: " + _MODEL_HELP)] = "nccl",
    as_json: JsonOpt = False,
) -> None:
    """Time, algbw and busbw of one collective over a link or a cluster preset.

    Examples (the lesson's 7B gradient all-reduce, about 0.551 s; then which algorithm wins on
    8 DGX H100 at that size):

        costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s

        costmodel collective all_reduce --size 14GB --cluster dgx-h100 --nodes 8 --algorithm all
    """
    from .sweep import sweep

    sizes = _sizes(size)
    if cluster is not None and algorithm == "all":
        _collective_all(op, sizes, cluster, nodes, gpus_per_node, model, as_json)
        return
    axes: dict[str, Any] = {"op": op, "size": sizes}
    if cluster is not None:
        if bandwidth is not None or ranks is not None:
            raise ValueError("give either --cluster (with --nodes) or --ranks and --bandwidth")
        axes.update(preset=cluster, nodes=nodes, model=model, algorithm=algorithm or "auto")
        if gpus_per_node is not None:
            axes["gpus_per_node"] = gpus_per_node
    else:
        if ranks is None or bandwidth is None:
            raise ValueError("collective: needs --ranks and --bandwidth, or --cluster NAME")
        axes.update(
            ranks=ranks,
            bandwidth=bandwidth,
            latency=latency,
            gamma=gamma,
            algorithm=algorithm or "ring",
        )
    df = sweep(**axes)
    if as_json:
        _print_json({"results": _records(df)})
        return
    keep = [
        c
        for c in (
            "preset",
            "nodes",
            "ranks",
            "op",
            "algorithm",
            "algorithm_used",
            "protocol_used",
            "size_bytes",
            "time_s",
            "algbw_GBps",
            "busbw_GBps",
            "error_band_pct",
            "regime",
        )
        if c in df.columns
    ]
    typer.echo(_human_frame(_with_error_band(df[keep])))
    note = _band_note(df)
    if note:
        typer.echo(note)


def _collective_all(
    op: str,
    sizes: list[int],
    cluster: str,
    nodes: int,
    gpus_per_node: int | None,
    model: str,
    as_json: bool,
) -> None:
    """``collective --cluster NAME --algorithm all``: :func:`costmodel.predict_all_algorithms`."""
    from .predict import predict_all_algorithms

    if op == "all":
        from .nccl import OPS

        raise ValueError("--algorithm all takes one op; allowed: " + ", ".join(OPS))
    r = predict_all_algorithms(op, sizes, cluster, nodes, gpus_per_node, model=model)
    if as_json:
        _print_json(r.to_dict())
        return
    f = r.frame.sort_values(["message_bytes", "time_s"], kind="stable")
    shown = f.assign(
        mark=["*" if c else "" for c in f["chosen"]],
        size_bytes=f["message_bytes"],
        busbw_bytes_per_s=f["busbw_bytes_per_s"],
    )[["size_bytes", "mark", "algorithm", "protocol", "time_s", "busbw_bytes_per_s"]]
    typer.echo(
        f"{op} on {r.cluster}, {r.nodes} node(s), {r.ranks} GPUs, model {r.model} "
        "(* = the model's choice)"
    )
    typer.echo(_human_frame(shown))
    for a, why in r.unavailable:
        typer.echo(f"not available: {a}: {why}")
    for x in r.crossovers.itertuples():
        typer.echo(
            f"crossover: {x.faster_below} -> {x.faster_above} between "
            f"{units.format_bytes(x.previous_bytes)} and {units.format_bytes(x.message_bytes)}"
        )


# --- memory -----------------------------------------------------------------------------------
@app.command()
def memory(
    params: Annotated[
        str | None, typer.Option(help="Model parameters: 7B, 350M (or give --arch).")
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(
            "--arch",
            "--model",
            help="Architecture preset, e.g. llama-3.1-70b (see `costmodel archs`): gives the "
            "parameters and the activations.",
        ),
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Precision/optimizer recipe, e.g. mixed-adam.")
    ] = "mixed-adam",
    zero: Annotated[
        int, typer.Option("--zero", "--zero-stage", min=0, max=3, help="ZeRO stage 0-3.")
    ] = 0,
    ranks: Annotated[int, typer.Option(min=1, help="Data-parallel ranks sharding the state.")] = 1,
    activations: Annotated[
        str | None,
        typer.Option(help="Activation memory per GPU: 10GB (default: from --arch, else 0)."),
    ] = None,
    seq: Annotated[
        int, typer.Option("--seq", "--sequence-length", min=1, help="Tokens per sample.")
    ] = 4096,
    micro_batch: Annotated[int, typer.Option(min=1, help="Micro-batch per GPU [samples].")] = 1,
    recompute: Annotated[
        str, typer.Option(help="Activation recomputation: none, selective, full.")
    ] = "none",
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="FlashAttention (no s x s scores kept).")
    ] = True,
    gpu_memory: Annotated[
        str | None, typer.Option(help="GPU memory to check against: 80GB.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="Take the GPU memory from a preset.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory per GPU of weights, gradients, optimizer state, activations (and what fits).

    With --arch the activations of one micro-batch are included (default recipe: 4096 tokens,
    micro-batch 1, FlashAttention, no recomputation) and the verdict is checked against
    --gpu-memory, --cluster's GPU, or an 80 GB H100 (h100-sxm) when neither is given.
    --model is accepted for --arch here (this command has no cost model).

    Examples (lesson: a 7B model under mixed-precision Adam needs 112 GB):

        costmodel memory --params 7B --recipe mixed-adam --gpu-memory 80GB

        costmodel memory --arch llama-3.1-70b --zero-stage 3 --ranks 64 --seq 4096
    """
    from . import memory as mem

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"--recompute: must be none, selective or full, got {recompute!r}")
    p_given = units.parse_count(params, name="--params") if params is not None else None
    act = units.parse_bytes(activations, name="--activations") if activations else None
    recipe_kw: dict[str, Any] = dict(
        sequence_length=seq, micro_batch=micro_batch, flash_attention=flash, recompute=recompute
    )
    breakdown = mem.training_memory(
        p_given,
        recipe=recipe,
        zero_stage=zero,
        dp_ranks=ranks,
        activations_bytes=act,
        arch=arch,
        **recipe_kw,
    )
    if arch is not None:
        from .architecture import resolve_params

        p = resolve_params(p_given, arch)[0]
    else:
        p = float(p_given)  # type: ignore[arg-type]
    parts = {k: float(v) for k, v in breakdown.parts().items()}
    total = float(breakdown.total_bytes)
    act_bytes = parts["activations_bytes"]
    result: dict[str, Any] = {
        "params": p,
        "arch": arch,
        "recipe": recipe,
        "zero_stage": zero,
        "dp_ranks": ranks,
        "activations": breakdown.activations_note,
        "parts_bytes": parts,
        "total_bytes": total,
    }
    capacity = None
    gpu_name = None
    if gpu_memory is not None and cluster is not None:
        raise ValueError("give --gpu-memory or --cluster, not both")
    if gpu_memory is not None:
        capacity = float(units.parse_bytes(gpu_memory, name="--gpu-memory"))
    elif cluster is not None:
        from . import presets

        c = presets.cluster(cluster)
        capacity, gpu_name = float(c.gpu.memory_bytes), c.gpu.name
    elif arch is not None:
        from . import presets

        g = presets.load("h100-sxm", "gpu")
        capacity, gpu_name = float(g.memory_bytes), f"{g.name} (default)"  # type: ignore[union-attr]
    if capacity is not None:
        result["gpu_memory_bytes"] = capacity
        result["gpu"] = gpu_name
        result["fits"] = bool(total <= capacity)
        result["max_params"] = float(
            mem.max_params(
                capacity,
                recipe=recipe,
                zero_stage=zero,
                dp_ranks=ranks,
                activations_bytes=act_bytes,
            )
        )
        if zero > 0:
            try:
                result["min_ranks"] = _jsonable(
                    mem.min_ranks(
                        p, capacity, recipe=recipe, zero_stage=zero, activations_bytes=act_bytes
                    )
                )
            except ValueError as exc:
                result["min_ranks"] = None
                result["min_ranks_note"] = str(exc)
        if arch is not None and act is None and not result["fits"]:
            for rc in ("selective", "full"):
                if rc == recompute or (rc == "selective" and flash):
                    continue  # with FlashAttention selective recomputation saves nothing more
                t = float(
                    mem.training_memory(
                        recipe=recipe,
                        zero_stage=zero,
                        dp_ranks=ranks,
                        arch=arch,
                        **{**recipe_kw, "recompute": rc},
                    ).total_bytes
                )
                if t <= capacity:
                    result["fits_with_recompute"] = rc
                    break
    if as_json:
        _print_json(result)
        return
    rows = [(k.removesuffix("_bytes"), units.format_bytes(v)) for k, v in parts.items()]
    rows.append(("total per GPU", units.format_bytes(total)))
    if capacity is not None:
        rows.append(
            ("GPU memory", units.format_bytes(capacity) + (f" {gpu_name}" if gpu_name else ""))
        )
        verdict = "yes" if result["fits"] else "no"
        if not result["fits"]:
            verdict += f" ({units.format_bytes(total - capacity)} over)"
            if "fits_with_recompute" in result:
                verdict += f"; fits with --recompute {result['fits_with_recompute']}"
        rows.append(("fits", verdict))
        rows.append(
            ("largest model that fits", units.format_count(result["max_params"]) + " params")
        )
        if result.get("min_ranks") is not None:
            rows.append(("fewest ranks that fit", str(result["min_ranks"])))
    head = f"{arch}: " if arch else ""
    typer.echo(f"{head}{units.format_count(p)} params, {recipe}, ZeRO-{zero} over {ranks} ranks")
    typer.echo(breakdown.activations_note)
    typer.echo(_kv(rows))


# --- batch ------------------------------------------------------------------------------------
@app.command()
def batch(
    local: Annotated[
        int | None, typer.Option("--local", "--local-batch", min=1, help="Per-GPU micro-batch.")
    ] = None,
    ranks: Annotated[int | None, typer.Option(min=1, help="Data-parallel ranks.")] = None,
    accumulation: Annotated[int | None, typer.Option(min=1, help="Accumulation steps.")] = None,
    global_: Annotated[
        int | None, typer.Option("--global", "--global-batch", min=1, help="Global batch.")
    ] = None,
    sequence_length: Annotated[int | None, typer.Option(min=1, help="Tokens per sample.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Solve B_global = B_local x N x A for the one unknown left out.

    Example (which accumulation gives a global batch of 1024 on 64 GPUs at 4 each?):

        costmodel batch --local 4 --ranks 64 --global 1024
    """
    from . import batch as bt

    sol = bt.solve_batch(
        local_batch=local, ranks=ranks, accumulation=accumulation, global_batch=global_
    )
    data = _jsonable(sol)
    if not isinstance(data, dict):
        data = {
            k: _jsonable(getattr(sol, k))
            for k in ("local_batch", "ranks", "accumulation", "global_batch")
        }
    if sequence_length is not None:
        data["sequence_length"] = sequence_length
        data["tokens_per_step"] = int(data["global_batch"]) * sequence_length
    if as_json:
        _print_json(data)
        return
    rows = [(k, str(data[k])) for k in ("local_batch", "ranks", "accumulation", "global_batch")]
    if sequence_length is not None:
        rows.append(("tokens per step", units.format_count(data["tokens_per_step"])))
    typer.echo(_kv(rows))


# --- step -------------------------------------------------------------------------------------
@app.command()
def step(
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: Annotated[
        str | None,
        typer.Option(help="Architecture preset: its parameters and real tensor list (buckets)."),
    ] = None,
    compute_time: Annotated[
        str | None,
        typer.Option(help="Measured compute (forward + backward) per micro-batch: 400ms."),
    ] = None,
    tokens_per_gpu: Annotated[
        str | None, typer.Option(help="Tokens per GPU per micro-batch (with --mfu): 8k.")
    ] = None,
    mfu: Annotated[float, typer.Option(min=0.0, max=1.0, help="Model FLOP utilisation.")] = 0.4,
    peak_flops: Annotated[
        str | None,
        typer.Option(help="Peak dense FLOP/s per GPU (default: the preset's bf16 figure): 989T."),
    ] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Cluster preset (the realistic model).")
    ] = None,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    ranks: Annotated[int | None, typer.Option(min=1, help="Ranks (with --bandwidth).")] = None,
    bandwidth: Annotated[str | None, typer.Option(help="Per-direction bandwidth: 50GB/s.")] = None,
    latency: Annotated[str, typer.Option(help="All-reduce latency per step: 5us.")] = "0s",
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    gradient_bytes: Annotated[
        float, typer.Option(help="Bytes per gradient element all-reduced (2 = bf16, 1 = fp8).")
    ] = 2.0,
    accumulation: Annotated[int, typer.Option(min=1, help="Micro-batches per step.")] = 1,
    no_sync: Annotated[
        bool, typer.Option("--no-sync/--sync", help="Skip all-reduce on non-final micro-batches.")
    ] = True,
    model: Annotated[str, typer.Option(help="With --cluster: " + _MODEL_HELP)] = "nccl",
    as_json: JsonOpt = False,
) -> None:
    """One DDP training step: compute, bucketed all-reduce, exposed comm, bound, efficiency.

    Example (the lesson's practice problem 1: comms-bound, about 73% efficient):

        costmodel step --params 7B --compute-time 400ms --ranks 64 --bandwidth 50GB/s
    """
    from . import ddp

    if params is None and arch is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    kwargs: dict[str, Any] = dict(
        bucket_cap_bytes=units.parse_bytes(bucket, name="--bucket"),
        gradient_bytes_per_param=gradient_bytes,
        accumulation=accumulation,
        no_sync=no_sync,
    )
    if compute_time is not None:
        if tokens_per_gpu is not None:
            raise ValueError("give --compute-time or --tokens-per-gpu (with --mfu), not both")
        kwargs["compute_time_s"] = units.parse_duration(compute_time, name="--compute-time")
    elif tokens_per_gpu is None:
        raise ValueError("step: needs --compute-time, or --tokens-per-gpu with --mfu")
    else:
        kwargs["tokens_per_gpu"] = units.parse_count(tokens_per_gpu, name="--tokens-per-gpu")
        kwargs["mfu"] = mfu
    if cluster is not None:
        if bandwidth is not None or ranks is not None:
            raise ValueError("give either --cluster (with --nodes) or --ranks and --bandwidth")
        from . import predict, presets

        c = presets.cluster(cluster, nodes=nodes)
        n = int(c.ranks)
        kwargs["allreduce_time_fn"] = predict.allreduce_time_fn(c, nodes=nodes, model=model)
        kwargs["bandwidth_bytes_per_s"] = float(
            c.inter_bandwidth_bytes_per_s if nodes > 1 else c.intra_bandwidth_bytes_per_s
        )
        if "tokens_per_gpu" in kwargs:
            kwargs["peak_flops"] = (
                units.parse_count(peak_flops, name="--peak-flops")
                if peak_flops
                else float(c.peak_flops)
            )
    else:
        if ranks is None or bandwidth is None:
            raise ValueError("step: needs --ranks and --bandwidth, or --cluster NAME")
        n = ranks
        kwargs["bandwidth_bytes_per_s"] = units.parse_rate(bandwidth, name="--bandwidth")
        kwargs["latency_s"] = units.parse_duration(latency, name="--latency")
        if "tokens_per_gpu" in kwargs:
            if peak_flops is None:
                raise ValueError("--tokens-per-gpu without --cluster needs --peak-flops, e.g. 989T")
            kwargs["peak_flops"] = units.parse_count(peak_flops, name="--peak-flops")
    p_given = units.parse_count(params, name="--params") if params is not None else None
    if arch is not None:
        from .architecture import resolve_params

        p, a = resolve_params(p_given, arch)
        kwargs["layer_param_counts"] = a.tensor_sizes  # type: ignore[union-attr]
    else:
        p = float(p_given)  # type: ignore[arg-type]
    result = ddp.ddp_step(p, n, **kwargs)
    data = {
        "params": p,
        "arch": arch,
        "buckets": result.buckets,
        "ranks": n,
        "compute_s": result.compute_s,
        "comm_s": result.comm_s,
        "exposed_comm_s": result.exposed_comm_s,
        "step_time_s": result.step_time_s,
        "bound": result.bound,
        "efficiency": result.efficiency,
    }
    if as_json:
        data["timeline"] = _jsonable(result.timeline)
        _print_json(data)
        return
    typer.echo(
        _kv(
            [
                ("ranks", str(n)),
                ("buckets", f"{result.buckets}" + (f" ({arch} tensors)" if arch else "")),
                ("compute", units.format_duration(result.compute_s)),
                ("all-reduce (sum of buckets)", units.format_duration(result.comm_s)),
                ("exposed communication", units.format_duration(result.exposed_comm_s)),
                ("step time", units.format_duration(result.step_time_s)),
                ("bound", f"{result.bound}-bound"),
                ("scaling efficiency", f"{100 * float(result.efficiency):.1f}%"),
            ]
        )
    )


# --- scenario ---------------------------------------------------------------------------------
_ArchOpt = Annotated[
    str | None,
    typer.Option(
        help="Architecture preset (`costmodel archs`): parameters, tensors, activations, FLOPs."
    ),
]


def _scenario_from_options(o: dict[str, Any]) -> Any:
    from .scenario import Scenario

    if o["params"] is None and o["arch"] is None:
        raise ValueError("--params or --arch: give a parameter count or an architecture")
    if o["recompute"] not in ("none", "selective", "full"):
        raise ValueError(f"--recompute: must be none, selective or full, got {o['recompute']!r}")
    return Scenario(
        params=o["params"],
        arch=o["arch"],
        cluster=o["cluster"],
        nodes=o["nodes"],
        gpus_per_node=o["gpus_per_node"],
        recipe=o["recipe"],
        zero_stage=o["zero"],
        local_batch=o["local_batch"],
        accumulation=o["accumulation"],
        sequence_length=o["sequence_length"],
        mfu=o["mfu"],
        compute_time_s=units.parse_duration(o["compute_time"], name="--compute-time")
        if o["compute_time"] is not None
        else None,
        bucket_cap_bytes=o["bucket"],
        no_sync=o["no_sync"],
        model=o["model"],
        flash_attention=o["flash"],
        recompute=o["recompute"],
        comm_contention=o.get("contention", 0.0),
    )


@app.command()
def scenario(
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: _ArchOpt = None,
    cluster: Annotated[str, typer.Option(help="Cluster preset.")] = "dgx-h100",
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    gpus_per_node: Annotated[
        int | None, typer.Option(min=1, help="Use a slice of each node (default: all GPUs).")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Precision/optimizer recipe, e.g. mixed-adam.")
    ] = "mixed-adam",
    zero: Annotated[
        int, typer.Option("--zero", "--zero-stage", min=0, max=3, help="ZeRO stage 0-3.")
    ] = 0,
    local_batch: Annotated[int, typer.Option(min=1, help="Micro-batch per GPU [samples].")] = 1,
    accumulation: Annotated[
        int, typer.Option(min=1, help="Gradient-accumulation micro-batches per step.")
    ] = 1,
    sequence_length: Annotated[
        int, typer.Option("--sequence-length", "--seq", min=1, help="Tokens per sample.")
    ] = 4096,
    mfu: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Model FLOP utilisation (0, 1].")
    ] = 0.4,
    compute_time: Annotated[
        str | None, typer.Option(help="Measured compute per micro-batch (overrides --mfu): 0.4s.")
    ] = None,
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    no_sync: Annotated[
        bool,
        typer.Option(
            "--no-sync/--sync", help="Accumulate under no_sync (one all-reduce per step)."
        ),
    ] = True,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    recompute: Annotated[str, typer.Option(help="none, selective or full (with --arch).")] = "none",
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="FlashAttention (with --arch).")
    ] = True,
    contention: Annotated[
        float,
        typer.Option(
            "--contention",
            min=0.0,
            max=1.0,
            help="Overlap contention c in [0, 1]: backward slows to 1 - c while an all-reduce "
            "runs. 0 = perfect overlap; 1 = the fit to PyTorch's V100 DDP benchmark.",
        ),
    ] = 0.0,
    vs: Annotated[
        str | None,
        typer.Option(
            help="Second configuration to compare: this one with some fields changed, "
            "e.g. 'nodes=16,zero_stage=3' or 'cluster=dgx-a100,arch=llama-3.1-70b'."
        ),
    ] = None,
    bucket_advice: Annotated[
        bool,
        typer.Option(
            "--bucket-advice/--no-bucket-advice",
            help="Sweep bucket_cap 1-200 MiB and print the cap with the least exposed comm.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A whole training setup: memory, batch, DDP step, verdict and what flips it.

    --model names the collective cost model; the architecture is --arch. --vs compares a
    second configuration (A = the options, B = A with the --vs changes) and prints both
    side by side with B - A and B / A; --bucket-advice adds the bucket_cap advisor.

    Example:

        costmodel scenario --params 7B --cluster dgx-h100 --nodes 8 --local-batch 1 --zero 1

        costmodel scenario --arch llama-2-7b --cluster dgx-h100 --nodes 8 --recompute full

        costmodel scenario --arch llama-3.1-70b --nodes 8 --zero 3 --vs 'cluster=dgx-a100'
    """
    a = _scenario_from_options(locals())
    b = a.with_changes(vs) if vs is not None else None
    result = a.evaluate(scaling=b is None, flips=b is None)
    other = b.evaluate(scaling=False, flips=False) if b is not None else None
    advice = {"A": a.bucket_advice()} if bucket_advice else {}
    if bucket_advice and b is not None:
        advice["B"] = b.bucket_advice()
    if as_json:
        if other is None and not advice:
            _print_json(result)
            return
        data: dict[str, Any] = {"a": result} if other is not None else {**_jsonable(result)}
        if other is not None:
            data.update(b=other, changes=vs, comparison=result.compare(other))
        if advice:
            data["bucket_advice"] = {k: v.as_dict() for k, v in advice.items()}
        _print_json(data)
        return
    if other is None:
        typer.echo(result.summary())
    else:
        typer.echo(_comparison_text(result, other, vs or ""))
    for name, adv in advice.items():
        typer.echo(_advice_text(name if other is not None else "", adv, a if name == "A" else b))


def _comparison_text(a: Any, b: Any, changes: str) -> str:
    """A and B side by side (one row per figure, B - A and B / A), and the one-line answer."""
    from .scenario import compare, compare_summary

    def fmt(v: Any, unit: str) -> str:
        if unit == "B":
            return units.format_bytes(v)
        if unit == "s":
            return units.format_duration(v)
        if unit == "%":
            return f"{100 * v:.1f}%"
        if unit == "bool":
            return "yes" if v else "no"
        if unit == "text":
            return str(v)
        return units.format_count(v)

    def diff(r: dict[str, Any]) -> str:
        d, unit = r["difference"], r["unit"]
        if d is None:
            return "same" if r["a"] == r["b"] else "differs"
        if unit == "%":
            return f"{100 * d:+.1f} pt"
        sign = "+" if d >= 0 else "-"
        return sign + fmt(abs(d), unit)

    head = f"A: {a.summary().splitlines()[0]}\nB: {b.summary().splitlines()[0]}  (A with {changes})"
    rows = [("", "A", "B", "B - A", "B / A")]
    for r in compare(a, b):
        ratio = f"{r['ratio']:.3g}x" if r["ratio"] is not None else ""
        rows.append((r["label"], fmt(r["a"], r["unit"]), fmt(r["b"], r["unit"]), diff(r), ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    table = "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
    return f"{head}\n{table}\nanswer: {compare_summary(a, b)}"


def _advice_text(name: str, adv: Any, scenario: Any) -> str:
    """The bucket_cap advisor in a few lines: best cap, and the exposed time there vs now."""
    caps = list(adv.caps_bytes)
    now = float(scenario.bucket_cap_bytes)
    label = f"bucket_cap advice{' (' + name + ')' if name else ''}"
    best = adv.best_index
    line = (
        f"{label}: {adv.best_cap_bytes / 2**20:g} MiB minimises the exposed "
        f"communication ({units.format_duration(adv.exposed_comm_s[best])}, "
        f"{adv.buckets[best]} buckets) over {caps[0] / 2**20:g}-{caps[-1] / 2**20:g} MiB"
    )
    if now in caps:
        k = caps.index(now)
        line += (
            f"; at the current {now / 2**20:g} MiB: "
            f"{units.format_duration(adv.exposed_comm_s[k])} ({adv.buckets[k]} buckets)"
        )
    return line


@app.command()
def train(
    tokens: Annotated[
        str | None, typer.Option(help="Tokens to train: 2T, 300B (or --steps).")
    ] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Optimizer steps.")] = None,
    params: Annotated[str | None, typer.Option(help="Model parameters: 7B (or --arch).")] = None,
    arch: _ArchOpt = None,
    cluster: Annotated[str, typer.Option(help="Cluster preset.")] = "dgx-h100",
    nodes: Annotated[int, typer.Option(min=1)] = 1,
    gpus_per_node: Annotated[int | None, typer.Option(min=1)] = None,
    recipe: Annotated[str, typer.Option()] = "mixed-adam",
    zero: Annotated[int, typer.Option("--zero", "--zero-stage", min=0, max=3)] = 0,
    local_batch: Annotated[int, typer.Option(min=1)] = 1,
    accumulation: Annotated[int, typer.Option(min=1)] = 1,
    sequence_length: Annotated[int, typer.Option("--sequence-length", "--seq", min=1)] = 4096,
    mfu: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.4,
    compute_time: Annotated[
        str | None, typer.Option(help="Measured compute per micro-batch.")
    ] = None,
    bucket: Annotated[str, typer.Option(help="DDP bucket_cap: 25MiB.")] = "25MiB",
    no_sync: Annotated[bool, typer.Option("--no-sync/--sync")] = True,
    model: Annotated[str, typer.Option(help="Collective cost model: nccl or textbook.")] = "nccl",
    recompute: Annotated[str, typer.Option(help="none, selective or full (with --arch).")] = "none",
    flash: Annotated[bool, typer.Option("--flash/--no-flash")] = True,
    step_time: Annotated[
        str | None,
        typer.Option(help="Measured step time: 1.2s (else the predicted one); gives the MFU."),
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None, typer.Option(min=0.0, help="Price of one GPU-hour [USD].")
    ] = None,
    price: Annotated[
        str | None, typer.Option(help="Price preset, e.g. aws-p5-on-demand (`costmodel archs`).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Time and cost to train: wall-clock days, GPU-hours, dollars and MFU.

    The step time is the scenario's prediction, or --step-time as measured (then the MFU shown
    is what that measurement implies).

    Example (Llama-2-7B on 2T tokens, 64 H100s at the 2023 AWS on-demand price):

        costmodel train --arch llama-2-7b --tokens 2T --cluster dgx-h100 --nodes 8 \\
            --local-batch 4 --recompute full --price aws-p5-on-demand
    """
    opts = dict(locals())
    if (tokens is None) == (steps is None):
        raise ValueError("--tokens or --steps: give exactly one of them")
    d = units.parse_count(tokens, name="--tokens") if tokens is not None else None
    measured = units.parse_duration(step_time, name="--step-time") if step_time else None
    result = _scenario_from_options(opts).evaluate(scaling=False, flips=False)
    cost = result.training_cost(
        d,
        steps=steps,
        usd_per_gpu_hour=usd_per_gpu_hour,
        price=price,
        measured_step_time_s=measured,
    )
    data = {
        **cost.as_dict(),
        "arch": arch,
        "params": result.scenario.params,
        "cluster": cluster,
        "memory_total_bytes": result.memory_total_bytes,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "fits": result.fits,
    }
    if as_json:
        _print_json(data)
        return
    rows = [
        ("tokens", units.format_count(cost.tokens)),
        ("steps", f"{cost.steps:,}"),
        ("tokens per step", units.format_count(cost.tokens_per_step)),
        (f"step time ({cost.step_time_source})", units.format_duration(cost.step_time_s)),
        ("GPUs", str(cost.ranks)),
        ("wall clock", f"{cost.wall_days:,.1f} days"),
        ("GPU-hours", f"{cost.gpu_hours:,.0f}"),
    ]
    if cost.cost_usd is not None:
        rows.append(("price", f"${cost.usd_per_gpu_hour:.3g} per GPU-hour"))
        rows.append(("cost", f"${cost.cost_usd:,.0f}"))
    if cost.mfu is not None:
        rows.append(
            ("MFU" + (" implied" if measured else " at this step"), f"{100 * cost.mfu:.1f}%")
        )
    rows.append(
        (
            "memory per GPU",
            f"{units.format_bytes(result.memory_total_bytes)} of "
            f"{units.format_bytes(result.gpu_memory_bytes)}"
            + ("" if result.fits else " (does NOT fit)"),
        )
    )
    head = arch or f"{units.format_count(result.scenario.params)} params"
    typer.echo(f"{head} on {cluster} x {result.nodes} nodes, {result.scenario.recipe}")
    typer.echo(_kv(rows))
    if cost.price_note and price is not None:
        typer.echo(f"price: {cost.price_note}")


@app.command()
def archs(as_json: JsonOpt = False) -> None:
    """Architecture presets (parameters, shape, source) and price presets."""
    from .architecture import arch_names, load_arch
    from .training import load_price, price_names

    rows = [load_arch(n) for n in arch_names()]
    prices = [load_price(n) for n in price_names()]
    if as_json:
        _print_json(
            {
                "archs": [
                    {**a.model_dump(), "params": a.params, "active_params": a.active_params}
                    for a in rows
                ],
                "prices": [
                    {**p.model_dump(), "usd_per_gpu_hour": p.usd_per_gpu_hour} for p in prices
                ],
            }
        )
        return
    for a in rows:
        moe = f", {units.format_count(a.active_params)} active" if a.moe else ""
        typer.echo(
            f"{a.name:<16} {units.format_count(a.params):>9} params{moe}; L={a.layers} "
            f"h={a.hidden} heads={a.heads}/{a.kv_heads} vocab={a.vocab}"
        )
    for p in prices:
        typer.echo(f"{p.name:<24} ${p.usd_per_gpu_hour:.3f}/GPU-h ({p.date}) {p.description}")


# --- presets ----------------------------------------------------------------------------------
@presets_app.command("list")
def presets_list(
    kind: Annotated[
        str | None, typer.Option(help="gpu, link or cluster (plural accepted).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every preset with its headline figures, source, and whether a user file overrides it.

    Example: costmodel presets list --kind cluster
    """
    from . import presets

    rows = [r.as_dict() for r in presets.listing(kind)]
    if as_json:
        _print_json(rows)
        return
    cols = ["name", "kind", "headline", "origin", "source"]
    table = [[str(r[c]) for c in cols] for r in rows]
    for line in table:
        line[-1] = line[-1] if len(line[-1]) <= 60 else line[-1][:59] + "…"
    typer.echo(_left_table(cols, table))


@presets_app.command("show")
def presets_show(
    name: Annotated[str, typer.Argument(help="Preset name, e.g. dgx-h100.")],
    nodes: Annotated[int, typer.Option(min=1, help="For a cluster: number of nodes.")] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Every field of one preset (and, for a cluster, the figures the formulas use).

    Example: costmodel presets show dgx-h100 --nodes 2
    """
    from . import presets

    obj = presets.load(name)
    data: dict[str, Any] = {
        "name": name,
        "kind": type(obj).__name__,
        "fields": _jsonable(obj.model_dump(mode="json")),
    }
    target = presets.cluster(name, nodes=nodes) if type(obj).__name__ == "Cluster" else obj
    derived = {attr: _jsonable(getattr(target, attr)) for attr in _DERIVED if hasattr(target, attr)}
    if derived:
        data["derived"] = derived
    if as_json:
        _print_json(data)
        return
    typer.echo(f"{name} ({data['kind']})")
    typer.echo(_kv([(k, _fmt_field(k, v)) for k, v in _flatten(data["fields"]).items()]))
    if "derived" in data:
        typer.echo("\nderived (what the formulas use; per GPU, per direction):")
        typer.echo(_kv([(k, _fmt_field(k, v)) for k, v in data["derived"].items()]))


_DERIVED = (
    "per_direction_bandwidth_bytes_per_s",
    "effective_bandwidth_bytes_per_s",
    "peak_flops",
    "nodes",
    "gpus_per_node",
    "ranks",
    "intra_bandwidth_bytes_per_s",
    "inter_bandwidth_bytes_per_s",
    "node_inter_bandwidth_bytes_per_s",
    "intra_latency_s",
    "inter_latency_s",
    "intra_kind",
    "fabric",
    "nvls",
    "sharp",
)
"""Properties `presets show` prints under the stored fields, where the preset has them."""


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _fmt_field(name: str, value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        for suffix, fmt in (
            ("_bytes_per_s", units.format_rate),
            ("_bytes", units.format_bytes),
            ("_s", units.format_duration),
            ("_flops", units.format_flops),
        ):
            if name.endswith(suffix):
                return fmt(float(value))
    return str(value)


@presets_app.command("schema")
def presets_schema(
    kind: Annotated[str, typer.Argument(help="gpu, link or cluster.")] = "cluster",
) -> None:
    """The JSON schema a preset TOML file is written against.

    Example: costmodel presets schema link
    """
    from . import presets

    typer.echo(presets.schema_json(kind.lower()))


# --- predict ----------------------------------------------------------------------------------
@app.command()
def predict(
    cluster: Annotated[str, typer.Option(help="Cluster preset, e.g. dgx-h100.")],
    sizes: Annotated[
        list[str],
        typer.Option(
            "--sizes",
            "--size",
            "-s",
            help="8B:16GB (doubling, as nccl-tests -b -e -f 2), "
            "a list 1MB,1GB, or one size. Repeatable.",
        ),
    ],
    op: Annotated[str, typer.Option(help="Collective: all_reduce, all_gather, ...")] = "all_reduce",
    nodes: Annotated[int, typer.Option(min=1)] = 1,
    gpus_per_node: Annotated[int | None, typer.Option(min=1)] = None,
    algorithm: Annotated[
        str, typer.Option(help="auto or an NCCL algorithm (Ring, Tree, NVLS, ...).")
    ] = "auto",
    protocol: Annotated[str, typer.Option(help="auto, LL, LL128 or Simple.")] = "auto",
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    compare_models: Annotated[
        bool,
        typer.Option(
            "--compare-models",
            help="Every model that can answer (and the nccl-table baseline) side by side.",
        ),
    ] = False,
    harness: Annotated[
        str,
        typer.Option(
            help="How the op is launched and timed: nccl-tests (one process per GPU), "
            "nccl-tests-g (one process drives the node's GPUs) or pytorch (a torch loop)."
        ),
    ] = "nccl-tests",
    as_json: JsonOpt = False,
) -> None:
    """Predicted time, algbw and busbw of a collective on a cluster, per size.

    Example:

        costmodel predict --op all_reduce --cluster dgx-h100 --nodes 2 --sizes 8B:16GB
    """
    import numpy as np

    from . import predict as pr

    sz = _sizes(sizes, "--sizes")

    m = np.asarray(sz, dtype=float)
    if compare_models:
        if algorithm != "auto" or protocol != "auto":
            raise ValueError(
                "--compare-models compares each model's own choice; leave "
                "--algorithm and --protocol at auto"
            )
        df = pr.compare_models(op, m, cluster, nodes=nodes, gpus_per_node=gpus_per_node)
    else:
        df = pr.predict_collective(
            op,
            m,
            cluster,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            algorithm=algorithm,
            protocol=protocol,
            model=model,
            harness=harness,
        ).to_frame()
    if as_json:
        _print_json(
            {
                "op": op,
                "cluster": cluster,
                "nodes": nodes,
                "models": [c[len("time_s[") : -1] for c in df.columns if c.startswith("time_s[")]
                if compare_models
                else [model],
                "results": _records(df),
            }
        )
        return
    typer.echo(f"{op} on {cluster} x {nodes} node(s)")
    typer.echo(_human_frame(_with_error_band(df)))
    note = _band_note(df)
    if note:
        typer.echo(note)


# --- sweep ------------------------------------------------------------------------------------
@app.command()
def sweep(
    grid_file: Annotated[Path | None, typer.Argument(help="TOML grid spec ([grid] table).")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="name=v1,v2 or name=a..b x f; repeatable (e.g. --set ranks=8..4096x2 "
            "--set 'size=8B..16GB x2').",
        ),
    ] = None,
    kind: Annotated[str | None, typer.Option(help="collective or memory.")] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output file: .csv (default format) or .parquet. Without it, CSV goes to stdout.",
        ),
    ] = None,
    chunk_rows: Annotated[
        int, typer.Option(min=1, help="Rows per streamed chunk (per partition file with dask).")
    ] = 1_000_000,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
    ] = True,
    engine: Annotated[
        str,
        typer.Option(
            help="local (this process) or dask (partitions on a Dask cluster, written to the "
            "folder -o as one Parquet file each; needs costmodel[distributed])."
        ),
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="With --engine dask: scheduler address (tcp://host:8786); default: a local "
            "cluster, one worker per core."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate presets x a grid of sizes, GPU counts, algorithms (or model sizes) to a table.

    Example:

        costmodel sweep --set preset=dgx-h100,dgx-a100 --set nodes=1..16x2 --set 'size=8B..16GB x2' -o out.parquet

    Past one machine (--chunk-rows rows per partition file; a rerun skips finished ones):

        costmodel sweep grid.toml --engine dask --scheduler tcp://head:8786 -o sweep_dataset/
    """
    sw = importlib.import_module("costmodel.sweep")

    axes = dict(sw.parse_set(s) for s in (set_ or []))
    if len(axes) != len(set_ or []):
        raise ValueError("--set: the same axis is given twice")
    if grid_file is not None:
        loaded = sw.load_grid(grid_file)
        if kind is not None and kind != loaded.kind:
            raise ValueError(f"--kind {kind} contradicts kind = {loaded.kind!r} in {grid_file}")
        grid = sw.make_grid({**loaded.axes, **axes}, kind=loaded.kind)
    elif axes:
        grid = sw.make_grid(axes, kind=kind or "collective")
    else:
        raise ValueError("sweep: give a grid file or --set name=values, e.g. --set ranks=8..64x2")
    if engine not in sw.ENGINES:
        raise ValueError(f"--engine: unknown {engine!r}; allowed: {', '.join(sw.ENGINES)}")
    if engine == "dask":
        if output is None:
            raise ValueError("--engine dask: needs -o FOLDER (a partitioned Parquet dataset)")
        _sweep_dask(grid, output, scheduler, chunk_rows, progress and not as_json, as_json)
        return
    if scheduler is not None:
        raise ValueError("--scheduler: only with --engine dask")
    if output is None:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        first = True
        if as_json:  # a JSON array of row objects, streamed chunk by chunk
            sys.stdout.write("[")
            for table in sw.iter_sweep(grid, chunk_rows):
                for rec in _records(table.to_pandas()):
                    sys.stdout.write(("\n" if first else ",\n") + json.dumps(rec))
                    first = False
            sys.stdout.write("\n]\n")
            return
        for table in sw.iter_sweep(grid, chunk_rows):
            table = table.cast(
                pa.schema(
                    [
                        pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f
                        for f in table.schema
                    ]
                )
            )
            buf = pa.BufferOutputStream()
            pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=first))
            sys.stdout.write(buf.getvalue().to_pybytes().decode())
            first = False
        return
    summary = sw.sweep_to_file(
        output,
        grid,
        chunk_rows=chunk_rows,
        progress=progress and sys.stderr.isatty() and not as_json,
    )
    if as_json:
        _print_json(dataclasses.asdict(summary))
        return
    rate = summary.rows / summary.seconds if summary.seconds > 0 else float("inf")
    typer.echo(
        f"wrote {summary.rows} rows to {summary.path} ({summary.format}) in "
        f"{summary.seconds:.2f} s ({rate:,.0f} rows/s)"
    )


def _sweep_dask(
    grid: Any, output: Path, scheduler: str | None, chunk_rows: int, progress: bool, as_json: bool
) -> None:
    from . import distributed

    if progress and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("sweep (dask)"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("rows", total=grid.rows)
            summary = distributed.sweep_dask(
                output,
                grid,
                scheduler=scheduler,
                partition_rows=chunk_rows,
                progress=lambda k: bar.advance(task, k),
            )
    else:
        summary = distributed.sweep_dask(
            output, grid, scheduler=scheduler, partition_rows=chunk_rows
        )
    if as_json:
        _print_json(dataclasses.asdict(summary))
        return
    typer.echo(
        f"wrote {summary.written} of {summary.partitions} partitions ({summary.skipped} already "
        f"done, {summary.rows} rows in all) to {summary.path} in {summary.seconds:.2f} s"
    )


# --- validate ---------------------------------------------------------------------------------
def _csv_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"expected a comma-separated list, got {text!r}")
    return items


@nccl_tests_app.command("run")
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
    nodes: Annotated[int, typer.Option(min=1)] = 1,
    launcher: Annotated[str, typer.Option(help="local (-g GPUS), srun or mpirun.")] = "local",
    build_dir: Annotated[
        Path | None, typer.Option(help="nccl-tests build folder (or $NCCL_TESTS_BUILD, or $PATH).")
    ] = None,
    min_bytes: Annotated[str, typer.Option("--min-bytes", "-b")] = "8",
    max_bytes: Annotated[str, typer.Option("--max-bytes", "-e")] = "8G",
    step_factor: Annotated[int, typer.Option("--step-factor", "-f", min=2)] = 2,
    iters: Annotated[int, typer.Option("--iters", "-n", min=1)] = 20,
    warmup: Annotated[int, typer.Option("--warmup", "-w", min=0)] = 5,
    timeout: Annotated[str, typer.Option(help="Per-run time limit: 30min, 600s.")] = "30min",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the command lines only.")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Run nccl-tests over collectives (x NCCL_ALGO x NCCL_PROTO), appending parsed rows.

    Reruns skip finished runs; an interrupted sweep keeps what finished. Exit 1 if a run failed.

    Example:

        costmodel validate nccl-tests run -o runs/h100 --ops all_reduce,all_gather --gpus 8 --algos Ring,Tree
    """
    from .validation import runner

    if launcher not in runner.LAUNCHERS:
        raise ValueError(
            f"--launcher: unknown {launcher!r}; allowed: {', '.join(runner.LAUNCHERS)}"
        )
    plan = dict(
        algos=_csv_list(algos),
        protos=_csv_list(protos),
        gpus=gpus,
        nodes=nodes,
        launcher=launcher,
        build_dir=build_dir,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=step_factor,
        warmup_iters=warmup,
        iters=iters,
    )
    op_list = _csv_list(ops) or []
    if dry_run:
        specs = runner.plan_sweep(op_list, **plan)
        rows = [{"key": sp.key, "argv": list(sp.argv), "env": sp.env} for sp in specs]
        if as_json:
            _print_json(rows)
        else:
            for r in rows:
                env = " ".join(f"{k}={v}" for k, v in r["env"].items())
                typer.echo((env + " " if env else "") + " ".join(r["argv"]))
        return
    summary = runner.run_nccl_tests(
        output,
        op_list,
        timeout_s=units.parse_duration(timeout, name="--timeout"),
        progress=progress and sys.stderr.isatty() and not as_json,
        **plan,
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
            }
        )
    else:
        typer.echo(summary.message())
    if summary.failed or summary.interrupted:
        raise typer.Exit(1)


@validate_app.command("torch")
def validate_torch(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="JSON lines results file (appended).")
    ] = Path("results.jsonl"),
    nproc: Annotated[
        int, typer.Option(min=1, help="Ranks on this machine (torchrun --nproc_per_node).")
    ] = 2,
    backend: Annotated[str, typer.Option(help="auto, gloo (CPU) or nccl (GPU).")] = "auto",
    ops: Annotated[
        str, typer.Option(help="Comma list of collectives, or none.")
    ] = "all_reduce,all_gather,reduce_scatter,broadcast,all_to_all",
    min_bytes: Annotated[str, typer.Option()] = "4KiB",
    max_bytes: Annotated[str, typer.Option()] = "64MiB",
    iters: Annotated[int, typer.Option(min=1)] = 10,
    ddp: Annotated[bool, typer.Option("--ddp", help="Also time DDP steps.")] = False,
    extra: Annotated[
        list[str] | None,
        typer.Argument(help="More torch_bench arguments after --, e.g. -- --ddp-params 25M."),
    ] = None,
) -> None:
    """Time torch.distributed collectives (and DDP steps) on this machine with torchrun.

    For several nodes launch the job yourself (srun ... python -m costmodel.validation.torch_bench).

    Example (CPU, gloo, 2 ranks):

        costmodel validate torch --nproc 2 --backend gloo --max-bytes 16MiB -o torch.jsonl
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ValueError(
            "validate torch: torch is not installed; pip install 'costmodel[validate]'"
        )
    # every argument is checked here, before torchrun starts: a bad one is one line and exit 2,
    # not torch's elastic error page from inside the job (issue 14)
    from .atomic import check_writable
    from .validation.torch_bench import OPS as TORCH_OPS

    low = units.parse_bytes(min_bytes, name="--min-bytes")
    high = units.parse_bytes(max_bytes, name="--max-bytes")
    if not low > 0:
        raise ValueError(f"--min-bytes: must be > 0, got {min_bytes!r}")
    if low > high:
        raise ValueError(f"--min-bytes {min_bytes} is larger than --max-bytes {max_bytes}")
    if backend not in ("auto", "gloo", "nccl"):
        raise ValueError(f"--backend: unknown {backend!r}; allowed: auto, gloo, nccl")
    chosen = [] if ops.strip() == "none" else [o.strip() for o in ops.split(",") if o.strip()]
    unknown = [o for o in chosen if o not in TORCH_OPS]
    if unknown:
        raise ValueError(f"--ops: {unknown} not known; allowed: {','.join(TORCH_OPS)} or none")
    if not chosen and not ddp:
        raise ValueError("--ops: empty; name at least one collective, or give --ddp with none")
    check_writable(output)
    if output.exists() and not os.access(output, os.W_OK):
        raise ValueError(f"output: {str(output)!r} is not writable")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
        "-m",
        "costmodel.validation.torch_bench",
        "-o",
        str(output),
        "--backend",
        backend,
        "--ops",
        ops,
        "--min-bytes",
        min_bytes,
        "--max-bytes",
        max_bytes,
        "--iters",
        str(iters),
        *(["--ddp"] if ddp else []),
        *(extra or []),
    ]
    code = subprocess.call(cmd)
    if code != 0:
        raise typer.Exit(code)


def _read_measurements(path: Path, nodes: int | None = None) -> Any:
    """Measured rows from a results file (.jsonl: runner or torch job) or an nccl-tests log."""
    from .validation import nccl_tests, runner

    if not path.is_file():
        raise ValueError(f"results: {str(path)!r} does not exist")
    if path.suffix.lower() == ".jsonl":
        df = runner.load_results(path)
    else:
        df = nccl_tests.read_nccl_tests(path)
    if nodes is not None:
        if "nodes" in df and df["nodes"].notna().any() and (df["nodes"].dropna() != nodes).any():
            found = sorted({int(v) for v in df["nodes"].dropna()})
            raise ValueError(f"--nodes {nodes} contradicts the results file (nodes {found})")
        df["nodes"] = nodes
    return df


def _reference_help() -> str:
    """--reference help: the bundled runs' short ids (full names in the error of a wrong one)."""
    from .reference import reference_id, reference_runs

    ids = ", ".join(reference_id(n) for n in reference_runs("nccl-tests"))
    return f"A bundled published nccl-tests run instead of RESULTS, by name or short id: {ids}."


@validate_app.command("compare")
def validate_compare(
    results: Annotated[
        Path | None, typer.Argument(help="results.jsonl or an nccl-tests log.")
    ] = None,
    reference: Annotated[str | None, typer.Option(help=_reference_help())] = None,
    cluster: Annotated[str | None, typer.Option(help="Cluster preset to predict with.")] = None,
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes, when the file does not say.")
    ] = None,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    calibration: Annotated[
        Path | None,
        typer.Option(help="Predict with a calibration TOML (from 'costmodel calibrate') instead."),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            help="Exit 1 when any row's |busbw error| (predicted/measured - 1) exceeds this "
            "fraction. Default: the docs/fidelity.md goal, median |error| <= 8% from 1 MiB up "
            "and <= 20% over all sizes."
        ),
    ] = None,
    check_from: Annotated[
        str, typer.Option(help="Apply --tolerance only to sizes from this one up: 1MiB.")
    ] = "0B",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Per-row CSV/Parquet.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="HTML report with plotly charts.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measured vs predicted time and busbw per row; summary per op/algorithm/size band.

    Error = busbw_pred / busbw_meas - 1 (uncapped), with |ln ratio| beside it. Exit 1 when any
    |error| (sizes from --check-from up) exceeds --tolerance, or, without --tolerance, when the
    docs/fidelity.md goal fails. A log whose GPU or GPUs per node contradict --cluster gets a
    warning on stderr naming the preset the log looks like.

    Example:

        costmodel validate compare runs/h100/results.jsonl --cluster dgx-h100 --nodes 2 --report r.html

        costmodel validate compare --reference 06a --cluster dell-xe9680-h100
    """
    from .validation import compare as cmp

    if (results is None) == (reference is None):
        raise ValueError("validate compare: give RESULTS or --reference NAME (one)")
    if reference is not None:
        from .reference import reference_path

        results = reference_path(reference, kind="nccl-tests")
    assert results is not None  # one of the two, checked above
    if (cluster is None) == (calibration is None):
        raise ValueError("validate compare: give --cluster NAME or --calibration FILE (one)")
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"--tolerance: must be a finite fraction > 0, got {tolerance}")
    floor = units.parse_bytes(check_from, name="--check-from")
    if output is not None:
        _check_output(output)
    if report is not None:
        _check_output(report, (".html", ".htm"))
    measured = _read_measurements(results, nodes)
    if calibration is not None:
        from .validation.calibrate import calibrated_predictor

        predictor = calibrated_predictor(calibration)
        label = f"calibration {calibration.name}"
    else:
        from . import presets

        presets.cluster(cluster)  # unknown names fail here, with the closest ones
        predictor = cmp.cluster_predictor(cluster, model=model)
        label = model
        mismatch = cmp.preset_mismatch(measured, cluster)
        if mismatch:
            guess = cmp.detect_cluster(measured, results.name)
            typer.echo(
                f"warning: --cluster {cluster} does not match the log: {mismatch}"
                + (f" (it looks like {guess})" if guess else ""),
                err=True,
            )
    table = cmp.compare(measured, predictor, model=label)
    if table["rel_error"].notna().sum() == 0:
        notes = sorted({str(n) for n in table.get("note", []) if n})
        raise ValueError(
            "validate compare: no row could be predicted"
            + (f" ({'; '.join(notes)[:300]})" if notes else "")
        )
    summary = cmp.summarize(table)
    checked = table[(table["size_bytes"] >= floor) & table["rel_error"].notna()]
    if tolerance is None:
        passed, goal_lines = cmp.fidelity_check(checked)
        bad = checked.iloc[0:0] if passed else checked
    else:
        bad = cmp.exceeds(checked, tolerance)
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
        with sw.atomic_path(report) as tmp:
            cmp.write_report(table, tmp)
    if as_json:
        _print_json(
            {
                "rows": int(len(table)),
                "predicted": int(table["rel_error"].notna().sum()),
                "tolerance": tolerance,
                "check_from_bytes": floor,
                "exceeding": int(len(bad)) if tolerance is not None else None,
                "passed": not len(bad),
                "summary": _records(summary),
            }
        )
    else:
        typer.echo(_human_frame(summary))
        verdict = "FAIL" if len(bad) else "ok"
        if tolerance is None:
            typer.echo(f"{verdict}: docs/fidelity.md goal; " + "; ".join(goal_lines))
        else:
            typer.echo(
                f"{verdict}: {len(bad)} of {len(checked)} rows from "
                f"{units.format_bytes(floor)} beyond |busbw error| {tolerance:.0%}"
            )
    if len(bad):
        raise typer.Exit(1)


_TEXT_COLUMNS = (
    "op",
    "algorithm",
    "predicted_algorithm",
    "size_band",
    "model",
    "note",
    "placement",
    "dtype",
    "redop",
    "run",
    "run_key",
    "source",
    "backend",
    "algo_env",
    "proto_env",
    "nccl_algo",
    "nccl_proto",
    "kind",
)


def _check_output(path: Path, allowed: Sequence[str] | None = None) -> None:
    sw = importlib.import_module("costmodel.sweep")
    if allowed is None:
        sw.output_format(path)
    elif path.suffix.lower() not in allowed:
        raise ValueError(f"output: {str(path)!r} must end in {' or '.join(allowed)}")
    sw.check_writable(path)


@app.command()
def calibrate(
    results: Annotated[Path, typer.Argument(help="results.jsonl or an nccl-tests log.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration preset TOML.")],
    name: Annotated[str | None, typer.Option(help="Name stored in the TOML.")] = None,
    min_bytes: Annotated[str, typer.Option(help="Leave out sizes below this: 64KiB.")] = "0B",
    nodes: Annotated[
        int | None,
        typer.Option(
            min=1, help="Nodes, when the file does not say (no host lines): never guessed."
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
    cluster: Annotated[
        str | None,
        typer.Option(
            help="Base cluster preset: the TOML then loads as that cluster carrying the fits "
            "(cm.cluster(NAME), --cluster NAME everywhere), its realistic model calibrated "
            "per algorithm/protocol; the preset's figures are shown next to the fitted ones."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Calibrate on a measured sweep; write a calibration preset TOML.

    With --cluster the realistic model's own candidates are calibrated (bandwidth efficiency
    and latency scale per NCCL algorithm/protocol, host-floor scale; robust least squares on
    log time) and the written preset is that cluster, loadable by name from a COSTMODEL_PRESETS
    folder or by path; model "calibrated" and "nccl" then use them. The textbook alpha-beta
    line per op/algorithm/protocol/level is fitted too (residuals and held-out sizes shown). A
    file without host lines needs --nodes (and --ranks if it lacks them): never guessed.

    Example:

        costmodel calibrate runs/cpu/results.jsonl -o my-cluster.toml --min-bytes 64KiB
    """
    import pandas as pd

    from .validation import calibrate as cal

    if output.suffix.lower() != ".toml":
        raise ValueError(f"--output: {str(output)!r} must end in .toml")
    sw = importlib.import_module("costmodel.sweep")
    sw.check_writable(output)
    if placement not in cal.PLACEMENTS:
        raise ValueError(
            f"--placement: {placement!r} unknown; allowed: {', '.join(cal.PLACEMENTS)}"
        )
    if cluster is not None:
        from . import presets

        presets.cluster(cluster)  # an unknown name fails here, before anything is written
    measured = _read_measurements(results, nodes)
    try:
        c = cal.calibrate(
            measured,
            name=name or output.stem,
            min_bytes=units.parse_bytes(min_bytes, name="--min-bytes"),
            source=str(results),
            nodes=nodes,
            ranks=ranks,
            placement=placement,
            base=cluster,
        )
    except ValueError as exc:
        msg = str(exc)
        for field in ("nodes", "ranks", "placement"):
            if msg.startswith(f"{field}:"):
                msg = f"--{field}: " + msg.removeprefix(f"{field}:").lstrip()
        raise ValueError(msg) from None
    with sw.atomic_path(output) as tmp:
        cal.write_calibration(c, tmp, base=cluster)
    fits = c.table()
    reference: dict[str, float] = {}
    if cluster is not None:
        from . import presets

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
    if as_json:
        _print_json(
            {
                "path": str(output),
                "placement": placement,
                "candidates": _records(candidates),
                "fits": _records(fits),
                "skipped": list(c.residuals.attrs.get("skipped", []))
                if c.residuals is not None
                else [],
            }
        )
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
            "cv_max_abs_rel_error",
            "cv_max_abs_rel_error_ge_1mib",
        )
        if x in fits.columns
    ]
    typer.echo(_human_frame(fits[cols]))
    if not candidates.empty:
        typer.echo(
            "realistic model, calibrated candidates (efficiency x bandwidth, scale x latency):"
        )
        typer.echo(_human_frame(candidates))
    typer.echo(f"wrote {output} (placement {placement})")


APP_SCRIPT = Path(__file__).resolve().parent.parent / "app.py"
"""The Streamlit entry point `costmodel app` serves (top level of the source tree)."""


# --- app --------------------------------------------------------------------------------------
@app.command("app")
def app_(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to serve on.")] = 8501,
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Start the Streamlit app (streamlit run app.py).

    Example: costmodel app --port 8501
    """
    script = APP_SCRIPT
    if not script.is_file():
        raise ValueError(f"app: {script} not found (the app ships with the source tree)")
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(port),
        "--server.headless",
        str(headless).lower(),
        "--browser.gatherUsageStats",
        "false",
    ]
    raise typer.Exit(subprocess.call(cmd))
