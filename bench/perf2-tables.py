#!/usr/bin/env python3
"""Issue 16 tables from a bench/h200-perf2.sh output folder: min / median / max over the runs, every ratio taken
inside one run (gpu-path's three rows come from one JVM; the in-JVM 1 MiB ratio from the same JVM's baseline).
Usage: python3 bench/perf2-tables.py docs/results/h200-perf2-9a47c25   (prints Markdown)"""
import json, os, statistics, sys
from collections import defaultdict

def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip().startswith("{")]

def mmm(xs, fmt="{:.2f}"):
    xs = sorted(xs)
    if not xs:
        return "unknown"
    return " / ".join(fmt.format(v) for v in (xs[0], statistics.median(xs), xs[-1])) + \
        ("" if len(xs) == 3 else f" ({len(xs)} runs)")

GIB = 1024.0
d = sys.argv[1] if len(sys.argv) > 1 else "."

# gpu-path: per (bytes, run) the three paths
path = defaultdict(dict)
for r in lines(os.path.join(d, "gpu-path.jsonl")):
    path[(r["bytes"], r["run"])][r["path"]] = r["mib_s"] / GIB
sizes = sorted({b for b, _ in path})
print("gpu-path, GiB/s and ratios in the same run, min / median / max")
print("| bytes | GDR | bounce | pinned copy | GDR / bounce | bounce / pinned | GDR / pinned |")
print("|---|---|---|---|---|---|---|")
for s in sizes:
    runs = [v for (b, _), v in sorted(path.items()) if b == s and {"gdr", "bounce", "pinned"} <= v.keys()]
    g = [v["gdr"] for v in runs]; b = [v["bounce"] for v in runs]; p = [v["pinned"] for v in runs]
    print(f"| {s} | {mmm(g)} | {mmm(b)} | {mmm(p)} | {mmm([x / y for x, y in zip(g, b)])} | "
          f"{mmm([x / y for x, y in zip(b, p)])} | {mmm([x / y for x, y in zip(g, p)], '{:.3f}')} |")

# the pipelined bounce (gpu-path's bounce-pipelined row, where the jar has it) beside the pinned copy and GDR
if any("bounce-pipelined" in v for v in path.values()):
    print("\ngpu-path bounce-pipelined (256 KiB pieces, copies overlapping the next piece's WRITE), GiB/s")
    print("| bytes | bounce-pipelined | bounce-pipelined / pinned | GDR / bounce-pipelined | bounce-pipelined / bounce |")
    print("|---|---|---|---|---|")
    for s in sizes:
        runs = [v for (b, _), v in sorted(path.items()) if b == s and {"gdr", "bounce", "bounce-pipelined", "pinned"} <= v.keys()]
        q = [v["bounce-pipelined"] for v in runs]
        print(f"| {s} | {mmm(q)} | {mmm([v['bounce-pipelined'] / v['pinned'] for v in runs])} | "
              f"{mmm([v['gdr'] / v['bounce-pipelined'] for v in runs])} | "
              f"{mmm([v['bounce-pipelined'] / v['bounce'] for v in runs])} |")

# perf --mem gpu:0
perf = defaultdict(list)
for r in lines(os.path.join(d, "perf-gpu.jsonl")):
    if "bw_avg_mib_s" in r:
        perf[(r["test"], r["bytes"])].append(r["bw_avg_mib_s"] / GIB)
print("\nperf --mem gpu:0, BW average GiB/s, min / median / max")
psizes = sorted({b for _, b in perf})
print("| test | " + " | ".join(str(s) for s in psizes) + " |")
print("|---|" + "---|" * len(psizes))
for t in ("write_bw", "read_bw"):
    print(f"| {t} | " + " | ".join(mmm(perf[(t, s)]) for s in psizes) + " |")
# the soft-NIC path (perf write_bw into the GPU) over the pinned copy; different JVMs of one script run
pin = {s: [v["pinned"] for (b, _), v in path.items() if b == s and "pinned" in v] for s in sizes}
print("\nperf write_bw --mem gpu:0 / pinned copy, median over median (separate JVMs, same script run):")
for s in psizes:
    if perf[("write_bw", s)] and pin.get(s):
        print(f"  {s}: {statistics.median(perf[('write_bw', s)]) / statistics.median(pin[s]):.3f}")

# in-JVM rows
inj = defaultdict(dict)
for r in lines(os.path.join(d, "injvm.jsonl")):
    k = (r["label"], r["run"])
    if r.get("baseline") == "memcpy" and r.get("bytes") == 1048576:
        inj[k]["memcpy"] = r["bw_mib_s"] / GIB
    elif r.get("baseline") == "cacheline_pingpong":
        inj[k]["pingpong"] = r["rtt_median_ns"]
    elif r.get("ratio"):
        inj[k]["ratio"] = r["value"]
    elif "bw_avg_mib_s" in r:
        inj[k]["bw"] = r["bw_avg_mib_s"] / GIB
        inj[k]["mpps"] = r["msg_rate_mpps"]
    elif "t_typical_us" in r:
        inj[k]["t"] = r["t_typical_us"]
def col(label, key):
    return [v[key] for (l, _), v in sorted(inj.items()) if l == label and key in v]
print("\nin-JVM (host memory, 1 QP, MTU 4096, invoker), min / median / max")
print("| row | gdrkit | peer or limit, same JVM | ratio | goal |")
print("|---|---|---|---|---|")
print(f"| write_bw 1 MiB, GiB/s | {mmm(col('write_bw_1m', 'bw'))} | MemorySegment.copy 1 MiB "
      f"{mmm(col('write_bw_1m', 'memcpy'))} | {mmm(col('write_bw_1m', 'ratio'))} | >= 0.8 |")
print(f"| write_bw 64 B, M msg/s | {mmm(col('write_bw_64', 'mpps'))} | | | >= 5 |")
print(f"| write_lat 8 B t_typical one way, us | {mmm(col('write_lat_8', 't'))} | cache-line ping-pong RTT median "
      f"{mmm(col('write_lat_8', 'pingpong'), '{:.0f}')} ns | {mmm(col('write_lat_8', 'ratio'))} | <= 1 |")

# --check and -b (one run each)
print("\n--check / -b, 1 MiB, one run each: BW average GiB/s, check")
chk = {}
for r in lines(os.path.join(d, "check.jsonl")):
    if "direction" in r:
        continue
    e = chk.setdefault(r["label"], {})
    if "bw_avg_mib_s" in r:
        e["bw"] = r["bw_avg_mib_s"] / GIB
    if "check" in r:
        e["check"] = r["check"]; e["by"] = r.get("check_by", "").split(" on ")[0].split(":")[0]
print("| label | GiB/s | check | by |")
print("|---|---|---|---|")
for k, e in chk.items():
    print(f"| {k} | {e.get('bw', float('nan')):.2f} | {e.get('check', 'unknown')} | {e.get('by', 'unknown')} |")
