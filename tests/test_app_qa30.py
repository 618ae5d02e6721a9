"""Headless (AppTest) checks from the thirtieth QA pass.

Thousands: every text box of the app takes one number, so digits grouped by commas in threes
are that number (``65,536`` is 65536, costmodel.units.ungroup_thousands): a box given
``65,536`` answers as the same box given ``65536``, typed or in a link, and any other comma is
refused in red naming the box. Where a value may be a list (the CLI's ``--size`` and
``--ranks``) ``65,536`` ran 65 B and 536 B; it is refused now, naming both readings, and a list
that steps as sweeps do stays a list.
"""

from __future__ import annotations

import pytest

from costmodel.units import ungroup_thousands
from tests._cli import one_line_error, run
from tests.test_app import assert_clean, open_page

#: (page, the URL that opens the box, the box's key, its label, the text, the same in digits)
BOXES = [
    ("page_collectives.py", {}, "size_text", "Message size", "65,536", "65536"),
    ("page_cluster.py", {}, "cl_size_text", "Message size", "1,048,576", "1048576"),
    ("page_memory.py", {}, "params", "Parameters P", "65,536", "65536"),
    ("page_memory.py", {}, "context", "CUDA context per GPU", "1,048,576 B", "1048576 B"),
    ("page_memory.py", {"gpu": "custom"}, "gpu_memory", "GPU memory", "80,000,000,000B", "80GB"),
    ("page_memory.py", {"mem_pin": "true"}, "mem_b_ranks", "Data-parallel ranks (B) [GPUs]", "1,024", "1024"),
    ("page_ddp.py", {"ddp_arch": "custom"}, "ddp_params", "Model parameters P", "7,000,000,000", "7B"),
    ("page_ddp.py", {}, "ddp_bucket", "bucket_cap", "65,536,000", "65536000"),
    ("page_ddp.py", {}, "ddp_compute", "Measured compute per micro-batch", "1,250ms", "1250ms"),
    ("page_ddp.py", {}, "ddp_tokens", "Tokens to train", "2,000,000,000,000", "2T"),
    ("page_ddp.py", {}, "ddp_measured_step", "Measured step time", "1,500 ms", "1.5s"),
    ("page_ddp.py", {"ddp_pin": "true"}, "ddp_b_nodes", "Nodes (B)", "1,000", "1000"),
]  # fmt: skip


def _answer(at) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


def _errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]  # without the markdown escapes


@pytest.mark.parametrize(("page", "query", "key", "label", "grouped", "digits"), BOXES,
                         ids=[b[2] for b in BOXES])  # fmt: skip
def test_a_box_reads_comma_thousands_as_one_number(page, query, key, label, grouped, digits):
    """Typed: the same answer as the digits, no red message (the box named none)."""
    at = open_page(page, query)
    at.text_input(key=key).set_value(digits).run()
    assert_clean(at)
    want = _answer(at)
    assert want and not _errors(at), _errors(at)
    at.text_input(key=key).set_value(grouped).run()
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert _answer(at) == want


@pytest.mark.parametrize(("page", "query", "key", "label", "grouped", "digits"),
                         [b for b in BOXES if b[2] in ("size_text", "params", "ddp_tokens")],
                         ids=["size_text", "params", "ddp_tokens"])  # fmt: skip
def test_a_link_with_comma_thousands_opens_the_same_answer(
    page, query, key, label, grouped, digits
):
    assert _answer(open_page(page, {**query, key: grouped})) == _answer(
        open_page(page, {**query, key: digits})
    )


@pytest.mark.parametrize("text", ["1,2", "65, 536", "1,0000", "65,536,"])
@pytest.mark.parametrize(("page", "key", "label"), [
    ("page_collectives.py", "size_text", "Message size"),
    ("page_memory.py", "params", "Parameters P"),
    ("page_ddp.py", "ddp_tokens", "Tokens to train"),
])  # fmt: skip
def test_any_other_comma_is_refused_naming_the_box(page, key, label, text):
    at = open_page(page)
    at.text_input(key=key).set_value(text).run()
    assert_clean(at)
    assert any(e.startswith(f"{label}:") and repr(text) in e for e in _errors(at)), _errors(at)


def test_the_helper_takes_out_thousands_commas_only():
    assert ungroup_thousands("65,536") == "65536"
    assert ungroup_thousands("-8,192.5 ms") == "-8192.5 ms"
    for text in ["1,2", "65, 536", "1,0000", "65,536,", "1,000,00", ",536", "65536", "a,536"]:
        assert ungroup_thousands(text) == text


