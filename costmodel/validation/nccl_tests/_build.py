"""Runs -> the frame: one row per size and placement, SI units, header facts, flags."""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from costmodel.units import GB, US, noun_for

from ._common import _FLOAT64 as _FLOAT_COLUMNS  # the float columns: one list
from ._common import COLUMNS, NcclTestsParseError, _frame
from ._findings import (
    IdentityRow,
    _check_hosts,
    _check_identities,
    _check_launch,
    _check_repeated_runs,
    _check_sizes,
)
from ._header import _op_from_rows, _ranks_from_busbw, _ranks_span, _run_facts
from ._launch import find_launch
from ._lexer import _Run
from ._text import _Parser

if TYPE_CHECKING:
    import pandas as pd


def _number(token: str) -> float:
    return math.nan if token == "N/A" else float(token)


# block column -> (frame column, scale to SI)
_BLOCK_COLUMNS = {
    "time": ("time_s", US),
    "algbw": ("algbw_bytes_per_s", GB),
    "busbw": ("busbw_bytes_per_s", GB),
    "error": ("max_error", 1.0),
    "i_min": ("iter_min_s", US),
    "i_max": ("iter_max_s", US),
    "i_p99": ("iter_p99_s", US),
    "i_cv": ("iter_cv_pct", 1.0),
}


MIXED_RUNS = "mixed runs in one file"
"""How the parser's finding about a file of several kinds of run begins (``validate compare``
words it as what it compares instead: :func:`costmodel.validation.logread.runs_compared`)."""


def mixed_runs(runs: list[dict[str, Any]]) -> str | None:
    """``"3 runs: line 1: all_reduce on 2 ranks, line 25: ..."`` for the runs of one file
    (``rows.attrs["runs"]``) when they differ in op, ranks or nodes, whole runs listed up to
    300 characters and the rest counted; None for runs of one kind."""
    kinds = {(info["op"], info["ranks"], info["nodes"]) for info in runs}
    if len(kinds) <= 1:
        return None
    entries = [
        f"line {info['line']}: {info['op']} on {info['ranks']} {noun_for(info['ranks'], 'rank')}"
        for info in runs
    ]
    shown = [e for i, e in enumerate(entries) if len(", ".join(entries[: i + 1])) <= 300]
    listed = ", ".join(shown) + (
        f", and {len(entries) - len(shown)} more" if len(shown) < len(entries) else ""
    )
    return f"{len(entries)} runs: {listed}"


