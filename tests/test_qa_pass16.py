"""QA pass 16: a new planning user's walk through the CLI and the API (an all-reduce on 64 H100s,
the algorithm choice, a 70B fit under each strategy, days and dollars, tokens-first batches, a
Hugging Face config, sweeps and presets), with odd inputs on each. Each defect found is pinned
here with the surface it was typed on."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import costmodel as cm
from costmodel.strategy.memory import (
    largest_count_that_fits,
    layout_max_params,
    stage_max_params,
)
from costmodel.training import _prices

from ._cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "hf_configs"


# --- the largest model that fits is a whole parameter count ---------------------------------------
@pytest.mark.parametrize(
    ("memory_bytes", "whole"),
    [(20.0, 1.0), (40.0, 2.0), (47.0, 2.0), (10.0, 0.0), (80e9, 5e9), (85.5e9, 5_343_750_000.0)],
)
def test_max_params_is_a_whole_count_of_parameters(memory_bytes, whole):
    """A 20 B card under mixed-precision Adam (16 B a parameter) holds one parameter: the API
    said 1.25, and ``costmodel memory --gpu-memory 20B`` printed "1.25 params"."""
    assert cm.max_params(memory_bytes) == whole
    assert float(cm.max_params([memory_bytes])[0]) == whole  # the array road agrees
    assert stage_max_params(memory_bytes, 0, 1) == whole  # the memory command's road


def test_max_params_whole_counts_sit_on_the_edge_of_the_card():
    """The whole count fits and one parameter more does not, on sharded and unsharded layouts."""
    for stage, ranks, act in [(0, 1, 0.0), (3, 7, 3.3e9), (1, 64, 12.5e9), (2, 3, 1e9)]:
        p = cm.max_params(85.5e9, zero_stage=stage, dp_ranks=ranks, activations_bytes=act)
        assert p == int(p) and p > 0

        def need(n, stage=stage, ranks=ranks, act=act):
            m = cm.training_memory(n, zero_stage=stage, dp_ranks=ranks, activations_bytes=act)
            return float(m.total_bytes)

        assert need(p) <= 85.5e9 < need(p + 1)


def test_the_search_for_the_largest_count_ends_on_a_whole_count():
    # 16 P + 4 <= 100: P = 6 (6.0 exactly, not the bisection's 6.0000000x)
    assert largest_count_that_fits(lambda p: 16.0 * p + 4.0, 100.0, 16.0) == 6.0
    # a total with a step in it (a buffer that appears past 1000): the last count before it
    assert largest_count_that_fits(lambda p: p + (50.0 if p > 1000 else 0.0), 1020.0, 1.0) == 1000
    assert largest_count_that_fits(lambda p: 16.0 * p + 200.0, 100.0, 16.0) == 0.0


def test_memory_prints_one_param_and_says_why_not_even_one_fits():
    r = run("memory", "--params", "1", "--gpu-memory", "20B")
    assert r.exit_code == 0, r.stderr
    assert re.search(r"largest model that fits\s+1 param$", r.stdout, re.M), r.stdout
    r = run("memory", "--params", "1", "--gpu-memory", "10B", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["max_params"] == 0.0
    # the card has room beside nothing: it is the parameter's own 16 B that does not fit (it
    # said "0 B per GPU are taken before any weight", which is no reason)
    assert "its training state is larger than the 10 B left" in d["max_params_note"]
    r = run("memory", "--params", "7B", "--gpu-memory", "20B", "--json")
    assert json.loads(r.stdout)["max_params"] == 1.0


def test_scenario_and_memory_give_one_largest_model():
    """Scenario.evaluate().max_params came from the lesson's affine state alone: 228B for
    llama-3.1-8b's activations under fsdp on 64 H100s where ``costmodel memory`` (with FSDP's
    gathered units) said 169B. Both now search the layout's own total."""
    for strategy, zero in [("fsdp", 3), ("hsdp", 3), ("zero1", 1), ("ddp", 0)]:
        sc = cm.Scenario(arch="llama-3.1-8b", nodes=8, strategy=strategy)
        res = sc.evaluate(scaling=False, flips=False, timeline=False)
        r = run(
            "memory", "--arch", "llama-3.1-8b", "--ranks", "64", "--strategy", strategy,
            "--cluster", "dgx-h100", "--json",
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        mem = json.loads(r.stdout)
        assert mem["zero_stage"] == zero
        assert res.max_params == mem["max_params"], strategy
        assert res.max_params == int(res.max_params)
        # and it is the largest count whose memory fits beside these activations
        lay = sc.layout()
        p = layout_max_params(
            res.gpu_memory_bytes, lay, activations_bytes=mem["activations_GB"] * 1e9
        )
        assert p == res.max_params


# --- a config.json with absurd layer or expert counts is refused, not built -----------------------
def _config(tmp_path, **changes):
    cfg = json.loads((HF / "mixtral-8x7b" / "config.json").read_text())
    cfg.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"num_hidden_layers": 10**12}, "1,000,000,000,000 layers"),
        ({"num_local_experts": 10**9}, "1,000,000,000 experts"),
        ({"num_hidden_layers": 10**6, "num_local_experts": 8}, "1,000,000 layers"),
    ],
)
def test_an_absurd_layer_or_expert_count_is_refused_at_once(tmp_path, changes, named):
    """``memory --arch config.json`` with num_hidden_layers 1e12 (accepted: 1..1e12) built the
    tensor list one layer at a time until it held 11 GB and ran on; a billion experts did too."""
    path = _config(tmp_path, **changes)
    t0 = time.perf_counter()
    r = run("memory", "--arch", str(path), "--cluster", "dgx-h100")
    line = one_line_error(r, "--arch", named, "at most 1,000,000")
    assert time.perf_counter() - t0 < 10, line
    with pytest.raises(ValueError, match="an architecture lists at most"):
        cm.Scenario(arch=str(path)).evaluate()


