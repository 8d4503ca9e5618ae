# Shared by the launcher tests (sourced): checks that print what failed, the run database read
# with Python's sqlite3, a free loopback port, and the skip rule (exit 77: ctest's SKIP_RETURN_CODE).
set -euo pipefail

PY=${CPPLAN_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
failures=0

skip() { echo "skipped: $*"; exit 77; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed (scripts/install-deps.sh installs $2)"; }

# check WHAT EXPECTED ACTUAL
check() {
  if [ "$2" == "$3" ]; then echo "ok: $1 ($3)"; else echo "FAILED: $1: expected '$2', got '$3'"; failures=$((failures + 1)); fi
}
# check_contains WHAT NEEDLE FILE
check_contains() {
  if grep -qF -- "$2" "$3"; then echo "ok: $1"; else echo "FAILED: $1: '$2' not in $3:"; sed 's/^/  | /' "$3"; failures=$((failures + 1)); fi
}

# sql DB QUERY: the rows, '|'-separated, one per line.
sql() {
  "$PY" - "$1" "$2" <<'PY'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join(str(v) for v in row))
PY
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A tiny run: FLUX-shaped, 128x128, a few steps on the CPU.
tiny=(--model flux-tiny --res 128x128 --warmup 0)

# exit_code_of LOG COMMAND...: runs a command expected to fail, its output in LOG; prints its exit code.
exit_code_of() {
  local log=$1; shift
  "$@" > "$log" 2>&1 && echo 0 || echo $?
}

# The sweep the launcher tests emit: flux-tiny 128x128, one rank, Ulysses 2 and Ring 2.
write_sweep() {
  printf 'models = ["flux-tiny"]\nresolutions = ["128x128"]\nsteps = 2\nwarmup = 0\nplans = [ {}, { ulysses = 2 }, { ring = 2 } ]\n' > "$1"
}

# on_path WORK CPPLAN: cpplan (and cpplan-exec beside it) on PATH as `cpplan`, and the default
# database under WORK (XDG_DATA_HOME), as a user's shell has them.
on_path() {
  mkdir -p "$1/bin" "$1/data"
  ln -sf "$2" "$1/bin/cpplan"
  ln -sf "$(dirname "$2")/cpplan-exec" "$1/bin/cpplan-exec"
  export PATH="$1/bin:$PATH" XDG_DATA_HOME="$1/data"
  default_db="$1/data/cpplan/cpplan.db"
}

# readme LINE: runs a command the documentation shows word for word (README.md or docs/*.md:
# docs/running.md, "Running on a cluster"; docs/calibration.md, "Calibrate on your cluster").
readme() {
  grep -qxF -- "$1" "$here/../../README.md" "$here"/../../docs/*.md ||
    { echo "FAILED: neither README.md nor docs/ shows: $1"; failures=$((failures + 1)); }
  echo "\$ $1"
  bash -c "$1"
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
