#!/usr/bin/env bash
# The 64 B message-rate regression on the H200 host: write_bw 64 B (and 512 B, 1 MiB, 8 B write_lat) with the hot-path
# settings gdrkit.nic.onecopy.min and gdrkit.nic.scan.park varied, interleaved, 3 runs. JSON lines to $OUT/knobs.jsonl.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
J="runtime/bin/java --enable-native-access=ALL-UNNAMED"
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
for run in 1 2 3; do
  for cfg in "default:" "min1:-Dgdrkit.nic.onecopy.min=1" "min2k:-Dgdrkit.nic.onecopy.min=2048" \
             "nopark:-Dgdrkit.nic.scan.park=false"; do
    name=${cfg%%:*}; props=${cfg#*:}
    timeout 60 $J $props -jar cli/target/gdrkit.jar perf write_bw --loopback -s 64 -n 2000000 --json 2>/dev/null \
      | tail -n 1 | tag "w64_$name" $run >> "$OUT/knobs.jsonl"
    if [ "$name" = default ] || [ "$name" = min1 ]; then
      timeout 60 $J $props -jar cli/target/gdrkit.jar perf write_bw --loopback -s 1048576 -n 5000 --baseline --json \
        2>/dev/null | grep '^{' | tag "w1m_$name" $run >> "$OUT/knobs.jsonl"
      timeout 60 $J $props -jar cli/target/gdrkit.jar perf write_lat --loopback -s 8 -n 100000 --json 2>/dev/null \
        | tail -n 1 | tag "lat8_$name" $run >> "$OUT/knobs.jsonl"
      timeout 60 $J $props -jar cli/target/gdrkit.jar perf write_bw --loopback -s 512 -n 1000000 --json 2>/dev/null \
        | tail -n 1 | tag "w512_$name" $run >> "$OUT/knobs.jsonl"
    fi
  done
done
python3 - "$OUT/knobs.jsonl" <<'PY'
import json, sys, statistics, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["label"].startswith("w64"): d[r["label"]].append(r["msg_rate_mpps"])
    elif r["label"].startswith("lat8"): d[r["label"]].append(r["t_typical_us"])
    elif r["label"].startswith("w512"): d[r["label"]].append(r["bw_avg_mib_s"])
    elif r["label"].startswith("w1m") and "bw_avg_mib_s" in r and "baseline" not in r: d[r["label"]].append(r["bw_avg_mib_s"])
for k in sorted(d): print(k, sorted(d[k]))
PY
