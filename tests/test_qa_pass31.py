"""A notebook user's QA pass of ``import costmodel as cm``: bad and unusual input to the
hardware models, the step functions, the sweep, the formulas and the Validate page's reader.

Found and fixed here:

- ``cm.GPU(...)``, ``cm.Link(...)``, ``cm.Node(...)``, ``cm.Cluster(...)`` and
  ``cm.Architecture(...)`` refused with pydantic's multi-line report and its URL (a NaN
  ``compute_capability`` read "less than or equal to 12"): one line naming each field and its
  range (``HardwareError``, ``ArchitectureError``, on the ``OneLineValidationError`` base of
  ``LayoutError`` and ``ScenarioError``), still a ``pydantic.ValidationError``; a preset file's
  refusal keeps its words, the file named;
- ``ddp_step`` and ``strategy_step`` said ``mfu: must be in (0, 1]`` where the CLI, Scenario's
  sweep and every other surface say the ``LIMITS`` line;
- a sweep's NaN ``power_limit_w`` said ``must be a finite number >= 0``: the preset GPU's range
  now, as ``costmodel step --power-limit-w nan`` says it;
- ``collective_time`` (the formula) answered a ``gamma_s_per_byte`` of 1e-3 s/B (a 1 kB/s
  reduction) that ``collective --gamma`` and the sweep refuse;
- the Validate page's ``data.parse_log`` let the reader's ``ReplacedBytesWarning`` reach the
  server's stderr;
- a memory sweep with ``strategy = "hsdp"`` and no preset or ranks was refused asking for
  ``group_size`` where ``costmodel memory`` sizes one default node.

The fresh pass (edge inputs to 40-odd public functions) found and fixed:

- numpy's or Python's own errors: ``cm.cluster(..., power_limit_w=array)`` ("the truth value
  of an array ... is ambiguous"; a numpy integer was refused as no power),
  ``cm.prices_for_gpu(array)`` (the same), ``cm.load_arch(array)`` and ``cm.load_price(array)``
  ("unhashable type"), ``cm.predict_all_algorithms`` with a 2-D array ("axis remapping"),
  ``cm.strategy_memory("fsdp", 7e9)`` (an AttributeError), ``cm.strategy_step(arch, cluster)``
  (a TypeError naming the private ``_prepare_step``);
- misleading or multi-line words: ``cm.strategy_memory(7e9)`` said the parameter count was
  missing; a 2-D array was said over several lines (``format_bytes``, ``cluster``'s counts,
  ``solve_batch``, ``ddp_step``, ``training_cost``); ``Layout(ranks=1e300)`` (and Scenario's
  counts) said no range; ``billed_gpus_per_node(1e300)`` answered a 301-digit count and
  ``with_gpus_per_node(1e300)`` printed it; ``Scenario(power_limit_w=nan)`` said no range.
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pydantic
import pytest

import costmodel as cm
from costmodel import presets
from costmodel._limits import LIMITS

ROOT = Path(__file__).resolve().parents[1]
logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime": caches work in memory


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "costmodel", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "errors.pydantic.dev" not in text, text
    assert "validation error" not in text, text
    return text


# --- 1. the hardware and architecture models refuse in one line -----------------------------
_GPU = dict(
    name="x",
    architecture="hopper",
    compute_capability=9.0,
    memory_bytes="80GB",
    memory_bandwidth_bytes_per_s="3.35TB/s",
    fp16_dense_flops="989TFLOP/s",
    source="test",
)
_LINK = dict(
    name="l",
    kind="infiniband",
    generation="NDR",
    datasheet_bandwidth_bytes_per_s="400Gb/s",
    datasheet_direction="per_direction",
    latency_s="2.7us",
    source="test",
)


def _node(**kw):
    node = presets.cluster("dgx-h100").node.model_dump()
    return {**node, **kw}


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (
            lambda: cm.GPU(**{**_GPU, "memory_bytes": 0}),
            "memory_bytes: Input should be greater than 0; allowed: (0 B, 10 TB] (got 0)",
        ),
        (
            lambda: cm.GPU(**{**_GPU, "compute_capability": math.nan}),
            "compute_capability: Input should be a finite number; allowed: [7, 12] (got nan)",
        ),
        (
            lambda: cm.GPU(**{**_GPU, "memory_bytes": "-80GB"}),
            "memory_bytes: must be >= 0 bytes, got '-80GB'; allowed: (0 B, 10 TB]",
        ),
        (
            lambda: cm.GPU(**{**_GPU, "bf16_dense_flops": "1e30FLOP/s"}),
            "allowed: [1 GFLOP/s, 1,000 PFLOP/s] (got 1e+30)",
        ),
        (
            lambda: cm.Link(**{**_LINK, "latency_s": "5s"}),
            "latency_s: Input should be less than or equal to 1; allowed: [0 s, 1 s] (got 5.0)",
        ),
        (
            lambda: cm.Link(**{**_LINK, "efficiency": math.nan}),
            "efficiency: Input should be a finite number; allowed: (0, 1] (got nan)",
        ),
        (
            lambda: cm.Node(**_node(gpus_per_node=0)),
            "gpus_per_node: Input should be greater than or equal to 1; allowed: [1, 1,024]",
        ),
        (
            lambda: cm.Cluster(
                name="c", nodes=0, node=presets.cluster("dgx-h100").node, source="test"
            ),
            "nodes: Input should be greater than or equal to 1; allowed: [1, 1,000,000] (got 0)",
        ),
        (
            lambda: cm.Architecture(**{**cm.load_arch("llama-3.1-8b").model_dump(), "layers": 0}),
            "layers: Input should be greater than or equal to 1; allowed: [1, inf) (got 0)",
        ),
    ],
    ids=[
        "gpu-zero",
        "gpu-nan",
        "gpu-text",
        "gpu-huge",
        "link",
        "link-nan",
        "node",
        "cluster",
        "arch",
    ],
)
def test_a_hardware_model_refuses_in_one_line_with_the_range(build, says):
    with pytest.raises(pydantic.ValidationError) as info:
        build()
    assert isinstance(info.value, ValueError)  # as the base allows: both
    assert says in _one_line(info.value), str(info.value)
    assert info.value.errors()  # pydantic's own structure is kept


def test_a_nested_field_is_named_by_its_path_with_its_range():
    c = presets.cluster("dgx-h100").model_dump()
    c["node"]["gpu"]["memory_bytes"] = 0
    with pytest.raises(cm.hardware.HardwareError) as info:
        cm.Cluster(**c)
    assert str(info.value) == (
        "node.gpu.memory_bytes: Input should be greater than 0; allowed: (0 B, 10 TB] (got 0)"
    )
    assert info.value.title == "Cluster"


def test_an_architecture_missing_its_fields_lists_them_on_one_line():
    with pytest.raises(pydantic.ValidationError) as info:
        cm.Architecture(name="x")
    text = _one_line(info.value)
    assert type(info.value).__name__ == "ArchitectureError"
    assert text.startswith("description: Field required; family: Field required")


@pytest.mark.parametrize(
    "road", ["model_validate", "model_validate_json", "model_validate_strings"]
)
def test_every_road_into_a_gpu_refuses_in_one_line(road):
    data = {**_GPU, "memory_bytes": "0GB"}
    arg = json.dumps(data) if road == "model_validate_json" else data
    if road == "model_validate_strings":
        arg = {k: str(v) for k, v in data.items()}
    with pytest.raises(cm.hardware.HardwareError) as info:
        getattr(cm.GPU, road)(arg)
    assert _one_line(info.value).startswith("memory_bytes: ")


def test_a_preset_s_context_still_reaches_the_unit_check():
    """The one-line constructor must not drop ``model_validate``'s ``context`` (pydantic sends
    every road through a custom ``__init__``): a preset's bare number stays refused."""
    from costmodel.hardware import REQUIRE_UNITS

    data = {**_LINK, "datasheet_bandwidth_bytes_per_s": 50e9}
    assert cm.Link.model_validate(data).datasheet_bandwidth_bytes_per_s == 50e9
    with pytest.raises(pydantic.ValidationError, match="a unit is required in preset files"):
        cm.Link.model_validate(data, context={REQUIRE_UNITS: True})


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            ('"2.7us"', "2.7"),
            "latency_s: a unit is required in preset files: write a string such as '0.6us' or "
            "'2.7us', not the bare number 2.7",
        ),
        (('"400Gb/s"', '"0Gb/s"'), "datasheet_bandwidth_bytes_per_s: must be a finite rate in B/s > 0, got '0Gb/s'"),
        (('"2.7us"', '"5s"'), "latency_s: must be in [0 s, 1 s], got '5s'"),
    ],
)  # fmt: skip
def test_a_bad_preset_file_keeps_its_message_in_the_api_and_the_cli(tmp_path, edit, says):
    folder = tmp_path / "links"
    folder.mkdir()
    path = folder / "ib-ndr.toml"
    path.write_text((ROOT / "presets" / "links" / "ib-ndr.toml").read_text().replace(*edit))
    with pytest.raises(presets.PresetError) as info:
        presets.load("ib-ndr", dirs=[tmp_path])
    assert str(info.value).startswith(f"{path}: {says}"), str(info.value)
    r = _cli("--presets-dir", str(tmp_path), "presets", "list")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"costmodel: error: {path}: {says}"), r.stderr


