"""Fifth QA pass: the notebook API (``import costmodel as cm``) as a new user meets it, with
numbers, numpy arrays and the mistakes a notebook makes (a typo, a NaN, text for a number).

Each test failed before its fix; the fix is in the function every surface calls.
"""

import datetime as dt
import math

import numpy as np
import pytest

import costmodel as cm

# --- training_memory: an activation recipe it does not use is still checked ---------------


@pytest.mark.parametrize(
    ("kw", "field", "allowed"),
    [
        ({"recompute": "ful"}, "recompute", "allowed: none, selective"),
        ({"loss": "fsed"}, "loss", "allowed: fp32, fp32-held, fused"),
        ({"sequence_length": 0}, "sequence_length", "whole number in 1..100,000,000 tokens"),
        ({"sequence_length": math.nan}, "sequence_length", "whole number in 1..100,000,000"),
        ({"micro_batch": -1}, "micro_batch", "whole number in 1..1,000,000"),
        ({"micro_batch": True}, "micro_batch", "whole number in 1..1,000,000"),
    ],
)
@pytest.mark.parametrize("memory", ["bare count", "activations given"])
def test_an_activation_recipe_typo_is_refused_without_an_architecture(kw, field, allowed, memory):
    """``cm.training_memory(7e9, recompute="ful")`` returned 112 GB, as did
    ``micro_batch=-1`` or ``sequence_length=nan``: with no shape (or the activations given in
    bytes) the recipe was never read, so a typo was never seen. With ``arch=`` the same typo
    was an error; now it is one everywhere."""
    call = (
        (lambda: cm.training_memory(7e9, **kw))
        if memory == "bare count"
        else (lambda: cm.training_memory("llama-2-7b", activations_bytes=1e9, **kw))
    )
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(f"{field}: "), err.value
    assert allowed in str(err.value)


