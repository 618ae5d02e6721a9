"""The docs describe the code as it is now: the checks ``tests/test_docs_audit.py`` does not make.

That audit reads every span of README.md and docs/*.md and checks the commands, options, paths
and dotted API names written there (``costmodel.x.y``, ``module.name``, ``ExportedClass.member``).
This file reuses its reading of the docs and checks what a dotted name does not show:

- **signatures**: ``name(arg, key=default, ...)`` written for a function or class of ours names
  only parameters it has, and a literal default written is the code's default (``docs/CONTRACTS.md``
  is a list of such signatures; a call written in the README names only keywords it takes);
- **class members** of any class of ours (``StrategyStep.layout_name``, ``ErrorBand.one_sided``),
  not only of the exported ones the audit resolves;
- **constants**: ``NAME = value`` and ``NAME`` (number) written beside it are the code's value;
- **the module list**: every module under ``costmodel/`` is named in docs/design.md or
  docs/CONTRACTS.md, every module docs/design.md's layer table names exists, and a file written
  without its folder (``scenario.py``) is one of ours;
- **the layers** docs/design.md states: imports at load go down its table, and the formula
  modules import what it says;
- **the rest of what the notes state about the code**: every field of ``Scenario`` and its
  result in CONTRACTS, the CLI module of each command, which commands take no ``--json``, the
  unit suffixes ``tests/test_unit_names.py`` checks, docs/typing.md's module lists against
  ``pyproject.toml``, and every section cited (``DESIGN 3.2``, ``nccl_model.md 1.3``) a heading.

The readers are tested on planted errors they must catch (the tests after the checks). Everything is read with ``ast``
or by importing the library (not the Streamlit pages), so the file runs in a few seconds.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import costmodel
from tests.test_docs_audit import CODE, DOCS, ROOT, SPANS, Span

PACKAGE = ROOT / "costmodel"
SIGNATURE_DOCS = {"docs/CONTRACTS.md", "docs/design.md"}  # where a call written is a signature

# --- what the package defines ------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = sorted(
    p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts[:1]
)  # fmt: skip
MODULE_FILES = [p for p in SOURCES if p.stem not in ("__init__", "__main__")]


@dataclass(frozen=True)
class Def:
    """A function, method or class of ours, found by ``ast``."""

    module: str  # costmodel.strategy.step
    qualname: str  # StrategyStep.as_dict
    node: ast.AST

    @property
    def owner(self) -> str:
        """The word a doc writes before the name: the class, else the module's last part."""
        head = self.qualname.rpartition(".")[0]
        return head or self.module.rpartition(".")[2]

    def obj(self) -> Any:
        """The object itself (None for the app's modules, which import streamlit)."""
        if self.module.startswith("costmodel.web"):
            return None
        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part, None)
        return obj


@cache
def _tree(path: Path) -> ast.Module:
    """A source file of the package, parsed once for every check."""
    return ast.parse(path.read_text(encoding="utf-8"))


@cache
def _index() -> dict[str, list[Def]]:
    """Every function, method and class of the package by its own name."""
    out: dict[str, list[Def]] = {}

    def walk(node: ast.AST, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                out.setdefault(child.name, []).append(Def(module, qual, child))
                if isinstance(child, ast.ClassDef):
                    walk(child, module, qual + ".")

    for path in SOURCES:
        tree = _tree(path)
        module = _module_name(path)
        walk(tree, module, "")
        for node in tree.body:  # strategy_step = _one_step(_prepare_step): a function too
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and re.fullmatch(r"[a-z]\w*", t.id):
                        out.setdefault(t.id, []).append(Def(module, t.id, node))
    return out


@cache
def _constants() -> dict[str, list[str]]:
    """Module-level UPPER_CASE names of the package: name -> the modules that assign it."""
    out: dict[str, list[str]] = {}
    for path in SOURCES:
        for node in _tree(path).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for t in targets:
                if isinstance(t, ast.Name) and re.fullmatch(r"_?[A-Z][A-Z0-9_]+", t.id):
                    out.setdefault(t.id, []).append(_module_name(path))
    return out


_NO_DEFAULT = object()


def _parameters(d: Def) -> tuple[dict[str, Any], bool] | None:
    """A callable's parameters (name -> default, :data:`_NO_DEFAULT` without one) and whether
    it takes ``**kwargs``; None where it cannot be read."""
    obj = d.obj()
    if obj is not None:
        if not callable(obj):
            return None
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return None
        params = {
            n: (_NO_DEFAULT if p.default is inspect.Parameter.empty else p.default)
            for n, p in sig.parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in ("self", "cls")
        }
        var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        return params, var_kw
    node = d.node
    if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if isinstance(node, ast.ClassDef):  # an app class: its annotated fields
        fields = {
            s.target.id: _NO_DEFAULT
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }
        return fields, False
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return {n: _NO_DEFAULT for n in names if n not in ("self", "cls")}, a.kwarg is not None


# --- reading a signature written in a doc ------------------------------------------------------

CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(")
IDENT = re.compile(r"[A-Za-z_]\w*")
_SAFE_NAMES = {"None": None, "True": True, "False": False, "inf": math.inf}


def _literal(text: str) -> Any:
    """A default as a doc writes it (``25*2**20``, ``"ring"``, ``1e-9``, ``math.inf``), or
    :data:`_NO_DEFAULT` when it is not a plain value."""
    text = text.strip().replace("np.inf", "inf").replace("math.inf", "inf")
    if text == "...":
        return _NO_DEFAULT
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return _NO_DEFAULT

    def value(n: ast.AST) -> Any:
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name) and n.id in _SAFE_NAMES:
            return _SAFE_NAMES[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -value(n.operand)
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.Pow, ast.Add, ast.Sub)):
            a, b = value(n.left), value(n.right)
            if not all(isinstance(x, (int, float)) for x in (a, b)):
                raise ValueError
            if isinstance(n.op, ast.Pow):
                return a**b
            return (
                a * b
                if isinstance(n.op, ast.Mult)
                else a + b
                if isinstance(n.op, ast.Add)
                else a - b
            )
        if isinstance(n, (ast.Tuple, ast.List)):
            return tuple(value(e) for e in n.elts)
        raise ValueError

    try:
        return value(tree)
    except (ValueError, TypeError, KeyError):
        return _NO_DEFAULT


