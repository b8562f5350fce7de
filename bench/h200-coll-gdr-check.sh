#!/usr/bin/env bash
# Is GDR into a real CUDA GPU right in the collectives now? (issue 12: the H200 had wrong elements after some
# hundreds of operations; cause found: CUDA's synchronous device-to-device copy returns before it has run, and the
# software NIC's non-blocking stream is not ordered behind it.) Runs with the GDR hold-back off
# (-Dgdrkit.coll.cuda.gdr=true), 2 ranks on cuda:0, and counts wrong elements:
#   - the reproducer: 8 B and 1 MiB allreduce after 300 and 3000 plain warm-up iterations, no JIT warm-up;
#   - allreduce 8 B .. 16 MiB (factor 8) with the default JIT warm-up, shm and injvm fabrics, RUNS runs;
#   - every other operation 8 B .. 1 MiB (factor 64) on shm;
#   - the same allreduce with NCCL_NET_GDR_LEVEL=LOC (host bounce) as the control.
#   JAVA=runtime/bin/java JAR=cli/target/gdrkit.jar OUT=/tmp/out bench/h200-coll-gdr-check.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
OUT="${OUT:-$here/h200-coll-gdr-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/cli/target/gdrkit.jar}"
RUNS="${RUNS:-3}"; LIMIT="${LIMIT:-120}"; GDR="${GDR:-true}"
mkdir -p "$OUT"
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1; "$JAVA" -version 2>&1; } \
  > "$OUT/env.txt"
g() { timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED -Dgdrkit.coll.cuda.gdr="$GDR" ${JOPTS:-} \
  -jar "$JAR" "$@"; echo "rc=$? $*" >> "$OUT/rc.txt"; }
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
GPU=(--np 2 --mem gpu --gpu cuda:0 --json)
for w in 300 3000; do
  for b in 8 1048576; do
    g coll allreduce "${GPU[@]}" --fabric shm -b "$b" -e "$b" -n 3 -w "$w" --jit-warmup-ms 0 2>> "$OUT/err.txt" \
      | tag "repro-w$w" 1 >> "$OUT/check.jsonl"
  done
done
for run in $(seq 1 "$RUNS"); do
  for fab in shm injvm; do
    g coll allreduce "${GPU[@]}" --fabric "$fab" -b 8 -e 16777216 -f 8 -n 10 -w 3 2>> "$OUT/err.txt" \
      | tag "allreduce-gdr-$fab" "$run" >> "$OUT/check.jsonl"
  done
  NCCL_NET_GDR_LEVEL=LOC g coll allreduce "${GPU[@]}" --fabric shm -b 8 -e 16777216 -f 8 -n 10 -w 3 \
    2>> "$OUT/err.txt" | tag "allreduce-bounce-shm" "$run" >> "$OUT/check.jsonl"
done
for op in reduce-scatter allgather broadcast reduce alltoall sendrecv; do
  g coll "$op" "${GPU[@]}" --fabric shm -b 8 -e 1048576 -f 64 -n 10 -w 3 2>> "$OUT/err.txt" \
    | tag "$op-gdr-shm" 1 >> "$OUT/check.jsonl"
done
python3 - "$OUT/check.jsonl" > "$OUT/summary.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    print(r.get("label"), r.get("run"), r.get("bytes"), "wrong", r.get("wrong"), "inplace_wrong",
          r.get("inplace_wrong"), r.get("data_path"), "busbw", round(r.get("busbw_gbs", 0), 3))
PY
cat "$OUT/summary.txt" "$OUT/rc.txt"
