"""The step sweep takes every option of `costmodel step --cluster` as an axis (global_tokens,
the global batch in tokens, was missing), each row `step --json`'s answer to the same question;
the one-link step's options are refused with why they are no axis."""

import json

import pytest
import typer

from costmodel import cli
from costmodel import sweep as sw
from costmodel.sweep import grid
from tests._cli import one_line_error, run

BASE = ("--set", "preset=dgx-h100", "--set", "arch=llama-3.1-8b")


def _sweep_rows(*sets: str) -> list[dict]:
    r = run("sweep", "--no-progress", "--kind", "step", *BASE, *sets, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _step(*args: str) -> dict:
    r = run("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


# the columns of a step row that `step --json` writes too (the notes: a list there)
SHARED = (
    "ranks", "micro_batch", "accumulation", "sequence_length", "step_time_s", "compute_s",
    "comm_s", "exposed_comm_s", "tokens_per_step", "tokens_per_s", "memory_GB", "fits",
    "efficiency", "strategy", "layout",
)  # fmt: skip


def _same(row: dict, step: dict) -> None:
    for k in SHARED:
        assert row[k] == step[k], (k, row[k], step[k])
    assert row["global_tokens"] == step["global_tokens"]


# --- global_tokens: each row is `step --global-tokens`'s -------------------------------------


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_global_tokens_rows_are_the_steps_answer(nodes):
    """Micro-batch 1, the accumulation solved per row from its GPUs (4Mi / 4096 / ranks)."""
    rows = _sweep_rows(
        "--set", "strategy=zero1", "--set", "nodes=1,2,4", "--set", "global_tokens=4Mi"
    )
    row = next(r for r in rows if r["nodes"] == nodes)
    assert row["error"] == ""
    assert row["accumulation"] == 1024 // (8 * nodes) and row["micro_batch"] == 1
    _same(row, _step("--strategy", "zero1", "--nodes", str(nodes), "--global-tokens", "4Mi"))


def test_global_tokens_with_micro_batch_solves_the_accumulation():
    rows = _sweep_rows(
        "--set", "strategy=fsdp", "--set", "nodes=2", "--set", "micro_batch=2,4",
        "--set", "global_tokens=2Mi,4Mi", "--set", "seq=2048",
    )  # fmt: skip
    assert len(rows) == 4
    for row in rows:
        step = _step(
            "--strategy", "fsdp", "--nodes", "2", "--micro-batch", str(row["micro_batch"]),
            "--global-tokens", str(row["global_tokens"]), "--seq", "2048",
        )  # fmt: skip
        _same(row, step)
        assert row["global_tokens"] == row["tokens_per_step"]


def test_global_tokens_with_accumulation_solves_the_micro_batch():
    rows = _sweep_rows(
        "--set", "nodes=1", "--set", "accumulation=4,8", "--set", "global_tokens=1Mi"
    )
    assert [r["micro_batch"] for r in rows] == [8, 4]  # 256 sequences / (8 GPUs x acc)
    for row in rows:
        step = _step(
            "--nodes", "1", "--accumulation", str(row["accumulation"]), "--global-tokens", "1Mi"
        )
        _same(row, step)


def test_global_tokens_with_tokens_per_gpu_is_steps_answer():
    rows = _sweep_rows(
        "--set", "nodes=1", "--set", "tokens_per_gpu=8Ki", "--set", "global_tokens=1Mi"
    )
    (row,) = rows
    assert (row["micro_batch"], row["accumulation"]) == (2, 16)
    _same(row, _step("--nodes", "1", "--tokens-per-gpu", "8Ki", "--global-tokens", "1Mi"))


def test_the_api_gives_the_cli_rows():
    """One road: cm.sweep's rows are the CLI sweep's, and each the step's for the same split."""
    from costmodel.strategy import strategy_step

    df = sw.sweep(
        kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=[1, 2], global_tokens="4Mi"
    )
    cli_rows = _sweep_rows("--set", "nodes=1,2", "--set", "global_tokens=4Mi")
    assert df["step_time_s"].tolist() == [r["step_time_s"] for r in cli_rows]
    for row in df.to_dict("records"):
        s = strategy_step(
            arch="llama-3.1-8b", cluster="dgx-h100", nodes=int(row["nodes"]),
            micro_batch=1, accumulation=int(row["accumulation"]), timeline=False,
        )  # fmt: skip
        assert s.step_time_s == row["step_time_s"]
        assert s.tokens_per_step == row["global_tokens"] == 4 * 2**20


def test_a_row_whose_gpus_do_not_split_the_batch_says_why_and_the_others_are_priced():
    """3 nodes (24 GPUs) do not split 1Mi tokens at micro-batch 2: that row's error names the
    axes and the nearest valid values, as `step --global-tokens` refuses it; 1 node is priced."""
    rows = _sweep_rows("--set", "nodes=1,3", "--set", "micro_batch=2", "--set", "global_tokens=1Mi")
    ok, bad = rows
    assert ok["error"] == "" and ok["accumulation"] == 16
    assert bad["error"].startswith(
        "global_tokens: 1048576 / (4096 x 2 x 24) = 5.333 (sequence_length x micro_batch x "
        "ranks) is not a whole number for accumulation; nearest valid: accumulation=5"
    )
    assert bad["accumulation"] is None and bad["micro_batch"] == 2 and bad["ranks"] == 24
    r = run(
        "step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "3",
        "--micro-batch", "2", "--global-tokens", "1Mi",
    )  # fmt: skip
    one_line_error(r, "--global-tokens", "do not split")


def test_global_tokens_in_a_grid_file(tmp_path):
    g = tmp_path / "g.toml"
    g.write_text(
        'kind = "step"\n[grid]\npreset = "dgx-h100"\narch = "llama-3.1-8b"\nnodes = 2\n'
        'global_tokens = ["2Mi", 4194304]\n',
        encoding="utf-8",
    )
    df = sw.sweep(g)
    assert df["global_tokens"].tolist() == [2 * 2**20, 4 * 2**20]
    assert df["accumulation"].tolist() == [32, 64]


# --- bad values: one line naming the key and its range (exit 2) -----------------------------

GT_RULE = "global_tokens: must be a whole number of tokens in 1..1e16, e.g. 4Mi, got"


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("0", (f"--set {GT_RULE} 0",)),
        ("1e17", (f"--set {GT_RULE} 100000000000000000",)),
        ("abc", (f"--set {GT_RULE} 'abc'",)),
        ("1..0", ("--set global_tokens",)),
        # not a whole number of 4096-token sequences: the nearest valid counts, as `batch`
        ("4000000", ("--set global_tokens: 4000000 / 4096 = 976.6 sequences", "4,001,792")),
    ],
)
def test_bad_global_tokens_are_one_line(value, fragments):
    r = run(
        "sweep", "--no-progress", "--kind", "step", *BASE, "--set", "nodes=1",
        "--set", f"global_tokens={value}",
    )  # fmt: skip
    one_line_error(r, *fragments)


