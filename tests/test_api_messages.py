"""Library messages name the API's fields; the CLI says them as its flags, the app as its boxes.

The convention (docs/CONTRACTS.md, "Messages"): an error, warning or note the library writes
(``import costmodel``: ``costmodel/*.py``, ``sweep/``, ``strategy/``, ...; not ``cli/``,
``validation/`` or ``web/``) names an input mid-sentence by its API name in backquotes
(`` `usd_per_gpu_hour` ``, :data:`costmodel._limits.FIELD_MARK`), never by a CLI flag: a
notebook user reads the field, the CLI says it as the command's option
(:func:`costmodel.cli._common.cli_words`), the app as its box
(:func:`costmodel.web.common.page_words`). Before, ``training.py`` said "give usd_per_gpu_hour
(--usd-per-gpu-hour)" and "check the current list or give --usd-per-gpu-hour" to every surface,
and a ScenarioResult note pointed a notebook user at "`costmodel scenario --fit`".
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import costmodel as cm
from costmodel._limits import FIELD_MARK, name_fields
from tests._cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "costmodel"

#: The surfaces' own packages: they speak their own words (flags, box labels); validation/ is
#: scanned in tests/test_messages_qa.py, where the torch job's and the launchers' own flags are
#: allowed by file.
SURFACES = ("cli", "validation", "web")

#: A CLI flag as it appears in text: ``--usd-per-gpu-hour``, ``--set`` (not ``a--b``, not ``---``).
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9.-]*")

#: A flag an f-string builds (``f"(--{name})"``): a literal part ending in ``--`` right before a
#: value.
BUILT_FLAG = re.compile(r"(?<![\w-])--$")

#: (module, the literal's text) -> why that literal may name a flag. Each entry must still be
#: there (a stale entry fails too).
ALLOWED: dict[tuple[str, str], str] = {
    ("costmodel/steps_data.py", "--training.compile"): (
        "not a message: torchtitan's own flag, searched for in the command line of a published "
        "benchmark (bundled reference data) to read whether that run compiled"
    ),
    ("costmodel/strategy/step.py", "the CLI's --seq"): (
        "a TypeError for an API caller who typed the CLI's spelling (seq=) into strategy_step: "
        "it says which flag that name comes from; the CLI itself never sends it"
    ),
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree``: a module's, class's or function's first
    statement, and the string statement after an assignment (an attribute's docstring)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            out.add(id(body[0].value))
        for before, after in zip(body, body[1:], strict=False):
            if (
                isinstance(before, ast.Assign | ast.AnnAssign)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
            ):
                out.add(id(after.value))
    return out


def flag_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal of ``source`` that names a CLI flag, docstrings
    and comments left out (an f-string's literal parts are literals too, and one that ends in
    ``--`` before a value builds a flag: ``f"(--{name})"``)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    built = [
        (part.lineno, part.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part, after in zip(node.values, node.values[1:], strict=False)
        if isinstance(part, ast.Constant)
        and isinstance(after, ast.FormattedValue)
        and BUILT_FLAG.search(part.value)
    ]
    return literals_matching(tree, FLAG, skip) + built


def literals_matching(tree: ast.AST, pattern: re.Pattern[str], skip: set[int]):
    """(line, text) of each string literal of ``tree`` that ``pattern`` finds, but those whose
    ``id`` is in ``skip`` (docstrings, descriptions)."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and pattern.search(node.value)
    ]


def _library_files() -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in SURFACES
    ]


# --- 1. the scan ----------------------------------------------------------------------------
def test_the_scan_reads_messages_not_docstrings_or_comments():
    """The scanner itself: a message naming a flag is found, in an f-string too; a docstring
    describing the CLI and a comment are not."""
    source = '''
"""Module: ``costmodel train --usd-per-gpu-hour`` is the CLI's."""
X = 1
"""An attribute's docstring may say --price too."""


def f(gpu):
    """Like ``--cluster``."""
    # a comment on --tokens
    raise ValueError(f"price: not for {gpu}; or give --usd-per-gpu-hour")


def g(name):
    return "see `costmodel archs`", "a--b", "the `usd_per_gpu_hour` field", f"{name}"


def h(name):
    return f"set the sweep's own (--{name})"
'''
    assert sorted(flag_literals(source)) == [
        (10, "; or give --usd-per-gpu-hour"),
        (18, "set the sweep's own (--"),
    ]


