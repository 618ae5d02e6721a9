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
    """Debian's chromium via Playwright (never `playwright install`), closed when the generator
    resumes (:class:`SharedChromium` lends one to each test module); missing chromium fails the
    test (no skip)."""
    import playwright.sync_api as playwright_api
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (or `make chromium`)")
    with playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class SharedChromium:
    """One Debian chromium for every real-browser module of a pytest process (the session-scoped
    ``_shared_chromium`` of tests/conftest.py), lent to one module at a time by :meth:`lent`: a
    launch with Playwright's driver and the first page's start cost 1.5-3 s here (2026-12-04),
    paid once per xdist worker instead of once per module (about 30 modules). Each module still
    makes its own contexts (each its own storage, cookies and caches) and they are closed when
    it ends, as closing the module's own chromium closed them.

    Playwright's sync API marks its event loop as the thread's running loop between its calls
    (``wait_for_future`` in playwright/_impl/_greenlets.py), so that ``asyncio.run`` or another
    loop's ``run_until_complete`` in the same thread fails while a sync Playwright is open (a
    notebook's kernel client, for one). A module's own chromium held that mark for its module
    only; here it is lifted when a module gives the browser back and set again when the next one
    takes it (Playwright's loop runs its callbacks with the mark, as after each of its calls)."""

    def __init__(self) -> None:
        self._launch: Iterator[Any] | None = None
        self._browser: Any = None
        self._loop: Any = None
        self._held = False

    @contextlib.contextmanager
    def lent(self) -> Iterator[Any]:
        """The browser for one module: launched on first use (and again if it went away), the
        contexts left open closed at the end and the loop's mark lifted (see the class)."""
        import asyncio

        if self._held:  # a second holder's end would close the first one's pages
            raise RuntimeError("the process's chromium is lent already (one module at a time)")
        if self._browser is not None:
            asyncio._set_running_loop(self._loop)
            if not self._browser.is_connected():  # it crashed: a new one, as a new module got
                with contextlib.suppress(Exception):
                    self.close()
                self._launch = self._browser = None
        if self._browser is None:
            self._launch = launch_chromium()
            self._browser = next(self._launch)
            self._loop = asyncio.get_running_loop()  # marked by the launch's last call
        self._held = True
        try:
            yield self._browser
        finally:
            self._held = False
            try:
                if self._browser.is_connected():  # gone: its contexts went with it
                    for context in list(self._browser.contexts):
                        context.close()
            finally:
                asyncio._set_running_loop(None)

    def close(self) -> None:
        """Close the browser and stop Playwright's driver (the end of ``launch_chromium``)."""
        import asyncio

        launch, self._launch, self._browser = self._launch, None, None
        if launch is None:
            return
        asyncio._set_running_loop(self._loop)
        try:
            next(launch, None)  # closes the browser, then leaves sync_playwright
        finally:
            asyncio._set_running_loop(None)


