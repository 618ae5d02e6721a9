"""A node slice is billed whole, the same on every surface; small CLI fixes of a QA pass."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, presets
from costmodel.scenario import Scenario
from costmodel.training import billed_gpus_per_node, load_price, training_cost

from ._cli import one_line_error, run

ARCH = "llama-2-7b"
PRICE = "aws-p5-on-demand"  # p5.48xlarge: $55.04 per instance-hour over 8 H100s
NOTE = "billed for 8 GPUs per node (the whole instance), 4 used"
SLICE = ("--arch", ARCH, "--tokens", "20B", "--cluster", "dgx-h100", "--nodes", "2",
         "--gpus-per-node", "4", "--zero", "1")  # fmt: skip


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


def _hand_dollars(wall_s: float, nodes: int, node_gpus: int, usd_per_instance_hour: float,
                  gpus_per_instance: int) -> float:  # fmt: skip
    """Nodes x the node's full GPU count x wall hours x the price of one GPU-hour."""
    return nodes * node_gpus * wall_s / 3600.0 * usd_per_instance_hour / gpus_per_instance


# --- the rule ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, billed",
    [
        ((4, 8), 8),  # half a DGX: the whole instance
        ((1, 8), 8),
        ((8, 8), 8),  # the whole node: as used
        ((8, None), 8),  # not a slice
        ((6, 72, 18), 8),  # an NVL72 rack is 18 hosts of 4 GPUs: two whole hosts
        ((4, 72, 18), 4),
        ((6, 72, 18, 72), 72),  # a rack sold whole (a 72-GPU instance)
        ((4, 8, 1, 1), 8),  # a price quoted per GPU of an 8-GPU machine: still the machine
    ],
)
def test_billed_gpus_per_node(args, billed):
    assert billed_gpus_per_node(*args) == billed


def test_billed_gpus_per_node_refuses_a_whole_node_smaller_than_its_slice():
    with pytest.raises(ValueError, match="whole_node_gpus"):
        billed_gpus_per_node(8, 4)


def test_a_slice_remembers_its_whole_node_and_a_slice_of_a_slice_too():
    c = presets.cluster("dgx-h100", nodes=2, gpus_per_node=4)
    assert (c.gpus_per_node, c.node.whole_node_gpus) == (4, 8)
    assert c.with_gpus_per_node(2).node.whole_node_gpus == 8
    assert c.with_nodes(3).node.whole_node_gpus == 8
    assert presets.cluster("dgx-h100", gpus_per_node=8).node.whole_node_gpus is None
    assert presets.cluster("dgx-h100").node.whole_node_gpus is None


# --- API ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api_slice():
    r = Scenario(arch=ARCH, cluster="dgx-h100", nodes=2, gpus_per_node=4, zero_stage=1).evaluate(
        scaling=False, flips=False
    )
    return r.training_cost(20e9, price=PRICE)


def test_api_bills_the_whole_node_and_reports_the_gpu_hours_used(api_slice):
    c = api_slice
    p = load_price(PRICE)
    assert c.ranks == 8 and c.billed_ranks == 16
    assert c.gpu_hours == pytest.approx(8 * c.wall_s / 3600.0, rel=1e-12)  # used, as before
    assert c.billed_gpu_hours == pytest.approx(16 * c.wall_s / 3600.0, rel=1e-12)
    hand = _hand_dollars(c.wall_s, 2, 8, p.usd_per_instance_hour, p.gpus_per_instance)
    assert c.cost_usd == pytest.approx(hand, rel=1e-12)
    assert c.cost_usd == pytest.approx(2 * c.gpu_hours * p.usd_per_gpu_hour, rel=1e-12)
    assert c.billing_note == NOTE
    lo, hi = c.cost_usd_band
    assert lo < c.cost_usd < hi
    assert c.as_dict()["billed_gpu_hours"] == pytest.approx(c.billed_gpu_hours)


