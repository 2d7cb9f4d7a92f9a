#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest.
# Extra arguments go to ctest (e.g. -R Conv2d).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cd "$root/build"
ctest --output-on-failure -j "$jobs" "$@"
