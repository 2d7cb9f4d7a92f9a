#!/usr/bin/env bash
# Makes the base image of deploy/container/Dockerfile from Debian's packages alone, for build
# machines that reach a Debian mirror but no container registry: a minimal bookworm root
# filesystem (debian-rootfs.sh), imported as an image. build.sh calls it when no registry answers.
#   deploy/container/make-base-image.sh [--engine docker|podman|buildah] [--rootfs TAR]
#                                       [IMAGE] [MIRROR]
#   IMAGE   default tensortune-base:bookworm
#   MIRROR  default $TT_DEBIAN_MIRROR or http://deb.debian.org/debian
#   --rootfs  import this tarball (from debian-rootfs.sh) instead of making one
# Needs root. With no engine here, it leaves the tarball to import elsewhere.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
engine=
rootfs=
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --engine) engine=$2; shift ;;
    --rootfs) rootfs=$2; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
image=${positional[0]:-tensortune-base:bookworm}
mirror=${positional[1]:-${TT_DEBIAN_MIRROR:-http://deb.debian.org/debian}}
if [[ -z $engine ]]; then
  for candidate in docker podman buildah; do
    # The docker client alone is no engine: it needs a daemon.
    if [[ $candidate == docker ]] && ! docker info >/dev/null 2>&1; then continue; fi
    if command -v "$candidate" >/dev/null; then engine=$candidate && break; fi
  done
fi
if [[ -z $rootfs ]]; then
  rootfs=$(mktemp "${TMPDIR:-/tmp}/tensortune-rootfs.XXXXXX.tar")
  trap 'rm -f "$rootfs"' EXIT
  "$here/debian-rootfs.sh" "$rootfs" "$mirror"
fi
case "$engine" in
  docker | podman)
    "$engine" import --change 'CMD ["/bin/bash"]' "$rootfs" "$image" >/dev/null ;;
  buildah)
    ctr=$(buildah from scratch)
    mnt=$(buildah mount "$ctr")
    tar -C "$mnt" --numeric-owner -xf "$rootfs"
    buildah unmount "$ctr" >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --cmd /bin/bash "$ctr"
    buildah commit -q --rm "$ctr" "$image" >/dev/null ;;
  *)
    cp "$rootfs" tensortune-base-bookworm.tar
    echo "make-base-image: no docker engine, podman or buildah here; wrote" \
      "tensortune-base-bookworm.tar (import it with: docker import tensortune-base-bookworm.tar $image)"
    exit 0 ;;
esac
echo "make-base-image: $image ($engine)"