def _same(written: Any, actual: Any) -> bool:
    if isinstance(actual, list):
        actual = tuple(actual)
    if (
        isinstance(written, float)
        and isinstance(actual, (int, float))
        and not isinstance(actual, bool)
    ):
        return math.isclose(written, actual) or (math.isinf(written) and math.isinf(actual))
    return bool(written == actual and type(written) is type(actual)) or (
        isinstance(written, int)
        and not isinstance(written, bool)
        and isinstance(actual, float)
        and written == actual
    )


def _split_args(text: str) -> tuple[list[str], bool]:
    """The top-level arguments of ``text`` (just after an opening parenthesis), and whether the
    closing one was found."""
    depth, quote, cur, args = 0, "", "", []
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                args.append(cur)
                return [a.strip() for a in args], True
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur)
            cur = ""
            continue
        cur += ch
    args.append(cur)
    return [a.strip() for a in args], False


@dataclass(frozen=True)
class Written:
    """One ``name(args)`` a code span writes."""

    span: Span
    dotted: str
    args: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.dotted.rpartition(".")[2]

    @property
    def text(self) -> str:
        return f"{self.dotted}({', '.join(self.args)})"

    @property
    def owner(self) -> str:
        return self.dotted.rpartition(".")[0].rpartition(".")[2]


def _written_calls(span: Span) -> list[Written]:
    out = []
    for m in CALL.finditer(span.text):
        args, _ = _split_args(span.text[m.end() :])
        out.append(Written(span, m.group(1), tuple(a for a in args if a)))
    return out


def _candidates(w: Written) -> list[Def]:
    """The defs a written call may mean: by name, narrowed by the word before it (a class, a
    module or a package) when that leaves any."""
    if w.dotted.split(".")[0] in ("cm", "costmodel") and w.dotted.count(".") == 1:
        return [Def("costmodel", w.name, ast.Pass())] if hasattr(costmodel, w.name) else []
    defs = _index().get(w.name, [])
    if not defs and not w.owner and w.name in costmodel._EXPORTS:  # an alias: advise_strategy_nodes
        return [Def("costmodel", w.name, ast.Pass())]
    if w.owner:
        return [d for d in defs if w.owner in (d.owner, *d.module.split("."))]
    section = _section_modules(w.span.doc, w.span.line)  # "## predict.py": predict's first
    return [d for d in defs if section & set(d.module.split("."))] or defs


@cache
def _headings(doc: str) -> list[tuple[int, frozenset[str]]]:
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    return [
        (n, frozenset(re.findall(r"(\w+)(?:\.py\b|/)", line.split("(")[0])))
        for n, line in enumerate(lines, 1)
        if line.startswith("#")
    ]


def _section_modules(doc: str, line: int) -> frozenset[str]:
    """The modules the heading above ``line`` names (``## memory.py / batch.py / ddp.py``)."""
    above = [words for n, words in _headings(doc) if n <= line]
    return above[-1] if above else frozenset()


def _argument(arg: str) -> tuple[str, str | None] | None:
    """``(name, default text or None)`` of a written argument, None for what names none: a
    value (``14e9``), ``...``, ``*``, ``/``, ``**kw``."""
    arg = arg.strip()
    if arg.startswith("*") or arg in ("...", "/") or "..." in arg.split("=")[0]:
        return None
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*(?::\s*[^=]+?)?\s*(?:=\s*(.+))?", arg, flags=re.S)
    if not m:
        return None
    return m.group(1), m.group(2)


def _is_class_name(name: str) -> bool:
    import builtins

    return isinstance(getattr(builtins, name, None), type) or any(
        isinstance(d.node, ast.ClassDef) for d in _index().get(name, [])
    )


