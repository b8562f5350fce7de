#!/usr/bin/env python3
"""Per-run ratios of a bench/coll-peers.sh directory (bench/h200-round8.sh MODE=final): SocketTransport's time over
IbTransport's on shm (ib) and on tcp (ib-tcp), OpenMPI's over ib's, per size and run; then min/median/max times.
   python3 bench/coll-rails-ratios.py docs/results/coll-h200/r8-rails/f-final/final"""
import json, os, statistics, sys

def load(d, name):
    rows = {}
    f = os.path.join(d, name)
    if not os.path.exists(f):
        return rows
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if 'bytes' in r:
            rows[(r['run'], r['bytes'])] = r['time_us']
    return rows

d = sys.argv[1]
ib, tcp, so, mpi = (load(d, n) for n in ('gdrkit-ib.jsonl', 'gdrkit-ib-tcp.jsonl', 'gdrkit-socket.jsonl',
                                          'openmpi.jsonl'))
runs = sorted({r for (r, _) in ib})
def per_run(num, den, b):
    return ' '.join('%.2f' % (num[(r, b)] / den[(r, b)]) if (r, b) in num and (r, b) in den else '-' for r in runs)
print('| size | socket/ib over shm, per run | socket/ib-tcp, per run | OpenMPI/ib, per run |')
print('|---|---|---|---|')
for b in sorted({b for (_, b) in ib}):
    print('| %d | %s | %s | %s |' % (b, per_run(so, ib, b), per_run(so, tcp, b), per_run(mpi, ib, b)))
print()
print('| row | size | min / median / max us |')
print('|---|---|---|')
for name, rows in (('ib (shm)', ib), ('ib-tcp', tcp), ('socket', so), ('OpenMPI', mpi)):
    for b in sorted({b for (_, b) in rows}):
        v = [t for (r, bb), t in rows.items() if bb == b]
        print('| %s | %d | %.1f / %.1f / %.1f |' % (name, b, min(v), statistics.median(v), max(v)))
