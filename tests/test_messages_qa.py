"""Library messages name API fields in backquotes, never ``name=value`` nor a CLI flag nor a
CLI command; the CLI says them as its flags and commands, the app as its boxes.

docs/CONTRACTS.md, "Messages". :mod:`tests.test_api_messages` scans the library for CLI flags;
this file holds the rest of the convention:

1. No ``name={value}`` in a library message: an f-string whose literal part ends in ``name=``
   right before a value (``f"op={op!r} is not ..."``) is the Python-repr style the CLI and the
   app cannot translate (``op='x'`` reached a CLI user typing ``--op`` and an app user choosing
   in the Op box). A message starts with the field it refuses, bare (``op: 'x' is not ...``),
   and names any other input in backquotes (`` `launcher` ``).
2. No CLI command in a library message (`` `costmodel archs` ``): the library names the API call
   that does it (`` `cm.arch_names()` ``), the CLI says its command
   (:data:`costmodel.cli._common.CLI_WORDS`), the app its box
   (:data:`costmodel.web.common.PAGE_WORDS`).
3. validation/ is library too (``costmodel.validation.calibrate``, ``compare``, ``logread`` are
   the API of the Validate page and of ``validate``/``calibrate``): its messages name no flag of
   the costmodel CLI either; the torch job's and the launchers' own flags are allowed by name.
4. Real refusals through the CLI (exit 2, one line, the flag) and the app (the box).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from costmodel._limits import FIELD_MARK
from tests._cli import one_line_error, run
from tests.test_api_messages import (
    FLAG,
    _docstrings,
    assert_explained,
    flag_literals,
    literals_matching,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "costmodel"

#: The surfaces, which speak their own words; everything else is the library (validation/ too).
SURFACES = ("cli", "web")

#: A field written Python-style: ``name=`` before a value (``{}``: an f-string's) or bare before
#: a space, a bracket or the end (``or arch= (an architecture name)``); not ``a==b``, not
#: nccl-tests' ``#wrong=``, not a sweep's ``nodes=1..64x2`` (the ``--set`` grammar).
REPR_FIELD = re.compile(r"(?<![\w.#\[=-])[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)?=(?=\{\}|\s|[),;]|$)")

#: (module, the f-string with each value as ``{}``) -> why it may write ``name={value}``: labels
#: and report lines, not messages about an input. Each entry must still be there.
REPR_ALLOWED: dict[tuple[str, str], str] = {
    ("costmodel/strategy/layout.py", "hsdp g={}"): (
        "a layout's name (the sweep's and the advisor's 'hsdp g=8' label), not a message"
    ),
    ("costmodel/strategy/advisor.py", "hsdp g={}"): "the same layout label, built by the advisor",
    ("costmodel/plots.py", "cap {} MiB, acc {}, no_sync={}"): (
        "a legend entry of the DDP validation plot (torch's no_sync flag of a measured row)"
    ),
    (
        "costmodel/validation/compare.py",
        "Predicted DDP step: bucket cap {} MiB, accumulation {}, no_sync={} (measured {} ms, "
        "predicted {} ms)",
    ): "a heading of the HTML report, naming a measured row's torch no_sync setting",
    ("costmodel/scenario.py", "{}{} params on {} x {} ({}), {}, {}, model={}"): (
        "ScenarioResult's one-line summary (a label of the answer, not a refusal)"
    ),
}

#: A CLI command named in text: `` `costmodel archs` ``, ``costmodel presets list``.
COMMAND = re.compile(
    r"\bcostmodel (?:archs|fabrics|presets|validate|calibrate|scenario|collective|sweep|step|"
    r"memory|train|batch|predict|app)\b"
)

#: Modules whose literals may name a costmodel CLI command, and why.
COMMAND_ALLOWED: dict[str, str] = {
    "costmodel/validation/compute_bench.py": (
        "the compute job's own argparse help and refusals (run as `python -m` on a GPU node or "
        "by `costmodel validate compute`, whose options are its flags): where its measurement "
        "goes next (`costmodel step --compute-time`)"
    ),
    "costmodel/validation/torch_bench.py": (
        "the torch job's own argparse help: which `costmodel validate` command sets its flags "
        "(it is launched by that command, not called through the API)"
    ),
}

#: (module, literal) -> why a validation/ literal may name a flag: not costmodel's flags.
VALIDATION_FLAGS: dict[str, str] = {
    "costmodel/validation/compute_bench.py": (
        "the compute job: a script with its own argparse flags (--arch, --layers, --seq), the "
        "same names `costmodel validate compute` gives its options; its messages are its own "
        "CLI's words"
    ),
    "costmodel/validation/torch_bench.py": (
        "the torch job: a script with its own argparse flags (--backend, --min-bytes), run by a "
        "launcher on the cluster; its messages are its own CLI's words"
    ),
    "costmodel/validation/nccl_tests/_launch.py": (
        "reads srun/mpirun command lines: their flags (--ntasks-per-node, --host) are data"
    ),
}

#: The launchers' flags runner.py may name (it builds srun/mpirun command lines and runs
#: `mpirun --version`), flag -> why. runner.py is the API of ``run_nccl_tests``: every other
#: flag in its messages is costmodel's (``--algos``, ``--build-dir``) and must be the field
#: (`` `algos` ``), which the CLI says as its option. It was exempt as a whole file, so its
#: "(--algos)" and "pass --build-dir" reached a notebook user.
RUNNER_FLAGS: dict[str, str] = {
    "--version": "`mpirun --version`, run to tell the MPI flavor, and named when it fails",
    "--map-by": "OpenMPI's placement flag, in the mpirun command line the runner builds",
    "--ntasks-per-node": "srun's flag, in the srun command line the runner builds",
}


def _library_files() -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in SURFACES
    ]


def repr_fields(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string of ``source`` but docstrings that writes a field as
    ``name=value`` (:data:`REPR_FIELD`); an f-string's values written ``{}``."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and id(node) not in parts
        ):
            text = node.value
        else:
            continue
        if REPR_FIELD.search(text):
            out.append((node.lineno, text))
    return sorted(out)


def _descriptions(tree: ast.AST) -> set[int]:
    """The ids of the strings given as a ``description=`` (a pydantic field's documentation,
    as a docstring is a function's: it may describe the CLI)."""
    return {
        id(v)
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg == "description"
        for v in ast.walk(node.value)
    }


def command_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal but docstrings and field descriptions that names a
    costmodel CLI command."""
    tree = ast.parse(source)
    return literals_matching(tree, COMMAND, _docstrings(tree) | _descriptions(tree))


def _scan(find, files) -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for line, text in find(path.read_text(encoding="utf-8")):
            found[(rel, text)] = line
    return found


# --- 1. the scans ------------------------------------------------------------------------------
def test_the_repr_scan_finds_a_field_written_name_equals_value():
    """The scanner: ``op={op!r}`` and ``nic.kind={k}`` in an f-string, a bare ``arch=`` and a
    format string's ``heads={}`` are found; the field said bare or marked, a ``#wrong=`` column
    of nccl-tests, ``a==b``, the sweep's ``--set`` grammar and a docstring are not."""
    source = '''
def f(op, kind, n, wrong):
    """A docstring may show arch= as the API's keyword."""
    raise ValueError(f"op={op!r} is not a collective; allowed: a, b")
    x = f"fabric does not match nic.kind={kind!r}"
    y = f"op: {op!r} is not a collective; with `nodes` {n}; #wrong={wrong}; {n}=={n}"
    z = "set: expected name=v1,v2, e.g. nodes=1..64x2 or strategy=hsdp"
    w = "params: give a parameter count or arch= (an architecture name)"
    v = "kv_heads: must divide heads={}".format(n)
'''
    assert repr_fields(source) == [
        (4, "op={} is not a collective; allowed: a, b"),
        (5, "fabric does not match nic.kind={}"),
        (8, "params: give a parameter count or arch= (an architecture name)"),
        (9, "kv_heads: must divide heads={}"),
    ]


def test_no_library_message_writes_a_field_as_name_equals_value():
    files = _library_files()
    assert PACKAGE / "predict.py" in files and PACKAGE / "validation" / "runner.py" in files
    found = _scan(repr_fields, files)
    assert_explained(
        found,
        REPR_ALLOWED,
        "library messages write a field as name=value; start with the field refused "
        "(`op: 'x' is not ...`) and name other inputs in backquotes (`launcher`)",
    )


def test_the_command_scan_finds_a_cli_command_in_a_message():
    """A message naming `costmodel archs` is found; a docstring, a field's description and the
    API's module path (costmodel.validation.compare) are not."""
    source = '''
def f(name):
    """Like ``costmodel memory``."""
    x = Field(0, description="as `costmodel memory`")
    raise ValueError(f"arch: unknown {name!r} (see `costmodel archs`)")
    return "compare with the runs (costmodel.validation.compare)"
'''
    assert command_literals(source) == [(5, " (see `costmodel archs`)")]


def test_no_library_message_names_a_cli_command():
    found = _scan(command_literals, _library_files())
    assert_explained(
        found,
        COMMAND_ALLOWED,
        "library messages name a CLI command; name the API call (`cm.arch_names()`) and let "
        "the CLI say its command (cli._common.CLI_WORDS), the app its box (web.common.PAGE_WORDS)",
        key=lambda k: k[0],
    )


def test_no_validation_message_names_a_costmodel_flag():
    files = sorted((PACKAGE / "validation").rglob("*.py"))
    found = _scan(flag_literals, files)
    assert found  # the scan reads validation/: the launchers' flags are there
    runner = "costmodel/validation/runner.py"
    named = {f for (rel, text) in found if rel == runner for f in FLAG.findall(text)}
    assert named >= set(RUNNER_FLAGS), "a stale RUNNER_FLAGS entry"
    found = {
        k: v
        for k, v in found.items()
        if not (k[0] == runner and set(FLAG.findall(k[1])) <= set(RUNNER_FLAGS))
    }
    assert_explained(
        found,
        VALIDATION_FLAGS,
        "validation messages name a CLI flag; name the field in backquotes (`nodes`) and let "
        "the CLI say its option",
        key=lambda k: k[0],
    )


# --- 2. the same refusal through the API, the CLI (its flag) and the app (its box) --------------
def _no_flag_no_repr(text: str, *marked: str) -> None:
    """The library's words: each of ``marked`` in backquotes, no flag, no ``name=value``."""
    for f in marked:
        assert f"`{f}`" in text, text
    assert not FLAG.search(text), text
    assert not re.search(r"(?<![\w.#-])[a-z][a-z0-9_]*='", text), text


def _cli_line(args: tuple[str, ...], *fragments: str) -> str:
    """Exit 2, one line naming ``fragments``, no mark of the library left."""
    line = one_line_error(run(*args), *fragments)
    assert not FIELD_MARK.search(line), line
    return line


def test_an_unknown_nccl_algorithm_or_op():
    from costmodel.nccl.names import check_op, normalize_algorithm, normalize_protocol

    with pytest.raises(ValueError, match=r"^algorithm: 'bogus' is not an NCCL algorithm; allowed"):
        normalize_algorithm("bogus")
    with pytest.raises(ValueError, match=r"^protocol: 'x' is not an NCCL protocol; allowed: auto"):
        normalize_protocol("x")
    with pytest.raises(ValueError, match=r"^op: 'gossip' is not a known collective; allowed: "):
        check_op("gossip")
    _cli_line(
        (
            "collective",
            "all_reduce",
            "--cluster",
            "dgx-h100",
            "--size",
            "1GB",
            "--algorithm",
            "bogus",
        ),  # fmt: skip
        "--algorithm: 'bogus' is not a nccl all_reduce algorithm; allowed: auto, ",
    )


def test_nvls_across_nodes_names_the_nodes_field_and_the_flag():
    import costmodel as cm

    with pytest.raises(ValueError, match="'nvls' needs in-switch reduction") as e:
        cm.allreduce_time(1e9, 16, "dgx-h100", algorithm="nvls")
    _no_flag_no_repr(str(e.value), "nodes")
    assert "has NVLS on and `nodes` 2; allowed here: " in str(e.value)
    line = _cli_line(
        (
            "collective",
            "all_reduce",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--size",
            "1GB",
            "--algorithm",
            "nvls",
            "--model",
            "textbook",
        ),  # fmt: skip
        "--algorithm: 'nvls' needs in-switch reduction inside one node",
        "has NVLS on and --nodes 2; allowed here: auto, ring",
    )
    assert "nodes=" not in line


def test_a_node_without_a_network_on_two_nodes():
    import costmodel as cm

    with pytest.raises(ValueError) as e:
        cm.cluster("pcie-8x-l40s", nodes=2)
    assert str(e.value) == (
        "nodes: 2 nodes but the node has no network (`nics_per_node` 0); allowed: 1 node, or a "
        "node with NICs (pcie-8x-l40s)"
    )
    _cli_line(
        ("step", "--arch", "llama-3.1-8b", "--cluster", "pcie-8x-l40s", "--nodes", "2"),
        "--nodes: 2 nodes but the node has no network (nics_per_node 0); allowed: 1 node",
    )


def test_nccl_tests_runner_refusals_name_the_options(tmp_path):
    from costmodel.validation.runner import plan_sweep

    with pytest.raises(ValueError, match=r"^nodes: 2 nodes need `launcher` 'srun' or 'mpirun'"):
        plan_sweep(["all_reduce"], nodes=2, launcher="local", check_binaries=False)
    with pytest.raises(
        ValueError,
        match=r"^ops: 'bogus' has no nccl-tests binary; allowed: all_gather, all_reduce, ",
    ):
        plan_sweep(["bogus"], check_binaries=False)
    out = str(tmp_path / "runs")
    _cli_line(
        ("validate", "nccl-tests", "run", "-o", out, "--nodes", "2", "--dry-run"),
        "--nodes: 2 nodes need --launcher 'srun' or 'mpirun'; 'local' runs one node",
    )
    _cli_line(
        ("validate", "nccl-tests", "run", "-o", out, "--ops", "bogus", "--dry-run"),
        "--ops: 'bogus' has no nccl-tests binary; allowed: all_gather, all_reduce, ",
    )


def test_a_log_without_host_lines_asks_for_the_nodes(tmp_path):
    from costmodel.validation.calibrate import calibrate
    from costmodel.validation.nccl_tests import read_nccl_tests
    from costmodel.web.common import page_words
    from tests._paths import NCCL_TESTS

    log = next(NCCL_TESTS.glob("13e_*"))
    with pytest.raises(ValueError, match=r"^nodes: the measured rows do not say") as e:
        calibrate(read_nccl_tests(log))
    _no_flag_no_repr(str(e.value), "nodes")
    assert str(e.value).endswith("give it (`nodes`): it is never guessed")
    _cli_line(
        ("calibrate", str(log), "-o", str(tmp_path / "c.toml")),
        "--nodes: the measured rows do not say how many nodes ran",
        "give it (--nodes): it is never guessed",
    )
    assert page_words(str(e.value)).endswith("set the Nodes box: it is never guessed")


def test_presets_are_listed_by_the_api_call_the_cli_command_the_app_box():
    """Decision: the library names the API call that lists presets (`cm.arch_names()`), the
    CLI says its command (`costmodel archs`), the app its box."""
    import costmodel as cm
    from costmodel.web.common import page_words

    with pytest.raises(ValueError) as e:
        cm.load_arch("/no/such/config.json")
    text = str(e.value)
    assert text.endswith("or an architecture preset (`cm.arch_names()`)"), text
    assert page_words(text).endswith("or an architecture preset (the Model box's list)")
    _cli_line(
        ("memory", "--arch", "/no/such/config.json", "--ranks", "8"),
        "--arch: no such file", "or an architecture preset (`costmodel archs`)",
    )  # fmt: skip
    with pytest.raises(ValueError) as e:
        cm.presets.load("no-such-preset")
    assert str(e.value).endswith("(see `cm.presets.names()`)"), e.value
    _cli_line(("presets", "show", "no-such-preset"), "(see `costmodel presets list`)")
    line = _cli_line(("presets", "list", "--kind", "price"), "(price and architecture presets: ")
    assert line.endswith("(price and architecture presets: `costmodel archs`)"), line
    from costmodel.training import load_price

    with pytest.raises(ValueError) as e:
        load_price("no-such-price")
    assert str(e.value).endswith("(see `cm.price_names()`)"), e.value
    assert page_words(str(e.value)).endswith("(see the Price box's list)")
    _cli_line(
        (
            "train",
            "--params",
            "7B",
            "--tokens",
            "1T",
            "--cluster",
            "dgx-h100",
            "--price",
            "no-such-price",
        ),  # fmt: skip
        "--price: unknown price preset 'no-such-price'",
        "(see `costmodel archs`)",
    )
    # each call the library names is the API's: it lists what the message says it lists
    assert "llama-3.1-8b" in cm.arch_names() and "aws-p5-on-demand" in cm.price_names()
    assert "dgx-h100" in cm.presets.names()


def test_the_cpu_rows_advice_names_the_field_and_the_call():
    from costmodel.cli._common import cli_words
    from costmodel.validation.calibrate import calibrate
    from costmodel.web.common import page_words
    from tests.test_validate_qa2 import _gloo_rows

    with pytest.raises(ValueError, match="^cluster: the rows ran on CPUs") as e:
        calibrate(_gloo_rows(), name="x", cluster="dgx-h100")
    _no_flag_no_repr(str(e.value), "cluster", "calibrated_predictor")
    said = cli_words(str(e.value), {"cluster": "--cluster"}.get)
    assert said.endswith(
        "calibrate them without a base cluster (no --cluster: the alpha-beta fits describe the "
        "rows) and compare with validate compare --calibration FILE"
    ), said
    assert page_words(str(e.value)).endswith(
        "calibrate them without a base cluster (costmodel calibrate without --cluster) and upload "
        "that file in the Calibration TOML box"
    )


# --- 3. the app says the box ---------------------------------------------------------------------
def test_the_app_shows_a_custom_shape_refusal_with_its_boxes():
    """The Memory page's custom shape: the library's `heads` is the page's Heads box."""
    from tests.test_app import _text, assert_clean, open_page

    at = open_page("page_memory.py", {"hidden": "3", "heads": "32", "shape_activations": "true"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any("Hidden size: must be a multiple of the 32 Heads (each head" in e for e in errors)
    assert not any("`" in e or "heads=" in e for e in errors), errors


def test_validate_compare_warnings_carry_no_library_mark(tmp_path):
    """validate compare printed its warning lines as the library wrote them: the CPU-rows
    advice reached the terminal as "(no `cluster`: ...) and compare with
    `calibrated_predictor`". Every stderr line goes through cli_words now."""
    from costmodel.validation.runner import append_results
    from tests.test_validate_qa2 import _gloo_rows

    results = tmp_path / "results.jsonl"
    append_results(results, _gloo_rows())
    r = run("validate", "compare", str(results), "--cluster", "dgx-h100")
    assert r.exit_code in (0, 1), r.output
    said = "(no --cluster: the alpha-beta fits describe the rows) and compare with validate "
    assert said + "compare --calibration FILE" in r.stderr, r.stderr
    assert not FIELD_MARK.search(r.stdout + r.stderr), FIELD_MARK.findall(r.stdout + r.stderr)
