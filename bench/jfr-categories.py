#!/usr/bin/env python3
"""Samples of a coll rank's JFR recording by category (the first category any frame of a sample's stack matches:
reduction, cma pull, requester, responder, completer, ring poll, CQ poll, transport, exchange loop), per thread.
   python3 bench/jfr-categories.py REC.jfr"""
import json, os, subprocess, sys, collections
jfr = sys.argv[1]
out = subprocess.run([os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "jfr"), "print", "--json", "--stack-depth", "30",
                      "--events", "jdk.ExecutionSample,jdk.NativeMethodSample", jfr], capture_output=True, text=True).stdout
ev = json.loads(out)["recording"]["events"]
cats = [("fill/check(untimed)", ["CollRun.fill", "CollRun.check", "CollRun.input"]),
        ("reduce", ["Reducer.reduce"]),
        ("pull(process_vm_readv)", ["ProcessVm.read"]),
        ("requester", ["Requester."]),
        ("responder", ["Responder."]),
        ("completer", ["Completer."]),
        ("receiver/ring poll", ["Receiver.", "RingPort.poll"]),
        ("cq poll", ["SoftCq.poll"]),
        ("transport isend/irecv/test", ["IbTransport."]),
        ("exchange loop", ["Communicator.exchange"]),
        ]
c = collections.Counter(); tot = collections.Counter()
for e in ev:
    t = e["values"].get("sampledThread") or e["values"].get("eventThread")
    t = (t or {}).get("javaName", "?")
    fr = [f["method"]["type"]["name"].split("/")[-1] + "." + f["method"]["name"] for f in e["values"]["stackTrace"]["frames"]]
    k = "other"
    for name, keys in cats:
        if any(any(kk in f for kk in keys) for f in fr):
            k = name; break
    if k == "other" and fr: k = "other:" + fr[0]
    c[(t, e["type"].split(".")[-1], k)] += 1; tot[t] += 1
for (t, ty, k), v in sorted(c.items(), key=lambda x: -x[1])[:40]:
    print(f"{v:5d} {100*v/tot[t]:5.1f}% {t[:22]:22s} {ty:18s} {k}")
