#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Headers of a CUDA LibTorch 2.x (Debian 13's), for the test that compiles the GPU half against
# them; without network access that one test is left out.
scripts/torch2-headers.sh || echo "test: no LibTorch 2.x headers; the LibTorch 2.x compile check is left out" >&2
# The venv of the reference test (diffusers and torch 2.x from PyPI, cached in ~/.cache/cpplan);
# without network access that one test is left out.
scripts/reference-venv.sh >/dev/null ||
  echo "test: no reference venv (diffusers, torch 2.x); the diffusers reference test is left out" >&2
scripts/build.sh
# The launcher tests (ctest label cluster) skip where this machine cannot host a launcher: say why.
for launcher in torchrun slurm mpi; do
  bash "tests/cluster/$launcher.sh" build/cli/cpplan --check | sed "s/^/test: cluster ($launcher): /" || true
done
ctest --test-dir build --output-on-failure -j"$(nproc)"
