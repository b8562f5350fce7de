#!/usr/bin/env python3
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
"""min/median/max time per call of jar A and jar B per (ranks, fabric, size) from bench/ab-jars.sh's JSON lines,
and the ratio of the medians B/A (above 1: B slower)."""
import json, statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith('{'):
        continue
    r = json.loads(line)
    us = r.get('time_us', r.get('oop_time_us'))
    if us is None:
        continue
    t[(r['np'], r['fab'], r['bytes'], r['jar'])].append(us)
keys = sorted({k[:3] for k in t})
print('| ranks | fabric | bytes | A min/med/max us | B min/med/max us | B/A median |')
print('|---|---|---|---|---|---|')
for k in keys:
    a, b = t.get(k + ('A',), []), t.get(k + ('B',), [])
    if not a or not b:
        continue
    fa = '%.1f/%.1f/%.1f' % (min(a), statistics.median(a), max(a))
    fb = '%.1f/%.1f/%.1f' % (min(b), statistics.median(b), max(b))
    print('| %d | %s | %d | %s | %s | %.2f |' % (k[0], k[1], k[2], fa, fb, statistics.median(b) / statistics.median(a)))
