#!/usr/bin/env bash
# Installs what the planner needs, builds the planning binary alone, and runs cpplan with the given
# arguments. scripts/build.sh builds the rest (cpplan run's executor, the GUI, Python, the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --planner >&2
scripts/build.sh --planner >&2
exec build/cli/cpplan "$@"
