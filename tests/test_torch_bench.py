"""A real CPU run through the whole harness: torchrun with gloo (2 ranks) -> results.jsonl ->
calibrate (weighted fit, every other size held out) -> predict the held-out sizes -> compare and
HTML report. Measured here (machine-notes.md): gloo's ring all-reduce is fitted to 10-20% from
1 MiB up, so the held-out sizes >= 1 MiB must be predicted within 25%."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from costmodel.validation.torch_bench import parse_args, sizes_between

TORCHRUN = Path(sys.executable).with_name("torchrun")


def test_parse_args_and_sizes():
    args = parse_args(["--ops", "all_reduce,broadcast", "--min-bytes", "1KiB", "--max-bytes",
                       "8KiB", "--bucket-cap-mb", "1,25"])
    assert args.ops == ["all_reduce", "broadcast"] and args.min_bytes == 1024
    assert args.bucket_cap_mb == [1.0, 25.0]
    assert sizes_between(1024, 8192, 2) == [1024, 2048, 4096, 8192]
    with pytest.raises(SystemExit):
        parse_args(["--ops", "all_reduce,allreduce"])
    with pytest.raises(ValueError, match="min_bytes"):
        sizes_between(8192, 1024, 2)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_cpu_gloo_end_to_end(tmp_path):
    pytest.importorskip("torch")
    if not TORCHRUN.exists() and shutil.which("torchrun") is None:
        pytest.fail("torchrun not found next to the interpreter or on PATH")
    from costmodel.validation.calibrate import calibrate, calibrated_predictor, write_calibration
    from costmodel.validation.compare import compare, write_report
    from costmodel.validation.runner import load_results

    results = tmp_path / "results.jsonl"
    cmd = [str(TORCHRUN if TORCHRUN.exists() else shutil.which("torchrun")), "--standalone",
           "--nproc_per_node", "2", "-m", "costmodel.validation.torch_bench", "-o", str(results),
           "--ops", "all_reduce,all_gather", "--min-bytes", "256KiB", "--max-bytes", "16MiB",
           "--iters", "40", "--warmup", "3", "--ddp", "--ddp-params", "1M", "--ddp-steps", "3",
           "--accumulation", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    df = load_results(results)
    coll = df[df.kind == "collective"]
    assert set(coll.op) == {"all_reduce", "all_gather"} and (coll.ranks == 2).all()
    assert len(coll) == 2 * len(sizes_between(256 * 1024, 16 * 2**20, 2))
    ddp = df[df.kind == "ddp_step"]
    assert len(ddp) == 3 and (ddp.time_s > 0).all()

    cal = calibrate(df, name="gloo-2", source=str(results))
    ar = cal.lookup("all_reduce", "intra")
    # held-out (every other size), >= 1 MiB: within 25% (see module docstring)
    assert ar.cv_max_abs_rel_error_ge_1mib < 0.25, cal.residuals.to_string()
    assert 1e8 < ar.bandwidth_bytes_per_s < 1e11  # CPU memory copies: 0.1-100 GB/s, sanity
    path = write_calibration(cal, tmp_path / "gloo.toml")
    predictor = calibrated_predictor(path)
    held = np.array([3 * 2**20, 12 * 2**20])  # sizes never measured
    t = predictor("all_reduce", held, 2)
    assert np.all(np.diff(t) > 0)
    out = compare(coll, predictor)
    big = out[(out.op == "all_reduce") & (out.size_bytes >= 2**20)]
    assert big.rel_error.abs().max() < 0.25
    assert write_report(out, tmp_path / "report.html").stat().st_size > 1000
