#!/usr/bin/env python3
"""IbTransport (shm and tcp fabrics) against SocketTransport from bench/coll-peers.sh's JSON lines (issue 12 item 7).

Per size: min / median / max of busbw over the runs for each variant, and per run the ratio IbTransport /
SocketTransport of that run's busbw (the rows of one run were measured back to back). Markdown to stdout.
  python3 bench/coll-ib-vs-socket.py DIR   (DIR holds gdrkit-ib.jsonl, gdrkit-ib-tcp.jsonl, gdrkit-socket.jsonl)
"""
import json
import statistics
import sys
from pathlib import Path

d = Path(sys.argv[1])
rows = {}
for v in ("ib", "ib-tcp", "socket"):
    f = d / f"gdrkit-{v}.jsonl"
    if f.exists():
        for line in f.read_text().splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                rows.setdefault(v, {}).setdefault(r["bytes"], {})[r["run"]] = r


def mmm(xs):
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}" if xs else "-"


sizes = sorted({b for v in rows.values() for b in v})
print("| size | IbTransport shm busbw (GB/s) | IbTransport tcp | SocketTransport tcp | shm/socket per run | "
      "tcp/socket per run | wrong |")
print("|---|---|---|---|---|---|---|")
for b in sizes:
    cells, ratios, wrong = [], {}, 0
    for v in ("ib", "ib-tcp", "socket"):
        runs = rows.get(v, {}).get(b, {})
        cells.append(mmm([r["busbw_gbs"] for r in runs.values()]))
        wrong += sum(r["wrong"] + r["inplace_wrong"] for r in runs.values())
    for v in ("ib", "ib-tcp"):
        per = []
        for run, s in sorted(rows.get("socket", {}).get(b, {}).items()):
            i = rows.get(v, {}).get(b, {}).get(run)
            if i and s["busbw_gbs"] > 0:
                per.append(i["busbw_gbs"] / s["busbw_gbs"])
        ratios[v] = " ".join(f"{x:.2f}" for x in per) + (f" (median {statistics.median(per):.2f})" if per else "")
    label = f"{b >> 20} MiB" if b >= 1 << 20 else f"{b} B"
    print(f"| {label} | {cells[0]} | {cells[1]} | {cells[2]} | {ratios['ib']} | {ratios['ib-tcp']} | {wrong} |")
