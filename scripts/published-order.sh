#!/usr/bin/env bash
# The regression check of the shipped predictions on every published file: the shipped profiles
# (their fits applied) predict every row of profiles/reference/published-*.json (`cpplan calibrate
# --import ... --check`), and scripts/published-order.py fails naming any pair of rows ordered right
# at the baseline's commit (profiles/reference/order-baseline.json) that is now misordered.
# scripts/fit-runtimes.sh checks its two fits the same way. Reads only the repository.
# Usage: scripts/published-order.sh [path/to/cpplan]   (default build/cli/cpplan)
set -euo pipefail
cd "$(dirname "$0")/.."
cpplan=${1:-build/cli/cpplan}
. scripts/published-sets.sh
mapfile -t maps < <(published_maps 2)
run=$(mktemp)
trap 'rm -f "$run"' EXIT
"$cpplan" calibrate "${published_files[@]}" "${maps[@]}" --check --json > "$run"
python3 scripts/published-order.py profiles/reference/order-baseline.json shipped="$run"