def test_a_valid_recipe_on_a_bare_count_still_answers_and_stays_light():
    """A valid recipe is no error (the note says the activations are not included), and the
    default call does not import the architecture module (the formula API's import budget)."""
    import subprocess
    import sys

    m = cm.training_memory(7e9, recompute="full", sequence_length=8192.0, loss="fused")
    assert m.total_bytes == cm.training_memory(7e9).total_bytes == 112e9
    assert "not included" in m.activations_note
    code = (
        "import sys, costmodel as cm; cm.training_memory(7e9); "
        "print('costmodel.architecture' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- training_cost: every argument it is given is checked, naming it ------------------------

_RUN = {"tokens": 1e12, "tokens_per_step": 4e6, "step_time_s": 2.0, "ranks": 1024}


@pytest.mark.parametrize(
    ("kw", "starts"),
    [
        # a NaN count wrote the note "a model of nanB parameters"; text raised Python's own
        # "could not convert string to float"
        ({"params": math.nan}, "params: must be a finite number > 0"),
        ({"params": -7e9}, "params: must be a finite number > 0"),
        ({"params": "7B"}, "params: expected a number"),
        # a peak without FLOPs per token was dropped: no MFU, no word why
        ({"peak_flops": 989e12}, "peak_flops: gives the MFU only with flops_per_token"),
        # "'int' object is not iterable", "too many values to unpack"
        ({"step_time_band_s": 0}, "step_time_band_s: expected (low, high) in s"),
        ({"step_time_band_s": (1.0, 2.0, 3.0)}, "step_time_band_s: expected (low, high) in s"),
        # a negative low beside a NaN high was taken for an unknown band and dropped
        ({"step_time_band_s": (-1.0, math.nan)}, "step_time_band_s: must satisfy 0 < low"),
        # "unsupported operand type(s) for -: 'str' and 'datetime.date'" from the price's age
        ({"today": "2026-12-01", "price": "aws-p5-on-demand"}, "today: expected a datetime.date"),
    ],
)
def test_training_cost_refuses_each_bad_argument_by_name(kw, starts):
    kw = {"usd_per_gpu_hour": 2.5, **kw} if "price" not in kw else kw
    with pytest.raises(ValueError) as err:
        cm.training_cost(**_RUN, **kw)
    assert str(err.value).startswith(starts), err.value


def test_training_cost_keeps_an_unknown_band_and_a_valid_call():
    """(nan, nan) is the band of a GPU with no fitted efficiency: no band, no error."""
    c = cm.training_cost(**_RUN, usd_per_gpu_hour=2.5, step_time_band_s=(math.nan, math.nan))
    assert c.step_time_band_s is None
    c = cm.training_cost(
        **_RUN,
        price="aws-p5-on-demand",
        today=dt.date(2026, 12, 1),
        params=70e9,
        flops_per_token=6 * 70e9,
        peak_flops=989.5e12,
        step_time_band_s=(1.8, 2.3),
    )
    assert c.step_time_band_s == (1.8, 2.3) and c.mfu is not None and 0 < c.mfu < 1
    assert c.notes and c.notes[0].startswith("a model of 70B parameters")


# --- strategy_step and the advisor: params beside arch, compute given as text --------------

_STEP = {"arch": "llama-3.1-8b", "cluster": "dgx-h100", "nodes": 2}


@pytest.mark.parametrize(
    "call",
    [
        lambda **kw: cm.strategy_step(**kw),
        lambda **kw: cm.advise_strategy(**kw),
        lambda **kw: cm.fit_suggestions(**kw),
    ],
    ids=["strategy_step", "advise_strategy", "fit_suggestions"],
)
@pytest.mark.parametrize("params", [70e9, math.nan])
def test_a_parameter_count_beside_an_architecture_is_refused_as_elsewhere(call, params):
    """``cm.strategy_step(arch="llama-3.1-8b", params=70e9, ...)`` answered for 8B and dropped
    the 70B (a NaN too), where training_memory, ddp_step and Scenario refuse the pair."""
    with pytest.raises(ValueError) as err:
        call(**_STEP, params=params)
    assert "differs from llama-3.1-8b's 8,030,261,248; give one of them" in str(err.value)
    with pytest.raises(ValueError) as other:
        cm.training_memory(params, arch="llama-3.1-8b")
    assert str(other.value) == str(err.value)


def test_the_architecture_s_own_count_beside_it_is_the_same_step():
    a = cm.load_arch("llama-3.1-8b")
    both = cm.strategy_step(**_STEP, params=a.params, timeline=False)
    assert both.step_time_s == cm.strategy_step(**_STEP, timeline=False).step_time_s


@pytest.mark.parametrize(
    ("kw", "starts"),
    [
        ({"compute_time_s": "400ms"}, "compute_time_s: must be a duration in (0, 1e6] s"),
        ({"compute_time_s": True}, "compute_time_s: must be a duration in (0, 1e6] s"),
        ({"mfu": "abc"}, "mfu: must be a model FLOP utilisation in [0.001, 1], got 'abc'"),
        ({"mfu": np.array([0.3, 0.4])}, "mfu: must be a model FLOP utilisation in [0.001, 1]"),
    ],
)
def test_a_compute_input_that_is_not_a_number_is_named(kw, starts):
    """``cm.strategy_step(..., compute_time_s="400ms")`` (Scenario takes "400ms") raised
    "could not convert string to float: '400ms'", naming no argument; ``True`` was 1 s."""
    with pytest.raises(ValueError) as err:
        cm.strategy_step(**_STEP, **kw)
    assert str(err.value).startswith(starts), err.value
    if kw.get("compute_time_s") == "400ms":
        assert "cm.parse_duration" in str(err.value)


# --- allreduce_time / collective_time: a number written as text -----------------------------


@pytest.mark.parametrize(
    ("call", "starts", "means"),
    [
        # read as a cluster preset file: "50GB/s: preset file does not exist"
        (
            lambda: cm.allreduce_time(14e9, 64, "50GB/s"),
            "bandwidth_bytes_per_s: '50GB/s' is text",
            "bandwidth_bytes_per_s=5e+10",
        ),
        (
            lambda: cm.collective_time("all_gather", 1e9, 8, "400Gb/s"),
            "bandwidth_bytes_per_s: '400Gb/s' is text",
            "bandwidth_bytes_per_s=5e+10",
        ),
        # "bandwidth_bytes_per_s: 5e10 given with a cluster as ranks": the wrong argument
        (lambda: cm.allreduce_time(14e9, "64", 50e9), "ranks: '64' is text", "ranks=64"),
    ],
)
def test_a_number_written_as_text_names_the_argument_and_the_number(call, starts, means):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(starts), err.value
    assert means in str(err.value)


@pytest.mark.parametrize(
    ("call", "starts"),
    [
        (lambda: cm.allreduce_time(14e9, "dgx-h10"), "ranks: unknown cluster preset 'dgx-h10'"),
        (
            lambda: cm.allreduce_time(14e9, 16, "dgx-h10"),
            "bandwidth_bytes_per_s: unknown cluster preset 'dgx-h10'",
        ),
    ],
)
def test_an_unknown_cluster_names_the_argument_it_came_in(call, starts):
    """It said "name: unknown cluster preset", naming an argument neither function has."""
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(starts), err.value
    assert "closest: dgx-h100" in str(err.value)
    assert cm.allreduce_time(14e9, "dgx-h100") == cm.allreduce_time(14e9, 8, "dgx-h100")


# --- a collective is read as people write it on every surface, not only two CLI commands ----


@pytest.mark.parametrize("spelling", ["all-reduce", "AllReduce", "all reduce"])
def test_the_api_and_the_sweep_read_a_collective_as_the_cli_does(spelling):
    """`costmodel collective all-reduce` and `predict --op AllReduce` answered, but
    the API (``cm.bytes_per_rank("all-reduce", ...)``,
    ``cm.predict_collective("AllReduce", ...)``) and ``costmodel sweep --set op=all-reduce``
    refused the same words: one spelling rule (``tables.canonical_op``) now serves them all."""
    calls = [
        lambda op: cm.bytes_per_rank(op, 1e9, 8),
        lambda op: cm.busbw_factor(op, 8),
        lambda op: cm.bus_bandwidth(op, 1e9, 8, 0.01),
        lambda op: cm.collective_time(op, 1e9, 8, 50e9),
        lambda op: cm.collective_time(op, 1e9, "dgx-h100"),
        lambda op: cm.crossover_bytes("ring", "tree", 64, 50e9, 5e-6, op=op),
        lambda op: float(cm.predict_collective(op, 1e9, "dgx-h100").time_s),
        lambda op: cm.predict_all_algorithms(op, 1e9, "dgx-h100").op,
    ]
    for call in calls:
        assert call(spelling) == call("all_reduce")
    df = cm.sweep(preset="dgx-h100", nodes="1", size="1GB", op=spelling)
    want = cm.sweep(preset="dgx-h100", nodes="1", size="1GB", op="all_reduce")
    assert df.equals(want) and list(df.op) == ["all_reduce"]


def test_a_collective_that_is_no_spelling_is_still_refused_naming_the_allowed():
    for call in (
        lambda: cm.bytes_per_rank("allreduc", 1e9, 8),
        lambda: cm.predict_collective("allreduc", 1e9, "dgx-h100"),
        lambda: cm.bytes_per_rank(np.array([1, 2]), 1e9, 8),  # was "unhashable type"
    ):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value).startswith("op: unknown collective"), err.value
        assert "allowed: all_reduce, reduce_scatter" in str(err.value)


