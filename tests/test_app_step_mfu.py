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


def _cost_caption(at: AppTest) -> str:
    (caption,) = [c for c in _captions(at) if "GPUs;" in c]
    return caption


def test_a_bare_parameter_count_has_one_mfu_definition_on_the_page() -> None:
    """A bare count's step was priced with the FLOPs of the transformer the count stands for
    (6N + attention: the compute source's "MFU 0.41"), while the cost's MFU used 6N and the
    caption claimed "6N + attention" for it: two definitions on one page. Now the cost's MFU
    uses the step's FLOPs (Scenario.flops_per_token, as the API and `costmodel train`) and the
    caption names that definition; with a given MFU the definition is 6N, and says so."""
    from costmodel.architecture import architecture_for_params
    from costmodel.scenario import Scenario
    from costmodel.strategy.step import model_flops_per_token
    from costmodel.units import format_duration

    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.run()  # the page's first view: a bare 7B count on 4 DGX H100 nodes
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    sc = Scenario(params=7e9, cluster="dgx-h100", nodes=4)
    r = sc.evaluate(scaling=False)
    assert metrics["Step time"] == format_duration(r.step_time_s)  # the same setup
    shape_flops = architecture_for_params(7e9).training_flops_per_token(4096)
    assert sc.flops_per_token() == shape_flops != 6 * 7e9  # the step's own FLOPs, not 6N
    c = r.training_cost(1e12, usd_per_gpu_hour=2.0)
    assert metrics["MFU at the predicted step"] == f"{100 * c.mfu:.1f} %"
    words = model_flops_per_token(7e9, None, 4096)[1]
    assert "stands for" in words and f"({words})" in _cost_caption(at)
    # a given MFU is of 6N FLOPs: the caption and the cost's MFU say 6N
    at.checkbox(key="ddp_own_mfu").check().run()
    assert not at.exception, [e.value for e in at.exception]
    given = model_flops_per_token(7e9, None, 4096, mfu=0.4)
    assert given[0] == 6 * 7e9 and f"({given[1]})" in _cost_caption(at)
    assert "attention" not in _cost_caption(at).split("MFU:")[1]
