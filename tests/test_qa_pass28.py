"""A refusal of a positional argument names it as the command's usage line does.

`costmodel collective foo ...` said "op: unknown collective 'foo'" and `costmodel presets show
nope` "name: unknown preset 'nope'": the library's field names, which the user never sees on
the command line; the option refusals already named the option (`--nodes: ...`). Each
positional argument now has its usage-line name (`{OP}`, `{NAME}`, `[RESULTS]`) in front of
its refusal, exit 2 and one line, while the API keeps its field (`op: ...`).
"""

from __future__ import annotations

import re

import pytest
import typer

import costmodel as cm
from costmodel import cli, presets

from ._cli import one_line_error, run


def _commands(group, path=()):
    """Every command of the app: (words that run it, its click command)."""
    for name, sub in sorted(group.commands.items()):
        if hasattr(sub, "commands"):
            yield from _commands(sub, (*path, name))
        else:
            yield (*path, name), sub


def _arguments(command) -> list[str]:
    """A command's positional arguments as its --help usage line names them."""
    usage = run(*command, "--help").stdout.splitlines()[0]
    assert usage.startswith(f"Usage: costmodel {' '.join(command)} [OPTIONS]"), usage
    return re.findall(r"[{\[]([^\]}]+)[}\]]", usage.split("[OPTIONS]", 1)[1])


# (command and its arguments, the argument refused, what else the line says); the file cases
# take tmp_path
CASES = [
    (
        ("collective", "foo", "-s", "1GB", "--ranks", "8", "--bandwidth", "50GB/s"),
        "OP",
        ("unknown collective 'foo'", "allowed: all_reduce, reduce_scatter"),
    ),
    (
        ("collective", "foo", "-s", "1GB", "--cluster", "dgx-h100"),
        "OP",
        ("unknown collective 'foo'", "allowed: all_reduce"),
    ),
    (("presets", "show", "nope"), "NAME", ("unknown preset 'nope'", "allowed: ", "dgx-h100")),
    (("presets", "show", "gpt2-124m"), "NAME", ("is an architecture preset, not hardware",)),
    (
        ("presets", "schema", "nope"),
        "KIND",
        ("'nope' is not a preset kind", "allowed: gpu, link, cluster, calibration"),
    ),
    (("sweep", "{missing}"), "GRID_FILE", ("does not exist",)),
    (("sweep", "{folder}"), "GRID_FILE", ("is a folder; give a TOML file",)),
    (("validate", "compare", "{missing}"), "RESULTS", ("does not exist",)),
    (("calibrate", "{missing}", "-o", "{out}"), "RESULTS", ("does not exist",)),
    (
        ("validate", "torch", "--dry-run", "--", "--bogus"),
        "ARGS",
        ("'--bogus' not known", "allowed: the options of"),
    ),
]


def _filled(args, tmp_path):
    where = {
        "{missing}": str(tmp_path / "missing.toml"),
        "{folder}": str(tmp_path),
        "{out}": str(tmp_path / "out.toml"),
    }
    return [where.get(a, a) for a in args]


def _command_words(args) -> tuple[str, ...]:
    return tuple(args[:2]) if args[0] in ("presets", "validate") else (args[0],)


@pytest.mark.parametrize(
    ("args", "argument", "fragments"), CASES, ids=[" ".join(c[0][:3]) for c in CASES]
)
def test_a_positional_refusal_names_the_argument_as_the_usage_line(
    args, argument, fragments, tmp_path
):
    assert argument in _arguments(_command_words(args))  # the name --help shows
    line = one_line_error(run(*_filled(args, tmp_path)), *fragments)
    assert line.startswith(f"costmodel: error: {argument}: "), line
    lower = argument.lower()
    assert f"{lower}: " not in line.replace(f"{argument}: ", ""), line  # not the field's name


def test_every_positional_argument_is_covered_and_named_in_capitals():
    """Each command with a positional argument (walked from the app, subcommands of presets,
    validate and validate nccl-tests too) has a case above, and its usage line names it in
    capitals, as the commands' help and refusals write placeholders (RESULTS, OP)."""
    app = typer.main.get_command(cli.app)
    found = {}
    for words, command in _commands(app):
        names = _arguments(words)
        params = [p for p in command.params if p.param_type_name == "argument"]
        assert len(names) == len(params), (words, names)
        for name in names:
            assert re.fullmatch(r"[A-Z][A-Z_]*", name), (words, name)
            found[words] = name
    covered = {_command_words(args): argument for args, argument, _ in CASES}
    assert found == covered


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (("collective",), "OP"),
        (("presets", "show"), "NAME"),
        (("calibrate", "-o", "x.toml"), "RESULTS"),
    ],
)
def test_a_missing_argument_is_named_as_the_usage_line(args, argument):
    one_line_error(run(*args), f"Missing argument '{argument}'")


def test_the_api_keeps_its_field_names():
    with pytest.raises(ValueError, match=r"^op: unknown collective 'foo'; allowed: all_reduce"):
        cm.collective_time("foo", 1e9, 8, 50e9)
    with pytest.raises(ValueError, match=r"^name: unknown preset 'nope'; allowed: "):
        presets.load("nope")
    with pytest.raises(ValueError, match=r"^kind: 'nope' is not a preset kind; allowed: gpu"):
        presets.schema_json("nope")
    with pytest.raises(ValueError, match=r"^grid file '.*missing.toml' does not exist"):
        cm.sweep.load_grid("missing.toml")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ("collective", "all_reduce", "-s", "1GB", "--ranks", "0", "--bandwidth", "50GB/s"),
            ("--ranks: must be a whole number in 1..1,000,000,000, got '0'",),
        ),
        (
            ("collective", "all_reduce", "-s", "1GB", "--cluster", "nope"),
            ("--cluster: unknown cluster preset 'nope'; allowed: ", "dgx-h100"),
        ),
        (
            ("presets", "show", "dgx-h100", "--nodes", "0"),
            ("--nodes: must be a whole number in 1..1,000,000, got 0",),
        ),
        (
            ("presets", "show", "nvlink4", "--nodes", "2"),
            ("--nodes: applies to cluster presets only",),
        ),
        (("sweep", "--set", "ranks=0"), ("grid: a collective sweep needs sizes",)),
        (("validate", "compare", "--reference", "nope"), ("--reference: 'nope' is not a bundled",)),
    ],
)
def test_option_refusals_are_unchanged(args, fragments):
    line = one_line_error(run(*args), *fragments)
    assert not re.search(r"error: [A-Z_]+: ", line), line
