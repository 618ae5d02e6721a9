"""Every published pure data-parallel run that ran is predicted to fit under its own settings
(strategy, activation checkpointing, micro-batch, GPU memory), and the published OOMs do not."""

from __future__ import annotations

from costmodel.steps_data import pure_dp_rows
from costmodel.strategy.layout import Layout
from costmodel.strategy.memory import strategy_memory


def _memory(r) -> float:
    strategy = "zero2" if r.sharding == "SHARD_GRAD_OP" else "fsdp"  # FULL_SHARD, FSDP2: fsdp
    layout = Layout(strategy=strategy, ranks=int(r.gpus), gpus_per_node=8)
    m = strategy_memory(
        layout,
        arch=r.model,
        sequence_length=int(r.seq),
        micro_batch=int(r.micro_batch),
        recompute=r.activation_checkpointing,
    )
    return float(m.total_bytes)


def test_every_published_run_that_ran_fits():
    df = pure_dp_rows()
    assert len(df) == 317
    misses = [
        (r.model, r.seq, r.gpus, r.gpu_type, r.micro_batch, r.activation_checkpointing)
        for r in df.itertuples()
        if _memory(r) > r.gpu_memory_bytes
    ]
    assert misses == []


def test_the_published_out_of_memory_runs_do_not_fit():
    df = pure_dp_rows(ran=False)
    oom = df[~df.ran]
    assert len(oom) == 2  # torchtitan Llama 2 70B, micro-batch 2, selective layer / op
    for r in oom.itertuples():
        assert _memory(r) > r.gpu_memory_bytes, (r.model, r.activation_checkpointing)


def test_partial_checkpointing_of_a_70b_fsdp_run_is_sized_by_what_it_keeps():
    # 70B FSDP over 64 GPUs, micro-batch 2, sequence 4096: op-level selective checkpointing
    # keeps far less than no checkpointing (the old estimate: 201 GB), more than full.
    lay = Layout(strategy="fsdp", ranks=64, gpus_per_node=8)

    def gb(mode: str, mb: int = 2) -> float:
        m = strategy_memory(
            lay, arch="llama-2-70b", sequence_length=4096, micro_batch=mb, recompute=mode
        )
        return float(m.total_bytes) / 1e9

    assert gb("full") < gb("selective-op") < gb("selective-layer") < gb("none")
    assert gb("selective-op") < 120 < gb("none")
    assert gb("selective-op", mb=1) < 80 < gb("selective-op")  # torchtitan: mb 1 ran, mb 2 OOM
