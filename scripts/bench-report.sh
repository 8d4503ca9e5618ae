#!/usr/bin/env bash
# Regenerates the measured tables of docs/performance.md: runs `cpplan bench --markdown` (plus the
# Google Benchmark planner program and the whole-process ratio) and replaces the text between the
# BEGIN/END markers. Usage: scripts/bench-report.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/performance.md
tables=$(mktemp)
{
  echo "Measured $(date -u +%Y-%m-%d) on: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
  echo
  echo '```'
  echo "\$ build/cli/cpplan bench --markdown $*"
  echo '```'
  echo
  build/cli/cpplan bench --markdown "$@"
  echo
  echo '```'
  echo '$ build/bench/bench_planner --benchmark_filter=RankAllPlans'
  build/bench/bench_planner --benchmark_filter=RankAllPlans 2>/dev/null | grep -E '^BM_'
  echo '$ bench/cli_ratio.sh build/cli/cpplan 30'
  bench/cli_ratio.sh build/cli/cpplan 30
  echo '```'
} > "$tables"
awk -v tables="$tables" '
  /<!-- BEGIN bench -->/ { print; while ((getline line < tables) > 0) print line; skip = 1; next }
  /<!-- END bench -->/ { skip = 0 }
  !skip { print }' "$doc" > "$doc.new"
mv "$doc.new" "$doc"
rm -f "$tables"
echo "updated $doc"
