#!/usr/bin/env bash
# Peers side by side, several runs each, on this host's loopback: UCX ucx_perftest (shared memory and TCP
# transports), iperf3, a raw Java SocketChannel stream, and gdrkit's perf across processes. Writes JSON lines
# to $OUT (default /tmp/gdrkit-peers.jsonl); bench/peers-summary.py turns them into the tables of
# docs/PERFORMANCE.md. Installs ucx-utils and iperf3 from Debian when missing.
#   RUNS=3 bench/peers.sh && python3 bench/peers-summary.py /tmp/gdrkit-peers.jsonl
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/gdrkit-peers.jsonl}
PORT=${PORT:-13337}
: > "$OUT"

if ! command -v ucx_perftest >/dev/null || ! command -v iperf3 >/dev/null; then
  (apt-get install -y -q ucx-utils iperf3 >/dev/null 2>&1) || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q ucx-utils iperf3 >/dev/null 2>&1) \
    || echo "peers: could not install ucx-utils/iperf3; their rows will be missing" >&2
fi
./gdrkit build >/dev/null

emit() { echo "$1" >> "$OUT"; }

ucx() { # tls label test size iters
  local tls=$1 label=$2 test=$3 size=$4 iters=$5
  command -v ucx_perftest >/dev/null || return
  UCX_TLS=$tls timeout 60 ucx_perftest -p $PORT >/dev/null 2>&1 &
  local srv=$!
  sleep 0.7
  local line
  line=$(UCX_TLS=$tls timeout 60 ucx_perftest 127.0.0.1 -p $PORT -t "$test" -s "$size" -n "$iters" 2>/dev/null | grep '^Final:')
  wait $srv 2>/dev/null
  [ -n "$line" ] || { echo "peers: ucx_perftest $test ($label) gave no result" >&2; return; }
  # Final: iterations lat_typical lat_avg lat_overall bw_avg bw_overall rate_avg rate_overall
  # (lat_us stays the average, as recorded before; lat_typical_us is the one to set beside gdrkit's t_typical)
  set -- $line
  emit "{\"peer\":\"ucx_perftest\",\"transport\":\"$label\",\"test\":\"$test\",\"bytes\":$size,\"lat_us\":$4,\"lat_typical_us\":$3,\"bw_mib_s\":$7}"
}

for run in $(seq 1 "$RUNS"); do
  echo "peers: run $run of $RUNS" >&2
  for s in 1048576 4194304; do
    ucx posix,sysv,cma shm ucp_put_bw $s 2000
    ucx posix,sysv,cma shm tag_bw $s 2000
    ucx tcp tcp ucp_put_bw $s 500
    ucx tcp tcp tag_bw $s 500
  done
  ucx posix,sysv,cma shm ucp_put_lat 8 50000
  ucx posix,sysv,cma shm tag_lat 8 50000
  ucx tcp tcp ucp_put_lat 8 20000
  ucx tcp tcp tag_lat 8 20000
  if command -v iperf3 >/dev/null; then
    iperf3 -s -1 -p $((PORT + 1)) >/dev/null 2>&1 &
    sleep 0.5
    bps=$(iperf3 -c 127.0.0.1 -p $((PORT + 1)) -l 1M -t 3 -J 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])' 2>/dev/null)
    wait
    [ -n "$bps" ] && emit "{\"peer\":\"iperf3\",\"transport\":\"tcp\",\"test\":\"-l 1M\",\"bytes\":1048576,\"bw_mib_s\":$(python3 -c "print($bps/8/1048576)")}"
  fi
  ./gdrkit socket-bw -s 1048576 -D 3 --json >> "$OUT"
  for s in 1048576 4194304; do
    ./gdrkit perf write_bw --fabric shm --loopback --port $((PORT + 2)) -s $s -n 3000 --json 2>/dev/null | tail -n 1 >> "$OUT"
    ./gdrkit perf write_bw --fabric shm --loopback --port $((PORT + 2)) -s $s -n 3000 --mtu 65536 --json 2>/dev/null | tail -n 1 | sed 's/"mtu":65536/"mtu":65536,"note":"software MTU 64 KiB"/' >> "$OUT"
    ./gdrkit perf write_bw --fabric tcp --loopback --port $((PORT + 2)) -s $s -n 1000 --json 2>/dev/null | tail -n 1 >> "$OUT"
  done
  ./gdrkit perf write_lat --fabric shm --loopback --port $((PORT + 2)) -s 8 -n 100000 --json 2>/dev/null | tail -n 1 >> "$OUT"
  ./gdrkit perf write_lat --fabric tcp --loopback --port $((PORT + 2)) -s 8 -n 20000 --json 2>/dev/null | tail -n 1 >> "$OUT"
done
grep -c . "$OUT" >&2