# calls written that are not signatures (a use of the function with values), each with why
CALLS_NOT_SIGNATURES: dict[str, str] = {
    "run(tasks, 0.0, check=False, band_work_s=b)": "docs/CONTRACTS.md: the call run_many matches",
}


def _signature_problems(calls: list[Written]) -> list[str]:
    bad = []
    for w in calls:
        defs = _candidates(w)
        read = [p for p in (_parameters(d) for d in defs) if p is not None]
        if not read or w.text in CALLS_NOT_SIGNATURES:
            continue
        if any(var_kw for _, var_kw in read):
            known: set[str] | None = None  # **kwargs: any keyword may be right
        else:
            known = set().union(*(set(params) for params, _ in read))
        # a call through the public front (``cm.sweep(kind="step")``) is a use, not a signature
        signature = w.span.doc in SIGNATURE_DOCS and w.dotted.split(".")[0] not in (
            "cm",
            "costmodel",
        )
        for raw in w.args:
            got = _argument(raw)
            if got is None:
                continue
            name, default = got
            keyword = default is not None
            if not keyword and not signature:
                continue  # a README call's positional values are values, not names
            if not keyword and (raw != name or _is_class_name(name)):
                continue  # a value, or a class's base (``TextDecodeError(ValueError)``)
            if known is not None and name not in known:
                bad.append(
                    f"{w.span.where()}: {w.dotted}() has no parameter {name!r} "
                    f"(it has {sorted(known)})"
                )
                continue
            if not (signature and keyword) or "|" in default:
                continue
            value = _literal(default)
            if value is _NO_DEFAULT:
                continue
            actual = [params[name] for params, _ in read if name in params]
            if (
                actual
                and not any(a is not _NO_DEFAULT and _same(value, a) for a in actual)
                and all(a is not _NO_DEFAULT for a in actual)
            ):
                bad.append(
                    f"{w.span.where()}: {w.dotted}(): {name} defaults to {actual[0]!r}, "
                    f"not {default}"
                )
    return bad


CALLS = [w for s in CODE for w in _written_calls(s)]


# --- class members -------------------------------------------------------------------------------

MEMBER = re.compile(r"(?<![\w./-])([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\.([A-Za-z_]\w*)")


def _has_member(cls: type, attr: str) -> bool:
    if hasattr(cls, attr):
        return True
    for klass in getattr(cls, "__mro__", (cls,)):
        if attr in getattr(klass, "__annotations__", {}):
            return True
        if attr in (getattr(klass, "model_fields", None) or {}):
            return True
        if attr in (getattr(klass, "__dataclass_fields__", None) or {}):
            return True
    return False


def _member_problems(spans: list[Span]) -> list[str]:
    bad = []
    index = _index()
    for s in spans:
        for m in MEMBER.finditer(s.text):
            cls_name, attr = m.groups()
            if cls_name in costmodel._EXPORTS:
                continue  # tests/test_docs_audit.py resolves these
            classes = [d for d in index.get(cls_name, []) if isinstance(d.node, ast.ClassDef)]
            objs = [d.obj() for d in classes]
            if not classes or any(o is None for o in objs):
                continue
            if not any(_has_member(o, attr) for o in objs):
                where = ", ".join(sorted({d.module for d in classes}))
                bad.append(f"{s.where()}: {cls_name} ({where}) has no member {attr!r}")
    return bad


# --- constants ---------------------------------------------------------------------------------

ASSIGNED = re.compile(
    r"(?<![\w.])((?:[a-z_]\w*\.)*)(_?[A-Z][A-Z0-9_]{2,})\s*(?::\s*[^=`]+?)?\s*=\s*([^=].*)$"
)
BESIDE = re.compile(r"`((?:[a-z_]\w*\.)*)(_?[A-Z][A-Z0-9_]{2,})`\s*\(([-\d][\d_.,e+-]*)[,)]")


def _constant_values(qualifier: str, name: str) -> list[Any]:
    modules = _constants().get(name, [])
    words = [w for w in qualifier.strip(".").split(".") if w and w not in ("cm", "costmodel")]
    if words:
        modules = [m for m in modules if words[-1] in m.split(".")] or []
    values = []
    for mod in modules:
        if mod.startswith("costmodel.web"):
            continue
        values.append(getattr(importlib.import_module(mod), name))
    return values


def _constant_mentions() -> list[tuple[str, str, str, str]]:
    """``(where, qualifier, NAME, written value)`` for ``NAME = value`` in a code span and
    ``NAME`` (value) in a doc."""
    out = []
    for s in CODE:
        m = ASSIGNED.search(s.text)
        if m:
            out.append((s.where(), m.group(1), m.group(2), m.group(3)))
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in BESIDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{doc.relative_to(ROOT)}:{line}: {m.group(0)!r}"
            out.append((where, m.group(1), m.group(2), m.group(3).replace(",", "")))
    return out


