#!/usr/bin/env python3
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
"""Summarizes bench/peers.sh JSON lines: min / median / max per row, and the ratios the issues ask for."""
import json, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    if "peer" in r:
        key = (r["peer"], r.get("transport", ""), r["test"], r["bytes"])
        val = r.get("bw_mib_s", r.get("bw_avg_mib_s")) if "bw" in r["test"] or r["peer"] in ("iperf3", "java_socketchannel") else r.get("lat_us")
    elif "bw_avg_mib_s" in r:
        key = ("gdrkit", r.get("fabric", "") + (" mtu " + str(r["mtu"])), r["test"], r["bytes"])
        val = r["bw_avg_mib_s"]
    elif "t_typical_us" in r:
        key = ("gdrkit", r.get("fabric", "") + (" mtu " + str(r["mtu"])), r["test"], r["bytes"])
        val = r["t_typical_us"]
    else:
        continue
    if val is not None:
        rows[key].append(float(val))

def mmm(v):
    return min(v), statistics.median(v), max(v)

print("| who | transport | test | bytes | unit | min | median | max | runs |")
print("|---|---|---|---|---|---|---|---|---|")
for key in sorted(rows):
    who, tr, test, size = key
    unit = "us (one-way)" if ("lat" in test) else "MiB/s"
    lo, med, hi = mmm(rows[key])
    print(f"| {who} | {tr} | {test} | {size} | {unit} | {lo:.2f} | {med:.2f} | {hi:.2f} | {len(rows[key])} |")

def med(who, tr_prefix, test, size):
    for (w, tr, t, s), v in rows.items():
        if w == who and tr.startswith(tr_prefix) and t == test and s == size:
            return statistics.median(v)
    return None

print()
print("| ratio (medians of the same session) | value | goal |")
print("|---|---|---|")
def ratio(name, a, b, goal):
    if a is not None and b is not None and b:
        print(f"| {name} | {a / b:.3f} | {goal} |")
    else:
        print(f"| {name} | not measured | {goal} |")
for s in (1048576, 4194304):
    ratio(f"gdrkit shm write_bw / UCX shm tag_bw, {s} B", med("gdrkit", "shm mtu 4096", "write_bw", s),
          med("ucx_perftest", "shm", "tag_bw", s), ">= 1.0")
    ratio(f"gdrkit shm write_bw (64 KiB MTU) / UCX shm tag_bw, {s} B", med("gdrkit", "shm mtu 65536", "write_bw", s),
          med("ucx_perftest", "shm", "tag_bw", s), ">= 1.0")
    ratio(f"gdrkit shm write_bw / UCX shm ucp_put_bw, {s} B", med("gdrkit", "shm mtu 4096", "write_bw", s),
          med("ucx_perftest", "shm", "ucp_put_bw", s), "goal 1.0")
ratio("gdrkit shm write_lat 8 B / UCX shm ucp_put_lat 8 B", med("gdrkit", "shm", "write_lat", 8),
      med("ucx_perftest", "shm", "ucp_put_lat", 8), "<= 2.0")
ratio("gdrkit tcp write_bw 1 MiB / Java SocketChannel 1 MiB", med("gdrkit", "tcp", "write_bw", 1048576),
      med("java_socketchannel", "tcp", "stream", 1048576), ">= 0.9")
ratio("gdrkit tcp write_bw 1 MiB / UCX tcp tag_bw 1 MiB", med("gdrkit", "tcp", "write_bw", 1048576),
      med("ucx_perftest", "tcp", "tag_bw", 1048576), ">= 1.0")
