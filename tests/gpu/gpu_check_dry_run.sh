#!/usr/bin/env bash
# The GPU check's dry run: the bundle made from this build, unpacked, and every step that needs
# no GPU run from it (bundle completeness, --help, emulated op runs and networks); the steps
# that need a GPU must say "skipped" with their reason, none may fail. Exit 77 (skip) for a
# build without the CUDA Toolkit, which cannot make a bundle.
set -uo pipefail
root=$1
build=$2
if ! grep -q '^TT_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "skipped: this build has no CUDA Toolkit (no bundle can be made)"
  exit 77
fi
if [[ ! -x $build/bench/gpu_bench ]]; then
  echo "skipped: this build has no gpu_bench (TT_BUILD_BENCH=OFF, as the sanitizer trees)"
  exit 77
fi
dir=$build/gpu-check-dry-run
rm -rf "$dir"
"$root/scripts/gpu-bundle.sh" --no-build --level 1 --build-dir "$build" "$dir/bundle"
rc=$?
if [[ $rc != 0 && $rc != 3 ]]; then
  echo "FAIL: gpu-bundle.sh exited $rc"
  exit 1
fi
"$root/scripts/gpu-check.sh" "$dir/bundle" "$dir/out"
rc=$?
cat "$dir/out/summary.txt"
if [[ $rc != 0 ]] || grep -q ' fail ' "$dir/out/summary.txt"; then
  echo "FAIL: a step failed (log: $dir/out/check.log)"
  tail -60 "$dir/out/check.log"
  exit 1
fi
for step in env/bundle gpus/help sanitize/conv2d_nchw networks/resnet-18; do
  grep -q "^$step " "$dir/out/summary.txt" || { echo "FAIL: no $step line"; exit 1; }
done
echo "dry run passed"
