#!/usr/bin/env python3
"""Summarizes a bench/h200-shmem.sh result folder (its *.jsonl, searched recursively) into the markdown tables of
docs/SHMEM.md and docs/GPU_INITIATED.md: min / median / max over the runs of each run's figure (a latency row's
median, a bandwidth row's MiB/s, a message rate's Mops, a MoE run's kernel time), the breakdown steps with their
clock-pairing errors, the doorbell counters and the stale WQEs.

    python3 bench/h200-shmem-summary.py docs/results/h200-shmem/run3-8f8af8a
"""
import glob, json, os, statistics, sys
from collections import defaultdict

root = sys.argv[1] if len(sys.argv) > 1 else "."
runs = defaultdict(list)   # measurement name -> [(run, rc, result or None, raw)]
moe = defaultdict(list)    # (kind, np, mode) -> [kernel ms]
moe_failed = []            # (file, text) of a run whose output was not JSON

for path in sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True)):
    base = os.path.basename(path)
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        if base.startswith("moe"):
            if not line.startswith("{"):
                moe_failed.append((base, line))  # older jars: "# FAILED: ..." text
                continue
            d = json.loads(line)
            if "error" in d:  # shmem-moe --json after issue 13: the named error as JSON
                moe_failed.append((base, d["error"]))
                continue
            r = d["result"]
            kind = "processes" if base.startswith("moe_procs") else "threads"
            moe[(kind, r["nPes"], r["mode"])].append((r["kernelMillis"], r["verified"], r["mismatches"]))
            continue
        d = json.loads(line)
        out = d.get("out") or {}
        runs[d["name"]].append((d["run"], d["rc"], out.get("result"), d))


def mmm(v):
    return f"{min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f}" if v else "-"


def row(name, size, field="medianUs"):
    """Per run: the figure of the row of that size (None where the run failed or has no such row)."""
    got = []
    for _, rc, res, _ in runs.get(name, []):
        if rc != 0 or not res:
            got.append(None)
            continue
        rs = [x for x in res.get("rows", []) if x["bytes"] == size]
        got.append(rs[0][field] if rs else None)
    return got


def fmt(v, p=2):
    return "-" if v is None else f"{v:.{p}f}"


print(f"# bench/h200-shmem.sh results in {root}\n")
print("Derived by bench/h200-shmem-summary.py from the *.jsonl files there. The GPU is what host.txt says; the NIC is")
print("always the software NIC (simulated); runs on sim:* have a simulated GPU too. Figures hold only on that host.\n")

# ---- the floor
rr = [res for _, rc, res, _ in runs.get("ring_rtt", []) if rc == 0 and res]
if rr:
    print("## ring_rtt (a kernel rings pinned host memory, the CPU answers; no NIC), 10,000 rounds per run\n")
    print("| | run 1 | run 2 | run 3 | min / median / max |")
    print("|---|---|---|---|---|")
    for f, label in (("minUs", "minimum, us"), ("medianUs", "median, us"), ("maxUs", "maximum, us")):
        v = [r[f] for r in rr]
        print(f"| {label} | " + " | ".join(fmt(x) for x in v) + f" | {mmm(v)} |")
    print()

# ---- latency rows
lat = [("put_lat", "put_lat"), ("get_lat", "get_lat"), ("put_signal_lat", "put_signal_lat (half round trip)"),
       ("atomic_lat", "atomic_lat (fetch-add)")]
for size in (8, 16, 4096):
    print(f"## latency at {size} B, median of each run (us), and min / median / max of those medians\n")
    print("| test | path | run 1 | run 2 | run 3 | min / median / max | run minima |")
    print("|---|---|---|---|---|---|---|")
    for test, label in lat + [("sim_put_lat", "put_lat on sim:h200 (simulated GPU)")]:
        for mode in ("ibrc", "ibgda"):
            name = f"{test}_{mode}"
            if name not in runs:
                continue
            med = row(name, size)
            mins = row(name, size, "minUs")
            if all(v is None for v in med):
                continue
            ok = [v for v in med if v is not None]
            print(f"| {label} | {mode.upper()} | " + " | ".join(fmt(v) for v in med)
                  + f" | {mmm(ok)} | {', '.join(fmt(v) for v in mins)} |")
    name = "put_lat_ibgda_nofence"
    if name in runs and any(v is not None for v in row(name, size)):
        med = row(name, size)
        print(f"| put_lat, no fence | IBGDA | " + " | ".join(fmt(v) for v in med)
              + f" | {mmm([v for v in med if v is not None])} | {', '.join(fmt(v) for v in row(name, size, 'minUs'))} |")
    print()

# ---- the speed goal, per run
a, b = row("put_lat_ibgda", 8), row("put_lat_ibrc", 8)
if any(a) and any(b):
    print("## speed goal: IBGDA put_lat below IBRC's in the same run (8 B, medians, us)\n")
    print("| run | IBRC | IBGDA | IBGDA / IBRC | holds |")
    print("|---|---|---|---|---|")
    for i, (x, y) in enumerate(zip(b, a), 1):
        if x is None or y is None:
            print(f"| {i} | {fmt(x)} | {fmt(y)} | - | - |")
        else:
            print(f"| {i} | {x:.2f} | {y:.2f} | {y / x:.3f} | {'yes' if y < x else 'no'} |")
    print()
    if rr:
        floor = [r["medianUs"] for r in rr]
        print(f"moonshot: IBGDA put_lat 8 B median / ring_rtt median, per run: "
              + ", ".join(f"{y / f:.1f}x" for y, f in zip(a, floor) if y is not None)
              + " (goal: below 2x)\n")