def test_every_shipped_and_test_architecture_is_within_the_tensor_bound():
    from costmodel.architecture import MAX_TENSORS, TENSORS_PER_EXPERT, TENSORS_PER_LAYER_BOUND

    for path in sorted(HF.glob("*/config.json")):
        a = cm.load_hf_config(path) if hasattr(cm, "load_hf_config") else None
        if a is None:
            from costmodel.hf_config import load_hf_config

            a = load_hf_config(path)
        per_layer = TENSORS_PER_LAYER_BOUND + TENSORS_PER_EXPERT * (a.experts + a.shared_experts)
        # the bound is a bound: the real list (embedding, head, norms) is shorter
        assert len(a.tensors()) <= a.layers * per_layer <= MAX_TENSORS, path


# --- per-GPU prices of machines rented whole say so ---------------------------------------------
def _shape_gpus(description: str) -> int | None:
    m = re.search(r"\((\d+)x ", description)
    return int(m.group(1)) if m else None


def test_a_per_gpu_price_of_a_machine_rented_whole_says_so():
    """OCI lists bare-metal shapes (BM.GPU.H100.8: 8 H100s) per GPU-hour and rents only the whole
    machine; the presets said "per GPU-hour" and nothing of the machine, and train's price line
    read "$10/h per instance" for an instance of eight GPUs."""
    found = []
    for name, p in _prices().items():
        n = _shape_gpus(p.description)
        if p.gpus_per_instance == 1 and n is not None and n > 1:
            found.append(name)
            assert f"rented only as the whole {n}-GPU machine" in p.description, name
            assert f"(${n * p.usd_per_gpu_hour:g}/h)" in p.description, name
    assert {"oci-h100-on-demand", "oci-h200-on-demand", "oci-b200-on-demand"} <= set(found)


