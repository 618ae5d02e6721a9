"""Wording of messages and verdicts, said once at the library and read the same by the API,
the CLI and the app: no brackets inside brackets in an A-vs-B verdict or a compute label, a
parameter count refused with its range in the app as on the CLI, a count option named once
with its range (no inner generic ``count:``), the nccl-tests refusals listing what is allowed
as every other message does ("allowed: a, b"), not as a Python list."""

from __future__ import annotations

import pytest

from costmodel.scenario import Scenario, compare_summary
from costmodel.verdict import decide_scenarios
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, open_page


def _nested(text: str) -> bool:
    """Whether ``text`` opens a bracket inside another one (``(a (b))``)."""
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
            if depth > 1:
                return True
        elif ch == ")":
            depth = max(depth - 1, 0)
    return False


def test_the_nesting_check_can_fail():
    assert _nested("the expected error here is unknown (B's compute is the default MFU (none))")
    assert not _nested("unknown: B's compute is the default MFU 0.40 (none); B fits (A 1 vs B 2)")


# (A's fields, B's changes): the default MFU (a B200: no fitted efficiency), a given MFU under
# recomputation (its "PaLM's MFU" label), two fitted GPUs, the default MFU under recomputation,
# the same scenario twice (a tie)
SETUPS = [
    ({"params": 7e9}, "cluster=dgx-b200"),
    ({"arch": "llama-2-7b", "nodes": 2}, "cluster=dgx-b200"),
    ({"params": 7e9, "mfu": 0.4, "recompute": "full"}, "cluster=dgx-b200"),
    ({"arch": "llama-3.1-70b", "nodes": 8, "zero_stage": 3}, "cluster=dgx-a100"),
    ({"arch": "llama-2-7b", "recompute": "full"}, "cluster=dgx-b200"),
    ({"arch": "llama-2-7b", "nodes": 2}, "nodes=2"),
]


@pytest.mark.parametrize(("fields", "changes"), SETUPS)
def test_a_vs_b_verdict_and_compute_labels_have_no_brackets_in_brackets(fields, changes):
    a = Scenario(**fields)
    ra = a.evaluate(scaling=False, flips=False)
    rb = a.with_changes(changes).evaluate(scaling=False, flips=False)
    for label in (ra.compute_label, rb.compute_label):
        assert label and not _nested(label), label
    text = decide_scenarios(ra, rb).text()
    summary = compare_summary(ra, rb)
    assert not _nested(text), text
    assert not _nested(summary), summary


def test_the_default_mfu_reason_follows_the_verdict_unbracketed():
    """H100 vs B200: the reason the error is unknown is the B200's compute label, which has a
    bracket of its own; the verdict says it after a colon, so the answer reads once."""
    a = Scenario(params=7e9)
    ra = a.evaluate(scaling=False, flips=False)
    rb = a.with_changes("cluster=dgx-b200").evaluate(scaling=False, flips=False)
    assert rb.compute_source == "default-mfu" and "(" in rb.compute_label
    text = decide_scenarios(ra, rb).text()
    assert text.endswith(
        f"the expected error here is unknown: B's compute is the {rb.compute_label}"
    )
    assert compare_summary(ra, rb).startswith(text + "; ")


def test_the_cli_answers_the_library_s_verdict():
    """`scenario --vs cluster=dgx-b200 --params 7B` prints the one sentence the step page
    shows (page_ddp's A/B line is compare_summary too), without brackets in brackets."""
    r = run("scenario", "--vs", "cluster=dgx-b200", "--params", "7B")
    assert r.exit_code == 0, r.stderr
    a = Scenario(params=7e9)
    ra = a.evaluate(scaling=False, flips=False)
    rb = a.with_changes("cluster=dgx-b200").evaluate(scaling=False, flips=False)
    lines = {
        ln.split(": ", 1)[0]: ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ": " in ln
    }
    assert lines["answer"] == compare_summary(ra, rb)
    assert lines["faster step"] == decide_scenarios(ra, rb).text()
    assert not _nested(lines["answer"]) and not _nested(lines["faster step"])


