"""Reliability under hostile input (items 1 and 2): every public formula entry point.

For each entry point of ``costmodel``'s lazy API map there is one valid call; hypothesis (fixed
seed: ``derandomize=True``) replaces one argument at a time by a hostile value (huge, tiny,
negative, NaN, inf, 1e400 as text, junk strings, bools, None, arrays of those). Each call must
either return finite numbers or raise ValueError/TypeError with a message; never hang
(pytest-timeout), never raise anything else. Plus the specific cases the issue names.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import costmodel as cm
from costmodel import units

HOSTILE: list[Any] = [
    0,
    -1,
    -1e-300,
    1e-300,
    5e-324,
    1e300,
    1e308,
    2**31,
    2**53 + 1,
    2**63,
    2**64,
    10**30,
    math.nan,
    math.inf,
    -math.inf,
    "1e400",
    "nan",
    "inf",
    "-5",
    "14-GB",
    "1.5.5GB",
    "False",
    "no",
    "",
    "x" * 10_000,
    True,
    False,
    None,
    [1.0, math.nan],
    [],
    np.array([1e300, 1.0]),
    np.float32(1e38),
    {"a": 1},
]

# one valid call per public formula entry point: name -> kwargs
VALID: dict[str, dict[str, Any]] = {
    "parse_bytes": {"text": "25MB"},
    "parse_rate": {"text": "400Gb/s"},
    "parse_duration": {"text": "5us"},
    "parse_count": {"text": "7B"},
    "parse_tokens": {"text": "8Ki"},
    "allreduce_time": {"message_bytes": 14e9, "ranks": 64, "bandwidth_bytes_per_s": 50e9},
    "collective_time": {
        "op": "all_gather",
        "message_bytes": 1e9,
        "ranks": 4,
        "bandwidth_bytes_per_s": 100e9,
        "latency_s": 5e-6,
    },
    "bytes_per_rank": {"op": "all_reduce", "message_bytes": 1e9, "ranks": 8},
    "bus_bandwidth": {"op": "all_reduce", "message_bytes": 1e9, "ranks": 8, "time_s": 0.01},
    "algorithm_bandwidth": {"message_bytes": 1e9, "time_s": 0.01},
    "busbw_factor": {"op": "all_reduce", "ranks": 8},
    "allreduce_lower_bound_bytes": {"message_bytes": 1e9, "ranks": 8},
    "crossover_bytes": {
        "algorithm_a": "ring",
        "algorithm_b": "tree",
        "ranks": 64,
        "bandwidth_bytes_per_s": 50e9,
        "latency_s": 5e-6,
    },
    "hierarchical_allreduce_time": {
        "message_bytes": 1e9,
        "nodes": 2,
        "gpus_per_node": 8,
        "intra_bandwidth_bytes_per_s": 450e9,
        "inter_bandwidth_bytes_per_s": 50e9,
        "intra_latency_s": 1e-6,
        "inter_latency_s": 5e-6,
        "in_network_reduction": False,
    },
    "flat_ring_allreduce_time": {
        "message_bytes": 1e9,
        "nodes": 2,
        "gpus_per_node": 8,
        "intra_bandwidth_bytes_per_s": 450e9,
        "nics_per_node": 8,
        "nic_bandwidth_bytes_per_s": 50e9,
    },
    "training_memory": {"params": 7e9, "zero_stage": 1, "dp_ranks": 8},
    "max_params": {"memory_bytes": 80 * 2**30, "zero_stage": 3, "dp_ranks": 8},
    "min_ranks": {"params": 70e9, "memory_bytes": 80 * 2**30},
    "global_batch": {"local_batch": 8, "ranks": 64, "accumulation": 2},
    "solve_batch": {"local_batch": 8, "ranks": 64, "accumulation": 2},
    "scale_learning_rate": {"base_lr": 1e-3, "base_batch": 256, "new_batch": 1024},
    "ddp_step": {
        "params": 7e9,
        "ranks": 64,
        "compute_time_s": 0.5,
        "bandwidth_bytes_per_s": 50e9,
        "accumulation": 2,
        "overlap": True,
    },
    "bucket_assignment": {"param_bytes": [4e6, 8e6, 30e6, 1e6]},
    "cluster": {"name": "dgx-h100", "nodes": 2},
    "arch_names": {},
    "price_names": {},
    "load_arch": {"name": "gpt2-124m"},
    "load_price": {"name": "aws-p5-capacity-block"},
    "prices_for_gpu": {"gpu": "h100-sxm"},
    "load_hf_config": {
        "path": str(Path(__file__).parent / "data" / "hf_configs" / "gpt2-124m" / "config.json")
    },
    "global_batch_from_tokens": {"global_tokens": 4 * 2**20, "sequence_length": 4096},
    "training_cost": {
        "tokens": 1e12,
        "tokens_per_step": 4e6,
        "step_time_s": 2.0,
        "ranks": 1024,
        "usd_per_gpu_hour": 2.5,
    },
    "billed_gpus_per_node": {
        "gpus_per_node": 6,
        "whole_node_gpus": 72,
        "hosts_per_node": 18,
        "gpus_per_instance": 1,
    },
    "predict_collective": {
        "op": "all_reduce",
        "message_bytes": 1e8,
        "cluster": "dgx-h100",
        "nodes": 2,
        "nvls": True,
        "collnet_enabled": False,
    },
    "predict_all_algorithms": {
        "op": "all_reduce",
        "message_bytes": 1e8,
        "cluster": "dgx-h100",
        "nodes": 2,
        "nvls": True,
        "collnet_enabled": False,
    },
}


def _numbers(value: Any, depth: int = 0) -> list[float]:
    """Every number inside a result (floats, arrays, dataclasses, pydantic models, dicts)."""
    if depth > 6 or value is None or isinstance(value, str | bytes | bool):
        return []
    if isinstance(value, int | float | np.number):
        return [float(value)] if not isinstance(value, int) or abs(value) < 2**1023 else [0.0]
    if isinstance(value, np.ndarray):
        return [float(x) for x in value.ravel()] if value.dtype.kind in "fiu" else []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            x
            for f in dataclasses.fields(value)
            for x in _numbers(getattr(value, f.name), depth + 1)
        ]
    if hasattr(value, "model_dump"):
        return [x for v in vars(value).values() for x in _numbers(v, depth + 1)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v, depth + 1)]
    if isinstance(value, list | tuple):
        return [x for v in value[:10_000] for x in _numbers(v, depth + 1)]
    return []


def _call(name: str, kwargs: dict[str, Any]) -> None:
    fn = getattr(cm, name)
    try:
        out = fn(**kwargs)
    except (ValueError, TypeError) as exc:
        assert str(exc).strip(), f"{name}({kwargs}) raised {type(exc).__name__} without a message"
        return
    numbers = _numbers(out)
    if name == "crossover_bytes":  # documented: inf where the lines never cross, never NaN
        numbers = [x for x in numbers if x != math.inf]
    bad = [x for x in numbers if not math.isfinite(x)]
    assert not bad, f"{name}({kwargs!r}) returned non-finite numbers {bad[:3]}"


def test_every_valid_call_returns_finite_numbers() -> None:
    for name, kwargs in VALID.items():
        out = getattr(cm, name)(**kwargs)
        assert all(math.isfinite(x) for x in _numbers(out)), name


def test_the_map_covers_every_public_formula() -> None:
    formulas = {
        n
        for n, target in cm._EXPORTS.items()
        if callable(getattr(cm, n))
        and not isinstance(getattr(cm, n), type)
        and not n.startswith("format_")
        and n != "sweep"  # its own tests below
        # the strategy layer's questions (schedules, not formulas): tests/test_strategy.py
        and n
        not in (
            "strategy_step",
            "strategy_memory",
            "advise_strategy",
            "advise_strategy_nodes",
            "fit_suggestions",
        )
    }
    assert formulas <= set(VALID), sorted(formulas - set(VALID))


CASES = [(name, arg) for name, kwargs in VALID.items() for arg in kwargs]


@pytest.mark.timeout(50)
@settings(
    derandomize=True,
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(case=st.sampled_from(CASES), value=st.sampled_from(HOSTILE))
def test_hostile_argument_gives_finite_result_or_clear_error(
    case: tuple[str, str], value: Any
) -> None:
    name, arg = case
    kwargs = dict(VALID[name])
    kwargs[arg] = value
    _call(name, kwargs)


@pytest.mark.timeout(30)
@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(
    name=st.sampled_from(sorted(n for n in VALID if not n.startswith("parse_"))),
    value=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70),
    data=st.data(),
)
def test_random_numbers_in_any_numeric_argument(name: str, value: Any, data: Any) -> None:
    kwargs = dict(VALID[name])
    numeric = [
        k for k, v in kwargs.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    if not numeric:
        return
    kwargs[data.draw(st.sampled_from(numeric))] = value
    _call(name, kwargs)


# --- the grammar ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [("7e-3GB", 7_000_000), ("7e-3 GB", 7_000_000), ("1.5GiB", 3 * 2**29), ("25 MB", 25_000_000)],
)
def test_size_grammar_reads_exponents_and_prefixes(text: str, expected: int) -> None:
    assert cm.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["14-GB", "1.5.5GB", "7e-3GBx", "GB", "1 G B", "8Gb", "1e400GB"])
def test_size_grammar_refuses_junk(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        cm.parse_bytes(text)


@pytest.mark.parametrize(
    "parse",
    [
        cm.parse_bytes,
        cm.parse_rate,
        cm.parse_duration,
        cm.parse_count,
        cm.parse_tokens,
        units.parse_int,
    ],
)
def test_a_one_megabyte_line_is_refused_fast(parse: Any) -> None:
    for text in ("1" * 1_000_000 + "GB", "1" + " " * 1_000_000 + "x", "1e" + "9" * 1_000_000):
        t0 = time.perf_counter()
        with pytest.raises(ValueError):
            parse(text)
        assert time.perf_counter() - t0 < 10.0  # a hang detector (the length limit), not a target


def test_the_grammar_regexes_do_not_backtrack_on_long_input() -> None:
    # the length limit guards the parsers; the patterns themselves must also be linear. A
    # quadratic pattern takes minutes on 200,000 characters and a linear one milliseconds, so
    # the bound is a hang detector (10 s), not a speed target: a loaded machine cannot fail it.
    for pattern in (units._BYTES_RE, units._RATE_RE, units._DURATION_RE, units._COUNT_RE):
        for text in ("1" * 200_000 + "x", "1 " + " " * 200_000 + "x", "1." + "0" * 200_000 + "e"):
            t0 = time.perf_counter()
            assert pattern.fullmatch(text) is None
            assert time.perf_counter() - t0 < 10.0


def test_units_does_not_import_pydantic_validators_eagerly() -> None:
    import subprocess
    import sys

    code = "import sys, costmodel.units; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- booleans ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["False", "no", "0", 1, None])
def test_in_network_reduction_takes_only_booleans(value: Any) -> None:
    kwargs = dict(VALID["hierarchical_allreduce_time"], in_network_reduction=value)
    with pytest.raises(ValueError, match="in_network_reduction"):
        cm.hierarchical_allreduce_time(**kwargs)


@pytest.mark.parametrize("value", ["no", "False", 0])
def test_nvls_takes_only_booleans(value: Any) -> None:
    with pytest.raises(ValueError, match="nvls"):
        cm.predict_collective("all_reduce", 1e8, "dgx-h100", nvls=value)


def test_parse_bool_accepts_true_false_text_for_cli_and_urls() -> None:
    assert units.parse_bool("true") is True and units.parse_bool(" False ") is False
    for bad in ("yes", "no", "1", 1, None, "truee"):
        with pytest.raises(ValueError):
            units.parse_bool(bad)


# --- overflow and exact integers --------------------------------------------------------------
def test_a_tiny_bandwidth_is_an_error_naming_it_not_inf() -> None:
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        cm.allreduce_time(1e9, 8, 1e-300)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        cm.allreduce_time(np.array([1e9, 1.0]), 8, 1e-300)


def test_hierarchical_allreduce_never_returns_nan() -> None:
    kwargs = dict(VALID["hierarchical_allreduce_time"], intra_bandwidth_bytes_per_s=1e-300)
    with pytest.raises(ValueError, match="intra_bandwidth_bytes_per_s"):
        cm.hierarchical_allreduce_time(**kwargs)


def test_global_batch_is_exact_for_huge_counts() -> None:
    # the largest the limits allow (local_batch, accumulation <= 1e6; ranks <= 1e9): past 2**62
    assert cm.global_batch(10**6, 10**9, 10**6) == 10**21
    assert cm.global_batch(2**19, 2**29, 2**19) == 2**67
    assert cm.global_batch(3, 999_999_999, 999_999) == 3 * 999_999_999 * 999_999


# --- bounded work -----------------------------------------------------------------------------
@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"params": 1e15, "ranks": 64, "compute_time_s": 0.5, "bandwidth_bytes_per_s": 50e9},
        {
            "params": 7e9,
            "ranks": 64,
            "compute_time_s": 0.5,
            "bandwidth_bytes_per_s": 50e9,
            "accumulation": 1e300,
        },
        {
            "params": 7e9,
            "ranks": 64,
            "compute_time_s": 0.5,
            "bandwidth_bytes_per_s": 50e9,
            "accumulation": 10**12,
        },
    ],
)
def test_ddp_step_finishes_fast_or_refuses(kwargs: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    try:
        out = cm.ddp_step(**kwargs)
    except ValueError as exc:
        assert str(exc)
    else:
        assert all(math.isfinite(x) for x in _numbers(out))
    assert time.perf_counter() - t0 < 10


@pytest.mark.timeout(60)
def test_a_huge_scenario_finishes_or_refuses() -> None:
    t0 = time.perf_counter()
    try:
        cm.Scenario(params=1e14, cluster="dgx-h100", nodes=2).evaluate()
    except ValueError as exc:
        assert "params" in str(exc) or "bucket" in str(exc)
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize(
    ("spec", "limit"),
    [({"ranks": "1..1e9"}, "values"), ({"size": "8B..16GB x1.0000001"}, "values")],
)
def test_sweep_grids_are_capped_before_allocating(spec: dict[str, str], limit: str) -> None:
    sweep = importlib.import_module("costmodel.sweep")

    axes = {"size": "1MB", "ranks": "8", "bandwidth": "50GB/s", **spec}
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=limit) as info:
        sweep.make_grid(axes)
    assert str(sweep.MAX_AXIS_VALUES) in str(info.value).replace(",", "").replace("_", "")
    assert time.perf_counter() - t0 < 10  # allocating 1e9 values first would take far longer


def test_sweep_grid_rows_are_capped() -> None:
    sweep = importlib.import_module("costmodel.sweep")

    with pytest.raises(ValueError, match="rows"):
        sweep.make_grid({"size": "1B..65536B+1", "ranks": "2..65537", "bandwidth": "1GB/s,2GB/s"})


def test_sweep_refuses_a_node_count_beyond_int64() -> None:
    sweep = importlib.import_module("costmodel.sweep")

    with pytest.raises(ValueError, match="nodes"):
        sweep.make_grid({"preset": "dgx-h100", "nodes": "99999999999999999999999", "size": "1MB"})


# --- the app: numbers from a shared URL -------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("page_file", "key"),
    [
        ("page_batch.py", "batch_ranks"),
        ("page_cluster.py", "cl_nodes"),
        ("page_collectives.py", "ranks"),
        ("page_ddp.py", "ddp_accumulation"),
        ("page_memory.py", "micro"),
    ],
)
def test_an_infinite_number_in_the_url_is_a_red_message(page_file: str, key: str) -> None:
    from tests.test_app import _text, open_page

    query = {key: "1e400"}
    if key == "ranks":  # the one-link view's box: the cluster view shows its answer's ranks
        query["view"] = "link"
    at = open_page(page_file, query)
    assert not at.exception, [e.value for e in at.exception]
    # shown escaped (web.common.error): read as the user sees it
    assert any(key in _text(e.value) and "1e400" in _text(e.value) for e in at.error)


# --- the CLI ----------------------------------------------------------------------------------
def _cli(*args: str) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from costmodel.cli import main; sys.exit(main())",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )


@pytest.mark.timeout(150)
def test_cli_huge_node_count_is_one_line_exit_2() -> None:
    r = _cli(
        "predict",
        "--op",
        "all_reduce",
        "--cluster",
        "dgx-h100",
        "--nodes",
        "99999999999999999999999",
        "--sizes",
        "1MB",
    )
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "nodes" in r.stderr


@pytest.mark.timeout(150)
def test_cli_memory_that_does_not_fit_is_an_answer() -> None:
    r = _cli(
        "memory", "--params", "70B", "--zero-stage", "1", "--ranks", "64", "--cluster", "dgx-h100"
    )
    assert r.returncode == 0, r.stderr
    assert re.search(r"^fits\s+no \(", r.stdout, re.M) and "total per GPU" in r.stdout


@pytest.mark.timeout(150)
def test_cli_help_keeps_square_brackets_and_scenario_options_have_help() -> None:
    assert "[s/B]" in _cli("collective", "--help").stdout
    assert "([grid] table)" in _cli("sweep", "--help").stdout
    import inspect
    from typing import get_type_hints

    from costmodel.cli import scenario

    hints = get_type_hints(scenario, include_extras=True)
    for name in inspect.signature(scenario).parameters:
        meta = [m for m in getattr(hints[name], "__metadata__", ()) if hasattr(m, "help")]
        assert meta and meta[0].help, f"scenario option {name} has no help text"
