"""A notebook user's QA pass of ``import costmodel as cm``: arrays and numbers in, the errors
out, the docstrings of ``cm.__all__``, the doctests the suite collects, and the lesson's
answers through one array call.

Found and fixed here:

- an overflowing **array** (``cm.training_memory(np.array([1.0, 1e308]))``, ``bytes_per_rank``,
  ``algorithm_bandwidth``, ``bus_bandwidth``, ``allreduce_lower_bound_bytes``,
  ``hierarchical_allreduce_time``, ``scale_learning_rate``) printed numpy's ``RuntimeWarning:
  overflow encountered in multiply`` (up to seven of them) before the one clear ValueError that
  a plain number got alone: ``_checks.finite_result`` now runs an array call under
  ``np.errstate`` and checks the result itself;
- a ``Scenario`` given an array or a list (``nodes=np.array([1, 2])``) said "nodes: Input should
  be a valid integer", with no range and no word of why: it now says the range, what it got
  and that one Scenario is one setup (several: a loop or ``cm.sweep``);
- ``cm.Layout(...)`` refused with pydantic's multi-line report and its URL (a NaN contention
  read "less than or equal to 1"): a one-line ``LayoutError`` with the field's range;
- ``Cluster.with_nodes`` refused ``np.int64(2)`` and ``2.0`` (which ``cm.cluster`` takes) and
  said every refusal in pydantic's multi-line report: the same counts now, one line, the range;
- ``cm.__all__`` listed ``sweep`` twice (an export and a submodule);
- ``strategy_step``, ``strategy_memory`` and ``training_cost`` sent the reader to their module
  docstring for the equation; ``predict_all_algorithms`` and ``billed_gpus_per_node`` named no
  unit or reference; ``costmodel.validation`` had no docstring;
- the doctests of ``costmodel/web`` (``common``, ``data_collectives``, ``page_memory``,
  ``page_validate``: 17 examples) were never collected (pyproject's ``--ignore=costmodel/web``):
  they run here.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import costmodel as cm

ROOT = Path(__file__).resolve().parents[1]

# --- arrays in, arrays out; numbers in, Python floats out --------------------------------------

FORMULAS = {
    # name -> a call taking (message-or-params, ranks) as the broadcast pair
    "allreduce_time": lambda m, n: cm.allreduce_time(m, n, 50e9),
    "collective_time": lambda m, n: cm.collective_time("all_gather", m, n, 50e9),
    "bytes_per_rank": lambda m, n: cm.bytes_per_rank("all_reduce", m, n),
    "allreduce_lower_bound_bytes": lambda m, n: cm.allreduce_lower_bound_bytes(m, n),
    "bus_bandwidth": lambda m, n: cm.bus_bandwidth("all_reduce", m, n, 0.05),
    "hierarchical_allreduce_time": lambda m, n: cm.hierarchical_allreduce_time(
        m, n, 8, 450e9, 50e9
    ),
    "flat_ring_allreduce_time": lambda m, n: cm.flat_ring_allreduce_time(m, n, 8, 450e9, 8, 50e9),
    "training_memory": lambda m, n: cm.training_memory(m, zero_stage=3, dp_ranks=n).total_bytes,
    "max_params": lambda m, n: cm.max_params(m, zero_stage=3, dp_ranks=n),
}
SIZES = np.array([1e6, 1e9])
RANKS = np.array([8, 64, 512])


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_numbers_give_a_python_float_and_arrays_the_broadcast_shape(name: str) -> None:
    f = FORMULAS[name]
    one = f(1e9, 64)
    assert type(one) is float
    # a 0-d array, numpy scalars and integer dtypes are numbers too: the same float
    for m, n in ((np.array(1e9), np.array(64)), (np.float64(1e9), np.int32(64)), (10**9, 64)):
        got = f(m, n)
        assert type(got) is float and got == pytest.approx(one, rel=1e-12), (m, n, got)
    grid = f(SIZES[:, None], RANKS)
    assert isinstance(grid, np.ndarray) and grid.shape == (2, 3) and grid.dtype == np.float64
    assert grid[1, 1] == pytest.approx(one, rel=1e-12)
    ints = f(np.array([10**6, 10**9], dtype=np.int32), np.array([64, 64], dtype=np.int64))
    assert ints.shape == (2,) and ints[1] == pytest.approx(one, rel=1e-12)


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_shapes_that_do_not_broadcast_are_refused_naming_both_arguments(name: str) -> None:
    with pytest.raises(ValueError, match=r"shapes do not broadcast together \(.*\(2,\).*\(3,\)"):
        FORMULAS[name](SIZES, RANKS)


@pytest.mark.parametrize("name", sorted(FORMULAS))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_nan_inf_and_negative_sizes_are_refused_naming_the_field(name: str, bad: float) -> None:
    field = "memory_bytes" if name == "max_params" else "params"
    field = field if name in ("training_memory", "max_params") else "message_bytes"
    # a message size in the range every command holds it to (0..2**44 B)
    rule = r"between 0 and 2\*\*44 B" if field == "message_bytes" else r"a finite number >?=? 0"
    for value in (bad, np.array([1e6, bad])):
        with pytest.raises(ValueError, match=rf"^{field}: must be {rule}"):
            FORMULAS[name](value, 64)


# --- an overflow is one clear error, with no numpy warning before it ---------------------------

OVERFLOWS = {
    "bytes_per_rank": lambda m: cm.bytes_per_rank("all_reduce", m, 64),
    "allreduce_lower_bound_bytes": lambda m: cm.allreduce_lower_bound_bytes(m, 64),
    "algorithm_bandwidth": lambda m: cm.algorithm_bandwidth(m, 1e-300),
    "bus_bandwidth": lambda m: cm.bus_bandwidth("all_reduce", m, 64, 1e-300),
    "hierarchical_allreduce_time": lambda m: cm.hierarchical_allreduce_time(m, 2, 8, 1e-10, 1e-10),
    "training_memory": lambda m: cm.training_memory(m),
    "scale_learning_rate": lambda m: cm.scale_learning_rate(m, 1, 1e12),
    "allreduce_time": lambda m: cm.allreduce_time(m, 64, 1e-10),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
@pytest.mark.parametrize("kind", ["number", "array"])
def test_an_overflow_is_one_value_error_and_no_runtime_warning(name: str, kind: str) -> None:
    """``training_memory(np.array([1.0, 1e308]))`` printed seven ``RuntimeWarning``s (overflow
    in multiply, invalid value) before its ValueError; the number 1e308 printed none."""
    value = 1e308 if kind == "number" else np.array([1.0, 1e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning fails here
        # or, for a message size, refused by its range (0..2**44 B) before it could overflow,
        # and a parameter count by its limit (0..1e15)
        with pytest.raises(
            ValueError,
            match=r"is not finite \(overflow\) with |must be between 0 and 2\*\*44 B"
            r"|params: must be a parameter count in 0\.\.1e15",
        ):
            OVERFLOWS[name](value)


def test_an_array_that_stays_finite_is_answered_under_the_quiet_errstate() -> None:
    """The errstate only quiets numpy: a finite array answer is unchanged, and numpy's own
    error settings are as they were after the call."""
    before = np.geterr()
    got = cm.training_memory(np.array([7e9, 70e9])).total_bytes
    assert np.geterr() == before
    assert got.tolist() == [112e9, 1120e9]


# --- a Scenario is one setup: an array says so -------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "allowed", "got"),
    [
        ("nodes", np.array([1, 2]), "[1, 1,000,000]", "an array of shape (2,)"),
        ("params", np.array([7e9, 1e9]), "[1, 1e+15]", "an array of shape (2,)"),
        ("mfu", [0.3, 0.4], "[0.001, 1]", "a list of 2"),
        ("local_batch", (1, 2), "[1, 1,000,000]", "a tuple of 2"),
    ],
)
def test_a_scenario_given_an_array_names_the_field_its_range_and_why(
    field: str, value: object, allowed: str, got: str
) -> None:
    kw: dict[str, object] = {"params": 7e9, "mfu": 0.4, field: value}
    with pytest.raises(cm.ScenarioError) as err:
        cm.Scenario(**kw)
    text = str(err.value)
    assert text.startswith(f"{field}: Input should be a valid "), text
    assert f"; allowed: {allowed} (got {got}; one Scenario is one setup" in text, text
    assert "`cm.sweep`" in text


def test_a_scenario_given_none_or_text_for_a_number_says_the_range() -> None:
    with pytest.raises(cm.ScenarioError, match=r"^nodes: .*; allowed: \[1, 1,000,000\]$"):
        cm.Scenario(params=7e9, nodes=None)
    with pytest.raises(cm.ScenarioError, match=r"^mfu: .*; allowed: \[0\.001, 1\] \(got 'abc'\)$"):
        cm.Scenario(params=7e9, mfu="abc")


def test_a_scenario_takes_numpy_scalars_and_0d_arrays_as_numbers() -> None:
    plain = cm.Scenario(params=7e9, nodes=2, mfu=0.4, local_batch=4)
    numpy = cm.Scenario(
        params=np.array(7e9), nodes=np.int64(2), mfu=np.array(0.4), local_batch=np.int32(4)
    )
    assert numpy == plain
    assert numpy.evaluate(scaling=False).step_time_s == plain.evaluate(scaling=False).step_time_s


# --- a Layout's refusal is one line too ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "text"),
    [
        (
            {"strategy": "fsdp", "ranks": 0},
            "ranks: Input should be greater than or equal to 1; allowed: [1, 1,000,000,000] (got 0)",
        ),
        (
            {"strategy": "fsdp", "comm_contention": float("nan")},
            "comm_contention: must be an overlap contention in [0, 1], got nan",
        ),
        (
            {"strategy": "hsdp", "ranks": 16, "group_size": 3},
            "group_size: 3 does not divide the 16 ranks; allowed: 1, 2, 4, 8, 16",
        ),
        ({"strategy": "ddp", "ranks": True}, "ranks: expected a number, got a bool (True)"),
    ],
)
def test_a_refused_layout_is_one_line_naming_the_field_and_range(
    kw: dict[str, object], text: str
) -> None:
    """``cm.Layout(strategy="fsdp", ranks=0)`` raised pydantic's multi-line report with an
    errors.pydantic.dev URL, and a NaN contention was "less than or equal to 1"; the refusal is
    now a ``LayoutError`` (still a pydantic ``ValidationError`` and a ValueError) of one line."""
    import pydantic

    with pytest.raises(pydantic.ValidationError) as err:
        cm.Layout(**kw)
    assert type(err.value).__name__ == "LayoutError"
    assert isinstance(err.value, ValueError)
    assert str(err.value) == text
    assert "\n" not in str(err.value) and "errors.pydantic.dev" not in str(err.value)
    assert err.value.errors()[0]["loc"] in ((), (next(iter(text.split(":"))),))


def test_a_step_refuses_a_nan_contention_with_its_range() -> None:
    """``strategy_step(..., comm_contention=nan)`` said "Input should be a finite number (got
    nan)" with no range (make_layout's own wording); it says the Layout's, range included."""
    with pytest.raises(ValueError) as err:
        cm.strategy_step(7e9, cluster="dgx-h100", nodes=2, comm_contention=float("nan"))
    assert str(err.value) == "comm_contention: must be an overlap contention in [0, 1], got nan"


