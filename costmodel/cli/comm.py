"""Subcommands about collectives: ``collective`` (textbook formulas), ``predict`` (a
cluster preset through :func:`costmodel.predict.predict_collective`) and ``sweep`` (grids of
collectives, memory, or training steps through :func:`costmodel.strategy.strategy_step`)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import units
from ..collectives import link_hardware_note
from ..nccl.names import is_choice_set
from ..tables import OPS, canonical_op
from ._common import (
    _MODEL_HELP,
    CLUSTER_OR_LINK,
    REPLACED_OUTPUT,
    JsonOpt,
    _human_frame,
    _not_an_input,
    _one_line,
    _print_json,
    _records,
    _sizes,
    bare_seconds_warning,
    cli_words,
    option_given,
    preset_ranks,
    preset_ranks_example,
    relay_bare_number_warnings,
    warn_on_success,
)


def _with_error_band(df: Any) -> Any:
    """Replace ``error_band_pct`` by an ``expected_error`` column of "±X%" strings ("± ?" where
    the regime has no measurement; costmodel.uncertainty; "-" on a row with no answer, an
    algorithm its cluster cannot run, as its time), and ``time_lo_s``/``time_hi_s`` by one
    ``band`` column, "66.2 ms-129 ms" (asymmetric; "-" where unknown), as `step` shows.
    The CLI writes "±" (its text is UTF-8, as the app's and the docs'), never an ASCII "+-"."""
    if "error_band_pct" not in df.columns:
        return df
    out = df.copy()
    answered = _answered(out)
    out.insert(
        list(out.columns).index("error_band_pct"),
        "expected_error",
        [
            (f"±{v:.0f}%" if v == v else "± ?") if ok else "-"
            for v, ok in zip(out["error_band_pct"], answered, strict=True)
        ],
    )
    out = out.drop(columns=["error_band_pct"])
    if {"time_lo_s", "time_hi_s"} <= set(out.columns):
        out.insert(
            list(out.columns).index("time_lo_s"),
            "band",
            [
                f"{units.format_duration(lo)}-{units.format_duration(hi)}" if lo == lo else "-"
                for lo, hi in zip(out["time_lo_s"], out["time_hi_s"], strict=True)
            ],
        )
        out = out.drop(columns=["time_lo_s", "time_hi_s"])
    return out


# The API's column names -> the names every JSON answer and sweep row of the CLI uses (the
# sweep's: `collective --json`, `sweep`), so that one quantity has one key across commands.
_JSON_KEYS = {
    "message_bytes": ("size_bytes", 1.0),
    "algbw_bytes_per_s": ("algbw_GBps", 1e-9),
    "busbw_bytes_per_s": ("busbw_GBps", 1e-9),
    "algorithm": ("algorithm_used", None),
    "protocol": ("protocol_used", None),
}


def _json_vocabulary(df: Any) -> Any:
    """``predict``'s frame (``Prediction.to_frame`` or ``compare_models``) under the CLI's JSON
    keys (:data:`_JSON_KEYS`; a model's bracketed column, ``busbw_bytes_per_s[nccl]``, too)."""
    out = df.copy()
    renames = {}
    for col in out.columns:
        name, bracket = str(col), ""
        if name.endswith("]") and "[" in name:
            name, bracket = name[: name.index("[")], name[name.index("[") :]
        if name in _JSON_KEYS:
            new, scale = _JSON_KEYS[name]
            if scale is not None and scale != 1.0:
                out[col] = out[col] * scale
            renames[col] = new + bracket
            if name == "message_bytes":  # a size the user gave: whole bytes, as the sweep's
                out[col] = units.whole_bytes(out[col].to_numpy())
    return out.rename(columns=renames)


def _answered(df: Any) -> Any:
    """Per row, whether it has an answer (a time): not a row its cluster cannot run, kept with
    its reason in ``error`` (`collective all --algorithm all`). A boolean Series."""
    import pandas as pd

    if "time_s" not in df.columns:
        return pd.Series(True, index=df.index)
    return df["time_s"].notna()


def _band_note(df: Any) -> str:
    """One line: what the ± means, whether a regime has no measurement, what is left out; and a
    ``band:`` line where a shown band is one-sided (:func:`_one_sided`)."""
    from ..uncertainty import LEAVES_OUT

    if "error_band_pct" not in df.columns:
        return ""
    text = (
        "expected_error: 80% of measured rows of this regime fell within it (grouped CV, each"
        " source weighted once)."
    )
    if "regime" in df.columns:  # how many runs and sources each shown band rests on
        counts = _sources(df)
        if counts:
            text += " Sources: " + ", ".join(counts) + "."
    unknown_band = df["error_band_pct"].isna() & _answered(df)
    if unknown_band.any():
        # the rows' own reasons where the sweep gives them (a calibration answers, ...)
        unknown = df[unknown_band]
        notes = (
            [str(n) for n in dict.fromkeys(unknown["band_note"]) if str(n)]
            if "band_note" in unknown.columns
            else []
        )
        text += " '± ?': " + (
            "; ".join(notes) + "."
            if notes
            else "no bundled run measured this regime, fabric or (across nodes) op: the "
            "error is unknown."
        )
    text += " " + LEAVES_OUT
    ways = _one_sided(df)
    far = _extrapolated(df)
    borrowed = _borrowed(df)
    return (
        text
        + (f"\nband: {ways}" if ways else "")
        + (f"\nband: {far}" if far else "")
        + (f"\nband: {borrowed}" if borrowed else "")
    )


def _borrowed(df: Any) -> str:
    """:data:`costmodel.uncertainty.BORROWED_BAND_NOTE` where a shown row is a broadcast or
    reduce across nodes with a band (the API's ``ErrorBand.note`` says it too), else ``""``."""
    from ..uncertainty import borrowed_band_note

    if not {"op", "nodes"} <= set(df.columns):
        return ""
    shown = df[df["error_band_pct"].notna()]
    for op, nodes in zip(shown["op"], shown["nodes"], strict=True):
        note = borrowed_band_note(str(op), int(nodes))
        if note:
            return note
    return ""


def _sources(df: Any) -> list[str]:
    """Per shown band (regime): how many runs and sources it rests on, per size class shown
    (:func:`costmodel.uncertainty.band_sources`: the counts the API's ``ErrorBand.n_runs`` /
    ``sources`` and the app's caption give for one size), after the regime's name."""
    from ..fitted_corrections import FITTED
    from ..uncertainty import band_sources

    size = next((c for c in ("message_bytes", "size_bytes") if c in df.columns), None)
    model = str(df["model"].iloc[0]) if "model" in df.columns and len(df) else "nccl"
    bands = FITTED.bands.get(model, {})
    out = []
    for r in dict.fromkeys(df["regime"]):
        if r not in bands:
            continue
        sizes = None if size is None else df.loc[df["regime"] == r, size]
        said = band_sources(bands[r], sizes)
        if said:
            out.append(f"{r} {said}")
    return out


def _extrapolated(df: Any) -> str:
    """For each shown band (regime) whose rows go beyond the largest measured run of that regime
    (more nodes or more GPUs), :func:`costmodel.uncertainty.extrapolation_note` of its widest
    such cluster, by node count and then GPUs (the ``band:`` line under the table, as the API's
    ``ErrorBand.extrapolated``), after how many of the clusters shown are beyond it where
    several are ("3 of the clusters shown are beyond it; the widest: ..."): the count and the
    widest, not every cluster. ``""`` where none does."""
    import numpy as np

    from ..fitted_corrections import FITTED
    from ..uncertainty import extrapolation_note

    size = next((c for c in ("message_bytes", "size_bytes") if c in df.columns), None)
    need = {"regime", "model", "nodes"}
    if not need <= set(df.columns) or size is None or not len(df):
        return ""
    bands = FITTED.bands.get(str(df["model"].iloc[0]), {})
    notes = []
    for r in dict.fromkeys(df["regime"]):
        shown = (df["regime"] == r).to_numpy() & df["error_band_pct"].notna().to_numpy()
        if r not in bands or not shown.any():
            continue
        nodes = np.asarray(df["nodes"], dtype=np.int64)[shown]
        # the GPUs of each row (its ranks); without the column, the node count alone
        ranks = df["ranks"] if "ranks" in df.columns else np.full(len(df), -1)
        gpus = np.asarray(ranks, dtype=np.int64)[shown]
        sizes = np.asarray(df[size], dtype=float)[shown]
        beyond = []
        for n, g in sorted(set(zip(nodes.tolist(), gpus.tolist(), strict=True)), reverse=True):
            here = (nodes == n) & (gpus == g)  # the widest cluster beyond the run first
            note = extrapolation_note(bands[r], n, sizes[here], gpus=g if g >= 0 else None)
            if note:
                beyond.append(note)
        if len(beyond) > 1:
            notes.append(
                f"{r}, {len(beyond)} of the clusters shown are beyond it; the widest: {beyond[0]}"
            )
        elif beyond:
            notes.append(f"{r}, {beyond[0]}")
    return "; ".join(notes)


def _one_sided(df: Any) -> str:
    """Which way the model misses, for each shown band (regime and size class) whose measured
    range lies on one side of the prediction (:func:`costmodel.uncertainty.one_sided_note`):
    there the band runs from the prediction to that range. ``""`` where none is."""
    import numpy as np

    from ..fitted_corrections import FITTED
    from ..uncertainty import ONE_MIB, one_sided_note

    size = next((c for c in ("message_bytes", "size_bytes") if c in df.columns), None)
    if "regime" not in df.columns or size is None or "model" not in df.columns or not len(df):
        return ""
    model = str(df["model"].iloc[0])
    bands = FITTED.bands.get(model, {})
    ways = []
    for r in dict.fromkeys(df["regime"]):
        shown = (df["regime"] == r).to_numpy() & df["error_band_pct"].notna().to_numpy()
        sizes = np.asarray(df[size], dtype=float)[shown]
        for sc, label, has in (
            ("ge1MiB", "from 1 MiB", bool((sizes >= ONE_MIB).any())),
            ("lt1MiB", "below 1 MiB", bool((sizes < ONE_MIB).any())),
        ):
            cell = bands.get(r, {}).get(sc)
            way = one_sided_note(model, float(cell["lo"]), float(cell["hi"])) if cell else ""
            if has and way:
                ways.append(f"{r} {label}, {way}")
    return "; ".join(ways)


# --- collective -------------------------------------------------------------------------------
def _algorithm_help(one_link: bool = True) -> str:
    """``--algorithm``'s help, from the one table (:func:`costmodel.models.algorithms`);
    ``one_link=False`` for ``predict``, which always prices a cluster preset."""
    from .. import models

    nccl = ", ".join(dict.fromkeys(a for op in OPS for a in models.algorithms("nccl", op)))
    return (
        "auto (the model's choice) or an algorithm the op has under the model (another is "
        "refused with the op's list; per op: README 'Algorithms per op and model'). "
        + ("Over one link and --model" if one_link else "Under --model")
        + " lesson/textbook: the alpha-beta rows (all_reduce: "
        + ", ".join(models.algorithms("lesson", "all_reduce"))
        + ("; textbook with --cluster also" if one_link else "; textbook also")
        + " hierarchical, hierarchical_pipelined); nccl, "
        f"nccl-table, calibrated: NCCL's names ({nccl}). Aliases, answered by the canonical "
        f"name: {models.alias_summary()}; any case, NCCL_ALGO spellings (NVLSTree)."
    )


ALGORITHM_HELP = _algorithm_help()
PREDICT_ALGORITHM_HELP = _algorithm_help(one_link=False)


def _refuse_empty(op: str, cluster: str | None, model: str, algorithm: str | None) -> None:
    """Refuse an empty --cluster, --model or --algorithm with the option's allowed list, as a
    name that is not one is refused: ``--algorithm ''`` was read as not given (auto), and
    ``--cluster ''`` / ``--model ''`` as an empty list of the sweep's values, which named no
    allowed value."""
    from .. import models, presets

    if cluster is not None and not cluster.strip():
        presets.cluster(cluster, field="cluster")  # unknown cluster preset ''; allowed: ...
    if not model.strip():
        models.check_model(model)  # '' is not a model; allowed: ...
    if algorithm is not None and not algorithm.strip():
        # the list of the model the command prices with: the cluster's, else the link's rows
        m, link = (model, False) if cluster is not None else ("textbook", True)
        if op == "all":
            models.check_algorithm_every_op(m, algorithm, link=link)
        else:
            models.check_algorithm(m, op, algorithm, link=link)


def _link_model(model: str) -> str:
    """``collective --model M`` over one link (``--ranks/--bandwidth``): the model's canonical
    name where it is one the link has, ``textbook`` or ``lesson`` (on one link both are the
    same alpha-beta formula, :func:`costmodel.collectives.collective_time`, as the sweep's
    raw-link rows take them); a model that needs a cluster preset (nccl, calibrated,
    nccl-table) is refused naming it and the ones that do; an unknown name by its own refusal
    (:func:`costmodel.models.check_model`)."""
    from .. import models
    from ..sweep.grid import _LINK_MODELS

    chosen = models.check_model(units.choice_name(model))
    if chosen not in _LINK_MODELS:
        need = [m for m in (*models.MODELS, *models.REFERENCE_MODELS) if m not in _LINK_MODELS]
        raise ValueError(
            f"--model: {chosen} is a model of the collective on a cluster preset (--cluster "
            f"NAME), as are {', '.join(m for m in need if m != chosen)}; over one link "
            "(--ranks/--bandwidth) the model is the textbook alpha-beta; allowed there: "
            "textbook, lesson (the same formula on one link)"
        )
    return chosen


def _cluster_ranks(
    cluster: str, ranks: str, nodes: int | None, gpus_per_node: int | None
) -> tuple[int, int | None]:
    """``collective --cluster NAME --ranks N``: one rank count (``--ranks`` over one link may
    list several), read as every command reads a preset's ranks
    (:func:`costmodel.cli._common.preset_ranks`, the sweep's ``ranks`` axis)."""
    from .._limits import LINK_RANKS
    from ..sweep import parse_values

    LINK_RANKS.check("--ranks", ranks)
    counts = parse_values("ranks", ranks)
    if len(counts) != 1:
        raise ValueError(
            f"--ranks: with --cluster one rank count (as --nodes is one), got {ranks!r}"
        )
    return preset_ranks(cluster, int(counts[0]), nodes, gpus_per_node)


def collective(
    op: Annotated[
        str,
        typer.Argument(
            metavar="OP",
            help="all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, or 'all'.",
        ),
    ],
    size: Annotated[
        list[str],
        typer.Option(
            "--size",
            "-s",
            metavar="<str>",  # a size, a range or a list, repeatable: not Python's list[str]
            help="Per-rank buffer, as nccl-tests' size column: 14GB, 8B:1GB "
            "(doubling), 1MB,2MB. Repeatable.",
        ),
    ],
    link_ranks: Annotated[
        str | None,
        typer.Option(
            "--ranks",
            help="Number of ranks N, 1..1,000,000,000 (with --bandwidth; 1 exchanges nothing). "
            "With --cluster, instead of --nodes: N <= the node's GPUs is one node's slice, a "
            "multiple of them whole nodes, as the sweep's ranks axis reads it.",
        ),
    ] = None,
    bandwidth: Annotated[
        str | None, typer.Option(help="Per-direction bandwidth per rank: 50GB/s, 400Gb/s.")
    ] = None,
    latency: Annotated[
        str | None,
        typer.Option(help="Latency per step (alpha), with --bandwidth: 5us. Default 0s."),
    ] = None,
    gamma: Annotated[
        float | None,
        typer.Option(
            help="Reduction cost per byte [s/B], 0..1e-6 (a reduction at 1 MB/s or faster), "
            "with --bandwidth. Default 0."
        ),
    ] = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--algorithm",
            "-a",
            help=ALGORITHM_HELP + " 'all': every algorithm of the op (with --cluster and one "
            "op: the model's choice marked *, and why the others cannot run). Default: ring "
            "over one link, auto with --cluster.",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="A cluster preset (see 'costmodel presets list') instead of --bandwidth."
        ),
    ] = None,
    # None: not given (one node), so that --ranks with a --nodes that disagrees is refused
    nodes: Annotated[
        int | None, typer.Option(min=1, help="Nodes of the preset. Default 1.")
    ] = None,
    gpus_per_node: Annotated[int | None, typer.Option(min=1, help="GPUs per node.")] = None,
    # None: not given (nccl on a cluster), so that `--model nccl` typed over one link is refused
    # as any other value is, not answered by the textbook formulas without a word
    model: Annotated[
        str | None,
        typer.Option(
            help="With --cluster: " + _MODEL_HELP + " Over one link (--ranks/--bandwidth): "
            "textbook (the default there) or lesson, the same alpha-beta formula."
        ),
    ] = None,
    gpus_per_process: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --cluster: GPUs one process drives, as nccl-tests' -g N (1..the GPUs "
            "per node). Default 1: one process per GPU (torchrun, mpirun -np per GPU).",
        ),
    ] = None,
    nvls: Annotated[
        bool | None,
        typer.Option(
            "--nvls/--no-nvls",
            help="With --cluster: NVLink SHARP (NVLS) allowed or not, as NCCL_NVLS_ENABLE=1/0 "
            "(--nvls where the GPUs have none changes nothing). Default: the preset's.",
        ),
    ] = None,
    collnet: Annotated[
        bool,
        typer.Option(
            "--collnet/--no-collnet",
            help="With --cluster: IB SHARP (CollNet) allowed, as NCCL_COLLNET_ENABLE=1. "
            "Default: off, as NCCL's.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Time, algbw and busbw of one collective over a link or a cluster preset.

    How an nccl-tests run was launched (-g, NCCL_NVLS_ENABLE=0, NCCL_COLLNET_ENABLE=1) is
    given by --gpus-per-process, --no-nvls and --collnet: the prediction is then the one
    'validate compare' makes for that run's rows.

    Examples (the lesson's 7B gradient all-reduce, about 0.551 s; then which algorithm wins on
    8 DGX H100 at that size):

    \b
        costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s

    \b
        costmodel collective all_reduce --size 14GB --cluster dgx-h100 --nodes 8 --algorithm all
    """
    from ..sweep import sweep

    sizes = _sizes(size)
    binary = units.typed_binary(*size)  # 14GiB typed: the table says 14 GiB, not 15 GB
    if op != "all":
        op = canonical_op(op)  # "all-reduce", "AllReduce" as typed
    # an option of the other form is refused rather than silently ignored
    if cluster is not None:
        for name, value in (("--latency", latency), ("--gamma", gamma)):
            if value is not None:
                raise ValueError(
                    f"{name}: an option of the collective over one link (--ranks/--bandwidth); "
                    "with --cluster the preset's links and the --model give it"
                )
    else:
        cluster_only = {"--nodes": nodes is not None,
                        "--gpus-per-node": gpus_per_node is not None,
                        "--gpus-per-process": gpus_per_process
                        is not None,
                        "--nvls" if nvls else "--no-nvls": nvls is not None,
                        "--collnet": collnet}  # fmt: skip
        for name, on in cluster_only.items():
            if on:
                raise ValueError(
                    f"{name}: an option of the collective on a cluster preset (--cluster NAME); "
                    "over one link (--ranks/--bandwidth) the model is the textbook alpha-beta"
                )
    # over one link: --model textbook or lesson, typed (None: the link's textbook, unnamed)
    link_model = _link_model(model) if cluster is None and model is not None else None
    if cluster is not None:
        if bandwidth is not None:
            raise ValueError(CLUSTER_OR_LINK)
        if link_ranks is not None:  # the preset's nodes these ranks take, as the sweep's
            nodes, gpus_per_node = _cluster_ranks(cluster, link_ranks, nodes, gpus_per_node)
    nodes = 1 if nodes is None else nodes
    model = "nccl" if model is None else model
    _refuse_empty(op, cluster, model, algorithm)
    # how the run is launched, where given: predict_collective's keywords, the sweep's axes
    launch = _launch_options(gpus_per_process, nvls, collnet) if cluster is not None else {}
    if cluster is not None and algorithm == "all" and op != "all":
        _collective_all(
            op, sizes, cluster, nodes, gpus_per_node, model, as_json, launch, binary=binary
        )
        return
    axes: dict[str, Any] = {"op": op, "size": sizes}
    if cluster is not None:
        # one value on a cluster: a name, "all", or a set as NCCL_ALGO allows one ("ring,tree":
        # the fastest of them), kept whole as one item (the sweep's axis splits a string at
        # commas into values crossed)
        chosen: Any = [algorithm] if is_choice_set(algorithm) else algorithm or "auto"
        axes.update(preset=cluster, nodes=nodes, model=model, algorithm=chosen)
        if gpus_per_node is not None:
            axes["gpus_per_node"] = gpus_per_node
        axes.update(launch)  # gpus_per_process, nvls, collnet_enabled: the rows' columns
    else:
        if link_ranks is None or bandwidth is None:
            if link_ranks is not None:  # --ranks alone: a link's or a preset's GPUs, as step says
                from .._limits import LINK_RANKS
                from ..sweep import parse_values

                LINK_RANKS.check("--ranks", link_ranks)
                counts = parse_values("ranks", link_ranks)  # a link takes a list: 8,16
                preset = (
                    preset_ranks_example(int(counts[0]))
                    if len(counts) == 1
                    else "with one --ranks N, whole nodes of it or one node's slice"
                )
                raise ValueError(
                    f"--bandwidth: the one-link collective needs both --ranks and --bandwidth "
                    f"(e.g. --ranks {link_ranks} --bandwidth 50GB/s); or give --cluster NAME "
                    f"({preset})"
                )
            if bandwidth is not None:
                raise ValueError(
                    "--ranks: the one-link collective needs both --ranks and --bandwidth; or "
                    "give --cluster NAME instead of --bandwidth"
                )
            raise ValueError("collective: needs --ranks and --bandwidth, or --cluster NAME")
        from .._limits import LINK_RANKS

        # a link's range (1..1e9), checked here: the parameter is not named ``ranks`` so that the
        # generic 1.. limit of every command's --ranks (memory, batch) does not answer first
        LINK_RANKS.check("--ranks", link_ranks)
        if latency is not None:
            bare_seconds_warning("--latency", latency, "us", kind="latency")
        if link_model is not None:  # the row's model column says the one typed, as the sweep's
            axes["model"] = link_model
        axes.update(
            ranks=link_ranks,
            bandwidth=bandwidth,
            latency=units.parse_duration(latency or "0s", name="--latency"),  # warned above
            gamma=gamma or 0.0,
            algorithm=algorithm or "ring",
        )
    df = sweep(**axes)
    fastest = _fastest_over_link(df) if cluster is None and algorithm == "all" else []
    notes = [ONE_RANK_NOTE] if (df["ranks"] == 1).any() else []
    if cluster is None:  # an nvls row over a plain link: what it needs, once
        notes += _link_hardware_notes(df)
    else:  # NCCL's table capped at the NICs, its broadcast/reduce latency (Prediction.model_note)
        from ..predict import nccl_table_notes

        notes += nccl_table_notes(df)
    memory_note = ""
    if cluster is not None:  # a raw link names no GPU, so no memory to hold the buffer in
        from ..predict import buffer_memory_note

        memory_note = buffer_memory_note(df["size_bytes"], cluster, nodes, gpus_per_node)
    # over one link no band is shown, and that is said (the fastest line says it too)
    link_band = LINK_NO_BAND if cluster is None and (df["ranks"] > 1).any() else ""
    if as_json:
        _print_json(
            {
                "results": _records(df),
                **({"fastest": fastest} if fastest else {}),
                **({"notes": notes} if notes else {}),
                **({"memory_note": memory_note} if memory_note else {}),
                **({"band_note": link_band} if link_band else {}),
            }
        )
        return
    keep = [
        c
        for c in (
            "preset",
            "model",  # which model answered: nccl on a cluster, textbook over a link
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
            "time_lo_s",
            "time_hi_s",
            "regime",
        )
        if c in df.columns
    ]
    if launch:
        typer.echo(_launch_line(launch))
    typer.echo(_human_frame(_with_error_band(df[keep]), binary_sizes=binary))
    # the settings that vary between the lines name each line ("fastest 4 ranks at 14 GB")
    varying = [k for k in _LINK_LABEL if len({f.get(k) for f in fastest}) > 1]
    for f in fastest:
        what = "".join(f"{_LINK_LABEL[k](f[k])} " for k in varying)
        said = (units.format_bytes_binary if binary else units.format_bytes)(f["size_bytes"])
        typer.echo(f"fastest {what}at {said}: {f['text']}")
    # a row its cluster cannot run (collective all --algorithm all: nvls across nodes, ...)
    if "error" in df.columns:
        refused = df[df["error"].astype(str) != ""]
        reasons = _unavailable_reasons(refused, cluster, nodes, gpus_per_node, model, launch)
        for r in refused.drop_duplicates(["op", "algorithm", "error"]).itertuples():
            why = reasons.get((str(r.op), str(r.algorithm))) or cli_words(str(r.error))
            typer.echo(f"not available: {r.op} {r.algorithm}: {why}")
    for n in notes:
        typer.echo(f"note: {n}")
    if link_band:
        typer.echo(f"note: {link_band}; --cluster NAME for a prediction with its band")
    note = _band_note(df)
    if note:
        typer.echo(note)
    if memory_note:
        typer.echo(f"note: {memory_note}")


#: Why a collective over one link (--ranks/--bandwidth) shows no expected-error band: a link
#: given by its numbers has no measured runs to take one from, as a cluster preset's regime has
#: (the step over one link says the same, ``ddp.NO_BAND``).
LINK_NO_BAND = (
    "no error band: a link given by --ranks/--bandwidth has no measured runs to take one from"
)

#: One rank has no one to exchange with: every surface answers 0 s (algbw and busbw 0), the
#: formulas, ``cm.allreduce_time(M, 1, B)``, a one-GPU cluster and the CLI alike, and says so.
ONE_RANK_NOTE = (
    "1 rank exchanges nothing: 0 s, algbw and busbw 0 (as cm.allreduce_time(M, 1, B) and a "
    "one-GPU cluster answer)"
)


def _link_hardware_notes(df: Any) -> list[str]:
    """The notes of the one-link rows that need more than a link
    (:func:`costmodel.collectives.link_hardware_note`: nvls), once each."""
    rows = df[df["ranks"] > 1] if "ranks" in df.columns else df
    names = dict.fromkeys(str(a) for a in rows.get("algorithm", []))
    return [n for n in (link_hardware_note(a) for a in names) if n]


def _fastest_over_link(df: Any) -> list[dict[str, Any]]:
    """Per op and size of a one-link ``--algorithm all`` table: which algorithm wins, the
    runner-up and its gap (the cluster form's "fastest at" line; the textbook alpha-beta
    formulas over one link have no error band, so the gap is the formulas' alone)."""
    out = []
    # one question per op, link setting and size: --ranks 2,4 compares 2 ranks with 2 ranks
    keys = [k for k in ("op", "ranks", "bandwidth_GBps", "latency_s", "gamma_s_per_byte")
            if k in df.columns]  # fmt: skip
    # a size given twice is one question: its rows once each ("nvls and nvls tie" otherwise)
    df = df[df["ranks"] > 1].drop_duplicates([*keys, "size_bytes", "algorithm"])
    for key, g in df.groupby([*keys, "size_bytes"], sort=False):
        setting = dict(zip([*keys, "size_bytes"], key, strict=True))
        g = g.sort_values("time_s", kind="stable")
        t = g["time_s"].to_numpy(dtype=float)
        names = g["algorithm"].astype(str).tolist()
        tied = [n for n, x in zip(names, t, strict=True) if x <= t[0] * (1 + 1e-9)]
        rest = [(n, x) for n, x in zip(names, t, strict=True) if x > t[0] * (1 + 1e-9)]
        if len(tied) > 1:
            text = f"{' and '.join(tied)} tie"
        else:
            text = tied[0]
        if rest and t[0] > 0:
            n2, t2 = rest[0]
            text += f" ({n2} is {t2 / t[0] - 1:.0%} slower; the textbook formulas, no error band)"
        elif not rest and len(tied) == 1:
            text += " (the only candidate)"
        # a winner that needs more than a link (nvls: a switch that reduces) says so
        # (its note, once below the table; in the JSON with the line)
        needs = [n for n in (link_hardware_note(a) for a in tied) if n]
        if needs:
            text += "; " + "; ".join(n.split(" (")[0] for n in needs) + " (see the note)"
        out.append(
            {
                **{k: _plain(v) for k, v in setting.items()},
                "fastest": tied,
                "text": text,
                **({"note": "; ".join(needs)} if needs else {}),
            }
        )
    return out


#: How the "fastest" line names a link setting that varies in the table.
_LINK_LABEL: dict[str, Any] = {
    "op": str,
    "ranks": lambda n: f"{int(n)} ranks",
    "bandwidth_GBps": lambda b: units.format_rate(float(b) * 1e9),
    "latency_s": lambda a: f"latency {units.format_duration(float(a))}",
    "gamma_s_per_byte": lambda g: f"gamma {float(g):g} s/B",
}


def _plain(v: Any) -> Any:
    """A numpy scalar of the grouped table as a plain number (for the JSON)."""
    return v.item() if hasattr(v, "item") else v


def _launch_options(
    gpus_per_process: int | None, nvls: bool | None, collnet: bool
) -> dict[str, Any]:
    """``predict_collective``'s launch keywords the options give (``gpus_per_process``,
    ``nvls``, ``collnet_enabled``: the collective sweep's launch axes), only those that differ
    from its defaults; ``{}`` for a run launched as the defaults say. The library checks them
    (a process drives at most the GPUs of its node:
    :func:`costmodel.sweep.evaluate.check_gpus_per_process`)."""
    launch: dict[str, Any] = {}
    if gpus_per_process is not None and gpus_per_process != 1:
        launch["gpus_per_process"] = gpus_per_process
    if nvls is not None:
        launch["nvls"] = nvls
    if collnet:
        launch["collnet_enabled"] = True
    return launch


def _launch_line(launch: dict[str, Any]) -> str:
    """The launch a table was predicted for, in the options' words (one line over it)."""
    said = []
    if "gpus_per_process" in launch:
        said.append(f"{launch['gpus_per_process']} GPUs per process (nccl-tests -g)")
    if "nvls" in launch:
        said.append("NVLS on" if launch["nvls"] else "NVLS off (NCCL_NVLS_ENABLE=0)")
    if launch.get("collnet_enabled"):
        said.append("CollNet on (NCCL_COLLNET_ENABLE=1)")
    return "launched with " + ", ".join(said)


def _unavailable_reasons(
    refused: Any,
    cluster: str | None,
    nodes: int,
    gpus_per_node: int | None,
    model: str,
    launch: dict[str, Any],
) -> dict[tuple[str, str], str]:
    """``(op, algorithm) -> why`` for the rows of ``collective all --cluster --algorithm all``
    that cannot run: the reason ``collective OP --algorithm all`` gives each under "not
    available" (:func:`costmodel.predict_all_algorithms`, one road), not the row's refusal of
    a pinned algorithm ("algorithm: 'nvls' with `protocol` 'auto' cannot run ...", printed
    as the library wrote it, for a protocol the command has no option for). Empty over one
    link."""
    if cluster is None or refused.empty:
        return {}
    from ..predict import predict_all_algorithms

    out: dict[tuple[str, str], str] = {}
    for op in dict.fromkeys(refused["op"].astype(str)):
        sizes = sorted({int(b) for b in refused.loc[refused["op"].astype(str) == op, "size_bytes"]})
        r = predict_all_algorithms(op, sizes, cluster, nodes, gpus_per_node, model=model, **launch)
        out.update({(op, a): cli_words(why) for a, why in r.unavailable})
    return out


def _collective_all(
    op: str,
    sizes: list[int],
    cluster: str,
    nodes: int,
    gpus_per_node: int | None,
    model: str,
    as_json: bool,
    launch: dict[str, Any] | None = None,
    binary: bool = False,
) -> None:
    """``collective --cluster NAME --algorithm all``: :func:`costmodel.predict_all_algorithms`
    (with the launch options given, ``launch``, as ``predict_collective``'s keywords); sizes
    said in binary prefixes where they were typed so (``binary``)."""
    from ..predict import buffer_memory_note, predict_all_algorithms

    if launch and "gpus_per_process" in launch:  # the sweep's rule for its rows
        from .. import presets
        from ..sweep.evaluate import check_gpus_per_process

        gpn = gpus_per_node or presets.cluster(cluster, field="cluster").gpus_per_node
        check_gpus_per_process(launch["gpus_per_process"], gpn, cluster)
    r = predict_all_algorithms(
        op, sizes, cluster, nodes, gpus_per_node, model=model, **(launch or {})
    )
    memory_note = buffer_memory_note(sizes, cluster, nodes, gpus_per_node)
    # beyond the largest measured run of the regime: the expected error the "fastest at" lines
    # judge by is extrapolated, said as `collective OP` and `collective all` say it (band:)
    band = r.choice.error_band
    far = f"{band.regime}, {band.extrapolated}" if band is not None and band.extrapolated else ""
    if as_json:
        _print_json(
            {
                **r.to_dict(),
                "band_extrapolated": bool(far),
                "band_extrapolation": far,
                **({"memory_note": memory_note} if memory_note else {}),
            }
        )
        return
    size_text = units.format_bytes_binary if binary else units.format_bytes
    f = r.frame.sort_values(["message_bytes", "time_s"], kind="stable")
    shown = f.assign(
        mark=["*" if c else "" for c in f["chosen"]],
        size_bytes=f["message_bytes"],
        busbw_bytes_per_s=f["busbw_bytes_per_s"],
    )[["size_bytes", "mark", "algorithm", "protocol", "time_s", "busbw_bytes_per_s"]]
    typer.echo(
        f"{op} on {r.cluster}, {units.format_counted(r.nodes, 'node')}, {units.format_counted(r.ranks, 'GPU')}, "
        f"model {r.model} "
        "(* = the model's choice)"
    )
    if len(shown):
        typer.echo(_human_frame(shown, binary_sizes=binary))
    else:  # one rank: every algorithm is unavailable, and pandas would print "Empty DataFrame"
        typer.echo("no algorithm runs here (each is listed below with the reason)")
    for m, v in zip(r.sizes, r.verdicts, strict=True):
        typer.echo(f"fastest at {size_text(m)}: {v.text()}")
    if far:
        typer.echo(f"band: {far}")
    for a, why in r.unavailable:  # the library's names in the command's words (--nodes)
        typer.echo(f"not available: {a}: {cli_words(why)}")
    for x in r.crossovers.itertuples():
        typer.echo(
            f"crossover: {x.faster_below} -> {x.faster_above} between "
            f"{size_text(x.previous_bytes)} and {size_text(x.message_bytes)}"
        )
    if memory_note:
        typer.echo(f"note: {memory_note}")


# --- predict ----------------------------------------------------------------------------------
def predict(
    cluster: Annotated[str, typer.Option(help="Cluster preset, e.g. dgx-h100.")],
    sizes: Annotated[
        list[str],
        typer.Option(
            "--sizes",
            "--size",
            "-s",
            metavar="<str>",  # a size, a range or a list, repeatable: not Python's list[str]
            help="8B:16GB (doubling, as nccl-tests -b -e -f 2), "
            "a list 1MB,1GB, or one size. Repeatable.",
        ),
    ],
    op: Annotated[
        str, typer.Option(help="Collective: all_reduce, all_gather, ..., or all (a row per op).")
    ] = "all_reduce",
    nodes: Annotated[int, typer.Option(min=1, help="Nodes of the preset.")] = 1,
    gpus_per_node: Annotated[
        int | None, typer.Option(min=1, help="Use a slice of each node (default: all GPUs).")
    ] = None,
    algorithm: Annotated[str, typer.Option(help=PREDICT_ALGORITHM_HELP)] = "auto",
    protocol: Annotated[str, typer.Option(help="auto, LL, LL128 or Simple.")] = "auto",
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "nccl",
    compare_models: Annotated[
        bool,
        typer.Option(
            "--compare-models",
            help="Every model that can answer (and the nccl-table baseline) side by side; "
            "not with --model, --algorithm or --protocol (each model's own choice).",
        ),
    ] = False,
    harness: Annotated[
        str,
        typer.Option(
            help="How the op is launched and timed: nccl-tests (one process per GPU), "
            "nccl-tests-g (one process drives the node's GPUs) or pytorch (a torch loop). "
            "It sets the launch floor of --model nccl and calibrated; lesson, textbook and "
            "nccl-table have none, so another harness is refused there (and with "
            "--compare-models)."
        ),
    ] = "nccl-tests",
    as_json: JsonOpt = False,
) -> None:
    """Predicted time, algbw and busbw of a collective on a cluster, per size (--op all: a row
    per op and size).

    Example:

    \b
        costmodel predict --op all_reduce --cluster dgx-h100 --nodes 2 --sizes 8B:16GB
    """
    import numpy as np
    import pandas as pd

    from .. import predict as pr

    sz = _sizes(sizes, "--sizes")
    binary = units.typed_binary(*sizes)  # 1GiB typed: the table says 1 GiB, not 1.07 GB
    every_op = op.strip().lower() == "all"  # a row per op and size, as collective's op "all"
    if every_op:
        from ..nccl import OPS

        ops = list(OPS)
        if algorithm.strip().lower() != "all":
            # one the table gives every op (auto; ring for lesson/textbook), as collective all
            from .. import models

            models.check_algorithm_every_op(models.check_model(units.choice_name(model)), algorithm)
    else:
        op = canonical_op(op)  # "all-reduce", "AllReduce" as typed
        ops = [op]

    m = np.asarray(sz, dtype=float)
    if algorithm.strip().lower() == "all":  # the library's refusal names a Python function
        raise ValueError(
            "--algorithm: 'all' gives several rows per size, which predict does not print; "
            f"every algorithm: costmodel collective {op} --cluster {cluster} --nodes {nodes} "
            "--size SIZE --algorithm all; allowed here: auto or one algorithm"
        )
    if (
        not compare_models
        and units.choice_name(model) in ("lesson", "textbook")
        and units.choice_name(protocol) != "auto"
    ):
        # the alpha-beta formulas have no protocol: LL answered what auto answers, "protocol
        # none" in the table the only trace that the option did nothing
        from ..nccl import normalize_protocol

        normalize_protocol(units.choice_name(protocol))  # a name that is none: refused as such
        raise ValueError(
            f"--protocol: the {units.choice_name(model)} model's alpha-beta formulas have no "
            "protocol (LL, LL128 and Simple are NCCL's: --model nccl, nccl-table or "
            "calibrated); leave it at auto"
        )
    if harness != "nccl-tests" and harness in pr.HARNESSES:
        # the harness is the nccl and calibrated models' launch floor (predict_collective adds
        # -g's per-GPU term or PyTorch's per-call extra there); the alpha-beta formulas and
        # NCCL's tuning table have none, so --harness pytorch answered the same times (an
        # unknown harness or model is the library's to refuse, with the allowed list)
        from .. import models

        chosen = models.check_model(units.choice_name(model))
        if compare_models:
            raise ValueError(
                "--harness: --compare-models compares every model at nccl-tests' launch (lesson, "
                "textbook and nccl-table have no launch floor for a harness to set); leave it "
                "at nccl-tests, or give one --model nccl or calibrated"
            )
        if chosen not in (models.NCCL, models.CALIBRATED):
            raise ValueError(
                f"--harness: the {chosen} model has no launch floor for a harness to set "
                f"({harness!r} would leave every time as nccl-tests'); it takes effect with "
                "--model nccl or calibrated; leave it at nccl-tests"
            )
    if compare_models:
        if algorithm != "auto" or protocol != "auto":
            raise ValueError(
                "--compare-models compares each model's own choice; leave "
                "--algorithm and --protocol at auto"
            )
        from .. import models

        chosen = models.check_model(units.choice_name(model))  # an unknown one: its own refusal
        if chosen != models.NCCL:  # the default: read past, a model named was not
            raise ValueError(
                f"--model: --compare-models answers with every model side by side, so --model "
                f"{chosen} would change nothing; leave --model out, or drop --compare-models "
                f"for the {chosen} model alone"
            )
        frames = [
            pr.compare_models(o, m, cluster, nodes=nodes, gpus_per_node=gpus_per_node) for o in ops
        ]
        if every_op:  # which op a row is (one op's table has no op column)
            frames = [f.assign(op=o)[["op", *f.columns]] for f, o in zip(frames, ops, strict=True)]
        notes: list[str | None] = [None] * len(ops)
    else:
        preds = [
            pr.predict_collective(
                o,
                m,
                cluster,
                nodes=nodes,
                gpus_per_node=gpus_per_node,
                algorithm=algorithm,
                protocol=protocol,
                model=model,
                harness=harness,
            )
            for o in ops
        ]
        frames = [pred.to_frame() for pred in preds]
        from ..sweep.evaluate import _band_note as sweep_band_note

        # why a band is unknown in the words collective and the sweep say it (a calibrated
        # fit's: "a calibration answers: ..."), for the same question on the same cluster
        notes = [None if p.error_band is None else sweep_band_note(p.error_band) for p in preds]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    # why a row's band is unknown (its op's note), "" where the band is known
    band_notes = None
    if "error_band_pct" in df and any(n is not None for n in notes):
        per_row = [n for f, n in zip(frames, notes, strict=True) for _ in range(len(f))]
        band_notes = [
            "" if v == v or n is None else n
            for v, n in zip(df["error_band_pct"], per_row, strict=True)
        ]
    one_rank = nodes == 1 and (
        gpus_per_node == 1 or ("ranks" in df.columns and bool((df["ranks"] == 1).any()))
    )
    notes_out = [ONE_RANK_NOTE] if one_rank else []  # as collective says it
    memory_note = pr.buffer_memory_note(m, cluster, nodes, gpus_per_node)
    if as_json:
        rows = _json_vocabulary(df)
        # collective --json's and the sweep's keys on every row: the preset, and why a band is
        # unknown (its null said nothing); the text table says "± ?" and its note instead
        rows.insert(0, "preset", cluster)
        if band_notes is not None:
            rows["band_note"] = band_notes
        _print_json(
            {
                "op": op,
                "preset": cluster,
                "nodes": nodes,
                "models": [c[len("time_s[") : -1] for c in df.columns if c.startswith("time_s[")]
                if compare_models
                else [model],
                "results": _records(rows),
                **({"notes": notes_out} if notes_out else {}),
                **({"memory_note": memory_note} if memory_note else {}),
            }
        )
        return
    what = "every op" if every_op else op
    typer.echo(f"{what} on {cluster} x {units.format_counted(nodes, 'node')}")
    # the size column under collective's and the sweep's name (the API's frame says
    # message_bytes, which the table said "message"); --json already says size_bytes
    shown = df.rename(columns={"message_bytes": "size_bytes"})
    typer.echo(_human_frame(_with_error_band(shown), binary_sizes=binary))
    for n in notes_out:
        typer.echo(f"note: {n}")
    note = _band_note(df if band_notes is None else df.assign(band_note=band_notes))
    if note:
        typer.echo(note)
    if memory_note:
        typer.echo(f"note: {memory_note}")


# --- sweep ------------------------------------------------------------------------------------
_GRID_FILE = "GRID_FILE"
"""sweep's positional argument, as its usage line names it (its metavar)."""
_GRID_FILE_WORDS = "grid file "
"""How :func:`costmodel.sweep.load_grid` names the file it refuses, in front."""


def sweep(
    grid_file: Annotated[
        Path | None, typer.Argument(metavar=_GRID_FILE, help="TOML grid spec ([grid] table).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="<str>",  # one name=values, repeatable: not Python's list[str]
            help="name=v1,v2 or name=a..b x f; repeatable (e.g. --set ranks=8..4096x2 "
            "--set 'size=8B..16GB x2'). With a grid file, an axis set here replaces the "
            "file's axis of that name.",
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="collective (default), memory, or step (a training step per row: the "
            "function and defaults of `costmodel step --cluster`, whose options are its axes by "
            "their API names, e.g. global_tokens; the one-link step's --ranks, --bandwidth, "
            "--latency, --gradient-bytes and --peak-flops are not: a preset's links and GPU and "
            "grad_dtype give them)."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output file: .csv (default format) or .parquet. Without it, CSV goes to "
            f"stdout. {REPLACED_OUTPUT}",
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
    tokens: Annotated[
        str | None,
        typer.Option(
            help="With --kind step: tokens to train (2T): adds each row's days, GPU-hours and "
            "(with a price for its GPU) dollars, as `costmodel train --tokens`."
        ),
    ] = None,
    price: Annotated[
        str | None,
        typer.Option(
            help="With --tokens: one price preset per GPU (a comma list), e.g. "
            "aws-p5-on-demand,lambda-b200-on-demand; each row takes the one for its GPU "
            "(`costmodel archs` lists them with their GPU and date)."
        ),
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None,
        typer.Option(help="With --tokens: price of one GPU-hour [USD] for every row."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate presets x a grid of sizes, GPU counts, algorithms (model sizes, or training
    steps) to a table.

    Example:

    \b
        costmodel sweep --set preset=dgx-h100,dgx-a100 --set nodes=1..16x2 --set 'size=8B..16GB x2' -o out.parquet

    Training steps (strategies x node counts x micro-batches; each row is `costmodel step`'s
    answer to the same question; strategy=all is every layout `step --strategy all` ranks on
    each row's cluster: fsdp with and without resharding, hsdp at each group that divides the
    ranks, ...; every row names its layout: strategy (hsdp), layout (hsdp g=8), group_size and
    reshard_after_forward):

    \b
        costmodel sweep --kind step --set preset=dgx-h100 --set arch=llama-3.1-8b --set strategy=all --set nodes=1..16x2 --set micro_batch=1,2 -o steps.csv

    Time and cost to train over node counts (each row's days, GPU-hours and dollars are
    `costmodel train --tokens --price`'s; a row whose GPU has no price given says so in
    cost_note, its dollars empty):

    \b
        costmodel sweep --kind step --set preset=dgx-h100,dgx-b200 --set arch=llama-3.1-8b --set strategy=zero1 --set nodes=4..32x2 --tokens 2T --price aws-p5-on-demand,lambda-b200-on-demand -o plan.csv

    Memory per GPU over architectures (each row is `costmodel memory --arch`'s answer):

    \b
        costmodel sweep --kind memory --set arch=llama-3.1-8b,llama-3.1-70b --set zero_stage=0,3 --set ranks=8,64 --set preset=dgx-h100 -o memory.csv

    The same with the strategy by name, as `costmodel memory --strategy` (hsdp's group: one
    node of the preset unless group_size is set):

    \b
        costmodel sweep --kind memory --set arch=llama-3.1-70b --set strategy=fsdp,hsdp --set ranks=64 --set preset=dgx-h100 -o memory.csv

    Past one machine (--chunk-rows rows per partition file; a rerun skips finished ones):

    \b
        costmodel sweep grid.toml --engine dask --scheduler tcp://head:8786 -o sweep_dataset/
    """
    sw = importlib.import_module("costmodel.sweep")

    # an empty --kind is refused, not read as the default (its words as every kind's refusal)
    if kind is not None and kind not in sw.KINDS:
        raise ValueError(f"--kind: unknown sweep kind {kind!r}; allowed: {', '.join(sw.KINDS)}")
    axes: dict[str, Any] = {}
    for typed_set in set_ or []:
        key, value = sw.parse_set(typed_set)
        if key in axes:  # one --set per axis, its values as one list
            raise ValueError(
                f"--set {key}: given twice ({key}={axes[key]}, {key}={value}); give its values "
                f"in one --set, e.g. {key}=v1,v2"
            )
        axes[key] = value
    if output is not None and str(output).strip() == "-":  # stdout's usual name: here no -o
        raise ValueError(
            "--output: '-' is no file; for CSV on stdout leave the output out (costmodel sweep "
            "without -o), else give a file name ending in .csv, .parquet or .pq"
        )
    if output is not None:  # the grid file read, written over by the rows (a symlink too)
        _not_an_input(output, "--output", grid_file)
    # a value typed with no unit: the grid's warning (the API's), said as the file's or --set's
    loaded = None
    if grid_file is not None:
        try:  # a file that names no kind is of --kind's (its axes read as that kind's)
            loaded = relay_bare_number_warnings(
                f"{grid_file}:", lambda: sw.load_grid(grid_file, kind)
            )
        except ValueError as exc:  # a key of the file refused: named by its file, as --set's
            theirs = _file_kind(grid_file)
            if kind is not None and theirs is not None and theirs != kind:
                # said first: the file's axes were refused as its own kind's, the message
                # asking for the --kind already typed (the check after the read never ran)
                raise ValueError(
                    f"--kind {kind} contradicts kind = {theirs!r} in {grid_file}"
                ) from None
            text = _one_line(exc, lambda f: str(grid_file) if f == "grid" else f"{grid_file}: {f}")
            # the file itself refused (the library's "grid file 'x' does not exist"): named as
            # the usage line names the argument, as every positional refusal is
            if text.startswith(_GRID_FILE_WORDS):
                text = f"{_GRID_FILE}: {text.removeprefix(_GRID_FILE_WORDS)}"
            raise ValueError(text) from None
    on = loaded.kind if loaded is not None else kind or "collective"
    # time and cost to train: settings of a step sweep's rows (sweep.grid.STEP_COST_AXES),
    # named --tokens/--price/--usd-per-gpu-hour in a refusal (the command's own options)
    cost: dict[str, Any] = {"tokens": tokens, "price": price, "usd_per_gpu_hour": usd_per_gpu_hour}
    given = {k: v for k, v in cost.items() if v is not None}
    if given and on != "step":
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
        raise ValueError(
            f"{flags}: time and cost to train are priced from each row's step: only with "
            "--kind step"
        )
    typed = {_axis_name(k): k for k in axes}
    for k in given:
        if k in typed:
            raise ValueError(f"--{k.replace('_', '-')}: given twice (also as --set {typed[k]})")
    try:
        _sweep_run(sw, {**axes, **given}, loaded, grid_file, kind, output, chunk_rows,
                   progress, engine, scheduler, as_json)  # fmt: skip
    except ValueError as exc:  # an axis refused by its name: the --set the user typed
        raise ValueError(_one_line(exc, _set_axis(on, axes, grid_file, loaded))) from None


def _axis_name(key: str) -> str | None:
    """The step sweep axis ``key`` names (a name or an alias), None if it names none."""
    from ..sweep.grid import _axis

    try:
        return _axis("step", key).name
    except ValueError:
        return None


def _set_axis(
    kind: str, axes: dict[str, str], grid_file: Path | None = None, loaded: Any = None
) -> Callable[[str], str | None]:
    """A sweep refusal's field -> ``--set KEY`` (the axis as the user typed it in --set: a
    ``seq`` axis refused as ``sequence_length`` names ``--set seq``), or ``FILE: key`` for an
    axis the grid file gave (``grid.toml: arch``); None for a field neither gave."""
    from ..sweep.grid import _axis

    typed: dict[str, str] = {}
    for key in axes:
        try:
            typed.setdefault(_axis(kind, key).name, key)
        except ValueError:
            typed.setdefault("grid", key)  # an unknown axis: "grid: unknown step axis 'foo'"

    def option(field: str) -> str | None:
        if field == "grid":
            return f"--set {typed['grid']}" if "grid" in typed else None
        try:
            name = _axis(kind, field).name
        except ValueError:
            return None
        if name in typed:
            return f"--set {typed[name]}"
        if loaded is not None and name in loaded.axes:
            return f"{grid_file}: {name}"
        return None

    return option


def _progress_mode(progress: bool, as_json: bool) -> bool | str:
    """How ``sweep -o`` shows its progress: a bar on a terminal's stderr; plain lines where
    stderr is no terminal (a log file, Slurm, CI) and ``--progress`` was typed (the default
    draws nothing there: it printed nothing either way, a 40-minute step sweep silent under
    nohup); nothing with ``--json`` or ``--no-progress``."""
    if not progress or as_json:
        return False
    if sys.stderr.isatty():
        return True
    return "lines" if option_given("--progress") else False


def _file_kind(grid_file: Path) -> str | None:
    """The ``kind`` a grid file states, or None (none stated, or a file that cannot be read as
    TOML: its own refusal says why)."""
    import tomllib
    import warnings

    from .. import textfile

    try:
        with warnings.catch_warnings():  # a guessed encoding: said once, by the read itself
            warnings.simplefilter("ignore")
            data = tomllib.loads(textfile.decode_text(grid_file.read_bytes(), str(grid_file)))
    except (OSError, ValueError):
        return None
    return str(data["kind"]) if "kind" in data else None


def _sweep_run(
    sw: Any,
    axes: dict[str, Any],
    loaded: Any,
    grid_file: Path | None,
    kind: str | None,
    output: Path | None,
    chunk_rows: int,
    progress: bool,
    engine: str,
    scheduler: str | None,
    as_json: bool,
) -> None:
    """:func:`sweep`'s work, its refusals named by the caller."""
    if loaded is not None:
        if kind is not None and kind != loaded.kind:
            raise ValueError(f"--kind {kind} contradicts kind = {loaded.kind!r} in {grid_file}")
        # an axis set here replaces the file's of that name, however either spells it
        merged = sw.grid.overridden(loaded.axes, loaded.kind, axes)
        grid = relay_bare_number_warnings("--set", lambda: sw.make_grid(merged, kind=loaded.kind))
    elif axes:
        grid = relay_bare_number_warnings(
            "--set", lambda: sw.make_grid(axes, kind=kind or "collective")
        )
    else:
        raise ValueError("sweep: give a grid file or --set name=values, e.g. --set ranks=8..64x2")
    if engine not in sw.ENGINES:
        raise ValueError(f"--engine: unknown {engine!r}; allowed: {', '.join(sw.ENGINES)}")
    if engine == "dask":
        if output is None:
            raise ValueError("--engine dask: needs -o FOLDER (a partitioned Parquet dataset)")
        _sweep_dask(grid, output, scheduler, chunk_rows, progress and not as_json, as_json, axes)
        return
    if scheduler is not None:
        raise ValueError("--scheduler: only with --engine dask")
    if output is None:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        first = True
        tally = sw.RowErrors()
        if as_json:  # a JSON array of row objects, streamed chunk by chunk; its "[" comes
            # with the first row, so a sweep refused (every row failed) prints nothing
            from ..sweep.output import plain_errors, to_frame

            for table in tally.watch(sw.iter_sweep(grid, chunk_rows)):
                for rec in _records(to_frame(plain_errors(table))):
                    sys.stdout.write(("[\n" if first else ",\n") + json.dumps(rec))
                    first = False
            sys.stdout.write("[]\n" if first else "\n]\n")
            _warn_failed_rows(tally.rows, tally.failed_rows, tally.errors, grid.kind, axes)
            _warn_unfit_rows(tally.rows, tally.unfit_rows, grid.kind)
            _warn_over_memory_rows(tally.rows, tally.over_memory_rows)
            _warn_unpriced_rows(tally.rows, tally.unpriced_rows, tally.unpriced_presets, grid)
            return
        from ..sweep.output import csv_ready

        for table in tally.watch(sw.iter_sweep(grid, chunk_rows)):
            buf = pa.BufferOutputStream()
            pacsv.write_csv(csv_ready(table), buf, pacsv.WriteOptions(include_header=first))
            sys.stdout.write(buf.getvalue().to_pybytes().decode())
            first = False
        _warn_failed_rows(tally.rows, tally.failed_rows, tally.errors, grid.kind, axes)
        _warn_unfit_rows(tally.rows, tally.unfit_rows, grid.kind)
        _warn_over_memory_rows(tally.rows, tally.over_memory_rows)
        _warn_unpriced_rows(tally.rows, tally.unpriced_rows, tally.unpriced_presets, grid)
        return
    summary = sw.sweep_to_file(
        output,
        grid,
        chunk_rows=chunk_rows,
        progress=_progress_mode(progress, as_json),
    )
    _warn_failed_rows(summary.rows, summary.failed_rows, summary.errors, grid.kind, axes)
    _warn_unfit_rows(summary.rows, summary.unfit_rows, grid.kind)
    _warn_over_memory_rows(summary.rows, summary.over_memory_rows)
    _warn_unpriced_rows(summary.rows, summary.unpriced_rows, summary.unpriced_presets, grid)
    if as_json:
        _print_json(dataclasses.asdict(summary))
        return
    typer.echo(
        f"wrote {_rows_text(summary.rows)} to {summary.path} ({summary.format}) in "
        f"{summary.seconds:.2f} s{_rate_text(summary.rows, summary.seconds)}"
    )


MAX_FAILED_LINES = 5
"""Distinct reasons a sweep's refused rows are listed with, one warning line each."""


def _warn_failed_rows(
    rows: int, failed: int, errors: dict[str, int], kind: str, axes: dict[str, str]
) -> None:
    """``costmodel: warning: 2 of 8 rows failed: --set compute_time: ...`` after the table; with
    several reasons the total is said once (``3 of 6 rows failed ... for 3 reasons:``), then
    one line per distinct reason with its rows (the first :data:`MAX_FAILED_LINES`, then how
    many more), each reason naming the --set the user typed; the rows are in the output with
    their ``error``."""
    if not failed:
        return
    options = _set_axis(kind, axes)
    reasons = list(errors.items())
    if len(reasons) == 1:
        why = _one_line(ValueError(reasons[0][0]), options)
        warn_on_success(
            f"{failed:,} of {_rows_text(rows)} failed (in the output with NaN answers and this "
            f"error): {why}"
        )
        return
    # the total once: "1 of 6 rows failed" per reason read as six separate sweeps' counts
    warn_on_success(
        f"{failed:,} of {_rows_text(rows)} failed (in the output with NaN answers and their "
        f"error) for {len(reasons):,} reasons:"
    )
    for text, count in reasons[:MAX_FAILED_LINES]:
        warn_on_success(f"{_rows_text(count)}: {_one_line(ValueError(text), options)}")
    rest = reasons[MAX_FAILED_LINES:]
    if rest:
        more = sum(c for _, c in rest)
        warn_on_success(
            f"{more:,} more {units.noun_for(more, 'row')} for {len(rest)} other "
            f"{units.noun_for(len(rest), 'reason')}: see the output's error column"
        )


def _warn_unfit_rows(rows: int, unfit: int, kind: str) -> None:
    """``costmodel: warning: 6 of 8 rows do not fit ...`` after a step sweep: a row whose memory
    per GPU is more than its GPU has is priced like the others (``step`` and ``train`` say DOES
    NOT FIT above such an answer); the sweep said nothing, so its steps and costs read as
    runnable. A memory sweep's ``fits`` is its answer, not a caveat: no warning there."""
    if unfit and kind == "step":
        one = unfit == 1  # "1 of 2 rows does not fit its GPU's", "2 of 3 rows do ... their"
        its = "its" if one else "their"
        warn_on_success(
            f"{unfit:,} of {_rows_text(rows)} {'does' if one else 'do'} not fit {its} "
            f"GPU's memory (fits = false): {its} step, days and cost are for a configuration "
            "that cannot run"
        )


def _warn_unpriced_rows(rows: int, unpriced: int, presets: list[str], grid: Any) -> None:
    """``costmodel: warning: 2 of 4 rows have no dollars ...`` after a step sweep given
    ``--price`` presets: a row whose GPU none of them is published for keeps its days and
    GPU-hours with ``cost_usd`` NaN and a ``cost_note`` saying why (a GPU is never priced at
    another GPU's rate). The sweep said nothing of them, so a file half priced read as priced
    (``wrote 4 rows``). Without ``--price`` no row asked for dollars: no warning."""
    if not unpriced or "price" not in grid.axes:
        return
    from .. import presets as preset_files

    gpus: dict[str, list[str]] = {}  # GPU -> its presets among the rows, as first met
    for name in presets:
        gpus.setdefault(preset_files.cluster(name, field="preset").gpu.name, []).append(name)
    one = unpriced == 1
    where = " and ".join(f"{gpu} ({', '.join(names)})" for gpu, names in gpus.items())
    warn_on_success(
        f"{unpriced:,} of {_rows_text(rows)} {'has' if one else 'have'} no dollars: --price "
        f"names no preset for {where or 'their GPU'} (a GPU is never priced at another GPU's "
        f"rate), so cost_usd is NaN there and {'its' if one else 'their'} cost_note names "
        "that GPU's presets; add one to --price, or give --usd-per-gpu-hour"
    )


def _warn_over_memory_rows(rows: int, over: int) -> None:
    """``costmodel: warning: 2 of 4 rows have a per-rank buffer larger than their GPU's memory
    ...`` after a collective sweep: the rows' ``memory_note`` (``collective --cluster`` and
    ``predict`` print the same note, :func:`costmodel.predict.buffer_memory_note`)."""
    if over:
        warn_on_success(
            f"{over:,} of {_rows_text(rows)} "
            + (
                "has a per-rank buffer larger than its"
                if over == 1
                else "have a per-rank buffer larger than their"
            )
            + " GPU's memory (memory_note): the times there are the model's extrapolation, not "
            "a run that could be measured"
        )


def _rows_text(rows: int) -> str:
    return units.format_counted(rows, "row")


def _rate_text(rows: int, seconds: float) -> str:
    """`` (4,182 rows/s)``; three significant digits below 100 (a step sweep's 0.49 rows/s
    read "0 rows/s"); nothing when the time is too short to measure (not "inf rows/s")."""
    if not seconds > 0:
        return ""
    rate = rows / seconds
    return f" ({rate:,.0f} rows/s)" if rate >= 100 else f" ({rate:.3g} rows/s)"


def _sweep_dask(
    grid: Any,
    output: Path,
    scheduler: str | None,
    chunk_rows: int,
    progress: bool,
    as_json: bool,
    axes: dict[str, str],
) -> None:
    from .. import distributed

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
    _warn_failed_rows(summary.rows, summary.failed_rows, summary.errors, grid.kind, axes)
    _warn_unfit_rows(summary.rows, summary.unfit_rows, grid.kind)
    _warn_over_memory_rows(summary.rows, summary.over_memory_rows)
    _warn_unpriced_rows(summary.rows, summary.unpriced_rows, summary.unpriced_presets, grid)
    if as_json:
        _print_json(dataclasses.asdict(summary))
        return
    typer.echo(
        f"wrote {summary.written} of {summary.partitions} partitions ({summary.skipped} already "
        f"done, {_rows_text(summary.rows)} in all) to {summary.path} in {summary.seconds:.2f} s"
    )
