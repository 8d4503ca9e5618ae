#!/usr/bin/env bash
# Whole-process time of `cpplan --gpus N --res 1024x1024 --json`, as a script calls it, for 1 and
# 4,096 GPUs: the median (and p10, p90) of RUNS runs each, interleaved, with what the process maps.
# Targets (issue 15): both medians under 20 ms, 4,096 GPUs within 1.5x of 1 GPU, no LibTorch.
# Usage: bench/cli_ratio.sh [path/to/cpplan] [runs]
set -euo pipefail
cpplan=${1:-build/cli/cpplan}
runs=${2:-30}
"$cpplan" --gpus 1 --res 1024x1024 --json >/dev/null 2>&1  # warm the page cache
libraries=$( (ldd "$cpplan" 2>/dev/null || true) | grep -c '=>' || true)
torch=$( (ldd "$cpplan" 2>/dev/null || true) | grep -c torch || true)
python3 - "$cpplan" "$runs" "$libraries" "$torch" <<'PY'
import statistics, subprocess, sys, time
cpplan, runs, libraries, torch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
times = {1: [], 4096: []}
for _ in range(runs):
    for gpus in times:  # interleaved: both see the same machine load
        start = time.perf_counter()
        subprocess.run([cpplan, "--gpus", str(gpus), "--res", "1024x1024", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[gpus].append((time.perf_counter() - start) * 1e3)
def line(gpus):
    t = sorted(times[gpus])
    q = statistics.quantiles(t, n=10)
    return f"{gpus} GPU{'s' if gpus > 1 else ''} median {statistics.median(t):.2f} ms (p10 {q[0]:.2f}, p90 {q[-1]:.2f})"
ratio = statistics.median(times[4096]) / statistics.median(times[1])
print(f"cpplan --gpus N --res 1024x1024 --json, {runs} runs each: {line(1)}, {line(4096)}, ratio {ratio:.2f} "
      f"(targets: < 20 ms, ratio < 1.5); shared libraries {libraries}, of LibTorch {torch}")
PY
