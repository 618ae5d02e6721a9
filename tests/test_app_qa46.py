"""App QA 46: an uploaded config.json's refusal names the box once; its caption says a
sliding window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.web.own_model import describe, read_upload

DATA = Path(__file__).parent / "data" / "hf_configs"


def test_a_plain_config_json_is_named_once():
    with pytest.raises(ValueError) as exc:
        read_upload(json.dumps({"model_type": "gemma"}).encode(), "config.json")
    msg = str(exc.value)
    assert "config.json: config.json" not in msg, msg
    assert msg.startswith("config.json: model_type 'gemma' is not supported"), msg


def test_a_named_upload_keeps_its_file_name():
    with pytest.raises(ValueError) as exc:
        read_upload(json.dumps({"model_type": "gemma"}).encode(), "gemma-2b.json")
    assert str(exc.value).startswith("config.json: gemma-2b.json: model_type 'gemma'")


class _Col:
    def __init__(self) -> None:
        self.said: list[str] = []

    def caption(self, text: str) -> None:
        self.said.append(text)


def test_the_caption_says_the_sliding_window():
    a, _ = read_upload((DATA / "mistral-7b" / "config.json").read_bytes(), "config.json")
    col = _Col()
    describe(a, col, source="config.json (uploaded)")
    assert "sliding window 4,096" in col.said[0]
