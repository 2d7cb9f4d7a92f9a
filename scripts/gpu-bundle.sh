#!/usr/bin/env bash
# Packs what a GPU machine needs to run tensortune into one compressed archive that travels:
# the CLI, gpu_bench, the test binaries that hold the GPU tests, and every shared library they
# load that such a machine will not have (gRPC, protobuf, abseil, LLVM, XGBoost, SQLite, ONNX,
# spdlog, fmt and what those pull in). glibc, libstdc++, libgcc and CUDA's own libraries
# (driver, runtime, NVRTC, cuBLAS, cuDNN) are left out: the GPU machine has them, newer.
#
# Usage: scripts/gpu-bundle.sh [--no-build] [--level N] [--build-dir DIR] [OUTDIR]
#   OUTDIR      gpu-bundle/ by default (git-ignored)
#   --build-dir the Release build to pack (build/ by default; with --no-build only)
#   --level N   xz preset, 0-9 (default 9: about 47 MiB, 3 minutes on 2 cores; 1 for a quick
#               local dry run, about 60 MiB)
# Then:  scripts/gpu-check.sh OUTDIR CHECKDIR               (here: a dry run; there: the check)
#
# The build must have the CUDA Toolkit (NVRTC and the cuDNN/cuBLAS anchors of gpu_bench);
# binaries are stripped and the archive is xz-compressed. Prints the travelling size.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=1
level=9
build_dir=$root/build
out=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --level) level=$2; shift ;;
    --build-dir) build_dir=$(cd "$2" && pwd) || exit 2; custom_dir=1; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-bundle: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
[[ $level =~ ^[0-9]$ ]] || { echo "gpu-bundle: --level $level: give 0 to 9" >&2; exit 2; }
out=${out:-$root/gpu-bundle}

if [[ $build == 1 && -n ${custom_dir:-} ]]; then
  echo "gpu-bundle: --build-dir packs an existing build: give --no-build too" >&2
  exit 2
fi
if [[ $build == 1 ]]; then
  "$root/scripts/build.sh" >/dev/null
fi
if ! grep -q '^TT_WITH_CUDA:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null ||
  [[ ! -x $build_dir/bench/gpu_bench ]]; then
  echo "gpu-bundle: $build_dir has no CUDA support or no gpu_bench: the CUDA Toolkit (with NVRTC, cuDNN and" \
    "cuBLAS headers) must be under /usr/local/cuda when CMake configures the build" >&2
  exit 1
fi

binaries=(cli/tensortune bench/gpu_bench tests/compiler_test tests/backend_test)
# Libraries the GPU machine provides (and must provide in its own, matching versions).
provided='^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec|libpthread|libdl\.so|librt\.so|libresolv|libutil\.so|libstdc\+\+|libgcc_s|libcuda\.so|libcudart|libcublas|libcublasLt|libcudnn|libnvrtc|libnvJitLink)'

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
declare -A seen=()
for b in "${binaries[@]}"; do
  src=$build_dir/$b
  [[ -x $src ]] || { echo "gpu-bundle: $src is missing (build it first)" >&2; exit 1; }
  cp "$src" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$b")"
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    [[ $name =~ $provided ]] && continue
    if [[ $path == "not" ]]; then
      echo "gpu-bundle: $b needs $name, which this machine cannot resolve" >&2
      exit 1
    fi
    [[ -n ${seen[$name]:-} ]] && continue
    seen[$name]=1
    cp -L "$path" "$stage/lib/$name"
  done < <(ldd "$src")
done
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true

{
  echo "tensortune GPU bundle"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo '+changes')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "cuda toolkit: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
  echo "left to the GPU machine: glibc, libstdc++, libgcc, libcuda, libcudart, libnvrtc, libcublas, libcudnn"
  echo "binaries:"
  (cd "$stage" && du -b bin/* | awk '{printf "  %s %d\n", $2, $1}')
  echo "libraries:"
  (cd "$stage" && du -b lib/* | awk '{printf "  %s %d\n", $2, $1}')
} > "$stage/MANIFEST"

mkdir -p "$out"
rm -f "$out/tensortune-gpu.tar.xz"
tar -C "$stage" -cf - . | xz -"$level" -T0 > "$out/tensortune-gpu.tar.xz"
cp "$stage/MANIFEST" "$out/MANIFEST"

unpacked=$(du -sb "$stage" | cut -f1)
packed=$(stat -c %s "$out/tensortune-gpu.tar.xz")
tree=$(git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "gpu-bundle: $out/tensortune-gpu.tar.xz: $(ls "$stage/bin" | wc -l) binaries, $(ls "$stage/lib" | wc -l) libraries, $(mib "$unpacked") unpacked, $(mib "$packed") packed"
echo "gpu-bundle: travelling size (working tree + bundle): $(mib $((tree + packed))) of the 60 MiB allowed"
if ((tree + packed > 60 * 1048576)); then
  echo "gpu-bundle: too large to travel (built all the same; exit status 3)" >&2
  exit 3
fi
