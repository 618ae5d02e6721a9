"""Planner inputs, second pass: the memory sweep and the Memory page take a strategy as
``costmodel memory --strategy`` does, ``scenario --global-tokens --vs`` compares at one global
batch, a step sweep's time-to-train columns carry the MFU and GPU-hour and dollar bands of
``train``, and ``scenario --precision`` refuses a bad name in one line. Each answer is checked
against the surface that already gave it, so one question keeps one number."""

from __future__ import annotations

import json

import numpy as np
import pytest

import costmodel as cm
from costmodel import batch, presets
from costmodel.units import format_bytes

from ._cli import one_line_error, run
from .test_app import assert_clean, metrics, open_page

ARCH = "llama-3.1-8b"


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- scenario --global-tokens --vs: B at A's global batch ------------------------------------
def test_vs_compares_at_the_global_batch_given_in_tokens():
    d = _json("scenario", "--arch", ARCH, "--nodes", "4", "--zero", "1", "--global-tokens",
              "4Mi", "--vs", "nodes=16")  # fmt: skip
    a, b = d["a"], d["b"]
    assert a["tokens_per_step"] == b["tokens_per_step"] == 4 * 2**20
    # A: 1,024 sequences over 32 GPUs at micro-batch 1 -> accumulation 32; B: 128 GPUs -> 8
    sol = batch.solve_batch(local_batch=1, ranks=128, global_tokens=4 * 2**20, sequence_length=4096)
    assert (a["scenario"]["local_batch"], a["scenario"]["accumulation"]) == (1, 32)
    assert (b["scenario"]["local_batch"], b["scenario"]["accumulation"]) == (
        sol.local_batch, sol.accumulation,
    ) == (1, 8)  # fmt: skip
    # B is the scenario asked at that split directly: the same step
    direct = _json("scenario", "--arch", ARCH, "--nodes", "16", "--zero", "1",
                   "--accumulation", "8")  # fmt: skip
    assert b["step_time_s"] == direct["step_time_s"]
    text = run("scenario", "--arch", ARCH, "--nodes", "4", "--zero", "1", "--global-tokens",
               "4Mi", "--vs", "nodes=16").stdout  # fmt: skip
    assert "(A with nodes=16; micro-batch 1 x accumulation 8 solved from --global-tokens)" in text


def test_vs_keeps_the_accumulation_a_was_given_and_what_vs_changes():
    # A given its accumulation: B keeps it and solves its micro-batch
    d = _json("scenario", "--arch", ARCH, "--nodes", "4", "--zero", "1", "--global-tokens",
              "4Mi", "--accumulation", "2", "--vs", "nodes=16")  # fmt: skip
    assert (d["a"]["scenario"]["local_batch"], d["a"]["scenario"]["accumulation"]) == (16, 2)
    assert (d["b"]["scenario"]["local_batch"], d["b"]["scenario"]["accumulation"]) == (4, 2)
    # --vs changes the micro-batch: that one is B's, its accumulation solved
    d = _json("scenario", "--arch", ARCH, "--nodes", "4", "--zero", "1", "--global-tokens",
              "4Mi", "--vs", "nodes=16,micro_batch=2")  # fmt: skip
    assert (d["b"]["scenario"]["local_batch"], d["b"]["scenario"]["accumulation"]) == (2, 4)
    assert d["b"]["tokens_per_step"] == 4 * 2**20


def test_tokens_per_gpu_stays_per_gpu_on_b():
    d = _json("scenario", "--arch", ARCH, "--nodes", "2", "--tokens-per-gpu", "8Ki", "--vs",
              "nodes=4")  # fmt: skip
    assert d["a"]["scenario"]["local_batch"] == d["b"]["scenario"]["local_batch"] == 2
    assert d["b"]["tokens_per_step"] == 2 * d["a"]["tokens_per_step"]


@pytest.mark.parametrize(
    ("vs", "fragments"),
    [
        ("nodes=6", ["--global-tokens", "4,194,304 tokens", "1,024 sequences", "B's 48 GPUs",
                     "accumulation=21"]),
        ("nodes=64", ["--global-tokens", "B's 512 GPUs", "accumulation=1"]),
        ("seq=3000", ["--global-tokens", "3000", "--vs seq", "4,128,000"]),  # splits over GPUs too
        ("nodes=16,micro_batch=2,accumulation=2",
         ["--vs micro_batch", "--vs accumulation", "4,194,304 tokens"]),
    ],
)  # fmt: skip
def test_b_that_cannot_split_the_global_batch_is_refused_in_one_line(vs, fragments):
    tokens = "1Mi" if vs == "nodes=64" else "4Mi"
    one_line_error(
        run("scenario", "--arch", ARCH, "--nodes", "4", "--global-tokens", tokens, "--vs", vs),
        *fragments,
    )


