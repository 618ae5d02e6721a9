"""Headless (AppTest) checks from the thirty-fourth QA pass (a second pass over the day's
fixes: links to token-count boxes, labels of one quantity across pages, ...).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


@pytest.mark.parametrize(
    ("page", "query", "key", "digits"),
    [
        ("page_batch.py", {"batch_unit": "tokens", "seq_len": "8Ki"}, "seq_len", "8192"),
        (
            "page_batch.py",
            {"batch_unit": "tokens", "batch_global_tokens": "8Mi"},
            "batch_global_tokens",
            str(8 * 2**20),
        ),
        (
            "page_batch.py",
            {"batch_unit": "tokens", "critical_tokens": "2Mi"},
            "critical_tokens",
            str(2 * 2**20),
        ),
        ("page_ddp.py", {"ddp_seq": "8Ki"}, "ddp_seq", "8192"),
        ("page_memory.py", {"act_seq": "8Ki"}, "act_seq", "8192"),
    ],
)
def test_a_link_to_a_token_box_reads_the_clis_token_grammar(page, query, key, digits) -> None:
    """``--seq 8Ki`` and ``--global-tokens 4Mi`` are read by the CLI; the same in a link
    (``?seq_len=8Ki``) was refused "is not a whole number" and the page ran at the default.
    Now the box takes it, and the URL says it in digits."""
    at = open_page(page, query)
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert at.query_params[key] == [digits] or at.query_params[key] == digits
    assert at.number_input(key=key).value == int(digits)


def test_a_token_link_gives_the_batch_the_cli_gives() -> None:
    """``?seq_len=8Ki`` with 4Mi tokens per step on 64 ranks of 4: 512 sequences, A = 2, as
    ``costmodel batch --seq 8Ki --global-tokens 4Mi --ranks 64 --local-batch 4``."""
    at = open_page("page_batch.py", {"batch_unit": "tokens", "seq_len": "8Ki"})
    m = metrics(at)
    assert m["Global batch [samples] = tokens / sequence length"] == "512", m
    assert m["Accumulation steps A [-] = global / (local x N)"] == "2", m


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("8KI", "URL parameter seq_len: 8KI is not a whole token count (e.g. '4096', '8k'"),
        ("1_0", "URL parameter seq_len: 1_0 is not a whole token count"),
        ("0.3Ki", "URL parameter seq_len: 0.3Ki is not a whole number"),
        (
            "-1Ki",
            "Sequence length [tokens per sample]: must be a whole number in "
            "1..100,000,000 tokens, got -1024",
        ),
    ],
)
def test_a_token_link_the_cli_refuses_is_refused(text, said) -> None:
    """What ``--seq`` refuses (``8KI``, ``1_0``, ``0.3Ki``, ``-1Ki``) is refused in the link
    too, naming the forms or the range; no number is shown for it."""
    at = open_page("page_batch.py", {"batch_unit": "tokens", "seq_len": text})
    assert_clean(at)
    assert any(said in e for e in _errors(at)), _errors(at)


def test_a_count_box_still_refuses_a_binary_suffix() -> None:
    """A count that is not in tokens keeps the count grammar: ``?cl_nodes=2Ki`` is refused as
    ``--nodes 2Ki`` is."""
    at = open_page("page_cluster.py", {"cl_nodes": "2Ki"})
    assert any("URL parameter cl_nodes: 2Ki is not a whole number (" in e for e in _errors(at))


def test_the_ranks_boxes_say_gpus_on_every_page() -> None:
    """The Memory page's ranks box was "Data-parallel ranks N" where the Batch page's is
    "Data-parallel ranks N [GPUs]" and the Collectives page's "Ranks N [GPUs]": the same
    quantity now has one label and its unit, B's box too, and a refusal names it so."""
    batch = open_page("page_batch.py")
    memory = open_page("page_memory.py", {"mem_pin": "true"})
    label = batch.number_input(key="batch_ranks").label
    assert label == "Data-parallel ranks N [GPUs]"
    assert memory.number_input(key="dp_ranks").label == label
    assert memory.text_input(key="mem_b_ranks").label == "Data-parallel ranks (B) [GPUs]"
    link = open_page("page_collectives.py", {"view": "link"})
    assert link.number_input(key="ranks").label.endswith("[GPUs]")
    refused = open_page("page_memory.py", {"dp_ranks": "0"})
    assert any(f"{label}: must be a whole number in 1.." in e for e in _errors(refused))
