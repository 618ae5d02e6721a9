#!/usr/bin/env bash
# The shape of one GPU's compute time: forward + backward of one micro-batch across tokens per
# micro-batch (sequence length x micro-batch) and hidden size, each beside the fitted
# prediction (costmodel.validation.compute_bench), plus the HBM bandwidth a plain device copy
# reaches (the ceiling the optimizer-step model's bandwidth fraction is measured against).
# Run from the repository root on a machine with a CUDA GPU (python3 with torch, costmodel
# importable: `pip install -e '.[validate]'` or PYTHONPATH=.). Results under $OUT (default
# gpu-sweep/): compute.jsonl, compute.log, hbm.json. docs/gpu-checks.md records each run.
set -u
OUT=${OUT:-gpu-sweep}
# shellcheck source=scripts/gpu_lib.sh
. "$(dirname "$0")/gpu_lib.sh"
gpu_header "$OUT"
time_configs "$OUT" 120 <<'CONFIGS'
--arch llama-3.1-8b --seq 512 --micro-batch 1
--arch llama-3.1-8b --seq 1024 --micro-batch 1
--arch llama-3.1-8b --seq 2048 --micro-batch 1
--arch llama-3.1-8b --seq 4096 --micro-batch 1
--arch llama-3.1-8b --seq 2048 --micro-batch 4
--arch llama-3.1-8b --seq 512 --micro-batch 8
--arch llama-3.1-8b --seq 1024 --micro-batch 4
--arch llama-3.1-8b --seq 1024 --micro-batch 8
--arch llama-3.1-70b --layers 8 --seq 4096 --micro-batch 1
--arch llama-3.1-405b --layers 2 --seq 4096 --micro-batch 1
CONFIGS
# device-to-device copy of 4 GiB: read + write bytes over the median time
timeout 60 python3 - <<'PY' 2>&1 | tee "$OUT/hbm.json"
import json, statistics, torch
n = 1 << 32
a = torch.empty(n, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
for _ in range(3):
    b.copy_(a)
torch.cuda.synchronize()
times = []
for _ in range(20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    b.copy_(a)
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end) / 1e3)
t = statistics.median(times)
print(json.dumps({"device": torch.cuda.get_device_name(), "bytes_moved": 2 * n, "median_s": t,
                  "times_s": times, "bandwidth_bytes_per_s": 2 * n / t}))
PY
