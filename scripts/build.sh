#!/usr/bin/env bash
# Configures and builds cpplan (Release) in build/: every part (executor, GUI, Python module,
# tests, benchmarks). With --planner, only the planning binary build/cli/cpplan, configured
# without the optional parts (scripts/run.sh). Other arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=(-DCPPLAN_EXECUTOR=ON -DCPPLAN_GUI=ON -DCPPLAN_PYTHON=ON -DCPPLAN_BUILD_TESTS=ON -DCPPLAN_BUILD_BENCH=ON)
targets=()
if [ "${1:-}" = "--planner" ]; then
  shift
  targets=(--target cpplan)
  # A build/ that was configured whole keeps its parts; a new one gets none of them.
  [ -f build/CMakeCache.txt ] && parts=() ||
    parts=(-DCPPLAN_EXECUTOR=OFF -DCPPLAN_GUI=OFF -DCPPLAN_PYTHON=OFF -DCPPLAN_BUILD_TESTS=OFF -DCPPLAN_BUILD_BENCH=OFF)
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${parts[@]}" "$@" >/dev/null
cmake --build build "${targets[@]}"