def settled(
    page: Any, js: str, stable: int = 2, poll_ms: float = 100, within_ms: float = 10_000
) -> Any:
    """``page.evaluate(js)`` once the app is idle (:func:`wait_for_idle`: the run over, every
    element drawn) and the same measure comes back ``stable`` times more, ``poll_ms`` apart
    (the layout has settled: a container query's CSS applies a moment after the tables paint);
    the last measure after ``within_ms`` of measuring otherwise (the test's assertions judge
    it). Before: two measures in a row the same, 500 ms apart (at least 1 s a call)."""
    wait_for_idle(page)
    deadline = time.monotonic() + within_ms / 1000
    got = page.evaluate(js)
    same = 0
    while same < stable and time.monotonic() < deadline:
        page.wait_for_timeout(poll_ms)
        last, got = got, page.evaluate(js)
        same = same + 1 if got == last else 0
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
        #: the URL each page was last loaded at by :meth:`show`, and that document's
        #: ``performance.timeOrigin`` (a later load by any road is a new document, a new origin)
        self._shown: dict[tuple[int, int], tuple[str, float]] = {}

    def page(self, viewport: dict[str, int]) -> Any:
        """The module's page of this viewport (made on first use; back at that size if a test
        resized it, as a screenshot of the whole page does), as the last test left it."""
        size = (viewport["width"], viewport["height"])
        page = self._pages.get(size)
        if page is None or page.is_closed():
            context = self._browser.new_context(viewport=dict(viewport))
            count_runs(context)  # for wait_for_idle and settled
            page = context.new_page()
            if self._timeout_ms is not None:
                page.set_default_timeout(self._timeout_ms)
            self._pages[size] = page
        elif page.viewport_size != {"width": size[0], "height": size[1]}:
            page.set_viewport_size({"width": size[0], "height": size[1]})
            self._shown.pop(size, None)  # resized: :meth:`show` loads afresh
        return page

    def open(self, url: str, viewport: dict[str, int]) -> Any:
        """The module's page of this viewport with ``url`` loaded afresh."""
        page = self.page(viewport)
        self._shown.pop((viewport["width"], viewport["height"]), None)
        page.goto(url)
        return page

    def show(self, url: str, viewport: dict[str, int]) -> Any:
        """The module's page of this viewport at ``url``: as the test before left it, scrolled
        back to the top, where that test's :meth:`show` loaded the same URL at this size;
        loaded afresh otherwise (a load since, by any road, is a new document: its
        ``performance.timeOrigin`` tells). Only for tests that read the page and change nothing
        in it (no click, no typing, no resize): a test after one that does calls :meth:`open`."""
        size = (viewport["width"], viewport["height"])
        page = self.page(viewport)
        shown = self._shown.get(size)
        if shown and shown == (url, page.evaluate("performance.timeOrigin")):
            page.evaluate(
                "() => { window.scrollTo(0, 0); for (const e of document.querySelectorAll('*'))"
                " if (e.scrollTop || e.scrollLeft) { e.scrollTop = 0; e.scrollLeft = 0; } }"
            )
            return page
        self._shown.pop(size, None)
        page.goto(url)
        self._shown[size] = (url, page.evaluate("performance.timeOrigin"))
        return page

    def close(self) -> None:
        for page in self._pages.values():
            page.context.close()
        self._pages.clear()
        self._shown.clear()


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


# --- waiting for the app's state instead of a fixed pause ---------------------------------------
# A script run's end, as the server says it: every message of the session's websocket is read as
# it arrives (before Streamlit handles it), and a ForwardMsg whose top-level field 6
# (script_finished) is set counts as an ended run, unless its status is 2
# (FINISHED_EARLY_FOR_RERUN: a new run follows at once). The state Streamlit shows on its app
# element (``data-test-script-state``) cannot count runs: a short run's "running" and
# "notRunning" can land in one React render, and the attribute never changes (seen on about one
# page switch in three here). Each message, each history push or replace and each change of
# that attribute also notes the time, so a wait can ask for a quiet spell after the end. Installed
# on a page or context before its document loads (:func:`count_runs`; :class:`Tabs` does it).
_RUNS_INIT_JS = r"""
(() => {
  const runs = {ended: 0, changed: performance.now()};
  window.__costmodelRuns = runs;
  const touch = () => { runs.changed = performance.now(); };
  const finished = (b) => {  // top-level field 6 of a protobuf message, and its status
    let i = 0;
    const varint = () => {
      let v = 0, m = 1, x;
      do { x = b[i++]; v += (x & 127) * m; m *= 128; } while (x & 128 && i < b.length);
      return v;
    };
    while (i < b.length) {
      const tag = varint(), wire = tag & 7;
      if (wire === 0) { const v = varint(); if (tag >>> 3 === 6) return v !== 2; }
      else if (wire === 2) { const n = varint(); i += n; }  // read i after the length
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return false;
    }
    return false;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        touch();
        if (e.data instanceof ArrayBuffer && finished(new Uint8Array(e.data))) runs.ended += 1;
      });
    }
  };
  for (const k of ["pushState", "replaceState"]) {
    const f = history[k];
    history[k] = function (...a) { touch(); return f.apply(this, a); };
  }
  const watch = () => new MutationObserver(touch).observe(document.body, {
    subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
  if (document.body) watch(); else document.addEventListener("DOMContentLoaded", watch);
})();
"""


def count_runs(target: Any) -> None:
    """Count the script runs of every document ``target`` (a Playwright page or context) loads
    from now on, for :func:`wait_for_idle` and :func:`wait_for_run_end`: call it before the
    page's ``goto``."""
    target.add_init_script(_RUNS_INIT_JS)