def test_a_typed_price_on_a_slice_bills_the_node_too():
    node = presets.cluster("dgx-h100", nodes=3, gpus_per_node=2).node
    c = training_cost(steps=100, tokens_per_step=1e6, step_time_s=36.0, ranks=6,
                      usd_per_gpu_hour=2.0, node=node)  # fmt: skip
    assert c.gpu_hours == pytest.approx(6.0)  # 6 GPUs x 1 h
    assert c.cost_usd == pytest.approx(3 * 8 * 1.0 * 2.0)  # 3 nodes x 8 GPUs x 1 h x $2
    assert c.billing_note == "billed for 8 GPUs per node (the whole instance), 2 used"


def test_a_full_node_is_unchanged():
    node = presets.cluster("dgx-h100", nodes=2).node
    kw = dict(steps=100, tokens_per_step=1e6, step_time_s=36.0, ranks=16, price=PRICE)
    with_node = training_cost(**kw, node=node)
    without = training_cost(**kw)
    assert with_node.cost_usd == without.cost_usd == pytest.approx(16 * 55.04 / 8)
    assert with_node.billing_note == "" and with_node.billed_gpu_hours == with_node.gpu_hours


# --- CLI ---------------------------------------------------------------------------------------
def test_cli_train_gives_the_apis_billed_dollars_and_says_so(api_slice):
    t = _json("train", *SLICE, "--price", PRICE)
    assert t["cost_usd"] == pytest.approx(api_slice.cost_usd, rel=1e-12)
    assert t["gpu_hours"] == pytest.approx(api_slice.gpu_hours, rel=1e-12)
    assert t["billing_note"] == NOTE and t["billed_ranks"] == 16
    r = run("train", *SLICE, "--price", PRICE)
    assert r.exit_code == 0, r.stderr
    assert NOTE in r.stdout
    assert "GPU-hours billed" in r.stdout


def test_cli_train_full_node_has_no_billing_line():
    r = run("train", "--arch", ARCH, "--tokens", "20B", "--nodes", "1", "--zero", "1",
            "--price", PRICE)  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "billed" not in r.stdout


def test_cli_scenario_cost_says_the_slice_is_billed_whole(api_slice):
    args = ("scenario", "--arch", ARCH, "--cluster", "dgx-h100", "--nodes", "2",
            "--gpus-per-node", "4", "--zero", "1", "--tokens", "20B", "--price", PRICE)  # fmt: skip
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert f"billing: {NOTE}" in r.stdout
    assert "GPU-hours billed" in r.stdout
    d = _json(*args)
    assert d["training_cost"]["A"]["cost_usd"] == pytest.approx(api_slice.cost_usd, rel=1e-12)


# --- sweep -------------------------------------------------------------------------------------
def test_sweep_cost_columns_bill_the_slice_like_train(api_slice):
    df = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="zero1", nodes="2",
                  gpus_per_node="4,8", tokens="20B", price=PRICE)  # fmt: skip
    half = df[df.gpus_per_node == 4].iloc[0]
    whole = df[df.gpus_per_node == 8].iloc[0]
    assert half["cost_usd"] == pytest.approx(api_slice.cost_usd, rel=1e-12)
    assert half["billed_gpu_hours"] == pytest.approx(2 * half["gpu_hours"], rel=1e-12)
    assert NOTE in half["cost_note"]
    assert whole["billed_gpu_hours"] == whole["gpu_hours"]
    assert whole["cost_usd"] == pytest.approx(whole["gpu_hours"] * 55.04 / 8, rel=1e-12)
    assert "billed" not in whole["cost_note"]


# --- app ---------------------------------------------------------------------------------------
def _app_slice_costs() -> None:  # an AppTest script: the step page's cost metrics of a slice
    from costmodel.scenario import Scenario
    from costmodel.web import page_ddp

    r = Scenario(
        arch="llama-2-7b", cluster="dgx-h100", nodes=2, gpus_per_node=4, zero_stage=1
    ).evaluate(scaling=False, flips=False)
    cost = r.training_cost(20e9, price="aws-p5-on-demand")
    page_ddp._cost_metrics(cost, result=r, price="aws-p5-on-demand")


