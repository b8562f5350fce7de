#!/usr/bin/env bash
# The seventh session's A/B on the H200 host (2026-12-02): this jar against others in the same runs, two sweeps.
#  sweep: 8 B .. 16 MiB factor 8, default settings, OpenMPI beside (mpirun, if mpicc builds bench/mpi).
#  poison: 256 KiB .. 16 MiB factor 4 with gdrkit.coll.direct.bytes=1048576 (direct rounds up to 1 MiB, then the
#  ring): the sweep that left the ring ~10x slower before (docs/results/coll-h200/r6a-poison).
# JARS names jars in out/ (thin ones carry only the labs classes of another build, Class-Path: gdrkit.jar); the
# order rotates per run. Rows: $OUT/r7b/{sweep,poison}.jsonl with "run" and "jar"; tarred to $OUT/r7b.tgz.
#   JARS="gdrkit before-thin" RUNS=3 bash bench/h200-round7b.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
top="${OUT:-$here/round7b-out}"; R="$top/r7b"; mkdir -p "$R"
J="${JAVA:-$here/runtime/bin/java}"; read -r -a js <<< "${JARS:-gdrkit before-thin}"; RUNS="${RUNS:-3}"
M="$R/allreduce_timing"; command -v mpicc >/dev/null && mpicc -O2 -o "$M" bench/mpi/allreduce_timing.c 2>> "$R/err.txt"
{ nproc; uptime; } > "$R/host.txt"
for run in $(seq 1 "$RUNS"); do
  k=$(( (run - 1) % ${#js[@]} )); order=("${js[@]:k}" "${js[@]:0:k}")
  [ -x "$M" ] && timeout 100 mpirun --allow-run-as-root --oversubscribe -np 2 "$M" 8 16777216 8 20 5 2>> "$R/err.txt" \
    | sed "s/^{/{\"run\":$run,\"jar\":\"openmpi\",/" >> "$R/sweep.jsonl"
  for j in "${order[@]}"; do
    timeout 100 "$J" --enable-native-access=ALL-UNNAMED -jar "out/$j.jar" coll allreduce --np 2 --fabric shm -b 8 \
      -e 16777216 -f 8 -n 20 -w 5 --json 2>> "$R/err.txt" | sed "s/^{/{\"run\":$run,\"jar\":\"$j\",/" >> "$R/sweep.jsonl"
    timeout 100 "$J" --enable-native-access=ALL-UNNAMED -Dgdrkit.coll.direct.bytes=1048576 -jar "out/$j.jar" coll \
      allreduce --np 2 --fabric shm -b 262144 -e 16777216 -f 4 -n 10 -w 3 --json 2>> "$R/err.txt" \
      | sed "s/^{/{\"run\":$run,\"jar\":\"$j\",/" >> "$R/poison.jsonl"
  done
  echo "run $run end: $(uptime)" >> "$R/host.txt"
done
rm -f "$M"; tar -C "$top" -czf "$top/r7b.tgz" r7b && rm -rf "$R"