def _constant_problems(mentions: list[tuple[str, str, str, str]]) -> list[str]:
    bad = []
    for where, qualifier, name, text in mentions:
        value = _literal(text.strip().rstrip(";,`"))
        if value is _NO_DEFAULT:
            continue
        actual = _constant_values(qualifier, name)
        if not actual:
            if name in _constants() or qualifier:
                continue  # an app constant, or a name the audit resolves
            continue
        if not any(_same(value, a) for a in actual):
            bad.append(f"{where}: {qualifier}{name} is {actual[0]!r} in the code, not {text}")
    return bad


# --- the module list --------------------------------------------------------------------------


def _named_forms(path: Path) -> list[re.Pattern[str]]:
    """How a doc may name a module: its path (``strategy/events.py``, with or without
    ``costmodel/``), a glob matching it (``web/page_*.py``), its dotted name
    (``strategy.events``, ``costmodel.sweep.grid``); a top-level module also as ``name.py``."""
    rel = path.relative_to(PACKAGE).with_suffix("")
    dotted = ".".join(rel.parts)
    slashed = "/".join(rel.parts)
    forms = [
        rf"(?<![\w/]){re.escape(slashed)}(?:\.py)?(?![\w/])",
        rf"(?<![\w.]){re.escape(dotted)}(?![\w])",
    ]
    if len(rel.parts) == 1:
        forms.append(rf"(?<![\w/.]){re.escape(rel.name)}\.py\b")
    return [re.compile(f) for f in forms]


def _globs_written(text: str) -> list[str]:
    return re.findall(r"(?:costmodel/)?((?:[a-z_]+/)*[\w]*\*[\w*]*\.py)", text)


def _unnamed_modules(texts: list[str], sections: dict[str, list[str]] | None = None) -> list[str]:
    """The modules ``texts`` do not name; ``sections`` maps a package (``validation/nccl_tests``)
    to the code of the doc's section about it, where a module's bare name (``_lexer``) names it."""
    joined = "\n".join(texts)
    globs = _globs_written(joined)
    missing = []
    for path in MODULE_FILES:
        rel = path.relative_to(PACKAGE)
        if any(p.search(joined) for p in _named_forms(path)):
            continue
        if any(rel.match(g) for g in globs):
            continue
        stem = re.compile(rf"(?<![\w/.]){re.escape(rel.stem)}(?![\w/])")
        section = (sections or {}).get(rel.parent.as_posix(), [])
        if rel.parent != Path(".") and any(stem.search(t) for t in section):
            continue
        missing.append(rel.as_posix())
    return missing


def _package_sections(docs: tuple[str, ...]) -> dict[str, list[str]]:
    """The code spans under each heading that names a package folder (``## cli/ (package)``)."""
    out: dict[str, list[str]] = {}
    for doc in docs:
        lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
        heads = [
            (n, re.findall(r"(?<![\w/])(?:costmodel/)?([a-z_]+(?:/[a-z_]+)*)/", line))
            for n, line in enumerate(lines, 1)
            if line.startswith("#")
        ]
        for s in SPANS:
            if s.doc != doc or s.kind == "prose":
                continue
            above = [folders for n, folders in heads if n <= s.line]
            for folder in above[-1] if above else []:
                out.setdefault(folder, []).append(s.text)
    return out


