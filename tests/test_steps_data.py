"""The published end-to-end step rows, parsed from the bundled raw files."""

from __future__ import annotations

import math

import pytest

from costmodel.reference import reference_dir, reference_runs
from costmodel.steps_data import GPU_TYPES, STEP_FILES, pure_dp_rows, raw_path, step_rows


def test_every_raw_file_is_bundled_and_indexed():
    assert set(reference_runs("steps")) == {f[:-4] for f in STEP_FILES.values()}
    index = (reference_dir("steps").parent / "README.md").read_text()
    for f in STEP_FILES.values():
        assert f in index


def test_row_counts_by_source_and_gpu():
    df = step_rows()
    # 216 rows of the 2024-04 page + 86 of the 2023-07 A100 80GB table, two of them identical
    assert (df.source == "llm-foundry").sum() == 300
    assert (df.source == "torchtitan").sum() == 22
    assert set(df.gpu_type) == set(GPU_TYPES)
    assert (~df.ran).sum() == 2  # torchtitan's two Llama 2 70B OOM rows
    assert df.pure_dp.sum() == 319


def test_a_row_of_each_source_as_published():
    df = step_rows()
    first = df.iloc[0]  # llm-foundry 2024-04, first row of the large-scale H100 table
    assert (first.model, first.seq, first.gpus, first.micro_batch) == ("mpt-70b", 2048, 512, 8)
    assert first.tokens_per_s_per_gpu == pytest.approx(515636 / 512)
    assert first.mfu == pytest.approx(0.4125)
    assert first.activation_checkpointing == "full" and first.sharding == "FULL_SHARD"
    tt = df[(df.model == "llama-2-70b") & (df.micro_batch == 1)].iloc[0]
    assert tt.tokens_per_s_per_gpu == 355 and tt.activation_checkpointing == "selective-op"
    assert tt.gpus == 64 and tt.seq == 4096 and tt.gpu_type == "a100-80gb"
    fp8 = df[(df.gpu_type == "h200")]
    assert sorted(fp8.gpus) == [32, 64] and set(fp8.precision) == {"fp8"}


def test_global_batch_is_micro_times_accum_times_gpus_where_it_divides():
    df = pure_dp_rows()
    tt = df[df.source == "torchtitan"]
    assert (tt.global_batch == tt.micro_batch * tt.gpus).all()
    # llm-foundry: micro-batches need not divide the global batch (its README says so)
    lf = df[df.source == "llm-foundry"]
    assert (lf.global_batch <= lf.micro_batch * lf.grad_accum * lf.gpus).all()


def test_values_are_finite_where_the_row_ran():
    df = pure_dp_rows()
    assert all(math.isfinite(x) and x > 0 for x in df.tokens_per_s_per_gpu)


def test_unknown_file_key_names_the_allowed_ones():
    with pytest.raises(ValueError, match="key: unknown steps file"):
        raw_path("nope")
