"""The app served on a free port and Debian's chromium: shared by the browser tests and
benchmarks/bench_app.py (machine-notes: never `playwright install`; these flags keep chromium off
the closed network)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_app(
    *,
    log: IO[str] | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 90.0,
    script: str = "app.py",
    cwd: Path | None = None,
) -> Iterator[str]:
    """`streamlit run app.py` (or ``script``) on a free loopback port; yields its URL once
    /_stcore/health says ok, and stops the server on exit. RuntimeError when it does not become
    healthy in time."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            script,
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=cwd or ROOT,
        stdout=log if log is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not become healthy (exit {proc.poll()})")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def serve_for_tests(log_path: Path) -> Iterator[str]:
    """Body of the session-scoped ``app_url`` fixture (tests/conftest.py): the served app's
    URL, its log at ``log_path``; a server that never gets healthy fails the test (no skip)."""
    import pytest

    log_path.parent.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        try:
            with served_app(log=log) as url:
                yield url
        except RuntimeError as exc:
            pytest.fail(f"{exc}; see {log.name}")


def launch_chromium() -> Iterator[object]:
    """Body of a module-scoped ``chromium_browser`` fixture: Debian's chromium via Playwright
    (never `playwright install`); missing chromium fails the test (no skip)."""
    import playwright.sync_api as playwright_api
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (or `make chromium`)")
    with playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def settled(page: Any, js: str, tries: int = 20, pause_ms: float = 500) -> Any:
    """``page.evaluate(js)`` once the same measure comes back twice in a row (the layout has
    settled: a container query's CSS applies a moment after the tables paint); the last measure
    after ``tries`` pauses of ``pause_ms`` otherwise."""
    last = None
    for _ in range(tries):
        page.wait_for_timeout(pause_ms)
        got = page.evaluate(js)
        if got == last:
            break
        last = got
    return got


class Tabs:
    """One chromium page per viewport size for a test module, reused from test to test: each
    :meth:`open` loads its URL afresh in that page (a new document, so a new Streamlit session
    with the URL's parameters only; what stays from the test before is the origin's storage and
    the browser's caches). A new context and page per test started a new renderer that parsed
    and compiled Streamlit's scripts again, the larger part of a page load when the app's own
    run is short (side by side on the shared 2-core box, load 14-17: 3 pages x 3 loads, 99 s
    each in a new context, 60 s in one reused page). Not for checks of the history (each load
    adds an entry) nor of a first visit's storage."""

    def __init__(self, browser: Any, timeout_ms: float | None = None) -> None:
        self._browser = browser
        self._timeout_ms = timeout_ms
        self._pages: dict[tuple[int, int], Any] = {}

    def page(self, viewport: dict[str, int]) -> Any:
        """The module's page of this viewport (made on first use; back at that size if a test
        resized it, as a screenshot of the whole page does), as the last test left it."""
        size = (viewport["width"], viewport["height"])
        page = self._pages.get(size)
        if page is None or page.is_closed():
            page = self._browser.new_context(viewport=dict(viewport)).new_page()
            if self._timeout_ms is not None:
                page.set_default_timeout(self._timeout_ms)
            self._pages[size] = page
        elif page.viewport_size != {"width": size[0], "height": size[1]}:
            page.set_viewport_size({"width": size[0], "height": size[1]})
        return page

    def open(self, url: str, viewport: dict[str, int]) -> Any:
        """The module's page of this viewport with ``url`` loaded afresh."""
        page = self.page(viewport)
        page.goto(url)
        return page

    def close(self) -> None:
        for page in self._pages.values():
            page.context.close()
        self._pages.clear()


def reused_tabs(browser: Any, timeout_ms: float | None = None) -> Iterator[Tabs]:
    """Body of a module-scoped ``tabs`` fixture (:class:`Tabs`), closed at the module's end."""
    tabs = Tabs(browser, timeout_ms)
    try:
        yield tabs
    finally:
        tabs.close()


#: the Validate page's log uploader (its key ``val_upload``; Streamlit gives a keyed widget's
#: container the class ``st-key-<key>``): the page has a second uploader (the optional
#: calibration TOML), so "the page's file input" is no longer one element
LOG_INPUT = ".st-key-val_upload input[type=file]"