# --- 2. mfu in the LIMITS line ------------------------------------------------------------------
_MFU_RULE = LIMITS["mfu"].rule


@pytest.mark.parametrize("mfu", [0, 1.5, -1, math.nan, math.inf, "abc", True])
@pytest.mark.parametrize("call", ["ddp_step", "strategy_step", "advise_strategy"])
def test_a_bad_mfu_is_refused_in_the_limits_line(call, mfu):
    calls = {
        "ddp_step": lambda: cm.ddp_step(
            7e9, 8, bandwidth_bytes_per_s=50e9, tokens_per_gpu=4096, peak_flops=989e12, mfu=mfu
        ),
        "strategy_step": lambda: cm.strategy_step(arch="llama-3.1-8b", mfu=mfu),
        "advise_strategy": lambda: cm.advise_strategy(arch="llama-3.1-8b", mfu=mfu),
    }
    with pytest.raises(ValueError) as info:
        calls[call]()
    assert str(info.value) == f"mfu: must be {_MFU_RULE}, got {mfu!r}"


def test_the_cli_says_the_same_mfu_rule():
    r = _cli("step", "--arch", "llama-3.1-8b", "--mfu", "1.5")
    assert r.returncode == 2
    assert f"--mfu: must be {_MFU_RULE}, got" in r.stderr, r.stderr