# --- cm.__all__: listed once, every public function documented -------------------------------


def test_all_lists_each_name_once_and_every_name_resolves() -> None:
    assert len(cm.__all__) == len(set(cm.__all__)), sorted(
        n for n in set(cm.__all__) if cm.__all__.count(n) > 1
    )
    assert cm.__all__ == sorted(cm.__all__)
    for name in cm.__all__:
        assert getattr(cm, name) is not None


# the functions that compute a quantity: each docstring states its equation, its unit and a
# reference (a citation, DESIGN's or a doc's section, nccl-tests' or PyTorch's docs)
FORMULA_FUNCTIONS = (
    "algorithm_bandwidth",
    "allreduce_lower_bound_bytes",
    "allreduce_time",
    "billed_gpus_per_node",
    "bucket_assignment",
    "bus_bandwidth",
    "busbw_factor",
    "bytes_per_rank",
    "collective_time",
    "crossover_bytes",
    "ddp_step",
    "flat_ring_allreduce_time",
    "global_batch",
    "global_batch_from_tokens",
    "hierarchical_allreduce_time",
    "max_params",
    "min_ranks",
    "predict_all_algorithms",
    "predict_collective",
    "scale_learning_rate",
    "solve_batch",
    "strategy_memory",
    "strategy_step",
    "training_cost",
    "training_memory",
)
EQUATION = re.compile(
    r":math:|\.\. math::|``[^`]*[\w)\]] ?= ?[^`]+``|[\w)] = [^,;\n]*[-+*/x]|\d\s*\(N\s*[-+]"
)
UNIT = re.compile(r"\[(?:s|B|B/s|-|samples|tokens|USD|FLOP|FLOP/s|W|GPUs?)\]")
REFERENCE = re.compile(
    r"[A-Z][a-z]+(?: et al\.| & [A-Z][a-z]+)?\s+\(?(?:19|20)\d\d"  # Goyal et al. 2017
    r"|DESIGN(?:\.md)? (?:section )?\d|docs/[a-z-]+\.md|arXiv:\d|nccl-tests|PyTorch|presets/"
)


