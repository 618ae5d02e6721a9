"""Atomic file output: a result is written to a temporary file beside its final name and renamed
onto it only when complete, so an interrupted write never leaves a half file under the final name
(and an existing file stays as it was). Used by sweeps, the CLI and the validation harness.

Writing onto an existing name changes its content only: a symbolic link stays a link and the
file it points at gets the new content (a rename onto the link's own name would replace the
user's link with a plain file and leave the file it points at stale), and an existing file keeps
its permission bits (a new file gets the usual ``0o666`` less the umask)."""

from __future__ import annotations

import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Refuse early (ValueError) an output path whose folder is missing or not writable."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(folder_refusal(folder))
    if not os.access(folder, os.W_OK):
        raise ValueError(f"output: folder {str(folder)!r} is not writable")
    if p.is_dir():
        raise ValueError(f"output: {str(p)!r} is a folder, expected a file name")
    return p


def folder_refusal(folder: Path) -> str:
    """Why ``folder`` (not a directory) cannot hold an output: it is missing, or it is a file
    (``-o results.csv/out.csv`` named the file as a folder)."""
    if folder.exists():
        return f"output: {str(folder)!r} is a file, not a folder; allowed: a path in a folder"
    return f"output: folder {str(folder)!r} does not exist"


def _target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` changes: the file a symbolic link points at (resolved, links
    of links too), else ``path`` itself."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


class Terminated(SystemExit):
    """SIGTERM arrived while an atomic write was under way (``kill``, ``timeout``, a batch
    scheduler's preemption): raised so that the temporary file is removed, as it is for Ctrl-C;
    exits with the status a process killed by SIGTERM reports, 128 + 15."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the body runs, SIGTERM raises :class:`Terminated` instead of ending the process at
    once (Python's default, which skips every ``finally`` and left ``.out.csv.x1y2.tmp`` behind,
    as large as the half-written sweep). Only in the main thread, and only where SIGTERM has its
    default action: a handler someone installed is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:  # the default back, unless the body installed a handler of its own meanwhile
        if signal.getsignal(signal.SIGTERM) is raise_terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    If the body raises (or is interrupted: Ctrl-C, or SIGTERM where it has its default action),
    the temporary file is removed and ``path`` is left as it was: a reader never sees a
    half-written file under the final name. A ``path`` that is a symbolic link is written
    through: the file it points at is replaced, the link is kept.
    """
    final = check_writable(_target(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent or ".")
    except OSError as exc:  # e.g. /proc, a read-only mount: os.access cannot tell
        raise ValueError(
            f"output: cannot create a file in folder {str(final.parent)!r} "
            f"({exc.strerror or exc}); allowed: a path in a writable folder"
        ) from exc
    os.close(fd)
    tmp_path = Path(tmp)
    try:  # mkstemp makes 0600: an existing file keeps its mode, a new one gets the usual one
        mode = stat.S_IMODE(final.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp_path, mode)
    try:
        with _sigterm_raises():  # a SIGTERM removes the temporary file too, as Ctrl-C does
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
