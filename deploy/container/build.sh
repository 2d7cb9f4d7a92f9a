#!/usr/bin/env bash
# Builds the tensortune image (deploy/container/Dockerfile): the Debian package installed onto a
# minimal Debian base, uid 10001, `tensortune` as the entrypoint. Works with a Docker engine,
# podman or buildah (daemonless: `buildah bud --isolation chroot`, as root), whichever is here.
#   deploy/container/build.sh [--package DEB | --from-source] [--tag NAME] [--base IMAGE]
#                             [--engine docker|podman|buildah] [--mirror URL]
#     --package DEB   install this package (default: the newest dist/tensortune_*.deb, made by
#                     scripts/package.sh first when there is none)
#     --from-source   compile the package inside the Dockerfile's build stage instead
#     --tag NAME      default tensortune:VERSION, also tagged tensortune:latest (the name the
#                     compose and Kubernetes files use)
#     --base IMAGE    default debian:bookworm-slim from the registry; where no registry answers,
#                     tensortune-base:bookworm, made from Debian's packages (make-base-image.sh)
#     --engine NAME   docker, podman or buildah (default: the first of them that works here)
#     --mirror URL    a Debian mirror for apt inside the build (and for the base)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
package=
from_source=0
tag=
base=
engine=
mirror=${TT_DEBIAN_MIRROR:-}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --package) package=$(realpath "$2"); shift ;;
    --from-source) from_source=1 ;;
    --tag) tag=$2; shift ;;
    --base) base=$2; shift ;;
    --engine) engine=$2; shift ;;
    --mirror) mirror=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
started=$SECONDS
version=$(sed -n 's/^project(tensortune VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
tags=("${tag:-tensortune:$version}")
[[ -z $tag ]] && tags+=(tensortune:latest)

if [[ -z $engine ]]; then
  for candidate in docker podman buildah; do
    # The docker client alone is no engine: it needs a daemon.
    if [[ $candidate == docker ]] && ! docker info >/dev/null 2>&1; then continue; fi
    if command -v "$candidate" >/dev/null; then engine=$candidate && break; fi
  done
fi
case "$engine" in
  docker) build=(docker build) ;;
  podman) build=(podman build --isolation chroot) ;;
  buildah) build=(buildah bud --isolation chroot) ;;
  "")
    echo "build.sh: no container engine here: a Docker engine, podman or buildah" \
      "(apt-get install buildah: it needs no daemon)" >&2
    exit 1 ;;
  *) echo "build.sh: unknown engine '$engine' (docker, podman or buildah)" >&2; exit 2 ;;
esac
if [[ $engine != docker && $(id -u) != 0 ]]; then
  echo "build.sh: $engine with --isolation chroot needs root" >&2
  exit 1
fi

image_exists() {
  if [[ $engine == buildah ]]; then
    buildah inspect --type image "$1" >/dev/null 2>&1
  else
    "$engine" image inspect "$1" >/dev/null 2>&1
  fi
}
if [[ -z $base ]]; then
  base=docker.io/library/debian:bookworm-slim
  if ! image_exists "$base" && ! "$engine" pull -q "$base" >/dev/null 2>&1; then
    base=tensortune-base:bookworm
    if image_exists "$base"; then
      echo "build.sh: no registry answers; base $base (made earlier from Debian's packages)"
    else
      echo "build.sh: no registry answers; making $base from Debian's packages"
      "$here/make-base-image.sh" --engine "$engine" "$base" ${mirror:+"$mirror"}
    fi
  fi
fi

args=(--build-arg "BASE=$base" -f "$here/Dockerfile")
[[ -n $mirror ]] && args+=(--build-arg "APT_MIRROR=$mirror")
for t in "${tags[@]}"; do args+=(-t "$t"); done
if [[ $from_source == 1 ]]; then
  # Two steps, one runtime stage: the build stage's package, then the image from it.
  echo "build.sh: compiling the package in the build stage ($engine, base $base)"
  "${build[@]}" --build-arg "BASE=$base" ${mirror:+--build-arg "APT_MIRROR=$mirror"} \
    -f "$here/Dockerfile" --target build -t tensortune-build:"$version" "$root"
  package_dir=$(mktemp -d)
  trap 'rm -rf "$package_dir"' EXIT
  if [[ $engine == buildah ]]; then
    ctr=$(buildah from tensortune-build:"$version")
    mnt=$(buildah mount "$ctr")
    cp "$mnt"/dist/tensortune_*.deb "$package_dir/"
    buildah unmount "$ctr" >/dev/null && buildah rm "$ctr" >/dev/null
  else
    ctr=$("$engine" create tensortune-build:"$version")
    "$engine" cp "$ctr:/dist/." "$package_dir/"
    "$engine" rm "$ctr" >/dev/null
  fi
  package=$(ls "$package_dir"/tensortune_*.deb)
elif [[ -z $package ]]; then
  package=$(ls -t "$root"/dist/tensortune_*.deb 2>/dev/null | head -1 || true)
  if [[ -z $package ]]; then
    echo "build.sh: no package in dist/: making one (scripts/package.sh)"
    "$root/scripts/package.sh"
    package=$(ls -t "$root"/dist/tensortune_*.deb | head -1)
  fi
fi
if [[ ! -f $package ]]; then
  echo "build.sh: --package $package: no such file" >&2
  exit 1
fi

# The context is the package alone: nothing else of the tree goes into the image.
context=$(mktemp -d)
trap 'rm -rf "$context" ${package_dir:+"$package_dir"}' EXIT
mkdir "$context/dist"
cp "$package" "$context/dist/"
echo "build.sh: building ${tags[*]} from $(basename "$package") on $base ($engine)"
"${build[@]}" "${args[@]}" "$context"
size=$("$engine" images --format '{{.Size}}' "${tags[0]}" 2>/dev/null | head -1 || true)
echo "build.sh: ${tags[*]} built in $((SECONDS - started)) s (${size:-size unknown})"
