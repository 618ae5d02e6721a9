"""Reliability under hostile input: the defects still open after the first pass.

Every flag takes real booleans only (a walk over every public signature finds each bool
parameter, so a new one cannot slip), one error type (ValueError naming the field) for every
bad value, bounded user presets. Fast: each case refuses before any model runs.
"""

from __future__ import annotations

import decimal
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

import costmodel as cm
from costmodel import presets
from tests.test_reliability_inputs import VALID

_SCENARIO = {"params": "7B", "nodes": 2}

# every public callable with a bool parameter -> a valid call taking overriding keywords
BOOL_CALLS: dict[str, Callable[..., Any]] = {
    **{
        name: (lambda name=name, **kw: getattr(cm, name)(**{**VALID[name], **kw})) for name in VALID
    },
    "Scenario.evaluate": lambda **kw: cm.Scenario(**_SCENARIO).evaluate(**kw),
    "Architecture.activation_bytes": lambda **kw: cm.load_arch("gpt2-124m").activation_bytes(
        1024, 1, **kw
    ),
    "Architecture.activation_parts": lambda **kw: cm.load_arch("gpt2-124m").activation_parts(
        1024, 1, **kw
    ),
    "Architecture.activation_bytes_per_token": lambda **kw: cm.load_arch(
        "gpt2-124m"
    ).activation_bytes_per_token(1024, **kw),
    "Scenario.strategy_step": lambda **kw: cm.Scenario(**_SCENARIO).strategy_step(**kw),
    "strategy_step": lambda **kw: cm.strategy_step(1e9, strategy="fsdp", model="lesson", **kw),
    "advise_strategy": lambda **kw: cm.advise_strategy(1e9, model="lesson", **kw),
    "advise_strategy_nodes": lambda **kw: cm.advise_strategy_nodes(
        1e9, nodes=(1,), model="lesson", **kw
    ),
    "strategy_memory": lambda **kw: cm.strategy_memory(
        cm.Layout(strategy="fsdp", ranks=8), 1e9, **kw
    ),
}


def _is_bool_parameter(p: inspect.Parameter) -> bool:
    return isinstance(p.default, bool) or "bool" in str(p.annotation)


def _public_bool_parameters() -> list[tuple[str, str]]:
    """(callable, parameter) for every bool parameter of costmodel's public functions and of the
    methods its public classes define (pydantic's own methods left out: fields are below)."""
    out = []
    for name in sorted(cm._EXPORTS):
        obj = getattr(cm, name)
        targets: list[tuple[str, Any]] = []
        if inspect.isclass(obj):
            targets += [
                (f"{name}.{m}", f)
                for m, f in vars(obj).items()
                if not m.startswith("_") and inspect.isfunction(f)
            ]
        elif callable(obj):
            targets.append((name, obj))
        for qual, fn in targets:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                continue
            out += [(qual, p.name) for p in sig.parameters.values() if _is_bool_parameter(p)]
    return out


BOOL_PARAMETERS = _public_bool_parameters()


def test_the_walk_finds_the_known_flags() -> None:
    """The walk itself works: the flags the issue names are among those it finds."""
    found = set(BOOL_PARAMETERS)
    for case in [
        ("training_memory", "ddp_bucket_copy"),
        ("max_params", "ddp_bucket_copy"),
        ("Scenario.evaluate", "scaling"),
        ("Scenario.evaluate", "flips"),
        ("predict_collective", "nvls"),
    ]:
        assert case in found


def test_every_bool_parameter_has_a_call_here() -> None:
    """A new public bool parameter must be added to BOOL_CALLS (and so to the test below)."""
    missing = sorted({q for q, _ in BOOL_PARAMETERS} - set(BOOL_CALLS))
    assert not missing, missing


@pytest.mark.parametrize(("qual", "param"), BOOL_PARAMETERS)
@pytest.mark.parametrize("value", ["False", "no", "true", 1, 0, 1.0, np.int64(0), [1]])
def test_every_flag_takes_real_booleans_only(qual: str, param: str, value: Any) -> None:
    with pytest.raises(ValueError, match=param):
        BOOL_CALLS[qual](**{param: value})


@pytest.mark.parametrize("qual", sorted({q for q, _ in BOOL_PARAMETERS}))
def test_real_booleans_are_accepted(qual: str) -> None:
    """The refusals above are about the value: the same calls with the defaults answer."""
    if qual == "Scenario.evaluate":  # the full evaluation: refusal is what matters; one cheap call
        out = BOOL_CALLS[qual](scaling=False, flips=False, timeline=False)
    else:
        out = BOOL_CALLS[qual]()
    assert out is not None


def test_ddp_bucket_copy_no_is_refused_not_switched_on() -> None:
    """'no' was truthy: 126e9 B instead of 112e9 B for 7B parameters."""
    assert cm.training_memory(7e9).total_bytes == 112e9
    assert cm.training_memory(7e9, ddp_bucket_copy=True).total_bytes == 126e9
    with pytest.raises(ValueError, match="ddp_bucket_copy"):
        cm.training_memory(7e9, ddp_bucket_copy="no")


def _pydantic_bool_fields() -> list[tuple[str, str]]:
    out = []
    for name in sorted(cm._EXPORTS):
        obj = getattr(cm, name)
        if inspect.isclass(obj) and issubclass(obj, BaseModel):
            out += [(name, f) for f, info in obj.model_fields.items() if info.annotation is bool]
    return out


