#!/usr/bin/env bash
# The scenarios of the farm's second chaos run, replayed as an operator would with real
# processes on loopback, printing what each one did (docs/reliability.md keeps the latest):
#   oversized work, two grid clients on one workload, a worker replaced then the tracker
#   restarted, a damaged archive, slow clients on the metrics port, duplicate device names,
#   a short single token.
#   bench/farm_chaos_rerun.sh [BINARY]      (default build/cli/tensortune; about 1 minute)
# Each line: the scenario, HELD or REFUSED (what the farm should do) or FAULT (what it did
# instead), and the evidence. Exits 1 when any scenario shows a fault.
set -uo pipefail
bin=$(realpath "${1:-build/cli/tensortune}")
work=$(mktemp -d /tmp/tt-chaos.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1
faults=0
last=$SECONDS
report() {  # SCENARIO VERDICT EVIDENCE
  printf '%-44s %-8s %4s  %s\n' "$1" "$2" "$((SECONDS - last))s" "$3"
  last=$SECONDS
  [[ $2 == FAULT ]] && faults=$((faults + 1))
}
wait_file() { for _ in $(seq 300); do [[ -s $1 ]] && return 0; sleep 0.1; done; return 1; }
start_tracker() {  # NAME PORT [ARGS...]: starts a tracker (PORT 0: any), sets $port
  local name=$1 want=$2
  shift 2
  rm -f "$name.port"
  "$bin" tracker --port "$want" --port-file "$name.port" --db "$name.db" "$@" >>"$name.log" 2>&1 &
  pids+=($!)
  tracker_pid=$!
  wait_file "$name.port" && port=$(cat "$name.port")
}
start_device() {  # NAME KEY [ARGS...]
  local name=$1 key=$2
  shift 2
  "$bin" device --tracker "127.0.0.1:$port" --key "$key" --name "$name" "$@" >"device-$name.log" 2>&1 &
  pids+=($!)
}
archive_rows() {  # DB: "rows distinct-configs"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(*c.execute('SELECT COUNT(*), COUNT(DISTINCT config_id) FROM results').fetchone())" "$1"
}
key=chaos
printf '%-44s %-8s %4s  %s\n' scenario verdict time evidence

# 1. Oversized work: refused at the tracker, naming the field and the limit.
start_tracker t1 0
start_device d1 "$key" --simulate-ms 50
out=$("$bin" tune-op --op dense --data 1x65536 --weight 65536x65536 --trials 1 \
  --tracker "127.0.0.1:$port" --key "$key" --db o.db 2>&1)
if grep -q "INVALID_ARGUMENT\|must be in" <<<"$out"; then
  report "oversized dense 1x65536 x 65536x65536" REFUSED "$(grep -o 'workload [a-z]* elements[^)]*' <<<"$out" | head -1)"
else
  report "oversized dense 1x65536 x 65536x65536" FAULT "$(tail -1 <<<"$out")"
fi

# 2. Two grid clients on one workload at once: one measurement per config.
clients=()
for who in alice bob; do
  "$bin" tune-op --op dense --data 1x256 --weight 256x256 --tuner grid --trials 40 \
    --number 1 --repeat 1 --min-repeat-ms 0 \
    --tracker "127.0.0.1:$port" --key "$key" --db "$who.db" >"$who.log" 2>&1 &
  clients+=($!)
done
wait "${clients[@]}"
read -r rows configs <<<"$(archive_rows t1.db)"
if ((rows == configs && configs >= 40)); then
  report "two grid clients, one workload, 40 trials" HELD "$rows rows for $configs configs in the archive"
else
  report "two grid clients, one workload, 40 trials" FAULT "$rows rows for $configs configs"
fi
kill "$tracker_pid" 2>/dev/null
wait "$tracker_pid" 2>/dev/null

# 3. A worker replaced after a crash, then the tracker killed and restarted: no config is
#    blamed for the worker's death.
start_tracker t3 0
tracker_port=$port
start_device d3 "$key" --fault-inject crash@0 --worker-grace 2
"$bin" tune-op --op dense --data 1x64 --weight 64x64 --tuner grid --trials 3 \
  --tracker "127.0.0.1:$port" --key "$key" --db c1.db >c1.log 2>&1
kill -9 "$tracker_pid"
wait "$tracker_pid" 2>/dev/null
start_tracker t3 "$tracker_port"
"$bin" tune-op --op dense --data 1x64 --weight 64x64 --tuner grid --trials 8 \
  --tracker "127.0.0.1:$port" --key "$key" --db c2.db >c2.log 2>&1
blamed=$(python3 -c "import sqlite3; c=sqlite3.connect('t3.db'); print(c.execute(\"SELECT COUNT(*) FROM results WHERE error_msg LIKE '%signal 9%'\").fetchone()[0])")
crashed=$(python3 -c "import sqlite3; c=sqlite3.connect('t3.db'); print(c.execute(\"SELECT COUNT(*) FROM results WHERE error_msg LIKE '%signal 11%'\").fetchone()[0])")
if ((blamed == 0 && crashed == 1)); then
  report "worker replaced, then tracker restarted" HELD "the crashing config recorded once (signal 11), none blamed for signal 9"
else
  report "worker replaced, then tracker restarted" FAULT "$crashed crash results, $blamed blamed for signal 9"
fi
kill "$tracker_pid" 2>/dev/null
wait "$tracker_pid" 2>/dev/null

# 4. A damaged archive: refused at start, naming the file and the repair.
cp t1.db flipped.db
# The b-tree headers of pages in the middle of the file (what the chaos run's flips hit: "Rowid
# out of order, invalid page number"); bytes flipped inside a record's text are beyond any
# quick check.
python3 -c "
import os
pages = os.path.getsize('flipped.db') // 4096
with open('flipped.db', 'r+b') as f:
    for page in range(pages // 3, pages // 3 + 4):
        f.seek(page * 4096); f.write(b'\x0d\xff\xff\x7f\x00\xff\xff\x00')"
"$bin" tracker --port 0 --db flipped.db >flipped.log 2>&1 &
flipped_pid=$!
pids+=($flipped_pid)
for _ in $(seq 100); do kill -0 "$flipped_pid" 2>/dev/null || break; sleep 0.1; done
if ! kill -0 "$flipped_pid" 2>/dev/null && grep -q "recover\|damaged\|DATA_LOSS\|malformed" flipped.log; then
  report "archive with bytes flipped" REFUSED "$(grep -o 'flipped.db[^(]*' flipped.log | head -1 | cut -c1-80)"
else
  report "archive with bytes flipped" FAULT "$(tail -1 flipped.log | cut -c1-100)"
fi

# 5. Slow clients on the metrics port (40 from 127.0.0.2, a header line every 0.5 s): scrapes
#    from 127.0.0.1 go on.
start_tracker t5 0 --metrics-port 0 --metrics-port-file t5.mport
wait_file t5.mport
mport=$(cat t5.mport)
python3 - "$mport" >slow.txt <<'PY'
import socket, sys, threading, time, urllib.request
port = int(sys.argv[1])
slow = []
for _ in range(40):
    s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n"); slow.append(s)
stop = False
def trickle():
    n = 0
    while not stop:
        for s in slow:
            try: s.sendall(b"X-Slow-%d: 1\r\n" % n)
            except OSError: pass
        n += 1; time.sleep(0.5)
threading.Thread(target=trickle, daemon=True).start()
time.sleep(1)
times = []
for _ in range(5):
    t = time.time()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20).read()
        times.append(time.time() - t)
    except Exception as e:
        times.append(None)
    time.sleep(0.5)
stop = True
ok = [t for t in times if t is not None]
print(len(ok), max(ok) if ok else -1)
PY
read -r scraped slowest <slow.txt
if ((scraped == 5)); then
  report "40 slow clients on the metrics port" HELD "5 of 5 scrapes answered meanwhile (slowest ${slowest:0:5} s)"
else
  report "40 slow clients on the metrics port" FAULT "$scraped of 5 scrapes answered"
fi

# 6. Two devices with one name: the second waits until the first leaves.
start_device box "$key" --simulate-ms 5
sleep 1
start_device box "$key" --simulate-ms 5
for _ in $(seq 100); do grep -q "named 'box' is registered" device-box.log && break; sleep 0.1; done
if grep -q "named 'box' is registered" device-box.log; then
  report "two devices named 'box'" REFUSED "$(grep -o "a device named 'box' is registered[^;]*" device-box.log | head -1)"
else
  report "two devices named 'box'" FAULT "both registered"
fi
kill "$tracker_pid" 2>/dev/null

# 7. A short single token on the network: refused at start.
printf 'abc\n' >short.token
chmod 600 short.token
out=$(timeout 10 "$bin" tracker --host 0.0.0.0 --port 0 --db short.db --token-file short.token 2>&1)
rc=$?
if ((rc != 0 && rc != 124)); then
  report "--token-file with a 3-character token" REFUSED "$(tail -1 <<<"$out" | cut -c1-90)"
else
  report "--token-file with a 3-character token" FAULT "it started"
fi
exit $((faults > 0))