def test_the_formula_list_covers_every_public_function_that_computes() -> None:
    """Every public function is either a formula (held to equation, unit, reference below) or
    one of the named lookups, parsers and formatters; a new export has to be placed."""
    others = {
        "advise_strategy", "advise_strategy_nodes", "fit_suggestions",  # rank strategy_step's
        "arch_names", "price_names", "prices_for_gpu", "load_arch", "load_price",  # lookups
        "load_hf_config", "cluster",  # readers of presets and files
        "parse_bytes", "parse_rate", "parse_duration", "parse_count", "parse_tokens",  # units.py
        "format_bytes", "format_rate", "format_duration",
    }  # fmt: skip
    functions = {
        n
        for n in cm.__all__
        if inspect.isfunction(getattr(cm, n)) or type(getattr(cm, n)).__name__ == "function"
    }
    assert functions - set(FORMULA_FUNCTIONS) - others == set()
    assert set(FORMULA_FUNCTIONS) <= functions


@pytest.mark.parametrize("name", FORMULA_FUNCTIONS)
def test_a_formula_docstring_states_its_equation_unit_and_reference(name: str) -> None:
    doc = inspect.getdoc(getattr(cm, name)) or ""
    missing = [
        what
        for what, pattern in (("equation", EQUATION), ("unit", UNIT), ("reference", REFERENCE))
        if not pattern.search(doc)
    ]
    assert missing == [], f"cm.{name}: its docstring has no {', '.join(missing)}"


