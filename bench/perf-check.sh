#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Regression guard for the software NIC's per-packet paths: runs the JMH PacketPathBench (ring claim/commit,
# requester build, responder place into host memory and into a simulated GPU) and SoftNicWriteBench, compares each
# score with bench/perf-baseline.json as a ratio, and fails (exit 1) when any falls more than THRESHOLD (default
# 15 %) below its baseline. Not part of ./gdrkit test: timing on a shared machine is noisy, so run it on a quiet
# machine before a performance change lands, and record a new baseline on that machine with
#   bench/perf-check.sh --record
# Environment: JMH_ARGS (default "-wi 3 -w 1 -i 5 -r 1 -f 1"), THRESHOLD (0.15), BASELINE (bench/perf-baseline.json),
# BENCH_JAR (a bench jar used as is; by default bench/target/gdrkit-bench.jar, built with Maven when missing or older
# than the sources), OUT (JMH's JSON, default under ${TMPDIR:-/tmp}/gdrkit-bench), JAVA / JAVA_HOME (bench/lib.sh).
# Exits non-zero when any step fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO"
BASELINE="${BASELINE:-$REPO/bench/perf-baseline.json}"
THRESHOLD="${THRESHOLD:-0.15}"
JMH_ARGS="${JMH_ARGS:--wi 3 -w 1 -i 5 -r 1 -f 1}"
if [ -n "${BENCH_JAR:-}" ]; then [ -f "$BENCH_JAR" ] || die "BENCH_JAR='$BENCH_JAR' does not exist"; build=; else
  BENCH_JAR="$REPO/bench/target/gdrkit-bench.jar"; build=1; fi
[ -f "$BASELINE" ] || [ "${1:-}" = "--record" ] || die "no baseline $BASELINE (bench/perf-check.sh --record makes one)"
need python3
if [ -n "$build" ] && bench_stale "$BENCH_JAR"; then
  need mvn
  step "building $BENCH_JAR" mvn -B -q -ntp -pl bench -am package -DskipTests
fi
bench_out perf-check
out="$OUT/jmh.json"
step "JMH PacketPathBench and SoftNicWriteBench ($JMH_ARGS)" "$JAVA" -jar "$BENCH_JAR" 'PacketPathBench|SoftNicWriteBench' \
  $JMH_ARGS -rf json -rff "$out"
if [ "${1:-}" = "--record" ]; then
  cp "$out" "$BASELINE"
  echo "recorded $BASELINE ($(nproc) CPUs, $(date -u))"
  exit 0
fi
python3 - "$BASELINE" "$out" "$THRESHOLD" <<'PY'
import json, sys
def scores(path):
    r = {}
    for b in json.load(open(path)):
        key = b["benchmark"].split(".")[-2] + "." + b["benchmark"].split(".")[-1]
        params = b.get("params") or {}
        if params:
            key += "[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"
        r[key] = b["primaryMetric"]["score"]
    return r
base, now, limit = scores(sys.argv[1]), scores(sys.argv[2]), float(sys.argv[3])
failed = 0
for k in sorted(now):
    if k not in base:
        print(f"{k:55s} {now[k]:16.1f} ops/s  (no baseline)")
        continue
    ratio = now[k] / base[k]
    bad = ratio < 1 - limit
    failed += bad
    print(f"{k:55s} {now[k]:16.1f} ops/s  {ratio:6.3f} x baseline  {'REGRESSION' if bad else 'ok'}")
print(f"{failed} regression(s) past {limit:.0%}" if failed else f"no regression past {limit:.0%}")
sys.exit(1 if failed else 0)
PY
