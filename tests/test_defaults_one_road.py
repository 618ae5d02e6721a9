"""One default for one question: with no rank or node count given, a memory or step question is
asked over one node on every surface (``costmodel.hardware.DEFAULT_NODES``): one node of the
cluster given or assumed, its GPUs per node (or the slice asked for), and 8 GPUs, the default
cluster's node, where no hardware is given at all. ``costmodel memory``, ``costmodel step``'s
memory line, the API (``Layout``, ``strategy_memory``, ``strategy_step``, ``Scenario``), the
memory sweep and the Memory page give the same ranks and the same total bytes per GPU."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, hardware, presets
from costmodel.strategy.memory import strategy_memory
from tests.test_app import assert_clean, metrics, open_page

ARCH = "llama-3.1-8b"


def _json(command: str, *args: str) -> tuple[dict, str]:
    r = CliRunner().invoke(cli.app, [command, "--arch", ARCH, *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), r.stderr


def test_the_default_node_is_the_default_clusters_node():
    # the 8 GPUs assumed without hardware are the node of the cluster step, scenario, train
    # and strategy_step assume: a change to one of them shows here
    default = cm.Scenario.model_fields["cluster"].default
    assert inspect.signature(cm.strategy_step).parameters["cluster"].default == default
    assert hardware.DEFAULT_GPUS_PER_NODE == presets.cluster(default).gpus_per_node
    assert hardware.default_ranks() == hardware.DEFAULT_NODES * presets.cluster(default).ranks
    # and every default node count is the constant
    assert cm.Scenario.model_fields["nodes"].default == hardware.DEFAULT_NODES
    assert inspect.signature(cm.strategy_step).parameters["nodes"].default == hardware.DEFAULT_NODES
    for command in (cli.step, cli.scenario, cli.train):  # the CLI's --nodes (typer's default)
        assert inspect.signature(command).parameters["nodes"].default == hardware.DEFAULT_NODES


@pytest.mark.parametrize("strategy", ["fsdp", "zero1", "ddp", "hsdp"])
def test_memory_without_hardware_is_the_steps_memory_on_its_default_cluster(strategy):
    mem, said = _json("memory", "--strategy", strategy)
    step, _ = _json("step", "--strategy", strategy)
    api = cm.strategy_step(arch=ARCH, strategy=strategy)
    lay = cm.Layout(strategy=strategy)  # ranks not given: one node
    assert mem["ranks"] == step["ranks"] == api.layout.ranks == lay.ranks == 8
    total = strategy_memory(lay, arch=ARCH).total_bytes
    assert mem["memory_bytes"] == pytest.approx(step["memory_bytes"], rel=1e-12)
    assert mem["memory_bytes"] == pytest.approx(api.memory.total_bytes, rel=1e-12)
    assert mem["memory_bytes"] == pytest.approx(total, rel=1e-12)
    # the 8 ranks are an assumption, said once on stderr in step's words
    assert said.strip().splitlines() == [
        "assumed: 8 ranks, one node (the default; --ranks N, or --cluster NAME for one node of "
        "it, for another)"
    ]


def test_memory_on_a_cluster_shards_over_one_node_of_it_as_the_step():
    mem, said = _json("memory", "--zero-stage", "3", "--cluster", "dgx-h100")
    step, _ = _json("step", "--zero-stage", "3", "--cluster", "dgx-h100")
    scen = cm.Scenario(arch=ARCH, zero_stage=3, cluster="dgx-h100").evaluate()
    assert mem["ranks"] == step["ranks"] == scen.ranks == 8
    assert mem["memory_bytes"] == pytest.approx(step["memory_bytes"], rel=1e-12)
    assert mem["memory_bytes"] == pytest.approx(scen.memory_total_bytes, rel=1e-12)
    assert mem["fits"] is True  # 1 rank said "fits: no (71.4 GB over)"
    assert said == ""  # the cluster is given: nothing assumed


def test_memory_on_a_slice_of_a_node_shards_over_the_slice_as_the_step():
    mem, _ = _json("memory", "--zero-stage", "3", "--cluster", "dgx-h100", "--gpus-per-node", "4")
    step, _ = _json("step", "--zero-stage", "3", "--cluster", "dgx-h100", "--gpus-per-node", "4")
    assert mem["ranks"] == step["ranks"] == 4
    assert mem["memory_bytes"] == pytest.approx(step["memory_bytes"], rel=1e-12)
    assert cm.Layout(strategy="fsdp", gpus_per_node=4).ranks == 4


@pytest.mark.parametrize("preset", [None, "dgx-h100"])
def test_the_memory_sweep_without_ranks_is_the_cli_memory(preset):
    args = () if preset is None else ("--cluster", preset)
    mem, _ = _json("memory", "--zero-stage", "3", *args)
    df = cm.sweep(kind="memory", arch=ARCH, zero_stage=3, **({"preset": preset} if preset else {}))
    assert int(df["ranks"].iloc[0]) == mem["ranks"] == 8
    assert df["memory_GB"].iloc[0] * 1e9 == pytest.approx(mem["memory_bytes"], rel=1e-12)


def test_the_memory_pages_default_ranks_are_the_cli_default():
    mem, _ = _json("memory", "--zero-stage", "3")
    at = open_page("page_memory.py", {"arch": ARCH})
    at.radio(key="zero_stage").set_value(3).run()
    assert_clean(at)
    assert at.number_input(key="dp_ranks").value == mem["ranks"] == 8
    assert metrics(at)["Memory per GPU, ZeRO-3"] == cm.units.format_bytes(mem["memory_bytes"])


def test_memory_help_no_longer_says_one_rank():
    r = CliRunner().invoke(cli.app, ["memory", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "sharding the state (default 1)" not in text
    assert "default one node" in text
