"""A real CPU run through the whole harness: torchrun with gloo (2 ranks) -> results.jsonl ->
calibrate (weighted fit, every other size held out) -> predict the held-out sizes -> compare, DDP
steps predicted with ddp_step, HTML report. The held-out sizes >= 1 MiB must be predicted within
35% (machine-notes.md: gloo's ring fits to 10-20% from 1 MiB up on a quiet machine; 25% until
2026-12-02, when two runs inside the full suite, the other xdist worker busy on the second of the
2 cores, gave 27.4% and 27.7% held out, the 64 MiB size 2.15x the 32 MiB one: contention the
harness measures, not a fault in it; the same runs' in-sample compare stayed within 16%). Since
then `make test` runs it after the parallel pass, alone (the `alone` marker); the bound stays the
one measured under contention, since a plain `pytest -n 2` still runs it beside other files.

Size range, measured here (2 cores, L2 2 MiB per core; minimum over 60 iterations): gloo's
all-reduce moves 2-4 MiB at 0.57 ns/B but 8-64 MiB at 0.61-0.86 ns/B, because the smaller
buffers stay in the CPU caches; one alpha-beta line cannot describe both regimes. The sweep is
therefore 8-64 MiB in steps of sqrt(2) (7 sizes: 8, 16, 32, 64 MiB fitted, 11.3, 22.6, 45 MiB
held out). The machine is shared (load average 4-7 on 2 cores while the test was developed), so
the sweep is repeated in 20 interleaved rounds of 3 iterations (a burst of load then spoils no
single size) and the median over 60 iterations is fitted. Three runs at load 4.6-6.8 gave 10%, 6%
and 3% held-out error, 36-61 s each (8 rounds of 5 gave 16%, 8%, 23%; the minimum over
iterations 14-28%: an extreme value is noisier). The second op is broadcast, the cheapest
(all-gather cost 60% of the sweep's time for nothing the assertions use)."""

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
    args = parse_args(
        [
            "--ops",
            "all_reduce,broadcast",
            "--min-bytes",
            "1KiB",
            "--max-bytes",
            "8KiB",
            "--ddp",
            "--bucket-cap-mb",
            "1,25",
        ]
    )
    assert args.ops == ["all_reduce", "broadcast"] and args.min_bytes == 1024
    assert args.bucket_cap_mb == [1.0, 25.0]
    assert sizes_between(1024, 8192, 2) == [1024, 2048, 4096, 8192]
    assert sizes_between(2**23, 2**26, 2**0.5)[-1] == 2**26  # sqrt(2) steps land on 64 MiB
    assert parse_args(["--factor", "1.5", "--rounds", "3"]).rounds == 3
    with pytest.raises(ValueError, match="^--ops: 'allreduce2' not known; allowed: "):
        parse_args(["--ops", "all_reduce,allreduce2"])
    assert parse_args(["--ops", "ALL-REDUCE,all_reduce,broadcast"]).ops == [
        "all_reduce",
        "broadcast",
    ]
    with pytest.raises(ValueError, match="min_bytes"):
        sizes_between(8192, 1024, 2)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(180)
def test_cpu_gloo_end_to_end(tmp_path):
    if not TORCHRUN.exists() and shutil.which("torchrun") is None:
        pytest.fail("torchrun not found next to the interpreter or on PATH")
    from costmodel import presets
    from costmodel.hardware import CalibrationPreset
    from costmodel.validation.calibrate import calibrate, calibrated_predictor, write_calibration
    from costmodel.validation.compare import compare, predict_ddp, write_report
    from costmodel.validation.runner import load_results

    results = tmp_path / "results.jsonl"
    cmd = [
        str(TORCHRUN if TORCHRUN.exists() else shutil.which("torchrun")),
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "costmodel.validation.torch_bench",
        "-o",
        str(results),
        "--ops",
        "all_reduce,broadcast",
        "--min-bytes",
        "8MiB",
        "--max-bytes",
        "64MiB",
        "--factor",
        str(2**0.5),
        "--iters",
        "60",
        "--rounds",
        "20",
        "--warmup",
        "2",
        "--ddp",
        "--ddp-params",
        "1M",
        "--ddp-steps",
        "3",
        "--accumulation",
        "2",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    df = load_results(results)
    coll = df[df.kind == "collective"]
    assert set(coll.op) == {"all_reduce", "broadcast"} and (coll.ranks == 2).all()
    assert len(coll) == 2 * len(sizes_between(8 * 2**20, 64 * 2**20, 2**0.5)) == 14
    assert (coll.iters == 60).all() and (coll.time_min_s <= coll.time_s).all()
    ddp = df[df.kind == "ddp_step"]
    assert len(ddp) == 3 and (ddp.time_s > 0).all() and (ddp.compute_time_s > 0).all()

    cal = calibrate(df, name="gloo-2", source=str(results))
    ar = cal.lookup("all_reduce", "intra")
    # held-out (every other size), all >= 1 MiB: within 35% (see module docstring)
    assert ar.cv_max_abs_rel_error_ge_1mib < 0.35, cal.residuals.to_string()
    assert 1e8 < ar.bandwidth_bytes_per_s < 1e11  # CPU memory copies: 0.1-100 GB/s, sanity
    path = write_calibration(cal, tmp_path / "gloo-2.toml")
    loaded = presets.load(str(path))  # no cluster preset describes a CPU: a bare calibration
    assert isinstance(loaded, CalibrationPreset) and loaded.backend == "gloo"
    predictor = calibrated_predictor(path)
    held = np.array([10 * 2**20, 40 * 2**20])  # sizes never measured
    t = predictor("all_reduce", held, 2)
    assert np.all(np.diff(t) > 0)
    assert t == pytest.approx([float(ar.predict(m, 2)) for m in held], rel=1e-12)
    out = compare(coll, predictor)
    big = out[(out.op == "all_reduce") & (out.size_bytes >= 2**20)]
    assert big.rel_error.abs().max() < 0.25, big[["size_bytes", "time_s", "rel_error"]]

    # DDP: compute = the measured no_sync step, buckets from the fitted all-reduce
    steps = predict_ddp(ddp, predictor)
    assert steps.note.isna().all() and (steps.predicted_step_s > steps.predicted_compute_s).all()
    assert steps.predicted_compute_s.to_numpy() == pytest.approx(ddp.compute_time_s.to_numpy())
    print(
        f"\nheld-out all-reduce error (>= 1 MiB): {ar.cv_max_abs_rel_error_ge_1mib:.3f}; "
        f"fitted alpha {ar.latency_s * 1e6:.0f} us, B {ar.bandwidth_bytes_per_s / 1e9:.3f} GB/s"
    )
    print(
        "DDP measured vs predicted [ms]:",
        [
            (round(a * 1e3, 1), round(b * 1e3, 1))
            for a, b in zip(steps.time_s, steps.predicted_step_s, strict=True)
        ],
    )
    html = write_report(out, tmp_path / "report.html", ddp=steps).read_text()
    assert "DDP step: measured vs predicted" in html and "exposed communication" in html