def _layer_table(text: str) -> str:
    """docs/design.md's section 1 table (the rows between its heading and the rules)."""
    section = text.split("## 1. Layers", 1)[1].split("## 2.", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


# --- the tests ---------------------------------------------------------------------------------


def test_the_checks_read_what_they_check():
    """The readers find what they check (a regex that matched nothing would pass)."""
    names = {w.name for w in CALLS if _candidates(w)}
    assert {"collective_time", "predict_collective", "stage_memory", "sweep_to_file"} <= names
    assert sum(1 for w in CALLS if w.span.doc in SIGNATURE_DOCS and _candidates(w)) > 150
    members = {m.group(0) for s in CODE for m in MEMBER.finditer(s.text)}
    assert {"StrategyStep.layout_name", "Layout.identity"} <= members
    constants = {name for _, _, name, _ in _constant_mentions()}
    assert {"STEP_BATCH_ROWS", "MAX_STEP_ROWS", "STALE_PRICE_DAYS"} <= constants
    assert len(MODULE_FILES) > 80 and "textfile.py" in {p.name for p in MODULE_FILES}


def test_every_signature_written_has_those_parameters_and_defaults():
    bad = _signature_problems(CALLS)
    assert not bad, "\n".join(bad)


# calls written in the signature docs that are not ours, each with whose it is
NOT_OURS = {
    "ceil": "math's (docs/design.md: L = ceil(log2 N))",
    "cross_entropy": "PyTorch's (docs/design.md: the loss's logits)",
    "errors": "pydantic's ValidationError.errors() (ScenarioError)",
    "model_dump": "pydantic's BaseModel.model_dump() (ScenarioResult)",
    "f": "a predictor's shape, written as a function f (docs/CONTRACTS.md)",
    "int64": "numpy's (docs/CONTRACTS.md: a numpy scalar read as a Python number)",
    "asarray": "numpy's (docs/CONTRACTS.md: an API input converted to an array)",
    "timedelta64": "numpy's (docs/CONTRACTS.md: a numpy duration refused)",
}


def test_every_function_written_in_the_signature_docs_is_ours():
    """A function docs/CONTRACTS.md or docs/design.md writes as ``name(...)`` is one of the
    package's (a removed or renamed one fails here: the checks above skip what they cannot
    find), a builtin, or in :data:`NOT_OURS`."""
    import builtins

    unknown = sorted(
        {
            f"{w.span.where()}: {w.dotted}()"
            for w in CALLS
            if w.span.doc in SIGNATURE_DOCS
            and not _candidates(w)
            and not _index().get(w.name)
            and not hasattr(builtins, w.name)
            and w.name not in NOT_OURS
        }
    )
    assert not unknown, "\n".join(unknown)
    written = {w.name for w in CALLS if w.span.doc in SIGNATURE_DOCS}
    assert not [n for n in NOT_OURS if n not in written or n in _index()]


def test_the_calls_listed_as_not_signatures_are_still_written():
    written = {w.text for w in CALLS}
    assert not [t for t in CALLS_NOT_SIGNATURES if t not in written]


def test_every_member_written_of_a_class_of_ours_exists():
    bad = _member_problems(CODE)
    assert not bad, "\n".join(bad)


def test_every_constant_written_with_its_value_has_that_value():
    bad = _constant_problems(_constant_mentions())
    assert not bad, "\n".join(bad)


def test_every_module_is_named_in_the_design_notes_or_the_contracts():
    texts = [
        s.text
        for s in SPANS
        if s.doc in ("docs/design.md", "docs/CONTRACTS.md") and s.kind != "prose"
    ]
    missing = _unnamed_modules(texts, _package_sections(("docs/design.md", "docs/CONTRACTS.md")))
    assert not missing, f"modules neither docs/design.md nor docs/CONTRACTS.md names: {missing}"


def test_the_layer_table_names_only_modules_that_exist():
    """Each ``name.py`` / ``name/`` / ``web/page_*.py`` of docs/design.md's layer table is a
    module or package of ours (or a top-level folder: ``presets/``), and the table names every
    top-level module."""
    table = _layer_table((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    written = re.findall(r"`(?:costmodel/)?([\w/]+(?:\.py|/))`", table)
    assert len(written) > 15
    bad = [w for w in written if not any(PACKAGE.glob(w.rstrip("/"))) and not (ROOT / w).exists()]
    assert not bad, f"docs/design.md's layer table names what is not there: {bad}"
    in_table = [p for p in MODULE_FILES if p.parent == PACKAGE]
    missing = _unnamed_modules([table])
    top = [p.name for p in in_table if p.name in missing]
    assert not top, f"top-level modules the layer table leaves out: {top}"


# the formula modules docs/design.md section 1 names, and what it says they import
FORMULA_MODULES = ["collectives", "topology", "nccl", "memory", "batch", "ddp"]
FORMULA_IMPORTS_AT_LOAD = {"units", "tables", "_checks"}
NEVER_IMPORTED = {"pydantic", "pandas", "plotly", "streamlit", "torch"}


def _formula_files() -> list[Path]:
    out = []
    for name in FORMULA_MODULES:
        p = PACKAGE / name
        out += sorted(p.glob("*.py")) if p.is_dir() else [p.with_suffix(".py")]
    return out


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The package's modules a file imports at load (top level) and anywhere, and the third-party
    packages it imports anywhere (first dotted part)."""
    tree = _tree(path)
    pkg = path.parent.relative_to(PACKAGE).parts  # ("collectives",) or ()
    ours_top: set[str] = set()
    theirs: set[str] = set()

    def ours(node: ast.ImportFrom) -> list[str]:
        base = list(pkg)[: len(pkg) - (node.level - 1)] if node.level else []
        mod = [*base, *(node.module.split(".") if node.module else [])]
        if not node.level:
            if mod[:1] != ["costmodel"]:
                return []
            mod = mod[1:]
        if not mod:  # from . import tables
            return [a.name for a in node.names]
        return [mod[0]]

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = ours(node)
            if not names and not node.level:
                theirs.add((node.module or "").split(".")[0])
            if node in tree.body:
                ours_top.update(names)
        elif isinstance(node, ast.Import):
            theirs.update(a.name.split(".")[0] for a in node.names)
    return ours_top, theirs


def test_the_formula_modules_import_what_the_design_notes_say():
    """docs/design.md: the formula modules import numpy, the standard library, ``units``,
    ``tables`` and ``_checks`` when loaded (and one another: topology the collectives), never
    pydantic, pandas, plotly, streamlit or torch."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    for name in sorted(FORMULA_IMPORTS_AT_LOAD):
        assert f"`{name}`" in text.split("## 2.", 1)[0], f"design.md's rule no longer names {name}"
    bad = []
    for path in _formula_files():
        top, theirs = _imports(path)
        inside = {path.parent.name} if path.parent != PACKAGE else set()
        extra = top - FORMULA_IMPORTS_AT_LOAD - set(FORMULA_MODULES) - inside
        if extra:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(extra)} when loaded")
        if theirs & NEVER_IMPORTED:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(theirs & NEVER_IMPORTED)}")
    assert not bad, "\n".join(bad)


# --- the checks catch what they are for ---------------------------------------------------------


def test_the_checks_catch_a_renamed_parameter_a_wrong_default_and_a_gone_member():
    span = Span("docs/CONTRACTS.md", 1, "inline", "")

    def calls(text: str) -> list[Written]:
        return _written_calls(Span(span.doc, 1, "inline", text))

    good = "collective_time(op, message_bytes, ranks, bandwidth_bytes_per_s, latency_s=0.0)"
    assert not _signature_problems(calls(good))
    (renamed,) = _signature_problems(calls("collective_time(op, size_bytes, ranks)"))
    assert "size_bytes" in renamed
    (default,) = _signature_problems(calls('collective_time(op, ranks=8, algorithm="tree")'))
    assert "algorithm defaults to" in default and 'not "tree"' in default
    assert not _signature_problems(calls("stage_memory(zero_stage, ranks, params=None, **kw)"))
    readme = Span("README.md", 1, "inline", 'cm.allreduce_time(14e9, 64, 50e9, algoritm="tree")')
    assert _signature_problems(_written_calls(readme))
    (gone,) = _member_problems([Span("x.md", 1, "inline", "StrategyMemory.layout_nam")])
    assert "layout_nam" in gone
    assert not _member_problems([Span("x.md", 1, "inline", "StrategyMemory.layout_name")])
    (wrong,) = _constant_problems([("x", "evaluate.", "STEP_BATCH_ROWS", "511")])
    assert "512" in wrong
    assert not _constant_problems([("x", "evaluate.", "STEP_BATCH_ROWS", "512")])


def test_the_module_check_catches_a_module_no_doc_names():
    assert _unnamed_modules(["`strategy/events.py`"]).count("strategy/events.py") == 0
    assert "strategy/events.py" in _unnamed_modules(["`strategy/engine.py`"])
    assert "web/page_memory.py" not in _unnamed_modules(["`web/page_*.py`"])
    assert "textfile.py" not in _unnamed_modules(["`costmodel.textfile.decode`"])


@pytest.mark.parametrize(
    ("text", "value"),
    [("25*2**20", 25 * 2**20), ('"ring"', "ring"), ("1_000_000", 1_000_000), ("np.inf", math.inf)],
)
def test_the_reader_of_a_default(text, value):
    assert _literal(text) == value


# --- docs/typing.md against pyproject.toml -----------------------------------------------------


def _mypy_overrides() -> list[dict[str, Any]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["mypy"]["overrides"])


def _short(module: str) -> str:
    """``costmodel.sweep.*`` -> ``sweep``; ``costmodel`` -> ``costmodel/__init__.py``."""
    if module == "costmodel":
        return "costmodel/__init__.py"
    return module.removeprefix("costmodel.").removesuffix(".*")


def test_the_typing_notes_list_the_modules_mypy_is_configured_for():
    """docs/typing.md's lists of fully annotated modules and of untyped third-party packages
    are pyproject.toml's ``[[tool.mypy.overrides]]``, and its status (mypy in ``make test`` and
    ``make lint``) is the Makefile's."""
    text = (ROOT / "docs" / "typing.md").read_text(encoding="utf-8")
    section = text.split("## What is configured", 1)[1].split("\n## ", 1)[0]
    bullets = {b.split(":**", 1)[0].strip("*- \n"): b for b in section.split("\n- ")}
    annotated = next(b for k, b in bullets.items() if k.startswith("Formula and model"))
    untyped = next(b for k, b in bullets.items() if k.startswith("Third-party"))
    written = {w for w in re.findall(r"`([\w./]+)`", annotated)} - {
        "disallow_untyped_defs",
        "disallow_incomplete_defs",
        "warn_return_any",
        "Any",
    }
    configured = [o for o in _mypy_overrides() if o.get("disallow_untyped_defs")]
    assert len(configured) == 1
    modules = {_short(m) for m in configured[0]["module"]}
    assert written == modules, (
        f"docs/typing.md lists {sorted(written - modules)} that pyproject.toml does not, and "
        f"leaves out {sorted(modules - written)}"
    )
    ignored = next(o for o in _mypy_overrides() if o.get("ignore_missing_imports"))
    packages = {m.removesuffix(".*") for m in ignored["module"]}
    assert packages == set(re.findall(r"\(([^)]*)\)", untyped)[0].replace(" ", "").split(","))
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("test", "lint"):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert "-m mypy" in recipe, f"docs/typing.md says mypy runs in make {target}"


# --- section citations -------------------------------------------------------------------------

CITED = {
    "docs/design.md": re.compile(r"\bDESIGN(?:\.md)?,? (?:sections? )?(\d+(?:\.\d+)?)"),
    "docs/nccl-model.md": re.compile(r"\bnccl[-_]model(?:\.md)?`*,? (?:section )?(\d+(?:\.\d+)?)"),
}


def _sections(doc: str) -> set[str]:
    """The section numbers of a doc's headings (``### 1.7-1.9 ...`` is 1.7, 1.8 and 1.9)."""
    out = set()
    for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
        m = re.match(r"#+ (\d+)(?:\.(\d+))?(?:-\d+\.(\d+))?[. ]", line)
        if not m:
            continue
        major, first, last = m.groups()
        out.add(major)
        if first:
            out.update(f"{major}.{i}" for i in range(int(first), int(last or first) + 1))
    return out


def _citations() -> list[tuple[str, str, str]]:
    """``(where, doc, section)`` for every "DESIGN 3.2" / "docs/nccl-model.md section 1.3" in
    the package, the tests, the scripts and the docs."""
    files = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "tests").glob("*.py"),
        *(ROOT / "scripts").glob("*.py"),
        *DOCS,
    ]
    out = []
    for path in files:
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        for doc, pattern in CITED.items():
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{path.relative_to(ROOT)}:{line}", doc, m.group(1)))
    return out