def test_no_library_message_names_a_cli_flag():
    files = _library_files()
    assert len(files) > 50 and PACKAGE / "training.py" in files  # the scan sees the library
    assert not any("cli" in p.parts or "web" in p.parts for p in files)
    found: dict[tuple[str, str], int] = {}
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for line, text in flag_literals(path.read_text(encoding="utf-8")):
            found[(rel, text)] = line
    assert_explained(
        found,
        ALLOWED,
        "library messages name a CLI flag; name the field in backquotes (`usd_per_gpu_hour`) "
        "and let the CLI say its option (cli._common.cli_words)",
    )


def assert_explained(found, allowed, advice: str, key=lambda k: k) -> None:
    """Every (file, text) a scan ``found`` is in ``allowed`` (by ``key``), else ``advice`` and
    the places; and every ``allowed`` entry is still found (no stale allow-list entry)."""
    unexplained = {k: v for k, v in found.items() if key(k) not in allowed}
    assert not unexplained, (
        advice
        + ":\n"
        + "\n".join(f"{f}:{line}: {text!r}" for (f, text), line in unexplained.items())
    )
    stale = [a for a in allowed if a not in {key(k) for k in found}]
    assert not stale, f"allow-list entries no longer in the code: {stale}"


# --- 2. the mark and its translations ---------------------------------------------------------
def test_name_fields_says_each_marked_name_and_only_names():
    text = "give `usd_per_gpu_hour` or `price` (see `costmodel archs`)"
    assert name_fields(text, {"usd_per_gpu_hour": "--usd-per-gpu-hour"}) == (
        "give --usd-per-gpu-hour or price (see `costmodel archs`)"  # unknown: the bare name
    )
    assert name_fields(text) == "give usd_per_gpu_hour or price (see `costmodel archs`)"
    assert name_fields(text, lambda f: f.upper()) == (
        "give USD_PER_GPU_HOUR or PRICE (see `costmodel archs`)"
    )
    assert [m.group(1) for m in FIELD_MARK.finditer(text)] == ["usd_per_gpu_hour", "price"]


def test_the_cli_says_a_marked_name_as_the_command_spells_its_option():
    from costmodel.cli import training as commands
    from costmodel.cli._common import cli_words, command_options

    text = "hsdp ...; a larger `group_size` does; `mfu`; `tokens`; `sequence_length`; `preset`"
    # memory has --group-size, --seq (sequence_length) and --cluster (a preset), no --mfu or
    # --tokens: those are said by their names, never as an option the command does not take
    memory = cli_words(text, command_options(commands.memory))
    assert memory == "hsdp ...; a larger --group-size does; mfu; tokens; --seq; --cluster"
    step = cli_words(text, command_options(commands.step))
    assert step == "hsdp ...; a larger --group-size does; --mfu; tokens; --seq; --cluster"
    # a name no option of the command sets: the CLI's words for it, else the bare name
    assert cli_words("(`fit_suggestions` lists them)", lambda f: None) == (
        "(`costmodel scenario --fit` lists them)"
    )
    assert cli_words("`calibrate`, `no_such_field`", lambda f: None) == (
        "costmodel calibrate ... --cluster NAME, no_such_field"
    )


# --- 3. the same condition through the API and through the CLI ---------------------------------
def _api_words(text: str, *fields: str) -> None:
    """An API message: names each of ``fields`` marked, and no flag."""
    for f in fields:
        assert f"`{f}`" in text, text
    assert not FLAG.search(text), text