# --- 3. a NaN power_limit_w sweep axis ----------------------------------------------------------
def _power_refusal(value: float) -> str:
    from costmodel.hardware import check_power_limit_w

    with pytest.raises(ValueError) as info:
        check_power_limit_w(presets.cluster("dgx-h100").gpu, value)
    return str(info.value)


@pytest.mark.parametrize("value", [math.nan, "nan", [math.nan], math.inf, -5.0])
def test_a_power_limit_that_is_no_power_gets_the_gpu_s_range(value):
    with pytest.raises(ValueError) as info:
        cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", power_limit_w=value)
    got = value[0] if isinstance(value, list) else float(value)
    assert str(info.value) == _power_refusal(got)
    assert "must be a power in [200, 700] W" in str(info.value)
    assert ">= 0" not in str(info.value)


def test_the_sweep_and_the_step_command_say_a_nan_power_alike():
    r = _cli("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--power-limit-w", "nan")
    assert r.returncode == 2
    assert r.stderr.strip() == f"costmodel: error: --{_power_refusal(math.nan)}".replace(
        "--power_limit_w", "--power-limit-w"
    )


def test_a_power_range_with_a_nan_end_names_that_end():
    with pytest.raises(ValueError, match=r"its stop 'nan' is not"):
        cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", power_limit_w="200..nan")
    table = cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", power_limit_w="500")
    assert list(table["power_limit_w"]) == [500.0]


