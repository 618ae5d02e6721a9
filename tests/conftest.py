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
