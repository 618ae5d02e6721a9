"""A notebook user's pass over ``import costmodel as cm`` (README section 2).

- ``cm.allreduce_time`` / ``cm.collective_time`` take ``gamma_s_per_byte``, the reduction cost of
  the alpha-beta-gamma formulas, as the formula layer (``cm.collectives``) and ``costmodel
  collective --gamma`` do: the package-level front dropped it (a TypeError), so the notebook
  could not give the number the CLI gives.

Each test failed before the fix.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from tests._cli import run


def test_allreduce_time_takes_gamma_as_the_formula_layer_does() -> None:
    """The ring's ``(N-1)/N M gamma`` term: 1 GB on 8 ranks at 50 GB/s and 1e-10 s/B adds
    7/8 x 0.1 s to 2 x 7/8 x 0.02 s."""
    t = cm.allreduce_time(1e9, 8, 50e9, gamma_s_per_byte=1e-10)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 50e9 + 7 / 8 * 1e9 * 1e-10)
    assert t == cm.collectives.allreduce_time(1e9, 8, 50e9, gamma_s_per_byte=1e-10)


def test_collective_time_takes_gamma_positionally_and_as_arrays() -> None:
    """The seventh argument, as in ``cm.collectives.collective_time``; arrays broadcast.
    A binomial-tree reduce: L (a + M b + M g), L = 3 for 8 ranks."""
    m = np.array([1e6, 1e9])
    g = np.array([1e-10, 0.0])
    t = cm.collective_time("reduce", m, 8, 50e9, 5e-6, "binomial_tree", g)
    np.testing.assert_array_equal(
        t, cm.collectives.collective_time("reduce", m, 8, 50e9, 5e-6, "binomial_tree", g)
    )
    assert t[0] == pytest.approx(3 * (5e-6 + 1e6 / 50e9 + 1e6 * 1e-10))


def test_allreduce_time_with_gamma_is_the_cli_number() -> None:
    """One road: ``collective --gamma`` over one link and the API give the same time."""
    r = run(
        "collective", "all_reduce", "--size", "1GB", "--ranks", "8",
        "--bandwidth", "50GB/s", "--latency", "5us", "--gamma", "1e-10", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    cli_t = json.loads(r.stdout)["results"][0]["time_s"]
    assert cli_t == cm.allreduce_time(1e9, 8, 50e9, 5e-6, gamma_s_per_byte=1e-10)


@pytest.mark.parametrize("gamma", [-1.0, 1e-3, float("nan")])
def test_gamma_out_of_range_is_refused_naming_it(gamma: float) -> None:
    with pytest.raises(
        ValueError, match=r"^gamma_s_per_byte: must be a reduction cost in 0\.\.1e-6"
    ):
        cm.allreduce_time(1e9, 8, 50e9, gamma_s_per_byte=gamma)


def test_gamma_with_a_cluster_is_refused_as_latency_is() -> None:
    """A cluster's models carry their own terms: a nonzero gamma is one clear line, and 0 (the
    default) leaves the cluster's answer as it was."""
    c = cm.cluster("dgx-h100", nodes=2)
    with pytest.raises(ValueError, match=r"^gamma_s_per_byte: 1e-10 given with a cluster"):
        cm.allreduce_time(1e9, c, gamma_s_per_byte=1e-10)
    assert cm.allreduce_time(1e9, c, gamma_s_per_byte=0.0) == cm.allreduce_time(1e9, c)


# --- a duration, a date or a complex number is no silent number --------------------------------
# numpy reads np.timedelta64(5, "us") as 5 (its unit's count): a latency of 5 us was 5 s, the
# all-gather 35 s instead of 17.5 ms; a complex size lost its imaginary part with a warning only.