# --- scenario --precision: one line, the value typed ----------------------------------------
@pytest.mark.parametrize("command", ["scenario", "train", "step"])
def test_a_bad_precision_is_refused_naming_the_value(command):
    extra = {"train": ["--tokens", "1T"], "step": ["--cluster", "dgx-h100"]}.get(command, [])
    line = one_line_error(
        run(command, "--arch", ARCH, "--nodes", "2", *extra, "--precision", "fp9"),
        "--precision", "'fp9'", "bf16", "fp8",
    )  # fmt: skip
    assert "Input should be" not in line  # not pydantic's words


# --- sweep: MFU and the GPU-hour and dollar bands of train ----------------------------------
@pytest.fixture(scope="module")
def priced() -> object:
    return cm.sweep(
        kind="step",
        preset="dgx-h100,dgx-b200",
        arch=ARCH,
        strategy="zero1",
        nodes="2,4",
        tokens="1T",
        price="aws-p5-on-demand",
    )


def test_sweep_row_has_trains_mfu_and_bands(priced):
    row = priced[(priced.preset == "dgx-h100") & (priced.nodes == 4)].iloc[0]
    t = _json(
        "train", "--arch", ARCH, "--tokens", "1T", "--nodes", "4", "--strategy", "zero1",
        "--price", "aws-p5-on-demand",
    )  # fmt: skip
    assert row["mfu"] == pytest.approx(t["mfu"], rel=1e-12)
    assert [row["gpu_hours_lo"], row["gpu_hours_hi"]] == pytest.approx(t["gpu_hours_band"])
    assert [row["cost_usd_lo"], row["cost_usd_hi"]] == pytest.approx(t["cost_usd_band"])
    # the bands are the days' band in GPU-hours and dollars: one band, three units
    for end in ("lo", "hi"):
        assert row[f"gpu_hours_{end}"] == pytest.approx(row[f"wall_days_{end}"] * 24 * row.ranks)
        assert row[f"cost_usd_{end}"] == pytest.approx(
            row[f"gpu_hours_{end}"] * row.usd_per_gpu_hour
        )
    assert row.wall_days_lo < row.wall_days < row.wall_days_hi


def test_unpriced_rows_have_hour_bands_but_no_dollar_band(priced):
    bare = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="zero1", tokens="1T")
    assert (bare.gpu_hours_lo < bare.gpu_hours).all() and (bare.gpu_hours < bare.gpu_hours_hi).all()
    assert bare.cost_usd_lo.isna().all() and bare.cost_usd_hi.isna().all()
    # a row with no band (its band_note says why) has none in hours or dollars either
    b200 = priced[priced.preset == "dgx-b200"]
    unknown = b200[b200.band_note != ""]
    assert len(unknown) and unknown.wall_days_lo.isna().all() and unknown.gpu_hours_lo.isna().all()
    assert (b200.mfu > 0).all() and (b200.mfu < 1).all()


def test_fp8_row_mfu_is_of_the_fp8_peak():
    df = cm.sweep(kind="step", preset="dgx-h100", arch=ARCH, strategy="zero1", nodes="2",
                  tokens="1T", precision="bf16,fp8")  # fmt: skip
    for prec in ("bf16", "fp8"):
        t = _json("train", "--arch", ARCH, "--tokens", "1T", "--nodes", "2", "--strategy",
                  "zero1", "--precision", prec)  # fmt: skip
        assert df[df.precision == prec].mfu.iloc[0] == pytest.approx(t["mfu"], rel=1e-12)


def test_sweep_mfu_with_a_given_mfu_and_a_bare_count():
    df = cm.sweep(kind="step", preset="dgx-h100", params="7B", strategy="fsdp", nodes="2",
                  mfu="0.3", tokens="1T")  # fmt: skip
    t = _json("train", "--params", "7B", "--tokens", "1T", "--nodes", "2", "--strategy", "fsdp",
              "--mfu", "0.3")  # fmt: skip
    assert df.mfu.iloc[0] == pytest.approx(t["mfu"], rel=1e-12)
    assert np.isfinite(df.gpu_hours_lo.iloc[0])


