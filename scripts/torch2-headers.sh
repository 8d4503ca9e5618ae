#!/usr/bin/env bash
# Fetches the headers of a CUDA LibTorch 2.x (Debian 13's libtorch-cuda-dev, with libgloo-dev) into
# DIR/include, so that a CPU machine can compile the executor's LibTorch 2.x and CUDA/NCCL
# branches (-fsyntax-only; ctest label cuda) without a GPU or a PyTorch install. Nothing is
# installed: the packages are downloaded with a private apt state under DIR and unpacked there.
# Idempotent: an existing DIR/include of the same version is kept.
#
# Usage: scripts/torch2-headers.sh [DIR]      (default: .torch2-headers at the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.torch2-headers}
suite=trixie
packages=(libtorch-cuda-dev libgloo-dev)
mirror=${CPPLAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

if [ -f "$dir/include/torch/csrc/api/include/torch/version.h" ] && [ -f "$dir/VERSION" ]; then
  echo "torch2-headers: $(cat "$dir/VERSION") headers present in $dir/include"
  exit 0
fi
[ -f "$keyring" ] || { echo "torch2-headers: $keyring missing (Debian package debian-archive-keyring)" >&2; exit 1; }
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
printf 'deb [signed-by=%s] %s %s main contrib\n' "$keyring" "$mirror" "$suite" >"$state/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o APT::Architecture=amd64
          -o APT::Sandbox::User=root -o Debug::NoLocking=1)
# apt-get update exits 0 when a mirror cannot be reached: the lists it wrote are the test.
if ! apt-get "${apt_opts[@]}" -qq update >"$state/update.log" 2>&1 || ! ls "$state"/lists/*Packages* >/dev/null 2>&1; then
  echo "torch2-headers: cannot read Debian $suite's package lists from $mirror ($(tail -1 "$state/update.log"))" >&2
  exit 1
fi
(cd "$state/debs" && apt-get "${apt_opts[@]}" -qq download "${packages[@]}" >"$state/download.log" 2>&1) ||
  { echo "torch2-headers: cannot download ${packages[*]} ($(tail -1 "$state/download.log"))" >&2; exit 1; }
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
for deb in "$state"/debs/*.deb; do dpkg-deb -x "$deb" "$state/root"; done
mv "$state/root/usr/include" "$dir.partial/include"
version=$(sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)/\2/p' \
  "$dir.partial/include/torch/csrc/api/include/torch/version.h" | paste -sd.)
echo "LibTorch $version (Debian $suite: ${packages[*]})" >"$dir.partial/VERSION"
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "torch2-headers: LibTorch $version headers in $dir/include ($(du -sh "$dir" | cut -f1))"