# --- 4. gamma bounded in the formula ------------------------------------------------------------
_GAMMA_RULE = LIMITS["gamma"].rule


@pytest.mark.parametrize("gamma", [1e-3, 1e300, -1.0, math.nan, math.inf])
@pytest.mark.parametrize("as_array", [False, True])
def test_collective_time_bounds_gamma_as_the_cli_does(gamma, as_array):
    from costmodel import collectives

    g = np.array([0.0, gamma]) if as_array else gamma
    for call in (
        lambda: collectives.collective_time("all_reduce", 1e9, 8, 50e9, gamma_s_per_byte=g),
        lambda: collectives.allreduce_ring(1e9, 8, 50e9, 0.0, g),
        lambda: collectives.crossover_bytes("ring", "tree", 8, 50e9, 1e-6, gamma_s_per_byte=g),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value).startswith(f"gamma_s_per_byte: must be {_GAMMA_RULE}, got ")


def test_a_gamma_at_the_limit_is_answered_and_the_cli_agrees():
    from costmodel import collectives

    t = collectives.collective_time("all_reduce", 1e9, 8, 50e9, gamma_s_per_byte=1e-6)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 50e9 + 7 / 8 * 1e9 * 1e-6)
    r = _cli("collective", "all_reduce", "--size", "1GB", "--ranks", "8", "--bandwidth",
             "50GB/s", "--gamma", "1e-3")  # fmt: skip
    assert r.returncode == 2 and f"--gamma: must be {_GAMMA_RULE}, got" in r.stderr, r.stderr


# --- 5. the Validate page's reader keeps the decoder's warning -----------------------------------
_LOG_13A = next((ROOT / "costmodel" / "data" / "reference" / "nccl-tests").glob("13a_*.txt"))


def _stray_log() -> bytes:
    return _LOG_13A.read_bytes().replace(b"# POSTER:", b"# POSTER \xe9:", 1)


def test_parse_log_returns_the_replaced_bytes_notice_instead_of_warning():
    import streamlit

    from costmodel.validation.logread import read_log
    from costmodel.web import data

    streamlit.cache_data.clear()
    raw = _stray_log()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning on stderr fails here
        first = data.parse_log(raw, "stray.log")
        again = data.parse_log(raw, "stray.log")  # the cached frame keeps it too
        assert data.detect_log_cluster(raw, "stray.log") == "dgx-h100"
    said = list(read_log(raw, "stray.log", cluster="dgx-h100").notices)
    assert first.attrs["notices"] == said == again.attrs["notices"]
    assert "not UTF-8" in said[0] and "replaced" in said[0]
    assert data.parse_log(_LOG_13A.read_bytes(), "clean.log").attrs["notices"] == []
    streamlit.cache_data.clear()


def test_the_validate_page_says_the_stray_byte_once_and_warns_nothing(monkeypatch):
    import streamlit

    from costmodel.validation.nccl_tests._common import ReplacedBytesWarning
    from tests.test_app_qa21 import _page

    streamlit.cache_data.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = _page(monkeypatch, "stray.log", _stray_log(), "dgx-h100")
    assert not [w for w in caught if issubclass(w.category, ReplacedBytesWarning)]
    shown = [w for w in page.warnings if "not UTF-8" in w]
    assert len(shown) == 1 and "replaced" in shown[0], page.warnings
    streamlit.cache_data.clear()


