#!/usr/bin/env bash
# Issue 16 item 2 (in-JVM), before/after interleaved: for each round and each jar, in fresh JVMs,
#   perf write_bw --loopback -s 1048576 --baseline   (the WRITE beside MemorySegment.copy, same JVM)
#   perf write_bw --loopback -s 64                   (message rate)
#   perf write_lat --loopback -s 8 --baseline        (t_typical beside the cache-line ping-pong)
#   bench/CpuPerMsg.java                             (thread CPU per message and per 1 MiB copy, same JVM)
# JSON lines under $OUT, each tagged with the jar's label and the round. On a loaded machine the wall-clock rows
# swing with the load; the CPU-time rows do so less (descheduled time does not count).
#   JARS="before=/tmp/before.jar after=cli/target/gdrkit.jar" ROUNDS=3 OUT=/tmp/p16 bench/p16-jvm.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA="${JAVA:-${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java}"
OUT="${OUT:-/tmp/p16-jvm}"
ROUNDS="${ROUNDS:-3}"
JARS="${JARS:-after=$here/cli/target/gdrkit.jar}"
PARTS="${PARTS:-perf cpu}"
mkdir -p "$OUT"
tag() { sed "s/^{/{\"label\":\"$1\",\"round\":$2,\"row\":\"$3\",/"; }
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
{ date -u; nproc; uptime; "$JAVA" -version 2>&1; echo "jars: $JARS  rounds: $ROUNDS  parts: $PARTS  opts: ${GDRKIT_JAVA_OPTS:-}"; } \
  > "$OUT/env.txt"
for r in $(seq 1 "$ROUNDS"); do
  for lj in $JARS; do
    label="${lj%%=*}"; jar="${lj#*=}"
    g() { timeout 300 "$JAVA" ${GDRKIT_JAVA_OPTS:-} --enable-native-access=ALL-UNNAMED -jar "$jar" "$@"; }
    if has perf; then
      g perf write_bw --loopback -s 1048576 -n 5000 --baseline --json 2>>"$OUT/err.txt" \
        | tag "$label" "$r" write_bw_1m >> "$OUT/perf.jsonl"
      g perf write_bw --loopback -s 64 -n 2000000 --json 2>>"$OUT/err.txt" \
        | tag "$label" "$r" write_bw_64 >> "$OUT/perf.jsonl"
      g perf write_lat --loopback -s 8 -n 100000 --baseline --json 2>>"$OUT/err.txt" \
        | tag "$label" "$r" write_lat_8 >> "$OUT/perf.jsonl"
    fi
    if has cpu; then
      timeout 600 "$JAVA" ${GDRKIT_JAVA_OPTS:-} --enable-native-access=ALL-UNNAMED -cp "$jar" "$here/bench/CpuPerMsg.java" \
        "$label" 2>>"$OUT/err.txt" | sed "s/^{/{\"round\":$r,/" >> "$OUT/cpu.jsonl"
    fi
  done
done
uptime >> "$OUT/env.txt"
