"""The docs describe the code as it is: a mechanical audit of README.md and docs/*.md.

``tests/test_readme.py`` runs the README's fenced blocks verbatim; this file checks what those
runs do not reach: the commands, options, API names and file paths written in prose and in
inline code, in the README and in every file under ``docs/`` (whose blocks nothing runs).

- every ``costmodel COMMAND`` (and a code span opening with a command name and an option, as
  ``step --json``) names a command the typer app has, and every ``--option`` after it is one
  of that command's options;
- every other ``--option`` is an option of some command, or of the script or module the span
  runs (``benchmarks/bench_app.py --no-rerun``: the option is in that file), or belongs to a
  program that is not ours (:data:`OTHER_PROGRAMS`, each with the reason);
- every ``costmodel.NAME`` / ``cm.NAME`` resolves, attribute by attribute, and so does a name
  written from one of the package's modules in code (``strategy.memory.stage_memory``);
- every path under ``costmodel/``, ``docs/``, ``benchmarks/``, ``scripts/``, ``presets/``,
  ``tests/`` and ``examples/`` exists (a glob matches something), every ``make TARGET`` is a
  target of the Makefile and every ``COSTMODEL_*`` variable is read by the code;
- every command and every public API name (``costmodel._EXPORTS``) is mentioned somewhere,
  or is in :data:`UNDOCUMENTED` with the reason.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import click
import pytest
import typer

import costmodel
from costmodel import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# programs whose options are theirs, not ours: an option in a span that runs one of them is not
# checked against the CLI (the span's first word, after any leading ``VAR=value``)
OTHER_PROGRAMS = {
    "torchrun": "PyTorch's launcher (--standalone, --nproc_per_node)",
    "srun": "Slurm (--ntasks-per-node, --exclusive)",
    "sbatch": "Slurm",
    "mpirun": "MPI's launcher (--map-by, --version)",
    "mpiexec": "MPI's launcher",
    "pip": "the Python package installer",
    "pytest": "the test runner",
    "docker": "Docker",
    "streamlit": "Streamlit's own server flags",
    "git": "git",
    "make": "make",
    "nvidia-smi": "the NVIDIA driver's tool",
    "all_reduce_perf": "nccl-tests' binaries (-b, -e, -f)",
    "ruff": "the linter",
    "mypy": "the type checker",
    "valgrind": "the profiler (--tool=cachegrind)",
}

# options of other programs written where no program word opens the span (in a sentence, a
# comment or a Python string), each with whose it is
FOREIGN_OPTIONS = {
    "--check": "ruff's `format --check` (README: what `make test` runs)",
    "--dist": "pytest-xdist's `-n 2 --dist loadfile` (README: how `make test` runs pytest)",
    "--exclusive": "Slurm's, in dask-jobqueue's `job_extra_directives` (README: the Slurm sweep)",
    "--version": "`mpirun --version` (README: which MPI the launcher is)",
    "--map-by": "Open MPI's mpirun (README, docs/CONTRACTS.md: the nccl-tests launcher)",
    "--host": "Open MPI's mpirun (README: host lists the compare reads from a log)",
    "--training": "torchtitan's `--training.compile` (docs/step-fidelity.md: the runs compared)",
}

# paths of other repositories that happen to share a folder name with ours
OTHER_REPOSITORIES = {
    "docs/performance.md": "torchtitan's benchmark page (docs/design.md: its Float8 rows)",
}

# public API names no page mentions, each with the reason (empty when every name is documented)
UNDOCUMENTED: dict[str, str] = {}


# --- reading the docs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """A piece of a doc: a fenced block's line, an inline code span, or prose between them."""

    doc: str
    line: int
    kind: str  # "block", "inline", "prose"
    text: str

    def where(self) -> str:
        return f"{self.doc}:{self.line}: {self.text[:160]!r}"