def _build(parser: _Parser) -> pd.DataFrame:
    launch = find_launch(parser.meta, parser.launch_lines)
    # NCCL_ALGO/PROTO/... set on a command line or env in the header, then on a launch line,
    # an export line or the runner's env line of the log proper: (value, where read)
    meta_env: dict[str, tuple[str, str]] = {}
    for key, value in parser.meta.items():
        if key.upper().startswith(("COMMAND", "ENV")):
            for match in re.finditer(
                r"\b(NCCL_(?:ALGO|PROTO|NVLS_ENABLE|COLLNET_ENABLE))=([\w,^;:]+)", value
            ):
                meta_env[match.group(1)] = (match.group(2), f"the log's '# {key}:' line")
    for key, said in parser.line_env.items():
        meta_env.setdefault(key, said)
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    runs_info: list[dict[str, Any]] = []
    run_number = 0
    launched: list[tuple[_Run, dict[str, Any]]] = []  # each run with its header facts
    _check_repeated_runs(parser, parser.runs)
    for run in parser.runs:
        layout = run.layout
        if not run.rows or layout is None:  # rows are only accepted with a layout
            continue
        _check_sizes(parser, run, layout)
        if not run.concluded:
            parser._warn(
                run.rows[-1][0],
                f"the run starting at line {run.line} ends without nccl-tests' footer "
                "('# Out of bounds values', '# Avg bus bandwidth'): the log may be cut off",
            )
        op = (
            parser.default_op
            or run.op
            or run.op_hint
            or parser.last_op_hint
            or parser.fallback_op
            or _op_from_rows([t for _, t in run.rows], layout)
            or "unknown"
        )
        # where each setting was read: the run's marker, its NCCL INFO lines, else the line
        env_from = {
            key: "the run's marker"
            if key.removeprefix("NCCL_") in {m.removeprefix("NCCL_") for m in run.markers}
            else "the log's NCCL lines"
            for key in run.env
        }
        for key, (value, where) in meta_env.items():
            if key not in run.env:
                run.env[key], env_from[key] = value, where
        failed = run.out_of_bounds_ok is False
        failed_reason = f"out of bounds values: {run.out_of_bounds} FAILED"
        pre = {name: i for i, name in enumerate(layout.preamble)}
        base = len(layout.preamble)
        blocks = []
        offset = base
        # the placements the title line names, where it names one per block (a table of
        # in-place columns only); else nccl-tests' order, out-of-place first
        named = (
            run.placements if run.placements and len(run.placements) == len(layout.blocks) else None
        )
        order = named or ["out_of_place", "in_place"]
        for placement, block in zip(order, layout.blocks, strict=False):
            blocks.append((placement, offset, block))
            offset += len(block)
        i_type, i_redop, i_root = pre.get("type"), pre.get("redop"), pre.get("root")
        start = len(columns["run"])
        bw_pairs: list[tuple[float, float]] = []
        identity_rows: list[IdentityRow] = []
        for lineno, tokens in run.rows:
            try:
                size, count = int(tokens[0]), int(tokens[1])
                root = int(tokens[i_root]) if i_root is not None else None
                values = [_number(t) for t in tokens[base:]]
            except ValueError as exc:
                parser._problem(lineno, f"result row field is not a number ({exc})")
                continue
            tuning = run.tuning.get(size, (None, None))
            for placement, first, block in blocks:
                fields = dict.fromkeys(_FLOAT_COLUMNS, math.nan)
                wrong = None
                for j, name in enumerate(block):
                    number = values[first - base + j]
                    if name == "wrong":
                        wrong = None if math.isnan(number) else int(number)
                    elif name in _BLOCK_COLUMNS:
                        column, scale = _BLOCK_COLUMNS[name]
                        fields[column] = number * scale
                for column, number in fields.items():
                    columns[column].append(number)
                bw_pairs.append(
                    (fields["algbw_bytes_per_s"] / GB, fields["busbw_bytes_per_s"] / GB)
                )
                at = {name: tokens[first + j] for j, name in enumerate(block)}
                if layout.timer == "gpu" and {"time", "algbw", "busbw"} <= set(at):
                    identity_rows.append(
                        (lineno, placement, size, at["time"], at["algbw"], at["busbw"])
                    )
                reasons = [f"#wrong={wrong}"] if wrong else []
                if failed:
                    reasons.append(failed_reason)
                columns["size_bytes"].append(size)
                columns["count"].append(count)
                columns["dtype"].append(tokens[i_type] if i_type is not None else None)
                columns["redop"].append(tokens[i_redop] if i_redop is not None else None)
                columns["root"].append(root)
                columns["placement"].append(placement)
                columns["wrong"].append(wrong)
                columns["flagged"].append(bool(reasons))
                columns["flag_reason"].append("; ".join(reasons) or None)
                columns["line"].append(lineno)
                columns["nccl_algo"].append(tuning[0])
                columns["nccl_proto"].append(tuning[1])
        added = len(columns["size_bytes"]) - start
        if not added:
            continue
        facts = _run_facts(run, op, bw_pairs, launch)
        launched.append((run, facts))
        _check_identities(parser, op, facts["ranks"], facts["ranks_source"], identity_rows)
        _check_hosts(parser, run, facts)
        constant = {
            "run": run_number,
            "op": op,
            "nccl_version": run.nccl_version,
            "nccl_tests_version": run.nccl_tests_version,
            "algo_env": run.env.get("NCCL_ALGO"),
            "proto_env": run.env.get("NCCL_PROTO"),
            "timer": layout.timer,
            "run_label": run.label,
            **facts,
        }
        for name, value in constant.items():
            columns[name].extend([value] * added)
        runs_info.append(
            {
                "run": run_number,
                "line": run.line,
                "op": op,
                **facts,
                "label": run.label,
                "nthread": run.nthread,
                "ngpus": run.ngpus,
                "markers": dict(run.markers),
                "env": dict(run.env),
                "env_from": env_from,
                "nccl_version": run.nccl_version,
                "nccl_tests_version": run.nccl_tests_version,
                "hosts": sorted({h for _, h, _ in run.rank_lines}),
                "ranks_busbw": _ranks_from_busbw(op, bw_pairs),
                # the rank counts the rows' busbw/algbw ratio fits, (lowest, highest), or None
                "ranks_span": _ranks_span(op, bw_pairs),
                "out_of_bounds": run.out_of_bounds,
                "out_of_bounds_ok": run.out_of_bounds_ok,
                "avg_busbw_bytes_per_s": run.avg_busbw_bytes_per_s,
            }
        )
        run_number += 1
    if not columns["run"]:
        raise NcclTestsParseError(0, "no result row could be read", parser.source)
    _check_launch(parser, launched, launch)
    listed = mixed_runs(runs_info)
    if listed is not None:
        parser._warn(0, f"{MIXED_RUNS} ({listed}); compare them one by one")
    df = _frame(columns, parser.source, parser.meta, runs_info, parser.problems, parser.warnings)
    df.attrs["launch"] = None if launch is None else {**asdict(launch), "said": launch.describe()}
    cut = parser.cut_row
    df.attrs["cut_row"] = None if cut is None else {"line": cut[0], "message": cut[1]}
    return df
