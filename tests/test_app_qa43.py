"""QA pass 43 on the app: an uploaded plain Hugging Face ``config.json`` is named by what it
says, as ``--arch`` names the same file.

Every config downloaded from the Hub is called ``config.json``; the app named each one
``uploaded-config``, so Mistral-7B's and Qwen2-72B's answers were labelled alike on every
chart, note and CSV (and the CLI named the same file by its folder: ``tmp``). Now one rule
(:func:`costmodel.hf_config.config_name`): its ``_name_or_path``, else a file name that names a
model (``qwen2.5-7b.json``), else its ``model_type`` with its size, ``mistral (7.2B)``.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from costmodel.web.own_model import OWN, read_upload
from tests._cli import run
from tests.test_app import assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
MISTRAL = CONFIGS / "mistral-7b" / "config.json"
QWEN72 = CONFIGS / "qwen2.5-72b" / "config.json"


def _memory_page(content: bytes, filename: str = "config.json"):
    at = open_page("page_memory.py", {"zero_stage": "1", "dp_ranks": "16"})
    at.selectbox(key="arch").set_value(OWN).run()
    at.file_uploader(key="arch_config").upload(filename, content, "application/json")
    at.run()
    assert_clean(at)
    return at


def _chart_name(at) -> str:
    """The model's name in the memory chart's title ("Memory per GPU, NAME: 7.24 B params")."""
    chart = next(c for c in at.get("plotly_chart") if "chart_memory" in c.proto.id)
    title = json.loads(chart.proto.spec)["layout"]["title"]["text"]
    found = re.search(r"Memory per GPU, (.+?): [0-9.]+ [KMBT]? ?params", title)
    assert found, title
    return found.group(1)


def _everything(at) -> str:
    """Every element's text on the page (captions, notes, charts' specs), to look for a name."""
    out = []

    def walk(node):
        children = getattr(node, "children", None) or {}
        for c in children.values() if isinstance(children, dict) else children:
            walk(c)
        out.append(repr(getattr(node, "proto", "")))

    walk(at._tree)
    return "\n".join(out)


def test_a_plain_config_json_is_named_by_its_model_type_and_size():
    at = _memory_page(MISTRAL.read_bytes())
    assert _chart_name(at) == "mistral (7.2B)"
    assert "uploaded-config" not in _everything(at)
    qwen = _memory_page(QWEN72.read_bytes())
    assert _chart_name(qwen) == "qwen2 (72.7B)"


def test_the_cli_shows_the_same_name_for_the_same_file(tmp_path):
    """`memory --arch DIR/config.json` named the model by its folder (a temporary folder's
    name here, ``tmp`` for /tmp/config.json); now the name the page shows for the file."""
    for src, want in ((MISTRAL, "mistral (7.2B)"), (QWEN72, "qwen2 (72.7B)")):
        path = tmp_path / src.parent.name.replace("-", "_") / "config.json"
        path.parent.mkdir()
        path.write_bytes(src.read_bytes())
        r = run("memory", "--arch", str(path), "--zero", "1", "--ranks", "16")
        assert r.exit_code == 0, r.stderr
        assert f"activations: {want}, " in r.stdout, r.stdout
        assert read_upload(src.read_bytes(), "config.json")[0].name == want


def test_the_name_the_file_states_comes_first_in_the_app_and_the_cli(tmp_path):
    """``_name_or_path``: a Hub id kept whole, a local checkpoint path by its last folder."""
    cfg = json.loads(QWEN72.read_text(encoding="utf-8"))
    for said, want in (
        ("Qwen/Qwen2-72B", "Qwen/Qwen2-72B"),
        ("/scratch/run3/qwen-72b-ft/", "qwen-72b-ft"),
    ):
        content = json.dumps(cfg | {"_name_or_path": said}).encode()
        assert _chart_name(_memory_page(content)) == want
        path = tmp_path / want.replace("/", "_") / "config.json"
        path.parent.mkdir()
        path.write_bytes(content)
        r = run("memory", "--arch", str(path), "--ranks", "16")
        assert r.exit_code == 0, r.stderr
        assert f"activations: {want}, " in r.stdout, r.stdout


def test_a_file_name_that_names_the_model_is_kept_then_the_generic_name():
    from costmodel.hf_config import GENERIC_NAME, config_name

    at = _memory_page(MISTRAL.read_bytes(), "my-mistral.json")
    assert _chart_name(at) == "my-mistral"
    # the uploaded file's name, made safe, names the step page's model as the CLI's file would
    a, path = read_upload(MISTRAL.read_bytes(), "Mistral 7B v0.1.json")
    assert a.name == "Mistral-7B-v0.1" and Path(path).name == "Mistral-7B-v0.1.json"
    # nothing said and a plain name: the generic name (a config the reader accepts has a
    # model_type, so this is the rule's last step, not an answer a page shows)
    assert config_name({"_name_or_path": " "}, 7e9, "config.json") == GENERIC_NAME
    assert config_name({}, 7e9, "///.json") == GENERIC_NAME


def test_the_step_page_labels_the_uploaded_model_by_its_name():
    at = open_page("page_ddp.py", {"ddp_nodes": "8", "ddp_strategy": "zero1", "ddp_arch": OWN})
    at.file_uploader(key="ddp_arch_config").upload(
        "config.json", MISTRAL.read_bytes(), "application/json"
    ).run()
    assert_clean(at)
    text = _everything(at)
    assert "uploaded-config" not in text
    assert "mistral (7.2B)" in text


def test_a_config_rewritten_in_place_is_read_again_whatever_its_mtime(tmp_path: Path) -> None:
    """The reader caches by the file's bytes: a config.json rewritten at the same path, at the
    same size and with its old modification time put back, gives the new model (keyed on mtime
    and size, the old one came back)."""
    import os

    from costmodel import hf_config

    path = tmp_path / "config.json"
    cfg = json.loads(MISTRAL.read_text())
    first = {**cfg, "_name_or_path": "org/model-aaaa"}
    second = {**cfg, "_name_or_path": "org/model-bbbb", "num_hidden_layers": 16}
    first_text = json.dumps(first)
    second_text = json.dumps(second)
    second_text = second_text + " " * (len(first_text) - len(second_text))
    assert len(first_text) == len(second_text)
    path.write_text(first_text)
    st = path.stat()
    a = hf_config.load_hf_config(path)
    path.write_text(second_text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    b = hf_config.load_hf_config(path)
    assert (a.name, a.layers) == ("org/model-aaaa", 32)
    assert (b.name, b.layers) == ("org/model-bbbb", 16)
