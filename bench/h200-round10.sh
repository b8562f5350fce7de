#!/usr/bin/env bash
# The tenth session's closing device call (2026-12-02): bench/h200-round9.sh MODE=final with the jar given (the
# sweep: VARIANTS over bench/coll-peers.sh, MIN .. 16 MiB, ITERS iterations, RUNS runs, OpenMPI beside; then 8 B ..
# 4 KiB latency, 5000 iterations, 3 runs, LAT_VARIANTS), then issue 12 item 8 with that jar: `coll allreduce` with
# both ranks' buffers on cuda:0 (2 ranks on one GPU) over shm and over tcp, 8 B .. 16 MiB, 10 iterations, every
# element checked; JSON lines in $OUT/$TAG-gpu/gpu.jsonl, exit codes and stderr in gpu-err.txt, then tarred.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar TAG=r10c bash bench/h200-round10.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
tag="${TAG:-r10c}"; top="${OUT:-$here/round10-out}"; mkdir -p "$top"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
MODE=final TAG="$tag" OUT="$top" bash bench/h200-round9.sh
G="$top/$tag-gpu"; mkdir -p "$G"
{ date -u; nvidia-smi -L 2>&1; } > "$G/env.txt"
for fab in shm tcp; do
  timeout 150 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np 2 --mem gpu --gpu cuda:0 \
    --fabric "$fab" -b 8 -e 16777216 -f 8 -n 10 -w 3 --json 2>> "$G/gpu-err.txt" \
    | sed "s/^{/{\"label\":\"gpu-allreduce-$fab\",/" >> "$G/gpu.jsonl"
  echo "rc=$? allreduce $fab" >> "$G/gpu-err.txt"
done
tar -C "$top" -czf "$top/$tag-gpu.tgz" "$tag-gpu" && rm -rf "$G"
