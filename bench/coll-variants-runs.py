#!/usr/bin/env python3
"""Per-run times of a bench/coll-peers.sh directory, one block per size and one line per row (gdrkit-<variant>.jsonl,
openmpi.jsonl): the time of runs 1..3 and their median. Run in the directory:
   cd docs/results/coll-h200/r9/f-confirm && python3 ../../../../../bench/coll-variants-runs.py"""
import json,glob,collections,statistics,sys
rows=collections.defaultdict(dict)
for f in sorted(glob.glob('*.jsonl')):
    name=f[:-6].replace('gdrkit-','')
    for l in open(f):
        try: r=json.loads(l)
        except: continue
        rows[name][(r['run'],r['bytes'])]=r['time_us']
names=list(rows)
sizes=sorted({b for n in rows for (_,b) in rows[n]})
for b in sizes:
    print(b)
    for n in names:
        v=[rows[n][(r,b)] for r in (1,2,3) if (r,b) in rows[n]]
        print('   %-75s %s   med %.0f'%(n,' '.join('%.0f'%x for x in v), statistics.median(v)))
