#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Peers side by side on this host's loopback, RUNS runs each: UCX ucx_perftest (shared-memory and TCP transports),
# iperf3, a raw Java SocketChannel stream, and gdrkit's perf across processes (shm and tcp fabrics). JSON lines to
# $OUT/peers.jsonl; python3 bench/peers-summary.py $OUT/peers.jsonl prints min / median / max per row and the ratios.
#   bench/peers.sh                          all peers, 3 runs, output under ${TMPDIR:-/tmp}/gdrkit-bench/peers-<time>
#   RUNS=5 PEERS="socket gdrkit" bench/peers.sh
# Environment: RUNS (3), PEERS ("ucx iperf3 socket gdrkit"), PORT (13337), OUT, JAR (default cli/target/gdrkit.jar,
# built once when missing), JAVA / JAVA_HOME (a Java 25 runtime, see bench/lib.sh). Installs nothing: ucx_perftest
# (Debian: ucx-utils) and iperf3 must be on PATH when their peers are asked for. Exits non-zero when any step fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RUNS="${RUNS:-3}"; PEERS="${PEERS:-ucx iperf3 socket gdrkit}"; PORT="${PORT:-13337}"
has() { case " $PEERS " in *" $1 "*) return 0;; esac; return 1; }
has ucx && need ucx_perftest
has iperf3 && need iperf3 python3
bench_jar
bench_out peers
DATA="$OUT/peers.jsonl"; : > "$DATA"
{ date -u; nproc; uptime; "$JAVA" -version 2>&1; } > "$OUT/env.txt"

g() { timeout 300 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" "$@"; }
last_json() { local line; line="$(grep '^{' | tail -n 1)"; [ -n "$line" ] || return 1; echo "$line"; }

ucx() { # tls label test size iters
  local tls=$1 label=$2 test=$3 size=$4 iters=$5 srv line
  UCX_TLS=$tls timeout 60 ucx_perftest -p "$PORT" >/dev/null 2>>"$OUT/err.txt" &
  srv=$!
  sleep 0.7
  line="$(UCX_TLS=$tls timeout 60 ucx_perftest 127.0.0.1 -p "$PORT" -t "$test" -s "$size" -n "$iters" 2>>"$OUT/err.txt" \
    | grep '^Final:')" || { wait "$srv" || true; echo "ucx_perftest $test ($label) gave no result (see $OUT/err.txt)" >&2; return 1; }
  wait "$srv" || true
  # Final: iterations lat_typical lat_avg lat_overall bw_avg bw_overall rate_avg rate_overall
  set -- $line
  echo "{\"peer\":\"ucx_perftest\",\"transport\":\"$label\",\"test\":\"$test\",\"bytes\":$size,\"lat_us\":$4,\"lat_typical_us\":$3,\"bw_mib_s\":$7}" >> "$DATA"
}

iperf() {
  local srv bps
  iperf3 -s -1 -p $((PORT + 1)) >/dev/null 2>>"$OUT/err.txt" &
  srv=$!
  sleep 0.5
  bps="$(iperf3 -c 127.0.0.1 -p $((PORT + 1)) -l 1M -t 3 -J 2>>"$OUT/err.txt" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')" \
    || { wait "$srv" || true; return 1; }
  wait "$srv" || true
  echo "{\"peer\":\"iperf3\",\"transport\":\"tcp\",\"test\":\"-l 1M\",\"bytes\":1048576,\"bw_mib_s\":$(python3 -c "print($bps/8/1048576)")}" >> "$DATA"
}

perf() { # perf ARGS...: one gdrkit perf row
  local row
  row="$(g perf "$@" --port $((PORT + 2)) --json 2>>"$OUT/err.txt" | last_json)" || return 1
  echo "$row" >> "$DATA"
}

socket_row() {
  local row
  row="$(g socket-bw -s 1048576 -D 3 --json 2>>"$OUT/err.txt" | last_json)" || return 1
  echo "$row" >> "$DATA"
}

for run in $(seq 1 "$RUNS"); do
  if has ucx; then
    for s in 1048576 4194304; do
      step "run $run/$RUNS: ucx shm put_bw $s B" ucx posix,sysv,cma shm ucp_put_bw $s 2000
      step "run $run/$RUNS: ucx shm tag_bw $s B" ucx posix,sysv,cma shm tag_bw $s 2000
      step "run $run/$RUNS: ucx tcp put_bw $s B" ucx tcp tcp ucp_put_bw $s 500
      step "run $run/$RUNS: ucx tcp tag_bw $s B" ucx tcp tcp tag_bw $s 500
    done
    step "run $run/$RUNS: ucx shm put_lat 8 B" ucx posix,sysv,cma shm ucp_put_lat 8 50000
    step "run $run/$RUNS: ucx shm tag_lat 8 B" ucx posix,sysv,cma shm tag_lat 8 50000
    step "run $run/$RUNS: ucx tcp put_lat 8 B" ucx tcp tcp ucp_put_lat 8 20000
    step "run $run/$RUNS: ucx tcp tag_lat 8 B" ucx tcp tcp tag_lat 8 20000
  fi
  if has iperf3; then step "run $run/$RUNS: iperf3 1 MiB writes" iperf; fi
  if has socket; then
    step "run $run/$RUNS: Java SocketChannel stream" socket_row
  fi
  if has gdrkit; then
    for s in 1048576 4194304; do
      step "run $run/$RUNS: gdrkit write_bw shm $s B" perf write_bw --fabric shm --loopback -s $s -n 3000
      step "run $run/$RUNS: gdrkit write_bw shm $s B, 64 KiB MTU" perf write_bw --fabric shm --loopback -s $s -n 3000 --mtu 65536
      step "run $run/$RUNS: gdrkit write_bw tcp $s B" perf write_bw --fabric tcp --loopback -s $s -n 5000 # perftest's default
    done
    step "run $run/$RUNS: gdrkit write_lat shm 8 B" perf write_lat --fabric shm --loopback -s 8 -n 100000
    step "run $run/$RUNS: gdrkit write_lat tcp 8 B" perf write_lat --fabric tcp --loopback -s 8 -n 20000
  fi
done
say "done: $(grep -c . "$DATA") rows in $DATA (python3 bench/peers-summary.py $DATA)"
