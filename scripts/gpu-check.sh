#!/usr/bin/env bash
# Builds cpplan against this machine's CUDA LibTorch (the one inside its PyTorch) and measures it on
# its GPU, in well under 8 minutes:
#   1. configure + build (NCCL on, GUI and benchmarks off, LibTorch's libstdc++ ABI for the whole
#      tree: -DCPPLAN_TORCH_ABI=auto; the CUDA toolkit PyTorch finds);
#   2. the GPU suite (ctest label cuda: FlashAttention's LSE merge, CUDA events, the caching
#      allocator's peak, a real `cpplan run --device cuda` recorded in SQLite, a GPU OOM);
#   3. `cpplan probe` of the GPU's kernels at flux.1-dev's shapes (recorded in the run database);
#   4. a full-size flux.1-dev 1024x1024 bf16 run on one GPU: steps/s, peak memory and achieved
#      TFLOP/s (the cost model's FLOPs of a step over the measured step time), beside the cost
#      model's predictions from the probe and from the datasheet profile;
#   5. the host time of one eager PyTorch op on this GPU from Python (scripts/dispatch_bench.py, a
#      few seconds): an independent figure for the runtime profiles' us_per_op;
# and writes every figure to OUT_DIR/gpu-check.json. Beside it, at most five more files (a device
# tool brings back few): gpu-check.db (the runs and probes, for calibration), ctest-cuda.log,
# flux-dev-1024.json, probe.txt and logs.txt (stderr of each step, the end of the build logs).
#
# Usage: scripts/gpu-check.sh [OUT_DIR]      (default: $OUT, else ./gpu-check)
# Needs: python3 with a CUDA torch, cmake, ninja, a C++17 compiler, and cpplan's other libraries:
# installed (scripts/install-deps.sh on Debian) or as the bundle scripts/gpu-deps.sh makes on a
# Debian machine (.gpu-deps at the repository root, or CPPLAN_DEPS=DIR), for GPU machines that
# have none of them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-$root/gpu-check}}
build=${CPPLAN_GPU_BUILD:-$root/build-gpu}
deps=${CPPLAN_DEPS:-$root/.gpu-deps}
steps=${CPPLAN_GPU_STEPS:-10}
work="$build/gpu-check-logs"  # every raw output; the chosen ones go to $out at exit
mkdir -p "$out" "$work"
publish() {
  for f in gpu-check.json gpu-check.db ctest-cuda.log flux-dev-1024.json probe.txt; do
    [ -f "$work/$f" ] && cp -f "$work/$f" "$out/"
  done
  for f in configure.log build.log probe.err flux-dev-1024.err dispatch.err; do
    [ -f "$work/$f" ] && { echo "== $f (last 200 lines)"; tail -200 "$work/$f"; }
  done >"$out/logs.txt" 2>/dev/null || true
}
trap publish EXIT
log() { printf 'gpu-check: %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }  # seconds since a now()
t_start=$(now)

torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) ||
  { log "python3 cannot import torch: a CUDA PyTorch is needed"; exit 2; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { log "torch sees no GPU (torch.cuda.is_available() is False)"; exit 2; }
# nccl.h: PyTorch's nvidia-nccl package, else the CUDA toolkit's (CMake looks there itself).
nccl_include=$(python3 - <<'PY'
import os
try:
    import nvidia.nccl as n
    for p in n.__path__:
        if os.path.exists(os.path.join(p, "include", "nccl.h")):
            print(os.path.join(p, "include")); break
except ImportError:
    pass
PY
)
# The CUDA toolkit's nvcc: Torch's CMake files enable the CUDA language with it (the nvidia-* wheels
# carry the libraries, not the compiler). Where PyTorch itself finds one (CUDA_HOME, CUDA_PATH, nvcc
# on PATH, the usual install); older LibTorch 2.x read CUDA_TOOLKIT_ROOT_DIR, newer CUDAToolkit_ROOT.
cuda_home=$(python3 -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME or "")' 2>/dev/null || true)
cuda_args=()
if [ -n "$cuda_home" ] && [ -x "$cuda_home/bin/nvcc" ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" -DCUDAToolkit_ROOT="$cuda_home"
             -DCUDA_TOOLKIT_ROOT_DIR="$cuda_home")
else
  log "no CUDA toolkit found by PyTorch (CUDA_HOME): Torch's CMake files may not find nvcc"
fi
prefix="$torch_prefix"
[ -d "$deps" ] && prefix="$torch_prefix;$deps"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

log "configure ($build)"
t0=$(now)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCPPLAN_GUI=OFF -DCPPLAN_BUILD_BENCH=OFF -DCPPLAN_NCCL=ON -DCPPLAN_TORCH_ABI=auto "${cuda_args[@]}" \
  ${nccl_include:+-DNCCL_INCLUDE_DIR="$nccl_include"} \
  >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log" >&2; log "configure failed ($work/configure.log)"; exit 1; }
grep -q "CUDA ON" "$work/configure.log" || { log "the LibTorch found has no CUDA ($work/configure.log)"; exit 1; }
log "build"
cmake --build "$build" --parallel "$(nproc)" --target cpplan cpplan-exec test_cuda >"$work/build.log" 2>&1 ||
  { grep -m5 -B2 -A8 "error" "$work/build.log" >&2 || tail -30 "$work/build.log" >&2; log "build failed ($work/build.log)"; exit 1; }
build_s=$(since "$t0")

log "GPU suite (label cuda)"
t0=$(now)
set +e
(cd "$build" && ctest -L cuda --output-on-failure --timeout 300 --output-junit "$work/ctest-cuda.xml") >"$work/ctest-cuda.log" 2>&1
tests_rc=$?
set -e
tests_s=$(since "$t0")
tail -5 "$work/ctest-cuda.log" >&2

log "probe of the GPU's kernels (flux.1-dev shapes)"
t0=$(now)
set +e
"$build/cli/cpplan" probe --device cuda --nproc 1 --model flux.1-dev --db "$work/gpu-check.db" \
  >"$work/probe.txt" 2>"$work/probe.err"
probe_rc=$?
set -e
probe_s=$(since "$t0")
"$build/cli/cpplan" --gpus 1 --model flux.1-dev --res 1024x1024 --json >"$work/flux-dev-1024-datasheet.json" 2>/dev/null || true

log "flux.1-dev 1024x1024 bf16, one GPU, $steps steps"
t0=$(now)
set +e
"$build/cli/cpplan" run --model flux.1-dev --res 1024x1024 --steps "$steps" --warmup 2 --device cuda --dtype bf16 \
  --db "$work/gpu-check.db" --json --timeout 300 >"$work/flux-dev-1024.json" 2>"$work/flux-dev-1024.err"
flux_rc=$?
set -e
flux_s=$(since "$t0")

log "host time of one eager op from Python (scripts/dispatch_bench.py)"
python3 "$root/scripts/dispatch_bench.py" --device cuda >"$work/dispatch.json" 2>"$work/dispatch.err" || true

python3 - "$work" "$tests_rc" "$flux_rc" "$build_s" "$tests_s" "$flux_s" "$t_start" "$probe_rc" "$probe_s" <<'PY'
import json, os, re, sys, time
out, tests_rc, flux_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
build_s, tests_s, flux_s, t_start = map(float, sys.argv[4:8])
probe_rc, probe_s = int(sys.argv[8]), float(sys.argv[9])
import torch
report = {
    "gpu": torch.cuda.get_device_name(0), "gpu_count": torch.cuda.device_count(),
    "torch": torch.__version__, "cuda": torch.version.cuda, "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
    "nccl": ".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else None,
    "seconds": {"build": build_s, "tests": tests_s, "probe": probe_s, "flux_run": flux_s,
                "total": round(time.time() - t_start, 1)},
}
probe = {"exit_code": probe_rc}
text = open(os.path.join(out, "probe.txt")).read() if os.path.exists(os.path.join(out, "probe.txt")) else ""
m = re.search(r"best GEMM ([0-9.]+) GFLOP/s", text)
probe["best_gemm_tflops"] = float(m.group(1)) / 1e3 if m else None
m = re.search(r"(\d+) kernel samples", text)
probe["kernel_samples"] = int(m.group(1)) if m else None
report["probe"] = probe
log = open(os.path.join(out, "ctest-cuda.log")).read()
m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", log)
report["tests"] = {"exit_code": tests_rc, "failed": int(m.group(2)) if m else None, "total": int(m.group(3)) if m else None}
flux = {"exit_code": flux_rc, "model": "flux.1-dev", "resolution": "1024x1024", "dtype": "bf16", "world_size": 1}
try:
    run = json.load(open(os.path.join(out, "flux-dev-1024.json")))
    meas = run.get("measured") or {}
    flux.update({
        "status": run.get("status"), "error": run.get("error"),
        "step_ms": meas.get("step_ms"), "step_ms_p10": meas.get("step_ms_p10"), "step_ms_p90": meas.get("step_ms_p90"),
        "steps_per_sec": meas.get("steps_per_sec"),
        "peak_mem_gib": meas["peak_mem_bytes"] / 2**30 if meas.get("peak_mem_bytes") else None,
        "step_tflop": meas.get("step_tflop"), "achieved_tflops": meas.get("achieved_tflops"),
        "predicted": run.get("predicted"),
    })
    sheet = json.load(open(os.path.join(out, "flux-dev-1024-datasheet.json")))
    top = sheet["plans"][0] if sheet.get("plans") else None
    if top:
        flux["predicted_datasheet"] = {"hardware": sheet.get("hardware"),
                                       "step_ms": top.get("predicted", {}).get("step_ms")}
except Exception as e:  # the run failed before printing JSON: its stderr says why
    flux["error"] = open(os.path.join(out, "flux-dev-1024.err")).read().strip()[-500:] or str(e)
report["flux_dev_1024"] = flux
try:  # informative: a failure here does not fail the check
    report["python_dispatch"] = json.load(open(os.path.join(out, "dispatch.json")))
except Exception as e:
    err = os.path.join(out, "dispatch.err")
    report["python_dispatch"] = {"error": (open(err).read().strip()[-500:] if os.path.exists(err) else "") or str(e)}
json.dump(report, open(os.path.join(out, "gpu-check.json"), "w"), indent=2)
print(json.dumps(report, indent=2))
PY
[ "$tests_rc" -eq 0 ] && [ "$flux_rc" -eq 0 ] && [ "$probe_rc" -eq 0 ]