_US = np.timedelta64(5, "us")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: cm.collective_time("all_gather", 1e9, 8, 50e9, _US), "latency_s"),
        (lambda: cm.allreduce_time(1e9, 8, 50e9, np.array([_US, _US])), "latency_s"),
        (lambda: cm.allreduce_time(1e9, 8, 50e9, [_US]), "latency_s"),
        (
            lambda: cm.allreduce_time(1e9, 8, 50e9, pd.Series(pd.to_timedelta(["5us"]))),
            "latency_s",
        ),
        (lambda: cm.bus_bandwidth("all_reduce", 1e9, 8, np.timedelta64(40, "ms")), "time_s"),
        (lambda: cm.algorithm_bandwidth(1e9, np.timedelta64(40, "ms")), "time_s"),
        (lambda: cm.crossover_bytes("ring", "tree", 64, 50e9, _US), "latency_s"),
        (
            lambda: cm.flat_ring_allreduce_time(1e9, 2, 8, 450e9, 8, 50e9, _US, _US),
            "intra_latency_s",
        ),
        (
            lambda: cm.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9, 0.0, _US),
            "inter_latency_s",
        ),
    ],
)
def test_a_duration_is_refused_not_read_as_its_units_count(call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: .*got a duration \(timedelta64.*seconds"):
        call()


def test_a_date_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^latency_s: .*got a date \(datetime64"):
        cm.allreduce_time(1e9, 8, 50e9, np.datetime64("2024-01-01"))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: cm.allreduce_time(np.array([1e9 + 1j]), 8, 50e9), "message_bytes"),
        (lambda: cm.allreduce_time(np.complex128(1e9), 8, 50e9), "message_bytes"),
        (lambda: cm.training_memory(np.array([7e9 + 0j])), "params"),
        (lambda: cm.max_params(pd.Series([8e10 + 1j])), "memory_bytes"),
        (lambda: cm.predict_collective("all_reduce", [1e9 + 1j], "dgx-h100"), "message_bytes"),
        (lambda: cm.global_batch(np.array([4 + 0j]), 8), "local_batch"),
        (lambda: cm.scale_learning_rate(np.array([1e-3 + 0j]), 8, 16), "base_lr"),
    ],
)
def test_a_complex_number_is_refused_not_cut_to_its_real_part(call, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning was all the user saw
        with pytest.raises(ValueError, match=rf"^{name}: expected a real number .*complex"):
            call()


def test_a_duration_in_bytes_says_numbers_not_seconds() -> None:
    with pytest.raises(ValueError, match=r"allowed: numbers$"):
        cm.training_memory(7e9, cuda_context_bytes=np.array([_US]))


def test_numbers_in_lists_arrays_and_series_still_agree() -> None:
    """The check costs the number paths nothing they answered: list, array, Series, 0-d."""
    want = cm.allreduce_time(1e9, 8, 50e9, 5e-6)
    for lat in ([5e-6], np.array([5e-6]), pd.Series([5e-6]), np.array(5e-6), np.float64(5e-6)):
        assert float(np.ravel(cm.allreduce_time(1e9, 8, 50e9, lat))[0]) == want


def test_parse_duration_refuses_a_numpy_duration_it_read_as_seconds() -> None:
    """``cm.parse_duration(np.timedelta64(5, "ns"))`` was 5.0 (s); with "us" it raised numpy's
    unnamed TypeError. Both are one line naming the field now."""
    for td in (np.timedelta64(5, "ns"), np.timedelta64(5, "us")):
        with pytest.raises(ValueError, match=r"^duration: .*got a duration .*seconds"):
            cm.parse_duration(td)
    with pytest.raises(ValueError, match=r"^bandwidth: .*got a duration"):
        cm.parse_rate(np.timedelta64(5, "ns"))


def test_parse_bytes_refuses_a_complex_number() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^size: expected a real number .*complex"):
            cm.parse_bytes(np.complex128(1e9 + 1j))
    assert cm.parse_bytes(np.float32(2.0)) == 2  # numpy's real scalars still read


# float() of a numpy scalar reads np.timedelta64(400, "ns") as 400.0: a 400 s compute time,
# step or measured step; a complex scalar as its real part.
_NS = np.timedelta64(400, "ns")


def _scalar_calls(v):
    return [
        (
            "compute_time_s",
            lambda: cm.ddp_step(7e9, 64, compute_time_s=v, bandwidth_bytes_per_s=50e9),
        ),
        ("compute_time_s", lambda: cm.strategy_step(7e9, compute_time_s=v)),
        ("mfu", lambda: cm.strategy_step(7e9, mfu=v)),
        ("compute_time_s", lambda: cm.Scenario(params=7e9, compute_time_s=v)),
        (
            "step_time_s",
            lambda: cm.training_cost(
                2e12, tokens_per_step=4 * 2**20, step_time_s=v, ranks=512, usd_per_gpu_hour=2.0
            ),
        ),
        (
            "measured_step_time_s",
            lambda: (
                cm.Scenario(params=7e9)
                .evaluate()
                .training_cost(2e12, measured_step_time_s=v, usd_per_gpu_hour=2.0)
            ),
        ),
        ("value", lambda: cm.format_duration(v)),
    ]


@pytest.mark.parametrize("i", range(7))
@pytest.mark.parametrize("value", [_NS, np.complex128(0.4 + 1j)], ids=["ns", "complex"])
def test_a_numpy_duration_or_complex_scalar_is_refused_naming_the_field(i: int, value) -> None:
    name, call = _scalar_calls(value)[i]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"^{name}: expected a (real )?number"):
            call()


