#!/usr/bin/env bash
# Activation recomputation on one GPU: forward + backward of one micro-batch with every layer
# checkpointed (compute_bench --recompute full) beside the same micro-batch without it, each
# beside what `costmodel step --recompute full` prices and `costmodel memory --recompute full`
# sizes. Run from the repository root on a machine with a CUDA GPU (python3 with torch,
# costmodel importable: `pip install -e '.[validate]'` or PYTHONPATH=.). Results under $OUT
# (default gpu-recompute/): compute.jsonl, compute.log. docs/gpu-checks.md records each run.
set -u
OUT=${OUT:-gpu-recompute}
# shellcheck source=scripts/gpu_lib.sh
. "$(dirname "$0")/gpu_lib.sh"
gpu_header "$OUT"
time_configs "$OUT" 150 <<'CONFIGS'
--arch llama-3.1-8b --seq 4096 --micro-batch 1
--arch llama-3.1-8b --seq 4096 --micro-batch 1 --recompute full
--arch llama-3.1-8b --seq 8192 --micro-batch 1 --recompute full
--arch llama-3.1-8b --seq 4096 --micro-batch 4 --recompute full
--arch mistral-7b --seq 4096 --micro-batch 2 --recompute full
--arch llama-3.1-70b --layers 8 --seq 4096 --micro-batch 1
--arch llama-3.1-70b --layers 8 --seq 4096 --micro-batch 1 --recompute full
CONFIGS