@pytest.mark.parametrize(
    "name", [n for n in cm.__all__ if inspect.ismodule(getattr(cm, n)) or callable(getattr(cm, n))]
)
def test_every_public_module_class_and_function_has_a_docstring(name: str) -> None:
    doc = inspect.getdoc(getattr(cm, name)) or ""
    first = doc.split("\n\n", 1)[0]
    assert len(first) >= 30, f"cm.{name}: {first!r}"


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("parse_bytes", "[B]"),
        ("parse_rate", "B/s"),
        ("parse_duration", "seconds"),
        ("format_bytes", "byte"),
        ("format_rate", "bytes per second"),
        ("format_duration", "seconds"),
    ],
)
def test_the_unit_functions_say_their_si_unit(name: str, unit: str) -> None:
    assert unit in (inspect.getdoc(getattr(cm, name)) or "").split("\n\n", 1)[0]


# --- doctests: every module with examples is run -----------------------------------------------

WEB_WITH_EXAMPLES = sorted(
    p.stem for p in (ROOT / "costmodel" / "web").glob("*.py") if ">>>" in p.read_text("utf-8")
)


def test_pyproject_collects_the_library_doctests_but_not_web() -> None:
    """The suite runs ``--doctest-modules`` over ``costmodel/`` less ``costmodel/web`` (the app's
    pages run Streamlit when imported); the web modules' examples run in the test below."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    assert '"--doctest-modules' in text and "--ignore=costmodel/web" in text
    assert {"common", "data_collectives", "page_memory", "page_validate"} <= set(WEB_WITH_EXAMPLES)


@pytest.mark.parametrize("stem", WEB_WITH_EXAMPLES)
def test_the_web_modules_doctests_run(stem: str) -> None:
    module = importlib.import_module(f"costmodel.web.{stem}")
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a "\/" in a docstring's example
        result = doctest.testmod(module, optionflags=flags, report=False)
    assert result.attempted > 0
    assert result.failed == 0, f"costmodel.web.{stem}: {result.failed} doctest(s) failed"


# --- the lesson's answers through one array call (docs/lesson.md) ------------------------------


def test_section_5_quiz_bytes_per_rank_at_8_and_512_in_one_call() -> None:
    got = cm.bytes_per_rank("all_reduce", 1.0, np.array([8, 512]))
    assert got.tolist() == pytest.approx([1.75, 1.996], abs=0.0005)  # 1.75 M, 1.996 M


def test_section_6_in_network_reduction_volume_ratio_at_64_and_512_in_one_call() -> None:
    n = np.array([64, 512])
    ratio = cm.bytes_per_rank("all_reduce", 1e9, n, "nvls") / cm.bytes_per_rank(
        "all_reduce", 1e9, n
    )
    assert ratio.tolist() == pytest.approx([0.516, 0.502], abs=0.0005)  # (N+1)/(2(N-1))


def test_practice_1a_and_1c_xdr_in_one_call_over_the_bandwidths() -> None:
    """14 GB on 64 GPUs: 0.55 s at NDR's 50 GB/s, 275 ms at XDR's 100 GB/s."""
    t = cm.allreduce_time(14e9, 64, np.array([50e9, 100e9]))
    assert t[0] == pytest.approx(0.55, abs=0.005)  # "0.55 s"
    assert t[1] * 1e3 == pytest.approx(275, abs=1.0)  # "~275 ms" (275.6)


def test_section_9_and_practice_2_memory_in_one_call() -> None:
    """7B needs 112 GB and 70B about 1.1 TB; 30B under plain DP 480 GB at any rank count, under
    ZeRO-3 on 16 GPUs 30 GB."""
    big = cm.training_memory(np.array([7e9, 70e9])).total_bytes
    assert big[0] / 1e9 == pytest.approx(112, abs=0.5)  # "112 GB"
    assert big[1] / 1e12 == pytest.approx(1.1, abs=0.05)  # "about 1.1 TB"
    ranks = np.array([1, 16, 64])
    plain = cm.training_memory(30e9, dp_ranks=ranks).total_bytes
    assert plain.tolist() == pytest.approx([480e9] * 3, abs=0.5e9)
    zero3 = cm.training_memory(30e9, zero_stage=3, dp_ranks=ranks).total_bytes
    assert zero3[1] / 1e9 == pytest.approx(30, abs=0.5)


# --- Cluster.with_nodes reads a count as cm.cluster does ---------------------------------------


def test_with_nodes_takes_numpy_integers_and_refuses_in_one_line() -> None:
    """``cm.cluster("dgx-h100").with_nodes(np.int64(2))`` (an element of an array of node
    counts) and ``with_nodes(2.0)`` were refused ("Input should be a valid integer"), and every
    refusal was pydantic's multi-line report with its URL; ``cm.cluster(..., nodes=np.int64(2))``
    took both. Now the same counts, and one line with the range."""
    c = cm.cluster("dgx-h100")
    assert c.with_nodes(np.int64(2)).nodes == c.with_nodes(2.0).nodes == 2
    for bad, said in ((0, "0"), (float("nan"), "nan"), (2.5, "2.5"), (10**7, "10,000,000")):
        with pytest.raises(ValueError) as err:
            c.with_nodes(bad)
        assert str(err.value) == (
            f"nodes: must be a whole number in 1..1,000,000, got {said} (dgx-h100)"
        )
    with pytest.raises(ValueError, match=r"^nodes: one count per call"):
        c.with_nodes(np.array([1, 2]))


def test_a_bool_array_is_no_count() -> None:
    """``cm.global_batch(np.array([True]), 64, 1)`` answered ``[64]`` (True read as a local
    batch of 1), where ``global_batch(True, 64, 1)`` and every formula's bool array are refused."""
    with pytest.raises(ValueError, match=r"^local_batch: must be a whole number in 1\.\.1,000,000"):
        cm.global_batch(np.array([True]), 64, 1)
    with pytest.raises(ValueError, match=r"^ranks: must be a whole number in 1\.\."):
        cm.global_batch(4, [True, False], 1)
    with pytest.raises(
        ValueError, match=r"^global_tokens: must be a whole number of tokens in 1\.\.1e16"
    ):
        cm.global_batch_from_tokens(np.array([True]), 4096)
    assert cm.global_batch(np.array([4, 8]), 64, 1).tolist() == [256, 512]


