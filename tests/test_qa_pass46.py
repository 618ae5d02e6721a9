"""Memory says what the process holds on one rank: FSDP2's copy of one unit at a time, the
same on every road (API, ``costmodel memory``, the Memory page, the memory sweep, the step's
memory); ddp on one rank is plain training (the lesson's one GPU, no DDP wrapper, no bucket),
and the bucket copy a DDP-wrapped process holds is the one torch allocates; the lesson's
``training_memory`` stays the lesson's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel.cli import app
from costmodel.memory import training_memory
from costmodel.strategy.layout import Layout, largest_pair_params, largest_unit_params
from costmodel.strategy.memory import stage_buffers_bytes, stage_memory, strategy_memory

ARCH = "llama-3.1-8b"


def test_ddp_on_one_rank_is_plain_training_and_more_ranks_hold_the_bucket_copy() -> None:
    """One rank under ddp reduces nothing: the job runs without the DDP wrapper, so it holds the
    lesson's 16 B per parameter (the step prices no all-reduce there either); from two ranks the
    bucket copy of every gradient is held (16.1 GB for llama-3.1-8b)."""
    p = float(cm.load_arch(ARCH).params)
    one = strategy_memory(Layout(strategy="ddp", ranks=1), arch=ARCH)
    two = strategy_memory(Layout(strategy="ddp", ranks=2), arch=ARCH)
    assert one.buffers_bytes == 0.0 and two.buffers_bytes == p * 2  # bf16 gradients, once more
    assert float(training_memory(7e9).total_bytes) == 112e9
    assert strategy_memory(Layout(strategy="ddp", ranks=1), 7e9).total_bytes == 112e9


def test_one_rank_memory_is_one_number_on_every_road() -> None:
    from costmodel.units import format_bytes
    from tests.test_app import metrics, open_page

    for strategy, stage in (("ddp", 0), ("fsdp", 3)):
        api = strategy_memory(Layout(strategy=strategy, ranks=1), arch=ARCH)
        assert stage_memory(stage, 1, arch=ARCH).total_bytes == api.total_bytes
        r = CliRunner().invoke(
            app,
            ["memory", "--arch", ARCH, "--strategy", strategy, "--ranks", "1", "--json"],
        )
        assert r.exit_code == 0, r.output
        cli = json.loads(r.stdout)
        assert cli["memory_bytes"] == api.total_bytes
        df = cm.sweep(kind="memory", arch=ARCH, ranks="1", strategy=strategy)
        assert float(df["memory_GB"].iloc[0]) == pytest.approx(api.total_bytes / 1e9, rel=1e-12)
        step = cm.strategy_step(
            arch=ARCH, cluster="dgx-h100", nodes=1, gpus_per_node=1, strategy=strategy
        )
        assert step.memory_bytes == pytest.approx(api.total_bytes, rel=1e-12)
        # bare counts: the sweep's buffers column comes from stage_buffers_bytes
        bare = stage_memory(stage, 1, 7e9)
        buffers = stage_buffers_bytes(stage, [1, 8], [7e9, 7e9])
        assert buffers[0] == bare.buffers_bytes + bare.gathered_bytes
        assert (buffers[0] > 0) == (strategy == "fsdp")  # ddp's one rank holds no bucket
        at = open_page("page_memory.py", {"dp_ranks": "1", "zero_stage": str(stage)})
        assert not at.exception
        assert metrics(at)[f"Memory per GPU, ZeRO-{stage}"] == format_bytes(bare.total_bytes)


def test_fsdp_on_one_rank_holds_one_unit_gathered_not_the_prefetched_pair() -> None:
    """FSDP2 with a world size of 1 runs no all-gather (``unshard`` allocates nothing, so no
    prefetch holds a neighbour) but copies each unit into its unsharded buffer and its
    gradients into the reduce buffer: one unit's parameters and the pair's gradients."""
    one = strategy_memory(Layout(strategy="fsdp", ranks=1), arch=ARCH)
    unit, pair = largest_unit_params(0, ARCH), largest_pair_params(0, ARCH)
    assert unit < pair
    assert one.gathered_bytes == pytest.approx(unit * 2 + pair * 2, rel=1e-12)  # bf16
    many = strategy_memory(Layout(strategy="fsdp", ranks=8), arch=ARCH)
    assert many.gathered_bytes == pytest.approx(pair * 2 + pair * 2, rel=1e-12)
    # without resharding every unit stays gathered from forward to backward, one rank too
    p = float(cm.load_arch(ARCH).params)
    keep = strategy_memory(Layout(strategy="fsdp", ranks=1, reshard_after_forward=False), arch=ARCH)
    assert keep.gathered_bytes == pytest.approx(p * 2 + pair * 2, rel=1e-12)
    # hsdp on one rank is fsdp on one rank
    hsdp = strategy_memory(Layout(strategy="hsdp", ranks=1, gpus_per_node=1), arch=ARCH)
    assert hsdp.total_bytes == one.total_bytes


@pytest.mark.torch
def test_ddp_buckets_are_every_gradient_as_torch_allocates_them() -> None:
    """PyTorch's DDP builds its reducer and buckets (on a world size of 1 too: gloo, CPU): the
    bucket bytes are every gradient's, the count ``strategy_memory`` gives ddp per rank from two
    ranks up, where they do not depend on the rank count (fp32 gradients: ``grad_dtype``)."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)])
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        data = ddp._get_ddp_logging_data()
        assert int(data["world_size"]) == 1 and int(data["gradient_as_bucket_view"]) == 0
        held = sum(int(b) for b in str(data["bucket_sizes"]).split(","))
        buckets = ddp.reducer._get_zeros_like_grad_buckets()
        assert held == sum(b.buffer().numel() * b.buffer().element_size() for b in buckets)
    finally:
        dist.destroy_process_group()
    params = sum(t.numel() for t in model.parameters())
    assert params == 8 * (256 * 256 + 256)
    lay = Layout(strategy="ddp", ranks=2, grad_dtype="fp32")
    assert strategy_memory(lay, float(params)).buffers_bytes == held


def test_fidelity_memory_of_shard_grad_op_runs_is_fsdps_not_deepspeeds() -> None:
    """The step-fidelity memory sized FSDP SHARD_GRAD_OP runs as ``zero2``, with DeepSpeed's
    2 GB of ipg buffers FSDP does not allocate; their step is ``fsdp`` without resharding, and
    so is their memory now (one layout, tests/test_step_memory.py and docs/step-fidelity.md)."""
    from costmodel.step_fidelity import SHARDING, row_layout
    from costmodel.steps_data import pure_dp_rows

    rows = pure_dp_rows()
    sgo = rows[rows.sharding == "SHARD_GRAD_OP"]
    assert len(sgo)
    for r in sgo.itertuples():
        lay = row_layout(r.sharding, int(r.gpus))
        assert (lay.strategy, lay.reshard_after_forward) == SHARDING["SHARD_GRAD_OP"]
        m = strategy_memory(lay, arch=r.model, sequence_length=int(r.seq))
        assert m.buffers_bytes == 0.0  # no DeepSpeed ipg buffer
        p = float(cm.load_arch(r.model).params)
        assert m.gathered_bytes >= p * 2  # every unit kept gathered (bf16) to backward
        zero2 = strategy_memory(
            Layout(strategy="zero2", ranks=int(r.gpus), gpus_per_node=8),
            arch=r.model,
            sequence_length=int(r.seq),
        )
        assert zero2.buffers_bytes == 2e9 and m.total_bytes != zero2.total_bytes
    assert row_layout("FULL_SHARD", 16) == Layout(strategy="fsdp", ranks=16, gpus_per_node=8)
