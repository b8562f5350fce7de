#!/usr/bin/env python3
"""Tables for a bench/coll-peers.sh directory with VARIANTS="ib ib-nodirect ib-before" (issue 12, c12small): per
size, min / median / max over the runs of the time (us) of OpenMPI, gdrkit (this build, direct round on), the same
build with gdrkit.coll.direct.bytes=0 and BEFORE_JAR, out-of-place and in-place, then the ratios taken inside each
run first (after/before, after/nodirect, after/OpenMPI), min / median / max.
   python3 bench/coll-direct-table.py DIR"""
import sys

from coll_rows import load, mmm

d = sys.argv[1]
files = (("openmpi", "openmpi.jsonl"), ("after", "gdrkit-ib.jsonl"), ("nodirect", "gdrkit-ib-nodirect.jsonl"),
         ("before", "gdrkit-ib-before.jsonl"))
rows = load(d, files)

sizes = sorted({b for b, _ in rows})
for key, title in (("time_us", "out-of-place"), ("inplace_time_us", "in-place")):
    print("%s, time (us) and ratios, min / median / max over runs:" % title)
    print()
    print("| size | OpenMPI | gdrkit direct (after) | gdrkit direct off | gdrkit before | after / before "
          "| after / direct off | after / OpenMPI |")
    print("|---|---|---|---|---|---|---|---|")
    for s in sizes:
        runs = [rows[k] for k in rows if k[0] == s]
        kk = lambda l: "time_us" if l == "openmpi" else key
        t = {l: [r[l][kk(l)] for r in runs if l in r] for l, _ in files}
        ratio = lambda a, b: [r[a][kk(a)] / r[b][kk(b)] for r in runs if a in r and b in r and r[b][kk(b)] > 0]
        wrong = sum(r[l].get("wrong", 0) + r[l].get("inplace_wrong", 0) for r in runs for l in r)
        print("| %d | %s | %s | %s | %s | %s | %s | %s |%s" % (s, mmm(t["openmpi"]), mmm(t["after"]),
              mmm(t["nodirect"]), mmm(t["before"]), mmm(ratio("after", "before")), mmm(ratio("after", "nodirect")),
              mmm(ratio("after", "openmpi")), "" if wrong == 0 else " WRONG ELEMENTS: %d" % wrong))
    print()
