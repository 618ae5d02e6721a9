"""The twenty-fourth QA pass: a new user's questions on the Training step page's time and
cost. A price typed past the library's range was refused under the API's field name
(``Time and cost to train: usd_per_gpu_hour: must be a price in (0, 1000] ...``), not the box
the user typed in; B's own price was named as A's, and its refusal hid A's cost with it.

The range and the refusal's wording are the library's (``costmodel._limits``); these tests
check only that the page says them under the box's label, for a link and for a typed value.
"""

from __future__ import annotations

import logging

import pytest

from costmodel._limits import LIMITS
from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

#: 70B under FSDP with full recompute on 64 H100s: it fits, so the cost is not a warning's
FITS = {
    "ddp_arch": "llama-3.1-70b",
    "ddp_nodes": "8",
    "ddp_strategy": "fsdp",
    "ddp_recompute": "full",
}
TOO_DEAR = "1000000"  # USD per GPU-hour: past the library's price range


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


def test_the_price_range_is_the_librarys() -> None:
    """The price these tests type is outside the range the library keeps (else they test
    nothing)."""
    with pytest.raises(ValueError):
        LIMITS["usd_per_gpu_hour"].check("usd_per_gpu_hour", float(TOO_DEAR))


@pytest.mark.parametrize("how", ["link", "typed"])
def test_a_price_out_of_range_names_the_usd_box(how: str) -> None:
    at = open_page("page_ddp.py", {**FITS, **({"ddp_usd": TOO_DEAR} if how == "link" else {})})
    if how == "typed":
        at.number_input(key="ddp_usd").set_value(float(TOO_DEAR)).run()
    assert_clean(at)
    said = _errors(at)
    assert len(said) == 1, said
    assert "USD per GPU-hour (h100-sxm): must be a price in" in said[0], said
    assert "usd_per_gpu_hour" not in said[0], said
    assert "Cost [USD]" not in metrics(at)  # no cost for a price refused


def test_b_price_out_of_range_names_bs_box_and_keeps_as_cost() -> None:
    """B on B200 at a typed price past the range: the refusal names B's box (its GPU), and A's
    time and cost (at its published price) stay on the page."""
    at = open_page(
        "page_ddp.py",
        {
            **FITS,
            "ddp_price": "aws-p5-on-demand",
            "ddp_pin": "true",
            "ddp_b_cluster": "dgx-b200",
            "ddp_price_b": "custom",
            "ddp_b_usd": TOO_DEAR,
        },
    )
    assert_clean(at)
    said = _errors(at)
    assert len(said) == 1, said
    assert "USD per GPU-hour (b200): must be a price in" in said[0], said
    assert "usd_per_gpu_hour" not in said[0], said
    shown = metrics(at)
    assert "Cost (A) [USD]" in shown, shown
    assert "Cost (B) [USD]" not in shown, shown
