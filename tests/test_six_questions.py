"""The six planning questions walked in a real browser, each with the CLI's number beside it.

Each question is asked once in chromium (Debian's, via Playwright, against `streamlit run`) and
once through the CLI (typer's CliRunner, in-process), and the number the page shows must be the
number the CLI prints, to the page's displayed precision: the CLI's JSON value put through the
page's formatter, and that same text found in the CLI's human output where it prints one.

1. How long does an all-reduce of 14 GB take on 64 H100s? (Cluster page, the typed-size box)
2. Does Llama-3.1-70B fit under ZeRO-1 and ZeRO-3 on 64 H100s? (Memory page, stage clicked)
3. What accumulation and learning rate for 4M tokens per step at 4096 on 512 GPUs? (Batch page)
4. H100 or B200: days and dollars to train Llama-2-7B on 2T tokens? (step page, side by side)
5. Which all-reduce algorithm wins at 14 GB, and at 64 KiB? (Collectives page, size typed)
6. How far is the model from a bundled nccl-tests log? (Validate page, file uploaded)

All six at a desktop width (1440 px); the batch question also at a phone width (390 px). One server for
the session (tests/conftest.py), one browser for the module, one page per question, no sleeps: every
wait is a Playwright expectation. Most inputs arrive in the page's URL, the way a shared link
sets them (every input is mirrored there); a size, the ZeRO-3 stage and the log are set by
typing, clicking and uploading, as a user does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

import playwright.sync_api as playwright_api  # noqa: E402  (the test extra; no skip)
from typer.testing import CliRunner  # noqa: E402

from costmodel import cli  # noqa: E402
from costmodel.reference import reference_path  # noqa: E402
from costmodel.units import (  # noqa: E402
    format_bytes,
    format_bytes_as_given,
    format_count,
    format_duration,
    format_elapsed,
    format_gpu_hours,
)
from tests._browser import LOG_INPUT, reused_tabs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
TIMEOUT_MS = 180_000  # a bound, not a goal: the step page with B took 90 s at load 14 on 2 cores
DESKTOP, PHONE = (1440, 900), (390, 844)

expect = playwright_api.expect
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def tabs(chromium_browser):
    yield from reused_tabs(chromium_browser, TIMEOUT_MS)


@pytest.fixture(params=[DESKTOP], ids=["1440"])
def tab(request, tabs):
    """The module's page at ``request.param``'s viewport (desktop unless a test asks for both),
    where the test loads its URL afresh (tests/_browser.Tabs); no exception on it when the test
    ends. (Not ``page``: pytest-playwright owns that name.)"""
    width, height = request.param
    p = tabs.page({"width": width, "height": height})
    yield p
    expect(p.get_by_test_id("stException")).to_have_count(0)


both_widths = pytest.mark.parametrize("tab", [DESKTOP, PHONE], ids=["1440", "390"], indirect=True)


def metric(page, label: str):
    """The value element of the st.metric whose label is ``label``."""
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return box.get_by_test_id("stMetricValue")


def ask_cli(*args: str) -> tuple[dict, str]:
    """The CLI's answer: (its --json object, its human output), both run in-process."""
    runner = CliRunner()
    human = runner.invoke(cli.app, list(args))
    assert human.exit_code == 0, human.output
    machine = runner.invoke(cli.app, [*args, "--json"])
    assert machine.exit_code == 0, machine.output
    return json.loads(machine.stdout), human.stdout


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Enter")


def test_q1_all_reduce_of_14gb_on_64_h100s(tab, app_url):
    page = tab
    args = ["collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes", "8"]
    got, human = ask_cli(*args)
    r = got["results"][0]
    assert r["ranks"] == 64
    # the size in the Cluster page's typed-size box (through the URL; question 5 types one)
    page.goto(f"{app_url}/cluster?cl_cluster=dgx-h100&cl_nodes=8&cl_size_text=14GB")
    expect(page.get_by_role("textbox", name="or type a size")).to_have_value("14GB")
    time_text = format_duration(r["time_s"])
    expect(metric(page, "Time, model nccl")).to_have_text(time_text)
    expect(metric(page, "Algorithm / protocol")).to_have_text(
        f"{r['algorithm_used']} / {r['protocol_used']}"
    )
    expect(metric(page, "Expected error")).to_have_text(f"±{r['error_band_pct']:.0f}%")
    assert time_text in human and "cl_size_text=14GB" in page.url


def test_q2_llama_70b_memory_under_zero1_and_zero3(tab, app_url):
    from costmodel import presets

    H100 = f"{presets.load('h100-sxm', 'gpu').memory_bytes}B"  # the page's default GPU
    page = tab
    page.goto(f"{app_url}/memory?arch=llama-3.1-70b&dp_ranks=64&zero_stage=1+%28optimizer%29")
    for stage in (1, 3):
        got, human = ask_cli(
            "memory", "--arch", "llama-3.1-70b", "--zero-stage", str(stage), "--ranks", "64",
            "--gpu-memory", H100,
        )  # fmt: skip
        if stage == 3:  # ZeRO-1 from the URL, then ZeRO-3 clicked
            expect(metric(page, "Memory per GPU, ZeRO-1")).to_have_text(re.compile(r"\d"))
            page.get_by_text("3 (FSDP)", exact=True).click()
        total = format_bytes(got["memory_bytes"])
        expect(metric(page, f"Memory per GPU, ZeRO-{stage}")).to_have_text(total)
        expect(metric(page, "Fits?")).to_have_text("yes" if got["fits"] else "no")
        if got["max_params"] <= 0:  # not "0 params": what even one parameter sits beside
            expect(page.get_by_text(got["max_params_note"])).to_be_visible()
        assert re.search(rf"total per GPU +{re.escape(total)}\n", human), human
    page.screenshot(path=str(ARTIFACTS / f"six-q2-memory-{page.viewport_size['width']}.png"))


