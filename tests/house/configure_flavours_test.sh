#!/usr/bin/env bash
# Every build flavour configures: CMake runs (configure and generate) with each flavour's options
# from scripts/flavours.sh, in a scratch tree, nothing built. A flavour that cannot configure (an
# install rule naming a target the flavour does not build, an option that no longer exists)
# fails the suite here instead of in a deep stage that CI reports as not run.
#   configure_flavours_test.sh SOURCE_DIR
set -uo pipefail
src=$1
source "$src/scripts/flavours.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
declare -A pids
for f in "${flavour_names[@]}"; do
  if [[ $f == fuzz ]] && ! command -v clang++ >/dev/null; then
    echo "configure_flavours: fuzz not configured: clang++ is missing (scripts/deps.sh --test)"
    continue
  fi
  mapfile -t args < <(flavour_cmake_args "$f")
  mapfile -t vars < <(flavour_env "$f")
  tree="$scratch/${f//,/-}"
  env ${vars[@]+"${vars[@]}"} cmake -S "$src" -B "$tree" "${args[@]}" >"$tree.log" 2>&1 &
  pids[$f]=$!
done
failed=0
for f in "${!pids[@]}"; do
  if wait "${pids[$f]}"; then
    echo "configure_flavours: $f configures"
  else
    echo "configure_flavours: $f FAILED to configure:" >&2
    grep -E "Error|error" -A4 "$scratch/${f//,/-}.log" | head -30 >&2
    failed=1
  fi
done
exit $failed
