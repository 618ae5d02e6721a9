"""The docs review's mechanical checks: statements of README.md and docs/*.md that the audits
(``tests/test_docs_audit.py``, ``tests/test_docs_current.py``) did not read yet, each found
stale once by reading the docs against the code.

- **a positional name in a signature** of CONTRACTS/design is a parameter even when the
  function takes ``**kwargs`` (``sweep_dask(output_dir, ...)`` stood for ``sweep_dask(output,
  ...)``: the ``**axes`` made the signature check accept any name);
- **the app's pages** are called by their titles: the README's page list bolds exactly the
  sidebar's titles in order, and a "<page> page" names a page of the app (the README said "the
  DDP step page" for the Training step page);
- **options a list of commands is said to take** (``memory``, ``step``, ``scenario`` and
  ``train`` (``--cuda-context``, ``--fragmentation``)) are options of each of them;
- **a constant quoted with its value in prose** (``cm.DEFAULT_COMM_CONTENTION`` = 0,
  ``STEP_BATCH_ROWS``, 512) has that value;
- **a count of parameters said** of a function (``ddp.ddp_step``: "Its 23 parameters"; it said 21).
- **every command's ``--help`` has an example**, as README section 3 says (``archs`` had none);
- **a formatter's output quoted** in docs/design.md (``units.format_usd_rate(3.9)`` is
  ``'3.90'``: it was quoted as ``$3.90``);
- **the formula modules' imports** CONTRACTS states (it left out ``_checks``);
- **the extras ``make`` installs**, as the README names them (it left out ``distributed``).

Each reader is checked on a planted stale sentence (the last tests).
"""

from __future__ import annotations

import inspect
import re

from costmodel import ddp
from costmodel.web.app import PAGES
from tests.test_docs_audit import DOCS, ROOT, TOP, _options
from tests.test_docs_current import (
    _NO_DEFAULT,
    CALLS,
    CALLS_NOT_SIGNATURES,
    SIGNATURE_DOCS,
    Written,
    _argument,
    _candidates,
    _constant_values,
    _is_class_name,
    _literal,
    _parameters,
    _same,
)

README = ROOT / "README.md"
DESIGN = ROOT / "docs" / "design.md"


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """``(first line, the paragraph on one line)`` of a markdown text."""
    out, start, lines = [], 1, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not lines:
                start = n
            lines.append(line.strip())
        elif lines:
            out.append((start, " ".join(lines)))
            lines = []
    if lines:
        out.append((start, " ".join(lines)))
    return out


# --- positional names in signatures ------------------------------------------------------------


def _positional_problems(calls: list[Written]) -> list[str]:
    """A name written bare in a signature (``sweep_dask(output, grid, *, ...)``) that is not one
    of the function's own parameters, where it takes ``**kwargs`` (without them
    ``test_docs_current`` checks every name already): ``**kwargs`` take no positional argument."""
    bad = []
    for w in calls:
        if w.span.doc not in SIGNATURE_DOCS or w.dotted.split(".")[0] in ("cm", "costmodel"):
            continue
        if w.text in CALLS_NOT_SIGNATURES:
            continue
        read = [p for p in (_parameters(d) for d in _candidates(w)) if p is not None]
        if not read or not any(var_kw for _, var_kw in read):
            continue
        own = set().union(*(set(params) for params, _ in read))
        for raw in w.args:
            got = _argument(raw)
            if got is None or got[1] is not None or raw != got[0] or _is_class_name(got[0]):
                continue
            if got[0] not in own:
                bad.append(
                    f"{w.span.where()}: {w.dotted}() has no parameter {got[0]!r} "
                    f"(its own: {sorted(own)}; **kwargs take no positional argument)"
                )
    return bad


def test_every_positional_name_written_in_a_signature_is_a_parameter():
    bad = _positional_problems(CALLS)
    assert not bad, "\n".join(bad)


# --- the app's pages ---------------------------------------------------------------------------

