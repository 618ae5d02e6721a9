"""Suite-wide fixtures: work the whole session shares, never a change to what a test checks."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator

import pytest


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
    browser context, so a new Streamlit session); its log is test-artifacts/streamlit-server.log.
    No COSTMODEL_REFERENCE_LOGS: the bundled runs are found without it."""
    from tests._browser import ROOT, serve_for_tests

    yield from serve_for_tests(ROOT / "test-artifacts" / "streamlit-server.log")