def test_numpy_real_scalars_still_give_the_plain_numbers_answer() -> None:
    s = cm.Scenario(params=np.float64(7e9), nodes=np.int64(2), compute_time_s=np.float64(0.4))
    assert (
        s.evaluate().step_time_s
        == cm.Scenario(params=7e9, nodes=2, compute_time_s=0.4).evaluate().step_time_s
    )
    assert cm.format_duration(np.float64(0.4)) == cm.format_duration(0.4) == "400 ms"
    assert (
        cm.strategy_step(7e9, compute_time_s=np.float64(0.4)).step_time_s
        == cm.strategy_step(7e9, compute_time_s=0.4).step_time_s
    )


def test_the_package_models_refuse_a_numpy_duration_or_complex_field() -> None:
    """Every pydantic model of the package (``OneLineModel``): a link latency of
    ``np.timedelta64(1, "ns")`` was 1 s, a complex peak its real part."""
    link = cm.presets.load("ib-ndr")
    with pytest.raises(cm.hardware.HardwareError, match=r"^latency_s: .*got a duration"):
        cm.Link(**{**link.model_dump(), "latency_s": np.timedelta64(1, "ns")})
    gpu = cm.cluster("dgx-h100").node.gpu
    with pytest.raises(ValueError, match=r"^bf16_dense_flops: expected a real number"):
        cm.GPU(**{**gpu.model_dump(), "bf16_dense_flops": np.complex128(9.89e14)})
    with pytest.raises(ValueError, match=r"^ranks: expected a real number") as info:
        cm.Layout(strategy="fsdp", ranks=np.complex128(16))
    assert type(info.value).__name__ == "LayoutError"  # the model's error, as its others
    with pytest.raises(cm.ScenarioError, match=r"^compute_time_s: .*got a duration"):
        cm.Scenario.model_validate({"params": 7e9, "compute_time_s": np.timedelta64(4, "ns")})
    # numpy's real numbers still read
    assert cm.Link(**{**link.model_dump(), "latency_s": np.float64(3e-6)}).latency_s == 3e-6
    assert cm.Layout(strategy="fsdp", ranks=np.int64(16)).ranks == 16


