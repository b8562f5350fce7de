#!/usr/bin/env python3
"""Tables for a bench/coll-peers.sh directory with VARIANTS="ib ib-before": per size, min / median / max over the
runs of OpenMPI, gdrkit (this build) and gdrkit (BEFORE_JAR), time (us) and busbw (GB/s), out-of-place, plus the
ratios taken inside each run first (after/before time, after/OpenMPI busbw and time), then min / median / max.
   python3 bench/coll-ab-table.py docs/results/coll-c12lat/ab-<commit>"""
import sys

from coll_rows import load, mmm

d = sys.argv[1]
rows = load(d, (("openmpi", "openmpi.jsonl"), ("after", "gdrkit-ib.jsonl"), ("before", "gdrkit-ib-before.jsonl")))

sizes = sorted({b for b, _ in rows})
print("| size | OpenMPI time (us) | gdrkit after (us) | gdrkit before (us) | after/before time | after/OpenMPI time |")
print("|---|---|---|---|---|---|")
for s in sizes:
    runs = [rows[k] for k in rows if k[0] == s]
    t = {l: [r[l]["time_us"] for r in runs if l in r] for l in ("openmpi", "after", "before")}
    ab = [r["after"]["time_us"] / r["before"]["time_us"] for r in runs if "after" in r and "before" in r]
    ao = [r["after"]["time_us"] / r["openmpi"]["time_us"] for r in runs if "after" in r and "openmpi" in r]
    print("| %d | %s | %s | %s | %s | %s |" % (s, mmm(t["openmpi"]), mmm(t["after"]), mmm(t["before"]), mmm(ab), mmm(ao)))
print()
print("| size | OpenMPI busbw (GB/s) | gdrkit after | gdrkit before | after/before busbw | after/OpenMPI busbw |")
print("|---|---|---|---|---|---|")
for s in sizes:
    runs = [rows[k] for k in rows if k[0] == s]
    b = {l: [r[l]["busbw_gbs"] for r in runs if l in r] for l in ("openmpi", "after", "before")}
    ab = [r["after"]["busbw_gbs"] / r["before"]["busbw_gbs"] for r in runs if "after" in r and "before" in r and r["before"]["busbw_gbs"] > 0]
    ao = [r["after"]["busbw_gbs"] / r["openmpi"]["busbw_gbs"] for r in runs if "after" in r and "openmpi" in r and r["openmpi"]["busbw_gbs"] > 0]
    print("| %d | %s | %s | %s | %s | %s |" % (s, mmm(b["openmpi"]), mmm(b["after"]), mmm(b["before"]), mmm(ab), mmm(ao)))
wrong = sum(r[l].get("wrong", 0) + r[l].get("inplace_wrong", 0) for r in rows.values() for l in r)
print("\nwrong elements over all rows:", wrong)
