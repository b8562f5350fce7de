#!/usr/bin/env python3
"""Top frames (thread, top method, caller) of a JFR recording's jdk.ExecutionSample events.
   python3 bench/jfr-top.py REC.jfr [N]   (jfr from $JAVA_HOME/bin, else the Temurin 25 default)"""
import json, os, subprocess, sys, collections
jfr, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
out = subprocess.run([os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "jfr"), "print", "--json", "--stack-depth", "3",
                      "--events", "jdk.ExecutionSample", jfr], capture_output=True, text=True).stdout
ev = json.loads(out)["recording"]["events"]
c = collections.Counter(); threads = collections.Counter()
def name(f):
    m = f["method"]; return m["type"]["name"].split(".")[-1] + "." + m["name"]
for e in ev:
    st = e["values"]["stackTrace"]["frames"]
    t = e["values"]["sampledThread"]["javaName"] or "?"
    threads[t] += 1
    c[(t, name(st[0]) if st else "", name(st[1]) if len(st) > 1 else "")] += 1
print("samples per thread:", threads.most_common(8))
for k, v in c.most_common(n):
    print(v, k)
