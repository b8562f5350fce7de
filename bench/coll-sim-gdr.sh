#!/usr/bin/env bash
# GDR against host bounce for collectives on simulated H200s (software NICs, in-JVM fabric, 2 ranks), interleaved:
# `coll allreduce --mem gpu --gpu sim:h200` as the gates decide (GDR) and with NCCL_NET_GDR_LEVEL=LOC (bounce).
# The simulated GPU's copies and launches dominate: a check of what the GDR path saves, not a figure of merit.
#   OUT=dir JAVA=java JAR=cli/target/gdrkit.jar bench/coll-sim-gdr.sh
set -uo pipefail
OUT="${OUT:-./coll-sim-gdr-out}"; mkdir -p "$OUT"
JAVA="${JAVA:-java}"; JAR="${JAR:-cli/target/gdrkit.jar}"; RUNS="${RUNS:-3}"; MIN="${MIN:-1048576}"
MAX="${MAX:-1048576}"; ITERS="${ITERS:-5}"; LIMIT="${LIMIT:-300}"
{ nproc; uptime; } > "$OUT/host-sim.txt"
for run in $(seq 1 "$RUNS"); do
  for v in gdr bounce; do
    env=(); [ "$v" = bounce ] && env=(NCCL_NET_GDR_LEVEL=LOC)
    env "${env[@]}" timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np 2 \
      --mem gpu --gpu sim:h200 -b "$MIN" -e "$MAX" -n "$ITERS" -w 1 --jit-warmup-ms 0 --json 2>> "$OUT/err-sim.txt" \
      | sed "s/^{/{\"run\":$run,\"variant\":\"$v\",/" >> "$OUT/sim-h200-$v.jsonl"
  done
  echo "run $run end: $(uptime)" >> "$OUT/host-sim.txt"
done
