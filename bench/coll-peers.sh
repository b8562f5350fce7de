#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Collectives against OpenMPI on this host, same ranks and sizes, interleaved in each of RUNS runs: OpenMPI's
# MPI_Allreduce (bench/mpi/allreduce_timing.c, built with mpicc into $OUT when MPI_BIN is not given) and
# `gdrkit coll allreduce` in each of VARIANTS. JSON lines per row into $OUT/openmpi.jsonl and $OUT/gdrkit-<variant>.jsonl;
# python3 bench/coll-variants-table.py $OUT prints busbw min / median / max per size and each variant's ratio to OpenMPI.
#   bench/coll-peers.sh                                  output under ${TMPDIR:-/tmp}/gdrkit-bench/coll-peers-<time>
#   NP=4 MAX=1048576 VARIANTS="ib socket" bench/coll-peers.sh
#   SKIP_MPI=1 VARIANTS="ib ib+gdrkit.nic.batch=1" bench/coll-peers.sh
# VARIANTS (default "ib socket"): ib (IbTransport, software NICs, shm fabric), ib-tcp (the same over the TCP fabric),
# socket (SocketTransport over TCP loopback), ib-before (the ib row with BEFORE_JAR, another build, for an A/B), and
# ib+KEY=VAL[+KEY=VAL...] / ib-tcp+... / ib-before+...: the row with settings (gdrkit.* as -D properties, NCCL_* in the
# environment). ROTATE=1 starts run r at the r-th variant, so that no variant always runs first.
# Environment: NP (2), MIN (8), MAX (16777216), F (8), ITERS (10), WARM (3), RUNS (3), LIMIT (150 s per call), OUT, JAR,
# MPI_BIN, SKIP_MPI=1 (no OpenMPI rows), JAVA / JAVA_HOME (bench/lib.sh). Exits non-zero when any step fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NP="${NP:-2}"; MIN="${MIN:-8}"; MAX="${MAX:-16777216}"; F="${F:-8}"; ITERS="${ITERS:-10}"; WARM="${WARM:-3}"
RUNS="${RUNS:-3}"; LIMIT="${LIMIT:-150}"; VARIANTS="${VARIANTS:-ib socket}"
[ "${SKIP_MPI:-0}" = 1 ] || need mpirun
bench_jar
bench_out coll-peers
{ date -u; nproc; uptime; "$JAVA" -version 2>&1; } > "$OUT/host.txt"
if [ "${SKIP_MPI:-0}" != 1 ] && [ -z "${MPI_BIN:-}" ]; then
  need mpicc
  MPI_BIN="$OUT/allreduce_timing"
  step "building $MPI_BIN with mpicc" mpicc -O2 -o "$MPI_BIN" "$REPO/bench/mpi/allreduce_timing.c"
fi

tag() { sed "s/^{/{\"run\":$1,/"; }

mpi_row() { # run
  timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np "$NP" "$MPI_BIN" "$MIN" "$MAX" "$F" "$ITERS" "$WARM" \
    2>> "$OUT/err.txt" | tag "$1" >> "$OUT/openmpi.jsonl"
}

gdrkit_row() { # run variant
  local run=$1 v=$2 t=ib fab=shm jar="$JAR" spec="$2" kv
  local props=() envs=()
  case "$spec" in
    ib-before+*) jar="${BEFORE_JAR:?ib-before needs BEFORE_JAR}"; spec="ib+${spec#ib-before+}" ;;
    ib-tcp+*) fab=tcp; spec="ib+${spec#ib-tcp+}" ;;
  esac
  case "$spec" in
    ib) ;;
    ib+*) IFS=+ read -r -a kvs <<< "${spec#ib+}"
      for kv in "${kvs[@]}"; do
        case "$kv" in NCCL_*=*) envs+=("$kv") ;; gdrkit.*=*) props+=("-D$kv") ;;
          *) echo "variant $v: $kv is neither NCCL_*=... nor gdrkit.*=..." >&2; return 2 ;; esac
      done ;;
    ib-before) jar="${BEFORE_JAR:?ib-before needs BEFORE_JAR}" ;;
    ib-tcp) fab=tcp ;;
    socket) t=socket; fab=tcp ;;
    *) echo "unknown variant '$v'" >&2; return 2 ;;
  esac
  [ -f "$jar" ] || { echo "no jar $jar" >&2; return 2; }
  timeout "$LIMIT" env ${envs[@]+"${envs[@]}"} "$JAVA" ${props[@]+"${props[@]}"} --enable-native-access=ALL-UNNAMED \
    -jar "$jar" coll allreduce --np "$NP" --transport "$t" --fabric "$fab" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" \
    -w "$WARM" --json 2>> "$OUT/err.txt" | tag "$run" >> "$OUT/gdrkit-$v.jsonl"
}

for run in $(seq 1 "$RUNS"); do
  echo "run $run start: $(uptime)" >> "$OUT/host.txt"
  [ "${SKIP_MPI:-0}" = 1 ] || step "run $run/$RUNS: OpenMPI allreduce, $NP ranks" mpi_row "$run"
  read -r -a vs <<< "$VARIANTS"
  if [ "${ROTATE:-0}" = 1 ]; then k=$(( (run - 1) % ${#vs[@]} )); vs=("${vs[@]:k}" "${vs[@]:0:k}"); fi
  for v in "${vs[@]}"; do
    step "run $run/$RUNS: gdrkit allreduce $v, $NP ranks" gdrkit_row "$run" "$v"
  done
  echo "run $run end: $(uptime)" >> "$OUT/host.txt"
done
say "done (python3 bench/coll-variants-table.py $OUT)"
