"""The notebook API's promise, checked over every public function found by introspection.

README section 2: "pure functions that take numbers or numpy arrays (broadcasting) and return
numbers or arrays, SI units in the argument names". Every function of ``costmodel.__all__``,
``costmodel.collectives.__all__`` and ``costmodel.strategy.__all__`` is enumerated here and
must be classified, so a new public function is checked by default; so is every public function
with an array parameter of the formula modules ``cm.topology``, ``cm.batch``, ``cm.memory`` and
``cm.ddp`` (reached as ``cm.topology.flat_ring_bandwidth`` in a notebook):

* an **array formula** (a parameter annotated ``ArrayLike``) gets the generic checks below on
  every numeric array parameter: a Python number in gives a Python ``float``/``int`` out (also
  for a numpy scalar or a 0-d array), a 1-d array (float64, int64, float32, a list, a pandas
  Series) gives a numpy array of that shape equal element for element to the scalar calls
  (one road), two arrays broadcast as numpy does or are refused naming both, and NaN, inf or a
  negative value (alone or as an element) is refused on one ValueError line naming the field
  and its range, never a NaN out;
* a **one-configuration** function (a result object per call) takes numpy scalars as Python
  numbers and refuses a 1-d array or NaN naming the field;
* an **exemption**, each with its reason.

A pandas Series is read as the numpy array of its values (positionally; its index is not
aligned and not returned): the result is a numpy array, as for a list.
"""

from __future__ import annotations

import inspect
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from costmodel import batch, collectives, ddp, memory, strategy, topology

# --- the enumeration ----------------------------------------------------------------------


def _public() -> dict[str, object]:
    out: dict[str, object] = {}
    for module in (cm, collectives, strategy):
        for name in module.__all__:
            fn = getattr(module, name)
            if inspect.isfunction(fn):
                out.setdefault(name, fn)
    # the formula modules' own array functions (they have no __all__: names without "_",
    # defined there)
    for module in (topology, batch, memory, ddp):
        for name, fn in vars(module).items():
            if (
                not name.startswith("_")
                and inspect.isfunction(fn)
                and fn.__module__ == module.__name__
                and _array_params(fn)
            ):
                out.setdefault(name, fn)
    return out


