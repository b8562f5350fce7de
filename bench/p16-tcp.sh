#!/usr/bin/env bash
# Issue 16 item 3: the TCP fabric before and after, interleaved, beside the raw SocketChannel stream, UCX over tcp
# and iperf3, in one session. BEFORE and AFTER are gdrkit jars; JSON lines go to $OUT, each tagged with "jar".
#   BEFORE=/tmp/base.jar AFTER=cli/target/gdrkit.jar RUNS=3 OUT=docs/results/p16-tcp/runs.jsonl bench/p16-tcp.sh
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/p16-tcp.jsonl}
PORT=${PORT:-14501}
WARM=${WARM:-1000}
J=${JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
emit() { echo "$1" >> "$OUT"; }
tag() { sed "s/^{/{\"jar\":\"$1\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",/"; }
gd() { # jar args...
  local jar=$1; shift
  $J --enable-native-access=ALL-UNNAMED -jar "$jar" "$@" --json 2>/dev/null | tail -n 1
}
ucx() { # test size iters
  command -v ucx_perftest >/dev/null || return
  UCX_TLS=tcp timeout 60 ucx_perftest -p $((PORT + 5)) >/dev/null 2>&1 &
  local srv=$!
  sleep 0.7
  local line
  line=$(UCX_TLS=tcp timeout 60 ucx_perftest 127.0.0.1 -p $((PORT + 5)) -t "$1" -s "$2" -n "$3" 2>/dev/null | grep '^Final:')
  wait $srv 2>/dev/null
  [ -n "$line" ] || { echo "ucx_perftest $1 gave no result" >&2; return; }
  set -- $1 $2 $line
  emit "{\"peer\":\"ucx_perftest\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"transport\":\"tcp\",\"test\":\"$1\",\"bytes\":$2,\"lat_typical_us\":$5,\"lat_avg_us\":$6,\"bw_mib_s\":$9}"
}
for run in $(seq 1 "$RUNS"); do
  echo "p16-tcp: run $run of $RUNS" >&2
  for which in before after; do
    jar=$BEFORE; [ $which = after ] && jar=$AFTER
    for s in 1048576 4194304; do
      gd "$jar" perf write_bw --fabric tcp --loopback --port $PORT -s $s -n 1000 --warmup $WARM | tag $which >> "$OUT"
    done
    gd "$jar" perf write_lat --fabric tcp --loopback --port $PORT -s 8 -n 20000 | tag $which >> "$OUT"
  done
  $J -jar "$AFTER" socket-bw -s 1048576 -D 3 --json | tag peer >> "$OUT"
  ucx ucp_put_lat 8 20000
  ucx tag_bw 1048576 500
  if command -v iperf3 >/dev/null; then
    iperf3 -s -1 -p $((PORT + 6)) >/dev/null 2>&1 &
    sleep 0.5
    bps=$(iperf3 -c 127.0.0.1 -p $((PORT + 6)) -l 1M -t 3 -J 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])' 2>/dev/null)
    wait
    [ -n "$bps" ] && emit "{\"peer\":\"iperf3\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"transport\":\"tcp\",\"test\":\"-l 1M\",\"bytes\":1048576,\"bw_mib_s\":$(python3 -c "print($bps/8/1048576)")}"
  fi
done
grep -c . "$OUT" >&2