def _spans(path: Path) -> list[Span]:
    """Every code span and prose run of one markdown file, with the line it starts on. An
    inline code span may run over a line break (a paragraph is read as one line); an indented
    (4-space) line that opens no list item and continues no paragraph is a code block's line,
    as markdown reads it."""
    name = str(path.relative_to(ROOT))
    out: list[Span] = []
    para: list[tuple[int, str]] = []

    def flush() -> None:
        if not para:
            return
        starts, text = [], ""
        for n, line in para:
            starts.append((len(text), n))
            text += line.strip() + " "

        def line_of(offset: int) -> int:
            return max(n for at, n in starts if at <= offset)

        for m in re.finditer(r"(`+)(.+?)\1", text):
            out.append(Span(name, line_of(m.start()), "inline", m.group(2).strip()))
        prose = re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), text)
        for m in re.finditer(r"[^ ].*?(?=  |$)", prose):  # runs of prose between the spans
            out.append(Span(name, line_of(m.start()), "prose", m.group(0)))
        para.clear()

    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            out.append(Span(name, n, "block", line))
        elif not line.strip():
            flush()
        elif line.startswith("    ") and not para and not line.lstrip().startswith(("-", "*")):
            out.append(Span(name, n, "block", line))
        else:
            para.append((n, line))
    flush()
    return out


SPANS = [s for doc in DOCS for s in _spans(doc)]
CODE = [s for s in SPANS if s.kind != "prose"]


# --- the CLI ----------------------------------------------------------------------------------


@cache
def _tree() -> dict[tuple[str, ...], click.Command]:
    """Every command and group by its path (``("validate", "nccl-tests", "run")``)."""
    out: dict[tuple[str, ...], click.Command] = {}

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        out[path] = cmd
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(cli.app), ())
    return out


def _options(path: tuple[str, ...]) -> set[str]:
    """The options of a command (long and short), with the root's (``--presets-dir``) and
    ``--help``."""
    tree = _tree()
    opts = {"--help"}
    for p in {(), path}:
        for param in tree[p].params:
            opts.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return opts


LEAVES = sorted(p for p, c in _tree().items() if p and not getattr(c, "commands", None))
ALL_OPTIONS = set().union(*(_options(p) for p in _tree()))
TOP = {p[0] for p in _tree() if p}

OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")
SHORT = re.compile(r"(?<![\w-])-[a-zA-Z](?![\w-])")  # -o, -s: checked after a command of ours
# `costmodel X` is a command, except the kept nccl-tests log's first lines (`# costmodel runner:
# <command line>`, `# costmodel runner env: ...`, runner.py), which the README quotes
COSTMODEL = re.compile(r"(?<![\w./-])costmodel\s+(?=[a-z])(?!runner:|runner env:)")
SEPARATOR = re.compile(r"\s\|\s|&&|;|\s#\s|^#")