# The app not running, no message, history change or change of its state for ``quiet`` ms, no
# element still waiting for its JavaScript chunk (Streamlit's placeholder, ``stSkeleton``), and
# (where ``after`` is a count) a run counted as ended past ``after``: a rerun that the frontend
# asks for once a run's elements are drawn (a widget writing a value back) starts within that
# window, and is waited for too.
_IDLE_JS = """
([after, quiet]) => {
  const runs = window.__costmodelRuns;
  const state = document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState;
  return !!runs && (after === null || runs.ended > after) && state === "notRunning"
    && performance.now() - runs.changed >= quiet
    && !document.querySelector('[data-testid="stSkeleton"]');
}
"""

#: the quiet time [ms] after a run's end before a test reads what the run left (see above)
RUN_QUIET_MS = 250
#: the quiet time [ms] where a test checks that no later run wrote over what it reads (a URL
#: that a rerun could rewrite): twice the above, for a rerun asked for on a loaded machine
REWRITE_QUIET_MS = 500
#: how long [ms] a wait below waits before it fails the test (Playwright's TimeoutError): a page
#: paints in 4-15 s here, slower beside other sessions
WAIT_TIMEOUT_MS = 90_000


def wait_for_idle(
    page: Any, quiet_ms: float = RUN_QUIET_MS, timeout_ms: float = WAIT_TIMEOUT_MS
) -> int:
    """Wait until no script run is under way, no element waits for its chunk, and nothing
    arrived, moved the history or changed the run's state for ``quiet_ms``; returns how many
    runs of the page's document have ended, for :func:`wait_for_run_end` after the next action.
    Fails the test when the app is not idle within ``timeout_ms``."""
    _counted(page)
    page.wait_for_function(_IDLE_JS, arg=[None, quiet_ms], polling=50, timeout=timeout_ms)
    return int(page.evaluate("window.__costmodelRuns.ended"))


def _counted(page: Any) -> None:
    if not page.evaluate("!!window.__costmodelRuns"):
        raise RuntimeError("the page's runs are not counted: count_runs(page) before its goto")


def wait_for_run_end(
    page: Any, after: int, quiet_ms: float = RUN_QUIET_MS, timeout_ms: float = WAIT_TIMEOUT_MS
) -> None:
    """Wait until a run ends past ``after`` (the count :func:`wait_for_idle` returned before
    the action that starts it) and the app stays idle ``quiet_ms``; fails the test when none
    does within ``timeout_ms``."""
    _counted(page)
    page.wait_for_function(_IDLE_JS, arg=[after, quiet_ms], polling=50, timeout=timeout_ms)


# Every chart Streamlit placed is drawn by plotly and idle (no redraw for its automargin or a
# font load pending, no promise of a draw open), the fonts are loaded, the app is not running,
# and the charts' and their titles' and legends' boxes with plotly's margins are what they were
# at the poll before (``stable`` polls in a row): plotly's second layout pass has landed.
_PLOTS_SETTLED_JS = """
(stable) => {
  const st = window.__costmodelPlots || (window.__costmodelPlots = {last: null, same: 0});
  const state = document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState;
  const placed = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const idle = state === "notRunning" && document.fonts.status === "loaded"
    && plots.length >= Math.max(placed, 1)
    && plots.every(p => p._fullLayout && !p._fullLayout._redrawFromAutoMarginCount
                        && !(p._promises && p._promises.length) && !p._fontLoadToken);
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.width, r.height].map(v => Math.round(v * 10)); };
  const now = idle ? JSON.stringify(plots.map(p => [
    box(p), box(p.querySelector('.gtitle')), box(p.querySelector('g.legend')),
    box(p.querySelector('.nsewdrag')), p._fullLayout._size])) : null;
  st.same = now !== null && now === st.last ? st.same + 1 : 0;
  st.last = now;
  return st.same >= stable;
}
"""


def wait_for_plots(
    page: Any, stable: int = 2, polling_ms: float = 100, timeout_ms: float = WAIT_TIMEOUT_MS
) -> None:
    """Wait until every chart on the page is drawn and its layout settled (plotly's second
    layout pass, automargin, lands after the first draw): the state of ``_PLOTS_SETTLED_JS``
    for ``stable`` polls in a row, ``polling_ms`` apart; fails the test when it does not settle
    within ``timeout_ms``."""
    page.evaluate("() => { window.__costmodelPlots = null; }")
    page.wait_for_function(_PLOTS_SETTLED_JS, arg=stable, polling=polling_ms, timeout=timeout_ms)