def test_ddp_lists_refuse_complex_entries() -> None:
    """``bucket_assignment``'s sizes and ``ddp_step``'s ``layer_param_counts`` lost the
    imaginary part with a ComplexWarning only."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^param_bytes: expected a real number"):
            cm.bucket_assignment(np.array([1e6 + 1j] * 3), 25e6)
        with pytest.raises(ValueError, match=r"^layer_param_counts: expected a real number"):
            cm.ddp_step(
                7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9,
                layer_param_counts=np.array([7e9 / 32 + 0j] * 32),
            )  # fmt: skip


def test_the_strict_models_read_numpy_numbers_as_the_api_does() -> None:
    """``cm.Cluster(nodes=np.int64(2))`` (an element of an array, a pandas row) was refused as
    "Input should be a valid integer ... (got 2)", where ``cm.cluster``, ``Scenario`` and
    ``Layout`` take it; the caller's dict is not changed."""
    c = cm.cluster("dgx-h100")
    fields = {**c.model_dump(), "nodes": np.int64(2)}
    assert cm.Cluster(**fields).nodes == 2
    assert isinstance(fields["nodes"], np.int64)
    assert cm.Node(**{**c.node.model_dump(), "gpus_per_node": np.int64(4)}).gpus_per_node == 4
    gpu = {**c.node.gpu.model_dump(), "memory_bytes": np.int64(80 * 10**9)}
    assert cm.GPU(**gpu).memory_bytes == 80 * 10**9
    arch = cm.load_arch("llama-2-7b")
    shaped = cm.Architecture(
        **{**arch.model_dump(), "hidden": np.int64(4096), "layers": np.array(32)}
    )
    assert shaped.params == arch.params
    # a fraction is still no count, named with its range
    with pytest.raises(ValueError, match=r"^nodes: .*allowed: \[1, 1,000,000\] \(got 2\.5\)"):
        cm.Cluster(**{**c.model_dump(), "nodes": np.float64(2.5)})


def test_a_list_of_bools_is_refused_as_an_array_of_them_is() -> None:
    """``cm.allreduce_time([True], 8, 50e9)`` was the time of a 1-byte message; an array of
    bools and one bool were refused."""
    for value in ([True, False], np.array([True])):
        with pytest.raises(ValueError, match=r"^message_bytes: expected a number"):
            cm.allreduce_time(value, 8, 50e9)
    with pytest.raises(ValueError, match=r"^ranks: expected a number"):
        cm.bytes_per_rank("all_reduce", 1e9, [True, True])


def test_a_list_with_none_still_names_the_none() -> None:
    with pytest.raises(ValueError, match=r"got None \(element 1 of 2\)$"):
        cm.allreduce_time([1e9, None], 8, 50e9)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: cm.training_memory([True, False]), "params"),
        (lambda: cm.training_memory(7e9, dp_ranks=[True]), "dp_ranks"),
        (lambda: cm.max_params([True]), "memory_bytes"),
        (lambda: cm.predict_collective("all_reduce", [True], "dgx-h100"), "message_bytes"),
        (lambda: cm.scale_learning_rate([True], 8, 16), "base_lr"),
        (lambda: cm.bucket_assignment([True, True], 25e6), "param_bytes"),
        (lambda: cm.strategy_step(7e9, mfu=np.bool_(True)), "mfu"),
        (
            lambda: cm.ddp_step(7e9, 8, compute_time_s=np.bool_(True), bandwidth_bytes_per_s=5e10),
            "compute_time_s",
        ),
        (lambda: cm.parse_bytes(np.bool_(True)), "size"),
    ],
)
def test_a_list_of_bools_or_a_numpy_bool_is_no_number(call, name: str) -> None:
    """``float(np.bool_(True))`` is 1.0 and a list of bools reads as [1., 0.]: an MFU of 1, a
    parameter count of 1, where a Python bool is refused on every API input."""
    with pytest.raises(ValueError, match=rf"^{name}: expected a number .*got a bool"):
        call()


def test_a_numpy_bool_still_sets_a_flag() -> None:
    assert cm.Scenario(params=7e9, flash_attention=np.bool_(False)).flash_attention is False
    node = cm.cluster("dgx-h100").node
    assert cm.Node(**{**node.model_dump(), "p2p": np.bool_(True)}).p2p is True
