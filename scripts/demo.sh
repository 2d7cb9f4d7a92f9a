#!/usr/bin/env bash
# The newcomer's first command: installs what is missing, builds, then tunes a few ResNet-18
# layers and a dense layer on this machine with the embedded default (a tracker and a device
# server in this process on loopback, kernels timed in a worker process; records in
# ./tensortune-demo.db, the tracker's archive in ./tensortune-demo-archive.db) and prints a
# table of best GFLOPS per layer.
# Extra arguments go to `tensortune demo` (e.g. --trials 64).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The binary alone: the tests and benchmarks are scripts/test.sh's to build.
"$root/scripts/build.sh" --target tensortune
exec "$root/build/cli/tensortune" demo "$@"