def test_every_section_cited_is_a_heading_of_that_doc():
    """Docstrings cite docs/design.md and docs/nccl-model.md by section number ("DESIGN 3.2",
    "nccl_model.md 1.3"): each number cited is a heading there."""
    citations = _citations()
    assert len(citations) > 50
    assert {"3.1", "4"} <= {s for _, d, s in citations if d == "docs/design.md"}
    bad = [f"{w}: {d} has no section {s}" for w, d, s in citations if s not in _sections(d)]
    assert not bad, "\n".join(bad)


# --- the object layer's fields ------------------------------------------------------------------


def _section_spans(doc: str, heading: str) -> list[Span]:
    """The spans (code and prose) of the section of ``doc`` whose heading starts with ``heading``."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line.startswith("## ")]
    (start,) = [n for n in starts if lines[n - 1].startswith(heading)]
    end = min([n for n in starts if n > start] + [len(lines) + 1])
    return [s for s in SPANS if s.doc == doc and start <= s.line < end]


FIELD = re.compile(r"^([a-z_]\w*): [^=]+?(?: = (.+))?$")


def test_the_contracts_name_every_field_of_the_scenario_and_its_result():
    """docs/CONTRACTS.md's scenario.py section lists the fields of ``Scenario``, ``ScenarioResult``,
    ``ScalingRow`` and ``Flip``: every field is named there, and each ``name: type = default``
    written for a Scenario field is its default."""
    from costmodel.scenario import Flip, ScalingRow, Scenario, ScenarioResult

    spans = _section_spans("docs/CONTRACTS.md", "## scenario.py")
    words = {w for s in spans for w in re.findall(r"[a-z_]\w*", s.text)}
    missing = [
        f"{model.__name__}.{name}"
        for model in (Scenario, ScenarioResult, ScalingRow, Flip)
        for name in model.model_fields
        if name not in words
    ]
    assert not missing, f"fields docs/CONTRACTS.md's scenario.py section leaves out: {missing}"
    bad, seen = [], 0
    for s in spans:
        m = FIELD.match(s.text)
        if not m or m.group(1) not in Scenario.model_fields or m.group(2) is None:
            continue
        seen += 1
        written, actual = _literal(m.group(2)), Scenario.model_fields[m.group(1)].default
        if written is not _NO_DEFAULT and not _same(written, actual):
            bad.append(f"{s.where()}: Scenario.{m.group(1)} defaults to {actual!r}")
    assert seen > 10 and not bad, "\n".join(bad)


def test_the_commands_without_json_are_the_ones_design_md_names():
    """docs/design.md section 5: ``--json`` on every command but the ones it names."""
    from tests.test_docs_audit import LEAVES, _options

    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8").split("## 5.", 1)[1]
    sentence = text.split("`--json`", 1)[1].split(";", 1)[0]
    named = set(re.findall(r"`([a-z][\w -]*)`", sentence))
    without = {" ".join(p) for p in LEAVES if "--json" not in _options(p)}
    assert named == without, f"design.md names {sorted(named)}; without --json: {sorted(without)}"


def test_the_section_check_reads_headings_and_citations():
    design = _sections("docs/design.md")
    assert {"1", "3", "3.1", "3.8", "4", "5"} <= design and "3.9" not in design
    assert {"1.7", "1.8", "1.9", "2.3", "6"} <= _sections("docs/nccl-model.md")
    found = [
        m.group(1) for p in CITED.values() for m in p.finditer("DESIGN 3.9, nccl_model.md 1.4")
    ]
    assert found == ["3.9", "1.4"]


# --- the layers ----------------------------------------------------------------------------------

SIDE_ROWS = ("measurements", "bundled data")  # beside the stack (docs/design.md section 1)


def _layer_rows() -> dict[str, tuple[int, str]]:
    """Each module or package of docs/design.md's layer table (its first part: ``strategy``,
    ``units``) -> (its row's index from the top, the row's name)."""
    rows = [
        r
        for r in _layer_table(
            (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
        ).splitlines()
        if not r.startswith(("|---", "| layer"))
    ]
    out: dict[str, tuple[int, str]] = {}
    for i, row in enumerate(rows):
        _, name, cell, *_ = row.split("|")
        for w in re.findall(r"`(?:costmodel/)?([\w/]+?)(?:\.py|/)?`", cell):
            first = w.split("/")[0]
            if (PACKAGE / first).is_dir() or (PACKAGE / f"{first}.py").is_file():
                out.setdefault(first, (i, name.strip()))
    return out


def _layer_problems(rows: dict[str, tuple[int, str]]) -> list[str]:
    bad = []
    for path in SOURCES:
        rel = path.relative_to(PACKAGE)
        me = rel.parts[0].removesuffix(".py")
        if me not in rows:
            continue
        (mine, my_row), (top, _) = rows[me], _imports(path)
        for other in sorted(top - {me}):
            if other not in rows:
                continue
            theirs, their_row = rows[other]
            if my_row in SIDE_ROWS:
                upward = their_row in SIDE_ROWS and their_row != my_row
            elif their_row in SIDE_ROWS:
                upward = mine != 0  # of the stack, only the faces import the side rows
            else:
                upward = theirs < mine
            if upward:
                bad.append(f"{rel} ({my_row}) imports {other} ({their_row}) when loaded")
    return bad


def test_imports_at_load_go_down_the_layer_table():
    """docs/design.md section 1: a module imports, when loaded, only from its own row and the
    rows below; measurements and bundled data sit beside the stack and only the faces import
    them."""
    rows = _layer_rows()
    assert {"web", "cli", "strategy", "predict", "units", "validation", "steps_data"} <= set(rows)
    assert rows["web"][0] == 0 and rows["validation"][1] == "measurements"
    bad = _layer_problems(rows)
    assert not bad, "\n".join(bad)
    # planted: units.py written in the figures' row makes every formula's import of it upward
    moved = _layer_problems({**rows, "units": (1, "figures")})
    assert any(b.startswith("memory.py (formulas) imports units") for b in moved)


def test_the_unit_suffixes_design_md_names_are_the_ones_checked():
    """docs/design.md section 2 names the unit suffixes ``tests/test_unit_names.py`` holds the
    public API's parameters to."""
    from tests.test_unit_names import UNIT_SUFFIXES

    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    bullet = text.split("**Every numeric name carries its unit**", 1)[1].split("\n- ", 1)[0]
    written = set(re.findall(r"`(_\w+)`", bullet))
    assert written == set(UNIT_SUFFIXES), f"design.md: {sorted(written)}"


