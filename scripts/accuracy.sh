#!/usr/bin/env bash
# The calibration acceptance run (docs/accuracy.md): probe this machine with 2 ranks, run
# flux-tiny at 128, 192 and 256 px (single rank, Ring 2, Ulysses 2), calibrate on those runs,
# then predict and measure the same plans at 160, 224 and 320 px (never seen by the fit) and
# report MAPE and whether the predicted best plan is the measured best. Rewrites its section of
# docs/accuracy.md ("this-machine").
# Usage: scripts/accuracy.sh [path/to/cpplan]; CPPLAN_ACCURACY_KEEP=DIR keeps the database and CSVs there.
set -euo pipefail
cd "$(dirname "$0")/.."
cpplan=${1:-build/cli/cpplan}
work=$(mktemp -d)
keep=${CPPLAN_ACCURACY_KEEP:-}
trap 'if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$work"/. "$keep"/; fi; rm -rf "$work"' EXIT
db="$work/accuracy.db"
steps=30

echo "== probe" >&2
"$cpplan" probe --nproc 2 --db "$db" >&2

sweep_file() {  # sizes... -> a sweep file of flux-tiny at those sizes, one rank, Ring 2, Ulysses 2
  printf 'models = ["flux-tiny"]\nresolutions = [%s]\nsteps = %d\nwarmup = 3\nplans = [ {}, { ring = 2 }, { ulysses = 2 } ]\n' \
    "$(printf '"%s", ' "$@" | sed 's/, $//')" "$steps"
}

echo "== training runs" >&2
sweep_file 128x128 192x192 256x256 > "$work/train.toml"
"$cpplan" sweep "$work/train.toml" --db "$db" --csv "$work/train.csv" >&2

echo "== calibrate" >&2
calibration=$("$cpplan" calibrate --db "$db")
echo "$calibration" >&2

echo "== held-out runs" >&2
sweep_file 160x160 224x224 320x320 > "$work/test.toml"
"$cpplan" sweep "$work/test.toml" --db "$db" --csv "$work/test.csv" >&2
# model,resolution,frames,ranks,plan,status,measured_step_ms,predicted_step_ms,error_pct
rows="$work/rows"
awk -F, 'NR > 1 && $6 == "ok" { print $2 "|" $5 "|" $7 "|" $8 }' "$work/test.csv" > "$rows"

{
  cat <<'HEAD'
## This machine: the executor's calibrated model

Regenerate with `scripts/accuracy.sh` (about three minutes on two cores). It probes this machine
with 2 ranks (`cpplan probe`), runs flux-tiny at 128x128, 192x192 and 256x256 with one rank,
Ring 2 and Ulysses 2 (`cpplan run`, 30 timed steps after 3 warm-up passes), fits the calibration
on those nine runs (`cpplan calibrate`: non-negative least squares on relative error, 5-fold
cross-validation), then runs the same plans at 160x160, 224x224 and 320x320, sizes the fit never
saw, and compares the step time `cpplan run --json` predicted (the calibrated local model) with
the one it measured. Targets: MAPE <= 15%; at each size the predicted best plan is the measured
best or within 5% of it.

HEAD
  echo "Measured $(date -u +%Y-%m-%d) on: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
  echo
  echo '```'
  echo "$calibration"
  echo '```'
  echo
  echo "| size | plan | measured ms/step | predicted ms/step | error |"
  echo "|---|---|---|---|---|"
  awk -F'|' '{ e = ($4 - $3) / $3 * 100; printf "| %s | %s | %.2f | %.2f | %+.1f%% |\n", $1, $2, $3, $4, e }' "$rows"
  echo
  awk -F'|' '
    { e = ($4 - $3) / $3; if (e < 0) e = -e; sum += e; n++
      if (!($1 in bm) || $3 < bm[$1]) { bm[$1] = $3; bmp[$1] = $2 }
      if (!($1 in bp) || $4 < bp[$1]) { bp[$1] = $4; bpp[$1] = $2 }
      measured[$1 "|" $2] = $3 }
    END {
      printf "Held-out MAPE: **%.1f%%** over %d runs (target <= 15%%).\n\n", sum / n * 100, n
      print "| size | measured best | predicted best | predicted best, measured | within 5%? |"
      print "|---|---|---|---|---|"
      for (s in bm) {
        m = measured[s "|" bpp[s]]; gap = (m - bm[s]) / bm[s] * 100
        printf "| %s | %s (%.2f ms) | %s | %.2f ms (+%.1f%%) | %s |\n", s, bmp[s], bm[s], bpp[s], m, gap, gap <= 5 ? "yes" : "NO"
      }
    }' "$rows"
} | scripts/doc-section.sh docs/accuracy.md this-machine
echo "wrote its section of docs/accuracy.md" >&2
