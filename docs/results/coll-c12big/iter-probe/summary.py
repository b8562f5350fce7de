import json, collections, sys
rows=[json.loads(l) for l in open(sys.argv[1])]
# per (bytes, inplace, batch, round): slowest rank's stat (as nccl-tests takes the slowest rank)
g=collections.defaultdict(dict)
for r in rows:
    k=(r['bytes'], r['inplace'], r['batch'], r['round'])
    for s in ('min_us','p25_us','p50_us','avg_us'):
        g[k][s]=max(g[k].get(s,0), r[s])
agg=collections.defaultdict(lambda: collections.defaultdict(list))
for (b,ip,bt,rd),v in g.items():
    for s,x in v.items(): agg[(b,ip,bt)][s].append((rd,x))
def m(v):
    v=sorted(x for _,x in v); return "%.0f/%.0f/%.0f" % (v[0], v[len(v)//2], v[-1])
for k in sorted(agg):
    a=agg[k]
    print(k, "min_iter", m(a['min_us']), " p25", m(a['p25_us']), " p50", m(a['p50_us']), " avg", m(a['avg_us']))
# per round ratios of min_us: batch16/batch1
print()
for b in sorted({k[0] for k in agg}):
  for ip in (False, True):
    for stat in ('min_us','p50_us'):
        r16=[g[(b,ip,16,rd)][stat]/g[(b,ip,1,rd)][stat] for rd in range(1,9) if (b,ip,16,rd) in g and (b,ip,1,rd) in g]
        r128=[g[(b,ip,128,rd)][stat]/g[(b,ip,1,rd)][stat] for rd in range(1,9) if (b,ip,128,rd) in g and (b,ip,1,rd) in g]
        print(b, "inplace" if ip else "oop", stat, "b16/b1 time per round", " ".join("%.2f"%x for x in r16), "| b128/b1", " ".join("%.2f"%x for x in r128))