def test_train_names_what_the_price_is_per():
    r = run("train", "--params", "7B", "--tokens", "1T", "--price", "oci-h100-on-demand")
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("price: "))
    assert "$10.00/h per GPU (on-demand)" in line and "whole 8-GPU machine ($80/h)" in line
    assert "per instance" not in line
    r = run("train", "--params", "7B", "--tokens", "1T", "--price", "aws-p5-on-demand")
    line = next(x for x in r.stdout.splitlines() if x.startswith("price: "))
    assert "$55.04/h per 8-GPU instance ($6.88 per GPU-hour)" in line


# --- absurd but allowed inputs print readable numbers ---------------------------------------------
def test_a_step_of_astronomical_length_is_printed_in_exponent_notation():
    """``scenario --params 7B --mfu 1e-300`` printed its step as 297 digits with separators,
    the last 280 of them float rounding noise ("174,000,...,010,622,845,..."). An MFU below
    0.1% is refused now (``_limits.MIN_MFU``); the largest setup at that floor still prices a
    step past 1e15 s, which reads in exponent notation."""
    r = run("scenario", "--arch", "llama-3.1-405b", "--mfu", "0.001", "--micro-batch", "1000000",
            "--seq", "100000000")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert re.search(r"step time\s+2\.51e\+17 s", r.stdout), r.stdout
    assert not re.search(r"\d{1,3}(,\d{3}){6,}", r.stdout)  # no number of 19+ digits
    # and where it came from: "given MFU 0.00" hid the MFU given
    assert "given MFU 0.001" in r.stdout
    assert cm.units.format_duration(3.99e5) == "399,000 s"  # plain digits below 1e15, as before
    assert cm.units.format_duration(2e15) == "2e+15 s"


def test_train_refuses_an_endless_step_with_its_days_readable_and_the_mfu_named():
    r = run("train", "--params", "7B", "--mfu", "1e-300", "--tokens", "1T")
    one_line_error(r, "--mfu: must be a model FLOP utilisation in [0.001, 1], got 1e-300")
    r = run("train", "--params", "7B", "--zero", "3", "--mfu", "0.001", "--micro-batch",
            "1000000", "--tokens", "1T")  # fmt: skip
    line = one_line_error(r, "step time", "2,117.9 days", "raise the given MFU (0.001)")
    assert len(line) < 400


# --- a Cluster built with its nodes keeps them ----------------------------------------------------
def test_a_cluster_object_keeps_its_nodes_on_every_prediction_road():
    """``cm.cluster("dgx-h100", nodes=8)`` is 64 GPUs, and ``cm.allreduce_time(M, c)`` answered
    for 64; ``cm.predict_collective(op, M, c)`` and ``predict_all_algorithms`` took their own
    ``nodes=1`` default and silently answered for one node of 8 GPUs (50 ms for 14 GB, not the
    74 ms ``collective --cluster dgx-h100 --nodes 8`` prints)."""
    from costmodel.predict import allreduce_time_fn, compare_models

    c = cm.cluster("dgx-h100", nodes=8)
    cli = json.loads(
        run("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes", "8",
            "--json").stdout
    )  # fmt: skip
    row = cli["results"][0]
    p = cm.predict_collective("all_reduce", 14e9, c)
    assert (p.ranks, p.nodes) == (64, 8)
    assert float(p.time_s) == pytest.approx(row["time_s"], rel=1e-12)
    assert cm.predict_all_algorithms("all_reduce", 14e9, c).ranks == 64
    assert float(compare_models("all_reduce", [14e9], c)["time_s[nccl]"].iloc[0]) == float(p.time_s)
    assert float(allreduce_time_fn(c)(14e9)) == float(p.time_s)
    assert float(cm.allreduce_time(14e9, c, model="nccl")) == float(p.time_s)
    # an explicit node count still wins, and a preset name is still one node
    assert cm.predict_collective("all_reduce", 14e9, c, nodes=1).ranks == 8
    assert cm.predict_collective("all_reduce", 14e9, "dgx-h100").ranks == 8
    with pytest.raises(ValueError, match="nodes: must be a whole number"):
        cm.predict_collective("all_reduce", 14e9, c, nodes=0)


