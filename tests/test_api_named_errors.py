"""Bad numeric input to the public API (``costmodel/__init__.py``'s exports) is a ValueError
naming the argument, never Python's TypeError/OverflowError from inside a formula.

Each case was found by probing every export with 0, -1, NaN, +-inf, a string, None, a bool, a
list and a dict in place of one numeric argument; the ones listed here leaked a TypeError
("'int' object is not iterable", "unhashable type", "float() argument must be ...", numpy's
"only 0-dimensional arrays can be converted") or an OverflowError naming nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import costmodel as cm
from costmodel.predict import fitted_params

H100 = "dgx-h100"
LAYOUT = dict(strategy="ddp", ranks=8)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, 7e9, True, [1, 2], "abc"])
@pytest.mark.parametrize("fn", ["predict_collective", "predict_all_algorithms"])
def test_params_of_a_collective_must_be_a_mapping(fn, bad):
    """``predict_collective(params=0)`` raised "'int' object is not iterable": ``params`` is
    the correction parameters, not a model's parameter count."""
    with pytest.raises(ValueError, match=r"^params: must be a mapping of correction parameters"):
        getattr(cm, fn)("all_reduce", 2**20, H100, params=bad)


def test_a_number_given_as_params_says_a_collective_takes_no_parameter_count():
    with pytest.raises(ValueError, match="a collective takes no parameter count"):
        cm.predict_collective("all_reduce", 2**20, H100, params=7e9)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"host_base_us": "x"}, r"^params\['host_base_us'\]: must be a finite number >= 0"),
        ({"ramp_phi": math.nan}, r"^params\['ramp_phi'\]: must be a finite number >= 0"),
        ({"a2a_net_efficiency": -1.0}, r"^params\['a2a_net_efficiency'\]: must be a finite"),
        ({"ring_nic_fraction": 3}, r"^params\['ring_nic_fraction'\]: must be a mapping of fabric"),
        ({"fabric_latency_us": {"efa": math.inf}}, r"^params\['fabric_latency_us'\]: must be"),
        ({"host_base_uss": 1.0}, r"^params: unknown keys \['host_base_uss'\]"),
    ],
)
def test_each_correction_parameter_is_checked_by_name(change, message):
    params = {**fitted_params(), **change}
    with pytest.raises(ValueError, match=message):
        cm.predict_collective("all_reduce", 2**20, H100, params=params)


def test_the_fitted_params_themselves_still_answer_the_same():
    a = cm.predict_collective("all_reduce", [2**20, 2**30], H100, nodes=2)
    b = cm.predict_collective("all_reduce", [2**20, 2**30], H100, nodes=2, params=fitted_params())
    assert np.array_equal(a.time_s, b.time_s)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cm.predict_collective("all_reduce", 1e6, H100, algorithm=[1, 2]), "^algorithm:"),
        (lambda: cm.predict_collective("all_reduce", 1e6, H100, protocol={"a": 1}), "^protocol:"),
        (lambda: cm.predict_collective("all_reduce", 1e6, H100, model=["nccl"]), "^model"),
        (lambda: cm.strategy_step(7e9, first_bucket_bytes=None), "^first_bucket_bytes:"),
        (lambda: cm.strategy_step(7e9, first_bucket_bytes=[1, 2]), "^first_bucket_bytes:"),
        (lambda: cm.strategy_step(7e9, tensor_params=0), "^tensor_params:"),
        (lambda: cm.strategy_step(7e9, tensor_params=[1e9, math.nan]), "^tensor_params:"),
        (lambda: cm.strategy_memory(cm.Layout(**LAYOUT), [1, 2]), "^params:"),
        (lambda: cm.strategy_memory(cm.Layout(**LAYOUT), {"a": 1}), "^params:"),
        (
            lambda: cm.strategy_memory(cm.Layout(**LAYOUT), 7e9, cuda_context_bytes=[1, 2]),
            "^cuda_context_bytes: one number per call",
        ),
        (
            lambda: cm.strategy_memory(cm.Layout(**LAYOUT), 7e9, activations_bytes=[1, 2]),
            "^activations_bytes: one number per call",
        ),
        (
            lambda: cm.strategy_memory(cm.Layout(**LAYOUT), 7e9, fragmentation=[0.1, 0.2]),
            "^fragmentation: one number per call",
        ),
        (lambda: cm.training_memory(7e9, fragmentation=[0.1, 0.2]), "^fragmentation: one"),
        (lambda: cm.max_params(80e9, fragmentation=[0.1, 0.2]), "^fragmentation: one"),
        (lambda: cm.min_ranks(7e9, 80e9, fragmentation=[0.1, 0.2]), "^fragmentation: one"),
        (lambda: cm.advise_strategy(7e9, nodes=math.inf, band=False), "^nodes: must be a whole"),
        (lambda: cm.advise_strategy(7e9, nodes=None, band=False), "^nodes: must be a whole"),
        (lambda: cm.advise_strategy(7e9, nodes=[1, 2], band=False), "^nodes: one count per"),
        (lambda: cm.advise_strategy_nodes(7e9, nodes=4, band=False), "^nodes: must be one or"),
        (lambda: cm.advise_strategy_nodes(7e9, nodes=[1, math.nan]), "^nodes: must be a whole"),
        (lambda: cm.fit_suggestions(7e9, max_nodes="abc"), "^max_nodes: must be a whole"),
        (lambda: cm.fit_suggestions(7e9, max_nodes=None), "^max_nodes: must be a whole"),
        (lambda: cm.format_bytes(None), "^value: expected one number to format"),
        (lambda: cm.format_rate([1, 2]), "^value: expected one number to format"),
        (lambda: cm.format_duration({"a": 1}), "^value: expected one number to format"),
    ],
)
def test_a_wrong_value_is_a_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_checked_arguments_still_take_their_valid_forms():
    """The checks refuse only what failed: a numpy count, a numeric string count, a tuple of
    tensors and the default first bucket answer as before."""
    lay = cm.Layout(**LAYOUT)
    assert cm.strategy_memory(lay, "7e9").total_bytes == cm.strategy_memory(lay, 7e9).total_bytes
    a = cm.strategy_step(7e9, tensor_params=(3.5e9, 3.5e9), timeline=False, band=False)
    b = cm.strategy_step(7e9, tensor_params=[3.5e9, 3.5e9], timeline=False, band=False)
    assert a.step_time_s == b.step_time_s
    t = cm.advise_strategy_nodes(arch="llama-3.1-8b", nodes=np.array([1, 2]), model="lesson")
    assert sorted(t) == [1, 2]
    assert cm.format_bytes("5") == "5 B" and cm.format_duration(0) == "0 s"