@both_widths
def test_q3_batch_and_accumulation_in_tokens(tab, app_url):
    page = tab
    got, human = ask_cli(
        "batch",
        *("--local-batch", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096"),
        *("--base-lr", "3e-4", "--base-tokens", "1Mi"),
    )
    page.goto(
        f"{app_url}/batch?batch_unit=tokens&seq_len=4096&batch_local_batch=1&batch_ranks=512"
        f"&batch_global_tokens={4 * 2**20}&base_lr_tokens=0.0003&base_tokens={2**20}"
    )
    accumulation = metric(page, "Accumulation steps A [-] = global / (local x N)")
    expect(accumulation).to_have_text(f"{got['accumulation']:,}")
    expect(metric(page, "Global batch [samples] = tokens / sequence length")).to_have_text(
        f"{got['global_batch']:,}"
    )
    tokens = f"{format_count(got['tokens_per_step'])} tokens"
    expect(metric(page, "Global batch [tokens per step]")).to_have_text(tokens)
    lr = got["learning_rate"]
    expect(
        metric(page, f"Learning rate at global batch {lr['new_batch']:,} tokens (sqrt rule)")
    ).to_have_text(f"{lr['learning_rate']:.4g}")
    # the CLI's line in the page's words: the factor solved and how (the page's metric label)
    solved = (
        f"accumulation steps A [-]       {got['accumulation']:,} (solved: global / (local x N))"
    )
    assert solved in human and tokens in human


def test_q4_h100_or_b200_days_and_dollars(tab, app_url):
    page = tab
    args = [
        "scenario",
        *("--arch", "llama-2-7b", "--nodes", "8", "--zero", "1", "--tokens", "2T"),
        *("--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200"),
        *("--price-b", "lambda-b200-on-demand"),
    ]
    got, human = ask_cli(*args)
    page.goto(
        f"{app_url}/ddp?ddp_arch=llama-2-7b&ddp_nodes=8&ddp_strategy=zero1&ddp_tokens=2T"
        "&ddp_price=aws-p5-on-demand&ddp_pin=true&ddp_b_cluster=dgx-b200"
        "&ddp_price_b=lambda-b200-on-demand"
    )
    for side in ("A", "B"):
        cost = got["training_cost"][side]
        days = format_elapsed(cost["wall_days"] * 86400.0)  # "X days", as the CLI writes it
        gpu_hours = format_gpu_hours(cost["gpu_hours"])
        dollars = f"{cost['cost_usd']:,.0f}"
        expect(metric(page, f"Wall clock ({side})")).to_have_text(days)
        expect(metric(page, f"GPU-hours ({side})")).to_have_text(gpu_hours)
        expect(metric(page, f"Cost ({side}) [USD]")).to_have_text(dollars)
        for text in (days, gpu_hours, f"${dollars} ({cost['price_date']} prices)"):
            assert text in human, (text, human)
    step_a = format_duration(got["a"]["step_time_s"])
    expect(metric(page, "Step time")).to_have_text(step_a)


def test_q5_which_algorithm_wins_at_a_size(tab, app_url):
    page = tab
    page.goto(f"{app_url}/?view=A+model+on+a+cluster+preset&nccl_nodes=8&size_text=14GB")
    expect(page.get_by_text("Every model on this cluster (lesson")).to_be_visible()
    for size in ("14GB", "64KiB"):
        got, human = ask_cli(
            *("collective", "all_reduce", "--size", size, "--cluster", "dgx-h100"),
            *("--nodes", "8", "--algorithm", "all"),
        )
        if size != "14GB":
            type_into(page, "or type a size", size)
        verdict = got["verdicts"][0]
        lead = "Fastest algorithm" if verdict["winner"] else "Algorithms"
        caption = page.get_by_text(f"{lead}: {verdict['text']}.")
        # said as typed, as the CLI says it: 64KiB is "64 KiB" (units.format_bytes_as_given)
        at = format_bytes_as_given(got["results"][0]["size_bytes"], size)
        expect(caption).to_contain_text(f"dgx-h100 can run at M = {at},")
        assert f": {verdict['text']}\n" in human, human
        if size == "14GB":  # inside the +/-54% band: no winner named, on both surfaces
            assert verdict["winner"] is None and "within the expected error" in verdict["text"]
        else:  # tree beats the runner-up by more than the band: the winner is named
            assert verdict["winner"] == "tree"
        fastest = min(got["results"], key=lambda r: r["time_s"])
        expect(metric(page, "Time")).to_have_text(format_duration(fastest["time_s"]))


def test_q6_validate_a_bundled_log(tab, app_url):
    page = tab
    log = reference_path("02_coreweave-16x8xA100-IB_allreduce")
    got, human = ask_cli("validate", "compare", str(log), "--tolerance", "100")
    page.goto(f"{app_url}/validate")
    page.locator(LOG_INPUT).set_input_files(str(log))
    median = f"{100 * got['median_abs_rel_error']:.1f} %"
    expect(metric(page, "Median |busbw error|")).to_have_text(median)
    band = got["expected_error"]
    expect(metric(page, "Expected error")).to_have_text(
        f"±{100 * band['half_width_from_1MiB']:.0f}% from 1 MiB, "
        f"±{100 * band['half_width_below_1MiB']:.0f}% below 1 MiB"
    )
    within = f"{band['rows_within']} of {band['rows_with_band']}"
    expect(metric(page, "Rows within the expected error")).to_have_text(within)
    assert f"median |busbw error| {median.replace(' ', '')}" in human
    assert f"{within} rows within it" in human