# --- help(cm.X): every formula states its equation, its units and where it comes from ---------

FORMULAS = [
    "allreduce_time", "collective_time", "bytes_per_rank", "bus_bandwidth",
    "algorithm_bandwidth", "busbw_factor", "allreduce_lower_bound_bytes", "crossover_bytes",
    "hierarchical_allreduce_time", "flat_ring_allreduce_time", "training_memory", "max_params",
    "min_ranks", "global_batch", "solve_batch", "global_batch_from_tokens",
    "scale_learning_rate", "ddp_step", "training_cost",
]  # fmt: skip
_UNIT = r"\[(s|B|B/s|-|samples|FLOP|USD)[^\]]*\]"
_REFERENCE = (
    r"et al\.|Thakur|Patarasuk|Rajbhandari|Goyal|McCandlish|Malladi|nccl-tests|arXiv|"
    r"PyTorch|module docstring"
)


@pytest.mark.parametrize("name", FORMULAS)
def test_a_formula_s_help_has_its_equation_units_and_a_reference(name):
    """``help(cm.flat_ring_allreduce_time)``, ``hierarchical_allreduce_time``,
    ``bytes_per_rank``, ``crossover_bytes``, ``max_params``, ``min_ranks`` and the batch
    formulas named no source (``min_ranks`` and ``solve_batch`` no unit either)."""
    import inspect
    import re

    doc = inspect.getdoc(getattr(cm, name)) or ""
    assert re.search(r":math:|math::|``[^`]*=[^`]*``|=", doc), f"{name}: no equation"
    assert re.search(_UNIT, doc), f"{name}: no unit in [brackets]"
    assert re.search(_REFERENCE, doc), f"{name}: no reference"