TITLES = [title for _, title, _, _ in PAGES]
# the first word of every page's title, and the names the pages had before
PAGE_WORDS = {t.split()[0] for t in TITLES} | {"DDP", "Step"}
PAGE_MENTION = re.compile(r"\b((?:[A-Z][A-Za-z]*)(?: step)?) pages?\b")


def _page_list(text: str) -> list[str]:
    """The titles the README's "Pages:" paragraph bolds, in order."""
    for _, para in _paragraphs(text):
        if "Pages: **" in para:
            return re.findall(r"\*\*([^*]+)\*\*", para.split("Pages:", 1)[1].split("Every ")[0])
    return []


_NAME = r"[A-Z][A-Za-z]*(?: step)?"
PAGE_LIST = re.compile(rf"((?:{_NAME}(?:, | and | or )){{1,5}}{_NAME}) pages\b")


def _page_mentions(doc: str, text: str) -> list[str]:
    """ "<name> page(s)" and "<a>, <b> and <c> pages" whose name starts as a page's title does
    (or as a page was called before), naming no page of the app."""
    bad = []
    for line, para in _paragraphs(text):
        prose = re.sub(r"(`+).+?\1", " ", para)
        names = [(m.group(0), m.group(1)) for m in PAGE_MENTION.finditer(prose)]
        for m in PAGE_LIST.finditer(prose):
            names += [(m.group(0), n) for n in re.split(r", | and | or ", m.group(1))]
        for said, name in names:
            if name.split()[0] in PAGE_WORDS and name not in TITLES:
                bad.append(f"{doc}:{line}: {said!r}: {name!r} is no page (pages: {TITLES})")
    return bad


def test_the_readme_lists_the_apps_pages_by_their_titles():
    assert _page_list(README.read_text(encoding="utf-8")) == TITLES


def test_every_page_written_is_a_page_of_the_app():
    bad = [
        p
        for path in (README, DESIGN)
        for p in _page_mentions(path.name, path.read_text(encoding="utf-8"))
    ]
    assert not bad, "\n".join(bad)


# --- options said of a list of commands --------------------------------------------------------

_CMD = r"`(?:costmodel )?([a-z][\w-]*)`"
_JOIN = r"(?:,\s*|,?\s+and\s+|\s+or\s+)"
COMMANDS_TAKE = re.compile(
    rf"((?:{_CMD}{_JOIN})*{_CMD})\s*(?:\(|:|takes?)\s*((?:`--[a-z][\w-]*[^`]*`{_JOIN}?)+)"
)


def _commands_take(doc: str, text: str) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """``(where, sentence, commands, options)`` for "`a`, `b` and `c` (`--x`, `--y`)",
    "`a`, `b`: `--x`" and "`a` and `b` take `--x`", where every name listed is a command."""
    out = []
    for line, para in _paragraphs(text):
        for m in COMMANDS_TAKE.finditer(para):
            commands = tuple(re.findall(_CMD, m.group(1)))
            if not all(c in TOP for c in commands):
                continue
            options = tuple(re.findall(r"`(--[a-z][\w-]*)", m.group(m.lastindex or 0)))
            out.append((f"{doc}:{line}", m.group(0), commands, options))
    return out


def _commands_take_problems(found: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]):
    return [
        f"{where}: {sentence[:120]!r}: costmodel {c} has no {o}"
        for where, sentence, commands, options in found
        for c in commands
        for o in options
        if o not in _options((c,))
    ]