def _command(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The longest command path at the start of ``words``, and the words after it."""
    path: tuple[str, ...] = ()
    tree = _tree()
    words = [w.strip("`'\",.:;()[]") for w in words]  # `costmodel memory`, in a sentence
    while words and (*path, words[0]) in tree:
        path, words = (*path, words[0]), words[1:]
    return path, words


@dataclass(frozen=True)
class Use:
    """``costmodel COMMAND ... --options`` as a span writes it (``path`` () for a span that
    names no command of ours)."""

    span: Span
    path: tuple[str, ...]
    head: str  # the word after "costmodel" (or the span's first word)
    options: tuple[str, ...]
    program: str = ""  # the first word of a span that runs something else


def _flags(text: str) -> tuple[str, ...]:
    """The long and short options written after a command of ours, in order."""
    return tuple(m.group(0) for m in re.finditer(f"{OPTION.pattern}|{SHORT.pattern}", text))


def _segments(text: str) -> list[str]:
    return [s.strip() for s in SEPARATOR.split(text) if s and s.strip()]


def _program(segment: str) -> str:
    words = [w for w in segment.split() if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
    return Path(words[0]).name if words else ""


def _uses(span: Span) -> list[Use]:
    """The commands and options one code span writes."""
    out: list[Use] = []
    for seg in _segments(span.text):
        starts = [m.end() for m in COSTMODEL.finditer(seg)]
        if starts and not re.search(r"import\s+costmodel\s*$", seg[: starts[0]]):
            for i, at in enumerate(starts):
                part = seg[at : starts[i + 1] if i + 1 < len(starts) else len(seg)]
                words = part.split()
                path, _ = _command(words)
                head = words[0].strip("`'\",.:;()[]") if words else ""
                out.append(Use(span, path, head, _flags(part)))
            continue
        words = seg.split()
        first = words[0] if words else ""
        if first in TOP and _flags(
            seg
        ):  # `step --json`, `memory --strategy hsdp`, `predict -s 1GB`
            path, _ = _command(words)
            out.append(Use(span, path, first, _flags(seg)))
        elif OPTION.search(seg):
            out.append(Use(span, (), "", tuple(OPTION.findall(seg)), _program(seg)))
    return out


USES = [u for s in CODE for u in _uses(s)]


def _run_by_test_readme() -> set[int]:
    """README lines of the ``sh`` blocks tests/test_readme.py runs verbatim: a wrong command or
    option there fails that test already, so the checks here leave those lines to it (and read
    the skipped blocks, the prose, the inline code and docs/, which nothing runs)."""
    from tests.test_readme import BLOCKS

    return {
        b["line"] + i
        for b in BLOCKS
        if b["lang"] == "sh" and not b["skip"]
        for i in range(1, len(b["code"].splitlines()) + 1)
    }


RUN = _run_by_test_readme()
CHECKED = [u for u in USES if not (u.span.doc == "README.md" and u.span.line in RUN)]


# --- scripts and modules a span runs ------------------------------------------------------------


@cache
def _source_options(path: Path) -> frozenset[str]:
    """The ``--options`` a script or module spells in its source (argparse or sys.argv)."""
    text = path.read_text(encoding="utf-8")
    return frozenset(re.findall(r"[\"'](--[a-z][\w-]*)", text))


def _runs(segment_text: str) -> Path | None:
    """The file of ours a span runs: ``benchmarks/bench_app.py``, ``bench_app.py`` (named by
    the prose around it), or ``python -m costmodel.validation.torch_bench``."""
    m = re.search(r"-m\s+(costmodel(?:\.\w+)+)", segment_text)
    if m:
        return ROOT / (m.group(1).replace(".", "/") + ".py")
    m = re.search(r"(?:^|\s|/)([\w/]*?(\w+\.py))\b", segment_text)
    if m:
        for folder in ("benchmarks", "scripts", ""):
            candidate = ROOT / folder / Path(m.group(1)).name
            if candidate.is_file():
                return candidate
    return None


@cache
def _all_script_options() -> frozenset[str]:
    files = [
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "scripts").glob("*.py"),
        ROOT / "costmodel" / "validation" / "torch_bench.py",
    ]
    return frozenset().union(*(_source_options(f) for f in files))


# --- the API ----------------------------------------------------------------------------------

API = re.compile(r"(?<![\w./-])(?:costmodel|cm)((?:\.[A-Za-z_]\w*)+)")


def _resolve(dotted: str) -> Any:
    """``costmodel`` + ``.a.b.c`` attribute by attribute, importing a submodule where an
    attribute is one (``costmodel.sweep.evaluate``); AttributeError/ImportError otherwise."""
    obj: Any = costmodel
    name = "costmodel"
    for part in dotted.strip(".").split("."):
        name = f"{name}.{part}"
        fields = getattr(obj, "model_fields", None)  # a pydantic model's field: no attribute
        if isinstance(obj, type) and isinstance(fields, dict) and part in fields:
            obj = fields[part]
            continue
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(name)
    return obj


# a module of the package written without its prefix, in code (``batch.solve_batch``,
# ``strategy.memory.stage_memory``): its first word one of costmodel's own modules
MODULES = {p.stem for p in (ROOT / "costmodel").glob("*.py") if not p.stem.startswith("__")} | {
    p.name for p in (ROOT / "costmodel").iterdir() if (p / "__init__.py").is_file()
}
RELATIVE = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+)")
CLASS_MEMBER = re.compile(r"(?<![\w./-])([A-Z]\w*(?:\.[A-Za-z_]\w*)+)")
EXTENSIONS = {"py", "toml", "md", "json", "jsonl", "csv", "html", "txt", "ipynb", "parquet"}


def _api_mentions() -> list[tuple[Span, str]]:
    """``(span, ".a.b")`` for each ``costmodel.a.b`` / ``cm.a.b`` anywhere, and each ``a.b`` in
    code whose ``a`` is one of the package's modules or one of its public classes."""
    out = []
    for s in SPANS:
        for m in API.finditer(s.text):
            dotted = m.group(1)
            if s.kind == "prose" and dotted in (".toml", ".md", ".py"):
                continue
            out.append((s, dotted.rstrip(".")))
        if s.kind == "prose":
            continue
        for m in RELATIVE.finditer(s.text):
            first, *rest = m.group(1).split(".")
            if first in MODULES and rest[-1] not in EXTENSIONS:
                out.append((s, "." + m.group(1)))
        for m in CLASS_MEMBER.finditer(s.text):  # Scenario.with_changes, Cluster.ranks
            if m.group(1).split(".")[0] in costmodel._EXPORTS:
                out.append((s, "." + m.group(1)))
    return out


API_MENTIONS = _api_mentions()


# --- paths ------------------------------------------------------------------------------------

FOLDERS = ("costmodel", "docs", "benchmarks", "scripts", "presets", "tests", "examples")
PATH = re.compile(
    r"(?<![\w./~-])((?:" + "|".join(FOLDERS) + r")/[\w./*{},-]*[\w*}/])"
)  # fmt: skip


def _path_mentions() -> list[tuple[Span, str]]:
    out = []
    for s in SPANS:
        for m in PATH.finditer(s.text):
            out.append((s, m.group(1).rstrip(".,")))
    return out


def _exists(rel: str) -> bool:
    if any(c in rel for c in "*{"):
        pattern = re.sub(r"\{[^}]*\}", "*", rel)
        return any(ROOT.glob(pattern))
    return (ROOT / rel).exists()


# --- the tests --------------------------------------------------------------------------------


def test_the_audit_reads_what_it_audits():
    """The parsing finds the mentions it checks (a regex that matched nothing would pass)."""
    assert {d.name for d in DOCS} >= {"README.md", "design.md", "CONTRACTS.md", "fidelity.md"}
    paths = {u.path for u in CHECKED}
    assert {("memory",), ("validate", "nccl-tests", "run"), ("step",)} <= paths
    assert sum(len(u.options) for u in CHECKED if u.path) > 120
    assert 20 < len(USES) - len(CHECKED) < len(USES) / 4  # test_readme's lines, left to it
    dotted = {d.strip(".") for _, d in API_MENTIONS}
    assert {"allreduce_time", "sweep.read_table", "strategy.memory.stage_memory"} <= dotted
    assert len(API_MENTIONS) > 250
    assert {"docs/fidelity.md", "benchmarks/bench_load.py"} <= {p for _, p in _path_mentions()}


def test_every_costmodel_command_written_exists():
    bad = [
        f"{u.span.where()}: `costmodel {u.head}` is no command (commands: {sorted(TOP)})"
        for u in CHECKED
        if u.head and not u.path
    ]
    # a group written alone is a command too (`costmodel validate --help`), a leaf past it must be
    # one of its subcommands: `costmodel presets shw` stops at the group
    for u in CHECKED:
        cmd = _tree().get(u.path)
        if u.path and getattr(cmd, "commands", None) and not u.options:
            words = u.span.text.split()
            after = words[words.index(u.path[-1]) + 1 :] if u.path[-1] in words else []
            if after and re.match(r"^[a-z][\w-]*$", after[0]):
                bad.append(f"{u.span.where()}: `{after[0]}` is no subcommand of {u.path}")
    assert not bad, "\n".join(bad)


def test_every_option_written_after_a_command_is_one_of_its_options():
    bad = []
    for u in CHECKED:
        if not u.path:
            continue
        opts = _options(u.path)
        bad += [
            f"{u.span.where()}: costmodel {' '.join(u.path)} has no {o}"
            for o in u.options
            if o not in opts
        ]
    assert not bad, "\n".join(bad)


def _unbound_option_problems() -> list[str]:
    bad = []
    for u in CHECKED:
        if u.path or u.head:
            continue
        if u.program in OTHER_PROGRAMS:
            continue
        runs = _runs(u.span.text)
        for o in u.options:
            if runs is not None:
                if o not in _source_options(runs) and o != "--help":
                    bad.append(f"{u.span.where()}: {runs.relative_to(ROOT)} takes no {o}")
            elif o not in ALL_OPTIONS | _all_script_options() | set(FOREIGN_OPTIONS):
                bad.append(f"{u.span.where()}: {o} is an option of no command or script")
    for s in SPANS:
        if s.kind != "prose":
            continue
        for o in OPTION.findall(s.text):
            if o not in ALL_OPTIONS | _all_script_options() | set(FOREIGN_OPTIONS):
                bad.append(f"{s.where()}: {o} (prose) is an option of no command or script")
    return bad


def test_every_other_option_written_exists_somewhere_of_ours():
    bad = _unbound_option_problems()
    assert not bad, "\n".join(bad)


def test_the_lists_of_what_is_not_ours_stay_true():
    """A foreign option that became one of ours, or one no doc writes any more, leaves its list
    (an entry there is an exception to the checks, so each must still be needed)."""
    written = {o for s in SPANS for o in OPTION.findall(s.text)}
    assert not [o for o in FOREIGN_OPTIONS if o in ALL_OPTIONS or o not in written]
    assert not [p for p in OTHER_PROGRAMS if p in TOP]


def test_every_api_name_written_resolves():
    bad = []
    for span, dotted in API_MENTIONS:
        try:
            _resolve(dotted)
        except (AttributeError, ImportError) as exc:
            bad.append(f"{span.where()}: costmodel{dotted} does not resolve ({exc})")
    assert not bad, "\n".join(bad)


def test_every_path_written_exists():
    bad = [
        f"{s.where()}: {p} does not exist"
        for s, p in _path_mentions()
        if not _exists(p) and p not in OTHER_REPOSITORIES
    ]
    assert all(not _exists(p) for p in OTHER_REPOSITORIES), "a path listed as another's is ours"
    assert not bad, "\n".join(bad)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", text, flags=re.M))


def test_every_make_target_written_exists():
    """``make run``, ``make test-fast``, ...: each a target of the Makefile."""
    targets, bad, seen = _make_targets(), [], 0
    for span in CODE:
        for seg in _segments(span.text):
            words = [w for w in seg.split() if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
            if len(words) > 1 and words[0] == "make" and re.match(r"^[a-z][\w-]*$", words[1]):
                seen += 1
                if words[1] not in targets:
                    bad.append(f"{span.where()}: the Makefile has no target {words[1]!r}")
    assert seen >= 4 and not bad, "\n".join(bad)


def test_every_environment_variable_written_is_read():
    """``COSTMODEL_PRESETS``: each ``COSTMODEL_*`` variable a doc names is read by the code."""
    sources = [*(ROOT / "costmodel").rglob("*.py"), ROOT / "app.py", ROOT / "Makefile"]
    code = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    names = {m for s in SPANS for m in re.findall(r"\bCOSTMODEL_[A-Z_]+\b", s.text)}
    assert "COSTMODEL_PRESETS" in names
    unread = [n for n in sorted(names) if n not in code]
    assert not unread, f"variables a doc names that the code never reads: {unread}"


def _mentioned(word: str) -> bool:
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])")
    return any(pattern.search(s.text) for s in CODE)