# --- solve_batch: an array is one configuration too many, not "not a whole number" ---------


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"local_batch": np.array([8, 16]), "ranks": 64, "global_batch": 8192}, "local_batch"),
        ({"local_batch": 4, "ranks": [64, 128], "global_batch": 8192}, "ranks"),
        (
            {"local_batch": 1, "ranks": 512, "global_tokens": np.array([2**22, 2**23]),
             "sequence_length": 4096},
            "global_tokens",
        ),
    ],
)  # fmt: skip
def test_solve_batch_of_an_array_says_one_configuration_per_call(kw, field):
    """``cm.solve_batch(local_batch=np.array([8, 16]), ranks=64, global_batch=8192)`` said
    "local_batch: must be a whole number >= 1, got array([ 8, 16])": they are whole numbers;
    what is wrong is that there are two of them."""
    with pytest.raises(ValueError) as err:
        cm.solve_batch(**kw)
    text = str(err.value)
    assert text.startswith(f"{field}: one whole number >= 1 per call"), text
    assert "once per value" in text
    one = cm.solve_batch(local_batch=np.int64(4), ranks=np.array(64), global_batch=8192.0)
    assert one.accumulation == 32


# --- the fit scripts: --help or a typo never rewrites the shipped files ---------------------


@pytest.mark.parametrize(
    ("script", "writes"),
    [
        ("calibration_holdout.py", "docs/calibration.md"),
        ("fit_corrections.py", "costmodel/data/fitted_corrections.toml"),
    ],
)
def test_a_fit_script_s_help_prints_usage_and_writes_nothing(script, writes):
    """``python scripts/calibration_holdout.py --help`` ran the whole held-out job and rewrote
    docs/calibration.md (``fit_corrections.py --help`` would refit and rewrite the fitted
    terms: 10-30 minutes); an unknown option ran it too."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    before = (root / writes).read_bytes()
    for args, rc, says in (
        (["--help"], 0, "Usage"),
        (["--bogus"], 2, "unknown option '--bogus'; allowed: "),
    ):
        out = subprocess.run(
            [sys.executable, str(root / "scripts" / script), *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == rc, (args, out.stdout[-500:], out.stderr[-500:])
        assert says in out.stdout + out.stderr
    assert (root / writes).read_bytes() == before


# --- a size, time or count written as text says the number it means --------------------------


@pytest.mark.parametrize(
    ("call", "starts", "means"),
    [
        (lambda: cm.allreduce_time("14GB", 64, 50e9), "message_bytes: expected a number",
         "message_bytes=1.4e+10 (cm.parse_bytes('14GB'))"),
        (lambda: cm.allreduce_time(14e9, 64, 50e9, "5us"), "latency_s: expected a number",
         "latency_s=5e-06 (cm.parse_duration('5us'))"),
        (lambda: cm.training_memory(7e9, cuda_context_bytes="2GiB"),
         "cuda_context_bytes: expected a number", "cuda_context_bytes=2.14748e+09"),
        # "arch: unknown architecture '7B'" although Scenario(params="7B") reads it
        (lambda: cm.training_memory("7B"), "params: '7B' is neither a number nor an architecture",
         "params=7e+09 (cm.parse_count('7B'))"),
        (lambda: cm.ddp_step("7B", 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9),
         "params: '7B' is neither a number nor an architecture", "params=7e+09"),
        # the step reads a name as training_memory does, so its refusal is theirs
        (lambda: cm.strategy_step(params="7B", cluster="dgx-h100"),
         "params: '7B' is neither a number nor an architecture", "params=7e+09"),
    ],
)  # fmt: skip
def test_a_quantity_written_as_text_says_the_number_it_means(call, starts, means):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(starts), err.value
    assert means in str(err.value)


def test_an_unknown_architecture_is_still_an_unknown_architecture():
    with pytest.raises(ValueError, match=r"^arch: unknown architecture 'llama-2-7bb'; closest"):
        cm.training_memory("llama-2-7bb")
    assert (
        cm.training_memory("llama-2-7b").total_bytes
        == cm.training_memory(arch="llama-2-7b").total_bytes
    )


@pytest.mark.parametrize(
    ("kw", "starts"),
    [
        ({"cluster": 2}, "cluster: a cluster preset name or a Cluster"),
        ({"cluster": "dgx-h100", "layout": "fsdp"}, "layout: a Layout"),
    ],
)
def test_a_cluster_or_layout_of_the_wrong_kind_is_named(kw, starts):
    """``cm.strategy_step(arch=..., cluster=2)`` (meaning two nodes) raised AttributeError
    "'int' object has no attribute 'nodes'" from inside the step; ``layout="fsdp"`` likewise."""
    with pytest.raises(ValueError) as err:
        cm.strategy_step(arch="llama-3.1-8b", **kw)
    assert str(err.value).startswith(starts), err.value


@pytest.mark.parametrize("path", [0, math.nan, None])
def test_load_hf_config_of_something_that_is_no_path_is_named(path):
    """``cm.load_hf_config(0)`` raised Python's TypeError "expected str, bytes or os.PathLike
    object, not int"."""
    with pytest.raises(ValueError, match=r"^arch: the path of a config.json \(a str or Path\)"):
        cm.load_hf_config(path)