def test_a_preset_named_is_still_one_node_even_where_its_file_records_more():
    # coreweave-hgx-h100's file records the 16 nodes of its bundled run; by name it is one node
    assert cm.cluster("coreweave-hgx-h100").nodes == 1
    assert cm.predict_collective("all_reduce", 1e9, "coreweave-hgx-h100").nodes == 1


# --- train without a price says how to get the dollars --------------------------------------------
def test_train_without_a_price_says_how_to_get_the_dollars():
    """``train --tokens 2T`` printed days and GPU-hours and no cost row at all, no word of why;
    the app shows a placeholder price, the sweep's cost_note says "no price given"."""
    r = run("train", "--arch", "llama-2-7b", "--tokens", "2T", "--nodes", "8", "--zero", "1")
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("cost "))
    assert "no price given: --usd-per-gpu-hour, or --price" in line
    assert "presets for h100-sxm" in line and "e.g. aws-p5-capacity-block" in line
    r = run("train", "--params", "1B", "--tokens", "1B", "--cluster", "pcie3-2x-rtx2080ti-nop2p")
    assert r.exit_code == 0, r.stderr
    assert "(no price preset is published for rtx-2080ti)" in r.stdout


def test_the_price_list_keeps_its_columns_for_prices_of_ten_dollars_and_more():
    lines = [x for x in run("archs").stdout.splitlines() if "/GPU-h" in x]
    assert any("$11.0612/GPU-h" in x for x in lines) and any("$4.858/GPU-h" in x for x in lines)
    # on the decimal point (tests/test_qa_pass33.py), the unit beside each price
    assert len({x.index(".", x.index("$")) for x in lines}) == 1
    assert len({x.index("(as of") for x in lines}) == 1


# --- the GPU count typed in the other command's spelling ----------------------------------------
@pytest.mark.parametrize(
    ("ranks_args", "nodes_args"),
    [
        (("train", "--params", "7B", "--tokens", "1T", "--ranks", "64"), ("--nodes", "8")),
        (("scenario", "--params", "7B", "--ranks=64"), ("--nodes", "8")),
    ],
)
def test_the_gpu_count_in_another_commands_spelling_is_the_same_job(ranks_args, nodes_args):
    """``memory --cluster dgx-h100 --nodes 8`` (as step and train take it) got "No such option:
    --nodes (Possible options: --loss, --model, --no-reshard)"; memory and batch take
    ``--nodes`` with ``--cluster`` (tests/test_qa_pass17.py), and train and scenario now take
    ``--ranks`` as whole nodes of the cluster (tests/test_cli_qa_pass17.py): the same answer."""
    by_ranks = run(*ranks_args)
    by_nodes = run(*[a for a in ranks_args if "ranks" not in a and a != "64"], *nodes_args)
    assert by_ranks.exit_code == by_nodes.exit_code == 0, by_ranks.stderr + by_nodes.stderr
    assert by_ranks.stdout == by_nodes.stdout


def test_the_single_gpu_gh200_instance_says_its_price_is_the_whole_instances():
    p = _prices()["lambda-gh200-on-demand"]
    assert p.gpus_per_instance == 1 and "one GPU per instance" in p.description


def test_a_node_count_a_preset_cannot_take_names_the_preset():
    """A step sweep over dgx-h100 and a two-GPU box with nodes=1,2 was refused with "nodes=2 but
    the node has no network" and no word of which of the presets has none."""
    grid = ("sweep", "--kind", "step", "--set", "preset=dgx-h100,pcie3-2x-rtx2080ti-nop2p",
            "--set", "arch=llama-3.1-8b", "--set", "nodes=1,2", "--no-progress")  # fmt: skip
    r = run(*grid, "--set", "strategy=all")  # every layout of every row: refused up front
    one_line_error(r, "--set nodes", "has no network", "(pcie3-2x-rtx2080ti-nop2p)")
    r = run(*grid)  # one layout: the row fails, its error column says whose node it is
    assert r.exit_code == 0, r.stderr
    assert "a node with NICs (pcie3-2x-rtx2080ti-nop2p)" in r.stdout
