#!/usr/bin/env bash
# Issue 16 item 4: gdrkit's shared-memory fabric against UCX's shared-memory transports, interleaved in one
# session. Per run and size: ucx_perftest tag_bw and ucp_put_bw (UCX_TLS=posix,sysv,cma), then gdrkit perf
# write_bw --fabric shm --loopback with the cross-process single copy off (ring: two copies, the "before") and on
# (cma: the receiver pulls with process_vm_readv). JSON lines to $OUT; a "mode" field says which gdrkit path ran.
#   RUNS=3 OUT=docs/results/p16-shm/shm-cma.jsonl bench/shm-cma.sh
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/gdrkit-shm-cma.jsonl}
PORT=${PORT:-13437}
ITERS=${ITERS:-2000}
WARMUP=${WARMUP:-500}
MTU=${MTU:-4096}
SIZES=${SIZES:-1048576 4194304}
./gdrkit build >/dev/null
emit() { echo "$1" >> "$OUT"; }
ucx() { # test size iters
  command -v ucx_perftest >/dev/null || { echo "shm-cma: ucx_perftest missing (apt-get install -y ucx-utils)" >&2; return; }
  UCX_TLS=posix,sysv,cma timeout 120 ucx_perftest -p $PORT >/dev/null 2>&1 &
  local srv=$! line
  sleep 0.7
  line=$(UCX_TLS=posix,sysv,cma timeout 120 ucx_perftest 127.0.0.1 -p $PORT -t "$1" -s "$2" -n "$3" 2>/dev/null | grep '^Final:')
  wait $srv 2>/dev/null
  [ -n "$line" ] || { echo "shm-cma: ucx_perftest $1 gave no result" >&2; return; }
  set -- $line "$1" "$2"
  emit "{\"peer\":\"ucx_perftest\",\"transport\":\"shm\",\"test\":\"${10}\",\"bytes\":${11},\"bw_mib_s\":$7,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
}
gdrkit() { # mode size
  local cma=true; [ "$1" = ring ] && cma=false
  local line
  line=$(GDRKIT_JAVA_OPTS="-Dgdrkit.nic.shm.cma=$cma" timeout 900 ./gdrkit perf write_bw --fabric shm --loopback \
    --port $((PORT + 2)) -s "$2" -n "$ITERS" --warmup "$WARMUP" --mtu "$MTU" --json 2>/dev/null | tail -n 1)
  [ -n "$line" ] || { echo "shm-cma: gdrkit $1 $2 gave no result" >&2; return; }
  emit "${line%\}},\"mode\":\"$1\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
}
for run in $(seq 1 "$RUNS"); do
  for s in $SIZES; do
    echo "shm-cma: run $run size $s $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >&2
    ucx tag_bw "$s" 2000
    ucx ucp_put_bw "$s" 2000
    gdrkit ring "$s"
    gdrkit cma "$s"
  done
done
