"""Headless app tests (streamlit.testing AppTest): the step and Memory pages set the dtypes the
collectives move, and the Memory page the bucket, as the CLI's ``--param-dtype``, ``--grad-dtype``
and ``--bucket`` and the API's ``param_dtype``, ``grad_dtype`` and ``bucket_cap_bytes`` do. Before,
only the CLI, the API and the sweeps took them: a page could not ask what the CLI answered."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel.cli import app as cli_app
from costmodel.units import format_bytes, format_duration
from tests.test_app import assert_clean, metrics, open_page


def _cli_memory_bytes(*args: str) -> float:
    got = CliRunner().invoke(cli_app, ["memory", *args, "--json"])
    assert got.exit_code == 0, got.output
    return float(json.loads(got.stdout)["memory_bytes"])


def _selects(at) -> dict[str, str]:
    return {s.label: s.value for s in at.selectbox}


# --- the Memory page: the CLI's memory for the same options ----------------------------------
MEMORY_CASES = {
    # id: (the page's URL, the question to `costmodel memory`, the options the switch sets)
    "zero1-fp32-grads-bucket": (
        {"params": "7B", "zero_stage": "1", "mem_grad_dtype": "fp32", "mem_bucket": "100MiB"},
        ["--params", "7B", "--zero", "1", "--ranks", "8"],
        ["--grad-dtype", "fp32", "--bucket", "100MiB"],
    ),
    "fsdp-fp32-gathers": (
        {"arch": "llama-3.1-8b", "zero_stage": "3", "mem_param_dtype": "fp32"},
        ["--arch", "llama-3.1-8b", "--zero", "3", "--ranks", "8"],
        ["--param-dtype", "fp32"],
    ),
}


@pytest.mark.parametrize(("query", "cli", "options"), MEMORY_CASES.values(), ids=MEMORY_CASES)
def test_the_memory_page_sizes_the_dtypes_and_bucket_as_the_cli(query, cli, options):
    """Each case's total is the CLI's for the same options, and differs from the total
    without them (so the boxes are read); with the switch off it is the CLI's without them."""
    at = open_page("page_memory.py", {**query, "mem_dtypes": "true"})
    assert_clean(at)
    label = f"Memory per GPU, ZeRO-{query['zero_stage']}"
    shown = metrics(at)[label]
    assert shown == format_bytes(_cli_memory_bytes(*cli, *options))
    assert shown != format_bytes(_cli_memory_bytes(*cli))
    off = open_page("page_memory.py", {**query, "mem_dtypes": "false"})
    assert metrics(off)[label] == format_bytes(_cli_memory_bytes(*cli))
    # the boxes show what the URL set; switched off, they are not drawn
    sel = _selects(at)
    assert sel["Parameter all-gather dtype"] == query.get("mem_param_dtype", "bf16")
    assert sel["Gradient reduce dtype"] == query.get("mem_grad_dtype", "recipe")
    assert "Parameter all-gather dtype" not in _selects(off)


def test_the_memory_page_says_ddp_gathers_no_parameters():
    """An fp8 gather dtype at ZeRO-0 changes nothing, and the page says why (the CLI's note)."""
    at = open_page(
        "page_memory.py", {"params": "7B", "mem_dtypes": "true", "mem_param_dtype": "fp8"}
    )
    assert_clean(at)
    said = [c.value for c in at.caption]
    assert any(c.startswith("param_dtype: fp8 not applied to ddp") for c in said), said
    assert metrics(at)["Memory per GPU, ZeRO-0"] == format_bytes(
        _cli_memory_bytes("--params", "7B", "--ranks", "8")
    )


@pytest.mark.parametrize(
    ("typed", "words"),
    [("0", "bucket_cap: must be a bucket size in 1 B..10 TB"), ("lots", "bucket_cap")],
)
def test_a_bad_bucket_is_named_and_nothing_is_sized(typed, words):
    at = open_page("page_memory.py", {"mem_dtypes": "true", "mem_bucket": typed})
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(words in e for e in errors), errors
    assert not any(m.label.startswith("Memory per GPU") for m in at.metric)


# --- the step page: the API's step for the same dtypes ---------------------------------------
def test_the_step_page_prices_the_dtypes_as_the_api():
    """fsdp on the page's default count (7B), cluster and nodes, parameters gathered in fp32
    and gradients reduced in fp32: the page's step and communication are Scenario's with
    ``param_dtype``/``grad_dtype``, and differ from the defaults' (the boxes are read)."""
    query = {"ddp_strategy": "fsdp", "ddp_dtypes": "true", "ddp_param_dtype": "fp32",
             "ddp_grad_dtype": "fp32"}  # fmt: skip
    at = open_page("page_ddp.py", query)
    assert_clean(at)
    shown = metrics(at)
    base = cm.Scenario(params=7e9, strategy="fsdp", nodes=4)  # the first view: a 7B count
    set_ = base.model_copy(update={"param_dtype": "fp32", "grad_dtype": "fp32"})
    r, r0 = (s.evaluate(scaling=False, flips=False) for s in (set_, base))
    assert shown["Step time"] == format_duration(r.step_time_s)
    assert shown["Communication (sum)"] == format_duration(r.comm_s)
    assert format_duration(r.comm_s) != format_duration(r0.comm_s)
    sel = _selects(at)
    assert (sel["Parameter all-gather dtype"], sel["Gradient reduce dtype"]) == ("fp32", "fp32")
    off = open_page("page_ddp.py", {**query, "ddp_dtypes": "false"})
    assert metrics(off)["Communication (sum)"] == format_duration(r0.comm_s)
    assert "Parameter all-gather dtype" not in _selects(off)


def test_a_link_with_a_dtype_the_layout_does_not_take_is_named():
    """``?ddp_param_dtype=int4``: named by its box with the choices it takes (bound_choice),
    and the step is priced at the default, as the box shows."""
    at = open_page("page_ddp.py", {"ddp_dtypes": "true", "ddp_param_dtype": "int4"})
    assert not at.exception
    errors = " ".join(e.value.replace("\\", "") for e in at.error)
    assert "Parameter all-gather dtype" in errors and "int4" in errors, errors
    assert _selects(at)["Parameter all-gather dtype"] == "bf16"
