"""Atomic file output: a result is written to a temporary file beside its final name and renamed
onto it only when complete, so an interrupted write never leaves a half file under the final name
(and an existing file stays as it was). Used by sweeps, the CLI and the validation harness."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Refuse early (ValueError) an output path whose folder is missing or not writable."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"output: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"output: folder {str(folder)!r} is not writable")
    if p.is_dir():
        raise ValueError(f"output: {str(p)!r} is a folder, expected a file name")
    return p


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    If the body raises (or is interrupted), the temporary file is removed and ``path`` is left
    as it was: a reader never sees a half-written file under the final name.
    """
    final = check_writable(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent or ".")
    except OSError as exc:  # e.g. /proc, a read-only mount: os.access cannot tell
        raise ValueError(
            f"output: cannot create a file in folder {str(final.parent)!r} "
            f"({exc.strerror or exc}); allowed: a path in a writable folder"
        ) from exc
    os.close(fd)
    tmp_path = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; the final file gets the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write text to ``path`` atomically (temporary file + rename)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
