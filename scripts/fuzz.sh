#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/, docs/fuzzing.md) with ASan and UBSan:
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 600 s each, every target, one after another
# Installs clang and its fuzzer runtime when missing (they are not in install-deps.sh: the normal
# build and CI do not need clang), builds build-fuzz/ with clang, runs each target for SECONDS
# and prints one summary line per target; the lines also replace the target's row in
# docs/fuzzing.md. Inputs found go to build-fuzz/corpus/<target>/ (the committed fuzz/corpus is
# only read; FUZZ_MERGE=1 merges the new inputs that add coverage into it). A crash, leak, UB
# report or broken check leaves its input in build-fuzz/artifacts/<target>/ and the log in
# build-fuzz/logs/<target>.log. JOBS=N limits the build's parallel jobs (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
[ $# -gt 0 ] && shift
all_targets=(resolution profile sweep topology nccl_tests)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target $t (${all_targets[*]})" >&2; exit 2; }
done
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "fuzz: SECONDS = $seconds: must be a positive integer" >&2; exit 2; }

# clang-14 (compiler), libclang-rt-14-dev (libFuzzer, ASan and UBSan runtimes), llvm-14
# (llvm-symbolizer: stack traces with file and line). Same way as install-deps.sh.
packages=(clang-14 libclang-rt-14-dev llvm-14)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "fuzz: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
scripts/install-deps.sh  # the libraries cpplan itself builds with

CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPPLAN_FUZZ=ON \
  -DCPPLAN_EXECUTOR=OFF -DCPPLAN_GUI=OFF -DCPPLAN_BUILD_TESTS=OFF -DCPPLAN_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "${JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-14/bin/llvm-symbolizer}
mkdir -p build-fuzz/logs
cores=$(nproc)
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //;s/  */ /g' || echo unknown)
date=$(date -u +%Y-%m-%d)
failed=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  artifacts=build-fuzz/artifacts/$t
  log=build-fuzz/logs/$t.log
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz: $t for $seconds s (log $log)"
  # The first directory receives new inputs; the committed seeds are only read.
  rc=0
  "build-fuzz/fuzz/fuzz_$t" "$corpus" "fuzz/corpus/$t" -max_total_time="$seconds" -print_final_stats=1 \
    -timeout=60 -rss_limit_mb=4096 -max_len=8192 -artifact_prefix="$artifacts/" >"$log" 2>&1 || rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  runs=$(stat number_of_executed_units)
  per_second=$(stat average_exec_per_sec)
  # The last status line: "#N DONE cov: C ft: F corp: I/SIZE ..." (or the last "pulse"/"NEW").
  status=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$status")
  if [ "$rc" -eq 0 ]; then
    result="ok: no crash, leak or UB"
  else
    result="FAILED (exit $rc; input in $artifacts/, log $log)"
    failed=1
  fi
  line="$t: ${runs:-?} executions in $seconds s, ${per_second:-?} exec/s, corpus ${corp:-?} (inputs/size), coverage ${cov:-?} edges, ${ft:-?} features; $result"
  echo "fuzz: $line"
  row="| \`$t\` | $date | $cores | $seconds | ${runs:-?} | ${per_second:-?} | ${corp:-?} | ${cov:-?} | ${ft:-?} | $result |"
  # Replace the target's row of the figures table (the other tables have rows of the same name).
  awk -v t="| \`$t\` |" -v row="$row" -v cpu="$cpu" '
    /^\| target \| date/ { figures = 1 }
    figures && index($0, t) == 1 { print row; done = 1; next }
    /^<!-- fuzz.sh rows end -->/ { if (!done) print row; done = 1; figures = 0 }
    /^Machine of the last run: / { print "Machine of the last run: " cpu; next }
    { print }' docs/fuzzing.md >docs/fuzzing.md.new && mv docs/fuzzing.md.new docs/fuzzing.md
  if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$rc" -eq 0 ]; then
    "build-fuzz/fuzz/fuzz_$t" -merge=1 "fuzz/corpus/$t" "$corpus" >>"$log" 2>&1
  fi
done
exit $failed