# --- docs/*.md: any Python block there runs ----------------------------------------------------


def _python_blocks(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text("utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if re.match(r"^```(python|py)\s*$", lines[i]):
            j = i + 1
            while lines[j] != "```":
                j += 1
            out.append((i + 1, "\n".join(lines[i + 1 : j])))
            i = j
        i += 1
    return out


def test_the_python_blocks_of_docs_run_verbatim(tmp_path, monkeypatch) -> None:
    """README.md's blocks run in tests/test_readme.py; docs/*.md show Python only inline (no
    fenced block today). Any fenced Python block added there runs here, in order per page, as a
    notebook would run it."""
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 5
    monkeypatch.chdir(tmp_path)
    for page in pages:
        namespace: dict[str, object] = {"__name__": "__main__"}
        for line, code in _python_blocks(page):
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)  # noqa: S102


def test_an_architecture_sized_at_several_sequence_lengths_says_one_per_call() -> None:
    """``training_memory(arch=..., sequence_length=np.array([2048, 4096]))`` said "must be a
    whole number >= 1 tokens, got array([2048, 4096])": both are. It says one is taken."""
    with pytest.raises(ValueError) as err:
        cm.training_memory(arch="llama-2-7b", sequence_length=np.array([2048, 4096]))
    assert str(err.value).startswith(
        "sequence_length: one whole number >= 1 tokens per call (an architecture's"
    )
    with pytest.raises(ValueError, match=r"^micro_batch: one whole number >= 1 sequences per call"):
        cm.load_arch("llama-2-7b").activation_bytes(4096, [1, 2])
    one = cm.training_memory(arch="llama-2-7b", sequence_length=np.int32(2048)).total_bytes
    assert one == cm.training_memory(arch="llama-2-7b", sequence_length=2048).total_bytes


@pytest.mark.parametrize(
    ("parse", "field"),
    [
        (cm.parse_bytes, "size"),
        (cm.parse_rate, "bandwidth"),
        (cm.parse_duration, "duration"),
        (cm.parse_count, "count"),
        (cm.parse_tokens, "tokens"),
    ],
)
def test_a_parser_given_an_array_names_its_field(parse, field: str) -> None:
    """``cm.parse_bytes(np.array([1e9]))`` raised numpy's "only 0-dimensional arrays can be
    converted to Python scalars", naming nothing; a 0-d array and numpy scalars still parse."""
    with pytest.raises(TypeError) as err:
        parse(np.array([1e9]))
    assert str(err.value) == (
        f"{field}: expected a number or a string, got an array of shape (1,); one value per call"
    )
    assert parse(np.array(5.0)) == parse(np.float32(5.0)) == parse(5.0) == 5
