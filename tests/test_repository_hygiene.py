"""Repository hygiene checked on every file we ship: the project is self-contained (nothing reads
the developers' workbench beside the repository) and code and docs state decisions instead of
citing this project's tracker by number, which a user who cloned the repository cannot read.
Citations of other projects' trackers (an nccl-tests thread named with its repository) stay:
those are public."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    "build",
    "dist",
}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".txt", ".yml", ".yaml", ".ipynb", ".sh", ""}
# measurement files are vendored byte for byte: their own words stay as published
VERBATIM = ROOT / "costmodel" / "data" / "reference"


def _files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and not path.is_symlink():
            out.append(path)
    return out


def test_nothing_reads_the_workbench() -> None:
    pattern = re.compile(r"\.\./shared/|/work/shared")
    hits = [
        str(p.relative_to(ROOT))
        for p in _files()
        if p.name != Path(__file__).name and pattern.search(p.read_text(errors="replace"))
    ]
    assert hits == []


def test_no_tracker_issue_numbers() -> None:
    # the word, then a space, a hyphen or '#', then a number (any of the three spellings)
    own = re.compile(r"\b[Ii]ssues?[ -]?#?\d+\b")
    public = re.compile(r"(nccl-tests|nccl|pytorch|streamlit|[\w.-]+/[\w.-]+)[ ]?(issue|#)", re.I)
    hits = []
    for p in _files():
        if VERBATIM in p.parents or p.name == Path(__file__).name:
            continue
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if own.search(line) and not public.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}")
    assert hits == [], "\n".join(hits)


def test_changelog_lists_each_change_once() -> None:
    # a merge of two branches that both added the same line kept both copies once; a reader
    # then counts one change twice
    seen: dict[tuple[str, str], int] = {}
    repeated = []
    section = ""
    for i, line in enumerate((ROOT / "CHANGELOG.md").read_text().splitlines(), 1):
        if line.startswith("## "):
            section = line
        elif line.startswith("- "):
            key = (section, line.strip())
            if key in seen:
                repeated.append(f"CHANGELOG.md:{i} repeats line {seen[key]}: {line[:80]}")
            seen.setdefault(key, i)
    assert repeated == [], "\n".join(repeated)
