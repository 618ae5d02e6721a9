"""Headless app tests: the Collectives, Cluster, Batch and Validate pages show a library note
or message the way the step and Memory pages do (web.common.notes / sentence / page_words):
once per run, starting with a capital letter, and naming the page's boxes, never a CLI flag.

The real notes with a CLI flag were found by running each page with AppTest over its presets
and options: only the Validate page's log reader and calibration say one ("set the op (CLI
--op, the page's Op input)", "give it (nodes=..., CLI --nodes N)"); the Collectives, Cluster
and Batch pages show no library text with a flag today, so their tests hold the notes they
show (a buffer no GPU holds) to once and capitalised, and every page to no flag over a sweep
of its inputs."""

from __future__ import annotations

import re

import pytest

from costmodel.cli._common import cli_words
from costmodel.predict import buffer_memory_note
from costmodel.validation.logread import read_log
from tests.test_app import REFERENCE, REFERENCE_LOGS, _text, assert_clean, open_page

#: A CLI flag as the library's notes write one: ``--op``, ``--check-from``.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _shown(at) -> list[str]:
    """Every caption, markdown, warning, info, error and text of the page, unescaped (the
    page's CSS, a markdown element, left out)."""
    return [
        _text(str(x.value))
        for group in (at.caption, at.markdown, at.warning, at.info, at.error, at.text)
        for x in group
        if not str(x.value).lstrip().startswith("<style>")
    ]


def _flags(at) -> list[str]:
    return [t for t in _shown(at) if FLAG.search(t)]


# --- Validate: the log reader's notes name the Op box, once, as sentences ----------------------
DISAGREE = "13d_waynehacking8_1x4xH100-slice_algo-proto-pinned_allreduce.txt"


def test_validate_op_notice_names_the_op_box_once_as_a_sentence():
    """An op set against the log's file name and columns: the notice said "op: broadcast from
    your setting wins, ...; check the log or set the op (CLI --op, the page's Op input)"."""
    query = {"val_source": "reference", "val_reference": DISAGREE, "val_op": "broadcast"}
    raw = (REFERENCE_LOGS / DISAGREE).read_bytes()
    cli = read_log(raw, DISAGREE, op="broadcast", strict=False).notices
    assert any(n.endswith("set the op (`op`)") for n in cli), cli  # the API's field
    # the CLI says it as its option (cli._common.cli_words)
    assert any(cli_words(n, {"op": "--op"}.get).endswith("set the op (--op)") for n in cli), cli
    at = open_page("page_validate.py", query)
    assert_clean(at)
    op = [_text(w.value) for w in at.warning if "from your setting wins" in _text(w.value)]
    assert len(op) == 1, op
    assert op[0].startswith("Op: broadcast from your setting wins"), op
    assert op[0].endswith("check the log or set the op in the Op box"), op
    assert not _flags(at), _flags(at)


def test_validate_log_without_an_op_names_the_op_box_not_the_flag():
    """A log naming no op (no header, no command line, no op in its name) was refused with
    "set the op (CLI --op all_reduce; the page's Op input)"."""
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    raw = b"\n".join(line for line in text.splitlines() if b"perf" not in line)
    with pytest.raises(ValueError, match=r"set the op \(`op`, e\.g\. all_reduce\)$") as e:
        read_log(raw, "run.txt")  # the API's field, which the CLI says as its option
    assert cli_words(str(e.value), {"op": "--op"}.get).endswith("(--op, e.g. all_reduce)")
    at = open_page("page_validate.py")
    at.file_uploader(key="val_upload").set_value(("run.txt", raw, "text/plain")).run()
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1, errors
    assert "does not say which collective it measured" in errors[0]
    assert errors[0].endswith("set the op in the Op box"), errors
    assert not _flags(at), _flags(at)


def test_validate_busbw_only_table_points_to_the_page_s_reference_runs_not_the_flag():
    """A busbw-only table was refused naming "Bundled runs with times (--reference ID, or the
    page's reference runs)"."""
    from costmodel.validation.logread import busbw_only_refusal

    name = "21a_azure-NDH100v5-1x8xH100_allreduce_busbw-only.txt"
    said = busbw_only_refusal(name)  # the API call that opens one; the CLI says its option
    assert "(`cm.reference.reference_path(ID)`)" in said, said
    assert "(`costmodel validate compare --reference ID`)" in cli_words(said, lambda f: None)
    at = open_page("page_validate.py")
    raw = (REFERENCE_LOGS / name).read_bytes()
    at.file_uploader(key="val_upload").set_value((name, raw, "text/plain")).run()
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1 and "is a busbw-only table" in errors[0], errors
    assert "Bundled runs with times (Measurements: A reference run): " in errors[0], errors
    assert not _flags(at), _flags(at)


