"""Headless app tests from the third fresh-eyes QA pass (streamlit.testing AppTest): each one
failed on the defect it names before its fix."""

from __future__ import annotations

from tests.test_app import assert_clean, open_page


def _subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def test_step_headline_of_a_setup_that_does_not_fit_says_so():
    """The step page's headline sentence ("Step on 32 GPUs (4 x 8): 549 ms, compute-bound")
    gave a step for 7B under DDP on 80 GB cards (126 GB per GPU) with no word that it cannot
    run: the warning sat below the inputs, a screen and a half lower on a phone."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    head = next(h for h in _subheaders(at) if h.startswith("Step on"))
    assert "does not fit" in head and "126 GB per GPU > 85.5 GB" in head, head
    at = open_page("page_ddp.py", {"ddp_strategy": "fsdp"})
    assert_clean(at)
    head = next(h for h in _subheaders(at) if h.startswith("Step on"))
    assert "fit" not in head, head