def test_app_cost_metric_is_the_billed_dollars_and_says_so(api_slice):
    from streamlit.testing.v1 import AppTest

    from costmodel.units import format_usd

    at = AppTest.from_function(_app_slice_costs, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    m = {x.label: x for x in at.metric}
    assert m["Cost [USD]"].value == format_usd(api_slice.cost_usd)
    assert NOTE in m["Cost [USD]"].help
    assert any(NOTE in c.value for c in at.caption)


# --- small CLI items of a QA pass ----------------------------------------------------------------
@pytest.mark.parametrize("vs", ["nodes=16,,zero=3", "nodes=16,", ",nodes=16"])
def test_vs_refuses_an_empty_item(vs):
    r = run("scenario", "--arch", ARCH, "--nodes", "8", "--vs", vs)
    one_line_error(r, "--vs", "empty item", repr(vs))


def test_with_changes_refuses_an_empty_item():
    with pytest.raises(ValueError, match="changes: empty item"):
        Scenario(arch=ARCH).with_changes("nodes=16,,zero=3")


def test_one_unfit_row_reads_its_gpus_memory(monkeypatch):
    import costmodel.cli.comm as comm

    lines: list[str] = []
    monkeypatch.setattr(comm, "warn_on_success", lines.append)
    comm._warn_unfit_rows(2, 1, "step")
    comm._warn_unfit_rows(3, 2, "step")
    assert lines[0].startswith("1 of 2 rows does not fit its GPU's memory (fits = false): its ")
    assert lines[1].startswith("2 of 3 rows do not fit their GPU's memory (fits = false): their ")


@pytest.fixture
def one_huge_layer(tmp_path):
    """One Llama block with a 3e9 intermediate size: 3.7e13 parameters in one layer (147 TB in
    fp32, past 16 TiB), 3.7e13 in all (under the 1e15 parameter limit)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cfg = json.loads((root / "tests/data/hf_configs/llama-3.1-8b/config.json").read_text())
    cfg["intermediate_size"] = 3 * 10**9
    cfg["num_hidden_layers"] = 1
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("step", "--nodes", "8"),  # was "message_bytes: ... (element 1 of 3)"
        ("scenario", "--nodes", "8"),
        ("train", "--nodes", "8", "--tokens", "1T"),
        ("memory", "--zero", "3", "--ranks", "8"),
    ],
)
def test_a_config_with_a_layer_past_16_tib_is_refused_as_arch(one_huge_layer, args):
    line = one_line_error(run(*args, "--arch", str(one_huge_layer)), "--arch", "block 0")
    assert "message_bytes" not in line and "4.4e+12 parameters per layer" in line


def test_the_api_refuses_a_layer_past_16_tib(one_huge_layer):
    with pytest.raises(ValueError, match=r"arch: .*block 0 holds 3\.69e\+13 parameters"):
        cm.load_arch(str(one_huge_layer))


@pytest.mark.parametrize("given", [None, "/somewhere/else"])
def test_presets_dir_does_not_leak_into_later_calls(tmp_path, monkeypatch, given):
    import os

    from costmodel.cli import main

    if given is None:
        monkeypatch.delenv("COSTMODEL_PRESETS", raising=False)
    else:
        monkeypatch.setenv("COSTMODEL_PRESETS", str(tmp_path))
    r = run("--presets-dir", str(tmp_path), "presets", "list")
    assert r.exit_code == 0, r.stderr
    assert os.environ.get("COSTMODEL_PRESETS") == (None if given is None else str(tmp_path))
    assert main(["--presets-dir", str(tmp_path), "presets", "list"]) == 0
    assert os.environ.get("COSTMODEL_PRESETS") == (None if given is None else str(tmp_path))


# --- output files: replaced, atomically, never an input --------------------------------------------
@pytest.mark.parametrize(
    "command, options",
    [
        (("sweep",), ("--output",)),
        (("validate", "compare"), ("--output", "--report")),
        (("calibrate",), ("--output",)),
    ],
)
def test_output_help_says_an_existing_file_is_replaced(command, options):
    import typer

    group = typer.main.get_command(cli.app)
    cmd = group
    for name in command:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    helps = {o: p.help for p in cmd.params for o in p.opts}
    for opt in options:
        assert helps[opt].endswith(
            "Replaced if it exists; written atomically; never one of the command's inputs."
        ), helps[opt]
    text = " ".join(CliRunner().invoke(cli.app, [*command, "--help"]).stdout.split())
    assert text.count("Replaced if it exists; written atomically; never one of the") == len(options)
