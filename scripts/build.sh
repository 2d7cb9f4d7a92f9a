#!/usr/bin/env bash
# Installs missing Debian packages, configures and builds tensortune (Release) into build/.
# Usage: scripts/build.sh [--target NAME]... [extra cmake args]
#   --target NAME  build only NAME (and what it needs), e.g. `--target tensortune` for the binary
#                  alone; repeatable; default: everything (tests and benchmarks included)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
targets=()
cmake_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) targets+=(--target "$2"); shift ;;
    --target=*) targets+=(--target "${1#*=}") ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done
"$root/scripts/deps.sh"
jobs=$(nproc 2>/dev/null || echo 2)
source "$root/scripts/flavours.sh"
mapfile -t flavour < <(flavour_cmake_args release)
cmake -S "$root" -B "$root/build" "${flavour[@]}" ${cmake_args[@]+"${cmake_args[@]}"} >/dev/null
cmake --build "$root/build" -j "$jobs" ${targets[@]+"${targets[@]}"}
