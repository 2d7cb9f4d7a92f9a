#!/usr/bin/env bash
# A minimal Debian root filesystem (debootstrap --variant=minbase) from Debian's packages alone,
# written as a tarball: the base of the image where no container registry answers
# (make-base-image.sh), and the fresh machine the package's test installs into.
#   deploy/container/debian-rootfs.sh OUT.tar [MIRROR] [SUITE]
# Needs root and debootstrap. MIRROR: default $TT_DEBIAN_MIRROR or http://deb.debian.org/debian;
# SUITE: default bookworm. The tarball has no apt lists or caches and no docs.
set -euo pipefail
out=${1:?usage: debian-rootfs.sh OUT.tar [MIRROR] [SUITE]}
mirror=${2:-${TT_DEBIAN_MIRROR:-http://deb.debian.org/debian}}
suite=${3:-bookworm}
if ! command -v debootstrap >/dev/null; then
  echo "debian-rootfs: debootstrap is missing (apt-get install debootstrap)" >&2
  exit 1
fi
if [[ $(id -u) != 0 ]]; then
  echo "debian-rootfs: debootstrap needs root" >&2
  exit 1
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/tensortune-rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
echo "debian-rootfs: debootstrap --variant=minbase $suite from $mirror ..."
if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1; then
  tail -5 "$root.log" >&2
  rm -f "$root.log"
  echo "debian-rootfs: debootstrap failed (is $mirror reachable? set TT_DEBIAN_MIRROR)" >&2
  exit 1
fi
rm -f "$root.log"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
  "$root"/var/log/* "$root"/var/cache/apt/*.bin
echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
# Written beside, then renamed: two makers of the same tarball (two tests at once) never mix.
partial=$(mktemp "$out.XXXXXX")
tar -C "$root" --numeric-owner -cf "$partial" .
mv "$partial" "$out"
echo "debian-rootfs: wrote $out ($(du -h "$out" | cut -f1))"
