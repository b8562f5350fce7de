#!/usr/bin/env python3
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
"""Per-variant table for a bench/coll-peers.sh directory: for each size and each gdrkit variant (gdrkit-<v>.jsonl),
out-of-place busbw min / median / max over the runs, its ratio to OpenMPI's busbw inside each run (in run order),
and to a base variant's inside each run; wrong elements summed. A ratio is taken only where both rows of a run exist.
   python3 bench/coll-variants-table.py DIR [BASE_VARIANT] [MIN_BYTES]"""
import json, sys, os, glob, collections

d = sys.argv[1]
base = sys.argv[2] if len(sys.argv) > 2 else None
min_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rows = collections.defaultdict(dict)  # (variant, bytes) -> run -> obj

def load(label, path):
    for line in open(path):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("bytes", 0) >= min_bytes:
            rows[(label, o["bytes"])][o["run"]] = o

if os.path.exists(os.path.join(d, "openmpi.jsonl")):
    load("openmpi", os.path.join(d, "openmpi.jsonl"))
variants = []
for p in sorted(glob.glob(os.path.join(d, "gdrkit-*.jsonl"))):
    v = os.path.basename(p)[len("gdrkit-"):-len(".jsonl")]
    variants.append(v)
    load(v, p)

def mmm(v, f="%.3f"):
    v = sorted(v)
    return " / ".join(f % x for x in (v[0], v[len(v) // 2], v[-1])) if v else "-"

def ratios(v, other, size):
    a, b = rows.get((v, size), {}), rows.get((other, size), {})
    return [a[r]["busbw_gbs"] / b[r]["busbw_gbs"] for r in sorted(a) if r in b and b[r]["busbw_gbs"] > 0]

sizes = sorted({s for (_, s) in rows})
head = "| bytes | variant | busbw GB/s (min / median / max) | / OpenMPI per run | median |"
if base:
    head += " / %s per run | median |" % base
print(head)
print("|---" * (head.count("|") - 1) + "|")
for s in sizes:
    mpi = rows.get(("openmpi", s), {})
    if mpi:
        print("| %d | OpenMPI | %s | | |%s" % (s, mmm([o["busbw_gbs"] for o in mpi.values()]), " | |" if base else ""))
    for v in variants:
        r = rows.get((v, s), {})
        if not r:
            continue
        ro = ratios(v, "openmpi", s)
        line = "| %d | %s | %s | %s | %s |" % (s, v, mmm([o["busbw_gbs"] for o in r.values()]),
                                               " ".join("%.2f" % x for x in ro), mmm(ro, "%.2f").split(" / ")[1] if ro else "-")
        if base:
            rb = ratios(v, base, s) if v != base else []
            line += " %s | %s |" % (" ".join("%.2f" % x for x in rb), mmm(rb, "%.2f").split(" / ")[1] if rb else "-")
        print(line)
wrong = sum(o.get("wrong", 0) + o.get("inplace_wrong", 0) for runs in rows.values() for o in runs.values())
print("\nwrong elements over all rows: %d" % wrong)
