"""One range for the card a memory answer is checked against: ``memory --gpu-memory``, the
memory sweep's ``gpu_memory`` axis and the app's typed GPU memory all take 1 B..16 TiB
(``costmodel._limits.LIMITS["gpu_memory"]``, the largest size any command takes). ``0B``
was accepted by both and answered "does not fit"; a card of 1 PB was answered too."""

from __future__ import annotations

import json
import re

import pytest

import costmodel as cm
from costmodel._limits import LIMITS, MAX_MESSAGE_BYTES, parse_gpu_memory
from tests._cli import one_line_error, run

RULE = LIMITS["gpu_memory"].rule
BAD = ["0B", "0", "20TiB", "1PB"]


@pytest.mark.parametrize("card", BAD)
def test_memory_refuses_a_card_out_of_range_in_one_line(card):
    line = one_line_error(
        run("memory", "--params", "7B", "--gpu-memory", card), "--gpu-memory: must be", RULE
    )
    assert repr(card) in line


@pytest.mark.parametrize("card", BAD)
def test_the_sweep_refuses_the_same_cards_with_the_same_rule(card):
    with pytest.raises(ValueError, match=r"^gpu_memory: must be " + re.escape(RULE)):
        cm.sweep(kind="memory", params="7B", gpu_memory=card)
    one_line_error(
        run("sweep", "--kind", "memory", "--set", "params=7B", "--set", f"gpu_memory=80GB,{card}"),
        "gpu_memory: must be",
        RULE,
    )


def test_the_app_input_refuses_them_too():
    for card in BAD:
        with pytest.raises(ValueError, match=r"^GPU memory: must be"):
            parse_gpu_memory(card, name="GPU memory")
    assert parse_gpu_memory("80GB") == 80 * 10**9


def test_the_range_ends_are_answered():
    """1 B and 16 TiB are inside (the same bound as a collective's buffer)."""
    for card, fits in (("1B", False), (f"{MAX_MESSAGE_BYTES}B", True)):
        r = run("memory", "--params", "7B", "--gpu-memory", card, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["fits"] is fits
        (row,) = cm.sweep(kind="memory", params="7B", gpu_memory=card).to_dict(orient="records")
        assert bool(row["fits"]) is fits


def test_the_memory_page_shows_the_range_in_red():
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(cm.__file__).parent / "web" / "page_memory.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update({"gpu": "custom", "gpu_memory": "0B"})
    at.run()
    assert not at.exception
    shown = [str(e.value).replace("\\", "") for e in at.error]  # Markdown-escaped
    assert any(f"GPU memory: must be {RULE}" in t for t in shown), shown


@pytest.mark.parametrize(
    "arch, disabled", [("custom (parameter count)", True), ("llama-3.1-8b", False)]
)
def test_the_loss_box_is_off_where_the_loss_sizes_nothing(arch, disabled):
    """A custom shape has no vocabulary, so its activations take no logits and the Loss box
    would change nothing (it was live and silently ignored); a named model's box is live."""
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    page = Path(cm.__file__).parent / "web" / "page_memory.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update({"arch": arch})
    at.run()
    assert not at.exception
    (box,) = [s for s in at.selectbox if s.label == "Loss"]
    assert box.disabled is disabled
