#!/usr/bin/env python3
"""Top frames of a JFR recording's execution samples, as text (issue 16: where the time goes).

    jfr print --json --stack-depth 64 --events jdk.ExecutionSample REC.jfr > samples.json
    python3 bench/jfr-frames.py samples.json [THREAD_SUBSTRING] [N] [STACK_SUBSTRING]

Prints, for the threads whose name contains THREAD_SUBSTRING (default: all), the sample count, the top N (default 25)
self frames (the method on top of the stack), and the top N "NIC frames": the first frame of io.gdrkit code on each
stack, which attributes JDK helpers (copies, bounds checks) to the NIC method that called them. With STACK_SUBSTRING
(e.g. BwRun) only stacks with a frame of that name count: the measured loop, not start-up or JIT.
"""
import collections
import json
import sys


def frame_name(f):
    m = f.get("method", {})
    t = m.get("type", {}).get("name", "?").replace("/", ".").split(".")[-1]
    return f"{t}.{m.get('name', '?')}"


def main():
    path = sys.argv[1]
    want = sys.argv[2] if len(sys.argv) > 2 else ""
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    in_stack = sys.argv[4] if len(sys.argv) > 4 else ""
    events = json.load(open(path))["recording"]["events"]
    top, nic = collections.Counter(), collections.Counter()
    total = 0
    for e in events:
        v = e["values"]
        thread = (v.get("sampledThread") or {}).get("javaName") or "?"
        if want not in thread:
            continue
        frames = (v.get("stackTrace") or {}).get("frames") or []
        if not frames or (in_stack and not any(in_stack in frame_name(f) for f in frames)):
            continue
        total += 1
        top[frame_name(frames[0])] += 1
        for f in frames:
            if f.get("method", {}).get("type", {}).get("name", "").replace("/", ".").startswith("io.gdrkit"):
                nic[frame_name(f)] += 1
                break
        else:
            nic["(no io.gdrkit frame)"] += 1
    print(f"{total} execution samples" + (f" on threads matching '{want}'" if want else "")
          + (f" with '{in_stack}' on the stack" if in_stack else ""))
    print(f"\ntop {n} self frames (method on top of the stack):")
    for name, c in top.most_common(n):
        print(f"{c:6d} {100.0 * c / max(total, 1):5.1f} %  {name}")
    print(f"\ntop {n} first io.gdrkit frames (JDK helpers attributed to their NIC caller):")
    for name, c in nic.most_common(n):
        print(f"{c:6d} {100.0 * c / max(total, 1):5.1f} %  {name}")


if __name__ == "__main__":
    main()
