#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest.
# Extra arguments go to ctest (e.g. -R Conv2d).
#   --gpu   then run the tests that need a real GPU and fail if they skip (no GPU, no driver,
#           or a build without the CUDA Toolkit); for machines that have one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gpu=0
args=()
for a in "$@"; do
  if [[ "$a" == "--gpu" ]]; then gpu=1; else args+=("$a"); fi
done
"$root/scripts/deps.sh" --test
"$root/scripts/build.sh"
# The deploy/ checks' npm packages (kubernetes-models, yaml), pinned in deploy/test/package.json.
if command -v npm >/dev/null && [[ ! -d "$root/deploy/test/node_modules/kubernetes-models" ]]; then
  npm install --prefix "$root/deploy/test" --no-audit --no-fund --loglevel=error >/dev/null ||
    echo "test.sh: npm install in deploy/test failed: deploy_manifests will skip" >&2
fi
jobs=$(nproc 2>/dev/null || echo 2)
cd "$root/build"
ctest --output-on-failure -j "$jobs" ${args[@]+"${args[@]}"}
if [[ $gpu == 1 ]]; then
  out=$(./tests/compiler_test --gtest_filter='CudaDriver.*:CudaNvrtc.*' 2>&1) || {
    echo "$out"
    exit 1
  }
  echo "$out" | grep -E "^\[ *(OK|SKIPPED|FAILED) *\]|no GPU" || true
  if echo "$out" | grep -q "SKIPPED \]"; then
    echo "test.sh --gpu: the GPU tests skipped (reason above); this machine cannot run them" >&2
    exit 1
  fi
  if ! echo "$out" | grep -q "CudaDriver"; then
    echo "test.sh --gpu: this build has no CUDA support (no CUDA Toolkit found by CMake)" >&2
    exit 1
  fi
fi