def test_every_command_is_documented():
    """Each command appears as ``costmodel PATH`` or as a span opening with its path."""
    written = {u.path for u in USES if u.path}
    spans = [s.text for s in CODE]
    missing = [
        " ".join(p)
        for p in LEAVES
        if p not in written and not any(t.startswith(" ".join(p)) for t in spans)
    ]
    assert not missing, f"commands no doc mentions: {missing}"


def test_every_public_api_name_is_documented():
    """Each name of ``import costmodel as cm`` appears in a code span of some doc (``cm.NAME``,
    ``costmodel.NAME`` or the bare name), or in :data:`UNDOCUMENTED` with the reason."""
    missing = [n for n in sorted(costmodel._EXPORTS) if not _mentioned(n) and n not in UNDOCUMENTED]
    assert not missing, f"public names no doc mentions: {missing}"
    stale = [n for n in UNDOCUMENTED if n not in costmodel._EXPORTS or _mentioned(n)]
    assert not stale, f"UNDOCUMENTED lists names that are documented or gone: {stale}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("costmodel memory --params 7B --ranks 8", [(("memory",), ("--params", "--ranks"))]),
        ("costmodel sweep g.toml -o out/ --engine dask", [(("sweep",), ("-o", "--engine"))]),
        (
            "costmodel validate nccl-tests run --gpus 8 | tee log",
            [(("validate", "nccl-tests", "run"), ("--gpus",))],
        ),
        ("step --strategy hsdp --group-size 8", [(("step",), ("--strategy", "--group-size"))]),
        ("torchrun --standalone -m x", [((), ("--standalone",))]),
        ("import costmodel as cm", []),
    ],
)
def test_the_reader_of_a_span(text, expected):
    got = [(u.path, u.options) for u in _uses(Span("x.md", 1, "inline", text))]
    assert got == expected


def test_the_audit_catches_a_wrong_command_an_unknown_option_and_a_stale_name():
    """The checks fail on what they are for: each planted error is found."""
    span = Span("x.md", 1, "inline", "costmodel memory --paramz 7B")
    (use,) = _uses(span)
    assert "--paramz" not in _options(use.path)
    (use,) = _uses(Span("x.md", 1, "inline", "costmodel memroy --params 7B"))
    assert use.path == () and use.head == "memroy"
    with pytest.raises((AttributeError, ImportError)):
        _resolve(".allreduce_tme")
    assert not _exists("docs/no-such-page.md") and _exists("presets/*/*.toml")
