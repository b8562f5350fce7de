#!/usr/bin/env python3
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
"""The ratio table of a bench/coll-vs-mpi.sh directory (gdrkit.jsonl and openmpi.jsonl, one JSON object per size and
run, each with "run", "bytes", "time_us" and "wrong"): per size, the time per call in µs of each side, min / median /
max over the runs, the ratio gdrkit / OpenMPI inside each run (in run order; above 1: gdrkit slower) and the median of
those ratios. A ratio is taken only where both sides have the run. Markdown on stdout.
Exit status: 0; 3 when any element was wrong (the table is still printed); 4 when there is no row at all.
   python3 bench/coll-vs-mpi-table.py DIR"""
import json
import os
import statistics
import sys


def load(path):
    rows = {}  # bytes -> run -> obj
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if "bytes" in o and "time_us" in o:
                rows.setdefault(int(o["bytes"]), {})[int(o.get("run", 1))] = o
    return rows


def size(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return "%d %s" % (b // k, unit)
    return "%d B" % b


def num(x):
    return "%.0f" % x if x >= 100 else "%.1f" % x if x >= 10 else "%.2f" % x


def mmm(v):
    return "%s / %s / %s" % (num(min(v)), num(statistics.median(v)), num(max(v))) if v else "-"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__ + "\n")
        return 2
    d = argv[1]
    g = load(os.path.join(d, "gdrkit.jsonl"))
    m = load(os.path.join(d, "openmpi.jsonl"))
    if not g and not m:
        sys.stderr.write("no rows in %s (gdrkit.jsonl, openmpi.jsonl)\n" % d)
        return 4
    first = next(iter(next(iter((g or m).values())).values()))
    runs = sorted({r for rows in (g, m) for runs_ in rows.values() for r in runs_})
    fabric = first.get("fabric", "")
    print("%s, %s ranks%s, %d run%s; time per call in µs, min / median / max; ratio = gdrkit / OpenMPI "
          "(above 1: gdrkit slower)" % (first.get("op", "?"), first.get("np", "?"),
                                        ", fabric " + fabric if fabric else "", len(runs), "" if len(runs) == 1 else "s"))
    print()
    print("| size | gdrkit µs | OpenMPI µs | ratio per run | median ratio |")
    print("|---|---|---|---|---|")
    for b in sorted(set(g) | set(m)):
        gr, mr = g.get(b, {}), m.get(b, {})
        ratios = [gr[r]["time_us"] / mr[r]["time_us"] for r in sorted(gr) if r in mr and mr[r]["time_us"] > 0]
        print("| %s | %s | %s | %s | %s |" % (
            size(b), mmm([o["time_us"] for o in gr.values()]), mmm([o["time_us"] for o in mr.values()]),
            " ".join("%.2f" % x for x in ratios) or "-", "%.2f" % statistics.median(ratios) if ratios else "-"))
    wrong_g = sum(o.get("wrong", 0) + o.get("inplace_wrong", 0) for r in g.values() for o in r.values())
    wrong_m = sum(o.get("wrong", 0) for r in m.values() for o in r.values())
    print()
    print("wrong elements: gdrkit %d, OpenMPI %d" % (wrong_g, wrong_m))
    return 3 if wrong_g or wrong_m else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
