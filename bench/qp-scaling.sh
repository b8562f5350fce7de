#!/usr/bin/env bash
# WRITE bandwidth with 1, 2, 4, 8 and 16 QPs on each fabric (in-JVM, shm and tcp across processes), 64 KiB
# messages round-robin over the QPs, RUNS runs each; JSON lines to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/gdrkit-qps.jsonl}
: > "$OUT"
./gdrkit build >/dev/null
for run in $(seq 1 "$RUNS"); do
  for q in 1 2 4 8 16; do
    ./gdrkit perf write_bw --loopback -s 65536 -n 20000 -q $q --json 2>/dev/null | tail -n 1 >> "$OUT"
    ./gdrkit perf write_bw --fabric shm --loopback --port 18600 -s 65536 -n 20000 -q $q --json 2>/dev/null | tail -n 1 >> "$OUT"
    ./gdrkit perf write_bw --fabric tcp --loopback --port 18602 -s 65536 -n 5000 -q $q --json 2>/dev/null | tail -n 1 >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("{") and "bw_avg_mib_s" in line:
        r = json.loads(line)
        rows[(r["fabric"], r["qps"])].append(r["bw_avg_mib_s"])
print("| fabric | QPs | min | median | max (MiB/s) |")
print("|---|---|---|---|---|")
for (f, q) in sorted(rows):
    v = rows[(f, q)]
    print(f"| {f} | {q} | {min(v):.0f} | {statistics.median(v):.0f} | {max(v):.0f} |")
PY
