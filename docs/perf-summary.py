#!/usr/bin/env python3
"""Min/median/max over the repeated runs of docs/perf-runs.sh (JSON lines)."""
import json, statistics, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/gdrkit-perf.jsonl") if l.strip()]
series = defaultdict(list)
for r in rows:
    label = r["label"]
    if r.get("baseline") == "memcpy":
        series[(label, "memcpy_mib_s@%d" % r["bytes"])].append(r["bw_mib_s"])
    elif r.get("baseline") == "cacheline_pingpong":
        series[(label, "pingpong_rtt_ns")].append(r["rtt_median_ns"])
    elif "ratio" in r:
        series[(label, r["ratio"])].append(r["value"])
    elif "bw_avg_mib_s" in r:
        for k in ("bw_avg_mib_s", "bw_peak_mib_s", "msg_rate_mpps"):
            series[(label, k)].append(r[k])
    elif "t_typical_us" in r:
        for k in ("t_typical_us", "t_avg_us", "p99_us", "t_min_us"):
            series[(label, k)].append(r[k])
for (label, key), v in series.items():
    print("%-24s %-30s min %10.3f  median %10.3f  max %10.3f  (n=%d)"
          % (label, key, min(v), statistics.median(v), max(v), len(v)))
