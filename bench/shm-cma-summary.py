#!/usr/bin/env python3
"""Tables for docs/PERFORMANCE.md from bench/shm-cma.sh's JSON lines: min/median/max per row, and per-run ratios
(each gdrkit line against the UCX line of the same run and size, measured minutes apart)."""
import json, statistics, sys
rows, runs = {}, []
cur = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    mtu = d.get("mtu", "")
    if d.get("peer") == "ucx_perftest":
        key = ("ucx_perftest", d["test"], d["bytes"])
        if d["test"] == "tag_bw":
            cur = {"bytes": d["bytes"]}
            runs.append(cur)
        cur[d["test"]] = d["bw_mib_s"]
        bw = d["bw_mib_s"]
    else:
        key = ("gdrkit mtu %s" % mtu, d["mode"], d["bytes"])
        bw = d["bw_avg_mib_s"]
        cur[d["mode"]] = bw
    rows.setdefault(key, []).append((bw, float(d["load"])))
print("| who | test / mode | bytes | MiB/s min | median | max | load (1-min avg) |")
print("|---|---|---|---|---|---|---|")
for k, v in rows.items():
    b = [x[0] for x in v]
    print("| %s | %s | %d | %.0f | %.0f | %.0f | %s |" % (k[0], k[1], k[2], min(b), statistics.median(b), max(b),
          " ".join("%.0f" % x[1] for x in v)))
print()
print("| ratio, per run | bytes | min | median | max | runs |")
print("|---|---|---|---|---|---|")
for num, den in (("cma", "ring"), ("cma", "tag_bw"), ("ring", "tag_bw"), ("cma", "ucp_put_bw")):
    for size in sorted({r["bytes"] for r in runs}):
        q = [r[num] / r[den] for r in runs if r["bytes"] == size and num in r and den in r]
        if q:
            print("| %s / %s | %d | %.3f | %.3f | %.3f | %d |" % (num, den, size, min(q), statistics.median(q), max(q),
                  len(q)))
