#!/usr/bin/env python3
"""Summarize ReducerBench / ReducerVariantsBench JMH text output: per benchmark and parameters, each fork's GB/s of
output over its measured iterations, wall-clock (JMH's score x bytes) and, where the bench counts it, per CPU second
of the benchmark thread (bytes / cpuNs: time descheduled on a shared host does not count); min / median / max over
the forks, and the median's ratio to the copy benchmark with the same parameters in the same file.
  bench/reducer-table.py FILE.txt [FILE.txt ...]   (a file per JMH run; markdown rows on stdout)"""
import re
import statistics
import sys


def parse(path):
    runs = {}  # (bench, params) -> [fork means GB/s]
    bench = params = None
    cur = None
    for line in open(path, errors="replace"):
        m = re.match(r"# Benchmark: \S+\.(\w+)$", line.strip())
        if m:
            bench = m.group(1)
            continue
        m = re.match(r"# Parameters: \((.*)\)", line.strip())
        if m:
            params = m.group(1)
            continue
        if line.startswith("# Fork:"):
            cur = []
            runs.setdefault((bench, params), []).append(cur)
            continue
        m = re.match(r"Iteration\s+\d+: ([\d.]+) ops/s", line)
        if m and cur is not None and bench is not None:
            cur.append(("ops", float(m.group(1))))
            continue
        m = re.match(r"\s+(bytes|cpuNs): ([\d.]+) #", line)
        if m and cur is not None:
            cur.append((m.group(1), float(m.group(2))))
    return runs


def size_of(params):
    m = re.search(r"bytes = (\d+)", params)
    return int(m.group(1))


def wall(fork, params):
    ops = [v for k, v in fork if k == "ops"]
    return statistics.mean(ops) * size_of(params) / 1e9 if ops else None


def cpu(fork, params):
    b = sum(v for k, v in fork if k == "bytes")
    ns = sum(v for k, v in fork if k == "cpuNs")
    return b / ns if ns else None


def fmt(v):
    return f"{v[0]:.2f} / {statistics.median(v):.2f} / {v[-1]:.2f}" if v else "-"


for path in sys.argv[1:]:
    runs = parse(path)
    rows = {}
    for (bench, params), forks in runs.items():
        w = sorted(x for x in (wall(f, params) for f in forks) if x is not None)
        c = sorted(x for x in (cpu(f, params) for f in forks) if x is not None)
        if w:
            rows[(params, bench)] = (w, c)
    print(f"\n{path}\n")
    print("| parameters | benchmark | forks | wall GB/s min / median / max | / copy | CPU GB/s min / median / max"
          " | / copy |")
    print("|---|---|---|---|---|---|---|")
    for (params, bench), (w, c) in sorted(rows.items()):
        ref = rows.get((params, "copy"))
        rw = f"{statistics.median(w) / statistics.median(ref[0]):.2f}" if ref and bench != "copy" else ""
        rc = (f"{statistics.median(c) / statistics.median(ref[1]):.2f}" if ref and ref[1] and c and bench != "copy"
              else "")
        print(f"| {params} | {bench} | {len(w)} | {fmt(w)} | {rw} | {fmt(c)} | {rc} |")
