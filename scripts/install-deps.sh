#!/usr/bin/env bash
# Installs every Debian 12 package cpplan needs to build, test and benchmark; with --planner, only
# those the planning binary `cpplan` needs (scripts/run.sh). Idempotent: packages already present
# are left alone; apt-get update runs once, only when something is missing.
set -euo pipefail

planner_packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libboost-graph-dev      # costmodel (least squares), planner (topology graphs)
  libtomlplusplus-dev                   # profile files (TOML)
  nlohmann-json3-dev                    # JSON output
  libcli11-dev                          # command-line parsing
  libfmt-dev                            # formatting
  libsqlite3-dev                        # the measurement store (data/)
)
packages=(
  "${planner_packages[@]}"
  libtorch-dev libgloo-dev              # the executor: LibTorch 1.13 CPU and its c10d/Gloo headers
  python3-torch                         # python/cpplan_record.py's tests: the recorder times a real torch loop (/usr/bin/python3)
  pybind11-dev python3-dev              # the Python module cpplan (python/, CPPLAN_PYTHON): pybind11 and Python's headers
  libopenblas0-pthread                  # optimized BLAS for LibTorch's CPU GEMMs (the default reference BLAS is ~8x slower)
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev  # cpplan-gui (gui/); Qt Charts' CMake package needs OpenGL
  qt6-qpa-plugins fonts-dejavu-core xvfb         # headless GUI: offscreen/xcb plugins, a font, xvfb-run
  catch2                                # tests (Catch2 v2)
  libbenchmark-dev                      # bench/ (Google Benchmark)
  slurmd slurmctld slurm-client munge   # tests/cluster: a one-node Slurm the test starts (as root)
  openmpi-bin mpich                     # tests/cluster: Open MPI's mpirun, MPICH's mpiexec.mpich
)

case "${1:-}" in
  --planner) packages=("${planner_packages[@]}") ;;
  "") ;;
  *) echo "install-deps: $1: unknown option (--planner: only what cpplan needs)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
