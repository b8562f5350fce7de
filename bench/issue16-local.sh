#!/usr/bin/env bash
# Issue 16's table on this machine: RUNS (3) runs, each one bench/peers.sh pass (UCX ucx_perftest over shm and tcp,
# iperf3, a raw Java SocketChannel, gdrkit perf across processes over shm and tcp) plus the in-JVM rows (1 MiB
# WRITE beside MemorySegment.copy in the same JVM, 64 B message rate, 8 B write_lat) and the simulated-GPU WRITE
# beside the host WRITE. Every JSON line is tagged with its run; bench/issue16-table.py derives the issue's table
# (min / median / max, each ratio taken inside one run first).
#   RUNS=3 OUT=/tmp/issue16.jsonl bench/issue16-local.sh && python3 bench/issue16-table.py /tmp/issue16.jsonl
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/gdrkit-issue16.jsonl}
: > "$OUT"
./gdrkit build >/dev/null
tag() { sed "s/^{/{\"run\":$1,\"part\":\"$2\",/"; }
for run in $(seq 1 "$RUNS"); do
  echo "issue16-local: run $run of $RUNS" >&2
  RUNS=1 OUT=/tmp/gdrkit-issue16-peers.$$ bash bench/peers.sh 2>/dev/null
  grep '^{' /tmp/gdrkit-issue16-peers.$$ | tag "$run" peers >> "$OUT"
  ./gdrkit perf write_bw --loopback -s 1048576 -n 5000 --baseline --json 2>/dev/null | grep "^{" | tag "$run" injvm_1m >> "$OUT"
  ./gdrkit perf write_bw --loopback -s 64 -n 2000000 --json 2>/dev/null | grep '^{' | tail -n 1 | tag "$run" injvm_64 >> "$OUT"
  ./gdrkit perf write_lat --loopback -s 8 -n 100000 --baseline --json 2>/dev/null | grep "^{" | tag "$run" injvm_lat8 >> "$OUT"
  for s in 1048576 4194304; do
    ./gdrkit perf write_bw --loopback -s $s -n 2000 --json 2>/dev/null | grep '^{' | tail -n 1 | tag "$run" host_$s >> "$OUT"
    ./gdrkit perf write_bw --loopback -s $s -n 2000 --mem gpu --gpu sim:h200 --json 2>/dev/null | grep '^{' | tail -n 1 | tag "$run" simgpu_$s >> "$OUT"
  done
done
rm -f /tmp/gdrkit-issue16-peers.$$
grep -c . "$OUT" >&2
