#!/usr/bin/env bash
# Regenerates the GUI's pictures in docs/ from the real built cpplan-gui (issue 15):
#   docs/gui.png              the Plans tab (FLUX.1-dev on 4 x H100, 1008x1008)
#   docs/gui-topology.png     the Plans tab on two DGX H100 nodes: the selected plan's placement
#   docs/gui-local.png        the Plans tab with --hardware local: this machine's calibrated model
#   docs/gui-any.png          the Plans tab with --dtype any --cache any on 8 x H100: the dtype and cache columns
#   docs/gui-heatmap.png, docs/gui-history.png, docs/gui-run.png,
#   docs/gui-calibration.png, docs/gui-sweep.png   one per tab (--tab NAME)
# History and Calibration show a real calibration of this machine: unless --db FILE names a
# database to show, the script first probes it (--quick), runs a small CPU sweep of flux-tiny and
# fits `cpplan calibrate`, all into a temporary database (a few minutes on a laptop).
# Off-screen by default (QT_QPA_PLATFORM=offscreen); QT_QPA_PLATFORM=xcb uses `xvfb-run -a`.
#
# Usage: scripts/gui-screenshots.sh [BUILD_DIR] [--db FILE]     (BUILD_DIR default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
db=""
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gui-screenshots: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done
build=$(cd "$build" && pwd)
gui="$build/gui/cpplan-gui"
cpplan="$build/cli/cpplan"
for exe in "$gui" "$cpplan"; do
  [ -x "$exe" ] || { echo "gui-screenshots: $exe not found: build it first (cmake --build $build --target cpplan-gui cpplan)" >&2; exit 3; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/cpplan-shots-XXXXXX")
trap 'rm -rf "$work"' EXIT

shot() {  # shot OUTPUT.png ARGS...: one window picture, 1480x920
  local out="$1"; shift
  if [ "${QT_QPA_PLATFORM:-offscreen}" = offscreen ]; then
    QT_QPA_PLATFORM=offscreen "$gui" --size 1480x920 --screenshot "$out" "$@"
  else
    xvfb-run -a "$gui" --size 1480x920 --screenshot "$out" "$@"
  fi
}

if [ -z "$db" ]; then
  db="$work/demo.db"
  echo "gui-screenshots: probing this machine and fitting a calibration into $db (a few minutes)"
  "$cpplan" probe --nproc 2 --quick --model flux-tiny --db "$db" 2>/dev/null
  cat > "$work/demo-sweep.toml" <<'TOML'
models = ["flux-tiny"]
resolutions = ["128x128", "192x192"]
steps = 3
warmup = 1
plans = [ {}, { ulysses = 2 }, { ring = 2 }, { ring = 2, rotate_method = "p2p" } ]
TOML
  "$cpplan" sweep "$work/demo-sweep.toml" --db "$db" --csv "$work/demo-sweep.csv" 2>/dev/null
  "$cpplan" calibrate --db "$db"
fi
# The sweep tab shows a file to run; the docs' example from docs/calibration.md.
sweep_file="$work/sweep.toml"
cat > "$sweep_file" <<'TOML'
models = ["flux-tiny"]
resolutions = ["128x128", "192x192"]
gpus = [2, 4]
plans = "all"
TOML

query=(--gpus 4 --res 1008x1008 --hardware h100-sxm)
shot "$root/docs/gui.png" "${query[@]}" --db "$db"
shot "$root/docs/gui-topology.png" --topology dgx-h100 --nodes 2 --model wan2.1-t2v-14b --res 1280x720 --frames 81 --db "$db"
# This machine's probes and calibration: the plans of flux-tiny as the executor runs them here.
shot "$root/docs/gui-local.png" --hardware local --model flux-tiny --gpus 2 --res 256x256 --db "$db"
shot "$root/docs/gui-any.png" --gpus 8 --hardware h100-sxm --dtype any --cache any --db "$db"
for tab in heatmap history run calibration sweep; do
  shot "$root/docs/gui-$tab.png" "${query[@]}" --tab "$tab" --db "$db" --sweep-file "$sweep_file"
done
echo "gui-screenshots: wrote docs/gui.png, docs/gui-topology.png, docs/gui-local.png, docs/gui-any.png and docs/gui-{heatmap,history,run,calibration,sweep}.png"
