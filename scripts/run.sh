#!/usr/bin/env bash
# Installs what is missing, builds, and runs cpplan with the given arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >&2
scripts/build.sh >&2
exec build/cli/cpplan "$@"