def _cli_words(text: str, *flags: str) -> None:
    """The CLI's: names each of ``flags``, and no mark left."""
    for f in flags:
        assert f in text, text
    assert not FIELD_MARK.search(text), text


def test_a_price_for_another_gpu():
    from costmodel.training import check_price_gpu

    with pytest.raises(ValueError, match="is a price for h100-sxm") as e:
        check_price_gpu("aws-p5-on-demand", "b200")
    _api_words(str(e.value), "usd_per_gpu_hour")
    assert str(e.value).endswith("or give `usd_per_gpu_hour`")
    line = one_line_error(
        run(
            "train",
            "--arch",
            "llama-3.1-8b",
            "--tokens",
            "1T",
            "--cluster",
            "dgx-b200",
            "--price",
            "aws-p5-on-demand",
        ),  # fmt: skip
        "--price: aws-p5-on-demand is a price for h100-sxm",
    )
    _cli_words(line, "--usd-per-gpu-hour")
    assert line.endswith("or give --usd-per-gpu-hour")
    # a sweep's price refused the same way, in the sweep's words (its --usd-per-gpu-hour)
    with pytest.raises(ValueError, match="not for a GPU of this sweep") as e:
        cm.sweep(kind="step", preset="dgx-b200", arch="llama-3.1-8b", tokens="1T",
                 price="aws-p5-on-demand")  # fmt: skip
    _api_words(str(e.value), "usd_per_gpu_hour")
    line = one_line_error(
        run(
            "sweep",
            "--kind",
            "step",
            "--set",
            "preset=dgx-b200",
            "--set",
            "arch=llama-3.1-8b",
            "--tokens",
            "1T",
            "--price",
            "aws-p5-on-demand",
        ),  # fmt: skip
        "not for a GPU of this sweep",
    )
    _cli_words(line, "or give --usd-per-gpu-hour")


def test_a_sweep_price_without_tokens():
    with pytest.raises(ValueError, match="prices the tokens to train") as e:
        cm.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", price="aws-p5-on-demand")
    assert str(e.value) == "price: prices the tokens to train; give them too (`tokens`, e.g. 2T)"
    line = one_line_error(
        run(
            "sweep",
            "--kind",
            "step",
            "--set",
            "preset=dgx-h100",
            "--set",
            "arch=llama-3.1-8b",
            "--price",
            "aws-p5-on-demand",
        ),  # fmt: skip
    )
    assert line == (
        "costmodel: error: --price: prices the tokens to train; give them too (--tokens, e.g. 2T)"
    )


def test_a_stale_price_warning():
    import datetime as dt

    from costmodel.cli import training as commands
    from costmodel.cli._common import cli_words, command_options
    from costmodel.training import price_age_warning
    from costmodel.web.common import page_words

    w = price_age_warning("aws-p5-on-demand", today=dt.date(2030, 1, 1))
    _api_words(w, "usd_per_gpu_hour")
    assert w.endswith("check the current list or give `usd_per_gpu_hour`")
    # the train command prints it (after its answer) in its own words, the step page in its own
    said = cli_words(w, command_options(commands.train))
    assert said.endswith("check the current list or give --usd-per-gpu-hour")
    assert page_words(w).endswith("give a USD per GPU-hour (Price: custom)")


def test_a_bare_parameter_count_asks_for_an_architecture():
    from costmodel.memory import bare_count_note
    from costmodel.web.common import sentence

    note = bare_count_note()
    _api_words(note, "arch")
    assert note.endswith("name an architecture to size activations: `arch`")
    r = run("memory", "--params", "7B", "--ranks", "8")
    assert r.exit_code == 0, r.stderr
    line = r.stdout.splitlines()[1]
    assert line.startswith("activations: not included; for a bare parameter count")
    assert line.endswith("name an architecture to size activations: --arch")
    _cli_words(r.stdout)
    # the app: the Model box (the step page shows the note as a sentence)
    assert sentence(note).endswith("name an architecture to size activations: the Model box")


