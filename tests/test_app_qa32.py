"""Headless (AppTest) checks from the thirty-second QA pass (a new user planning a run).

A link's number for a box drawn without Streamlit's bounds (the range kept is the CLI's, named
on a change: the step page's MFU and overlap contention; the typed price) was said to be
"outside the range ... [0.05, 1]; the default is used" while the box took it and the page ran
on it: ``?ddp_mfu=0.01`` (inside the CLI's --mfu range [0.001, 1], and accepted when typed)
ran at MFU 0.01 under that red line; ``?ddp_contention=2`` kept 2 and was refused a second
time by the scenario, in other words; ``?ddp_usd=0`` was "the default is used" above the
price's own refusal, with no cost at all.
"""

from __future__ import annotations

import logging
import re

import pytest

from costmodel._limits import LIMITS
from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

OWN_MFU = {"ddp_own_mfu": "true"}


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


@pytest.mark.parametrize("mfu", ["0.001", "0.01"])
def test_a_link_mfu_inside_the_clis_range_is_taken_without_a_word(mfu: str) -> None:
    assert LIMITS["mfu"].holds(float(mfu))
    at = open_page("page_ddp.py", {**OWN_MFU, "ddp_mfu": mfu})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert at.number_input(key="ddp_mfu").value == float(mfu)


@pytest.mark.parametrize(
    ("query", "key", "default", "limit"),
    [
        ({**OWN_MFU, "ddp_mfu": "2"}, "ddp_mfu", 0.4, "mfu"),
        ({"ddp_contention": "2"}, "ddp_contention", 0.0, "contention"),
        ({"ddp_contention": "-1"}, "ddp_contention", 0.0, "contention"),
    ],
)
def test_a_link_number_outside_the_limit_is_said_once_and_the_default_is_used(
    query: dict, key: str, default: float, limit: str
) -> None:
    """One red line, in the CLI's range words, and the box and the step on the default."""
    at = open_page("page_ddp.py", query)
    assert_clean(at)
    said = _errors(at)
    assert len(said) == 1, said
    assert said[0].startswith(f"URL parameter {key}: "), said
    assert LIMITS[limit].rule in said[0] and "the default is used" in said[0], said
    assert at.number_input(key=key).value == default
    same = open_page("page_ddp.py", {k: v for k, v in query.items() if k != key})
    assert metrics(at)["Step time"] == metrics(same)["Step time"]


def test_a_link_price_out_of_range_is_refused_once_in_the_prices_words() -> None:
    """``?ddp_usd=0``: the price's own refusal (as a typed 0 and ``?ddp_usd=1000000`` get),
    not a second line claiming the default is used beside no cost."""
    at = open_page("page_ddp.py", {"ddp_usd": "0"})
    assert_clean(at)
    said = _errors(at)
    assert len(said) == 1, said
    assert "USD per GPU-hour (h100-sxm): must be a price in (0, 1000]" in said[0], said
    assert "Cost [USD]" not in metrics(at)


def test_a_link_price_inside_the_clis_range_is_the_users() -> None:
    """$0.001 per GPU-hour is inside --usd-per-gpu-hour's (0, 1000]: priced, not refused."""
    at = open_page("page_ddp.py", {"ddp_usd": "0.001"})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert metrics(at)["Cost [USD]"] == "37.20"


# --- your own model: a refused config.json is named by its box ----------------------------
#: (bytes, what the library says after the file's name)
BAD_CONFIGS = [
    (b"{}", "missing field 'model_type'"),
    (b"", "is not a JSON config"),
    (b'{"model_type": "bert"}', "model_type 'bert' is not supported"),
]


@pytest.mark.parametrize(
    ("page", "choice", "key"),
    [
        ("page_memory.py", "arch", "arch_config"),
        ("page_ddp.py", "ddp_arch", "ddp_arch_config"),
    ],
)
@pytest.mark.parametrize(("content", "said"), BAD_CONFIGS)
def test_a_refused_config_is_named_by_the_upload_box_not_the_apis_argument(
    page: str, choice: str, key: str, content: bytes, said: str
) -> None:
    """ "arch: mine.json: missing field 'model_type'" named the API's argument (the CLI says
    --arch); the page's box is the config.json uploader, as the too-large refusal says."""
    from costmodel.web.own_model import LABEL, OWN

    at = open_page(page, {choice: OWN})
    at.file_uploader(key=key).upload("mine.json", content, "application/json").run()
    assert_clean(at)
    errors = _errors(at)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{LABEL}: mine.json") and said in errors[0], errors
    assert "arch" not in errors[0].split(":")[0], errors


# --- Collectives, side by side: no "Faster configuration" inside the expected error --------
@pytest.mark.parametrize(
    ("query", "decided"),
    [
        ({"coll_compare": "true"}, False),  # 1 node against 2: 23% under ±70%
        ({"coll_compare": "true", "pin_cluster": "dgx1-v100"}, True),  # V100s: far slower
    ],
)
def test_side_by_side_names_a_faster_configuration_only_past_the_expected_error(
    query: dict, decided: bool
) -> None:
    """ "Faster configuration: within the expected error: A 23% faster than B, under ±70%."
    named a winner the sentence itself said the error cannot tell; the algorithms' caption
    ("Algorithms:" for "Fastest algorithm:") and the step page already say it so."""
    at = open_page("page_collectives.py", query)
    assert_clean(at)
    leads = ("Faster configuration: ", "A or B: ")
    said = [_text(m.value) for m in at.markdown if _text(m.value).startswith(leads)]
    assert len(said) == 1, said
    assert said[0].startswith("Faster configuration: " if decided else "A or B: "), said
    assert ("within the expected error" in said[0]) is not decided, said


# --- Batch: the split's every column says its unit ------------------------------------------
def test_the_batch_split_names_every_column_with_its_unit() -> None:
    """The split's last columns were the library's keys, "sequence_length" and
    "global_tokens" (shown "sequence length", "global tokens"): two bare numbers beside columns
    that say [samples] and [GPUs]; "solved" said "accumulation", an argument name."""
    from tests.test_app import open_tables

    at = open_tables(open_page("page_batch.py", {"batch_unit": "tokens"}))
    assert_clean(at)
    (split,) = [d.value for d in at.dataframe if "Solved for" in d.value.columns]
    for column in split.columns:
        assert column == "Solved for" or re.search(r"\[[^\]]+\]$", column), list(split.columns)
    row = split.iloc[0]
    assert row["Solved for"] == "accumulation steps A"
    assert row["Sequence length [tokens per sample]"] == "4,096"
    assert row["Global batch [tokens per step]"] == "4,194,304"
