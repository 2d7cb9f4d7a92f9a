# Shared by the tests of the package and the image (sourced): skipping with a reason, and a
# minimal Debian root filesystem cached between runs.

skip() {
  echo "SKIP: $*"
  exit 77
}

need_root_and() {
  [[ $(id -u) == 0 ]] || skip "needs root (chroot, mounts, buildah --isolation chroot)"
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install $tool)"
  done
}

# Prints the path of a debootstrapped minbase bookworm tarball, made at most a week ago: kept in
# $TT_SHIPPING_CACHE (default ~/.cache/tensortune/shipping), since debootstrap is most of a
# fresh root's cost. Skips when no Debian mirror answers.
cached_debian_rootfs() {
  local cache=${TT_SHIPPING_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensortune/shipping}
  local tar=$cache/bookworm-minbase.tar
  mkdir -p "$cache"
  if [[ -z $(find "$tar" -mtime -7 2>/dev/null) ]]; then
    "$repo/deploy/container/debian-rootfs.sh" "$tar" >&2 ||
      skip "no minimal Debian root: debootstrap failed (no Debian mirror reachable?" \
        "set TT_DEBIAN_MIRROR)"
  fi
  echo "$tar"
}

# The package under test: scripts/package.sh from a clean build, once per ctest run (the
# ship_package fixture), into $TT_SHIPPING_DIR/dist.
package_path() {
  local deb
  deb=$(ls "$work_root"/dist/tensortune_*.deb 2>/dev/null | head -1)
  [[ -n $deb ]] || {
    echo "FAIL: no package in $work_root/dist (the ship_package test makes it)" >&2
    exit 1
  }
  echo "$deb"
}