# --- a parameter count: the app's message says the range, as the CLI's ----------------------
PARAMS_RULE = "must be a parameter count in 1..1e15, e.g. 7B, got '7b'"


def test_the_cli_refuses_7b_with_the_range():
    one_line_error(run("memory", "--params", "7b"), f"--params: {PARAMS_RULE}")


@pytest.mark.parametrize(
    ("page", "query", "box"),
    [
        ("page_memory.py", {"params": "7b"}, "Parameters P"),
        ("page_ddp.py", {"ddp_params": "7b"}, "Model parameters P"),
        (
            "page_ddp.py",
            {"ddp_pin": "true", "ddp_b_arch": "custom (parameter count)", "ddp_b_params": "7b"},
            "Parameters (B)",
        ),
    ],
)
def test_the_app_refuses_7b_with_the_range_in_the_box_s_words(page, query, box):
    at = open_page(page, query)
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    assert any(s.startswith(f"{box}: {PARAMS_RULE}") for s in said), said
    assert not any("count:" in s or "cannot parse" in s for s in said), said


# --- a count option: named once, with its range ----------------------------------------------
@pytest.mark.parametrize(
    ("args", "head"),
    [
        (
            ("scenario", "--params", "7B", "--nodes", "2x"),
            "--nodes: must be a whole number in 1..1,000,000, got '2x'",
        ),
        (("memory", "--params", "7b"), f"--params: {PARAMS_RULE}"),
    ],
)
def test_a_count_option_that_does_not_parse_is_named_once(args, head):
    line = one_line_error(run(*args), head)
    option = head.split(":", 1)[0]
    assert line.count(option) == 1, line
    assert "count:" not in line and "cannot parse" not in line, line
    assert not _nested(line), line
    assert "expected " in line  # the forms a count takes are still said


# --- nccl-tests refusals: "allowed: a, b", not a Python list -----------------------------------
def _no_list(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "use one of" not in text and "[" not in text, text
    assert "; allowed: " in text, text
    return text


def test_an_unknown_nccl_tests_op_lists_the_allowed_ops():
    from costmodel.validation.nccl_tests import parse_nccl_tests
    from costmodel.validation.nccl_tests.busbw import parse_busbw_table

    with pytest.raises(ValueError) as exc:
        parse_nccl_tests("#  size count type\n", op="allreduce")
    assert "all_gather, all_reduce" in _no_list(exc)
    with pytest.raises(ValueError) as exc:
        parse_busbw_table("#  size busbw\n", op="allreduce")
    assert "all_gather, all_reduce" in _no_list(exc)


def test_the_runner_lists_the_allowed_binaries_and_launchers(tmp_path):
    from costmodel.validation import runner

    with pytest.raises(ValueError) as exc:
        runner.find_binary("bogus")
    assert "all_gather, all_reduce" in _no_list(exc)
    with pytest.raises(ValueError) as exc:
        runner.plan_sweep(["bogus"], check_binaries=False)
    assert _no_list(exc).startswith("ops: 'bogus' has no nccl-tests binary; allowed: all_gather, ")
    with pytest.raises(ValueError) as exc:
        runner.plan_sweep(["all_reduce"], launcher="ssh", check_binaries=False)
    assert _no_list(exc).startswith("launcher: 'ssh' is not known; allowed: local, ")
    one_line_error(
        run(
            "validate",
            "nccl-tests",
            "run",
            "-o",
            str(tmp_path / "runs"),
            "--ops",
            "bogus",
            "--dry-run",
        ),  # fmt: skip
        "--ops: 'bogus' has no nccl-tests binary; allowed: all_gather, all_reduce",
    )


def test_the_validate_page_docstring_names_the_current_hint():
    from costmodel.validation import calibrate
    from costmodel.web import common, page_validate

    doc = page_validate._calibration_refusal.__doc__ or ""
    assert "nodes=..." not in doc
    hint = "give it (`nodes`)"
    assert hint in doc and hint in common.PAGE_WORDS
    assert hint in open(calibrate.__file__).read()  # the message it stands for