# --- lists: the CLI's --size and --ranks ----------------------------------------------------
def test_a_list_option_refuses_65_536_naming_both_readings():
    """``--size 65,536`` answered two rows, 65 B and 536 B, without a word."""
    one_line_error(
        run("collective", "all_reduce", "--size", "65,536", "--cluster", "dgx-h100", "--nodes", "8"),
        "--size: ", "got '65,536'", "reads as 65 and 536", "write 65536B", "space after each comma",
    )  # fmt: skip
    one_line_error(
        run("collective", "all_reduce", "--ranks", "65,536", "--bandwidth", "50GB/s", "--size", "1MB"),
        "--ranks: ", "reads as 65 and 536", "write 65536 or",
    )  # fmt: skip


@pytest.mark.parametrize("ranks", ["64,256", "100,250", "65, 536"])
def test_lists_stepping_as_sweeps_do_stay_lists(ranks):
    r = run("collective", "all_reduce", "--ranks", ranks, "--bandwidth", "50GB/s", "--size", "1MB")
    assert r.exit_code == 0, r.stderr
    got = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("textbook")]
    assert got == [int(x) for x in ranks.split(",")], r.stdout


# --- a whole-number box given a number past 2**53 (what the browser sends for `1e300`) ------
@pytest.mark.parametrize(("page", "key", "label"), [
    ("page_batch.py", "warmup", "Warmup steps [-]"),
    ("page_batch.py", "batch_ranks", "Data-parallel ranks N [GPUs]"),
    ("page_ddp.py", "ddp_nodes", "Nodes"),
    ("page_memory.py", "dp_ranks", "Data-parallel ranks N [GPUs]"),
])  # fmt: skip
def test_a_whole_number_box_past_2_53_is_named_shortly_and_back_at_its_default(page, key, label):
    """``1e300`` in Warmup steps stopped the Batch page with a traceback (a table cell past a
    64-bit integer); in Nodes it was refused quoting its 301 digits. It is named as typed now,
    and the box and the answer are back at the default's, as for a fraction."""
    at = open_page(page)
    default, want = at.number_input(key=key).value, _answer(at)
    for typed in (1e300, -1e300, 2.0**60):
        at.number_input(key=key).set_value(typed).run()
        assert_clean(at)
        said = [e for e in _errors(at) if e.startswith(f"{label}: {typed!r} is not a finite")]
        assert said and len(said[0]) < 300, _errors(at)
        assert at.number_input(key=key).value == default
        assert _answer(at) == want


@pytest.mark.parametrize(("page", "key", "grouped", "digits"), [
    ("page_batch.py", "batch_global_batch", "65,536", "65536"),
    ("page_ddp.py", "ddp_seq", "8,192", "8192"),
])  # fmt: skip
def test_a_whole_number_box_reads_comma_thousands_in_its_link(page, key, grouped, digits):
    """``?batch_global_batch=65,536`` was refused in red ("not a whole number"), the box at
    its default; it opens the view of 65536, and the URL is written back as digits."""
    at = open_page(page, {key: grouped})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert at.number_input(key=key).value == int(digits)
    assert at.query_params[key] == digits
    assert _answer(at) == _answer(open_page(page, {key: digits}))


@pytest.mark.parametrize(("page", "query", "key", "label"), [
    ("page_memory.py", {"mem_pin": "true"}, "mem_b_ranks", "Data-parallel ranks (B) [GPUs]"),
    ("page_ddp.py", {"ddp_pin": "true"}, "ddp_b_nodes", "Nodes (B)"),
])  # fmt: skip
def test_a_b_count_box_reads_the_one_count_grammar(page, query, key, label):
    """B's count boxes read ``int(text)``: ``2k`` and ``1e1`` were refused there while A's box,
    the URL and the CLI read them as 2000 and 10. They answer as the digits now; a fraction
    and text are still refused, naming the box and its range."""
    for typed, digits in (("1e1", "10"), ("2k", "2000")):
        at = open_page(page, query)
        at.text_input(key=key).set_value(digits).run()
        want = _answer(at)
        at.text_input(key=key).set_value(typed).run()
        assert_clean(at)
        assert not _errors(at), _errors(at)
        assert _answer(at) == want
    for bad in ("1.5", "1e300", "abc", "-1"):
        at = open_page(page, query)
        at.text_input(key=key).set_value(bad).run()
        assert any(e.startswith(f"{label}: must be a whole number in 1..") and repr(bad) in e
                   for e in _errors(at)), _errors(at)  # fmt: skip


def test_a_refusal_quotes_the_comma_thousands_as_typed():
    """Link bandwidth ``65,536`` (B/s, below its 1 MB/s) was refused quoting ``'65536'``, a
    text the user never typed."""
    at = open_page("page_collectives.py", {"view": "link"})
    at.text_input(key="bandwidth").set_value("65,536").run()
    said = [e for e in _errors(at) if e.startswith("Link bandwidth")]
    assert said and "got '65,536'" in said[0] and "'65536'" not in said[0], _errors(at)