def test_the_api_refuses_bad_global_tokens_in_the_same_words():
    with pytest.raises(ValueError, match=f"^{GT_RULE} 0$"):
        sw.sweep(kind="step", preset="dgx-h100", arch="llama-3.1-8b", global_tokens=0)


def test_global_tokens_beside_the_micro_batch_and_the_accumulation_is_refused():
    """Three of the split given: nothing left to solve (`step` refuses the same three)."""
    for micro in ("micro_batch=1", "tokens_per_gpu=4096"):
        r = run(
            "sweep", "--no-progress", "--kind", "step", *BASE, "--set", "nodes=1",
            "--set", "global_tokens=4Mi", "--set", micro, "--set", "accumulation=2",
        )  # fmt: skip
        name = micro.split("=")[0]
        one_line_error(r, f"global_tokens, --set {name}, --set accumulation: give at most two")


# --- every step and memory option is an axis, or says why not --------------------------------


def _options(command: str) -> list[str]:
    cmd = typer.main.get_command(cli.app).commands[command]
    return [p.name for p in cmd.params if p.name not in ("as_json", "help")]


def test_every_step_option_is_a_step_sweep_axis_or_a_one_link_option():
    missing = []
    for name in _options("step"):
        try:
            grid._axis("step", name)
        except ValueError:
            if name not in grid.STEP_LINK_OPTIONS:
                missing.append(name)
    assert missing == []


