#!/usr/bin/env python3
"""Summarises bench/p16-tcp.sh's JSON lines: min/median/max per row, ratios of medians (same session)."""
import json, statistics, sys
rows = {}
import itertools
for line in itertools.chain.from_iterable(open(f) for f in sys.argv[1:]):
    line = line.strip()
    if not line.startswith('{'):
        continue
    d = json.loads(line)
    if 'jar' in d and d.get('test') in ('write_bw', 'write_lat'):
        key = ('gdrkit ' + d['jar'], d['test'], d['bytes'])
        v = d['bw_avg_mib_s'] if d['test'] == 'write_bw' else d['t_typical_us']
    elif d.get('peer') == 'java_socketchannel':
        key, v = ('java_socketchannel', 'stream', d['bytes']), d['bw_avg_mib_s']
    elif d.get('peer') == 'ucx_perftest':
        key = ('ucx_perftest tcp', d['test'], d['bytes'])
        v = d.get('lat_typical_us', d.get('lat_us')) if d['test'].endswith('lat') else d['bw_mib_s']
    elif d.get('peer') == 'iperf3':
        key, v = ('iperf3', d['test'], d['bytes']), d['bw_mib_s']
    else:
        continue
    rows.setdefault(key, []).append((v, float(d.get('load', 'nan'))))
med = {}
print('| who | test | bytes | unit | min | median | max | runs | load avg at start |')
print('|---|---|---|---|---|---|---|---|---|')
for k in sorted(rows):
    vs = [v for v, _ in rows[k]]
    loads = [l for _, l in rows[k]]
    unit = 'us (one-way)' if 'lat' in k[1] else 'MiB/s'
    med[k] = statistics.median(vs)
    print(f'| {k[0]} | {k[1]} | {k[2]} | {unit} | {min(vs):.2f} | {med[k]:.2f} | {max(vs):.2f} | {len(vs)} | '
          f'{min(loads):.0f}-{max(loads):.0f} |')
def r(a, b, label, goal):
    if a in med and b in med:
        print(f'| {label} | {med[a] / med[b]:.3f} | {goal} |')
print()
print('| ratio (medians, same session) | value | goal |')
print('|---|---|---|')
sock = ('java_socketchannel', 'stream', 1048576)
for j in ('before', 'after'):
    r(('gdrkit ' + j, 'write_bw', 1048576), sock, f'gdrkit {j} write_bw 1 MiB / SocketChannel', '>= 0.9')
    r(('gdrkit ' + j, 'write_bw', 4194304), sock, f'gdrkit {j} write_bw 4 MiB / SocketChannel', '>= 0.9')
    r(('gdrkit ' + j, 'write_lat', 8), ('ucx_perftest tcp', 'ucp_put_lat', 8),
      f'gdrkit {j} write_lat 8 B / UCX tcp ucp_put_lat', '<= 1.0')
r(('gdrkit after', 'write_bw', 1048576), ('gdrkit before', 'write_bw', 1048576), 'after / before write_bw 1 MiB', '')
r(('gdrkit after', 'write_bw', 4194304), ('gdrkit before', 'write_bw', 4194304), 'after / before write_bw 4 MiB', '')
r(('gdrkit after', 'write_lat', 8), ('gdrkit before', 'write_lat', 8), 'after / before write_lat 8 B', '')
