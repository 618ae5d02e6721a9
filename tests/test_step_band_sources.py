"""What a step's error band rests on, said where the band is shown.

The collective bands say how many runs and sources they rest on (the CLI's "Sources:" line, the
app's captions); the step band said only "checked on published runs". Now `costmodel step` has a
"step band" row and the step page's caption says the same counts, both from
`costmodel.strategy.band.band_sources` (read from the fitted step band file, counted from the rows
by scripts/step_fidelity.py). A step with no band (no fitted compute efficiency) has no such row.
"""

from __future__ import annotations

import logging
import re

from costmodel.strategy.band import band_sources, measured_sources
from tests._cli import run
from tests.test_app import _text, assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

STEP = ("step", "--arch", "llama-3.1-8b", "--strategy", "fsdp", "--nodes", "4")


def _rows(out: str) -> dict[str, str]:
    return {m[1].strip(): m[2] for m in re.finditer(r"^(\S.*?)\s{2,}(.*)$", out, re.M)}


def test_the_counts_are_the_fitted_file_s_and_read_as_every_band_note_reads_them():
    runs, sources = measured_sources()
    assert runs > sources >= 2  # more than one publisher, many runs each
    assert band_sources() == f"{runs:,} runs from {sources} sources"


def test_the_cli_step_says_what_its_band_rests_on():
    done = run(*STEP, "--cluster", "dgx-h100")
    assert done.exit_code == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows["step time"].split(" (band ")[1].endswith(")"), rows["step time"]
    assert rows["step band"] == f"an 80% band, checked on published runs ({band_sources()})"


def test_a_step_without_a_band_has_no_band_row():
    done = run(*STEP, "--cluster", "dgx-b200")
    assert done.exit_code == 0, done.stderr
    rows = _rows(done.stdout)
    assert "band unknown" in rows["step time"]
    assert "step band" not in rows


def test_the_step_page_s_caption_says_the_same_counts():
    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "llama-3.1-8b", "ddp_cluster": "dgx-h100", "ddp_nodes": "4"}
        | {"ddp_strategy": "fsdp"},
    )
    assert_clean(at)
    said = [_text(c.value) for c in at.caption if "Step band" in _text(c.value)]
    assert len(said) == 1, said
    assert f"an 80% band checked on published runs, {band_sources()}):" in said[0]