def test_the_fitted_compute_names_the_mfu_that_reproduces_it():
    from costmodel.strategy import strategy_step

    s = strategy_step("llama-3.1-8b", cluster="dgx-h100", nodes=2, strategy="fsdp")
    _api_words(s.compute_label, "mfu")
    r = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2",
            "--strategy", "fsdp")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    (source,) = [x for x in r.stdout.splitlines() if x.startswith("compute source")]
    assert source.split(None, 2)[2] == s.compute_label.replace("`mfu`", "--mfu")
    _cli_words(r.stdout, "the --mfu of this compute")


def test_hsdp_says_the_group_not_the_ranks_lowers_the_memory():
    from costmodel.strategy.memory import hsdp_ranks_note

    note = hsdp_ranks_note(8)
    _api_words(note, "group_size")
    r = run("memory", "--params", "7B", "--strategy", "hsdp", "--group-size", "8", "--ranks",
            "64", "--gpu-memory", "80GB", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["min_ranks_note"] == note.replace("`group_size`", "--group-size")
    _cli_words(r.stdout, "a larger --group-size does")


def test_a_calibrated_model_without_a_calibration():
    from costmodel.predict import predict_collective

    with pytest.raises(ValueError, match="carries no calibration") as e:
        predict_collective("all_reduce", 1e9, "dgx-h100", model="calibrated")
    _api_words(str(e.value), "calibrate")
    line = one_line_error(
        run("predict", "--cluster", "dgx-h100", "--sizes", "1GB", "--model", "calibrated"),
        "carries no calibration",
    )
    _cli_words(line, "a calibration preset (as costmodel calibrate ... --cluster NAME writes one)")


def test_a_scenario_that_does_not_fit_points_at_the_fit_suggestions():
    r = cm.Scenario(arch="llama-3.1-70b", nodes=1).evaluate(scaling=False, flips=False)
    (head,) = [n for n in r.notes if n.startswith("DOES NOT FIT")]
    _api_words(head, "fit_suggestions")
    assert callable(cm.Scenario.fit_suggestions)  # the name it marks is the API's
    out = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "1", "--json")
    assert out.exit_code == 0, out.stderr
    (said,) = [n for n in json.loads(out.stdout)["notes"] if n.startswith("DOES NOT FIT")]
    assert said == head.replace("`fit_suggestions`", "`costmodel scenario --fit`")


def test_a_sweep_set_without_a_value():
    from costmodel import sweep

    with pytest.raises(ValueError, match=r"^set: expected name=v1,v2"):
        sweep.parse_set("ranks")
    one_line_error(run("sweep", "--set", "ranks"), "--set: expected name=v1,v2")


def test_the_app_says_a_marked_name_as_its_box():
    from costmodel.web.common import page_words

    # the page's own box first, then the app's words, else the name itself
    labels = {"group_size": "HSDP group [GPUs]"}
    assert page_words("a larger `group_size` does", labels) == "a larger HSDP group [GPUs] does"
    assert page_words("a larger `group_size` does") == "a larger group_size does"
    assert page_words("the `mfu` of this compute") == (
        "the value for the MFU box (Set the MFU) that gives this compute"
    )


# --- 4. no mark reaches the CLI's output ------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("scenario", "--arch", "llama-3.1-70b", "--nodes", "1"),
        ("scenario", "--arch", "llama-3.1-70b", "--nodes", "1", "--json"),
        ("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "2"),
        ("train", "--params", "7B", "--tokens", "1T", "--nodes", "2", "--usd-per-gpu-hour", "2"),
        ("memory", "--params", "7B", "--ranks", "8", "--json"),
    ],
    ids=["scenario", "scenario-json", "step", "train", "memory-json"],
)
def test_the_cli_prints_no_library_mark(args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert not FIELD_MARK.search(r.stdout + r.stderr), FIELD_MARK.findall(r.stdout + r.stderr)