# --- memory: one strategy choice on the CLI, the memory sweep and the Memory page ------------
CARD = f"{presets.load('h100-sxm', 'gpu').memory_bytes}B"  # the Memory page's default GPU

# (CLI options, sweep axes, (ZeRO stage, ZeRO-3 as, HSDP group, reshard) on the page)
LAYOUTS = {
    "hsdp g=8": (["--strategy", "hsdp", "--group-size", "8", "--ranks", "32"],
                 {"strategy": "hsdp", "group_size": "8", "ranks": "32"}, (3, "hsdp", 8, True)),
    "fsdp (no reshard)": (["--strategy", "fsdp", "--no-reshard", "--ranks", "16"],
                          {"strategy": "fsdp", "reshard": "false", "ranks": "16"},
                          (3, "fsdp", None, False)),
    "zero2": (["--strategy", "zero2", "--ranks", "16"], {"strategy": "zero2", "ranks": "16"},
              (2, None, None, None)),
}  # fmt: skip


def _page(query: dict, stage: int, as3: str | None, group: int | None, reshard: bool | None):
    at = open_page("page_memory.py", query)
    at.radio(key="zero_stage").set_value(stage).run()
    if as3 is not None:
        at.radio(key="mem_strategy").set_value(as3).run()
    if group is not None:
        at.number_input(key="mem_group").set_value(group).run()
    if reshard is False:
        at.checkbox(key="mem_reshard").uncheck().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_one_layout_one_number_on_memory_the_sweep_and_the_page(name):
    cli_args, axes, (stage, as3, group, reshard) = LAYOUTS[name]
    d = _json("memory", "--arch", ARCH, *cli_args, "--gpu-memory", CARD)
    assert d["layout"] == name
    (row,) = cm.sweep(kind="memory", arch=ARCH, gpu_memory=CARD, **axes).to_dict("records")
    assert row["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)
    assert row["buffers_GB"] == pytest.approx(d["buffers_GB"], rel=1e-12)
    for key in ("strategy", "layout", "zero_stage", "fits"):
        assert row[key] == d[key], key
    if d["group_size"] is not None:
        assert row["group_size"] == d["group_size"]
    at = _page({"arch": ARCH, "dp_ranks": str(d["ranks"])}, stage, as3, group, reshard)
    assert metrics(at)[f"Memory per GPU, ZeRO-{stage}"] == format_bytes(d["memory_bytes"])
    assert any(f"step prices {name} (ZeRO-{stage})" in c.value for c in at.caption)
    # and the step prices the same layout's memory
    nodes = str(d["ranks"] // 8)
    step = _json("step", "--arch", ARCH, *cli_args[:-2], "--nodes", nodes, "--cluster", "dgx-h100")
    assert step["memory_bytes"] == pytest.approx(d["memory_bytes"], rel=1e-12)


def test_a_bare_count_under_hsdp_on_the_three_surfaces():
    d = _json("memory", "--params", "7B", "--strategy", "hsdp", "--group-size", "8", "--ranks",
              "64", "--gpu-memory", CARD)  # fmt: skip
    df = cm.sweep(kind="memory", params="7B", strategy="hsdp", group_size="8",
                  ranks="16,64", gpu_memory=CARD)  # fmt: skip
    # sharded over the group, not the ranks: both rank counts are the CLI's number
    assert np.allclose(df.memory_GB * 1e9, d["memory_bytes"], rtol=1e-12)
    assert d["model_state_bytes"] == pytest.approx(16 * 7e9 / 8)
    at = _page({"arch": "custom (parameter count)", "params": "7B", "dp_ranks": "64",
                "activations": "false"}, 3, "hsdp", 8, True)  # fmt: skip
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(d["memory_bytes"])
    # no fewest ranks for hsdp: the CLI's reason, in the page's 'Ranks needed' table
    at.session_state["table_ranks_needed"] = True
    at = at.run()
    notes = next(x.value for x in at.dataframe if "note" in x.value.columns)
    zero3 = notes[notes["ZeRO stage"] == 3].iloc[0]
    assert zero3["note"] == d["min_ranks_note"].replace("--group-size", "HSDP group [GPUs]")


def test_hsdp_group_defaults_to_one_node_of_the_preset():
    d = _json("memory", "--arch", ARCH, "--strategy", "hsdp", "--ranks", "32", "--cluster",
              "dgx-h100")  # fmt: skip
    (row,) = cm.sweep(kind="memory", arch=ARCH, strategy="hsdp", ranks="32",
                      preset="dgx-h100").to_dict("records")  # fmt: skip
    assert row["group_size"] == d["group_size"] == 8 and row["layout"] == "hsdp g=8"
    assert row["memory_GB"] * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)


def test_zero_stage_sweeps_are_the_strategies_of_their_stages():
    by_stage = cm.sweep(kind="memory", params="7B", zero_stage="0,1,2,3", ranks="8")
    by_name = cm.sweep(kind="memory", params="7B", strategy="ddp,zero1,zero2,fsdp", ranks="8")
    assert list(by_stage.strategy) == list(by_name.strategy) == ["ddp", "zero1", "zero2", "fsdp"]
    assert list(by_stage.zero_stage) == list(by_name.zero_stage) == [0, 1, 2, 3]
    assert np.array_equal(by_stage.memory_GB, by_name.memory_GB)


def test_cli_memory_sweep_takes_the_strategy(tmp_path):
    out = tmp_path / "m.csv"
    r = run("sweep", "--kind", "memory", "--set", "params=7B,70B", "--set", "strategy=hsdp",
            "--set", "group_size=8,16", "--set", "ranks=64", "--set", "reshard=false",
            "-o", str(out), "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    from costmodel.sweep import read_table

    df = read_table(out)
    assert sorted(set(df.layout)) == ["hsdp g=16 (no reshard)", "hsdp g=8 (no reshard)"]
    for row in df.itertuples():
        d = _json("memory", "--params", f"{row.params:g}", "--strategy", "hsdp", "--group-size",
                  str(row.group_size), "--ranks", "64", "--no-reshard")  # fmt: skip
        assert row.memory_GB * 1e9 == pytest.approx(d["memory_bytes"], rel=1e-12)


@pytest.mark.parametrize(
    ("sets", "fragments"),
    [
        # ranks and no node: the group is asked for (no ranks: the default node, as `memory`)
        (["strategy=hsdp", "ranks=16"], ["group_size", "hsdp without preset", "group_size=8"]),
        (["strategy=hsdp", "group_size=3", "ranks=64"],
         ["group_size", "3 does not divide the 64 ranks", "1, 2, 4, 8, 16, 32, 64"]),
        # the default group (one node) named as the default, not as a group the user typed
        (["strategy=hsdp", "preset=dgx-h100", "ranks=12"],
         ["group_size", "the default, one node's 8 GPUs, does not divide the 12 ranks"]),
        (["strategy=fsdp", "zero_stage=1"], ["zero_stage", "strategy", "not both"]),
        (["group_size=8"], ["group_size", "strategy"]),
        (["strategy=zero1", "group_size=8"], ["group_size", "only hsdp"]),
        (["strategy=zero2", "reshard=false"], ["--set reshard", "fsdp"]),
        (["strategy=tp"], ["strategy", "'tp'", "hsdp"]),
    ],
)  # fmt: skip
def test_memory_sweep_refuses_a_layout_memory_refuses(sets, fragments):
    args = [x for kv in ["params=7B", *sets] for x in ("--set", kv)]
    one_line_error(run("sweep", "--kind", "memory", *args, "--no-progress"), *fragments)


def test_page_names_the_group_box_when_it_does_not_divide_the_ranks():
    at = open_page("page_memory.py", {"arch": ARCH, "dp_ranks": "32"})
    at.radio(key="zero_stage").set_value(3).run()
    at.radio(key="mem_strategy").set_value("hsdp").run()
    at.number_input(key="mem_group").set_value(3).run()
    assert_clean(at)
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "HSDP group [GPUs]" in said and "3 does not divide the 32 ranks" in said


def test_the_url_restores_the_zero3_layout():
    """Every layout box is in the URL: a shared link shows the same layout and number."""
    d = _json("memory", "--arch", ARCH, "--strategy", "hsdp", "--group-size", "8", "--ranks",
              "32", "--no-reshard", "--gpu-memory", CARD)  # fmt: skip
    at = open_page("page_memory.py", {"arch": ARCH, "dp_ranks": "32", "zero_stage": "3 (FSDP)",
                                      "mem_strategy": "hsdp", "mem_group": "8",
                                      "mem_reshard": "false"})  # fmt: skip
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert metrics(at)["Memory per GPU, ZeRO-3"] == format_bytes(d["memory_bytes"])
    assert any("step prices hsdp g=8 (no reshard) (ZeRO-3)" in c.value for c in at.caption)
