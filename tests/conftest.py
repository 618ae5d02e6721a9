"""Suite-wide fixtures: work the whole session shares, never a change to what a test checks."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# --- parallel runs (pytest-xdist; `make test` runs `-n 2 --dist loadfile`) -----------------------
# Scheduling only: which worker runs which file, and in what order. No test is added, dropped or
# changed, and a run without xdist (plain `pytest`) is untouched.
TESTS = Path(__file__).resolve().parent
# The real-browser modules (marked `browser` for the whole module) are one unit of work, so one
# worker runs them all against one Streamlit server (`app_url`, session-scoped per worker).
BROWSER_MODULES = frozenset(
    f"tests/{p.name}"
    for p in sorted(TESTS.glob("test_*.py"))
    if "pytestmark = pytest.mark.browser" in p.read_text(encoding="utf-8")
)
# Units whose wall time is longest on the 2-core CI machine, handed out first so that no long
# unit starts last and leaves the other worker idle (the rest keep xdist's order).
LONGEST_FIRST = (
    "browser",
    "tests/test_torch_bench.py",
    "tests/test_app.py",
    "examples/worked_examples.ipynb",
)

try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # pragma: no cover - xdist is in the test extra; serial runs need no hook
    LoadFileScheduling = None

if LoadFileScheduling is not None:

    class _SuiteScheduling(LoadFileScheduling):
        """``--dist loadfile`` (each file one unit: its module-scoped fixtures, a fit or a
        launched chromium, built once as in a serial run), with the browser modules as one
        unit and the longest units handed out first."""

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "browser" if scope in BROWSER_MODULES else scope

        def _assign_work_unit(self, node: Any) -> None:
            for scope in LONGEST_FIRST:
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
                    break
            super()._assign_work_unit(node)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
        if config.getvalue("dist") != "loadfile":
            return None  # another --dist: xdist's own scheduler
        return _SuiteScheduling(config, log)


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


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """`streamlit run app.py` on a free port, healthy before the first browser test, stopped at
    the end of the session: one server for every real-browser module (each page is a new
    browser context, so a new Streamlit session); its log is test-artifacts/streamlit-server.log
    (streamlit-server-gw0.log and so on under xdist).
    No COSTMODEL_REFERENCE_LOGS: the bundled runs are found without it."""
    from tests._browser import ROOT, serve_for_tests

    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one log per xdist worker that serves
    name = f"streamlit-server-{worker}.log" if worker else "streamlit-server.log"
    yield from serve_for_tests(ROOT / "test-artifacts" / name)
