#!/usr/bin/env bash
# Makes the Python venv of the reference tests (tests/reference/: cpplan's FLOPs and parameter
# bytes against diffusers' own, on the meta device; tests/tune/test_tune_diffusers.py: cpplan tune
# on a real diffusers pipeline with diffusers' and cache-dit's cache hooks): diffusers,
# transformers, accelerate, cache-dit and torch 2.x, from PyPI only. Idempotent: a venv whose stamp
# names the same pins is kept; cache-dit, added later, goes into a kept venv on its own.
#
# Usage: scripts/reference-venv.sh [DIR]   (default: $CPPLAN_REFERENCE_VENV, else ~/.cache/cpplan/reference-venv)
# Prints the venv's python on its last line; exits 1 with one line on stderr when it cannot.
#
# What it downloads, and why not plain `pip install torch`: PyPI has only the CUDA build of
# torch for Linux. `pip install torch diffusers transformers accelerate` made a 5.7 GB venv here
# in 6 min 55 s (2 shared cores). `pip install --no-deps torch` alone does not import: its
# libraries name the CUDA runtime, cuBLAS, cuDNN, cuFFT, cuFile, CUPTI, cuSPARSE(Lt), NCCL, NVRTC
# and NVSHMEM as DT_NEEDED ("libcufile.so.0: cannot open shared object file"), so those wheels
# stay, though a CPU-only meta-device count never calls them. What it never loads is left out:
# triton (1.0 GB unpacked: torch.compile's compiler), cuSOLVER and NVTX (dlopened by linalg and
# profiling only) and cuda-bindings. So torch goes in with --no-deps, then its pure-Python
# requirements and the CUDA wheels its libraries link at torch's own pins; accelerate with
# --no-deps too (it requires torch, which would pull triton back).
# Measured here (December 2026, PyPI at ~60 MB/s, no pip cache): 2.4 GB of wheels (55 s to
# download alone), a 4.4 GB venv in 201 s all told; `import torch, diffusers` works and counts
# the same FLOPs and parameters as the full install.
set -euo pipefail
dir=${1:-${CPPLAN_REFERENCE_VENV:-$HOME/.cache/cpplan/reference-venv}}
python=${PYTHON:-python3}
torch_pin=torch==2.15.0
cuda_pins=("cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusparse,nvjitlink,nvrtc]==13.2.2"
           nvidia-cudnn-cu13==9.26.0.51 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7
           nvidia-nvshmem-cu13==3.7.2)
torch_pure=(filelock "typing-extensions>=4.13.0" "setuptools>=77.0.3" "sympy>=1.13.3" "networkx>=2.5.1" jinja2
            "fsspec>=0.8.5")
hf_pins=(diffusers==0.42.1 transformers==5.25.0 accelerate==1.16.0)
accelerate_deps=(numpy packaging psutil pyyaml huggingface-hub safetensors)
stamp="$torch_pin ${cuda_pins[*]} ${hf_pins[*]}"
# cache-dit with --no-deps: what it needs to import and hook a pipeline is the venv's torch,
# diffusers and transformers (1.5.3 imports and caches FluxPipeline with these pins).
cache_dit_pin=cache-dit==1.5.3

say() { echo "reference-venv: $*" >&2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Puts cache-dit into venv $1 unless its stamp names the pin; fails with one line.
add_cache_dit() {
  [ "$(cat "$1/CACHE_DIT" 2>/dev/null)" = "$cache_dit_pin" ] && return 0
  if ! { "$1/bin/python" -m pip install -q --no-deps "$cache_dit_pin" && "$1/bin/python" -c 'import cache_dit'; } \
    >"$log" 2>&1; then
    say "cannot install $cache_dit_pin ($(grep -v '^\s*$' "$log" | tail -1))"
    return 1
  fi
  echo "$cache_dit_pin" >"$1/CACHE_DIT"
}

if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/STAMP" 2>/dev/null)" = "$stamp" ]; then
  add_cache_dit "$dir" || exit 1
  echo "$dir/bin/python"
  exit 0
fi
rm -rf "$dir.partial"
mkdir -p "$(dirname "$dir")"
start=$(date +%s)
{ "$python" -m venv "$dir.partial" &&
  "$dir.partial/bin/pip" install -q --no-deps "$torch_pin" &&
  "$dir.partial/bin/pip" install -q "${torch_pure[@]}" "${cuda_pins[@]}" &&
  "$dir.partial/bin/pip" install -q --no-deps "${hf_pins[2]}" &&
  "$dir.partial/bin/pip" install -q "${hf_pins[0]}" "${hf_pins[1]}" "${accelerate_deps[@]}"; } >"$log" 2>&1 ||
  { say "cannot install from PyPI ($(grep -v '^\s*$' "$log" | tail -1))"; rm -rf "$dir.partial"; exit 1; }
if ! "$dir.partial/bin/python" -c 'import torch, diffusers, transformers, accelerate
from torch.utils.flop_counter import FlopCounterMode' >"$log" 2>&1; then
  say "the venv does not import torch and diffusers ($(tail -1 "$log"))"
  rm -rf "$dir.partial"
  exit 1
fi
add_cache_dit "$dir.partial" || { rm -rf "$dir.partial"; exit 1; }
echo "$stamp" >"$dir.partial/STAMP"
rm -rf "$dir"
mv "$dir.partial" "$dir"
# A venv's scripts name its path: the moved venv is used through bin/python only, which works.
say "made $dir in $(( $(date +%s) - start )) s ($(du -sh "$dir" | cut -f1))"
echo "$dir/bin/python"
