"""scripts/calibration_holdout.py predicted bundled 23b's int8, uint8 and fp8 all-reduce rows
with NVLS on, though NCCL refuses NVLS for those types (ncclNvlsSupported) and every other
surface predicts them with NVLS off (``compare.nvls_off_rows``: validate compare,
scripts/fit_corrections.py). Failed before the script used the same rule."""

from __future__ import annotations

import numpy as np

from costmodel.nccl.availability import nvls_reduction_supported
from costmodel.predict import predict_collective
from tests._paths import load_script

ch = load_script("calibration_holdout")


def test_the_holdout_predicts_23bs_int8_and_fp8_rows_without_nvls():
    (run,) = ch.load_runs(("23b",)).values()
    rows = run.segments
    off = rows["nvls_off"].to_numpy(dtype=bool)
    assert off.any() and not off.all()  # int8/uint8/fp8 sums off; float, bf16, ... not
    predicted = ch.predict_rows(run, rows, run.cluster, "nccl")

    def model(nvls):
        return predict_collective(
            run.op,
            rows.size_bytes.to_numpy(float),
            run.cluster,
            nodes=run.nodes,
            gpus_per_node=run.gpus_per_node,
            model="nccl",
            gpus_per_process=run.gpus_per_process,
            nvls=nvls,
        ).time_s

    on, without = np.asarray(model(run.spec.nvls)), np.asarray(model(False))
    assert not np.allclose(on[off], without[off])  # NVLS would be chosen: the rule matters
    assert np.allclose(predicted[off], without[off])
    assert np.allclose(predicted[~off], on[~off])


def test_the_rows_off_are_the_ones_nccl_refuses():
    """The same rule as the library's (one road), row for row."""
    from costmodel.reference import reference_path
    from costmodel.validation.nccl_tests import read_nccl_tests

    df = read_nccl_tests(reference_path("23b"))
    df = df[(df.placement == "out_of_place") & (df.size_bytes > 0) & ~df.flagged.astype(bool)]
    refused = {
        d for d, r in zip(df.dtype, df.redop, strict=True)
        if nvls_reduction_supported("all_reduce", d, r) is False
    }  # fmt: skip
    assert refused == {"int8", "uint8", "f8e4m3", "f8e5m2"}
    (run,) = ch.load_runs(("23b",)).values()
    assert int(run.segments["nvls_off"].sum()) == int(df.dtype.isin(refused).sum())