@pytest.mark.parametrize("key", ["bandwidth", "latency", "gradient_bytes", "peak_flops"])
def test_a_one_link_option_on_a_step_sweep_says_why_it_is_no_axis(key):
    r = run("sweep", "--no-progress", "--kind", "step", *BASE, "--set", f"{key}=1")
    one_line_error(
        r,
        f"--set {key}: unknown step axis '{key}'",
        "a step sweep prices a cluster preset",
        "allowed: ",
    )


def test_grad_dtype_rows_are_the_steps_answer():
    """The gradient dtype is an axis (the cluster step's --grad-dtype; --gradient-bytes is the
    one-link step's): each row is `step --grad-dtype`'s."""
    rows = _sweep_rows(
        "--set", "strategy=zero2", "--set", "nodes=2", "--set", "grad_dtype=fp32,bf16"
    )
    for row in rows:
        step = _step("--strategy", "zero2", "--nodes", "2", "--grad-dtype", row["grad_dtype"])
        for k in ("step_time_s", "comm_s", "memory_GB"):
            assert row[k] == step[k]
    assert rows[0]["comm_s"] > rows[1]["comm_s"]  # fp32 sends twice bf16's bytes


# --- the memory sweep takes `memory --nodes` ---------------------------------------------------


def _memory(*args: str) -> dict:
    r = run("memory", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_every_memory_option_is_a_memory_sweep_axis():
    """`memory --nodes` had no axis (the sweep said it was one of the collective and step
    sweeps); every other option has one under its API name."""
    missing = []
    for name in _options("memory"):
        try:
            grid._axis("memory", name)
        except ValueError:
            missing.append(name)
    assert missing == []


@pytest.mark.parametrize(
    "sets",
    [
        ("arch=llama-3.1-8b", "zero_stage=3"),
        ("arch=llama-3.1-8b", "strategy=hsdp", "gpus_per_node=4"),
        ("params=7B", "strategy=zero1"),
    ],
)
def test_memory_nodes_rows_are_the_memory_commands_answer(sets):
    flags = {
        "arch": "--arch", "params": "--params", "zero_stage": "--zero",
        "strategy": "--strategy", "gpus_per_node": "--gpus-per-node",
    }  # fmt: skip
    args = [x for s in sets for x in (flags[s.split("=")[0]], s.split("=")[1])]
    r = run(
        "sweep", "--no-progress", "--kind", "memory", "--set", "preset=dgx-h100",
        "--set", "nodes=1,2,4", *[x for s in sets for x in ("--set", s)], "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["nodes"] for row in rows] == [1, 2, 4]
    for row in rows:
        mem = _memory(*args, "--cluster", "dgx-h100", "--nodes", str(row["nodes"]))
        for k in ("ranks", "memory_GB", "buffers_GB", "layout", "fits"):
            assert row[k] == mem[k], (k, row[k], mem[k])


def test_memory_nodes_with_strategy_all_lists_each_node_counts_layouts():
    df = sw.sweep(
        kind="memory", preset="dgx-h100", arch="llama-3.1-8b", strategy="all", nodes=[1, 2]
    )
    by_ranks = sw.sweep(
        kind="memory", preset="dgx-h100", arch="llama-3.1-8b", strategy="all", ranks=[8, 16]
    )
    assert df["nodes"].tolist() == [1] * 7 + [2] * 8
    assert df["ranks"].tolist() == by_ranks["ranks"].tolist()
    assert df["layout"].tolist() == by_ranks["layout"].tolist()
    assert df["memory_GB"].tolist() == by_ranks["memory_GB"].tolist()


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        (
            ("preset=dgx-h100", "nodes=0"),
            "--set nodes: must be a whole number in 1..1,000,000, got 0",
        ),
        (("preset=dgx-h100", "nodes=2", "ranks=8"), "--set ranks, --set nodes: give one of them"),
        (("nodes=2",), "--set nodes: needs the GPUs per node: set preset=NAME"),
    ],
)
def test_bad_memory_nodes_are_one_line(sets, said):
    r = run(
        "sweep", "--no-progress", "--kind", "memory", "--set", "params=7B",
        *[x for s in sets for x in ("--set", s)],
    )  # fmt: skip
    one_line_error(r, said)