# ---- fence against no fence, row by row
a, b = "put_lat_ibgda", "put_lat_ibgda_nofence"
if a in runs and b in runs:
    print("## IBGDA put_lat with the fence against without it (medians of the runs' medians, us)\n")
    print("| bytes | fence | no fence | difference |")
    print("|---|---|---|---|")
    for size in (8, 16, 32, 64, 256, 1024, 4096):
        x = [v for v in row(a, size) if v is not None]
        y = [v for v in row(b, size) if v is not None]
        if x and y:
            mx, my = statistics.median(x), statistics.median(y)
            print(f"| {size} | {mx:.2f} | {my:.2f} | {mx - my:+.2f} |")
    print()

# ---- breakdown steps
print("## breakdown (median us over the last operations of the largest size; ± the clock-pairing error)\n")
print("| measurement | size | samples | run 1 | run 2 | run 3 |")
print("|---|---|---|---|---|---|")
for name in sorted(runs):
    cells, size, samples = [], None, None
    for _, rc, res, _ in runs[name]:
        bd = (res or {}).get("breakdown") or {}
        if rc != 0 or not bd.get("steps"):
            cells.append("-")
            continue
        size = res["rows"][-1]["bytes"]
        samples = bd["samples"]
        cells.append("; ".join(f"{s['name']} {s['text']}" for s in bd["steps"]) + f"; total {bd['totalUs']:.2f}")
    if size is not None:
        print(f"| {name} | {size} | {samples} | " + " | ".join(cells) + " |")
print()

# ---- bandwidth
print("## put_bw, MiB/s (min / median / max over the runs)\n")
print("| measurement | 64 B | 256 B | 4 KiB | 64 KiB | 256 KiB |")
print("|---|---|---|---|---|---|")
for name in sorted(n for n in runs if n.startswith("put_bw")):
    cells = []
    for size in (64, 256, 4096, 65536, 262144):
        v = [x for x in row(name, size, "mibPerSec") if x is not None]
        cells.append(mmm(v) if v else "-")
    print(f"| {name} | " + " | ".join(cells) + " |")
print()

# ---- message rate
names = sorted({n.rsplit("_t", 1)[0] for n in runs if n.startswith("msg_rate")})
if names:
    print("## msg_rate, 8 B non-blocking puts, 8,192 per run, 1 block: million operations per second"
          " (min / median / max), and the GPU doorbells the NIC saw\n")
    print("| GPU threads | " + " | ".join(n.split("_")[-1].upper() for n in names)
          + " | " + " | ".join(n.split("_")[-1].upper() + " doorbells (CPU / GPU)" for n in names) + " |")
    print("|---|" + "---|" * (2 * len(names)))
    for t in (1, 4, 16, 64, 256):
        cells, dbs = [], []
        for n in names:
            name = f"{n}_t{t}"
            v = [x for x in row(name, 8, "mops") if x is not None]
            cells.append(f"{min(v):.4f} / {statistics.median(v):.4f} / {max(v):.4f}" if v else "-")
            d = [(res["cpuDoorbells"], res["gpuDoorbells"]) for _, rc, res, _ in runs.get(name, []) if res]
            dbs.append(", ".join(f"{c}/{g}" for c, g in d))
        print(f"| {t} | " + " | ".join(cells) + " | " + " | ".join(dbs) + " |")
    print()

# ---- doorbells and stale WQEs
print("## doorbell counters of the path's QPs (CPU / GPU) and stale WQEs refused, per run\n")
print("| measurement | fence | CPU / GPU doorbells | stale WQEs | rc |")
print("|---|---|---|---|---|")
for name in sorted(runs):
    if name == "ring_rtt" or name.startswith("msg_rate"):
        continue
    d, s, f, rcs = [], [], set(), []
    for _, rc, res, _ in runs[name]:
        rcs.append(str(rc))
        if res:
            d.append(f"{res['cpuDoorbells']}/{res['gpuDoorbells']}")
            s.append(str(res["staleWqes"]))
            f.add(res["wqeFence"])
    print(f"| {name} | {'/'.join(sorted(map(str, f)))} | {', '.join(d)} | {', '.join(s)} | {', '.join(rcs)} |")
print()

# ---- MoE
if moe:
    print("## MoE dispatch/combine (64 tokens of 4 KiB per PE), kernel time in ms (min / median / max of the"
          " runs that completed)\n")
    print("| PEs as | np | IBRC | IBGDA | IBGDA / IBRC (medians) | runs byte-checked (IBRC, IBGDA) |")
    print("|---|---|---|---|---|---|")
    for kind in ("threads", "processes"):
        for n in (2, 4, 8):
            a, b = moe.get((kind, n, "IBRC"), []), moe.get((kind, n, "IBGDA"), [])
            if not a and not b:
                continue
            ra = statistics.median([x[0] for x in a]) if a else None
            rb = statistics.median([x[0] for x in b]) if b else None
            print(f"| {kind} | {n} | {mmm([x[0] for x in a])} | {mmm([x[0] for x in b])} | "
                  + (f"{rb / ra:.2f}" if ra and rb else "-")
                  + f" | {sum(x[1] and x[2] == 0 for x in a)}/{len(a)}, {sum(x[1] and x[2] == 0 for x in b)}/{len(b)} |")
    print()
for f, text in moe_failed:
    print(f"MoE run without a result ({f}): {text}")
