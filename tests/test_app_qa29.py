"""The twenty-ninth QA pass (AppTest): what the pages send for the fixes chromium showed at
390 px. The Collectives page's side by side (a row per size, 11 columns) and its two "whole
sweep" grids scrolled sideways inside their boxes on a phone: each now sends its rows as a text
table too, drawn as cards on a phone in the grid's place (common.phone_cards_css), the grid kept
for a desktop. The step page's bucket_cap chart wrote "current 25 MiB" at the plot's top, where
B's curve runs high at small caps: the line is named in the legend now."""

from __future__ import annotations

import re

import pytest

from costmodel._limits import LIMITS
from costmodel.web.common import BUFFER_DOES_NOT_FIT, PHONE_MAX_PX
from tests.test_app import _text, assert_clean, open_page, open_tables
from tests.test_app_collectives import CLUSTER_VIEW, frame_with
from tests.test_app_qa28 import _figure, _labels_in_plot, _legend

SIDE_BY_SIDE = {
    **CLUSTER_VIEW,
    "coll_compare": "true",
    "pin_cluster": "dgx-b200",
    "pin_nodes": "8",
    "coll_all_models": "true",
}


def _phone_tables(at) -> dict[str, str]:
    """The Markdown bodies that carry a grid's phone cards: container key -> body."""
    out = {}
    for md in at.markdown:
        found = re.search(r"\.st-key-(phone_\w+)\{@media \(min-width:(\d+)px\)", md.value)
        if found:
            assert int(found[2]) == PHONE_MAX_PX + 1
            out[found[1]] = md.value
    return out


def _rows(body: str) -> list[list[str]]:
    """The text table's rows (header and separator left out), cells as the reader sees them."""
    lines = [ln for ln in body.splitlines() if ln.startswith("|")][2:]
    return [[_text(c).strip() for c in ln.strip("|").split(" | ")] for ln in lines]


def test_the_side_by_side_and_the_whole_sweep_read_as_cards_on_a_phone():
    """32 sizes side by side and every model's sweep (4 x 32 rows) go out as text tables with
    the phone's cards, beside the sortable grid of the same rows (a desktop's)."""
    at = open_page("page_collectives.py", SIDE_BY_SIDE)
    assert_clean(at)
    diff = frame_with(at, "time B / A")
    at = open_tables(at)  # the whole sweep waits in an expander
    assert_clean(at)
    phone = _phone_tables(at)
    assert set(phone) == {"phone_side_by_side", "phone_models_sweep"}
    side = _rows(phone["phone_side_by_side"])
    assert len(side) == len(diff) == 32
    assert side[0][0] == "8\u00a0B" and side[-1][0] == "17.2\u00a0GB"  # the size, with its unit
    sweep = frame_with(at, "busbw_bytes_per_s")
    assert len(_rows(phone["phone_models_sweep"])) == len(sweep) == 128
    # the cards' rules ride in the same body, scoped to the table after them
    assert '[data-cards="side_by_side"]~table' in phone["phone_side_by_side"]


def test_the_one_link_whole_sweep_reads_as_cards_on_a_phone():
    at = open_tables(open_page("page_collectives.py", {"view": "link"}))
    assert_clean(at)
    phone = _phone_tables(at)
    assert set(phone) == {"phone_sweep"}
    assert len(_rows(phone["phone_sweep"])) == len(frame_with(at, "busbw_bytes_per_s"))


def test_the_current_bucket_cap_is_named_in_the_legend_not_on_the_plot():
    """A and B (B on 8 nodes): "current 25 MiB" stood at the plot's top beside the line, over
    B's curve where it runs high at small caps. Nothing is written in the plot now; the dotted
    line has its legend entry, as "one node" has on the Cluster page."""
    at = open_page("page_ddp.py", {"ddp_strategy": "ddp", "ddp_pin": "true", "ddp_b_nodes": "8"})
    assert_clean(at)
    fig = _figure(at, "chart_bucket_advice")
    assert not [t for t in _labels_in_plot(fig) if "current" in t], _labels_in_plot(fig)
    assert _legend(fig)[-1] == "current 25 MiB"
    (line,) = fig["layout"]["shapes"]
    assert line["x0"] == 25 and line["line"]["dash"] == "dot"


def test_a_long_source_is_shown_whole_in_the_learning_rate_table():
    """The square-root rule's source (256 characters) was cut at 200 in the text table, its
    card ending "eps / s…" on a phone and the row at 1440 px the same, while the grid under it
    showed it whole."""
    from costmodel import batch

    at = open_page("page_batch.py")
    assert_clean(at)
    (body,) = [md.value for md in at.markdown if "Malladi" in md.value and "|" in md.value]
    sources = {row[-1].replace("\u00a0", " ") for row in _rows(body)}  # no-break spaces
    assert {batch.LR_RULE_INFO[r][1] for r in batch.LR_RULES} <= sources, sources


