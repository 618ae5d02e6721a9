"""The fifteenth browser QA pass (chromium at 1440 and 390 px over the Step page's GPUs-per-node
box and B's own price, the Memory page's CUDA context box, the Collectives cluster view's ranks
and the Validate page's notes). The defects it found need no browser to pin: each test here
runs the page headless (AppTest) or the library, and failed on the defect it names before its
fix."""

from __future__ import annotations

from costmodel.strategy.advisor import nothing_fits_note
from tests.test_app import _text, assert_clean, open_page


def test_even_one_parameter_names_the_cuda_context_it_sits_beside():
    """On the Memory page a typed 80 GB CUDA context on an H100 said "Even one parameter does
    not fit: 108 GB per GPU are taken before any weight (activations 28.4 GB at 4096 tokens x
    micro-batch 1)": the 80 GB the user had just typed went unnamed, and 108 GB read as a
    mistake against 28.4 GB. The note (the CLI's `memory --cuda-context` too) names the rest."""
    at = open_page("page_memory.py", {"arch": "llama-3.1-8b", "context": "80GB"})
    assert_clean(at)
    [note] = [_text(w.value) for w in at.warning if "Even one parameter" in w.value]
    assert "activations 28.4 GB" in note, note
    assert "and 80 GB of CUDA context, fragmentation and buffers" in note, note
    # activations alone (no context): nothing else is named
    only = nothing_fits_note(80e9, 95e9, 95e9, "4096 tokens x micro-batch 1")
    assert "CUDA context" not in only


_H100_VS_B200 = {
    "ddp_arch": "llama-3.1-8b",
    "ddp_strategy": "fsdp",
    "ddp_pin": "true",
    "ddp_b_cluster": "dgx-b200",
}


def _two_gpu_warning(at) -> str:
    [w] = [_text(w.value) for w in at.warning if "compare dollars" in w.value]
    return w


def test_one_side_at_the_placeholder_is_not_said_to_rent_at_the_other_s_price():
    """A priced at aws-p5-on-demand ($6.88 per GPU-hour) beside B on a B200 left at the $2
    placeholder warned "the two costs compare h100-sxm and b200 as if they rented for that
    price": A does not rent for $2. One side at the placeholder is said as such, and the box
    to fill is that side's GPU's."""
    # B's box set to custom: on another GPU it starts on a preset for B's GPU
    at = open_page(
        "page_ddp.py",
        {**_H100_VS_B200, "ddp_price": "aws-p5-on-demand", "ddp_price_b": "custom"},
    )
    assert_clean(at)
    w = _two_gpu_warning(at)
    assert w.startswith("B (b200) is costed at the $2.00 per GPU-hour placeholder"), w
    assert "as if they rented" not in w
    assert "Pick a published price for b200" in w, w
    # both at the placeholder: one price for both, said as before
    both = _two_gpu_warning(open_page("page_ddp.py", {**_H100_VS_B200, "ddp_price_b": "custom"}))
    assert "as if they rented for the same price" in both, both
