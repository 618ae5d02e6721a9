"""Headless app tests from the sixteenth QA pass: configuration B's price on another GPU than
A's (one default rule for the step page's Price (B) box and `costmodel scenario --vs` without
--price-b), uploaded files kept across a page switch, and chart titles on a phone shrunk only
where they do not fit. Each test failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

from costmodel import training
from costmodel.units import format_usd
from tests._cli import run
from tests.test_app import _text, assert_clean, metrics, open_page

# --- B's price on another GPU: a preset for B's GPU, by the CLI's rule ----------------------------
H100_VS_B200 = {"ddp_pin": "true", "ddp_b_cluster": "dgx-b200"}
CLI_AB = (
    "scenario",
    "--params",
    "7B",
    "--nodes",
    "4",
    "--tokens",
    "1T",
    "--vs",
    "cluster=dgx-b200",
)


def _cli_costs(*price_args: str) -> dict:
    r = run(*CLI_AB, *price_args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["training_cost"]


def _caption(at, start: str) -> list[str]:
    return [_text(c.value) for c in at.caption if _text(c.value).startswith(start)]


@pytest.mark.parametrize(
    ("a_price", "b_price"),
    [("aws-p5-on-demand", "aws-p6-b200-on-demand"), ("coreweave-h100-spot", "coreweave-b200-spot")],
)
def test_b_on_another_gpu_starts_on_the_preset_the_cli_prices_it_at(a_price, b_price):
    """B on a B200 beside an H100 A started on "custom": B had no price of its own until one
    was typed (its dollars at the $2 placeholder), and `scenario --vs cluster=dgx-b200`
    without --price-b printed "n/a (no price)" for B while B200 presets were published. Both
    now start B on one rule's preset for B's GPU (A's provider and terms), named with its
    date, and the two give the same dollars."""
    query = {"ddp_params": "7B", "ddp_nodes": "4", "ddp_tokens": "1T", "ddp_price": a_price}
    at = open_page("page_ddp.py", {**query, **H100_VS_B200})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    assert box.value == b_price and "custom" in box.options  # custom is still offered
    chosen, why = training.default_price("b200", like=a_price)
    assert chosen.name == b_price and chosen.gpu == "b200"
    said = _caption(at, "Default for b200")
    assert said == [f"Default for b200: {b_price} ({chosen.date} prices), " + why.replace(
        ", as ", ", as A's ")], said  # fmt: skip
    cli = _cli_costs("--price", a_price)
    assert cli["B"]["price_date"] == chosen.date and cli["B_price_default"]["price"] == b_price
    m = metrics(at)
    assert m["Cost (A) [USD]"] == format_usd(cli["A"]["cost_usd"])
    assert m["Cost (B) [USD]"] == format_usd(cli["B"]["cost_usd"])


def test_the_cli_says_which_preset_b_was_priced_at_and_of_when():
    text = run(*CLI_AB, "--price", "aws-p5-on-demand")
    assert text.exit_code == 0, text.stderr
    out = text.stdout
    assert "n/a (no price)" not in out
    assert "price B: aws-p6-b200-on-demand" in out
    note = next(line for line in out.splitlines() if line.startswith("note: B runs on b200"))
    assert "priced at aws-p6-b200-on-demand (2026-10-10 prices)" in note and "--price-b" in note
    # A at a typed rate: no provider to follow; the lowest on-demand B200 price, as the app's
    # box starts on beside an A at custom
    cli = _cli_costs("--usd-per-gpu-hour", "3")
    chosen, _ = training.default_price("b200")
    assert cli["B_price_default"]["price"] == chosen.name
    at = open_page("page_ddp.py", {"ddp_params": "7B", "ddp_nodes": "4", **H100_VS_B200})
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == chosen.name
    # A unpriced in the CLI: no dollars asked, none for B either (nothing chosen)
    bare = _cli_costs()
    assert bare["B"]["cost_usd"] is None and "B_price_default" not in bare


def test_b_s_box_starts_on_custom_only_where_no_preset_is_published_for_its_gpu():
    """A V100 has no price preset: B's box offers custom alone, and nothing is chosen."""
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_cluster": "dgx1-v100"})
    assert_clean(at)
    box = at.selectbox(key="ddp_price_b")
    gpu = box.label.removeprefix("Price (B, ").removesuffix(")")
    assert training.prices_for_gpu(gpu) == [] and training.default_price(gpu) is None
    assert box.value == "custom" and list(box.options) == ["custom"]
    assert _caption(at, "Default for") == []


def test_a_price_never_comes_from_another_gpu():
    for gpu in {training.load_price(n).gpu for n in training.price_names()}:
        for like in (None, *training.price_names()):
            chosen = training.default_price(gpu, like=like)
            assert chosen is not None and chosen[0].gpu == gpu, (gpu, like)


def test_b_s_default_follows_a_s_provider_until_b_is_picked():
    """B left at its default follows A's price (a link to the view, which leaves B at its
    default out, opens it so); a price picked for B stays."""
    at = open_page("page_ddp.py", H100_VS_B200)
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == training.default_price("b200")[0].name
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == "aws-p6-b200-on-demand"
    at.selectbox(key="ddp_price_b").set_value("gcp-a4-spot").run()
    at.selectbox(key="ddp_price").set_value("lambda-h100-on-demand").run()
    assert_clean(at)
    assert at.selectbox(key="ddp_price_b").value == "gcp-a4-spot"


# --- an upload outlives a page switch ---------------------------------------------------------
def _round_trip(at, page_file: str):
    from tests.test_app_page_state import _elsewhere, _switch

    _switch(at, _elsewhere(page_file))
    assert_clean(at)
    _switch(at, page_file)
    assert_clean(at)
    return at


def _kept_note(at) -> list[str]:
    return [_text(i.value) for i in at.info if _text(i.value).startswith("Using ")]


def test_a_validate_log_outlives_a_page_switch_and_can_be_cleared():
    """Validate (a log uploaded) -> Memory -> Validate showed an empty uploader and no
    comparison: the log had to be uploaded again, while every other input came back."""
    from tests.test_app import REFERENCE, REFERENCE_LOGS
    from tests.test_app_page_state import _open

    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at = _open("page_validate.py")
    at.file_uploader(key="val_upload").set_value((REFERENCE, text, "text/plain")).run()
    assert_clean(at)
    before = metrics(at)
    assert before["Peak measured busbw"] == "366 GB/s"
    assert _kept_note(at) == []  # the uploader shows the file itself: no note
    _round_trip(at, "page_validate.py")
    assert metrics(at) == before
    note = _kept_note(at)
    assert len(note) == 1 and REFERENCE in note[0] and "kept" in note[0], note
    at.run()  # a later rerun (another input) still uses it
    assert metrics(at) == before
    clear = at.button(key="val_upload_clear")
    assert REFERENCE in _text(clear.label)
    clear.click().run()
    assert_clean(at)
    assert "Peak measured busbw" not in metrics(at) and _kept_note(at) == []
    _round_trip(at, "page_validate.py")  # cleared is cleared: nothing comes back
    assert "Peak measured busbw" not in metrics(at) and _kept_note(at) == []


def test_a_log_removed_from_the_uploader_is_not_brought_back():
    from tests.test_app import REFERENCE, REFERENCE_LOGS
    from tests.test_app_page_state import _open

    at = _open("page_validate.py")
    box = at.file_uploader(key="val_upload")
    box.set_value((REFERENCE, (REFERENCE_LOGS / REFERENCE).read_bytes(), "text/plain")).run()
    assert "Peak measured busbw" in metrics(at)
    at.file_uploader(key="val_upload").set_value(None).run()  # the uploader's x
    assert_clean(at)
    assert "Peak measured busbw" not in metrics(at) and _kept_note(at) == []
    _round_trip(at, "page_validate.py")
    assert "Peak measured busbw" not in metrics(at) and _kept_note(at) == []


def test_a_log_over_the_upload_limit_is_not_kept():
    from costmodel.web.common import KEPT_UPLOAD, MAX_UPLOAD_BYTES
    from tests.test_app_page_state import _open

    at = _open("page_validate.py")
    big = b"#" * (MAX_UPLOAD_BYTES + 1)
    at.file_uploader(key="val_upload").set_value(("big.txt", big, "text/plain")).run()
    assert_clean(at)
    assert any("the limit is" in _text(e.value) for e in at.error)
    assert KEPT_UPLOAD + "val_upload" not in at.session_state
    _round_trip(at, "page_validate.py")
    assert _kept_note(at) == [] and not at.error


@pytest.mark.parametrize(
    ("page_file", "model_key", "upload_key"),
    [("page_memory.py", "arch", "arch_config"), ("page_ddp.py", "ddp_arch", "ddp_arch_config")],
)
def test_an_uploaded_config_json_outlives_a_page_switch(page_file, model_key, upload_key):
    """Memory (your own config.json) -> Batch -> Memory showed "Upload a config.json" again
    beside the model box still set to your own; the step page the same."""
    from pathlib import Path

    from costmodel.web.own_model import OWN
    from tests.test_app_page_state import _open

    qwen = Path(__file__).parent / "data" / "hf_configs" / "qwen2.5-7b" / "config.json"
    at = _open(page_file)
    at.selectbox(key=model_key).set_value(OWN).run()
    at.file_uploader(key=upload_key).upload("qwen.json", qwen.read_bytes(), "application/json")
    at.run()
    assert_clean(at)
    before = metrics(at)
    assert before
    _round_trip(at, page_file)
    assert at.selectbox(key=model_key).value == OWN
    assert not any("Upload a config.json" in i.value for i in at.info)
    note = _kept_note(at)
    assert len(note) == 1 and "qwen.json" in note[0], note
    assert metrics(at) == before


# --- chart titles: each carries its own width, so a phone shrinks only those that do not fit ----
def test_each_chart_title_carries_the_width_of_its_longest_line():
    """The phone's CSS shrank every title as if it were 28 em (56 characters); each title now
    says its own width, so "One step (ddp): compute and collectives" (19.5 em, 320 px at 16 px)
    keeps its font on a 354 px chart (tests/test_browser_qa16.py measures it in chromium)."""
    import re

    from costmodel import plots
    from costmodel.web import common

    at = open_page("page_ddp.py")
    assert_clean(at)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles
    for text in titles:
        m = re.fullmatch(rf'<span style="{common.TITLE_EM_VAR}:([\d.]+)">(.*)</span>', text)
        assert m, text
        longest = max(len(line) for line in m[2].split("<br>"))
        assert float(m[1]) == longest * plots.TITLE_CHAR_EM <= common.TITLE_FIT_EM
    short = next(t for t in titles if "One step (ddp)" in t)
    assert f"{common.TITLE_EM_VAR}:19.5" in short
    assert 19.5 * 16 + 8 < plots.PHONE_CHART_PX  # fits a phone's chart at 16 px: not shrunk
