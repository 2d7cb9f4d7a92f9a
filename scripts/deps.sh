#!/usr/bin/env bash
# Installs the Debian packages tensortune needs that are not present yet.
# Safe to run repeatedly: it asks apt only for what dpkg says is missing.
#   --test   also what only the tests use: Chromium (the dashboard's browser test), openssl
#            (test certificates), node/npm (the deploy/ manifest checks), clang with its
#            libFuzzer and sanitizer runtimes (scripts/fuzz.sh), iproute2 (the namespace test),
#            numpy and pytest for Debian's python3 (the Python module's tests), torch and
#            torchvision (they build the corpus of real exported models, tests/corpus/),
#            buildah and debootstrap (the package and image tests, tests/shipping/)
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config fakeroot file
  llvm-14-dev libsqlite3-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev
  protobuf-compiler libprotobuf-dev
  libxgboost-dev librsvg2-bin
  libonnx-dev libonnx-testdata
  libgrpc++-dev protobuf-compiler-grpc libssl-dev
  libcpp-httplib-dev prometheus-cpp-dev
  pybind11-dev python3-dev
  libpng-dev libjpeg-dev
)

if [[ "${1:-}" == "--test" ]]; then
  packages+=(chromium openssl clang clang-format libclang-rt-14-dev iproute2 python3-numpy python3-pytest
    python3-torch python3-torchvision buildah debootstrap)
  # A machine may have Node.js from elsewhere (nodesource, with its own npm): only when there
  # is none, Debian's.
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
