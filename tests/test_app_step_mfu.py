"""The step page says when the MFU it shows is not used: a measured compute time overrides it
(``Scenario.compute_time_s``: "overrides mfu"), as the API and the step's compute source do."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from costmodel.strategy.compute import MEASURED_LABEL  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
UNUSED = f"MFU not used: the {MEASURED_LABEL} is given."


def _captions(at: AppTest) -> list[str]:
    return [str(c.value) for c in at.caption]


def test_a_measured_compute_time_says_the_mfu_is_not_used() -> None:
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.query_params.update({"ddp_own_mfu": "true"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert UNUSED not in _captions(at)  # the MFU set and no compute time: the MFU is used
    at.text_input(key="ddp_compute").set_value("350ms").run()
    assert not at.exception, [e.value for e in at.exception]
    assert UNUSED in _captions(at)
    at.checkbox(key="ddp_own_mfu").uncheck().run()  # no MFU set: nothing to say
    assert UNUSED not in _captions(at)


def test_an_unknown_band_says_why_in_the_step_words() -> None:
    """A GPU with no fitted efficiency: the caption gives ``band_note``'s reason, not a NaN."""
    from costmodel.strategy.band import UNKNOWN_COMPUTE

    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.query_params.update({"ddp_cluster": "dgx-b200"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(_captions(at))
    assert f"Step {UNKNOWN_COMPUTE}." in shown and "nan" not in shown.lower().split()