def _all_commands_take() -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    return [
        t
        for doc in DOCS
        for t in _commands_take(str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8"))
    ]


def test_the_options_a_list_of_commands_is_said_to_take_are_theirs():
    found = _all_commands_take()
    assert len(found) >= 5, found  # the reader reads the docs' sentences
    bad = _commands_take_problems(found)
    assert not bad, "\n".join(bad)


# --- constants quoted with their value in prose ------------------------------------------------

QUOTED = re.compile(
    r"`((?:[a-z_]\w*\.)*)(_?[A-Z][A-Z0-9_]{2,})`(?:\s*=\s*|,\s+)([-\d][\d_.e+-]*)(?=[\s,:;)]|$)"
)


def _quoted_constants(doc: str, text: str) -> list[tuple[str, str, str, str]]:
    out = []
    for line, para in _paragraphs(text):
        for m in QUOTED.finditer(para):
            out.append((f"{doc}:{line}: {m.group(0)!r}", m.group(1), m.group(2), m.group(3)))
    return out


def _quoted_problems(mentions: list[tuple[str, str, str, str]]) -> list[str]:
    bad = []
    for where, qualifier, name, text in mentions:
        value = _literal(text.rstrip("."))
        if value is _NO_DEFAULT:
            continue
        actual = _constant_values(qualifier, name)
        if actual and not any(_same(value, a) for a in actual):
            bad.append(f"{where}: {qualifier}{name} is {actual[0]!r} in the code, not {text}")
    return bad


def _all_quoted() -> list[tuple[str, str, str, str]]:
    return [
        q
        for doc in DOCS
        for q in _quoted_constants(str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8"))
    ]


def test_every_constant_quoted_with_its_value_in_prose_has_that_value():
    mentions = _all_quoted()
    names = {name for _, _, name, _ in mentions}
    assert {"STEP_BATCH_ROWS", "DEFAULT_COMM_CONTENTION", "PRIOR_SD"} <= names
    bad = _quoted_problems(mentions)
    assert not bad, "\n".join(bad)


# --- a count of parameters said ----------------------------------------------------------------


def _said_parameter_count(text: str) -> int | None:
    """The count design.md gives for ``ddp.ddp_step`` ("Its N parameters stay for the
    notebooks")."""
    for _, para in _paragraphs(text):
        if para.startswith("`ddp.ddp_step`"):
            m = re.search(r"\bIts (\d+) parameters\b", para)
            return int(m.group(1)) if m else None
    return None


def test_the_parameter_count_said_of_ddp_step_is_its_own():
    said = _said_parameter_count(DESIGN.read_text(encoding="utf-8"))
    assert said == len(inspect.signature(ddp.ddp_step).parameters)


# --- the readers catch a planted stale sentence ------------------------------------------------


def test_the_readers_catch_planted_stale_sentences():
    from tests.test_docs_audit import Span

    span = Span("docs/CONTRACTS.md", 1, "inline", "sweep_dask(output_dir, grid, *, scheduler=None)")
    stale = [Written(span, "sweep_dask", ("output_dir", "grid", "*", "scheduler=None"))]
    assert _positional_problems(stale)
    fresh = [Written(span, "sweep_dask", ("output", "grid", "*", "scheduler=None"))]
    assert not _positional_problems(fresh)

    pages = "Pages: **Collectives** (x), **DDP step** (y). Every input is in the URL."
    assert _page_list(pages) == ["Collectives", "DDP step"] != TITLES
    assert _page_mentions("README.md", "The DDP step page also has an advisor.")
    assert not _page_mentions("README.md", "The Training step page and the Memory page.")
    assert _page_mentions("README.md", "the radios of the Collectives, DDP and Validate pages")
    assert not _page_mentions("README.md", "the Memory and Training step pages")

    took = _commands_take("x.md", "the CLI's `memory`, `step` and `train` (`--cuda-context`)")
    assert took and not _commands_take_problems(took)
    took = _commands_take("x.md", "`batch` and `step` take `--fragmentation`")
    assert _commands_take_problems(took) == [
        "x.md:1: '`batch` and `step` take `--fragmentation`': costmodel batch has no "
        "--fragmentation"
    ]

    wrong = _quoted_constants("x.md", "up to `evaluate.STEP_BATCH_ROWS`, 256: a batch")
    assert wrong and _quoted_problems(wrong)
    right = _quoted_constants("x.md", "(`cm.DEFAULT_COMM_CONTENTION` = 0, no contention)")
    assert right and not _quoted_problems(right)

    assert _said_parameter_count("`ddp.ddp_step` is it. Its 21 parameters stay.") == 21


# --- every command's --help has an example (README section 3) ---------------------------------


def _help_without_example() -> list[str]:
    from typer.testing import CliRunner

    from costmodel import cli
    from tests.test_docs_audit import LEAVES

    bad = []
    for path in LEAVES:
        out = CliRunner().invoke(cli.app, [*path, "--help"], terminal_width=200).stdout
        lines = [line.strip() for line in out.splitlines()]
        if not any(
            line.removeprefix("Example:").strip().startswith(f"costmodel {' '.join(path)}")
            for line in lines
            if not line.startswith("Usage:")
        ):
            bad.append(f"costmodel {' '.join(path)} --help shows no example")
    return bad


def test_every_subcommand_help_has_an_example_as_the_readme_says():
    assert "every subcommand has\n`--help` with an example" in README.read_text(encoding="utf-8")
    bad = _help_without_example()
    assert not bad, "\n".join(bad)


# --- a formatter's output quoted beside its call -----------------------------------------------

QUOTED_CALL = re.compile(
    r"`((?:units\.)?format_[a-z_]+)\(([-\d][\d_.e+-]*)\)`\s*(?:is\s*)?`'([^'`]*)'`"
)


def _quoted_outputs(text: str) -> list[tuple[str, str, str]]:
    """``(function, argument, output)`` for "`format_usd(150.4)` `'150'`" written in a doc."""
    return [m.groups() for _, para in _paragraphs(text) for m in QUOTED_CALL.finditer(para)]


def _quoted_output_problems(found: list[tuple[str, str, str]]) -> list[str]:
    from costmodel import units

    bad = []
    for name, arg, said in found:
        got = getattr(units, name.rpartition(".")[2])(float(arg))
        if got != said:
            bad.append(f"{name}({arg}) is {got!r}, not {said!r}")
    return bad


def test_every_formatter_output_quoted_in_design_md_is_what_it_returns():
    found = _quoted_outputs(DESIGN.read_text(encoding="utf-8"))
    assert {f.rpartition(".")[2] for f, _, _ in found} >= {"format_usd_rate", "format_usd"}
    bad = _quoted_output_problems(found)
    assert not bad, "\n".join(bad)
    assert _quoted_output_problems(_quoted_outputs("`units.format_usd_rate(3.9)` is `'$3.90'`"))


# --- the formula modules' imports, as CONTRACTS states them ------------------------------------


def _contracts_formula_imports(text: str) -> set[str]:
    """The modules of ours CONTRACTS' opening says the formula modules import when loaded."""
    para = next(p for _, p in _paragraphs(text) if "Formula modules" in p)
    rule = para.split("Formula modules", 1)[1].split(".", 1)[0]
    return set(re.findall(r"`(_?[a-z]\w*)`", rule))


def test_contracts_names_the_imports_the_formula_modules_have():
    from tests.test_docs_current import FORMULA_IMPORTS_AT_LOAD

    said = _contracts_formula_imports((ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8"))
    assert said - {"collectives"} == FORMULA_IMPORTS_AT_LOAD
    stale = "Formula modules (x) import only numpy, the stdlib, `units` and `tables`."
    assert _contracts_formula_imports(stale) != FORMULA_IMPORTS_AT_LOAD


# --- what `make` installs -----------------------------------------------------------------------


def _make_extras() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    m = re.search(r"pip install -q -e '\.\[([\w,]+)\]'\n\ttouch", text)
    assert m, "the Makefile's install line moved"
    return set(m.group(1).split(","))


def _readme_extras(text: str) -> set[str]:
    """The extras README's "Install and run" says `make` installs."""
    para = next(p for _, p in _paragraphs(text) if "`make` creates `.venv`" in p)
    said = para.split("with its", 1)[1].split("extras", 1)[0]
    return set(re.findall(r"`(\w+)`", said))


def test_the_readme_names_the_extras_make_installs():
    assert _readme_extras(README.read_text(encoding="utf-8")) == _make_extras()
    stale = "`make` creates `.venv` and installs it with its `test` and `validate` extras."
    assert _readme_extras(stale) != _make_extras()
