"""A new notebook user's pass over ``import costmodel as cm``.

What a notebook user leans on and what these tests check for every exported formula:
(1) numbers or numpy arrays in, numbers or arrays of the broadcast shape out: a Python scalar
gives a Python float, a 1-D array and a column against a row broadcast, float64 (never an object
array), the caller's arrays untouched, each element equal to the scalar call with that element's
inputs; (2) bad input (negative, zero ranks, NaN, inf, None, text, bool, an unknown name) raises a
ValueError whose message starts with the argument's name and says the allowed range, never a
silent NaN or a numpy traceback; (3) the lesson's worked example through the API, with the
numbers its docstrings print; (4) the API, the CLI and the sweep give the same number for the
same question (one road per model).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import costmodel as cm

GB = 1e9

# --- (1) every exported formula vectorizes ------------------------------------------------------
# Each formula as f(x, n): ``x`` a size-like input [B] (or what the formula takes in its place),
# ``n`` a count-like input; the other arguments fixed at plain numbers. Inputs chosen inside every
# formula's valid range so that the elementwise comparison below compares real values.
FORMULAS: dict[str, Callable[[Any, Any], Any]] = {
    "allreduce_time": lambda x, n: cm.allreduce_time(x, n, 50e9, 5e-6),
    "allreduce_time[tree]": lambda x, n: cm.allreduce_time(x, n, 50e9, 5e-6, "tree"),
    "collective_time[all_gather]": lambda x, n: cm.collective_time("all_gather", x, n, 50e9, 5e-6),
    "collective_time[broadcast]": lambda x, n: cm.collective_time(
        "broadcast", x, n, 50e9, 5e-6, "binomial_tree"
    ),
    "bytes_per_rank": lambda x, n: cm.bytes_per_rank("reduce_scatter", x, n),
    "bus_bandwidth": lambda x, n: cm.bus_bandwidth("all_reduce", x, n, 0.01),
    "algorithm_bandwidth": lambda x, n: cm.algorithm_bandwidth(x, np.multiply(n, 1e-3)),
    # busbw_factor takes no size: spread over the sizes' shape only when they are an array
    "busbw_factor": lambda x, n: (
        cm.busbw_factor("all_reduce", n)
        if np.ndim(x) == 0
        else cm.busbw_factor("all_reduce", n) * np.ones_like(x)
    ),
    "allreduce_lower_bound_bytes": lambda x, n: cm.allreduce_lower_bound_bytes(x, n),
    "crossover_bytes": lambda x, n: cm.crossover_bytes(
        "ring", "tree", n, 50e9, np.multiply(x, 1e-14)
    ),
    "hierarchical_allreduce_time": lambda x, n: cm.hierarchical_allreduce_time(
        x, n, 8, 450e9, 50e9, 1e-6, 5e-6
    ),
    "hierarchical_allreduce_time[pipelined]": lambda x, n: cm.hierarchical_allreduce_time(
        x, n, 8, 450e9, 50e9, 1e-6, 5e-6, mode="pipelined", in_network_reduction=True
    ),
    "flat_ring_allreduce_time": lambda x, n: cm.flat_ring_allreduce_time(
        x, n, 8, 450e9, 8, 50e9, 1e-6, 5e-6
    ),
    "max_params": lambda x, n: cm.max_params(np.multiply(x, 80), zero_stage=3, dp_ranks=n),
    "scale_learning_rate": lambda x, n: cm.scale_learning_rate(
        np.multiply(x, 1e-9), 256, np.multiply(n, 256)
    ),
}

SIZES = np.array([1e6, 3e8, 2e9])  # three sizes [B]
COUNTS = np.array([[2], [8], [64]])  # a column of rank (or node) counts


@pytest.mark.parametrize("name", list(FORMULAS))
def test_a_formula_takes_scalars_and_broadcasts_arrays_elementwise(name: str) -> None:
    f = FORMULAS[name]
    scalar = f(1e9, 8)
    # a Python scalar in gives a Python float out (a number the notebook prints as one)
    assert type(scalar) is float, (name, type(scalar))
    assert math.isfinite(scalar) or scalar == math.inf  # crossover: inf where none exists

    sizes, counts = SIZES.copy(), COUNTS.copy()
    row = f(sizes, 8)
    grid = f(sizes, counts)
    for out, shape in ((row, (3,)), (grid, (3, 3))):
        assert isinstance(out, np.ndarray), (name, type(out))
        assert out.shape == shape, (name, out.shape)
        assert out.dtype == np.float64, (name, out.dtype)  # no object or integer arrays
    # the caller's arrays are untouched
    np.testing.assert_array_equal(sizes, SIZES)
    np.testing.assert_array_equal(counts, COUNTS)
    # each element is the scalar call with that element's inputs (the fast scalar path and the
    # array path agree)
    for i, n in enumerate(COUNTS[:, 0]):
        for j, x in enumerate(SIZES):
            assert grid[i, j] == pytest.approx(f(float(x), int(n)), rel=1e-12), (name, i, j)
    np.testing.assert_allclose(row, grid[1], rtol=1e-12)


@pytest.mark.parametrize("name", list(FORMULAS))
def test_numpy_scalars_and_0d_arrays_give_a_float_and_int_arrays_give_floats(name: str) -> None:
    f = FORMULAS[name]
    expected = f(1e9, 8)
    for x, n in ((np.float64(1e9), np.int64(8)), (np.array(1e9), np.array(8))):
        out = f(x, n)
        assert type(out) is float, (name, type(out))
        assert out == pytest.approx(expected, rel=1e-12)
    ints = f(np.array([10**9, 2 * 10**9]), np.array([8, 8], dtype=np.int32))
    assert ints.dtype == np.float64, (name, ints.dtype)
    assert ints[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("model", ["nccl", "textbook", "lesson"])
def test_the_cluster_road_broadcasts_sizes_elementwise(model: str) -> None:
    c = cm.cluster("dgx-h100", nodes=2)
    sizes = np.array([[1e6, 1e9], [1e7, 3e8]])
    kept = sizes.copy()
    out = cm.allreduce_time(sizes, c, model=model)
    assert isinstance(out, np.ndarray) and out.shape == (2, 2) and out.dtype == np.float64
    np.testing.assert_array_equal(sizes, kept)
    scalar = [cm.allreduce_time(float(x), c, model=model) for x in sizes.ravel()]
    assert all(type(t) is float for t in scalar)
    np.testing.assert_allclose(out.ravel(), scalar, rtol=1e-12)
    for x in (np.float64(1e9), np.array(1e9)):
        assert type(cm.allreduce_time(x, c, model=model)) is float


def test_numpy_integers_from_a_table_work_wherever_a_count_goes() -> None:
    # a notebook takes counts out of arrays and DataFrames: numpy ints, not Python ints
    n64 = np.int64
    assert cm.cluster("dgx-h100", nodes=n64(4)).ranks == 32
    assert (
        cm.solve_batch(local_batch=n64(4), ranks=n64(64), global_batch=n64(8192)).accumulation == 32
    )
    assert cm.strategy_step(
        params=np.float64(7e9), nodes=n64(2), micro_batch=n64(2)
    ).step_time_s == (cm.strategy_step(params=7e9, nodes=2, micro_batch=2).step_time_s)
    assert cm.Scenario(params=np.float64(7e9), nodes=n64(8)).evaluate().step_time_s == (
        cm.Scenario(params=7e9, nodes=8).evaluate().step_time_s
    )


def test_global_batch_counts_are_whole_numbers_elementwise() -> None:
    # a batch is a count: int out for ints in, int64 arrays for arrays
    assert cm.global_batch(4, 256, 8) == 8192 and type(cm.global_batch(4, 256, 8)) is int
    ranks = np.array([[8], [64]])
    out = cm.global_batch(np.array([1, 4, 16]), ranks, 2)
    assert out.shape == (2, 3) and out.dtype == np.int64
    assert out.tolist() == [[16, 64, 256], [128, 512, 2048]]
    np.testing.assert_array_equal(ranks, [[8], [64]])


# --- (2) bad input: a ValueError naming the argument and its range ------------------------------
# (call with the bad value, the argument's name, the range the message states)
BAD_CALLS: list[tuple[str, Callable[[Any], Any], str, str]] = [
    (
        "message_bytes",
        lambda v: cm.allreduce_time(v, 8, 50e9),
        "message_bytes",
        "between 0 and 2**44 B",
    ),
    ("ranks", lambda v: cm.allreduce_time(1e9, v, 50e9), "ranks", "whole number in 1.."),
    (
        "bandwidth",
        lambda v: cm.allreduce_time(1e9, 8, v),
        "bandwidth_bytes_per_s",
        "1 MB/s..1 PB/s",
    ),
    ("latency", lambda v: cm.allreduce_time(1e9, 8, 50e9, v), "latency_s", "0..1 s"),
    ("time_s", lambda v: cm.bus_bandwidth("all_reduce", 1e9, 8, v), "time_s", "> 0 s"),
    # the range every command and cm.cluster hold (it said ">= 1", no upper bound)
    (
        "nodes",
        lambda v: cm.flat_ring_allreduce_time(1e9, v, 8, 450e9, 8, 50e9),
        "nodes",
        "1..1,000,000",
    ),
    (
        "intra_bw",
        lambda v: cm.hierarchical_allreduce_time(1e9, 2, 8, v, 50e9),
        "intra_bandwidth_bytes_per_s",
        "1 MB/s..1 PB/s",
    ),
    ("memory_bytes", lambda v: cm.max_params(v), "memory_bytes", "> 0 B"),
    ("dp_ranks", lambda v: cm.max_params(80e9, dp_ranks=v), "dp_ranks", "whole number in 1.."),
    (
        "activations",
        lambda v: cm.training_memory(7e9, activations_bytes=v).total_bytes,
        "activations_bytes",
        ">= 0 B",
    ),
    ("base_lr", lambda v: cm.scale_learning_rate(v, 256, 512), "base_lr", "> 0"),
    ("new_batch", lambda v: cm.scale_learning_rate(0.1, 256, v), "new_batch", "> 0"),
]
BAD_VALUES = {
    "negative": -1.0,
    "nan": float("nan"),
    "inf": float("inf"),
    "nan-in-array": np.array([1.0, float("nan")]),
    "bool": True,
}


@pytest.mark.parametrize("value", list(BAD_VALUES.values()), ids=list(BAD_VALUES))
@pytest.mark.parametrize(
    ("call", "name", "rule"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS]
)
def test_bad_numbers_are_refused_naming_the_argument(call, name, rule, value) -> None:  # fmt: skip
    with pytest.raises(ValueError) as err:
        call(value)
    message = str(err.value)
    assert message.startswith(f"{name}: "), message
    if value is not True:  # a bool is refused as no number at all
        assert rule in message, message


# None is a value where it means "not given" (activations_bytes: from arch=, else 0;
# bandwidth_bytes_per_s: "required when ranks is a number", the Cluster road needs none)
NONE_REFUSED = [c for c in BAD_CALLS if c[0] not in ("activations", "bandwidth")]


@pytest.mark.parametrize(
    ("call", "name"), [c[1:3] for c in NONE_REFUSED], ids=[c[0] for c in NONE_REFUSED]
)
def test_none_is_refused_as_no_number_not_as_nan(call, name) -> None:  # fmt: skip
    """``np.asarray(None, dtype=float)`` is NaN: a None (a cell left empty in a notebook) was
    refused as "ranks: must be a whole number >= 1, got nan", a value the user never typed.
    It now says what it got: "expected a number ..., got None"."""
    with pytest.raises(ValueError) as err:
        call(None)
    message = str(err.value)
    assert message.startswith(f"{name}: "), message
    assert "got None" in message and "nan" not in message, message


def test_a_bandwidth_left_out_over_one_link_is_required_by_name() -> None:
    with pytest.raises(
        ValueError, match=r"^bandwidth_bytes_per_s: required when ranks is a number"
    ):
        cm.allreduce_time(1e9, 8)


@pytest.mark.parametrize(
    ("call", "name"), [c[1:3] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS]
)
def test_text_is_refused_as_no_number(call, name) -> None:  # fmt: skip
    with pytest.raises(ValueError) as err:
        call("lots")
    assert str(err.value).startswith(f"{name}: "), err.value
    assert "'lots'" in str(err.value)


def test_zero_ranks_and_fractional_ranks_are_refused() -> None:
    """``dp_ranks=0`` said "must be a finite number > 0" and ``dp_ranks=1.5`` "must be a whole
    number in 1..1,000,000,000": two rules for one count. Now the one rule, the CLI's --ranks.
    ``ddp_step``'s ``ranks`` and ``accumulation`` the same: 0 and NaN said "> 0" (which 0.5
    meets), 2.5 "a whole number >= 1"; now every bad count gets the whole-number rule."""
    for ranks in (0, 1.5, -2, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"^ranks: must be a whole number in 1\.\."):
            cm.allreduce_time(1e9, ranks, 50e9)
        with pytest.raises(ValueError, match=r"^ranks: must be a whole number in 1\.\."):
            cm.busbw_factor("all_reduce", ranks)
        with pytest.raises(ValueError, match=r"^dp_ranks: must be a whole number in 1\.\."):
            cm.training_memory(7e9, zero_stage=3, dp_ranks=ranks)
        with pytest.raises(ValueError, match=r"^ranks: must be a whole number in 1\.\."):
            cm.global_batch(4, ranks, 1)
        with pytest.raises(
            ValueError, match=r"^ranks: must be a whole number in 1\.\.1,000,000,000,"
        ):
            cm.ddp_step(7e9, ranks, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
        with pytest.raises(ValueError, match=r"^accumulation: must be a whole number >= 1"):
            cm.ddp_step(7e9, 8, compute_time_s=0.4, bandwidth_bytes_per_s=50e9, accumulation=ranks)


@pytest.mark.parametrize(
    ("call", "starts", "lists"),
    [
        (lambda: cm.cluster("dgx-h1000"), "name: unknown cluster preset 'dgx-h1000'", "dgx-h100"),
        (
            lambda: cm.predict_collective("all_reduce", 1e9, "dgx-h1000"),
            "cluster: unknown cluster preset 'dgx-h1000'",
            "dgx-h100",
        ),
        (lambda: cm.load_arch("llama-9"), "arch: unknown architecture 'llama-9'", "llama-"),
        (lambda: cm.load_price("nope"), "price: unknown price preset 'nope'", "aws-p5-on-demand"),
        (lambda: cm.collective_time("scatter", 1e9, 8, 50e9), "op: ", "all_gather"),
        (lambda: cm.allreduce_time(1e9, 8, 50e9, algorithm="ringg"), "algorithm: 'ringg'", "tree"),
        (lambda: cm.training_memory(7e9, recipe="adam"), "recipe: unknown recipe 'adam'", "mixed-adam"),
        # crossover_bytes has two algorithms: the refusal names the one that is wrong (it said
        # "algorithm: ...", an argument the function does not have)
        (
            lambda: cm.crossover_bytes("ring", "tree", 8, 50e9, 5e-6, op="reduce_scatter"),
            "algorithm_b: unknown algorithm 'tree' for reduce_scatter",
            "halving",
        ),
        (lambda: cm.crossover_bytes("rign", "tree", 8, 50e9, 5e-6), "algorithm_a: unknown algorithm 'rign'", "ring"),
        (lambda: cm.training_memory(7e9, zero_stage=4), "zero_stage: must be one of", "3"),
        (
            lambda: cm.strategy_step(arch="llama-2-7b", cluster="dgx-h100", strategy="zero4"),
            "strategy: unknown 'zero4'",
            "fsdp",
        ),
    ],
)  # fmt: skip
def test_an_unknown_name_lists_the_valid_ones(call, starts, lists) -> None:
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(starts), err.value
    assert lists in str(err.value), err.value


def test_a_cluster_road_refuses_none_and_nan_sizes_by_name() -> None:
    c = cm.cluster("dgx-h100", nodes=2)
    for bad in (None, float("nan"), -1.0):
        with pytest.raises(ValueError, match=r"^message_bytes: must be between 0 and 2\*\*44 B"):
            cm.allreduce_time(bad, c)
        with pytest.raises(ValueError, match=r"^message_bytes: "):
            cm.predict_collective("all_reduce", bad, c)


def test_scenario_refusals_are_pydantic_checks_naming_the_field() -> None:
    for kwargs, field in (
        (dict(nodes=0), "nodes"),
        (dict(nodes=float("nan")), "nodes"),
        (dict(params=-7e9), "params"),
        (dict(mfu=2.0), "mfu"),
        (dict(nodez=2), "nodez"),
    ):
        with pytest.raises(cm.ScenarioError) as err:
            cm.Scenario(**{"params": 7e9, "cluster": "dgx-h100", **kwargs})
        assert str(err.value).startswith(f"{field}: "), err.value
        assert isinstance(err.value, ValueError)


# --- (3) the lesson's worked example through the API --------------------------------------------
def test_the_7b_gradient_allreduce_is_0_551_s_on_every_road() -> None:
    """Practice problem 1a: 7B bf16 gradients (14 GB) all-reduced by a ring over 64 ranks at
    50 GB/s per GPU: 2 (63/64) 14e9 / 50e9 = 0.55125 s, the 0.551 the package docstring prints."""
    exact = 2 * 63 / 64 * 14e9 / 50e9
    assert cm.allreduce_time(14e9, 64, 50e9) == pytest.approx(exact, rel=1e-15)
    assert round(cm.allreduce_time(14e9, 64, 50e9), 3) == 0.551
    assert cm.collective_time("all_reduce", 14e9, 64, 50e9) == cm.allreduce_time(14e9, 64, 50e9)
    # 27.6 GB per GPU, the lesson's figure, is the ring's bytes and its lower bound
    assert cm.bytes_per_rank("all_reduce", 14e9, 64) == pytest.approx(27.5625e9, rel=1e-15)
    assert cm.allreduce_lower_bound_bytes(14e9, 64) == cm.bytes_per_rank("all_reduce", 14e9, 64)
    # the DDP step of practice 1b communicates exactly that all-reduce (no latency, no buckets' alpha)
    step = cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)
    assert step.comm_s == pytest.approx(exact, rel=1e-9)
    assert step.bound == "comms"


def test_the_readme_python_lines_give_the_numbers_their_comments_say() -> None:
    assert cm.bytes_per_rank("all_reduce", 500e6, 8) == pytest.approx(875e6, rel=1e-15)
    assert round(cm.allreduce_time(14e9, 64, 50e9, algorithm="nvls"), 3) == 0.284
    # ring vs tree at 512 ranks, 5 us: the tree's 2 log2(N) alpha against the ring's 2 (N-1) alpha
    m = cm.crossover_bytes("ring", "tree", 512, 50e9, 5e-6)
    assert cm.allreduce_time(m / 10, 512, 50e9, 5e-6, "tree") < cm.allreduce_time(
        m / 10, 512, 50e9, 5e-6, "ring"
    )
    assert cm.allreduce_time(m * 10, 512, 50e9, 5e-6, "ring") < cm.allreduce_time(
        m * 10, 512, 50e9, 5e-6, "tree"
    )


# --- (4) one road: the API, the CLI and the sweep agree -----------------------------------------
def _cli_json(*args: str) -> Any:
    from tests._cli import run

    result = run(*args, "--json")
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    return json.loads(result.stdout)


def test_one_link_allreduce_is_the_same_number_on_api_cli_and_sweep() -> None:
    api = cm.allreduce_time(14e9, 64, 50e9)
    (row,) = _cli_json(
        "collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s"
    )["results"]
    sweep = cm.sweep(op="all_reduce", size="14GB", ranks=64, bandwidth="50GB/s")
    assert row["time_s"] == api
    assert sweep["time_s"].tolist() == [api]


def test_a_cluster_collective_is_the_same_number_on_api_cli_and_sweep() -> None:
    c = cm.cluster("dgx-h100", nodes=4)
    api = cm.predict_collective("all_gather", 2**30, c)
    assert cm.collective_time("all_gather", 2**30, c, model="nccl") == api.time_s
    (row,) = _cli_json(
        "collective", "all_gather", "--size", "1GiB", "--cluster", "dgx-h100", "--nodes", "4"
    )["results"]
    sweep = cm.sweep(preset="dgx-h100", nodes=4, size="1GiB", op="all_gather")
    assert row["time_s"] == api.time_s
    assert sweep["time_s"].tolist() == [api.time_s]
    assert row["algorithm_used"] == api.algorithm == sweep["algorithm_used"].iloc[0]


def test_a_step_is_the_same_number_on_api_cli_and_sweep() -> None:
    api = cm.strategy_step(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="fsdp")
    cli = _cli_json(
        "step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2",
        "--strategy", "fsdp",
    )  # fmt: skip
    sweep = cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=2, strategy="fsdp")
    for key in ("step_time_s", "comm_s", "compute_s"):
        assert cli[key] == getattr(api, key), key
        assert sweep[key].tolist() == [getattr(api, key)], key
    assert cli["memory_bytes"] == api.memory_bytes


def test_a_scenario_is_the_same_step_on_api_and_cli() -> None:
    api = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=8).evaluate()
    cli = _cli_json("scenario", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "8")
    step = cm.strategy_step(params=7e9, cluster="dgx-h100", nodes=8)
    assert cli["step_time_s"] == api.step_time_s == step.step_time_s


def test_memory_and_batch_are_the_same_numbers_on_api_cli_and_sweep() -> None:
    from costmodel.strategy.memory import stage_memory

    api = stage_memory(3, 16, params=7e9)
    cli = _cli_json("memory", "--params", "7B", "--zero", "3", "--ranks", "16")
    sweep = cm.sweep(kind="memory", params="7B", zero_stage=3, ranks=16)
    assert cli["memory_bytes"] == api.total_bytes
    assert sweep["memory_GB"].tolist() == [pytest.approx(api.total_bytes / GB, rel=1e-15)]
    # the lesson's closed form, beside it on both surfaces
    lesson = cm.training_memory(7e9, zero_stage=3, dp_ranks=16).total_bytes
    assert cli["lesson_memory_bytes"] == lesson == 7 * GB
    assert sweep["lesson_memory_GB"].tolist() == [7.0]

    batch = _cli_json("batch", "--local-batch", "4", "--ranks", "64", "--global-batch", "8192")
    solved = cm.solve_batch(local_batch=4, ranks=64, global_batch=8192)
    assert batch["accumulation"] == solved.accumulation == 32


# --- docstrings: every exported function shows its use in a doctest ---------------------------
# (the doctests themselves run under pytest --doctest-modules, pyproject's addopts)
NO_DOCTEST = {
    # reads a user's config.json from disk: tests/test_hf_config.py covers it with files
    "load_hf_config": "needs a file",
    # a whole step on a cluster: its numbers move with every fitted constant, so the README's
    # example (run by the README test) shows it without a printed value
    "strategy_step": "README example",
}


def test_every_exported_function_has_a_doctest_example() -> None:
    import inspect

    missing = []
    for name in sorted(cm._EXPORTS):
        obj = getattr(cm, name)
        if inspect.isclass(obj) or not callable(obj) or name in NO_DOCTEST:
            continue
        if ">>>" not in (inspect.getdoc(obj) or ""):
            missing.append(name)
    assert missing == [], missing


def test_the_format_examples_read_the_lesson_figures_back() -> None:
    assert cm.format_bytes(cm.bytes_per_rank("all_reduce", 14e9, 64)) == "27.6 GB"
    assert cm.format_duration(cm.allreduce_time(14e9, 64, 50e9)) == "551 ms"
    assert cm.format_rate(cm.parse_rate("400Gb/s")) == "50 GB/s"
    arch = cm.load_arch("llama-2-7b")
    assert cm.load_arch(arch) is arch  # an Architecture passes through


def test_advise_strategy_takes_strategy_names_as_well_as_layout_dicts() -> None:
    """``strategies=["ddp", "fsdp"]`` failed with Python's "'str' object is not a mapping"
    (only dicts of layout keywords were read). A name is now ``{"strategy": name}``."""
    kw = dict(params=7e9, cluster="dgx-h100", nodes=2, model="lesson")
    by_name = cm.advise_strategy(strategies=["ddp", "fsdp"], **kw)
    by_dict = cm.advise_strategy(strategies=[{"strategy": "ddp"}, {"strategy": "fsdp"}], **kw)
    assert by_name.as_dict() == by_dict.as_dict()
    assert {r["layout"] for r in by_name.rows()} == {"ddp", "fsdp"}
    per_nodes = cm.advise_strategy_nodes(strategies=["ddp", "fsdp"], **{**kw, "nodes": [2]})
    assert per_nodes[2].as_dict() == by_name.as_dict()
    with pytest.raises(ValueError, match=r"^strategy: unknown 'zero9'; allowed: ddp"):
        cm.advise_strategy(strategies=["ddp", "zero9"], **kw)
    with pytest.raises(ValueError, match=r"^strategies: each entry a strategy name \(ddp, "):
        cm.advise_strategy(strategies=[3], **kw)


def test_a_bad_tensor_size_is_said_as_a_number_and_its_place() -> None:
    """``bucket_assignment([1e6, -1])`` said "got np.float64(-1.0) at 1" (numpy 2's repr of a
    numpy scalar); now "got -1.0 (element 1 of 2)", as the formulas say an array's bad element."""
    with pytest.raises(ValueError) as err:
        cm.bucket_assignment([1e6, -1])
    assert str(err.value) == (
        "param_bytes: every entry must be a finite number > 0, got -1.0 (element 1 of 2)"
    )
    with pytest.raises(ValueError, match=r"got nan \(element 0 of 1\)$"):
        cm.ddp_step(
            1e6, 8, compute_time_s=0.1, bandwidth_bytes_per_s=50e9, layer_param_counts=[np.nan]
        )
