"""DDP's ``gradient_as_bucket_view``: a ddp layout option that drops DDP's bucket copy.

PyTorch's ``DistributedDataParallel(..., gradient_as_bucket_view=True)`` makes the gradients
views into the all-reduce buckets, which "can reduce peak memory usage, where the saved memory
size will be equal to the total gradients size" (torch docs). The model had no such option:
ddp memory always held the bucket copy, so a user planning DDP memory for a large model with
the view on was told ``P g`` more per GPU than the job holds. Now it is a ``Layout`` option of
ddp only (refused on the other strategies, as ``reshard_after_forward`` is refused off
fsdp/hsdp), through the one road of the API, the CLI, the sweeps and the app.

Each test failed before the option existed.
"""

from __future__ import annotations

import json
import logging

import pytest

import costmodel as cm
from costmodel import architecture, memory
from costmodel.strategy.layout import LAYOUT_KEYS, Layout, make_layout
from costmodel.strategy.memory import stage_buffers_bytes, stage_memory, strategy_memory
from costmodel.sweep import read_table, sweep_to_file
from costmodel.units import format_bytes
from tests._cli import one_line_error, run
from tests.test_app import assert_clean, open_page

logging.getLogger("streamlit").setLevel(logging.ERROR)

ARCH, PRESET, NODES = "llama-3.1-8b", "dgx-h100", 2
RANKS = 16
P = float(architecture.load_arch(ARCH).params)
# the bucket copy, worked out from the recipe (mixed-adam's bf16 gradients), not the code
COPY = P * memory.RECIPES["mixed-adam"].gradient_bytes


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_the_view_drops_exactly_the_bucket_copy_and_nothing_else() -> None:
    off = strategy_memory(Layout(strategy="ddp", ranks=RANKS), arch=ARCH)
    on = strategy_memory(
        Layout(strategy="ddp", ranks=RANKS, gradient_as_bucket_view=True), arch=ARCH
    )
    assert off.buffers_bytes == COPY
    assert on.buffers_bytes == 0.0
    assert off.total_bytes - on.total_bytes == COPY
    assert on.base.total_bytes == off.base.total_bytes  # the state and activations unchanged
    # the copy is in the reduction dtype: fp32 gradients save 4 B per parameter
    fp32 = dict(strategy="ddp", ranks=RANKS, grad_dtype="fp32")
    saved = (
        strategy_memory(Layout(**fp32), 7e9).total_bytes
        - strategy_memory(Layout(**fp32, gradient_as_bucket_view=True), 7e9).total_bytes
    )
    assert saved == 7e9 * 4
    # False is PyTorch's default: the same layout as leaving it unset
    same = strategy_memory(
        Layout(strategy="ddp", ranks=RANKS, gradient_as_bucket_view=False), arch=ARCH
    )
    assert same.total_bytes == off.total_bytes


def test_one_rank_holds_no_copy_either_way() -> None:
    """One rank is plain training (no DDP wrapper): no copy with or without the view."""
    assert stage_memory(0, 1, 7e9).buffers_bytes == 0.0
    assert stage_memory(0, 1, 7e9, gradient_as_bucket_view=True).buffers_bytes == 0.0
    got = stage_buffers_bytes(0, [1, 8], [7e9, 7e9], gradient_as_bucket_view=True)
    assert list(got) == [0.0, 0.0]


def test_the_layout_names_it_and_the_step_time_is_unchanged() -> None:
    kw = dict(arch=ARCH, cluster=PRESET, nodes=NODES, strategy="ddp")
    off = cm.strategy_step(**kw)
    on = cm.strategy_step(**kw, gradient_as_bucket_view=True)
    assert on.step_time_s == off.step_time_s  # the copy's time is in the fitted host time
    assert off.memory.total_bytes - on.memory.total_bytes == COPY
    d_on, d_off = on.as_dict(), off.as_dict()
    assert (d_on["layout"], d_on["gradient_as_bucket_view"]) == ("ddp (bucket view)", True)
    assert (d_off["layout"], d_off["gradient_as_bucket_view"]) == ("ddp", False)
    assert d_on["memory_bytes"] == on.memory.total_bytes
    assert "gradient_as_bucket_view" in LAYOUT_KEYS
    for st in ("zero1", "zero2", "fsdp", "hsdp"):
        assert make_layout(strategy=st, ranks=RANKS).identity()["gradient_as_bucket_view"] is None


