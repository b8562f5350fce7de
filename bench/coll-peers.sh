#!/usr/bin/env bash
# Collectives side by side, same host, same ranks, same sizes, one run (issue 12, item 7):
# OpenMPI MPI_Allreduce, gdrkit coll allreduce over IbTransport (software NICs, shm fabric) and over
# SocketTransport (TCP loopback). Three runs each, JSON lines into $OUT (default ./coll-peers-out).
#   JAVA=/path/to/java JAR=cli/target/gdrkit.jar MPI_BIN=bench/mpi/allreduce_timing bench/coll-peers.sh
set -uo pipefail
OUT="${OUT:-./coll-peers-out}"; mkdir -p "$OUT"
JAVA="${JAVA:-java}"; JAR="${JAR:-cli/target/gdrkit.jar}"; MPI_BIN="${MPI_BIN:-bench/mpi/allreduce_timing}"
NP="${NP:-2}"; MIN="${MIN:-8}"; MAX="${MAX:-16777216}"; F="${F:-8}"; ITERS="${ITERS:-10}"; WARM="${WARM:-3}"
RUNS="${RUNS:-3}"; LIMIT="${LIMIT:-150}"
{ nproc; uptime; } > "$OUT/host.txt"
for run in $(seq 1 "$RUNS"); do
  timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np "$NP" "$MPI_BIN" "$MIN" "$MAX" "$F" "$ITERS" "$WARM" \
    | sed "s/^{/{\"run\":$run,/" >> "$OUT/openmpi.jsonl" 2>> "$OUT/err.txt"
  for t in ib socket; do
    fab=shm; [ "$t" = socket ] && fab=tcp
    timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np "$NP" --transport "$t" \
      --fabric "$fab" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" -w "$WARM" --json \
      | sed "s/^{/{\"run\":$run,/" >> "$OUT/gdrkit-$t.jsonl" 2>> "$OUT/err.txt"
  done
done
