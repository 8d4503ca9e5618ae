#!/usr/bin/env bash
# Runs every command of README.md's ```sh blocks, in order, in one shell, as a new user would:
# from a copy of the repository's layout (each top-level entry linked, build/ the build tree), with
# a fresh database ($XDG_DATA_HOME, outside the linked tree) and an off-screen Qt. Two kinds are not run, each said so:
# the set-up commands (CI runs scripts/test.sh itself, and the query of scripts/run.sh is the ctest
# "cli: cpplan --gpus 4 --res 1008x1008 runs"); cpplan-gui, which opens a window, gets
# --screenshot so that it renders once and exits. Usage: run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/cpplan-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT
for entry in "$src"/* "$src"/.ci; do
  name=$(basename "$entry")
  [ "$name" = build ] || ln -s "$entry" "$work/$name"
done
ln -s "$build" "$work/build"

# The commands: lines of ```sh blocks, without comments.
mapfile -t commands < <(awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$src/README.md" |
  sed -e 's/[[:space:]]\{2,\}#.*$//' -e 's/[[:space:]]*$//' | grep -v '^#' | grep -v '^$')
[ ${#commands[@]} -ge 10 ] || { echo "FAILED: found only ${#commands[@]} commands in README.md"; exit 1; }

script="$work/readme-commands.sh"
{
  echo "set -uo pipefail"
  echo "cd '$work'"
  echo "export XDG_DATA_HOME='$work/xdg-data' QT_QPA_PLATFORM=offscreen"
  for c in "${commands[@]}"; do
    case "$c" in
      scripts/run.sh*|scripts/test.sh*)
        printf 'echo %q\n' "== not run here (set-up; CI runs scripts/test.sh, ctest runs the query): $c"
        continue ;;
      cpplan-gui*) run="$c --screenshot '$work/gui.png'" ;;
      *) run="$c" ;;
    esac
    printf 'echo %q\n' "== $c"
    printf '%s > "%s/out.txt" 2>&1 || { cat "%s/out.txt"; echo %q; exit 1; }\n' "$run" "$work" "$work" "FAILED: $c"
    printf 'cat "%s/out.txt" >> "%s/all.txt"\n' "$work" "$work"
  done
} > "$script"
touch "$work/.start"
bash "$script"
# Nothing was written into the source tree (the links lead there).
written=$(find "$src" -newer "$work/.start" -type f -not -path "$src/.git/*" -not -path "$build/*" -not -path "$src/build/*" | head -5)
[ -z "$written" ] || { echo "FAILED: README's commands wrote into the source tree: $written"; exit 1; }

# What README says the commands print.
grep -qF "{'ulysses_degree': 4, 'ulysses_anything': True}" "$work/all.txt" ||
  { echo "FAILED: the Python line did not print {'ulysses_degree': 4, 'ulysses_anything': True}"; exit 1; }
[ -s "$work/gui.png" ] || { echo "FAILED: cpplan-gui rendered no screenshot"; exit 1; }
[ -s "$work/mine/fits/my-fit.toml" ] || { echo "FAILED: calibrate --import wrote no fit"; exit 1; }
# The example output at the top: each of its lines (but "...") is a line cpplan prints.
example=$(awk '/^\$ cpplan --gpus 4 --res 1008x1008$/ { on = 1; next } /^```/ { on = 0 } on' "$src/README.md")
actual=$("$build/cli/cpplan" --gpus 4 --res 1008x1008 --hardware h100-sxm)
while IFS= read -r line; do
  case "$line" in *...) continue ;; esac
  grep -qxF -- "$line" <<< "$actual" || { echo "FAILED: README's example shows a line cpplan does not print: $line"; exit 1; }
done <<< "$example"
echo "all ${#commands[@]} README commands checked, and its example output"