def test_one_number_on_every_surface() -> None:
    """The API, the commands' --json and the memory and step sweep rows give the same memory
    per GPU with the view, P x 2 B below the default's."""
    want = cm.strategy_step(
        arch=ARCH, cluster=PRESET, nodes=NODES, gradient_as_bucket_view=True
    ).memory.total_bytes
    default = cm.strategy_step(arch=ARCH, cluster=PRESET, nodes=NODES).memory.total_bytes
    assert default - want == COPY
    sc = cm.Scenario(
        arch=ARCH, cluster=PRESET, nodes=NODES, gradient_as_bucket_view=True
    ).evaluate()
    got = {"Scenario": sc.memory_total_bytes}
    assert (sc.layout, sc.gradient_as_bucket_view) == ("ddp (bucket view)", True)
    flag = "--gradient-as-bucket-view"
    on_cluster = ["--arch", ARCH, "--cluster", PRESET, flag]
    for name, args, key in (
        ("memory", ["memory", "--arch", ARCH, "--ranks", str(RANKS), flag], "memory_bytes"),
        ("step", ["step", *on_cluster, "--nodes", str(NODES)], "memory_bytes"),
        ("scenario", ["scenario", *on_cluster, "--nodes", str(NODES)], "memory_total_bytes"),
        (
            "train",
            ["train", *on_cluster, "--nodes", str(NODES), "--steps", "10"],
            "memory_total_bytes",
        ),
    ):
        d = _json(*args)
        assert d["layout"] == "ddp (bucket view)" and d["gradient_as_bucket_view"] is True, name
        got[f"{name} --json"] = d[key]
    (mem,) = cm.sweep(
        kind="memory", arch=ARCH, ranks=str(RANKS), gradient_as_bucket_view="true"
    ).to_dict("records")
    got["memory sweep"] = mem["memory_GB"] * 1e9
    assert mem["gradient_as_bucket_view"] is True or mem["gradient_as_bucket_view"] == 1
    steps = cm.sweep(
        kind="step",
        preset=PRESET,
        arch=ARCH,
        nodes=str(NODES),
        strategy="ddp",
        gradient_as_bucket_view="false,true",
    ).to_dict("records")
    assert [r["layout"] for r in steps] == ["ddp", "ddp (bucket view)"]
    assert steps[0]["step_time_s"] == steps[1]["step_time_s"]
    assert (steps[0]["memory_GB"] - steps[1]["memory_GB"]) * 1e9 == pytest.approx(COPY, rel=1e-12)
    got["step sweep"] = steps[1]["memory_GB"] * 1e9
    for surface, value in got.items():
        assert value == pytest.approx(want, rel=1e-12), surface


def test_a_bare_count_memory_sweep_drops_the_copy_too() -> None:
    rows = cm.sweep(
        kind="memory", params="7B", ranks="8", gradient_as_bucket_view="false,true"
    ).to_dict("records")
    assert [r["buffers_GB"] for r in rows] == [pytest.approx(14.0), 0.0]
    assert (rows[0]["memory_GB"] - rows[1]["memory_GB"]) == pytest.approx(14.0, rel=1e-12)


def test_the_sweep_column_reads_back_as_booleans(tmp_path) -> None:
    """A CSV keeps no type: the column comes back as booleans with nulls, as Parquet holds it."""
    path = tmp_path / "m.csv"
    sweep_to_file(
        str(path), kind="memory", params="7B", ranks="8", strategy="ddp,zero1"
    )  # ddp: False, zero1: null
    back = read_table(path)
    assert list(back["gradient_as_bucket_view"].isna()) == [False, True]
    assert bool(back["gradient_as_bucket_view"].iloc[0]) is False


@pytest.mark.parametrize("strategy", ["zero1", "zero2", "fsdp", "hsdp"])
def test_refused_off_ddp_on_every_road(strategy: str) -> None:
    words = "gradient_as_bucket_view: only ddp has gradient buckets to view"
    with pytest.raises(ValueError, match=words):
        Layout(strategy=strategy, ranks=RANKS, gradient_as_bucket_view=True)
    with pytest.raises(ValueError, match=words):
        cm.strategy_step(7e9, cluster=PRESET, strategy=strategy, gradient_as_bucket_view=False)
    with pytest.raises(ValueError, match=words):
        cm.Scenario(params=7e9, strategy=strategy, gradient_as_bucket_view=True)
    with pytest.raises(ValueError, match="gradient_as_bucket_view: only ddp"):
        cm.sweep(kind="step", preset=PRESET, params="7B", nodes="1", strategy=strategy,
                 gradient_as_bucket_view="true")  # fmt: skip
    with pytest.raises(ValueError, match="gradient_as_bucket_view: only ddp"):
        group = {"group_size": "8"} if strategy == "hsdp" else {}
        cm.sweep(kind="memory", params="7B", ranks="16", strategy=strategy, **group,
                 gradient_as_bucket_view="true")  # fmt: skip
    one_line_error(
        run("memory", "--params", "7B", "--ranks", "16", "--strategy", strategy,
            "--gradient-as-bucket-view", *(["--group-size", "8"] if strategy == "hsdp" else [])),
        "--gradient-as-bucket-view", "only ddp", strategy,
    )  # fmt: skip
    for cmd in ("step", "scenario", "train"):
        extra = ["--steps", "10"] if cmd == "train" else []
        one_line_error(
            run(cmd, "--params", "7B", "--cluster", PRESET, "--strategy", strategy,
                "--gradient-as-bucket-view", *extra),
            "--gradient-as-bucket-view", "only ddp", strategy,
        )  # fmt: skip


