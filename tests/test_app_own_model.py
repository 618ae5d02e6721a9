"""Your own model on the Training step page: an uploaded Hugging Face config.json goes the CLI's
``--arch path/config.json`` road (costmodel.web.own_model: the bytes saved by their hash, read by
hf_config.load_hf_config), so the page and the CLI give the same step; a bad file gets one red
line naming the file or the config key, never a traceback. Headless (AppTest), the CLI
in-process (typer's CliRunner)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from costmodel import cli
from costmodel.units import format_bytes, format_duration
from costmodel.web.own_model import OWN, read_upload
from tests.test_app import _text, assert_clean, metrics, open_page

HOSTILE = "![x](https://attacker.invalid/p.png).json"
QWEN = Path(__file__).parent / "data" / "hf_configs" / "qwen2.5-7b" / "config.json"
#: zero1 on 8 nodes: the step page without the DDP-only searches (bucket advisor, flips)
QUERY = {"ddp_nodes": "8", "ddp_strategy": "zero1", "ddp_arch": OWN}


def test_step_page_upload_gives_the_cli_step_for_the_same_file():
    at = open_page("page_ddp.py", QUERY)
    assert_clean(at)
    assert any("Upload a config.json" in i.value for i in at.info)
    assert not at.metric  # nothing is priced or timed before a model is given
    # the browser names the file: a name that is Markdown must show as text, never render
    at.file_uploader(key="ddp_arch_config").upload(
        HOSTILE, QWEN.read_bytes(), "application/json"
    ).run()
    assert_clean(at)
    got = CliRunner().invoke(
        cli.app, ["scenario", "--arch", str(QWEN), "--nodes", "8", "--zero", "1", "--json"]
    )
    assert got.exit_code == 0, got.output
    want = json.loads(got.stdout)
    m = metrics(at)
    assert m["Step time"] == format_duration(want["step_time_s"])
    assert m["Memory per GPU"] == format_bytes(want["memory_total_bytes"])
    shown = [c.value for c in at.caption if "28 layers" in c.value]
    # shown literally (web.common.plain: punctuation escaped, a zero-width space after "://")
    assert shown and all(
        f"{HOSTILE} (uploaded)" in _text(c).replace("\u200b", "") for c in shown
    ), shown
    assert not any(re.search(r"(?<!\\)!\[|(?<!\\)\]\(", c) for c in shown), shown


def test_step_page_bad_config_is_one_red_line_naming_the_problem():
    at = open_page("page_ddp.py", QUERY)
    upload = at.file_uploader(key="ddp_arch_config")
    upload.upload("mine.json", b'{"model_type": "bert"}', "application/json").run()
    assert_clean(at)
    assert any("is not supported" in _text(e.value) for e in at.error)
    assert not at.metric
    at.file_uploader(key="ddp_arch_config").upload(
        "mine.json", b"not json {", "application/json"
    ).run()
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert any("mine.json is not a JSON config" in e for e in errors), errors
    assert not any("costmodel-configs" in e for e in errors)  # the upload's name, not the copy


def test_read_upload_keeps_the_name_and_refuses_a_huge_file():
    a, path = read_upload(QWEN.read_bytes(), "qwen2.5-7b.json")
    assert a.name == "qwen2.5-7b" and Path(path).read_bytes() == QWEN.read_bytes()
    b, same = read_upload(QWEN.read_bytes(), "qwen2.5-7b.json")
    assert same == path and b.params == a.params
    # a plain config.json is named by its model_type and size, as --arch names the file
    assert read_upload(QWEN.read_bytes(), "config.json")[0].name == "qwen2 (7.6B)"
    try:
        read_upload(b" " * 10_000_001, "big.json")
    except ValueError as exc:
        assert "big.json" in str(exc) and "10,000,000" in str(exc)
    else:
        raise AssertionError("a 10 MB config.json was read")
