"""nccl-tests' JSON output (``-J file.json``, JSON_FILE_VERSION 3) -> the frame."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from costmodel.units import GB, US

from ._common import NCCL_TESTS_OPS, NcclTestsParseError, _frame, _library_version
from ._lexer import _PERF_RE

if TYPE_CHECKING:
    import pandas as pd


def _whole(value: Any) -> int:
    """A count of the -J file's config (``nthreads``, ``ngpus``), 1 where absent or not a
    whole number >= 1 (nccl-tests' default for both)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _parse_json(data: dict[str, Any], source: str, op: str | None) -> pd.DataFrame:
    if not isinstance(data, dict) or "results" not in data:
        if isinstance(data, dict) and "version" in data and ("config" in data or "args" in data):
            # nccl-tests' head without its table: the run stopped (an error) before the
            # results list was opened; since 2.18.5 the writer closes the file on such an
            # error (src/util.cu jsonOutputFinalize)
            raise NcclTestsParseError(
                0,
                "nccl-tests -J output without a 'results' list: the run stopped before its "
                "first size (an error during setup; its text log names it)",
                source,
            )
        raise NcclTestsParseError(0, "JSON has no 'results' list: not nccl-tests -J output", source)
    config = data.get("config") or {}
    # nccl-tests writes the device list inside "config" (src/util.cu writeDeviceReport: the
    # "devices" key before the config object closes, every -J version so far); a top-level
    # list is read too
    devices = data.get("devices") or config.get("devices") or []
    # one entry per process, not per rank: each process prints one "#  Rank" line per GPU it
    # drives, and the writer keeps the first line of each (src/util.cu writeDeviceReport's
    # parseRankInfo, every -J version so far), so a process stands for its threads x GPUs
    # (-t x -g): `all_reduce_perf -g 8 -J` lists one device and ran 8 ranks
    per_process = _whole(config.get("nthreads")) * _whole(config.get("ngpus"))
    hosts: dict[str, int] = {}
    for device in devices:
        host = str(device.get("hostname", ""))
        hosts[host] = hosts.get(host, 0) + per_process
    ranks = len(devices) * per_process or None
    nodes = len(hosts) if devices else None
    counts = set(hosts.values())
    gpus_per_node = counts.pop() if len(counts) == 1 else None
    env = {}
    for item in data.get("env") or []:
        if isinstance(item, str) and "=" in item:
            key, _, value = item.partition("=")
            env[key] = value
        elif isinstance(item, dict):
            env.update({str(k): str(v) for k, v in item.items()})
    args = " ".join(str(a) for a in data.get("args") or [])
    if op is None:
        match = _PERF_RE.search(args)
        op = NCCL_TESTS_OPS.get(match.group(1), match.group(1)) if match else None
    oob = data.get("out_of_bounds") or {}
    # nccl-tests writes its booleans as the strings "true" / "false" (src/util.cu jsonBool)
    okay = oob.get("okay")
    okay = {"true": True, "false": False}.get(okay.lower(), okay) if isinstance(okay, str) else okay
    failed = okay is False
    nccl_version = data.get("nccl_version")
    if isinstance(nccl_version, int) or (isinstance(nccl_version, str) and nccl_version.isdigit()):
        nccl_version = _library_version(str(nccl_version))
    # "version" is the file's layout (JSON_FILE_VERSION, an int: 3 in nccl-tests 2.19), not
    # nccl-tests' own version, which the -J file does not hold; a string like "2.19.6" is read
    # as that version
    version = data.get("version")
    tests_version = version if isinstance(version, str) and "." in version else None
    records = []
    for index, result in enumerate(data["results"]):
        if not isinstance(result, dict) or "size" not in result:
            raise NcclTestsParseError(0, f"results[{index}] has no 'size'", source)
        row_op = op or NCCL_TESTS_OPS.get(str(result.get("experiment_name", "")), "unknown")
        for placement in ("out_of_place", "in_place"):
            block = result.get(placement)
            if not block:
                continue
            time_us = block.get("time", block.get("cpu_time"))
            if time_us is None:
                raise NcclTestsParseError(0, f"results[{index}].{placement} has no time", source)
            wrong = block.get("nwrong")
            wrong = (
                None
                if wrong in (None, "N/A") or (isinstance(wrong, float) and wrong < 0)
                else int(wrong)
            )
            reasons = []
            if wrong:
                reasons.append(f"#wrong={wrong}")
            if failed:
                reasons.append(f"out of bounds values: {oob.get('count')} FAILED")
            per_iter = result.get(f"{placement}_per_iter") or {}
            records.append(
                {
                    "run": 0,
                    "op": row_op,
                    "size_bytes": int(result["size"]),
                    "count": int(result.get("count", 0)),
                    "dtype": result.get("type"),
                    "redop": result.get("redop"),
                    "root": result.get("root"),
                    "placement": placement,
                    "time_s": float(time_us) * US,
                    "algbw_bytes_per_s": float(block.get("alg_bw", math.nan)) * GB,
                    "busbw_bytes_per_s": float(block.get("bus_bw", math.nan)) * GB,
                    "wrong": wrong,
                    "max_error": math.nan,
                    "flagged": bool(reasons),
                    "flag_reason": "; ".join(reasons) or None,
                    "line": 0,
                    "ranks": ranks,
                    "ranks_source": "devices" if ranks else "unknown",
                    "nodes": nodes,
                    "gpus_per_node": gpus_per_node,
                    "gpus_per_process": config.get("ngpus"),
                    "nccl_version": nccl_version,
                    "nccl_tests_version": tests_version,
                    "algo_env": env.get("NCCL_ALGO"),
                    "proto_env": env.get("NCCL_PROTO"),
                    "nccl_algo": None,
                    "nccl_proto": None,
                    "timer": "cpu" if "cpu_time" in block and "time" not in block else "gpu",
                    "iter_min_s": float(per_iter.get("min_us", math.nan)) * US,
                    "iter_max_s": float(per_iter.get("max_us", math.nan)) * US,
                    "iter_p99_s": float(per_iter.get("p99_us", math.nan)) * US,
                    "iter_cv_pct": float(per_iter.get("cv_pct", math.nan)),
                    "run_label": result.get("experiment_name"),
                    "device": "; ".join(
                        sorted({str(d.get("device_info")) for d in devices if d.get("device_info")})
                    )
                    or None,
                }
            )
    if not records:
        raise NcclTestsParseError(0, "JSON 'results' holds no rows", source)
    info = [
        {
            "run": 0,
            "line": 0,
            "op": op,
            "ranks": ranks,
            "nodes": nodes,
            "gpus_per_node": gpus_per_node,
            "env": env,
            "config": config,
            "args": args,
            "hosts": sorted(hosts),
            "out_of_bounds": oob.get("count"),
            "out_of_bounds_ok": okay,
            "nccl_version": nccl_version,
            "nccl_tests_version": tests_version,
            "avg_busbw_bytes_per_s": float(
                (data.get("average_bus_bandwidth") or {}).get("bandwidth", math.nan)
            )
            * GB,
        }
    ]
    warnings = []
    if "out_of_bounds" not in data and "average_bus_bandwidth" not in data:
        # the footer nccl-tests writes after the last size (src/util.cu writeResultFooter) is
        # missing: an error stopped the sweep and the writer closed the file where it was
        warnings.append(
            (
                0,
                "the -J file ends without nccl-tests' footer ('out_of_bounds', "
                "'average_bus_bandwidth'): the run stopped before its last size (an error; its "
                f"text log names it); the {len(data['results'])} sizes before are read",
            )
        )
    return _frame(records, source, {}, info, [], warnings)
