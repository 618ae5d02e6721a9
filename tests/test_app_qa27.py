"""QA pass 27 on the app: a new user's planning questions on the Training step and Memory pages,
each compared with the CLI's or the API's answer to the same question.

What it found: a library note that starts with the model's name was capitalised as a sentence
("Deepseek-v3 is a mixture of experts", "Uploaded-config is ..."): the name is a file name, and
the page now writes it as the CLI does. The A-or-B answer read "B's step is 1x faster" for a
step 0.1 % shorter (tests/test_qa_pass25.py); the page shows the library's sentence.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import costmodel as cm
from costmodel.units import format_duration
from costmodel.web.own_model import OWN
from tests._cli import run
from tests.test_app import _text, assert_clean, metrics, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

MIXTRAL = Path(__file__).parent / "data" / "hf_configs" / "mixtral-8x7b" / "config.json"


def _texts(at) -> list[str]:
    return [_text(c.value) for c in [*at.caption, *at.markdown, *at.warning, *at.info]]


def test_a_mixture_of_experts_is_named_as_the_cli_names_it_with_the_same_step():
    """DeepSeek-V3 under fsdp on 64 DGX H100 nodes (512 GPUs): the page's step, exposed
    communication and verdict are the API's, and its note on the all-to-all it leaves out starts
    with the model's name as written (the CLI's `note: deepseek-v3 is a mixture ...`)."""
    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "deepseek-v3", "ddp_cluster": "dgx-h100", "ddp_nodes": "64"}
        | {"ddp_strategy": "fsdp"},
    )
    assert_clean(at)
    s = cm.strategy_step(arch="deepseek-v3", cluster="dgx-h100", nodes=64, strategy="fsdp")
    m = metrics(at)
    assert m["Step time"] == format_duration(s.step_time_s)
    assert m["Exposed communication"] == format_duration(s.exposed_comm_s)
    assert m["Verdict"] == f"{s.bound}-bound"
    moe = next(n for n in s.notes if "all-to-all" in n)
    assert moe.startswith("deepseek-v3 is a mixture of experts"), moe
    shown = [t for t in _texts(at) if "all-to-all" in t]
    assert shown and all(t.startswith("deepseek-v3 is") for t in shown), shown


def test_an_uploaded_config_keeps_its_name_in_the_notes_and_the_clis_memory():
    """Mixtral's config.json uploaded as `config.json` is the model `mixtral (46.7B)` (its
    model_type and size; it was `uploaded-config`); its note says so in that spelling, and its
    memory per GPU is `costmodel memory --arch`'s."""
    at = open_page("page_memory.py", {"zero_stage": "1", "dp_ranks": "16"})
    at.selectbox(key="arch").set_value(OWN).run()
    at.file_uploader(key="arch_config").upload("config.json", MIXTRAL.read_bytes(), "text/json")
    at.run()
    assert_clean(at)
    shown = [t for t in _texts(at) if "mixture of experts" in t]
    assert shown and all(t.startswith("mixtral (46.7B) is") for t in shown), shown
    r = run("memory", "--arch", str(MIXTRAL), "--zero", "1", "--ranks", "16")
    assert r.exit_code == 0, r.stderr
    total = next(line for line in r.stdout.splitlines() if line.startswith("total per GPU"))
    assert metrics(at)["Memory per GPU, ZeRO-1"] == total.removeprefix("total per GPU").strip()


def test_the_a_or_b_answer_is_the_clis_for_405b_on_256_h200():
    """hsdp over 64 GPUs (A) or fsdp (B), both with full recompute: the page's answer is the
    line `scenario --vs strategy=fsdp` prints, and neither says "1x faster"."""
    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "llama-3.1-405b", "ddp_cluster": "hgx-h200", "ddp_nodes": "32"}
        | {"ddp_strategy": "hsdp", "ddp_group": "64", "ddp_recompute": "full"}
        | {"ddp_pin": "true", "ddp_b_strategy": "fsdp"},
    )
    assert_clean(at)
    r = run(
        *("scenario", "--arch", "llama-3.1-405b", "--cluster", "hgx-h200", "--nodes", "32"),
        *("--strategy", "hsdp", "--group-size", "64", "--recompute", "full"),
        *("--vs", "strategy=fsdp"),
    )
    assert r.exit_code == 0, r.stderr
    cli = next(x for x in r.stdout.splitlines() if x.startswith("answer: ")).removeprefix(
        "answer: "
    )
    page = [_text(s.value) for s in at.success]
    assert cli in page, (cli, page)
    assert " 1x faster" not in cli


def test_a_memory_just_under_the_card_reads_apart_from_it_on_the_step_page():
    """405B under hsdp over 64 H200s with full recompute: 0.2 % under the card, it read "151 GB"
    beside a "151 GB" card; the page's two metrics are the CLI's `memory per GPU` line."""
    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "llama-3.1-405b", "ddp_cluster": "hgx-h200", "ddp_nodes": "32"}
        | {"ddp_strategy": "hsdp", "ddp_group": "64", "ddp_recompute": "full"},
    )
    assert_clean(at)
    m = metrics(at)
    assert m["Memory per GPU"] != m["GPU memory"], m
    r = run(
        *("step", "--arch", "llama-3.1-405b", "--cluster", "hgx-h200", "--nodes", "32"),
        *("--strategy", "hsdp", "--group-size", "64", "--recompute", "full"),
    )
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("memory per GPU"))
    assert f"{m['Memory per GPU']} of {m['GPU memory']} (fits" in line, (line, m)


def test_the_memory_page_reads_a_memory_just_under_the_card_apart_from_it():
    """The same layout on the Memory page (256 ranks, hsdp group 64, H200): its two metrics are
    `costmodel memory`'s total and card, which no longer both read 151 GB."""
    at = open_page(
        "page_memory.py",
        {"arch": "llama-3.1-405b", "zero_stage": "3", "mem_strategy": "hsdp", "mem_group": "64"}
        | {"dp_ranks": "256", "recompute": "full", "gpu": "h200-sxm"},
    )
    assert_clean(at)
    m = metrics(at)
    r = run(
        *("memory", "--arch", "llama-3.1-405b", "--strategy", "hsdp", "--group-size", "64"),
        *("--ranks", "256", "--recompute", "full", "--cluster", "hgx-h200"),
    )
    assert r.exit_code == 0, r.stderr
    said = dict(re.split(r"\s{2,}", x, maxsplit=1) for x in r.stdout.splitlines() if "  " in x)
    total = said["total per GPU"]
    assert m["Memory per GPU, ZeRO-3"] == total
    assert m["GPU memory (h200-sxm)"] != total
    assert said["GPU memory"].startswith(m["GPU memory (h200-sxm)"])
