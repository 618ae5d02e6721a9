#!/usr/bin/env bash
# One GPU's check of the fitted compute time and of the torch harness on NCCL, run from the
# repository root on a machine with a CUDA GPU (python3 with torch, and costmodel importable:
# `pip install -e '.[validate]'` or PYTHONPATH=.). Results under $OUT (default gpu-check/):
# compute.jsonl (one row per configuration, costmodel.validation.compute_bench; three also time
# an fp32 AdamW step, 16 B per parameter of memory: 108-116 GB for the 7B models), torch.jsonl
# (costmodel validate torch, one rank, NCCL), and the logs. docs/gpu-checks.md records each run.
set -u
OUT=${OUT:-gpu-check}
# shellcheck source=scripts/gpu_lib.sh
. "$(dirname "$0")/gpu_lib.sh"
gpu_header "$OUT"
# forward + backward of one micro-batch, measured beside the fitted prediction for the GPU
time_configs "$OUT" 150 <<'CONFIGS'
--arch llama-3.1-8b --seq 4096 --micro-batch 1
--arch llama-3.1-8b --seq 2048 --micro-batch 2
--arch llama-3.1-8b --seq 8192 --micro-batch 1
--arch llama-2-7b --seq 4096 --micro-batch 1 --optimizer adamw
--arch mistral-7b --seq 4096 --micro-batch 2 --optimizer adamw
--arch qwen2.5-7b --seq 4096 --micro-batch 1
--arch llama-3.1-70b --layers 4 --seq 4096 --micro-batch 1 --optimizer adamw
CONFIGS
# the torch harness with NCCL on this GPU: collectives on one rank and DDP steps
timeout 240 python3 -m costmodel validate torch --nproc 1 --backend nccl --ops all_reduce,all_gather \
  --max-bytes 256MiB --ddp -o "$OUT/torch.jsonl" -- --ddp-params 100M --ddp-width 2048 \
  2>&1 | tee "$OUT/torch.out"
python3 -m costmodel validate compare "$OUT/torch.jsonl" --cluster hgx-h200 2>&1 | tee -a "$OUT/torch.out"