# --- 6. a memory sweep's hsdp on the default node -----------------------------------------------
@pytest.mark.parametrize("strategy", ["hsdp", "fsdp", "zero2"])
@pytest.mark.parametrize(
    ("api", "cli"),
    [
        ({"params": "7B"}, ("--params", "7B")),
        ({"arch": "llama-3.1-8b"}, ("--arch", "llama-3.1-8b")),
    ],
)
def test_a_memory_sweep_without_hardware_sizes_the_cli_s_default_node(strategy, api, cli):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = cm.sweep(kind="memory", strategy=strategy, **api).iloc[0]
    r = _cli("memory", *cli, "--strategy", strategy, "--json")
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout)
    assert row["memory_GB"] * 1e9 == said["memory_bytes"]
    assert int(row["ranks"]) == said["ranks"] == 8
    assert "assumed: 8 ranks, one node" in r.stderr
    assumed = [str(w.message) for w in caught if str(w.message).startswith("assumed: ")]
    if strategy == "hsdp":
        assert int(row["group_size"]) == said["group_size"] == 8
        assert row["layout"] == said["layout"] == "hsdp g=8"
        assert assumed == [
            "assumed: 8 ranks, one node of 8 GPUs, hsdp's group (the default; give `ranks` "
            "and `group_size`, or `preset` for one node of it, for another)"
        ]
    else:
        assert assumed == []


def test_hsdp_with_ranks_and_no_node_still_asks_for_its_group_as_the_cli_does():
    with pytest.raises(ValueError, match=r"^group_size: hsdp without preset needs"):
        cm.sweep(kind="memory", params="7B", strategy="hsdp", ranks=16)
    r = _cli("memory", "--params", "7B", "--strategy", "hsdp", "--ranks", "16")
    assert r.returncode == 2 and "--group-size: hsdp without --cluster needs" in r.stderr


