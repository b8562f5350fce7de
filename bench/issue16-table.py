#!/usr/bin/env python3
"""Issue 16's table from bench/issue16-local.sh's JSON lines: each figure's min / median / max over the runs, and
each ratio taken inside one run first (then min / median / max of the per-run ratios)."""
import json, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        runs[r["run"]].append(r)

def first(lines, pred, field):
    for r in lines:
        if pred(r) and r.get(field) is not None:
            return float(r[field])
    return None

def peer(who, tr, test, size, field):
    return lambda L: first(L, lambda r: r.get("part") == "peers" and r.get("peer") == who and r.get("transport") == tr
                           and r.get("test") == test and r.get("bytes") == size, field)

def gdr(part, fabric, test, size, field, mtu=4096):
    return lambda L: first(L, lambda r: r.get("part", "").startswith(part) and r.get("fabric") == fabric
                           and r.get("test") == test and r.get("bytes") == size and r.get("mtu", mtu) == mtu
                           and "baseline" not in r and "ratio" not in r, field)

def base(part, kind, field, size=None):
    return lambda L: first(L, lambda r: r.get("part") == part and r.get("baseline") == kind
                           and (size is None or r.get("bytes") == size), field)

MIB = 1048576
rows = [
    # name, gdrkit getter, unit, peer name, peer getter, ratio kind (a/b or b/a... 'div' = gdrkit / peer), goal
    ("in-JVM WRITE 1 MiB (MTU 4096, 1 QP)", gdr("injvm_1m", "injvm", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "MemorySegment.copy 1 MiB, same JVM", base("injvm_1m", "memcpy", "bw_mib_s", MIB), ">= 0.8"),
    ("in-JVM write_lat 8 B one way, t_typical", gdr("injvm_lat8", "injvm", "write_lat", 8, "t_typical_us"), "us",
     "cache-line ping-pong RTT median (us)", lambda L: (lambda v: v / 1000 if v else None)(
         base("injvm_lat8", "cacheline_pingpong", "rtt_median_ns")(L)), "<= 1 us absolute"),
    ("in-JVM write_bw 64 B", gdr("injvm_64", "injvm", "write_bw", 64, "msg_rate_mpps"), "M msg/s", None, None,
     ">= 5 M msg/s absolute"),
    ("TCP WRITE 1 MiB (shm/tcp across processes)", gdr("peers", "tcp", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "raw Java SocketChannel stream", peer("java_socketchannel", "tcp", "stream", MIB, "bw_avg_mib_s"), ">= 0.9"),
    ("TCP WRITE 1 MiB", gdr("peers", "tcp", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "iperf3 -l 1M", peer("iperf3", "tcp", "-l 1M", MIB, "bw_mib_s"), "(peer)"),
    ("TCP write_lat 8 B one way", gdr("peers", "tcp", "write_lat", 8, "t_typical_us"), "us",
     "UCX ucp_put_lat over tcp (its typical where recorded, else its average)", lambda L: peer("ucx_perftest", "tcp",
         "ucp_put_lat", 8, "lat_typical_us")(L) or peer("ucx_perftest", "tcp", "ucp_put_lat", 8, "lat_us")(L),
     "<= 1.0"),
    ("shm WRITE 1 MiB", gdr("peers", "shm", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "UCX tag_bw posix/sysv/cma", peer("ucx_perftest", "shm", "tag_bw", MIB, "bw_mib_s"), ">= 1.0"),
    ("shm WRITE 1 MiB (moonshot)", gdr("peers", "shm", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "UCX ucp_put_bw posix/sysv/cma", peer("ucx_perftest", "shm", "ucp_put_bw", MIB, "bw_mib_s"), "1.0 (moonshot)"),
    ("shm write_lat 8 B one way", gdr("peers", "shm", "write_lat", 8, "t_typical_us"), "us",
     "UCX ucp_put_lat over shm (typical where recorded, else average)", lambda L: peer("ucx_perftest", "shm",
         "ucp_put_lat", 8, "lat_typical_us")(L) or peer("ucx_perftest", "shm", "ucp_put_lat", 8, "lat_us")(L),
     "(peer)"),
    ("simulated-GPU WRITE 1 MiB (sim:h200)", gdr("simgpu_1048576", "injvm", "write_bw", MIB, "bw_avg_mib_s"), "MiB/s",
     "host-memory WRITE, same run", gdr("host_1048576", "injvm", "write_bw", MIB, "bw_avg_mib_s"), ">= 0.5"),
    ("simulated-GPU WRITE 4 MiB (sim:h200)", gdr("simgpu_4194304", "injvm", "write_bw", 4 * MIB, "bw_avg_mib_s"),
     "MiB/s", "host-memory WRITE, same run", gdr("host_4194304", "injvm", "write_bw", 4 * MIB, "bw_avg_mib_s"),
     ">= 0.5"),
]

def mmm(v, fmt="{:.2f}"):
    v = [x for x in v if x is not None]
    if not v:
        return "not measured"
    return " / ".join(fmt.format(x) for x in (min(v), statistics.median(v), max(v)))

print(f"{len(runs)} run(s); min / median / max; a ratio is taken inside each run, then min / median / max")
print()
print("| path | gdrkit | unit | limit or peer, same run | peer figure | ratio | goal |")
print("|---|---|---|---|---|---|---|")
for name, g, unit, pname, p, goal in rows:
    gv = [g(runs[k]) for k in sorted(runs)]
    if p is None:
        print(f"| {name} | {mmm(gv)} | {unit} | | | | {goal} |")
        continue
    pv = [p(runs[k]) for k in sorted(runs)]
    rv = [a / b for a, b in zip(gv, pv) if a is not None and b]
    print(f"| {name} | {mmm(gv)} | {unit} | {pname} | {mmm(pv)} | {mmm(rv, '{:.3f}')} | {goal} |")
