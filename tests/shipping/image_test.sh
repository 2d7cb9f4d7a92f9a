#!/usr/bin/env bash
# The image, built by deploy/container/build.sh with buildah from the package, and run for real:
# it holds no compiler and no C headers, runs as uid 10001 with `tensortune` as its entrypoint,
# and a tracker and a device server, each in a container of it (`buildah run --isolation chroot`
# shares the host's network, so they meet on loopback), serve a `tune-op` client on the host:
# every config it measures is recorded once in the tracker's archive, on a volume mounted from
# the host and written by uid 10001.
#   image_test.sh REPO WORKDIR HOST_TENSORTUNE
set -euo pipefail
repo=$1
work_root=$2
client=$3
source "$repo/tests/shipping/common.sh"
need_root_and buildah debootstrap python3
deb=$(package_path)
image=localhost/tensortune:shipping-test
work=$work_root/image
rm -rf "$work"
mkdir -p "$work/archive"
containers=()
groups=()
cleanup() {
  local g
  for g in ${groups[@]+"${groups[@]}"}; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for c in ${containers[@]+"${containers[@]}"}; do buildah rm "$c" >/dev/null 2>&1 || true; done
  buildah rmi "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "== build"
# The base: debootstrapped here (no registry answers on these machines), from the cached root.
if ! buildah inspect --type image tensortune-base:bookworm >/dev/null 2>&1; then
  "$repo/deploy/container/make-base-image.sh" --engine buildah --rootfs "$(cached_debian_rootfs)"
fi
"$repo/deploy/container/build.sh" --engine buildah --package "$deb" --tag "$image" \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "build.sh"; }
grep '^build.sh:' "$work/build.log"

echo "== what the image is"
user=$(buildah inspect --format '{{.OCIv1.Config.User}}' "$image")
[[ $user == 10001:10001 ]] || fail "the image's user is '$user', not 10001:10001"
entrypoint=$(buildah inspect --format '{{.OCIv1.Config.Entrypoint}}' "$image")
[[ $entrypoint == '[/usr/bin/tensortune]' ]] || fail "entrypoint $entrypoint"
# Sets $container (not echoed: a command substitution's subshell would lose the cleanup list).
new_container() {
  container=$(buildah from -q "$image")
  containers+=("$container")
}
new_container
probe=$container
in_probe() { buildah run --isolation chroot "$probe" -- sh -c "$1" 2>/dev/null; }
[[ $(in_probe 'id -u') == 10001 ]] || fail "a command in the image runs as uid $(in_probe 'id -u')"
compilers=$(in_probe 'for c in cc c++ gcc g++ clang clang++ cpp ld as; do command -v $c; done' || true)
[[ -z $compilers ]] || fail "the image has compilers: $compilers"
headers=$(in_probe 'find / -xdev -name "*.h" 2>/dev/null | head -5' || true)
[[ -z $headers ]] || fail "the image has C headers: $headers"
in_probe 'tensortune --help' | head -1
echo "uid 10001, no compiler, no header"

echo "== a farm in two containers, a client on the host"
chown 10001:10001 "$work/archive"
# Each `buildah run` in a process group of its own, so the cleanup reaches what it started.
start_in_container() {
  local log=$1
  shift
  setsid buildah run --isolation chroot "$@" >"$log" 2>&1 &
  groups+=($!)
  disown
}
new_container
tracker_ctr=$container
start_in_container "$work/tracker.log" -v "$work/archive:/var/lib/tensortune" "$tracker_ctr" -- \
  tensortune tracker --port 0 --port-file /var/lib/tensortune/port --db /var/lib/tensortune/tracker.db
tracker_group=${groups[-1]}
for _ in $(seq 600); do
  [[ -s $work/archive/port ]] && break
  kill -0 "$tracker_group" 2>/dev/null || { cat "$work/tracker.log"; fail "the tracker exited"; }
  sleep 0.1
done
port=$(cat "$work/archive/port")
[[ -n $port ]] || { cat "$work/tracker.log"; fail "the tracker wrote no port in 60 s"; }
new_container
device_ctr=$container
start_in_container "$work/device.log" "$device_ctr" -- \
  tensortune device --tracker "127.0.0.1:$port" --key shipping-test --name image-device
# The client on the host waits for the device to register (the tracker holds the job).
"$client" tune-op --op dense --data 1x64 --weight 64x64 --tuner grid --trials 8 \
  --tracker "127.0.0.1:$port" --key shipping-test --db "$work/client.db" >"$work/client.log" 2>&1 ||
  { cat "$work/client.log" "$work/device.log"; fail "tune-op against the tracker in the image"; }
tail -1 "$work/client.log"
# Stop the tracker as its orchestrator would (SIGTERM to tensortune itself), so that it closes
# the archive; then read the archive from the host.
pkill -TERM -g "$tracker_group" -x tensortune || true
for _ in $(seq 300); do
  kill -0 "$tracker_group" 2>/dev/null || break
  sleep 0.1
done
owner=$(stat -c %u "$work/archive/tracker.db")
[[ $owner == 10001 ]] || fail "the archive is owned by uid $owner, not 10001"
counts=$(python3 - "$work/archive/tracker.db" "$work/client.db" <<'PY'
import sqlite3, sys
archive = sqlite3.connect(sys.argv[1])
client = sqlite3.connect(sys.argv[2])
rows, configs, devices = archive.execute(
    "SELECT COUNT(*), COUNT(DISTINCT config_id), GROUP_CONCAT(DISTINCT device) FROM results").fetchone()
client_rows = client.execute("SELECT COUNT(*) FROM results").fetchone()[0]
print(rows, configs, client_rows, devices)
PY
)
read -r rows configs client_rows devices <<<"$counts"
[[ $rows == 8 && $configs == 8 ]] ||
  fail "the archive holds $rows results of $configs configs; the client measured 8 configs once each"
[[ $client_rows == 8 ]] || fail "the client's DB holds $client_rows results, not 8"
[[ $devices == image-device ]] || fail "measured by '$devices', not the device in the image"
echo "ok: 8 configs measured by the device in the image, each archived once by the tracker in the image"