def test_the_sweep_command_relays_the_assumption_as_a_warning(tmp_path):
    out = tmp_path / "m.csv"
    r = _cli("sweep", "--kind", "memory", "--set", "params=7B", "--set", "strategy=hsdp",
             "-o", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "costmodel: warning: assumed: 8 ranks, one node of 8 GPUs, hsdp's group" in r.stderr
    assert out.exists()


# --- the fresh pass: edge inputs to the public functions ------------------------------------------
_GRID = np.array([[1e6], [2e6]])  # a 2-D array: its repr spans lines


@pytest.mark.parametrize(
    ("call", "starts"),
    [
        (lambda: cm.format_bytes(_GRID), "value: expected one number to format, got an array of shape (2, 1)"),
        (lambda: cm.cluster("dgx-h100", nodes=_GRID), "nodes: one count per call, a whole number >= 1, got an array of shape (2, 1)"),
        (lambda: cm.solve_batch(global_batch=_GRID, ranks=8, accumulation=1), "global_batch: one whole number >= 1 per call"),
        (lambda: cm.ddp_step(_GRID, 8, compute_time_s=0.4, bandwidth_bytes_per_s=50e9), "params: expected a number, got an array of shape (2, 1)"),
        (lambda: cm.training_cost(_GRID, tokens_per_step=4e6, step_time_s=1.0, ranks=8, usd_per_gpu_hour=2.0), "tokens: expected a number, got an array of shape (2, 1)"),
        (lambda: cm.predict_all_algorithms("all_reduce", _GRID, "dgx-h100"), "message_bytes: expected one list of sizes (1-D), got an array of shape (2, 1)"),
        (lambda: cm.cluster("dgx-h100", power_limit_w=np.array([300.0, 400.0])), "power_limit_w: one power per call"),
        (lambda: cm.cluster("dgx-h100", power_limit_w=_GRID), "power_limit_w: one power per call, got an array of shape (2, 1)"),
        (lambda: cm.load_arch(np.array([1, 2])), "arch: expected one architecture name"),
        (lambda: cm.load_price(np.array([1, 2])), "price: expected one price preset name"),
        (lambda: cm.prices_for_gpu(np.array([1, 2])), "gpu: expected one GPU preset name"),
        (lambda: cm.prices_for_gpu(None), "gpu: expected one GPU preset name"),
        (lambda: cm.strategy_memory(7e9), "layout: expected a `cm.Layout`"),
        (lambda: cm.strategy_memory("fsdp", 7e9), "layout: expected a `cm.Layout`"),
        (lambda: cm.Layout(ranks=1e300), "ranks: Unable to parse input string as an integer, exceeded maximum size; allowed: [1, 1,000,000,000]"),
        (lambda: cm.billed_gpus_per_node(1e300), "gpus_per_node: must be a whole number in 1..1,024, got 1e+300"),
        (lambda: cm.cluster("dgx-h100").with_gpus_per_node(1e300), "gpus_per_node: dgx-h100 has 8 GPUs per node, got 1e+300;"),
    ],
    ids=["format", "nodes", "solve_batch", "ddp_step", "training_cost", "all_algorithms",
         "power-1d", "power-2d", "load_arch", "load_price", "prices_for_gpu", "prices-none",
         "memory-count", "memory-name", "layout-huge", "billed-huge", "slice-huge"],
)  # fmt: skip
def test_an_edge_input_is_refused_in_one_clear_line(call, starts):
    """Each raised numpy's or Python's own error (an ambiguous truth value, an unhashable
    array, an axis remapping, an AttributeError), or said a 2-D array over several lines, a
    301-digit count, or no range."""
    with pytest.raises(ValueError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text and text.startswith(starts), text
    assert len(text) < 400, text


def test_a_numpy_power_limit_is_one_power():
    for v in (np.int64(500), np.float32(500.0), np.array(500.0)):
        assert cm.cluster("dgx-h100", power_limit_w=v).gpu.power_limit_w == 500.0
    assert cm.prices_for_gpu(cm.cluster("dgx-h100").gpu) == cm.prices_for_gpu("h100-sxm")


def test_a_scenario_s_nan_power_limit_gets_the_gpu_s_range():
    with pytest.raises(cm.ScenarioError) as info:
        cm.Scenario(params="7B", power_limit_w=math.nan)
    assert str(info.value) == _power_refusal(math.nan)


def test_strategy_step_names_itself_for_a_second_positional_argument():
    with pytest.raises(TypeError) as info:
        cm.strategy_step("llama-3.1-8b", "dgx-h100")
    assert "_prepare_step" not in str(info.value)
    assert str(info.value).startswith("strategy_step: takes one positional argument")
    assert cm.strategy_step("llama-3.1-8b", cluster="dgx-h100").step_time_s > 0


def test_a_token_count_in_text_says_the_number_it_means():
    """``global_batch_from_tokens("4Mi", 4096)`` was refused with "..., e.g. 4Mi, got '4Mi'":
    the rule's own example, refused with no word of why (the API takes numbers)."""
    with pytest.raises(ValueError) as info:
        cm.global_batch_from_tokens("4Mi", 4096)
    assert str(info.value).endswith(
        "got '4Mi'; the API takes numbers: global_tokens=4194304 "
        "(costmodel.units.parse_tokens('4Mi'))"
    )
    assert cm.global_batch_from_tokens(4194304, 4096) == 1024


def test_ddp_step_says_the_number_a_duration_text_means():
    with pytest.raises(ValueError) as info:
        cm.ddp_step(7e9, 8, compute_time_s="400ms", bandwidth_bytes_per_s=50e9)
    assert str(info.value) == (
        "compute_time_s: expected a number, got '400ms'; the API takes numbers in SI units: "
        "compute_time_s=0.4 (cm.parse_duration('400ms'))"
    )


@pytest.mark.parametrize("contention", [1.5, -1, math.nan, "x"])
def test_ddp_step_says_a_bad_contention_in_the_limits_line(contention):
    """``ddp_step`` said "must be in [0, 1]" (and "a finite number >= 0" for a NaN) where
    ``step --contention`` and the sweep say the ``LIMITS`` line."""
    with pytest.raises(ValueError) as info:
        cm.ddp_step(
            7e9, 8, compute_time_s=0.4, bandwidth_bytes_per_s=50e9, comm_contention=contention
        )
    assert str(info.value) == (
        f"comm_contention: must be {LIMITS['contention'].rule}, got {contention!r}"
    )
