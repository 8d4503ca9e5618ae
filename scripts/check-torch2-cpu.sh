#!/usr/bin/env bash
# Builds cpplan against LibTorch 2.x (Debian 13's CPU libtorch-dev 2.6) and runs its whole test
# suite there: the executor's 2.x branches (process groups as c10d::Backend, the store, the
# allocator, Gloo) built, linked and run, the multirank exactness tests included. Runs in a Debian
# 13 tree made with debootstrap under DIR (about 1.5 GB; as root), so nothing on this machine
# changes. About 15 minutes on two cores. Not part of scripts/test.sh.
#
# Usage: sudo scripts/check-torch2-cpu.sh [DIR]     (default: /tmp/cpplan-trixie)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/cpplan-trixie}
[ "$(id -u)" -eq 0 ] || { echo "check-torch2-cpu: run as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
if [ ! -x "$dir/usr/bin/apt-get" ]; then
  echo "check-torch2-cpu: debootstrap trixie into $dir"
  debootstrap --variant=minbase trixie "$dir" http://deb.debian.org/debian >/dev/null
fi
for m in proc dev dev/pts; do
  mountpoint -q "$dir/$m" || { [ "$m" = proc ] && mount -t proc proc "$dir/proc" || mount --bind "/$m" "$dir/$m"; }
done
trap 'umount "$dir/dev/pts" "$dir/dev" "$dir/proc" 2>/dev/null || true' EXIT
cp /etc/resolv.conf "$dir/etc/"
echo "check-torch2-cpu: installing the build packages (LibTorch 2.6)"
chroot "$dir" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build libtorch-dev libgloo-dev libeigen3-dev libboost-graph-dev libtomlplusplus-dev \
  nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libopenblas0-pthread python3-dev >/dev/null"
# Debian 13's catch2 is v3; the suites are Catch2 v2: this machine's (Debian 12) package files.
dpkg-query -W catch2 >/dev/null 2>&1 || { echo "check-torch2-cpu: needs Debian 12's catch2 here" >&2; exit 2; }
chroot "$dir" bash -c "apt-get remove -y -qq catch2 >/dev/null 2>&1 || true"
dpkg -L catch2 | while read -r f; do
  [ -f "$f" ] && case "$f" in */doc/*) ;; *) mkdir -p "$dir$(dirname "$f")" && cp "$f" "$dir$f" ;; esac
done
rm -rf "$dir/src"
git -C "$root" ls-files -z | (cd "$root" && xargs -0 tar cf -) | (mkdir -p "$dir/src" && tar xf - -C "$dir/src")
echo "check-torch2-cpu: build (GUI and benchmarks off)"
chroot "$dir" bash -c "cd /src && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCPPLAN_GUI=OFF \
  -DCPPLAN_BUILD_BENCH=OFF | grep 'cpplan executor' && cmake --build build"
echo "check-torch2-cpu: ctest"
chroot "$dir" bash -c "cd /src && ctest --test-dir build --output-on-failure -j\$(nproc)"
