#!/usr/bin/env bash
# Whole-process time of `cpplan` for a 4,096-GPU query against a 1-GPU query (target: < 3x).
# Usage: bench/cli_ratio.sh [path/to/cpplan] [runs]
set -euo pipefail
cpplan=${1:-build/cli/cpplan}
runs=${2:-50}
time_ms() {
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$cpplan" "$@" --hardware h100-sxm --res 1024x1024 >/dev/null; done
  end=$(date +%s%N)
  echo $(( (end - start) / runs / 1000 ))  # microseconds per run
}
"$cpplan" --gpus 1 --hardware h100-sxm >/dev/null  # warm the page cache
one=$(time_ms --gpus 1)
many=$(time_ms --gpus 4096)
awk -v a="$one" -v b="$many" -v n="$runs" 'BEGIN {
  printf "cpplan process, mean of %d runs: 1 GPU %.2f ms, 4096 GPUs %.2f ms, ratio %.2f (target < 3)\n", n, a/1000, b/1000, b/a }'
