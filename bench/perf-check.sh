#!/usr/bin/env bash
# Regression guard for the software NIC's per-packet paths (issue 16): runs the JMH PacketPathBench (ring
# claim/commit, requester build, responder place into host memory and into a simulated GPU) and SoftNicWriteBench,
# compares each score with bench/perf-baseline.json as a ratio, and fails (exit 1) when any falls more than
# THRESHOLD (default 15 %) below its baseline. Not part of ./gdrkit test: timing on a shared machine is noisy, so
# run it on a quiet machine before a performance change lands, and record a new baseline on that machine with
#   bench/perf-check.sh --record
# Environment: JMH_ARGS (default "-wi 3 -w 1 -i 5 -r 1 -f 1"), THRESHOLD (0.15), BASELINE (bench/perf-baseline.json).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
JAVA_HOME="${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* 2>/dev/null | head -n1)}"
BASELINE="${BASELINE:-$here/bench/perf-baseline.json}"
THRESHOLD="${THRESHOLD:-0.15}"
JMH_ARGS="${JMH_ARGS:--wi 3 -w 1 -i 5 -r 1 -f 1}"
out="$(mktemp -d)/jmh.json"
mvn -B -q -ntp -pl bench -am package -DskipTests >&2
"$JAVA_HOME/bin/java" -jar bench/target/gdrkit-bench.jar 'PacketPathBench|SoftNicWriteBench' $JMH_ARGS \
  -rf json -rff "$out" >&2
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
