#!/usr/bin/env bash
# Makes the Debian package of tensortune from a clean build: the binary, the Python module, the
# systemd units and the docs, installed under /usr, with the runtime dependencies dpkg-shlibdeps
# computes from what they link (cmake/install.cmake; docs/deploy.md).
#   scripts/package.sh [--build-dir DIR] [--out DIR] [--source DIR]
#     --build-dir  where to build (default build-package/; emptied first, so the package never
#                  holds what an earlier configuration left; ccache keeps the rebuild quick)
#     --out        where the .deb goes (default dist/)
#     --source     the source tree (default this script's repository)
# Prints the package's path, size and dependencies. Install it with
#   apt-get install ./dist/tensortune_VERSION_ARCH.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source_dir=$root
build_dir=
out_dir=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift ;;
    --out) out_dir=$2; shift ;;
    --source) source_dir=$(cd "$2" && pwd); shift ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build_dir=${build_dir:-$source_dir/build-package}
out_dir=${out_dir:-$source_dir/dist}
started=$SECONDS

"$source_dir/scripts/deps.sh"
for tool in cpack dpkg-shlibdeps fakeroot file; do
  if ! command -v "$tool" >/dev/null; then
    echo "package.sh: $tool is missing (apt-get install cmake dpkg-dev fakeroot file)" >&2
    exit 1
  fi
done

rm -rf "$build_dir"
mkdir -p "$build_dir"
echo "package.sh: configuring a Release build in $build_dir (no tests, no benchmarks)"
source "$root/scripts/flavours.sh"
mapfile -t flavour < <(flavour_cmake_args package)
cmake -S "$source_dir" -B "$build_dir" "${flavour[@]}" >"$build_dir/configure.log" 2>&1 || {
  cat "$build_dir/configure.log" >&2
  exit 1
}
echo "package.sh: building tensortune and its Python module ($(nproc) jobs)"
cmake --build "$build_dir" -j "$(nproc)"
(cd "$build_dir" && cpack -G DEB >cpack.log 2>&1) || {
  cat "$build_dir/cpack.log" >&2
  exit 1
}
mkdir -p "$out_dir"
deb=$(ls "$build_dir"/dist/tensortune_*.deb)
cp "$deb" "$out_dir/"
deb=$out_dir/$(basename "$deb")
echo "package.sh: $deb ($(du -h "$deb" | cut -f1), $((SECONDS - started)) s)"
dpkg-deb -f "$deb" Depends | sed 's/^/  depends: /'
