#!/usr/bin/env bash
# scripts/package.sh from a clean build: the package holds the binary, the Python module, the
# systemd units and the docs under /usr, carries the project's version, and depends on the
# shared libraries its files link (computed by dpkg-shlibdeps, so each one is checked here
# against what ldd says the installed files need).
#   make_package_test.sh REPO WORKDIR
# The build goes to REPO/build-package, package.sh's own default: at the depth of build/, so that
# ccache (based at REPO) finds every object the main build compiled.
set -euo pipefail
repo=$1
work_root=$2
source "$repo/tests/shipping/common.sh"
for tool in dpkg-deb dpkg-shlibdeps fakeroot cpack; do
  command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install dpkg-dev fakeroot)"
done
rm -rf "$work_root/dist"
"$repo/scripts/package.sh" --build-dir "$repo/build-package" --out "$work_root/dist"
deb=$(package_path)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
version=$(sed -n 's/^project(tensortune VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[[ $(dpkg-deb -f "$deb" Package) == tensortune ]] || fail "package name $(dpkg-deb -f "$deb" Package)"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
  fail "package version $(dpkg-deb -f "$deb" Version), project version $version"
[[ $(basename "$deb") == "tensortune_${version}_$(dpkg --print-architecture).deb" ]] ||
  fail "file name $(basename "$deb")"

contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for file in ./usr/bin/tensortune ./usr/lib/python3/dist-packages/tensortune/__init__.py \
  ./usr/lib/systemd/system/tensortune-tracker.service \
  ./usr/lib/systemd/system/tensortune-device@.service ./usr/share/doc/tensortune/deploy.md; do
  grep -qx "$file" <<<"$contents" || fail "the package lacks $file"
done
grep -q '^\./usr/lib/python3/dist-packages/tensortune/_tensortune\..*\.so$' <<<"$contents" ||
  fail "the package lacks the native Python module"
if grep -v '^\./usr/' <<<"$contents" | grep -qv '^\./$'; then
  fail "files outside /usr: $(grep -v '^\./usr/' <<<"$contents" | tr '\n' ' ')"
fi

# The units name the installed binary, not the /usr/local of a hand install.
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
dpkg-deb -x "$deb" "$unpacked"
for unit in "$unpacked"/usr/lib/systemd/system/*.service; do
  grep -q '^ExecStart=/usr/bin/tensortune ' "$unit" || fail "$(basename "$unit"): ExecStart is not /usr/bin/tensortune"
  ! grep -q /usr/local "$unit" || fail "$(basename "$unit") still names /usr/local"
done

# Every library the binary and the module link (their NEEDED entries, resolved as ldd does)
# comes from a package the .deb depends on.
depends=$(dpkg-deb -f "$deb" Depends)
depended=$(sed 's/ *([^)]*)//g' <<<"$depends" | tr ',' '\n' | tr -d ' ')
for file in "$unpacked"/usr/bin/tensortune "$unpacked"/usr/lib/python3/dist-packages/tensortune/_tensortune.*.so; do
  resolved=$(ldd "$file")
  for needed in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # ldd writes "name => /path (addr)", and the dynamic loader as "/path (addr)".
    lib=$(awk -v n="$needed" '$1 == n && $3 ~ /^\// { print $3 }
      $1 ~ /^\// && substr($1, length($1) - length(n)) == "/" n { print $1 }' <<<"$resolved")
    [[ -n $lib ]] || fail "$(basename "$file") needs $needed, which ldd does not resolve"
    owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) ||
      owner=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1) || true
    [[ -n $owner ]] || fail "$(basename "$file") links $lib, which no package owns"
    # A dependency may name the owner or a virtual package it provides (libspdlog1.10-fmt9).
    provides=$(dpkg-query -W -f='${Provides}' "$owner" | sed 's/ *([^)]*)//g' | tr ',' '\n' | tr -d ' ')
    printf '%s\n%s\n' "$owner" "$provides" | grep -qxFf - <(echo "$depended") ||
      fail "$(basename "$file") links $lib from $owner, which Depends lacks: $depends"
  done
done
echo "ok: $(basename "$deb"), $(du -h "$deb" | cut -f1), $(wc -l <<<"$contents") entries;" \
  "depends: $depends"
