#!/usr/bin/env bash
# Issue 56's CPU line (docs/accuracy.md, "A fixed cache schedule on CPU"): probe this machine with
# 2 ranks, then N rounds of two sweeps of flux-tiny, one after the other: the uncached training
# sweep (128, 192, 256 px; one rank, Ring 2, Ulysses 2) into train.db and the held-out sweep (160
# and 224 px, never calibrated on, and the training sizes; one rank and Ulysses 2; uncached, F1B0
# every 2, F1B1 every 3) into heldout.db. Then one calibration of train.db, and
# scripts/cache_accuracy.py predicts each held-out configuration from it (`cpplan run --dry-run`)
# and prints the tables: each cached configuration's denoising and each uncached step against the
# median of its runs, and the cached step's share of the computed step within each run. The two
# sweeps alternate so that a VM whose speed drifts over the flow (docs/accuracy.md saw 20% between
# calibrating and running) drifts under both alike. Runs whose host lent more than 5% of its CPU to
# other guests are left out, as `cpplan calibrate` leaves them out. About 11 minutes on two idle
# cores with N = 5; run it on a machine doing nothing else (builds, tests), and under `chrt -f 1`
# where allowed.
# Usage: scripts/cache-accuracy.sh [path/to/cpplan] [N]; CPPLAN_ACCURACY_KEEP=DIR keeps the databases.
set -euo pipefail
cd "$(dirname "$0")/.."
cpplan=${1:-build/cli/cpplan}
repeats=${2:-5}
if [ ! -x "$cpplan" ]; then
  echo "cache-accuracy: cpplan = $cpplan: not an executable (scripts/build.sh builds build/cli/cpplan)" >&2
  exit 2
fi
if ! [[ "$repeats" =~ ^[1-9][0-9]*$ ]]; then
  echo "cache-accuracy: N = $repeats: must be a whole number of rounds, at least 1" >&2
  exit 2
fi
work=$(mktemp -d)
keep=${CPPLAN_ACCURACY_KEEP:-}
trap 'if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$work"/. "$keep"/; fi; rm -rf "$work"' EXIT

cat > "$work/train.toml" <<'TOML'
models = ["flux-tiny"]
resolutions = ["128x128", "192x192", "256x256"]
steps = 30
warmup = 3
plans = [ {}, { ring = 2 }, { ulysses = 2 } ]
TOML
cat > "$work/heldout.toml" <<'TOML'
models = ["flux-tiny"]
resolutions = ["160x160", "224x224", "128x128", "192x192", "256x256"]
steps = 30
warmup = 3
plans = [ {}, { ulysses = 2 } ]
caches = [ {}, { fn = 1, bn = 0, warmup = 2, every = 2 }, { fn = 1, bn = 1, warmup = 2, every = 3 } ]
TOML

echo "== probe" >&2
"$cpplan" probe --nproc 2 --db "$work/train.db" >&2
for r in $(seq "$repeats"); do
  echo "== round $r of $repeats: training sweep" >&2
  "$cpplan" sweep "$work/train.toml" --db "$work/train.db" > /dev/null
  echo "== round $r of $repeats: held-out sweep" >&2
  "$cpplan" sweep "$work/heldout.toml" --db "$work/heldout.db" > /dev/null
done
echo "== calibrate" >&2
"$cpplan" calibrate --db "$work/train.db"
python3 scripts/cache_accuracy.py "$cpplan" "$work/train.db" "$work/heldout.db"