def test_validate_several_runs_caption_is_a_sentence_shown_once():
    """ "comparing 3 runs of one file ..." began lower-case."""
    name = "13e_waynehacking8_1x2-4-6xH100_GPUcount-scaling_allreduce.txt"
    at = open_page("page_validate.py", {"val_source": "reference", "val_reference": name})
    assert_clean(at)
    runs = [t for t in _shown(at) if "runs of one file" in t]
    assert len(runs) == 1 and runs[0].startswith("Comparing 3 runs of one file"), runs


def test_a_calibration_refusal_names_the_boxes_not_the_flags():
    """calibrate's "give it (nodes=..., CLI --nodes N)" / "(ranks=..., CLI --ranks N)" in the
    page's words (the one the page rewrote itself, the node count, is kept as it was)."""
    from costmodel.web.page_validate import _calibration_refusal

    said = _calibration_refusal(
        ValueError(
            "ranks: the measured rows do not say how many ranks ran; give it (`ranks`): it "
            "is never guessed"
        )
    )
    assert not FLAG.search(said) and "`ranks`" not in said, said
    assert "set the Nodes and GPUs per node boxes" in said


# --- Collectives and Cluster: a buffer no GPU holds, said once, as a sentence ------------------
@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("page_collectives.py", {"size_text": "200GB"}),
        ("page_cluster.py", {"cl_size_text": "200GB"}),
    ],
)
def test_a_buffer_note_is_shown_once_as_a_sentence(page, query):
    note = buffer_memory_note(200e9, "dgx-h100")
    at = open_page(page, query)
    assert_clean(at)
    said = [_text(w.value) for w in at.warning if note in _text(w.value)]
    assert said == [f"Note: {note}."], said
    assert not _flags(at), _flags(at)


def test_collectives_a_and_b_on_one_cluster_each_say_their_note_once():
    query = {"size_text": "200GB", "coll_compare": "true", "pin_nodes": "2"}
    at = open_page("page_collectives.py", query)
    assert_clean(at)
    note = buffer_memory_note(200e9, "dgx-h100")
    said = [_text(w.value) for w in at.warning if note in _text(w.value)]
    assert sorted(said) == [f"Note (B): {note}.", f"Note: {note}."], said


def test_cluster_expected_error_help_is_a_sentence():
    """The metric's help was the library's note as it is, lower-case."""
    at = open_page("page_cluster.py")
    assert_clean(at)
    help_text = next(m.proto.help for m in at.metric if m.label == "Expected error")
    assert help_text[:1].isupper(), help_text


# --- every page: no CLI flag over a sweep of its inputs ----------------------------------------
@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("page_collectives.py", {"nccl_cluster": "dgx1-v100", "nccl_nodes": "4"}),
        ("page_collectives.py", {"view": "link", "ranks": "0"}),
        ("page_collectives.py", {"nccl_nodes": "0"}),
        ("page_cluster.py", {"cl_cluster": "gb200-nvl72", "cl_nodes": "100000"}),
        ("page_cluster.py", {"cl_gpus": "100"}),
        ("page_batch.py", {"batch_ranks": "7"}),
        ("page_batch.py", {"batch_unit": "tokens", "batch_global_tokens": "4194305"}),
        ("page_batch.py", {"seq_len": "0"}),
        ("page_validate.py", {"val_source": "reference", "val_nodes": "3"}),
        ("page_validate.py", {"val_source": "reference", "val_cluster": "dgx1-v100"}),
    ],
)
def test_no_page_tells_the_user_to_pass_a_cli_flag(page, query):
    at = open_page(page, query)
    assert_clean(at)
    assert not _flags(at), _flags(at)
    lower = [
        _text(x.value)
        for group in (at.caption, at.warning, at.info)
        for x in group
        if _text(x.value)[:1].islower()
    ]
    assert not lower, lower