@pytest.mark.parametrize(("cls", "field"), _pydantic_bool_fields())
def test_model_bool_fields_never_read_false_text_as_true(cls: str, field: str) -> None:
    """Pydantic fields parse text by meaning ('no', 'False', 'off' are False) and refuse junk:
    no truthy string switches a feature on."""
    model = getattr(cm, cls)
    for value in ("False", "no", "off", "0", "maybe", "x" * 100, 2, 0.5):
        try:
            if cls == "Scenario":
                obj = model(**{**_SCENARIO, field: value})
            else:
                base = {
                    "Node": lambda: cm.cluster("dgx-h100").node,
                    "Architecture": lambda: cm.load_arch("gpt2-124m"),
                }[cls]()
                obj = model.model_validate({**dict(base), field: value})
        except (ValidationError, ValueError):
            continue
        assert getattr(obj, field) is False, (cls, field, value)


# --- one error type for every bad value -----------------------------------------------------
ESCAPED = (OverflowError, ZeroDivisionError, decimal.InvalidOperation, OSError, RecursionError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: cm.max_params(80e9, activations_bytes=1e300),
        lambda: cm.predict_collective("all_reduce", 1e6, "dgx-h100", gpus_per_process=math.inf),
        lambda: cm.predict_collective("all_reduce", 1e6, "dgx-h100", gpus_per_process=1e300),
        lambda: cm.Scenario(params="7B", nodes=8, compute_time_s=5e-324).evaluate(
            scaling=False, flips=False
        ),
        lambda: cm.training_memory(True),
        lambda: cm.training_memory(decimal.Decimal("NaN")),
        lambda: cm.allreduce_time(decimal.Decimal("NaN"), 8, 50e9),
        lambda: cm.allreduce_time(decimal.Decimal("sNaN"), 8, 50e9),
        lambda: cm.training_memory(7e9, dp_ranks=decimal.Decimal("NaN")),
        lambda: cm.parse_bytes(decimal.Decimal("NaN")),
        lambda: cm.cluster("dgx-h100", dirs="x" * 10_000),
        lambda: cm.cluster("x" * 10_000 + ".toml"),
    ],
)
def test_a_bad_value_is_a_value_error_nothing_else(call: Callable[[], Any]) -> None:
    try:
        out = call()
    except ValueError as exc:
        assert str(exc).strip()
        assert len(str(exc)) < 2_000  # a 10,000-character input is not echoed whole
        return
    except ESCAPED as exc:  # pragma: no cover - the failure this test is for
        pytest.fail(f"{type(exc).__name__} escaped: {exc}")
    assert out is not None  # an answer is fine, if it is one (max_params: 0.0, nothing fits)


def test_max_params_with_huge_activations_is_zero() -> None:
    assert cm.max_params(80e9, activations_bytes=1e300) == 0.0
    # the largest GPU memory the limits take (16 TiB; 1e301 B is refused as memory_bytes)
    assert cm.max_params(np.array([80e9, 2.0**44]), activations_bytes=1e300).tolist() == [0.0, 0.0]


def test_bool_is_refused_like_in_allreduce_time() -> None:
    for fn in (lambda v: cm.training_memory(v), lambda v: cm.allreduce_time(v, 8, 50e9)):
        with pytest.raises(ValueError):
            fn(True)


# --- bounded user presets ---------------------------------------------------------------------
def _folder(tmp_path: Path, text: str) -> Path:
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "x.toml").write_text(text)
    return tmp_path


def test_a_deeply_nested_preset_is_a_clear_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(presets.PresetError, match=r"nests .* 100000 deep; allowed: at most 32"):
        presets.names("cluster", dirs=folder)


def test_a_huge_preset_is_refused_before_reading(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "")
    with (tmp_path / "clusters" / "x.toml").open("wb") as fh:
        fh.truncate(30_000_000)  # 30 MB (sparse): refused from its size, never read
    with pytest.raises(presets.PresetError, match=r"30,000,000 bytes; allowed: at most 1,000,000"):
        presets.names("cluster", dirs=folder)


def test_nesting_ignores_brackets_in_strings_and_comments() -> None:
    text = 'a = [[1], {b = "[[[[[["}]  # [[[[[[[\nc = """\n[[[[[[\n"""\n[t]\n[[u]]\n'
    assert presets.toml_nesting(text) == 2
    assert presets.toml_nesting("a = " + "[" * 33 + "]" * 33) == 33


# --- plausibility bounds ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"usd_per_gpu_hour": 1e308}, "usd_per_gpu_hour"),
        ({"usd_per_gpu_hour": 1e300}, "usd_per_gpu_hour"),
        ({"step_time_s": 1e30}, "step_time_s"),
    ],
)
def test_training_cost_refuses_implausible_prices_and_steps(
    change: dict[str, float], field: str
) -> None:
    """1e308 USD per GPU-hour gave cost inf; the CLI and the app share these bounds."""
    with pytest.raises(ValueError, match=field):
        cm.training_cost(**{**VALID["training_cost"], **change})


def test_parse_bytes_refuses_fractional_bytes() -> None:
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        cm.parse_bytes("1.5B")
    assert cm.parse_bytes("1.5KB") == 1500