def _array_params(fn) -> list[str]:
    """Numeric parameters that take arrays: annotated ``ArrayLike`` (not a callback that returns
    one, not a flag that may be an array of bools)."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        ann = str(p.annotation)
        if "ArrayLike" in ann and "Callable" not in ann and "bool" not in ann:
            out.append(p.name)
    return out


PUBLIC = _public()


# valid values by parameter name (a 64-GPU NDR ring, a 7B model on 80 GB, a 4M-token batch)
VALUES: dict[str, float] = {
    "message_bytes": 1e9,
    "ranks": 8,
    "bandwidth_bytes_per_s": 50e9,
    "latency_s": 5e-6,
    "time_s": 0.01,
    "gamma_s_per_byte": 1e-12,
    "nodes": 2,
    "gpus_per_node": 8,
    "intra_bandwidth_bytes_per_s": 450e9,
    "inter_bandwidth_bytes_per_s": 50e9,
    "nic_bandwidth_bytes_per_s": 50e9,
    "nics_per_node": 8,
    "intra_latency_s": 1e-6,
    "inter_latency_s": 5e-6,
    "local_batch": 4,
    "accumulation": 2,
    "global_tokens": 4 * 2**20,
    "sequence_length": 4096,
    "base_lr": 1e-4,
    "base_batch": 256,
    "new_batch": 512,
    "critical_batch": 1024,
    "memory_bytes": 80e9,
    "dp_ranks": 8,
    "activations_bytes": 1e9,
    "cuda_context_bytes": 5e8,
    "params": 7e9,
    "global_batch_size": 1024,
    "step": 100,
    "peak_lr": 1e-3,
    "start_lr": 1e-5,
    "layers": 32,
    "hidden": 4096,
    "micro_batch": 2,
    "heads": 32,
}

# what an array formula needs beside its numbers, and how to read a number from a result
# object (the default: the result is the number); every public function with an ArrayLike
# parameter is an array formula unless exempt
FIXED: dict[str, dict[str, object]] = {
    **{
        n: {"op": "all_reduce"}
        for n in ("bus_bandwidth", "busbw_factor", "bytes_per_rank", "collective_time")
    },
    "latency_steps": {"op": "all_reduce"},
    "crossover_bytes": {"algorithm_a": "ring", "algorithm_b": "tree"},
    "predict_collective": {"op": "all_reduce", "cluster": "dgx-h100", "params": None},
    "warmup_learning_rate": {"warmup_steps": 500},
    "state_bytes_per_param": {"zero_stage": 3},
}
READ = {
    "training_memory": lambda r: r.total_bytes,
    "predict_collective": lambda r: r.time_s,
    # dicts of terms, each a number or an array: their sum reads every term's type and shape
    "state_bytes_per_param": lambda r: sum(r.values()),
    "hierarchical_allreduce_phases": lambda r: sum(r.values()),
}

# one configuration per call: valid arguments, and the numeric ones to probe
ONE_PER_CALL: dict[str, tuple[dict[str, object], tuple[str, ...]]] = {
    "ddp_step": (
        {"params": 7e9, "ranks": 8, "compute_time_s": 0.3, "bandwidth_bytes_per_s": 50e9},
        ("params", "ranks", "compute_time_s", "bandwidth_bytes_per_s"),
    ),
    "min_ranks": ({"params": 70e9, "memory_bytes": 80e9}, ("params", "memory_bytes")),
    "solve_batch": ({"local_batch": 4, "ranks": 8, "accumulation": 2}, ("local_batch", "ranks")),
    "training_cost": (
        {"tokens": 1e12, "tokens_per_step": 4e6, "step_time_s": 1.0, "ranks": 64},
        ("tokens", "tokens_per_step", "step_time_s", "ranks"),
    ),
    "billed_gpus_per_node": ({"gpus_per_node": 8}, ("gpus_per_node",)),
    "cluster": ({"name": "dgx-h100", "nodes": 2}, ("nodes",)),
    "strategy_step": ({"params": 7e9, "mfu": 0.4, "band": False}, ("params", "nodes", "mfu")),
    "micro_batch_compute_s": (
        {"flops_per_token": 6 * 7e9, "tokens": 4096, "peak_flops": 989e12, "mfu": 0.4},
        ("flops_per_token", "tokens", "peak_flops", "mfu"),
    ),
}

# neither: each with the reason
EXEMPT: dict[str, str] = {
    "bucket_sizes": "as bucket_assignment",
    "check_overheads": "the check of training_memory's context and fragmentation (checked "
    "through training_memory here), returns the context as an array",
    "given_activations_note": "words for the activations given, not a number",
    "bucket_assignment": "takes the list of parameter sizes by nature (a 1-d array is one "
    "model, not many); its entries' checks are its own tests (test_ddp.py)",
    "predict_all_algorithms": "returns a table (a row per algorithm and size); the times are "
    "predict_collective's, checked here",
    "strategy_memory": "one layout per call; its numbers are training_memory's, checked here",
    "advise_strategy": "ranks strategy_step's results (checked here) over the layouts",
    "advise_strategy_nodes": "advise_strategy over a list of node counts",
    "fit_suggestions": "searches strategy_step's inputs (checked here) for a fit",
    "format_bytes": "display, not a formula: writes any float (inf for a crossover that never "
    "happens, a negative difference); one number per call, an array refused",
    "format_rate": "display, as format_bytes",
    "format_duration": "display, as format_bytes",
    "parse_bytes": "reads one text or number (units tests: test_unit_names.py)",
    "parse_rate": "reads one text or number",
    "parse_duration": "reads one text or number",
    "parse_count": "reads one text or number",
    "parse_tokens": "reads one text or number",
    "load_arch": "reads a name or an Architecture, no number",
    "arch_names": "no argument",
    "load_price": "reads a name, no number",
    "price_names": "no argument",
    "prices_for_gpu": "reads a GPU name, no number",
    "load_hf_config": "reads a file",
    "canonical_algorithm": "reads a name, no number",
    "link_hardware_note": "reads a name, no number",
    "span_cluster": "internal to the step: a cluster, a span name and a group size",
    "verdict": "words for four times the step has already checked",
    "wrap_units": "the model's FSDP units: the params checked by strategy_step",
    "run": "the step's scheduler over its own tasks",
}


ARRAY_FORMULAS = sorted(n for n, fn in PUBLIC.items() if _array_params(fn) and n not in EXEMPT)


def test_every_public_function_is_classified():
    unclassified = set(PUBLIC) - set(ARRAY_FORMULAS) - set(ONE_PER_CALL) - set(EXEMPT)
    assert not unclassified, f"classify these public functions here: {sorted(unclassified)}"
    stale = (set(ONE_PER_CALL) | set(EXEMPT) | set(FIXED) | set(READ)) - set(PUBLIC)
    assert not stale, stale
    assert len(ARRAY_FORMULAS) >= 30, ARRAY_FORMULAS  # the enumeration finds the formulas
    for name in ONE_PER_CALL:  # a one-per-call function takes no array by its signature
        assert not _array_params(PUBLIC[name]), name
    for name, reason in EXEMPT.items():
        assert len(reason) > 10, name


# --- array formulas ------------------------------------------------------------------------


def _call(name: str, **given):
    fn = PUBLIC[name]
    read = READ.get(name)
    args = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name in VALUES and (p.default in (inspect.Parameter.empty, None) or p.name in given):
            args[p.name] = VALUES[p.name]
    args.update(FIXED.get(name, {}))  # predict_collective's params are its corrections
    args.update(given)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (0/0, overflow) is a defect
        out = fn(**args)
    return read(out) if read else out


CASES = [(name, p) for name in ARRAY_FORMULAS for p in _array_params(PUBLIC[name])]


def test_every_array_parameter_has_a_value():
    missing = [(name, p) for name, p in CASES if p not in VALUES]
    assert not missing, missing


@pytest.mark.parametrize("name", ARRAY_FORMULAS)
def test_python_number_in_python_number_out(name):
    out = _call(name)
    assert type(out) in (float, int), (name, type(out))
    for p in _array_params(PUBLIC[name]):
        v = VALUES[p]
        for kind in (np.float64(v), np.array(v), np.float32(v) if v == np.float32(v) else v):
            got = _call(name, **{p: kind})
            assert type(got) in (float, int), (name, p, type(kind), type(got))


def _variants(v: float):
    pair = [v, 2 * v]
    yield "float64", np.array(pair), pair
    yield "list", pair, pair
    yield "Series", pd.Series(pair, index=[10, 20]), pair
    f32 = np.array(pair, dtype=np.float32)
    yield "float32", f32, [float(x) for x in f32]
    if float(v).is_integer():
        yield "int64", np.array(pair, dtype=np.int64), pair


@pytest.mark.parametrize(("name", "param"), CASES)
def test_array_in_array_out_equal_to_scalar_calls(name, param):
    for kind, value, numbers in _variants(VALUES[param]):
        got = _call(name, **{param: value})
        assert type(got) is np.ndarray, (name, param, kind, type(got))
        assert got.shape == (2,), (name, param, kind, got.shape)
        want = [_call(name, **{param: x}) for x in numbers]
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {param} {kind}")


@pytest.mark.parametrize("name", ARRAY_FORMULAS)
def test_two_arrays_broadcast_or_are_refused_naming_both(name):
    params = _array_params(PUBLIC[name])
    for a, b in itertools.combinations(params, 2):
        va, vb = VALUES[a], VALUES[b]
        col, row = np.array([[va], [2 * va], [3 * va]]), np.array([vb, 2 * vb])
        got = _call(name, **{a: col, b: row})
        assert np.shape(got) == (3, 2), (name, a, b)
        want = [[_call(name, **{a: x, b: y}) for y in row] for x in col[:, 0]]
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {a} x {b}")
        with pytest.raises(ValueError) as err:
            _call(name, **{a: col[:, 0], b: row})
        line = str(err.value)
        assert "\n" not in line and line.startswith(f"{a}, {b}: shapes do not broadcast"), line


@pytest.mark.parametrize(("name", "param"), CASES)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0])
def test_nan_inf_negative_refused_naming_the_field(name, param, bad):
    v = VALUES[param]
    for value in (bad, np.float64(bad), np.array([v, bad])):
        with pytest.raises(ValueError) as err:
            _call(name, **{param: value})
        line = str(err.value)
        assert "\n" not in line, line
        assert line.startswith(f"{param}: must be "), line
        assert " got " in line, line
        if isinstance(value, np.ndarray) and value.ndim:  # the bad element named by its place
            assert line.endswith(" (element 1 of 2)"), line


@pytest.mark.parametrize(("name", "param"), CASES)
def test_zero_is_refused_or_a_number(name, param):
    """0 is allowed for some fields (an empty message, no latency); where it is, the answer is
    a number (``inf`` only where documented: a crossover that never happens), never NaN."""
    v = VALUES[param]
    for value in (0.0, np.array([v, 0.0])):
        try:
            got = _call(name, **{param: value})
        except ValueError as err:
            line = str(err)
            assert "\n" not in line and param in line.split(":")[0], line
            continue
        assert not np.isnan(got).any(), (name, param, got)
        if name != "crossover_bytes":
            assert np.isfinite(got).all(), (name, param, got)


@pytest.mark.parametrize(("name", "param"), CASES)
def test_scalar_and_array_refusals_say_the_same_rule(name, param):
    """One road: a bad number is refused in the same words alone and inside an array (the
    array names the element)."""
    v = VALUES[param]
    for bad in (math.nan, -1.0, 0.5 if float(v).is_integer() else -2.0):
        try:
            _call(name, **{param: bad})
        except ValueError as err:
            alone = str(err).split(" got ")[0]
        else:
            continue
        with pytest.raises(ValueError) as err:
            _call(name, **{param: np.array([v, bad])})
        assert str(err.value).split(" got ")[0] == alone, (name, param, bad)


# --- one configuration per call -------------------------------------------------------------


def _one(name: str, **given):
    args, _ = ONE_PER_CALL[name]
    return PUBLIC[name](**{**args, **given})


@pytest.mark.parametrize("name", sorted(ONE_PER_CALL))
def test_one_per_call_takes_numpy_scalars_and_refuses_arrays_and_nan(name):
    args, probes = ONE_PER_CALL[name]
    plain = _one(name)
    for p in probes:
        v = args.get(p, 1)
        np_v = np.int64(v) if float(v).is_integer() else np.float64(v)
        assert repr(_one(name, **{p: np_v})) == repr(plain), (name, p)
        for bad in (np.array([v, v]), pd.Series([v, v]), math.nan):
            with pytest.raises(ValueError) as err:
                _one(name, **{p: bad})
            line = str(err.value)
            # the field first ("params, memory_bytes: min_ranks takes scalars" names both)
            assert "\n" not in line and p in line.split(":")[0].split(", "), (name, p, line)


# --- units: the named unit, against the docstring equations by hand --------------------------


def test_units_by_hand():
    # ring all-reduce [s]: 2(N-1)/N M/B + 2(N-1) alpha; the lesson's 14 GB on 64 GPUs at 50 GB/s
    assert cm.allreduce_time(14e9, 64, 50e9) == pytest.approx(2 * 63 / 64 * 14e9 / 50e9)
    assert cm.allreduce_time(14e9, 64, 50e9, 5e-6) == pytest.approx(0.55125 + 126 * 5e-6)
    # + (N-1)/N M gamma [s]
    assert cm.allreduce_time(14e9, 64, 50e9, gamma_s_per_byte=1e-11) == pytest.approx(
        0.55125 + 63 / 64 * 14e9 * 1e-11
    )
    # bytes one rank sends [B]: 2(N-1)/N M
    assert cm.bytes_per_rank("all_reduce", 500e6, 8) == pytest.approx(875e6)
    assert cm.allreduce_lower_bound_bytes(500e6, 8) == pytest.approx(875e6)
    # algorithm and bus bandwidth [B/s]: M/t, and M/t x 2(N-1)/N for an all-reduce
    assert cm.algorithm_bandwidth(1e9, 0.01) == pytest.approx(1e11)
    assert cm.bus_bandwidth("all_reduce", 1e9, 16, 0.01) == pytest.approx(1e11 * 2 * 15 / 16)
    # hierarchical [s]: 7/8 x 1 GB / 450 GB/s twice (NVLink) + 2(2-1)/2 x 1 GB/8 / 50 GB/s
    assert cm.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9) == pytest.approx(
        2 * 7 / 8 * 1e9 / 450e9 + 1e9 / 8 / 50e9
    )
    # flat ring over 2x8 GPUs [B/s]: min(450 GB/s NVLink, 8 NICs x 50 GB/s); its all-reduce [s]
    # 2(N-1)/N M / B_ring + 2(N-1) max(alpha_intra, alpha_inter) with N = 16
    assert cm.topology.flat_ring_bandwidth(2, 8, 450e9, 8, 50e9) == pytest.approx(400e9)
    assert cm.flat_ring_allreduce_time(8e9, 2, 8, 450e9, 8, 50e9, 1e-6, 5e-6) == pytest.approx(
        2 * 15 / 16 * 8e9 / 400e9 + 2 * 15 * 5e-6
    )
    # each GPU's share of the node's NICs [B/s]: 32 x 12.5 GB/s over 8 GPUs
    assert cm.topology.per_gpu_inter_bandwidth(32, 12.5e9, 8) == pytest.approx(50e9)
    # mixed-precision Adam: 16 B per parameter [B], so 80 GB holds 5e9 parameters
    assert cm.training_memory(7e9, activations_bytes=0).total_bytes == pytest.approx(112e9)
    assert cm.max_params(80e9) == pytest.approx(5e9)
    # samples: local x ranks x accumulation; tokens / sequence length
    assert cm.global_batch(4, 8, 2) == 64
    assert cm.global_batch_from_tokens(4 * 2**20, 4096) == 1024


def test_critical_batch_array_says_the_rule_of_one_value():
    """An array of critical batches was refused as "must be a finite number > 0" where the same
    value alone says --critical-batch's range (whole, 1..1e16); and the element is named."""
    with pytest.raises(ValueError) as alone:
        cm.scale_learning_rate(1e-4, 256, 512, critical_batch=0)
    with pytest.raises(ValueError) as inside:
        cm.scale_learning_rate(1e-4, 256, 512, critical_batch=np.array([1024, 0]))
    rule = str(alone.value).split(" got ")[0]
    assert rule.startswith("critical_batch: must be a whole number of tokens in 1..1e16")
    assert str(inside.value) == f"{rule} got 0 (element 1 of 2)"


@pytest.mark.parametrize(
    ("field", "bad", "rule"),
    [
        ("flops_per_token", math.nan, "flops_per_token: must be a finite number > 0 FLOP, got nan"),
        ("tokens", -4096, "tokens: must be a finite number > 0, got -4096"),
        ("peak_flops", 0.0, "peak_flops: must be a finite number > 0 FLOP/s, got 0.0"),
    ],
)
def test_micro_batch_compute_s_refuses_its_work_numbers(field, bad, rule):
    """The micro-batch time took its FLOPs, tokens and peak unchecked: NaN in gave NaN s out,
    a negative token count a negative time, an array Python's own TypeError."""
    args = {"flops_per_token": 6 * 7e9, "tokens": 4096, "peak_flops": 989e12, field: bad}
    with pytest.raises(ValueError) as err:
        strategy.micro_batch_compute_s(**args, mfu=0.4)
    assert str(err.value) == rule


def test_strategy_step_says_a_series_of_params_on_one_line():
    with pytest.raises(ValueError) as err:
        cm.strategy_step(pd.Series([7e9, 8e9]), mfu=0.4, band=False)
    assert str(err.value) == "params: must be a finite count > 0, got an array of shape (2,)"