def test_a_zero_stage_memory_sweep_refuses_it_above_stage_0() -> None:
    with pytest.raises(ValueError, match=r"gradient_as_bucket_view: only ddp \(zero_stage 0\)"):
        cm.sweep(kind="memory", params="7B", ranks="16", zero_stage="0,1",
                 gradient_as_bucket_view="true")  # fmt: skip


def test_a_scenario_change_to_another_strategy_drops_the_option() -> None:
    a = cm.Scenario(params=7e9, gradient_as_bucket_view=True)
    assert a.with_changes(strategy="fsdp").gradient_as_bucket_view is None
    assert a.with_changes(zero_stage=2).gradient_as_bucket_view is None
    assert a.with_changes(nodes=2).gradient_as_bucket_view is True


def test_the_advisor_ranks_ddp_at_torchs_default() -> None:
    adv = _json("step", "--params", "7B", "--cluster", PRESET, "--strategy", "all")
    (ddp,) = [r for r in adv["strategies"] if r["strategy"] == "ddp"]
    assert (ddp["layout"], ddp["gradient_as_bucket_view"]) == ("ddp", False)
    one_line_error(
        run("step", "--params", "7B", "--cluster", PRESET, "--strategy", "all",
            "--gradient-as-bucket-view"),
        "--strategy all ranks ddp at PyTorch's default", "--strategy ddp",
    )  # fmt: skip
    one_line_error(
        run("memory", "--params", "7B", "--cluster", PRESET, "--strategy", "all",
            "--gradient-as-bucket-view"),
        "--gradient-as-bucket-view",
    )  # fmt: skip
    with pytest.raises(ValueError, match="gradient_as_bucket_view: strategy=all ranks ddp"):
        cm.sweep(kind="step", preset=PRESET, params="7B", nodes="1", strategy="all",
                 gradient_as_bucket_view="true")  # fmt: skip
    with pytest.raises(ValueError, match="gradient_as_bucket_view: advise_strategy ranks"):
        cm.advise_strategy(7e9, cluster=PRESET, gradient_as_bucket_view=True)


def test_the_one_link_step_refuses_it() -> None:
    """``step --ranks --bandwidth`` sizes no memory: the switch is refused, not ignored."""
    one_line_error(
        run("step", "--params", "7B", "--ranks", "8", "--bandwidth", "100GB/s",
            "--compute-time", "0.1s", "--gradient-as-bucket-view"),
        "--gradient-as-bucket-view", "an option of the step on a cluster preset (--cluster NAME)",
    )  # fmt: skip


def _metric(at, label: str) -> str:
    return {m.label: m.value for m in at.metric}[label]


def test_the_step_page_shows_the_api_number_and_its_link_round_trips() -> None:
    want = cm.Scenario(arch=ARCH, cluster=PRESET, nodes=NODES, gradient_as_bucket_view=True)
    bytes_on = want.evaluate().memory_total_bytes
    query = {"ddp_arch": ARCH, "ddp_cluster": PRESET, "ddp_nodes": str(NODES)}
    at = open_page("page_ddp.py", {**query, "ddp_bucket_view": "true"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    box = at.checkbox(key="ddp_bucket_view")
    assert box.value is True and box.proto.query_param_key == "ddp_bucket_view"
    assert _metric(at, "Memory per GPU") == format_bytes(bytes_on)
    off = open_page("page_ddp.py", {**query, "ddp_bucket_view": "false"})
    assert off.checkbox(key="ddp_bucket_view").value is False
    assert _metric(off, "Memory per GPU") == format_bytes(bytes_on + COPY)
    # ticking the box is the link's true
    off.checkbox(key="ddp_bucket_view").check().run()
    assert _metric(off, "Memory per GPU") == format_bytes(bytes_on)
    # shown for ddp only
    fsdp = open_page("page_ddp.py", {**query, "ddp_strategy": "fsdp"})
    assert not [c for c in fsdp.checkbox if c.key == "ddp_bucket_view"]


def test_the_memory_page_shows_the_api_number_and_its_link_round_trips() -> None:
    bytes_on = stage_memory(0, RANKS, 7e9, gradient_as_bucket_view=True).total_bytes
    query = {"params": "7B", "dp_ranks": str(RANKS)}
    at = open_page("page_memory.py", {**query, "mem_bucket_view": "true"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    box = at.checkbox(key="mem_bucket_view")
    assert box.value is True and box.proto.query_param_key == "mem_bucket_view"
    assert _metric(at, "Memory per GPU, ZeRO-0") == format_bytes(bytes_on)
    assert any("no bucket copy of the gradients" in c.value for c in at.caption)
    off = open_page("page_memory.py", query)
    assert off.checkbox(key="mem_bucket_view").value is False
    assert _metric(off, "Memory per GPU, ZeRO-0") == format_bytes(bytes_on + 7e9 * 2)
    off.checkbox(key="mem_bucket_view").check().run()
    assert _metric(off, "Memory per GPU, ZeRO-0") == format_bytes(bytes_on)
    # ddp's option: not drawn at another stage
    z3 = open_page("page_memory.py", {**query, "zero_stage": "3"})
    assert not [c for c in z3.checkbox if c.key == "mem_bucket_view"]
