# Shared by scripts/gpu_check.sh and scripts/gpu_compute_sweep.sh (sourced, not run).

# gpu_header OUT: make OUT, unbuffer Python's output (tee shows each row as it is timed), and keep
# the GPU and software the run had beside its results.
gpu_header() {
  mkdir -p "$1"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm,driver_version --format=csv \
    | tee "$1/nvidia-smi.csv"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
}

# time_configs OUT SECONDS: one costmodel.validation.compute_bench run per non-empty line of
# stdin (its arguments), each under a SECONDS limit, rows appended to OUT/compute.jsonl and the
# output to OUT/compute.log.
time_configs() {
  local out=$1 limit=$2 args
  while read -r args; do
    [ -z "$args" ] && continue
    # shellcheck disable=SC2086
    timeout "$limit" python3 -m costmodel.validation.compute_bench $args -o "$out/compute.jsonl" \
      2>&1 | tee -a "$out/compute.log"
  done
}
