"""QA pass 24: a 0-byte message takes 0 s in the formulas as in ``predict_collective``; the
activations' note without brackets inside brackets; a comma-thousands number in a list option
refused; ``validate`` options a harness results file overrides said so."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel as cm
from costmodel import collectives as c
from costmodel import topology
from tests._cli import one_line_error, run
from tests.test_wording_qa import _nested  # its own check can fail there

A, BW = 5e-6, 50e9  # a 5 us step latency over NDR


# --- a 0-byte message: 0 s in every formula, as predict_collective says -----------------------
NAMED = [
    c.allreduce_ring,
    c.allreduce_tree,
    c.allreduce_binomial_tree,
    c.allreduce_recursive_doubling,
    c.allreduce_halving_doubling,
    c.allreduce_nvls,
    c.allreduce_naive_root,
    c.allreduce_naive_all_to_all,
    c.reduce_scatter_ring,
    c.reduce_scatter_halving,
    c.all_gather_ring,
    c.all_gather_recursive_doubling,
    c.broadcast_chain,
    c.broadcast_binomial_tree,
    c.reduce_chain,
    c.reduce_binomial_tree,
    c.all_to_all_pairwise,
]


@pytest.mark.parametrize("fn", NAMED, ids=[f.__name__ for f in NAMED])
def test_every_named_formula_takes_0_s_for_0_bytes(fn):
    assert fn(0.0, 8, BW, A) == 0.0  # the scalar path
    assert fn(0, 8, BW, A) == 0.0  # an int 0
    got = fn(np.array([0.0, 1e6, 0.0]), 8, BW, A)  # the array path, element-wise
    assert got[0] == 0.0 and got[2] == 0.0
    assert got[1] == pytest.approx(fn(1e6, 8, BW, A), rel=1e-12)
    assert got[1] > A  # a sent message still pays its latency


@pytest.mark.parametrize("op", cm.OPS)
def test_api_collective_time_agrees_with_predict_at_0_bytes(op):
    """``cm.collective_time`` over one link and on a cluster, and ``predict_collective`` on the
    same cluster under the same model, all say 0 s for 0 B; arrays element-wise."""
    assert cm.collective_time(op, 0, 8, BW, A) == 0.0
    ring = cm.collective_time(op, [0.0, 4096.0], [8, 64], BW, A)
    assert ring[0] == 0.0 and ring[1] > 0.0
    cluster = cm.cluster("dgx-h100", nodes=2)
    for model in ("textbook", "lesson"):
        assert cm.collective_time(op, 0.0, cluster, model=model) == 0.0
        p = cm.predict_collective(op, np.array([0.0, 4096.0]), cluster, model=model)
        assert p.time_s[0] == 0.0
        assert cm.collective_time(op, np.array([0.0, 4096.0]), cluster, model=model)[
            1
        ] == pytest.approx(p.time_s[1], rel=1e-12)


def test_allreduce_time_0_bytes_with_latency_is_0():
    """The case as reported: a latency term made ``allreduce_time(0, ...)`` 2(N-1) alpha."""
    assert cm.allreduce_time(0, 8, BW, A) == 0.0
    assert cm.allreduce_time(0, 8, BW, A, algorithm="tree") == 0.0
    # the latency term is still there for any message that is sent
    assert cm.allreduce_time(1.0, 8, BW, A) - cm.allreduce_time(1.0, 8, BW) == pytest.approx(
        14 * A, rel=1e-9
    )


@pytest.mark.parametrize("sharp", [False, True])
@pytest.mark.parametrize("mode", ["serial", "pipelined"])
def test_topology_times_are_0_s_for_0_bytes(sharp, mode):
    args = (2, 8, 450e9, 50e9, 1e-6, 5e-6)
    assert (
        topology.hierarchical_allreduce_time(0.0, *args, mode=mode, in_network_reduction=sharp)
        == 0.0
    )
    both = topology.hierarchical_allreduce_time(
        np.array([0.0, 1e6]), *args, mode=mode, in_network_reduction=sharp
    )
    assert both[0] == 0.0 and both[1] > 0.0
    phases = topology.hierarchical_allreduce_phases(0.0, *args, in_network_reduction=sharp)
    assert all(v == 0.0 for v in phases.values()), phases
    flat = (2, 8, 450e9, 8, 50e9, 1e-6, 5e-6)
    assert topology.flat_ring_allreduce_time(0.0, *flat) == 0.0
    assert topology.flat_ring_allreduce_time(np.array([0.0, 1.0]), *flat)[0] == 0.0


# --- the activations' note and the unknown band: no brackets inside brackets ------------------
@pytest.mark.parametrize(
    "args",
    [
        ("memory", "--params", "7B"),
        ("memory", "--params", "7B", "--ranks", "8", "--zero", "1"),
        ("step", "--params", "7B", "--cluster", "dgx-b200"),  # the unknown band's reason
        ("scenario", "--params", "7B", "--nodes", "2"),  # both, and the larger cards' notes
    ],
    ids=" ".join,
)
def test_cli_text_has_no_brackets_inside_brackets(args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    nested = [line for line in r.stdout.splitlines() if _nested(line)]
    assert not nested, nested
    # the information is kept: what the memory holds, the shape the step priced, the flag
    if args[0] in ("memory", "scenario"):
        (note,) = [ln for ln in r.stdout.splitlines() if "activations: not included" in ln]
        assert "the model state, activations not sized" in note
        assert "architecture_for_params" in note
        assert note.endswith("name an architecture to size activations: --arch"), note
    if args[0] == "step":
        assert "band unknown: no fitted compute efficiency for this GPU" in r.stdout
        assert "default MFU" in r.stdout


def test_the_shape_priced_stays_in_its_own_brackets():
    from costmodel.memory import bare_count_note

    note = bare_count_note("a dense transformer of that size (41 layers, hidden 3712)")
    assert not _nested(note), note
    assert "(41 layers, hidden 3712)" in note and note.startswith("activations: not included")


# --- comma thousands: a comma separates a list's values, and groups no digits ------------------
WRITE_1000 = "write 1000 or 1k"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # list options (--ranks over a link, --size, --set): '1,000' would be the list 1 and 0
        (("collective", "all_reduce", "--ranks", "1,000", "--bandwidth", "50GB/s", "--size", "1MB"),
         ("--ranks: must be a whole number in 1..1,000,000,000, got '1,000'; in a list a comma",
          "reads as 1 and 000", WRITE_1000)),
        (("collective", "all_reduce", "--ranks", "1,500", "--bandwidth", "50GB/s", "--size", "1MB"),
         ("--ranks: ", "write 1500 or 1.5k")),  # was the list 1 and 500, answered
        (("collective", "all_reduce", "--ranks", "2,048", "--bandwidth", "50GB/s", "--size", "1MB"),
         ("--ranks: ", "write 2048 or 2.048k")),
        (("collective", "all_reduce", "--cluster", "dgx-h100", "--size", "1,048,576"),
         ("--size: ", "write 1048576B")),
        (("sweep", "--set", "ranks=1,000", "--set", "bandwidth=50GB/s", "--set", "size=1MB"),
         ("--set ranks: cannot parse '1,000'", WRITE_1000)),
        # one-number count options: the range and how to write the number, no list
        (("memory", "--params", "7B", "--ranks", "1,000"),
         ("--ranks: must be a whole number in 1..1,000,000,000, got '1,000'", WRITE_1000)),
        (("batch", "--ranks", "1,024", "--local", "1", "--global", "1024"),
         ("--ranks: ", "write 1024 or 1.024k")),
        (("step", "--params", "7B", "--nodes", "1,000"), ("--nodes: ", WRITE_1000)),
        (("step", "--params", "7B", "--nodes", "2", "--seq", "4,096"), ("--seq: ", "write 4096")),
        (("memory", "--params", "7,000,000,000"), ("--params: ", "write 7000000000")),
        (("memory", "--params", "7B", "--gpu-memory", "80,000,000,000"),
         ("--gpu-memory: ", "write 80000000000B or 80GB")),
        (("scenario", "--params", "7B", "--vs", "nodes=1,000"),
         ("--vs: nodes=1,000 reads as two changes", "write nodes=1000 or nodes=1k")),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) and v[0][:2] != "--" else None,
)  # fmt: skip
def test_comma_thousands_are_refused_saying_how_to_write_the_number(args, said):
    line = one_line_error(run(*args), *said)
    if args[0] in ("memory", "batch", "step"):  # one number: no talk of lists
        assert "list" not in line, line


@pytest.mark.parametrize("ranks", ["64,128,256", "100,200", "1, 500", "8,16"])
def test_lists_that_are_lists_stay_lists(ranks):
    r = run("collective", "all_reduce", "--ranks", ranks, "--bandwidth", "50GB/s", "--size", "1MB")
    assert r.exit_code == 0, r.stderr
    want = [int(x) for x in ranks.split(",")]
    got = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("textbook")]
    assert got == want, r.stdout


def test_the_library_says_it_in_its_own_names():
    from costmodel.scenario import Scenario
    from costmodel.sweep import parse_values

    with pytest.raises(ValueError, match=r"^ranks: cannot parse '1,000'; in a list a comma"):
        parse_values("ranks", "1,000")
    assert parse_values("ranks", "64,128") == [64, 128]
    with pytest.raises(ValueError, match=r"^changes: nodes=1,000 reads as two changes"):
        Scenario(params=7e9).with_changes("nodes=1,000")
    with pytest.raises(ValueError, match=r"a comma groups no digits: write 1000 or 1k$"):
        cm.parse_count("1,000")


# --- validate compare / calibrate on a results .jsonl: --op and --gpus-per-node not used --------
@pytest.fixture
def results_jsonl(tmp_path):
    from costmodel.reference import reference_path
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.validation.runner import append_results

    rows = read_nccl_tests(reference_path("06a"))
    path = tmp_path / "results.jsonl"
    append_results(path, rows, source="nccl-tests", run_key="all_reduce@x", complete=True)
    return path


UNUSED = "a results file (.jsonl) names each row's op, ranks and GPUs per node"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--op", "all_gather"), "--op is not used"),
        (("--gpus-per-node", "4"), "--gpus-per-node is not used"),
        (("--op", "all_gather", "--gpus-per-node", "4"), "--op and --gpus-per-node are not used"),
    ],
)
def test_validate_compare_says_what_a_results_file_does_not_use(results_jsonl, extra, named):
    import json

    args = ["validate", "compare", str(results_jsonl), "--cluster", "dell-xe9680-h100", "--json"]
    plain = run(*args)
    given = run(*args, *extra)
    assert plain.exit_code == given.exit_code == 0, given.stderr
    assert UNUSED not in plain.stderr
    warned = [ln for ln in given.stderr.splitlines() if UNUSED in ln]
    assert warned == [f"costmodel: warning: {named}: {UNUSED}"], given.stderr
    # not used: the same comparison, the rows' op
    a, b = json.loads(plain.stdout), json.loads(given.stdout)
    assert a["rows"] == b["rows"] and a["median_abs_rel_error"] == b["median_abs_rel_error"]


def test_calibrate_says_a_results_file_does_not_use_op(results_jsonl, tmp_path):
    out = tmp_path / "fit.toml"
    r = run("calibrate", str(results_jsonl), "-o", str(out), "--op", "all_gather")
    assert r.exit_code == 0, r.stderr
    assert f"costmodel: warning: --op is not used: {UNUSED}" in r.stderr.splitlines()
    assert out.is_file()


def test_the_help_says_so():
    import re

    for cmd in (("validate", "compare"), ("calibrate",)):
        text = " ".join(run(*cmd, "--help").stdout.split())
        text = re.sub(r"[│╭╮╰╯─]", " ", text)
        assert "Not used for a results .jsonl" in " ".join(text.split()), cmd


# --- other papercuts of the CLI: an API name in --vs's header, Python types as metavars --------
def test_scenario_vs_header_says_the_fit_advice_in_the_cli_s_words():
    r = run("scenario", "--params", "7B", "--vs", "nodes=2")
    assert r.exit_code == 0, r.stderr
    head = [ln for ln in r.stdout.splitlines() if "DOES NOT FIT" in ln]
    assert head, r.stdout
    for line in head:
        assert "`fit_suggestions`" not in line, line
        assert "costmodel scenario --fit" in line, line


@pytest.mark.parametrize(
    ("args", "option"),
    [
        ((), "--presets-dir"),
        (("sweep",), "--set"),
        (("collective",), "--size"),
        (("predict",), "--size"),
    ],
)
def test_repeatable_options_show_no_python_type_in_help(args, option):
    text = run(*args, "--help").stdout
    (line,) = [ln for ln in text.splitlines() if f"{option} <" in ln]
    assert "list[" not in line, line