# --- the step page's bucket, measured compute and measured step boxes ---------------------------
@pytest.mark.parametrize(
    ("key", "box", "rule"),
    [
        ("ddp_bucket", "bucket_cap", LIMITS["bucket"].rule),
        ("ddp_compute", "Measured compute per micro-batch", LIMITS["compute_time"].rule),
        ("ddp_measured_step", "Measured step time [s]", LIMITS["step_time"].rule),
    ],
)
def test_a_refused_bucket_or_duration_says_the_cli_s_range_for_any_bad_value(key, box, rule):
    """bucket_cap "-1" said "must be >= 0 bytes" and "0" then "**Scenario**: bucket_cap: Input
    should be greater than or equal to 1 (got 0); allowed: [1, 10,000,000,000,000]" (pydantic's
    words, no unit); the measured compute and step time said ">= 0" for "-1", then refused 0 in
    other words. Each refusal now is the box's name and the range `costmodel step`/`train`
    say (--bucket, --compute-time, --step-time), whatever was typed."""
    for bad in ("-1", "0", "abc", "1e400"):
        at = open_page("page_ddp.py", {key: bad})
        assert_clean(at)
        errors = [_text(e.value) for e in at.error]
        assert errors == [errors[0]] and errors[0].startswith(f"{box}: must be {rule}, got "), (
            bad,
            errors,
        )


def test_the_validate_page_s_every_row_reads_as_cards_on_a_phone():
    """A bundled run's 60 rows (14 columns: run, op, size, ... note) were a grid that scrolled
    sideways at 390 px; they go out as a text table with the phone's cards too."""
    at = open_tables(open_page("page_validate.py", {"val_source": "A reference run"}))
    assert_clean(at)
    phone = _phone_tables(at)
    assert "phone_comparison" in phone, sorted(phone)
    rows = _rows(phone["phone_comparison"])
    assert len(rows) == len(frame_with(at, "predicted_busbw_bytes_per_s")) == 60


def test_the_verdict_flips_table_says_yes_not_python_s_true():
    """ "Each change tried" showed its flips column as True/False (Python's words) beside the
    strategy and scaling tables' yes/NO."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    (body,) = [md.value for md in at.markdown if "| relative change |" in _text(md.value)]
    header = _text(body).splitlines()[0].strip("| ").split(" | ")
    flips = {row[header.index("flips")] for row in _rows(body)}
    assert flips and flips <= {"yes", "no"}, flips


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("page_collectives.py", {"size_text": "10TB"}),
        ("page_cluster.py", {"cl_size_text": "10TB"}),
    ],
)
def test_a_buffer_larger_than_the_gpu_says_so_in_the_headline(page, query):
    """10 TB per rank on an 85.5 GB H100: the headline gave "...: 35.7 s" as any time, the note
    that no GPU holds that buffer a phone's screenful of inputs below it. The headline says it
    does not fit, as the step page's does; a buffer that fits adds nothing."""
    at = open_page(page, query)
    assert_clean(at)
    head = at.subheader[0].value
    assert head.endswith(BUFFER_DOES_NOT_FIT), head
    assert any("cannot hold that buffer" in w.value for w in at.warning)
    fits = open_page(page)
    assert "does not fit" not in fits.subheader[0].value


def test_the_fidelity_report_s_tables_read_as_cards_on_a_phone():
    """The Validate page's fidelity report (six Markdown tables, 6 to 70 rows) scrolled each
    table sideways at 390 px (691-894 px in 324). Each table now goes out with its cards' CSS,
    every column named; the text between them is unchanged, save a wrapped line that began
    ">= 2 sources", which Markdown drew as a quote."""
    from costmodel.web.common import fidelity_text

    at = open_page("page_validate.py")
    at.session_state["fidelity_open"] = True
    at.run()
    assert_clean(at)
    carded = [md.value for md in at.markdown if "data-cards=fidelity_" in md.value]
    tables = [b for b in fidelity_text().split("\n\n") if b.lstrip().startswith("|")]
    assert len(carded) == len(tables) == 6
    for body, table in zip(carded, tables, strict=True):
        assert body.endswith(table.strip("\n"))
        header = [c.strip().replace("`", "") for c in table.splitlines()[0].strip("|").split("|")]
        assert body.count("::before{content:") == len(header), header  # every column named
    quoted = [md.value for md in at.markdown if re.search(r"(?m)^\s*>", md.value)]
    assert not quoted, quoted
