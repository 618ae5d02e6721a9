"""Suite-wide fixtures: work the whole session shares, never a change to what a test checks."""

from __future__ import annotations

import fcntl
import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# --- parallel runs (pytest-xdist; `make test` runs `-n 2 --dist loadfile`) -----------------------
# Scheduling only: which worker runs which file, and in what order. No test is added, dropped or
# changed, and a run without xdist (plain `pytest`) is untouched. Each test file is one unit of
# work (its module-scoped fixtures, such as a fit, are built once, as in a serial run); a worker
# that runs real-browser modules starts one Streamlit server (`app_url`) and one chromium
# (`_shared_chromium`).
# The units with the longest wall time on a 2-core machine are handed out first, the browser
# modules first of all (their time grows most with the load), so that no long unit starts last
# while the other worker has nothing left; the others keep xdist's order. (Order from per-file
# wall times on the shared 2-core box at load 15-22, 2026-12-02, and serially at load 8-19 on
# 2026-12-04 after the browser files shared one page per viewport; a wrong order costs only balance.)
LONGEST_FIRST = (
    "tests/test_browser.py",
    "tests/test_browser_readable.py",
    "tests/test_browser_qa20.py",
    "tests/test_browser_qa21.py",
    "tests/test_browser_qa24.py",
    "tests/test_browser_qa18.py",
    "tests/test_six_questions.py",
    "tests/test_app.py",
    "tests/test_browser_collectives.py",
    "examples/worked_examples.ipynb",
    "tests/test_cli.py",
)

try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # pragma: no cover - xdist is in the test extra; serial runs need no hook
    LoadFileScheduling = None

if LoadFileScheduling is not None:

    class _LongestFirst(LoadFileScheduling):
        """``--dist loadfile`` with the LONGEST_FIRST files handed out before the rest."""

        def _assign_work_unit(self, node: Any) -> None:
            for scope in LONGEST_FIRST:
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
                    break
            super()._assign_work_unit(node)

    @pytest.hookimpl(optionalhook=True)  # `-p no:xdist` leaves the hook unregistered
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
        if config.getvalue("dist") != "loadfile":
            return None  # another --dist: xdist's own scheduler
        return _LongestFirst(config, log)


@pytest.fixture(autouse=True, scope="session")
def _scan_streamlit_components_once() -> Iterator[None]:
    """Streamlit's AppTest scans every installed distribution's metadata for custom-component
    manifests at each new AppTest (about 0.3 s of CPU per page opened; the suite opens a few
    hundred). The installed packages do not change during a run, so the scan runs once and its
    list is reused. Only when a test module imported streamlit; a streamlit without the scanner
    keeps its own behaviour."""
    if "streamlit" not in sys.modules:
        yield
        return
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # pragma: no cover - another streamlit version
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            manifest_scanner,
            "scan_component_manifests",
            functools.cache(manifest_scanner.scan_component_manifests),
        )
        yield


@pytest.fixture(autouse=True, scope="session")
def _build_the_cli_once() -> Iterator[None]:
    """typer's ``CliRunner.invoke`` rebuilds the click command from every command's signature
    at each call (about 34 ms here; the suite invokes the CLI a few thousand times). For
    ``costmodel.cli.app`` it gets the command the ``costmodel`` script itself uses, built once
    per process (:func:`costmodel.cli.command`); any other typer app is built as before."""
    import typer.testing

    build = getattr(typer.testing, "_get_command", None)
    if build is None:  # another typer: its CliRunner builds the command its own way
        yield
        return

    def get_command(app: Any) -> Any:
        cli = sys.modules.get("costmodel.cli")
        if cli is not None and app is getattr(cli, "app", None):
            return cli.command()
        return build(app)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", get_command)
        yield


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """`streamlit run app.py` on a free port, healthy before the first browser test, stopped at
    the end of the session: one server per pytest process for all its real-browser modules (each
    page is a new browser context, so a new Streamlit session); its log is
    test-artifacts/streamlit-server.log
    (streamlit-server-gw0.log and so on under xdist).
    No COSTMODEL_REFERENCE_LOGS: the bundled runs are found without it."""
    from tests._browser import ROOT, serve_for_tests

    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one log per xdist worker that serves
    name = f"streamlit-server-{worker}.log" if worker else "streamlit-server.log"
    yield from serve_for_tests(ROOT / "test-artifacts" / name)


@pytest.fixture(scope="session")
def _shared_chromium() -> Iterator[object]:
    """One Debian chromium per pytest process (per xdist worker), launched when a module first
    asks for ``chromium_browser`` (tests/_browser.SharedChromium) and closed at the session's
    end; imported lazily so that a run without browser tests never loads Playwright."""
    from tests._browser import SharedChromium

    shared = SharedChromium()
    try:
        yield shared
    finally:
        shared.close()


@pytest.fixture(scope="module")
def chromium_browser(_shared_chromium: Any) -> Iterator[object]:
    """The process's chromium, lent to one test module at a time: the contexts the module left
    open are closed at its end (tests/_browser.SharedChromium.lent)."""
    with _shared_chromium.lent() as browser:
        yield browser


@pytest.fixture(scope="module")
def tabs(chromium_browser: object) -> Iterator[object]:
    """One page per viewport for a module's checks, each test loading its URL afresh in it
    (tests/_browser.Tabs, default timeout); a module that needs a longer one defines its own."""
    from tests._browser import reused_tabs

    yield from reused_tabs(chromium_browser)


@pytest.fixture(scope="session")
def gloo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(results file, its calibration) of one real gloo run of the harness
    (tests/test_validate_qa10.gloo_results, then ``calibrate``), read by every test that
    reads such a run (tests/test_validate_qa10.py, tests/test_app_qa23.py): one run per pytest
    session, not one per module. Under xdist the workers share it through the session's common
    temporary folder: the first to ask runs it under a lock, the other waits and reads its
    files (a failed run leaves no mark, so the next to ask runs it again). The tests only read
    the two files."""
    from tests.test_validate_qa10 import calibration_of, gloo_results

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / "gloo-run"
    with open(root / "gloo-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "done"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            results = gloo_results(folder)
            calibration_of(results, folder)
            done.touch()
    return folder / "torch.jsonl", folder / "cal.toml"
