"""Start the Streamlit server on the packaged app, with the server options the app depends on.

``costmodel app``, ``python -m costmodel.web``, ``make run`` and the Docker image all go through
:func:`serve`, so they start the same entry (:data:`APP_SCRIPT`, inside the package: a wheel
install serves without a source checkout) with the same options. The options are passed as
Streamlit command-line flags, so they hold whatever folder the server starts in (Streamlit reads
``.streamlit/config.toml`` only from the working directory and the home folder).

The server runs as a child process. :func:`serve` forwards SIGTERM, SIGINT and SIGHUP to it and
waits for it to exit, so stopping ``costmodel app`` (a service manager, ``docker stop``, the
shell's kill) stops the server instead of leaving it running, orphaned.

This module imports neither streamlit nor the pages (the launcher stays a small process).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import FrameType

#: The Streamlit script every road serves (shipped in the wheel as package code).
APP_SCRIPT = Path(__file__).resolve().with_name("app.py")

#: Largest upload the server accepts [MiB, Streamlit's unit]: 5 MiB. The Validate page's own
#: limit is costmodel.web.common.MAX_UPLOAD_BYTES = 5 MB (the longest reference log is about
#: 60 kB); the server's limit keeps a client that skips the page's check from sending 200 MB,
#: Streamlit's default.
MAX_UPLOAD_MB = 5

#: Server options the app depends on, as Streamlit flags (``--<option> <value>``). A source
#: checkout's .streamlit/config.toml carries the same values for a bare ``streamlit run app.py``.
SERVER_OPTIONS: dict[str, str] = {
    "server.maxUploadSize": str(MAX_UPLOAD_MB),
    # a served app never reloads on file changes (and a watcher costs a thread and inotify slots)
    "server.fileWatcherType": "none",
    "browser.gatherUsageStats": "false",
    # Streamlit runs a full gc.collect() after every script run by default: with plotly, pandas
    # and the shared caches in the heap that was the largest single cost of a rerun in a
    # profile of the served app (about 0.1-0.2 s of CPU each, serialising every session behind
    # it). Python's generational collector still runs; benchmarks/bench_load.py checks that
    # the server's memory stays flat over 1,000 reruns.
    "runner.postScriptGC": "false",
}

#: Signals passed on to the server: what a service manager, ``docker stop``, a terminal's
#: Ctrl-C and a closed terminal send.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: How long :func:`serve` waits after forwarding, when the launcher itself must exit first [s].
STOP_WAIT_S = 10.0


def streamlit_command(
    *,
    port: int = 8501,
    address: str | None = None,
    headless: bool = True,
    script: Path = APP_SCRIPT,
) -> list[str]:
    """The command that starts the Streamlit server on ``script`` (:data:`APP_SCRIPT`) with
    :data:`SERVER_OPTIONS` (``python -m streamlit run ...``)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(script)]
    options = {
        **SERVER_OPTIONS,
        "server.port": str(port),
        "server.headless": str(headless).lower(),
    }
    if address is not None:
        # an empty address is Streamlit's unset one, every interface: said, never silently taken
        if not address.strip() or any(c.isspace() for c in address):
            raise ValueError(
                f"address: {address!r} is no address to listen on; allowed: a host name or IP "
                "address, e.g. 127.0.0.1, or 0.0.0.0 for every interface"
            )
        _check_address(address)
        options["server.address"] = address
    for name, value in options.items():
        cmd += [f"--{name}", value]
    return cmd


def _check_address(address: str) -> None:
    """Refuse, on one line, an address the server could not listen on: a name that does not
    resolve (``999.1.1.1``) or an address of no interface of this machine (``10.255.255.1``).

    The server binds its socket as Streamlit does (IPv6 when the address holds a ``:``, else
    IPv4); the same bind on port 0 (any free port, so a port in use does not matter here) is
    tried and released at once. Without it the server's child process failed with a Python
    traceback from inside Streamlit and the launcher exited 1.
    """
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family) as sock:
            sock.bind((address, 0))
    except OSError as exc:  # socket.gaierror (no such name) is an OSError too
        why = (
            "does not resolve to an address"
            if isinstance(exc, socket.gaierror)
            else "is not an address of this machine"
        )
        raise ValueError(
            f"address: {address!r} {why} ({exc.strerror or exc}); allowed: a host name or IP "
            "address of this machine, e.g. 127.0.0.1, or 0.0.0.0 for every interface"
        ) from None


def check_port(port: int, address: str | None = None) -> None:
    """Refuse, on one line naming ``--port``, a port another process already listens on.

    Streamlit, given a port explicitly (every road here gives one), printed only ``Port 8501 is
    not available`` in its log format and exited 1 after its start-up; the launcher now tries
    the bind the server will make (``address``, or every interface when it is None, with
    ``SO_REUSEADDR`` as Tornado sets it, so a port left in TIME_WAIT by a stopped server is
    not refused) and releases it at once. A port taken between this check and the server's
    bind still gets Streamlit's own line: the check narrows that window, it cannot close it.
    """
    host = address or ""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:
        where = f" on {address}" if address else ""
        raise ValueError(
            f"--port: {port} is already in use{where} ({exc.strerror or exc}); allowed: a "
            "free port in 1..65535, e.g. --port 8502"
        ) from None


def serve(cmd: list[str]) -> int:
    """Run ``cmd`` (the server) as a child; forward :data:`FORWARDED` signals to it and wait.

    Returns the child's exit status. Whatever ends the launcher (a signal, an exception), the
    child is stopped first: terminated, then killed after :data:`STOP_WAIT_S`.
    """
    child = subprocess.Popen(cmd)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        return child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
