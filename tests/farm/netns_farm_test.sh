#!/usr/bin/env bash
# A farm across hosts, on one machine: network namespaces joined by a bridge stand for
# a tracker host, two device hosts and a client host. One device's link gets netem delay and
# loss (where the kernel has netem); the other device is cut off for longer than the tracker's
# heartbeat timeout in the middle of a tuning job. The job must complete with every config
# recorded exactly once, and the cut-off device must register again once its link is back.
#   tests/farm/netns_farm_test.sh TENSORTUNE_BINARY
# Needs root (ip netns); exits 77 (skipped) where namespaces cannot be made.
set -uo pipefail
bin=$(readlink -f "$1")
tag=tt$$
work=$(mktemp -d /tmp/tt_netns.XXXXXX)
hosts=(trk dev1 dev2 cli)
declare -A addr=([trk]=10.77.0.1 [dev1]=10.77.0.2 [dev2]=10.77.0.3 [cli]=10.77.0.4)
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  # The recorded pids are the subshells of `in_ns ... &`; what they started may outlive them,
  # so everything still running inside the namespaces is killed too.
  for h in "${hosts[@]}"; do
    ip netns pids "$tag-$h" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  wait 2>/dev/null
  for h in "${hosts[@]}" sw; do ip netns del "$tag-$h" 2>/dev/null; done
  if [[ ${keep:-0} == 1 ]]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "netns_farm_test: FAILED: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -n 20 "$f"; done
  keep=1
  exit 1
}
skip() {
  echo "netns_farm_test: SKIPPED: $*"
  exit 77
}

[[ $(id -u) -eq 0 ]] || skip "needs root for ip netns"
command -v ip >/dev/null || skip "no ip (iproute2)"
ip netns add "$tag-sw" 2>/dev/null || skip "cannot make network namespaces here"
ip -n "$tag-sw" link add br0 type bridge || skip "no bridge support"
ip -n "$tag-sw" link set br0 up
for h in "${hosts[@]}"; do
  ip netns add "$tag-$h"
  ip link add "$tag-$h" type veth peer name "$tag-$h-p" || skip "no veth support"
  ip link set "$tag-$h" netns "$tag-$h"
  ip link set "$tag-$h-p" netns "$tag-sw"
  ip -n "$tag-sw" link set "$tag-$h-p" master br0 up
  ip -n "$tag-$h" link set lo up
  ip -n "$tag-$h" addr add "${addr[$h]}/24" dev "$tag-$h"
  ip -n "$tag-$h" link set "$tag-$h" up
done
netem="none (this kernel has no netem qdisc)"
if ip netns exec "$tag-dev2" tc qdisc add dev "$tag-dev2" root netem delay 30ms 10ms loss 2% \
    2>/dev/null; then
  netem="30 ms +- 10 ms delay and 2% loss on dev2's link"
fi
echo "netns_farm_test: 4 hosts on a bridge; netem: $netem"

in_ns() { local h=$1; shift; ip netns exec "$tag-$h" "$@"; }
head -c 24 /dev/urandom | base64 > "$work/token" && chmod 600 "$work/token"
in_ns trk "$bin" tracker --host "${addr[trk]}" --port 9190 --db "$work/tracker.db" \
  --token-file "$work/token" --heartbeat-timeout 2 --port-file "$work/port" \
  > "$work/tracker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || fail "the tracker did not start"
for d in dev1 dev2; do
  in_ns "$d" "$bin" device --tracker "${addr[trk]}:9190" --key sim --name "$d" \
    --simulate-ms 150 --token-file "$work/token" > "$work/$d.log" 2>&1 &
  pids+=($!)
done
status() {
  in_ns cli "$bin" status --tracker "${addr[trk]}:9190" --token-file "$work/token" --json 2>/dev/null
}
devices() {
  status | python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("devices", [])))' \
    2>/dev/null || echo 0
}
for _ in $(seq 100); do [[ $(devices) == 2 ]] && break; sleep 0.2; done
[[ $(devices) == 2 ]] || fail "the devices did not register across the bridge"

trials=60
in_ns cli "$bin" tune-op --op dense --data 1x128 --weight 128x128 --tuner random --trials $trials \
  --tracker "${addr[trk]}:9190" --key sim --token-file "$work/token" --db "$work/client.db" \
  > "$work/client.log" 2>&1 &
client=$!
pids+=($client)
sleep 2
# The partition: dev1's link goes down for twice the heartbeat timeout, then comes back.
in_ns dev1 ip link set "$tag-dev1" down
echo "netns_farm_test: dev1 cut off"
sleep 4
[[ $(devices) == 1 ]] || fail "the tracker still lists the cut-off device after its heartbeat timeout"
in_ns dev1 ip link set "$tag-dev1" up
echo "netns_farm_test: dev1 back"
wait $client || fail "the tuning job failed"
for _ in $(seq 100); do [[ $(devices) == 2 ]] && break; sleep 0.2; done
[[ $(devices) == 2 ]] || fail "the cut-off device did not register again"

# Every config of the job exactly once in the tracker's archive.
read -r rows distinct < <(python3 - "$work/tracker.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows, distinct = db.execute(
    "SELECT count(*), count(DISTINCT config_id) FROM results").fetchone()
print(rows, distinct)
EOF
)
[[ $rows == "$distinct" ]] || fail "$rows results for $distinct configs: some recorded twice"
(( rows >= trials )) || fail "$rows results archived, $trials trials asked"
grep -q "device .*dev1.* removed\|dev1.*silent" "$work/tracker.log" ||
  fail "the tracker's log does not show dev1 dropped"
echo "netns_farm_test: passed: $rows configs recorded once each across a partition of dev1;" \
     "dev1 registered again; netem: $netem"
