#!/usr/bin/env bash
# Issue 15's speed goal, re-measured on a quiet host: UD send_bw at 0.8x or more of RC send_bw, 64 B-4 KiB.
# Runs the JMH bench UdVsRcSendBench (two software NICs on the in-JVM fabric: simulated hardware) RUNS times (default
# 3), each run measuring RC and UD at every size in the same JVM, and writes to $OUT:
#   udrc-run<N>.json   JMH's JSON of run N (messages per second per type and size)
#   udrc-run<N>.txt    JMH's console output of run N
#   udrc-summary.txt   UD/RC ratio per run and min/median/max per size, with the verdict against 0.8
#   udrc-summary.json  the same as JSON ("simulated": true)
#   env.txt            host, CPUs, Java
# Needs bench/target/gdrkit-bench.jar (JAR=...) and a Java 25 runtime (JAVA=..., default ./runtime/bin/java).
# Defaults take about 3 minutes: 8 benchmarks x (2 x 1 s warmup + 4 x 1 s measured + fork start) x 3 runs.
# Knobs: RUNS, SIZES (comma list, default 64,256,1024,4096), WI/W (warmup iterations/seconds), I/R (measured
# iterations/seconds), T (timeout per run, seconds). A quick local check: RUNS=1 WI=0 I=1 R=100ms SIZES=64.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
OUT="${OUT:-$here/udrc-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/bench/target/gdrkit-bench.jar}"
RUNS="${RUNS:-3}"
SIZES="${SIZES:-64,256,1024,4096}"
WI="${WI:-2}" W="${W:-1s}" I="${I:-4}" R="${R:-1s}"
T="${T:-150}"
GOAL=0.8
mkdir -p "$OUT"
for f in "$JAVA" "$JAR"; do
  [ -e "$f" ] || { echo "h200-udrc: $f not found (set JAVA= / JAR=; build the jar with mvn -pl bench -am package)" >&2; exit 2; }
done
{ date -u; uname -a; echo "cpus: $(nproc)"; "$JAVA" -version 2>&1
  echo "runs=$RUNS sizes=$SIZES wi=$WI w=$W i=$I r=$R (software NIC, in-JVM fabric: simulated)"; } > "$OUT/env.txt"

failed=0
for run in $(seq 1 "$RUNS"); do
  echo "== run $run of $RUNS $(date -u +%T)"
  # one fork per run: the three runs are three JVMs; RC and UD of a size share the fork's conditions
  timeout "$T" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" UdVsRcSendBench \
    -p type=RC,UD -p size="$SIZES" -f 1 -wi "$WI" -w "$W" -i "$I" -r "$R" \
    -rf json -rff "$OUT/udrc-run$run.json" > "$OUT/udrc-run$run.txt" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$OUT/udrc-run$run.json" ]; then
    echo "run $run failed: rc=$rc (see $OUT/udrc-run$run.txt)" | tee -a "$OUT/env.txt" >&2
    failed=$((failed + 1))
  fi
done

# JMH's JSON is one object per benchmark, params before primaryMetric: take type, size and the first score after
# them. awk only, so the summary needs nothing but a shell on the host.
for run in $(seq 1 "$RUNS"); do
  [ -s "$OUT/udrc-run$run.json" ] || continue
  awk -v run="$run" '
    /"type"[ ]*:/ { gsub(/[",]/, "", $3); type = $3 }
    /"size"[ ]*:/ { gsub(/[",]/, "", $3); size = $3 }
    /"primaryMetric"/ { want = 1 }
    want && /"score"[ ]*:/ { gsub(/,/, "", $3); print run, size, type, $3; want = 0 }
  ' "$OUT/udrc-run$run.json"
done > "$OUT/udrc-scores.txt"

awk -v goal="$GOAL" -v runs="$RUNS" -v failed="$failed" -v out="$OUT/udrc-summary.json" '
  { score[$1 " " $2 " " $3] = $4; if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 }; if ($1 > maxrun) maxrun = $1 }
  function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
  END {
    # sizes in numeric order
    for (i = 2; i <= ns; i++) { t = sizes[i]; for (j = i - 1; j > 0 && sizes[j] + 0 > t + 0; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = t }
    printf "UD/RC SEND messages per second, software NIC on the in-JVM fabric (simulated); goal: ratio >= %s\n", goal
    printf "%-7s %-40s %-8s %-8s %-8s %s\n", "size", "ratio per run (UD msg/s / RC msg/s)", "min", "median", "max", "goal"
    printf "{\"simulated\":true,\"bench\":\"UdVsRcSendBench\",\"goal\":%s,\"runs\":%d,\"failedRuns\":%d,\"sizes\":[", goal, runs, failed > out
    allmet = ns > 0
    for (k = 1; k <= ns; k++) {
      s = sizes[k]; n = 0; line = ""; runsjson = ""
      for (r = 1; r <= maxrun; r++) {
        rc = score[r " " s " RC"]; ud = score[r " " s " UD"]
        if (rc == "" || ud == "" || rc + 0 == 0) { line = line " -"; continue }
        v = ud / rc; rat[++n] = v; line = line sprintf(" %.2f", v)
        runsjson = runsjson (runsjson == "" ? "" : ",") sprintf("{\"run\":%d,\"rcMsgPerSec\":%.1f,\"udMsgPerSec\":%.1f,\"ratio\":%.4f}", r, rc, ud, v)
      }
      if (n == 0) { printf "%-7s %-40s no complete run\n", s, line; allmet = 0; verdict = "unknown"
        printf "%s{\"size\":%s,\"runs\":[],\"verdict\":\"unknown\"}", (k > 1 ? "," : ""), s > out; continue }
      sort(rat, n); mn = rat[1]; mx = rat[n]; md = (n % 2) ? rat[(n + 1) / 2] : (rat[n / 2] + rat[n / 2 + 1]) / 2
      verdict = mn >= goal ? "met in every run" : (md >= goal ? "met at the median, not in every run" : "missed")
      if (md < goal) allmet = 0
      printf "%-7s %-40s %-8.2f %-8.2f %-8.2f %s\n", s, line, mn, md, mx, verdict
      printf "%s{\"size\":%s,\"runs\":[%s],\"min\":%.4f,\"median\":%.4f,\"max\":%.4f,\"verdict\":\"%s\"}", (k > 1 ? "," : ""), s, runsjson, mn, md, mx, verdict > out
    }
    printf "],\"goalMetAtMedianEverySize\":%s}\n", (allmet ? "true" : "false") > out
    if (failed > 0) printf "%d of %d runs failed (see udrc-run<N>.txt)\n", failed, runs
  }
' "$OUT/udrc-scores.txt" | tee "$OUT/udrc-summary.txt"
echo "done $(date -u)" >> "$OUT/env.txt"
[ "$failed" -eq 0 ] && [ -s "$OUT/udrc-scores.txt" ]
