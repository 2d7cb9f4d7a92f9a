#!/usr/bin/env bash
# Makes the base image of deploy/container/Dockerfile from Debian's packages alone, for build
# machines that reach a Debian mirror but no container registry: debootstrap a minimal
# bookworm root filesystem, then import it as an image.
#   sudo deploy/container/make-base-image.sh [IMAGE] [MIRROR]
#   docker build --build-arg BASE=tensortune-base:bookworm -f deploy/container/Dockerfile -t tensortune .
# Needs root (debootstrap) and the debootstrap package; `docker import` needs a Docker engine
# (podman import works the same).
set -euo pipefail
image=${1:-tensortune-base:bookworm}
mirror=${2:-http://deb.debian.org/debian}
if ! command -v debootstrap >/dev/null; then
  echo "make-base-image: debootstrap is missing: apt-get install debootstrap" >&2
  exit 1
fi
root=$(mktemp -d /tmp/tensortune-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "make-base-image: debootstrap bookworm from $mirror into $root ..."
debootstrap --variant=minbase bookworm "$root" "$mirror"
# What a container base needs and a chroot does not: no apt caches, no docs.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
echo "deb $mirror bookworm main" > "$root/etc/apt/sources.list"
engine=$(command -v docker || command -v podman || true)
if [[ -z "$engine" ]]; then
  tar -C "$root" -c . | gzip > tensortune-base-bookworm.tar.gz
  echo "make-base-image: no docker or podman here; wrote tensortune-base-bookworm.tar.gz" \
       "(import it with: docker import tensortune-base-bookworm.tar.gz $image)"
  exit 0
fi
tar -C "$root" -c . | "$engine" import - "$image"
echo "make-base-image: imported $image"