@pytest.mark.parametrize(
    ("call", "starts"),
    [
        (lambda: cm.allreduce_time(1e9, 8, 50e9, algorithm=["ring", "tree"]),
         "algorithm: one name per call"),
        (lambda: cm.crossover_bytes(["ring"], "tree", 8, 50e9, 5e-6),
         "algorithm_a: one name per call"),  # the argument of the two it has
        (lambda: cm.training_memory(7e9, recipe=np.array(["mixed-adam"])),
         "recipe: unknown recipe array("),
        (lambda: cm.scale_learning_rate(0.1, 256, 8192, rule=["linear"]),
         "rule: unknown learning-rate rule ['linear']"),
    ],
)  # fmt: skip
def test_a_list_where_one_name_goes_is_named(call, starts):
    """``algorithm=["ring", "tree"]`` (as numbers broadcast) raised "unhashable type: 'list'";
    so did a recipe or a learning-rate rule given as an array."""
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(starts), err.value
    assert "allowed: " in str(err.value)


@pytest.mark.parametrize("params", [7e9, "llama-2-7b"])
def test_numpy_integers_are_counts_in_the_activation_recipe(params):
    """``cm.training_memory("llama-2-7b", sequence_length=np.int64(4096))`` (a DataFrame cell)
    was "sequence_length: must be a whole number >= 1 tokens, got np.int64(4096)"."""
    got = cm.training_memory(params, sequence_length=np.int64(4096), micro_batch=np.int32(2))
    want = cm.training_memory(params, sequence_length=4096, micro_batch=2)
    assert got.total_bytes == want.total_bytes
    a = cm.load_arch("llama-2-7b")
    assert a.training_flops_per_token(np.int64(4096)) == a.training_flops_per_token(4096)