def test_the_contracts_say_which_cli_module_holds_each_command():
    """docs/CONTRACTS.md's cli/ section: ``comm`` (collective, predict, sweep), ... names every
    top-level command under the module that defines it."""
    from tests.test_docs_audit import _tree

    text = (ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8")
    section = text.split("\n## cli/", 1)[1].split("\n## ", 1)[0]
    written: dict[str, str] = {}
    for module, names in re.findall(r"`(\w+)` \(([^)]*)\)", section):
        if (PACKAGE / "cli" / f"{module}.py").is_file():
            for name in re.findall(r"(?:^|, )([a-z][\w-]*)", names):
                written.setdefault(name, module)
    actual = {
        path[0]: cmd.callback.__module__.rpartition(".")[2]
        for path, cmd in _tree().items()
        if path and cmd.callback is not None
    }
    assert len(actual) > 12
    bad = [
        f"{c}: in cli/{m}.py, docs say {written.get(c)}"
        for c, m in actual.items()
        if written.get(c) != m
    ]
    assert not bad, "\n".join(sorted(bad))


# files of other projects a doc names by their bare file name, each with whose it is
OTHER_FILES = {
    "parallel_dims.py": "torchtitan's (docs/design.md: what strategy/layout.py is modelled on)",
    "metrics.py": "torchtitan's (docs/step-fidelity.md: its memory metric)",
}
BARE_FILE = re.compile(r"(?<![\w/.-])([a-z_][a-z0-9_]*\.py)\b")


def test_every_python_file_named_without_its_folder_exists():
    """``scenario.py``, ``bench_app.py``: a file written without its folder (which the audit's
    path check does not see) is one of ours somewhere, or another project's."""
    ours = {
        p.name
        for folder in ("costmodel", "tests", "scripts", "benchmarks", "examples")
        for p in (ROOT / folder).rglob("*.py")
    } | {p.name for p in ROOT.glob("*.py")}
    written = {m.group(1): s for s in SPANS for m in BARE_FILE.finditer(s.text)}
    assert {"scenario.py", "plots.py", "app.py"} <= set(written)
    bad = [
        f"{s.where()}: no file {n}" for n, s in written.items() if n not in ours | set(OTHER_FILES)
    ]
    assert not bad, "\n".join(bad)
    assert not [n for n in OTHER_FILES if n in ours or n not in written]
