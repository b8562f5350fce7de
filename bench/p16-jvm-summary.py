#!/usr/bin/env python3
"""Tables from bench/p16-jvm.sh's JSON lines: python3 bench/p16-jvm-summary.py DIR [DIR...]

Every cell is min / median / max over the rounds; a ratio is taken inside one JVM (one round, one jar) first.
"""
import json
import os
import statistics
import sys
from collections import defaultdict


def mmm(v):
    if not v:
        return "-"
    v = sorted(v)
    f = (lambda x: f"{x:,.0f}") if v[0] >= 1000 else (lambda x: f"{x:.3g}")
    return f"{f(v[0])} / {f(statistics.median(v))} / {f(v[-1])}"


def lines(path):
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def main():
    cpu = defaultdict(lambda: defaultdict(dict))  # label -> round -> test/bytes -> ns
    perf = defaultdict(lambda: defaultdict(list))  # label -> metric -> values
    for d in sys.argv[1:]:
        for r in lines(os.path.join(d, "cpu.jsonl")):
            cpu[r["label"]][(d, r["round"])][f"{r['test']}_{r['bytes']}"] = r["cpu_ns_per_msg_median"]
        for r in lines(os.path.join(d, "perf.jsonl")):
            lab, row = r["label"], r.get("row")
            if row == "write_bw_1m" and r.get("ratio") == "bw_avg_over_memcpy":
                perf[lab]["ratio_1m"].append(r["value"])
            elif row == "write_bw_1m" and r.get("test") == "write_bw":
                perf[lab]["bw_1m_gib"].append(r["bw_avg_mib_s"] / 1024)
            elif row == "write_bw_1m" and r.get("baseline") == "memcpy" and r.get("bytes") == 1048576:
                perf[lab]["memcpy_1m_gib"].append(r["bw_mib_s"] / 1024)
            elif row == "write_bw_64" and r.get("test") == "write_bw":
                perf[lab]["rate_64_mpps"].append(r["msg_rate_mpps"])
            elif row == "write_lat_8" and "t_typical_us" in r:
                perf[lab]["lat_8_typical_us"].append(r["t_typical_us"])
    if cpu:
        print("| thread CPU per message (ns), min / median / max over rounds | " + " | ".join(cpu) + " |")
        print("|---" * (len(cpu) + 1) + "|")
        for key, name in [("write_bw_1048576", "write_bw 1 MiB"), ("memcpy_1048576", "MemorySegment.copy 1 MiB, same JVM"),
                          ("write_bw_64", "write_bw 64 B"), ("write_lat_8", "write_lat 8 B (round trip)")]:
            print(f"| {name} | " + " | ".join(mmm([r[key] for r in cpu[l].values() if key in r]) for l in cpu) + " |")
        ratios = {l: [r["memcpy_1048576"] / r["write_bw_1048576"] for r in cpu[l].values()
                      if "memcpy_1048576" in r and "write_bw_1048576" in r] for l in cpu}
        print("| **WRITE 1 MiB / copy 1 MiB (CPU time, same JVM)** | " + " | ".join(f"**{mmm(ratios[l])}**" for l in cpu)
              + " |")
        print()
    if perf:
        print("| `./gdrkit perf` (wall clock), min / median / max | " + " | ".join(perf) + " |")
        print("|---" * (len(perf) + 1) + "|")
        for key, name in [("bw_1m_gib", "write_bw 1 MiB, GiB/s"), ("memcpy_1m_gib", "MemorySegment.copy 1 MiB, GiB/s"),
                          ("ratio_1m", "**ratio, same JVM**"), ("rate_64_mpps", "write_bw 64 B, M msg/s"),
                          ("lat_8_typical_us", "write_lat 8 B t_typical, us")]:
            print(f"| {name} | " + " | ".join(mmm(perf[l][key]) for l in perf) + " |")


if __name__ == "__main__":
    main()
